"""Routes switched off (`settings.routes_off`, issue 21 item 7): with each route off, a call
takes the route it would take without it, the op table's values are still NumPy's (and the
reference path's bits where the route promises them), and `explain` names the fallback.

The cases reuse test_optable_routes.py's: each route's own case, on a few records, with the
route switched off and the settings that would reach it. The eager door's 'plain' and 'lane'
and the tape's 'eager_plan' are switched off in the calling thread and checked on the op
table's records against NumPy (the gradients against the reference loop's bits).
"""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.autodiff import eager_plan as P
from ndflow.backends import device as D
from ndflow.core import dispatch, settings as S
from ndflow.core.primitive import compose_composites
from ndflow.graph.kernels import planner
from ndflow.graph.kernels.planner import Route

import optable
import test_eager_plan
import test_optable as T
import test_optable_routes as R
from fake_device import FakeArray
from helpers import assert_same, to_nf, value_bits

pytestmark = T.pytestmark

REFERENCES = {Route.T0_SMALL, Route.DEVICE_OPS}
_RECORDS = [r for r in R._ELEMENTWISE if r.name in ("add", "exp", "maximum", "arctan2",
                                                     "sqrt", "less", "multiply")]


def test_the_switchable_routes_are_every_route_but_the_references():
    assert set(S.ROUTES) == {r.name for r in Route if r not in REFERENCES} | \
        (set(dispatch.DOOR_ROUTES) - {"general"}) | {"eager_plan", "eager_schedule"}
    assert set(planner.FALLBACK) == set(Route) - REFERENCES
    with pytest.raises(ValueError, match="T0_SMALL"):
        nf.config.settings.override(routes_off={"T0_SMALL"})
    with pytest.raises(ValueError, match="general"):
        nf.config.settings.override(routes_off="plain general")
    with nf.config.settings.override(routes_off=[Route.T1_LOOP, "lane"]):
        assert nf.config.settings.routes_off == {"T1_LOOP", "lane"}
    assert nf.config.settings.routes_off == frozenset()


# ------------------------------------------------------------------ tier 0
_T0_OFF = [pytest.param(r, route, id="%s-%s" % (r.name, route.name))
           for route in R._T0 if route not in REFERENCES for r in _RECORDS]


@pytest.mark.parametrize("rec,route", _T0_OFF)
def test_tier0_route_off(nf_settings, rec, route):
    """The settings that reach `route` on the record's samples, the route switched off: not
    reached, the general route's bits, and `explain` names the switch."""
    nf_settings(numba="off", hot_calls=1, routes_off={route}, **R._T0[route])
    dt = np.dtype(rec.dtypes[0])
    samples = R._t0_samples(rec, dt, route)
    if not samples:
        assert route is Route.T0_COLUMNS      # (a unary function has no outer product)
        return
    for s in samples:
        f = R._program(rec, s.kwargs)
        g, args = nf.function(f), [to_nf(a) for a in s.args]
        with np.errstate(all="ignore"):
            with compose_composites():
                general = f(*args)
            reached, out = R._reached(lambda: [g(*args) for _ in range(2)])
        assert route not in reached, (rec.name, route, reached)
        for o in out:
            R._agree_bits(o, general, f"{route.name} off: {rec.name}{s!r}")
        if route is not Route.T0_COLUMNS:
            # (columns: the region is not chosen for them, nothing to say)
            assert "%s switched off" % route.name in nf.config.explain(g), \
                nf.config.explain(g)
        if route is Route.T0_SCALAR:
            # the region's code calls the ops' kernels (no guarded scalar arithmetic)
            src = R._kernel(g, *args).tier0.source
            assert "g0 = " not in src and "f0(" in src, src


# ------------------------------------------------------------------ tier 1
def _tier1_off(nf_settings, route, settings, shape, calls, expect):
    """The group program of a few exact float64 functions with `route` off: `expect` (the
    fallback's routes) reached, `route` not, NumPy's bits, `explain` naming the switch."""
    names = R._exact_float_group()
    nf_settings(numba="sync", hot_calls=1, fast_math=False, routes_off={route}, **settings)
    x, y = R._operands(np.dtype(np.float64), shape, 5)
    g = nf.function(R._group_program(names))
    with np.errstate(all="ignore"):
        reached, outs = R._reached(lambda: [g(x, y) for _ in range(calls)])
    assert route not in reached and expect <= reached, (route, reached)
    assert "%s switched off" % route.name in nf.config.explain(g), nf.config.explain(g)
    for got in outs[-2:]:
        R._check_tier1(names, np.dtype(np.float64), False, got, x, y)


@R.needs_numba
@pytest.mark.parametrize("route,settings,shape,calls,expect", [
    (Route.T1_LOOP, {}, R._BIG, 3, set()),
    (Route.T1_THREADS, {"threads": 2, "numba_parallel_min": 1,
                        "numba_parallel_heavy_min": 1}, R._BIG, planner.PAR_AFTER + 4,
     {Route.T1_LOOP}),
    (Route.T1_DIRECT, {"numba_quick_units": 0}, (6, 8), 5, {Route.T1_LOOP}),
    (Route.T1_DIRECT_BAKED, {"numba_quick_units": 0}, (6, 8), 5, {Route.T1_DIRECT}),
], ids=lambda v: v.name if isinstance(v, Route) else None)
def test_tier1_route_off(nf_settings, route, settings, shape, calls, expect):
    _tier1_off(nf_settings, route, settings, shape, calls, expect)


@R.needs_numba
@pytest.mark.parametrize("route,expect", [(Route.T1_INPLACE, set()),
                                          (Route.T1_DIRECT_INTO, {Route.T1_INPLACE})],
                         ids=lambda v: v.name if isinstance(v, Route) else None)
def test_tier1_written_over_a_variable_route_off(nf_settings, route, expect):
    """test_optable_routes' Variable updated in place, with the in-place kernel or its
    generated caller off: the same bits, by the fallback."""
    names = R._exact_float_group()
    nf_settings(numba="sync", hot_calls=1, fast_math=False, routes_off={route})
    x, y = R._operands(np.dtype(np.float64), R._BIG, 4)
    x = np.nan_to_num(np.ascontiguousarray(x))
    v = nf.Variable(x)
    prog = R._group_program(names)

    @nf.function
    def step(y):
        v.assign(prog(v * 0.5, y)[-1] * 1e-3)

    want = x
    with np.errstate(all="ignore"):
        reached, _ = R._reached(lambda: [step(y) for _ in range(4)])
        for _ in range(4):
            want = prog(to_nf(want * 0.5), to_nf(y))[-1].numpy() * 1e-3
    assert route not in reached and expect <= reached, (route, reached)
    assert Route.T1_DIRECT_INTO not in reached
    assert "%s switched off" % route.name in nf.config.explain(step), nf.config.explain(step)
    R.assert_bits_equal(v.numpy(), want)


# ------------------------------------------------------------------ the device
def test_device_kernel_off(nf_settings):
    nf_settings(routes_off={"DEVICE_KERNEL"})
    b = R._Compiling(1)
    with D.use_gpu_backend(b, 1):
        for rec in _RECORDS:
            dt = np.dtype(rec.dtypes[0])
            s = R._t0_samples(rec, dt, Route.T0_LARGE)[0]
            f = R._program(rec, s.kwargs)
            with nf.device("GPU:0"):
                args = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in s.args]
                g = nf.function(f)
                with np.errstate(all="ignore"):
                    reached, out = R._reached(lambda: [g(*args) for _ in range(2)][-1])
            assert Route.DEVICE_OPS in reached and Route.DEVICE_KERNEL not in reached, \
                (rec.name, reached)
            assert "DEVICE_KERNEL switched off" in nf.config.explain(g)
            assert isinstance(out._v, FakeArray), rec.name
            with np.errstate(all="ignore"):
                want = f(*[to_nf(a) for a in s.args])
            assert value_bits(out.numpy()) == value_bits(want), f"{rec.name}{s!r}"


# ------------------------------------------------------------------ the eager door, the tape
_DOOR_RECORDS = [optable.by_name()[n] for n in ("add", "exp", "maximum", "var", "matmul",
                                                 "where", "sum", "reshape", "arctan2")]


@pytest.mark.parametrize("off", ["plain", "lane"])
@pytest.mark.parametrize("rec", _DOOR_RECORDS, ids=lambda r: r.name)
def test_door_route_off(nf_settings, rec, off):
    """With 'plain' off a plain eager call takes the general route; with 'lane' off a call
    under a tape does; NumPy's values either way, and the mode comes back with the switch."""
    dt = np.dtype(rec.dtypes[0])
    for s in rec.samples(T._seeded(rec, dt), dt):
        with np.errstate(all="ignore"):
            want = T._eval(rec, s, np)
        for taped in (False, True):
            with nf.config.settings.override(routes_off={off}):
                with T.door("lane" if taped else "plain"):
                    expect = "general" if (off == "lane") == taped else \
                        ("lane" if taped else "plain")
                    assert dispatch.door_route() == expect, (off, taped)
                    got = T._eval(rec, s)
            assert_same(got, want, rec.tolerance, None, ctx=f"({off} off) {rec.name}{s!r}",
                        values=rec.values == "values")
    assert dispatch.door_route() == "plain"


def test_plain_off_sends_writes_and_gradients_to_the_reference(nf_settings, monkeypatch):
    """'plain' off: the thread is never plain, so writes go through the mutation model and a
    backward pass runs the reference loop (the eager plan needs plain eager binds)."""
    runs = []
    monkeypatch.setattr(P, "backward", lambda *a: runs.append(1))
    nf_settings(routes_off="plain")
    assert not dispatch.plain()
    x = tnp.arange(4.0)
    assert not dispatch.writes_in_place(x)
    x[1] = 7.0
    with nf.GradientTape() as t:
        t.watch(x)
        y = tnp.sum(tnp.exp(x))
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), np.exp(x.numpy()))
    assert not runs


@pytest.mark.parametrize("rec,dt", test_eager_plan._CASES[::25])
def test_eager_plan_off_is_the_reference_loop(rec, dt, monkeypatch):
    """test_eager_plan's comparison with the plan switched off by the setting instead of
    `eager_plan.ENABLED`: the setting reaches `takes`, and the bits are the reference's."""
    runs = []
    real = P.backward
    monkeypatch.setattr(P, "backward", lambda *a: runs.append(1) or real(*a))
    rng = T._seeded(rec, dt, 31)
    for s in rec.samples(rng, dt):
        pos = T._diff_positions(rec, s)
        with np.errstate(all="ignore"):
            outs = T._float_leaves(T._eval(rec, s)) if pos else ()
        if not outs:
            continue
        cts = [tuple(tnp.asarray(rng.standard_normal(o.shape).astype(o.dtype)) for _ in "12")
               for o in outs]
        with np.errstate(all="ignore"):
            with nf.config.settings.override(routes_off={"eager_plan"}):
                off = test_eager_plan._gradients(rec, s, pos, cts, "none")
            assert not runs, rec.name
            with monkeypatch.context() as m:
                m.setattr(P, "ENABLED", False)
                ref = test_eager_plan._gradients(rec, s, pos, cts, "none")
        assert off == ref, f"{rec.name}{s!r}"
