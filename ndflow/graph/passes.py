"""Graph-to-graph passes. Each is small, named and tested on graph structure (tests/test_passes.py).

`PASSES` is the pipeline `optimize` runs, in order; a later stage (elementwise fusion, buffer
reuse) appends its own pass to it. Every pass takes a Graph and returns a Graph (it may share
unchanged nodes with its input, never mutate them). With NDFLOW_VERIFY=1 (and in the tests) the
verifier checks the graph after every pass; with NDFLOW_DEBUG=opt each pass prints its diff.

Passes never remove, duplicate, reorder across or evaluate effects (`prim.effect`: random draws,
Variable reads and writes, host callbacks), nor control flow whose bodies hold them.
"""
import difflib

import numpy as np

from .ir import Graph, Node, Var, format_graph, verify
from . import debug as _dbg
from .kernels import policy
from ..core.settings import settings


def _has_effect(n):
    return n.prim.effect or any(s.effect for s in n.subgraphs())


def _renamer(rename):
    """Node -> the node with renamed inputs (the same node when nothing changed)."""
    def apply(n):
        if not rename:
            return n
        ins = tuple(rename.get(v.id, v) for v in n.inputs)
        return n if ins == n.inputs else n.with_inputs(ins)
    return apply


# ------------------------------------------------------------------ dead code
def dead_code_elimination(g: Graph) -> Graph:
    """Drop nodes whose outputs are never used (effects are always kept)."""
    live = {v.id for v in g.outputs}
    kept = []
    for n in reversed(g.nodes):
        if _has_effect(n) or any(o.id in live for o in n.outputs):
            kept.append(n)
            live.update(v.id for v in n.inputs)
    kept.reverse()
    out = g.copy_with(nodes=kept)
    out.consts = [c for c in g.consts if c.id in live]
    return out


# ------------------------------------------------------------------ common subexpressions
_SMALL_CONST = 16       # constants up to this many elements are merged by value


def _key(n, rename):
    try:
        params = tuple(sorted((k, v) for k, v in n.params.items()))
        hash(params)
    except TypeError:
        return None
    return (n.prim, tuple(rename.get(v.id, v).id for v in n.inputs), params)


def _host(buf):
    """A constant's buffer as a NumPy array, for passes that look at values while compiling:
    a device constant (a graph traced for a GPU) is read back here, once, never at run time."""
    if isinstance(buf, (np.ndarray, np.generic)):
        return np.asarray(buf)
    b = backend_of(buf)
    return np.asarray(buf) if b is None else b.to_host(buf)


def _const_key(c):
    if c.const.size > _SMALL_CONST:
        return None
    buf = _host(c.const._v)
    return (c.dtype, c.shape, buf.tobytes())


def common_subexpression_elimination(g: Graph) -> Graph:
    """Compute identical pure nodes (same primitive, inputs and params) once; small constants
    with the same dtype, shape and value are one constant."""
    rename = {}
    consts, by_value = [], {}
    for c in g.consts:
        k = _const_key(c)
        if k is not None and k in by_value:
            rename[c.id] = by_value[k]
            continue
        if k is not None:
            by_value[k] = c
        consts.append(c)
    seen = {}
    nodes = []
    for n in g.nodes:
        ins = tuple(rename.get(v.id, v) for v in n.inputs)
        if ins != n.inputs:
            n = n.with_inputs(ins)
        k = None if _has_effect(n) else _key(n, rename)
        if k is not None and k in seen:
            prev = seen[k]
            for a, b in zip(n.outputs, prev.outputs):
                rename[a.id] = b
            continue
        if k is not None:
            seen[k] = n
        nodes.append(n)
    out = g.copy_with(nodes=nodes, outputs=[rename.get(v.id, v) for v in g.outputs])
    out.consts = consts
    return out


# ------------------------------------------------------------------ constant folding
FOLD_LIMIT = 1 << 16    # elements: larger results are folded only when no larger than an input


def constant_folding(g: Graph) -> Graph:
    """Evaluate, once at compile time, pure nodes whose inputs are all constants; their outputs
    become constants. Never random draws or other effects; not a node whose result is a graph
    output (each call must return a fresh array); not a result much larger than its inputs (a
    broadcast would turn a scalar into a big constant). A kernel that fails is left in place, so
    the error is raised when the graph runs, naming the user's line."""
    returned = {v.id for v in g.outputs}
    rename = {}
    ren = _renamer(rename)
    consts = list(g.consts)
    nodes = []
    for n in g.nodes:
        n = ren(n)
        if (not _has_effect(n) and n.prim.impl is not None and not n.prim.run_time_check
                and all(v.kind == "c" for v in n.inputs)
                and not any(o.id in returned for o in n.outputs)
                and all(None not in o.shape for o in n.outputs)):
            folded = _fold(n)
            if folded is not None:
                for o, buf in zip(n.outputs, folded):
                    c = Var(o.shape, o.dtype, kind="c", const=_wrap(buf))
                    rename[o.id] = c
                    consts.append(c)
                continue
        nodes.append(n)
    out = g.copy_with(nodes=nodes, outputs=[rename.get(v.id, v) for v in g.outputs])
    out.consts = consts
    return out


def _fold(n):
    limit = max([FOLD_LIMIT] + [int(np.prod(v.shape, dtype=np.int64)) for v in n.inputs])
    if any(int(np.prod(o.shape, dtype=np.int64)) > limit for o in n.outputs):
        return None
    try:
        with np.errstate(all="ignore"):
            outs = n.prim.impl(*[v.const._v for v in n.inputs], **n.params)
    except Exception:
        return None
    outs = tuple(outs) if n.prim.multiple_results else (outs,)
    for o, buf in zip(n.outputs, outs):
        if not hasattr(buf, "dtype") or buf.dtype != o.dtype or tuple(np.shape(buf)) != o.shape:
            return None
    return outs


# ------------------------------------------------------------------ algebraic simplification
def _prims():
    return E, S


def _is_const(v, value, negative_zero=None):
    """`v` is a constant whose every element equals `value` (checked for small constants);
    with `negative_zero` True/False, every float zero (each part of a complex one) must also
    have that sign."""
    if v.kind != "c":
        return False
    raw = v.const._v
    if raw.size > 4096 and not isinstance(raw, np.ndarray):
        return False           # a large device constant: not worth reading back to inspect
    buf = _host(raw)
    if buf.size == 0:
        return False
    if buf.size > 4096:        # only a broadcast scalar (all strides 0) is checked cheaply
        if any(buf.strides):
            return False
        buf = buf.reshape(-1)[:1]
    with np.errstate(all="ignore"):
        if not np.all(buf == value):
            return False
    if negative_zero is not None and buf.dtype.kind in "fc":
        parts = (buf.real, buf.imag) if buf.dtype.kind == "c" else (buf,)
        return all(bool(np.all(np.signbit(p) == negative_zero)) for p in parts)
    return True


def _same_aval(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and None not in a.shape


def _identity_operand(n, E):
    """The operand `n` returns unchanged, bit for bit under IEEE 754, or None: x*1, 1*x, x/1;
    x + (-0.0), (-0.0) + x and x - (+0.0) (x + (+0.0) turns -0.0 into +0.0, so it stays; for
    integers any zero). Not x*1 or x/1 for complex x: (inf + 1j) * (1 + 0j) is NaN in its
    real part (inf * 0)."""
    p, ins = n.prim, n.inputs
    if len(ins) != 2:
        return None
    x, y = ins
    out = n.outputs[0]
    sign = None
    if p in (E.mul_p, E.div_p) and np.dtype(out.dtype).kind == "c":
        return None
    if p is E.mul_p:
        cands = [(x, y), (y, x)]
        unit = 1
    elif p is E.add_p:
        cands = [(x, y), (y, x)]
        unit, sign = 0, True
    elif p is E.sub_p:
        cands = [(x, y)]
        unit, sign = 0, False
    elif p is E.div_p:
        cands = [(x, y)]
        unit = 1
    else:
        return None
    for keep, other in cands:
        if _same_aval(keep, out) and _is_const(other, unit, sign):
            return keep
    return None


def _broadcasting_elementwise(p, E):
    return p is E.select_p or p.abstract in (E._binary_abstract, E._bool_abstract)


def algebraic_simplification(g: Graph) -> Graph:
    """Rewrite nodes that do nothing, or nothing a simpler node would not:

    x*1, 1*x, x/1, x+(-0.0), (-0.0)+x, x-(+0.0) -> x   (same shape and dtype only; exact
                                           under IEEE 754: x+(+0.0) is not, for x = -0.0)
    convert_element_type(x, x.dtype) -> x
    zeros_like / ones_like / full_like of a known shape -> a constant (a broadcast scalar)
    x ** k, k a one-element constant 1 or 2 -> x, x*x (what NumPy's power computes then;
                                           an exponent array that varies is not rewritten)
    x ** k, k a constant of integer values -> |x| ** k, negated where x's sign bit is set and
                                           k is odd: only under the fast-math contract
                                           (`_power_of_magnitude`)
    transpose(x, identity) -> x;  transpose(transpose(x, p), q) -> transpose(x, p∘q)
    reshape(x, x.shape) -> x;     reshape(reshape(x, s), t) -> reshape(x, t)
    broadcast_to(x, s) feeding an elementwise op that broadcasts x to the same result -> x

    A returned value keeps a buffer of its own (the caller may change it in place): an identity
    on a graph output applies only when the operand is a fresh value returned nowhere else, not
    an argument, a constant or a view of one. Reshapes and transposes are views in NumPy too,
    so they always apply."""
    E, S = _prims()
    returned = {v.id for v in g.outputs}
    rename = {}
    ren = _renamer(rename)
    producer = {}
    nodes = []
    consts = list(g.consts)
    claimed = set()
    for n in g.nodes:
        n = ren(n)
        p = n.prim
        out = n.outputs[0] if n.outputs else None
        src = None
        if p in (E.mul_p, E.add_p, E.sub_p, E.div_p):
            src = _identity_operand(n, E)
        elif p is E.convert_p:
            x = n.inputs[0]
            if x.dtype == n.params["dtype"] and x.shape == out.shape:
                src = x
        elif p is S.transpose_p:
            x, perm = n.inputs[0], n.params["perm"]
            inner = producer.get(x.id)
            if inner is not None and inner.prim is S.transpose_p:
                q = inner.params["perm"]
                perm = tuple(q[i] for i in perm)
                x = inner.inputs[0]
                n = Node(p, (x,), {"perm": perm}, n.outputs, n.loc)
            if perm == tuple(range(len(perm))):
                src = x
        elif p is S.reshape_p and not n.params.get("keep"):
            x = n.inputs[0]
            inner = producer.get(x.id)
            if inner is not None and inner.prim is S.reshape_p and not inner.params.get("keep"):
                x = inner.inputs[0]
                n = Node(p, (x,), n.params, n.outputs, n.loc)
            if x.shape == out.shape and None not in x.shape:
                src = x
        elif p is E.pow_p and n.inputs[1].kind == "c":
            x, k = n.inputs
            kv = _host(k.const._v)
            src = _integer_power(x, kv, out, nodes, producer, consts, n.loc, E)
            if src is None and settings.fast_math:
                src = _power_of_magnitude(x, kv, out, nodes, producer, consts, n.loc, E)
            if src is out:          # rewritten into new nodes that define `out` itself
                continue
        elif p in (E.zeros_like_p, E.ones_like_p, E.full_like_p):
            if out.id not in returned and None not in out.shape:
                fill = {E.zeros_like_p: 0, E.ones_like_p: 1}.get(p, n.params.get("fill_value"))
                src = _filled_const(out, fill)
                consts.append(src)
        if src is not None and out.id in returned and p not in (S.transpose_p, S.reshape_p):
            # a returned value must stay a buffer of its own: only a fresh value, made by a
            # node that is no view and returned nowhere else, may take its place
            fresh = src.kind == "v" and src.id not in returned and src.id not in claimed \
                and not producer[src.id].prim.returns_view \
                and not producer[src.id].prim.multiple_results
            if fresh:
                claimed.add(src.id)
            else:
                src = None
        if src is None and _broadcasting_elementwise(p, E):
            n = _drop_broadcasts(n, producer, S)
        if src is not None:
            rename[out.id] = src
            continue
        for o in n.outputs:
            producer[o.id] = n
        nodes.append(n)
    out = g.copy_with(nodes=nodes, outputs=[rename.get(v.id, v) for v in g.outputs])
    out.consts = consts
    return out


def _integer_power(x, k, out, nodes, producer, consts, loc, E):
    """x ** k for a one-element constant k of 0, 1 or 2 (of x's dtype), as multiplications:
    NumPy's float power is slow (30x for negative bases). Only where NumPy's own loop takes
    its fast path, which is exactly 1, x or x*x: a one-element exponent, read with stride 0.
    An exponent array that varies (or only repeats a value) is not: NumPy's general loop
    (SVML's pow on AVX-512 machines) differs from x*x in the last bit for ~10% of values, and
    even from x for a few at k == 1. Returns the replacement: `x` (k == 1), `out` itself
    when new nodes define it, or None."""
    dt = np.dtype(x.dtype)
    if (dt.kind != "f" or k.size != 1 or k.dtype != dt or None in out.shape
            or out.dtype != dt or not _power_fast_path(dt)):
        return None
    top = k.reshape(()).item()
    if top == 1:
        return x if x.shape == out.shape else None
    if top != 2 or x.shape != out.shape:
        return None
    nodes.append(Node(E.mul_p, (x, x), {}, (out,), loc))
    producer[out.id] = nodes[-1]
    return out


def _power_of_magnitude(x, k, out, nodes, producer, consts, loc, E):
    """Under the fast-math contract (`jit_compile=True`): x ** k for a constant k of
    integer values (a Vandermonde matrix's `x[None] ** arange(4)[:, None]`, a cube) as
    |x| ** k, negated where x's sign bit is set and k is odd. NumPy's float pow of a negative
    base is slow on machines where it calls SVML (~33 ns an element, 20x its positive
    bases'): its negative bases go to the C library's pow, which computes |x| ** k and sets
    the sign the same way, so the two differ by SVML's rounding of |x| ** k
    (contract.POWER_ULPS) and not at all where both are the C library's. NaN, inf, zeros
    and their signs, and the warnings, are pow's. Returns `out` with the new nodes
    appended, or None."""
    dt = np.dtype(x.dtype)
    if (dt not in (np.dtype(np.float32), np.dtype(np.float64)) or k.dtype != dt
            or k.size == 0 or None in out.shape or out.dtype != dt):
        return None
    made = producer.get(x.id)
    if made is not None and made.prim is E.abs_p:
        return None               # a magnitude already (this pass runs twice)
    with np.errstate(all="ignore"):
        if not (np.all(np.isfinite(k)) and np.all(k == np.trunc(k))):
            return None
        odd = np.fmod(k, 2) != 0

    def node(prim, ins, shape, dtype=dt):
        v = Var(shape, dtype)
        nodes.append(Node(prim, ins, {}, (v,), loc))
        producer[v.id] = nodes[-1]
        return v
    kc = Var(k.shape, dt, kind="c", const=_wrap(k))
    consts.append(kc)
    if not odd.any():
        nodes.append(Node(E.pow_p, (node(E.abs_p, (x,), x.shape), kc), {}, (out,), loc))
        producer[out.id] = nodes[-1]
        return out
    B = np.dtype(np.bool_)
    p = node(E.pow_p, (node(E.abs_p, (x,), x.shape), kc), out.shape)
    flip = node(E.signbit_p, (x,), x.shape, B)
    if not odd.all():
        oc = Var(odd.shape, B, kind="c", const=_wrap(odd))
        consts.append(oc)
        flip = node(E.logical_and_p, (flip, oc), _bshape(x.shape, odd.shape), B)
    nodes.append(Node(E.select_p, (flip, node(E.neg_p, (p,), out.shape), p), {}, (out,), loc))
    producer[out.id] = nodes[-1]
    return out


_POWER_FAST = {}


def _power_fast_path(dt):
    """Whether this NumPy's power with a one-element exponent of dtype `dt` gives exactly 1,
    x and x*x for exponents 0, 1 and 2 (its fast path), probed once per dtype on values where
    a general pow and x*x disagree, and on special values."""
    ok = _POWER_FAST.get(dt)
    if ok is None:
        rng = np.random.default_rng(0)
        x = np.concatenate([rng.uniform(-3, 3, 4096),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 1e300]])
        with np.errstate(all="ignore"):
            x = x.astype(dt)
            ok = True
            for e, want in ((1, x), (2, x * x), (0, np.ones_like(x))):
                got = np.power(x, np.ones(1, dt) * e)
                ok = ok and bool(np.array_equal(got.view(np.uint8), want.view(np.uint8)))
        _POWER_FAST[dt] = ok
    return ok


def _bshape(a, b):
    return broadcast_shapes(a, b)


def _filled_const(like, value):
    """A constant of `like`'s shape and dtype filled with `value`: a broadcast view of one
    element, so its size costs no memory."""
    buf = np.broadcast_to(np.full((), value, dtype=like.dtype), like.shape)
    return Var(like.shape, like.dtype, kind="c", const=_wrap(buf))


def _drop_broadcasts(n, producer, S):
    ins = list(n.inputs)
    changed = False
    for i, v in enumerate(ins):
        b = producer.get(v.id)
        if b is None or b.prim is not S.broadcast_to_p:
            continue
        trial = ins[:i] + [b.inputs[0]] + ins[i + 1:]
        try:
            shape = broadcast_shapes(*[t.shape for t in trial])
        except ValueError:
            continue
        if shape == n.outputs[0].shape and None not in shape:
            ins = trial
            changed = True
    return n.with_inputs(ins) if changed else n


# ------------------------------------------------------------------ layout
OUTER_MIN = 16     # an outer product as a broadcast multiply pays off from rows this long


def layout_choices(g: Graph) -> Graph:
    """Layout choices that save copies, strided views or many small kernel calls where it is
    cheap to see:

    copy(x) -> x            when x is a fresh buffer made by a node (not a view of an argument,
                            a constant or another value) that nothing else uses
    transpose(x, p) -> reshape(x, ...)   when p only moves axes of size 1: a plain contiguous
                            view that later reshapes merge with, never a strided one
    matmul(a (...,m,k), b (k,n)) -> one (prod(...)*m, k) @ (k, n) product, reshaped: NumPy
                            runs a stack of small products one by one (vectorized models
                            make such stacks). Only under `settings.fast_math`: BLAS rounds one
                            big product differently from the stack in the last bits
    matmul(a (...,m,1), b (...,1,n)) -> a * b + 0.0   (an outer product: a broadcast multiply,
                            the same numbers (+ 0.0: the product's sum starts at +0.0, so
                            -0.0 becomes +0.0 as in BLAS), instead of one tiny product per
                            stacked matrix; when rows are at least OUTER_MIN long; real and
                            integer dtypes)
    squeeze(matmul(expand_dims(g, 0), transpose(P)), 0) -> matmul(P, g)   (what the gradient
                            of `v @ P` makes; g 1-d, P 2-d, float32/float64: NumPy runs both
                            as the same gemv over P's memory, or the same non-BLAS loop, so
                            the bits are the same; 3 nodes fewer)"""
    E, S = _prims()
    uses = {}
    for n in g.nodes:
        for v in n.inputs:
            uses[v.id] = uses.get(v.id, 0) + 1
    for v in g.outputs:
        uses[v.id] = uses.get(v.id, 0) + 1
    producer = {o.id: n for n in g.nodes for o in n.outputs}
    rename = {}
    ren = _renamer(rename)
    nodes = []
    consts = list(g.consts)
    for n in g.nodes:
        n = ren(n)
        if n.prim is E.copy_p:
            x = n.inputs[0]
            src = producer.get(x.id)
            if (x.kind == "v" and src is not None and not src.prim.returns_view
                    and not src.prim.multiple_results and uses.get(x.id) == 1
                    and not _has_effect(src)):
                rename[n.outputs[0].id] = x
                continue
        elif n.prim is S.transpose_p and None not in n.inputs[0].shape:
            x, perm = n.inputs[0], n.params["perm"]
            moved = [a for a in perm if x.shape[a] != 1]
            if moved == sorted(moved) and perm != tuple(range(len(perm))):
                n = Node(S.reshape_p, (x,), {"shape": n.outputs[0].shape}, n.outputs, n.loc)
        elif n.prim is matmul_p and not n.params and _matmul_layout(n, nodes, consts, E, S):
            continue
        elif n.prim is S.squeeze_p:
            mv = _vector_matrix(n, producer, uses, matmul_p, S)
            if mv is not None:
                n = mv
        elif n.prim is concatenate_p:
            oc = _outer_columns(n, producer, uses, rename, E)
            if oc is not None:
                n = oc
        nodes.append(n)
    out = g.copy_with(nodes=nodes, outputs=[rename.get(v.id, v) for v in g.outputs])
    out.consts = consts
    return out


def _outer_columns(n, producer, uses, rename, E):
    """mul(x, y) for concatenate node `n` when it joins, along the last axis, the columns
    x * y[..., j:j+1] for j = 0, 1, ... covering y's last axis (x's last axis of size 1): the
    form the batching rule gives a batch of outer products with few columns, as NumPy's loops
    run it faster than x * y, whose inner loop is that short. The compiled tier runs x * y as
    one loop, the short axis outside (`numba_plan._swap_inner`), tier 0 column by column
    (`numpy_columns`): one node, no concatenate. Each element is the same product
    x[..., i, 0] * y[..., 0, j]. Only where the backend's policy says the product pays as
    a region (`policy.columns_as_product`); else None. The column nodes are left to
    dead-code elimination."""
    out = n.outputs[0]
    if None in out.shape or out.ndim < 3 or n.params.get("axis") not in (-1, out.ndim - 1) \
            or len(n.inputs) < 2:
        return None
    whole = ("s", None, None, None)
    x = y = None
    for j, v in enumerate(n.inputs):
        m = producer.get(v.id)
        if m is None or m.prim is not E.mul_p or m.params or uses.get(v.id) != 1:
            return None
        a, c = (rename.get(u.id, u) for u in m.inputs)
        s = producer.get(c.id)
        if s is None or s.prim is not getitem_p or len(s.inputs) != 1:
            return None
        spec = s.params["spec"]
        if len(spec) != out.ndim or spec[-1] != ("s", j, j + 1, None) or \
                any(e != whole for e in spec[:-1]):
            return None
        src = rename.get(s.inputs[0].id, s.inputs[0])
        if x is None:
            x, y = a, src
        elif a.id != x.id or src.id != y.id:
            return None
    if x.ndim != out.ndim or y.ndim != out.ndim or x.shape[-1] != 1 or \
            y.shape[-1] != len(n.inputs) or None in x.shape or None in y.shape or \
            not (np.dtype(x.dtype) == np.dtype(y.dtype) == np.dtype(out.dtype)) or \
            tuple(np.broadcast_shapes(tuple(x.shape), tuple(y.shape))) != tuple(out.shape):
        return None
    if not policy.columns_as_product(tuple(out.shape)):
        return None
    return Node(E.mul_p, (x, y), {}, n.outputs, n.loc)


def _vector_matrix(n, producer, uses, matmul_p, S):
    """matmul(P, g) for squeeze node `n` of the form squeeze(matmul(expand_dims(g, 0),
    transpose(P, (1, 0))), 0), else None. NumPy's matmul takes (1, k) @ P.T as vector @
    matrix and P @ g as matrix @ vector: both call gemv with P's strides and g's, or run the
    same non-BLAS loop over k in order (a product's operands swapped: exact). The replaced
    nodes are left to dead-code elimination."""
    mm = producer.get(n.inputs[0].id)
    if n.params.get("axes") != (0,) or mm is None or mm.prim is not matmul_p or mm.params \
            or uses.get(n.inputs[0].id) != 1:
        return None
    e, t = (producer.get(v.id) for v in mm.inputs)
    if e is None or t is None or e.prim is not S.expand_dims_p or \
            e.params.get("axes") != (0,) or t.prim is not S.transpose_p or \
            t.params.get("perm") != (1, 0):
        return None
    g, P = e.inputs[0], t.inputs[0]
    out = n.outputs[0]
    if g.ndim != 1 or P.ndim != 2 or None in g.shape or None in P.shape or \
            not (np.dtype(g.dtype) == np.dtype(P.dtype) == np.dtype(out.dtype)) or \
            np.dtype(out.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)) or \
            tuple(out.shape) != (P.shape[0],) or min(P.shape) < 2:
        return None       # (one row or one column: NumPy's dot or scalar cases, not gemv)
    return Node(matmul_p, (P, g), {}, n.outputs, n.loc)


def _matmul_layout(n, nodes, consts, E, S):
    """Append a cheaper form of matmul node `n` to `nodes`; False when there is none."""
    a, b = n.inputs
    out = n.outputs[0]
    if None in a.shape or None in b.shape or a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype:
        return False
    kind = np.dtype(out.dtype).kind
    if a.shape[-1] == 1 and b.shape[-2] == 1 and out.shape[-1] >= OUTER_MIN \
            and a.ndim + b.ndim > 4 and kind in "biuf":
        if kind == "f":
            prod = Var(out.shape, out.dtype)
            nodes.append(Node(E.mul_p, (a, b), {}, (prod,), n.loc))
            zero = Var((), out.dtype, kind="c", const=_wrap(np.zeros((), out.dtype)))
            consts.append(zero)
            nodes.append(Node(E.add_p, (prod, zero), {}, (out,), n.loc))
        else:
            nodes.append(Node(E.mul_p, (a, b), {}, (out,), n.loc))
        return True
    if a.ndim >= 3 and b.ndim == 2 and settings.fast_math:
        rows = int(np.prod(a.shape[:-1]))
        flat = Var((rows, a.shape[-1]), a.dtype)
        prod = Var((rows, b.shape[-1]), out.dtype)
        nodes.append(Node(S.reshape_p, (a,), {"shape": flat.shape}, (flat,), n.loc))
        nodes.append(Node(matmul_p, (flat, b), {}, (prod,), n.loc))
        nodes.append(Node(S.reshape_p, (prod,), {"shape": out.shape}, (out,), n.loc))
        return True
    return False



# ------------------------------------------------------------------ control flow
def inline_constant_branches(g: Graph) -> Graph:
    """A cond / switch_case whose branch index is a constant (after folding) becomes the
    chosen branch's nodes, inlined."""
    from . import control as C
    nodes, rename = [], {}
    ren = _renamer(rename)
    consts = list(g.consts)
    changed = False
    for n in g.nodes:
        n = ren(n)
        if n.prim in (C.cond_p, C.cond_effect_p) and n.inputs[0].kind == "c":
            branches = n.params["branches"]
            i = C.branch_for(int(_host(n.inputs[0].const._v)), len(branches))
            _inline(branches[i].graph, n.inputs[1:], n.outputs, nodes, rename, consts)
            changed = True
            continue
        nodes.append(n)
    if not changed:
        return g
    out = g.copy_with(nodes=nodes, outputs=[rename.get(v.id, v) for v in g.outputs])
    out.consts = consts
    return out


def _inline(sub, args, outs, nodes, rename, consts):
    local = {v.id: a for v, a in zip(sub.inputs, args)}
    for c in sub.consts:
        local[c.id] = c
        consts.append(c)
    for n in sub.nodes:
        new_outs = tuple(Var(o.shape, o.dtype) for o in n.outputs)
        for o, no in zip(n.outputs, new_outs):
            local[o.id] = no
        nodes.append(Node(n.prim, [local[v.id] for v in n.inputs], n.params, new_outs, n.loc))
    for o, r in zip(outs, sub.outputs):
        rename[o.id] = local[r.id]


# folding and simplification feed each other (a ones_like becomes a constant, its broadcast
# folds, then x * ones simplifies), hence each twice
PASSES = [constant_folding, inline_constant_branches, algebraic_simplification, constant_folding,
          algebraic_simplification, layout_choices, common_subexpression_elimination,
          dead_code_elimination]

# fusion (ndflow/graph/fusion.py, memory.py): elementwise regions become one node, then results
# are written into dead buffers; both last, on the simplified graph
from .fusion import elementwise_fusion  # noqa: E402
from .memory import reuse_buffers, output_aliasing, own_outputs  # noqa: E402
from ..backends.device import backend_of
from ..core.ndarray import _wrap
from ..primitives import elementwise as E, shape as S
from ..primitives._util import broadcast_shapes
from ..primitives.linalg import matmul_p
from ..primitives.indexing import getitem_p, concatenate_p
PASSES += [elementwise_fusion, reuse_buffers]
DEFAULT_PASSES = PASSES


def checked_passes():
    """The passes for code that checks every operation's result (enable_check_numerics): not
    constant folding (an operation evaluated at compile time would go unchecked), fusion (a
    fused kernel hides the operation that made a NaN) or buffer reuse (an input must still be
    there to tell whether it was finite)."""
    skip = (constant_folding, elementwise_fusion, reuse_buffers)
    return [p for p in PASSES if p not in skip]


def optimize(g, passes=None):
    """Run the passes in order (default: `PASSES`), verifying after each under NDFLOW_VERIFY
    and printing each pass's changes under NDFLOW_DEBUG=opt. Last, `own_outputs`: results
    share memory only where the traced program's would (views), whatever the passes did."""
    show = "opt" in _dbg.FLAGS
    check = _dbg.VERIFY
    if check:
        verify(g, "(traced)")
    allowed = output_aliasing(g)

    def own_results(h):
        return own_outputs(h, allowed)
    for p in list(PASSES if passes is None else passes) + [own_results]:
        before = format_graph(g) if show else None
        g = p(g)
        if check:
            verify(g, p.__name__)
        if show:
            diff = list(difflib.unified_diff(before.splitlines(), format_graph(g).splitlines(),
                                             lineterm="", n=0))
            _dbg.log("--- pass %s on %r: %s" % (p.__name__, g.name,
                                                  "%d lines changed" % sum(
                                                      1 for d in diff[2:] if d[:1] in "+-")
                                                  if diff else "no change"))
            for d in diff[2:]:
                if not d.startswith("@@"):
                    _dbg.log("  " + d)
    return g
