"""Converters of the shape and indexing primitives (`INDEXING`): reshapes, transposes,
broadcasts, concatenation and splits, slicing, gathers and scatters, run-time sizes. They move
data without arithmetic, so they are exact by construction; what they must get right is NumPy's
shapes (empty arrays, unknown sizes read at run time) and its indices (negative, clamped)."""
import numpy as np

from ..graph.static import shape_p
from ..primitives import shape as S, indexing as I
from ._emit import _BIG, _SMALL


def _reshape(ctx, n, ins):
    shape = list(n.params["shape"])
    keep = n.params.get("keep", 0)
    if 0 in shape:
        if keep or -1 in shape:
            ctx.fail("reshape to a shape with a zero and an inferred size (ONNX's Reshape infers "
                     "no size beside a 0 kept as a size)")
        return ctx.op("Reshape", [ins[0], ctx.i64(shape)], allowzero=1)
    # a leading 0 copies the input's size (the `keep` axes)
    return ctx.op("Reshape", [ins[0], ctx.i64([0] * keep + shape)])


def _reshape_like(ctx, n, ins):
    x, like = ins
    keep, like_keep = n.params.get("keep", 0), n.params.get("like_keep", 0)
    tail = ctx.shape(like, like_keep)
    if keep:
        tail = ctx.op("Concat", [ctx.shape(x, 0, keep), tail], axis=0)
    # allowzero: a size 0 read from `like` is a size, not "copy the input's"
    return ctx.op("Reshape", [x, tail], allowzero=1)


def _with_kept(ctx, x, sizes, keep):
    """The run-time sizes `sizes` after x's first `keep` sizes (a batch axis)."""
    if not keep:
        return sizes
    return ctx.op("Concat", [ctx.shape(x, 0, keep), sizes], axis=0)


def _reshape_dynamic(ctx, n, ins):
    x, sizes = ins
    # allowzero: a size 0 is a size, as in NumPy (not "copy the input's size")
    return ctx.op("Reshape", [x, _with_kept(ctx, x, sizes, n.params.get("keep", 0))],
                  allowzero=1)


def _broadcast_dynamic(ctx, n, ins):
    x, sizes = ins
    keep = n.params.get("keep", 0)
    static = n.params["static"]
    inner = n.inputs[0].shape[keep:]
    lead = len(static) - len(inner)
    # Expand broadcasts both ways; NumPy's broadcast_to only stretches sizes 1: each size of
    # the operand not known to be 1 or the target's is checked when the graph runs
    bad = []
    for i, d in enumerate(inner):
        if d != 1 and (d is None or d != static[lead + i]):
            have = ctx.dim(x, keep + i)
            want = ctx.op("Slice", [sizes, ctx.i64([lead + i]), ctx.i64([lead + i + 1])])
            if np.dtype(n.inputs[1].dtype) != np.int64:
                want = ctx.cast(want, np.int64)
            bad.append(ctx.op("Not", [ctx.op("Or", [ctx.op("Equal", [have, ctx.i64([1])]),
                                                    ctx.op("Equal", [have, want])])]))
    if bad:
        x = ctx.error_if(x, bad[0] if len(bad) == 1 else ctx.op("Concat", bad, axis=0),
                         "ValueError", "operands could not be broadcast together with the "
                         "requested shape (broadcast_to)")
    return ctx.op("Expand", [x, _with_kept(ctx, x, sizes, keep)])


def _slice_dynamic(ctx, n, ins):
    x, ops = ins[0], list(ins[1:])
    parts = n.params["parts"]
    if parts[2][0] == "d":
        ctx.fail("a slice whose step is known only at run time (NumPy's default bounds depend "
                 "on the step's sign)")
    step = 1 if parts[2][1] is None else parts[2][1]
    big = np.iinfo(np.int64).max
    defaults = (0 if step > 0 else big, big if step > 0 else -big - 1)
    bounds = []
    for p, default in zip(parts[:2], defaults):
        if p[0] == "d":
            bounds.append(ctx.op("Reshape", [ops.pop(0), ctx.i64([1])]))
        else:
            bounds.append(ctx.i64([default if p[1] is None else p[1]]))
    return ctx.op("Slice", [x, bounds[0], bounds[1], ctx.i64([n.params["axis"]]),
                            ctx.i64([step])])


def _transpose(ctx, n, ins):
    return ctx.op("Transpose", ins, perm=list(n.params["perm"]))


def _expand_dims(ctx, n, ins):
    axes = list(n.params["axes"])
    if not axes:
        return ctx.op("Identity", ins)
    return ctx.op("Unsqueeze", [ins[0], ctx.i64(axes)])


def _squeeze(ctx, n, ins):
    axes = list(n.params["axes"])
    if not axes:
        return ctx.op("Identity", ins)
    return ctx.op("Squeeze", [ins[0], ctx.i64(axes)])


def _broadcast_to(ctx, n, ins):
    shape = [1 if d is None else d for d in n.params["shape"]]
    if 0 in shape:
        # an empty result: written as such (onnxruntime's optimizer drops an Expand from size
        # 1 to a constant size 0 as if it changed nothing)
        return ctx.op("ConstantOfShape", [ctx.i64(shape)], value=ctx.onnx.numpy_helper.from_array(
            np.zeros(1, n.outputs[0].dtype)))
    return ctx.op("Expand", [ins[0], ctx.i64(shape)])


def _concatenate(ctx, n, ins):
    return ctx.op("Concat", ins, axis=n.params["axis"])


def _split_like(ctx, n, ins):
    ct, xs = ins[0], ins[1:]
    axis = n.params["axis"]
    xa = axis if n.params.get("x_axis") is None else n.params["x_axis"]
    sizes = ctx.op("Concat", [ctx.dim(x, xa) for x in xs], axis=0)
    outs = ctx.op("Split", [ct, sizes], n_out=len(xs), axis=axis)
    return outs if len(xs) > 1 else [outs]


def _full(e):
    return e == ("s", None, None, None)


def _getitem(ctx, n, ins):
    spec = n.params["spec"]
    x, arrays = ins[0], ins[1:]
    xv = n.inputs[0]
    kinds = [e[0] for e in spec]
    if "a" in kinds:
        # one index array along one axis, every other axis whole: a gather (np.take)
        if kinds.count("a") == 1 and all(k in "ae" or _full(e) for k, e in zip(kinds, spec)) \
                and kinds.count("e") <= 1:
            pos = kinds.index("a")
            if "e" in kinds and kinds.index("e") < pos:
                axis = xv.ndim - (len(spec) - pos)
            else:
                axis = pos - (1 if "e" in kinds[:pos] else 0)
            idx = arrays[0]
            if np.dtype(n.inputs[1].dtype) != np.int64:
                idx = ctx.cast(idx, np.int64)
            return ctx.op("Gather", [x, idx], axis=axis)
        return _advanced_getitem(ctx, n, x, arrays)
    # basic indexing: an Ellipsis expands to whole slices
    entries = []
    used = sum(1 for k in kinds if k in "si")
    for e in spec:
        if e[0] == "e":
            entries.extend([("s", None, None, None)] * (xv.ndim - used))
        else:
            entries.append(e)
    entries.extend([("s", None, None, None)] * (xv.ndim - sum(1 for e in entries if e[0] in "si")))
    starts, ends, axes, steps, squeeze, newaxes = [], [], [], [], [], []
    dim = 0
    out_pos = 0
    for e in entries:
        if e[0] == "n":
            newaxes.append(out_pos)
            out_pos += 1
            continue
        if e[0] == "i":
            k = e[1]
            starts.append(k)
            ends.append(_BIG if k == -1 else k + 1)
            steps.append(1)
            axes.append(dim)
            squeeze.append(dim)
        elif not _full(e):
            _, a, b, s = e
            s = 1 if s is None else s
            if s > 0:
                starts.append(0 if a is None else a)
                ends.append(_BIG if b is None else b)
            else:
                starts.append(_BIG if a is None else a)
                ends.append(_SMALL if b is None else b)
            steps.append(s)
            axes.append(dim)
            out_pos += 1
        else:
            out_pos += 1
        dim += 1
    r = x
    if axes:
        r = ctx.op("Slice", [r, ctx.i64(starts), ctx.i64(ends), ctx.i64(axes), ctx.i64(steps)])
    if squeeze:
        r = ctx.op("Squeeze", [r, ctx.i64(squeeze)])
    if newaxes:
        r = ctx.op("Unsqueeze", [r, ctx.i64(newaxes)])
    if r is x:
        r = ctx.op("Identity", [x])
    return r


def _expand_ellipsis(spec, ndim):
    used = sum(1 for e in spec if e[0] in "sia")
    out = []
    for e in spec:
        if e[0] == "e":
            out.extend([("s", None, None, None)] * (ndim - used))
            used = ndim
        else:
            out.append(e)
    out.extend([("s", None, None, None)] * (ndim - sum(1 for e in out if e[0] in "sia")))
    return out


def _advanced_getitem(ctx, n, x, arrays):
    """Integer arrays (and integers) on several axes, every other axis whole: the indexed axes
    go first, the index arrays broadcast and stack into a GatherND, and the result block goes
    back in place when the indexed axes were adjacent (NumPy's rule)."""
    xv = n.inputs[0]
    entries = _expand_ellipsis(n.params["spec"], xv.ndim)
    if any(e[0] == "n" for e in entries) or any(e[0] == "s" and not _full(e) for e in entries):
        ctx.fail("advanced indexing mixed with slices or newaxis (not written: NumPy's rules "
                 "for where the indexed axes go)")
    adv, idx, it = [], [], iter(zip(arrays, n.inputs[1:]))
    for d, e in enumerate(entries):
        if e[0] == "a":
            a, v = next(it)
            idx.append(a if np.dtype(v.dtype) == np.int64 else ctx.cast(a, np.int64))
            adv.append(d)
        elif e[0] == "i":
            idx.append(ctx.const(np.int64(e[1])))
            adv.append(d)
    # negative indices count from the end (NumPy); GatherND's support for them varies
    idx = [ctx.op("Where", [ctx.op("Less", [a, ctx.const(np.int64(0))]),
                            ctx.op("Add", [a, ctx.dim(x, d)]), a]) for a, d in zip(idx, adv)]
    rest = [d for d in range(xv.ndim) if d not in adv]
    xt = x if adv + rest == list(range(xv.ndim)) else \
        ctx.op("Transpose", [x], perm=adv + rest)
    # the common shape of the index arrays, read at run time
    total = idx[0]
    for a in idx[1:]:
        total = ctx.op("Add", [total, a])
    shape = ctx.op("Shape", [total])
    last = ctx.i64([-1])
    cols = [ctx.op("Unsqueeze", [ctx.op("Expand", [a, shape]), last]) for a in idx]
    r = ctx.op("GatherND", [xt, ctx.op("Concat", cols, axis=-1)])
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    if adjacent and adv[0] > 0:
        nb = n.outputs[0].ndim - len(rest)
        p = adv[0]
        perm = list(range(nb, nb + p)) + list(range(nb)) + list(range(nb + p, nb + len(rest)))
        r = ctx.op("Transpose", [r], perm=perm)
    return r


def _basic_positions(ctx, n, x):
    """For an index of slices, integers, newaxis and Ellipsis (no arrays): the positions it
    selects in `x` as an int64 tensor (*region, ndim), read at run time (each axis's indices
    are arange(size)[slice], so NumPy's slice clamping holds), and the region's shape."""
    xv = n.inputs[0]
    entries = [e for e in _expand_ellipsis(n.params["spec"], xv.ndim) if e[0] != "n"]
    vecs = []
    for d, e in enumerate(entries):
        r = ctx.op("Range", [ctx.const(np.int64(0)),
                             ctx.op("Squeeze", [ctx.dim(x, d), ctx.i64([0])]),
                             ctx.const(np.int64(1))])
        if e[0] == "i":
            k = e[1]
            r = ctx.op("Slice", [r, ctx.i64([k]), ctx.i64([_BIG if k == -1 else k + 1])])
        elif not _full(e):
            _, a, b, st = e
            st = 1 if st is None else st
            lo = (0 if a is None else a) if st > 0 else (_BIG if a is None else a)
            hi = (_BIG if b is None else b) if st > 0 else (_SMALL if b is None else b)
            r = ctx.op("Slice", [r, ctx.i64([lo]), ctx.i64([hi]), ctx.i64([0]), ctx.i64([st])])
        vecs.append(r)
    region = ctx.op("Concat", [ctx.op("Shape", [v]) for v in vecs], axis=0)
    cols = []
    for d, v in enumerate(vecs):
        shape = [1] * len(vecs)
        shape[d] = -1
        grid = ctx.op("Expand", [ctx.op("Reshape", [v, ctx.i64(shape)]), region])
        cols.append(ctx.op("Unsqueeze", [grid, ctx.i64([-1])]))
    return ctx.op("Concat", cols, axis=-1), region


class _Fake:
    """A stand-in node for reusing a converter on part of another node's work."""
    def __init__(self, x, params):
        self.inputs, self.params = (x,), params


def _scatter_one_array(ctx, n, ins, reduction):
    """x[..., idx, ...] = v (or +=, duplicates summed) for one index array on one axis, every
    other axis whole: that axis goes first, a ScatterND writes rows, and it goes back."""
    xv = n.inputs[0]
    entries = _expand_ellipsis(n.params["spec"], xv.ndim)
    axis = [e[0] for e in entries].index("a")
    x, v, idx = ins[0], ins[1], ins[2]
    if np.dtype(n.inputs[2].dtype) != np.int64:
        idx = ctx.cast(idx, np.int64)
    size = ctx.dim(x, axis)
    idx = ctx.op("Where", [ctx.op("Less", [idx, ctx.const(np.int64(0))]),
                           ctx.op("Add", [idx, size]), idx])
    perm = [axis] + [d for d in range(xv.ndim) if d != axis]
    inv = list(np.argsort(perm))
    # the values broadcast to the shape of x[..., idx, ...]
    vals = ctx.op("Expand", [v, ctx.op("Shape", [ctx.op("Gather", [x, idx], axis=axis)])])
    if n.inputs[2].ndim != 1:
        ctx.fail(f"{n.prim.name} with a {n.inputs[2].ndim}-d index array")
    xt = ctx.op("Transpose", [x], perm=perm) if axis else x
    vt = ctx.op("Transpose", [vals], perm=perm) if axis else vals
    if reduction is None:
        idx, vt = _last_writes(ctx, idx, vt)
    kw = {"reduction": "add"} if reduction == "add" else {}
    r = ctx.op("ScatterND", [xt, ctx.op("Unsqueeze", [idx, ctx.i64([-1])]), vt], **kw)
    return ctx.op("Transpose", [r], perm=inv) if axis else r


def _last_writes(ctx, idx, rows):
    """The index entries (and their rows of values) that no later entry repeats: NumPy keeps
    the last write to a position, ScatterND leaves repeated indices unspecified."""
    m = ctx.op("Squeeze", [ctx.dim(idx, 0), ctx.i64([0])])
    pos = ctx.op("Range", [ctx.const(np.int64(0)), m, ctx.const(np.int64(1))])
    col, row = ctx.i64([1]), ctx.i64([0])
    same = ctx.op("Equal", [ctx.op("Unsqueeze", [idx, col]), ctx.op("Unsqueeze", [idx, row])])
    later = ctx.op("Less", [ctx.op("Unsqueeze", [pos, col]), ctx.op("Unsqueeze", [pos, row])])
    hits = ctx.cast(ctx.op("And", [same, later]), np.int32)
    # (ReduceMax of an empty row is the lowest int32: not > 0)
    overwritten = ctx.op("Greater", [ctx.reduce("ReduceMax", hits, [1], False),
                                     ctx.const(np.int32(0))])
    keep = ctx.op("Not", [overwritten])
    return (ctx.op("Compress", [idx, keep], axis=0), ctx.op("Compress", [rows, keep], axis=0))


def _scatter(reduction):
    """x[index] = v (or += v) for an index of slices and integers into a static shape: the
    positions are computed now, the values broadcast to them, and one ScatterND writes them.
    One index array on one axis (the gradient of a gather) is written by rows."""
    def conv(ctx, n, ins):
        x, v = ins[0], ins[1]
        spec = n.params["spec"]
        kinds = [e[0] for e in spec]
        if ctx.opset < 16:
            ctx.fail(f"{n.prim.name} below opset 16")
        if kinds.count("a") == 1 and kinds.count("e") <= 1 and all(
                k in "ae" or _full(e) for k, e in zip(kinds, spec)):
            return _scatter_one_array(ctx, n, ins, reduction)
        if "a" in kinds:
            ctx.fail(f"{n.prim.name} with index arrays mixed with other indices")
        if n.inputs[0].ndim == 0:            # x[...] = v of a 0-d x: v itself
            v = ctx.op("Reshape", [v, ctx.i64(np.zeros(0, np.int64))])
            if reduction != "add":
                return v
            return ctx.op("Or" if np.dtype(n.outputs[0].dtype).kind == "b" else "Add", [x, v])
        pos, region = _basic_positions(ctx, n, x)
        # v broadcast to x[index], then laid out as the region (a reshape: integers keep a
        # size-1 axis there, newaxis entries have size 1)
        selected = _getitem(ctx, _Fake(n.inputs[0], n.params), [x])
        vals = ctx.op("Reshape", [ctx.op("Expand", [v, ctx.op("Shape", [selected])]), region],
                      allowzero=1)
        if reduction == "add":
            if np.dtype(n.outputs[0].dtype).kind == "b":
                ctx.fail("index_add of booleans")
            return ctx.op("ScatterND", [x, pos, vals], reduction="add")
        return ctx.op("ScatterND", [x, pos, vals])
    return conv


def _iota(ctx, n, ins):
    x, = ins
    axis = n.params["axis"]
    nd = n.inputs[0].ndim
    size = ctx.op("Squeeze", [ctx.dim(x, axis), ctx.i64([0])])
    r = ctx.op("Range", [ctx.const(np.int64(0)), size, ctx.const(np.int64(1))])
    shape = [1] * nd
    shape[axis] = -1
    return ctx.op("Reshape", [r, ctx.i64(shape)])


def _nonzero(ctx, n, ins):
    x = ins[0]
    if len(ins) > 1:
        # a mask whose sizes were unknown while tracing must match the indexed array's axes
        # start.. (NumPy's IndexError, checked when the graph runs)
        start, nd = n.params.get("start", 0), n.inputs[0].ndim
        bad = ctx.op("Not", [ctx.op("Equal", [ctx.shape(x, 0, nd),
                                              ctx.shape(ins[1], start, start + nd)])])
        x = ctx.error_if(x, bad, "IndexError", "boolean index did not match indexed array")
    if n.inputs[0].ndim == 0:
        x = ctx.op("Reshape", [x, ctx.i64([1])])
    nz = ctx.op("NonZero", [x])
    k = len(n.outputs)
    return [ctx.op("Gather", [nz, ctx.const(np.int64(i))], axis=0) for i in range(k)]


def _shape(ctx, n, ins):
    return ctx.cast(ctx.op("Shape", ins), n.params.get("out_type", np.int32))


INDEXING = {
    S.reshape_p: _reshape, S.reshape_like_p: _reshape_like, S.transpose_p: _transpose,
    S.expand_dims_p: _expand_dims, S.squeeze_p: _squeeze, S.broadcast_to_p: _broadcast_to,
    I.concatenate_p: _concatenate, I.split_like_p: _split_like,
    S.reshape_dynamic_p: _reshape_dynamic, S.broadcast_dynamic_p: _broadcast_dynamic,
    I.slice_dynamic_p: _slice_dynamic, I.getitem_p: _getitem, I.index_update_p: _scatter(None),
    I.index_add_p: _scatter("add"), I.iota_p: _iota, I.nonzero_p: _nonzero, shape_p: _shape,
}
