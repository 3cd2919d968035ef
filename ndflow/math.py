"""`nf.math`: TensorFlow's `tf.math` names over ndflow.numpy.

Each function is a thin composition of ndflow.numpy (and `ndflow.scipy.special`) functions, so
it differentiates, traces and vectorizes. Arguments and defaults are TensorFlow's (`x`, `y`,
`axis`, `keepdims`, `name=None`); Python data becomes TensorFlow's dtypes (floats float32, ints
int32) and arrays keep theirs. What differs from TensorFlow: mixed dtypes promote as in NumPy
where TensorFlow raises, and integer inputs of the floating functions (`sqrt`, `exp`, ...) give
float64 where TensorFlow refuses them.

    >>> import ndflow as nf
    >>> nf.math.reduce_logsumexp([0., 0.])
    array(0.6931472, dtype=float32)
"""
import importlib

import numpy as np

from . import numpy as tnp
from . import nn as _nn
from .nn import l2_normalize  # noqa: F401
from .autodiff.forward import stop_gradient
from .compat import (_tensor, _operand, _axis, abs, add_n, argmax, argmin, exp, log,  # noqa
                     maximum, minimum, reduce_all, reduce_any, reduce_max, reduce_mean,
                     reduce_min, reduce_prod, reduce_sum, sqrt, square)
from .array_ops import top_k  # noqa: F401
from .debugging import _check_index_range
from .scipy import special as _special

__all__ = [
    # elementwise, one argument
    "abs", "acos", "acosh", "angle", "asin", "asinh", "atan", "atanh", "bessel_i0e",
    "bessel_i1e", "ceil", "conj", "cos", "cosh", "digamma", "erf", "erfc", "erfinv", "exp",
    "expm1", "floor", "imag", "is_finite", "is_inf", "is_nan", "lgamma", "log", "log1p",
    "log_sigmoid", "logical_not", "ndtri", "negative", "real", "reciprocal",
    "reciprocal_no_nan", "rint", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "softplus",
    "softsign", "sqrt", "square", "tan", "tanh",
    # elementwise, two or more arguments
    "add", "atan2", "betainc", "divide", "divide_no_nan", "equal", "floordiv", "floormod",
    "greater", "greater_equal", "igamma", "igammac", "less", "less_equal", "logical_and",
    "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply", "multiply_no_nan",
    "nextafter", "not_equal", "polygamma", "pow", "scalar_mul", "squared_difference",
    "subtract", "truediv", "truncatemod", "xdivy", "xlog1py", "xlogy", "zeta",
    # reductions and scans
    "accumulate_n", "add_n", "argmax", "argmin", "count_nonzero", "cumprod", "cumsum",
    "cumulative_logsumexp", "reduce_all", "reduce_any", "reduce_euclidean_norm",
    "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
    "reduce_std", "reduce_sum", "reduce_variance",
    # along an axis
    "confusion_matrix", "is_non_decreasing", "is_strictly_increasing", "l2_normalize",
    "lbeta", "log_softmax", "polyval", "segment_mean", "segment_sum", "softmax", "top_k",
    "unsorted_segment_mean", "unsorted_segment_sum",
]


# ------------------------------------------------------------------ elementwise
def _unary(fn, name, what, example=None):
    def f(x, name=None):
        return fn(_tensor(x))
    f.__name__ = f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = (f"{what}, elementwise, as `tf.math.{name}`.\n\nPython data becomes float32 "
                 f"(TensorFlow's dtype); arrays keep their dtype.\n")
    if example:
        f.__doc__ += (f"\nExamples\n--------\n>>> import ndflow as nf\n>>> nf.math.{name}"
                      f"{example[0]}\n{example[1]}\n")
    return f


def _binary(fn, name, what, example=None):
    def f(x, y, name=None):
        return fn(_operand(x), _operand(y))
    f.__name__ = f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = (f"{what}, elementwise with broadcasting, as `tf.math.{name}`.\n\nPython "
                 f"scalars take the other operand's dtype; lists become TensorFlow's dtypes "
                 f"(float32, int32); mixed dtypes promote as in NumPy (TensorFlow raises).\n")
    if example:
        f.__doc__ += (f"\nExamples\n--------\n>>> import ndflow as nf\n>>> nf.math.{name}"
                      f"{example[0]}\n{example[1]}\n")
    return f


acos = _unary(tnp.arccos, "acos", "Inverse cosine")
acosh = _unary(tnp.arccosh, "acosh", "Inverse hyperbolic cosine")
angle = _unary(tnp.angle, "angle", "The argument of complex numbers (0 or pi for reals)")
asin = _unary(tnp.arcsin, "asin", "Inverse sine")
asinh = _unary(tnp.arcsinh, "asinh", "Inverse hyperbolic sine")
atan = _unary(tnp.arctan, "atan", "Inverse tangent")
atanh = _unary(tnp.arctanh, "atanh", "Inverse hyperbolic tangent")
bessel_i0e = _unary(_special.i0e, "bessel_i0e", "exp(-|x|) I0(x), the scaled modified Bessel "
                    "function of order 0")
bessel_i1e = _unary(_special.i1e, "bessel_i1e", "exp(-|x|) I1(x), the scaled modified Bessel "
                    "function of order 1")
ceil = _unary(tnp.ceil, "ceil", "The smallest integer not less than x",
              ("([-1.5, 1.2])", "array([-1.,  2.], dtype=float32)"))
conj = _unary(tnp.conjugate, "conj", "The complex conjugate (real input unchanged)")
cos = _unary(tnp.cos, "cos", "Cosine", ("([0.])", "array([1.], dtype=float32)"))
cosh = _unary(tnp.cosh, "cosh", "Hyperbolic cosine")
digamma = _unary(_special.digamma, "digamma", "d/dx log Gamma(x)")
erf = _unary(_special.erf, "erf", "The error function",
             ("([0.])", "array([0.], dtype=float32)"))
erfc = _unary(_special.erfc, "erfc", "1 - erf(x), accurate where erf(x) is near 1")
erfinv = _unary(_special.erfinv, "erfinv", "The inverse of erf (NaN outside [-1, 1])")
expm1 = _unary(tnp.expm1, "expm1", "exp(x) - 1, accurate near 0")
floor = _unary(tnp.floor, "floor", "The largest integer not greater than x",
               ("([-1.5, 1.2])", "array([-2.,  1.], dtype=float32)"))
imag = _unary(tnp.imag, "imag", "The imaginary part (zeros for real input)")
is_finite = _unary(tnp.isfinite, "is_finite", "True where x is neither infinite nor NaN")
is_inf = _unary(tnp.isinf, "is_inf", "True where x is infinite")
is_nan = _unary(tnp.isnan, "is_nan", "True where x is NaN")
lgamma = _unary(_special.gammaln, "lgamma", "log|Gamma(x)|")
log1p = _unary(tnp.log1p, "log1p", "log(1 + x), accurate near 0")
log_sigmoid = _unary(_nn.log_sigmoid, "log_sigmoid", "log(sigmoid(x)), without overflow")
logical_not = _unary(tnp.logical_not, "logical_not", "Logical not")
ndtri = _unary(_special.ndtri, "ndtri", "The inverse of the standard normal CDF")
negative = _unary(tnp.negative, "negative", "-x")
real = _unary(tnp.real, "real", "The real part (real input unchanged)")
reciprocal = _unary(tnp.reciprocal, "reciprocal", "1 / x (integer division for integers)")
rint = _unary(tnp.rint, "rint", "The nearest integer, halves to even")
round = _unary(tnp.round, "round", "The nearest integer, halves to even",  # noqa: A001
               ("([0.5, 1.5, 2.5, -0.5])", "array([ 0.,  2.,  2., -0.], dtype=float32)"))
sigmoid = _unary(_nn.sigmoid, "sigmoid", "1 / (1 + exp(-x)), without overflow",
                 ("([0.])", "array([0.5], dtype=float32)"))
sign = _unary(tnp.sign, "sign", "-1, 0 or 1 by the sign of x (x / |x| for complex)",
              ("([-2., 0., 3.])", "array([-1.,  0.,  1.], dtype=float32)"))
sin = _unary(tnp.sin, "sin", "Sine", ("([0.])", "array([0.], dtype=float32)"))
sinh = _unary(tnp.sinh, "sinh", "Hyperbolic sine")
softplus = _unary(_nn.softplus, "softplus", "log(1 + exp(x)), without overflow")
softsign = _unary(_nn.softsign, "softsign", "x / (1 + |x|)")
tan = _unary(tnp.tan, "tan", "Tangent")
tanh = _unary(tnp.tanh, "tanh", "Hyperbolic tangent",
              ("([0.])", "array([0.], dtype=float32)"))

add = _binary(tnp.add, "add", "x + y", ("([1., 2.], 1)", "array([2., 3.], dtype=float32)"))
atan2 = _binary(tnp.arctan2, "atan2", "The angle of the point (y, x): note the order (y, x)")
divide = _binary(tnp.true_divide, "divide", "x / y (true division: integers give float64)",
                 ("([1., 3.], 2)", "array([0.5, 1.5], dtype=float32)"))
equal = _binary(tnp.equal, "equal", "x == y")
floordiv = _binary(tnp.floor_divide, "floordiv", "floor(x / y)")
floormod = _binary(tnp.remainder, "floormod", "The remainder of floor division (the sign "
                   "of y), as Python's %")
greater = _binary(tnp.greater, "greater", "x > y")
greater_equal = _binary(tnp.greater_equal, "greater_equal", "x >= y")
less = _binary(tnp.less, "less", "x < y")
less_equal = _binary(tnp.less_equal, "less_equal", "x <= y")
logical_and = _binary(tnp.logical_and, "logical_and", "Logical and")
logical_or = _binary(tnp.logical_or, "logical_or", "Logical or")
logical_xor = _binary(tnp.logical_xor, "logical_xor", "Logical exclusive or")
mod = _binary(tnp.remainder, "mod", "The remainder of floor division (the sign of y), as "
              "`floormod`")
multiply = _binary(tnp.multiply, "multiply", "x * y",
                   ("([1., 2.], [3., 4.])", "array([3., 8.], dtype=float32)"))
nextafter = _binary(tnp.nextafter, "nextafter", "The next representable value after x "
                    "towards y")
not_equal = _binary(tnp.not_equal, "not_equal", "x != y")
pow = _binary(tnp.power, "pow", "x ** y",  # noqa: A001
              ("([2., 3.], 2)", "array([4., 9.], dtype=float32)"))
subtract = _binary(tnp.subtract, "subtract", "x - y",
                   ("([3., 4.], 1)", "array([2., 3.], dtype=float32)"))
truediv = _binary(tnp.true_divide, "truediv", "x / y (true division: integers give float64)")
truncatemod = _binary(tnp.fmod, "truncatemod", "The remainder of truncated division (the "
                      "sign of x), as C's fmod")


def igamma(a, x, name=None):
    """The regularized lower incomplete gamma function P(a, x), as `tf.math.igamma`
    (differentiable in `x`)."""
    return _special.gammainc(_tensor(a), _tensor(x))


def igammac(a, x, name=None):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), as
    `tf.math.igammac` (differentiable in `x`)."""
    return _special.gammaincc(_tensor(a), _tensor(x))


def betainc(a, b, x, name=None):
    """The regularized incomplete beta function I_x(a, b), as `tf.math.betainc`
    (differentiable in `x`)."""
    return _special.betainc(_tensor(a), _tensor(b), _tensor(x))


def zeta(x, q, name=None):
    """The Hurwitz zeta function sum over k >= 0 of (k + q) ** -x, as `tf.math.zeta`."""
    return _special.zeta(_tensor(x), _tensor(q))


def polygamma(a, x, name=None):
    """The `a`-th derivative of digamma at `x`, as `tf.math.polygamma` (`a` a non-negative
    integer or an array of known integers; the result is float64, as SciPy's)."""
    return _special.polygamma(a if isinstance(a, (int, np.integer)) else _tensor(a),
                              _tensor(x))


def scalar_mul(scalar, x, name=None):
    """`scalar * x`, as `tf.math.scalar_mul`."""
    return tnp.multiply(_operand(scalar), _tensor(x))


def squared_difference(x, y, name=None):
    """(x - y) ** 2 elementwise (for complex, (x - y) * conj(x - y)), as
    `tf.math.squared_difference`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.squared_difference([1., 5.], 3.)
    array([4., 4.], dtype=float32)
    """
    d = tnp.subtract(_operand(x), _operand(y))
    return d * tnp.conjugate(d) if d.dtype.kind == "c" else d * d


def rsqrt(x, name=None):
    """1 / sqrt(x), as `tf.math.rsqrt`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.rsqrt([4., 16.])
    array([0.5 , 0.25], dtype=float32)
    """
    return 1 / tnp.sqrt(_tensor(x))


def _arrays(x, y):
    """x and y as arrays: a Python number takes the dtype NEP 50 gives it beside the other
    operand (TensorFlow converts it to that operand's dtype), Python data alone TF's dtypes."""
    x, y = _operand(x), _operand(y)
    if isinstance(x, tnp.ndarray) and not isinstance(y, tnp.ndarray):
        return x, tnp.asarray(y, dtype=tnp.result_type(x, y))
    if isinstance(y, tnp.ndarray) and not isinstance(x, tnp.ndarray):
        return tnp.asarray(x, dtype=tnp.result_type(x, y)), y
    return _tensor(x), _tensor(y)


def divide_no_nan(x, y, name=None):
    """x / y, but 0 where y == 0 (even if x is 0, infinite or NaN), as `tf.math.divide_no_nan`.
    The gradient is 0 there too.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.divide_no_nan([1., 2.], [0., 4.])
    array([0. , 0.5], dtype=float32)
    """
    x, y = _arrays(x, y)
    zero = y == 0
    # the division by a safe denominator: no inf or NaN reaches the gradient of the kept branch
    q = tnp.true_divide(x, tnp.where(zero, tnp.ones_like(y), y))
    return tnp.where(zero, tnp.zeros_like(q), q)


def reciprocal_no_nan(x, name=None):
    """1 / x, but 0 where x == 0, as `tf.math.reciprocal_no_nan`."""
    x = _tensor(x)
    return divide_no_nan(tnp.ones_like(x), x)


def multiply_no_nan(x, y, name=None):
    """x * y, but 0 where y == 0 (even if x is infinite or NaN), as `tf.math.multiply_no_nan`.
    Where y == 0 the gradient with respect to y is x (for finite x), as TensorFlow's.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.multiply_no_nan([float("inf"), 2.], [0., 3.])
    array([0., 6.], dtype=float32)
    """
    x, y = _arrays(x, y)
    zero = tnp.equal(y, 0)
    xs = tnp.where(zero & ~tnp.isfinite(x), tnp.zeros_like(x), x)
    p = xs * y
    # +0 where y == 0 (x * 0 may be -0), and p itself elsewhere (adding -0 changes no value):
    # a constant to differentiation, so the derivative in y stays x
    fix = stop_gradient(tnp.where(zero, -p, tnp.full_like(p, -0.0)))
    return p + fix


def _zero_where_x_is(x, y, fn, neutral):
    """fn(x, y), but 0 where x == 0; there y is replaced by `neutral` first, so no inf or NaN
    reaches the kept branch's gradient."""
    x, y = _arrays(x, y)
    zero = x == 0
    r = fn(x, tnp.where(zero, tnp.full_like(y, neutral), y))
    return tnp.where(zero, tnp.zeros_like(r), r)


def xlogy(x, y, name=None):
    """x * log(y), but 0 where x == 0, as `tf.math.xlogy` (also where y is 0 or NaN; SciPy's
    `xlogy` gives NaN for a NaN y).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.xlogy([0., 2.], [0., 1.])
    array([0., 0.], dtype=float32)
    """
    return _zero_where_x_is(x, y, lambda a, b: a * tnp.log(b), 1)


def xlog1py(x, y, name=None):
    """x * log1p(y), but 0 where x == 0, as `tf.math.xlog1py`."""
    return _zero_where_x_is(x, y, lambda a, b: a * tnp.log1p(b), 0)


def xdivy(x, y, name=None):
    """x / y, but 0 where x == 0, as `tf.math.xdivy`."""
    return _zero_where_x_is(x, y, tnp.true_divide, 1)


# ------------------------------------------------------------------ reductions
def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis` (all axes by default), without overflow, as
    `tf.math.reduce_logsumexp`: -inf when every entry is -inf; the input's float dtype.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.reduce_logsumexp([1000., 1000.])    # exp(1000) would overflow
    array(1000.6932, dtype=float32)
    """
    return _special.logsumexp(_tensor(input_tensor), axis=_axis(axis), keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation over `axis` (divided by N, not N - 1), as `tf.math.reduce_std`;
    real for complex input.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.reduce_std([1., 3.])
    array(1., dtype=float32)
    """
    return tnp.std(_tensor(input_tensor), axis=_axis(axis), keepdims=keepdims)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance over `axis` (divided by N), as `tf.math.reduce_variance`; real for complex
    input.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.reduce_variance([1., 3.])
    array(1., dtype=float32)
    """
    return tnp.var(_tensor(input_tensor), axis=_axis(axis), keepdims=keepdims)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(|x| ** 2)) over `axis`, in the input's dtype (integers truncated, as
    TensorFlow's), as `tf.math.reduce_euclidean_norm`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.reduce_euclidean_norm([[1, 2, 3], [1, 1, 1]])
    array(4, dtype=int32)
    """
    x = _tensor(input_tensor)
    a = tnp.absolute(x) if x.dtype.kind in "ci" else x
    a = a.astype(np.float64) if a.dtype.kind in "iub" else a
    r = tnp.sqrt(tnp.sum(a * a, axis=_axis(axis), keepdims=keepdims))
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def count_nonzero(input, axis=None, keepdims=None, dtype=np.int64, name=None):  # noqa: A002
    """The number of nonzero entries over `axis`, as `tf.math.count_nonzero` (int64).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.count_nonzero([[0, 1], [2, 3]], axis=0)
    array([1, 2], dtype=int64)
    """
    r = tnp.count_nonzero(_tensor(input), axis=_axis(axis), keepdims=bool(keepdims))
    return tnp.asarray(r).astype(dtype)


accumulate_n = add_n


def _scan(x, axis, exclusive, reverse, scan, fill):
    """A cumulative `scan` along `axis`, TensorFlow-style: `reverse` runs it from the end,
    `exclusive` shifts it by one (the first entry becomes `fill`)."""
    ax = int(axis) % x.ndim if x.ndim else 0
    if reverse:
        x = tnp.flip(x, ax)
    r = scan(x, ax)
    if exclusive:
        n = r.shape[ax]
        head = tnp.full_like(tnp.take(r, tnp.arange(min(n, 1)), axis=ax), fill)
        r = tnp.concatenate([head, tnp.take(r, tnp.arange(max(n - 1, 0)), axis=ax)], axis=ax)
    return tnp.flip(r, ax) if reverse else r


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis` (0 by default), in the input's dtype, as `tf.math.cumsum`:
    `exclusive` leaves out each entry itself, `reverse` sums from the end.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.cumsum([1, 2, 3])
    array([1, 3, 6], dtype=int32)
    >>> nf.math.cumsum([1, 2, 3], exclusive=True, reverse=True)
    array([5, 3, 0], dtype=int32)
    """
    t = _tensor(x)
    return _scan(t, axis, exclusive, reverse,
                 lambda v, ax: tnp.cumsum(v, axis=ax, dtype=v.dtype), 0)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis`, in the input's dtype, as `tf.math.cumprod` (`exclusive`
    and `reverse` as in `cumsum`).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.cumprod([1., 2., 3.], exclusive=True)
    array([1., 1., 2.], dtype=float32)
    """
    t = _tensor(x)
    return _scan(t, axis, exclusive, reverse,
                 lambda v, ax: tnp.cumprod(v, axis=ax, dtype=v.dtype), 1)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) along `axis` without overflow, as `tf.math.cumulative_logsumexp`
    (`exclusive` entries start from -inf)."""
    t = _tensor(x)
    return _scan(t, axis, exclusive, reverse,
                 lambda v, ax: tnp.logaddexp.accumulate(v, axis=ax), -np.inf)


# ------------------------------------------------------------------ along an axis
def softmax(logits, axis=None, name=None):
    """exp(x) / sum(exp(x)) along `axis` (the last when None), as `tf.math.softmax`
    (= `nf.nn.softmax`)."""
    return _nn.softmax(logits, -1 if axis is None else axis)


def log_softmax(logits, axis=None, name=None):
    """x - log(sum(exp(x))) along `axis` (the last when None), as `tf.math.log_softmax`
    (= `nf.nn.log_softmax`)."""
    return _nn.log_softmax(logits, -1 if axis is None else axis)


def _segments(data, segment_ids, num_segments, what):
    """(data with rows of dropped ids zeroed, ids clipped to be valid, the kept mask)."""
    d, ids = _tensor(data), _tensor(segment_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{what}: segment_ids must be integers, got {ids.dtype.name}")
    k = ids.ndim
    if tuple(d.shape[:k]) != tuple(ids.shape):
        raise ValueError(f"{what}: segment_ids of shape {tuple(ids.shape)} must be the leading "
                         f"part of data's shape {tuple(d.shape)}")
    keep = ids >= 0                  # TensorFlow drops rows with a negative id
    ids = tnp.where(keep, ids, tnp.zeros_like(ids))
    _check_index_range(ids, num_segments, what)
    rows = tnp.reshape(keep, tuple(keep.shape) + (1,) * (d.ndim - k))
    return tnp.where(rows, d, tnp.zeros_like(d)), ids, keep


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """``out[i] = sum(data[j] for j where segment_ids[j] == i)``, as
    `tf.math.unsorted_segment_sum`: the output has shape
    ``(num_segments,) + data.shape[segment_ids.ndim:]``; empty segments are 0 and rows with a
    negative id are dropped. Differentiable in `data`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.unsorted_segment_sum([1., 2., 3., 4.], [0, 2, 0, -1], 3)
    array([4., 0., 2.], dtype=float32)
    """
    n = int(num_segments)
    d, ids, _ = _segments(data, segment_ids, n, "nf.math.unsorted_segment_sum")
    out = tnp.zeros((n,) + tuple(d.shape[ids.ndim:]), dtype=d.dtype)
    tnp.add.at(out, ids, d)
    return out


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of each segment (0 for an empty one), as `tf.math.unsorted_segment_mean`
    (segments as in `unsorted_segment_sum`).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.unsorted_segment_mean([1., 2., 3.], [0, 1, 0], 3)
    array([2., 2., 0.], dtype=float32)
    """
    n = int(num_segments)
    d, ids, keep = _segments(data, segment_ids, n, "nf.math.unsorted_segment_mean")
    total = tnp.zeros((n,) + tuple(d.shape[ids.ndim:]), dtype=d.dtype)
    tnp.add.at(total, ids, d)
    count = tnp.zeros((n,), dtype=np.int64)
    tnp.add.at(count, ids, keep.astype(np.int64))
    count = tnp.reshape(tnp.maximum(count, 1), (n,) + (1,) * (total.ndim - 1))
    mean = total / count
    return mean if mean.dtype == d.dtype else mean.astype(d.dtype)


def _num_sorted_segments(segment_ids, what):
    ids = _tensor(segment_ids)
    if ids.ndim != 1:
        raise ValueError(f"{what}: segment_ids must be 1-d, got shape {tuple(ids.shape)}")
    if ids._t is not None:
        raise ValueError(f"{what}: the number of segments comes from the values of "
                         f"segment_ids, unknown while tracing; use the unsorted_ form with "
                         f"num_segments")
    v = ids.numpy()
    if v.size and (v.min() < 0 or np.any(np.diff(v) < 0)):
        raise ValueError(f"{what}: segment_ids must be sorted and non-negative")
    return int(v[-1]) + 1 if v.size else 0


def segment_sum(data, segment_ids, name=None):
    """The sum of each segment of the rows of `data`, `segment_ids` sorted, as
    `tf.math.segment_sum` (the number of segments is ``segment_ids[-1] + 1``).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.segment_sum([[1, 2], [3, 4], [5, 6]], [0, 0, 1])
    array([[4, 6],
           [5, 6]], dtype=int32)
    """
    n = _num_sorted_segments(segment_ids, "nf.math.segment_sum")
    return unsorted_segment_sum(data, segment_ids, n)


def segment_mean(data, segment_ids, name=None):
    """The mean of each segment of the rows of `data`, `segment_ids` sorted, as
    `tf.math.segment_mean`."""
    n = _num_sorted_segments(segment_ids, "nf.math.segment_mean")
    return unsorted_segment_mean(data, segment_ids, n)


def polyval(coeffs, x, name=None):
    """``coeffs[0] * x ** (n - 1) + ... + coeffs[n - 1]`` by Horner's rule, as
    `tf.math.polyval` (`coeffs` a list of arrays or numbers; 0 for an empty list).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.polyval([1., 0., -1.], nf.constant([2., 3.]))
    array([3., 8.], dtype=float32)
    """
    t = _tensor(x)
    if not coeffs:
        return tnp.zeros_like(t)
    p = _operand(coeffs[0]) * tnp.ones_like(t)
    for c in coeffs[1:]:
        p = p * t + _operand(c)
    return p


def lbeta(x, name=None):
    """log|Beta(x)| of the last axis: ``sum(lgamma(x), -1) - lgamma(sum(x, -1))``, as
    `tf.math.lbeta` (-inf for an empty last axis)."""
    t = _tensor(x)
    return (tnp.sum(_special.gammaln(t), axis=-1)
            - _special.gammaln(tnp.sum(t, axis=-1)))


def is_non_decreasing(x, name=None):
    """Whether the entries of `x`, in row-major order, never decrease, as
    `tf.math.is_non_decreasing` (True for fewer than two entries)."""
    v = tnp.ravel(_tensor(x))
    return tnp.all(v[1:] >= v[:-1])


def is_strictly_increasing(x, name=None):
    """Whether the entries of `x`, in row-major order, always increase, as
    `tf.math.is_strictly_increasing`."""
    v = tnp.ravel(_tensor(x))
    return tnp.all(v[1:] > v[:-1])


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=np.int32,
                     name=None):
    """``m[i, j]``: how many examples of class `i` (in `labels`) were predicted as `j` (the sum
    of their `weights`), as `tf.math.confusion_matrix`. `num_classes` defaults to one more than
    the largest label or prediction; a negative one raises.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.math.confusion_matrix([0, 1, 1], [0, 1, 0])
    array([[1, 0],
           [1, 1]], dtype=int32)
    """
    lab, pred = _tensor(labels), _tensor(predictions)
    if num_classes is None:
        if lab._t is not None or pred._t is not None:
            raise ValueError("nf.math.confusion_matrix: give num_classes inside nf.function")
        top = max([int(v.numpy().max()) for v in (lab, pred) if v.size] or [-1])
        num_classes = top + 1
    n = int(num_classes)
    _check_index_range(lab, n, "nf.math.confusion_matrix")
    _check_index_range(pred, n, "nf.math.confusion_matrix")
    w = tnp.ones_like(lab, dtype=dtype) if weights is None else _tensor(weights).astype(dtype)
    out = tnp.zeros((n, n), dtype=dtype)
    tnp.add.at(out, (lab, pred), w)
    return out



def __getattr__(name):
    # a TensorFlow name nf.math does not have: the error says where to look
    raise AttributeError(importlib.import_module("._hints", __package__).missing(__name__, name))
