"""Row regions under jit_compile=True (`numba_rows`, route T1_ROWS): a reduction along a
matrix's last axis, with what computes on the same rows around it (a softmax, its loss and its
gradient up to the bias gradient's sum), fused into one region that tier 1 runs as one loop
nest. Values against NumPy: bit for bit where every op is exact (max, subtraction, signed
zeros, NaN and infinities by position), within the contract's bounds where it sums or calls
exp/log; the default contract never makes such regions."""
import importlib.util

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import contract, numba_rows, planner
from ndflow.graph.kernels.planner import Route

from benchmarks import impl_ndflow, workloads as W
from helpers import assert_bits_equal, routes_reached

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="numba not installed")
EPS32 = float(np.finfo(np.float32).eps)


def _regions(f, *args):
    return fusion.fused_kernels(f.get_concrete_function(*args).graph)


def _row_kernels(f):
    return [k for k in planner._kernels_of(f, set())
            if isinstance(k.runner, numba_rows.RowRunner)]


def softmax_xent(logits, onehot):
    """The classifier's loss and its gradient by hand (as the benchmark's NumPy step)."""
    z = logits - tnp.max(logits, axis=1, keepdims=True)
    e = tnp.exp(z)
    s = tnp.sum(e, axis=1)
    loss = tnp.mean(tnp.log(s) - tnp.sum(z * onehot, axis=1))
    d = (e / s[:, None] - onehot) / logits.shape[0]
    return loss, d, tnp.sum(d, axis=0)


def _data(b=48, c=10, seed=0):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((b, c)) * 3).astype(np.float32)
    onehot = np.eye(c, dtype=np.float32)[rng.integers(0, c, b)]
    return logits, onehot


def _within_sums(got, want, n, scale, ctx):
    """|got - want| <= (n + 8) * eps * scale: a sum of n terms in another order (the
    contract's n * eps * sum|x|) of terms each within a few ulps (exp, log, a division)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, ctx
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=ctx)
    bound = (n + 8) * EPS32 * np.asarray(scale, np.float64)
    err = np.abs(np.nan_to_num(got) - np.nan_to_num(want))
    assert np.all(err <= bound), (ctx, float(np.max(err - bound)))


def test_softmax_cross_entropy_is_one_row_kernel(nf_settings):
    """Forward and backward in one region, run by the row kernel; within the contract."""
    nf_settings(numba="sync", hot_calls=1)
    logits, onehot = _data()
    fast = nf.function(softmax_xent, jit_compile=True)
    assert len(_regions(fast, logits, onehot)) == 1, nf.config.explain(fast)
    reached, got = routes_reached(lambda: [fast(logits, onehot) for _ in range(3)][-1])
    assert Route.T1_ROWS in reached, reached
    assert len(_row_kernels(fast)) == 1 and "row kernel" in nf.config.explain(fast)
    _check_xent(got, logits, onehot)


def _check_xent(got, logits, onehot):
    want = softmax_xent(tnp.asarray(logits), tnp.asarray(onehot))
    b, c = logits.shape
    for o, w in zip(got, want):
        assert o.dtype == w.dtype and o.shape == w.shape
    _within_sums(got[0], want[0], b + c, 1 + np.abs(np.log(np.exp(logits).sum(1))).mean(),
                 "loss")
    _within_sums(got[1], want[1], c, 1.0 / b, "dlogits")
    _within_sums(got[2], want[2], b + c, np.abs(want[1].numpy()).sum(0) + 1.0 / b, "dbias")


def test_the_default_contract_makes_no_row_region(nf_settings):
    """Without jit_compile the regions stay split (NumPy's bits, as before)."""
    nf_settings(numba="sync", hot_calls=1)
    logits, onehot = _data()
    exact = nf.function(softmax_xent)
    assert len(_regions(exact, logits, onehot)) > 1
    got = [exact(logits, onehot) for _ in range(3)][-1]
    assert not _row_kernels(exact)
    for o, w in zip(got, softmax_xent(tnp.asarray(logits), tnp.asarray(onehot))):
        assert_bits_equal(o.numpy(), w.numpy())


def _max_parts(x):
    m = tnp.max(x, axis=1, keepdims=True)
    z = x - m
    return m, z, tnp.sum(tnp.exp(z), axis=1), tnp.min(z * 2.0, axis=1)


def test_special_values_by_position(nf_settings):
    """The row max, min and the differences are exact: NumPy's bits, the sign of a zero max
    (the last of -0.0 and +0.0 in a row), NaN rows and infinities where NumPy puts them."""
    nf_settings(numba="sync", hot_calls=1)
    x = np.random.default_rng(1).standard_normal((8, 12)).astype(np.float32)
    x[0] = -0.0
    x[0, 5] = 0.0                       # max +0.0 ... then -0.0 after it: the last wins
    x[1] = 0.0
    x[1, 11] = -0.0
    x[2, 3] = np.nan
    x[3, 4] = np.inf
    x[4] = -np.inf
    x[5, 0] = -np.inf
    fast = nf.function(_max_parts, jit_compile=True)
    with np.errstate(all="ignore"):
        reached, got = routes_reached(lambda: [fast(x) for _ in range(3)][-1])
        want = _max_parts(tnp.asarray(x))
    assert Route.T1_ROWS in reached, nf.config.explain(fast)
    for o, w in zip(got[:2] + got[3:], want[:2] + want[3:]):
        assert_bits_equal(o.numpy(), w.numpy())
    g, w = got[2].numpy(), want[2].numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
    ok = np.isfinite(w)
    np.testing.assert_allclose(g[ok], w[ok], rtol=(12 + 2) * EPS32)


def test_an_operand_tier1_cannot_take_runs_tier0(nf_settings):
    """A transposed (strided) operand: the row kernel refuses the call, tier 0 runs it with
    NumPy's calls; switched off, the route leaves the region to tier 0 for good."""
    nf_settings(numba="sync", hot_calls=1)
    logits, onehot = _data(seed=2)
    lt = np.asfortranarray(logits)
    fast = nf.function(softmax_xent, jit_compile=True)
    reached, got = routes_reached(lambda: [fast(lt, onehot) for _ in range(3)][-1])
    assert Route.T1_ROWS in reached and "not in C order" in nf.config.explain(fast)
    assert not [k for k in _row_kernels(fast) if k.runner.quick is not None]
    _check_xent(got, logits, onehot)
    nf_settings(routes_off=("T1_ROWS",))
    off = nf.function(softmax_xent, jit_compile=True)
    reached, got = routes_reached(lambda: [off(logits, onehot) for _ in range(3)][-1])
    assert Route.T1_ROWS not in reached and "T1_ROWS switched off" in nf.config.explain(off)
    for o, w in zip(got, softmax_xent(tnp.asarray(logits), tnp.asarray(onehot))):
        assert_bits_equal(o.numpy(), w.numpy())          # tier 0: NumPy's own calls


def test_a_training_step_updates_its_variables_in_place(nf_settings):
    """The classifier's step (relu layer, softmax cross-entropy, SGD on four Variables):
    its row region runs tier 1; the Variables follow NumPy's step within the contract, keep
    their own buffers, and the loss returned shares memory with none of them."""
    nf_settings(numba="sync", hot_calls=1)
    rng = np.random.default_rng(4)
    b, d, h, c = 32, 20, 16, 10
    x = rng.uniform(0, 1, (b, d)).astype(np.float32)
    onehot = np.eye(c, dtype=np.float32)[rng.integers(0, c, b)]
    init = [(rng.standard_normal(s) * 0.3).astype(np.float32) for s in ((d, h), (h,), (h, c),
                                                                        (c,))]
    ps = [nf.Variable(w.copy()) for w in init]
    impl_ndflow.setup()
    step = nf.function(impl_ndflow.classifier_train_step(ps), jit_compile=True)

    ref = [w.copy() for w in init]
    reached, losses = routes_reached(lambda: [step(x, onehot) for _ in range(4)])
    assert Route.T1_ROWS in reached, nf.config.explain(step)
    for k, loss in enumerate(losses):
        want = W.np_classifier_step(ref, x, onehot)      # NumPy's step, updating ref
        # earlier steps' rounding carries into the weights: compare the loss loosely
        np.testing.assert_allclose(loss.numpy(), want, rtol=1e-5, err_msg="step %d" % k)
        for v in ps:
            assert not np.shares_memory(loss.numpy(), v.numpy())
    for v, r in zip(ps, ref):
        np.testing.assert_allclose(v.numpy(), r, rtol=1e-5, atol=1e-6)


def test_why_not_names_what_a_row_kernel_refuses():
    """The analysis says why a region is not a row kernel's (the planner's explain text)."""
    with nf.config.settings.override(fast_math=True):
        logits, onehot = _data()
        f = nf.function(lambda x: tnp.sum(x * 2.0, axis=1), jit_compile=True)
        (k,) = _regions(f, logits)
        assert numba_rows.why_not(k.prog, False).startswith("a row kernel sums")
        assert numba_rows.why_not(k.prog, True) is None
    g = nf.function(lambda x: tnp.sum(tnp.sin(x), axis=1, keepdims=True) * x,
                    jit_compile=True)
    kernels = _regions(g, logits)
    assert kernels and all(numba_rows.why_not(k.prog, True) for k in kernels)
    assert contract.FAST


def _shapes(x, bias, col, s):
    z = x + bias - tnp.max(x + bias, axis=1, keepdims=True)
    r = tnp.sum(z * col, axis=1, keepdims=True)
    return (tnp.max(x + bias, axis=1), z * s, r, tnp.sum(z * s, axis=0, keepdims=True),
            tnp.sum(r), tnp.sum(z, axis=(0, 1), keepdims=True))


def test_operands_and_results_of_every_shape(nf_settings):
    """A square matrix (a bias of its width broadcasts along rows, a column along columns, a
    0-d scale), results of the row's shape with and without its unit axis, a first-axis sum
    keeping its dims, whole sums of a row's values and of the matrix: NumPy's shapes and
    dtypes, the exact ones bit for bit, the sums within the contract."""
    nf_settings(numba="sync", hot_calls=1)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((6, 6)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    col = rng.standard_normal((6, 1)).astype(np.float32)
    s = np.float32(0.5)
    fast = nf.function(_shapes, jit_compile=True)
    assert len(_regions(fast, x, bias, col, s)) == 1, nf.config.explain(fast)
    reached, got = routes_reached(lambda: [fast(x, bias, col, s) for _ in range(3)][-1])
    assert Route.T1_ROWS in reached and _row_kernels(fast), nf.config.explain(fast)
    want = _shapes(*(tnp.asarray(a) for a in (x, bias, col, s)))
    for o, w in zip(got, want):
        assert o.shape == w.shape and o.dtype == w.dtype, (o.shape, w.shape)
    assert_bits_equal(got[0].numpy(), want[0].numpy())
    assert_bits_equal(got[1].numpy(), want[1].numpy())
    z = np.abs(want[1].numpy() / s)
    _within_sums(got[2], want[2], 6, (z * np.abs(col)).sum(1, keepdims=True), "row sums")
    _within_sums(got[3], want[3], 6, (z * s).sum(0, keepdims=True), "column sums")
    _within_sums(got[4], want[4], 36, (z * np.abs(col)).sum(), "sum of row sums")
    _within_sums(got[5], want[5], 36, z.sum(), "whole sum")
