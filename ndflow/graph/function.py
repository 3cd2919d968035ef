"""`nf.function` / `nf.jit`: trace a Python function into a graph once per input signature,
optimize it, generate straight-line code, and run that on later calls."""
import collections
import contextlib
import functools
import operator
import re
import sys
import time
import warnings
import weakref

import numpy as np

from ..core.ndarray import ndarray, _wrap, wrap_on, SpecializationError, WRAP_INLINE, _new
from ..core.state import STATE
from ..core import dispatch as _door
from ..core.dispatch import plain as _plain
from ..core import tree
from ..core.variable import VariableBase
from ..core.settings import settings
from .trace import GraphTrace, restore_fields
from .ir import format_graph
from . import passes as _passes
from . import debug as _dbg
from .codegen import generate, node_for_exception
from .signature import TensorSpec, Signature
from ..autograph.conversion import convert
from .. import numpy as tnp
from .dot import render
from .memory import memory_report
from ..backends.device import device as _scope


def _is_array_like(x):
    return isinstance(x, (ndarray, np.ndarray))


# Called with each new ConcreteFunction (after tracing, never on the call path): how layers
# above watch traces without this module knowing them (nf.summary.trace_on collects graphs).
TRACE_HOOKS = []


class ConcreteFunction:
    """One traced graph: its code, the structure of its outputs, and how to call it."""

    def __init__(self, name, graph, out_def, out_kinds, out_consts, trace_s=0.0,
                 check_numerics=False):
        self.name = name
        self.traced_graph = graph
        if "graph" in _dbg.FLAGS:
            _dbg.log("--- nf.function %r: traced graph\n%s" % (name, format_graph(graph)))
        t0 = time.perf_counter()
        # traced with nf.debugging.enable_check_numerics on: every operation's result is
        # checked at run time (a graph of its own: code traced with it off has no check)
        self.check_numerics = check_numerics
        self.fast_math = settings.fast_math    # the contract its regions were built under
        self.graph = _passes.optimize(graph, _passes.checked_passes() if check_numerics else None)
        t1 = time.perf_counter()
        self.run, self.source, self._line_nodes, self._filename, self._body = generate(
            self.graph, check_numerics=check_numerics)
        t2 = time.perf_counter()
        self.out_def = out_def
        self.out_kinds = out_kinds     # per output leaf: 'v' graph output, 'k' constant/python,
        #                                'n' a NumPy array (returned as a copy at each call)
        self.out_consts = out_consts
        self.assume = None         # Function._trace: assumptions about values (site -> case)
        self._entry_makers = {}    # which arguments are NumPy arrays -> entry maker
        if "opt" in _dbg.FLAGS:
            _dbg.log("--- nf.function %r: optimized graph\n%s" % (name, format_graph(self.graph)))
        if "code" in _dbg.FLAGS:
            _dbg.log("--- nf.function %r: generated code\n%s" % (name, self.source))
        if "time" in _dbg.FLAGS:
            _dbg.log("nf.function %r: trace %.2f ms, optimize %.2f ms, generate %.2f ms "
                     "(%d -> %d nodes)" % (name, trace_s * 1e3, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                                          len(graph.nodes), len(self.graph.nodes)))
        for hook in TRACE_HOOKS:
            hook(self)

    def _fail(self, e):
        """Re-raise an error from the generated code naming the node and the user's line."""
        node = node_for_exception(e.__traceback__)
        if node is None or isinstance(e, SpecializationError):
            raise e
        try:
            err = type(e)(f"{e}\n  in '{node.prim.name}' created at {node.loc} "
                          f"(running nf.function {self.name!r})")
        except Exception:       # an exception type that wants other arguments
            raise e from None
        raise err.with_traceback(None) from None

    def entry(self, numpy_args, fref, guards):
        """A call entry for one signature of this graph (see Function.__call__): `numpy_args`
        says which arguments are NumPy arrays, `guards` is (dtype, shape) per argument."""
        make = self._entry_makers.get(numpy_args)
        if make is None:
            make = self._entry_makers[numpy_args] = self._entry_maker(numpy_args)
        e = make(fref, *guards)
        e._cf = self
        return e

    def _entry_maker(self, numpy_args):
        """Generated code `make(fref, D0, S0, D1, S1, ...) -> entry`: `entry(x0, x1, ...)` is
        the whole compiled call for arguments of exactly these types, dtypes and shapes — the
        checks against the constants D/S, the graph's statements inline (small graphs) and
        its results made into arrays inline. Anything else (another signature, keywords, a
        tape, trace, device scope or promotion switch: the eager door's `plain()` false)
        goes to `_miss` with the arguments unchanged. Errors in the graph's code reach
        `_recover`; this code's own lines map to the graph's nodes in `__ndflow_lines__`, so
        they name the node and the user's line as `run`'s do."""
        n = len(numpy_args)
        body, out_names = self._body
        # values numbered in order (the graph numbers them process-wide): the same structure
        # gives the same source, and shares its compiled code (_ENTRY_CODE)
        ids = {}

        def renum(text):
            return _VALUE_NAME.sub(lambda m: ids.setdefault(m.group(0), "v%d" % len(ids)), text)
        body = [(renum(t), node) for t, node in body]
        out_names = [renum(o) for o in out_names]
        ns = dict(self.run.__globals__)         # kernels, constants and params of the graph
        ns.update(NA=_NA, PROBE=_PROBE, MISS=_MISS, ndarray=ndarray, np_ndarray=np.ndarray,
                  _new=_new, _miss=_miss, _recover=_recover, _fail=self._fail,
                  _finish=self._finish, **_door.PLAIN_NAMES)
        xs = ["x%d" % i for i in range(n)]
        params = "".join("%s=NA, " % x for x in xs) + ("/, " if n else "") + "*rest, **kw"
        miss = "return _miss(_fref, (%s) + rest, kw)" % "".join(x + ", " for x in xs)
        L = ["def make(_fref, %s):" % "".join("D%d, S%d, " % (i, i) for i in range(n)),
             "    def entry(%s):" % params]
        # (a probe from `_miss` passes PROBE last: on a miss the entry returns _MISS)
        cond = ["not " + _door.PLAIN_TEST, "kw",
                "(rest and (len(rest) != 1 or rest[0] is not PROBE))"]
        for i, (x, np_) in enumerate(zip(xs, numpy_args)):
            cond.append("type(%s) is not %s" % (x, "np_ndarray" if np_ else "ndarray"))
            if not np_:
                cond.append("%s._dev is not None" % x)
        L.append("        if %s:" % " or ".join(cond))
        L.append("            " + miss)
        for i, (x, np_) in enumerate(zip(xs, numpy_args)):
            L.append("        a%d = %s" % (i, x if np_ else x + "._v"))
        if n:
            # `is` first: arrays of a builtin dtype share its one dtype object
            cond = ["a%d.shape != S%d" % (i, i) for i in range(n)]
            cond += ["(a%d.dtype is not D%d and a%d.dtype != D%d)" % (i, i, i, i)
                     for i in range(n)]
            L.append("        if %s:" % " or ".join(cond))
            # another signature: the entry used before this one, probed from here (two
            # signatures in turn cost one failed check, no key to build)
            L += ["            if not rest:",
                  "                f = _fref()",
                  "                p = f._prev",
                  "                r = p(%sPROBE)" % "".join(x + ", " for x in xs),
                  "                if r is not MISS:",
                  # (unless the probe reset the entries: a contradicted assumption)
                  "                    if f._prev is p:",
                  "                        f._prev = f._entry",
                  "                        f._entry = p",
                  "                    return r"]
            L.append("            " + miss)
        line_nodes = {}
        if body:
            L.append("        try:")
            if len(body) <= _INLINE_LINES:
                for text, node in body:
                    L.append("            " + text)
                    if node is not None:
                        line_nodes[len(L)] = node
                outs = out_names
            else:
                # a large graph: the call of `run` costs nothing next to it, and compiling
                # its statements twice would add to the first call
                outs = ["r[%d]" % i for i in range(len(out_names))]
                L.append("            r = run(%s)" % "".join("a%d, " % i for i in range(n)))
            L.append("        except Exception as e:")
            L.append("            return _recover(_fref, _fail, e, (%s))"
                     % "".join(x + ", " for x in xs))
        else:
            outs = out_names        # the results are inputs or constants
        L.append("        return " + self._entry_results(L, ns, outs))
        L.append("    return entry")
        src = "\n".join(L) + "\n"
        ns["__ndflow_lines__"] = line_nodes
        code = _ENTRY_CODE.get(src)
        if code is None:
            # compiling this code costs ~150 us (its branches): functions of one structure
            # share the code object, each with its own namespace
            if len(_ENTRY_CODE) >= 512:
                _ENTRY_CODE.clear()
            code = _ENTRY_CODE[src] = compile(src, "<ndflow call>", "exec")
        exec(code, ns)
        if "code" in _dbg.FLAGS:
            _dbg.log("--- nf.function %r: call entry\n%s" % (self.name, src))
        return ns["make"]

    def _entry_results(self, L, ns, outs):
        """The entry's return expression: flat results inline (into `L`), else via `_finish`."""
        d, kinds = self.out_def, self.out_kinds
        if not (d is tree.LEAF or (type(d) is tuple and d[0] in (tuple, list)
                                   and all(s is tree.LEAF for s in d[1]))):
            return "_finish((%s), None)" % "".join(o + ", " for o in outs)
        parts, k = [], 0
        for j, (kind, c) in enumerate(zip(kinds, self.out_consts)):
            if kind == "v":
                L.append("        " + WRAP_INLINE.format(o="o%d" % j, v=outs[k]))
                parts.append("o%d" % j)
                k += 1
            else:
                ns["k%d" % j] = c
                parts.append("k%d.copy()" % j if kind == "n" else "k%d" % j)
        if d is tree.LEAF:
            return parts[0]
        if d[0] is tuple:
            return "(%s)" % "".join(p + ", " for p in parts)
        return "[%s]" % ", ".join(parts)

    def _finish(self, outs, dev):
        it = iter(outs)
        leaves = []
        for kind, c in zip(self.out_kinds, self.out_consts):
            if kind == "v":
                b = next(it)
                leaves.append(_wrap(b) if dev is None else wrap_on(b, dev))
            else:
                leaves.append(c.copy() if kind == "n" else c)
        return tree.unflatten(self.out_def, leaves)

    writeback = ()      # [("arg", i) | ("obj", weakref)]: trailing outputs written back
    captured = ()       # arrays from outside the function that it writes: trailing inputs

    def __call__(self, bufs, targets=None):
        if self.writeback and len(bufs) > 1 or self.captured:
            self._check_overlap(bufs, targets)
        try:
            if self.captured:
                bufs = list(bufs) + [o._v for o in self.captured]
            outs = self.run(*bufs)
        except Exception as e:
            self._fail(e)
        if self.writeback:
            self._write_back(outs, targets)
        return self._finish(outs, STATE.device)

    def _check_overlap(self, bufs, targets):
        """Arguments written by the function are independent values inside it: refuse a call
        where one shares memory with another argument (NumPy would see one write through the
        other, which the compiled function cannot reproduce)."""
        written = [ref for kind, ref in self.writeback if kind == "arg"]
        extra = [o._v for o in self.captured]
        allb = list(bufs) + extra
        for i in written:
            for j, b in enumerate(allb):
                if j != i and isinstance(b, np.ndarray) and isinstance(allb[i], np.ndarray) \
                        and np.may_share_memory(allb[i], b):
                    other = (f"argument {j}" if j < len(bufs) else
                             "an array captured from outside that it also writes")
                    raise ValueError(
                        f"nf.function {self.name!r}: array argument {i} is written by the "
                        f"function and shares memory with {other}; inside a compiled function "
                        f"they are independent values, so NumPy's result (one write seen "
                        f"through the other) cannot be reproduced. Pass a copy (tnp.copy), or "
                        f"call the Python function.")

    def _write_back(self, outs, targets):
        n = len(outs) - len(self.writeback)
        for (kind, ref), val in zip(self.writeback, outs[n:]):
            t = ref() if kind == "obj" else (targets[ref] if targets is not None else None)
            if t is None:
                continue
            if isinstance(t, np.ndarray):
                t[...] = val
            else:
                t[...] = _wrap(val) if STATE.device is None else wrap_on(val, STATE.device)

    def pretty_printed(self):
        return format_graph(self.graph)

    def to_dot(self, optimized=True):
        """The graph as Graphviz DOT text: after the compiler's passes (`optimized=True`, fused
        regions outlined as clusters) or as traced. Nodes show primitive, parameters, shapes
        and dtypes. Not in TensorFlow (which shows graphs in TensorBoard)."""
        g = self.graph if optimized else self.traced_graph
        return g.to_dot("%s (%s)" % (self.name, "optimized" if optimized else "traced"))

    def render(self, path, format=None, optimized=True):
        """Draw the graph (`to_dot`) into an image file with Graphviz's `dot` program
        (`format`: 'svg', 'png'...; default from the path's extension). Raises RuntimeError
        saying how to install Graphviz when `dot` is missing. Returns the path."""
        return render(self.to_dot(optimized), path, format)

    def memory_report(self):
        """Peak live bytes, bytes allocated and reused per call (ndflow/graph/memory.py)."""
        return memory_report(self.graph)

    def __str__(self):
        return ("# fast math (jit_compile=True): fused regions round within the accuracy "
                "contract\n" if self.fast_math else "") + format_graph(self.graph)


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
_NA = object()                 # an entry's argument that the call did not pass
_PROBE = object()              # the last argument of a probe (see _miss)
_MISS = object()               # a probe's answer: the arguments do not fit this entry
_RECENT = 4                    # entries a miss tries before the signature table
_INLINE_LINES = 200            # graphs up to this many statements run inline in their entry
_ENTRY_CODE = {}               # entry source -> its compiled code (see _entry_maker)
_VALUE_NAME = re.compile(r"\bv\d+\b")    # codegen's names of values: v<id>


def _miss(fref, args, kw):
    """An entry's checks failed. A probe gets _MISS; a call tries the other recent entries
    (a function called with two signatures in turn: no key to build and hash), then the
    signature table, then the general path."""
    if args:
        last = args[-1]
        if last is _PROBE:
            return _MISS
        if last is _NA:
            for i, x in enumerate(args):
                if x is _NA:             # positional-only defaults: only a tail is missing
                    args = args[:i]
                    break
    f = fref()
    if kw or not _plain():
        return f._call(args, kw)            # no entry serves these (see _dispatch)
    cur, prev = f._entry, f._prev
    for e in f._recent:
        if e is not cur and e is not prev:
            r = e(*args, _PROBE)
            if r is not _MISS:
                if e in f._recent:          # (not reset by the probe)
                    f._use(e)
                return r
    return f._dispatch(args, kw, True)


def _recover(fref, fail, e, args):
    if isinstance(e, SpecializationError):
        # the values contradict an assumption of the graph: the general path runs (or
        # traces) the graph for what was observed; the entries built on this one go
        f = fref()
        f._fast.clear()
        return f._call(args, {})
    fail(e)


def _generic_entry(fref):
    def call(*args, **kwargs):
        if args and args[-1] is _PROBE:      # (a probe racing with a reset of the entries)
            return _MISS
        return fref()._dispatch(args, kwargs)
    call._cf = None
    return call


def _no_probe(*args):
    return _MISS


_no_probe._cf = None       # (entries carry their graph as _cf; see Function._lookup)


def _user_stacklevel():
    """warnings.warn's `stacklevel` for the caller's warning to name the user's line: the first
    frame outside this module and the call entries it generates (how many lie between depends
    on the path the call took)."""
    f = sys._getframe(1)
    level = 1
    while f is not None and (f.f_code.co_filename == __file__
                             or f.f_code.co_filename == "<ndflow call>"):
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
        return self._fn

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
            bound = Function(functools.partial(self._fn, obj), self._sig, self._reduce_retracing,
                             self._jit_compile, self._autograph, self._name)
            try:
                self._instances[obj] = bound
            except TypeError:
                pass
        return bound

    def _traced_fn(self):
        """The Python function traced: fn, or its AutoGraph conversion (made once)."""
        f = self._converted
        if f is None:
            if self._autograph:
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
    as written.

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

