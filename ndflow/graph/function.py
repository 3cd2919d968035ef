"""`nf.function` / `nf.jit`: trace a Python function into a graph once per input signature,
optimize it, generate straight-line code, and run that on later calls."""
import functools
import inspect
import os
import warnings
import weakref

import numpy as np

from ..core.ndarray import ndarray, _wrap, wrap_on, symbolic
from ..core.primitive import Primitive, Aval, bind
from ..core.state import STATE
from ..core import tree, dtypes as _dt
from .trace import GraphTrace
from .ir import format_graph, verify
from . import passes as _passes
from .codegen import generate, node_for_exception

_DEBUG = set(filter(None, os.environ.get("NDFLOW_DEBUG", "").split(",")))


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

    def __init__(self, name, graph, out_def, out_kinds, out_consts):
        self.name = name
        self.traced_graph = graph
        self.graph = _passes.optimize(graph)
        if os.environ.get("NDFLOW_VERIFY") or "verify" in _DEBUG:
            verify(self.graph)
        self.run, self.source, self._line_nodes, self._filename = generate(self.graph)
        self.out_def = out_def
        self.out_kinds = out_kinds     # per output leaf: 'v' graph output, 'k' constant/python
        self.out_consts = out_consts
        if "graph" in _DEBUG:
            print(format_graph(graph))
        if "opt" in _DEBUG:
            print(format_graph(self.graph))
        if "code" in _DEBUG:
            print(self.source)

    def __call__(self, bufs):
        try:
            outs = self.run(*bufs)
        except Exception as e:
            node = node_for_exception(e.__traceback__, self._filename, self._line_nodes)
            if node is None:
                raise
            raise type(e)(f"{e}\n  in '{node.prim.name}' created at {node.loc} "
                          f"(running nf.function {self.name!r})").with_traceback(None) from None
        it = iter(outs)
        dev = STATE.device
        leaves = []
        for kind, c in zip(self.out_kinds, self.out_consts):
            if kind == "v":
                b = next(it)
                leaves.append(_wrap(b) if dev is None else wrap_on(b, dev))
            else:
                leaves.append(c)
        return tree.unflatten(self.out_def, leaves)

    def pretty_printed(self):
        return format_graph(self.graph)

    def memory_report(self):
        """Peak live bytes, bytes allocated and reused per call (ndflow/graph/memory.py)."""
        from .memory import memory_report
        return memory_report(self.graph)

    def __str__(self):
        return format_graph(self.graph)


class Function:
    """A compiled Python function, as `tf.function` (see `function`)."""

    def __init__(self, fn, input_signature=None, reduce_retracing=False, jit_compile=None,
                 autograph=True, name=None):
        self._fn = fn
        self._sig = None if input_signature is None else list(input_signature)
        self._reduce_retracing = reduce_retracing
        self._cache = {}
        self._tracing_count = 0
        self._name = name or getattr(fn, "__name__", "function")
        self._instances = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, fn)

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
                             name=self._name)
            try:
                self._instances[obj] = bound
            except TypeError:
                pass
        return bound

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
        if STATE.traces:
            # inside another trace or a vectorized_map: trace into the same graph / batch
            return self._fn(*args, **kwargs)
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
        cf = self._cache.get(key)
        if cf is None:
            cf = self._trace(args, kwargs, leaves, d)
            self._cache[key] = cf
        bufs = []
        for x in leaves:
            if isinstance(x, ndarray):
                bufs.append(x._v)
            elif isinstance(x, np.ndarray):
                bufs.append(x)
        return cf(bufs)

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
        cf = self._cache.get(key)
        if cf is None:
            cf = self._cache[key] = self._trace(args, kwargs, leaves, d)
        return cf

    def _trace(self, args, kwargs, leaves, d):
        from ..train.variable import Variable
        self._tracing_count += 1
        if len(self._cache) >= 8 and self._tracing_count in (9, 20, 50):
            warnings.warn(f"nf.function {self._name!r} has been traced {self._tracing_count} "
                          f"times: calls with new shapes, dtypes or Python values retrace. Use "
                          f"input_signature with None dimensions or pass arrays instead of Python "
                          f"numbers.", stacklevel=3)
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
                    else:
                        sym.append(trace.new_input(x.shape, np.dtype(x.dtype)))
                    k += 1
                else:
                    sym.append(x)
            a, kw = tree.unflatten(d, sym)
            out = self._fn(*a, **kw)
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
            else:
                kinds.append("k")
                consts.append(o)
        trace.graph.outputs = outs
        return ConcreteFunction(self._name, trace.graph, out_def, kinds, consts)

    def __repr__(self):
        return "<ndflow.function %s>" % self._name


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_relax_shapes=None, name=None, **kwargs):
    """Compile `func` into a graph, as `tf.function`. Usable as `@function` or
    `@function(input_signature=[...])`.

    The first call with a new input signature (shapes, dtypes, Python values) traces: Python
    runs once, side effects happen then, Python loops unroll. Later calls run the optimized
    graph. Random ops draw fresh numbers and Variables are read and written at every call."""
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
