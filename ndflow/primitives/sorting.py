"""Sorting and searching primitives: sort, argsort, partition, argpartition, lexsort,
searchsorted, bincount.

Value outputs (sort, partition) differentiate by routing each cotangent to the element that
landed at that position: a scatter through a permutation. Index outputs have no gradient.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ..core.dtypes import I64
from ._util import broadcast_shapes, numpy_or
from .sums import unbroadcast
from .cumulative import scatter_add_along_axis, gather_along_axis
from .indexing import getitem_p
from .shape import broadcast_to_p, expand_dims_p, move_to_front


def _same_abstract(x, axis, **kw):
    return Aval(x.shape, x.dtype)


def _index_abstract(x, axis, **kw):
    return Aval(x.shape, I64)


def _axis_batch(prim):
    def rule(args, dims, axis, **params):
        return bind(prim, move_to_front(args[0], dims[0]), axis=axis + 1, **params), 0
    return rule


def _no_grad(ct, *xs, **params):
    return (None,) * len(xs)


# ------------------------------------------------------------------ sort / argsort
def _sort_vjp(ct, x, axis, kind=None):
    """sorted = x[perm] along the axis; its transpose scatters ct back through perm (a stable
    argsort: among ties any assignment is a valid subgradient)."""
    perm = bind(argsort_p, x, axis=axis, kind="stable")
    return (scatter_add_along_axis(x, perm, ct, axis),)


sort_p = Primitive("sort", lambda x, axis, kind=None: np.sort(x, axis=axis, kind=kind),
                   _same_abstract)
sort_p.def_vjp(_sort_vjp)
sort_p.batch = _axis_batch(sort_p)

argsort_p = Primitive("argsort", lambda x, axis, kind=None: np.argsort(x, axis=axis, kind=kind),
                      _index_abstract)
argsort_p.def_vjp(_no_grad)
argsort_p.batch = _axis_batch(argsort_p)


# ------------------------------------------------------------------ partition / argpartition
def _partition_vjp(ct, x, out, axis, kth):
    """np.partition's own permutation is not available (np.argpartition may place the
    non-kth elements differently), but `out` is a permutation of x: matching the stable sort
    orders of the two gives one that maps equal values to equal values."""
    ix = bind(argsort_p, x, axis=axis, kind="stable")
    io = bind(argsort_p, out, axis=axis, kind="stable")
    return (scatter_add_along_axis(x, ix, gather_along_axis(ct, io, axis), axis),)


partition_p = Primitive("partition", lambda x, axis, kth: np.partition(x, kth, axis=axis),
                        _same_abstract)
partition_p.def_vjp(_partition_vjp, uses_out=True)
partition_p.batch = _axis_batch(partition_p)

argpartition_p = Primitive("argpartition",
                           lambda x, axis, kth: np.argpartition(x, kth, axis=axis),
                           _index_abstract)
argpartition_p.def_vjp(_no_grad)
argpartition_p.batch = _axis_batch(argpartition_p)


# ------------------------------------------------------------------ lexsort
def _lexsort_abstract(*keys, axis):
    return Aval(broadcast_shapes(*[k.shape for k in keys]), I64)


def _lexsort_batch(args, dims, axis):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    keys = []
    for a, d in zip(args, dims):
        if d is None:
            if size is None:
                raise ValueError("lexsort inside vectorized_map with an unknown batch size needs "
                                 "every key batched")
            a = bind(broadcast_to_p, bind(expand_dims_p, a, axes=(0,)),
                     shape=(size,) + tuple(a.shape))
        else:
            a = move_to_front(a, d)
        keys.append(a)
    nd = keys[0].ndim - 1
    return bind(lexsort_p, *keys, axis=(axis % nd) + 1), 0


def _lexsort_impl(*keys, axis):
    return numpy_or(lambda: np.lexsort(keys, axis=axis), lambda: _lexsort_stacked(keys), *keys)


def _lexsort_stacked(keys):
    """A device library without NumPy's signature (CuPy) sorts 1-d keys of one dtype, stacked
    into one array: the keys are not cast to a common dtype (a cast could merge distinct
    values), so others refuse."""
    if any(k.ndim != 1 or k.dtype != keys[0].dtype for k in keys):
        raise TypeError("lexsort takes 1-d keys of one dtype here (got "
                        + ", ".join(f"{k.dtype}{list(k.shape)}" for k in keys) + ")")
    return np.lexsort(np.stack(keys)).astype(np.int64, copy=False)


lexsort_p = Primitive("lexsort", _lexsort_impl, _lexsort_abstract)
lexsort_p.def_vjp(_no_grad)
lexsort_p.batch = _lexsort_batch


# ------------------------------------------------------------------ searchsorted
def _searchsorted_impl(a, v, side, batch_dims=0):
    if not batch_dims:
        # astype, not np.asarray: a device buffer stays on its device
        return np.searchsorted(a, v, side=side).astype(np.int64, copy=False)
    # NumPy searches one sorted row at a time: loop over the leading (batch) dims
    lead = np.broadcast_shapes(a.shape[:batch_dims], v.shape[:batch_dims])
    a = np.broadcast_to(a, lead + a.shape[batch_dims:])
    v = np.broadcast_to(v, lead + v.shape[batch_dims:])
    out = np.empty_like(v, dtype=np.int64)       # (a CuPy array for CuPy inputs)
    for i in np.ndindex(*lead):
        out[i] = np.searchsorted(a[i], v[i], side=side)
    return out


def _searchsorted_abstract(a, v, side, batch_dims=0):
    lead = broadcast_shapes(tuple(a.shape[:batch_dims]), tuple(v.shape[:batch_dims]))
    return Aval(tuple(lead) + tuple(v.shape[batch_dims:]), I64)


def _searchsorted_batch(args, dims, side, batch_dims=0):
    (a, v), (da, dv) = args, dims
    if da is None and not batch_dims:
        # only the needles are batched: searchsorted maps over them already
        return bind(searchsorted_p, a, v, side=side), dv
    a = move_to_front(a, da) if da is not None else bind(expand_dims_p, a, axes=(0,))
    v = move_to_front(v, dv) if dv is not None else bind(expand_dims_p, v, axes=(0,))
    return bind(searchsorted_p, a, v, side=side, batch_dims=batch_dims + 1), 0


# a: 1-D sorted rows (after `batch_dims` leading dims that v shares or broadcasts against)
searchsorted_p = Primitive("searchsorted", _searchsorted_impl, _searchsorted_abstract)
searchsorted_p.def_vjp(lambda ct, a, v, side, batch_dims=0: (None, None))
searchsorted_p.batch = _searchsorted_batch


# ------------------------------------------------------------------ bincount
def _bincount_impl(x, *w, minlength=0, length=None):
    if x.ndim == 2:       # batched rows: offset each row into its own block of `length` bins
        rows = x.shape[0]
        off = x + (np.arange(rows, dtype=x.dtype, like=x) * length)[:, None]
        ww = None if not w else np.broadcast_to(w[0], x.shape).ravel()
        return np.bincount(off.ravel(), ww, minlength=rows * length).reshape(rows, length)
    return np.bincount(x, w[0] if w else None, minlength=minlength)


def _bincount_abstract(x, *w, minlength=0, length=None):
    dt = w[0].dtype if w else I64
    lead = tuple(x.shape[:-1])
    return Aval(lead + (length,), dt)


def _bincount_vjp(ct, x, *w, minlength=0, length=None):
    if not w:
        return (None,)
    if x.ndim == 1:
        g = bind(getitem_p, ct, x, spec=(("a",),))
    else:
        g = gather_along_axis(ct, x, 1)
    return (None, unbroadcast(g, w[0]))


def _bincount_batch(args, dims, minlength=0, length=None):
    if length is None:
        raise ValueError("bincount inside vectorized_map: the number of bins depends on the "
                         "largest value, which can differ between examples; pass `minlength` "
                         "larger than every value (ndflow then fixes the length) or use "
                         "histogram with explicit bins")
    x, dx = args[0], dims[0]
    if x.ndim - (dx is not None) != 1:
        raise NotImplementedError("nested batching of bincount")
    if dx is None:
        raise NotImplementedError("bincount batched over the weights only")
    x = move_to_front(x, dx)
    rest = []
    if len(args) > 1:
        w, dw = args[1], dims[1]
        rest.append(move_to_front(w, dw) if dw is not None else w)
    return bind(bincount_p, x, *rest, minlength=minlength, length=length), 0


# counts of each value of a 1-D non-negative integer array (rows of a 2-D one, when batched),
# optionally weighted; `length` is the static number of bins when it is known (None: depends on
# the data, an unknown size while tracing)
bincount_p = Primitive("bincount", _bincount_impl, _bincount_abstract)
bincount_p.def_vjp(_bincount_vjp)
bincount_p.batch = _bincount_batch


# ------------------------------------------------------------------ unique (data-dependent sizes)
def _unique_impl(x, equal_nan):
    """NumPy's sorted unique of a 1-D array, or of the rows of a 2-D one: (first index,
    inverse, counts); the caller gathers the values, so they carry gradients."""
    _, index, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True,
        axis=None if x.ndim == 1 else 0, equal_nan=equal_nan)
    return (index.astype(np.int64, copy=False), inverse.astype(np.int64, copy=False).reshape(-1),
            counts.astype(np.int64, copy=False))


def _data_dependent_batch(name):
    def rule(args, dims, **params):
        raise ValueError(f"{name} inside vectorized_map: the size of its result depends on the "
                         f"data, which can differ between examples, so the batch has no fixed "
                         f"shape")
    return rule


unique_p = Primitive("unique", _unique_impl, lambda x, equal_nan: (
    Aval((None,), I64), Aval((x.shape[0],), I64), Aval((None,), I64)), multiple_results=True)
unique_p.def_vjp(lambda cts, x, equal_nan: (None,))
unique_p.batch = _data_dependent_batch("unique")


def _unique_values_index_impl(x):
    """Positions of NumPy's `unique_values` (hash-table order, NaNs distinct) in x."""
    # (NumPy's hash order exists on the CPU only; elsewhere the sorted order)
    vals = np.unique_values(x) if isinstance(x, np.ndarray) else np.unique(x, equal_nan=False)
    u, first = np.unique(x, return_index=True, equal_nan=False)
    out = np.empty_like(vals, dtype=np.int64)
    nan_v = np.isnan(vals) if vals.dtype.kind in "fc" else np.zeros_like(vals, dtype=bool)
    ok = ~nan_v
    out[ok] = first[np.searchsorted(u, vals[ok])]
    if nan_v.any():      # NaNs sort last in u, in their order in x (a stable sort)
        nan_u = np.isnan(u) if u.dtype.kind in "fc" else np.zeros_like(u, dtype=bool)
        out[nan_v] = first[nan_u]
    return out


unique_values_index_p = Primitive("unique_values_index", _unique_values_index_impl,
                                  lambda x: Aval((None,), I64))
unique_values_index_p.def_vjp(lambda ct, x: (None,))
unique_values_index_p.batch = _data_dependent_batch("unique_values")
