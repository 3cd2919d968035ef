"""Primitives and the one door every computation goes through: `bind`.

A primitive is declared once with its rules:

    impl(*buffers, **params)                   the kernel (NumPy/CuPy arrays in, array(s) out)
    abstract(*avals, **params)                 shape/dtype rule: avals have .shape (None = unknown
                                               dim) and .dtype; returns Aval or a tuple of them
    vjp(ct, *primals, **params)                one cotangent per input (None = no gradient);
                                               written with primitives, so differentiable again
    jvp(tangents, *primals, **params)          forward mode (optional)
    batch(args, axes, **params)                -> (out, out_axis); axes[i] None = unbatched
    scalar                                     an elementwise primitive's scalar expression
                                               (`primitives.scalar.Scalar`, or None): one
                                               element of its result, which the compiled
                                               kernel tiers render (numba, CUDA)

and its traits, which the compiler and the memory planner read (no pass identifies a primitive
by its name):

    effect          random draws, Variable reads and writes, host callbacks: never folded,
                    merged, removed or reordered (`reorderable` is its negation)
    variable_access 'read' / 'write' for the Variable primitives (else None)
    returns_view    the result may share memory with an array input (a NumPy view, or the
                    input itself): reshape, transpose, getitem, real, stop_gradient, control
                    flow that may return an operand ... Every other primitive returns fresh
                    buffers; tests/test_aliasing.py checks the declarations against the kernels
    elementwise     a broadcasting map: each result element is computed from the operand
                    elements at its (broadcast) position alone, whatever the other elements
                    are. Fusion puts any elementwise primitive into a fused region (tier 0
                    calls its kernel there); its `scalar` expression, where declared, lets the
                    compiled tiers take the region too. Declared by the elementwise helpers
                    (`primitives._util.elementwise`)
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
the innermost one that owns an input. Tapes observe every bind whose inputs they watch. `bind`
is the eager door's (core/dispatch.py): plain eager runs the kernel on the buffers, eager under
tapes the kernel and then the records; `bind_general` below is every other case.
"""
import functools
import inspect

import numpy as _np

from .state import STATE
from . import mutation as _mut
from . import dispatch as _door
from .dispatch import to_host, host_to_nf  # noqa: F401  (the NumPy layer's helpers)
from .errors import nonfinite_error, user_line


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
    __slots__ = ("name", "impl", "abstract", "vjp", "jvp", "batch", "scalar", "elementwise",
                 "multiple_results",
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
        self.scalar = None            # see `elementwise`
        self.elementwise = False
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

_eager_apply = None   # set by backends: the eager route with devices (transfers, conversions)


def bind_general(prim, args, params):
    """`bind`'s general route (the specification; the eager door, core/dispatch.py, takes the
    plain and taped ones): the innermost trace owning an input (or the innermost graph trace,
    for effects and inside control-flow bodies) processes the call, or the backends run it
    eagerly (devices, numerics checks); views are noted for the mutation model and every
    recording tape records the call."""
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
    if st.traces and args and prim in _mut.VIEWS and _mut.is_view_record(prim, args, params):
        # NumPy would return a view: a later write into either side must show in the other
        _mut.note_view(prim, args, outs, params)
    if st.tapes:
        for tape in st.tapes:
            tape._record(prim, args, outs, params)
    return outs


bind = _door.make_bind(bind_general)
_mut._bind = bind


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
    raise ValueError(
        f"'{prim.name}' (at {user_line()}) uses a value computed inside a trace that has "
        f"finished: a control-flow body (a branch or loop of nf.cond / nf.while_loop, or of an "
        f"`if`/`for`/`while` AutoGraph converted), a vectorized_map or another nf.function. "
        f"Values leave such a body only as its results (a Python list appended to inside a "
        f"loop over a traced value keeps the body's values: collect them with nf.scan, or "
        f"assign into a preallocated array)")


def _check_numerics(prim, args, outs, params):
    err = nonfinite_error(prim.name, [o._v for o in (outs if prim.multiple_results else (outs,))],
                          [a._v for a in args])
    if err is not None and not any(_is_body(v) for v in params.values()):
        # (a control-flow op is not blamed: its bodies' operations are checked themselves)
        raise type(err)(f"{err}\n  in '{prim.name}' at {user_line()}") from None


def _is_body(v):
    """A control-flow body parameter (a SubGraph, or a tuple of them: switch_case)."""
    return hasattr(v, "in_avals") or (type(v) is tuple and bool(v) and hasattr(v[0], "in_avals"))


# ------------------------------------------------------------------ composite primitives
class Composite:
    """A function with two definitions that must agree: `kernel`, NumPy's function run on host
    buffers, and `compose`, its composition over primitives. Plain eager execution (no tape,
    trace, batching, device scope or switch; every array argument an eager array on the default
    device) runs the kernel, for NumPy's speed; everything else (tapes, traces, vectorized_map,
    forward mode) runs `compose` inline, so every transformation sees its primitives. The eager
    door chooses (core/dispatch.py `composite_call`); tests/test_composites.py checks the two
    against each other.

    `kernel(*args, **kwargs)` takes the function's own arguments, ndflow arrays replaced by
    their NumPy buffers, and returns NumPy values. `compose_if` names parameters (e.g. 'out')
    for which a value other than None means the kernel cannot answer (it has no `out=` array to
    write into), so the composition runs; a dict gives the value the kernel handles instead of
    None (e.g. {'descending': False}). `lane(*args, **kwargs)`, where given, names the one
    primitive a call under tapes amounts to — (primitive, operands, params), or None — which
    the door then applies and records without the composition (tnp.sum of a whole array)."""
    __slots__ = ("name", "kernel", "compose", "compose_if", "_where", "_lane", "_call",
                 "__weakref__")

    def __init__(self, name, kernel, compose, compose_if=(), lane=None):
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
        self._lane = lane
        self._call = None
        COMPOSITES[name] = self

    def __repr__(self):
        return "Composite(%s)" % self.name

    @property
    def call(self):
        """The composite's call, the eager door's (`composite_call`); made on first use (the
        ufunc objects' composites, one per ufunc, are called through the ufunc itself)."""
        c = self._call
        if c is None:
            c = self._call = _door.composite_call(self, self._lane)
        return c

    def __call__(self, *args, **kwargs):
        return self.call(*args, **kwargs)

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


def composite(kernel, name=None, compose_if=(), adapt=True, lane=None):
    """Decorator: the decorated function is the composition; the result is the composite's call
    (the eager door's, core/dispatch.py), keeping the function's name, docstring and signature.
    `kernel` is NumPy's function; `adapt` passes it the arguments as `numpy_kernel` does
    (False: as given, the signatures being the same); `lane`: see `Composite`."""
    def deco(compose):
        k = numpy_kernel(kernel, compose) if adapt else kernel
        c = Composite(name or compose.__name__, k, compose, compose_if, lane)
        f = functools.wraps(compose)(c.call)
        f.composite = c
        return f
    return deco


def numpy_kernel(npf, compose):
    """A kernel calling NumPy's `npf` with the arguments of `compose` (ndflow's version of it):
    parameters NumPy does not have, or that NumPy leaves unset (its `<no value>` default) where
    ndflow writes None, are not passed."""
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
