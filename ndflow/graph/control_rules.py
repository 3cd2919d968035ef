"""What the control-flow primitives (`control.py`, `scan.py`) share: the pure/effectful
primitive pair, the checks on what a differentiated body may do, and the helpers their VJP and
batch rules are written with."""
import numpy as np

from ..core.primitive import Primitive
from ..core import tree, dtypes as _dt
from ..core.ndarray import ndarray
from ..core.variable import VariableBase
from .ir import eval_graph
from .trace import trace_body, close
from ..primitives.shape import move_to_front
from ..vectorize.batching import _unbatched_output, vmap
from ..autodiff.tape import GradientTape
from .. import numpy as tnp

_PY_SCALARS = (bool, int, float, complex)


def _WRITES(prim):
    return prim.variable_access == "write"



def _control_primitives(name, impl, abstract, vjp, batch):
    """The pure primitive and its effectful twin (bodies with random draws or Variable writes:
    never folded, merged or removed); same rules."""
    # a body may return an operand unchanged: the result may share its buffer
    pure = Primitive(name, impl, abstract, multiple_results=True, returns_view=True)
    eff = Primitive(name, impl, abstract, multiple_results=True, effect=True,
                    returns_view=True)
    for p in (pure, eff):
        p.def_vjp(vjp)
        p.batch = batch
    return pure, eff


def _pick(pair, *subgraphs):
    return pair[1] if any(s.effect for s in subgraphs) else pair[0]


def _check_grad_effects(subgraphs, what, allowed=("read",)):
    """`allowed`: the Variable accesses (`Primitive.variable_access`) a body may hold. Sinks
    (prints, summaries) are fine too: the rules replay bodies `without_sinks`; and so are checks
    (check_numerics), which may run again."""
    for s in subgraphs:
        for n in s.graph.nodes:
            if (n.prim.effect and not (n.prim.sink or n.prim.check)
                    and n.prim.variable_access not in allowed):
                raise NotImplementedError(
                    f"gradient of {what} whose body has the effect '{n.prim.name}' (created at "
                    f"{n.loc}) is not supported: the body would run again to differentiate it")
            _check_grad_effects(list(n.subgraphs()), what, allowed)


def _diff(x):
    return _dt.is_differentiable(np.dtype(x.dtype))


def _aval_list(xs):
    return [(tuple(x.shape), np.dtype(x.dtype)) for x in xs]


def _as_array(x, dtype=None):
    if isinstance(x, VariableBase):
        x = x.value()
    return tnp.asarray(x, dtype=dtype)


def _structure(d, n):
    return repr(tree.unflatten(d, ["*"] * n))


def _batch_size(args, axes):
    for a, ax in zip(args, axes):
        if ax is not None:
            return a.shape[ax], (a, ax)
    raise AssertionError("batch rule without a batched input")


def _to_batched(x, ax, size, ref):
    """`x` with its batch axis at 0; an unbatched `x` repeated `size` times."""
    if ax is not None:
        return move_to_front(x, ax)
    return _unbatched_output(x, size, ref)


def _vmapped(graph, in_axes):
    """A function of (batched) operands running `graph` per example, outputs batched at 0."""
    return vmap(lambda *xs: eval_graph(graph, *xs), in_axes=tuple(in_axes))


def _batched_body(sub, in_axes, avals):
    """`sub` traced again with batched operands (`in_axes`), cached on the body by its axes and
    operand avals."""
    key = ("batch", tuple(in_axes), tuple(avals))
    g = sub.cache.get(key)
    if g is None:
        fn = _vmapped(sub.graph, in_axes)
        t, leaves, _ = trace_body(lambda *xs: fn(*xs), avals, sub.name + "_batched")
        g = sub.cache[key] = close(t, leaves)
    return g


def _grads(fn, xs, wrt, cts):
    """VJP of `fn(*xs)` (a list of outputs) at `xs` for the cotangents `cts` of its
    differentiable outputs: gradients for xs[i], i in `wrt` (zeros where unconnected)."""
    with GradientTape() as tape:
        for i in wrt:
            tape.watch(xs[i])
        outs = fn(*xs)
    pairs = [(o, c) for o, c in zip(outs, cts) if c is not None and _diff(o)]
    if not pairs:
        return [tnp.zeros_like(xs[i]) for i in wrt]
    return tape.gradient([o for o, _ in pairs], [xs[i] for i in wrt],
                         output_gradients=[c for _, c in pairs], unconnected_gradients="zero")


def _check_body_out(name, leaves, d, in_def, avals):
    if d != in_def:
        n_in = len(avals)
        raise ValueError(f"{name}: the body must return the structure of loop_vars "
                         f"{_structure(in_def, n_in)}; it returned {_structure(d, len(leaves))}")
    out = []
    for k, (v, (s, dt)) in enumerate(zip(leaves, avals)):
        if type(v) in _PY_SCALARS or isinstance(v, (np.ndarray, np.generic)):
            v = _as_array(v, dt)
        if not isinstance(v, ndarray):
            raise TypeError(f"{name}: the body returned {type(v).__name__} for loop variable "
                            f"{k}; expected an array")
        if v.dtype != dt:
            raise TypeError(f"{name}: loop variable {k} enters the loop as {dt.name} but the "
                            f"body returns {v.dtype.name}")
        if len(v.shape) != len(s):
            raise ValueError(f"{name}: loop variable {k} enters the loop with shape {list(s)} "
                             f"but the body returns shape {list(v.shape)}")
        out.append(v)
    return out
