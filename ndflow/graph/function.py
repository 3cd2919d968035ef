"""`nf.function` / `nf.jit`: trace a Python function into a graph once per input signature,
optimize it, generate straight-line code, and run that on later calls."""
import collections
import contextlib
import functools
import inspect
import operator
import sys
import time
import types
import warnings
import weakref

import numpy as np

from ..core.ndarray import ndarray, SpecializationError
from ..core.state import STATE
from ..core.dispatch import plain as _plain
from ..core import tree
from ..core.variable import VariableBase
from ..core.settings import settings
from .trace import GraphTrace, restore_fields
from . import debug as _dbg
from .signature import TensorSpec, Signature
from ..autograph.conversion import convert
from .. import numpy as tnp
from ..backends.device import device as _scope
from .concrete import ConcreteFunction, _generic_entry, _no_probe, __file__ as _concrete_file


def _writes_variables(g):
    for n in g.nodes:
        if n.prim.variable_access == "write" or any(_writes_variables(s.graph)
                                                     for s in n.subgraphs()):
            return True
    return False


def _fits(relaxed, shape):
    return all(r is None or r == s for r, s in zip(relaxed, shape))


def _relax(a, b):
    return tuple(x if x == y else None for x, y in zip(a, b))


_DEFAULT_CACHE_SIZE = 64
UNCACHEABLE = ("<uncacheable>",)     # a key for arguments that cannot be keyed: trace afresh


def _value_key(x):
    """The cache-key part of a non-array argument (see Function._key), UNCACHEABLE if none."""
    t = type(x)
    if t is float:
        return (float, x.hex())
    if t is complex:
        return (complex, x.real.hex(), x.imag.hex())
    if t in (int, bool, str, type(None)):
        return (t, x)
    if isinstance(x, np.generic):
        return ("G", x.dtype, x.tobytes())
    if t is slice:
        parts = tuple(_value_key(e) for e in (x.start, x.stop, x.step))
        return UNCACHEABLE if UNCACHEABLE in parts else ("S",) + parts
    if isinstance(x, VariableBase):
        return ("V", weakref.ref(x))
    try:
        hash(x)
    except TypeError:
        return UNCACHEABLE
    return ("O", t, x)


def set_function_cache_size(n):
    """How many traced graphs each `nf.function` keeps (least recently used ones are dropped
    first; a dropped signature traces again when it comes back). Returns the previous size."""
    global _DEFAULT_CACHE_SIZE
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"function cache size must be at least 1, got {n}")
    prev, _DEFAULT_CACHE_SIZE = _DEFAULT_CACHE_SIZE, n
    return prev


def get_function_cache_size():
    """How many traced graphs each `nf.function` keeps (the oldest is dropped beyond it); set with
    `set_function_cache_size`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.config.get_function_cache_size() > 0
    True
    """
    return _DEFAULT_CACHE_SIZE


_RUN_EAGERLY = False


def run_functions_eagerly(run_eagerly):
    """Make every `nf.function` call run its Python function eagerly, op by op, instead of a
    traced graph (`tf.config.run_functions_eagerly`): for debugging with print and pdb. Python
    side effects then happen at every call, and nothing is traced. Process-wide, as in
    TensorFlow."""
    global _RUN_EAGERLY
    _RUN_EAGERLY = bool(run_eagerly)
    if _RUN_EAGERLY:
        # the fast call path serves known signatures without reaching `_call`: empty it
        for f in list(_dbg._functions):
            f._fast.clear()


def functions_run_eagerly():
    """Whether `run_functions_eagerly(True)` is in effect."""
    return _RUN_EAGERLY


# ------------------------------------------------------------------ the call path
# `f(a, b)` on a Function runs `f._entry(a, b)` (Function.__call__ is a property returning it:
# Python looks `__call__` up on the type and honours descriptors, and a C attrgetter adds no
# frame). `_entry` is the entry generated for the signature called last (ConcreteFunction.
# _entry_maker): one frame checks the arguments against constants, runs the graph and wraps
# its results. Any other call falls through to `_miss` -> Function._dispatch: the signature
# table `_fast` (another signature seen before becomes the entry), else `_call`, the general
# path (traces, tapes, keywords, devices). Entries and the generic dispatcher hold the
# Function weakly: a cycle would keep a dropped function and its constants until the gc runs.
_RECENT = 4                    # entries a miss tries before the signature table

_OURS = (__file__, _concrete_file, "<ndflow call>")


def _user_stacklevel():
    """warnings.warn's `stacklevel` for the caller's warning to name the user's line: the first
    frame outside this module, `concrete` and the call entries it generates (how many lie
    between depends on the path the call took)."""
    f = sys._getframe(1)
    level = 1
    while f is not None and f.f_code.co_filename in _OURS:
        f = f.f_back
        level += 1
    return level


class _FastEntries(dict):
    """Function._fast: (shape, dtype[, None for a NumPy argument], ...) -> entry. Clearing it
    (run_functions_eagerly, the 'time' debug flag, a respecialized graph) also drops the
    entry tried first."""
    __slots__ = ("fref",)

    def clear(self):
        dict.clear(self)
        f = self.fref()
        if f is not None:
            f._entry = f._generic
            f._prev = _no_probe
            f._recent = ()


class _Method:
    """A compiled method's Python function bound to its object, which it holds weakly (as
    tf.function's methods do): `Function.__get__` keeps one bound Function per object in a
    table keyed weakly by the object, and a bound Function holding its object strongly (a
    `functools.partial`) kept every object, its Variables included, alive for good."""
    __slots__ = ("fn", "ref")

    def __init__(self, fn, ref):
        self.fn, self.ref = fn, ref

    def obj(self):
        obj = self.ref()
        if obj is None:
            raise ReferenceError("the object whose compiled method %s was bound to has been "
                                 "deleted" % getattr(self.fn, "__qualname__", self.fn))
        return obj

    def __call__(self, *args, **kwargs):
        return self.fn(self.obj(), *args, **kwargs)

    def method(self):
        """The bound method, as Python makes it (holding the object while it is used)."""
        return types.MethodType(self.fn, self.obj())

    # what functools.update_wrapper, input_signature's binding and error messages read are the
    # function's own, less its first parameter (as a bound method's)
    __doc__ = property(lambda self: self.fn.__doc__)
    __signature__ = property(lambda self: inspect.signature(self.method()))

    def __getattr__(self, name):
        if name in ("__name__", "__qualname__"):
            return getattr(self.fn, name)
        raise AttributeError(name)

    def __reduce__(self):
        # (pickled as the bound method: the copy holds its own object)
        return (functools.partial, (self.fn, self.obj()))


class Function:
    """A compiled Python function, as `tf.function` (see `function`)."""

    def __init__(self, fn, input_signature=None, reduce_retracing=False, jit_compile=None,
                 autograph=True, name=None):
        self._fn = fn
        self._name = name or getattr(fn, "__name__", "function")
        self._binder = None if input_signature is None else \
            Signature(input_signature, fn, self._name)
        self._sig = None if input_signature is None else self._binder.specs
        self._reduce_retracing = reduce_retracing
        if jit_compile not in (None, True, False):
            raise TypeError("nf.function: jit_compile must be True, False or None, got %r"
                            % (jit_compile,))
        self._jit_compile = jit_compile
        self._cache = collections.OrderedDict()   # full key -> ConcreteFunction (LRU)
        # (shape, dtype, shape, dtype, ...) of positional eager arrays -> that signature's
        # call entry: valid only while no trace, tape, device scope or promotion switch is
        # active (`plain()`), which the general key would otherwise record
        self._fref = weakref.ref(self)
        self._fast = _FastEntries()
        self._fast.fref = self._fref
        self._generic = self._entry = _generic_entry(self._fref)
        self._prev = _no_probe  # the entry used before _entry (probed by its misses)
        self._recent = ()     # the last few entries used, most recent first (see _miss)
        self._relaxed = {}    # reduce_retracing: key without sizes -> [sizes seen, graph]
        self._variants = {}   # (key, assumptions about values) -> graph (see _respecialize)
        self._warned_unhashable = False
        self._tracing_count = 0
        self._autograph = autograph
        self._converted = None     # the AutoGraph twin of fn, made at the first trace
        self._instances = weakref.WeakKeyDictionary()
        # the wrapped object's attributes, but never over this one's own: wrapping another
        # nf.function (nf.jit(nf.grad(nf.jit(f)))) would copy its _fn, _cache... over these
        functools.update_wrapper(self, fn, updated=())
        for k, v in getattr(fn, "__dict__", {}).items():
            if k not in self.__dict__:
                setattr(self, k, v)
        _dbg._functions.add(self)

    @property
    def python_function(self):
        return self._fn.method() if type(self._fn) is _Method else self._fn

    def __reduce__(self):
        # pickling (Dask and multiprocessing ship functions this way) sends the Python function
        # and the options; traced graphs are per process, so the receiver traces anew
        return (Function, (self._fn, self._sig, self._reduce_retracing, self._jit_compile,
                           self._autograph, self._name))

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        try:
            bound = self._instances.get(obj)
        except TypeError:
            bound = None
        if bound is None:
            try:
                fn = _Method(self._fn, weakref.ref(obj))
            except TypeError:       # an object without weak references: held by its copy
                fn = functools.partial(self._fn, obj)
            bound = Function(fn, self._sig, self._reduce_retracing, self._jit_compile,
                             self._autograph, self._name)
            try:
                self._instances[obj] = bound
            except TypeError:
                pass
        return bound

    def _traced_fn(self):
        """The Python function traced: fn, or its AutoGraph conversion (made once)."""
        f = self._converted
        if f is None:
            if self._autograph and type(self._fn) is _Method:
                f = _Method(convert(self._fn.fn), self._fn.ref)
            elif self._autograph:
                f = convert(self._fn)
            else:
                f = self._fn
            self._converted = f
        return f

    def experimental_get_tracing_count(self):
        return self._tracing_count

    # ------------------------------------------------------------------ keys
    def _key(self, args, kwargs):
        """(cache key, leaves, structure). The key holds what the trace depends on: shapes,
        dtypes and devices of arrays; Python values by type and exact value (0.0 and -0.0,
        and each NaN, are different traces: a trace bakes the value in); NumPy scalars by
        dtype and bytes; Variables and other objects by identity, holding them (weakly for
        Variables) so that a reused address can never find a stale trace. The key is None when
        an argument is symbolic (run inside the enclosing trace) and UNCACHEABLE when one has
        no stable value to key by (unhashable): then every call traces afresh."""
        leaves, d = tree.flatten_with_def((args, kwargs))
        parts = []
        for x in leaves:
            if isinstance(x, ndarray):
                if x._t is not None:
                    return None, leaves, d
                parts.append(("T", tuple(x.shape), x.dtype, x._dev))
            elif isinstance(x, np.ndarray):
                parts.append(("N", x.shape, x.dtype))
            else:
                k = _value_key(x)
                if k is UNCACHEABLE:
                    return UNCACHEABLE, leaves, d
                parts.append(k)
        return (repr(d), tuple(parts), STATE.promotion, STATE.prefer_float32, STATE.device,
                STATE.check_numerics), leaves, d

    # ------------------------------------------------------------------ calls
    # `f(*args, **kwargs)`: see "the call path" above
    __call__ = property(operator.attrgetter("_entry"))

    def _use(self, e):
        cur = self._entry
        if cur is not e and cur._cf is not None:
            self._prev = cur
        self._entry = e
        self._recent = ((e,) + tuple(x for x in self._recent if x is not e))[:_RECENT]

    def _dispatch(self, args, kwargs, missed=False):
        if not kwargs and _plain():
            # positional arrays whose shapes and dtypes were seen before
            key = []
            for a in args:
                t = type(a)
                if t is ndarray:
                    if a._dev is not None:
                        break
                    v = a._v
                    key.append(v.shape)
                    key.append(v.dtype)
                elif t is np.ndarray:
                    key.append(a.shape)
                    key.append(a.dtype)
                    key.append(None)        # passed as NumPy (its own graph, see _key)
                else:
                    break
            else:
                e = self._fast.get(tuple(key))
                # (an entry that just missed is not tried again: its checks and the key
                # agree, so that cannot happen, but it must never loop)
                if e is not None and not (missed and e is self._entry):
                    self._use(e)
                    return e(*args)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if _RUN_EAGERLY:
            # nf.config.run_functions_eagerly: the Python function as written, op by op
            return self._fn(*args, **kwargs)
        if STATE.traces:
            # inside another trace or a vectorized_map: trace into the same graph / batch
            return self._traced_fn()(*args, **kwargs)
        raw, raw_kw = args, kwargs
        if self._sig is not None:
            args, kwargs = self._check_signature(args, kwargs), {}
        if STATE.tapes and self._watched_input(args, kwargs):
            # an outer tape must see every operation: run the Python function op by op
            return self._fn(*args, **kwargs)
        key, leaves, d = self._key(args, kwargs)
        if key is None:
            return self._fn(*args, **kwargs)
        if STATE.device is None:
            for x in leaves:
                if type(x) is ndarray and x._dev is not None:
                    # no scope: the graph runs on its inputs' device (constants, results and
                    # creation ops placed there), as a device scope around the call would
                    with _scope(x._dev):
                        return self._call(raw, raw_kw)
        if key is UNCACHEABLE:
            if not self._warned_unhashable:
                self._warned_unhashable = True
                bad = next(type(x).__name__ for x in leaves if _value_key(x) is UNCACHEABLE)
                warnings.warn(f"nf.function {self._name!r}: an argument of type {bad} is not "
                              f"hashable, so no trace can be kept for it: every call traces "
                              f"again (make it hashable, or pass its arrays as arguments)",
                              stacklevel=_user_stacklevel())
            return self._run(None, self._trace(args, kwargs, leaves, d),
                             *self._buffers(leaves), args, kwargs, leaves, d)[1]
        if self._sig is not None:
            key = self._binder.key(key, leaves)
        cf = self._lookup(key, args, kwargs, leaves, d)
        bufs, targets = self._buffers(leaves)
        if "time" in _dbg.FLAGS:
            t0 = time.perf_counter()
            out = self._run(key, cf, bufs, targets, args, kwargs, leaves, d)[1]
            _dbg.log("nf.function %r: call %.1f us" % (self._name, (time.perf_counter() - t0) * 1e6))
            return out
        cf, out = self._run(key, cf, bufs, targets, args, kwargs, leaves, d)
        if (_plain() and not raw_kw and len(bufs) == len(raw)
                and not cf.writeback
                and all((type(a) is ndarray and a._dev is None) or type(a) is np.ndarray
                        for a in raw)
                and (self._sig is None or all(a is b for a, b in zip(raw, args)))):
            fast = self._fast
            if len(fast) >= 4 * _DEFAULT_CACHE_SIZE:
                del fast[next(iter(fast))]
            k, guards = [], []
            for a in raw:
                if type(a) is ndarray:
                    b = a._v
                    k += (b.shape, b.dtype)
                else:
                    b = a
                    k += (b.shape, b.dtype, None)
                guards += (b.dtype, b.shape)
            e = cf.entry(tuple(type(a) is np.ndarray for a in raw), self._fref, guards)
            fast[tuple(k)] = e
            self._use(e)
        return out

    def _run(self, key, cf, bufs, targets, args, kwargs, leaves, d):
        """(graph used, result): `cf` on `bufs`, or, where the values contradict what the graph
        assumed about them (SpecializationError: eigenvalues all real or not), the graph
        traced for what was observed (traced once, kept beside the first)."""
        for _ in range(64):
            try:
                return cf, cf(bufs, targets)
            except SpecializationError as e:
                cf = self._respecialize(key, cf, e, args, kwargs, leaves, d)
        raise RuntimeError(f"nf.function {self._name!r}: no graph fits these values")

    def _respecialize(self, key, cf, e, args, kwargs, leaves, d):
        assume = dict(cf.assume or {})
        if e.site not in assume:
            raise e
        if _writes_variables(cf.graph):
            raise SpecializationError(
                f"nf.function {self._name!r}: {e} The function also assigns Variables, so it "
                f"cannot run again with the other graph; pass a complex matrix (the result is "
                f"then always complex) or compute the value-dependent part outside.",
                e.site, e.observed) from None
        if key is not None:
            self._variants.setdefault((key, tuple(sorted(assume.items()))), cf)
        assume[e.site] = e.observed
        akey = (key, tuple(sorted(assume.items())))
        alt = self._variants.get(akey)
        if alt is None:
            alt = self._trace(args, kwargs, leaves, d, assume=assume)
            if key is not None:
                self._variants[akey] = alt
        if key is not None:
            self._cache[key] = alt
        self._fast.clear()
        return alt

    @staticmethod
    def _buffers(leaves):
        """The buffers of the array arguments, and the arrays themselves (written back into
        when the function writes its arguments)."""
        bufs, targets = [], []
        for x in leaves:
            if isinstance(x, ndarray):
                bufs.append(x._v)
                targets.append(x)
            elif isinstance(x, np.ndarray):
                bufs.append(x)
                targets.append(x)
        return bufs, targets

    def _lookup(self, key, args, kwargs, leaves, d):
        cache = self._cache
        cf = cache.get(key)
        if cf is not None:
            cache.move_to_end(key)
            return cf
        shapes = None
        if self._reduce_retracing and self._sig is None:
            # a second size for the same structure: trace once more with the sizes that
            # differ unknown (None), and serve every later size with that graph
            gkey = (key[0], tuple((p[0], len(p[1])) + p[2:] if p[0] in ("T", "N") else p
                                  for p in key[1])) + key[2:]
            cur = [tuple(x.shape) for x in leaves if isinstance(x, (ndarray, np.ndarray))]
            entry = self._relaxed.get(gkey)
            if entry is None:
                self._relaxed[gkey] = [cur, None]
            elif entry[1] is not None and all(map(_fits, entry[0], cur)):
                cf = entry[1]
            else:
                shapes = [_relax(r, c) for r, c in zip(entry[0], cur)]
        if cf is None:
            cf = self._trace(args, kwargs, leaves, d, shapes)
            if shapes is not None:
                self._relaxed[gkey] = [shapes, cf]
        cache[key] = cf
        if len(cache) > _DEFAULT_CACHE_SIZE:
            _, old = cache.popitem(last=False)
            if old not in cache.values():
                fast = self._fast
                for k in [k for k, e in fast.items() if e._cf is old]:
                    del fast[k]
                self._recent = tuple(e for e in self._recent if e._cf is not old)
                if self._entry._cf is old:
                    self._entry = self._generic
                if self._prev._cf is old:
                    self._prev = _no_probe
                for gk, entry in list(self._relaxed.items()):
                    if entry[1] is old:
                        del self._relaxed[gk]
        return cf

    def _watched_input(self, args, kwargs):
        for x in tree.flatten((args, kwargs)):
            if isinstance(x, ndarray) and x._tid and any(x._tid in t._connected for t in STATE.tapes):
                return True
        return bool(STATE.tapes)

    def _check_signature(self, args, kwargs=None):
        """The call's arguments as the input_signature describes them (signature.py)."""
        return self._binder.canonical(args, kwargs)

    def get_concrete_function(self, *args, **kwargs):
        """The graph for these arguments (arrays, or TensorSpecs; none: the input_signature's),
        traced once: later calls with the same arguments or the same specs return the same
        ConcreteFunction, as TensorFlow's does, and calls of the function use it."""
        if self._sig is not None:
            if not args and not kwargs:
                args = tuple(self._sig)
            elif not any(isinstance(a, TensorSpec) for a in tree.flatten((args, kwargs))):
                args, kwargs = self._check_signature(args, kwargs), {}
        leaves, d = tree.flatten_with_def((args, kwargs))
        if any(isinstance(a, TensorSpec) for a in leaves):
            for a in leaves:
                if isinstance(a, TensorSpec) and a.shape is None:
                    raise TypeError(f"{self._name}.get_concrete_function: {a} has no rank; "
                                    f"ndflow traces arrays of a known rank (give its shape, "
                                    f"with None for the sizes that vary)")
            key = self._spec_key(args, kwargs, leaves, d)
            if key is UNCACHEABLE:
                return self._trace(args, kwargs, leaves, d)
            return self._lookup(key, args, kwargs, leaves, d)
        key, leaves, d = self._key(args, kwargs)
        if key is UNCACHEABLE:
            return self._trace(args, kwargs, leaves, d)
        if self._sig is not None:
            key = self._binder.key(key, leaves)
        return self._lookup(key, args, kwargs, leaves, d)

    def _spec_key(self, args, kwargs, leaves, d):
        """The cache key of a trace for TensorSpecs: under the input_signature the key of the
        calls it serves; otherwise one of its own (shapes with their None sizes)."""
        state = (STATE.promotion, STATE.prefer_float32, STATE.device, STATE.check_numerics)
        if self._sig is not None and args == tuple(self._sig) and not kwargs:
            return ("sig",) + state + (tuple(("T", s.dtype) for s in leaves),)
        parts = []
        for x in leaves:
            if isinstance(x, TensorSpec):
                parts.append(("S", x.shape, x.dtype))
            elif isinstance(x, (ndarray, np.ndarray)):
                parts.append(("A", tuple(x.shape), np.dtype(x.dtype)))
            else:
                k = _value_key(x)
                if k is UNCACHEABLE:
                    return UNCACHEABLE
                parts.append(k)
        return ("spec", repr(d), tuple(parts)) + state

    def _trace(self, args, kwargs, leaves, d, shapes=None, assume=None):
        self._tracing_count += 1
        n = self._tracing_count
        if n >= 5 and (n & (n - 1) == 0 or n == 5):
            hint = ("input_signature with None dimensions, reduce_retracing=True"
                    if not self._reduce_retracing else "input_signature")
            warnings.warn(f"nf.function {self._name!r} has been traced {n} times: calls with "
                          f"new shapes, dtypes or Python values retrace (tracing is expensive). "
                          f"Use {hint}, or pass arrays instead of Python numbers.",
                          stacklevel=_user_stacklevel())
        t0 = time.perf_counter()
        # jit_compile=True: graph, bodies and regions made (and kept) under the fast-math contract
        with settings.override(fast_math=True) if self._jit_compile else contextlib.nullcontext():
            cf, written = self._trace_once(args, kwargs, leaves, d, shapes, (), t0, assume)
            outside = [o for o in map(lambda r: r(), written) if o is not None]
            if outside:
                import gc
                gc.collect()
                outside = [o for o in map(lambda r: r(), written) if o is not None]
            if outside:
                # the function writes arrays that live outside it: NumPy reads and writes them
                # at every call, so trace once more with them as inputs (read at each call, by
                # reference) instead of constants frozen at trace time
                cf, _ = self._trace_once(args, kwargs, leaves, d, shapes, outside, t0, assume)
        return cf

    def _trace_once(self, args, kwargs, leaves, d, shapes, mutable, t0, assume=None):
        sig_leaves = tree.flatten(self._sig) if self._sig is not None else None
        trace = GraphTrace(self._name)
        # assumptions about values the graph's dtypes depend on (site -> case), filled with
        # the default case at each site the trace meets (numpy/linalg.py, _real_if_real)
        trace.assume, trace.sites = dict(assume or {}), 0
        STATE.traces.append(trace)
        STATE.refresh()
        inputs = []        # (position among the array arguments, symbolic input, its Var)
        try:
            sym = []
            k = 0
            for x in leaves:
                if isinstance(x, (ndarray, np.ndarray)) or isinstance(x, TensorSpec):
                    if sig_leaves is not None and k < len(sig_leaves):
                        spec = sig_leaves[k]
                        # (a spec without a shape: its rank, every size unknown)
                        sym.append(trace.new_input(
                            spec.shape if spec.shape is not None else (None,) * len(x.shape),
                            spec.dtype))
                    elif isinstance(x, TensorSpec):
                        sym.append(trace.new_input(x.shape, x.dtype))
                    elif shapes is not None:
                        sym.append(trace.new_input(shapes[k], np.dtype(x.dtype)))
                    else:
                        sym.append(trace.new_input(x.shape, np.dtype(x.dtype)))
                    inputs.append((k, sym[-1], sym[-1]._v))
                    k += 1
                else:
                    sym.append(x)
            captured = []
            for o in mutable:
                s_in = trace.new_input(o.shape, np.dtype(o.dtype))
                trace.note_write(o)
                o._rebind(s_in)
                captured.append((o, s_in._v))
            a, kw = tree.unflatten(d, sym)
            out = self._traced_fn()(*a, **kw)
            out_leaves, out_def = tree.flatten_with_def(out)
            kinds, consts, outs = [], [], []
            for o in out_leaves:
                if isinstance(o, ndarray) and o._t is trace:
                    kinds.append("v")
                    consts.append(None)
                    outs.append(o._v)
                elif type(o) is ndarray and o._t is None and o._dev is None:
                    # an eager array (made while tracing, or captured): a result of the graph,
                    # so each call returns a fresh copy (`own_outputs`), never one shared buffer
                    kinds.append("v")
                    consts.append(None)
                    outs.append(trace.to_var(o))
                elif isinstance(o, ndarray) and o._t is not None:
                    raise ValueError(
                        f"nf.function {self._name!r} returns a value computed inside a "
                        f"control-flow body, vectorized_map or other function whose trace has "
                        f"finished (e.g. appended to a Python list inside a loop over a traced "
                        f"value); return values that the body gives back as its results")
                elif type(o) is np.ndarray:
                    # a NumPy array made while tracing: a copy of it at each call
                    kinds.append("n")
                    consts.append(o)
                else:
                    kinds.append("k")
                    consts.append(o)
            # writes the caller must see (NumPy semantics, core/mutation.py): into arguments
            # (and out= arrays passed as arguments), then into arrays captured from outside, in
            # the order they were first written; the function writes them back after each call
            writeback = []
            for pos, s, v0 in inputs:
                if s._v is not v0 or s._t is not trace:
                    outs.append(trace.to_var(s))
                    writeback.append(("arg", pos))
            unchanged = {id(o) for o, v in captured if o._v is v}
            out = out_leaves = o = a = kw = sym = None
        finally:
            STATE.traces.remove(trace)
            STATE.refresh()             # (forgets the views made while tracing)
            trace._consts.clear()       # arrays made while tracing that nothing else holds die
            finals = []
            for wr, saved in trace.written.values():
                o = wr()
                if o is not None:
                    if o._t is trace:
                        finals.append((wr, id(o), o._v))
                    restore_fields(o, saved)   # the array keeps its own value, not a graph's
            o = None
        for wr, key, var in finals:
            if key not in unchanged:
                outs.append(var)
                writeback.append(("obj", wr))
        trace.graph.outputs = outs
        cf = ConcreteFunction(self._name, trace.graph, out_def, kinds, consts,
                              time.perf_counter() - t0, check_numerics=STATE.check_numerics)
        cf.assume = trace.assume
        cf.writeback = writeback
        cf.captured = [o for o, _ in captured]
        return cf, [wr for wr, _ in trace.written.values()]

    def __repr__(self):
        return "<ndflow.function %s>" % self._name


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_relax_shapes=None, name=None, **kwargs):
    """Compile `func` into a graph, as `tf.function`. Usable as `@function` or
    `@function(input_signature=[...])`.

    The first call with a new input signature (shapes, dtypes, Python values) traces: Python
    runs once, side effects happen then, loops over Python values unroll. Later calls run the
    optimized graph. Random ops draw fresh numbers and Variables are read and written at every
    call. With `autograph=True` (the default) `if`, `while` and `for` on traced values become
    `nf.cond` / `nf.while_loop` (see `ndflow.autograph`); `autograph=False` traces the function
    as written. On a method, each object gets its own compiled copy, which holds the object
    weakly (as `tf.function`'s): compiling a method never keeps an object alive.

    Parameters
    ----------
    func : callable, optional
        The Python function (omitted when used as ``@nf.function(...)``).
    input_signature : list of TensorSpec, optional
        Fixes the arguments' shapes (None: any size) and dtypes: one trace serves them all.
    autograph : bool, optional
        Convert Python control flow on traced values (default True).
    jit_compile : bool, optional
        True: this function's compiled regions may round differently from NumPy within the
        accuracy contract (docs/guides/performance.md: each function's bound in ulps, sums
        within n*eps*sum|x|; NaN/inf/signed-zero positions, dtypes, shapes and errors stay
        NumPy's), whatever `nf.config.settings.fast_math` says. Unlike TensorFlow there is no
        XLA: every op runs (those not compiled as NumPy code), so nothing raises. None or
        False: the process's `fast_math` setting when it traces (default: NumPy's bits).
    reduce_retracing : bool, optional
        Generalize shapes after a retrace instead of tracing every new shape.

    Returns
    -------
    Function
        A callable with the signature of `func`; `get_concrete_function` gives its graphs.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> @nf.function
    ... def f(x):
    ...     return tnp.sum(x * x)
    >>> f(tnp.asarray([1., 2.]))
    array(5., dtype=float64)
    >>> g = nf.function(lambda x: x + 1, input_signature=[nf.TensorSpec([None], nf.int32)])
    >>> g(nf.constant([1, 2, 3]))
    array([2, 3, 4], dtype=int32)
    """
    if experimental_relax_shapes is not None:
        reduce_retracing = experimental_relax_shapes

    def deco(f):
        return Function(f, input_signature, reduce_retracing, jit_compile, autograph, name)
    return deco(func) if func is not None else deco


jit = function

