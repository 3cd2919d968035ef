"""Converters of control flow (cond and switch_case as If, while_loop and scan as Loop),
Variables (read as initializers; assignment refused), random draws, run-time checks and the
primitives that are the identity in a pure function (`CONTROL`)."""
import numpy as np

from ..graph import control as Cf
from ..primitives import random as Rn, misc as M
from ..primitives.shape import batch_outermost_p
from ..train.variable import read_var_p, assign_var_p
from ._emit import _SMALL, body_graph, emit_graph, loop_formals, subgraph, tensor_type
from ._math import as_bool, identity

# ------------------------------------------------------------------ variables, random
def _read_variable(ctx, n, ins):
    var = n.params["var"]
    return ctx.op("Identity", [ctx.const(var.numpy())])


def _assign_variable(ctx, n, ins):
    ctx.fail("assigning a Variable (an exported graph is a pure function: export a function "
             "that returns the new value instead)")


_RANDOM = {"standard_normal": ("RandomNormal", {}), "random_sample": ("RandomUniform", {}),
           "normal": ("RandomNormal", {"loc": "mean", "scale": "scale"}),
           "uniform": ("RandomUniform", {"low": "low", "high": "high"})}


def _random(ctx, n, ins):
    p = n.params
    m = _RANDOM.get(p["method"])
    dt = np.dtype(p["dtype"])
    if m is None or any(not nm.startswith("!") for nm in p["names"]) or None in p["shape"] \
            or dt.kind != "f":
        ctx.fail(f"random draw '{p['method']}' (only standard_normal, normal, random_sample "
                 f"and uniform with constant parameters and a static shape map to ONNX)")
    op_type, names = m
    attrs = {}
    for k, v in dict(p["static"]).items():
        if k == "size":
            continue
        if k not in names:
            ctx.fail(f"random draw '{p['method']}' with parameter {k}")
        attrs[names[k]] = float(v)
    return ctx.op(op_type, [], dtype=tensor_type(ctx.onnx, dt), shape=list(p["shape"]), **attrs)


# ------------------------------------------------------------------ control flow
def _cond(ctx, n, ins):
    branches = n.params["branches"]
    index, ops = ins[0], ins[1:]
    iv = n.inputs[0]
    nout = len(n.outputs)
    dtypes = [o.dtype for o in n.outputs]

    def branch_graph(b):
        return subgraph(ctx, b.graph, {v.id: x for v, x in zip(b.graph.inputs, ops)}, "branch")

    def as_list(r):
        return r if isinstance(r, list) else [r]

    if len(branches) == 1:
        env = {v.id: x for v, x in zip(branches[0].graph.inputs, ops)}
        emit_graph(ctx, branches[0].graph, env)
        return [ctx.op("Identity", [env[o.id]]) for o in branches[0].graph.outputs]
    if np.dtype(iv.dtype).kind == "b":
        if len(branches) != 2:
            ctx.fail("a boolean cond with other than two branches")
        # cond(pred) traces [false_fn, true_fn]
        return as_list(ctx.op("If", [index], n_out=nout, then_branch=branch_graph(branches[1]),
                              else_branch=branch_graph(branches[0])))

    def chain(k):
        """If index == k: branch k, else the rest; an out-of-range index takes the last branch
        (as ndflow's switch_case does). Returns the If's outputs."""
        test = ctx.op("Equal", [index, ctx.const(k, iv.dtype)])
        if k + 1 == len(branches) - 1:
            else_g = branch_graph(branches[k + 1])
        else:
            else_g = body_graph(ctx, lambda: as_list(chain(k + 1)), dtypes, "switch")
        return ctx.op("If", [test], n_out=nout, then_branch=branch_graph(branches[k]),
                      else_branch=else_g)

    return as_list(chain(0))


def _test(ctx, cond_g, env):
    """The cond graph's result on the values in `env`, as a 0-d bool."""
    emit_graph(ctx, cond_g, env)
    return ctx.op("Reshape", [ctx.cast(env[cond_g.outputs[0].id], np.bool_), ctx.i64([])])


def _while(ctx, n, ins):
    p = n.params
    if p["record"]:
        ctx.fail("a while loop recording its states (a gradient of a loop)")
    nc = p["n_consts"]
    consts, init = list(ins[:nc]), list(ins[nc:])
    cond_g, body_g = p["cond_graph"].graph, p["body_graph"].graph
    # the first test runs before the loop, in the enclosing graph
    first = _test(ctx, cond_g, {v.id: x for v, x in zip(cond_g.inputs, consts + init)})
    # the body's outputs: the next condition (the cond graph on the new values), the values
    names = [ctx.fresh("iter"), ctx.fresh("cond_in")] + [ctx.fresh("carried") for _ in init]
    dtypes = [v.dtype for v in n.inputs[nc:]]

    def make():
        benv = {v.id: x for v, x in zip(body_g.inputs, consts + names[2:])}
        emit_graph(ctx, body_g, benv)
        new = [benv[o.id] for o in body_g.outputs]
        return [_test(ctx, cond_g, {v.id: x for v, x in zip(cond_g.inputs, consts + new)})] + new
    body = body_graph(ctx, make, [np.bool_] + dtypes, "loop_body",
                      loop_formals(ctx, names, dtypes))
    trip = "" if p["max_iter"] is None else ctx.const(np.int64(p["max_iter"]))
    res = ctx.op("Loop", [trip, first] + init, n_out=len(init), body=body)
    return res if len(init) > 1 else [res]


def _scan(ctx, n, ins):
    """scan as an ONNX Loop: the carries are loop values, each step reads xs[i] by Gather, the
    per-step results are the Loop's scan outputs (flipped back for a reverse scan)."""
    p = n.params
    if p["record"]:
        ctx.fail("a scan recording its carries (a gradient of a scan)")
    nc, ncar = p["n_consts"], p["n_carry"]
    consts, init, xs = list(ins[:nc]), list(ins[nc:nc + ncar]), list(ins[nc + ncar:])
    body_g = p["body"].graph
    length = ctx.dim(xs[0], 0) if xs else ctx.i64([p["length"]])
    length = ctx.op("Squeeze", [length, ctx.i64([0])])
    names = [ctx.fresh("iter"), ctx.fresh("cond_in")] + [ctx.fresh("carried") for _ in init]
    dtypes = [v.dtype for v in n.inputs[nc:nc + ncar]]

    def make():
        i = names[0]
        if p["reverse"]:
            i = ctx.op("Sub", [ctx.op("Sub", [length, ctx.const(np.int64(1))]), i])
        steps = [ctx.op("Gather", [x, i], axis=0) for x in xs]
        benv = {v.id: x for v, x in zip(body_g.inputs, consts + names[2:] + steps)}
        emit_graph(ctx, body_g, benv)
        return [names[1]] + [benv[o.id] for o in body_g.outputs]
    body = body_graph(ctx, make, [np.bool_] + [o.dtype for o in body_g.outputs], "scan_body",
                      loop_formals(ctx, names, dtypes))
    true = ctx.const(np.bool_(True))
    trip = ctx.op("Reshape", [length, ctx.i64([])])
    out = ctx.op("Loop", [trip, true] + init, n_out=len(body_g.outputs), body=body)
    out = out if isinstance(out, list) else [out]
    # a Loop of zero steps stacks nothing: onnxruntime gives shape (0,), NumPy's stack of no
    # step results has the step's shape after the 0
    steps = ctx.op("Reshape", [length, ctx.i64([1])])
    out = out[:ncar] + [
        y if None in o.shape else ctx.op("Reshape", [y, ctx.op("Concat", [
            steps, ctx.i64(np.asarray(o.shape, np.int64))], axis=0)], allowzero=1)
        for y, o in zip(out[ncar:], body_g.outputs[ncar:])]
    if p["reverse"]:
        out = out[:ncar] + [ctx.op("Slice", [y, ctx.i64([-1]), ctx.i64([_SMALL]), ctx.i64([0]),
                                             ctx.i64([-1])]) for y in out[ncar:]]
    return out


# ------------------------------------------------------------------ run-time checks
def _runtime_error(ctx, n, ins):
    """NumPy's error where a value check fails (weights summing to zero, an index out of
    range): the run fails with that message (see Ctx.error_if)."""
    x, bad = ins
    return ctx.error_if(x, as_bool(ctx, n.inputs[1], bad), n.params["error"],
                        n.params["message"])


CONTROL = {
    Rn.random_draw_p: _random, M.stop_gradient_p: identity, M.own_result_p: identity,
    M.runtime_warning_p: identity, M.runtime_error_p: _runtime_error,
    batch_outermost_p: identity,        # (a layout in memory: ONNX tensors have none)
    read_var_p: _read_variable, assign_var_p: _assign_variable,
    Cf.cond_p: _cond, Cf.cond_effect_p: _cond, Cf.while_p: _while, Cf.while_effect_p: _while,
    Cf.scan_p: _scan, Cf.scan_effect_p: _scan,
}
