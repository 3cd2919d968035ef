"""Special-function primitives (erf, erfc, erfinv, ndtri, gammaln, gamma, digamma, polygamma,
Hurwitz zeta, i0e, i1e), each with its kernel, shape rule, VJP and batching rule in one block.

The kernels are NumPy code of our own (SciPy is not needed):
- erf, erfc, gammaln, gamma call the C library's functions (Python's `math`, correctly rounded
  to about 1 ulp) element by element: slower than a vectorized kernel, but exact.
- digamma: reflection below 1/2, upward recurrence to x >= 10, then the asymptotic series
  (9 terms; error below 1e-16 relative there).
- Hurwitz zeta(s, q): Euler-Maclaurin summation (25 direct terms, 12 Bernoulli corrections);
  about 1e-15 relative for s > 1, q > 0 and moderate s. Riemann zeta below 1 by reflection.
- polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1.
- ndtri: a rational first guess (Acklam's published approximation, ~1e-9) refined by two
  Halley steps on erfc, which makes it accurate to the last few ulps, tails included.
- erfinv: from ndtri where |x| > 1/2 (there 1 - |x| is exact), Newton on erf below.
- i0e, i1e: power series of the Bessel function times exp(-|x|) for |x| <= 30, the
  asymptotic expansion of the scaled function above.
Inputs reach the kernels as float32 or float64 (the SciPy layer casts); float32 is computed in
float64 and rounded.
"""
import math
from fractions import Fraction

import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import unbroadcast, align_batched, broadcast_shapes
from .elementwise import exp_p, sign_p, log_p, ones_like_p


def _unary_abstract(x, **kw):
    return Aval(x.shape, x.dtype)


def _binary_abstract(x, y):
    return Aval(broadcast_shapes(x.shape, y.shape), x.dtype)


def _unary(name, impl, vjp, uses_out=False):
    p = Primitive(name, impl, _unary_abstract)
    p.def_vjp(vjp, uses_out=uses_out)
    p.batch = lambda args, axes, **kw: (bind(p, args[0], **kw), axes[0])
    return p


def _f64(f):
    """A float64 kernel applied to float32/float64 input, result in the input's dtype."""
    def k(x, **kw):
        x = np.asarray(x)
        r = f(x.astype(np.float64), **kw)
        return np.asarray(r, dtype=np.float64).astype(x.dtype, copy=False)
    return k


def _pointwise(scalar):
    uf = np.frompyfunc(scalar, 1, 1)
    return lambda x: np.asarray(uf(x), dtype=np.float64)


_TINY_RECIPROCAL = 1 / np.finfo(np.float64).max


def _lgamma(v):
    if v == -math.inf:          # SciPy's value (log|Gamma| has no limit there)
        return -math.inf
    if v != 0 and abs(v) < _TINY_RECIPROCAL:    # SciPy (Cephes) goes through 1/x: inf
        return math.inf
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):   # the poles 0, -1, -2, ...; beyond the float range
        return math.inf


def _lgamma_true(v):
    """log|Gamma(v)| without gammaln's SciPy conventions at tiny v (the kernels' own use)."""
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):
        return math.inf


_lgamma_true_vec = _pointwise(_lgamma_true)


def _gamma(v):
    try:
        return math.gamma(v)
    except ValueError:          # poles: +-inf at +-0 (as SciPy), NaN at negative integers/-inf
        return math.copysign(math.inf, v) if v == 0 else math.nan
    except OverflowError:
        return math.inf


_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _c(x, v):
    return np.asarray(v, dtype=x.dtype)


# ------------------------------------------------------------------ erf, erfc
erf_p = _unary("erf", _f64(_pointwise(math.erf)),
               lambda ct, x: (ct * bind(exp_p, -x * x) * _c(x, 2 / _SQRT_PI),))
erfc_p = _unary("erfc", _f64(_pointwise(math.erfc)),
                lambda ct, x: (ct * bind(exp_p, -x * x) * _c(x, -2 / _SQRT_PI),))


# ------------------------------------------------------------------ ndtri, erfinv
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
      6.680131188771972e+01, -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
      3.754408661907416e+00)
_erfc_vec = _pointwise(math.erfc)


def _poly(cs, x):
    r = np.zeros_like(x) + cs[0]
    for c in cs[1:]:
        r = r * x + c
    return r


def _ndtri_lower(p):
    """Quantile for 0 < p <= 1/2 (negative or zero results)."""
    with np.errstate(all="ignore"):
        q = np.sqrt(-2 * np.log(p))
        tail = _poly(_C, q) / (_poly(_D, q) * q + 1)
        r = p - 0.5
        r2 = r * r
        central = _poly(_A, r2) * r / (_poly(_B, r2) * r2 + 1)
        x = np.where(p < 0.02425, tail, central)
        for _ in range(2):       # Halley steps on Phi(x) - p, Phi(x) = erfc(-x/sqrt 2)/2
            e = 0.5 * _erfc_vec(-x / math.sqrt(2)) - p
            u = e * _SQRT_2PI * np.exp(x * x / 2)
            x = np.where(np.isfinite(u), x - u / (1 + x * u / 2), x)
        # below 1e-300 erfc's result is subnormal (few digits): Newton on log Phi instead,
        # log Phi(x) = -x^2/2 - log(-x sqrt(2 pi)) + log S(x) (S: the Mills ratio series)
        deep = p < 1e-300
        xd = np.where(deep, x, -40.0)
        for _ in range(2):
            z = 1 / (xd * xd)
            S, term = np.ones_like(xd), np.ones_like(xd)
            for k in range(1, 12):
                term = -term * (2 * k - 1) * z
                S = S + term
            log_phi = -0.5 * xd * xd - np.log(-xd * _SQRT_2PI) + np.log(S)
            xd = xd + (log_phi - np.log(np.where(deep, p, 1e-310))) * S / xd
        x = np.where(deep, xd, x)
    return x


def _ndtri(p):
    with np.errstate(all="ignore"):
        upper = p > 0.5
        x = _ndtri_lower(np.where(upper, 1 - p, p))    # 1 - p is exact for p >= 1/2
        x = np.where(upper, -x, x)
        x = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, x))
        return np.where((p < 0) | (p > 1) | np.isnan(p), np.nan, x)


ndtri_p = _unary("ndtri", _f64(_ndtri),
                 lambda ct, x, out: (ct * bind(exp_p, out * out * _c(out, 0.5)) *
                                     _c(out, _SQRT_2PI),), uses_out=True)
_erf_vec = _pointwise(math.erf)


def _erfinv(x):
    with np.errstate(all="ignore"):
        a = np.abs(x)
        y = -_ndtri_lower((1 - a) / 2) / math.sqrt(2)     # erfc(y) = 1 - |x|, exact for |x|>1/2
        small = a <= 0.5
        ys = np.where(small, y, 0.0)
        for _ in range(2):       # Newton on erf near 0, where 1 - |x| loses x's digits
            ys = ys - (_erf_vec(ys) - a) / (2 / _SQRT_PI * np.exp(-ys * ys))
        y = np.where(small, ys, y)
        y = np.where(a == 1, np.inf, y)
        y = np.where(a == 0, 0.0, np.copysign(y, x))      # +0 at -0, as SciPy
        return np.where((a > 1) | np.isnan(x), np.nan, y)


erfinv_p = _unary("erfinv", _f64(_erfinv),
                  lambda ct, x, out: (ct * bind(exp_p, out * out) * _c(out, _SQRT_PI / 2),),
                  uses_out=True)


# ------------------------------------------------------------------ digamma
_PSI_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12,
               -3617 / 8160)


def _digamma(x):
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        z = np.where(reflect, 1 - x, x)
        acc = np.zeros_like(z)
        for _ in range(10):
            lo = z < 10
            acc = acc - np.where(lo, 1 / z, 0.0)
            z = np.where(lo, z + 1, z)
        iz2 = 1 / (z * z)
        s = np.zeros_like(z)
        for c in _PSI_SERIES[::-1]:
            s = (s + c) * iz2
        r = acc + np.log(z) - 0.5 / z - s
        r = np.where(z == np.inf, np.inf, r)
        # psi(x) = psi(1 - x) - pi / tan(pi x); reduce first so tan sees a small argument
        frac = x - np.round(x)
        r = np.where(reflect, r - np.pi / np.tan(np.pi * frac), r)
        r = np.where(reflect & (frac == 0), np.nan, r)        # poles at 0, -1, -2, ...
        r = np.where(x == 0, -np.copysign(np.inf, x), r)       # SciPy: -inf at +0, inf at -0
        return np.where(x == -np.inf, np.nan, r)


# ------------------------------------------------------------------ Hurwitz zeta
_BERN = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
         Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
         Fraction(-174611, 330), Fraction(854513, 138), Fraction(-236364091, 2730)]
_EM = [float(b / math.factorial(2 * j + 2)) for j, b in enumerate(_BERN)]
_N_DIRECT = 25


def _hurwitz(s, q):
    """zeta(s, q) = sum_k (q + k)^-s for s > 1 (Euler-Maclaurin); NaN for s < 1."""
    with np.errstate(all="ignore"):
        s, q = np.broadcast_arrays(s, q)
        s = s.astype(np.float64)
        q = q.astype(np.float64)
        pole = (q <= 0) & (q == np.floor(q))
        total = np.zeros(s.shape)
        for k in range(_N_DIRECT):
            total = total + (q + k) ** -s
        w = q + _N_DIRECT
        total = total + w ** (1 - s) / (s - 1) + 0.5 * w ** -s
        term = s * w ** (-s - 1)
        for j, c in enumerate(_EM):
            total = total + c * term
            term = term * (s + 2 * j + 1) * (s + 2 * j + 2) / (w * w)
        total = np.where(s < 1, np.nan, total)
        total = np.where(np.isnan(s) | np.isnan(q), np.nan, total)
        total = np.where(s == 1, np.inf, total)                 # SciPy: poles before NaNs
        total = np.where(pole & ~(s < 1), np.inf, total)
        total = np.where((s == np.inf) & (q > 0), np.where(q < 1, np.inf,
                                                           np.where(q == 1, 1.0, 0.0)), total)
        # a negative non-integer q has a term |q + k| < 1: inf for s = inf (SciPy's too)
        return np.where((s == np.inf) & (q < 0) & ~pole, np.inf, total)


def _riemann(s):
    """zeta(s) for every real s: Euler-Maclaurin above 1, the eta series on [-1/2, 1), the
    functional equation below -1/2 (in logarithms, so Gamma(1 - s) may overflow)."""
    with np.errstate(all="ignore"):
        hi = _hurwitz(np.where(s > 1, s, 2.0), 1.0)
        t = np.where(s < -0.5, 1 - s, 2.0)     # zeta(1 - t) from zeta(t), t > 3/2
        zt = _hurwitz(t, 1.0)
        cos = np.cos(np.pi * t / 2)
        lo = np.sign(cos) * zt * np.exp((1 - t) * np.log(2.0) - t * np.log(np.pi) +
                                        np.log(np.abs(cos)) + _lgamma_true_vec(t))
        lo = np.where(np.mod(s, 2) == 0, 0.0, lo)            # trivial zeros -2, -4, ...
        mid = _eta_zeta(np.where((s >= -0.5) & (s < 1), s, 0.5))
        r = np.where(s > 1, hi, np.where(s < -0.5, lo, mid))
        r = np.where(s == 1, np.inf, r)
        r = np.where(s == np.inf, 1.0, r)
        return np.where((s == -np.inf) | np.isnan(s), np.nan, r)


def _eta_zeta(s):
    """zeta(s) = eta(s) / (1 - 2^(1-s)) for 0 <= s < 1; eta by Borwein's accelerated series."""
    n = 40
    d = [0.0] * (n + 1)
    acc = 0.0
    for i in range(n + 1):
        acc += n * math.factorial(n + i - 1) * 4.0 ** i / (math.factorial(n - i) *
                                                          math.factorial(2 * i))
        d[i] = acc
    eta = np.zeros_like(s)
    for k in range(n):
        eta = eta + (-1) ** k * (d[k] - d[n]) / (k + 1) ** s
    eta = -eta / d[n]
    return eta / (1 - 2 ** (1 - s))


def _zeta_impl(s, q):
    s = np.asarray(s)
    return np.asarray(_hurwitz(np.asarray(s, np.float64), np.asarray(q, np.float64))).astype(
        s.dtype, copy=False)


def _zeta_ds_kernel(s, q):
    """d zeta(s, q) / ds by differentiating the Euler-Maclaurin terms."""
    with np.errstate(all="ignore"):
        s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
        total = np.zeros(s.shape)
        for k in range(_N_DIRECT):
            total = total - np.log(q + k) * (q + k) ** -s
        w = q + _N_DIRECT
        lw = np.log(w)
        total = total - lw * w ** (1 - s) / (s - 1) - w ** (1 - s) / (s - 1) ** 2 \
            - 0.5 * lw * w ** -s
        p, dp = s, np.ones_like(s)                 # P_j(s) = s (s+1) ... (s+2j-2), P_j'
        for j, c in enumerate(_EM):
            wp = w ** (-s - 2 * j - 1)
            total = total + c * wp * (dp - lw * p)
            a, b = s + 2 * j + 1, s + 2 * j + 2
            dp = dp * a * b + p * (a + b)
            p = p * a * b
        return np.where((s > 1) & (q > 0), total, np.nan)


def _zeta_ds_vjp(ct, s, q):
    raise NotImplementedError("ndflow.scipy.special.zeta: second derivatives with respect to "
                              "x (the exponent) are not implemented")


zeta_ds_p = Primitive("zeta_ds", lambda s, q: np.asarray(_zeta_ds_kernel(s, q)).astype(
    np.asarray(s).dtype, copy=False), _binary_abstract)
zeta_ds_p.def_vjp(_zeta_ds_vjp)


def _zeta_vjp(ct, s, q):
    """d/dq zeta(s, q) = -s zeta(s + 1, q) (0 where zeta(s + 1, q) is: s = inf, q > 1);
    d/ds from the differentiated series (s > 1)."""
    from .elementwise import select_p, eq_p, zeros_like_p
    z1 = bind(zeta_p, s + 1, q)
    dq = bind(select_p, bind(eq_p, z1, bind(zeros_like_p, z1)), z1, s * z1)
    return (unbroadcast(ct * bind(zeta_ds_p, s, q), s), unbroadcast(-ct * dq, q))


def _binary_batch(prim):
    def rule(args, axes, **params):
        return bind(prim, *align_batched(args, axes), **params), 0
    return rule


zeta_p = Primitive("zeta", _zeta_impl, _binary_abstract)
zeta_p.def_vjp(_zeta_vjp)
zeta_p.batch = _binary_batch(zeta_p)
zeta_ds_p.batch = _binary_batch(zeta_ds_p)

riemann_zeta_p = _unary("riemann_zeta", _f64(_riemann),
                        lambda ct, s: (ct * bind(zeta_ds_p, s, bind(ones_like_p, s)),))


# ------------------------------------------------------------------ gammaln, gamma, digamma,
#                                                                    polygamma
def _polygamma(x, n):
    if n == 0:
        return _digamma(x)
    with np.errstate(all="ignore"):
        z = _hurwitz(float(n + 1), x)
        return (-1.0) ** (n + 1) * math.factorial(n) * z


polygamma_p = _unary("polygamma", _f64(_polygamma),
                     lambda ct, x, n: (ct * bind(polygamma_p, x, n=n + 1),))
digamma_p = _unary("digamma", _f64(_digamma), lambda ct, x: (ct * bind(polygamma_p, x, n=1),))
gammaln_p = _unary("gammaln", _f64(_pointwise(_lgamma)), lambda ct, x: (ct * bind(digamma_p, x),))
gamma_p = _unary("gamma", _f64(_pointwise(_gamma)),
                 lambda ct, x, out: (ct * out * bind(digamma_p, x),), uses_out=True)


# ------------------------------------------------------------------ i0e, i1e
def _bessel_ie(nu, x):
    """exp(-|x|) I_nu(|x|) for nu in (0, 1), x >= 0."""
    with np.errstate(all="ignore"):
        small = x <= 30
        xs = np.where(small, x, 0.0)
        h2 = xs * xs / 4
        term = (xs / 2) ** nu / math.factorial(nu)
        total = term
        for k in range(1, 120):
            term = term * h2 / (k * (k + nu))
            total = total + term
        series = total * np.exp(-xs)
        xl = np.where(small, 60.0, x)
        mu = 4.0 * nu * nu
        term = np.ones_like(xl)
        total = term
        for k in range(1, 40):
            term = -term * (mu - (2 * k - 1) ** 2) / (k * 8 * xl)
            total = total + term
        asym = total / (_SQRT_2PI * np.sqrt(xl))          # (2 pi x overflows near the max)
        r = np.where(small, series, asym)
        return np.where(x == np.inf, 0.0, r)


def _i0e(x):
    return _bessel_ie(0, np.abs(x))


def _i1e(x):
    return np.where(x == 0, 0.0, np.copysign(_bessel_ie(1, np.abs(x)), x))  # +0 at -0: SciPy


def _i0e_vjp(ct, x, out):
    """i0e' = i1e - sign(x) i0e."""
    return (ct * (bind(i1e_p, x) - bind(sign_p, x) * out),)


def _i1e_vjp(ct, x, out):
    """i1e' = i0e - i1e (sign(x) + 1/x), 1/2 at 0."""
    from .elementwise import select_p, ones_like_p, lt_p, abs_p
    one = bind(ones_like_p, x)
    # near 0 (where 1/x overflows and i1e(x) = x/2 flushes to 0) the limit 1/2
    zero = bind(lt_p, bind(abs_p, x), one * 1e-150)
    safe = bind(select_p, zero, one, x)
    d = bind(i0e_p, x) - out * (bind(sign_p, x) + 1 / safe)
    return (ct * bind(select_p, zero, one * 0.5, d),)


i0e_p = _unary("i0e", _f64(_i0e), _i0e_vjp, uses_out=True)
i1e_p = _unary("i1e", _f64(_i1e), _i1e_vjp, uses_out=True)

__all__ = ["erf_p", "erfc_p", "erfinv_p", "ndtri_p", "gammaln_p", "gamma_p", "digamma_p",
           "polygamma_p", "zeta_p", "zeta_ds_p", "riemann_zeta_p", "i0e_p", "i1e_p", "log_p"]


# ------------------------------------------------------------------ incomplete gamma and beta
# Regularized: P(a, x) = gammainc, Q = 1 - P = gammaincc, I_x(a, b) = betainc. Kernels: the
# power series of P below x = a + 1 and the continued fraction of Q above (modified Lentz); the
# continued fraction of I_x(a, b) on the side of (a + 1)/(a + b + 2) where it converges fast.
# The prefactor exp(a log x - x - lgamma(a)) carries a relative error of about a * eps, so
# accuracy is ~1e-14 for a up to ~100 and degrades slowly beyond.
_TINY = 1e-300
_lgamma_vec = _pointwise(_lgamma)

_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)


def _log1pmx(num, den):
    """log(r) - (r - 1) for r = num/den, without cancellation near r = 1 (the series in
    mu = r - 1 below |mu| = 0.1), and with log(num) - log(den) elsewhere (r may underflow)."""
    mu = num / den - 1
    small = np.abs(mu) < 0.1
    m = np.where(small, mu, 0.0)
    term, s = -m * m, np.zeros_like(m)
    for k in range(2, 20):
        s = s + term / k
        term = -term * m
    return np.where(small, s, np.log(num) - np.log(den) - mu)


def _log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a)). For a >= 10 from Stirling's series with the large parts
    combined analytically, a log1p(mu) - a mu (mu = x/a - 1): the direct difference of
    numbers near a log a would lose a * eps of it."""
    big = a >= 10
    ab = np.where(big, a, 10.0)
    asym = ab * _log1pmx(x, ab) + 0.5 * np.log(ab / (2 * np.pi)) - \
        _stirling_corr_np(ab)
    direct = a * np.log(x) - x - _lgamma_true_vec(np.where(big, 1.0, a))
    return np.where(big, asym, direct)


# Temme's uniform asymptotic expansion (DLMF 8.12): with mu = x/a - 1 and
# eta = sign(mu) sqrt(2 (mu - log1p(mu))),
#   Q(a, x) = erfc(eta sqrt(a/2)) / 2 + exp(-a eta^2/2) / sqrt(2 pi a) sum_k c_k(eta) a^-k,
# c_0 = 1/mu - 1/eta, c_k = (1/eta) c_(k-1)' + (-1)^k gamma_k / mu (gamma_k: Stirling's
# coefficients of Gamma*(a)). Row k holds c_k's Taylor coefficients in eta, derived with exact
# rational arithmetic (tests/test_scipy.py derives them again and compares). Used where the
# series and the continued fraction need O(sqrt(a)) terms: a > 1000 and |mu| < 0.3.
_TEMME = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073,
     0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05,
     -2.185448510679992e-06, -1.85406221071516e-06, 8.296711340953087e-07,
     -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08,
     -4.382036018453353e-09, 9.14769958223679e-10, -2.5514193994946248e-11,
     -5.830772132550426e-11, 2.4361948020667415e-11, -5.0276692801141755e-12,
     1.1004392031956135e-13, 3.371763262400985e-13, -1.392388722418162e-13,
     2.8534893807047445e-14, -5.139111834242572e-16, -1.9752288294349442e-15),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454,
     -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07,
     -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06,
     4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
     4.162792991842583e-10, -8.56390702649298e-11, 6.067215101604758e-14,
     7.1624989648114856e-12, -2.933186643771437e-12, 5.996696365683689e-13,
     -2.1671786527323313e-16, -4.978339972369262e-14),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049,
     2.0093878600823047e-06, -0.0001073665322636516, 5.2923448829120125e-05,
     -1.2760635188618728e-05, 3.423578734096138e-08, 1.3721957309062934e-06,
     -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
     -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617114e-09,
     9.428356159014678e-13, 1.2872252400089318e-10, -5.5645956134363323e-11,
     1.197593554636698e-11, -4.1689782251838634e-15, -1.0940640427884595e-12),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557,
     0.00026772063206283885, -7.561801671883977e-05, -2.396505113867297e-07,
     1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06,
     -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08,
     -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09,
     -9.460496661855133e-10, 2.1541049775774907e-10, -1.388823336813903e-14,
     -2.1894761681963938e-11),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902,
     -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05,
     1.1375726970678419e-05, 2.507497226237533e-10, -1.6954149536558305e-06,
     8.907507532205309e-07, -2.292934834000805e-07, 2.956794137544049e-11,
     2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09,
     -2.3024517174528067e-13, -3.9409233028046403e-10),
    (-0.00033679855336635813, -6.972813758365857e-05, 0.0002772753244959392,
     -0.00019932570516188847, 6.797780477937208e-05, 1.419062920643967e-07,
     -1.3594048189768693e-05, 8.018470256334202e-06, -2.291481176508095e-06,
     -3.252473551298454e-10, 3.4652846491085265e-07, -1.8447187191171344e-07,
     4.8240967037894184e-08, -1.7989466721743514e-14, -6.306194500013523e-09),
    (0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045,
     7.902353232660328e-07, -8.153969367561969e-05, 5.61168275310625e-05,
     -1.8329116582843375e-05, -3.0796134506033047e-09, 3.465155368803609e-06,
     -2.0291327396058603e-06, 5.788792863149004e-07, 2.338630673826657e-13,
     -8.828600746330484e-08),
    (0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234,
     0.0002812695154763237, -0.00010976582244684731, -1.2741009095484485e-07,
     2.7744451511563645e-05, -1.8263488805711332e-05, 5.7876949497350525e-06,
     4.93875893393627e-10, -1.0595367014026043e-06),
    (-0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721,
     -6.969091458420552e-07, 0.00016644846642067547, -0.00012783517679769218,
     4.629953263691304e-05, 4.557909867922708e-09, -1.0595271125805195e-05),
    (-0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328,
     -0.0006401475260262758, 0.00027750107634328704, 1.819700838046515e-07,
     -8.479507117068503e-05),
)

_TEMME_A = 1000.0


def _temme_pq(a, x):
    mu = (x - a) / a
    lm = _log1pmx(x, a)                       # = -eta^2 / 2
    eta = np.sign(mu) * np.sqrt(-2 * lm)
    total, ia = np.zeros_like(a), 1 / a
    for row in _TEMME[::-1]:
        ck = np.zeros_like(a)
        for c in row[::-1]:
            ck = ck * eta + c
        total = total * ia + ck
    r = np.exp(a * lm) / np.sqrt(2 * np.pi * a) * total
    z = eta * np.sqrt(a / 2)
    return 0.5 * _erfc_vec(-z) - r, 0.5 * _erfc_vec(z) + r


def _gamma_series(a, x):
    """sum_n x^n / ((a+1) ... (a+n)) (P = x^a e^-x / Gamma(a+1) times this)."""
    term = np.ones_like(a)
    total = term.copy()
    for n in range(1, 5000):
        term = term * x / (a + n)
        total = total + term
        # a NaN or inf lane never converges: it must not keep the others iterating
        if np.all((np.abs(term) <= np.abs(total) * 1e-17) | ~np.isfinite(total)):
            break
    return total


def _gamma_cf(a, x):
    """The continued fraction of Q (Q = x^a e^-x / Gamma(a) times this; modified Lentz)."""
    b = x + 1 - a
    c = np.full_like(b, 1 / _TINY)
    d = 1 / b
    h = d.copy()
    for i in range(1, 5000):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if np.all((np.abs(delta - 1) <= 1e-16) | ~np.isfinite(h)):
            break
    return h


def _gamma_pq(a, x):
    """(P, Q) with SciPy's values at the edges: P(0, x > 0) = 1, P(a, 0) = 0, P(inf, x) = 0
    for finite x, P(a, inf) = 1 for finite a; NaN for a < 0, x < 0, NaN, P(inf, inf)."""
    with np.errstate(all="ignore"):
        a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
        fin = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        temme = fin & (a > _TEMME_A) & (np.abs(x - a) < 0.3 * a)
        work = fin & ~temme
        use_series = x < a + 1
        aw, xw = np.where(work, a, 1.0), np.where(work, x, 1.0)
        logpre = _log_prefactor(aw, xw)
        ser = work & use_series
        p_series = np.exp(logpre - np.log(aw)) * _gamma_series(np.where(ser, a, 1.0),
                                                               np.where(ser, x, 0.0))
        cf = work & ~use_series
        q_cf = np.exp(logpre) * _gamma_cf(np.where(cf, a, 1.0), np.where(cf, x, 2.0))
        P = np.where(use_series, p_series, 1 - q_cf)
        Q = np.where(use_series, 1 - p_series, q_cf)
        tp, tq = _temme_pq(np.where(temme, a, 2e3), np.where(temme, x, 2e3))
        P, Q = np.where(temme, tp, P), np.where(temme, tq, Q)
        zero_p = (x == 0) & (a > 0) | (a == np.inf) & (x >= 0) & (x < np.inf)
        one_p = (x == np.inf) & (a >= 0) & (a < np.inf) | (a == 0) & (x > 0)
        P = np.where(zero_p, 0.0, np.where(one_p, 1.0, np.where(fin, P, np.nan)))
        Q = np.where(zero_p, 1.0, np.where(one_p, 0.0, np.where(fin, Q, np.nan)))
        return np.clip(P, 0.0, 1.0), np.clip(Q, 0.0, 1.0)


def _param_grad_error(name, arg):
    return NotImplementedError(
        f"ndflow.scipy.special.{name}: the gradient with respect to {arg} is not implemented "
        f"(only the last argument, x, is differentiable); wrap {arg} in nf.stop_gradient if "
        f"it only needs to be a constant")


def _no_param_grad(name, arg, v):
    if getattr(v, "_tid", 0):       # connected to a tape: its gradient would be dropped
        raise _param_grad_error(name, arg)
    return None


def _inc_abstract(a, x):
    return Aval(broadcast_shapes(a.shape, x.shape), x.dtype)


def _finite_exp(t):
    """exp(t), 0 where t is NaN: a density whose logarithm is inf - inf (a parameter so large
    that (a - 1) log x and gammaln(a) overflow) has underflowed to 0 long before."""
    from .elementwise import select_p, ne_p, zeros_like_p
    return bind(select_p, bind(ne_p, t, t), bind(zeros_like_p, t), bind(exp_p, t))


def _dgamma_dx(a, x):
    """x^(a-1) exp(-x) / Gamma(a), the derivative of P(a, x) in x."""
    return _finite_exp((a - 1) * bind(log_p, x) - x - bind(gammaln_p, a))


def _gammainc_vjp(ct, a, x):
    return (_no_param_grad("gammainc", "a", a), unbroadcast(ct * _dgamma_dx(a, x), x))


def _gammaincc_vjp(ct, a, x):
    return (_no_param_grad("gammaincc", "a", a), unbroadcast(-ct * _dgamma_dx(a, x), x))


def _inc_kernel(f):
    def k(*args):
        dt = np.asarray(args[-1]).dtype
        return np.asarray(f(*args), dtype=np.float64).astype(dt, copy=False)
    return k


gammainc_p = Primitive("gammainc", _inc_kernel(lambda a, x: _gamma_pq(a, x)[0]), _inc_abstract)
gammainc_p.def_vjp(_gammainc_vjp)
gammainc_p.batch = _binary_batch(gammainc_p)
gammaincc_p = Primitive("gammaincc", _inc_kernel(lambda a, x: _gamma_pq(a, x)[1]),
                        _inc_abstract)
gammaincc_p.def_vjp(_gammaincc_vjp)
gammaincc_p.batch = _binary_batch(gammaincc_p)


def _betacf(a, b, x):
    """The continued fraction of I_x(a, b) (converges fast for x < (a + 1)/(a + b + 2))."""
    qab, qap, qam = a + b, a + 1, a - 1
    c = np.ones_like(x)
    d = 1 - qab * x / qap
    d = np.where(np.abs(d) < _TINY, _TINY, d)
    d = 1 / d
    h = d.copy()
    for m in range(1, 5000):
        m2 = 2 * m
        # (ratios first: products of two huge parameters would overflow)
        aa = m / (qam + m2) * ((b - m) / (a + m2)) * x
        d = 1 + aa * d
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = 1 + aa / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        h = h * d * c
        aa = -((a + m) / (a + m2)) * ((qab + m) / (qap + m2)) * x
        d = 1 + aa * d
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = 1 + aa / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if np.all((np.abs(delta - 1) <= 1e-16) | ~np.isfinite(h)):
            break
    return h


def _stirling_corr_np(z):
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi)/2) for z >= 8."""
    iz2, corr = 1 / (z * z), np.zeros_like(z)
    for c in _STIRLING[::-1]:
        corr = corr * iz2 + c
    return corr / z


def _lbeta_np(a, b):
    """log B(a, b) for a, b > 0 without the cancellation of lgamma(b) - lgamma(a + b) when
    one is large (the same Stirling combination as ndflow.scipy.special.betaln's, which must
    be differentiable and so is written with ndflow operations)."""
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    big = hi >= 8
    h = np.where(big, hi, 8.0)
    s = h + lo
    large = (-(h - 0.5) * np.log1p(lo / h) - lo * np.log(s) + lo
             + _stirling_corr_np(h) - _stirling_corr_np(s))
    direct = _lgamma_true_vec(a) + _lgamma_true_vec(b) - _lgamma_true_vec(a + b)
    return np.where(big, _lgamma_true_vec(lo) + large, direct)


def _betainc(a, b, x):
    """I_x(a, b) with SciPy's limits: a parameter 0 or inf puts all the mass at one end
    (a = 0 or b = inf: 1 for x > 0; b = 0 or a = inf: 0 for x < 1); NaN for a = b = 0,
    a = b = inf, a negative parameter, x outside [0, 1], NaN."""
    with np.errstate(all="ignore"):
        a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
        inner = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b) & (x > 0) & (x < 1)
        xs = np.where(inner, x, 0.5)
        aa, bb = np.where(inner, a, 1.0), np.where(inner, b, 1.0)
        front = np.exp(aa * np.log(xs) + bb * np.log1p(-xs) - _lbeta_np(aa, bb))
        # both parameters 8 or more: x^a (1-x)^b / B(a, b) from Stirling's series, as
        # sqrt(a b / (2 pi (a+b))) exp(a log1pmx(x/m) + b log1pmx((1-x)/(1-m))) with
        # m = a/(a+b) (the linear terms cancel exactly): the direct exponent loses (a+b) eps
        big = (aa >= 8) & (bb >= 8)
        a8, b8 = np.where(big, aa, 8.0), np.where(big, bb, 8.0)
        m = 1 / (1 + b8 / a8)
        expo = (a8 * _log1pmx(xs, m) + b8 * _log1pmx(1 - xs, 1 - m)
                + _stirling_corr_np(a8 + b8) - _stirling_corr_np(a8) - _stirling_corr_np(b8))
        front = np.where(big, np.sqrt(a8 / (2 * np.pi)) * np.sqrt(b8 / (a8 + b8)) *
                         np.exp(expo), front)
        flip = xs > (aa + 1) / (aa + bb + 2)
        xa = np.where(flip, 1 - xs, xs)
        pa, pb = np.where(flip, bb, aa), np.where(flip, aa, bb)
        v = front * _betacf(pa, pb, xa) / pa
        r = np.clip(np.where(flip, 1 - v, v), 0.0, 1.0)
        # both parameters beyond 1e14: the exponent a log x + b log1p(-x) - log B(a, b)
        # cancels to nothing; the normal limit (error ~ 1/sqrt(min(a, b)) < 1e-7)
        mean = 1 / (1 + bb / aa)
        sd = np.sqrt(mean * (1 - mean) / (aa + bb + 1))
        z = (xs - mean) / np.where(sd > 0, sd, 1.0)
        normal = np.where(sd > 0, 0.5 * _erfc_vec(-z / math.sqrt(2)), np.where(
            xs < mean, 0.0, np.where(xs > mean, 1.0, 0.5)))
        r = np.where(np.minimum(aa, bb) > 1e14, normal, r)
        # one parameter beyond 1e5 times the other's square: the gamma limit (Temme),
        # I_x(a, b) = P(a, -(b + (a - 1)/2) log1p(-x)) + O(b^-2), where the flip to
        # 1 - I_(1-x)(b, a) would lose x to the rounding of 1 - x (and b x = O(1) matters)
        ga = bb > 1e5 * np.maximum(aa, 1.0) ** 2
        gb = aa > 1e5 * np.maximum(bb, 1.0) ** 2
        ya = -(bb + (aa - 1) / 2) * np.log1p(-xs)
        yb = -(aa + (bb - 1) / 2) * np.log(xs)
        p_lim = _gamma_pq(np.where(ga, aa, 1.0), np.where(ga, ya, 1.0))[0]
        q_lim = _gamma_pq(np.where(gb, bb, 1.0), np.where(gb, yb, 1.0))[1]
        r = np.where(ga, p_lim, np.where(gb, q_lim, r))
        inrange = (x >= 0) & (x <= 1)
        ok = (a >= 0) & (b >= 0) & inrange & ~((a == 0) & (b == 0)) & \
            ~((a == np.inf) & (b == np.inf))
        low = (a == 0) | (b == np.inf)          # all the mass at 0
        high = (b == 0) | (a == np.inf)         # all the mass at 1
        r = np.where(low, np.where(x > 0, 1.0, 0.0), r)
        r = np.where(high, np.where(x < 1, 0.0, 1.0), r)
        r = np.where(~(low | high) & (x == 0), 0.0, np.where(~(low | high) & (x == 1), 1.0, r))
        return np.where(ok, r, np.nan)


def _betainc_vjp(ct, a, b, x):
    """d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b)."""
    from .elementwise import log1p_p
    lb = bind(gammaln_p, a) + bind(gammaln_p, b) - bind(gammaln_p, a + b)
    d = _finite_exp((a - 1) * bind(log_p, x) + (b - 1) * bind(log1p_p, -x) - lb)
    return (_no_param_grad("betainc", "a", a), _no_param_grad("betainc", "b", b),
            unbroadcast(ct * d, x))


def _ternary_abstract(a, b, x):
    return Aval(broadcast_shapes(a.shape, b.shape, x.shape), x.dtype)


betainc_p = Primitive("betainc", _inc_kernel(_betainc), _ternary_abstract)
betainc_p.def_vjp(_betainc_vjp)
betainc_p.batch = _binary_batch(betainc_p)
