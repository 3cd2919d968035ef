"""GradientTape and the functional forms: persistence, higher order, output gradients,
unconnected gradients, jacobians, stop_recording/reset, grad/value_and_grad, custom_gradient,
numpy_function and the gradient checker."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def _x(*vals):
    return tnp.asarray(np.asarray(vals, dtype=np.float64))


def numeric_jacobian(f, x, eps=1e-6):
    """d f(x) / d x by central differences (NumPy in, NumPy out)."""
    x = np.asarray(x, np.float64)
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    for k in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[k] = eps
        jac[(Ellipsis,) + k] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return jac


def test_gradient_of_square():
    x = tnp.asarray(3.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    assert isinstance(g, tnp.ndarray) and float(g) == 6.0


def test_gradient_structure_follows_sources():
    a, b = _x(1.0, 2.0), tnp.asarray(3.0)
    with nf.GradientTape() as tape:
        tape.watch([a, b])
        y = tnp.sum(a * b)
    g = tape.gradient(y, {"a": a, "pair": (b, a)})
    assert set(g) == {"a", "pair"} and isinstance(g["pair"], tuple)
    np.testing.assert_allclose(g["a"].numpy(), [3.0, 3.0])
    np.testing.assert_allclose(float(g["pair"][0]), 3.0)


def test_unwatched_constants_get_none():
    x, c = tnp.asarray(2.0), tnp.asarray(5.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = x * c
    assert tape.gradient(y, c) is None


def test_non_persistent_tape_raises_on_second_gradient():
    x = tnp.asarray(2.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = x ** 3
    tape.gradient(y, x)
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)


def test_persistent_tape_gives_several_gradients():
    x = tnp.asarray(2.0)
    with nf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(y, x)) == 4.0
    assert float(tape.gradient(z, x)) == 32.0          # 4 x^3
    assert float(tape.gradient(z, y)) == 8.0           # 2 y
    del tape


def test_nested_tapes_give_second_derivatives():
    x = tnp.asarray(1.5)
    with nf.GradientTape() as t2:
        t2.watch(x)
        with nf.GradientTape() as t1:
            t1.watch(x)
            y = x ** 3 + tnp.sin(x)
        dy = t1.gradient(y, x)
    d2y = t2.gradient(dy, x)
    np.testing.assert_allclose(float(dy), 3 * 1.5 ** 2 + np.cos(1.5))
    np.testing.assert_allclose(float(d2y), 6 * 1.5 - np.sin(1.5))


def test_third_derivative():
    x = tnp.asarray(0.7)
    with nf.GradientTape() as t3:
        t3.watch(x)
        with nf.GradientTape() as t2:
            t2.watch(x)
            with nf.GradientTape() as t1:
                t1.watch(x)
                y = tnp.exp(2 * x)
            g1 = t1.gradient(y, x)
        g2 = t2.gradient(g1, x)
    g3 = t3.gradient(g2, x)
    np.testing.assert_allclose(float(g3), 8 * np.exp(1.4))


def test_hessian_of_vector_function_by_nested_jacobian():
    x = _x(0.3, -0.4, 1.1)
    with nf.GradientTape() as outer:
        outer.watch(x)
        with nf.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(tnp.tanh(x) * x[::-1])
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)

    def grad_np(v):
        return (1 - np.tanh(v) ** 2) * v[::-1] + np.tanh(v)[::-1]
    np.testing.assert_allclose(h.numpy(), numeric_jacobian(grad_np, x.numpy()), rtol=1e-6,
                               atol=1e-8)


def test_output_gradients_weight_the_targets():
    x = _x(1.0, 2.0, 3.0)
    w = _x(0.5, -1.0, 2.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=w)
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy() * w.numpy())


def test_several_targets_are_summed():
    x = tnp.asarray(2.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        a, b = x * 3, x * x
    np.testing.assert_allclose(float(tape.gradient([a, b], x)), 3 + 4)


@pytest.mark.parametrize("how", ["zero", nf.UnconnectedGradients.ZERO])
def test_unconnected_gradients_zero(how):
    x, z = _x(1.0, 2.0), tnp.ones((2, 2), dtype=np.float32)
    with nf.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = tnp.sum(x * 2)
    assert tape.gradient(y, z) is None
    assert tape.gradient(y, z, unconnected_gradients="none") is None
    g = tape.gradient(y, z, unconnected_gradients=how)
    assert g.shape == (2, 2) and g.dtype == np.float32 and not g.numpy().any()


def test_integer_sources_get_no_gradient():
    i = tnp.asarray([1, 2])
    with nf.GradientTape() as tape:
        tape.watch(i)
        y = tnp.sum(i * 2.0)
    assert tape.gradient(y, i) is None


@pytest.mark.parametrize("pfor", [True, False])
def test_jacobian_matches_numeric(pfor):
    x = _x(0.5, -1.0, 2.0)
    with nf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tnp.stack([tnp.sum(x ** 2), tnp.prod(x)]) * tnp.tanh(x[:2])
    j = tape.jacobian(y, x, experimental_use_pfor=pfor)
    assert j.shape == (2, 3)

    def f(v):
        return np.stack([np.sum(v ** 2), np.prod(v)]) * np.tanh(v[:2])
    np.testing.assert_allclose(j.numpy(), numeric_jacobian(f, x.numpy()), rtol=1e-6, atol=1e-9)


def test_jacobian_of_matrix_wrt_matrix_and_list_sources():
    a = tnp.asarray(np.arange(6.0).reshape(2, 3) / 7)
    b = tnp.asarray(np.arange(3.0).reshape(3, 1) - 1)
    with nf.GradientTape() as tape:
        tape.watch([a, b])
        y = tnp.matmul(a, b) ** 2
    ja, jb = tape.jacobian(y, [a, b])
    assert ja.shape == (2, 1, 2, 3) and jb.shape == (2, 1, 3, 1)
    np.testing.assert_allclose(
        ja.numpy(), numeric_jacobian(lambda v: (v @ b.numpy()) ** 2, a.numpy()), atol=1e-8)
    np.testing.assert_allclose(
        jb.numpy(), numeric_jacobian(lambda v: (a.numpy() @ v) ** 2, b.numpy()), atol=1e-8)


@pytest.mark.parametrize("pfor", [True, False])
def test_batch_jacobian_matches_per_example_jacobians(pfor):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 2))
    x = tnp.asarray(rng.standard_normal((4, 3)))
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.tanh(tnp.matmul(x, tnp.asarray(w)))
    bj = tape.batch_jacobian(y, x, experimental_use_pfor=pfor)
    assert bj.shape == (4, 2, 3)
    for i in range(4):
        want = numeric_jacobian(lambda v: np.tanh(v @ w), x.numpy()[i])
        np.testing.assert_allclose(bj.numpy()[i], want, rtol=1e-6, atol=1e-9)


def test_batch_jacobian_checks_batch_sizes():
    x = tnp.ones((3, 2))
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.ones((4, 2)) * tnp.sum(x)
    with pytest.raises(ValueError):
        tape.batch_jacobian(y, x)


def test_stop_recording():
    x = tnp.asarray(3.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = x * 10.0          # not recorded: a constant for the tape
        total = y + z
    assert float(tape.gradient(total, x)) == 6.0


def test_stop_recording_requires_a_recording_tape():
    tape = nf.GradientTape()
    with pytest.raises(ValueError):
        with tape.stop_recording():
            pass


def test_reset_forgets_what_was_recorded():
    x = tnp.asarray(2.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = x * 3.0
    assert float(tape.gradient(z, x)) == 3.0
    with nf.GradientTape() as tape2:
        tape2.watch(x)
        y = x * x
        tape2.reset()
    assert tape2.gradient(y, x) is None


def test_watch_rejects_non_arrays():
    with nf.GradientTape() as tape:
        with pytest.raises(ValueError):
            tape.watch([1.0, 2.0])


def test_reentering_a_recording_tape_raises():
    tape = nf.GradientTape()
    with tape:
        with pytest.raises(ValueError):
            tape.__enter__()


def test_gradient_through_many_ops_matches_numeric():
    rng = np.random.default_rng(1)
    x0 = rng.uniform(0.5, 1.5, size=(3, 4))
    w = rng.standard_normal((4, 2))

    def f(m, v):
        h = m.tanh(m.matmul(v, w)) * m.sqrt(m.sum(v * v, axis=1, keepdims=True))
        return m.sum(m.exp(-h) + m.maximum(h, 0.1) / m.log(v[:, :2] + 2.0)) + m.mean(v ** 3)
    x = tnp.asarray(x0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = f(tnp, x)
    g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), numeric_jacobian(lambda v: f(np, v), x0), rtol=1e-6,
                               atol=1e-8)


def test_tape_inside_function_matches_eager():
    def step(x):
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(tnp.sin(x) * x)
        return y, tape.gradient(y, x)
    x = _x(0.1, 0.2, 0.3)
    want = step(x)
    got = nf.function(step)(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ functional forms
def test_grad():
    f = nf.grad(lambda x: tnp.sum(x ** 3))
    np.testing.assert_allclose(f(_x(1.0, 2.0)).numpy(), [3.0, 12.0])
    g = nf.grad(lambda x, y: x * y, argnums=(0, 1))(tnp.asarray(2.0), tnp.asarray(5.0))
    assert isinstance(g, tuple) and float(g[0]) == 5.0 and float(g[1]) == 2.0
    h = nf.grad(lambda x, y: x * y, argnums=1)(tnp.asarray(2.0), tnp.asarray(5.0))
    assert float(h) == 2.0


def test_grad_accepts_python_and_numpy_inputs():
    assert float(nf.grad(lambda x: x * x)(3.0)) == 6.0
    # a NumPy call gives NumPy values (tests/test_scipy_optimize.py tests the rule)
    np.testing.assert_allclose(nf.grad(lambda x: tnp.sum(x * x))(np.ones(2)), [2, 2])


def test_grad_of_grad():
    d2 = nf.grad(nf.grad(lambda x: x ** 4))
    np.testing.assert_allclose(float(d2(tnp.asarray(2.0))), 12 * 4.0)


def test_value_and_grad_and_aux():
    v, g = nf.value_and_grad(lambda x: tnp.sum(x * x))(_x(1.0, 2.0))
    assert float(v) == 5.0
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    (v, aux), g = nf.value_and_grad(lambda x: (tnp.sum(x), x * 2), has_aux=True)(_x(1.0, 2.0))
    np.testing.assert_allclose(aux.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(g.numpy(), [1.0, 1.0])
    g, aux = nf.grad(lambda x: (tnp.sum(x), "aux"), has_aux=True)(_x(1.0))
    assert aux == "aux"


def test_grad_requires_scalar_output():
    with pytest.raises(TypeError):
        nf.grad(lambda x: x * 2)(_x(1.0, 2.0))


def test_grad_composes_with_function():
    f = nf.function(nf.grad(lambda x: tnp.sum(tnp.tanh(x))))
    x = _x(0.1, 0.5)
    np.testing.assert_allclose(f(x).numpy(), 1 - np.tanh(x.numpy()) ** 2)


# ------------------------------------------------------------------ custom_gradient
@nf.custom_gradient
def _log1pexp(x):
    e = tnp.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return tnp.log(1 + e), grad


def test_custom_gradient_is_used():
    x = tnp.asarray(100.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = _log1pexp(x)
    assert float(tape.gradient(y, x)) == 1.0       # naive gradient would be nan (inf/inf)


def test_custom_gradient_value_and_composition():
    x = _x(0.0, 1.0, -2.0)
    np.testing.assert_allclose(_log1pexp(x).numpy(), np.log1p(np.exp(x.numpy())))
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(_log1pexp(x * 2) * 3)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               6 / (1 + np.exp(-2 * x.numpy())))


def test_custom_gradient_overrides_rule():
    @nf.custom_gradient
    def clip_grad(x):
        return x * 1.0, lambda dy: tnp.clip(dy, -0.1, 0.1)
    x = _x(1.0, 2.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(clip_grad(x) * 5.0)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.1, 0.1])


def test_custom_gradient_two_inputs():
    @nf.custom_gradient
    def mul(a, b):
        return a * b, lambda dy: (dy * b * 2, dy * a * 3)   # deliberately not the true gradient
    a, b = tnp.asarray(2.0), tnp.asarray(5.0)
    with nf.GradientTape() as tape:
        tape.watch([a, b])
        y = mul(a, b)
    ga, gb = tape.gradient(y, [a, b])
    assert float(ga) == 10.0 and float(gb) == 6.0


def test_custom_gradient_inside_function():
    f = nf.function(lambda x: nf.grad(lambda v: tnp.sum(_log1pexp(v)))(x))
    np.testing.assert_allclose(f(_x(0.0, 100.0)).numpy(), [0.5, 1.0])


# ------------------------------------------------------------------ numpy_function
def test_numpy_function_runs_numpy_and_has_no_gradient():
    seen = []

    def np_fn(a):
        seen.append(type(a))
        return np.sort(a)[::-1].copy()
    x = _x(3.0, 1.0, 2.0)
    y = nf.numpy_function(np_fn, [x], np.float64)
    assert isinstance(y, tnp.ndarray)
    np.testing.assert_allclose(y.numpy(), [3.0, 2.0, 1.0])
    assert seen == [np.ndarray]
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(nf.numpy_function(np_fn, [x], np.float64))
    assert tape.gradient(y, x) is None


def test_numpy_function_runs_at_every_call_inside_function():
    calls = []

    def np_fn(a):
        calls.append(1)
        return a * 2

    f = nf.function(lambda x: nf.numpy_function(np_fn, [x], np.float64) + 1)
    x = _x(1.0, 2.0)
    np.testing.assert_allclose(f(x).numpy(), [3.0, 5.0])
    n = len(calls)
    np.testing.assert_allclose(f(x + 1).numpy(), [5.0, 7.0])
    assert len(calls) == n + 1


def test_numpy_function_several_outputs():
    a, b = nf.numpy_function(lambda x: (x + 1, (x * 2).astype(np.int32)), [_x(1.0)],
                             [np.float64, np.int32])
    assert float(a[0]) == 2.0 and b.dtype == np.int32 and int(b[0]) == 2


# ------------------------------------------------------------------ gradient checker
def test_compute_gradient():
    x = _x(0.3, -0.2, 0.9)
    theo, num = nf.test.compute_gradient(lambda v: tnp.sin(v) * v, [x])
    assert len(theo) == len(num) == 1 and theo[0].shape == (3, 3)
    np.testing.assert_allclose(theo[0], num[0], atol=1e-8)
    np.testing.assert_allclose(theo[0], np.diag(np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy())),
                               atol=1e-12)


def test_compute_gradient_two_inputs():
    a, b = tnp.asarray(np.ones((2, 3))), tnp.asarray(np.arange(3.0))
    theo, num = nf.test.compute_gradient(lambda x, y: tnp.sum(x * y, axis=1), [a, b])
    assert theo[0].shape == (2, 6) and theo[1].shape == (2, 3)
    assert nf.test.compute_gradient_error(theo, num) < 1e-8


def test_compute_gradient_error():
    err = nf.test.compute_gradient_error(*nf.test.compute_gradient(
        lambda v: tnp.tanh(v) ** 2, [_x(0.1, 0.5)]))
    assert err < 1e-8
    assert nf.test.compute_gradient_error(lambda v: tnp.exp(v), [_x(0.2)]) < 1e-7

    @nf.custom_gradient
    def wrong(x):
        return x * x, lambda dy: dy * 3.0
    assert nf.test.compute_gradient_error(wrong, [_x(1.0)]) > 0.5


def test_compute_gradient_float32():
    x = tnp.asarray(np.array([0.5, 1.0], np.float32))
    theo, num = nf.test.compute_gradient(lambda v: v * v, [x])
    np.testing.assert_allclose(theo[0], num[0], rtol=1e-2, atol=1e-3)
