"""`GradientTape`: records the primitives applied to watched values, then walks them backwards.

Tapes observe `bind`: each records `(primitive, inputs, outputs, params)` when an input is
connected to something it watches. Values are identified by `_tid` (not Python identity) so a
mutated array is a new value. A record holds the tape's own handles on the values (copied
before a write changes their memory), and writes are recorded as functional updates: the memory
and mutation model is described in `ndflow/core/mutation.py`. Gradients are computed by calling the primitives' VJP rules, which
bind primitives themselves: under an outer tape they are recorded (higher order), inside
`nf.function` they become graph nodes, inside `vectorized_map` they are batched.

Memory: a record keeps the values its VJP reads (`def_vjp(reads=...)`, `uses_out`); of the
other inputs and outputs it keeps only shape, dtype and identity. The backward pass of a
non-persistent tape releases each record once its VJP has run and each cotangent once
consumed; in plain eager execution (no other tape or trace sees it) cotangents are summed in
place, and a rule declared with `donate` may write into a cotangent the pass alone holds.

Speed: in plain eager execution the backward pass runs the common primitives' rules on the
NumPy buffers (`host_vjp.py`: the same kernels in the same order as the general rules, so the
same bits; an outer tape, a trace or a replaced rule gets the general rule), those records in
one tight loop (`_host_pass`) that hands any other record to the general body. Recording is
`bind`'s tape lane (`STATE.taping`; the NumPy layer calls `bind_taped` directly); a record
keeps shape-only handles for what its rule does not read and names a single unread output by
its tid alone. The index of handles a write must copy first is built from the records at the
first write that needs it (`_index`), and watching defers the bookkeeping of watched arrays
until a write or a renamed source needs it (`_flush`): most tapes see no write.
"""
import contextlib
import enum
import sys
import weakref

import numpy as _np

from ..core.ndarray import ndarray, new_tid, _wrap, _tid_counter as _tids
from ..core.primitive import bind, Primitive
from ..core.state import STATE
from ..core import dtypes as _dt
from ..core import tree
from ..core import mutation as _mut
from ..core.mutation import alias as _alias, root_of as _root_of
from ..core.variable import VariableBase
from .host_vjp import RULES as _HOST_RULES

_new = object.__new__
_ndarray = _np.ndarray
_weakref = weakref.ref
_LOCK = _mut.LOCK



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


_GHOSTS = {}    # shape -> the read-only broadcast zero last used for it (its dtype checked)
_GHOSTS_BY = {}  # (shape, id(dtype)) -> a read-only broadcast zero of that shape and dtype
_ZEROS = {}     # id(dtype) -> the 0-d zero those broadcast (never dropped: ids stay unique)
_ZERO_IDS = set()
_ONES = {}      # id(dtype) -> a read-only 0-d one (copied for a scalar loss's seed)
_DIFF = {}      # id(dtype) -> (dtype, whether gradients flow through it)


def _ghost(a):
    """A handle with `a`'s identity, shape and dtype that holds none of its memory (for a
    value whose VJP reads only its shape); `a` itself when it is not an eager NumPy array."""
    v = a._v
    if type(v) is not _ndarray or a._t is not None:
        return _alias(a)
    d = v.dtype
    # keyed by the dtype's identity (hashing a NumPy dtype costs more than the rest of this
    # function); the entry holds its dtype, so the id names the same object while it lives
    shape = v.shape
    key = (shape, id(d))
    z = _GHOSTS_BY.get(key)
    if z is None or z.dtype is not d:
        if len(_GHOSTS_BY) > 256:
            _GHOSTS_BY.clear()
            _GHOSTS.clear()
        z0 = _ZEROS.get(id(d))
        if z0 is None or z0.dtype is not d:
            # one zero per dtype, kept: the memory under every shape-only handle (_index
            # leaves it out; it is never written)
            z0 = _ZEROS[id(d)] = _np.zeros((), d)
            _ZERO_IDS.add(id(z0))
        z = _GHOSTS_BY[key] = _np.broadcast_to(z0, shape)
    # (the recording lane looks a ghost up by its shape alone: one hash of a short tuple)
    _GHOSTS[shape] = z
    h = _new(ndarray)
    h._v = z
    h._t = None
    h._dev = a._dev
    h._tid = a._tid
    return h


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
        # (_reset_memory's tables: a new tape holds no handles, so there is nothing to release)
        self._mem, self._objs, self._users, self._links, self._poison = {}, {}, {}, {}, {}
        self._indexed = 0
        self._held = False
        self._pending = []

    def _reset_memory(self):
        # (a table already empty is kept: the tape is usually dropped right after its
        # gradient, and no one else holds these tables)
        if self._mem:
            self._mem = {}        # id(root buffer) -> handles in records to copy before a write
        self._indexed = 0         # records[:_indexed] are in _mem (see _index)
        # (_held: in core.mutation.HOLDERS since the first handle kept; released below)
        if self._pending:
            self._pending = []    # (array, tid) watched, not yet _see'n (see _flush)
        if self._objs:
            self._objs = {}       # id(array) -> [weakref, tid when first seen]: gradient sources
        if self._users:
            self._users = {}      # id(root buffer) -> weakrefs of arrays seen, sharing it
        if self._links:
            self._links = {}      # id(view) -> (weakref view, weakref base, prim, args, params)
        if self._poison:
            self._poison = {}     # tid -> why its gradient cannot be followed
        if self._held:
            self._held = False
            _mut.release(self)

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
        tt = type(tensor)
        if tt is ndarray:
            leaves = (tensor,)
        else:
            leaves = None
            if tt is list or tt is tuple:
                for t in tensor:
                    if type(t) is not ndarray:
                        break
                else:
                    leaves = tensor
            if leaves is None:
                leaves = tree.flatten(tensor)
        for t in leaves:
            if type(t) is ndarray:
                tid = t._tid
                if not tid:
                    tid = t._tid = next(_tids)
                self._connected.add(tid)
                self._watched[tid] = t
                self._pending.append((t, tid))      # (_see, when needed: _flush)
                continue
            if isinstance(t, VariableBase):
                self._watch_variable(t)
                continue
            if not isinstance(t, ndarray):
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not a "
                                 f"tensor or variable, to tape.watch")
            tid = _ensure_tid(t)
            self._connected.add(tid)
            self._watched[tid] = t
            self._pending.append((t, tid))

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
            if a._tid in conn:
                break
        else:
            return
        reads = prim.vjp_reads
        if reads is None and len(args) == 2 and args[0]._t is None and args[1]._t is None:
            # (_keep, inlined for two eager arrays: this runs for every recorded product)
            a, b = args
            h = _new(ndarray)
            h._v = a._v
            h._t = None
            h._dev = a._dev
            h._tid = a._tid
            k = _new(ndarray)
            k._v = b._v
            k._t = None
            k._dev = b._dev
            k._tid = b._tid
            handles = (h, k)
            if not self._held:
                # from now on every write (any thread) asks this tape first (_protect)
                self._held = True
                _mut.hold(self)
        elif reads is None:
            hs = []
            for a in args:
                if a._t is None:
                    h = _new(ndarray)
                    h._v = a._v
                    h._t = None
                    h._dev = a._dev
                    h._tid = a._tid
                    hs.append(h)
                else:
                    hs.append(self._keep(a))
            if not self._held:
                # from now on every write (any thread) asks this tape first (_protect)
                self._held = True
                _mut.hold(self)
            handles = tuple(hs)
        elif not reads and len(args) == 2 and type(va := args[0]._v) is _ndarray \
                and type(vb := args[1]._v) is _ndarray and args[0]._t is None \
                and args[1]._t is None and (za := _GHOSTS.get(va.shape)) is not None \
                and (zb := _GHOSTS.get(vb.shape)) is not None \
                and za.dtype is va.dtype and zb.dtype is vb.dtype:
            # (the branch below, unrolled for two eager arrays whose ghosts exist: every
            # recorded add and subtract)
            a, b = args
            h = _new(ndarray)
            h._v = za
            h._t = None
            h._dev = a._dev
            h._tid = a._tid
            k = _new(ndarray)
            k._v = zb
            k._t = None
            k._dev = b._dev
            k._tid = b._tid
            handles = (h, k)
        elif not reads and len(args) == 1 and type(va := args[0]._v) is _ndarray \
                and args[0]._t is None and (za := _GHOSTS.get(va.shape)) is not None \
                and za.dtype is va.dtype:
            # (the branch below for one eager array whose ghost exists: every recorded sum)
            a = args[0]
            h = _new(ndarray)
            h._v = za
            h._t = None
            h._dev = a._dev
            h._tid = a._tid
            handles = (h,)
        elif not reads:
            # the rule reads only the shapes of the inputs: the tape does not keep their
            # memory alive (the backward pass of a long chain holds what it needs only).
            # (_ghost, inlined for eager NumPy arrays: this runs for every recorded add)
            hs = []
            get = _GHOSTS.get
            for a in args:
                v = a._v
                if type(v) is _ndarray and a._t is None:
                    z = get(v.shape)
                    if z is not None and z.dtype is v.dtype:
                        h = _new(ndarray)
                        h._v = z
                        h._t = None
                        h._dev = a._dev
                        h._tid = a._tid
                        hs.append(h)
                        continue
                hs.append(_ghost(a))
            handles = tuple(hs)
        else:
            keep = self._keep
            handles = tuple([keep(a) if i in reads else _ghost(a) for i, a in enumerate(args)])
        if type(outs) is not tuple:
            if not prim.vjp_uses_out:
                # one output whose rule never sees it: the record names it by its identity
                # only (a bare output: not a multiple-results primitive)
                outh = outs._tid
                if not outh:
                    outh = outs._tid = next(_tids)
                conn.add(outh)
                if prim.returns_view:
                    self._see_view(prim, args, (outs,), handles, params)
                self._records.append((prim, handles, outh, params))
                return
            outs = (outs,)
        if len(outs) == 1 and not prim.vjp_uses_out and not prim.multiple_results:
            o = outs[0]
            outh = o._tid
            if not outh:
                outh = o._tid = next(_tids)
            conn.add(outh)
        else:
            uses_out = prim.vjp_uses_out
            outh = []
            for o in outs:
                if not o._tid:
                    o._tid = next(_tids)
                conn.add(o._tid)
                outh.append(self._keep(o) if uses_out else _ghost(o))
            outh = tuple(outh)
        if prim.returns_view:
            self._see_view(prim, args, outs, handles, params)
        self._records.append((prim, handles, outh, params))

    def _see_view(self, prim, args, outs, handles, params):
        if self._pending:
            self._flush()
        # only a view shares memory with another array (every other primitive returns fresh
        # buffers): the arrays a later write must bring up to date (_adopt). An array written
        # in place is seen when it is written.
        for o in outs:
            self._see(o, o._tid)
        for a in args:
            if a._tid:
                self._see(a, a._tid)
        if len(outs) == 1 and _mut.is_view_record(prim, args):
            o = outs[0]
            if o._t is None and args[0]._t is None:
                # the base is held (as NumPy's .base) so a chain through a temporary view
                # still leads back to the written array
                self._links[id(o)] = (weakref.ref(o), args[0], prim, handles[1:], params)

    # -- memory: the tape's handles and the arrays it has seen (core/mutation.py)
    def _keep(self, a):
        """A handle on `a`'s value for a record: copied before a write reaches its memory
        (`_protect`; the handles are found there, from the records, when a write comes)."""
        h = _new(ndarray)
        h._v = a._v
        h._dev = a._dev
        h._tid = a._tid
        if a._t is not None:
            h._t = a._t
            h._aux = getattr(a, "_aux", None)
            return h
        h._t = None
        if not self._held:
            # from now on every write (any thread) asks this tape first (core/mutation.py)
            self._held = True
            _mut.hold(self)
        return h

    def _flush(self):
        """`_see` the arrays watched since the last call, in the order they were watched:
        watching defers it (most tapes never need `_objs` or `_users`: a gradient source not
        renamed since it was watched is named by its own tid). Every reader of those tables
        calls this first, so they hold what they would have held had each watch seen its
        array at once."""
        p = self._pending
        self._pending = []
        for t, tid in p:
            self._see(t, tid)

    def _see(self, o, tid):
        objs = self._objs
        k = id(o)
        e = objs.get(k)
        if e is None or e[0]() is not o:
            r = _weakref(o)
            objs[k] = [r, tid]
            if o._t is not None:
                return
            v = o._v
            if type(v) is _ndarray:
                # (root_of, inlined for an array owning its memory: watched arrays usually do)
                rid = id(v) if v.base is None else id(_root_of(v))
            elif _mut.is_buffer(v):
                rid = id(_root_of(v))
            else:
                return
            users = self._users
            lst = users.get(rid)
            if lst is None:
                users[rid] = [r]
            else:
                lst.append(r)

    def _protect(self, rid):
        """Memory under root `rid` is about to change: private copies for the handles on it
        (each handle is copied at most once; called under core.mutation.LOCK)."""
        self._index()
        mem = self._mem
        lst = mem.pop(rid, None)
        if lst:
            for r in lst:
                h = r()
                if h is not None:
                    h._v = h._v.copy()
            if not mem and self._held:
                # every handle has its own copy: writes need not ask this tape (until it
                # keeps another)
                self._held = False
                _mut.release(self)

    def _index(self):
        """`_mem` for the records made since the last write: recording leaves it to the first
        write that could need it (a write under a recording tape is rare; most records are
        dropped, or consumed by the backward pass, before any write). Weakly: a handle dropped
        with its record (the backward pass of a non-persistent tape releases them as it goes)
        needs no copy. Called under core.mutation.LOCK."""
        recs = self._records
        n = len(recs)
        k = self._indexed
        if k >= n:
            return
        mem = self._mem
        for rec in recs[k:n]:
            if rec is None:
                continue
            outs = rec[2]
            for hs in (rec[1], outs if type(outs) is tuple else ()):
                for h in hs:
                    if h._t is not None:
                        continue
                    v = h._v
                    if type(v) is _ndarray:
                        rid = id(v) if v.base is None else id(_root_of(v))
                        if rid in _ZERO_IDS:
                            continue              # a shape-only handle (_ghost)
                    elif _mut.is_buffer(v):
                        rid = id(_root_of(v))
                    else:
                        continue
                    r = _weakref(h)
                    lst = mem.get(rid)
                    if lst is None:
                        mem[rid] = [r]
                    else:
                        lst.append(r)
        self._indexed = n

    def _source_tid(self, s):
        if self._pending:
            self._flush()
        e = self._objs.get(id(s))
        if e is not None and e[0]() is s:
            return e[1]
        return s._tid

    def _adopt(self, x, old):
        """`x` was written in place and took its new value's identity (already recorded);
        bring the other arrays this tape knows that share x's memory up to date."""
        if self._pending:
            self._flush()
        conn = self._connected
        if old._tid and old._tid in conn:
            # x as the tape first saw it (a gradient source names that value)
            self._see(x, old._tid)
        if x._tid not in conn:
            return
        self._see(x, x._tid)
        if not _mut.is_buffer(x._v):
            return
        changed = {id(x)}
        cur = x
        while True:               # a write through a view writes its base
            link = self._links.get(id(cur))
            if link is None or link[0]() is not cur:
                break
            base = link[1]
            if base._t is not None or not base._tid or base._tid not in conn:
                break
            inv = _mut.VIEWS.get(link[2])
            rule = inv(_alias(base), _alias(cur), link[3], link[4]) if inv is not None else None
            if rule is None:
                break
            p, a, kw = rule
            base._tid = new_tid()
            self._records.append((p, tuple(self._keep(h) if h._tid != base._tid else h
                                           for h in a), (_alias(base),), kw))
            conn.add(base._tid)
            changed.add(id(base))
            cur = base
        rid = id(_root_of(x._v))
        lst = self._users.get(rid)
        if not lst:
            return
        live = []
        for r in lst:
            u = r()
            if u is None:
                continue
            live.append(r)
            if id(u) in changed or not u._tid or u._tid not in conn or u._t is not None \
                    or not _mut.is_buffer(u._v) or not _mut.shares_memory(u._v, x._v):
                continue
            link = self._links.get(id(u))
            base = link[1] if link is not None and link[0]() is u else None
            if base is not None and id(base) in changed:
                # a view of a written array: recomputed from the new value (the buffer
                # already holds it)
                u._tid = new_tid()
                self._records.append((link[2], (self._keep(base),) + tuple(link[3]),
                                      (_alias(u),), link[4]))
            else:
                u._tid = new_tid()
                self._poison[u._tid] = (
                    f"an array of shape {tuple(u.shape)} shares memory with an array written "
                    f"in place (x[...] = ..., +=, out=) while the tape recorded, in a way the "
                    f"tape cannot follow; its values are NumPy's but no gradient can flow "
                    f"through it. Write into a copy (tnp.copy) or through the array itself")
            conn.add(u._tid)
            changed.add(id(u))
        self._users[rid] = live

    # ------------------------------------------------------------------ differentiation
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of targets)/d(sources), with the structure of `sources`."""
        if not self._persistent and self._used:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")
        try:
            res = self._gradient(target, sources, output_gradients, unconnected_gradients,
                                 not self._persistent)          # (consume)
        except BaseException:
            if getattr(self, "_consumed", False):
                # the backward pass had begun releasing the records: the tape cannot be
                # used again (rather than give gradients from what is left)
                self._used = True
                self._records = []
                self._reset_memory()
            raise
        if not self._persistent:
            self._used = True
            self._records = []
            self._reset_memory()
        return res

    def _gradient(self, target, sources, output_gradients, unconnected_gradients,
                  consume=False):
        if isinstance(unconnected_gradients, str):
            unconnected_gradients = UnconnectedGradients(unconnected_gradients)
        if type(target) is ndarray:
            targets = ()          # (the seed is made below, without the general loop)
            ogs = None
            if output_gradients is not None:
                targets = [target]
                ogs = tree.flatten(output_gradients)
                if len(ogs) != 1:
                    raise ValueError("output_gradients must have the structure of target")
        else:
            targets = tree.flatten(target)
            if output_gradients is None:
                ogs = [None] * len(targets)
            else:
                ogs = tree.flatten(output_gradients)
                if len(ogs) != len(targets):
                    raise ValueError("output_gradients must have the structure of target")
        st_ = type(sources)
        flat = False
        if st_ is list or st_ is tuple:
            for s in sources:
                if type(s) is not ndarray:
                    break
            else:
                flat = True               # (the common call: built back below)
                src_leaves, src_def = sources, st_
        if not flat:
            src_leaves, src_def = tree.flatten_with_def(sources)
        st = STATE
        saved = st.tapes
        if self._recording:
            # differentiating does not record on this tape itself; the others keep their order
            st.tapes = [t for t in saved if t is not self]
            st.refresh()
        try:
            # plain eager (nothing but this pass observes it): cotangents are summed in place
            # into buffers only the backward pass holds, and rules run on host buffers
            inplace = st.fast
            ct = {}
            if ogs is None:
                # one array target, no output gradient (the common call): its seed of ones
                t = target
                tid = t._tid
                if tid and tid in self._connected:
                    v = t._v
                    if inplace and _HOST_RULES and t._dev is None and t._t is None and (
                            type(v) is _ndarray or isinstance(v, _np.generic)) \
                            and not v.shape and v.dtype.kind in "fc":
                        # a scalar loss (a whole-array sum's value is a NumPy scalar): a copy
                        # of a kept 0-d one (the pass owns the copy)
                        d = v.dtype
                        one = _ONES.get(id(d))            # (by the dtype's identity: _ghost)
                        if one is None or one.dtype is not d:
                            one = _ONES[id(d)] = _np.ones((), d)
                            one.flags.writeable = False
                        # (bare: the host pass below takes it, see _host_pass)
                        ct[tid] = one.copy()
                        v = d = one = None
                    else:
                        targets = [target]
                        ogs = [None]
                if ogs is None:
                    ogs = ()
            for t, og in zip(targets, ogs):
                if isinstance(t, VariableBase):
                    t = t.value()
                if not isinstance(t, ndarray) or not t._tid or t._tid not in self._connected:
                    continue
                if og is None:
                    v = t._v
                    if inplace and t._dev is None and t._t is None and (
                            type(v) is _ndarray or isinstance(v, _np.generic)):
                        d = v.dtype
                        if d.kind in "fc":
                            # np.ones' copyto of 1, without its Python frame
                            v = _np.empty(v.shape, d)
                            v.fill(1)
                            g = _wrap(v)
                        else:
                            g = _wrap(_np.ones(v.shape, d))     # tnp.ones_like's kernel
                        v = d = None
                    else:
                        g = (_TNP or _tnp()).ones_like(t)
                else:
                    g = (_TNP or _tnp()).asarray(og, dtype=t.dtype)
                ct[t._tid] = g if t._tid not in ct else ct[t._tid] + g
            for t, tid in self._pending:
                if t._tid != tid:
                    # a watched array renamed since (written while the tape was not
                    # recording): the sources are named by the tids first seen
                    self._flush()
                    break
            objs = self._objs
            if flat and not objs:
                # (the loop below for a flat list of arrays the tape names by their tids)
                src_tids = [s._tid for s in src_leaves]
                keep = set(src_tids)
                keep.discard(0)
            else:
                keep = set()
                src_tids = []
                for s in src_leaves:
                    # (_source_tid, inlined: a source the tape saw is named by its first tid)
                    tid = 0
                    if isinstance(s, ndarray) and s._tid:
                        e = objs.get(id(s)) if objs else None
                        tid = e[1] if e is not None and e[0]() is s else s._tid
                    src_tids.append(tid)
                    if tid:
                        keep.add(tid)
                    elif isinstance(s, VariableBase):
                        for v in self._var_reads.get(id(s), (None, []))[1]:
                            keep.add(v._tid)
            conn = self._connected
            recs = self._records
            if consume:
                # nothing records on this tape any more: the backward pass releases each
                # record (its saved values) once it is used, and each cotangent once consumed
                # (the list stays the tape's until the pass ends: a write meanwhile still
                # finds the handles of the records not yet used, see _index)
                if self._links:
                    self._links = {}
                self._consumed = True
            host = _HOST_RULES if inplace and _HOST_RULES else None
            i = len(recs) - 1
            done = []
            while i >= 0:
                if done:
                    recs[done.pop()] = None
                if host is not None:
                    # plain eager: the records the host rules take, in one tight loop
                    i = _host_pass(recs, i, ct, keep, conn, consume, host)
                    if i < 0:
                        break
                    _wrap_bare(ct)        # (the general body reads wrapped cotangents)
                prim, args, outs, params = recs[i]
                if consume:
                    # (released once its rule has run: a write during the rule, a custom
                    # gradient's, still finds its handles)
                    done.append(i)
                i -= 1
                # (outs: the output's tid, or a tuple of handles where the rule reads them or
                # they are several; see _record)
                if type(outs) is int:
                    c_in = ct.get(outs) if outs in keep else ct.pop(outs, None)
                    if c_in is None:
                        continue
                else:
                    if len(outs) == 1:
                        tid = outs[0]._tid
                        c = ct.get(tid) if tid in keep else ct.pop(tid, None)
                        if c is None:
                            continue
                        cts = (c,)
                    else:
                        cts = [ct.get(o._tid) if o._tid in keep else ct.pop(o._tid, None)
                               for o in outs]
                        if all(c is None for c in cts):
                            continue
                    if prim.multiple_results:
                        c_in = tuple(c if c is not None else (_TNP or _tnp()).zeros_like(o)
                                     for c, o in zip(cts, outs))
                    else:
                        c_in = cts[0]
                    cts = c = None
                vjp = prim.vjp
                if vjp is None:
                    raise LookupError(f"No gradient defined for operation '{prim.name}' "
                                      f"(ndflow primitive without a VJP rule)")
                kw = params
                if prim.vjp_needs or prim.vjp_donate:
                    kw = dict(params)
                    if prim.vjp_needs:
                        kw["needs"] = tuple(bool(a._tid) and a._tid in conn for a in args)
                    if prim.vjp_donate:
                        kw["donated"] = (inplace and not prim.multiple_results
                                         and _refs(c_in) == _SOLE and _owned(c_in))
                if prim.vjp_uses_out:
                    # a multi-result primitive's rule gets all its outputs (eigh: w and v)
                    grads = prim.vjp(c_in, *args, out=outs if prim.multiple_results
                                     else outs[0], **kw)
                else:
                    grads = prim.vjp(c_in, *args, **kw)
                c_in = None
                for a, g in zip(args, grads):
                    if g is None:
                        continue
                    at = a._tid
                    if at not in conn:            # (0 never is)
                        continue
                    d = a._v.dtype
                    ok = _DIFF.get(id(d))         # (see _ghost: by the dtype's identity)
                    if ok is None or ok[0] is not d:
                        ok = _DIFF[id(d)] = (d, _dt.is_differentiable(d))
                    if not ok[1]:
                        continue
                    prev = ct.get(at)
                    if prev is None:
                        ct[at] = g
                    else:
                        # summed in place where only the table holds prev and its memory
                        ct[at] = _accumulate(
                            prev, g, inplace and _refs(prev) == _SHARED and _owned(prev))
                    prev = None
                prim = args = outs = params = grads = a = g = kw = None
            if done:
                recs[done.pop()] = None
            bare = host is not None       # (ct may hold the host pass's bare cotangents)
            poison = self._poison
            bad = poison and [t for t in ct if t in poison and t not in keep]
            if bad:
                raise ValueError("GradientTape: " + self._poison[bad[0]])
            out = []
            okd = None                    # the last dtype found differentiable
            for s, tid in zip(src_leaves, src_tids):
                if type(s) is ndarray and tid:
                    g = ct.get(tid)
                    if g is not None:
                        if type(g) is not ndarray:
                            g = _new(ndarray)             # _wrap, inlined
                            g._v = ct[tid]
                            g._t = None
                            g._dev = None
                            g._tid = 0
                            ct[tid] = g               # (a source given twice: one array)
                        d = s._v.dtype
                        if g._v.dtype is d:
                            # (the common case of the checks below: nothing to cast)
                            if d is not okd:
                                ok = _DIFF.get(id(d))
                                if ok is None or ok[0] is not d:
                                    ok = _DIFF[id(d)] = (d, _dt.is_differentiable(d))
                                if not ok[1]:
                                    out.append(None)
                                    continue
                                okd = d
                            out.append(g)
                            continue
                if bare:
                    _wrap_bare(ct)                # (the general checks below read wrappers)
                    bare = False
                g = None
                if isinstance(s, VariableBase):
                    for v in self._var_reads.get(id(s), (None, []))[1]:
                        c = ct.get(v._tid)
                        if c is not None:
                            g = c if g is None else g + c
                    ref = s
                elif isinstance(s, ndarray):
                    g = ct.get(tid) if tid else None
                    ref = s
                else:
                    raise ValueError(f"gradient sources must be arrays or Variables, got "
                                     f"{type(s).__name__}")
                if g is not None and _dt.is_differentiable(ref.dtype) and g.dtype != ref.dtype:
                    g = g.astype(ref.dtype) if ref.dtype.kind == "c" or g.dtype.kind != "c" else (_TNP or _tnp()).real(g).astype(ref.dtype)
                if g is None and unconnected_gradients == UnconnectedGradients.ZERO:
                    g = (_TNP or _tnp()).zeros_like(s.value() if isinstance(s, VariableBase) else s)
                if g is not None and not _dt.is_differentiable(ref.dtype):
                    g = None
                out.append(g)
        finally:
            if st.tapes is not saved:
                st.tapes = saved
                st.refresh()
        if src_def is list:
            return out
        if src_def is tuple:
            return tuple(out)
        return tree.unflatten(src_def, out)

    def _jacobian_rows(self, target, src_leaves, basis, unconnected_gradients, use_pfor):
        """Gradients of `target` for every cotangent in `basis` (stacked along axis 0), one
        stacked array per source; None for a source the target does not reach under 'none'
        (decided by the backward pass itself: it is the same Python for every basis vector)."""
        from .. import numpy as tnp
        from ..vectorize.batching import vectorized_map
        if isinstance(unconnected_gradients, str):
            unconnected_gradients = UnconnectedGradients(unconnected_gradients)
        unconnected = [False] * len(src_leaves)

        def zeros(s):
            return tnp.zeros(s.shape, s.dtype) if isinstance(s, VariableBase) else tnp.zeros_like(s)

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
            self._reset_memory()
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


def _host_pass(recs, i, ct, keep, conn, consume, host):
    """The backward pass over records i, i-1, ... in plain eager execution, while each one's
    primitive has a host rule (host_vjp.py) that applies: its kernels on the buffers, without
    the general body's per-record decisions. Returns the index of the first record it leaves
    to the general body (-1 when none is left). The cotangents it makes are bare host buffers
    in the table (no wrapper per gradient): the caller wraps them (`_wrap_bare`) before the
    general body reads the table. The decisions (which cotangent, which inputs need a
    gradient, donation, summing in place) are the general body's, made on the same references
    (a bare buffer's counted alone: `_BSOLE` / `_BSHARED`)."""
    get = ct.get
    diff = _DIFF
    okd = None                            # the last dtype found differentiable
    while i >= 0:
        prim, args, outs, params = recs[i]
        if type(outs) is not int:
            return i
        c = get(outs)
        if c is None:
            if consume:
                recs[i] = None
            i -= 1
            continue
        rule = host.get(prim)
        if rule is None or rule[1] is not prim.vjp:
            return i
        wrapped = type(c) is ndarray      # (from the general body, or the caller's seed)
        if wrapped and (c._t is not None or c._dev is not None):
            return i
        if len(args) == 2:
            a0, a1 = args
            if a0._t is not None or a0._dev is not None or a1._t is not None \
                    or a1._dev is not None:
                return i
            needs = (a0._tid in conn, a1._tid in conn)          # (tid 0 is never in conn)
        elif len(args) == 1:
            a0 = args[0]
            if a0._t is not None or a0._dev is not None:
                return i
            needs = (a0._tid in conn,)
        else:
            for a in args:
                if a._t is not None or a._dev is not None:
                    return i
            needs = tuple([a._tid in conn for a in args])
        if outs not in keep:
            del ct[outs]
        # (decided while this frame alone holds the cotangent, as the general body does)
        if wrapped:
            donated = prim.vjp_donate and _refs(c) == _SOLE and _owned(c)
            cv = c._v
        else:
            donated = prim.vjp_donate and _brefs(c) == _BSOLE and type(c) is _ndarray \
                and c.flags.owndata and c.flags.writeable
            cv = c
        raw = rule[0](cv, args, outs, params, needs, donated)
        if raw is NotImplemented:
            ct[outs] = c                  # (nothing was written) the general rule runs
            return i
        if consume:
            recs[i] = None
        i -= 1
        for a, r in zip(args, raw):
            if r is None:
                continue
            # (a host rule gives a gradient only where `needs` asks for one, or for the one
            # input of a unary record, which was connected when recorded: in conn)
            at = a._tid
            d = a._v.dtype
            if d is not okd:
                ok = diff.get(id(d))      # (see _ghost: by the dtype's identity)
                if ok is None or ok[0] is not d:
                    ok = diff[id(d)] = (d, _dt.is_differentiable(d))
                if not ok[1]:
                    continue
                okd = d
            prev = get(at)
            if prev is None:
                ct[at] = c if r is cv else r
            elif type(prev) is not ndarray:
                # summed in place where only the table holds prev (a gradient of this record
                # is still held here, by `raw` or `c`: never summed into); else `prev + g`,
                # which is np.add on the buffers in this order. (_brefs first, before a name
                # here holds more of prev.)
                if _brefs(prev) == _BSHARED and type(prev) is _ndarray \
                        and type(r) is _ndarray and prev.flags.owndata \
                        and prev.flags.writeable and prev.shape == r.shape \
                        and prev.dtype == r.dtype:
                    _np.add(prev, r, out=prev)
                else:
                    ct[at] = _np.add(prev, r)
                prev = None
            else:
                # a wrapped cotangent (the general body's): as it sums
                if r is cv and wrapped:
                    g = c
                else:
                    g = _new(ndarray)     # _wrap, inlined
                    g._v = r
                    g._t = None
                    g._dev = None
                    g._tid = 0
                if _refs(prev) == _SHARED and _owned(prev):
                    g = _accumulate(prev, g, True)
                elif type(prev._v) is _ndarray and prev._t is None and prev._dev is None:
                    g = _np.add(prev._v, r)   # (bare, as the other sums here)
                else:
                    g = prev + g
                prev = None
                ct[at] = g
        # (what this record held, released before the next one's decisions and kernels)
        c = cv = raw = a = r = g = args = params = None
    return i


def _wrap_bare(ct):
    """The host pass's bare cotangents wrapped, for the general body and the results."""
    for k, v in ct.items():
        if type(v) is not ndarray:
            g = _new(ndarray)
            g._v = v
            g._t = None
            g._dev = None
            g._tid = 0
            ct[k] = g


def _tnp():
    global _TNP
    if _TNP is None:
        from .. import numpy as tnp
        _TNP = tnp
    return _TNP


_TNP = None


def _refs(c):
    """References to eager array `c` and to its NumPy buffer, as seen from here (compared
    with `_SOLE` / `_SHARED`, measured the same way on arrays held as the backward pass
    holds its own, so the counts do not depend on the interpreter's conventions)."""
    v = c._v
    if type(v) is not _np.ndarray or c._t is not None or c._dev is not None:
        return None
    return sys.getrefcount(c), sys.getrefcount(v)


def _owned(c):
    f = c._v.flags
    return f.owndata and f.writeable


def _calibrate():
    def probe():
        a = _new(ndarray)
        a._v, a._t, a._dev, a._tid = _np.empty(1), None, None, 0
        return a
    c = probe()
    sole = _refs(c)                  # one name holds it (a cotangent being consumed)
    table = {0: probe()}
    prev = table[0]
    shared = _refs(prev)             # the cotangent table and one name (one to sum into)
    return sole, shared


_SOLE, _SHARED = _calibrate()


def _brefs(v):
    """References to a bare host buffer in the cotangent table, as seen from here (compared
    with `_BSOLE` / `_BSHARED`, measured the same way: see `_refs`)."""
    return sys.getrefcount(v)


def _calibrate_bare():
    v = _np.empty(1)
    sole = _brefs(v)                 # one name holds it (a cotangent being consumed)
    table = {0: _np.empty(1)}
    prev = table[0]
    shared = _brefs(prev)            # the cotangent table and one name (one to sum into)
    return sole, shared


_BSOLE, _BSHARED = _calibrate_bare()


def _accumulate(prev, g, inplace):
    """prev + g, where `inplace` says prev's buffer (the cotangent table's own, see the
    caller) may take the sum: it has the sum's shape and dtype."""
    if inplace:
        pv, gv = prev._v, g._v
        if (type(gv) is _np.ndarray and g._t is None and g._dev is None
                and pv.shape == gv.shape and pv.dtype == gv.dtype):
            _np.add(pv, gv, out=pv)
            return prev
    return prev + g


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
