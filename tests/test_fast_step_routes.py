"""Routes the fast-math contract (`jit_compile=True`) takes for a training step's regions:
static regions pay through tier 1's generated caller from `policy.FAST_STATIC_WORK`
elements x units, and get no dead buffers where that caller pays more
(`policy.pooled_results_pay`), a Variable's own buffer still; the default contract keeps its
routes. Values are NumPy's bits (these regions' ops are exact under both contracts)."""
import importlib.util
import weakref

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import policy
from ndflow.graph.kernels.planner import Route, TIER0
from helpers import assert_bits_equal, routes_reached

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

CALLS = 5


def test_fast_math_static_regions_pay_by_their_work(nf_settings):
    """Under jit_compile=True a static region pays through the generated caller once its
    elements x cost units reach `policy.FAST_STATIC_WORK` (a batch-32 layer's bias add and
    relu, 4096 elements, 2 units); by default it stays on tier 0. Values NumPy's bits."""
    nf_settings(numba="sync")
    assert policy.pays(4096, 2, True, fast=True) and not policy.pays(4096, 2, True)
    assert not policy.pays(4096, 2, False, fast=True) and \
        not policy.pays(1024, 2, True, fast=True)
    assert "static under fast math" in policy.pays_why(4096, 2, True, fast=True)
    rng = np.random.default_rng(0)
    h = rng.standard_normal((32, 128)).astype(np.float32)
    h[0, :3] = [np.nan, -0.0, np.inf]
    b = rng.standard_normal(128).astype(np.float32)
    want = np.maximum(h + b, np.float32(0))
    for jit, direct in ((True, True), (None, False)):
        f = nf.function(lambda h, b: tnp.maximum(h + b, 0), jit_compile=jit)
        reached = set()
        for _ in range(CALLS):
            r, got = routes_reached(lambda: f(h, b))
            reached |= r
            assert_bits_equal(got.numpy(), want)
        assert (Route.T1_DIRECT in reached or Route.T1_DIRECT_BAKED in reached) == direct, \
            (jit, reached)
        assert bool(reached & TIER0) != direct, (jit, reached)


def _donor_count(f, *args):
    """How many buffers the optimized graph offers fused regions beyond their operands."""
    g = f.get_concrete_function(*args).graph
    return sum(len(getattr(n.prim.impl, "donated", {})) for n in g.nodes if n.prim.fused)


def test_fast_math_large_static_regions_take_pooled_results(nf_settings):
    """The bias add and relu of a batch-256 layer (32768 elements) under jit_compile=True: no
    dead buffer offered, the generated caller runs it; by default the dying product is
    offered and written over (T1_INPLACE)."""
    nf_settings(numba="sync")
    rng = np.random.default_rng(1)
    h = rng.standard_normal((256, 128)).astype(np.float32)
    m = rng.standard_normal((128, 128)).astype(np.float32)
    g = rng.standard_normal(128).astype(np.float32)
    g[:4] = [np.nan, -0.0, 0.0, -np.inf]

    def step(h, m, g):
        y = tnp.matmul(h, m) + g         # the product dies at the region: a buffer to offer
        return tnp.maximum(y, 0), y
    y = h @ m + g
    want = (np.maximum(y, np.float32(0)), y)
    for jit, donors, direct in ((True, 0, True), (None, 1, False)):
        f = nf.function(step, jit_compile=jit)
        assert (_donor_count(f, h, m, g) > 0) == bool(donors), jit
        reached = set()
        for _ in range(CALLS):
            r, got = routes_reached(lambda: f(h, m, g))
            reached |= r
            assert_bits_equal(got[0].numpy(), want[0])
            assert_bits_equal(got[1].numpy(), want[1])
        assert (Route.T1_DIRECT in reached) == direct, (jit, reached)
        assert (Route.T1_INPLACE in reached) != direct, (jit, reached)


def test_fast_math_variable_updates_stay_in_place(nf_settings):
    """A Variable's next value still gets the Variable's own buffer under jit_compile=True."""
    nf_settings(numba="sync")
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((256, 128)).astype(np.float32)
    gr = rng.standard_normal((256, 128)).astype(np.float32)
    w = nf.Variable(w0.copy())
    f = nf.function(lambda g: w.assign_sub(g * 0.5 + g * g), jit_compile=True)
    assert policy.pooled_results_pay is not None
    want, buf = w0, None
    for _ in range(CALLS):
        f(gr)
        if buf is not None:
            assert w._value._v is buf()
        buf = weakref.ref(w._value._v)
        want = want - (gr * np.float32(0.5) + gr * gr)
        assert_bits_equal(w.numpy(), want)
