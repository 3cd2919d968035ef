"""Tier 1 on several threads: an elementwise region's parallel kernel is numba's parallel loop
over chunks of rows, each chunk a call of the region's one-thread kernel
(`numba_source._Text.chunks`), timed against one thread; and the helper threads that tier 0's
chunks use (`blocks.share`). Results are the one thread's bit for bit, in both contracts
(NumPy's bits by default; under jit_compile=True the same bits on any number of threads), for
chunks that end mid-vector, operands broadcast along either collapsed dim, and results
written over an operand."""
import importlib.util
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import blocks, numba_runner, numba_source, planner
from ndflow.graph.kernels.planner import Route
from helpers import assert_bits_equal

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]


@pytest.fixture
def parallel(monkeypatch, nf_settings):
    """Tier 1 compiled in the call from few elements, its parallel kernel from 2**12 elements
    and at once (no PAR_AFTER one-thread calls first), every call on `threads` threads (no
    timing choice); records the thread count of each call that runs the parallel kernel."""
    nf_settings(numba="sync", numba_min=1, numba_parallel_min=1 << 12,
                numba_parallel_heavy_min=1 << 12)
    monkeypatch.setattr(planner, "PAR_AFTER", 0)
    monkeypatch.setattr(blocks, "ADAPT", False)
    calls = []
    real = numba_runner.parallel_threads

    def spy(n):
        calls.append(n)
        return real(n)
    monkeypatch.setattr(numba_runner, "parallel_threads", spy)
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
def test_parallel_sigmoid_is_the_one_threads_bits(parallel, nf_settings, jit, nthreads):
    """The sigmoid on 2 and 3 threads (more than this machine may have: numba's pool caps
    it): NumPy's bits by default, the one-thread kernel's bits under jit_compile=True (within
    the accuracy bound of NumPy's), on 2**14 + 7 elements (chunks of 342: they end
    mid-vector); every call after the first runs the parallel kernel."""
    rng = np.random.default_rng(5)
    a = _specials((1 << 14) + 7, rng)

    def sig(x):
        return 1 / (1 + tnp.exp(-x))
    nf_settings(threads=1)
    one = nf.function(sig, jit_compile=jit)
    for _ in range(4):         # (the first calls run tier 0, before the region is hot)
        want_one = one(tnp.asarray(a)).numpy()
    assert _region(one, tnp.asarray(a)).tier() == 1 and not parallel
    nf_settings(threads=nthreads)
    f = nf.function(sig, jit_compile=jit)
    for _ in range(4):
        f(tnp.asarray(a))
    del parallel[:]
    for _ in range(3):
        assert_bits_equal(f(tnp.asarray(a)).numpy(), want_one)
    assert parallel == [nthreads] * 3, parallel
    _check_sigmoid(want_one, a, jit)
    fk = _region(f, tnp.asarray(a))
    assert fk.tier() == 1
    plan, = fk.runner.plans.values()
    assert plan.parallel_kernel is not None and plan.parallel_kernel is not plan.kernel
    assert "fused_kernel_rows(hi - lo, x0[lo:hi], x1, o0[lo:hi])" in \
        plan.parallel_kernel.ndflow_source
    assert Route.T1_THREADS.value in planner.explain(f)


def test_parallel_with_operands_broadcast_along_either_dim(parallel, nf_settings):
    """A (37, 1000) region with a row (1000,) and a column (37, 1) operand: the chunks (one
    row each) slice the column, the matrix and the result, and pass the row whole."""
    nf_settings(threads=2)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((37, 1000)).astype(np.float32)
    row = rng.standard_normal(1000).astype(np.float32)
    col = rng.standard_normal((37, 1)).astype(np.float32)
    f = nf.function(lambda x, r, c: tnp.exp(x * r - c) + c)
    want = np.exp(x * row - col) + col
    for _ in range(6):
        assert_bits_equal(f(x, row, col).numpy(), want)
    assert parallel and set(parallel) == {2}
    fk = _region(f, x, row, col)
    plan, = fk.runner.plans.values()
    assert plan.dims == (37, 1000)
    src = plan.parallel_kernel.ndflow_source
    assert "fused_kernel_rows(hi - lo, d1, x0[lo:hi], x1, x2[lo:hi], o0[lo:hi])" in src, src


def test_parallel_results_written_over_an_operand(parallel, nf_settings):
    """A Variable updated in place by a large region (its result given the Variable's own
    buffer): on two threads the values are NumPy's step after step."""
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
    assert parallel


def test_parallel_kernel_text():
    """The chunks' loop around the one-thread kernel: only operands and results that span
    the outermost collapsed dim are sliced; a sum keeps numba's parallel loop around its
    element loop (no chunks: its rows' sums are the loop's own)."""
    from ndflow.graph.kernels.numba_plan import Plan
    x = nf.function(lambda a, b: a * b + 1.0)
    a = np.ones((64, 3), np.float32)
    b = np.ones((1, 3), np.float32)
    for _ in range(2):
        x(a, b)
    fk = _region(x, a, b)
    plan = Plan(fk.prog, [sh for sh, _ in fk.prog.ins], False)
    src = numba_source._kernel_source(fk.prog, plan, True, "k")
    assert "def k_rows(" in src and "parallel=False" in src
    assert "for c in prange(" in src and "k_rows(hi - lo, d1, x0[lo:hi], x1, x2, o0[lo:hi])" \
        in src, src
    one = numba_source._kernel_source(fk.prog, plan, False, "k")
    assert "prange" not in one.split("def k(")[1] and "k_rows" not in one


@pytest.mark.parametrize("jit", [False, True])
def test_timed_choice_retries_and_keeps_the_bits(nf_settings, monkeypatch, jit):
    """The timed choice on a clock that jumps RETRY_SECONDS at each reading (each call
    looks long since the last try): after the warm-up the way not chosen is tried again
    and again, so calls run on one thread and on two in turn, and every result is the one
    thread's bit for bit (NumPy's by default, within the accuracy bound under
    jit_compile=True)."""
    nf_settings(numba="sync", numba_min=1, numba_parallel_min=1 << 12,
                numba_parallel_heavy_min=1 << 12, threads=1)
    monkeypatch.setattr(planner, "PAR_AFTER", 0)
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


def test_one_thread_setting_never_runs_the_parallel_kernel(parallel, nf_settings):
    nf_settings(threads=1)
    a = np.linspace(-5, 5, 1 << 14, dtype=np.float32)
    f = nf.function(lambda x: 1 / (1 + tnp.exp(-x)), jit_compile=True)
    for _ in range(3):
        f(a)
    assert not parallel
    plan, = _region(f, a).runner.plans.values()
    assert plan.parallel_kernel is None and plan.choice is None


def _sigmoid_on_two_threads(parallel, nf_settings, seed):
    """A compiled sigmoid whose parallel kernel has run (the `parallel` record then emptied):
    (the function, its operand, its result)."""
    nf_settings(threads=2)
    a = _specials((1 << 14) + seed, np.random.default_rng(seed))
    f = nf.function(lambda x: 1 / (1 + tnp.exp(-x)))
    for _ in range(6):
        want = f(a).numpy()
    assert parallel
    del parallel[:]
    return f, a, want


def test_one_parallel_loop_at_a_time(parallel, nf_settings):
    """While another thread's parallel loop runs (its lock held here), a call runs the
    one-thread kernel, with the same bits, and is not timed as a one-thread sample."""
    f, a, want = _sigmoid_on_two_threads(parallel, nf_settings, 12)
    plan, = _region(f, a).runner.plans.values()
    samples = dict(plan.choice.samples)
    with numba_runner._ONE_PARALLEL:
        for _ in range(3):
            assert_bits_equal(f(a).numpy(), want)
    assert not parallel and plan.choice.samples == samples
    f(a)
    assert parallel == [2]


_WORKQUEUE_SCRIPT = """
import threading, numpy as np, ndflow as nf, ndflow.numpy as tnp
from ndflow.graph.kernels import blocks, planner
planner.PAR_AFTER = 0
blocks.ADAPT = False
nf.config.settings.numba = "sync"
nf.config.settings.threads = 2
x = np.linspace(-9, 9, 1 << 16, dtype=np.float32)
f = nf.function(lambda v: 1 / (1 + tnp.exp(-v)))
for _ in range(4):
    want = f(x).numpy()
import numba
assert numba.threading_layer() == "workqueue"
bad = []
def run():
    for _ in range(200):
        if not np.array_equal(f(x).numpy(), want):
            bad.append(1)
ts = [threading.Thread(target=run) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print("ok", len(bad))
"""


def test_parallel_loops_from_several_threads_on_numba_workqueue():
    """numba's 'workqueue' threading layer (where no OpenMP or TBB is found) terminates the
    process when two threads launch parallel loops at once; four threads calling one compiled
    function run (one parallel loop at a time) and get the same values."""
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    r = subprocess.run([sys.executable, "-c", _WORKQUEUE_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.split()[-2:] == ["ok", "0"], (r.stdout, r.stderr)


def _in_a_forked_child(body):
    """Run `body()` in a forked child; its exit status (0: `body` returned true)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if body() else 2
        finally:
            os._exit(code)
    return os.waitpid(pid, 0)[1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_runs_its_loops_on_one_thread(parallel, nf_settings):
    """numba terminates a child forked from a process that ran its parallel loop (GNU OpenMP)
    when the child starts one: a region whose parallel kernel ran in the parent runs on one
    thread in the child, with the same bits."""
    f, a, want = _sigmoid_on_two_threads(parallel, nf_settings, 11)

    def child():
        return all(np.array_equal(f(a).numpy(), want, equal_nan=True) for _ in range(6)) \
            and not parallel
    assert _in_a_forked_child(child) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_compiles_in_a_worker_of_its_own():
    """The background compile thread does not survive a fork: the child starts its own, and
    a compile it asks for is made (it was queued for a thread that no longer exists)."""
    from ndflow.graph.kernels import numba_compile
    numba_compile._submit(lambda: None, False)
    assert numba_compile.wait(30)
    done = []

    def child():
        numba_compile._submit(lambda: done.append(1), False)
        return numba_compile.wait(30) and done == [1]
    assert _in_a_forked_child(child) == 0


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
