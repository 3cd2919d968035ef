"""Tier 1's replicas of NumPy's SIMD float32 `exp` and `log` (graph/kernels/replica.py): bit
for bit NumPy's on every input tried, fused into compiled regions with NumPy's values, and refused
(tier 0, with the reason) where NumPy's loop is not the one reproduced or the replica does not
match it in this process.

NDFLOW_EXHAUSTIVE=1 runs the comparison over all 2**32 float32 bit patterns (~20 s a
function); both passed on the AVX-512 machine they were written on. The default run compares ~5M values:
every bit pattern at a stride, and every float where the algorithm changes regime."""
import importlib.util
import os

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import planner, replica
from helpers import assert_bits_equal

F32 = np.dtype(np.float32)
needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed")
# where NumPy's exp is the C library's (not x86-64 v3/v4), nothing is replicated: the tests
# that need the replica say so, and test_refused_* checks the refusal on every machine
offered = pytest.mark.skipif(replica.why_not("exp", F32) is not None,
                             reason=str(replica.why_not("exp", F32)))
pytestmark = [needs_numba, pytest.mark.filterwarnings("ignore::RuntimeWarning")]


def _run_replica(name, x):
    from numba import njit
    fn = replica.functions()[replica.kernel_name(name, F32)]

    @njit(error_model="numpy")
    def run(a, out):
        for j in range(a.size):
            out[j] = fn(a[j])
    out = np.empty_like(x)
    run(x, out)
    return out


def _check(name, x):
    """The replica's bits are NumPy's, NaN payloads included (NumPy returns its one quiet NaN
    for every NaN input, and log its negative one for x < 0)."""
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    got = _run_replica(name, x)
    bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad.size == 0, [(hex(int(x.view(np.uint32)[i])), got[i], want[i]) for i in bad[:5]]


def _range(lo, hi):
    """Every float32 from lo to hi (same sign)."""
    a, b = np.array([lo, hi], np.float32).view(np.int32)
    a, b = min(a, b), max(a, b)
    return np.arange(a, b + 1, dtype=np.int64).astype(np.int32).view(np.float32)


NAMES = ["exp", "log"]
SPECIAL_BITS = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0, 0x80000000,
                         0x7F800001, 0x7FBFFFFF, 0xFFC00001, 0xFFFFFFFF, 1, 0x80000001,
                         0x00800000, 0x007FFFFF, 0x7F7FFFFF, 0xFF7FFFFF], np.uint32)
# where each algorithm changes regime
RANGES = {
    # subnormal results, both sides of the overflow limit, x*log2(e) near +-0.5, small x
    "exp": [(-104.5, -87.0), (88.0, 89.0), (-0.36, -0.34), (0.34, 0.36), (1e-3, 1.05e-3),
            (-1.05e-3, -1e-3), (-1e-42, -0.0), (0.0, 1e-42)],
    # subnormal and smallest normal inputs, the mantissa's sqrt(1/2) split, x near 1,
    # the largest floats, negative inputs
    "log": [(1e-45, 1e-41), (1.1e-38, 1.2e-38), (0.70710, 0.70712), (1.41420, 1.41423),
            (0.999, 1.001), (3.3e38, 3.4028235e38), (-1.001, -0.999), (-1e-40, -0.0)],
}


@offered
@pytest.mark.parametrize("name", NAMES)
def test_probe_and_strided_bit_patterns(name):
    assert replica.verify(name, F32) is None
    _check(name, replica.probe())
    rng = np.random.default_rng(7)
    start = int(rng.integers(0, 61))
    _check(name, np.arange(start, 2 ** 32, 1021, dtype=np.uint64).astype(np.uint32)
           .view(np.float32))


@offered
@pytest.mark.parametrize("name", NAMES)
def test_every_float_where_the_regime_changes(name):
    for lo, hi in RANGES[name]:
        _check(name, _range(lo, hi))
    _check(name, SPECIAL_BITS.view(np.float32))


@offered
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.skipif(os.environ.get("NDFLOW_EXHAUSTIVE") != "1",
                    reason="all 2**32 inputs: set NDFLOW_EXHAUSTIVE=1 (~20 s)")
def test_all_float32_inputs(name):
    step = 1 << 24
    for k in range(1 << 8):
        _check(name, np.arange(k * step, (k + 1) * step, dtype=np.uint64).astype(np.uint32)
               .view(np.float32))


# ------------------------------------------------------------------ in compiled regions
@pytest.fixture
def tier1(monkeypatch, nf_settings):
    nf_settings(numba="sync")
    nf_settings(fast_math=False)
    nf_settings(numba_min=1)


def _specials():
    fi = np.finfo(np.float32)
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, fi.tiny, fi.smallest_subnormal,
                     fi.max, -fi.max, 88.72283, 88.72284, -87.33, -103.97, -104.0, 1e-30,
                     -1e-30], np.float32)


def _sigmoid(np_, a, b):
    return 1 / (1 + np_.exp(-a))


def _exp_fma(np_, a, b):
    return np_.exp(a) * b + 1.0


def _shifted(np_, a, b):
    return np_.exp(a - b) / (b * b + 1.0)


def _select(np_, a, b):
    return np_.where(a > 0, np_.exp(-a), np_.exp(a) * 2.0)


def _log_loss(np_, a, b):
    return -(b * np_.log(a) + (1.0 - b) * np_.log(1.0 - a))


def _log_exp(np_, a, b):
    return np_.log(np_.exp(a) + np_.exp(b))


REGIONS = {f.__name__[1:]: f for f in (_sigmoid, _exp_fma, _shifted, _select, _log_loss,
                                       _log_exp)}


def _tier_and_result(f, *args):
    with np.errstate(all="ignore"):
        for _ in range(4):
            out = f(*args)
    fk, = fusion.fused_kernels(f.get_concrete_function(*args).graph)
    return fk, out


@offered
@pytest.mark.parametrize("name", sorted(REGIONS))
@pytest.mark.parametrize("n", [1, 7, 1000, 40000])
def test_regions_with_exp_run_on_tier1_as_numpy(tier1, name, n):
    fn = REGIONS[name]
    rng = np.random.default_rng(n)
    a = np.concatenate([rng.standard_normal(n) * 40, _specials()]).astype(np.float32)
    b = np.concatenate([_specials()[::-1], rng.standard_normal(n)]).astype(np.float32)
    f = nf.function(lambda x, y: fn(tnp, x, y))
    fk, got = _tier_and_result(f, tnp.asarray(a), tnp.asarray(b))
    assert fk.tier() == 1, fk.tier1_unavailable
    with np.errstate(all="ignore"):
        want = fn(np, a, b)
    assert_bits_equal(got.numpy(), want)
    # a vectorized_map of the same function agrees too (it runs the same region batched)
    with np.errstate(all="ignore"):
        vm = nf.vectorized_map(lambda t: fn(tnp, t[0], t[1]),
                               tnp.stack([tnp.asarray(a), tnp.asarray(b)], axis=1))
    assert_bits_equal(vm.numpy(), want)


@offered
@pytest.mark.parametrize("nthreads", [1, 2])
def test_thread_choice_and_two_thread_kernel(tier1, monkeypatch, nthreads, nf_settings):
    """From `settings.numba_parallel_heavy_min` elements a region with exp times one thread against two and runs
    the faster (both give NumPy's bits); `settings.threads = 1` keeps it to one."""
    nf_settings(numba_parallel_heavy_min=1 << 12)
    nf_settings(threads=nthreads)
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(1 << 14) * 60).astype(np.float32)
    f = nf.function(lambda x, y: _sigmoid(tnp, x, y))
    with np.errstate(all="ignore"):
        want = 1 / (1 + np.exp(-a))
        for _ in range(8):
            assert_bits_equal(f(tnp.asarray(a), tnp.asarray(a)).numpy(), want)
    fk, = fusion.fused_kernels(f.get_concrete_function(tnp.asarray(a), tnp.asarray(a)).graph)
    assert fk.tier() == 1
    plan = fk.runner.static_plan or next(iter(fk.runner.plans.values()))
    # the two-thread kernel is not compiled during the first PAR_AFTER calls
    assert plan.choice is None and plan.parallel_kernel is None
    monkeypatch.setattr(planner, "PAR_AFTER", 0)
    with np.errstate(all="ignore"):
        for _ in range(8):
            assert_bits_equal(f(tnp.asarray(a), tnp.asarray(a)).numpy(), want)
    if nthreads == 1:
        assert plan.choice is None and plan.parallel_kernel is None
    else:
        assert plan.parallel_kernel is not None and plan.kernel is not None
        assert set(plan.choice.samples) == {1, 2}


@offered
def test_raise_mode_still_raises_as_numpy(tier1):
    """Tier 1 sets no error flags, so under np.errstate(over='raise') the region runs on
    tier 0 and overflows raise as NumPy's loop does."""
    f = nf.function(lambda a: tnp.exp(a) + 1.0)
    x = tnp.asarray(np.full(100, 100.0, np.float32))
    fk, _ = _tier_and_result(f, x)
    assert fk.tier() == 1
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            np.exp(np.full(100, 100.0, np.float32))
        with pytest.raises(FloatingPointError):
            f(x)


def test_refused_where_numpys_loop_is_another(tier1, monkeypatch):
    """A baseline build (NumPy calls the C library's expf) or a replica that failed its check
    leaves exp regions on tier 0, and the region says why."""
    monkeypatch.setattr(replica, "_why", {})
    monkeypatch.setattr(replica, "dispatch_target", lambda name, dtype: "X86_V2")
    assert "X86_V2" in replica.why_not("exp", F32) and "X86_V2" in replica.why_not("log", F32)
    f = nf.function(lambda a: tnp.exp(a) * 3.0)
    x = np.linspace(-5, 5, 3000, dtype=np.float32)
    fk, got = _tier_and_result(f, tnp.asarray(x))
    assert fk.tier() == 0 and "X86_V2" in fk.tier1_unavailable
    assert_bits_equal(got.numpy(), np.exp(x) * np.float32(3.0))

    monkeypatch.setattr(replica, "_why", {})
    monkeypatch.setattr(replica, "dispatch_target", lambda name, dtype: "X86_V4")
    monkeypatch.setattr(replica, "_verified", {("exp", F32): "differs (forced by the test)"})
    assert replica.why_not("exp", F32) == "differs (forced by the test)"
    g = nf.function(lambda a: tnp.exp(a) * 5.0)
    fk, got = _tier_and_result(g, tnp.asarray(x))
    assert fk.tier() == 0 and "forced by the test" in fk.tier1_unavailable
    assert_bits_equal(got.numpy(), np.exp(x) * np.float32(5.0))


def test_no_replica_for_other_functions_and_dtypes():
    for name, dt in [("exp", np.float64), ("log", np.float64), ("tanh", np.float32),
                     ("expm1", np.float32)]:
        assert replica.why_not(name, dt).startswith("no replica")


@offered
def test_a_lone_log_stays_with_numpys_loop(tier1):
    """The log replica's loop is ~25% slower than NumPy's alone (AVX-512's getexp/getmant are
    an instruction each): one op is never a region, so it pays only fused with more."""
    x = np.linspace(0.5, 5, 3000, dtype=np.float32)
    f = nf.function(lambda a: tnp.log(a))
    for _ in range(4):
        got = f(tnp.asarray(x))
    assert fusion.fused_kernels(f.get_concrete_function(tnp.asarray(x)).graph) == []
    assert_bits_equal(got.numpy(), np.log(x))
    g = nf.function(lambda a: tnp.log(a) * 2.0)
    fk, got = _tier_and_result(g, tnp.asarray(x))
    assert fk.tier() == 1
    assert_bits_equal(got.numpy(), np.log(x) * np.float32(2.0))
