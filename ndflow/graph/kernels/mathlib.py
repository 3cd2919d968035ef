"""Elementary functions written once, run two ways: as NumPy array code (here, so the tests
check them on every machine) and, re-bound to scalar helpers, as numba code that LLVM inlines
and vectorizes inside fused kernels (numba's own `math.exp` calls the scalar C library, which is
4-40x slower per element than NumPy's SIMD loops).

Each function is built from a spec of its float type's constants. The algorithms are the
textbook ones: Cody-Waite argument reduction by ln 2 with a polynomial for exp/expm1 (Taylor's,
or for float32 exp a fitted one), exponent/mantissa split with the atanh series for log, and
tanh from expm1. Results are within a few float32 (or float64) ulps of NumPy's (float32 exp: 1
ulp from the correctly rounded value, expm1 2, tanh 3); NaN, +-inf, -0.0, overflow, underflow
and subnormal inputs and results come out as NumPy's do (tests/test_fusion.py checks both).

Inside a kernel the loop runs 8 float32 lanes (AVX2) at ~3 instructions a cycle, so what a
function costs is its instruction count: a clamp is two NaN-keeping max/min (one instruction
each) rather than selects, n is rounded by adding 1.5 * 2**mant (and twice the exponent bias,
which 2**n's factors then carry) rather than by floor and a conversion, exp of a negation is
its own function (`exp_neg`, the negation folded into the multiply-adds), integer steps are
cast back to the float's width (numba widens int32 arithmetic to 64 bits, which takes two
registers per 8 lanes), and a NaN is passed on by the arithmetic rather than tested for where
it can be.

The functions only use names from `_NUMPY_OPS` (or `_numba_ops()`): `where` (select, no
branches, so loops vectorize), `clamp` (NumPy's NaN-keeping maximum, then minimum, with
constant bounds), `fma` (one rounding in the kernels, two in NumPy), `floor`, `fabs`,
`copysign`, `to_int`, `to_float`, `bits`, `from_bits`.
Constants are closure variables typed with the spec's dtype, so numba keeps the arithmetic in
float32 where the input is float32.
"""
import math
import types

import numpy as np

# ln 2 split so that n * LN2_HI is exact for every exponent n that can occur
_LN2_HI = {np.float32: 0.693115234375, np.float64: 0.6931470632553101}
_LN2_LO = {np.float32: 3.1946184945309415e-05, np.float64: 1.1730463525082348e-07}


class _Spec:
    def __init__(self, F, I, mant, bias, expmask, exp_lo, exp_hi, m1_lo, tanh_sat, tanh_tiny,
                 exp_terms, log_terms, exp_poly=None):
        self.F, self.I = F, I
        self.mant, self.bias, self.expmask = mant, bias, expmask
        self.exp_lo, self.exp_hi, self.m1_lo = F(exp_lo), F(exp_hi), F(m1_lo)
        self.tanh_sat, self.tanh_tiny = F(tanh_sat), F(tanh_tiny)
        self.exp_terms, self.log_terms = exp_terms, log_terms
        self.exp_poly = exp_poly


# float32 exp: e**r on |r| <= ln(2)/2 + 2e-3 by a degree-6 polynomial with c0 = c1 = 1 and the
# rest fitted for least maximum relative error (Lawson's iteration on 40001 Chebyshev nodes,
# rounded to float32): 0.05 float32 ulps of approximation error, so the result's error is
# Horner's rounding. Six multiply-adds where the Taylor series needs seven.
_EXP_POLY_F32 = (1.0, 1.0) + tuple(float.fromhex(h) for h in (
    "0x1.fffffcp-2", "0x1.55548cp-3", "0x1.555906p-5", "0x1.123d4p-7", "0x1.6a1ea0p-10"))

# exp_lo/exp_hi: exp rounds to 0 below / overflows above (the clamp keeps 2**n finite);
# m1_lo: expm1 rounds to -1 below; tanh_sat: tanh rounds to +-1 above; tanh_tiny: tanh(x) == x
# below. Polynomial lengths: Taylor/atanh series truncated below half an ulp on the reduced range.
F32 = _Spec(np.float32, np.int32, 23, 127, 0xFF, -104.0, 89.0, -18.0, 9.5, 2.0 ** -12, 8, 5,
            exp_poly=_EXP_POLY_F32)
F64 = _Spec(np.float64, np.int64, 52, 1023, 0x7FF, -746.0, 710.0, -40.0, 19.5, 2.0 ** -27, 14, 11)
SPECS = {np.dtype(np.float32): F32, np.dtype(np.float64): F64}


# ------------------------------------------------------------------ the two sets of helpers
def _np_bits(x):
    x = np.asarray(x)
    return x.view(np.int32 if x.dtype == np.float32 else np.int64)


def _np_from_bits(i, F):
    return np.asarray(i).astype(np.int32 if F is np.float32 else np.int64).view(F)


_NUMPY_OPS = {
    "where": np.where, "floor": np.floor, "fabs": np.abs, "copysign": np.copysign,
    "clamp": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    # (NumPy has no fused multiply-add: two roundings here, one in the kernels)
    "fma": lambda a, b, c: a * b + c,
    "to_int": lambda x, I: np.asarray(x).astype(I), "to_float": lambda i, F: np.asarray(i).astype(F),
    "bits": _np_bits, "from_bits": _np_from_bits,
}


def _numba_clamp(njit, intrinsic, inline):
    """clamp(x, lo, hi) for numba kernels: NumPy's maximum, then minimum, keeping a NaN in x
    (lo and hi are constants, never NaN)."""
    from llvmlite import ir, binding as llvm

    def _nan_keeping(op):
        # LLVM's maximum/minimum pass a NaN on (IEEE 754-2019), as NumPy's do; against a
        # constant that is neither NaN nor zero x86 makes each one max/min instruction, where
        # nested selects cost a compare and a blend each, and a NaN test at the end
        @intrinsic
        def impl(typingctx, x, y):
            def codegen(context, builder, sig, args):
                from numba.core import cgutils
                t = args[0].type
                fn = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(t, [t, t]),
                    "llvm.%s.%s" % (op, "f32" if t == ir.FloatType() else "f64"))
                return builder.call(fn, args)
            return x(x, y), codegen
        return impl

    # (LLVM before 20, llvmlite before 0.45, cannot select them on x86 and aborts the process:
    # selects there, which keep a NaN in x; y is always one of clamp's constant bounds)
    if llvm.llvm_version_info >= (20,):
        maximum, minimum = _nan_keeping("maximum"), _nan_keeping("minimum")
    else:
        @njit(**inline)
        def maximum(x, y):
            return y if x < y else x

        @njit(**inline)
        def minimum(x, y):
            return y if x > y else x

    @njit(**inline)
    def clamp(x, lo, hi):
        return minimum(maximum(x, lo), hi)
    return clamp


_FMA = []


def numba_fma():
    """fma(a, b, c) for numba code: a*b + c rounded once (numba has none of its own), the one
    intrinsic that this module's polynomials and `replica`'s NumPy algorithms use."""
    if not _FMA:
        from numba.extending import intrinsic

        @intrinsic
        def fma(typingctx, a, b, c):
            def codegen(context, builder, sig, args):
                return builder.fma(*args)
            return a(a, b, c), codegen
        _FMA.append(fma)
    return _FMA[0]


def _numba_ops():
    from numba import njit, types as nt
    from numba.extending import intrinsic
    from llvmlite import ir

    @intrinsic
    def _bitcast_to_int(typingctx, x):
        width = x.bitwidth
        ity = nt.int32 if width == 32 else nt.int64

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(width))
        return ity(x), codegen

    @intrinsic
    def _bitcast_to_float(typingctx, i, fty):
        F = fty.instance_type if isinstance(fty, nt.NumberClass) else fty.dtype

        def codegen(context, builder, sig, args):
            lt = ir.FloatType() if F == nt.float32 else ir.DoubleType()
            v = context.cast(builder, args[0], sig.args[0], nt.int32 if F == nt.float32 else nt.int64)
            return builder.bitcast(v, lt)
        return F(i, fty), codegen

    inline = dict(inline="always", fastmath=False, error_model="numpy")

    clamp = _numba_clamp(njit, intrinsic, inline)
    # (for the polynomials only: their operands are finite, a reduced argument and constants,
    # or NaN, so an exact product cannot move NaN, inf or a zero's sign there, as contracting
    # a user's a*b + c can: the kernels are compiled without fast-math flags, `numba_source`)
    fma = numba_fma()

    @njit(**inline)
    def where(c, a, b):
        return a if c else b

    @njit(**inline)
    def floor(x):
        return np.floor(x)

    @njit(**inline)
    def fabs(x):
        return abs(x)

    @njit(**inline)
    def copysign(x, y):
        # the sign bit of y read as an integer: a select, so float32 stays float32
        return abs(x) if _bitcast_to_int(y) >= 0 else -abs(x)

    @njit(**inline)
    def to_int(x, I):
        return I(x)

    @njit(**inline)
    def to_float(i, F):
        return F(i)

    @njit(**inline)
    def bits(x):
        return _bitcast_to_int(x)

    @njit(**inline)
    def from_bits(i, F):
        return _bitcast_to_float(i, F)

    return {"where": where, "floor": floor, "fabs": fabs, "copysign": copysign,
            "clamp": clamp, "fma": fma,
            "to_int": to_int, "to_float": to_float, "bits": bits, "from_bits": from_bits}


# ------------------------------------------------------------------ the functions
def _exp_poly(s):
    """Coefficients c0, c1, ... of p(r) ~ e**r on the reduced range |r| <= ln(2)/2."""
    if s.exp_poly is not None:
        return tuple(s.F(c) for c in s.exp_poly)
    return tuple(s.F(1 / math.factorial(k)) for k in range(s.exp_terms))


def _shift(s):
    """1.5 * 2**mant + 2 * bias: x * log2(e) + SHIFT rounds x * log2(e) to an integer n (to
    nearest even, |n| < 2**(mant - 1) after the clamp), held in the low bits of the sum's bit
    pattern as SHIFT's bits + n + 2 * bias: no rounding instruction, no float-to-int
    conversion, and 2**n's two factors come from those bits by shifts and one subtraction
    (`_scale_bits`), with the exponent bias already in them."""
    return s.F(1.5 * 2.0 ** s.mant + 2 * s.bias)


def _scale_bits(b, MANT, I):
    """The bit patterns of 2**n1 and 2**(n - n1), n1 = n >> 1, from b, the bits of
    x * log2(e) + SHIFT (`_shift`): b's low bits hold m = n + 2 * bias, so (m >> 1) << MANT is
    2**n1's pattern and (m << MANT) - that is 2**(n - n1)'s; SHIFT's own bits (and half of
    them) end in more zero bits than MANT, so they shift out, and m << MANT wrapping past the
    word cancels in the difference (for float32 2 shifts, an and and a subtraction per vector,
    where adding the bias to each factor took two more)
    (numba widens integer arithmetic to 64 bits: each step is cast back, so that LLVM keeps 8
    float32 lanes' integers in one vector register, not two)."""
    h = to_int(to_int(b >> 1, I) << MANT, I)
    return h, to_int(to_int(b << MANT, I) - h, I)


def _make_exp(s, negated=False):
    """exp, or with `negated` exp(-x) (`exp_neg`: a kernel's exp of a negation, as in a
    sigmoid): the clamp's bounds swap sides and the negation of the clamped value is a
    product by -1, which LLVM folds into the multiply-adds that use it, so that the negation
    costs no instruction and no sign-mask register per vector (the sigmoid's loop ~10%
    faster); the same values as exp(-x), bit for bit."""
    F, I = s.F, s.I
    LO, HI = (-s.exp_hi, -s.exp_lo) if negated else (s.exp_lo, s.exp_hi)
    SIGN = F(-1 if negated else 1)
    LOG2E = F(1 / math.log(2))
    LN2_HI, LN2_LO = F(_LN2_HI[F]), F(_LN2_LO[F])
    SHIFT = _shift(s)
    C = _exp_poly(s)
    MANT = s.mant
    K = len(C)

    def exp(x):
        xc = SIGN * clamp(x, LO, HI)            # a NaN stays NaN, through every step below
        # (one multiply-add, not a product and a sum: n is whichever integer it rounds to and
        # r below is reduced by that n; one instruction and one register fewer per vector)
        t = fma(xc, LOG2E, SHIFT)
        n = t - SHIFT
        # x - n * ln 2 in two multiply-adds: n * LN2_HI is exact, so the first is the exact
        # difference, and the second rounds once (two instructions fewer per vector than
        # products and differences: 6% of a sigmoid's loop, with the same results measured)
        r = fma(-n, LN2_LO, fma(-n, LN2_HI, xc))
        p = C[K - 1]
        for j in range(K - 2, -1, -1):
            p = fma(p, r, C[j])
        # 2**n as two normal factors 2**n1 * 2**(n - n1): p * 2**n1 is exact, the last product
        # rounds once (also into the subnormal range, and to inf past the largest float);
        # products rather than exponent adds, so that a NaN stays NaN
        h, s2 = _scale_bits(bits(t), MANT, I)
        return p * from_bits(h, F) * from_bits(s2, F)
    return exp


def _make_expm1(s):
    F, I = s.F, s.I
    LO, HI = s.m1_lo, s.exp_hi
    LOG2E, ONE, ZERO = F(1 / math.log(2)), F(1), F(0)
    LN2_HI, LN2_LO = F(_LN2_HI[F]), F(_LN2_LO[F])
    SHIFT = _shift(s)
    # expm1(r) = r * (1 + r/2 + r**2/6 + ...)
    C = tuple(F(1 / math.factorial(k + 1)) for k in range(s.exp_terms))
    MANT, FMANT = s.mant, F(s.mant)
    K = len(C)

    def expm1(x):
        xc = clamp(x, LO, HI)                   # a NaN stays NaN through every step, as in exp
        t = fma(xc, LOG2E, SHIFT)
        n = t - SHIFT
        r = fma(-n, LN2_LO, fma(-n, LN2_HI, xc))     # as in exp
        p = C[K - 1]
        for j in range(K - 2, -1, -1):
            p = fma(p, r, C[j])
        q = r * p
        h1, h2 = _scale_bits(bits(t), MANT, I)
        s1, s2 = from_bits(h1, F), from_bits(h2, F)
        sc = s1 * s2
        # 2**n * (1 + q) - 1 without cancellation while 2**n - 1 is exact; past that the -1
        # is below rounding and the product may overflow to inf as it should
        small = sc * q + (sc - ONE)
        big = (q + ONE) * s1 * s2 - ONE
        y = where(n > FMANT, big, small)
        return where(x == ZERO, x, y)             # keeps -0.0
    return expm1


def _make_log(s):
    F, I = s.F, s.I
    MANT, BIAS, EXPMASK = s.mant, s.bias, s.expmask
    MANTMASK = (1 << MANT) - 1
    ONE_BITS = BIAS << MANT
    MIN_NORMAL = F(2.0 ** (1 - BIAS))
    SCALE = F(2.0 ** MANT)
    SQRT2, HALF, ONE, TWO = F(math.sqrt(2)), F(0.5), F(1), F(2)
    ZERO, INF, NAN = F(0), F(np.inf), F(np.nan)
    LN2_HI, LN2_LO = F(_LN2_HI[F]), F(_LN2_LO[F])
    # 2 atanh(s) = 2s + s * (2/3 s**2 + 2/5 s**4 + ...)
    C = tuple(F(2 / (2 * k + 1)) for k in range(1, s.log_terms + 1))
    K = len(C)
    FMANT = F(MANT)

    def log(x):
        sub = x < MIN_NORMAL
        xs = where(sub, x * SCALE, x)
        i = bits(xs)
        e = to_float(((i >> MANT) & EXPMASK) - BIAS, F) - where(sub, FMANT, ZERO)
        m = from_bits((i & MANTMASK) | ONE_BITS, F)
        big = m > SQRT2
        m = where(big, m * HALF, m)
        e = where(big, e + ONE, e)
        f = m - ONE
        sv = f / (TWO + f)
        z = sv * sv
        R = C[K - 1]
        for j in range(K - 2, -1, -1):
            R = fma(R, z, C[j])
        R = R * z
        hfsq = HALF * f * f
        lm = f - (hfsq - sv * (hfsq + R))
        y = (e * LN2_LO + lm) + e * LN2_HI
        y = where(x == INF, x, y)
        y = where(x == ZERO, -INF, y)
        y = where(x < ZERO, NAN, y)
        return where(x != x, x, y)
    return log


def _make_tanh(s, expm1):
    F = s.F
    SAT, TINY, ONE, TWO = s.tanh_sat, s.tanh_tiny, F(1), F(2)

    def tanh(x):
        a = fabs(x)
        # past SAT, t may be inf (and y NaN): y is replaced by 1 there
        t = expm1(TWO * a)
        y = t / (t + TWO)
        y = where(a > SAT, ONE, y)
        y = where(a < TINY, a, y)
        return copysign(y, x)
    return tanh


def _build(ops, wrap=lambda f: f):
    """{(name, dtype): function} with the helpers in `ops` as the functions' globals; `wrap`
    compiles each one (numba) once its dependencies exist."""
    out = {}
    for dt, s in SPECS.items():
        g = dict(ops, __name__=__name__)
        g["_scale_bits"] = wrap(_rebind(_scale_bits, g))
        exp = wrap(_rebind(_make_exp(s), g))
        out[("exp_neg", dt)] = wrap(_rebind(_make_exp(s, negated=True), g))
        expm1 = wrap(_rebind(_make_expm1(s), g))
        log = wrap(_rebind(_make_log(s), g))
        g2 = dict(g, expm1=expm1)
        tanh = wrap(_rebind(_make_tanh(s, expm1), g2))
        out.update({("exp", dt): exp, ("expm1", dt): expm1, ("log", dt): log, ("tanh", dt): tanh})
    return out


def _rebind(f, g):
    """`f` with `g` as its globals: the same code then calls NumPy or numba helpers."""
    return types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)


_NUMPY_FUNCS = None


def numpy_version(name, dtype):
    """The NumPy-array version of our own `name` for `dtype` (for tests and reference)."""
    global _NUMPY_FUNCS
    if _NUMPY_FUNCS is None:
        _NUMPY_FUNCS = _build(_NUMPY_OPS)
    f = _NUMPY_FUNCS[(name, np.dtype(dtype))]

    def run(x):
        x = np.asarray(x, dtype)
        with np.errstate(all="ignore"):
            return np.asarray(f(x), dtype)
    return run


FUNCTIONS = ("exp", "expm1", "log", "tanh")
# (and, built beside them for the kernels only, exp_neg: exp(-x) with the negation folded in,
# which a fast-math kernel calls for the exp of a negation, `numba_tier._body`)


_NUMBA_FUNCS = None


def numba_functions():
    """{(name, dtype): numba function} to call from generated kernels (imports numba)."""
    global _NUMBA_FUNCS
    if _NUMBA_FUNCS is None:
        from numba import njit
        _NUMBA_FUNCS = _build(_numba_ops(), njit(inline="always", error_model="numpy"))
    return _NUMBA_FUNCS
