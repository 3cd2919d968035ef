"""Helpers for the NumPy layer's shape functions: sizes that may be known only at run time,
index vectors along an axis, gathers and merges of axes. They compose primitives, so what is
built with them differentiates, traces (also with unknown sizes) and batches."""
import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind
from ..primitives import shape as S, indexing as I, elementwise as E, reduction as R
from ..graph.static import shape_of as _shape_of
from ._core import asarray

SLICE_ALL = ("s", None, None, None)


def is_traced(*xs):
    return any(isinstance(x, ndarray) and x._t is not None for x in xs)


def dim(x, axis):
    """x.shape[axis]: a Python int, or a 0-d int64 array computed at run time when the size is
    unknown while tracing."""
    n = x.shape[axis]
    if n is None:
        n = _shape_of(x, out_type=np.int64)[axis]
    return n


def iota(x, axis):
    """arange(x.shape[axis]) as a 1-d int64 array (a constant when the size is known)."""
    n = x.shape[axis]
    if n is not None:
        return asarray(np.arange(n, dtype=np.intp))
    return bind(S.reshape_p, bind(I.iota_p, x, axis=axis), shape=(-1,))


def along(v, axis, ndim):
    """A 1-d `v` shaped to broadcast along `axis` of an `ndim`-d array."""
    trail = ndim - axis - 1
    return bind(S.reshape_p, v, shape=(-1,) + (1,) * trail) if trail else v


def gather(x, idx, axis):
    """x indexed by the integer array `idx` along `axis` (no bounds check: callers make idx)."""
    if not isinstance(idx, ndarray):
        idx = asarray(np.asarray(idx, dtype=np.intp))
    return bind(I.getitem_p, x, idx, spec=(SLICE_ALL,) * axis + (("a",),))


def slice_axis(x, axis, start=None, stop=None, step=None):
    return bind(I.getitem_p, x, spec=(SLICE_ALL,) * axis + (("s", start, stop, step),))


def blank(x, axis):
    """Zeros of x's dtype with x's shape except size 1 along `axis` (sizes known or not): the
    base a constant is broadcast against. No gradient flows through it."""
    z = bind(R.reduce_sum_p, slice_axis(x, axis, 0, 0), axes=(axis,), keepdims=True)
    # always converted: NumPy's sum of small integers and bools widens to int64
    return bind(E.convert_p, bind(E.zeros_like_p, z), dtype=x.dtype)


def expand_to(v, x, axis, width):
    """`v` (broadcastable to x with size `width` along `axis`) broadcast to that shape; works
    with sizes unknown while tracing (they come from x)."""
    shape = list(x.shape)
    shape[axis] = width
    if None in shape:
        if v.dtype == np.bool_:
            v = bind(E.logical_or_p, blank(x, axis), v)
        else:
            # -0.0 is the additive identity (0.0 + -0.0 would be 0.0): the broadcast keeps
            # every value bit for bit
            z = blank(x, axis)
            v = bind(E.add_p, bind(E.neg_p, z) if z.dtype.kind in "fc" else z, v)
    if tuple(v.shape) == tuple(shape):
        return v
    return bind(S.broadcast_to_p, v, shape=tuple(shape))


def collapse(x, groups):
    """Merge consecutive axes: `groups` lists how many axes form each output axis (1 or more).
    One reshape when the sizes are known; otherwise the groups are merged one at a time at the
    end of the array (reshape keeps the leading axes whatever their sizes)."""
    if sum(groups) != x.ndim:
        raise AssertionError("collapse: groups do not cover the axes")
    if None not in x.shape:
        shape, i = [], 0
        for g in groups:
            shape.append(int(np.prod(x.shape[i:i + g], dtype=np.int64)))
            i += g
        return x if tuple(shape) == tuple(x.shape) else bind(S.reshape_p, x, shape=tuple(shape))
    for g in reversed(groups):
        if g > 1:
            x = bind(S.reshape_p, x, shape=(-1,), keep=x.ndim - g)
        x = S.moveaxis(x, x.ndim - 1, 0)
    return x


def reshape_to(x, like):
    """x reshaped to like's shape (sizes of `like` possibly unknown while tracing)."""
    if None not in like.shape:
        shape = tuple(like.shape)
        return x if tuple(x.shape) == shape else bind(S.reshape_p, x, shape=shape)
    return bind(S.reshape_like_p, x, like)


def static_ints(v, what):
    """A concrete integer value (Python int, NumPy integer or eager array) as Python data."""
    if isinstance(v, ndarray):
        if v._t is not None:
            raise TypeError(f"{what} must be known when the function is traced (a Python int or a "
                            f"concrete array), not a traced value")
        v = v.numpy()
    return v


def clipmode(mode):
    """NumPy's clip-mode argument (take, put, choose, ravel_multi_index) as 'raise', 'wrap' or
    'clip': None is 'raise', bytes are decoded, NumPy's integer codes are accepted (0 'clip', 1
    'wrap', 2 'raise'); any other string or integer is NumPy's ValueError, any other type its
    TypeError."""
    if mode is None:
        return "raise"
    if isinstance(mode, bytes):
        mode = mode.decode("latin-1")
    if isinstance(mode, str):
        if mode in ("raise", "wrap", "clip"):
            return mode
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if isinstance(mode, (int, np.integer)) and not isinstance(mode, (bool, np.bool_)):
        if 0 <= int(mode) <= 2:
            return ("clip", "wrap", "raise")[int(mode)]
        raise ValueError("integer clipmode must be RAISE, WRAP, or CLIP")
    raise TypeError("clipmode not understood")
