"""NumPy protocols: `np.f(ndflow_array)` runs ndflow's `f` when it has one (staying
differentiable and on the device), else NumPy's on a host copy: eagerly only, with a one-time
warning per function, since NumPy's result is a constant to tapes and traces. Under a tape
watching an input, or inside `nf.function`/`vectorized_map`, such a call raises
`NumPyFallbackError` naming the function instead of dropping the gradient or baking in a
value."""
import warnings

import numpy as np

from ..core import ndarray as _nd
from ..core.ndarray import ndarray
from ..core.state import STATE
from ._core import asarray
from .ufuncs import ufunc as _ufunc


class NumPyFallbackError(TypeError):
    """A NumPy function or ufunc ndflow does not implement was called where its result must be
    differentiable or traced."""


class NumPyFallbackWarning(UserWarning):
    """A NumPy function or ufunc ndflow does not implement ran in NumPy on a host copy."""


_WARNED = set()


def _arrays_in(x, out):
    if isinstance(x, ndarray):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for e in x:
            _arrays_in(e, out)
    elif isinstance(x, dict):
        for e in x.values():
            _arrays_in(e, out)
    return out


def _why_not_host(args, kwargs):
    """Why NumPy's host kernel must not run on these operands ('' when it may)."""
    arrays = _arrays_in([list(args), kwargs], [])
    if any(a._t is not None for a in arrays):
        return ("inside nf.function, vectorized_map or forward-mode differentiation its "
                "operands are traced and NumPy's result would be a constant")
    for tape in STATE.tapes:
        conn = tape._connected
        if any(a._tid and a._tid in conn for a in arrays):
            return "a GradientTape watches its operands and NumPy's result carries no gradient"
    return ""


def numpy_fallback(name, args, kwargs):
    """Permission to run NumPy's `name` on host copies of these operands: raises
    `NumPyFallbackError` under a tape watching them or inside a trace, else warns once per
    function."""
    why = _why_not_host(args, kwargs)
    if why:
        raise NumPyFallbackError(
            f"{name} has no ndflow implementation, so it would run in NumPy on a host copy; "
            f"{why}. Use ndflow.numpy functions instead; for a value that needs no gradient, "
            f"call it on `x.numpy()` outside the tape, or through nf.numpy_function inside "
            f"nf.function (nf.custom_gradient can give it a gradient)")
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(f"{name} has no ndflow implementation: it runs in NumPy on a host copy "
                      f"(not differentiable, not traceable); this warning is shown once",
                      NumPyFallbackWarning, stacklevel=4)


def _to_host(x):
    if isinstance(x, ndarray):
        return x.numpy()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_host(e) for e in x)
    return x


def _wrap_result(r):
    if isinstance(r, np.ndarray):
        return asarray(r)
    if isinstance(r, tuple):
        return tuple(_wrap_result(e) for e in r)
    if isinstance(r, list):
        return [_wrap_result(e) for e in r]
    return r


def _numpy_outs(kwargs):
    """The `out=` of a ufunc call as a tuple, when it holds a NumPy array (None otherwise)."""
    out = kwargs.get("out")
    if out is None:
        return None
    outs = out if isinstance(out, tuple) else (out,)
    if any(isinstance(o, np.ndarray) for o in outs):
        return outs
    return None


def _into_numpy_buffers(ufunc, method, inputs, kwargs, outs):
    """`np.add(a, b, out=numpy_array)`, `numpy_array += ndflow_array`: NumPy's own ufunc writes
    into the NumPy buffer (its casting rules, `where=`, return value), as NumPy does. ndflow
    arrays among the outputs receive their results afterwards. A traced or batched operand
    has no value to write, and a watched one's gradient cannot follow it into a NumPy buffer:
    both are refused by name."""
    why = _why_not_host(list(inputs) + list(outs), {})
    if why:
        raise NumPyFallbackError(
            f"{ufunc.__name__}{'' if method == '__call__' else '.' + method} with out= a NumPy "
            f"array: {why}; compute into an ndflow array (out= an ndflow array, or no out=) "
            f"instead")
    host_outs = tuple(o.numpy().copy() if isinstance(o, ndarray) else o for o in outs)
    kw = {k: _to_host(v) for k, v in kwargs.items() if k != "out"}
    r = getattr(ufunc, method)(*[_to_host(i) for i in inputs], out=host_outs, **kw)
    for o, h in zip(outs, host_outs):
        if isinstance(o, ndarray):
            o[...] = h
    if isinstance(r, tuple):
        return tuple(o if isinstance(o, ndarray) else h for o, h in zip(outs, r))
    return outs[0] if isinstance(outs[0], ndarray) else r


def array_ufunc(ufunc, method, inputs, kwargs):
    tnp = _nd._tnp                      # (the NumPy layer's names, by NumPy's names)
    outs = _numpy_outs(kwargs)
    if outs is not None:
        return _into_numpy_buffers(ufunc, method, inputs, kwargs, outs)
    # only NumPy's own ufuncs map to ndflow's by name (a SciPy ufunc may share a name)
    f = getattr(tnp, ufunc.__name__, None) if getattr(np, ufunc.__name__, None) is ufunc \
        else None
    if method == "__call__" and f is not None and callable(f):
        out = kwargs.pop("out", None)
        if out is not None:
            out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
            if not isinstance(out, ndarray):
                return NotImplemented
        return f(*inputs, out=out, **kwargs) if out is not None else f(*inputs, **kwargs)
    if method != "__call__" and isinstance(f, _ufunc):
        # np.add.reduce(x), np.multiply.at(x, ...) etc.: ndflow's own method
        return getattr(f, method)(*inputs, **kwargs)
    numpy_fallback(f"ufunc {ufunc.__name__}" + ("" if method == "__call__" else
                                                 f".{method}"), inputs, kwargs)
    host = [_to_host(i) for i in inputs]
    kwargs = {k: _to_host(v) for k, v in kwargs.items()}
    return _wrap_result(getattr(ufunc, method)(*host, **kwargs))


def array_function(func, args, kwargs):
    tnp = _nd._tnp
    mod = func.__module__ or ""
    space = tnp
    for part in ("linalg", "fft"):
        if mod.endswith(part):
            space = getattr(tnp, part, None)
    if mod.endswith("stride_tricks"):
        space = tnp.lib.stride_tricks
    f = getattr(space, func.__name__, None) if space is not None else None
    if f is not None and callable(f) and f is not func:
        return f(*args, **kwargs)
    numpy_fallback(f"{mod}.{func.__name__}" if mod else func.__name__, args, kwargs)
    return _wrap_result(func(*_to_host(list(args)), **{k: _to_host(v) for k, v in kwargs.items()}))


_nd._array_ufunc = array_ufunc
_nd._array_function = array_function
