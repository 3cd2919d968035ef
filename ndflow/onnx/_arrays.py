"""Converters of the array primitives: reductions, arg-extrema, cumulative sums, sorting and
the linear algebra ONNX has (`REDUCTIONS`); shapes and indexing live in `_indexing`."""
import numpy as np

from ..core.dtypes import is_float
from ..primitives import reduction as R, linalg as L, linalg_decomp as LD, cumulative as C
from ..primitives import sorting as So
from ._emit import body_graph
from ._integers import int_einsum, int_prod, int_sum
from ._math import as_bool

_ERRORS = {"max": "zero-size array to reduction operation maximum which has no identity",
           "min": "zero-size array to reduction operation minimum which has no identity",
           "argmax": "attempt to get argmax of an empty sequence",
           "argmin": "attempt to get argmin of an empty sequence"}


def _dt(v):
    return np.dtype(v.dtype)


def nonempty(ctx, n, x, axes, what):
    """`x`, checked to have no empty axis among `axes`: NumPy raises for a reduction without
    identity over an empty axis. A size known at export raises now; an unknown one is checked
    when the graph runs (the run fails with NumPy's message)."""
    shape = n.inputs[0].shape
    if any(shape[a] == 0 for a in axes):
        raise ValueError(f"nf.onnx.export: {_ERRORS[what]} (axis of size 0 in shape "
                         f"{tuple(shape)}; {ctx.where_am_i()})")
    unknown = [a for a in axes if shape[a] is None]
    if not unknown:
        return x
    sizes = ctx.op("Concat", [ctx.dim(x, a) for a in unknown], axis=0)
    return ctx.error_if(x, ctx.op("Equal", [sizes, ctx.i64([0])]), "ValueError", _ERRORS[what])


def _small_int(dt):
    return dt.kind in "iu" and dt.itemsize < 4


_I64_MIN = np.int64(np.iinfo(np.int64).min)


def ordered(ctx, x, dt):
    """`x` mapped, preserving order, to a dtype onnxruntime compares in its reductions, ArgMax
    and TopK (it has no kernels for booleans, 8/16-bit integers or unsigned ones there):
    narrow integers to int32, uint32 to int64, uint64 to int64 with the sign bit flipped
    (the bits reinterpreted, then 0 is the lowest int64 and 2**64 - 1 the highest)."""
    if dt.kind == "b" or _small_int(dt):
        return ctx.cast(x, np.int32)
    if dt == np.uint32:
        return ctx.cast(x, np.int64)
    if dt == np.uint64:
        if ctx.opset < 18:
            ctx.fail("ordering of uint64 below opset 18 (BitwiseXor)")
        return ctx.op("BitwiseXor", [ctx.cast(x, np.int64), ctx.const(_I64_MIN)])
    return x


def unordered(ctx, k, dt):
    """The inverse of `ordered`."""
    if dt == np.uint64:
        return ctx.cast(ctx.op("BitwiseXor", [k, ctx.const(_I64_MIN)]), dt)
    return k if dt.kind in "f" or dt in (np.int32, np.int64) else ctx.cast(k, dt)


def _sum(ctx, x, ndim, axes, keep, dt):
    """NumPy's sum of x (dtype dt) over `axes`: from +0.0 (a sum of -0.0 is +0.0, also over no
    axis; onnxruntime's is -0.0), of booleans as any, of integers exact (`_integers`)."""
    if not axes:
        return ctx.positive_zero(x, dt) if is_float(dt) else ctx.op("Identity", [x])
    if dt.kind == "b":
        return _any_all(ctx, x, axes, keep, True)
    if dt.kind in "iu":
        return int_sum(ctx, x, ndim, axes, keep, dt)
    r = ctx.reduce("ReduceSum", x, axes, keep)
    return ctx.positive_zero(r, dt) if is_float(dt) else r


def _reduction(kind):
    """sum, prod, max, min. NumPy's sums start from +0.0 (a sum of -0.0 is +0.0, onnxruntime's
    -0.0); max and min propagate NaN and raise over an empty axis; booleans reduce as any/all;
    integer sums and products are exact (`_integers`), integer extrema compare in a dtype
    onnxruntime has kernels for (`ordered`)."""
    op_type = {"sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax",
               "min": "ReduceMin"}[kind]

    def conv(ctx, n, ins):
        x, = ins
        axes, keep = tuple(n.params["axes"]), n.params["keepdims"]
        dt = _dt(n.inputs[0])
        if kind == "sum":
            return _sum(ctx, x, n.inputs[0].ndim, axes, keep, dt)
        if not axes:
            return ctx.op("Identity", [x])
        if kind in ("max", "min"):
            x = nonempty(ctx, n, x, axes, kind)
        if dt.kind == "b":       # a product of booleans is all (in bool), max any, min all
            return _any_all(ctx, x, axes, keep, kind == "max")
        if dt.kind in "iu":
            if kind in ("max", "min"):
                return unordered(ctx, ctx.reduce(op_type, ordered(ctx, x, dt), axes, keep), dt)
            return int_prod(ctx, x, n.inputs[0].ndim, axes, keep, dt)
        r = ctx.reduce(op_type, x, axes, keep)
        if not is_float(dt):
            return r
        if kind in ("max", "min"):
            nan = ctx.reduce("ReduceMax", ctx.cast(ctx.op("IsNaN", [x]), np.int32), axes, keep)
            r = ctx.op("Where", [ctx.cast(nan, np.bool_), ctx.const(np.nan, dt), r])
        return r
    return conv


def _add_reduce(ctx, n, ins):
    """NumPy's sum with a cast, a mask or a start value (`add_reduce`): the cast, zeros where
    the mask leaves an element out (their signs do not matter: a sum starts from +0.0), the sum
    as reduce_sum's, then the start value; float sums round as the runtime's do."""
    x, *w = ins
    p = n.params
    dt, axes, keep = np.dtype(p["dtype"]), tuple(p["axes"]), p["keepdims"]
    if _dt(n.inputs[0]) != dt:
        x = ctx.cast(x, dt)
    if w:
        x = ctx.where(w[0], x, ctx.const(0, dt), dt, x_nonzero=True)
    r = _sum(ctx, x, n.inputs[0].ndim, axes, keep, dt)
    start = p["initial"]
    if start is None:
        return r
    if dt.kind == "b":
        return ctx.op("Or", [r, ctx.const(bool(start))])
    if dt.kind in "iu" and dt.itemsize < 4:
        ctx.fail(f"a sum in {dt} with a start value")
    return ctx.op("Add", [r, ctx.const(np.asarray(start).astype(dt))])


def _any_all(ctx, b, axes, keep, any_):
    """any/all of a bool tensor over `axes`: ReduceMax/Min of 0/1 compared with 0 (an empty
    ReduceMax is the lowest int32, an empty ReduceMin the highest: False and True)."""
    r = ctx.reduce("ReduceMax" if any_ else "ReduceMin", ctx.cast(b, np.int32), axes, keep)
    return ctx.op("Greater", [r, ctx.const(np.int32(0))])


def _any_all_conv(any_):
    def conv(ctx, n, ins):
        x, = ins
        axes, keep = tuple(n.params["axes"]), n.params["keepdims"]
        b = as_bool(ctx, n.inputs[0], x)
        if not axes:
            return ctx.op("Identity", [b]) if b is x else b
        return _any_all(ctx, b, axes, keep, any_)
    return conv


def _argext(op_type):
    def conv(ctx, n, ins):
        x, = ins
        axis, keep = n.params["axis"], n.params["keepdims"]
        dt = _dt(n.inputs[0])
        x = nonempty(ctx, n, x, (axis % max(n.inputs[0].ndim, 1),), op_type.lower())
        r = ctx.op(op_type, [ordered(ctx, x, dt)], axis=axis, keepdims=int(keep),
                   select_last_index=0)
        if is_float(dt):
            # NumPy: the first NaN wins
            isn = ctx.cast(ctx.op("IsNaN", [x]), np.int32)
            first_nan = ctx.op("ArgMax", [isn], axis=axis, keepdims=int(keep))
            any_nan = ctx.cast(ctx.reduce("ReduceMax", isn, (axis,), keep), np.bool_)
            r = ctx.op("Where", [any_nan, first_nan, r])
        return r
    return conv


def _sum_to(ctx, n, ins):
    """ct summed down to like's shape (NumPy's broadcasting undone): the extra leading axes
    always; an axis where like has size 1 always (summing a size-1 axis changes nothing); an
    axis whose size in like is unknown while tracing, when it is 1 at run time (an If)."""
    ct, like = n.inputs
    keep, like_keep = n.params.get("keep", 0), n.params.get("like_keep", 0)
    body, target = ct.shape[keep:], like.shape[like_keep:]
    lead = len(body) - len(target)
    x = ins[0]
    static = list(range(keep, keep + lead)) + [keep + lead + i for i, d in enumerate(target)
                                               if d == 1 and body[lead + i] != 1]
    dt = _dt(ct)

    def summed(x, axes):
        if dt.kind in "iu":
            return int_sum(ctx, x, ct.ndim, axes, True, dt)
        r = ctx.reduce("ReduceSum", x, axes, True)
        # NumPy's sums start from +0.0: a sum of -0.0 is +0.0 (onnxruntime's is -0.0)
        return ctx.positive_zero(r, dt) if is_float(dt) else r
    if static:
        x = summed(x, static)
    for i, d in enumerate(target):
        if d is not None or body[lead + i] == 1:
            continue
        axis = keep + lead + i
        one = ctx.op("Equal", [ctx.dim(ins[1], like_keep + i), ctx.i64([1])])
        one = ctx.op("Squeeze", [one, ctx.i64([0])])
        x_now = x
        x = ctx.op("If", [one],
                   then_branch=body_graph(ctx, lambda: [summed(x_now, [axis])], [dt],
                                          "sum_to"),
                   else_branch=body_graph(ctx, lambda: [x_now], [dt], "sum_to"))
    if None in target or None in ct.shape[:keep]:
        tail = ctx.shape(ins[1], like_keep)
        if keep:
            tail = ctx.op("Concat", [ctx.shape(ins[0], 0, keep), tail], axis=0)
    else:
        tail = ctx.i64(list(ct.shape[:keep]) + list(target))
    return ctx.op("Reshape", [x, tail], allowzero=1)


# ------------------------------------------------------------------ linalg
def _in_int64(ctx, dt, op_type, ins, **attrs):
    """An integer product or sum in int64 (onnxruntime saturates int32 and lacks narrower
    kernels; int64 wraps around, and the low bits are the narrower dtype's result)."""
    if dt.kind not in "iu" or dt == np.int64:
        return ctx.op(op_type, ins, **attrs)
    return ctx.cast(ctx.op(op_type, [ctx.cast(x, np.int64) for x in ins], **attrs), dt)


def _matmul(ctx, n, ins):
    dt = np.dtype(n.outputs[0].dtype)
    if dt.kind not in "fiu":
        ctx.fail(f"matmul of dtype {dt}")
    return _in_int64(ctx, dt, "MatMul", ins)


def _einsum(ctx, n, ins):
    dt = np.dtype(n.outputs[0].dtype)
    if dt.kind in "iu":
        return int_einsum(ctx, n, ins, dt)
    return ctx.op("Einsum", ins, equation=n.params["subscripts"].replace(" ", ""))


def _det(ctx, n, ins):
    if not is_float(_dt(n.inputs[0])):
        ctx.fail(f"det of dtype {n.inputs[0].dtype}")
    return ctx.op("Det", ins)


# ------------------------------------------------------------------ scans, sorting
def _cumsum(ctx, n, ins):
    return _in_int64(ctx, _dt(n.inputs[0]), "CumSum",
                     [ins[0], ctx.const(np.int64(n.params["axis"]))],
                     reverse=int(bool(n.params.get("reverse", False))))


def _topk_sort(which):
    """Sorting as a TopK over the whole axis (ONNX: equal keys keep their index order, so the
    order is stable). NaN sorts last in NumPy, but TopK's place for NaN is unspecified: NaN is
    sorted as +inf, then a second stable sort on isnan moves the NaNs after every number."""
    def conv(ctx, n, ins):
        x, = ins
        v = n.inputs[0]
        dt = _dt(v)
        if v.ndim == 0:
            ctx.fail(f"{n.prim.name} of a 0-d array")
        kind = n.params.get("kind")
        if which == "indices" and kind not in ("stable", "mergesort"):
            ctx.fail(f"argsort with kind={kind!r} (NumPy's order of equal elements is then its "
                     f"own; use kind='stable', which ONNX TopK reproduces)")
        axis = n.params["axis"] % v.ndim
        k = ctx.dim(x, axis)
        key = ordered(ctx, x, dt)
        if not is_float(dt):
            vals, idx = ctx.op("TopK", [key, k], n_out=2, axis=axis, largest=0, sorted=1)
            if which == "indices":
                return idx
            return vals if key is x else ctx.op("GatherElements", [x, idx], axis=axis)
        isnan = ctx.op("IsNaN", [x])
        key = ctx.where(isnan, ctx.const(np.inf, dt), x, dt)
        _, idx1 = ctx.op("TopK", [key, k], n_out=2, axis=axis, largest=0, sorted=1)
        nan1 = ctx.cast(ctx.op("GatherElements", [isnan, idx1], axis=axis), np.int32)
        _, idx2 = ctx.op("TopK", [nan1, k], n_out=2, axis=axis, largest=0, sorted=1)
        idx = ctx.op("GatherElements", [idx1, idx2], axis=axis)
        if which == "indices":
            return idx
        return ctx.op("GatherElements", [x, idx], axis=axis)
    return conv


REDUCTIONS = {
    R.reduce_sum_p: _reduction("sum"), R.reduce_max_p: _reduction("max"),
    R.reduce_min_p: _reduction("min"), R.reduce_prod_p: _reduction("prod"),
    R.reduce_any_p: _any_all_conv(True), R.reduce_all_p: _any_all_conv(False),
    R.sum_to_p: _sum_to, R.add_reduce_p: _add_reduce,
    R.argmax_p: _argext("ArgMax"), R.argmin_p: _argext("ArgMin"),
    L.matmul_p: _matmul, L.einsum_p: _einsum, LD.det_p: _det, C.cumsum_p: _cumsum,
    So.sort_p: _topk_sort("values"), So.argsort_p: _topk_sort("indices"),
}
