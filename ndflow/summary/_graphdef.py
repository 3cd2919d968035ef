"""ndflow's graph IR as a TensorFlow `GraphDef`, for TensorBoard's graph dashboard.

Each node becomes a NodeDef named after its primitive (`mul`, `mul_1`, ... as TensorFlow names
ops), with `op` = the primitive's name, `input` = its producers (`name:k` for the k-th result of
a multi-result node), and attributes: `_output_shapes` (TensorBoard labels edges with them; -1
= a size unknown while tracing), `dtype` (or `Tout` for several results), the user's line
(`_ndflow_loc`) and every parameter as text. Arguments are `Placeholder`s, constants `Const`s
(small ones with their value), results `Identity` nodes named `output`, `output_1`, ...
A control-flow node's branches or body are drawn inside the node's name scope
(`cond/then_0/...`), each a closed graph with its own placeholders, as the IR holds them.
"""
import re

import numpy as np

from ..graph.ir import _param
from . import _records as R

_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")


class _Namer:
    def __init__(self):
        self.used = set()

    def __call__(self, scope, base):
        base = _SAFE.sub("_", base) or "node"
        name, k = scope + base, 0
        while name in self.used:
            k += 1
            name = "%s%s_%d" % (scope, base, k)
        self.used.add(name)
        return name


def _param_text(v):
    s = _param(v)
    return s if len(s) <= 200 else s[:197] + "..."


def _out_attrs(outs):
    attrs = {"_output_shapes": R.attr_list_shapes([o.shape for o in outs])}
    if len(outs) == 1:
        attrs["dtype"] = R.attr_type(outs[0].dtype)
    elif outs:
        attrs["Tout"] = R.attr_list_types([o.dtype for o in outs])
    return attrs


def _graph_nodes(g, scope, namer, out):
    src = {}           # var id -> input string ("name" or "name:k")
    for i, v in enumerate(g.inputs):
        name = namer(scope, "arg" if i == 0 else "arg_%d" % i)
        src[v.id] = name
        out.append(R.node_def(name, "Placeholder", (), {
            "dtype": R.attr_type(v.dtype), "shape": R.attr_shape(v.shape),
            "_output_shapes": R.attr_list_shapes([v.shape])}))
    for c in g.consts:
        name = namer(scope, "Const")
        src[c.id] = name
        attrs = _out_attrs([c])
        try:
            val = np.asarray(c.const)
        except Exception:         # a constant on another device: its shape and dtype are enough
            val = None
        if val is not None and val.size <= 16 and R.dtype_enum(val.dtype):
            attrs["value"] = R.attr_tensor(val)
        out.append(R.node_def(name, "Const", (), attrs))
    for n in g.nodes:
        name = namer(scope, n.prim.name)
        attrs = _out_attrs(n.outputs)
        if n.loc:
            attrs["_ndflow_loc"] = R.attr_s(str(n.loc))
        for k, v in n.params.items():
            if k not in ("out",):
                attrs[k if k not in attrs else "param_" + k] = R.attr_s(_param_text(v))
        out.append(R.node_def(name, n.prim.name, [src[v.id] for v in n.inputs if v.id in src],
                              attrs))
        for j, o in enumerate(n.outputs):
            src[o.id] = name if j == 0 else "%s:%d" % (name, j)
        for j, sub in enumerate(n.subgraphs()):
            body = sub.graph if sub.graph is not None else sub.optimized
            _graph_nodes(body, "%s/%s_%d/" % (name, _SAFE.sub("_", str(sub.name)), j), namer, out)
    for i, v in enumerate(g.outputs):
        name = namer(scope, "output")
        out.append(R.node_def(name, "Identity", [src[v.id]] if v.id in src else [],
                              _out_attrs([v])))


def graph_def(g):
    """Serialized GraphDef of the IR graph `g` (nodes in field 1, versions{producer} in 4)."""
    nodes = []
    _graph_nodes(g, "", _Namer(), nodes)
    return b"".join(R.f_bytes(1, n) for n in nodes) + R.f_bytes(4, R.f_varint(1, 1))
