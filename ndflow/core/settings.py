"""The compiler's and the kernel tiers' tuning: one settings object, `nf.config.settings`.

Every number or switch that decides how a fused region runs lives here, with what it means and
its default, instead of in environment variables read by the modules that use them. Reading a
setting gives the calling thread's value; assigning one changes it for the whole process;
`override` changes some for the calling thread only, until the `with` block ends (tests,
benchmarks, a library that wants its own choice without touching its callers'):

    >>> import ndflow as nf
    >>> nf.config.settings.fast_math
    False
    >>> with nf.config.settings.override(numba="off", large_min=16):
    ...     nf.config.settings.numba
    'off'
    >>> nf.config.settings.large_min
    4096

Settings are read when a decision is made (a graph is optimized, a region's kernel is built,
a new signature of a region is planned), not at every call: a region planned under one value
keeps its route. Compiles that run in the background thread see the overrides of the thread
that asked for them (`bound`).

Only debugging output (NDFLOW_DEBUG, NDFLOW_VERIFY) and the kernel cache's directory
(NDFLOW_CACHE_DIR) are read from the environment.
"""
import _thread
import os
import re

__all__ = ["Settings", "settings"]

_UNSET = object()

# field name -> functions called (without arguments) once the calling thread's value of the
# field may have changed: what caches a setting at a mode change (core/state.py's eager
# routes) reads it again
ON_CHANGE = {}


def _changed(names):
    for name in names:
        for f in ON_CHANGE.get(name, ()):
            f()


def _bool(v):
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("1", "on", "true", "yes"):
            return True
        if s in ("0", "off", "false", "no"):
            return False
        raise ValueError("expected a boolean, got %r" % (v,))
    return bool(v)


def _count(low):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < low:
            raise ValueError("expected an integer >= %d, got %r" % (low, v))
        return int(v)
    return check


def _units(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
        raise ValueError("expected a number >= 0, got %r" % (v,))
    return float(v)


def _numba(v):
    if v is True or v is False:
        return "background" if v else "off"
    s = str(v).strip().lower()
    if s in ("off", "0", "false", "no"):
        return "off"
    if s in ("sync", "background"):
        return s
    raise ValueError("expected 'background', 'sync' or 'off' (or a boolean), got %r" % (v,))


def _threads(v):
    return None if v is None else _count(1)(v)


# The routes `routes_off` may name: the planner's (graph/kernels/planner.py `Route`), the
# eager door's (core/dispatch.py), the tape's eager backward plan (autodiff/eager_plan.py)
# with its cached schedules (autodiff/eager_schedule.py);
# not the reference of a family, which is what the others fall back to: tier 0's one NumPy
# call per op (T0_SMALL), a device backend op by op (DEVICE_OPS), the door's general route,
# the tape's reference backward loop. tests/test_routes_off.py checks the names against the
# modules'.
ROUTES = ("T0_INLINE", "T0_SCALAR", "T0_LARGE", "T0_COLUMNS", "T0_BLOCKED", "T0_THREADS",
          "T1_LOOP", "T1_THREADS", "T1_INPLACE", "T1_DIRECT", "T1_DIRECT_BAKED",
          "T1_DIRECT_INTO", "T1_ROWS", "DEVICE_KERNEL", "plain", "lane", "eager_plan",
          "eager_schedule")


def _routes(v):
    if isinstance(v, str):
        v = v.replace(",", " ").split()
    names = frozenset(getattr(r, "name", r) for r in v)
    bad = sorted(str(n) for n in names if n not in ROUTES)
    if bad:
        raise ValueError("no switchable route named %s; the routes: %s" % (
            ", ".join(bad), " ".join(ROUTES)))
    return names


class _Field:
    """One setting: its default, the check that normalizes an assigned value, and its doc."""

    def __init__(self, default, check, doc):
        self.default, self.check, self.__doc__ = default, check, doc

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        v = obj._local.__dict__.get(self.name, _UNSET)
        return obj._values[self.name] if v is _UNSET else v

    def __set__(self, obj, value):
        obj._values[self.name] = self.check(value)
        _changed((self.name,))


class _Local(_thread._local):
    pass


class Settings:
    """The compiler's and the kernel tiers' tuning (see the module docstring). Each field is
    documented below; `settings.describe()` lists them with their values."""

    # ---------------------------------------------------------------- what the compiler does
    fusion = _Field(True, _bool, """Whether `nf.function` fuses connected elementwise
        operations into one kernel per region (the `elementwise_fusion` pass). Off: every
        operation is its own NumPy call.""")
    fast_math = _Field(False, _bool, """Whether compiled code may trade NumPy's exact bits
        for speed: tier 1 then computes exp, log, tanh ... with ndflow's own vectorizable
        math (within a few ulps of NumPy's) and sums in its own order, and the optimizer may
        merge a stack of matrix products into one BLAS call. Off (the default): compiled
        results are NumPy's bit for bit. Read when a function traces: its regions keep that
        contract. For one function whatever this says: `nf.function(..., jit_compile=True)`
        (the bounds: docs/guides/performance.md).""")
    # ---------------------------------------------------------------- tier 1 (numba)
    numba = _Field("background", _numba, """How tier 1 (a region compiled by numba into one
        loop) is used: 'background' gets the kernel while tier 0 runs the calls, once the
        region's tier-0 time has paid for what that costs the caller: a helper process, at
        the lowest priority, compiles it into the kernel cache, and a helper thread loads it
        (the thread holds the interpreter lock for most of its working time: about half a
        second for numba's import and first load, milliseconds per kernel; it works a fifth
        of the time, resting between slices, so that the caller's calls keep most of the lock
        meanwhile; without a usable kernel cache the thread compiles itself, about a second
        for numba's start and a tenth or more per loop);
        'sync' compiles in the calling thread, so the call that asks gets the kernel (tests,
        benchmarks); 'off' never uses numba. Without numba installed, everything runs on
        tier 0 whatever this says.""")
    hot_calls = _Field(3, _count(1), """Calls of a fused region before its tier-1 kernel is
        considered: a region run once or twice never pays for a compile (in the background,
        the kernel is asked for later still, once it pays: see `numba`).""")
    numba_min = _Field(8192, _count(0), """Elements from which tier 1 runs a region: below,
        its call costs more than the NumPy calls it saves. From half of it, regions of three
        NumPy calls or more; from 1/32 of it, regions of six or more (the cost model,
        `graph/kernels/policy.py`).""")
    numba_quick_units = _Field(4.0, _units, """A region of static shapes that costs tier 0
        at least this many NumPy calls gets its tier-1 kernel whatever its size: its calls
        then take a generated caller of about one microsecond.""")
    numba_parallel_min = _Field(1 << 18, _count(0), """Elements from which tier 1 may split a
        region's loop between threads (never in graphs that call BLAS, whose threads keep
        spinning after a call), and from which one elementwise operation alone becomes a
        region so that it can be (NumPy runs it on one thread). From there, one thread and
        several are both timed and the faster one runs. Starting numba's parallel loop costs
        ~20 us: measured (2-core x86, float32, two ops), two threads took 1.22x one thread's
        time at 2**17 elements, 0.87x at 2**18, 0.58x at 2**20.""")
    numba_parallel_heavy_min = _Field(1 << 16, _count(0), """The same limit for regions that
        call exp, log or tanh (4-5 times an add per element: a second thread pays sooner;
        the sigmoid on two threads took 1.06x one thread's time at 2**15, 0.89x at 2**16).""")
    # ---------------------------------------------------------------- tier 0 (NumPy)
    large_min = _Field(4096, _count(0), """Elements from which tier 0 writes each operation
        into pooled buffers with `out=` (below, each operation allocates its result, which
        NumPy's small-allocation cache makes cheaper than any bookkeeping).""")
    block_min = _Field(1 << 22, _count(0), """Elements from which tier 0 runs a region chunk
        by chunk, even on one thread: the chunk's temporaries stay in the core's cache.""")
    block_threads_min = _Field(1 << 17, _count(0), """Elements from which tier 0's chunks may
        be shared between threads (one thread and several are both timed and the faster one
        runs).""")
    block_bytes = _Field(1 << 18, _count(1), """Bytes of one chunk of the widest value when
        tier 0 runs a region chunk by chunk.""")
    routes_off = _Field(frozenset(), _routes, """Routes switched off, by name (a set, or a
        string of names): where the planner or the eager door would choose one, it takes the
        route it would take without it, and `nf.config.explain` says so. For ablation runs
        (benchmarks/ablation.py measures each route against its fallback) and for tests; the
        names are `ROUTES` (docs/architecture.md's table of routes says what each falls back
        to). 'plain' turns the thread's plain eager mode off (the door's plain route, and
        with it in-place writes and the eager backward plan); 'lane' the door's lane under
        tapes; both take effect in the thread that sets them, or in a thread at its next tape
        or trace.""")
    threads = _Field(None, _threads, """Threads a region may use at most (tier 0's chunks,
        tier 1's split loops); None: the cores this process may run on, at most 8.""")

    def __init__(self):
        self._values = {name: f.default for name, f in self.fields().items()}
        self._local = _Local()

    @classmethod
    def fields(cls):
        """{name: field} in declaration order."""
        return {k: v for k, v in vars(cls).items() if isinstance(v, _Field)}

    def __setattr__(self, name, value):
        if not name.startswith("_") and name not in self.fields():
            raise AttributeError("ndflow has no setting %r; known: %s"
                                 % (name, ", ".join(self.fields())))
        object.__setattr__(self, name, value)

    def override(self, **values):
        """A context manager that sets `values` for the calling thread only, restoring the
        thread's previous values when it exits (it nests)."""
        return _Override(self, self._checked(values))

    def overrides(self):
        """The calling thread's overrides, {name: value} (for `bound`)."""
        return dict(self._local.__dict__)

    def bound(self, fn):
        """`fn` wrapped to run under the calling thread's overrides, in whichever thread
        calls it (compiles queued for the background thread)."""
        ov = self.overrides()
        if not ov:
            return fn

        def run(*a, **k):
            with self.override(**ov):
                return fn(*a, **k)
        return run

    def reset(self):
        """Every setting back to its default (process-wide values; overrides stay)."""
        for name, f in self.fields().items():
            self._values[name] = f.default
        _changed(self.fields())

    def describe(self):
        """The settings, one line each: name = value (default) and the first sentence of its
        documentation."""
        lines = []
        for name, f in self.fields().items():
            doc = re.split(r"(?<=[a-z0-9)])\. (?=[A-Z])", " ".join(f.__doc__.split()))[0]
            lines.append("%s = %r (default %r): %s" % (name, getattr(self, name), f.default, doc))
        return "\n".join(lines)

    def _checked(self, values):
        fields = self.fields()
        out = {}
        for name, v in values.items():
            if name not in fields:
                raise AttributeError("ndflow has no setting %r; known: %s"
                                     % (name, ", ".join(fields)))
            out[name] = fields[name].check(v)
        return out

    def __repr__(self):
        return "<ndflow settings\n%s>" % self.describe()


class _Override:
    def __init__(self, s, values):
        self.s, self.values, self.saved = s, values, None

    def __enter__(self):
        d = self.s._local.__dict__
        self.saved = {k: d.get(k, _UNSET) for k in self.values}
        d.update(self.values)
        _changed(self.values)
        return self.s

    def __exit__(self, *exc):
        d = self.s._local.__dict__
        for k, v in self.saved.items():
            if v is _UNSET:
                d.pop(k, None)
            else:
                d[k] = v
        _changed(self.values)
        return False


def cores():
    """The cores this process may run on (at most 8): `threads`' default."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return min(n, 8)


settings = Settings()
