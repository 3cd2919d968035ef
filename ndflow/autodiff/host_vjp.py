"""VJP rules on host buffers, for the backward pass of plain eager execution.

A primitive's VJP rule (`def_vjp`) is written with primitives so that it can be recorded,
traced and batched (higher-order gradients, gradients inside `nf.function`). When nothing
observes the backward pass (no other tape, no trace, no device scope or switch: the thread's
state is `fast`), every `bind` in the rule takes the eager fast path and simply calls the
primitives' kernels; the wrapping, dispatch and operator overhead around those calls is most of
the cost of a small backward pass. The rules here call the *same kernels in the same order* on
the NumPy buffers directly (the primitives' own `impl`s, NumPy's functions where the general
rule's operator calls them), so the gradients are the same bits; tests/test_host_vjp.py checks
each against the general rule, operand by operand, over shapes, broadcasting, dtypes and
special values.

A rule is `rule(ct, args, outs, params, needs, donated)`: `ct` the cotangent's buffer, `args`
and `outs` the tape's handles (their `_v` are host buffers, or shape-only stand-ins for values
the rule does not read), `needs` a bool per input, `donated` whether the rule may write into
`ct` (the eager plan decides it: it alone holds `ct`; only rules registered as taking donations
get True). It returns one buffer (or None) per input, or `NotImplemented` — before writing
anything — for a case it does not mirror (the plan then runs the general rule).
"""
import numpy as np

from ..core import dtypes as _dt
from ..primitives import elementwise as E, linalg as L, reduction as R, shape as S

_sum = R.reduce_sum_p.impl
_expand = S.expand_dims_p.impl
_broadcast = S.broadcast_to_p.impl
_transpose = S.transpose_p.impl
_matmul = L.matmul_p.impl
_select = E.select_p.impl
_zeros_like = E.zeros_like_p.impl
_ndarray = np.ndarray
_generic = np.generic


def unbroadcast(v, shape):
    """primitives.sums.unbroadcast on a buffer and a known shape (the same reductions)."""
    cs = v.shape
    if cs == shape:
        return v
    lead = len(cs) - len(shape)
    if lead:
        # (the reduce_sum kernel: np.add.reduce in x's dtype for an ndarray, without its frame)
        v = np.add.reduce(v, tuple(range(lead)), v.dtype, None, False) \
            if type(v) is _ndarray else _sum(v, axes=tuple(range(lead)), keepdims=False)
        cs = v.shape
        if cs == shape:
            return v
    ones = tuple(i for i, d in enumerate(shape) if d == 1 and cs[i] != 1)
    if ones:
        v = _sum(v, axes=ones, keepdims=True)
    return v


def owned_ok(v, *others):
    """primitives._util.owned_ok on buffers (the thread's state is fast here)."""
    if type(v) is not _ndarray or not v.flags.owndata or not v.flags.writeable:
        return False
    for ov in others:
        t = type(ov)
        if (t is not _ndarray and not isinstance(ov, _generic)) or ov.dtype != v.dtype:
            return False
        if ov.shape != v.shape and (len(ov.shape) > len(v.shape) or any(
                d != 1 and d != e for d, e in zip(ov.shape[::-1], v.shape[::-1]))):
            return False
    return True


_BOOL = np.dtype(np.bool_)
_INT = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32),
        8: np.dtype(np.int64)}


def keep_where(c, v):
    """select(c, v, zeros_like(v)) bit for bit (`v` where `c`, +0 elsewhere): for
    same-shape operands of a 1-8 byte dtype (contiguous when large), `v`'s bits as integers
    multiplied by `c` (x * 1 is x's bits, x * 0 is +0's; the select kernel's branch-free form
    takes four passes with a zero operand); the select kernel otherwise."""
    if (type(c) is _ndarray and type(v) is _ndarray and c.dtype == _BOOL
            and v.dtype.kind in "biuf" and c.shape == v.shape):
        it = _INT.get(v.dtype.itemsize)
        n = v.size
        block = 1 << 16
        if it is not None and n <= block:
            # (any layout: a same-size integer view of `v` is exact, the product is new)
            out = np.empty(v.shape, v.dtype)
            o = out.view(it)
            if n < 1024:
                np.multiply(v.view(it), c, out=o)
            else:
                # the mask cast to the integer type first: a plain cast and a one-type
                # multiply cost less than the multiply's mixed-type loop (~15% at 32K)
                o[...] = c                   # (np.copyto: the same, behind a Python frame)
                np.multiply(o, v.view(it), out=o)
            return out
        if it is not None and c.flags.c_contiguous and v.flags.c_contiguous:
            out = np.empty(v.shape, v.dtype)
            # large: the mask cast to the integer type in blocks that stay in cache (NumPy's
            # buffered casting loop is slower than a cast and a multiply there)
            cf = c.reshape(-1).view(np.int8)
            vf, of = v.reshape(-1).view(it), out.reshape(-1).view(it)
            for s in range(0, n, block):
                e = min(s + block, n)
                np.multiply(vf[s:e], cf[s:e].astype(it), out=of[s:e])
            return out
    return _select(c, v, _zeros_like(v))


# (unbroadcast(v, shape) returns v when the shapes are equal: the rules test that first, the
# common case, without the call)
def _add_rule(negate_y):
    """add's rule, or subtract's (y's cotangent negated before it is summed to y's shape, as
    the general rule does: the order matters for -0.0)."""
    def rule(ct, args, outs, p, needs, donated):
        gx = gy = None
        cs = ct.shape
        if needs[0]:
            s = args[0]._v.shape
            gx = ct if s == cs else unbroadcast(ct, s)
        if needs[1]:
            s = args[1]._v.shape
            gy = np.negative(ct) if negate_y else ct
            if s != cs:
                gy = unbroadcast(gy, s)
        return gx, gy
    return rule


_add = _add_rule(False)
_sub = _add_rule(True)


def _mul(ct, args, outs, p, needs, donated):
    a0, a1 = args
    x, y = a0._v, a1._v
    cs = ct.shape
    gx = None
    if needs[0]:
        gx = np.multiply(ct, y)
        if x.shape != cs:
            gx = unbroadcast(gx, x.shape)
        if y is x and a0._tid == a1._tid:
            # x * x (square): ct * x is the same product for both operands; the tape adds the
            # two (never in place into one of them: they share the buffer)
            return gx, gx
    if not needs[1]:
        return gx, None
    if donated and owned_ok(ct, x):
        np.multiply(ct, x, out=ct)           # the last use of a donated cotangent
        gy = ct
    else:
        gy = np.multiply(ct, x)
    return gx, gy if y.shape == cs else unbroadcast(gy, y.shape)


def _neg(ct, args, outs, p, needs, donated):
    if donated and owned_ok(ct):
        np.negative(ct, out=ct)
        return (ct,)
    return (np.negative(ct),)


def _exp(ct, args, outs, p, needs, donated):
    out = outs[0]._v                         # (exp's rule reads its output: ct * out)
    if donated and owned_ok(ct, out):
        np.multiply(ct, out, out=ct)
        return (ct,)
    return (np.multiply(ct, out),)


def _div(ct, args, outs, p, needs, donated):
    """q = ct / y; x's cotangent q, y's -q * x / y (in q's buffer where q is the rule's own,
    as the general rule does: the same operations in the same order)."""
    x, y = args[0]._v, args[1]._v
    if donated and owned_ok(ct, y):
        q = np.true_divide(ct, y, out=ct)
    else:
        q = np.true_divide(ct, y)
    gx = gy = None
    if needs[0]:
        gx = q if q.shape == x.shape else unbroadcast(q, x.shape)
        if needs[1]:
            gy = np.true_divide(np.multiply(np.negative(q), x), y)
    elif needs[1]:
        if owned_ok(q, x) and owned_ok(q, y):
            np.negative(q, out=q)
            np.multiply(q, x, out=q)
            gy = np.true_divide(q, y, out=q)
        else:
            gy = np.true_divide(np.multiply(np.negative(q), x), y)
    if gy is not None and gy.shape != y.shape:
        gy = unbroadcast(gy, y.shape)
    return gx, gy


def _minmax(pick):
    def rule(ct, args, outs, p, needs, donated):
        x, y = args[0]._v, args[1]._v
        xs = pick(x, y)
        eq = np.equal(x, y)
        gx = gy = None
        # (any tie: a bool argmax is a search for the first True, cheaper than any()'s
        # reduction; an empty comparison has no tie)
        if type(eq) is _ndarray and not (eq.size and eq.item(eq.argmax())):
            if needs[0]:
                gx = keep_where(xs, ct)
                if gx.shape != x.shape:
                    gx = unbroadcast(gx, x.shape)
            if needs[1]:
                gy = unbroadcast(_select(xs, _zeros_like(ct), ct), y.shape)
            return gx, gy
        zero = _zeros_like(ct)
        if ct.dtype == _dt.BFLOAT16:
            return NotImplemented     # (`ct * 0.5` keeps bfloat16 through the NumPy layer)
        half = np.multiply(ct, 0.5)
        if needs[0]:
            gx = unbroadcast(_select(xs, ct, _select(eq, half, zero)), x.shape)
        if needs[1]:
            gy = unbroadcast(_select(xs, zero, _select(eq, half, ct)), y.shape)
        return gx, gy
    return rule


def _matmul_rule(ct, args, outs, p, needs, donated):
    x, y = args[0]._v, args[1]._v
    n, m = x.ndim, y.ndim
    if n == 1 or m == 1:
        return NotImplemented
    gx = gy = None
    # the transpose kernel's view (np.transpose is the method behind a Python wrapper); BLAS
    # takes it as a flag, no copy
    if needs[0]:
        yt = y.T if m == 2 else y.transpose(tuple(range(m - 2)) + (m - 1, m - 2))
        gx = _matmul(ct, yt)
        if gx.shape != x.shape:
            gx = unbroadcast(gx, x.shape)
    if needs[1]:
        xt = x.T if n == 2 else x.transpose(tuple(range(n - 2)) + (n - 1, n - 2))
        gy = _matmul(xt, ct)
        if gy.shape != y.shape:
            gy = unbroadcast(gy, y.shape)
    return gx, gy


def broadcast(v, shape):
    """The broadcast_to kernel's view (read-only, the same values), built directly for a
    C-contiguous array (np.broadcast_to's Python checks cost more than the backward step of a
    small loss); the kernel itself otherwise, and for shapes that do not broadcast (its
    error)."""
    n = len(shape)
    if type(v) is _ndarray and v.ndim <= n and v.flags.c_contiguous:
        lead = n - v.ndim
        strides = [0] * lead
        for d, s, st in zip(v.shape, shape[lead:], v.strides):
            if d == s:
                strides.append(st)
            elif d == 1:
                strides.append(0)
            else:
                break
        else:
            r = _ndarray(shape, v.dtype, v, 0, tuple(strides))
            r.flags.writeable = False
            return r
    return _broadcast(v, shape=shape)


def _reduce_sum(ct, args, outs, p, needs, donated):
    axes = p["axes"]
    shape = args[0]._v.shape
    if shape and type(ct) is _ndarray and not ct.shape:
        # a whole-array reduction's 0-d cotangent: the broadcast_to kernel's view of it (every
        # stride 0), built directly
        r = _ndarray(shape, ct.dtype, ct, 0, (0,) * len(shape))
        r.flags.writeable = False
        return (r,)
    if not p["keepdims"] and axes:
        if type(ct) is _ndarray:
            # the expand_dims kernel's view: the reduced axes back as ones
            ct = ct.reshape(tuple([1 if i in axes else d for i, d in enumerate(shape)]))
        else:
            ct = _expand(ct, axes=tuple(sorted(axes)))
    if ct.shape != shape:
        ct = broadcast(ct, shape)
    return (ct,)


def _select_rule(ct, args, outs, p, needs, donated):
    c = args[0]._v
    zero = _zeros_like(ct)
    return (None,
            unbroadcast(_select(c, ct, zero), args[1]._v.shape) if needs[1] else None,
            unbroadcast(_select(c, zero, ct), args[2]._v.shape) if needs[2] else None)


def twice(x):
    """The gradient of sum(x * x) (a square under a sum) from a seed of exactly one, as a
    cached schedule runs the two records together (eager_schedule.py): x + x. The general
    rules give (1 * x) + (1 * x) -- the sum's rule broadcasts the seed, multiply's takes
    ct * x for both operands, the tape adds the two -- and for a real floating x, 1 * x is x's
    bits (signed zeros, infinities, NaN payloads: a signaling NaN comes out of either sum
    quiet), so the broadcast and the product are left out."""
    return np.add(x, x)


# primitive -> (the rule here, the general rule it mirrors, whether it takes donations): a
# primitive whose VJP rule was replaced since (def_vjp again, a test's spy) runs its own rule
RULES = {p: (r, p.vjp, donates) for p, r, donates in (
    (E.add_p, _add, False),
    (E.sub_p, _sub, False),
    (E.mul_p, _mul, True),
    (E.div_p, _div, True),
    (E.neg_p, _neg, True),
    (E.exp_p, _exp, True),
    (E.max_p, _minmax(np.greater), False),
    (E.min_p, _minmax(np.less), False),
    (E.select_p, _select_rule, False),
    (L.matmul_p, _matmul_rule, False),
    (R.reduce_sum_p, _reduce_sum, False),
)}
