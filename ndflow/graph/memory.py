"""Buffer reuse and memory accounting for compiled graphs.

`reuse_buffers` (a graph-to-graph pass, after fusion) lets a node write its result into a
buffer that is dead by then, instead of allocating: a ufunc node into an input that dies at it
(`np.add(a, b, out=a)`: exact overlap is safe for ufuncs), a fused node into a buffer whose
last use was an earlier node (never one of its own inputs: a fused kernel may still read an
input after it has begun writing a result). Only where the kernel supports `out=`: ufunc
primitives and fused nodes. Only buffers that nothing else can see are given away: results of
ufunc or fused nodes (fresh arrays, never views) that are not graph outputs and whose every
consumer only reads them (no view of them can exist). The kernel checks the buffer once more
at run time (shape, dtype, contiguous, not a view) and allocates if it does not fit. Below
`MIN_BYTES` nothing is donated: small allocations are cheap, and the bookkeeping is not.

`memory_report(graph)` walks the graph in execution order with the static sizes and reports the
peak of live intermediate bytes, what was allocated, and what reuse saved.
"""
import math

import numpy as np

from .ir import Node
from ..core.primitive import Primitive, REGISTRY

MIN_BYTES = 1 << 16



def _is_fused(n):
    return n.prim.fused


def _is_ufunc(n):
    impl = n.prim.impl
    return isinstance(impl, np.ufunc) and impl.signature is None and impl.nout == 1 \
        and not n.params and not n.prim.multiple_results


def _nbytes(v):
    if any(d is None for d in v.shape):
        return None
    try:
        return math.prod(v.shape) * np.dtype(v.dtype).itemsize
    except TypeError:
        return None


def _reads_only(n):
    """`n` reads its inputs and keeps no reference to them: its results are fresh arrays (no
    view, the `returns_view` trait) and it stores nothing (no Variable write)."""
    p = n.prim
    return _is_fused(n) or _is_ufunc(n) or getattr(p.impl, "ndflow_reads_only", False) or \
        (not p.returns_view and p.variable_access is None)


class _InPlace:
    """impl of a ufunc node that may write into a donated buffer (its last argument)."""
    ndflow_reads_only = True

    def __init__(self, ufunc, shape, dtype):
        self.ufunc, self.shape, self.dtype = ufunc, shape, dtype

    def __call__(self, *args):
        d = args[-1]
        if type(d) is np.ndarray and d.shape == self.shape and d.dtype == self.dtype \
                and d.base is None and d.flags.writeable:
            return self.ufunc(*args[:-1], out=d)
        return self.ufunc(*args[:-1])


class _Into:
    """impl of a fused node given dead buffers for some of its results."""
    ndflow_reads_only = True

    def __init__(self, kernel, n_in, slots):
        self.kernel, self.n_in, self.slots = kernel, n_in, slots
        self.n_out = len(kernel.prog.outputs)

    def __call__(self, *args):
        donors = [None] * self.n_out
        for k, d in zip(self.slots, args[self.n_in:]):
            donors[k] = d
        return self.kernel.into(args[:self.n_in], donors)


def _prim_like(p, impl, donated_to):
    # the donated buffers are extra trailing inputs: the shape rule (which the graph verifier
    # runs) sees only the real operands
    n_extra = len(donated_to)
    abstract = None if p.abstract is None else \
        (lambda *a, **k: p.abstract(*a[:len(a) - n_extra], **k))
    q = Primitive(p.name, impl, abstract, multiple_results=p.multiple_results)
    q.fused = p.fused
    try:
        REGISTRY.remove(q)    # per graph, not a primitive anyone binds
    except ValueError:
        pass
    impl.donated = donated_to     # result index -> the Var whose buffer it reuses
    return q


def reuse_buffers(g):
    """The pass: give dead buffers to ufunc and fused nodes (see the module docstring)."""
    last, consumers, producer = {}, {}, {}
    for i, n in enumerate(g.nodes):
        for v in n.inputs:
            last[v.id] = i
            consumers.setdefault(v.id, []).append(n)
        for o in n.outputs:
            producer[o.id] = n
    outs = {v.id for v in g.outputs}

    def donatable(v):
        p = producer.get(v.id)
        return (p is not None and v.id not in outs
                and (_is_fused(p) or _is_ufunc(p)
                     or (p.prim.blas and not p.prim.returns_view
                         and not p.prim.multiple_results))
                and all(_reads_only(c) for c in consumers.get(v.id, ())))

    dead = []           # (var) dead buffers not yet given away, most recent last
    used = set()
    nodes = []
    for i, n in enumerate(g.nodes):
        new = n
        if _is_ufunc(n):
            o = n.outputs[0]
            b = _nbytes(o)
            if b is not None and b >= MIN_BYTES:
                for v in n.inputs:
                    if last.get(v.id) == i and v.id not in used and donatable(v) and \
                            tuple(v.shape) == tuple(o.shape) and v.dtype == o.dtype:
                        used.add(v.id)
                        prim = _prim_like(n.prim, _InPlace(n.prim.impl, tuple(o.shape),
                                                           np.dtype(o.dtype)), {0: v})
                        new = Node(prim, tuple(n.inputs) + (v,), {}, n.outputs, n.loc)
                        break
        elif _is_fused(n):
            slots, extra = [], []
            fk = n.prim.impl
            for k, o in enumerate(n.outputs):
                b = _nbytes(o)
                if b is None or b < MIN_BYTES:
                    continue
                got = False
                for a, v in enumerate(n.inputs):
                    if last.get(v.id) == i and v.id not in used and donatable(v) and \
                            v not in n.inputs[a + 1:] and fk.can_write_over(k, a):
                        used.add(v.id)
                        slots.append(k)
                        extra.append(v)
                        got = True
                        break
                if got:
                    continue
                for j in range(len(dead) - 1, -1, -1):
                    v = dead[j]
                    if tuple(v.shape) == tuple(o.shape) and v.dtype == o.dtype:
                        del dead[j]
                        used.add(v.id)
                        slots.append(k)
                        extra.append(v)
                        break
            if slots:
                prim = _prim_like(n.prim, _Into(n.prim.impl, len(n.inputs), tuple(slots)),
                                  dict(zip(slots, extra)))
                new = Node(prim, tuple(n.inputs) + tuple(extra), {}, n.outputs, n.loc)
        nodes.append(new)
        for v in n.inputs:
            if last.get(v.id) == i and v.id not in used and donatable(v):
                b = _nbytes(v)
                if b is not None and b >= MIN_BYTES:
                    dead.append(v)
        for o in n.outputs:
            if o.id not in last and o.id not in outs:
                pass   # never used: freed at once by the generated code
    return g.copy_with(nodes=nodes)


class MemoryReport:
    """Static memory accounting of one graph (sizes from the traced shapes)."""

    def __init__(self, peak_bytes, allocated_bytes, reused_bytes, input_bytes, unknown, lines):
        self.peak_bytes = peak_bytes            # most intermediate/result bytes live at once
        self.allocated_bytes = allocated_bytes  # fresh allocations per call
        self.reused_bytes = reused_bytes        # results written into dead buffers instead
        self.input_bytes = input_bytes          # arguments and constants (not counted above)
        self.unknown = unknown                  # values with unknown (None) sizes, not counted
        self.lines = lines

    def as_dict(self):
        return {"peak_bytes": self.peak_bytes, "allocated_bytes": self.allocated_bytes,
                "reused_bytes": self.reused_bytes, "input_bytes": self.input_bytes,
                "unknown_sizes": self.unknown}

    def __repr__(self):
        return "MemoryReport(%s)" % ", ".join("%s=%s" % kv for kv in self.as_dict().items())

    def __str__(self):
        head = ("peak %s live, %s allocated per call, %s written into reused buffers, "
                "inputs %s" % (_fmt(self.peak_bytes), _fmt(self.allocated_bytes),
                               _fmt(self.reused_bytes), _fmt(self.input_bytes)))
        if self.unknown:
            head += " (%d values of unknown size not counted)" % self.unknown
        return "\n".join([head] + self.lines)


def _fmt(b):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return ("%d %s" % (b, unit)) if unit == "B" else ("%.1f %s" % (b, unit))
        b /= 1024


def memory_report(g):
    """Walk `g` as the generated code runs it (results freed after their last use) and
    account the bytes of intermediate values and results."""
    last = {}
    for i, n in enumerate(g.nodes):
        for v in n.inputs:
            last[v.id] = i
    outs = {v.id for v in g.outputs}
    END = len(g.nodes)
    for v in g.outputs:
        last[v.id] = END
    alias = {}          # view var -> var owning the buffer
    owner_end = {}      # owning var -> last index any alias is used
    live = {}
    cur = peak = alloc = reused = unknown = 0
    lines = []
    input_bytes = sum(_nbytes(v) or 0 for v in list(g.inputs) + list(g.consts))
    for i, n in enumerate(g.nodes):
        donated = getattr(n.prim.impl, "donated", {})
        for k, o in enumerate(n.outputs):
            b = _nbytes(o)
            if b is None:
                unknown += 1
                continue
            if n.prim.returns_view and n.inputs:
                src = n.inputs[0]
                own = alias.get(src.id, src.id)
                alias[o.id] = own
                owner_end[own] = max(owner_end.get(own, 0), last.get(o.id, i))
                continue
            if k in donated:
                d = donated[k]
                own = alias.get(d.id, d.id)
                reused += b
                alias[o.id] = own
                owner_end[own] = max(owner_end.get(own, 0), last.get(o.id, i))
                continue
            alloc += b
            live[o.id] = b
            cur += b
            owner_end[o.id] = max(owner_end.get(o.id, 0), last.get(o.id, i))
        peak = max(peak, cur)
        for vid in [v for v in live if owner_end.get(v, -1) <= i and v not in outs]:
            cur -= live.pop(vid)
        if n.outputs and (_is_fused(n) or donated):
            lines.append("  %s -> %s%s" % (
                n.prim.name if len(n.prim.name) < 60 else n.prim.name[:57] + "...",
                ", ".join("%r" % o for o in n.outputs),
                (" (into %s)" % ", ".join("%r" % d for d in donated.values())) if donated
                else ""))
    return MemoryReport(peak, alloc, reused, input_bytes, unknown, lines)


# ------------------------------------------------------------------ who may share a buffer
def alias_roots(g):
    """var id -> the ids of the values whose buffers it may share: graph inputs, constants and
    fresh node results. A node result is fresh unless its primitive `returns_view` (then it
    may share with every operand) or it was written into a donated buffer (then it shares
    with that buffer). Conservative: "may", never "does"."""
    roots = {}
    for v in g.inputs:
        roots[v.id] = frozenset((v.id,))
    for c in g.consts:
        roots[c.id] = frozenset((c.id,))
    for n in g.nodes:
        donated = getattr(n.prim.impl, "donated", None) or {}
        if n.prim.returns_view:
            shared = frozenset().union(*[roots.get(v.id, frozenset((v.id,))) for v in n.inputs])
        else:
            shared = frozenset()
        for k, o in enumerate(n.outputs):
            r = shared | {o.id}
            d = donated.get(k)
            if d is not None:
                r |= roots.get(d.id, frozenset((d.id,)))
            roots[o.id] = r
    return roots


def output_aliasing(g):
    """What the results of `g` may share, as `own_outputs` compares it: per output, the ids of
    the graph inputs it may share a buffer with, and the pairs (i, j) of outputs that may
    share one."""
    roots = alias_roots(g)
    ins = {v.id for v in g.inputs}
    outs = [roots.get(v.id, frozenset((v.id,))) for v in g.outputs]
    pairs = {(i, j) for i in range(len(outs)) for j in range(i) if outs[i] & outs[j]}
    return [r & ins for r in outs], pairs


def own_outputs(g, allowed):
    """`g` with a copy added before each result that may share memory where the program as
    written (its `allowed = output_aliasing(traced graph)`) would not: a result never shares a
    buffer with a constant (else the next call, or the caller writing into it, would see it),
    with another result, or with an argument, unless the traced program made it a view of it
    (NumPy's rule: only views share). Passes that fold constants, merge equal values or drop
    `x * 1` may otherwise hand out one buffer twice."""
    from ..primitives.elementwise import copy_p
    from ..primitives.misc import own_result_p
    allowed_in, allowed_pairs = allowed
    roots = alias_roots(g)
    var = {v.id: v for v in list(g.inputs) + list(g.consts)}
    outs = list(g.outputs)
    nodes = None
    final = []
    for i, v in enumerate(outs):
        r = roots.get(v.id, frozenset((v.id,)))
        ok_in = allowed_in[i] if i < len(allowed_in) else frozenset()
        avoid = [var[x] for x in sorted(r)
                 if x in var and (var[x].kind == "c" or x not in ok_in)]
        avoid += [outs[j] for j in range(i) if final[j] & r and (i, j) not in allowed_pairs]
        if avoid:
            if nodes is None:
                nodes = list(g.nodes)
            o = type(v)(v.shape, v.dtype)
            if v.kind != "v" or any(a is v for a in avoid):
                # certainly the same buffer: copy
                nodes.append(Node(copy_p, (v,), {}, (o,), "result of %s" % g.name))
                r = frozenset((o.id,))
            else:
                # may share (a view, a loop that ran no iteration): decided at run time; the
                # result may still share what it was allowed to (later results check it)
                nodes.append(Node(own_result_p, (v,) + tuple(avoid), {}, (o,),
                                  "result of %s" % g.name))
                r = (r - {a.id for a in avoid}) | {o.id}
            outs[i] = o
        final.append(r)
    if nodes is None:
        return g
    return g.copy_with(nodes=nodes, outputs=outs)

