"""Set operations on 1-D arrays: isin, intersect1d, union1d, setdiff1d, setxor1d (NumPy 2.4
removed in1d).

isin is a sort and a binary search, so it traces and vectorizes; the others have sizes that
depend on the data (unique elements), so they run eagerly as NumPy, have unknown sizes under
`nf.function` and raise a ValueError naming them under `vectorized_map`. Their values are
gathered from the inputs, so they carry gradients.
"""
import numpy as np

from ..core.primitive import bind, composite
from ..primitives import elementwise as E, sorting as S, reduction as R
from ._core import asarray
from .sorting import no_vmap, unique, searchsorted
from . import math as M
from .manipulation import ravel, concatenate
from .indexing import take, nonzero
from ._axes import dim as _size_of


@composite(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element of `element` is in `test_elements` (element's shape), as
    `numpy.isin` (NaN is never found, as NaN != NaN)."""
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    e = asarray(element)
    t = ravel(asarray(test_elements))
    if t.shape[0] == 0:
        r = M.not_equal(bind(E.zeros_like_p, e), bind(E.zeros_like_p, e))
        return M.logical_not(r) if invert else r
    s = bind(S.sort_p, t, axis=0, kind=None)
    pos = searchsorted(s, e)
    if s.shape[0] is None:
        # the size is known at run time only (it may be 0): search a copy with one spare
        # element past the end, which `pos < n` then excludes
        n = _size_of(s, 0)
        spare = bind(E.zeros_like_p, bind(R.reduce_sum_p, s, axes=(0,), keepdims=True))
        padded = concatenate([s, bind(E.convert_p, spare, dtype=s.dtype)])
        found = M.logical_and(M.less(pos, n), M.equal(take(padded, pos), e))
    else:
        pos = M.minimum(pos, s.shape[0] - 1)
        found = M.equal(take(s, pos), e)
    return M.logical_not(found) if invert else found


def _flat_unique(a, assume_unique):
    a = ravel(asarray(a))
    return a if assume_unique else unique(a)


@composite(np.intersect1d)
def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """Sorted values in both arrays, as `numpy.intersect1d` (with `return_indices`, the first
    positions in each)."""
    a1, a2 = ravel(asarray(ar1)), ravel(asarray(ar2))
    no_vmap("intersect1d", a1, a2)
    if not assume_unique:
        if return_indices:
            a1, i1 = unique(a1, return_index=True)
            a2, i2 = unique(a2, return_index=True)
        else:
            a1, a2 = unique(a1), unique(a2)
    aux = concatenate([a1, a2])
    if return_indices:
        order = bind(S.argsort_p, aux, axis=0, kind="stable")
        aux = take(aux, order)
    else:
        aux = bind(S.sort_p, aux, axis=0, kind=None)
    mask = M.equal(aux[1:], aux[:-1])
    sel = nonzero(mask)[0]
    common = take(aux[:-1], sel)
    if not return_indices:
        return common
    n1 = a1.shape[0]
    if n1 is None:
        n1 = _size_of(a1, 0)
    j1 = take(order[:-1], sel)
    j2 = M.subtract(take(order[1:], sel), n1)
    if not assume_unique:
        j1, j2 = take(i1, j1), take(i2, j2)
    return common, j1, j2


@composite(np.union1d)
def union1d(ar1, ar2):
    """Sorted unique values of either array, as `numpy.union1d`."""
    a = concatenate([ravel(asarray(ar1)), ravel(asarray(ar2))])
    no_vmap("union1d", a)
    return unique(a)


@composite(np.setdiff1d)
def setdiff1d(ar1, ar2, assume_unique=False):
    """Unique values of ar1 not in ar2 (sorted unless assume_unique), as `numpy.setdiff1d`."""
    a1 = ravel(asarray(ar1))
    no_vmap("setdiff1d", a1, asarray(ar2))
    if not assume_unique:
        a1, a2 = unique(a1), unique(ar2)
    else:
        a2 = ravel(asarray(ar2))
    keep = isin(a1, a2, assume_unique=True, invert=True)
    return take(a1, nonzero(keep)[0])


@composite(np.setxor1d)
def setxor1d(ar1, ar2, assume_unique=False):
    """Sorted values in exactly one of the arrays, as `numpy.setxor1d`."""
    no_vmap("setxor1d", asarray(ar1), asarray(ar2))
    a1, a2 = _flat_unique(ar1, assume_unique), _flat_unique(ar2, assume_unique)
    aux = concatenate([a1, a2])
    if aux.shape[0] == 0:
        return aux
    aux = bind(S.sort_p, aux, axis=0, kind=None)
    true = bind(E.ones_like_p, bind(E.convert_p, aux[:1], dtype=np.dtype(bool)))
    flag = concatenate([true, M.not_equal(aux[1:], aux[:-1]), true])
    keep = M.logical_and(flag[1:], flag[:-1])
    return take(aux, nonzero(keep)[0])
