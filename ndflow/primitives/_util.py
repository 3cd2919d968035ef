"""Shared helpers for rules that bind no primitive: shapes with unknown (None) sizes, axes,
squeezed batch axes, writing into owned buffers. (The rule helpers that bind primitives live
beside them: `unbroadcast` and `repeat_along_batch` in sums.py, the batching helpers
`move_to_front`, `unsqueeze`, `align_batched` ... in shape.py.)"""
import operator

import numpy as np

from ..core.primitive import Aval
from ..core import dispatch as _door
from .scalar import Scalar


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


def squeezed_axis(units):
    """The batch axis of a value with the unit axes `units` left out (0 when there are none)."""
    return (0, tuple(units)) if units else 0


def same_aval(x):
    return Aval(x.shape, x.dtype)


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


def numpy_or(call, fallback, *arrays, when=True):
    """`call()` (a kernel written with NumPy's signature), or, where a device library that
    implements part of it (CuPy) refuses with a TypeError, `fallback()`: the same value by
    other means. On NumPy arrays, or when `when` is false (the case the fallback does not
    compute), the TypeError is the kernel's own and is raised."""
    try:
        return call()
    except TypeError:
        if not when or all(isinstance(a, (np.ndarray, np.generic)) for a in arrays):
            raise
    return fallback()
