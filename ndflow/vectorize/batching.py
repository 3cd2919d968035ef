"""The batching interpreter. A batched value is an ndarray whose `_v` is the value one level
down carrying the batch axis `_aux`; unbatched values pass through untouched. Each primitive's
`batch` rule maps (values, batch axes) to (value, batch axis) by binding primitives one level
down, so inside `nf.function` batching produces one graph."""
import functools
import warnings
import weakref

import numpy as np

from ..core.ndarray import ndarray, symbolic
from ..core.primitive import bind
from ..core.state import STATE
from ..core import tree
from ..graph.trace import next_level, save_fields, restore_fields
from ..autograph.conversion import convert
from ..primitives._util import unsqueeze, unsqueeze_all


class BatchTrace:
    is_graph = False
    kind = "batched"

    def __init__(self, size):
        self.level = next_level()
        self.size = size
        self.written = {}        # id(array) -> (weakref, eager fields): arrays from outside

    def note_write(self, x):
        if id(x) not in self.written:
            self.written[id(x)] = (weakref.ref(x), save_fields(x))

    def shape_of(self, x):
        s = x._v.shape
        bd = x._aux
        if isinstance(bd, tuple):        # squeezed: unit axes left out (primitives._util)
            per = list(s[1:])
            for u in bd[1]:
                per.insert(u, 1)
            return tuple(per)
        return tuple(s[:bd]) + tuple(s[bd + 1:])

    def process(self, prim, args, params):
        vals, axes = [], []
        for a in args:
            if a._t is self:
                vals.append(a._v)
                axes.append(a._aux)
            else:
                vals.append(a)
                axes.append(None)
        rule = prim.batch
        if not getattr(rule, "squeezed_ok", False) and any(isinstance(a, tuple) for a in axes):
            vals, axes = unsqueeze_all(vals, axes)
        if rule is None:
            out, oax = self._loop(prim, vals, axes, params)
        else:
            out, oax = rule(vals, axes, **params)
        if prim.multiple_results:
            if not isinstance(oax, (list, tuple)):
                oax = [oax] * len(out)
            return tuple(self.wrap(o, ax) for o, ax in zip(out, oax))
        return self.wrap(out, oax)

    def wrap(self, v, ax):
        if ax is None:
            return v
        if isinstance(ax, tuple) and not ax[1]:
            ax = 0
        return symbolic(self, v, ax)

    def _loop(self, prim, vals, axes, params):
        from .. import numpy as tnp
        if self.size is None:
            raise ValueError(f"vectorized_map: primitive '{prim.name}' has no batching rule, and "
                             f"the batch size is unknown while tracing, so it cannot run in a "
                             f"loop; give the mapped axis a known size in the input_signature")
        warnings.warn(f"vectorized_map: primitive '{prim.name}' has no batching rule; running "
                      f"it in a loop over the {self.size} examples", stacklevel=4)
        outs = []
        for i in range(self.size):
            xs = [v if bd is None else tnp.take(v, i, axis=bd) for v, bd in zip(vals, axes)]
            outs.append(bind(prim, *xs, **params))
        if prim.multiple_results:
            return [tnp.stack([o[k] for o in outs]) for k in range(len(outs[0]))], 0
        return tnp.stack(outs), 0


def _batch_call(fn, args, in_axes, out_axes):
    from .. import numpy as tnp
    leaves, d = tree.flatten_with_def(args)
    ax_leaves = _broadcast_axes(in_axes, args, len(leaves))
    size = None
    conv = []
    ref = None            # a mapped input: gives the batch size at run time when it is unknown
    for x, ax in zip(leaves, ax_leaves):
        if ax is None:
            conv.append(x)
            continue
        x = tnp.asarray(x) if not isinstance(x, ndarray) else x
        if x.ndim == 0:
            raise ValueError("vectorized_map: cannot map over a scalar (0-d) input")
        n = x.shape[ax]
        if ref is None or size is None:
            ref, size = (x, ax), n
        elif n is not None and size is not None and n != size:
            raise ValueError(f"vectorized_map: all inputs must have the same size along the mapped "
                             f"axis; got sizes {size} and {n} (shape {tuple(x.shape)})")
        conv.append((x, ax))
    if ref is None:
        raise ValueError("vectorized_map: no input has a batch axis to map over")
    trace = BatchTrace(size)
    STATE.traces.append(trace)
    STATE.refresh()
    # views made inside fn are fn's own: remembered only while it runs
    outer_views = STATE.views
    STATE.views = {k: list(v) if isinstance(v, list) else v for k, v in outer_views.items()}
    mapped = []
    try:
        ins = []
        for c in conv:
            if not isinstance(c, tuple) or len(c) != 2 or not isinstance(c[0], ndarray):
                ins.append(c)
            else:
                s = symbolic(trace, c[0], c[1] % c[0].ndim)
                mapped.append((s, s._v, c[0], c[1] % c[0].ndim))
                ins.append(s)
        out = fn(*tree.unflatten(d, ins))
        out_ids = {id(o) for o in tree.flatten(out)}
        # writes into a mapped argument: a loop over the examples writes through views of
        # the caller's array, so the final values go back into it
        backs = []
        for s, v0, x, ax in mapped:
            if s._v is not v0 or s._t is not trace:
                backs.append((x, tnp.moveaxis(*unsqueeze(s._v, s._aux), ax) if s._t is trace
                              else tnp.expand_dims(tnp.asarray(s), ax)))
        del ins, mapped
        # the results, before arrays written inside get their own values back
        out_leaves, out_def = tree.flatten_with_def(out)
        oax = _broadcast_axes(out_axes, out, len(out_leaves))
        res = []
        for o, ax in zip(out_leaves, oax):
            if o is None:
                res.append(None)      # e.g. a gradient that does not exist: None, as unmapped
                continue
            if isinstance(o, ndarray) and o._t is trace:
                v = _own(tnp.moveaxis(*unsqueeze(o._v, o._aux), ax if ax is not None else 0),
                         leaves)
            else:
                o = tnp.asarray(o)
                v = _unbatched_output(o, size, ref)
                if ax not in (None, 0):
                    v = tnp.moveaxis(v, 0, ax)
            res.append(v)
        out_leaves = o = None      # written arrays the function returns may die now
    finally:
        STATE.traces.remove(trace)
        STATE.views = outer_views
        for wr, saved in trace.written.values():
            o = wr()
            if o is not None and o._t is not None:
                restore_fields(o, saved)      # never leave a batched value in a user's array
        STATE.refresh()
    outside = _outside(trace, out_ids)
    if outside:
        import gc
        gc.collect()
        outside = _outside(trace, out_ids)
    if outside:
        o = outside[0]
        raise ValueError(f"vectorized_map: the mapped function wrote into an array of shape "
                         f"{tuple(o.shape)} that it did not create and does not return "
                         f"(captured from outside, or an unmapped argument). A loop would write "
                         f"it once per example, which one vectorized call cannot do; return the "
                         f"values and write them after the call")
    for x, val in backs:
        x[...] = val
    return tree.unflatten(out_def, res)


def _outside(trace, out_ids):
    objs = (wr() for wr, _ in trace.written.values())
    return [o for o in objs if o is not None and id(o) not in out_ids]


def _own(v, inputs):
    """`v`, or a copy where it may share memory with an input: the results of a loop over the
    examples, stacked, never share memory with the inputs (a per-example view, `x[1:]`, or the
    identity, would otherwise hand out the caller's buffer). While tracing: a copy, which the
    compiler drops where the value turns out fresh (passes.layout_choices)."""
    from ..primitives.elementwise import copy_p
    if v._t is not None:
        return bind(copy_p, v)
    for x in inputs:
        if isinstance(x, ndarray) and x._t is None and np.may_share_memory(v._v, x._v):
            return bind(copy_p, v)
    return v


def _unbatched_output(o, size, ref):
    """`o` repeated along a new leading batch axis."""
    from .. import numpy as tnp
    if size is not None:
        return tnp.broadcast_to(tnp.expand_dims(o, 0), (size,) + tuple(o.shape))
    # the batch size is unknown while tracing (input_signature with None): take it from a mapped
    # input at run time, as a (size, 1, ...) mask that `where` broadcasts against `o`
    x, ax = ref
    x = tnp.moveaxis(x, ax, 0)
    mask = tnp.any(tnp.zeros_like(x, dtype=bool), axis=tuple(range(1, x.ndim)))
    return tnp.where(tnp.reshape(mask, (-1,) + (1,) * o.ndim), o, o)


def _broadcast_axes(axes, struct, n):
    if axes is None or isinstance(axes, int):
        return [axes] * n
    leaves = []
    for a, s in zip(axes, struct):
        leaves.extend(_broadcast_axes(a, s, len(tree.flatten(s))))
    return leaves


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """Map `fn` over the first axis of `elems` (a nested structure), vectorized: `fn` runs once
    on batched values, as `tf.vectorized_map`. Tapes inside `fn` give per-example gradients.
    As in TensorFlow, `fn` runs converted by AutoGraph: an `if` or `while` on a per-example
    value decides per example (`ndflow.autograph`).

    Primitives without a batching rule run in a loop (with a warning naming them).

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> x = tnp.asarray([[1., 2.], [3., 4.]])
    >>> nf.vectorized_map(lambda row: tnp.dot(row, row), x)
    array([ 5., 25.], dtype=float64)
    >>> nf.vectorized_map(lambda pair: pair[0] * pair[1], (x, tnp.asarray([10., 100.])))
    array([[ 10.,  20.],
           [300., 400.]], dtype=float64)
    """
    return _batch_call(convert(fn, warn=False), (elems,), 0, 0)


def vmap(fn, in_axes=0, out_axes=0):
    """JAX-style: `vmap(f, in_axes, out_axes)(*args)` maps over the given argument axes
    (None = not mapped); the same machinery as `nf.vectorized_map`.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> nf.vmap(lambda a, b: a * b, in_axes=(0, None))(tnp.asarray([1., 2.]), tnp.asarray(3.))
    array([3., 6.], dtype=float64)
    """
    @functools.wraps(fn)
    def wrapped(*args):
        ax = in_axes if not isinstance(in_axes, list) else tuple(in_axes)
        if isinstance(ax, tuple) and len(ax) != len(args):
            raise ValueError(f"vmap in_axes has {len(ax)} entries for {len(args)} arguments")
        return _batch_call(fn, args, ax, out_axes)
    return wrapped


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """Apply `fn` to each element along the first axis, one at a time, and stack the results,
    as `tf.map_fn`. Eager: a Python loop. Traced (inside `nf.function` or `vectorized_map`):
    one `scan` op whose body is `fn` traced once, not one copy of `fn` per element; its
    gradient is the scan's (a reverse scan).

    Why a loop and not `vectorized_map` where every primitive could batch: a batched body
    changes the order of floating-point sums (one batched matrix product instead of one per
    element), so results would differ from eager map_fn in the last bits; map_fn keeps them
    identical. Use `nf.vectorized_map` for the vectorized version.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> nf.map_fn(lambda row: tnp.max(row), tnp.asarray([[1, 5], [7, 2]]))
    array([5, 7], dtype=int64)
    """
    from .. import numpy as tnp
    leaves, d = tree.flatten_with_def(elems)
    leaves = [tnp.asarray(x) for x in leaves]
    sig = tree.flatten(fn_output_signature) if fn_output_signature is not None else None
    if not leaves or any(x.ndim == 0 for x in leaves):
        # (TensorFlow's error, on every path)
        raise ValueError("map_fn: elements must be arrays of 1 or more dimensions, not "
                         f"scalars (got shapes {[tuple(x.shape) for x in leaves]})")
    n = leaves[0].shape[0]
    # zero elements: the traced path too (fn traced once gives the results' structure, shapes
    # and dtypes, stacked with a leading 0, as compiled)
    if STATE.traces or n == 0:
        from ..graph.control import scan_carry
        _, ys = scan_carry(lambda c, x: (c, fn(x)), (), tree.unflatten(d, leaves),
                           name=name or "map_fn")
        y_leaves, o_def = tree.flatten_with_def(ys)
        stacked = [_cast_to_signature(tnp.asarray(y), sig, k) for k, y in enumerate(y_leaves)]
        return tree.unflatten(o_def, stacked)
    outs = [fn(tree.unflatten(d, [x[i] for x in leaves])) for i in range(n)]
    o_leaves = [tree.flatten(o) for o in outs]
    o_def = tree.flatten_with_def(outs[0])[1]
    stacked = []
    for k in range(len(o_leaves[0])):
        s = tnp.stack([tnp.asarray(o[k]) for o in o_leaves])
        stacked.append(_cast_to_signature(s, sig, k))
    return tree.unflatten(o_def, stacked)


def _cast_to_signature(s, sig, k):
    if sig is not None and k < len(sig) and sig[k] is not None:
        dt = sig[k].dtype if hasattr(sig[k], "is_compatible_with") else np.dtype(sig[k])
        s = s.astype(dt) if s.dtype != dt else s
    return s
