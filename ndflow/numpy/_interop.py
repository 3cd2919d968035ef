"""NumPy protocols: `np.f(ndflow_array)` runs ndflow's `f` when it has one (staying
differentiable and on the device), else NumPy's on a host copy."""
import numpy as np

from ..core.ndarray import ndarray


def _tnp():
    import ndflow.numpy as m
    return m


def _to_host(x):
    if isinstance(x, ndarray):
        return x.numpy()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_host(e) for e in x)
    return x


def _wrap_result(r):
    tnp = _tnp()
    if isinstance(r, np.ndarray):
        return tnp.asarray(r)
    if isinstance(r, tuple):
        return tuple(_wrap_result(e) for e in r)
    if isinstance(r, list):
        return [_wrap_result(e) for e in r]
    return r


def array_ufunc(ufunc, method, inputs, kwargs):
    tnp = _tnp()
    f = getattr(tnp, ufunc.__name__, None)
    if method == "__call__" and f is not None and callable(f):
        out = kwargs.pop("out", None)
        if out is not None:
            out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
            if not isinstance(out, ndarray):
                return NotImplemented
        return f(*inputs, out=out, **kwargs) if out is not None else f(*inputs, **kwargs)
    if method != "__call__" and isinstance(f, tnp.ufunc):
        # np.add.reduce(x), np.multiply.at(x, ...) etc.: ndflow's own method
        return getattr(f, method)(*inputs, **kwargs)
    host = [_to_host(i) for i in inputs]
    kwargs = {k: _to_host(v) for k, v in kwargs.items()}
    return _wrap_result(getattr(ufunc, method)(*host, **kwargs))


def array_function(func, args, kwargs):
    tnp = _tnp()
    mod = func.__module__ or ""
    space = tnp
    for part in ("linalg", "fft"):
        if mod.endswith(part):
            space = getattr(tnp, part, None)
    f = getattr(space, func.__name__, None) if space is not None else None
    if f is not None and callable(f) and f is not func:
        return f(*args, **kwargs)
    return _wrap_result(func(*_to_host(list(args)), **{k: _to_host(v) for k, v in kwargs.items()}))
