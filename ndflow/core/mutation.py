"""Writes into arrays: one memory and mutation model, NumPy's, on every path.

The model
---------
* **Eager** (with or without tapes, in any thread): a write — `x[k] = v`, `x += y`, `out=`,
  `ufunc.at`, the in-place methods (`sort`, `fill`, `put`, ...) — changes `x`'s buffer in
  place, so every view of that memory sees it, exactly as in NumPy. A tape existing somewhere
  (finished, persistent, in another thread) never changes this.
* **Tapes** record values, not buffers. A tape keeps its own handle on each value it recorded;
  before a write reaches memory a tape holds, that handle gets a private copy (copy on write,
  once per handle, so writes cost no more than their own size). A finished tape therefore
  differentiates at the values that were used, however the arrays change afterwards.
* **A write under a recording tape** that sees `x` or the written value is a functional update
  on the tape (`x_new = index_update(x_old, v)`, `x_new = x_old * y`, ...) and `x` takes the new
  value's identity: the overwritten elements of the old value get zero gradient, the written
  value gets its gradient. A gradient *source* names the array as the tape first saw it
  (watched or computed), so `tape.gradient(loss, A)` after `A[1] = b` is the functional answer
  (`[1, 0, 3]`-style), and a gradient w.r.t. an array written after its use is the gradient at
  the value used, never a silent None.
* **Views under a recording tape**: other arrays sharing the written memory that the tape
  knows are brought up to date on the tape: a view made from the written array by a view
  operation (basic indexing, transpose, reshape, ...) is re-derived from its new value, and a
  write through a basic-index view updates its base (`base_new = index_update(base, view)`).
  Any other alias the tape cannot follow (a base written through a view it has no inverse for,
  memory shared another way) is marked: its values are NumPy's, and a gradient that would flow
  through it raises `ValueError` instead of being silently wrong.
* **Views**: every primitive that returns a view in NumPy has a rule in `VIEWS` (filled by the
  NumPy layer, numpy/indexing.py): basic indexing, slices with run-time bounds, transpose,
  reshape (a view where NumPy's strides allow it), expand_dims, squeeze, `.real`/`.imag` (the
  base rebuilt from the written part bit for bit), one-operand einsum that sums nothing,
  stop_gradient. A write through a view reaches its base on every path. The views NumPy makes
  read-only (`diagonal`, `broadcast_to`, a real array's `.imag`) raise NumPy's ValueError
  ("assignment destination is read-only") on every path; a view a traced path cannot follow
  (einsum's diagonal) raises an error naming the operation. No write is lost.
* **`nf.function`**: writes are traced as functional updates with the same view bookkeeping
  (views made while tracing are re-derived). Writes to the function's *arguments* (and `out=`
  arrays passed as arguments) and to arrays *captured* from outside are applied to the caller's
  arrays after every call, in the order they were first written, as eager execution would.
* **`vectorized_map`**: writes into a mapped argument are written back into the caller's
  array (as a Python loop over the examples would, through views of it). A write into an array
  the mapped function did not create and does not return (captured from outside, an unmapped
  argument) raises `ValueError`: a loop would repeat it once per example, which one vectorized
  call cannot.

Not modelled: memory shared between *arguments* of one `nf.function` call (a function given
`x` and a view of `x` sees them as independent values; when it writes one of them the call
raises `ValueError`), views of captured arrays made outside
a traced function, writes made through the NumPy array itself (`x.numpy()[0] = 1` bypasses
ndflow), and writes racing with a tape that records in another thread (a data race in NumPy
too).
"""
import _thread     # threading.RLock() is _thread.RLock() (threading itself is not imported)
import weakref
from weakref import ref as _ref

import numpy as np

from .state import STATE

# Tapes (any thread) that hold handles on eager buffers: id -> weakref. While it is empty a
# write needs no bookkeeping at all. Guarded by LOCK (a tape in one thread records while
# another thread writes).
HOLDERS = {}
LOCK = _thread.RLock()

# View primitives (filled by the layer that declares them): prim -> inverse, where
# inverse(base, view, view_args, params) returns (prim, args, params) computing the base from a
# written view, or None when there is none (a write through the view is then refused while
# tracing: an error naming the operation, never a lost write); `read_only` for the views NumPy
# makes read-only.
VIEWS = {}
# The view primitives whose result is a view only for some operands or parameters: prim ->
# when(args, params) (getitem: without index arrays; einsum: one operand, nothing summed)
VIEW_WHEN = {}


def read_only(base, view, args, params):
    """The inverse of a view NumPy makes read-only (`diagonal`, `broadcast_to`, a real array's
    `imag`): a write into it is NumPy's error, on every path."""
    raise ValueError("assignment destination is read-only")

_new = object.__new__
# set by the modules above (layers point one way): the array class, a new value identity and
# a symbolic value (ndarray.py), `bind` (primitive.py)
_ndarray = None
_new_tid = None
_symbolic = None
_bind = None


def is_buffer(v):
    """A mutable device buffer (NumPy or CuPy array), not a NumPy scalar or a graph value."""
    return type(v) is np.ndarray or hasattr(v, "__cuda_array_interface__")


def root_of(buf):
    """The array owning the memory `buf` views (its own root when it owns it)."""
    b = buf
    while True:
        n = getattr(b, "base", None)
        if n is None or not is_buffer(n):
            return b
        b = n


def shares_memory(a, b):
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return np.may_share_memory(a, b)
    return root_of(a) is root_of(b)


def alias(x):
    """A private handle on `x`'s current value (same buffer, same identity)."""
    a = _new(_ndarray)
    a._v, a._t, a._dev, a._tid = x._v, x._t, x._dev, x._tid
    if x._t is not None:
        a._aux = getattr(x, "_aux", None)
    return a


# hold/release run once per training step, so they take no lock and build no closure: one
# dict store or pop is atomic, and protect() works on a snapshot of HOLDERS taken under LOCK
# (a tape starting to hold while another thread writes is a race NumPy has too; see above).
def hold(tape):
    HOLDERS[id(tape)] = _ref(tape, _dropped)


def release(tape):
    HOLDERS.pop(id(tape), None)


def _dropped(ref):
    # a tape collected while holding handles: drop its entry (found by its weakref, so an id
    # reused by a newer tape keeps that tape's entry)
    for k, r in tuple(HOLDERS.items()):
        if r is ref:
            HOLDERS.pop(k, None)


def protect(buf):
    """Before `buf`'s memory changes: every tape handle on that memory gets a private copy."""
    if not HOLDERS or not is_buffer(buf):
        return
    rid = id(root_of(buf))
    with LOCK:
        # a snapshot: a weakref callback (a tape collected) may drop an entry meanwhile
        tapes = [r() for r in tuple(HOLDERS.values())]
        for t in tapes:
            if t is not None:
                t._protect(rid)


def is_view_record(prim, args, params=None):
    """Whether `prim(*args, **params)` returns a view of args[0] that writes must follow
    (unknown parameters: only if the primitive is a view for any)."""
    if prim not in VIEWS:
        return False
    when = VIEW_WHEN.get(prim)
    return when is None or (params is not None and when(args, params))


# ---------------------------------------------------------------------------- eager writes
def _sees(tapes, x, operands):
    for t in tapes:
        conn = t._connected
        if x._tid and x._tid in conn:
            return True
        for o in operands:
            if o._tid and o._tid in conn:
                return True
    return False


def _copy_into(x, new):
    buf = x._v
    if not hasattr(buf, "__setitem__"):
        buf = x._v = np.array(buf)          # a NumPy scalar result: give it memory
    nb = new._v
    if buf is not nb:
        buf[...] = nb


def _rename(x):
    # a new value: tapes holding the old one keep theirs (they resolve sources by object)
    if x._tid and HOLDERS:
        x._tid = _new_tid()


def _shape_only(x):
    """A handle with x's identity, shape and dtype but no data (a rule that reads only those)."""
    h = alias(x)
    h._v = np.broadcast_to(np.zeros((), x._v.dtype), x._v.shape)
    return h


def assign(x, operands, functional, apply=None, update=None):
    """Write into `x`. `operands`: the arrays the write reads (values, index arrays);
    `functional()`: x's new value computed with primitives (so tapes record it and tracing
    traces it); `apply(buf)`: the same write done in place with NumPy on an eager default-device
    buffer (None: copy `functional()` in); `update`: `(prim, args, params)` when the new value
    is `prim(x, *args, **params)` and prim's gradient reads only x's shape (item assignment):
    a recording tape then records it without copying x (the write costs its own size).
    See the module docstring for the model."""
    st = STATE
    if st.traces or x._t is not None or any(o._t is not None for o in operands):
        return assign_traced(x, functional, operands)
    tapes = st.tapes
    if tapes and _sees(tapes, x, operands):
        if (update is not None and apply is not None and x._dev is None
                and type(x._v) is np.ndarray
                and all(hasattr(t, "_adopt") for t in tapes)):
            old = _shape_only(x)
            buf = x._v
            protect(buf)
            apply(buf)
            x._tid = _new_tid()
            prim, args, params = update
            for t in list(tapes):
                t._record(prim, (old,) + tuple(args), (x,), params)
            for t in list(tapes):
                t._adopt(x, old)
            return
        new = functional()
        protect(x._v)
        _copy_into(x, new)
        old = alias(x)
        x._tid = new._tid
        for t in list(tapes):
            adopt = getattr(t, "_adopt", None)
            if adopt is not None:
                adopt(x, old)
        return
    if apply is None or x._dev is not None:
        new = functional()
        protect(x._v)
        _copy_into(x, new)
    else:
        buf = x._v
        if not isinstance(buf, np.ndarray):
            buf = x._v = np.array(buf)
        protect(buf)
        apply(buf)
    _rename(x)


# ---------------------------------------------------------------------------- traced writes
def _innermost():
    return STATE.traces[-1] if STATE.traces else None


def _graph_trace():
    for t in reversed(STATE.traces):
        if t.is_graph:
            return t
    return None


def begin(x):
    """Call before computing a write's new value: inside `nf.function` an eager target becomes
    a value of the graph first, so the write (and what it reads of `x`) happens at every call;
    the function writes the final value back into the array after each call."""
    if not STATE.traces or x._t is not None:
        return
    tr = _graph_trace()
    if tr is not None and not tr.dynamic:
        tr.note_write(x)
        x._rebind(_symbolic(tr, tr.to_var(x)))


def assign_traced(x, functional, operands=()):
    """A write while tracing (`nf.function`) or batching (`vectorized_map`): the array object
    is rebound to its new value, and the views made from it while tracing follow (see
    `propagate`). A per-example (batched) value written into an array that is not batched is
    remembered by `vectorized_map`, which raises unless the mapped function made or returns
    that array."""
    begin(x)
    top = None
    for a in operands:
        t = a._t
        if t is not None and (top is None or t.level > top.level):
            top = t
    if top is not None and not top.is_graph and x._t is not top:
        top.note_write(x)
    if x._t is None and all(o._t is None for o in operands):
        # eager into eager outside nf.function (in vectorized_map's body): in place, as NumPy;
        # vectorized_map refuses it afterwards if x outlives the call (a loop would repeat it)
        tr = _innermost()
        if tr is not None and not tr.is_graph:
            tr.note_write(x)
        saved, st = STATE.traces, STATE
        st.traces = []
        st.refresh()
        try:
            assign(x, operands, functional)
        finally:
            st.traces = saved
            st.refresh()
        propagate(x)
        return
    new = functional()
    x._rebind(new)
    propagate(x)


# the reshapes NumPy makes a copy for when the array is a strided view (expand_dims and
# squeeze only add or remove unit axes: always views)
_RESHAPES = ("reshape", "reshape_dynamic")


def _layout(x, views, depth=0):
    """A data-less stand-in for `x` with the strides NumPy's array would have (the chain of
    views noted while tracing replayed on a C-contiguous root), or None when a size or a
    view's operands are unknown."""
    e = views.get(("of", id(x)))
    if e is None or e[0]() is not x:
        if any(d is None for d in x.shape) or depth > 64:
            return None
        dt = np.dtype(x.dtype)
        return np.lib.stride_tricks.as_strided(np.zeros(1, dt), tuple(x.shape),
                                               _c_strides(x.shape, dt.itemsize))
    if e[3]:
        return None
    base = _layout(e[1], views, depth + 1)
    return None if base is None else e[2].impl(base, **e[4])


def _c_strides(shape, itemsize):
    out, step = [], itemsize
    for d in reversed(tuple(shape)):
        out.append(step)
        step *= max(d, 1)
    return tuple(reversed(out))


def _reshape_copies(prim, base, params, views):
    """Whether NumPy's reshape of `base` (a view made while tracing) makes a copy (unknown:
    yes, the model's answer before layouts were followed)."""
    fake = _layout(base, views)
    shape = params.get("shape")
    if fake is None or shape is None or params.get("keep"):
        return True
    try:
        np.reshape(fake, shape, copy=False)
    except ValueError:
        return True
    return False


def note_view(prim, args, out, params):
    """While tracing: remember that `out` views `args[0]` (re-derived when that is written)."""
    base = args[0]
    if out is base or type(out) is not _ndarray:
        return
    views = STATE.views
    if prim.name in _RESHAPES:
        # NumPy's reshape is a view unless the array's strides cannot take the new shape
        e = views.get(("of", id(base)))
        if e is not None and e[0]() is base and _reshape_copies(prim, base, params, views):
            return
    # the base is held, as NumPy's `.base`: a chain through a temporary (z.reshape(2, 3).T)
    # must still reach the view when z is written
    entry = (weakref.ref(out), base, prim, args[1:], params)
    views.setdefault(id(base), []).append(entry)
    views[("of", id(out))] = entry


def propagate(x):
    """After `x` (traced or batched) got a new value: a base it views takes the write
    (through the view's inverse), then every view made from a changed array while tracing is
    recomputed from it, as NumPy's shared memory would show."""
    views = STATE.views
    if not views:
        return
    bind = _bind
    changed = [x]
    cur = x
    while True:
        e = views.get(("of", id(cur)))
        if e is None or e[0]() is not cur:
            break
        base = e[1]
        inv = VIEWS.get(e[2])
        try:
            rule = inv(base, cur, e[3], e[4]) if inv is not None else None
        except ValueError as err:
            raise ValueError(f"{err} (the result of '{e[2].name}' is a read-only view of its "
                             f"operand in NumPy; write into a copy)") from None
        if rule is None:
            raise ValueError(f"writing into a view made by '{e[2].name}' while tracing "
                             f"(nf.function / vectorized_map) is not supported: NumPy would "
                             f"change the array it views, which cannot be followed here; "
                             f"write into that array instead")
        p, a, kw = rule
        _rebind_noted(base, _quiet_bind(bind, p, a, kw), True)
        changed.append(base)
        cur = base
    seen = {id(o) for o in changed}
    queue = list(changed)
    while queue:
        b = queue.pop(0)
        lst = views.get(id(b))
        if not lst:
            continue
        live = []
        for e in lst:
            v = e[0]()
            if v is None or e[1] is not b:
                continue
            live.append(e)
            if id(v) in seen:
                continue
            seen.add(id(v))
            _rebind_noted(v, _quiet_bind(bind, e[2], (b,) + tuple(e[3]), e[4]))
            queue.append(v)
        views[id(b)] = live


def _quiet_bind(bind, prim, args, params):
    st = STATE
    saved = st.views
    st.views = {}              # the recomputation is not a new view to remember
    try:
        return bind(prim, *args, **params)
    finally:
        st.views = saved


def _rebind_noted(obj, new, written=False):
    """Rebind `obj` (a view re-derived, or a base written through its view): an eager array
    that takes a traced value is noted so that the trace gives it its own value back, and a
    base written with a per-example value is noted for vectorized_map's check."""
    if obj._t is None and new._t is not None:
        for tr in reversed(STATE.traces):
            if tr is new._t or (written and not tr.is_graph):
                tr.note_write(obj)
                break
        else:
            tr = _graph_trace()
            if tr is not None:
                tr.note_write(obj)
    obj._rebind(new)
