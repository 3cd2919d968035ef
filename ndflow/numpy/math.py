"""Elementwise mathematics, comparisons and logic (NumPy's ufuncs)."""
import numpy as np

from ..core.ndarray import ndarray, _wrap
from ..core.primitive import bind
from ..core.state import STATE, GLOBAL
from ..core import dtypes as _dt
from ..primitives import elementwise as E
from ._core import ufunc_operands, as_operand, fast_operands, asarray


def _finish(res, out):
    if out is None:
        return res
    if isinstance(out, tuple):
        out = out[0]
    out[...] = res
    return out


def _unary(ufunc, prim):
    def f(x, /, out=None, *, where=True, dtype=None, **kwargs):
        if GLOBAL.fast and out is None and dtype is None and where is True:
            b = fast_operands(x)
            if b is not None:
                return _wrap(ufunc(b[0]))
        (a,) = ufunc_operands(ufunc, as_operand(x) if type(x) is not ndarray else x)
        if dtype is not None:
            a = bind(E.convert_p, a, dtype=_dt.canonical(dtype))
        r = bind(prim, a)
        if where is not True:
            r = where_(where, r, out if out is not None else r)
        return _finish(r, out)
    f.__name__ = ufunc.__name__
    f.__doc__ = f"Elementwise `{ufunc.__name__}`, as `numpy.{ufunc.__name__}`; differentiable."
    return f


def _binary(ufunc, prim):
    def f(x1, x2, /, out=None, *, where=True, dtype=None, **kwargs):
        if GLOBAL.fast and out is None and dtype is None and where is True:
            if type(x1) is ndarray and type(x2) is ndarray and x1._dev is None and x2._dev is None:
                return _wrap(ufunc(x1._v, x2._v))
            b = fast_operands(x1, x2)
            if b is not None:
                return _wrap(ufunc(b[0], b[1]))
        a, b = ufunc_operands(ufunc, as_operand(x1), as_operand(x2))
        if dtype is not None:
            d = _dt.canonical(dtype)
            a, b = bind(E.convert_p, a, dtype=d), bind(E.convert_p, b, dtype=d)
        r = bind(prim, a, b)
        if where is not True:
            r = where_(where, r, out if out is not None else r)
        return _finish(r, out)
    f.__name__ = ufunc.__name__
    f.__doc__ = f"Elementwise `{ufunc.__name__}`, as `numpy.{ufunc.__name__}`; differentiable."
    return f


add = _binary(np.add, E.add_p)
subtract = _binary(np.subtract, E.sub_p)
multiply = _binary(np.multiply, E.mul_p)
true_divide = _binary(np.true_divide, E.div_p)
divide = true_divide
floor_divide = _binary(np.floor_divide, E.floordiv_p)
remainder = _binary(np.remainder, E.rem_p)
mod = remainder
power = _binary(np.power, E.pow_p)
pow = power
maximum = _binary(np.maximum, E.max_p)
minimum = _binary(np.minimum, E.min_p)
arctan2 = _binary(np.arctan2, E.arctan2_p)
atan2 = arctan2
bitwise_and = _binary(np.bitwise_and, E.bitwise_and_p)
bitwise_or = _binary(np.bitwise_or, E.bitwise_or_p)
bitwise_xor = _binary(np.bitwise_xor, E.bitwise_xor_p)
left_shift = _binary(np.left_shift, E.left_shift_p)
right_shift = _binary(np.right_shift, E.right_shift_p)
nextafter = _binary(np.nextafter, E.nextafter_p)
equal = _binary(np.equal, E.eq_p)
not_equal = _binary(np.not_equal, E.ne_p)
less = _binary(np.less, E.lt_p)
less_equal = _binary(np.less_equal, E.le_p)
greater = _binary(np.greater, E.gt_p)
greater_equal = _binary(np.greater_equal, E.ge_p)
logical_and = _binary(np.logical_and, E.logical_and_p)
logical_or = _binary(np.logical_or, E.logical_or_p)
logical_xor = _binary(np.logical_xor, E.logical_xor_p)

negative = _unary(np.negative, E.neg_p)
positive = _unary(np.positive, E.positive_p)
exp = _unary(np.exp, E.exp_p)
exp2 = _unary(np.exp2, E.exp2_p)
expm1 = _unary(np.expm1, E.expm1_p)
log = _unary(np.log, E.log_p)
log2 = _unary(np.log2, E.log2_p)
log10 = _unary(np.log10, E.log10_p)
log1p = _unary(np.log1p, E.log1p_p)
sqrt = _unary(np.sqrt, E.sqrt_p)
cbrt = _unary(np.cbrt, E.cbrt_p)
sin = _unary(np.sin, E.sin_p)
cos = _unary(np.cos, E.cos_p)
tan = _unary(np.tan, E.tan_p)
arcsin = _unary(np.arcsin, E.arcsin_p)
arccos = _unary(np.arccos, E.arccos_p)
arctan = _unary(np.arctan, E.arctan_p)
sinh = _unary(np.sinh, E.sinh_p)
cosh = _unary(np.cosh, E.cosh_p)
tanh = _unary(np.tanh, E.tanh_p)
arcsinh = _unary(np.arcsinh, E.arcsinh_p)
arccosh = _unary(np.arccosh, E.arccosh_p)
arctanh = _unary(np.arctanh, E.arctanh_p)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
reciprocal = _unary(np.reciprocal, E.reciprocal_p)
absolute = _unary(np.absolute, E.abs_p)
abs = absolute
fabs = _unary(np.fabs, E.abs_p)   # floats only: integers give float64, as NumPy
sign = _unary(np.sign, E.sign_p)
floor = _unary(np.floor, E.floor_p)
ceil = _unary(np.ceil, E.ceil_p)
trunc = _unary(np.trunc, E.trunc_p)
fix = trunc
rint = _unary(np.rint, E.rint_p)
conjugate = _unary(np.conjugate, E.conj_p)
conj = conjugate
logical_not = _unary(np.logical_not, E.logical_not_p)
invert = _unary(np.invert, E.invert_p)
bitwise_not = invert
bitwise_invert = invert
isnan = _unary(np.isnan, E.isnan_p)
isinf = _unary(np.isinf, E.isinf_p)
isfinite = _unary(np.isfinite, E.isfinite_p)
signbit = _unary(np.signbit, E.signbit_p)


def square(x, /, out=None, **kw):
    """x * x, as `numpy.square`."""
    if STATE.fast and out is None:
        b = fast_operands(x)
        if b is not None:
            return _wrap(np.square(b[0]))
    (a,) = ufunc_operands(np.square, as_operand(x))
    return _finish(bind(E.mul_p, a, a), out)


def real(val):
    a = asarray(val)
    return bind(E.real_p, a) if a.dtype.kind == "c" else a


def imag(val):
    a = asarray(val)
    return bind(E.imag_p, a) if a.dtype.kind == "c" else bind(E.zeros_like_p, a)


def iscomplexobj(x):
    return asarray(x).dtype.kind == "c"


def divmod(x1, x2, /):
    return floor_divide(x1, x2), remainder(x1, x2)


def round(a, decimals=0, out=None):
    """Round half to even, as `numpy.round`; zero gradient almost everywhere."""
    a = asarray(a)
    if decimals == 0:
        return _finish(rint(a) if a.dtype.kind in "fc" or a.dtype == _dt.BFLOAT16 else a, out)
    f = 10.0 ** decimals
    if a.dtype.kind in "iu":
        if decimals >= 0:
            return a
        f = 10 ** (-decimals)
        return _finish(multiply(floor_divide(add(a, f // 2), f), f), out)
    return _finish(true_divide(rint(multiply(a, f)), f), out)


around = round


def where_(condition, x=None, y=None, /):
    """`numpy.where`: choose from `x` where `condition`, else `y`; with one argument, `nonzero`."""
    if x is None and y is None:
        from .indexing import nonzero
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    c = asarray(condition)
    if c.dtype != _dt.BOOL:
        c = not_equal(c, 0)
    xo, yo = as_operand(x), as_operand(y)
    if STATE.fast and type(xo) is ndarray and type(yo) is ndarray and c._dev is None \
            and xo._dev is None and yo._dev is None:
        return _wrap(np.where(c._v, xo._v, yo._v))
    d = _dt.result_type(xo, yo)
    xo = _cast_operand(xo, d)
    yo = _cast_operand(yo, d)
    return bind(E.select_p, c, xo, yo)


def _cast_operand(o, d):
    from ._core import _scalar
    if type(o) is not ndarray:
        return _scalar(o, d)
    return o if o.dtype == d else bind(E.convert_p, o, dtype=d)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kw):
    """`numpy.clip` as maximum/minimum, so the gradient is 1 inside the interval, 0 outside."""
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if lo is None and hi is None:
        raise ValueError("One of max or min must be given")
    r = asarray(a) if type(a) is not ndarray else a
    if lo is not None:
        r = maximum(r, lo)
    if hi is not None:
        r = minimum(r, hi)
    return _finish(r, out)
