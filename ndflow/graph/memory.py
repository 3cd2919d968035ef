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

Variables are updated in place: where a compiled step computes a Variable's next value in a
fused or ufunc node from its current value and assigns it (`v.assign_sub(lr * g)`, an
optimizer's slots and weights), the read becomes one that also offers the Variable's buffer
as a donor, and the node writes the new value into it (`variable_updates` says when that is
safe; the Variable decides at each call whether nothing else refers to the buffer, see
`Variable._exclusive_buffer`). The assignment then has nothing left to do.

`memory_report(graph)` walks the graph in execution order with the static sizes and reports the
peak of live intermediate bytes, what was allocated, and what reuse saved.
"""
import math

import numpy as np

from .ir import Node, Var
from ..core.primitive import Primitive, REGISTRY
from ..primitives.elementwise import copy_p
from ..primitives.misc import own_result_p
from .kernels import policy
from .kernels.pool import OutputPool

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


class _Pooled:
    """impl of a BLAS node (a ufunc such as `np.matmul`) whose large result goes into a buffer
    kept between calls (`OutputPool`: reused only when nothing else refers to it), as a fused
    region's results do. Allocating a fresh large result at every call costs the page faults of
    memory the allocator returned to the system after the previous call (a 1 MiB product: more
    than its own BLAS time). Operands that are not plain ndarrays (a device's) get the kernel's
    own call."""
    ndflow_reads_only = True

    def __init__(self, fn, shape, dtype):
        self.fn, self.shape, self.dtype = fn, shape, dtype
        self.pool = OutputPool()

    def __call__(self, *args):
        for a in args:
            if type(a) is not np.ndarray:
                return self.fn(*args)
        o = self.pool.take(self.shape, self.dtype)
        self.fn(*args, out=o)
        self.pool.give(o)
        return o


# From this size a BLAS result goes into a kept buffer (`kept_result_kernel`). Below it a
# fresh allocation is recycled, recently touched memory and wins (the MLP step at batch 512 and
# 1024, 128-256 KiB products: 2-6% faster than with kept buffers); from about here glibc gives
# freed memory back to the system between calls and every call faults it back in (batch
# 2048, 512 KiB products: the step 2.3x slower than with kept buffers).
KEEP_MIN_BYTES = 1 << 19


def kept_result_kernel(n, returned):
    """The kernel the generated code calls for node `n`: a `_Pooled` one where `n` is a BLAS
    ufunc whose result has a static shape, at least `KEEP_MIN_BYTES`, and is not returned
    (`returned`: the ids of the graph's outputs; a returned result stays the caller's, so a
    pool would only allocate again), else None (the node's own kernel). The node stays as it
    is in the graph."""
    impl = n.prim.impl
    if not (n.prim.blas and isinstance(impl, np.ufunc) and impl.nout == 1 and not n.params
            and not n.prim.multiple_results and n.outputs[0].id not in returned):
        return None
    o = n.outputs[0]
    b = _nbytes(o)
    if b is None or b < KEEP_MIN_BYTES:
        return None
    return _Pooled(impl, tuple(o.shape), np.dtype(o.dtype))


class _Into:
    """impl of a fused node given dead buffers for some of its results.

    `variables`: {result k: (shape, dtype, tier1_only, i)} for results that are a Variable's
    next value (operand i its current one), donated the Variable's own buffer (or None when
    something else refers to it). Such a result never comes from the kernel's pool of result
    buffers: the pool would keep a reference to the Variable's new buffer, and the next call
    would find it shared. (A Variable on a device: the kernel's own path, no donors.) With
    `tier1_only` the donor is one of the node's own operands that only the compiled tier may
    write over (it reads every operand of an element before writing it; tier 0 may use a
    result's buffer as scratch while an operand is still to be read): a call the kernel's
    planner does not give tier 1 writes that result into `fallback[k]`, the position among
    the node's inputs of a dead buffer the pass found for it, or into a fresh one."""
    ndflow_reads_only = True

    def __init__(self, kernel, n_in, slots, variables=None, fallback=None):
        self.kernel, self.n_in, self.slots = kernel, n_in, slots
        self.n_out = len(kernel.prog.outputs)
        self.variables = variables or {}
        self.fallback = fallback or {}
        self.tier1_only = tuple((k, shape, dtype, self.fallback.get(k))
                                for k, (shape, dtype, t1, _) in self.variables.items() if t1)
        # (what each call needs of the above, flat: a step's update runs this per Variable)
        self._one = self.n_out == 1 and tuple(slots) == (0,)
        self._var_new = tuple((k, shape, dtype) for k, (shape, dtype, _, _)
                              in self.variables.items())
        self._var_ins = tuple(i for _, _, _, i in self.variables.values())

    def __call__(self, *args):
        n = self.n_in
        xs = args[:n]
        if self._one:
            donors = [args[n]]
        else:
            donors = [None] * self.n_out
            for k, d in zip(self.slots, args[n:]):
                donors[k] = d
        if self._var_ins and all(type(xs[i]) is np.ndarray for i in self._var_ins):
            for k, shape, dtype in self._var_new:
                if donors[k] is None:
                    donors[k] = np.empty(shape, dtype)
            if self.tier1_only:
                return self.kernel.into(xs, donors, _Spares(self.tier1_only, args))
        return self.kernel.into(xs, donors)


class _Spares:
    """For `FusedKernel.into`: the results whose donors only tier 1 may write into, and what
    the call gives them instead when tier 1 does not take it (`replace`)."""
    __slots__ = ("which", "args")

    def __init__(self, which, args):
        self.which, self.args = which, args

    def replace(self, donors):
        for k, shape, dtype, at in self.which:
            donors[k] = self.args[at] if at is not None else np.empty(shape, dtype)
        return donors


def _prim_like(p, impl, donated_to, n_extra=None):
    # the donated buffers are extra trailing inputs: the shape rule (which the graph verifier
    # runs) sees only the real operands
    n_extra = len(donated_to) if n_extra is None else n_extra
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


# Variables smaller than this are updated by binding a new array, as in eager code: for a few
# elements the run-time check costs more than the allocation it saves
INPLACE_MIN_BYTES = 1 << 12


def _touches(n, var_id):
    return n.prim.variable_access is not None and id(n.params.get("var")) == var_id


def variable_updates(g):
    """{node index: {result k: index of the read_variable node}}: the nodes that may write
    result k, the next value of a Variable, into the buffer of its current value. All of:

    * the Variable is read once and written once in `g` (no control flow holds effects), by
      an assignment of result k of a fused or ufunc node `F` that reads the current value,
      and `F` may write result k over that operand (same shape and dtype, not read after);
    * no value that may share the current value's buffer (the read, views of it) is used
      after `F`, returned, stored into another Variable or passed to a host callback;
    * between the read and the assignment run no effects but reads and writes of other
      Variables (a callback there could look at the Variable), and between `F` and the
      assignment nothing else at all: an error there would leave the Variable updated
      without its assignment having run."""
    nodes = g.nodes
    if any(_has_sub_effects(n) for n in nodes):
        return {}
    reads, writes, producer = {}, {}, {}
    for i, n in enumerate(nodes):
        acc = n.prim.variable_access
        if acc == "read":
            reads.setdefault(id(n.params.get("var")), []).append(i)
        elif acc == "write":
            writes.setdefault(id(n.params.get("var")), []).append(i)
        for k, o in enumerate(n.outputs):
            producer[o.id] = (i, k)
    roots = None
    plan = {}
    for vid, rs in reads.items():
        ws = writes.get(vid, ())
        if len(rs) != 1 or len(ws) != 1:
            continue
        r, a = rs[0], ws[0]
        R, A = nodes[r], nodes[a]
        if len(R.outputs) != 1 or not hasattr(R.params.get("var"), "_exclusive_buffer"):
            continue
        V = R.outputs[0]
        got = producer.get(A.inputs[0].id) if A.inputs else None
        if got is None:
            continue
        f, k = got
        F = nodes[f]
        if not (r < f < a) or F.inputs.count(V) != 1:
            continue
        o = F.outputs[k]
        b = _nbytes(o)
        if b is None or b < INPLACE_MIN_BYTES or tuple(o.shape) != tuple(V.shape) or \
                np.dtype(o.dtype) != np.dtype(V.dtype):
            continue
        tier1 = False
        if _is_fused(F):
            fk = F.prim.impl
            if not hasattr(fk, "can_write_over"):
                continue
            if not fk.can_write_over(k, F.inputs.index(V)):
                if not policy.tier1_may_write_over(fk.prog):
                    continue
                tier1 = True
        elif not _is_ufunc(F):
            continue
        if roots is None:
            roots = alias_roots(g)
        ok = not any(V.id in roots.get(v.id, ()) for v in g.outputs)
        for j in range(r + 1, len(nodes)):
            if not ok:
                break
            n = nodes[j]
            if any(V.id in roots.get(v.id, ()) for v in n.inputs):
                ok = j <= f and not n.prim.effect
            if ok and j < a and n.prim.effect:
                ok = n.prim.variable_access is not None and not _touches(n, vid)
            if ok and f < j < a:
                ok = _cannot_raise(n)
        if ok:
            plan.setdefault(f, {})[k] = (r, tier1)
    return plan


def _static(n):
    return all(None not in tuple(v.shape) for v in tuple(n.inputs) + tuple(n.outputs))


def _cannot_raise(n):
    """Whether `n` runs without raising: another Variable's access, or elementwise / BLAS
    work on static shapes (floating-point errors raise only under an error state that stops
    in-place updates altogether)."""
    if n.prim.variable_access is not None:
        return True
    return (_is_fused(n) or _is_ufunc(n) or n.prim.blas) and _static(n) and \
        not any(True for _ in n.subgraphs())


def _has_sub_effects(n):
    return any(s.effect for s in n.subgraphs())


def _read_with_donor(var=None):
    return var._exclusive_buffer()


def _donor_read(n):
    """The read node `n` with a second result: the Variable's buffer when the step may write
    the Variable's next value into it, else None (decided at each call)."""
    p = n.prim
    q = Primitive(p.name, _read_with_donor,
                  None if p.abstract is None else (lambda **k: (p.abstract(**k),) * 2),
                  multiple_results=True, effect=True, variable_access="read")
    try:
        REGISTRY.remove(q)
    except ValueError:
        pass
    v = n.outputs[0]
    donor = Var(v.shape, v.dtype)
    return Node(q, (), n.params, (v, donor), n.loc), donor


def reuse_buffers(g):
    """The pass: give dead buffers to ufunc and fused nodes, and Variables' own buffers to the
    nodes computing their next values (see the module docstring)."""
    updates = variable_updates(g)
    donor_of = {}           # (node index, result k) -> donor Var
    replaced = {}           # read node index -> its donor form
    variables = {}          # fused node index -> {k: (shape, dtype, tier 1 only)}
    for f, ks in updates.items():
        for k, (r, tier1) in ks.items():
            if r not in replaced:
                replaced[r] = _donor_read(g.nodes[r])
            donor_of[(f, k)] = replaced[r][1]
            F = g.nodes[f]
            o = F.outputs[k]
            variables.setdefault(f, {})[k] = (tuple(o.shape), np.dtype(o.dtype), tier1,
                                              F.inputs.index(g.nodes[r].outputs[0]))
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
        if i in replaced:
            nodes.append(replaced[i][0])
            continue
        if _is_ufunc(n) and (i, 0) in donor_of:
            o = n.outputs[0]
            prim = _prim_like(n.prim, _InPlace(n.prim.impl, tuple(o.shape), np.dtype(o.dtype)),
                              {0: donor_of[(i, 0)]})
            new = Node(prim, tuple(n.inputs) + (donor_of[(i, 0)],), {}, n.outputs, n.loc)
        elif _is_ufunc(n):
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
            new = _fused_with_donors(n, i, donor_of, variables.get(i), dead, used,
                                     lambda v: last.get(v.id) == i and v.id not in used
                                     and donatable(v))
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


def _dead_buffer_for(n, k, fk, dying, dead, used):
    """A buffer result k of fused node `n` may be written into: an operand dying at `n` that
    the kernel may write over (`dying(v)`), else the most recent dead buffer of its shape and
    dtype (taken out of `dead`); None when there is none or the result is small."""
    o = n.outputs[k]
    b = _nbytes(o)
    if b is None or b < MIN_BYTES:
        return None
    for a, v in enumerate(n.inputs):
        if dying(v) and v not in n.inputs[a + 1:] and fk.can_write_over(k, a):
            used.add(v.id)
            return v
    for j in range(len(dead) - 1, -1, -1):
        v = dead[j]
        if tuple(v.shape) == tuple(o.shape) and v.dtype == o.dtype:
            del dead[j]
            used.add(v.id)
            return v
    return None


def _fused_with_donors(n, i, donor_of, variables, dead, used, dying):
    """Fused node `n` (index i) given donors for its results: a Variable's own buffer where
    `reuse_buffers` planned an in-place update, else a dead buffer (not to a region whose
    calls pay more through tier 1's generated caller, `policy.pooled_results_pay`, which
    takes its results from its pools). A Variable's buffer that
    only tier 1 may write over gets a dead buffer beside it, which a call tier 1 does not
    take uses instead: one graph whichever tier runs."""
    slots, extra, spare = [], [], []
    fk = n.prim.impl
    pooled = policy.pooled_results_pay(fk.prog)
    for k in range(len(n.outputs)):
        if (i, k) in donor_of:
            slots.append(k)
            extra.append(donor_of[(i, k)])
            if variables[k][2]:
                v = _dead_buffer_for(n, k, fk, dying, dead, used)
                if v is not None:
                    spare.append((k, v))
            continue
        v = None if pooled else _dead_buffer_for(n, k, fk, dying, dead, used)
        if v is not None:
            slots.append(k)
            extra.append(v)
    if not extra:
        return n
    donated = dict(zip(slots, extra))
    # results whose donor is one of the node's own operands (a dying one, or a Variable's
    # current value): the calls will write them over those operands, so tier 1 asks for
    # that kernel variant with its first kernel
    fk.operand_donors = tuple(sorted(
        [(k, n.inputs.index(v)) for k, v in donated.items() if v in n.inputs] +
        [(k, at) for k, (_, _, _, at) in (variables or {}).items()]))
    donated.update(spare)
    # the spare buffers after the donors: (result k, its position among the node's inputs)
    fallback = {k: len(n.inputs) + len(extra) + j for j, (k, _) in enumerate(spare)}
    extra += [v for _, v in spare]
    prim = _prim_like(n.prim, _Into(fk, len(n.inputs), tuple(slots), variables, fallback),
                      donated, len(extra))
    return Node(prim, tuple(n.inputs) + tuple(extra), {}, n.outputs, n.loc)


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
            if n.prim.variable_access == "read":
                continue                # a Variable's own buffer (and again, as a donor)
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
        elif n.prim.impl is _read_with_donor:       # the value and its donor: one buffer
            shared = frozenset(o.id for o in n.outputs)
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

