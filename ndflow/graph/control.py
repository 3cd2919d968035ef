"""Control flow: `cond`, `switch_case`, `while_loop`, `fori_loop`, and `scan` (in `scan.py`,
its names also reachable here; the helpers the rules share are in `control_rules.py`).

Eager (no trace, no vectorized_map): they are the Python `if` / `while` / `for` they stand for,
so tapes record the operations of the path taken, iteration by iteration.

Under `nf.function` or `nf.vectorized_map`, each branch or body is traced once into a closed
sub-graph (a `SubGraph` in the node's params; values it uses from the enclosing code become
operands), and one primitive runs it: `cond` picks its branch when the graph runs, `while_loop`
loops while the graph runs. Their rules:

  cond          vjp: a cond over the branches' VJPs.  batch: an unbatched index gives a cond of
                batched branches; a batched index runs every branch and selects per example.
  while_loop    vjp: the loop runs again keeping its state at the start of each iteration, then a
                reverse loop applies the body's VJP to those states (any trip count;
                `maximum_iterations` bounds the memory).  batch: the loop runs until every
                example is done; an example that is done keeps its state (masking).
  scan          vjp: a reverse scan over the per-step carries.  batch: a scan of the batched body.

Gradients of any order. Not through a body that draws random numbers, nor through a loop body
that assigns Variables (each would run again to be differentiated): a clear error.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ..core.ndarray import ndarray, static_size as _static_size
from ..core.state import STATE
from ..core import tree, dtypes as _dt
from ..core.variable import VariableBase
from .ir import eval_graph, without_sinks
from .trace import trace_body, close, union_captures, forget_assigned
from ..primitives.shape import move_to_front
from .. import numpy as tnp
from . import codegen  # noqa: F401  (installs the compiler that runs the bodies these ops hold)
from .control_rules import (_PY_SCALARS, _WRITES, _control_primitives, _pick,
                            _check_grad_effects, _check_body_out, _diff, _aval_list, _as_array,
                            _structure, _batch_size, _to_batched, _vmapped, _batched_body, _grads)
# (scan lives in its own module; its names stay reachable here with the other control flow's)
from .scan import SCAN, scan_p, scan_effect_p, scan_carry, scan  # noqa: F401


# ================================================================== cond / switch_case
def branch_for(index, n):
    """Branch run for `index`: out-of-range indices take the last branch (the default)."""
    return index if 0 <= index < n else n - 1


def _join_avals(outs):
    """The avals of a cond's results: each branch's, with sizes that differ unknown (None)."""
    first = outs[0]
    res = []
    for j, (s, d) in enumerate(first):
        for other in outs[1:]:
            s2, d2 = other[j]
            s = tuple(a if a == b else None for a, b in zip(s, s2))
        res.append((s, d))
    return res


def _cond_impl(index, *ops, branches):
    return branches[branch_for(int(index), len(branches))](*ops)


def _cond_abstract(index, *ops, branches):
    return tuple(Aval(s, d) for s, d in _join_avals([b.out_avals for b in branches]))


def _cond_vjp(cts, index, *ops, branches):
    # a branch runs once: re-running it to differentiate may skip its Variable writes (later
    # reads in the branch use the written value directly), not its random draws
    _check_grad_effects(branches, "nf.cond", ("read", "write"))
    wrt = tuple(i for i, x in enumerate(ops) if _diff(x))
    if not wrt:
        return (None,) * (1 + len(ops))
    out_avals = _join_avals([b.out_avals for b in branches])
    in_avals = out_avals + _aval_list(ops)
    n_out = len(out_avals)
    vjps = []
    for b in map(without_sinks, branches):
        key = ("vjp", wrt, tuple(in_avals))
        g = b.cache.get(key)
        if g is None:
            def f(*args, b=b):
                return _grads(lambda *xs: eval_graph(b.graph, *xs, skip=_WRITES),
                              list(args[n_out:]), wrt, list(args[:n_out]))
            t, leaves, _ = trace_body(f, in_avals, b.name + "_vjp")
            g = b.cache[key] = close(t, leaves)
        vjps.append(g)
    gs = bind(_pick(COND, *vjps), index, *cts, *ops, branches=tuple(vjps))
    out = [None] * len(ops)
    for i, g in zip(wrt, gs):
        out[i] = g
    return (None,) + tuple(out)


def _cond_batch(args, axes, branches):
    index, ops = args[0], list(args[1:])
    ia, oa = axes[0], list(axes[1:])
    size, ref = _batch_size(args, axes)
    if ia is None:
        # one branch for the whole batch: a cond of batched branches
        ops = [move_to_front(x, a) for x, a in zip(ops, oa)]
        in_axes = [None if a is None else 0 for a in oa]
        avals = _aval_list(ops)
        new = []
        for b in branches:
            new.append(_batched_body(b, in_axes, avals))
        outs = bind(_pick(COND, *new), index, *ops, branches=tuple(new))
        return outs, [0] * len(outs)
    # a branch per example: run them all, then select
    index = move_to_front(index, ia)
    if index.dtype == _dt.BOOL:
        index = index.astype(np.int32)
    n = len(branches)
    index = tnp.where((index >= 0) & (index < n), index, n - 1)
    if all(a is None for a in oa):
        results = [eval_graph(b.graph, *ops) for b in branches]
    else:
        results = [_vmapped(b.graph, oa)(*ops) for b in branches]
    unbatched = all(a is None for a in oa)
    outs = []
    for j in range(len(results[0])):
        out = results[-1][j]
        for k in range(n - 2, -1, -1):
            r = results[k][j]
            sel = tnp.reshape(index == k, (-1,) + (1,) * (r.ndim - (0 if unbatched else 1)))
            out = tnp.where(sel, r, out)
        if unbatched and n == 1:
            out = _to_batched(out, None, size, ref)
        outs.append(out)
    return outs, [0] * len(outs)


COND = _control_primitives("cond", _cond_impl, _cond_abstract, _cond_vjp, _cond_batch)
cond_p, cond_effect_p = COND


def _branch_list(branch_fns):
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and all(
            isinstance(e, tuple) and len(e) == 2 and not callable(e) for e in branch_fns):
        items = sorted(branch_fns)
    else:
        items = list(enumerate(branch_fns))
    keys = [k for k, _ in items]
    if keys != list(range(len(keys))):
        raise ValueError(f"switch_case: branch keys must be 0, 1, ..., N-1; got {keys}")
    fns = [f for _, f in items]
    for k, f in enumerate(fns):
        if not callable(f):
            raise TypeError(f"switch_case: branch {k} is not callable: {f!r}")
    if not fns:
        raise ValueError("switch_case: branch_fns must not be empty")
    return fns


def _is_symbolic(x):
    return isinstance(x, ndarray) and x._t is not None


def cond(pred, true_fn=None, false_fn=None, name=None):
    """`true_fn()` if `pred` else `false_fn()`, as `tf.cond`. With a concrete `pred` this is a
    Python `if`. With a traced `pred` (inside `nf.function`, or per example in
    `vectorized_map`) both branches are traced and the choice is made when the graph runs;
    they must return the same structure and dtypes (Python numbers adopt the other branch's
    dtype); sizes that differ are unknown (None) in the result.

    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> f = nf.function(lambda x: nf.cond(tnp.sum(x) > 0, lambda: x * 2, lambda: -x))
    >>> f(tnp.asarray([1.0, 2.0])).tolist(), f(tnp.asarray([-1.0, -2.0])).tolist()
    ([2.0, 4.0], [1.0, 2.0])
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables taking no arguments")
    if isinstance(pred, VariableBase):
        pred = pred.value()
    if not _is_symbolic(pred):
        return true_fn() if bool(_concrete_scalar(pred, "cond", "pred")) else false_fn()
    if tuple(pred.shape) not in ((), (1,)):
        raise ValueError(f"cond: pred must be a scalar, got shape {tuple(pred.shape)}")
    if pred.dtype != _dt.BOOL:
        raise TypeError(f"cond: pred must be a bool scalar, got dtype {pred.dtype.name}")
    if pred.shape == (1,):
        pred = tnp.reshape(pred, ())
    return _staged_switch(pred, [false_fn, true_fn], name or "cond", ("false_fn", "true_fn"))


def _concrete_scalar(x, fn, arg):
    v = np.asarray(x.numpy() if isinstance(x, ndarray) else x)
    if _static_size(v) != 1:
        raise ValueError(f"{fn}: {arg} must be a scalar, got shape {v.shape}")
    return v.reshape(())


def switch_case(branch_index, branch_fns, default=None, name=None):
    """Run `branch_fns[branch_index]()`, as `tf.switch_case`; an index out of range runs
    `default` (or, without one, the last branch). `branch_fns`: a list of callables, a dict
    {index: callable} or a list of (index, callable) pairs with indices 0..N-1. Traced the way
    `cond` is."""
    fns = _branch_list(branch_fns)
    if isinstance(branch_index, VariableBase):
        branch_index = branch_index.value()
    if not _is_symbolic(branch_index):
        v = _concrete_scalar(branch_index, "switch_case", "branch_index")
        if v.dtype.kind not in "iu":
            raise TypeError(f"switch_case: branch_index must be an integer, got dtype {v.dtype}")
        i = int(v)
        if 0 <= i < len(fns):
            return fns[i]()
        return (default or fns[-1])()
    if np.dtype(branch_index.dtype).kind not in "iu":
        raise TypeError(f"switch_case: branch_index must be an integer, got dtype "
                        f"{branch_index.dtype.name}")
    if tuple(branch_index.shape) != ():
        raise ValueError(f"switch_case: branch_index must be a scalar, got shape "
                         f"{tuple(branch_index.shape)}")
    if default is not None:
        fns = fns + [default]
    names = tuple("branch %d" % k for k in range(len(fns)))
    if default is not None:
        names = names[:-1] + ("default",)
    return _staged_switch(branch_index, fns, name or "switch_case", names)


def _staged_switch(index, fns, name, names):
    traced = []
    for k, f in enumerate(fns):
        traced.append(trace_body(lambda f=f: f(), [], "%s_%s" % (name, names[k].replace(" ", ""))))
    d0, n0 = traced[0][2], len(traced[0][1])
    for k, (t, leaves, d) in enumerate(traced[1:], 1):
        if d != d0:
            raise ValueError(
                f"{name}: {names[0]} and {names[k]} must return the same structure; got "
                f"{_structure(d0, n0)} and {_structure(d, len(leaves))}")
    # Python numbers are weakly typed: they take the dtype of the other branches' arrays
    cols = []
    for j in range(n0):
        vals = [leaves[j] for _, leaves, _ in traced]
        for k, v in enumerate(vals):
            if v is None or not (isinstance(v, (ndarray, np.ndarray, np.generic))
                                 or type(v) in _PY_SCALARS):
                raise TypeError(f"{name}: {names[k]} returned {type(v).__name__} "
                                f"({v!r}); branches must return arrays or numbers")
        strong = {np.dtype(v.dtype) for v in vals if not type(v) in _PY_SCALARS}
        if len(strong) > 1:
            got = ", ".join(f"{names[k]}: {np.dtype(v.dtype).name}" for k, v in enumerate(vals)
                            if type(v) not in _PY_SCALARS)
            raise TypeError(f"{name}: output {j} has different dtypes in the branches ({got})")
        dt = strong.pop() if strong else np.result_type(*[_as_array(v).dtype for v in vals])
        cols.append([_as_array(v, dt) if type(v) in _PY_SCALARS or not isinstance(v, ndarray)
                     else v for v in vals])
    ops = union_captures(*[t for t, _, _ in traced])
    subs = tuple(close(t, [c[k] for c in cols], ops) for k, (t, _, _) in enumerate(traced))
    for j in range(n0):
        ranks = {len(s.out_avals[j][0]) for s in subs}
        if len(ranks) > 1:
            raise ValueError(f"{name}: output {j} has different ranks in the branches: "
                             + ", ".join(f"{names[k]}: {list(s.out_avals[j][0])}"
                                         for k, s in enumerate(subs)))
    outs = bind(_pick(COND, *subs), index, *[a for _, a in ops], branches=subs)
    forget_assigned(*[t for t, _, _ in traced])
    return tree.unflatten(d0, list(outs))


# ================================================================== while_loop
def _while_impl(*args, cond_graph, body_graph, n_consts, max_iter, record):
    consts, vals = args[:n_consts], args[n_consts:]
    i = 0
    stacks = [[] for _ in vals] if record else None
    while (max_iter is None or i < max_iter) and cond_graph(*consts, *vals)[0]:
        if record:
            for s, v in zip(stacks, vals):
                s.append(v)
        vals = body_graph(*consts, *vals)
        i += 1
    vals = tuple(vals)
    if not record:
        return vals
    init = args[n_consts:]
    stacked = tuple(np.stack(s) if s else np.zeros((0,) + np.shape(v), np.asarray(v).dtype)
                    for s, v in zip(stacks, init))
    return vals + (np.asarray(i, dtype=np.int64),) + stacked


def _while_abstract(*args, cond_graph, body_graph, n_consts, max_iter, record):
    avals = body_graph.in_avals[n_consts:]
    out = [Aval(s, d) for s, d in avals]
    if record:
        out.append(Aval((), np.dtype(np.int64)))
        out += [Aval((None,) + tuple(s), d) for s, d in avals]
    return tuple(out)


def _while_vjp(cts, *args, cond_graph, body_graph, n_consts, max_iter, record):
    _check_grad_effects([cond_graph, body_graph], "nf.while_loop")
    consts, init = list(args[:n_consts]), list(args[n_consts:])
    nv = len(init)
    wrt_v = [i for i in range(nv) if _diff(init[i])]
    wrt_c = [i for i in range(n_consts) if _diff(consts[i])]
    if not wrt_v and not wrt_c:
        return (None,) * len(args)
    cond_graph, body_graph = without_sinks(cond_graph), without_sinks(body_graph)
    # forward again, keeping the state at the start of every iteration
    outs = bind(_pick(WHILE, cond_graph, body_graph), *consts, *init, cond_graph=cond_graph,
                body_graph=body_graph, n_consts=n_consts, max_iter=max_iter, record=True)
    count, stacks = outs[nv], outs[nv + 1:]
    nc = len(wrt_c)
    # with `record` (differentiating the gradient again) the kept states have cotangents too:
    # stacks[k][j] is the state entering iteration j
    ct_stacks = [cts[nv + 1 + i] for i in wrt_v] if record else None

    def bwd_cond(j, ct_v, ct_c):
        return j >= 0

    def bwd_body(j, ct_v, ct_c):
        state = [s[j] for s in stacks]
        xs = consts + state
        g = _grads(lambda *a: eval_graph(body_graph.graph, *a), xs,
                   wrt_c + [n_consts + i for i in wrt_v],
                   [ct_v[wrt_v.index(i)] if i in wrt_v else None for i in range(nv)])
        new_v = list(g[nc:])
        if record:
            new_v = [a + s[j] for a, s in zip(new_v, ct_stacks)]
        return j - 1, new_v, [a + b for a, b in zip(ct_c, g[:nc])]

    ct_v0 = [cts[i] if cts[i] is not None else tnp.zeros_like(init[i]) for i in wrt_v]
    ct_c0 = [tnp.zeros_like(consts[i]) for i in wrt_c]
    _, ct_v, ct_c = while_loop(bwd_cond, bwd_body, (count - 1, ct_v0, ct_c0),
                               maximum_iterations=max_iter, name="while_vjp")
    grads = [None] * len(args)
    for i, g in zip(wrt_c, ct_c):
        grads[i] = g
    for i, g in zip(wrt_v, ct_v):
        grads[n_consts + i] = g
    return tuple(grads)


def _while_batch(args, axes, cond_graph, body_graph, n_consts, max_iter, record):
    size, ref = _batch_size(args, axes)
    consts, c_axes = list(args[:n_consts]), list(axes[:n_consts])
    consts = [move_to_front(x, a) for x, a in zip(consts, c_axes)]
    c_in = [None if a is None else 0 for a in c_axes]
    # every loop variable batched: an example that is done keeps its state while others go on
    vals = [_to_batched(x, a, size, ref) for x, a in zip(args[n_consts:], axes[n_consts:])]
    nv = len(vals)
    in_axes = c_in + [0] * nv
    pred_of = _vmapped(cond_graph.graph, in_axes)
    step_of = _vmapped(body_graph.graph, in_axes)

    def still(*cv):
        p = pred_of(*cv)[0]
        return tnp.reshape(p, (-1,))

    def bcond(*cv):
        return tnp.any(still(*cv[:n_consts + nv]))

    def bbody(*cv):
        cv = list(cv)
        p = still(*cv[:n_consts + nv])
        new = step_of(*cv[:n_consts + nv])
        out = [tnp.where(tnp.reshape(p, (-1,) + (1,) * (v.ndim - 1)), n, v)
               for n, v in zip(new, cv[n_consts:n_consts + nv])]
        if record:          # each example's own trip count
            out.append(cv[-1] + p.astype(np.int64))
        return out

    init = vals + ([tnp.zeros_like(still(*consts, *vals), dtype=np.int64)] if record else [])
    res = _while_staged(bcond, bbody, consts, init, max_iter, record, "while_batched")
    if not record:
        return list(res), [0] * nv
    outs = list(res[:nv]) + [res[nv]] + list(res[nv + 2:nv + 2 + nv])
    return outs, [0] * nv + [0] + [1] * nv


WHILE = _control_primitives("while", _while_impl, _while_abstract, _while_vjp, _while_batch)
while_p, while_effect_p = WHILE


def _while_staged(cond_fn, body_fn, consts_in, init, max_iter, record, name, in_def=None,
                  shapes=None):
    """Trace `cond_fn(*consts_in, *vals)` and `body_fn(*consts_in, *vals)` (flat leaves, or
    structured by `in_def` when given, then without consts_in) and bind the loop."""
    init = [_as_array(x) for x in init]
    avals = _aval_list(init) if shapes is None else list(shapes)
    n_c = len(consts_in)
    call_avals = _aval_list(consts_in) + avals
    own = set()
    flat_def = tree.flatten_with_def(list(range(len(init))))[1]
    for _ in range(5):
        def c_fn(*xs):
            return cond_fn(*xs) if in_def is None else cond_fn(*tree.unflatten(in_def, xs[n_c:]))

        def b_fn(*xs):
            return body_fn(*xs) if in_def is None else body_fn(*tree.unflatten(in_def, xs[n_c:]))

        ct, c_leaves, _ = trace_body(c_fn, call_avals, name + "_cond", own_vars=own)
        bt, b_leaves, bd = trace_body(b_fn, call_avals, name + "_body", own_vars=own)
        if in_def is None:
            if len(b_leaves) != len(avals):
                raise ValueError(f"{name}: the body returned {len(b_leaves)} values for "
                                 f"{len(avals)} loop variables")
            bd = flat_def
        outs = _check_body_out(name, b_leaves, bd, in_def if in_def is not None else flat_def,
                               avals)
        relaxed = [(tuple(a if a == b else None for a, b in zip(s, o.shape)), dt)
                   for (s, dt), o in zip(avals, outs)]
        clash = (ct.redirected | bt.redirected) & (set(ct.assigned) | set(bt.assigned))
        if relaxed == avals and not (clash - own):
            break
        avals = relaxed
        call_avals = _aval_list(consts_in) + avals
        own |= clash
    else:
        raise ValueError(f"{name}: the shapes of the loop variables do not settle")
    if len(c_leaves) != 1:
        raise TypeError(f"{name}: cond must return one boolean scalar, got {len(c_leaves)} values")
    p = c_leaves[0]
    p = _as_array(p) if not isinstance(p, ndarray) else p
    if p.dtype != _dt.BOOL or tuple(p.shape) not in ((), (1,)):
        raise TypeError(f"{name}: cond must return a boolean scalar, got shape "
                        f"{tuple(p.shape)} dtype {p.dtype.name}")
    ops = union_captures(ct, bt)
    cg = close(ct, [p], ops)
    bg = close(bt, outs, ops)
    # the explicit inputs are (consts_in, loop vars); captures go with the consts
    for g in (cg, bg):
        ins = g.graph.inputs
        g.graph.inputs = ins[:n_c] + ins[n_c + len(avals):] + ins[n_c:n_c + len(avals)]
    consts = list(consts_in) + [a for _, a in ops]
    res = bind(_pick(WHILE, cg, bg), *consts, *init, cond_graph=cg, body_graph=bg,
               n_consts=len(consts), max_iter=max_iter, record=record)
    forget_assigned(ct, bt)
    return res


def _static_int(x, what):
    if x is None:
        return None
    if isinstance(x, ndarray) and x._t is not None:
        return x
    v = np.asarray(x.numpy() if isinstance(x, ndarray) else x)
    if v.shape != () or v.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an integer scalar, got {x!r}")
    return int(v)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`, at most
    `maximum_iterations` times, as `tf.while_loop`; returns the final loop_vars (same
    structure). Eager: a Python `while`. Traced: one graph op that loops when the graph runs;
    the body must keep each variable's dtype and rank (a size that changes becomes unknown,
    None, as if given in `shape_invariants`).

    Gradients: eager, through the recorded iterations; traced, through a reverse loop over the
    states a second forward run keeps (memory grows with the trip count; second order is not
    supported).

    >>> import ndflow as nf
    >>> nf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * 2), (0, 1))
    (4, 16)
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    single = not isinstance(loop_vars, (list, tuple))
    lv = [loop_vars] if single else loop_vars
    max_iter = _static_int(maximum_iterations, "while_loop: maximum_iterations")
    if not STATE.traces:
        i = 0
        while max_iter is None or i < max_iter:
            p = cond(*lv)
            if not bool(_concrete_scalar(p, "while_loop", "cond's result")):
                break
            out = body(*lv)
            lv = [out] if single or not isinstance(out, (list, tuple)) else out
            i += 1
        if single:
            return lv[0]
        return _like(loop_vars, lv)
    leaves, in_def = tree.flatten_with_def(list(lv))
    leaves = [_as_array(x) for x in leaves]
    if shape_invariants is not None:
        inv = tree.flatten(shape_invariants if not single else [shape_invariants])
        shapes = [(tuple(getattr(s, "shape", s)), np.dtype(x.dtype)) for s, x in zip(inv, leaves)]
    else:
        shapes = None

    def body_fn(*vs):
        out = body(*vs)
        if single or not isinstance(out, (list, tuple)):
            out = [out] if not (isinstance(out, (list, tuple)) and len(out) == 1) else out
        return list(out)

    if max_iter is not None and not isinstance(max_iter, int):
        # a traced bound: count the iterations in a loop variable
        m = max_iter
        n_def = tree.flatten_with_def([0, list(lv)])[1]
        res = _while_staged(lambda i, v: tnp.logical_and(i < m, cond(*v)),
                            lambda i, v: [i + 1, body_fn(*v)], [],
                            [tnp.asarray(0, dtype=m.dtype)] + leaves, None, False,
                            name or "while", n_def,
                            None if shapes is None else [((), m.dtype)] + shapes)
        res = res[1:]
    else:
        res = _while_staged(cond, body_fn, [], leaves, max_iter, False, name or "while", in_def,
                            shapes)
    out = tree.unflatten(in_def, list(res))
    return out[0] if single else _like(loop_vars, out)


def _like(template, values):
    t = type(template)
    if t is list or t is tuple:
        return t(values)
    return t(*values)       # a namedtuple


def fori_loop(lower, upper, body_fun, init_val):
    """`val = body_fun(i, val)` for i in range(lower, upper), as `jax.lax.fori_loop`. With
    Python-int bounds it is traced as a `scan` (differentiable, any order); with traced bounds
    as a `while_loop`. Eager: a Python `for`."""
    lo, hi = _static_int(lower, "fori_loop: lower"), _static_int(upper, "fori_loop: upper")
    if not STATE.traces and isinstance(lo, int) and isinstance(hi, int):
        val = init_val
        for i in range(lo, hi):
            val = body_fun(i, val)
        return val
    if isinstance(lo, int) and isinstance(hi, int):
        def step(carry, _):
            i, v = carry
            return (i + 1, body_fun(i, v)), ()
        (_, val), _ = scan_carry(step, (tnp.asarray(lo), init_val), None,
                                 length=max(hi - lo, 0))
        return val
    res = while_loop(lambda i, v: i < upper, lambda i, v: (i + 1, body_fun(i, v)),
                     (tnp.asarray(lower) if not isinstance(lower, ndarray) else lower, init_val))
    return res[1]




# ================================================================== run-time assertion
def _assert_impl(pred, message):
    if not np.all(pred):
        raise AssertionError(message)
    return np.asarray(True)


def _assert_batch(args, axes, message):
    return bind(assert_p, tnp.all(args[0]), message=message), None


# a check (an effect that only inspects its operand and may raise): never folded, merged or
# removed, kept in the order it was traced, and harmless to run again when a loop body holding
# it is replayed to differentiate it
assert_p = Primitive("assert", _assert_impl, lambda pred, message: Aval((), _dt.BOOL),
                     check=True)
assert_p.def_vjp(lambda ct, pred, message: (None,))
assert_p.batch = _assert_batch


def assert_that(pred, message):
    """Raise AssertionError(message) when the graph runs and `pred` has a false element (an
    `assert` on a traced value in converted code)."""
    if isinstance(pred, VariableBase):
        pred = pred.value()
    pred = _as_array(pred)
    return bind(assert_p, pred, message=str(message))
