"""The op table on every route (issue 21 item 6).

test_optable.py runs each record where a call goes by default: small samples, numba off. Here
the same records run on each *route* a call can take, each case asserting that its route was
really taken (the eager door's `dispatch.door_route()`, the planner's decisions counted in
`planner.REACHED`) and comparing the result with the reference path:

- the eager door: test_optable.py's `test_values_match_numpy` runs every record, dtype and
  sample on its three routes ('plain', 'lane': a recording tape, NumPy's promotion,
  'general': composites composed, a tape recording) against NumPy;
- the eager backward plan and the reference backward loop: test_eager_plan.py, bit for bit;
  the plan's cached schedules: test_eager_schedule.py, the same cases through a schedule;
- tier 0's routes (every elementwise record, i.e. a `tnp.ufunc`, its first dtype, at most
  two samples), the settings lowered so that the records' own small samples reach each
  route; `T0_COLUMNS` on samples of shapes (2, 16, 1) and (2, 1, 2): a region compiled from
  the record's call (and one op after it, so there is a region) against the same function
  run eagerly by the general route, bit for bit (tier 0 runs the traced ops as NumPy calls),
  and against the plain route (NumPy's kernel) in the record's tolerance;
- tier 1 (numba 'sync'): every function of the scalar vocabulary (primitives/scalar.py) in a
  few shared regions (one compile each), a broadcast operand, above `settings.numba_min`
  (a transposed one: tier 1 leaves it to tier 0, which must give NumPy's bits); the loop, two threads, the generated callers, results written over
  a Variable's buffer: bit for bit against NumPy where tier 1 promises NumPy's bits, within
  a few ulps where only `fast_math` lets it compile a function; a function tier 1 refuses
  must say why (`numba_tier.why_not`);
- the device routes on the fake device (tests/fake_device.py).

`test_every_route_is_reached` fails when a route exists (a `planner.Route` member, a door
route) that no case here targets; each case fails when it does not reach the route it
targets, so together: every route is reached by a record.
"""
import importlib.util

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
import ndflow.scipy.special as nsp
from ndflow.backends import base as B, device as D
from ndflow.core import dispatch, tree
from ndflow.core.primitive import compose_composites
from ndflow.graph import fusion
from ndflow.graph.kernels import numba_tier, planner
from ndflow.graph.kernels.planner import Route
from ndflow.primitives import scalar

import optable
import test_eager_plan
import test_optable as T
from fake_device import FakeArray, FakeBackend
from helpers import assert_bits_equal, assert_same, routes_reached, single_kernel, to_nf, value_bits

pytestmark = T.pytestmark
needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed")

# the routes the eager backward pass takes: test_eager_plan.py runs every differentiable
# record on both (the plan, and the reference loop with the plan off), bit for bit;
# test_eager_schedule.py the same cases through the plan's cached schedules
BACKWARD_ROUTES = ("eager backward plan", "reference backward loop", "eager schedule")


_kernel, _reached = single_kernel, routes_reached


# ------------------------------------------------------------------ tier 0
_ELEMENTWISE = [r for r in optable.RECORDS if isinstance(getattr(tnp, r.name, None), tnp.ufunc)
                and getattr(tnp, r.name).signature is None]

_T0 = {  # route -> settings
    Route.T0_INLINE: {},
    Route.T0_SCALAR: {},
    Route.T0_SMALL: {},
    Route.T0_LARGE: {"large_min": 1},
    Route.T0_BLOCKED: {"large_min": 1, "block_min": 2, "block_bytes": 1,
                       "block_threads_min": 1 << 62},
    Route.T0_THREADS: {"large_min": 1, "block_min": 1 << 62, "block_bytes": 1,
                       "block_threads_min": 2, "threads": 2},
    Route.T0_COLUMNS: {"large_min": 1},
}


def _after(o):
    """One op after a result, so that a record of one op makes a fused region."""
    if not isinstance(o, tnp.ndarray):
        return o
    return tnp.logical_not(o) if o.dtype.kind == "b" else o * 2


def _program(rec, kwargs):
    return lambda *a: tree.map_structure(_after, rec.call(tnp, *a, **kwargs))


def _t0_samples(rec, dt, route):
    """At most two samples of `rec` for a tier-0 route: its own largest (arrays only for
    T0_SMALL, whose signature leaves sizes unknown), their first elements as 0-d arrays for
    T0_SCALAR, or for T0_COLUMNS a short-last-axis outer product of two operands in its
    domain (dtypes as its own first sample's)."""
    rng = T._seeded(rec, dt, 41)
    own = [s for s in rec.samples(rng, dt)
           if any(isinstance(a, np.ndarray) for a in s.args)
           and all(np.size(a) for a in s.args if isinstance(a, np.ndarray))]
    if route is Route.T0_COLUMNS:
        pairs = [s for s in own if len(s.args) == 2 and not s.kwargs and
                 all(isinstance(a, np.ndarray) for a in s.args)]
        if getattr(tnp, rec.name).nin != 2 or not pairs:
            return []
        dom = rec.domain if rec.domain in optable._FLOAT_DOMAIN else "real"
        d0, d1 = (a.dtype for a in pairs[0].args)
        return [optable.Sample((optable.values(rng, (2, 16, 1), d0, optable._dom(dom, 0)),
                                optable.values(rng, (2, 1, 2), d1, optable._dom(dom, 1))))]
    if route is Route.T0_SCALAR:
        return [optable.Sample(tuple(np.array(a.flat[0]) if isinstance(a, np.ndarray) else a
                                     for a in own[0].args), own[0].kwargs, "0-d")][:1]
    if route is Route.T0_SMALL:
        own = [s for s in own if all(isinstance(a, np.ndarray) for a in s.args)]
    # the largest samples (broadcast and strided ones among them), special values in the
    # first
    own = sorted(own, key=lambda s: -max(np.size(a) for a in s.args))[:2]
    return [_with_specials(own[0])] + own[1:] if own else own


_SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30)


def _with_specials(s):
    """`s` with NaN, infinities, signed zeros and a tiny value over the first elements of its
    float arrays (each array's shifted by its position, so that they meet in pairs)."""
    args = []
    for i, a in enumerate(s.args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size > 1 and \
                a.flags.writeable:
            # (into the sample's own array, keeping its layout: samples are made per call)
            k = min(a.size, len(_SPECIALS))
            a[np.unravel_index(np.arange(k), a.shape)] = np.roll(
                np.array(_SPECIALS[:k], a.dtype), i)
        args.append(a)
    return optable.Sample(tuple(args), s.kwargs, s.desc + "+specials")


# (record, route) that a record's region does not take, and why: each is checked to be so
# (the list only shrinks)
NOT_REACHED = {
    **{(n, Route.T0_INLINE): "costs tier 0 settings.numba_quick_units NumPy calls or more, so "
       "tier 1 is not ruled out at build: tier 0 for good on its hot call (T0_SMALL)"
       for n in ("fmax", "fmin", "heaviside", "modf")},
    **{(n, r): "two results of which one is integer: no fused region (the op runs alone)"
       for n in ("frexp",) for r in (Route.T0_INLINE, Route.T0_SCALAR, Route.T0_SMALL,
                                            Route.T0_LARGE, Route.T0_BLOCKED,
                                            Route.T0_THREADS)},
}


def _agree_bits(got, want, ctx):
    for o, w in zip(tree.flatten(got), tree.flatten(want)):
        if isinstance(w, tnp.ndarray) and w.dtype.kind in "fc":
            try:
                assert_bits_equal(o.numpy(), w.numpy())
            except AssertionError as e:
                raise AssertionError(f"{ctx}: {e}") from None
        else:
            assert value_bits(o) == value_bits(w), ctx


_T0_CASES = [pytest.param(r, route, id="%s-%s" % (r.name, route.name))
             for route in _T0 for r in _ELEMENTWISE]


@pytest.mark.parametrize("rec,route", _T0_CASES)
def test_tier0_routes_give_the_general_routes_bits(nf_settings, rec, route):
    """Tier 0 runs the region's ops as NumPy calls: the bits of the same function run
    eagerly by the general route (the composition: what was traced), and NumPy's values in
    the record's tolerance (the plain route: NumPy's own kernel)."""
    nf_settings(numba="off", hot_calls=1, **_T0[route])
    dt = np.dtype(rec.dtypes[0])
    samples = _t0_samples(rec, dt, route)
    if route is Route.T0_COLUMNS and getattr(tnp, rec.name).nin != 2:
        return      # (a unary function has no outer product)
    assert samples, f"{rec.name}: no sample for {route.name}"
    reached = set()
    for s in samples:
        f = _program(rec, s.kwargs)
        spec = None
        if route is Route.T0_SMALL:
            spec = [nf.TensorSpec((None,) * a.ndim, a.dtype) for a in s.args]
        g = nf.function(f, input_signature=spec)
        args = [to_nf(a) for a in s.args]
        with np.errstate(all="ignore"):
            plain = f(*args)
            with compose_composites():
                general = f(*args)
            got, out = _reached(lambda: [g(*args) for _ in range(2)])
        reached |= got
        for o in out:
            _agree_bits(o, general, f"{route.name}: {rec.name}{s!r}")
            assert_same(o, tree.map_structure(lambda v: v.numpy(), plain), rec.tolerance,
                        ctx=f"{route.name}: {rec.name}{s!r}")
    why = NOT_REACHED.get((rec.name, route))
    if why is None:
        assert route in reached, f"{rec.name}: {route.name} not reached ({reached})"
    else:
        assert route not in reached, f"{rec.name} now reaches {route.name}: delete its " \
            f"NOT_REACHED entry ({why})"
        # (what it takes instead: tier 0's small route, or no region at all)
        assert reached <= {Route.T0_SMALL}, (rec.name, reached)


# ------------------------------------------------------------------ tier 1
# how a function of the scalar vocabulary is called where tnp has no ufunc of its name
_SCALAR_CALLS = {"abs": tnp.absolute, "conj": tnp.conjugate, "erf": nsp.erf, "erfc": nsp.erfc,
                 "astype": lambda x, y: x.astype(np.float32),
                 "ldexp": lambda x, y: tnp.ldexp(x, tnp.astype(y, np.int32)),
                 "where": lambda x, y: tnp.where(x > y, x, y)}
_INT_ONLY = {"gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
             "right_shift", "invert", "bitwise_count"}
_BIG = (96, 128)          # 12288 elements: above settings.numba_min (8192)


def _scalar_fn(name):
    return _SCALAR_CALLS.get(name) or getattr(tnp, name)


def _group_program(names):
    """One region computing every function of `names` on x (and y): each result is returned,
    and all are summed (as float64) so that they form one region (one compile)."""
    def f(x, y):
        outs = []
        for n in names:
            fn = _scalar_fn(n)
            nin = scalar.FUNCTIONS[n][0]
            outs.append(fn(x) if nin == 1 else fn(x, y))
        z = outs[0].astype(np.float64)
        for o in outs[1:]:
            z = z + o.astype(np.float64)
        return outs + [z * 0.5 + 1.0]      # (constants: the baked caller's)
    return f


def _operands(dt, shape, seed, transposed=False):
    """x of `shape` (`transposed`: a transposed view, strided) and y a row broadcast against
    it, in a domain every function takes, with NaN, infinities and signed zeros among the
    floats."""
    rng = np.random.default_rng(seed)
    m, n = shape

    def layout(a):
        return a.T if transposed else np.ascontiguousarray(a.T)
    if dt.kind == "i":
        x = layout(rng.integers(1, 7, (n, m)).astype(dt))
        y = rng.integers(1, 4, n).astype(dt)
        return x, y
    x = layout(rng.uniform(0.5, 2.0, (n, m)).astype(dt))
    y = rng.uniform(0.5, 2.0, n).astype(dt)
    x[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-300][:min(6, n)]
    y[:5] = [-0.0, np.nan, 1.5, 0.0, -0.0]     # (x's signed zeros meet the other sign)
    return x, y


def _tier1_why_not(names, dt, fast_math):
    """Why tier 1 refuses the region of `names` on `dt` operands, or None (traced, not run)."""
    x, y = _operands(dt, (4, 8), 0)
    with nf.config.settings.override(fast_math=fast_math):
        g = nf.function(_group_program(names))
        ks = fusion.fused_kernels(g.get_concrete_function(x, y).graph)
        assert len(ks) == 1, (names, ks)
        assert ks[0].fast_math == fast_math
        return numba_tier.why_not(ks[0].prog, fast_math)


def _plan_groups():
    """{(dtype, fast_math): [function]}: each function of the vocabulary in the exact group
    of every dtype tier 1 takes it in exactly (float64 and float32, or int64), else in the
    fast_math group of the first dtype it takes it in then; and {function: reason} for those
    it refuses in every one."""
    groups, refused = {}, {}
    for name in scalar.FUNCTIONS:
        dts = [np.dtype(d) for d in ((np.int64,) if name in _INT_ONLY else
                                     (np.float64, np.float32))]
        exact = [dt for dt in dts if _tier1_why_not([name], dt, False) is None]
        for dt in exact:
            groups.setdefault((dt, False), []).append(name)
        if exact:
            continue
        whys = [_tier1_why_not([name], dt, True) for dt in dts]
        if None in whys:
            groups.setdefault((dts[whys.index(None)], True), []).append(name)
        else:
            refused[name] = "; ".join(whys)
    return groups, refused


_GROUPS = None


def _groups():
    global _GROUPS
    if _GROUPS is None:
        _GROUPS = _plan_groups()
    return _GROUPS


def _check_tier1(names, dt, fm, got, x, y):
    with np.errstate(all="ignore"):
        want = _group_program(names)(to_nf(x), to_nf(y))
    for n, o, w in zip(names + ["sum"], got, want):
        if not fm or w.dtype.kind != "f":
            assert_bits_equal(o.numpy(), w.numpy())     # (NaNs by position)
        else:
            eps = np.finfo(w.dtype).eps
            np.testing.assert_allclose(o.numpy(), w.numpy(), rtol=8 * eps, atol=4 * eps,
                                       err_msg=f"tier 1 (fast_math): {n} on {dt}")


@needs_numba
def test_tier1_compiles_every_scalar_function(nf_settings):
    """T1_LOOP: each group of functions in one region, above settings.numba_min, one thread,
    on an operand and a broadcast row (NaN, infinities, signed zeros meeting the other sign),
    then on a transposed operand; NumPy's bits (within 8 ulps under fast_math)."""
    groups, refused = _groups()
    assert set(scalar.FUNCTIONS) == {n for g in groups.values() for n in g} | set(refused)
    for n, why in refused.items():
        assert why and isinstance(why, str), n
    for (dt, fm), names in groups.items():
        nf_settings(numba="sync", hot_calls=1, fast_math=fm, threads=1)
        x, y = _operands(dt, _BIG, 1)
        g = nf.function(_group_program(names))
        with np.errstate(all="ignore"):
            reached, got = _reached(lambda: [g(x, y) for _ in range(2)][-1])
        assert Route.T1_LOOP in reached, (dt, fm, reached, nf.config.explain(g))
        assert _kernel(g, x, y).tier() == 1 and "settings.threads is 1" in nf.config.explain(g)
        _check_tier1(names, dt, fm, got, x, y)
        # a transposed operand: tier 1 takes it where it collapses (one operand: in memory
        # order), else leaves the signature to tier 0; NumPy's values either way
        # (a function of its own: its signature is planned afresh; its kernel is the same)
        xt, _ = _operands(dt, _BIG, 1, transposed=True)
        g = nf.function(_group_program(names))
        with np.errstate(all="ignore"):
            reached, got = _reached(lambda: [g(xt, y) for _ in range(2)][-1])
        assert Route.T1_LOOP in reached or "operand 0 is strided" in nf.config.explain(g)
        _check_tier1(names, dt, fm, got, xt, y)


def _exact_float_group():
    """A few functions of the exact float64 group, for the routes after the loop (each needs
    compiles of its own, whose time grows with the region)."""
    names = _groups()[0][(np.dtype(np.float64), False)]
    return [n for n in ("sqrt", "multiply", "maximum", "where", "isnan") if n in names]


@needs_numba
def test_tier1_two_threads(nf_settings):
    names = _exact_float_group()
    nf_settings(numba="sync", hot_calls=1, fast_math=False, threads=2, numba_parallel_min=1,
                numba_parallel_heavy_min=1)
    x, y = _operands(np.dtype(np.float64), _BIG, 2)
    g = nf.function(_group_program(names))
    with np.errstate(all="ignore"):
        reached, outs = _reached(lambda: [g(x, y) for _ in range(planner.PAR_AFTER + 4)])
    assert Route.T1_THREADS in reached, (reached, nf.config.explain(g))
    assert _kernel(g, x, y).tier() == 1 and "thread" in nf.config.explain(g)
    for got in outs[-2:]:
        _check_tier1(names, np.dtype(np.float64), False, got, x, y)


@needs_numba
def test_tier1_generated_callers(nf_settings):
    """A small static region: the generated caller (T1_DIRECT), then its kernel with the
    constants in it (T1_DIRECT_BAKED)."""
    names = _exact_float_group()
    nf_settings(numba="sync", hot_calls=1, fast_math=False, numba_quick_units=0)
    x, y = _operands(np.dtype(np.float64), (6, 8), 3)
    g = nf.function(_group_program(names))
    with np.errstate(all="ignore"):
        reached, outs = _reached(lambda: [g(x, y) for _ in range(5)])
    assert {Route.T1_DIRECT, Route.T1_DIRECT_BAKED} <= reached, reached
    assert type(_kernel(g, x, y)).quick_call and "generated caller" in nf.config.explain(g)
    for got in outs[-2:]:
        _check_tier1(names, np.dtype(np.float64), False, got, x, y)


@needs_numba
def test_tier1_written_over_a_variable(nf_settings):
    """A Variable's update in place: the in-place kernel (T1_INPLACE), then its generated
    caller (T1_DIRECT_INTO)."""
    names = _exact_float_group()
    nf_settings(numba="sync", hot_calls=1, fast_math=False)
    x, y = _operands(np.dtype(np.float64), _BIG, 4)
    x = np.nan_to_num(np.ascontiguousarray(x))
    v = nf.Variable(x)
    prog = _group_program(names)

    @nf.function
    def step(y):
        v.assign(prog(v * 0.5, y)[-1] * 1e-3)

    want = x
    with np.errstate(all="ignore"):
        reached, _ = _reached(lambda: [step(y) for _ in range(4)])
        for _ in range(4):
            want = prog(to_nf(want * 0.5), to_nf(y))[-1].numpy() * 1e-3
    assert {Route.T1_INPLACE, Route.T1_DIRECT_INTO} <= reached, reached
    assert_bits_equal(v.numpy(), want)


def _row_program(names):
    """`_group_program` on x less its row's max (a reduction along the last axis used in the
    region: a row region under fast math, `numba_rows`), and the row sums of the last."""
    g = _group_program(names)

    def f(x, y):
        outs = g(x - tnp.max(x, axis=1, keepdims=True), y)
        return outs + [tnp.sum(outs[-1], axis=1)]
    return f


@needs_numba
def test_tier1_row_kernel(nf_settings):
    """T1_ROWS: every float function of tier 1's vocabulary in a row region (after the
    row's max, summed along the row at the end) under fast math, on an operand with NaN,
    infinities and signed zeros and a broadcast row: within 8 ulps of the eager ops (the
    row sums within the contract's n * eps * sum|x|)."""
    groups, _ = _groups()
    for dt in (np.dtype(np.float64), np.dtype(np.float32)):
        names = sorted({n for (d, _), ns in groups.items() if d == dt for n in ns})
        nf_settings(numba="sync", hot_calls=1, fast_math=True)
        x, y = _operands(dt, (24, 40), 5)
        f = _row_program(names)
        g = nf.function(f)
        with np.errstate(all="ignore"):
            reached, got = _reached(lambda: [g(x, y) for _ in range(2)][-1])
            want = f(to_nf(x), to_nf(y))
        assert Route.T1_ROWS in reached, (dt, reached, nf.config.explain(g))
        for n, o, w in zip(names + ["sum"], got[:-1], want[:-1]):
            eps = np.finfo(w.dtype).eps if w.dtype.kind == "f" else 0
            np.testing.assert_allclose(o.numpy(), w.numpy(), rtol=8 * eps, atol=4 * eps,
                                       err_msg=f"row kernel: {n} on {dt}")
        s, w = got[-1].numpy(), want[-1].numpy()
        terms = np.abs(np.nan_to_num(want[-2].numpy(), posinf=0, neginf=0)).sum(1)
        ok = np.isfinite(w)
        np.testing.assert_array_equal(np.isfinite(s), ok)
        assert np.all(np.abs(s[ok] - w[ok]) <= (40 + 8) * np.finfo(w.dtype).eps * terms[ok])


# ------------------------------------------------------------------ the fake device
class _Compiling(FakeBackend):
    """A fake device with a 'compiled' kernel for every region (op by op underneath)."""

    def compile_fused(self, prog):
        return lambda *xs: B.interpret(prog, xs)


_DEVICE_RECORDS = [r for r in _ELEMENTWISE if r.name in ("exp", "add", "maximum", "where",
                                                         "sqrt", "less", "arctan2")]


@pytest.mark.parametrize("backend,route", [(FakeBackend, Route.DEVICE_OPS),
                                           (_Compiling, Route.DEVICE_KERNEL)])
def test_device_routes_on_records(backend, route):
    b = backend(1)
    with D.use_gpu_backend(b, 1):
        for rec in _DEVICE_RECORDS:
            dt = np.dtype(rec.dtypes[0])
            for s in _t0_samples(rec, dt, Route.T0_LARGE):
                f = _program(rec, s.kwargs)
                with nf.device("GPU:0"):
                    args = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in s.args]
                    g = nf.function(f)
                    with np.errstate(all="ignore"):
                        reached, out = _reached(lambda: [g(*args) for _ in range(2)][-1])
                assert route in reached, (rec.name, reached)
                assert isinstance(out._v, FakeArray), rec.name
                with np.errstate(all="ignore"):
                    want = f(*[to_nf(a) for a in s.args])
                assert value_bits(out.numpy()) == value_bits(want), f"{rec.name}{s!r}"
    assert b.fused_runs >= 1


# ------------------------------------------------------------------ coverage
_TIER1_CASES = {Route.T1_LOOP: test_tier1_compiles_every_scalar_function,
                Route.T1_THREADS: test_tier1_two_threads,
                Route.T1_DIRECT: test_tier1_generated_callers,
                Route.T1_DIRECT_BAKED: test_tier1_generated_callers,
                Route.T1_INPLACE: test_tier1_written_over_a_variable,
                Route.T1_DIRECT_INTO: test_tier1_written_over_a_variable,
                Route.T1_ROWS: test_tier1_row_kernel}
_DEVICE_CASES = (Route.DEVICE_OPS, Route.DEVICE_KERNEL)


def test_every_route_is_reached():
    """Every route that exists is the target of a case above (each of which fails when it
    does not reach it): the planner's routes, the eager door's, the backward pass's."""
    targeted = {c.values[1] for c in _T0_CASES} | set(_TIER1_CASES) | set(_DEVICE_CASES)
    missing = [r.name for r in Route if r not in targeted]
    assert not missing, "routes no op-table case reaches: %s" % missing
    # the door's routes: test_optable's values test runs each (spied on one record)
    seen = []
    real = dispatch.door_route
    with pytest.MonkeyPatch.context() as m:
        m.setattr(dispatch, "door_route", lambda: seen.append(real()) or seen[-1])
        T.test_values_match_numpy(optable.by_name()["add"], np.dtype(np.float64))
    assert set(seen) == set(dispatch.DOOR_ROUTES), seen
    assert test_eager_plan._CASES, BACKWARD_ROUTES
    # tier 0's cases come from every elementwise record
    assert {c.values[0].name for c in _T0_CASES} == {r.name for r in _ELEMENTWISE}
