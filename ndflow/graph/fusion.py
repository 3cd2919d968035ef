"""Elementwise fusion: a graph-to-graph pass.

Connected elementwise nodes of the same shape (chains and trees), optionally ending in one
reduction (sum/max/min) of one of their values, become ONE node whose primitive is made here
and whose `impl` is a `kernels.FusedKernel` (tier 0 NumPy `out=` code at once, a numba loop
later when numba is installed). Codegen needs nothing special: it calls `prim.impl` as for any
node.

What is fused, and why not otherwise (`why_not_fusible` gives the reason as text, and
`explain(graph)` lists it for every node; `FusionError`, a ValueError, carries it when a
region is built by hand from nodes that cannot be fused):

* the primitive must be elementwise (the `Primitive.elementwise` trait, declared beside its
  rules): any elementwise primitive fuses, and tier 0 calls its kernel inside the region; its
  scalar expression (`Primitive.scalar`), where it has one, is what the compiled tiers need
  besides. An elementwise primitive that returns a view of its operand (`real`, `imag`,
  `stop_gradient`: the `returns_view` trait) is not fused: a fused region's results are
  fresh buffers, its temporaries reused within the region;
* effects (random draws, variable reads and writes) are never fused, and fusion does not reach
  across them, so their order against everything else is kept;
* dtypes must be NumPy's own numeric or bool types (bfloat16 and object arrays are not fused);
* all elementwise members have the same static shape (None = unknown size compares equal
  position by position); a smaller operand (a bias, a scalar) is an input, read broadcast;
* work is never duplicated: a value that is also needed outside the region is written out
  once and the fused node returns it as one of its results;
* regions stay acyclic: a node joins a region only if none of its other inputs is computed
  from that region through a node outside it.

`settings.fusion = False` (`nf.config.settings`) turns the pass off.
"""
import heapq
import math

import numpy as np

from .ir import Node
from ..core.primitive import Primitive, Aval, REGISTRY
from ..core.settings import settings
from ..primitives.reduction import reduce_sum_p, reduce_max_p, reduce_min_p
from .kernels import Program, Op, kernel_for, policy, numba_rows


class FusionError(ValueError):
    """Raised when nodes that cannot be fused are asked to form one region."""


_REDUCTIONS = (reduce_sum_p, reduce_max_p, reduce_min_p)



class _RegionLoc(str):
    """A fused region's location (its last node's line) that keeps each member's (primitive
    name, line): a NumPy warning from the region's kernel names the member's line
    (core/user_warnings.py)."""

def _reductions():
    return _REDUCTIONS


def _dtype_ok(dt):
    try:
        d = np.dtype(dt)
    except TypeError:
        return False
    return d.kind in "biufc" and d.type.__module__ == "numpy"


def why_not_fusible(node):
    """None when `node` can be part of a fused region, else the reason in words."""
    p = node.prim
    name = p.name
    if p.effect:
        return f"cannot fuse '{name}': it has an effect (random draw or variable access)"
    if p.multiple_results:
        return f"cannot fuse '{name}': it has several results"
    if not p.elementwise and p not in _reductions():
        return (f"cannot fuse '{name}': it is not elementwise (the `elementwise` trait, "
                f"declared with its rules: primitives._util.elementwise)")
    if p.returns_view:
        return (f"cannot fuse '{name}': it returns a view of its operand (NumPy's memory "
                f"sharing), and a fused region's results and temporaries are its own buffers")
    for v in tuple(node.inputs) + tuple(node.outputs):
        if not _dtype_ok(v.dtype):
            return f"cannot fuse '{name}': dtype {getattr(v.dtype, 'name', v.dtype)} is not fused"
    return None


def _is_reduction(node):
    return node.prim in _reductions()


class _UF:
    def __init__(self):
        self.parent = {}

    def find(self, r):
        p = self.parent
        while p[r] != r:
            p[r] = p[p[r]]
            r = p[r]
        return r


def _regions(g):
    """Group node indices into regions; returns {root: [node indices in order]}."""
    uf = _UF()
    region = {}          # node index -> region id (before find)
    producer = {}        # var id -> node index
    anc = {}             # var id -> set of region ids it is computed from
    ext_anc = {}         # region root -> region ids its external inputs are computed from
    shape = {}           # region root -> static shape
    epoch_of = {}        # region root -> effect epoch
    closed_var = set()   # var ids that are reduction results (not joined through)
    has_red = set()      # roots that already end in a reduction
    epoch = 0
    for i, n in enumerate(g.nodes):
        for o in n.outputs:
            producer[o.id] = i
        anc_in = set()
        for v in n.inputs:
            anc_in |= anc.get(v.id, set())
        if n.prim.effect:
            epoch += 1
        if why_not_fusible(n) is not None:
            for o in n.outputs:
                anc[o.id] = anc_in
            continue
        red = _is_reduction(n)
        out_shape = tuple(n.outputs[0].shape)
        cands = []
        for v in n.inputs:
            j = producer.get(v.id)
            if j is None or j not in region or v.id in closed_var:
                continue
            r = uf.find(region[j])
            if r in cands or epoch_of[r] != epoch:
                continue
            if red:
                if r in has_red or tuple(v.shape) != shape[r]:
                    continue
            elif shape[r] != out_shape:
                continue
            cands.append(r)
            if red:
                break
        chosen = []
        for r in cands:
            trial = chosen + [r]
            members_vars = set()
            for v in n.inputs:
                j = producer.get(v.id)
                if j is not None and j in region and uf.find(region[j]) in trial:
                    members_vars.add(v.id)
            ok = True
            for v in n.inputs:
                if v.id in members_vars:
                    continue
                if any(uf.find(a) in trial for a in anc.get(v.id, ())):
                    ok = False
                    break
            if ok:
                for a in trial:
                    for b in trial:
                        if a != b and any(uf.find(x) == b for x in ext_anc[a]):
                            ok = False
            if ok:
                chosen = trial
        if chosen:
            root = chosen[0]
            for r in chosen[1:]:
                uf.parent[r] = root
                ext_anc[root] |= ext_anc.pop(r)
                if r in has_red:
                    has_red.add(root)
        else:
            root = i
            uf.parent[root] = root
            ext_anc[root] = set()
            shape[root] = out_shape
            epoch_of[root] = epoch
        region[i] = root
        for v in n.inputs:
            j = producer.get(v.id)
            if j is None or j not in region or uf.find(region[j]) != root:
                ext_anc[root] |= anc.get(v.id, set())
        if red:
            has_red.add(root)
            closed_var.add(n.outputs[0].id)
        for o in n.outputs:
            anc[o.id] = anc_in | {root}
    groups = {}
    for i in sorted(region):
        groups.setdefault(uf.find(region[i]), []).append(i)
    return groups


def program_from_nodes(nodes, used_outside):
    """(Program, input Vars, output Vars) for `nodes` (topologically ordered); results are the
    values in `used_outside` (var ids). Raises FusionError naming the op that cannot be fused."""
    for n in nodes:
        why = None if _row_shape_op(n) else why_not_fusible(n)
        if why is not None:
            raise FusionError(why)
    made = {n.outputs[0].id for n in nodes}
    num = {}
    ins = []
    for n in nodes:
        for v in n.inputs:
            if v.id not in made and v.id not in num:
                num[v.id] = len(ins)
                ins.append(v)
    for k, n in enumerate(nodes):
        num[n.outputs[0].id] = len(ins) + k
    ops = [(n, [num[v.id] for v in n.inputs]) for n in nodes]
    prog_ops = [Op(n.prim, args, n.params, n.outputs[0].shape, n.outputs[0].dtype,
                   reduce=_is_reduction(n)) for n, args in ops]
    outs = [n.outputs[0] for n in nodes if n.outputs[0].id in used_outside]
    ew = [tuple(n.outputs[0].shape) for n in nodes if not _is_reduction(n)]
    shape = ew[0] if ew else ()
    if any(s != shape for s in ew):
        # a row region (`_row_regions`): the matrix's shape, the largest
        shape = max(ew, key=lambda s: (len(s), math.prod(d or 0 for d in s)))
    prog = Program([(v.shape, v.dtype) for v in ins], prog_ops, [num[o.id] for o in outs], shape)
    return prog, ins, outs


def _fused_primitive(prog, kernel, outs):
    # the name carries the body, so a printed graph still shows every op the region computes
    p = Primitive("fused{%s}" % prog.body(), kernel,
                  lambda *a: (tuple(Aval(o.shape, o.dtype) for o in outs) if len(outs) > 1
                              else Aval(outs[0].shape, outs[0].dtype)),
                  multiple_results=len(outs) > 1)
    # made per graph, not a primitive users bind: keep it out of the registry of primitives
    try:
        REGISTRY.remove(p)
    except ValueError:
        pass
    p.scalar = None
    p.fused = True
    return p


def elementwise_fusion(g):
    """The pass: regions of two or more fusible nodes become one fused node each."""
    if not settings.fusion:
        return g
    uses_blas = any(n.prim.blas for n in g.nodes)
    groups = {r: m for r, m in _regions(g).items()
              if (len(m) >= 2 and any(not _is_reduction(g.nodes[i]) for i in m)
                  or len(m) == 1 and _alone(g.nodes[m[0]], uses_blas)) and _convex(g, m)}
    groups = _split_inexact_reductions(g, groups)
    if policy.row_regions():
        groups = _row_regions(g, groups)
    if not groups:
        return g
    out = _build(g, groups, uses_blas)
    if out is not None:
        return out
    # Regions that are each fine can still depend on each other through outside nodes in a
    # cycle; keep the regions that do not close one (greedily, in program order).
    kept = {}
    for r, m in groups.items():
        trial = dict(kept)
        trial[r] = m
        if _build(g, trial, uses_blas) is not None:
            kept = trial
    return _build(g, kept, uses_blas) if kept else g


def _split_inexact_reductions(g, groups):
    """Regions ending in a reduction that the backend's policy would rather run as their
    elementwise part and NumPy's own sum after it (`policy.split_sum_off`: the compiled tier
    would take the elementwise part but not the sum) leave the reduction out."""
    out = {}
    for r, m in groups.items():
        last = g.nodes[m[-1]]
        if len(m) >= 3 and _is_reduction(last) and \
                not any(_is_reduction(g.nodes[i]) for i in m[:-1]):
            rest = m[:-1]
            try:
                whole, _, _ = program_from_nodes([g.nodes[i] for i in m],
                                                 {g.nodes[i].outputs[0].id for i in m})
            except FusionError:
                whole = None
            # every value of `rest` counted as a result: over-approximate, only the program's
            # eligibility counts
            part, _, _ = program_from_nodes([g.nodes[i] for i in rest],
                                            {g.nodes[i].outputs[0].id for i in rest} |
                                            {last.inputs[0].id})
            if whole is not None and policy.split_sum_off(whole, part):
                m = rest
        out[r] = m
    return out


def _row_shape_op(node):
    return len(node.inputs) == 1 and numba_rows.is_row_shape_op(
        node.prim, node.params, tuple(node.inputs[0].shape), tuple(node.outputs[0].shape))


def _row_regions(g, groups):
    """Each reduction along the last axis of a matrix, grown with the regions and nodes around
    it that compute on the same rows (a softmax, its loss and its gradient, up to the bias
    gradient's sum) into one region while the whole stays one a row kernel runs
    (`numba_rows.why_not`), convex and within one effect epoch (`policy.row_regions`)."""
    member = {i: r for r, m in groups.items() for i in m}
    producer, users, epoch, e = {}, {}, [], 0
    for i, n in enumerate(g.nodes):
        e += bool(n.prim.effect)
        epoch.append(e)
        for o in n.outputs:
            producer[o.id] = i
        for v in n.inputs:
            users.setdefault(v.id, []).append(i)
    out, taken = dict(groups), set()

    def unit(i):
        got = set(groups[member[i]]) if i in member else {i}
        if _row_shape_op(g.nodes[i]):       # with its users: its view stays inside
            for u in users.get(g.nodes[i].outputs[0].id, ()):
                got |= set(groups[member[u]]) if u in member else {u}
        return got

    written = {}

    def writes(i):
        # (asked once per node: writing a whole region's kernel at every trial is slow)
        n = g.nodes[i]
        if i not in written:
            written[i] = _row_shape_op(n) or why_not_fusible(n) is None and (
                _is_reduction(n) or numba_rows.renders(
                    Op(n.prim, (), n.params, n.outputs[0].shape, n.outputs[0].dtype),
                    [v.dtype for v in n.inputs]))
        return written[i]

    def ok(idx):
        nodes = [g.nodes[i] for i in sorted(idx)]
        if len({epoch[i] for i in idx}) != 1 or not all(writes(i) for i in idx) or \
                not _convex(g, idx):
            return False
        used = _used_outside(g, idx, users)
        if any(_row_shape_op(n) and n.outputs[0].id in used for n in nodes):
            return False            # (tier 0's expand_dims is a view: kept inside)
        prog, _, _ = program_from_nodes(nodes, used)
        return numba_rows.why_not(prog, True, render=False) is None

    for i, n in enumerate(g.nodes):
        if i in taken or not _is_reduction(n) or n.params.get("axes") != (1,) or \
                len(n.inputs[0].shape) != 2 or None in n.inputs[0].shape:
            continue
        region = unit(i)
        grown = True
        while grown:
            grown = False
            near = {producer[v.id] for k in region for v in g.nodes[k].inputs
                    if v.id in producer} | {u for k in region for o in g.nodes[k].outputs
                                            for u in users.get(o.id, ())}
            for c in sorted(near - region - taken):
                trial = region | unit(c)
                if not trial & taken and ok(trial):
                    region, grown = trial, True
        if region & taken or not ok(region):
            continue
        for r in {member[k] for k in region if k in member}:
            out.pop(r, None)
        out[min(region)] = sorted(region)
        taken |= region
    return out


def _used_outside(g, idx, users):
    outs = {v.id for v in g.outputs}
    return {o.id for i in idx for o in g.nodes[i].outputs
            if o.id in outs or any(u not in idx for u in users.get(o.id, ()))}


def _alone(node, uses_blas):
    """Whether one elementwise node is worth a kernel of its own: an outer-product-like
    broadcast large enough for a compiled loop (`policy.outer_region`), or an operation whose
    loop threads can share (`policy.shared_region`)."""
    if _is_reduction(node):
        return False
    if policy.outer_region(tuple(node.outputs[0].shape),
                           [tuple(v.shape) for v in node.inputs]):
        return True
    prog, _, _ = program_from_nodes([node], {v.id for v in node.outputs})
    return policy.shared_region(prog, uses_blas)


def _build(g, groups, uses_blas):
    """`g` with each region of `groups` replaced by one fused node, or None if that would make
    the graph cyclic."""
    groups = dict(groups)
    member = {}
    for r, m in groups.items():
        for i in m:
            member[i] = r
    consumers_outside = {}
    for i, n in enumerate(g.nodes):
        for v in n.inputs:
            consumers_outside.setdefault(v.id, set()).add(member.get(i, ("n", i)))
    graph_out = {v.id for v in g.outputs}
    writers = {}
    for i, n in enumerate(g.nodes):
        if n.prim.variable_access == "write":
            for v in n.inputs:
                writers.setdefault(v.id, []).append(i)
    fused = {}
    for r, m in list(groups.items()):
        used = set()
        for i in m:
            o = g.nodes[i].outputs[0]
            if o.id in graph_out or any(c != r for c in consumers_outside.get(o.id, ())):
                used.add(o.id)
        if not used:
            # nothing of the region is used (dead code, left to dead_code_elimination): a fused
            # node needs a result
            del groups[r]
            for i in m:
                del member[i]
            continue
        nodes = [g.nodes[i] for i in m]
        prog, ins, outs = program_from_nodes(nodes, used)
        kernel = kernel_for(prog, uses_blas)
        kernel.const_pos = frozenset(i for i, v in enumerate(ins) if v.kind == "c")
        # results a Variable is assigned (kept past the next call: not worth pooling)
        kernel.kept_outputs = frozenset(
            k for k, o in enumerate(outs)
            if any(g.nodes[c].prim.variable_access == "write"
                   for c in writers.get(o.id, ())))
        prim = _fused_primitive(prog, kernel, outs)
        loc = _RegionLoc(nodes[-1].loc or "")
        loc.members = tuple((n.prim.name, n.loc) for n in nodes)
        fused[r] = Node(prim, ins, {}, outs, loc)
    # reorder: stable topological order keyed by the original position of each node (a fused
    # node at its first member), so unrelated nodes (effects above all) keep their order
    items = []
    for i, n in enumerate(g.nodes):
        if i in member:
            if i == groups[member[i]][0]:
                items.append((i, fused[member[i]]))
        else:
            items.append((i, n))
    items.sort(key=lambda t: t[0])
    new_nodes = _toposort(items, g)
    if new_nodes is None:
        return None
    return g.copy_with(nodes=new_nodes)


def _convex(g, members):
    """A region may become one node only if no path leaves it and comes back (through a node
    outside it); fusing such a region would make the graph cyclic. Such regions stay unfused."""
    members = set(members)
    lo, hi = min(members), max(members)
    produced_by = {}
    for i in range(lo, hi + 1):
        for o in g.nodes[i].outputs:
            produced_by[o.id] = i
    tainted = set()          # outside nodes that depend on a member
    for i in range(lo + 1, hi + 1):
        deps = {produced_by[v.id] for v in g.nodes[i].inputs if v.id in produced_by}
        if i in members:
            if deps & tainted:
                return False
        elif deps & (members | tainted):
            tainted.add(i)
    return True


def _toposort(items, g):
    defined = {v.id for v in g.inputs} | {v.id for v in g.consts}
    prod = {}
    for k, (_, n) in enumerate(items):
        for o in n.outputs:
            prod[o.id] = k
    indeg = [0] * len(items)
    users = [[] for _ in items]
    for k, (_, n) in enumerate(items):
        deps = {prod[v.id] for v in n.inputs if v.id not in defined and v.id in prod}
        deps.discard(k)
        indeg[k] = len(deps)
        for d in deps:
            users[d].append(k)
    heap = [(items[k][0], k) for k in range(len(items)) if indeg[k] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, k = heapq.heappop(heap)
        out.append(items[k][1])
        for u in users[k]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, (items[u][0], u))
    if len(out) != len(items):
        return None      # the fused regions depend on each other in a cycle
    return out


def explain(g):
    """One line per node of `g` that is not fused, with the reason (debugging aid)."""
    lines = []
    for n in g.nodes:
        if n.prim.fused:
            lines.append("%s: fused" % n.prim.name)
            continue
        why = why_not_fusible(n)
        lines.append("%s: %s" % (n.prim.name, why or "fusible, but no fusible neighbour of "
                                 "the same shape (or a region of one node)"))
    return "\n".join(lines)


def fused_kernels(g):
    """The FusedKernel of every fused node in `g`, in order."""
    # a fused node given reused buffers (memory.reuse_buffers) wraps its kernel
    return [getattr(n.prim.impl, "kernel", n.prim.impl) for n in g.nodes if n.prim.fused]
