"""Tier 1 on several threads: an elementwise region's one-thread kernel shared chunk by chunk
between the calling thread and helper threads (`blocks.Split`, `blocks.run_split`), and the
helpers' hand-out (`blocks.share`). Results are the one thread's bit for bit, in both
contracts (NumPy's bits by default; under jit_compile=True the same bits on any number of
threads), for chunks that end mid-vector, operands broadcast along either collapsed dim, and
results written over an operand."""
import importlib.util
import threading

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import blocks, planner
from ndflow.graph.kernels.planner import Route
from helpers import assert_bits_equal

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]


@pytest.fixture
def shared(monkeypatch, nf_settings):
    """Tier 1 compiled in the call from few elements, split from 2**12 elements into chunks
    of 1000 elements (so chunks end mid-vector), every call on `threads` threads (no timing
    choice); records each shared call's thread count."""
    nf_settings(numba="sync", numba_min=1, numba_parallel_min=1 << 12,
                numba_parallel_heavy_min=1 << 12)
    monkeypatch.setattr(planner, "SPLIT_ELEMENTS", 1000)
    monkeypatch.setattr(planner, "SPLIT_PER_THREAD", 1 << 40)
    monkeypatch.setattr(blocks, "ADAPT", False)
    calls = []
    real = blocks.run_split

    def spy(sp, nt, kernel, args, nd, sliced):
        calls.append(nt)
        return real(sp, nt, kernel, args, nd, sliced)
    monkeypatch.setattr(blocks, "run_split", spy)
    return calls


def _specials(n, rng):
    fi = np.finfo(np.float32)
    a = (rng.standard_normal(n) * 40).astype(np.float32)
    sp = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, fi.tiny,
                   fi.smallest_subnormal, fi.max, -fi.max, 88.72284, -103.97, -104.0],
                  np.float32)
    a[:: max(1, n // 97)][:sp.size] = sp[:a[:: max(1, n // 97)].size]
    return a


def _region(f, *args):
    fk, = fusion.fused_kernels(f.get_concrete_function(*args).graph)
    return fk


def _check_sigmoid(got, a, jit):
    """`got` is NumPy's sigmoid of `a` bit for bit, or under jit_compile=True within the
    accuracy bound (NaN where NumPy's is)."""
    with np.errstate(all="ignore"):
        ref = 1 / (1 + np.exp(-a))
    if not jit:
        assert_bits_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=4e-7, atol=0)
        assert_bits_equal(np.isnan(got), np.isnan(ref))


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("nthreads", [2, 3])
def test_split_sigmoid_is_the_one_threads_bits(shared, nf_settings, jit, nthreads):
    """The sigmoid on 2 and 3 threads: NumPy's bits by default, the one-thread kernel's bits
    under jit_compile=True (within the accuracy bound of NumPy's); every call after the first
    shared (no numba-parallel kernel compiled)."""
    rng = np.random.default_rng(5)
    a = _specials((1 << 14) + 7, rng)

    def sig(x):
        return 1 / (1 + tnp.exp(-x))
    nf_settings(threads=1)
    one = nf.function(sig, jit_compile=jit)
    for _ in range(4):         # (the first calls run tier 0, before the region is hot)
        want_one = one(tnp.asarray(a)).numpy()
    assert _region(one, tnp.asarray(a)).tier() == 1 and not shared
    nf_settings(threads=nthreads)
    f = nf.function(sig, jit_compile=jit)
    for _ in range(4):
        f(tnp.asarray(a))
    del shared[:]
    for _ in range(3):
        assert_bits_equal(f(tnp.asarray(a)).numpy(), want_one)
    assert shared == [nthreads] * 3, shared
    _check_sigmoid(want_one, a, jit)
    fk = _region(f, tnp.asarray(a))
    assert fk.tier() == 1
    plan, = fk.runner.plans.values()
    assert plan.split is not None and plan.split.nthreads == nthreads
    assert plan.parallel_kernel is None
    assert Route.T1_THREADS.value in planner.explain(f)


def test_split_with_operands_broadcast_along_either_dim(shared, nf_settings):
    """A (37, 1000) region with a row (1000,) and a column (37, 1) operand: chunks of one
    row each slice the column and the result, and pass the row whole."""
    nf_settings(threads=2)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((37, 1000)).astype(np.float32)
    row = rng.standard_normal(1000).astype(np.float32)
    col = rng.standard_normal((37, 1)).astype(np.float32)
    f = nf.function(lambda x, r, c: tnp.exp(x * r - c) + c)
    want = np.exp(x * row - col) + col
    for _ in range(6):
        assert_bits_equal(f(x, row, col).numpy(), want)
    assert shared and set(shared) == {2}
    fk = _region(f, x, row, col)
    plan, = fk.runner.plans.values()
    assert plan.dims == (37, 1000) and plan.split.rows == 1 and plan.split.nchunks == 37


def test_split_results_written_over_an_operand(shared, nf_settings):
    """A Variable updated in place by a large region (its result given the Variable's own
    buffer): shared between threads, the values are NumPy's step after step."""
    nf_settings(threads=2)
    rng = np.random.default_rng(7)
    v0 = rng.standard_normal((1 << 13) + 3).astype(np.float32)
    v = nf.Variable(v0)

    @nf.function
    def step():
        v.assign(tnp.exp(-tnp.abs(v)) * 0.5 + v)

    want = v0.copy()
    for _ in range(6):
        step()
        want = np.exp(-np.abs(want)) * np.float32(0.5) + want
        assert_bits_equal(v.numpy(), want)
    assert shared


@pytest.mark.parametrize("jit", [False, True])
def test_timed_choice_retries_and_keeps_the_bits(nf_settings, monkeypatch, jit):
    """The timed choice on a clock that jumps RETRY_SECONDS at each reading (each call
    looks long since the last try): after the warm-up the way not chosen is tried again
    and again, so calls run on one thread and on two in turn, and every result is the one
    thread's bit for bit (NumPy's by default, within the accuracy bound under
    jit_compile=True)."""
    nf_settings(numba="sync", numba_min=1, numba_parallel_min=1 << 12,
                numba_parallel_heavy_min=1 << 12, threads=1)
    monkeypatch.setattr(planner, "SPLIT_ELEMENTS", 1000)
    monkeypatch.setattr(blocks, "ADAPT", True)
    now = [0.0]

    def clock():
        now[0] += blocks.RETRY_SECONDS
        return now[0]
    monkeypatch.setattr(blocks, "clock", clock)
    used = []
    real = blocks.ThreadChoice.record

    def record(self, nt, seconds):
        used.append(nt)
        return real(self, nt, seconds)
    monkeypatch.setattr(blocks.ThreadChoice, "record", record)
    a = _specials((1 << 14) + 5, np.random.default_rng(9))

    def sig(x):
        return 1 / (1 + tnp.exp(-x))
    one = nf.function(sig, jit_compile=jit)
    for _ in range(4):
        want = one(a).numpy()
    assert not used
    nf_settings(threads=2)
    f = nf.function(sig, jit_compile=jit)
    n = 1 + 2 * blocks.WARM + 24
    for _ in range(200):
        k = len(used)
        got = f(a).numpy()
        if len(used) > k:      # (a tier-1 call: the first calls run tier 0, NumPy's exp)
            assert_bits_equal(got, want)
        if len(used) >= n:
            break
    after = used[1 + 2 * blocks.WARM:]
    assert len(after) >= 24, used
    assert 1 in after and 2 in after and after.count(min(after, key=after.count)) >= 3, used
    _check_sigmoid(want, a, jit)


def test_one_thread_setting_never_shares(shared, nf_settings):
    nf_settings(threads=1)
    a = np.linspace(-5, 5, 1 << 14, dtype=np.float32)
    f = nf.function(lambda x: 1 / (1 + tnp.exp(-x)), jit_compile=True)
    for _ in range(3):
        f(a)
    assert not shared
    plan, = _region(f, a).runner.plans.values()
    assert plan.split is None


def test_share_does_not_wait_for_a_helper_not_started():
    """A helper whose thread is busy (here: blocked) when the caller's part is done never runs
    the call's work, and the call returns without waiting for it."""
    release = threading.Event()
    started = threading.Event()

    def block():
        started.set()
        release.wait(10)
    q = blocks._helpers(1)[0]
    q.put(block)
    assert started.wait(10)
    ran = []
    counter = iter(range(10))

    def work():
        for c in counter:
            ran.append((threading.get_ident(), c))
    try:
        blocks.share(2, work)
        assert [c for _, c in ran] == list(range(10))
        assert {t for t, _ in ran} == {threading.get_ident()}
    finally:
        release.set()
    done = threading.Event()
    q.put(done.set)
    assert done.wait(10)
    assert len(ran) == 10         # the closed gate ran nothing


def test_share_uses_the_helpers_and_waits_for_their_chunks():
    """Chunks taken by helpers are finished before share returns."""
    counter = iter(range(64))
    done = []
    lock = threading.Lock()

    def work():
        for c in counter:
            x = np.ones(20000)
            for _ in range(5):
                x = np.exp(x * 1e-3)     # releases the GIL for a while
            with lock:
                done.append(c)
    blocks.share(3, work)
    assert sorted(done) == list(range(64))


def test_split_chunks_grow_with_the_region(nf_settings, monkeypatch):
    """Chunks of at least SPLIT_ELEMENTS, SPLIT_PER_THREAD per thread on larger regions."""
    nf_settings(numba="sync", numba_min=1, numba_parallel_min=1 << 12,
                numba_parallel_heavy_min=1 << 12, threads=2)
    monkeypatch.setattr(planner, "SPLIT_ELEMENTS", 1 << 12)
    for n, rows in ((1 << 14, 1 << 12), (1 << 18, 1 << 14)):
        a = np.linspace(-3, 3, n, dtype=np.float32)
        f = nf.function(lambda x: tnp.exp(x) * 2.0)
        for _ in range(4):
            f(a)
        plan, = _region(f, a).runner.plans.values()
        assert plan.split.rows == rows and plan.split.nthreads == 2


def test_split_rows():
    sp = blocks.Split((10, 300), 1000, 4)
    assert (sp.rows, sp.nchunks, sp.nthreads) == (3, 4, 4)
    sp = blocks.Split((5, 10_000), 1000, 8)
    assert (sp.rows, sp.nchunks, sp.nthreads) == (1, 5, 5)
    sp = blocks.Split((1, 10_000), 1000, 2)
    assert sp.nthreads == 1
