"""The compiled call path (graph/function.py, "the call path"): `f(*args)` runs the entry
generated for the signature called last, which checks the arguments against constants, runs
the graph inline and wraps the results; every other call takes the general path. These tests
pin that the entry is taken when it may be, and never when it may not, with NumPy's values."""
import gc
import inspect
import threading
import tracemalloc

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.ndarray import ndarray, _wrap
from ndflow.graph import function as F, concrete

from helpers import run_threads


def _line_of(fn, text):
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(src) if text in s)


def _no_general_path(f):
    """Make the general path of `f` fail loudly: a call that still works ran its entry."""
    def boom(*a, **k):
        raise AssertionError("the general path ran")
    f._call = boom


def _f32(*shape):
    return np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7


def test_the_entry_runs_the_call_and_the_results_are_numpys():
    f = nf.function(lambda a, b: a * b + a)
    an, bn = _f32(3), _f32(3)[::-1].copy()
    a, b = tnp.asarray(an), tnp.asarray(bn)
    f(a, b)
    cf = f.get_concrete_function(a, b)
    assert f._entry is not f._generic and f._entry._cf is cf
    _no_general_path(f)
    for _ in range(3):
        out = f(a, b)
        assert type(out) is ndarray and out.dtype == np.float32
        np.testing.assert_array_equal(out.numpy(), an * bn + an)
    assert f(a, b) is not f(a, b) and f(a, b)._v is not f(a, b)._v     # fresh results
    assert f.experimental_get_tracing_count() == 1


def test_inline_results_are_made_as_wrap_makes_them():
    f = nf.function(lambda a: a + 1)
    a = tnp.ones(2)
    f(a)
    got, ref = f(a), _wrap(np.ones(2))
    for slot in ("_t", "_dev", "_tid"):
        assert getattr(got, slot) == getattr(ref, slot)
    for o in (got, ref):
        with pytest.raises(AttributeError):
            o._aux                                   # neither sets it


@pytest.mark.parametrize("change", ["shape", "dtype", "numpy", "scalar", "kwargs", "extra",
                                    "fewer", "variable"])
def test_other_calls_fall_back_with_numpys_values(change):
    calls = []

    def body(a, b=None, *more):
        calls.append(1)
        return a - (b if b is not None else 1.0) * 2

    f = nf.function(body)
    an, bn = _f32(2, 3), _f32(2, 3) + 1
    a, b = tnp.asarray(an), tnp.asarray(bn)
    np.testing.assert_array_equal(f(a, b).numpy(), an - bn * 2)
    entry = f._entry
    args, kwargs, want = {
        "shape": ((tnp.asarray(_f32(4)), tnp.asarray(_f32(4))), {}, _f32(4) - _f32(4) * 2),
        "dtype": ((tnp.asarray(an.astype(np.float64)), b), {}, an.astype(np.float64) - bn * 2),
        "numpy": ((an, bn), {}, an - bn * 2),
        "scalar": ((a, 3.0), {}, an - np.float32(3.0) * 2),
        "kwargs": ((a,), {"b": b}, an - bn * 2),
        "extra": ((a, b, a), {}, an - bn * 2),
        "fewer": ((a,), {}, an - 1.0 * 2),
        "variable": ((nf.Variable(an), b), {}, an - bn * 2),
    }[change]
    for _ in range(2):
        got = f(*args, **kwargs)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)
    # the first signature is still served by an entry, without tracing again
    n = f.experimental_get_tracing_count()
    np.testing.assert_array_equal(f(a, b).numpy(), an - bn * 2)
    assert f.experimental_get_tracing_count() == n
    if change in ("shape", "dtype", "numpy"):
        assert f._entry is entry                    # the signature seen before came back


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("state", ["tape", "device_scope", "promotion", "check_numerics",
                                   "trace"])
def test_no_entry_under_a_tape_trace_scope_or_switch(state):
    f = nf.function(lambda a, b: a * b)
    an, bn = _f32(3), _f32(3) + 2
    a, b = tnp.asarray(an), tnp.asarray(bn)
    f(a, b)
    f(a, b)
    assert f._entry is not f._generic
    if state == "tape":
        with nf.GradientTape() as t:
            t.watch(a)
            y = tnp.sum(f(a, b))
        np.testing.assert_allclose(t.gradient(y, a).numpy(), bn)     # the tape saw it
    elif state == "device_scope":
        with nf.device("CPU:0"):
            np.testing.assert_array_equal(f(a, b).numpy(), an * bn)
    elif state == "promotion":
        tnp.experimental_enable_numpy_behavior(dtype_conversion_mode="all")
        try:
            # under 'all' a Python float does not keep float32 (the general key records it)
            g = nf.function(lambda a: a * 2.0)
            out = g(a)
            assert out.dtype == (a * 2.0).dtype
        finally:
            tnp.experimental_enable_numpy_behavior()
        np.testing.assert_array_equal(f(a, b).numpy(), an * bn)
    elif state == "check_numerics":
        g = nf.function(lambda a, b: a / b)
        zero = tnp.zeros(3, dtype=np.float32)
        g(a, b)
        nf.debugging.enable_check_numerics()
        try:
            with pytest.raises(Exception, match="(?i)inf|nan"):
                g(a, zero)
        finally:
            nf.debugging.disable_check_numerics()
    else:
        outer = nf.function(lambda a, b: f(a, b) + 1)
        np.testing.assert_array_equal(outer(a, b).numpy(), an * bn + 1)
        assert len(outer.get_concrete_function(a, b).graph.nodes) <= 2      # traced through


def test_device_arguments_take_the_general_path():
    from fake_device import fake_gpu
    f = nf.function(lambda a: a * 3)
    an = _f32(4)
    f(tnp.asarray(an))
    with fake_gpu():
        with nf.device("GPU:0"):
            x = tnp.asarray(an)
        out = f(x)
        assert out.device == x.device
        np.testing.assert_array_equal(out._v.get(), an * 3)


def test_run_functions_eagerly_and_the_time_flag_drop_the_entry():
    seen = []

    def body(a):
        seen.append(1)
        return a + 1

    f = nf.function(body)
    a = tnp.ones(2)
    f(a)
    f(a)
    assert len(seen) == 1 and f._entry is not f._generic
    nf.config.run_functions_eagerly(True)
    try:
        f(a)
        f(a)
        assert len(seen) == 3                     # the Python function ran at each call
        assert f._entry is f._generic and not f._fast
    finally:
        nf.config.run_functions_eagerly(False)
    f(a)
    f(a)
    assert f._entry is not f._generic
    prev = nf.config.set_debug("time")          # timing every call: no entry may skip it
    try:
        assert f._entry is f._generic
    finally:
        nf.config.set_debug(*prev)


@pytest.mark.filterwarnings("ignore:nf.function .* has been traced")
def test_an_evicted_graph_takes_its_entries_with_it():
    prev = nf.config.set_function_cache_size(2)
    try:
        f = nf.function(lambda x, s=2.0: x * s)

        def check():
            live = set(map(id, f._cache.values()))
            assert all(id(e._cf) in live for e in f._fast.values())
            assert f._entry._cf is None or id(f._entry._cf) in live
            assert f._prev._cf is None or id(f._prev._cf) in live

        for n, kw in ((1, {}), (1, {}), (2, {}), (3, {}), (1, {}), (4, {"s": 2.0}),
                      (5, {"s": 2.0}), (5, {})):
            np.testing.assert_array_equal(f(tnp.ones(n), **kw).numpy(), np.full(n, 2.0))
            check()
        assert f._entry._cf is not None
    finally:
        nf.config.set_function_cache_size(prev)


def test_a_dropped_function_is_freed_without_the_gc():
    import weakref
    f = nf.function(lambda x: x + 1)
    f(tnp.ones(3))
    f(tnp.ones(3))
    r = weakref.ref(f)
    gc.disable()
    try:
        del f
        assert r() is None                 # no reference cycle through its entries
    finally:
        gc.enable()


def test_a_contradicted_assumption_switches_graphs_through_the_entry():
    sym, rot = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([[0.0, -1.0], [1.0, 0.0]])
    f = nf.function(lambda a: tnp.linalg.eigvals(a) * 2)
    for m in (sym, sym, rot, rot, sym, rot):
        got, want = f(tnp.asarray(m)), np.linalg.eigvals(m) * 2
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.sort_complex(got.numpy()), np.sort_complex(want))
    assert f.experimental_get_tracing_count() == 2
    # the same with another signature in turn: the switches happen inside probes too
    sym3 = np.diag([1.0, 2.0, 3.0])
    rot3 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    for m in (sym3, sym, rot3, rot, sym3, sym, rot3, sym, sym3, rot, rot3):
        got, want = f(tnp.asarray(m)), np.linalg.eigvals(m) * 2
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.sort_complex(got.numpy()), np.sort_complex(want))
    assert f.experimental_get_tracing_count() == 4


@pytest.mark.parametrize("inline", [True, False])
def test_errors_in_the_entry_name_the_node_and_the_users_line(inline, monkeypatch):
    if not inline:
        monkeypatch.setattr(concrete, "_INLINE_LINES", 0)     # the entry calls `run`

    def body(m):
        y = m * 2
        return tnp.linalg.inv(y) + 1          # singular: LinAlgError at run time

    f = nf.function(body)
    good = tnp.asarray(np.eye(2))
    np.testing.assert_allclose(f(good).numpy(), np.linalg.inv(np.eye(2) * 2) + 1)
    f(good)
    _no_general_path(f)
    with pytest.raises(np.linalg.LinAlgError) as e:
        f(tnp.asarray(np.ones((2, 2))))
    msg = str(e.value)
    assert f"test_call_path.py:{_line_of(body, 'tnp.linalg.inv')}" in msg, msg
    assert "inv" in msg and "body" in msg


def test_numpy_arguments_and_outputs_of_every_kind():
    k = np.arange(3.0)

    def body(a, b):
        return {"s": a + b, "k": 7, "n": k * 1, "t": (a, [b * 2])}

    f = nf.function(body)
    an, bn = np.ones(3), np.full(3, 2.0)
    for args in ((an, bn), (an, bn), (tnp.asarray(an), bn), (tnp.asarray(an), bn)):
        out = f(*args)
        np.testing.assert_array_equal(np.asarray(out["s"]), an + bn)
        assert out["k"] == 7
        np.testing.assert_array_equal(np.asarray(out["t"][1][0]), bn * 2)
        np.testing.assert_array_equal(np.asarray(out["n"]), k)
    assert f.experimental_get_tracing_count() == 2        # NumPy and ndflow first arguments


def test_functions_of_no_arguments_and_of_constants_only():
    f = nf.function(lambda: tnp.arange(3) * 2)
    g = nf.function(lambda a: a)                           # the graph has no statement
    for _ in range(3):
        np.testing.assert_array_equal(f().numpy(), np.arange(3) * 2)
        a = tnp.ones(2)
        assert np.array_equal(g(a).numpy(), np.ones(2))
    with pytest.raises(TypeError):
        f(1, 2, 3, 4)


def test_an_argument_written_by_the_function_never_gets_an_entry():
    def body(a):
        a[0] = 5.0
        return a * 2

    f = nf.function(body)
    for _ in range(3):
        a = np.zeros(2)
        np.testing.assert_array_equal(np.asarray(f(a)), [10.0, 0.0])
        np.testing.assert_array_equal(a, [5.0, 0.0])           # written back
    assert not f._fast and f._entry is f._generic


def test_intermediates_are_freed_inside_the_entry():
    n = 1 << 20                                      # 8 MiB of float64

    def body(x):
        y = tnp.cumsum(x)
        z = tnp.sort(y)
        w = tnp.cumsum(z)
        return tnp.sort(w)

    f = nf.function(body)
    x = tnp.asarray(np.random.default_rng(0).random(n))
    f(x)
    f(x)
    _no_general_path(f)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = f(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out.numpy(), np.sort(np.cumsum(np.sort(np.cumsum(x.numpy())))))
    # at most two arrays live at once (an operand and its result; sort copies then sorts)
    assert peak < 2.5 * n * 8, peak / (n * 8)


def test_threads_calling_one_function_with_several_signatures_agree():
    f = nf.function(lambda a, b: tnp.tanh(a) * b - 1)
    shapes = [(3,), (2, 2), (5,), ()]
    data = [(_f32(*s) if s else np.float32(0.5) * np.ones((), np.float32), _f32(*s) + 1
             if s else np.ones((), np.float32)) for s in shapes]
    want = [np.tanh(a) * b - 1 for a, b in data]
    for a, b in data:
        f(tnp.asarray(a), tnp.asarray(b))
    n0 = f.experimental_get_tracing_count()
    errors = []

    def work(i):
        try:
            for k in range(60):
                j = (i + k) % len(data)      # each thread switches signature every call
                a, b = data[j]
                got = f(tnp.asarray(a), tnp.asarray(b))
                if got.shape != want[j].shape or got.dtype != want[j].dtype or \
                        not np.array_equal(got.numpy(), want[j]):
                    errors.append((i, k, j))
        except Exception as e:          # pragma: no cover - reported below
            errors.append(e)

    run_threads(work)
    assert not errors, errors[:3]
    assert f.experimental_get_tracing_count() == n0


def test_a_thread_with_a_tape_never_takes_another_threads_entry():
    f = nf.function(lambda a: a * a)
    a = tnp.asarray(_f32(3))
    f(a)
    f(a)
    grads, stop = [], threading.Event()

    def hammer(_):
        while not stop.is_set():
            f(a)

    t = threading.Thread(target=hammer, args=(0,))
    t.start()
    try:
        for _ in range(20):
            with nf.GradientTape() as tape:
                tape.watch(a)
                y = tnp.sum(f(a))
            grads.append(tape.gradient(y, a).numpy())
    finally:
        stop.set()
        t.join()
    for g in grads:
        np.testing.assert_allclose(g, 2 * _f32(3), rtol=1e-6)


def test_retrace_warnings_name_the_callers_line():
    f = nf.function(lambda x: x + 1)
    with pytest.warns(UserWarning, match="traced 5 times") as rec:
        for n in range(1, 6):
            f(tnp.ones(n))        # the warning's line
    assert [w.filename for w in rec if "traced" in str(w.message)] == [__file__]


def test_signatures_called_in_turn_switch_entries_without_the_table():
    f = nf.function(lambda a, b: a @ b)
    data = [(_f32(2, 3), _f32(3, 2)), (_f32(4), _f32(4)), (_f32(1, 1), _f32(1, 5))]
    for a, b in data:
        f(tnp.asarray(a), tnp.asarray(b))

    def no_table(*a, **k):
        raise AssertionError("the signature table was consulted")
    f._dispatch = no_table
    for k in range(9):
        a, b = data[k % 3]
        got = f(tnp.asarray(a), tnp.asarray(b))
        assert got.dtype == (a @ b).dtype
        np.testing.assert_array_equal(np.asarray(got), a @ b)
    del f._dispatch
    # more signatures than the entries tried on a miss: the table serves them, as many calls
    shapes = [(n,) for n in range(1, 2 * F._RECENT + 3)]
    for s in shapes + shapes:
        x = _f32(*s)
        np.testing.assert_array_equal(np.asarray(f(tnp.asarray(x), tnp.asarray(x))), x @ x)
    assert f.experimental_get_tracing_count() == 3 + len(shapes) - 1      # (4,) seen before
