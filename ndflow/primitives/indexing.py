"""Indexing primitives: gather (x[idx]), scatter-update (x[idx] = v) and scatter-add; and the
primitives whose rules gather and scatter: concatenate (and split_like, its gradient with sizes
known only at run time), diagonal, repeat with traced counts.

An index is split into a static, hashable `spec` and the integer index arrays (inputs, so they
can be traced and batched). Boolean masks are turned into integer arrays by the NumPy layer
(`nonzero`) before they get here, exactly as NumPy defines them. Spec entries:
  ('s', start, stop, step)   a slice          ('i', k)   an integer
  ('n',)                     np.newaxis       ('e',)     Ellipsis
  ('a',)                     the next index array input
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import broadcast_shapes
from .sums import unbroadcast, repeat_along_batch
from ..core.dtypes import I64
from .elementwise import zeros_like_p, eq_p, select_p, ones_like_p, convert_p, add_p
from .shape import reshape_p, reshape_like_p, expand_dims_p, transpose_p, broadcast_to_p, \
    squeeze_p, move_to_front


def build_index(spec, arrays):
    it = iter(arrays)
    out = []
    for e in spec:
        k = e[0]
        if k == "s":
            out.append(slice(e[1], e[2], e[3]))
        elif k == "i":
            out.append(e[1])
        elif k == "a":
            out.append(next(it))
        elif k == "n":
            out.append(None)
        else:
            out.append(Ellipsis)
    return tuple(out)


def _getitem_abstract(x, *arrays, spec):
    """NumPy's indexing shape rules, computed (not probed: an unknown size, as from a boolean
    mask, or a large gather must not allocate anything while tracing)."""
    shape = tuple(x.shape)
    used = sum(1 for e in spec if e[0] in "sia")
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{used} were indexed")
    entries, seen = [], False
    for e in spec:
        if e[0] == "e":
            if not seen:
                entries.extend([("s", None, None, None)] * (len(shape) - used))
            seen = True
        else:
            entries.append(e)
    if not seen:
        entries.extend([("s", None, None, None)] * (len(shape) - used))
    has_arrays = any(e[0] == "a" for e in entries)
    it = iter(arrays)
    out, adv, adv_shapes, dim = [], [], [], 0
    for e in entries:
        k = e[0]
        if k == "n":
            out.append(1)
            continue
        d = shape[dim]
        if k == "s":
            if e[1] is None and e[2] is None and e[3] in (None, 1):
                out.append(d)
            elif d is None:
                out.append(None)
            else:
                out.append(len(range(*slice(e[1], e[2], e[3]).indices(d))))
        elif k == "i":
            if d is not None and not -d <= e[1] < d:
                raise IndexError(f"index {e[1]} is out of bounds for axis {dim} with size {d}")
            if has_arrays:       # with index arrays, integers are advanced indices too
                adv.append(len(out))
                out.append(None)
                adv_shapes.append(())
        else:
            adv.append(len(out))
            out.append(None)
            adv_shapes.append(tuple(next(it).shape))
        dim += 1
    if not adv:
        return Aval(out, x.dtype)
    try:
        block = list(broadcast_shapes(*adv_shapes))
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with "
                         "shapes " + " ".join(str(s).replace(" ", "") for s in adv_shapes)) from None
    rest = [d for i, d in enumerate(out) if i not in adv]
    if adv == list(range(adv[0], adv[0] + len(adv))):   # adjacent: the block stays in place
        return Aval(rest[:adv[0]] + block + rest[adv[0]:], x.dtype)
    return Aval(block + rest, x.dtype)                    # else NumPy puts it first


# id(spec) -> (spec, its index tuple) for specs without index arrays: a compiled graph passes
# the same spec object at every call, so its index is built once. Keyed by identity, not
# equality: ('i', True) == ('i', 1), but x[True] is not x[1]; the entry holds the spec, so
# its id is not reused while cached (at most 256 entries: eager calls bring new specs)
_BASIC = {}


def _getitem_impl(x, *arrays, spec):
    if not arrays:
        e = _BASIC.get(id(spec))
        if e is not None and e[0] is spec:
            return x[e[1]]
        idx = build_index(spec, ())
        if len(_BASIC) >= 256:      # eager calls make a new spec each time: start over
            _BASIC.clear()
        _BASIC[id(spec)] = (spec, idx)
        return x[idx]
    if len(arrays) == 1 and spec[-1] == ("a",) and arrays[0].dtype != np.bool_ and \
            all(e == _ALL for e in spec[:-1]):
        # one index array along one axis: np.take is the same gather, and much faster than
        # fancy indexing when the axis is not the first
        return np.take(x, arrays[0], axis=len(spec) - 1)
    return x[build_index(spec, arrays)]


_ALL = ("s", None, None, None)


def _getitem_specialize(n_inputs, spec):
    """For generated code (graph/codegen): a basic index (no index arrays) as the expression
    `x[index]` with its index tuple built once, which is what `_getitem_impl` computes."""
    if n_inputs != 1 or any(e[0] == "a" for e in spec):
        return None
    return "{0}[{index}]", {"index": build_index(spec, ())}


_getitem_impl.ndflow_specialize = _getitem_specialize


def _getitem_vjp(ct, x, *arrays, spec):
    return (bind(index_add_p, bind(zeros_like_p, x), ct, *arrays, spec=spec),) + (None,) * len(arrays)


getitem_p = Primitive("getitem", _getitem_impl, _getitem_abstract, returns_view=True)
getitem_p.def_vjp(_getitem_vjp)


def _index_add_impl(x, v, *arrays, spec):
    out = x.copy()
    idx = build_index(spec, arrays)
    if arrays:
        np.add.at(out, idx, v)
    else:
        out[idx] += v
    return out


def _index_update_impl(x, v, *arrays, spec):
    out = np.copy(x)         # np.copy dispatches: a device buffer is copied on its device
    out[build_index(spec, arrays)] = v
    return out


def _scatter_abstract(x, v, *arrays, spec):
    return Aval(x.shape, x.dtype)


index_add_p = Primitive("index_add", _index_add_impl, _scatter_abstract)
index_add_p.def_vjp(lambda ct, x, v, *arrays, spec: (
    ct, unbroadcast(bind(getitem_p, ct, *arrays, spec=spec), v)) + (None,) * len(arrays))

index_update_p = Primitive("index_update", _index_update_impl, _scatter_abstract)


def _index_update_vjp(ct, x, v, *arrays, spec):
    """x gets ct where nothing was written; v gets ct where it was written and kept: with
    repeated positions the last write wins (as in NumPy), so earlier ones get no gradient."""
    picked = bind(getitem_p, ct, *arrays, spec=spec)
    zero = bind(zeros_like_p, picked)
    gx = bind(index_update_p, ct, zero, *arrays, spec=spec)
    if arrays:
        ones = bind(convert_p, bind(ones_like_p, picked), dtype=I64)
        flat = bind(reshape_p, ones, shape=(-1,))
        ids = bind(reshape_like_p, bind(reshape_p, bind(iota_p, flat, axis=0), shape=(-1,)),
                   ones) + 1
        slots = bind(convert_p, bind(zeros_like_p, x), dtype=I64)
        last = bind(getitem_p, bind(index_update_p, slots, ids, *arrays, spec=spec), *arrays,
                    spec=spec)
        picked = bind(select_p, bind(eq_p, last, ids), picked, zero)
    return (gx, unbroadcast(picked, v)) + (None,) * len(arrays)


index_update_p.def_vjp(_index_update_vjp)


def getitem(x, index):
    """x[index] for static (Python) indices only; used by rules."""
    spec = tuple(("s", i.start, i.stop, i.step) if isinstance(i, slice) else
                 ("n",) if i is None else ("e",) if i is Ellipsis else ("i", int(i)) for i in index)
    return bind(getitem_p, x, spec=spec)


# ------------------------------------------------------------------ batching
def _expand_ellipsis(spec, ndim):
    used = sum(1 for e in spec if e[0] in "sia")
    out = []
    seen = False
    for e in spec:
        if e[0] == "e":
            if not seen:
                out.extend([("s", None, None, None)] * (ndim - used))
            seen = True
        else:
            out.append(e)
    if not seen:
        out.extend([("s", None, None, None)] * (ndim - used))
    return out


def _batched_index(x_shape_per, spec, arrays, arr_axes, xb):
    """Rewrite a per-example index for the batched operand (batch axis 0): returns the new spec,
    the new arrays and the permutation taking NumPy's batched result to (batch, per-example)."""
    spec = _expand_ellipsis(spec, len(x_shape_per))
    has_arrays = any(e[0] == "a" for e in spec)
    if not has_arrays:
        return [("s", None, None, None)] + spec, list(arrays), None
    rank = max((a.ndim - (bd is not None) for a, bd in zip(arrays, arr_axes)), default=0)
    new_arrays = []
    for a, bd in zip(arrays, arr_axes):
        if bd is not None:
            a = move_to_front(a, bd)
            missing = rank - (a.ndim - 1)
            if missing:
                a = bind(expand_dims_p, a, axes=tuple(range(1, 1 + missing)))
        new_arrays.append(a)
    # the batch indices, from the batched operand itself: its device, and its size even when
    # that is unknown while tracing
    ar = bind(reshape_p, bind(iota_p, xb, axis=0), shape=(-1,) + (1,) * rank)
    adv = [i for i, e in enumerate(spec) if e[0] in "ai"]
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    perm = None
    if adjacent and adv[0] > 0:
        # NumPy puts the (now non-adjacent) advanced dims first; per example they sit in place
        n_before = sum(1 for e in spec[:adv[0]] if e[0] in "sn")
        n_after_total = None  # computed by caller from result rank
        perm = ("move", rank, n_before)
    return [("a",)] + spec, [ar] + new_arrays, perm


def _apply_perm(r, perm):
    if perm is None:
        return r
    _, rank, n_before = perm
    nd = r.ndim
    bc = list(range(1, 1 + rank))
    before = list(range(1 + rank, 1 + rank + n_before))
    rest = list(range(1 + rank + n_before, nd))
    return bind(transpose_p, r, perm=tuple([0] + before + bc + rest))


def _invert_perm(v, perm):
    if perm is None:
        return v
    _, rank, n_before = perm
    nd = v.ndim
    fwd = [0] + list(range(1 + rank, 1 + rank + n_before)) + list(range(1, 1 + rank)) + \
        list(range(1 + rank + n_before, nd))
    return bind(transpose_p, v, perm=tuple(np.argsort(fwd).tolist()))


def _to_batched_operand(x, bd, args, dims):
    if bd is None:
        return repeat_along_batch(x, args, dims)
    return move_to_front(x, bd)


def _axis_size(args, axes):
    return next(a.shape[bd] for a, bd in zip(args, axes) if bd is not None)


def _getitem_batch(args, axes, spec):
    x, arrays = args[0], args[1:]
    per_shape = [d for i, d in enumerate(x.shape) if i != axes[0]] if axes[0] is not None else list(x.shape)
    xb = _to_batched_operand(x, axes[0], args, axes) if axes[0] is not None or any(
        a is not None for a in axes[1:]) else x
    new_spec, new_arrays, perm = _batched_index(per_shape, spec, arrays, axes[1:], xb)
    r = bind(getitem_p, xb, *new_arrays, spec=tuple(new_spec))
    return _apply_perm(r, perm), 0


getitem_p.batch = _getitem_batch


def _scatter_batch(prim):
    def rule(args, axes, spec):
        x, v, arrays = args[0], args[1], args[2:]
        b = _axis_size(args, axes)
        per_shape = [d for i, d in enumerate(x.shape) if i != axes[0]] if axes[0] is not None else list(x.shape)
        xb = _to_batched_operand(x, axes[0], args, axes)
        new_spec, new_arrays, perm = _batched_index(per_shape, spec, arrays, axes[2:], xb)
        # the per-example indexed shape, batch first, then NumPy's layout of the batched result
        per_result = _getitem_abstract(
            Aval(per_shape, x.dtype), *[Aval([d for i, d in enumerate(a.shape) if i != bd]
                                            if bd is not None else a.shape, a.dtype)
                                       for a, bd in zip(arrays, axes[2:])], spec=spec).shape
        if b is None or None in tuple(per_result):
            return bind(prim, xb, _dynamic_values(xb, v, axes[1], per_result, new_arrays,
                                                  new_spec, perm),
                        *new_arrays, spec=tuple(new_spec)), 0
        if axes[1] is None:
            vb = bind(broadcast_to_p, v, shape=tuple(per_result))
            vb = bind(broadcast_to_p, bind(expand_dims_p, vb, axes=(0,)), shape=(b,) + tuple(per_result))
        else:
            vb = move_to_front(v, axes[1])
            missing = len(per_result) - (vb.ndim - 1)
            if missing:
                vb = bind(expand_dims_p, vb, axes=tuple(range(1, 1 + missing)))
            vb = bind(broadcast_to_p, vb, shape=(b,) + tuple(per_result))
        vb = _invert_perm(vb, perm)
        return bind(prim, xb, vb, *new_arrays, spec=tuple(new_spec)), 0
    return rule


def _dynamic_values(xb, v, vbd, per_result, arrays, spec, perm):
    """The written values in the batched result's layout when sizes are known only at run time:
    arranged (batch, per-example dims) with size-1 gaps, permuted to NumPy's layout, then
    broadcast by adding zeros shaped like the gathered region."""
    if vbd is None:
        v = bind(expand_dims_p, v, axes=(0,))
    else:
        v = move_to_front(v, vbd)
    missing = len(per_result) - (v.ndim - 1)
    if missing:
        v = bind(expand_dims_p, v, axes=tuple(range(1, 1 + missing)))
    v = _invert_perm(v, perm)
    region = bind(getitem_p, xb, *arrays, spec=tuple(spec))
    return bind(add_p, bind(zeros_like_p, region), v)


index_add_p.batch = _scatter_batch(index_add_p)
index_update_p.batch = _scatter_batch(index_update_p)


# ------------------------------------------------------------------ iota (an arange of any size)
def _iota_abstract(x, axis):
    return Aval(tuple(d if i == axis else 1 for i, d in enumerate(x.shape)), I64)


def _iota_impl(x, axis):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    # like=x: on x's device (NumPy's dispatch hands it to a device array's module)
    like = None if isinstance(x, np.generic) else x
    return np.arange(x.shape[axis], dtype=np.int64, like=like).reshape(shape)


def _iota_batch(args, axes, axis):
    """The same for every example: unbatched."""
    x = move_to_front(args[0], axes[0])
    return bind(squeeze_p, bind(iota_p, x, axis=axis + 1), axes=(0,)), None


# arange(x.shape[axis]) shaped to broadcast against x: the indices along an axis whose size may
# be unknown while tracing (take_along_axis under an input_signature with None)
iota_p = Primitive("iota", _iota_impl, _iota_abstract)
iota_p.def_vjp(lambda ct, x, axis: (None,))
iota_p.batch = _iota_batch


# ------------------------------------------------------------------ nonzero (data-dependent size)
def _nonzero_abstract(x, *like, start=0):
    return tuple(Aval((None,), I64) for _ in range(max(len(x.shape), 1)))


def _nonzero_impl(x, *like, start=0):
    if like:
        # a boolean mask indexing axes start.. of `like`, whose sizes were unknown while
        # tracing: NumPy's check, at run time (not of a mask axis of size 0, as NumPy)
        for j, m in enumerate(np.shape(x)):
            d = like[0].shape[start + j]
            if d != m and m != 0:
                raise IndexError(f"boolean index did not match indexed array along axis "
                                 f"{start + j}; size of axis is {d} but size of corresponding "
                                 f"boolean axis is {m}")
    return np.nonzero(np.atleast_1d(x))


def _nonzero_batch(args, axes, start=0):
    raise ValueError("nonzero / boolean-mask indexing inside vectorized_map: the number of "
                     "selected elements can differ between examples, so the result has no "
                     "fixed shape. Use tnp.where(mask, x, 0) or a masked reduction instead.")


# nonzero(mask[, like], start=k): with `like`, the mask must match like's axes k.. in size
nonzero_p = Primitive("nonzero", _nonzero_impl, _nonzero_abstract, multiple_results=True)
nonzero_p.def_vjp(lambda ct, x, *like, start=0: (None,) * (1 + len(like)))
nonzero_p.batch = _nonzero_batch


# ------------------------------------------------------------------ slices with run-time bounds
# x[start:stop:step] along `axis`, where some of start/stop/step are operands (computed when the
# graph runs); `parts` says for each of them: ("c", value or None) given now, ("d",) the next
# operand. NumPy's slice semantics (negative and out-of-range bounds) at run time.
def _dyn_slice(parts, ops):
    it = iter(ops)
    vals = [int(next(it)) if p[0] == "d" else p[1] for p in parts]
    return slice(*vals)


def _slice_dynamic_impl(x, *ops, axis, parts):
    return x[(slice(None),) * axis + (_dyn_slice(parts, ops),)]


def _slice_dynamic_abstract(x, *ops, axis, parts):
    shape = list(x.shape)
    shape[axis] = None
    return Aval(shape, x.dtype)


def _slice_dynamic_vjp(ct, x, *ops, axis, parts):
    return (bind(unslice_dynamic_p, ct, x, *ops, axis=axis, parts=parts),) + (None,) * len(ops)


def _slice_dynamic_batch(args, axes, axis, parts):
    if any(a is not None for a in axes[1:]):
        raise ValueError("slicing with bounds that differ between the examples of "
                         "vectorized_map: each example's result would have its own shape")
    x = move_to_front(args[0], axes[0])
    return bind(slice_dynamic_p, x, *args[1:], axis=axis + 1, parts=parts), 0


slice_dynamic_p = Primitive("slice_dynamic", _slice_dynamic_impl, _slice_dynamic_abstract,
                            returns_view=True)
slice_dynamic_p.def_vjp(_slice_dynamic_vjp)
slice_dynamic_p.batch = _slice_dynamic_batch


def _unslice_dynamic_impl(ct, x, *ops, axis, parts):
    out = np.zeros(np.shape(x), np.asarray(ct).dtype)
    out[(slice(None),) * axis + (_dyn_slice(parts, ops),)] = ct
    return out


def _unslice_dynamic_batch(args, axes, axis, parts):
    if any(a is not None for a in axes[2:]):
        raise ValueError("slicing with bounds that differ between the examples of "
                         "vectorized_map: each example's result would have its own shape")
    ct = move_to_front(args[0], axes[0]) if axes[0] is not None else repeat_along_batch(
        args[0], args, axes)
    x = move_to_front(args[1], axes[1]) if axes[1] is not None else repeat_along_batch(
        args[1], args, axes)
    return bind(unslice_dynamic_p, ct, x, *args[2:], axis=axis + 1, parts=parts), 0


# the gradient of slice_dynamic: `ct` written into zeros of x's shape at the slice
unslice_dynamic_p = Primitive("unslice_dynamic", _unslice_dynamic_impl,
                              lambda ct, x, *ops, axis, parts: Aval(x.shape, ct.dtype))
unslice_dynamic_p.def_vjp(lambda g, ct, x, *ops, axis, parts: (
    bind(slice_dynamic_p, g, *ops, axis=axis, parts=parts), None) + (None,) * len(ops))
unslice_dynamic_p.batch = _unslice_dynamic_batch


# x with its slice along `axis` replaced by v: a write through the view x[i:j] with run-time
# bounds reaching x (slice_dynamic's inverse for the mutation model, numpy/indexing.py)
def _update_slice_dynamic_impl(x, v, *ops, axis, parts):
    out = np.copy(x)
    out[(slice(None),) * axis + (_dyn_slice(parts, ops),)] = v
    return out


def _update_slice_dynamic_vjp(ct, x, v, *ops, axis, parts):
    gx = bind(update_slice_dynamic_p, ct, bind(zeros_like_p, v), *ops, axis=axis, parts=parts)
    gv = unbroadcast(bind(slice_dynamic_p, ct, *ops, axis=axis, parts=parts), v)
    return (gx, gv) + (None,) * len(ops)


def _update_slice_dynamic_batch(args, axes, axis, parts):
    if any(a is not None for a in axes[2:]):
        raise ValueError("slicing with bounds that differ between the examples of "
                         "vectorized_map: each example's result would have its own shape")
    x, v = (move_to_front(a, d) if d is not None else repeat_along_batch(a, args, axes)
            for a, d in zip(args[:2], axes[:2]))
    return bind(update_slice_dynamic_p, x, v, *args[2:], axis=axis + 1, parts=parts), 0


update_slice_dynamic_p = Primitive("update_slice_dynamic", _update_slice_dynamic_impl,
                                   lambda x, v, *ops, axis, parts: Aval(x.shape, x.dtype))
update_slice_dynamic_p.def_vjp(_update_slice_dynamic_vjp)
update_slice_dynamic_p.batch = _update_slice_dynamic_batch


# ------------------------------------------------------------------ concatenate
def _concat_abstract(*xs, axis):
    first = xs[0]
    for x in xs[1:]:
        if len(x.shape) != len(first.shape):
            raise ValueError(
                "all the input array dimensions except for the concatenation axis must match "
                f"exactly, but along dimension 0 ... ranks differ: {first.shape} vs {x.shape}")
        for i, (a, b) in enumerate(zip(first.shape, x.shape)):
            if i != axis and a is not None and b is not None and a != b:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must match "
                    f"exactly, but along dimension {i}, the array at index 0 has size {a} and "
                    f"another has size {b}")
    sizes = [x.shape[axis] for x in xs]
    out = list(first.shape)
    out[axis] = None if None in sizes else sum(sizes)
    return Aval(out, first.dtype)


def _concat_vjp(ct, *xs, axis):
    if any(x.shape[axis] is None for x in xs):    # sizes known at run time only
        return tuple(bind(split_like_p, ct, *xs, axis=axis))
    out, start = [], 0
    for x in xs:
        n = x.shape[axis]
        out.append(getitem(ct, (slice(None),) * axis + (slice(start, start + n),)))
        start += n
    return tuple(out)


def _concat_batch(args, axes, axis):
    moved = []
    for a, bd in zip(args, axes):
        if bd is None:
            a = repeat_along_batch(a, args, axes)
        else:
            a = move_to_front(a, bd)
        moved.append(a)
    return bind(concatenate_p, *moved, axis=axis + 1), 0


concatenate_p = Primitive("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
                          _concat_abstract)
concatenate_p.def_vjp(_concat_vjp)
concatenate_p.batch = _concat_batch


# ------------------------------------------------------------------ split_like (concatenate's
# gradient when the sizes are known only at run time): ct split along `axis` into pieces the
# sizes of the xs along `x_axis`
def _split_like_impl(ct, *xs, axis, x_axis=None):
    xa = axis if x_axis is None else x_axis
    return tuple(np.split(ct, np.cumsum([x.shape[xa] for x in xs])[:-1].tolist(), axis=axis))


def _split_like_abstract(ct, *xs, axis, x_axis=None):
    xa = axis if x_axis is None else x_axis
    return tuple(Aval(tuple(x.shape[xa] if i == axis else d for i, d in enumerate(ct.shape)),
                      ct.dtype) for x in xs)


def _split_like_batch(args, axes, axis, x_axis=None):
    xa = axis if x_axis is None else x_axis
    # only the per-example sizes of the xs matter: take one example of the batched ones
    xs = [x if bd is None else getitem(move_to_front(x, bd), (0,))
          for x, bd in zip(args[1:], axes[1:])]
    if axes[0] is None:
        return bind(split_like_p, args[0], *xs, axis=axis, x_axis=xa), None
    return bind(split_like_p, move_to_front(args[0], axes[0]), *xs, axis=axis + 1, x_axis=xa), 0


split_like_p = Primitive("split_like", _split_like_impl, _split_like_abstract,
                         multiple_results=True, returns_view=True)
split_like_p.def_vjp(lambda cts, ct, *xs, axis, x_axis=None: (
    bind(concatenate_p, *cts, axis=axis),) + (None,) * len(xs))
split_like_p.batch = _split_like_batch


# ------------------------------------------------------------------ diagonal
# The diagonal of the (axis1, axis2) planes, appended as the last axis (NumPy's layout). A
# primitive because its length, min of two sizes, is not expressible by slicing when the sizes
# are known only at run time; its gradient scatters into the diagonal by index arrays taken from
# the cotangent itself, so it needs no sizes either.
def _diag_len(n1, n2, offset):
    if n1 is None or n2 is None:
        return None
    return max(0, min(n1 - max(-offset, 0), n2 - max(offset, 0)))


def _diagonal_abstract(x, offset, axis1, axis2):
    rest = [d for i, d in enumerate(x.shape) if i not in (axis1, axis2)]
    return Aval(rest + [_diag_len(x.shape[axis1], x.shape[axis2], offset)], x.dtype)


def _diagonal_vjp(ct, x, offset, axis1, axis2):
    n = x.ndim
    rest = [i for i in range(n) if i not in (axis1, axis2)]
    perm = tuple(rest) + (axis1, axis2)
    k = bind(reshape_p, bind(iota_p, ct, axis=ct.ndim - 1), shape=(-1,))
    rows = k + max(-offset, 0) if offset < 0 else k
    cols = k + offset if offset > 0 else k
    zt = bind(zeros_like_p, bind(transpose_p, x, perm=perm))
    g = bind(index_add_p, zt, ct, rows, cols,
             spec=(("s", None, None, None),) * len(rest) + (("a",), ("a",)))
    return (bind(transpose_p, g, perm=tuple(np.argsort(perm).tolist())),)


def _diagonal_batch(args, axes, offset, axis1, axis2):
    x = move_to_front(args[0], axes[0])
    return bind(diagonal_p, x, offset=offset, axis1=axis1 + 1, axis2=axis2 + 1), 0


diagonal_p = Primitive("diagonal", lambda x, offset, axis1, axis2: np.diagonal(
    x, offset, axis1, axis2), _diagonal_abstract, returns_view=True)
diagonal_p.def_vjp(_diagonal_vjp)
diagonal_p.batch = _diagonal_batch


# ------------------------------------------------------------------ repeat (traced counts)
# np.repeat with per-element counts that are traced values: the output size depends on them.
# (Counts known when the function is called are handled by the NumPy layer with a gather of
# static size.)
def _repeat_abstract(x, repeats, axis):
    out = list(x.shape)
    out[axis] = None
    return Aval(out, x.dtype)


def _repeat_vjp(ct, x, repeats, axis):
    """Each element gets the sum of its copies' cotangents: scatter-add by source index."""
    src = bind(repeat_p, bind(reshape_p, bind(iota_p, x, axis=axis), shape=(-1,)), repeats,
               axis=0)
    return (bind(index_add_p, bind(zeros_like_p, x), ct, src,
                 spec=(("s", None, None, None),) * axis + (("a",),)), None)


def _repeat_batch(args, axes, axis):
    (x, r), (bx, br) = args, axes
    if br is not None:
        raise ValueError("repeat inside vectorized_map with repeat counts that differ between "
                         "examples: each example's output would have a different size")
    return bind(repeat_p, move_to_front(x, bx), r, axis=axis + 1), 0


repeat_p = Primitive("repeat", lambda x, repeats, axis: np.repeat(x, repeats, axis=axis),
                     _repeat_abstract)
repeat_p.def_vjp(_repeat_vjp)
repeat_p.batch = _repeat_batch
