"""Functional forms (`grad`, `value_and_grad`), `custom_gradient` and `numpy_function`.

What a caller passes (arguments, a grad_fn's gradients, numpy_function's inputs) is converted
by the NumPy layer (`tnp.asarray`: NumPy's weak scalars, prefer_float32, device placement);
everything else is primitives."""
import functools
import inspect

import numpy as np

from .. import numpy as tnp
from ..core.ndarray import ndarray
from ..core.mutation import alias
from ..core.primitive import Primitive, Aval, bind
from ..core.state import STATE
from ..core import tree
from ..core import dtypes as _dt
from ..core.variable import VariableBase
from ..primitives.elementwise import convert_p
from ..primitives.indexing import getitem_p
from .tape import GradientTape, stop_all_recording


def _as_tuple(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _distinct(args, nums):
    """The differentiated arguments as values of their own: the same array passed in two
    places (tied weights) gets each argument's own gradient, as in JAX. A repeated array is
    replaced by a view of itself (same memory, so writes still reach the caller's array; tapes
    outside record the view, so higher-order gradients still reach it)."""
    counts = {}
    for a in tree.flatten(args):
        if isinstance(a, ndarray):
            counts[id(a)] = counts.get(id(a), 0) + 1
    if all(c == 1 for c in counts.values()):
        return args

    def own(a):
        if isinstance(a, ndarray) and counts[id(a)] > 1:
            return bind(getitem_p, a, spec=(("e",),))
        return a
    args = list(args)
    for i in nums:
        args[i] = tree.map_structure(own, args[i])
    return args


def _is_real_float(dt):
    return dt.kind == "f" or dt == _dt.BFLOAT16


def _check_grad_input(x, name):
    if isinstance(x, ndarray) and not (_is_real_float(x.dtype) or x.dtype.kind == "c"):
        raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                        f"sub-dtype of np.inexact), but got {x.dtype.name}. Convert the "
                        f"argument to a float dtype, or use nf.GradientTape for integer inputs.")


def numpy_call(args, kwargs):
    """Whether a call of a functional transformation (`grad`, `value_and_grad`, `jvp`,
    `jacfwd`, `jacrev`, `hessian`) is a NumPy call, whose results are given back as NumPy
    values: no ndflow array or Variable among its arguments, and nothing active in the thread
    (tape, forward accumulator, `nf.function` trace, `vectorized_map`) that could still use
    ndflow results (a NumPy result would cut an outer tape's path to a Variable the function
    reads)."""
    if STATE.tapes or STATE.traces:
        return False
    return not any(isinstance(a, (ndarray, VariableBase))
                   for a in tree.flatten((tuple(args), kwargs)))


def to_numpy(out):
    """`out` with each ndflow array replaced by its NumPy value (a NumPy scalar for 0-d, as
    NumPy's own functions return), for the results of a NumPy call (`numpy_call`)."""
    def one(a):
        if isinstance(a, ndarray):
            v = a.numpy()
            return v[()] if v.ndim == 0 else v
        return a
    return tree.map_structure(one, out)


def value_and_grad(fun, argnums=0, has_aux=False):
    """f -> (value, gradient of the scalar value w.r.t. the argnums arguments), as
    `jax.value_and_grad`: the value must be a real scalar (TypeError otherwise), and each
    differentiated argument gets its own gradient even when the same array is passed twice.

    The results are ndflow arrays, except for a NumPy call, as in autograd: called with NumPy
    arrays and Python numbers only (no ndflow array or Variable among the arguments) and
    outside any tape, `nf.function` or `vectorized_map`, the value, the gradients and the aux
    output come back as NumPy values (NumPy scalars for 0-d). So SciPy's optimizers, whose
    compiled parts accept only NumPy arrays, take the pair as it is:

    >>> import numpy as np, scipy.optimize
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> f = lambda x: tnp.sum((x - 1.5) ** 2)
    >>> r = scipy.optimize.minimize(nf.value_and_grad(f), np.zeros(2), jac=True,
    ...                             method="L-BFGS-B")
    >>> bool(np.allclose(r.x, 1.5)), type(r.x).__module__
    (True, 'numpy')

    Pass an ndflow array (`tnp.asarray(x)`) to get ndflow results (on its device)."""
    @functools.wraps(fun, updated=())
    def wrapped(*args, **kwargs):
        if numpy_call(args, kwargs):
            return to_numpy(_value_and_grad(fun, argnums, has_aux, args, kwargs))
        return _value_and_grad(fun, argnums, has_aux, args, kwargs)
    return wrapped


def _value_and_grad(fun, argnums, has_aux, args, kwargs):
    nums = _as_tuple(argnums)
    args = list(args)
    for i in nums:
        args[i] = tree.map_structure(lambda a: tnp.asarray(a) if not isinstance(a, ndarray)
                                     else a, args[i])
        for a in tree.flatten(args[i]):
            _check_grad_input(a, "grad")
    args = _distinct(args, nums)
    with GradientTape() as tape:
        for i in nums:
            tape.watch(args[i])
        out = fun(*args, **kwargs)
        val, aux = (out if has_aux else (out, None))
    v = val if isinstance(val, ndarray) else tnp.asarray(val)
    if v.shape != ():
        raise TypeError(f"grad requires a scalar output, got shape {tuple(v.shape)}")
    if not _is_real_float(v.dtype):
        raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {v.dtype.name}. For complex outputs, use "
                        f"nf.GradientTape with output_gradients (a vector-Jacobian product).")
    gs = tape.gradient(val, [args[i] for i in nums], unconnected_gradients="zero")
    g = gs[0] if isinstance(argnums, int) else tuple(gs)
    return ((val, aux), g) if has_aux else (val, g)


def grad(fun, argnums=0, has_aux=False):
    """f -> gradient of f (scalar-valued) w.r.t. argument `argnums`, as `jax.grad`; NumPy
    values for a NumPy call (see `value_and_grad`)."""
    vg = value_and_grad(fun, argnums, has_aux)

    @functools.wraps(fun, updated=())
    def wrapped(*args, **kwargs):
        (v, g) = vg(*args, **kwargs)
        return (g, v[1]) if has_aux else g
    return wrapped


# ------------------------------------------------------------------ custom_gradient
def _as_list(g):
    return list(g) if isinstance(g, (list, tuple)) else [g]


def _checked_grads(name, what, gs, like):
    """grad_fn's gradients for `like` (arrays): one each (None for none), of their shapes."""
    if len(gs) != len(like):
        raise ValueError(f"custom_gradient {name}: grad_fn returned {len(gs)} gradient(s) for "
                         f"{len(like)} {what}")
    out = []
    for k, (g, x) in enumerate(zip(gs, like)):
        if g is None:
            out.append(None)
            continue
        g = tnp.asarray(g)
        if tuple(g.shape) != tuple(x.shape) and None not in tuple(g.shape) + tuple(x.shape):
            raise ValueError(f"custom_gradient {name}: grad_fn returned a gradient of shape "
                             f"{tuple(g.shape)} for {what[:-1]} {k} of shape {tuple(x.shape)}")
        if g.dtype != x.dtype and _dt.is_differentiable(x.dtype):
            g = bind(convert_p, g, dtype=x.dtype)
        out.append(g)
    return out


def _custom_vjp(ct, *args, grad_fn, n_out, n_in, variables, name):
    upstream = [ct] if n_out == 1 else list(ct)
    if variables:
        res = grad_fn(*upstream, variables=variables)
        if not isinstance(res, (list, tuple)) or len(res) != 2:
            raise ValueError(f"custom_gradient {name}: a grad_fn that takes `variables` returns "
                             f"(input gradients, variable gradients)")
        dx, dv = res
        dv = _checked_grads(name, "variables", _as_list(dv), args[n_in:])
    else:
        dx, dv = grad_fn(*upstream), []
    dx = _checked_grads(name, "inputs", _as_list(dx), args[:n_in])
    return tuple(dx) + tuple(dv)


custom_gradient_p = Primitive("custom_gradient", None, None)
custom_gradient_p.def_vjp(_custom_vjp)


def custom_gradient(f=None):
    """Decorator: `f(*x)` returns `(y, grad_fn)`; `grad_fn(*upstream)` gives the input
    gradients (one per input, None for none, each of its input's shape), as
    `tf.custom_gradient`. When `f` reads Variables, `grad_fn(*upstream, variables=...)` gets
    them and returns `(input gradients, variable gradients)`, and tapes get both. The forward
    pass is not recorded.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> @nf.custom_gradient
    ... def clipped_identity(x):
    ...     return x, lambda dy: tnp.clip(dy, -1., 1.)
    >>> nf.grad(lambda x: tnp.sum(5. * clipped_identity(x)))(tnp.asarray([1., 2.]))
    array([1., 1.], dtype=float64)
    """
    if f is None:
        return custom_gradient
    name = getattr(f, "__name__", repr(f))

    @functools.wraps(f, updated=())
    def wrapped(*args, **kwargs):
        xs = [a if isinstance(a, ndarray) else tnp.asarray(a) for a in args]
        tapes = list(STATE.tapes)
        if not tapes:
            y, grad_fn = f(*xs, **kwargs)
            return y
        with stop_all_recording():
            with GradientTape() as spy:      # only to learn which Variables f reads
                y, grad_fn = f(*xs, **kwargs)
        variables = list(spy.watched_variables())
        try:
            takes_vars = "variables" in inspect.signature(grad_fn).parameters or any(
                p.kind is p.VAR_KEYWORD for p in inspect.signature(grad_fn).parameters.values())
        except (TypeError, ValueError):
            takes_vars = False
        if variables and not takes_vars:
            raise TypeError(f"custom_gradient {name}: the function reads Variables "
                            f"({', '.join(v.name for v in variables)}), so its grad_fn must "
                            f"accept a keyword argument 'variables' and return (input "
                            f"gradients, variable gradients)")
        for t in tapes:
            for v in variables:
                t._on_variable_read(v)
        ys = tree.flatten(y)
        outs = []
        for v in ys:
            c = alias(tnp.asarray(v))     # a distinct value the tapes can tie to grad_fn
            c._tid = 0
            outs.append(c)
        params = {"grad_fn": grad_fn, "n_out": len(outs), "n_in": len(xs),
                  "variables": variables or None, "name": name}
        ins = tuple(xs) + tuple(v._read_for_tape() for v in variables)
        for t in tapes:
            t._record(custom_gradient_p, ins, tuple(outs), params)
        return tree.unflatten(tree.flatten_with_def(y)[1], outs)
    return wrapped


# ------------------------------------------------------------------ numpy_function
def _np_fn_impl(*bufs, func, Tout):
    res = func(*[np.asarray(b) for b in bufs])
    single = not isinstance(Tout, (list, tuple))
    if single:
        return np.asarray(res, dtype=np.dtype(Tout) if Tout is not None else None)
    return tuple(np.asarray(r, dtype=np.dtype(t)) for r, t in zip(res, Tout))


def _np_fn_abstract(*avals, func, Tout):
    if any(None in a.shape for a in avals):
        raise ValueError("numpy_function inside nf.function needs inputs of known shape")
    res = _np_fn_impl(*[np.zeros(a.shape, a.dtype) for a in avals], func=func, Tout=Tout)
    if isinstance(res, tuple):
        return tuple(Aval(r.shape, r.dtype) for r in res)
    return Aval(res.shape, res.dtype)


# the user's function may return one of its arguments
numpy_function_p = Primitive("numpy_function", _np_fn_impl, _np_fn_abstract, effect=True,
                             returns_view=True)
numpy_function_p.def_vjp(lambda ct, *args, func, Tout: (None,) * len(args))
numpy_function_multi_p = Primitive("numpy_function_multi", _np_fn_impl, _np_fn_abstract,
                                   multiple_results=True, effect=True, returns_view=True)
numpy_function_multi_p.def_vjp(lambda ct, *args, func, Tout: (None,) * len(args))


def numpy_function(func, inp, Tout, stateful=True, name=None):
    """Run `func` on NumPy arrays, also inside `nf.function` (at every call); no gradient."""
    xs = [tnp.asarray(a) for a in inp]
    if isinstance(Tout, (list, tuple)):
        return list(bind(numpy_function_multi_p, *xs, func=func, Tout=tuple(Tout)))
    return bind(numpy_function_p, *xs, func=func, Tout=Tout)
