"""The eager door: the one place where an eager call chooses its route.

Every eager entry of ndflow is instantiated from a template in this module: `bind`, the ufunc
objects (`tnp.exp(x)`, `tnp.add(x, y)`, with a Python-scalar partner, `divmod`, `matmul`), the
array operators (`a + b`, reflected `2 * a`, `-a`, in place `a += b`), composites (`tnp.var`,
`tnp.reshape`, `tnp.sum`, `ufunc.reduce`, `accumulate`, ...), indexing (`x[i]`) and the writes
(`x[i] = v`, `ufunc.at`). A call takes one of three routes:

  plain    the thread runs plain eager (no tape, trace, batching, device scope or switch is
           active: `GLOBAL.fast or STATE.fast`) and every array operand is an eager array on
           the default device: the entry's NumPy kernel runs on the buffers, and its result is
           wrapped (`ndarray._wrap`, the one constructor of an eager array).
  lane     eager under tapes only, with NumPy's own promotion (`STATE.lane`, the recording
           tapes), on operands NumPy's loop takes as they are: the entry's primitive runs on
           the buffers and the tapes record it (`apply_taped`) — the record the general route
           makes, without resolving dtypes again per call.
  general  everything else: the entry's general function — `bind`'s interpretation
           (`primitive.bind_general`: traces, batching, devices, numerics checks) or the
           composition over primitives. It is the specification; every transformation uses it.

A write has two routes: in place on the buffer (`writes_in_place`: plain eager, and no tape
holds any buffer), or the mutation model (core/mutation.py), which records or traces it.

The routes agree by test: tests/test_composites.py (each kernel against its composition, on
the op table and special values), test_tape_lanes.py and test_dispatch.py (the lane records
what the general route records, bit for bit), test_operator_paths.py (operators on every
route against NumPy), test_paths_agree.py.

The templates read the mode state directly: outside `ndflow/core/` nothing does; code that
must know asks `plain()` or `writes_in_place(x)`.
"""
import numpy as np

from .state import STATE, GLOBAL
from . import dtypes as _dt
from . import mutation as _mut
from . import user_warnings

# NumPy's warnings from the kernels this door calls name the user's line (user_warnings.py)
user_warnings.install()

# Hooks (layers point one way: docs/architecture.md). The array class and its constructor
# (core/ndarray.py, which instantiates its operators from here), and the NumPy layer, whose
# functions are the operators' general route (ndflow/numpy/__init__.py).
_ndarray = None
_wrap = None
tnp = None
# The hottest routes (an operator, a ufunc call, a composite's kernel, the lane) build their
# result in place of a call to `_wrap`, which costs 4-5% of `a + b` (thread time, min of many
# runs: 856 ns with the call, 819 ns without, NumPy's own `a + b` 417 ns). Each such statement
# group is `_wrap`'s body; tests/test_dispatch.py checks every route's results field by field
# against `_wrap`'s, so a field added there and not here fails it.
_new = object.__new__

_PY = (bool, int, float, complex)
_NP_SCALARS = frozenset(np.sctypeDict.values())    # NumPy's scalar types (a kernel's result)
_BF16 = _dt.BFLOAT16       # bfloat16 (a stand-in no array has until ml_dtypes is imported)


def _set_bf16(d):
    global _BF16
    _BF16 = d


_dt._ON_BFLOAT16.append(_set_bf16)


# ------------------------------------------------------------------ the mode, for others
def plain():
    """Whether this thread runs plain eager: no tape, trace, batching, device scope or switch
    is active (for code outside the door that must know: compiled functions' call entries,
    rules that write into a buffer they own)."""
    return GLOBAL.fast or STATE.fast


# `plain()` as an expression, for generated code (graph/function.py's call entries, where the
# call to plain() cost 7% of a small compiled function's call: 1625 -> 1737 ns); the code's
# namespace needs PLAIN_NAMES
PLAIN_TEST = "(_GLOBAL.fast or _STATE.fast)"
PLAIN_NAMES = {"_GLOBAL": GLOBAL, "_STATE": STATE}


# The door's routes, as `door_route` names them (tests/test_optable_routes.py runs the op
# table on each)
DOOR_ROUTES = ("plain", "lane", "general")


def door_route():
    """The route this thread's mode sends an eager call on default-device arrays to now:
    'plain', 'lane' (where NumPy's loop takes the operands as they are; else 'general') or
    'general' -- the test every template below makes first, for code that must observe it."""
    if GLOBAL.fast or STATE.fast:
        return "plain"
    return "lane" if STATE.lane is not None else "general"


def writes_in_place(x):
    """Whether a write into the eager array `x` goes straight into its buffer: plain eager,
    `x` on the default device, and no tape (any thread) holds any buffer."""
    return STATE.fast and x._dev is None and not _mut.HOLDERS


# ------------------------------------------------------------------ the routes' pieces
def apply_taped(prim, args, params, tapes):
    """The lane: `prim`'s kernel on the buffers of `args` (eager arrays on the default device),
    then each of `tapes` records the call."""
    if params:
        out = prim.impl(args[0]._v, **params) if len(args) == 1 else \
            prim.impl(*[a._v for a in args], **params)
    elif len(args) == 2:
        # (the common binary call without the list's frame)
        out = prim.impl(args[0]._v, args[1]._v)
    else:
        out = prim.impl(args[0]._v) if len(args) == 1 else prim.impl(*[a._v for a in args])
    if prim.multiple_results:
        outs = tuple(map(_wrap, out))
    else:
        outs = _new(_ndarray)           # (_wrap, inlined: see _new)
        outs._v = out
        outs._t = None
        outs._dev = None
        outs._tid = 0
    for tape in tapes:
        tape._record(prim, args, outs, params)
    return outs


def plain_buffers(*xs):
    """The buffers of a plain-route call on ndflow arrays and Python scalars, or None when an
    operand needs the general route (on a device, symbolic, anything else, or a Python float
    with a bfloat16 array: ml_dtypes' loops would give float32 where NEP 50 keeps bfloat16)."""
    out = []
    py_float = False
    for x in xs:
        t = type(x)
        if t is _ndarray:
            if x._dev is not None:
                return None
            out.append(x._v)
        elif t in _PY:
            out.append(x)
            py_float = py_float or t is float
        else:
            return None
    if py_float and any(getattr(b, "dtype", None) == _BF16 for b in out):
        return None
    return out


def to_host(x):
    """The NumPy value of an eager ndflow array (anything else as is, lists walked)."""
    if type(x) is _ndarray:
        return x._v
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(to_host(e) for e in x)
    return x


def host_to_nf(r):
    """NumPy results (arrays, scalars, tuples, lists, named tuples) as ndflow arrays."""
    if isinstance(r, (np.ndarray, np.generic)):
        return _wrap(r)
    if hasattr(r, "_fields"):
        return type(r)(*[host_to_nf(e) for e in r])
    if isinstance(r, (tuple, list)):
        return type(r)(host_to_nf(e) for e in r)
    return r


def _hosted(xs):
    """A composite kernel's arguments: eager default-device ndflow arrays as their NumPy
    buffers (inside lists and tuples too), anything else as is; None if an array is on a
    device or belongs to a trace or a batch (the composition must run)."""
    out = []
    for x in xs:
        t = type(x)
        if t is _ndarray:
            if x._dev is not None:
                return None
            x = x._v
        elif t is list or t is tuple:
            for e in x:
                if type(e) is _ndarray or type(e) is list or type(e) is tuple:
                    h = _hosted(x)
                    if h is None:
                        return None
                    x = t(h)
                    break
        out.append(x)
    return out


def _lane_scalar(uf, d, s, first):
    """The Python int or float `s` as the operand the lane records beside an array of dtype
    `d` (`first`: before it): a read-only 0-d of dtype `d` where NumPy's loop takes the pair
    as `d`, kept on the ufunc object for the next call with this very object (a relu's 0 is
    not converted per call); None where the lane does not apply (another loop, or an int
    outside `d`'s range: the general route raises or answers, as comparisons do)."""
    e = uf._lane_s
    if e is None or e[0] is not d or e[1] is not s or e[3] is not first:
        if not _dt.same_loop(uf._np, d, type(s), first):
            return None
        if type(s) is int and d.kind in "iu":
            info = np.iinfo(d)
            if not info.min <= s <= info.max:
                return None
        v = np.asarray(s, d)
        v.flags.writeable = False
        e = uf._lane_s = (d, s, v, first)
    # (a wrapper of its own per call: tapes give the values they record identities)
    return _wrap(e[2])


def _lane_scalar_operands(uf, x1, x2):
    """The operands of a binary ufunc's lane for an array and a Python int or float partner
    (either side), as the general route would record them: the partner a scalar of the
    array's dtype where NumPy's loop takes the pair as that dtype; None otherwise."""
    t1, t2 = type(x1), type(x2)
    if t1 is _ndarray:
        if x1._dev is None and (t2 is float or t2 is int):
            s = _lane_scalar(uf, x1._v.dtype, x2, False)
            return None if s is None else (x1, s)
    elif t2 is _ndarray and x2._dev is None and (t1 is float or t1 is int):
        s = _lane_scalar(uf, x2._v.dtype, x1, True)
        return None if s is None else (s, x2)
    return None


# ------------------------------------------------------------------ bind
def make_bind(general):
    """`bind(prim, *args, **params)`, whose general route is `general(prim, args, params)`."""
    def bind(prim, *args, **params):
        """Apply primitive `prim` to `args`: its kernel on the buffers (plain), its kernel
        then the recording tapes (eager under tapes), else the innermost interpreter owning
        an input (core/primitive.py `bind_general`)."""
        # GLOBAL.fast: no thread has anything active (one plain read); otherwise this thread's
        # own state decides, so another thread's tape does not slow this one down
        if GLOBAL.fast or STATE.fast:
            # `_dev is None` marks an eager array on the default device (symbolic and batched
            # values never have it)
            for a in args:
                if a._dev is not None:
                    break
            else:
                out = prim.impl(*[a._v for a in args], **params)
                return tuple(map(_wrap, out)) if prim.multiple_results else _wrap(out)
        elif STATE.eager:
            for a in args:
                if a._dev is not None:
                    break
            else:
                return apply_taped(prim, args, params, STATE.tapes)
        return general(prim, args, params)
    return bind


# ------------------------------------------------------------------ ufunc objects
# The templates of `tnp.ufunc.__call__` (ndflow/numpy/ufuncs.py): methods of the ufunc object,
# which provides `_np` (NumPy's ufunc: the plain route's kernel), `_prim` (the primitive the
# lane binds; None: the lane calls `_fn`), `_fn` (the ufunc on operands of its loop's dtypes),
# `_lane`/`_lane_s` (the lane's last dtype and scalar partner), `nin`/`nout`, and
# `_general(operands, rest, kwargs)` (dtype resolution, then `_fn`; out=, where=, dtype=).
def ufunc_unary(self, x, /, *args, **kwargs):
    """`uf(x)` for a ufunc of one operand and one result (NumPy's options by keyword)."""
    if not args and not kwargs:
        if GLOBAL.fast or STATE.fast:
            t = type(x)
            if t is _ndarray:
                if x._dev is None:
                    o = _new(_ndarray)          # (_wrap, inlined: see _new)
                    o._v = self._np(x._v)
                    o._t = None
                    o._dev = None
                    o._tid = 0
                    return o
            elif t in _PY:
                return _wrap(self._np(x))
        elif type(x) is _ndarray and x._dev is None and (tapes := STATE.lane) is not None:
            d = x._v.dtype
            if d is self._lane or _dt.same_loop(self._np, d):
                self._lane = d
                p = self._prim
                return self._fn(x) if p is None else apply_taped(p, (x,), {}, tapes)
    return self._general((x,), args, kwargs)


def ufunc_binary(self, x1, x2, /, *args, **kwargs):
    """`uf(x1, x2)` for a ufunc of two operands and one result (NumPy's options by keyword);
    the lane takes two arrays of one dtype, or an array and a Python int or float."""
    if not args and not kwargs:
        if GLOBAL.fast or STATE.fast:
            if type(x1) is _ndarray and type(x2) is _ndarray and x1._dev is None \
                    and x2._dev is None:
                o = _new(_ndarray)              # (_wrap, inlined: see _new)
                o._v = self._np(x1._v, x2._v)
                o._t = None
                o._dev = None
                o._tid = 0
                return o
            b = plain_buffers(x1, x2)
            if b is not None:
                return _wrap(self._np(b[0], b[1]))
        elif (tapes := STATE.lane) is not None:
            if type(x1) is _ndarray and type(x2) is _ndarray:
                # two arrays of one dtype NumPy's loop takes as it is
                if x1._dev is None and x2._dev is None:
                    d = x1._v.dtype
                    if (x2._v.dtype is d or x2._v.dtype == d) and (
                            d is self._lane or _dt.same_loop(self._np, d)):
                        self._lane = d
                        p = self._prim
                        return self._fn(x1, x2) if p is None else \
                            apply_taped(p, (x1, x2), {}, tapes)
            else:
                ops = _lane_scalar_operands(self, x1, x2)
                if ops is not None:
                    p = self._prim
                    return self._fn(*ops) if p is None else apply_taped(p, ops, {}, tapes)
    return self._general((x1, x2), args, kwargs)


def ufunc_call(self, *args, **kwargs):
    """Any number of operands and results (divmod, frexp, modf, ...): no lane."""
    nin = self.nin
    ins, rest = args[:nin], args[nin:]
    if not rest and not kwargs and (GLOBAL.fast or STATE.fast):
        b = plain_buffers(*ins)
        if b is not None and len(b) == nin:
            r = self._np(*b)
            return tuple(map(_wrap, r)) if self.nout > 1 else _wrap(r)
    return self._general(ins, rest, kwargs)


def gufunc_call(self, *args, **kwargs):
    """A generalized ufunc (a core signature): the plain route and the lane only where it
    names its primitive (`_prim`: matmul, whose kernel is NumPy's gufunc itself), for two
    arrays; `_fn` takes the arguments as given otherwise."""
    if len(args) == 2 and not kwargs and self._prim is not None:
        x1, x2 = args
        if type(x1) is _ndarray and type(x2) is _ndarray and x1._dev is None \
                and x2._dev is None:
            if GLOBAL.fast or STATE.fast:
                return _wrap(self._np(x1._v, x2._v))
            tapes = STATE.lane
            if tapes is not None:
                d = x1._v.dtype
                if (x2._v.dtype is d or x2._v.dtype == d) and (
                        d is self._lane or _dt.same_loop(self._np, d)):
                    self._lane = d
                    return apply_taped(self._prim, args, {}, tapes)
    return self._fn(*args, **kwargs)


# ------------------------------------------------------------------ array operators
def binary_operator(kernel, name, reflected=False):
    """`a op b` (reflected: `b op a`, a being the array): NumPy's operator kernel on the
    buffers when plain (NumPy 2's promotion is ours in legacy mode), else the NumPy layer's
    ufunc `name` (its lane or its general route)."""
    def op(self, other):
        if (GLOBAL.fast or STATE.fast) and self._dev is None:
            t = type(other)
            if t is _ndarray:
                if other._dev is None:
                    o = _new(_ndarray)          # (_wrap, inlined: see _new)
                    o._v = kernel(other._v, self._v) if reflected else kernel(self._v, other._v)
                    o._t = None
                    o._dev = None
                    o._tid = 0
                    return o
            elif t is int or t is bool or t is complex or (
                    t is float and self._v.dtype is not _BF16):
                # (ml_dtypes' loops turn bfloat16 * Python float into float32; NEP 50 and the
                # general route keep bfloat16)
                o = _new(_ndarray)              # (_wrap, inlined: see _new)
                o._v = kernel(other, self._v) if reflected else kernel(self._v, other)
                o._t = None
                o._dev = None
                o._tid = 0
                return o
        f = getattr(tnp, name)
        # (the ufunc's door template called as a function: an instance call costs ~100 ns more)
        call = type(f).__call__
        return call(f, other, self) if reflected else call(f, self, other)
    op.__name__ = name
    return op


def unary_operator(kernel, name):
    """`-a`, `+a`, `abs(a)`, `~a`: NumPy's kernel when plain, else the ufunc `name`."""
    def op(self):
        if (GLOBAL.fast or STATE.fast) and self._dev is None:
            return _wrap(kernel(self._v))
        f = getattr(tnp, name)
        return type(f).__call__(f, self)
    op.__name__ = name
    return op


# ------------------------------------------------------------------ writes
def write(kernel, general):
    """A write into the array given first (`x[k] = v`): `kernel` writes into its buffer when
    writes go in place (`writes_in_place`), else `general` (the mutation model)."""
    def w(x, *args):
        if STATE.fast and x._dev is None and not _mut.HOLDERS:
            return kernel(x, *args)
        return general(x, *args)
    return w


def inplace_operator(kernel, general):
    """`a op= b`: NumPy's in-place operator `kernel(buf, other, out=buf)` on a's buffer when
    writes go in place (a NumPy scalar buffer becomes an array of its own first), else
    `general(a, b)` (the mutation model)."""
    def op(self, other):
        if STATE.fast and self._dev is None and not _mut.HOLDERS:
            v = self._v
            if not isinstance(v, np.ndarray):
                v = self._v = np.array(v)
            o = other._v if type(other) is _ndarray and other._dev is None else other
            if isinstance(o, _ndarray):
                o = o.numpy()
            kernel(v, o, out=v)
            return self
        return general(self, other)
    return op


# ------------------------------------------------------------------ composites and indexing
def composite_call(c, lane=None):
    """The call of composite `c` (core/primitive.py `Composite`): `c.kernel` on the arguments'
    host values when plain (unless a `compose_if` argument is given); `lane(*args, **kwargs)`
    -> (primitive, operands, params) or None under tapes, where given; else `c.compose`."""
    kernel, compose, where, applies = c.kernel, c.compose, c._where, c.kernel_applies
    # positional arguments before the first `compose_if` parameter can never send the call to
    # the composition: a call giving only those (the common one) skips the check
    free = min([i for _, i, _ in where if i is not None], default=1 << 30)

    def call(*args, **kwargs):
        if GLOBAL.fast or STATE.fast:
            # the arguments' host values (_hosted, inlined: this is the whole eager cost of a
            # composite over NumPy's own call)
            h = []
            for x in args:
                t = type(x)
                if t is _ndarray:
                    if x._dev is not None:
                        break
                    h.append(x._v)
                elif t is tuple or t is list:
                    for e in x:
                        te = type(e)
                        if te is _ndarray or te is tuple or te is list:
                            x = _hosted(x)
                            if x is not None:
                                x = t(x)
                            break
                    if x is None:
                        break
                    h.append(x)
                else:
                    h.append(x)
            else:
                if kwargs:
                    if where and not applies(args, kwargs):
                        return compose(*args, **kwargs)
                    hk = _hosted(kwargs.values())
                    if hk is None:
                        return compose(*args, **kwargs)
                    r = kernel(*h, **dict(zip(kwargs, hk)))
                else:
                    if len(args) > free and not applies(args, kwargs):
                        return compose(*args)
                    r = kernel(*h)
                t = type(r)
                if t is not np.ndarray and t not in _NP_SCALARS:
                    return host_to_nf(r)        # (tuples, lists, named tuples, ...)
                o = _new(_ndarray)              # (_wrap, inlined: see _new)
                o._v = r
                o._t = None
                o._dev = None
                o._tid = 0
                return o
        elif lane is not None and (tapes := STATE.lane) is not None:
            e = lane(*args, **kwargs)
            if e is not None:
                return apply_taped(e[0], e[1], e[2], tapes)
        return compose(*args, **kwargs)
    return call


def getitem(compose):
    """`x[key]`: NumPy's indexing of the buffer when plain (basic keys, and eager arrays as
    index arrays), else `compose(x, key)`."""
    def getitem(x, key):
        if (GLOBAL.fast or STATE.fast) and x._dev is None:
            t = type(key)
            if t is int or t is slice or key is None or key is Ellipsis:
                return _wrap(x._v[key])
            if t is tuple and all(type(k) in (int, slice) or k is None or k is Ellipsis
                                  for k in key):
                return _wrap(x._v[key])
            if t is _ndarray:
                if key._dev is None:
                    return _wrap(x._v[key._v])
            elif t is np.ndarray:
                return _wrap(x._v[key])
            elif t is tuple and all(type(k) is not _ndarray or k._dev is None for k in key):
                return _wrap(x._v[tuple(k._v if type(k) is _ndarray else k for k in key)])
        return compose(x, key)
    return getitem
