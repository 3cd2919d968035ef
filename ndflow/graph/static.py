"""What is known about a traced value while tracing: `static_value` evaluates the part of the
graph that made it when everything it depends on is known (constants, sizes of `nf.shape`
that are not None, arithmetic on them). So `s = nf.shape(x); reshape(x, [s[0], s[1] * s[2]])`
with only `s[0]` unknown is a reshape with one unknown size, as it would be with
`x.shape[1] * x.shape[2]`."""
import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import Primitive, Aval, bind
from ..primitives.elementwise import convert_p
from ..primitives.indexing import getitem_p
from ..primitives.indexing import concatenate_p

_MAX_NODES = 64       # values made of more operations are treated as unknown


# `nf.shape` (graph/function.py): the shape as an array, computed at run time, so sizes unknown
# while tracing are available
def _shape_impl(x, out_type=np.int32):
    if type(x) is np.ndarray or isinstance(x, np.generic):
        return np.asarray(np.shape(x), dtype=out_type)
    # a device buffer: the shape array is made on its device (from metadata, no transfer)
    return np.asarray(np.shape(x), dtype=out_type, like=x)


def _shape_batch(args, axes, out_type=np.int32):
    s = bind(shape_p, args[0], out_type=out_type)
    bd = axes[0]
    return bind(concatenate_p, s[:bd], s[bd + 1:], axis=0), None


shape_p = Primitive("shape", _shape_impl,
                    lambda x, out_type=np.int32: Aval((len(x.shape),), np.dtype(out_type)))
shape_p.def_vjp(lambda ct, x, out_type=np.int32: (None,))
shape_p.batch = _shape_batch


def shape_of(x, out_type=np.int32):
    """The shape of the array `x` as an array of `out_type`, computed at run time (`nf.shape`
    for an ndflow array)."""
    return bind(shape_p, x, out_type=np.dtype(out_type))


def static_value(x):
    """The NumPy value of `x` if it is known while tracing, else None. Eager values are their
    own value; a symbolic one is evaluated from the nodes that made it (pure primitives only)."""
    if not isinstance(x, ndarray):
        return np.asarray(x) if isinstance(x, (int, np.integer, np.ndarray)) else None
    t = x._t
    if t is None:
        return x.numpy()
    if not getattr(t, "is_graph", False):
        return None
    return _eval(t, x._v, [0])


def _producer(trace, var):
    for n in reversed(trace.graph.nodes):
        for k, o in enumerate(n.outputs):
            if o is var:
                return n, k
    return None, None


def _eval(trace, var, budget):
    if var.kind == "c":
        c = var.const
        return c.numpy() if isinstance(c, ndarray) else np.asarray(c)
    if var.kind == "a":
        # a capture of a control-flow body: the enclosing value it stands for
        inputs = trace.graph.inputs
        captured = getattr(trace, "captured", None)
        if captured:
            n_explicit = len(inputs) - len(captured)
            for i, v in enumerate(inputs[n_explicit:]):
                if v is var:
                    outer = captured[i]
                    return _eval(outer._t, outer._v, budget) if outer._t is not None and \
                        getattr(outer._t, "is_graph", False) else (
                            outer.numpy() if outer._t is None else None)
        return None
    budget[0] += 1
    if budget[0] > _MAX_NODES:
        return None
    node, k = _producer(trace, var)
    if node is None:
        return None
    prim = node.prim
    if prim is shape_p:
        src = node.inputs[0]
        if None in src.shape:
            return None
        return np.asarray(src.shape, dtype=node.params.get("out_type", np.int32))
    if prim is getitem_p and len(node.inputs) == 1:
        src_node, _ = _producer(trace, node.inputs[0])
        if src_node is not None and src_node.prim is shape_p:
            # one entry of a shape with other entries unknown
            spec = node.params["spec"]
            if len(spec) == 1 and spec[0][0] == "i":
                d = src_node.inputs[0].shape[spec[0][1]]
                return None if d is None else np.asarray(
                    d, dtype=src_node.params.get("out_type", np.int32))
    if prim.effect or prim.multiple_results or prim.impl is None or any(
            True for _ in node.subgraphs()):
        return None
    vals = []
    for v in node.inputs:
        if v.ndim and (None in v.shape or int(np.prod(v.shape)) > 64):
            return None
        val = _eval(trace, v, budget)
        if val is None:
            return None
        vals.append(val)
    try:
        return np.asarray(prim.impl(*vals, **node.params))
    except Exception:
        return None


def static_int(x):
    """`x` as a Python int when it is a 0-d integer known while tracing, else None."""
    v = static_value(x)
    if v is None or v.shape != () or v.dtype.kind not in "iub":
        return None
    return int(v)


def shape_entry_of(x):
    """(the array's graph value, axis) when the traced scalar `x` is `nf.shape(a)[axis]`, else
    None."""
    t = getattr(x, "_t", None)
    if t is None or not getattr(t, "is_graph", False):
        return None
    var = x._v
    for _ in range(2):
        node, _k = _producer(t, var)
        if node is None:
            return None
        if node.prim is convert_p:
            var = node.inputs[0]
            continue
        if node.prim is getitem_p and len(node.inputs) == 1:
            src, _ = _producer(t, node.inputs[0])
            spec = node.params["spec"]
            if src is not None and src.prim is shape_p and len(spec) == 1 and spec[0][0] == "i":
                return src.inputs[0], spec[0][1]
        return None
    return None
