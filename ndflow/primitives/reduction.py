"""Reductions: max, min, prod, argmax/argmin, any/all. The sum (`reduce_sum`, `sum_to`) and the
reduction factory live in sums.py, below the other families' rules that need them; they are
re-exported here for the layers above."""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ..core.dtypes import BOOL, I64
from .cumulative import cumprod_p
from .elementwise import eq_p, convert_p, ones_like_p, select_p, zeros_like_p
from .indexing import getitem_p, concatenate_p
from .shape import move_to_front
from .sums import _reduced_shape, keep_axes, masked_reduction_batch, reduction, reduce_sum_p
from .sums import sum_to_p, add_reduce_p  # noqa: F401  (re-exported: R.* above the primitives)


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
                                                            dtype=x.dtype), _prod_vjp,
                          ordered=True)


# A product over the elements a boolean mask selects, as NumPy's prod(where=) forms it: the
# masked elements are skipped, not multiplied by the identity. For complex values the two
# differ in the sign of zeros ((a + bj)(1 + 0j) can turn an imaginary -0 into +0), so the NumPy
# layer takes this one for complex results; real ones multiply by 1 exactly.
def _prod_where_impl(x, w, axes, keepdims):
    return np.prod(x, axis=axes, keepdims=keepdims, dtype=x.dtype, where=w)


def _prod_where_abstract(x, w, axes, keepdims):
    return Aval(_reduced_shape(x.shape, axes, keepdims), x.dtype)


def _prod_where_vjp(ct, x, w, axes, keepdims):
    """The gradient of the product of where(w, x, 1), zero where w leaves an element out."""
    (g,) = _prod_vjp(ct, bind(select_p, w, x, bind(ones_like_p, x)), axes, keepdims)
    return bind(select_p, w, g, bind(zeros_like_p, g)), None


reduce_prod_where_p = Primitive("reduce_prod_where", _prod_where_impl, _prod_where_abstract)
reduce_prod_where_p.def_vjp(_prod_where_vjp)
reduce_prod_where_p.batch = masked_reduction_batch(reduce_prod_where_p)
_nograd = lambda ct, x, **kw: (None,)  # noqa: E731
reduce_any_p = reduction("reduce_any", lambda x, axes, keepdims: np.any(x, axis=axes, keepdims=keepdims),
                         _nograd, lambda x, axes, keepdims: Aval(_reduced_shape(x.shape, axes, keepdims), BOOL))
reduce_all_p = reduction("reduce_all", lambda x, axes, keepdims: np.all(x, axis=axes, keepdims=keepdims),
                         _nograd, lambda x, axes, keepdims: Aval(_reduced_shape(x.shape, axes, keepdims), BOOL))


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
