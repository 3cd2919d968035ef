"""Run-time effects on the host: sinks, and `print`, the sink behind `nf.print`.

How an operation happens at run time (not at trace time) inside `nf.function`:

* it is a primitive with the `effect` trait, so `bind` hands it to the innermost graph being
  traced even when its inputs are constants or eager arrays (`find_top_trace`), the node is
  never constant-folded, merged or removed although nothing uses its result, fusion and the
  other passes keep it in program order, and a control-flow body holding it makes the
  control-flow op effectful too (`SubGraph.effect`);
* the generated code calls its `impl` like any kernel, each time the graph (or the branch or
  loop body holding it) runs; eagerly `bind` calls the same `impl` at once.

A *sink* (`Primitive(..., sink=True)`) is the output-only kind of effect: it hands its inputs to
the host and returns nothing. Gradient rules leave sinks out when they replay a body (the
backward pass does not print again; `graph.ir.without_sinks`), and a body holding one can be
differentiated. `sink_primitive(name, write)` makes one from a function of host NumPy arrays:
`nf.print` below is one; run-time summary writers can be built the same way.
"""
import sys

import numpy as np

from ..core.primitive import Primitive, bind
from .shape import move_to_front


def to_host(buf):
    """A backend buffer as a NumPy array (a CuPy array is copied to the host)."""
    if isinstance(buf, (np.ndarray, np.generic)):
        return np.asarray(buf)
    get = getattr(buf, "get", None)
    return np.asarray(get() if get is not None else buf)


def sink_primitive(name, write, batch=None):
    """A sink primitive: `bind(p, *arrays, **params)` calls `write(*host_arrays, **params)` when
    the operation runs (eagerly: now; inside `nf.function`: at every call, also inside control-
    flow bodies) and returns `()`. Params should be plain data (strings, numbers, tuples) so a
    saved function can keep the node. Under `vectorized_map` the default rule hands `write` the
    batched values, batch axis first; pass `batch(args, axes, **params)` to do otherwise."""
    def impl(*bufs, **params):
        write(*[to_host(b) for b in bufs], **params)
        return ()

    p = Primitive(name, impl, lambda *avals, **params: (), multiple_results=True, sink=True)
    p.def_vjp(lambda ct, *args, **params: (None,) * len(args))
    p.def_jvp(lambda tangents, *args, **params: ())

    def default_batch(args, axes, **params):
        bind(p, *[move_to_front(a, ax) for a, ax in zip(args, axes)], **params)
        return (), ()

    p.batch = batch or default_batch
    return p


# ================================================================== print
def _float_text(v, dtype):
    """One float as TensorFlow prints it: the shortest of %g with the type's decimal digits and
    %g with enough digits to read back the same value."""
    if np.isnan(v):
        return "-nan" if np.signbit(v) else "nan"
    if dtype == np.float64:
        s = "%.15g" % v
        return s if float(s) == v else "%.17g" % v
    v = np.float32(v)
    s = "%.6g" % v
    return s if np.float32(float(s)) == v else "%.9g" % v


def _element_text(x, kind, dtype):
    if kind == "b":
        return "1" if x else "0"
    if kind == "f":
        return _float_text(x, dtype)
    if kind == "c":
        re, im = _float_text(x.real, dtype), _float_text(x.imag, dtype)
        return "(%s%s%sj)" % (re, "" if im[0] == "-" else "+", im)
    return str(x)


def format_tensor(a, summarize=3):
    """An array as `tf.print` shows it: nested brackets, elements separated by spaces, rows by a
    newline and indentation, and `...` in place of all but the first and last `summarize`
    entries of each axis (`summarize=-1` or None: all of them)."""
    a = np.asarray(a)
    n = a.size
    limit = n if summarize is None or summarize < 0 else min(int(summarize), n)
    if n == 0:
        # an empty array shows its structure ([[] []]): TensorFlow's printer would elide
        # the empty rows as `...`, as if entries were left out
        limit = max(a.shape, default=0)
    kind = a.dtype.kind
    # half precision prints through float32, as TensorFlow's printer does
    dtype = np.dtype(np.float64) if a.dtype == np.float64 or a.dtype == np.complex128 \
        else np.dtype(np.float32)
    if kind == "V" or (kind == "f" and a.dtype.itemsize < 4):     # bfloat16, float16
        a, kind = a.astype(np.float32), "f"
    if a.ndim == 0:
        if limit == 0:
            return "..." if n else ""
        return _element_text(a[()], kind, dtype)
    flat = a.reshape(-1)
    shape = a.shape
    out = []

    def spacing(dim):
        if dim == a.ndim - 1:
            out.append(" ")
        else:
            out.append("\n" * (a.ndim - dim - 1) + " " * (dim + 1))

    def rec(dim, start):
        if dim == a.ndim:
            out.append(_element_text(flat[start], kind, dtype))
            return
        out.append("[")
        count = shape[dim]
        step = int(np.prod(shape[dim + 1:], dtype=np.int64))
        for i in range(min(limit, count)):
            if i > 0:
                spacing(dim)
            rec(dim + 1, start + step * i)
        if count > 2 * limit:
            spacing(dim)
            out.append("...")
        for i in range(max(limit, count - limit), count):
            spacing(dim)
            rec(dim + 1, start + step * i)
        out.append("]")

    rec(0, 0)
    return "".join(out)


_LOG_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}


def write_text(text, stream):
    """Write `text` to the stream named by `stream`: 'stderr', 'stdout' (looked up when writing,
    so redirections made later are honoured), 'file://<path>' (appended), or 'log:<level>'
    (Python's `logging`)."""
    if stream == "stderr" or stream == "stdout":
        f = getattr(sys, stream)
        f.write(text)
        f.flush()
    elif stream.startswith("file://"):
        with open(stream[len("file://"):], "a") as f:
            f.write(text)
    elif stream.startswith("log:"):
        import logging
        logging.getLogger().log(_LOG_LEVELS[stream[4:]], text.rstrip("\n"))
    else:
        raise ValueError(f"nf.print: unknown output stream {stream!r}")


def _print_write(*arrays, parts, stream, summarize):
    pieces = [parts[0]]
    for a, p in zip(arrays, parts[1:]):
        pieces.append(format_tensor(a, summarize))
        pieces.append(p)
    write_text("".join(pieces), stream)


# parts: the text around the arrays (len(arrays) + 1 strings, `end` included in the last)
print_p = sink_primitive("print", _print_write)
