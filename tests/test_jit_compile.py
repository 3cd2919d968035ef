"""`nf.function(jit_compile=True)`: a per-function fast-math contract, and its accuracy bounds
(ndflow/graph/kernels/contract.py, the performance guide's table).

The op table's elementwise records run through `jit_compile=True` on tier 1 (numba 'sync',
sizes above `settings.numba_min`) against NumPy within the bound of the functions their
region computes, NaN/inf/signed-zero positions and integer/boolean results exactly. That the
default mode stays NumPy's bits on tier 1 for the same functions is
test_optable_routes.py's `test_tier1_compiles_every_scalar_function`.
"""
import importlib.util
import os
import pickle
import re
import threading

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st
from hypothesis.extra import numpy as hnp

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree
from ndflow.graph import fusion
from ndflow.graph.kernels import contract, mathlib
from ndflow.graph.kernels.planner import Route

import test_optable as T
from helpers import assert_bits_equal, routes_reached, single_kernel, to_nf
from test_optable_routes import _ELEMENTWISE, _program, _with_specials

pytestmark = T.pytestmark + [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                                reason="numba is not installed")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIG = 12288            # elements: above settings.numba_min (8192)
OWN = tuple(contract.ULPS)


# ------------------------------------------------------------------ the table
def test_the_guides_table_is_the_contract():
    text = open(os.path.join(ROOT, "docs", "guides", "performance.md")).read()
    sec = text.split("## `jit_compile=True`: the accuracy contract", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| (\d+) \|$", sec, re.M)
    assert {f: {"float32": int(a), "float64": int(b)} for f, a, b in rows} == contract.ULPS
    # every function with a bound of its own is one tier 1 computes with ndflow's own math
    assert set(contract.ULPS) == set(mathlib.FUNCTIONS)
    # and the rewrite of integer powers, stated in the text
    power = re.search(r"\*\*`x \*\* k`\*\*, `k` a constant of integer values: "
                      r"within (\d+) ulp", sec)
    assert power and set(contract.POWER_ULPS.values()) == {int(power.group(1))}


def test_jit_compile_is_checked():
    with pytest.raises(TypeError, match="jit_compile must be True, False or None"):
        nf.function(lambda x: x, jit_compile="yes")


# ------------------------------------------------------------------ checking a result
def assert_within(got, want, bound_ulps, ctx=""):
    """`got` within `bound_ulps` ulps of NumPy's `want` (floats), NaN, infinities and zeros
    (with their signs) where NumPy's are, every other dtype bit for bit."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (ctx, got.dtype, want.dtype)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=ctx)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=ctx + ": NaN")
    inf = np.isinf(want)
    np.testing.assert_array_equal(np.isinf(got), inf, err_msg=ctx + ": inf")
    np.testing.assert_array_equal(got[inf], want[inf], err_msg=ctx + ": inf")
    zero = want == 0
    np.testing.assert_array_equal(got == 0, zero, err_msg=ctx + ": zeros")
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]),
                                  err_msg=ctx + ": signed zeros")
    fin = np.isfinite(want)
    err = np.abs(got[fin].astype(np.float64) - want[fin]) / contract.ulp(want[fin])
    assert err.size == 0 or err.max() <= bound_ulps, \
        "%s: %g ulps (bound %g) at %r" % (ctx, err.max(), bound_ulps,
                                          want[fin][np.argmax(err)])


def _bound(prog, dtype):
    """The bound of a region in ulps of its result: its functions' largest (its other ops are
    exact; the records' regions end in an exact multiply by 2 or a logical not)."""
    fns = {f for o in prog.ops if o.prim.scalar is not None for f in o.prim.scalar.functions()}
    return max([contract.ulps(f, dtype) for f in fns] + [0])


# ------------------------------------------------------------------ the op table
def _tiled(sample):
    """`sample` with its array operands broadcast together and repeated to >= BIG elements
    (one region of one loop: tier 1 takes it)."""
    arrs = [a for a in sample.args if isinstance(a, np.ndarray)]
    shape = np.broadcast_shapes(*[a.shape for a in arrs])
    reps = -(-BIG // max(1, int(np.prod(shape))))
    return [np.ascontiguousarray(np.tile(np.broadcast_to(a, shape)[None],
                                         (reps,) + (1,) * len(shape)))
            if isinstance(a, np.ndarray) else a for a in sample.args]


@pytest.mark.parametrize("rec", _ELEMENTWISE, ids=lambda r: r.name)
def test_records_within_the_contract(nf_settings, rec):
    nf_settings(numba="sync", hot_calls=1)
    for dt in map(np.dtype, rec.dtypes):
        own = [s for s in rec.samples(T._seeded(rec, dt, 7), dt)
               if any(isinstance(a, np.ndarray) and a.size for a in s.args)]
        if not own:
            continue
        s = _with_specials(max(own, key=lambda s: max(np.size(a) for a in s.args)))
        args = [to_nf(a) for a in _tiled(s)]
        f = _program(rec, s.kwargs)
        g = nf.function(f, jit_compile=True)
        with np.errstate(all="ignore"):
            reached, got = routes_reached(lambda: [g(*args) for _ in range(2)][-1])
            want = f(*args)           # eagerly: NumPy's kernels
        ks = fusion.fused_kernels(g.get_concrete_function(*args).graph)
        assert all(k.fast_math for k in ks), rec.name
        for o, w in zip(tree.flatten(got), tree.flatten(want)):
            b = max([_bound(k.prog, w.dtype) for k in ks] + [0])
            if b:
                # (a function with a bound of its own: it ran on tier 1, with ndflow's math)
                assert Route.T1_LOOP in reached, (rec.name, dt, nf.config.explain(g))
            assert_within(o.numpy(), w.numpy(), b, "%s on %s" % (rec.name, dt))


_SUMS = [r for r in T.optable.RECORDS if r.name in ("sum", "mean")]


def _rows_tiled(a, reps):
    return np.concatenate([a] * reps, axis=0) if isinstance(a, np.ndarray) else a


@pytest.mark.parametrize("rec", _SUMS, ids=lambda r: r.name)
def test_sum_records_within_the_contract(nf_settings, rec):
    """The op table's sum and mean records (axes, keepdims, where=, initial=, dtype=), their
    operands repeated along axis 0 past settings.numba_min and scaled in the region: within
    n * eps * sum|terms| of NumPy's (a mean: the same over n; complex: the modulus), integer
    and boolean ones bit for bit."""
    nf_settings(numba="sync", hot_calls=1)
    on_tier1 = set()
    for dt in map(np.dtype, rec.dtypes):
        for s in rec.samples(T._seeded(rec, dt, 9), dt):
            x = s.args[0]
            if np.ndim(x) == 0 or x.size == 0:
                continue
            reps = -(-BIG // x.size)
            kw = {k: _rows_tiled(v, reps) for k, v in s.kwargs.items()}
            x = _rows_tiled(x, reps)

            def f(x):
                return rec.call(tnp, x * 3, **kw)
            g = nf.function(f, jit_compile=True)
            with np.errstate(all="ignore"):
                reached, got = routes_reached(lambda: [g(to_nf(x)) for _ in range(2)][-1])
                want = f(to_nf(x)).numpy()
            got = got.numpy()
            ctx = "%s%r on %s" % (rec.name, s, dt)
            assert got.dtype == want.dtype and got.shape == want.shape, ctx
            if want.dtype.kind not in "fc" or x.dtype.kind not in "fc":
                np.testing.assert_array_equal(got, want, err_msg=ctx)
                continue
            if reached & {Route.T1_LOOP, Route.T1_DIRECT, Route.T1_DIRECT_BAKED}:
                on_tier1.add(dt)
            terms = np.abs(x.astype(np.float64) * 3)
            akw = {k: abs(v) if k == "initial" else v for k, v in kw.items() if k != "dtype"}
            n = terms.size // max(1, np.size(want))
            bound = np.broadcast_to(contract.sum_bound(
                n, getattr(np, rec.name)(terms, **akw), want.dtype), want.shape)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=ctx)
            wide = np.complex128 if want.dtype.kind == "c" else np.float64
            fin = np.isfinite(want)
            assert np.all(np.abs(got.astype(wide) - want)[fin] <= bound[fin]), ctx
    # (a sum of float32 or float64 terms in a region ran on tier 1: in its own order)
    assert on_tier1 & {np.dtype(np.float32), np.dtype(np.float64)}, rec.name


# ------------------------------------------------------------------ special values
def _every_float32(lo, hi):
    a, b = np.array([lo, hi], np.float32).view(np.int32)
    return np.arange(min(a, b), max(a, b) + 1, dtype=np.int32).view(np.float32)


def _specials(dt):
    fi = np.finfo(dt)
    base = [0.0, -0.0, np.inf, -np.inf, np.nan, fi.tiny, -fi.tiny, fi.smallest_subnormal,
            -fi.smallest_subnormal, fi.tiny / 3, fi.max, -fi.max, 1.0, -1.0, fi.eps,
            -0.0078084685927837, 0.7794]   # (where float64 tanh, float32 log err most)
    if dt == np.float32:
        edges = [_every_float32(88.5, 89.0), _every_float32(-104.0, -103.0),
                 _every_float32(-88.0, -86.5), _every_float32(-18.5, -17.5),
                 _every_float32(9.0, 9.5), _every_float32(2.40e-4, 2.48e-4)]
    else:
        edges = [np.linspace(c - w, c + w, 20001) for c, w in
                 ((709.78, 0.01), (-745.13, 0.01), (-708.4, 0.01), (-37.5, 0.5), (19.0, 0.6))]
    # and 2**20 random bit patterns: every exponent, NaN payloads, subnormals
    it = np.uint32 if dt == np.float32 else np.uint64
    bits = np.random.default_rng(12).integers(0, np.iinfo(it).max, 1 << 20, it, endpoint=True)
    return np.concatenate([np.array(base, dt)] + [e.astype(dt) for e in edges] +
                          [bits.view(dt)])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", OWN)
def test_special_values_are_numpys(nf_settings, name, dt):
    """±0, ±inf, NaN, subnormals, overflow and underflow edges (every float32 value there),
    random bit patterns: NaN, infinities and zeros (signed) exactly where NumPy's are, the
    rest within the bound."""
    nf_settings(numba="sync", hot_calls=1)
    x = _specials(np.dtype(dt))
    if name == "log":
        x = np.abs(x)
    fn = getattr(tnp, name)
    g = nf.function(lambda x: -(-fn(x)), jit_compile=True)
    with np.errstate(all="ignore"):
        reached, got = routes_reached(lambda: [g(x) for _ in range(2)][-1])
        want = getattr(np, name)(x)
    assert reached & {Route.T1_LOOP, Route.T1_THREADS, Route.T1_DIRECT}, nf.config.explain(g)
    assert_within(got.numpy(), want, contract.ulps(name, dt), "%s on %s" % (name, dt))


# ------------------------------------------------------------------ the flag is the route
def _affine_exp(x):
    return tnp.exp(x) * 2.0 + 1.0


def _x64(n=100_000, seed=0):
    return np.random.default_rng(seed).uniform(-20, 20, n)


def test_the_flag_changes_the_route(nf_settings):
    """float64 exp: by default tier 1 refuses it (no replica of NumPy's loop: NumPy's bits on
    tier 0); with jit_compile=True the same region runs on tier 1 with ndflow's own exp, and
    its bits differ from NumPy's somewhere, within the bound. (One thread: on more, from
    `settings.numba_parallel_heavy_min` elements, the route is tier 1's timed T1_THREADS.)"""
    nf_settings(numba="sync", hot_calls=1, threads=1)
    x = _x64()
    want = np.exp(x) * 2.0 + 1.0
    fast, exact = nf.function(_affine_exp, jit_compile=True), nf.function(_affine_exp)
    r_fast, got_fast = routes_reached(lambda: [fast(x) for _ in range(2)][-1])
    r_exact, got_exact = routes_reached(lambda: [exact(x) for _ in range(2)][-1])
    assert Route.T1_LOOP in r_fast and Route.T1_LOOP not in r_exact, (r_fast, r_exact)
    assert "contract: fast math (jit_compile=True)" in nf.config.explain(fast)
    assert "contract: NumPy's bits" in nf.config.explain(exact)
    assert str(fast.get_concrete_function(x)).startswith("# fast math (jit_compile=True)")
    assert not str(exact.get_concrete_function(x)).startswith("#")
    assert np.array_equal(got_exact.numpy(), want)
    assert not np.array_equal(got_fast.numpy(), want)
    # (exp's 1 ulp, then an exact doubling and one more rounding in the add)
    assert_within(got_fast.numpy(), want, contract.ulps("exp", np.float64) + 1)


def test_sums_in_their_own_order_within_the_bound(nf_settings):
    """A float32 region ending in a sum: by default it is cut off the region or added in
    NumPy's order (NumPy's bits); under jit_compile=True tier 1 adds it in loop order, within
    n * eps * sum|x| of NumPy's."""
    nf_settings(numba="sync", hot_calls=1)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 4096)).astype(np.float32)
    y = rng.standard_normal((64, 4096)).astype(np.float32)

    def f(x, y):
        return tnp.sum(x * y), tnp.mean(x * y, axis=0), tnp.sum(x * y, axis=1)
    fast, exact = nf.function(f, jit_compile=True), nf.function(f)
    got = [fast(x, y) for _ in range(2)][-1]
    for o, w in zip([exact(x, y) for _ in range(2)][-1], f(x, y)):
        assert np.array_equal(o.numpy(), w.numpy())
    p = x * y
    for o, w, n, ab in zip(got, f(x, y), (p.size, 64, 4096),
                           (np.abs(p).sum(dtype=np.float64), np.abs(p).sum(0) / 64,
                            np.abs(p).sum(1))):
        assert o.dtype == w.dtype and o.shape == w.shape
        err = np.abs(o.numpy().astype(np.float64) - w.numpy())
        assert np.all(err <= contract.sum_bound(n, ab, np.float32)), err.max()
    assert "tier 1" in nf.config.explain(fast)


def test_a_merged_stack_of_products_within_blas_bound(nf_settings):
    """(..., m, k) @ (k, n): one BLAS call under jit_compile=True (a stack by default), each
    element within k * eps * sum|a_i * b_i|."""
    nf_settings(numba="sync", hot_calls=1)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 32, 48)).astype(np.float32)
    b = rng.standard_normal((48, 16)).astype(np.float32)
    fast, exact = (nf.function(lambda a, b: tnp.matmul(a, b), jit_compile=jc)
                   for jc in (True, None))
    graph_text = str(fast.get_concrete_function(a, b))
    assert "reshape" in graph_text and "reshape" not in str(exact.get_concrete_function(a, b))
    want = np.matmul(a, b)
    assert np.array_equal(exact(a, b).numpy(), want)
    got = fast(a, b).numpy()
    ab = np.abs(a).astype(np.float64) @ np.abs(b)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.all(np.abs(got.astype(np.float64) - want) <= contract.sum_bound(48, ab,
                                                                              np.float32))


# ------------------------------------------------------------------ integer powers
# constant exponents of integer values: scalars odd and even, a Vandermonde matrix's column,
# mixed signs and a large one (2 alone is NumPy's own x*x in both modes)
_POWERS = {"3": np.array(3.0), "-3": np.array(-3.0), "4": np.array(4.0), "17": np.array(17.0),
           "vander": np.arange(5.0)[:, None],
           "mixed": np.array([-3.0, -2, -1, 0, 1, 2, 3, 64])[:, None]}


def _power_bases(dt, ks):
    """±0, ±inf, NaN, subnormals, 2**16 random bit patterns, and the bases whose power of
    each k lies near the overflow, underflow and subnormal edges (every float32 there), with
    both signs."""
    fi = np.finfo(dt)
    parts = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, fi.max, -fi.max,
                       fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal])]
    for k in {float(k) for k in np.ravel(ks) if k not in (0, 1)}:
        for edge in (float(fi.max), float(fi.smallest_subnormal), float(fi.tiny)):
            with np.errstate(over="ignore"):
                r = np.exp(np.log(edge) / k)
            if not 0 < r < float(fi.max):
                continue
            if dt == np.float32:
                parts.append(_every_float32(r * (1 - 1e-4), min(r * (1 + 1e-4), fi.max)))
            else:
                parts.append(np.linspace(r * (1 - 1e-12), r * (1 + 1e-12), 4001))
    it = np.uint32 if dt == np.float32 else np.uint64
    parts.append(np.random.default_rng(5).integers(0, np.iinfo(it).max, 1 << 16, it,
                                                    endpoint=True).view(dt))
    x = np.concatenate([p.astype(dt) for p in parts])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kname", sorted(_POWERS))
def test_integer_powers_within_the_contract(nf_settings, kname, dt):
    """x ** k for a constant k of integer values: |x| ** k with x's sign under jit_compile=True,
    within contract.POWER_ULPS of NumPy's pow, its NaN, infinities and signed zeros exactly
    (also where a power overflows or underflows); NumPy's bits by default."""
    nf_settings(hot_calls=1)
    dt = np.dtype(dt)
    k = _POWERS[kname].astype(dt)
    x = _power_bases(dt, k)

    def f(x):
        return x ** k
    fast, exact = nf.function(f, jit_compile=True), nf.function(f)
    with np.errstate(all="ignore"):
        want = np.power(x, k)
        got = [fast(x) for _ in range(2)][-1].numpy()
        got_exact = [exact(x) for _ in range(2)][-1].numpy()
    assert "absolute" in str(fast.get_concrete_function(x))
    assert "absolute" not in str(exact.get_concrete_function(x))
    assert_bits_equal(got_exact, want)
    assert_within(got, want, contract.POWER_ULPS[dt.name], "x ** %s on %s" % (kname, dt))


@hsettings(max_examples=40, deadline=None)
@given(k=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=4),
                    elements=st.integers(-6, 6).map(float)),
       x=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=5),
                    elements=st.floats(allow_nan=True, allow_infinity=True, width=64)),
       f32=st.booleans())
def test_integer_powers_broadcast_as_numpy(k, x, f32):
    """Shapes broadcast, dtypes and warnings as NumPy's pow, values within the bound."""
    dt = np.dtype(np.float32 if f32 else np.float64)
    with np.errstate(all="ignore"):
        k, x = k.astype(dt), x.astype(dt)
    try:
        np.broadcast_shapes(k.shape, x.shape)
    except ValueError:
        return
    fast = nf.function(lambda x: x ** k, jit_compile=True)
    with np.errstate(all="ignore"):
        want = np.power(x, k)
        got = fast(x).numpy()
    assert_within(got, want, contract.POWER_ULPS[dt.name])
    with np.errstate(divide="raise", over="ignore", under="ignore", invalid="ignore"):
        try:
            np.power(x, k)
        except FloatingPointError:
            with pytest.raises(FloatingPointError):
                fast(x)
        else:
            fast(x)


def test_non_integer_or_traced_exponents_stay_numpys(nf_settings):
    """An exponent that is not all integers, or is an argument, is NumPy's pow bit for bit
    under jit_compile=True too."""
    nf_settings(hot_calls=1)
    x = np.random.default_rng(6).uniform(-3, 3, 4096)
    half = np.array([2.5, 3.0])[:, None]
    g = nf.function(lambda x: x ** half, jit_compile=True)
    with np.errstate(all="ignore"):
        assert_bits_equal([g(x) for _ in range(2)][-1].numpy(), np.power(x, half))
        h = nf.function(lambda x, k: x ** k, jit_compile=True)
        k = np.array([3.0])
        assert_bits_equal([h(x, k) for _ in range(2)][-1].numpy(), np.power(x, k))
    assert "absolute" not in str(g.get_concrete_function(x))


# ------------------------------------------------------------------ one contract per function
def _check_pair(fast, exact, x, want):
    np.testing.assert_array_equal(exact(x).numpy(), want)
    assert_within(fast(x).numpy(), want, contract.ulps("exp", np.float64) + 1)


def test_two_functions_interleaved_keep_their_contracts(nf_settings):
    nf_settings(numba="sync", hot_calls=1)
    x = _x64(seed=5)
    want = np.exp(x) * 2.0 + 1.0
    fast, exact = nf.function(_affine_exp, jit_compile=True), nf.function(_affine_exp)
    for _ in range(3):
        _check_pair(fast, exact, x, want)
    # a global change after tracing changes neither (each region keeps its contract)
    with nf.config.settings.override(fast_math=True):
        _check_pair(fast, exact, x, want)
    with nf.config.settings.override(fast_math=False):
        _check_pair(fast, exact, x, want)
    assert "NumPy's bits" in nf.config.explain(exact)
    assert "fast math" in nf.config.explain(fast)


def test_two_threads_with_other_settings_keep_each_functions_contract():
    """Traced in this thread, first called (planned, compiled) in a thread overriding
    fast_math the other way, then called from two threads at once: the contracts are the
    functions'."""
    x = _x64(seed=6)
    want = np.exp(x) * 2.0 + 1.0
    fast, exact = nf.function(_affine_exp, jit_compile=True), nf.function(_affine_exp)
    fast.get_concrete_function(x)
    exact.get_concrete_function(x)
    errors = []

    def run(fm, fns):
        try:
            with nf.config.settings.override(numba="sync", hot_calls=1, fast_math=fm):
                # (traced with the default hot_calls, 3: the third call plans tier 1)
                for k in range(4):
                    if fast in fns:
                        got = fast(x).numpy()
                        assert_within(got, want, contract.ulps("exp", np.float64) + 1)
                        assert k < 3 or not np.array_equal(got, want)  # (ndflow's exp ran)
                    if exact in fns:
                        np.testing.assert_array_equal(exact(x).numpy(), want)
        except Exception as e:          # (reported in the main thread)
            errors.append(e)

    def threads(*work):
        ts = [threading.Thread(target=run, args=w) for w in work]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
    threads((False, (fast,)))
    threads((True, (exact,)))
    threads((True, (fast, exact)), (False, (fast, exact)))
    assert single_kernel(fast, x).tier() == 1 and single_kernel(exact, x).tier() == 0
    assert "NumPy's bits" in nf.config.explain(exact)


def test_bodies_compiled_later_keep_the_functions_contract(nf_settings):
    """A branch of `nf.cond` is compiled on its first run, in the calling thread: under the
    contract of the function it was traced in."""
    nf_settings(numba="sync", hot_calls=1)

    def f(x):
        return nf.cond(tnp.sum(x) > -1e300, lambda: _affine_exp(x), lambda: x)
    fast = nf.function(f, jit_compile=True)
    x = _x64(seed=7)
    fast.get_concrete_function(x)
    with nf.config.settings.override(fast_math=False):
        got = [fast(x) for _ in range(2)][-1]
    assert "contract: NumPy's bits" not in nf.config.explain(fast)
    assert "fast math" in nf.config.explain(fast)
    assert_within(got.numpy(), np.exp(x) * 2.0 + 1.0, contract.ulps("exp", np.float64) + 1)


def test_inside_another_function_the_callers_contract(nf_settings):
    """As documented: a jit_compile=True function called while another traces joins the
    caller's graph (and contract); run eagerly, it gives NumPy's bits."""
    nf_settings(numba="sync", hot_calls=1)
    x = _x64(seed=11)
    want = np.exp(x) * 2.0 + 1.0
    inner = nf.function(_affine_exp, jit_compile=True)
    outer = nf.function(lambda x: inner(x))
    assert np.array_equal([outer(x) for _ in range(2)][-1].numpy(), want)
    assert "NumPy's bits" in nf.config.explain(outer)
    nf.config.run_functions_eagerly(True)
    try:
        assert np.array_equal(inner(x).numpy(), want)
    finally:
        nf.config.run_functions_eagerly(False)


def test_pickling_keeps_the_flag(nf_settings):
    nf_settings(numba="sync", hot_calls=1)
    f = pickle.loads(pickle.dumps(nf.function(_affine_exp, jit_compile=True,
                                              autograph=False)))
    assert f._jit_compile is True and f._autograph is False
    x = _x64(seed=8)
    [f(x) for _ in range(2)]
    assert "fast math" in nf.config.explain(f)
    g = pickle.loads(pickle.dumps(nf.function(_affine_exp)))
    assert g._jit_compile is None and g._autograph is True


def _saved_and_loaded(f, tmp_path):
    nf.saved_model.save(f, str(tmp_path))
    return nf.saved_model.load(str(tmp_path)).__dict__["__call__"].concrete_functions[0]


def test_saved_models_keep_the_flag(nf_settings, tmp_path):
    """As TensorFlow keeps a saved function's jit_compile: loaded, it compiles under the same
    contract (the flag changes the route: see test_the_flag_changes_the_route), and a default
    function loads with the default; a file without the key (written before the key existed)
    loads with the default, and a key that is not a bool is a ValueError."""
    import json
    nf_settings(numba="sync", hot_calls=1, threads=1)
    sig = [nf.TensorSpec([None], nf.float64)]
    x, want = _x64(seed=10), np.exp(_x64(seed=10)) * 2.0 + 1.0
    fast = _saved_and_loaded(nf.function(_affine_exp, jit_compile=True, input_signature=sig),
                             tmp_path / "fast")
    exact = _saved_and_loaded(nf.function(_affine_exp, input_signature=sig), tmp_path / "exact")
    assert fast._jit_compile is True and exact._jit_compile is None
    r_fast, got_fast = routes_reached(lambda: [fast(x) for _ in range(2)][-1])
    r_exact, got_exact = routes_reached(lambda: [exact(x) for _ in range(2)][-1])
    assert Route.T1_LOOP in r_fast and Route.T1_LOOP not in r_exact, (r_fast, r_exact)
    assert "contract: fast math (jit_compile=True)" in nf.config.explain(fast)
    assert np.array_equal(got_exact.numpy(), want)
    assert_within(got_fast.numpy(), want, contract.ulps("exp", np.float64) + 1)
    # saving the loaded function again keeps the flag too
    again = _saved_and_loaded(fast, tmp_path / "again")
    assert again._jit_compile is True
    doc_path = tmp_path / "fast" / "saved_model.json"
    doc = json.loads(doc_path.read_text())
    for f in doc["functions"].values():
        assert f.pop("jit_compile") is True
    doc_path.write_text(json.dumps(doc))
    assert nf.saved_model.load(str(tmp_path / "fast")).__dict__["__call__"] \
        .concrete_functions[0]._jit_compile is None
    for f in doc["functions"].values():
        f["jit_compile"] = "yes"
    doc_path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="jit_compile must be true or false"):
        nf.saved_model.load(str(tmp_path / "fast"))


def test_methods_keep_the_flag(nf_settings):
    class M:
        @nf.function(jit_compile=True)
        def step(self, x):
            return _affine_exp(x)
    nf_settings(numba="sync", hot_calls=1)
    m, x = M(), _x64(seed=9)
    [m.step(x) for _ in range(2)]
    assert "fast math" in nf.config.explain(m.step)


# ------------------------------------------------------------------ gradients
def _step(w1, b1, w2):
    def step(x, y):
        with nf.GradientTape() as tape:
            z = tnp.tanh(x @ w1 + b1) @ w2
            loss = tnp.mean(tnp.square(z - y))
        return [loss] + tape.gradient(loss, [w1, b1, w2])
    return step


def _step_bound(x, y, w1, b1, w2):
    """How far [loss, dw1, db1, dw2] of `_step` may move when tanh is within its bound, each
    and the sums are added in another order: the contract's bounds
    carried through the step to first order (float64, from the values)."""
    u, ut = float(np.finfo(np.float32).eps), contract.ulps("tanh", np.float32)
    x, y, w1, b1, w2 = (np.asarray(a, np.float64) for a in (x, y, w1, b1, w2))
    n, h = x.shape[0], w1.shape[1]
    t = np.tanh(x @ w1 + b1)
    z = t @ w2
    r = 2.0 / n * (z - y)
    dt = (ut + 1) * u * np.abs(t)
    dz = dt @ np.abs(w2) + h * u * (np.abs(t) @ np.abs(w2))
    dr = 2.0 / n * (dz + 2 * u * np.abs(z - y))
    back = np.abs(r) @ np.abs(w2).T
    delta = back * (1 - t * t)
    ddelta = (dr @ np.abs(w2).T) * np.abs(1 - t * t) + back * (2 * np.abs(t) * dt +
                                                                2 * u * np.abs(1 - t * t))
    return [np.mean(2 * np.abs(z - y) * (dz + u * np.abs(z - y))) +
            n * u * np.mean((z - y) ** 2),
            np.abs(x).T @ ddelta + n * u * (np.abs(x).T @ np.abs(delta)),
            ddelta.sum(0) + n * u * np.abs(delta).sum(0),
            np.abs(t).T @ dr + dt.T @ np.abs(r) + n * u * (np.abs(t).T @ np.abs(r))]


def test_a_training_step_gives_gradients_within_the_bound(nf_settings):
    """A step with a tape inside (a tanh layer whose bias add and tanh fuse, a mean square
    loss): jit_compile=True's loss and gradients against the default mode's, within the
    contract's bounds carried through the step (`_step_bound`, twice it: first order)."""
    nf_settings(numba="sync", hot_calls=1)
    rng = np.random.default_rng(10)
    n, d, h = 512, 32, 64
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.standard_normal((n, 1)).astype(np.float32)
    ws = [nf.Variable(rng.standard_normal(s).astype(np.float32) * 0.3)
          for s in ((d, h), (h,), (h, 1))]
    fast, exact = nf.function(_step(*ws), jit_compile=True), nf.function(_step(*ws))
    got = [fast(x, y) for _ in range(3)][-1]
    want = [exact(x, y) for _ in range(3)][-1]
    bounds = _step_bound(x, y, *(w.numpy() for w in ws))
    moved = False
    for g, w, b in zip(got, want, bounds):
        g, w = g.numpy(), w.numpy()
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape
        err = np.abs(g.astype(np.float64) - w)
        assert np.all(err <= 2 * b), (err / b).max()
        moved |= bool(err.max() > 0)
    assert moved       # (tanh ran with ndflow's own math: the values moved, within bounds)
    assert "fused{t0=add(x0, x1); t1=tanh(t0)" in nf.config.explain(fast)
    assert "fast math" in nf.config.explain(fast)


# ------------------------------------------------------------------ compositions
_SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=40)


@hsettings(max_examples=12, deadline=None)
@given(shape=_SHAPES, dt=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 99))
def test_compositions_within_the_bound(shape, dt, seed):
    """sigmoid = 1 / (1 + exp(-x)): exp's bound and one ulp per exact op after it (each has a
    condition number <= 1 here); tanh(x) * y: tanh's and one; x * y + z: NumPy's bits (no FMA
    contraction)."""
    rng = np.random.default_rng(seed)
    x, y, z = (rng.uniform(-30, 30, shape).astype(dt) for _ in range(3))
    x.flat[:4] = [0.0, -0.0, np.inf, -np.inf][:x.size]
    with nf.config.settings.override(numba="sync", hot_calls=1, numba_min=1,
                                     numba_quick_units=0), np.errstate(all="ignore"):
        sig = nf.function(lambda x: 1.0 / (1.0 + tnp.exp(-x)), jit_compile=True)
        assert_within([sig(x) for _ in range(2)][-1].numpy(), 1.0 / (1.0 + np.exp(-x)),
                      contract.ulps("exp", dt) + 2, "sigmoid")
        th = nf.function(lambda x, y: tnp.tanh(x) * y, jit_compile=True)
        assert_within([th(x, y) for _ in range(2)][-1].numpy(), np.tanh(x) * y,
                      contract.ulps("tanh", dt) + 1, "tanh(x) * y")
        fma = nf.function(lambda x, y, z: x * y + z, jit_compile=True)
        assert_bits_equal([fma(x, y, z) for _ in range(2)][-1].numpy(), x * y + z)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_products_are_not_fused_into_fmas(nf_settings, dt):
    """One FMA would give other special values than NumPy's product then sum: a product that
    overflows to inf plus -inf is NaN (an FMA's exact product gives -inf), one that underflows
    to -0.0 plus +0.0 is +0.0 (an FMA's gives -0.0 or a subnormal). Under jit_compile=True too,
    a*b+c and exp(c) - c*c give NumPy's bits (hypothesis found the second in a chain)."""
    nf_settings(numba="sync", hot_calls=1, numba_min=1, numba_quick_units=0)
    fi = np.finfo(dt)
    big, tiny = np.sqrt(fi.max) * 4, np.sqrt(fi.smallest_subnormal) / 4
    a = np.array([big, -tiny, tiny, big, 2.0, -big] * 2000, dt)
    b = np.array([big, tiny, tiny, -big, 3.0, big] * 2000, dt)
    c = np.array([-np.inf, 0.0, -0.0, np.inf, 1.0, np.inf] * 2000, dt)
    with np.errstate(all="ignore"):
        f = nf.function(lambda a, b, c: a * b + c, jit_compile=True)
        assert_bits_equal([f(a, b, c) for _ in range(2)][-1].numpy(), a * b + c)
        e = np.array([1e30 if dt == np.float32 else 1e300, 3.0, -1.0] * 4000, dt)
        g = nf.function(lambda e: tnp.exp(e) - tnp.square(e), jit_compile=True)
        got, want = [g(e) for _ in range(2)][-1].numpy(), np.exp(e) - np.square(e)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    assert "tier 1" in nf.config.explain(f) and "tier 1" in nf.config.explain(g)
