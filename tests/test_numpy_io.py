"""File I/O, printing, error state and stride tricks: the safety properties and errors (the
values against NumPy are in tests/optable_io.py and tests/optable_fidelity.py)."""
import io
import pickle

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.numpy.lib.stride_tricks import sliding_window_view, as_strided
from helpers import assert_same


# ------------------------------------------------------------------ files never unpickle
def _pickled_object_array():
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    buf.seek(0)
    return buf


def test_load_refuses_pickles_by_default():
    with pytest.raises(ValueError, match="allow_pickle"):
        tnp.load(_pickled_object_array())
    r = tnp.load(_pickled_object_array(), allow_pickle=True)     # asked for: NumPy's objects
    assert r.dtype == object and r[0] == {"a": 1}


def test_load_does_not_run_a_pickle_file():
    class Boom:
        def __reduce__(self):
            return (eval, ("1/0",))
    buf = io.BytesIO(pickle.dumps(Boom()))
    with pytest.raises((ValueError, pickle.UnpicklingError, OSError)):
        tnp.load(buf)


def test_save_writes_no_pickle_and_npy_round_trips():
    x = tnp.asarray(np.arange(6.0).reshape(2, 3))
    buf = io.BytesIO()
    tnp.save(buf, x)
    buf.seek(0)
    y = np.load(buf, allow_pickle=False)
    np.testing.assert_array_equal(y, x.numpy())
    v = nf.Variable([1.0, 2.0])
    buf = io.BytesIO()
    tnp.save(buf, v)
    buf.seek(0)
    assert_same(tnp.load(buf), np.array([1.0, 2.0], np.float32))


def test_npz_file_interface(tmp_path):
    p = tmp_path / "a.npz"
    tnp.savez_compressed(p, tnp.ones(3), w=tnp.arange(4))
    with tnp.load(p) as f:
        assert sorted(f.files) == ["arr_0", "w"] and "w" in f and len(f) == 2
        assert_same(f["w"], np.arange(4))
        assert sorted(k for k in f) == ["arr_0", "w"]
        assert_same(dict(f.items())["arr_0"], np.ones(3))
        assert f.get("missing") is None


def test_load_mmap_mode(tmp_path):
    p = tmp_path / "m.npy"
    np.save(p, np.arange(5.0))
    assert_same(tnp.load(p, mmap_mode="r"), np.arange(5.0))


@pytest.mark.parametrize("fn", [
    lambda: tnp.loadtxt(io.StringIO("a 1\nb 2\n"), dtype=[("k", "U1"), ("v", int)]),
    lambda: tnp.genfromtxt(io.StringIO("1,2\n3,\n"), delimiter=",", usemask=True),
    lambda: tnp.genfromtxt(io.StringIO("x,y\n1,2\n"), delimiter=",", names=True),
    lambda: tnp.loadtxt(io.StringIO("a b\n"), dtype=str)])
def test_text_readers_refuse_what_ndflow_arrays_cannot_hold(fn):
    with pytest.raises(TypeError, match="ndflow"):
        fn()


def test_writers_refuse_traced_values():
    f = nf.function(lambda x: (tnp.save(io.BytesIO(), x), x)[1])
    with pytest.raises(TypeError, match="save: cannot write a traced"):
        f(tnp.ones(2))
    g = nf.function(lambda x: (tnp.savetxt(io.StringIO(), x), x)[1])
    with pytest.raises(TypeError, match="savetxt"):
        g(tnp.ones(2))


def test_tofile_fromfile_round_trip(tmp_path):
    p = str(tmp_path / "raw.bin")
    x = tnp.asarray(np.linspace(0, 1, 7, dtype=np.float32))
    x.tofile(p)
    assert_same(tnp.fromfile(p, dtype=np.float32), x.numpy())


# ------------------------------------------------------------------ printing
def test_printing_follows_numpy_print_options():
    x = tnp.asarray([1 / 3, 2.0])
    with tnp.printoptions(precision=2):
        assert str(x) == str(np.array([1 / 3, 2.0])) == "[0.33 2.  ]"
        assert tnp.array_str(x) == "[0.33 2.  ]"
    assert np.array_repr(x) == tnp.array_repr(x) == np.array_repr(x.numpy())
    assert tnp.format_float_positional(tnp.asarray(np.float32(0.1))) == "0.1"
    assert tnp.binary_repr(tnp.asarray(-3), width=4) == "1101"


def test_printing_a_traced_value_is_refused():
    f = nf.function(lambda x: (tnp.array2string(x), x)[1])
    with pytest.raises(Exception, match="(?i)trac|symbolic|concrete"):
        f(tnp.ones(2))


def test_show_config(capsys):
    cfg = tnp.show_config(mode="dicts")
    assert cfg["numpy"] == np.__version__ and cfg["devices"]
    assert set(cfg["optional packages"]) >= {"numba", "cupy", "scipy"}
    tnp.show_config()
    assert "numpy: " + np.__version__ in capsys.readouterr().out
    with pytest.raises(AttributeError):
        tnp.show_config(mode="bogus")


# ------------------------------------------------------------------ floating-point error state
@pytest.mark.parametrize("path", ["eager", "jit", "vmap", "tape"])
def test_errstate_is_honoured_by_ndflow_kernels(path):
    x = tnp.asarray([[1.0, 0.0], [2.0, 3.0]])

    def fn(a):
        return tnp.log(a) * 2.0 + 1.0

    def run():
        if path == "eager":
            return fn(x)
        if path == "jit":
            return nf.function(fn)(x)
        if path == "vmap":
            return nf.vectorized_map(fn, x)
        with nf.GradientTape() as t:
            t.watch(x)
            return fn(x)
    with tnp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            run()
    with tnp.errstate(divide="ignore"):
        with np.testing.assert_no_warnings():
            assert float(run()[0, 1]) == -np.inf
    old = tnp.seterr(divide="raise")
    try:
        assert tnp.geterr()["divide"] == "raise"
        with pytest.raises(FloatingPointError):
            run()
    finally:
        tnp.seterr(**old)


def test_errstate_inside_a_traced_function_is_refused():
    def body(x):
        with tnp.errstate(divide="raise"):
            return x / 0.0
    with pytest.raises(RuntimeError, match="errstate inside nf.function"):
        nf.function(body)(tnp.ones(2))
    with pytest.raises(RuntimeError, match="seterr inside nf.function"):
        nf.function(lambda x: (tnp.seterr(all="raise"), x)[1])(tnp.ones(2))


def test_errstate_as_decorator_and_seterrcall():
    @tnp.errstate(invalid="ignore")
    def f(x):
        return tnp.sqrt(x)
    with np.testing.assert_no_warnings():
        assert np.isnan(float(f(tnp.asarray(-1.0))))
    seen = []
    old_call = tnp.seterrcall(lambda kind, flag: seen.append(kind))
    try:
        with tnp.errstate(invalid="call"):
            tnp.sqrt(tnp.asarray(-1.0))
        assert seen and "invalid" in seen[0]
    finally:
        tnp.seterrcall(old_call)


# ------------------------------------------------------------------ stride tricks
def test_sliding_window_view_is_a_read_only_view_eagerly():
    xn = np.arange(8.0)
    x = tnp.asarray(xn)
    w = sliding_window_view(x, 3)
    assert np.shares_memory(w.numpy(), x.numpy())
    with pytest.raises(ValueError, match="read-only"):
        w[0, 0] = 1.0
    assert_same(np.lib.stride_tricks.sliding_window_view(x, 3), np.lib.stride_tricks
                .sliding_window_view(xn, 3))


def test_sliding_window_view_gradient_and_errors():
    x = tnp.asarray(np.arange(6.0))
    with nf.GradientTape() as t:
        t.watch(x)
        s = tnp.sum(sliding_window_view(x, 3) ** 2)
    assert_same(t.gradient(s, x), 2 * np.arange(6.0) * np.array([1, 2, 3, 3, 2, 1]))
    with nf.GradientTape() as t:
        t.watch(x)
        with pytest.raises(ValueError, match="writeable=True"):
            sliding_window_view(x, 3, writeable=True)
    with pytest.raises(ValueError, match="larger than input"):
        nf.function(lambda a: sliding_window_view(a, 9))(x)
    with pytest.raises(ValueError, match="larger than input"):
        np.lib.stride_tricks.sliding_window_view(np.arange(6.0), 9)


def test_as_strided_is_read_only_and_refuses_tapes_and_traces():
    x = tnp.asarray(np.arange(5.0))
    y = as_strided(x, (3, 3), (8, 8))
    assert_same(y, np.lib.stride_tricks.as_strided(np.arange(5.0), (3, 3), (8, 8)))
    with pytest.raises(ValueError, match="read-only"):
        y[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        as_strided(x, (3, 3), (8, 8), writeable=True)
    with nf.GradientTape() as t:
        t.watch(x)
        with pytest.raises(TypeError, match="as_strided"):
            as_strided(x, (3,), (8,))
    with pytest.raises(TypeError, match="as_strided"):
        nf.function(lambda a: as_strided(a, (3,), (8,)))(x)


# ------------------------------------------------------------------ isclose, einsum sublists
@pytest.mark.parametrize("a,b", [(1.0, 1.0), (1.0, 1.1), (np.float32(1), 1.0), (1, 1),
                                 (np.array(1.0), 1.0 + 1e-9), (np.nan, np.nan)])
def test_isclose_on_scalars_returns_numpy_type(a, b):
    got, want = tnp.isclose(a, b), np.isclose(a, b)
    assert type(got) is type(want) and got == want
    assert isinstance(tnp.isclose(tnp.asarray(a), b), tnp.ndarray)


def test_einsum_sublist_errors_as_numpy():
    a = np.ones((2, 3))
    for bad, err in (([0, 52], ValueError), ([0, -1], ValueError), ([0, 1.5], TypeError),
                     ([0, True], TypeError)):
        with pytest.raises(err):
            np.einsum(a, bad)
        with pytest.raises(err):
            tnp.einsum(tnp.asarray(a), bad)


def test_errstate_raise_is_honoured_by_the_compiled_loop_tier(monkeypatch, nf_settings):
    """The numba tier's loops set no floating-point flags: under 'raise' (or 'call', 'log',
    'print') a fused region runs on NumPy's tier, which raises as NumPy does."""
    pytest.importorskip("numba")
    from ndflow.graph import fusion
    nf_settings(numba="sync")
    # (division and arithmetic: ops the exact numba tier compiles without settings.fast_math)
    f = nf.function(lambda y: (1.0 / y) * 2.0 + 1.0 - y)
    x = tnp.asarray(np.tile([0.0, 1.0], 5000))
    with np.errstate(all="ignore"):
        for _ in range(4):
            f(x)
    fk = fusion.fused_kernels(f.get_concrete_function(x).graph)[0]
    assert fk.tier() == 1
    with tnp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            f(x)
    seen = []
    with tnp.errstate(divide="call", call=lambda kind, flag: seen.append(kind)):
        f(x)
    assert seen
    with np.errstate(all="ignore"):
        assert_same(f(x), (1.0 / x.numpy()) * 2.0 + 1.0 - x.numpy())


def test_syntax_trees_are_read_one_thread_at_a_time(tmp_path, monkeypatch):
    """CPython 3.11 counts the depth of the syntax trees it builds in one counter per
    interpreter (python/cpython#106905): NumPy's .npy header reader (`ast.literal_eval`),
    AutoGraph's parser and the scalar vocabulary's parser, run by two threads at once, raised
    "SystemError: AST constructor recursion depth mismatch" (np.load from four threads, in
    test_paths_agree). Each runs holding core.state.AST_LOCK."""
    import ast
    import os
    import sys
    from ndflow.core.state import AST_LOCK
    from ndflow.primitives import scalar

    ours = os.path.dirname(nf.__file__)
    held = []
    real_eval, real_parse = ast.literal_eval, ast.parse

    def caller():
        # (NumPy's header reader, or ndflow's own code: what the lock is for; a module that
        # an import runs once, numpy.ma's, builds its signatures with ast too)
        f = sys._getframe(2).f_code.co_filename
        return "numpy" if "format" in os.path.basename(f) and "numpy" in f else \
            "ndflow" if f.startswith(ours) else None

    def literal_eval(*a, **k):
        held.append(("literal_eval", caller(), AST_LOCK.locked()))
        return real_eval(*a, **k)

    def parse(*a, **k):
        held.append(("parse", caller(), AST_LOCK.locked()))
        return real_parse(*a, **k)

    np.save(tmp_path / "a.npy", np.arange(3.0))
    np.savez(tmp_path / "b.npz", x=np.arange(2))
    monkeypatch.setattr(ast, "literal_eval", literal_eval)
    monkeypatch.setattr(ast, "parse", parse)
    np.testing.assert_array_equal(tnp.load(tmp_path / "a.npy"), np.arange(3.0))
    with tnp.load(tmp_path / "b.npz") as f:
        np.testing.assert_array_equal(f["x"], np.arange(2))
    assert scalar._parse("x + 1", ["x"]) == ("call", "add", (("operand", 0), ("const", 1)))

    def traced(v):
        return v + 1 if v.shape[0] > 1 else v
    nf.function(traced)(tnp.ones(3))
    seen = [(name, who, locked) for name, who, locked in held if who]
    assert [n for n, who, _ in seen if who == "numpy"].count("literal_eval") >= 2, held
    assert [n for n, who, _ in seen if who == "ndflow"].count("parse") >= 2, held
    assert all(locked for *_, locked in seen), seen
