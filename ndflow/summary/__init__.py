"""`nf.summary`: TensorBoard event files, as `tf.summary`.

    writer = nf.summary.create_file_writer("logs/run1")
    with writer.as_default(step=0):
        nf.summary.scalar("loss", 0.25)                       # step 0
        nf.summary.histogram("w", w, step=3)
        nf.summary.image("digits", images, step=3)            # [k, h, w, c], c in 1..4
        nf.summary.audio("clip", waves, 16000, step=3)        # [k, t, c] in [-1, 1]
        nf.summary.text("note", "markdown **works**", step=3)
    nf.summary.graph(train_step.get_concrete_function(x))   # the graph dashboard

Writes happen where TensorFlow's happen: eagerly at the call, and inside `nf.function` at
every *run* of the compiled function (never at trace time), with that run's values and step.
Each summary is a node of the graph (`write_summary`, an effect: the compiler never folds,
deduplicates or drops it, though its result is unused). As in TensorFlow, what is decided while
tracing stays decided: the default writer and a Python `step` or `record_if` condition are
captured when the function is traced; a `step` that is an array or an `nf.Variable` (say
`optimizer.iterations`) and a `record_if` condition that is an array (or a callable returning
one) are read at each run.

Each function returns a boolean array: True when the summary was written, False when there is
no default writer (or recording is off). With a writer but no step (neither `step=` nor
`nf.summary.experimental.set_step`), it raises ValueError, as TensorFlow does.

Files are TensorBoard's: `events.out.tfevents.<time>.<host>.<pid>.<n>.v2` in the log directory,
TFRecords of `Event` protos (the first holds the file version), summaries in the tensor-based
format of TensorBoard's scalars, histograms, images, audio and text plugins. They are written
by ndflow's own few hundred lines (`_records.py`: CRC32C, TFRecord, protobuf; `_png.py`,
`_wav.py`); no TensorFlow, no tensorboard package needed to write.
"""
import contextlib
import itertools
import os
import threading
import time
import warnings
import weakref

import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ..core.state import STATE
from ..core.ndarray import ndarray
from ..graph.ir import Graph
from ..graph import function as _function, concrete as _concrete
from .. import numpy as tnp
from . import _records as R
from ._png import encode_png
from ._wav import encode_wav
from ._graphdef import graph_def

__all__ = ["create_file_writer", "create_noop_writer", "SummaryWriter", "scalar", "histogram",
           "image", "audio", "text", "write", "graph", "flush", "record_if",
           "should_record_summaries", "trace_on", "trace_export", "trace_off", "experimental"]


# ------------------------------------------------------------------ per-thread state
class _SummaryState(threading.local):
    """The default writer, the default step and the recording condition of this thread (each
    thread has its own, as in TensorFlow)."""

    def __init__(self):
        self.writer = None
        self.step = None
        self.recording = True


_STATE = _SummaryState()


# ------------------------------------------------------------------ writers
class _EventFile:
    """The open file and its queue of framed records. Kept apart from the writer so the
    writer's finalizer can flush and close it without keeping the writer alive."""

    def __init__(self, path, max_queue, flush_millis):
        self.path = path
        self.lock = threading.Lock()
        self.queue = []
        self.max_queue = max_queue
        self.flush_secs = flush_millis / 1000.0
        self.closed = False
        self.file = open(path, "wb")
        self.last_flush = time.monotonic()

    def write(self, event):
        rec = R.tfrecord(event)
        with self.lock:
            if self.closed:
                raise RuntimeError(f"nf.summary: the writer of {self.path!r} is closed")
            self.queue.append(rec)
            # TensorFlow's rule: flush when the queue holds more than max_queue events or the
            # last flush is older than flush_millis (checked on write, no background thread)
            if (len(self.queue) > self.max_queue
                    or time.monotonic() - self.last_flush >= self.flush_secs):
                self._flush_locked()

    def _flush_locked(self):
        if self.queue:
            self.file.write(b"".join(self.queue))
            self.queue.clear()
        self.file.flush()
        self.last_flush = time.monotonic()

    def flush(self):
        with self.lock:
            if not self.closed:
                self._flush_locked()

    def close(self):
        with self.lock:
            if not self.closed:
                try:
                    self._flush_locked()
                finally:
                    self.closed = True
                    self.file.close()


_file_serial = itertools.count()


def _check_count(name, value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"nf.summary.create_file_writer: {name} must be an int, got "
                        f"{value!r}")
    if value < 0:
        raise ValueError(f"nf.summary.create_file_writer: {name} must be >= 0 ({what}), got "
                         f"{value}")
    return int(value)


class SummaryWriter:
    """Writes summaries to one TensorBoard event file (`tf.summary.SummaryWriter`). Made by
    `nf.summary.create_file_writer`; use `as_default()` (a context manager) or
    `set_as_default()` to make the summary functions write here."""

    def __init__(self, logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                 name=None):
        if logdir is None:
            raise ValueError("nf.summary.create_file_writer: logdir cannot be None")
        logdir = os.fspath(logdir)
        if not isinstance(logdir, str) or not logdir:
            raise ValueError(f"nf.summary.create_file_writer: logdir must be a non-empty path, "
                             f"got {logdir!r}")
        max_queue = 10 if max_queue is None else _check_count("max_queue", max_queue,
                                                              "events kept before a flush")
        flush_millis = 120000 if flush_millis is None else _check_count(
            "flush_millis", flush_millis, "milliseconds between flushes")
        suffix = ".v2" if filename_suffix is None else str(filename_suffix)
        import socket     # only to name the file; importing it costs `import ndflow` ~2 ms
        os.makedirs(logdir, exist_ok=True)
        fname = "events.out.tfevents.%010d.%s.%d.%d%s" % (
            int(time.time()), socket.gethostname(), os.getpid(), next(_file_serial), suffix)
        self.logdir = logdir
        self.name = name
        self._file = _EventFile(os.path.join(logdir, fname), max_queue, flush_millis)
        # queued events reach the file when the writer is collected or the process exits
        self._finalizer = weakref.finalize(self, self._file.close)
        self._file.write(R.event(time.time(), file_version="brain.Event:2"))
        self._file.flush()

    @property
    def path(self):
        """The event file's path."""
        return self._file.path

    def _check_open(self):
        if self._file.closed:
            raise RuntimeError("nf.summary: this SummaryWriter is already closed "
                               f"({self._file.path!r})")

    def set_as_default(self, step=None):
        """Make this the default writer of the current thread (and set the default step when
        `step` is given) until another writer is set."""
        self._check_open()
        _STATE.writer = self
        if step is not None:
            _STATE.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Within the block, summaries go to this writer (and `step`, when given, is the
        default step); the previous writer and step come back after it, and this writer is
        flushed. Inside `nf.function` the flush happens at each run."""
        self._check_open()
        old_writer, old_step = _STATE.writer, _STATE.step
        _STATE.writer = self
        if step is not None:
            _STATE.step = step
        try:
            yield self
        finally:
            _STATE.writer = old_writer
            if step is not None:
                _STATE.step = old_step
            if not self._file.closed:
                flush(self)

    def init(self):
        """Nothing to do: the event file is created with the writer (TensorFlow's writers
        may be initialized lazily)."""

    def flush(self):
        """Write queued events to the file (inside `nf.function`: at each run)."""
        return flush(self)

    def close(self):
        """Flush and close the file. Writing through a closed writer is a RuntimeError."""
        self._file.close()

    def _write_event(self, event):
        self._file.write(event)

    def __repr__(self):
        return "<nf.summary.SummaryWriter %r%s>" % (self._file.path,
                                                     " (closed)" if self._file.closed else "")


class _NoopSummaryWriter(SummaryWriter):
    """A writer that writes nothing (`tf.summary.create_noop_writer`)."""

    def __init__(self):            # no file
        self.logdir = None
        self.name = None

    @property
    def path(self):
        return None

    def set_as_default(self, step=None):
        pass

    @contextlib.contextmanager
    def as_default(self, step=None):
        yield self

    def flush(self):
        pass

    def close(self):
        pass

    def __repr__(self):
        return "<nf.summary noop writer>"


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None):
    """A `SummaryWriter` writing a new event file in `logdir` (created if missing), as
    `tf.summary.create_file_writer`. Events are queued and written when more than
    `max_queue` (10) are waiting, when `flush_millis` (120000) have passed since the last
    flush, on `flush()`, on leaving `as_default()`, on `close()` and at exit.
    `filename_suffix` (default ".v2") ends the file's name."""
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix, name)


def create_noop_writer():
    """A writer that does nothing, as `tf.summary.create_noop_writer`."""
    return _NoopSummaryWriter()


# ------------------------------------------------------------------ the primitives
def _host(buf):
    get = getattr(buf, "get", None)      # a CuPy buffer: copy to the host
    return np.asarray(get() if get is not None and not isinstance(buf, np.ndarray) else buf)


def _scalar_tensor(data):
    return R.tensor_proto(np.asarray(data, np.float32))


def _histogram_buckets(data, buckets):
    """TensorBoard's histogram (its summary_v2 'v3' algorithm): `buckets` equal-width buckets
    from the minimum to the maximum, each [left, right, count]; the last bucket is closed. No
    data: all zeros. One distinct value: every edge at it, every count in the last bucket."""
    x = np.asarray(data, np.float64).ravel()
    k = buckets
    if k == 0 or x.size == 0:
        return np.zeros((k, 3))
    if not np.isfinite(x).all():
        raise ValueError("histogram data contains NaN or inf (as TensorFlow's histogram op, "
                         "ndflow refuses it rather than write a meaningless histogram)")
    lo, hi = x.min(), x.max()
    if lo == hi:
        counts = np.zeros(k)
        counts[-1] = x.size
        edges = np.full(k, hi)
        return np.stack([edges, edges, counts], axis=1)
    # TensorBoard's arithmetic on the data scaled by a power of two so its largest magnitude is
    # in [0.5, 1): exact (so the same buckets), and neither the range (1e308 - -1e308) can
    # overflow nor its k-th part (a range of a few subnormals) underflow to 0
    e = int(np.frexp(max(abs(lo), abs(hi)))[1])
    xs, los, his = np.ldexp(x, -e), np.ldexp(lo, -e), np.ldexp(hi, -e)
    width = (his - los) / k
    idx = np.floor((xs - los) / width)
    edges = np.ldexp(np.linspace(los, his, k + 1), e)
    edges[0], edges[-1] = lo, hi
    idx = np.minimum(idx.astype(np.int64), k - 1)
    counts = np.bincount(idx, minlength=k).astype(np.float64)
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def _histogram_tensor(data, buckets=30):
    return R.tensor_proto(_histogram_buckets(data, buckets))


def _to_uint8(img):
    """`tf.image.convert_image_dtype(img, tf.uint8, saturate=True)` for uint8 and floats:
    floats are multiplied by 255.5 (in their own precision), clipped to [0, 255] and truncated.
    NaN becomes 0 (TensorFlow leaves it undefined)."""
    if img.dtype == np.uint8:
        return img
    if img.dtype.kind != "f":          # bfloat16 and friends: compute in float32
        img = img.astype(np.float32)
    x = img * img.dtype.type(255.5)
    x = np.where(np.isnan(x), 0, np.clip(x, 0, 255))
    return x.astype(np.uint8)


def _image_tensor(data, max_outputs=3):
    k, h, w, c = data.shape
    if h == 0 or w == 0:
        raise ValueError(f"image summary: images must have a nonzero height and width, got "
                         f"shape {data.shape}")
    if c not in (1, 2, 3, 4):
        raise ValueError(f"image summary: images need 1, 2, 3 or 4 channels (last axis), got "
                         f"shape {data.shape}")
    imgs = _to_uint8(data[:max_outputs])
    parts = [str(w).encode(), str(h).encode()] + [encode_png(im) for im in imgs]
    arr = np.empty(len(parts), dtype=object)
    arr[:] = parts
    return R.tensor_proto(arr)


def _audio_tensor(data, sample_rate, max_outputs=3):
    rate = sample_rate.item()
    if rate != rate or int(rate) <= 0 or int(rate) >= 2 ** 31:
        raise ValueError(f"audio summary: sample_rate must be a positive number of Hz, got "
                         f"{rate}")
    clips = [encode_wav(clip, int(rate)) for clip in data[:max_outputs]]
    arr = np.empty((len(clips), 2), dtype=object)
    for i, wav in enumerate(clips):
        arr[i] = (wav, b"")              # (encoded clip, label): TensorBoard's layout
    return R.tensor_proto(arr)


def _text_tensor(*, values, shape):
    arr = np.empty(len(values), dtype=object)
    arr[:] = [v if isinstance(v, bytes) else v.encode("utf-8") for v in values]
    return R.tensor_proto(arr.reshape(shape))


def _raw_tensor(data=None, *, tensor=None):
    return R.tensor_proto(data if tensor is None else tensor)


# kind -> (encoder of the host arrays, plugin name)
_KINDS = {"scalar": (_scalar_tensor, "scalars"), "histogram": (_histogram_tensor, "histograms"),
          "image": (_image_tensor, "images"), "audio": (_audio_tensor, "audio"),
          "text": (_text_tensor, "text"),
          "tensor": (_raw_tensor, None)}


def _write_impl(cond, step, *data, writer, tag, kind, metadata, **options):
    """Encode the summary and queue its event: the run-time half of every summary call."""
    if not bool(_host(cond)):
        return ()
    encode, plugin = _KINDS[kind]
    try:
        tensor = encode(*[_host(d) for d in data], **options)
    except ValueError as e:
        raise ValueError(f"nf.summary {kind} {tag!r}: {e}") from None
    if metadata is None:
        metadata = R.summary_metadata(plugin)
    summ = R.summary_value(tag, metadata, tensor)
    writer._write_event(R.event(time.time(), int(_host(step)), summary=summ))
    return ()


def _write_abstract(*avals, **params):
    return Aval((), np.dtype(bool))


def _no_batch(args, axes, *, kind, tag, **params):
    raise ValueError(f"nf.summary.{kind}({tag!r}) inside nf.vectorized_map got per-example "
                     f"values; write summaries outside the mapped function (of the batched "
                     f"result)")


# A sink (core/primitive.py): it only sends its inputs out and returns nothing, so a gradient
# through a loop or branch body holding a summary replays the body without it (the summary is
# written once, by the forward pass), as TensorFlow allows. What a summary call returns
# (whether it recorded) is the recording condition itself, not an output of this node.
write_summary_p = Primitive("write_summary", _write_impl, lambda *avals, **params: (),
                            multiple_results=True, sink=True)
write_summary_p.def_vjp(lambda ct, *args, **params: (None,) * len(args))
write_summary_p.def_jvp(lambda tangents, *args, **params: ())
write_summary_p.def_batch(_no_batch)


def _flush_impl(*, writer):
    writer._file.flush()
    return np.asarray(True)


flush_summary_p = Primitive("flush_summary", _flush_impl, _write_abstract, effect=True)
flush_summary_p.def_vjp(lambda ct, **params: ())
# no operands, so nothing is ever per-example: a flush under vectorized_map happens once
flush_summary_p.def_batch(lambda args, axes, **params: (bind(flush_summary_p, **params), None))


# ------------------------------------------------------------------ helpers
def _in_graph():
    return any(t.is_graph for t in STATE.traces)


def _false():
    return tnp.asarray(False)


def _condition():
    """The recording condition now: True, False, or a boolean array (read at run time in a
    graph)."""
    cond = _STATE.recording
    if callable(cond):
        cond = cond()
    if isinstance(cond, (bool, np.bool_)):
        return bool(cond)
    arr = tnp.asarray(cond)
    if arr.dtype != np.bool_ or arr.ndim != 0:
        raise TypeError(f"nf.summary.record_if: the condition must be a bool or a boolean "
                        f"scalar array, got {arr.dtype} {tuple(arr.shape)}")
    if arr._t is None:
        return bool(arr)
    return arr


def _step_array(step, fn):
    if step is None:
        step = _STATE.step
    if step is None:
        raise ValueError(f"nf.summary.{fn}: no step set. Give one with the `step` argument or "
                         f"with nf.summary.experimental.set_step() (or as_default(step=...))")
    arr = tnp.asarray(step)
    if arr.ndim != 0:
        raise ValueError(f"nf.summary.{fn}: step must be a scalar, got shape "
                         f"{tuple(arr.shape)}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"nf.summary.{fn}: step must be an integer (int64-castable), got "
                        f"{arr.dtype} {step!r}")
    return arr


def _write(fn, kind, tag, data, step, metadata, **options):
    """The shared front of every summary: resolve writer, condition and step, then bind."""
    if not isinstance(tag, str):
        raise TypeError(f"nf.summary.{fn}: name must be a str, got {tag!r}")
    writer = _STATE.writer
    if writer is None or isinstance(writer, _NoopSummaryWriter):
        return _false()
    cond = _condition()
    if cond is False:
        return _false()
    step = _step_array(step, fn)
    if cond is True:
        cond = tnp.asarray(True)
    writer._check_open()
    bind(write_summary_p, cond, step, *data, writer=writer, tag=tag, kind=kind,
         metadata=metadata, **options)
    return cond


def _numeric(fn, data, what="data"):
    arr = tnp.asarray(data)
    if arr.dtype.kind not in "biuf" and arr.dtype.name != "bfloat16":
        raise TypeError(f"nf.summary.{fn}: {what} must be real numbers or booleans, got "
                        f"{arr.dtype}")
    return arr


def _metadata(plugin, description):
    if description is None:
        return None
    if not isinstance(description, str):
        raise TypeError(f"description must be a str, got {description!r}")
    return R.summary_metadata(plugin, b"", description)


# ------------------------------------------------------------------ summaries
def scalar(name, data, step=None, description=None):
    """Write a scalar (`tf.summary.scalar`): `data` is a real 0-d value, written as float32
    (so large integers round as they do in TensorFlow). Returns True if written, False
    without a default writer."""
    arr = _numeric("scalar", data)
    if arr.ndim != 0:
        raise ValueError(f"nf.summary.scalar({name!r}): data must be a scalar, got shape "
                         f"{tuple(arr.shape)}")
    return _write("scalar", "scalar", name, [arr], step, _metadata("scalars", description))


def histogram(name, data, step=None, buckets=None, description=None):
    """Write a histogram of all elements of `data` (`tf.summary.histogram`): `buckets` (30)
    equal-width buckets from the data's minimum to its maximum, as TensorBoard's own
    histogram summary. NaN or inf in the data is a ValueError when it is written."""
    arr = _numeric("histogram", data)
    if buckets is None:
        buckets = 30
    if isinstance(buckets, (bool, np.bool_)) or not isinstance(buckets, (int, np.integer)):
        raise TypeError(f"nf.summary.histogram({name!r}): buckets must be an int, got "
                        f"{buckets!r}")
    buckets = max(0, int(buckets))       # TensorFlow treats a negative count as zero
    return _write("histogram", "histogram", name, [arr], step,
                  _metadata("histograms", description), buckets=buckets)


def _check_max_outputs(kind, name, max_outputs):
    if isinstance(max_outputs, (bool, np.bool_)) or not isinstance(max_outputs,
                                                                   (int, np.integer)):
        raise TypeError(f"nf.summary.{kind}({name!r}): max_outputs must be an int, got "
                        f"{max_outputs!r}")
    if max_outputs < 0:
        raise ValueError(f"nf.summary.{kind}({name!r}): max_outputs must be >= 0, got "
                         f"{max_outputs}")


def image(name, data, step=None, max_outputs=3, description=None):
    """Write up to `max_outputs` images (`tf.summary.image`): `data` is [k, h, w, c] with c
    = 1 (grayscale), 3 (RGB), 4 (RGBA) (or 2, grayscale + alpha), uint8, or floats in [0, 1]
    (scaled by 255.5, clipped and truncated, as `tf.image.convert_image_dtype`). Each image is
    stored as PNG."""
    arr = tnp.asarray(data)
    if arr.ndim != 4:
        raise ValueError(f"nf.summary.image({name!r}): data must have rank 4 [k, h, w, c], got "
                         f"shape {tuple(arr.shape)}")
    if arr.shape[3] is not None and arr.shape[3] not in (1, 2, 3, 4):
        raise ValueError(f"nf.summary.image({name!r}): data must have 1, 3 or 4 channels (or "
                         f"2: gray + alpha) in its last axis, got shape {tuple(arr.shape)}")
    if arr.dtype != np.uint8 and arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
        raise TypeError(f"nf.summary.image({name!r}): data must be uint8 or floating point in "
                        f"[0, 1], got {arr.dtype}")
    _check_max_outputs("image", name, max_outputs)
    return _write("image", "image", name, [arr], step, _metadata("images", description),
                  max_outputs=int(max_outputs))


def audio(name, data, sample_rate, step=None, max_outputs=3, encoding=None, description=None):
    """Write up to `max_outputs` sound clips (`tf.summary.audio`): `data` is [k, t, c] floats
    in [-1, 1] (k clips of t samples, c channels), stored as 16-bit PCM WAV at `sample_rate`
    Hz (a number, or a scalar array read when written); `encoding` may only be "wav"."""
    if encoding not in (None, "wav"):
        raise ValueError(f"nf.summary.audio({name!r}): unknown encoding {encoding!r} (only "
                         f"'wav')")
    arr = tnp.asarray(data)
    if arr.ndim != 3:
        raise ValueError(f"nf.summary.audio({name!r}): data must have rank 3 [k, t, c], got "
                         f"shape {tuple(arr.shape)}")
    if arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
        raise TypeError(f"nf.summary.audio({name!r}): data must be floating point in [-1, 1], "
                        f"got {arr.dtype}")
    rate = _numeric("audio", sample_rate, "sample_rate")
    if rate.ndim != 0:
        raise ValueError(f"nf.summary.audio({name!r}): sample_rate must be a scalar, got shape "
                         f"{tuple(rate.shape)}")
    _check_max_outputs("audio", name, max_outputs)
    meta = R.summary_metadata("audio", R.f_varint(2, 11),         # AudioPluginData{WAV}
                              description)
    return _write("audio", "audio", name, [arr, rate], step, meta, max_outputs=int(max_outputs))


def text(name, data, step=None, description=None):
    """Write text (`tf.summary.text`): a str (Markdown, shown by TensorBoard's text
    dashboard), bytes, or a nested list / NumPy array of them (shown as a table). The text
    is known when the summary is called; inside `nf.function` it is written at each run."""
    if isinstance(data, ndarray):
        raise TypeError(f"nf.summary.text({name!r}): data must be str or bytes (ndflow arrays "
                        f"hold numbers), got an array of {data.dtype}")
    arr = np.asarray(data, dtype=object if isinstance(data, (list, tuple)) else None)
    if arr.dtype.kind not in "SUO" or not all(isinstance(v, (str, bytes, np.str_, np.bytes_))
                                               for v in arr.ravel()):
        raise TypeError(f"nf.summary.text({name!r}): data must be str or bytes (or nested "
                        f"lists / arrays of them), got {data!r:.80}")
    values = tuple(v if isinstance(v, bytes) else str(v) for v in arr.ravel())
    return _write("text", "text", name, [], step, _metadata("text", description),
                  values=values, shape=tuple(arr.shape))


def write(tag, tensor, step=None, metadata=None, name=None):
    """Write `tensor` under `tag` with `metadata` (a serialized `SummaryMetadata`, or an
    object with `SerializeToString()`), as `tf.summary.write`: the general form the other
    summaries are built on, for plugins ndflow does not know."""
    if metadata is None:
        metadata = b""
    elif hasattr(metadata, "SerializeToString"):
        metadata = metadata.SerializeToString()
    elif not isinstance(metadata, bytes):
        raise TypeError(f"nf.summary.write: metadata must be bytes or a SummaryMetadata "
                        f"proto, got {type(metadata).__name__}")
    arr = tnp.asarray(tensor)
    if arr.dtype.kind not in "biufc" and arr.dtype.name != "bfloat16":
        raise TypeError(f"nf.summary.write: tensor must be numbers, got {arr.dtype}")
    return _write("write", "tensor", tag, [arr], step, metadata)


def graph(graph_data):
    """Write a graph for TensorBoard's graph dashboard (`tf.summary.graph`): an
    `nf.function` (the graph its input_signature gives, or its only traced graph), a
    concrete function (`f.get_concrete_function(...)`: the graph as traced, before the
    compiler's passes), an IR graph (`cf.graph` is the optimized one), or a serialized
    GraphDef. Only eagerly, as in TensorFlow. Returns True if written."""
    if _in_graph():
        raise ValueError("nf.summary.graph() cannot be called inside nf.function (as "
                         "tf.summary.graph); call it eagerly")
    if isinstance(graph_data, (bytes, bytearray)):
        gdef = bytes(graph_data)
    else:
        g = graph_data
        if isinstance(g, _function.Function):
            traced = list(g._cache.values())
            if g._sig is not None:
                g = g.get_concrete_function()
            elif len(traced) == 1:
                g = traced[0]
            else:
                raise ValueError(f"nf.summary.graph: nf.function {g._name!r} has "
                                 f"{len(traced)} traced graphs and no input_signature; pass "
                                 f"one: {g._name}.get_concrete_function(<arguments or "
                                 f"nf.TensorSpecs>)")
        if hasattr(g, "traced_graph"):
            g = g.traced_graph
        if not isinstance(g, Graph):
            raise TypeError(f"nf.summary.graph: expected an nf.function, a concrete function, "
                            f"an IR graph or GraphDef bytes, got {type(graph_data).__name__}")
        gdef = graph_def(g)
    writer = _STATE.writer
    if writer is None or isinstance(writer, _NoopSummaryWriter) or _condition() is False:
        return _false()
    writer._check_open()
    writer._write_event(R.event(time.time(), 0, graph_def=gdef))
    return tnp.asarray(True)


def flush(writer=None, name=None):
    """Flush `writer` (default: the default writer, if any), as `tf.summary.flush`; inside
    `nf.function` the flush happens at each run."""
    if writer is None:
        writer = _STATE.writer
    if writer is None or isinstance(writer, _NoopSummaryWriter):
        return None
    if _in_graph():
        return bind(flush_summary_p, writer=writer)
    writer._file.flush()
    return None


@contextlib.contextmanager
def record_if(condition):
    """Within the block, summaries are written only when `condition` holds: a bool, a
    boolean scalar array (inside `nf.function`: read at each run), or a callable returning
    either (called when the summary is called: at trace time inside `nf.function`, so an
    array it returns is read at each run). As in TensorFlow, an inner `record_if` replaces
    the outer condition."""
    old = _STATE.recording
    _STATE.recording = condition
    try:
        yield
    finally:
        _STATE.recording = old


def should_record_summaries():
    """Whether summaries would be written now: False without a default writer, else the
    recording condition (a bool array; inside `nf.function` possibly read at run time)."""
    if _STATE.writer is None or isinstance(_STATE.writer, _NoopSummaryWriter):
        return _false()
    cond = _condition()
    return tnp.asarray(cond) if isinstance(cond, bool) else cond


# ------------------------------------------------------------------ trace_on / trace_export
class _Trace:
    """The graphs of the functions traced since `trace_on` (process-wide, as TensorFlow's)."""
    lock = threading.Lock()
    graphs = None           # None: not tracing; else the list of traced IR graphs


def _collect(cf):
    with _Trace.lock:
        if _Trace.graphs is not None:
            _Trace.graphs.append(cf.traced_graph)


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Start collecting the graphs of `nf.function`s, for `trace_export` (as
    `tf.summary.trace_on`). ndflow collects a function's graph when it is traced, so turn
    tracing on before a function's first call (for a function traced earlier use
    `nf.summary.graph(f.get_concrete_function(...))`). ndflow has no profiler:
    `profiler=True` is a ValueError (`NDFLOW_DEBUG=time` prints the time of every call)."""
    if profiler:
        raise ValueError("nf.summary.trace_on: profiler=True is not supported (ndflow has no "
                         "profiler; NDFLOW_DEBUG=time prints compile and call times)")
    if _in_graph():
        warnings.warn("nf.summary.trace_on: cannot start a trace inside nf.function",
                      stacklevel=2)
        return
    with _Trace.lock:
        _Trace.graphs = [] if graph else None
    if graph and _collect not in _concrete.TRACE_HOOKS:
        _concrete.TRACE_HOOKS.append(_collect)


def trace_off():
    """Stop collecting graphs and forget those collected (`tf.summary.trace_off`)."""
    with _Trace.lock:
        _Trace.graphs = None
    if _collect in _concrete.TRACE_HOOKS:
        _concrete.TRACE_HOOKS.remove(_collect)


def _run_metadata(gdefs):
    """RunMetadata{function_graphs{pre_optimization_graph}} holding the graphs."""
    return b"".join(R.f_bytes(4, R.f_bytes(2, g)) for g in gdefs)


def trace_export(name, step=None, profiler_outdir=None):
    """Write the graphs collected since `trace_on` under the tag `name` (TensorBoard's graph
    dashboard lists it by that tag), then stop tracing, as `tf.summary.trace_export`."""
    if _in_graph():
        warnings.warn("nf.summary.trace_export: cannot export a trace inside nf.function",
                      stacklevel=2)
        return
    with _Trace.lock:
        graphs = _Trace.graphs
    if graphs is None:
        raise ValueError("nf.summary.trace_export: no trace to export; call "
                         "nf.summary.trace_on() first")
    try:
        if not graphs:
            warnings.warn("nf.summary.trace_export: no nf.function was traced since trace_on() "
                          "(ndflow collects a function's graph when it traces it; for a "
                          "function traced earlier use nf.summary.graph(f.get_concrete_"
                          "function(...)))", stacklevel=2)
        meta = R.summary_metadata("graph_run_metadata_graph", b"1")
        tensor = np.empty((), dtype=object)
        tensor[()] = _run_metadata([graph_def(g) for g in graphs])
        _write("trace_export", "tensor", name, [], step, meta, tensor=tensor)
    finally:
        trace_off()


from . import experimental  # noqa: E402,F401
