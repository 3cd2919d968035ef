"""Reductions: sum, max, min, prod, argmax/argmin, any/all."""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ..core.dtypes import BOOL, I64
from ._util import move_to_front, squeezed_ok, unsqueeze, squeezed_axis
from .cumulative import cumprod_p
from .elementwise import add_p, zeros_like_p, eq_p, convert_p, ones_like_p
from .indexing import getitem_p
from .shape import expand_dims_p, broadcast_to_p, concatenate_p


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_abstract(x, axes, keepdims):
    return Aval(_reduced_shape(x.shape, axes, keepdims), x.dtype)


def _reduce_batch(prim):
    @squeezed_ok
    def rule(args, dims, **params):
        x, d = args[0], dims[0]
        if isinstance(d, tuple):
            units, axes = d[1], params["axes"]
            if prim is reduce_sum_p and axes and set(axes) <= set(units):
                # a sum over unit axes only: each example's sum of one element, which NumPy
                # computes as 0 + x (-0.0 becomes +0.0); a 0-d zero on x's device
                zero = bind(zeros_like_p, bind(reduce_sum_p, x, axes=tuple(range(x.ndim)),
                                               keepdims=False))
                left = units if params["keepdims"] else \
                    [u - sum(1 for a in axes if a < u) for u in units if u not in axes]
                return bind(add_p, x, zero), squeezed_axis(left)
            x, d = unsqueeze(x, d)
        x = move_to_front(x, d)
        params["axes"] = tuple(a + 1 for a in params["axes"])
        return bind(prim, x, **params), 0
    return rule


def keep_axes(ct, axes, keepdims):
    """Re-insert reduced axes (size 1) into a reduction's cotangent."""
    if keepdims or not axes:
        return ct
    return bind(expand_dims_p, ct, axes=tuple(sorted(axes)))


def broadcast_like(ct, x):
    if tuple(ct.shape) == tuple(x.shape):
        return ct
    if None in x.shape:
        return bind(add_p, bind(zeros_like_p, x), ct)
    return bind(broadcast_to_p, ct, shape=tuple(x.shape))


def reduction(name, impl, vjp=None, abstract=_reduce_abstract):
    p = Primitive(name, impl, abstract)
    if vjp:
        p.def_vjp(vjp, uses_out=getattr(vjp, "uses_out", False))
    p.batch = _reduce_batch(p)
    return p


def _sum_vjp(ct, x, axes, keepdims):
    return (broadcast_like(keep_axes(ct, axes, keepdims), x),)


def _extremum_vjp(ct, x, out, axes, keepdims):
    """The gradient goes to the extremal elements, split evenly between ties."""
    out = keep_axes(out, axes, keepdims)
    mask = bind(convert_p, bind(eq_p, x, out), dtype=np.dtype(x.dtype))
    count = bind(reduce_sum_p, mask, axes=axes, keepdims=True)
    return (keep_axes(ct, axes, keepdims) * mask / count,)


_extremum_vjp.uses_out = True


def _along(axis, ndim, s):
    return tuple(s if i == axis else ("s", None, None, None) for i in range(ndim))


def _exclusive_cumprod(x, axis, reverse=False):
    """prod_{k<i} x_k (prod_{k>i} with reverse) along `axis`, with no division: a shifted
    cumprod, so zeros in x give exact values and exact derivatives."""
    if reverse:
        x = bind(getitem_p, x, spec=_along(axis, x.ndim, ("s", None, None, -1)))
    ones = bind(ones_like_p, bind(getitem_p, x, spec=_along(axis, x.ndim, ("s", None, 1, None))))
    head = bind(getitem_p, x, spec=_along(axis, x.ndim, ("s", None, -1, None)))
    r = bind(cumprod_p, bind(concatenate_p, ones, head, axis=axis), axis=axis)
    if reverse:
        r = bind(getitem_p, r, spec=_along(axis, x.ndim, ("s", None, None, -1)))
    return r


def _prod_vjp(ct, x, axes, keepdims):
    """d prod / d x_i = the product of the other elements, formed without dividing by x_i (exact
    at zeros: one zero gets the product of the rest, the others 0). Over several axes the
    chain rule through one axis at a time: prod(x) = prod_rest(prod_last(x))."""
    ct = keep_axes(ct, axes, keepdims)
    if not axes:
        return (ct,)
    *rest, last = sorted(axes)
    if rest:
        y = bind(reduce_prod_p, x, axes=(last,), keepdims=True)
        ct = _prod_vjp(ct, y, tuple(rest), True)[0]
    others = _exclusive_cumprod(x, last) * _exclusive_cumprod(x, last, reverse=True)
    return (ct * others,)

# dtype=x.dtype: the NumPy layer already cast to the result dtype; NumPy would widen small ints
def _sum_impl(x, axes, keepdims):
    if type(x) is np.ndarray:     # what np.sum calls for an ndarray, without its 2 us of dispatch
        return np.add.reduce(x, axis=axes, dtype=x.dtype, keepdims=keepdims)
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


reduce_sum_p = reduction("reduce_sum", _sum_impl, _sum_vjp)
reduce_sum_p.vjp_reads = ()      # the gradient is the cotangent broadcast to x's shape
def _extremum_impl(ufunc, name):
    reduce = ufunc.reduce

    def impl(x, axes, keepdims):
        if type(x) is np.ndarray:     # the reduction np.max/np.min call, without their dispatch
            return reduce(x, axes, None, None, keepdims)
        return getattr(np, name)(x, axis=axes, keepdims=keepdims)
    return impl


reduce_max_p = reduction("reduce_max", _extremum_impl(np.maximum, "max"), _extremum_vjp)
reduce_min_p = reduction("reduce_min", _extremum_impl(np.minimum, "min"), _extremum_vjp)
reduce_prod_p = reduction("reduce_prod",
                          lambda x, axes, keepdims: np.prod(x, axis=axes, keepdims=keepdims,
                                                            dtype=x.dtype), _prod_vjp)
_nograd = lambda ct, x, **kw: (None,)  # noqa: E731
reduce_any_p = reduction("reduce_any", lambda x, axes, keepdims: np.any(x, axis=axes, keepdims=keepdims),
                         _nograd, lambda x, axes, keepdims: Aval(_reduced_shape(x.shape, axes, keepdims), BOOL))
reduce_all_p = reduction("reduce_all", lambda x, axes, keepdims: np.all(x, axis=axes, keepdims=keepdims),
                         _nograd, lambda x, axes, keepdims: Aval(_reduced_shape(x.shape, axes, keepdims), BOOL))


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
        g = bind(expand_dims_p, g, axes=tuple(range(keep, keep + lead)))
    return bind(add_p, bind(zeros_like_p, ct), g), None


def _sum_to_batch(args, axes, keep=0, like_keep=0):
    (ct, like), (bc, bl) = args, axes
    if bl is not None:
        like, like_keep = move_to_front(like, bl), like_keep + 1
    if bc is None:
        return bind(sum_to_p, ct, like, keep=keep, like_keep=like_keep), None
    return bind(sum_to_p, move_to_front(ct, bc), like, keep=keep + 1, like_keep=like_keep), 0


# ct summed down to like's shape (its last dims after the first `like_keep`; ct's first `keep`
# dims stay): NumPy's broadcasting undone with the sizes known only at run time
sum_to_p = Primitive("sum_to", _sum_to_impl, lambda ct, like, keep=0, like_keep=0: Aval(
    tuple(ct.shape[:keep]) + tuple(like.shape[like_keep:]), ct.dtype), returns_view=True)
sum_to_p.def_vjp(_sum_to_vjp)
sum_to_p.batch = _sum_to_batch


def _arg_abstract(x, axis, keepdims):
    return Aval(_reduced_shape(x.shape, (axis % len(x.shape),), keepdims), I64)


def _arg_batch(prim):
    def rule(args, axes, axis, keepdims):
        x = move_to_front(args[0], axes[0])
        return bind(prim, x, axis=axis % (x.ndim - 1) + 1, keepdims=keepdims), 0
    return rule


argmax_p = Primitive("argmax", lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims),
                     _arg_abstract)
argmin_p = Primitive("argmin", lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims),
                     _arg_abstract)
for _p in (argmax_p, argmin_p):
    _p.def_vjp(lambda ct, x, axis, keepdims: (None,))
    _p.batch = _arg_batch(_p)
