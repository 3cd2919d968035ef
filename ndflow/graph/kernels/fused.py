"""`FusedKernel`: the `impl` of a fused node, the object the generated step calls for a region.

It holds the region's tier-0 function (always there), its tier-1 runner once the planner asks
for one, and the kernels device backends compiled for it; which of them a call runs is the
planner's decision (`planner.py`), made once per signature. One instance per fused node (it
holds that node's pooled results); equal programs share what can be shared through the
program cache (`kernel_for`)."""
import threading
from time import perf_counter as _clock

from . import numpy_tier, numpy_columns, planner
from .numba_runner import Runner
from .planner import Route
from .. import debug as _dbg
from ...backends.device import _BY_TYPE as _DEVICE_BUFFERS
from ...core.settings import settings


class _Entry:
    """What equal programs share: the program, and which results may go over which operands."""
    __slots__ = ("prog", "overwritable", "fast_math")

    def __init__(self, prog, fast_math):
        self.prog = prog
        self.fast_math = fast_math
        self.overwritable = None


_CACHE = {}
_CACHE_LOCK = threading.Lock()


def kernel_for(prog, uses_blas=False):
    """The FusedKernel for `prog` under the current contract (`settings.fast_math`)."""
    key = (prog.key, settings.fast_math)
    with _CACHE_LOCK:
        e = _CACHE.get(key)
        if e is None:
            e = _CACHE[key] = _Entry(prog, key[1])
    return FusedKernel(e, uses_blas)


class FusedKernel:
    """The `impl` of a fused node: its call runs the route the planner chose (tier 1 when its
    runner takes the call, else tier 0; a device backend for device buffers)."""

    def __init__(self, entry, uses_blas=False):
        self.entry = entry
        self.prog = prog = entry.prog
        self.fast_math = entry.fast_math
        # beside BLAS (which keeps its threads spinning after a call) a two-thread loop only
        # fights for the cores: run tier 1 on one thread in graphs that call BLAS
        self.parallel = not uses_blas
        self.calls = 0
        self.hot = settings.hot_calls
        self.spent = 0.0           # seconds of tier 0 before tier 1 was asked for
        self.due = 0.0             # `spent` from which the planner is asked again
        self.runner = None         # tier 1's runner, once the planner asks for it
        self.decision = None       # the planner's kernel-level decision (tier 0 for good)
        self.device_kernels = {}   # device backend -> its compiled kernel (False: none)
        self.device_decisions = {}
        # own pools, nothing shared; asks `_on_device` first while a device backend is in use,
        # so that it can stand for the whole kernel (`planner.direct`)
        self.tier0 = numpy_tier.build(prog, self.parallel, self._on_device)
        self.tier0_plan = self.tier0.__globals__.get("_static_plan")
        why = planner.columns_why(prog)
        if why is not None:
            self.tier0 = numpy_columns.build(prog, self.tier0)
            self.tier0_plan.route, self.tier0_plan.why = Route.T0_COLUMNS, why
        if "kernels" in _dbg.FLAGS:
            _dbg.log("# ndflow fused kernel, tier 0:\n" + self.tier0.source)
        self.decision = planner.at_build(self)
        if self.decision is not None:
            planner.tier0_for_good(self)

    _generic_class = None      # (FusedKernel itself, set below: planner.direct's base)
    # (result k, operand i): results the graph gives the buffer of one of the node's own
    # operands (set by memory.reuse_buffers): tier 1 asks for the kernel variant writing
    # them over those operands together with its first kernel
    operand_donors = ()
    quick_call = False

    # a plain function doing what calling the kernel does, once that is tier 0 alone (None
    # until then): code generators may call it instead of the kernel object
    direct = None

    @property
    def tier1_unavailable(self):
        """Why tier 1 will never run this region (the planner's reason), or None."""
        d = self.decision
        return d.why if d is not None and self.runner is None else None

    def inline_form(self, args, consts, prefix, outs):
        """The region as statements for a code generator to write in place of its call, once
        calls go straight to tier 0 (`numpy_tier.inline_form`), else None."""
        if self.direct is None:
            return None
        return numpy_tier.inline_form(self.prog, args, consts, prefix, outs, self.tier0_plan)

    def _on_device(self, xs):
        b = _device_backend(xs)
        if b is None:
            return NotImplemented
        return self._device(b, xs)

    def _device(self, b, xs):
        if b not in self.device_decisions:
            planner.device_route(self, b)
        return b.run_fused(self.prog, xs, self.device_kernels)

    def __call__(self, *xs):
        if _DEVICE_BUFFERS:          # a device backend is in use: its buffers run on it
            b = _device_backend(xs)
            if b is not None:
                return self._device(b, xs)
        r = self.runner or self._counted()
        if r is None:
            return self._cold(xs, ())
        out = r(xs)
        if out is not NotImplemented:
            return out
        return self.tier0(*xs)

    def _counted(self):
        """Before tier 1 is asked for: count the call; on the region's hot call the planner
        says whether tier 1 could ever run it (else the region stays on tier 0 for good: its
        calls then go straight to the tier-0 function), and from then on, call by call,
        whether asking for its kernel pays yet. Returns tier 1's runner once it is asked
        for, else None (tier 0)."""
        if self.calls < self.hot:
            self.calls += 1
            if self.calls < self.hot:
                return None
            d = planner.at_hot(self)
            if d is not None:
                self.decision = d
                planner.tier0_for_good(self)
                return None
        if self.spent < self.due or not planner.compile_pays(self):
            return None
        sync = settings.numba == "sync"
        self.runner = planner.tier1_runner(self, sync) or Runner(self, sync)
        return self.runner

    def _cold(self, xs, donors):
        """A call on tier 0 before tier 1 is asked for, timed: what a region spends on tier 0
        is what its compile must pay back (`planner.compile_pays`)."""
        t = _clock()
        out = self.tier0(*xs, *donors)
        planner.rent(self, _clock() - t)
        return out

    def into(self, xs, donors, spares=None):
        """Run with `donors[k]` (a dead buffer, or None) offered for result k. `spares`
        (memory._Spares): donors that only tier 1 may write into, and what a call on tier 0
        writes those results into instead."""
        if _DEVICE_BUFFERS:
            b = _device_backend(xs)
            if b is not None:        # device memory comes from the backend's pool, not donors
                return self._device(b, xs)
        # counted as in __call__: buffer reuse must not keep tier 1 off
        r = self.runner or self._counted()
        if r is not None:
            out = r(xs, donors)
            if out is not NotImplemented:
                return out
        if spares is not None:
            donors = spares.replace(donors)
        if r is None:
            return self._cold(xs, donors)
        return self.tier0(*xs, *donors)

    def can_write_over(self, k, i):
        """Whether result k may go into the buffer of operand i (tier 0 and tier 1 alike:
        tier 1 reads every operand of an element before writing its results)."""
        ow = self.entry.overwritable
        if ow is None:
            ow = self.entry.overwritable = numpy_tier.overwritable(self.prog)
        return (k, i) in ow

    def tier(self):
        """1 when tier 1 has been asked for (its runner takes the calls it can), else 0."""
        return 1 if self.runner is not None else 0

    def tier0_plans(self):
        """(operand shapes, tier-0 plan) for each signature tier 0 has planned."""
        g = self.tier0.__globals__
        if self.tier0_plan is not None:
            return [([s for s, _ in self.prog.ins], self.tier0_plan)]
        return list(g.get("_plans", {}).items())

    def source(self):
        return self.tier0.source


FusedKernel._generic_class = FusedKernel


def _device_backend(xs):
    """The device backend of the first device buffer among `xs`, or None (host buffers)."""
    for x in xs:
        b = _DEVICE_BUFFERS.get(type(x))
        if b is not None:
            return b
    return None
