"""`GradientTape`: records the primitives applied to watched values, then walks them backwards.

Tapes observe `bind`: each records `(primitive, inputs, outputs, params)` when an input is
connected to something it watches. Values are identified by `_tid` (not Python identity) so a
mutated array is a new value. Gradients are computed by calling the primitives' VJP rules, which
bind primitives themselves: under an outer tape they are recorded (higher order), inside
`nf.function` they become graph nodes, inside `vectorized_map` they are batched.
"""
import contextlib
import enum
import weakref

from ..core.ndarray import ndarray, new_tid
from ..core.primitive import bind, Primitive
from ..core.state import STATE
from ..core import dtypes as _dt
from ..core import tree

_LIVE = weakref.WeakSet()    # tapes that hold records (mutation must not change what they saw)


def live_tapes():
    return bool(_LIVE)


def before_mutation(x):
    """`x` is about to hold a new value: records that saw its old value keep a snapshot."""
    if not _LIVE or not x._tid:
        return
    snap = object.__new__(ndarray)
    snap._v, snap._t, snap._dev, snap._tid = x._v, x._t, x._dev, x._tid
    if x._t is not None:
        snap._aux = getattr(x, "_aux", None)
    for tape in list(_LIVE):
        recs = tape._records
        for i, (p, args, outs, params) in enumerate(recs):
            if any(a is x for a in args) or any(o is x for o in outs):
                recs[i] = (p, tuple(snap if a is x else a for a in args),
                           tuple(snap if o is x else o for o in outs), params)
        for k, v in list(tape._watched.items()):
            if v is x:
                tape._watched[k] = snap


class UnconnectedGradients(enum.Enum):
    NONE = "none"
    ZERO = "zero"


def _ensure_tid(x):
    if not x._tid:
        x._tid = new_tid()
    return x._tid


class GradientTape:
    """Record operations for automatic differentiation, as `tf.GradientTape`.

    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> x = tnp.asarray(3.0)
    >>> with nf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> float(tape.gradient(y, x))
    6.0
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_vars = watch_accessed_variables
        self._records = []
        self._connected = set()
        self._watched = {}        # tid -> array (kept alive so tids are not reused)
        self._var_reads = {}      # id(var) -> (var, [values read])
        self._used = False
        self._recording = False

    # ------------------------------------------------------------------ recording
    def __enter__(self):
        self._push()
        return self

    def __exit__(self, *exc):
        self._pop()
        return False

    def _push(self):
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter "
                             "an already-active tape.")
        STATE.tapes.append(self)
        STATE.refresh()
        self._recording = True
        _LIVE.add(self)

    def _pop(self):
        if self in STATE.tapes:
            STATE.tapes.remove(self)
            STATE.refresh()
        self._recording = False

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording operations on this tape."""
        if not self._recording:
            raise ValueError("Tape is not recording.")
        self._pop()
        try:
            yield
        finally:
            self._push()

    def reset(self):
        """Clear everything recorded so far (the tape keeps recording if it was)."""
        self._records = []
        self._connected = set()
        self._watched = {}
        self._var_reads = {}

    def watch(self, tensor):
        """Track `tensor` (an array, a Variable, or a nested structure of them)."""
        from ..train.variable import Variable
        for t in tree.flatten(tensor):
            if isinstance(t, Variable):
                self._watch_variable(t)
                continue
            if not isinstance(t, ndarray):
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not a "
                                 f"tensor or variable, to tape.watch")
            tid = _ensure_tid(t)
            self._connected.add(tid)
            self._watched[tid] = t

    def _watch_variable(self, var):
        val = var._read_for_tape()
        tid = _ensure_tid(val)
        self._connected.add(tid)
        self._watched[tid] = val
        entry = self._var_reads.setdefault(id(var), (var, []))
        if not any(v is val for v in entry[1]):
            entry[1].append(val)

    def _on_variable_read(self, var):
        if self._watch_vars and var.trainable:
            self._watch_variable(var)

    def watched_variables(self):
        return tuple(v for v, _ in self._var_reads.values())

    def _record(self, prim, args, outs, params):
        conn = self._connected
        for a in args:
            if a._tid and a._tid in conn:
                break
        else:
            return
        if type(outs) is not tuple:
            outs = (outs,)
        for o in outs:
            conn.add(_ensure_tid(o))
        self._records.append((prim, args, outs, params))

    # ------------------------------------------------------------------ differentiation
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of targets)/d(sources), with the structure of `sources`."""
        if not self._persistent and self._used:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")
        res = self._gradient(target, sources, output_gradients, unconnected_gradients)
        if not self._persistent:
            self._used = True
            self._records = []
            _LIVE.discard(self)
        return res

    def _gradient(self, target, sources, output_gradients, unconnected_gradients):
        from ..train.variable import Variable
        from .. import numpy as tnp
        if isinstance(unconnected_gradients, str):
            unconnected_gradients = UnconnectedGradients(unconnected_gradients)
        targets = tree.flatten(target)
        src_leaves, src_def = tree.flatten_with_def(sources)
        if output_gradients is None:
            ogs = [None] * len(targets)
        else:
            ogs = tree.flatten(output_gradients)
            if len(ogs) != len(targets):
                raise ValueError("output_gradients must have the structure of target")
        st = STATE
        saved = st.tapes
        if self._recording:
            # differentiating does not record on this tape itself; the others keep their order
            st.tapes = [t for t in saved if t is not self]
            st.refresh()
        try:
            ct = {}
            for t, og in zip(targets, ogs):
                if isinstance(t, Variable):
                    t = t.value()
                if not isinstance(t, ndarray) or not t._tid or t._tid not in self._connected:
                    continue
                g = tnp.ones_like(t) if og is None else tnp.asarray(og, dtype=t.dtype)
                ct[t._tid] = g if t._tid not in ct else ct[t._tid] + g
            keep = set()
            for s in src_leaves:
                if isinstance(s, ndarray) and s._tid:
                    keep.add(s._tid)
                elif isinstance(s, Variable):
                    for v in self._var_reads.get(id(s), (None, []))[1]:
                        keep.add(v._tid)
            conn = self._connected
            for prim, args, outs, params in reversed(self._records):
                cts = [ct.get(o._tid) if o._tid in keep else ct.pop(o._tid, None) for o in outs]
                if all(c is None for c in cts):
                    continue
                if prim.vjp is None:
                    raise LookupError(f"No gradient defined for operation '{prim.name}' "
                                      f"(ndflow primitive without a VJP rule)")
                if prim.multiple_results:
                    cts = [c if c is not None else tnp.zeros_like(o) for c, o in zip(cts, outs)]
                    c_in = tuple(cts)
                else:
                    c_in = cts[0]
                if prim.vjp_uses_out:
                    # a multi-result primitive's rule gets all its outputs (eigh: w and v)
                    grads = prim.vjp(c_in, *args, out=outs if prim.multiple_results
                                     else outs[0], **params)
                else:
                    grads = prim.vjp(c_in, *args, **params)
                for a, g in zip(args, grads):
                    if g is None or not a._tid or a._tid not in conn:
                        continue
                    if not _dt.is_differentiable(a.dtype):
                        continue
                    prev = ct.get(a._tid)
                    ct[a._tid] = g if prev is None else prev + g
            out = []
            for s in src_leaves:
                g = None
                if isinstance(s, Variable):
                    for v in self._var_reads.get(id(s), (None, []))[1]:
                        c = ct.get(v._tid)
                        if c is not None:
                            g = c if g is None else g + c
                    ref = s
                elif isinstance(s, ndarray):
                    g = ct.get(s._tid) if s._tid else None
                    ref = s
                else:
                    raise ValueError(f"gradient sources must be arrays or Variables, got "
                                     f"{type(s).__name__}")
                if g is not None and _dt.is_differentiable(ref.dtype) and g.dtype != ref.dtype:
                    g = g.astype(ref.dtype) if ref.dtype.kind == "c" or g.dtype.kind != "c" else tnp.real(g).astype(ref.dtype)
                if g is None and unconnected_gradients == UnconnectedGradients.ZERO:
                    g = tnp.zeros_like(s.value() if isinstance(s, Variable) else s)
                if g is not None and not _dt.is_differentiable(ref.dtype):
                    g = None
                out.append(g)
        finally:
            if st.tapes is not saved:
                st.tapes = saved
                st.refresh()
        return tree.unflatten(src_def, out)

    def _jacobian_rows(self, target, src_leaves, basis, unconnected_gradients, use_pfor):
        """Gradients of `target` for every cotangent in `basis` (stacked along axis 0), one
        stacked array per source; None for a source the target does not reach under 'none'
        (decided by the backward pass itself: it is the same Python for every basis vector)."""
        from .. import numpy as tnp
        from ..train.variable import Variable
        from ..vectorize.batching import vectorized_map
        if isinstance(unconnected_gradients, str):
            unconnected_gradients = UnconnectedGradients(unconnected_gradients)
        unconnected = [False] * len(src_leaves)

        def zeros(s):
            return tnp.zeros(s.shape, s.dtype) if isinstance(s, Variable) else tnp.zeros_like(s)

        def one(ct):
            gs = self._gradient(target, src_leaves, ct, UnconnectedGradients.NONE)
            unconnected[:] = [g is None for g in gs]
            return [zeros(s) if g is None else g for g, s in zip(gs, src_leaves)]

        if use_pfor:
            rows = vectorized_map(one, basis)
        else:
            per = [one(basis[i]) for i in range(basis.shape[0])]
            rows = [tnp.stack([p[j] for p in per]) if per else
                    tnp.zeros((0,) + tuple(s.shape), s.dtype) for j, s in enumerate(src_leaves)]
        if not self._persistent:
            self._used = True
            self._records = []
            _LIVE.discard(self)
        if unconnected_gradients == UnconnectedGradients.NONE:
            rows = [None if u else r for r, u in zip(rows, unconnected)]
        return rows

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """Full Jacobian: result shape target.shape + source.shape, per source; None for a
        source the target does not depend on (zeros with `unconnected_gradients='zero'`).

        With `experimental_use_pfor` (default) the backward pass is vectorized over the output
        elements with `vectorized_map`; otherwise it loops over them."""
        from .. import numpy as tnp
        if not self._persistent and self._used:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")
        target = tnp.asarray(target) if not isinstance(target, ndarray) else target
        n = target.size
        if n is None:
            raise ValueError("jacobian needs a target of known size")
        basis = tnp.reshape(tnp.eye(n, dtype=target.dtype), (n,) + tuple(target.shape))
        src_leaves, src_def = tree.flatten_with_def(sources)
        rows = self._jacobian_rows(target, src_leaves, basis, unconnected_gradients,
                                   experimental_use_pfor)
        out = []
        for s, r in zip(src_leaves, rows):
            out.append(None if r is None else
                       tnp.reshape(r, tuple(target.shape) + tuple(s.shape)))
        return tree.unflatten(src_def, out)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example Jacobians: target (b, m...) and source (b, n...) -> (b, m..., n...),
        assuming example i of the target depends only on example i of the source. None when
        the target does not depend on the source (zeros with `unconnected_gradients='zero'`)."""
        from .. import numpy as tnp
        if not self._persistent and self._used:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")
        b = target.shape[0]
        if source.shape[0] != b:
            raise ValueError(f"Need first dimension of target shape ({tuple(target.shape)}) and "
                             f"source shape ({tuple(source.shape)}) to match.")
        tail = tuple(target.shape[1:])
        m = 1
        for d in tail:
            m *= d
        eye = tnp.eye(m, dtype=target.dtype)
        # ct_j: ones for output element j of every example
        basis = tnp.broadcast_to(tnp.reshape(eye, (m, 1) + tail), (m, b) + tail)
        rows = self._jacobian_rows(target, [source], basis, unconnected_gradients,
                                   experimental_use_pfor)[0]
        if rows is None:
            return None
        rows = tnp.moveaxis(rows, 0, 1)        # (b, m, source...)
        return tnp.reshape(rows, (b,) + tail + tuple(source.shape[1:]))


@contextlib.contextmanager
def stop_all_recording():
    """No tape records inside (used by custom_gradient for the forward pass)."""
    st = STATE
    saved = st.tapes
    st.tapes = []
    st.refresh()
    try:
        yield saved
    finally:
        st.tapes = saved
        st.refresh()
