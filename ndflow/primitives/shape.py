"""Shape primitives: reshape, transpose, expand_dims, squeeze, broadcast_to, concatenate."""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import broadcast_shapes, move_to_front


# ------------------------------------------------------------------ reshape
def _reshape_abstract(x, shape):
    shape = tuple(shape)
    if None in x.shape:
        return Aval(tuple(None if d == -1 else d for d in shape), x.dtype)
    total = int(np.prod(x.shape, dtype=np.int64))
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape array of size {total} into shape {shape}")
        shape = tuple(total // known if d == -1 else d for d in shape)
    elif int(np.prod(shape, dtype=np.int64)) != total:
        raise ValueError(f"cannot reshape array of size {total} into shape {shape}")
    return Aval(shape, x.dtype)


def _reshape_vjp(ct, x, shape):
    s = tuple(x.shape)
    if s.count(None) > 1:
        raise NotImplementedError("gradient of reshape of an array with several unknown dims")
    return (bind(reshape_p, ct, shape=tuple(-1 if d is None else d for d in s)),)


def _reshape_batch(args, axes, shape):
    x = move_to_front(args[0], axes[0])
    per = _reshape_abstract(Aval(x.shape[1:], x.dtype), shape).shape
    b = x.shape[0]
    return bind(reshape_p, x, shape=(b if b is not None else -1,) + tuple(
        -1 if d is None else d for d in per)), 0


reshape_p = Primitive("reshape", lambda x, shape: np.reshape(x, shape), _reshape_abstract)
reshape_p.def_vjp(_reshape_vjp)
reshape_p.batch = _reshape_batch


# ------------------------------------------------------------------ transpose
def _transpose_abstract(x, perm):
    return Aval(tuple(x.shape[p] for p in perm), x.dtype)


transpose_p = Primitive("transpose", lambda x, perm: np.transpose(x, perm), _transpose_abstract)
transpose_p.def_vjp(lambda ct, x, perm: (bind(transpose_p, ct, perm=tuple(np.argsort(perm).tolist())),))
transpose_p.batch = lambda args, axes, perm: (
    bind(transpose_p, move_to_front(args[0], axes[0]), perm=(0,) + tuple(p + 1 for p in perm)), 0)


def moveaxis(x, src, dst):
    n = x.ndim
    src, dst = src % n, dst % n
    if src == dst:
        return x
    perm = [i for i in range(n) if i != src]
    perm.insert(dst, src)
    return bind(transpose_p, x, perm=tuple(perm))


# ------------------------------------------------------------------ expand_dims / squeeze
def _expand_abstract(x, axes):
    out = list(x.shape)
    for a in sorted(axes):
        out.insert(a, 1)
    return Aval(out, x.dtype)


def _expand_impl(x, axes):
    return np.expand_dims(x, axes)


expand_dims_p = Primitive("expand_dims", _expand_impl, _expand_abstract)
expand_dims_p.def_vjp(lambda ct, x, axes: (bind(squeeze_p, ct, axes=axes),))
expand_dims_p.batch = lambda args, dims, axes: (
    bind(expand_dims_p, move_to_front(args[0], dims[0]), axes=tuple(a + 1 for a in axes)), 0)


def _squeeze_abstract(x, axes):
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return Aval(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


squeeze_p = Primitive("squeeze", lambda x, axes: np.squeeze(x, axes), _squeeze_abstract)
squeeze_p.def_vjp(lambda ct, x, axes: (bind(expand_dims_p, ct, axes=axes),))
squeeze_p.batch = lambda args, dims, axes: (
    bind(squeeze_p, move_to_front(args[0], dims[0]), axes=tuple(a + 1 for a in axes)), 0)


# ------------------------------------------------------------------ broadcast_to
def _broadcast_abstract(x, shape):
    if len(shape) < len(x.shape) or broadcast_shapes(x.shape, shape) != tuple(shape):
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {tuple(x.shape)} and requested shape {tuple(shape)}")
    return Aval(shape, x.dtype)


def _broadcast_vjp(ct, x, shape):
    from ._util import unbroadcast
    return (unbroadcast(ct, x.shape),)


def _broadcast_batch(args, axes, shape):
    x = move_to_front(args[0], axes[0])
    missing = len(shape) - (x.ndim - 1)
    if missing:
        x = bind(expand_dims_p, x, axes=tuple(range(1, 1 + missing)))
    return bind(broadcast_to_p, x, shape=(x.shape[0],) + tuple(shape)), 0


broadcast_to_p = Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape),
                           _broadcast_abstract)
broadcast_to_p.def_vjp(_broadcast_vjp)
broadcast_to_p.batch = _broadcast_batch


# ------------------------------------------------------------------ concatenate
def _concat_abstract(*xs, axis):
    first = xs[0]
    for x in xs[1:]:
        if len(x.shape) != len(first.shape):
            raise ValueError(
                "all the input array dimensions except for the concatenation axis must match "
                f"exactly, but along dimension 0 ... ranks differ: {first.shape} vs {x.shape}")
        for i, (a, b) in enumerate(zip(first.shape, x.shape)):
            if i != axis and a is not None and b is not None and a != b:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must match "
                    f"exactly, but along dimension {i}, the array at index 0 has size {a} and "
                    f"another has size {b}")
    sizes = [x.shape[axis] for x in xs]
    out = list(first.shape)
    out[axis] = None if None in sizes else sum(sizes)
    return Aval(out, first.dtype)


def _concat_vjp(ct, *xs, axis):
    from .indexing import getitem
    out, start = [], 0
    for x in xs:
        n = x.shape[axis]
        out.append(getitem(ct, (slice(None),) * axis + (slice(start, start + n),)))
        start += n
    return tuple(out)


def _concat_batch(args, axes, axis):
    b = next(a.shape[bd] for a, bd in zip(args, axes) if bd is not None)
    moved = []
    for a, bd in zip(args, axes):
        if bd is None:
            a = bind(broadcast_to_p, bind(expand_dims_p, a, axes=(0,)), shape=(b,) + tuple(a.shape))
        else:
            a = move_to_front(a, bd)
        moved.append(a)
    return bind(concatenate_p, *moved, axis=axis + 1), 0


concatenate_p = Primitive("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
                          _concat_abstract)
concatenate_p.def_vjp(_concat_vjp)
concatenate_p.batch = _concat_batch
