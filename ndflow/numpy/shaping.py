"""Array manipulation beyond reshaping: splitting, tiling, repeating, rolling, flipping, block
assembly, insertion and deletion, resizing and trimming (`numpy.pad`: padding.py).

Everything is composed of slices, gathers (integer-array indexing), concatenation, broadcasting
and elementwise selection, so it differentiates, traces (also with sizes unknown while tracing,
where NumPy's result is defined by them) and vectorizes. Index bookkeeping on static Python
values (split points, insertion positions) is done in Python, as NumPy does.
"""
import operator
import warnings

import numpy as np

from ..core.ndarray import ndarray, static_size as _static_size
from ..core.primitive import bind
from ..core import dtypes as _dt
from ..primitives import shape as S, elementwise as E, indexing as I
from ..primitives._util import norm_axis, norm_axes, legacy_0d, c_axis
from ..primitives.elementwise import copy_p
from ._core import asarray
from . import _axes as A
from .indexing import _nonzero1
from .manipulation import (reshape, ravel, transpose, moveaxis, concatenate, atleast_2d,
                           expand_dims, vstack, broadcast_to)
from .creation import zeros
from .math import maximum, minimum, not_equal, logical_and
from .reductions import any as any_, argmax


def _copy(a):
    return bind(E.copy_p, a)


# ------------------------------------------------------------------ stacking variants
def atleast_3d(*arys):
    """View inputs as arrays with at least three dimensions, as `numpy.atleast_3d`: 0-d ->
    (1, 1, 1), (N,) -> (1, N, 1), (M, N) -> (M, N, 1)."""
    res = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = expand_dims(a, (0, 2))
        elif a.ndim == 2:
            a = expand_dims(a, 2)
        res.append(a)
    return res[0] if len(res) == 1 else tuple(res)


def column_stack(tup):
    """Stack 1-d arrays as columns of a 2-d array (others as they are), as
    `numpy.column_stack`."""
    arrs = []
    for v in tup:
        v = asarray(v)
        if v.ndim < 2:
            v = transpose(atleast_2d(v))
        arrs.append(v)
    return concatenate(arrs, axis=1)


def dstack(tup):
    """Stack along the third axis after `atleast_3d`, as `numpy.dstack`."""
    arrs = atleast_3d(*tup)
    if not isinstance(arrs, tuple):
        arrs = [arrs]
    return concatenate(list(arrs), axis=2)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    """Deprecated alias of `vstack` (NumPy 2 warns the same way)."""
    warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.",
                  DeprecationWarning, stacklevel=2)
    return vstack(tup, dtype=dtype, casting=casting)


# ------------------------------------------------------------------ splitting
def array_split(ary, indices_or_sections, axis=0):
    """Split into sub-arrays (sizes may differ by one), as `numpy.array_split`: a list of
    slices. A number of sections needs the size along `axis`; split points do not."""
    a = asarray(ary)
    axis = norm_axis(operator.index(axis), a.ndim)
    n = a.shape[axis]
    idx = A.static_ints(indices_or_sections, "indices_or_sections")
    try:
        points = [operator.index(i) for i in idx]
    except TypeError:
        sections = int(idx)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        if n is None:
            raise ValueError(f"array_split into {sections} sections needs the size of axis "
                             f"{axis}, which is unknown while tracing; pass split points "
                             f"instead") from None
        each, extras = divmod(n, sections)
        sizes = [each + 1] * extras + [each] * (sections - extras)
        bounds = np.cumsum([0] + sizes).tolist()
        return [A.slice_axis(a, axis, s, e) for s, e in zip(bounds[:-1], bounds[1:])]
    bounds = [0] + points + [None]
    return [A.slice_axis(a, axis, s, e) for s, e in zip(bounds[:-1], bounds[1:])]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sub-arrays or at split points, as `numpy.split`: an integer `n` gives `n`
    equal pieces (a ValueError if the size does not divide), a list gives the positions where
    pieces start. (TensorFlow's `nf.split` takes piece sizes.)

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.split(tnp.arange(6), 3)
    [array([0, 1], dtype=int64), array([2, 3], dtype=int64), array([4, 5], dtype=int64)]
    >>> tnp.split(tnp.arange(6), [1, 4])
    [array([0], dtype=int64), array([1, 2, 3], dtype=int64), array([4, 5], dtype=int64)]
    """
    a = asarray(ary)
    idx = A.static_ints(indices_or_sections, "indices_or_sections")
    if np.ndim(idx) == 0:
        n = a.shape[norm_axis(operator.index(axis), a.ndim)]
        # (NumPy checks the division with the number as given: 1.5 sections do not divide)
        if n is not None and n % idx:
            raise ValueError("array split does not result in an equal division") from None
    return array_split(a, idx, axis)


def hsplit(ary, indices_or_sections):
    """Split along the second axis (the first for 1-d), as `numpy.hsplit`."""
    a = asarray(ary)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(a, indices_or_sections, 1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split along the first axis of an array of 2 or more dimensions, as `numpy.vsplit`."""
    a = asarray(ary)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(a, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """Split along the third axis, as `numpy.dsplit`."""
    a = asarray(ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(a, indices_or_sections, 2)


def unstack(x, /, *, axis=0):
    """The slices along `axis` as a tuple, as `numpy.unstack`."""
    a = asarray(x)
    if a.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    axis = norm_axis(operator.index(axis), a.ndim)
    n = a.shape[axis]
    if n is None:
        raise ValueError(f"unstack: the size of axis {axis} is unknown while tracing, so the "
                         f"number of outputs is not known")
    spec = (A.SLICE_ALL,) * axis
    return tuple(bind(I.getitem_p, a, spec=spec + (("i", i),)) for i in range(n))


# ------------------------------------------------------------------ tile / repeat
def _tile_runtime(a, reps):
    """tile with repetitions computed at run time: (1, s0, 1, s1, ...) broadcast to
    (r0, s0, r1, s1, ...), then each pair merged."""
    if isinstance(reps, ndarray):
        if reps.ndim == 0:
            reps = [reps]
        elif reps.shape[0] is None:
            raise ValueError("tile: traced reps must have a known length")
        else:
            reps = [reps[i] for i in range(reps.shape[0])]
    reps = list(reps)
    d = len(reps)
    if d > a.ndim:
        a = expand_dims(a, tuple(range(d - a.ndim)))
    reps = [1] * (a.ndim - d) + reps
    sizes = [A.dim(a, i) for i in range(a.ndim)]
    x = bind(S.expand_dims_p, a, axes=tuple(range(0, 2 * a.ndim, 2)))
    pairs = [v for r, n in zip(reps, sizes) for v in (r, n)]
    x = broadcast_to(x, pairs)
    return reshape(x, [r * n for r, n in zip(reps, sizes)])


def tile(A_, reps):
    """Repeat the whole array `reps` times along each axis, as `numpy.tile` (one broadcast and
    one reshape)."""
    a = asarray(A_)
    if A.is_traced(reps) or (isinstance(reps, (list, tuple)) and A.is_traced(*reps)):
        return _tile_runtime(a, reps)
    reps = A.static_ints(reps, "reps")
    tup = (operator.index(reps),) if np.ndim(reps) == 0 else tuple(operator.index(r) for r in reps)
    d = len(tup)
    if d > a.ndim:
        a = expand_dims(a, tuple(range(d - a.ndim)))
    if all(r == 1 for r in tup):
        return _copy(a)
    if any(r < 0 for r in tup):
        raise ValueError("negative dimensions are not allowed")
    tup = (1,) * (a.ndim - d) + tup
    # (s0, s1, ...) -> (r0, s0, r1, s1, ...) by broadcasting, then merge each pair
    new_axes, groups, shape = [], [], []
    for i, r in enumerate(tup):
        if r != 1:
            new_axes.append(len(shape))
            shape.append(r)
        groups.append(1 + (r != 1))
        shape.append(a.shape[i])
    x = bind(S.expand_dims_p, a, axes=tuple(new_axes))
    x = bind(S.broadcast_to_p, x, shape=tuple(shape))
    return A.collapse(x, groups)


def repeat(a, repeats, axis=None):
    """Repeat each element, as `numpy.repeat`: one count for all (a broadcast), or one count
    per element (a gather when the counts are known; when they are traced the output size is
    known only at run time)."""
    x = asarray(a)
    if axis is None or legacy_0d(axis, x.ndim):      # NumPy's legacy 0-d rule
        x = ravel(x)
        axis = 0
    else:
        axis = norm_axis(c_axis(axis), x.ndim)
    if isinstance(repeats, ndarray) and repeats._t is not None:
        r = repeats if repeats.dtype.kind in "iu" else repeats.astype(np.int64)
        if r.ndim > 1:
            raise ValueError("repeats must be a scalar or a 1-d array")
        return bind(I.repeat_p, x, r, axis=axis)
    if isinstance(repeats, float):
        repeats = int(repeats)
    r = np.asarray(A.static_ints(repeats, "repeats"))
    if r.dtype.kind not in "iub":
        what = "scalar" if r.ndim == 0 else "array data"
        raise TypeError(f"Cannot cast {what} from {r.dtype!r} to dtype('int64') according to "
                        f"the rule 'safe'")
    if r.ndim > 1:
        raise ValueError("repeats must be a scalar or a 1-d array")
    if _static_size(r) == 1:
        k = int(r.reshape(()))
        if k < 0:
            raise ValueError("negative dimensions are not allowed")
        if k == 1:
            return _copy(x)
        e = bind(S.expand_dims_p, x, axes=(axis + 1,))
        shape = list(x.shape)
        shape.insert(axis + 1, k)
        e = bind(S.broadcast_to_p, e, shape=tuple(shape))
        return A.collapse(e, [1] * axis + [2] + [1] * (x.ndim - axis - 1))
    n = x.shape[axis]
    if n is not None and r.shape[0] != n:
        raise ValueError(f"operands could not be broadcast together with shape ({n},) "
                         f"({r.shape[0]},)")
    if (r < 0).any():
        raise ValueError("repeats may not contain negative values.")
    return A.gather(x, np.repeat(np.arange(r.shape[0], dtype=np.intp), r), axis)


# ------------------------------------------------------------------ roll / rotate / flip
def roll(a, shift, axis=None):
    """Roll elements along axes, as `numpy.roll` (two slices and a concatenation per axis; a
    gather with run-time indices when the size or the shift is known only at run time)."""
    x = asarray(a)
    if axis is None:
        flat = ravel(x)
        return A.reshape_to(roll(flat, shift, 0), x)
    if isinstance(axis, bool):      # (NumPy's normalize_axis_tuple takes it as 0 or 1)
        axis = int(axis)
    traced_shift = isinstance(shift, ndarray) and shift._t is not None
    if traced_shift:
        if shift.ndim != 0 or np.ndim(axis) != 0:
            raise ValueError("roll with a traced shift takes one scalar shift and one axis")
        pairs = [(norm_axis(operator.index(axis), x.ndim), shift)]
    else:
        sh = A.static_ints(shift, "shift")
        b = np.broadcast(np.asarray(sh), np.asarray(axis))
        if b.ndim > 1:
            raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
        totals = {}
        for s, ax in b:
            ax = norm_axis(ax, x.ndim)
            totals[ax] = totals.get(ax, 0) + int(s)
        pairs = sorted(totals.items())
    out = x
    for ax, s in pairs:
        n = out.shape[ax]
        if n is not None and not isinstance(s, ndarray):
            s = s % n if n else 0
            if s:
                out = concatenate([A.slice_axis(out, ax, n - s, None),
                                   A.slice_axis(out, ax, None, n - s)], axis=ax)
            continue
        nd = A.dim(out, ax)
        idx = (A.iota(out, ax) - s) % nd
        out = A.gather(out, idx, ax)
    return _copy(out) if out is x else out


def rollaxis(a, axis, start=0):
    """Roll `axis` backwards until it lies before `start`, as `numpy.rollaxis`."""
    x = asarray(a)
    n = x.ndim
    axis = norm_axis(operator.index(axis), n)
    start = operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        from numpy.exceptions import AxisError
        raise AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return x
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return transpose(x, axes)


def flip(m, axis=None):
    """Reverse the order of elements along the given axes, as `numpy.flip`."""
    x = asarray(m)
    axes = norm_axes(axis, x.ndim) if axis is not None else tuple(range(x.ndim))
    if not axes:
        # NumPy: m[...] of an n-d array (a view), m[()] of a 0-d one (a new scalar)
        if x.ndim == 0:
            return bind(copy_p, x)
        return x
    spec = tuple(("s", None, None, -1) if i in axes else A.SLICE_ALL for i in range(x.ndim))
    return bind(I.getitem_p, x, spec=spec)


def fliplr(m):
    """Reverse the second axis, as `numpy.fliplr`."""
    x = asarray(m)
    if x.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(x, 1)


def flipud(m):
    """Reverse the first axis, as `numpy.flipud`."""
    x = asarray(m)
    if x.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(x, 0)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees `k` times in the plane of `axes`, as `numpy.rot90`."""
    x = asarray(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    nd = x.ndim
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if axes[0] >= nd or axes[0] < -nd or axes[1] >= nd or axes[1] < -nd:
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k = operator.index(k) % 4
    if k == 0:
        return x[...]
    if k == 2:
        return flip(flip(x, axes[0]), axes[1])
    perm = list(range(nd))
    a0, a1 = axes[0] % nd, axes[1] % nd
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(x, axes[1]), perm)
    return flip(transpose(x, perm), axes[1])


# ------------------------------------------------------------------ block
def _index_str(index):
    return "arrays" + "".join(f"[{i}]" for i in index)


def _block_depths(x, index):
    """(index of the first leaf, its depth, the largest leaf ndim), checking NumPy's rules."""
    if type(x) is tuple:
        raise TypeError(f"{_index_str(index)} is a tuple. Only lists can be used to arrange "
                        f"blocks, and np.block does not allow implicit conversion from tuple to "
                        f"ndarray.")
    if type(x) is list:
        if not x:
            raise ValueError(f"List at {_index_str(index)} cannot be empty")
        first, max_nd = None, 0
        for i, e in enumerate(x):
            idx, nd = _block_depths(e, index + [i])
            if first is None:
                first = idx
            elif len(idx) != len(first):
                raise ValueError(f"List depths are mismatched. First element was at depth "
                                 f"{len(first)}, but there is an element at depth {len(idx)} "
                                 f"({_index_str(idx)})")
            max_nd = max(max_nd, nd)
        return first, max_nd
    return index, asarray(x).ndim


def block(arrays):
    """Assemble an array from nested lists of blocks, as `numpy.block`."""
    first, max_nd = _block_depths(arrays, [])
    depth = len(first)
    nd = max(depth, max_nd)

    leaves = set()

    def rec(x, level):
        if level == depth:
            a = asarray(x)
            leaves.add(id(a))
            if a.ndim < nd:
                a = expand_dims(a, tuple(range(nd - a.ndim)))
            return a
        parts = [rec(e, level + 1) for e in x]
        return concatenate(parts, axis=-(depth - level))
    out = rec(arrays, 0)
    return _copy(out) if id(out) in leaves else out


# ------------------------------------------------------------------ insert / delete / append
def _axis_or_flat(a, axis):
    if axis is None:
        if a.ndim != 1:
            a = ravel(a)
        return a, a.ndim - 1
    return a, norm_axis(operator.index(axis), a.ndim)


def append(arr, values, axis=None):
    """Append values to the end of an array, as `numpy.append` (flattened when axis is None)."""
    a = asarray(arr)
    v = asarray(values)
    if axis is None:
        a = ravel(a) if a.ndim != 1 else a
        v = ravel(v)
        axis = a.ndim - 1
    return concatenate([a, v], axis=axis)


def delete(arr, obj, axis=None):
    """A new array with sub-arrays along an axis deleted, as `numpy.delete`: a gather of the
    kept positions (static when `obj` and the size are known; when `obj` is traced or the size
    unknown, the kept positions are found at run time)."""
    a, axis = _axis_or_flat(asarray(arr), axis)
    n = a.shape[axis]
    if isinstance(obj, ndarray) and obj._t is not None:
        if obj.dtype == np.bool_:
            keep = bind(E.logical_not_p, obj)
        else:
            keep = _keep_mask(a, axis, obj)
        return A.gather(a, _nonzero1(keep, "delete"), axis)
    if isinstance(obj, slice):
        if n is None:
            gone = _slice_mask(A.iota(a, axis), A.dim(a, axis), obj.start, obj.stop, obj.step)
            return A.gather(a, _nonzero1(~gone, "delete"), axis)
        r = range(*obj.indices(n))
        keep = np.ones(n, bool)
        keep[list(r)] = False
        return A.gather(a, np.flatnonzero(keep), axis)
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        single = int(obj)
    else:
        o = np.asarray(A.static_ints(obj, "obj"))
        if o.size == 0 and not isinstance(obj, (np.ndarray, ndarray)):
            o = o.astype(np.intp)
        if o.size == 1 and o.dtype.kind in "ui":
            single = int(o.reshape(()))
        elif o.dtype == np.bool_:
            if n is not None and o.shape != (n,):
                raise ValueError("boolean array argument obj to delete must be one dimensional "
                                 f"and match the axis length of {n}")
            return A.gather(a, np.flatnonzero(~o), axis)
        else:
            if o.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            if n is None:
                return A.gather(a, _nonzero1(_keep_mask(a, axis, asarray(o)), "delete"), axis)
            bad = o[(o < -n) | (o >= n)]
            if bad.size:
                raise IndexError(f"index {bad[0]} is out of bounds for axis {axis} with size {n}")
            keep = np.ones(n, bool)
            keep[o] = False
            return A.gather(a, np.flatnonzero(keep), axis)
    if n is not None:
        if not -n <= single < n:
            raise IndexError(f"index {single} is out of bounds for axis {axis} with size {n}")
        single %= n
        return concatenate([A.slice_axis(a, axis, None, single),
                            A.slice_axis(a, axis, single + 1, None)], axis=axis)
    after = A.slice_axis(a, axis, single + 1, None) if single != -1 else None
    before = A.slice_axis(a, axis, None, single)
    return concatenate([before, after], axis=axis) if after is not None else before


def _keep_mask(a, axis, obj):
    """True except at the (traced) positions `obj` along axis."""
    i = A.iota(a, axis)
    keep = bind(E.ones_like_p, bind(E.convert_p, i, dtype=_dt.BOOL))
    false = bind(E.zeros_like_p, bind(E.convert_p, obj, dtype=_dt.BOOL))
    return bind(I.index_update_p, keep, false, obj if obj.ndim else
                bind(S.reshape_p, obj, shape=(1,)), spec=(("a",),))


def _slice_mask(i, n, start, stop, step):
    """Positions in range(*slice(start, stop, step).indices(n)) for a size n known at run time
    only (start, stop, step are Python ints or None)."""
    step = 1 if step is None else step
    if step > 0:
        lo = 0 if start is None else maximum(start + n, 0) if start < 0 else minimum(start, n)
        hi = n if stop is None else maximum(stop + n, 0) if stop < 0 else minimum(stop, n)
        return (i >= lo) & (i < hi) & ((i - lo) % step == 0)
    hi = n - 1 if start is None else maximum(start + n, -1) if start < 0 else minimum(start, n - 1)
    lo = -1 if stop is None else maximum(stop + n, -1) if stop < 0 else minimum(stop, n - 1)
    return (i <= hi) & (i > lo) & ((hi - i) % (-step) == 0)


def insert(arr, obj, values, axis=None):
    """Insert values before the given positions, as `numpy.insert`. The positions must be
    known (Python values or concrete arrays); the values may be traced (differentiable)."""
    a, axis = _axis_or_flat(asarray(arr), axis)
    nd = a.ndim
    n = a.shape[axis]
    if isinstance(obj, slice):
        if n is None:
            raise ValueError("insert with a slice needs the size of the axis, unknown while "
                             "tracing")
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(A.static_ints(obj, "obj"))
        if indices.dtype == np.bool_:
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or "
                             "scalar")
    v = asarray(values)
    if v.dtype != a.dtype:
        v = bind(E.convert_p, v, dtype=a.dtype)
    if _static_size(indices) == 1:
        if indices.dtype.kind not in "iu":     # (NumPy slices at it: not truncated)
            raise TypeError("slice indices must be integers or None or have an __index__ "
                            "method")
        index = int(indices.reshape(()))
        if n is not None:
            if index < -n or index > n:
                raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
            if index < 0:
                index += n
        if v.ndim < nd:
            v = expand_dims(v, tuple(range(nd - v.ndim)))
        if indices.ndim == 0:
            v = moveaxis(v, 0, axis)
        k = v.shape[axis]
        v = A.expand_to(v, a, axis, k)
        # a negative position (size unknown while tracing) slices the same as NumPy's index + N
        return concatenate([A.slice_axis(a, axis, None, index), v,
                            A.slice_axis(a, axis, index, None)], axis=axis)
    if _static_size(indices) == 0 and not isinstance(obj, (np.ndarray, ndarray)):
        indices = indices.astype(np.intp)
    if indices.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if n is None:
        raise ValueError("insert at several positions needs the size of the axis, unknown while "
                         "tracing")
    k = len(indices)
    # where each output element comes from in concatenate([arr, values]): NumPy's own insert
    # on the positions, so its index rules (and errors) are exactly NumPy's
    src = np.insert(np.arange(n, dtype=np.intp), indices.astype(np.intp),
                    np.arange(n, n + k, dtype=np.intp))
    if v.ndim < nd:              # NumPy's item assignment broadcasts from the right
        v = expand_dims(v, tuple(range(nd - v.ndim)))
    v = A.expand_to(v, a, axis, k)
    return A.gather(concatenate([a, v], axis=axis), src, axis)


# ------------------------------------------------------------------ resize / trim_zeros
def resize(a, new_shape):
    """A new array of the given shape filled by repeating `a` cyclically, as `numpy.resize`
    (one gather; the source size may be unknown while tracing)."""
    x = ravel(asarray(a))
    shape = A.static_ints(new_shape, "new_shape")
    shape = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(operator.index(d)
                                                                       for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = int(np.prod(shape, dtype=np.int64))
    n = x.shape[0]
    if n == 0 or total == 0:
        return zeros(shape, x.dtype)
    idx = np.arange(total, dtype=np.intp)
    if n is not None:
        out = A.gather(x, idx % n, 0) if total != n else _copy(x)
    else:
        out = A.gather(x, asarray(idx) % A.dim(x, 0), 0)
    return reshape(out, shape)


def trim_zeros(filt, trim="fb", axis=None):
    """Trim leading and/or trailing zeros (of the bounding box of the non-zeros along the
    given axes), as `numpy.trim_zeros`. The output size depends on the values: eager as NumPy,
    unknown while tracing, an error inside vectorized_map."""
    x = asarray(filt)
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = tuple(range(x.ndim)) if axis is None else norm_axes(axis, x.ndim)
    if not axes:
        return x
    nz = not_equal(x, 0) if x.dtype != np.bool_ else x
    for ax in axes:
        if x.shape[ax] == 0:
            continue        # nothing to trim (NumPy returns the empty array)
        others = tuple(i for i in range(x.ndim) if i != ax)
        m = any_(nz, axis=others) if others else nz
        i = A.iota(x, ax)
        keep = any_(m)          # all zeros: NumPy trims everything
        if "f" in trim:
            keep = logical_and(keep, i >= argmax(m))
        if "b" in trim:
            keep = logical_and(keep, i <= A.dim(x, ax) - 1 - argmax(flip(m, 0)))
        x_idx = _nonzero1(keep, "trim_zeros")
        x = A.gather(x, x_idx, ax)
        nz = A.gather(nz, x_idx, ax)
    return x
