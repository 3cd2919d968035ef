"""Cumulative sums and products (cumsum, cumprod, the Array API's cumulative_sum and
cumulative_prod, the nan-ignoring nancumsum and nancumprod), differences (diff, ediff1d),
gradient and trapezoid: NumPy's "sums, products, differences" beyond the reductions.

Composed of primitives (scans, slices, reductions), so everything differentiates, traces and
vectorizes. Each public function is a composite primitive (`core.primitive.composite`): plain
eager calls run NumPy's kernel, everything else runs the composition written here;
tests/test_composites.py checks that the two agree.
"""

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import elementwise as E, reduction as R, cumulative as C
from ..primitives._util import norm_axis, norm_axes, legacy_0d, c_axis
from ._core import asarray
from ._outarg import write_out as _write_out
from . import math as M
from .manipulation import reshape, ravel, concatenate
from .indexing import _getitem
from .reductions import _sum_dtype

_py_range = range


def _cast(x, d):
    x = asarray(x)
    return x if x.dtype == d else bind(E.convert_p, x, dtype=d)


def _out(r, out):
    return _write_out(r, out)


def _inexact(d):
    return d.kind in "fc" or d == _dt.BFLOAT16


# ------------------------------------------------------------------ cumulative
def _scan(prim, npf, a, axis, dtype, out):
    x = asarray(a)
    if axis is None or legacy_0d(axis, x.ndim):     # NumPy's legacy 0-d rule: as axis=None
        x, axis = ravel(x), 0
    axis = norm_axis(c_axis(axis), x.ndim)
    d = _dt.canonical(dtype) if dtype is not None else _sum_dtype(x.dtype)
    return _out(bind(prim, _cast(x, d), axis=axis), out)


@composite(np.cumsum, compose_if=("out",), adapt=False)
def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum, as `numpy.cumsum` (flattened when `axis` is None; small integers
    accumulate in int64); its gradient is the reversed cumulative sum of the cotangent.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.cumsum(tnp.asarray([[1, 2], [3, 4]]))
    array([ 1,  3,  6, 10], dtype=int64)
    >>> tnp.cumsum(tnp.asarray([[1, 2], [3, 4]]), axis=0)
    array([[1, 2],
           [4, 6]], dtype=int64)
    """
    return _scan(C.cumsum_p, np.cumsum, a, axis, dtype, out)


@composite(np.cumprod, compose_if=("out",), adapt=False)
def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product, as `numpy.cumprod`; the gradient is exact with zeros in the input
    too (see primitives/cumulative.py)."""
    return _scan(C.cumprod_p, np.cumprod, a, axis, dtype, out)


def _cumulative(name, prim, npf, ident, x, axis, dtype, out, include_initial):
    a = asarray(x)
    if a.ndim == 0:
        a = reshape(a, (1,))        # NumPy takes a 0-d array as 1-d (its axis checks too)
    if axis is None:
        if a.ndim > 1:
            raise ValueError("axis must be specified for multi-dimensional arrays.")
        axis = 0
    axis = norm_axis(c_axis(axis), a.ndim)
    d = _dt.canonical(dtype) if dtype is not None else _sum_dtype(a.dtype)
    r = bind(prim, _cast(a, d), axis=axis)
    if include_initial:
        init = bind(E.full_like_p, bind(R.reduce_sum_p, r, axes=(axis,), keepdims=True),
                    fill_value=ident)
        r = concatenate([init, r], axis=axis)
    return _out(r, out)


@composite(np.cumulative_sum, compose_if=("out",), adapt=False)
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """`numpy.cumulative_sum` (the Array API's cumsum, optionally starting with 0)."""
    return _cumulative("cumulative_sum", C.cumsum_p, np.cumulative_sum, 0, x, axis, dtype, out,
                       include_initial)


@composite(np.cumulative_prod, compose_if=("out",), adapt=False)
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """`numpy.cumulative_prod` (optionally starting with 1)."""
    return _cumulative("cumulative_prod", C.cumprod_p, np.cumulative_prod, 1, x, axis, dtype,
                       out, include_initial)


def _replace_nan(a, val):
    """(a with NaNs replaced by val, the NaN mask) -- mask None for non-inexact arrays."""
    a = asarray(a)
    if not _inexact(a.dtype):
        return a, None
    mask = M.isnan(a)
    return M.where_(mask, _cast(val, a.dtype), a), mask


@composite(np.nancumsum, compose_if=("out",))
def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaN as 0, as `numpy.nancumsum`."""
    return cumsum(_replace_nan(a, 0)[0], axis=axis, dtype=dtype, out=out)


@composite(np.nancumprod, compose_if=("out",))
def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaN as 1, as `numpy.nancumprod`."""
    return cumprod(_replace_nan(a, 1)[0], axis=axis, dtype=dtype, out=out)


# ------------------------------------------------------------------ differences
def _slice_along(x, axis, sl):
    return _getitem(x, tuple(sl if i == axis else slice(None) for i in _py_range(x.ndim)))


def _slab(a, axis):
    """An all-True boolean array of a's shape with size 1 along `axis` (any sizes)."""
    t = bind(E.ones_like_p, bind(E.convert_p, a, dtype=_dt.BOOL))
    return bind(R.reduce_all_p, t, axes=(axis,), keepdims=True)


@composite(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """n-th discrete difference along `axis`, as `numpy.diff` (booleans: not_equal)."""
    if n == 0:
        return asarray(a)
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = norm_axis(axis, a.ndim)
    parts = []
    for extra, name in ((prepend, "prepend"), (append, "append")):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = asarray(extra)
        if e.ndim == 0:
            e = M.where_(_slab(a, axis), e, e)
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis=axis)
    op = M.not_equal if a.dtype == _dt.BOOL else M.subtract
    for _ in _py_range(n):
        a = op(_slice_along(a, axis, slice(1, None)), _slice_along(a, axis, slice(None, -1)))
    return a


@composite(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with optional values before and after, as
    `numpy.ediff1d` (the result has the input's dtype)."""
    a = ravel(asarray(ary))
    d = a.dtype
    parts = []
    for v, name in ((to_begin, "to_begin"), (to_end, "to_end")):
        if v is None:
            parts.append(None)
            continue
        v = asarray(v)
        if not np.can_cast(v.dtype, d, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                            f"`same_kind` rule.")
        parts.append(_cast(ravel(v), d))
    body = M.subtract(a[1:], a[:-1]) if a.dtype != _dt.BOOL else M.not_equal(a[1:], a[:-1])
    body = _cast(body, d)
    return concatenate([p for p in (parts[0], body, parts[1]) if p is not None])


@composite(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """Central differences inside, one-sided (first or second order) at the edges, with
    uniform or coordinate-array spacing, as `numpy.gradient`."""
    f = asarray(f)
    N = f.ndim
    axes = tuple(range(N)) if axis is None else norm_axes(axis, N)
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len(axes)
    elif n == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif n == len(axes):
        dx = []
        for i, dist in enumerate(varargs):
            if np.ndim(dist) == 0:
                dx.append(dist)
                continue
            dist = asarray(dist)
            if dist.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if dist.shape[0] is not None and f.shape[axes[i]] is not None and \
                    dist.shape[0] != f.shape[axes[i]]:
                raise ValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            if dist.dtype.kind in "iub":
                dist = _cast(dist, _dt.F64)
            d = M.subtract(dist[1:], dist[:-1])
            if d._t is None and d.shape[0] and bool(np.all(d.numpy() == d.numpy()[0])):
                d = d[0]
            dx.append(d)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if not _inexact(otype):
        f = _cast(f, _dt.F64)
        otype = _dt.F64
    outs = []
    for ax, h in zip(axes, dx):
        if f.shape[ax] is not None and f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        outs.append(_cast(_gradient_axis(f, ax, h, edge_order), otype))
    return outs[0] if len(axes) == 1 else tuple(outs)


def _gradient_axis(f, axis, h, edge_order):
    # operators, not tnp calls, so Python spacings stay weak scalars (as in NumPy's code)
    sl = lambda s: _slice_along(f, axis, s)  # noqa: E731
    uniform = not isinstance(h, ndarray) or h.ndim == 0
    N = f.ndim

    def col(v):       # a 1-d coefficient shaped to broadcast along `axis`
        shape = [1] * N
        shape[axis] = -1
        return reshape(v, tuple(shape))
    if uniform:
        inner = (sl(slice(2, None)) - sl(slice(None, -2))) / (2.0 * h)
    else:
        dx1, dx2 = h[:-1], h[1:]
        a = -dx2 / (dx1 * (dx1 + dx2))
        b = (dx2 - dx1) / (dx1 * dx2)
        c = dx1 / (dx2 * (dx1 + dx2))
        inner = col(a) * sl(slice(None, -2)) + col(b) * sl(slice(1, -1)) + \
            col(c) * sl(slice(2, None))
    if edge_order == 1:
        h0 = h if uniform else h[0]
        hn = h if uniform else h[-1]
        first = (sl(slice(1, 2)) - sl(slice(0, 1))) / h0
        last = (sl(slice(-1, None)) - sl(slice(-2, -1))) / hn
    else:
        if uniform:
            a, b, c = -1.5 / h, 2.0 / h, -0.5 / h
        else:
            dx1, dx2 = h[0], h[1]
            a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
            b = (dx1 + dx2) / (dx1 * dx2)
            c = -dx1 / (dx2 * (dx1 + dx2))
        first = a * sl(slice(0, 1)) + b * sl(slice(1, 2)) + c * sl(slice(2, 3))
        if uniform:
            a, b, c = 0.5 / h, -2.0 / h, 1.5 / h
        else:
            dx1, dx2 = h[-2], h[-1]
            a = dx2 / (dx1 * (dx1 + dx2))
            b = -(dx2 + dx1) / (dx1 * dx2)
            c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
        last = a * sl(slice(-3, -2)) + b * sl(slice(-2, -1)) + c * sl(slice(-1, None))
    d = _dt.result_type(first, inner, last)
    return concatenate([_cast(first, d), _cast(inner, d), _cast(last, d)], axis=axis)


@composite(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral by the composite trapezoidal rule, as `numpy.trapezoid`."""
    y = asarray(y)
    axis = norm_axis(c_axis(axis), y.ndim)
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if x.ndim == 1:
            d = M.subtract(x[1:], x[:-1])
            shape = [1] * y.ndim
            shape[axis] = -1
            d = reshape(d, tuple(shape))
        else:
            d = diff(x, axis=axis)
    s = M.add(_slice_along(y, axis, slice(1, None)), _slice_along(y, axis, slice(None, -1)))
    return M.add.reduce(M.true_divide(M.multiply(d, s), 2.0), axis)
