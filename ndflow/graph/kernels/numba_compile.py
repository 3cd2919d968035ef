"""Compiling tier-1 kernels: numba (imported here, on the first compile), the verified disk
cache (`kernel_cache`), one background thread for compiles (or the caller's, with
`settings.numba = "sync"`), and the kernels made so far in this process."""
import ctypes
import gc
import hashlib
import importlib.util
import os
import queue
import sys
import threading
import time

import numpy as np

from . import compile_worker, mathlib, replica, numba_tier, numba_plan, numba_source
from .numba_plan import _swap_inner
from .numba_source import _kernel_source, _dummy_args
from ...core.settings import settings

STATS = {"import_s": None, "compiles": 0, "compile_s": 0.0, "first_s": None, "failures": [],
         "rests": 0, "rest_s": 0.0, "elsewhere": 0, "elsewhere_s": 0.0, "loaded": 0}

# What a tier-1 kernel costs the process that asks for it, in seconds of its own time (what
# its background thread does holds the interpreter lock for most of its run, so the caller's
# calls slow down about as much as it runs); once this process has made some, their mean.
# Compiled here: numba's start (its import and its compiler's first use), measured 0.8-1.2 s
# on one core, then each kernel 0.1-0.4 s. Compiled by the worker process (`compile_worker`)
# and loaded here: numba's import and its first load from the cache, 0.5-0.6 s, then each
# kernel's load, 5-10 ms.
START_S, KERNEL_S = 1.0, 0.25
START_LOAD_S, KERNEL_LOAD_S = 0.6, 0.02


_KERNELS = {}          # (program key, pattern, parallel) -> dispatcher
_PROGRAMS = set()      # keys of the programs with a kernel made in this process
_LOCK = threading.Lock()
_Q = queue.Queue()
_worker = None
_pending = 0
_idle = threading.Condition()


_STAMP = None


def _kernel_cache():
    """The `kernel_cache` module (it imports numba's caching machinery at its top: loaded
    with the first compile)."""
    from . import kernel_cache
    return kernel_cache


def _stamp():
    """What every cached kernel's stamp includes besides its source: the modules whose text
    shapes a kernel's source or how it is loaded, and numba's version (a change to any of them
    makes every cached kernel stale)."""
    global _STAMP
    if _STAMP is None:
        import numba
        kernel_cache = _kernel_cache()
        h = hashlib.sha256()
        for m in (mathlib, replica, numba_tier, numba_plan, numba_source,
                  sys.modules[__name__], kernel_cache):
            with open(m.__file__, "rb") as f:
                h.update(f.read())
        h.update(numba.__version__.encode())
        _STAMP = h.hexdigest()
    return _STAMP


def _load(src, name, cache=True):
    """Compile-ready dispatcher for `src`, with the verified disk cache (kernel_cache) unless
    `cache` is false or no safe cache directory exists."""
    return _kernel_cache().load(src, name, _stamp(), cache)


_threads_set = threading.local()
_parallel_ran = False
# Whether this process was forked from one that had run a numba parallel loop: GNU OpenMP
# (numba's 'omp' threading layer on Linux) cannot start one again after a fork, and numba
# terminates a child that tries ("fork() called from a process already using GNU OpenMP"), so
# tier 1 keeps such a child's loops on one thread (`planner.threads_for_call`).
FORKED_AFTER_PARALLEL = False


def parallel_threads(n):
    """Have the calling thread's numba parallel loops run on `n` threads (at most numba's
    pool); called before each parallel loop. numba's setting is per thread and its setter
    costs ~2.5 us, so it is called only when `n` changes for this thread."""
    global _parallel_ran
    if getattr(_threads_set, "n", None) != n:
        import numba
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        _threads_set.n = n
        _parallel_ran = True


def _verify_replicas(src):
    """Raise (leaving tier 0 in place) unless every replica of NumPy's math that `src` calls
    matched NumPy's loop in this process (`replica.verify`, once per function). In the
    background thread the compile worker checks them, also for a kernel in the cache (the
    check compiles a probe kernel: 0.3 s of the caller's), and its finding is taken where its
    NumPy runs the same loop (`replica.accept`)."""
    used = [k for k in replica.replicas() if replica.kernel_name(*k) + "(" in src]
    unchecked = [k for k in used if not replica.checked(*k)]
    if unchecked and _elsewhere():
        reply, _ = _ask({"verify": [[f, dt.str] for f, dt in unchecked]})
        for f, dt, why, target in (reply or {}).get("verified", ()):
            replica.accept(f, dt, why, target)
    for fname, dt in used:
        why = replica.verify(fname, dt)
        if why is not None:
            raise RuntimeError(why)


def _elsewhere(src=None):
    """The verified cache's directory if the compile worker is to work for this thread (and
    make the kernel of `src`), else None: only for the background thread (a synchronous
    compile is the caller's own), while the worker is usable, and when the cache has no entry
    for `src` yet (a kernel in the cache is loaded here at once)."""
    if threading.current_thread() is not _worker or compile_worker.usable() is not None:
        return None
    kernel_cache = _kernel_cache()
    path, _ = kernel_cache.cache_dir()
    if path is None or (src is not None and kernel_cache.has(src, _stamp())):
        return None
    return path


def _ask(job):
    """(the compile worker's reply to `job` or None, the seconds waited for it), the wait
    counted in STATS["elsewhere_s"] (not the caller's time: `cost`)."""
    t0 = time.perf_counter()
    reply = compile_worker.ask(job)
    waited = time.perf_counter() - t0
    STATS["elsewhere_s"] += waited
    return reply, waited


def _make_elsewhere(src, name, dummy):
    """Have the compile worker put the kernel in the verified disk cache, for this process to
    load (`compile_worker`); the seconds this thread waited for it (without the interpreter
    lock). Where it does not (`_elsewhere`) or cannot (the worker gone, a failed compile),
    the caller's own compile follows as before."""
    path = _elsewhere(src)
    if path is None:
        return 0.0
    try:
        reply, waited = _ask({"src": src, "name": name, "cache": path,
                              "args": compile_worker.encode(dummy)})
    except TypeError as e:
        reply, waited = {"error": repr(e)}, 0.0
    if reply is None or "error" in reply:
        STATS["failures"].append("compile worker: %s" % (
            compile_worker.usable() if reply is None else reply["error"]))
    else:
        STATS["elsewhere"] += 1
    return waited


def serve(job):
    """The compile worker's answer to one job (`compile_worker`'s protocol), in its process:
    the replicas' checks, or the kernel compiled into the verified cache."""
    if "verify" in job:
        return {"verified": [[f, dt, replica.verify(f, np.dtype(dt)),
                              replica.dispatch_target(f, dt)] for f, dt in job["verify"]]}
    os.environ["NDFLOW_CACHE_DIR"] = job["cache"]
    disp = _load(job["src"], job["name"])
    if getattr(disp, "_cache", None) is None:
        return {"error": "no usable kernel cache in the worker"}
    disp(*compile_worker.decode(job["args"]))      # compiles, and numba saves it to the cache
    return {"made": True}


def _kernel_key(prog, plan, parallel, in_place=(), baked=(), scalars=(), static=False):
    return (prog.key, plan.pattern, parallel, plan.fast_math, in_place, _swap_inner(prog, plan),
            baked, scalars, plan.dims if static else None)


def cost(prog):
    """(seconds numba's start still costs this process, seconds a kernel of `prog` costs):
    nothing for a program this process already has a kernel of (another copy of the same
    region: its other kernels are variants of a loaded one), see START_S, KERNEL_S (their
    `_LOAD_` counterparts where the compile worker makes the kernels)."""
    loads = compile_worker.usable() is None and settings.numba != "sync"
    start = (START_LOAD_S if loads else START_S) if STATS["first_s"] is None else 0.0
    if prog.key in _PROGRAMS:
        return start, 0.0
    n = STATS["compiles"] - 1          # the first compile's time is numba's start too
    return start, ((STATS["compile_s"] - STATS["first_s"]) / n if n > 0 else
                   KERNEL_LOAD_S if loads else KERNEL_S)


def _compiled(prog, plan, parallel):
    """Whether `_compile` already made this kernel in this process."""
    key = _kernel_key(prog, plan, parallel)
    with _LOCK:
        return key in _KERNELS


def _import_numba():
    """Import numba (the first time: timed, STATS["import_s"], part of the first kernel's
    cost to this process)."""
    if STATS["import_s"] is None:
        t0 = time.perf_counter()
        import numba  # noqa: F401
        STATS["import_s"] = time.perf_counter() - t0
    return STATS["import_s"]


def _compile(prog, plan, parallel, in_place=(), baked=(), scalars=(), static=False):
    key = _kernel_key(prog, plan, parallel, in_place, baked, scalars, static)
    k = made(key)
    if k is not None:
        return k
    t0, waited, rested = time.perf_counter(), STATS["elsewhere_s"], STATS["rest_s"]
    _import_numba()                       # (writing the source imports it: numba's math)
    name = "fused_kernel"
    src = _kernel_source(prog, plan, parallel, name, in_place, baked, scalars, static)
    _verify_replicas(src)
    # (numba's import, the source, the replicas' checks here: the kernel's cost to the caller
    # too, `cost`; not the wait for the worker's, nor the rests)
    before = (time.perf_counter() - t0 - (STATS["elsewhere_s"] - waited)
              - (STATS["rest_s"] - rested))
    return build(key, prog, src, name, _dummy_args(prog, plan, in_place, baked, scalars),
                 before)


# The shared libraries numba's start loads that take longest to map, as (package, its folder,
# file names up to the first dot): LLVM (llvmlite's, ~170 MB); SciPy's BLAS and LAPACK wrappers,
# through which numba reaches BLAS (they bring SciPy's own OpenBLAS, 25 MB); numba's largest
# extensions. Measured during numba's start beside a caller: one extension import (SciPy's
# _fblas) holding the interpreter lock 6-100 ms.
_LIBRARIES = (("llvmlite", "binding", ("libllvmlite",)),
              ("scipy", "linalg", ("_fblas", "_flapack", "cython_blas", "cython_lapack")),
              ("numba", "", ("_helperlib", "_dispatcher")))


def _library_files():
    """The paths of `_LIBRARIES` in this installation (those found)."""
    for package, folder, stems in _LIBRARIES:
        spec = importlib.util.find_spec(package)      # (a top-level package: not imported)
        if spec is None or not spec.submodule_search_locations:
            continue
        where = os.path.join(spec.submodule_search_locations[0], folder)
        try:
            names = sorted(os.listdir(where))
        except OSError:
            continue
        for n in names:
            if n.partition(".")[0] in stems and n.endswith((".so", ".dylib")):
                yield os.path.join(where, n)


def _load_libraries_without_the_lock():
    """Load the shared libraries numba's start will load (`_LIBRARIES`) through libc's
    `dlopen`, called as a ctypes foreign function, which releases the interpreter lock. numba's
    start loads them with `ctypes.CDLL` or as extension modules, whose `dlopen` keeps the lock
    while the dynamic loader maps and relocates them (LLVM alone: 11-75 ms on an idle machine,
    145 ms under load), and a caller's call that comes back from NumPy cannot go on meanwhile
    (measured: one 145 ms call of the compiled MLP step, in the middle of its matrix product).
    Loaded first this way, each is already there, and those `dlopen` calls only count one more
    use. Where `dlopen` or a library is not found (another platform or layout), numba's start
    loads it as before."""
    try:
        dlopen = ctypes.CDLL(None).dlopen
        files = list(_library_files())
    except (OSError, AttributeError, ValueError, ImportError):
        return
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    for path in files:
        # (the handles are kept for good: the libraries stay loaded for numba anyway)
        dlopen(os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL)


def made(key):
    """The kernel `build` made under `key` in this process, or None."""
    with _LOCK:
        return _KERNELS.get(key)


def build(key, prog, src, name, dummy, before=0.0):
    """The dispatcher of `src` (its function `name`) compiled for the arguments `dummy`, or
    loaded from the disk cache; kept as this process's kernel `key` of `prog` (`made`, `cost`)
    with its time counted in STATS (and `before`, seconds its preparation cost). Tier 1's
    loops and row kernels (`numba_rows`) both come from here."""
    if STATS["import_s"] is None:
        before += _import_numba()
    t0, rested = time.perf_counter(), STATS["rest_s"]
    waited = _make_elsewhere(src, name, dummy)
    try:
        disp = _load(src, name)
        disp(*dummy)    # compiles (or loads from the disk cache)
    except Exception as e:
        # numba cannot always reload what it cached (two-thread kernels: "No module named
        # '<dynamic>'"): compile in memory instead
        STATS["failures"].append("disk cache: %r" % e)
        disp = _load(src, name, cache=False)
        disp(*dummy)
    disp.disable_compile()                          # a new type later: tier 0, not a stall
    stats = getattr(disp, "stats", None)
    loaded = bool(stats is not None and sum(stats.cache_hits.values()))
    disp.ndflow_source = src
    # what the compile cost the caller: its working time, not its rests (`_polite`) nor its
    # wait for the compile worker
    took = time.perf_counter() - t0 - (STATS["rest_s"] - rested) - waited + before
    with _LOCK:
        STATS["compiles"] += 1
        STATS["loaded"] += loaded
        STATS["compile_s"] += took
        if STATS["first_s"] is None:
            STATS["first_s"] = took
        _KERNELS[key] = disp
        _PROGRAMS.add(prog.key)
    return disp


# Python's thread switch interval while a compile runs in the background (its default is
# 5 ms). The compile holds the interpreter lock between switches, and a caller coming back from
# one of NumPy's loops (which release it) waits for the next switch at each operation: on the
# 2**20-element sigmoid, the worst 10 calls during numba's start took 3.4x eager's with 5 ms,
# 1.6x with 0.2 ms or 0.05 ms (benchmarks/first_calls.py, median of 3 fresh processes). The
# interval is the process's, so it is lowered only while a compile runs, then restored.
SWITCH_S = 1e-4


# The background compile's share of the time while a compile runs: it works for RUN_S, then
# rests for REST_S, so the caller's calls keep most of the interpreter lock (and the memory
# bandwidth) to themselves; the compile takes about five times as long. A caller's tier-0 calls
# are mostly faster than eager's by more than that share costs them: on the 2**20 sigmoid
# (tier 0 1.9 ms, eager 2.3 ms), the worst ten calls in a row during numba's start went from
# 2.8-3.9x eager's to 1.6-1.8x on a loaded machine (benchmarks/first_calls.py, A/B), and each
# hundred calls' median stayed below eager's. A thread waiting for the compiles (`wait`) lifts
# the rests: nobody's calls are running then. (The hook replaces any profile function
# `threading.setprofile` gave the thread: a profiler does not see the compile.)
RUN_S, REST_S = 0.001, 0.004
_clock = time.perf_counter
_slice = [0.0, 0]         # [end of the current working slice, events since the last look]
_waiting = 0


def _polite(frame, event, arg):
    """The compile thread's profile hook (called at each function call and return there):
    every 64 events, rest once the working slice is over."""
    _slice[1] += 1
    if _slice[1] & 63:
        return
    now = _clock()
    if now >= _slice[0]:
        if not _waiting:
            STATS["rests"] += 1
            time.sleep(REST_S)      # releases the lock: the caller's calls run alone
            STATS["rest_s"] += _clock() - now
        _slice[0] = _clock() + RUN_S


_froze = False     # whether a job runs with the heap frozen by `_work` (a fork may copy that)


def _work():
    global _pending, _froze
    _load_libraries_without_the_lock()  # before numba's start: its first job imports numba
    sys.setprofile(_polite)         # this thread's only
    while True:
        job = _Q.get()
        before = sys.getswitchinterval()
        ours = min(before, SWITCH_S)
        sys.setswitchinterval(ours)
        # A compile makes hundreds of thousands of objects, and the collections they trigger
        # run here, holding the interpreter lock; a full one walks the whole heap (measured
        # beside a caller during numba's start: two, 87 ms, the caller's worst call 65 ms).
        # What existed before the job is frozen while it runs (collections do not walk it; its
        # cycles are collected after the job), unless the program froze objects itself.
        _froze = gc.get_freeze_count() == 0
        if _froze:
            gc.freeze()
        try:
            job()
        except Exception as e:          # a failed compile leaves tier 0 in place
            STATS["failures"].append(repr(e))
        finally:
            if _froze:
                _froze = False
                gc.unfreeze()
            if abs(sys.getswitchinterval() - ours) < 1e-9:   # unless changed meanwhile
                sys.setswitchinterval(before)
            with _idle:
                _pending -= 1
                _idle.notify_all()


def _submit(job, sync):
    global _worker, _pending
    if sync:
        try:
            job()
        except Exception as e:
            STATS["failures"].append(repr(e))
        return
    job = settings.bound(job)       # the asking thread's settings (overrides) in the worker
    with _idle:
        _pending += 1
    if _worker is None:
        _worker = threading.Thread(target=_work, name="ndflow-numba", daemon=True)
        _worker.start()
    _Q.put(job)


def _after_fork_in_child():
    """A forked child has none of the parent's threads: its compiles get a worker of their
    own (the parent's queue, locks and count of pending compiles may be in any state; compiles
    the parent had queued are not made here, and those regions stay on tier 0)."""
    global _worker, _pending, _Q, _LOCK, _idle, _threads_set, FORKED_AFTER_PARALLEL, _froze
    _worker, _pending = None, 0
    _Q, _LOCK, _idle = queue.Queue(), threading.Lock(), threading.Condition()
    _threads_set = threading.local()
    FORKED_AFTER_PARALLEL = FORKED_AFTER_PARALLEL or _parallel_ran
    if _froze:                  # forked while a job ran: nobody here would undo its freeze
        _froze = False
        gc.unfreeze()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def wait(timeout=None):
    """Wait until queued compiles are done (they run without rests meanwhile)."""
    global _waiting
    end = None if timeout is None else time.monotonic() + timeout
    with _idle:
        _waiting += 1
        try:
            while _pending:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                _idle.wait(left)
        finally:
            _waiting -= 1
    return True
