"""Quantiles: quantile, percentile, nanquantile and nanpercentile, with every NumPy `method`
and weights (inverted_cdf), by NumPy's formulas.

Composed of primitives (a sort, gathers and the interpolation), so they differentiate (through
the sort and the interpolation weights), trace and vectorize. Each public function is a
composite primitive: plain eager calls run NumPy's kernel, everything else runs the composition
written here; tests/test_composites.py checks that the two agree.
"""

import numpy as np

from ..core.ndarray import ndarray, static_size as _static_size
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import elementwise as E, reduction as R, sorting as S
from ..primitives._util import norm_axes
from ._core import asarray, checked
from ._axes import dim as _size_of
from ._outarg import write_out as _write_out
from . import math as M
from .manipulation import moveaxis, reshape, ravel, concatenate, expand_dims, squeeze, broadcast_to
from .indexing import take, take_along_axis
from .differences import _cast, _out, _inexact, _slice_along, cumsum
from .statistics import (_reduce_layout, _keepdims, _warn_where, _weights_are_valid, _dtype_if,
                         nanmean)

_py_range = range


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
