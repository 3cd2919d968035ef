"""TensorFlow's array functions that NumPy spells differently: `nf.gather`, `nf.gather_nd`,
`nf.scatter_nd`, `nf.boolean_mask`, `nf.split`, `nf.pad`, `nf.sort`, `nf.clip_by_global_norm` ...

Each is a thin composition of ndflow.numpy functions, so it differentiates, traces and
vectorizes. Arguments and defaults are TensorFlow's; where TensorFlow refuses an input that NumPy
would accept (a negative index, which NumPy counts from the end), these refuse it too, with
`nf.errors.InvalidArgumentError` (a ValueError), eagerly at once and inside `nf.function` at
every call.
"""
import collections
import operator

import numpy as np

from . import numpy as tnp
from .core.ndarray import ndarray
from .core.primitive import bind
from .core.state import STATE
from .core.variable import VariableBase
from .core import dtypes as _dt
from .compat import _tensor, _operand
from .debugging import _check_index_range
from .primitives.indexing import iota_p

__all__ = [
    "gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "boolean_mask", "sequence_mask", "reverse", "split", "slice", "pad",
    "sort", "argsort", "top_k", "unique", "roll", "repeat", "broadcast_to", "meshgrid", "eye",
    "linspace", "einsum", "clip_by_norm", "clip_by_global_norm", "global_norm", "norm",
    "executing_eagerly", "is_tensor", "newaxis",
]

newaxis = None

_builtin_slice = slice


def _indices(x, what):
    """An integer array of indices (TensorFlow's int32/int64; bool and float refused)."""
    idx = _tensor(x)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{what}: indices must be integers (int32 or int64), got {idx.dtype.name}")
    return idx


def _norm_axis(axis, ndim, what):
    a = operator.index(axis)
    if not -ndim <= a < max(ndim, 1):
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of rank {ndim}")
    return a % ndim if ndim else 0


def _batch_grid(like, axis):
    """arange(like.shape[axis]), shaped to broadcast against `like` (sizes may be unknown while
    tracing): the index of the batch entry each index belongs to."""
    return bind(iota_p, like, axis=axis)


def _check_batch_shapes(a, b, batch_dims, what):
    for i in range(batch_dims):
        if a.shape[i] is not None and b.shape[i] is not None and a.shape[i] != b.shape[i]:
            raise ValueError(f"{what}: the first batch_dims={batch_dims} sizes of params "
                             f"{tuple(a.shape)} and indices {tuple(b.shape)} must be equal")


# ------------------------------------------------------------------ gathering
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` at `indices`, as `tf.gather`.

    The result has shape ``params.shape[:axis] + indices.shape[batch_dims:] +
    params.shape[axis + 1:]``. With ``batch_dims=b``, the first `b` axes of `params` and
    `indices` are batch axes: each batch entry is gathered with its own indices.

    Parameters
    ----------
    params : array_like
        The values to gather from.
    indices : array_like of int
        Indices into `params` along `axis`; each must be in ``[0, params.shape[axis])``.
    validate_indices : None
        Ignored, as in TensorFlow 2 (indices are always validated).
    axis : int, optional
        The axis of `params` to gather along; defaults to `batch_dims`.
    batch_dims : int, optional
        The number of leading batch axes (negative: counted from the rank of `indices`).

    Returns
    -------
    ndarray
        The gathered values, with the dtype of `params`.

    Notes
    -----
    Differs from `numpy.take`: a negative or too large index raises
    `nf.errors.InvalidArgumentError` (as TensorFlow does on CPU; NumPy counts negative indices
    from the end). Differentiable in `params`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.gather([10., 20., 30.], [2, 0, 2])
    array([30., 10., 30.], dtype=float32)
    >>> nf.gather([[1, 2], [3, 4]], [1], axis=1)
    array([[2],
           [4]], dtype=int32)
    >>> nf.gather([[1, 2], [3, 4]], [[1], [0]], batch_dims=1)
    array([[2],
           [3]], dtype=int32)
    """
    p, idx = _tensor(params), _indices(indices, "nf.gather")
    if p.ndim == 0:
        raise ValueError("nf.gather: params must have at least one axis, got a 0-d array")
    bd = operator.index(batch_dims)
    if bd < 0:
        bd += idx.ndim
    if not 0 <= bd <= min(idx.ndim, p.ndim - 1):
        raise ValueError(f"nf.gather: batch_dims={batch_dims} must be in [0, {idx.ndim}] and "
                         f"less than the rank of params ({p.ndim})")
    ax = bd if axis is None else _norm_axis(axis, p.ndim, "nf.gather")
    if ax < bd:
        raise ValueError(f"nf.gather: axis {axis} must not be less than batch_dims={bd}")
    _check_batch_shapes(p, idx, bd, "nf.gather")
    _check_index_range(idx, p.shape[ax], "nf.gather")
    if bd == 0:
        return tnp.take(p, idx, axis=ax)
    # the batch axes as broadcasting grids beside the indices: x[b0, b1, ..., :, idx]
    key = [_batch_grid(idx, i) for i in range(bd)]
    key += [_builtin_slice(None)] * (ax - bd) + [idx]
    r = p[tuple(key)]
    if ax > bd:
        # indices separated by slices put their axes first: the kept axes go back after the
        # batch axes
        kept = list(range(idx.ndim, idx.ndim + ax - bd))
        r = tnp.moveaxis(r, kept, list(range(bd, ax)))
    return r


def _nd_key(p, idx, batch_dims, what):
    """The index tuple of `params[...]` for gather_nd-style `indices` (last axis: coordinates)."""
    if idx.ndim < 1 or idx.shape[-1] is None:
        raise ValueError(f"{what}: indices must have a last axis of known size (the number of "
                         f"coordinates per index), got shape {tuple(idx.shape)}")
    depth = idx.shape[-1]
    if batch_dims + depth > p.ndim:
        raise ValueError(f"{what}: index depth {depth} (indices.shape[-1]) with batch_dims="
                         f"{batch_dims} exceeds the rank of params ({p.ndim})")
    key = [_batch_grid(idx[..., 0], i) for i in range(batch_dims)]
    for k in range(depth):
        coord = idx[..., k]
        _check_index_range(coord, p.shape[batch_dims + k], what)
        key.append(coord)
    return tuple(key)


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of `params` at the coordinates in the last axis of `indices`, as `tf.gather_nd`.

    ``indices[..., :]`` holds ``d = indices.shape[-1]`` coordinates into the first `d` axes of
    `params` (after `batch_dims` batch axes); the result has shape
    ``indices.shape[:-1] + params.shape[batch_dims + d:]``.

    Differs from NumPy indexing as `nf.gather` does: negative or too large coordinates raise
    `nf.errors.InvalidArgumentError`. Differentiable in `params`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])
    array([3, 2], dtype=int32)
    >>> nf.gather_nd([[1, 2], [3, 4]], [[1]])
    array([[3, 4]], dtype=int32)
    """
    p, idx = _tensor(params), _indices(indices, "nf.gather_nd")
    bd = operator.index(batch_dims)
    _check_batch_shapes(p, idx, bd, "nf.gather_nd")
    return p[_nd_key(p, idx, bd, "nf.gather_nd")]


def _scatter_into(out, indices, updates, what, how):
    idx = _indices(indices, what)
    key = _nd_key(out, idx, 0, what)
    upd = _tensor(updates)
    if upd.dtype != out.dtype:
        upd = upd.astype(out.dtype)
    if how == "update":
        out[key] = upd
    elif how == "add":
        tnp.add.at(out, key, upd)
    else:
        tnp.subtract.at(out, key, upd)
    return out


def scatter_nd(indices, updates, shape, name=None):
    """A new array of `shape`, zero except at `indices`, where `updates` are added, as
    `tf.scatter_nd`.

    `indices` has shape ``(..., d)``: coordinates into the first `d` axes of the result;
    `updates` has shape ``indices.shape[:-1] + shape[d:]``. Repeated indices add up (as in
    TensorFlow). Out-of-range indices raise `nf.errors.InvalidArgumentError`. Differentiable in
    `updates`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.scatter_nd([[1], [3], [1]], [1., 2., 5.], [5])
    array([0., 6., 0., 2., 0.], dtype=float32)
    """
    upd = _tensor(updates)
    dims = shape.numpy().tolist() if isinstance(shape, ndarray) else shape
    out = tnp.zeros(tuple(operator.index(d) for d in dims), dtype=upd.dtype)
    return _scatter_into(out, indices, upd, "nf.scatter_nd", "add")


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of `tensor` with the elements (or slices) at `indices` replaced by `updates`, as
    `tf.tensor_scatter_nd_update` (`indices` as in `nf.scatter_nd`). With repeated indices one of
    the updates wins (TensorFlow leaves the choice open too). Gradients flow to the kept
    elements of `tensor` and to `updates`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.tensor_scatter_nd_update([1, 2, 3, 4], [[0], [2]], [9, 8])
    array([9, 2, 8, 4], dtype=int32)
    """
    return _scatter_into(tnp.copy(_tensor(tensor)), indices, updates,
                         "nf.tensor_scatter_nd_update", "update")


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` added at `indices` (repeated indices add up), as
    `tf.tensor_scatter_nd_add`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.tensor_scatter_nd_add([1, 2, 3], [[0], [0]], [10, 10])
    array([21,  2,  3], dtype=int32)
    """
    return _scatter_into(tnp.copy(_tensor(tensor)), indices, updates,
                         "nf.tensor_scatter_nd_add", "add")


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` subtracted at `indices` (repeated indices add up), as
    `tf.tensor_scatter_nd_sub`."""
    return _scatter_into(tnp.copy(_tensor(tensor)), indices, updates,
                         "nf.tensor_scatter_nd_sub", "sub")


# ------------------------------------------------------------------ masks and pieces
def boolean_mask(tensor, mask, axis=None, name=None):
    """The entries of `tensor` where the boolean `mask` is true, as `tf.boolean_mask`.

    `mask` covers the axes ``axis, ..., axis + mask.ndim - 1`` of `tensor` (`axis` 0 by
    default), which become one axis of the result. The length of the result is known only when
    the mask's values are (not while tracing `nf.function` with a traced mask).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.boolean_mask([1, 2, 3, 4], [True, False, True, False])
    array([1, 3], dtype=int32)
    """
    x, m = _tensor(tensor), _tensor(mask)
    if m.dtype != _dt.BOOL:
        raise TypeError(f"nf.boolean_mask: mask must be boolean, got {m.dtype.name}")
    ax = 0 if axis is None else _norm_axis(axis, x.ndim, "nf.boolean_mask")
    if m.ndim == 0 or ax + m.ndim > x.ndim:
        raise ValueError(f"nf.boolean_mask: a mask of shape {tuple(m.shape)} at axis {ax} does "
                         f"not fit a tensor of shape {tuple(x.shape)}")
    for i, d in enumerate(m.shape):
        if d is not None and x.shape[ax + i] is not None and d != x.shape[ax + i]:
            raise ValueError(f"nf.boolean_mask: mask shape {tuple(m.shape)} does not match "
                             f"tensor shape {tuple(x.shape)} at axis {ax}")
    return x[(_builtin_slice(None),) * ax + (m,)]


def sequence_mask(lengths, maxlen=None, dtype=np.bool_, name=None):
    """``mask[..., j] = j < lengths[...]``, as `tf.sequence_mask`: a mask of shape
    ``lengths.shape + (maxlen,)`` (`maxlen` defaults to the largest length).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.sequence_mask([1, 3], 4)
    array([[ True, False, False, False],
           [ True,  True,  True, False]], dtype=bool)
    """
    n = _indices(lengths, "nf.sequence_mask")
    if maxlen is None:
        maxlen = tnp.max(n) if n.size else 0
    steps = tnp.arange(maxlen, dtype=n.dtype)
    m = steps < tnp.expand_dims(n, -1)
    return m if np.dtype(dtype) == np.bool_ else m.astype(dtype)


def reverse(tensor, axis, name=None):
    """`tensor` with the order of entries reversed along each axis in the list `axis`, as
    `tf.reverse` (= `numpy.flip`)."""
    x = _tensor(tensor)
    axes = axis.numpy().tolist() if isinstance(axis, ndarray) else axis
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    return tnp.flip(x, tuple(_norm_axis(a, x.ndim, "nf.reverse") for a in axes)) if axes else x


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """`value` cut along `axis` into a list of pieces, as `tf.split`: an integer gives that
    many equal pieces (an error if the size does not divide); a list gives the pieces' sizes,
    one of which may be -1 (the rest). (`numpy.split` takes cut positions instead of sizes.)

    Examples
    --------
    >>> import ndflow as nf
    >>> [p.shape for p in nf.split(nf.zeros([5, 2]), [1, -1, 2])]
    [(1, 2), (2, 2), (2, 2)]
    """
    x = _tensor(value)
    ax = _norm_axis(axis, x.ndim, "nf.split")
    n = x.shape[ax]
    if isinstance(num_or_size_splits, (int, np.integer)):
        k = operator.index(num_or_size_splits)
        if k <= 0 or (n is not None and n % k):
            raise ValueError(f"nf.split: cannot split an axis of size {n} into {k} equal pieces")
        return list(tnp.split(x, k, axis=ax))
    sizes = (num_or_size_splits.numpy().tolist() if isinstance(num_or_size_splits, ndarray)
             else [operator.index(s) for s in num_or_size_splits])
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"nf.split: sizes {sizes} may hold at most one -1 and no other "
                         f"negative size")
    if n is None:
        raise ValueError("nf.split: splitting by sizes needs the size of the axis, unknown "
                         "while tracing")
    if -1 in sizes:
        sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise ValueError(f"nf.split: sizes {list(num_or_size_splits)} do not add up to the "
                         f"axis size {n}")
    return list(tnp.split(x, np.cumsum(sizes)[:-1].tolist(), axis=ax))


def slice(input_, begin, size, name=None):  # noqa: A001  (TensorFlow's name)
    """The block of `input_` starting at `begin` with `size` entries per axis (-1: all the
    rest), as `tf.slice`. Unlike Python slicing, a block that does not fit raises.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.slice([[1, 2, 3], [4, 5, 6]], [0, 1], [2, -1])
    array([[2, 3],
           [5, 6]], dtype=int32)
    """
    x = _tensor(input_)
    b = [operator.index(v) for v in (begin.numpy().tolist() if isinstance(begin, ndarray)
                                     else begin)]
    s = [operator.index(v) for v in (size.numpy().tolist() if isinstance(size, ndarray)
                                     else size)]
    if len(b) != x.ndim or len(s) != x.ndim:
        raise ValueError(f"nf.slice: begin {b} and size {s} need one entry per axis of the "
                         f"input of shape {tuple(x.shape)}")
    key = []
    for i, (lo, k, d) in enumerate(zip(b, s, x.shape)):
        hi = d if k == -1 else lo + k
        if lo < 0 or k < -1 or (d is not None and (hi is None or hi > d)):
            raise ValueError(f"nf.slice: begin {lo} and size {k} do not fit axis {i} of size {d}")
        key.append(_builtin_slice(lo, None if k == -1 else hi))
    return x[tuple(key)]


_PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """`tensor` padded by ``paddings[i] = [before, after]`` entries on axis i, as `tf.pad`;
    `mode` is 'CONSTANT' (with `constant_values`), 'REFLECT' or 'SYMMETRIC' (any case).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.pad([1, 2, 3], [[1, 2]])
    array([0, 1, 2, 3, 0, 0], dtype=int32)
    >>> nf.pad([1, 2, 3], [[2, 0]], "REFLECT")
    array([3, 2, 1, 2, 3], dtype=int32)
    """
    x = _tensor(tensor)
    how = _PAD_MODES.get(str(mode).upper())
    if how is None:
        raise ValueError(f"nf.pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}")
    widths = paddings.numpy().tolist() if isinstance(paddings, ndarray) else paddings
    widths = [tuple(operator.index(w) for w in row) for row in widths]
    if len(widths) != x.ndim or any(len(w) != 2 or min(w) < 0 for w in widths):
        raise ValueError(f"nf.pad: paddings must be {x.ndim} pairs [before, after] of "
                         f"non-negative sizes, got {widths}")
    if how == "constant":
        return tnp.pad(x, widths, mode=how, constant_values=_operand(constant_values))
    return tnp.pad(x, widths, mode=how)


# ------------------------------------------------------------------ sorting
def _direction(direction, what):
    d = str(direction).upper()
    if d not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{what}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    return d == "DESCENDING"


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis`, as `tf.sort` (differentiable: each sorted position's
    gradient goes to the element that landed there). NaN sorts as the largest value.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.sort([3, 1, 2], direction="DESCENDING")
    array([3, 2, 1], dtype=int32)
    """
    return tnp.sort(_tensor(values), axis=axis,
                    descending=_direction(direction, "nf.sort"))


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort `values` along `axis`, as `tf.argsort`. The order of equal
    values is their order in `values` in both directions (so `stable` changes nothing).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.argsort([3, 1, 3, 2], direction="DESCENDING")
    array([0, 2, 3, 1], dtype=int32)
    """
    r = tnp.argsort(_tensor(values), axis=axis, stable=True,
                    descending=_direction(direction, "nf.argsort"))
    return r.astype(np.int32)


Unique = collections.namedtuple("Unique", ["y", "idx"])


def unique(x, out_idx=np.int32, name=None):
    """The distinct values of the 1-d `x` in the order they first appear, and for each entry
    of `x` the position of its value in them, as `tf.unique` (`numpy.unique` sorts them).

    Examples
    --------
    >>> import ndflow as nf
    >>> y, idx = nf.unique([4, 1, 4, 2, 1])
    >>> y, idx
    (array([4, 1, 2], dtype=int32), array([0, 1, 0, 2, 1], dtype=int32))
    """
    v = _tensor(x)
    if v.ndim != 1:
        raise ValueError(f"nf.unique: x must be 1-d, got shape {tuple(v.shape)}")
    u, first, inverse = tnp.unique(v, return_index=True, return_inverse=True)
    order = tnp.argsort(first)            # the sorted values, in order of first appearance
    rank = tnp.argsort(order)
    return Unique(u[order], rank[inverse].astype(out_idx))


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=np.int32, name=None):  # noqa: A002
    """The `k` largest entries along the last axis and their indices, as `tf.math.top_k` (also
    `nf.nn.top_k`).

    Returns a named pair ``(values, indices)``; equal values come in the order of their
    indices, NaN counts as the largest value. The values are differentiable (each gets the
    gradient of the entry it came from). `sorted=False` still sorts (TensorFlow leaves the
    order open).

    Examples
    --------
    >>> import ndflow as nf
    >>> values, indices = nf.math.top_k([1., 5., 3., 5.], k=2)
    >>> values, indices
    (array([5., 5.], dtype=float32), array([1, 3], dtype=int32))
    """
    x = _tensor(input)
    if x.ndim == 0:
        raise ValueError("nf.math.top_k: input must have at least one axis")
    n, k = x.shape[-1], int(k)
    if k < 0 or (n is not None and k > n):
        raise ValueError(f"nf.math.top_k: k={k} must be in [0, {n}] (the size of the last axis)")
    order = tnp.argsort(x, axis=-1, stable=True, descending=True)
    idx = order[..., :k]
    return TopKV2(tnp.take_along_axis(x, idx, axis=-1), idx.astype(index_type))


# ------------------------------------------------------------------ NumPy's, TF's arguments
def roll(input, shift, axis, name=None):  # noqa: A002
    """Entries shifted cyclically by `shift` along `axis` (ints or lists), as `tf.roll` (=
    `numpy.roll`, whose axis is optional)."""
    return tnp.roll(_tensor(input), shift, axis)


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """Each entry repeated `repeats` times (along `axis`; flattened when None), as `tf.repeat`
    (= `numpy.repeat`)."""
    return tnp.repeat(_tensor(input), repeats, axis)


def broadcast_to(input, shape, name=None):  # noqa: A002
    """`input` broadcast to `shape` (a read-only view), as `tf.broadcast_to`."""
    return tnp.broadcast_to(_tensor(input), tuple(shape.numpy().tolist())
                            if isinstance(shape, ndarray) else shape)


def meshgrid(*args, **kwargs):
    """Coordinate grids, as `tf.meshgrid` (= `numpy.meshgrid`, 'xy' indexing by default)."""
    return tnp.meshgrid(*[_tensor(a) for a in args], **kwargs)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=np.float32, name=None):
    """An identity matrix, float32 by default as `tf.eye`; with `batch_shape`, that many copies
    (shape ``batch_shape + [num_rows, num_columns]``).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.eye(2)
    array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    m = tnp.eye(num_rows, num_columns, dtype=dtype)
    if batch_shape is None:
        return m
    return tnp.broadcast_to(m, tuple(batch_shape) + tuple(m.shape)).copy()


def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop` (both included), as `tf.linspace`:
    float32 for Python numbers, else the (floating) dtype of `start` and `stop`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.linspace(0., 1., 5)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    a, b = _tensor(start), _tensor(stop)
    dtype = np.result_type(a.dtype, b.dtype)
    if dtype.kind not in "fc":
        dtype = _dt.F32 if not isinstance(start, ndarray) else np.dtype(np.float64)
    return tnp.linspace(a, b, operator.index(num), axis=axis, dtype=dtype)


def einsum(equation, *inputs, **kwargs):
    """Einstein summation, as `tf.einsum`: `numpy.einsum` with `optimize='greedy'` (pairs of
    operands in a greedy order, by BLAS where NumPy uses it), differentiable."""
    return tnp.einsum(equation, *[_tensor(x) for x in inputs], optimize="greedy")


# ------------------------------------------------------------------ norms and clipping
def _sum_of_squares(x, axis=None, keepdims=False):
    a = tnp.absolute(x) if x.dtype.kind == "c" else x
    return tnp.sum(a * a, axis=axis, keepdims=keepdims)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """The norm of `tensor`, as `tf.norm`: with `axis` None, of all its entries taken as one
    vector (a matrix's Frobenius norm); with an int `axis`, vector norms along it; with a pair,
    matrix norms. `ord` is 'euclidean' (default), 'fro' (matrices), 1, 2, `numpy.inf` or a
    positive p for vectors.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.norm([[3., 4.], [0., 0.]])
    array(5., dtype=float32)
    >>> nf.norm([[3., 4.], [1., 1.]], ord=1, axis=1)
    array([7., 2.], dtype=float32)
    """
    x = _tensor(tensor)
    keep = bool(keepdims)
    ax = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    if ord == "fro" and not (isinstance(ax, tuple) and len(ax) == 2):
        raise ValueError("nf.norm: ord='fro' is a matrix norm: give axis a pair of axes")
    if ord in ("euclidean", "fro"):
        return tnp.sqrt(_sum_of_squares(x, ax, keep))
    if ax is None:
        r = tnp.linalg.norm(tnp.ravel(x), ord)
        return tnp.reshape(r, (1,) * x.ndim) if keep else r
    return tnp.linalg.norm(x, ord, ax, keepdims=keep)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t` scaled so that its L2 norm (over `axes`, all by default) is at most `clip_norm`, as
    `tf.clip_by_norm`: ``t * clip_norm / max(norm(t), clip_norm)``; an all-zero `t` stays zero.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.clip_by_norm([3., 4.], 1.)
    array([0.6, 0.8], dtype=float32)
    """
    x = _tensor(t)
    s = _sum_of_squares(x, None if axes is None else tuple(np.atleast_1d(axes).tolist()), True)
    # the square root only where it is positive: a zero norm has no NaN gradient
    pos = s > 0
    n = tnp.where(pos, tnp.sqrt(tnp.where(pos, s, 1)), s)
    c = _operand(clip_norm)
    return (x * c) / tnp.maximum(n, c)


def global_norm(t_list, name=None):
    """``sqrt(sum(sum(t ** 2) for t in t_list))``, `None` entries skipped, as `tf.global_norm`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.global_norm([nf.constant([3.]), None, nf.constant([4.])])
    array(5., dtype=float32)
    """
    if isinstance(t_list, (ndarray, VariableBase)) or not hasattr(t_list, "__iter__"):
        raise TypeError("nf.global_norm: t_list must be a list or tuple of arrays")
    parts = [_sum_of_squares(_tensor(t)) for t in t_list if t is not None]
    if not parts:
        return tnp.asarray(0.0, dtype=_dt.F32)
    return tnp.sqrt(parts[0] if len(parts) == 1 else tnp.sum(tnp.stack(parts)))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """The arrays of `t_list` scaled together so that their global norm is at most `clip_norm`,
    and the global norm, as `tf.clip_by_global_norm`.

    Each entry becomes ``t * clip_norm / max(global_norm, clip_norm)``; `None` entries stay
    `None`. If the global norm is infinite, every entry becomes NaN (to signal the error, as in
    TensorFlow).

    Returns
    -------
    list_clipped : list of ndarray
    global_norm : ndarray
        0-d; `use_norm` when given.

    Examples
    --------
    >>> import ndflow as nf
    >>> clipped, n = nf.clip_by_global_norm([nf.constant([3.]), nf.constant([4.])], 1.)
    >>> clipped, n
    ([array([0.6], dtype=float32), array([0.8], dtype=float32)], array(5., dtype=float32))
    """
    if isinstance(t_list, (ndarray, VariableBase)) or not hasattr(t_list, "__iter__"):
        raise TypeError("nf.clip_by_global_norm: t_list must be a list or tuple of arrays")
    ts = [None if t is None else _tensor(t) for t in t_list]
    n = global_norm(ts) if use_norm is None else _tensor(use_norm)
    c = tnp.asarray(clip_norm, dtype=n.dtype)
    # NaN scales every entry when the norm is infinite (or NaN); a zero norm scales by 1
    scale = tnp.where(tnp.isfinite(n), c / tnp.maximum(n, c), tnp.full_like(n, np.nan))
    return [None if t is None else t * scale.astype(t.dtype) for t in ts], n


# ------------------------------------------------------------------ what kind of value
def executing_eagerly():
    """False while `nf.function` traces a function, True otherwise, as
    `tf.executing_eagerly`."""
    return not any(getattr(t, "is_graph", False) for t in STATE.traces)


def is_tensor(x):
    """Whether `x` is an ndflow array or Variable (what `tf.is_tensor` calls a tensor), not a
    NumPy array or Python data."""
    return isinstance(x, (ndarray, VariableBase))
