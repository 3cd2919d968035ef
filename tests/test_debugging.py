"""nf.print, nf.config.run_functions_eagerly and nf.debugging (check_numerics and its mode,
assert_equal): eager, compiled (at run time, never at trace time), inside control-flow bodies,
under vectorized_map and tapes."""
import logging
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.primitives.host import format_tensor, print_p

# the NaN and infinities made on purpose here warn in NumPy; the checks are what is tested
pytestmark = pytest.mark.filterwarnings(
    "ignore:(invalid value|divide by zero|overflow):RuntimeWarning")


def _line_after():
    """The line number just after the caller's line."""
    return sys._getframe(1).f_lineno + 1


# ================================================================== nf.print: the format
@pytest.mark.parametrize("value, text", [
    (np.arange(10), "[0 1 2 ... 7 8 9]"),                      # tf.print's documented example
    (np.arange(3), "[0 1 2]"),
    (np.arange(6), "[0 1 2 3 4 5]"),                           # 2 * summarize: no elision
    (np.array(7), "7"),
    (np.array([True, False]), "[1 0]"),                         # booleans print as 1 / 0
    (np.array([1.5, 2.0, -0.0]), "[1.5 2 -0]"),
    (np.array([0.1], np.float32), "[0.1]"),                     # float32: 6 digits when exact
    (np.array([1234567.0], np.float32), "[1234567]"),           # ... else 9
    (np.array([1 / 3]), "[0.33333333333333331]"),               # float64: 15, else 17
    (np.array([np.nan, np.inf, -np.inf, 1e20]), "[nan inf -inf 1e+20]"),
    (np.zeros((0,)), "[]"),
    (np.zeros((2, 0)), "[[]\n []]"),
    (np.arange(4).reshape(2, 2), "[[0 1]\n [2 3]]"),
    (np.arange(8).reshape(2, 2, 2), "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"),
])
def test_format_tensor_matches_tf_print(value, text):
    assert format_tensor(value, 3) == text


def test_format_tensor_elides_every_axis_and_summarize_minus_one_prints_all():
    a = np.arange(100).reshape(10, 10)
    want = ("[[0 1 2 ... 7 8 9]\n [10 11 12 ... 17 18 19]\n [20 21 22 ... 27 28 29]\n ...\n"
            " [70 71 72 ... 77 78 79]\n [80 81 82 ... 87 88 89]\n [90 91 92 ... 97 98 99]]")
    assert format_tensor(a, 3) == want
    assert format_tensor(a, -1).count("\n") == 9 and "..." not in format_tensor(a, -1)
    assert format_tensor(np.arange(10), 1) == "[0 ... 9]"


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.float64, np.float16, np.int8, np.int64,
                                   np.uint16, np.bool_]),
                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)))
def test_format_tensor_full_print_reads_back_exactly(a):
    text = format_tensor(a, -1)
    tokens = text.replace("[", " ").replace("]", " ").split()
    assert "..." not in tokens and len(tokens) == a.size
    # every value reads back as itself (shortest round-trip digits; NaN as nan)
    if a.dtype.kind == "f":
        back = np.array([float(t) for t in tokens], dtype=np.float64)
        np.testing.assert_array_equal(back.astype(a.dtype), a.ravel())
    else:
        assert [int(t) for t in tokens] == [int(v) for v in a.ravel()]
    # one bracket pair per sub-array
    assert text.count("[") == sum(int(np.prod(a.shape[:k])) for k in range(a.ndim))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 30), st.integers(1, 5))
def test_format_tensor_keeps_summarize_entries_at_each_end(n, s):
    text = format_tensor(np.arange(n), s)
    tokens = text.strip("[]").split()
    if n > 2 * s:
        assert tokens == [str(i) for i in range(s)] + ["..."] + [str(i) for i in range(n - s, n)]
    else:
        assert tokens == [str(i) for i in range(n)]


def test_print_eager_mixes_strings_values_and_structures(capsys):
    x = tnp.arange(10)
    r = nf.print("x:", x, {"b": tnp.ones(2, dtype=tnp.int32), "a": 1}, [x[:2], "s"], 2.5,
                 output_stream=sys.stdout)
    assert r is None
    out = capsys.readouterr().out
    assert out == "x: [0 1 2 ... 7 8 9] {'a': 1, 'b': [1 1]} [[0 1], 's'] 2.5\n"


def test_print_sep_end_summarize_and_default_stream(capsys):
    nf.print(tnp.arange(5), "b", sep="|", end="!", summarize=1)
    nf.print(tnp.arange(5), summarize=None)        # None: 3 per end, as TensorFlow
    nf.print(tnp.arange(7), summarize=-1)
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err == "[0 ... 4]|b![0 1 2 3 4]\n[0 1 2 3 4 5 6]\n"


def test_print_streams(tmp_path, capsys, caplog):
    path = tmp_path / "log.txt"
    f = nf.function(lambda x: nf.print("v", x, output_stream="file://" + str(path)))
    f(tnp.asarray([1, 2]))
    f(tnp.asarray([3, 4]))
    assert path.read_text() == "v [1 2]\nv [3 4]\n"
    with caplog.at_level(logging.INFO):
        nf.print("logged", tnp.asarray(3), output_stream=logging.info)
    assert any(r.getMessage() == "logged 3" and r.levelno == logging.INFO
               for r in caplog.records)
    nf.print("o", output_stream=sys.stdout)
    nf.print("e", output_stream=sys.stderr)
    cap = capsys.readouterr()
    assert (cap.out, cap.err) == ("o\n", "e\n")
    with pytest.raises(ValueError, match="output_stream"):
        nf.print("x", output_stream=object())


# ================================================================== nf.print: compiled
def test_print_runs_at_every_call_not_at_trace_time(capsys):
    seen = []

    @nf.function
    def f(x):
        seen.append(1)                       # Python side effect: tracing only
        nf.print("x =", x)                   # result unused: kept anyway
        return x * 2

    cf = f.get_concrete_function(tnp.zeros(3))        # traces, runs nothing
    assert capsys.readouterr().err == "" and len(seen) == 1
    assert [n.prim for n in cf.graph.nodes].count(print_p) == 1
    outs = [f(tnp.asarray(v)) for v in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [-1.5, 0.0, 7.0])]
    assert capsys.readouterr().err == "x = [1 2 3]\nx = [4 5 6]\nx = [-1.5 0 7]\n"
    assert len(seen) == 1 and f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(outs[2].numpy(), [-3.0, 0.0, 14.0])


def test_print_of_constants_only_still_runs_every_call(capsys):
    f = nf.function(lambda x: (nf.print("step", 3, tnp.asarray([1, 2])), x + 1)[1])
    for _ in range(3):
        f(tnp.ones(2))
    assert capsys.readouterr().err == "step 3 [1 2]\n" * 3


def test_print_keeps_program_order_and_value_at_that_point(capsys):
    v = nf.Variable(1.0)

    @nf.function
    def f(x):
        nf.print("before", v)
        v.assign_add(x)
        nf.print("after", v)
        return v.read_value()

    f(tnp.asarray(2.0, dtype="float32"))      # the Variable's dtype (assign never casts)
    f(tnp.asarray(3.0, dtype="float32"))
    assert capsys.readouterr().err == "before 1\nafter 3\nbefore 3\nafter 6\n"


def test_print_inside_cond_and_while_bodies(capsys):
    @nf.function
    def f(x):
        y = nf.cond(tnp.sum(x) > 0,
                    lambda: (nf.print("pos", x), x * 2)[1],
                    lambda: (nf.print("neg", x), -x)[1])

        def body(i, s):
            nf.print("it", i, s)
            return i + 1, s + 1

        _, s = nf.while_loop(lambda i, s: i < 2, body, (0, tnp.sum(y)))
        return s

    assert capsys.readouterr().err == ""
    f(tnp.ones(2))
    f(-tnp.ones(2))
    f(tnp.asarray([3.0, 1.0]))
    assert capsys.readouterr().err == ("pos [1 1]\nit 0 4\nit 1 5\n"
                                       "neg [-1 -1]\nit 0 2\nit 1 3\n"
                                       "pos [3 1]\nit 0 8\nit 1 9\n")
    assert f.experimental_get_tracing_count() == 1


def test_print_inside_scan_body(capsys):
    def body(c, x):
        nf.print("c", c, "x", x)
        return c + x

    f = nf.function(lambda xs: nf.scan(body, xs, initializer=tnp.asarray(0.0)))
    np.testing.assert_array_equal(f(tnp.asarray([1.0, 2.0])).numpy(), [1.0, 3.0])
    assert capsys.readouterr().err == "c 0 x 1\nc 1 x 2\n"


def test_print_does_not_print_again_in_the_backward_pass(capsys):
    @nf.function
    def g(x):
        with nf.GradientTape() as t:
            t.watch(x)

            def body(i, s):
                nf.print("body", i)
                return i + 1, s * x

            _, s = nf.while_loop(lambda i, s: i < 2, body, (0, x))
            c = nf.cond(x > 0, lambda: (nf.print("branch"), x * x)[1], lambda: x)
            ys = nf.scan(lambda a, e: (nf.print("scan"), a + e * x)[1], tnp.ones(2) * x,
                         initializer=tnp.asarray(0.0))
            r = s + c + tnp.sum(ys)
        return t.gradient(r, x)

    for _ in range(2):
        got = float(g(tnp.asarray(3.0)))
        # r = x^3 + x^2 + (x^2 + 2 x^2): dr/dx = 3x^2 + 2x + 6x
        assert got == pytest.approx(3 * 9 + 6 + 18)
    assert capsys.readouterr().err == "body 0\nbody 1\nbranch\nscan\nscan\n" * 2


def test_print_under_vectorized_map_prints_the_batch(capsys):
    xs = tnp.arange(6.0).reshape(3, 2)
    fn = lambda r: (nf.print("row", r), r * 2)[1]     # noqa: E731
    eager = nf.vectorized_map(fn, xs)
    compiled = nf.function(lambda a: nf.vectorized_map(fn, a))(xs)
    np.testing.assert_array_equal(eager.numpy(), compiled.numpy())
    assert capsys.readouterr().err == "row [[0 1]\n [2 3]\n [4 5]]\n" * 2


def test_print_with_a_tape_watching_and_differentiating(capsys):
    x = tnp.asarray([1.0, 2.0])
    with nf.GradientTape() as t:
        t.watch(x)
        y = tnp.sum(x * x)
        nf.print("y", y)
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [2.0, 4.0])
    assert capsys.readouterr().err == "y 5\n"


def test_saved_function_keeps_its_print(tmp_path, capfd):
    @nf.function(input_signature=[nf.TensorSpec([None], tnp.float32)])
    def f(x):
        nf.print("got", x)
        return x + 1

    m = nf.Module()
    m.f = f
    nf.saved_model.save(m, str(tmp_path / "m"))
    loaded = nf.saved_model.load(str(tmp_path / "m"))
    capfd.readouterr()
    loaded.f(tnp.asarray([1.0, 2.0], dtype=tnp.float32))
    assert capfd.readouterr().err == "got [1 2]\n"


def test_onnx_export_leaves_prints_out(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")

    @nf.function
    def f(x):
        nf.print("x", x)
        return x * 3

    path = str(tmp_path / "m.onnx")
    nf.onnx.export(f, [nf.TensorSpec([None], tnp.float32, name="x")], path)
    out, = ort.InferenceSession(path).run(None, {"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(out, [3.0, 3.0])


# ================================================================== run_functions_eagerly
@pytest.fixture
def run_eagerly():
    assert nf.config.functions_run_eagerly() is False
    nf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        nf.config.run_functions_eagerly(False)


def test_run_functions_eagerly_runs_python_every_call():
    calls = []

    @nf.function
    def f(x):
        calls.append(x._t is None)           # True: a concrete value, not traced
        return tnp.sin(x) * 2

    x = tnp.asarray([0.5, 1.0])
    compiled = f(x)                          # traced and compiled once
    assert f.experimental_get_tracing_count() == 1 and len(calls) == 1
    nf.config.run_functions_eagerly(True)
    try:
        assert nf.config.functions_run_eagerly() is True
        outs = [f(x) for _ in range(3)]      # known signature: the fast path must not serve it
        assert calls == [False, True, True, True]
        assert f.experimental_get_tracing_count() == 1
        float(outs[0][0])                    # concrete: Python decisions work
    finally:
        nf.config.run_functions_eagerly(False)
    assert nf.config.functions_run_eagerly() is False
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), compiled.numpy())
    f(x)                                     # compiled again: no Python
    assert len(calls) == 4 and f.experimental_get_tracing_count() == 1


def test_run_functions_eagerly_allows_python_control_flow_and_prints(run_eagerly, capsys):
    @nf.function
    def f(x):
        if float(tnp.sum(x)) > 0:            # a TracingError when compiled
            print("positive")
            return x
        return -x

    assert f(tnp.ones(2)).numpy().tolist() == [1.0, 1.0]
    assert f(-tnp.ones(2)).numpy().tolist() == [1.0, 1.0]
    assert capsys.readouterr().out == "positive\n"
    assert f.experimental_get_tracing_count() == 0


def test_run_functions_eagerly_methods_and_signatures(run_eagerly):
    class M(nf.Module):
        def __init__(self):
            self.n = 0

        @nf.function(input_signature=[nf.TensorSpec([None], tnp.float64)])
        def step(self, x):
            self.n += 1
            return x + self.n

    m = M()
    assert m.step(tnp.zeros(2)).numpy().tolist() == [1.0, 1.0]
    assert m.step(tnp.zeros(2)).numpy().tolist() == [2.0, 2.0]


# ================================================================== check_numerics
def test_check_numerics_eager_passes_values_and_raises():
    x = tnp.asarray([1.0, 2.0])
    y = nf.debugging.check_numerics(x, "fine")
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    for bad, what in (([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"),
                      ([np.nan, -np.inf], "Inf and NaN")):
        with pytest.raises(nf.errors.InvalidArgumentError,
                           match="my message : Tensor had %s values" % what):
            nf.debugging.check_numerics(tnp.asarray(bad), "my message")
    assert issubclass(nf.errors.InvalidArgumentError, ValueError)
    ints = tnp.asarray([1, 2])
    assert nf.debugging.check_numerics(ints, "ints").numpy().tolist() == [1, 2]
    np.testing.assert_array_equal(
        nf.debugging.assert_all_finite(x, "m").numpy(), x.numpy())


def test_check_numerics_compiled_runs_at_every_call_even_unused():
    @nf.function
    def f(x):
        nf.debugging.check_numerics(tnp.log(x), "log of x")    # result unused: still checked
        return x + 1

    assert f(tnp.asarray([1.0, 2.0])).numpy().tolist() == [2.0, 3.0]
    with pytest.raises(nf.errors.InvalidArgumentError, match="log of x : Tensor had NaN"):
        f(tnp.asarray([1.0, -2.0]))
    with pytest.raises(ValueError, match="Tensor had Inf"):
        f(tnp.asarray([0.0, 2.0]))
    assert f.experimental_get_tracing_count() == 1


def test_check_numerics_gradient_is_checked_too():
    x = tnp.asarray([0.0, 1.0])
    with nf.GradientTape() as t:
        t.watch(x)
        # the gradient reaching check_numerics's result is 1/(2 sqrt(x)): infinite at 0
        y = tnp.sum(tnp.sqrt(nf.debugging.check_numerics(x, "x of sqrt")))
    with pytest.raises(nf.errors.InvalidArgumentError, match="detected in gradient. x of sqrt"):
        t.gradient(y, x)
    g = nf.grad(lambda a: tnp.sum(nf.debugging.check_numerics(a * a, "sq")))(x)
    np.testing.assert_array_equal(g.numpy(), [0.0, 2.0])


@pytest.fixture
def checking():
    nf.debugging.enable_check_numerics()
    try:
        yield
    finally:
        nf.debugging.disable_check_numerics()


def _run_expecting(fn, *args):
    with pytest.raises(nf.errors.InvalidArgumentError) as info:
        fn(*args)
    return str(info.value)


def test_enable_check_numerics_eager(checking):
    x = tnp.asarray([1.0, 2.0])
    line = _line_after()
    msg = _run_expecting(lambda: tnp.log(x - 1.0))
    assert "'log' produced infinity from finite inputs" in msg
    assert "%s:%d" % (__file__, line) in msg
    # values that come in already non-finite are not reported at each later op
    data = tnp.asarray([np.nan, 1.0])
    np.testing.assert_array_equal(np.isnan((data * 2 + 1).numpy()), [True, False])
    line = _line_after()
    msg = _run_expecting(lambda: tnp.zeros(2) / tnp.zeros(2))
    assert "'true_divide' produced NaN" in msg or "'divide' produced NaN" in msg, msg
    assert "%s:%d" % (__file__, line) in msg


def test_enable_check_numerics_compiled_names_op_and_line(checking):
    @nf.function
    def f(x):
        y = tnp.exp(x)
        return tnp.sum(tnp.log(y - 1.0))
    line = f.python_function.__code__.co_firstlineno + 3
    assert np.isfinite(float(f(tnp.asarray([1.0, 2.0]))))
    msg = _run_expecting(f, tnp.asarray([0.0, 2.0]))        # log(0): the second call
    assert "'log' produced infinity from finite inputs" in msg
    assert "%s:%d" % (__file__, line) in msg and "running nf.function 'f'" in msg
    assert f.experimental_get_tracing_count() == 1


def test_enable_check_numerics_inside_cond_branch(checking):
    @nf.function
    def f(x):
        return nf.cond(x[0] > 0, lambda: tnp.sqrt(x - 5.0), lambda: x)
    line = f.python_function.__code__.co_firstlineno + 2
    f(tnp.asarray([-1.0, 2.0]))
    msg = _run_expecting(f, tnp.asarray([1.0, 2.0]))
    assert "'sqrt' produced NaN" in msg and "%s:%d" % (__file__, line) in msg


def _renumbered(src):
    """Generated source with its value names numbered in order of appearance."""
    import re
    names = {}
    return re.sub(r"\bv\d+\b", lambda m: names.setdefault(m.group(), "v%d" % len(names)), src)


def test_check_numerics_mode_costs_nothing_when_off():
    def fn(x):
        return tnp.sum(tnp.log(tnp.exp(x) * 2.0 + 1.0))

    plain = nf.function(fn).get_concrete_function(tnp.ones(4))
    assert "chk" not in plain.source
    f = nf.function(fn)
    x = tnp.ones(4)
    f(x)
    nf.debugging.enable_check_numerics()
    try:
        checked_value = f(x)
        checked = f.get_concrete_function(x)
    finally:
        nf.debugging.disable_check_numerics()
    assert "chk" in checked.source and checked.check_numerics
    after = f.get_concrete_function(x)
    assert _renumbered(after.source) == _renumbered(plain.source) and not after.check_numerics
    assert float(checked_value) == pytest.approx(float(f(x)))
    # and the eager fast path is back
    from ndflow.core.state import GLOBAL
    assert GLOBAL.fast


def test_check_numerics_mode_is_per_thread():
    import threading
    seen = []
    nf.debugging.enable_check_numerics()
    try:
        def other():
            seen.append(np.isinf(float(tnp.log(tnp.asarray(0.0)))))
        t = threading.Thread(target=other)
        t.start()
        t.join()
    finally:
        nf.debugging.disable_check_numerics()
    assert seen == [True]


# ================================================================== assert_equal
def test_assert_equal_eager_and_compiled():
    nf.debugging.assert_equal(tnp.asarray([1, 2]), tnp.asarray([1, 2]))
    nf.debugging.assert_equal(tnp.ones((2, 2)), 1.0)
    with pytest.raises(nf.errors.InvalidArgumentError, match="shapes.*first at index \\(1,\\)"):
        nf.debugging.assert_equal(tnp.asarray([1, 2]), tnp.asarray([1, 3]), message="shapes")
    with pytest.raises(ValueError):
        nf.debugging.assert_equal(tnp.ones(2), tnp.ones(3))

    @nf.function
    def f(x, y):
        nf.debugging.assert_equal(x, y, message="x and y")
        return x + y

    f(tnp.ones(2), tnp.ones(2))
    with pytest.raises(nf.errors.InvalidArgumentError, match="x and y"):
        f(tnp.ones(2), tnp.zeros(2))
    assert f.experimental_get_tracing_count() == 1


# ================================================================ the debugging guide's example
def test_debugging_guide_example_runs(capsys, monkeypatch):
    import os
    import re
    from ndflow.backends import device as D
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    page = os.path.join(root, "docs", "guides", "debugging.md")
    with open(page) as f:
        text = f.read()
    block = re.search(r"```python\n(.*?)```", text, re.S)
    first = text[:block.start(1)].count("\n") + 1          # the page line of the code's first line
    monkeypatch.setattr(D, "_warned_soft", set())
    with pytest.warns(RuntimeWarning, match="GPU:0"):
        # compiled as the page's own lines, so AutoGraph reads the source and errors name them
        exec(compile("\n" * (first - 1) + block.group(1), page, "exec"), {})
    cap = capsys.readouterr()
    assert cap.err.startswith("x: [1 2 3 ... 8 9 10] sum: 55\nx: [-1 0 1 ... 6 7 8] sum: 35\n")
    assert "log of x : Tensor had Inf and NaN values" in cap.out
    assert "'log' produced infinity from finite inputs" in cap.out
    assert f"in 'log' created at {page}:{first + 6}" in cap.out
    assert not nf.config.functions_run_eagerly()


def test_check_numerics_inside_loop_bodies_can_be_differentiated():
    @nf.function
    def g(x):
        with nf.GradientTape() as t:
            t.watch(x)
            _, s = nf.while_loop(lambda i, s: i < 2,
                                 lambda i, s: (i + 1, nf.debugging.check_numerics(s * x, "w")),
                                 (0, x))
            ys = nf.scan(lambda a, e: nf.debugging.check_numerics(a * e, "s"),
                         tnp.stack([x, x]), initializer=tnp.asarray(1.0))
            r = s + ys[-1]
        return t.gradient(r, x)

    assert float(g(tnp.asarray(3.0))) == pytest.approx(3 * 9 + 2 * 3)   # d(x^3 + x^2)
    with pytest.raises(nf.errors.InvalidArgumentError, match="w : Tensor had Inf"):
        g(tnp.asarray(1e200))
