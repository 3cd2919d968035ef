"""Shape primitives: reshape, transpose, expand_dims, squeeze, broadcast_to (and their forms with
sizes known only at run time), and the batching helpers every family's rules use.
(concatenate, split_like, diagonal and repeat, whose rules gather and scatter, are in
indexing.py.)"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import broadcast_shapes, squeezed_ok, example_rank, squeezed_axis
# (sums binds this module's primitives in its rules, as broadcast_to's gradient binds its sums:
# imported as a module, names looked up when a rule runs; sums.py says more)
from . import sums


# ------------------------------------------------------------------ reshape
# `keep` (batching with an unknown batch size): the first `keep` dims stay, the rest -> shape
def _reshape_abstract(x, shape, keep=0):
    if keep:
        inner = _reshape_abstract(Aval(x.shape[keep:], x.dtype), shape)
        return Aval(tuple(x.shape[:keep]) + inner.shape, x.dtype)
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


def _reshape_vjp(ct, x, shape, keep=0):
    s = tuple(x.shape[keep:])
    if None in s:              # sizes known at run time only (-1 is ambiguous for size 0)
        return (bind(reshape_like_p, ct, x, keep=keep, like_keep=keep),)
    kw = {"keep": keep} if keep else {}
    return (bind(reshape_p, ct, shape=tuple(-1 if d is None else d for d in s), **kw),)


def _reshape_batch(args, axes, shape, keep=0):
    x = move_to_front(args[0], axes[0])
    per = _reshape_abstract(Aval(x.shape[1:], x.dtype), shape, keep).shape
    b = x.shape[0]
    if keep or (b is None and None in per):    # two unknown sizes: keep the batch axis as is
        return bind(reshape_p, x, shape=shape, keep=keep + 1), 0
    return bind(reshape_p, x, shape=(b if b is not None else -1,) + tuple(
        -1 if d is None else d for d in per)), 0


def _reshape_impl(x, shape, keep=0):
    if not keep and type(x) is np.ndarray:    # the method: what np.reshape calls, 5x cheaper
        return x.reshape(shape)
    shape = tuple(shape)
    if keep and -1 in shape:
        # the trailing sizes are known here: resolve -1 ourselves, which NumPy refuses to do
        # for zero-size arrays (a merge of axes of unknown size while tracing)
        rest = int(np.prod(x.shape[keep:], dtype=np.int64))
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known:
            shape = tuple(rest // known if d == -1 else d for d in shape)
    return np.reshape(x, x.shape[:keep] + shape)


reshape_p = Primitive("reshape", _reshape_impl, _reshape_abstract, returns_view=True)
reshape_p.def_vjp(_reshape_vjp)
reshape_p.batch = _reshape_batch


def _reshape_like_batch(args, axes, keep=0, like_keep=0):
    (x, like), (bx, bl) = args, axes
    if bl is not None:
        like, like_keep = move_to_front(like, bl), like_keep + 1
    if bx is None:
        return bind(reshape_like_p, x, like, keep=keep, like_keep=like_keep), None
    return bind(reshape_like_p, move_to_front(x, bx), like, keep=keep + 1, like_keep=like_keep), 0


# x reshaped to like's shape (after like's first `like_keep` dims; x's first `keep` dims stay),
# for shapes known only at run time (the gradient of a reshape with several unknown sizes)
reshape_like_p = Primitive(
    "reshape_like",
    lambda x, like, keep=0, like_keep=0: np.reshape(x, x.shape[:keep] + like.shape[like_keep:]),
    lambda x, like, keep=0, like_keep=0: Aval(tuple(x.shape[:keep]) + tuple(like.shape[like_keep:]),
                                              x.dtype), returns_view=True)
reshape_like_p.def_vjp(lambda g, x, like, keep=0, like_keep=0: (
    bind(reshape_like_p, g, x, keep=keep, like_keep=keep), None))
reshape_like_p.batch = _reshape_like_batch


# ------------------------------------------------------------------ transpose
def _transpose_abstract(x, perm):
    return Aval(tuple(x.shape[p] for p in perm), x.dtype)


def _transpose_impl(x, perm):
    # the method np.transpose calls for an ndarray, without its ~0.4 us of dispatch
    return x.transpose(perm) if type(x) is np.ndarray else np.transpose(x, perm)


transpose_p = Primitive("transpose", _transpose_impl, _transpose_abstract, returns_view=True)
transpose_p.def_vjp(lambda ct, x, perm: (bind(transpose_p, ct, perm=tuple(np.argsort(perm).tolist())),))
@squeezed_ok
def _transpose_batch(args, axes, perm):
    x, d = args[0], axes[0]
    if isinstance(d, tuple):
        units = d[1]
        moved = [p for p in perm if p not in units]
        if moved == sorted(moved):
            # only unit axes move (a row's x.T): the same value, its unit axes elsewhere
            return x, squeezed_axis([i for i, p in enumerate(perm) if p in units])
        x, d = unsqueeze(x, d)
    return bind(transpose_p, move_to_front(x, d), perm=(0,) + tuple(p + 1 for p in perm)), 0


transpose_p.batch = _transpose_batch


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
    if type(x) is np.ndarray:     # a view with unit axes inserted: what expand_dims returns, 8x cheaper
        out = list(x.shape)
        for a in sorted(axes):
            out.insert(a, 1)
        return x.reshape(out)
    return np.expand_dims(x, axes)


expand_dims_p = Primitive("expand_dims", _expand_impl, _expand_abstract, returns_view=True)
expand_dims_p.def_vjp(lambda ct, x, axes: (bind(squeeze_p, ct, axes=axes),))
def _unit_axes_batch(prim):
    """Batch rule of expand_dims / squeeze: no operation at all, only the record of which
    example axes are unit axes the value leaves out (a squeezed value, `_util.squeezed_ok`):
    per-example rows, `expand_dims(x, 0)`, then reach products and elementwise ops with no
    reshape around them. A squeeze of an axis the value holds is a reshape (known sizes, so
    that the compiler merges it with its neighbours) or the op itself."""
    @squeezed_ok
    def rule(args, dims, axes):
        x, d = args[0], dims[0]
        if isinstance(d, tuple):
            units = d[1]
        else:
            x, units = move_to_front(x, d), ()
        rank = example_rank(x, (0, units))
        if prim is expand_dims_p:
            new = sorted(axes)
            old = [i for i in range(rank + len(new)) if i not in new]
            return x, squeezed_axis(sorted(set(new) | {old[u] for u in units}))
        if set(axes) <= set(units):
            left = [u - sum(1 for a in axes if a < u) for u in units if u not in axes]
            return x, squeezed_axis(left)
        x, d = unsqueeze(x, (0, units)) if units else (x, 0)
        shifted = tuple(a + 1 for a in axes)
        out = prim.abstract(x, axes=shifted).shape
        if None in tuple(x.shape) or None in tuple(out):
            return bind(prim, x, axes=shifted), 0
        return bind(reshape_p, x, shape=tuple(out)), 0
    return rule


expand_dims_p.batch = _unit_axes_batch(expand_dims_p)


def _squeeze_abstract(x, axes):
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return Aval(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


def _squeeze_impl(x, axes):
    # the method np.squeeze calls for an ndarray, without its ~0.4 us of dispatch
    return x.squeeze(axes) if type(x) is np.ndarray else np.squeeze(x, axes)


squeeze_p = Primitive("squeeze", _squeeze_impl, _squeeze_abstract, returns_view=True)
squeeze_p.def_vjp(lambda ct, x, axes: (bind(expand_dims_p, ct, axes=axes),))
squeeze_p.batch = _unit_axes_batch(squeeze_p)


# ------------------------------------------------------------------ broadcast_to
def _broadcast_abstract(x, shape):
    if len(shape) < len(x.shape) or broadcast_shapes(x.shape, shape) != tuple(shape):
        raise ValueError(f"operands could not be broadcast together with remapped shapes "
                         f"[original->remapped]: {tuple(x.shape)} and requested shape {tuple(shape)}")
    lead = len(shape) - len(x.shape)
    for i, d in enumerate(shape):
        if d is None and (i < lead or x.shape[i - lead] == 1):
            raise ValueError(f"broadcast_to: size {i} of the requested shape {tuple(shape)} is "
                             f"unknown while tracing and the operand {tuple(x.shape)} cannot "
                             f"give it (vectorized_map over a batch of unknown size needs every "
                             f"operand batched here)")
    return Aval(shape, x.dtype)


def _broadcast_impl(x, shape):
    if None in shape:   # an unknown size while tracing: the operand's own size there
        lead = len(shape) - x.ndim
        shape = tuple(x.shape[i - lead] if d is None else d for i, d in enumerate(shape))
    return np.broadcast_to(x, shape)


def _broadcast_vjp(ct, x, shape):
    return (sums.unbroadcast(ct, x),)


def _broadcast_batch(args, axes, shape):
    x = move_to_front(args[0], axes[0])
    missing = len(shape) - (x.ndim - 1)
    if missing:
        x = bind(expand_dims_p, x, axes=tuple(range(1, 1 + missing)))
    return bind(broadcast_to_p, x, shape=(x.shape[0],) + tuple(shape)), 0


broadcast_to_p = Primitive("broadcast_to", _broadcast_impl, _broadcast_abstract, returns_view=True)
broadcast_to_p.def_vjp(_broadcast_vjp)
broadcast_to_p.batch = _broadcast_batch


# ------------------------------------------------------------------ sizes known at run time
# `reshape_dynamic` and `broadcast_dynamic` take the new shape as an int operand (its entries
# computed when the graph runs, e.g. from `nf.shape`); `static` holds what is known while
# tracing (an int, or None). `keep`: leading axes of x that stay (a batch axis).
def _dyn_shape(shape, static):
    return tuple(int(d) for d in np.asarray(shape).reshape(-1))


def _reshape_dynamic_impl(x, shape, static, keep=0):
    new = _dyn_shape(shape, static)
    if any(d < -1 for d in new):
        raise ValueError(f"cannot reshape array of size {x.size} into shape {new}: sizes must "
                         f"not be negative")
    return np.reshape(x, x.shape[:keep] + new)


def _reshape_dynamic_abstract(x, shape, static, keep=0):
    static = tuple(static)
    inner = tuple(x.shape[keep:])
    if None not in inner and static.count(None) == 1:
        # the one size unknown while tracing follows from the others (checked when it runs)
        total = int(np.prod(inner, dtype=np.int64))
        known = int(np.prod([d for d in static if d is not None], dtype=np.int64))
        if known and total % known == 0:
            static = tuple(total // known if d is None else d for d in static)
    return Aval(tuple(x.shape[:keep]) + static, x.dtype)


reshape_dynamic_p = Primitive("reshape_dynamic", _reshape_dynamic_impl, _reshape_dynamic_abstract,
                              returns_view=True)
reshape_dynamic_p.def_vjp(lambda ct, x, shape, static, keep=0: (
    bind(reshape_like_p, ct, x, keep=keep, like_keep=keep), None))


def _reshape_dynamic_batch(args, axes, static, keep=0):
    if axes[1] is not None:
        raise ValueError("reshape: the new shape differs between the examples of "
                         "vectorized_map (each example's result would have its own shape)")
    x = move_to_front(args[0], axes[0])
    return bind(reshape_dynamic_p, x, args[1], static=static, keep=keep + 1), 0


reshape_dynamic_p.batch = _reshape_dynamic_batch


def _broadcast_dynamic_impl(x, shape, static, keep=0):
    new = _dyn_shape(shape, static)
    return np.broadcast_to(x, x.shape[:keep] + new)


def _broadcast_dynamic_abstract(x, shape, static, keep=0):
    inner = tuple(x.shape[keep:])
    if len(inner) > len(static):
        raise ValueError(f"broadcast_to: cannot broadcast an array of shape {inner} to a shape "
                         f"of {len(static)} dimensions")
    lead = len(static) - len(inner)
    for i, d in enumerate(inner):
        s = static[lead + i]
        if d is not None and s is not None and d != 1 and d != s:
            raise ValueError(f"operands could not be broadcast together with remapped shapes "
                             f"[original->remapped]: {inner} and requested shape {static}")
    return Aval(tuple(x.shape[:keep]) + tuple(static), x.dtype)


def _broadcast_dynamic_vjp(ct, x, shape, static, keep=0):
    return (sums.unbroadcast(ct, x), None)


def _broadcast_dynamic_batch(args, axes, static, keep=0):
    if axes[1] is not None:
        raise ValueError("broadcast_to: the shape differs between the examples of "
                         "vectorized_map (each example's result would have its own shape)")
    x = move_to_front(args[0], axes[0])
    missing = len(static) - (x.ndim - 1 - keep)
    if missing:
        x = bind(expand_dims_p, x, axes=tuple(range(1 + keep, 1 + keep + missing)))
    return bind(broadcast_dynamic_p, x, args[1], static=static, keep=keep + 1), 0


broadcast_dynamic_p = Primitive("broadcast_dynamic", _broadcast_dynamic_impl,
                                _broadcast_dynamic_abstract, returns_view=True)
broadcast_dynamic_p.def_vjp(_broadcast_dynamic_vjp)
broadcast_dynamic_p.batch = _broadcast_dynamic_batch


# ------------------------------------------------------------------ batching helpers
# The rules of every family move batch axes and restore squeezed unit axes with these (they bind
# this module's primitives). A squeezed batched value: `_util.squeezed_ok`.
def move_to_front(x, bd):
    if bd is None or bd == 0:
        return x
    return moveaxis(x, bd, 0)


# ------------------------------------------------------------------ batch axes outermost in memory
# NumPy's loops visit an array in the order of its strides, and a sum or a product rounds in
# the order it is visited. An example of a batch is visited as NumPy would visit it alone only
# when the batch axes are the outermost in memory; a batch axis moved to the front from
# elsewhere (vmap's in_axes=1) or a transposed batch is not, so NumPy would sum across the
# examples elementwise (one order) where each example alone is summed pairwise (another).
def lead_outermost(shape, strides, lead):
    """Whether the first `lead` axes are outermost: each at least as far apart as everything
    after it spans (axes of size 1 aside)."""
    span = 0
    for n, st in zip(shape[lead:], strides[lead:]):
        if n > 1:
            span += abs(st) * (n - 1)
    for n, st in reversed(list(zip(shape[:lead], strides[:lead]))):
        if n > 1:
            if abs(st) <= span:
                return False
            span += abs(st) * (n - 1)
    return True


def _batch_outermost_impl(x, lead):
    if not isinstance(x, np.ndarray) or x.flags.c_contiguous or x.size == 0 or \
            lead_outermost(x.shape, x.strides, lead):
        return x
    # a copy that keeps each example's own layout (NumPy's order 'K' of one example), the
    # examples one after another
    one = np.empty_like(x[(0,) * lead], order="K")
    step = one.nbytes
    lead_strides = []
    for n in reversed(x.shape[:lead]):
        lead_strides.insert(0, step)
        step *= n
    buf = np.empty(step // x.itemsize, x.dtype)
    y = np.lib.stride_tricks.as_strided(buf, x.shape, tuple(lead_strides) + one.strides)
    np.copyto(y, x)
    return y


batch_outermost_p = Primitive("batch_outermost", _batch_outermost_impl,
                              lambda x, lead: Aval(x.shape, x.dtype), returns_view=True)
batch_outermost_p.def_vjp(lambda ct, x, lead: (ct,))
batch_outermost_p.batch = lambda args, dims, lead: (
    bind(batch_outermost_p, move_to_front(args[0], dims[0]), lead=lead + 1), 0)


def example_order(x, bd):
    """x (batched along `bd`, not squeezed) with its batch axis in front and outermost in
    memory, for a rule whose result rounds in NumPy's order of visiting (sums, products).
    Already in front, it is: vectorized_map puts its inputs in order (`batch_outermost`), and
    the operations give their results in C order."""
    if bd is None or bd == 0:
        return x
    return bind(batch_outermost_p, move_to_front(x, bd), lead=1)


def unsqueeze(x, ax):
    """(value, batch axis) with the unit axes of a squeezed value back: the ordinary layout."""
    if not isinstance(ax, tuple):
        return x, ax
    units = ax[1]
    shape = list(x.shape)
    for u in units:
        shape.insert(u + 1, 1)
    if None in shape:
        return bind(expand_dims_p, x, axes=tuple(u + 1 for u in units)), 0
    return bind(reshape_p, x, shape=tuple(shape)), 0


def unsqueeze_all(args, axes):
    pairs = [unsqueeze(a, ax) for a, ax in zip(args, axes)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def to_squeezed(args, axes):
    """The operands of an elementwise op in the squeezed layout of its squeezed operands, or
    None where they have no common one (then the rule works on the ordinary layout). Other
    operands lose their unit axes at those positions with a reshape (unbatched constants fold);
    an operand that is not 1 there (a broadcast along a unit axis) keeps the ordinary layout."""
    units = rank = None
    for a, ax in zip(args, axes):
        if isinstance(ax, tuple):
            r = example_rank(a, ax)
            if units is None:
                units, rank = ax[1], r
            elif ax[1] != units or r != rank:
                return None
    if units is None:
        return None
    out = []
    for a, ax in zip(args, axes):
        if isinstance(ax, tuple):
            out.append(a)
            continue
        if ax is not None:
            a = move_to_front(a, ax)
        own = tuple(a.shape[1:]) if ax is not None else tuple(a.shape)
        lead = rank - len(own)
        if lead < 0:
            return None
        drop = [u - lead for u in units if u >= lead]
        if any(own[d] != 1 for d in drop):
            return None
        if ax is None:
            if drop:
                keep = tuple(d for i, d in enumerate(own) if i not in drop)
                if None in keep:
                    return None
                a = bind(reshape_p, a, shape=keep)
            out.append(a)
            continue
        # a batched operand: its aligned example shape without the unit positions
        keep = (a.shape[0],) + tuple(d for i, d in enumerate((1,) * lead + own)
                                     if i not in units)
        if keep != tuple(a.shape):
            if None in keep:
                return None
            a = bind(reshape_p, a, shape=keep)
        out.append(a)
    return out, (0, tuple(units))


def align_batched(args, axes):
    """Move every batch axis to 0 and give batched operands the same per-example rank, so that
    NumPy broadcasting of the inner values matches per-example broadcasting."""
    rank = max(a.ndim - (bd is not None) for a, bd in zip(args, axes))
    out = []
    for a, bd in zip(args, axes):
        if bd is None:
            out.append(a)
            continue
        a = move_to_front(a, bd)
        missing = rank - (a.ndim - 1)
        if missing:
            a = bind(expand_dims_p, a, axes=tuple(range(1, 1 + missing)))
        out.append(a)
    return out


# ------------------------------------------------------------------ bitcast
# `x.view(dtype)`: the same bytes read as another dtype, a view as NumPy's. Of another itemsize
# the last axis is resized, and must be contiguous (NumPy's error where it is not: also for an
# example of a vectorized_map, whose strides are its slice's).
_BITCAST_0D = "Changing the dtype of a 0d array is only supported if the itemsize is unchanged"
_BITCAST_LAST = ("When changing to a larger dtype, its size must be a divisor of the total size "
                 "in bytes of the last axis of the array.")


def _bitcast_abstract(x, dtype):
    dtype, old = np.dtype(dtype), np.dtype(x.dtype)
    if dtype.itemsize == old.itemsize:
        return Aval(x.shape, dtype)
    if len(x.shape) == 0:
        raise ValueError(_BITCAST_0D)
    last = x.shape[-1]
    if last is not None:
        nbytes = last * old.itemsize
        if nbytes % dtype.itemsize:
            raise ValueError(_BITCAST_LAST)
        last = nbytes // dtype.itemsize
    return Aval(tuple(x.shape[:-1]) + (last,), dtype)


bitcast_p = Primitive("bitcast", lambda x, dtype: x.view(dtype), _bitcast_abstract,
                      returns_view=True)
# the bits of a value, not a function of it: no derivative (as tf.bitcast has none)
bitcast_p.def_vjp(lambda ct, x, dtype: (None,))
bitcast_p.def_jvp(lambda tangents, x, dtype: None)


def _bitcast_batch(args, axes, dtype):
    x, d = args[0], axes[0]
    if np.dtype(dtype).itemsize != np.dtype(x.dtype).itemsize:
        x, d = move_to_front(x, d), 0       # the batch axis out of the resized last axis
    return bind(bitcast_p, x, dtype=dtype), d


bitcast_p.batch = _bitcast_batch
