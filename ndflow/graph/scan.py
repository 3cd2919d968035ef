"""`scan` and `scan_carry` (JAX's form of a scan, which `fori_loop`, `map_fn` and the ONNX
exporter build on): eager, a Python loop; traced, one primitive holding the body's sub-graph.
vjp: a reverse scan over the per-step carries; batch: a scan of the batched body."""
import numpy as np

from ..core.primitive import Aval, bind
from ..core.ndarray import ndarray
from ..core.state import STATE
from ..core import tree
from .ir import eval_graph, without_sinks
from .trace import trace_body, close, union_captures, forget_assigned
from ..primitives.shape import move_to_front, moveaxis
from .. import numpy as tnp
from .control_rules import (_control_primitives, _pick, _check_grad_effects, _check_body_out,
                            _diff, _aval_list, _as_array, _batch_size, _to_batched,
                            _batched_body, _grads)


def _scan_length(xs, length):
    return length if not xs else xs[0].shape[0]


def _zero_step_shapes(body, consts, carry, xs):
    """The shapes of the body's results for a scan of zero steps (the body never runs): its
    shape rules applied to the run-time shapes of its inputs (an element of xs: xs's shape
    without the leading 0), so a size unknown while tracing is the one a step would have given;
    the traced shapes where a rule cannot say."""
    g = body.graph
    ins = [Aval(np.shape(a), np.asarray(a).dtype) for a in list(consts) + list(carry)] + \
        [Aval(np.shape(x)[1:], np.asarray(x).dtype) for x in xs]
    env = {v.id: a for v, a in zip(g.inputs, ins)}
    env.update((c.id, c) for c in g.consts)
    try:
        for n in g.nodes:
            outs = n.prim.abstract(*[env[v.id] for v in n.inputs], **n.params)
            for o, a in zip(n.outputs, outs if n.prim.multiple_results else (outs,)):
                env[o.id] = a
        return [tuple(env[o.id].shape) for o in g.outputs]
    except Exception:   # noqa: BLE001 -- a rule that needs values, or an effect without one
        return [tuple(s) for s, _ in body.out_avals]


def _scan_impl(*args, body, n_consts, n_carry, length, reverse, record):
    consts = args[:n_consts]
    carry = args[n_consts:n_consts + n_carry]
    xs = args[n_consts + n_carry:]
    n = length if not xs else xs[0].shape[0]
    ys = None
    stacks = [[None] * n for _ in carry] if record else None
    ny = len(body.graph.outputs) - n_carry
    for step in range(n):
        i = n - 1 - step if reverse else step
        if record:
            for s, c in zip(stacks, carry):
                s[i] = c
        out = body(*consts, *carry, *[x[i] for x in xs])
        carry = out[:n_carry]
        if ys is None:
            ys = [np.empty((n,) + np.shape(y), np.asarray(y).dtype) for y in out[n_carry:]]
        for buf, y in zip(ys, out[n_carry:]):
            buf[i] = y
    if ys is None:
        shapes = _zero_step_shapes(body, consts, carry, xs)
        ys = [np.zeros((0,) + tuple(0 if d is None else d for d in s), d2)
              for s, (_, d2) in zip(shapes[n_carry:], body.out_avals[n_carry:])]
    res = tuple(carry) + tuple(ys[:ny])
    if record:
        init = args[n_consts:n_consts + n_carry]
        res += tuple(np.stack(s) if n else np.zeros((0,) + np.shape(c), np.asarray(c).dtype)
                     for s, c in zip(stacks, init))
    return res


def _scan_abstract(*args, body, n_consts, n_carry, length, reverse, record):
    xs = args[n_consts + n_carry:]
    n = _scan_length(xs, length)
    c_avals = body.in_avals[n_consts:n_consts + n_carry]
    out = [Aval(s, d) for s, d in c_avals]
    out += [Aval((n,) + tuple(s), d) for s, d in body.out_avals[n_carry:]]
    if record:
        out += [Aval((n,) + tuple(s), d) for s, d in c_avals]
    return tuple(out)


def _scan_vjp(cts, *args, body, n_consts, n_carry, length, reverse, record):
    _check_grad_effects([body], "nf.scan")
    consts = list(args[:n_consts])
    init = list(args[n_consts:n_consts + n_carry])
    xs = list(args[n_consts + n_carry:])
    ny = len(body.graph.outputs) - n_carry
    wrt_c = [i for i in range(n_consts) if _diff(consts[i])]
    wrt_v = [i for i in range(n_carry) if _diff(init[i])]
    wrt_x = [i for i in range(len(xs)) if _diff(xs[i])]
    if not (wrt_c or wrt_v or wrt_x):
        return (None,) * len(args)
    ct_stacks = [cts[n_carry + ny + i] for i in wrt_v] if record else []
    cts = list(cts[:n_carry + ny])
    body = without_sinks(body)
    outs = bind(_pick(SCAN, body), *args, body=body, n_consts=n_consts, n_carry=n_carry,
                length=length, reverse=reverse, record=True)
    stacks = list(outs[n_carry + ny:])
    ct_carry = [cts[i] if cts[i] is not None else tnp.zeros_like(init[i]) for i in wrt_v]
    ct_ys = [cts[n_carry + k] for k in range(ny)]
    y_avals = body.out_avals[n_carry:]
    ct_ys = [c if c is not None else tnp.zeros((outs[n_carry + k].shape[0],) + tuple(s), d)
             for k, (c, (s, d)) in enumerate(zip(ct_ys, y_avals))]
    nc, nv = len(wrt_c), len(wrt_v)

    def step(carry, sl):
        ct_v, ct_c = carry
        c_k, x_k, cty_k, cts_k = sl
        prim = consts + list(c_k) + list(x_k)
        wrt = wrt_c + [n_consts + i for i in wrt_v] + [n_consts + n_carry + i for i in wrt_x]
        out_cts = [ct_v[wrt_v.index(i)] if i in wrt_v else None for i in range(n_carry)] \
            + list(cty_k)
        g = _grads(lambda *a: eval_graph(body.graph, *a), prim, wrt, out_cts)
        new_c = [a + b for a, b in zip(ct_c, g[:nc])]
        # with `record`, the carry entering this step has a cotangent of its own
        new_v = [a + b for a, b in zip(g[nc:nc + nv], cts_k)] if record else list(g[nc:nc + nv])
        return (new_v, new_c), list(g[nc + nv:])

    ct_c0 = [tnp.zeros_like(consts[i]) for i in wrt_c]
    (ct_v, ct_c), ct_x = scan_carry(step, (ct_carry, ct_c0), (stacks, xs, ct_ys, ct_stacks),
                                    length=length, reverse=not reverse)
    grads = [None] * len(args)
    for i, g in zip(wrt_c, ct_c):
        grads[i] = g
    for i, g in zip(wrt_v, ct_v):
        grads[n_consts + i] = g
    for i, g in zip(wrt_x, ct_x):
        grads[n_consts + n_carry + i] = g
    return tuple(grads)


def _scan_batch(args, axes, body, n_consts, n_carry, length, reverse, record):
    size, ref = _batch_size(args, axes)
    consts = [move_to_front(x, a) for x, a in zip(args[:n_consts], axes[:n_consts])]
    c_in = [None if a is None else 0 for a in axes[:n_consts]]
    carry = [_to_batched(x, a, size, ref) for x, a in
             zip(args[n_consts:n_consts + n_carry], axes[n_consts:n_consts + n_carry])]
    xs, x_in = [], []
    for x, a in zip(args[n_consts + n_carry:], axes[n_consts + n_carry:]):
        if a is None:
            xs.append(x)
            x_in.append(None)
        else:       # the scanned axis stays first, the batch axis goes second
            xs.append(moveaxis(x, a, 1))
            x_in.append(0)
    in_axes = c_in + [0] * n_carry + x_in
    avals = _aval_list(consts) + _aval_list(carry) + [
        (tuple(x.shape[1:]), np.dtype(x.dtype)) for x in xs]
    g = _batched_body(body, in_axes, avals)
    outs = bind(_pick(SCAN, g), *consts, *carry, *xs, body=g, n_consts=n_consts,
                n_carry=n_carry, length=length, reverse=reverse, record=record)
    ny = len(body.graph.outputs) - n_carry
    return outs, [0] * n_carry + [1] * ny + ([1] * n_carry if record else [])


SCAN = _control_primitives("scan", _scan_impl, _scan_abstract, _scan_vjp, _scan_batch)
scan_p, scan_effect_p = SCAN


def _n_leaves(d):
    if d is tree.LEAF:
        return 1
    return sum(_n_leaves(s) for s in (d[2] if d[0] is dict else d[1]))


def scan_carry(f, init, xs, length=None, reverse=False, name="scan"):
    """JAX-style scan: `carry, y = f(carry, x)` over the leading axis of `xs` (a structure of
    arrays, or None with `length`); returns (final carry, stacked ys)."""
    x_leaves, x_def = tree.flatten_with_def(xs) if xs is not None else ([], tree.LEAF)
    x_leaves = [_as_array(x) for x in x_leaves]
    n = length if not x_leaves else x_leaves[0].shape[0]
    for x in x_leaves:
        if x.ndim == 0:
            raise ValueError(f"{name}: cannot scan over a scalar (0-d) input")
        if x.shape[0] != n and None not in (n, x.shape[0]):
            raise ValueError(f"{name}: all inputs must have the same leading size; got "
                             f"{n} and {x.shape[0]}")
    if n is None and not x_leaves:
        raise ValueError(f"{name}: give xs or length")
    c_leaves, c_def = tree.flatten_with_def(init)
    c_leaves = [_as_array(c) for c in c_leaves]
    if not STATE.traces and n:
        # (zero steps: the traced path below, so the stacked results have the body's
        # structure, shapes and dtypes with a leading 0, as compiled)
        carry = tree.unflatten(c_def, c_leaves)
        ys = []
        order = range(n - 1, -1, -1) if reverse else range(n)
        for i in order:
            x = tree.unflatten(x_def, [v[i] for v in x_leaves]) if x_leaves else None
            carry, y = f(carry, x)
            ys.append(y)
        if reverse:
            ys.reverse()
        y_leaves = [tree.flatten(y) for y in ys]
        y_def = tree.flatten_with_def(ys[0])[1]
        stacked = [tnp.stack([_as_array(y[k]) for y in y_leaves]) for k in range(len(y_leaves[0]))]
        return carry, tree.unflatten(y_def, stacked)
    avals = _aval_list(c_leaves) + [(tuple(x.shape[1:]), np.dtype(x.dtype)) for x in x_leaves]
    nc = len(c_leaves)
    c_avals = avals[:nc]
    y_def = None
    for _ in range(5):
        def fn(*a):
            carry = tree.unflatten(c_def, a[:nc])
            x = tree.unflatten(x_def, a[nc:]) if x_leaves else None
            return f(carry, x)

        t, leaves, d = trace_body(fn, c_avals + avals[nc:], name + "_body")
        if not (type(d) is tuple and d[0] in (tuple, list) and len(d[1]) == 2):
            raise TypeError(f"{name}: the body must return a pair (carry, y)")
        carry_out_def, y_def = d[1]
        cnt = _n_leaves(carry_out_def)
        c_out = _check_body_out(name, leaves[:cnt], carry_out_def, c_def, c_avals)
        y_out = [_as_array(y) if not isinstance(y, ndarray) else y for y in leaves[cnt:]]
        relaxed = [(tuple(a if a == b else None for a, b in zip(s, o.shape)), dt)
                   for (s, dt), o in zip(c_avals, c_out)]
        if relaxed == c_avals:
            break
        c_avals = relaxed
    ops = union_captures(t)
    g = close(t, c_out + y_out, ops)
    ins = g.graph.inputs
    n_exp = len(avals)
    g.graph.inputs = ins[n_exp:] + ins[:n_exp]
    consts = [a for _, a in ops]
    res = bind(_pick(SCAN, g), *consts, *c_leaves, *x_leaves, body=g, n_consts=len(consts),
               n_carry=nc, length=None if x_leaves else n, reverse=reverse, record=False)
    forget_assigned(t)
    carry = tree.unflatten(c_def, list(res[:nc]))
    return carry, tree.unflatten(y_def, list(res[nc:]))


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """`tf.scan`: `acc = fn(acc, x)` for each x along the first axis of `elems` (a structure of
    arrays); returns every acc, stacked. Without `initializer` the first element (the last with
    `reverse`) starts the accumulation and is the first output. Traced: one graph op
    (differentiable: its gradient is a reverse scan).

    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> nf.scan(lambda a, x: a + x, tnp.asarray([1, 2, 3, 4])).tolist()
    [1, 3, 6, 10]
    """
    name = name or "scan"
    e_leaves, e_def = tree.flatten_with_def(elems)
    e_leaves = [_as_array(x) for x in e_leaves]
    if not e_leaves:
        raise ValueError(f"{name}: elems must hold at least one array")
    if initializer is None:
        k = -1 if reverse else 0
        first = [x[k] for x in e_leaves]
        init = tree.unflatten(e_def, first)
        rest = [x[:-1] if reverse else x[1:] for x in e_leaves]
    else:
        init, rest = initializer, e_leaves

    def step(acc, x):
        new = fn(acc, x)
        return new, new

    _, ys = scan_carry(step, init, tree.unflatten(e_def, rest), reverse=reverse, name=name)
    if initializer is None:
        f_leaves = tree.flatten(init)
        y_leaves = tree.flatten(ys)
        joined = [tnp.concatenate([ys_k, tnp.expand_dims(_as_array(v).astype(ys_k.dtype), 0)])
                  if reverse else
                  tnp.concatenate([tnp.expand_dims(_as_array(v).astype(ys_k.dtype), 0), ys_k])
                  for v, ys_k in zip(f_leaves, y_leaves)]
        return tree.unflatten(tree.flatten_with_def(ys)[1], joined)
    return ys
