"""The batching interpreter. A batched value is an ndarray whose `_v` is the value one level
down carrying the batch axis `_aux`; unbatched values pass through untouched. Each primitive's
`batch` rule maps (values, batch axes) to (value, batch axis) by binding primitives one level
down, so inside `nf.function` batching produces one graph.

This module sits below the NumPy API (which batches with `vmap`): it takes ndflow arrays and
builds arrays with `ndflow.ops`. `nf.vectorized_map`, `nf.vmap` and `nf.map_fn`
(vectorize/mapping.py) convert Python data and AutoGraph-convert the function first."""
import functools
import warnings
import weakref

import numpy as np

from ..core.ndarray import ndarray, symbolic
from ..core.primitive import bind
from ..core.state import STATE
from ..core import tree
from ..graph.trace import next_level, save_fields, restore_fields
from ..graph.static import shape_of
from ..primitives.shape import unsqueeze, unsqueeze_all, batch_outermost_p, lead_outermost
from ..primitives.elementwise import copy_p
from ..primitives.indexing import getitem
from ..primitives.shape import moveaxis, broadcast_dynamic_p
from ..primitives.indexing import concatenate_p
from ..ops import take, stack, expand_dims, broadcast_to, constant


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
        if self.size is None:
            raise ValueError(f"vectorized_map: primitive '{prim.name}' has no batching rule, and "
                             f"the batch size is unknown while tracing, so it cannot run in a "
                             f"loop; give the mapped axis a known size in the input_signature")
        warnings.warn(f"vectorized_map: primitive '{prim.name}' has no batching rule; running "
                      f"it in a loop over the {self.size} examples", stacklevel=4)
        outs = []
        for i in range(self.size):
            xs = [v if bd is None else take(v, i, bd) for v, bd in zip(vals, axes)]
            outs.append(bind(prim, *xs, **params))
        if prim.multiple_results:
            return [stack([o[k] for o in outs]) for k in range(len(outs[0]))], 0
        return stack(outs), 0


def _require_array(x):
    raise TypeError(f"batching: got a {type(x).__name__} where an ndflow array is needed (the "
                    f"mapped inputs and the results of the function); nf.vmap and "
                    f"nf.vectorized_map convert Python data")


def _examples_in_order(x, ax):
    """A mapped input whose batch axis is in front, laid out so that NumPy visits each example
    as it would visit it alone (`batch_outermost`: sums round in that order); an eager one
    that already is (the common case) as it is. A batch axis elsewhere is put in front and in
    order by the rules that need it (`example_order`)."""
    if ax != 0:
        return x
    v = x._v
    if x._t is None and (not isinstance(v, np.ndarray) or lead_outermost(v.shape, v.strides, 1)):
        return x
    return bind(batch_outermost_p, x, lead=1)


def _batch_call(fn, args, in_axes, out_axes, convert=None):
    """`fn` called once on `args` batched along `in_axes`; its results batched along
    `out_axes`. `convert` makes arrays of Python data among the mapped inputs and the results
    (None: they must be arrays)."""
    convert = convert or _require_array
    leaves, d = tree.flatten_with_def(args)
    ax_leaves = _broadcast_axes(in_axes, args, len(leaves))
    size = None
    conv = []
    ref = None            # a mapped input: gives the batch size at run time when it is unknown
    for x, ax in zip(leaves, ax_leaves):
        if ax is None:
            conv.append(x)
            continue
        x = convert(x) if not isinstance(x, ndarray) else x
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
                ax = c[1] % c[0].ndim
                s = symbolic(trace, _examples_in_order(c[0], ax), ax)
                mapped.append((s, s._v, c[0], ax))
                ins.append(s)
        out = fn(*tree.unflatten(d, ins))
        out_ids = {id(o) for o in tree.flatten(out)}
        # writes into a mapped argument: a loop over the examples writes through views of
        # the caller's array, so the final values go back into it
        backs = []
        for s, v0, x, ax in mapped:
            if s._v is not v0 or s._t is not trace:
                backs.append((x, moveaxis(*unsqueeze(s._v, s._aux), ax) if s._t is trace
                              else expand_dims(s, ax)))
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
                v = _own(moveaxis(*unsqueeze(o._v, o._aux), ax if ax is not None else 0),
                         leaves)
            else:
                o = o if isinstance(o, ndarray) else convert(o)
                v = _unbatched_output(o, size, ref)
                if ax not in (None, 0):
                    v = moveaxis(v, 0, ax)
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
    if v._t is not None:
        return bind(copy_p, v)
    for x in inputs:
        if isinstance(x, ndarray) and x._t is None and np.may_share_memory(v._v, x._v):
            return bind(copy_p, v)
    return v


def _unbatched_output(o, size, ref):
    """`o` repeated along a new leading batch axis (a broadcast view)."""
    if size is not None:
        return broadcast_to(expand_dims(o, 0), (size,) + tuple(o.shape))
    # the batch size is unknown while tracing (input_signature with None): the size of a
    # mapped input's batch axis, read when the graph runs
    x, ax = ref
    n = getitem(shape_of(x, np.int64), (slice(ax, ax + 1),))
    shape = bind(concatenate_p, n, constant(np.asarray(o.shape, np.int64)), axis=0)
    return bind(broadcast_dynamic_p, expand_dims(o, 0), shape,
                static=(None,) + tuple(o.shape))


def _broadcast_axes(axes, struct, n):
    if axes is None or isinstance(axes, int):
        return [axes] * n
    leaves = []
    for a, s in zip(axes, struct):
        leaves.extend(_broadcast_axes(a, s, len(tree.flatten(s))))
    return leaves


def batch_map(fn, elems):
    """`fn` mapped over the first axis of the arrays `elems` (a nested structure) in one
    batched call: `nf.vectorized_map` for library functions (the tape's Jacobian rows, forward
    mode's pushes), which AutoGraph leaves as they are, on arrays.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> from ndflow.vectorize.batching import batch_map
    >>> batch_map(lambda row: row * row, tnp.asarray([[1., 2.], [3., 4.]]))
    array([[ 1.,  4.],
           [ 9., 16.]], dtype=float64)
    """
    return _batch_call(fn, (elems,), 0, 0)


def vmap(fn, in_axes=0, out_axes=0, *, convert=None):
    """`vmap(f, in_axes, out_axes)(*args)` maps over the given argument axes (None = not
    mapped), on arrays: the NumPy layer's batched loops use it. `convert` makes arrays of Python
    data among the mapped inputs and the results (`nf.vmap`, vectorize/mapping.py, passes the
    NumPy API's `asarray`); None: a TypeError names what is not an array.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> from ndflow.vectorize.batching import vmap
    >>> vmap(lambda a, b: a * b, in_axes=(0, None))(tnp.asarray([1., 2.]), tnp.asarray(3.))
    array([3., 6.], dtype=float64)
    """
    @functools.wraps(fn)
    def wrapped(*args):
        ax = in_axes if not isinstance(in_axes, list) else tuple(in_axes)
        if isinstance(ax, tuple) and len(ax) != len(args):
            raise ValueError(f"vmap in_axes has {len(ax)} entries for {len(args)} arguments")
        return _batch_call(fn, args, ax, out_axes, convert)
    return wrapped
