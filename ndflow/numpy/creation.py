"""Array creation. Constants are made eagerly on the current device (inside `nf.function` they
become graph constants); `*_like` of a traced array is a primitive so unknown sizes work."""
import operator

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind
from ..core.state import STATE
from ..core import dtypes as _dt
from ..primitives import elementwise as E, indexing as I, shape as S
from ..primitives.shape import broadcast_to_p
from ._core import asarray, _place, array, copy, checked, on_device, _make  # noqa: F401
from ._dynshape import shape_arg, RuntimeShape
from . import math as M
from .math import where_, floor, power, absolute, log10, sign
from .manipulation import reshape, moveaxis, expand_dims
from .reductions import any as any_


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


def _on(device, fn, *args, **kwargs):
    # `device=`: the Array API's placement, the same as calling inside `nf.device(device)`
    return on_device(device, fn, *args, **kwargs)


def zeros(shape, dtype=None, order="C", *, device=None, like=None):
    """A new array of zeros, as `numpy.zeros` (float64 by default; float32 with prefer_float32).
    Inside `nf.function` the sizes may be traced values (e.g. from `nf.shape(x)`).

    Parameters
    ----------
    shape : int or sequence of int
        The shape of the new array.
    dtype : dtype, optional
        float64 by default (float32 after
        ``nf.experimental_enable_numpy_behavior(prefer_float32=True)``).
    order, like : ignored
        Accepted for NumPy compatibility (ndflow arrays are C-ordered).
    device : str, optional
        A device name ("CPU:0", "GPU:0") to create the array on.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.zeros((2, 3))
    array([[0., 0., 0.],
           [0., 0., 0.]], dtype=float64)
    >>> tnp.zeros(2, dtype=tnp.int32)
    array([0, 0], dtype=int32)
    """
    if device is not None:
        return _on(device, zeros, shape, dtype)
    return _constant_filled(shape, 0, _dtype(dtype), "zeros")


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    """A new array of ones, as `numpy.ones` (float64 by default; float32 with prefer_float32).
    Sizes may be traced values inside `nf.function`; `order` and `like` are accepted and ignored.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.ones((2, 2), dtype=tnp.float32)
    array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    if device is not None:
        return _on(device, ones, shape, dtype)
    return _constant_filled(shape, 1, _dtype(dtype), "ones")


def empty(shape, dtype=None, order="C", *, device=None, like=None):
    """A new array of `shape`, as `numpy.empty`, except that it holds zeros: NumPy leaves the memory
    uninitialized, ndflow fills it, so a program never reads leftover values (and traced and
    eager runs agree).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.empty(3)
    array([0., 0., 0.], dtype=float64)
    """
    if device is not None:
        return _on(device, empty, shape, dtype)
    return _constant_filled(shape, 0, _dtype(dtype), "zeros")


def _constant_filled(shape, value, dtype, fn):
    """zeros/ones: NumPy's constructor, or a run-time fill where a size is a traced value."""
    s = _runtime_shape(shape)
    if s is None:
        return _make(fn, _shape(shape), dtype)
    return _broadcast_fill(asarray(np.asarray(value, dtype=dtype)), s)


def _runtime_shape(shape):
    """A `RuntimeShape` when some size is a traced value, else None (the static path)."""
    if isinstance(shape, (int, np.integer)):
        return None
    if isinstance(shape, ndarray):
        if shape._t is None:
            return None
    elif not any(isinstance(d, ndarray) and d._t is not None for d in shape):
        return None
    s = shape_arg(shape, "shape")
    return s if isinstance(s, RuntimeShape) else None


def _broadcast_fill(value, s):
    # a fresh writable array, not a broadcast view of the fill value
    return bind(E.copy_p, bind(S.broadcast_dynamic_p, value, s.vec, static=s.static))


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """A new array of `shape` filled with `fill_value`, as `numpy.full` (an array fill value
    broadcasts). Differentiable in an ndflow-array fill value: its gradient is the cotangent
    summed over the copies.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.full((2, 2), 7)
    array([[7, 7],
           [7, 7]], dtype=int64)
    >>> tnp.full(3, [1., 2., 3.])
    array([1., 2., 3.], dtype=float64)
    """
    if device is not None:
        return _on(device, full, shape, fill_value, dtype)
    s = _runtime_shape(shape)
    if s is not None:
        fv = asarray(fill_value) if dtype is None else asarray(fill_value, dtype=_dtype(dtype))
        return _broadcast_fill(fv, s)
    if isinstance(fill_value, ndarray):
        return _filled(fill_value, _shape(shape), dtype)
    if dtype is None:
        fv = asarray(fill_value)
        dtype = fv.dtype
        fill_value = fv.numpy()
    return _make("full", _shape(shape), fill_value, _dtype(dtype))


def _filled(fill, shape, dtype, like=None):
    """`fill` (an ndflow array) broadcast to `shape` as a new array of `dtype` (unsafe cast, as
    NumPy's copyto in full/full_like), through primitives so tapes and traces see the fill
    value. `like`: the array whose (possibly unknown while tracing) shape it is."""
    d = fill.dtype if dtype is None else _dt.canonical(dtype)
    if fill.dtype != d:
        fill = bind(E.convert_p, fill, dtype=d)
    if like is not None and None in tuple(like.shape):
        # sizes known only at run time: select from the fill everywhere (keeps -0.0, unlike
        # adding zeros); the select's shape rule checks the broadcast
        if fill.ndim > like.ndim:
            raise ValueError(f"could not broadcast input array from shape {tuple(fill.shape)} "
                             f"into shape {tuple(like.shape)}")
        ok = bind(E.ones_like_p, bind(E.convert_p, like, dtype=_dt.BOOL))
        return bind(E.select_p, ok, fill, fill)
    return bind(E.copy_p, bind(broadcast_to_p, fill, shape=tuple(shape)))


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
    """Zeros with the shape and dtype of `a` (unless `dtype` or `shape` is given), as
    `numpy.zeros_like`; `order` and `subok` are accepted and ignored.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.zeros_like(tnp.arange(3))
    array([0, 0, 0], dtype=int64)
    """
    if device is not None:
        return _on(device, zeros_like, a, dtype, shape=shape)
    return _like(a, dtype, shape, E.zeros_like_p)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Ones with the shape and dtype of `a` (unless `dtype` or `shape` is given), as
    `numpy.ones_like`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.ones_like(tnp.zeros((1, 2), dtype=tnp.float32))
    array([[1., 1.]], dtype=float32)
    """
    if device is not None:
        return _on(device, ones_like, a, dtype, shape=shape)
    return _like(a, dtype, shape, E.ones_like_p)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array with the shape and dtype of `prototype`, as `numpy.empty_like`, holding zeros
    (NumPy leaves it uninitialized; see `empty`).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.empty_like(tnp.ones(2))
    array([0., 0.], dtype=float64)
    """
    if device is not None:
        return _on(device, empty_like, prototype, dtype, shape=shape)
    return _like(prototype, dtype, shape, E.zeros_like_p)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array with the shape and dtype of `a` (unless `dtype` or `shape` is given), filled with
    `fill_value`, as `numpy.full_like`. The fill value is cast to the dtype (so 2.5 in an integer
    array becomes 2, as in NumPy); an ndflow-array fill value is differentiable.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.full_like(tnp.arange(3), 2.5)
    array([2, 2, 2], dtype=int64)
    """
    if device is not None:
        return _on(device, full_like, a, fill_value, dtype, shape=shape)
    if isinstance(fill_value, ndarray):
        a = asarray(a)
        return _filled(fill_value, a.shape if shape is None else _shape(shape),
                       a.dtype if dtype is None else dtype, like=a if shape is None else None)
    return _like(a, dtype, shape, E.full_like_p, fill=fill_value)


def _scalar_arg(v):
    if isinstance(v, ndarray):
        return v.item()
    return v


def arange(start=None, /, stop=None, step=None, dtype=None, *, device=None, like=None, **kw):
    """Evenly spaced values in [start, stop), as `numpy.arange` (int64 for integer arguments):
    `arange(stop)`, `arange(start, stop[, step])`, `arange(stop, step=s)`, `arange(stop=n)`;
    `start=` by name needs `stop`, as in NumPy. Inside `nf.function` the bounds may be traced
    values (the length is then known only when the graph runs).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.arange(4)
    array([0, 1, 2, 3], dtype=int64)
    >>> tnp.arange(1, 2, 0.25)
    array([1.  , 1.25, 1.5 , 1.75], dtype=float64)
    """
    named_start = "start" in kw
    if named_start:
        if start is not None:
            raise TypeError("argument for arange() given by name ('start') and position "
                            "(position 0)")
        start = kw.pop("start")
    if kw:
        raise TypeError(f"arange() got an unexpected keyword argument {next(iter(kw))!r}")
    if any(isinstance(v, ndarray) and v._t is not None for v in (start, stop, step)):
        if stop is None and start is None:
            raise TypeError("arange() requires stop to be specified.")
        return _arange_runtime(start, stop, step, dtype)
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


def _proto(v):
    """A stand-in with v's dtype (weak for Python scalars) to ask NumPy for a result dtype."""
    if isinstance(v, ndarray):
        return np.zeros((), v.dtype)
    if isinstance(v, (np.ndarray, np.generic)):
        return np.zeros((), v.dtype)
    return v


def _is_last(num, ndim):
    """A (num, 1, ..., 1) mask of the last position along axis 0."""
    return reshape(arange(num) == num - 1, (-1,) + (1,) * ndim)


def _arange_runtime(start, stop, step, dtype):
    """arange with bounds computed at run time: its length is unknown while tracing."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    vals = [asarray(v) for v in (start, stop, step)]
    for v in vals:
        if v.ndim:
            raise ValueError(f"arange: bounds must be scalars, got shape {tuple(v.shape)}")
    if dtype is None:
        # NumPy's dtype for these argument types (one-element stand-ins of each)
        d = np.arange(*[np.ones((), v.dtype)[()] if isinstance(w, ndarray) else w
                        for v, w in zip(vals, (start, stop, step))]).dtype
        if d == _dt.F64 and STATE.prefer_float32:
            d = _dt.F32
    else:
        d = _dt.canonical(dtype)
    lo, hi, st = vals
    n = M.ceil((hi - lo) / st) if d.kind in "fc" or any(v.dtype.kind == "f" for v in vals) \
        else -((lo - hi) // st)
    n = M.maximum(n, 0).astype(np.int64)
    base = _broadcast_fill(asarray(np.zeros((), np.int64)), RuntimeShape((None,), _stack1(n)))
    idx = bind(I.iota_p, base, axis=0)
    return (lo + idx.astype(d) * st).astype(d) if d.kind != "b" else idx.astype(d)


def _stack1(n):
    return bind(S.expand_dims_p, n, axes=(0,))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """Evenly spaced numbers over [start, stop], as `numpy.linspace` (NumPy's formula, so the
    values are NumPy's): differentiable in `start` and `stop`, also array endpoints.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.linspace(0, 1, 5)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float64)
    >>> tnp.linspace(0, 1, 4, endpoint=False, retstep=True)
    (array([0.  , 0.25, 0.5 , 0.75], dtype=float64), array(0.25, dtype=float64))
    """
    if device is not None and not retstep:
        return _on(device, linspace, start, stop, num, endpoint, False, dtype, axis)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    dt = np.linspace(_proto(start), _proto(stop), 0).dtype
    start, stop = asarray(start).astype(dt, copy=False), asarray(stop).astype(dt, copy=False)
    delta = stop - start
    y = reshape(arange(0, num, dtype=dt), (-1,) + (1,) * delta.ndim)
    if div > 0:
        step = delta / div
        # NumPy's special case for a step that underflows to 0 (gh-5437)
        y = where_(any_(step == 0), y / div * delta, y * step)
    else:
        step = asarray(np.nan)
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y = where_(_is_last(num, y.ndim - 1), stop, y)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        if np.issubdtype(_dt.canonical(dtype), np.integer):
            y = floor(y)
        y = y.astype(_dt.canonical(dtype), copy=False)
    y = _fix32(y, dtype)
    return (y, step) if retstep else y


def _fix32(a, dtype):
    if dtype is None and STATE.prefer_float32 and a.dtype == _dt.F64:
        return a.astype(_dt.F32)
    return a


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop), as `numpy.logspace`; differentiable in start, stop and an
    array base."""
    if isinstance(base, (ndarray, np.ndarray)) and np.ndim(base):
        # an array base broadcasts with the endpoints first, since it moves where `axis` is
        base = asarray(base)
        start, stop = asarray(start), asarray(stop)
        nd = max(start.ndim, stop.ndim, base.ndim)
        start, stop, base = (expand_dims(v, tuple(range(nd - v.ndim))) if v.ndim < nd else v
                             for v in (start, stop, base))
        base = expand_dims(base, axis)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    r = power(base, y)
    return _fix32(r if dtype is None else r.astype(_dt.canonical(dtype), copy=False), dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale from start to stop, as `numpy.geomspace` (NumPy's
    formula; the endpoints are exactly start and stop); differentiable in start and stop."""
    num = operator.index(num)
    dt = np.result_type(_proto(start), _proto(stop), float(num),
                        np.zeros((), np.dtype(dtype) if dtype is not None else None))
    start, stop = asarray(start), asarray(stop)
    start = checked(start, any_(start == 0) | any_(stop == 0), ValueError,
                    "Geometric sequence cannot include zero")
    start, stop = start.astype(dt), stop.astype(dt)
    # rotate start onto the positive real axis, space, rotate back (NumPy's way of allowing
    # negative and complex endpoints)
    out_sign = start / absolute(start) if dt.kind == "c" else sign(start)
    start = start / out_sign
    stop = stop / out_sign
    result = logspace(log10(start), log10(stop), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    if num > 0:
        # exact endpoints (10 ** log10(x) need not be x)
        first = reshape(arange(num) == 0, (-1,) + (1,) * (result.ndim - 1))
        result = where_(first, start, result)
        if num > 1 and endpoint:
            result = where_(_is_last(num, result.ndim - 1), stop, result)
    result = result * out_sign
    if axis != 0:
        result = moveaxis(result, 0, axis)
    return _fix32(result if dtype is None else result.astype(_dt.canonical(dtype), copy=False),
                  dtype)


def eye(N, M=None, k=0, dtype=None, order="C", *, device=None, like=None):
    """A 2-d array with ones on the `k`-th diagonal and zeros elsewhere, as `numpy.eye` (`N` rows,
    `M` columns, `M` = `N` by default).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.eye(2, 3, k=1)
    array([[0., 1., 0.],
           [0., 0., 1.]], dtype=float64)
    """
    if device is not None:
        return _on(device, eye, N, M, k, dtype)
    return _make("eye", N, M, k, dtype=_dtype(dtype))


def identity(n, dtype=None, *, like=None):
    """The `n` x `n` identity matrix, as `numpy.identity`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.identity(2, dtype=tnp.int32)
    array([[1, 0],
           [0, 1]], dtype=int32)
    """
    return eye(n, dtype=dtype)


def asanyarray(a, dtype=None, order=None, *, like=None):
    """`a` as an ndflow array, as `numpy.asanyarray` (= `asarray`: ndflow has no array subclasses).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.asanyarray([1, 2])
    array([1, 2], dtype=int64)
    """
    return asarray(a, dtype)


def ascontiguousarray(a, dtype=None, *, like=None):
    """As `numpy.ascontiguousarray`: at least 1-d; the array itself when it is already
    contiguous, else a copy (inside nf.function, where layouts are not known: a copy)."""
    a = asarray(a, dtype)
    if a.ndim == 0:
        return reshape(a, (1,))
    if a._t is None and getattr(a._v, "flags", None) is not None and a._v.flags.c_contiguous:
        return a
    return bind(E.copy_p, a)


def _astype(x, dtype, copy=True):
    d = _dt.canonical(dtype)
    if x.dtype == d and not copy:
        return x
    return bind(E.convert_p, x, dtype=d)


def _view(x, dtype):
    """`x.view(dtype)`: its bytes read as `dtype`, a view (writes reach `x`), no derivative."""
    return bind(S.bitcast_p, x, dtype=_dt.canonical(dtype))


def astype(x, dtype, /, *, copy=True, device=None):
    """`x` converted to `dtype`, as the Array API's (and NumPy 2's) `astype`: a new array unless
    `copy=False` and the dtype already matches. Floats to integers truncate toward zero; with
    `device`, the result is on that device.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.astype(tnp.asarray([1.7, -1.7]), tnp.int32)
    array([ 1, -1], dtype=int32)
    """
    if device is not None:
        return _on(device, astype, x, dtype, copy=copy)
    return _astype(asarray(x), dtype, copy)
