"""The sums every family's rules need: the reduction factory, `reduce_sum`, `sum_to` (NumPy's
broadcasting undone with sizes known only at run time), and the rule helpers built on them,
`unbroadcast` and `repeat_along_batch`. The other reductions are in reduction.py.

elementwise, shape and this module bind each other's primitives in their rules (add's gradient
sums, the sum's gradient broadcasts and adds): they import one another as modules and look the
names up when a rule runs, so that any of them may be imported first.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import squeezed_ok, squeezed_axis
from . import elementwise as E, shape as S


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_abstract(x, axes, keepdims):
    return Aval(_reduced_shape(x.shape, axes, keepdims), x.dtype)


def _reduce_batch(prim, ordered=False):
    """`ordered`: the result rounds in the order NumPy visits the elements (a float sum or
    product), so each example must be laid out as it would be alone (`S.example_order`)."""
    @squeezed_ok
    def rule(args, dims, **params):
        x, d = args[0], dims[0]
        if isinstance(d, tuple):
            units, axes = d[1], params["axes"]
            if prim is reduce_sum_p and axes and set(axes) <= set(units):
                # a sum over unit axes only: each example's sum of one element, which NumPy
                # computes as 0 + x (-0.0 becomes +0.0); a 0-d zero on x's device
                zero = bind(E.zeros_like_p, bind(reduce_sum_p, x, axes=tuple(range(x.ndim)),
                                                 keepdims=False))
                left = units if params["keepdims"] else \
                    [u - sum(1 for a in axes if a < u) for u in units if u not in axes]
                return bind(E.add_p, x, zero), squeezed_axis(left)
            x, d = S.unsqueeze(x, d)
        if ordered and np.dtype(x.dtype).kind in "fc":
            x = S.example_order(x, d)
        else:
            x = S.move_to_front(x, d)
        params["axes"] = tuple(a + 1 for a in params["axes"])
        return bind(prim, x, **params), 0
    return rule


def keep_axes(ct, axes, keepdims):
    """Re-insert reduced axes (size 1) into a reduction's cotangent."""
    if keepdims or not axes:
        return ct
    return bind(S.expand_dims_p, ct, axes=tuple(sorted(axes)))


def broadcast_like(ct, x):
    if tuple(ct.shape) == tuple(x.shape):
        return ct
    if None in x.shape:
        return bind(E.add_p, bind(E.zeros_like_p, x), ct)
    return bind(S.broadcast_to_p, ct, shape=tuple(x.shape))


def reduction(name, impl, vjp=None, abstract=_reduce_abstract, ordered=False):
    p = Primitive(name, impl, abstract)
    if vjp:
        p.def_vjp(vjp, uses_out=getattr(vjp, "uses_out", False))
    p.batch = _reduce_batch(p, ordered)
    return p


def _sum_vjp(ct, x, axes, keepdims):
    return (broadcast_like(keep_axes(ct, axes, keepdims), x),)


# dtype=x.dtype: the NumPy layer already cast to the result dtype; NumPy would widen small ints
def _sum_impl(x, axes, keepdims):
    if type(x) is np.ndarray:     # what np.sum calls for an ndarray, without its 2 us of dispatch
        return np.add.reduce(x, axis=axes, dtype=x.dtype, keepdims=keepdims)
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


reduce_sum_p = reduction("reduce_sum", _sum_impl, _sum_vjp, ordered=True)
reduce_sum_p.vjp_reads = ()      # the gradient is the cotangent broadcast to x's shape


# ------------------------------------------------------------------ add_reduce (NumPy's loop order)
# NumPy's sum rounds as its loop visits the elements, and two of its arguments change that
# order. A cast (`dtype=` other than the array's, or float16's mean) goes through buffers of
# 8192 elements, each summed pairwise and added to the total, which is not the pairwise sum of
# the cast array; a `where=` mask sums each run of selected elements and adds it, starting from
# `initial`, which is not the sum of the array with zeros in place of the others. So these sums
# are one primitive that calls NumPy's `add.reduce` with the same arguments, and no pass fuses
# it or replaces its loop. x, then the mask (bool, x's rank) when there is one.
def _add_reduce_impl(x, *w, axes, keepdims, dtype, initial):
    # (where= and initial= only when given: not every array library's sum takes them)
    kw = {"where": w[0]} if w else {}
    if initial is not None:
        kw["initial"] = initial
    return np.sum(x, axis=axes, dtype=dtype, keepdims=keepdims, **kw)


def _add_reduce_abstract(x, *w, axes, keepdims, dtype, initial):
    return Aval(_reduced_shape(x.shape, axes, keepdims), np.dtype(dtype))


def _add_reduce_vjp(ct, x, *w, axes, keepdims, dtype, initial):
    """The cotangent spread over x (zero where the mask leaves an element out), then cast
    back to x's dtype as the cast's own rule does (no gradient for integers and bools)."""
    src = np.dtype(x.dtype)
    if src.kind not in "fc" and src.name != "bfloat16":
        return (None,) * (1 + len(w))
    g = broadcast_like(keep_axes(ct, axes, keepdims), x)
    if w:
        g = bind(E.select_p, w[0], g, bind(E.zeros_like_p, g))
    if src.kind != "c" and np.dtype(g.dtype).kind == "c":
        g = bind(E.real_p, g)
    if np.dtype(g.dtype) != src:
        g = bind(E.convert_p, g, dtype=src)
    return (g,) + (None,) * len(w)


def masked_reduction_batch(prim):
    """The batching rule of a reduction of x under a mask (x's rank; reduce_prod_where, and
    add_reduce when it has one): the batch axis in front of both, each example laid out as
    alone (`S.example_order`); an unbatched x is spread over the batch of its mask (a select
    of x with itself), since the mask broadcasts to x, never x to it."""
    def rule(args, dims, **params):
        x, *w = (S.example_order(a, d) if d is not None else bind(S.expand_dims_p, a, axes=(0,))
                 for a, d in zip(args, dims))
        if dims[0] is None:
            x = bind(E.select_p, w[0], x, x)
        params["axes"] = tuple(a + 1 for a in params["axes"])
        return bind(prim, x, *w, **params), 0
    return rule


add_reduce_p = Primitive("add_reduce", _add_reduce_impl, _add_reduce_abstract)
add_reduce_p.def_vjp(_add_reduce_vjp, reads=(1,))
add_reduce_p.batch = masked_reduction_batch(add_reduce_p)


# ------------------------------------------------------------------ sum_to (unbroadcast at run time)
def _sum_to_axes(ct_shape, like_shape, keep, like_keep):
    body, target = ct_shape[keep:], like_shape[like_keep:]
    lead = len(body) - len(target)
    return tuple(range(keep, keep + lead)) + tuple(
        keep + lead + i for i, d in enumerate(target) if d == 1 and body[lead + i] != 1), target


def _sum_to_impl(ct, like, keep=0, like_keep=0):
    axes, target = _sum_to_axes(ct.shape, like.shape, keep, like_keep)
    # dtype=ct.dtype: unbroadcasting keeps the dtype (NumPy's sum widens small integers)
    r = np.sum(ct, axis=axes, keepdims=True, dtype=ct.dtype) if axes else ct
    return np.reshape(r, ct.shape[:keep] + tuple(target))


def _sum_to_vjp(g, ct, like, keep=0, like_keep=0):
    """Broadcast back: g, with 1s for the summed leading axes, plus zeros shaped like ct."""
    lead = (len(ct.shape) - keep) - (len(like.shape) - like_keep)
    if lead:
        g = bind(S.expand_dims_p, g, axes=tuple(range(keep, keep + lead)))
    return bind(E.add_p, bind(E.zeros_like_p, ct), g), None


def _sum_to_batch(args, axes, keep=0, like_keep=0):
    (ct, like), (bc, bl) = args, axes
    if bl is not None:
        like, like_keep = S.move_to_front(like, bl), like_keep + 1
    if bc is None:
        return bind(sum_to_p, ct, like, keep=keep, like_keep=like_keep), None
    ct = S.example_order(ct, bc) if np.dtype(ct.dtype).kind in "fc" else S.move_to_front(ct, bc)
    return bind(sum_to_p, ct, like, keep=keep + 1, like_keep=like_keep), 0


# ct summed down to like's shape (its last dims after the first `like_keep`; ct's first `keep`
# dims stay): NumPy's broadcasting undone with the sizes known only at run time
sum_to_p = Primitive("sum_to", _sum_to_impl, lambda ct, like, keep=0, like_keep=0: Aval(
    tuple(ct.shape[:keep]) + tuple(like.shape[like_keep:]), ct.dtype), returns_view=True)
sum_to_p.def_vjp(_sum_to_vjp)
sum_to_p.batch = _sum_to_batch


# ------------------------------------------------------------------ rule helpers built on the sums
def unbroadcast(ct, like):
    """Sum `ct` down to the shape of `like` (the primal, or a shape): undo NumPy broadcasting.
    The one place this happens. Where a size is unknown while tracing, whether it was
    broadcast (a 1 at run time) is decided at run time (`sum_to`)."""
    if ct is None:
        return None
    shape = tuple(like) if isinstance(like, (tuple, list)) else tuple(like.shape)
    cs = tuple(ct.shape)
    if cs == shape and None not in shape:
        return ct                     # (the common case, first)
    if len(cs) >= len(shape) and any(d is None and c != 1
                                     for d, c in zip(shape, cs[len(cs) - len(shape):])):
        if isinstance(like, (tuple, list)):
            raise NotImplementedError("unbroadcast to a shape with unknown sizes needs the array")
        return bind(sum_to_p, ct, like)
    if cs == shape:
        return ct
    lead = len(cs) - len(shape)
    if lead:
        ct = bind(reduce_sum_p, ct, axes=tuple(range(lead)), keepdims=False)
        cs = ct.shape
    ones = tuple(i for i, d in enumerate(shape) if d == 1 and cs[i] != 1)
    if ones:
        ct = bind(reduce_sum_p, ct, axes=ones, keepdims=True)
    return ct


def repeat_along_batch(x, args, dims):
    """The unbatched `x` given a leading batch axis as long as the batched operands' one, also
    when that length is only known at run time (vectorized_map inside nf.function with a None
    batch size): then zeros shaped (b, 1, ..., 1) taken from a batched operand are added."""
    ref, rbd = next((a, bd) for a, bd in zip(args, dims) if bd is not None)
    b = ref.shape[rbd]
    xe = bind(S.expand_dims_p, x, axes=(0,))
    if b is not None and None not in tuple(x.shape):
        return bind(S.broadcast_to_p, xe, shape=(b,) + tuple(x.shape))
    r = S.move_to_front(ref, rbd)
    z = bind(E.zeros_like_p, r)
    if r.ndim > 1:
        z = bind(reduce_sum_p, z, axes=tuple(range(1, r.ndim)), keepdims=False)
    if z.dtype != x.dtype:
        z = bind(E.convert_p, z, dtype=x.dtype)
    if x.ndim:
        z = bind(S.expand_dims_p, z, axes=tuple(range(1, 1 + x.ndim)))
    return bind(E.add_p, z, xe)
