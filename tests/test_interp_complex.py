"""interp with a complex `fp`: NumPy interpolates the real and imaginary parts each as a real
interp, so an infinite or NaN part stays in its part (inf+0.5j, where complex arithmetic gives
NaN); a NaN x gives NaN+0j; the result is complex128. Compared bit-carefully (signed zeros,
infinities, NaN positions) with NumPy, eagerly and compiled; and the complex constructor it
uses (`complex_from_parts`) on every pair of special values."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.numpy.special import complex_from_parts

_PARTS = [0.0, -0.0, 1.0, -2.0, 1e-300, -5e-324, np.inf, -np.inf, np.nan]


def _same_part(g, w):
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), (g, w)
    assert np.array_equal(g[~nan], w[~nan]), (g, w)
    assert np.array_equal(np.signbit(g[~nan]), np.signbit(w[~nan])), (g, w)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_from_parts_is_exact(dt):
    re, im = (a.ravel() for a in np.meshgrid(_PARTS, _PARTS))
    rdt = np.empty((), dt).real.dtype
    want = np.empty(re.size, dt)
    want.real, want.imag = re, im
    for got in (complex_from_parts(tnp.asarray(re.astype(rdt)), tnp.asarray(im.astype(rdt)), dt),
                nf.function(lambda a, b: complex_from_parts(a, b, dt))(
                    tnp.asarray(re.astype(rdt)), tnp.asarray(im.astype(rdt)))):
        g = got.numpy()
        assert g.dtype == want.dtype
        _same_part(g.real, want.real)
        _same_part(g.imag, want.imag)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(1, 4), st.lists(st.sampled_from(_PARTS), min_size=8, max_size=8),
       st.sampled_from([np.complex64, np.complex128]))
def test_interp_complex_fp_as_numpy(n, parts, dt):
    xp = np.arange(n, dtype=float)
    fp = np.empty(n, dt)
    fp.real, fp.imag = parts[:n], parts[4:4 + n]
    x = np.array([-1, 0, 0.25, 0.5, 1, 1.5, 2, 3, np.nan, np.inf, -np.inf])
    with np.errstate(all="ignore"):
        want = np.interp(x, xp, fp)
    for got in (tnp.interp(tnp.asarray(x), tnp.asarray(xp), tnp.asarray(fp)),
                nf.function(lambda a: tnp.interp(a, tnp.asarray(xp), tnp.asarray(fp)))(
                    tnp.asarray(x))):
        g = got.numpy()
        assert g.dtype == want.dtype
        _same_part(g.real, want.real)
        _same_part(g.imag, want.imag)


def test_interp_complex_left_right_and_gradient():
    fp = np.array([1 + 1j, 2 + 2j])
    x = np.array([-1.0, 0.5, 2.0])
    want = np.interp(x, [0.0, 1.0], fp, left=5, right=3 - 1j)
    got = tnp.interp(tnp.asarray(x), tnp.asarray([0.0, 1.0]), tnp.asarray(fp), left=5,
                     right=3 - 1j)
    np.testing.assert_array_equal(got.numpy(), want)
    xs = tnp.asarray(x[1:2])
    with nf.GradientTape() as tape:
        tape.watch(xs)
        y = tnp.interp(xs, tnp.asarray([0.0, 1.0]), tnp.asarray(fp))
        loss = tnp.sum(tnp.real(y) + 3 * tnp.imag(y))
    np.testing.assert_allclose(tape.gradient(loss, xs).numpy(), [1.0 + 3.0])
