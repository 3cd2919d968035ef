"""What `nf.saved_model.load` returns: each saved concrete function becomes an `nf.function`
whose Python body binds the saved graph's primitives one by one (`_run_graph`), so every
transformation sees ordinary primitives; `LoadedFunction` tries an attribute's concrete
functions in order; `LoadedModel` is the loaded object."""
import numpy as np

from ..core import tree
from ..core.ndarray import ndarray
from ..graph.function import function
from ..graph.trace import innermost_graph_trace
from ..train.variable import Variable, read_var_p, assign_var_p
from ..train.module import Module
from ._graphio import FormatError
from ..core.primitive import bind
from .. import numpy as tnp


def _assigned_in(node):
    """The Variables assigned inside a node's sub-graphs (at any depth)."""
    out, stack = [], list(node.subgraphs())
    while stack:
        sub = stack.pop()
        for n in sub.graph.nodes:
            if n.prim is assign_var_p:
                out.append(n.params["var"])
            stack.extend(n.subgraphs())
    return out


def _run_graph(g, args):
    """Evaluate `g` by binding its primitives (so tapes, traces and batching see each one).
    Variable reads and writes go through the Variables, as the traced Python code did, so a
    tape watches trainable Variables the graph reads."""
    env = {v.id: a for v, a in zip(g.inputs, args)}
    for c in g.consts:
        env[c.id] = c.const
    for n in g.nodes:
        if n.prim is read_var_p:
            outs = (n.params["var"].value(),)
        elif n.prim is assign_var_p:
            val = env[n.inputs[0].id]
            n.params["var"].assign(val)
            outs = (val,)
        else:
            outs = bind(n.prim, *[env[v.id] for v in n.inputs], **n.params)
            if not n.prim.multiple_results:
                outs = (outs,)
            if n.prim.effect:
                written = _assigned_in(n)
                outer = innermost_graph_trace() if written else None
                if outer is not None:
                    # as after tracing a body that assigns Variables: the enclosing trace must
                    # read them again, not reuse the value it read before this node
                    for var in written:
                        outer.var_values.pop(id(var), None)
        for o, val in zip(n.outputs, outs):
            env[o.id] = val
    return [env[v.id] for v in g.outputs]


class _LoadedFunction:
    """One saved concrete function, ready to call (an `nf.function` over its graph)."""

    def __init__(self, name, graph, specs, in_def, out_def, out_consts, jit_compile=None):
        self.name = name
        self.graph = graph
        self.input_signature = tree.unflatten(in_def, specs)
        n = len(graph.inputs)
        if len(specs) != n:
            raise FormatError(f"function {name!r}: {len(specs)} input specs for a graph of {n} "
                              f"inputs")

        def body(*args):
            leaves = tree.flatten(args)
            leaves = [x if isinstance(x, ndarray) else tnp.asarray(x, dtype=s.dtype)
                      for x, s in zip(leaves, specs)]
            if len(leaves) != n:
                raise TypeError(f"{name}: expected {n} array arguments, got {len(leaves)}")
            outs = iter(_run_graph(graph, leaves))
            return tree.unflatten(out_def, [next(outs) if c is _GRAPH_OUT else c
                                            for c in out_consts])
        body.__name__ = name
        self.function = function(body, input_signature=list(self.input_signature), name=name,
                                 jit_compile=jit_compile)

    def accepts(self, args):
        leaves = tree.flatten(args)
        specs = tree.flatten(list(self.input_signature))
        if len(leaves) != len(specs):
            return False
        for x, s in zip(leaves, specs):
            if isinstance(x, Variable):
                x = x._value
            if not isinstance(x, (ndarray, np.ndarray)):
                x = np.asarray(x)
                if x.dtype.kind != s.dtype.kind and not (x.dtype.kind in "iub"
                                                         and s.dtype.kind in "fc"):
                    return False
                continue
            if not s.is_compatible_with(x):
                return False
        return True


_GRAPH_OUT = object()


class LoadedFunction:
    """The callable at an attribute of a loaded model: the saved concrete functions for it,
    tried in order (the first whose input signature accepts the arguments runs)."""

    def __init__(self, name, concretes):
        self.__name__ = name
        self._concretes = concretes

    @property
    def concrete_functions(self):
        return [c.function for c in self._concretes]

    @property
    def input_signature(self):
        return self._concretes[0].input_signature if len(self._concretes) == 1 else None

    def __call__(self, *args):
        if len(self._concretes) == 1:
            return self._concretes[0].function(*args)
        for c in self._concretes:
            if c.accepts(args):
                return c.function(*args)
        sigs = "; ".join(repr(list(c.input_signature)) for c in self._concretes)
        raise TypeError(f"{self.__name__}: no saved signature accepts these arguments (shapes "
                        f"{[tuple(np.shape(a)) for a in tree.flatten(args)]}); saved: {sigs}")

    def __repr__(self):
        return "<ndflow saved function %s>" % self.__name__


class LoadedModel(Module):
    """What `load` returns: the saved functions as attributes (`__call__` makes it callable),
    `signatures`, and the Variables (`variables`, and at their saved attribute paths)."""

    def __call__(self, *args):
        f = self.__dict__.get("__call__")
        if f is None:
            raise TypeError("this saved model has no __call__ function")
        return f(*args)
