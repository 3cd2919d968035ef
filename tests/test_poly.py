"""Polynomials, convolution and windows beyond the op table: gradients where the op table's
finite differences cannot go, host-side functions, rank warnings, large convolutions."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.numpy.windows import _i0
from helpers import assert_same


def _grad(f, *arrays):
    xs = [tnp.asarray(a) for a in arrays]
    with nf.GradientTape() as tape:
        tape.watch(xs)
        loss = f(*xs)
    return [g.numpy() for g in tape.gradient(loss, xs)]


def _numeric(f, *arrays, eps=1e-6):
    out = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for i in np.ndindex(*a.shape):
            hi = [b.copy() for b in arrays]
            lo = [b.copy() for b in arrays]
            hi[k][i] += eps
            lo[k][i] -= eps
            g[i] = (f(*hi) - f(*lo)) / (2 * eps)
        out.append(g)
    return out


def test_polymul_gradient_with_leading_zeros():
    tail = np.array([1.5, -2.0])
    b = np.array([0.5, 3.0, 1.0])
    w = np.arange(1.0, 5.0)

    def loss_np(t, y):      # the leading zeros stay zeros: the same trimming throughout
        return float((np.polymul(np.concatenate([[0.0, 0.0], t]), y) * w).sum())
    got = _grad(lambda t, y: tnp.sum(tnp.polymul(tnp.concatenate([tnp.zeros(2), t]), y) * w),
                tail, b)
    for g, n in zip(got, _numeric(loss_np, tail, b)):
        np.testing.assert_allclose(g, n, rtol=1e-6)


def test_roots_and_poly_of_a_matrix_on_the_host():
    for p in ([1.0, -3.0, 2.0], [1.0, 0.0, 1.0], [0.0, 2.0, -4.0, 0.0], [3.0]):
        assert_same(tnp.roots(tnp.asarray(p)), np.roots(p), 1e-12, 1e-12)
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert_same(tnp.poly(tnp.asarray(m)), np.poly(m), 1e-12, 1e-12)
    with pytest.raises(nf.TracingError):
        nf.function(tnp.roots)(tnp.asarray([1.0, 2.0]))


def test_poly_of_complex_conjugate_roots_is_real():
    z = np.array([1 + 2j, 1 - 2j, 3.0])
    assert_same(tnp.poly(tnp.asarray(z)), np.poly(z), 1e-12, 1e-12)
    z2 = np.array([1 + 2j, 2 - 2j])
    assert_same(tnp.poly(tnp.asarray(z2)), np.poly(z2), 1e-12, 1e-12)


def test_poly_gradient_in_the_roots():
    r = np.array([0.5, -1.5, 2.0])
    got = _grad(lambda z: tnp.sum(tnp.poly(z) * tnp.arange(4.0)), r)[0]
    num = _numeric(lambda z: float((np.poly(z) * np.arange(4.0)).sum()), r)[0]
    np.testing.assert_allclose(got, num, rtol=1e-6)


def test_polyfit_full_and_rank_warning():
    x = np.linspace(0, 1, 7)
    y = np.cos(3 * x)
    for got, want in zip(tnp.polyfit(tnp.asarray(x), tnp.asarray(y), 2, full=True),
                         np.polyfit(x, y, 2, full=True)):
        assert_same(got, want, 1e-9, 1e-12, ndflow_type=not isinstance(want, np.generic))
    xs = np.array([1.0, 1.0, 1.0, 2.0])
    with pytest.warns(np.exceptions.RankWarning):
        np.polyfit(xs, xs, 3)
    with pytest.warns(np.exceptions.RankWarning):
        tnp.polyfit(tnp.asarray(xs), tnp.asarray(xs), 3)


def test_polyfit_gradient_in_y_is_the_projection():
    x = np.linspace(-1, 1, 6)
    y = np.sin(2 * x)
    w = np.array([1.0, -2.0, 0.5])
    got = _grad(lambda yy: tnp.sum(tnp.polyfit(tnp.asarray(x), yy, 2) * w), y)[0]
    num = _numeric(lambda yy: float((np.polyfit(x, yy, 2) * w).sum()), y)[0]
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-9)


def test_polydiv_traced_strips_only_what_division_zeroes():
    u, v = np.array([1.0, 3.0, 3.0, 1.0]), np.array([1.0, 1.0])
    q, r = nf.function(tnp.polydiv)(tnp.asarray(u), tnp.asarray(v))
    wq, wr = np.polydiv(u, v)
    assert_same(q, wq, 1e-12, 1e-12)
    assert_same(r, wr, 1e-12, 1e-12)


def test_convolve_large_inputs_in_blocks():
    a = np.random.default_rng(0).standard_normal(3000)
    v = np.random.default_rng(1).standard_normal(1500)
    for mode in ("full", "same", "valid"):
        assert_same(tnp.convolve(tnp.asarray(a), tnp.asarray(v), mode), np.convolve(a, v, mode),
                    1e-9, 1e-9)
    assert_same(tnp.correlate(tnp.asarray(v), tnp.asarray(a), "same"),
                np.correlate(v, a, "same"), 1e-9, 1e-9)


def test_convolve_full_with_unknown_sizes_and_batched():
    a, v = np.arange(1.0, 6.0), np.array([2.0, -1.0, 0.5])
    f = nf.function(lambda x, y: tnp.convolve(x, y),
                    input_signature=[nf.TensorSpec([None], np.float64)] * 2)
    assert_same(f(tnp.asarray(a), tnp.asarray(v)), np.convolve(a, v), 1e-12, 1e-12)
    assert_same(f(tnp.asarray(v), tnp.asarray(a)), np.convolve(v, a), 1e-12, 1e-12)
    batch = np.stack([a, 2 * a])
    got = nf.vectorized_map(lambda x: tnp.correlate(x, tnp.asarray(v), "same"),
                            tnp.asarray(batch))
    assert_same(got, np.stack([np.correlate(b, v, "same") for b in batch]), 1e-12, 1e-12)


def test_i0_matches_numpy_over_its_range():
    x = np.concatenate([np.linspace(-40, 40, 321), [0.0, 1e-8, 29.999, 30.0, 30.001, 700.0]])
    np.testing.assert_allclose(_i0(tnp.asarray(x)).numpy(), np.i0(x), rtol=1e-13)


def test_kaiser_gradient_in_beta():
    beta = np.array(4.0)
    got = _grad(lambda b: tnp.sum(tnp.kaiser(9, b) * tnp.arange(9.0)), beta)[0]
    num = _numeric(lambda b: float((np.kaiser(9, float(b)) * np.arange(9.0)).sum()), beta)[0]
    np.testing.assert_allclose(got, num, rtol=1e-6)


def test_windows_follow_prefer_float32():
    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    assert tnp.hanning(5).dtype == np.float32 and tnp.kaiser(5, 2.0).dtype == np.float32
