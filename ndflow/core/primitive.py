"""Primitives and the one door every computation goes through: `bind`.

A primitive is declared once with its rules:

    impl(*buffers, **params)                   the kernel (NumPy/CuPy arrays in, array(s) out)
    abstract(*avals, **params)                 shape/dtype rule: avals have .shape (None = unknown
                                               dim) and .dtype; returns Aval or a tuple of them
    vjp(ct, *primals, **params)                one cotangent per input (None = no gradient);
                                               written with primitives, so differentiable again
    jvp(tangents, *primals, **params)          forward mode (optional)
    batch(args, axes, **params)                -> (out, out_axis); axes[i] None = unbatched
    fusion                                     elementwise expression template (compiler)

and its traits, which the compiler and the memory planner read (no pass identifies a primitive
by its name):

    effect          random draws, Variable reads and writes, host callbacks: never folded,
                    merged, removed or reordered (`reorderable` is its negation)
    variable_access 'read' / 'write' for the Variable primitives (else None)
    returns_view    the result may share memory with an array input (a NumPy view, or the
                    input itself): reshape, transpose, getitem, real, stop_gradient, control
                    flow that may return an operand ... Every other primitive returns fresh
                    buffers; tests/test_aliasing.py checks the declarations against the kernels
    elementwise     (property) it has a fusion template: elementwise, fusible
    blas            its kernel calls BLAS/LAPACK (threads: fused kernels leave them the cores)
    fused           a fused elementwise region made by the compiler (supports donated outputs)
    run_time_check  the kernel warns or raises depending on values (NumPy's warnings, value-
                    dependent errors and dtypes): it runs at every call, never once at
                    compile time (constant folding leaves it)
    sink            an output effect (implies `effect`): it only sends its inputs out of the
                    program (`nf.print`, summaries) and returns nothing the program uses, so no
                    later value depends on it. Gradient rules and replays (a loop run again to
                    differentiate it) leave sinks out, so the backward pass does not print again;
                    a gradient through a control-flow body holding a sink is allowed; an exporter
                    with no equivalent may drop them. `primitives/host.py` builds them.
    check           an effect that only inspects its inputs and may raise (`check_numerics`),
                    its outputs being its inputs' values: running it again is harmless, so a
                    body holding one can be replayed to differentiate it (implies `effect`)

Interpreters (graph tracing, batching) sit on a per-thread stack; `bind` hands the primitive to
the innermost one that owns an input. Tapes observe every bind whose inputs they watch.
"""
import numpy as _np

from .state import STATE, GLOBAL
from . import mutation as _mut


class Aval:
    """Abstract value: what the shape/dtype rules see. `None` in shape = unknown size."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return "%s%s" % (self.dtype.name, list(self.shape))


class Primitive:
    __slots__ = ("name", "impl", "abstract", "vjp", "jvp", "batch", "fusion", "multiple_results",
                 "effect", "sink", "check", "vjp_uses_out", "vjp_reads", "vjp_needs",
                 "returns_view", "blas", "fused", "variable_access",
                 "run_time_check", "__weakref__")

    def __init__(self, name, impl=None, abstract=None, multiple_results=False, effect=False,
                 sink=False, check=False, returns_view=False, blas=False, variable_access=None,
                 run_time_check=False):
        self.name = name
        self.impl = impl
        self.abstract = abstract
        self.vjp = None
        self.jvp = None
        self.batch = None
        self.fusion = None
        self.multiple_results = multiple_results
        self.effect = effect or sink or check   # never folded, merged or removed: see above
        self.sink = sink              # output-only effect (printing, summaries)
        self.check = check            # inspects and may raise (check_numerics)
        self.vjp_uses_out = False     # vjp(ct, *primals, out=..., **params); out: all outputs
        #                               (a tuple) for multiple_results
        self.vjp_reads = None         # positions of the inputs whose *values* the VJP reads
        #                               (None: all); a tape keeps only the shape of the others
        self.vjp_needs = False        # vjp(..., needs=(bool per input)): the tape says which
        #                               input gradients it uses (the others may be None)
        self.returns_view = returns_view
        self.blas = blas
        self.fused = False
        self.variable_access = variable_access
        self.run_time_check = run_time_check
        REGISTRY.append(self)

    @property
    def elementwise(self):
        """Elementwise and fusible: it declares a fusion template."""
        return self.fusion is not None

    @property
    def reorderable(self):
        """May be moved, merged, folded or removed by the compiler (no effect)."""
        return not self.effect

    def __repr__(self):
        return self.name

    def __call__(self, *args, **params):
        return bind(self, *args, **params)

    # decorators so a primitive and all its rules read as one block
    def def_impl(self, f):
        self.impl = f
        return f

    def def_abstract(self, f):
        self.abstract = f
        return f

    def def_vjp(self, f=None, *, uses_out=False, reads=None, needs=False):
        """`reads`: the inputs whose values the rule reads (None: all of them; the others
        only by shape and dtype), so a tape need not keep the rest alive. `needs`: the rule
        takes `needs=` (a bool per input; absent means all), and may return None for an input
        whose gradient is not needed. A rule knows nothing of buffers: where a cotangent's
        memory may be reused, the eager backward plan decides it (autodiff/eager_plan.py)."""
        def reg(g):
            self.vjp = g
            self.vjp_uses_out = uses_out
            self.vjp_reads = None if reads is None else tuple(reads)
            self.vjp_needs = needs
            return g
        return reg(f) if f is not None else reg

    def def_jvp(self, f):
        self.jvp = f
        return f

    def def_batch(self, f):
        self.batch = f
        return f


REGISTRY = []

_wrap = None          # set by ndarray module: buffer -> eager ndarray
_new = object.__new__
_ndarray = None       # set by ndarray module: the ndarray class
_eager_apply = None   # set by backends: full eager path (devices, conversions)


def bind(prim, *args, **params):
    # GLOBAL.fast: no thread has anything active (one plain read); otherwise this thread's
    # own state decides, so another thread's tape does not slow this one down
    if GLOBAL.fast or STATE.fast:
        # Eager fast path: no tape, trace or scope can be interested. `_dev is None` marks an
        # eager array on the default device (symbolic and batched values never have it).
        for a in args:
            if a._dev is not None:
                break
        else:
            out = prim.impl(*[a._v for a in args], **params)
            return tuple(map(_wrap, out)) if prim.multiple_results else _wrap(out)
    return bind_slow(prim, args, params)


def bind_taped(prim, args, params, tapes):
    """`bind_slow`'s tape lane, for a caller that has checked that it applies (`STATE.lane`,
    the thread's `tapes`: eager under tapes only, NumPy's promotion; every argument an eager
    array on the default device): the kernel, then the tapes record (the NumPy layer's lanes
    call it)."""
    if params:
        # (one operand: the reductions; without the list's frame)
        out = prim.impl(args[0]._v, **params) if len(args) == 1 else \
            prim.impl(*[a._v for a in args], **params)
    elif len(args) == 2:
        out = prim.impl(args[0]._v, args[1]._v)
    else:
        out = prim.impl(args[0]._v) if len(args) == 1 else prim.impl(*[a._v for a in args])
    if prim.multiple_results:
        outs = tuple(map(_wrap, out))
    else:
        outs = _new(_ndarray)          # _wrap, inlined
        outs._v = out
        outs._t = None
        outs._dev = None
        outs._tid = 0
    for tape in tapes:
        tape._record(prim, args, outs, params)
    return outs


def find_top_trace(prim, args):
    top = None
    for a in args:
        t = a._t
        if t is not None and (top is None or t.level > top.level):
            top = t
    for t in reversed(STATE.traces):
        if t.is_graph:
            # values created from nothing (random draws, variable reads) belong to the innermost
            # graph being traced so that they happen at run time, not once at trace time; so
            # does all work inside a control-flow body ('dynamic' trace), whatever its inputs
            if (t.dynamic or prim.effect or not args) and (top is None or t.level > top.level):
                top = t
            break
    return top


def _leaked(prim, trace):
    from .ndarray import _user_line
    raise ValueError(
        f"'{prim.name}' (at {_user_line()}) uses a value computed inside a trace that has "
        f"finished: a control-flow body (a branch or loop of nf.cond / nf.while_loop, or of an "
        f"`if`/`for`/`while` AutoGraph converted), a vectorized_map or another nf.function. "
        f"Values leave such a body only as its results (a Python list appended to inside a "
        f"loop over a traced value keeps the body's values: collect them with nf.scan, or "
        f"assign into a preallocated array)")


def bind_slow(prim, args, params):
    st = STATE
    if st.taping or (not st.traces and st.device is None and not st.check_numerics):
        # eager under tapes only (the common recording case): the fast path's kernel call,
        # then the tapes record
        if len(args) == 2:
            # (the common binary call without the loop and list comprehension's frames)
            a, b = args
            ok = a._dev is None and b._dev is None
            if ok:
                out = prim.impl(a._v, b._v, **params)
        else:
            for a in args:
                if a._dev is not None:
                    ok = False
                    break
            else:
                ok = True
                out = prim.impl(*[a._v for a in args], **params)
        if ok:
            if prim.multiple_results:
                outs = tuple(map(_wrap, out))
            else:
                outs = _new(_ndarray)          # _wrap, inlined
                outs._v = out
                outs._t = None
                outs._dev = None
                outs._tid = 0
            for tape in st.tapes:
                tape._record(prim, args, outs, params)
            return outs
    top = find_top_trace(prim, args)
    if top is None:
        outs = _eager_apply(prim, args, params)
        if st.check_numerics and not prim.sink:
            _check_numerics(prim, args, outs, params)
    else:
        if top not in st.traces:
            _leaked(prim, top)
        outs = top.process(prim, args, params)
    if st.traces and prim in _mut.VIEWS and args and (prim.name != "getitem" or len(args) == 1):
        # NumPy would return a view: a later write into either side must show in the other
        _mut.note_view(prim, args, outs, params)
    if st.tapes:
        for tape in st.tapes:
            tape._record(prim, args, outs, params)
    return outs


def _check_numerics(prim, args, outs, params):
    from .errors import nonfinite_error
    from .ndarray import _user_line
    err = nonfinite_error(prim.name, [o._v for o in (outs if prim.multiple_results else (outs,))],
                          [a._v for a in args])
    if err is not None and not any(_is_body(v) for v in params.values()):
        # (a control-flow op is not blamed: its bodies' operations are checked themselves)
        raise type(err)(f"{err}\n  in '{prim.name}' at {_user_line()}") from None


def _is_body(v):
    """A control-flow body parameter (a SubGraph, or a tuple of them: switch_case)."""
    return hasattr(v, "in_avals") or (type(v) is tuple and bool(v) and hasattr(v[0], "in_avals"))


# ------------------------------------------------------------------ composite primitives
class Composite:
    """A function with two definitions that must agree: `kernel`, NumPy's function run on host
    buffers, and `compose`, its composition over primitives. Plain eager execution (no tape,
    trace, batching, device scope or switch; every array argument an eager array on the default
    device) runs the kernel, for NumPy's speed; everything else (tapes, traces, vectorized_map,
    forward mode) runs `compose` inline, so every transformation sees its primitives.
    `bind_composite` chooses; tests/test_composites.py checks the two against each other.

    `kernel(*args, **kwargs)` takes the function's own arguments, ndflow arrays replaced by
    their NumPy buffers, and returns NumPy values. `compose_if` names parameters (e.g. 'out')
    for which a value other than None means the kernel cannot answer (it has no `out=` array to
    write into), so the composition runs; a dict gives the value the kernel handles instead of
    None (e.g. {'descending': False})."""
    __slots__ = ("name", "kernel", "compose", "compose_if", "_where", "__weakref__")

    def __init__(self, name, kernel, compose, compose_if=()):
        import inspect
        self.name = name
        self.kernel = kernel
        self.compose = compose
        if not isinstance(compose_if, dict):
            compose_if = dict.fromkeys(compose_if)
        self.compose_if = compose_if
        params = list(inspect.signature(compose).parameters.values()) if compose_if else ()
        pos = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        # (name, position or None, the value the kernel handles): found without binding the
        # signature on every call
        self._where = tuple((n, pos.index(n) if n in pos else None, ok)
                            for n, ok in compose_if.items())
        COMPOSITES[name] = self

    def __repr__(self):
        return "Composite(%s)" % self.name

    def __call__(self, *args, **kwargs):
        return bind_composite(self, args, kwargs)

    def kernel_applies(self, args, kwargs):
        """Whether the kernel can answer this call (no `compose_if` argument is given)."""
        for name, i, ok in self._where:
            if name in kwargs:
                v = kwargs[name]
            elif i is not None and i < len(args):
                v = args[i]
            else:
                continue                  # the default: the kernel's too
            if v is not ok and not (type(v) in (bool, int) and v == ok):
                return False
        return True


COMPOSITES = {}   # name -> Composite (tests enumerate them)


def composite(kernel, name=None, compose_if=(), adapt=True):
    """Decorator: the decorated function is the composition; the result is a plain function
    (keeping its name, docstring and signature) that does what `bind_composite` does, inlined
    (it is on eager hot paths such as `reshape`). `kernel` is NumPy's function; `adapt` passes
    it the arguments as `numpy_kernel` does (False: as given, the signatures being the same)."""
    import functools

    def deco(compose):
        k = numpy_kernel(kernel, compose) if adapt else kernel
        c = Composite(name or compose.__name__, k, compose, compose_if)
        where = c._where
        applies = c.kernel_applies
        # positional arguments before the first `compose_if` parameter can never send the call
        # to the composition: a call giving only those (the common one) skips the check
        free = min([i for _, i, _ in where if i is not None], default=1 << 30)

        @functools.wraps(compose)
        def f(*args, **kwargs):
            if GLOBAL.fast or STATE.fast:
                # the arguments' host values, inlined (_hosted): this wrapper is the whole eager
                # cost of a composite over NumPy's own call
                h = []
                for x in args:
                    t = type(x)
                    if t is _ndarray:
                        if x._dev is not None or x._t is not None:
                            break
                        h.append(x._v)
                    elif t is tuple or t is list:
                        for e in x:
                            te = type(e)
                            if te is _ndarray or te is tuple or te is list:
                                x = _hosted_seq(x)
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
                        r = k(*h, **dict(zip(kwargs, hk)))
                    else:
                        if len(args) > free and not applies(args, kwargs):
                            return compose(*args)
                        r = k(*h)
                    if type(r) is _np.ndarray:
                        o = _new(_ndarray)          # _wrap, inlined
                        o._v = r
                        o._t = None
                        o._dev = None
                        o._tid = 0
                        return o
                    return host_to_nf(r)
            return compose(*args, **kwargs)
        f.composite = c
        return f
    return deco


def numpy_kernel(npf, compose):
    """A kernel calling NumPy's `npf` with the arguments of `compose` (ndflow's version of it):
    parameters NumPy does not have, or that NumPy leaves unset (its `<no value>` default) where
    ndflow writes None, are not passed."""
    import inspect
    sig = inspect.signature(compose)
    if str(sig) == str(inspect.signature(npf)):
        return npf               # the same parameters and defaults: nothing to adapt
    nsig = inspect.signature(npf).parameters
    unset = {n for n, p in nsig.items() if p.default is _np._NoValue}

    def kernel(*args, **kwargs):
        given = sig.bind(*args, **kwargs).arguments
        pos, kw, gap = [], {}, False
        for n in sig.parameters:
            p = nsig.get(n)
            if n not in given or p is None or (given[n] is None and n in unset):
                gap = True       # later arguments go by keyword
                continue
            v = given[n]
            if p.kind is p.VAR_POSITIONAL:
                pos.extend(v)
            elif p.kind is p.POSITIONAL_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and not gap):
                pos.append(v)
            elif p.kind is p.VAR_KEYWORD:
                kw.update(v)
            else:
                kw[n] = v
        return npf(*pos, **kw)
    kernel.__name__ = "numpy." + npf.__name__
    return kernel


def _hosted(xs):
    """The kernel's arguments: eager default-device ndflow arrays as their NumPy buffers
    (inside lists and tuples too), anything else as is; None if an array is on a device or
    belongs to a trace or a batch (the composition must run)."""
    out = []
    for x in xs:
        t = type(x)
        if t is _ndarray:
            if x._dev is not None or x._t is not None:
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


def _hosted_seq(x):
    """A list or tuple holding arrays (or more lists) with their host values; None where one
    of them is on a device or symbolic."""
    h = _hosted(x)
    return None if h is None else type(x)(h)


def bind_composite(c, args, kwargs):
    """Run composite `c`: its NumPy kernel when plain eager, else its composition inline (a
    tape or trace then records the composition's primitives). (`composite`'s functions do
    the same, inlined.)"""
    if GLOBAL.fast or STATE.fast:
        h = _hosted(args)
        hk = _hosted(kwargs.values()) if h is not None else None
        if hk is not None and (not c._where or c.kernel_applies(args, kwargs)):
            r = c.kernel(*h, **dict(zip(kwargs, hk)))
            return _wrap(r) if type(r) is _np.ndarray else host_to_nf(r)
    return c.compose(*args, **kwargs)


def to_host(x):
    """The NumPy value of an eager ndflow array (anything else as is, lists walked)."""
    if type(x) is _ndarray:
        return x._v
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(to_host(e) for e in x)
    return x


def host_to_nf(r):
    """NumPy results (arrays, scalars, tuples, lists, named tuples) as ndflow arrays."""
    if isinstance(r, (_np.ndarray, _np.generic)):
        return _wrap(r)
    if hasattr(r, "_fields"):
        return type(r)(*[host_to_nf(e) for e in r])
    if isinstance(r, (tuple, list)):
        return type(r)(host_to_nf(e) for e in r)
    return r


class compose_composites:
    """Context manager: composites run their composition even when eager (tests compare it with
    the kernel). Per thread; it makes the thread's state not `fast`, as a tape would."""

    def __enter__(self):
        self._prev = STATE.compose
        STATE.compose = True
        STATE.refresh()
        return self

    def __exit__(self, *exc):
        STATE.compose = self._prev
        STATE.refresh()
