"""`tnp.linalg` beyond the op table: completeness over numpy.linalg's public names, NumPy's
errors (LinAlgError for singular / not positive definite / wrong shapes), gradients of the
decompositions against central differences on random well-conditioned inputs (hypothesis
shapes), the cases the table cannot hold (degenerate spectra, rank-deficient least squares,
the non-unique columns of full SVD/QR, real eigenvalues), `nf.function` and `vectorized_map` on
stacks, and `np.linalg.*` dispatch to ndflow."""
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndflow as nf
import ndflow.numpy as tnp

import optable
from helpers import assert_bits_equal

NUMPY_LINALG = sorted(n for n in dir(np.linalg) if not n.startswith("_") and n != "test")


# ------------------------------------------------------------------ completeness
def test_every_numpy_linalg_name_exists():
    assert len(NUMPY_LINALG) == 32
    missing = [n for n in NUMPY_LINALG if not hasattr(tnp.linalg, n)]
    assert not missing, f"numpy.linalg names missing from tnp.linalg: {missing}"
    assert tnp.linalg.LinAlgError is np.linalg.LinAlgError


def test_every_linalg_function_has_a_record():
    have = optable.by_name()
    funcs = [n for n in NUMPY_LINALG if not isinstance(getattr(tnp.linalg, n), type)]
    missing = [n for n in funcs if "linalg." + n not in have]
    assert not missing, f"tnp.linalg functions without an op-table record: {missing}"
    own = [n for n in dir(tnp.linalg) if not n.startswith("_")
           and callable(getattr(tnp.linalg, n))
           and not isinstance(getattr(tnp.linalg, n), (type, types.ModuleType))]
    extra = [n for n in own if n not in NUMPY_LINALG]
    assert not extra, f"public tnp.linalg functions numpy.linalg does not have: {extra}"


@pytest.mark.parametrize("name", ["trace", "diagonal", "kron", "cross", "vecdot",
                                  "matrix_transpose"])
def test_main_namespace_linalg_functions(name):
    assert callable(getattr(tnp, name)) and name in optable.by_name()


def test_result_namedtuples():
    a = np.random.default_rng(0).standard_normal((3, 3))
    s = a @ a.T + 3 * np.eye(3)
    for name, fields in [("eigh", ("eigenvalues", "eigenvectors")), ("svd", ("U", "S", "Vh")),
                         ("qr", ("Q", "R")), ("slogdet", ("sign", "logabsdet")),
                         ("eig", ("eigenvalues", "eigenvectors"))]:
        got, want = getattr(tnp.linalg, name)(tnp.asarray(s)), getattr(np.linalg, name)(s)
        assert type(got).__name__ == type(want).__name__ and got._fields == fields
        for f in fields:
            np.testing.assert_allclose(getattr(got, f).numpy(), getattr(want, f), rtol=1e-12,
                                       atol=1e-12)


# ------------------------------------------------------------------ errors (NumPy's own)
_SING = np.array([[1.0, 2.0], [2.0, 4.0]])
_NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])
_ERRORS = [
    ("inv", (_SING,), {}), ("inv", (np.ones((2, 3)),), {}), ("inv", (np.ones(3),), {}),
    ("inv", (np.stack([np.eye(2), _SING]),), {}), ("solve", (_SING, np.ones(2)), {}),
    ("solve", (np.eye(3), np.ones(2)), {}), ("solve", (np.eye(3), np.ones((2, 2))), {}),
    ("cholesky", (_NOT_PD,), {}), ("cholesky", (np.ones((2, 3)),), {}),
    ("det", (np.ones((2, 3)),), {}), ("slogdet", (np.ones(2),), {}),
    ("eigh", (np.ones((2, 3)),), {}), ("eigh", (np.eye(2),), {"UPLO": "X"}),
    ("eigvalsh", (np.eye(2),), {"UPLO": "X"}), ("eig", (np.array([[1.0, np.nan], [0, 1]]),), {}),
    ("eigvals", (np.array([[np.inf, 0], [0, 1.0]]),), {}), ("svd", (np.ones(3),), {}),
    ("qr", (np.ones(3),), {}), ("qr", (np.eye(2),), {"mode": "bad"}),
    ("lstsq", (np.ones((3, 2)), np.ones(4)), {}), ("lstsq", (np.ones((2, 3, 2)), np.ones(3)), {}),
    ("matrix_power", (np.eye(2), 1.5), {}), ("matrix_power", (np.ones((2, 3)), 2), {}),
    ("multi_dot", ([np.eye(2)],), {}),
    ("multi_dot", ([np.eye(2), np.ones((2, 2, 2)), np.eye(2)],), {}),
    ("norm", (np.ones(3), "fro"), {}), ("norm", (np.ones((2, 2)), 3), {}),
    ("norm", (np.ones((2, 2, 2)),), {"axis": (0, 1, 2)}),
    ("norm", (np.ones((2, 2)),), {"axis": (1, 1)}), ("norm", (np.ones((2, 2)),), {"axis": "x"}),
    ("cond", (np.ones((0, 0)),), {}), ("cond", (np.ones((2, 3)), "fro"), {}),
    ("tensorsolve", (np.ones((2, 3, 4)), np.ones((2, 3))), {}),
    ("tensorinv", (np.ones((4, 2, 2)),), {"ind": 0}),
    ("outer", (np.ones((2, 2)), np.ones(2)), {}),
    ("cross", (np.ones(2), np.ones(2)), {}),
    ("matrix_rank", (np.eye(2),), {"tol": 1.0, "rtol": 1.0}),
    ("pinv", (np.eye(2),), {"rcond": 1e-3, "rtol": 1e-3}),
    ("inv", (np.eye(2, dtype=np.float16),), {}),
]


@pytest.mark.parametrize("name,args,kwargs", _ERRORS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(_ERRORS)])
def test_errors_match_numpy(name, args, kwargs):
    with pytest.raises(Exception) as want:
        getattr(np.linalg, name)(*args, **kwargs)
    conv = [tnp.asarray(a) if isinstance(a, np.ndarray) else
            [tnp.asarray(x) for x in a] if isinstance(a, list) else a for a in args]
    with pytest.raises(want.type) as got:
        getattr(tnp.linalg, name)(*conv, **kwargs)
    assert str(got.value).split() == str(want.value).split(), \
        f"{name}: {got.value!r} vs NumPy's {want.value!r}"


def test_linalg_error_is_value_error_and_raised_inside_function():
    f = nf.function(lambda a: tnp.linalg.inv(a) * 2)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        f(tnp.asarray(_SING))
    with pytest.raises(ValueError):            # LinAlgError subclasses ValueError, as NumPy
        tnp.linalg.cholesky(tnp.asarray(_NOT_PD))


def test_dtypes_follow_numpy():
    i = np.array([[2, 1], [1, 3]])
    for name in ("inv", "det", "cholesky", "pinv", "eigvalsh", "svdvals"):
        for a in (i, i.astype(np.float32), i.astype(np.complex64), i.astype(np.int32)):
            got = getattr(tnp.linalg, name)(tnp.asarray(a))
            assert got.dtype == getattr(np.linalg, name)(a).dtype, (name, a.dtype)
    assert tnp.linalg.solve(tnp.asarray(i.astype(np.float32)), tnp.ones(2, np.float32)).dtype \
        == np.float32
    assert tnp.linalg.matrix_power(tnp.asarray(i.astype(np.int32)), 3).dtype == np.int32
    assert tnp.linalg.norm(tnp.asarray(i)).dtype == np.float64
    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    assert tnp.linalg.inv(tnp.asarray(i)).dtype == np.float32


# ------------------------------------------------------------------ np.linalg dispatch
def test_numpy_linalg_functions_run_ndflow():
    a = tnp.asarray(np.array([[3.0, 1.0], [1.0, 2.0]]))
    with nf.GradientTape() as tape:
        tape.watch(a)
        y = np.linalg.inv(a)
        assert isinstance(y, tnp.ndarray)
        loss = tnp.sum(y) + np.linalg.norm(a) + np.trace(a) + np.linalg.det(a)
        w = np.linalg.eigh(a)
        assert type(w).__name__ == "EighResult" and isinstance(w.eigenvalues, tnp.ndarray)
    g = tape.gradient(loss, a)
    assert isinstance(g, tnp.ndarray) and np.all(np.isfinite(g.numpy()))
    assert isinstance(np.linalg.svd(a)[1], tnp.ndarray)
    assert isinstance(np.linalg.matrix_power(a, 3), tnp.ndarray)


# ------------------------------------------------------------------ gradients vs differences
def _leaves(o):
    return [x for e in o for x in _leaves(e)] if isinstance(o, tuple) else [o]


def _check_grad(f, *args, h=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Reverse-mode directional derivative of sum(c * f(x)) against central differences."""
    rng = np.random.default_rng(seed)
    xs = [tnp.asarray(a) for a in args]
    with nf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        outs = [o for o in _leaves(f(*xs)) if o.dtype.kind == "f"]
        cts = [rng.standard_normal(o.shape) for o in outs]
        loss = sum(tnp.sum(o * c) for o, c in zip(outs, cts))
    grads = tape.gradient(loss, xs)
    dirs = [rng.standard_normal(np.shape(a)) for a in args]
    analytic = sum(np.sum(g.numpy() * d) for g, d in zip(grads, dirs))

    def at(eps):
        ys = [tnp.asarray(a + eps * d) for a, d in zip(args, dirs)]
        os_ = [o for o in _leaves(f(*ys)) if o.dtype.kind == "f"]
        return sum(np.sum(o.numpy() * c) for o, c in zip(os_, cts))
    numeric = (at(h) - at(-h)) / (2 * h)
    assert abs(analytic - numeric) <= rtol * abs(numeric) + atol * (1 + abs(float(loss))), \
        (analytic, numeric)


def _orthogonal(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def _separated(rng, k, lo=1.0):
    """k values at least 0.5 apart, shuffled."""
    return rng.permutation(lo + np.cumsum(rng.uniform(0.5, 1.5, size=k)))


_SHAPE = st.tuples(st.sampled_from([(), (2,)]), st.integers(1, 4), st.integers(1, 4))
_PROPS = settings(max_examples=25, deadline=None)


@_PROPS
@given(_SHAPE, st.integers(0, 2 ** 16), st.booleans())
def test_eigh_gradient_matches_differences(shape, seed, upper):
    batch, n, _ = shape
    rng = np.random.default_rng(seed)
    mats = []
    for _ in range(int(np.prod(batch))):
        q = _orthogonal(rng, n)
        s = q @ np.diag(_separated(rng, n, lo=-2.0)) @ q.T
        # the triangle not read holds anything
        junk = np.triu(rng.standard_normal((n, n)), 1)
        mats.append(s + (junk.T if upper else junk))
    a = np.reshape(mats, batch + (n, n))
    uplo = "U" if upper else "L"
    _check_grad(lambda x: tnp.linalg.eigh(x, UPLO=uplo), a, seed=seed)
    _check_grad(lambda x: tnp.linalg.eigvalsh(x, UPLO=uplo), a, seed=seed + 1)


@_PROPS
@given(_SHAPE, st.integers(0, 2 ** 16))
def test_svd_gradient_matches_differences(shape, seed):
    batch, m, n = shape
    rng = np.random.default_rng(seed)
    k = min(m, n)
    mats = [_orthogonal(rng, m)[:, :k] @ np.diag(_separated(rng, k)) @ _orthogonal(rng, n)[:, :k].T
            for _ in range(int(np.prod(batch)))]
    a = np.reshape(mats, batch + (m, n))
    _check_grad(lambda x: tnp.linalg.svd(x, full_matrices=False), a, seed=seed)
    _check_grad(tnp.linalg.svdvals, a, seed=seed + 1)
    _check_grad(lambda x: tnp.linalg.norm(x, "nuc", axis=(-2, -1)), a, seed=seed + 2)


@_PROPS
@given(_SHAPE, st.integers(0, 2 ** 16), st.sampled_from(["reduced", "r"]))
def test_qr_gradient_matches_differences(shape, seed, mode):
    batch, m, n = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (m, n)) + 3 * np.eye(m, n)
    _check_grad(lambda x: tnp.linalg.qr(x, mode=mode), a, seed=seed)


@_PROPS
@given(_SHAPE, st.integers(0, 2 ** 16), st.booleans())
def test_cholesky_gradient_matches_differences(shape, seed, upper):
    batch, n, _ = shape
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(batch + (n, n))
    a = b @ np.swapaxes(b, -1, -2) + n * np.eye(n)
    _check_grad(lambda x: tnp.linalg.cholesky(x, upper=upper), a, seed=seed)
    # only one triangle is read: the other gets no gradient
    x = tnp.asarray(a)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(tnp.linalg.cholesky(x, upper=upper))
    g = tape.gradient(y, x).numpy()
    unread = np.tril(g, -1) if upper else np.triu(g, 1)
    assert np.all(unread == 0)


def test_full_matrices_and_complete_mode_ignore_the_extra_columns():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3)) + 3 * np.eye(5, 3)
    _check_grad(lambda x: (lambda u, s, vh: (u[:, :3], s, vh))(*tnp.linalg.svd(x)), a)
    _check_grad(lambda x: (lambda u, s, vh: (u, s, vh[:2]))(*tnp.linalg.svd(x.T)), a)
    _check_grad(lambda x: (lambda q, r: (q[:, :3], r[:3]))(*tnp.linalg.qr(x, mode="complete")), a)


def test_rank_deficient_least_squares_and_pseudo_inverse():
    rng = np.random.default_rng(2)
    low = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4))
    b = rng.standard_normal(5)
    x, res, rank, s = tnp.linalg.lstsq(tnp.asarray(low), tnp.asarray(b), rcond=1e-3)
    want = np.linalg.lstsq(low, b, rcond=1e-3)
    assert int(rank) == want[2] == 2 and res.shape == want[1].shape == (0,)
    np.testing.assert_allclose(x.numpy(), want[0], rtol=1e-10)
    # a perturbation that keeps the rank (the singular values below the cutoff stay below)
    _check_grad(lambda a: tnp.linalg.lstsq(a, tnp.asarray(b), rcond=1e-3)[0], low, h=1e-7)
    _check_grad(lambda a: tnp.linalg.pinv(a, rcond=1e-3), low, h=1e-7)


def test_eig_gradients_real_and_complex_spectra():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    real = q @ np.diag([1.0, 2.5, -1.5, 4.0]) @ np.linalg.inv(q)
    w, v = tnp.linalg.eig(tnp.asarray(real))
    assert w.dtype == np.float64 and v.dtype == np.float64      # eager: real, as NumPy
    _check_grad(tnp.linalg.eig, real)
    _check_grad(tnp.linalg.eigvals, real)
    traced = nf.function(tnp.linalg.eig)(tnp.asarray(real))
    assert traced.eigenvalues.dtype == np.float64                 # compiled: NumPy's dtype too
    np.testing.assert_allclose(np.sort(traced.eigenvalues.numpy()), np.sort(w.numpy()),
                               rtol=1e-12)


def test_degenerate_spectra_give_finite_gradients():
    eye = tnp.asarray(np.eye(3))
    for f in (lambda x: tnp.sum(tnp.linalg.eigvalsh(x)),
              lambda x: tnp.sum(tnp.linalg.eigh(x).eigenvalues ** 2),
              lambda x: tnp.sum(tnp.linalg.svd(x).S),
              lambda x: tnp.linalg.norm(x, "nuc")):
        with nf.GradientTape() as tape:
            tape.watch(eye)
            y = f(eye)
        g = tape.gradient(y, eye).numpy()
        assert np.all(np.isfinite(g))
    with nf.GradientTape() as tape:   # sum of eigenvalues = trace: gradient I (lower read)
        tape.watch(eye)
        y = tnp.sum(tnp.linalg.eigvalsh(eye))
    np.testing.assert_allclose(tape.gradient(y, eye).numpy(), np.eye(3), atol=1e-12)


@pytest.mark.parametrize("f", [
    lambda x: tnp.linalg.norm(x), lambda x: tnp.linalg.norm(x, 3),
    lambda x: tnp.linalg.vector_norm(x), lambda x: tnp.linalg.norm(x, axis=0),
    lambda x: tnp.linalg.matrix_norm(tnp.reshape(x, (2, 3))),
    lambda x: tnp.linalg.norm(tnp.reshape(x, (2, 3)), "fro"),
    lambda x: tnp.linalg.vector_norm(x, ord=1.5)], ids=["2", "3", "vector_norm", "axis",
                                                        "matrix_norm", "fro", "1.5"])
def test_norm_gradient_at_zero_is_zero(f):
    x = tnp.zeros(6)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(f(x))
    g = tape.gradient(y, x).numpy()
    assert np.all(g == 0), g


def test_complex_gradients_of_inv_det_solve_slogdet():
    """Transpose convention (as matmul): for a real loss L, dL = Re(sum(g * dA))."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) + 4 * np.eye(3)
    b = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    c = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    funcs = [lambda x: tnp.sum(tnp.real(tnp.linalg.inv(x) * c)),
             lambda x: tnp.real(tnp.linalg.det(x) * (1 + 2j)),
             lambda x: tnp.sum(tnp.imag(tnp.linalg.solve(x, tnp.asarray(b)))),
             lambda x: (lambda s, l: tnp.real(s * (2 - 1j)) + 3 * l)(*tnp.linalg.slogdet(x))]
    for f in funcs:
        x = tnp.asarray(a)
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x).numpy()
        for d in (rng.standard_normal((3, 3)), 1j * rng.standard_normal((3, 3))):
            h = 1e-6
            num = (float(f(tnp.asarray(a + h * d))) - float(f(tnp.asarray(a - h * d)))) / (2 * h)
            np.testing.assert_allclose(np.real(np.sum(g * d)), num, rtol=1e-6, atol=1e-8)


def test_gradients_not_implemented_say_so():
    a = tnp.asarray(np.eye(3) + 0.1)
    with nf.GradientTape() as tape:
        tape.watch(a)
        h, tau = tnp.linalg.qr(a, mode="raw")
        y = tnp.sum(h)
    with pytest.raises(NotImplementedError, match="raw"):
        tape.gradient(y, a)
    # (complex decompositions have gradients now: tests/test_grad_edges.py checks them)


# ------------------------------------------------------------------ function / vectorized_map
def _stack(rng, b=4, n=3):
    x = rng.standard_normal((b, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _many(a, rhs):
    l = tnp.linalg.cholesky(a)
    sign, logdet = tnp.linalg.slogdet(a)
    w, v = tnp.linalg.eigh(a)
    return (tnp.linalg.solve(a, rhs[..., None])[..., 0], l, logdet, w, tnp.linalg.svd(a).S,
            tnp.linalg.inv(a), tnp.linalg.qr(a).R, tnp.linalg.pinv(a),
            tnp.linalg.norm(a, axis=(-2, -1)))


def test_function_and_vectorized_map_on_stacks():
    rng = np.random.default_rng(5)
    a, rhs = tnp.asarray(_stack(rng)), tnp.asarray(rng.standard_normal((4, 3)))
    eager = _many(a, rhs)
    f = nf.function(_many)
    for got, want in zip(f(a, rhs), eager):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    assert f.experimental_get_tracing_count() == 1
    batched = nf.vectorized_map(lambda t: _many(*t), (a, rhs))
    for k, got in enumerate(batched):
        loop = np.stack([_many(a[i], rhs[i])[k].numpy() for i in range(4)])
        np.testing.assert_allclose(got.numpy(), loop, rtol=1e-12, atol=1e-12)
    # compiled vectorized_map, batch size unknown
    sig = [nf.TensorSpec([None, 3, 3], np.float64), nf.TensorSpec([None, 3], np.float64)]
    g = nf.function(lambda x, y: nf.vectorized_map(lambda t: _many(*t), (x, y)),
                    input_signature=sig)
    for got, want in zip(g(a, rhs), batched):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_per_example_gradients_through_decompositions():
    rng = np.random.default_rng(6)
    a = tnp.asarray(_stack(rng))

    def loss_grad(x):
        with nf.GradientTape() as tape:
            tape.watch(x)
            w, v = tnp.linalg.eigh(x)
            y = tnp.sum(w * w) + tnp.sum(tnp.linalg.cholesky(x)) + tnp.linalg.slogdet(x)[1] \
                + tnp.sum(tnp.linalg.svd(x).S ** 3)
        return tape.gradient(y, x)
    got = nf.vectorized_map(loss_grad, a)
    want = np.stack([loss_grad(a[i]).numpy() for i in range(4)])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(nf.function(loss_grad)(a).numpy(), loss_grad(a).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_lstsq_batched_and_traced():
    rng = np.random.default_rng(7)
    tall = tnp.asarray(rng.standard_normal((3, 6, 2)))
    b = tnp.asarray(rng.standard_normal((3, 6)))
    got = nf.vectorized_map(lambda t: tnp.linalg.lstsq(*t), (tall, b))
    for i in range(3):
        want = np.linalg.lstsq(tall[i].numpy(), b[i].numpy())
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy()[i], w, rtol=1e-10, atol=1e-12)
    wide = tnp.asarray(rng.standard_normal((3, 2, 4)))
    x = nf.vectorized_map(lambda t: tnp.linalg.lstsq(*t)[0], (wide, b[:, :2]))
    assert x.shape == (3, 4)
    # examples that disagree on the rank cannot stack their residuals
    mixed = tall.numpy().copy()
    mixed[1, :, 1] = mixed[1, :, 0]
    with pytest.raises(ValueError, match="lstsq"):
        nf.vectorized_map(lambda t: tnp.linalg.lstsq(*t), (tnp.asarray(mixed), b))
    # traced: the residuals' size is decided at run time
    f = nf.function(tnp.linalg.lstsq)
    for a in (tall[0], tnp.asarray(mixed[1])):
        for g, w in zip(f(a, b[0]), np.linalg.lstsq(a.numpy(), b[0].numpy())):
            assert g.shape == np.shape(w)
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-10, atol=1e-12)


def test_sizes_unknown_while_tracing():
    sig = [nf.TensorSpec([None, None], np.float64)]
    a = tnp.asarray(np.random.default_rng(8).standard_normal((4, 4)) + 4 * np.eye(4))
    for f in (tnp.linalg.inv, tnp.linalg.det, tnp.linalg.svdvals, tnp.linalg.matrix_rank,
              lambda x: tnp.linalg.matrix_power(x, 0), tnp.linalg.cond):
        np.testing.assert_allclose(nf.function(f, input_signature=sig)(a).numpy(),
                                   f(a).numpy(), rtol=1e-12)
    # the diagonal's length is computed at run time
    np.testing.assert_allclose(nf.function(tnp.trace, input_signature=sig)(a).numpy(),
                               np.trace(a.numpy()))


def test_cross_of_2_vectors_is_deprecated_as_in_numpy():
    a, b = np.array([1.0, 2.0]), np.array([[3.0, 4.0, 5.0], [0.5, 1.0, 2.0]])
    with pytest.warns(DeprecationWarning):
        got = tnp.cross(tnp.asarray(a), tnp.asarray(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.cross(a, b)
        np.testing.assert_allclose(got.numpy(), want)
        with pytest.warns(DeprecationWarning):
            z = tnp.cross(tnp.asarray(a), tnp.asarray(a[::-1]))
        assert z.shape == () and float(z) == float(np.cross(a, a[::-1]))


def test_matrix_rank_of_vectors_is_a_python_int():
    assert tnp.linalg.matrix_rank(tnp.asarray([0.0, 0.0])) == 0
    assert tnp.linalg.matrix_rank(tnp.asarray([0.0, 1.0])) == 1
    assert isinstance(tnp.linalg.matrix_rank(tnp.asarray(2.0)), int)


def test_qr_raw_and_economic_match_numpy():
    a = np.random.default_rng(9).standard_normal((4, 3))
    for g, w in zip(tnp.linalg.qr(tnp.asarray(a), mode="raw"), np.linalg.qr(a, mode="raw")):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12)
    with pytest.warns(DeprecationWarning):
        e = tnp.linalg.qr(tnp.asarray(a), mode="economic")
    with pytest.warns(DeprecationWarning):
        np.testing.assert_allclose(e.numpy(), np.linalg.qr(a, mode="economic"), rtol=1e-12)


def test_diagonal_is_read_only_as_in_numpy():
    x = tnp.asarray(np.arange(9.0).reshape(3, 3))
    d = tnp.diagonal(x)
    with pytest.raises(ValueError, match="read-only"):
        d += 1
    assert np.array_equal(x.numpy(), np.arange(9.0).reshape(3, 3))


_TD_CASES = [((3, 4), (4, 5), 1), ((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 3), ([1, 2], [1, 0])),
             ((4, 3), (4, 5), ([0], [0])), ((5,), (5,), 1), ((2, 3), (4, 5), 0),
             ((3, 0), (0, 2), 1), ((6,), (6, 3), ([0], [0])), ((2, 3, 4), (2, 5), ([0], [0])),
             ((30, 40), (40, 20), 1)]
_IN_CASES = [((5,), (5,)), ((3, 5), (5,)), ((5,), (4, 5)), ((3, 5), (4, 5)), ((30, 40), (20, 40))]


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, np.complex128, np.int32])
def test_tensordot_and_inner_are_numpys_bits_on_every_path(dt):
    """tensordot contracted through einsum, whose order of additions is opt_einsum's, and
    inner likewise: 34 of 180 tensordot results (eager, compiled, vectorized) differed from
    numpy.tensordot in the last bits, and inner from numpy.inner for 2-D float32. Both now
    compute as NumPy does (tensordot: transposed and reshaped operands and one matrix product;
    inner up to 2-D: a @ b.T); vectorized_map with every operand mapped gives the loop's."""
    rng = np.random.default_rng(7)

    def same(got, want, ctx):
        got = np.asarray(got.numpy())
        assert got.dtype == want.dtype and got.shape == want.shape and \
            np.array_equal(got, want), ctx
    for sa, sb, ax in _TD_CASES:
        a, b = ((rng.standard_normal(s) * 3).astype(dt) for s in (sa, sb))
        want = np.tensordot(a, b, ax)
        same(tnp.tensordot(a, b, ax), want, ("eager", sa, sb, ax))
        same(nf.function(lambda x, y: tnp.tensordot(x, y, ax))(a, b), want, ("jit", sa, sb, ax))
        A, B = np.stack([a, a * 2, a - 1]), np.stack([b, b, b * 3])
        same(nf.vectorized_map(lambda t: tnp.tensordot(t[0], t[1], ax), (A, B)),
             np.stack([np.tensordot(A[i], B[i], ax) for i in range(3)]), ("vmap", sa, sb, ax))
    for sa, sb in _IN_CASES:
        a, b = ((rng.standard_normal(s) * 3).astype(dt) for s in (sa, sb))
        same(tnp.inner(a, b), np.inner(a, b), ("inner", sa, sb))
        same(nf.function(tnp.inner)(a, b), np.inner(a, b), ("inner jit", sa, sb))
        A, B = np.stack([a, a * 2]), np.stack([b, b - 1])
        same(nf.vectorized_map(lambda t: tnp.inner(t[0], t[1]), (A, B)),
             np.stack([np.inner(A[i], B[i]) for i in range(2)]), ("inner vmap", sa, sb))


# (subscripts, operand shapes): matrix chains, batched and broadcast products, a trace, a
# diagonal, outer products and sums within one operand
_EINSUM_CASES = [("ij,jk->ik", (13, 40), (40, 9)), ("ij,jk,kl->il", (6, 30), (30, 20), (20, 5)),
                 ("bij,bjk->bik", (3, 9, 33), (3, 33, 4)),
                 ("...ij,...jk->...ik", (2, 5, 17), (17, 6)),
                 ("i,i->", (257,), (257,)), ("ij,ij->i", (5, 130), (5, 130)),
                 ("i,j->ij", (7,), (5,)), ("ij->", (20, 31)), ("ii->i", (9, 9)), ("ii", (9, 9)),
                 ("ijk,ikl,lm->jm", (4, 5, 6), (4, 6, 7), (7, 3)), ("ij,kj->ik", (8, 64), (5, 64))]


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(_EINSUM_CASES),
       optimize=st.sampled_from([False, True, "greedy", "optimal", "path"]),
       dt=st.sampled_from([np.float64, np.float32, np.float16, np.complex128, np.int64]),
       seed=st.integers(0, 2**16))
def test_einsum_is_numpys_bits_on_every_path(case, optimize, dt, seed):
    """tnp.einsum is np.einsum with the same `optimize` (NumPy's default False): its bits
    eagerly, taped and compiled. Before, every `optimize` contracted through opt_einsum: 'ij,jk,
    kl->il' and float32/float16 products differed from NumPy's in the last bits."""
    sub, *shapes = case
    rng = np.random.default_rng(seed)
    ops = [(rng.standard_normal(s) * 4).astype(dt) for s in shapes]
    if optimize == "path":
        optimize = np.einsum_path(sub, *ops, optimize="greedy")[0]
    want = np.einsum(sub, *ops, optimize=optimize)

    def f(*a):
        return tnp.einsum(sub, *a, optimize=optimize)
    with nf.GradientTape() as tape:
        xs = [tnp.asarray(o) for o in ops]
        for x in xs:
            if x.dtype.kind in "fc":
                tape.watch(x)
        taped = f(*xs)
    for got, ctx in ((f(*ops), "eager"), (taped, "taped"), (nf.function(f)(*ops), "compiled")):
        assert_bits_equal(got.numpy(), want)


def test_einsum_optimize_is_checked():
    a = np.ones((2, 3))
    with pytest.raises(TypeError, match="optimize must be"):
        tnp.einsum("ij,jk", a, a.T, optimize=3)
    assert np.array_equal(tnp.einsum("ij,jk", a, a.T).numpy(), np.einsum("ij,jk", a, a.T))
