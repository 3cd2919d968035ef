"""Graph -> straight-line Python calling the kernels directly (no `bind`, no dispatch).

Each node becomes one line `vK = fN(args)` where fN is the primitive's kernel with its params
bound. Errors at run time are mapped back to the node and the user's line that created it.
"""
import functools
import sys

import numpy as np


class GraphRuntimeError(Exception):
    pass


def _kernel(node):
    impl = node.prim.impl
    if node.params:
        return functools.partial(impl, **node.params)
    return impl


def generate(graph):
    ns = {}
    names = {}
    for i, v in enumerate(graph.inputs):
        names[v.id] = "a%d" % i
    for i, c in enumerate(graph.consts):
        names[c.id] = "c%d" % i
        buf = c.const._v
        ns["c%d" % i] = buf
    lines = ["def run(%s):" % "".join("a%d, " % i for i in range(len(graph.inputs)))]
    line_nodes = {}
    # free each intermediate after its last use, as eager code does: holding them all until
    # the return makes every large temporary a fresh allocation (page faults, cold caches)
    last_use = {}
    for k, n in enumerate(graph.nodes):
        for v in n.inputs:
            last_use[v.id] = k
    returned = {o.id for o in graph.outputs}
    for k, n in enumerate(graph.nodes):
        f = "f%d" % k
        ns[f] = _kernel(n)
        outs = []
        for o in n.outputs:
            names[o.id] = "v%d" % o.id
            outs.append(names[o.id])
        args = ", ".join(names[v.id] for v in n.inputs)
        target = ", ".join(outs) + ("," if n.prim.multiple_results and len(outs) == 1 else "")
        lines.append("    %s = %s(%s)" % (target, f, args))
        line_nodes[len(lines)] = n
        dead = sorted({names[v.id] for v in n.inputs if v.kind == "v" and last_use[v.id] == k
                       and v.id not in returned})
        dead += [names[o.id] for o in n.outputs if o.id not in last_use and o.id not in returned]
        if dead:
            lines.append("    del %s" % ", ".join(dead))
    lines.append("    return (%s)" % "".join(names[o.id] + ", " for o in graph.outputs))
    src = "\n".join(lines) + "\n"
    filename = "<ndflow graph %s>" % graph.name
    exec(compile(src, filename, "exec"), ns)
    run = ns["run"]
    return run, src, line_nodes, filename


def node_for_exception(tb, filename, line_nodes):
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            return line_nodes.get(tb.tb_lineno)
        tb = tb.tb_next
    return None
