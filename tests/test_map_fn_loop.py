"""Traced `map_fn` is one loop op (a scan over the elements), not a copy of the body per
element; its results and gradients equal eager map_fn's bit for bit."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def _graph_names(f, *args):
    return [n.prim.name for n in f.get_concrete_function(*args).graph.nodes]


def _per_example_grads(x, labels, w1, b, w2):
    weights = [w1, b, w2]

    def one(arg):
        inp, label = arg
        with nf.GradientTape() as tape:
            tape.watch(weights)
            h = tnp.maximum(tnp.matmul(tnp.expand_dims(inp, 0), weights[0]) + weights[1], 0)
            loss = tnp.sum(tnp.square(tnp.matmul(h, weights[2]) - tnp.expand_dims(label, 0)))
        return tuple(tape.gradient(loss, weights))
    return nf.map_fn(one, (x, labels), fn_output_signature=(tnp.float32,) * 3)


@pytest.fixture
def mlp(rng):
    return [rng.standard_normal(s).astype(np.float32) for s in
            ((64, 32), (64, 2), (32, 16), (16,), (16, 2))]


def test_per_example_grads_one_loop_and_equal_to_eager(mlp):
    eager = _per_example_grads(*[tnp.asarray(a) for a in mlp])
    f = nf.function(_per_example_grads)
    names = _graph_names(f, *mlp)
    assert names.count("scan") == 1
    assert len(names) < 10, names          # unrolled: ~17 nodes per element
    got = f(*mlp)
    for g, e in zip(got, eager):
        assert g.dtype == e.dtype and g.shape == e.shape == (64,) + e.shape[1:]
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_gradient_through_compiled_map_fn_equals_eager(rng):
    x = rng.standard_normal((7, 3))
    w = rng.standard_normal(3)

    def loss(x, w):
        ys = nf.map_fn(lambda e: tnp.sin(e) * w + tnp.sum(e * e), x)
        return tnp.sum(ys * ys)

    def grads(x, w):
        with nf.GradientTape() as tape:
            tape.watch([x, w])
            out = loss(x, w)
        return tape.gradient(out, [x, w])
    want = grads(tnp.asarray(x), tnp.asarray(w))
    f = nf.function(grads)
    assert "scan" in _graph_names(f, x, w)
    for g, e in zip(f(x, w), want):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
    # second order through the loop
    h = nf.function(lambda x, w: nf.grad(lambda w: tnp.sum(nf.grad(lambda w: loss(x, w))(w)))(w))
    he = nf.grad(lambda w: tnp.sum(nf.grad(lambda w: loss(tnp.asarray(x), w))(w)))(tnp.asarray(w))
    np.testing.assert_allclose(h(x, w).numpy(), he.numpy(), rtol=1e-12)


def test_structures_signature_and_unknown_length(rng):
    a = rng.standard_normal((5, 2))
    b = np.arange(5, dtype=np.int32)

    def f(a, b):
        return nf.map_fn(lambda t: {"s": t[0] * 2, "n": t[1] + 1}, (a, b)), \
            nf.map_fn(lambda t: t * 2, b, fn_output_signature=tnp.float64)
    (d, c) = nf.function(f)(a, b)
    (de, ce) = f(tnp.asarray(a), tnp.asarray(b))
    assert set(d) == {"s", "n"}
    for k in d:
        assert d[k].dtype == de[k].dtype
        np.testing.assert_array_equal(d[k].numpy(), de[k].numpy())
    assert c.dtype == ce.dtype == np.float64
    np.testing.assert_array_equal(c.numpy(), ce.numpy())

    g = nf.function(lambda x: nf.map_fn(lambda e: tnp.cumsum(e), x),
                    input_signature=[nf.TensorSpec([None, 3], tnp.float64)])
    for n in (0, 1, 6):
        x = rng.standard_normal((n, 3))
        out = g(x)
        assert out.shape == (n, 3)
        np.testing.assert_array_equal(out.numpy(), np.cumsum(x, axis=1))


def test_map_fn_inside_vectorized_map(rng):
    x = rng.standard_normal((4, 5, 3))
    out = nf.vectorized_map(lambda m: nf.map_fn(lambda r: tnp.sum(r * r), m), tnp.asarray(x))
    np.testing.assert_allclose(out.numpy(), np.sum(x * x, axis=2), rtol=1e-15)
