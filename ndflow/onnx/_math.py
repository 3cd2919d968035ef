"""Converters of the elementwise primitives: `ELEMENTWISE`, one table keyed by the primitive
objects (so that a scalar expression declared once per primitive can replace it entry by
entry).

Each converter gives NumPy's answer for the dtypes the NumPy layer hands the primitive; where
ONNX's operator differs on special values (NaN in Max, the sign of zero, integer division by
zero or of the most negative integer by -1, integer powers, shifts past the width) it adds the
nodes that make it agree, and where it cannot agree it refuses (`ctx.fail`).
"""
import functools

import numpy as np

from ..core import dtypes as D
from ..core.dtypes import is_float
from ..primitives import elementwise as E, elementwise_extra as X
from ._libm import FALLBACKS, expm1, isinf, log1p


def _dt(v):
    return np.dtype(v.dtype)


def _out(n):
    return np.dtype(n.outputs[0].dtype)


def _float_only(op_type):
    """A float function with an ONNX operator of its own; where onnxruntime has no float64
    kernel for it, written with operators it has (`_libm.FALLBACKS`)."""
    def conv(ctx, n, ins):
        dt = _dt(n.inputs[0])
        if not is_float(dt):
            ctx.fail(f"{n.prim.name} of dtype {dt}")
        if dt == np.float64 and op_type in FALLBACKS:
            return FALLBACKS[op_type](ctx, ins[0])
        return ctx.op(op_type, ins)
    return conv


def identity(ctx, n, ins):
    return ctx.op("Identity", ins[:1])


def _rounding(op_type):
    """floor, ceil: integers (and booleans) are their own value (NumPy 2 keeps their dtype)."""
    def conv(ctx, n, ins):
        if not is_float(_dt(n.inputs[0])):
            return ctx.op("Identity", ins)
        return ctx.op(op_type, ins)
    return conv


# ------------------------------------------------------------------ unary math
@functools.lru_cache(maxsize=None)
def _exact_powers(base, dtype):
    """(k of the first, base**k for every k) over the powers of `base` that are finite and
    positive floats of `dtype`, as NumPy's pow rounds them; for base 10 only normal ones (a
    subnormal is too coarse to tell 10**k from its neighbours)."""
    with np.errstate(all="ignore"):
        b = np.asarray(base, dtype)
        top = int(np.ceil(np.log(float(np.finfo(np.float64).max)) / np.log(base))) + 1
        ks = np.arange(-top - 60, top)
        vals = np.power(b, ks.astype(dtype))
        tiny = np.finfo(dtype if dtype != D.BFLOAT16 else np.float32).tiny
        keep = np.isfinite(vals) & (vals > 0 if base == 2.0 else vals >= tiny)
    ks, vals = ks[keep], vals[keep]
    return int(ks[0]), vals


def _log_base(base):
    """log(x) / log(base), and exactly k where x is base**k: the quotient of two rounded
    logarithms misses the integer for many powers (log10(1000) would be 2.9999999999999996,
    and floor(log10(x)) one digit short). x is compared with a table of the powers (the
    runtime's own Pow of float64 is not correctly rounded in every version)."""
    def conv(ctx, n, ins):
        dt = _out(n)
        r = ctx.op("Div", [ctx.op("Log", ins), ctx.const(np.log(np.asarray(base, dt)))])
        first, table = _exact_powers(base, np.dtype(dt))
        lo, hi = ctx.const(first, dt), ctx.const(first + len(table) - 1, dt)
        k = ctx.op("Clip", [ctx.op("Round", [r]), lo, hi])
        k = ctx.op("Where", [ctx.op("IsNaN", [k]), lo, k])    # (x negative or NaN)
        at = ctx.cast(ctx.op("Sub", [k, lo]), np.int64)
        power = ctx.op("Equal", [ctx.op("Gather", [ctx.const(table), at], axis=0), ins[0]])
        # (k is zero only for x == 1, where it is +0.0 as NumPy's)
        return ctx.where(power, k, r, dt, x_nonzero=True)
    return conv


def _exp2(ctx, n, ins):
    return ctx.op("Pow", [ctx.const(2, _out(n)), ins[0]])


def _expm1(ctx, n, ins):
    return expm1(ctx, ins[0], _out(n))


def log1p_conv(ctx, n, ins):
    return log1p(ctx, ins[0], _out(n))


def _cbrt(ctx, n, ins):
    """|x| ** (1/3) in float64 with one Newton step, y + (x / y**2 - y) / 3 (no cube that could
    overflow or underflow), the sign put back; zeros, infinities and NaN are their own root."""
    x, = ins
    dt = _out(n)
    f8 = np.float64
    a = ctx.op("Abs", [x if dt == f8 else ctx.cast(x, f8)])
    y = ctx.op("Pow", [a, ctx.const(1.0 / 3.0, f8)])
    step = ctx.op("Sub", [ctx.op("Div", [a, ctx.op("Mul", [y, y])]), y])
    y = ctx.op("Add", [y, ctx.op("Div", [step, ctx.const(3.0, f8)])])
    y = y if dt == f8 else ctx.cast(y, dt)
    r = ctx.where(ctx.op("Less", [x, ctx.const(0, dt)]), ctx.op("Neg", [y]), y, dt,
                  x_nonzero=True)
    special = ctx.op("Or", [ctx.op("Equal", [x, ctx.const(0, dt)]),
                            ctx.op("Or", [isinf(ctx, x, dt), ctx.op("IsNaN", [x])])])
    return ctx.where(special, x, r, dt)


@functools.lru_cache(maxsize=None)
def _reciprocal_of_zero(dtype):
    """NumPy's integer reciprocal of 0 (through a float division: INT_MIN for 32 and 64 bits,
    0 for narrower ones on x86), read from NumPy itself."""
    with np.errstate(all="ignore"):
        return np.reciprocal(np.zeros(1, dtype))[0]


def _reciprocal(ctx, n, ins):
    """Reciprocal; of integers NumPy's 1 / x truncated: 1 for 1, -1 for -1, its own value for
    0, else 0."""
    x, = ins
    dt = _out(n)
    if is_float(dt):
        return ctx.op("Reciprocal", ins)
    if dt.kind not in "iu":
        ctx.fail(f"reciprocal of dtype {dt}")
    r = ctx.where(ctx.op("Equal", [x, ctx.const(1, dt)]), ctx.const(1, dt), ctx.const(0, dt), dt)
    if dt.kind == "i":
        r = ctx.where(ctx.op("Equal", [x, ctx.const(-1, dt)]), ctx.const(-1, dt), r, dt)
    return ctx.where(ctx.op("Equal", [x, ctx.const(0, dt)]),
                     ctx.const(_reciprocal_of_zero(dt), dt), r, dt)


def _tanh(ctx, n, ins):
    """Tanh, with tanh(x) = x where x * x / 3 is below half an ulp: onnxruntime's float32 Tanh
    flushes subnormal results to zero (NumPy: tanh(1e-45) is 1e-45)."""
    x, = ins
    dt = _out(n)
    if not is_float(dt):
        ctx.fail(f"tanh of dtype {dt}")
    small = {2: 2.0 ** -7, 4: 2.0 ** -13}.get(dt.itemsize, 2.0 ** -28)
    tiny = ctx.op("Less", [ctx.op("Abs", [x]), ctx.const(small, dt)])
    return ctx.where(tiny, x, ctx.op("Tanh", [x]), dt)


def _trunc(ctx, n, ins):
    x, = ins
    if not is_float(_dt(n.inputs[0])):
        return ctx.op("Identity", [x])
    # Ceil of a negative x: -0.0 for x in (-1, 0), as NumPy's trunc
    return ctx.where(ctx.op("Less", [x, ctx.const(0, _out(n))]), ctx.op("Ceil", [x]),
                     ctx.op("Floor", [x]), _out(n))


def _sign(ctx, n, ins):
    x, = ins
    if _dt(n.inputs[0]).kind == "b":
        return ctx.op("Identity", [x])
    s = ctx.op("Sign", [x])
    if is_float(_dt(n.inputs[0])):      # NaN stays NaN, as in NumPy
        s = ctx.op("Where", [ctx.op("IsNaN", [x]), x, s])
        if n.params.get("narrow_dtype") == D.BFLOAT16:   # ml_dtypes: sign(-0.0) is -0.0
            s = ctx.where(ctx.op("Equal", [x, ctx.const(0, _dt(n.inputs[0]))]), x, s,
                          _dt(n.inputs[0]))
    return s


def _neg(ctx, n, ins):
    if _dt(n.inputs[0]).kind == "u":
        # NumPy wraps around: 0 - x in the same modular arithmetic
        return ctx.op("Sub", [ctx.const(0, _out(n)), ins[0]])
    return ctx.op("Neg", ins)


def _abs(ctx, n, ins):
    if _dt(n.inputs[0]).kind in "bu":
        return ctx.op("Identity", ins)
    return ctx.op("Abs", ins)


def full_of(ctx, x, dtype, value=0):
    return ctx.op("ConstantOfShape", [ctx.op("Shape", [x])],
                  value=ctx.onnx.numpy_helper.from_array(np.asarray([value], dtype=dtype)))


def _isfinite(ctx, n, ins):
    x, = ins
    dt = _dt(n.inputs[0])
    if not is_float(dt):
        return full_of(ctx, x, np.bool_, True)
    return ctx.op("Not", [ctx.op("Or", [ctx.op("IsNaN", [x]), isinf(ctx, x, dt)])])


def _isnan(ctx, n, ins):
    if not is_float(_dt(n.inputs[0])):
        return full_of(ctx, ins[0], np.bool_, False)
    return ctx.op("IsNaN", ins)


def _isinf_conv(ctx, n, ins):
    dt = _dt(n.inputs[0])
    if not is_float(dt):
        return full_of(ctx, ins[0], np.bool_, False)
    return isinf(ctx, ins[0], dt)


def as_bool(ctx, v, name):
    if _dt(v).kind == "b":
        return name
    return ctx.op("Not", [ctx.op("Equal", [name, ctx.const(0, v.dtype)])])


def _logical_not(ctx, n, ins):
    return ctx.op("Not", [as_bool(ctx, n.inputs[0], ins[0])])


def _invert(ctx, n, ins):
    if _dt(n.inputs[0]).kind == "b":
        return ctx.op("Not", ins)
    if ctx.opset < 18:
        ctx.fail("invert below opset 18 (BitwiseNot)")
    return ctx.op("BitwiseNot", ins)


def _logical(op_type):
    def conv(ctx, n, ins):
        return ctx.op(op_type, [as_bool(ctx, v, x) for v, x in zip(n.inputs, ins)])
    return conv


# ------------------------------------------------------------------ binary arithmetic
def _zero_constant(ctx, x):
    """-1 or +1 for a constant -0.0 or +0.0 of one element, else 0."""
    k = ctx.known(x)
    if k is None or k.size != 1 or k.dtype.kind != "f" or k.reshape(()) != 0:
        return 0
    return -1 if np.signbit(k.reshape(())) else 1


def _arith(op_type, bool_op=None):
    """add, subtract, multiply. A float addition of a constant zero is written so that no
    runtime can drop it as a no-op: x + 0.0 turns -0.0 into +0.0 (onnxruntime's optimizer
    removes Add(x, 0) when the constant comes from a folded Cast), x + -0.0 and x - 0.0 are x."""
    def conv(ctx, n, ins):
        dt = _out(n)
        if dt.kind == "b":
            if bool_op is None:
                ctx.fail(f"{n.prim.name} of booleans")
            return ctx.op(bool_op, ins)
        if is_float(dt) and op_type in ("Add", "Sub"):
            for i, other in ((1, 0), (0, 1)) if op_type == "Add" else ((1, 0),):
                z = _zero_constant(ctx, ins[i]) * (1 if op_type == "Add" else -1)
                if z and n.inputs[other].shape == n.outputs[0].shape:
                    return ctx.positive_zero(ins[other], dt) if z > 0 else \
                        ctx.op("Identity", [ins[other]])
        return ctx.op(op_type, ins)
    return conv


def _true_divide(ctx, n, ins):
    if not is_float(_out(n)):
        ctx.fail(f"true_divide to dtype {_out(n)}")
    return ctx.op("Div", ins)


def _comparison(op_type):
    def conv(ctx, n, ins):
        if _dt(n.inputs[0]).kind == "b":       # ONNX orders numbers only: False < True
            ins = [ctx.cast(x, np.uint8) for x in ins]
        return ctx.op(op_type, ins)
    return conv


def _not_equal(ctx, n, ins):
    return ctx.op("Not", [ctx.op("Equal", ins)])


@functools.lru_cache(maxsize=None)
def tie_operand(ufunc, dtype):
    """Which operand NumPy's `ufunc` (maximum/minimum) returns for two equal operands (the
    sign of a zero result): 1 for the second, 0 for the first. Its SIMD loops take the
    second, its scalar loops (float16) the first; read from NumPy itself on this machine."""
    z = np.array([0.0, -0.0] * 8, dtype=dtype)
    r = ufunc(z, z[::-1].copy())
    return 0 if np.array_equal(np.signbit(r), np.signbit(z)) else 1


def _extremum(ufunc, greater, or_equal):
    """NumPy's maximum/minimum: NaN from either operand; between equal operands (zeros of
    opposite signs) the one NumPy's own loop picks; else the larger (smaller). ONNX leaves
    NaN unspecified and onnxruntime's Max picks either zero depending on the element's place.
    Written as a select on a comparison: `a` where `a` wins or is NaN, else `b` (NaN or not)."""
    def conv(ctx, n, ins):
        a, b = ins
        dt = _out(n)
        if dt.kind == "b":
            return ctx.op("Or" if ufunc is np.maximum else "And", ins)
        if not is_float(dt):
            if dt.itemsize == 2:      # onnxruntime has no 16-bit Max/Min: exact in int32
                r = ctx.op("Max" if ufunc is np.maximum else "Min",
                           [ctx.cast(a, np.int32), ctx.cast(b, np.int32)])
                return ctx.cast(r, dt)
            return ctx.op("Max" if ufunc is np.maximum else "Min", ins)
        first_wins_ties = tie_operand(ufunc, dt) == 0
        op = (greater if not first_wins_ties else or_equal)
        wins = ctx.op(op, [a, b])
        ka, kb = ctx.known(a), ctx.known(b)
        if ka is None or np.isnan(ka).any():
            wins = ctx.op("Or", [wins, ctx.op("IsNaN", [a])])
        # `a` strictly above a constant `b` >= 0 (below one <= 0) is nonzero: relu's 0
        safe = not first_wins_ties and kb is not None and bool(
            np.all(kb >= 0) if ufunc is np.maximum else np.all(kb <= 0))
        return ctx.where(wins, a, b, dt, x_nonzero=safe)
    return conv


def _int_divisor(ctx, dt, b):
    """For integer division by `b`: (a safe divisor, where b == 0, where b == -1). NumPy gives
    0 for a division by zero (with a warning) and wraps MIN // -1 to MIN; integer division
    units trap on both (SIGFPE), so neither reaches Div or Mod: those divisors become 1."""
    zero = ctx.op("Equal", [b, ctx.const(0, dt)])
    bad = zero
    minus1 = None
    if dt.kind == "i":
        minus1 = ctx.op("Equal", [b, ctx.const(-1, dt)])
        bad = ctx.op("Or", [zero, minus1])
    return ctx.where(bad, ctx.const(1, dt), b, dt), zero, minus1


def _float_floor_divide(ctx, dt, a, b):
    # NumPy's floor_divide: floor((a - fmod(a, b)) / b) with its corrections; the direct
    # floor(a / b) differs for results that round across an integer
    mod = ctx.op("Mod", [a, b], fmod=1)
    div = ctx.op("Div", [ctx.op("Sub", [a, mod]), b])
    zero = ctx.const(0, dt)
    fix = ctx.op("And", [ctx.op("Not", [ctx.op("Equal", [mod, zero])]),
                         ctx.op("Xor", [ctx.op("Less", [b, zero]), ctx.op("Less", [mod, zero])])])
    div = ctx.where(fix, ctx.op("Sub", [div, ctx.const(1, dt)]), div, dt)
    fl = ctx.op("Floor", [div])
    fl = ctx.where(ctx.op("Greater", [ctx.op("Sub", [div, fl]), ctx.const(0.5, dt)]),
                   ctx.op("Add", [fl, ctx.const(1, dt)]), fl, dt)
    # a zero quotient takes the sign of a / b (NumPy: copysign(0, a / b)); b == 0: a / b
    plain = ctx.op("Div", [a, b])
    fl = ctx.where(ctx.op("Equal", [div, zero]), ctx.op("Mul", [zero, plain]), fl, dt)
    return ctx.where(ctx.op("Equal", [b, zero]), plain, fl, dt)


def _floor_divide(ctx, n, ins):
    a, b = ins
    dt = _out(n)
    if is_float(dt):
        return _float_floor_divide(ctx, dt, a, b)
    if dt.kind not in "iu":
        ctx.fail(f"floor_divide of dtype {dt}")
    sb, zero, minus1 = _int_divisor(ctx, dt, b)
    q = ctx.op("Div", [a, sb])                      # truncates toward zero
    if dt.kind == "i":
        r = ctx.op("Sub", [a, ctx.op("Mul", [q, sb])])
        zero_c = ctx.const(0, dt)
        adjust = ctx.op("And", [ctx.op("Not", [ctx.op("Equal", [r, zero_c])]),
                                ctx.op("Xor", [ctx.op("Less", [r, zero_c]),
                                               ctx.op("Less", [sb, zero_c])])])
        q = ctx.where(adjust, ctx.op("Sub", [q, ctx.const(1, dt)]), q, dt)
        # a // -1 is -a, wrapping MIN to MIN as NumPy does
        q = ctx.where(minus1, ctx.op("Sub", [ctx.const(0, dt), a]), q, dt)
    return ctx.where(zero, ctx.const(0, dt), q, dt)


def _remainder(ctx, n, ins):
    a, b = ins
    dt = _out(n)
    if is_float(dt):
        zero = ctx.const(0, dt)
        m = ctx.op("Mod", [a, b], fmod=1)
        fix = ctx.op("And", [ctx.op("Not", [ctx.op("Equal", [m, zero])]),
                             ctx.op("Xor", [ctx.op("Less", [b, zero]), ctx.op("Less", [m, zero])])])
        m = ctx.where(fix, ctx.op("Add", [m, b]), m, dt)
        # a zero result takes the divisor's sign (NumPy: copysign(0, b))
        signed0 = ctx.where(ctx.op("Less", [b, zero]), ctx.const(-0.0, dt), ctx.const(0.0, dt),
                            dt)
        return ctx.where(ctx.op("Equal", [m, zero]), signed0, m, dt)
    if dt.kind not in "iu":
        ctx.fail(f"remainder of dtype {dt}")
    sb, zero, minus1 = _int_divisor(ctx, dt, b)
    # (x % 1 is 0, as x % -1 is)
    return ctx.where(zero, ctx.const(0, dt), ctx.op("Mod", [a, sb], fmod=0), dt)


def _fmod(ctx, n, ins):
    a, b = ins
    dt = _out(n)
    if is_float(dt):
        return ctx.op("Mod", ins, fmod=1)
    if dt.kind not in "iu":
        ctx.fail(f"fmod of dtype {dt}")
    sb, zero, _ = _int_divisor(ctx, dt, b)
    return ctx.where(zero, ctx.const(0, dt), ctx.op("Mod", [a, sb], fmod=1), dt)


def _int_power(ctx, dt, a, b):
    """a ** b for integers by binary powering, in the dtype's wrap-around arithmetic (as
    NumPy's loop): onnxruntime's integer Pow goes through double and saturates. One step per
    bit of the exponent's dtype (the exponent is known to be >= 0 here)."""
    one = ctx.const(1, dt)
    two = ctx.const(2, dt)
    result = full_of(ctx, ctx.op("Add", [a, b]), dt, 1)   # broadcast to the result's shape
    base, e = a, b
    for _ in range(dt.itemsize * 8 - (dt.kind == "i")):
        odd = ctx.op("Equal", [ctx.op("Mod", [e, two], fmod=0), one])
        result = ctx.where(odd, ctx.op("Mul", [result, base]), result, dt)
        base = ctx.op("Mul", [base, base])
        e = ctx.op("Div", [e, two])
    return result


_SQRT_POWER = (np.dtype(np.float32), np.dtype(np.float64))


def _power(ctx, n, ins):
    a, b = ins
    dt = _out(n)
    if is_float(dt):
        r = ctx.op("Pow", ins)
        if n.inputs[1].ndim or n.params.get("narrow_dtype", dt) not in _SQRT_POWER:
            return r
        # NumPy's float32/64 loops take a 0-d exponent of 0.5 as sqrt: sqrt(-inf) is NaN and
        # sqrt(-0.0) is -0.0, where pow gives inf and +0.0 (its 16-bit loops call pow)
        kb = ctx.known(b)
        if kb is not None:
            return ctx.op("Sqrt", [a]) if kb == 0.5 else r
        return ctx.where(ctx.op("Equal", [b, ctx.const(0.5, dt)]), ctx.op("Sqrt", [a]), r, dt)
    if dt.kind not in "iu":
        ctx.fail(f"power of dtype {dt}")
    kb = ctx.known(b)
    if kb is not None and kb.ndim == 0 and 0 <= int(kb) <= 64:
        # a constant exponent (x ** 2): that many multiplications, no loop over bits
        k = int(kb)
        r = full_of(ctx, a, dt, 1) if k == 0 else a
        for _ in range(max(k - 1, 0)):
            r = ctx.op("Mul", [r, a])
        return r
    if dt.kind == "i":
        b = ctx.error_if(b, ctx.op("Less", [b, ctx.const(0, dt)]), "ValueError",
                         "Integers to negative integer powers are not allowed.")
    wide = np.dtype(np.int64) if dt.itemsize < 4 else dt   # ONNX Mod needs no 8/16-bit kernel
    r = _int_power(ctx, wide, ctx.cast(a, wide) if wide != dt else a,
                   ctx.cast(b, wide) if wide != dt else b)
    return ctx.cast(r, dt) if wide != dt else r


def _shift(left):
    """NumPy's shifts: the count read as unsigned, so a negative count or one of at least the
    width shifts everything out (0, or -1 for a negative number shifted right); a signed right
    shift is arithmetic. ONNX's BitShift takes unsigned integers: a signed operand goes
    through its unsigned twin of the same width (the same bits)."""
    def conv(ctx, n, ins):
        x, k = ins
        dt = _out(n)
        if dt.kind not in "iu":
            ctx.fail(f"{n.prim.name} of dtype {dt}")
        udt = np.dtype("u%d" % dt.itemsize)
        width = dt.itemsize * 8
        ku = ctx.cast(k, udt) if dt.kind == "i" else k
        out_of_range = ctx.op("GreaterOrEqual", [ku, ctx.const(width, udt)])
        safe_k = ctx.where(out_of_range, ctx.const(0, udt), ku, udt)
        if dt.kind == "u" or left:
            xu = ctx.cast(x, udt) if dt.kind == "i" else x
            r = ctx.op("BitShift", [xu, safe_k], direction="LEFT" if left else "RIGHT")
            r = ctx.where(out_of_range, ctx.const(0, udt), r, udt)
            return ctx.cast(r, dt) if dt.kind == "i" else r
        # arithmetic right shift: x >> k for x >= 0, ~(~x >> k) for x < 0
        neg = ctx.op("Less", [x, ctx.const(0, dt)])
        if ctx.opset < 18:
            ctx.fail(f"{n.prim.name} of dtype {dt} below opset 18 (BitwiseNot)")
        mag = ctx.cast(ctx.where(neg, ctx.op("BitwiseNot", [x]), x, dt), udt)
        shifted = ctx.cast(ctx.op("BitShift", [mag, safe_k], direction="RIGHT"), dt)
        shifted = ctx.where(out_of_range, ctx.const(0, dt), shifted, dt)
        return ctx.where(neg, ctx.op("BitwiseNot", [shifted]), shifted, dt)
    return conv


def _bitwise(op_type, bool_op):
    def conv(ctx, n, ins):
        if _out(n).kind == "b":
            return ctx.op(bool_op, ins)
        if ctx.opset < 18:
            ctx.fail(f"{n.prim.name} below opset 18")
        return ctx.op(op_type, ins)
    return conv


def _logaddexp(base2):
    """max(x, y) + log1p(base**-|x - y|) (over ln 2 for base 2); where x == y (both the same
    infinity included, where x - y is NaN) x + log(2) (x + 1); NaN from either operand."""
    def conv(ctx, n, ins):
        x, y = ins
        dt = _out(n)
        d = ctx.op("Abs", [ctx.op("Sub", [x, y])])
        if base2:
            e = ctx.op("Pow", [ctx.const(2, dt), ctx.op("Neg", [d])])
        else:
            e = ctx.op("Exp", [ctx.op("Neg", [d])])
        soft = log1p(ctx, e, dt)
        if base2:
            soft = ctx.op("Div", [soft, ctx.const(np.log(2.0), dt)])
        big = ctx.op("Where", [ctx.op("Greater", [x, y]), x, y])   # NaN: the sum is NaN
        r = ctx.op("Add", [big, soft])
        tie = ctx.op("Add", [x, ctx.const(1.0 if base2 else np.log(2.0), dt)])
        return ctx.where(ctx.op("Equal", [x, y]), tie, r, dt)
    return conv


# ------------------------------------------------------------------ conversion, select
def _convert(ctx, n, ins):
    src, dst = _dt(n.inputs[0]), np.dtype(n.params["dtype"])
    if dst.kind == "b" and src.kind != "b":
        if src == D.BFLOAT16:     # (no bfloat16 Equal in ONNX before opset 19)
            return ctx.op("Not", [ctx.op("Equal", [ctx.cast(ins[0], np.float32),
                                                   ctx.const(np.float32(0))])])
        return as_bool(ctx, n.inputs[0], ins[0])
    if src == np.float64 and dst == np.float16:
        return _f64_to_f16(ctx, ins[0])
    return ctx.cast(ins[0], dst)


def _f64_to_f16(ctx, x):
    """float64 to float16 rounded once, as NumPy does: onnxruntime goes through float32 and
    rounds twice (1 + 2**-11 + 2**-40 becomes 1.0, not 1.001). The value is rounded to
    float16's precision in float64 (scaled by its power of two, Round is half-to-even, the
    scaling is exact) and then cast exactly."""
    f8 = np.float64
    a = ctx.op("Abs", [x])
    # the exponent of |x|, floor(log2 |x|), corrected where the logarithm rounded across
    e = ctx.op("Floor", [ctx.op("Div", [ctx.op("Log", [a]), ctx.const(np.log(2.0), f8)])])
    e = ctx.op("Max", [e, ctx.const(-14.0, f8)])             # float16's subnormals: fixed ulp
    two = ctx.const(2.0, f8)
    one = ctx.const(1.0, f8)
    e = ctx.where(ctx.op("Greater", [ctx.op("Pow", [two, e]), a]), ctx.op("Sub", [e, one]), e,
                  f8, x_nonzero=True)
    e = ctx.where(ctx.op("LessOrEqual", [ctx.op("Pow", [two, ctx.op("Add", [e, one])]), a]),
                  ctx.op("Add", [e, one]), e, f8, x_nonzero=True)
    e = ctx.op("Max", [e, ctx.const(-14.0, f8)])
    ulp = ctx.op("Pow", [two, ctx.op("Sub", [e, ctx.const(10.0, f8)])])
    rounded = ctx.op("Mul", [ctx.op("Round", [ctx.op("Div", [x, ulp])]), ulp])
    finite = ctx.op("Not", [ctx.op("Or", [ctx.op("IsNaN", [x]), ctx.op("IsInf", [x])])])
    nonzero = ctx.op("And", [finite, ctx.op("Not", [ctx.op("Equal", [x, ctx.const(0.0, f8)])])])
    return ctx.cast(ctx.where(nonzero, rounded, x, f8), np.float16)


def _select(ctx, n, ins):
    c, x, y = ins
    return ctx.where(as_bool(ctx, n.inputs[0], c), x, y, _out(n))


def _like(value):
    def conv(ctx, n, ins):
        v = n.params.get("fill_value", value)
        return full_of(ctx, ins[0], _out(n), v)
    return conv


ELEMENTWISE = {
    E.neg_p: _neg, E.positive_p: identity, E.exp_p: _float_only("Exp"), E.exp2_p: _exp2,
    E.expm1_p: _expm1, E.log_p: _float_only("Log"), E.log2_p: _log_base(2.0),
    E.log10_p: _log_base(10.0), E.log1p_p: log1p_conv, E.sqrt_p: _float_only("Sqrt"),
    E.cbrt_p: _cbrt, E.sin_p: _float_only("Sin"), E.cos_p: _float_only("Cos"),
    E.tan_p: _float_only("Tan"), E.arcsin_p: _float_only("Asin"),
    E.arccos_p: _float_only("Acos"), E.arctan_p: _float_only("Atan"),
    E.sinh_p: _float_only("Sinh"), E.cosh_p: _float_only("Cosh"),
    E.tanh_p: _tanh, E.arcsinh_p: _float_only("Asinh"),
    E.arccosh_p: _float_only("Acosh"), E.arctanh_p: _float_only("Atanh"),
    E.reciprocal_p: _reciprocal, E.abs_p: _abs, E.sign_p: _sign,
    E.floor_p: _rounding("Floor"), E.ceil_p: _rounding("Ceil"), E.trunc_p: _trunc,
    E.rint_p: _float_only("Round"), E.conj_p: identity,
    E.logical_not_p: _logical_not, E.invert_p: _invert, E.isnan_p: _isnan,
    E.isinf_p: _isinf_conv, E.isfinite_p: _isfinite,
    E.convert_p: _convert, E.copy_p: identity,
    E.add_p: _arith("Add", "Or"), E.sub_p: _arith("Sub"), E.mul_p: _arith("Mul", "And"),
    E.div_p: _true_divide, E.floordiv_p: _floor_divide, E.rem_p: _remainder,
    E.pow_p: _power, E.max_p: _extremum(np.maximum, "Greater", "GreaterOrEqual"),
    E.min_p: _extremum(np.minimum, "Less", "LessOrEqual"),
    E.bitwise_and_p: _bitwise("BitwiseAnd", "And"), E.bitwise_or_p: _bitwise("BitwiseOr", "Or"),
    E.bitwise_xor_p: _bitwise("BitwiseXor", "Xor"),
    E.left_shift_p: _shift(True), E.right_shift_p: _shift(False),
    E.eq_p: _comparison("Equal"), E.ne_p: _not_equal, E.lt_p: _comparison("Less"),
    E.le_p: _comparison("LessOrEqual"), E.gt_p: _comparison("Greater"),
    E.ge_p: _comparison("GreaterOrEqual"), E.logical_and_p: _logical("And"),
    E.logical_or_p: _logical("Or"), E.logical_xor_p: _logical("Xor"),
    E.select_p: _select, E.zeros_like_p: _like(0), E.ones_like_p: _like(1),
    # (complex values are refused before any converter: these see real arrays, whose real
    # part is the array and whose imaginary part is zeros)
    E.real_p: identity, E.imag_p: _like(0),
    E.full_like_p: _like(None), X.fmod_p: _fmod,
    X.logaddexp_p: _logaddexp(False), X.logaddexp2_p: _logaddexp(True),
}
