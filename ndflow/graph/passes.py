"""Graph-to-graph passes. Each is small, named and tested on graph structure."""
from .ir import Graph


def dead_code_elimination(g: Graph) -> Graph:
    """Drop nodes whose outputs are never used (effects are always kept)."""
    live = {v.id for v in g.outputs}
    kept = []
    for n in reversed(g.nodes):
        if n.prim.effect or any(o.id in live for o in n.outputs):
            kept.append(n)
            live.update(v.id for v in n.inputs)
    kept.reverse()
    out = g.copy_with(nodes=kept)
    out.consts = [c for c in g.consts if c.id in live]
    return out


def _key(n, rename):
    try:
        params = tuple(sorted((k, v) for k, v in n.params.items()))
        hash(params)
    except TypeError:
        return None
    return (n.prim, tuple(rename.get(v.id, v).id for v in n.inputs), params)


def common_subexpression_elimination(g: Graph) -> Graph:
    """Compute identical pure nodes (same primitive, inputs and params) once."""
    seen = {}
    rename = {}
    nodes = []
    for n in g.nodes:
        ins = tuple(rename.get(v.id, v) for v in n.inputs)
        if ins != n.inputs:
            from .ir import Node
            n = Node(n.prim, ins, n.params, n.outputs, n.loc)
        k = None if n.prim.effect else _key(n, rename)
        if k is not None and k in seen:
            prev = seen[k]
            for a, b in zip(n.outputs, prev.outputs):
                rename[a.id] = b
            continue
        if k is not None:
            seen[k] = n
        nodes.append(n)
    return g.copy_with(nodes=nodes, outputs=[rename.get(v.id, v) for v in g.outputs])


DEFAULT_PASSES = (common_subexpression_elimination, dead_code_elimination)

# ---- fusion hook (ndflow/graph/fusion.py, memory.py): elementwise regions become one node,
# then results are written into dead buffers; both last
from .fusion import elementwise_fusion  # noqa: E402
from .memory import reuse_buffers  # noqa: E402
DEFAULT_PASSES = DEFAULT_PASSES + (elementwise_fusion, reuse_buffers)


def optimize(g, passes=DEFAULT_PASSES):
    for p in passes:
        g = p(g)
    return g
