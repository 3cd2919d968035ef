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


_F32_MAX = float(np.finfo(np.float32).max)

# (Variable dtype, value, expected): a dtype name or the error TensorFlow gives.
# ndflow arrays are TF's tensors (the same dtype or ValueError); Python and NumPy values are
# converted when their kind fits (TF's IsCompatible), refused (TypeError) when it does not, and
# a value the dtype cannot hold is a ValueError (TF: Python floats; ndflow: NumPy values too).
_ASSIGN_CASES = [
    ("float32", 2, "float32"), ("float32", 2.5, "float32"), ("float32", True, "float32"),
    ("float32", [1, 2.5], "float32"), ("float32", np.float64(0.1), "float32"),
    ("float32", np.arange(3), "float32"), ("float32", np.array([0.1, 2.0]), "float32"),
    ("float32", _F32_MAX, "float32"), ("float32", float("inf"), "float32"),
    ("float32", float("nan"), "float32"), ("float32", -0.0, "float32"),
    ("float32", 1e300, ValueError), ("float32", -1e300, ValueError),
    ("float32", np.array([1.0, 1e300]), ValueError), ("float32", 10 ** 400, ValueError),
    ("float32", 1j, TypeError), ("float32", np.array([1j]), TypeError),
    ("float32", np.array([True]), TypeError), ("float32", "1.0", TypeError),
    ("float32", tnp.asarray(1.0), ValueError),
    ("float32", tnp.asarray(1.0, dtype="float32"), "float32"),
    ("float32", tnp.asarray(1, dtype="int32"), ValueError),
    ("float16", 70000.0, ValueError), ("float16", 1e-10, "float16"),
    ("bfloat16", 1e300, ValueError), ("bfloat16", 3.0, "bfloat16"),
    ("float64", np.float32(2.5), "float64"), ("float64", 10 ** 400, ValueError),
    ("int32", 3, "int32"), ("int32", True, "int32"), ("int32", np.int64(3), "int32"),
    ("int32", np.uint8(3), "int32"), ("int32", 2.5, TypeError), ("int32", 2.0, TypeError),
    ("int32", np.array([2.5]), TypeError), ("int32", np.float32(2), TypeError),
    ("int32", 2 ** 31, ValueError), ("int32", -2 ** 31, "int32"),
    ("int32", np.array([2 ** 40]), ValueError), ("int32", np.array([True]), TypeError),
    ("int32", 1 + 0j, TypeError), ("int32", tnp.asarray(3), ValueError),
    ("uint8", -1, ValueError), ("uint8", 255, "uint8"), ("uint8", 256, ValueError),
    ("int64", 2 ** 63, ValueError), ("int64", 2 ** 70, ValueError), ("uint64", 2 ** 64 - 1, "uint64"),
    ("bool", True, "bool"), ("bool", 1, TypeError), ("bool", 1.0, TypeError),
    ("bool", np.array(1), TypeError), ("bool", np.array(True), "bool"),
    ("complex64", 1, "complex64"), ("complex64", 2.5, "complex64"),
    ("complex64", np.array([1 + 2j]), "complex64"), ("complex64", 1e300j, ValueError),
    ("complex128", np.float32(1), "complex128"),
]


@pytest.mark.parametrize("dtype, value, want", _ASSIGN_CASES,
                         ids=[f"{d}-{i}" for i, (d, _, _) in enumerate(_ASSIGN_CASES)])
def test_assign_never_changes_a_dtype_silently(dtype, value, want):
    v = nf.Variable(np.zeros(np.shape(np.asarray(value)) if not isinstance(value, tnp.ndarray)
                             else value.shape, dtype=tnp.dtype(dtype)))
    before = v.numpy().copy()
    if isinstance(want, str):
        v.assign(value)
        assert v.dtype == np.dtype(tnp.dtype(want))
        np.testing.assert_array_equal(v.numpy(), np.asarray(value).astype(v.dtype))
        return
    with pytest.raises(want) as e:
        v.assign(value)
    assert np.dtype(tnp.dtype(dtype)).name in str(e.value)
    np.testing.assert_array_equal(v.numpy(), before)          # nothing assigned


def test_assign_add_and_sub_convert_the_delta_first():
    i = nf.Variable(5)                                          # int32
    i.assign_add(2)
    i.assign_sub(np.int64(1))
    assert i.numpy() == 6 and i.dtype == np.int32
    with pytest.raises(TypeError, match="int32.*Python float"):
        i.assign_add(0.5)
    with pytest.raises(ValueError, match="int32"):
        i.assign_add(2 ** 40)
    f = nf.Variable(1.0)                                        # float32
    with pytest.raises(ValueError, match="float32.*float64"):
        f.assign_add(tnp.asarray(1.0))
    with pytest.raises(ValueError, match="out of its range"):
        f.assign_sub(1e300)
    f.assign_add(np.array(0.5))
    assert f.numpy() == 1.5 and f.dtype == np.float32
    # inside nf.function as well: the traced value's dtype is checked
    g = nf.function(lambda x: f.assign_add(x))
    with pytest.raises(ValueError, match="float32.*float64"):
        g(tnp.asarray(1.0))
    g(tnp.asarray(1.0, dtype="float32"))
    assert f.numpy() == 2.5


def test_optimizers_keep_variable_dtypes():
    for dt in ("float32", "float16", "float64"):
        w = nf.Variable(np.ones(3, dt))
        for opt in (nf.optimizers.SGD(0.1, momentum=0.9), nf.optimizers.Adam(),
                    nf.optimizers.RMSprop(centered=True), nf.optimizers.Adagrad(),
                    nf.optimizers.AdamW()):
            opt.apply_gradients([(np.ones(3), w)])          # float64 NumPy gradient
            assert w.dtype == np.dtype(dt)


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
