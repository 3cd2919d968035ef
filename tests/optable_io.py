"""Op-table records: file I/O (save, load, savez, savez_compressed, loadtxt, savetxt,
genfromtxt, fromfile), printing (array2string, array_repr, array_str, format_float_*,
base_repr, binary_repr, print options) and floating-point error state (seterr, geterr,
seterrcall, geterrcall, getbufsize, setbufsize).

Each call runs the same round trip through NumPy and through ndflow and compares what comes
back (arrays, text, settings). None of them computes on traced values (a file or a string
holds concrete values), so none is compiled, mapped or differentiated; the reasons are
declared below. tests/test_numpy_io.py checks the safety properties (no unpickling) and the
errors."""
import io
import os
import tempfile

import numpy as np

import optable
from optable import record, Sample, values, F32, F64, I32, I64, C128, BOOL

# introspection that prints ndflow's own configuration (NumPy's prints NumPy's): nothing to
# compare against NumPy; tests/test_numpy_io.py checks them
optable.NON_COMPUTING.update({"show_config", "show_runtime"})

_HOST = "reads or writes concrete values (a file, a string or a setting), not traced ones"
_NO_GRAD = "the result is text, a setting or a file's contents, not a function of the input"
_IO = dict(jit=False, vmap=False, vmap_reason=_HOST, diff_args=(), grad_reason=_NO_GRAD)


def _arrays(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((3, 4)),)), Sample((v(()),), desc="0-d"), Sample((v((0, 3)),),
                                                                       desc="empty"),
            Sample((v((2, 3, 2)),), desc="3-d")]


def _table(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((4, 3)),)), Sample((v((5,)),), desc="1-d")]


def _host(x):
    return x.numpy() if hasattr(x, "numpy") else x


# ------------------------------------------------------------------ .npy / .npz
def _save(m, x):
    """m.save, read back by NumPy."""
    buf = io.BytesIO()
    m.save(buf, x)
    buf.seek(0)
    return m.asarray(np.load(buf))


def _load(m, x):
    """NumPy's save and savez, read back by m.load (an array; an archive read by name)."""
    buf = io.BytesIO()
    np.save(buf, _host(x))
    buf.seek(0)
    single = m.load(buf)
    buf = io.BytesIO()
    np.savez(buf, _host(x), second=np.ones(2))
    buf.seek(0)
    with m.load(buf) as f:
        return single, f["arr_0"], f["second"], sorted(f.files)


def _savez(name):
    def call(m, x, y):
        buf = io.BytesIO()
        getattr(m, name)(buf, x, second=y)
        buf.seek(0)
        with np.load(buf) as f:
            return m.asarray(f["arr_0"]), m.asarray(f["second"])
    return call


def _two(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((3, 4)), v((2,)))), Sample((v(()), v((0,))), desc="0-d and empty")]


_IO_DT = (F64, F32, I32, I64, BOOL, C128)
record("save", _arrays, dtypes=_IO_DT, call=_save, **_IO)
record("load", _arrays, dtypes=_IO_DT, call=_load, **_IO)
record("savez", _two, dtypes=_IO_DT, call=_savez("savez"), **_IO)
record("savez_compressed", _two, dtypes=_IO_DT, call=_savez("savez_compressed"), **_IO)


# ------------------------------------------------------------------ text and raw files
def _savetxt(m, x):
    buf = io.StringIO()
    m.savetxt(buf, x, fmt="%.6g" if np.asarray(_host(x)).dtype.kind == "f" else "%d",
              delimiter=",", header="h")
    return buf.getvalue()


def _loadtxt(m, x):
    buf = io.StringIO()
    xv = np.asarray(_host(x))
    np.savetxt(buf, xv, delimiter=",", fmt="%.17g" if xv.dtype.kind == "f" else "%d")
    buf.seek(0)
    table = m.loadtxt(buf, delimiter=",", dtype=xv.dtype, ndmin=2)
    buf.seek(0)
    columns = m.loadtxt(buf, delimiter=",", dtype=xv.dtype, ndmin=2, unpack=True)
    buf.seek(0)
    some = m.loadtxt(buf, delimiter=",", dtype=xv.dtype, usecols=(0,), max_rows=2)
    return table, columns, some


def _genfromtxt(m, x):
    """Text with a missing field in each row (NaN, or the filling value)."""
    xv = np.asarray(_host(x), dtype=float).reshape(-1, np.shape(_host(x))[-1])
    lines = [",".join("" if j == i % xv.shape[1] else repr(float(v)) for j, v in enumerate(r))
             for i, r in enumerate(xv)]
    text = "# a header\n" + "\n".join(lines) + "\n"
    return (m.genfromtxt(io.StringIO(text), delimiter=","),
            m.genfromtxt(io.StringIO(text), delimiter=",", filling_values=-1.0, skip_header=1))


def _fromfile(m, x):
    """Raw bytes written by NumPy's tofile, read by m.fromfile (binary and text)."""
    xv = np.asarray(_host(x))
    fd, path = tempfile.mkstemp(suffix=".bin")
    os.close(fd)
    try:
        xv.tofile(path)
        raw = m.fromfile(path, dtype=xv.dtype)
        xv.tofile(path, sep=" ")
        text = m.fromfile(path, dtype=xv.dtype, sep=" ") if xv.dtype.kind != "b" else raw
        skip = m.fromfile(path, dtype=np.uint8, count=3, offset=1)
        return raw, text, skip
    finally:
        os.remove(path)


record("savetxt", _table, dtypes=(F64, F32, I64), call=_savetxt, **_IO)
record("loadtxt", _table, dtypes=(F64, F32, I64), call=_loadtxt, **_IO)
record("genfromtxt", _table, dtypes=(F64,), call=_genfromtxt, **_IO)
record("fromfile", _table, dtypes=(F64, F32, I32, BOOL), call=_fromfile, **_IO)


# ------------------------------------------------------------------ printing
def _print_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    out = [Sample((v((3, 4)),)), Sample((v(()),), desc="0-d"), Sample((v((0, 2)),),
                                                                       desc="empty"),
           Sample((v((2, 50)),), {"max_line_width": 40}, "wrapped")]
    if dt.kind == "f":
        out.append(Sample((np.array([np.nan, -np.inf, -0.0, 1e-9, 123456.789], dt),),
                          {"precision": 3, "suppress_small": True}, "special"))
    return out


_PRINT_DT = (F64, F32, I64, BOOL, C128)
record("array2string", _print_samples, dtypes=_PRINT_DT, **_IO)
record("array_repr", _print_samples, dtypes=_PRINT_DT, **_IO)
record("array_str", _print_samples, dtypes=_PRINT_DT, **_IO)


def _float_scalars(rng, dt):
    return [Sample((np.asarray(v, dt),), kw) for v, kw in [
        (0.1, {}), (1 / 3, {"precision": 4}), (-0.0, {}), (1e20, {"unique": False, "precision": 5}),
        (np.nan, {}), (2.5, {"trim": "-"})]]


def _as_scalar(name):
    def call(m, x, **kw):
        return getattr(m, name)(x[()] if isinstance(x, np.ndarray) else x, **kw)
    return call


record("format_float_positional", _float_scalars, dtypes=(F64, F32),
       call=_as_scalar("format_float_positional"), **_IO)
record("format_float_scientific", _float_scalars, dtypes=(F64, F32),
       call=_as_scalar("format_float_scientific"), **_IO)


def _int_scalars(rng, dt):
    return [Sample((np.asarray(v, dt),), kw) for v, kw in [
        (5, {}), (0, {}), (-3, {"width": 8}), (255, {"width": 12}), (37, {})]]


def _base_repr_samples(rng, dt):
    return [Sample((np.asarray(v, dt),), kw) for v, kw in [
        (5, {}), (0, {"base": 3}), (-255, {"base": 16}), (35, {"base": 36, "padding": 3})]]


record("binary_repr", _int_scalars, dtypes=(I64, I32), call=_as_scalar("binary_repr"), **_IO)
record("base_repr", _base_repr_samples, dtypes=(I64, I32), call=_as_scalar("base_repr"),
       **_IO)


def _plain_print_samples(rng, dt):
    return [s for s in _print_samples(rng, dt) if not s.kwargs]


def _with_printoptions(m, x):
    with m.printoptions(precision=2, threshold=5, edgeitems=1, sign="+"):
        inside = (m.array2string(x), m.get_printoptions()["precision"])
    return inside + (m.array_str(x),)


def _set_printoptions(m, x):
    saved = m.get_printoptions()
    try:
        m.set_printoptions(precision=3, floatmode="fixed", linewidth=30)
        return m.array_repr(x), m.get_printoptions()["linewidth"]
    finally:
        m.set_printoptions(**saved)


def _get_printoptions(m, x):
    return sorted(m.get_printoptions().items()) == sorted(np.get_printoptions().items()), \
        m.array2string(x)


record("printoptions", _plain_print_samples, dtypes=(F64,), call=_with_printoptions, **_IO)
record("set_printoptions", _plain_print_samples, dtypes=(F64,), call=_set_printoptions, **_IO)
record("get_printoptions", _plain_print_samples, dtypes=(F64,), call=_get_printoptions, **_IO)


# ------------------------------------------------------------------ floating-point errors
def _err_samples(rng, dt):
    return [Sample((np.array([1.0, 0.0, -1.0, np.inf], dt),))]


def _seterr(m, x):
    """Division by zero and 0/0 under 'ignore' (the values) and 'raise' (the error type)."""
    old = m.seterr(all="ignore")
    try:
        quiet = m.divide(x, 0.0)
        m.seterr(divide="raise", invalid="raise")
        try:
            m.divide(x, 0.0)
            raised = None
        except FloatingPointError as e:
            raised = str(e)
        return quiet, raised, sorted(m.geterr().items())
    finally:
        m.seterr(**old)


def _geterr(m, x):
    old = m.seterr(divide="warn", over="ignore", under="warn", invalid="print")
    try:
        return sorted(m.geterr().items()), m.multiply(x, 2.0)
    finally:
        m.seterr(**old)


def _seterrcall(m, x):
    """The 'call' mode: the callable gets NumPy's message and flag."""
    seen = []
    old_call = m.seterrcall(lambda kind, flag: seen.append((kind, flag)))
    old = m.seterr(all="call")
    try:
        r = m.log(x)
        return r, seen, m.geterrcall() is not None
    finally:
        m.seterr(**old)
        m.seterrcall(old_call)


def _geterrcall(m, x):
    old_call = m.seterrcall(None)
    try:
        return m.geterrcall() is None, m.sqrt(x)
    finally:
        m.seterrcall(old_call)


def _bufsize(m, x):
    old = m.setbufsize(16384)
    try:
        return m.getbufsize(), m.add(x, 1.0)
    finally:
        m.setbufsize(old)


# a device's kernels report no floating-point errors (CuPy's, as TensorFlow's on a GPU;
# docs/guides/devices.md): there the values and the error state are compared, not the reports
_NO_REPORTS = {"seterr": lambda r, s: (r[0], r[2]), "seterrcall": lambda r, s: (r[0], r[2])}
for _n, _c in (("seterr", _seterr), ("geterr", _geterr), ("seterrcall", _seterrcall),
               ("geterrcall", _geterrcall), ("getbufsize", _bufsize), ("setbufsize", _bufsize)):
    record(_n, _err_samples, dtypes=(F64,), call=_c, device_canon=_NO_REPORTS.get(_n), **_IO)
