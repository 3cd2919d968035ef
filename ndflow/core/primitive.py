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

Interpreters (graph tracing, batching) sit on a per-thread stack; `bind` hands the primitive to
the innermost one that owns an input. Tapes observe every bind whose inputs they watch.
"""
from .state import STATE, GLOBAL


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
                 "effect", "vjp_uses_out", "__weakref__")

    def __init__(self, name, impl=None, abstract=None, multiple_results=False, effect=False):
        self.name = name
        self.impl = impl
        self.abstract = abstract
        self.vjp = None
        self.jvp = None
        self.batch = None
        self.fusion = None
        self.multiple_results = multiple_results
        self.effect = effect          # random draws, variable reads/writes: never folded or CSE'd
        self.vjp_uses_out = False     # vjp(ct, *primals, out=..., **params); out: all outputs
        #                               (a tuple) for multiple_results
        REGISTRY.append(self)

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
    if GLOBAL.fast:
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
    else:
        if top not in st.traces:
            _leaked(prim, top)
        outs = top.process(prim, args, params)
    if st.tapes:
        for tape in st.tapes:
            tape._record(prim, args, outs, params)
    return outs
