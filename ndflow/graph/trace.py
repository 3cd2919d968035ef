"""The tracing interpreter: primitives on symbolic values append nodes to a graph.

`GraphTrace` traces an `nf.function`; `SubGraphTrace` traces a control-flow body (a branch, a
loop body) into a closed sub-graph: values of enclosing traces it uses become extra inputs.
"""
import itertools
import weakref

from ..core.ndarray import ndarray, symbolic, _user_line
from ..core.state import STATE
from ..core.mutation import alias
from ..core import tree
from ..core.variable import VariableBase
from .ir import Graph, Node, Var, SubGraph
from ..core.primitive import bind
from ..primitives.elementwise import copy_p

_levels = itertools.count(1)


def next_level():
    return next(_levels)


class GraphTrace:
    is_graph = True
    dynamic = False     # see SubGraphTrace
    kind = "symbolic"

    def __init__(self, name="f"):
        self.level = next_level()
        self.graph = Graph(name)
        self._consts = {}        # id(array) -> Var (the array is kept alive by the Var)
        self.var_values = {}     # id(Variable) -> current symbolic value in this trace
        self.written = {}        # id(array) -> (weakref, its eager fields): see note_write

    def note_write(self, x):
        """`x`, an eager array, is being written while tracing: it holds graph values until the
        trace ends, then gets its own value back and the function writes the final value into
        it after every call (core/mutation.py)."""
        if id(x) not in self.written:
            self.written[id(x)] = (weakref.ref(x), save_fields(x))

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
                snap = alias(a)
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
            if v.kind == "a" or n is None or n.prim.variable_access == "write":
                return None
            need.add(id(n))
            stack.extend(n.inputs)
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


def save_fields(x):
    return (x._v, x._t, x._dev, x._tid, getattr(x, "_aux", None))


def restore_fields(x, f):
    x._v, x._t, x._dev, x._tid = f[:4]
    if f[1] is not None:
        x._aux = f[4]


def innermost_graph_trace():
    for t in reversed(STATE.traces):
        if t.is_graph:
            return t
    return None


class SubGraphTrace(GraphTrace):
    """Traces a control-flow body into a closed graph. It is 'dynamic': every operation run
    while it is the innermost graph trace is recorded here, even one whose inputs all belong to
    enclosing traces or are eager (`find_top_trace`), so the body's work happens each time the
    control-flow op runs it. Values of enclosing traces become extra inputs ('captures').

    Variables: a read inside the body becomes a read in the enclosing trace, captured (so tapes
    there see it and can differentiate through the body), unless the body assigns the variable
    too and is a loop (`own_vars`): then the body reads and writes it itself, every iteration."""
    dynamic = True

    def __init__(self, name, own_vars=()):
        super().__init__(name)
        self.captured = []      # the enclosing values, in the order of their inputs
        self._cap = {}          # capture key -> Var
        self.cap_keys = []
        self.own_vars = set(own_vars)
        self.redirected = set()     # id(Variable) read through the enclosing trace
        self.assigned = {}          # id(Variable) -> Variable assigned in here

    def to_var(self, a):
        t = a._t
        if t is self:
            return a._v
        if t is None:
            return super().to_var(a)
        if t.level > self.level:
            raise ValueError(
                "a symbolic value from a nested nf.function, vectorized_map or control-flow "
                f"body leaked into this one (at {_user_line()}); return it instead of capturing it")
        key = capture_key(a)
        v = self._cap.get(key)
        if v is None:
            v = Var(a.shape, a.dtype, kind="a")
            self.graph.inputs.append(v)
            self.captured.append(a)
            self.cap_keys.append(key)
            self._cap[key] = v
        return v

    def process(self, prim, args, params):
        var = params.get("var")
        if var is not None and prim.variable_access == "read" and id(var) not in self.assigned \
                and id(var) not in self.own_vars:
            return symbolic(self, self.to_var(self._read_outside(var)))
        if var is not None and prim.variable_access == "write":
            self.assigned[id(var)] = var
        return super().process(prim, args, params)

    def _read_outside(self, var):
        st = STATE
        i = st.traces.index(self)
        above = st.traces[i:]
        del st.traces[i:]
        st.refresh()
        try:
            val = var.value()       # tapes of the enclosing level see this read
        finally:
            st.traces.extend(above)
            st.refresh()
        self.redirected.add(id(var))
        return val


def capture_key(a):
    """Identity of a value of an enclosing trace (two wrappers of one value are one capture)."""
    return (id(a._t), id(a._v), getattr(a, "_aux", None))


def trace_body(fn, avals, name, in_def=None, own_vars=()):
    """Run `fn` on fresh symbolic inputs of `avals` [(shape, dtype)] (structured by `in_def`)
    inside a SubGraphTrace. Returns (trace, output leaves, output structure); `close` makes the
    graph."""
    trace = SubGraphTrace(name, own_vars)
    st = STATE
    st.traces.append(trace)
    st.refresh()
    try:
        ins = [trace.new_input(s, d) for s, d in avals]
        out = fn(*(ins if in_def is None else tree.unflatten(in_def, ins)))
        leaves, d = tree.flatten_with_def(out)
        leaves = [x.value() if isinstance(x, VariableBase) else x for x in leaves]
        # a body that returns an enclosing value as it is captures it now, so the captures
        # the control-flow op collects (union_captures) include it
        for x in leaves:
            if isinstance(x, ndarray) and x._t is not None and x._t is not trace:
                trace.to_var(x)
    finally:
        st.traces.remove(trace)
        st.refresh()
    for a in trace.captured:
        if a._t is trace:
            raise ValueError(f"an array of the enclosing code was changed in place inside the "
                             f"control-flow body {name!r}; return the new value instead")
    return trace, leaves, d


def close(trace, outputs, inputs=None):
    """The SubGraph of a finished body trace with `outputs` (arrays). `inputs`: the capture
    keys of every operand of the control-flow op, in order, after the explicit inputs; a key
    this body did not capture gets an unused input."""
    g = trace.graph
    outs = []
    for o in outputs:
        v = trace.to_var(o)
        if v.kind == "c":
            # a fresh array at every run, as the body makes one when it runs eagerly (a
            # constant's buffer returned to the caller could be changed in place)
            v = trace.process(copy_p, [o], {})._v
        outs.append(v)
    g.outputs = outs
    n_explicit = len(g.inputs) - len(trace.captured)
    if inputs is not None:
        own = dict(zip(trace.cap_keys, g.inputs[n_explicit:]))
        extra = []
        for key, a in inputs:
            v = own.get(key)
            extra.append(v if v is not None else Var(a.shape, a.dtype, kind="a"))
        g.inputs = g.inputs[:n_explicit] + extra
    return SubGraph(g)


def union_captures(*traces):
    """[(key, value)] of everything the traces captured, each once, in first-seen order."""
    seen, out = set(), []
    for t in traces:
        for k, a in zip(t.cap_keys, t.captured):
            if k not in seen:
                seen.add(k)
                out.append((k, a))
    return out


def forget_assigned(*traces):
    """After a body that assigns Variables: the enclosing graph trace must read them again."""
    outer = innermost_graph_trace()
    if outer is None:
        return
    for t in traces:
        for vid in t.assigned:
            outer.var_values.pop(vid, None)
