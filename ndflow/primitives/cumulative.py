"""Cumulative (scan) primitives along one axis: cumsum, cumprod, cummax, cummin.

Inputs reach them already in the result dtype (the NumPy layer decides it), so the rules never
promote. `reverse=True` scans from the end; it is what the cumsum VJP needs.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from .sums import repeat_along_batch
from .shape import move_to_front
from ..core.dtypes import I64
from .elementwise import zeros_like_p, mul_p, add_p, ones_like_p, eq_p, select_p, convert_p
from .indexing import iota_p, index_add_p, getitem_p, concatenate_p


def _scan_abstract(x, axis, reverse=False):
    return Aval(x.shape, x.dtype)


def _scan_batch(prim):
    def rule(args, dims, axis, **params):
        return bind(prim, move_to_front(args[0], dims[0]), axis=axis + 1, **params), 0
    return rule


def _flipped(fn):
    # dtype=x.dtype: the rule keeps the dtype (NumPy's own scan widens small integers)
    def impl(x, axis, reverse=False):
        if not reverse:
            return fn(x, axis=axis, dtype=x.dtype)
        return np.flip(fn(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
    return impl


def _along_axis_indices(x, idx, axis):
    """Index arrays (one per axis) that pick x[..., idx, ...] along `axis`: the same gather
    `take_along_axis` does, as the raw arrays a scatter needs."""
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
    arrays = _along_axis_indices(like, idx, axis)
    return bind(index_add_p, bind(zeros_like_p, like), v, *arrays, spec=(("a",),) * like.ndim)


def gather_along_axis(x, idx, axis):
    return bind(getitem_p, x, *_along_axis_indices(x, idx, axis), spec=(("a",),) * x.ndim)


# ------------------------------------------------------------------ cumsum
cumsum_p = Primitive("cumsum", _flipped(np.cumsum), _scan_abstract)
# d cumsum = the scan of the cotangent from the other end
cumsum_p.def_vjp(lambda ct, x, axis, reverse=False: (
    bind(cumsum_p, ct, axis=axis, reverse=not reverse),))
cumsum_p.batch = _scan_batch(cumsum_p)


# ------------------------------------------------------------------ linear recurrences
def _all_front(prim):
    """Batching rule for primitives whose inputs all have the output's shape: every batch axis
    to the front (unbatched operands repeated along it), `axis` one further."""

    def rule(args, dims, axis, **params):
        moved = [move_to_front(x, d) if d is not None else repeat_along_batch(x, args, dims)
                 for x, d in zip(args, dims)]
        return bind(prim, *moved, axis=axis + 1, **params), 0
    return rule


def _linrec_impl(b, a, axis, reverse=False):
    y = np.moveaxis(b, axis, 0).copy()     # (a method: CuPy buffers stay on the device)
    a = np.moveaxis(a, axis, 0)
    n = y.shape[0]
    if reverse:
        for i in range(n - 2, -1, -1):
            y[i] += a[i] * y[i + 1]
    else:
        for i in range(1, n):
            y[i] += a[i] * y[i - 1]
    return np.moveaxis(y, 0, axis)


def _along(x, axis, s):
    return tuple(s if i == axis else ("s", None, None, None) for i in range(x.ndim))


def _shift(x, axis, by):
    """x moved one place along `axis` (by=1: towards the end), a zero entering."""
    edge = bind(zeros_like_p, bind(getitem_p, x, spec=_along(x, axis, ("s", None, 1, None))))
    if by > 0:
        return bind(concatenate_p, edge, bind(getitem_p, x, spec=_along(
            x, axis, ("s", None, -1, None))), axis=axis)
    return bind(concatenate_p, bind(getitem_p, x, spec=_along(x, axis, ("s", 1, None, None))),
                edge, axis=axis)


def _linrec_vjp(u, b, a, out, axis, reverse=False):
    """y = M b is linear in b: gb = M^T u, the recurrence run the other way (its coefficients
    shifted one place); d y / d a_m = (the paths through m) y_{m-1}: ga = shift(y) * gb."""
    w = bind(linrec_p, u, _shift(a, axis, 1 if reverse else -1), axis=axis, reverse=not reverse)
    return w, bind(mul_p, _shift(out, axis, -1 if reverse else 1), w)


# y_i = b_i + a_i y_{i-1} along `axis` (reverse: y_i = b_i + a_i y_{i+1}); a's first (last)
# entry is unused. The exact, division-free form of cumprod's derivatives at every order.
linrec_p = Primitive("linrec", _linrec_impl,
                     lambda b, a, axis, reverse=False: Aval(b.shape, b.dtype))
linrec_p.def_vjp(_linrec_vjp, uses_out=True)
linrec_p.batch = _all_front(linrec_p)


# ------------------------------------------------------------------ cumprod
def _revcumsum(x, axis):
    return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)


def _cumprod_grad_impl(ct, x, out, axis):
    """d out_j / d x_i = prod_{k<=j, k!=i} x_k. Where x has no zero this is out_j / x_i, so the
    gradient is revcumsum(ct * out) / x. Exact with zeros too: before the first zero of a
    slice the quotient is still exact, after it every term vanishes, and at the first zero
    itself the products skip that factor: revcumsum(ct * cumprod(x with that zero -> 1))."""
    zero = x == 0
    first = zero & (np.cumsum(zero, axis=axis) == 1)
    g_first = _revcumsum(ct * np.cumprod(np.where(first, 1, x), axis=axis), axis)
    g_rest = _revcumsum(ct * out, axis) / np.where(zero, 1, x)
    return np.where(first, g_first, np.where(zero, 0, g_rest)).astype(x.dtype, copy=False)


def _cumprod_grad_vjp(v, ct, x, out, axis):
    """The gradient is G = L * R with L_i = prod_{k<i} x_k (a shifted cumprod) and
    R_i = ct_i + x_{i+1} R_{i+1} (a reverse linear recurrence): differentiated in that form,
    which has no division, so second and higher derivatives are exact at zeros too (the fast
    kernel above divides)."""
    one = bind(ones_like_p, bind(getitem_p, x, spec=_along(x, axis, ("s", None, 1, None))))
    t = bind(concatenate_p, one, bind(getitem_p, x, spec=_along(
        x, axis, ("s", None, -1, None))), axis=axis)          # (1, x_0, ..., x_{n-2})
    big_l = bind(cumprod_p, t, axis=axis)
    s = _shift(x, axis, -1)                                     # (x_1, ..., x_{n-1}, 0)
    big_r = bind(linrec_p, ct, s, axis=axis, reverse=True)
    g_ct, g_s = _linrec_vjp(bind(mul_p, v, big_l), ct, s, big_r, axis, reverse=True)
    g_t = bind(cumprod_grad_p, bind(mul_p, v, big_r), t, big_l, axis=axis)
    return g_ct, bind(add_p, _shift(g_s, axis, 1), _shift(g_t, axis, -1)), None


cumprod_grad_p = Primitive("cumprod_grad", _cumprod_grad_impl,
                           lambda ct, x, out, axis: Aval(x.shape, x.dtype))
cumprod_grad_p.def_vjp(_cumprod_grad_vjp)
cumprod_grad_p.batch = _all_front(cumprod_grad_p)

cumprod_p = Primitive("cumprod", lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype),
                      lambda x, axis: Aval(x.shape, x.dtype))
cumprod_p.def_vjp(lambda ct, x, out, axis: (bind(cumprod_grad_p, ct, x, out, axis=axis),),
                  uses_out=True)
cumprod_p.batch = _scan_batch(cumprod_p)


# ------------------------------------------------------------------ cummax / cummin
def _cumext_vjp(prim):
    def vjp(ct, x, out, axis):
        """The cotangent of out_j goes to the element that is the running extremum at j (the
        latest one among ties), found as a running maximum of positions where x == out."""
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
