"""The tracing interpreter: primitives on symbolic values append nodes to a graph."""
import itertools

from ..core.ndarray import ndarray, symbolic, _user_line
from ..core.primitive import Aval
from ..core.state import STATE
from .ir import Graph, Node, Var

_levels = itertools.count(1)


def next_level():
    return next(_levels)


class GraphTrace:
    is_graph = True
    kind = "symbolic"

    def __init__(self, name="f"):
        self.level = next_level()
        self.graph = Graph(name)
        self._consts = {}        # id(array) -> Var (the array is kept alive by the Var)
        self.var_values = {}     # id(Variable) -> current symbolic value in this trace

    def shape_of(self, x):
        return x._v.shape

    def new_input(self, shape, dtype):
        v = Var(shape, dtype, kind="a")
        self.graph.inputs.append(v)
        return symbolic(self, v)

    def to_var(self, a):
        t = a._t
        if t is self:
            return a._v
        if t is None:
            hit = self._consts.get(id(a))
            if hit is None or hit[0]._v is not a._v:
                # the value now, not the array object: item assignment later in the trace
                # rebinds the object to a symbolic value (`b = zeros(4); b[i] = x`)
                snap = object.__new__(ndarray)
                snap._v, snap._t, snap._dev, snap._tid = a._v, None, a._dev, a._tid
                v = Var(a.shape, a.dtype, kind="c", const=snap)
                self._consts[id(a)] = hit = (a, v)    # `a` kept alive: its id stays unique
                self.graph.consts.append(v)
            return hit[1]
        raise ValueError(
            "a symbolic value from another nf.function or vectorized_map leaked into this "
            f"trace (at {_user_line()}); return it from that function instead of capturing it")

    def process(self, prim, args, params):
        ins = [self.to_var(a) for a in args]
        try:
            avals = prim.abstract(*ins, **params)
        except Exception as e:
            raise type(e)(f"{e}\n  in '{prim.name}' traced at {_user_line()}") from None
        loc = _user_line()
        if prim.multiple_results:
            outs = [Var(a.shape, a.dtype) for a in avals]
        else:
            outs = [Var(avals.shape, avals.dtype)]
        self.graph.nodes.append(Node(prim, ins, params, outs, loc))
        if prim.multiple_results:
            return tuple(symbolic(self, o) for o in outs)
        return symbolic(self, outs[0])

    def lift(self, x):
        """Evaluate `x` (symbolic in this trace) now, as TensorFlow lifts a Variable's initial
        value out of the function being traced. Possible when `x` depends on no graph input
        and no variable write; the nodes that computed it leave the graph and their outputs
        become constants (later uses see the same values, and random draws happen once).
        Returns the eager array, or None when `x` needs the function's inputs."""
        g = self.graph
        producer = {o.id: n for n in g.nodes for o in n.outputs}
        need, seen, stack = set(), set(), [x._v]
        while stack:
            v = stack.pop()
            if v.id in seen or v.kind == "c":
                continue
            seen.add(v.id)
            n = producer.get(v.id)
            if v.kind == "a" or n is None or n.prim.name == "assign_variable":
                return None
            need.add(id(n))
            stack.extend(n.inputs)
        from ..core.primitive import bind
        vals = {}
        kept = []
        saved = STATE.traces
        STATE.traces = []
        STATE.refresh()
        try:
            for n in g.nodes:
                if id(n) not in need:
                    kept.append(n)
                    continue
                ins = [v.const if v.kind == "c" else vals[v.id] for v in n.inputs]
                outs = bind(n.prim, *ins, **n.params)
                for o, val in zip(n.outputs, outs if n.prim.multiple_results else (outs,)):
                    vals[o.id] = val
        finally:
            STATE.traces = saved
            STATE.refresh()
        for n in g.nodes:
            if id(n) in need:
                for o in n.outputs:
                    o.kind, o.const = "c", vals[o.id]
                    g.consts.append(o)
        g.nodes[:] = kept
        return vals[x._v.id]


def innermost_graph_trace():
    for t in reversed(STATE.traces):
        if t.is_graph:
            return t
    return None
