"""nf.summary: event files that TensorBoard's own reader loads, written eagerly and at every
run of a compiled function. The CRC32C, TFRecord and protobuf layers are also checked without
tensorboard (known vectors, and a small independent decoder below)."""
import io
import os
import struct
import threading
import zlib

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.summary import _records as R
from ndflow.summary._png import encode_png


# ------------------------------------------------------------------ helpers
def _decode(buf):
    """A minimal protobuf decoder: field number -> list of values (ints for varints, bytes for
    length-delimited fields, floats for fixed64 as double / fixed32 as float)."""
    out, pos = {}, 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _read_varint(buf, pos)
        elif wire == 1:
            (val,), pos = struct.unpack("<d", buf[pos:pos + 8]), pos + 8
        elif wire == 5:
            (val,), pos = struct.unpack("<f", buf[pos:pos + 4]), pos + 4
        elif wire == 2:
            n, pos = _read_varint(buf, pos)
            val, pos = bytes(buf[pos:pos + n]), pos + n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.setdefault(field, []).append(val)
    return out


def _read_varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def _event_files(logdir):
    return sorted(os.path.join(logdir, f) for f in os.listdir(logdir) if "tfevents" in f)


def _raw_events(logdir):
    """Decoded Event protos of the (single) event file in `logdir`."""
    (path,) = _event_files(logdir)
    with open(path, "rb") as f:
        return [_decode(r) for r in R.read_tfrecords(f.read())]


def _accumulator(logdir):
    pea = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_accumulator")
    acc = pea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def _records(logdir):
    """{tag: [(step, value ndarray)]} as TensorBoard's reader sees them, and the plugin of
    each tag."""
    acc = _accumulator(logdir)
    from tensorboard.util import tensor_util
    out, plugins = {}, {}
    for tag in acc.Tags()["tensors"]:
        if tag == "__run_graph__":
            continue
        plugins[tag] = acc.SummaryMetadata(tag).plugin_data.plugin_name
        out[tag] = [(e.step, tensor_util.make_ndarray(e.tensor_proto))
                    for e in acc.Tensors(tag)]
    return out, plugins


@pytest.fixture
def writer(tmp_path):
    w = nf.summary.create_file_writer(str(tmp_path))
    yield w
    w.close()
    nf.summary.experimental.set_step(None)


def _png_pixels(png):
    Image = pytest.importorskip("PIL.Image")
    return np.asarray(Image.open(io.BytesIO(png)))


# ------------------------------------------------------------------ CRC32C and TFRecord
CRC_VECTORS = [
    (b"", 0x00000000),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),                        # RFC 3720 B.4
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (b"The quick brown fox jumps over the lazy dog", 0x22620404),
]


@pytest.mark.parametrize("data,crc", CRC_VECTORS)
def test_crc32c_known_vectors(data, crc):
    assert R.crc32c(data) == crc
    assert R._crc32c_bytes(data) == crc


@pytest.mark.parametrize("n", [R._LANES_FROM, R._LANES_FROM + 1, 3 * R._LANE * 37 + 5,
                               1 << 20])
def test_crc32c_many_lanes_matches_bytewise(n):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8).tobytes()
    assert R.crc32c(data) == R._crc32c_bytes(data)
    assert R._crc32c_lanes(data) == R._crc32c_bytes(data)


def test_masked_crc_and_tfrecord_framing():
    data = b"summary bytes"
    c = R.crc32c(data)
    assert R.masked_crc32c(data) == ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) \
        % (1 << 32)
    rec = R.tfrecord(data)
    assert len(rec) == 8 + 4 + len(data) + 4
    assert struct.unpack("<Q", rec[:8]) == (len(data),)
    assert struct.unpack("<I", rec[8:12]) == (R.masked_crc32c(rec[:8]),)
    assert rec[12:-4] == data
    assert struct.unpack("<I", rec[-4:]) == (R.masked_crc32c(data),)
    stream = rec + R.tfrecord(b"") + R.tfrecord(b"x" * 70000)
    assert R.read_tfrecords(stream) == [data, b"", b"x" * 70000]
    bad = bytearray(stream)
    bad[14] ^= 1
    with pytest.raises(ValueError, match="data CRC mismatch at offset 0"):
        R.read_tfrecords(bytes(bad))
    with pytest.raises(ValueError, match="truncated"):
        R.read_tfrecords(stream[:-3])


def test_tensorboard_reads_our_crcs():
    stub = pytest.importorskip("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")
    for data, _ in CRC_VECTORS:
        assert stub.masked_crc32c(data) == R.masked_crc32c(data)


def test_protobuf_varints():
    assert R._varint(0) == b"\x00"
    assert R._varint(300) == b"\xac\x02"
    assert R._varint(-1) == b"\xff" * 9 + b"\x01"          # int64 -1: ten bytes
    assert _read_varint(R._varint(2 ** 63 - 1), 0)[0] == 2 ** 63 - 1


# ------------------------------------------------------------------ files, without tensorboard
def test_event_file_layout_without_tensorboard(tmp_path):
    w = nf.summary.create_file_writer(str(tmp_path), filename_suffix=".mine")
    (path,) = _event_files(str(tmp_path))
    name = os.path.basename(path)
    assert name.startswith("events.out.tfevents.") and name.endswith(".mine")
    assert path == w.path
    with w.as_default():
        assert bool(nf.summary.scalar("loss", 0.75, step=12))
    w.close()
    first, second = _raw_events(str(tmp_path))
    assert first[3] == [b"brain.Event:2"] and 5 not in first        # file_version first
    assert second[2] == [12]
    (value,) = _decode(second[5][0])[1]
    value = _decode(value)
    assert value[1] == [b"loss"]
    plugin = _decode(_decode(value[9][0])[1][0])
    assert plugin[1] == [b"scalars"]
    tensor = _decode(value[8][0])
    assert tensor[1] == [R.DT_FLOAT]
    assert np.frombuffer(tensor[4][0], "<f4").tolist() == [0.75]


def test_png_encoder_round_trip():
    rng = np.random.default_rng(0)
    for c in (1, 2, 3, 4):
        img = rng.integers(0, 256, (9, 7, c), dtype=np.uint8)
        img[3] = img[2]                     # repeated rows: the 'Up' filter's zero rows
        png = encode_png(img)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        # the IDAT stream, un-filtered by hand (filters 0 and 2 only), gives the pixels
        idat = png[png.index(b"IDAT") + 4:png.index(b"IEND") - 8]
        raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(9, 1 + 7 * c)
        assert raw[0, 0] == 0 and (raw[1:, 0] == 2).all()
        rows = np.cumsum(raw[:, 1:].astype(np.int64), axis=0) % 256
        np.testing.assert_array_equal(rows.reshape(img.shape), img)
        pix = _png_pixels(png)
        np.testing.assert_array_equal(pix.reshape(img.shape), img)


# ------------------------------------------------------------------ every kind, eagerly
def test_scalar_values_steps_and_return(tmp_path, writer):
    with writer.as_default():
        for step, v in [(0, 1.5), (1, np.float32(-0.0)), (2, 7), (5, np.inf), (6, True)]:
            assert bool(nf.summary.scalar("s", v, step=step)) is True
        assert bool(nf.summary.scalar("arr", tnp.asarray(0.1), step=3))
    rec, plugins = _records(tmp_path)
    assert plugins == {"s": "scalars", "arr": "scalars"}
    steps = [s for s, _ in rec["s"]]
    vals = [v for _, v in rec["s"]]
    assert steps == [0, 1, 2, 5, 6]
    assert all(v.dtype == np.float32 and v.shape == () for v in vals)
    assert [float(v) for v in vals] == [1.5, 0.0, 7.0, np.inf, 1.0]
    assert np.signbit(vals[1])
    assert rec["arr"] == [(3, np.float32(0.1))]


def test_no_default_writer_returns_false_and_writes_nothing(tmp_path, writer):
    for call in (lambda: nf.summary.scalar("s", 1.0),           # no step needed: nothing to do
                 lambda: nf.summary.histogram("h", [1.0, 2.0], step=1),
                 lambda: nf.summary.image("i", np.zeros((1, 2, 2, 1)), step=1),
                 lambda: nf.summary.text("t", "x", step=1)):
        r = call()
        assert isinstance(r, tnp.ndarray) and r.dtype == np.bool_ and not bool(r)
    writer.flush()
    assert len(_raw_events(str(tmp_path))) == 1


def test_histogram_matches_tensorboard_algorithm(tmp_path, writer):
    hist_v2 = pytest.importorskip("tensorboard.plugins.histogram.summary_v2")
    from tensorboard.util import tensor_util
    rng = np.random.default_rng(1)
    cases = {"normal": (rng.normal(size=1000), None), "ints": (np.arange(-5, 17), 7),
             "one_value": (np.full(10, 2.5), 4), "empty": (np.zeros((0, 3)), 5),
             "zero_buckets": (np.arange(4.0), 0), "negative_buckets": (np.arange(4.0), -2),
             "huge_range": (np.array([-1e308, 0.0, 1e308]), 3),
             "subnormal_range": (np.array([0.0, 5e-324, 1e-323, 1.5e-323]), 3)}
    with writer.as_default(step=4):
        for tag, (data, buckets) in cases.items():
            assert bool(nf.summary.histogram(tag, data, buckets=buckets))
        assert bool(nf.summary.histogram("variable", nf.Variable(np.arange(10.0)), buckets=2))
    rec, plugins = _records(tmp_path)
    assert set(plugins.values()) == {"histograms"}
    for tag, (data, buckets) in cases.items():
        ((step, got),) = rec[tag]
        assert step == 4 and got.dtype == np.float64
        k = 30 if buckets is None else max(0, buckets)
        assert got.shape == (k, 3)
        n = data.size if k else 0
        assert got[:, 2].sum() == n                 # every element in exactly one bucket
        if tag == "huge_range":
            np.testing.assert_array_equal(got[:, 2], [1, 1, 1])
            assert got[0, 0] == -1e308 and got[-1, 1] == 1e308
            continue
        if tag == "subnormal_range":
            np.testing.assert_array_equal(got[:, 2], [1, 1, 2])
            np.testing.assert_array_equal(got[:, :2], [[0, 5e-324], [5e-324, 1e-323],
                                                       [1e-323, 1.5e-323]])
            continue
        if k and data.size:
            ref = tensor_util.make_ndarray(hist_v2.histogram_pb(tag, data, k).value[0].tensor)
            np.testing.assert_allclose(got[:, :2], ref[:, :2], rtol=1e-12)
            np.testing.assert_array_equal(got[:, 2], ref[:, 2])
            assert got[-1, 1] == data.max() and got[0, 0] == data.min()
    np.testing.assert_array_equal(rec["variable"][0][1], [[0, 4.5, 5], [4.5, 9, 5]])
    # the counts are NumPy's for data away from bucket edges
    counts, _ = np.histogram(cases["normal"][0], bins=30)
    np.testing.assert_array_equal(rec["normal"][0][1][:, 2], counts)


def test_histogram_buckets_are_tensorflows_formula():
    """Without tensorboard: the buckets are TensorBoard's formula (floor((x - min) / width),
    clamped; edges linspace(min, max) with the last edge exactly max), bit for bit, over
    magnitudes from 1e-300 to 1e300."""
    from ndflow.summary import _histogram_buckets
    rng = np.random.default_rng(3)
    for _ in range(100):
        x = rng.normal(size=int(rng.integers(2, 300))) * 10.0 ** int(rng.integers(-300, 300))
        k = int(rng.integers(1, 40))
        got = _histogram_buckets(x, k)
        lo, hi = x.min(), x.max()
        idx = np.minimum(np.floor((x - lo) / ((hi - lo) / k)).astype(np.int64), k - 1)
        edges = np.linspace(lo, hi, k + 1)
        edges[-1] = hi
        np.testing.assert_array_equal(got[:, 2], np.bincount(idx, minlength=k))
        np.testing.assert_array_equal(got[:, 0], edges[:-1])
        np.testing.assert_array_equal(got[:, 1], edges[1:])


def test_histogram_rejects_nan(writer):
    with writer.as_default(step=0):
        with pytest.raises(ValueError, match="histogram 'h'.*NaN or inf"):
            nf.summary.histogram("h", np.array([1.0, np.nan]))
        with pytest.raises(TypeError, match="buckets must be an int"):
            nf.summary.histogram("h", np.ones(3), buckets=2.5)


def _expected_uint8(x):
    x = np.asarray(x)
    if x.dtype == np.uint8:
        return x
    y = x * x.dtype.type(255.5)
    return np.where(np.isnan(y), 0, np.clip(y, 0, 255)).astype(np.uint8)


def test_image_pngs_decode_to_the_pixels(tmp_path, writer):
    rng = np.random.default_rng(2)
    floats = rng.uniform(-0.2, 1.2, (4, 5, 6, 3)).astype(np.float32)
    floats[0, 0, 0] = [0.0, 1.0, np.nan]
    gray = rng.integers(0, 256, (2, 3, 8, 1), dtype=np.uint8)
    rgba = rng.uniform(size=(1, 2, 2, 4))          # float64
    with writer.as_default(step=7):
        assert bool(nf.summary.image("floats", floats))                  # max_outputs=3
        assert bool(nf.summary.image("gray", tnp.asarray(gray), max_outputs=5))
        assert bool(nf.summary.image("rgba", rgba, step=8))
        assert bool(nf.summary.image("none", floats, max_outputs=0))
    rec, plugins = _records(tmp_path)
    assert set(plugins.values()) == {"images"}
    for tag, data, k, step in [("floats", floats, 3, 7), ("gray", gray, 2, 7),
                               ("rgba", rgba, 1, 8), ("none", floats, 0, 7)]:
        ((s, got),) = rec[tag]
        assert s == step and got.shape == (2 + k,)
        assert got[0] == str(data.shape[2]).encode() and got[1] == str(data.shape[1]).encode()
        for i in range(k):
            pix = _png_pixels(got[2 + i]).reshape(data.shape[1:])
            np.testing.assert_array_equal(pix, _expected_uint8(data[i]))
    assert _png_pixels(rec["floats"][0][1][2])[0, 0].tolist() == [0, 255, 0]


def test_image_errors(writer):
    with writer.as_default(step=0):
        with pytest.raises(ValueError, match=r"rank 4 .*\(2, 2, 3\)"):
            nf.summary.image("i", np.zeros((2, 2, 3)))
        with pytest.raises(ValueError, match=r"channels .*\(1, 2, 2, 5\)"):
            nf.summary.image("i", np.zeros((1, 2, 2, 5)))
        with pytest.raises(TypeError, match="uint8 or floating point.*int32"):
            nf.summary.image("i", np.zeros((1, 2, 2, 3), np.int32))
        with pytest.raises(ValueError, match="max_outputs must be >= 0"):
            nf.summary.image("i", np.zeros((1, 2, 2, 3)), max_outputs=-1)
        with pytest.raises(ValueError, match="nonzero height and width"):
            nf.summary.image("i", np.zeros((1, 0, 2, 3)))


def test_text_round_trips(tmp_path, writer):
    with writer.as_default(step=2):
        assert bool(nf.summary.text("md", "# Title\n**bold** ünïcödé ✓"))
        assert bool(nf.summary.text("table", [["a", "b"], ["c", "d"]], step=3))
        assert bool(nf.summary.text("bytes", b"raw"))
        with pytest.raises(TypeError, match="str or bytes"):
            nf.summary.text("bad", 3.0)
        with pytest.raises(TypeError, match="str or bytes"):
            nf.summary.text("bad", tnp.ones(2))
    rec, plugins = _records(tmp_path)
    assert set(plugins.values()) == {"text"}
    ((s, md),) = rec["md"]
    assert s == 2 and md.shape == () and md.item().decode() == "# Title\n**bold** ünïcödé ✓"
    ((s, table),) = rec["table"]
    assert s == 3 and table.tolist() == [[b"a", b"b"], [b"c", b"d"]]
    assert rec["bytes"][0][1].item() == b"raw"


def test_write_general_tensor(tmp_path, writer):
    with writer.as_default(step=1):
        meta = R.summary_metadata("custom_plugin", b"\x08\x01")
        assert bool(nf.summary.write("t", np.arange(6, dtype=np.int32).reshape(2, 3),
                                     metadata=meta))
    rec, plugins = _records(tmp_path)
    assert plugins == {"t": "custom_plugin"}
    np.testing.assert_array_equal(rec["t"][0][1], np.arange(6).reshape(2, 3))
    assert rec["t"][0][1].dtype == np.int32


def test_description_is_stored(tmp_path, writer):
    with writer.as_default(step=0):
        nf.summary.scalar("d", 1.0, description="the **loss**")
    acc = _accumulator(tmp_path)
    assert acc.SummaryMetadata("d").summary_description == "the **loss**"


# ------------------------------------------------------------------ steps and errors
def test_step_errors_and_defaults(tmp_path, writer):
    with writer.as_default():
        with pytest.raises(ValueError, match="no step set"):
            nf.summary.scalar("s", 1.0)
        with pytest.raises(TypeError, match="step must be an integer"):
            nf.summary.scalar("s", 1.0, step=1.0)
        with pytest.raises(ValueError, match="step must be a scalar"):
            nf.summary.scalar("s", 1.0, step=[1, 2])
        with pytest.raises(ValueError, match=r"data must be a scalar, got shape \(2,\)"):
            nf.summary.scalar("s", [1.0, 2.0], step=0)
        with pytest.raises(TypeError, match="real numbers"):
            nf.summary.scalar("s", 1 + 2j, step=0)
        nf.summary.experimental.set_step(10)
        assert nf.summary.experimental.get_step() == 10
        nf.summary.scalar("s", 1.0)                         # step 10
        with writer.as_default(step=20):
            nf.summary.scalar("s", 2.0)                     # step 20
        assert nf.summary.experimental.get_step() == 10    # restored
        v = nf.Variable(30, dtype="int64", trainable=False)
        nf.summary.experimental.set_step(v)
        nf.summary.scalar("s", 3.0)                         # step 30
        v.assign_add(1)
        nf.summary.scalar("s", 4.0)                         # the Variable is read: 31
        nf.summary.scalar("s", 5.0, step=np.int32(40))
    rec, _ = _records(tmp_path)
    assert [(s, float(x)) for s, x in rec["s"]] == [(10, 1.0), (20, 2.0), (30, 3.0), (31, 4.0),
                                                    (40, 5.0)]


def test_writer_arguments_and_close(tmp_path):
    with pytest.raises(ValueError, match="logdir cannot be None"):
        nf.summary.create_file_writer(None)
    with pytest.raises(ValueError, match="max_queue must be >= 0"):
        nf.summary.create_file_writer(str(tmp_path), max_queue=-1)
    with pytest.raises(TypeError, match="flush_millis must be an int"):
        nf.summary.create_file_writer(str(tmp_path), flush_millis=1.5)
    sub = tmp_path / "a" / "b"
    w = nf.summary.create_file_writer(sub)                 # a PathLike, parents created
    assert len(_event_files(str(sub))) == 1
    w.close()
    w.close()                                              # twice is fine
    with pytest.raises(RuntimeError, match="already closed"):
        with w.as_default():
            pass
    with pytest.raises(RuntimeError, match="already closed"):
        w.set_as_default()


def test_noop_writer(tmp_path):
    w = nf.summary.create_noop_writer()
    with w.as_default(step=1):
        assert not bool(nf.summary.scalar("s", 1.0))
    w.flush()
    w.close()


# ------------------------------------------------------------------ queueing and flushing
def test_flush_and_queue(tmp_path):
    w = nf.summary.create_file_writer(str(tmp_path), max_queue=3, flush_millis=10 ** 9)
    with w.as_default(step=0):
        for i in range(3):
            nf.summary.scalar("s", float(i))
        assert len(_raw_events(str(tmp_path))) == 1         # queued: only file_version
        nf.summary.scalar("s", 3.0)                         # a 4th: more than max_queue
        assert len(_raw_events(str(tmp_path))) == 5
        nf.summary.scalar("s", 4.0)
        assert len(_raw_events(str(tmp_path))) == 5
        nf.summary.flush()
        assert len(_raw_events(str(tmp_path))) == 6
        nf.summary.scalar("s", 5.0)
    assert len(_raw_events(str(tmp_path))) == 7             # leaving as_default flushes
    w.set_as_default(step=1)
    try:
        nf.summary.scalar("s", 6.0)
        assert len(_raw_events(str(tmp_path))) == 7
        w.close()                                           # close flushes
        assert len(_raw_events(str(tmp_path))) == 8
        with pytest.raises(RuntimeError, match="closed"):
            nf.summary.scalar("s", 7.0)
    finally:
        from ndflow.summary import _STATE
        _STATE.writer = None
        _STATE.step = None


def test_flush_millis_zero_writes_through(tmp_path):
    w = nf.summary.create_file_writer(str(tmp_path), flush_millis=0)
    with w.as_default(step=0):
        nf.summary.scalar("s", 1.0)
        assert len(_raw_events(str(tmp_path))) == 2
    w.close()


def test_collected_writer_flushes(tmp_path):
    """Queued events reach the file when the writer is garbage-collected (and at exit)."""
    import gc
    w = nf.summary.create_file_writer(str(tmp_path))
    with w.as_default(step=3):
        nf.summary.scalar("s", 1.0)
    w._file.queue.append(R.tfrecord(R.event(0.0, 4)))     # still queued when dropped
    assert len(_raw_events(str(tmp_path))) == 2
    del w
    gc.collect()
    assert len(_raw_events(str(tmp_path))) == 3


def test_default_writer_is_per_thread(tmp_path, writer):
    seen = []
    with writer.as_default(step=0):
        t = threading.Thread(target=lambda: seen.append(bool(nf.summary.scalar("s", 1.0))))
        t.start()
        t.join()
        assert bool(nf.summary.scalar("s", 2.0))
    assert seen == [False]


# ------------------------------------------------------------------ inside nf.function
def _train_fn(step_var):
    @nf.function
    def f(x):
        step_var.assign_add(1)
        loss = tnp.mean(tnp.square(x))
        nf.summary.scalar("loss", loss, step=step_var)
        nf.summary.histogram("x", x, step=step_var, buckets=5)
        nf.summary.image("img", tnp.reshape(x, (1, 2, 2, 1)) / 10.0, step=step_var)
        nf.summary.text("note", "call", step=step_var)
        return loss
    return f


def test_compiled_writes_at_run_time_like_eager(tmp_path):
    xs = [np.array([1.0, 2.0, 3.0, 4.0]) + i for i in range(3)]
    runs = {}
    for mode in ("eager", "compiled"):
        d = tmp_path / mode
        w = nf.summary.create_file_writer(str(d))
        step = nf.Variable(0, dtype="int64", trainable=False)
        f = _train_fn(step)
        fn = f.python_function if mode == "eager" else f
        with w.as_default():
            if mode == "compiled":
                f.get_concrete_function(tnp.asarray(xs[0]))     # tracing writes nothing
                w.flush()
                assert len(_raw_events(str(d))) == 1
                assert step.numpy() == 0
            for x in xs:
                fn(tnp.asarray(x))
        w.close()
        runs[mode] = _records(d)
    (eager, eplug), (comp, cplug) = runs["eager"], runs["compiled"]
    assert eplug == cplug
    assert set(eager) == {"loss", "x", "img", "note"}
    for tag in eager:
        assert [s for s, _ in eager[tag]] == [1, 2, 3]
        assert [s for s, _ in comp[tag]] == [1, 2, 3]
        for (_, a), (_, b) in zip(eager[tag], comp[tag]):
            np.testing.assert_array_equal(a, b)
    assert [float(v) for _, v in comp["loss"]] == [np.float32(np.mean(x ** 2)) for x in xs]


def test_compiled_step_from_optimizer_iterations(tmp_path, writer):
    w_ = nf.Variable(np.array([1.0, -2.0]))
    opt = nf.optimizers.SGD(0.1)

    @nf.function
    def train_step(x):
        with nf.GradientTape() as tape:
            loss = tnp.sum(tnp.square(w_ * x))
        opt.apply_gradients(zip(tape.gradient(loss, [w_]), [w_]))
        nf.summary.scalar("loss", loss, step=opt.iterations)
        nf.summary.histogram("w", w_, step=opt.iterations)
        return loss

    x = tnp.asarray([1.0, 1.0])
    losses, ws = [], []
    with writer.as_default():
        for _ in range(4):
            losses.append(float(train_step(x)))
            ws.append(w_.numpy().copy())        # the histogram reads w after the update
    rec, _ = _records(tmp_path)
    assert [s for s, _ in rec["loss"]] == [1, 2, 3, 4]      # read after the increment
    assert [float(v) for _, v in rec["loss"]] == [float(np.float32(v)) for v in losses]
    for (_, h), w_after in zip(rec["w"], ws):
        assert h[0, 0] == w_after.min() and h[-1, 1] == w_after.max()


def test_compiled_python_step_is_captured_at_trace_time(tmp_path, writer):
    @nf.function
    def f(x):
        return nf.summary.scalar("s", x)

    with writer.as_default(step=5):
        f(tnp.asarray(1.0))
    nf.summary.experimental.set_step(6)
    with writer.as_default():
        r = f(tnp.asarray(2.0))          # same trace: the Python step 5 stays, as in TF
    assert bool(r)
    rec, _ = _records(tmp_path)
    assert [(s, float(v)) for s, v in rec["s"]] == [(5, 1.0), (5, 2.0)]


def test_compiled_step_array_argument(tmp_path, writer):
    @nf.function
    def f(x, step):
        return nf.summary.scalar("s", x, step=step)

    with writer.as_default():
        for i in range(3):
            f(tnp.asarray(float(i)), tnp.asarray(i * 10))
    rec, _ = _records(tmp_path)
    assert [(s, float(v)) for s, v in rec["s"]] == [(0, 0.0), (10, 1.0), (20, 2.0)]


def test_record_if(tmp_path, writer):
    step = nf.Variable(0, dtype="int64", trainable=False)

    @nf.function
    def f(x):
        step.assign_add(1)
        with nf.summary.record_if(lambda: tnp.equal(step.read_value() % 2, 0)):
            a = nf.summary.scalar("even", x, step=step)
        with nf.summary.record_if(False):
            b = nf.summary.scalar("never", x, step=step)
        c = nf.summary.scalar("always", x, step=step)
        return a, b, c

    with writer.as_default():
        out = [tuple(bool(r) for r in f(tnp.asarray(float(i)))) for i in range(4)]
        with nf.summary.record_if(False):
            assert not bool(nf.summary.scalar("eager_off", 1.0, step=0))
            assert not bool(nf.summary.should_record_summaries())
            with nf.summary.record_if(True):                 # the inner one decides
                assert bool(nf.summary.scalar("eager_on", 1.0, step=0))
        assert bool(nf.summary.should_record_summaries())
    assert not bool(nf.summary.should_record_summaries())    # no writer
    assert out == [(False, False, True), (True, False, True), (False, False, True),
                   (True, False, True)]
    rec, _ = _records(tmp_path)
    assert [(s, float(v)) for s, v in rec["even"]] == [(2, 1.0), (4, 3.0)]
    assert [s for s, _ in rec["always"]] == [1, 2, 3, 4]
    assert "never" not in rec and "eager_off" not in rec and "eager_on" in rec
    with pytest.raises(TypeError, match="record_if: the condition must be a bool"):
        with writer.as_default(step=0), nf.summary.record_if(tnp.ones(2)):
            nf.summary.scalar("s", 1.0)


def test_compiled_summary_survives_the_passes(writer):
    @nf.function
    def f(x):
        nf.summary.scalar("unused", tnp.sum(x) * 1.0, step=1)     # result unused: kept
        nf.summary.scalar("unused", tnp.sum(x) * 1.0, step=1)     # not merged by CSE
        return x + 0.0

    with writer.as_default():
        cf = f.get_concrete_function(tnp.ones(3))
    nodes = [n.prim.name for n in cf.graph.nodes]
    assert nodes.count("write_summary") == 2


def test_summaries_in_a_compiled_loop(tmp_path, writer):
    @nf.function
    def f(x):
        def body(i, acc):
            nf.summary.scalar("acc", acc, step=i)
            return acc * 2.0
        return nf.fori_loop(0, 4, body, x)

    with writer.as_default():
        f(tnp.asarray(1.0))
        f(tnp.asarray(3.0))
    rec, _ = _records(tmp_path)
    assert [(s, float(v)) for s, v in rec["acc"]] == [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0),
                                                      (0, 3.0), (1, 6.0), (2, 12.0), (3, 24.0)]


def test_compiled_errors_at_run_time_name_the_summary(writer):
    @nf.function
    def f(x):
        return nf.summary.histogram("h", x, step=0)

    with writer.as_default():
        assert bool(f(tnp.asarray([1.0, 2.0])))
        with pytest.raises(ValueError, match="histogram 'h'.*NaN or inf"):
            f(tnp.asarray([1.0, np.nan]))
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        f(tnp.asarray([1.0, 2.0]))


def test_compiled_flush_happens_at_run_time(tmp_path):
    w = nf.summary.create_file_writer(str(tmp_path), max_queue=100, flush_millis=10 ** 9)

    @nf.function
    def f(x):
        with w.as_default(step=0):                  # inside: the exit flush is a graph node
            nf.summary.scalar("s", x)
        return x

    f.get_concrete_function(tnp.asarray(0.0))
    before = len(_raw_events(str(tmp_path)))
    f(tnp.asarray(1.0))
    f(tnp.asarray(2.0))
    assert before == 1 and len(_raw_events(str(tmp_path))) == 3
    w.close()


def test_gradients_and_vectorized_map_with_summaries(tmp_path, writer):
    def loss_fn(w):
        loss = tnp.sum(w ** 2)
        nf.summary.scalar("loss", loss, step=0)
        return loss

    w = tnp.asarray([1.0, 2.0])
    with writer.as_default():
        np.testing.assert_allclose(nf.grad(loss_fn)(w).numpy(), [2.0, 4.0])
        np.testing.assert_allclose(nf.function(nf.grad(loss_fn))(w).numpy(), [2.0, 4.0])
        with pytest.raises(ValueError, match="vectorized_map got per-example values"):
            nf.vectorized_map(lambda v: nf.summary.scalar("v", v, step=0), tnp.ones(3))
        # a summary of a value that is not per-example is written once
        nf.vectorized_map(lambda v: (nf.summary.scalar("c", 2.0, step=1), v * 2)[1],
                          tnp.ones(3))
    rec, _ = _records(tmp_path)
    assert [float(v) for _, v in rec["loss"]] == [5.0, 5.0]
    assert rec["c"] == [(1, np.float32(2.0))]


def test_summaries_inside_differentiated_loop_bodies(tmp_path, writer):
    # as in TensorFlow, a summary inside a while/scan body does not stop its gradient: the
    # backward pass replays the body without it, so each iteration's value is written once
    def body(i, v):
        nf.summary.scalar("while", tnp.sum(v), step=i)
        return i + 1, v * 1.5

    def scan_step(c, e):
        nf.summary.scalar("scan", c, step=7)
        return c + e * c

    def loss(x):
        _, y = nf.while_loop(lambda i, v: i < 3, body, (tnp.asarray(0), x))
        return tnp.sum(y)

    def scan_loss(z):
        return tnp.sum(nf.scan(scan_step, tnp.ones(3), z))

    x = tnp.asarray([1.0, 2.0])
    with writer.as_default():
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = loss(x)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), [3.375, 3.375])
        np.testing.assert_allclose(nf.function(nf.grad(loss))(x).numpy(), [3.375, 3.375])
        g, = nf.function(lambda z: nf.grad(scan_loss)(z))(tnp.asarray(2.0)),
        np.testing.assert_allclose(g.numpy(), 14.0)      # d/dz (2z + 4z + 8z)
        # what a summary call returns (whether it recorded) stays usable inside a body
        r = nf.function(lambda v: nf.while_loop(
            lambda i, a: i < 2,
            lambda i, a: (i + 1, a + tnp.where(nf.summary.scalar("w", a, step=i), 1.0, 0.0)),
            (tnp.asarray(0), v))[1])(tnp.asarray(0.5))
        np.testing.assert_allclose(r.numpy(), 2.5)
    rec, _ = _records(tmp_path)
    # two forward passes (tape, compiled) of three iterations each, none from the backward
    assert [(s_, float(v)) for s_, v in rec["while"]] == [(0, 3.0), (1, 4.5), (2, 6.75)] * 2
    assert [float(v) for _, v in rec["scan"]] == [2.0, 4.0, 8.0]
    assert [float(v) for _, v in rec["w"]] == [0.5, 1.5]


# ------------------------------------------------------------------ graphs
def test_graph_of_a_compiled_function(tmp_path, writer):
    @nf.function
    def f(x, y):
        z = tnp.matmul(x, y) + 1.0
        return nf.cond(tnp.sum(z) > 0, lambda: z * 2.0, lambda: -z), tnp.max(z)

    cf = f.get_concrete_function(nf.TensorSpec([None, 3], tnp.float32),
                                 nf.TensorSpec([3, 2], tnp.float32))
    with writer.as_default():
        assert bool(nf.summary.graph(cf))
    acc = _accumulator(tmp_path)
    g = acc.Graph()
    nodes = {n.name: n for n in g.node}
    ops = [n.op for n in g.node]
    assert ops.count("Placeholder") >= 2 and "matmul" in ops and "Identity" in ops
    assert {n.prim.name for n in cf.traced_graph.nodes} <= set(ops)   # op = primitive name
    assert {"cond", "greater", "add", "multiply", "negative", "reduce_max"} <= set(ops)
    for n in g.node:                        # every input names a node of the graph
        for i in n.input:
            assert i.split(":")[0] in nodes, (n.name, i)
    mm = next(n for n in g.node if n.op == "matmul")
    shape = mm.attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [-1, 2]            # None -> -1
    assert mm.attr["dtype"].type == 1                         # DT_FLOAT
    assert "test_summary.py" in mm.attr["_ndflow_loc"].s.decode()
    assert any("/" in n.name for n in g.node)                 # the cond's branches, scoped
    arg = nodes["arg"]
    assert [d.size for d in arg.attr["shape"].shape.dim] == [-1, 3]


def test_graph_arguments(tmp_path, writer):
    @nf.function(input_signature=[nf.TensorSpec([2], tnp.float64)])
    def f(x):
        return tnp.sin(x)

    with writer.as_default():
        assert bool(nf.summary.graph(f))                          # its one signature
        assert bool(nf.summary.graph(f.get_concrete_function().graph))   # the optimized IR
        with pytest.raises(TypeError, match="expected an nf.function"):
            nf.summary.graph(42)

        @nf.function
        def h(x):
            return x + 1

        with pytest.raises(ValueError, match=r"'h' has 0 traced graphs.*h.get_concrete_"):
            nf.summary.graph(h)
        h(tnp.ones(2))
        assert bool(nf.summary.graph(h))                          # its one trace
        h(tnp.ones(3))
        with pytest.raises(ValueError, match="'h' has 2 traced graphs"):
            nf.summary.graph(h)

        @nf.function
        def g(x):
            nf.summary.graph(f)
            return x
        with pytest.raises(ValueError, match="cannot be called inside nf.function"):
            g(tnp.ones(1))
    assert not bool(nf.summary.graph(f))                          # no writer


def test_summary_graph_is_not_saved_or_exported(tmp_path, writer):
    @nf.function(input_signature=[nf.TensorSpec([2], tnp.float64)])
    def f(x):
        nf.summary.scalar("s", tnp.sum(x), step=0)
        return x

    class M(nf.Module):
        pass

    m = M()
    m.f = f
    with writer.as_default():
        with pytest.raises(TypeError, match="'writer' of primitive 'write_summary'"):
            nf.saved_model.save(m, str(tmp_path / "sm"), signatures=f)


def _graphs_plugin(logdir):
    """TensorBoard's graph dashboard backend over `logdir`: (info, graph(tag) -> pbtxt)."""
    pytest.importorskip("tensorboard.plugins.graph.graphs_plugin")
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.backend.event_processing import plugin_event_multiplexer as pem
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.graph import graphs_plugin
    mux = pem.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    ctx = base_plugin.TBContext(data_provider=data_provider.MultiplexerDataProvider(
        mux, str(logdir)), multiplexer=mux, logdir=str(logdir))
    plugin = graphs_plugin.GraphsPlugin(ctx)
    rc = context.RequestContext()
    return (plugin.info_impl(rc, ""),
            lambda tag: plugin.graph_impl(rc, ".", tag, False, "")[0])


def test_graph_dashboard_serves_the_graph(tmp_path, writer):
    @nf.function
    def f(x):
        return tnp.tanh(x) * 3.0

    with writer.as_default():
        nf.summary.graph(f.get_concrete_function(tnp.ones(2)))
    writer.flush()
    info, graph = _graphs_plugin(tmp_path)
    assert info["."]["run_graph"] is True
    text = graph(None)
    assert 'op: "tanh"' in text and 'op: "multiply"' in text and 'op: "Placeholder"' in text


def test_trace_on_trace_export(tmp_path, writer):
    @nf.function
    def f(x):
        return tnp.exp(x) - 1.0

    with pytest.raises(ValueError, match="no trace to export"):
        nf.summary.trace_export("t", step=0)
    with pytest.raises(ValueError, match="profiler"):
        nf.summary.trace_on(profiler=True)
    with writer.as_default():
        nf.summary.trace_on(graph=True)
        f(tnp.ones(3))                          # traced now: collected
        f(tnp.ones(3))
        with pytest.raises(ValueError, match="no step set"):
            nf.summary.trace_export("my_trace")
        nf.summary.trace_on(graph=True)
        f(tnp.ones(4))
        nf.summary.trace_export("my_trace", step=3)
        with pytest.raises(ValueError, match="no trace to export"):     # export ends it
            nf.summary.trace_export("my_trace", step=4)
        nf.summary.trace_on()
        f(tnp.ones(4))                          # already traced: nothing new
        with pytest.warns(UserWarning, match="no nf.function was traced"):
            nf.summary.trace_export("empty", step=5)
    writer.flush()
    info, graph = _graphs_plugin(tmp_path)
    assert info["."]["tags"]["my_trace"]["op_graph"] is True
    text = graph("my_trace")
    assert 'op: "exp"' in text and "size: 4" in text
    acc = _accumulator(tmp_path)
    assert [e.step for e in acc.Tensors("my_trace")] == [3]


# ------------------------------------------------------------------ audio
def _wav_samples(wav):
    import wave
    with wave.open(io.BytesIO(wav)) as w:
        assert w.getsampwidth() == 2
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        return w.getframerate(), pcm.reshape(-1, w.getnchannels())


def _expected_pcm(x):
    x = np.where(np.isnan(x), 0.0, np.clip(np.asarray(x, np.float64), -1, 1)) * 32767
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int16)


def test_wav_encoder_round_trip():
    from ndflow.summary._wav import encode_wav
    x = np.array([[0.0, 1.0], [-1.0, 0.5], [2.0, -3.0], [np.nan, 1 / 65534], [-1 / 65534, 0.25]])
    rate, pcm = _wav_samples(encode_wav(x, 8000))
    assert rate == 8000
    np.testing.assert_array_equal(pcm, [[0, 32767], [-32767, 16384], [32767, -32767], [0, 1],
                                        [-1, 8192]])


def test_audio_eager_and_compiled(tmp_path, writer):
    rng = np.random.default_rng(4)
    clips = rng.uniform(-1.2, 1.2, (4, 50, 2)).astype(np.float32)

    @nf.function
    def f(x, rate):
        return nf.summary.audio("compiled", x, rate, step=1, max_outputs=2)

    with writer.as_default(step=0):
        assert bool(nf.summary.audio("eager", clips, 16000))          # max_outputs=3
        assert bool(f(tnp.asarray(clips), tnp.asarray(22050)))
        assert bool(f(tnp.asarray(clips * 0.5), tnp.asarray(8000)))  # the rate is read per call
        with pytest.raises(ValueError, match="rank 3"):
            nf.summary.audio("bad", clips[0], 16000)
        with pytest.raises(ValueError, match="only 'wav'"):
            nf.summary.audio("bad", clips, 16000, encoding="mp3")
        with pytest.raises(ValueError, match="positive number of Hz"):
            nf.summary.audio("bad", clips, 0)
    writer.flush()
    for ev in _raw_events(str(tmp_path))[1:]:           # on disk: TF's [k, 2] (clip, label)
        value = _decode(_decode(ev[5][0])[1][0])
        tensor = _decode(value[8][0])
        dims = [_decode(d).get(1, [0])[0] for d in _decode(tensor[2][0])[2]]
        assert dims == [3 if value[1] == [b"eager"] else 2, 2]
        assert tensor[8][1::2] == [b""] * dims[0] and tensor[8][0][:4] == b"RIFF"
    rec, plugins = _records(tmp_path)
    assert plugins == {"eager": "audio", "compiled": "audio"}
    acc = _accumulator(tmp_path)
    from tensorboard.plugins.audio import metadata as audio_meta
    content = audio_meta.parse_plugin_metadata(acc.SummaryMetadata("eager").plugin_data.content)
    assert content.encoding == audio_meta.Encoding.Value("WAV")
    for tag, data, rate, step in [("eager", [clips], [16000], [0]),
                                  ("compiled", [clips, clips * 0.5], [22050, 8000], [1, 1])]:
        assert [s for s, _ in rec[tag]] == step
        for (s, got), x, r in zip(rec[tag], data, rate):
            k = 3 if tag == "eager" else 2
            assert got.shape == (k,)        # the reader keeps the clips of our [k, 2] (clip, label)
            for i in range(k):
                got_rate, pcm = _wav_samples(got[i])
                assert got_rate == r
                np.testing.assert_array_equal(pcm, _expected_pcm(x[i]))
