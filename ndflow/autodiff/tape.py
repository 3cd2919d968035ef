"""`GradientTape`: records the primitives applied to watched values, then walks them backwards.

Tapes observe `bind`: each records `(primitive, inputs, outputs, params)` when an input is
connected to something it watches. Values are identified by `_tid` (not Python identity) so a
mutated array is a new value. A record holds the tape's own handles on the values its VJP
reads, and only the shape of the others (`tape_memory.py`: handles are copied before a write
changes their memory; writes under a recording tape are functional updates, as
`ndflow/core/mutation.py` describes).

The backward pass (`_backward`) is the specification: walk the records in reverse, call each
primitive's VJP rule on the cotangent of its output, sum the cotangents it gives with add. The
rules bind primitives themselves: under an outer tape they are recorded (higher order), inside
`nf.function` they become graph nodes, inside `vectorized_map` they are batched. A
non-persistent tape releases each record once its rule has run, and each cotangent once
consumed, so a long chain holds only what its remaining rules read.

In plain eager execution (nothing but this pass observes it) the same pass runs as the eager
plan (`eager_plan.py`: rules on host buffers, sums in place, cotangent donation), chosen in one
place, `_gradient`; tests/test_eager_plan.py checks it against this loop bit for bit.
"""
import contextlib
import enum
import warnings

import numpy as np

from ..core import dtypes as _dt
from ..core import tree
from ..core.ndarray import ndarray, _wrap, _tid_counter as _tids
from ..core.primitive import bind
from ..core.state import STATE
from ..core.variable import VariableBase
from ..core import mutation as _mut
from ..core.mutation import alias as _alias
from ..primitives import elementwise as E
from . import eager_plan, jacobian as _jac
from .tape_memory import TapeMemory, shape_only


def live_tapes():
    """Whether any tape (any thread) holds handles on eager buffers (see core/mutation.py)."""
    return bool(_mut.HOLDERS)


class UnconnectedGradients(enum.Enum):
    """What `GradientTape.gradient` returns for a source the target does not depend on, as
    `tf.UnconnectedGradients`: `NONE` (None, the default) or `ZERO` (zeros of the source's
    shape).

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> x, y = tnp.asarray(1.), tnp.asarray(2.)
    >>> with nf.GradientTape() as tape:
    ...     tape.watch([x, y])
    ...     z = x * 3.
    >>> tape.gradient(z, y, unconnected_gradients=nf.UnconnectedGradients.ZERO)
    array(0., dtype=float64)
    """
    NONE = "none"
    ZERO = "zero"


class GradientTape(TapeMemory):
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
        self._consumed = False    # a backward pass has begun releasing the records
        self._recording = False
        self._init_memory()

    # ------------------------------------------------------------------ recording
    def __enter__(self):
        # (_push, inlined: a tape per training step)
        if self._recording:
            self._push()                  # (its error)
        STATE.push_tape(self)
        self._recording = True
        return self

    def __exit__(self, *exc):
        STATE.pop_tape(self)              # (_pop, inlined)
        self._recording = False
        return False

    def _push(self):
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter "
                             "an already-active tape.")
        STATE.push_tape(self)
        self._recording = True

    def _pop(self):
        STATE.pop_tape(self)
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
        self._reset_memory()

    def watch(self, tensor):
        """Track `tensor` (an array, a Variable, or a nested structure of them)."""
        leaves = _flat(tensor)[0] if type(tensor) is not ndarray else (tensor,)
        for t in leaves:
            if type(t) is not ndarray:
                if isinstance(t, VariableBase):
                    self._watch_variable(t)
                    continue
                if not isinstance(t, ndarray):
                    raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, "
                                     f"not a tensor or variable, to tape.watch")
            if not _dt.is_differentiable(t.dtype):
                # TensorFlow warns too: the gradient of an integer or boolean array is None
                warnings.warn(f"The dtype of the watched tensor must be floating (e.g. float32) "
                              f"or complex, got {t.dtype}: its gradient will be None",
                              UserWarning, stacklevel=2)
            tid = t._tid
            if not tid:
                tid = t._tid = next(_tids)
            self._connected.add(tid)
            self._watched[tid] = t
            self._pending.append((t, tid))      # (_see, when needed: _flush)

    def _watch_variable(self, var):
        val = var._read_for_tape()
        if not val._tid:
            val._tid = next(_tids)
        self._connected.add(val._tid)
        self._watched[val._tid] = val
        entry = self._var_reads.setdefault(id(var), (var, []))
        if not any(v is val for v in entry[1]):
            entry[1].append(val)

    def _on_variable_read(self, var):
        if self._watch_vars and var.trainable:
            self._watch_variable(var)

    def watched_variables(self):
        return tuple(v for v, _ in self._var_reads.values())

    def _record(self, prim, args, outs, params):
        """`prim(*args, **params) -> outs` ran (outs: an array, or a tuple for several): a
        record when an input is connected to what this tape watches. Inputs the rule reads are
        kept (`_keep`), the others by shape only; a single output the rule does not read is
        named by its tid alone."""
        conn = self._connected
        for a in args:
            if a._tid in conn:
                break
        else:
            return
        reads = prim.vjp_reads
        if reads is None:
            # (most records have two inputs: the tuple without a map over them)
            handles = (_alias(args[0]), _alias(args[1])) if len(args) == 2 else \
                tuple(map(_alias, args))
            if not self._held:
                self._hold(handles)
        elif not reads:
            handles = (shape_only(args[0]), shape_only(args[1])) if len(args) == 2 else \
                tuple(map(shape_only, args))
        else:
            keep = self._keep
            handles = tuple([keep(a) if i in reads else shape_only(a)
                             for i, a in enumerate(args)])
        if type(outs) is not tuple and not (prim.vjp_uses_out or prim.multiple_results):
            # (the common record: one output, named by its tid alone, with no tuple around it)
            outh = outs._tid = outs._tid or next(_tids)
            conn.add(outh)
        else:
            outs = outs if type(outs) is tuple else (outs,)
            for o in outs:
                if not o._tid:
                    o._tid = next(_tids)
                conn.add(o._tid)
            outh = tuple(map(self._keep, outs)) if prim.vjp_uses_out else outs[0]._tid \
                if len(outs) == 1 and not prim.multiple_results else tuple(map(shape_only, outs))
        if prim.returns_view:
            self._see_view(prim, args, outs if type(outs) is tuple else (outs,), handles, params)
        self._records.append((prim, handles, outh, params))

    # ------------------------------------------------------------------ differentiation
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of targets)/d(sources), with the structure of `sources`.

        As `tf.GradientTape.gradient`: a source the targets do not reach gets None (zeros with
        `unconnected_gradients='zero'`), an integer or boolean source None; a gradient has its
        source's dtype. `output_gradients` weight the targets (one per target)."""
        if not self._persistent and self._used:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")
        try:
            res = self._gradient(target, sources, output_gradients, unconnected_gradients,
                                 consume=not self._persistent)
        except BaseException:
            if self._consumed:
                # the backward pass had begun releasing the records: the tape cannot be
                # used again (rather than give gradients from what is left)
                self._release()
            raise
        if not self._persistent:
            self._release()
        return res

    def _release(self):
        self._used = True
        self._records = []
        self._reset_memory()

    def _gradient(self, target, sources, output_gradients, unconnected_gradients,
                  consume=False):
        zero = not _none_if_unconnected(unconnected_gradients)
        targets, ogs = _targets(target, output_gradients)
        leaves, treedef = _flat(sources)
        st = STATE
        saved = st.tapes
        if self._recording:
            # differentiating does not record on this tape itself; the others keep their order
            st.tapes = [t for t in saved if t is not self]
            st.refresh()
        try:
            ct = self._seeds(targets, ogs)
            tids, keep = self._source_tids(leaves)
            if consume:
                # nothing records on this tape any more: the backward pass releases each
                # record once it is used (the list stays the tape's until the pass ends: a
                # write meanwhile still finds the handles of the records not yet used)
                if self._links:
                    self._links = {}
                self._consumed = True
            if eager_plan.takes(st):
                eager_plan.backward(self, ct, keep, consume)
            else:
                self._backward(ct, keep, consume)
            if self._poison:
                self._check_poison(ct, keep)
            out = [self._result(s, tid, ct, zero) for s, tid in zip(leaves, tids)]
        finally:
            if st.tapes is not saved:
                st.tapes = saved
                st.refresh()
        if treedef is list:
            return out
        if treedef is tuple:
            return tuple(out)
        return tree.unflatten(treedef, out)

    def _check_poison(self, ct, keep):
        bad = [t for t in ct if t in self._poison and t not in keep]
        if bad:
            raise ValueError("GradientTape: " + self._poison[bad[0]])

    def _seeds(self, targets, ogs):
        """The cotangent table (tid -> array) at the start: ones for each connected target, or
        its output gradient (summed for a target given twice)."""
        ct = {}
        for t, og in zip(targets, ogs):
            if isinstance(t, VariableBase):
                t = t.value()
            if not isinstance(t, ndarray) or not t._tid or t._tid not in self._connected:
                continue
            g = _ones(t) if og is None else _output_gradient(og, t)
            prev = ct.get(t._tid)
            ct[t._tid] = g if prev is None else prev + g
        return ct

    def _source_tids(self, sources):
        """The tid naming each source (the value the tape first saw: a source written since
        names its old value; 0 for a Variable), and the tids whose cotangents the backward
        pass must keep (the sources', a Variable's values read under the tape)."""
        for t, tid in self._pending:
            if t._tid != tid:
                self._flush()   # a watched array renamed since (written while not recording)
                break
        objs = self._objs
        tids, keep = [], set()
        for s in sources:
            tid = 0
            if isinstance(s, ndarray) and s._tid:
                e = objs.get(id(s)) if objs else None
                tid = e[1] if e is not None and e[0]() is s else s._tid
                keep.add(tid)
            elif isinstance(s, VariableBase):
                keep.update(v._tid for v in self._var_reads.get(id(s), (None, []))[1])
            tids.append(tid)
        return tids, keep

    def _backward(self, ct, keep, consume):
        """The reference backward pass: the records in reverse, each one's rule on its
        cotangent, the cotangents it gives summed with add. `ct` (tid -> cotangent) holds the
        seeds and ends with every value's cotangent; those of `keep` (the sources) are left in
        it when their record consumes them (a source may also be an intermediate value);
        `consume` releases each record once used (a non-persistent tape)."""
        for i in range(len(self._records) - 1, -1, -1):
            self._step(i, ct, keep, consume, _sum)

    def _step(self, i, ct, keep, consume, accumulate):
        """Record i of the backward pass: its VJP rule on the cotangent(s) of its outputs (None:
        none reached them, nothing to do), each input gradient summed into the table by
        `accumulate(ct, tid, g)` (the eager plan sums in place)."""
        prim, args, outs, params = self._records[i]
        c = _cotangent_in(prim, outs, ct, keep)
        if c is not None:
            if prim.vjp is None:
                raise LookupError(f"No gradient defined for operation '{prim.name}' "
                                  f"(ndflow primitive without a VJP rule)")
            conn = self._connected
            if prim.vjp_needs:
                params = dict(params, needs=tuple(a._tid in conn for a in args))
            if prim.vjp_uses_out:
                # a multi-result primitive's rule gets all its outputs (eigh: w and v)
                grads = prim.vjp(c, *args, out=outs if prim.multiple_results else outs[0],
                                 **params)
            else:
                grads = prim.vjp(c, *args, **params)
            c = None
            for a, g in zip(args, grads):
                # (tid 0 is never in conn)
                if g is not None and a._tid in conn and _dt.is_differentiable(a._v.dtype):
                    accumulate(ct, a._tid, g)
        if consume:
            # (released once its rule has run: a write during the rule, a custom gradient's,
            # still finds its handles)
            self._records[i] = None

    def _result(self, s, tid, ct, zero):
        """Source `s`'s gradient from the table: of its dtype; None where no gradient flows
        (zeros where `zero` asks for them) and for a source of a dtype without gradients."""
        if type(s) is ndarray and tid:
            g = ct.get(tid)
            if g is not None and g._v.dtype is s._v.dtype and _dt.is_differentiable(s._v.dtype):
                return g                  # (the common case of the checks below)
        if isinstance(s, VariableBase):
            g = None
            for v in self._var_reads.get(id(s), (None, []))[1]:
                c = ct.get(v._tid)
                if c is not None:
                    g = c if g is None else g + c
        elif isinstance(s, ndarray):
            g = ct.get(tid) if tid else None
        else:
            raise ValueError(f"gradient sources must be arrays or Variables, got "
                             f"{type(s).__name__}")
        d = s.dtype
        if not _dt.is_differentiable(d):
            return None
        if g is None:
            return bind(E.zeros_like_p, s.value() if isinstance(s, VariableBase) else s) \
                if zero else None
        if g.dtype != d:
            if d.kind != "c" and g.dtype.kind == "c":
                g = bind(E.real_p, g)
            g = bind(E.convert_p, g, dtype=d)
        return g

    # ------------------------------------------------------------------ Jacobians
    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """Full Jacobian: result shape target.shape + source.shape, per source; None for a
        source the target does not depend on (zeros with `unconnected_gradients='zero'`).

        With `experimental_use_pfor` (default) the backward pass is vectorized over the output
        elements with `vectorized_map`; otherwise it loops over them."""
        self._check_unused()
        return _jac.jacobian(self, target, sources, _none_if_unconnected(unconnected_gradients),
                             experimental_use_pfor)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example Jacobians: target (b, m...) and source (b, n...) -> (b, m..., n...),
        assuming example i of the target depends only on example i of the source. None when
        the target does not depend on the source (zeros with `unconnected_gradients='zero'`)."""
        self._check_unused()
        return _jac.batch_jacobian(self, target, source,
                                   _none_if_unconnected(unconnected_gradients),
                                   experimental_use_pfor)

    def _check_unused(self):
        if not self._persistent and self._used:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")


def _none_if_unconnected(u):
    # (the default first: an enum's call costs more than the rest of a small gradient's
    # bookkeeping)
    return u is UnconnectedGradients.NONE or UnconnectedGradients(u) is UnconnectedGradients.NONE


def _flat(sources):
    """The sources' leaves and how to rebuild their structure (list or tuple: as they are)."""
    t = type(sources)
    if t is list or t is tuple:
        for s in sources:
            if type(s) is not ndarray:
                break
        else:
            return sources, t
    return tree.flatten_with_def(sources)


def _targets(target, output_gradients):
    """The flat targets, and an output gradient (None: ones) for each."""
    targets = [target] if type(target) is ndarray else tree.flatten(target)
    if output_gradients is None:
        return targets, [None] * len(targets)
    ogs = tree.flatten(output_gradients)
    if len(ogs) != len(targets):
        raise ValueError("output_gradients must have the structure of target")
    return targets, ogs


def _ones(t):
    """Target `t`'s seed: a new array of ones like it (NumPy's ones for an eager host array:
    np.ones_like, the primitive's kernel, costs eight times as much on a NumPy scalar, the
    value of a whole-array sum)."""
    v = t._v
    if t._t is None and t._dev is None and isinstance(v, (np.ndarray, np.generic)):
        v = np.empty(v.shape, v.dtype)
        v.fill(1)                         # (np.ones' copyto of 1, without its Python frame)
        return _wrap(v)
    return bind(E.ones_like_p, t)


def _output_gradient(og, like):
    """An output gradient given by the caller, as an array of its target's dtype (a NumPy
    array's buffer is used as it is, as `tnp.asarray` does; the backward pass never writes
    into it: the eager plan writes only into cotangents that it alone holds)."""
    if isinstance(og, VariableBase):
        og = og.value()
    d = like.dtype
    if isinstance(og, ndarray):
        return og if og.dtype == d else bind(E.convert_p, og, dtype=d)
    return _wrap(np.asarray(og, d))


def _cotangent_in(prim, outs, ct, keep):
    """The cotangent a record's rule takes, taken from the table (left there for a value in
    `keep`); None when none reached the record's outputs. `outs` is the output's tid, or the
    outputs' handles (see `_record`); a multiple-results rule gets one per output (zeros for
    those none reached)."""
    if type(outs) is int:
        return ct.get(outs) if outs in keep else ct.pop(outs, None)
    cs = [ct.get(o._tid) if o._tid in keep else ct.pop(o._tid, None) for o in outs]
    if not prim.multiple_results:
        return cs[0]
    if all(c is None for c in cs):
        return None
    return tuple(bind(E.zeros_like_p, o) if c is None else c for c, o in zip(cs, outs))


def _sum(ct, tid, g):
    prev = ct.get(tid)
    ct[tid] = g if prev is None else prev + g


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
