"""The training kit: optimizers against hand-written NumPy updates over several steps (eager and
compiled), learning-rate schedules against their formulas (also inside `nf.function`),
initializers' statistics, numerically stable activations and losses, and small models trained
to a low loss."""
import copy
import math
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

schedules = nf.optimizers.schedules


# ------------------------------------------------------------------ NumPy reference optimizers
class RefOptimizer:
    """Keras 3's update rules written directly in NumPy, one state dict per variable."""

    def __init__(self, rule, lr, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, **hyper):
        self.rule, self.lr, self.hyper = rule, lr, hyper
        self.wd, self.clipnorm, self.clipvalue, self.global_clipnorm = (
            weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.t = 0
        self.state = {}

    def apply(self, grads, weights):
        if self.clipnorm:
            grads = [g * self.clipnorm / max(np.sqrt(np.sum(g * g)), self.clipnorm) for g in grads]
        elif self.global_clipnorm:
            norm = np.sqrt(sum(np.sum(g * g) for g in grads))
            grads = [g * self.global_clipnorm / max(norm, self.global_clipnorm) for g in grads]
        elif self.clipvalue:
            grads = [np.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        lr = self.lr(self.t) if callable(self.lr) else self.lr
        out = []
        for k, (g, w) in enumerate(zip(grads, weights)):
            if self.wd is not None:
                w = w - w * self.wd * lr
            st = self.state.setdefault(k, {})
            out.append(getattr(self, self.rule)(g, w, lr, st, self.t + 1, **self.hyper))
        self.t += 1
        return out

    @staticmethod
    def sgd(g, w, lr, st, t, momentum=0.0, nesterov=False):
        if not momentum:
            return w - lr * g
        m = st["m"] = momentum * st.get("m", 0.0) - lr * g
        return w + (momentum * m - lr * g if nesterov else m)

    @staticmethod
    def adam(g, w, lr, st, t, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
        m = st["m"] = beta_1 * st.get("m", 0.0) + (1 - beta_1) * g
        v = st["v"] = beta_2 * st.get("v", 0.0) + (1 - beta_2) * g * g
        if amsgrad:
            v = st["vhat"] = np.maximum(st.get("vhat", 0.0), v)
        alpha = lr * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        return w - alpha * m / (np.sqrt(v) + epsilon)

    @staticmethod
    def rmsprop(g, w, lr, st, t, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
        ms = st["ms"] = rho * st.get("ms", 0.0) + (1 - rho) * g * g
        if centered:
            mg = st["mg"] = rho * st.get("mg", 0.0) + (1 - rho) * g
            step = lr * g / np.sqrt(ms - mg * mg + epsilon)
        else:
            step = lr * g / np.sqrt(ms + epsilon)
        if momentum > 0:
            mom = st["mom"] = momentum * st.get("mom", 0.0) + step
            return w - mom
        return w - step

    @staticmethod
    def adagrad(g, w, lr, st, t, initial_accumulator_value=0.1, epsilon=1e-7):
        acc = st["acc"] = st.get("acc", initial_accumulator_value) + g * g
        return w - lr * g / np.sqrt(acc + epsilon)


def _exp_decay_np(t):
    return float(np.float32(0.1) * np.float32(0.5) ** np.float32(t / 3))


CASES = {
    "sgd": (lambda: nf.optimizers.SGD(0.1), RefOptimizer("sgd", 0.1)),
    "sgd_momentum": (lambda: nf.optimizers.SGD(0.1, momentum=0.9),
                     RefOptimizer("sgd", 0.1, momentum=0.9)),
    "sgd_nesterov_decay": (lambda: nf.optimizers.SGD(0.1, momentum=0.8, nesterov=True,
                                                     weight_decay=0.01),
                           RefOptimizer("sgd", 0.1, momentum=0.8, nesterov=True,
                                        weight_decay=0.01)),
    "adam": (lambda: nf.optimizers.Adam(0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-6),
             RefOptimizer("adam", 0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-6)),
    "adam_amsgrad": (lambda: nf.optimizers.Adam(0.02, amsgrad=True),
                     RefOptimizer("adam", 0.02, amsgrad=True)),
    "adamw": (lambda: nf.optimizers.AdamW(0.01, weight_decay=0.1),
              RefOptimizer("adam", 0.01, weight_decay=0.1)),
    "adamw_default_decay": (lambda: nf.optimizers.AdamW(),
                            RefOptimizer("adam", 0.001, weight_decay=0.004)),
    "rmsprop": (lambda: nf.optimizers.RMSprop(0.01), RefOptimizer("rmsprop", 0.01)),
    "rmsprop_centered": (lambda: nf.optimizers.RMSprop(0.01, rho=0.8, centered=True),
                         RefOptimizer("rmsprop", 0.01, rho=0.8, centered=True)),
    "rmsprop_momentum": (lambda: nf.optimizers.RMSprop(0.01, momentum=0.5),
                         RefOptimizer("rmsprop", 0.01, momentum=0.5)),
    "rmsprop_centered_momentum": (
        lambda: nf.optimizers.RMSprop(0.01, momentum=0.5, centered=True, epsilon=1e-5),
        RefOptimizer("rmsprop", 0.01, momentum=0.5, centered=True, epsilon=1e-5)),
    "adagrad": (lambda: nf.optimizers.Adagrad(0.1), RefOptimizer("adagrad", 0.1)),
    "adagrad_init": (lambda: nf.optimizers.Adagrad(0.1, initial_accumulator_value=1.0,
                                                   epsilon=1e-3),
                     RefOptimizer("adagrad", 0.1, initial_accumulator_value=1.0, epsilon=1e-3)),
    "clipnorm": (lambda: nf.optimizers.SGD(0.1, clipnorm=0.5),
                 RefOptimizer("sgd", 0.1, clipnorm=0.5)),
    "global_clipnorm": (lambda: nf.optimizers.Adam(0.1, global_clipnorm=1.0),
                        RefOptimizer("adam", 0.1, global_clipnorm=1.0)),
    "clipvalue": (lambda: nf.optimizers.RMSprop(0.1, clipvalue=0.3),
                  RefOptimizer("rmsprop", 0.1, clipvalue=0.3)),
    "schedule": (lambda: nf.optimizers.Adam(schedules.ExponentialDecay(0.1, 3, 0.5)),
                 RefOptimizer("adam", _exp_decay_np)),
}


def _grad_sequence(steps=6, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((3, 2)) * 2, rng.standard_normal(2)) for _ in range(steps)]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_optimizer_matches_numpy(name, compiled):
    make, ref = CASES[name]
    ref = copy.deepcopy(ref)          # fresh state
    w0, b0 = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]]), np.array([0.1, -0.3])
    w, b = nf.Variable(tnp.asarray(w0)), nf.Variable(tnp.asarray(b0))
    opt = make()

    def step(gw, gb):
        opt.apply_gradients([(gw, w), (gb, b)])
    if compiled:
        step = nf.function(step)
    want = [w0, b0]
    for gw, gb in _grad_sequence():
        step(tnp.asarray(gw), tnp.asarray(gb))
        want = ref.apply([gw, gb], want)
    rtol = 1e-6 if name == "schedule" else 1e-12   # a float32 schedule rounds the rate
    np.testing.assert_allclose(w.numpy(), want[0], rtol=rtol, atol=1e-14)
    np.testing.assert_allclose(b.numpy(), want[1], rtol=rtol, atol=1e-14)
    assert int(opt.iterations.numpy()) == 6
    if compiled:
        assert step.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("make", [lambda: nf.optimizers.AdamW(0.1),
                                  lambda: nf.optimizers.RMSprop(0.1, centered=True),
                                  lambda: nf.optimizers.Adagrad(0.1),
                                  lambda: nf.optimizers.Adam(0.1, amsgrad=True)],
                         ids=["adamw", "rmsprop", "adagrad", "amsgrad"])
def test_float32_variables_stay_float32(make):
    v = nf.Variable(tnp.ones(3, dtype=np.float32))
    opt = make()
    opt.apply_gradients([(tnp.ones(3, dtype=np.float32), v)])
    assert v.value().dtype == np.float32 and all(s.dtype == np.float32 for s in opt.variables()[2:])


def test_learning_rate_changes_reach_a_compiled_step_without_retracing():
    v = nf.Variable(tnp.asarray([1.0]))
    opt = nf.optimizers.SGD(0.5)
    step = nf.function(lambda g: opt.apply_gradients([(g, v)]))
    step(tnp.asarray([1.0]))
    opt.learning_rate = 0.25
    step(tnp.asarray([1.0]))
    np.testing.assert_allclose(v.numpy(), [1.0 - 0.5 - 0.25])
    assert step.experimental_get_tracing_count() == 1
    assert float(opt.learning_rate) == 0.25


def test_learning_rate_callables_and_schedules():
    v = nf.Variable(tnp.asarray(0.0))
    opt = nf.optimizers.SGD(learning_rate=lambda: 0.5)          # Keras: no argument
    opt.apply_gradients([(tnp.asarray(-1.0), v)])
    assert float(v.numpy()) == 0.5
    opt = nf.optimizers.SGD(schedules.PiecewiseConstantDecay([0], [1.0, 0.5]))
    with pytest.raises(TypeError, match="LearningRateSchedule"):
        opt.learning_rate = 0.1
    for _ in range(2):
        opt.apply_gradients([(tnp.asarray(-1.0), v)])
    assert float(v.numpy()) == 0.5 + 1.0 + 0.5


def test_weight_decay_exclusions_and_argument_checks():
    a = nf.Variable(tnp.asarray([1.0]), name="kernel")
    b = nf.Variable(tnp.asarray([1.0]), name="bias")
    c = nf.Variable(tnp.asarray([1.0]), name="other")
    opt = nf.optimizers.SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_list=[c], var_names=["bias"])
    zero = tnp.asarray([0.0])
    opt.apply_gradients([(zero, a), (zero, b), (zero, c)])
    assert [float(x.numpy()[0]) for x in (a, b, c)] == [1.0 - 0.05, 1.0, 1.0]
    with pytest.raises(ValueError, match="weight_decay"):
        nf.optimizers.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="Only one of"):
        nf.optimizers.SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="No gradients"):
        opt.apply_gradients([(None, a)])
    with pytest.raises(TypeError, match="unexpected keyword"):
        nf.optimizers.Adam(bogus=1)
    assert nf.optimizers.RMSprop(0.01, centered=True).get_config()["centered"] is True


# ------------------------------------------------------------------ schedules
_STEPS = [0, 1, 2, 5, 9, 10, 11, 19, 20, 21, 50, 150]


def _schedule_cases():
    cos = lambda t, lr0, n, a: lr0 * ((1 - a) * 0.5 * (1 + math.cos(math.pi * min(t, n) / n)) + a)  # noqa
    return {
        "exponential": (schedules.ExponentialDecay(0.1, 10, 0.96),
                        lambda t: 0.1 * 0.96 ** (t / 10)),
        "exponential_staircase": (schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True),
                                  lambda t: 0.1 * 0.5 ** (t // 10)),
        "piecewise": (schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1]),
                      lambda t: 1.0 if t <= 10 else 0.5 if t <= 20 else 0.1),
        "cosine": (schedules.CosineDecay(0.2, 100, alpha=0.1), lambda t: cos(t, 0.2, 100, 0.1)),
        "cosine_warmup": (schedules.CosineDecay(0.0, 100, warmup_target=0.4, warmup_steps=10),
                          lambda t: 0.4 * t / 10 if t < 10 else cos(min(t, 110) - 10, 0.4, 100, 0)),
        "inverse_time": (schedules.InverseTimeDecay(0.5, 10, 0.3),
                         lambda t: 0.5 / (1 + 0.3 * t / 10)),
        "inverse_time_staircase": (schedules.InverseTimeDecay(0.5, 10, 0.3, staircase=True),
                                   lambda t: 0.5 / (1 + 0.3 * (t // 10))),
    }


@pytest.mark.parametrize("name", sorted(_schedule_cases()))
def test_schedule_matches_formula_eager_and_compiled(name):
    sched, formula = _schedule_cases()[name]
    compiled = nf.function(sched.__call__)
    for t in _STEPS:
        got = sched(t)
        assert got.dtype == np.float32, "a Python float rate is float32, as in Keras"
        np.testing.assert_allclose(float(got), formula(t), rtol=1e-6, atol=1e-9,
                                   err_msg=f"{name} at step {t}")
        np.testing.assert_allclose(float(compiled(tnp.asarray(t))), float(got), rtol=1e-6,
                                   atol=1e-9)
    assert compiled.experimental_get_tracing_count() == 1
    assert type(sched).from_config(sched.get_config()).get_config() == sched.get_config()


def test_schedule_in_float64_and_argument_checks():
    s = schedules.ExponentialDecay(tnp.asarray(0.1), 10, 0.96)
    assert s(7).dtype == np.float64
    np.testing.assert_allclose(float(s(7)), 0.1 * 0.96 ** 0.7, rtol=1e-14)
    with pytest.raises(ValueError, match="decay_steps"):
        schedules.CosineDecay(0.1, 0)
    with pytest.raises(ValueError, match="1 less"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0, 2.0])


def test_schedule_follows_iterations_inside_compiled_training_step():
    v = nf.Variable(tnp.asarray(0.0))
    opt = nf.optimizers.SGD(schedules.PiecewiseConstantDecay([1, 3], [1.0, 0.1, 0.01]))
    step = nf.function(lambda: opt.apply_gradients([(tnp.asarray(-1.0), v)]))
    for _ in range(5):
        step()
    # iterations 0, 1 -> 1.0; 2, 3 -> 0.1; 4 -> 0.01
    np.testing.assert_allclose(float(v.numpy()), 1 + 1 + 0.1 + 0.1 + 0.01, rtol=1e-6)
    assert step.experimental_get_tracing_count() == 1


# ------------------------------------------------------------------ initializers
inits = nf.initializers


def _check_stats(x, mean, std, rel=0.03):
    a = np.asarray(x.numpy(), np.float64)
    assert abs(a.mean() - mean) < 5 * std / math.sqrt(a.size) + 1e-12, (a.mean(), mean)
    assert abs(a.std() - std) < rel * std, (a.std(), std)


@pytest.mark.parametrize("init,std,bound", [
    (inits.RandomNormal(0.5, 0.2), 0.2, None),
    (inits.RandomUniform(-0.3, 0.3), 0.6 / math.sqrt(12), 0.3),
    (inits.TruncatedNormal(0.0, 0.1), 0.1 * 0.87962566103423978, 0.2),
    (inits.GlorotUniform(), math.sqrt(2 / (400 + 300)), math.sqrt(6 / (400 + 300))),
    (inits.GlorotNormal(), math.sqrt(2 / (400 + 300)), 2 * math.sqrt(2 / 700) / 0.8796256610342398),
    (inits.HeNormal(), math.sqrt(2 / 400), 2 * math.sqrt(2 / 400) / 0.8796256610342398),
    (inits.HeUniform(), math.sqrt(2 / 400), math.sqrt(6 / 400)),
    (inits.LecunNormal(), math.sqrt(1 / 400), 2 * math.sqrt(1 / 400) / 0.8796256610342398),
    (inits.LecunUniform(), math.sqrt(1 / 400), math.sqrt(3 / 400)),
    (inits.VarianceScaling(3.0, "fan_out", "untruncated_normal"), math.sqrt(3 / 300), None),
], ids=lambda v: type(v).__name__ if isinstance(v, inits.Initializer) else "")
def test_random_initializer_statistics(init, std, bound):
    x = init((400, 300))
    assert x.shape == (400, 300) and x.dtype == np.float32
    mean = init.mean if isinstance(init, inits.RandomNormal) else 0.0
    _check_stats(x, mean, std)
    if bound is not None:
        assert np.abs(x.numpy() - mean).max() <= bound * (1 + 1e-6)
    assert init((4, 3), dtype="float64").dtype == np.float64


def test_variance_scaling_counts_the_receptive_field():
    x = inits.HeNormal(seed=3)((3, 3, 16, 32))               # fan_in = 3 * 3 * 16
    _check_stats(x, 0.0, math.sqrt(2 / 144))
    assert inits.compute_fans((3, 3, 16, 32)) == (144, 288) and inits.compute_fans((5,)) == (5, 5)


@pytest.mark.parametrize("shape", [(60, 40), (40, 60), (3, 3, 4, 8), (20, 20)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    q = inits.Orthogonal(gain=2.0, seed=1)(shape, dtype="float64").numpy().reshape(-1, shape[-1])
    small = min(q.shape)
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-10)
    with pytest.raises(ValueError, match="two-dimensional"):
        inits.Orthogonal()((3,))


def test_initializer_seeds_dtypes_and_configs():
    a, b = inits.GlorotUniform(seed=7)((5, 4)), inits.GlorotUniform(seed=7)((5, 4))
    np.testing.assert_array_equal(a.numpy(), b.numpy())        # a seed repeats (Keras)
    init = inits.RandomNormal()
    assert not np.array_equal(init((5,)).numpy(), init((5,)).numpy())
    nf.random.set_seed(3)
    first = init((5,)).numpy()
    nf.random.set_seed(3)
    np.testing.assert_array_equal(init((5,)).numpy(), first)
    np.testing.assert_array_equal(inits.Zeros()((2, 2), dtype="int32").numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(inits.Ones()(3).numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(inits.Constant(2.5)((2,)).numpy(), [2.5, 2.5])
    np.testing.assert_array_equal(inits.Identity(3.0)((2, 3)).numpy(), 3 * np.eye(2, 3))
    with pytest.raises(ValueError, match="floating-point"):
        inits.HeNormal()((2, 2), dtype="int32")
    with pytest.raises(ValueError, match="mode"):
        inits.VarianceScaling(mode="fan_sideways")
    assert isinstance(inits.get("glorot_uniform"), inits.GlorotUniform)
    assert isinstance(inits.get("HeNormal"), inits.HeNormal)
    vs = inits.VarianceScaling(2.0, "fan_avg", "uniform", seed=4)
    back = inits.deserialize(inits.serialize(vs))
    assert back.get_config() == {"scale": 2.0, "mode": "fan_avg", "distribution": "uniform",
                                 "seed": 4}
    with pytest.raises(ValueError, match="Unknown initializer"):
        inits.get("glorious")


# ------------------------------------------------------------------ activations and losses
def _sigmoid_np(x):
    return np.exp(-np.logaddexp(0, -np.asarray(x, np.float64)))


_EXTREME = np.array([-1000.0, -100.0, -30.0, -1.0, 0.0, 1.0, 30.0, 100.0, 1000.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sigmoid_family_is_accurate_in_the_tails(dtype):
    x = tnp.asarray(_EXTREME.astype(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no overflow in any branch
        got = {f: getattr(nf.nn, f)(x).numpy() for f in
               ("sigmoid", "log_sigmoid", "softplus", "silu", "elu", "selu", "softsign")}
    s = _sigmoid_np(_EXTREME)
    tiny = np.finfo(dtype).tiny
    want = {"sigmoid": s, "log_sigmoid": -np.logaddexp(0, -_EXTREME),
            "softplus": np.logaddexp(0, _EXTREME), "silu": _EXTREME * s,
            "elu": np.where(_EXTREME > 0, _EXTREME, np.expm1(np.minimum(_EXTREME, 0))),
            "selu": 1.0507009873554805 * np.where(_EXTREME > 0, _EXTREME, 1.6732632423543772
                                                  * np.expm1(np.minimum(_EXTREME, 0))),
            "softsign": _EXTREME / (1 + np.abs(_EXTREME))}
    rtol = 1e-13 if dtype == np.float64 else 2e-6
    for f, w in want.items():
        assert got[f].dtype == dtype, f
        w = w.astype(dtype)
        # relative precision wherever the value is representable (sigmoid(-100) = 3.7e-44)
        np.testing.assert_allclose(got[f], w, rtol=rtol, atol=tiny, err_msg=f)
    assert nf.nn.swish is nf.nn.silu


def test_activation_gradients_are_finite_and_match_differences():
    for f in ("sigmoid", "log_sigmoid", "softplus", "silu", "elu", "selu", "softsign"):
        fn = getattr(nf.nn, f)
        g = nf.grad(lambda v: tnp.sum(fn(v)))(tnp.asarray(_EXTREME))
        assert np.all(np.isfinite(g.numpy())), f
        for x0 in (-3.0, -0.5, 0.0, 0.7, 4.0):
            if f == "selu" and x0 == 0.0:
                continue                      # a kink: checked below
            num = (float(fn(tnp.asarray(x0 + 1e-6))) - float(fn(tnp.asarray(x0 - 1e-6)))) / 2e-6
            got = float(nf.grad(fn)(tnp.asarray(x0)))
            assert got == pytest.approx(num, rel=1e-6, abs=1e-8), (f, x0)
    assert float(nf.grad(nf.nn.sigmoid)(tnp.asarray(0.0))) == 0.25
    # at 0, TensorFlow's derivative: the x >= 0 branch
    assert float(nf.grad(nf.nn.selu)(tnp.asarray(0.0))) == pytest.approx(1.0507009873554805)
    assert float(nf.grad(nf.nn.elu)(tnp.asarray(0.0))) == 1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_family_with_huge_and_infinite_logits(dtype):
    logits = np.array([[1e4, 0.0, -1e4], [3.0, -np.inf, 1.0], [-5e3, -5e3, -5e3]], dtype)
    x = tnp.asarray(logits)
    ls = nf.nn.log_softmax(x).numpy()
    sm = nf.nn.softmax(x).numpy()
    assert ls.dtype == sm.dtype == dtype
    want_ls = np.array([[0.0, -1e4, -2e4], [3.0 - np.logaddexp(3.0, 1.0), -np.inf,
                                            1.0 - np.logaddexp(3.0, 1.0)], [-np.log(3.0)] * 3])
    np.testing.assert_allclose(ls, want_ls, rtol=1e-6)
    np.testing.assert_allclose(sm, np.exp(want_ls), rtol=1e-6, atol=1e-30)
    with nf.GradientTape() as tape:
        tape.watch(x)
        loss = tnp.sum(tnp.where(tnp.isfinite(ls), nf.nn.log_softmax(x), 0.0) * 0.5)
    g = tape.gradient(loss, x).numpy()
    assert np.all(np.isfinite(g)) and g[1, 1] == 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_entropies_from_huge_logits(dtype):
    logits = tnp.asarray(np.array([[1e4, -1e4], [-1e4, 1e4], [0.0, 0.0]], dtype))
    labels = np.array([0, 0, 1])
    onehot = np.eye(2, dtype=dtype)[labels]
    want = np.array([0.0, 2e4, np.log(2.0)])
    for got in (nf.nn.sparse_softmax_cross_entropy_with_logits(tnp.asarray(labels), logits),
                nf.nn.softmax_cross_entropy_with_logits(tnp.asarray(onehot), logits),
                nf.losses.sparse_categorical_crossentropy(tnp.asarray(labels), logits,
                                                          from_logits=True),
                nf.losses.categorical_crossentropy(tnp.asarray(onehot), logits, from_logits=True)):
        assert got.dtype == dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-7)
    z = np.array([100.0, -100.0, 1e4, -1e4, 0.0], dtype)
    t = np.array([1.0, 1.0, 0.0, 1.0, 1.0], dtype)
    bce = nf.nn.sigmoid_cross_entropy_with_logits(labels=tnp.asarray(t), logits=tnp.asarray(z))
    np.testing.assert_allclose(bce.numpy(), np.logaddexp(0, z) - z * t, rtol=1e-6, atol=1e-30)
    with nf.GradientTape() as tape:
        tape.watch(logits)
        loss = tnp.sum(nf.losses.sparse_categorical_crossentropy(tnp.asarray(labels), logits,
                                                                 from_logits=True))
    g = tape.gradient(loss, logits).numpy()
    np.testing.assert_allclose(g, np.array([[0, 0], [-1, 1], [0.5, -0.5]], dtype), atol=1e-6)
    # probabilities are clipped, as Keras: a confident wrong answer costs -log(1e-7), not inf
    p = tnp.asarray(np.array([[1.0, 0.0]], dtype))
    np.testing.assert_allclose(nf.losses.categorical_crossentropy(
        tnp.asarray(np.array([[0.0, 1.0]], dtype)), p).numpy(), [-np.log(1e-7)], rtol=1e-4)
    np.testing.assert_allclose(nf.losses.binary_crossentropy(
        tnp.asarray(np.array([[1.0]], dtype)), tnp.asarray(np.array([[0.0]], dtype))).numpy(),
        [-np.log(1e-7)], rtol=1e-4)


# ------------------------------------------------------------------ training to a low loss
def _regression_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    y = x @ np.array([[1.5], [-2.0], [0.5]]) + 0.3
    return tnp.asarray(x), tnp.asarray(y)


@pytest.mark.parametrize("make,steps", [
    (lambda: nf.optimizers.SGD(0.1, momentum=0.9), 100),
    (lambda: nf.optimizers.Adam(schedules.ExponentialDecay(0.1, 50, 0.5)), 200),
    (lambda: nf.optimizers.AdamW(0.1, weight_decay=1e-4), 200),
    (lambda: nf.optimizers.RMSprop(0.02, centered=True), 200),
    (lambda: nf.optimizers.Adagrad(0.5), 200),
], ids=["sgd_momentum", "adam_schedule", "adamw", "rmsprop", "adagrad"])
def test_linear_regression_trains_to_low_loss(make, steps):
    x, y = _regression_data()
    w = nf.Variable(inits.GlorotUniform(seed=0)((3, 1), dtype="float64"))
    b = nf.Variable(inits.Zeros()((1,), dtype="float64"))
    opt = make()

    @nf.function
    def step():
        with nf.GradientTape() as tape:
            loss = tnp.mean(nf.losses.mse(y, x @ w + b))
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    first = float(step())
    for _ in range(steps - 1):
        last = float(step())
    assert last < 1e-3 * first and last < 1e-3, (first, last)
    assert step.experimental_get_tracing_count() == 1


def test_mlp_classifier_trains_eagerly():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 2))
    labels = (x[:, 0] * x[:, 1] > 0).astype(np.int64)          # XOR of the signs
    x, labels = tnp.asarray(x.astype(np.float32)), tnp.asarray(labels)
    w1 = nf.Variable(inits.HeNormal(seed=1)((2, 16)))
    b1 = nf.Variable(inits.Zeros()((16,)))
    w2 = nf.Variable(inits.GlorotUniform(seed=2)((16, 2)))
    b2 = nf.Variable(inits.Zeros()((2,)))
    params = [w1, b1, w2, b2]
    opt = nf.optimizers.Adam(0.05)
    for _ in range(150):
        with nf.GradientTape() as tape:
            logits = nf.nn.silu(x @ w1 + b1) @ w2 + b2
            loss = tnp.mean(nf.losses.sparse_categorical_crossentropy(labels, logits,
                                                                      from_logits=True))
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
    accuracy = float(tnp.mean(tnp.argmax(logits, axis=-1) == labels))
    assert float(loss) < 0.2 and accuracy > 0.95
    assert w1.value().dtype == np.float32
