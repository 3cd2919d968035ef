"""What a tape holds, and how it follows writes into the memory it holds.

A record keeps a handle per value: the value itself (`_keep`: the same buffer, copied before a
write reaches it) where its VJP reads it, or a shape-only handle (`shape_only`: the value's
identity, shape and dtype over a read-only broadcast zero) where the rule reads only its shape,
so a tape keeps alive only what its backward pass will read.

The memory and mutation model is `ndflow/core/mutation.py`'s; this module is the tape's side of
it. A tape that keeps an eager buffer is in `core.mutation.HOLDERS`, and every write (any
thread) asks it first (`_protect`): the handles on that memory get private copies. The index
of those handles is built from the records at the first write that needs one (`_index`), and
watching defers the bookkeeping of watched arrays until a write or a renamed source needs it
(`_flush`): most tapes see no write. Under a recording tape a write is a functional update,
and the arrays the tape knows that share the written memory are brought up to date (`_adopt`).
"""
import weakref

import numpy as np

from ..core import mutation as _mut
from ..core.mutation import alias as _alias, root_of as _root_of
from ..core.ndarray import new_tid

_ndarray = np.ndarray
_weakref = weakref.ref

_BY_SHAPE = {}    # shape -> the read-only broadcast zero last used for it (its dtype checked)
_SHAPE_ONLY = {}  # (shape, id(dtype)) -> a read-only broadcast zero of that shape and dtype
_ZEROS = {}       # id(dtype) -> the 0-d zero those broadcast (never dropped: ids stay unique)
_ZERO_IDS = set()


def shape_only(a):
    """A handle with `a`'s identity, shape and dtype that holds none of its memory (for a
    value whose VJP reads only its shape); a plain handle when `a` is not an eager NumPy
    array."""
    v = a._v
    if type(v) is not _ndarray or a._t is not None:
        return _alias(a)
    # (looked up by the shape alone first: one hash of a short tuple, for every recorded add)
    z = _BY_SHAPE.get(v.shape)
    if z is None or z.dtype is not v.dtype:
        z = _BY_SHAPE[v.shape] = _zero_like(v)
    h = _alias(a)
    h._v = z
    return h


def _zero_like(v):
    d = v.dtype
    # keyed by the dtype's identity (hashing a NumPy dtype costs more than the rest of
    # shape_only); the entry holds its dtype, so the id names the same object while it lives
    key = (v.shape, id(d))
    z = _SHAPE_ONLY.get(key)
    if z is None or z.dtype is not d:
        if len(_SHAPE_ONLY) > 256:
            _SHAPE_ONLY.clear()
            _BY_SHAPE.clear()
        z0 = _ZEROS.get(id(d))
        if z0 is None or z0.dtype is not d:
            # one zero per dtype, kept: the memory under every shape-only handle (_index
            # leaves it out; it is never written)
            z0 = _ZEROS[id(d)] = np.zeros((), d)
            _ZERO_IDS.add(id(z0))
        z = _SHAPE_ONLY[key] = np.broadcast_to(z0, v.shape)
    return z


def _root_id(v):
    """id of the buffer owning `v`'s memory; None for a value that is not a buffer."""
    if type(v) is _ndarray:
        # (root_of, inlined for an array owning its memory: most do)
        return id(v) if v.base is None else id(_root_of(v))
    if _mut.is_buffer(v):
        return id(_root_of(v))
    return None


class TapeMemory:
    """The handles a tape keeps and the arrays it has seen (GradientTape's base)."""

    def _init_memory(self):
        self._mem = {}        # id(root buffer) -> weakrefs of handles to copy before a write
        self._indexed = 0     # records[:_indexed] are in _mem (see _index)
        self._held = False    # in core.mutation.HOLDERS since the first handle kept
        self._pending = []    # (array, tid) watched, not yet _see'n (see _flush)
        self._objs = {}       # id(array) -> [weakref, tid when first seen]: gradient sources
        self._users = {}      # id(root buffer) -> weakrefs of arrays seen, sharing it
        self._links = {}      # id(view) -> (weakref view, base, prim, handles, params)
        self._poison = {}     # tid -> why its gradient cannot be followed

    def _reset_memory(self):
        # (a table already empty is kept: a tape is usually dropped right after its gradient)
        if self._held:
            self._held = False
            _mut.release(self)
        self._indexed = 0
        if self._mem:
            self._mem = {}
        if self._pending:
            self._pending = []
        if self._objs:
            self._objs = {}
        if self._users:
            self._users = {}
        if self._links:
            self._links = {}
        if self._poison:
            self._poison = {}

    def _keep(self, a):
        """A handle on `a`'s value for a record: copied before a write reaches its memory
        (`_protect`; the handles are found there, from the records, when a write comes)."""
        h = _alias(a)
        if a._t is None and not self._held:
            self._hold((h,))
        return h

    def _hold(self, handles):
        """`handles` are kept: if one is an eager value, from now on every write (any thread)
        asks this tape first (core/mutation.py)."""
        for h in handles:
            if h._t is None:
                self._held = True
                _mut.hold(self)
                return

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
            rid = _root_id(o._v)
            if rid is not None:
                self._users.setdefault(rid, []).append(r)

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
        if len(outs) == 1 and _mut.is_view_record(prim, args, params):
            o = outs[0]
            if o._t is None and args[0]._t is None:
                # the base is held (as NumPy's .base) so a chain through a temporary view
                # still leads back to the written array
                self._links[id(o)] = (_weakref(o), args[0], prim, handles[1:], params)

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
        mem = self._mem
        for rec in recs[self._indexed:n]:
            if rec is None:
                continue
            outs = rec[2]
            for h in rec[1] + (outs if type(outs) is tuple else ()):
                if h._t is not None:
                    continue
                rid = _root_id(h._v)
                if rid is None or rid in _ZERO_IDS:
                    continue                      # not a buffer, or a shape-only handle
                mem.setdefault(rid, []).append(_weakref(h))
        self._indexed = n

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
        changed = self._adopt_bases(x, conn)
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
            u._tid = new_tid()
            if base is not None and id(base) in changed:
                # a view of a written array: recomputed from the new value (the buffer
                # already holds it)
                self._records.append((link[2], (self._keep(base),) + tuple(link[3]),
                                      (_alias(u),), link[4]))
            else:
                self._poison[u._tid] = (
                    f"an array of shape {tuple(u.shape)} shares memory with an array written "
                    f"in place (x[...] = ..., +=, out=) while the tape recorded, in a way the "
                    f"tape cannot follow; its values are NumPy's but no gradient can flow "
                    f"through it. Write into a copy (tnp.copy) or through the array itself")
            conn.add(u._tid)
            changed.add(id(u))
        self._users[rid] = live

    def _adopt_bases(self, x, conn):
        """A write through a view writes its base: each base up the chain of views the tape
        knows takes a new value, recorded as the update of the base by the view. Returns the
        ids of the arrays renamed (x's included)."""
        changed = {id(x)}
        cur = x
        while True:
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
        return changed
