"""Kernels for fused elementwise regions, generated from one `Program` and cached by its key.

Tier 0 (`numpy_tier`) is NumPy code and always runs first. Tier 1 (`numba_tier`; numba is a
dependency, but ndflow still runs without it, on tier 0) compiles the region into one loop that inlines our own vectorizable math
(`mathlib`); it is requested after a region has run `settings.hot_calls` times (default 3),
compiled in a background thread and swapped in when ready. The numbers and switches that
decide this (tier 1 on, off or synchronous, fast math, the sizes from which each way pays)
are fields of `nf.config.settings` (`ndflow/core/settings.py`). Compiled kernels are kept in
NDFLOW_CACHE_DIR (default ~/.cache/ndflow/kernels): a private directory (0700; refused if
another user owns it or group/others may write it) whose files are verified (HMAC) before
numba loads them. NDFLOW_DEBUG=kernels prints each generated kernel's source.

The core never imports numba: `numba_tier` is imported when a compile is first requested.

A region tier 1 will never take (static shapes too small for a compiled loop to pay, or tier 1
was asked once and gave none) is called straight as its tier-0 function: the kernel's class
becomes one whose `__call__` is that function, and `FusedKernel.direct` names it, so that a
code generator may call the plain function itself (one frame; the generic `__call__` costs
~0.2 us per call of a region of a few elements).
"""
import importlib.util
import threading

from .program import Program, Op
from . import numpy_tier, policy
from .. import debug as _dbg
from ...backends.device import _BY_TYPE as _DEVICE_BUFFERS
from ...core.settings import settings

__all__ = ["Program", "Op", "FusedKernel", "kernel_for", "numba_available", "wait_for_compiles"]



def numba_mode():
    """'off', 'sync' or 'background' (`settings.numba`, read at each request)."""
    return settings.numba


def fast_math():
    """Whether tier 1 may trade exactness for speed (`settings.fast_math`)."""
    return settings.fast_math


_numba_found = None


def numba_available():
    """Whether numba can be imported (checked without importing it)."""
    global _numba_found
    if _numba_found is None:
        _numba_found = importlib.util.find_spec("numba") is not None
    return _numba_found


class _Entry:
    """Everything built for one program key: tier 0 now, tier 1 when (and if) it is ready."""
    __slots__ = ("prog", "tier0", "tier1", "state", "why_not", "lock", "overwritable")

    def __init__(self, prog):
        self.prog = prog
        self.tier0 = numpy_tier.generate(prog)[0]      # source, for printing
        self.tier1 = None
        self.state = "none"      # none | queued | ready | unsupported | failed
        self.why_not = None
        self.lock = threading.Lock()
        self.overwritable = None
        if "kernels" in _dbg.FLAGS:
            print("# ndflow fused kernel, tier 0:\n" + self.tier0)


_CACHE = {}
_CACHE_LOCK = threading.Lock()


def kernel_for(prog, uses_blas=False):
    """The FusedKernel for `prog` (tier-0 code shared between equal programs)."""
    key = (prog.key, fast_math())
    with _CACHE_LOCK:
        e = _CACHE.get(key)
        if e is None:
            e = _CACHE[key] = _Entry(prog)
    return FusedKernel(e, uses_blas)


class FusedKernel:
    """The `impl` of a fused node: runs tier 1 when it is ready and applies, else tier 0.

    One instance per fused node (it holds that node's pooled results); the generated code is
    shared through the program cache."""

    def __init__(self, entry, uses_blas=False):
        self.entry = entry
        self.prog = entry.prog
        # beside BLAS (which keeps its threads spinning after a call) a two-thread loop only
        # fights for the cores: run tier 1 on one thread in graphs that call BLAS
        self.parallel = not uses_blas
        self.calls = 0
        self.hot = settings.hot_calls
        self.fast = None           # bound tier-1 runner once ready
        self.tier1_unavailable = None    # why tier 1 will never run this region, once known
        self.device_kernels = {}   # device backend -> its compiled kernel (False: none)
        # own pools, nothing shared; asks `_on_device` first while a device backend is in use,
        # so that it can stand for the whole kernel (`_go_direct`)
        self.tier0 = numpy_tier.build(entry.prog, self.parallel, self._on_device)
        why = _never_tier1(entry.prog)
        if why is not None:
            self.tier1_unavailable = why
            self._go_direct()

    def _go_direct(self):
        """Calls of this kernel go straight to the tier-0 function: no call counting, no
        tier-1 test, one Python frame (a fused region of a few elements costs ~1 us, of which
        the generic `__call__` was ~0.2). Only for a region tier 1 will never take."""
        if type(self) is FusedKernel:
            self.__class__ = type("FusedKernel", (FusedKernel,),
                                  {"__call__": staticmethod(self.tier0), "direct": staticmethod(self.tier0),
                                   "__module__": __name__})

    def use_quick(self, fn):
        """Calls of this kernel go straight to `fn(*xs)`, tier 1's generated caller for its
        static operands (`numba_tier.Runner._make_quick`), which hands any call it cannot take
        to `FusedKernel.__call__`: one frame for the kernel, the runner and the caller, ~0.3 us
        of a region of a few elements."""
        if type(self) is FusedKernel:
            self.__class__ = type("FusedKernel", (FusedKernel,),
                                  {"__call__": staticmethod(fn), "quick_call": True,
                                   "__module__": __name__})

    def drop_quick(self):
        if getattr(type(self), "quick_call", False):
            self.__class__ = FusedKernel

    quick_call = False

    # a plain function doing what calling the kernel does, once that is tier 0 alone (None
    # until then): code generators may call it instead of the kernel object
    direct = None

    def inline_form(self, args, consts, prefix, outs):
        """The region as statements for a code generator to write in place of its call, once
        calls go straight to tier 0 (`numpy_tier.inline_form`), else None."""
        if self.direct is None:
            return None
        return numpy_tier.inline_form(self.prog, args, consts, prefix, outs,
                                      self.tier0.__globals__.get("_static_plan"))

    def _on_device(self, xs):
        b = _device_backend(xs)
        if b is None:
            return NotImplemented
        return b.run_fused(self.prog, xs, self.device_kernels)

    def __call__(self, *xs):
        if _DEVICE_BUFFERS:          # a device backend is in use: its buffers run on it
            b = _device_backend(xs)
            if b is not None:
                return b.run_fused(self.prog, xs, self.device_kernels)
        fast = self.fast
        if fast is not None:
            r = fast(xs)
            if r is not NotImplemented:
                return r
        elif self.calls < self.hot:
            self.calls += 1
            if self.calls == self.hot:
                self._request(xs)
        return self.tier0(*xs)

    def _request(self, xs):
        mode = numba_mode()
        if mode != "off" and numba_available():
            from . import numba_tier
            numba_tier.request(self, mode == "sync", xs)
        if self.fast is None:
            # asked once, and no tier 1 came (refused, too small, numba off or missing): it
            # never will, so tier 0 is this kernel from now on
            self._go_direct()

    def into(self, xs, donors, spares=None):
        """Run with `donors[k]` (a dead buffer, or None) offered for result k. `spares`
        (memory._Spares): donors that only tier 1 may write into, and what a call on tier 0
        writes those results into instead."""
        if _DEVICE_BUFFERS:
            b = _device_backend(xs)
            if b is not None:        # device memory comes from the backend's pool, not donors
                return b.run_fused(self.prog, xs, self.device_kernels)
        fast = self.fast
        if fast is not None:
            r = fast(xs, donors)
            if r is not NotImplemented:
                return r
        elif self.calls < self.hot:      # counted as in __call__: buffer reuse must not keep tier 1 off
            self.calls += 1
            if self.calls == self.hot:
                self._request(xs)
        if spares is not None:
            donors = spares.replace(donors)
        return self.tier0(*xs, *donors)

    def can_write_over(self, k, i):
        """Whether result k may go into the buffer of operand i (tier 0 and tier 1 alike:
        tier 1 reads every operand of an element before writing its results)."""
        ow = self.entry.overwritable
        if ow is None:
            ow = self.entry.overwritable = numpy_tier.overwritable(self.prog)
        return (k, i) in ow

    def tier(self):
        """1 when the numba kernel is in use, else 0."""
        return 1 if self.fast is not None else 0

    def source(self):
        return self.tier0.source


def _never_tier1(prog):
    """Why tier 1 can never run `prog` whatever the settings, or None: static shapes too small
    for a compiled loop to pay (`policy.pays`; numba_tier does not import numba)."""
    if not prog.static:
        return None
    from . import numba_tier
    plan = numpy_tier.Plan(prog, [s for s, _ in prog.ins])
    if plan.S is None:
        return None
    units = policy.cost_units(prog)
    if not policy.pays(plan.size, units, True):
        return "too small (%d elements) for a compiled loop to pay" % plan.size
    if not policy.pays(plan.size, units):
        # small enough that it pays only through the generated caller: a region tier 1
        # refuses (a float32 `pow`, a sum it cannot do in NumPy's order) is known now, and
        # stays written into the step
        why = numba_tier.why_not(prog)
        if why is None and any(o.reduce for o in prog.ops):
            try:
                why = numba_tier.exact_sum_ok(prog, numba_tier.Plan(prog, [s for s, _ in prog.ins]))
            except ValueError:
                why = None
        return why
    return None


def _device_backend(xs):
    """The device backend of the first device buffer among `xs`, or None (host buffers)."""
    for x in xs:
        b = _DEVICE_BUFFERS.get(type(x))
        if b is not None:
            return b
    return None


def wait_for_compiles(timeout=None):
    """Block until queued tier-1 compiles have finished (no-op without numba)."""
    import sys
    m = sys.modules.get(__name__ + ".numba_tier")
    if m is not None:
        m.wait(timeout)
