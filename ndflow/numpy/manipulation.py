"""Shape manipulation: reshape, transpose, stacking, broadcasting."""
import operator

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import shape as S, elementwise as E
from ..primitives._util import norm_axes, norm_axis, broadcast_shapes, c_axis
from ._core import asarray
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
    """Gives a new shape to an array without changing its data, as `numpy.reshape`."""
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
        from ..graph.static import shape_entry_of
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
    return reshape(a, (-1,), order=order)


@composite(np.transpose, "transpose", adapt=False)
def transpose(a, axes=None):
    """Permute the axes (reverse them by default), as `numpy.transpose`."""
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
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    a = asarray(a)
    n = a.ndim
    i, j = norm_axis(axis1, n), norm_axis(axis2, n)
    perm = list(range(n))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
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
    """Insert size-1 axes at `axis`, as `numpy.expand_dims`."""
    a = asarray(a)
    if not isinstance(axis, (tuple, list)):      # NumPy: anything else is one axis
        axis = (axis,)
    axes = norm_axes(axis, a.ndim + len(axis))
    return bind(S.expand_dims_p, a, axes=tuple(sorted(axes)))


@composite(np.squeeze, "squeeze", adapt=False)
def squeeze(a, axis=None):
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
    a = asarray(array)
    shape = shape_arg(shape, "broadcast_to")
    if isinstance(shape, RuntimeShape):
        return bind(S.broadcast_dynamic_p, a, shape.vec, static=shape.static)
    if tuple(a.shape) == shape:
        return a
    return bind(S.broadcast_to_p, a, shape=shape)


def broadcast_shapes_(*shapes):
    return broadcast_shapes(*[_shape_arg(s) for s in shapes])


def broadcast_arrays(*args):
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


def _common(arrays):
    arrs = [asarray(a) for a in arrays]
    d = _dt.result_type(*arrs)
    return [a if a.dtype == d else bind(E.convert_p, a, dtype=d) for a in arrs]


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join arrays along an existing axis, as `numpy.concatenate`."""
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
    r = bind(S.concatenate_p, *arrs, axis=axis)
    return _write_out(r, out, casting=casting)


concat = concatenate


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join arrays along a new axis, as `numpy.stack`."""
    arrs = _common(list(arrays))
    if not arrs:
        raise ValueError("need at least one array to stack")
    shapes = {tuple(a.shape) for a in arrs}
    if len(shapes) > 1:
        raise ValueError("all input arrays must have the same shape")
    axis = norm_axis(axis, arrs[0].ndim + 1)
    return concatenate([bind(S.expand_dims_p, a, axes=(axis,)) for a in arrs], axis=axis,
                       out=out, dtype=dtype)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def atleast_1d(*arys):
    res = [reshape(a, (1,)) if asarray(a).ndim == 0 else asarray(a) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    res = []
    for a in arys:
        a = asarray(a)
        res.append(reshape(a, (1, 1)) if a.ndim == 0 else expand_dims(a, 0) if a.ndim == 1 else a)
    return res[0] if len(res) == 1 else tuple(res)


def shape(a):
    return tuple(asarray(a).shape)


def ndim(a):
    return asarray(a).ndim


def size(a, axis=None):
    a = asarray(a)
    return a.size if axis is None else a.shape[axis]
