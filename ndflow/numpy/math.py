"""Elementwise mathematics, comparisons and logic: NumPy's ufuncs, as `tnp.ufunc` objects.

Each ufunc is `make_ufunc(numpy_ufunc, fn)` where `fn` computes it from operands already
promoted to NumPy's loop dtypes, with primitives (so tapes, tracing and batching apply); the
eager fast path calls NumPy's ufunc itself (see ufuncs.py).
"""
import math as _math

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind
from ..core import dtypes as _dt
from ..primitives.misc import stop_gradient_p
from ..primitives import elementwise as E, elementwise_extra as X, reduction as R, cumulative as C
from ._outarg import write_out as _write_out
from ..primitives import linalg as L
from ._core import as_operand, asarray, ufunc_operands, copy
from ._composites import select as _select, matmul as _mm
from .indexing import nonzero
from .manipulation import concatenate, expand_dims, moveaxis, squeeze
from .ufuncs import (make_ufunc, REDUCE_SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN,
                     REDUCE_ALL, REDUCE_ANY, SCAN_SUM, SCAN_PROD, SCAN_MAX, SCAN_MIN)

_LN2 = _math.log(2.0)


def _finish(res, out, ufunc=None, same_size=False):
    """The result written into `out` as a ufunc's (NumPy implements the callers with one)."""
    return _write_out(res, out, broadcast=True, casting="same_kind", ufunc=ufunc,
                     same_size=same_size)


def _p1(prim):
    return lambda x: bind(prim, x)


def _p2(prim):
    return lambda x, y: bind(prim, x, y)


def _unary(ufunc, prim, **kw):
    return make_ufunc(ufunc, _p1(prim), prim=prim, **kw)


def _binary(ufunc, prim, **kw):
    return make_ufunc(ufunc, _p2(prim), prim=prim, **kw)


def _zeros(x):
    return bind(E.zeros_like_p, x)


def _const_like(x, v):
    return bind(E.full_like_p, x, fill_value=v)


# ------------------------------------------------------------------ arithmetic
add = _binary(np.add, E.add_p, reduce=REDUCE_SUM, accumulate=SCAN_SUM)
subtract = _binary(np.subtract, E.sub_p)
multiply = _binary(np.multiply, E.mul_p, reduce=REDUCE_PROD, accumulate=SCAN_PROD)
true_divide = _binary(np.true_divide, E.div_p)
divide = true_divide
floor_divide = _binary(np.floor_divide, E.floordiv_p)
remainder = _binary(np.remainder, E.rem_p)
mod = remainder
fmod = _binary(np.fmod, X.fmod_p)
power = _binary(np.power, E.pow_p)
pow = power
float_power = _binary(np.float_power, E.pow_p)   # the loop is float64/complex128 only
maximum = _binary(np.maximum, E.max_p, reduce=REDUCE_MAX, accumulate=SCAN_MAX)
minimum = _binary(np.minimum, E.min_p, reduce=REDUCE_MIN, accumulate=SCAN_MIN)
arctan2 = _binary(np.arctan2, E.arctan2_p)
atan2 = arctan2


def _hypot_reduce(x, axes, keepdims):
    """max|x| * sqrt(sum((x / max|x|)**2)): no overflow, any (unknown) size."""
    a = bind(E.abs_p, x)
    padded = a
    for ax in axes:     # a zero along each reduced axis: the maximum of an empty slice is 0
        slab = bind(E.zeros_like_p, bind(R.reduce_sum_p, padded, axes=(ax,), keepdims=True))
        padded = concatenate([padded, slab], axis=ax)
    m = bind(R.reduce_max_p, padded, axes=axes, keepdims=True)
    zero = bind(E.eq_p, m, _zeros(m))
    safe = bind(E.select_p, zero, _const_like(m, 1), m)
    q = bind(E.div_p, a, safe)
    ssq = bind(R.reduce_sum_p, bind(E.mul_p, q, q), axes=axes, keepdims=True)
    r = bind(E.mul_p, m, bind(E.sqrt_p, ssq))
    r = bind(E.select_p, bind(E.isinf_p, m), m, r)
    if not keepdims:
        r = squeeze(r, axes)
    return r


hypot = _binary(np.hypot, X.hypot_p, reduce=_hypot_reduce)
bitwise_and = _binary(np.bitwise_and, E.bitwise_and_p)
bitwise_or = _binary(np.bitwise_or, E.bitwise_or_p)
bitwise_xor = _binary(np.bitwise_xor, E.bitwise_xor_p)
left_shift = _binary(np.left_shift, E.left_shift_p)
bitwise_left_shift = left_shift
right_shift = _binary(np.right_shift, E.right_shift_p)
bitwise_right_shift = right_shift
nextafter = _binary(np.nextafter, E.nextafter_p)
gcd = _binary(np.gcd, X.gcd_p)
lcm = _binary(np.lcm, X.lcm_p)
ldexp = _binary(np.ldexp, X.ldexp_p)
equal = _binary(np.equal, E.eq_p)
not_equal = _binary(np.not_equal, E.ne_p)
less = _binary(np.less, E.lt_p)
less_equal = _binary(np.less_equal, E.le_p)
greater = _binary(np.greater, E.gt_p)
greater_equal = _binary(np.greater_equal, E.ge_p)
logical_and = _binary(np.logical_and, E.logical_and_p, reduce=REDUCE_ALL, accumulate=SCAN_MIN)
logical_or = _binary(np.logical_or, E.logical_or_p, reduce=REDUCE_ANY, accumulate=SCAN_MAX)
logical_xor = _binary(np.logical_xor, E.logical_xor_p)


def _fminmax(prim, pick):
    def fn(x, y):
        """The NaN-ignoring extremum: the other operand where one is NaN."""
        r = bind(prim, x, y)
        if x.dtype.kind not in "fc" and x.dtype != _dt.BFLOAT16:
            return r
        r = bind(E.select_p, bind(E.isnan_p, y), x, r)
        return bind(E.select_p, bind(E.isnan_p, x), y, r)
    return fn


def _nan_ignoring_reduce(prim, fill):
    def red(x, axes, keepdims):
        if x.dtype.kind not in "fc" and x.dtype != _dt.BFLOAT16:
            return bind(prim, x, axes=axes, keepdims=keepdims)
        nan = bind(E.isnan_p, x)
        r = bind(prim, bind(E.select_p, nan, _const_like(x, fill), x), axes=axes,
                 keepdims=keepdims)
        allnan = bind(R.reduce_all_p, nan, axes=axes, keepdims=keepdims)
        return bind(E.select_p, allnan, _const_like(r, np.nan), r)
    return red


def _nan_ignoring_scan(prim, fill):
    def scan(x, axis):
        if x.dtype.kind not in "fc" and x.dtype != _dt.BFLOAT16:
            return bind(prim, x, axis=axis)
        nan = bind(E.isnan_p, x)
        r = bind(prim, bind(E.select_p, nan, _const_like(x, fill), x), axis=axis)
        allnan = bind(C.cummin_p, nan, axis=axis)
        return bind(E.select_p, allnan, _const_like(r, np.nan), r)
    return scan


fmax = make_ufunc(np.fmax, _fminmax(E.max_p, E.gt_p),
                  reduce=_nan_ignoring_reduce(R.reduce_max_p, -np.inf),
                  accumulate=_nan_ignoring_scan(C.cummax_p, -np.inf))
fmin = make_ufunc(np.fmin, _fminmax(E.min_p, E.lt_p),
                  reduce=_nan_ignoring_reduce(R.reduce_min_p, np.inf),
                  accumulate=_nan_ignoring_scan(C.cummin_p, np.inf))


def _logsumexp_reduce(exp_p, log_p):
    def red(x, axes, keepdims):
        """Shifted by the maximum (0 where it is infinite, so -inf stays -inf and inf, inf)."""
        m = bind(R.reduce_max_p, x, axes=axes, keepdims=True)
        m = bind(E.select_p, bind(E.isfinite_p, m), m, _zeros(m))
        s = bind(R.reduce_sum_p, bind(exp_p, bind(E.sub_p, x, m)), axes=axes, keepdims=True)
        r = bind(E.add_p, bind(log_p, s), m)
        if not keepdims:
            r = squeeze(r, axes)
        return r
    return red


def _bound(prim):
    def fn(x, y):
        return bind(prim, x, y)
    return fn


logaddexp = make_ufunc(np.logaddexp, _bound(X.logaddexp_p),
                       reduce=_logsumexp_reduce(E.exp_p, E.log_p))
logaddexp2 = make_ufunc(np.logaddexp2, _bound(X.logaddexp2_p),
                        reduce=_logsumexp_reduce(E.exp2_p, E.log2_p))


def _copysign(x, y):
    """|x| with the sign bit of y."""
    a = bind(E.abs_p, x)
    return bind(E.select_p, bind(E.signbit_p, y), bind(E.neg_p, a), a)


copysign = make_ufunc(np.copysign, _copysign)


def _heaviside(x, h0):
    """0 below zero, 1 above, h0 at zero; NaN stays NaN."""
    zero = _zeros(x)
    one = _const_like(x, 1)
    above = bind(E.select_p, bind(E.gt_p, x, zero), one, h0)
    r = bind(E.select_p, bind(E.lt_p, x, zero), zero, above)
    return bind(E.select_p, bind(E.isnan_p, x), x, r)


heaviside = make_ufunc(np.heaviside, _heaviside)


def _divmod(x, y):
    return bind(E.floordiv_p, x, y), bind(E.rem_p, x, y)


divmod = make_ufunc(np.divmod, _divmod)

# ------------------------------------------------------------------ unary
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
rint = _unary(np.rint, E.rint_p)
conjugate = _unary(np.conjugate, E.conj_p)
conj = conjugate
logical_not = _unary(np.logical_not, E.logical_not_p)
invert = _unary(np.invert, E.invert_p)
bitwise_not = invert
bitwise_invert = invert
bitwise_count = _unary(np.bitwise_count, X.bitwise_count_p)
isnan = _unary(np.isnan, E.isnan_p)
isinf = _unary(np.isinf, E.isinf_p)
isfinite = _unary(np.isfinite, E.isfinite_p)
signbit = _unary(np.signbit, E.signbit_p)
spacing = _unary(np.spacing, X.spacing_p)


def _square(x):
    return bind(E.mul_p, x, x)


square = make_ufunc(np.square, _square)


def _scale(num, den):
    # NumPy divides the constants in the operand's float type (float32: 180f / pi_f, one ulp
    # away from float32(180 / pi)); its float16 loop multiplies in float32, rounding once
    def scale(x):
        if x.dtype == np.float16:
            wide = bind(E.convert_p, x, dtype=np.dtype(np.float32))
            return bind(E.convert_p, scale(wide), dtype=x.dtype)
        t = np.float32 if x.dtype == np.float32 else np.float64
        return bind(E.mul_p, x, _const_like(x, t(num) / t(den)))
    return scale


deg2rad = make_ufunc(np.deg2rad, _scale(np.pi, 180.0))
radians = make_ufunc(np.radians, _scale(np.pi, 180.0))
rad2deg = make_ufunc(np.rad2deg, _scale(180.0, np.pi))
degrees = make_ufunc(np.degrees, _scale(180.0, np.pi))


def _modf(x):
    """(fractional part, integral part), both with the sign of x: modf(-2.0) = (-0.0, -2.0),
    modf(inf) = (0.0, inf)."""
    t = bind(E.trunc_p, x)
    f = bind(E.sub_p, x, t)
    # a zero fraction takes x's sign (-0.0 for -2.0 and -0.0) as -(t - x), which keeps the
    # derivative 1 that x - t has (a copysign would give 0 at x = 0)
    neg_zero = bind(E.logical_and_p, bind(E.eq_p, f, _zeros(f)), bind(E.signbit_p, x))
    f = bind(E.select_p, neg_zero, bind(E.neg_p, bind(E.sub_p, t, x)), f)
    return bind(E.select_p, bind(E.isinf_p, x), _copysign(_zeros(x), x), f), t


modf = make_ufunc(np.modf, _modf)
frexp = make_ufunc(np.frexp, lambda x: bind(X.frexp_p, x))


def _isnat(x):
    raise TypeError("ufunc 'isnat' is only defined for np.datetime64 and np.timedelta64.")


# ndflow arrays hold no datetimes, so isnat always raises NumPy's TypeError (from its dtype
# resolution, before `_isnat` is reached)
isnat = make_ufunc(np.isnat, _isnat)


def fix(x, out=None):
    """Round toward zero, as `numpy.fix` (not a ufunc in NumPy either)."""
    return trunc(x, out=out)


def real(val):
    """The real part, as `numpy.real` (real arrays are returned as they are)."""
    a = asarray(val)
    return bind(E.real_p, a) if a.dtype.kind == "c" else a


def imag(val):
    """The imaginary part, as `numpy.imag` (read-only zeros for real arrays, as NumPy's)."""
    return bind(E.imag_p, asarray(val))


def iscomplexobj(x):
    """Whether x has a complex dtype."""
    return asarray(x).dtype.kind == "c"


def round(a, decimals=0, out=None):
    """Round to `decimals` places, halves to even, as `numpy.round` (also `around`); zero
    gradient almost everywhere.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.round(tnp.asarray([0.5, 1.5, 2.5]))
    array([0., 2., 2.], dtype=float64)
    >>> tnp.round(tnp.asarray([1.234, 5.678]), 1)
    array([1.2, 5.7], dtype=float64)
    """
    a = asarray(a)
    if decimals == 0:
        return _finish(rint(a) if a.dtype.kind in "fc" or a.dtype == _dt.BFLOAT16 else a, out,
                       np.rint, True)
    f = 10.0 ** decimals
    if a.dtype.kind in "iu":
        if decimals >= 0:
            return a
        f = 10 ** (-decimals)
        return _finish(multiply(floor_divide(add(a, f // 2), f), f), out, np.multiply, True)
    return _finish(true_divide(rint(multiply(a, f)), f), out, np.true_divide, True)


around = round


def where_(condition, x=None, y=None, /):
    """`numpy.where`: choose from `x` where `condition`, else `y` (broadcasting, NumPy's dtype
    promotion); with one argument, `nonzero`. Differentiable in `x` and `y` (each gets the
    gradient where it was chosen).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> x = tnp.asarray([-2., 3.])
    >>> tnp.where(x > 0, x, 0.)
    array([0., 3.], dtype=float64)
    """
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return _select(condition, x, y)


where_.composite = _select.composite


_NO_BOUND = object()


def _clip_bounds(a_min, a_max, min, max):
    """NumPy 2's clip arguments: both of `a_min`, `a_max` (positional or by keyword) or
    neither, then the Array API's keywords `min`, `max` (each optional)."""
    if a_min is _NO_BOUND and a_max is _NO_BOUND:
        return (None if min is _NO_BOUND else min), (None if max is _NO_BOUND else max)
    if a_min is _NO_BOUND or a_max is _NO_BOUND:
        raise TypeError("clip() missing 1 required positional argument: "
                        f"{'a_min' if a_min is _NO_BOUND else 'a_max'!r}")
    if min is not _NO_BOUND or max is not _NO_BOUND:
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` "
                         "are provided is forbidden.")
    return a_min, a_max


def clip(a, a_min=_NO_BOUND, a_max=_NO_BOUND, out=None, *, min=_NO_BOUND, max=_NO_BOUND,
         **kw):
    """`numpy.clip` as maximum/minimum, so the gradient is 1 inside the interval, 0 outside;
    with neither bound, a copy of `a`. As NumPy 2: `clip(a, lo, hi)` (both bounds, None for
    none) or the Array API's keywords `clip(a, min=lo, max=hi)`; `clip(a, lo)` is NumPy's
    TypeError. A Python-int bound outside an integer array's range that cannot clip (a lower
    bound below it, an upper one above) is ignored, as NumPy.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.clip(tnp.asarray([-2., 0.5, 3.]), -1, 1)
    array([-1. ,  0.5,  1. ], dtype=float64)
    """
    min, max = _clip_bounds(a_min, a_max, min, max)
    r = asarray(a) if type(a) is not ndarray else a
    if r.dtype.kind in "iu":
        info = np.iinfo(r.dtype)
        if type(min) is int and min < info.min:
            min = None
        if type(max) is int and max > info.max:
            max = None
    if min is None and max is None:
        return _finish(copy(r), out, np.clip)
    if min is not None:
        r = maximum(r, min)
    if max is not None:
        r = minimum(r, max)
    return _finish(r, out, np.clip)


# ------------------------------------------------------------------ generalized ufuncs
def _matmul(x1, x2, /, out=None, **kwargs):
    # (no out=None keyword: a call without keywords is the composite's cheapest)
    return _mm(x1, x2, **kwargs) if out is None else _mm(x1, x2, out=out, **kwargs)


def _gufunc_operands(np_ufunc, x1, x2):
    return ufunc_operands(np_ufunc, as_operand(x1), as_operand(x2))


def _vecdot(x1, x2, /, out=None, *, axis=-1, **kwargs):
    """sum(conj(x1) * x2) over `axis`, broadcasting the other axes (matmul of rows and
    columns, so it runs as one contraction)."""
    a, b = _gufunc_operands(np.vecdot, x1, x2)
    a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    if a.dtype.kind == "c":
        a = conjugate(a)
    r = squeeze(_mm(expand_dims(a, -2), expand_dims(b, -1)), (-2, -1))
    return _finish(r, out, getattr(np, "vecdot", None))


def _matvec(x1, x2, /, out=None, **kwargs):
    """x1 @ x2 for stacks of matrices x1 (..., m, n) and vectors x2 (..., n)."""
    a, b = _gufunc_operands(np.matvec, x1, x2)
    if a.ndim < 2 or b.ndim < 1:
        raise ValueError(f"matvec: x1 must be at least 2-d and x2 at least 1-d, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    return _finish(squeeze(_mm(a, expand_dims(b, -1)), -1), out, getattr(np, "matvec", None))


def _vecmat(x1, x2, /, out=None, **kwargs):
    """conj(x1) @ x2 for stacks of vectors x1 (..., n) and matrices x2 (..., n, m)."""
    a, b = _gufunc_operands(np.vecmat, x1, x2)
    if a.ndim < 1 or b.ndim < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-d and x2 at least 2-d, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype.kind == "c":
        a = conjugate(a)
    return _finish(squeeze(_mm(expand_dims(a, -2), b), -2), out, getattr(np, "vecmat", None))


# (prim: the eager door's plain route runs np.matmul, the composite's kernel, and its tape
# lane binds the primitive, the composition of operands NumPy's loop takes as they are)
matmul = make_ufunc(np.matmul, _matmul, prim=L.matmul_p)
vecdot = make_ufunc(np.vecdot, _vecdot)
matvec = make_ufunc(np.matvec, _matvec)
vecmat = make_ufunc(np.vecmat, _vecmat)


def _set_part(x, part, value):
    """`x.real = value` / `x.imag = value`, as NumPy: the part is written in place (views see
    it), the value cast to the part's dtype; a real array's `real` is the array itself and it
    has no imaginary part to set. On every path: the write goes through the part's view, whose
    inverse (core/mutation.py's VIEWS) rebuilds x exactly from the written part."""
    if x.dtype.kind != "c" and part == "imag":
        raise TypeError("array does not have imaginary part to set")
    getattr(x, part)[...] = value
