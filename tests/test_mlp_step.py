"""The compiled gradient step of a small MLP (the benchmarks' mlp_grad): NumPy's bits as eager
code gives them, no large buffer allocated per call once warm, and the kernels its regions
need asked for early enough that a warm-up which waits for compiles gets them all."""
import tracemalloc

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import numba_available, numba_compile, wait_for_compiles
from ndflow.graph.memory import KEEP_MIN_BYTES

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba not installed")


def _data(batch, dtype, n_in=32, n_hidden=64, n_out=2):
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, n_in))
    x[0, :3] = 0.0                      # ties at the relu's kink (its subgradient's 0.5)
    w1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    b = rng.standard_normal(n_hidden)
    b[:2] = 0.0
    w2 = rng.standard_normal((n_hidden, n_out)) * 0.01
    labels = rng.standard_normal((batch, n_out))
    return [tnp.asarray(a.astype(dtype)) for a in (x, labels, w1, b, w2)]


def grads(x, labels, w1, b, w2):
    with nf.GradientTape() as tape:
        tape.watch([w1, b, w2])
        h = tnp.maximum(tnp.matmul(x, w1) + b, 0)
        loss = tnp.sum(tnp.square(tnp.matmul(h, w2) - labels))
    return tape.gradient(loss, [w1, b, w2])


def _same(got, want):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


@pytest.mark.parametrize("numba", ["off", "sync"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [32, 512, 2048])
def test_compiled_step_gives_eager_bits(numba, dtype, batch, nf_settings):
    if numba != "off" and not numba_available():
        pytest.skip("numba not installed")
    nf_settings(numba=numba)
    args = _data(batch, dtype)
    want = [g.numpy() for g in grads(*args)]
    f = nf.function(grads)
    held = []
    for _ in range(6):              # tier 0, then tier 1 (sync) with its in-place variant
        got = [g.numpy() for g in f(*args)]
        _same(got, want)
        held.append(got)
    for got in held:                # earlier results untouched by later calls
        _same(got, want)


def _peak_of_one_call(f, args):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = f(*args)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    del out
    return peak


@pytest.mark.parametrize("numba", ["off", "sync"])
def test_warm_step_allocates_no_large_product(numba, nf_settings):
    """Once warm, a call allocates none of the step's large intermediates: the products
    (matmul results the step does not return) go into buffers kept between calls, as fused
    regions' results do. A fresh 1 MiB product per call costs page faults whenever the
    allocator has given the memory back to the system (more than the product's BLAS time)."""
    if numba != "off" and not numba_available():
        pytest.skip("numba not installed")
    nf_settings(numba=numba)
    batch = 4096
    args = _data(batch, np.float32)
    f = nf.function(grads)
    for _ in range(8):
        f(*args)
    product = batch * 64 * 4
    peak = min(_peak_of_one_call(f, args) for _ in range(3))
    assert peak < product // 2, f"a warm call allocated {peak} bytes at its peak"


def test_kept_product_behind_a_returned_view_is_never_overwritten(nf_settings):
    """A result the caller holds (here a view of a kept product) is never written by a
    later call: the kept buffer is reused only when nothing else refers to it."""
    nf_settings(numba="off")
    rng = np.random.default_rng(1)
    w = tnp.asarray(rng.standard_normal((64, 256)))

    @nf.function
    def f(x):
        return tnp.transpose(tnp.matmul(x, w))[:3]
    assert 512 * 256 * 8 >= KEEP_MIN_BYTES         # the product goes into a kept buffer
    xs = [tnp.asarray(rng.standard_normal((512, 64))) for _ in range(4)]
    firsts = [f(x) for x in xs]
    for x, r in zip(xs, firsts):
        np.testing.assert_array_equal(r.numpy(), (x.numpy() @ w.numpy()).T[:3])
    again = f(xs[0])
    np.testing.assert_array_equal(again.numpy(), firsts[0].numpy())
    assert not np.shares_memory(again.numpy(), firsts[0].numpy())


@needs_numba
def test_in_place_variant_is_asked_for_with_the_first_kernel(monkeypatch, nf_settings):
    """A region given the buffer of one of its own operands (bias + relu written over the
    product) needs tier 1's in-place variant; it is asked for with the region's first
    kernel, so a warm-up that waits for the compiles it started has it too (asked for only
    at the first call that donates, it was compiled during the calls after the warm-up)."""
    nf_settings(numba="background")
    # asked for at once (a background compile is otherwise asked for once it pays)
    monkeypatch.setattr(numba_compile, "cost", lambda prog: (0.0, 0.0))
    args = _data(512, np.float32)
    f = nf.function(grads)
    for _ in range(nf.config.settings.hot_calls):      # the last one asks for tier 1
        f(*args)
    wait_for_compiles()
    cf = f.get_concrete_function(*args)
    kernels = []
    for n in cf.graph.nodes:        # fused nodes given one of their own operands' buffers
        donated = getattr(n.prim.impl, "donated", {})
        k = getattr(n.prim.impl, "kernel", None)
        if k is not None and any(v in n.inputs[:k.prog.n_in] for v in donated.values()):
            kernels.append(k)
    assert kernels, "no region is given the buffer of its own operand"
    for k in kernels:
        assert k.tier() == 1
        assert k.runner.static_plan.variants, \
            "the in-place variant was not asked for with the region's first kernel"
    _same([g.numpy() for g in f(*args)], [g.numpy() for g in grads(*args)])
