"""Per-example outer products and tier-1 calls (issue 13, per-example gradients):

- a batch of outer products with few columns compiles to one fused multiply where tier 1 runs
  it (no multiply per column and concatenate), its loops ordered so that the short axis is
  outside and the operands that do not vary along the inner loop are read before it;
- after its first call, a static region's tier-1 call goes through a generated caller that
  keeps the constants' prepared arguments.

Everything is checked bit for bit (NaN, infinities, the sign of zero) against NumPy's
per-example products, against the same program with numba off (the per-column form on
tier 0), and against the eager vectorized program."""
import importlib.util
import threading

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import planner
from ndflow.primitives.indexing import concatenate_p
from helpers import assert_bits_equal, guide_per_example

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              # NaN and infinities among the operands: NumPy's warnings are not the subject
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

CALLS = 5        # tier 1 is requested at the third call of a region (settings.hot_calls)


def _special(rng, shape, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    if a.size and np.dtype(dtype).kind == "f":
        flat = a.reshape(-1)
        picks = rng.integers(0, flat.size, size=max(1, flat.size // 5))
        flat[picks] = rng.choice(np.array([-0.0, 0.0, -0.0, np.nan, np.inf, -np.inf], dtype),
                                 size=picks.size)
    elif np.dtype(dtype).kind in "iu":
        a = rng.integers(-5, 6, size=shape).astype(dtype)
    return a


_bits_equal = assert_bits_equal


def _outer(x, g):
    return tnp.matmul(tnp.transpose(x), g)     # the weight gradient of one row, as a tape writes it


@pytest.mark.parametrize("m,n", [(64, 2), (40, 3), (16, 4), (32, 64), (5, 2), (64, 1)])
@pytest.mark.parametrize("batch", [0, 1, 7, 300])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_outer_products_tier1_equal_the_loop_bit_for_bit(monkeypatch, m, n, batch, dtype, nf_settings):
    nf_settings(numba="sync")
    rng = np.random.default_rng(m * 1000 + n * 10 + batch)
    xs, gs = _special(rng, (batch, 1, m), dtype), _special(rng, (batch, 1, n), dtype)
    want = np.stack([x.T @ g for x, g in zip(xs, gs)]) if batch else \
        np.zeros((0, m, n), dtype)
    f = nf.function(nf.vmap(_outer))
    for _ in range(CALLS):
        _bits_equal(f(tnp.asarray(xs), tnp.asarray(gs)).numpy(), want)
    _bits_equal(nf.vmap(_outer)(tnp.asarray(xs), tnp.asarray(gs)).numpy(), want)
    graph = f.get_concrete_function(tnp.asarray(xs), tnp.asarray(gs)).graph
    big = batch * m * n >= nf.config.settings.numba_min
    if big and 1 < n <= 4 and m >= 16:
        # one fused multiply, run by tier 1 with the short axis outside
        assert not any(nd.prim is concatenate_p for nd in graph.nodes)
        ks = fusion.fused_kernels(graph)
        assert len(ks) == 1 and ks[0].tier() == 1


def test_outer_columns_one_product_whichever_tier(monkeypatch, nf_settings):
    """The columns become one product whether numba runs it or not (the graph does not depend
    on numba); tier 0 runs it column by column, with tier 1's bits."""
    rng = np.random.default_rng(5)
    xs, gs = _special(rng, (300, 1, 64), np.float32), _special(rng, (300, 1, 2), np.float32)
    out = {}
    for mode in ("0", "sync"):
        nf_settings(numba=mode)
        f = nf.function(nf.vmap(_outer))
        for _ in range(CALLS):
            out[mode] = f(tnp.asarray(xs), tnp.asarray(gs)).numpy()
        graph = f.get_concrete_function(tnp.asarray(xs), tnp.asarray(gs)).graph
        assert not any(nd.prim is concatenate_p for nd in graph.nodes)
        k, = fusion.fused_kernels(graph)
        if mode == "0":          # no tier 1: tier 0 runs the product column by column
            assert k.decision.route is planner.Route.T0_COLUMNS, nf.config.explain(f)
    _bits_equal(out["sync"], out["0"])


def _per_example_program(dtype, rng, batch, special):
    w1 = tnp.asarray(_special(rng, (32, 64), dtype) if special else
                     rng.standard_normal((32, 64)).astype(dtype))
    b = tnp.asarray(rng.standard_normal(64).astype(dtype))
    w2 = tnp.asarray(rng.standard_normal((64, 2)).astype(dtype))
    single, per_example = guide_per_example(w1, b, w2)
    x = _special(rng, (batch, 32), dtype) if special else \
        rng.standard_normal((batch, 32)).astype(dtype)
    x[:, :2] = 0.0                       # relu ties (the gradient's tie rule) and zeros
    if special and batch:
        x[0, 2] = -0.0
    lab = rng.standard_normal((batch, 2)).astype(dtype)
    return single, per_example, tnp.asarray(x), tnp.asarray(lab)


@pytest.mark.parametrize("batch", [1, 7, 128])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [False, True])
def test_per_example_gradients_tier1_bit_for_bit(monkeypatch, batch, dtype, special, nf_settings):
    """The guide's per-example gradients compiled with tier 1 (numba) give the bits of the same
    program on tier 0 and of the eager vectorized program; the loop over examples (map_fn)
    agrees within rounding (one gemm instead of one gemv per example)."""
    rng = np.random.default_rng(batch + 100 * special)
    single, per_example, x, lab = _per_example_program(dtype, rng, batch, special)
    results = {}
    for mode in ("0", "sync"):
        nf_settings(numba=mode)
        f = nf.function(per_example)
        for _ in range(CALLS):
            results[mode] = [g.numpy() for g in f(x, lab)]
    eager = [g.numpy() for g in per_example(x, lab)]
    for a, b, c in zip(results["sync"], results["0"], eager):
        _bits_equal(a, b)
        _bits_equal(a, c)
    if not special:
        looped = nf.function(lambda x, lab: nf.map_fn(single, (x, lab),
                                                      fn_output_signature=(dtype,) * 3))
        for a, b in zip(results["sync"], looped(x, lab)):
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(a, b.numpy(), rtol=tol, atol=tol * np.abs(a).max())


def _region(f, *args):
    ks = fusion.fused_kernels(f.get_concrete_function(*args).graph)
    assert len(ks) == 1
    return ks[0]


def test_quick_call_constants_by_identity_and_other_operands_checked(monkeypatch, nf_settings):
    """The generated caller keeps a constant's prepared (reshaped, compacted) argument: another
    object in that place, a strided operand, or NumPy's error state set to raise, take the
    general path, with NumPy's values and errors."""
    nf_settings(numba="sync")
    bias = np.linspace(-1, 1, 64).astype(np.float32)
    f = nf.function(lambda a: tnp.maximum(a * 2.0 + bias, 0.0) - a)
    a = np.linspace(-3, 3, 256 * 64, dtype=np.float32).reshape(256, 64)
    a[0, :4] = [-0.0, np.nan, np.inf, -np.inf]

    def want(a, bias=bias):
        return np.maximum(a * np.float32(2.0) + bias, np.float32(0.0)) - a
    for _ in range(CALLS):
        _bits_equal(f(a).numpy(), want(a))
    k = _region(f, a)
    assert k.tier() == 1 and k.runner.quick
    # results are fresh for each call: an earlier result keeps its values
    r1 = f(a)
    a2 = a[::-1].copy()
    r2 = f(a2)
    _bits_equal(r1.numpy(), want(a))
    _bits_equal(r2.numpy(), want(a2))
    # a strided operand in a non-constant place
    big = np.linspace(-2, 2, 256 * 128, dtype=np.float32).reshape(256, 128)
    _bits_equal(f(big[:, ::2]).numpy(), want(big[:, ::2]))
    # another object where the constant was: the kernel called directly
    xs = [x for x in _args_of(f, a)]
    ci = [i for i in k.const_pos if np.ndim(xs[i]) == 1][0]
    other = xs[ci] + np.float32(1)
    xs2 = list(xs)
    xs2[ci] = other
    _bits_equal(k(*xs2), want(a, other))
    # operands rebound: the caller is dropped (with the objects it held), the general path
    # runs from now on
    assert k.runner.quick is False and k.runner.quick_consts == ()
    _bits_equal(k(*xs), want(a))
    _bits_equal(f(a).numpy(), want(a))
    # the caller keeps the constant's argument, not its values: writes into it are seen
    bias_arr = xs[ci]
    saved = bias_arr.copy()
    try:
        bias_arr += np.float32(0.5)
        _bits_equal(k(*xs), want(a, bias_arr))
    finally:
        bias_arr[...] = saved
    with np.errstate(over="raise"):
        huge = np.full((256, 64), 3e38, np.float32)
        with pytest.raises(FloatingPointError):
            k(*([huge] + xs[1:]))


def _args_of(f, a):
    """The operands the compiled code passes to its one fused node, for input `a`."""
    cf = f.get_concrete_function(a)
    node = [n for n in cf.graph.nodes if fusion.fused_kernels(cf.graph) and
            getattr(n.prim, "name", "").startswith("fused")][0]
    g = cf.run.__globals__
    consts = {c.id: g["c%d" % i] for i, c in enumerate(cf.graph.consts)}
    return [a if v.kind != "c" else consts[v.id] for v in node.inputs]


def test_quick_call_from_threads(monkeypatch, nf_settings):
    nf_settings(numba="sync")
    w = np.linspace(-1, 1, 64).astype(np.float32)
    f = nf.function(lambda a: tnp.where(a > w, a * w, -a) + 1.0)
    inputs = [np.random.default_rng(i).standard_normal((128, 64)).astype(np.float32)
              for i in range(4)]
    for _ in range(CALLS):
        f(inputs[0])
    assert _region(f, inputs[0]).runner.quick
    bad = []

    def work(x):
        want = np.where(x > w, x * w, -x) + np.float32(1.0)
        for _ in range(200):
            got = f(x).numpy()
            if not np.array_equal(got, want):
                bad.append(1)
    ts = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad
