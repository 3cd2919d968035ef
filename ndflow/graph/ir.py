"""The graph IR: a flat, topologically ordered list of nodes in SSA form.

A node is (primitive, inputs, params, outputs, location); inputs are graph inputs, constants or
outputs of earlier nodes. `format_graph` prints it in a form a person can follow.
"""
import itertools

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


def _aval(v):
    return "%s[%s]" % (v.dtype.name, ",".join("?" if d is None else str(d) for d in v.shape))


def _param(v):
    if isinstance(v, tuple) and v and isinstance(v[0], tuple):
        return "(" + ",".join("".join(str(x) for x in e if x is not None) for e in v) + ")"
    if hasattr(v, "name") and hasattr(v, "itemsize"):
        return v.name
    if callable(v):
        return getattr(v, "__name__", "fn")
    return repr(v)


def format_graph(g):
    lines = ["graph %s(%s) {" % (g.name, ", ".join("%r: %s" % (v, _aval(v)) for v in g.inputs))]
    for c in g.consts:
        lines.append("  %r: %s = constant" % (c, _aval(c)))
    for n in g.nodes:
        outs = ", ".join("%r: %s" % (o, _aval(o)) for o in n.outputs)
        ps = ", ".join("%s=%s" % (k, _param(v)) for k, v in sorted(n.params.items()))
        args = ", ".join(repr(i) for i in n.inputs)
        lines.append("  %s = %s(%s%s)" % (outs, n.prim.name, args, (", " + ps) if ps else ""))
    lines.append("  return (%s)" % ", ".join(repr(o) for o in g.outputs))
    lines.append("}")
    return "\n".join(lines)


def verify(g):
    """Check SSA and topological order; raise AssertionError naming the bad node."""
    known = {v.id for v in g.inputs} | {v.id for v in g.consts}
    for i, n in enumerate(g.nodes):
        for v in n.inputs:
            if v.id not in known:
                raise AssertionError("node %d (%s) uses %r before it is defined" % (i, n.prim.name, v))
        for o in n.outputs:
            if o.id in known:
                raise AssertionError("node %d (%s) redefines %r" % (i, n.prim.name, o))
            known.add(o.id)
    for o in g.outputs:
        if o.id not in known:
            raise AssertionError("graph output %r is never defined" % o)
