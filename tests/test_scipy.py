"""ndflow.scipy beyond the op table: special values and wide ranges against SciPy, supports and
invalid parameters of the distributions, zeta's exponent gradient, odeint (values, adjoint
gradients vs central differences, compiled, vectorized), errors, and lazy loading."""
import math
import subprocess
import sys

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]

_SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, -2.0, -2.5, 0.5, 1.5, np.inf, -np.inf, np.nan,
                      1e-300, -1e-300, 5e-324, 1e300, -1e300, 30.0, -30.0, 700.0, -745.0])


def _wide(rng):
    return np.concatenate([rng.uniform(-50, 50, 400), rng.uniform(0, 3, 200),
                           10.0 ** rng.uniform(-300, 300, 200),
                           -(10.0 ** rng.uniform(-300, 3, 200)), _SPECIALS])


def _unit(rng):
    return np.concatenate([rng.uniform(-1, 1, 400), 10.0 ** rng.uniform(-300, 0, 200),
                           1 - 10.0 ** rng.uniform(-16, 0, 200), -(1 - 10.0 ** rng.uniform(
                               -16, 0, 100)),
                           [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, np.nan, np.inf, 0.5, 1e-300]])


def _prob(rng):
    u = _unit(rng)
    return np.concatenate([np.abs(u), [0.0, 1.0, 0.5, -0.5, 1.5]])


# name, input maker, rtol (float64). Near a root (gammaln at 1 and 2, digamma at 1.46...,
# ndtri at 1/2) the relative error of any float64 implementation grows: atol covers that.
_CASES = [("erf", _wide, 1e-15, 0), ("erfc", _wide, 1e-13, 1e-300),
          ("erfinv", _unit, 1e-14, 0), ("gammaln", _wide, 1e-13, 1e-14),
          ("gamma", _wide, 1e-13, 0), ("digamma", _wide, 1e-13, 1e-14),
          ("i0e", _wide, 1e-14, 0), ("i1e", _wide, 1e-14, 0), ("ndtr", _wide, 1e-13, 1e-300),
          ("ndtri", _prob, 1e-13, 1e-14), ("log_ndtr", _wide, 1e-13, 1e-300),
          ("expit", _wide, 1e-15, 0), ("logit", _prob, 1e-14, 1e-15),
          ("entr", _wide, 1e-15, 0)]


@pytest.mark.parametrize("name,make,rtol,atol", _CASES, ids=[c[0] for c in _CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_special_values_match_scipy(name, make, rtol, atol, dtype):
    sp = pytest.importorskip("scipy.special")
    import ndflow.scipy.special as nsp
    x = make(np.random.default_rng(7))
    if dtype == np.int64:
        x = np.clip(np.nan_to_num(x), -200, 200).astype(np.int64)
        x = x[:60]
    else:
        x = x.astype(dtype)
    with np.errstate(all="ignore"):
        want = getattr(sp, name)(x)
        got = getattr(nsp, name)(tnp.asarray(x))
    assert isinstance(got, tnp.ndarray)
    g = got.numpy()
    assert g.dtype == want.dtype and g.shape == want.shape
    assert g.shape == x.shape
    if name == "gammaln" and dtype == np.float64:
        # SciPy answers inf at the smallest subnormal; log|Gamma(5e-324)| = 744.44 (ndflow)
        keep = x != 5e-324
        x, want = x[keep], want[keep]
        g = g[keep]
    if name in ("expit", "i1e"):
        atol = 1e-320     # SciPy flushes results below the smallest subnormal's half to 0
    if dtype == np.float32:
        rtol, atol = 2e-6, max(atol, 1e-37)
        if name in ("erfc", "ndtr", "log_ndtr"):
            atol = 1e-44           # SciPy flushes float32 subnormals that ndflow returns
    np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)
    # infinities and signed zeros as SciPy
    inf = np.isinf(want)
    np.testing.assert_array_equal(g[inf], want[inf])
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(want[zero]))


def test_zeta_polygamma_betaln_wide():
    sp = pytest.importorskip("scipy.special")
    import ndflow.scipy.special as nsp
    rng = np.random.default_rng(3)
    q = np.concatenate([rng.uniform(0.01, 50, 300), [0.0, -1.0, -1.5, 1.0, np.inf, np.nan]])
    for s in (1.0, 1.5, 2.0, 3.0, 5.0, 11.0, 0.5, np.nan):
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(nsp.zeta(s, q).numpy(), sp.zeta(s, q), rtol=1e-13,
                                       equal_nan=True, err_msg=f"zeta({s}, q)")
    s = np.concatenate([rng.uniform(-40, 40, 300), [0.0, -0.0, -2.0, 1.0, 2.0, np.inf,
                                                    -np.inf, np.nan]])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(nsp.zeta(s).numpy(), sp.zeta(s), rtol=1e-11, atol=1e-15,
                                   equal_nan=True)
    x = rng.uniform(0.05, 30, 200)
    for n in (0, 1, 2, 3, 5):
        np.testing.assert_allclose(nsp.polygamma(n, x).numpy(), sp.polygamma(n, x),
                                   rtol=1e-12, err_msg=f"polygamma({n})")
    n = np.array([0, 1, 2, 3])
    np.testing.assert_allclose(nsp.polygamma(n, 1.7).numpy(), sp.polygamma(n, 1.7), rtol=1e-13)
    a, b = rng.uniform(0.1, 20, 50), rng.uniform(0.1, 20, 50)
    np.testing.assert_allclose(nsp.betaln(a, b).numpy(), sp.betaln(a, b), rtol=1e-12)
    a, b = 10 ** rng.uniform(0, 250, 300), 10 ** rng.uniform(-1, 250, 300)
    got, want = nsp.betaln(a, b).numpy(), sp.betaln(a, b)
    assert np.all(np.isfinite(got))      # SciPy gives NaN for some huge pairs
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-8)   # SciPy's own error: ~1e-9
    # exact references for integer b: B(a, n) = (n-1)! / (a (a+1) ... (a+n-1)); SciPy itself
    # is off by ~2e-10 relative for a > 1e6 here
    a = 10 ** rng.uniform(0.5, 12, 300)
    for n in (1, 2, 3, 9):
        ref = [math.lgamma(n) - sum(math.log(v + k) for k in range(n)) for v in a]
        np.testing.assert_allclose(nsp.betaln(a, float(n)).numpy(), ref, rtol=2e-15,
                                   atol=1e-15)
        np.testing.assert_allclose(nsp.betaln(float(n), a).numpy(), ref, rtol=2e-15,
                                   atol=1e-15)


def test_logsumexp_special_values():
    sp = pytest.importorskip("scipy.special")
    import ndflow.scipy.special as nsp
    cases = [np.array([np.inf, -np.inf]), np.array([-np.inf, -np.inf]), np.array([1.0, np.nan]),
             np.array([1000.0, 1000.0]), np.array([-1000.0, -1001.0]), np.zeros((0, 3))]
    for a in cases:
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(nsp.logsumexp(a, axis=0).numpy(),
                                          sp.logsumexp(a, axis=0))
    a, b = np.array([1.0, 2.0]), np.array([1.0, -2.0])
    with np.errstate(all="ignore"):
        assert np.isnan(nsp.logsumexp(a, b=b).numpy()) and np.isnan(sp.logsumexp(a, b=b))
    got = nsp.logsumexp(a, b=b, return_sign=True)
    want = sp.logsumexp(a, b=b, return_sign=True)
    np.testing.assert_allclose([g.numpy() for g in got], want, rtol=1e-15)
    # the gradient of logsumexp is softmax, also where the max is shifted away
    x = tnp.asarray(np.array([1000.0, 999.0, -5.0]))
    with nf.GradientTape() as t:
        t.watch(x)
        y = nsp.logsumexp(x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), sp.softmax(x.numpy()), rtol=1e-14)


def test_distribution_supports_and_bad_parameters():
    st = pytest.importorskip("scipy.stats")
    import ndflow.scipy.stats as nst
    x = np.array([-1.0, 0.0, 0.3, 1.0, 2.5, np.inf, -np.inf, np.nan])
    k = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 7.0, np.nan])
    with np.errstate(all="ignore"):
        for name, args in [("norm", (0.0, -1.0)), ("norm", (0.5, 2.0)), ("gamma", (1.0,)),
                           ("gamma", (0.5,)), ("gamma", (-1.0,)), ("beta", (2.0, 3.0)),
                           ("beta", (0.5, 1.0)), ("t", (3.0,)), ("expon", ()),
                           ("uniform", (0.0, 1.0)), ("laplace", (0.0, 0.0)), ("cauchy", ())]:
            for m in ("logpdf", "pdf", "cdf", "logcdf"):
                f = getattr(getattr(nst, name), m, None)
                if f is None:
                    continue
                np.testing.assert_allclose(f(x, *args).numpy(),
                                           getattr(getattr(st, name), m)(x, *args),
                                           rtol=1e-13, equal_nan=True, err_msg=f"{name}.{m}")
        for name, args in [("poisson", (2.0,)), ("poisson", (0.0,)), ("poisson", (-1.0,)),
                           ("bernoulli", (0.3,)), ("bernoulli", (1.5,)), ("binom", (5, 0.4)),
                           ("binom", (5, 0.0)), ("binom", (5.5, 0.4))]:
            for m in ("logpmf", "pmf", "cdf"):
                f = getattr(getattr(nst, name), m, None)
                if f is None:
                    continue
                np.testing.assert_allclose(f(k, *args).numpy(),
                                           getattr(getattr(st, name), m)(k, *args),
                                           rtol=1e-13, equal_nan=True, err_msg=f"{name}.{m}")


def test_incomplete_gamma_beta_wide():
    sp = pytest.importorskip("scipy.special")
    import ndflow.scipy.special as nsp
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.uniform(0.05, 60, 2000), [1, 2, 0, -1, np.nan, 0.5, 100, 500]])
    x = np.concatenate([rng.uniform(0, 100, 2000), [0, np.inf, 1, 1, 1, np.nan, 90, 520]])
    b = np.concatenate([rng.uniform(0.05, 60, 2000), [1, 2, 0, 1, np.nan, 0.5, 100, 3]])
    u = np.concatenate([rng.uniform(0, 1, 2000), [0, 1, 0.5, 0.5, 0.5, -0.1, 0.3, 1.2]])
    with np.errstate(all="ignore"):
        for f, args in (("gammainc", (a, x)), ("gammaincc", (a, x)), ("betainc", (a, b, u))):
            np.testing.assert_allclose(getattr(nsp, f)(*args).numpy(),
                                       getattr(sp, f)(*args), rtol=5e-12, atol=1e-300,
                                       equal_nan=True, err_msg=f)


def test_special_functions_give_each_element_its_own_value():
    """An elementwise kernel's element does not depend on the others (a fused region on tier 0
    may call it chunk by chunk): the series and continued fractions of gammainc, gammaincc and
    betainc stop lane by lane (they iterated until every lane had converged, so an element's
    last bits, up to 1.5e-13 relative for betainc, depended on its neighbours)."""
    from ndflow.primitives import special_inc as S
    rng = np.random.default_rng(4)
    a, x, b = rng.uniform(0.3, 30, 64), rng.uniform(0.01, 40, 64), rng.uniform(0.3, 30, 64)
    u = rng.uniform(0, 1, 64)
    for prim, args in ((S.gammainc_p, (a, x)), (S.gammaincc_p, (a, x)),
                       (S.betainc_p, (a, b, u))):
        whole = prim.impl(*args)
        alone = np.array([prim.impl(*[v[i:i + 1] for v in args])[0] for i in range(64)])
        assert whole.tobytes() == alone.tobytes(), prim


def test_shape_parameter_gradients_raise():
    """The incomplete gamma/beta functions differentiate in x only: a watched shape parameter
    raises (rather than getting no gradient); a constant one is fine."""
    import ndflow.scipy.special as nsp
    import ndflow.scipy.stats as nst
    a, x = tnp.asarray(2.5), tnp.asarray(1.3)
    with nf.GradientTape() as t:
        t.watch(x)
        y = nsp.gammainc(a, x)
    np.testing.assert_allclose(float(t.gradient(y, x)),
                               np.exp(1.5 * np.log(1.3) - 1.3 - float(nsp.gammaln(2.5))))
    for f in (lambda a: nsp.gammainc(a, x), lambda a: nsp.gammaincc(a, x),
              lambda a: nsp.betainc(a, 2.0, 0.3), lambda a: nsp.betainc(2.0, a, 0.3),
              lambda a: nst.t.cdf(0.4, a), lambda a: nst.gamma.cdf(1.0, a)):
        with nf.GradientTape() as t:
            t.watch(a)
            y = f(a)
        with pytest.raises(NotImplementedError, match="not implemented"):
            t.gradient(y, a)


def test_zeta_exponent_gradient():
    pytest.importorskip("scipy")
    import ndflow.scipy.special as nsp
    s = tnp.asarray(np.array([1.5, 2.0, 3.5, 7.0]))
    q = tnp.asarray(np.array([0.5, 1.0, 2.0, 3.0]))
    with nf.GradientTape() as t:
        t.watch(s)
        y = tnp.sum(nsp.zeta(s, q))
    g = t.gradient(y, s).numpy()
    h = 1e-6
    fd = (nsp.zeta(s.numpy() + h, q).numpy() - nsp.zeta(s.numpy() - h, q).numpy()) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-7)
    x = tnp.asarray(np.array([2.0, 3.0, 4.5]))
    with nf.GradientTape() as t:
        t.watch(x)
        y = tnp.sum(nsp.zeta(x))
    fd = (nsp.zeta(x.numpy() + h).numpy() - nsp.zeta(x.numpy() - h).numpy()) / (2 * h)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), fd, rtol=1e-7)
    with nf.GradientTape() as outer:
        outer.watch(s)
        with nf.GradientTape() as inner:
            inner.watch(s)
            y = tnp.sum(nsp.zeta(s, q))
        g = tnp.sum(inner.gradient(y, s))
    with pytest.raises(NotImplementedError, match="zeta"):
        outer.gradient(g, s)


def test_polygamma_errors():
    import ndflow.scipy.special as nsp
    with pytest.raises(ValueError, match="integers"):
        nsp.polygamma(np.array([0.5]), 1.0)
    with pytest.raises(TypeError, match="concrete"):
        nf.function(lambda n, x: nsp.polygamma(n, x))(tnp.asarray([1]), tnp.asarray([1.0]))


# ------------------------------------------------------------------ odeint
def _f(y, t, k, w):
    return tnp.stack([y[1], -k * y[0] - w * y[1] + tnp.sin(t)])


def _odeint_args():
    return (tnp.asarray([1.0, 0.5]), tnp.asarray([0.0, 0.5, 1.3, 2.0]), tnp.asarray(2.0),
            tnp.asarray(0.3))


def test_odeint_values_match_scipy():
    integrate = pytest.importorskip("scipy.integrate")
    from ndflow.scipy.integrate import odeint
    y0, ts, k, w = _odeint_args()
    ys = odeint(_f, y0, ts, k, w)
    ref = integrate.solve_ivp(lambda t, y: [y[1], -2 * y[0] - 0.3 * y[1] + np.sin(t)], (0, 2),
                              [1, 0.5], t_eval=ts.numpy(), rtol=1e-12, atol=1e-12).y.T
    assert ys.shape == (4, 2) and ys.dtype == np.float64
    np.testing.assert_allclose(ys.numpy(), ref, atol=1e-7)
    # exponential decay, a matrix state
    y0m = tnp.asarray(np.arange(1.0, 5.0).reshape(2, 2))
    ysm = odeint(lambda y, t: -0.7 * y, y0m, tnp.asarray([0.0, 1.0, 3.0]))
    np.testing.assert_allclose(ysm.numpy(), np.exp(-0.7 * np.array([0, 1.0, 3.0]))[:, None, None]
                               * y0m.numpy(), rtol=1e-7)


def test_odeint_adjoint_gradients_match_central_differences():
    from ndflow.scipy.integrate import odeint
    y0, ts, k, w = _odeint_args()
    ct = np.random.default_rng(0).normal(size=(4, 2))

    def loss(*a):
        return tnp.sum(odeint(_f, *a) * ct)
    with nf.GradientTape() as tape:
        for v in (y0, ts, k, w):
            tape.watch(v)
        L = loss(y0, ts, k, w)
    grads = tape.gradient(L, [y0, ts, k, w])
    base = [v.numpy() for v in (y0, ts, k, w)]
    h = 1e-6
    for i, g in enumerate(grads):
        assert g.shape == base[i].shape and g.dtype == np.float64
        fd = np.zeros(base[i].shape)
        for j in np.ndindex(base[i].shape):
            p = [np.array(b, dtype=float) for b in base]
            m = [np.array(b, dtype=float) for b in base]
            p[i][j] += h
            m[i][j] -= h
            fd[j] = (float(loss(*map(tnp.asarray, p))) - float(loss(*map(tnp.asarray, m)))) / (
                2 * h)
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-5, atol=1e-6, err_msg=f"arg {i}")


def test_odeint_compiled_and_vectorized():
    from ndflow.scipy.integrate import odeint
    y0, ts, k, w = _odeint_args()
    eager = odeint(_f, y0, ts, k, w).numpy()
    fn = nf.function(lambda y0, ts, k, w: odeint(_f, y0, ts, k, w))
    np.testing.assert_allclose(fn(y0, ts, k, w).numpy(), eager, rtol=1e-12, atol=1e-14)
    ks = tnp.asarray([2.0, 0.5, 5.0])
    vm = nf.vectorized_map(lambda kk: odeint(_f, y0, ts, kk, w), ks).numpy()
    loop = np.stack([odeint(_f, y0, ts, kk, w).numpy() for kk in ks.numpy()])
    np.testing.assert_allclose(vm, loop, rtol=1e-9, atol=1e-12)

    def grad_k(kk):
        with nf.GradientTape() as t:
            t.watch(kk)
            y = tnp.sum(odeint(_f, y0, ts, kk, w))
        return t.gradient(y, kk)
    g_eager = grad_k(tnp.asarray(2.0)).numpy()
    np.testing.assert_allclose(nf.function(grad_k)(tnp.asarray(2.0)).numpy(), g_eager,
                               rtol=1e-10)
    # per-example adjoint gradients
    np.testing.assert_allclose(nf.vectorized_map(grad_k, ks).numpy(),
                               [float(grad_k(tnp.asarray(v))) for v in ks.numpy()], rtol=1e-9)


def test_odeint_structured_state():
    """A (position, velocity) tuple state gives the same as the stacked vector state, and its
    gradients reach both leaves."""
    from ndflow.scipy.integrate import odeint
    y0, ts, k, w = _odeint_args()

    def f_tree(s, t, k, w):
        x, v = s
        return v, -k * x - w * v + tnp.sin(t)
    pos, vel = odeint(f_tree, (y0[0], y0[1]), ts, k, w)
    want = odeint(_f, y0, ts, k, w).numpy()
    assert pos.shape == (4,) and vel.shape == (4,)
    np.testing.assert_allclose(np.stack([pos.numpy(), vel.numpy()], 1), want, rtol=1e-12,
                               atol=1e-14)
    x0, v0 = tnp.asarray(1.0), tnp.asarray(0.5)
    with nf.GradientTape() as t:
        t.watch([x0, v0])
        out = odeint(f_tree, (x0, v0), ts, k, w)
        loss = tnp.sum(out[0]) + tnp.sum(out[1])
    gx, gv = t.gradient(loss, [x0, v0])
    with nf.GradientTape() as t:
        t.watch(y0)
        loss = tnp.sum(odeint(_f, y0, ts, k, w))
    np.testing.assert_allclose([float(gx), float(gv)], t.gradient(loss, y0).numpy(),
                               rtol=1e-10)
    d = odeint(lambda s, t: {"u": -s["u"], "m": -2.0 * s["m"]},
               {"u": tnp.ones(2), "m": tnp.ones((2, 2))}, tnp.asarray([0.0, 1.0]))
    np.testing.assert_allclose(d["u"].numpy()[1], np.exp(-1.0) * np.ones(2), rtol=1e-7)
    np.testing.assert_allclose(d["m"].numpy()[1], np.exp(-2.0) * np.ones((2, 2)), rtol=1e-7)


def test_odeint_errors():
    from ndflow.scipy.integrate import odeint
    with pytest.raises(ValueError, match="1-D"):
        odeint(lambda y, t: -y, tnp.asarray([1.0]), tnp.asarray([[0.0, 1.0]]))
    # (SciPy's other errors and warnings: tests/test_scipy_odeint.py)


# ------------------------------------------------------------------ linalg, signal errors
def test_linalg_and_signal_errors():
    import ndflow.scipy.linalg as nla
    import ndflow.scipy.signal as nsig
    with pytest.raises(ValueError, match="square"):
        nla.expm(tnp.ones((2, 3)))
    with pytest.raises(ValueError, match="incompatible"):
        nla.solve_triangular(tnp.eye(3), tnp.ones(2))
    with pytest.raises(ValueError, match="mode"):
        nsig.convolve(tnp.ones(3), tnp.ones(2), mode="bad")
    with pytest.raises(ValueError, match="direct"):
        nsig.convolve(tnp.ones(3), tnp.ones(2), method="fft")
    with pytest.raises(ValueError, match="at least as large"):
        nsig.convolve(tnp.ones((3, 1)), tnp.ones((1, 3)), mode="valid")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_triangular_solves_substitute_as_lapack_does(dt):
    """solve_triangular, cho_solve and lu_solve solve each triangle by substitution, as SciPy's
    LAPACK calls do: the componentwise backward error max_i |b - T x|_i / (|T||x| + |b|)_i of
    substitution is within n * eps (Higham, Accuracy and Stability, 8.1). A lower triangle
    solved as a general matrix had its rows swapped by the LU's pivoting, and on random
    triangles (ill-conditioned, most of them) that error reached 3.9e3 n eps in float32 and
    1.3e14 n eps in float64, with results far from SciPy's (-5.96e21 against 1.12), and one
    unit-diagonal triangle raised 'Singular matrix'. Every (lower, trans, unit_diagonal), b a
    vector and a matrix (lu_solve and cho_solve solve their triangles with the same helper)."""
    import ndflow.scipy.linalg as nla
    rng = np.random.default_rng(1)
    eps = np.finfo(dt).eps

    def omega(T, x, b):
        T, x, b = (np.asarray(v, np.float64) for v in (T, x, b))
        r = np.abs(b - T @ x)
        return np.max(r / (np.abs(T) @ np.abs(x) + np.abs(b)))

    for trial in range(60):
        n = int(rng.integers(2, 40))
        a = rng.standard_normal((n, n)).astype(dt)
        b = rng.standard_normal(n if trial % 2 else (n, 3)).astype(dt)
        for lower in (False, True):
            for trans in (0, 1, "C"):
                for unit in (False, True):
                    x = nla.solve_triangular(a, b, trans=trans, lower=lower,
                                             unit_diagonal=unit).numpy()
                    T = np.tril(a) if lower else np.triu(a)
                    if unit:
                        np.fill_diagonal(T, 1)
                    T = T if trans == 0 else T.T
                    assert x.dtype == dt and omega(T, x, b) <= n * eps, (n, lower, trans, unit)


def test_expm_of_a_triangle_keeps_its_diagonal_through_every_squaring():
    """exp([[a, b], [0, d]]) = [[e^a, b (e^a - e^d) / (a - d)], [0, e^d]]. With b large the
    scaling takes up to a thousand squarings, each doubling the diagonal's relative error: a
    diagonal of 1 - eps decayed to 0 and the entry above it with it, so expm([[0, 1e300],
    [0, 0]]) was the identity. The diagonal is now exact at every squaring, as in SciPy's
    triangular path; eager, compiled and vectorized, against the closed form."""
    import ndflow.scipy.linalg as nla
    rng = np.random.default_rng(4)
    mats, want = [], []
    for i in range(40):
        a, d = rng.normal(size=2) * rng.choice([0.01, 1.0, 10.0])
        if i % 5 == 0:
            d = a
        b = 10.0 ** rng.uniform(-5, 300) * rng.choice([-1.0, 1.0])
        mats.append(np.array([[a, b], [0.0, d]]))
        off = b * np.exp(a) if a == d else b * (np.exp(a) - np.exp(d)) / (a - d)
        want.append(np.array([[np.exp(a), off], [0.0, np.exp(d)]]))
    compiled = nf.function(nla.expm)
    for m, w in zip(mats, want):
        for got in (nla.expm(m), compiled(m), nla.expm(m.T).T):
            got = np.asarray(got.numpy())
            np.testing.assert_allclose(got, w, rtol=1e-12, atol=0)
            assert got[1, 0] == 0
    batched = nf.vectorized_map(nla.expm, tnp.asarray(np.stack(mats))).numpy()
    np.testing.assert_allclose(batched, np.stack(want), rtol=1e-12, atol=0)


def test_lu_factor_leaves_finished_rows_alone():
    """Each elimination step updated every row, the finished rows with a zero multiplier:
    a - 0 * u turned -0.0 into +0.0 beside a negative u, and a finished U entry into NaN
    beside an infinite one (check_finite=False). Only the trailing block changes now, as in
    LAPACK's getrf: here the factors' infinities, NaN and zero signs are SciPy's. (Not in
    general: a zero that an update forms, -0.0 - (-0.0) * u, takes the sign OpenBLAS's kernel
    gives it.)"""
    sla = pytest.importorskip("scipy.linalg")
    import ndflow.scipy.linalg as nla
    mats = [np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, np.inf]]),
            np.array([[1.0, 2, -0.0], [4, 5, 6], [7, 8, -1]]),
            np.array([[2.0577064, 1.1920929e-07, -0.0], [3.4028235e+38, -0.12478853,
                                                        1.4012985e-45],
                      [-1.0798697, 0.0, -0.51050466]], np.float32)]
    for m in mats:
        want, wpiv = sla.lu_factor(m, check_finite=False)
        got, gpiv = (np.asarray(v.numpy()) for v in nla.lu_factor(m, check_finite=False))
        np.testing.assert_array_equal(gpiv, wpiv)
        np.testing.assert_allclose(got, want, rtol=1e-6 if m.dtype == np.float32 else 1e-13,
                                   atol=0)
        zero = want == 0
        assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero])), m


def test_lu_solve_checks_b_only_as_scipy():
    """SciPy's lu_solve applies check_finite to b, not to the factors (a finite matrix's LU
    can overflow); ndflow raised for an infinite factor where SciPy solves."""
    import ndflow.scipy.linalg as nla
    lu, piv = np.array([[2.0, 1e308], [0.5, -1e308 * 4]]), np.array([0, 1], np.int32)
    with np.errstate(over="ignore"):
        lu = lu * np.array([[1.0, 1.0], [1.0, 10.0]])         # U[1, 1] = -inf
    assert np.isinf(lu[1, 1])
    x = nla.lu_solve((lu, piv), np.array([1.0, 2.0])).numpy()
    assert x.shape == (2,)
    with pytest.raises(ValueError, match="infs or NaNs"):
        nla.lu_solve((lu, piv), np.array([1.0, np.nan]))


def test_expm_batched_and_traced():
    sla = pytest.importorskip("scipy.linalg")
    import ndflow.scipy.linalg as nla
    a = np.random.default_rng(2).normal(size=(3, 4, 4)) * np.array([0.1, 3.0, 40.0])[:, None,
                                                                                      None]
    want = np.stack([sla.expm(m) for m in a])
    np.testing.assert_allclose(nla.expm(a).numpy(), want, rtol=1e-9)
    np.testing.assert_allclose(nf.function(nla.expm)(tnp.asarray(a)).numpy(), want, rtol=1e-9)
    np.testing.assert_allclose(nf.vectorized_map(nla.expm, tnp.asarray(a)).numpy(), want,
                               rtol=1e-9)


def test_import_is_lazy():
    """import ndflow loads neither SciPy nor ndflow.scipy; ndflow.scipy loads no SciPy."""
    code = ("import sys, ndflow as nf; assert 'ndflow.scipy' not in sys.modules; "
            "nf.scipy.special.erf(0.3); nf.scipy.stats.norm.logpdf(0.1); "
            "nf.scipy.linalg.expm(nf.numpy.eye(2)); nf.scipy.signal.convolve([1.,2], [1.,1]); "
            "nf.scipy.integrate; assert 'scipy' not in sys.modules, 'scipy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_imports_point_down():
    """primitives/special.py imports only core and primitives; ndflow/scipy/ only layers below
    it (core, primitives, numpy, autodiff, graph, vectorize) — never train, summary, ... or the
    public face."""
    import ast
    import pathlib
    root = pathlib.Path(nf.__file__).parent
    allowed = {root / "primitives" / "special.py": {"core", "primitives"},
               **{p: {"core", "primitives", "numpy", "autodiff", "graph", "vectorize", "scipy"}
                  for p in (root / "scipy").glob("*.py")}}
    for path, ok in allowed.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                pkg = path.parent.relative_to(root).parts
                up = pkg[:len(pkg) - node.level + 1]
                parts = up + (tuple(node.module.split(".")) if node.module else ())
                targets = [parts[0]] if parts else [a.name for a in node.names]
                for target in targets:
                    assert target in ok, f"{path.name} imports from ndflow.{target}"
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module]
                assert not any(n == "ndflow" or n.startswith("ndflow.") for n in names), \
                    f"{path.name} imports {names} absolutely"
                assert not any(n.split(".")[0] == "scipy" for n in names), \
                    f"{path.name} imports SciPy"


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "betaln", "gammainc", "gammaincc", "zeta",
                                  "betainc"])
def test_binary_result_dtypes_match_scipy(name):
    """Result dtypes with float32 arrays, Python scalars and integers, as SciPy's."""
    sp = pytest.importorskip("scipy.special")
    import ndflow.scipy.special as nsp
    x32 = np.full(3, 0.5, np.float32)
    i64 = np.ones(2, np.int64)
    combos = [(x32, 2.0), (2.0, x32), (i64, 2), (x32, x32), (x32, np.full(3, 0.5))]
    if name == "betainc":
        combos = [c + (x32,) for c in combos[:2]] + [(x32, x32, 0.5), (2.0, 2.0, x32),
                                                     (i64, i64, np.full(2, 0.5))]
    for args in combos:
        want = getattr(sp, name)(*args)
        got = getattr(nsp, name)(*[tnp.asarray(a) if isinstance(a, np.ndarray) else a
                                   for a in args])
        assert got.dtype == want.dtype, (name, [getattr(a, "dtype", a) for a in args])
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6)
