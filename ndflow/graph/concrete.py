"""One traced graph as a callable (`ConcreteFunction`: its optimized graph, generated code and
output structure) and the call entries generated for it: straight-line code that checks one
signature's arguments, runs the graph's statements inline and wraps the results, falling back
to `Function`'s general path (`_miss`, `_recover`) for anything else. `function.py` keeps the
signature table and tracing that choose and make these."""
import re
import time

import numpy as np

from ..core.ndarray import ndarray, _wrap, wrap_on, SpecializationError, WRAP_INLINE, _new
from ..core.state import STATE
from ..core import dispatch as _door
from ..core.dispatch import plain as _plain
from ..core import tree
from ..core.settings import settings
from .ir import format_graph
from . import passes as _passes
from . import debug as _dbg
from .codegen import generate, node_for_exception
from .dot import render
from .memory import memory_report


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


_NA = object()                 # an entry's argument that the call did not pass
_PROBE = object()              # the last argument of a probe (see _miss)
_MISS = object()               # a probe's answer: the arguments do not fit this entry
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
