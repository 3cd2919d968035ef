"""NumPy's own SIMD elementary functions, step for step, so that tier 1 may fuse them exactly.

NumPy's x86 builds compute float32 `exp` with one algorithm on every SIMD target they dispatch
to (AVX2+FMA3 and AVX-512; `loops_exponent_log.dispatch.c.src`): the argument is reduced by a
power of two found with the float32 round-to-nearest trick, reduced again in two fused
multiply-adds by ln 2 split in two, a ratio of a 5th- and a 2nd-order minimax polynomial is
evaluated with FMAs and one IEEE division, and the result is scaled by that power of two
(AVX-512's `scalef`, or an exponent add plus an exact power-of-two division for subnormal
results on AVX2: both one correctly rounded product). Every one of those steps is an IEEE
operation, so numba code that makes the same operations in the same order gives the same bits:
checked against `np.exp` for all 2**32 float32 inputs on an AVX-512 machine (NaN in, NumPy's
quiet NaN out; +-inf, overflow, underflow and subnormal results included). The loop is
NumPy's speed; fused with its neighbours it saves their passes over memory.

Only where NumPy's dispatch table says its loop is one of those SIMD targets is the replica
offered (`why_not`); elsewhere NumPy calls the C library and tier 1 keeps `exp` out of its
regions as before. The first kernel that uses a replica is compiled only after the replica has
matched `np.exp` bit for bit on a probe of special, edge and random inputs in this process
(`verify`); a mismatch leaves tier 0 in place and `why_not` says why from then on.

This module imports numba only in `functions()` and `verify()`.
"""
import numpy as np

# which NumPy loop each replica reproduces: {(ufunc name, dtype): dispatch target names}
_TARGETS = {
    # NumPy >= 2.4 names x86 targets by micro-architecture level, older ones by feature
    ("exp", np.dtype(np.float32)): ("X86_V3", "X86_V4", "AVX512F", "AVX512_SKX", "AVX2",
                                    "FMA3", "AVX2__FMA3", "FMA3__AVX2"),
}

_why = {}           # (name, dtype) -> reason it is not offered, or None
_verified = {}      # (name, dtype) -> None (matched) or the mismatch found by `verify`


def _dispatch_target(name, dtype):
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
            cur = _dispatch_target(*key)
            _why[key] = None if cur in targets else (
                "NumPy's %s loop for %s here is %r, not a SIMD loop ndflow reproduces"
                % (name, key[1], cur))
    return _why[key]


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
    from numba import njit, types as nt
    from numba.extending import intrinsic
    from llvmlite import ir

    @intrinsic
    def fma(typingctx, a, b, c):
        # one rounding, as the _mm*_fmadd_ps NumPy calls (numba has no fma of its own)
        def codegen(context, builder, sig, args):
            return builder.fma(*args)
        return a(a, b, c), codegen

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

    f, i = np.float32, np.int32
    # NumPy's constants (npy_simd_data.h, npy_math.h), parsed from the same decimal strings
    XMAX, XMIN = f("88.72283935546875"), f("-103.97208404541015625")
    LOG2E = f("1.442695040888963407359924681001892137")
    MAGIC = f(1.5 * 2 ** 23)          # x + MAGIC - MAGIC rounds x to an integer (|x| < 2**22)
    LN2_HI, LN2_LO = f("-6.93145752e-1"), f("-1.42860677e-6")
    P0, P1, P2 = f("9.999999999980870924916e-01"), f("7.257664613233124478488e-01"), \
        f("2.473615434895520810817e-01")
    P3, P4, P5 = f("5.114512081637298353406e-02"), f("6.757896990527504603057e-03"), \
        f("5.082762527590693718096e-04")
    Q0, Q1, Q2 = f("1.0"), f("-2.742335390411667452936e-01"), f("2.159509375685829852307e-02")
    ZERO, INF = f(0.0), f(np.inf)
    NAN = np.array([0x7FC00000], np.uint32).view(np.float32)[0]   # NumPy's NPY_NANF
    QMIN, BIAS, MANT = i(-125), i(127), i(23)

    @njit(inline="always", fastmath=False, error_model="numpy")
    def npexp_float32(x0):
        nan = x0 != x0
        hi = x0 >= XMAX
        lo = x0 <= XMIN
        x = ZERO if (nan | hi | lo) else x0
        q = x * LOG2E
        q = q + MAGIC
        q = q - MAGIC
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
        n = i(q)
        p = f32_from_bits(f32_bits(p) + (max(n, QMIN) << MANT))
        p = p * f32_from_bits((min(n - QMIN, i(0)) + BIAS) << MANT)
        p = NAN if nan else p
        p = INF if hi else p
        return ZERO if lo else p

    return {"npexp_float32": npexp_float32}


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
