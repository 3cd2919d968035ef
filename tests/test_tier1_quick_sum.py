"""The generated tier-1 caller of regions that end in a sum (`Runner._make_quick` with
`_quick_reduction`, issue 13): the same results as the general path (`Runner.__call__`) and
NumPy, bit for bit, with special values, keepdims and every sum layout; results fresh at each
call; the general path whenever the caller cannot run (NumPy's error state set to raise, a
strided operand, another object in a constant's place); threads."""
import importlib.util
import threading

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import numba_plan
from helpers import assert_bits_equal

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

CALLS = 5        # tier 1 is requested at the third call of a region


@pytest.fixture
def sync(monkeypatch, nf_settings):
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    # every layout at every size (the cost model's limits are not what is tested here)
    monkeypatch.setattr(numba_plan, "PAIRWISE_MAX", 1 << 62)
    nf_settings(numba_min=1)


def _bits_equal(got, want):
    assert type(got) is type(want), (type(got), type(want))
    assert_bits_equal(got, want)


def _data(rng, shape, dtype, special):
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
    if special and x.size:
        x.flat[:7] = [-0.0, 0.0, np.nan, np.inf, -np.inf, -0.0, 1e-30][:x.size]
    return x


# (program over ndflow.numpy or numpy, operand shape): each a static region ending in a sum
PROGRAMS = {
    "cols": (lambda np_, h, g: np_.sum((h > 0) * g, axis=0), (64, 48)),
    "cols_keepdims": (lambda np_, h, g: np_.sum(h * g - 1.0, axis=0, keepdims=True), (40, 32)),
    "cols3": (lambda np_, h, g: np_.sum(np_.abs(h) - g, axis=(0, 1)), (6, 8, 20)),
    "rows": (lambda np_, x, y: np_.sum(x * y + 1.0, axis=1), (32, 130)),
    "rows_keepdims": (lambda np_, x, y: np_.sum(np_.maximum(x, 0.0) * y, axis=-1,
                                                keepdims=True), (16, 200)),
    "full": (lambda np_, x, y: np_.sum(np_.square(x - y)), (50, 61)),
    "full_keepdims": (lambda np_, x, y: np_.sum(x * y, keepdims=True), (33, 40)),
    "mean": (lambda np_, x, y: np_.mean(np_.where(x > y, x * y, y - x)), (64, 64)),
}
# what the region itself computes where that is not the whole program (mean's division by
# the count is a node after it)
REGION = {"mean": lambda np_, x, y: np_.sum(np_.where(x > y, x * y, y - x))}


def _region(f, *args):
    ks = [k for k in fusion.fused_kernels(f.get_concrete_function(*args).graph)
          if any(o.reduce for o in k.prog.ops)]
    assert len(ks) == 1
    return ks[0]


def _operands(f, k, *args):
    """A function to give the region `k` of `f` its operands for arguments like `args`: the
    arguments where the graph feeds them, the graph's constants elsewhere."""
    cf = f.get_concrete_function(*args)
    node, = [n for n in cf.graph.nodes
             if n.prim.fused and getattr(n.prim.impl, "kernel", n.prim.impl) is k]
    g = cf.run.__globals__
    consts = {c.id: g["c%d" % i] for i, c in enumerate(cf.graph.consts)}
    params = [v.id for v in cf.graph.inputs]
    assert all(v.kind == "c" or v.id in params for v in node.inputs)

    def operands(*xs):
        return [consts[v.id] if v.kind == "c" else xs[params.index(v.id)]
                for v in node.inputs]
    return operands


def _compiled(name, dtype):
    prog, shape = PROGRAMS[name]
    f = nf.function(lambda a, b: prog(tnp, a, b))
    rng = np.random.default_rng(len(name))
    a, b = _data(rng, shape, dtype, False), _data(rng, shape, dtype, False)
    for _ in range(CALLS):
        f(a, b)
    k = _region(f, a, b)
    assert k.tier() == 1 and callable(k.runner.quick), (name, k.tier1_unavailable)
    ops = _operands(f, k, a, b)
    return f, (lambda *xs: k(*ops(*xs))), k, prog, shape


def _spy(runner):
    q, hits = runner.quick, []

    def spy(xs):
        r = q(xs)
        hits.append(r is not NotImplemented)
        return r
    runner.quick = spy
    return q, hits


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_quick_sum_caller_is_numpy_and_the_general_path_bit_for_bit(sync, name, dtype):
    f, kc, k, prog, shape = _compiled(name, dtype)
    r = k.runner
    q, hits = _spy(r)
    rng = np.random.default_rng(11)
    for special in (False, True, True):
        a, b = _data(rng, shape, dtype, special), _data(rng, shape, dtype, special)
        if special:
            b.flat[-3:] = [-0.0, np.inf, -0.0]
        del hits[:]
        got = kc(a, b)
        assert hits == [True]
        with np.errstate(all="ignore"):
            want = prog(np, a, b)
            _bits_equal(got, REGION.get(name, prog)(np, a, b))
        # the general path on the same operands
        spy, r.quick = r.quick, False
        try:
            _bits_equal(kc(a, b), got)
        finally:
            r.quick = spy
        _bits_equal(f(a, b).numpy(), np.asarray(want))
    # all -0.0: NumPy's sums start from +0.0
    z = np.full(shape, -0.0, dtype)
    _bits_equal(kc(z, z), REGION.get(name, prog)(np, z, z))


def test_quick_sum_results_are_fresh(sync):
    for name in ("cols", "full_keepdims", "full"):
        f, kc, k, prog, shape = _compiled(name, np.float32)
        rng = np.random.default_rng(3)
        a, b = _data(rng, shape, np.float32, True), _data(rng, shape, np.float32, False)
        r1 = kc(a, b)
        keep = np.array(r1, copy=True)
        r2 = kc(b, a)
        assert r1 is not r2
        if isinstance(r1, np.ndarray):
            assert not np.shares_memory(r1, r2)
        _bits_equal(np.asarray(r1), keep)
        _bits_equal(r2, prog(np, b, a))


def test_quick_sum_with_an_elementwise_result_and_a_constant(sync):
    """A region with a pooled elementwise result and a sum, and a broadcast constant."""
    w = np.linspace(-1, 1, 48).astype(np.float32)

    def fn(np_, h, g):
        t = np_.where(h > w, h * g, -g)
        return t, np_.sum(t, axis=0)
    f = nf.function(lambda h, g: fn(tnp, h, g))
    rng = np.random.default_rng(5)
    h, g = _data(rng, (64, 48), np.float32, True), _data(rng, (64, 48), np.float32, True)
    for _ in range(CALLS):
        f(h, g)
    k = _region(f, h, g)
    assert k.tier() == 1 and callable(k.runner.quick)
    _, hits = _spy(k.runner)
    outs = [f(h, g) for _ in range(3)]
    assert hits and all(hits)
    want = fn(np, h, g)
    for got in outs:
        for a, b in zip(got, want):
            _bits_equal(a.numpy(), b)
    if len(k.prog.outputs) == 2:        # both results from the one region: distinct buffers
        assert not np.shares_memory(outs[0][0].numpy(), outs[1][0].numpy())


def test_quick_sum_falls_back_to_the_general_path(sync):
    f, kc, k, prog, shape = _compiled("cols", np.float32)
    _, hits = _spy(k.runner)
    rng = np.random.default_rng(8)
    a, b = _data(rng, shape, np.float32, True), _data(rng, shape, np.float32, True)
    # a strided operand: the general path (or tier 0), NumPy's values
    big = np.repeat(a, 2, axis=1)[:, ::2]
    del hits[:]
    _bits_equal(kc(big, b), prog(np, a, b))
    assert hits == [False]
    # NumPy's error state asking to raise: tier 0 raises as NumPy does
    f2, kc2, k2, prog2, shape2 = _compiled("full", np.float32)
    huge = np.full(shape2, 3e38, np.float32)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            kc2(huge, -huge)
        with pytest.raises(FloatingPointError):
            np.sum(np.square(huge + huge))
    # and the caller is still there afterwards
    _, hits2 = _spy(k2.runner)
    c, d = _data(rng, shape2, np.float32, True), _data(rng, shape2, np.float32, False)
    _bits_equal(kc2(c, d), prog2(np, c, d))
    assert hits2 == [True]


def test_quick_sum_constant_rebound_drops_the_caller(sync):
    w = np.linspace(-1, 1, 48).astype(np.float32)
    f = nf.function(lambda h, g: tnp.sum(tnp.maximum(h, w) * g, axis=0))
    rng = np.random.default_rng(9)
    h, g = _data(rng, (64, 48), np.float32, True), _data(rng, (64, 48), np.float32, False)
    for _ in range(CALLS):
        f(h, g)
    k = _region(f, h, g)
    r = k.runner
    assert callable(r.quick) and r.quick_consts
    i, c = r.quick_consts[0]
    xs = _operands(f, k, h, g)(h, g)
    assert xs[i] is c
    other = np.asarray(c) + np.float32(1)
    xs2 = list(xs)
    xs2[i] = other
    want = np.sum(np.maximum(h, w + np.float32(1)) * g, axis=0)
    _bits_equal(k(*xs2), want)
    assert r.quick is False and r.quick_consts == ()
    _bits_equal(f(h, g).numpy(), np.sum(np.maximum(h, w) * g, axis=0))


def test_quick_sum_fast_math(sync, monkeypatch, nf_settings):
    """`settings.fast_math`: the caller runs the same kernel as the general path (the same
    bits), within rounding of NumPy's sum."""
    nf_settings(fast_math=True)
    for name in ("cols", "rows", "full"):
        f, kc, k, prog, shape = _compiled(name, np.float64)
        r = k.runner
        q, hits = _spy(r)
        rng = np.random.default_rng(1)
        a, b = _data(rng, shape, np.float64, False), _data(rng, shape, np.float64, False)
        got = kc(a, b)
        assert hits == [True]
        r.quick = False
        _bits_equal(kc(a, b), got)
        np.testing.assert_allclose(got, prog(np, a, b), rtol=1e-9, atol=1e-9)


def test_empty_and_unit_regions_with_sums(sync):
    for shape in ((0, 64), (64, 0), (1, 1)):
        f = nf.function(lambda x, y: (tnp.sum(x * y, axis=0), tnp.sum(tnp.square(x - y))))
        x = np.ones(shape, np.float32)
        y = np.full(shape, -0.0, np.float32)
        for _ in range(CALLS):
            got = f(x, y)
        _bits_equal(got[0].numpy(), np.sum(x * y, axis=0))
        _bits_equal(got[1].numpy(), np.asarray(np.sum(np.square(x - y))))


def test_quick_sum_from_threads(sync):
    f, kc, k, prog, shape = _compiled("cols", np.float32)
    rng = np.random.default_rng(2)
    inputs = [(_data(rng, shape, np.float32, True), _data(rng, shape, np.float32, False))
              for _ in range(4)]
    _, hits = _spy(k.runner)
    bad = []

    def work(a, b):
        want = prog(np, a, b)
        for _ in range(200):
            if not np.array_equal(f(a, b).numpy(), want, equal_nan=True):
                bad.append(1)
    ts = [threading.Thread(target=work, args=ab) for ab in inputs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad and hits and all(hits)
