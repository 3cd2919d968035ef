"""AutoGraph's edge classes, each compiled against the same Python function run eagerly (the
oracle: Python decides every condition on eager arrays), errors included:

- generated programs (tests/agprograms.py): nested if/for/while with break, continue and
  return at any depth under traced and Python conditions, recursion, min/max, walrus;
- `range` with traced arguments (steps of every sign, zero, extremes of int64, bad types);
- Python builtins on traced values (min, max, any, all, sum, len; the refused ones);
- recursion, returns of any structure from loops, assignment expressions, loop targets of
  loops that ran no iteration.
"""
import contextlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree

from agprograms import program, compile_program


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:          # the error's type is part of the answer
        return "err", e


def _leaves(v):
    leaves, d = tree.flatten_with_def(v)
    return repr(d), leaves


def assert_agrees(fn, *args, compiled=None):
    """`fn(*args)` compiled gives the eager answer: the same structure, values (NaN, signed
    zeros, infinities included) and dtypes (a Python number as NumPy makes it an array), or
    an error of the same type."""
    f = compiled or nf.function(fn)
    want, got = _outcome(fn, *args), _outcome(f, *args)
    if want[0] == "err":
        assert got[0] == "err", f"eager raises {want[1]!r}, compiled gives {got[1]!r}"
        assert type(got[1]) is type(want[1]) or isinstance(got[1], type(want[1])), \
            f"eager raises {want[1]!r}, compiled {got[1]!r}"
        return got[1]
    assert got[0] == "ok", f"eager gives {want[1]!r}, compiled raises {got[1]!r}"
    (dw, lw), (dg, lg) = _leaves(want[1]), _leaves(got[1])
    assert dw == dg, (want[1], got[1])
    for w, g in zip(lw, lg):
        if isinstance(w, (str, type(None))):
            assert g == w
            continue
        w, g = np.asarray(w), np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (w, g)
        np.testing.assert_array_equal(g, w)
        if w.dtype.kind == "f":
            assert np.array_equal(np.signbit(g), np.signbit(w)), (w, g)
    return got[1]


# ================================================================== generated programs
_INPUTS = [(tnp.asarray([1.0, -2.0, 3.0, 0.5]), tnp.asarray(2), 1),
           (tnp.asarray([4.0, 2.0, 1.0, 3.0]), tnp.asarray(0), 2),
           (tnp.asarray([-1.0, -0.0, 0.25, 1.0]), tnp.asarray(3), 0)]


@pytest.mark.parametrize("seed", range(48))
def test_generated_programs_agree_with_python(seed):
    src, fn = program(seed)
    f = nf.function(fn)
    for args in _INPUTS:
        try:
            assert_agrees(fn, *args, compiled=f)
        except AssertionError as e:
            raise AssertionError(f"{e}\nprogram (n={args[1]}, k={args[2]}):\n{src}") from None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(10_000, 10**9))
def test_random_programs_agree_with_python(seed):
    src, fn = program(seed)
    f = nf.function(fn)
    for args in _INPUTS[:2]:
        try:
            assert_agrees(fn, *args, compiled=f)
        except AssertionError as e:
            raise AssertionError(f"{e}\nprogram (n={args[1]}, k={args[2]}):\n{src}") from None


# ================================================================== range
def _range_sum(x, a, b, s):
    t = x * 0
    for i in range(a, b, s):
        t = t + x * i
    return t


def _range_reversed(x, a, b, s):
    t = x * 0
    for i in reversed(range(a, b, s)):
        t = t * 2 + x * i
    return t


def _range_count(a, b, s):
    c = 0
    i = -1
    for i in range(a, b, s):
        c += 1
        if c > 3:
            break
    return c, i


@pytest.mark.parametrize("fn", [_range_sum, _range_reversed])
def test_range_with_traced_arguments_is_pythons(fn):
    x = tnp.asarray([1.0, 2.0])
    f = nf.function(fn)
    for a in (-3, 0, 2, 7):
        for b in (-4, 0, 5, 9):
            for s in (-3, -1, 1, 2, 4):
                for traced in ((1, 1, 1), (0, 1, 1), (1, 1, 0), (1, 0, 1)):
                    args = [tnp.asarray(v) if t else v for v, t in zip((a, b, s), traced)]
                    if not any(traced):
                        continue
                    assert_agrees(fn, x, *args, compiled=f)


def test_range_step_zero_raises_pythons_value_error():
    x = tnp.asarray([1.0, 2.0])
    for args in [(tnp.asarray(0), tnp.asarray(5), tnp.asarray(0)),
                 (tnp.asarray(5), tnp.asarray(0), tnp.asarray(0)),
                 (tnp.asarray(0), tnp.asarray(5), 0)]:
        e = assert_agrees(_range_sum, x, *args)
        assert isinstance(e, ValueError) and "must not be zero" in str(e)
    # the graph checks it at every call: a step that is zero at the second call only
    f = nf.function(_range_sum)
    f(x, tnp.asarray(0), tnp.asarray(3), tnp.asarray(1))
    with pytest.raises(ValueError, match="arg 3 must not be zero"):
        f(x, tnp.asarray(0), tnp.asarray(3), tnp.asarray(0))
    assert f.experimental_get_tracing_count() == 1


def test_range_arguments_must_be_integer_scalars():
    x = tnp.asarray([1.0, 2.0])
    for bad in (tnp.asarray(2.0), tnp.asarray([3]), tnp.asarray([[3]])):
        e = assert_agrees(_range_sum, x, tnp.asarray(0), bad, tnp.asarray(1))
        assert isinstance(e, TypeError)
    assert_agrees(_range_sum, x, tnp.asarray(True), tnp.asarray(np.uint8(4)),
                  tnp.asarray(np.int8(1)))


def test_range_counter_is_a_python_int_and_bounds_are_exact_at_int64_limits():
    big = np.iinfo(np.int64)
    # an unsigned bound counts as Python's int (no wrap at 255)
    assert_agrees(_range_count, tnp.asarray(np.uint8(250)), tnp.asarray(np.uint8(255)), 1)
    for a, b, s in [(big.max - 5, big.max, 2), (big.min, big.min + 3, 1),
                    (big.max - 1, big.min, -big.max), (0, 10, big.max), (big.min, big.max, 1),
                    (big.max, big.min, -1), (-3, -3, 1)]:
        assert_agrees(_range_count, tnp.asarray(a), tnp.asarray(b), tnp.asarray(s))
    with pytest.raises(OverflowError, match="int64"):
        nf.function(_range_count)(tnp.asarray(np.uint64(2**63 + 5)), 0, -1)


def test_range_under_vectorized_map_and_gradients():
    def per(v):
        t = 0
        for i in range(v[0], v[1], v[2]):
            t += i
        return t
    rows = tnp.asarray([[0, 5, 1], [5, 0, -2], [0, 3, 1], [2, 2, 1]])
    want = np.array([sum(range(*r)) for r in rows.numpy().tolist()])
    np.testing.assert_array_equal(nf.function(lambda v: nf.vectorized_map(per, v))(rows), want)
    with pytest.raises(ValueError, match="must not be zero"):
        nf.function(lambda v: nf.vectorized_map(per, v))(tnp.asarray([[0, 5, 1], [5, 0, 0]]))

    def power(x, n):
        t = x
        for _ in range(n):
            t = t * x
        return t

    def grad(x, n):
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = power(x, n)
        return tape.gradient(y, x)
    x = tnp.asarray(1.5)
    assert float(nf.function(grad)(x, tnp.asarray(3))) == pytest.approx(4 * 1.5 ** 3)
    assert float(nf.function(grad)(x, tnp.asarray(0))) == 1.0


def test_range_with_a_traced_bound_outside_a_for_statement():
    def listed(n):
        return list(range(n))

    def enumerated(x, n):
        t = x * 0
        for i, j in enumerate(range(1, n)):
            t = t + x * i * j
        return t

    def zipped(x, n):
        t = x[0] * 0
        for v, j in zip(x, range(n)):
            t = t + v * j
        return t
    with pytest.raises(nf.TracingError, match="range with a traced bound"):
        nf.function(listed)(tnp.asarray(3))
    for n in (0, 1, 4):
        assert_agrees(enumerated, tnp.asarray([1.0, 2.0]), tnp.asarray(n))
        assert_agrees(zipped, tnp.asarray([1.0, 2.0, 3.0]), tnp.asarray(n))


# ================================================================== loop targets, zip
def test_loop_target_read_after_a_loop_that_ran_no_iteration():
    def last(x, n):
        for i in range(n):
            pass
        return x * i

    def last_row(xs):
        for row in xs:
            pass
        return row

    def last_pair(x, y):
        for a, b in zip(x, y):
            pass
        return a + b
    f = nf.function(last)
    for n in (3, 1, 0):
        assert_agrees(last, tnp.asarray(2.0), tnp.asarray(n), compiled=f)
    g = nf.function(last_row, input_signature=[nf.TensorSpec([None, 2], nf.float64)])
    for rows in (np.ones((3, 2)), np.zeros((0, 2))):
        assert_agrees(last_row, tnp.asarray(rows), compiled=g)
    h = nf.function(last_pair, input_signature=[nf.TensorSpec([None], nf.float64)] * 2)
    for m in (2, 0):
        assert_agrees(last_pair, tnp.asarray(np.arange(m * 1.0)), tnp.asarray(np.ones(m)),
                      compiled=h)


def test_zip_strict_lengths_are_checked_when_the_function_runs():
    def dot(x, y):
        t = 0.0
        for a, b in zip(x, y, strict=True):
            t = t + a * b
        return t
    f = nf.function(dot, input_signature=[nf.TensorSpec([None], nf.float64)] * 2)
    assert_agrees(dot, tnp.asarray([1.0, 2.0]), tnp.asarray([3.0, 4.0]), compiled=f)
    assert_agrees(dot, tnp.asarray([1.0, 2.0]), tnp.asarray([3.0]), compiled=f)
    assert_agrees(dot, tnp.asarray([1.0, 2.0]), tnp.asarray([3.0]))       # known lengths


# ================================================================== builtins
_A, _B = [tnp.asarray(v) for v in (1.0, 2.0)]
_BUILTIN_CASES = {
    "max of two": lambda a, b: max(a, b),
    "min of two": lambda a, b: min(a, b),
    "max of three": lambda a, b: max(a, b, a * 2),
    "max with a number": lambda a, b: max(a, 0.5),
    "min number first": lambda a, b: min(0.5, a),
    "max with key": lambda a, b: max(a, b, key=lambda v: -v),
    "max of a list": lambda a, b: max([a, b]),
    "max of rows": lambda a, b: max(tnp.stack([a, b, a + b])),
    "min of rows with key": lambda a, b: min(tnp.stack([a, b, a + b]), key=abs),
    "max default of no rows": lambda a, b: max(tnp.stack([a, b])[:0], default=7.0),
    "max of no rows": lambda a, b: max(tnp.stack([a, b])[:0]),
    "max of vectors": lambda a, b: max(tnp.stack([a, b]), tnp.stack([b, a])),
    "any of rows": lambda a, b: any(tnp.stack([a, b])),
    "all of rows": lambda a, b: all(tnp.stack([a, b])),
    "any of a generator": lambda a, b: any(v > 1 for v in tnp.stack([a, b])),
    "all of a list": lambda a, b: all([a > 0, b > 0]),
    "any of 2-d rows": lambda a, b: any(tnp.stack([tnp.stack([a, b]), tnp.stack([b, a])])),
    "sum of rows": lambda a, b: sum(tnp.stack([a, b])),
    "len": lambda a, b: len(tnp.stack([a, b])),
    "abs": lambda a, b: abs(a - b),
    "divmod": lambda a, b: divmod(a, b),
}
_PAIRS = [(1.0, 2.0), (2.0, 1.0), (np.nan, 1.0), (1.0, np.nan), (-0.0, 0.0), (0.0, -0.0),
          (3.0, 3.0), (0.0, 0.0), (-np.inf, np.inf)]


@pytest.mark.parametrize("name", list(_BUILTIN_CASES))
def test_builtins_on_traced_values_are_pythons(name):
    fn = _BUILTIN_CASES[name]
    f = nf.function(fn)
    for a, b in _PAIRS:
        assert_agrees(fn, tnp.asarray(a), tnp.asarray(b), compiled=f)


# (one lambda a line: AutoGraph finds a lambda's source by its line)
_UNKNOWN_LENGTH = {
    "len": lambda x: len(x),
    "sum": lambda x: sum(x),
    "sum from 10": lambda x: sum(x, 10),
    "max": lambda x: max(x),
    "min with key": lambda x: min(x, key=lambda v: (v - 1.5) ** 2),
    "any": lambda x: any(x),
    "all": lambda x: all(x),
    "x / len(x)": lambda x: x / len(x),
    "max with default": lambda x: max(x, default=0.0),
}


@pytest.mark.parametrize("name", list(_UNKNOWN_LENGTH))
def test_builtins_over_arrays_of_unknown_length(name):
    fn = _UNKNOWN_LENGTH[name]
    f = nf.function(fn, input_signature=[nf.TensorSpec([None], nf.float64)])
    for v in ([1.0, 3.0, 2.0], [np.nan, 1.0], [-0.0], []):
        x = tnp.asarray(np.array(v))
        if name.startswith("sum") and not v:
            # Python's sum of nothing is `start` itself (an int); one graph serves every
            # length, so it is `start` in the dtype of start + a row (README: differences)
            got = f(x)
            assert got.dtype == np.float64 and float(got) == fn(x)
            continue
        assert_agrees(fn, x, compiled=f)
    assert f.experimental_get_tracing_count() == 1


def test_min_max_refuse_choices_of_value_dependent_type():
    with pytest.raises(TypeError, match="dtype would depend on the values"):
        nf.function(lambda a, b: max(a, b))(tnp.asarray(1.0), tnp.asarray(np.float32(2)))
    with pytest.raises(ValueError, match="shape would depend on the values"):
        nf.function(lambda a, b: max(a, b))(tnp.asarray(1.0), tnp.asarray([2.0]))


@pytest.mark.parametrize("builtin", [int, float, complex, bool, sorted,
                                     lambda x: list(filter(None, x))])
def test_builtins_without_a_traced_meaning_name_themselves(builtin):
    f = nf.function(lambda x: builtin(x))
    with pytest.raises(nf.TracingError, match=r"\(\) of a traced value at .*use "):
        f(tnp.asarray([2.0]) if builtin in (sorted,) or not isinstance(builtin, type)
          else tnp.asarray(2.0))


# ================================================================== recursion
def _fact(n):
    if n <= 1:
        return 1
    return n * _fact(n - 1)


def _scaled(x, n):
    if n == 0:
        return x
    if tnp.sum(x) > 4:          # a traced branch at every level; the depth is Python's
        return _scaled(x * 0.5, n - 1)
    return _scaled(x + 1.0, n - 1)


def _even(x, n):
    return x if n == 0 else _odd(x * 2, n - 1)


def _odd(x, n):
    return -x if n == 0 else _even(x + 1, n - 1)


def _deep(x, n):
    return x if n == 0 else _deep(x + 1, n - 1)


def _forever(x):
    if tnp.sum(x) > 100:
        return x
    return _forever(x * 2)


class _Tree(nf.Module):
    def depth_sum(self, x, n):
        if n == 0:
            return x
        return self.depth_sum(x * 2, n - 1) + x


def test_recursive_functions_unroll_while_tracing():
    x = tnp.asarray([1.0, 2.0])
    assert_agrees(lambda v: v * _fact(5), x)
    for n in (0, 1, 3, 5):
        assert_agrees(_scaled, x, n)
        assert_agrees(_even, x, n)
    assert_agrees(_deep, x, 150)
    t = _Tree()
    assert_agrees(lambda v: t.depth_sum(v, 3), x)

    def outer(v, n):
        def inner(w, m):
            return w if m == 0 else inner(w * 3, m - 1)
        return inner(v, n)
    assert_agrees(outer, x, 3)
    fib = lambda m: m if m < 2 else fib(m - 1) + fib(m - 2)       # noqa: E731
    assert_agrees(lambda v: v * fib(7), x)


def test_recursion_decided_by_a_traced_value_is_a_clear_error():
    np.testing.assert_array_equal(_forever(tnp.asarray(1.0)), 128.0)      # eager: fine
    with pytest.raises(RecursionError, match="_forever calls itself without end while it is "
                                             "traced.*base case must be decided by Python"):
        nf.function(_forever)(tnp.asarray(1.0))


# ================================================================== returns in loops
def _ret_tuple_rows(xs):
    for row in xs:
        if tnp.sum(row) > 1:
            return row, row * 2
    return xs[0], xs[0]


def _ret_dict_range(x, n):
    for i in range(n):
        if x[0] * i > 2:
            return {"i": i, "v": x * i}
    return {"i": -1, "v": x}


def _ret_nested_loops(xs):
    for row in xs:
        for v in row:
            if v > 2:
                return (v, (row, 1))
    return (xs[0, 0], (xs[0], 0))


def _ret_while(x):
    n = 0
    while tnp.sum(x) < 50:
        x = x * 2
        n += 1
        if n > 3 and tnp.max(x) > 10:
            return n, x
    return -1, x


def _ret_for_else(xs):
    for row in xs:
        if tnp.sum(row) > 100:
            break
        if tnp.sum(row) < -5:
            return row * 0
    else:
        return xs[-1] + 1
    return xs[0]


def _ret_python_loop_traced_if(x):
    for i in range(3):
        if tnp.sum(x) > i:
            return x, i
    return x, -1


@pytest.mark.parametrize("fn,args", [
    (_ret_tuple_rows, (tnp.asarray([[0.0, 0.5], [1.0, 2.0]]),)),
    (_ret_tuple_rows, (tnp.asarray([[0.0, 0.5], [0.2, 0.1]]),)),
    (_ret_dict_range, (tnp.asarray([1.0, 2.0]), tnp.asarray(5))),
    (_ret_dict_range, (tnp.asarray([0.1, 2.0]), tnp.asarray(5))),
    (_ret_nested_loops, (tnp.asarray([[0.0, 1.0], [3.0, 1.0]]),)),
    (_ret_nested_loops, (tnp.asarray([[0.0, 1.0], [1.0, 1.0]]),)),
    (_ret_while, (tnp.asarray([1.0, 2.0]),)), (_ret_while, (tnp.asarray([30.0, 40.0]),)),
    (_ret_for_else, (tnp.asarray([[1.0, 2.0], [-9.0, 1.0]]),)),
    (_ret_for_else, (tnp.asarray([[1.0, 2.0], [3.0, 1.0]]),)),
    (_ret_for_else, (tnp.asarray([[200.0, 2.0], [3.0, 1.0]]),)),
    (_ret_python_loop_traced_if, (tnp.asarray([1.5]),)),
    (_ret_python_loop_traced_if, (tnp.asarray([-1.5]),)),
])
def test_return_of_any_structure_from_inside_loops(fn, args):
    assert_agrees(fn, *args)


def _brk_in_try(xs):
    t = 0.0
    for row in xs:
        try:
            if tnp.sum(row) > 1:
                break
            t = t + tnp.sum(row)
        finally:
            t = t + 0.5
    return t


def _cont_in_try_else(xs):
    t = 0.0
    for row in xs:
        try:
            if tnp.sum(row) > 1:
                continue
        except ValueError:
            pass
        else:
            t = t + 1
    return t


def _ret_in_with(x):
    with contextlib.nullcontext():
        with contextlib.nullcontext():
            if tnp.sum(x) > 1:
                return x
        x = x + 1
    return x * 10


def _ret_in_try(x):
    try:
        if tnp.sum(x) > 1:
            return x * 2
        y = x + 1
    except ZeroDivisionError:
        return x
    else:
        y = y * 3
    finally:
        z = 1
    return y - z


def _ret_from_while_true(x):
    while True:
        x = x * 2
        if tnp.sum(x) > 10:
            return x


@pytest.mark.parametrize("fn", [_brk_in_try, _cont_in_try_else])
def test_break_and_continue_inside_try_blocks(fn):
    # the statements after a jump inside the block are skipped (they ran: silently wrong)
    for rows in ([[0.0, 0.5], [1.0, 2.0], [0.1, 0.1]], [[0.0, 0.1]], [[5.0, 5.0]]):
        assert_agrees(fn, tnp.asarray(rows))


@pytest.mark.parametrize("fn", [_ret_in_with, _ret_in_try, _ret_from_while_true])
def test_returns_inside_with_try_and_endless_loops(fn):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # converted, not run as written
        f = nf.function(fn)
        for x in ([1.0, 2.0], [0.1, 0.2], [-3.0, 0.5]):
            if fn is _ret_from_while_true and x[0] < 0:
                continue
            assert_agrees(fn, tnp.asarray(x), compiled=f)


def test_returns_of_different_structures_under_a_traced_condition_are_a_clear_error():
    def mixed(xs):
        for row in xs:
            if tnp.sum(row) > 1:
                return row, row
        return xs[0]
    with pytest.raises(ValueError, match="the return value has a different structure"):
        nf.function(mixed)(tnp.asarray([[0.0, 0.5], [1.0, 2.0]]))

    def none_or_array(xs):
        for row in xs:
            if tnp.sum(row) > 1:
                return
        return xs[0]
    with pytest.raises((ValueError, TypeError), match="the return value"):
        nf.function(none_or_array)(tnp.asarray([[0.0, 0.5], [1.0, 2.0]]))


# ================================================================== assignment expressions
def _w_while(x):
    n = 0
    while (y := x * 2).sum() < 100:
        x = y
        n += 1
    return x, n


def _w_while_and(x):
    n = 0
    y = x
    while n < 10 and (y := y * 2).sum() < 100:
        n += 1
    return y, n


def _w_while_else(x):
    n = 0
    while (y := x * 2).sum() < 100:
        x = y
        n += 1
    else:
        n += 100
    return x, n


def _w_if(x):
    if (s := tnp.sum(x)) > 2:
        r = s * 2
    else:
        r = -s
    return r, s


def _w_and(x):
    z = 0.0
    r = tnp.sum(x) > 1 and (z := tnp.sum(x) * 3) > 5
    return r, z


def _w_comprehension(x):
    vals = [y for v in (1.0, 2.0, 3.0) if (y := v * 2) > 3]
    return vals, y


def _w_loop_if(x):
    t = 0.0
    for v in x:
        if (u := v * 2) > 1:
            t = t + u
    return t


def _w_ifexp(x):
    z = 0.0
    r = (z := 1.0) if tnp.sum(x) > 1 else (z := 2.0)
    return r, z


def _w_counter(x):
    i = 0
    total = 0.0
    while (i := i + 1) < 4:
        total = total + x[0] * i
    return total, i


def _w_traced_first(x):
    k = 0
    while tnp.sum(x) < 50 and (k := k + 1) < 6:
        x = x * 2
    return x, k


@pytest.mark.parametrize("fn", [_w_while, _w_while_and, _w_while_else, _w_if, _w_and,
                                _w_comprehension, _w_loop_if, _w_ifexp, _w_counter,
                                _w_traced_first])
def test_assignment_expressions_in_conditions(fn):
    f = nf.function(fn)
    for x in ([1.0, 2.0], [0.1, 0.2], [30.0, 40.0], [0.25, 0.5]):
        assert_agrees(fn, tnp.asarray(x), compiled=f)


def test_walrus_defined_in_one_branch_of_a_traced_and_is_the_usual_error():
    def f(x):
        r = tnp.sum(x) > 1 and (z := tnp.sum(x)) > 5
        return r, z
    with pytest.raises(ValueError, match="variable 'z' is defined in one branch only"):
        nf.function(f)(tnp.asarray([1.0, 2.0]))


def test_generated_source_of_a_program_compiles_and_converts():
    src, fn = program(7)
    code = nf.autograph.to_code(fn)
    compile(code, "<to_code>", "exec")
    assert "def prog(" in code
    g = compile_program(src)
    assert g is not fn and nf.autograph.to_code(g) == code


def _relu(v):
    if v > 0:
        return v
    return v * 0


def test_functions_given_to_map_and_reduce_are_converted():
    import functools

    def mapped(x):
        return list(map(_relu, x))

    def reduced(x):
        return functools.reduce(lambda a, b: a if a > b else b, x)
    for x in ([1.0, -2.0, 0.0], [-0.0, 3.0, np.nan]):
        assert_agrees(mapped, tnp.asarray(x))
        assert_agrees(reduced, tnp.asarray(x))
