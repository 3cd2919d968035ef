"""Small static regions on tier 1 through the generated caller (`settings.numba_quick_units`,
issue 13): a region of a few elements and enough ops runs as one compiled call; an operand
that is a NumPy scalar (a value of the step's inlined 0-d arithmetic) is passed as the
general path passes it; results are NumPy's bit for bit (Adam's fused update against the
eager step), with special values, other operand types, changing shapes and threads."""
import importlib.util
import threading

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from helpers import assert_bits_equal, four_element_operands

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

CALLS = 5        # tier 1 is requested at the third call of a region


@pytest.fixture
def sync(monkeypatch, nf_settings):
    nf_settings(numba="sync")
    nf_settings(fast_math=False)


def _prog(np_, x, y, t):
    s = np_.sqrt(t) * 0.5          # 0-d: inlined arithmetic, a NumPy scalar in the step
    return ((x * s + y) * s - x) / (y * y + 1.0)


def _kernels(f, *args):
    return fusion.fused_kernels(f.get_concrete_function(*args).graph)


def _small(dtype, n=4):
    f = nf.function(lambda x, y, t: _prog(tnp, x, y, t))
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    t = np.asarray(3.0, dtype)
    for _ in range(CALLS):
        f(x, y, t)
    ks = [k for k in _kernels(f, x, y, t) if k.prog.shape == (n,)]
    assert len(ks) == 1
    return f, ks[0], (x, y, t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_region_runs_compiled_with_a_scalar_operand(sync, dtype):
    f, k, (x, y, t) = _small(dtype)
    assert k.tier() == 1 and callable(k.runner.quick), k.tier1_unavailable
    q, hits = k.runner.quick, []

    def spy(xs):
        r = q(xs)
        hits.append(r is not NotImplemented)
        return r
    k.runner.quick = spy
    for a, b, tt in four_element_operands(dtype):
        got = f(a, b, tt).numpy()
        want = _prog(np, a, b, tt)
        assert got.dtype == want.dtype
        assert_bits_equal(got, want)
    assert hits and all(hits)


def test_scalar_operand_of_another_kind_takes_the_general_path(sync):
    f, k, (x, y, t) = _small(np.float32)
    # the region's operands as the step gives them: find the scalar's place
    calls = []
    q = k.runner.quick

    def spy(xs):
        calls.append(list(xs))
        return q(xs)
    k.runner.quick = spy
    f(x, y, t)
    xs = calls[-1]
    pos = [i for i, v in enumerate(xs) if isinstance(v, np.generic)]
    assert pos, [type(v) for v in xs]
    i = pos[0]
    want = k.tier0(*xs)
    assert_bits_equal(k(*xs), want)
    for other in (np.float64(xs[i]), np.asarray(xs[i]), np.asarray(xs[i], np.float64),
                  np.float32(np.nan), np.float32(-0.0)):
        node_xs = list(xs)
        node_xs[i] = other
        assert_bits_equal(k(*node_xs), k.tier0(*node_xs))
    assert callable(k.runner.quick)      # still there for the next calls


def test_results_fresh_and_shapes_changing(sync):
    f = nf.function(lambda x, y, t: _prog(tnp, x, y, t))
    rng = np.random.default_rng(2)
    for n in (4, 5, 4, 1, 4):
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        t = np.asarray(5.0, np.float32)
        outs = [f(x, y, t).numpy() for _ in range(CALLS)]
        for o in outs:
            assert_bits_equal(o, _prog(np, x, y, t))
        outs[0][...] = 7           # a result the caller holds is its own
        assert_bits_equal(outs[1], _prog(np, x, y, t))


def test_small_regions_from_threads(sync):
    f, k, (x, y, t) = _small(np.float32)
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(200):
                a = rng.standard_normal(4).astype(np.float32)
                b = rng.standard_normal(4).astype(np.float32)
                tt = np.asarray(rng.uniform(0, 9), np.float32)
                assert_bits_equal(f(a, b, tt).numpy(), _prog(np, a, b, tt))
        except Exception as e:           # pragma: no cover - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    assert not errors, errors[0]


def test_refused_small_region_is_known_at_once():
    """A small region tier 1 refuses (a float32 `pow`) is tier 0 from its construction, so
    the step writes it inline, whatever the numba setting."""
    f = nf.function(lambda t: tnp.sqrt(1.0 - tnp.power(np.float32(0.999), t)) /
                    (1.0 - tnp.power(np.float32(0.9), t)) * 0.5 + 1.0)
    t = np.asarray(3.0, np.float32)
    ks = _kernels(f, t)
    assert ks and all(k.direct is not None for k in ks if any(
        o.prim.name == "power" for o in k.prog.ops))
    assert_bits_equal(f(t).numpy(), np.sqrt(np.float32(1.0) - np.float32(0.999) ** t) /
                      (np.float32(1.0) - np.float32(0.9) ** t) * np.float32(0.5) +
                      np.float32(1.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_fused_update_bit_for_bit(sync, dtype):
    """Adam's m, v and variable updates are one region (one compiled call for small
    Variables); the values are the eager step's."""
    rng = np.random.default_rng(3)
    xs = rng.uniform(-1, 1, (8, 64)).astype(dtype)
    ys = (1 - 2 * xs + 0.5 * xs ** 3).astype(dtype)
    xs[0, :3] = [0.0, -0.0, 1e-30]

    def trainer(compiled):
        coef = nf.Variable(np.zeros(4, dtype))
        opt = nf.optimizers.Adam(0.1)
        powers = tnp.arange(4, dtype=dtype)[:, None]

        def step(x, y):
            with nf.GradientTape() as tape:
                pred = tnp.matmul(coef, x[None, :] ** powers)
                loss = tnp.mean(tnp.square(pred - y))
            opt.apply_gradients([(tape.gradient(loss, coef), coef)])
            return loss
        return (nf.function(step) if compiled else step), coef, opt
    fe, ce, oe = trainer(False)
    fc, cc, oc = trainer(True)
    for x, y in zip(xs, ys):
        assert_bits_equal(fc(x, y).numpy(), fe(x, y).numpy())
        assert_bits_equal(cc.numpy(), ce.numpy())
        for (a, _), (b, _) in zip(oc._slots.values(), oe._slots.values()):
            assert_bits_equal(a.numpy(), b.numpy())
    ks = [k for k in _kernels(fc, xs[0], ys[0]) if k.prog.shape == (4,)]
    assert len(ks) == 1 and len(ks[0].prog.outputs) == 3
    assert ks[0].tier() == 1


def test_offered_buffers_declined_for_the_generated_caller(sync):
    """A region that pays only through the generated caller takes it when the step offers
    a dead buffer for its result (the general path would cost more than tier 0)."""
    f, k, (x, y, t) = _small(np.float32)
    calls = []
    q = k.runner.quick

    def spy(xs):
        calls.append(list(xs))
        r = q(xs)
        calls.append(r is not NotImplemented)
        return r
    k.runner.quick = spy
    f(x, y, t)
    xs = calls[0]
    del calls[:]
    donor = np.full(4, 7, np.float32)
    got = k.into(xs, [donor])
    assert calls[1] is True
    assert_bits_equal(got, k.tier0(*xs))
    assert_bits_equal(donor, np.full(4, 7, np.float32))


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("n", [1, 32, 1024])
def test_four_op_sigmoid_takes_the_generated_caller(sync, nf_settings, jit, n):
    """The sigmoid's four ops (negate, exp, add, divide: 4 units) on a few elements reach
    `settings.numba_quick_units`: one compiled call through the generated caller, NumPy's bits
    by default (within the accuracy bound under jit_compile=True), special values included."""
    nf_settings(fast_math=jit)
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.7, -88.7, -104.0, 1e-30, 2.5],
                    np.float32)
    x = np.resize(vals, n) if n < 32 else np.concatenate(
        [vals, np.random.default_rng(n).standard_normal(n - vals.size).astype(np.float32)])
    f = nf.function(lambda y: 1 / (1 + tnp.exp(-y)), jit_compile=jit)
    for _ in range(CALLS):
        got = f(x).numpy()
    k, = _kernels(f, x)
    assert k.tier() == 1 and callable(k.runner.quick), k.tier1_unavailable
    with np.errstate(all="ignore"):
        want = 1 / (1 + np.exp(-x))
    if jit:
        np.testing.assert_allclose(got, want, rtol=4e-7, atol=0)
        assert_bits_equal(np.isnan(got), np.isnan(want))
    else:
        assert_bits_equal(got, want)
