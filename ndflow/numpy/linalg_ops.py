"""Products and contractions in the main namespace: matmul, dot, einsum, tensordot, outer."""
import string

import numpy as np

from ..core.ndarray import ndarray, _wrap
from ..core.primitive import bind
from ..core.state import STATE
from ..core import dtypes as _dt
from ..primitives import linalg as L, elementwise as E
from ._core import asarray, ufunc_operands


def matmul(x1, x2, /, out=None, **kw):
    """Matrix product, as `numpy.matmul` (stacks of matrices broadcast)."""
    if STATE.fast and type(x1) is ndarray and type(x2) is ndarray and x1._dev is None \
            and x2._dev is None and out is None:
        return _wrap(np.matmul(x1._v, x2._v))
    a, b = ufunc_operands(np.matmul, asarray(x1), asarray(x2))
    r = bind(L.matmul_p, a, b)
    if out is not None:
        out[...] = r
        return out
    return r


def dot(a, b, out=None):
    """`numpy.dot`: matmul for 1-D/2-D, multiply for scalars, last-axis-by-second-to-last else."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        from .math import multiply
        return multiply(a, b, out=out)
    if b.ndim <= 2:
        return matmul(a, b, out=out)
    la = string.ascii_lowercase[:a.ndim]
    lb = string.ascii_lowercase[a.ndim:a.ndim + b.ndim]
    lb = lb[:-2] + la[-1] + lb[-1]
    return einsum("%s,%s->%s" % (la, lb, la[:-1] + lb[:-2] + lb[-1]), a, b, out=out)


def vdot(a, b):
    from .manipulation import ravel
    from .math import conjugate
    a, b = ravel(asarray(a)), ravel(asarray(b))
    if a.dtype.kind == "c":
        a = conjugate(a)
    return dot(a, b)


def inner(a, b):
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        from .math import multiply
        return multiply(a, b)
    la = string.ascii_lowercase[:a.ndim]
    lb = string.ascii_lowercase[a.ndim:a.ndim + b.ndim - 1] + la[-1]
    return einsum("%s,%s->%s" % (la, lb, la[:-1] + lb[:-1]), a, b)


def outer(a, b, out=None):
    from .manipulation import ravel, reshape
    from .math import multiply
    a, b = ravel(asarray(a)), ravel(asarray(b))
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)), out=out)


def tensordot(a, b, axes=2):
    a, b = asarray(a), asarray(b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        ax_a = [x % a.ndim for x in ax_a]
        ax_b = [x % b.ndim for x in ax_b]
    letters = iter(string.ascii_letters)
    la = [next(letters) for _ in range(a.ndim)]
    lb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(ax_a, ax_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError("shape-mismatch for sum")
        lb[j] = la[i]
    out = [c for i, c in enumerate(la) if i not in ax_a] + [c for j, c in enumerate(lb) if j not in ax_b]
    return einsum("%s,%s->%s" % ("".join(la), "".join(lb), "".join(out)), a, b)


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
        free = [c for c in string.ascii_letters if c not in used]
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


def einsum(subscripts, *operands, out=None, dtype=None, optimize=True, **kw):
    """Einstein summation, as `numpy.einsum`; multi-operand contraction orders come from
    opt_einsum (cached per subscripts and shapes). Differentiable in every operand."""
    ops = [asarray(o) for o in operands]
    d = _dt.result_type(*ops) if dtype is None else _dt.canonical(dtype)
    ops = [o if o.dtype == d else bind(E.convert_p, o, dtype=d) for o in ops]
    sub = _normalize_subscripts(subscripts, ops)
    ins, o = sub.split("->")
    for s, op in zip(ins.split(","), ops):
        if len(s) != op.ndim:
            raise ValueError(f"einsum: operand with shape {tuple(op.shape)} has {op.ndim} "
                             f"dimensions but subscripts {s!r} name {len(s)}")
    r = bind(L.einsum_p, *ops, subscripts=sub)
    if out is not None:
        out[...] = r
        return out
    return r
