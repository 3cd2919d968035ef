"""`scipy.stats` distributions in ndflow: log-densities, densities and CDFs composed of ndflow
operations, so they differentiate in x and in every parameter, compile and vectorize.

Each distribution is an object with SciPy's method names and arguments (`norm.logpdf(x, loc=0,
scale=1)`, `poisson.logpmf(k, mu, loc=0)`, ...). Results are float64, as SciPy's. Outside the
support a log-density is -inf; an invalid parameter (scale <= 0, p outside [0, 1]) gives NaN,
as SciPy. The CDFs of t, gamma, beta, poisson and binom use the regularized incomplete
gamma/beta functions, which are differentiable in x only: they differentiate in x (t, gamma,
beta), mu (poisson) and p (binom); a gradient with respect to a shape parameter (df, a, b, n)
raises NotImplementedError.
"""
import math

import numpy as np

from .. import numpy as tnp
from ..autodiff.forward import stop_gradient
from . import special as sp
from ..numpy._core import checked

__all__ = ["norm", "multivariate_normal", "t", "gamma", "beta", "poisson", "bernoulli", "binom",
           "dirichlet", "laplace", "cauchy", "expon", "uniform"]

_LOG_2PI = math.log(2 * math.pi)


def _f(x):
    x = tnp.asarray(x)
    return x if x.dtype == np.float64 else x.astype(np.float64)


def _z(x, loc, scale):
    x, loc, scale = _f(x), _f(loc), _f(scale)
    safe = tnp.where(scale > 0, scale, 1.0)
    z = (x - loc) / safe
    # an infinite z (x or loc infinite, or the quotient overflowing) is a constant to the
    # gradients: the densities' derivatives there are 0 * inf in the chain, not NaN
    z = tnp.where(tnp.isinf(z), stop_gradient(z), z)
    return z, safe, ~(scale > 0) | tnp.isnan(z)      # NaN in, NaN out (support masks hide it)


def _nan_where(bad, v):
    return tnp.where(bad, np.nan, v)


def _guarded(ok, fn, args, safe):
    """fn(*args), differentiable where `ok`: there from the arguments themselves, elsewhere
    (infinite parameters, points off the support) the value of fn on the arguments held
    constant, so SciPy's values stay and no inf * 0 reaches the gradients."""
    live = fn(*[tnp.where(ok, a, s) for a, s in zip(args, safe)])
    return tnp.where(ok, live, fn(*[stop_gradient(a) for a in args]))


def _ends(kind, z, lo, hi, v):
    """SciPy's values at and beyond the ends lo < hi of the standardized support (its
    rv_continuous: cdf 1 from hi on, 0 up to lo; sf the reverse; their logs 0.0 and -inf),
    `v` strictly inside."""
    at_hi, at_lo = z >= hi, z <= lo
    if kind in ("sf", "logsf"):
        at_hi, at_lo = at_lo, at_hi
    one, zero = (0.0, -np.inf) if kind.startswith("log") else (1.0, 0.0)
    return tnp.where(at_hi, one, tnp.where(at_lo, zero, v))


def _log1p_sq(z, d):
    """log1p(z^2 / d) without overflow of z^2 (for |z| > 1e150: 2 log|z| - log d + ...)."""
    big = tnp.abs(z) > 1e150
    zs = tnp.where(big, 1.0, z)
    zb = tnp.where(big, z, 1e150)
    return tnp.where(big, 2 * tnp.log(tnp.abs(zb)) - tnp.log(d) + tnp.log1p(d / (zb * zb)),
                     tnp.log1p(zs * zs / d))


def _alog1pmx(a, x):
    """a (log(x/a) - (x/a - 1)) = a log(x/a) - x + a, without cancellation near x = a (the
    series in mu = x/a - 1 below |mu| = 0.1), without overflow or underflow of x/a elsewhere."""
    mu = x / a - 1
    small = tnp.abs(mu) < 0.1
    m = tnp.where(small, mu, 0.0)
    term, acc = -m * m, 0.0 * m
    for k in range(2, 20):
        acc = acc + term / k
        term = -term * m
    aa, xx = tnp.where(small, 1.0, a), tnp.where(small, 1.0, x)
    return tnp.where(small, a * acc, aa * (tnp.log(xx) - tnp.log(aa)) - xx + aa)


class _Distribution:
    """A namespace of functions with SciPy's names (norm.logpdf, ...)."""

    def __init__(self, name, **methods):
        self.name = name
        for k, f in methods.items():
            setattr(self, k, f)

    def __repr__(self):
        return f"<ndflow.scipy.stats.{self.name}>"


def _exp_of(logf):
    def f(*args, **kwargs):
        return tnp.exp(logf(*args, **kwargs))
    f.__doc__ = f"exp of `{logf.__name__}`."
    return f


# ------------------------------------------------------------------ norm
def _norm_logpdf(x, loc=0, scale=1):
    """log N(x; loc, scale^2), as `scipy.stats.norm.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, -0.5 * z * z - tnp.log(s) - 0.5 * _LOG_2PI)


def _norm_cdf(x, loc=0, scale=1):
    """The normal CDF, as `scipy.stats.norm.cdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, _ends("cdf", z, -np.inf, np.inf, sp.ndtr(z)))


def _norm_logcdf(x, loc=0, scale=1):
    """log of the normal CDF (accurate in the tails), as `scipy.stats.norm.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, _ends("logcdf", z, -np.inf, np.inf, sp.log_ndtr(z)))


def _norm_sf(x, loc=0, scale=1):
    """1 - cdf, as `scipy.stats.norm.sf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, _ends("sf", z, -np.inf, np.inf, sp.ndtr(-z)))


def _norm_logsf(x, loc=0, scale=1):
    """log(1 - cdf), as `scipy.stats.norm.logsf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, _ends("logsf", z, -np.inf, np.inf, sp.log_ndtr(-z)))


def _norm_ppf(q, loc=0, scale=1):
    """The normal quantile function, as `scipy.stats.norm.ppf`."""
    q, loc, scale = _f(q), _f(loc), _f(scale)
    bad = ~(scale > 0)
    return _nan_where(bad, loc + scale * sp.ndtri(q))


norm = _Distribution("norm", logpdf=_norm_logpdf, pdf=_exp_of(_norm_logpdf), cdf=_norm_cdf,
                     logcdf=_norm_logcdf, sf=_norm_sf, logsf=_norm_logsf, ppf=_norm_ppf)


# ------------------------------------------------------------------ multivariate_normal
def _mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    """log density of N(mean, cov) at the rows of x (last axis: the dimension), squeezed as
    `scipy.stats.multivariate_normal.logpdf` squeezes it. cov: a scalar, a vector (diagonal) or
    a positive-definite matrix (a Cholesky factorization; singular cov raises)."""
    if allow_singular:
        raise NotImplementedError("ndflow.scipy.stats.multivariate_normal: allow_singular=True "
                                  "is not supported")
    x, cov = _f(x), _f(tnp.asarray_chkfinite(cov))     # SciPy's check (its eigh)
    mean = None if mean is None else _f(mean)
    dim = (cov.shape[0] if cov.ndim else (mean.shape[-1] if mean is not None and mean.ndim
                                          else 1))
    if cov.ndim == 0:
        cov = cov * tnp.eye(dim)
    elif cov.ndim == 1:
        cov = tnp.diag(cov) if dim > 1 or cov.shape[0] == 1 else cov
    if mean is None:
        mean = tnp.zeros(dim)
    elif mean.ndim == 0:
        mean = mean * tnp.ones(dim)
    if dim == 1 and x.ndim >= 1 and x.shape[-1] != 1:
        x = x[..., None]             # SciPy: in one dimension, each element is a point
    elif x.ndim == 0:
        x = tnp.reshape(x, (1,))
    L = tnp.linalg.cholesky(cov)
    d = x - mean
    # an infinite coordinate (none NaN) is a point of density 0: -inf (the solve would mix
    # inf - inf into NaN)
    far = tnp.any(tnp.isinf(d), axis=-1) & ~tnp.any(tnp.isnan(d), axis=-1)
    d = tnp.where(tnp.isinf(d), 0.0, d)
    flat = tnp.reshape(d, (-1, dim)).T
    # scaled by the largest |x - mean| (no inf - inf in the solve for huge coordinates)
    big = stop_gradient(tnp.max(tnp.abs(flat), axis=0)) if dim else tnp.ones(
        (flat.shape[1],))
    big = tnp.where(big > 0, big, 1.0)
    sol = tnp.linalg.solve(L, flat / big)        # L^{-1} (x - mean) / big
    maha = tnp.where(tnp.reshape(far, (-1,)), np.inf, tnp.sum(sol * sol, axis=0) * big * big)
    logdet = 2 * tnp.sum(tnp.log(tnp.diagonal(L)))
    out = -0.5 * (dim * _LOG_2PI + logdet + maha)
    out = tnp.reshape(out, d.shape[:-1])
    return tnp.squeeze(out) if out.ndim else out


multivariate_normal = _Distribution("multivariate_normal", logpdf=_mvn_logpdf,
                                    pdf=_exp_of(_mvn_logpdf))


# ------------------------------------------------------------------ t
def _t_logpdf(x, df, loc=0, scale=1):
    """Student's t log density, as `scipy.stats.t.logpdf` (df > 0; df = inf is the normal).
    The normalizing constant is -betaln(df/2, 1/2) - log(df)/2, exact for huge df where
    gammaln((df + 1)/2) - gammaln(df/2) would cancel."""
    z, s, bad = _z(x, loc, scale)
    df = _f(df)
    bad = bad | ~(df > 0)
    inf = df == np.inf
    d = tnp.where(inf, 1.0, df)
    far = tnp.isinf(z)                 # density 0 (its log -inf), with no inf * 0 gradients
    zf = tnp.where(far, 0.0, z)
    v = -sp.betaln(d / 2, 0.5) - 0.5 * tnp.log(d) - (d + 1) / 2 * _log1p_sq(zf, d)
    v = tnp.where(inf, -0.5 * zf * zf - 0.5 * _LOG_2PI, v) - tnp.log(s)
    return _nan_where(bad, tnp.where(far, -np.inf, v))


def _t_cdf(x, df, loc=0, scale=1):
    """Student's t CDF, as `scipy.stats.t.cdf` (df = inf is the normal): the tail
    I_(df/(df+z^2))(df/2, 1/2) / 2, through the complement I_(z^2/(df+z^2))(1/2, df/2) where
    df/(df+z^2) is near 1 (there it would round to 1)."""
    z, s, bad = _z(x, loc, scale)
    df = _f(df)
    bad = bad | ~(df > 0)
    inf = df > 1e290                   # the normal to rounding (the difference is z^2 / df)
    tiny = df < 1e-300
    d = tnp.where(inf | tiny, 1.0, df)
    # at z ~ 0 the incomplete beta's slope in z^2 is inf and z^2's is 0: there the CDF is
    # 1/2 + z pdf(0) (to z^3), its derivative the density
    near = tnp.abs(z) < 1e-8 * tnp.sqrt(tnp.minimum(d, 1.0))
    z0 = z
    z = tnp.where(near, 1.0, z)
    zz = z * z
    # d / (d + z^2) and its complement, neither overflowing nor underflowing to 0 early;
    # each quotient on safe operands where it is not the one taken (z = 0: d / z^2)
    small = zz <= d
    zl, dl = tnp.where(small, 1.0, zz), tnp.where(small, 1.0, d)
    zs, ds = tnp.where(small, zz, 0.0), tnp.where(small, d, 1.0)
    xb = tnp.where(small, 1 / (1 + zs / ds), dl / (dl + zl))
    xc = tnp.where(small, zs / (ds + zs), 1 / (1 + dl / zl))
    lo = xb < 0.5                      # (each side's argument safe where it is not taken:
    xbs, xcs = tnp.where(lo, xb, 0.25), tnp.where(lo, 0.25, xc)    # I_x's slope at 1 is inf)
    tail = tnp.where(lo, 0.5 * sp.betainc(d / 2, 0.5 + 0 * d, xbs),
                     0.5 - 0.5 * sp.betainc(0.5 + 0 * d, d / 2, xcs))
    v = tnp.where(inf, sp.ndtr(z), tnp.where(z > 0, 1 - tail, tail))
    pdf0 = tnp.where(inf, 1 / math.sqrt(2 * math.pi),
                     tnp.exp(-sp.betaln(d / 2, 0.5) - 0.5 * tnp.log(d)))
    v = tnp.where(near, 0.5 + z0 * pdf0, v)
    z = z0
    # df -> 0 spreads the mass to +-inf: 1/2 at every finite z (where df/2 underflows)
    v = tnp.where(tiny, 0.5, v)
    return _nan_where(bad, _ends("cdf", z, -np.inf, np.inf, v))


t = _Distribution("t", logpdf=_t_logpdf, pdf=_exp_of(_t_logpdf), cdf=_t_cdf)


# ------------------------------------------------------------------ gamma, beta
def _gamma_logpdf(x, a, loc=0, scale=1):
    """Gamma(a) log density of (x - loc) / scale, as `scipy.stats.gamma.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    a_in = _f(a)
    bad = bad | ~(a_in > 0)
    # a = inf (all the mass at infinity) on its own, like z == 0 below (the density there
    # is 0, exp(-gammaln(a)) or inf by a): no log(0) * 0 in the others' gradients
    a = tnp.where((a_in > 0) & (a_in < np.inf), a_in, 2.0)
    inside = z >= 0
    pos = (z > 0) & (z < np.inf)
    zs = tnp.where(pos, z, 1.0)
    at0 = tnp.where(a > 1, -np.inf, tnp.where(a == 1, 0.0, np.inf))
    # (z = inf: SciPy's xlogy(a - 1, inf) - inf, NaN for a > 1)
    at_inf = tnp.where(a > 1, np.nan, -np.inf)
    v = tnp.where(pos, sp.xlogy(a - 1, zs) - zs, tnp.where(z > 0, at_inf, at0)) - \
        sp.gammaln(a)
    # a >= 10: a log z - z - gammaln(a) from Stirling's series, the large parts combined
    # (a log1p(mu) - a mu, mu = z/a - 1): the direct sum cancels to nothing for huge a
    big = (a >= 10) & pos
    ab = tnp.where(big, a, 10.0)
    zb = tnp.where(big, zs, 10.0)
    stable = (_alog1pmx(ab, zb) + 0.5 * tnp.log(ab / (2 * math.pi))
              - sp._stirling_corr(ab) - tnp.log(zb))
    v = tnp.where(big, stable, v) - tnp.log(s)
    v = tnp.where(a_in == np.inf, -np.inf, v)
    return _nan_where(bad, tnp.where(inside, v, -np.inf))


def _gamma_cdf(x, a, loc=0, scale=1):
    """Gamma(a) CDF of (x - loc) / scale, as `scipy.stats.gamma.cdf`."""
    z, s, bad = _z(x, loc, scale)
    a = _f(a)
    bad = bad | ~(a > 0)
    return _nan_where(bad, _ends("cdf", z, 0.0, np.inf, sp.gammainc(a, tnp.maximum(z, 0.0))))


gamma = _Distribution("gamma", logpdf=_gamma_logpdf, pdf=_exp_of(_gamma_logpdf),
                      cdf=_gamma_cdf)


def _beta_logpdf(x, a, b, loc=0, scale=1):
    """Beta(a, b) log density of (x - loc) / scale, as `scipy.stats.beta.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    a, b = _f(a), _f(b)
    bad = bad | ~(a > 0) | ~(b > 0)
    inside = (z >= 0) & (z <= 1)
    # the ends on their own (log 0 times a - 1 or b - 1 is -inf, 0 or inf by the parameter):
    # no 0 * log(0) in the gradients elsewhere

    def end(p):
        return tnp.where(p > 1, -np.inf, tnp.where(p == 1, 0.0, np.inf))

    def value(z, a, b):
        za, zb = tnp.where(z > 0, z, 0.5), tnp.where(z < 1, z, 0.5)
        ta = tnp.where(z > 0, sp.xlogy(a - 1, za), end(a))
        tb = tnp.where(z < 1, sp.xlog1py(b - 1, -zb), end(b))
        return ta + tb - sp.betaln(a, b)
    fin = tnp.isfinite(a) & tnp.isfinite(b) & inside
    v = _guarded(fin, value, (z, a, b), (0.5, 2.0, 2.0)) - tnp.log(s)
    return _nan_where(bad, tnp.where(inside, v, -np.inf))


def _beta_cdf(x, a, b, loc=0, scale=1):
    """Beta(a, b) CDF of (x - loc) / scale, as `scipy.stats.beta.cdf`."""
    z, s, bad = _z(x, loc, scale)
    a, b = _f(a), _f(b)
    bad = bad | ~(a > 0) | ~(b > 0)
    return _nan_where(bad, _ends("cdf", z, 0.0, 1.0, sp.betainc(a, b, tnp.clip(z, 0.0, 1.0))))


beta = _Distribution("beta", logpdf=_beta_logpdf, pdf=_exp_of(_beta_logpdf), cdf=_beta_cdf)


# ------------------------------------------------------------------ discrete
def _integer_k(k, loc):
    k = _f(k) - _f(loc)
    return k, (k == tnp.floor(k)), tnp.isnan(k)


def _poisson_logpmf(k, mu, loc=0):
    """Poisson(mu) log pmf, -inf off the non-negative integers, as
    `scipy.stats.poisson.logpmf`."""
    k, isint, knan = _integer_k(k, loc)
    mu = _f(mu)
    inside = isint & (k >= 0)
    ks = tnp.where(inside, k, 0.0)
    v = _guarded(tnp.isfinite(ks) & tnp.isfinite(mu),
                 lambda ks, mu: sp.xlogy(ks, mu) - mu - sp.gammaln(ks + 1), (ks, mu), (0.0, 1.0))
    return _nan_where(~(mu >= 0) | knan, tnp.where(inside, v, -np.inf))


def _poisson_cdf(k, mu, loc=0):
    """Poisson(mu) CDF, Q(floor(k) + 1, mu), as `scipy.stats.poisson.cdf`."""
    k = _f(k) - _f(loc)
    mu = _f(mu)
    kk = tnp.floor(tnp.where(k >= 0, k, 0.0))
    v = tnp.where(k < 0, 0.0, tnp.where(k == np.inf, 1.0, sp.gammaincc(kk + 1, mu)))
    return _nan_where(~(mu >= 0) | tnp.isnan(k), v)


poisson = _Distribution("poisson", logpmf=_poisson_logpmf, pmf=_exp_of(_poisson_logpmf),
                        cdf=_poisson_cdf)


def _bernoulli_logpmf(k, p, loc=0):
    """Bernoulli(p) log pmf, as `scipy.stats.bernoulli.logpmf`."""
    k, isint, knan = _integer_k(k, loc)
    p = _f(p)
    inside = isint & ((k == 0) | (k == 1))
    ks = tnp.where(inside, k, 0.0)
    v = sp.xlogy(ks, p) + sp.xlog1py(1 - ks, -p)
    return _nan_where(~((p >= 0) & (p <= 1)) | knan, tnp.where(inside, v, -np.inf))


def _bernoulli_cdf(k, p, loc=0):
    """Bernoulli(p) CDF, as `scipy.stats.bernoulli.cdf`."""
    k = _f(k) - _f(loc)
    p = _f(p)
    v = tnp.where(k < 0, 0.0, tnp.where(k < 1, 1 - p, 1.0 + 0 * p))
    return _nan_where(~((p >= 0) & (p <= 1)) | tnp.isnan(k), v)


bernoulli = _Distribution("bernoulli", logpmf=_bernoulli_logpmf, pmf=_exp_of(_bernoulli_logpmf),
                          cdf=_bernoulli_cdf)


def _binom_logpmf(k, n, p, loc=0):
    """Binomial(n, p) log pmf, as `scipy.stats.binom.logpmf`."""
    k, isint, knan = _integer_k(k, loc)
    n, p = _f(n), _f(p)
    inside = isint & (k >= 0) & (k <= n)
    ks = tnp.where(inside, k, 0.0)
    v = (sp.gammaln(n + 1) - sp.gammaln(ks + 1) - sp.gammaln(n - ks + 1)
         + sp.xlogy(ks, p) + sp.xlog1py(n - ks, -p))
    bad = ~((p >= 0) & (p <= 1)) | ~(n >= 0) | (n != tnp.floor(n)) | knan
    return _nan_where(bad, tnp.where(inside, v, -np.inf))


def _binom_cdf(k, n, p, loc=0):
    """Binomial(n, p) CDF, I_(1-p)(n - floor(k), floor(k) + 1), as `scipy.stats.binom.cdf`."""
    k = _f(k) - _f(loc)
    n, p = _f(n), _f(p)
    kk = tnp.floor(k)
    inner = (kk >= 0) & (kk < n)
    ks = tnp.where(inner, kk, 0.0)
    v = sp.betainc(tnp.where(inner, n - ks, 1.0), ks + 1, 1 - p)
    v = tnp.where(kk < 0, 0.0, tnp.where(kk >= n, 1.0, v))
    bad = ~((p >= 0) & (p <= 1)) | ~(n >= 0) | (n != tnp.floor(n)) | tnp.isnan(k)
    return _nan_where(bad, v)


binom = _Distribution("binom", logpmf=_binom_logpmf, pmf=_exp_of(_binom_logpmf),
                      cdf=_binom_cdf)


# ------------------------------------------------------------------ dirichlet
def _dirichlet_logpdf(x, alpha):
    """Dirichlet(alpha) log density; x's FIRST axis is the component axis (K or K-1 entries,
    the last one then 1 - sum), as `scipy.stats.dirichlet.logpdf`, with SciPy's checks of the
    parameters and of x (ValueError; at every call of a compiled function too)."""
    x, alpha = tnp.asarray(x), tnp.asarray(alpha)
    if alpha.dtype.kind != "f":
        alpha = alpha.astype(np.float64)
    # SciPy checks x in its own dtype (float32 sums in float32), then computes
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    if alpha.ndim != 1:
        raise ValueError("Parameter vector 'a' must be one dimensional, but a.shape = %s."
                         % (alpha.shape,))
    K = alpha.shape[0]
    if x.shape[0] == K - 1:
        x = tnp.concatenate([x, 1 - tnp.sum(x, axis=0, keepdims=True)], axis=0)
    if x.shape[0] != K:
        raise ValueError("Vector 'x' must have either the same number of entries as, or one "
                         "entry fewer than, parameter vector 'a', but alpha.shape = %s and "
                         "x.shape = %s." % (alpha.shape, x.shape))
    # SciPy's order and tests (min/max: a NaN passes them, as in SciPy)
    alpha = checked(alpha, tnp.min(alpha) <= 0, ValueError, "All parameters must be greater "
                    "than 0")
    x = checked(x, tnp.min(x) < 0, ValueError,
                "Each entry in 'x' must be greater than or equal to zero.")
    x = checked(x, tnp.max(x) > 1, ValueError, "Each entry in 'x' must be smaller or equal one.")
    a = tnp.reshape(alpha, (K,) + (1,) * (x.ndim - 1))
    x = checked(x, tnp.any((x == 0) & (a < 1)), ValueError,
                "Each entry in 'x' must be greater than zero if its alpha is less than one.")
    x = checked(x, tnp.any(tnp.abs(tnp.sum(x, axis=0) - 1.0) > 10e-10), ValueError,
                "The input vector 'x' must lie within the normal simplex.")
    dt = np.result_type(x.dtype, alpha.dtype)
    x, alpha = _f(x), _f(alpha)
    a = tnp.reshape(alpha, (K,) + (1,) * (x.ndim - 1))
    v = tnp.sum(sp.xlogy(a - 1, x), axis=0) + sp.gammaln(tnp.sum(alpha)) - \
        tnp.sum(sp.gammaln(alpha))
    # SciPy squeezes every length-1 axis; float32 x and alpha give float32 (computed in
    # float64 here, rounded once)
    return tnp.squeeze(v).astype(dt)


dirichlet = _Distribution("dirichlet", logpdf=_dirichlet_logpdf, pdf=_exp_of(_dirichlet_logpdf))


# ------------------------------------------------------------------ laplace, cauchy, expon,
#                                                                    uniform
def _laplace_logpdf(x, loc=0, scale=1):
    """Laplace log density, as `scipy.stats.laplace.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, -tnp.abs(z) - tnp.log(s) - math.log(2))    # (2 s may overflow)


def _laplace_cdf(x, loc=0, scale=1):
    """Laplace CDF, as `scipy.stats.laplace.cdf`."""
    z, s, bad = _z(x, loc, scale)
    neg = z < 0
    # each side with its own operand (no |z|: the CDF is smooth at 0, |z|'s derivative is not)
    zn, zp = tnp.where(neg, z, 0.0), tnp.where(neg, 0.0, z)
    v = tnp.where(neg, 0.5 * tnp.exp(zn), 1 - 0.5 * tnp.exp(-zp))
    return _nan_where(bad, _ends("cdf", z, -np.inf, np.inf, v))


def _laplace_logcdf(x, loc=0, scale=1):
    """log of the Laplace CDF, as `scipy.stats.laplace.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    neg = z < 0
    zp = tnp.where(neg, 0.0, z)
    return _nan_where(bad, _ends("logcdf", z, -np.inf, np.inf, tnp.where(
        neg, z - math.log(2), tnp.log1p(-0.5 * tnp.exp(-zp)))))


laplace = _Distribution("laplace", logpdf=_laplace_logpdf, pdf=_exp_of(_laplace_logpdf),
                        cdf=_laplace_cdf, logcdf=_laplace_logcdf)


def _cauchy_logpdf(x, loc=0, scale=1):
    """Cauchy log density, as `scipy.stats.cauchy.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    # (log(s) + log(pi): pi * s overflows for s near the float max)
    return _nan_where(bad, -tnp.log(s) - math.log(math.pi) - _log1p_sq(z, 1.0))


def _cauchy_cdf(x, loc=0, scale=1):
    """Cauchy CDF, as `scipy.stats.cauchy.cdf`."""
    z, s, bad = _z(x, loc, scale)
    # the left tail as arctan(-1/z)/pi: 1/2 + arctan(z)/pi would cancel to 0 there
    tail = z < -1
    zn = tnp.where(tail, z, -1.0)
    zc = tnp.where(tail, 0.0, z)
    v = tnp.where(tail, tnp.arctan(-1 / zn) / math.pi, 0.5 + tnp.arctan(zc) / math.pi)
    return _nan_where(bad, _ends("cdf", z, -np.inf, np.inf, v))


def _cauchy_logcdf(x, loc=0, scale=1):
    """log of the Cauchy CDF, as `scipy.stats.cauchy.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    # far left, log(arctan(-1/z)/pi) = -log(-z pi) + O(z^-2), whose derivative does not pass
    # through 1/z^2 (which underflows)
    far = z < -1e150
    zf = tnp.where(far, z, -1e150)
    v = tnp.where(far, -tnp.log(-zf) - math.log(math.pi), tnp.log(_cauchy_cdf(x, loc, scale)))
    return _nan_where(bad, _ends("logcdf", z, -np.inf, np.inf, v))


cauchy = _Distribution("cauchy", logpdf=_cauchy_logpdf, pdf=_exp_of(_cauchy_logpdf),
                       cdf=_cauchy_cdf, logcdf=_cauchy_logcdf)


def _expon_logpdf(x, loc=0, scale=1):
    """Exponential log density, as `scipy.stats.expon.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    inside = z >= 0
    return _nan_where(bad, tnp.where(inside, -z - tnp.log(s), -np.inf))


def _expon_cdf(x, loc=0, scale=1):
    """Exponential CDF, as `scipy.stats.expon.cdf`."""
    z, s, bad = _z(x, loc, scale)
    inside = z >= 0
    return _nan_where(bad, _ends("cdf", z, 0.0, np.inf, tnp.where(
        inside, -tnp.expm1(-tnp.where(inside, z, 0.0)), 0.0)))


def _expon_logcdf(x, loc=0, scale=1):
    """log of the exponential CDF, as `scipy.stats.expon.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    inside = z > 0
    # log(1 - e^-z): through expm1 below log 2, log1p above (each exact on its side)
    near = z < math.log(2)
    zs = tnp.where(inside & near, z, 1.0)
    zl = tnp.where(near, 1.0, z)
    v = tnp.where(near, tnp.log(-tnp.expm1(-zs)), tnp.log1p(-tnp.exp(-zl)))
    return _nan_where(bad, _ends("logcdf", z, 0.0, np.inf, tnp.where(inside, v, -np.inf)))


expon = _Distribution("expon", logpdf=_expon_logpdf, pdf=_exp_of(_expon_logpdf),
                      cdf=_expon_cdf, logcdf=_expon_logcdf)


def _uniform_logpdf(x, loc=0, scale=1):
    """Uniform log density on [loc, loc + scale], as `scipy.stats.uniform.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    inside = (z >= 0) & (z <= 1)
    # 0.0 - log(s), as SciPy's: -log(1) would be -0.0
    return _nan_where(bad, tnp.where(inside, 0.0 - tnp.log(s), -np.inf))


def _uniform_cdf(x, loc=0, scale=1):
    """Uniform CDF, as `scipy.stats.uniform.cdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, _ends("cdf", z, 0.0, 1.0, z))


def _uniform_logcdf(x, loc=0, scale=1):
    """log of the uniform CDF, as `scipy.stats.uniform.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, _ends("logcdf", z, 0.0, 1.0, tnp.log(tnp.where((z > 0) & (z < 1),
                                                                          z, 0.5))))


uniform = _Distribution("uniform", logpdf=_uniform_logpdf, pdf=_exp_of(_uniform_logpdf),
                        cdf=_uniform_cdf, logcdf=_uniform_logcdf)
