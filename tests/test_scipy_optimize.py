"""`scipy.optimize.minimize` with ndflow's functional transformations, as with autograd:
`minimize(nf.value_and_grad(f), x0, jac=True, ...)` and `hess=nf.hessian(f)` for every method
that takes them, with float32 and float64 starting points. The oracle is the same call with a
hand-written NumPy objective, gradient and Hessian: ndflow must give SciPy what NumPy code
gives it (the same result, or the same error where SciPy's compiled code refuses float32).

And the rule behind it (`nf.value_and_grad`'s docstring): a NumPy call (NumPy arrays and Python
numbers only, nothing active in the thread) gives NumPy values; any ndflow array, tape, trace
or vectorized_map keeps ndflow arrays, so nothing downstream loses a gradient."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

so = pytest.importorskip("scipy.optimize")

_C = np.array([1.5, -0.5, 2.0])


def _f(x):
    """A smooth, strictly convex objective (minimum not at the start)."""
    return tnp.sum((x - _C) ** 2) + 0.1 * tnp.sum(x ** 4) + 0.3 * x[0] * x[1]


def _np_vg(x):
    f = np.sum((x - _C) ** 2) + 0.1 * np.sum(x ** 4) + 0.3 * x[0] * x[1]
    g = 2 * (x - _C) + 0.4 * x ** 3
    g = g + 0.3 * np.array([x[1], x[0], 0.0], dtype=x.dtype)
    return f, g.astype(x.dtype)      # a gradient in x's dtype, as ndflow's (and JAX's)


def _np_hess(x):
    h = np.diag(2 + 1.2 * x ** 2)
    h[0, 1] = h[1, 0] = 0.3
    return h.astype(x.dtype)


def _run(method, x0, vg, hess=None, **kw):
    """(result, None) or (None, exception type) of one minimize call, warnings silenced (SciPy
    warns alike for both sides)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if hess is not None:
                kw["hess"] = hess
            return so.minimize(vg, x0, jac=True, method=method, **kw), None
        except Exception as e:      # noqa: BLE001  (the oracle's error type is the expectation)
            return None, type(e)


def _same(got, want, dtype):
    """The same outcome; float32 starts agree to float32 rounding (ndflow's float32 sums may
    round in another order)."""
    r, err = got
    w, werr = want
    assert err == werr, (err, werr)
    if w is None:
        return
    assert type(r.x) is np.ndarray and r.x.dtype == w.x.dtype and r.x.shape == w.x.shape
    assert type(r.fun) is type(w.fun) or float(r.fun) == pytest.approx(float(w.fun))
    assert bool(r.success) == bool(w.success)
    tol = 1e-3 if dtype == np.float32 else 1e-6
    np.testing.assert_allclose(r.x, w.x, rtol=tol, atol=tol)


_FIRST_ORDER = ["L-BFGS-B", "SLSQP", "BFGS", "CG", "TNC", "Newton-CG"]
_SECOND_ORDER = ["trust-constr", "Newton-CG", "trust-ncg", "trust-exact", "dogleg",
                 "trust-krylov"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", _FIRST_ORDER)
def test_minimize_with_value_and_grad(method, dtype):
    x0 = np.zeros(3, dtype)
    _same(_run(method, x0, nf.value_and_grad(_f)), _run(method, x0, _np_vg), dtype)
    if dtype == np.float64:
        r, _ = _run(method, x0, nf.value_and_grad(_f))
        assert r.success and abs(r.fun - so.minimize(lambda x: _np_vg(x)[0], x0).fun) < 1e-6


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", _SECOND_ORDER)
def test_minimize_with_hessian(method, dtype):
    x0 = np.zeros(3, dtype)
    _same(_run(method, x0, nf.value_and_grad(_f), nf.hessian(_f)),
          _run(method, x0, _np_vg, _np_hess), dtype)


def test_bounds_and_constraints_take_ndflow_jacobians():
    """L-BFGS-B with bounds; SLSQP and trust-constr with a constraint whose Jacobian is
    nf.grad's."""
    x0 = np.zeros(3)
    bounds = [(0.0, 1.0)] * 3
    got = so.minimize(nf.value_and_grad(_f), x0, jac=True, method="L-BFGS-B", bounds=bounds)
    want = so.minimize(_np_vg, x0, jac=True, method="L-BFGS-B", bounds=bounds)
    np.testing.assert_allclose(got.x, want.x, rtol=1e-7, atol=1e-9)

    def con(x):
        return 1.0 - tnp.sum(x * x)
    cons = {"type": "ineq", "fun": con, "jac": nf.grad(con)}
    ncons = {"type": "ineq", "fun": lambda x: 1.0 - np.sum(x * x), "jac": lambda x: -2 * x}
    got = so.minimize(nf.value_and_grad(_f), x0, jac=True, method="SLSQP", constraints=cons)
    want = so.minimize(_np_vg, x0, jac=True, method="SLSQP", constraints=ncons)
    assert got.success and type(got.x) is np.ndarray
    np.testing.assert_allclose(got.x, want.x, rtol=1e-7, atol=1e-9)
    nl = so.NonlinearConstraint(con, 0.0, np.inf, jac=nf.jacrev(con))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = so.minimize(nf.value_and_grad(_f), x0, jac=True, hess=nf.hessian(_f),
                          method="trust-constr", constraints=[nl])
    np.testing.assert_allclose(got.x, want.x, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ the rule
def test_numpy_call_gives_numpy_values():
    x = np.array([1.0, 2.0, 0.5])
    v, g = nf.value_and_grad(_f)(x)
    wv, wg = _np_vg(x)
    assert type(v) is np.float64 and type(g) is np.ndarray and g.dtype == np.float64
    np.testing.assert_allclose([v], [wv], rtol=1e-15)
    np.testing.assert_allclose(g, wg, rtol=1e-14)
    # Python numbers, 0-d: NumPy scalars; float32 stays float32
    g0 = nf.grad(lambda s: s * s)(3.0)
    assert type(g0) is np.float64 and g0 == 6.0
    g32 = nf.grad(_f)(x.astype(np.float32))
    assert type(g32) is np.ndarray and g32.dtype == np.float32
    # aux and several argnums
    (v, aux), (ga, gb) = nf.value_and_grad(lambda a, b: (tnp.sum(a * b), {"p": a + b}),
                                           argnums=(0, 1), has_aux=True)(x, 2 * x)
    assert type(aux["p"]) is np.ndarray and type(ga) is np.ndarray and type(gb) is np.ndarray
    np.testing.assert_allclose(ga, 2 * x)
    # the forward-mode and Jacobian transformations follow the same rule
    h = nf.hessian(_f)(x)
    assert type(h) is np.ndarray
    np.testing.assert_allclose(h, _np_hess(x), rtol=1e-14)
    assert type(nf.jacfwd(_f)(x)) is np.ndarray and type(nf.jacrev(_f)(x)) is np.ndarray
    out, tan = nf.jvp(_f, (x,), (np.ones(3),))
    assert type(out) is np.float64 and type(tan) is np.float64
    np.testing.assert_allclose(tan, np.sum(wg), rtol=1e-14)


def test_ndflow_arguments_and_active_transformations_keep_ndflow_arrays():
    x = np.array([1.0, 2.0, 0.5])
    v, g = nf.value_and_grad(_f)(tnp.asarray(x))
    assert isinstance(v, tnp.ndarray) and isinstance(g, tnp.ndarray)
    # one ndflow argument among NumPy ones is enough
    g = nf.grad(lambda a, b: tnp.sum(a * b))(x, tnp.asarray(x))
    assert isinstance(g, tnp.ndarray)
    assert isinstance(nf.hessian(_f)(tnp.asarray(x)), tnp.ndarray)
    # an outer tape: the gradient stays on it (a Variable read inside the function)
    w = nf.Variable(2.0)
    with nf.GradientTape() as tape:
        g = nf.grad(lambda a: w * tnp.sum(a * a))(x)
        assert isinstance(g, tnp.ndarray)
        s = tnp.sum(g)
    np.testing.assert_allclose(float(tape.gradient(s, w)), np.sum(2 * x))
    # higher order: the inner grad runs under the outer one's tape
    assert float(nf.grad(nf.grad(lambda s: s ** 3))(2.0)) == 12.0
    # inside nf.function and vectorized_map: traced/batched values
    fn = nf.function(lambda: nf.grad(_f)(x))
    np.testing.assert_allclose(np.asarray(fn()), _np_vg(x)[1], rtol=1e-14)
    per = nf.vectorized_map(lambda r: nf.grad(_f)(r), tnp.asarray(np.stack([x, 2 * x])))
    assert isinstance(per, tnp.ndarray)
    np.testing.assert_allclose(per.numpy()[1], _np_vg(2 * x)[1], rtol=1e-14)
