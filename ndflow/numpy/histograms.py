"""Counting and histograms: bincount, digitize, histogram, histogram2d, histogramdd,
histogram_bin_edges (NumPy's `_histograms_impl`).

Counts are integers (no gradient); weighted counts differentiate in the weights, edges taken
from the data's extremes in those extremes. The number of bins must be known when tracing
(an integer or an edges array): the estimators ('auto', 'fd', ...) read the data, so they run
eagerly (and under tapes) only.
"""
import builtins
import operator
import warnings

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import elementwise as E, sorting as S
from ._core import asarray, checked
from .sorting import host, no_vmap, searchsorted
from . import math as M
from .manipulation import ravel, concatenate, reshape, stack, transpose
from .differences import _cast
from .statistics import _same_shape, _differ
from ._axes import dim as _size_of
from .creation import arange
from .indexing import take, _getitem
from .reductions import any as _any, argmax as _argmax, min as _min, max as _max, sum as _sum

_py_range = range


@composite(np.bincount)
def bincount(x, /, weights=None, minlength=0):
    """Occurrences of each non-negative integer (weighted: float64 sums of the weights, which
    get gradients), as `numpy.bincount`. The length depends on the data: an unknown size while
    tracing, an error inside vectorized_map."""
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError("object too deep for desired array" if x.ndim > 1 else
                         "object of too small depth for desired array")
    if x.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from {x.dtype!r} to dtype('int64') according "
                        f"to the rule 'safe'")
    minlength = operator.index(minlength) if minlength is not None else 0
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    x = _cast(x, _dt.I64)
    length = None
    if x._t is None:
        v = x.numpy()
        if v.size and v.min() < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = builtins.max(int(v.max()) + 1 if v.size else 0, minlength)
    else:
        no_vmap("bincount", x)
    ws = ()
    if weights is not None:
        w = asarray(weights)
        if w.dtype.kind == "c":
            raise TypeError("Cannot cast array data from dtype('complex128') to "
                            "dtype('float64') according to the rule 'safe'")
        if tuple(w.shape) != tuple(x.shape) and None not in w.shape + x.shape:
            raise ValueError("The weights and list don't have the same length.")
        ws = (_cast(w, _dt.F64),)
    return bind(S.bincount_p, x, *ws, minlength=minlength, length=length)


@composite(np.digitize)
def digitize(x, bins, right=False):
    """Indices of the bins each value falls in, as `numpy.digitize` (bins increasing or
    decreasing)."""
    x = asarray(x)
    bins = asarray(bins)
    if x.dtype.kind == "c":
        raise TypeError("x may not be complex")
    if bins.ndim != 1:
        raise ValueError("object too deep for desired array" if bins.ndim > 1 else
                         "object of too small depth for desired array")
    side = "left" if right else "right"
    if bins.shape[0] == 0:          # no edges: monotonic, every value in bin 0
        return searchsorted(bins, x, side=side)
    # NumPy's monotonicity test (check_array_monotonic): skip the leading run equal to bins[0];
    # the first different edge decides the direction (NaN: decreasing); then no pair may go the
    # other way (comparisons with NaN are false, so NaN passes, as in NumPy)
    neq = M.not_equal(bins[1:], bins[0])
    has = _any(neq)
    if bins.shape[0] is None:
        # one edge at run time is possible: argmax over the differences and a True after them
        # (no different edge: `has` is False and the direction unused)
        first = M.add(_argmax(concatenate([neq, M.logical_or(bins[:1], True)])), 1)
        up_dir = M.less(bins[0], take(bins, M.minimum(first, M.subtract(_size_of(bins, 0), 1))))
    else:
        first = M.add(_argmax(neq), 1) if bins.shape[0] != 1 else 0
        up_dir = M.less(bins[0], take(bins, first) if bins.shape[0] != 1 else bins[0])
    inc_ok = M.logical_not(_any(M.greater(bins[:-1], bins[1:])))
    dec_ok = M.logical_not(_any(M.less(bins[:-1], bins[1:])))
    decreasing = M.logical_and(has, M.logical_not(up_dir))
    mono = M.logical_or(M.logical_not(has), M.where_(up_dir, inc_ok, dec_ok))
    bins = checked(bins, M.logical_not(mono), ValueError,
                   "bins must be monotonically increasing or decreasing")
    if bins._t is None and decreasing._t is None:
        if not bool(decreasing):
            return searchsorted(bins, x, side=side)
        return M.subtract(bins.shape[0], searchsorted(bins[::-1], x, side=side))
    up = searchsorted(bins, x, side=side)
    down = M.subtract(_size_of(bins, 0), searchsorted(bins[::-1], x, side=side))
    return M.where_(decreasing, down, up)


_HIST_BIN_ESTIMATORS = ("stone", "auto", "doane", "fd", "rice", "scott", "sqrt", "sturges")


def _ravel_and_check_weights(a, weights):
    a = asarray(a)
    if a.dtype == _dt.BOOL:
        warnings.warn(f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=3)
        a = _cast(a, np.dtype(np.uint8))
    if weights is not None:
        weights = asarray(weights)
        if not _same_shape(tuple(weights.shape), tuple(a.shape)):
            raise ValueError("weights should have the same shape as a.")
        weights = ravel(weights)
    return ravel(a), weights


def _outer_edges(a, range):
    """(first, last) edges from `range` or the data's extremes (0-d arrays when they come from
    data, so they carry gradients), widened by 0.5 each side when equal."""
    if range is not None:
        first, last = range
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(host(first)) and np.isfinite(host(last))):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif a.shape[0] == 0:
        first, last = 0, 1
    else:
        first, last = _min(a), _max(a)
        if first._t is None:
            f, l_ = first.numpy(), last.numpy()
            if not (np.isfinite(f) and np.isfinite(l_)):
                raise ValueError(f"autodetected range of [{f}, {l_}] is not finite")
            if f == l_:
                return M.subtract(first, 0.5), M.add(last, 0.5)
            return first, last
        first = checked(first, M.logical_not(M.logical_and(M.isfinite(first), M.isfinite(last))),
                        ValueError, "autodetected range of the data is not finite")
        same = M.equal(first, last)
        return (M.where_(same, M.subtract(first, 0.5), first),
                M.where_(same, M.add(last, 0.5), last))
    if not isinstance(first, ndarray) and not isinstance(last, ndarray) and first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _linspace(first, last, num, dtype=None):
    """`numpy.linspace(first, last, num)` with end points that may be traced arrays (the
    same arithmetic, so the same values)."""
    dt = _dt.result_type(*[f if isinstance(f, ndarray) or type(f) in (int, float) else
                           asarray(f) for f in (first, last)], 1.0)
    if dt.kind not in "fc":
        dt = _dt.F64
    f, l_ = _cast(first, dt), _cast(last, dt)
    delta = M.subtract(l_, f)
    y = arange(num, dtype=dt)
    div = num - 1
    if div > 0:
        step = M.true_divide(delta, div)
        y = M.where_(M.equal(step, 0), M.multiply(M.true_divide(y, div), delta),
                     M.multiply(y, step))
    else:
        y = M.multiply(y, delta)
    y = M.add(y, f)
    if num > 1:
        y = concatenate([y[:-1], reshape(l_, (1,))])
    return _cast(y, dtype) if dtype is not None else y


def _bin_edges(a, bins, range, weights):
    """(edges, number of bins): NumPy's `_get_bin_edges`."""
    n_equal = None
    if isinstance(bins, str):
        if bins not in _HIST_BIN_ESTIMATORS:
            raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
        if weights is not None:
            raise TypeError("Automated estimation of the number of bins is not supported for "
                            "weighted data")
        if a._t is not None:
            raise ValueError(f"histogram bins={bins!r}: the number of bins is estimated from "
                             f"the data, so it is unknown while tracing (and differs between "
                             f"examples in vectorized_map); pass an integer or the edges")
        n_equal = len(np.histogram_bin_edges(a.numpy(), bins, host(range))) - 1
        first, last = _outer_edges(a, range)
    elif np.ndim(bins) == 0:
        try:
            n_equal = operator.index(bins)
        except TypeError as e:
            raise TypeError("`bins` must be an integer, a string, or an array") from e
        if n_equal < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = _outer_edges(a, range)
    elif np.ndim(bins) == 1:
        edges = asarray(bins)
        edges = checked(edges, M.greater(edges[:-1], edges[1:]), ValueError,
                        "`bins` must increase monotonically, when an array")
        return edges, edges.shape[0] - 1 if edges.shape[0] is not None else None
    else:
        raise ValueError("`bins` must be 1d, when an array")
    bin_type = _dt.result_type(*[f if isinstance(f, ndarray) or type(f) in (int, float) else
                                 asarray(f) for f in (first, last)], a)
    if bin_type.kind in "iub":
        bin_type = _dt.result_type(bin_type, 1.0)
    edges = _linspace(first, last, n_equal + 1, dtype=bin_type)
    edges = checked(edges, M.greater_equal(edges[:-1], edges[1:]), ValueError,
                    f"Too many bins for data range. Cannot create {n_equal} finite-sized bins.")
    return edges, n_equal


def _hist_counts(a, edges, nbins, weights):
    """Counts (weighted sums) of a in [e_i, e_i+1), the last bin closed: one bincount over bin
    indices, values outside the edges going to an extra last bin that is dropped."""
    static = nbins is not None
    nb = nbins if static else _size_of(edges, 0) - 1     # unknown while tracing: at run time
    idx = M.subtract(searchsorted(edges, a, side="right"), 1)
    first, last = edges[0], edges[-1]
    idx = M.where_(M.equal(a, last), _cast(nb - 1, idx.dtype), idx)
    inside = M.logical_and(M.greater_equal(a, first), M.less_equal(a, last))
    idx = M.where_(inside, idx, _cast(nb, idx.dtype))
    ws = []
    if weights is not None:
        w = weights
        parts = (M.real(w), M.imag(w)) if w.dtype.kind == "c" else (w,)
        ws = [_cast(p, _dt.F64) for p in parts]
    if not static:
        # one extra element in the dropped bin fixes the length to nbins + 1 without knowing it
        idx = concatenate([idx, reshape(_cast(nb, idx.dtype), (1,))])
        ws = [concatenate([p, bind(E.zeros_like_p, p[:1])]) for p in ws]
    length = nb + 1 if static else None
    if weights is None:
        return bind(S.bincount_p, idx, minlength=length or 0, length=length)[:-1]
    counts = [bind(S.bincount_p, idx, p, minlength=length or 0, length=length)[:-1] for p in ws]
    if w.dtype.kind == "c":
        return M.add(_cast(counts[0], w.dtype), M.multiply(_cast(counts[1], w.dtype), 1j))
    return _cast(counts[0], w.dtype)


@composite(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges `histogram` would use, as `numpy.histogram_bin_edges` (edges from the
    data's extremes carry their gradients)."""
    a, w = _ravel_and_check_weights(a, weights)
    return _bin_edges(a, bins, range, w)[0]


@composite(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """(counts, edges), as `numpy.histogram`; counts are integers (no gradient), weighted sums
    differentiate in the weights, edges from the data's extremes in those extremes."""
    a, w = _ravel_and_check_weights(a, weights)
    edges, nbins = _bin_edges(a, bins, range, w)
    n = _hist_counts(a, edges, nbins, w)
    if density:
        db = _cast(M.subtract(edges[1:], edges[:-1]), _dt.F64)
        return M.true_divide(M.true_divide(n, db), _sum(n)), edges
    return n, edges


@composite(np.histogramdd)
def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """Multidimensional histogram, as `numpy.histogramdd`: (float64 counts, list of edges)."""
    if isinstance(sample, (ndarray, np.ndarray)) and np.ndim(sample) == 2:
        s = asarray(sample)
    else:
        s = asarray(sample)
        s = transpose(reshape(s, (1, -1)) if s.ndim < 2 else s)
    N, D = s.shape
    try:
        M_ = len(bins)
        if M_ != D:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
    except TypeError:
        bins = D * [bins]
    if range is None:
        range = (None,) * D
    elif len(range) != D:
        raise ValueError("range argument must have one entry per dimension")
    edges, nbin = [], []
    for i in _py_range(D):
        col = s[:, i]
        if np.ndim(bins[i]) == 0:
            if bins[i] < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            smin, smax = _outer_edges(col, range[i])
            try:
                n = operator.index(bins[i])
            except TypeError as e:
                raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
            e = _linspace(smin, smax, n + 1)
        elif np.ndim(bins[i]) == 1:
            e = asarray(bins[i])
            e = checked(e, M.greater(e[:-1], e[1:]), ValueError,
                        f"`bins[{i}]` must be monotonically increasing, when an array")
        else:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
        edges.append(e)
        nbin.append(e.shape[0] + 1)
    xy = None
    stride = 1
    for i in reversed(_py_range(D)):
        cnt = searchsorted(edges[i], s[:, i], side="right")
        on_edge = M.equal(s[:, i], edges[i][-1])
        cnt = M.where_(on_edge, M.subtract(cnt, 1), cnt)
        term = M.multiply(cnt, stride)
        xy = term if xy is None else M.add(xy, term)
        stride *= nbin[i]
    total = stride
    if weights is None:
        hist = _cast(bind(S.bincount_p, xy, minlength=total, length=total), _dt.F64)
    else:
        hist = bind(S.bincount_p, xy, _cast(weights, _dt.F64), minlength=total, length=total)
    hist = reshape(hist, tuple(nbin))
    hist = _getitem(hist, (slice(1, -1),) * D)
    if density:
        tot = _sum(hist)
        for i in _py_range(D):
            shape = [1] * D
            shape[i] = nbin[i] - 2
            hist = M.true_divide(hist, reshape(M.subtract(edges[i][1:], edges[i][:-1]),
                                               tuple(shape)))
        hist = M.true_divide(hist, tot)
    return hist, edges


def _has_nf_list(bins):
    return isinstance(bins, (list, tuple)) and any(isinstance(b, ndarray) and b._t is not None
                                                   for b in bins)


@composite(np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """Two-dimensional histogram, as `numpy.histogram2d`: (counts, x edges, y edges)."""
    xa, ya = asarray(x), asarray(y)
    # NumPy's first check is len(x) != len(y): a 0-d operand has no len()
    if xa.ndim == 0 or ya.ndim == 0:
        raise TypeError("len() of unsized object")
    if _differ(xa.shape[0], ya.shape[0]):
        raise ValueError("x and y must have the same length.")
    try:
        N = len(bins)
    except TypeError:
        N = 1
    if N != 1 and N != 2:
        xedges = yedges = asarray(bins)
        bins = [xedges, yedges]
    d = _dt.result_type(xa, ya)
    sample = stack([_cast(xa, d), _cast(ya, d)], axis=1)
    hist, edges = histogramdd(sample, bins, range, density, weights)
    return hist, edges[0], edges[1]
