"""A small static region's generated caller is the FusedKernel's own call (issue 13,
`planner.direct`), and runs a kernel made for it (`numba_source._kernel_source`'s `baked`
and `scalars`): one-element constants written into the kernel as literals, the step's NumPy
scalars passed as scalars. Results are NumPy's bit for bit, with special values in operands
and constants; any other operand (another scalar type, a 0-d or strided array, a rebound
constant) goes to the general path with the same results."""
import importlib.util

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import FusedKernel, numba_source
from helpers import assert_bits_equal, four_element_operands

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

CALLS = 5


@pytest.fixture
def sync(monkeypatch, nf_settings):
    nf_settings(numba="sync")
    nf_settings(fast_math=False)


def _prog(np_, x, y, t, c):
    s = np_.sqrt(t) * 0.5          # 0-d: inlined arithmetic, a NumPy scalar in the step
    return ((x * s + y) * c[0] - x * c[1]) / (y * y + c[2])


def _region(c, dtype, n=4):
    f = nf.function(lambda x, y, t: _prog(tnp, x, y, t, c))
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    t = np.asarray(3.0, dtype)
    for _ in range(CALLS):
        f(x, y, t)
    ks = [k for k in fusion.fused_kernels(f.get_concrete_function(x, y, t).graph)
          if k.prog.shape == (n,)]
    assert len(ks) == 1
    return f, ks[0]


def _operands(k, f, x, y, t):
    """The region's operands as the step passes them (seen through the runner)."""
    seen = []
    q = k.runner.quick
    k.runner.quick = lambda xs: seen.append(list(xs)) or q(xs)
    f(x, y, t)
    k.runner.quick = q
    return seen[-1]


CONSTS = [(2.0, 3.0, 1.0), (-0.0, 1e-30, 0.5), (1e-45, -7.0, 0.0), (np.nan, 2.0, 1.0),
          (np.inf, -np.inf, 1.0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("c", CONSTS)
def test_direct_call_with_constants_in_the_kernel(sync, dtype, c):
    f, k = _region(c, dtype)
    assert k.tier() == 1 and callable(k.runner.quick), k.tier1_unavailable
    assert type(k).quick_call and type(k).__call__ is k.runner.quick.qcall
    kern = k.runner.quick.__globals__["k_"]
    finite = sum(np.isfinite(v) for v in c)
    # the finite constants are literals of the kernel, not parameters; the scalar a scalar
    assert kern.ndflow_source.count(" = K") == finite
    assert any(str(t) in ("float32", "float64") for t in kern.signatures[0])
    for a, b, tt in four_element_operands(dtype):
        with np.errstate(all="ignore"):
            want = _prog(np, a, b, tt, [dtype(v) for v in c])
        got = f(a, b, tt).numpy()
        assert got.dtype == want.dtype
        assert_bits_equal(got, want)
    assert type(k).quick_call


def test_other_operands_straight_into_the_direct_call(sync):
    f, k = _region((2.0, 3.0, 1.0), np.float32)
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    xs = _operands(k, f, x, y, np.asarray(2.0, np.float32))
    si = [i for i, v in enumerate(xs) if isinstance(v, np.generic)][0]
    ai = [i for i, v in enumerate(xs) if isinstance(v, np.ndarray) and v.shape == (4,)][0]
    assert type(k).quick_call
    assert_bits_equal(k(*xs), k.tier0(*xs))
    wide = rng.standard_normal(8).astype(np.float32)
    frozen = xs[ai].copy()
    frozen.flags.writeable = False
    for i, other in ((si, np.float64(xs[si])), (si, np.asarray(xs[si])), (si, 2.5),
                     (si, np.asarray(xs[si], np.float64)), (si, np.float32(np.nan)),
                     (ai, wide[::2]), (ai, frozen), (ai, xs[ai].astype(np.float64)),
                     (ai, [1.0, 2.0, 3.0, 4.0])):
        node_xs = list(xs)
        node_xs[i] = other
        assert_bits_equal(k(*node_xs), k.tier0(*node_xs))
        assert type(k).quick_call       # the caller stays for the next calls
    # another object in a constant's place: the general path, and the caller is dropped
    ci = [i for i in k.const_pos][0]
    node_xs = list(xs)
    node_xs[ci] = np.array(node_xs[ci])
    assert_bits_equal(k(*node_xs), k.tier0(*node_xs))
    assert type(k) is FusedKernel and k.runner.quick is False
    assert_bits_equal(k(*xs), k.tier0(*xs))


def test_int_region_constants_in_the_kernel(sync):
    c = (3, -7, 5)
    f = nf.function(lambda x, y: ((x * c[0] + y) * c[1] - x * c[2]) + y * y)
    rng = np.random.default_rng(5)
    x, y = rng.integers(-1000, 1000, 6), rng.integers(-1000, 1000, 6)
    x[0] = np.iinfo(np.int64).max        # wraps, as NumPy's
    for _ in range(CALLS):
        assert_bits_equal(f(x, y).numpy(), ((x * c[0] + y) * c[1] - x * c[2]) + y * y)
    ks = fusion.fused_kernels(f.get_concrete_function(x, y).graph)
    assert len(ks) == 1 and ks[0].tier() == 1 and type(ks[0]).quick_call
    assert ks[0].runner.quick.__globals__["k_"].ndflow_source.count(" = K") == 3


def test_small_adam_step_direct_call_keeps_held_values(sync):
    """A compiled Adam step on a few elements: its update region runs through the direct call
    (the results the Variables are assigned are fresh arrays each step, not pooled); values
    read from the Variables earlier keep theirs, and every step is the eager step's bits."""
    rng = np.random.default_rng(7)
    w0 = rng.standard_normal(4).astype(np.float32)
    xs = rng.standard_normal((12, 16)).astype(np.float32)
    ys = rng.standard_normal((12, 16)).astype(np.float32)

    def make(compiled):
        w = nf.Variable(w0.copy())
        opt = nf.optimizers.Adam(0.01)
        p = tnp.arange(4, dtype=tnp.float32)[:, None]

        def step(x, y):
            with nf.GradientTape() as t:
                loss = tnp.mean(tnp.square(tnp.matmul(w, x[None, :] ** p) - y))
            opt.apply_gradients([(t.gradient(loss, w), w)])
            return loss
        return (nf.function(step) if compiled else step), w, opt
    fe, we, oe = make(False)
    fc, wc, oc = make(True)
    held = []
    for i in range(12):
        le, lc = fe(xs[i], ys[i]), fc(xs[i], ys[i])
        assert_bits_equal(lc.numpy(), le.numpy())
        assert_bits_equal(wc.numpy(), we.numpy())
        held.append([(h, v.numpy().copy()) for v in [wc] + list(oc.variables())
                     if v.shape == (4,) for h in (v.numpy(), v.value())])
    for vals in held:
        for h, copy in vals:
            assert_bits_equal(np.asarray(h.numpy() if hasattr(h, "numpy") else h), copy)
    ks = [k for k in fusion.fused_kernels(fc.get_concrete_function(xs[0], ys[0]).graph)
          if k.prog.shape == (4,)]
    assert ks and all(type(k).quick_call and k.kept_outputs for k in ks)


def test_direct_call_honours_the_error_state(sync):
    """NumPy's error state asking to raise sends the direct call to the general path (tier 0
    raises as NumPy does); back to quiet, the direct call runs again."""
    f, k = _region((2.0, 3.0, 0.0), np.float32)
    x = np.array([1.0, 2.0, -1.0, 0.5], np.float32)
    y = np.array([0.0, 1.0, 2.0, 3.0], np.float32)     # y * y + 0 == 0 at [0]: x / 0
    t = np.asarray(2.0, np.float32)
    xs = _operands(k, f, x, y, t)
    for _ in range(2):
        with np.errstate(divide="raise", invalid="raise"):
            with pytest.raises(FloatingPointError):
                k(*xs)
            with pytest.raises(FloatingPointError):
                f(x, y, t)
        with np.errstate(all="ignore"):
            assert_bits_equal(k(*xs), k.tier0(*xs))
            assert_bits_equal(f(x, y, t).numpy(), _prog(np, x, y, t, [np.float32(v) for v in
                                                                      (2.0, 3.0, 0.0)]))
        assert type(k).quick_call


@pytest.mark.parametrize("n, dtype", [(7, np.float32), (129, np.float32), (256, np.float32),
                                      (512, np.float64), (1000, np.float32)])
def test_whole_sum_written_out_for_the_static_size(sync, n, dtype):
    """The direct call's kernel writes NumPy's pairwise sum out for its one size
    (`_pairwise_tree`): the same bits as NumPy's sum at sizes around the 8- and 128-element
    blocks and the halving's multiples of 8."""
    f = nf.function(lambda x, y: tnp.sum(tnp.square(x - y) * 0.5 + x))
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    want = np.sum(np.square(x - y) * dtype(0.5) + x)
    for _ in range(CALLS):
        assert_bits_equal(f(x, y).numpy(), want)
    ks = fusion.fused_kernels(f.get_concrete_function(x, y).graph)
    assert len(ks) == 1 and type(ks[0]).quick_call, ks[0].tier1_unavailable
    src = ks[0].runner.quick.__globals__["k_"].ndflow_source
    assert ("pw_st" not in src) == (n <= numba_source.TREE_MAX)
    x[: min(n, 3)] = [np.inf, -0.0, np.nan][: min(n, 3)]
    assert_bits_equal(f(x, y).numpy(), np.sum(np.square(x - y) * dtype(0.5) + x))
