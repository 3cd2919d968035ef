"""`nf.function`: tracing semantics (side effects once, loops unroll, nesting), signatures and
retracing, effects at run time (random draws, Variables), training steps, the printed graph and
error messages that point at the user's code."""
import inspect

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def _line_of(fn, text):
    """File line number of the first line of `fn`'s source containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)


def test_python_side_effects_happen_only_while_tracing(capsys):
    log = []

    @nf.function
    def f(x):
        log.append("traced")
        print("tracing f")
        return x * 2

    x = tnp.ones(3)
    for _ in range(3):
        np.testing.assert_allclose(f(x).numpy(), [2, 2, 2])
    assert log == ["traced"]
    assert capsys.readouterr().out.count("tracing f") == 1
    f(tnp.ones(4))            # new shape: traces again
    assert log == ["traced", "traced"]


def test_python_loops_unroll():
    @nf.function
    def f(x):
        for _ in range(4):
            x = tnp.tanh(x) * 2
        return x

    x = tnp.asarray([0.1, -0.3])
    want = x.numpy()
    for _ in range(4):
        want = np.tanh(want) * 2
    np.testing.assert_allclose(f(x).numpy(), want)
    text = str(f.get_concrete_function(x))
    assert text.count("tanh(") == 4


def test_nested_functions_trace_into_one_graph():
    @nf.function
    def inner(x):
        return tnp.exp(x) + 1

    @nf.function
    def outer(x):
        return inner(x) * inner(x * 2)

    x = tnp.asarray([0.5, 1.0])
    np.testing.assert_allclose(outer(x).numpy(),
                               (np.exp(x.numpy()) + 1) * (np.exp(2 * x.numpy()) + 1))
    assert outer.experimental_get_tracing_count() == 1
    assert inner.experimental_get_tracing_count() == 0
    assert str(outer.get_concrete_function(x)).count("exp(") == 2


def test_input_signature_with_unknown_batch_traces_once():
    shapes_seen = []

    @nf.function(input_signature=[nf.TensorSpec(shape=[None, 3], dtype=tnp.float64)])
    def f(x):
        shapes_seen.append(tuple(x.shape))
        n = nf.shape(x)[0]
        return tnp.sum(x, axis=1) * 2, n, tnp.mean(x, axis=0)

    for b in (1, 4, 7):
        x = tnp.asarray(np.arange(3.0 * b).reshape(b, 3))
        s, n, m = f(x)
        np.testing.assert_allclose(s.numpy(), 2 * x.numpy().sum(1))
        np.testing.assert_allclose(m.numpy(), x.numpy().mean(0))
        assert int(n) == b
    assert f.experimental_get_tracing_count() == 1
    assert shapes_seen == [(None, 3)]


def test_input_signature_rejects_incompatible_arguments():
    f = nf.function(lambda x: x + 1, input_signature=[nf.TensorSpec([None, 3], tnp.float32)])
    f(tnp.ones((2, 3), dtype=np.float32))
    with pytest.raises((TypeError, ValueError)):
        f(tnp.ones((2, 4), dtype=np.float32))
    with pytest.raises((TypeError, ValueError)):
        f(tnp.ones((2, 3), dtype=np.float32), tnp.ones(1))


def test_shape_of_unknown_dims_while_tracing():
    @nf.function(input_signature=[nf.TensorSpec([None, None], tnp.float64)])
    def f(x):
        assert x.shape == (None, None)
        s = nf.shape(x)
        return tnp.reshape(x, (-1,)), s

    flat, s = f(tnp.ones((2, 5)))
    assert flat.shape == (10,) and s.numpy().tolist() == [2, 5]


def test_retracing_on_new_shapes_dtypes_and_python_values():
    f = nf.function(lambda x, k: x * k)
    f(tnp.ones(2), 2)
    f(tnp.ones(2) * 5, 2)
    assert f.experimental_get_tracing_count() == 1
    f(tnp.ones(3), 2)
    assert f.experimental_get_tracing_count() == 2
    f(tnp.ones(3, dtype=np.float32), 2)
    assert f.experimental_get_tracing_count() == 3
    f(tnp.ones(3, dtype=np.float32), 3)
    assert f.experimental_get_tracing_count() == 4
    np.testing.assert_allclose(f(tnp.ones(3, dtype=np.float32), 3).numpy(), [3, 3, 3])
    assert f.experimental_get_tracing_count() == 4


def test_numpy_array_arguments_are_traced_inputs():
    f = nf.function(lambda x: x + 1)
    np.testing.assert_allclose(f(np.ones(2)).numpy(), [2, 2])
    np.testing.assert_allclose(f(np.zeros(2)).numpy(), [1, 1])
    assert f.experimental_get_tracing_count() == 1


def test_nested_structures_in_and_out():
    @nf.function
    def f(d, pair):
        a, b = pair
        return {"s": d["x"] + a, "t": [b * 2, None, "label"]}

    out = f({"x": tnp.ones(2)}, (tnp.ones(2), tnp.asarray(3.0)))
    np.testing.assert_allclose(out["s"].numpy(), [2, 2])
    assert float(out["t"][0]) == 6.0 and out["t"][1] is None and out["t"][2] == "label"


def test_random_draws_are_fresh_each_call():
    f = nf.function(lambda: tnp.random.normal(size=(4,)))
    a, b = f().numpy(), f().numpy()
    assert not np.allclose(a, b)
    g = nf.function(lambda x: x + tnp.random.uniform(size=x.shape))
    x = tnp.zeros(5)
    assert not np.allclose(g(x).numpy(), g(x).numpy())
    assert g.experimental_get_tracing_count() == 1


def test_random_draws_in_function_follow_the_seeded_stream():
    f = nf.function(lambda: tnp.random.randn(3))
    tnp.random.seed(3)
    first, second = f().numpy(), f().numpy()
    np.random.seed(3)
    np.testing.assert_allclose(first, np.random.randn(3))
    np.testing.assert_allclose(second, np.random.randn(3))


def test_generator_draws_inside_function():
    rng = tnp.random.default_rng(5)
    f = nf.function(lambda: rng.normal(size=(2,)))
    ref = np.random.default_rng(5)
    np.testing.assert_allclose(f().numpy(), ref.normal(size=(2,)))
    np.testing.assert_allclose(f().numpy(), ref.normal(size=(2,)))


def test_variables_are_read_and_assigned_at_every_call():
    v = nf.Variable(tnp.asarray([1.0, 2.0]))

    @nf.function
    def step(x):
        v.assign_add(x)
        return v.read_value() * 10

    np.testing.assert_allclose(step(tnp.ones(2)).numpy(), [20, 30])
    np.testing.assert_allclose(step(tnp.ones(2)).numpy(), [30, 40])
    np.testing.assert_allclose(v.numpy(), [3, 4])
    v.assign(tnp.asarray([0.0, 0.0]))          # outside changes are seen by the graph
    np.testing.assert_allclose(step(tnp.ones(2)).numpy(), [10, 10])
    assert step.experimental_get_tracing_count() == 1


def test_variable_read_after_assign_inside_one_call():
    v = nf.Variable(tnp.asarray(1.0))

    @nf.function
    def f():
        a = v.read_value()
        v.assign(a * 3)
        b = v.read_value()
        v.assign_sub(1.0)
        return a, b, v.value()

    a, b, c = f()
    assert (float(a), float(b), float(c)) == (1.0, 3.0, 2.0)
    a, b, c = f()
    assert (float(a), float(b), float(c)) == (2.0, 6.0, 5.0)


def _model_and_data(seed=0):
    rng = np.random.default_rng(seed)
    w = nf.Variable(tnp.asarray(rng.standard_normal((3, 2)) * 0.5))
    b = nf.Variable(tnp.zeros(2))
    x = tnp.asarray(rng.standard_normal((8, 3)))
    y = tnp.asarray(rng.standard_normal((8, 2)))
    return w, b, x, y


@pytest.mark.parametrize("make_opt", [lambda: nf.optimizers.SGD(0.1),
                                      lambda: nf.optimizers.SGD(0.05, momentum=0.9),
                                      lambda: nf.optimizers.Adam(0.01)],
                         ids=["sgd", "momentum", "adam"])
def test_training_step_compiled_matches_eager(make_opt):
    def make_step(w, b, opt):
        def step(x, y):
            with nf.GradientTape() as tape:
                pred = tnp.tanh(x @ w + b)
                loss = tnp.mean((pred - y) ** 2)
            grads = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(grads, [w, b]))
            return loss
        return step

    w1, b1, x, y = _model_and_data()
    w2, b2, _, _ = _model_and_data()
    eager = make_step(w1, b1, make_opt())
    compiled = nf.function(make_step(w2, b2, make_opt()))
    for _ in range(4):
        l1, l2 = eager(x, y), compiled(x, y)
        np.testing.assert_allclose(float(l2), float(l1), rtol=1e-12)
    np.testing.assert_allclose(w2.numpy(), w1.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b2.numpy(), b1.numpy(), rtol=1e-10, atol=1e-12)
    assert compiled.experimental_get_tracing_count() == 1


def test_training_loop_reduces_loss_in_function():
    w, b, x, y = _model_and_data(1)
    opt = nf.optimizers.Adam(0.05)

    @nf.function
    def step():
        with nf.GradientTape() as tape:
            loss = tnp.mean((x @ w + b - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    losses = [float(step()) for _ in range(30)]
    assert losses[-1] < losses[0] * 0.8
    assert int(opt.iterations.numpy()) == 30


def test_graph_prints_readably():
    @nf.function
    def f(x, w):
        return tnp.tanh(tnp.matmul(x, w) + 1.0)

    x, w = tnp.ones((2, 3)), tnp.ones((3, 4))
    cf = f.get_concrete_function(x, w)
    text = str(cf)
    assert text.startswith("graph f(")
    for piece in ("matmul(", "tanh(", "float64[2,3]", "float64[3,4]", "float64[2,4]", "return"):
        assert piece in text, text
    assert len(text.splitlines()) < 12
    assert cf.pretty_printed() == text


def test_concrete_function_from_tensor_spec():
    f = nf.function(lambda x: x * 2)
    cf = f.get_concrete_function(nf.TensorSpec([None, 2], tnp.float32))
    assert "float32[?,2]" in str(cf)


def test_errors_in_traced_code_name_the_users_line():
    def body(x):
        y = x * 2
        return y + tnp.ones(5)        # shapes (3,) and (5,) do not broadcast

    f = nf.function(body)
    with pytest.raises(ValueError) as e:
        f(tnp.ones(3))
    line = _line_of(body, "tnp.ones(5)")
    assert f"{__file__}:{line}" in str(e.value) or f"test_function.py:{line}" in str(e.value), \
        str(e.value)


def test_python_if_on_traced_value_raises_tracing_error_without_autograph():
    def body(x):
        if tnp.sum(x) > 0:
            return x
        return -x

    f = nf.function(body, autograph=False)      # the default converts the `if` (test_autograph)
    with pytest.raises(nf.TracingError) as e:
        f(tnp.ones(3))
    assert isinstance(e.value, TypeError)
    line = _line_of(body, "if tnp.sum")
    assert f"test_function.py:{line}" in str(e.value), str(e.value)


@pytest.mark.parametrize("what", [float, int, lambda x: x.numpy(), lambda x: np.asarray(x),
                                  lambda x: x.item()], ids=["float", "int", "numpy", "asarray",
                                                            "item"])
def test_concrete_values_of_traced_arrays_raise_tracing_error(what):
    f = nf.function(lambda x: what(x))
    with pytest.raises(nf.TracingError):
        f(tnp.asarray(1.0))


def test_where_instead_of_if():
    f = nf.function(lambda x: tnp.where(tnp.sum(x) > 0, x, -x))
    np.testing.assert_allclose(f(tnp.asarray([1.0, -3.0])).numpy(), [-1.0, 3.0])
    np.testing.assert_allclose(f(tnp.asarray([1.0, 3.0])).numpy(), [1.0, 3.0])


def test_python_values_decide_control_flow():
    @nf.function
    def f(x, training):
        if training:
            return x * 0.5
        return x

    x = tnp.ones(2)
    assert float(f(x, True)[0]) == 0.5 and float(f(x, False)[0]) == 1.0
    assert f.experimental_get_tracing_count() == 2


def test_function_on_methods():
    class Scale(nf.Module):
        def __init__(self):
            super().__init__()
            self.k = nf.Variable(tnp.asarray(3.0))

        @nf.function
        def __call__(self, x):
            return x * self.k

    s1, s2 = Scale(), Scale()
    s2.k.assign(tnp.asarray(4.0))
    assert float(s1(tnp.asarray(2.0))) == 6.0
    assert float(s2(tnp.asarray(2.0))) == 8.0


def test_jit_alias_and_compiled_equals_eager_for_a_block():
    def block(x, w):
        h = tnp.maximum(x @ w, 0)
        h = h / (tnp.sqrt(tnp.sum(h * h, axis=-1, keepdims=True)) + 1e-6)
        return tnp.einsum("bi,bi->b", h, h) + tnp.max(h, axis=1) - tnp.argmax(h, axis=1)

    rng = np.random.default_rng(0)
    x, w = tnp.asarray(rng.standard_normal((5, 4))), tnp.asarray(rng.standard_normal((4, 6)))
    np.testing.assert_allclose(nf.jit(block)(x, w).numpy(), block(x, w).numpy(), rtol=1e-12)


def test_mutation_inside_function():
    @nf.function
    def f(x):
        y = x * 1.0
        y[0] = 5.0
        y[1:] += 1.0
        y[tnp.asarray([2, 3])] = y[tnp.asarray([3, 2])]
        return y

    x = np.arange(4.0)
    want = x.copy()
    want[0] = 5.0
    want[1:] += 1.0
    want[[2, 3]] = want[[3, 2]]
    np.testing.assert_allclose(f(tnp.asarray(x)).numpy(), want)
    np.testing.assert_allclose(x, np.arange(4.0))       # the argument itself is untouched


def test_function_called_under_a_tape_is_differentiable():
    f = nf.function(lambda x: tnp.sum(tnp.sin(x) ** 2))
    x = tnp.asarray([0.3, 0.7])
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.sin(2 * x.numpy()))


def test_runtime_errors_name_the_node_and_users_line():
    sig = [nf.TensorSpec([None], tnp.float64), nf.TensorSpec([None], tnp.float64)]

    def body(a, b):
        c = tnp.exp(a)
        return c * b            # sizes only known when it runs

    f = nf.function(body, input_signature=sig)
    np.testing.assert_allclose(f(tnp.zeros(2), tnp.ones(2)).numpy(), [1.0, 1.0])
    with pytest.raises(ValueError) as e:
        f(tnp.ones(3), tnp.ones(4))
    line = _line_of(body, "c * b")
    assert "multiply" in str(e.value) and f"test_function.py:{line}" in str(e.value), str(e.value)


def test_many_retraces_warn():
    f = nf.function(lambda x: x + 1)
    with pytest.warns(UserWarning, match="traced"):
        for n in range(1, 12):
            f(tnp.ones(n))


def test_jacobians_inside_function_match_eager():
    def jac(x):
        with nf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tnp.tanh(x) * tnp.sum(x)
            xb = tnp.reshape(x, (3, 1))
            z = tnp.sin(xb) * 2
        # (batch_jacobian of z w.r.t. a reshape of x made after z would be None: unconnected)
        return tape.jacobian(y, x), tape.batch_jacobian(z, xb)

    x = tnp.asarray([0.1, -0.4, 0.8])
    for got, want in zip(nf.function(jac)(x), jac(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_second_order_inside_function():
    @nf.function
    def hvp(x, v):
        with nf.GradientTape() as outer:
            outer.watch(x)
            with nf.GradientTape() as inner:
                inner.watch(x)
                y = tnp.sum(tnp.exp(x) * x)
            g = inner.gradient(y, x)
            gv = tnp.sum(g * v)
        return outer.gradient(gv, x)

    x, v = tnp.asarray([0.2, 0.5]), tnp.asarray([1.0, -2.0])
    want = np.exp(x.numpy()) * (x.numpy() + 2) * v.numpy()     # diagonal Hessian
    np.testing.assert_allclose(hvp(x, v).numpy(), want, rtol=1e-12)


def test_variable_created_on_first_trace():
    holder = {}

    @nf.function
    def f(x):
        if "v" not in holder:
            holder["v"] = nf.Variable(tnp.ones(2) * 3)
        holder["v"].assign_add(x)
        return holder["v"].read_value()

    np.testing.assert_allclose(f(tnp.ones(2)).numpy(), [4.0, 4.0])
    np.testing.assert_allclose(f(tnp.ones(2)).numpy(), [5.0, 5.0])
    assert f.experimental_get_tracing_count() == 1


def test_variable_from_function_argument_is_an_error():
    @nf.function
    def f(x):
        return nf.Variable(x * 2)

    with pytest.raises(ValueError):
        f(tnp.ones(2))


def test_compiled_code_is_reused_not_retraced_for_python_scalars_in_arrays():
    f = nf.function(lambda x, s: x * s)
    for k in range(3):
        f(tnp.ones(2), tnp.asarray(float(k)))
    assert f.experimental_get_tracing_count() == 1


def test_boolean_masks_on_traced_values():
    """A traced mask selects an unknown number of elements (static size None)."""
    @nf.function
    def f(a):
        pos = a[a > 0]
        y = a * 1.0
        y[y < 0] = 0.0
        z = a * 1.0
        z[z < 0] *= 2
        return pos, pos.shape, tnp.mean(pos), y, z, tnp.argwhere(a > 0)

    n = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    pos, static, mean, y, z, where = f(tnp.asarray(n))
    np.testing.assert_array_equal(pos.numpy(), n[n > 0])
    assert static == (None,)
    assert float(mean) == 3.0
    np.testing.assert_array_equal(y.numpy(), np.maximum(n, 0))
    np.testing.assert_array_equal(z.numpy(), np.where(n < 0, 2 * n, n))
    np.testing.assert_array_equal(where.numpy(), np.argwhere(n > 0))
    g = nf.function(nf.grad(lambda a: tnp.sum(a[a > 0] ** 2)))(tnp.asarray(n))
    np.testing.assert_array_equal(g.numpy(), np.where(n > 0, 2 * n, 0))


def test_compiled_functions_pickle_by_their_python_function():
    # how Dask and multiprocessing ship them: the Python function travels, the receiver traces
    import pickle
    f = nf.function(lambda_free_square)
    f(tnp.ones(3))
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(g, type(f)) and g.experimental_get_tracing_count() == 0
    np.testing.assert_array_equal(g(tnp.arange(3.0)).numpy(), [0.0, 1.0, 4.0])


def lambda_free_square(x):
    return x * x


# ================================================================== input_signature binding
_F32 = np.float32


def _spec(shape, dtype=nf.float32):
    return nf.TensorSpec(shape, dtype)


def test_input_signature_binds_keywords_and_defaults_as_python_does():
    def k(a, b=2.0, *, c=3.0):
        return a * b + c
    f = nf.function(k, input_signature=[_spec([]), _spec([])])
    assert float(f(1.0)) == 5.0                       # b's default, through its spec
    assert float(f(a=1.0, b=5.0)) == 8.0
    assert float(f(1.0, b=5.0)) == 8.0
    assert f(b=_F32(4), a=_F32(2)).dtype == np.float32
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="'c' not described by the input_signature"):
        f(1.0, c=4.0)
    with pytest.raises(TypeError, match="describes 2 arguments, got 3"):
        f(1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        f(1.0, a=2.0)
    with pytest.raises(TypeError, match="missing required argument 'b'"):
        nf.function(lambda a, b: a + b, input_signature=[_spec([]), _spec([])])(1.0)
    va = nf.function(lambda *xs: xs[0] + xs[1] + xs[2], input_signature=[_spec([])] * 3)
    assert float(va(1.0, 2.0, 3.0)) == 6.0


def test_input_signature_matches_nested_structures():
    import collections
    # a TensorSpec takes the whole value: a list of numbers (or of arrays) is one array
    f = nf.function(lambda v: v * 2, input_signature=[_spec([None])])
    np.testing.assert_array_equal(f([1, 2, 3]), np.array([2, 4, 6], _F32))
    np.testing.assert_array_equal(f([tnp.asarray(_F32(1)), tnp.asarray(_F32(2))]), [2, 4])
    g = nf.function(lambda d: d["a"] + d["b"], input_signature=[{"a": _spec([2]), "b": _spec([])}])
    np.testing.assert_array_equal(g({"b": 1.0, "a": [1.0, 2.0]}), [2.0, 3.0])
    with pytest.raises(TypeError, match=r"argument 'd' should be a dict with the keys \['a', 'b'\]"):
        g({"a": [1.0, 2.0]})
    P = collections.namedtuple("P", "x y")
    h = nf.function(lambda p: p.x * p.y, input_signature=[P(_spec([None]), _spec([None]))])
    np.testing.assert_array_equal(h(P([1.0, 2.0], [3.0, 4.0])), [3.0, 8.0])
    np.testing.assert_array_equal(h(([1.0, 2.0], [3.0, 4.0])), [3.0, 8.0])
    pairs = nf.function(lambda ps: ps[0][0] * ps[1], input_signature=[[[_spec([])], _spec([])]])
    assert float(pairs([[2.0], 3.0])) == 6.0
    with pytest.raises(TypeError, match=r"argument 'ps'\[0\] should be a sequence of 1 values"):
        pairs([2.0, 3.0])
    with pytest.raises(TypeError, match="does not match the input_signature"):
        h(P([1.0, 2.0], [[3.0, 4.0]]))
    assert h.experimental_get_tracing_count() == 1


def test_input_signature_must_be_made_of_tensor_specs():
    with pytest.raises(TypeError, match="holds int 3"):
        nf.function(lambda a: a, input_signature=[3])
    with pytest.raises(TypeError, match="list or tuple with one entry per argument"):
        nf.function(lambda a: a, input_signature=_spec([]))


def test_input_signature_on_methods_by_keyword():
    class M(nf.Module):
        @nf.function(input_signature=[_spec([None])])
        def __call__(self, x):
            return x + 1
    m = M()
    np.testing.assert_array_equal(m([1.0, 2.0]), [2.0, 3.0])
    np.testing.assert_array_equal(m(x=[1.0, 2.0]), [2.0, 3.0])


def test_spec_without_a_shape_is_one_graph_per_rank():
    # the sizes of such an argument are unknown in its graph (a graph traced with the first
    # call's sizes and reused for others gave that call's sizes as constants)
    f = nf.function(lambda x: tnp.zeros(tnp.size(x)) + x.ndim, input_signature=[_spec(None)])
    np.testing.assert_array_equal(f(tnp.ones(2, dtype=_F32)), [1.0, 1.0])
    np.testing.assert_array_equal(f(tnp.ones((2, 2), dtype=_F32)), [2.0] * 4)
    np.testing.assert_array_equal(f(tnp.ones(3, dtype=_F32)), [1.0] * 3)
    assert f.experimental_get_tracing_count() == 2


def test_get_concrete_function_traces_once_and_calls_use_it():
    traced = []

    def body(x):
        traced.append(1)
        return x * 3
    f = nf.function(body, input_signature=[_spec([None])])
    c1 = f.get_concrete_function()
    assert f.get_concrete_function() is c1
    assert f.get_concrete_function(_spec([None])) is c1
    f(tnp.ones(4, dtype=_F32))
    f(tnp.ones(7, dtype=_F32))
    assert len(traced) == 1 and f.experimental_get_tracing_count() == 1
    g = nf.function(body)
    traced.clear()
    a = g.get_concrete_function(_spec([None]))
    assert g.get_concrete_function(_spec([None])) is a
    b = g.get_concrete_function(tnp.ones(3, dtype=_F32))
    assert g.get_concrete_function(tnp.ones(3, dtype=_F32)) is b and a is not b
    assert len(traced) == 2
    with pytest.raises(TypeError, match="has no rank"):
        nf.function(body, input_signature=[_spec(None)]).get_concrete_function()


# ================================================================== sizes unknown while tracing
def test_sizes_unknown_while_tracing_are_run_time_values():
    @nf.function(input_signature=[_spec([None, 3])])
    def sizes(x):
        return (nf.size(x), x.size, tnp.size(x), tnp.size(x, 0), tnp.size(x, -1), np.size(x),
                x.nbytes, nf.shape(x), len(x), x.size * 2, tnp.zeros(x.size))
    for n in (0, 1, 5):
        x = np.ones((n, 3), _F32)
        got = sizes(tnp.asarray(x))
        want = (np.int32(x.size), x.size, x.size, n, 3, x.size, x.nbytes,
                np.array([n, 3], np.int32), n, 2 * x.size, np.zeros(x.size))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert got[0].dtype == np.int32 and got[1].dtype == np.int64 and got[4] == 3
    assert sizes.experimental_get_tracing_count() == 1
    # known sizes stay Python ints, eager and traced
    x = tnp.ones((2, 3))
    assert (x.size, tnp.size(x), np.size(x), x.nbytes) == (6, 6, 6, 48)
    assert nf.function(lambda v: v.size + tnp.size(v, 1) * 0)(x) == 6
    assert nf.size(x).dtype == np.int32 and int(nf.size(x)) == 6
