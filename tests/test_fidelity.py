"""Where users meet NumPy and the Array API: the gaps of issue 8, each checked against NumPy (or
the standard where NumPy has no say) on every path: eager, taped, compiled, vectorized."""
import inspect

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from helpers import assert_same

PATHS = ("eager", "jit", "vmap")


def _run(path, fn, *args):
    """fn(tnp, *args) eagerly, compiled, or mapped over a leading batch of 2 (stacked copies)."""
    a = [tnp.asarray(x) for x in args]
    if path == "eager":
        return fn(*a)
    if path == "jit":
        return nf.function(fn)(*a)
    out = nf.vectorized_map(lambda xs: fn(*xs), tuple(tnp.stack([x, x]) for x in a))
    return out[1]


# ------------------------------------------------------------------ unique: sorted
@pytest.mark.parametrize("dt", [np.int64, np.int32, np.float64])
def test_unique_functions_return_sorted_values(dt):
    x = np.array([3, 1, 2, 1, 7, 5, 9, 0, -1, 5, 1000, -70], dt)
    want = np.unique(x)
    for name in ("unique_values", "unique"):
        assert_same(getattr(tnp, name)(x), want)
        assert_same(nf.function(getattr(tnp, name))(tnp.asarray(x)), want)
    assert_same(tnp.unique_counts(x).values, want)
    assert_same(tnp.unique_counts(x).counts, np.unique(x, return_counts=True)[1])
    u = tnp.unique_inverse(x.reshape(3, 4))
    assert_same(u.values, want)
    assert_same(tnp.take(u.values, u.inverse_indices), x.reshape(3, 4))
    a = tnp.unique_all(x)
    assert_same(a.values, want)
    assert_same(tnp.take(tnp.asarray(x), a.indices), want)


def test_unique_values_nans_are_distinct_and_last():
    x = np.array([np.nan, 2.0, np.nan, 1.0])
    got = tnp.unique_values(x)
    assert_same(got, np.array([1.0, 2.0, np.nan, np.nan]))
    assert_same(tnp.unique_counts(x).counts, np.array([1, 1, 1, 1]))


# ------------------------------------------------------------------ arange
@pytest.mark.parametrize("args,kw", [((10,), {"step": 3}), ((10,), {}), ((2, 11, 3), {}),
                                     ((5.0,), {}), ((10, 0, -3), {}), ((), {"stop": 4}),
                                     ((1,), {"stop": 7, "step": 2}), ((3,), {"dtype": np.float32}),
                                     ((), {"start": 2, "stop": 7}), ((), {"stop": 7, "step": 2})])
def test_arange_forms(args, kw):
    assert_same(tnp.arange(*args, **kw), np.arange(*args, **kw))
    assert_same(tnp.arange(*args, **kw, device="CPU:0"), np.arange(*args, **kw))


@pytest.mark.parametrize("args,kw", [((), {}), ((), {"start": 4}), ((1,), {"start": 4}),
                                     ((), {"start": 2, "step": 2})])
def test_arange_errors_as_numpy(args, kw):
    with pytest.raises(TypeError):
        np.arange(*args, **kw)
    with pytest.raises(TypeError):
        tnp.arange(*args, **kw)


# ------------------------------------------------------------------ any / all where=
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ["any", "all"])
def test_any_all_honour_where(name, path):
    a = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    w = np.array([[False, True, True], [True, True, False]])
    for axis in (None, 0, 1):
        want = getattr(np, name)(a, axis=axis, where=w)
        got = _run(path, lambda x, m: getattr(tnp, name)(x, axis=axis, where=m), a, w)
        assert_same(got, want)


# ------------------------------------------------------------------ clip
def test_clip_without_bounds_copies():
    x = tnp.asarray([1.0, np.nan, -2.0])
    y = tnp.clip(x)
    assert_same(y, np.clip(np.array([1.0, np.nan, -2.0])))
    assert y is not x and not tnp.shares_memory(x, y)
    assert_same(tnp.clip(x, min=0.0), np.clip(np.array([1.0, np.nan, -2.0]), min=0.0))
    assert_same(tnp.clip(x, a_min=-1.0, a_max=0.5), np.clip(x.numpy(), a_min=-1.0, a_max=0.5))
    with pytest.raises(TypeError):          # a_min twice (NumPy's TypeError too)
        tnp.clip(x, 0.0, a_min=1.0)
    with pytest.raises(TypeError):          # NumPy 2: both positional bounds or neither
        tnp.clip(x, 0.0)
    # NumPy 2's signature (the Array API's min/max are its keywords)
    params = list(inspect.signature(tnp.clip).parameters)
    assert params[:6] == list(inspect.signature(np.clip).parameters)[:6]


# ------------------------------------------------------------------ sort / argsort
def _stable_desc(x, axis):
    """The standard's stable descending argsort, by Python's sorted."""
    x = np.moveaxis(x, axis, -1)
    out = np.empty(x.shape, np.int64)
    for idx in np.ndindex(x.shape[:-1]):
        row = list(x[idx])
        out[idx] = sorted(range(len(row)), key=lambda i: row[i], reverse=True)
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("path", PATHS)
def test_sort_argsort_descending_stable(path):
    x = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 5, 5, 1, 0]], np.int64)
    for axis in (-1, 0):
        got = _run(path, lambda a: tnp.argsort(a, axis=axis, descending=True), x)
        assert_same(got, _stable_desc(x, axis))
        got = _run(path, lambda a: tnp.sort(a, axis=axis, descending=True), x)
        assert_same(got, np.flip(np.sort(x, axis=axis), axis))
        # ascending default: stable
        got = _run(path, lambda a: tnp.argsort(a, axis=axis), x)
        assert_same(got, np.argsort(x, axis=axis, kind="stable"))


def test_sort_descending_gradient():
    x = tnp.asarray([0.5, -1.0, 2.0])
    with nf.GradientTape() as t:
        t.watch(x)
        y = tnp.sort(x, descending=True)
        loss = tnp.sum(y * tnp.asarray([1.0, 10.0, 100.0]))
    assert_same(t.gradient(loss, x), np.array([10.0, 100.0, 1.0]))


def test_argsort_descending_unknown_size():
    f = nf.function(lambda a: tnp.argsort(a, descending=True),
                    input_signature=[nf.TensorSpec([None], tnp.float64)])
    x = np.array([1.0, 3.0, 1.0, 2.0])
    assert_same(f(x), _stable_desc(x, 0))


# ------------------------------------------------------------------ fft frequencies
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_fftfreq_dtype_and_device(name):
    f = getattr(tnp.fft, name)
    want = getattr(np.fft, name)(7, 0.5)
    got = f(7, 0.5, dtype=tnp.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), want.astype(np.float32))
    got = f(7, d=0.5, device="CPU:0")
    assert_same(got, want)
    with pytest.raises(ValueError):
        f(4, dtype=tnp.int32)


# ------------------------------------------------------------------ finfo / iinfo
@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.complex64,
                                np.complex128])
def test_finfo_fields_are_python_numbers(dt):
    f, n = tnp.finfo(dt), np.finfo(dt)
    assert type(f.bits) is int and f.bits == n.bits
    for name in ("eps", "max", "min", "smallest_normal", "tiny", "resolution"):
        v = getattr(f, name)
        assert type(v) is float and v == float(getattr(n, name)), name
    assert f.dtype == n.dtype and f.precision == n.precision
    assert tnp.finfo(tnp.ones(2, dtype=dt)).eps == f.eps
    x = tnp.ones(3, dtype=n.dtype)
    assert (x * tnp.finfo(x.dtype).eps).dtype == n.dtype     # weak Python scalar


@pytest.mark.parametrize("v", [1.0, np.float32(1), 1 + 0j, "float32", np.float16])
def test_finfo_accepts_what_numpy_accepts(v):
    assert tnp.finfo(v).dtype == np.finfo(v).dtype and tnp.finfo(v).eps == np.finfo(v).eps


@pytest.mark.parametrize("v", [1, np.int8(1), "int16", np.uint32])
def test_iinfo_accepts_what_numpy_accepts(v):
    assert tnp.iinfo(v).dtype == np.iinfo(v).dtype and tnp.iinfo(v).max == np.iinfo(v).max


def test_finfo_bfloat16_and_iinfo():
    assert tnp.finfo(tnp.bfloat16).eps == 2.0 ** -7
    for dt in (np.int8, np.uint16, np.int64, np.uint64):
        i = tnp.iinfo(dt)
        assert type(i.max) is int and (i.min, i.max, i.bits) == (
            np.iinfo(dt).min, np.iinfo(dt).max, np.iinfo(dt).bits)
    assert tnp.iinfo(tnp.ones(2, dtype=np.int16)).max == 32767
    with pytest.raises(ValueError):
        tnp.iinfo(np.float32)


# ------------------------------------------------------------------ signatures
def test_vecdot_and_dlpack_signatures():
    p = inspect.signature(tnp.vecdot).parameters
    assert [n for n, v in p.items() if v.kind == v.POSITIONAL_ONLY] == ["x1", "x2"]
    assert p["axis"].kind == p["axis"].KEYWORD_ONLY and p["axis"].default == -1
    p = inspect.signature(tnp.ndarray.__dlpack__).parameters
    for k in ("stream", "max_version", "dl_device", "copy"):
        assert p[k].kind == p[k].KEYWORD_ONLY and p[k].default is None
    x = tnp.asarray([1.0, 2.0])
    np.testing.assert_array_equal(np.from_dlpack(x), np.array([1.0, 2.0]))
    cap = x.__dlpack__(max_version=(1, 0), copy=True)
    assert "dltensor" in repr(cap)


# ------------------------------------------------------------------ 0-d boolean masks
_KEYS = [True, False, (np.array([0, 1]), True), (True, slice(None), 0),
         (slice(None), 0, True), (Ellipsis, True), (0, Ellipsis, False, 1),
         (np.array([[0, 1]]), slice(None), True), (None, True, 1)]


@pytest.mark.parametrize("path", ["eager", "jit", "tape"])
@pytest.mark.parametrize("k", _KEYS, ids=[repr(k) for k in _KEYS])
@pytest.mark.parametrize("zero_d", [False, True])
def test_zero_d_boolean_masks(k, zero_d, path):
    xn = np.arange(24.0).reshape(2, 3, 4)
    key = k if isinstance(k, tuple) else (k,)
    if zero_d:
        key = tuple(tnp.asarray(e) if isinstance(e, bool) else e for e in key)
    want = xn[k]
    if path == "eager":
        got = tnp.asarray(xn)[key]
    elif path == "jit":
        got = nf.function(lambda a: a[key])(xn)
    else:
        x = tnp.asarray(xn)
        with nf.GradientTape() as t:
            t.watch(x)
            got = x[key]
            s = tnp.sum(got * 2.0)
        g = np.zeros_like(xn)
        g[k] += 2.0
        assert_same(t.gradient(s, x), g)
    assert_same(got, want)


def test_zero_d_boolean_masks_vectorized_and_assigned():
    xn = np.arange(24.0).reshape(2, 3, 4)
    for key in (True, (0, tnp.asarray(False)), (tnp.asarray(True), 1)):
        got = nf.vectorized_map(lambda r: r[key], tnp.asarray(xn))
        k = tuple(bool(e) if isinstance(e, tnp.ndarray) else e for e in
                  (key if isinstance(key, tuple) else (key,)))
        assert_same(got, np.stack([r[k] for r in xn]))
    y, yn = tnp.asarray(xn.copy()), xn.copy()
    y[0, tnp.asarray(True), 1] = 7.0
    yn[0, True, 1] = 7.0
    assert_same(y, yn)
    w = tnp.asarray(xn.copy())
    with nf.GradientTape() as t:
        t.watch(w)
        z = tnp.zeros((2, 3, 4))
        z[tnp.asarray(True), 0] = w[0] * 3.0
        s = tnp.sum(z * z)
    g = np.zeros_like(xn)
    g[0] = 18.0 * xn[0]
    assert_same(t.gradient(s, w), g)


@pytest.mark.parametrize("xs,ms", [((2, 3), (0, 2)), ((2, 3), (1, 0)), ((0, 3), (1, 3)),
                                   ((0,), (1,)), ((2, 3), (3, 0)), ((2, 3), (3,))])
def test_boolean_mask_shape_mismatch_raises_index_error(xs, ms):
    x, m = tnp.ones(xs), np.zeros(ms, bool)
    with pytest.raises(IndexError, match="did not match"):
        np.ones(xs)[m]
    with pytest.raises(IndexError, match="did not match"):
        x[m]
    with pytest.raises(IndexError, match="did not match"):
        nf.function(lambda a, b: a[b])(x, m)


@pytest.mark.parametrize("xs,ms", [((2, 3), (0,)), ((1,), (0,)), ((2, 3), (0, 3)),
                                   ((2, 3, 4), (3, 4))])
def test_boolean_masks_numpy_accepts(xs, ms):
    m = np.random.default_rng(0).random(ms) > 0.5
    x = np.arange(float(np.prod(xs))).reshape(xs)
    assert_same(tnp.asarray(x)[..., m] if len(ms) < len(xs) else tnp.asarray(x)[m],
                x[..., m] if len(ms) < len(xs) else x[m])


# ------------------------------------------------------------------ NumPy arrays on the left
def test_numpy_inplace_operators_write_into_the_numpy_array():
    b = tnp.asarray([1.0, 2.0, 3.0])
    a = np.zeros(3)
    buf = a
    a += b
    assert a is buf and type(a) is np.ndarray
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    a *= b
    np.testing.assert_array_equal(a, [1.0, 4.0, 9.0])
    view = a[::2]
    view -= tnp.asarray([1.0, 1.0])          # through a view, as NumPy
    np.testing.assert_array_equal(a, [0.0, 4.0, 8.0])
    i = np.zeros(3, np.int64)
    with pytest.raises(TypeError, match="same_kind"):
        i += b                               # NumPy's casting rule
    f32 = np.zeros(3, np.float32)
    f32 += b                                 # same_kind: float64 -> float32 allowed
    assert f32.dtype == np.float32


def test_numpy_ufunc_out_numpy_array():
    b = tnp.asarray([1.0, -2.0, 3.0])
    a = np.ones(3)
    r = np.add(a, b, out=a)
    assert r is a
    np.testing.assert_array_equal(a, [2.0, -1.0, 4.0])
    r = np.multiply(b, 2.0, out=(a,), where=np.array([True, False, True]))
    assert r is a
    np.testing.assert_array_equal(a, [2.0, -1.0, 6.0])
    q, m = np.zeros(3), np.zeros(3)
    r = np.divmod(b, 2.0, out=(q, m))
    assert r[0] is q and r[1] is m
    np.testing.assert_array_equal(q, np.divmod(b.numpy(), 2.0)[0])
    o = np.zeros(())
    np.add.reduce(b, out=o)
    assert float(o) == 2.0
    # mixed outputs: the ndflow one receives its result too
    q2 = tnp.zeros(3)
    np.divmod(b, 2.0, out=(q2, m))
    assert_same(q2, np.divmod(b.numpy(), 2.0)[0])


def test_numpy_out_inside_function_or_tape_is_refused_by_name():
    b = tnp.asarray([1.0, 2.0])
    f = nf.function(lambda x: np.add(x, x, out=np.zeros(2)))
    with pytest.raises(TypeError, match="add with out= a NumPy array.*traced"):
        f(b)
    a = np.zeros(2)
    with nf.GradientTape() as t:
        t.watch(b)
        with pytest.raises(TypeError, match="add with out= a NumPy array.*GradientTape"):
            a += b * 2.0
    with nf.GradientTape():                  # nothing watched: NumPy's in-place add
        a += b
    np.testing.assert_array_equal(a, [1.0, 2.0])


# ------------------------------------------------------------------ functions ndflow lacks
@pytest.fixture
def no_ptp(monkeypatch):
    """NumPy's ptp as a function ndflow lacks (ndflow has all of NumPy's array functions that
    take arrays, so one is hidden here)."""
    from ndflow.numpy import _interop
    monkeypatch.delattr(tnp, "ptp")
    monkeypatch.delitem(tnp._LAZY, "ptp")      # (else first use would load it again)
    monkeypatch.setattr(_interop, "_WARNED", set())


def test_lacking_function_eagerly_falls_back_with_one_warning(no_ptp):
    from ndflow.numpy._interop import NumPyFallbackWarning
    x = tnp.asarray([3.0, 1.0, 2.5])
    with pytest.warns(NumPyFallbackWarning, match="ptp"):
        r = np.ptp(x)
    assert float(r) == 2.0
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(np.ptp(x)) == 2.0       # once per function
    with nf.GradientTape():                  # a tape watching nothing here: allowed
        assert float(np.ptp(x)) == 2.0


def test_lacking_function_under_a_tape_raises(no_ptp):
    from ndflow.numpy._interop import NumPyFallbackError
    x = tnp.asarray([3.0, 1.0, 2.5])
    with nf.GradientTape() as t:
        t.watch(x)
        with pytest.raises(NumPyFallbackError, match="ptp.*GradientTape"):
            np.ptp(x * 2.0)
    v = nf.Variable([1.0, 4.0])
    with nf.GradientTape():
        with pytest.raises(NumPyFallbackError, match="ptp"):
            np.ptp(v)


@pytest.mark.parametrize("transform", ["function", "vectorized_map"])
def test_lacking_function_inside_a_trace_raises(no_ptp, transform):
    from ndflow.numpy._interop import NumPyFallbackError
    x = tnp.asarray([[3.0, 1.0], [2.0, 5.0]])
    fn = lambda a: np.ptp(a)  # noqa: E731
    with pytest.raises(NumPyFallbackError, match="ptp.*traced"):
        nf.function(fn)(x) if transform == "function" else nf.vectorized_map(fn, x)


def test_foreign_ufunc_with_a_numpy_name_is_not_mistaken_for_numpy_s():
    from ndflow.numpy._interop import NumPyFallbackError
    twice = np.frompyfunc(lambda v: 2 * v, 1, 1)
    x = tnp.asarray([1.0, 2.0])
    with nf.GradientTape() as t:
        t.watch(x)
        with pytest.raises(NumPyFallbackError, match="ufunc"):
            twice(x)


def test_numpy_functions_on_variables_are_differentiable():
    v = nf.Variable([1.0, 2.0, 2.0])
    with nf.GradientTape() as t:
        s = np.sum(v)
        n = np.linalg.norm(v)
    assert isinstance(s, tnp.ndarray)
    g = t.gradient([s, n], v)
    assert_same(g, (1.0 + np.array([1.0, 2.0, 2.0]) / 3.0).astype(np.float32), rtol=1e-6)


# ------------------------------------------------------------------ interp with infinities
_INTERP_X = [-np.inf, -3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5, 3.0, np.inf, np.nan]


@pytest.mark.parametrize("path", ["eager", "jit"])
def test_interp_special_values_match_numpy(path):
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 5))
        xp = np.sort(rng.choice([-np.inf, -2.0, -1.0, 0.0, 1.0, 2.5, np.inf], n, replace=False))
        fp = rng.choice([-np.inf, -1.0, -0.0, 0.0, 2.0, 5.0, np.inf, np.nan], n)
        x = rng.choice(_INTERP_X, 6)
        kw = {"left": -7.0, "right": 9.0} if rng.random() < 0.3 else {}
        with np.errstate(all="ignore"):
            want = np.interp(x, xp, fp, **kw)
            f = tnp.interp if path == "eager" else nf.function(
                lambda a, b, c: tnp.interp(a, b, c, **kw))
            got = f(x, xp, fp) if path == "jit" else f(x, xp, fp, **kw)
        g = got.numpy()
        assert np.array_equal(g, want, equal_nan=True) and \
            np.array_equal(np.signbit(g), np.signbit(want)), (x, xp, fp, kw, g, want)


def test_interp_gradient_through_fp():
    fp = tnp.asarray([0.0, 10.0, 20.0])
    with nf.GradientTape() as t:
        t.watch(fp)
        y = tnp.sum(tnp.interp(tnp.asarray([0.5, 1.0, 5.0]), [0.0, 1.0, 2.0], fp))
    assert_same(t.gradient(y, fp), np.array([0.5, 1.5, 1.0]))


# ------------------------------------------------------------------ assignable .real / .imag
def test_real_imag_assignment_as_numpy():
    xn = np.array([1 + 2j, 3 - 1j, -1j])
    x = tnp.asarray(xn.copy())
    view = x[:2]
    x.real = [5.0, -0.0, np.inf]
    xn.real = [5.0, -0.0, np.inf]
    assert_same(x, xn)
    assert_same(view, xn[:2])                  # in place: views see it
    x.imag = tnp.asarray(np.nan)
    xn.imag = np.nan
    assert_same(x, xn)
    r, rn = tnp.asarray([1.0, 2.0]), np.array([1.0, 2.0])
    r.real = [7, 8]
    rn.real = [7, 8]
    assert_same(r, rn)
    with pytest.raises(TypeError, match="imaginary part"):
        rn.imag = 1
    with pytest.raises(TypeError, match="imaginary part"):
        r.imag = 1
    with nf.GradientTape():                    # on every path (tests/test_view_writes.py)
        x.real = 0.0
    xn.real = 0.0
    assert_same(x, xn)
    assert_same(view, xn[:2])


# ------------------------------------------------------------------ in-place into NumPy arrays
@pytest.mark.parametrize("name,args", [
    ("place", lambda a: (a > 1, tnp.asarray([10.0, 20.0]))),
    ("put", lambda a: ([0, 3], tnp.asarray([-1.0, -2.0]))),
    ("putmask", lambda a: (a > 2, tnp.asarray([9.0]))),
    ("copyto", lambda a: (tnp.asarray([7.0, 8.0, 9.0, 6.0]),)),
    ("put_along_axis", lambda a: (tnp.asarray([3]), tnp.asarray([5.0]), 0))])
def test_inplace_functions_write_into_numpy_arrays(name, args):
    a, b = np.arange(4.0), np.arange(4.0)
    getattr(tnp, name)(a, *args(a))
    getattr(np, name)(b, *[x.numpy() if isinstance(x, tnp.ndarray) else x for x in args(b)])
    np.testing.assert_array_equal(a, b)
    c = np.arange(4.0)
    getattr(np, name)(c, *args(c))             # NumPy's own, dispatched to ndflow
    np.testing.assert_array_equal(c, b)


def test_fill_diagonal_into_numpy_and_tape_refusal():
    from ndflow.numpy._interop import NumPyFallbackError
    a = np.zeros((3, 3))
    tnp.fill_diagonal(a, tnp.asarray(2.0))
    np.testing.assert_array_equal(a, 2.0 * np.eye(3))
    x = tnp.asarray([1.0, 2.0, 3.0])
    with nf.GradientTape() as t:
        t.watch(x)
        with pytest.raises(NumPyFallbackError, match="copyto into a NumPy array"):
            tnp.copyto(np.zeros(3), x * 2.0)
