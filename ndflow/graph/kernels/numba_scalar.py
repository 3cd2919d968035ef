"""How tier 1 (numba_tier) writes the scalar vocabulary (primitives/scalar.py: every primitive
declares its scalar expression there once): one table per kind of spelling, keyed by the
vocabulary's functions (never by primitive), and for which operand dtypes each spelling is
NumPy's value bit for bit. This module only writes text; it does not import numba.

- _OPERATORS: Python operators over operands of one dtype, per operand kind (numba keeps
  float32 arithmetic in float32; numba_tier._body casts integer results back, so int32 + int32
  wraps as NumPy's does; bool + and * are NumPy's `or` and `and`);
- _HELPERS: small select-based functions (`_numba_helpers`: no branches, so loops vectorize;
  NaN rules NumPy's); _INTRINSIC: LLVM intrinsics, IEEE-exact, floats only;
- _OWN: our vectorizable math (`mathlib`), floats only: NumPy's bits only where `replica`
  reproduces NumPy's SIMD loop, else under the fast-math contract (the region's, passed in:
  `jit_compile=True` or `settings.fast_math` when it was built);
- _REFUSED: why a function stays with NumPy's loop; any other function would call the scalar
  C library, which NumPy's SIMD loops beat.
"""
import numpy as np

from . import mathlib, replica
from ...primitives.scalar import Unrenderable

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_OWN = set(mathlib.FUNCTIONS)
_INTRINSIC = {"sqrt": "np.sqrt", "floor": "np.floor", "ceil": "np.ceil", "trunc": "np.trunc",
              "rint": "np.rint"}
_HELPERS = {"abs": "_abs", "maximum": "_maximum", "minimum": "_minimum", "where": "_where",
            "sign": "_sign", "isnan": "_isnan", "isinf": "_isinf", "isfinite": "_isfinite",
            "logical_and": "_land", "logical_or": "_lor", "logical_xor": "_lxor",
            "logical_not": "_lnot"}
_OPERATORS = {
    "add": {"b": "_lor({0}, {1})", "iuf": "({0} + {1})"},
    "subtract": {"iuf": "({0} - {1})"},
    "multiply": {"b": "_land({0}, {1})", "iuf": "({0} * {1})"},
    "divide": {"f": "({0} / {1})"},
    "negative": {"iuf": "(-{0})"}, "positive": {"iuf": "(+{0})"}, "conj": {"biuf": "{0}"},
    "equal": {"biuf": "({0} == {1})"}, "not_equal": {"biuf": "({0} != {1})"},
    "less": {"biuf": "({0} < {1})"}, "less_equal": {"biuf": "({0} <= {1})"},
    "greater": {"biuf": "({0} > {1})"}, "greater_equal": {"biuf": "({0} >= {1})"},
    "bitwise_and": {"biu": "({0} & {1})"}, "bitwise_or": {"biu": "({0} | {1})"},
    "bitwise_xor": {"biu": "({0} ^ {1})"}, "invert": {"b": "_lnot({0})", "iu": "(~{0})"},
    "signbit": {"f": "_signbit({0})", "iu": "({0} < 0)", "b": "False"},
}
_REFUSED = {
    "power": "power calls the scalar C library (NumPy's loop is as fast)",
    "floor_divide": "NumPy's floor division (zero divisors, signed zeros, overflow) is not "
                    "reproduced",
    "remainder": "NumPy's remainder (zero divisors, signed zeros) is not reproduced",
    "left_shift": "NumPy's rule for shift counts outside the type's width is not reproduced",
    "right_shift": "NumPy's rule for shift counts outside the type's width is not reproduced",
}


def typename(dt):
    """The NumPy scalar type's name in kernel source."""
    return "np.%s" % np.dtype(dt).name if np.dtype(dt) != np.bool_ else "np.bool_"


def spell(f, a, dts, res, fast_math):
    """Numba text of vocabulary function `f` over operand texts `a` of `dts`, result `res`
    (scalar.render's `spell`, with the region's contract `fast_math` bound); raises
    Unrenderable."""
    dt = np.dtype(dts[0])
    if f == "astype":
        if res.kind in "iu" and dt.kind == "f":
            raise Unrenderable("float-to-integer conversion (NaN/inf casts are platform-defined)")
        return "(%s != 0)" % a[0] if res == np.bool_ else "%s(%s)" % (typename(res), a[0])
    if f in _OWN or f in _INTRINSIC:
        if dt not in _FLOATS:
            raise Unrenderable("'%s' on %s" % (f, dt))
        if f in _INTRINSIC:
            return "%s(%s)" % (_INTRINSIC[f], a[0])
        if fast_math:
            return "%s_%s(%s)" % (f, dt.name, a[0])
        why = replica.why_not(f, dt)
        if why is not None:
            raise Unrenderable("'%s' with our own math is not NumPy's bit for bit "
                               "(jit_compile=True allows it); %s" % (f, why))
        return "%s(%s)" % (replica.kernel_name(f, dt), a[0])
    if f in _HELPERS:
        return "%s(%s)" % (_HELPERS[f], ", ".join(a))
    spell = _OPERATORS.get(f, {})
    for kinds, text in spell.items():
        if dt.kind in kinds:
            return text.format(*a)
    if spell:
        raise Unrenderable("'%s' on %s" % (f, dt))
    raise Unrenderable(_REFUSED.get(f) or "no vectorizable scalar '%s' for %s (it would call "
                       "the C library; NumPy's SIMD loop is faster)" % (f, dt))


def constant(v, dt):
    """Numba text of the constant `v` in dtype `dt` (scalar.render's `literal`), exactly."""
    dt = np.dtype(dt)
    with np.errstate(all="ignore"):
        x = np.asarray(v).astype(dt)[()]
    if dt == np.bool_:
        return repr(bool(x))
    if dt.kind in "iu":
        return "%s(%d)" % (typename(dt), int(x))
    if dt not in _FLOATS:
        raise Unrenderable("a constant of %s" % dt)
    if np.isnan(x):
        if np.asarray(x).tobytes() != np.asarray(np.nan, dt).tobytes():
            raise Unrenderable("a NaN constant with a payload or sign of its own")
        return "%s(np.nan)" % typename(dt)
    # repr of the double is exact, and so is that double (a float32 value) cast to float32
    return "%s(%s)" % (typename(dt), "-np.inf" if x == -np.inf else "np.inf" if x == np.inf
                       else repr(float(x)))
