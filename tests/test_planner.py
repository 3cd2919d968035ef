"""The kernel planner (`graph/kernels/planner.py`): one place chooses each fused region's
route, per signature, and says why (`nf.config.explain`, NDFLOW_DEBUG=plan). Each route of
`planner.Route` is reached by the op table's records in tests/test_optable_routes.py; here:
the reasons name the setting or the fact behind each choice, the columns route keeps NumPy's
warnings and errors, a region on tier 0 for good is its kernel's own call; per-call
conditions (NumPy's error state, a compile still pending) send single calls to tier 0 and are
counted."""
import gc
import importlib.util
import io
import os
import subprocess
import sys
import time
import warnings
from contextlib import redirect_stderr

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import planner, numba_compile, numba_runner
from ndflow.graph.kernels.planner import Route
from helpers import assert_bits_equal, routes_reached, single_kernel

needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed")
CALLS = 5         # past settings.hot_calls (3)

def _sigmoid(m):
    return lambda y: 1 / (1 + m.exp(-y))

def _run(f, *args, calls=CALLS):
    with np.errstate(all="ignore"):
        for _ in range(calls):
            out = f(*args)
    return out

_kernel = single_kernel

def _specials(n, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 5).astype(dtype)
    sp = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30]
    x[:min(n, 6)] = sp[:min(n, 6)]
    return x

# ------------------------------------------------------------------ the registry
def test_every_route_is_named_and_described():
    assert len(Route) == len({r.value for r in Route}) >= 15
    assert planner.TIER0 == {r for r in Route if r.value.startswith("tier 0")}

def test_explain_names_each_region_its_route_and_why(nf_settings):
    nf_settings(numba="off")
    f = nf.function(lambda x, y: (_sigmoid(tnp)(x), tnp.sum(y * y + 1.0)))
    x, y = np.linspace(-3, 3, 4), np.ones(8)
    _run(f, x, y)
    text = nf.config.explain(f)
    assert text.count("region ") == 2, text
    assert "t1=exp(t0)" in text and "tier 0, written into the step" in text
    assert "settings.large_min (4096)" in text
    assert "tier 1 never" in text or "settings.numba is 'off'" in text
    assert nf.config.explain(f.get_concrete_function(x, y)) == text
    assert nf.config.explain(nf.function(lambda a: a + 1)) == "no fused regions"

def test_debug_plan_logs_each_decision(nf_settings):
    nf_settings(numba="off", large_min=16)
    prev = nf.config.set_debug("plan")
    err = io.StringIO()
    try:
        with redirect_stderr(err):
            f = nf.function(_sigmoid(tnp))
            _run(f, np.linspace(-3, 3, 64))          # too small for tier 1: decided at build
            g = nf.function(_sigmoid(tnp))
            _run(g, np.linspace(-3, 3, 10000))       # decided on its hot call
    finally:
        nf.config.set_debug(*prev)
    log = err.getvalue()
    assert "ndflow plan fused{negative,exp,add,true_divide}" in log, log
    assert Route.T0_LARGE.value in log and "tier 1 never" in log
    assert "settings.numba is 'off'" in log

# ------------------------------------------------------------------ tier 0's routes
# (each route on the op table's records, with NumPy's bits: tests/test_optable_routes.py)
def _outer(m):
    return lambda x, y: x * y + 1.0

def test_columns_route_for_short_last_axis_outer_products(nf_settings):
    """(b, m, 1) * (b, 1, 2): tier 0 runs it column by column (NumPy's loop over rows of 2
    is the slow way), with NumPy's bits, also for strided operands and special values."""
    nf_settings(numba="off")
    rng = np.random.default_rng(4)
    x = _specials(128 * 64).reshape(128, 64, 1)
    y = rng.standard_normal((128, 1, 2))
    y[0, 0, 0] = np.inf
    f = nf.function(_outer(tnp))
    got = []
    assert Route.T0_COLUMNS in routes_reached(lambda: got.append(_run(f, x, y)))[0]
    with np.errstate(all="ignore"):
        want = _outer(np)(x, y)
    assert_bits_equal(got[0].numpy(), want)
    k = _kernel(f, x, y)
    assert k.decision.route is Route.T0_COLUMNS and "column" in nf.config.explain(f)
    xs = np.asfortranarray(np.repeat(x, 2, axis=2))[:, :, :1]        # strided
    with np.errstate(all="ignore"):
        assert_bits_equal(f(xs, y).numpy(), _outer(np)(xs, y))

def test_columns_route_warns_and_raises_as_numpy(nf_settings):
    """A floating-point error met in a column runs the call again whole, under the caller's
    error state: the same warnings (once), the same FloatingPointError."""
    nf_settings(numba="off")
    x = np.full((64, 32, 1), 1e300)
    y = np.full((64, 1, 2), 1e300)
    f = nf.function(_outer(tnp))
    with np.errstate(all="ignore"):
        _run(f, x, y)
    assert _kernel(f, x, y).decision.route is Route.T0_COLUMNS
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        r = f(x, y)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        w = _outer(np)(x, y)
    assert [str(a.message) for a in got] == [str(a.message) for a in want]
    assert_bits_equal(r.numpy(), w)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            f(x, y)

def test_tier0_for_good_is_the_kernels_own_call(nf_settings):
    """The planner's decision is the one place that changes what calling a kernel runs: a
    region on tier 0 for good is called straight as its tier-0 function."""
    nf_settings(numba="off")
    f = nf.function(_sigmoid(tnp))
    x = np.linspace(-2, 2, 5000)
    _run(f, x)
    k = _kernel(f, x)
    assert k.decision.route is Route.T0_LARGE and "settings.numba is 'off'" in k.decision.why
    assert type(k).__call__ is k.tier0 and k.direct is k.tier0

def test_numba_missing_says_so_and_keeps_numpys_bits(nf_settings, monkeypatch):
    nf_settings(numba="sync")
    monkeypatch.setattr(planner, "_numba_found", False)
    f = nf.function(_sigmoid(tnp))
    x = _specials(10000)
    with np.errstate(all="ignore"):
        assert_bits_equal(_run(f, x).numpy(), _sigmoid(np)(x))
    assert "numba is not installed" in nf.config.explain(f)

# ------------------------------------------------------------------ tier 1's routes
# (the loop, two threads, the generated callers and the in-place kernels on every function
# of the scalar vocabulary: tests/test_optable_routes.py)
@needs_numba
def test_per_call_conditions_send_single_calls_to_tier0(monkeypatch, nf_settings):
    """NumPy's error state asking to raise, and a kernel still compiling, send the call to
    tier 0 (which honours the state; which does not wait): counted on the signature's
    decision, and explained."""
    nf_settings(numba="sync", fast_math=False)
    x = np.full(1 << 14, 3.0)
    f = nf.function(lambda a: a * a * a * a * 1e307)
    _run(f, x)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            f(x)
    assert "1 (NumPy's error state asks for more than warnings)" in nf.config.explain(f)
    # a compile that has not run yet (asked for at once: it costs nothing here): tier 0
    nf_settings(numba="background")
    queued = []
    monkeypatch.setattr(numba_runner, "_submit", lambda job, sync: queued.append(job))
    monkeypatch.setattr(numba_compile, "cost", lambda prog: (0.0, 0.0))
    h = nf.function(lambda a: a * 2.0 + a * a)
    with np.errstate(all="ignore"):
        r = _run(h, x)
    assert queued and "tier-1 kernel compiling" in nf.config.explain(h)
    assert_bits_equal(r.numpy(), x * 2.0 + x * x)

@needs_numba
def test_background_compile_is_asked_for_once_it_pays(monkeypatch, nf_settings):
    """In the background, a region's tier-1 kernel is asked for only once the region has run
    on tier 0 for as long as the kernel costs the process, and the waiting regions together
    for as long as numba's start (`planner.compile_pays`); until then explain says so and
    every call is tier 0's, NumPy's bit for bit."""
    nf_settings(numba="background", fast_math=False)
    queued = []
    monkeypatch.setattr(numba_runner, "_submit", lambda job, sync: queued.append(job))
    monkeypatch.setattr(numba_compile, "cost", lambda prog: (0.2, 0.05))
    monkeypatch.setattr(planner, "_started", False)
    monkeypatch.setattr(planner, "_cold", 0.0)
    x = np.linspace(-3, 3, 1 << 14)
    f = nf.function(lambda a: a * 2.0 + a * a)
    k = _kernel(f, x)
    ran, longest = 0, 0.0
    while not queued:
        t0 = time.perf_counter()
        r = _run(f, x, calls=1)
        longest = max(longest, time.perf_counter() - t0)
        ran += 1
        assert_bits_equal(r.numpy(), x * 2.0 + x * x)
        if ran == CALLS:
            assert "tier 0 until its tier-1 kernel pays" in nf.config.explain(f)
        assert ran < 10 ** 6
    # asked for on the call after the rent was paid (checked every RECHECK_S of tier 0, so
    # at most that and one call more: a call on a loaded machine can take longer than it)
    assert ran > CALLS and k.runner is not None
    assert 0.2 <= planner._cold and 0.05 <= k.spent < 0.2 + planner.RECHECK_S + longest
    # numba's start is paid once: a second region asks as soon as its own rent is paid
    g = nf.function(lambda a: a * 3.0 - a * a)
    kg = _kernel(g, x)
    while kg.runner is None:
        _run(g, x, calls=1)
    assert 0.05 <= kg.spent < 0.05 + 2 * planner.RECHECK_S

@needs_numba
def test_sync_compile_is_asked_for_on_the_hot_call(monkeypatch, nf_settings):
    """With settings.numba 'sync' the caller chose to wait: the hot call asks at once."""
    nf_settings(numba="sync")
    monkeypatch.setattr(numba_compile, "cost", lambda prog: (10.0, 10.0))
    monkeypatch.setattr(planner, "_started", False)
    f = nf.function(lambda a: a * 2.0 + a * a)
    x = np.linspace(-3, 3, 1 << 14)
    _run(f, x, calls=nf.config.settings.hot_calls)
    assert planner.compile_pays(_kernel(f, x))

def test_background_compile_lowers_the_switch_interval_while_it_runs():
    """A background compile runs with a short thread switch interval (the caller coming back
    from NumPy's loops does not wait 5 ms for the interpreter lock), restored after it."""
    before = sys.getswitchinterval()
    seen = []
    numba_compile._submit(lambda: seen.append(sys.getswitchinterval()), sync=False)
    assert numba_compile.wait(timeout=30)
    assert seen and seen[0] <= numba_compile.SWITCH_S + 1e-9
    assert sys.getswitchinterval() == before


def _python_work():
    def f(i):
        return i + 1
    return sum(f(i) for i in range(20000))


def test_background_compile_rests_unless_a_thread_waits_for_it(monkeypatch):
    """The background compile works in slices with rests between them (the caller keeps the
    interpreter lock most of the time), in its own thread only; a thread waiting for the
    compiles (`wait`) lifts the rests."""
    import time
    monkeypatch.setattr(numba_compile, "RUN_S", 0.0)     # rest at every look
    monkeypatch.setattr(numba_compile, "REST_S", 0.0)
    seen = {}

    def job():
        seen["hook"] = sys.getprofile()
        r0 = numba_compile.STATS["rests"]
        _python_work()
        seen["rests"] = numba_compile.STATS["rests"] - r0
    numba_compile._submit(job, sync=False)
    assert sys.getprofile() is None                       # the caller's thread has no hook
    while "rests" not in seen:                            # nobody waits: the job rests
        time.sleep(0.01)
    assert seen["hook"] is numba_compile._polite and seen["rests"] > 10
    assert numba_compile.STATS["rest_s"] > 0       # (a compile's cost to the caller omits it)

    def waited_job():
        while not numba_compile._waiting:                 # until wait() below has begun
            time.sleep(0.001)
        job()
    seen.clear()
    numba_compile._submit(waited_job, sync=False)
    assert numba_compile.wait(timeout=30)
    assert seen["rests"] == 0


def test_background_compile_freezes_what_existed_while_a_job_runs():
    """Collections a compile triggers run in its thread, holding the interpreter lock: while a
    job runs, what existed before it is frozen (collections do not walk it), and unfrozen
    after; a program that froze objects itself keeps its own freeze untouched."""
    def job_seeing(seen):
        return lambda: seen.append(gc.get_freeze_count())
    gc.freeze()                                    # the program's own freeze
    mine = gc.get_freeze_count()
    seen = []
    numba_compile._submit(job_seeing(seen), sync=False)
    assert numba_compile.wait(timeout=30)
    # (no more frozen, none unfrozen: the count drops only as frozen objects are freed)
    assert 0 < seen[0] <= mine and 0 < gc.get_freeze_count() <= mine
    gc.unfreeze()
    try:
        seen = []
        numba_compile._submit(job_seeing(seen), sync=False)
        assert numba_compile.wait(timeout=30)
        assert seen[0] > 0 and gc.get_freeze_count() == 0
    finally:
        gc.freeze()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_a_job_runs_has_nothing_frozen():
    """A process forked while a compile job had the heap frozen gets nobody to undo it: the
    child unfreezes (`numba_compile`'s at-fork hook)."""
    gc.unfreeze()
    try:
        status = []

        def job():
            pid = os.fork()
            if pid == 0:
                os._exit(0 if gc.get_freeze_count() == 0 else 1)
            status.append(os.waitpid(pid, 0)[1])
        numba_compile._submit(job, sync=False)
        assert numba_compile.wait(timeout=30)
        assert status == [0]
    finally:
        gc.freeze()


@needs_numba
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_numbas_libraries_are_loaded_before_it_by_calls_that_release_the_lock():
    """ctypes' and the import system's `dlopen` keep the interpreter lock while a library is
    mapped (LLVM's ~170 MB: a caller's call stalled 75-145 ms behind it); the background
    compile loads the largest ones first through libc's `dlopen`, so numba's later loads find
    them there. A fresh process: afterwards each is mapped, and none of llvmlite, numba or
    SciPy was imported for it."""
    code = (
        "import os, sys\n"
        "from ndflow.graph.kernels import numba_compile\n"
        "files = list(numba_compile._library_files())\n"
        "assert any('libllvmlite' in f for f in files), files\n"
        "numba_compile._load_libraries_without_the_lock()\n"
        "maps = open('/proc/self/maps').read()\n"
        "missing = [f for f in files if os.path.realpath(f) not in maps]\n"
        "assert not missing, missing\n"
        "assert not any(m.split('.')[0] in ('llvmlite', 'numba', 'scipy') for m in sys.modules)\n"
        "print('ok', len(files))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr
