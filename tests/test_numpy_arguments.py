"""Argument validation shared by families of functions, against NumPy: the exception type
where NumPy raises (eagerly and inside nf.function), the value where it accepts. One helper per
argument kind (the clip mode of take/put/choose/ravel_multi_index, ...), so each test runs the
whole family."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def _outcome(fn):
    try:
        return np.asarray(fn())
    except Exception as e:      # noqa: BLE001 -- the exception type is what is compared
        return type(e)


def _same(got, want):
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(got, want), (got, want)
    else:
        assert not isinstance(got, type), got
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


_MODES = ["raise", "wrap", "clip", b"clip", None, 0, 1, 2, 7, np.int64(1), "foo", "", "RAISE",
          "r", 1.0, True, object()]
_MODE_FAMILY = {
    "take": lambda m, mode: m.take(m.arange(4), m.asarray([1, 5, -2]) if m is tnp else
                                   np.array([1, 5, -2]), mode=mode),
    "take-in-range": lambda m, mode: m.take(m.arange(4), [1, 3], mode=mode),
    "choose": lambda m, mode: m.choose(m.asarray([0, 1, 3]) if m is tnp else np.array([0, 1, 3]),
                                       [[1, 2, 3], [4, 5, 6]], mode=mode),
    "ravel_multi_index": lambda m, mode: m.ravel_multi_index(([0, 1], [1, 1]), (2, 2), mode=mode),
}


@pytest.mark.parametrize("name", list(_MODE_FAMILY))
@pytest.mark.parametrize("mode", _MODES,
                         ids=[repr(m) if not type(m) is object else "object" for m in _MODES])
def test_clip_mode_is_parsed_as_numpy_does(name, mode):
    fn = _MODE_FAMILY[name]
    if name == "take" and isinstance(mode, int) and mode == 7:
        # NumPy's take checks the indices before an invalid integer mode (IndexError here),
        # ndflow the mode first (ValueError): both refuse; "take-in-range" compares the mode
        return
    want = _outcome(lambda: fn(np, mode))
    _same(_outcome(lambda: fn(tnp, mode)), want)
    def compiled():
        return fn(tnp, mode)
    _same(_outcome(nf.function(compiled)), want)


@pytest.mark.parametrize("mode", ["foo", 1.0, "wrap", 1])
def test_put_clip_mode(mode):
    want = np.arange(4)
    w = _outcome(lambda: np.put(want, [1, 6], [9, 8], mode=mode))
    got = tnp.arange(4)
    g = _outcome(lambda: tnp.put(got, [1, 6], [9, 8], mode=mode))
    if isinstance(w, type):
        _same(g, w)
    else:
        np.testing.assert_array_equal(got.numpy(), want)


# ------------------------------------------------------------------ out=
_X = np.arange(6.0).reshape(2, 3)
# name -> (fn(module, x, out), the result's shape)
_OUT_FAMILY = {
    "sum": (lambda m, x, o: m.sum(x, axis=0, out=o), (3,)),
    "mean": (lambda m, x, o: m.mean(x, axis=0, out=o), (3,)),
    "var": (lambda m, x, o: m.var(x, axis=0, out=o), (3,)),
    "std": (lambda m, x, o: m.std(x, axis=0, out=o), (3,)),
    "prod": (lambda m, x, o: m.prod(x, axis=0, out=o), (3,)),
    "max": (lambda m, x, o: m.max(x, axis=0, out=o), (3,)),
    "any": (lambda m, x, o: m.any(x, axis=0, out=o), (3,)),
    "ptp": (lambda m, x, o: m.ptp(x, axis=0, out=o), (3,)),
    "argmax": (lambda m, x, o: m.argmax(x, axis=0, out=o), (3,)),
    "cumsum": (lambda m, x, o: m.cumsum(x, axis=0, out=o), (2, 3)),
    "cumprod": (lambda m, x, o: m.cumprod(x, axis=1, out=o), (2, 3)),
    "nansum": (lambda m, x, o: m.nansum(x, axis=0, out=o), (3,)),
    "nanmean": (lambda m, x, o: m.nanmean(x, axis=0, out=o), (3,)),
    "median": (lambda m, x, o: m.median(x, axis=0, out=o), (3,)),
    "percentile": (lambda m, x, o: m.percentile(x, 50, axis=0, out=o), (3,)),
    "trace": (lambda m, x, o: m.trace(x, out=o), ()),
    "take": (lambda m, x, o: m.take(x, [0, 1], out=o), (2,)),
    "compress": (lambda m, x, o: m.compress([1, 0], x, axis=0, out=o), (1, 3)),
    "choose": (lambda m, x, o: m.choose([0, 1, 0], [x[0], x[1]], out=o), (3,)),
    "concatenate": (lambda m, x, o: m.concatenate([x, x], out=o), (4, 3)),
    "clip": (lambda m, x, o: m.clip(x, 1, 2, out=o), (2, 3)),
    "around": (lambda m, x, o: m.around(x, out=o), (2, 3)),
    "round": (lambda m, x, o: m.round(x, 1, out=o), (2, 3)),
    "isposinf": (lambda m, x, o: m.isposinf(x, out=o), (2, 3)),
    "matmul": (lambda m, x, o: m.matmul(x, x.T, out=o), (2, 2)),
    "vecdot": (lambda m, x, o: m.vecdot(x, x, out=o), (2,)),
    "einsum": (lambda m, x, o: m.einsum("ij,kj->ik", x, x, out=o), (2, 2)),
}


def _outs(shape):
    """Out arrays of other shapes (larger, smaller, a leading 1, a trailing 1) and dtypes."""
    return [((2,) + shape, np.float64), (shape[1:] if shape else (1,), np.float64),
            ((1,) + shape, np.float64), (shape[:-1] + (1,) if shape else (1, 1), np.float64)] + \
        [(shape, d) for d in (np.float64, np.int64, np.float32, np.complex128, np.bool_)]


@pytest.mark.parametrize("name", list(_OUT_FAMILY))
def test_out_is_validated_as_numpy_does(name):
    """Every function taking out= (one helper, ndflow/numpy/_outarg.py): a shape NumPy
    refuses is its ValueError (not a broadcasting write), a dtype it refuses its TypeError
    (UFuncTypeError for ufuncs), eagerly and compiled; accepted ones hold NumPy's values."""
    fn, shape = _OUT_FAMILY[name]
    for oshape, dt in _outs(shape):
        want_out = np.zeros(oshape, dt)
        want = _outcome(lambda: fn(np, _X, want_out))
        got_out = tnp.zeros(oshape, dt)
        _same(_outcome(lambda: fn(tnp, tnp.asarray(_X), got_out)), want)
        if not isinstance(want, type):
            np.testing.assert_array_equal(got_out.numpy(), want_out)

        def compiled(x):
            return fn(tnp, x, tnp.zeros(oshape, dt))
        _same(_outcome(lambda: nf.function(compiled)(tnp.asarray(_X))), want)


# ------------------------------------------------------------------ other arguments
_I8 = np.array([1, 2, 3], np.int8)
_F = np.arange(6.0).reshape(2, 3)
_MISC = {
    # clip: NumPy 2's grammar (both positional bounds or neither; keywords min/max)
    "clip-one-positional": lambda m: m.clip(m.asarray(_F), 2),
    "clip-a_max-only": lambda m: m.clip(m.asarray(_F), a_max=1),
    "clip-min-keyword": lambda m: m.clip(m.asarray(_F), min=1),
    "clip-both-forms": lambda m: m.clip(m.asarray(_F), 0, 1, min=1),
    "clip-none": lambda m: m.clip(m.asarray(_F), None, None),
    "clip-method-one": lambda m: m.asarray(_F).clip(1),
    "clip-method-max": lambda m: m.asarray(_F).clip(max=1),
    # clip: Python ints outside an integer dtype's range
    **{f"clip-int8-{lo}-{hi}": (lambda lo, hi: lambda m: m.clip(m.asarray(_I8), lo, hi))(lo, hi)
       for lo, hi in [(300, 400), (-300, 300), (0, 300), (None, 300), (300, None),
                      (None, -300), (5, 300), (-300, -1)]},
    **{f"clip-uint8-{lo}-{hi}": (lambda lo, hi: lambda m: m.clip(
        m.asarray(_I8.astype(np.uint8)), lo, hi))(lo, hi)
       for lo, hi in [(-300, -1), (-1, 2), (-300, None)]},
    # tensordot's axes
    "tensordot-repeated": lambda m: m.tensordot(m.asarray(_F), m.asarray(_F), ([0, 0], [0, 0])),
    "tensordot-counts": lambda m: m.tensordot(m.asarray(_F), m.asarray(_F), ([0, 1], [0])),
    "tensordot-out-of-range": lambda m: m.tensordot(m.asarray(_F), m.asarray(_F), ([5], [0])),
    "tensordot-negative": lambda m: m.tensordot(m.asarray(_F), m.asarray(_F), ([-1], [-1])),
    # reshape without a shape
    "reshape-missing": lambda m: m.reshape(m.asarray(_F)),
    "reshape-method-missing": lambda m: m.asarray(_F[:1, :1]).reshape(),
    "reshape-method-empty-tuple": lambda m: m.asarray(_F[:1, :1]).reshape(()),
    # trim_zeros of empty input
    "trim_zeros-empty": lambda m: m.trim_zeros(m.asarray(np.array([]))),
    "trim_zeros-empty-list": lambda m: m.trim_zeros([]),
    "trim_zeros-zeros": lambda m: m.trim_zeros(m.asarray(np.zeros(3))),
}


@pytest.mark.parametrize("name", list(_MISC))
def test_argument_grammar_as_numpy(name):
    fn = _MISC[name]
    _same(_outcome(lambda: fn(tnp)), _outcome(lambda: fn(np)))


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.int8, np.int32,
                                np.uint8, np.bool_])
@pytest.mark.parametrize("kw", [{}, {"period": 5}, {"discont": 2, "period": 6},
                                {"period": 4.0}])
def test_unwrap_dtype_and_values_as_numpy(dt, kw):
    """unwrap's result dtype is that of the differences and the period (an integer array with
    an integer period stays integer), eagerly and compiled."""
    v = np.array([0, 4, 9, 1, 7], dtype=dt) if dt is not np.bool_ else \
        np.array([0, 1, 1, 0, 1], bool)
    want = _outcome(lambda: np.unwrap(v, **kw))
    _same(_outcome(lambda: tnp.unwrap(tnp.asarray(v), **kw)), want)
    _same(_outcome(lambda: nf.function(lambda a: tnp.unwrap(a, **kw))(tnp.asarray(v))), want)
