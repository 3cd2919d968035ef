"""The planner: the one place that chooses how a fused region runs, and says why.

A fused region (`FusedKernel`) runs by one of the *routes* named in `Route`: tier 0 (NumPy
code, always there) in one of its forms, tier 1 (a numba loop) in one of its, or a device
backend's kernel. The planner picks a region's route once per signature (the operands'
shapes and layout: C-contiguous, broadcast, strided or a NumPy scalar; the device of its
buffers; the dtypes and static shapes are the region's own) and records the choice with its
reason in a `Decision`, which `explain` prints and NDFLOW_DEBUG=plan logs as it is made. The
executors (tier 0's generated code, tier 1's runner, a device backend) do what it decided;
nothing else chooses.

The decisions, in the order a region meets them:

1. when the region's kernel is built (`at_build`): whether tier 1 could ever pay for it (a
   static region too small for a compiled loop stays on tier 0 for good: its calls go
   straight to the tier-0 function, which the code generator may write into the step), and
   whether tier 0 runs a short-last-axis outer product column by column;
2. on the region's `settings.hot_calls`-th call (`at_hot`): whether tier 1 could ever run
   it (numba off, missing, or refusing the region: tier 0 for good); then, call by call,
   whether asking for its kernel pays yet (`compile_pays`: with a background compile, only
   once the region's tier-0 time has paid for what the compile costs the caller);
3. per signature on tier 0 (`Tier0Plan`): one NumPy call per op, out= into pooled buffers,
   chunk by chunk, chunks shared between threads;
4. per signature on tier 1 (`tier1_signature`): whether tier 1 takes it (it pays, its
   operands collapse, its sum is in NumPy's order), on one thread or several (timed);
5. per call, only what changes between calls of one signature: NumPy's error state ('raise'
   or 'call' send the call to tier 0, whose loops honour it), a tier-1 kernel still being
   compiled (`kernel_for_call`: the call runs tier 0, never waiting for the compile unless
   `settings.numba` is 'sync'), a constant rebound (the generated caller is dropped). These
   are counted on the signature's decision (`Decision.fallbacks`).

A region whose calls take one function for good (tier 0 for good, tier 1's generated caller)
gets that function as its own call (`direct`): one Python frame, no dispatch. `direct` is
the only place that changes what calling a kernel runs.

Every route but the reference of its family (T0_SMALL, DEVICE_OPS) can be switched off
(`settings.routes_off`, for ablation runs: benchmarks/ablation.py): where the planner would
choose it, it takes the route it would take without it (`FALLBACK`), and the decision's
reason says so.
"""
import collections
import enum
import importlib.util
import math
import threading

from . import numba_compile, numba_tier, numba_rows, policy
from .numba_plan import Plan as CollapsedPlan, exact_sum_ok
from .program import runtime_shapes
from . import blocks, contract
from .. import debug as _dbg
from ...core.settings import settings


class Route(enum.Enum):
    """Every way a fused region can run. The op table's route axis names these."""
    T0_INLINE = "tier 0, written into the step"
    T0_SCALAR = "tier 0, 0-d values as NumPy scalars"
    T0_SMALL = "tier 0, one NumPy call per op"
    T0_LARGE = "tier 0, out= into pooled buffers"
    T0_COLUMNS = "tier 0, column by column"
    T0_BLOCKED = "tier 0, chunk by chunk"
    T0_THREADS = "tier 0, chunks shared between threads"
    T1_LOOP = "tier 1, compiled loop"
    T1_THREADS = "tier 1, compiled loop on one thread or two"
    T1_INPLACE = "tier 1, results written over operands"
    T1_DIRECT = "tier 1, generated caller"
    T1_DIRECT_BAKED = "tier 1, generated caller, constants in the kernel"
    T1_DIRECT_INTO = "tier 1, generated caller writing over operands"
    T1_ROWS = "tier 1, row kernel (reductions along the last axis inside the loop)"
    DEVICE_KERNEL = "device backend, one compiled kernel"
    DEVICE_OPS = "device backend, op by op"


# what a route switched off falls back to (the planner decides again without it)
FALLBACK = {
    Route.T0_INLINE: "called, not written into the step (T0_SMALL)",
    Route.T0_SCALAR: "one NumPy call per op (T0_SMALL)",
    Route.T0_LARGE: "one NumPy call per op (T0_SMALL)",
    Route.T0_COLUMNS: "tier 0's route for the size (T0_LARGE, T0_BLOCKED, T0_THREADS)",
    Route.T0_BLOCKED: "out= into pooled buffers, whole (T0_LARGE)",
    Route.T0_THREADS: "one thread (T0_BLOCKED or T0_LARGE)",
    Route.T1_LOOP: "tier 0 for good (no tier 1)",
    Route.T1_THREADS: "the loop on one thread (T1_LOOP)",
    Route.T1_INPLACE: "the plain kernel on the shared buffers (T1_LOOP)",
    Route.T1_DIRECT: "the runner's general call (T1_LOOP)",
    Route.T1_DIRECT_BAKED: "the generated caller of the plain kernel (T1_DIRECT)",
    Route.T1_DIRECT_INTO: "the runner's general call with the in-place kernel (T1_INPLACE)",
    Route.T1_ROWS: "tier 0 for good (the row region has no other compiled loop)",
    Route.DEVICE_KERNEL: "each op its own kernel (DEVICE_OPS)",
}


def off(route):
    """Whether `route` is switched off for the calling thread (`settings.routes_off`, which
    names routes of the planner, the eager door and the tape)."""
    names = settings.routes_off
    return bool(names) and route in {Route[n] for n in names if n in Route.__members__}


def off_why(route):
    """The words a decision's reason gets when `route`, switched off, was not taken."""
    return "%s switched off (settings.routes_off): %s" % (route.name, FALLBACK[route])


TIER0 = frozenset((Route.T0_INLINE, Route.T0_SCALAR, Route.T0_SMALL, Route.T0_LARGE,
                   Route.T0_COLUMNS, Route.T0_BLOCKED, Route.T0_THREADS))

# route -> decisions made for calls (not per call: counted when a decision is made)
REACHED = collections.Counter()
_LOCK = threading.Lock()


class Decision:
    """One choice of route and why; `fallbacks` counts the calls of its signature sent to
    tier 0 by a per-call condition (reason -> calls); `choice`, a `blocks.ThreadChoice`
    where the number of threads is timed call by call."""
    __slots__ = ("route", "why", "fallbacks", "choice")

    def __init__(self, route, why, choice=None):
        self.route, self.why, self.choice = route, why, choice
        self.fallbacks = None

    def fallback(self, reason):
        f = self.fallbacks
        if f is None:
            f = self.fallbacks = {}
        f[reason] = f.get(reason, 0) + 1

    def text(self):
        s = "%s: %s" % (self.route.value if self.route is not None else "no route", self.why)
        if self.choice is not None:
            s += "; " + _choice_text(self.choice)
        if self.fallbacks:
            s += "; calls sent to tier 0: " + ", ".join(
                "%d (%s)" % (n, r) for r, n in sorted(self.fallbacks.items()))
        return s

    def __repr__(self):
        return "<Decision %s>" % self.text()


def decide(route, why, where="", choice=None):
    """A decision for calls: counted in REACHED and logged under NDFLOW_DEBUG=plan."""
    d = Decision(route, why, choice)
    if route is not None:
        with _LOCK:
            REACHED[route] += 1
    if "plan" in _dbg.FLAGS:
        _dbg.log("ndflow plan%s: %s" % (" " + where if where else "", d.text()))
    return d


def _choice_text(c):
    one, many = c.estimate(1), c.estimate(c.nthreads)
    if one is None or many is None:
        return "one thread and %d being timed" % c.nthreads
    if one <= many:
        return "one thread (timed %.2fx faster than %d)" % (many / one, c.nthreads)
    return "%d threads (timed %.2fx faster than one)" % (c.nthreads, one / many)


# ------------------------------------------------------------------ calling a kernel
def direct(fk, fn, **attrs):
    """Calls of the kernel `fk` go straight to `fn(*xs)` from now on: its class becomes one
    whose `__call__` is `fn` (one Python frame; the generic call costs ~0.2 us of a region of
    a few elements). `attrs` mark what `fn` is (`direct`: tier 0 for good, which a code
    generator may call or write in itself; `quick_call`: tier 1's generated caller, which
    hands a call it cannot take back to the generic call)."""
    base = fk._generic_class
    ns = {k: staticmethod(v) if callable(v) else v for k, v in attrs.items()}
    fk.__class__ = type(base.__name__, (base,), dict(
        ns, __call__=staticmethod(fn), __module__=base.__module__))


def generic(fk):
    """Calls of `fk` go through its class's generic call again."""
    fk.__class__ = fk._generic_class


# ------------------------------------------------------------------ 1. at build
def at_build(fk):
    """The kernel-level decision made when `fk` is built: a Decision when the region stays on
    tier 0 for good (its static signature's tier-0 route), else None (tier 0 until the region
    is hot, then `at_hot`)."""
    prog = fk.prog
    why = _never_tier1(prog, fk.fast_math)
    if why is None:
        return None
    plan = fk.tier0_plan
    route = plan.route
    why = "%s; tier 1 never: %s" % (plan.why, why)
    if route is Route.T0_SMALL:
        if off(Route.T0_INLINE):
            why += "; " + off_why(Route.T0_INLINE)
        else:
            route = Route.T0_INLINE
    return decide(route, why, _where(prog))


def tier0_for_good(fk):
    """Calls of `fk` go straight to its tier-0 function from now on (its decision: tier 0
    for good); a code generator may write a small region's statements into the step in place
    of the call (`FusedKernel.inline_form`) unless T0_INLINE is switched off."""
    if off(Route.T0_INLINE):
        direct(fk, fk.tier0)
    else:
        direct(fk, fk.tier0, direct=fk.tier0)


def _never_tier1(prog, fast_math):
    """Why tier 1 can never run the static `prog` (under its contract `fast_math`) whatever
    the settings, or None: too small for a compiled loop to pay, or, where it pays only
    through the generated caller, a region tier 1 refuses (a float32 `pow`, a sum it cannot
    do in NumPy's order)."""
    if not prog.static:
        return None
    shapes = [s for s, _ in prog.ins]
    ew = {s for j, s in enumerate(runtime_shapes(prog, shapes)[prog.n_in:])
          if not prog.ops[j].reduce}
    if len(ew) != 1:
        return None
    size = math.prod(ew.pop())
    units = policy.cost_units(prog)
    if not policy.pays(size, units, True, fast_math):
        return policy.pays_why(size, units, True, fast_math)
    if not policy.pays(size, units):
        why = numba_tier.why_not(prog, fast_math)
        if why is not None and numba_rows.why_not(prog, fast_math) is None:
            return None             # a row kernel (`tier1_runner`)
        if why is None and any(o.reduce for o in prog.ops):
            try:
                why = exact_sum_ok(prog, CollapsedPlan(prog, shapes, fast_math))
            except ValueError:
                why = None
        return why
    return None


def columns_why(prog):
    """Why tier 0 runs the static `prog` column by column (`numpy_columns`), or None: an
    elementwise region whose result's last axis is short (at most 4) after a long one (at
    least 16), as per-example outer products are (`policy.outer_region`): NumPy's loops over
    rows of 2 run ~4-20x slower than over columns of 64."""
    if not prog.static or any(o.reduce for o in prog.ops) or \
            any(v < prog.n_in for v in prog.outputs):
        return None
    S = prog.shape
    if len(S) < 2 or S[-1] > 4 or S[-1] < 2 or S[-2] < 16:
        return None
    if math.prod(S) < settings.large_min or off(Route.T0_COLUMNS):
        return None
    # NumPy merges contiguous dims into one loop: only an operand repeated along the short
    # axis (a column, (..., m, 1)) leaves it a loop of a few elements per row
    if not any(len(s) >= 2 and s[-1] == 1 and s[-2] == S[-2] for s, _ in prog.ins):
        return None
    return "a last axis of %d after one of %d: each column is one NumPy call over %d " \
        "elements" % (S[-1], S[-2], math.prod(S[:-1]))


# ------------------------------------------------------------------ 2. on the hot call
def at_hot(fk):
    """On the region's `settings.hot_calls`-th call: a Decision when tier 1 will never run it
    (tier 0 for good), else None (the caller makes its tier-1 runner, whose signatures
    `tier1_signature` plans). Reads `settings.numba` now."""
    prog = fk.prog
    mode = settings.numba
    if mode == "off":
        why = "settings.numba is 'off'"
    elif not numba_available():
        why = "numba is not installed"
    elif off(Route.T1_LOOP):
        why = off_why(Route.T1_LOOP)
    else:
        why = numba_tier.why_not(prog, fk.fast_math)
        if why is not None and prog.static:
            rows = numba_rows.why_not(prog, fk.fast_math)
            if rows is None and not off(Route.T1_ROWS):
                return None         # a row kernel (`tier1_runner`)
            if rows is None:
                why += "; " + off_why(Route.T1_ROWS)
        if why is not None:
            why = "tier 1 refuses it: " + why
        elif prog.static:
            why = _static_tier1_why(prog, fk.fast_math)
    if why is None:
        return None
    return decide(fk.tier0_plan.route if fk.tier0_plan is not None else None,
                  "tier 0 for good: " + why, _where(prog))


def tier1_runner(fk, sync):
    """The row kernel's runner for the hot region `fk` (`at_hot` let it have tier 1) where
    tier 1's loop refuses the region (T1_ROWS, `numba_rows`: reductions along the last axis
    used inside the region), else None (the loop's runner, `numba_runner.Runner`, whose
    signatures `tier1_signature` plans)."""
    prog = fk.prog
    why = numba_tier.why_not(prog, fk.fast_math)
    if why is None or not prog.static or numba_rows.why_not(prog, fk.fast_math) is not None:
        return None
    d = decide(Route.T1_ROWS, "tier 1's loop refuses it (%s); rows of %s: one pass over "
               "each row per round of reductions" % (why, numba_rows.RowForm(prog).S),
               _where(prog))
    return numba_rows.RowRunner(fk, sync, d, lambda fn: direct(fk, fn, quick_call=True),
                                numba_compile._submit, numba_compile.made,
                                numba_compile.build)


# tier-0 seconds run by regions waiting for tier 1, all together (numba's start is paid once,
# by all of them), and whether a kernel has been asked for in the background yet
_cold = 0.0
_started = False
# a renting region's own tier-0 seconds between two questions (its calls cost a comparison)
RECHECK_S = 0.01


def rent(fk, seconds):
    """Count `seconds` of tier 0 that region `fk` ran before its tier-1 kernel was asked for."""
    global _cold
    fk.spent += seconds
    _cold += seconds


def compile_pays(fk):
    """Whether tier 1 is asked for now, on a call of the hot region `fk` that tier 1 could
    run. With `settings.numba` 'sync', at once: the caller chose to wait for the compile.
    In the background, a compile holds the interpreter lock for most of its working time,
    slowing the caller's calls by about that much in all (`numba_compile.cost`; spread over
    five times as long by its rests, `numba_compile.RUN_S`), so it is asked for only
    once it pays: when the region has spent on tier 0 as much as its kernel costs, and the
    regions waiting for tier 1 together as much as numba's start (which they share). As in
    renting skis until the rent reaches their price, a program whose regions run for less
    than about a second never imports numba, and a longer one spends at most about twice
    what the best choice in hindsight would have."""
    global _started
    if settings.numba == "sync":
        return True
    start, kernel = numba_compile.cost(fk.prog)
    if (not _started and _cold < start) or fk.spent < kernel:
        fk.due = fk.spent + RECHECK_S
        return False
    _started = True
    return True


def _rent_text(fk):
    start, kernel = numba_compile.cost(fk.prog)
    text = "tier 0 until its tier-1 kernel pays: %.3f s of tier 0 so far, the kernel costs " \
        "%.2f s" % (fk.spent, kernel)
    if not _started:
        text += ", numba's start %.2f s (all waiting regions: %.3f s so far)" % (start, _cold)
    return text


def _static_tier1_why(prog, fast_math):
    p = CollapsedPlan(prog, [s for s, _ in prog.ins], fast_math)
    units = policy.cost_units(prog)
    if not p.ok:
        return "its results have different shapes"
    if not policy.pays(p.size, units, True, fast_math):
        return policy.pays_why(p.size, units, True, fast_math)
    return exact_sum_ok(prog, p)


_numba_found = None


def numba_available():
    """Whether numba can be imported (checked without importing it)."""
    global _numba_found
    if _numba_found is None:
        _numba_found = importlib.util.find_spec("numba") is not None
    return _numba_found


# ------------------------------------------------------------------ 3. tier 0 per signature
class Tier0Plan:
    """Tier 0's route for one signature of a region (`generate`'s code keeps one per shape):
    `route` and `why`, the elementwise shape `S` and `size`, whether the large path runs
    (`large`), and `block` (a `blocks.Blocks`) where it runs chunk by chunk."""
    __slots__ = ("large", "S", "size", "shapes", "block", "route", "why")

    def __init__(self, prog, in_shapes, blockable=False, parallel=False):
        """`blockable`: whether the program may run blocked (`numpy_tier.blockable`);
        `parallel`: whether its chunks may be shared between threads."""
        self.shapes = runtime_shapes(prog, in_shapes)
        ew = {self.shapes[prog.n_in + j] for j, o in enumerate(prog.ops) if not o.reduce}
        self.S = ew.pop() if len(ew) == 1 else None
        self.size = math.prod(self.S) if self.S is not None else 0
        self.large = self.S is not None and self.size >= settings.large_min
        self.block = None
        n = self.size
        if not self.large:
            if self.S == () and prog.static and not any(o.reduce for o in prog.ops):
                if not off(Route.T0_SCALAR):
                    self.route, self.why = Route.T0_SCALAR, "every value 0-d"
                    return
                self.route, self.why = Route.T0_SMALL, off_why(Route.T0_SCALAR)
                return
            self.route, self.why = Route.T0_SMALL, "%d elements < settings.large_min " \
                "(%d)" % (n, settings.large_min) if self.S is not None else \
                "values of several shapes (a row region)"
            return
        self._large(prog, in_shapes, blockable, parallel)

    def _large(self, prog, in_shapes, blockable, parallel):
        n = self.size
        nt = blocks.threads() if parallel and n >= settings.block_threads_min else 1
        offs = []
        if nt > 1 and off(Route.T0_THREADS):
            nt = 1
            offs.append(off_why(Route.T0_THREADS))
        if nt == 1 and blockable and self.S and n >= settings.block_min and \
                off(Route.T0_BLOCKED):
            blockable = False
            offs.append(off_why(Route.T0_BLOCKED))
        if blockable and self.S and (n >= settings.block_min or nt > 1):
            width = max(d.itemsize for d in [o.dtype for o in prog.ops] +
                        [d for _, d in prog.ins])
            self.block = blocks.Blocks(self.S, in_shapes,
                                       max(1, settings.block_bytes // width), nt)
            if self.block.nthreads > 1:
                self.route, self.why = Route.T0_THREADS, "%d elements >= " \
                    "settings.block_threads_min (%d)" % (n, settings.block_threads_min)
            else:
                self.route, self.why = Route.T0_BLOCKED, "%d elements >= " \
                    "settings.block_min (%d)" % (n, settings.block_min)
            self.why += ", chunks of %d elements" % self.block.cap
        elif off(Route.T0_LARGE):
            self.large = False
            self.route, self.why = Route.T0_SMALL, off_why(Route.T0_LARGE)
        else:
            self.route, self.why = Route.T0_LARGE, "%d elements >= settings.large_min " \
                "(%d)" % (n, settings.large_min)
            if n >= settings.block_min and not blockable and not offs:
                self.why += " (not chunked: the region's values cannot all go by chunks)"
        if offs:
            self.why = "; ".join([self.why] + offs)

    def decision(self):
        return Decision(self.route, self.why, self.block if self.route is Route.T0_THREADS
                        else None)


def tier0_signature(prog, in_shapes, blockable, parallel):
    """A tier-0 plan made for a call of a new shape (tier 0's generated code asks)."""
    p = Tier0Plan(prog, in_shapes, blockable, parallel)
    decide(p.route, p.why, _where(prog, in_shapes))
    return p


# ------------------------------------------------------------------ 4. tier 1 per signature
def tier1_signature(runner, shapes, plan, compacted):
    """The decision for a tier-1 signature of `runner`'s region: `plan` the collapsed plan of
    the operands' shapes (None: they do not broadcast), `compacted` that of the operands with
    their broadcast dims compacted (or the reason they cannot be), None when none is."""
    prog = runner.prog
    where = _where(prog, shapes)
    if plan is None or not plan.ok:
        return decide(None, "tier 0: the operands' shapes do not make one result shape",
                      where)
    units = runner.units
    static = runner.static_plan is not None
    fast = runner.fast_math
    if not policy.pays(plan.size, units, static, fast):
        return decide(None, "tier 0: " + policy.pays_why(plan.size, units, static, fast),
                      where)
    if isinstance(compacted, str):
        return decide(None, "tier 0: " + compacted, where)
    p = compacted if compacted is not None else plan
    if runner.red_out:
        why = exact_sum_ok(prog, p)
        if why is not None:
            return decide(None, "tier 0: " + why, where)
    why = policy.pays_why(plan.size, units, static)
    if runner.parallel_ok and (p.size >= settings.numba_parallel_min or (
            runner.heavy and p.size >= settings.numba_parallel_heavy_min)):
        if off(Route.T1_THREADS):
            return decide(Route.T1_LOOP, why + "; " + off_why(Route.T1_THREADS), where)
        how = _split(runner, p)
        return decide(Route.T1_THREADS, why + "; from %d elements one thread and %s are "
                      "timed" % (settings.numba_parallel_heavy_min if runner.heavy
                                 else settings.numba_parallel_min, how), where)
    return decide(Route.T1_LOOP, why + ("" if runner.parallel_ok else
                                        "; one thread (%s)" % runner.serial_why), where)


# one-thread calls of a signature before its two-thread kernel is compiled and timed
PAR_AFTER = 32


def _split(runner, plan):
    """How a T1_THREADS signature's loop is shared between threads, in words."""
    how = "chunks of rows, each the one-thread loop" if not runner.red_out else "its sum's rows"
    return "%d (numba's parallel loop over %s)" % (blocks.threads(), how)


def threads_for_call(runner, d, plan):
    """How many threads this call of a T1_THREADS signature uses (one, or the choice's
    several), and the choice (`blocks.ThreadChoice`) or None. numba's parallel kernel is a
    second, slower compile, asked for only once the one-thread kernel has run a while (a
    short-lived program, or the first calls of a long one, do not wait behind it), then one
    thread and `blocks.threads()` are timed. In a process forked from one that ran numba's
    parallel loop, one thread (`numba_compile.FORKED_AFTER_PARALLEL`)."""
    if numba_compile.FORKED_AFTER_PARALLEL:
        return 1, None
    choice = plan.choice
    if choice is None and plan.kernel is not None:
        plan.serial_runs += 1
        if plan.serial_runs > PAR_AFTER or (
                plan.serial_runs == 1 and runner.compiled(plan, True)):
            # (at once where this process already compiled it: another copy of the
            # same program, e.g. a retrace)
            choice = plan.choice = blocks.ThreadChoice(blocks.threads())
    if choice is None:
        return 1, None
    d.choice = choice
    return choice.choose(), choice


def kernel_for_call(runner, d, plan, parallel, xs):
    """The tier-1 kernel this call runs, or None: the call runs tier 0. The one place that
    decides a call does not wait for a compile: a kernel not compiled yet is asked for
    (compiled now with `settings.numba` 'sync', else in the background) and, until it is
    there, the call runs the one-thread kernel standing in for the two-thread one, or tier 0."""
    k = plan.parallel_kernel if parallel else plan.kernel
    if k is None:
        runner.ensure(plan, parallel, xs)
        k = plan.parallel_kernel if parallel else plan.kernel
        if k is None:
            k = plan.kernel if parallel else None
            if k is None:
                d.fallback("tier-1 kernel compiling")
    return k


def in_place_kernel(runner, plan, parallel, xs, in_place):
    """The kernel for a call whose donated buffers are operands (`in_place`: pairs (result j,
    operand i)): the variant that stores through the operand's own name (given one array as
    operand and output, LLVM's overlap check fails and the loop runs 2-3x slower), asked for
    here; None until it is compiled (the plain kernel, correct on the shared buffer, runs)."""
    key = (parallel, in_place)
    if off(Route.T1_INPLACE):
        if key not in runner.inplace_decisions:
            runner.inplace_decisions[key] = Decision(None, "results %s given the buffers of "
                                                     "operands %s: %s" % (
                                                         tuple(j for j, _ in in_place),
                                                         tuple(i for _, i in in_place),
                                                         off_why(Route.T1_INPLACE)))
        return None
    kv = plan.variants.get(key)
    if kv is None:
        runner.ensure(plan, parallel, xs, in_place)
        kv = plan.variants.get(key)
    if kv is not None and key not in runner.inplace_decisions:
        runner.inplace_decisions[key] = decide(
            Route.T1_INPLACE, "results %s given the buffers of operands %s" % (
                tuple(j for j, _ in in_place), tuple(i for _, i in in_place)),
            _where(runner.prog))
    return kv


def generated_caller(runner, d, plan, k, parallel, donors, in_place):
    """Which generated caller the general call just made is due ('quick': for calls without
    donors; 'into': for calls that write every result over an operand), or None. Only for a
    static region on one thread whose kernel is the plain one (not while a two-thread kernel
    compiles and the serial one stands in), once."""
    if runner.const_pos is None or runner.static_plan is None or d.route is not Route.T1_LOOP:
        return None
    if runner.quick is None and not donors and not in_place and runner.prog.n_in and \
            k is plan.kernel:
        return _unless_off(Route.T1_DIRECT, d, "quick")
    if runner.quick_into is None and plan is runner.static_plan and in_place and \
            len(in_place) == len(runner.outs) and not runner.red_out and \
            k is plan.variants.get((parallel, in_place)) and \
            len(donors) == len(runner.prog.outputs):
        return _unless_off(Route.T1_DIRECT_INTO, d, "into")
    return None


def baked_caller(runner):
    """Whether the generated caller of `runner`'s region gets a kernel of its own, with its
    constants in it and its scalars taken as scalars (T1_DIRECT_BAKED): only for a region
    whose calls are all its size (`quick_only`: on more elements the call's fixed cost is
    a small part, not worth a second compile)."""
    if not runner.quick_only:
        return False
    if off(Route.T1_DIRECT_BAKED):
        d = runner.quick_decision
        if d is not None and off_why(Route.T1_DIRECT_BAKED) not in d.why:
            d.why += "; " + off_why(Route.T1_DIRECT_BAKED)
        return False
    return True


def _unless_off(route, d, due):
    """`due`, or None where `route` is switched off (the signature's decision `d` says so)."""
    if not off(route):
        return due
    w = off_why(route)
    if w not in d.why:
        d.why += "; " + w
    return None


def device_route(fk, backend):
    """The route of `fk`'s calls on `backend`'s buffers, decided on the first: the backend's
    compiled kernel for the region (compiled here, kept in `fk.device_kernels`), or each op's
    own kernel where the backend compiles none (False kept there: `run_fused` then runs the
    ops one by one)."""
    d = fk.device_decisions.get(backend)
    if d is None:
        kernels = fk.device_kernels
        why = ""
        if backend not in kernels:
            if off(Route.DEVICE_KERNEL):
                kernels[backend], why = False, "; " + off_why(Route.DEVICE_KERNEL)
            else:
                kernels[backend] = backend.compile_fused(fk.prog) or False
        k = kernels[backend]
        d = fk.device_decisions[backend] = decide(
            Route.DEVICE_KERNEL if k else Route.DEVICE_OPS,
            "buffers on %s%s" % (backend.name, "" if k else ": no compiled kernel for the "
                                 "region, each op its own kernel") + why, _where(fk.prog))
    return d


# ------------------------------------------------------------------ explain
def _where(prog, shapes=None):
    body = prog.describe()
    if len(body) > 60:
        body = body[:57] + "..."
    return "fused{%s}%s" % (body, "" if shapes is None else " %s" % (tuple(
        tuple(s) for s in shapes),))


def kernel_report(fk):
    """The planner's decisions for one fused kernel, as lines of text."""
    prog = fk.prog
    lines = ["fused{%s} %s" % (prog.body(), _shape_text(prog)), "  contract: " + (
        contract.FAST if fk.fast_math else contract.EXACT)]
    for b, d in fk.device_decisions.items():
        lines.append("  on %s: %s" % (getattr(b, "name", b), d.text()))
    d = fk.decision
    if d is not None:
        lines.append("  " + d.text())
    elif fk.runner is None and fk.calls < fk.hot:
        lines.append("  tier 0 until call %d (%d so far), then tier 1 is considered"
                     % (fk.hot, fk.calls))
    elif fk.runner is None:
        lines.append("  " + _rent_text(fk))
    if fk.runner is not None:
        lines.extend("  " + ln for ln in fk.runner.report())
    if d is None or d.route not in TIER0 or not prog.static:
        for shapes, plan in fk.tier0_plans():
            lines.append("  tier 0 for %s: %s" % (_sig_text(shapes), plan.decision().text()))
    return lines


def _shape_text(prog):
    dts = sorted({str(o.dtype) for o in prog.ops})
    return "%s[%s]" % ("/".join(dts), ",".join("?" if d is None else str(d) for d in prog.shape))


def _sig_text(shapes):
    return "(%s)" % ", ".join(str(tuple(s)) for s in shapes)


def _kernels_of(obj, seen):
    """The fused kernels of an nf.function (every graph it traced), a concrete function, a
    graph, or a kernel, in order."""
    if hasattr(obj, "prog") and hasattr(obj, "tier0"):
        if id(obj) not in seen:
            seen.add(id(obj))
            yield obj
        return
    cache = getattr(obj, "_cache", None)
    if cache is not None and not hasattr(obj, "nodes"):
        for cf in list(cache.values()):
            yield from _kernels_of(cf, seen)
        return
    g = getattr(obj, "graph", None)
    if g is not None and not hasattr(obj, "nodes"):
        yield from _kernels_of(g, seen)
        return
    for n in getattr(obj, "nodes", ()):
        if n.prim.fused:
            yield from _kernels_of(getattr(n.prim.impl, "kernel", n.prim.impl), seen)
        for sub in n.subgraphs():
            # (a body's regions are in its optimized graph, made at its first run)
            yield from _kernels_of(sub.optimized if sub.optimized is not None else sub.graph,
                                   seen)


def explain(obj):
    """Which route each fused region of `obj` takes, and why: `obj` an `nf.function` (every
    graph it has traced), a concrete function, a graph or a fused kernel. One paragraph per
    region: its ops and shape, then the planner's decisions (at build, on its hot call, per
    signature on tier 1 and tier 0) with their reasons and the calls a per-call condition
    sent to tier 0. Also logged decision by decision with NDFLOW_DEBUG=plan."""
    out = []
    for i, fk in enumerate(_kernels_of(obj, set())):
        out.append("region %d: " % (i + 1) + "\n".join(kernel_report(fk)))
    return "\n".join(out) if out else "no fused regions"
