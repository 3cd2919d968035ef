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

# consumers that read their inputs and keep no reference (results are fresh arrays)
_READERS = {"matmul", "einsum", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
            "reduce_any", "reduce_all", "argmax", "argmin", "sum_to", "select",
            "convert_element_type", "copy", "zeros_like", "ones_like", "full_like"}


def _is_fused(n):
    return n.prim.name.startswith("fused{")


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
    return _is_fused(n) or _is_ufunc(n) or n.prim.name in _READERS or \
        getattr(n.prim.impl, "ndflow_reads_only", False)


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
                and (_is_fused(p) or _is_ufunc(p) or p.prim.name == "matmul")
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


# primitives whose result may be a view of their first input (it keeps that buffer alive)
_VIEWS = {"reshape", "transpose", "expand_dims", "squeeze", "broadcast_to", "moveaxis",
          "swapaxes", "slice", "real", "imag", "diagonal", "getitem", "stop_gradient",
          "reshape_dynamic", "broadcast_dynamic", "slice_dynamic"}


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
            if n.prim.name in _VIEWS and n.inputs:
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
