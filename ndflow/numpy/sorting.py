"""Sorting, searching and counting: sort, argsort, lexsort, partition, argpartition,
searchsorted, unique (and the Array API's unique_*), extract, select, piecewise, sort_complex.

Sorted values are a gather through the permutation, so gradients reach the values they came
from; indices have no gradient. Functions whose result size depends on the data (unique,
extract) run eagerly as NumPy, have an unknown size under `nf.function`, and raise a ValueError
naming them under `vectorized_map`.
"""
import operator
from typing import NamedTuple

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind, composite, to_host as host, host_to_nf as to_nf  # noqa: F401
from ..core import dtypes as _dt
from ..primitives import elementwise as E, sorting as S
from ..primitives._util import norm_axis, legacy_0d, c_axis
from ._core import asarray
from . import math as M
from ..primitives.misc import runtime_error_p
from ..primitives.shape import reshape_p, reshape_like_p
from ._axes import dim as _size_of
from .creation import zeros_like
from .indexing import take
from .manipulation import ravel, reshape, moveaxis, stack
from .math import subtract, where_, logical_not
from .reductions import any as _any
from .shaping import flip


# ------------------------------------------------------------------ shared helpers
def is_batched(*xs):
    """Whether any of these is a batched value of `vectorized_map`."""
    for x in xs:
        if isinstance(x, ndarray) and x._t is not None and not x._t.is_graph:
            return True
    return False


def no_vmap(name, *xs):
    """Refuse, naming `name`, to run a data-dependent-size function on batched values."""
    if is_batched(*xs):
        raise ValueError(f"{name} inside vectorized_map: the size of its result depends on the "
                         f"data, which can differ between examples, so the batch has no fixed "
                         f"shape; compute it eagerly or outside the mapped function")


def _axis_and_array(a, axis, legacy=False):
    """(a, its normalised axis); axis=None sorts the flattened array, as does (`legacy`: NumPy's
    C functions taking one axis, argsort and argpartition, not sort or partition) the integer
    axis 0 or -1 of a 0-d array."""
    if axis is None or (legacy and legacy_0d(axis, a.ndim)):
        return ravel(a), 0
    # (argsort and argpartition are C functions: a bool axis is their TypeError)
    return a, norm_axis(c_axis(axis) if legacy else operator.index(axis), a.ndim)


def _kind(kind, stable, default=None):
    if stable is not None:
        if kind is not None:
            raise ValueError("`kind` and `stable` parameters can't be provided at the same "
                             "time. Use only one of them.")
        return "stable" if stable else None
    return default if kind is None else kind


# argsort with no preference sorts stably: the Array API asks it (`stable=True` is its
# default) and NumPy permits it (its default promises no order of equal elements); it costs
# about 3x NumPy's default on large float arrays. Sorted *values* do not depend on it (equal
# elements are equal), so sort keeps NumPy's faster default.
_ARGSORT_DEFAULT = "stable"


def _no_order(order, name):
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")


# ------------------------------------------------------------------ sort / argsort / lexsort
def _sort_kernel(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    return np.sort(a, axis=axis, kind=_kind(kind, stable))


def _argsort_kernel(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    return np.argsort(a, axis=axis, kind=_kind(kind, stable, _ARGSORT_DEFAULT))


@composite(_sort_kernel, "sort", {"order": None, "descending": False}, adapt=False)
def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """Sorted copy, as `numpy.sort`; `descending=True` as the Array API's `sort`. Differentiable
    (the cotangent of each sorted position goes to the element that landed there). NaN sorts
    last, as in NumPy.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.sort(tnp.asarray([[3, 1], [0, 2]]))
    array([[1, 3],
           [0, 2]], dtype=int64)
    >>> tnp.sort(tnp.asarray([3., float("nan"), 1.]), descending=True)
    array([nan,  3.,  1.], dtype=float64)
    """
    if descending:
        if axis is None:
            return flip(sort(a, None, kind, order, stable=stable))
        return flip(sort(a, axis, kind, order, stable=stable), axis)
    _no_order(order, "sort")
    x, ax = _axis_and_array(asarray(a), axis)
    return bind(S.sort_p, x, axis=ax, kind=_kind(kind, stable))


@composite(_argsort_kernel, "argsort", {"order": None, "descending": False}, adapt=False)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """Indices that sort `a`, as `numpy.argsort` (int64; no gradient; stable unless asked
    otherwise); `descending=True` as the Array API's `argsort`, equal elements keeping their
    order.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.argsort(tnp.asarray([3, 1, 2]))
    array([1, 2, 0], dtype=int64)
    >>> tnp.argsort(tnp.asarray([1, 3, 3]), descending=True)
    array([1, 2, 0], dtype=int64)
    """
    if descending:
        # the stable ascending order of the reversed array, reversed, counted from the end:
        # largest first with ties in their original order
        x = asarray(a)
        if axis is None:
            x, axis = ravel(x), 0
        ax = norm_axis(operator.index(axis), x.ndim)
        n = x.shape[ax]
        if n is None:
            n = _size_of(x, ax)
        r = argsort(flip(x, ax), ax, kind, order, stable=stable)
        return subtract(subtract(n, 1), flip(r, ax))
    _no_order(order, "argsort")
    x, ax = _axis_and_array(asarray(a), axis, legacy=True)
    return bind(S.argsort_p, x, axis=ax, kind=_kind(kind, stable, _ARGSORT_DEFAULT))


@composite(np.lexsort, adapt=False)
def lexsort(keys, axis=-1):
    """Indirect stable sort on several keys, the last the primary one, as `numpy.lexsort`."""
    if isinstance(keys, (ndarray, np.ndarray)) and np.ndim(keys) >= 1:
        ks = list(asarray(keys)) if np.ndim(keys) > 1 else [asarray(keys)]
    elif isinstance(keys, (list, tuple)):
        ks = [asarray(k) for k in keys]
    else:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shapes = {tuple(k.shape) for k in ks}
    if len(shapes) > 1 and not any(None in s for s in shapes):
        raise ValueError("all keys need to be the same shape")
    if ks[0].ndim == 0:
        # NumPy sorts 0-d keys as 1-d (any axis but 0 / -1 refused) and answers 0-d
        norm_axis(operator.index(axis), 1)
        return reshape(bind(S.lexsort_p, *[reshape(k, (1,)) for k in ks], axis=0), ())
    ax = norm_axis(operator.index(axis), ks[0].ndim)
    return bind(S.lexsort_p, *ks, axis=ax)


def sort_complex(a):
    """Sort by real part, then imaginary part; the result is complex, as `numpy.sort_complex`."""
    b = sort(a)
    if b.dtype.kind == "c":
        return b
    to = np.complex64 if b.dtype.char in "bhBH" else np.complex128
    return bind(E.convert_p, b, dtype=np.dtype(to))


# ------------------------------------------------------------------ partition
def _kth(kth, n):
    ks = np.asarray(host(kth) if not isinstance(kth, ndarray) else kth.numpy())
    if ks.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    if ks.ndim > 1:
        raise ValueError("kth must be scalar or 1-D")
    out = []
    for k in ks.ravel().tolist():
        if n is not None and not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")
        out.append(k % n if n is not None and k < 0 else k)
    return tuple(out)


def _partition_args(a, kth, axis, legacy):
    """(x, axis, kth normalised); kth None for an array with no elements, whose partition is
    itself: NumPy checks kth's type there but not its range."""
    x, ax = _axis_and_array(asarray(a), axis, legacy)
    if None not in tuple(x.shape) and 0 in tuple(x.shape):
        _kth(kth, None)
        return x, ax, None
    return x, ax, _kth(kth, x.shape[ax])


@composite(np.partition, compose_if=("order",), adapt=False)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`numpy.partition`: the kth elements in sorted position, smaller ones before, larger ones
    after. The values are NumPy's (the same kernel); differentiable."""
    _no_order(order, "partition")
    x, ax, ks = _partition_args(a, kth, axis, False)
    if ks is None:
        return bind(E.copy_p, x)
    return bind(S.partition_p, x, axis=ax, kth=ks)


@composite(np.argpartition, compose_if=("order",), adapt=False)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition `a`, as `numpy.argpartition` (no gradient)."""
    _no_order(order, "argpartition")
    x, ax, ks = _partition_args(a, kth, axis, True)
    if ks is None:
        return bind(E.convert_p, x, dtype=_dt.I64)
    return bind(S.argpartition_p, x, axis=ax, kth=ks)


# ------------------------------------------------------------------ searchsorted
@composite(np.searchsorted, adapt=False)
def searchsorted(a, v, side="left", sorter=None):
    """Insertion indices of `v` into the sorted 1-D `a`, as `numpy.searchsorted`."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else
                         "object of too small depth for desired array")
    if sorter is not None:
        s = asarray(sorter)
        if s.ndim != 1:
            raise TypeError("could not parse sorter argument")
        if s.dtype.kind not in "iu":
            raise TypeError("sorter must only contain integers")
        n = a.shape[0]
        if s.shape[0] is not None and n is not None and s.shape[0] != n:
            raise ValueError("sorter.size must equal a.size")
        vv = asarray(v)
        if a._t is None and s._t is None and vv._t is None:
            # NumPy checks a sorter index only when its binary search reaches it (a bad index
            # elsewhere goes unnoticed): with the values known, its own search decides
            np.searchsorted(a.numpy(), vv.numpy(), side=side, sorter=s.numpy())
            # ... and its search on the gathered array meets the same positions only: what an
            # unreached bad index gathers does not matter
            a = take(a, s, mode="clip")
        else:
            # values known only at run time: every index is checked (stricter than NumPy,
            # whose answer with an index it did not reach is meaningless anyway)
            size = _size_of(a, 0)
            s = bind(runtime_error_p, s, M.not_equal(_size_of(s, 0), size), error=ValueError,
                     message="sorter.size must equal a.size")
            s = bind(runtime_error_p, s, _any(M.logical_or(M.less(s, 0),
                                                           M.greater_equal(s, size))),
                     error=ValueError, message="Sorter index out of range.")
            a = take(a, s)
    vv = asarray(v)
    if vv.dtype != a.dtype:
        # NumPy compares in the common dtype of a and v
        d = np.promote_types(a.dtype, vv.dtype)
        a = a if a.dtype == d else bind(E.convert_p, a, dtype=d)
        vv = vv if vv.dtype == d else bind(E.convert_p, vv, dtype=d)
    return bind(S.searchsorted_p, a, vv, side=side)


# ------------------------------------------------------------------ unique
class UniqueAllResult(NamedTuple):
    values: ndarray
    indices: ndarray
    inverse_indices: ndarray
    counts: ndarray


class UniqueCountsResult(NamedTuple):
    values: ndarray
    counts: ndarray


class UniqueInverseResult(NamedTuple):
    values: ndarray
    inverse_indices: ndarray


def _unique_parts(ar, axis, equal_nan, name="unique"):
    """(values, index, inverse, counts) of NumPy's sorted unique, the values gathered from the
    input so that they carry gradients."""
    a = asarray(ar)
    # the arguments' own errors (NumPy's) come before the refusal to vectorize
    ax = None if axis is None else norm_axis(operator.index(axis), a.ndim)
    no_vmap(name, a)
    if axis is None:
        x = ravel(a)
        index, inverse, counts = bind(S.unique_p, x, equal_nan=bool(equal_nan))
        return take(x, index), index, inverse, counts
    y = moveaxis(a, ax, 0)
    rows = bind(reshape_p, y, shape=(-1,), keep=1)      # (n, everything else)
    index, inverse, counts = bind(S.unique_p, rows, equal_nan=bool(equal_nan))
    return moveaxis(take(y, index, axis=0), 0, ax), index, inverse, counts


def _unique_kernel(ar, return_index=False, return_inverse=False, return_counts=False,
                   axis=None, *, equal_nan=True, sorted=True):
    # always sorted (NumPy's sorted=False may hash): see `unique`
    return np.unique(ar, return_index, return_inverse, return_counts, axis, equal_nan=equal_nan)


@composite(_unique_kernel, "unique", adapt=False)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """Sorted unique elements, as `numpy.unique` (always sorted: NumPy's `sorted=False` only
    permits an arbitrary order). The values are gathered from the input, so they carry
    gradients. The number of values depends on the data: inside `nf.function` it is known
    only when the graph runs.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.unique(tnp.asarray([3, 1, 3, 2]))
    array([1, 2, 3], dtype=int64)
    >>> values, counts = tnp.unique(tnp.asarray([3, 1, 3, 2]), return_counts=True)
    >>> counts
    array([1, 1, 2], dtype=int64)
    """
    values, index, inverse, counts = _unique_parts(ar, axis, equal_nan)
    if axis is None and return_inverse:
        inverse = _inverse_shape(inverse, ar)
    out = (values,)
    if return_index:
        out += (index,)
    if return_inverse:
        out += (inverse,)
    if return_counts:
        out += (counts,)
    return out[0] if len(out) == 1 else out


def _np_unique(a, index=False, inverse=False, counts=False):
    """NumPy's sorted unique with every NaN distinct (the standard's rule), the inverse
    indices shaped like x. NumPy's own unique_* may use a hash table and return the values
    unsorted; consumers such as scikit-learn rely on sorted classes."""
    a = np.asarray(a)
    r = np.unique(a, return_index=index, return_inverse=inverse, return_counts=counts,
                  equal_nan=False)
    if not (index or inverse or counts):
        return r
    r = list(r)
    if inverse:
        k = 1 + index
        r[k] = r[k].reshape(a.shape)
    return r


@composite(lambda x: UniqueAllResult(*_np_unique(x, True, True, True)), "unique_all",
           adapt=False)
def unique_all(x):
    """Sorted unique values, first indices, inverse indices (x's shape) and counts, as
    `numpy.unique_all`; NaNs are distinct."""
    v, i, inv, c = _unique_parts(x, None, False, "unique_all")
    return UniqueAllResult(v, i, _inverse_shape(inv, x), c)


@composite(lambda x: UniqueCountsResult(*_np_unique(x, counts=True)), "unique_counts",
           adapt=False)
def unique_counts(x):
    """Sorted unique values and their counts, as `numpy.unique_counts`; NaNs are distinct."""
    v, _, _, c = _unique_parts(x, None, False, "unique_counts")
    return UniqueCountsResult(v, c)


@composite(lambda x: UniqueInverseResult(*_np_unique(x, inverse=True)), "unique_inverse",
           adapt=False)
def unique_inverse(x):
    """Sorted unique values and inverse indices shaped like x, as `numpy.unique_inverse`."""
    v, _, inv, _ = _unique_parts(x, None, False, "unique_inverse")
    return UniqueInverseResult(v, _inverse_shape(inv, x))


@composite(_np_unique, "unique_values", adapt=False)
def unique_values(x):
    """The distinct values of x, sorted (NumPy's `unique_values` may leave them in hash-table
    order; sorted is what `numpy.unique` gives and what consumers assume); NaNs are
    distinct."""
    return _unique_parts(x, None, False, "unique_values")[0]


def _inverse_shape(inv, x):
    """The inverse indices shaped like x (NumPy 2), sizes known or not."""
    return bind(reshape_like_p, inv, asarray(x))


# ------------------------------------------------------------------ extract / select / piecewise
def _cast(v, d):
    a = asarray(v)
    return a if a.dtype == d else bind(E.convert_p, a, dtype=d)


def piecewise(x, condlist, funclist, *args, **kw):
    """`numpy.piecewise`: funclist[i] on the elements where condlist[i] holds (0 elsewhere, or
    the extra last function where no condition holds); the result has x's dtype.

    As NumPy, each function sees only its elements (boolean-mask gathers). Inside
    vectorized_map, where the selections differ between examples, each function sees all of
    x instead and `where` picks its results."""
    xa = asarray(x)
    n2 = len(funclist)
    c0 = None if np.isscalar(condlist) or isinstance(condlist, bool) else condlist[0]
    c0_seq = isinstance(c0, list) or (isinstance(c0, (ndarray, np.ndarray)) and c0.ndim > 0)
    if c0 is None or (not c0_seq and xa.ndim != 0):
        condlist = [condlist]
    conds = asarray(condlist, dtype=bool)
    conds = [conds[i] for i in range(conds.shape[0])]
    n = len(conds)
    if n == n2 - 1:
        conds.append(logical_not(_any(stack(conds), axis=0)))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = zeros_like(xa)
    whole = is_batched(xa, *conds) or xa.ndim == 0
    for cond, func in zip(conds, funclist):
        if not callable(func):
            y = where_(cond, _cast(func, y.dtype), y)
        elif whole:
            y = where_(cond, _cast(func(xa, *args, **kw), y.dtype), y)
        else:
            vals = xa[cond]
            if vals.shape[0] == 0:
                continue
            y[cond] = _cast(func(vals, *args, **kw), y.dtype)
    return y
