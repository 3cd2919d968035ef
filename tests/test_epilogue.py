"""The matrix product's epilogue: bias add and activation run as one fused pass over the
product's result, transposed operands reach BLAS as views (its transpose flags, no copy), and
the reductions of a gradient region leave the compiled loop when only they keep it on tier 0.
Compiled equals eager, bit for bit, on special values and in every dtype."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import numba_available
from ndflow.primitives.linalg import matmul_p
from ndflow.primitives import elementwise as E

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba not installed")

SPECIALS = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30, 3.0, -2.5]


def _data(dtype, m, k, n, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k))
    w = rng.standard_normal((k, n))
    b = rng.standard_normal(n)
    if not specials:
        pass
    elif np.dtype(dtype).kind == "f":
        x.flat[:len(SPECIALS)] = SPECIALS
        b[:len(SPECIALS)] = SPECIALS
        w[0, :len(SPECIALS)] = SPECIALS[::-1]
    else:
        x, w, b = (np.round(a * 4) for a in (x, w, b))
    return [a.astype(dtype) for a in (x, w, b)]


def _layer(x, w, b):
    return tnp.maximum(tnp.matmul(x, w) + b, 0)


def _same(a, e):
    a, e = np.asarray(a), np.asarray(e)
    assert a.dtype == e.dtype and a.shape == e.shape
    np.testing.assert_array_equal(a, e)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(e))


ACTIVATIONS = {
    "relu": lambda y: tnp.maximum(y, 0),
    "sigmoid": lambda y: 1 / (1 + tnp.exp(-y)),
    "tanh": tnp.tanh,
}


@pytest.mark.parametrize("numba", ["0", "sync"])
@pytest.mark.parametrize("dtype,act", [(d, a) for d in (np.float32, np.float64)
                                       for a in sorted(ACTIVATIONS)] + [(np.int64, "relu")])
@pytest.mark.parametrize("m", [4, 96])
def test_matmul_bias_activation_equals_eager(monkeypatch, numba, dtype, act, m, nf_settings):
    if numba != "0" and not numba_available():
        pytest.skip("numba not installed")
    nf_settings(numba=numba)
    x, w, b = _data(dtype, m, 24, 128)
    g = ACTIVATIONS[act]

    def layer(x, w, b):
        return g(tnp.matmul(x, w) + b)
    f = nf.function(layer)
    with np.errstate(all="ignore"):
        want = layer(tnp.asarray(x), tnp.asarray(w), tnp.asarray(b)).numpy()
        for _ in range(5):           # through tier 0, then (sync) the compiled tier
            _same(f(x, w, b).numpy(), want)
    cf = f.get_concrete_function(x, w, b)
    fused = [n for n in cf.graph.nodes if n.prim.fused]
    # bias add and activation: one pass over the product's result
    assert len(fused) == 1 and [n.prim for n in cf.graph.nodes if not n.prim.fused] == \
        [matmul_p]


def _grad_fn():
    def grads(x, w, b, y):
        with nf.GradientTape() as t:
            t.watch([w, b])
            h = _layer(x, w, b)
            loss = tnp.sum(tnp.square(h - y))
        return t.gradient(loss, [w, b])
    return grads


@pytest.mark.parametrize("numba", ["0", "sync"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [8, 256])
def test_relu_layer_gradients_equal_eager(monkeypatch, numba, dtype, m, nf_settings):
    """The relu gradient: exact at ties (0.5 each side at 0), NaN and -0.0, whether its
    region runs on tier 0 or compiled with the bias gradient's sum."""
    if numba != "0" and not numba_available():
        pytest.skip("numba not installed")
    nf_settings(numba=numba)
    x, w, b = _data(dtype, m, 24, 64, seed=3)
    b[:4] = 0.0
    x[1, :] = 0.0                  # rows whose pre-activation is the bias: ties at 0
    y = np.random.default_rng(4).standard_normal((m, 64)).astype(dtype)
    grads = _grad_fn()
    f = nf.function(grads)
    with np.errstate(all="ignore"):
        want = [g.numpy() for g in grads(*map(tnp.asarray, (x, w, b, y)))]
        for _ in range(5):
            for a, e in zip(f(x, w, b, y), want):
                _same(a.numpy(), e)


@needs_numba
def test_bias_gradient_sum_runs_in_the_compiled_region(monkeypatch, nf_settings):
    """The relu gradient's region keeps its sum over the batch (the bias gradient): tier 1
    adds the rows in NumPy's order (tests/test_tier1_sum.py; a sum in a layout it does not
    reproduce is split off instead, checked there)."""
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    x, w, b = _data(np.float32, 512, 32, 64, specials=False)
    y = np.zeros((512, 64), np.float32)
    f = nf.function(_grad_fn())
    for _ in range(4):
        f(x, w, b, y)
    cf = f.get_concrete_function(x, w, b, y)
    from ndflow.graph.fusion import fused_kernels
    from ndflow.primitives.reduction import reduce_sum_p
    ks = fused_kernels(cf.graph)
    assert ks and all(k.tier() == 1 for k in ks if k.prog.shape == (512, 64))
    assert any(o.reduce and o.prim is reduce_sum_p
               for k in ks for o in k.prog.ops if k.prog.shape == (512, 64))
    got = [np.asarray(v) for v in f(x, w, b, y)]
    nf_settings(numba="off")        # the same program on tier 0: NumPy's bits
    want = [np.asarray(v) for v in nf.function(_grad_fn())(x, w, b, y)]
    assert len(got) == len(want)
    for a, r in zip(got, want):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_array_equal(a.view(np.uint8), r.view(np.uint8))
    # with numba off the region keeps its sum (one tier-0 kernel, as before)
    nf_settings(numba="off")
    g = nf.function(_grad_fn())
    cg = g.get_concrete_function(x, w, b, y)
    assert any(o.reduce for k in fused_kernels(cg.graph) for o in k.prog.ops)


def test_transposes_reach_blas_as_views():
    """matmul(x.T, g) in a gradient: the transpose is a view, never a copy or a contiguous
    array made for the product; NumPy hands such 2-d operands to BLAS with its transpose
    flags."""
    x, w, b = _data(np.float32, 64, 32, 48, specials=False)
    y = np.zeros((64, 48), np.float32)
    cf = nf.function(_grad_fn()).get_concrete_function(x, w, b, y)
    producer = {o.id: n for n in cf.graph.nodes for o in n.outputs}
    mm = [n for n in cf.graph.nodes if n.prim is matmul_p]
    assert len(mm) >= 2
    seen_transpose = False
    for n in mm:
        for v in n.inputs:
            p = producer.get(v.id)
            if p is None:
                continue
            assert p.prim is not E.copy_p and "contiguous" not in p.prim.name
            if p.prim.name == "transpose":
                assert p.prim.returns_view
                seen_transpose = True
    assert seen_transpose
    # and at run time the operand is a view of the argument (no copy made)
    seen = []
    orig = matmul_p.impl

    def spy(a, c, *args, **kw):
        seen.append((a, c))
        return orig(a, c, *args, **kw)
    f = nf.function(_grad_fn())
    matmul_p.impl = spy
    try:
        f(x, w, b, y)
    finally:
        matmul_p.impl = orig
    assert any(np.shares_memory(a, x) and not a.flags.c_contiguous for a, _ in seen)


@needs_numba
def test_epilogue_writes_over_the_product_vectorized(monkeypatch, nf_settings):
    """A large product's bias+relu pass goes into the product's own buffer (a dead value);
    the compiled tier then stores through the operand (its in-place variant), not through a
    second name for the same memory, which LLVM would not vectorize."""
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    x, w, b = _data(np.float64, 96, 24, 128)
    f = nf.function(_layer)
    with np.errstate(all="ignore"):
        want = _layer(*map(tnp.asarray, (x, w, b))).numpy()
        for _ in range(5):
            _same(f(x, w, b).numpy(), want)
    cf = f.get_concrete_function(x, w, b)
    (node,) = [n for n in cf.graph.nodes if n.prim.fused]
    product = [n for n in cf.graph.nodes if n.prim is matmul_p][0].outputs[0]
    assert list(node.inputs).count(product) == 2        # read, and given as the result's buffer
    from ndflow.graph.fusion import fused_kernels
    (k,) = fused_kernels(cf.graph)
    assert k.tier() == 1 and k.runner.static_plan.variants
