"""Mathematical functions of the main namespace that are not ufuncs: angle, sinc, i0, unwrap,
interp. Composed of ndflow operations, so they differentiate, trace and batch."""
import numpy as np

from ..core.primitive import bind
from ..primitives import elementwise as E
from ._core import asarray
from .creation import zeros_like
from .indexing import take
from .manipulation import concatenate, moveaxis
from .math import (arctan2, real, imag, sin, where_ as where, remainder, absolute, logical_and,
                   less, conjugate, isfinite, isnan, signbit, greater, clip, where_, equal)
from .sorting import searchsorted, argsort
from .differences import diff, cumsum
from .windows import _i0


def angle(z, deg=False):
    """The argument of complex numbers (0 or pi for reals), as `numpy.angle`."""
    z = asarray(z)
    if z.dtype.kind == "c":
        a = arctan2(imag(z), real(z))
    else:
        zf = z if z.dtype.kind == "f" else z.astype(np.float64)
        a = arctan2(zeros_like(zf), zf)      # +0, not -0: pi (not -pi) for negative reals
    return a * (180.0 / np.pi) if deg else a


def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (the gradient there is 0, not NaN), as `numpy.sinc`."""
    x = asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    zero = x == 0
    y = np.pi * where(zero, 1.0, x)       # a safe operand: no 0/0 in the branch not taken
    # at 0 the Taylor polynomial (exactly 1 there): its derivatives are sinc's at 0 up to the
    # fourth (sinc''(0) = -pi^2/3), where a constant 1 would give 0
    p2 = (np.pi * where(zero, x, 0.0)) ** 2
    return where(zero, 1.0 - p2 / 6.0 + p2 * p2 / 120.0, sin(y) / y)


def i0(x):
    """The modified Bessel function of the first kind, order 0, as `numpy.i0` (power series up
    to |x| = 30, asymptotic expansion above; about 1e-15 relative)."""
    x = asarray(x)
    if x.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    return _i0(x)


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """Unwrap by changing deltas larger than `discont` to their `period` complement, as
    `numpy.unwrap`: the result's dtype is that of the differences and `period` (an integer
    array with an integer period stays integer, its half-period rounded down)."""
    p = asarray(p)
    if discont is None:
        discont = period / 2
    x = moveaxis(p, axis, -1)
    dd = diff(x, axis=-1)
    dtype = np.result_type(dd.dtype, period)
    if dtype.kind in "iu":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    # (dd - low, as NumPy: a negative Python int is an unsigned array's OverflowError)
    low = -high
    ddmod = remainder(dd - low, period) + low
    if ambiguous:
        # NumPy maps -period/2 back to +period/2 where the step was positive
        ddmod = where(logical_and(ddmod == low, dd > 0), high, ddmod)
    correction = ddmod - dd
    correction = where(less(absolute(dd), discont), 0, correction)
    rest = x[..., 1:] + cumsum(correction, axis=-1)
    fixed = concatenate([x[..., :1].astype(dtype), rest.astype(dtype)], axis=-1)
    return moveaxis(fixed, -1, axis)


def complex_from_parts(re, im, dtype):
    """re + im*1j of `dtype`, each part exactly (infinities, NaN and signed zeros kept; the
    arithmetic re + im * 1j would turn an infinite im into a NaN real part): -0.0 + im*1j
    formed by multiplications whose real part is -0.0 for each sign of im, constants for
    zeros and non-finite im, added to conj(re) (imaginary part -0.0), since complex addition
    is exact per part."""
    dtype = np.dtype(dtype)

    def c(v):
        return asarray(np.asarray(v, dtype))
    fin = isfinite(im)
    imc = bind(E.convert_p, where(fin, im, 0), dtype=dtype)    # (no inf * 0 warnings)
    w = where(greater(im, 0), imc * c(complex(-0.0, 1.0)), imc * c(complex(0.0, 1.0)))
    zero = where(signbit(im), c(complex(-0.0, -0.0)), c(complex(-0.0, 0.0)))
    inf = where(signbit(im), c(complex(-0.0, -np.inf)), c(complex(-0.0, np.inf)))
    w = where(im == 0, zero, w)
    w = where(fin, w, where(isnan(im), c(complex(-0.0, np.nan)), inf))
    return conjugate(bind(E.convert_p, re, dtype=dtype)) + w


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation, as `numpy.interp` (differentiable in x and fp; xp must
    be increasing, as NumPy requires without checking)."""
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("data must be 1 dimensional")
    if xp.shape[0] is None or fp.shape[0] is None:
        raise ValueError("interp: the length of xp/fp must be known while tracing (give it in "
                         "the input_signature)")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("fp and xp are not of the same length")
    if xp.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    if fp.dtype.kind == "c":
        # NumPy interpolates the real and imaginary parts each as a real interp (an infinite
        # part stays in its part: inf+0.5j, not complex arithmetic's NaN)
        parts = [interp(x, xp, f(fp), None if left is None else f(asarray(left)),
                        None if right is None else f(asarray(right)), period)
                 for f in (real, imag)]
        if xp.shape[0] > 1:     # a NaN x: NaN + 0j (NumPy's complex loop)
            parts[1] = where_(isnan(x), 0.0, parts[1])
        return complex_from_parts(*parts, np.complex128)      # (NumPy: complex128 always)
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        x = remainder(x, period)
        xp = remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
        left = right = None
    ftype = np.result_type(fp.dtype, np.float64) if fp.dtype.kind != "c" else fp.dtype
    fp = fp.astype(ftype) if fp.dtype != ftype else fp
    xf = x.astype(np.float64) if x.dtype != np.float64 else x
    xpf = xp.astype(np.float64) if xp.dtype != np.float64 else xp
    n = xp.shape[0]
    if n == 1:
        res = where(isnan(xf), fp[0], fp[0])     # fp[0] in x's shape, exactly
    else:
        # NumPy's compiled interp, step for step (so infinities in x, xp or fp give its
        # values): the segment j with xp[j] <= x < xp[j+1], an exact hit of xp[j] gives fp[j],
        # else slope * (x - xp[j]) + fp[j], retried from the segment's right end when that is
        # NaN (an infinite endpoint), and fp[j] when both ends are equal
        k = searchsorted(xpf, xf, side="right") - 1
        j = clip(k, 0, n - 2)
        x0, x1 = take(xpf, j), take(xpf, j + 1)
        f0, f1 = take(fp, j), take(fp, j + 1)
        slope = (f1 - f0) / (x1 - x0)
        res = slope * (xf - x0) + f0
        if fp.dtype.kind != "c":
            res = where(isnan(res), slope * (xf - x1) + f1, res)
            res = where(logical_and(isnan(res), equal(f0, f1)), f0, res)
        res = where(xf == x0, f0, res)
        res = where(k >= n - 1, fp[-1], res)   # at (or past, replaced below) the last point
    lo = fp[0] if left is None else left
    hi = fp[-1] if right is None else right
    res = where(xf < xpf[0], lo, res)
    res = where(xf > xpf[-1], hi, res)
    if n > 1:       # NumPy's one-point case compares only, so a NaN x gets fp[0] there
        res = where(isnan(xf), xf, res)
    return res
