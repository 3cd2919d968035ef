"""Products and contractions in the main namespace: dot, einsum, tensordot, outer, kron and
cross, built on matmul (_composites.py: the matmul ufunc of math.py is made of it), diagonal and
trace live in routines.py, vecdot is a ufunc in math.py."""
import warnings

import numpy as np

from ..core.primitive import bind
from ..core import dtypes as _dt
from ..primitives import linalg as L, elementwise as E
from ..primitives._util import norm_axis, broadcast_shapes
from ._core import asarray
from ._outarg import write_out as _write_out
from ._composites import matmul
from .manipulation import ravel, reshape, expand_dims, moveaxis, stack, transpose
from .math import multiply, conjugate, negative

_ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"   # string.ascii_letters
_ASCII_LOWERCASE = _ASCII_LETTERS[:26]


def dot(a, b, out=None):
    """`numpy.dot`: matmul for 1-D/2-D, multiply for scalars, last-axis-by-second-to-last else.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.dot(tnp.asarray([1., 2.]), tnp.asarray([3., 4.]))
    array(11., dtype=float64)
    >>> tnp.dot(tnp.asarray([[1, 2], [3, 4]]), tnp.asarray([1, 1]))
    array([3, 7], dtype=int64)
    """
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b, out=out)
    if b.ndim <= 2:
        return matmul(a, b, out=out)
    la = _ASCII_LOWERCASE[:a.ndim]
    lb = _ASCII_LOWERCASE[a.ndim:a.ndim + b.ndim]
    lb = lb[:-2] + la[-1] + lb[-1]
    return einsum("%s,%s->%s" % (la, lb, la[:-1] + lb[:-2] + lb[-1]), a, b, out=out)


def vdot(a, b):
    """The dot product of `a` and `b` flattened, the first conjugated, as `numpy.vdot` (a 0-d
    array; NumPy gives a scalar).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.vdot(tnp.asarray([1j, 2]), tnp.asarray([1j, 3]))
    array(7.+0.j, dtype=complex128)
    """
    a, b = ravel(asarray(a)), ravel(asarray(b))
    if a.dtype.kind == "c":
        a = conjugate(a)
    return dot(a, b)


def inner(a, b):
    """The inner product over the last axes of `a` and `b` (a product for a scalar operand), as
    `numpy.inner`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.inner(tnp.asarray([[1, 2], [3, 4]]), tnp.asarray([1, 10]))
    array([21, 43], dtype=int64)
    """
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        # NumPy's own product for these ranks (a @ b.T, a view): its bits on every path
        if b.ndim == 2:
            b = moveaxis(b, -1, -2)
        if None not in (a.shape[-1], b.shape[0]) and a.shape[-1] != b.shape[0]:
            sa, sb = (str(tuple(x.shape)).replace(" ", "") for x in (a, b))
            raise ValueError(f"shapes {sa} and {sb} not aligned: {a.shape[-1]} (dim "
                             f"{a.ndim - 1}) != {b.shape[0]} (dim 0)")
        return matmul(a, b)
    la = _ASCII_LOWERCASE[:a.ndim]
    lb = _ASCII_LOWERCASE[a.ndim:a.ndim + b.ndim - 1] + la[-1]
    return einsum("%s,%s->%s" % (la, lb, la[:-1] + lb[:-1]), a, b)


def outer(a, b, out=None):
    """The outer product of `a` and `b` (each flattened): ``out[i, j] = a[i] * b[j]``, as
    `numpy.outer`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.outer(tnp.asarray([1, 2]), tnp.asarray([1, 10, 100]))
    array([[  1,  10, 100],
           [  2,  20, 200]], dtype=int64)
    """
    a, b = ravel(asarray(a)), ravel(asarray(b))
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)), out=out)


def tensordot(a, b, axes=2):
    """Sum of products over the last `axes` axes of `a` and the first of `b` (or over the axis
    lists `axes = (a_axes, b_axes)`), as `numpy.tensordot`. Differentiable in both.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> a = tnp.ones((2, 3, 4))
    >>> tnp.tensordot(a, tnp.ones((3, 4, 5))).shape
    (2, 5)
    >>> tnp.tensordot(a, tnp.ones((4, 3)), axes=([1, 2], [1, 0])).shape
    (2,)
    """
    a, b = asarray(a), asarray(b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        # (NumPy's errors: an axis out of range, unequal counts, an axis given twice)
        ax_a = [norm_axis(x, a.ndim) for x in ax_a]
        ax_b = [norm_axis(x, b.ndim) for x in ax_b]
        if len(ax_a) != len(ax_b):
            raise ValueError("shape-mismatch for sum")
        if len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
            raise ValueError("duplicate axes are not allowed in tensordot")
    for i, j in zip(ax_a, ax_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [j for j in range(b.ndim) if j not in ax_b]
    if None in tuple(a.shape) + tuple(b.shape):       # sizes known at run time only: einsum
        letters = iter(_ASCII_LETTERS)
        la = [next(letters) for _ in range(a.ndim)]
        lb = [next(letters) for _ in range(b.ndim)]
        for i, j in zip(ax_a, ax_b):
            lb[j] = la[i]
        out = [la[i] for i in free_a] + [lb[j] for j in free_b]
        return einsum("%s,%s->%s" % ("".join(la), "".join(lb), "".join(out)), a, b)
    # NumPy's own algorithm: both operands transposed and reshaped to matrices, one matrix
    # product. Every path then gives numpy.tensordot's bits, under vectorized_map too (one
    # batched product, each example's the loop's), where an einsum contracts in its own order.
    size = lambda x, axes: int(np.prod([x.shape[k] for k in axes], dtype=np.int64))  # noqa: E731
    at = reshape(transpose(a, free_a + ax_a), (size(a, free_a), size(a, ax_a)))
    bt = reshape(transpose(b, ax_b + free_b), (size(b, ax_b), size(b, free_b)))
    return reshape(matmul(at, bt), tuple(a.shape[i] for i in free_a) +
                   tuple(b.shape[j] for j in free_b))


def _normalize_subscripts(subscripts, operands):
    subscripts = subscripts.replace(" ", "")
    if "->" not in subscripts:
        ins = subscripts
        counts = {}
        for c in ins.replace(",", "").replace(".", ""):
            counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
        if "..." in ins:
            out = "..." + out
        subscripts = ins + "->" + out
    ins, out = subscripts.split("->")
    ins = ins.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand subscripts given for {len(operands)} operands")
    if "..." in subscripts:
        used = set(subscripts) - {".", ","}
        free = [c for c in _ASCII_LETTERS if c not in used]
        nell = 0
        for s, op in zip(ins, operands):
            if "..." in s:
                nell = max(nell, op.ndim - (len(s) - 3))
        ell = "".join(free[:nell])
        new_ins = []
        for s, op in zip(ins, operands):
            if "..." in s:
                k = op.ndim - (len(s) - 3)
                s = s.replace("...", ell[nell - k:])
            new_ins.append(s)
        ins = new_ins
        out = out.replace("...", ell)
    return ",".join(ins) + "->" + out


def _sublist_letter(i):
    # NumPy's labels for sublist integers: 0-25 'A'-'Z', 26-51 'a'-'z' (so the implicit
    # output, ordered by letter, is ordered by number)
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
        raise TypeError(f"each subscript must be either an integer or an ellipsis (einsum "
                        f"sublist, got {i!r})")
    if not 0 <= i < 52:
        raise ValueError(f"subscript is not within the valid range [0, 52) (einsum sublist, "
                         f"got {i})")
    return chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26)


def _sublist(sub):
    return "".join("..." if e is Ellipsis else _sublist_letter(e) for e in sub)


def _from_sublists(subscripts, operands):
    """(subscripts string, operands) of `numpy.einsum`'s sublist form
    `einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`."""
    if isinstance(subscripts, str):
        return subscripts, list(operands)
    args = (subscripts,) + tuple(operands)
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):          # an odd count: the last one is the output sublist
        out = ops.pop()
    spec = ",".join(_sublist(s) for s in subs)
    if out is not None:
        spec += "->" + _sublist(out)
    return spec, ops


def einsum(subscripts, *operands, out=None, dtype=None, optimize=False, **kw):
    """Einstein summation, as `numpy.einsum`, with subscripts as a string or in the sublist
    form `einsum(a, [0, 1], b, [1, 2], [0, 2])`. Computed by `numpy.einsum` with the same
    `optimize` (NumPy's default False: its own loops; True, 'greedy', 'optimal' or a path from
    `einsum_path`: pairs of operands in that order, by BLAS where NumPy uses it), so the bits
    are NumPy's on every path; under `vectorized_map` the batch is one contraction, which may
    round differently from a loop. Differentiable in every operand. Unlike
    `tf.experimental.numpy.einsum`, whose default is 'greedy', the default is NumPy's.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> a = tnp.asarray([[1., 2.], [3., 4.]])
    >>> tnp.einsum("ij,ij->i", a, a)
    array([ 5., 25.], dtype=float64)
    >>> tnp.einsum("ii", a)
    array(5., dtype=float64)
    """
    subscripts, operands = _from_sublists(subscripts, operands)
    ops = [asarray(o) for o in operands]
    d = _dt.result_type(*ops) if dtype is None else _dt.canonical(dtype)
    ops = [o if o.dtype == d else bind(E.convert_p, o, dtype=d) for o in ops]
    sub = _normalize_subscripts(subscripts, ops)
    ins, o = sub.split("->")
    for s, op in zip(ins.split(","), ops):
        if len(s) != op.ndim:
            raise ValueError(f"einsum: operand with shape {tuple(op.shape)} has {op.ndim} "
                             f"dimensions but subscripts {s!r} name {len(s)}")
    r = bind(L.einsum_p, *ops, subscripts=sub, optimize=_optimize_param(optimize))
    return _write_out(r, out, casting=kw.get("casting", "safe"))


def _optimize_param(optimize):
    """einsum's `optimize` as a parameter of the graph (hashable, savable): an einsum_path
    list becomes a tuple of its entries. A value NumPy does not take raises a TypeError here,
    at the call (from a compiled graph NumPy's own would come only when it runs)."""
    if isinstance(optimize, (bool, np.bool_)):
        return bool(optimize)
    if isinstance(optimize, str) and optimize in ("greedy", "optimal"):
        return optimize
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        return ("einsum_path",) + tuple(tuple(int(i) for i in step) for step in optimize[1:])
    raise TypeError(f"einsum: optimize must be a bool, 'greedy', 'optimal' or a path from "
                    f"einsum_path (a list starting with 'einsum_path'), got {optimize!r}")


# ------------------------------------------------------------------ kron, cross
def kron(a, b):
    """Kronecker product, as `numpy.kron`: a's blocks scaled copies of b."""
    a, b = asarray(a), asarray(b)
    nda, ndb = a.ndim, b.ndim
    if nda == 0 or ndb == 0:
        return multiply(a, b)
    nd = max(nda, ndb)
    sa = (1,) * (nd - nda) + tuple(a.shape)
    sb = (1,) * (nd - ndb) + tuple(b.shape)
    if nd > nda:
        a = expand_dims(a, tuple(range(nd - nda)))
    if nd > ndb:
        b = expand_dims(b, tuple(range(nd - ndb)))
    # interleave: a's axes at even positions, b's at odd ones, then merge each pair
    r = multiply(expand_dims(a, tuple(range(1, 2 * nd, 2))),
                 expand_dims(b, tuple(range(0, 2 * nd, 2))))
    if None in sa or None in sb:
        raise ValueError(f"kron: the shapes {sa} and {sb} have sizes unknown while tracing")
    return reshape(r, tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (or 2-vectors, deprecated as in NumPy 2), as `numpy.cross`."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = asarray(a), asarray(b)
    if a.ndim < 1 or b.ndim < 1:
        raise ValueError("At least one array has zero dimension")
    a = moveaxis(a, norm_axis(axisa, a.ndim), -1)
    b = moveaxis(b, norm_axis(axisb, b.ndim), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na is None or nb is None:
        raise ValueError("cross: the vector length (2 or 3) is unknown while tracing; give it in "
                         "the input_signature")
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         "(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)
    d = np.promote_types(a.dtype, b.dtype)
    a = a if a.dtype == d else bind(E.convert_p, a, dtype=d)
    b = b if b.dtype == d else bind(E.convert_p, b, dtype=d)
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    if na == 3 and nb == 3:
        a2, b2 = a[..., 2], b[..., 2]
        cp = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z]
    elif na == 2:
        b2 = b[..., 2]
        cp = [a1 * b2, negative(a0 * b2), z]
    else:
        a2 = a[..., 2]
        cp = [negative(a2 * b1), a2 * b0, z]
    shape = broadcast_shapes(tuple(a.shape[:-1]), tuple(b.shape[:-1])) + (3,)
    return moveaxis(stack(cp, axis=-1), -1, norm_axis(axisc, len(shape)))


def einsum_path(subscripts, *operands, optimize="greedy", einsum_call=False):
    """The contraction order `einsum` would use, as `numpy.einsum_path` (computed from shapes
    on the host: traced operands with known shapes work too)."""
    subscripts, operands = _from_sublists(subscripts, operands)
    shaped = [np.empty(tuple(asarray(o).shape), dtype=asarray(o).dtype) for o in operands]
    return np.einsum_path(subscripts, *shaped, optimize=optimize, einsum_call=einsum_call)
