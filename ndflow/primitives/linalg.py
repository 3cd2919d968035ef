"""Contractions: matmul and einsum (NumPy's, with its contraction orders)."""

import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ..core.state import STATE
from ._util import broadcast_shapes, squeezed_ok, example_rank
from .sums import unbroadcast
from .elementwise import mul_p, add_p, zeros_like_p, eq_p, convert_p
from .indexing import getitem, iota_p, concatenate_p
from .reduction import reduce_sum_p
from .shape import transpose_p, expand_dims_p, squeeze_p, reshape_p, broadcast_to_p, \
    move_to_front, unsqueeze_all

_ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"   # string.ascii_letters


# ------------------------------------------------------------------ matmul
def _matmul_abstract(x, y):
    xs, ys = tuple(x.shape), tuple(y.shape)
    if not xs or not ys:
        raise ValueError("matmul: Input operand %d does not have enough dimensions (has 0, "
                         "gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)"
                         % (0 if not xs else 1))
    k1 = xs[-1]
    k2 = ys[-2] if len(ys) > 1 else ys[0]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (n?,k),(k,m?)->(n?,m?) (size {k2} is different from "
                         f"{k1}); shapes {xs} and {ys}")
    batch = broadcast_shapes(xs[:-2], ys[:-2])
    out = batch + (xs[-2:-1] if len(xs) > 1 else ()) + (ys[-1:] if len(ys) > 1 else ())
    return Aval(out, x.dtype)


def _swap(a):
    n = a.ndim
    return bind(transpose_p, a, perm=tuple(range(n - 2)) + (n - 1, n - 2))


def _matmul_vjp(ct, x, y, needs=(True, True)):
    x1, y1 = x.ndim == 1, y.ndim == 1
    x2 = bind(expand_dims_p, x, axes=(0,)) if x1 else x
    y2 = bind(expand_dims_p, y, axes=(1,)) if y1 else y
    ct2 = ct
    if x1:
        ct2 = bind(expand_dims_p, ct2, axes=(ct2.ndim - (0 if y1 else 1),))
    if y1:
        ct2 = bind(expand_dims_p, ct2, axes=(ct2.ndim,))
    gx = gy = None
    if needs[0]:
        gx = unbroadcast(bind(matmul_p, ct2, _swap(y2)), x2)
        if x1:
            gx = bind(squeeze_p, gx, axes=(0,))
    if needs[1]:
        gy = unbroadcast(bind(matmul_p, _swap(x2), ct2), y2)
        if y1:
            gy = bind(squeeze_p, gy, axes=(1,))
    return gx, gy


def _known(*shapes):
    return all(d is not None for s in shapes for d in s)


def _fold_rows(x, w):
    """`x` (B, ..., k) batched, `w` (k, n) or (k,) the same for every example: the stack of
    per-example products as ONE product (B*..., k) @ w, reshaped back. NumPy runs a stack
    of small products one matrix at a time (a (1, k) @ (k, n) per example: B BLAS calls, or
    its non-BLAS loop); a single gemm is the shape BLAS is fast at. Each example's rows meet
    the same `w`, so this is the same product, summed in the order the BLAS kernel picks (as
    the unbatched product is itself a BLAS product). None where sizes are unknown."""
    if not _known(x.shape, w.shape):
        return None
    k = x.shape[-1]
    lead = tuple(x.shape[:-1])
    rows = x
    if x.ndim != 2:
        rows = bind(reshape_p, x, shape=(int(np.prod(lead, dtype=np.int64)), k))
    out = bind(matmul_p, rows, w)
    if x.ndim != 2:
        out = bind(reshape_p, out, shape=lead + tuple(w.shape[1:]))
    return out


# per-example outer products, (m, 1) @ (1, n): row lengths from which a broadcast multiply
# beats NumPy's stacked matmul (its non-BLAS loop, ~2 ns a product), and up to which one
# multiply per column does (a broadcast multiply over rows this short runs NumPy's inner loop
# per row: slower than the matmul)
OUTER_MIN = 16
OUTER_COLS = 4


def _outer(x, y):
    """The batch (B, m, 1) @ (B, 1, n) of per-example outer products without NumPy's stacked
    matmul: x * y where rows are long (or one of m, n is 1), else, for few columns, one
    (B, m, 1) * (B, 1, 1) multiply per column joined along the last axis (each row of the
    result is a column's long multiply). Real and integer dtypes; + 0.0 for floats: a matrix
    product's sum starts at +0.0, so a -0.0 product is +0.0 as NumPy's matmul gives it.
    None where another shape of product is better or sizes are unknown. (Where the compiled
    tier runs the product, the graph pass `passes._outer_columns` joins the columns back into
    one x * y: its loop takes the short axis outside.)"""
    if not _known(x.shape, y.shape) or x.shape[2] != 1 or y.shape[1] != 1:
        return None
    if x.dtype != y.dtype or np.dtype(x.dtype).kind not in "biuf":
        return None
    b, m, n = x.shape[0], x.shape[1], y.shape[2]
    if not any(t.is_graph for t in STATE.traces):
        # eager: each op below allocates its result; two full-size temporaries cost more
        # (page faults on fresh memory) than einsum's one, which is exact here (k = 1): NumPy's
        # own loop (optimize=False), whose sums start at +0.0 as a matrix product's do
        if n < OUTER_MIN:
            return None
        return bind(einsum_p, x, y, subscripts="bik,bkj->bij", optimize=False)
    zero = None
    if np.dtype(x.dtype).kind == "f":
        # a 0-d zero on y's device; a constant when compiled (the sum is dropped)
        zero = bind(zeros_like_p, bind(reduce_sum_p, y, axes=(0, 1, 2), keepdims=False))

    def product(a, c):
        p = bind(mul_p, a, c)
        return p if zero is None else bind(add_p, p, zero)
    if n >= OUTER_MIN or n == 1 or m == 1:
        return product(x, y)
    if n <= OUTER_COLS and m >= OUTER_MIN:
        cols = [bind(mul_p, x, getitem(y, (slice(None), slice(None), slice(j, j + 1))))
                for j in range(n)]
        out = bind(concatenate_p, *cols, axis=2)
        return out if zero is None else bind(add_p, out, zero)
    return None


@squeezed_ok
def _matmul_batch(args, axes):
    (x, y), (bx, by) = args, axes
    if isinstance(bx, tuple) and by is None and y.ndim in (1, 2) \
            and example_rank(x, bx) - 1 not in bx[1]:
        # rows with unit axes left out (a per-example (1, k) row): they are the folded rows
        # already; the result keeps the same unit axes
        out = _fold_rows(x, y)
        if out is not None:
            return out, bx
    if isinstance(bx, tuple) or isinstance(by, tuple):
        (x, y), (bx, by) = unsqueeze_all((x, y), (bx, by))
    if by is None and bx is not None and y.ndim in (1, 2):
        # per example (..., m, k) @ w or (k,) @ w, w shared: rows of one product
        out = _fold_rows(move_to_front(x, bx), y)
        if out is not None:
            return out, 0
    if bx is not None and by is not None and x.ndim == 3 and y.ndim == 3:
        out = _outer(move_to_front(x, bx), move_to_front(y, by))
        if out is not None:
            return out, 0
    if bx is None and by is not None and x.ndim in (1, 2) and y.ndim == 2:
        # per example w @ v with v a vector (k,): the batch of vectors (B, k) @ w.T
        wt = x if x.ndim == 1 else bind(transpose_p, x, perm=(1, 0))
        out = _fold_rows(move_to_front(y, by), wt)
        if out is not None:
            return out, 0
    x1 = x.ndim - (bx is not None) == 1
    y1 = y.ndim - (by is not None) == 1
    if bx is not None:
        x = move_to_front(x, bx)
    if by is not None:
        y = move_to_front(y, by)
    if x1:   # (k,) -> (1, k) per example
        x = bind(expand_dims_p, x, axes=(x.ndim - 1,))
    if y1:   # (k,) -> (k, 1) per example
        y = bind(expand_dims_p, y, axes=(y.ndim,))
    rx = x.ndim - (bx is not None)
    ry = y.ndim - (by is not None)
    r = max(rx, ry)
    if bx is not None and rx < r:
        x = bind(expand_dims_p, x, axes=tuple(range(1, 1 + r - rx)))
    if by is not None and ry < r:
        y = bind(expand_dims_p, y, axes=tuple(range(1, 1 + r - ry)))
    if bx is None and rx == r:
        pass
    out = bind(matmul_p, x, y)
    sq = ()
    if x1:
        sq += (out.ndim - 2,)
    if y1:
        sq += (out.ndim - 1,)
    if sq:
        out = bind(squeeze_p, out, axes=sq)
    return out, 0


matmul_p = Primitive("matmul", np.matmul, _matmul_abstract, blas=True)
matmul_p.def_vjp(_matmul_vjp, needs=True)
matmul_p.batch = _matmul_batch


# ------------------------------------------------------------------ einsum
def _einsum_impl(*ops, subscripts, optimize=True):
    """NumPy's einsum with NumPy's `optimize` (False: its own loops over every operand at
    once; True, 'greedy', 'optimal' or an einsum_path list, kept as a tuple: pairs in that
    order, by BLAS where NumPy uses it), so its bits are NumPy's. The gradient rules' own
    contractions take the default, True: they have no NumPy call to match, and pairs by BLAS
    are fastest (the batched outer product asks for NumPy's loop, `_outer`)."""
    if type(optimize) is tuple:
        optimize = list(optimize)
    return np.einsum(subscripts, *ops, optimize=optimize)


def _parse(subscripts):
    ins, out = subscripts.split("->")
    return ins.split(","), out


def _einsum_abstract(*ops, subscripts, optimize=True):
    ins, out = _parse(subscripts)
    sizes = {}
    for sub, op in zip(ins, ops):
        if len(sub) != len(op.shape):
            raise ValueError(f"einstein sum subscripts string contains too many subscripts for "
                             f"operand (subscripts {sub!r}, operand shape {tuple(op.shape)})")
        for c, d in zip(sub, op.shape):
            old = sizes.get(c)
            if old is not None and d is not None and old != d and 1 not in (old, d):
                raise ValueError(f"operands could not be broadcast together: label {c!r} has "
                                 f"sizes {old} and {d}")
            if old is None or old == 1:
                sizes[c] = d
    dtype = np.result_type(*[o.dtype for o in ops])
    return Aval(tuple(sizes[c] for c in out), dtype)


def _einsum_vjp(ct, *ops, subscripts, optimize=True):
    """d op_i = einsum(ct, other operands -> op_i's labels); labels summed within op_i alone are
    broadcast back, and a repeated label (a diagonal, 'ii') puts the gradient on the diagonal."""
    ins, out = _parse(subscripts)
    grads = []
    for i, (sub, op) in enumerate(zip(ins, ops)):
        if np.dtype(op.dtype).kind not in "fc":
            grads.append(None)
            continue
        uniq = "".join(dict.fromkeys(sub))          # labels in order of first appearance
        size = {c: op.shape[sub.index(c)] for c in uniq}
        others = [(s, o) for j, (s, o) in enumerate(zip(ins, ops)) if j != i]
        avail = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
        target = "".join(c for c in uniq if c in avail)
        g = bind(einsum_p, ct, *[o for _, o in others],
                 subscripts=",".join([out] + [s for s, _ in others]) + "->" + target)
        if len(target) != len(uniq):
            missing = tuple(k for k, c in enumerate(uniq) if c not in avail)
            g = bind(expand_dims_p, g, axes=missing)
            if None in size.values():     # sizes known at run time only: add zeros that have them
                z = bind(zeros_like_p, op)
                if len(uniq) != len(sub):
                    z = bind(einsum_p, z, subscripts=sub + "->" + uniq)
                g = bind(add_p, z, g)
            else:
                g = bind(broadcast_to_p, g, shape=tuple(size[c] for c in uniq))
        if len(uniq) != len(sub):
            g = _on_diagonal(g, sub, uniq, subscripts, op)
        grads.append(unbroadcast(g, op))
    return tuple(grads)


def _on_diagonal(g, sub, uniq, subscripts, op):
    """g with labels `uniq` -> labels `sub` (repeats of a label = a diagonal), zero elsewhere:
    each repeat gets a fresh label tied to the first by an identity matrix."""
    free = iter(c for c in _ASCII_LETTERS if c not in subscripts)
    full, deltas, eyes, seen = [], [], [], set()
    for c in sub:
        if c in seen:
            f = next(free)
            full.append(f)
            deltas.append(c + f)
            eyes.append(_eye_along(op, sub.index(c), g.dtype))
        else:
            seen.add(c)
            full.append(c)
    return bind(einsum_p, g, *eyes,
                subscripts=",".join([uniq] + deltas) + "->" + "".join(full))


def _eye_along(op, axis, dtype):
    """The identity of size op.shape[axis] (a size that may be known only at run time), on
    op's device: made of primitives, so rules need not call the NumPy layer."""
    i = bind(iota_p, op, axis=axis)
    return bind(convert_p, bind(eq_p, bind(reshape_p, i, shape=(-1, 1)),
                                bind(reshape_p, i, shape=(1, -1))), dtype=dtype)


def _einsum_batch(args, axes, subscripts, optimize=True):
    ins, out = _parse(subscripts)
    used = set(subscripts)
    free = next(c for c in _ASCII_LETTERS if c not in used)
    new_ins, new_args = [], []
    for sub, a, bd in zip(ins, args, axes):
        if bd is None:
            new_ins.append(sub)
            new_args.append(a)
        else:
            new_ins.append(free + sub)
            new_args.append(move_to_front(a, bd))
    return bind(einsum_p, *new_args, subscripts=",".join(new_ins) + "->" + free + out,
                optimize=optimize), 0


# einsum may return a view of its operand ('ii->i', 'ij->ji'), as NumPy does
einsum_p = Primitive("einsum", _einsum_impl, _einsum_abstract, blas=True,
                     returns_view=True)
einsum_p.def_vjp(_einsum_vjp)
einsum_p.batch = _einsum_batch
