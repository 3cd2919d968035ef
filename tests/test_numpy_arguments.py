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
@pytest.mark.parametrize("mode", _MODES, ids=repr)
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
