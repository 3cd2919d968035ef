"""ndflow.scipy's limits and far ranges, named: the classes issue 22 found (infinite
parameters giving NaN, xlogy's gradient at 0) with SciPy as the oracle, and the ranges where
ndflow is more accurate than SciPy, against values computed with mpmath at 40 digits (quoted
here, so the test needs no mpmath). The edge grids of every function are in
test_scipy_optable.py; these pin the cases the issue names."""
import math
from fractions import Fraction

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
import ndflow.scipy.special as nsp
import ndflow.scipy.stats as nst

sp = pytest.importorskip("scipy.special")
st = pytest.importorskip("scipy.stats")

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning")]


def _same(got, want, rtol=1e-13):
    got = np.asarray(got.numpy() if isinstance(got, tnp.ndarray) else got)
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300, equal_nan=True)
    np.testing.assert_array_equal(np.isinf(got) & (got > 0), np.isinf(want) & (want > 0))


def test_infinite_parameters_give_scipys_limits():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.0, np.inf, -np.inf, np.nan])
    for f in ("logpdf", "pdf", "cdf"):
        _same(getattr(nst.t, f)(x, np.inf), getattr(st.t, f)(x, np.inf))
        _same(getattr(nst.t, f)(x, np.inf), getattr(st.norm, f)(x))      # the normal
    a = np.array([np.inf, 0.5, 3.0, 0.0, np.nan])[:, None]
    v = np.array([0.0, 1e-300, 0.5, 30.0, np.inf, np.nan])
    for f in ("gammainc", "gammaincc"):
        _same(getattr(nsp, f)(a, v), getattr(sp, f)(a, v))
        _same(getattr(nsp, f)(v, a), getattr(sp, f)(v, a))
    b = np.array([0.5, 2.0, -0.5, -2.0, 1e7, np.inf, -np.inf, np.nan])
    _same(nsp.betaln(b[:, None], np.inf), sp.betaln(b[:, None], np.inf))
    _same(nsp.betaln(np.inf, b), sp.betaln(np.inf, b))
    k = np.array([np.inf, 3.0, 1e20, -1.0])
    mu = np.array([0.5, 7.0, 1e7])[:, None]
    _same(nst.poisson.cdf(k, mu), st.poisson.cdf(k, mu))
    assert float(nst.poisson.cdf(np.inf, 3.0)) == 1.0


def test_large_parameters_against_mpmath():
    """Where SciPy's own series lose digits, ndflow keeps them (values from mpmath)."""
    # P(a, a - 5 sqrt(a)) for a = 1e6 (SciPy: 2.749568e-07, 4e-6 off)
    a = 1e6
    np.testing.assert_allclose(float(nsp.gammainc(a, a - 5 * math.sqrt(a))),
                               2.749580359270070753827908e-07, rtol=1e-12)
    # log B(1e4, 3e8) (SciPy: -113093.37947750092, 4e-7 off)
    np.testing.assert_allclose(float(nsp.betaln(1e4, 3e8)), -113093.37947791083113681736,
                               rtol=1e-15)
    # zeta(1 + 2^-30, 2^-52) (SciPy: 4503599778548539, the pole term 2^30 missing)
    np.testing.assert_allclose(float(nsp.zeta(1 + 2.0 ** -30, 2.0 ** -52)),
                               4503600852290362.699195817, rtol=1e-14)
    # the CDFs built on them: poisson at mu = 1e7 was 11% off before Temme's expansion
    mu = 1e7
    k = mu + np.array([-3.0, 0.0, 3.0]) * math.sqrt(mu)
    np.testing.assert_allclose(nst.poisson.cdf(k, mu).numpy(), st.poisson.cdf(k, mu),
                               rtol=1e-9)


def test_temme_coefficients_derive_again():
    """The table of Temme's c_k(eta) Taylor coefficients in primitives/special_inc.py equals a
    derivation with exact rationals: c_0 = 1/mu - 1/eta with mu(eta) solving
    mu - log(1 + mu) = eta^2/2, c_k = (1/eta) c_(k-1)' + (-1)^k gamma_k / mu."""
    from ndflow.primitives.special_inc import _TEMME
    n = len(_TEMME[0]) + 2

    def mul(a, b):
        out = [Fraction(0)] * n
        for i, x in enumerate(a):
            if x:
                for j, y in enumerate(b[:n - i]):
                    out[i + j] += x * y
        return out
    u = [Fraction(1)] + [Fraction(0)] * (n - 1)       # mu = eta * u(eta)
    for _ in range(n + 2):
        g, up = [Fraction(0)] * n, mul(u, u)
        for k in range(2, n + 2):
            for i in range(n - (k - 2)):
                g[i + k - 2] += Fraction((-1) ** k, k) * up[i]
            up = mul(up, u)
        g[0] -= Fraction(1, 2)
        u = [x - y for x, y in zip(u, g)]
    inv = [Fraction(1)] + [Fraction(0)] * (n - 1)
    for i in range(1, n):
        inv[i] = -sum(u[j] * inv[i - j] for j in range(1, i + 1))
    inv_mu = {p - 1: c for p, c in enumerate(inv)}                # 1/mu, a Laurent series
    bern = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
            Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6)]
    m = len(_TEMME) + 1
    s = [Fraction(0)] * m
    for i, b in enumerate(bern, 1):
        if 2 * i - 1 < m:
            s[2 * i - 1] += b / (2 * i * (2 * i - 1))
    gam, term = [Fraction(1)] + [Fraction(0)] * (m - 1), [Fraction(1)] + [Fraction(0)] * (m - 1)
    for k in range(1, m):
        prod = [Fraction(0)] * m
        for i, x in enumerate(term):
            for j, y in enumerate(s[:m - i]):
                prod[i + j] += x * y
        term = [x / k for x in prod]
        gam = [x + y for x, y in zip(gam, term)]
    c = {p: v for p, v in inv_mu.items() if p >= 0}
    c[0] -= 0                                                     # (-1/eta cancels inv_mu[-1])
    for k, row in enumerate(_TEMME):
        assert [float(c.get(p, 0)) for p in range(len(row))] == pytest.approx(list(row),
                                                                             rel=1e-15)
        nxt = {}
        for p, v in c.items():
            if p:
                nxt[p - 2] = nxt.get(p - 2, 0) + p * v
        for p, v in inv_mu.items():
            nxt[p] = nxt.get(p, 0) + (-1) ** (k + 1) * gam[k + 1] * v
        assert nxt.get(-1, 0) == 0 and nxt.get(-2, 0) == 0        # the poles cancel
        c = {p: v for p, v in nxt.items() if p >= 0}


def test_xlogy_family_gradients_at_zero():
    """d/dx xlogy(x, y) at x = 0 is log(y) (was 0), as JAX's and the differences'; the
    derivative in y there is 0 (the function is 0 along x = 0); xlog1py alike."""
    y = np.array([0.5, 2.0, 7.0])
    for f, ref in ((nsp.xlogy, np.log), (nsp.xlog1py, np.log1p)):
        x, yy = tnp.zeros(3), tnp.asarray(y)
        with nf.GradientTape() as tape:
            tape.watch([x, yy])
            out = tnp.sum(f(x, yy))
        gx, gy = tape.gradient(out, [x, yy])
        np.testing.assert_allclose(gx.numpy(), ref(y), rtol=1e-15)
        np.testing.assert_array_equal(gy.numpy(), 0.0)
        h = 1e-7
        fd = (f(np.full(3, h), y).numpy() - f(np.full(3, -h), y).numpy()) / (2 * h)
        np.testing.assert_allclose(gx.numpy(), fd, rtol=1e-8)
        # the values stay SciPy's, signed zeros included
        _same(f(np.array([0.0, -0.0, -2.0]), np.array([0.5, 2.0, 1.0])),
              getattr(sp, f.__name__)(np.array([0.0, -0.0, -2.0]), np.array([0.5, 2.0, 1.0])))
    # vectorized and compiled alike
    g = nf.vectorized_map(nf.grad(lambda x: nsp.xlogy(x, 2.0)), tnp.zeros(3))
    np.testing.assert_allclose(g.numpy(), np.log(2.0), rtol=1e-15)
    g = nf.function(nf.grad(lambda x: nsp.xlogy(x, 2.0)))(tnp.asarray(0.0))
    np.testing.assert_allclose(float(g), np.log(2.0), rtol=1e-15)


def test_logsumexp_zero_weights_take_terms_out():
    """A zero weight takes its term out, infinite or NaN (SciPy's documented rule). SciPy's
    fallback for an infinite result multiplies the zero weight by exp(inf) and gives NaN;
    ndflow keeps the rule (README, differences)."""
    a = np.array([np.inf, 1.0, 2.0])
    b = np.array([0.0, 1.0, 1.0])
    np.testing.assert_allclose(float(nsp.logsumexp(a, b=b)), np.log(np.e + np.e ** 2),
                               rtol=1e-15)
    assert float(nsp.logsumexp(np.array([np.inf, np.inf]), b=np.array([1.0, 0.0]))) == np.inf
