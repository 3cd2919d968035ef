"""The docstrings of the ufunc objects of ndflow.numpy (`tnp.add.__doc__`, `help(tnp.exp)`).

Data only: each ufunc's summary, what differs from NumPy where anything does, and examples for
the most used ones; `ufunc_doc(name)` assembles them in the NumPy docstring format.
"""
import textwrap

# name -> what it computes (a phrase, as NumPy's reference says it)
_WHAT = {
    "absolute": "The absolute value (the magnitude, a real array, for complex input)",
    "add": "x1 + x2", "arccos": "Inverse cosine", "arccosh": "Inverse hyperbolic cosine",
    "arcsin": "Inverse sine", "arcsinh": "Inverse hyperbolic sine", "arctan": "Inverse tangent",
    "arctan2": "The angle of the point (x2, x1) in radians, in [-pi, pi]",
    "arctanh": "Inverse hyperbolic tangent", "bitwise_and": "Bitwise and",
    "bitwise_count": "The number of 1 bits in the absolute value", "bitwise_or": "Bitwise or",
    "bitwise_xor": "Bitwise exclusive or", "cbrt": "The cube root",
    "ceil": "The smallest integer not less than x", "conjugate": "The complex conjugate",
    "copysign": "x1 with the sign of x2", "cos": "Cosine", "cosh": "Hyperbolic cosine",
    "deg2rad": "Degrees to radians", "degrees": "Radians to degrees",
    "divide": "x1 / x2 (true division: integers give float64)",
    "divmod": "(x1 // x2, x1 % x2) together", "equal": "x1 == x2", "exp": "e ** x",
    "exp2": "2 ** x", "expm1": "exp(x) - 1, accurate near 0", "fabs": "The absolute value of "
    "real numbers", "float_power": "x1 ** x2 in float64 (or complex128)",
    "floor": "The largest integer not greater than x",
    "floor_divide": "The largest integer not greater than x1 / x2 (Python's //)",
    "fmax": "The larger of x1 and x2, ignoring a NaN", "fmin": "The smaller of x1 and x2, "
    "ignoring a NaN", "fmod": "The remainder of truncated division (the sign of x1), as C's "
    "fmod", "frexp": "Mantissa and exponent: x = mantissa * 2 ** exponent",
    "gcd": "The greatest common divisor", "greater": "x1 > x2", "greater_equal": "x1 >= x2",
    "heaviside": "The Heaviside step function (x2 where x1 == 0)",
    "hypot": "sqrt(x1 ** 2 + x2 ** 2), without overflow", "invert": "Bitwise not",
    "isfinite": "True where x is neither infinite nor NaN", "isinf": "True where x is infinite",
    "isnan": "True where x is NaN", "isnat": "True where x is NaT (datetimes only)",
    "lcm": "The least common multiple", "ldexp": "x1 * 2 ** x2",
    "left_shift": "x1 shifted left by x2 bits", "less": "x1 < x2", "less_equal": "x1 <= x2",
    "log": "The natural logarithm", "log10": "The base-10 logarithm",
    "log1p": "log(1 + x), accurate near 0", "log2": "The base-2 logarithm",
    "logaddexp": "log(exp(x1) + exp(x2)), without overflow",
    "logaddexp2": "log2(2 ** x1 + 2 ** x2), without overflow",
    "logical_and": "Logical and", "logical_not": "Logical not", "logical_or": "Logical or",
    "logical_xor": "Logical exclusive or",
    "matmul": "The matrix product (a generalized ufunc over the last two axes)",
    "matvec": "Matrix-vector products over the last axes (a generalized ufunc)",
    "maximum": "The larger of x1 and x2 (NaN propagates)",
    "minimum": "The smaller of x1 and x2 (NaN propagates)",
    "modf": "Fractional and integral parts, each with the sign of x", "multiply": "x1 * x2",
    "negative": "-x", "nextafter": "The next representable value after x1 towards x2",
    "not_equal": "x1 != x2", "positive": "+x (a copy)", "power": "x1 ** x2",
    "rad2deg": "Radians to degrees", "radians": "Degrees to radians",
    "reciprocal": "1 / x (integer division for integers, as NumPy)",
    "remainder": "The remainder of floor division (the sign of x2), as Python's %",
    "right_shift": "x1 shifted right by x2 bits", "rint": "The nearest integer, halves to even",
    "sign": "-1, 0 or 1 by the sign of x (x / |x| for complex)",
    "signbit": "True where the sign bit is set (also for -0.0 and -nan)", "sin": "Sine",
    "sinh": "Hyperbolic sine", "spacing": "The distance to the nearest adjacent number",
    "sqrt": "The non-negative square root (NaN below 0)", "square": "x * x",
    "subtract": "x1 - x2", "tan": "Tangent", "tanh": "Hyperbolic tangent",
    "trunc": "The integer part, towards zero",
    "vecdot": "Vector dot products over the last axis, the first conjugated (a generalized "
              "ufunc)",
    "vecmat": "Vector-matrix products over the last axes (a generalized ufunc)",
}

# examples of the most used ufuncs: (lines of code, what they print)
_EXAMPLES = {
    "add": [(">>> tnp.add(tnp.asarray([1, 2]), 10)", "array([11, 12], dtype=int64)"),
            (">>> tnp.add.reduce(tnp.asarray([1., 2., 3.]))", "array(6., dtype=float64)")],
    "subtract": [(">>> tnp.subtract(tnp.asarray([[5.], [7.]]), tnp.asarray([1., 2.]))",
                  "array([[4., 3.],\n       [6., 5.]], dtype=float64)")],
    "multiply": [(">>> tnp.multiply(tnp.asarray([1., 2.]), tnp.asarray([3., 4.]))",
                  "array([3., 8.], dtype=float64)"),
                 (">>> tnp.multiply.outer(tnp.asarray([1, 2]), tnp.asarray([1, 10]))",
                  "array([[ 1, 10],\n       [ 2, 20]], dtype=int64)")],
    "divide": [(">>> tnp.divide(tnp.asarray([1, 3]), 2)", "array([0.5, 1.5], dtype=float64)")],
    "power": [(">>> tnp.power(tnp.asarray([2., 3.]), 2)", "array([4., 9.], dtype=float64)")],
    "exp": [(">>> tnp.exp(tnp.asarray([0., 1.]))",
             "array([1.        , 2.71828183], dtype=float64)")],
    "log": [(">>> tnp.log(tnp.asarray([1., 100.]))",
             "array([0.        , 4.60517019], dtype=float64)")],
    "sqrt": [(">>> tnp.sqrt(tnp.asarray([4., 2.]))",
              "array([2.        , 1.41421356], dtype=float64)")],
    "absolute": [(">>> tnp.abs(tnp.asarray([-1.5, 2., -0.]))",
                  "array([1.5, 2. , 0. ], dtype=float64)"),
                 (">>> tnp.abs(tnp.asarray(3 + 4j))", "array(5., dtype=float64)")],
    "sin": [(">>> tnp.sin(tnp.asarray([0., tnp.pi / 2]))", "array([0., 1.], dtype=float64)")],
    "cos": [(">>> tnp.cos(tnp.asarray([0., tnp.pi]))", "array([ 1., -1.], dtype=float64)")],
    "tanh": [(">>> tnp.tanh(tnp.asarray([0., 100.]))", "array([0., 1.], dtype=float64)")],
    "maximum": [(">>> tnp.maximum(tnp.asarray([1., float('nan'), 5.]), 3.)",
                 "array([ 3., nan,  5.], dtype=float64)")],
    "minimum": [(">>> tnp.minimum(tnp.asarray([1., 5.]), 3.)",
                 "array([1., 3.], dtype=float64)")],
    "isnan": [(">>> tnp.isnan(tnp.asarray([1., float('nan')]))",
               "array([False,  True], dtype=bool)")],
    "isfinite": [(">>> tnp.isfinite(tnp.asarray([1., float('inf'), float('nan')]))",
                  "array([ True, False, False], dtype=bool)")],
    "matmul": [(">>> a = tnp.asarray([[1., 2.], [3., 4.]])", None),
               (">>> tnp.matmul(a, a)", "array([[ 7., 10.],\n       [15., 22.]], dtype=float64)"),
               (">>> (a @ tnp.ones((5, 2, 1))).shape", "(5, 2, 1)")],
    "equal": [(">>> tnp.equal(tnp.asarray([1, 2]), 2)", "array([False,  True], dtype=bool)")],
    "less": [(">>> tnp.less(tnp.asarray([1, 2]), 2)", "array([ True, False], dtype=bool)")],
    "greater": [(">>> tnp.greater(tnp.asarray([1, 3]), 2)",
                 "array([False,  True], dtype=bool)")],
    "square": [(">>> tnp.square(tnp.asarray([2, -3]))", "array([4, 9], dtype=int64)")],
    "negative": [(">>> tnp.negative(tnp.asarray([1., 0.]))",
                  "array([-1., -0.], dtype=float64)")],
    "floor": [(">>> tnp.floor(tnp.asarray([-1.5, 1.5]))", "array([-2.,  1.], dtype=float64)")],
    "ceil": [(">>> tnp.ceil(tnp.asarray([-1.5, 1.5]))", "array([-1.,  2.], dtype=float64)")],
    "sign": [(">>> tnp.sign(tnp.asarray([-2., 0., 3.]))", "array([-1.,  0.,  1.], dtype=float64)")],
    "logaddexp": [(">>> tnp.logaddexp(tnp.asarray(1000.), tnp.asarray(1000.))",
                   "array(1000.69314718, dtype=float64)")],
    "arctan2": [(">>> tnp.arctan2(tnp.asarray([1., -1.]), tnp.asarray([-1., -1.]))",
                 "array([ 2.35619449, -2.35619449], dtype=float64)")],
    "remainder": [(">>> tnp.remainder(tnp.asarray([-7, 7]), 3)", "array([2, 1], dtype=int64)")],
    "floor_divide": [(">>> tnp.floor_divide(tnp.asarray([-7, 7]), 2)",
                      "array([-4,  3], dtype=int64)")],
    "log1p": [(">>> tnp.log1p(tnp.asarray([1e-20]))", "array([1.e-20], dtype=float64)")],
    "expm1": [(">>> tnp.expm1(tnp.asarray([1e-20]))", "array([1.e-20], dtype=float64)")],
    "logical_and": [(">>> tnp.logical_and(tnp.asarray([True, True]), tnp.asarray([True, False]))",
                     "array([ True, False], dtype=bool)")],
    "hypot": [(">>> tnp.hypot(tnp.asarray(3e200), tnp.asarray(4e200))",
               "array(5.e+200, dtype=float64)")],
}

_GENERIC = ("Called as NumPy's ufunc (with `out=`, `where=`, `dtype=`), with NumPy's "
            "dtype rules and broadcasting; the methods `reduce`, `accumulate`, `outer`, `at` "
            "and `reduceat` exist where NumPy defines them. Differentiable, traceable and "
            "vectorizable where the result is floating (integer and boolean results have no "
            "gradient).")
_GENERIC_TEXT = textwrap.fill(_GENERIC, 92)     # (once: every ufunc's docstring has it)


def ufunc_doc(name):
    """The docstring of `tnp.<name>` (a ufunc object)."""
    what = _WHAT.get(name)
    head = (f"{what}, elementwise, as `numpy.{name}`." if what is not None
            else f"`numpy.{name}` on ndflow arrays, elementwise.")
    text = f"{head}\n\n{_GENERIC_TEXT}\n"
    examples = _EXAMPLES.get(name)
    if examples:
        lines = ["", "Examples", "--------", ">>> import ndflow.numpy as tnp"]
        for code, shown in examples:
            lines.append(code)
            if shown is not None:
                lines.append(shown)
        text += "\n".join(lines) + "\n"
    return text
