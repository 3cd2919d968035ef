"""Forward mode (`ForwardAccumulator`, `jvp`), Jacobians (`jacfwd`, `jacrev`, `hessian`) and
`stop_gradient`.

Forward mode needs no JVP rule per primitive. A primitive's VJP `u -> vjp(u, *x)` is linear in
the cotangent `u`, and its transpose is the JVP: differentiating `<vjp(u, *x), t>` with respect
to `u` gives `J t`. So when an accumulator sees a primitive applied to values that carry
tangents, it binds the VJP on a zero cotangent that a private tape watches and asks that tape
for the gradient with the input tangents as output gradients: every primitive with a VJP has
forward mode. A primitive that defines `jvp(tangents, *primals, **params)` (tangents: one per
input, None where there is none; returns the output tangent(s), None for zero) uses that
instead.

Accumulators observe `bind` like tapes and compute tangents as the operations run, so they work
eagerly, inside `nf.function` and inside `vectorized_map`, and nest with tapes and with each
other: the tangent computations of an accumulator are seen by the tapes and accumulators that
were active before it (outside it), as in TensorFlow. Forward-over-backward (a tape inside an
accumulator) gives Hessian-vector products; backward-over-forward works too.
"""
import functools

import numpy as np

from .. import numpy as tnp
from ..core.ndarray import ndarray, new_tid
from ..core.primitive import bind
from ..core.state import STATE
from ..core import dtypes as _dt
from ..core import tree
from ..core.variable import VariableBase
from ..primitives import elementwise as E, shape as S
from ..primitives.indexing import getitem
from ..primitives.misc import stop_gradient_p
from ..vectorize import batching
from ..ops import constant, reshape
from .tape import GradientTape, UnconnectedGradients
from .functional import numpy_call, to_numpy

# The NumPy layer (tnp) converts what a caller passes (primals, tangents, arguments: Python
# and NumPy values, with NumPy's weak scalars, prefer_float32 and device placement); the
# derivatives themselves are computed with primitives.

__all__ = ["ForwardAccumulator", "jvp", "jacfwd", "jacrev", "hessian", "stop_gradient"]


def _ensure_tid(x):
    if not x._tid:
        x._tid = new_tid()
    return x._tid


def _is_float(dtype):
    return _dt.is_differentiable(dtype)


class ForwardAccumulator:
    """Forward-mode autodiff, as `tf.autodiff.ForwardAccumulator`: tangents of `primals` in the
    direction `tangents` are pushed through every operation run inside the `with` block.

    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> x = tnp.asarray([1.0, 2.0])
    >>> with nf.ForwardAccumulator(x, tnp.asarray([1.0, 0.0])) as acc:
    ...     y = tnp.sum(x ** 3)
    >>> float(acc.jvp(y))
    3.0
    """

    def __init__(self, primals, tangents):
        self._tangents = {}          # tid -> tangent of the value with that tid
        self._connected = self._tangents   # what nf.function and tapes' peers look up
        self._vars = {}              # id(Variable) -> (Variable, tangent)
        self._keep = []              # primal values, kept alive so their tids are not reused
        self._recording = False
        p_leaves, p_def = tree.flatten_with_def(primals)
        t_leaves, t_def = tree.flatten_with_def(tangents)
        if len(p_leaves) != len(t_leaves) or (len(p_leaves) > 1 and repr(p_def) != repr(t_def)):
            raise ValueError(f"ForwardAccumulator: tangents must have the structure of primals "
                             f"({len(p_leaves)} primals, {len(t_leaves)} tangents)")
        for p, t in zip(p_leaves, t_leaves):
            if isinstance(p, VariableBase):
                val = p._read_for_tape()
                t = self._check_tangent(val, t)
                self._vars[id(p)] = (p, t)
            elif isinstance(p, ndarray):
                val = p
                t = self._check_tangent(val, t)
            else:
                raise TypeError(f"ForwardAccumulator primals must be arrays or Variables, got "
                                f"{type(p).__name__}")
            if t is not None:
                self._keep.append(val)
                self._tangents[_ensure_tid(val)] = t

    @staticmethod
    def _check_tangent(p, t):
        if not _is_float(p.dtype):
            return None              # integer and bool values carry no tangent
        if not isinstance(t, ndarray):
            t = tnp.asarray(t, dtype=p.dtype)
        if t.dtype != p.dtype:
            raise ValueError(f"ForwardAccumulator: tangent of dtype {t.dtype.name} for a primal "
                             f"of dtype {p.dtype.name}; they must match")
        if None not in p.shape and None not in t.shape and tuple(t.shape) != tuple(p.shape):
            raise ValueError(f"ForwardAccumulator: tangent of shape {tuple(t.shape)} for a "
                             f"primal of shape {tuple(p.shape)}; they must match")
        return t

    # ------------------------------------------------------------------ scope
    def __enter__(self):
        if self._recording:
            raise ValueError("This ForwardAccumulator is already active; it cannot be entered "
                             "again")
        STATE.tapes.append(self)
        STATE.refresh()
        self._recording = True
        return self

    def __exit__(self, *exc):
        st = STATE
        if self in st.tapes:
            st.tapes.remove(self)
            st.refresh()
        self._recording = False
        return False

    # the protocol tapes share (bind, Variables, custom_gradient call these on every observer)
    def watched_variables(self):
        return tuple(v for v, _ in self._vars.values())

    def _on_variable_read(self, var):
        entry = self._vars.get(id(var))
        if entry is not None:
            val = var._read_for_tape()
            if val._tid not in self._tangents:
                self._keep.append(val)
                self._tangents[_ensure_tid(val)] = entry[1]

    def _record(self, prim, args, outs, params):
        tans = self._tangents
        ts = [tans.get(a._tid) if a._tid else None for a in args]
        for t in ts:
            if t is not None:
                break
        else:
            return
        if type(outs) is not tuple:
            outs = (outs,)
        st = STATE
        saved = st.tapes
        # the tangent computation is seen by the observers outside this one only
        k = next((i for i, t in enumerate(saved) if t is self), len(saved))
        st.tapes = saved[:k]
        st.refresh()
        try:
            out_ts = _push_tangents(prim, args, outs, params, ts)
        finally:
            st.tapes = saved
            st.refresh()
        for o, t in zip(outs, out_ts):
            if t is not None and _is_float(o.dtype):
                tans[_ensure_tid(o)] = t

    # ------------------------------------------------------------------ results
    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangents of `primals` (a nested structure of values computed inside the `with`
        block): None for values that do not depend on the accumulator's primals, or zeros with
        `unconnected_gradients='zero'`."""
        if isinstance(unconnected_gradients, str):
            unconnected_gradients = UnconnectedGradients(unconnected_gradients)
        leaves, d = tree.flatten_with_def(primals)
        out = []
        for y in leaves:
            if isinstance(y, VariableBase):
                entry = self._vars.get(id(y))
                t = entry[1] if entry is not None else None
                y = y._read_for_tape()
            elif isinstance(y, ndarray):
                t = self._tangents.get(y._tid) if y._tid else None
            else:
                t = None
                y = tnp.asarray(y)
            if t is None and unconnected_gradients == UnconnectedGradients.ZERO:
                t = bind(E.zeros_like_p, y)
            out.append(t)
        return tree.unflatten(d, out)

    def __repr__(self):
        return "<ForwardAccumulator: %d values with tangents>" % len(self._tangents)


def _push_tangents(prim, args, outs, params, ts):
    """Output tangents of one primitive application, given its input tangents `ts`."""
    if prim.jvp is not None:
        r = prim.jvp(tuple(ts), *args, **params)
        return tuple(r) if prim.multiple_results else (r,)
    if prim.vjp is None:
        raise LookupError(f"No forward-mode derivative for operation '{prim.name}' (ndflow "
                          f"primitive without a JVP or VJP rule)")
    us = [bind(E.zeros_like_p, o) if _is_float(o.dtype) else None for o in outs]
    watched = [u for u in us if u is not None]
    if not watched:
        return (None,) * len(outs)
    with GradientTape() as t:
        t.watch(watched)
        if prim.multiple_results:
            ct = tuple(u if u is not None else bind(E.zeros_like_p, o) for u, o in zip(us, outs))
        else:
            ct = us[0]
        if prim.vjp_uses_out:
            cts = prim.vjp(ct, *args, out=outs if prim.multiple_results else outs[0],
                           **params)
        else:
            cts = prim.vjp(ct, *args, **params)
    targets, ogs = [], []
    for c, tan in zip(cts, ts):
        if c is not None and tan is not None:
            targets.append(c)
            ogs.append(tan)
    if not targets:
        return (None,) * len(outs)
    res = iter(t.gradient(targets, watched, output_gradients=ogs))
    return tuple(None if u is None else next(res) for u in us)


# ------------------------------------------------------------------ functional forms
def _as_arrays(x):
    return tree.map_structure(lambda a: a if isinstance(a, ndarray) else tnp.asarray(a), x)


def _distinct(leaves):
    """The same array passed twice is two independent inputs: give the repeats new values."""
    seen = set()
    out = []
    for x in leaves:
        if id(x) in seen:
            x = bind(E.copy_p, x)
        seen.add(id(x))
        out.append(x)
    return out


def jvp(fun, primals, tangents, has_aux=False):
    """`(fun(*primals), J(primals) @ tangents)`, as `jax.jvp`: `primals` and `tangents` are
    sequences with one entry (a nested structure of arrays) per argument of `fun`. With
    `has_aux`, `fun` returns `(out, aux)` and the result is `(out, tangent_out, aux)`. NumPy
    values for a NumPy call (NumPy primals and tangents), as `nf.value_and_grad`'s."""
    if numpy_call((primals, tangents), {}):
        return to_numpy(_jvp(fun, primals, tangents, has_aux))
    return _jvp(fun, primals, tangents, has_aux)


def _jvp(fun, primals, tangents, has_aux):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists (one entry per "
                        "argument of fun)")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    p_leaves, p_def = tree.flatten_with_def(_as_arrays(tuple(primals)))
    p_leaves = _distinct(p_leaves)
    t_leaves = tree.flatten(tuple(tangents))
    if len(t_leaves) != len(p_leaves):
        raise ValueError("jvp: tangents must have the structure of primals")
    with ForwardAccumulator(p_leaves, t_leaves) as acc:
        out = fun(*tree.unflatten(p_def, p_leaves))
    if has_aux:
        out, aux = out
    t_out = acc.jvp(out, unconnected_gradients="zero")
    return (out, t_out, aux) if has_aux else (out, t_out)


def _argnums(argnums, n):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -n <= i < n:
            raise ValueError(f"argnums {argnums!r} out of range for a function called with {n} "
                             f"positional arguments")
    return nums


def _prepare(name, args, argnums):
    """(args with the differentiated ones as arrays, their leaves, their structure)."""
    args = list(args)
    nums = _argnums(argnums, len(args))
    for i in nums:
        args[i] = _as_arrays(args[i])
    dyn = args[nums[0]] if isinstance(argnums, int) else tuple(args[i] for i in nums)
    leaves, in_def = tree.flatten_with_def(dyn)
    for x in leaves:
        if not _is_float(x.dtype):
            raise TypeError(f"{name} requires real- or complex-valued inputs, got an argument "
                            f"of dtype {x.dtype.name}")
    distinct = _distinct(leaves)
    dyn = tree.unflatten(in_def, distinct)
    if isinstance(argnums, int):
        args[nums[0]] = dyn
    else:
        for i, d in zip(nums, dyn):
            args[i] = d
    return args, distinct, in_def


def _basis(shapes, dtypes):
    """One identity basis over the concatenated flattened leaves, split per leaf: leaf j gets
    an array (n, *shape_j)."""
    sizes = [_size(s) for s in shapes]
    n = sum(sizes)
    eye = np.eye(n)
    out, off = [], 0
    for s, k, dt in zip(shapes, sizes, dtypes):
        out.append(constant(eye[:, off:off + k].reshape((n,) + tuple(s)).astype(dt)))
        off += k
    return out, sizes


def _size(shape):
    n = 1
    for d in shape:
        if d is None:
            raise ValueError("jacfwd/jacrev need inputs and outputs of known shape")
        n *= d
    return n


def _assemble(rows, row_sizes, row_shapes, col_shapes, row_major):
    """Blocks of a Jacobian from stacked products. `rows[j]` stacks the product for every basis
    vector along axis 0, over the concatenated flattened leaves of one side; returns
    blocks[o][j] of shape out_shape_o + in_shape_j."""
    blocks = []
    if row_major:
        # reverse mode: rows[j] is (m, *in_shape_j), the basis runs over the outputs
        off = 0
        for so, k in zip(row_shapes, row_sizes):
            blocks.append([reshape(getitem(r, (slice(off, off + k),)),
                                    tuple(so) + tuple(r.shape[1:])) for r in rows])
            off += k
        return blocks
    # forward mode: rows[o] is (n, *out_shape_o), the basis runs over the inputs
    for r in rows:
        so = tuple(r.shape[1:])
        moved = S.moveaxis(r, 0, -1)
        off, per = 0, []
        for si, k in zip(col_shapes, row_sizes):
            per.append(reshape(getitem(moved, (Ellipsis, slice(off, off + k))), so + tuple(si)))
            off += k
        blocks.append(per)
    return blocks


def _numpy_results(jacfun):
    """NumPy values for a NumPy call, as `nf.value_and_grad`'s."""
    @functools.wraps(jacfun)
    def wrapped(*args, **kwargs):
        if numpy_call(args, kwargs):
            return to_numpy(jacfun(*args, **kwargs))
        return jacfun(*args, **kwargs)
    return wrapped


def jacfwd(fun, argnums=0, has_aux=False):
    """The Jacobian of `fun` by forward mode, as `jax.jacfwd`: one JVP per input element,
    vectorized with `vectorized_map`. Each output leaf gets the structure of the differentiated
    argument(s), blocks of shape `out.shape + in.shape`. NumPy values for a NumPy call, as
    `nf.value_and_grad`'s."""
    @functools.wraps(fun, updated=())
    def jacfun(*args, **kwargs):
        args, leaves, in_def = _prepare("jacfwd", args, argnums)
        basis, sizes = _basis([x.shape for x in leaves], [x.dtype for x in leaves])

        def push(tans):
            with ForwardAccumulator(leaves, list(tans)) as acc:
                out = fun(*args, **kwargs)
            if has_aux:
                out, aux = out
                return acc.jvp(out, unconnected_gradients="zero"), aux
            return acc.jvp(out, unconnected_gradients="zero"), ()

        if sum(sizes) == 0:
            raise ValueError("jacfwd: the differentiated inputs are empty")
        t_out, aux = batching.batch_map(push, basis)
        o_leaves, o_def = tree.flatten_with_def(t_out)
        blocks = _assemble(o_leaves, sizes, None, [x.shape for x in leaves], row_major=False)
        jac = tree.unflatten(o_def, [tree.unflatten(in_def, b) for b in blocks])
        if has_aux:
            return jac, tree.map_structure(lambda a: a[0] if isinstance(a, ndarray) else a, aux)
        return jac
    return _numpy_results(jacfun)


def jacrev(fun, argnums=0, has_aux=False):
    """The Jacobian of `fun` by reverse mode, as `jax.jacrev`: one VJP per output element,
    vectorized with `vectorized_map` over the recorded tape. Same layout as `jacfwd`."""
    @functools.wraps(fun, updated=())
    def jacfun(*args, **kwargs):
        args, leaves, in_def = _prepare("jacrev", args, argnums)
        with GradientTape(persistent=True) as tape:
            tape.watch(leaves)
            out = fun(*args, **kwargs)
        aux = None
        if has_aux:
            out, aux = out
        o_leaves, o_def = tree.flatten_with_def(out)
        o_leaves = [o if isinstance(o, ndarray) else tnp.asarray(o) for o in o_leaves]
        basis, sizes = _basis([o.shape for o in o_leaves],
                              [o.dtype if _is_float(o.dtype) else leaves[0].dtype
                               for o in o_leaves])
        if sum(sizes) == 0:
            raise ValueError("jacrev: the outputs are empty")

        def pull(cts):
            return tape.gradient(o_leaves, leaves, output_gradients=list(cts),
                                 unconnected_gradients="zero")

        rows = batching.batch_map(pull, basis)
        blocks = _assemble(rows, sizes, [o.shape for o in o_leaves], None, row_major=True)
        jac = tree.unflatten(o_def, [tree.unflatten(in_def, b) for b in blocks])
        return (jac, aux) if has_aux else jac
    return _numpy_results(jacfun)


def hessian(fun, argnums=0, has_aux=False):
    """The Hessian of a scalar `fun`, as `jax.hessian`: `jacfwd(jacrev(fun))` (forward over
    reverse), blocks of shape `in.shape + in.shape`. NumPy values for a NumPy call, as
    `nf.value_and_grad`'s (so `scipy.optimize.minimize(..., hess=nf.hessian(f))` gets NumPy
    matrices)."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


def stop_gradient(x, name=None):
    """`x`, as a constant to every differentiation (tapes and forward accumulators), as
    `tf.stop_gradient` / `jax.lax.stop_gradient`. Accepts a nested structure.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> nf.grad(lambda x: x * nf.stop_gradient(x))(tnp.asarray(3.))
    array(3., dtype=float64)
    """
    def one(a):
        return bind(stop_gradient_p, a if isinstance(a, ndarray) else tnp.asarray(a))
    return tree.map_structure(one, x)
