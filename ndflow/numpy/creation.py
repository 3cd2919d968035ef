"""Array creation. Constants are made eagerly on the current device (inside `nf.function` they
become graph constants); `*_like` of a traced array is a primitive so unknown sizes work."""
import operator

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind
from ..core.state import STATE
from ..core import dtypes as _dt
from ..primitives import elementwise as E
from ._core import asarray, _place, array  # noqa: F401


def _dtype(dtype, default=None):
    if dtype is None:
        return default if default is not None else _dt.default_float()
    return _dt.canonical(dtype)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    if isinstance(shape, ndarray):
        shape = shape.numpy().tolist()
        return tuple(shape) if isinstance(shape, list) else (shape,)
    return tuple(operator.index(d) for d in shape)


def _xp():
    dev = STATE.device
    return np if dev is None else dev.backend.xp


def _make(fn, *args, **kw):
    xp = _xp()
    buf = getattr(xp, fn)(*args, **kw)
    return _place(buf) if xp is np else _place_dev(buf)


def _on(device, fn, *args, **kwargs):
    # `device=`: the Array API's placement, the same as calling inside `nf.device(device)`
    from .array_api import on_device
    return on_device(device, fn, *args, **kwargs)


def _place_dev(buf):
    from ..core.ndarray import wrap_on
    return wrap_on(buf, STATE.device)


def zeros(shape, dtype=None, order="C", *, device=None, like=None):
    """A new array of zeros, as `numpy.zeros` (float64 by default; float32 with prefer_float32)."""
    if device is not None:
        return _on(device, zeros, shape, dtype)
    return _make("zeros", _shape(shape), _dtype(dtype))


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    if device is not None:
        return _on(device, ones, shape, dtype)
    return _make("ones", _shape(shape), _dtype(dtype))


def empty(shape, dtype=None, order="C", *, device=None, like=None):
    if device is not None:
        return _on(device, empty, shape, dtype)
    return _make("zeros", _shape(shape), _dtype(dtype))


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    if device is not None:
        return _on(device, full, shape, fill_value, dtype)
    if dtype is None:
        fv = asarray(fill_value)
        if fv._t is not None:
            return bind(E.add_p, bind(E.zeros_like_p, fv), fv) if not shape else \
                full(shape, 0, fv.dtype) + fv
        dtype = fv.dtype
        fill_value = fv.numpy()
    return _make("full", _shape(shape), fill_value, _dtype(dtype))


def _like(a, dtype, shape, prim, fill=None):
    a = asarray(a)
    if shape is None and (a._t is not None) and (dtype is None or _dt.canonical(dtype) == a.dtype):
        return bind(prim, a) if fill is None else bind(E.full_like_p, a, fill_value=fill)
    d = a.dtype if dtype is None else _dt.canonical(dtype)
    s = a.shape if shape is None else _shape(shape)
    if None in s:
        b = bind(E.convert_p, a, dtype=d) if d != a.dtype else a
        return bind(prim, b) if fill is None else bind(E.full_like_p, b, fill_value=fill)
    if fill is None:
        fill = 0 if prim is E.zeros_like_p else 1
    return _make("full", s, fill, d)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if device is not None:
        return _on(device, zeros_like, a, dtype, shape=shape)
    return _like(a, dtype, shape, E.zeros_like_p)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if device is not None:
        return _on(device, ones_like, a, dtype, shape=shape)
    return _like(a, dtype, shape, E.ones_like_p)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if device is not None:
        return _on(device, empty_like, prototype, dtype, shape=shape)
    return _like(prototype, dtype, shape, E.zeros_like_p)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if device is not None:
        return _on(device, full_like, a, fill_value, dtype, shape=shape)
    if isinstance(fill_value, ndarray):
        fill_value = fill_value.item()
    return _like(a, dtype, shape, E.full_like_p, fill=fill_value)


def _scalar_arg(v):
    if isinstance(v, ndarray):
        return v.item()
    return v


def arange(start=None, /, stop=None, step=None, dtype=None, *, device=None, like=None, **kw):
    """Evenly spaced values in [start, stop), as `numpy.arange` (int64 for integer arguments):
    `arange(stop)`, `arange(start, stop[, step])`, `arange(stop, step=s)`, `arange(stop=n)`;
    `start=` by name needs `stop`, as in NumPy."""
    named_start = "start" in kw
    if named_start:
        if start is not None:
            raise TypeError("argument for arange() given by name ('start') and position "
                            "(position 0)")
        start = kw.pop("start")
    if kw:
        raise TypeError(f"arange() got an unexpected keyword argument {next(iter(kw))!r}")
    start, stop, step = _scalar_arg(start), _scalar_arg(stop), _scalar_arg(step)
    if stop is None:
        if start is None or named_start:
            raise TypeError("arange() requires stop to be specified.")
        start, stop = 0, start      # arange(stop) and arange(stop, step=s): from 0
    elif start is None:
        start = 0
    if device is not None:
        return _on(device, arange, start, stop, step, dtype)
    args = [start, stop, 1 if step is None else step]
    if dtype is None:
        d = np.arange(*args).dtype
        if d == _dt.F64 and STATE.prefer_float32:
            d = _dt.F32
    else:
        d = _dt.canonical(dtype)
    return _make("arange", *args, dtype=d)


def _host_endpoints(*xs):
    """NumPy values of the endpoints when NumPy itself can answer (plain eager execution: no
    tape, trace, batching or device scope), else None."""
    from ..core.state import GLOBAL
    if not GLOBAL.fast:
        return None
    out = []
    for x in xs:
        if isinstance(x, ndarray):
            if x._dev is not None or x._t is not None:
                return None
            x = x._v
        out.append(x)
    return out


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """`num` evenly spaced values from `start` to `stop` (arrays broadcast, the new axis at
    `axis`), as `numpy.linspace`; differentiable in the endpoints (NumPy's arithmetic, so the
    values are NumPy's)."""
    if device is not None:
        from .array_api import on_device
        return on_device(device, linspace, start, stop, num, endpoint, retstep, dtype, axis)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    dt_req = None if dtype is None else _dt.canonical(dtype)
    host = _host_endpoints(start, stop)
    if host is not None:
        r = np.linspace(*host, num, endpoint, retstep, dtype=dt_req, axis=axis)
        if retstep:
            return _fix32(asarray(r[0]), dtype), asarray(r[1])
        return _fix32(asarray(r), dtype)
    from . import math as M
    from .manipulation import reshape, moveaxis
    from .reductions import any as _any
    a, b = asarray(start), asarray(stop)
    dt = np.result_type(a.dtype, b.dtype)
    if dt.kind not in "fc":
        dt = _dt.default_float()
    a = a if a.dtype == dt else a.astype(dt)
    b = b if b.dtype == dt else b.astype(dt)
    div = (num - 1) if endpoint else num
    delta = M.subtract(b, a)
    y = reshape(asarray(np.arange(0, num, dtype=dt)), (-1,) + (1,) * delta.ndim)
    if div > 0:
        step = M.true_divide(delta, div)
        # NumPy: where any step is zero (a denormal delta), every element is y/div*delta
        zero = _any(M.equal(step, 0))
        y = M.where_(zero, M.multiply(M.true_divide(y, div), delta), M.multiply(y, step))
    else:
        step = asarray(np.nan, dtype=dt)
        y = M.multiply(y, delta)
    y = M.add(y, a)
    if endpoint and num > 1:
        y = M.where_(_at_index(num, num - 1, delta.ndim), b, y)     # exactly `stop`
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dt_req is not None:
        if dt_req.kind in "iu":
            y = M.floor(y)
        y = y if y.dtype == dt_req else y.astype(dt_req)
    y = _fix32(y, dtype)
    return (y, step) if retstep else y


def _at_index(num, i, nd):
    """A (num, 1, ..., 1) boolean constant, True at position i of the new axis."""
    return asarray((np.arange(num) == i).reshape((-1,) + (1,) * nd))


def _fix32(a, dtype):
    if dtype is None and STATE.prefer_float32 and a.dtype == _dt.F64:
        return a.astype(_dt.F32)
    return a


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """`base ** linspace(start, stop)` (arrays broadcast, `base` too), as `numpy.logspace`;
    differentiable in the endpoints and the base."""
    host = _host_endpoints(start, stop, base)
    if host is not None:
        return _fix32(asarray(np.logspace(host[0], host[1], num, endpoint, host[2], dtype,
                                          axis)), dtype)
    from . import math as M
    from .manipulation import expand_dims
    a, b = asarray(start), asarray(stop)
    g = base
    if np.ndim(base) > 0:
        # an array base: everything at the broadcast rank, the base gets the new axis too
        g = asarray(base)
        nd = max(a.ndim, b.ndim, g.ndim)
        a, b, g = (expand_dims(v, tuple(range(nd - v.ndim))) if v.ndim < nd else v
                   for v in (a, b, g))
        g = expand_dims(g, axis)
    y = M.power(g, linspace(a, b, num=num, endpoint=endpoint, axis=axis))
    if dtype is not None:
        y = y.astype(_dt.canonical(dtype))
    return _fix32(y, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """A geometric progression from `start` to `stop` (negative and complex endpoints too;
    arrays broadcast), as `numpy.geomspace`, with exact endpoints; differentiable."""
    host = _host_endpoints(start, stop)
    if host is not None:
        return _fix32(asarray(np.geomspace(host[0], host[1], num, endpoint, dtype, axis)),
                      dtype)
    from . import math as M
    from .manipulation import moveaxis
    from .reductions import any as _any
    a, b = asarray(start), asarray(stop)
    for v in (a, b):
        if v._t is None and bool(_any(M.equal(v, 0))):
            raise ValueError("Geometric sequence cannot include zero")
    # NumPy's rule: the result type of the endpoints and a 0-d array of `dtype` (float64 when
    # None, so float32 endpoints give float64)
    dt = np.result_type(a.dtype, b.dtype, np.float64 if dtype is None else _dt.canonical(dtype))
    if dt.kind not in "fc":
        dt = _dt.default_float()
    a, b = a.astype(dt), b.astype(dt)
    # rotate start onto the positive reals, compute, rotate back (NumPy's way: negative and
    # complex endpoints, no stray imaginary parts)
    sign = M.sign(a)
    a, b = M.true_divide(a, sign), M.true_divide(b, sign)
    y = logspace(M.log10(a), M.log10(b), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    nd = y.ndim - 1
    if num > 0:      # exact endpoints (10 ** log10(x) need not be x)
        y = M.where_(_at_index(num, 0, nd), a, y)
        if num > 1 and endpoint:
            y = M.where_(_at_index(num, num - 1, nd), b, y)
    y = M.multiply(y, sign)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        y = y.astype(_dt.canonical(dtype))
    return _fix32(y, dtype)


def eye(N, M=None, k=0, dtype=None, order="C", *, device=None, like=None):
    if device is not None:
        return _on(device, eye, N, M, k, dtype)
    return _make("eye", N, M, k, dtype=_dtype(dtype))


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=dtype)


def copy(a, order="K", subok=False):
    """A copy of `a`; inside a device scope the copy is placed on that device (TF's tnp.copy)."""
    a = asarray(a)
    target = STATE.scope
    if a._t is None and target is not None:
        from ..backends.device import to_device, device_of
        if device_of(a) is not target:
            return to_device(a, target)
    return bind(E.copy_p, a)


def asanyarray(a, dtype=None, order=None, *, like=None):
    return asarray(a, dtype)


def ascontiguousarray(a, dtype=None, *, like=None):
    """As `numpy.ascontiguousarray`: at least 1-d."""
    a = asarray(a, dtype)
    if a.ndim == 0:
        from .manipulation import reshape
        return reshape(a, (1,))
    return a


def _astype(x, dtype, copy=True):
    d = _dt.canonical(dtype)
    if x.dtype == d and not copy:
        return x
    if STATE.fast and x._dev is None:
        from ..core.ndarray import _wrap
        return _wrap(x._v.astype(d))
    return bind(E.convert_p, x, dtype=d)


def astype(x, dtype, /, *, copy=True, device=None):
    if device is not None:
        return _on(device, astype, x, dtype, copy=copy)
    return _astype(asarray(x), dtype, copy)
