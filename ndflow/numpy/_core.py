"""Conversion and dtype resolution for the NumPy layer (no kernels, no calculus here)."""
import functools

import numpy as np

from ..core import dtypes as _dt
from ..core.ndarray import ndarray, _wrap, wrap_on
from ..core.primitive import bind
from ..core.state import STATE
from ..primitives import elementwise as E

_PY = (bool, int, float, complex)


def _place(buf):
    dev = STATE.device
    if dev is None:
        return _wrap(buf)
    if dev.backend.xp is not np:
        buf = dev.backend.from_host(buf, dev.gpu_id)
    return wrap_on(buf, dev)


def _no_copy(a):
    return ValueError(f"Unable to avoid a copy while creating an array from "
                      f"{type(a).__name__} as requested (copy=False); use copy=None to allow "
                      f"a copy when needed")


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """Convert to an ndflow array, as `numpy.asarray`: `copy=None` copies only when needed (an
    array of the requested dtype is returned as is, a NumPy array's buffer is shared),
    `copy=True` always copies, `copy=False` never does (ValueError where it would be needed);
    with `device`, on that device.

    Examples
    --------
    >>> import numpy as np, ndflow.numpy as tnp
    >>> tnp.asarray([1, 2])
    array([1, 2], dtype=int64)
    >>> n = np.zeros(2)
    >>> a = tnp.asarray(n)            # shares the NumPy array's memory, as numpy.asarray
    >>> n[0] = 5
    >>> a
    array([5., 0.], dtype=float64)
    """
    if device is not None:
        from .array_api import on_device
        return on_device(device, asarray, a, dtype, copy=copy)
    if dtype is not None:
        dtype = _dt.canonical(dtype)
    if type(a) is ndarray:
        if dtype is not None and a.dtype != dtype:
            if copy is False:
                raise _no_copy(a)
            return bind(E.convert_p, a, dtype=dtype)
        return bind(E.copy_p, a) if copy else a
    conv = getattr(a, "_ndflow_array_", None)
    if conv is not None:                           # Variables
        return asarray(conv(), dtype, copy=copy)
    if isinstance(a, (list, tuple)) and any(isinstance(e, ndarray) for e in _flat(a)):
        if copy is False:
            raise _no_copy(a)
        from .manipulation import stack
        return asarray(stack([asarray(e) for e in a]), dtype)
    if type(a) not in _PY and not isinstance(a, (np.ndarray, np.generic, list, tuple)):
        from ..backends.device import adopt
        placed = adopt(a)                  # a device library's array (CuPy's...): zero-copy
        if placed is not None:
            dev, buf = placed
            return wrap_on(buf if dtype is None else buf.astype(dtype), dev)
    if dtype is None:
        t = type(a)
        if t in _PY:
            dtype = _dt.weak_dtype(a)
        elif STATE.prefer_float32 and not isinstance(a, (np.ndarray, np.generic)):
            probe = np.asarray(a)
            dtype = _dt.F32 if probe.dtype == _dt.F64 else (
                _dt.C64 if probe.dtype == _dt.C128 else None)
    if copy is False:
        try:
            buf = np.asarray(a, dtype, copy=False)
        except ValueError:
            raise _no_copy(a) from None
        dev = STATE.device
        if dev is not None and dev.backend.xp is not np:
            raise _no_copy(a)
    else:
        buf = np.array(a, dtype=dtype, copy=True if copy else None)
    if buf.dtype.kind in "OUSMmV" and buf.dtype != _dt.BFLOAT16:
        raise TypeError(f"ndflow arrays cannot hold dtype {buf.dtype} (from {type(a).__name__})")
    return _place(buf)


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """An ndflow array from `object`, as `numpy.array`: a copy by default (also of a NumPy or
    ndflow array); `copy=None` copies only when needed, `copy=False` never (ValueError).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.array([[1, 2], [3, 4]], dtype=tnp.float32)
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    >>> tnp.array(1.5, ndmin=2)
    array([[1.5]], dtype=float64)
    """
    out = asarray(object, dtype, copy=copy)
    if ndmin > out.ndim:
        from .manipulation import expand_dims
        out = expand_dims(out, tuple(range(ndmin - out.ndim)))
    return out


def _flat(seq):
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def as_operand(x):
    """ndarray or weak Python scalar (left as is) for dtype resolution."""
    if type(x) is ndarray or type(x) in _PY:
        return x
    return asarray(x)


@functools.lru_cache(maxsize=4096)
def _resolve(ufunc, types, mode, prefer32):
    try:
        loop = ufunc.resolve_dtypes(types + (None,) * ufunc.nout)
    except TypeError as e:
        raise TypeError(f"ufunc {ufunc.__name__!r} not supported for the input types "
                        f"{', '.join(getattr(t, 'name', getattr(t, '__name__', str(t))) for t in types)}"
                        f" ({e})") from None
    ins, outs = loop[:ufunc.nin], loop[ufunc.nin:]
    if prefer32:
        strong64 = any(isinstance(t, np.dtype) and t in (_dt.F64, _dt.C128) for t in types)
        if not strong64:
            swap = {_dt.F64: _dt.F32, _dt.C128: _dt.C64}
            ins = tuple(swap.get(d, d) for d in ins)
            outs = tuple(swap.get(d, d) for d in outs)
    return ins, outs


def _lattice_types(ufunc, ops):
    # 'all'/'safe': pick the common dtype from the JAX lattice, then let NumPy choose the loop
    common = _dt.result_type(*ops)
    return tuple(common for _ in ops)


def ufunc_operands(ufunc, *ops):
    """Resolve NumPy's loop for `ufunc` on these operands and cast them to its input dtypes."""
    if STATE.promotion == "legacy":
        # Python bool is not weak in NEP 50 (resolve_dtypes rejects the type): it is np.bool_
        types = tuple((_dt.BOOL if type(o) is bool else type(o)) if type(o) in _PY else o.dtype
                      for o in ops)
    else:
        types = _lattice_types(ufunc, ops)
    if any(t == _dt.BFLOAT16 for t in types if isinstance(t, np.dtype)):
        common = _dt.result_type(*ops)
        ins = (common,) * len(ops)
    else:
        ins, _ = _resolve(ufunc, types, STATE.promotion, STATE.prefer_float32)
    out = []
    for o, d in zip(ops, ins):
        if type(o) in _PY:
            out.append(_scalar(o, d))
        elif o.dtype != d:
            out.append(bind(E.convert_p, o, dtype=d))
        else:
            out.append(o)
    return out


_SAME_LOOP = {}   # (NumPy ufunc, id(dtype), partner type or None) -> (dtype, bool): same_loop


def same_loop(ufunc, d, partner=None):
    """Whether `ufunc_operands` leaves operands of dtype `d` as they are (NumPy's loop for them
    takes `d` itself; with a Python int or float `partner`, it becomes a `d` scalar), with
    NumPy's own promotion ('legacy', no float32 preference): the NumPy layer's operands under a
    tape then need no resolution per call. bfloat16 keeps the general path (NEP 50's rule)."""
    # keyed by the dtype's identity (hashing a NumPy dtype costs more than this whole check);
    # the entry holds the dtype, so the id names the same object while it lives
    key = (ufunc, id(d), partner)
    e = _SAME_LOOP.get(key)
    if e is not None and e[0] is d:
        return e[1]
    ok = False
    if d != _dt.BFLOAT16 and type(d) is not type(_dt.BFLOAT16):
        n = ufunc.nin
        types = (d,) * n if partner is None else (d, partner)
        try:
            ins, _ = _resolve(ufunc, types, "legacy", False)
        except TypeError:
            pass
        else:
            ok = all(i == d for i in ins)
    if len(_SAME_LOOP) > 4096:
        _SAME_LOOP.clear()
    _SAME_LOOP[key] = (d, ok)
    return ok


def _scalar(v, dtype):
    if type(v) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= v <= info.max:
            raise OverflowError(f"Python integer {v} out of bounds for {dtype}")
    dev = STATE.device
    if dev is None or dev.backend.xp is np:
        return _wrap(np.asarray(v, dtype)) if dev is None else wrap_on(np.asarray(v, dtype), dev)
    return wrap_on(dev.backend.xp.asarray(v, dtype), dev)


def fast_operands(*xs):
    """Buffers for the eager fast path, or None when any operand needs the slow path."""
    out = []
    py_float = False
    for x in xs:
        t = type(x)
        if t is ndarray:
            if x._dev is not None:
                return None
            out.append(x._v)
        elif t in _PY:
            out.append(x)
            py_float = py_float or t is float
        else:
            return None
    if py_float and any(getattr(b, "dtype", None) == _dt.BFLOAT16 for b in out):
        return None   # ml_dtypes' loops would give float32; NEP 50 keeps bfloat16
    return out


def checked(x, bad, error, message):
    """`x`, with NumPy's `error(message)` raised where any element of `bad` is true: at once for
    concrete values, at every run of a compiled function (and per batch under vectorized_map)
    for traced ones. A value-dependent error of NumPy's must not be an eager-only check; the
    returned array must be used in place of `x` so the check stays in the graph."""
    x, bad = asarray(x), asarray(bad)
    if x._t is None and bad._t is None:
        if bool(np.any(bad.numpy())):
            raise error(message)
        return x
    from ..primitives.misc import runtime_error_p, error_name
    return bind(runtime_error_p, x, bad, error=error_name(error), message=message)
