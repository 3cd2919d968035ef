"""Sums on tier 1 in NumPy's order (issue 13: the bias gradient `sum((h > 0) * g, axis=0)`,
`sum(exp(z), axis=1)`, `mean(square(d))` run as one compiled loop).

NumPy 2.4's `add.reduce` of a float32/float64 array (what tier 0 calls on the region's
C-ordered temporary) drops unit dims, merges the others, and then:
- reduces the trailing dims with its pairwise sum (8 accumulators over blocks of up to 128,
  longer runs split at half rounded down to a multiple of 8), the whole row in one piece, added
  to 0.0 (so a sum of -0.0s is +0.0);
- reduces leading dims row after row, elementwise, from 0.0;
- anything else (a middle dim, alternating dims) mixes the two: tier 1 refuses those.
Each claim is checked here bit for bit (NaN positions; every other value's bits, -0.0
included) against NumPy, and each compiled region is checked to have run on tier 1."""
import importlib.util

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import numba_plan, numba_runner, numba_source, planner
from helpers import assert_bits_equal

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

DTYPES = [np.float32, np.float64]


def _data(rng, shape, dtype, kind):
    n = int(np.prod(shape))
    if kind == "normal":
        x = rng.standard_normal(n)
    elif kind == "magnitudes":       # mixed signs and magnitudes: every rounding shows
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)
    elif kind == "negzero":
        x = np.full(n, -0.0)
    elif kind == "offset":           # large common part: the order decides the low bits
        x = rng.uniform(0, 1, n) * 1e4 + 1
    else:                            # a few NaN, inf, -inf, -0.0 among normal values
        x = rng.standard_normal(n)
        if n:
            picks = rng.integers(0, n, max(1, n // 50))
            x[picks] = rng.choice([np.nan, np.inf, -np.inf, -0.0], picks.size)
    return x.astype(dtype).reshape(shape)


KINDS = ["normal", "magnitudes", "negzero", "offset", "special"]


_bits_equal = assert_bits_equal


@pytest.mark.parametrize("dtype", DTYPES)
def test_pairwise_helper_is_numpys_sum(dtype):
    """The kernels' pairwise sum, added to 0 as NumPy's reduce loop does, over lengths around
    every block edge (8, 128, and NumPy's buffer size 8192: a contiguous row is not split)."""
    from numba import njit
    ns = {"np": np, "njit": njit}
    exec(numba_source._PAIRWISE_SRC, ns)
    pw = ns["_pairwise"]
    rng = np.random.default_rng(7)
    T = np.dtype(dtype).type
    st = (np.empty(128, np.int64), np.empty(128, np.int64), np.zeros(128, np.int8),
          np.empty(128, dtype))
    sizes = list(range(0, 260)) + [383, 384, 385, 1000, 1031, 8191, 8192, 8193, 16385,
                                   20000, 24577, 100003]
    for n in sizes:
        for kind in KINDS:
            x = _data(rng, (n,), dtype, kind)
            with np.errstate(all="ignore"):
                _bits_equal(T(0) + pw(x, n, T(-0.0), *st), np.add.reduce(x))


@pytest.fixture
def tier1(monkeypatch, nf_settings):
    """Tier 1 compiled in the call, for every size; each tier-1 call's outcome recorded."""
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    nf_settings(numba_min=1)
    # pairwise sums at every size (the cost model keeps large ones on NumPy's sum)
    monkeypatch.setattr(numba_plan, "PAIRWISE_MAX", 1 << 62)
    ran = []
    call = numba_runner.Runner.__call__
    # every call through the runner, where the spy sees it (not the generated caller in the
    # kernel's place, `planner.direct`: the same text as the runner's own)
    real_direct = planner.direct
    monkeypatch.setattr(planner, "direct", lambda fk, fn, **attrs: None if attrs.get(
        "quick_call") else real_direct(fk, fn, **attrs))

    def spy(self, xs, donors=None):
        r = call(self, xs, donors)
        ran.append(r is not NotImplemented)
        return r
    monkeypatch.setattr(numba_runner.Runner, "__call__", spy)
    return ran


def _spec(dtype, nd):
    return nf.TensorSpec((None,) * nd, dtype)


# (program, its NumPy form, operand shapes for a base shape (m, n) or (a, b, c)):
# a dynamic signature, so each layout compiles once and then runs at every shape
CASES = {
    # leading axis of 2-d: row after row (the bias gradient)
    "cols": (lambda h, g: tnp.sum((h > 0) * g, axis=0),
             lambda h, g: np.sum((h > 0) * g, axis=0), 2),
    # trailing axis: one pairwise sum per row
    "rows": (lambda x, y: tnp.sum(x * y + 1.0, axis=1, keepdims=True),
             lambda x, y: np.sum(x * y + 1.0, axis=1, keepdims=True), 2),
    # everything: one pairwise sum over the C-ordered elements (mean's sum)
    "full": (lambda x, y: tnp.mean(tnp.square(x - y)),
             lambda x, y: np.mean(np.square(x - y)), 2),
    # leading axis of 3-d, two kept dims
    "cols3": (lambda x, y: tnp.sum(tnp.abs(x) - y, axis=0),
              lambda x, y: np.sum(np.abs(x) - y, axis=0), 3),
    # trailing two axes of 3-d
    "rows3": (lambda x, y: tnp.sum(x * y, axis=(1, 2)),
              lambda x, y: np.sum(x * y, axis=(1, 2)), 3),
}

SHAPES2 = [(1, 1), (1, 7), (7, 1), (2, 8), (3, 9), (5, 127), (4, 128), (3, 129), (129, 3),
           (300, 64), (64, 300), (2, 1000), (1, 8193), (2, 8192), (8193, 2), (1, 20000),
           (0, 5), (5, 0)]
SHAPES3 = [(1, 1, 1), (2, 3, 4), (3, 1, 9), (2, 16, 8), (4, 33, 5), (2, 2, 129), (3, 100, 90),
           (1, 130, 1), (0, 2, 3)]


@pytest.mark.parametrize("case,dtype", [(c, d) for c in sorted(CASES) for d in DTYPES
                                        if d == np.float32 or c in ("cols", "rows", "full")])
def test_sum_regions_run_on_tier1_bit_for_bit(tier1, case, dtype):
    fn, npfn, nd = CASES[case]
    f = nf.function(fn, input_signature=[_spec(dtype, nd), _spec(dtype, nd)])
    rng = np.random.default_rng(len(case) * 10 + nd)
    shapes = SHAPES2 if nd == 2 else SHAPES3
    base = (6, 40) if nd == 2 else (3, 5, 7)
    for _ in range(4):                       # tier 1 is requested after a few calls
        f(tnp.asarray(_data(rng, base, dtype, "normal")),
          tnp.asarray(_data(rng, base, dtype, "normal")))
    for shape in shapes:
        for kind in KINDS:
            x, y = _data(rng, shape, dtype, kind), _data(rng, shape, dtype, "special")
            del tier1[:]
            got = f(tnp.asarray(x), tnp.asarray(y))
            with np.errstate(all="ignore"):
                want = npfn(x, y)
            _bits_equal(got.numpy(), np.asarray(want))
            # every non-empty shape ran compiled
            assert tier1 == [True] or x.size == 0, (shape, tier1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_static_bias_gradient_and_keepdims(tier1, dtype):
    """Static shapes (the MLP's bias gradient at batch 512 and a row sum with keepdims)."""
    rng = np.random.default_rng(3)
    h = _data(rng, (512, 64), dtype, "special")
    g = _data(rng, (512, 64), dtype, "magnitudes")
    def bias_grad(np_, h, g):
        return np_.sum((h > 0) * g, axis=0)

    def row_sums(np_, h, g):
        return np_.sum(np_.maximum(h, 0.0) * g, axis=-1, keepdims=True)

    def total(np_, h, g):
        return np_.sum(h * g)

    for program in (bias_grad, row_sums, total):
        f = nf.function(lambda h, g, program=program: program(tnp, h, g))
        npfn = lambda h, g, program=program: program(np, h, g)  # noqa: E731
        for _ in range(4):
            got = f(tnp.asarray(h), tnp.asarray(g))
        del tier1[:]
        got = f(tnp.asarray(h), tnp.asarray(g))
        assert tier1 == [True]
        with np.errstate(all="ignore"):
            _bits_equal(got.numpy(), np.asarray(npfn(h, g)))


def test_other_layouts_are_refused_with_the_reason(tier1):
    """A sum over a middle dim (NumPy: pairwise along it? no: row after row per outer index,
    mixed with the inner loop) and a sum of a broadcast operand stay on tier 0, saying why,
    with NumPy's values."""
    rng = np.random.default_rng(5)
    x = _data(rng, (6, 50, 40), np.float32, "special")
    y = _data(rng, (6, 50, 40), np.float32, "magnitudes")
    f = nf.function(lambda x, y: tnp.sum(x * y, axis=1))
    for _ in range(4):
        got = f(tnp.asarray(x), tnp.asarray(y))
    with np.errstate(all="ignore"):
        _bits_equal(got.numpy(), np.sum(x * y, axis=1))
    fk, = fusion.fused_kernels(f.get_concrete_function(tnp.asarray(x), tnp.asarray(y)).graph)
    assert fk.tier() == 0
    assert "not in an order this tier reproduces" in fk.tier1_unavailable
    assert True not in tier1


def test_fast_math_keeps_loop_order_sums(monkeypatch, nf_settings):
    """`settings.fast_math` still compiles every layout (within rounding of NumPy's sum)."""
    nf_settings(numba="sync")
    nf_settings(fast_math=True)
    nf_settings(numba_min=1)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 50, 40)).astype(np.float32)
    f = nf.function(lambda x: tnp.sum(x * x, axis=1))
    for _ in range(4):
        got = f(tnp.asarray(x))
    fk, = fusion.fused_kernels(f.get_concrete_function(tnp.asarray(x)).graph)
    assert fk.tier() == 1
    np.testing.assert_allclose(got.numpy(), np.sum(x * x, axis=1), rtol=1e-5)


def test_a_refused_sum_is_split_off_its_region(monkeypatch, nf_settings):
    """A region tier 1 would run but for its sum's layout (here a middle axis) leaves the sum
    to NumPy: the elementwise part compiles, the sum follows on tier 0; NumPy's bits."""
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    from ndflow.primitives.reduction import reduce_sum_p
    rng = np.random.default_rng(2)
    x = _data(rng, (8, 64, 64), np.float32, "special")
    y = _data(rng, (8, 64, 64), np.float32, "magnitudes")
    f = nf.function(lambda x, y: tnp.sum(tnp.where(x > 0, x * y, -y), axis=1))
    for _ in range(4):
        got = f(tnp.asarray(x), tnp.asarray(y))
    with np.errstate(all="ignore"):
        _bits_equal(got.numpy(), np.sum(np.where(x > 0, x * y, -y), axis=1))
    graph = f.get_concrete_function(tnp.asarray(x), tnp.asarray(y)).graph
    fk, = fusion.fused_kernels(graph)
    assert fk.tier() == 1 and not any(o.reduce for o in fk.prog.ops)
    assert any(n.prim is reduce_sum_p for n in graph.nodes)


def test_cost_model_leaves_large_pairwise_sums_to_numpy(monkeypatch, nf_settings):
    """By default a large sum over rows (or everything) is split off its region: the compiled
    elementwise loop and NumPy's SIMD sum after it are faster (`PAIRWISE_MAX`); a sum along
    the leading axis stays in the region."""
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    from ndflow.primitives.reduction import reduce_sum_p
    rng = np.random.default_rng(4)
    x = _data(rng, (64, 256), np.float32, "special")
    y = _data(rng, (64, 256), np.float32, "normal")
    for axis, whole in ((1, False), (None, False), (0, True)):
        f = nf.function(lambda x, y, axis=axis: tnp.sum(tnp.where(x > y, x * y, y - x),
                                                        axis=axis))
        for _ in range(4):
            got = f(tnp.asarray(x), tnp.asarray(y))
        with np.errstate(all="ignore"):
            _bits_equal(got.numpy(), np.sum(np.where(x > y, x * y, y - x), axis=axis))
        graph = f.get_concrete_function(tnp.asarray(x), tnp.asarray(y)).graph
        fk, = fusion.fused_kernels(graph)
        assert fk.tier() == 1
        assert any(o.reduce for o in fk.prog.ops) == whole, axis
        assert any(n.prim is reduce_sum_p for n in graph.nodes) != whole, axis
