"""Op-table records for `ndflow.scipy` (special, stats, linalg, signal).

These records live in their own list, `SCIPY_RECORDS` (not `optable.RECORDS`, whose
completeness checks are about `ndflow.numpy`); `tests/test_scipy_optable.py` runs the op
table's generic checks over them with SciPy as the oracle. A record's `call(m, ...)` gets
`numpy` for the oracle side and `ndflow.numpy` for ndflow; `_ns(m)` turns those into `scipy`
and `ndflow.scipy`. SciPy is imported only when a record is called (it is optional).
"""
import numpy as np

from optable import OpRecord, Sample, values, noncontig, F32, F64, FLOATS, reduction_samples

SCIPY_RECORDS = []


def _ns(m):
    if m is np:
        import scipy.special  # noqa: F401
        import scipy.stats  # noqa: F401
        import scipy.linalg  # noqa: F401
        import scipy.signal  # noqa: F401
        import scipy
        return scipy
    import ndflow.scipy
    return ndflow.scipy


def _get(path):
    def call(m, *args, **kwargs):
        obj = _ns(m)
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj(*args, **kwargs)
    return call


def srecord(path, samples, call=None, **kw):
    r = OpRecord("scipy." + path, samples, call=call or _get(path), **kw)
    SCIPY_RECORDS.append(r)
    return r


def _in(lo, hi, shapes=((), (3,), (2, 3), (0, 3))):
    """Unary samples with values uniform in (lo, hi)."""
    def gen(rng, dt):
        out = [Sample((rng.uniform(lo, hi, s).astype(dt),), desc="shape") for s in shapes]
        out.append(Sample((rng.uniform(lo, hi, (4, 3)).astype(dt).T,), desc="noncontig"))
        return out
    return gen


def _in2(lo, hi, lo2=None, hi2=None):
    lo2 = lo if lo2 is None else lo2
    hi2 = hi if hi2 is None else hi2

    def gen(rng, dt):
        u = lambda s, a, b: rng.uniform(a, b, s).astype(dt)  # noqa: E731
        return [Sample((u((3,), lo, hi), u((3,), lo2, hi2)), desc="same shape"),
                Sample((u((2, 3), lo, hi), u((3,), lo2, hi2)), desc="broadcast"),
                Sample((u((), lo, hi), u((), lo2, hi2)), desc="scalars"),
                Sample((u((2, 1), lo, hi), u((1, 3), lo2, hi2)), desc="outer")]
    return gen


_F32_LOOSE = {F32: (2e-5, 1e-6), F64: (1e-12, 1e-14)}

# ------------------------------------------------------------------ special
srecord("special.erf", _in(-3, 3), tol=_F32_LOOSE)
srecord("special.erfc", _in(-3, 5), tol=_F32_LOOSE)
srecord("special.erfinv", _in(-0.95, 0.95), tol=_F32_LOOSE)
srecord("special.ndtr", _in(-5, 5), tol=_F32_LOOSE)
srecord("special.ndtri", _in(0.02, 0.98), tol={F32: (5e-5, 1e-6), F64: (1e-12, 1e-14)})
srecord("special.log_ndtr", lambda rng, dt: _in(-8, 8)(rng, dt) + [
    Sample((np.array([-40.0, -25.0, -19.0, -6.0, 0.0, 3.0, 9.0, 30.0]).astype(dt),),
           desc="tails")], tol={F32: (1e-4, 1e-6), F64: (1e-12, 1e-14)},
        grad_tol=(1e-6, 1e-7))
srecord("special.gammaln", lambda rng, dt: _in(0.3, 6)(rng, dt) + [
    Sample((np.array([-2.5, -0.5, 0.7, 15.0, 120.0]).astype(dt),), desc="negative, large")],
        tol={F32: (1e-4, 1e-5), F64: (1e-12, 1e-13)})
srecord("special.gamma", _in(0.3, 5), tol={F32: (1e-5, 1e-6), F64: (1e-12, 1e-14)})
srecord("special.digamma", lambda rng, dt: _in(0.3, 12)(rng, dt) + [
    Sample((np.array([-2.5, -0.3, 0.2, 30.0]).astype(dt),), desc="reflection, series")],
        tol={F32: (1e-4, 1e-5), F64: (1e-12, 1e-13)})
for _n in (1, 2):
    srecord(f"special.polygamma.n{_n}", _in(0.4, 8), dtypes=(F64,),
            call=lambda m, x, _n=_n: _ns(m).special.polygamma(_n, x),
            tol={F64: (1e-12, 1e-13)})
srecord("special.zeta", _in2(1.5, 6, 0.3, 4), dtypes=(F64,), diff_args=(1,),
        tol={F64: (1e-12, 1e-14)},
        grad_reason="x (the exponent) is checked to first order in test_scipy.py; its second "
                    "derivative raises NotImplementedError, so only q goes through the table")
srecord("special.zeta.riemann", _in(-6, 6), dtypes=(F64,),
        call=lambda m, x: _ns(m).special.zeta(x), tol={F64: (1e-11, 1e-13)}, diff_args=(),
        grad_reason="d/dx of Riemann's zeta exists only for x > 1 (first order, test_scipy.py)")
srecord("special.gammainc", _in2(0.3, 8, 0.05, 12), diff_args=(1,),
        tol={F32: (1e-4, 1e-6), F64: (1e-11, 1e-14)})
srecord("special.gammaincc", _in2(0.3, 8, 0.05, 12), diff_args=(1,),
        tol={F32: (1e-4, 1e-6), F64: (1e-11, 1e-14)})


def _betainc_samples(rng, dt):
    u = lambda s, a, b: rng.uniform(a, b, s).astype(dt)  # noqa: E731
    return [Sample((u((3,), 0.3, 6), u((3,), 0.3, 6), u((3,), 0.02, 0.98))),
            Sample((u((2, 1), 0.3, 6), u((3,), 0.3, 6), u((2, 3), 0.02, 0.98)), desc="broadcast"),
            Sample((u((), 0.3, 6), u((), 0.3, 6), u((4,), 0.02, 0.98)), desc="scalar params")]


srecord("special.betainc", _betainc_samples, diff_args=(2,),
        tol={F32: (1e-4, 1e-6), F64: (1e-11, 1e-14)})
srecord("special.betaln", _in2(0.5, 5), tol={F32: (1e-4, 1e-5), F64: (1e-12, 1e-13)})
srecord("special.expit", _in(-30, 30), tol=_F32_LOOSE)
srecord("special.logit", _in(0.02, 0.98), tol=_F32_LOOSE)
srecord("special.xlogy", _in2(-2, 2, 0.2, 3), tol=_F32_LOOSE)
srecord("special.xlog1py", _in2(-2, 2, -0.8, 3), tol=_F32_LOOSE)
srecord("special.entr", _in(0.05, 3), tol=_F32_LOOSE)
srecord("special.rel_entr", _in2(0.1, 3, 0.1, 3), tol=_F32_LOOSE)
srecord("special.kl_div", _in2(0.1, 3, 0.1, 3), tol=_F32_LOOSE)
srecord("special.i0e", _in(-40, 40), tol=_F32_LOOSE)
srecord("special.i1e", _in(-40, 40), tol=_F32_LOOSE)


def _lse_samples(rng, dt):
    out = reduction_samples(allow_empty=False)(rng, dt)
    v = values(rng, (2, 3), dt)
    b = values(rng, (2, 3), dt, "positive")
    out += [Sample((v,), {"b": b}, "b"),
            Sample((v,), {"b": b, "axis": 1, "keepdims": True}, "b axis"),
            Sample((v,), {"b": b - 1.2, "axis": 0, "return_sign": True}, "signed")]
    return out


srecord("special.logsumexp", _lse_samples, tol=_F32_LOOSE)
srecord("special.softmax", lambda rng, dt: [
    Sample((values(rng, (2, 3, 4), dt),)), Sample((values(rng, (2, 3, 4), dt),), {"axis": 1}),
    Sample((noncontig(rng, (3, 4), dt),), {"axis": -1}), Sample((values(rng, (), dt),))],
    tol=_F32_LOOSE)
srecord("special.log_softmax", lambda rng, dt: [
    Sample((values(rng, (2, 3, 4), dt),)), Sample((values(rng, (2, 3, 4), dt),), {"axis": 1}),
    Sample((noncontig(rng, (3, 4), dt),), {"axis": -1})], tol=_F32_LOOSE)

# ------------------------------------------------------------------ stats
_STATS_TOL = {F64: (1e-11, 1e-13)}
# SciPy's stats compute float32 input in float32 and return float64, so float64 is the only
# dtype with an exact oracle: the records are float64 (the result is float64 either way)


def _loc_scale(lo, hi):
    def gen(rng, dt):
        x = rng.uniform(lo, hi, (2, 3)).astype(dt)
        return [Sample((x,)), Sample((x, rng.uniform(-0.2, 0.2, (3,)).astype(dt),
                                      rng.uniform(0.8, 1.6, (2, 1)).astype(dt)), desc="loc scale"),
                Sample((x[0, 0], 0.1, 1.3), desc="scalar"),
                Sample((x.T,), {"loc": 0.05, "scale": 1.1}, "noncontig, keywords")]
    return gen


for _d, _ms, _lo, _hi in (("norm", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), -3, 3),
                          ("laplace", ("logpdf", "pdf", "cdf", "logcdf"), -3, 3),
                          ("cauchy", ("logpdf", "pdf", "cdf", "logcdf"), -3, 3),
                          ("expon", ("logpdf", "pdf", "cdf", "logcdf"), 0.3, 3),
                          ("uniform", ("logpdf", "pdf", "cdf", "logcdf"), 0.3, 0.7)):
    for _m in _ms:
        # uniform's density does not depend on x; its CDF is linear: both fine for differences
        srecord(f"stats.{_d}.{_m}", _loc_scale(_lo, _hi), dtypes=(F64,), tol=_STATS_TOL)
srecord("stats.norm.ppf", lambda rng, dt: [
    Sample((rng.uniform(0.05, 0.95, (2, 3)).astype(dt),)),
    Sample((rng.uniform(0.05, 0.95, (3,)).astype(dt), rng.uniform(-1, 1, (3,)).astype(dt),
            rng.uniform(0.5, 2, (3,)).astype(dt)))],
        tol=_STATS_TOL, dtypes=(F64,))


def _shape_params(*ranges, x=(0.2, 3)):
    def gen(rng, dt):
        xs = rng.uniform(*x, (2, 3)).astype(dt)
        ps = [rng.uniform(lo, hi, (3,)).astype(dt) for lo, hi in ranges]
        ps0 = [float(rng.uniform(lo, hi)) for lo, hi in ranges]
        return [Sample((xs, *ps)), Sample((xs, *ps0), desc="python params"),
                Sample((xs[0, 0], *ps0, 0.05, 1.2), desc="loc scale")]
    return gen


srecord("stats.t.logpdf", _shape_params((1.5, 6), x=(-3, 3)),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.t.pdf", _shape_params((1.5, 6), x=(-3, 3)),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.gamma.logpdf", _shape_params((0.5, 4)),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.gamma.pdf", _shape_params((0.5, 4)),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.t.cdf", _shape_params((1.5, 6), x=(-3, 3)), diff_args=(0,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.gamma.cdf", _shape_params((0.5, 4)), diff_args=(0,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.beta.cdf", _shape_params((0.5, 4), (0.5, 4), x=(0.1, 0.9)), diff_args=(0,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.beta.logpdf", _shape_params((0.5, 4), (0.5, 4), x=(0.1, 0.9)),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.beta.pdf", _shape_params((0.5, 4), (0.5, 4), x=(0.1, 0.9)),
        tol=_STATS_TOL, dtypes=(F64,))


def _counts(*ranges, kmax=6):
    def gen(rng, dt):
        k = rng.integers(0, kmax, (2, 3)).astype(dt)
        ps = [rng.uniform(lo, hi, (3,)).astype(dt) for lo, hi in ranges]
        # (off the support, -inf log-probabilities: test_scipy.py, not differenced here)
        return [Sample((k, *ps)), Sample((k[0, :2], *[p[:1] for p in ps]), desc="broadcast"),
                Sample((k.T, *[float(p[0]) for p in ps]), desc="noncontig, python param")]
    return gen


srecord("stats.poisson.logpmf", _counts((0.5, 4)), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.poisson.pmf", _counts((0.5, 4)), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.poisson.cdf", _counts((0.5, 4)), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.binom.cdf", _counts((0.1, 0.9)),
        call=lambda m, k, p: _ns(m).stats.binom.cdf(k, 6, p), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.bernoulli.logpmf", _counts((0.1, 0.9), kmax=2), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.bernoulli.pmf", _counts((0.1, 0.9), kmax=2), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.bernoulli.cdf", _counts((0.1, 0.9), kmax=2), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.binom.logpmf", _counts((0.1, 0.9)),
        call=lambda m, k, p: _ns(m).stats.binom.logpmf(k, 6, p), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))
srecord("stats.binom.pmf", _counts((0.1, 0.9)),
        call=lambda m, k, p: _ns(m).stats.binom.pmf(k, 6, p), diff_args=(1,),
        tol=_STATS_TOL, dtypes=(F64,))


def _dirichlet_samples(rng, dt):
    a = rng.uniform(0.8, 3, 3)
    x = rng.dirichlet(a, size=4).T
    return [Sample((x.astype(dt), a.astype(dt))), Sample((x[:, 0].astype(dt), a.astype(dt)))]


srecord("stats.dirichlet.logpdf", _dirichlet_samples, dtypes=(F64,), diff_args=(1,),
        tol=_STATS_TOL, unknown_dims=lambda s: "the number of components is needed")
srecord("stats.dirichlet.pdf", _dirichlet_samples, dtypes=(F64,), diff_args=(1,),
        tol=_STATS_TOL, unknown_dims=lambda s: "the number of components is needed")


def _mvn_samples(rng, dt):
    a = rng.normal(size=(3, 3))
    cov = (a @ a.T + np.eye(3)).astype(dt)
    mu = rng.normal(size=3).astype(dt)
    x = rng.normal(size=(4, 3)).astype(dt)
    return [Sample((x, mu, cov)), Sample((x[0], mu, cov), desc="one point")]


def _mvn_call(name):
    def call(m, x, mu, cov):
        # the covariance's gradient is only meaningful for symmetric perturbations
        cov = (cov + cov.T) / 2
        return getattr(_ns(m).stats.multivariate_normal, name)(x, mu, cov)
    return call


srecord("stats.multivariate_normal.logpdf", _mvn_samples, dtypes=(F64,),
        call=_mvn_call("logpdf"), tol=_STATS_TOL,
        unknown_dims=lambda s: "the dimension is needed while tracing")
srecord("stats.multivariate_normal.pdf", _mvn_samples, dtypes=(F64,),
        call=_mvn_call("pdf"), tol=_STATS_TOL,
        unknown_dims=lambda s: "the dimension is needed while tracing")

# ------------------------------------------------------------------ linalg
_LA_TOL = {F32: (1e-4, 1e-5), F64: (1e-10, 1e-12)}


def _tri_samples(rng, dt):
    a = (rng.normal(size=(4, 4)) + 4 * np.eye(4)).astype(dt)
    b = rng.normal(size=(4, 2)).astype(dt)
    return [Sample((a, b)), Sample((a, b[:, 0]), {"lower": True}, "vector"),
            Sample((a, b), {"trans": 1, "lower": True}),
            Sample((a, b), {"trans": "T", "unit_diagonal": True}),
            Sample((a.T, b), {"lower": True}, "noncontig")]


srecord("linalg.solve_triangular", _tri_samples, tol=_LA_TOL,
        unknown_dims=lambda s: "the triangle mask needs the matrix size")


def _spd_samples(rng, dt):
    a = rng.normal(size=(4, 4))
    spd = (a @ a.T + 4 * np.eye(4)).astype(dt)
    b = rng.normal(size=(4, 2)).astype(dt)
    return [Sample((spd, b), {"lower": True}), Sample((spd, b[:, 0]), {"lower": False})]


def _cho(m, a, b, lower):
    ns = _ns(m)
    a = (a + a.T) / 2
    return ns.linalg.cho_solve(ns.linalg.cho_factor(a, lower=lower), b)


srecord("linalg.cho_solve", _spd_samples, call=_cho, tol=_LA_TOL,
        unknown_dims=lambda s: "the triangle mask needs the matrix size")


def _lu_samples(rng, dt):
    a = rng.normal(size=(4, 4)).astype(dt)
    b = rng.normal(size=(4, 2)).astype(dt)
    return [Sample((a, b)), Sample((a, b[:, 0]), {"trans": 1}), Sample((a.T, b), {"trans": 2})]


def _lu(m, a, b, trans=0):
    ns = _ns(m)
    return ns.linalg.lu_solve(ns.linalg.lu_factor(a), b, trans=trans)


srecord("linalg.lu_solve", _lu_samples, call=_lu, tol=_LA_TOL,
        unknown_dims=lambda s: "LU's pivot loop needs the matrix size")
srecord("linalg.lu_factor", lambda rng, dt: [Sample((rng.normal(size=(4, 4)).astype(dt),)),
                                             Sample((rng.normal(size=(3, 3)).astype(dt).T,))],
        tol=_LA_TOL, unknown_dims=lambda s: "LU's pivot loop needs the matrix size")


def _expm_samples(rng, dt):
    return [Sample(((rng.normal(size=(3, 3)) * s).astype(dt),), desc=f"norm ~{s}")
            for s in (0.1, 1.0, 4.0)] + [Sample((np.zeros((2, 2), dt),), desc="zero")]


srecord("linalg.expm", _expm_samples, tol={F32: (1e-4, 1e-5), F64: (1e-10, 1e-12)},
        grad_tol=(1e-5, 1e-7), unknown_dims=lambda s: "the Pade identity term needs the size")
srecord("linalg.block_diag", lambda rng, dt: [
    Sample((values(rng, (2, 2), dt), values(rng, (3,), dt), values(rng, (1, 2), dt))),
    Sample((values(rng, (), dt), values(rng, (2, 3), dt)))],
    unknown_dims=lambda s: "block sizes fix the result's shape")

# ------------------------------------------------------------------ signal
_SIG_TOL = {F32: (1e-5, 1e-5), F64: (1e-10, 1e-12)}


def _conv_samples(rng, dt):
    out = []
    for mode in ("full", "same", "valid"):
        out += [Sample((values(rng, (7,), dt), values(rng, (3,), dt), mode), desc="1-D"),
                Sample((values(rng, (3,), dt), values(rng, (6,), dt), mode), desc="swapped"),
                Sample((values(rng, (4, 5), dt), values(rng, (2, 3), dt), mode), desc="2-D")]
    return out


srecord("signal.convolve", _conv_samples, tol=_SIG_TOL,
        unknown_dims=lambda s: "the output size depends on the input sizes (ValueError)")
srecord("signal.correlate", _conv_samples, tol=_SIG_TOL,
        unknown_dims=lambda s: "the output size depends on the input sizes (ValueError)")


_NONFINITE_FFT = ("SciPy's method='auto' takes the FFT for the 2-d samples, which spreads a NaN "
                  "or inf over the whole output; ndflow's is the direct method")
for _r in SCIPY_RECORDS:
    if _r.name in ("scipy.signal.convolve", "scipy.signal.correlate"):
        _r.paths_reasons["nonfinite_kernel"] = _NONFINITE_FFT


# ------------------------------------------------------------------ SciPy's edge cases
# Every record gets `edges(dt) -> [Sample]`: SciPy's special values for its arguments (zeros
# of both signs, the smallest subnormal and normal numbers, huge numbers, +-inf, NaN, negative
# values where the domain ends, the function's own points: poles, domain ends, parameter
# limits), as grids over its arguments, plus empty and 0-d inputs. tests/test_scipy_optable.py
# compares values, dtypes and shapes with SciPy there for float32 and float64 (eager, taped,
# compiled), and gradients with central differences wherever the function is differentiable.
def _sv(dt, extra=()):
    """One argument's special values in dtype dt."""
    fi = np.finfo(dt)
    v = [0.0, -0.0, float(fi.smallest_subnormal), float(fi.tiny), float(fi.eps), 0.5, 1.0,
         2.0, 7.5, 30.0, 1e4, float(fi.max), -float(fi.tiny), -0.5, -1.0, -2.5, -30.0,
         -float(fi.max), np.inf, -np.inf, np.nan]
    with np.errstate(over="ignore"):
        return np.array(v + list(extra), dtype=dt)


def _unary_edges(*extra):
    def edges(dt):
        v = _sv(dt, extra)
        return [Sample((v,), desc="special values"), Sample((np.zeros(0, dt),), desc="empty"),
                Sample((v[6].copy().reshape(()),), desc="0-d"),
                Sample((v.reshape(-1, 1)[::2],), desc="column, strided")]
    return edges


def _grid(*columns):
    """Arrays that broadcast to the grid of all combinations of the given value lists."""
    n = len(columns)
    return tuple(np.asarray(c).reshape((-1,) + (1,) * (n - 1 - i)) if i < n - 1 else
                 np.asarray(c) for i, c in enumerate(columns))


def _nary_edges(*extras, kwargs=None):
    """A grid over the special values of every argument (extras[i]: argument i's own points),
    an empty pair and a 0-d pair."""
    def edges(dt):
        cols = [_sv(dt, e) for e in extras]
        z = tuple(np.zeros(0, dt) for _ in extras)
        d = tuple(np.array(1.5, dt) for _ in extras)
        return [Sample(_grid(*cols), dict(kwargs or {}), "grid"),
                Sample(z, dict(kwargs or {}), "empty"), Sample(d, dict(kwargs or {}), "0-d")]
    return edges


def _ternary_edges(dt):
    """betainc: a coarser grid (three arguments) with the parameter limits 0 and inf."""
    fi = np.finfo(dt)
    p = np.array([0.0, float(fi.tiny), 0.5, 1.0, 3.0, 1e5, np.inf, -1.0, np.nan], dt)
    x = np.array([0.0, -0.0, float(fi.tiny), 0.25, 0.5, 1 - float(fi.eps), 1.0, 1.5, -0.5,
                  np.inf, np.nan], dt)
    return [Sample(_grid(p, p, x), desc="grid"),
            Sample(tuple(np.zeros(0, dt) for _ in range(3)), desc="empty"),
            Sample((np.array(2.0, dt), np.array(3.0, dt), np.array(0.5, dt)), desc="0-d")]


def _reduce_edges(dt):
    inf, nan = np.inf, np.nan
    rows = np.array([[0.0, 1.0, -2.0], [inf, 1.0, 2.0], [-inf, -inf, -inf], [inf, -inf, 0.0],
                     [nan, 1.0, 2.0], [inf, inf, 1.0], [-inf, 3.0, -0.0],
                     [float(np.finfo(dt).max)] * 3], dt)
    return [Sample((rows,), {"axis": 1}, "special rows"), Sample((rows,), {}, "all"),
            Sample((rows.T,), {"axis": 0}, "columns"), Sample((np.zeros((0, 3), dt),),
                                                                {"axis": 1}, "empty rows"),
            Sample((np.array(-inf, dt),), {}, "0-d")]


def _lse_edges(dt):
    out = _reduce_edges(dt)
    rows = out[0].args[0]
    b = np.array([1.0, 0.5, -1.0], dt)
    finite = np.array([[0.0, 1.0, -2.0], [-np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0]], dt)
    out += [Sample((rows,), {"axis": 1, "b": b}, "b with -1"),
            Sample((rows,), {"axis": 1, "b": b, "return_sign": True}, "signed"),
            # a zero weight takes its term out, NaN included (SciPy's rule; with an infinite
            # term SciPy's fallback path multiplies 0 by exp(inf): test_scipy.py)
            Sample((finite,), {"axis": 1, "b": np.array([1.0, 0.0, 0.0], dt)}, "b with 0"),
            Sample((np.zeros((0, 3), dt),), {"axis": 0}, "empty axis")]
    return out


def _stats_edges(n_params, x_extra=(), p_extra=()):
    """x against each shape parameter (the others at 2.5), and x against loc and scale."""
    def edges(dt):
        x = _sv(dt, x_extra)
        p = _sv(dt, p_extra)
        out = []
        for i in range(n_params):
            params = [np.array(2.5, dt)] * n_params
            params[i] = p
            args = _grid(x, p)
            out.append(Sample((args[0],) + tuple(args[1] if j == i else params[j]
                                                 for j in range(n_params)),
                              desc=f"x, parameter {i}"))
        base = (np.array(2.5, dt),) * n_params
        s = np.array([0.0, -1.0, float(np.finfo(dt).tiny), 1.0, np.inf, np.nan], dt)
        loc = np.array([0.0, 1e4, np.inf, -np.inf, np.nan], dt)
        gx, gs = _grid(x, s)
        out.append(Sample((gx,) + base, {"scale": gs}, "x, scale"))
        gx, gl = _grid(x, loc)
        out.append(Sample((gx,) + base, {"loc": gl}, "x, loc"))
        out.append(Sample((np.zeros(0, dt),) + base, desc="empty"))
        return out
    return edges


def _discrete_edges(p_extra, k_extra=()):
    def edges(dt):
        k = _sv(dt, (3.0, 4.0, 5.0, 6.0, 0.25) + tuple(k_extra))
        p = _sv(dt, p_extra)
        gk, gp = _grid(k, p)
        return [Sample((gk, gp), desc="k, parameter"),
                Sample((np.zeros(0, dt), np.array(0.5, dt)), desc="empty")]
    return edges


def _mat_edges(kind):
    """Matrices with inf, NaN, a zero pivot, an empty system; b alike."""
    def edges(dt):
        a = (np.eye(3) * 2 + np.triu(np.ones((3, 3)), 1)).astype(dt)
        b = np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.0]], dt)
        spd = (a @ a.T).astype(dt)
        bad = []
        for v in (np.inf, np.nan):
            m = (spd if kind == "cho" else a).copy()
            m[1, 1] = v
            bad.append(m)
        bb = b.copy()
        bb[0, 0] = np.nan
        sing = a.copy()
        sing[1, 1] = 0.0
        base = spd if kind == "cho" else a
        out = [Sample((base, bb), desc="NaN in b"), Sample((base, b[:, 0]), desc="vector")]
        out += [Sample((m, b), desc="inf/NaN in a") for m in bad]
        if kind == "tri":
            out += [Sample((sing, b), desc="zero pivot"),
                    Sample((np.zeros((0, 0), dt), np.zeros((0, 2), dt)), desc="empty")]
        if kind == "cho":
            out.append(Sample((np.zeros((0, 0), dt), np.zeros((0, 2), dt)), desc="empty"))
        if kind == "lu":
            out += [Sample((np.zeros((0, 0), dt), np.zeros((0, 2), dt)), desc="empty")]
        if kind == "cho":
            for s in out:
                s.kwargs["lower"] = True
        return out
    return edges


def _lu_factor_edges(dt):
    a = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [2.0, 0.0, 3.0]], dt)
    out = [Sample((a,), desc="pivoting"), Sample((np.zeros((3, 3), dt),), desc="zeros"),
           Sample((np.zeros((0, 0), dt),), desc="empty"), Sample((np.ones((1, 1), dt),))]
    for v in (np.inf, np.nan):
        m = a.copy()
        m[0, 1] = v
        out.append(Sample((m,), {"check_finite": False}, "inf/NaN unchecked"))
        out.append(Sample((m,), desc="inf/NaN checked"))
    return out


def _expm_edges(dt):
    out = [Sample((np.zeros((3, 3), dt),), desc="zeros"), Sample((np.zeros((0, 0), dt),),
                                                             desc="empty"),
           Sample((np.array([[-800.0]], dt),), desc="underflow"),
           Sample((np.array([[0.0, 1e3], [0.0, 0.0]], dt),), desc="nilpotent, large"),
           Sample((np.diag([1.0, -1.0, 40.0]).astype(dt),), desc="diagonal")]
    for v in (np.inf, -np.inf, np.nan):
        m = np.eye(2, dtype=dt)
        m[0, 1] = v
        out.append(Sample((m,), desc="non-finite"))
    return out


def _block_diag_edges(dt):
    return [Sample((np.zeros((0, 2), dt), np.ones((2, 2), dt))),
            Sample((np.array([np.inf, np.nan], dt), np.zeros((0, 0), dt))),
            Sample((np.array(-0.0, dt),)), Sample((np.zeros((2, 0), dt), np.ones((1, 1), dt)))]


def _conv_edges(dt):
    inf, nan = np.inf, np.nan
    a = np.array([1.0, inf, -2.0, 0.0, -0.0, nan, 3.0], dt)
    k = np.array([0.5, -inf, 1.0], dt)
    out = []
    for mode in ("full", "same", "valid"):
        out += [Sample((a, np.array([0.5, 0.0, 2.0], dt), mode), {"method": "direct"}, "inf"),
                Sample((np.array([1.0, 2.0, 3.0, 0.0], dt), k, mode), {"method": "direct"},
                       "inf kernel"),
                Sample((np.array(2.0, dt), np.array(-inf, dt), mode), {"method": "direct"},
                       "0-d")]
    out.append(Sample((np.zeros(0, dt), np.ones(3, dt), "full"), {"method": "direct"}, "empty"))
    return out


def _dirichlet_edges(dt):
    a = np.array([0.5, 1.0, 3.0], dt)
    x = np.array([[0.2, 0.0, 0.5], [0.3, 0.5, 0.5], [0.5, 0.5, 0.0]], dt)   # columns: points
    return [Sample((x[:, 2:3], a), desc="a zero with alpha >= 1"),
            Sample((x[:, 1:2], a), desc="a zero with alpha < 1 (SciPy raises)"),
            Sample((x[:, :1].astype(np.float32), a), desc="float32 on the simplex"),
            Sample((x[:, 2:3], np.array([0.5, np.inf, 1.0], dt)), desc="infinite alpha"),
            Sample((x[:, 2:3], np.array([0.5, -1.0, 1.0], dt)), desc="negative alpha"),
            Sample((x[:, 2:3], np.array([0.5, np.nan, 1.0], dt)), desc="NaN alpha")]


def _mvn_edges(dt):
    cov = np.array([[2.0, 0.3], [0.3, 1.0]], dt)
    mu = np.array([0.5, -1.0], dt)
    x = np.array([[0.0, 0.0], [np.inf, 0.0], [np.nan, 1.0], [-np.inf, np.inf], [1e200, 0.0]],
                 dt)
    return [Sample((x, mu, cov), desc="non-finite points"),
            Sample((x[:1], np.array([np.inf, 0.0], dt), cov), desc="infinite mean"),
            Sample((x[:1], mu, np.array([[1.0, 1.0], [1.0, 1.0]], dt)), desc="singular cov")]


_EDGES = {
    "special.erf": _unary_edges(6.0, -6.0), "special.erfc": _unary_edges(27.0, -6.0, 26.5),
    "special.erfinv": _unary_edges(1 - 2 ** -52, -1 + 2 ** -52, 1 + 2 ** -52, 0.9999),
    "special.ndtr": _unary_edges(-38.5, 8.3, -40.0), "special.ndtri": _unary_edges(1e-10, 1e-300,
                                                                                 0.975),
    "special.log_ndtr": _unary_edges(-40.0, -1e3, 40.0, 8.3, -1e10),
    "special.gammaln": _unary_edges(-2.0, -3.0, 2.5e305, -170.5),
    "special.gamma": _unary_edges(-2.0, -3.0, 171.5, 172.0, -170.5, -171.5),
    "special.digamma": _unary_edges(-2.0, -3.0, 1.4616321449683622, 1e15),
    "special.polygamma.n1": _unary_edges(-2.0, -3.0, 1e15),
    "special.polygamma.n2": _unary_edges(-2.0, -3.0, 1e15),
    "special.zeta.riemann": _unary_edges(-2.0, -4.0, 1 + 2 ** -40, -20.5, 60.0, -171.0),
    "special.zeta": _nary_edges((1.001, 60.0), (-2.0, -1.5)),
    "special.gammainc": _nary_edges((1e10,), (1e10,)),
    "special.gammaincc": _nary_edges((1e10,), (1e10,)),
    "special.betainc": _ternary_edges,
    "special.betaln": _nary_edges((1e300, 3e8), (1e300, 3e8)),
    "special.expit": _unary_edges(710.0, -710.0, 800.0, -800.0, 88.0, -104.0),
    "special.logit": _unary_edges(0.25, 0.75, 1 - 2 ** -52),
    "special.xlogy": _nary_edges((), ()), "special.xlog1py": _nary_edges((), (-1 + 2 ** -52,)),
    "special.entr": _unary_edges(), "special.rel_entr": _nary_edges((), ()),
    "special.kl_div": _nary_edges((), ()), "special.i0e": _unary_edges(700.0, 1e10, -1e10),
    "special.i1e": _unary_edges(700.0, 1e10, -1e10),
    "special.logsumexp": _lse_edges, "special.softmax": _reduce_edges,
    "special.log_softmax": _reduce_edges,
    "stats.norm.ppf": _unary_edges(0.025, 1 - 2 ** -52),
    "stats.t.logpdf": _stats_edges(1, p_extra=(1e10, 1e300)),
    "stats.t.pdf": _stats_edges(1, p_extra=(1e10, 1e300)),
    "stats.t.cdf": _stats_edges(1, p_extra=(1e10, 1e300)),
    "stats.gamma.logpdf": _stats_edges(1), "stats.gamma.pdf": _stats_edges(1),
    "stats.gamma.cdf": _stats_edges(1), "stats.beta.cdf": _stats_edges(2),
    "stats.beta.logpdf": _stats_edges(2), "stats.beta.pdf": _stats_edges(2),
    "stats.poisson.logpmf": _discrete_edges(()), "stats.poisson.pmf": _discrete_edges(()),
    "stats.poisson.cdf": _discrete_edges(()),
    "stats.binom.cdf": _discrete_edges((0.25,)), "stats.binom.logpmf": _discrete_edges((0.25,)),
    "stats.binom.pmf": _discrete_edges((0.25,)),
    "stats.bernoulli.logpmf": _discrete_edges((0.25,)),
    "stats.bernoulli.pmf": _discrete_edges((0.25,)),
    "stats.bernoulli.cdf": _discrete_edges((0.25,)),
    "stats.dirichlet.logpdf": _dirichlet_edges, "stats.dirichlet.pdf": _dirichlet_edges,
    "stats.multivariate_normal.logpdf": _mvn_edges, "stats.multivariate_normal.pdf": _mvn_edges,
    "linalg.solve_triangular": _mat_edges("tri"), "linalg.cho_solve": _mat_edges("cho"),
    "linalg.lu_solve": _mat_edges("lu"), "linalg.lu_factor": _lu_factor_edges,
    "linalg.expm": _expm_edges, "linalg.block_diag": _block_diag_edges,
    "signal.convolve": _conv_edges, "signal.correlate": _conv_edges,
}
for _d in ("norm", "laplace", "cauchy", "expon", "uniform"):
    for _m in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        _EDGES[f"stats.{_d}.{_m}"] = _stats_edges(0)
for _r in SCIPY_RECORDS:
    _r.edges = _EDGES.get(_r.name[len("scipy."):])


# Where SciPy's answer at an edge is an artifact and ndflow's the mathematical value, the
# record says so: `edge_diffs`, a list of (reason, predicate(sample, want, got) -> bool mask
# of the result's elements not compared); `edge_raises`, {exception type SciPy raises: reason}
# (ndflow returns a value there). tests/test_scipy_optable.py lists them all.
def _where_args(s, want, test):
    """`test(arg)` over the sample's array arguments, any of them, as a mask of the result."""
    m = np.zeros(np.shape(want), bool)
    for a in [np.asarray(a) for a in s.args if isinstance(a, np.ndarray)]:
        with np.errstate(invalid="ignore"):
            t = test(a)
        m |= np.broadcast_to(t, np.shape(want))
    return m


def _huge_param_nan(s, want, got):
    """SciPy's NaN where an argument is finite and beyond 1e300 (or float32's max / 1e8)."""
    big = _where_args(s, want, lambda a: np.isfinite(a) & (np.abs(a) >= min(
        1e300, float(np.finfo(a.dtype).max) * 1e-8) if a.dtype.kind == "f" else False))
    return big & np.isnan(want) & ~np.isnan(got)


def _subnormal(pos):
    """A subnormal argument `pos` (the shape parameter of the incomplete gamma function)."""
    def pred(s, want, got):
        a = np.asarray(s.args[pos])
        return np.broadcast_to((a > 0) & (a < np.finfo(a.dtype).tiny), np.shape(want))
    return pred


def _log_underflow(s, want, got):
    """SciPy's -inf where it takes the log of a density or CDF that underflowed; ndflow's
    value is the logarithm itself, below log(smallest normal)."""
    with np.errstate(invalid="ignore"):
        return (want == -np.inf) & np.isfinite(got) & (got < np.log(np.finfo(np.float64).tiny))


def _rows(mask, want):
    """A per-row mask as a mask of a result that may have been squeezed."""
    return mask.reshape(np.shape(want)) if mask.size == np.size(want) else np.full(
        np.shape(want), bool(mask.any()))


_GAMMA_A = ("a = inf or a >= 1e7: SciPy's xlogy(a - 1, x) - x - gammaln(a) is inf - inf (NaN, "
            "or 0 / NaN for the pdf, by x) or cancels (an error of a * eps); ndflow combines "
            "Stirling's series analytically (the limit 0 / -inf at a = inf)",
            lambda s, want, got: np.broadcast_to(np.asarray(s.args[1]) >= 1e7, np.shape(want)))
_BETA_SUB = ("a subnormal a or b: ndflow's betaln is inf there (gammaln's SciPy convention), "
             "so an end point's density can be inf - inf (NaN); SciPy's comes from Boost",
             lambda s, want, got: _where_args(s, want, lambda a: (a > 0) & (
                 a < np.finfo(a.dtype).tiny)) & np.isnan(got))
_HUGE = ("SciPy gives NaN where an argument is finite but at least 1e300 (its series "
         "overflow); ndflow gives the limit", _huge_param_nan)
_SUBNORMAL = ("a subnormal shape parameter a: SciPy (Cephes) underflows to P = 0; ndflow gives "
              "P(a -> 0, x > 0) = 1 and Q = 1 - P", _subnormal(0))
_SUBNORMAL1 = (_SUBNORMAL[0], _subnormal(1))
_UNDER = ("SciPy's log density/CDF is the log of an underflowed value (-inf); ndflow's is exact "
          "(below log of the smallest normal number)", _log_underflow)
def _overflowed_float32(s, want, got):
    """SciPy's inf or NaN in a float32 solve of finite inputs."""
    arrs = [np.asarray(a) for a in s.args if isinstance(a, np.ndarray)]
    if arrs[0].dtype != np.float32 or not all(np.isfinite(a).all() for a in arrs):
        return np.zeros(np.shape(want), bool)
    return ~np.isfinite(want)


_F32_OVERFLOW = (
    "a float32 system of finite entries whose solution overflows float32 on the way: SciPy "
    "solves in float32 (inf, then -inf or NaN further on); ndflow's triangles go through "
    "NumPy's solve, which works in float64 and rounds once (finite where the float64 "
    "solution is, NaN or inf elsewhere in its own pattern)", _overflowed_float32)


def _infinite_deviation(s, want, got):
    if len(s.args) < 2 or not isinstance(s.args[1], np.ndarray):
        return np.zeros(np.shape(want), bool)
    with np.errstate(invalid="ignore"):
        dev = np.asarray(s.args[0]) - np.asarray(s.args[1])
    return _rows(np.isinf(dev).any(-1) & np.isinf(np.asarray(s.args[1])).any(-1), want)


def _huge_cancellation(name):
    """Outputs whose window holds products beyond 1e250: their sum cancels or not by the
    order of its terms (SciPy's direct loop, ndflow's); finite on both sides."""
    def pred(s, want, got):
        import scipy.signal
        a, b = (np.nan_to_num(np.abs(np.asarray(x, np.float64)), posinf=0.0)
                for x in s.args[:2])
        with np.errstate(all="ignore"):
            mag = getattr(scipy.signal, name)(a, b, *s.args[2:], method="direct")
        return np.broadcast_to(mag > 1e250, np.shape(want)) & np.isfinite(want) \
            & np.isfinite(got)
    return ("an output whose window holds products beyond 1e250 that cancel: the sum's value "
            "depends on the order of its terms (SciPy's direct loop, ndflow's), within "
            "n eps times the products' magnitudes", pred)


def _tiny_diagonal(s, want, got):
    if s.kwargs.get("unit_diagonal"):
        return np.zeros(np.shape(want), bool)        # (the diagonal is not read)
    a = np.asarray(s.args[0])
    d = np.abs(np.diagonal(a, axis1=-2, axis2=-1))
    with np.errstate(all="ignore"):
        tiny = ((d > 0) & (d < 1 / np.finfo(a.dtype).max)).any()
    return tiny & ~np.isfinite(want) & np.isfinite(got)


def _expm_huge_triangle(s, want, got):
    a = np.asarray(s.args[0])
    with np.errstate(invalid="ignore"):
        tri = (np.abs(np.tril(a, -1)).sum((-2, -1)) == 0) | \
            (np.abs(np.triu(a, 1)).sum((-2, -1)) == 0)
        big = np.abs(a).sum(-2).max(-1, initial=0.0) > min(1e300, float(np.finfo(
            a.dtype).max) * 1e-8)
    return (tri & big)[..., None, None] & np.isnan(want) & ~np.isnan(got)


_DIFFS = {
    "special.zeta": [_HUGE, (
        "s = inf with q > 1: SciPy NaN; ndflow 0, the limit (every term (q + k)^-s is 0)",
        lambda s, want, got: np.broadcast_to((s.args[0] == np.inf) & (s.args[1] > 1),
                                             np.shape(want)))],
    "special.gammainc": [_HUGE, _SUBNORMAL], "special.gammaincc": [_HUGE, _SUBNORMAL],
    "stats.gamma.cdf": [_HUGE, _SUBNORMAL1], "stats.gamma.logpdf": [_HUGE, _UNDER, _GAMMA_A],
    "stats.gamma.pdf": [_HUGE, _GAMMA_A], "stats.poisson.cdf": [_HUGE], "stats.beta.cdf": [_HUGE],
    "stats.beta.pdf": [_HUGE, _BETA_SUB], "stats.beta.logpdf": [_HUGE, _BETA_SUB],
    "special.betainc": [_HUGE, (
        "a parameter below the smallest normal number: SciPy's (Boost's) results flush to 0 or "
        "1, ndflow's follow the limit (b/(a + b) for both tiny)",
        lambda s, want, got: np.broadcast_to(
            (s.args[0] <= np.finfo(s.args[0].dtype).tiny) |
            (s.args[1] <= np.finfo(s.args[1].dtype).tiny), np.shape(want)))],
    "special.betaln": [(
        "one argument inf, the other below 1e-300 or above 1e290: SciPy's asymptotic test "
        "overflows into NaN; ndflow gives the limit -inf",
        lambda s, want, got: np.broadcast_to(
            (np.isinf(s.args[0]) & ((np.abs(s.args[1]) < 1e-300) | (np.abs(s.args[1]) > 1e290)))
            | (np.isinf(s.args[1]) & ((np.abs(s.args[0]) < 1e-300) |
                                      (np.abs(s.args[0]) > 1e290))), np.shape(want))), (
        "one argument beyond 1e7 and the other beyond 8: SciPy's difference of gammaln values "
        "loses up to ~1e-7 absolute; ndflow's Stirling combination agrees with mpmath to "
        "1e-16 (tests/test_scipy.py)",
        lambda s, want, got: np.broadcast_to(
            (np.maximum(s.args[0], s.args[1]) > 1e7) & (np.minimum(s.args[0], s.args[1]) > 8),
            np.shape(want)))],
    "stats.t.cdf": [(
        "df below 1e-300 with |x| beyond 1e154: SciPy's x**2 overflows (0 or 1); ndflow gives "
        "the limit 1/2 of a vanishing df",
        lambda s, want, got: np.broadcast_to((np.asarray(s.args[1]) < 1e-300) &
                                             (np.abs(s.args[0]) > 1e154), np.shape(want)))],
    "stats.multivariate_normal.logpdf": [(
        "a point with several infinite coordinates: SciPy's NaN or -inf depends on the signs "
        "of its covariance's eigenvectors (inf - inf in dev @ U); ndflow gives -inf",
        lambda s, want, got: _rows(np.isinf(s.args[0]).sum(-1) > 1, want)), (
        "an infinite mean coordinate (the deviation x - mean infinite): SciPy's dev @ U can "
        "meet inf * 0 or inf - inf (NaN); ndflow gives the limit, -inf (a pdf of 0)",
        _infinite_deviation)],
    "linalg.expm": [(
        "a triangular matrix with a 1-norm beyond 1e300 (float32: 3e30): SciPy's squarings "
        "overflow into NaN "
        "at a bound that varies with the entries (1e302 for [[.5, c], [0, -.5]], 1e307 for "
        "[[0, c], [0, 0]]); ndflow keeps the diagonal exact at every squaring and gives the "
        "exponential while it is finite",
        _expm_huge_triangle), (
        "the sign of an entry that underflows to zero: it follows the order of operations "
        "(SciPy picks its Pade degree by the norm, ndflow always takes 13; for float32 ndflow "
        "computes in float64 and rounds once, -2.6e-46 giving -0.0, where SciPy's float32 "
        "arithmetic may give +0.0)",
        lambda s, want, got: (want == 0) & (got == 0))],
    "linalg.lu_solve": [_F32_OVERFLOW],
    "signal.correlate": [_huge_cancellation("correlate")],
    "signal.convolve": [_huge_cancellation("convolve")],
    "linalg.solve_triangular": [_F32_OVERFLOW, (
        "a diagonal entry whose reciprocal overflows (subnormal): SciPy's BLAS multiplies by "
        "that reciprocal (inf, then inf or NaN); ndflow's substitution divides by the entry",
        _tiny_diagonal), (
        "the sign of a zero solution entry: SciPy's trtrs divides b's -0.0 by the diagonal; "
        "NumPy's solve, which ndflow's substitution calls, first applies its LU's unit lower "
        "factor (the identity here), whose zero products can turn -0.0 into +0.0",
        lambda s, want, got: (want == 0) & (got == 0))],
    "linalg.lu_factor": [(
        "the sign of a zero that an elimination update forms (-0.0 - (-0.0) * u): OpenBLAS's "
        "getrf kernels give it their own way (not the reference LAPACK's, nor ndflow's a - m u)",
        lambda s, want, got: (want == 0) & (got == 0)), (
        "NaN or inf with check_finite=False: LAPACK's pivot search (idamax) passes over NaN "
        "where ndflow's argmax takes it, so the factors differ (both NaN-laden)",
        lambda s, want, got: np.full(np.shape(want), s.kwargs.get("check_finite") is False))],
}
_DIFFS["stats.multivariate_normal.pdf"] = _DIFFS["stats.multivariate_normal.logpdf"]
_DIFFS["special.rel_entr"] = _DIFFS["special.kl_div"] = [(
    "x/y below the smallest normal number or beyond the largest: SciPy's x log(x/y) is "
    "x log(0) = -inf or x log(inf) = inf; ndflow uses log(x) - log(y) there (the finite value)",
    lambda s, want, got: np.broadcast_to((s.args[0] > 0) & (s.args[1] > 0) & (
        (s.args[0] / np.where(s.args[1] > 0, s.args[1], 1) < np.finfo(s.args[0].dtype).tiny)
        | (s.args[0] / np.where(s.args[1] > 0, s.args[1], 1) == np.inf)), np.shape(want)))]
for _d in ("laplace.logpdf", "laplace.logcdf", "expon.logcdf", "t.logpdf"):
    _DIFFS["stats." + _d] = _DIFFS.get("stats." + _d, []) + [_UNDER]
_RAISES = {"stats.beta.pdf": "SciPy (Boost's ibeta_derivative) raises OverflowError for huge "
                             "parameters where the density is 0 or finite",
           "stats.binom.pmf": "SciPy (Boost's ibeta_derivative) raises OverflowError for huge "
                              "or tiny p where the pmf is finite"}
for _r in SCIPY_RECORDS:
    _k = _r.name[len("scipy."):]
    _r.edge_diffs = _DIFFS.get(_k, [])
    _r.edge_raises = {OverflowError: _RAISES[_k]} if _k in _RAISES else {}


def paths_oracle(rec):
    """The oracle tests/test_paths_agree.py uses for a record: SciPy's answer, except where
    the record declares SciPy's answer an artifact (edge_diffs: those elements; edge_raises:
    the whole call), where ndflow's eager answer stands in, so that the other paths are
    still compared with it."""
    import paths_agree as pa
    from ndflow.core import tree

    def oracle(s):
        want = pa.numpy_path(rec, s)
        if not rec.edge_diffs and not rec.edge_raises:
            return want
        got = pa.eager_path(rec, s)
        if isinstance(want, pa.Raised):
            if isinstance(want.exc, tuple(rec.edge_raises)) and not isinstance(got, pa.Raised):
                return tree.map_structure(pa._np, got)
            return want
        if isinstance(got, pa.Raised):
            return want

        def one(w, g):
            w = np.asarray(w)
            g = np.asarray(pa._np(g))
            if w.dtype.kind != "f" or g.shape != w.shape:
                return w
            m = np.zeros(w.shape, bool)
            for _, pred in rec.edge_diffs:
                try:
                    with np.errstate(all="ignore"):
                        m |= np.asarray(pred(s, w, g), bool)
                except (ValueError, TypeError, IndexError):   # a sample it does not fit
                    pass
            return np.where(m, g.astype(w.dtype), w) if m.any() else w
        try:
            return tree.map_structure(one, want, got)
        except (ValueError, TypeError):
            return want
    return oracle
