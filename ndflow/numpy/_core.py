"""Conversion, placement and dtype resolution for the NumPy layer (no kernels, no calculus
here): the base every other module of the layer is built on, so it imports none of them (the
joining that `asarray` of a list of arrays needs is here; manipulation.py's `stack` uses it)."""
import numpy as np

from ..core import dtypes as _dt
from ..core.ndarray import ndarray, _wrap, wrap_on
from ..core.primitive import bind
from ..core.state import STATE
from ..primitives import elementwise as E, shape as S
from ..primitives.indexing import concatenate_p
from ..primitives._util import norm_axis
from ..primitives.misc import runtime_error_p, error_name
from ..backends import device as D
from ..backends.device import adopt

_PY = (bool, int, float, complex)


def _place(buf):
    dev = STATE.device
    if dev is None:
        return _wrap(buf)
    if dev.backend.xp is not np:
        buf = dev.backend.from_host(buf, dev.gpu_id)
    return wrap_on(buf, dev)


def _place_dev(buf):
    return wrap_on(buf, STATE.device)


def _make(fn, *args, **kw):
    """`xp.fn(*args, **kw)` of the current device's array module, as an ndflow array there."""
    dev = STATE.device
    if dev is None or dev.backend.xp is np:
        return _place(getattr(np, fn)(*args, **kw))
    return _place_dev(dev.backend.make(fn, *args, **kw))


def resolve_device(device):
    """The ndflow Device for a `device=` argument (None: the current one)."""
    if device is None:
        return D.current_device()
    if isinstance(device, D.Device):
        return device
    if isinstance(device, str) and device.lower() == "cpu":
        return D.DEFAULT
    try:
        return D.resolve(device)
    except (TypeError, ValueError) as e:
        raise ValueError(f"unsupported device {device!r}: {e}") from None


def on_device(device, fn, *args, **kwargs):
    """`fn(*args, **kwargs)` with its arrays created on `device` (eager results are moved there
    when `fn` returned an existing array)."""
    dev = resolve_device(device)
    with D.device(dev):
        out = fn(*args, **kwargs)
    if isinstance(out, ndarray) and out._t is None and D.device_of(out) is not dev:
        out = D.to_device(out, dev)
    return out


def _no_copy(a):
    return ValueError(f"Unable to avoid a copy while creating an array from "
                      f"{type(a).__name__} as requested (copy=False); use copy=None to allow "
                      f"a copy when needed")


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """Convert to an ndflow array, as `numpy.asarray`: `copy=None` copies only when needed (an
    array of the requested dtype is returned as is, a NumPy array's buffer is shared),
    `copy=True` always copies, `copy=False` never does (ValueError where it would be needed);
    with `device`, on that device.

    Examples
    --------
    >>> import numpy as np, ndflow.numpy as tnp
    >>> tnp.asarray([1, 2])
    array([1, 2], dtype=int64)
    >>> n = np.zeros(2)
    >>> a = tnp.asarray(n)            # shares the NumPy array's memory, as numpy.asarray
    >>> n[0] = 5
    >>> a
    array([5., 0.], dtype=float64)
    """
    if device is not None:
        return on_device(device, asarray, a, dtype, copy=copy)
    if dtype is not None:
        dtype = _dt.canonical(dtype)
    if type(a) is ndarray:
        if dtype is not None and a.dtype != dtype:
            if copy is False:
                raise _no_copy(a)
            return bind(E.convert_p, a, dtype=dtype)
        return bind(E.copy_p, a) if copy else a
    conv = getattr(a, "_ndflow_array_", None)
    if conv is not None:                           # Variables
        return asarray(conv(), dtype, copy=copy)
    if isinstance(a, (list, tuple)) and any(isinstance(e, ndarray) for e in _flat(a)):
        if copy is False:
            raise _no_copy(a)
        return asarray(stacked([asarray(e) for e in a]), dtype)
    if type(a) not in _PY and not isinstance(a, (np.ndarray, np.generic, list, tuple)):
        placed = adopt(a)                  # a device library's array (CuPy's...): zero-copy
        if placed is not None:
            dev, buf = placed
            return wrap_on(buf if dtype is None else buf.astype(dtype), dev)
    if dtype is None:
        t = type(a)
        if t in _PY:
            dtype = _dt.weak_dtype(a)
        elif STATE.prefer_float32 and not isinstance(a, (np.ndarray, np.generic)):
            probe = np.asarray(a)
            dtype = _dt.F32 if probe.dtype == _dt.F64 else (
                _dt.C64 if probe.dtype == _dt.C128 else None)
    if copy is False:
        try:
            buf = np.asarray(a, dtype, copy=False)
        except ValueError:
            raise _no_copy(a) from None
        dev = STATE.device
        if dev is not None and dev.backend.xp is not np:
            raise _no_copy(a)
    else:
        buf = np.array(a, dtype=dtype, copy=True if copy else None)
    if buf.dtype.kind in "OUSMmV" and buf.dtype != _dt.BFLOAT16:
        raise TypeError(f"ndflow arrays cannot hold dtype {buf.dtype} (from {type(a).__name__})")
    return _place(buf)


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """An ndflow array from `object`, as `numpy.array`: a copy by default (also of a NumPy or
    ndflow array); `copy=None` copies only when needed, `copy=False` never (ValueError).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.array([[1, 2], [3, 4]], dtype=tnp.float32)
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    >>> tnp.array(1.5, ndmin=2)
    array([[1.5]], dtype=float64)
    """
    out = asarray(object, dtype, copy=copy)
    if ndmin > out.ndim:
        out = bind(S.expand_dims_p, out, axes=tuple(range(ndmin - out.ndim)))
    return out


def copy(a, order="K", subok=False):
    """A copy of `a`, as `numpy.copy`; inside a device scope (`with nf.device("GPU:0")`) the copy is
    placed on that device, as TensorFlow's `tnp.copy`. Differentiable.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> a = tnp.arange(3)
    >>> b = tnp.copy(a)
    >>> b[0] = 7
    >>> a, b
    (array([0, 1, 2], dtype=int64), array([7, 1, 2], dtype=int64))
    """
    a = asarray(a)
    target = STATE.scope
    if a._t is None and target is not None:
        if D.device_of(a) is not target:
            return D.to_device(a, target)
    return bind(E.copy_p, a)


def common_dtype(arrays):
    """The arrays (as ndflow arrays) cast to the dtype they promote to, as NumPy's joins do."""
    arrs = [asarray(a) for a in arrays]
    d = _dt.result_type(*arrs)
    return [a if a.dtype == d else bind(E.convert_p, a, dtype=d) for a in arrs]


def stack_parts(arrays, axis):
    """(parts, axis): `stack(arrays, axis)` is the concatenation of `parts` along `axis`, the
    arrays in their common dtype, each with the new axis inserted (ValueError as NumPy's)."""
    arrs = common_dtype(list(arrays))
    if not arrs:
        raise ValueError("need at least one array to stack")
    shapes = {tuple(a.shape) for a in arrs}
    if len(shapes) > 1:
        raise ValueError("all input arrays must have the same shape")
    axis = norm_axis(axis, arrs[0].ndim + 1)
    return [bind(S.expand_dims_p, a, axes=(axis,)) for a in arrs], axis


def stacked(arrays):
    """`stack(arrays)` along a new first axis: a new array, as NumPy's, also of one array."""
    parts, _ = stack_parts(arrays, 0)
    return bind(concatenate_p, *parts, axis=0) if len(parts) > 1 else bind(E.copy_p, parts[0])


def _flat(seq):
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def as_operand(x):
    """ndarray or weak Python scalar (left as is) for dtype resolution."""
    if type(x) is ndarray or type(x) in _PY:
        return x
    return asarray(x)


def _lattice_types(ufunc, ops):
    # 'all'/'safe': pick the common dtype from the JAX lattice, then let NumPy choose the loop
    common = _dt.result_type(*ops)
    return tuple(common for _ in ops)


def ufunc_operands(ufunc, *ops):
    """Resolve NumPy's loop for `ufunc` on these operands and cast them to its input dtypes."""
    if STATE.promotion == "legacy":
        # Python bool is not weak in NEP 50 (resolve_dtypes rejects the type): it is np.bool_
        types = tuple((_dt.BOOL if type(o) is bool else type(o)) if type(o) in _PY else o.dtype
                      for o in ops)
    else:
        types = _lattice_types(ufunc, ops)
    if any(t == _dt.BFLOAT16 for t in types if isinstance(t, np.dtype)):
        common = _dt.result_type(*ops)
        ins = (common,) * len(ops)
    else:
        ins, _ = _dt.ufunc_loop(ufunc, types, STATE.promotion, STATE.prefer_float32)
    out = []
    for o, d in zip(ops, ins):
        if type(o) in _PY:
            out.append(_scalar(o, d))
        elif o.dtype != d:
            out.append(bind(E.convert_p, o, dtype=d))
        else:
            out.append(o)
    return out


def ufunc_apply(ufunc, prim, *ops):
    """What math.py's ufunc object for NumPy's `ufunc`, made of the primitive `prim`, computes
    for a plain call (no out=, where=, dtype=): `prim` on the operands cast to NumPy's loop
    dtypes. For the modules math.py is built on, which cannot call its ufunc objects."""
    return bind(prim, *ufunc_operands(ufunc, *ops))


def _scalar(v, dtype):
    if type(v) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= v <= info.max:
            raise OverflowError(f"Python integer {v} out of bounds for {dtype}")
    dev = STATE.device
    if dev is None or dev.backend.xp is np:
        return _wrap(np.asarray(v, dtype)) if dev is None else wrap_on(np.asarray(v, dtype), dev)
    return wrap_on(dev.backend.xp.asarray(v, dtype), dev)


def checked(x, bad, error, message):
    """`x`, with NumPy's `error(message)` raised where any element of `bad` is true: at once for
    concrete values, at every run of a compiled function (and per batch under vectorized_map)
    for traced ones. A value-dependent error of NumPy's must not be an eager-only check; the
    returned array must be used in place of `x` so the check stays in the graph."""
    x, bad = asarray(x), asarray(bad)
    if x._t is None and bad._t is None:
        if bool(np.any(bad.numpy())):
            raise error(message)
        return x
    return bind(runtime_error_p, x, bad, error=error_name(error), message=message)
