"""NumPy's warnings from ndflow operations name the user's line, as NumPy's own do, eager,
under a tape and compiled (there: the line that traced the operation), and a filter that turns
them into errors raises as it does for NumPy (core/user_warnings.py)."""
import inspect
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

BIG = np.array([1e308, 1.0])


def _record(fn, *args, action="default"):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter(action)
        fn(*args)
    return [(w.category, str(w.message), w.filename, w.lineno) for w in rec]


def _two_lines(m, x):
    a = x * 10.0                         # first: overflow
    b = m.exp(x)                         # second: overflow in exp
    c = m.divide(x, 0.0)                 # third: divide by zero
    d = m.sqrt(-x)                       # fourth: invalid value
    return a, b, c, d


FIRST = inspect.getsourcelines(_two_lines)[1] + 1


def _expected():
    return [(RuntimeWarning, msg, __file__, FIRST + k) for k, msg in enumerate(
        ["overflow encountered in multiply", "overflow encountered in exp",
         "divide by zero encountered in divide", "invalid value encountered in sqrt"])]


def test_numpy_gives_what_the_tests_expect():
    assert _record(_two_lines, np, BIG) == _expected()


def test_eager_warnings_name_each_user_line():
    assert _record(_two_lines, tnp, tnp.asarray(BIG)) == _expected()
    # a second run: each location warned once already ("default"), as NumPy's would be
    assert _record(_two_lines, tnp, tnp.asarray(BIG)) == _record(_two_lines, np, BIG)
    assert _record(_two_lines, tnp, tnp.asarray(BIG), action="always") == _expected()


def test_taped_warnings_name_each_user_line():
    x = tnp.asarray(BIG)

    def taped(m, x):
        with nf.GradientTape() as tape:
            tape.watch(x)
            _two_lines(m, x)
    assert _record(taped, tnp, x, action="always") == _expected()


def test_compiled_warnings_name_the_traced_lines():
    f = nf.function(lambda x: _two_lines(tnp, x))
    x = tnp.asarray(BIG)
    for _ in range(3):      # the first call (trace, graph) and the later ones (call entries)
        assert sorted(_record(f, x, action="always"), key=lambda r: r[3]) == _expected()


def test_a_warning_from_another_line_is_not_swallowed():
    x = tnp.asarray(BIG)

    def one(x):
        return x * 10.0

    def two(x):
        return x * 10.0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("default")
        one(x)
        two(x)
        one(x)
    assert [w.lineno for w in rec] == [inspect.getsourcelines(one)[1] + 1,
                                       inspect.getsourcelines(two)[1] + 1]


@pytest.mark.parametrize("compiled", [False, True])
def test_error_filter_raises_as_for_numpy(compiled):
    def f(x):
        return x * 10.0
    if compiled:
        f = nf.function(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="overflow encountered in multiply"):
            np.array(BIG) * 10.0
        with pytest.raises(RuntimeWarning, match="overflow encountered in multiply"):
            f(tnp.asarray(BIG))


def test_error_filter_for_the_user_module_only():
    # the filter names the user's module: it applies once the warning is at the user's line
    x = tnp.asarray(BIG)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning, module=__name__)
        with pytest.raises(RuntimeWarning, match="overflow"):
            x * 10.0


def test_errstate_still_decides():
    x = tnp.asarray(BIG)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            x * 10.0
    with np.errstate(over="ignore"):
        assert _record(lambda: x * 10.0, action="always") == []
