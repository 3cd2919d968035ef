"""`nf.function` / `nf.jit`: trace a Python function into a graph once per input signature,
optimize it, generate straight-line code, and run that on later calls."""
import collections
import functools
import operator
import time
import warnings
import weakref

import numpy as np

from ..core.ndarray import ndarray, _wrap, wrap_on
from ..core.primitive import Primitive, Aval, bind
from ..core.state import STATE, GLOBAL
from ..core import tree, dtypes as _dt
from .trace import GraphTrace
from .ir import format_graph
from . import passes as _passes
from . import debug as _dbg
from .codegen import generate, node_for_exception


class TensorSpec:
    """Shape (None = any size) and dtype of an `nf.function` argument."""

    def __init__(self, shape=None, dtype=np.float32, name=None):
        self.shape = None if shape is None else tuple(None if d is None else int(d) for d in shape)
        self.dtype = _dt.canonical(dtype)
        self.name = name

    def is_compatible_with(self, x):
        s = tuple(x.shape)
        if np.dtype(x.dtype) != self.dtype:
            return False
        if self.shape is None:
            return True
        return len(s) == len(self.shape) and all(a is None or a == b for a, b in zip(self.shape, s))

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=%s, name=%r)" % (self.shape, self.dtype.name, self.name)

    def __eq__(self, o):
        return isinstance(o, TensorSpec) and (self.shape, self.dtype) == (o.shape, o.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


def _is_array_like(x):
    return isinstance(x, (ndarray, np.ndarray))


class ConcreteFunction:
    """One traced graph: its code, the structure of its outputs, and how to call it."""

    def __init__(self, name, graph, out_def, out_kinds, out_consts, trace_s=0.0):
        self.name = name
        self.traced_graph = graph
        if "graph" in _dbg.FLAGS:
            _dbg.log("--- nf.function %r: traced graph\n%s" % (name, format_graph(graph)))
        t0 = time.perf_counter()
        self.graph = _passes.optimize(graph)
        t1 = time.perf_counter()
        self.run, self.source, self._line_nodes, self._filename = generate(self.graph)
        t2 = time.perf_counter()
        self.out_def = out_def
        self.out_kinds = out_kinds     # per output leaf: 'v' graph output, 'k' constant/python
        self.out_consts = out_consts
        self._fast_calls = {}      # which arguments are NumPy arrays -> call(args)
        if "opt" in _dbg.FLAGS:
            _dbg.log("--- nf.function %r: optimized graph\n%s" % (name, format_graph(self.graph)))
        if "code" in _dbg.FLAGS:
            _dbg.log("--- nf.function %r: generated code\n%s" % (name, self.source))
        if "time" in _dbg.FLAGS:
            _dbg.log("nf.function %r: trace %.2f ms, optimize %.2f ms, generate %.2f ms "
                     "(%d -> %d nodes)" % (name, trace_s * 1e3, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                                          len(graph.nodes), len(self.graph.nodes)))

    def _fail(self, e):
        """Re-raise an error from the generated code naming the node and the user's line."""
        node = node_for_exception(e.__traceback__)
        if node is None:
            raise e
        try:
            err = type(e)(f"{e}\n  in '{node.prim.name}' created at {node.loc} "
                          f"(running nf.function {self.name!r})")
        except Exception:       # an exception type that wants other arguments
            raise e from None
        raise err.with_traceback(None) from None

    def fast_call(self, numpy_args):
        """`call(args)` for the common call: the arguments are exactly the graph's inputs
        (positional eager arrays on the default device, or NumPy arrays where `numpy_args`
        says so), the outputs are wrapped by code written for this output structure (no tree
        walk per call)."""
        call = self._fast_calls.get(numpy_args)
        if call is None:
            call = self._fast_calls[numpy_args] = self._make_fast_call(numpy_args)
        return call

    def _make_fast_call(self, numpy_args):
        n = len(self.traced_graph.inputs)
        ns = {"run": self.run, "_wrap": _wrap, "_fail": self._fail,
              "_finish": self._finish}
        d, kinds = self.out_def, self.out_kinds
        flat = (d is tree.LEAF or (type(d) is tuple and d[0] in (tuple, list)
                                   and all(s is tree.LEAF for s in d[1])))
        if flat:
            parts, k = [], 0
            for j, (kind, c) in enumerate(zip(kinds, self.out_consts)):
                if kind == "v":
                    parts.append("_wrap(r[%d])" % k)
                    k += 1
                else:
                    ns["k%d" % j] = c
                    parts.append("k%d" % j)
            if d is tree.LEAF:
                ret = parts[0]
            elif d[0] is tuple:
                ret = "(%s)" % "".join(p + ", " for p in parts)
            else:
                ret = "[%s]" % ", ".join(parts)
        else:
            ret = "_finish(r, None)"
        names = ["a%d" % i for i in range(n)]
        src = ("def call(args):\n"
               "    %s = args\n"
               "    try:\n"
               "        r = run(%s)\n"
               "    except Exception as e:\n"
               "        _fail(e)\n"
               "    return %s\n") % ("".join(x + ", " for x in names) or "_",
                                     ", ".join(x if np_ else x + "._v"
                                               for x, np_ in zip(names, numpy_args)), ret)
        exec(compile(src, "<ndflow call %s>" % self.name, "exec"), ns)
        return ns["call"]

    def _finish(self, outs, dev):
        it = iter(outs)
        leaves = []
        for kind, c in zip(self.out_kinds, self.out_consts):
            if kind == "v":
                b = next(it)
                leaves.append(_wrap(b) if dev is None else wrap_on(b, dev))
            else:
                leaves.append(c)
        return tree.unflatten(self.out_def, leaves)

    def __call__(self, bufs):
        try:
            outs = self.run(*bufs)
        except Exception as e:
            self._fail(e)
        return self._finish(outs, STATE.device)

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
        from .dot import render
        return render(self.to_dot(optimized), path, format)

    def memory_report(self):
        """Peak live bytes, bytes allocated and reused per call (ndflow/graph/memory.py)."""
        from .memory import memory_report
        return memory_report(self.graph)

    def __str__(self):
        return format_graph(self.graph)


def _fits(relaxed, shape):
    return all(r is None or r == s for r, s in zip(relaxed, shape))


def _relax(a, b):
    return tuple(x if x == y else None for x, y in zip(a, b))


_DEFAULT_CACHE_SIZE = 64


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
    return _DEFAULT_CACHE_SIZE


class Function:
    """A compiled Python function, as `tf.function` (see `function`)."""

    def __init__(self, fn, input_signature=None, reduce_retracing=False, jit_compile=None,
                 autograph=True, name=None):
        self._fn = fn
        self._sig = None if input_signature is None else list(input_signature)
        self._reduce_retracing = reduce_retracing
        self._cache = collections.OrderedDict()   # full key -> ConcreteFunction (LRU)
        # (shape, dtype, shape, dtype, ...) of positional eager arrays -> that graph's fast
        # call: valid only while no trace, tape, device scope or promotion switch is active
        # (GLOBAL.fast), which the general key would otherwise record
        self._fast = {}
        self._relaxed = {}    # reduce_retracing: key without sizes -> [sizes seen, graph]
        self._tracing_count = 0
        self._autograph = autograph
        self._converted = None     # the AutoGraph twin of fn, made at the first trace
        self._name = name or getattr(fn, "__name__", "function")
        self._instances = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, fn)
        _dbg._functions.add(self)

    @property
    def python_function(self):
        return self._fn

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        try:
            bound = self._instances.get(obj)
        except TypeError:
            bound = None
        if bound is None:
            bound = Function(functools.partial(self._fn, obj), self._sig, self._reduce_retracing,
                             autograph=self._autograph, name=self._name)
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
                from ..autograph.conversion import convert
                f = convert(self._fn)
            else:
                f = self._fn
            self._converted = f
        return f

    def experimental_get_tracing_count(self):
        return self._tracing_count

    # ------------------------------------------------------------------ keys
    def _key(self, args, kwargs):
        leaves, d = tree.flatten_with_def((args, kwargs))
        from ..train.variable import Variable
        parts = []
        for x in leaves:
            if isinstance(x, ndarray):
                if x._t is not None:
                    return None, leaves, d
                parts.append(("T", tuple(x.shape), x.dtype, x._dev))
            elif isinstance(x, np.ndarray):
                parts.append(("N", x.shape, x.dtype))
            elif isinstance(x, Variable):
                parts.append(("V", id(x)))
            elif type(x) in (int, float, bool, complex, str, type(None)):
                parts.append((type(x), x))
            else:
                try:
                    hash(x)
                    parts.append(("O", x))
                except TypeError:
                    parts.append(("I", id(x)))
        return (repr(d), tuple(parts), STATE.promotion, STATE.prefer_float32, STATE.device), leaves, d

    # ------------------------------------------------------------------ calls
    def __call__(self, *args, **kwargs):
        if GLOBAL.fast and not kwargs:
            # the hot path: positional arrays whose shapes and dtypes were seen before
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
                call = self._fast.get(tuple(key))
                if call is not None:
                    return call(args)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if STATE.traces:
            # inside another trace or a vectorized_map: trace into the same graph / batch
            return self._traced_fn()(*args, **kwargs)
        raw = args
        if self._sig is not None:
            args = self._check_signature(args)
        if STATE.tapes and self._watched_input(args, kwargs):
            # an outer tape must see every operation: run the Python function op by op
            return self._fn(*args, **kwargs)
        key, leaves, d = self._key(args, kwargs)
        if key is None:
            return self._fn(*args, **kwargs)
        if self._sig is not None:
            key = ("sig",) + key[2:] + (tuple(("T", x.dtype) if isinstance(x, (ndarray, np.ndarray)) else p
                                              for x, p in zip(leaves, key[1])),)
        cf = self._lookup(key, args, kwargs, leaves, d)
        bufs = []
        for x in leaves:
            if isinstance(x, ndarray):
                bufs.append(x._v)
            elif isinstance(x, np.ndarray):
                bufs.append(x)
        if "time" in _dbg.FLAGS:
            t0 = time.perf_counter()
            out = cf(bufs)
            _dbg.log("nf.function %r: call %.1f us" % (self._name, (time.perf_counter() - t0) * 1e6))
            return out
        if (GLOBAL.fast and not kwargs and len(bufs) == len(raw)
                and all((type(a) is ndarray and a._dev is None) or type(a) is np.ndarray
                        for a in raw)
                and (self._sig is None or all(a is b for a, b in zip(raw, args)))):
            fast = self._fast
            if len(fast) >= 4 * _DEFAULT_CACHE_SIZE:
                del fast[next(iter(fast))]
            k = []
            for a in raw:
                if type(a) is ndarray:
                    k += (a._v.shape, a._v.dtype)
                else:
                    k += (a.shape, a.dtype, None)
            fast[tuple(k)] = cf.fast_call(tuple(type(a) is np.ndarray for a in raw))
        return cf(bufs)

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
                gone = set(map(id, old._fast_calls.values()))
                self._fast = {k: v for k, v in self._fast.items() if id(v) not in gone}
                for gk, entry in list(self._relaxed.items()):
                    if entry[1] is old:
                        del self._relaxed[gk]
        return cf

    def _watched_input(self, args, kwargs):
        for x in tree.flatten((args, kwargs)):
            if isinstance(x, ndarray) and x._tid and any(x._tid in t._connected for t in STATE.tapes):
                return True
        return bool(STATE.tapes)

    def _check_signature(self, args):
        from .. import numpy as tnp
        flat_sig = tree.flatten(self._sig)
        flat_args, d = tree.flatten_with_def(tuple(args))
        if len(flat_args) != len(flat_sig):
            raise TypeError(f"{self._name}: expected {len(flat_sig)} arguments matching the "
                            f"input_signature, got {len(flat_args)}")
        out = []
        for x, s in zip(flat_args, flat_sig):
            x = tnp.asarray(x, dtype=s.dtype) if not isinstance(x, ndarray) else x
            if not s.is_compatible_with(x):
                raise TypeError(f"{self._name}: argument of shape {tuple(x.shape)} and dtype "
                                f"{x.dtype.name} does not match the input_signature {s}")
            out.append(x)
        return tree.unflatten(d, out)

    def get_concrete_function(self, *args, **kwargs):
        if not args and self._sig is not None:
            args = tuple(self._sig)
        if any(isinstance(a, TensorSpec) for a in tree.flatten(args)):
            leaves, d = tree.flatten_with_def((args, kwargs))
            return self._trace(args, kwargs, leaves, d)
        if self._sig is not None:
            args = self._check_signature(args)
        key, leaves, d = self._key(args, kwargs)
        if self._sig is not None:
            key = ("sig",) + key[2:] + (tuple(("T", x.dtype) if isinstance(x, (ndarray, np.ndarray)) else p
                                              for x, p in zip(leaves, key[1])),)
        return self._lookup(key, args, kwargs, leaves, d)

    def _trace(self, args, kwargs, leaves, d, shapes=None):
        from ..train.variable import Variable
        self._tracing_count += 1
        n = self._tracing_count
        if n >= 5 and (n & (n - 1) == 0 or n == 5):
            hint = ("input_signature with None dimensions, reduce_retracing=True"
                    if not self._reduce_retracing else "input_signature")
            warnings.warn(f"nf.function {self._name!r} has been traced {n} times: calls with "
                          f"new shapes, dtypes or Python values retrace (tracing is expensive). "
                          f"Use {hint}, or pass arrays instead of Python numbers.", stacklevel=5)
        t0 = time.perf_counter()
        sig_leaves = tree.flatten(self._sig) if self._sig is not None else None
        trace = GraphTrace(self._name)
        STATE.traces.append(trace)
        STATE.refresh()
        try:
            sym = []
            k = 0
            for x in leaves:
                if isinstance(x, (ndarray, np.ndarray)) or isinstance(x, TensorSpec):
                    if sig_leaves is not None and k < len(sig_leaves) and sig_leaves[k].shape is not None:
                        spec = sig_leaves[k]
                        sym.append(trace.new_input(spec.shape, spec.dtype))
                    elif isinstance(x, TensorSpec):
                        sym.append(trace.new_input(x.shape, x.dtype))
                    elif shapes is not None:
                        sym.append(trace.new_input(shapes[k], np.dtype(x.dtype)))
                    else:
                        sym.append(trace.new_input(x.shape, np.dtype(x.dtype)))
                    k += 1
                else:
                    sym.append(x)
            a, kw = tree.unflatten(d, sym)
            out = self._traced_fn()(*a, **kw)
        finally:
            STATE.traces.remove(trace)
            STATE.refresh()
        out_leaves, out_def = tree.flatten_with_def(out)
        kinds, consts, outs = [], [], []
        for o in out_leaves:
            if isinstance(o, Variable):
                o = o.value() if False else o
            if isinstance(o, ndarray) and o._t is trace:
                kinds.append("v")
                consts.append(None)
                outs.append(o._v)
            elif isinstance(o, ndarray) and o._t is not None:
                raise ValueError(
                    f"nf.function {self._name!r} returns a value computed inside a control-flow "
                    f"body, vectorized_map or other function whose trace has finished (e.g. "
                    f"appended to a Python list inside a loop over a traced value); return "
                    f"values that the body gives back as its results")
            else:
                kinds.append("k")
                consts.append(o)
        trace.graph.outputs = outs
        return ConcreteFunction(self._name, trace.graph, out_def, kinds, consts,
                                time.perf_counter() - t0)

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
    as written."""
    if experimental_relax_shapes is not None:
        reduce_retracing = experimental_relax_shapes

    def deco(f):
        return Function(f, input_signature, reduce_retracing, jit_compile, autograph, name)
    return deco(func) if func is not None else deco


jit = function


# ------------------------------------------------------------------ dynamic shape
def _shape_impl(x, out_type=np.int32):
    return np.asarray(np.shape(x), dtype=out_type)


def _shape_batch(args, axes, out_type=np.int32):
    from ..numpy import concatenate
    s = bind(shape_p, args[0], out_type=out_type)
    bd = axes[0]
    return concatenate([s[:bd], s[bd + 1:]]), None


shape_p = Primitive("shape", _shape_impl,
                    lambda x, out_type=np.int32: Aval((len(x.shape),), np.dtype(out_type)))
shape_p.def_vjp(lambda ct, x, out_type=np.int32: (None,))
shape_p.batch = _shape_batch


def shape(x, out_type=np.int32):
    """The shape as an int32 array; inside `nf.function` it is computed at run time, so unknown
    (None) sizes are available."""
    from .. import numpy as tnp
    x = tnp.asarray(x) if not isinstance(x, ndarray) else x
    return bind(shape_p, x, out_type=np.dtype(out_type))
