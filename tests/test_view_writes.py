"""Writes through views are never lost: every operation that returns a view in NumPy (`.real`,
`.imag`, `.T`, transpose, swapaxes, moveaxis, reshape/ravel when a view, squeeze, expand_dims,
slices with steps, `view()` and `view(dtype)`, `astype(copy=False)`, `flat`, one-operand einsum, slices with
run-time bounds) writes into its base on every path (eager, under a tape, in nf.function, in
vectorized_map, and their combinations), as NumPy; a view NumPy makes read-only (`diagonal`,
`broadcast_to`, a real array's `.imag`) raises NumPy's ValueError on every path; a view a path
cannot follow raises an error naming the operation. NumPy is the oracle for the base's values
after the write and for what the function returns; gradients through the writes are checked
numerically."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import mutation as _mut
from ndflow.core.primitive import REGISTRY
from ndflow.primitives import elementwise as E

pytestmark = [pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]


def _mod(z):
    return np if isinstance(z, np.ndarray) else tnp


def _cplx(shape=(2, 3), dtype=np.complex128):
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) + 1j * np.arange(n, 2 * n).reshape(shape)).astype(dtype)


def _real(shape=(2, 3), dtype=np.float64):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# name -> (the base, NumPy, the view of z)
VIEWS = {
    "real": (_cplx, lambda z: z.real),
    "imag": (_cplx, lambda z: z.imag),
    "real_c64": (lambda: _cplx(dtype=np.complex64), lambda z: z.real),
    "imag_c64": (lambda: _cplx(dtype=np.complex64), lambda z: z.imag),
    "real_of_real": (_real, lambda z: z.real),
    "real_0d": (lambda: np.array(1.5 - 2j), lambda z: z.real),
    "imag_0d": (lambda: np.array(1.5 - 2j), lambda z: z.imag),
    "real_empty": (lambda: _cplx((0, 3)), lambda z: z.real),
    "T.real": (_cplx, lambda z: z.T.real),
    "imag.T": (_cplx, lambda z: z.imag.T),
    "real.reshape": (_cplx, lambda z: z.real.reshape(6)),
    "real[::2]": (_cplx, lambda z: z.real[:, ::2]),
    "T": (_real, lambda z: z.T),
    "T_0d": (lambda: np.array(3.0), lambda z: z.T),
    "transpose": (lambda: _real((2, 3, 2)), lambda z: z.transpose(2, 0, 1)),
    "swapaxes": (_real, lambda z: z.swapaxes(0, 1)),
    "moveaxis": (lambda: _real((2, 3, 2)), lambda z: _mod(z).moveaxis(z, 0, -1)),
    "reshape": (_real, lambda z: z.reshape(3, 2)),
    "reshape_empty": (lambda: _real((0, 4)), lambda z: z.reshape(2, 0, 2)),
    "ravel": (_real, lambda z: z.ravel()),
    "squeeze": (lambda: _real((1, 3, 1)), lambda z: z.squeeze()),
    "expand_dims": (_real, lambda z: _mod(z).expand_dims(z, 1)),
    "expand_dims_0d": (lambda: np.array(2.0), lambda z: _mod(z).expand_dims(z, 0)),
    "T.expand_dims": (_real, lambda z: _mod(z).expand_dims(z.T, 0)),
    "step_slice": (lambda: _real((4, 3)), lambda z: z[::2, ::-1]),
    "step.reshape_view": (lambda: _real((4, 3)), lambda z: z[::2].reshape(2, 1, 3)),
    "view": (_real, lambda z: z.view()),
    "astype_nocopy": (_real, lambda z: z.astype(z.dtype, copy=False)),
    "view_int64": (_real, lambda z: z.view(np.int64)),
    "view_int32": (_real, lambda z: z.view(np.int32)),
    "view_int32_0d": (lambda: np.array(2.5, np.float32), lambda z: z.view(np.int32)),
    "T.view_int64": (_real, lambda z: z.T.view(np.int64)),
    "view_complex": (lambda: _real((2, 4)), lambda z: z.view(np.complex128)),
    "einsum_ji": (_real, lambda z: _mod(z).einsum("ij->ji", z)),
    "conj_of_real": (_real, lambda z: z.conj()),
    # copies in NumPy: the base must not change
    "T.reshape_copy": (_real, lambda z: z.T.reshape(6)),
    "step.ravel_copy": (lambda: _real((4, 3)), lambda z: z[::2].ravel()),
    "einsum_sum": (_real, lambda z: _mod(z).einsum("ij->i", z)),
}

READ_ONLY = {
    "diagonal": (_real, lambda z: z.diagonal()),
    "broadcast_to": (lambda: _real((3,)), lambda z: _mod(z).broadcast_to(z, (2, 3))),
    "imag_of_real": (_real, lambda z: z.imag),
    "imag_of_real_0d": (lambda: np.array(2.0), lambda z: z.imag),
    "broadcast_to_same_shape": (_real, lambda z: _mod(z).broadcast_to(z, z.shape)),
    "sliding_window_view": (lambda: _real((5,)), lambda z: (
        np.lib.stride_tricks if isinstance(z, np.ndarray) else tnp.lib.stride_tricks
    ).sliding_window_view(z, 2)),
}


def _write(v, kind):
    if kind == "item":
        v[(0,) * v.ndim] = 7
    elif kind == "slice":
        v[...] = -0.5
    else:
        v += 3
    return v


def _body(make_view, kind):
    def body(z):
        v = _write(make_view(z), kind)
        return v * 1, z * 1
    return body


def _function(f):
    return nf.function(f)


def _taped(f):
    def run(z):
        with nf.GradientTape() as t:
            t.watch(z)
            return f(z)
    return run


PATHS = {
    "eager": lambda f: f,
    "tape": _taped,
    "function": _function,
    "tape(function)": lambda f: _taped(_function(f)),
    "function(tape)": lambda f: _function(_taped(f)),
}
WRITES = ("item", "slice", "iadd")


def _check(got, want):
    got = got.numpy() if isinstance(got, tnp.ndarray) else np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", VIEWS)
def test_write_through_a_view_reaches_the_base(name, path):
    make, view = VIEWS[name]
    for kind in WRITES:
        if view(make()).size == 0 and kind == "item":
            continue
        zn = make()
        want = _body(view, kind)(zn)
        z = tnp.asarray(make())
        got = PATHS[path](_body(view, kind))(z)
        _check(z, zn)
        for g, w in zip(got, want):
            _check(g, w)


def _mapped(f):
    return lambda zs: nf.vectorized_map(f, zs)


MAPPED = {
    "vmap": _mapped,
    "function(vmap)": lambda f: _function(_mapped(f)),
    "vmap(function)": lambda f: _mapped(_function(f)),
}


@pytest.mark.parametrize("path", MAPPED)
@pytest.mark.parametrize("name", [n for n in VIEWS if "empty" not in n])
def test_write_through_a_view_in_vectorized_map(name, path):
    """A mapped argument written through a view is written back, as a loop over the
    examples (views of the caller's array) would."""
    make, view = VIEWS[name]
    for kind in WRITES:
        zn = np.stack([make(), make() * 2])
        want = [_body(view, kind)(zn[k, ...]) for k in range(2)]
        z = tnp.asarray(np.stack([make(), make() * 2]))
        got = MAPPED[path](_body(view, kind))(z)
        _check(z, zn)
        for g, w in zip(got, zip(*want)):
            _check(g, np.stack(w))


@pytest.mark.parametrize("path", list(PATHS) + list(MAPPED))
@pytest.mark.parametrize("name", READ_ONLY)
def test_read_only_views_raise_numpys_error(name, path):
    make, view = READ_ONLY[name]
    for kind in WRITES:
        with pytest.raises(ValueError, match="read-only"):
            _body(view, kind)(make())                # NumPy's own error
        z = tnp.asarray(np.stack([make()] * 2) if path in MAPPED else make())
        before = z.numpy().copy()
        wrap = MAPPED.get(path) or PATHS[path]
        with pytest.raises(ValueError, match="read-only"):
            wrap(_body(view, kind))(z)
        _check(z, before)


# ------------------------------------------------------------------ exact parts
def _specials():
    re = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0])
    im = np.array([-0.0, np.inf, 0.0, np.nan, -np.inf, -2.0])
    z = np.empty(6, complex)
    z.real, z.imag = re, im
    return z


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("part", ["real", "imag"])
def test_writing_a_part_keeps_the_other_part_bit_for_bit(part, path):
    """The base is rebuilt from the written part exactly: the other part's signed zeros,
    infinities and NaNs stay (`v + 1j * z.imag` would turn inf into NaN)."""
    def f(z):
        p = getattr(z, part)
        p[::2] = -0.0
        p[1] += 1
        return z * 1

    zn = _specials()
    f(zn)
    z = tnp.asarray(_specials())
    PATHS[path](f)(z)
    assert z.numpy().tobytes() == zn.tobytes(), (z.numpy(), zn)


@pytest.mark.parametrize("path", list(PATHS) + list(MAPPED))
def test_setting_the_part_attributes(path):
    """`z.real = v` / `z.imag = v` write z on every path (they were refused under tapes,
    nf.function and vectorized_map); a real array has no imaginary part to set."""
    def f(z):
        z.real = 2.5
        z.imag = z.real * -3
        return z * 1

    mapped = path in MAPPED
    zn = np.stack([_cplx()] * 2) if mapped else _cplx()
    want = f(zn.copy())
    f(zn)
    z = tnp.asarray(np.stack([_cplx()] * 2) if mapped else _cplx())
    got = (MAPPED.get(path) or PATHS[path])(f)(z)
    _check(z, zn)
    _check(got, want)
    r = tnp.asarray(_real())
    with pytest.raises(TypeError, match="imaginary part"):
        r.imag = 1.0
    with pytest.raises(TypeError, match="imaginary part"):
        np.zeros(3).imag = 1.0
    r.real = 4.0
    _check(r, np.full((2, 3), 4.0))


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(0, 3), cols=st.integers(1, 4), start=st.integers(-4, 4),
       step=st.sampled_from([1, 2, -1, -2]), part=st.sampled_from(["real", "imag"]),
       value=st.sampled_from([0.0, -0.0, 2.5, np.inf, np.nan]))
def test_part_slice_writes_match_numpy(rows, cols, start, step, part, value):
    def f(z):
        v = getattr(z, part)[:, start::step]
        v += value
        v[...] = v * 2
        return z * 1

    zn = _cplx((rows, cols))
    with np.errstate(invalid="ignore"):
        f(zn)
        for path in ("function", "tape"):
            z = tnp.asarray(_cplx((rows, cols)))
            PATHS[path](f)(z)
            assert z.numpy().tobytes() == zn.tobytes(), (path, z.numpy(), zn)


# ------------------------------------------------------------------ gradients
_RNG = np.random.default_rng(0)
_Z = _RNG.normal(size=(2, 3)) + 1j * _RNG.normal(size=(2, 3))
_W = _RNG.normal(size=(3,))

_KINDS = {
    "real_item": lambda y, w, m: y.real.__setitem__(0, w * 2),
    "real_iadd": lambda y, w, m: y.real.__iadd__(w),
    "imag_item": lambda y, w, m: y.imag.__setitem__(1, m.sin(w)),
    "imag_iadd": lambda y, w, m: y.imag[:, 1:].__iadd__(w[1:] * 3),
    "attr_real": lambda y, w, m: setattr(y, "real", w),
    "attr_imag": lambda y, w, m: setattr(y, "imag", w * w),
    "T.real": lambda y, w, m: y.T.real.__setitem__(1, w[:2]),
}


def _loss(z, w, kind):
    m = _mod(z)
    y = z * (1.5 - 0.5j)
    _KINDS[kind](y, w, m)
    return m.sum(m.abs(y) ** 2 * m.arange(1, 7).reshape(2, 3)) + m.sum(m.real(y * y))


def _numeric(f, x, eps=1e-6):
    """d f / d x numerically; for complex x the library's convention (JAX's): df/dre - i df/dim."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for unit in ((1, 1j) if np.iscomplexobj(x) else (1,)):
            xp, xm = x.copy(), x.copy()
            xp[i] += eps * unit
            xm[i] -= eps * unit
            d = (f(xp) - f(xm)) / (2 * eps)
            g[i] += d if unit == 1 else -1j * d
    return g


def _taped_grad(kind):
    def run(z, w):
        with nf.GradientTape() as t:
            t.watch([z, w])
            loss = _loss(z, w, kind)
        return t.gradient(loss, [z, w]), loss
    return run


def _grad_of_function(kind):
    f = nf.function(lambda z, w: _loss(z, w, kind))

    def run(z, w):
        with nf.GradientTape() as t:
            t.watch([z, w])
            loss = f(z, w)
        return t.gradient(loss, [z, w]), loss
    return run


GRAD_PATHS = {
    "tape": _taped_grad,
    "function(tape)": lambda kind: nf.function(_taped_grad(kind)),
    "tape(function)": _grad_of_function,
}


@pytest.mark.parametrize("path", GRAD_PATHS)
@pytest.mark.parametrize("kind", _KINDS)
def test_gradients_through_part_writes_are_numerical(kind, path):
    (gz, gw), loss = GRAD_PATHS[path](kind)(tnp.asarray(_Z), tnp.asarray(_W))
    np.testing.assert_allclose(loss.numpy(), _loss(_Z.copy(), _W, kind), rtol=1e-12)
    np.testing.assert_allclose(gz.numpy(), _numeric(lambda z: _loss(z, _W, kind), _Z),
                               atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), _numeric(lambda w: _loss(_Z.copy(), w, kind), _W),
                               atol=1e-5)


@pytest.mark.parametrize("prim", [E.set_real_p, E.set_imag_p], ids=lambda p: p.name)
def test_set_part_forward_mode_and_batching(prim):
    """set_real/set_imag: broadcasting, a real base refused, JVP = the map itself (linear),
    and the batching rule with either operand unbatched."""
    part = prim.name[4:]
    x, v = _cplx((2, 3)), np.array([-0.0, np.inf, 2.0])
    want = x.copy()
    getattr(want, part)[...] = v
    got = prim(tnp.asarray(x), tnp.asarray(v))
    assert got.numpy().tobytes() == want.tobytes()
    with pytest.raises(TypeError, match="must be complex"):
        prim(tnp.asarray(_real()), tnp.asarray(v))
    tx, tv = _cplx((2, 3)) * 1j, np.array([1.0, 2.0, 3.0])
    _, t = nf.jvp(lambda a, b: prim(a, b), (tnp.asarray(x), tnp.asarray(v)),
                  (tnp.asarray(tx), tnp.asarray(tv)))
    want_t = tx.copy()
    getattr(want_t, part)[...] = tv
    _check(t, want_t)
    xs, vs = np.stack([x, x * 2]), np.stack([v, v + 1])
    for args, axes in (((xs, vs), (0, 0)), ((x, vs), (None, 0)), ((xs, v), (0, None))):
        got = nf.vmap(lambda a, b: prim(a, b), in_axes=axes)(*map(tnp.asarray, args))
        want = []
        for k in range(2):
            w = (args[0][k] if axes[0] == 0 else args[0]).copy()
            getattr(w, part)[...] = args[1][k] if axes[1] == 0 else args[1]
            want.append(w)
        assert got.numpy().tobytes() == np.stack(want).tobytes()


# ------------------------------------------------------------------ the rest of the class
def test_slices_with_run_time_bounds_write_through():
    def f(z, i):
        v = z[i:]
        v += 10
        w = z[:, i:i + 1]
        w[...] = -1
        return v * 1

    zn = _real((4, 3))
    want = f(zn, 2)
    for path in ("function", "tape(function)"):
        z = tnp.asarray(_real((4, 3)))
        got = PATHS[path](lambda z: f(z, tnp.asarray(2)))(z) if path == "function" else \
            nf.function(f)(z, tnp.asarray(2))
        _check(z, zn)
        _check(got, want)
    zs = tnp.asarray(np.stack([_real((4, 3))] * 2))
    nf.vectorized_map(lambda r: f(r, tnp.asarray(1)), zs)
    ref = np.stack([_real((4, 3))] * 2)
    for k in range(2):
        f(ref[k], 1)
    _check(zs, ref)
    z = tnp.asarray(_real((4, 3)))
    with nf.GradientTape() as t:
        t.watch(z)
        loss = nf.function(lambda z, i: tnp.sum(f(z * 1, i) ** 2))(z, tnp.asarray(2))
    g = np.zeros((4, 3))
    g[2:, :2] = 2 * (zn[2:, :2])
    np.testing.assert_allclose(t.gradient(loss, z).numpy(), g)


@pytest.mark.parametrize("path", PATHS)
def test_flat_writes_its_array(path):
    def f(z):
        z.T.flat[1] = 5.0
        fl = z.flat
        fl[[0, 4]] = -1.0
        return z * 1

    zn = _real()
    want = f(zn)
    z = tnp.asarray(_real())
    _check(PATHS[path](f)(z), want)
    _check(z, zn)


def test_stop_gradient_result_writes_its_operand_on_every_path():
    def f(z):
        s = nf.stop_gradient(z)
        s[0] = 7.0
        return z * 1

    for path in PATHS:
        z = tnp.asarray(_real((3,)))
        _check(PATHS[path](f)(z), [7.0, 1.0, 2.0])
        _check(z, [7.0, 1.0, 2.0])


def test_a_view_a_path_cannot_follow_is_an_error_naming_it():
    """einsum's diagonal ('ii->i') is a writable view in NumPy; while tracing it is refused,
    naming the operation, rather than written into a copy."""
    def f(z):
        d = tnp.einsum("ii->i", z)
        d[0] = 5.0
        return z * 1

    z = tnp.ones((2, 2))
    f(z)
    _check(z, [[5.0, 1.0], [1.0, 1.0]])
    z = tnp.ones((2, 2))
    with pytest.raises(ValueError, match="'einsum'"):
        nf.function(f)(z)
    _check(z, np.ones((2, 2)))


# primitives that declare `returns_view` but whose results never view an array the caller
# holds (gradient rules' and the NumPy layer's intermediate values), and why
NOT_NUMPY_VIEWS = {
    "sum_to": "a gradient rule's sum to a run-time shape",
    "reshape_like": "a gradient rule's reshape to a run-time shape",
    "split_like": "concatenate's gradient",
    "fft_resize": "zero-padding or cropping inside fft (its result is a new array in NumPy)",
    "expect_case": "a statistics result checked against the dtype the graph assumed",
    "expect_real": "an eigenvalue result checked against the dtype the graph assumed",
    "cond": "a control-flow result (a traced program, never eager)",
    "while": "a control-flow result",
    "scan": "a control-flow result",
    "numpy_function": "the user's NumPy function's result (NumPy's own memory model applies)",
    "numpy_function_multi": "the user's NumPy function's results",
    "assign_variable": "a Variable's value (Variables are written with assign)",
    "batch_outermost": "vectorized_map's batch laid out per example (writes into a mapped "
                       "argument go back through vectorized_map's own write-back)",
}


def test_every_view_primitive_is_classified():
    """A primitive that returns a view either has a write-through rule in the mutation model
    (`VIEWS`: an inverse, `read_only`, or None for an error naming it) or is listed above as
    never viewing a caller's array: a new view primitive cannot silently lose writes."""
    import ndflow.graph.control  # noqa: F401  (the primitives loaded on first use)
    import ndflow.autodiff.functional  # noqa: F401
    import ndflow.train.variable  # noqa: F401
    import ndflow.numpy.linalg  # noqa: F401
    views = {p.name for p in REGISTRY if p.returns_view}
    unclassified = sorted(n for n in views if n not in NOT_NUMPY_VIEWS
                          and not any(q.name == n for q in _mut.VIEWS))
    assert not unclassified, unclassified
    assert set(NOT_NUMPY_VIEWS) <= views, set(NOT_NUMPY_VIEWS) - views


def _branchy(z, c, n):
    if c > 0:
        z.real[0] = 7.0
    else:
        z.imag = z.real * 2
    i = 0
    while i < n:
        z.T.imag[i] += 1.0
        i += 1
    return z * 1


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_writes_through_view_attributes_in_converted_control_flow(c):
    """AutoGraph carries an array written through its view attributes (`z.real[i] = v`,
    `z.imag = v`, `z.T.imag[i] += v`) out of traced branches and loops, as `z[i] = v`."""
    zn = _cplx((3,))
    want = _branchy(zn, c, 2)
    z = tnp.asarray(_cplx((3,)))
    got = nf.function(_branchy)(z, tnp.asarray(c), tnp.asarray(2))
    _check(got, want)
    _check(z, zn)


def test_gradient_of_vectorized_part_writes_under_a_tape():
    zs = np.array([[1 + 2j, 3 - 1j], [0.5 + 0.5j, -1 + 1j]])

    def f(z):
        m = _mod(z)
        y = z * 1
        y.real[0] = 3.0 * m.abs(z[1])
        return m.sum(m.abs(y) ** 2)

    z = tnp.asarray(zs)
    with nf.GradientTape() as t:
        t.watch(z)
        loss = tnp.sum(nf.vectorized_map(f, z))
    want = _numeric(lambda v: sum(f(v[k].copy()) for k in range(2)), zs)
    np.testing.assert_allclose(t.gradient(loss, z).numpy(), want, atol=1e-5)
