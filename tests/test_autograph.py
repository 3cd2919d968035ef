"""AutoGraph: Python control flow converted inside `nf.function`.

Each construct runs eager (plain Python on eager arrays: the oracle), compiled, under a tape
(gradients eager vs compiled), in forward mode, and vectorized (per-example predicates and trip
counts), with the number of traces checked."""
import inspect
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)


def _close(got, want, tol=1e-12):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _close(g, w, tol)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _sum_out(fn, x, *rest):
    out = fn(x, *rest)
    return tnp.sum(out) if not isinstance(out, tuple) else sum(tnp.sum(o) for o in out)


def check(fn, cases, traces=1, grad=True, fwd=True, vmap=True, tol=1e-12):
    """`fn(*case)` compiled equals eager for every case, with `traces` traces; gradients with
    respect to the first argument (tape) and its JVP along ones (forward mode) equal eager;
    vectorized over a batch of the first arguments equals a loop of eager calls."""
    f = nf.function(fn)
    for args in cases:
        _close(f(*args), fn(*args), tol)
    assert f.experimental_get_tracing_count() == traces
    if grad:
        def g(*args):
            x = args[0]
            with nf.GradientTape() as tape:
                tape.watch(x)
                y = _sum_out(fn, *args)
            return tape.gradient(y, x, unconnected_gradients="zero")
        cg = nf.function(g)
        for args in cases:
            _close(cg(*args), g(*args), tol)
    if fwd:
        def j(*args):
            return nf.jvp(lambda x: _sum_out(fn, x, *args[1:]), (args[0],),
                          (tnp.ones_like(args[0]),))[1]
        cj = nf.function(j)
        for args in cases:
            _close(cj(*args), j(*args), tol)
    if vmap:
        xs = tnp.stack([c[0] for c in cases])
        rest = cases[0][1:]

        def per_example(x):
            return fn(x, *rest)

        def batched(xs):
            return nf.vectorized_map(per_example, xs)
        want = [fn(c[0], *rest) for c in cases]
        got = nf.function(batched)(xs)
        want = (tuple(tnp.stack([w[k] for w in want]) for k in range(len(want[0])))
                if isinstance(want[0], tuple) else tnp.stack(want))
        _close(got, want, tol)
        # and a compiled function called inside vectorized_map
        _close(nf.vectorized_map(nf.function(per_example), xs), want, tol)
    return f


def _vec(*vals):
    return tnp.asarray(np.array(vals, dtype=np.float64))


# ================================================================== if / elif / else
def if_else(x):
    if tnp.sum(x) > 0:
        y = x * 2.0
    else:
        y = -x ** 3
    return y


def if_elif_else(x):
    s = tnp.sum(x)
    if s > 5:
        y = x * 3.0
    elif s > 0:
        y = tnp.sin(x)
    else:
        y = x * x
    return y + 1


def if_without_else(x):
    y = x + 1
    if tnp.max(x) > 1:
        y = y * x
    return y


def if_nested_return(x):
    if tnp.sum(x) > 0:
        if tnp.max(x) > 2:
            return x * 10.0
        return x * 2.0
    return -x


def if_early_return_then_more(x):
    if tnp.sum(x) < -1:
        return tnp.zeros_like(x)
    y = x * 2
    z = y + tnp.exp(x)
    return z


CASES = [(_vec(1.0, 2.0, 0.5),), (_vec(-1.0, -2.0, 0.5),), (_vec(3.0, 2.5, 1.0),),
         (_vec(-0.1, 0.05, 0.0),)]


@pytest.mark.parametrize("fn", [if_else, if_elif_else, if_without_else, if_nested_return,
                                if_early_return_then_more])
def test_if_statements(fn):
    check(fn, CASES)


def conditional_expression(x):
    return x * 2.0 if tnp.sum(x) > 0 else x - 1.0


def test_conditional_expression():
    check(conditional_expression, CASES)


def bool_ops(x):
    s = tnp.sum(x)
    if s > 0 and tnp.max(x) > 1.5 or not s > -1:
        return x * 2.0
    return x + 1.0


def test_and_or_not_on_tensors():
    check(bool_ops, CASES + [(_vec(-3.0, -2.0, -1.0),)])


def test_python_conditions_keep_python_semantics():
    calls = []

    def f(x, flag):
        calls.append(flag)
        if flag and x.shape[0] > 2:
            y = x * 2
        else:
            y = x
        if flag is None or not flag:
            y = y + 1
        return y

    g = nf.function(f)
    _close(g(_vec(1, 2, 3), True), f(_vec(1, 2, 3), True))
    _close(g(_vec(1, 2, 3), False), f(_vec(1, 2, 3), False))
    assert g.experimental_get_tracing_count() == 2
    # a Python condition picks the branch while tracing: the graph has no cond
    cf = g.get_concrete_function(_vec(1, 2, 3), True)
    assert "cond" not in str(cf)


def test_traced_condition_becomes_one_cond_node():
    cf = nf.function(if_else).get_concrete_function(_vec(1.0, 2.0))
    assert str(cf).count("cond(") == 1


def test_python_values_unchanged_by_both_branches_stay_python():
    def f(x):
        n = 3
        scale = "double"
        if tnp.sum(x) > 0:
            y = x * 2
        else:
            y = x
        for i in range(n):      # n is still a Python int: the loop unrolls
            y = y + i
        return y, scale == "double"

    g = nf.function(f)
    _close(g(_vec(1.0, 2.0))[0], f(_vec(1.0, 2.0))[0])
    assert g(_vec(1.0, 2.0))[1] is True


def test_numbers_differing_between_branches_become_arrays():
    def f(x):
        if tnp.sum(x) > 0:
            k = 1
        else:
            k = 2
        return x * k

    check(f, CASES, fwd=False)


# ================================================================== while
def while_data_dependent(x):
    i = 0
    while tnp.sum(x) < 100.0:
        x = x * 2.0 + 1.0
        i += 1
    return x


def while_counter(x, n):
    i = 0
    s = x * 0.0
    while i < n:
        s = s + x * i
        i += 1
    return s


def test_while_with_data_dependent_trip_count():
    check(while_data_dependent, [(_vec(1.0, 2.0),), (_vec(30.0, 50.0),), (_vec(0.1, 0.2),)])


def test_while_with_traced_bound():
    n = tnp.asarray(5)
    check(while_counter, [(_vec(1.0, 2.0), n), (_vec(3.0, -1.0), n)])
    # the bound is a graph input: one trace serves every n
    f = nf.function(while_counter)
    for k in range(4):
        _close(f(_vec(1.0, 2.0), tnp.asarray(k)), while_counter(_vec(1.0, 2.0), k))
    assert f.experimental_get_tracing_count() == 1


def test_while_over_python_values_unrolls():
    def f(x):
        i = 0
        while i < 3:
            x = x + i
            i += 1
        return x

    cf = nf.function(f).get_concrete_function(_vec(1.0))
    assert "while" not in str(cf)
    _close(nf.function(f)(_vec(1.0)), f(_vec(1.0)))


def test_gradient_of_while_with_data_dependent_trip_count():
    def f(x):
        while tnp.sum(x) < 50.0:
            x = x * x + 1.0
        return x

    def g(x):
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.sum(f(x))
        return t.gradient(y, x)

    cg = nf.function(g)
    for v in ([1.0, 1.5], [0.5, 0.2], [10.0, 50.0]):
        _close(cg(_vec(*v)), g(_vec(*v)))
    assert cg.experimental_get_tracing_count() == 1


# ================================================================== for
def for_over_rows(x):
    acc = x[0] * 0.0
    for row in x:
        acc = acc * 0.5 + tnp.sin(row)
    return acc


def for_over_range_tensor(x, n):
    acc = x
    for i in range(n):
        acc = acc * 1.5 + tnp.cos(acc) * i
    return acc


def for_range_start_stop_step(x, n):
    acc = x
    for i in range(1, n, 2):
        acc = acc + x * i
    return acc


def test_for_over_a_tensors_first_axis():
    xs = [(tnp.asarray(np.random.default_rng(k).normal(size=(4, 3))),) for k in range(3)]
    check(for_over_rows, xs)
    # a known number of rows: one scan; with a break, or rows of unknown number: a while loop
    assert "scan(" in str(nf.function(for_over_rows).get_concrete_function(xs[0][0]))
    assert "while(" in str(nf.function(for_break).get_concrete_function(xs[0][0]))
    g = nf.function(for_over_rows, input_signature=[_spec(None, 3)])
    assert "while(" in str(g.get_concrete_function())
    for n in (1, 4):
        x = tnp.asarray(np.random.default_rng(n).normal(size=(n, 3)))
        _close(g(x), for_over_rows(x))


def test_for_over_range_of_a_traced_bound():
    n = tnp.asarray(4)
    check(for_over_range_tensor, [(_vec(1.0, 2.0), n), (_vec(0.3, -2.0), n)])
    check(for_range_start_stop_step, [(_vec(1.0, 2.0), tnp.asarray(6)),
                                      (_vec(0.3, -2.0), tnp.asarray(6))])
    f = nf.function(for_range_start_stop_step)
    for k in range(0, 7):
        _close(f(_vec(1.0, 2.0), tnp.asarray(k)), for_range_start_stop_step(_vec(1.0, 2.0), k))
    assert f.experimental_get_tracing_count() == 1


def test_for_over_python_iterables_unrolls():
    def f(x):
        for i in range(3):
            x = x + i
        for a, b in zip([1.0, 2.0], [3.0, 4.0]):
            x = x * a + b
        for k, w in enumerate((0.5, 0.25)):
            x = x - w * k
        return x

    cf = nf.function(f).get_concrete_function(_vec(1.0))
    assert "while" not in str(cf) and "scan" not in str(cf)
    check(f, CASES)


def test_for_target_used_after_the_loop():
    def f(x):
        last = x[0]
        for row in x:
            last = row
        return last * 2

    check(f, [(tnp.asarray(np.arange(6.0).reshape(3, 2)),)])


# ================================================================== break / continue / return
def for_break(x):
    acc = x[0] * 0.0
    for row in x:
        if tnp.sum(row) > 3.0:
            break
        acc = acc + row
    return acc


def for_continue(x):
    acc = x[0] * 0.0
    for row in x:
        if tnp.sum(row) < 0.0:
            continue
        acc = acc + row * row
    return acc


def while_break_continue(x):
    i = 0
    while True:
        i += 1
        if tnp.sum(x) > 40.0:
            break
        if i % 2 == 0:
            x = x + 1.0
            continue
        x = x * 2.0
    return x


def return_in_loop(x):
    for row in x:
        if tnp.sum(row) > 2.0:
            return row * 2.0
    return x[0] * 0.0


def range_break(x, n):
    for i in range(n):
        x = x * 1.5
        if tnp.max(x) > 10.0:
            break
    return x


def test_break():
    rows = tnp.asarray(np.array([[1.0, 0.5], [1.0, 1.5], [3.0, 3.0], [0.1, 0.1]]))
    check(for_break, [(rows,), (rows * 0.1,), (rows * 10.0,)])


def test_continue():
    rows = tnp.asarray(np.array([[1.0, 0.5], [-1.0, -1.5], [3.0, 3.0], [-0.1, 0.1]]))
    check(for_continue, [(rows,), (-rows,), (rows * 2.0,)])


def test_while_true_with_break_and_continue():
    check(while_break_continue, [(_vec(1.0, 2.0),), (_vec(30.0, 20.0),), (_vec(0.1, 0.0),)])


def test_return_inside_a_loop():
    rows = tnp.asarray(np.array([[1.0, 0.5], [1.0, 1.5], [3.0, 3.0]]))
    check(return_in_loop, [(rows,), (rows * 0.1,), (rows * 10.0,)])


def test_break_in_range_loop_with_traced_bound():
    check(range_break, [(_vec(1.0, 2.0), tnp.asarray(10)), (_vec(0.1, 0.2), tnp.asarray(10)),
                        (_vec(0.01, 0.02), tnp.asarray(3))])


# ================================================================== assert
def test_assert_on_tensors_runs_with_the_graph():
    def f(x):
        assert tnp.all(x > 0), "x must be positive"
        return tnp.log(x)

    g = nf.function(f)
    _close(g(_vec(1.0, 2.0)), f(_vec(1.0, 2.0)))
    with pytest.raises(AssertionError, match="x must be positive") as e:
        g(_vec(1.0, -2.0))
    assert f"test_autograph.py:{_line_of(f, 'assert tnp.all')}" in str(e.value)
    assert g.experimental_get_tracing_count() == 1
    # per example under vectorized_map, and differentiable around it
    h = nf.function(lambda xs: nf.vectorized_map(f, xs))
    _close(h(tnp.ones((3, 2))), tnp.zeros((3, 2)))
    with pytest.raises(AssertionError):
        h(tnp.asarray(np.array([[1.0, 1.0], [1.0, -1.0]])))

    def grad(x):
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.sum(f(x))
        return t.gradient(y, x)
    _close(nf.function(grad)(_vec(1.0, 4.0)), _vec(1.0, 0.25))


def test_assert_on_python_values_keeps_python_semantics():
    def f(x, k):
        assert k > 0, "k"
        return x * k

    with pytest.raises(AssertionError, match="k"):
        nf.function(f)(_vec(1.0), -1)


# ================================================================== calls, closures, methods
def helper_with_if(x):
    if tnp.sum(x) > 0:
        return x * 2.0
    return x * -3.0


def test_called_user_functions_are_converted():
    def f(x):
        return helper_with_if(x) + 1.0

    check(f, CASES)


def test_nested_functions_lambdas_and_closures():
    scale = tnp.asarray(3.0)

    def f(x):
        def inner(v):
            if tnp.sum(v) > 0:
                v = v * scale
            return v
        pick = lambda v: v if tnp.max(v) > 1 else -v      # noqa: E731
        return pick(inner(x))

    check(f, CASES)


def test_nonlocal_and_globals_are_live():
    counter = [0]
    state = {"k": 2.0}

    def f(x):
        nonlocal_bump()
        if tnp.sum(x) > 0:
            x = x * state["k"]
        return x

    def nonlocal_bump():
        counter[0] += 1

    g = nf.function(f)
    _close(g(_vec(1.0)), _vec(2.0))
    assert counter == [1]
    state["k"] = 5.0      # read while tracing: a new trace is needed to see it, as in TF
    _close(nf.function(f)(_vec(1.0)), _vec(5.0))


class Model:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.step(x)

    def step(self, x):
        while tnp.sum(x) < self.k:
            x = x * 2.0
        return x


class Sub(Model):
    def step(self, x):
        y = super().step(x)
        if tnp.max(y) > 50:
            y = y / 2.0
        return y


def test_methods_callable_objects_and_super():
    m, s = Model(30.0), Sub(60.0)
    for obj in (m, s):
        f = nf.function(lambda x: obj(x))
        for v in ([1.0, 2.0], [20.0, 30.0]):
            _close(f(_vec(*v)), obj(_vec(*v)))
        assert f.experimental_get_tracing_count() == 1


def test_nf_function_method_with_autograph():
    class M:
        @nf.function
        def f(self, x):
            if tnp.sum(x) > 0:
                return x
            return -x

    m = M()
    _close(m.f(_vec(-1.0)), _vec(1.0))


def test_library_code_is_not_converted():
    from ndflow.autograph import conversion
    assert conversion.convert(tnp.sum) is tnp.sum
    assert conversion.convert(np.sum) is np.sum
    assert conversion.convert(inspect.getsource) is inspect.getsource
    assert conversion.convert(helper_with_if) is not helper_with_if


def test_print_runs_while_tracing(capsys):
    def f(x):
        print("tracing")
        if tnp.sum(x) > 0:
            print("true branch traced")
            x = x + 1
        return x

    g = nf.function(f)
    g(_vec(1.0))
    g(_vec(-1.0))
    out = capsys.readouterr().out
    assert out.count("tracing") == 1 and out.count("true branch traced") == 1


def test_control_flow_functions_given_user_functions_convert_them():
    def f(x):
        def body(i, v):
            if tnp.sum(v) > 10:
                v = v - 1
            else:
                v = v * 2
            return i + 1, v
        return nf.while_loop(lambda i, v: i < 5, body, (0, x))[1]

    check(f, CASES, vmap=False)


# ================================================================== errors
def test_variable_defined_in_one_branch_is_a_clear_error():
    def f(x):
        if tnp.sum(x) > 0:
            y = x + 1
        return y

    with pytest.raises(ValueError, match="'y'") as e:
        nf.function(f)(_vec(1.0))
    assert f"test_autograph.py:{_line_of(f, 'if tnp.sum')}" in str(e.value)


def test_loop_variable_changing_dtype_is_a_clear_error():
    def f(x, n):
        k = tnp.asarray(0)
        for i in range(n):
            k = k + 0.5
        return x * k

    with pytest.raises(TypeError, match="'k'") as e:
        nf.function(f)(_vec(1.0), tnp.asarray(3))
    assert f"test_autograph.py:{_line_of(f, 'for i in range')}" in str(e.value)


def test_loop_variable_changing_rank_is_a_clear_error():
    def f(x):
        while tnp.sum(x) < 10:
            x = tnp.stack([x, x])
        return x

    with pytest.raises(ValueError, match="'x'") as e:
        nf.function(f)(_vec(1.0))
    assert f"test_autograph.py:{_line_of(f, 'while tnp.sum')}" in str(e.value)


def test_branches_with_different_dtypes_are_a_clear_error():
    def f(x):
        if tnp.sum(x) > 0:
            y = x.astype(np.float32)
        else:
            y = x
        return y

    with pytest.raises(TypeError, match="'y'.*float32"):
        nf.function(f)(_vec(1.0))


def test_loop_variable_only_defined_inside_the_loop_is_a_clear_error():
    def f(x):
        while tnp.sum(x) < 10:
            x = x * 2
            t = x + 1
        return t

    with pytest.raises(ValueError, match="'t'"):
        nf.function(f)(_vec(1.0))


def test_runtime_errors_point_at_the_users_line():
    def f(x, i):
        if tnp.sum(x) > 0:
            y = tnp.reshape(x, (2, -1))
        else:
            y = tnp.reshape(x * 2, (1, -1))
        return y

    with pytest.raises(ValueError) as e:
        nf.function(f)(tnp.ones(5), 0)
    assert f"test_autograph.py:{_line_of(f, 'y = tnp.reshape(x, (2')}" in str(e.value)


def test_traceback_shows_the_users_source_line():
    def f(x):
        if tnp.sum(x) > 0:
            raise RuntimeError("boom")
        return x

    with pytest.raises(RuntimeError) as e:
        nf.function(f)(_vec(1.0))
    frames = [fr for fr in e.traceback if fr.path == __file__ or str(fr.path) == __file__]
    assert any(fr.lineno + 1 == _line_of(f, 'raise RuntimeError') for fr in frames)


# ================================================================== to_code / opting out
def test_to_code_shows_the_converted_source():
    src = nf.autograph.to_code(if_else)
    assert "def if_else(x):" in src and "if_stmt" in src
    src = nf.autograph.to_code(nf.function(for_break))
    assert "for_stmt" in src and " break" not in src
    compile(src, "<to_code>", "exec")


def test_do_not_convert_and_autograph_false():
    @nf.autograph.experimental.do_not_convert
    def raw(x):
        if tnp.sum(x) > 0:
            return x
        return -x

    with pytest.raises(nf.TracingError):
        nf.function(raw)(_vec(1.0))
    with pytest.raises(nf.TracingError):
        nf.function(lambda x: raw(x) + 1)(_vec(1.0))
    with pytest.raises(nf.TracingError):
        nf.function(if_else, autograph=False)(_vec(1.0))
    _close(raw(_vec(-1.0)), _vec(1.0))


def test_unconvertible_source_runs_as_written_with_a_warning():
    ns = {}
    exec("def f(x):\n    return x + 1\n", {"tnp": tnp}, ns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _close(nf.function(ns["f"])(_vec(1.0)), _vec(2.0))     # <string>: library-like, as is


def test_conversion_is_cached():
    from ndflow.autograph import conversion
    a = conversion.convert(if_else)
    assert conversion.convert(if_else) is a


# ================================================================== dynamic shapes
def _spec(*shape, dtype=np.float64):
    return nf.TensorSpec(list(shape), dtype)


def test_shape_entries_in_reshape_one_trace_for_all_sizes():
    @nf.function(input_signature=[_spec(None, None, 4)])
    def f(b):
        s = nf.shape(b)
        return nf.reshape(b, [s[0], s[1] * s[2]]), tnp.reshape(b, (s[0] * s[1], s[2]))

    for shape in [(2, 3, 4), (5, 1, 4), (0, 2, 4), (3, 0, 4)]:
        x = np.random.default_rng(0).normal(size=shape)
        a, b = f(tnp.asarray(x))
        _close(a, x.reshape(shape[0], shape[1] * 4))
        _close(b, x.reshape(shape[0] * shape[1], 4))
    assert f.experimental_get_tracing_count() == 1
    # x.shape keeps the static shape, with None
    seen = []
    nf.function(lambda b: seen.append(b.shape) or b, input_signature=[_spec(None, 3)])(
        tnp.ones((2, 3)))
    assert seen == [(None, 3)]


def test_sizes_known_while_tracing_stay_static():
    @nf.function(input_signature=[_spec(None, 10, 32)])
    def f(b):
        s = nf.shape(b)
        return nf.reshape(b, [s[0], s[1] * s[2]])

    cf = f.get_concrete_function()
    assert "reshape_dynamic" not in str(cf) and "320" in str(cf)
    assert cf.graph.outputs[0].shape == (None, 320)


def test_gradient_and_vectorized_map_of_runtime_reshape():
    def loss(b):
        s = nf.shape(b)
        return tnp.sum(tnp.sin(tnp.reshape(b, [s[0] * s[1], s[2]])) * tnp.arange(4.0))

    def grad(b):
        with nf.GradientTape() as t:
            t.watch(b)
            y = loss(b)
        return t.gradient(y, b)

    g = nf.function(grad, input_signature=[_spec(None, None, 4)])
    for shape in [(2, 3, 4), (1, 5, 4)]:
        x = tnp.asarray(np.random.default_rng(1).normal(size=shape))
        _close(g(x), grad(x))
    assert g.experimental_get_tracing_count() == 1

    def per_example(row):
        s = nf.shape(row)
        return nf.reshape(row, [s[0], s[1] * s[2]])

    v = nf.function(lambda xs: nf.vectorized_map(per_example, xs),
                    input_signature=[_spec(None, None, 2, 3)])
    x = np.random.default_rng(2).normal(size=(4, 2, 2, 3))
    _close(v(tnp.asarray(x)), x.reshape(4, 2, 6))
    # sizes that do not fit are an error, as in NumPy (not a silently inferred size)
    bad = nf.function(lambda b: nf.reshape(b, [nf.shape(b)[0] * 2, 3]),
                      input_signature=[_spec(None, 3)])
    with pytest.raises(ValueError, match="reshape"):
        bad(tnp.ones((2, 3)))


def test_creation_and_broadcast_with_runtime_sizes():
    @nf.function(input_signature=[_spec(None, None)])
    def f(x):
        s = nf.shape(x)
        return (tnp.zeros((s[0], 2)), tnp.ones([s[1]], dtype=np.int32), nf.zeros(s),
                nf.ones([s[0], s[1] + 1]), tnp.full((s[1], s[0]), 2.5),
                tnp.broadcast_to(x[:1], s), nf.fill([s[0]], 7))

    for shape in [(2, 3), (1, 4), (0, 2)]:
        x = np.random.default_rng(3).normal(size=shape)
        n, m = shape
        got = f(tnp.asarray(x))
        want = (np.zeros((n, 2)), np.ones(m, np.int32), np.zeros(shape, np.float32),
                np.ones((n, m + 1), np.float32), np.full((m, n), 2.5),
                np.broadcast_to(x[:1], shape), np.full(n, 7, np.int32))     # tf.fill: int32
        _close(got, want)
        got[0][...] = 1.0          # a fresh array, not a broadcast view
    assert f.experimental_get_tracing_count() == 1


def test_tile_arange_and_range_with_runtime_sizes():
    @nf.function(input_signature=[_spec(None, 2), nf.TensorSpec([], np.int32)])
    def f(x, k):
        s = nf.shape(x)
        return (nf.tile(x, [k, s[1]]), tnp.tile(x, (2, k)), tnp.arange(s[0]), nf.range(k),
                tnp.arange(1, s[0] * 2, 3), tnp.arange(0.5, k))

    for n, k in [(3, 2), (1, 0), (4, 3)]:
        x = np.random.default_rng(4).normal(size=(n, 2))
        got = f(tnp.asarray(x), tnp.asarray(k, dtype=np.int32))
        want = (np.tile(x, (k, 2)), np.tile(x, (2, k)), np.arange(n), np.arange(k, dtype=np.int32),
                np.arange(1, n * 2, 3), np.arange(0.5, k))
        _close(got, want)
    assert f.experimental_get_tracing_count() == 1

    def grad(x, k):
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.sum(tnp.tile(x, (k, 1)) ** 2)
        return t.gradient(y, x)
    x = tnp.asarray(np.arange(4.0).reshape(2, 2))
    _close(nf.function(grad)(x, tnp.asarray(3)), grad(x, 3))


def test_slices_with_runtime_bounds():
    @nf.function(input_signature=[_spec(None, 3), nf.TensorSpec([], np.int32)])
    def f(x, k):
        n = nf.shape(x)[0]
        return x[:n // 2], x[k:, 1:], x[1, :k], x[..., -k:], x[::k] if False else x[k::2]

    x = np.arange(18.0).reshape(6, 3)
    for k in [0, 1, 2, 5, 9, -1, -7]:
        got = f(tnp.asarray(x), tnp.asarray(k, dtype=np.int32))
        _close(got, (x[:3], x[k:, 1:], x[1, :k], x[..., -k:], x[k::2]))
    assert f.experimental_get_tracing_count() == 1

    def grad(x, k):
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.sum(x[k:-1] ** 2)
        return t.gradient(y, x)
    for k in (0, 2):
        _close(nf.function(grad)(tnp.asarray(x), tnp.asarray(k)), grad(tnp.asarray(x), k))
    v = nf.function(lambda xs, k: nf.vectorized_map(lambda r: r[k:] * 2.0, xs))
    _close(v(tnp.asarray(x), tnp.asarray(1)), x[:, 1:] * 2.0)


def test_loops_over_tensors_of_unknown_length():
    def f(x):
        acc = x[0] * 0.0
        for row in x:
            acc = acc + row
        n = len(x)
        for i in range(n):
            acc = acc * 0.5
        return acc

    g = nf.function(f, input_signature=[_spec(None, 2)])
    for n in (1, 3, 5):
        x = tnp.asarray(np.random.default_rng(n).normal(size=(n, 2)))
        _close(g(x), f(x))
    assert g.experimental_get_tracing_count() == 1


def test_effective_tf_get_shape_and_reshape_helpers_with_unknown_sizes():
    import importlib
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
    try:
        eff = importlib.import_module("effective_tf")
    finally:
        sys.path.pop(0)

    f = nf.function(lambda b: eff.reshape(b, [0, [1, 2]]),
                    input_signature=[nf.TensorSpec([None, None, 32], nf.float32)])
    h = nf.function(lambda b: eff.get_shape(b), input_signature=[_spec(None, 10, 32)])
    for shape in [(5, 10, 32), (2, 3, 32), (0, 4, 32)]:
        x = np.random.default_rng(5).normal(size=shape).astype(np.float32)
        _close(f(tnp.asarray(x)), x.reshape(shape[0], -1) if shape[0] else
               x.reshape(0, shape[1] * 32))
        _close(eff.reshape(tnp.asarray(x), [0, [1, 2]]), f(tnp.asarray(x)))
    assert f.experimental_get_tracing_count() == 1
    dims = h(tnp.ones((7, 10, 32)))
    assert int(dims[0]) == 7 and dims[1:] == [10, 32]


def test_vectorized_map_converts_its_function_per_example():
    def f(x):
        if tnp.sum(x) > 0:
            y = x * 2.0
        else:
            y = -x
        n = 0
        while tnp.sum(y) < 20.0:
            y = y + 3.0
            n += 1
        return y, n

    xs = tnp.asarray(np.array([[1.0, 2.0], [-1.0, -3.0], [30.0, 1.0]]))
    want = [f(x) for x in xs]
    ys, ns = nf.vectorized_map(f, xs)          # eager vectorized_map, as in TensorFlow
    _close(ys, tnp.stack([w[0] for w in want]))
    assert ns.tolist() == [w[1] for w in want]


def test_nested_loops_tuples_while_else_and_early_returns():
    def f(x, n):
        total = tnp.zeros_like(x[0])
        for i in range(n):
            j = 0
            while j < i:
                if tnp.sum(x[j]) > 1.0:
                    total = total + x[j]
                else:
                    total = total - 0.5 * x[j]
                j += 1
            total = total * [v * 2 for v in (1.0, 2.0)][0] / 2
        a, b = total, total * 0
        for k in range(n):
            a, b = b + 1, a * 2
        k = tnp.asarray(0)
        while k < 3 and tnp.sum(a) < 100:
            a = a * 2
            k = k + 1
        else:
            a = a + 0.5
        for r in range(3):
            for row in x:
                if tnp.max(row) > 5:
                    return row + r + a
        return a + b

    x = tnp.asarray(np.array([[1.0, 2.0], [0.1, 0.2], [7.0, 1.0]]))
    g = nf.function(f)
    for scale in (1.0, 0.1):
        for n in (0, 3):
            _close(g(x * scale, tnp.asarray(n)), f(x * scale, n))
    assert g.experimental_get_tracing_count() == 1


def test_generators_are_not_converted():
    def gen(x):
        for i in range(2):
            yield x + i

    def f(x):
        return sum(gen(x))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(nf.function(f)(_vec(1.0)), _vec(3.0))
        _close(nf.function(lambda x: tnp.stack(list(gen(x))))(_vec(1.0)), tnp.asarray([[1.0], [2.0]]))


def test_values_leaked_from_a_traced_loop_are_a_clear_error():
    def f(x, n):
        out = []
        for i in range(n):
            out.append(x * i)
        return tnp.stack(out)

    with pytest.raises(ValueError, match="finished") as e:
        nf.function(f)(tnp.ones(2), tnp.asarray(3))
    assert f"test_autograph.py:{_line_of(f, 'return tnp.stack')}" in str(e.value)

    def g(x, n):
        out = []
        for i in range(n):
            out.append(x * i)
        return out[0]

    with pytest.raises(ValueError, match="finished"):
        nf.function(g)(tnp.ones(2), tnp.asarray(3))
    # over a Python range the loop unrolls and the list holds the trace's own values
    _close(nf.function(f)(tnp.ones(2), 3), np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))


def test_enumerate_and_zip_over_traced_arrays_are_one_loop():
    def f(x, y):
        acc = x[0] * 0.0
        for i, row in enumerate(x):
            acc = acc + row * i
        for a, b in zip(x, y):
            if tnp.sum(a) > 0:
                acc = acc + a * b
        return acc

    x = tnp.asarray(np.random.default_rng(0).normal(size=(4, 2)))
    y = tnp.asarray(np.random.default_rng(1).normal(size=(3, 2)))
    g = nf.function(f, input_signature=[_spec(None, 2), _spec(None, 2)])
    _close(g(x, y), f(x, y))
    _close(g(x[:2], y), f(x[:2], y))
    assert g.experimental_get_tracing_count() == 1
    check(f, [(x, y), (-x, y)], vmap=False)


# ================================================================== programs in TensorFlow's style
def square_if_positive(x):
    if x > 0:
        x = x * x
    else:
        x = 0
    return x


def sum_even(items):
    s = 0
    for c in items:
        if c % 2 > 0:
            continue
        s += c
    return s


def collatz(x):
    count = nf.constant(0)
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        count += 1
    return count


def fizzbuzz_count(n):
    count = 0
    for i in nf.range(1, n + 1):
        if i % 15 == 0:
            count += 15
        elif i % 3 == 0:
            count += 3
        elif i % 5 == 0:
            count += 5
        else:
            count += 1
    return count


@pytest.mark.parametrize("fn,args", [
    (square_if_positive, [(nf.constant(2),), (nf.constant(-2),)]),
    (sum_even, [(nf.constant([10, 12, 15, 20]),), (nf.constant([1, 3, 5, 8]),)]),
    (collatz, [(nf.constant(27),), (nf.constant(1),), (nf.constant(6),)]),
    (fizzbuzz_count, [(nf.constant(15),), (nf.constant(0),), (nf.constant(31),)]),
], ids=["square_if_positive", "sum_even", "collatz", "fizzbuzz"])
def test_tensorflow_style_programs(fn, args):
    f = nf.function(fn)
    for a in args:
        got, want = f(*a), fn(*a)
        assert np.asarray(got).tolist() == np.asarray(want).tolist()
        if not isinstance(want, (int, float)):      # a Python number eagerly: an array compiled
            assert np.asarray(got).dtype == np.asarray(want).dtype
    assert f.experimental_get_tracing_count() == 1


def test_augmented_assignment_inside_traced_branches_and_loops():
    def f(x):
        s = tnp.zeros_like(x)
        for row in x:
            if tnp.sum(row) > 0:
                s += row          # s belongs to the loop body: updated as a new value
            s *= 0.5
        return s

    x = tnp.asarray(np.array([[1.0, 2.0], [-3.0, 1.0], [2.0, 2.0]]))
    check(f, [(x,), (-x,)], vmap=False)

    def g(x):
        k = tnp.zeros((), dtype=np.int32)
        if tnp.sum(x) > 0:
            k += 1.5          # NumPy refuses float into int in place
        return k

    with pytest.raises(TypeError, match="same_kind"):
        nf.function(g)(_vec(1.0))
    with pytest.raises(TypeError):
        g(_vec(1.0))


def test_nf_function_of_a_callable_object_converts_its_call():
    m = Model(30.0)
    f = nf.function(m)
    for v in ([1.0, 2.0], [20.0, 30.0]):
        _close(f(_vec(*v)), m(_vec(*v)))
    assert f.experimental_get_tracing_count() == 1


def test_variables_pass_through_converted_branches_and_loops():
    v = nf.Variable(np.array([1.0, 2.0]))

    def f(x, n):
        w = v
        if tnp.sum(x) > 0:
            y = x * w
        else:
            y = x
        for i in range(n):
            y = y + w
        w.assign_add(tnp.ones(2))        # still the Variable
        return y

    g = nf.function(f)
    _close(g(_vec(1.0, 1.0), tnp.asarray(2)), np.array([3.0, 6.0]))
    _close(v.numpy(), np.array([2.0, 3.0]))
    _close(g(_vec(-1.0, -1.0), tnp.asarray(1)), np.array([1.0, 2.0]))

    u = nf.Variable(np.array([10.0, 20.0]))

    def h(x):
        if tnp.sum(x) > 0:
            w = v
        else:
            w = u
        return w + 0.0                     # two Variables: their values are read

    _close(nf.function(h)(_vec(1.0)), v.numpy())
    _close(nf.function(h)(_vec(-1.0)), u.numpy())


def test_item_assignment_in_traced_loops_and_branches_is_numpys():
    def f(x, n):
        out = tnp.zeros((4, 2))
        alias = out                      # sees every change, as in NumPy
        for i in range(n):
            out[i] = x * i
        s = tnp.zeros(2)
        if tnp.sum(x) > 0:
            s += x
            out[3] += 1.0
        return out, alias, s

    g = nf.function(f)
    for v, n in (([1.0, 2.0], 2), ([-1.0, -2.0], 4), ([3.0, 1.0], 0)):
        _close(g(_vec(*v), tnp.asarray(n)), f(_vec(*v), n))
    assert g.experimental_get_tracing_count() == 1

    def grad(x, n):
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.sum(f(x, n)[0] ** 2)
        return t.gradient(y, x)
    _close(nf.function(grad)(_vec(1.0, 2.0), tnp.asarray(3)), grad(_vec(1.0, 2.0), 3))

    def h(x):
        out = tnp.zeros(3)
        if tnp.sum(x) > 0:
            out[0] = 1.0
            out = out * 2                # changed in place, then rebound: refused
        return out

    with pytest.raises(ValueError, match="'out' is changed in place"):
        nf.function(h)(_vec(1.0))
