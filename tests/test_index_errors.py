"""Invalid indices and axes raise NumPy's exception types on every path (eager, under a
recording tape, nf.function with known and unknown sizes, vectorized_map), and valid ones give
NumPy's values: indices drawn by hypothesis (integers in and out of range, floats, slices with
float bounds, None and Ellipsis combinations, too many indices, boolean masks of matching,
mismatched and empty shapes, integer, float and object arrays, strings, dicts); the `axis`
arguments of the function families that parse them (ufunc reductions, the C functions taking
one axis, normalize_axis_tuple's functions)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp

X = np.arange(24.0).reshape(2, 3, 4)


def _outcome(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            r = fn()
        except Exception as e:      # noqa: BLE001 -- the exception type is what is compared
            return e
        return np.asarray(r.numpy() if isinstance(r, tnp.ndarray) else r)


def _agree(got, want, where):
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), \
            f"{where}: {got!r}, NumPy raised {type(want).__name__}: {want}"
    else:
        assert not isinstance(got, Exception), f"{where}: raised {got!r}, NumPy {want.shape}"
        assert got.dtype == want.dtype and got.shape == want.shape, \
            f"{where}: {got.dtype}{got.shape}, NumPy {want.dtype}{want.shape}"
        np.testing.assert_array_equal(got, want, err_msg=where)


def _nf_key(k):
    if isinstance(k, tuple):
        return tuple(_nf_key(e) for e in k)
    if isinstance(k, np.ndarray) and k.dtype.kind in "biuf":
        return tnp.asarray(k)
    return k


def _has_mask(k):
    return any(isinstance(e, np.ndarray) and e.dtype == bool
               for e in (k if isinstance(k, tuple) else (k,)))


def _get_paths(key):
    nk = _nf_key(key)
    out = {"eager": lambda: tnp.asarray(X)[nk]}

    def tape():
        a = tnp.asarray(X)
        with nf.GradientTape() as t:
            t.watch(a)
            return a[nk]
    out["tape"] = tape
    out["jit"] = lambda: nf.function(lambda a: a[nk])(tnp.asarray(X))
    sig = [nf.TensorSpec([None] * 3, np.float64)]
    out["jit_unknown"] = lambda: nf.function(lambda a: a[nk], input_signature=sig)(
        tnp.asarray(X))
    return out


def _set_paths(key):
    nk = _nf_key(key)

    def eager():
        a = tnp.array(X)
        a[nk] = -1.0
        return a

    def tape():
        a = tnp.asarray(X)
        with nf.GradientTape() as t:
            t.watch(a)
            b = a * 1
            b[nk] = -1.0
            return b

    def f(a):
        b = a * 1
        b[nk] = -1.0
        return b
    sig = [nf.TensorSpec([None] * 3, np.float64)]
    return {"eager": eager, "tape": tape, "jit": lambda: nf.function(f)(tnp.asarray(X)),
            "jit_unknown": lambda: nf.function(f, input_signature=sig)(tnp.asarray(X))}


def _bad_slice(key):
    return any(isinstance(e, slice) and any(isinstance(v, float) for v in
                                            (e.start, e.stop, e.step))
               for e in (key if isinstance(key, tuple) else (key,)))


def _want_for(name, key, want):
    """NumPy's outcome as a path can see it: with every size unknown an integer out of bounds
    or a mask of the wrong length is found only when the function runs, so a slice bound that
    is not an integer (refused for any sizes) is reported first, while tracing."""
    if name == "jit_unknown" and isinstance(want, IndexError) and _bad_slice(key) and (
            "out of bounds" in str(want) or "boolean index did not match" in str(want)):
        return TypeError("slice indices must be integers")
    return want


def _np_set(key):
    a = X.copy()
    a[key] = -1.0
    return a


_entry = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([1.0, np.float64(0.0), 0.5, None, Ellipsis, "a", {0: 1}, True,
                     np.bool_(False), slice(0, 2), slice(None, None, -1), slice(0, 1.5),
                     slice(None, None, 0), [], [0, 1.0], np.array(1.0), np.array(0)]),
    st.builds(lambda n, hi: np.arange(n) % hi if hi else np.arange(n) + 7,
              st.integers(0, 3), st.integers(0, 4)),
    st.builds(lambda n: np.linspace(0, 1, n), st.integers(0, 2)),
    st.builds(lambda s, seed: np.random.default_rng(seed).random(s) < 0.5,
              st.sampled_from([(0,), (2,), (3,), (4,), (2, 3), (3, 4), (2, 4), (0, 3),
                               (2, 3, 4), (1,)]), st.integers(0, 9)),
    st.just(np.array([1, 2], dtype=object)),
)
keys = st.one_of(_entry, st.lists(_entry, min_size=0, max_size=5).map(tuple))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(keys)
def test_getitem_errors_and_values_agree_on_every_path(key):
    want = _outcome(lambda: X[key])
    for name, run in _get_paths(key).items():
        _agree(_outcome(run), _want_for(name, key, want), f"x[{key!r}] {name}")
    if isinstance(want, Exception) or not _has_mask(key):
        # (a mask's selection size depends on its values: vectorized_map refuses it)
        got = _outcome(lambda: nf.vectorized_map(lambda a: a[_nf_key(key)],
                                                 tnp.asarray(np.stack([X, X]))))
        if not isinstance(want, Exception):
            want = np.stack([want, want])
        _agree(got, want, f"x[{key!r}] vectorized_map")


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(keys)
def test_setitem_errors_and_values_agree_on_every_path(key):
    want = _outcome(lambda: _np_set(key))
    for name, run in _set_paths(key).items():
        _agree(_outcome(run), _want_for(name, key, want), f"x[{key!r}] = -1 {name}")


@pytest.mark.parametrize("key", [
    (slice(0, 1.5), np.array([False, True])),          # found by the search above
    (np.array([True]), slice(0, 1.5)),
    (True, slice(0, 1.5), np.array([True, False])),
    (Ellipsis, np.array([True, False]), slice(0, 1.5)),
    (slice(0, 1.5), np.array([[True, False, True]])),
    (5, np.array([True, False])),
    (5, slice(0, 1.5)),
    (slice(0, 1.5), 5),
    (slice(0, 1.5), np.array([0, 9])),
])
def test_a_mismatched_mask_is_numpys_first_error_on_every_path(key):
    """NumPy compares every boolean mask with its axes while it prepares the index, before it
    reads a slice's bounds or checks an integer's range: a mismatched mask is the IndexError
    it raises wherever the mask stands, and a float slice bound its TypeError only after."""
    want = _outcome(lambda: X[key])
    assert isinstance(want, Exception)
    for name, run in _get_paths(key).items():
        _agree(_outcome(run), _want_for(name, key, want), f"x[{key!r}] {name}")
    for name, run in _set_paths(key).items():
        _agree(_outcome(run), _want_for(name, key, _outcome(lambda: _np_set(key))),
               f"x[{key!r}] = -1 {name}")


def test_an_empty_mask_is_not_checked_on_any_path():
    """NumPy does not compare an empty boolean mask's shape with the array's: it selects
    nothing (a tape or a compiled function used to raise IndexError)."""
    for mshape in [(0,), (0, 3), (2, 0)]:
        m = np.zeros(mshape, bool)
        want = X[m]
        for name, run in _get_paths(m).items():
            _agree(_outcome(run), want, f"mask {mshape} {name}")
        sig = [nf.TensorSpec([None] * 3, np.float64), nf.TensorSpec([None] * m.ndim, bool)]
        got = nf.function(lambda a, k: a[k], input_signature=sig)(tnp.asarray(X),
                                                                 tnp.asarray(m))
        _agree(_outcome(lambda: got), want, f"mask {mshape} traced mask")


@pytest.mark.parametrize("v", [0.0, 2.5])
def test_argwhere_of_a_0d_array_on_every_path(v):
    want = np.argwhere(v)
    for got in (tnp.argwhere(tnp.asarray(v)), nf.function(tnp.argwhere)(tnp.asarray(v))):
        _agree(_outcome(lambda: got), want, "argwhere")


# ------------------------------------------------------------------ axis arguments
_AXIS_FAMILY = {
    # ufunc reductions: an integer or a tuple of integers
    "sum": lambda m, a, x: m.sum(x, axis=a), "mean": lambda m, a, x: m.mean(x, axis=a),
    "max": lambda m, a, x: m.max(x, axis=a), "any": lambda m, a, x: m.any(x, axis=a),
    "var": lambda m, a, x: m.var(x, axis=a), "nansum": lambda m, a, x: m.nansum(x, axis=a),
    "ptp": lambda m, a, x: m.ptp(x, axis=a),
    "count_nonzero": lambda m, a, x: m.count_nonzero(x, axis=a),
    "squeeze": lambda m, a, x: m.squeeze(m.reshape(x[:1], (1, 4)), axis=a),
    # C functions taking one axis (a Python bool refused)
    "cumsum": lambda m, a, x: m.cumsum(x, axis=a), "argmax": lambda m, a, x: m.argmax(x, axis=a),
    "argsort": lambda m, a, x: m.argsort(x, axis=a),
    "concatenate": lambda m, a, x: m.concatenate([x, x], axis=a),
    "take": lambda m, a, x: m.take(x, [0], axis=a),
    "repeat": lambda m, a, x: m.repeat(x, 2, axis=a),
    # Python functions (normalize_axis_index / normalize_axis_tuple)
    "sort": lambda m, a, x: m.sort(x, axis=a), "diff": lambda m, a, x: m.diff(x, axis=a),
    "expand_dims": lambda m, a, x: m.expand_dims(x, a), "flip": lambda m, a, x: m.flip(x, a),
    "moveaxis": lambda m, a, x: m.moveaxis(x, a, 0), "roll": lambda m, a, x: m.roll(x, 1, axis=a),
    "median": lambda m, a, x: m.median(x, axis=a), "stack": lambda m, a, x: m.stack([x], axis=a),
}
_AXES = [[0], (0,), True, np.bool_(True), np.int64(1), np.array(1), np.array([0]), 1.0,
         np.float64(1.0), (0, 0), (0.0,), "0", 5, -3, (0, 5), None]


@pytest.mark.parametrize("name", list(_AXIS_FAMILY))
def test_axis_arguments_are_parsed_as_numpy_does(name):
    """Each axis value: NumPy's exception type (a float is not truncated to an integer, a list
    is refused where NumPy refuses it) or NumPy's value, eagerly and compiled."""
    f = _AXIS_FAMILY[name]
    x = np.arange(12.0).reshape(3, 4)
    for a in _AXES:
        want = _outcome(lambda: f(np, a, x))
        _agree(_outcome(lambda: f(tnp, a, tnp.asarray(x))), want, f"{name} axis={a!r} eager")
        _agree(_outcome(lambda: nf.function(lambda v: f(tnp, a, v))(tnp.asarray(x))), want,
               f"{name} axis={a!r} compiled")


@pytest.mark.parametrize("obj", [1.5, [1.0], np.array(1.0), "a"])
def test_insert_refuses_a_float_position(obj):
    x = np.arange(12.0).reshape(3, 4)
    want = _outcome(lambda: np.insert(x, obj, 0.0, axis=1))
    _agree(_outcome(lambda: tnp.insert(tnp.asarray(x), obj, 0.0, axis=1)), want, "insert")


def test_split_into_a_fractional_number_of_sections():
    x = np.arange(12.0).reshape(3, 4)
    for n in (1.5, 2, 2.0):
        want = _outcome(lambda: np.split(x, n, axis=1))
        got = _outcome(lambda: tnp.split(tnp.asarray(x), n, axis=1))
        if isinstance(want, Exception):
            _agree(got, want, f"split {n}")
        else:
            assert not isinstance(got, Exception), got
