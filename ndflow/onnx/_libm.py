"""Elementwise functions written with other ONNX operators: log1p and expm1 (ONNX has
neither), and the float64 inverse trigonometric and hyperbolic functions and tan, from the
operators onnxruntime has double kernels for (Sin, Cos, Exp, Log, Sqrt; it has no double Atan,
Asin, Acos, Sinh, Cosh, Tan, Asinh, Acosh, Atanh). Each is accurate to a few ulp (the tests
compare with NumPy within 2e-14 for float64), keeps the sign of zero, and gives NumPy's NaN
and infinities.

atan has no double operator to build on: a float32 Atan is refined by two Newton steps on
sin(y) - x cos(y) = 0 (each step squares the relative error, 1e-7 -> 1e-14 -> below 1 ulp).
"""
import numpy as np

F8 = np.dtype(np.float64)
_LN2 = float(np.log(2.0))
_HALF_PI = float(np.pi / 2)


def _c(ctx, v):
    return ctx.const(v, F8)


def _signed(ctx, x, magnitude):
    """sign(x) * magnitude, and x itself where x is ±0 (so -0.0 stays -0.0)."""
    r = ctx.where(ctx.op("Less", [x, _c(ctx, 0.0)]), ctx.op("Neg", [magnitude]), magnitude, F8,
                  x_nonzero=True)
    return ctx.where(ctx.op("Equal", [x, _c(ctx, 0.0)]), x, r, F8)


def isinf(ctx, x, dt, **kw):
    """IsInf, through float32 for 16-bit floats (ONNX defines it from float32 on before
    opset 20; exact)."""
    return ctx.op("IsInf", [ctx.cast(x, np.float32) if np.dtype(dt).itemsize < 4 else x], **kw)


def log1p(ctx, x, dt):
    """Goldberg's accurate log1p: log(u) * (x / (u - 1)), u = 1 + x (the quotient first: the
    product log(u) * x overflows for x near the largest float); x where u == 1; log(u) where
    u is infinite."""
    one = ctx.const(1, dt)
    u = ctx.op("Add", [x, one])
    lu = ctx.op("Log", [u])
    r = ctx.op("Mul", [lu, ctx.op("Div", [x, ctx.op("Sub", [u, one])])])
    r = ctx.where(isinf(ctx, u, dt, detect_negative=0), lu, r, dt, x_nonzero=True)
    return ctx.where(ctx.op("Equal", [u, one]), x, r, dt)


def expm1(ctx, x, dt):
    """Kahan's accurate expm1: (u - 1) * (x / log(u)), u = exp(x); -1 where u - 1 is (its
    log is -inf), u where infinite, x where u == 1."""
    one = ctx.const(1, dt)
    u = ctx.op("Exp", [x])
    um1 = ctx.op("Sub", [u, one])
    r = ctx.op("Mul", [um1, ctx.op("Div", [x, ctx.op("Log", [u])])])
    r = ctx.where(ctx.op("Equal", [um1, ctx.const(-1, dt)]), um1, r, dt, x_nonzero=True)
    r = ctx.where(isinf(ctx, u, dt, detect_negative=0), u, r, dt, x_nonzero=True)
    return ctx.where(ctx.op("Equal", [u, one]), x, r, dt)


def tan(ctx, x):
    return ctx.op("Div", [ctx.op("Sin", [x]), ctx.op("Cos", [x])])


def _half_exp(ctx, a):
    """(e, 0.5 * e * e) with e = exp(a / 2): exp(a) / 2 without overflowing before cosh does."""
    e = ctx.op("Exp", [ctx.op("Mul", [a, _c(ctx, 0.5)])])
    return e, ctx.op("Mul", [ctx.op("Mul", [e, _c(ctx, 0.5)]), e])


def cosh(ctx, x):
    a = ctx.op("Abs", [x])
    e, big = _half_exp(ctx, a)
    return ctx.op("Add", [big, ctx.op("Div", [_c(ctx, 0.5), ctx.op("Mul", [e, e])])])


def sinh(ctx, x):
    """(expm1(a) + expm1(a) / (expm1(a) + 1)) / 2 below 1 (no cancellation), exp(a) / 2 -
    exp(-a) / 2 from 1 on; the sign of x."""
    a = ctx.op("Abs", [x])
    m = expm1(ctx, a, F8)
    small = ctx.op("Mul", [ctx.op("Add", [m, ctx.op("Div", [m, ctx.op("Add", [m, _c(ctx, 1.0)])])]),
                           _c(ctx, 0.5)])
    e, big = _half_exp(ctx, a)
    big = ctx.op("Sub", [big, ctx.op("Div", [_c(ctx, 0.5), ctx.op("Mul", [e, e])])])
    r = ctx.where(ctx.op("Less", [a, _c(ctx, 1.0)]), small, big, F8)
    return _signed(ctx, x, r)


def _large(ctx, a):
    """log(2a): asinh(a) and acosh(a) where a * a would overflow (a >= 2**28 already rounds)."""
    return ctx.op("Add", [ctx.op("Log", [a]), _c(ctx, _LN2)])


def asinh(ctx, x):
    a = ctx.op("Abs", [x])
    aa = ctx.op("Mul", [a, a])
    root = ctx.op("Sqrt", [ctx.op("Add", [aa, _c(ctx, 1.0)])])
    r = log1p(ctx, ctx.op("Add", [a, ctx.op("Div", [aa, ctx.op("Add", [root, _c(ctx, 1.0)])])]),
              F8)
    r = ctx.where(ctx.op("Less", [a, _c(ctx, 2.0 ** 28)]), r, _large(ctx, a), F8)
    return _signed(ctx, x, r)


def acosh(ctx, x):
    t = ctx.op("Sub", [x, _c(ctx, 1.0)])
    inner = ctx.op("Add", [ctx.op("Mul", [t, _c(ctx, 2.0)]), ctx.op("Mul", [t, t])])
    r = log1p(ctx, ctx.op("Add", [t, ctx.op("Sqrt", [inner])]), F8)
    # (a NaN x keeps the first branch's NaN)
    r = ctx.where(ctx.op("Less", [x, _c(ctx, 2.0 ** 28)]), r, _large(ctx, x), F8)
    return ctx.op("Where", [ctx.op("Less", [x, _c(ctx, 1.0)]), _c(ctx, np.nan), r])


def atanh(ctx, x):
    a = ctx.op("Abs", [x])
    q = ctx.op("Div", [ctx.op("Mul", [a, _c(ctx, 2.0)]), ctx.op("Sub", [_c(ctx, 1.0), a])])
    return _signed(ctx, x, ctx.op("Mul", [log1p(ctx, q, F8), _c(ctx, 0.5)]))


def atan(ctx, x):
    y = ctx.cast(ctx.op("Atan", [ctx.cast(x, np.float32)]), F8)
    for _ in range(2):
        s, c = ctx.op("Sin", [y]), ctx.op("Cos", [y])
        f = ctx.op("Sub", [s, ctx.op("Mul", [x, c])])
        df = ctx.op("Add", [c, ctx.op("Mul", [x, s])])
        y = ctx.op("Sub", [y, ctx.op("Div", [f, df])])
    inf = ctx.op("IsInf", [x])
    y = ctx.where(inf, ctx.op("Mul", [ctx.op("Sign", [x]), _c(ctx, _HALF_PI)]), y, F8,
                  x_nonzero=True)
    return ctx.where(ctx.op("Equal", [x, _c(ctx, 0.0)]), x, y, F8)


def asin(ctx, x):
    one = _c(ctx, 1.0)
    cos = ctx.op("Sqrt", [ctx.op("Mul", [ctx.op("Sub", [one, x]), ctx.op("Add", [one, x])])])
    return atan(ctx, ctx.op("Div", [x, cos]))


def acos(ctx, x):
    one = _c(ctx, 1.0)
    half = atan(ctx, ctx.op("Sqrt", [ctx.op("Div", [ctx.op("Sub", [one, x]),
                                                    ctx.op("Add", [one, x])])]))
    return ctx.op("Mul", [half, _c(ctx, 2.0)])


FALLBACKS = {"Tan": tan, "Sinh": sinh, "Cosh": cosh, "Asinh": asinh, "Acosh": acosh,
             "Atanh": atanh, "Atan": atan, "Asin": asin, "Acos": acos}
