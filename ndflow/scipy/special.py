"""`scipy.special` in ndflow: differentiable, traceable and vectorizable special functions.

The functions that need their own kernels are primitives (`ndflow/primitives/special.py`:
erf, erfc, erfinv, ndtri, gammaln, gamma, digamma, polygamma, zeta, i0e, i1e); the rest are
compositions of ndflow operations. No SciPy is needed. Results follow SciPy's dtypes: float32
stays float32, other inputs give float64. Known differences: `zeta`'s derivative in its first argument exists only
to first order (a second derivative raises NotImplementedError).
"""
import math

import numpy as np

from ..core.primitive import bind
from ..primitives import special as _sp, special_inc as _spi
from ..autodiff.forward import stop_gradient
from .. import numpy as tnp

__all__ = ["erf", "erfc", "erfinv", "gammaln", "gamma", "digamma", "psi", "polygamma", "betaln",
           "logsumexp", "expit", "logit", "softmax", "log_softmax", "xlogy", "xlog1py", "entr",
           "rel_entr", "kl_div",
           "i0e", "i1e", "ndtr", "ndtri", "log_ndtr", "zeta", "gammainc", "gammaincc",
           "betainc"]


def _float(x):
    """x as an ndflow array of SciPy's ufunc result dtype (float32 kept, else float64)."""
    x = tnp.asarray(x)
    if x.dtype == np.float32 or x.dtype == np.float64:
        return x
    if x.dtype.kind == "c":
        raise TypeError(f"ndflow.scipy.special: complex input ({x.dtype}) is not supported")
    return x.astype(np.float64)


def _float2(*xs, weak=True):
    """The arguments as ndflow arrays of one SciPy result dtype: float32 kept, else float64.
    Python scalars are weak (a float32 array and 2.0 give float32) where SciPy's function
    treats them so (zeta, betainc); others (xlogy, gammainc, ...) make them float64."""
    dt = np.result_type(*(v if weak and isinstance(v, (bool, int, float))
                          else tnp.asarray(v).dtype for v in xs))
    if dt.kind == "c":
        raise TypeError("ndflow.scipy.special: complex input is not supported")
    if dt != np.float32:
        dt = np.dtype(np.float64)
    return tuple(tnp.asarray(v).astype(dt) for v in xs)


def erf(x):
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt, as `scipy.special.erf`."""
    return bind(_sp.erf_p, _float(x))


def erfc(x):
    """1 - erf(x), accurate in the tail, as `scipy.special.erfc`."""
    return bind(_sp.erfc_p, _float(x))


def erfinv(y):
    """The inverse of erf on [-1, 1] (NaN outside), as `scipy.special.erfinv`."""
    return bind(_sp.erfinv_p, _float(y))


def gammaln(x):
    """log|Gamma(x)|, as `scipy.special.gammaln` (inf at the poles 0, -1, -2, ...)."""
    return bind(_sp.gammaln_p, _float(x))


def gamma(x):
    """The gamma function, as `scipy.special.gamma`."""
    return bind(_sp.gamma_p, _float(x))


def digamma(x):
    """d/dx log Gamma(x), as `scipy.special.digamma`."""
    return bind(_sp.digamma_p, _float(x))


psi = digamma


def polygamma(n, x):
    """The n-th derivative of digamma, as `scipy.special.polygamma` (float64 result). `n` is a
    non-negative integer, or an integer array of concrete values that broadcasts with x."""
    x = tnp.asarray(x).astype(np.float64)
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        if n < 0:
            return x * np.nan
        return bind(_sp.polygamma_p, x, n=int(n))
    n = tnp.asarray(n)
    if n._t is not None:
        raise TypeError("ndflow.scipy.special.polygamma: the order n must be concrete (a Python "
                        "int or an array of known values), not a traced value")
    nv = np.asarray(n.numpy())
    if nv.dtype.kind == "f" and np.any(nv != np.floor(nv)):
        raise ValueError("ndflow.scipy.special.polygamma: n must be integers, got %r" % (nv,))
    shape = np.broadcast_shapes(nv.shape, x.shape)
    x = tnp.broadcast_to(x, shape)
    nv = np.broadcast_to(nv, shape).astype(np.int64)
    out = x * np.nan
    for k in np.unique(nv):
        if k >= 0:
            out = tnp.where(nv == k, bind(_sp.polygamma_p, x, n=int(k)), out)
    return out


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (k + q)^-x (x > 1), or Riemann's zeta for q=None (every
    real x), as `scipy.special.zeta`."""
    if q is None:
        return bind(_sp.riemann_zeta_p, _float(x))
    x, q = _float2(x, q)
    return bind(_sp.zeta_p, x, q)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x), as `scipy.special.gammainc`.
    Differentiable in x only (a gradient with respect to a raises NotImplementedError)."""
    a, x = _float2(a, x, weak=False)
    return bind(_spi.gammainc_p, a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), as
    `scipy.special.gammaincc`. Differentiable in x only."""
    a, x = _float2(a, x, weak=False)
    return bind(_spi.gammaincc_p, a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), as `scipy.special.betainc`.
    Differentiable in x only (gradients with respect to a or b raise NotImplementedError)."""
    a, b, x = _float2(a, b, x)
    return bind(_spi.betainc_p, a, b, x)


_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_BIG = 8.0


def _stirling_corr(x):
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2), for x >= 8 (error below 1e-16)."""
    iz = 1.0 / x
    iz2 = iz * iz                  # not 1 / (x * x): no overflow for huge x
    s = 0.0 * x
    for c in _STIRLING[::-1]:
        s = s * iz2 + c
    return s / x


def _betaln_positive(a, b):
    """log B(a, b) for a, b > 0 (and for a negative non-integer partner of a large argument):
    below 8, gammaln(a) + gammaln(b) - gammaln(a + b); where the larger argument is 8 or more,
    Stirling's series with the large parts combined analytically (log1p(b/a) instead of a
    difference of huge logarithms)."""
    hi, lo = tnp.maximum(a, b), tnp.minimum(a, b)
    direct_mask = ~(hi >= _BIG) | ~(hi + lo >= _BIG)
    both = lo >= _BIG
    # safe operands keep the branches not taken finite and silent (gradients through where)
    hs = tnp.where(direct_mask, _BIG, hi)
    l1 = tnp.where(direct_mask | both, 1.0, lo)     # the small one, below 8
    l2 = tnp.where(both, lo, _BIG)                  # the small one, 8 or more

    def large_part(l):
        """lgamma(hs) - lgamma(hs + l) - (Stirling's leading terms in l), exactly combined."""
        s = hs + l
        return s, -(hs - 0.5) * tnp.log1p(l / hs) + _stirling_corr(hs) - _stirling_corr(s)
    s1, c1 = large_part(l1)
    one = gammaln(l1) - l1 * tnp.log(s1) + l1 + c1
    s2, c2 = large_part(l2)
    two = (_HALF_LOG_2PI - 0.5 * tnp.log(s2) + (l2 - 0.5) * tnp.log(l2 / s2)
           + _stirling_corr(l2) + c2)
    direct_a = tnp.where(direct_mask, a, 1.0)
    direct_b = tnp.where(direct_mask, b, 1.0)
    ga, gb = gammaln(direct_a), gammaln(direct_b)
    # gammaln is inf below 1/max (SciPy's convention): so is betaln, not inf - inf
    direct = tnp.where(((ga == np.inf) | (gb == np.inf)) & ~tnp.isnan(ga + gb), np.inf,
                       ga + gb - gammaln(direct_a + direct_b))
    return tnp.where(direct_mask, direct, tnp.where(both, two, one))


def betaln(a, b):
    """log|B(a, b)| = log|Gamma(a) Gamma(b) / Gamma(a + b)|, as `scipy.special.betaln`, on the
    whole real plane with SciPy's values at the poles: inf where a or b is a nonpositive
    integer (or -inf), except that B(-n, m) for positive integers with n >= m takes the
    limit |B(1 + n - m, m)|; -inf where a + b is a pole or one argument is inf (and the
    other positive), inf with a negative partner. Accurate to ~1e-14 relative for positive
    arguments up to 1e300 (Stirling's series where one is large); float32 is computed in
    float64 and rounded once, as SciPy's float32 loop."""
    a, b = _float2(a, b, weak=False)
    if a.dtype == np.float32:
        return _betaln(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    return _betaln(a, b)


def _betaln(a, b):

    def negint(v):
        return (v <= 0) & (v == tnp.floor(v))

    def small_int(v):
        return (v == tnp.floor(v)) & (tnp.abs(v) < 2.0 ** 31)
    # SciPy's pole rule: a nonpositive integer a that fits an int, with a positive integer b
    # and a + b <= 0, gives |B(1 - a - b, b)|; every other pole of a or b gives inf
    ra = negint(a) & small_int(a) & small_int(b) & (b > 0) & (1 - a - b > 0)
    rb = ~negint(a) & negint(b) & small_int(b) & small_int(a) & (a > 0) & (1 - a - b > 0)
    pole = (negint(a) & ~ra) | (~negint(a) & negint(b) & ~rb)
    a2 = tnp.where(ra | rb, 1 - a - b, tnp.where(pole, 1.0, a))
    b2 = tnp.where(rb, a, tnp.where(pole, 1.0, b))
    # the larger magnitude infinite: -inf with a positive partner, inf with a negative one
    inf_hi = (tnp.abs(a2) == np.inf) | (tnp.abs(b2) == np.inf)
    other = tnp.where(tnp.abs(a2) == np.inf, b2, a2)
    limit = tnp.where(tnp.abs(other) == np.inf, np.nan,
                      tnp.where(other > 0, -np.inf, tnp.where(other < 0, np.inf, np.nan)))
    fa, fb = tnp.where(inf_hi, 1.0, a2), tnp.where(inf_hi, 1.0, b2)
    # a negative non-integer argument (finite): the Gamma functions' logarithms directly
    # (a large positive partner still goes through Stirling's combination)
    neg = (fa < 0) | (fb < 0)
    pa, pb = tnp.where(neg & (tnp.maximum(fa, fb) < _BIG), 1.0, fa), \
        tnp.where(neg & (tnp.maximum(fa, fb) < _BIG), 1.0, fb)
    general = gammaln(fa) + gammaln(fb) - gammaln(fa + fb)
    v = tnp.where(neg & (tnp.maximum(fa, fb) < _BIG), general, _betaln_positive(pa, pb))
    v = tnp.where(inf_hi, limit, v)
    return tnp.where(pole, np.inf, v)


def i0e(x):
    """exp(-|x|) I0(x), the scaled modified Bessel function of order 0, as `scipy.special.i0e`."""
    return bind(_sp.i0e_p, _float(x))


def i1e(x):
    """exp(-|x|) I1(x), the scaled modified Bessel function of order 1, as `scipy.special.i1e`."""
    return bind(_sp.i1e_p, _float(x))


def ndtri(y):
    """The standard normal quantile (inverse of ndtr), as `scipy.special.ndtri`."""
    return bind(_sp.ndtri_p, _float(y))


_SQRT1_2 = math.sqrt(0.5)


def _via_f64(f, x):
    """float32 input computed in float64 and rounded once, as SciPy's float32 loops do."""
    if x.dtype == np.float32:
        return f(x.astype(np.float64)).astype(np.float32)
    return f(x)


def ndtr(x):
    """The standard normal CDF, erfc(-x / sqrt 2) / 2, as `scipy.special.ndtr`."""
    return _via_f64(lambda x: 0.5 * erfc(-x * _SQRT1_2), _float(x))


def log_ndtr(x):
    """log of the standard normal CDF, accurate in both tails, as `scipy.special.log_ndtr`.

    Above 0: log1p(-ndtr(-x)); below -20: the
    asymptotic series of the Mills ratio; between: log(ndtr(x)). Each branch sees a safe
    operand, so gradients are finite everywhere."""
    return _via_f64(_log_ndtr, _float(x))


def _log_ndtr(x):
    cut = -20.0
    hi, lo = x > 0, x < cut
    xh = tnp.where(hi, x, 1.0)
    xl = tnp.where(lo, x, cut)
    xm = tnp.where(hi | lo, -1.0, x)
    upper = tnp.log1p(-0.5 * erfc(xh * _SQRT1_2))
    mid = tnp.log(0.5 * erfc(-xm * _SQRT1_2))
    z = 1.0 / (xl * xl)
    s = 0.0 * z + 1.0
    term = 0.0 * z + 1.0
    for k in range(1, 12):           # 1 - 1/x^2 + 3/x^4 - 15/x^6 ...
        term = -term * (2 * k - 1) * z
        s = s + term
    lower = -0.5 * xl * xl - tnp.log(-xl) - 0.5 * math.log(2 * math.pi) + tnp.log(s)
    return tnp.where(hi, upper, tnp.where(lo, lower, mid))


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)), as `scipy.special.expit` (no overflow)."""
    x = tnp.asarray(x)
    if x.dtype.kind not in "f":
        x = x.astype(np.float64)
    # -|x| as a where: abs's derivative at 0 is 0, the function's slope there is not
    e = tnp.exp(tnp.where(x >= 0, -x, x))
    return tnp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def logit(p):
    """log(p / (1 - p)), as `scipy.special.logit`."""
    return _via_f64(lambda p: tnp.log(p) - tnp.log1p(-p), _float(p))


def _x_times(x, y, log_fn, one, lo):
    """x * log_fn(y), 0 where x == 0 (unless y is NaN). At x == 0 the value is 0 but the
    derivative in x is still log_fn(y) (as JAX's; the function is x times a constant there):
    the zero branch is 0.0 + x * log_fn(y), with y inside the log's domain (lo, inf)."""
    zero = (x == 0) & ~tnp.isnan(y)
    inner = zero & (y > lo) & (y < np.inf)
    at_zero = 0.0 + x * log_fn(tnp.where(inner, y, one))
    return tnp.where(zero, at_zero, x * log_fn(tnp.where(zero, one, y)))


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is NaN), as `scipy.special.xlogy`. The gradient
    in x at x == 0 is log(y), as JAX's (and the differences'), not 0."""
    x, y = _float2(x, y, weak=False)
    return _x_times(x, y, tnp.log, 1.0, 0.0)


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is NaN), as `scipy.special.xlog1py`. The
    gradient in x at x == 0 is log1p(y)."""
    x, y = _float2(x, y, weak=False)
    return _x_times(x, y, tnp.log1p, 0.0, -1.0)


def _rel_entr(x, y):
    """(x log(x/y) where x > 0 and y > 0; masks: x == 0 and y >= 0; NaN in either). log(x/y)
    as SciPy's where x/y is a normal number, log(x) - log(y) where it would underflow or
    overflow (there the quotient's derivative overflows too)."""
    pos = (x > 0) & (y > 0)
    xs, ys = tnp.where(pos, x, 1.0), tnp.where(pos, y, 1.0)
    r = xs / ys
    normal = (r > np.finfo(r.dtype).tiny) & (r < np.inf)
    log_r = tnp.where(normal, tnp.log(tnp.where(normal, r, 1.0)),
                      tnp.log(tnp.where(normal, 1.0, xs)) - tnp.log(tnp.where(normal, 1.0, ys)))
    return x * log_r, pos, (x == 0) & (y >= 0), tnp.isnan(x) | tnp.isnan(y)


def rel_entr(x, y):
    """x log(x/y) for x, y > 0, 0 for x == 0 and y >= 0, inf otherwise (NaN for NaN), as
    `scipy.special.rel_entr`; differentiable where x, y > 0 (d/dx = log(x/y) + 1,
    d/dy = -x/y), with 0 in y where x == 0."""
    x, y = _float2(x, y, weak=False)
    v, pos, zero, nan = _rel_entr(x, y)
    return tnp.where(nan, np.nan, tnp.where(pos, v, tnp.where(zero, tnp.zeros_like(v),
                                                              tnp.full_like(v, np.inf))))


def kl_div(x, y):
    """x log(x/y) - x + y for x, y > 0, y for x == 0 and y >= 0, inf otherwise (NaN for NaN),
    as `scipy.special.kl_div`; differentiable where x, y > 0, and in y where x == 0 (1)."""
    x, y = _float2(x, y, weak=False)
    v, pos, zero, nan = _rel_entr(x, y)
    return tnp.where(nan, np.nan, tnp.where(pos, v - x + y, tnp.where(
        zero, y, tnp.full_like(v, np.inf))))


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below, as `scipy.special.entr`."""
    x = _float(x)
    pos = x > 0
    v = -x * tnp.log(tnp.where(pos, x, 1.0))
    return tnp.where(pos, v, tnp.where(x == 0, 0.0, tnp.where(x < 0, -np.inf, x)))


def _axis_tuple(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(int(a) % ndim if ndim else int(a) for a in axes)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) along `axis`, without overflow, as `scipy.special.logsumexp`.
    With return_sign=True, returns (log|s|, sign(s)); otherwise a negative sum gives NaN."""
    a = tnp.asarray(a)
    if a.dtype.kind not in "fc":
        a = a.astype(np.float64)
    if b is not None:
        b = tnp.asarray(b)
        if b.dtype.kind == "f" and a.dtype.kind == "f":
            dt = np.result_type(a.dtype, b.dtype)
            a = a.astype(dt)
        a, b = tnp.broadcast_arrays(a, b)
        a = tnp.where(b == 0, -np.inf, a)      # SciPy: terms with b == 0 do not count
    axes = _axis_tuple(axis, a.ndim)
    if any(a.shape[i] == 0 for i in axes):     # an empty sum: log(0) = -inf, no shift
        m = tnp.zeros_like(tnp.sum(a, axis=axes, keepdims=True))
    else:
        m = tnp.max(a, axis=axes, keepdims=True) if a.ndim else a
    m = stop_gradient(tnp.where(tnp.isfinite(m), m, 0.0).astype(a.dtype))
    e = tnp.exp(a - m)
    if b is not None:
        e = e * b.astype(a.dtype) if b.dtype != a.dtype else e * b
    s = tnp.sum(e, axis=axes, keepdims=True)
    if return_sign:
        sgn = tnp.sign(s)
        s = tnp.abs(s)
    out = tnp.log(s) + m
    if not keepdims:
        out = tnp.squeeze(out, axis=axes) if axes else out
        if return_sign:
            sgn = tnp.squeeze(sgn, axis=axes) if axes else sgn
    if return_sign:
        return out, sgn
    return out


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) along `axis` (all elements for None), as `scipy.special.softmax`."""
    x = tnp.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    # SciPy's formula: a NaN from inf - inf reaches the whole slice through the sum
    shifted = tnp.exp(x - stop_gradient(tnp.max(x, axis=axis, keepdims=True)))
    return shifted / tnp.sum(shifted, axis=axis, keepdims=True)


def log_softmax(x, axis=None):
    """x - logsumexp(x) along `axis`, as `scipy.special.log_softmax`."""
    x = tnp.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    # SciPy's formula (a non-finite maximum shifts by 0): x - max loses nothing where
    # x - logsumexp(x) would round (two elements at the float maximum: -log 2, not 0)
    m = stop_gradient(tnp.max(x, axis=axis, keepdims=True))
    tmp = x - tnp.where(tnp.isfinite(m), m, 0)
    return tmp - tnp.log(tnp.sum(tnp.exp(tmp), axis=axis, keepdims=True))
