"""Control flow: nf.cond, switch_case, while_loop, fori_loop, scan. Eager they are Python; traced
they are one graph op that decides when the graph runs. Values against plain Python/NumPy,
gradients against central differences and eager tapes, batching against a loop, the graph's
structure, and errors that name the user's line."""
import inspect

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


def grad_of(f):
    """x -> (f(x), df/dx) with a tape (f scalar-valued)."""
    def g(x):
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return y, tape.gradient(y, x)
    return g


def numeric_grad(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (float(f(tnp.asarray(x + d))) - float(f(tnp.asarray(x - d)))) / (2 * eps)
    return out


def check_grad(f, x, rtol=1e-6):
    """Gradient of f at x: eager, compiled, and central differences agree."""
    x = tnp.asarray(x)
    want = numeric_grad(f, x.numpy())
    y_e, g_e = grad_of(f)(x)
    y_c, g_c = nf.function(grad_of(f))(x)
    np.testing.assert_allclose(float(y_c), float(y_e), rtol=1e-12)
    np.testing.assert_allclose(g_e.numpy(), want, rtol=rtol, atol=1e-8)
    np.testing.assert_allclose(g_c.numpy(), want, rtol=rtol, atol=1e-8)


def prims_of(cf):
    return [n.prim.name for n in cf.graph.nodes]


# ================================================================== cond
def test_cond_eager_is_a_python_if():
    ran = []
    out = nf.cond(tnp.asarray(True), lambda: ran.append("t") or 1.0, lambda: ran.append("f") or 2.0)
    assert out == 1.0 and ran == ["t"]
    assert nf.cond(False, lambda: 1, lambda: 2) == 2


def test_cond_traced_decides_at_run_time_without_retracing():
    traced = []

    @nf.function
    def f(x):
        def yes():
            traced.append("true")
            return x * 2

        def no():
            traced.append("false")
            return -x
        return nf.cond(tnp.sum(x) > 0, yes, no)

    np.testing.assert_allclose(f(tnp.asarray([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(tnp.asarray([-1.0, -2.0])).numpy(), [1.0, 2.0])
    assert f.experimental_get_tracing_count() == 1
    assert sorted(traced) == ["false", "true"]          # each branch traced once
    cf = f.get_concrete_function(tnp.asarray([1.0, 2.0]))
    assert prims_of(cf).count("cond") == 1
    text = str(cf)
    assert "graph cond_true_fn(" in text and "graph cond_false_fn(" in text


def test_cond_structures_numbers_and_unknown_sizes():
    @nf.function(input_signature=[nf.TensorSpec([None], tnp.float64)])
    def f(x):
        return nf.cond(tnp.sum(x) > 0,
                       lambda: {"a": x[:2], "b": (x[0], 0)},
                       lambda: {"a": x[1:], "b": (1.5, tnp.asarray(7))})

    out = f(tnp.asarray([3.0, 1.0, 2.0]))
    np.testing.assert_allclose(out["a"].numpy(), [3.0, 1.0])
    assert float(out["b"][0]) == 3.0 and int(out["b"][1]) == 0
    out = f(tnp.asarray([-3.0, 1.0, -2.0]))
    np.testing.assert_allclose(out["a"].numpy(), [1.0, -2.0])
    assert float(out["b"][0]) == 1.5 and int(out["b"][1]) == 7
    assert out["b"][1].dtype == np.int64      # the number took the other branch's dtype


def test_cond_rejects_mismatched_branches():
    def structure(x):
        return nf.cond(x > 0, lambda: (x, x), lambda: x)

    with pytest.raises(ValueError, match="same structure"):
        nf.function(structure)(tnp.asarray(1.0))

    def dtypes(x):
        return nf.cond(x > 0, lambda: x, lambda: x.astype(np.float32))

    with pytest.raises(TypeError, match="different dtypes.*float32.*float64"):
        nf.function(dtypes)(tnp.asarray(1.0))
    with pytest.raises(ValueError, match="scalar"):
        nf.function(lambda x: nf.cond(x > 0, lambda: x, lambda: x))(tnp.ones(2))


def test_cond_gradients_match_central_differences():
    def f(x):
        y = nf.cond(tnp.sum(x) > 0, lambda: tnp.sin(x) * x, lambda: x ** 3)
        return tnp.sum(y)

    check_grad(f, [0.5, 1.0])
    check_grad(f, [-0.5, -1.0])


def test_cond_second_order():
    def hess_diag(x):
        with nf.GradientTape() as outer:
            outer.watch(x)
            with nf.GradientTape() as inner:
                inner.watch(x)
                y = tnp.sum(nf.cond(tnp.sum(x) > 0, lambda: x ** 3, lambda: tnp.exp(x)))
            g = inner.gradient(y, x)
            s = tnp.sum(g)
        return outer.gradient(s, x)

    x = tnp.asarray([0.5, 2.0])
    np.testing.assert_allclose(nf.function(hess_diag)(x).numpy(), 6 * x.numpy())
    np.testing.assert_allclose(nf.function(hess_diag)(-x).numpy(), np.exp(-x.numpy()))


def test_cond_reads_variables_differentiably_and_writes_only_the_taken_branch():
    w = nf.Variable(tnp.asarray(2.0))
    hits = nf.Variable(tnp.asarray(0))

    @nf.function
    def step(x):
        with nf.GradientTape() as tape:
            def big():
                hits.assign_add(1)
                return w * x
            y = nf.cond(x > 1.0, big, lambda: w * w + x)
        return y, tape.gradient(y, w)

    y, g = step(tnp.asarray(3.0))
    assert (float(y), float(g), int(hits.numpy())) == (6.0, 3.0, 1)
    y, g = step(tnp.asarray(0.5))
    assert (float(y), float(g), int(hits.numpy())) == (4.5, 4.0, 1)
    assert int(hits.value()) == 1 and step.experimental_get_tracing_count() == 1


def test_cond_draws_random_numbers_when_its_branch_runs():
    f = nf.function(lambda p: nf.cond(p, lambda: tnp.random.normal(size=(3,)), lambda: tnp.zeros(3)))
    a, b = f(tnp.asarray(True)).numpy(), f(tnp.asarray(True)).numpy()
    assert not np.allclose(a, b)
    assert np.all(f(tnp.asarray(False)).numpy() == 0)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "function"])
def test_cond_with_a_batched_predicate_selects_per_example(compiled):
    def per_row(r):
        return nf.cond(tnp.sum(r) > 0, lambda: r * 2, lambda: -tnp.exp(r))

    m = np.array([[1.0, 2.0], [-3.0, -4.0], [0.5, -0.1]])
    fn = (lambda m: nf.vectorized_map(per_row, m))
    got = (nf.function(fn) if compiled else fn)(tnp.asarray(m))
    want = np.stack([r * 2 if r.sum() > 0 else -np.exp(r) for r in m])
    np.testing.assert_allclose(got.numpy(), want)


def test_cond_with_an_unbatched_predicate_inside_vectorized_map():
    @nf.function
    def f(m, flag):
        return nf.vectorized_map(lambda r: nf.cond(flag > 0, lambda: r * 2, lambda: r - 1), m)

    m = tnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(f(m, tnp.asarray(1)).numpy(), m.numpy() * 2)
    np.testing.assert_allclose(f(m, tnp.asarray(0)).numpy(), m.numpy() - 1)


def test_per_example_gradients_through_cond():
    def loss(r):
        return tnp.sum(nf.cond(tnp.sum(r) > 0, lambda: r ** 2, lambda: tnp.sin(r)))

    m = np.array([[1.0, 2.0], [-3.0, -4.0]])
    got = nf.function(lambda m: nf.vectorized_map(lambda r: grad_of(loss)(r)[1], m))(tnp.asarray(m))
    want = np.stack([2 * r if r.sum() > 0 else np.cos(r) for r in m])
    np.testing.assert_allclose(got.numpy(), want)


# ================================================================== switch_case
def test_switch_case_eager_and_traced_with_default():
    fns = [lambda: tnp.asarray(10.0), lambda: tnp.asarray(20.0), lambda: tnp.asarray(30.0)]
    assert float(nf.switch_case(1, fns)) == 20.0
    assert float(nf.switch_case(7, fns)) == 30.0                      # out of range: the last
    assert float(nf.switch_case(7, fns, default=lambda: tnp.asarray(-1.0))) == -1.0
    f = nf.function(lambda i: nf.switch_case(i, fns, default=lambda: tnp.asarray(-1.0)))
    got = [float(f(tnp.asarray(i))) for i in (0, 1, 2, 3, -1)]
    assert got == [10.0, 20.0, 30.0, -1.0, -1.0]
    assert f.experimental_get_tracing_count() == 1
    g = nf.function(lambda i: nf.switch_case(i, {0: lambda: tnp.asarray(1), 1: lambda: tnp.asarray(2)}))
    assert [int(g(tnp.asarray(k))) for k in (0, 1, 5)] == [1, 2, 2]
    with pytest.raises(ValueError, match="0, 1, ..., N-1"):
        nf.switch_case(0, {0: fns[0], 2: fns[1]})
    with pytest.raises(TypeError, match="integer"):
        nf.function(lambda x: nf.switch_case(x, fns))(tnp.asarray(1.0))


def test_switch_case_gradient_and_batching():
    def f(x, i):
        return tnp.sum(nf.switch_case(i, [lambda: x * 2, lambda: x ** 2, lambda: tnp.sin(x)]))

    x = tnp.asarray([0.3, 0.7])
    for i, want in ((0, 2 * np.ones(2)), (1, 2 * x.numpy()), (2, np.cos(x.numpy()))):
        g = nf.function(lambda x, i: grad_of(lambda x: f(x, i))(x)[1])(x, tnp.asarray(i))
        np.testing.assert_allclose(g.numpy(), want)
    idx = tnp.asarray([2, 0, 1, 9])
    xs = tnp.asarray(np.arange(8.0).reshape(4, 2) / 10)
    got = nf.vectorized_map(lambda a: nf.switch_case(a[1], [lambda: a[0] * 2, lambda: a[0] ** 2,
                                                            lambda: tnp.sin(a[0])]), (xs, idx))
    want = [np.sin(xs.numpy()[0]), xs.numpy()[1] * 2, xs.numpy()[2] ** 2, np.sin(xs.numpy()[3])]
    np.testing.assert_allclose(got.numpy(), want)


# ================================================================== while_loop
def test_while_loop_eager_is_a_python_while():
    assert nf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * 2), (0, 1)) == (4, 16)
    assert nf.while_loop(lambda i: i < 5, lambda i: i + 2, 0) == 6
    assert nf.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=3) == [3]


def test_while_loop_traced_runs_a_run_time_trip_count():
    traced = []

    @nf.function
    def f(n, x):
        def body(i, y):
            traced.append(1)
            return i + 1, y * 1.5
        return nf.while_loop(lambda i, y: i < n, body, (0, x))

    for n in (0, 3, 7):
        i, y = f(tnp.asarray(n), tnp.asarray([1.0, 2.0]))
        assert int(i) == n
        np.testing.assert_allclose(y.numpy(), np.array([1.0, 2.0]) * 1.5 ** n)
    assert f.experimental_get_tracing_count() == 1 and len(traced) == 1
    cf = f.get_concrete_function(tnp.asarray(3), tnp.asarray([1.0, 2.0]))
    # one loop, not unrolled; after a loop that ran no iteration its results would be the
    # initial values themselves (the constant 0): a run-time check copies them then
    assert [p for p in prims_of(cf) if p != "own_result"] == ["while"]
    i0, _ = f(tnp.asarray(0), tnp.asarray([1.0, 2.0]))
    i0[...] = 5
    assert int(f(tnp.asarray(0), tnp.asarray([1.0, 2.0]))[0]) == 0


def test_while_loop_maximum_iterations_static_and_traced():
    f = nf.function(lambda m: nf.while_loop(lambda i: i < 100, lambda i: i + 1, [tnp.asarray(0)],
                                            maximum_iterations=m))
    assert int(f(tnp.asarray(5))[0]) == 5
    g = nf.function(lambda x: nf.while_loop(lambda i: i < 100, lambda i: i + 1, x,
                                            maximum_iterations=4))
    assert int(g(tnp.asarray(0))) == 4


def test_while_loop_sizes_that_change_become_unknown():
    @nf.function
    def f(x):
        return nf.while_loop(lambda y: tnp.sum(y) < 20, lambda y: tnp.concatenate([y, y]), x)

    np.testing.assert_allclose(f(tnp.asarray([1.0, 2.0])).numpy(), [1.0, 2.0] * 8)


def test_while_loop_errors():
    with pytest.raises(TypeError, match="enters the loop as int64 but the body returns float64"):
        nf.function(lambda x: nf.while_loop(lambda i: i < 3, lambda i: i + 0.5, x))(tnp.asarray(0))
    with pytest.raises(ValueError, match="structure"):
        nf.function(lambda x: nf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,),
                                            (x, x)))(tnp.asarray(0))
    with pytest.raises(TypeError, match="boolean scalar"):
        nf.function(lambda x: nf.while_loop(lambda i: i, lambda i: i + 1, x))(tnp.asarray(0))


def _grow(x):
    _, y = nf.while_loop(lambda i, y: tnp.sum(y) < 10.0, lambda i, y: (i + 1, y * 1.5 + tnp.sin(y)),
                         (0, x))
    return tnp.sum(y)


def test_while_loop_gradients_match_central_differences():
    check_grad(_grow, [0.5, 1.0])
    check_grad(_grow, [4.0, 3.0])


def test_while_loop_gradient_wrt_captured_values_and_with_maximum_iterations():
    def f(w):
        x = tnp.asarray([1.0, 2.0])
        _, y = nf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w + 1.0), (0, x),
                             maximum_iterations=5)
        return tnp.sum(y)

    check_grad(f, 0.7)


def test_while_loop_variable_written_every_iteration():
    v = nf.Variable(tnp.asarray(0.0))

    @nf.function
    def f(n):
        def body(i):
            v.assign(v + 2.0)
            return i + 1
        nf.while_loop(lambda i: i < n, body, tnp.asarray(0))
        return v.read_value()

    assert float(f(tnp.asarray(3))) == 6.0
    assert float(f(tnp.asarray(2))) == 10.0


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "function"])
def test_while_loop_batched_runs_until_every_example_is_done(compiled):
    def per_row(r):
        return nf.while_loop(lambda i, y: tnp.sum(y) < 10.0, lambda i, y: (i + 1, y * 1.5), (0, r))

    m = np.array([[1.0, 2.0], [3.0, 4.0], [20.0, 1.0]])
    fn = lambda m: nf.vectorized_map(per_row, m)   # noqa: E731
    i, y = (nf.function(fn) if compiled else fn)(tnp.asarray(m))
    want_i, want_y = [], []
    for r in m:
        k = 0
        while r.sum() < 10:
            r, k = r * 1.5, k + 1
        want_i.append(k)
        want_y.append(r)
    np.testing.assert_array_equal(i.numpy(), want_i)
    np.testing.assert_allclose(y.numpy(), want_y)


def test_per_example_gradients_through_while_loop():
    m = np.array([[0.5, 1.0], [4.0, 3.0], [20.0, 1.0]])
    got = nf.function(lambda m: nf.vectorized_map(lambda r: grad_of(_grow)(r)[1], m))(tnp.asarray(m))
    want = np.stack([numeric_grad(_grow, r) for r in m])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


# ================================================================== fori_loop
def test_fori_loop_eager_static_and_traced_bounds():
    assert nf.fori_loop(0, 5, lambda i, v: v + i, 0) == 10
    f = nf.function(lambda x: nf.fori_loop(0, 4, lambda i, v: v * 2 + i, x))
    assert float(f(tnp.asarray(1.0))) == ((((1 * 2 + 0) * 2 + 1) * 2 + 2) * 2 + 3)
    # one loop (the run-time check of `own_outputs` aside: see the while_loop test)
    assert [p for p in prims_of(f.get_concrete_function(tnp.asarray(1.0)))
            if p != "own_result"] == ["scan"]
    g = nf.function(lambda n, x: nf.fori_loop(0, n, lambda i, v: v + i, x))
    assert int(g(tnp.asarray(5), tnp.asarray(0))) == 10
    assert int(g(tnp.asarray(3), tnp.asarray(0))) == 3
    assert g.experimental_get_tracing_count() == 1


def test_fori_loop_gradient():
    check_grad(lambda x: tnp.sum(nf.fori_loop(0, 3, lambda i, v: tnp.sin(v) * (i + 1.0), x)),
               [0.3, -0.8])


# ================================================================== scan
def test_scan_follows_tf_scan():
    x = tnp.asarray([1, 2, 3, 4, 5, 6])
    for fn in (nf.scan, lambda *a, **k: nf.function(nf.scan)(*a, **k)):
        assert fn(lambda a, e: a + e, x).tolist() == [1, 3, 6, 10, 15, 21]
        assert nf.scan(lambda a, e: a + e, x, reverse=True).tolist() == [21, 20, 18, 15, 11, 6]
    got = nf.function(lambda x: nf.scan(lambda a, e: a + e, x, initializer=tnp.asarray(10)))(x)
    assert got.tolist() == [11, 13, 16, 20, 25, 31]
    # structures: (a, b) -> (a + b, a) (Fibonacci, as in TF's docs)
    elems = tnp.asarray([0, 0, 0, 0, 0])
    fib = nf.function(lambda e: nf.scan(lambda a, _: (a[1], a[0] + a[1]), e,
                                        initializer=(tnp.asarray(0), tnp.asarray(1))))(elems)
    assert fib[0].tolist() == [1, 1, 2, 3, 5] and fib[1].tolist() == [1, 2, 3, 5, 8]


def test_scan_is_one_op_not_unrolled():
    cf = nf.function(lambda x: nf.scan(lambda a, e: a * e + 1.0, x)).get_concrete_function(
        tnp.ones(50))
    assert prims_of(cf).count("scan") == 1 and len(cf.graph.nodes) < 8


def _scan_loss(x):
    return tnp.sum(nf.scan(lambda a, e: a * e + tnp.sin(a), x, initializer=tnp.asarray(1.0)))


def test_scan_gradients_match_central_differences():
    check_grad(_scan_loss, [0.5, 2.0, -1.0, 0.3])
    check_grad(lambda x: tnp.sum(nf.scan(lambda a, e: a * e, x, reverse=True)), [0.5, 2.0, 3.0])


def test_scan_second_order():
    def hvp(x):
        with nf.GradientTape() as outer:
            outer.watch(x)
            with nf.GradientTape() as inner:
                inner.watch(x)
                y = tnp.sum(nf.scan(lambda a, e: a * e, x))
            s = tnp.sum(inner.gradient(y, x))
        return outer.gradient(s, x)

    x = tnp.asarray([1.5, 2.0, 3.0])
    np.testing.assert_allclose(nf.function(hvp)(x).numpy(), hvp(x).numpy())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "function"])
def test_scan_batched_and_per_example_gradients(compiled):
    m = np.array([[0.5, 2.0, -1.0], [1.0, 0.1, 0.2]])
    fn = lambda m: nf.vectorized_map(lambda r: grad_of(_scan_loss)(r), m)   # noqa: E731
    y, g = (nf.function(fn) if compiled else fn)(tnp.asarray(m))
    np.testing.assert_allclose(y.numpy(), [float(_scan_loss(tnp.asarray(r))) for r in m])
    np.testing.assert_allclose(g.numpy(), np.stack([numeric_grad(_scan_loss, r) for r in m]),
                               rtol=1e-6)


# ================================================================== errors
def test_python_if_and_while_on_traced_values_suggest_control_flow_without_autograph():
    def body_if(x):
        if x > 0:
            return x
        return -x

    def body_while(x):
        while x < 10:
            x = x * 2
        return x

    # autograph=False traces the function as written (the default converts it: test_autograph)
    for body, text in ((body_if, "if x > 0"), (body_while, "while x < 10")):
        with pytest.raises(nf.TracingError) as e:
            nf.function(body, autograph=False)(tnp.asarray(1.0))
        msg = str(e.value)
        assert f"test_control.py:{_line_of(body, text)}" in msg, msg
        assert "nf.cond" in msg and "nf.while_loop" in msg


def test_trace_errors_inside_bodies_name_the_users_line():
    def f(x):
        def body(i, y):
            return i + 1, y + tnp.ones(5)          # (3,) + (5,)
        return nf.while_loop(lambda i, y: i < 3, body, (0, x))

    with pytest.raises(ValueError) as e:
        nf.function(f)(tnp.ones(3))
    assert f"test_control.py:{_line_of(f, 'tnp.ones(5)')}" in str(e.value), str(e.value)


def test_run_time_errors_inside_branches_name_the_node_and_line():
    sig = [nf.TensorSpec([None], tnp.float64), nf.TensorSpec([None], tnp.float64)]

    def f(a, b):
        def yes():
            return a * b                              # sizes only known when it runs
        return nf.cond(tnp.sum(a) > 0, yes, lambda: a)

    g = nf.function(f, input_signature=sig)
    np.testing.assert_allclose(g(tnp.ones(2), tnp.ones(2)).numpy(), [1.0, 1.0])
    np.testing.assert_allclose(g(-tnp.ones(2), tnp.ones(3)).numpy(), [-1.0, -1.0])
    with pytest.raises(ValueError) as e:
        g(tnp.ones(3), tnp.ones(4))
    msg = str(e.value)
    assert "multiply" in msg and f"test_control.py:{_line_of(f, 'a * b')}" in msg, msg


def test_gradient_through_a_body_with_random_draws_is_a_clear_error():
    def f(x):
        return tnp.sum(nf.cond(tnp.sum(x) > 0, lambda: x * tnp.random.normal(size=()), lambda: x))

    with pytest.raises(NotImplementedError, match="random_draw"):
        nf.function(grad_of(f))(tnp.ones(2))


def test_while_loop_second_order():
    def f(x):
        _, y = nf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * y * 0.5 + tnp.sin(y)),
                             (0, x))
        return tnp.sum(y)

    def hvp(x):
        with nf.GradientTape() as outer:
            outer.watch(x)
            with nf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            s = tnp.sum(inner.gradient(y, x))
        return outer.gradient(s, x)

    x = tnp.asarray([0.3, 0.9])
    np.testing.assert_allclose(nf.function(hvp)(x).numpy(), hvp(x).numpy(), rtol=1e-10)


def test_constant_results_of_a_branch_are_fresh_arrays():
    f = nf.function(lambda p: nf.cond(p, lambda: tnp.ones(2), lambda: tnp.zeros(2)))
    y = f(tnp.asarray(True))
    y += 5
    np.testing.assert_allclose(f(tnp.asarray(True)).numpy(), [1.0, 1.0])


def test_docstring_examples_run():
    import doctest
    from ndflow.graph import control
    assert doctest.testmod(control).failed == 0
