"""Elementwise fusion, fused kernels and buffer reuse (ndflow/graph/fusion.py, kernels/,
memory.py): graph structure after fusion; fused == unfused on random chains with NaN, inf,
overflow and underflow; our own math functions against NumPy (ulps and exact special values);
pooled and donated buffers never overwrite anything a caller can see. The NumPy tier carries
the correctness tests (CI has no numba); the numba tier tests skip without numba."""
import importlib.util
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
from helpers import run_threads
import ndflow.numpy as tnp
from ndflow.graph import fusion, memory
from ndflow.graph.ir import verify
from ndflow.graph.kernels import contract, mathlib, planner, numba_runner

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is an optional extra (pip install numba); without it the "
                           "NumPy tier runs, and the tests above check it")


def _fused(cf):
    return [n for n in cf.graph.nodes if n.prim.name.startswith("fused{")]


def _names(cf):
    return [n.prim.name.split("{")[0] for n in cf.graph.nodes]


@pytest.fixture
def numpy_only(monkeypatch, nf_settings):
    nf_settings(numba="off")


@pytest.fixture
def large_path(monkeypatch, nf_settings):
    """Make every result 'large' so the out= path runs on small test arrays."""
    nf_settings(large_min=1)


# ------------------------------------------------------------------ structure
def test_sigmoid_is_one_fused_node(numpy_only):
    f = nf.function(lambda y: 1 / (1 + tnp.exp(-y)))
    y = tnp.asarray(np.linspace(-5, 5, 7, dtype=np.float32))
    cf = f.get_concrete_function(y)
    assert _names(cf) == ["fused"]
    text = str(cf)
    for op in ("negative(", "exp(", "add(", "true_divide("):
        assert text.count(op) == 1, text
    verify(cf.graph)
    np.testing.assert_array_equal(f(y).numpy(), 1 / (1 + np.exp(-y.numpy())))


def test_shared_value_is_computed_once_and_returned(numpy_only):
    @nf.function
    def f(x, w):
        a = tnp.exp(x)
        return a + 1, a * 2, tnp.matmul(a, w)     # a feeds two members and a matmul

    x = tnp.asarray(np.random.default_rng(0).standard_normal((4, 3)))
    w = tnp.ones((3, 2))
    cf = f.get_concrete_function(x, w)
    fused = _fused(cf)
    assert len(fused) == 1 and fused[0].prim.name.count("exp(") == 1
    assert len(fused[0].outputs) == 3          # a (for the matmul), a + 1, a * 2
    got = f(x, w)
    a = np.exp(x.numpy())
    for g, want in zip(got, (a + 1, a * 2, a @ np.ones((3, 2)))):
        np.testing.assert_array_equal(g.numpy(), want)


def test_no_fusion_across_shapes_or_effects(numpy_only):
    @nf.function
    def f(x, b):
        eb = tnp.exp(b)                          # [4]: its own size, not recomputed per row
        y = tnp.tanh(x + eb) * 2                 # [3, 4]
        n = tnp.random.normal(size=(3, 4))       # an effect: regions end here
        return y * 3 + n

    x, b = tnp.ones((3, 4)), tnp.zeros(4)
    cf = f.get_concrete_function(x, b)
    for n in _fused(cf):
        assert "exp(" not in n.prim.name or "tanh(" not in n.prim.name
    names = [n.prim.name for n in cf.graph.nodes]
    i_rand = next(i for i, s in enumerate(names) if s.startswith("random"))
    assert any("tanh(" in s for s in names[:i_rand])          # before the draw
    assert any(s.startswith("fused") and "tanh(" not in s and "add(" in s
               for s in names[i_rand + 1:])                    # y * 3 + n after it


def test_regions_stay_acyclic(numpy_only):
    @nf.function
    def f(x, w):
        a = tnp.exp(x)
        m = tnp.matmul(a, w)              # depends on a's region ...
        return tnp.sin(a) + m             # ... so this add must not join it

    x = tnp.asarray(np.random.default_rng(1).standard_normal((3, 3)))
    w = tnp.asarray(np.eye(3))
    cf = f.get_concrete_function(x, w)
    verify(cf.graph)
    a = np.exp(x.numpy())
    np.testing.assert_array_equal(f(x, w).numpy(), np.sin(a) + a @ np.eye(3))


def test_trailing_reduction_joins_the_region(numpy_only, large_path):
    f = nf.function(lambda x, y: tnp.sum((x - y) * (x - y), axis=0))
    x = tnp.asarray(np.arange(12.0).reshape(4, 3))
    y = tnp.ones((4, 3))
    cf = f.get_concrete_function(x, y)
    assert _names(cf) == ["fused"] and "reduce_sum(" in str(cf)
    d = x.numpy() - 1
    np.testing.assert_array_equal(f(x, y).numpy(), np.sum(d * d, axis=0))


def test_unknown_sizes_and_runtime_broadcasting(numpy_only, large_path):
    spec = nf.TensorSpec([None], np.float64)
    f = nf.function(lambda x, y: tnp.exp(x) * 2 + y, input_signature=[spec, spec])
    cf = f.get_concrete_function()
    assert _names(cf) == ["fused"]
    rng = np.random.default_rng(2)
    for nx, ny in ((5, 5), (5, 1), (1, 5), (4000, 4000), (1, 4000)):
        x, y = rng.standard_normal(nx), rng.standard_normal(ny)
        np.testing.assert_array_equal(f(tnp.asarray(x), tnp.asarray(y)).numpy(),
                                      np.exp(x) * 2 + y)


def test_dtypes_are_kept(numpy_only, large_path):
    @nf.function
    def f(i, x):
        j = i * i + i                              # int32 wraps as NumPy's does
        b = (x > 0) & (j > 0)
        return j, tnp.where(b, x.astype(np.float32), -x.astype(np.float32))

    i = tnp.asarray(np.array([2 ** 20, -3, 7, 46341], np.int32))
    x = tnp.asarray(np.array([1.5, -2.0, np.nan, 0.0]))
    j, w = f(i, x)
    iv, xv = i.numpy(), x.numpy()
    with np.errstate(all="ignore"):
        jj = iv * iv + iv
    assert j.dtype == np.int32 and w.dtype == np.float32
    np.testing.assert_array_equal(j.numpy(), jj)
    np.testing.assert_array_equal(
        w.numpy(), np.where((xv > 0) & (jj > 0), xv.astype(np.float32), -xv.astype(np.float32)))


def test_cannot_fuse_message_is_clear():
    f = nf.function(lambda x: tnp.matmul(x, x) + 1)
    cf = f.get_concrete_function(tnp.ones((3, 3)))
    sort = next(n for n in cf.traced_graph.nodes if n.prim.name == "matmul")
    why = fusion.why_not_fusible(sort)
    assert "cannot fuse 'matmul'" in why and "not elementwise" in why
    with pytest.raises(fusion.FusionError, match="cannot fuse 'matmul'") as e:
        fusion.program_from_nodes([sort], {sort.outputs[0].id})
    assert isinstance(e.value, ValueError)
    draw = nf.function(lambda: tnp.random.normal(size=3) * 2).get_concrete_function()
    rnd = next(n for n in draw.traced_graph.nodes if n.prim.effect)
    assert "effect" in fusion.why_not_fusible(rnd)
    assert "cannot fuse" in fusion.explain(cf.traced_graph)


def test_fusion_can_be_turned_off(monkeypatch, nf_settings):
    nf_settings(fusion=False)
    f = nf.function(lambda y: 1 / (1 + tnp.exp(-y)))
    assert "fused" not in str(f.get_concrete_function(tnp.ones(3)))


def test_fused_primitives_are_not_registered(numpy_only):
    from ndflow.core.primitive import REGISTRY
    nf.function(lambda y: tnp.exp(y) + 1).get_concrete_function(tnp.ones(2))
    assert not any(p.name.startswith("fused") for p in REGISTRY)


# ------------------------------------------------------------------ fused == unfused
_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e-310, 89.0, -104.0, 710.0,
            -746.0, 1e30, -1e30, 3.0e38, 1.0, -1.0, 0.5]

_UNARY = {
    "neg": lambda a: -a, "exp": tnp.exp, "log": tnp.log, "tanh": tnp.tanh, "sqrt": tnp.sqrt,
    "abs": tnp.abs, "expm1": tnp.expm1, "sin": tnp.sin, "recip": lambda a: 1 / a,
    "square": lambda a: a * a, "floor": tnp.floor, "sign": tnp.sign,
}
_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "max": tnp.maximum, "min": tnp.minimum,
    "where": lambda a, b: tnp.where(a > b, a, b * 2),
}
_NP = {"neg": np.negative, "exp": np.exp, "log": np.log, "tanh": np.tanh, "sqrt": np.sqrt,
       "abs": np.abs, "expm1": np.expm1, "sin": np.sin, "recip": lambda a: 1 / a,
       "square": lambda a: a * a, "floor": np.floor, "sign": np.sign,
       "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
       "max": np.maximum, "min": np.minimum, "where": lambda a, b: np.where(a > b, a, b * 2)}

chains = st.lists(st.one_of(
    st.tuples(st.sampled_from(sorted(_UNARY)), st.integers(0, 2)),
    st.tuples(st.sampled_from(sorted(_BINARY)), st.integers(0, 2), st.integers(0, 2))),
    min_size=2, max_size=7)


def _run_chain(ops, xs, table):
    vals = list(xs)
    for op in ops:
        f = table[op[0]]
        args = [vals[-1 - (k % len(vals))] for k in op[1:]]
        vals.append(f(*args))
    return vals[-1], vals[-2]


def _inputs(data, dtype, n):
    elems = st.one_of(st.sampled_from(_SPECIAL), st.floats(-50, 50, width=32))
    out = []
    for _ in range(3):
        v = np.array(data.draw(st.lists(elems, min_size=n, max_size=n)), np.float64)
        out.append(v.astype(dtype))
    return out


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)     # NaN == NaN here; bit-for-bit otherwise


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("path", ["plain", "out="])
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), ops=chains)
def test_random_chains_fused_equal_unfused(numpy_only, monkeypatch, dtype, path, data, ops, nf_settings):
    if path == "out=":
        nf_settings(large_min=1)
    xs = _inputs(data, dtype, 6)
    f = nf.function(lambda a, b, c: _run_chain(ops, [a, b, c], {**_UNARY, **_BINARY}))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = f(*[tnp.asarray(x) for x in xs])
        want = _run_chain(ops, xs, _NP)
    for g, w in zip(got, want):
        _same(g.numpy(), np.asarray(w))


def test_large_path_runs_in_the_result_buffer(numpy_only, large_path):
    f = nf.function(lambda y: 1 / (1 + tnp.exp(-y)))
    src = fusion.fused_kernels(f.get_concrete_function(tnp.ones(3)).graph)[0].source()
    large = src.split("S = plan.S")[1]
    assert "_tmp.take" not in large and "out=o0" in large      # no temporary at all


# ------------------------------------------------------------------ pooled results
def test_pooled_results_are_never_overwritten_while_visible(numpy_only, large_path):
    f = nf.function(lambda y: tnp.exp(y) * 2)
    a, b = np.arange(6.0), np.arange(6.0) + 100
    r1 = f(tnp.asarray(a))
    keep = r1.numpy()
    view = r1.numpy()[::2]
    r2 = f(tnp.asarray(b))                       # r1 still alive: a new buffer
    np.testing.assert_array_equal(r1.numpy(), np.exp(a) * 2)
    del r1, keep
    r3 = f(tnp.asarray(a))                       # r1's buffer is still seen through `view`
    np.testing.assert_array_equal(view, (np.exp(a) * 2)[::2])
    np.testing.assert_array_equal(r2.numpy(), np.exp(b) * 2)
    np.testing.assert_array_equal(r3.numpy(), np.exp(a) * 2)


def test_concurrent_calls_do_not_share_buffers(numpy_only, large_path):
    f = nf.function(lambda y: tnp.tanh(y) + y * 3)
    f(tnp.ones(500))
    errors = []

    def work(k):
        x = np.full(500, float(k))
        for _ in range(200):
            r = f(tnp.asarray(x)).numpy()
            if not np.array_equal(r, np.tanh(x) + x * 3):
                errors.append(k)
    run_threads(work, 4)
    assert not errors


# ------------------------------------------------------------------ buffer reuse
def test_results_go_into_dead_buffers_and_inputs_are_untouched(numpy_only):
    @nf.function
    def f(x, w):
        a = tnp.matmul(x, w)                   # dies at the fused node: its buffer is reused
        b = tnp.exp(a) * 0.5 + 1
        return tnp.sqrt(b) - 1 + tnp.sin(b)

    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((128, 128)), rng.standard_normal((128, 128)) * 0.1
    xc, wc = x.copy(), w.copy()
    cf = f.get_concrete_function(tnp.asarray(x), tnp.asarray(w))
    rep = cf.memory_report()
    assert rep.reused_bytes >= 128 * 128 * 8 and "into" in str(rep)
    plain = memory.memory_report(fusion.elementwise_fusion(cf.traced_graph))
    assert rep.peak_bytes < plain.peak_bytes
    for _ in range(3):
        got = f(tnp.asarray(x), tnp.asarray(w)).numpy()
        b = np.exp(x @ w) * 0.5 + 1
        np.testing.assert_allclose(got, np.sqrt(b) - 1 + np.sin(b), rtol=1e-12)
    np.testing.assert_array_equal(x, xc)
    np.testing.assert_array_equal(w, wc)


def test_memory_report_counts_bytes():
    f = nf.function(lambda x: tnp.sum(tnp.exp(x) * 2))
    rep = f.get_concrete_function(tnp.ones((100, 100))).memory_report()
    assert 100 * 100 * 8 <= rep.input_bytes <= 100 * 100 * 8 + 8     # x and the constant 2
    assert rep.as_dict()["peak_bytes"] == 8        # one float64 result: exp(x)*2 never exists
    assert "peak" in str(rep)


# ------------------------------------------------------------------ our own math functions
def _ulps(a, b):
    it = np.int32 if a.dtype == np.float32 else np.int64
    ai, bi = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    lo = np.iinfo(it).min
    ai = np.where(ai < 0, lo - ai, ai)
    bi = np.where(bi < 0, lo - bi, bi)
    d = np.abs(ai - bi)
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


def _bound(name, dtype):
    """The fast-math contract's bound of `name` on `dtype` (`contract.ULPS`, the one place)."""
    return contract.ulps(name, dtype)


def _sample(name, dtype, rng, n=20000):
    if name == "log":
        hi = 88 if dtype == np.float32 else 709
        lo = -103 if dtype == np.float32 else -744
        return np.exp(rng.uniform(lo, hi, n)).astype(dtype)
    if name in ("exp", "expm1"):
        r = (-105, 90) if dtype == np.float32 else (-750, 712)
        return np.concatenate([rng.uniform(*r, n // 2), rng.uniform(-1, 1, n // 2)]).astype(dtype)
    return np.concatenate([rng.uniform(-12, 12, n // 2), rng.uniform(-1, 1, n // 2),
                           rng.uniform(-1e-3, 1e-3, 100)]).astype(dtype)


def _specials(dtype):
    fi = np.finfo(dtype)
    v = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, fi.tiny, fi.tiny / 4, fi.smallest_subnormal,
         -fi.smallest_subnormal, fi.max, -fi.max, 88.72283, 88.72284, -87.33, -103.97, -104.0,
         709.78, 709.79, -745.13, -745.14, 20.0, -20.0, 9.0, 9.1, 1e-30, -1e-30,
         -0.0078084685927837, 0.7794]
    with np.errstate(over="ignore"):
        return np.array(v, np.float64).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", mathlib.FUNCTIONS)
def test_own_math_within_ulps_of_numpy(name, dtype):
    x = _sample(name, dtype, np.random.default_rng(4))
    got = mathlib.numpy_version(name, dtype)(x)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    err = _ulps(got, want)
    assert got.dtype == dtype
    assert err.max() <= _bound(name, dtype), (x[err.argmax()], got[err.argmax()], want[err.argmax()])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", mathlib.FUNCTIONS)
def test_own_math_special_values_as_numpy(name, dtype):
    x = _specials(dtype)
    got = mathlib.numpy_version(name, dtype)(x)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    exact = ~nan & (np.isinf(want) | (want == 0) | (np.abs(want) == 1) | (x == 0))
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    assert _ulps(got[~nan], want[~nan]).max() <= _bound(name, dtype)


# ------------------------------------------------------------------ numba stays optional
@pytest.mark.parametrize("setting,size", [("background", 3), ("background", 100000),
                                          ("off", 100000)])
def test_core_does_not_import_numba(setting, size):
    """Default settings: a region too small for a compiled loop never imports numba (nor
    does importing ndflow), nor does a large one run for less time than numba's start costs
    (`planner.compile_pays`); `settings.numba = "off"`: not even a large one run long."""
    code = ("import sys, numpy as np, ndflow as nf, ndflow.numpy as tnp\n"
            "assert 'numba' not in sys.modules, 'numba imported by import ndflow'\n"
            "nf.config.settings.numba = %r\n"
            "f = nf.function(lambda y: y * 2.0 + y * y - 1.0)\n"
            "x = tnp.ones(%d, dtype='float32')\n"
            "for _ in range(30): f(x)\n"
            "assert 'numba' not in sys.modules, 'numba imported'\n" % (setting, size))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


def test_numba_off_keeps_tier_0(numpy_only):
    f = nf.function(lambda y: tnp.exp(y) + 1)
    y = tnp.ones(10000)
    for _ in range(6):
        f(y)
    assert fusion.fused_kernels(f.get_concrete_function(y).graph)[0].tier() == 0


# ------------------------------------------------------------------ the numba tier
@pytest.fixture
def numba_sync(monkeypatch, nf_settings):
    """Tier 1 at once, with our own math (`settings.fast_math`: within a few ulps of NumPy)."""
    nf_settings(numba="sync")
    nf_settings(fast_math=True)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_tier_is_bit_exact_by_default(monkeypatch, dtype, nf_settings):
    """Without `settings.fast_math`, tier 1 runs only what it computes as NumPy does, bit for bit
    (no FMA contraction; maximum/minimum of -0.0 and +0.0 give the second, as NumPy); regions
    with transcendental math stay with NumPy's loops (tier 0), except float32 exp and log where
    tier 1 has NumPy's own algorithm (test_replica.py); sums, test_tier1_sum.py."""
    from ndflow.graph.kernels import replica
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    nf_settings(numba_min=1)
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.standard_normal(3000) * 7, _specials(dtype)]).astype(dtype)
    y = np.concatenate([_specials(dtype)[::-1], rng.standard_normal(3000)]).astype(dtype)
    exact = [lambda a, b: tnp.sqrt(tnp.abs(a)) + a * b,
             lambda a, b: tnp.maximum(a, -0.0) * 2 + tnp.minimum(b, 0.0) - a / (b + 3.0),
             lambda a, b: tnp.where(a > b, a * b - 1.0, tnp.minimum(a, b) * 0.5),
             lambda a, b: tnp.sign(a) * tnp.floor(b) + tnp.rint(a) - tnp.trunc(b) * tnp.ceil(a),
             lambda a, b: -tnp.abs(a) + (a <= b) * 1.0 - tnp.isnan(b) + tnp.isfinite(a)]
    others = [lambda a, b: tnp.tanh(a) - b]
    for name, fn in [("exp", lambda a, b: tnp.exp(a) * b + 1.0),
                     ("log", lambda a, b: tnp.log(tnp.abs(a)) * b + 1.0)]:
        (exact if replica.why_not(name, dtype) is None else others).append(fn)
    for fn in exact + others:
        f = nf.function(fn)
        fk, got = _tier1(f, tnp.asarray(x), tnp.asarray(y))
        with np.errstate(all="ignore"):
            want = fn(tnp.asarray(x), tnp.asarray(y)).numpy()
        got = got.numpy()
        assert fk.tier() == (1 if fn in exact else 0)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def _tier1(f, *args, n=4):
    with np.errstate(all="ignore"):         # tier 0 (the first calls) warns as NumPy does
        for _ in range(n):
            out = f(*args)
    fks = fusion.fused_kernels(f.get_concrete_function(*args).graph)
    return (fks[0] if fks else None), out


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_math_matches_numpy_version(dtype):
    from numba import njit
    x = np.concatenate([_specials(dtype), _sample("exp", dtype, np.random.default_rng(5), 2000),
                        _sample("log", dtype, np.random.default_rng(6), 2000)])
    for name in mathlib.FUNCTIONS:
        fn = mathlib.numba_functions()[(name, np.dtype(dtype))]

        @njit(fastmath=set(), error_model="numpy")     # as the kernels are compiled
        def run(a, out):
            for i in range(a.shape[0]):
                out[i] = fn(a[i])
        got = np.empty_like(x)
        run(x, got)
        want = mathlib.numpy_version(name, dtype)(x)
        assert _ulps(got, want).max() <= 2, name
        with np.errstate(all="ignore"):
            assert _ulps(got, getattr(np, name)(x)).max() <= _bound(name, dtype) + 1, name
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


def _float32_patterns(step):
    """Every `step`-th float32 bit pattern (both signs, subnormals, inf, NaNs with payloads),
    and the 1025 patterns around each of exp's limits."""
    from ndflow.graph.kernels import replica
    dense = np.arange(7, 2 ** 32, step, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([dense, replica.probe(np.float32)])


# ulps from the correctly rounded value on `_float32_patterns`, measured on every 256th pattern
_EXACT_ULPS = {"exp": 1, "expm1": 2, "tanh": 3}


def _clamp_by_selects(monkeypatch):
    """mathlib's numba functions as LLVM before 20 gets them: NaN-keeping max/min as selects
    (llvm.maximum/minimum would abort the process there)."""
    import llvmlite.binding
    from numba import njit
    monkeypatch.setattr(llvmlite.binding, "llvm_version_info", (14, 0, 6))
    return mathlib._build(mathlib._numba_ops(), njit(inline="always", error_model="numpy"))


@needs_numba
@pytest.mark.parametrize("clamp", ["intrinsic", "select"])
@pytest.mark.parametrize("name", sorted(_EXACT_ULPS))
def test_fast_math_float32_on_a_dense_sample(name, clamp, monkeypatch):
    """Fast-math float32 exp/expm1/tanh (what the kernels inline, compiled as they are) against
    the correctly rounded value on every 1024th bit pattern: within `_EXACT_ULPS`, also where
    the result is subnormal (rounded once) or overflows; NaN (any payload or sign) stays NaN,
    +-inf give NumPy's limits; within NumPy's own error bound of NumPy's function; the same
    with either spelling of the clamp."""
    from numba import njit
    funcs = mathlib.numba_functions() if clamp == "intrinsic" else _clamp_by_selects(monkeypatch)
    fn = funcs[(name, np.dtype(np.float32))]

    @njit(fastmath=set(), error_model="numpy")
    def run(a, out):
        for i in range(a.shape[0]):
            out[i] = fn(a[i])
    x = _float32_patterns(1024)
    got = np.empty_like(x)
    run(x, got)
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        exact = f(x.astype(np.float64)).astype(np.float32)
        want = f(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
    err = _ulps(got, exact)
    assert err.max() <= _EXACT_ULPS[name], (x[err.argmax()], got[err.argmax()], exact[err.argmax()])
    assert _ulps(got, want).max() <= _bound(name, np.float32)
    inf = np.isinf(x)
    np.testing.assert_array_equal(got[inf], want[inf])
    zero = x == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(x[zero]) & (name != "exp"))
    tiny = (np.abs(exact) > 0) & (np.abs(exact) < np.finfo(np.float32).tiny)
    assert tiny.sum() > 1000 and np.all(got[tiny] != 0)     # subnormal results, not flushed
    # the NumPy-array version computes the same algorithm (without FMAs) as closely
    nv = mathlib.numpy_version(name, np.float32)(x)
    assert _ulps(nv, exact).max() <= _EXACT_ULPS[name] + 1


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_tier_sigmoid_and_specials(numba_sync, dtype):
    f = nf.function(lambda y: (1 / (1 + tnp.exp(-y)), tnp.tanh(y) * 2 - tnp.log(tnp.abs(y))))
    rng = np.random.default_rng(7)
    y = np.concatenate([rng.standard_normal(5000) * 30, _specials(dtype)]).astype(dtype)
    fk, out = _tier1(f, tnp.asarray(y))
    assert fk.tier() == 1
    with np.errstate(all="ignore"):
        want = (1 / (1 + np.exp(-y)), np.tanh(y) * 2 - np.log(np.abs(y)))
    for g, w in zip(out, want):
        g = g.numpy()
        assert g.dtype == dtype
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        ok = np.isfinite(w)
        np.testing.assert_allclose(g[ok], w[ok], rtol=8 * np.finfo(dtype).eps,
                                   atol=4 * np.finfo(dtype).eps)


@needs_numba
@pytest.mark.slow       # each new chain is a numba compile (~0.3-1 s)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), ops=chains, dtype=st.sampled_from([np.float32, np.float64]))
def test_numba_tier_random_chains(numba_sync, monkeypatch, data, ops, dtype, nf_settings):
    nf_settings(numba_min=1)
    xs = _inputs(data, dtype, 6)
    f = nf.function(lambda a, b, c: _run_chain(ops, [a, b, c], {**_UNARY, **_BINARY}))
    args = [tnp.asarray(x) for x in xs]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        _, got = _tier1(f, *args)
        want = _run_chain(ops, xs, _NP)
    for g, w in zip(got, want):
        g, w = g.numpy(), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        fin = np.isfinite(w) & np.isfinite(g)
        np.testing.assert_array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)])
        # a few ulps per op; values near cancellation compare in absolute terms
        np.testing.assert_allclose(g[fin], w[fin], rtol=64 * np.finfo(dtype).eps,
                                   atol=np.finfo(dtype).eps * 64 * (1 + np.abs(w[fin]).max(initial=0)))


@needs_numba
def test_numba_tier_reductions_and_broadcasting(numba_sync, monkeypatch, nf_settings):
    nf_settings(numba_min=1)
    f = nf.function(lambda x, b: (tnp.sum(tnp.exp(x + b) * 2), tnp.sum(tnp.tanh(x * b), axis=0),
                                  tnp.sum(x * b, axis=1)))
    rng = np.random.default_rng(8)
    x, b = rng.standard_normal((300, 40)), rng.standard_normal(40)
    for fn in (f,):
        outs = _tier1(fn, tnp.asarray(x), tnp.asarray(b))[1]
    tiers = [k.tier() for k in fusion.fused_kernels(f.get_concrete_function(
        tnp.asarray(x), tnp.asarray(b)).graph)]
    assert 1 in tiers
    want = (np.sum(np.exp(x + b) * 2), np.sum(np.tanh(x * b), axis=0), np.sum(x * b, axis=1))
    for g, w in zip(outs, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12)


def _mlp_grad_fn():
    def grads(x, labels, w1, b, w2):
        ws = [w1, b, w2]
        with nf.GradientTape() as tape:
            tape.watch(ws)
            h = tnp.maximum(tnp.matmul(x, ws[0]) + ws[1], 0)
            loss = tnp.sum(tnp.square(tnp.matmul(h, ws[2]) - labels))
        return tape.gradient(loss, ws)
    return nf.function(grads)


@needs_numba
def test_numba_tier_runs_regions_with_reused_buffers_and_broadcast_constants(monkeypatch, nf_settings):
    """The MLP gradient's relu-gradient region writes into a reused buffer and reads a folded
    zeros constant (a broadcast, non-contiguous array): it still gets its numba kernel, and
    every result equals the NumPy tier's bit for bit."""
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32) for s in
            ((512, 32), (512, 2), (32, 64), (64,), (64, 2))]
    args[0][:5] = 0.0                     # relu inputs at exactly 0 (the select's tie)
    nf_settings(numba="off")
    want = [g.numpy() for g in _mlp_grad_fn()(*args)]
    nf_settings(numba="sync")
    f = _mlp_grad_fn()
    calls = {"tier1": 0, "declined": 0}
    run = numba_runner.Runner.__call__
    # every call through the runner, where `counting` sees it (`planner.direct`)
    real_direct = planner.direct
    monkeypatch.setattr(planner, "direct", lambda fk, fn, **attrs: None if attrs.get(
        "quick_call") else real_direct(fk, fn, **attrs))

    def counting(self, xs, donors=None):
        r = run(self, xs, donors)
        calls["declined" if r is NotImplemented else "tier1"] += 1
        return r
    for _ in range(5):
        f(*args)
    monkeypatch.setattr(numba_runner.Runner, "__call__", counting)
    got = [g.numpy() for g in f(*args)]
    ks = fusion.fused_kernels(f.get_concrete_function(*args).graph)
    big = [k for k in ks if getattr(k, "tier1_unavailable", None) is None]
    assert big and all(k.tier() == 1 for k in big)
    assert calls == {"tier1": len(big), "declined": 0}
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@needs_numba
@pytest.mark.parametrize("shape_b", [(1, 300), (40, 1), (), (40, 300)])
def test_numba_tier_broadcast_view_operands(numba_sync, monkeypatch, shape_b, nf_settings):
    """Zero-stride operands (np.broadcast_to views) run as the array they repeat; a region
    whose every operand is such a view keeps its full result shape."""
    nf_settings(numba_min=1)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((40, 300))
    b = np.broadcast_to(rng.standard_normal(shape_b), (40, 300))
    f = nf.function(lambda x, b: tnp.where(x > 0, x * b, b - 1.5))
    g = nf.function(lambda b: tnp.exp(b) * 2.0 + b)        # every operand broadcast
    fk, out = _tier1(f, x, b, n=5)
    assert fk.tier() == 1
    np.testing.assert_array_equal(out.numpy(), np.where(x > 0, x * b, b - 1.5))
    out2 = _tier1(g, b, n=5)[1]
    assert out2.shape == (40, 300)
    # exp is ours (a few ulps from NumPy's), the rest exact
    np.testing.assert_allclose(out2.numpy(), np.exp(b) * 2.0 + b, rtol=1e-14, atol=1e-15)


def _outer_cases():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((16, 64)).astype(np.float32)
    a[0, :4] = [0.0, -0.0, np.inf, np.nan]
    b[0, :4] = [-0.0, np.inf, 0.0, 1e-45]
    return a, b


@pytest.mark.parametrize("mode", ["0", "sync"])
def test_outer_product_broadcast_is_one_kernel(monkeypatch, mode, nf_settings):
    """(b,m,1) * (b,1,n): one node becomes a kernel of its own (NumPy's broadcast loop is ~4x
    a loop writing the result once); values equal NumPy's bit for bit on both tiers."""
    if mode == "sync" and not HAVE_NUMBA:
        pytest.skip("numba not installed")
    nf_settings(numba=mode)
    a, b = _outer_cases()
    f = nf.function(lambda a, b: a[:, :, None] * b[:, None, :])
    with np.errstate(all="ignore"):
        want = a[:, :, None] * b[:, None, :]
        cf = f.get_concrete_function(a, b)
        assert len(_fused(cf)) == 1 and _fused(cf)[0].prim.name == "fused{t0=multiply(x0, x1)}"
        for _ in range(5):
            got = f(a, b).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    if mode == "sync":
        assert fusion.fused_kernels(cf.graph)[0].tier() == 1


def test_plain_broadcasts_stay_unfused(numpy_only):
    """A bias add (the result has the shape of one operand) and small outer products are
    NumPy's fast paths already: no kernel of their own."""
    x = np.ones((128, 64))
    cf = nf.function(lambda x, b: x + b).get_concrete_function(x, np.ones(64))
    assert _names(cf) == ["add"]
    cf = nf.function(lambda a, b: a[:, None] * b[None, :]).get_concrete_function(
        np.ones(8), np.ones(9))
    assert "fused" not in _names(cf)


@needs_numba
def test_numba_tier_cost_model_small_regions_of_many_ops(numba_sync):
    """A kernel call costs about 5 small NumPy calls: regions that cost tier 0 more compile
    from fewer elements (a select chain); cheap ones (a 3-op `1 / (1 + exp(y))`) stay on
    tier 0 below `settings.numba_min` (a static one: below `settings.numba_quick_units` ops,
    4; under fast math, also below `policy.FAST_STATIC_WORK` elements x units: 512 x 3
    here)."""
    from ndflow.graph.kernels import policy
    assert policy.pays(1024, 9.5) and not policy.pays(1024, 4)
    assert not policy.pays(64, 20) and policy.pays(nf.config.settings.numba_min, 1)
    assert 512 * 3 < policy.FAST_STATIC_WORK and 3 < nf.config.settings.numba_quick_units
    s = nf.function(lambda y: 1 / (1 + tnp.exp(y)))
    sk = _tier1(s, np.linspace(-3, 3, 512), n=5)[0]
    assert sk.tier() == 0 and "too small" in sk.tier1_unavailable
    rng = np.random.default_rng(6)
    x = rng.standard_normal(1024)
    x[:4] = [0.0, -0.0, np.nan, -np.inf]
    y = x[::-1].copy()
    f = nf.function(lambda x, y: tnp.where(x > 0, x * y, tnp.where(x < -1, y, x)) * y)
    fk, out = _tier1(f, x, y, n=5)
    assert fk.tier() == 1
    with np.errstate(all="ignore"):
        want = np.where(x > 0, x * y, np.where(x < -1, y, x)) * y
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(np.signbit(out.numpy()), np.signbit(want))
    g = nf.function(lambda x, y: x * y)           # one op: not fused, nothing to compile
    assert "fused" not in _names(g.get_concrete_function(x, y))
