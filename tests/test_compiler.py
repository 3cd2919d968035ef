"""The nf.function machinery around the graph: the lean call path and its cache key, the bounded
trace cache, reduce_retracing, retrace warnings, NDFLOW_DEBUG output, and errors that point at
the user's line."""
import inspect
import os
import subprocess
import sys
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


# ------------------------------------------------------------------ the call path
def test_repeated_calls_take_the_fast_path(monkeypatch):
    f = nf.function(lambda a, b: a + b)
    a, b = tnp.ones(3), tnp.ones(3)
    f(a, b)

    def general(*args):
        raise AssertionError("the general call path ran")
    monkeypatch.setattr(f, "_call", general)
    for _ in range(3):
        np.testing.assert_allclose(f(a, b).numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(AssertionError, match="general"):
        f(tnp.ones(4), tnp.ones(4))          # new shapes: not a fast hit


def test_fast_path_key_keeps_shapes_dtypes_and_modes_apart():
    f = nf.function(lambda a, b: a + b)
    i32, f32 = tnp.ones(2, dtype=np.int32), tnp.ones(2, dtype=np.float32)
    assert f(i32, f32).dtype == np.float64            # NumPy promotion
    assert f(f32, f32).dtype == np.float32
    assert f(tnp.ones((2, 1), dtype=np.float32), f32).shape == (2, 2)
    tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="all")
    try:
        assert f(i32, f32).dtype == np.float32        # the JAX lattice: another graph
    finally:
        tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="legacy")
    assert f(i32, f32).dtype == np.float64
    assert f.experimental_get_tracing_count() == 4


def test_fast_path_outputs_are_fresh_and_structured():
    f = nf.function(lambda x: (x * 2, [x + 1, "tag"], {"s": tnp.sum(x)}))
    x = tnp.ones(2)
    for _ in range(2):
        a, (b, tag), d = f(x)
        np.testing.assert_allclose(a.numpy(), [2, 2])
        a += 100                                        # changing a result in place ...
        assert tag == "tag" and float(d["s"]) == 2.0
    np.testing.assert_allclose(f(x)[0].numpy(), [2, 2])   # ... does not reach the next call
    g = nf.function(lambda x: x)
    y = g(x)
    assert y.numpy() is x.numpy() or np.shares_memory(y.numpy(), x.numpy())


def test_calls_under_a_tape_python_values_and_numpy_arrays_are_correct():
    f = nf.function(lambda x, k: tnp.sin(x) * k)
    x = tnp.asarray([0.2, 0.4])
    f(x, 2.0)
    f(x, 2.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(f(x, 3.0))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * np.cos(x.numpy()))
    np.testing.assert_allclose(f(np.array([0.2, 0.4]), 1.0).numpy(), np.sin([0.2, 0.4]))


def test_fast_path_errors_name_the_users_line():
    def body(a, b):
        return a @ b          # inner sizes only known at run time

    f = nf.function(body, reduce_retracing=True)
    f(tnp.ones((2, 3)), tnp.ones((3, 2)))
    f(tnp.ones((4, 5)), tnp.ones((5, 2)))   # relaxed: one graph for every size
    with pytest.raises(ValueError) as e:
        f(tnp.ones((4, 5)), tnp.ones((6, 2)))
    assert f"test_compiler.py:{_line_of(body, 'a @ b')}" in str(e.value), str(e.value)


# ------------------------------------------------------------------ the trace cache
def test_trace_cache_is_bounded_lru():
    prev = nf.config.set_function_cache_size(2)
    try:
        f = nf.function(lambda x: x + 1)
        for n in (1, 2, 3):
            f(tnp.ones(n))
        assert f.experimental_get_tracing_count() == 3 and len(f._cache) == 2
        f(tnp.ones(3))
        f(tnp.ones(2))
        assert f.experimental_get_tracing_count() == 3          # still cached
        f(tnp.ones(1))                                           # evicted: traced again
        assert f.experimental_get_tracing_count() == 4
        assert len(f._fast) <= 2
    finally:
        nf.config.set_function_cache_size(prev)
    with pytest.raises(ValueError):
        nf.config.set_function_cache_size(0)


def test_reduce_retracing_relaxes_sizes_after_a_second_shape():
    seen = []

    @nf.function(reduce_retracing=True)
    def f(x, w):
        seen.append((tuple(x.shape), tuple(w.shape)))
        return tnp.sum(x @ w, axis=0)

    w = tnp.ones((3, 2))
    for b in (1, 2, 5, 9):
        np.testing.assert_allclose(f(tnp.ones((b, 3)), w).numpy(), [3.0 * b] * 2)
    assert f.experimental_get_tracing_count() == 2
    assert seen == [((1, 3), (3, 2)), ((None, 3), (3, 2))]
    f(tnp.ones((2, 4)), tnp.ones((4, 2)))                # another size changes: relaxed again
    assert seen[-1] == ((None, None), (None, 2))
    f(tnp.ones((2, 3), dtype=np.float32), w)            # dtypes still key exactly
    assert f.experimental_get_tracing_count() == 4
    f(tnp.ones((7, 8)), tnp.ones((8, 2)))
    assert f.experimental_get_tracing_count() == 4


def test_retracing_often_warns_unless_sizes_are_relaxed():
    f = nf.function(lambda x: x + 1)
    with pytest.warns(UserWarning, match="traced 5 times.*reduce_retracing"):
        for n in range(1, 6):
            f(tnp.ones(n))
    g = nf.function(lambda x: x + 1, reduce_retracing=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 12):
            g(tnp.ones(n))
    assert g.experimental_get_tracing_count() == 2


# ------------------------------------------------------------------ NDFLOW_DEBUG
def test_debug_flags_print_graphs_diffs_code_and_times(capsys):
    prev = nf.config.set_debug("graph", "opt", "code", "time")
    try:
        f = nf.function(lambda x: tnp.exp(x * 1.0) + 0.0, name="dbg")
        f(tnp.ones(2))
        f(tnp.ones(2))
    finally:
        nf.config.set_debug(*prev)
    err = capsys.readouterr().err
    assert "nf.function 'dbg': traced graph" in err
    assert "--- pass algebraic_simplification on 'dbg'" in err
    assert "-  v" in err and "multiply" in err                 # the diff shows removed nodes
    assert "optimized graph" in err and "generated code" in err and "def run(a0, )" in err
    assert "trace" in err and "optimize" in err and "generate" in err
    assert err.count("nf.function 'dbg': call") == 2
    with pytest.raises(ValueError, match="unknown ndflow debug flag"):
        nf.config.set_debug("graphs")


def test_ndflow_debug_environment_variable():
    code = ("import ndflow as nf, ndflow.numpy as tnp\n"
            "nf.function(lambda x: x * 2)(tnp.ones(2))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"NDFLOW_DEBUG": "code", "PYTHONPATH": root}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "generated code" in out.stderr and "def run(" in out.stderr


def test_numpy_arguments_take_the_fast_path_too(monkeypatch):
    f = nf.function(lambda x, w: x @ w)
    w = tnp.ones((3, 2))
    np.testing.assert_allclose(f(np.ones((4, 3)), w).numpy(), np.full((4, 2), 3.0))
    monkeypatch.setattr(f, "_call", lambda *a: (_ for _ in ()).throw(AssertionError("slow")))
    for k in range(3):      # fresh NumPy data every call, as a training loop feeds it
        np.testing.assert_allclose(f(np.full((4, 3), float(k)), w).numpy(), np.full((4, 2), 3.0 * k))
    with pytest.raises(AssertionError):
        f(tnp.ones((4, 3)), w)       # an ndflow array where NumPy was: not the same key


def test_arguments_converted_by_the_input_signature_are_converted_every_call():
    f = nf.function(lambda x: x * 2, input_signature=[nf.TensorSpec([None], tnp.float32)])
    for k in range(3):
        out = f((np.arange(3.0) + k).astype(np.float32))    # NumPy data: converted every call
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), (np.arange(3.0) + k) * 2)
    # an array of another dtype is never cast silently (TensorFlow: incompatible input)
    with pytest.raises(TypeError, match="input_signature"):
        f(np.arange(3.0))
