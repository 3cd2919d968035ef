"""`tnp.fft` beyond the op table (tests/optable_fft.py): completeness over `numpy.fft`, NumPy's
dispatch to ndflow, the gradient convention on known closed forms, second-order gradients of
nonlinear losses through every FFT primitive, dtypes, `out=`, errors, and random shapes."""
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.primitives import fft as F

import optable
from optable_fft import FFT_LEFT_OUT
from helpers import assert_same

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ completeness
def _numpy_fft_callables():
    return sorted(n for n in dir(np.fft) if not n.startswith("_")
                  and callable(getattr(np.fft, n))
                  and not isinstance(getattr(np.fft, n), (types.ModuleType, type)))


def test_every_numpy_fft_function_is_implemented_and_recorded():
    have = optable.by_name()
    names = _numpy_fft_callables()
    missing = [n for n in names if n not in FFT_LEFT_OUT and not callable(getattr(tnp.fft, n, None))]
    unrecorded = [n for n in names if n not in FFT_LEFT_OUT and "fft." + n not in have]
    assert not missing, f"numpy.fft functions missing from tnp.fft: {missing}"
    assert not unrecorded, f"tnp.fft functions without an op-table record: {unrecorded}"
    assert set(FFT_LEFT_OUT) <= set(names), "left-out list names functions NumPy lacks"
    public = sorted(n for n in dir(tnp.fft) if not n.startswith("_") and
                    callable(getattr(tnp.fft, n)) and
                    getattr(getattr(tnp.fft, n), "__module__", "") == tnp.fft.__name__)
    assert public == sorted(tnp.fft.__all__), "tnp.fft.__all__ out of date"


def test_numpy_fft_dispatches_to_ndflow():
    x = tnp.asarray(np.random.default_rng(0).standard_normal((3, 8)))
    for name in ("fft", "rfft", "fftn", "rfft2", "fftshift", "ihfft"):
        r = getattr(np.fft, name)(x)
        assert isinstance(r, tnp.ndarray), f"np.fft.{name} on an ndflow array gave {type(r)}"
    with nf.GradientTape() as tape:      # through NumPy's API, still differentiable
        tape.watch(x)
        loss = tnp.sum(tnp.abs(np.fft.rfft(x)) ** 2)
    assert tape.gradient(loss, x).shape == (3, 8)


# ------------------------------------------------------------------ the gradient convention
def _grad(f, x):
    x = tnp.asarray(x)
    with nf.GradientTape() as tape:
        tape.watch(x)
        loss = f(x)
    return tape.gradient(loss, x).numpy()


@pytest.mark.parametrize("n", [7, 8])
def test_gradients_of_real_losses_match_closed_forms(n):
    """Parseval: sum |fft(x)|^2 = n sum x^2, so the gradient is 2 n x (also through a complex
    input); the energy of the rfft half spectrum counts each interior bin once; the gradient of
    Re(fft(x)[k]) is cos(2 pi j k / n), that of Im is -sin."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n)
    np.testing.assert_allclose(_grad(lambda v: tnp.sum(tnp.abs(tnp.fft.fft(v)) ** 2), x),
                               2 * n * x, rtol=1e-12)
    z = x + 1j * rng.standard_normal(n)
    re, im = tnp.asarray(z.real), tnp.asarray(z.imag)
    with nf.GradientTape() as tape:
        tape.watch([re, im])
        loss = tnp.sum(tnp.abs(tnp.fft.ifft(re + 1j * im, norm="ortho")) ** 2)
    g_re, g_im = tape.gradient(loss, [re, im])
    np.testing.assert_allclose(g_re.numpy(), 2 * z.real, rtol=1e-12)
    np.testing.assert_allclose(g_im.numpy(), 2 * z.imag, rtol=1e-12)
    w = np.ones(n // 2 + 1)
    w[1:(n + 1) // 2] = 2            # an interior bin stands for itself and its mirror image
    np.testing.assert_allclose(
        _grad(lambda v: tnp.sum(w * tnp.abs(tnp.fft.rfft(v)) ** 2), x), 2 * n * x, rtol=1e-12)
    j = np.arange(n)
    for k in range(n):
        np.testing.assert_allclose(_grad(lambda v: tnp.real(tnp.fft.fft(v)[k]), x),
                                   np.cos(2 * np.pi * j * k / n), atol=1e-12)
        np.testing.assert_allclose(_grad(lambda v: tnp.imag(tnp.fft.rfft(v)[k // 2]), x),
                                   -np.sin(2 * np.pi * j * (k // 2) / n), atol=1e-12)


def _hvp_check(f, x, rng):
    """Hessian-vector product of the real loss f from nested tapes against differences of
    gradients."""
    d1, d2 = rng.standard_normal(x.shape), rng.standard_normal(x.shape)

    def grad_dot(v):
        v = tnp.asarray(v)
        with nf.GradientTape() as outer:
            outer.watch(v)
            with nf.GradientTape() as inner:
                inner.watch(v)
                loss = f(v)
            gd = tnp.sum(inner.gradient(loss, v) * d2)
        return float(gd.numpy()), outer.gradient(gd, v).numpy()
    _, hv = grad_dot(x)
    h = 1e-5
    numeric = (grad_dot(x + h * d1)[0] - grad_dot(x - h * d1)[0]) / (2 * h)
    analytic = float(np.sum(hv * d1))
    assert abs(analytic - numeric) <= 1e-5 * (1 + abs(numeric)), (analytic, numeric)


_NONLINEAR = {
    "fft": lambda v: tnp.sum(tnp.abs(tnp.fft.fft(v, n=9, norm="ortho")) ** 3),
    "ifft": lambda v: tnp.sum(tnp.real(tnp.fft.ifft(v * (1 + 2j))) ** 3),
    "rfft": lambda v: tnp.sum(tnp.imag(tnp.fft.rfft(v, axis=0)) ** 3),
    "irfft": lambda v: tnp.sum(tnp.fft.irfft(v * (1 - 1j), n=7, axis=0) ** 3),
    "hfft": lambda v: tnp.sum(tnp.fft.hfft(v + 0.5j * v ** 2, norm="forward") ** 3),
    "rfftn": lambda v: tnp.sum(tnp.abs(tnp.fft.rfftn(v, s=(5, 4), axes=(0, 1))) ** 3),
    "irfft2": lambda v: tnp.sum(tnp.sin(tnp.fft.irfft2(v + 1j * v))),
    "fftshift": lambda v: tnp.sum(tnp.fft.fftshift(v) ** 3 * tnp.arange(v.size).reshape(v.shape)),
}


@pytest.mark.parametrize("name", sorted(_NONLINEAR))
def test_second_order_gradients_of_nonlinear_losses(name):
    rng = np.random.default_rng(len(name))
    _hvp_check(_NONLINEAR[name], rng.standard_normal((6, 3)), rng)


def test_vjps_use_the_fft_primitives_at_every_order():
    """The transposes stay within the four primitives (no host round trip, no loop)."""
    x = tnp.asarray(np.random.default_rng(1).standard_normal((4, 6)))

    @nf.function
    def g(v):
        with nf.GradientTape() as t2:
            t2.watch(v)
            with nf.GradientTape() as t1:
                t1.watch(v)
                loss = tnp.sum(tnp.fft.irfft(tnp.fft.rfft(v, n=8) ** 2, n=5) ** 2)
            gv = t1.gradient(loss, v)
            s = tnp.sum(gv * gv)
        return t2.gradient(s, v)
    cf = g.get_concrete_function(x)
    prims = {n.prim.name for n in cf.graph.nodes}
    assert {"rfft", "irfft", "fft_resize"} <= prims
    assert not prims & {"numpy_function", "numpy_function_multi"}


# ------------------------------------------------------------------ dtypes, out=, errors
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn",
                                  "irfftn", "rfft2"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64,
                                   np.complex128, np.int32, np.bool_])
def test_result_dtypes_follow_numpy2(name, dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    try:
        want = getattr(np.fft, name)(a)
    except TypeError:
        with pytest.raises(TypeError):
            getattr(tnp.fft, name)(tnp.asarray(a))
        return
    got = getattr(tnp.fft, name)(tnp.asarray(a))
    tol = 2e-3 if dtype == np.float16 else 1e-5   # NumPy scales float16 by a float16 factor
    assert_same(got, want, tol, tol, ctx=f"{name}({np.dtype(dtype)})")


def test_out_is_filled_and_returned():
    x = np.random.default_rng(2).standard_normal((3, 8))
    out = tnp.zeros((3, 5), dtype=np.complex128)
    r = tnp.fft.rfft(tnp.asarray(x), out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), np.fft.rfft(x), rtol=1e-12)
    out = tnp.zeros((3, 8))
    assert tnp.fft.irfft2(tnp.fft.rfft2(tnp.asarray(x)), s=(3, 8), out=out) is out
    np.testing.assert_allclose(out.numpy(), x, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="wrong shape"):
        tnp.fft.fft(tnp.asarray(x), out=tnp.zeros((3, 7), dtype=np.complex128))
    with pytest.raises(TypeError, match="Cannot cast"):
        tnp.fft.fft(tnp.asarray(x), out=tnp.zeros((3, 8)))


@pytest.mark.parametrize("call,exc", [
    (lambda m, x: m.fft.fft(x, n=0), ValueError),
    (lambda m, x: m.fft.fft(x, norm="unitary"), ValueError),
    (lambda m, x: m.fft.rfft(x + 1j), TypeError),
    (lambda m, x: m.fft.ihfft(x + 1j), TypeError),
    (lambda m, x: m.fft.irfft(x[:, :1]), ValueError),
    (lambda m, x: m.fft.fft(x, axis=2), IndexError),
    (lambda m, x: m.fft.fft(x[0, 0]), IndexError),
    (lambda m, x: m.fft.fftn(x, s=(3,), axes=(0, 1)), ValueError),
    (lambda m, x: m.fft.fftfreq(2.5), ValueError),
])
def test_errors_match_numpy(call, exc):
    x = np.ones((3, 4))
    with pytest.raises(exc):
        call(np, x)
    with pytest.raises(exc):
        call(tnp, tnp.asarray(x))


def test_numpy_deprecations_are_mirrored():
    x = np.ones((3, 4))
    for m, a in ((np, x), (tnp, tnp.asarray(x))):
        with pytest.warns(DeprecationWarning, match="axes"):
            m.fft.fftn(a, s=(2, 2))
        with pytest.warns(DeprecationWarning, match="None"):
            m.fft.fftn(a, s=(None, 3), axes=(0, 1))


def test_unknown_sizes_with_whole_last_axis_is_a_clear_error():
    f = nf.function(lambda z: tnp.fft.irfftn(z, s=(2, -1), axes=(0, 1)),
                    input_signature=[nf.TensorSpec([None, None], np.complex128)])
    with pytest.raises(ValueError, match="unknown while tracing"):
        f(tnp.ones((3, 4), dtype=np.complex128))


def test_function_draws_no_stale_sizes():
    """One trace with unknown sizes serves every length (odd and even, so irfft's default and
    the shifts are decided at run time)."""
    f = nf.function(lambda x: (tnp.fft.fftshift(tnp.fft.irfft(tnp.fft.rfft(x) * 2)),
                               tnp.fft.ifftshift(x)),
                    input_signature=[nf.TensorSpec([None], np.float64)])
    for n in (5, 6, 1 + 8):
        x = np.random.default_rng(n).standard_normal(n)
        a, b = f(tnp.asarray(x))
        np.testing.assert_allclose(a.numpy(), np.fft.fftshift(np.fft.irfft(np.fft.rfft(x) * 2)),
                                   atol=1e-12)
        np.testing.assert_allclose(b.numpy(), np.fft.ifftshift(x))
    assert f.experimental_get_tracing_count() == 1


# ------------------------------------------------------------------ random shapes
@st.composite
def _fft_case(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    axis = draw(st.integers(-ndim, ndim - 1))
    n = draw(st.one_of(st.none(), st.integers(1, 9)))
    norm = draw(st.sampled_from([None, "backward", "ortho", "forward"]))
    name = draw(st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]))
    return shape, axis, n, norm, name, np.dtype(dtype)


@SETTINGS
@given(_fft_case())
def test_one_dimensional_transforms_on_random_shapes(case):
    shape, axis, n, norm, name, dtype = case
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape)
    if dtype.kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    try:
        want = getattr(np.fft, name)(a, n=n, axis=axis, norm=norm)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            getattr(tnp.fft, name)(tnp.asarray(a), n=n, axis=axis, norm=norm)
        return
    got = getattr(tnp.fft, name)(tnp.asarray(a), n=n, axis=axis, norm=norm)
    tol = 1e-4 if dtype.itemsize <= 8 and dtype != np.float64 else 1e-10
    assert_same(got, want, tol, tol, ctx=f"{name}{shape} n={n} axis={axis} norm={norm}")


@SETTINGS
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_n_dimensional_transforms_on_random_shapes(shape, data):
    ndim = len(shape)
    axes = data.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim,
                              unique=True))
    s = data.draw(st.one_of(st.none(), st.lists(st.integers(1, 6), min_size=len(axes),
                                                max_size=len(axes))))
    name = data.draw(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn"]))
    a = np.random.default_rng(1).standard_normal(shape)
    if name != "rfftn":
        a = a + 0.5j * a[..., ::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            want = getattr(np.fft, name)(a, s=s, axes=axes)
        except ValueError as e:
            with pytest.raises(type(e)):
                getattr(tnp.fft, name)(tnp.asarray(a), s=s, axes=axes)
            return
    got = getattr(tnp.fft, name)(tnp.asarray(a), s=s, axes=axes)
    assert_same(got, want, 1e-10, 1e-10, ctx=f"{name}{tuple(shape)} s={s} axes={axes}")


def test_primitive_rules_are_declared():
    for p in (F.fft_p, F.rfft_p, F.irfft_p, F.resize_p):
        assert p.vjp is not None and p.batch is not None and p.abstract is not None, p
