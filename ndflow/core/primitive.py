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
                 "effect", "sink", "check", "vjp_uses_out", "returns_view", "blas", "fused",
                 "variable_access", "run_time_check", "__weakref__")

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

    def def_vjp(self, f=None, *, uses_out=False):
        def reg(g):
            self.vjp = g
            self.vjp_uses_out = uses_out
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
