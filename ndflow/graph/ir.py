"""The graph IR: a flat, topologically ordered list of nodes in SSA form.

A node is (primitive, inputs, params, outputs, location); inputs are graph inputs, constants or
outputs of earlier nodes. Control flow keeps its bodies as `SubGraph`s in a node's params (a
cond's branches, a loop's body), each a closed graph of its own. `format_graph` prints it all in
a form a person can follow; `verify` checks it.
"""
import itertools

from ..core.state import STATE
from ..core.settings import settings
from ..core.primitive import bind

_ids = itertools.count()


class Var:
    __slots__ = ("shape", "dtype", "id", "kind", "const")

    def __init__(self, shape, dtype, kind="v", const=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.id = next(_ids)
        self.kind = kind          # 'a' argument, 'c' constant, 'v' node output
        self.const = const        # constant's ndarray (kind 'c')

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return "%s%d" % (self.kind, self.id)


class Node:
    __slots__ = ("prim", "inputs", "params", "outputs", "loc")

    def __init__(self, prim, inputs, params, outputs, loc):
        self.prim = prim
        self.inputs = tuple(inputs)
        self.params = params
        self.outputs = tuple(outputs)
        self.loc = loc

    def with_inputs(self, inputs):
        return Node(self.prim, inputs, self.params, self.outputs, self.loc)

    def subgraphs(self):
        for v in self.params.values():
            if isinstance(v, SubGraph):
                yield v
            elif isinstance(v, tuple):
                for e in v:
                    if isinstance(e, SubGraph):
                        yield e


class Graph:
    def __init__(self, name="f"):
        self.name = name
        self.inputs = []      # Vars (kind 'a')
        self.consts = []      # Vars (kind 'c')
        self.nodes = []
        self.outputs = []     # Vars

    def copy_with(self, nodes=None, outputs=None):
        g = Graph(self.name)
        g.inputs = list(self.inputs)
        g.consts = list(self.consts)
        g.nodes = list(self.nodes if nodes is None else nodes)
        g.outputs = list(self.outputs if outputs is None else outputs)
        return g

    def __str__(self):
        return format_graph(self)

    def to_dot(self, title=None):
        """This graph as Graphviz DOT text (ndflow/graph/dot.py)."""
        from .dot import to_dot
        return to_dot(self, title)


class SubGraph:
    """A closed graph used as a parameter (a branch, a loop body): called with buffers, it
    runs its optimized, generated code (compiled on first use). Hashable by identity, so nodes
    holding it stay hashable for CSE."""
    __slots__ = ("graph", "optimized", "name", "effect", "_run", "cache", "check_numerics",
                 "fast_math", "__weakref__")

    def __init__(self, graph, name=None):
        self.graph = graph        # as traced: what gradient and batching rules re-enter
        self.optimized = None     # what `compile` made of it (fused kernels: not re-bindable)
        self.name = name or graph.name
        self.effect = any(n.prim.effect or any(s.effect for s in n.subgraphs())
                          for n in graph.nodes)
        self._run = None
        self.cache = {}           # derived graphs (gradients, batched versions), by purpose
        # made while tracing with nf.debugging.enable_check_numerics on: its code checks too
        self.check_numerics = STATE.check_numerics
        # traced inside an nf.function(jit_compile=True): compiled (on first use, in whichever
        # thread) under its fast-math contract, as the graph around it
        self.fast_math = settings.fast_math

    @property
    def in_avals(self):
        return [(v.shape, v.dtype) for v in self.graph.inputs]

    @property
    def out_avals(self):
        return [(v.shape, v.dtype) for v in self.graph.outputs]

    def compile(self):
        if self._run is None:
            # the optimized graph is kept apart: its fused nodes have no gradient or batching
            # rules, and a rule may re-enter this body after it ran (a saved function
            # differentiated after a call)
            self.optimized, self._run = _COMPILER[0](self.graph, self.check_numerics,
                                                     self.fast_math)
        return self._run

    def __call__(self, *bufs):
        run = self._run or self.compile()
        return run(*bufs)

    def __repr__(self):
        return "{%s}" % self.name


def _no_compiler(graph, check_numerics, fast_math):
    raise RuntimeError("a sub-graph ran before the compiler (ndflow.graph.codegen) was imported")


# How a body is optimized and turned into code: (graph, check_numerics, fast_math) ->
# (optimized, run).
# The compiler is a layer above this IR; graph/codegen.py installs it when imported, and every
# module that runs bodies (control flow, functions, the saved-model loader) imports that.
_COMPILER = [_no_compiler]


def set_compiler(compile_body):
    _COMPILER[0] = compile_body


def without_sinks(sub):
    """`sub` (a SubGraph) with its sinks (`prim.sink`: prints, summaries) left out, nested
    bodies too: what a gradient rule runs when it replays a body to differentiate it, so an
    output effect happens once, in the forward pass. The same SubGraph when it holds none."""
    hit = sub.cache.get("without_sinks")
    if hit is not None:
        return hit
    g = _strip_sinks(sub.graph)
    out = sub if g is sub.graph else SubGraph(g, sub.name)
    out.check_numerics = sub.check_numerics
    sub.cache["without_sinks"] = out
    return out


def _strip_sinks(g):
    nodes, changed = [], False
    for n in g.nodes:
        if n.prim.sink:
            changed = True
            continue
        params = None
        for k, v in n.params.items():
            if isinstance(v, SubGraph):
                w = without_sinks(v)
            elif isinstance(v, tuple) and v and isinstance(v[0], SubGraph):
                w = tuple(without_sinks(e) for e in v)
                w = v if all(a is b for a, b in zip(w, v)) else w
            else:
                continue
            if w is not v:
                params = dict(n.params if params is None else params)
                params[k] = w
        if params is not None:
            # (the node keeps its effectful primitive: harmless, it only forgoes rewrites)
            n = Node(n.prim, n.inputs, params, n.outputs, n.loc)
            changed = True
        nodes.append(n)
    return g.copy_with(nodes=nodes) if changed else g


def _aval(v):
    return "%s[%s]" % (v.dtype.name, ",".join("?" if d is None else str(d) for d in v.shape))


def _param(v):
    if isinstance(v, SubGraph):
        return repr(v)
    if isinstance(v, tuple) and v and isinstance(v[0], SubGraph):
        return "(" + ", ".join(repr(s) for s in v) + ")"
    if isinstance(v, tuple) and v and isinstance(v[0], tuple):
        return "(" + ",".join("".join(str(x) for x in e if x is not None) for e in v) + ")"
    if hasattr(v, "name") and hasattr(v, "itemsize"):
        return v.name
    if callable(v):
        return getattr(v, "__name__", "fn")
    return repr(v)


def format_node(n):
    outs = ", ".join("%r: %s" % (o, _aval(o)) for o in n.outputs)
    ps = ", ".join("%s=%s" % (k, _param(v)) for k, v in sorted(n.params.items()))
    args = ", ".join(repr(i) for i in n.inputs)
    return "%s = %s(%s%s)" % (outs or "()", n.prim.name, args, (", " + ps) if ps else "")


def format_graph(g, indent=""):
    lines = [indent + "graph %s(%s) {" % (
        g.name, ", ".join("%r: %s" % (v, _aval(v)) for v in g.inputs))]
    for c in g.consts:
        lines.append(indent + "  %r: %s = constant" % (c, _aval(c)))
    for n in g.nodes:
        lines.append(indent + "  " + format_node(n))
        for s in n.subgraphs():
            lines.append(format_graph(s.graph, indent + "    "))
    lines.append(indent + "  return (%s)" % ", ".join(repr(o) for o in g.outputs))
    lines.append(indent + "}")
    return "\n".join(lines)


class GraphError(AssertionError):
    """The graph IR broke an invariant (a compiler bug, not a user error)."""


def _shapes_agree(a, b):
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def verify(g, where=None):
    """Check the invariants every pass must keep: inputs, constants and node outputs are each
    defined once, every use comes after its definition (SSA, topological order), each node's
    outputs have the shapes and dtypes its primitive's rule gives for its inputs, and nested
    sub-graphs hold the same. Raises GraphError naming the node, with the nodes around it."""
    def fail(i, msg):
        lo, hi = max(0, i - 2), min(len(g.nodes), i + 3)
        ctx = "\n".join(("> " if k == i else "  ") + format_node(g.nodes[k]) for k in range(lo, hi))
        head = "graph %r%s: " % (g.name, " after pass %s" % where if where else "")
        raise GraphError(head + msg + ("\n" + ctx if ctx else ""))

    known = set()
    for v in g.inputs:
        if v.kind != "a" or v.id in known:
            fail(-1, "input %r is not a fresh argument" % v)
        known.add(v.id)
    for c in g.consts:
        if c.kind != "c" or c.const is None or c.id in known:
            fail(-1, "constant %r has no value or is defined twice" % c)
        if tuple(c.const.shape) != c.shape or c.const.dtype != c.dtype:
            fail(-1, "constant %r is declared %s but holds %s%s" % (
                c, _aval(c), c.const.dtype, list(c.const.shape)))
        known.add(c.id)
    for i, n in enumerate(g.nodes):
        for v in n.inputs:
            if v.id not in known:
                fail(i, "node %d (%s) uses %r before it is defined" % (i, n.prim.name, v))
        for o in n.outputs:
            if o.id in known:
                fail(i, "node %d (%s) redefines %r" % (i, n.prim.name, o))
            if o.kind != "v":
                fail(i, "node %d (%s) output %r is not a node value" % (i, n.prim.name, o))
            known.add(o.id)
        if n.prim.impl is None:
            fail(i, "node %d (%s) has no kernel" % (i, n.prim.name))
        if not n.prim.effect and n.prim.abstract is not None:
            try:
                avals = n.prim.abstract(*n.inputs, **n.params)
            except Exception as e:
                fail(i, "node %d (%s): its shape rule rejects its inputs: %s" % (i, n.prim.name, e))
            avals = tuple(avals) if n.prim.multiple_results else (avals,)
            if len(avals) != len(n.outputs):
                fail(i, "node %d (%s) has %d outputs, its rule gives %d" % (
                    i, n.prim.name, len(n.outputs), len(avals)))
            for o, a in zip(n.outputs, avals):
                if a.dtype != o.dtype or not _shapes_agree(a.shape, o.shape):
                    fail(i, "node %d (%s) output %r is %s but its rule gives %s%s" % (
                        i, n.prim.name, o, _aval(o), a.dtype, list(a.shape)))
        for s in n.subgraphs():
            verify(s.graph, where)
    for o in g.outputs:
        if o.id not in known:
            fail(len(g.nodes), "graph output %r is never defined" % o)


def eval_graph(g, *args, skip=None):
    """Run `g` by binding its primitives (so the current tapes, traces and batching see every
    operation): how rules re-enter a sub-graph to differentiate or batch it. Nodes whose
    primitive `skip(prim)` accepts are not run: their output is their first input."""
    env = {v.id: a for v, a in zip(g.inputs, args)}
    for c in g.consts:
        env[c.id] = c.const
    for n in g.nodes:
        if skip is not None and skip(n.prim):
            env[n.outputs[0].id] = env[n.inputs[0].id]
            continue
        outs = bind(n.prim, *[env[v.id] for v in n.inputs], **n.params)
        if not n.prim.multiple_results:
            outs = (outs,)
        for o, val in zip(n.outputs, outs):
            env[o.id] = val
    return [env[v.id] for v in g.outputs]
