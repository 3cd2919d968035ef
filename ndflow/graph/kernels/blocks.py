"""Blocked execution of a fused region's tier-0 code: the op chain runs chunk by chunk.

Running each op over the whole array streams every operand and temporary through memory once
per op; a chain of five ops on 2^24 floats moves ~10x the bytes of one copy. Run over a chunk
of ~16K elements, the chain's temporaries stay in the core's cache and only the operands are
read and the results written, once.

A chunk is a slab of the result: the dims after a split axis `a` whole, a range of rows along
`a`, and one index along each dim before it (the "outer" index). Operands are sliced the same
way where they are not broadcast, so each op gets NumPy views of the same elements it would
read unblocked, with the same strides; scratch buffers are per thread.

Layout: chunks and pooled buffers are C-ordered, as NumPy's results are for operands whose
axes lie in C order in memory (`c_order`); a call with a permuted operand (Fortran order, a
transpose) runs the plain path instead, so its results and sums are NumPy's.

Threads: chunks are handed out from one shared iterator (the calling thread takes part), so a
core that is busy with something else simply takes fewer chunks (`share`: a helper not
started when the caller's part is done never starts, and the call does not wait for it).
NumPy's error state is per thread (a context variable), so each thread sets the one the call
asks for. (Tier 1 shares its loops by numba's own parallel loop, whose threads never take
the interpreter lock: `numba_source._Text.chunks`.)

Where the time goes (2-core AMD EPYC, float32 `1/(1+exp(-y))` at 2^24, one thread, 2026-11):
NumPy's exp is 0.46 ns per element, the negation, add and divide 0.23 together on a chunk in
cache; the first op of each chunk also waits for memory (the operand's lines and the result's,
read before they are written), ~0.25 more: ~0.92 ns per element against ~0.35 for a copy. A
second thread overlaps one thread's memory waits with the other's arithmetic (~0.5). A result
buffer that is new costs its page faults on top (~+30%, in whichever thread writes a chunk
first); the callers' pools hand back the last call's buffer when it was dropped.
"""
import itertools
import math
import os
import queue
import threading
import time

import numpy as np

from ...core.settings import settings, cores

_CATEGORIES = ("divide", "over", "under", "invalid")
# choose between one thread and several by timing both (ThreadChoice); off: always several
ADAPT = True
# calls between tries of the way not chosen (doubling while it keeps losing, up to
# EXPLORE_MAX); samples of each way taken, alternately, before the first choice; samples
# kept per way (its estimate is their minimum)
EXPLORE = 16
EXPLORE_MAX = 8 * EXPLORE
WARM = 2
KEEP = 3
# ... or, whichever comes first, RETRY_SECONDS since its last try (at 2^24 elements a call
# takes ~7 ms: EXPLORE_MAX calls are ~1 s, longer than a busy spell, or a benchmark's whole
# measurement), but not before TRY_SHARE times its own call's time has passed since then:
# however long the calls, tries of the slower way cost at most ~1/TRY_SHARE of the time
RETRY_SECONDS = 0.1
TRY_SHARE = 32
# a try of the other way counts as lost when it is this much slower than the chosen way
MARGIN = 1.1
# the clock of the tries (tests replace it)
clock = time.perf_counter


class ThreadChoice:
    """One thread or `nthreads` for the calls of one kernel on one shape, whichever is timed
    faster (`choose` before a call, `record` its time after). Used by the chunked tier and by
    tier 1's parallel loops."""
    __slots__ = ("nthreads", "calls", "samples", "every", "next_try", "exploring", "tried",
                 "first")

    def __init__(self, nthreads):
        self.nthreads = nthreads
        self.calls = 0
        self.samples = {}        # threads -> the last KEEP call times (a tuple, replaced whole)
        self.every = EXPLORE
        self.next_try = 0
        self.exploring = False
        self.tried = {}          # threads -> `clock()` when its last sample was recorded
        self.first = True        # the first call's time is not a sample (see `choose`)

    def estimate(self, nthreads):
        """Seconds per call with `nthreads`: the fastest of its last KEEP calls (a call can
        only be slowed by the rest of the machine, never sped up; a lasting change shows
        after KEEP calls), or None before it has WARM of them."""
        s = self.samples.get(nthreads, ())
        return min(s) if len(s) >= WARM else None

    def choose(self):
        """Threads for this call. Whether a second thread pays depends on what else the
        machine runs (on a busy 2-core machine a helper thread is scheduled late and the call
        waits for its last chunk: measured 2.5x slower at 2^18 elements), so both ways are
        timed: first WARM calls of each, alternately, after a first call that is not counted
        (it pays once for what later calls reuse: a new result buffer's page faults, starting
        the helper threads; measured 1.5-9x a later call's time, and as a sample of the way it
        ran on it left that way one real sample against the other's WARM). Then the faster
        one runs and the other is tried again after `every` calls (from EXPLORE, doubling
        while it keeps losing by more than MARGIN, up to EXPLORE_MAX) or after RETRY_SECONDS,
        whichever comes first (but no sooner than TRY_SHARE of its calls' time): a choice
        made while the machine was busy is tried again within a fraction of a second. The
        bookkeeping is not locked: concurrent calls may lose a sample, never fail."""
        if self.nthreads <= 1 or not ADAPT:
            return self.nthreads
        self.calls += 1
        one, many = self.estimate(1), self.estimate(self.nthreads)
        if one is None or many is None:
            n1 = len(self.samples.get(1, ()))
            nm = len(self.samples.get(self.nthreads, ()))
            return self.nthreads if nm <= n1 else 1
        best, other = (1, self.nthreads) if one < many else (self.nthreads, 1)
        if not self.next_try:
            self.next_try = self.calls + self.every
        due = self.calls >= self.next_try
        if not due:
            since = clock() - self.tried.get(other, 0.0)
            due = since >= RETRY_SECONDS and since >= TRY_SHARE * (one if other == 1 else many)
        self.exploring = due
        return other if due else best

    def record(self, nthreads, seconds):
        if self.first:
            self.first = False
            return
        if self.exploring:
            self.exploring = False
            others = [self.estimate(k) for k in self.samples if k != nthreads]
            lost = bool(others) and others[0] is not None and seconds > MARGIN * others[0]
            self.every = min(self.every * 2, EXPLORE_MAX) if lost else EXPLORE
            self.next_try = self.calls + self.every
        self.samples[nthreads] = (self.samples.get(nthreads, ()) + (seconds,))[-KEEP:]
        self.tried[nthreads] = clock()


class Blocks(ThreadChoice):
    """How a result of shape S is cut into chunks, and how each operand is sliced."""
    __slots__ = ("S", "a", "m", "rows", "outer", "nchunks", "rest", "chunk_shape", "specs",
                 "cap")

    def __init__(self, S, in_shapes, chunk, nthreads=1):
        N = len(S)
        a = N - 1
        while a > 0 and math.prod(S[a:]) <= chunk:
            a -= 1
        # S[a+1:] is the largest trailing block of at most `chunk` elements
        self.S, self.a = S, a
        self.rest = tuple(S[a + 1:])
        inner = max(1, math.prod(self.rest))
        self.m = max(1, chunk // inner)
        self.rows = S[a] if N else 1
        self.outer = list(itertools.product(*[range(d) for d in S[:a]]))
        self.nchunks = len(self.outer) * -(-self.rows // self.m)
        self.chunk_shape = (self.m,) + self.rest
        self.cap = self.m * inner
        self.specs = [self._spec(s, N) for s in in_shapes]
        ThreadChoice.__init__(self, min(nthreads, self.nchunks))

    def _spec(self, sh, N):
        """(outer, sliced) for an operand of shape `sh`: `outer` picks, per outer dim the
        operand has, the outer index's entry (or 0 where it is broadcast), or is None when the
        operand has none; `sliced` says whether its rows are sliced (it has axis `a` unbroadcast)."""
        off = N - len(sh)
        a = self.a
        if len(sh) == 0 or a - off < 0:
            return None, False           # only trailing dims: the same for every chunk
        outer = tuple(None if sh[t - off] == 1 else t for t in range(max(off, 0), a))
        return (outer if outer else None), sh[a - off] != 1

    def chunk_args(self, xs, outer_idx, lo, hi):
        """The operands' views for one chunk."""
        out = []
        for x, (outer, sliced) in zip(xs, self.specs):
            if outer is not None:
                x = x[tuple(0 if t is None else outer_idx[t] for t in outer)]
            if sliced:
                x = x[lo:hi]
            out.append(x)
        return out


class _Collector:
    """np.errstate's `call` target while chunks run: notes that an error was met."""
    __slots__ = ("hit",)

    def __init__(self):
        self.hit = False

    def __call__(self, kind, flag):
        self.hit = True


def watching():
    """(np.errstate's keyword arguments, collector) for running part of a call: every
    floating-point error the caller's error state does not ignore is routed to the collector
    (`collector.hit`), so the caller can run the call again whole, under its own state."""
    modes = np.geterr()
    col = _Collector()
    return {c: ("ignore" if modes[c] == "ignore" else "call") for c in _CATEGORIES}, col


# threads -> blocked calls that ran on that many (whatever their outcome): benchmarks report
# how often the choice fell on each (unlocked: concurrent calls may miss a count)
USED = {}


def threads():
    """Threads a region may use (`settings.threads`, else the cores this process may run on,
    at most 8)."""
    n = settings.threads
    if n is None:
        global _CORES
        if _CORES is None:
            _CORES = cores()
        n = _CORES
    return n


_CORES = None


# ------------------------------------------------------------------ helper threads
# Each helper thread serves its own queue. A queue's put and get cost ~1 us; a thread pool's
# submit, cancel and result (a Future, the pool's queue and lock) cost several times that,
# and the result's wait is where a helper that its busy core schedules late held a call up.
_HELPERS = []
_HELPERS_LOCK = threading.Lock()


def _serve(q):
    while True:
        q.get()()


def _helpers(n):
    """The queues of (at least) `n` helper threads, started on first use."""
    if len(_HELPERS) < n:
        with _HELPERS_LOCK:
            while len(_HELPERS) < n:
                q = queue.SimpleQueue()
                threading.Thread(target=_serve, args=(q,), daemon=True,
                                 name="ndflow-block-%d" % len(_HELPERS)).start()
                _HELPERS.append(q)
    return _HELPERS


def _forget_helpers():
    # a forked child has none of the parent's threads: it starts its own when needed
    global _HELPERS_LOCK
    _HELPERS.clear()
    _HELPERS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


class _Gate:
    """One helper's part in a shared call: it runs `work` unless the call closed the gate
    first (its own part done and every chunk taken: nothing left for a late helper)."""
    __slots__ = ("lock", "work")

    def __init__(self, work):
        self.lock = threading.Lock()
        self.work = work

    def __call__(self):
        with self.lock:
            w = self.work
            if w is not None:
                w()

    def close(self):
        """Wait for the helper if it is running `work`; after this it never will."""
        with self.lock:
            self.work = None


def share(nt, work):
    """Run `work()` on the calling thread and on `nt - 1` helper threads at once. `work` takes
    its chunks from an iterator the calls share (so a thread that starts late, or whose core
    is busy with something else, simply takes fewer) and never raises (it keeps what it
    caught for the caller). Returns once every helper that started `work` has finished it: a
    helper the system has not scheduled by the time the caller's part is done never starts
    it, and the call does not wait for it."""
    if nt <= 1:
        work()
        return
    qs = _helpers(nt - 1)
    gates = [_Gate(work) for _ in range(nt - 1)]
    for q, g in zip(qs, gates):
        q.put(g)
    work()
    for g in gates:
        g.close()


def run(blk, body, xs, outs, tmp_dtypes, tmp_pool):
    """Run `body(*operand views, *result views, *scratch views)` over every chunk. Returns
    True when done without any floating-point error the caller's `np.errstate` does not
    ignore, and without exceptions; False means: run the call again unblocked (results have
    been partly written, operands are untouched)."""
    watch, col = watching()
    nr = -(-blk.rows // blk.m)
    counter = iter(range(blk.nchunks))
    failed = []

    def work():
        bufs = [tmp_pool.take((blk.cap,), dt) for dt in tmp_dtypes]
        full = [b.reshape(blk.chunk_shape) for b in bufs]
        try:
            with np.errstate(call=col, **watch):
                for c in counter:
                    if col.hit or failed:
                        break
                    o, r = divmod(c, nr)
                    lo = r * blk.m
                    hi = min(lo + blk.m, blk.rows)
                    oi = blk.outer[o]
                    if hi - lo == blk.m:
                        tb = full
                    else:
                        n = (hi - lo) * (blk.cap // blk.m)
                        tb = [b[:n].reshape((hi - lo,) + blk.rest) for b in bufs]
                    ov = [y[oi][lo:hi] if oi else y[lo:hi] for y in outs]
                    body(*blk.chunk_args(xs, oi, lo, hi), *ov, *tb)
        except BaseException as e:       # re-raised by the unblocked re-run, or below
            failed.append(e)
        finally:
            for b in bufs:
                tmp_pool.give(b)

    nt = blk.choose()
    t0 = time.perf_counter()
    share(nt, work)
    USED[nt] = USED.get(nt, 0) + 1
    if not failed and not col.hit:
        blk.record(nt, time.perf_counter() - t0)
    for e in failed:
        if not isinstance(e, Exception):
            raise e                      # KeyboardInterrupt, SystemExit: not for a re-run
    return not (failed or col.hit)


def c_order(x):
    """Whether NumPy lays out a result computed from `x` alone in C order: its axes are in C
    order in memory (C-contiguous, or strided, offset or reversed but not permuted; axes of
    one element and broadcast ones leave the order free)."""
    if type(x) is not np.ndarray or x.flags.c_contiguous:
        return True
    last = None
    for n, s in zip(x.shape, x.strides):
        if n > 1 and s:
            s = abs(s)
            if last is not None and s > last:
                return False
            last = s
    return True
