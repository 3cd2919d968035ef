"""Statistics: ptp, average, median, cov, corrcoef and the nan-ignoring reductions (nansum ...
nanargmin, nanmedian); quantiles and percentiles are in quantiles.py, cumulative sums and
differences in differences.py, histograms in histograms.py.

Composed of primitives (sort, gathers, scans, reductions), so everything differentiates, traces
and vectorizes. Each public function is a composite primitive (`core.primitive.composite`):
plain eager calls run NumPy's kernel (its values, at its speed), everything else runs the
composition written here; tests/test_composites.py checks that the two agree.
"""
import warnings

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind, composite
from ..core.state import STATE
from ..core import dtypes as _dt
from ..primitives import elementwise as E, reduction as R, sorting as S
from ..primitives._util import norm_axes
from ..primitives.indexing import iota_p
from ..primitives.misc import runtime_warning_p, expect_case_p
from ..primitives.shape import reshape_p
from ._core import asarray, checked
from ._axes import dim as _size_of
from ._outarg import write_out as _write_out
from . import math as M
from .manipulation import (moveaxis, reshape, ravel, concatenate, expand_dims, squeeze,
                           broadcast_to, transpose)
from .indexing import take, take_along_axis
from .creation import zeros, arange
from .linalg_ops import dot
from .reductions import (max as _max, min as _min, argmax as _argmax, argmin as _argmin,
                         mean as _mean, sum as _sum, prod as _prod, var as _var, all as _all,
                         _divide_into, _std_from_var)
from .differences import _cast, _out, _inexact, _replace_nan, _slice_along

_py_range = range


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


def _concrete_below(x):
    """The concrete array under `x`'s vectorized_map batches (x itself when eager), or None
    when a graph traces it."""
    while x._t is not None and not getattr(x._t, "is_graph", False) \
            and isinstance(x._v, ndarray):
        x = x._v
    return x if x._t is None else None


def _dtype_if(r, flag, dtype):
    """`r`, cast to `dtype` where the first element of `flag` holds (or it has none: an empty
    array's answer; under vectorized_map, where every example's holds): NumPy's
    value-dependent result dtype. Concrete flags decide now; inside `nf.function` the graph
    assumes one case and checks it at run time (primitives/misc.py expect_case), so
    nf.function runs the graph traced for the case each call's values are in."""
    if r.dtype == dtype:
        return r
    below = _concrete_below(flag)
    if below is flag:
        v = flag.numpy().reshape(-1)
        return _cast(r, dtype) if not v.size or bool(v[0]) else r
    if below is not None:
        # batched over concrete values: each example's first flag. A batch whose examples
        # differ gets the dtype the loop's results stack to (the promoted one, r's): one array
        # cannot hold each example's own
        if any(d == 0 for d in flag.shape):
            return _cast(r, dtype)
        firsts = _concrete_below(take(ravel(flag), 0)).numpy()
        return _cast(r, dtype) if bool(np.all(firsts)) else r
    root = next((t for t in STATE.traces if getattr(t, "assume", None) is not None), None)
    if root is None:
        raise TypeError("this quantile's result dtype depends on whether the data holds NaN "
                        "(NumPy's rule), which is not known here; compute it inside "
                        "nf.function or eagerly")
    site = root.sites
    root.sites += 1
    expect = root.assume.setdefault(site, False)
    return bind(expect_case_p, r, flag, expect=expect, site=site, dtype=dtype)


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
