"""Statistics and cumulative operations: cumsum/cumprod (and the Array API's cumulative_*),
diff, ediff1d, gradient, trapezoid, ptp, average, median, quantile/percentile (every NumPy
`method`), cov, corrcoef and the nan-ignoring variants. (Histograms: histograms.py.)

Composed of primitives (sort, gathers, scans, reductions), so everything differentiates, traces
and vectorizes; quantiles differentiate through the sort and the interpolation weights. Each
public function is a composite primitive (`core.primitive.composite`): plain eager calls run
NumPy's kernel (its values, at its speed), everything else runs the composition written here;
tests/test_composites.py checks that the two agree.
"""
import operator
import warnings

import numpy as np

from ..core.ndarray import ndarray, static_size as _static_size
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import elementwise as E, reduction as R, cumulative as C, sorting as S
from ..primitives._util import norm_axis, norm_axes, legacy_0d, c_axis
from ..graph.static import shape_of as _shape_of
from ._core import asarray, checked
from ._axes import dim as _size_of
from ._outarg import write_out as _write_out
from .reductions import (max as _max, min as _min, argmax as _argmax, argmin as _argmin,
                         _divide_into)
from . import math as M
from .manipulation import (moveaxis, reshape, ravel, concatenate, expand_dims, squeeze,
                           broadcast_to, transpose)
from .indexing import take, take_along_axis, _getitem
from ..core.state import STATE
from ..primitives.indexing import iota_p
from ..primitives.misc import runtime_warning_p, expect_case_p
from ..primitives.shape import reshape_p
from .creation import zeros, arange
from .linalg_ops import dot
from .reductions import (mean as _mean, sum as _sum, prod as _prod, var as _var, _std_from_var,
                         all as _all)

_py_range = range


def _cast(x, d):
    x = asarray(x)
    return x if x.dtype == d else bind(E.convert_p, x, dtype=d)


def _out(r, out):
    return _write_out(r, out)


def _sum_dtype(d):
    if d.kind == "b" or (d.kind == "i" and d.itemsize < 8):
        return _dt.I64
    if d.kind == "u" and d.itemsize < 8:
        return np.dtype(np.uint64)
    return d


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


@composite(np.ptp, compose_if=("out",))
def ptp(a, axis=None, out=None, keepdims=False):
    """Range (maximum - minimum) along an axis, as `numpy.ptp`."""
    a = asarray(a)
    return _write_out(M.subtract(_max(a, axis=axis, keepdims=keepdims),
                                _min(a, axis=axis, keepdims=keepdims)), out,
                     casting="same_kind", ufunc=np.subtract)


# ------------------------------------------------------------------ averages
def _differ(x, y):
    """Two sizes that are both known and different."""
    return x is not None and y is not None and x != y


def _same_shape(s1, s2):
    """Equal shapes, where an unknown size (None) matches any."""
    return len(s1) == len(s2) and all(x is None or y is None or x == y for x, y in zip(s1, s2))


def _weights_are_valid(w, a, axis):
    if not _same_shape(tuple(a.shape), tuple(w.shape)) or (
            axis is not None and w.ndim != a.ndim):
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if not _same_shape(tuple(w.shape), tuple(a.shape[ax] for ax in axis)):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        w = transpose(w, tuple(np.argsort(axis).tolist()))
        w = expand_dims(w, tuple(ax for ax in _py_range(a.ndim) if ax not in axis))
    return w


@composite(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    """Weighted average, as `numpy.average` (`returned=True` also gives the sum of weights)."""
    a = asarray(a)
    if axis is not None:
        axis = norm_axes(axis, a.ndim)
    kd = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if weights is None:
        avg = _mean(a, axis, **kd)
        if None not in avg.shape and int(np.prod(avg.shape)) == 0:
            raise ZeroDivisionError("division by zero")     # NumPy: a.size / avg.size
        # the number of averaged elements, shaped like avg (sizes may be unknown)
        scl = _sum(bind(E.ones_like_p, _cast(a, avg.dtype)), axis, **kd)
    else:
        w = _weights_are_valid(asarray(weights), a, axis)
        if a.dtype.kind in "biu":
            rd = _dt.result_type(a.dtype, w.dtype, _dt.F64)
        else:
            rd = _dt.result_type(a.dtype, w.dtype)
        scl = _sum(w, axis, dtype=rd, **kd)
        scl = checked(scl, M.equal(scl, 0), ZeroDivisionError,
                      "Weights sum to zero, can't be normalized")
        avg = M.true_divide(_sum(M.multiply(a, w, dtype=rd), axis, **kd), scl)
    if returned:
        if tuple(scl.shape) != tuple(avg.shape):
            scl = bind(E.copy_p, broadcast_to(scl, avg.shape)) if None not in avg.shape else \
                M.add(scl, bind(E.zeros_like_p, avg))
        return avg, scl
    return avg


def _reduce_layout(a, axis):
    """(a with the reduced axes merged into one last axis, the reduced axes): NumPy's
    `_ureduce` for functions that reduce one axis."""
    nd = a.ndim
    if axis is None:
        return ravel(a), tuple(_py_range(nd))
    axes = norm_axes(axis, nd)
    x = moveaxis(a, tuple(axes), tuple(_py_range(nd - len(axes), nd)))
    if len(axes) > 1:
        x = bind(reshape_p, x, shape=(-1,), keep=nd - len(axes))   # merge the trailing axes
    return x, tuple(sorted(axes))


def _keepdims(r, axes, qdims):
    """Re-insert the reduced axes (size 1) after the leading q dims."""
    return expand_dims(r, tuple(qdims + i for i in axes)) if axes else r


@composite(np.median, compose_if=("out",))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median, as `numpy.median`: the mean of the middle one or two sorted elements (NaN where
    a slice has a NaN); differentiable through the sort."""
    a = asarray(a)
    x, raxes = _reduce_layout(a, axis)
    r = _median_last(x, nan=False)
    if keepdims:
        r = _keepdims(r, raxes, 0)
    return _out(r, out)


@composite(np.nanmedian, compose_if=("out",))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    """Median ignoring NaNs, as `numpy.nanmedian` (NaN, with a warning, for all-NaN slices)."""
    a = asarray(a)
    if not _inexact(a.dtype):
        return median(a, axis, out, keepdims=keepdims is True)
    x, raxes = _reduce_layout(a, axis)
    # NumPy's short-slice path (a masked median, several slices of fewer than 600 elements)
    # sums the middle element with itself where the count is odd; the others take it once
    n = x.shape[-1]
    r = _median_last(x, nan=True, doubled=axis is not None and x.ndim > 1
                     and (n is None or n < 600))
    if keepdims is True:
        r = _keepdims(r, raxes, 0)
    return _out(r, out)


def _warn_where(x, cond, message):
    """`x`, with NumPy's RuntimeWarning `message` wherever `cond` holds anywhere: at every
    run, also of a compiled function (not once while tracing)."""
    return bind(runtime_warning_p, x, asarray(cond), message=message)


def _mean_dtype(d):
    if d.kind in "biu":
        return _dt.F64
    if d == np.dtype(np.float16):
        return _dt.F32
    return d


def _mid_mean(v_lo, v_hi, cd):
    """NumPy's median: the mean of the middle element (v_hi None) or two. Its sum starts from
    +0 (a median of -0.0 is +0.0) and one element is divided by 1, not doubled and halved
    (which could overflow)."""
    lo = _cast(v_lo, cd)
    if v_hi is None:
        return M.add(lo, 0.0)
    return M.true_divide(M.add(M.add(lo, _cast(v_hi, cd)), 0.0), 2)


def _median_last(x, nan, doubled=False):
    """Median along the last axis of x (`doubled`: an odd count's middle element is added to
    itself and halved, as NumPy's masked median does)."""
    s = bind(S.sort_p, x, axis=x.ndim - 1, kind=None)
    ax = x.ndim - 1
    n = x.shape[ax]
    cd = _mean_dtype(x.dtype)
    if nan and n != 0:
        nans = bind(R.reduce_sum_p, _cast(M.isnan(x), _dt.I64), axes=(ax,), keepdims=False)
        cnt = M.subtract(_size_of(x, ax), nans)
        lo = M.floor_divide(M.subtract(cnt, 1), 2)
        hi = M.floor_divide(cnt, 2)
        lo = M.maximum(lo, 0)
        hi = M.minimum(M.maximum(hi, 0), M.maximum((_size_of(x, ax) - 1), 0))
        v_lo = squeeze(take_along_axis(s, expand_dims(lo, -1), axis=ax), -1)
        v_hi = squeeze(take_along_axis(s, expand_dims(hi, -1), axis=ax), -1)
        r = _mid_mean(v_lo, v_hi, cd) if doubled else \
            M.where_(M.equal(lo, hi), _mid_mean(v_lo, None, cd), _mid_mean(v_lo, v_hi, cd))
        empty = M.equal(cnt, 0)
        r = M.where_(empty, _cast(np.nan, cd), r)
        r = bind(runtime_warning_p, r, empty, message="All-NaN slice encountered")
        return _cast(r, x.dtype if x.dtype == np.dtype(np.float16) else cd)
    if n is None:
        nn = _size_of(x, ax)
        lo = M.floor_divide(M.subtract(nn, 1), 2)
        hi = M.floor_divide(nn, 2)
        v_lo = take(s, lo, axis=ax)
        v_hi = take(s, hi, axis=ax)
        r = M.where_(M.equal(lo, hi), _mid_mean(v_lo, None, cd), _mid_mean(v_lo, v_hi, cd))
    elif n == 0:
        z = _cast(bind(R.reduce_sum_p, _cast(s, cd), axes=(ax,), keepdims=False), cd)
        z = bind(runtime_warning_p, M.multiply(z, np.nan), message="Mean of empty slice.")
        return _cast(z, x.dtype if x.dtype == np.dtype(np.float16) else cd)
    else:
        v_lo = _slice_along(s, ax, slice((n - 1) // 2, (n - 1) // 2 + 1))
        v_hi = _slice_along(s, ax, slice(n // 2, n // 2 + 1))
        v_lo, v_hi = squeeze(v_lo, ax), squeeze(v_hi, ax)
        r = _mid_mean(v_lo, v_hi if n % 2 == 0 else None, cd)
    if _inexact(x.dtype):
        last = _slice_along(s, ax, slice(-1, None))
        r = M.where_(M.isnan(squeeze(last, ax)), _cast(np.nan, cd), r)
    return _cast(r, x.dtype if x.dtype == np.dtype(np.float16) else cd)


# ------------------------------------------------------------------ quantiles
_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
            "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
            "normal_unbiased", "lower", "higher", "midpoint", "nearest")
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}


def _virtual_index(method, n, q):
    """NumPy's virtual index (`_QuantileMethods[method]['get_virtual_index']`): a float array
    for the interpolating methods, an int64 array for the discrete ones. Operators, so that a
    Python n stays weak as in NumPy."""
    if method == "linear":
        return (n - 1) * q
    if method in _ALPHA_BETA:
        alpha, beta = _ALPHA_BETA[method]
        return n * q + (alpha + q * (1 - alpha - beta)) - 1
    if method == "averaged_inverted_cdf":
        return n * q - 1
    if method in ("lower", "higher", "nearest"):
        v = (n - 1) * q
        f = {"lower": M.floor, "higher": M.ceil, "nearest": M.rint}[method]
        return _cast(f(v), _dt.I64)
    if method == "midpoint":
        v = (n - 1) * q
        return 0.5 * (M.floor(v) + M.ceil(v))
    # inverted_cdf / closest_observation: to the boundaries of the step
    index = n * q - 1 if method == "inverted_cdf" else n * q - 1 - 0.5
    prev = M.floor(index)
    gamma = index - prev
    cond = M.equal(gamma, 0)
    if method == "closest_observation":
        cond = M.logical_and(cond, M.equal(M.remainder(prev, 2), 1))
    res = _cast(M.where_(cond, prev, prev + 1), _dt.I64)
    return M.maximum(res, 0)


def _fix_gamma(method, gamma, vi):
    if method == "averaged_inverted_cdf":
        return M.where_(M.equal(gamma, 0), _cast(0.5, gamma.dtype), _cast(1.0, gamma.dtype))
    if method == "midpoint":
        return M.where_(M.equal(M.remainder(vi, 1), 0), _cast(0.0, gamma.dtype),
                        _cast(0.5, gamma.dtype))
    return gamma


def _gather_rows(s, idx, n_is_array):
    """s has the sampled axis first, shape (n, *rest); idx holds positions of shape q.shape
    (or q.shape + rest when they differ per slice): s[idx] with shape q.shape + rest."""
    if not n_is_array:
        return take(s, idx, axis=0)
    qd = idx.ndim - (s.ndim - 1)
    r = take_along_axis(expand_dims(s, tuple(_py_range(qd))) if qd else s,
                        expand_dims(idx, qd), axis=qd)
    return squeeze(r, qd)


def _quantile_core(x, q, method, weak_q, nan):
    """Quantiles along the last axis of x (NumPy's `_quantile` / `_nanquantile_1d` per slice)
    -> shape q.shape + x.shape[:-1]."""
    arr = moveaxis(x, -1, 0)
    n_static = arr.shape[0]
    s = bind(S.sort_p, arr, axis=0, kind=None)
    if nan and _inexact(arr.dtype) and not n_static:
        # an empty axis (maybe only at run time) answers NaN: one NaN row keeps the gathers
        # below in bounds (their results are replaced by NaN for an empty slice)
        # (a sum along the axis has the row's shape even when sizes are unknown; + NaN: NaN)
        row = M.add(bind(R.reduce_sum_p, s, axes=(0,), keepdims=True), _cast(np.nan, s.dtype))
        s = concatenate([s, row], axis=0)
    supports_nans = _inexact(arr.dtype)
    rest = arr.ndim - 1
    if nan and supports_nans:
        n = _size_of(arr, 0) - bind(R.reduce_sum_p, _cast(M.isnan(arr), _dt.I64), axes=(0,),
                                    keepdims=False)
        # NumPy works slice by slice with a Python int count: keep q's float dtype
        n = _cast(n, q.dtype if q.dtype.kind == "f" else n.dtype)
        qq = expand_dims(q, tuple(_py_range(q.ndim, q.ndim + rest))) if q.ndim and rest else q
        n_arr = True
    else:
        n = n_static if n_static is not None else _size_of(arr, 0)
        if isinstance(n, ndarray) and q.dtype.kind == "f":
            n = _cast(n, q.dtype)      # a Python int in NumPy: q's dtype decides
        qq = q
        n_arr = isinstance(n, ndarray)
        if n_arr:
            n_arr = False   # one (run-time) size for every slice: the gathers stay along axis 0
    nmax = _size_of(arr, 0)
    top = M.maximum(nmax - 1, 0)
    vi = asarray(_virtual_index(method, n, qq))
    if vi.dtype.kind in "iu":
        idx = M.minimum(M.maximum(vi, 0), top)
        r = _gather_rows(s, idx, nan and supports_nans)
    else:
        prev = M.floor(vi)
        nxt = prev + 1
        above = M.greater_equal(vi, n - 1)
        below = M.less(vi, 0)
        minus1 = _cast(-1, prev.dtype)
        prev = M.where_(above, minus1, M.where_(below, _cast(0, prev.dtype), prev))
        nxt = M.where_(above, minus1, M.where_(below, _cast(0, nxt.dtype), nxt))
        if supports_nans:
            bad = M.isnan(vi)
            prev = M.where_(bad, minus1, prev)
            nxt = M.where_(bad, minus1, nxt)
        last = n - 1        # where "-1" points: the last (valid) element

        def pos(i):
            p = _cast(M.where_(M.equal(i, -1), last, i), _dt.I64)
            return M.minimum(M.maximum(p, 0), top)
        v_prev = _gather_rows(s, pos(prev), nan and supports_nans)
        v_next = _gather_rows(s, pos(nxt), nan and supports_nans)
        gamma = _fix_gamma(method, vi - prev, vi)
        gamma = _cast(gamma, vi.dtype)
        if weak_q:
            gd = arr.dtype if _inexact(arr.dtype) else _dt.F64
            gamma = _cast(gamma, gd)
        if not (nan and supports_nans) and gamma.ndim and rest:
            gamma = expand_dims(gamma, tuple(_py_range(gamma.ndim, gamma.ndim + rest)))
        r = _lerp(v_prev, v_next, gamma)
    if nan and supports_nans:
        empty = M.equal(n, 0)
        r = _warn_where(M.where_(empty, _cast(np.nan, r.dtype), r), empty,
                        "All-NaN slice encountered")
        # NumPy maps its 1-d function over the slices and takes the result's dtype from the
        # first slice; an all-NaN slice answers NaN in the array's own dtype
        r = _dtype_if(r, empty, arr.dtype)
    elif supports_nans:
        lastv = _slice_along(s, 0, slice(-1, None))
        lastv = squeeze(lastv, 0)
        r = M.where_(M.isnan(lastv), _cast(lastv, r.dtype), r)
        if r.ndim == 0:
            # a 0-d NumPy result holding NaN is the array's own (last, NaN) element: its dtype
            r = _dtype_if(r, M.isnan(lastv), arr.dtype)
    return r


def _dtype_if(r, flag, dtype):
    """`r`, cast to `dtype` where the first element of `flag` holds (or it has none: an empty
    array's answer): NumPy's value-dependent result dtype. Concrete flags decide now; inside `nf.function` the graph assumes one case
    and checks it at run time (primitives/misc.py expect_case), so nf.function runs the graph
    traced for the case each call's values are in."""
    if r.dtype == dtype:
        return r
    base = flag
    while base._t is not None and not getattr(base._t, "is_graph", False) \
            and isinstance(base._v, ndarray):
        base = base._v           # batched over concrete values: decide on the whole batch
    if base._t is None:
        v = base.numpy().reshape(-1)
        return _cast(r, dtype) if not v.size or bool(v[0]) else r
    root = next((t for t in STATE.traces if getattr(t, "assume", None) is not None), None)
    if root is None:
        raise TypeError("this quantile's result dtype depends on whether the data holds NaN "
                        "(NumPy's rule), which is not known here; compute it inside "
                        "nf.function or eagerly")
    site = root.sites
    root.sites += 1
    expect = root.assume.setdefault(site, False)
    return bind(expect_case_p, r, flag, expect=expect, site=site, dtype=dtype)


def _lerp(a, b, t):
    """NumPy's `_lerp`: a + (b - a) t, from the other end where t >= 0.5 (monotone, exact at
    the ends)."""
    d = M.subtract(b, a)
    lo = M.add(a, M.multiply(d, t))
    hi = M.subtract(b, M.multiply(d, M.subtract(1, t)))
    return M.where_(M.greater_equal(t, 0.5), _cast(hi, lo.dtype), lo)


def _weighted_inverted_cdf(x, q, w, weak_q):
    """method='inverted_cdf' with weights: the first sorted value whose cumulative weight
    share reaches q, per slice of the last axis."""
    arr = moveaxis(x, -1, 0)
    w = moveaxis(w, -1, 0)
    order = bind(S.argsort_p, arr, axis=0, kind=None)
    s = take_along_axis(arr, order, axis=0)
    ws = take_along_axis(broadcast_to(w, arr.shape) if None not in arr.shape else
                         M.add(w, bind(E.zeros_like_p, _cast(arr, w.dtype))), order, axis=0)
    cdf = cumsum(ws, axis=0, dtype=np.float64)
    cdf = M.true_divide(cdf, _slice_along(cdf, 0, slice(-1, None)))
    if q.dtype.kind == "f":
        cdf = _cast(cdf, q.dtype)
    cdf = M.where_(M.equal(cdf, 0), _cast(-1, cdf.dtype), cdf)
    rows = moveaxis(cdf, 0, -1)                       # (*rest, n): one search per row
    rest = rows.ndim - 1
    qv = ravel(q)
    qv = expand_dims(qv, tuple(_py_range(rest))) if rest else qv
    idx = bind(S.searchsorted_p, rows, qv, side="left", batch_dims=rest)   # (*rest, Q)
    idx = M.minimum(idx, _size_of(arr, 0) - 1)
    r = moveaxis(take_along_axis(moveaxis(s, 0, -1), idx, axis=-1), -1, 0)    # (Q, *rest)
    if q.ndim == 0:
        r = squeeze(r, 0)
    elif q.ndim > 1:
        r = reshape(r, tuple(q.shape) + tuple(-1 if d is None else d for d in r.shape[1:]))
    if _inexact(arr.dtype):
        lastv = squeeze(_slice_along(s, 0, slice(-1, None)), 0)
        r = M.where_(M.isnan(lastv), lastv, r)
    return r


def _quantile(name, a, q, axis, out, method, keepdims, weights, interpolation, nan, scale):
    if interpolation is not None:
        method = interpolation
    a = asarray(a)
    if a.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    weak_q = type(q) in (int, float)
    if scale != 1:
        q = M.true_divide(q, scale) if not weak_q else q / scale
    qa = asarray(q) if not isinstance(q, ndarray) else q
    if qa.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    # NumPy's check: every q in [0, 1] (NaN is not), at every call of a compiled function too
    qa = checked(qa, M.logical_not(M.logical_and(M.greater_equal(qa, 0), M.less_equal(qa, 1))),
                 ValueError, "Percentiles must be in the range [0, 100]" if scale != 1 else
                 "Quantiles must be in the range [0, 1]")
    if method not in _METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: "
                         f"dict_keys({list(_METHODS)!r})")
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
        axes = None if axis is None else norm_axes(axis, a.ndim)
        w = _weights_are_valid(asarray(weights), a, axes)
        w = checked(w, M.less(w, 0), ValueError, "Weights must be non-negative.")
        w = broadcast_to(w, a.shape) if None not in a.shape else w
    if nan and None not in a.shape and _static_size(a) == 0 and weights is None:
        # NumPy answers an empty array with nanmean's answer (NaN, q's shape left out)
        r = nanmean(a, axis=axis, keepdims=keepdims is True)
        return _out(r, out)
    x, raxes = _reduce_layout(a, axis)
    if weights is not None:
        wx, _ = _reduce_layout(w, axis)
        r = _weighted_inverted_cdf(x, qa, wx, weak_q)
    else:
        r = _quantile_core(x, qa, method, weak_q, nan)
    if keepdims is True:
        r = _keepdims(r, raxes, qa.ndim)
    # (NumPy's last step is a ufunc writing into out)
    return _write_out(r, out, broadcast=True, casting="same_kind", ufunc=np.add)


@composite(np.quantile, compose_if=("out", "interpolation"))
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """q-th quantiles, as `numpy.quantile`, for every `method` NumPy has (`weights` with
    'inverted_cdf'); differentiable in `a` through the sort and the interpolation."""
    return _quantile("quantile", a, q, axis, out, method, keepdims, weights, interpolation,
                     False, 1)


@composite(np.percentile, compose_if=("out", "interpolation"))
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """q-th percentiles (q in [0, 100]), as `numpy.percentile`."""
    return _quantile("percentile", a, q, axis, out, method, keepdims, weights, interpolation,
                     False, 100)


@composite(np.nanquantile, compose_if=("out", "interpolation"))
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=np._NoValue, *, weights=None, interpolation=None):
    """Quantiles ignoring NaNs, as `numpy.nanquantile`."""
    if weights is not None:
        raise NotImplementedError("nanquantile with weights runs eagerly only")
    return _quantile("nanquantile", a, q, axis, out, method, keepdims, weights,
                     interpolation, True, 1)


@composite(np.nanpercentile, compose_if=("out", "interpolation"))
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=np._NoValue, *, weights=None, interpolation=None):
    """Percentiles ignoring NaNs, as `numpy.nanpercentile`."""
    if weights is not None:
        raise NotImplementedError("nanpercentile with weights runs eagerly only")
    return _quantile("nanpercentile", a, q, axis, out, method, keepdims, weights,
                     interpolation, True, 100)


# ------------------------------------------------------------------ nan-ignoring reductions
@composite(np.nansum, compose_if=("out",))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaN as 0, as `numpy.nansum`."""
    return _sum(_replace_nan(a, 0)[0], axis, dtype, out, keepdims, initial, where)


@composite(np.nanprod, compose_if=("out",))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaN as 1, as `numpy.nanprod`."""
    return _prod(_replace_nan(a, 1)[0], axis, dtype, out, keepdims, initial, where)


def _inexact_dtype(dtype):
    """NumPy's nanmean/nanvar check for an array with NaNs to ignore: the sums must be inexact
    (on every path: it depends on dtypes only)."""
    if dtype is not None and not _inexact(_dt.canonical(dtype)):
        raise TypeError("If a is inexact, then dtype must be inexact")


@composite(np.nanmean, compose_if=("out",))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean ignoring NaNs, as `numpy.nanmean` (NaN, with a warning, for all-NaN slices)."""
    arr, mask = _replace_nan(a, 0)
    if mask is None:
        return _mean(arr, axis, dtype, out, keepdims, where=where)
    _inexact_dtype(dtype)
    valid = M.logical_not(mask)
    cnt = _sum(valid, axis, np.int64, None, keepdims, where=where)
    tot = _sum(arr, axis, dtype, None, keepdims, where=where)
    return _write_out(_warn_where(_divide_into(tot, cnt), M.equal(cnt, 0),
                                 "Mean of empty slice"), out, casting="same_kind")


@composite(np.nanvar, compose_if=("out",))
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """Variance ignoring NaNs, as `numpy.nanvar`."""
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    arr, mask = _replace_nan(a, 0)
    if mask is None:
        return _var(arr, axis, dtype, out, ddof, keepdims, where=where, mean=mean)
    _inexact_dtype(dtype)
    valid = M.logical_not(mask)
    cnt = _sum(valid, axis, np.int64, None, True, where=where)
    if mean is not None:
        avg = asarray(mean)
    else:
        avg = _divide_into(_sum(arr, axis, dtype, None, True, where=where), cnt)
    dev = M.where_(mask, _cast(0, arr.dtype), _cast(M.subtract(arr, avg), arr.dtype))
    sq = M.real(M.multiply(dev, M.conjugate(dev))) if dev.dtype.kind == "c" else \
        M.multiply(dev, dev)
    v = _sum(sq, axis, dtype, None, keepdims, where=where)
    if not keepdims:
        cnt = _sum(valid, axis, np.int64, None, False, where=where)
    dof = M.subtract(cnt, ddof)
    v = _warn_where(v, M.less_equal(dof, 0), "Degrees of freedom <= 0 for slice.")
    v = _divide_into(v, dof)
    return _out(M.where_(M.less_equal(dof, 0), _cast(np.nan, v.dtype), v), out)


@composite(np.nanstd, compose_if=("out",))
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """Standard deviation ignoring NaNs, as `numpy.nanstd`."""
    return _out(_std_from_var(nanvar(a, axis, dtype, None, ddof, keepdims, where=where,
                                     mean=mean, correction=correction)), out)


def _nan_extremum(name, npf, red, fill):
    def f(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        arr, mask = _replace_nan(a, fill)
        r = red(arr, axis=axis, keepdims=keepdims, initial=initial, where=where)
        if mask is None:
            return _out(r, out)
        allnan = _all(mask, axis=axis, keepdims=keepdims) if where is None else \
            _all(M.logical_or(mask, M.logical_not(asarray(where))), axis=axis, keepdims=keepdims)
        if initial is None:
            r = _warn_where(M.where_(allnan, _cast(np.nan, r.dtype), r), allnan,
                            "All-NaN slice encountered")
        return _out(r, out)
    f.__name__ = name
    f.__doc__ = f"`numpy.{name}`: the extremum ignoring NaNs (NaN, with a warning, for all-NaN " \
                f"slices); the gradient goes to the extremal elements."
    return composite(npf, compose_if=("out",))(f)


nanmax = _nan_extremum("nanmax", np.nanmax, _max, -np.inf)
nanmin = _nan_extremum("nanmin", np.nanmin, _min, np.inf)


def _nan_arg(name, npf, argf, fill):
    def f(a, axis=None, out=None, *, keepdims=False):
        arr, mask = _replace_nan(a, fill)
        if mask is not None:
            allnan = _all(mask, axis=axis)
            arr = checked(arr, allnan, ValueError, "All-NaN slice encountered")
        return _out(argf(arr, axis=axis, keepdims=keepdims), out)
    f.__name__ = name
    f.__doc__ = f"`numpy.{name}`: the index of the extremum ignoring NaNs."
    return composite(npf, compose_if=("out",))(f)


nanargmax = _nan_arg("nanargmax", np.nanargmax, _argmax, -np.inf)
nanargmin = _nan_arg("nanargmin", np.nanargmin, _argmin, np.inf)


# ------------------------------------------------------------------ covariance
@composite(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """Covariance matrix, as `numpy.cov` (frequency and analytic weights)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = asarray(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = _dt.result_type(m, _dt.F64) if y is None else _dt.result_type(m, y, _dt.F64)
    dtype = _dt.canonical(dtype)
    X = _cast(m, dtype)
    if X.ndim < 2:
        X = reshape(X, (1, -1))
    if not rowvar and m.ndim != 1:
        X = transpose(X)
    if X.shape[0] == 0:
        return zeros((0, 0), _dt.F64)      # NumPy: np.array([]).reshape(0, 0), whatever dtype
    if y is not None:
        Y = _cast(y, dtype)
        if Y.ndim < 2:
            Y = reshape(Y, (1, -1))
        if not rowvar and Y.shape[0] != 1:
            Y = transpose(Y)
        X = concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        fw = _cast(fweights, _dt.F64)
        fw = checked(fw, M.not_equal(fw, M.round(fw)), TypeError, "fweights must be integer")
        if fw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if _differ(fw.shape[0], X.shape[1]):
            raise RuntimeError("incompatible numbers of samples and fweights")
        fw = checked(fw, M.less(fw, 0), ValueError, "fweights cannot be negative")
        w = fw
    if aweights is not None:
        aw = _cast(aweights, _dt.F64)
        if aw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if _differ(aw.shape[0], X.shape[1]):
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = checked(aw, M.less(aw, 0), ValueError, "aweights cannot be negative")
        w = aw if w is None else M.multiply(w, aw)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = (X.shape[1] - ddof) if X.shape[1] is not None else \
            M.subtract(_size_of(X, 1), ddof)
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = M.subtract(w_sum, ddof)
    else:
        fact = M.subtract(w_sum, M.true_divide(M.multiply(ddof, _sum(M.multiply(w, aw))),
                                               w_sum))
    if isinstance(fact, ndarray):
        fact = _warn_where(fact, M.less_equal(fact, 0), "Degrees of freedom <= 0 for slice")
        fact = M.where_(M.less_equal(fact, 0), _cast(0.0, fact.dtype), fact)
    elif fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    X = M.subtract(X, expand_dims(avg, 1))
    X_T = transpose(X) if w is None else transpose(M.multiply(X, w))
    c = dot(X, M.conjugate(X_T))
    # in place in NumPy (c *= 1 / fact): c keeps its dtype
    if isinstance(fact, ndarray):
        inv = _cast(M.true_divide(1, fact), c.dtype)
    else:
        inv = np.inf if fact == 0 else 1.0 / fact      # NumPy's true_divide(1, 0.0)
    c = M.multiply(c, inv)
    if X.shape[0] is None and c.dtype != _dt.F64:
        # no variables at run time: NumPy answers a float64 (0, 0) whatever the dtype
        c = _dtype_if(c, M.equal(_size_of(X, 0), 0), _dt.F64)
    ones = tuple(i for i, d in enumerate(c.shape) if d == 1)   # unknown sizes stay (a 2-d m
    return squeeze(c, ones) if ones else c                      # has as many rows as it has)


@composite(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients, as `numpy.corrcoef` (clipped to [-1, 1])."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return M.true_divide(c, c)
    n = c.shape[0]
    if n is None:
        ii = reshape(bind(iota_p, c, axis=0), (-1,))
    else:
        ii = arange(n)
    d = c[ii, ii]
    sd = M.sqrt(M.real(d))
    c = M.true_divide(c, expand_dims(sd, 1))
    c = M.true_divide(c, expand_dims(sd, 0))
    if c.dtype.kind == "c":
        re = M.clip(M.real(c), -1, 1)
        im = M.clip(M.imag(c), -1, 1)
        return M.add(_cast(re, c.dtype), M.multiply(_cast(im, c.dtype), 1j))
    return M.clip(c, -1, 1)
