"""Exact integer sums and products. onnxruntime's ReduceSum, ReduceProd and Einsum on
integers go through double: they saturate on overflow and lose the low bits past 2**53,
where NumPy wraps around exactly. Its MatMul, Mul, Add and CumSum on int64 wrap as NumPy's
do, so sums are written as a MatMul by a column of ones, products as a Loop of Mul, and an
integer einsum as a product of broadcast operands summed that way. Narrower integers are
computed in int64 and cast back (the low bits of the wrapped int64 result are theirs)."""
import numpy as np

from ._emit import body_graph, loop_formals


def _sizes(ctx, x, axes):
    """The run-time sizes of `x` along `axes` (in that order) as a 1-d int64 tensor."""
    if not axes:
        return ctx.i64(np.zeros(0, np.int64))
    return ctx.op("Concat", [ctx.dim(x, a) for a in axes], axis=0)


def _kept_shape(ctx, x, ndim, axes, keepdims):
    """The shape of a reduction of `x` over `axes` (1 there with keepdims, else dropped)."""
    parts = [ctx.i64([1]) if d in axes else ctx.dim(x, d) for d in range(ndim)
             if keepdims or d not in axes]
    return ctx.op("Concat", parts, axis=0) if parts else ctx.i64(np.zeros(0, np.int64))


def _count(ctx, x, axes):
    """The number of elements of `x` over `axes`, as a 1-element int64 tensor."""
    # (sizes are far below 2**53, where onnxruntime's integer ReduceProd is exact)
    return ctx.op("ReduceProd", [_sizes(ctx, x, axes)], keepdims=1)


def _flattened(ctx, x, ndim, axes, dt, reduced_first):
    """x as int64 with its `axes` moved together (first or last) and flattened into one:
    (that tensor, the number of reduced elements, the kept sizes), sizes as 1-d int64."""
    x64 = x if dt == np.int64 else ctx.cast(x, np.int64)
    axes = sorted(axes)
    kept = [d for d in range(ndim) if d not in axes]
    perm = axes + kept if reduced_first else kept + axes
    xt = x64 if perm == list(range(ndim)) else ctx.op("Transpose", [x64], perm=perm)
    n, kept_sizes = _count(ctx, x, axes), _sizes(ctx, x, kept)
    shape = [n, kept_sizes] if reduced_first else [kept_sizes, n]
    flat = ctx.op("Reshape", [xt, ctx.op("Concat", shape, axis=0)], allowzero=1)
    return flat, n, kept_sizes


def _ones(ctx, shape):
    return ctx.op("ConstantOfShape", [shape],
                  value=ctx.onnx.numpy_helper.from_array(np.ones(1, np.int64)))


def int_sum(ctx, x, ndim, axes, keepdims, dt):
    """The wrap-around sum of the integer tensor `x` over `axes`, of dtype `dt`."""
    flat, n, _ = _flattened(ctx, x, ndim, axes, dt, False)
    r = ctx.op("MatMul", [flat, _ones(ctx, ctx.op("Concat", [n, ctx.i64([1])], axis=0))])
    r = ctx.op("Reshape", [r, _kept_shape(ctx, x, ndim, axes, keepdims)], allowzero=1)
    return r if dt == np.int64 else ctx.cast(r, dt)


def int_prod(ctx, x, ndim, axes, keepdims, dt):
    """The wrap-around product of the integer tensor `x` over `axes`: a Loop multiplying the
    slices one by one (int64 Mul wraps as NumPy's loop does)."""
    flat, n, kept_sizes = _flattened(ctx, x, ndim, axes, dt, True)
    one = _ones(ctx, kept_sizes)
    names = [ctx.fresh("iter"), ctx.fresh("cond_in"), ctx.fresh("acc")]
    body = body_graph(ctx, lambda: [names[1], ctx.op("Mul", [
        names[2], ctx.op("Gather", [flat, names[0]], axis=0)])], [np.bool_, np.int64],
        "prod_body", loop_formals(ctx, names, [np.int64]))
    trip = ctx.op("Reshape", [n, ctx.i64([])])
    r = ctx.op("Loop", [trip, "", one], body=body)
    if keepdims:
        r = ctx.op("Reshape", [r, _kept_shape(ctx, x, ndim, axes, True)], allowzero=1)
    return r if dt == np.int64 else ctx.cast(r, dt)


def _parse(eq, n_in):
    if "..." in eq:
        return None
    lhs, _, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != n_in or any(len(set(s)) != len(s) for s in ins):
        return None       # a repeated label (a diagonal) is left to the float path's refusal
    if not _:
        once = [c for c in sorted(set(lhs) - {","}) if lhs.count(c) == 1]
        out = "".join(once)
    return ins, out


def int_einsum(ctx, n, ins, dt):
    """An integer einsum: each operand transposed to the order of all labels (output labels,
    then the contracted ones) with size-1 axes for its missing labels, the operands multiplied
    (broadcasting), the contracted axes summed exactly."""
    parsed = _parse(n.params["subscripts"].replace(" ", ""), len(ins))
    if parsed is None:
        ctx.fail(f"integer einsum '{n.params['subscripts']}' (an ellipsis or a repeated label: "
                 f"onnxruntime's integer Einsum saturates, and this form has no exact rewrite)")
    labels, out = parsed
    order = list(out) + [c for c in dict.fromkeys("".join(labels)) if c not in out]
    prod = None
    for lab, x in zip(labels, ins):
        x = x if dt == np.int64 else ctx.cast(x, np.int64)
        mine = sorted(lab, key=order.index)
        perm = [lab.index(c) for c in mine]
        if perm != list(range(len(lab))):
            x = ctx.op("Transpose", [x], perm=perm)
        missing = [i for i, c in enumerate(order) if c not in lab]
        if missing:
            x = ctx.op("Unsqueeze", [x, ctx.i64(missing)])
        prod = x if prod is None else ctx.op("Mul", [prod, x])
    contracted = list(range(len(out), len(order)))
    if not contracted:
        return prod if dt == np.int64 else ctx.cast(prod, dt)
    # the sum over the contracted axes of the broadcast product (`prod` has every label's
    # size once the operands are multiplied; a label on one operand only keeps its size)
    return int_sum(ctx, prod, len(order), contracted, False, dt)
