"""Shape manipulation: reshape, transpose, stacking, broadcasting."""
import operator

import numpy as np

from ..core.ndarray import ndarray, static_size as _static_size
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import shape as S, elementwise as E, indexing as I
from ..primitives._util import norm_axes, norm_axis, broadcast_shapes, c_axis
from ..graph.static import shape_of as _shape_of, shape_entry_of
from ._core import asarray, common_dtype as _common, stack_parts
from ._outarg import write_out as _write_out
from ._dynshape import shape_arg, RuntimeShape


def _shape_arg(shape):
    if isinstance(shape, (int, np.integer)) or (isinstance(shape, ndarray) and shape.ndim == 0):
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


def _reshape_kernel(a, /, shape=None, order="C", *, newshape=None, copy=None):
    # the array's own method: np.reshape's dispatch layers cost more than the reshape
    s = newshape if shape is None else shape
    if s is None:       # (ndarray.reshape(None) would keep the shape)
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    return a.reshape(s) if type(a) is np.ndarray else np.reshape(a, s)


@composite(_reshape_kernel, "reshape", {"order": "C"}, adapt=False)
def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    """Gives a new shape to an array without changing its data, as `numpy.reshape` (a view when
    NumPy's would be one; one entry may be -1). Inside `nf.function` the shape may hold traced
    sizes (from `nf.shape(x)`).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.reshape(tnp.arange(6), (2, -1))
    array([[0, 1, 2],
           [3, 4, 5]], dtype=int64)
    """
    if shape is None:
        if newshape is None:
            raise TypeError("reshape() missing 1 required positional argument: 'shape'")
        shape = newshape
    if order not in ("C", "A"):
        a = asarray(a)
        return transpose(reshape(transpose(a), tuple(reversed(_shape_arg(shape)))))
    a = asarray(a)
    shape = shape_arg(shape, "reshape")
    if isinstance(shape, RuntimeShape):
        return _reshape_runtime(a, shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if tuple(a.shape) == shape:
        return a
    return bind(S.reshape_p, a, shape=shape)


def _reshape_runtime(a, shape):
    """Reshape to sizes computed at run time (an operand of the reshape, checked when it runs
    as NumPy checks them)."""
    static = shape.static
    if static.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if static.count(None) == 1 and -1 not in static and shape.entries is not None and \
            a._t is not None:
        # the unknown size is a's own size along an axis whose other sizes the new shape
        # keeps: NumPy's -1 infers exactly that size (the static reshape, simpler graphs)
        k = static.index(None)
        src = shape_entry_of(shape.entries[k])
        if src is not None and src[0] is a._v:
            rest = [d for i, d in enumerate(a.shape) if i != src[1]]
            known = int(np.prod([d for d in static if d is not None], dtype=np.int64))
            if None not in rest and known and int(np.prod(rest, dtype=np.int64)) == known:
                return bind(S.reshape_p, a, shape=tuple(-1 if d is None else d for d in static))
    return bind(S.reshape_dynamic_p, a, shape.vec,
                static=tuple(None if d is None or d == -1 else d for d in static))


def ravel(a, order="C"):
    """The elements of `a` as a 1-d array (a view when possible), as `numpy.ravel`; `order='F'`
    reads them column by column.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.ravel(tnp.asarray([[1, 2], [3, 4]]))
    array([1, 2, 3, 4], dtype=int64)
    """
    return reshape(a, (-1,), order=order)


@composite(np.transpose, "transpose", adapt=False)
def transpose(a, axes=None):
    """Permute the axes (reverse them by default), as `numpy.transpose`; a view.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.transpose(tnp.ones((1, 2, 3))).shape
    (3, 2, 1)
    >>> tnp.transpose(tnp.ones((1, 2, 3)), (1, 0, 2)).shape
    (2, 1, 3)
    """
    a = asarray(a)
    n = a.ndim
    if axes is None:
        perm = tuple(range(n - 1, -1, -1))
    else:
        perm = tuple(norm_axis(operator.index(p), n) for p in axes)
        if sorted(perm) != list(range(n)):
            raise ValueError("axes don't match array")
    if perm == tuple(range(n)):
        return a
    return bind(S.transpose_p, a, perm=perm)


permute_dims = transpose


def matrix_transpose(x):
    """`x` with its last two axes swapped (a stack of transposed matrices), as the Array API's
    `matrix_transpose` (NumPy 2's `numpy.matrix_transpose`).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.matrix_transpose(tnp.ones((5, 2, 3))).shape
    (5, 3, 2)
    """
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    """`a` with axes `axis1` and `axis2` interchanged, as `numpy.swapaxes`; a view.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.swapaxes(tnp.asarray([[1, 2, 3]]), 0, 1)
    array([[1],
           [2],
           [3]], dtype=int64)
    """
    a = asarray(a)
    n = a.ndim
    i, j = norm_axis(axis1, n), norm_axis(axis2, n)
    perm = list(range(n))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    """`a` with the axes `source` moved to the positions `destination` (the others keep their
    order), as `numpy.moveaxis`; a view.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.moveaxis(tnp.zeros((3, 4, 5)), 0, -1).shape
    (4, 5, 3)
    >>> tnp.moveaxis(tnp.zeros((3, 4, 5)), [0, 1], [-1, -2]).shape
    (5, 4, 3)
    """
    a = asarray(a)
    n = a.ndim
    if source is None or destination is None:   # (not "every axis": NumPy's TypeError)
        raise TypeError("moveaxis: 'source' and 'destination' must be integers or sequences "
                        "of integers, not None")
    src = norm_axes(source, n)
    dst = norm_axes(destination, n)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@composite(np.expand_dims, "expand_dims", adapt=False)
def expand_dims(a, axis):
    """Insert size-1 axes at `axis` (an int or a tuple of positions in the result), as
    `numpy.expand_dims`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.expand_dims(tnp.asarray([1, 2]), 0)
    array([[1, 2]], dtype=int64)
    >>> tnp.expand_dims(tnp.asarray([1, 2]), (0, 2)).shape
    (1, 2, 1)
    """
    a = asarray(a)
    if not isinstance(axis, (tuple, list)):      # NumPy: anything else is one axis
        axis = (axis,)
    axes = norm_axes(axis, a.ndim + len(axis))
    return bind(S.expand_dims_p, a, axes=tuple(sorted(axes)))


@composite(np.squeeze, "squeeze", adapt=False)
def squeeze(a, axis=None):
    """`a` without axes of size 1 (only those in `axis` when given; a ValueError if one of them
    is not of size 1), as `numpy.squeeze`. Inside `nf.function`, sizes unknown while tracing
    need an explicit `axis`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> x = tnp.zeros((1, 3, 1))
    >>> tnp.squeeze(x).shape
    (3,)
    >>> tnp.squeeze(x, axis=0).shape
    (3, 1)
    """
    a = asarray(a)
    if axis is None:
        if None in a.shape:
            raise ValueError(f"squeeze(axis=None) of an array of shape {tuple(a.shape)}: which "
                             f"axes have size 1 is not known while tracing; pass `axis`")
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        # NumPy's legacy 0-d rule; a ufunc-like axis (an integer or a tuple)
        axes = norm_axes(axis, a.ndim, allow_0d_legacy=True, ufunc=True)
    if not axes:
        return a
    return bind(S.squeeze_p, a, axes=axes)


def broadcast_to(array, shape):
    """`array` broadcast to `shape`, as `numpy.broadcast_to`: a read-only view (writing into it
    raises, as in NumPy). Differentiable: the gradient sums over the broadcast axes.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.broadcast_to(tnp.asarray([1, 2]), (2, 2))
    array([[1, 2],
           [1, 2]], dtype=int64)
    """
    a = asarray(array)
    shape = shape_arg(shape, "broadcast_to")
    if isinstance(shape, RuntimeShape):
        return bind(S.broadcast_dynamic_p, a, shape.vec, static=shape.static)
    # (also to its own shape: NumPy's result is then a read-only view, not the array)
    return bind(S.broadcast_to_p, a, shape=shape)


def broadcast_shapes_(*shapes):
    """The shape that arrays of the given shapes broadcast to, as `numpy.broadcast_shapes` (a
    ValueError when they do not broadcast).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    return broadcast_shapes(*[_shape_arg(s) for s in shapes])


def broadcast_arrays(*args):
    """The arguments broadcast against each other, as `numpy.broadcast_arrays` (a tuple of
    read-only views).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> a, b = tnp.broadcast_arrays(tnp.asarray([[1], [2]]), tnp.asarray([3, 4]))
    >>> b
    array([[3, 4],
           [3, 4]], dtype=int64)
    """
    arrs = [asarray(a) for a in args]
    shape = broadcast_shapes(*[a.shape for a in arrs])
    if None in shape:
        # sizes unknown while tracing: broadcast at run time, against an all-true mask of the
        # broadcast shape (`select` broadcasts its operands)
        mask = None
        for a in arrs:
            m = bind(E.logical_not_p, bind(E.convert_p, bind(E.zeros_like_p, a), dtype=_dt.BOOL))
            mask = m if mask is None else bind(E.logical_and_p, mask, m)
        return tuple(bind(E.select_p, mask, a, a) for a in arrs)
    return tuple(broadcast_to(a, shape) for a in arrs)


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join arrays along an existing axis, as `numpy.concatenate` (`axis=None` joins them
    flattened; dtypes promote as in NumPy).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> a = tnp.asarray([[1, 2]])
    >>> tnp.concatenate([a, a], axis=0)
    array([[1, 2],
           [1, 2]], dtype=int64)
    >>> tnp.concatenate([a, a], axis=None)
    array([1, 2, 1, 2], dtype=int64)
    """
    if isinstance(arrays, ndarray):
        arrays = list(arrays)
    if not len(arrays):
        raise ValueError("need at least one array to concatenate")
    arrs = _common(arrays)
    if dtype is not None:
        arrs = [a.astype(dtype) for a in arrs]
    if axis is None:
        arrs = [ravel(a) for a in arrs]
        axis = 0
    for a in arrs:
        if a.ndim == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, a in enumerate(arrs):
        if a.ndim != arrs[0].ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {arrs[0].ndim} dimension(s) and the array at index {i} has "
                f"{a.ndim} dimension(s)")
    axis = norm_axis(c_axis(axis), arrs[0].ndim)
    if len(arrs) == 1:
        r = arrs[0]
        return bind(E.copy_p, r) if r is arrays[0] else r     # a new array, as NumPy's
    r = bind(I.concatenate_p, *arrs, axis=axis)
    return _write_out(r, out, casting=casting)


concat = concatenate


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join arrays of one shape along a new axis, as `numpy.stack`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.stack([tnp.asarray([1, 2]), tnp.asarray([3, 4])], axis=1)
    array([[1, 3],
           [2, 4]], dtype=int64)
    """
    parts, axis = stack_parts(arrays, axis)
    return concatenate(parts, axis=axis, out=out, dtype=dtype)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """Join arrays along the first axis, 1-d arrays as rows, as `numpy.vstack`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.vstack([tnp.asarray([1, 2]), tnp.asarray([3, 4])])
    array([[1, 2],
           [3, 4]], dtype=int64)
    """
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


def hstack(tup, *, dtype=None, casting="same_kind"):
    """Join arrays along the second axis (the first for 1-d arrays), as `numpy.hstack`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.hstack([tnp.asarray([1, 2]), tnp.asarray([3])])
    array([1, 2, 3], dtype=int64)
    """
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def atleast_1d(*arys):
    """Each argument as an array with at least one axis (0-d arrays become shape (1,)), as
    `numpy.atleast_1d`; one array for one argument, else a tuple.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.atleast_1d(3.0)
    array([3.], dtype=float64)
    """
    res = [reshape(a, (1,)) if asarray(a).ndim == 0 else asarray(a) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    """Each argument as an array with at least two axes (a 1-d array becomes one row), as
    `numpy.atleast_2d`; one array for one argument, else a tuple.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.atleast_2d(tnp.asarray([1, 2])).shape
    (1, 2)
    """
    res = []
    for a in arys:
        a = asarray(a)
        res.append(reshape(a, (1, 1)) if a.ndim == 0 else expand_dims(a, 0) if a.ndim == 1 else a)
    return res[0] if len(res) == 1 else tuple(res)


def shape(a):
    """The shape of `a` as a tuple, as `numpy.shape` (entries None for sizes unknown while
    tracing; `nf.shape` gives them at run time).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.shape([[1, 2, 3]])
    (1, 3)
    """
    return tuple(asarray(a).shape)


def ndim(a):
    """The number of axes of `a`, as `numpy.ndim`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.ndim([[1, 2, 3]])
    2
    """
    return asarray(a).ndim


def size(a, axis=None):
    """The number of elements (along `axis`), as `numpy.size`: an int; inside `nf.function`,
    where it is unknown while tracing (input_signature with None sizes), its run-time value,
    a 0-d int64 array (as TensorFlow's NumPy API).

    >>> tnp.size(tnp.ones((2, 3))), tnp.size(tnp.ones((2, 3)), axis=-1)
    (6, 3)
    """
    a = asarray(a)
    n = _static_size(a) if axis is None else a.shape[operator.index(axis)]
    if n is not None:
        return n
    s = _shape_of(a, out_type=np.int64)
    if axis is not None:
        return s[operator.index(axis)]
    n = 1
    for i, d in enumerate(a.shape):         # (the known sizes stay constants)
        n = n * (s[i] if d is None else d)
    return n
