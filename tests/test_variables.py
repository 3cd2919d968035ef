"""`nf.Variable` and the optimizers: state, assignment, what tapes watch, and update rules
checked against NumPy implementations of the same formulas."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def test_variable_basics():
    v = nf.Variable(tnp.asarray([1.0, 2.0]), name="w")
    assert v.shape == (2,) and v.dtype == np.float64 and v.ndim == 1
    assert v.name.startswith("w")
    assert isinstance(v.value(), tnp.ndarray) and isinstance(v.read_value(), tnp.ndarray)
    np.testing.assert_allclose(v.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(np.asarray(v), [1.0, 2.0])
    assert "Variable" in repr(v)


def test_variable_dtypes():
    assert nf.Variable(np.ones(2)).dtype == np.float64
    assert nf.Variable(tnp.ones(2, dtype=np.float32)).dtype == np.float32
    assert nf.Variable(tnp.arange(3)).dtype == np.int64
    assert nf.Variable(tnp.ones(2), dtype=np.float32).dtype == np.float32
    assert nf.Variable(lambda: tnp.zeros(3)).shape == (3,)
    assert nf.Variable(2.0).dtype == np.float32           # Python data: TensorFlow's dtypes


def test_variable_owns_its_value():
    a = tnp.asarray([1.0, 2.0])
    v = nf.Variable(a)
    v.assign_add(tnp.ones(2))
    np.testing.assert_allclose(a.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(v.numpy(), [2.0, 3.0])


def test_assign_family():
    v = nf.Variable(tnp.asarray([1.0, 2.0]))
    assert v.assign(tnp.asarray([5.0, 6.0])) is v
    np.testing.assert_allclose(v.numpy(), [5.0, 6.0])
    v.assign_add(tnp.asarray([1.0, 1.0]))
    v.assign_sub(tnp.asarray([0.5, 0.5]))
    np.testing.assert_allclose(v.numpy(), [5.5, 6.5])
    v.assign([0, 1])                                 # converted to the variable's dtype
    assert v.dtype == np.float64
    np.testing.assert_allclose(v.numpy(), [0.0, 1.0])
    assert v.assign_add(tnp.ones(2), read_value=False) is None
    with pytest.raises(ValueError):
        v.assign(tnp.ones(3))


def test_variables_in_arithmetic_and_numpy_functions():
    v = nf.Variable(tnp.asarray([1.0, 2.0]))
    np.testing.assert_allclose((v + 1).numpy(), [2.0, 3.0])
    np.testing.assert_allclose((2 * v).numpy(), [2.0, 4.0])
    np.testing.assert_allclose((v @ v).numpy(), 5.0)
    np.testing.assert_allclose(tnp.sum(v).numpy(), 3.0)
    np.testing.assert_allclose(tnp.matmul(tnp.ones((1, 2)), v).numpy(), [3.0])
    np.testing.assert_allclose(v[1].numpy(), 2.0)
    assert float(tnp.exp(nf.Variable(tnp.asarray(0.0)))) == 1.0
    np.testing.assert_allclose((-v).numpy(), [-1.0, -2.0])
    assert (v > 1.5).numpy().tolist() == [False, True]


def test_tape_watches_trainable_variables_it_sees_read():
    w = nf.Variable(tnp.asarray([1.0, 2.0]))
    frozen = nf.Variable(tnp.asarray([3.0, 4.0]), trainable=False)
    with nf.GradientTape() as tape:
        y = tnp.sum(w * w * frozen)
    gw, gf = tape.gradient(y, [w, frozen])
    np.testing.assert_allclose(gw.numpy(), 2 * np.array([1, 2]) * np.array([3, 4]))
    assert gf is None
    assert tape.watched_variables() == (w,)


def test_watch_accessed_variables_false():
    w = nf.Variable(tnp.asarray(2.0))
    with nf.GradientTape(watch_accessed_variables=False) as tape:
        y = w * w
    assert tape.gradient(y, w) is None
    with nf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = w * w
    assert float(tape.gradient(y, w)) == 4.0


def test_gradient_through_assign_inside_tape():
    w = nf.Variable(tnp.asarray(3.0))
    with nf.GradientTape() as tape:
        a = w * 2           # reads the old value
        w.assign(tnp.asarray(10.0))
        b = w * w           # reads the new value: a constant for w's gradient? TF: new read
        y = a + b
    g = tape.gradient(y, w)
    # TF semantics: the gradient is accumulated over every read of the variable
    assert float(g) == 2.0 + 20.0


def test_optimizer_skips_none_gradients_and_counts_iterations():
    a, b = nf.Variable(tnp.asarray(1.0)), nf.Variable(tnp.asarray(1.0))
    opt = nf.optimizers.SGD(0.5)
    opt.apply_gradients([(tnp.asarray(2.0), a), (None, b)])
    assert float(a.numpy()) == 0.0 and float(b.numpy()) == 1.0
    assert int(opt.iterations.numpy()) == 1


def _grads(k, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(k)]


def test_sgd_matches_numpy():
    w0 = np.array([1.0, -2.0, 0.5])
    v = nf.Variable(tnp.asarray(w0))
    opt = nf.optimizers.SGD(learning_rate=0.1)
    w = w0.copy()
    for g in _grads(3, 3):
        opt.apply_gradients([(tnp.asarray(g), v)])
        w -= 0.1 * g
    np.testing.assert_allclose(v.numpy(), w, rtol=1e-14)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_matches_numpy(nesterov):
    w0 = np.array([1.0, -2.0, 0.5])
    v = nf.Variable(tnp.asarray(w0))
    opt = nf.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=nesterov)
    w, m = w0.copy(), np.zeros(3)
    for g in _grads(4, 3):
        opt.apply_gradients([(tnp.asarray(g), v)])
        m = 0.9 * m - 0.1 * g
        w = w + (0.9 * m - 0.1 * g if nesterov else m)
    np.testing.assert_allclose(v.numpy(), w, rtol=1e-13)


def test_adam_matches_numpy():
    w0 = np.array([[1.0, -2.0], [0.5, 3.0]])
    v = nf.Variable(tnp.asarray(w0))
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    opt = nf.optimizers.Adam(learning_rate=lr, beta_1=b1, beta_2=b2, epsilon=eps)
    w, m, s = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for t, g in enumerate(_grads(5, (2, 2)), start=1):
        opt.apply_gradients([(tnp.asarray(g), v)])
        m = b1 * m + (1 - b1) * g
        s = b2 * s + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - lr_t * m / (np.sqrt(s) + eps)
    np.testing.assert_allclose(v.numpy(), w, rtol=1e-12)


def test_adam_float32_variables_stay_float32():
    v = nf.Variable(tnp.ones(3, dtype=np.float32))
    opt = nf.optimizers.Adam(0.1)
    opt.apply_gradients([(tnp.ones(3, dtype=np.float32), v)])
    assert v.dtype == np.float32 and v.value().dtype == np.float32


def test_minimize():
    v = nf.Variable(tnp.asarray([3.0]))
    opt = nf.optimizers.SGD(0.25)
    for _ in range(20):
        opt.minimize(lambda: tnp.sum((v - 1.0) ** 2), [v])
    np.testing.assert_allclose(v.numpy(), [1.0], atol=1e-5)


def test_learning_rate_schedule_callable():
    v = nf.Variable(tnp.asarray(0.0))
    opt = nf.optimizers.SGD(learning_rate=lambda step: 1.0 / (tnp.asarray(step, np.float64) + 1))
    for _ in range(3):
        opt.apply_gradients([(tnp.asarray(-1.0), v)])
    np.testing.assert_allclose(float(v.numpy()), 1 + 1 / 2 + 1 / 3)


def test_module_collects_variables():
    class Dense(nf.Module):
        def __init__(self):
            super().__init__()
            self.w = nf.Variable(tnp.ones((2, 3)))
            self.b = nf.Variable(tnp.zeros(3))
            self.steps = nf.Variable(0, trainable=False)

    class Net(nf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(), Dense()]

    net = Net()
    assert len(net.trainable_variables) == 4
    assert len(net.variables) == 6
