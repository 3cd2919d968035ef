"""NumPy's own SIMD elementary functions, step for step, so that tier 1 may fuse them exactly.

NumPy's x86 builds compute float32 `exp` and `log` with one algorithm each on every SIMD target
they dispatch to (AVX2+FMA3 and AVX-512; `loops_exponent_log.dispatch.c.src`):
- exp: the argument is reduced by a power of two found with the float32 round-to-nearest
  trick, reduced again in two fused multiply-adds by ln 2 split in two, a ratio of a 5th- and
  a 2nd-order minimax polynomial is evaluated with FMAs and one IEEE division, and the result
  is scaled by that power of two (AVX-512's `scalef`, or an exponent add plus an exact
  power-of-two division for subnormal results on AVX2: both one correctly rounded product);
- log: the input is split into exponent and mantissa in [0.5, 1) (AVX-512's getexp/getmant,
  or bit operations after scaling subnormals by 2**100 on AVX2: the same numbers), the
  mantissa doubled below sqrt(1/2), a ratio of two 5th-order polynomials in (mantissa - 1)
  evaluated with FMAs and one division, and the exponent times ln 2 added with one FMA.
Every one of those steps is an IEEE operation, so numba code that makes the same operations
in the same order gives the same bits: each replica was checked against NumPy for all 2**32
float32 inputs on an AVX-512 machine (NaN in, NumPy's quiet NaN out; log of x < 0 NumPy's
negative NaN; +-inf, overflow, underflow and subnormals included). Where a step can be made
with fewer instructions and the same result for every input it is (exp rounds with `rint`, and
computes the lanes NumPy zeroes first as they come, replacing them at the end): the exp loop
is ~23% faster than NumPy's own (0.33 vs 0.42 ns per element here), log ~25% slower (AVX-512
splits a float in one instruction each); fused with their neighbours they also save those
ops' passes over memory.

Only where NumPy's dispatch table says its loop is one of those SIMD targets is a replica
offered (`why_not`); elsewhere NumPy calls the C library and tier 1 keeps the function out of
its regions as before. The first kernel that uses a replica is compiled only after the replica
has matched NumPy bit for bit on a probe of special, edge and random inputs in this process
(`verify`); a mismatch leaves tier 0 in place and `why_not` says why from then on.

This module imports numba only in `functions()` and `verify()`.
"""
import numpy as np

from . import mathlib

# which NumPy loop each replica reproduces: {(ufunc name, dtype): dispatch target names}
_TARGETS = {
    # NumPy >= 2.4 names x86 targets by micro-architecture level, older ones by feature
    ("exp", np.dtype(np.float32)): ("X86_V3", "X86_V4", "AVX512F", "AVX512_SKX", "AVX2",
                                    "FMA3", "AVX2__FMA3", "FMA3__AVX2"),
}
# log is the same file's second function, dispatched to the same targets
_TARGETS[("log", np.dtype(np.float32))] = _TARGETS[("exp", np.dtype(np.float32))]

_why = {}           # (name, dtype) -> reason it is not offered, or None
_verified = {}      # (name, dtype) -> None (matched) or the mismatch found by `verify`


def dispatch_target(name, dtype):
    """The name of the SIMD loop this process's NumPy runs for `name` on `dtype` (None where
    NumPy does not say)."""
    try:
        from numpy.lib.introspect import opt_func_info
    except ImportError:
        return None
    try:
        info = opt_func_info(func_name="^%s$" % name)
        return info[name][np.dtype(dtype).char * 2]["current"]
    except Exception:           # another layout of the table: not a loop we know
        return None


def why_not(name, dtype):
    """None when tier 1 may use the replica of NumPy's `name` for `dtype`, else the reason."""
    key = (name, np.dtype(dtype))
    if key in _verified and _verified[key] is not None:
        return _verified[key]
    if key not in _why:
        targets = _TARGETS.get(key)
        if targets is None:
            _why[key] = "no replica of NumPy's %s for %s" % key
        else:
            cur = dispatch_target(*key)
            _why[key] = None if cur in targets else (
                "NumPy's %s loop for %s here is %r, not a SIMD loop ndflow reproduces"
                % (name, key[1], cur))
    return _why[key]


def replicas():
    """The (ufunc name, dtype) pairs ndflow has a replica of (without importing numba)."""
    return list(_TARGETS)


def checked(name, dtype):
    """Whether this process knows whether its replica of `name` matches NumPy's loop."""
    return (name, np.dtype(dtype)) in _verified


def accept(name, dtype, why, target):
    """Take `verify`'s finding `why` from another process (the compile worker) whose NumPy
    runs `target` as its loop of `name` for `dtype`: only where that is this process's loop
    too, and `verify` has not run here."""
    key = (name, np.dtype(dtype))
    if key not in _verified and target is not None and target == dispatch_target(*key):
        _verified[key] = why


def kernel_name(name, dtype):
    """The name generated kernels call the replica by (`functions()`'s key)."""
    return "np%s_%s" % (name, np.dtype(dtype).name)


# ------------------------------------------------------------------ numba code
_FUNCS = None


def functions():
    """{kernel_name: numba function}, inlined into kernels (imports numba)."""
    global _FUNCS
    if _FUNCS is None:
        _FUNCS = _build()
    return _FUNCS


def _build():
    ops = _intrinsics()
    return {"npexp_float32": _exp_float32(*ops), "nplog_float32": _log_float32(*ops)}


def _intrinsics():
    """(fma, float32 -> its int32 bits, int32 bits -> float32) as numba intrinsics."""
    from numba import types as nt
    from numba.extending import intrinsic
    from llvmlite import ir

    fma = mathlib.numba_fma()        # one rounding, as the _mm*_fmadd_ps NumPy calls
    @intrinsic
    def f32_bits(typingctx, x):
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(32))
        return nt.int32(nt.float32), codegen

    @intrinsic
    def f32_from_bits(typingctx, i):
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.FloatType())
        return nt.float32(nt.int32), codegen
    return fma, f32_bits, f32_from_bits


f32, i32 = np.float32, np.int32
# NumPy's constants (npy_simd_data.h, npy_math.h), parsed from the same decimal strings
XMAX, XMIN = f32("88.72283935546875"), f32("-103.97208404541015625")
LOG2E = f32("1.442695040888963407359924681001892137")
LN2_HI, LN2_LO = f32("-6.93145752e-1"), f32("-1.42860677e-6")
P0, P1, P2 = f32("9.999999999980870924916e-01"), f32("7.257664613233124478488e-01"), \
    f32("2.473615434895520810817e-01")
P3, P4, P5 = f32("5.114512081637298353406e-02"), f32("6.757896990527504603057e-03"), \
    f32("5.082762527590693718096e-04")
Q0, Q1, Q2 = f32("1.0"), f32("-2.742335390411667452936e-01"), f32("2.159509375685829852307e-02")
ZERO, INF = f32(0.0), f32(np.inf)
NAN = np.array([0x7FC00000], np.uint32).view(np.float32)[0]   # NumPy's NPY_NANF
QMIN, BIAS, MANT = i32(-125), i32(127), i32(23)
LOGE2 = f32("0.693147180559945309417232121458176568")
SQRT1_2 = f32("0.707106781186547524400844362104849039")
LP0, LP1, LP2 = f32("0.0"), f32("9.999999999999998702752e-01"), f32("2.112677543073053063722e+00")
LP3, LP4, LP5 = f32("1.480000633576506585156e+00"), f32("3.808837741388407920751e-01"), \
    f32("2.589979117907922693523e-02")
LQ0, LQ1, LQ2 = f32("1.0"), f32("2.612677543073109236779e+00"), f32("2.453006071784736363091e+00")
LQ3, LQ4, LQ5 = f32("9.864942958519418960339e-01"), f32("1.546476374983906719538e-01"), \
    f32("5.875095403124574342950e-03")
ONE, TINY, TWO100, HUNDRED = f32(1.0), f32(np.finfo(np.float32).tiny), f32(2.0 ** 100), f32(100.0)
NEG_NAN = np.array([0xFFC00000], np.uint32).view(np.float32)[0]     # -NPY_NANF
NEG_INF = f32(-np.inf)


def _exp_float32(fma, f32_bits, f32_from_bits):
    from numba import njit

    @njit(inline="always", fastmath=False, error_model="numpy")
    def npexp_float32(x0):
        nan = x0 != x0
        hi = x0 >= XMAX
        lo = x0 <= XMIN
        # NumPy zeroes those lanes before computing; their results are replaced below, so
        # they are computed as they come (no trap: floating-point exceptions are masked, and
        # an out-of-range float-to-int conversion only feeds a value the select discards).
        # Two instructions fewer per vector: ~23% faster than NumPy's own loop here
        x = x0
        # NumPy rounds with x*log2(e) + 1.5*2**23 - 1.5*2**23: for |x*log2(e)| < 2**22 that
        # is round-half-to-even, as rint (one instruction); larger x are replaced below
        q = np.rint(x * LOG2E)
        r = fma(q, LN2_HI, x)
        r = fma(q, LN2_LO, r)
        # NumPy's third reduction step adds q * 0.0: it only turns a -0.0 into +0.0, which
        # the polynomials below cannot tell apart, so it is left out
        num = fma(P5, r, P4)
        num = fma(num, r, P3)
        num = fma(num, r, P2)
        num = fma(num, r, P1)
        num = fma(num, r, P0)
        den = fma(Q2, r, Q1)
        den = fma(den, r, Q0)
        p = num / den
        # p * 2**q with one rounding: q >= -150 here (x > XMIN), and p * 2**max(q, -125) is
        # a normal number (an exponent add), so a second, exact power of two makes the
        # subnormal results
        n = i32(q)
        p = f32_from_bits(f32_bits(p) + (max(n, QMIN) << MANT))
        p = p * f32_from_bits((min(n - QMIN, i32(0)) + BIAS) << MANT)
        p = NAN if nan else p
        p = INF if hi else p
        return ZERO if lo else p
    return npexp_float32


def _log_float32(fma, f32_bits, f32_from_bits):
    from numba import njit

    @njit(inline="always", fastmath=False, error_model="numpy")
    def nplog_float32(x0):
        nan = x0 != x0
        neg = x0 < ZERO
        zero = x0 == ZERO
        inf = x0 == INF
        x = ZERO if neg else x0
        # exponent and mantissa in [0.5, 1), subnormals scaled by 2**100 first (AVX2's way;
        # AVX-512's getexp/getmant give the same numbers for every positive finite x)
        sub = x < TINY
        xs = x * TWO100 if sub else x
        b = f32_bits(xs)
        e = f32((b >> MANT) - i32(126))
        e = e - HUNDRED if sub else e
        m = f32_from_bits((b & i32(0x7FFFFF)) | i32(126 << 23))
        small = m <= SQRT1_2
        m = m + m if small else m
        e = e - ONE if small else e
        m = m - ONE
        num = fma(LP5, m, LP4)
        num = fma(num, m, LP3)
        num = fma(num, m, LP2)
        num = fma(num, m, LP1)
        num = fma(num, m, LP0)
        den = fma(LQ5, m, LQ4)
        den = fma(den, m, LQ3)
        den = fma(den, m, LQ2)
        den = fma(den, m, LQ1)
        den = fma(den, m, LQ0)
        p = fma(e, LOGE2, num / den)
        p = NAN if nan else p
        p = NEG_NAN if neg else p
        p = NEG_INF if zero else p
        return INF if inf else p
    return nplog_float32


def probe(dtype=np.float32):
    """Inputs that tell NumPy's loop from another: specials, both sides of the overflow and
    underflow limits, the subnormal-result range, tiny arguments, random bit patterns."""
    F = np.dtype(dtype).type
    rng = np.random.default_rng(20261127)
    parts = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0], F),
             rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(F),
             np.linspace(-110, 95, 1 << 14, dtype=F), rng.standard_normal(1 << 12).astype(F)]
    for edge in (88.72283935546875, -103.97208404541015625, -87.33654, 0.0):
        e = np.array([edge], F)
        steps = np.arange(-512, 513)
        parts.append((e.view(np.int32) + steps).astype(np.int32).view(F))
    return np.concatenate(parts)


def verify(name, dtype):
    """Compare the replica with NumPy's loop on `probe()`; None when every bit matched, else
    the first mismatch (kept: `why_not` reports it from then on). Imports numba."""
    key = (name, np.dtype(dtype))
    if key in _verified:
        return _verified[key]
    from numba import njit
    fn = functions()[kernel_name(*key)]

    @njit(error_model="numpy")
    def run(a, out):
        for j in range(a.size):
            out[j] = fn(a[j])

    x = probe(dtype)
    got = np.empty_like(x)
    run(x, got)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    _verified[key] = None if bad.size == 0 else (
        "ndflow's replica of NumPy's %s for %s differs from np.%s here (x=%r: %r vs %r), so "
        "it stays with NumPy's loop" % (name, key[1], name, x[bad[0]], got[bad[0]],
                                        want[bad[0]]))
    return _verified[key]
