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
from . import special as sp

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
    return z, safe, ~(scale > 0) | tnp.isnan(z)      # NaN in, NaN out (support masks hide it)


def _nan_where(bad, v):
    return tnp.where(bad, np.nan, v)


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
    return _nan_where(bad, sp.ndtr(z))


def _norm_logcdf(x, loc=0, scale=1):
    """log of the normal CDF (accurate in the tails), as `scipy.stats.norm.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, sp.log_ndtr(z))


def _norm_sf(x, loc=0, scale=1):
    """1 - cdf, as `scipy.stats.norm.sf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, sp.ndtr(-z))


def _norm_logsf(x, loc=0, scale=1):
    """log(1 - cdf), as `scipy.stats.norm.logsf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, sp.log_ndtr(-z))


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
    flat = tnp.reshape(d, (-1, dim)).T
    sol = tnp.linalg.solve(L, flat)              # L^{-1} (x - mean)
    maha = tnp.sum(sol * sol, axis=0)
    logdet = 2 * tnp.sum(tnp.log(tnp.diagonal(L)))
    out = -0.5 * (dim * _LOG_2PI + logdet + maha)
    out = tnp.reshape(out, d.shape[:-1])
    return tnp.squeeze(out) if out.ndim else out


multivariate_normal = _Distribution("multivariate_normal", logpdf=_mvn_logpdf,
                                    pdf=_exp_of(_mvn_logpdf))


# ------------------------------------------------------------------ t
def _t_logpdf(x, df, loc=0, scale=1):
    """Student's t log density, as `scipy.stats.t.logpdf` (df > 0)."""
    z, s, bad = _z(x, loc, scale)
    df = _f(df)
    bad = bad | ~(df > 0)
    v = (sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * tnp.log(df * math.pi)
         - (df + 1) / 2 * tnp.log1p(z * z / df) - tnp.log(s))
    return _nan_where(bad, v)


def _t_cdf(x, df, loc=0, scale=1):
    """Student's t CDF, as `scipy.stats.t.cdf` (through the incomplete beta function)."""
    z, s, bad = _z(x, loc, scale)
    df = _f(df)
    bad = bad | ~(df > 0)
    tail = 0.5 * sp.betainc(df / 2, 0.5 + 0 * df, df / (df + z * z))
    return _nan_where(bad, tnp.where(z > 0, 1 - tail, tail))


t = _Distribution("t", logpdf=_t_logpdf, pdf=_exp_of(_t_logpdf), cdf=_t_cdf)


# ------------------------------------------------------------------ gamma, beta
def _gamma_logpdf(x, a, loc=0, scale=1):
    """Gamma(a) log density of (x - loc) / scale, as `scipy.stats.gamma.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    a = _f(a)
    bad = bad | ~(a > 0)
    inside = z >= 0
    zs = tnp.where(inside, z, 1.0)
    v = sp.xlogy(a - 1, zs) - zs - sp.gammaln(a) - tnp.log(s)
    return _nan_where(bad, tnp.where(inside, v, -np.inf))


def _gamma_cdf(x, a, loc=0, scale=1):
    """Gamma(a) CDF of (x - loc) / scale, as `scipy.stats.gamma.cdf`."""
    z, s, bad = _z(x, loc, scale)
    a = _f(a)
    bad = bad | ~(a > 0)
    return _nan_where(bad, sp.gammainc(a, tnp.maximum(z, 0.0)))


gamma = _Distribution("gamma", logpdf=_gamma_logpdf, pdf=_exp_of(_gamma_logpdf),
                      cdf=_gamma_cdf)


def _beta_logpdf(x, a, b, loc=0, scale=1):
    """Beta(a, b) log density of (x - loc) / scale, as `scipy.stats.beta.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    a, b = _f(a), _f(b)
    bad = bad | ~(a > 0) | ~(b > 0)
    inside = (z >= 0) & (z <= 1)
    zs = tnp.where(inside, z, 0.5)
    v = sp.xlogy(a - 1, zs) + sp.xlog1py(b - 1, -zs) - sp.betaln(a, b) - tnp.log(s)
    return _nan_where(bad, tnp.where(inside, v, -np.inf))


def _beta_cdf(x, a, b, loc=0, scale=1):
    """Beta(a, b) CDF of (x - loc) / scale, as `scipy.stats.beta.cdf`."""
    z, s, bad = _z(x, loc, scale)
    a, b = _f(a), _f(b)
    bad = bad | ~(a > 0) | ~(b > 0)
    return _nan_where(bad, sp.betainc(a, b, tnp.clip(z, 0.0, 1.0)))


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
    v = sp.xlogy(ks, mu) - mu - sp.gammaln(ks + 1)
    return _nan_where(~(mu >= 0) | knan, tnp.where(inside, v, -np.inf))


def _poisson_cdf(k, mu, loc=0):
    """Poisson(mu) CDF, Q(floor(k) + 1, mu), as `scipy.stats.poisson.cdf`."""
    k = _f(k) - _f(loc)
    mu = _f(mu)
    kk = tnp.floor(tnp.where(k >= 0, k, 0.0))
    v = tnp.where(k < 0, 0.0, sp.gammaincc(kk + 1, mu))
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
    from ..numpy._core import checked
    x, alpha = _f(x), _f(alpha)
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
    v = tnp.sum(sp.xlogy(a - 1, x), axis=0) + sp.gammaln(tnp.sum(alpha)) - \
        tnp.sum(sp.gammaln(alpha))
    return v


dirichlet = _Distribution("dirichlet", logpdf=_dirichlet_logpdf, pdf=_exp_of(_dirichlet_logpdf))


# ------------------------------------------------------------------ laplace, cauchy, expon,
#                                                                    uniform
def _laplace_logpdf(x, loc=0, scale=1):
    """Laplace log density, as `scipy.stats.laplace.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, -tnp.abs(z) - tnp.log(2 * s))


def _laplace_cdf(x, loc=0, scale=1):
    """Laplace CDF, as `scipy.stats.laplace.cdf`."""
    z, s, bad = _z(x, loc, scale)
    neg = z < 0
    e = tnp.exp(-tnp.abs(z))
    return _nan_where(bad, tnp.where(neg, 0.5 * e, 1 - 0.5 * e))


def _laplace_logcdf(x, loc=0, scale=1):
    """log of the Laplace CDF, as `scipy.stats.laplace.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    neg = z < 0
    return _nan_where(bad, tnp.where(neg, z - math.log(2),
                                     tnp.log1p(-0.5 * tnp.exp(-tnp.abs(z)))))


laplace = _Distribution("laplace", logpdf=_laplace_logpdf, pdf=_exp_of(_laplace_logpdf),
                        cdf=_laplace_cdf, logcdf=_laplace_logcdf)


def _cauchy_logpdf(x, loc=0, scale=1):
    """Cauchy log density, as `scipy.stats.cauchy.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, -tnp.log(math.pi * s) - tnp.log1p(z * z))


def _cauchy_cdf(x, loc=0, scale=1):
    """Cauchy CDF, as `scipy.stats.cauchy.cdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, 0.5 + tnp.arctan(z) / math.pi)


def _cauchy_logcdf(x, loc=0, scale=1):
    """log of the Cauchy CDF, as `scipy.stats.cauchy.logcdf`."""
    return tnp.log(_cauchy_cdf(x, loc, scale))


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
    return _nan_where(bad, tnp.where(inside, -tnp.expm1(-tnp.where(inside, z, 0.0)), 0.0))


def _expon_logcdf(x, loc=0, scale=1):
    """log of the exponential CDF, as `scipy.stats.expon.logcdf`."""
    z, s, bad = _z(x, loc, scale)
    inside = z > 0
    zs = tnp.where(inside, z, 1.0)
    return _nan_where(bad, tnp.where(inside, tnp.log(-tnp.expm1(-zs)), -np.inf))


expon = _Distribution("expon", logpdf=_expon_logpdf, pdf=_exp_of(_expon_logpdf),
                      cdf=_expon_cdf, logcdf=_expon_logcdf)


def _uniform_logpdf(x, loc=0, scale=1):
    """Uniform log density on [loc, loc + scale], as `scipy.stats.uniform.logpdf`."""
    z, s, bad = _z(x, loc, scale)
    inside = (z >= 0) & (z <= 1)
    return _nan_where(bad, tnp.where(inside, -tnp.log(s), -np.inf))


def _uniform_cdf(x, loc=0, scale=1):
    """Uniform CDF, as `scipy.stats.uniform.cdf`."""
    z, s, bad = _z(x, loc, scale)
    return _nan_where(bad, tnp.clip(z, 0.0, 1.0))


def _uniform_logcdf(x, loc=0, scale=1):
    """log of the uniform CDF, as `scipy.stats.uniform.logcdf`."""
    return tnp.log(_uniform_cdf(x, loc, scale))


uniform = _Distribution("uniform", logpdf=_uniform_logpdf, pdf=_exp_of(_uniform_logpdf),
                        cdf=_uniform_cdf, logcdf=_uniform_logcdf)
