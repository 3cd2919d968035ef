"""Indexing on every path against NumPy: x[key] and x[key] = v eagerly, under a recording tape
(values and the gradient: every selected element, repeated ones added), compiled with the index
arrays as traced arguments (boolean masks give unknown-size results) and with them as constants;
NumPy's error types wherever NumPy raises. Keys are drawn by hypothesis from every index kind:
integers (negative, out of range), slices with steps, Ellipsis, None, boolean masks (right,
short and long lengths, 0-d: Python, NumPy and ndflow booleans), integer arrays and lists, mixed.
Plus comparisons of integer arrays with Python ints outside their range (NEP 50)."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp

SETTINGS = settings(max_examples=int(os.environ.get("NDFLOW_HYPOTHESIS_EXAMPLES", 150)),
                    deadline=None, suppress_health_check=list(HealthCheck))


# ------------------------------------------------------------------ keys
@st.composite
def _component(draw, shape, pos):
    """One index entry for an array of `shape`, aimed at axis `pos` (may be wrong on purpose)."""
    size = shape[pos] if pos < len(shape) else 0
    kind = draw(st.sampled_from(["int", "slice", "ellipsis", "none", "mask", "mask0",
                                 "intarr", "list"]))
    if kind == "int":
        return draw(st.integers(-size - 1, size))
    if kind == "slice":
        bound = st.none() | st.integers(-size - 2, size + 2)
        return slice(draw(bound), draw(bound), draw(st.none() | st.sampled_from([1, 2, 3, -1, -2])))
    if kind == "ellipsis":
        return Ellipsis
    if kind == "none":
        return None
    if kind == "mask":
        nd = draw(st.integers(1, 2))
        mshape = list(shape[pos:pos + nd]) or [size]
        if draw(st.integers(0, 5)) == 0:          # a wrong length, now and then
            mshape[0] = max(mshape[0] + draw(st.sampled_from([-1, 1])), 0)
        return np.asarray(draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)),
                                        max_size=int(np.prod(mshape))))).reshape(mshape)
    if kind == "mask0":
        b = draw(st.booleans())
        return draw(st.sampled_from([b, np.bool_(b), np.asarray(b)]))
    n = draw(st.integers(0, 3))
    vals = draw(st.lists(st.integers(-size, max(size - 1, -size)) if size else st.just(0),
                         min_size=n, max_size=n))
    if kind == "list":
        return vals if vals else [0]
    return np.asarray(vals, dtype=np.int64)


@st.composite
def cases(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    n = draw(st.integers(1, 3))
    key, pos = [], 0
    for _ in range(n):
        c = draw(_component(shape, pos))
        key.append(c)
        pos += np.ndim(c) if isinstance(c, np.ndarray) and c.dtype == bool else (
            0 if c is None or c is Ellipsis or isinstance(c, (bool, np.bool_)) else 1)
    key = key[0] if len(key) == 1 and draw(st.booleans()) else tuple(key)
    return np.arange(1.0, 1.0 + int(np.prod(shape))).reshape(shape), key


def _to_nf_key(key):
    def conv(k):
        return tnp.asarray(k) if isinstance(k, np.ndarray) else k
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


def _numpy(fn):
    try:
        return fn(), None
    except (IndexError, ValueError, TypeError) as e:
        return None, type(e)


def _selection_gradient(a, key, ct):
    """d sum(a[key] * ct) / d a: ct added at every selected position (repeats add up)."""
    pos = np.arange(a.size).reshape(a.shape)[key]
    g = np.zeros(a.size)
    np.add.at(g, np.asarray(pos).ravel(), np.broadcast_to(ct, np.shape(pos)).ravel())
    return g.reshape(a.shape)


def _check(got, want, ctx):
    got = got.numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, \
        f"{ctx}: {got.dtype}{got.shape}, NumPy {want.dtype}{want.shape}"
    np.testing.assert_array_equal(got, want, err_msg=ctx)


# ------------------------------------------------------------------ get
@SETTINGS
@given(cases())
def test_getitem_every_path(case):
    a, key = case
    want, err = _numpy(lambda: a[key])
    nkey = _to_nf_key(key)
    if err is not None:
        with pytest.raises(err):
            tnp.asarray(a)[nkey]
        with pytest.raises(err), nf.GradientTape() as t:
            x = tnp.asarray(a)
            t.watch(x)
            x[nkey]
        if err is IndexError:
            with pytest.raises(IndexError):
                nf.function(lambda x: x[nkey])(tnp.asarray(a))
        return
    want = np.asarray(want)
    _check(tnp.asarray(a)[nkey], want, f"eager {key!r}")
    ct = np.arange(want.size, dtype=float).reshape(want.shape) + 0.5
    x = tnp.asarray(a)
    with nf.GradientTape() as t:
        t.watch(x)
        y = x[nkey]
        loss = tnp.sum(y * ct)
    _check(y, want, f"taped {key!r}")
    g = t.gradient(loss, x, unconnected_gradients="zero")
    np.testing.assert_array_equal(g.numpy(), _selection_gradient(a, key, ct),
                                  err_msg=f"gradient {key!r}")
    # compiled: index arrays traced (masks give unknown sizes), and as constants
    parts = list(key) if isinstance(key, tuple) else [key]
    arr_pos = [i for i, k in enumerate(parts) if isinstance(k, np.ndarray)]

    def f(x, *arrs):
        ks = list(parts)
        for i, v in zip(arr_pos, arrs):
            ks[i] = v
        return x[tuple(ks) if isinstance(key, tuple) else ks[0]]
    _check(nf.function(f)(tnp.asarray(a), *[tnp.asarray(parts[i]) for i in arr_pos]), want,
           f"compiled {key!r}")
    _check(nf.function(lambda x: x[nkey])(tnp.asarray(a)), want, f"compiled, constant {key!r}")


# ------------------------------------------------------------------ set
@SETTINGS
@given(cases(), st.booleans())
def test_setitem_every_path(case, scalar):
    a, key = case
    sel, err = _numpy(lambda: a[key])
    if err is None:
        sel = np.asarray(sel)
        pos = np.arange(a.size).reshape(a.shape)[key]
        if np.unique(pos).size != np.size(pos):
            scalar = True                 # repeated targets: only a scalar has one answer
        v = -7.0 if scalar else -np.arange(1.0, 1.0 + sel.size).reshape(sel.shape)
    else:
        v = -7.0

    def np_set():
        b = a.copy()
        b[key] = v
        return b
    want, err = _numpy(np_set)
    nkey = _to_nf_key(key)

    def nf_set(x, val):
        y = tnp.copy(x)
        y[nkey] = val
        return y
    if err is not None:
        with pytest.raises(err):
            nf_set(tnp.asarray(a), v)
        with pytest.raises(err), nf.GradientTape():
            nf_set(tnp.asarray(a), tnp.asarray(v))
        return
    _check(nf_set(tnp.asarray(a), v), want, f"eager set {key!r}")
    x, vv = tnp.asarray(a), tnp.asarray(v)
    with nf.GradientTape() as t:
        t.watch([x, vv])
        y = nf_set(x, vv)
        loss = tnp.sum(y * tnp.asarray(np.arange(a.size, dtype=float).reshape(a.shape)))
    _check(y, want, f"taped set {key!r}")
    gx, gv = t.gradient(loss, [x, vv], unconnected_gradients="zero")
    w = np.arange(a.size, dtype=float).reshape(a.shape)
    keep = np.ones(a.shape)
    keep[key] = 0
    np.testing.assert_array_equal(gx.numpy(), w * keep, err_msg=f"x gradient {key!r}")
    if not scalar:
        np.testing.assert_array_equal(gv.numpy(), w[key].reshape(np.shape(v)),
                                      err_msg=f"value gradient {key!r}")
    else:
        # a scalar reaches every written position once, however often the key repeats it
        assert float(gv.numpy()) == float(np.sum(w[keep == 0]))
    _check(nf.function(nf_set)(tnp.asarray(a), tnp.asarray(v)), want, f"compiled set {key!r}")


# ------------------------------------------------------------------ named cases
def test_zero_d_boolean_index_every_path():
    a = np.arange(4.0)
    for key in (True, False, np.bool_(True), np.bool_(False), (Ellipsis, True), (True, 1),
                (slice(None), None, False)):
        want = a[key]
        _check(tnp.asarray(a)[_to_nf_key(key)], want, repr(key))
    x = tnp.asarray(a)
    with nf.GradientTape() as t:
        t.watch(x)
        y = x[x.sum() > 1]               # a 0-d ndflow boolean: every element, one new axis
        loss = tnp.sum(y * tnp.asarray([[1.0, 2.0, 3.0, 4.0]]))
    assert y.shape == (1, 4)
    np.testing.assert_array_equal(t.gradient(loss, x).numpy(), [1, 2, 3, 4])
    f = nf.function(lambda x: x[x.sum() > 100])
    r = f(x)
    assert r.shape == (0, 4) and f.experimental_get_tracing_count() == 1
    assert f(x * 100).shape == (1, 4)
    for path in ("eager", "taped", "compiled"):
        z = tnp.asarray(a)

        def assign(z):
            z = tnp.copy(z)
            z[z.sum() > 1] = 9.0
            return z
        if path == "taped":
            with nf.GradientTape() as t:
                t.watch(z)
                r = assign(z)
        else:
            r = nf.function(assign)(z) if path == "compiled" else assign(z)
        np.testing.assert_array_equal(r.numpy(), np.full(4, 9.0), err_msg=path)


def test_mask_of_the_wrong_length_raises_on_every_path():
    a = tnp.arange(4.0)
    for m in (np.array([True, False]), np.array([True, False, True, False, True])):
        with pytest.raises(IndexError, match="boolean index did not match"):
            a[m]
        with pytest.raises(IndexError), nf.GradientTape() as t:
            t.watch(a)
            a[tnp.asarray(m)]
        with pytest.raises(IndexError):
            nf.function(lambda x, m: x[m])(a, tnp.asarray(m))
        sig = [nf.TensorSpec([None], "float64"), nf.TensorSpec([None], "bool")]
        with pytest.raises(IndexError, match="boolean index did not match"):
            nf.function(lambda x, m: x[m], input_signature=sig)(a, tnp.asarray(m))
        with pytest.raises(IndexError):
            b = tnp.copy(a)
            b[tnp.asarray(m)] = 1.0
    ok = np.array([True, False, True, False])
    sig = [nf.TensorSpec([None], "float64"), nf.TensorSpec([None], "bool")]
    np.testing.assert_array_equal(
        nf.function(lambda x, m: x[m], input_signature=sig)(a, tnp.asarray(ok)).numpy(), [0, 2])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparison_with_out_of_range_python_int(dtype, op):
    a = np.array([0, 1, np.iinfo(dtype).max], dtype)
    for v in (1000, -1, 2 ** 70, -(2 ** 70), 5):
        for flip in (False, True):
            expr = (lambda x: eval(f"{v} {op} x")) if flip else (lambda x: eval(f"x {op} {v}"))
            want = expr(a)
            _check(expr(tnp.asarray(a)), want, f"eager {v}{op}")
            with nf.GradientTape():
                _check(expr(tnp.asarray(a)), want, f"taped {v}{op}")
            _check(nf.function(expr)(tnp.asarray(a)), want, f"compiled {v}{op}")
            _check(nf.vectorized_map(expr, tnp.asarray(a)), want, f"vectorized {v}{op}")
    with pytest.raises(OverflowError):          # arithmetic still overflows, as in NumPy
        with nf.GradientTape():
            tnp.asarray(a) + 2 ** 70


def test_python_int_operands_match_numpy_answers_and_errors_on_every_path():
    """NumPy's answer or its error (OverflowError for arithmetic, for floats and bools with
    ints beyond their conversion) eagerly, taped and compiled."""
    def outcome(f, x):
        try:
            r = f(x)
        except (OverflowError, TypeError, ValueError) as e:
            return type(e).__name__
        return np.asarray(r.numpy() if isinstance(r, tnp.ndarray) else r)

    def same(p, q):
        if isinstance(p, str) or isinstance(q, str):
            return p == q if isinstance(p, str) and isinstance(q, str) else False
        return p.dtype == q.dtype and np.array_equal(p, q)
    for dt in (np.float16, np.float32, np.bool_, np.int8, np.uint8, np.int64, np.uint64):
        a = np.array([0, 1], dt)
        for v in (10 ** 40, 10 ** 5, -10 ** 400, 300, -1, 2 ** 64, -2 ** 63 - 1):
            for op in ("<", "==", "+", ">=", "!="):
                for f in (lambda x: eval(f"x {op} {v}"), lambda x: eval(f"{v} {op} x")):
                    with np.errstate(all="ignore"):
                        want = outcome(f, a)
                        got = outcome(f, tnp.asarray(a))
                        with nf.GradientTape():
                            taped = outcome(f, tnp.asarray(a))
                        compiled = outcome(nf.function(f), tnp.asarray(a))
                    for path, r in (("eager", got), ("taped", taped), ("compiled", compiled)):
                        assert same(want, r), f"{path}: {dt.__name__} {op} {v}: {r}, NumPy {want}"


# ------------------------------------------------------------------ take(mode='clip')
@pytest.mark.parametrize("idx_dtype", ["int8", "uint8", "int64"])
@pytest.mark.parametrize("n", [4, 300])
def test_take_clip_with_narrow_indices_matches_numpy_on_every_path(idx_dtype, n):
    # clip's bound n - 1 may lie beyond the indices' dtype (int8 indices, an axis of 300):
    # NumPy then has nothing to clip there, and neither has the composition
    a = np.arange(n, dtype=np.float64) * 1.5
    i = np.array([0, 3, 127] + ([-5] if idx_dtype != "uint8" else [255]), idx_dtype)
    want = np.take(a, i, mode="clip")
    x, j = tnp.asarray(a), tnp.asarray(i)
    np.testing.assert_array_equal(tnp.take(x, j, mode="clip").numpy(), want)
    np.testing.assert_array_equal(
        nf.function(lambda x, j: tnp.take(x, j, mode="clip"))(x, j).numpy(), want)
    with nf.GradientTape() as t:
        t.watch(x)
        y = tnp.take(x, j, mode="clip")
        s = tnp.sum(y)
    g = np.zeros(n)
    np.add.at(g, np.clip(i.astype(np.int64), 0, n - 1), 1.0)
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_array_equal(t.gradient(s, x).numpy(), g)
