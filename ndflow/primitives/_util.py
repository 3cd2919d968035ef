"""Shared helpers for rules: shapes with unknown (None) sizes, undoing broadcasting, batch axes."""
import operator

import numpy as np

from ..core.primitive import Aval, bind
from ..core import dispatch as _door
from .scalar import Scalar
# (the helpers that bind primitives import elementwise, reduction and shape inside themselves:
# those modules' rules are built on these helpers, a cycle that only registering the rules
# above the primitive definitions would break; tests/test_layers.py FUNCTION_LEVEL)


def elementwise(p, scalar=None, operands=("x", "y")):
    """Declare `p` elementwise (`Primitive.elementwise`: fusion may put it into any fused
    region) and, where it has one, its scalar expression (`primitives/scalar.py`), over the
    operand names `operands`: "exp(x)", "x * y", "where(c, x, y)" with ("c", "x", "y")."""
    p.elementwise = True
    p.scalar = None if scalar is None else Scalar(scalar, operands)
    return p


def broadcast_shapes(*shapes, what="operands"):
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        dims = [s[len(s) - nd + i] for s in shapes if len(s) - nd + i >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError("%s could not be broadcast together with shapes %s" % (
                what, " ".join(str(tuple(s)).replace(" ", "") for s in shapes)))
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def norm_axis(axis, ndim, name="axis"):
    # a 0-d array has no axes: NumPy's legacy acceptance of axis 0 / -1 there is per function
    # (reductions, argmax, cumsum, argsort... but not mean, sort or flip): see `legacy_0d`
    # (operator.index: a float, a string or a NumPy bool is NumPy's TypeError, not truncated)
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        from numpy.exceptions import AxisError
        raise AxisError(axis, ndim)
    return axis % ndim


def legacy_0d(axis, ndim):
    """Whether NumPy's legacy 0-d rule applies: the functions that follow it (ufunc reductions
    and the C functions taking one axis: argmax, argsort, cumsum, argpartition, squeeze ...)
    accept the integer axis 0 or -1 on a 0-d array as if it were axis=None. A tuple of axes is
    not accepted, nor any other axis."""
    if ndim != 0 or axis is None or isinstance(axis, (tuple, list, bool, np.bool_)):
        return False
    try:
        return int(axis) in (0, -1)
    except TypeError:
        return False


def c_axis(axis):
    """An axis NumPy's C functions take (ufunc reductions, cumsum, argsort, take, concatenate,
    repeat ...): an integer (anything with __index__), a Python bool being their TypeError
    (Python-level functions, `normalize_axis_index`, take it as 0 or 1)."""
    if isinstance(axis, bool):
        raise TypeError("'bool' object cannot be interpreted as an integer axis")
    return operator.index(axis)


def norm_axes(axis, ndim, allow_0d_legacy=False, ufunc=False):
    """The axes as a tuple of non-negative ints. `ufunc`: NumPy's ufunc reductions' parsing
    (an integer or a tuple of integers; a list, a 1-d array or a bool is a TypeError); else
    `normalize_axis_tuple`'s (an integer or any sequence of integers)."""
    if axis is None or (allow_0d_legacy and legacy_0d(axis, ndim)):
        return tuple(range(ndim))
    if ufunc:
        axis = tuple(c_axis(a) for a in axis) if isinstance(axis, tuple) else (c_axis(axis),)
    elif not isinstance(axis, (tuple, list)):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            axis = tuple(axis)      # (not iterable: NumPy's TypeError too)
    out = tuple(norm_axis(a, ndim) for a in axis)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return out


def unbroadcast(ct, like):
    """Sum `ct` down to the shape of `like` (the primal, or a shape): undo NumPy broadcasting.
    The one place this happens. Where a size is unknown while tracing, whether it was
    broadcast (a 1 at run time) is decided at run time (`sum_to`)."""
    if ct is None:
        return None
    shape = tuple(like) if isinstance(like, (tuple, list)) else tuple(like.shape)
    cs = tuple(ct.shape)
    if cs == shape and None not in shape:
        return ct                     # (the common case, first)
    if len(cs) >= len(shape) and any(d is None and c != 1
                                     for d, c in zip(shape, cs[len(cs) - len(shape):])):
        if isinstance(like, (tuple, list)):
            raise NotImplementedError("unbroadcast to a shape with unknown sizes needs the array")
        from .reduction import sum_to_p
        return bind(sum_to_p, ct, like)
    if cs == shape:
        return ct
    from .reduction import reduce_sum_p
    lead = len(cs) - len(shape)
    if lead:
        ct = bind(reduce_sum_p, ct, axes=tuple(range(lead)), keepdims=False)
        cs = ct.shape
    ones = tuple(i for i, d in enumerate(shape) if d == 1 and cs[i] != 1)
    if ones:
        ct = bind(reduce_sum_p, ct, axes=ones, keepdims=True)
    return ct


def move_to_front(x, bd):
    if bd is None or bd == 0:
        return x
    from .shape import moveaxis
    return moveaxis(x, bd, 0)


# ------------------------------------------------------------------ squeezed batched values
# A batched value whose per-example shape has unit axes may leave them out: its batch axis is
# then `(0, U)`, the batch axis first and `U` the per-example positions of the unit axes that
# the value does not hold. Per-example code works on rows, `expand_dims(x, 0)` (1, k) @ w:
# batched, those unit axes cost a reshape around every product and elementwise op, and each is
# a node of a compiled graph. Rules marked `squeezed_ok` take such values (elementwise ops,
# products, the unit-axis shape ops); every other rule gets them with the unit axes back
# (vectorize.batching.BatchTrace.process).

def squeezed_ok(rule):
    """Mark a batching rule as taking squeezed values (axis `(0, U)`)."""
    rule.squeezed_ok = True
    return rule


def example_rank(x, ax):
    """The rank of one example of `x` (batched along `ax`, or unbatched: None)."""
    if ax is None:
        return x.ndim
    if isinstance(ax, tuple):
        return x.ndim - 1 + len(ax[1])
    return x.ndim - 1


def unsqueeze(x, ax):
    """(value, batch axis) with the unit axes of a squeezed value back: the ordinary layout."""
    if not isinstance(ax, tuple):
        return x, ax
    units = ax[1]
    shape = list(x.shape)
    for u in units:
        shape.insert(u + 1, 1)
    if None in shape:
        from .shape import expand_dims_p
        return bind(expand_dims_p, x, axes=tuple(u + 1 for u in units)), 0
    from .shape import reshape_p
    return bind(reshape_p, x, shape=tuple(shape)), 0


def unsqueeze_all(args, axes):
    pairs = [unsqueeze(a, ax) for a, ax in zip(args, axes)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def squeezed_axis(units):
    """The batch axis of a value with the unit axes `units` left out (0 when there are none)."""
    return (0, tuple(units)) if units else 0


def to_squeezed(args, axes):
    """The operands of an elementwise op in the squeezed layout of its squeezed operands, or
    None where they have no common one (then the rule works on the ordinary layout). Other
    operands lose their unit axes at those positions with a reshape (unbatched constants fold);
    an operand that is not 1 there (a broadcast along a unit axis) keeps the ordinary layout."""
    units = rank = None
    for a, ax in zip(args, axes):
        if isinstance(ax, tuple):
            r = example_rank(a, ax)
            if units is None:
                units, rank = ax[1], r
            elif ax[1] != units or r != rank:
                return None
    if units is None:
        return None
    from .shape import reshape_p
    out = []
    for a, ax in zip(args, axes):
        if isinstance(ax, tuple):
            out.append(a)
            continue
        if ax is not None:
            a = move_to_front(a, ax)
        own = tuple(a.shape[1:]) if ax is not None else tuple(a.shape)
        lead = rank - len(own)
        if lead < 0:
            return None
        drop = [u - lead for u in units if u >= lead]
        if any(own[d] != 1 for d in drop):
            return None
        if ax is None:
            if drop:
                keep = tuple(d for i, d in enumerate(own) if i not in drop)
                if None in keep:
                    return None
                a = bind(reshape_p, a, shape=keep)
            out.append(a)
            continue
        # a batched operand: its aligned example shape without the unit positions
        keep = (a.shape[0],) + tuple(d for i, d in enumerate((1,) * lead + own)
                                     if i not in units)
        if keep != tuple(a.shape):
            if None in keep:
                return None
            a = bind(reshape_p, a, shape=keep)
        out.append(a)
    return out, (0, tuple(units))


def align_batched(args, axes):
    """Move every batch axis to 0 and give batched operands the same per-example rank, so that
    NumPy broadcasting of the inner values matches per-example broadcasting."""
    from .shape import expand_dims_p
    rank = max(a.ndim - (bd is not None) for a, bd in zip(args, axes))
    out = []
    for a, bd in zip(args, axes):
        if bd is None:
            out.append(a)
            continue
        a = move_to_front(a, bd)
        missing = rank - (a.ndim - 1)
        if missing:
            a = bind(expand_dims_p, a, axes=tuple(range(1, 1 + missing)))
        out.append(a)
    return out


def same_aval(x):
    return Aval(x.shape, x.dtype)


def repeat_along_batch(x, args, dims):
    """The unbatched `x` given a leading batch axis as long as the batched operands' one, also
    when that length is only known at run time (vectorized_map inside nf.function with a None
    batch size): then zeros shaped (b, 1, ..., 1) taken from a batched operand are added."""
    from .shape import broadcast_to_p, expand_dims_p
    ref, rbd = next((a, bd) for a, bd in zip(args, dims) if bd is not None)
    b = ref.shape[rbd]
    xe = bind(expand_dims_p, x, axes=(0,))
    if b is not None and None not in tuple(x.shape):
        return bind(broadcast_to_p, xe, shape=(b,) + tuple(x.shape))
    from .reduction import reduce_sum_p
    from .elementwise import zeros_like_p, add_p, convert_p
    r = move_to_front(ref, rbd)
    z = bind(zeros_like_p, r)
    if r.ndim > 1:
        z = bind(reduce_sum_p, z, axes=tuple(range(1, r.ndim)), keepdims=False)
    if z.dtype != x.dtype:
        z = bind(convert_p, z, dtype=x.dtype)
    if x.ndim:
        z = bind(expand_dims_p, z, axes=tuple(range(1, 1 + x.ndim)))
    return bind(add_p, z, xe)


def owned_apply(ufunc, a, *others):
    """`ufunc(a, *others)` written into `a`'s buffer, for a VJP rule that owns `a` outright (a
    temporary the rule itself just made; a cotangent it was given is never its own): the kernel
    and the values of binding the primitive, without a new array, so a backward pass over large
    arrays holds fewer of them at once. Only in plain eager execution (nothing records or
    traces the rule) and where the result has `a`'s shape and dtype; otherwise None (and
    nothing written), and the rule binds as usual."""
    if not owned_ok(a, *others):
        return None
    ufunc(a._v, *[o._v for o in others], out=a._v)
    return a


def owned_ok(a, *others):
    """Whether `owned_apply` can write `a` op `others` into `a` (see there)."""
    if not _door.plain():
        return False
    v = a._v
    if (type(v) is not np.ndarray or a._dev is not None or a._t is not None
            or not v.flags.owndata or not v.flags.writeable):
        return False
    for o in others:
        ov = getattr(o, "_v", None)
        if (ov is None or o._dev is not None or o._t is not None
                or type(ov) not in (np.ndarray, np.generic) or ov.dtype != v.dtype):
            return False
        if ov.shape != v.shape and (len(ov.shape) > len(v.shape) or any(
                d != 1 and d != e for d, e in zip(ov.shape[::-1], v.shape[::-1]))):
            return False
    return True
