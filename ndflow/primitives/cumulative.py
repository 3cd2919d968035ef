"""Cumulative (scan) primitives along one axis: cumsum, cumprod, cummax, cummin.

Inputs reach them already in the result dtype (the NumPy layer decides it), so the rules never
promote. `reverse=True` scans from the end; it is what the cumsum VJP needs.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import move_to_front


def _scan_abstract(x, axis, reverse=False):
    return Aval(x.shape, x.dtype)


def _scan_batch(prim):
    def rule(args, dims, axis, **params):
        return bind(prim, move_to_front(args[0], dims[0]), axis=axis + 1, **params), 0
    return rule


def _flipped(fn):
    def impl(x, axis, reverse=False):
        if not reverse:
            return fn(x, axis=axis)
        return np.flip(fn(np.flip(x, axis), axis=axis), axis)
    return impl


def _along_axis_indices(x, idx, axis):
    """Index arrays (one per axis) that pick x[..., idx, ...] along `axis`: the same gather
    `take_along_axis` does, as the raw arrays a scatter needs."""
    from .indexing import iota_p
    arrays = []
    for i in range(x.ndim):
        if i == axis:
            arrays.append(idx)
        else:
            arrays.append(bind(iota_p, x, axis=i))
    return arrays


def scatter_add_along_axis(like, idx, v, axis):
    """zeros_like(like) with v added at positions idx along `axis` (the transpose of a
    take_along_axis gather)."""
    from .indexing import index_add_p
    from .elementwise import zeros_like_p
    arrays = _along_axis_indices(like, idx, axis)
    return bind(index_add_p, bind(zeros_like_p, like), v, *arrays, spec=(("a",),) * like.ndim)


def gather_along_axis(x, idx, axis):
    from .indexing import getitem_p
    return bind(getitem_p, x, *_along_axis_indices(x, idx, axis), spec=(("a",),) * x.ndim)


# ------------------------------------------------------------------ cumsum
cumsum_p = Primitive("cumsum", _flipped(np.cumsum), _scan_abstract)
# d cumsum = the scan of the cotangent from the other end
cumsum_p.def_vjp(lambda ct, x, axis, reverse=False: (
    bind(cumsum_p, ct, axis=axis, reverse=not reverse),))
cumsum_p.batch = _scan_batch(cumsum_p)


# ------------------------------------------------------------------ cumprod
def _cumprod_vjp(ct, x, out, axis):
    """d out_j / d x_i = prod_{k<=j, k!=i} x_k. Where x has no zero this is out_j / x_i, so the
    gradient is revcumsum(ct * out) / x. Exact with zeros too: before the first zero of a
    slice the quotient is still exact, after it every term vanishes, and at the first zero
    itself the products skip that factor: revcumsum(ct * cumprod(x with that zero -> 1))."""
    from .elementwise import eq_p, select_p, convert_p, zeros_like_p, ones_like_p, div_p, mul_p
    from ..core.dtypes import I64
    zero = bind(eq_p, x, bind(zeros_like_p, x))
    nzeros = bind(cumsum_p, bind(convert_p, zero, dtype=I64), axis=axis)
    first = bind(select_p, zero, bind(eq_p, nzeros, bind(ones_like_p, nzeros)), zero)
    ones = bind(ones_like_p, x)
    out_skip = bind(cumprod_p, bind(select_p, first, ones, x), axis=axis)
    g_first = bind(cumsum_p, bind(mul_p, ct, out_skip), axis=axis, reverse=True)
    g_rest = bind(div_p, bind(cumsum_p, bind(mul_p, ct, out), axis=axis, reverse=True),
                  bind(select_p, zero, ones, x))
    zeros = bind(zeros_like_p, g_rest)
    return (bind(select_p, first, g_first, bind(select_p, zero, zeros, g_rest)),)


cumprod_p = Primitive("cumprod", lambda x, axis: np.cumprod(x, axis=axis),
                      lambda x, axis: Aval(x.shape, x.dtype))
cumprod_p.def_vjp(_cumprod_vjp, uses_out=True)
cumprod_p.batch = _scan_batch(cumprod_p)


# ------------------------------------------------------------------ cummax / cummin
def _cumext_vjp(prim):
    def vjp(ct, x, out, axis):
        """The cotangent of out_j goes to the element that is the running extremum at j (the
        latest one among ties), found as a running maximum of positions where x == out."""
        from .elementwise import eq_p, select_p, zeros_like_p, convert_p, add_p
        from .indexing import iota_p
        from ..core.dtypes import I64
        pos = bind(add_p, bind(zeros_like_p, bind(convert_p, x, dtype=I64)),
                   bind(iota_p, x, axis=axis))
        hit = bind(eq_p, x, out)
        idx = bind(cummax_p, bind(select_p, hit, pos, bind(zeros_like_p, pos)), axis=axis)
        return (scatter_add_along_axis(x, idx, ct, axis),)
    return vjp


cummax_p = Primitive("cummax", lambda x, axis: np.maximum.accumulate(x, axis=axis),
                     lambda x, axis: Aval(x.shape, x.dtype))
cummin_p = Primitive("cummin", lambda x, axis: np.minimum.accumulate(x, axis=axis),
                     lambda x, axis: Aval(x.shape, x.dtype))
for _p in (cummax_p, cummin_p):
    _p.def_vjp(_cumext_vjp(_p), uses_out=True)
    _p.batch = _scan_batch(_p)
