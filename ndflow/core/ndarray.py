"""`ndflow.numpy.ndarray`: one class for eager, symbolic (traced) and batched arrays.

Fields (slots):
  _v    eager: the backend buffer (numpy/cupy array or numpy scalar); traced: the graph `Var`;
        batched: the value one interpreter level down
  _t    None for eager arrays, else the interpreter (trace) that owns the value
  _dev  None for eager arrays on the default device; the Device otherwise (and for non-eager
        values a non-None marker), so the eager door's plain route checks one field
  _tid  identity of the *value* for tapes (0 until a tape sees it); a mutated array gets a new one
  _aux  batched: the batch axis of `_v`

An eager array is built by `_wrap` alone (and its statement form WRAP_INLINE, for generated
code). The operators are entries of the eager door (core/dispatch.py).
"""
import builtins
import itertools
import operator

import numpy as np

from . import mutation as _mut
from . import dispatch as _door
from .errors import user_line as _user_line
from .errors import TracingError, SpecializationError  # noqa: F401  (the package imports them from here too)

_tnp = None       # ndflow.numpy, set when it is imported (methods are NumPy-layer calls)
_new = object.__new__
_tid_counter = itertools.count(1)
SYMBOLIC = "<symbolic>"


def static_size(x):
    """The number of elements of the array `x` known while tracing: an int, or None where a
    size is unknown (inside `nf.function`; `x.size` is then the run-time value)."""
    n = 1
    for d in x.shape:
        if d is None:
            return None
        n *= d
    return n


def _wrap(buf, dev=None):
    """The one constructor of an eager array: `buf` (a NumPy or CuPy array or NumPy scalar) on
    `dev` (None: the default device, which the eager door's plain route checks for)."""
    o = _new(ndarray)
    o._v = buf
    o._t = None
    o._dev = dev
    o._tid = 0
    return o


wrap_on = _wrap       # (the name the device code reads better with: wrap_on(buf, device))

# `_wrap(buf)` as a statement, for generated code that makes its results inline (graph/
# function.py's call entries: a call to _wrap costs about as much as the wrapping itself). Needs
# `_new` and `ndarray` in the code's namespace; kept beside _wrap so the two cannot drift
# (tests/test_call_path.py compares them field by field).
WRAP_INLINE = "{o} = _new(ndarray); {o}._v = {v}; {o}._t = None; {o}._dev = None; {o}._tid = 0"

# Hooks that higher layers fill in when they are imported (layers point one way:
# docs/architecture.md): an array's device (backends/device.py) and NumPy's protocols
# (numpy/_interop.py). `import ndflow` imports both before any array exists.
_device_of = None
_array_ufunc = None
_array_function = None


def symbolic(trace, value, aux=None):
    o = _new(ndarray)
    o._v = value
    o._t = trace
    o._dev = SYMBOLIC
    o._tid = 0
    o._aux = aux
    return o


def new_tid():
    return next(_tid_counter)


def _power_as_unary(self, other):
    """NumPy's `a ** k` on a float or complex array with an exact Python int -1 or 2, or float
    0.5, runs reciprocal, square or sqrt instead of power (its operator's "fast scalar power");
    their values differ from power's at special inputs (complex infinities, float16 -0.0), so
    the operator follows it on every path. `tnp.power` stays power, as `np.power` does."""
    t = type(other)
    if t is int:
        unary = "reciprocal" if other == -1 else "square" if other == 2 else None
    elif t is float:
        unary = "sqrt" if other == 0.5 else None
    else:
        return None
    # bfloat16 (kind 'V') is not one of NumPy's float types there; a bool array squares too
    # (to int8, where power gives int64)
    kinds = "fcb" if unary == "square" else "fc"
    return unary if unary is not None and self.dtype.kind in kinds else None


def _power_op(generic):
    def __pow__(self, other, mod=None):
        if mod is not None:
            return NotImplemented
        unary = _power_as_unary(self, other)
        if unary is not None:
            return getattr(_tnp, unary)(self)
        return generic(self, other)
    return __pow__


def _check_inplace_cast(np_fn, self, other):
    # the result dtype from NumPy itself, on empty stand-ins (Python scalars stay weak)
    o = other
    if isinstance(other, ndarray) or hasattr(other, "dtype"):
        o = np.empty(0, dtype=other.dtype)
    elif not isinstance(other, (bool, int, float, complex)):
        return
    try:
        rt = np_fn(np.empty(0, dtype=self.dtype), o).dtype
    except Exception:
        return                      # the operation itself raises below, with its own error
    _refuse_cast(np_fn.__name__, rt, self.dtype)


def _refuse_cast(name, dtype, into):
    """NumPy's error for an in-place result that may not be cast back ('same_kind')."""
    if dtype != into and not np.can_cast(dtype, into, casting="same_kind"):
        raise TypeError(f"Cannot cast ufunc {name!r} output from {dtype!r} to {into!r} with "
                        f"casting rule 'same_kind'")


def _inplace(name):
    """`a op= b`, instantiated from the eager door: NumPy's in-place operator on a's buffer, or
    the mutation model's functional update (under tapes and traces)."""
    np_fn = getattr(np, name)
    power = name == "power"

    def general(self, other):
        unary = _power_as_unary(self, other) if power else None
        # a traced write into an eager array happens at every call: it becomes a graph value
        # before the operation reads it (core/mutation.py)
        _mut.begin(self)
        if unary is None:
            # NumPy refuses the cast of the result into `self` before it computes anything
            # (so `bool_array **= -1` is a casting error, not the negative-power error)
            _check_inplace_cast(np_fn, self, other)
        res = getattr(_tnp, unary)(self) if unary is not None else getattr(_tnp, name)(self, other)
        if res.dtype != self.dtype:
            # (the check before computing could not tell for this operand type)
            _refuse_cast(name, res.dtype, self.dtype)
            res = res.astype(self.dtype)
        if res.shape != self.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't "
                             f"match the broadcast shape {res.shape}")
        _mut.assign(self, (res,), lambda: res)
        return self
    op = _door.inplace_operator(_ipow_kernel if power else np_fn, general)
    op.__name__ = "__i%s__" % name
    return op


def _ipow_kernel(v, o, out):
    """`v **= o` on a buffer, with the operator's unary cases (`_power_as_unary`)."""
    unary = _power_as_unary(v, o)
    if unary is not None:
        return getattr(np, unary)(v, out=out)
    return np.power(v, o, out=out)


class _FlatIter:
    """`ndarray.flat`: the array seen as 1-d, by C order."""
    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __iter__(self):
        return iter(_tnp.ravel(self.base))

    def __len__(self):
        n = static_size(self.base)
        if n is None:
            raise TracingError(f"len() of the flat view of an array whose size is unknown while "
                               f"tracing (at {_user_line()}); use tnp.size(x)")
        return n

    def __getitem__(self, key):
        return _tnp.ravel(self.base)[key]

    def __setitem__(self, key, value):
        idx = _tnp.arange(self.base.size)[key]
        _tnp.put(self.base, idx, value)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(_tnp.ravel(self.base).numpy(), dtype=dtype)

    def copy(self):
        return _tnp.copy(_tnp.ravel(self.base))


class TensorShape(tuple):
    """A static shape as `get_shape()` gives it (TensorFlow's name): a tuple whose unknown sizes
    (inside `nf.function`) are None, with `as_list()`."""
    __slots__ = ()

    def as_list(self):
        return list(self)

    @property
    def rank(self):
        return len(self)

    ndims = rank

    def is_fully_defined(self):
        return None not in self

    def __repr__(self):
        return "TensorShape(%s)" % list(self)


class ndarray:
    """An n-dimensional array on a device: eager, symbolic inside `nf.function`, or batched
    inside `nf.vectorized_map`. NumPy's semantics; `.numpy()` gives the NumPy array (zero-copy on
    CPU).

    Made by `ndflow.numpy` functions (`tnp.asarray`, `tnp.zeros` ...), never by calling the class
    as NumPy users rarely do. It has NumPy's attributes and methods (`shape`, `dtype`, `T`,
    `sum`, `reshape`, indexing, assignment into elements, operators) and TensorFlow's
    (`numpy()`, `device`). Reductions give 0-d arrays where NumPy gives scalars; `float(x)`,
    `int(x)` and `x.item()` give Python numbers. NumPy functions accept it (`np.sum(x)` runs
    ndflow's, staying differentiable), and `np.asarray(x)` gives its values.

    Examples
    --------
    >>> import numpy as np, ndflow.numpy as tnp
    >>> x = tnp.asarray([[1, 2], [3, 4]])
    >>> x.shape, x.dtype
    ((2, 2), dtype('int64'))
    >>> x.T @ x
    array([[10, 14],
           [14, 20]], dtype=int64)
    >>> x[0, 1] = 7
    >>> x.sum(axis=0), float(x.max())
    (array([ 4, 11], dtype=int64), 7.0)
    >>> type(x.numpy()), np.sum(x)
    (<class 'numpy.ndarray'>, array(15, dtype=int64))
    """
    __slots__ = ("_v", "_t", "_dev", "_tid", "_aux", "__weakref__")
    __array_priority__ = 100.0

    def __new__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        return _wrap(np.ndarray(shape, dtype, buffer, offset, strides, order))

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self):
        t = self._t
        return self._v.shape if t is None else t.shape_of(self)

    @property
    def dtype(self):
        return self._v.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        """The number of elements: an int; inside `nf.function`, where a size is unknown while
        tracing (None in `.shape`), its run-time value, a 0-d int64 array (as `tnp.size`).
        Library code that needs what is known while tracing uses `static_size(x)`."""
        n = static_size(self)
        return n if n is not None else _tnp.size(self)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def device(self):
        return _device_of(self).name

    def get_shape(self):
        """The static shape as a `TensorShape` (None = unknown while tracing), as TF's."""
        return TensorShape(self.shape)

    def set_shape(self, shape):
        """Refine the static shape, as TF's `set_shape`: known sizes must agree (ValueError);
        inside `nf.function` unknown sizes take the given ones (checked when the graph runs)."""
        shape = tuple(None if d is None else operator.index(d) for d in shape)
        cur = tuple(self.shape)
        if len(shape) != len(cur) or any(a is not None and b is not None and a != b
                                         for a, b in zip(cur, shape)):
            raise ValueError(f"Shape {cur} is not compatible with the shape {shape} given to "
                             f"set_shape")
        new = tuple(a if b is None else b for a, b in zip(cur, shape))
        # a reshape to the refined shape carries it (reshape takes at most one unknown, -1)
        if new != cur and new.count(None) <= 1:
            self._rebind(_tnp.reshape(self, tuple(-1 if d is None else d for d in new)))

    @property
    def T(self):
        return _tnp.transpose(self)

    @property
    def mT(self):
        return _tnp.swapaxes(self, -1, -2)

    @property
    def real(self):
        return _tnp.real(self)

    @real.setter
    def real(self, value):
        _tnp._set_part(self, "real", value)

    @property
    def imag(self):
        return _tnp.imag(self)

    @imag.setter
    def imag(self, value):
        _tnp._set_part(self, "imag", value)

    @property
    def flat(self):
        """A flat view: iterate, index (x.flat[i]) and assign (x.flat[i] = v, as `put`)."""
        return _FlatIter(self)

    # ------------------------------------------------------------------ conversions
    def _concrete(self, what):
        if self._t is not None:
            raise TracingError(
                f"{what} of a symbolic array {self._short()} is not known while tracing "
                f"(at {_user_line()}). Python control flow cannot depend on traced values: write "
                f"`if` as nf.cond(pred, true_fn, false_fn) (or nf.switch_case), `while` as "
                f"nf.while_loop(cond, body, loop_vars) (or nf.fori_loop, nf.scan), choose "
                f"elementwise with tnp.where, or pass the value as a Python constant (it then "
                f"becomes part of the trace's cache key).")
        return self._v

    def _short(self):
        return "(shape=%s, dtype=%s)" % (self.shape, self.dtype.name)

    def numpy(self):
        """The value as a NumPy array (zero-copy on CPU)."""
        v = self._concrete("the value")
        if isinstance(v, np.ndarray):
            return v
        if isinstance(v, np.generic):
            return np.asarray(v)
        return v.get()  # device buffer (CuPy)

    def __array__(self, dtype=None, copy=None):
        v = self.numpy()
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def __bool__(self):
        return bool(self._concrete("the truth value"))

    def __int__(self):
        return int(self._concrete("int()"))

    def __float__(self):
        return float(self._concrete("float()"))

    def __complex__(self):
        return complex(self._concrete("complex()"))

    def __index__(self):
        return operator.index(self._concrete("an index"))

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of unsized object")
        if s[0] is None:
            raise TracingError(f"len() of an array whose first dimension is unknown while "
                               f"tracing (at {_user_line()}); use nf.shape(x)[0]")
        return s[0]

    def __iter__(self):
        s = self.shape
        if not s:
            raise TypeError("iteration over a 0-d array")
        if s[0] is None:
            raise TracingError(f"cannot iterate over an array whose first dimension is unknown "
                               f"while tracing (at {_user_line()}); use nf.map_fn or nf.vectorized_map")
        return (self[i] for i in range(s[0]))

    def item(self, *args):
        return self.numpy().item(*args)

    def tolist(self):
        return self.numpy().tolist()

    def __repr__(self):
        if self._t is not None:
            return "<ndflow.ndarray %s shape=%s dtype=%s>" % (
                self._t.kind, self.shape, self.dtype.name)
        r = np.array_repr(self.numpy())
        dev = self.device
        suffix = "device=%r" % dev.split("/")[-1] if "CPU:0" not in dev else ""
        if "dtype=" not in r:
            r = r[:-1] + ", dtype=%s)" % self.dtype.name
        if suffix:
            r = r[:-1] + ", " + suffix + ")"
        return r

    def __str__(self):
        if self._t is not None:
            return repr(self)
        return str(self.numpy())

    def __format__(self, spec):
        if self._t is None and self.ndim == 0:
            return format(self.numpy().item(), spec)
        return format(str(self), spec)

    __hash__ = None

    def __reduce__(self):
        return (_tnp.asarray, (self.numpy(),))

    def __copy__(self):
        return _tnp.copy(self)

    def __deepcopy__(self, memo):
        return _tnp.copy(self)

    # ------------------------------------------------------------------ protocols
    def __array_namespace__(self, api_version=None):
        if api_version is not None and api_version not in _tnp.array_api.SUPPORTED_VERSIONS:
            raise ValueError(f"Unrecognized array API version {api_version!r}; ndflow.numpy "
                             f"supports " + ", ".join(_tnp.array_api.SUPPORTED_VERSIONS))
        return _tnp

    def to_device(self, device, /, *, stream=None):
        """This array on `device` (itself when already there), as the Array API's."""
        return _tnp.array_api.to_device(self, device, stream=stream)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array's buffer (the standard's keywords, passed on to the
        buffer's own exporter)."""
        v = self._concrete("dlpack export")
        if isinstance(v, np.generic):
            v = np.asarray(v)
        kw = {"stream": stream}
        for k, val in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy)):
            if val is not None:
                kw[k] = val
        return v.__dlpack__(**kw)

    def __dlpack_device__(self):
        v = self._concrete("dlpack export")
        if isinstance(v, np.generic):
            v = np.asarray(v)
        return v.__dlpack_device__()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _array_function(func, args, kwargs)

    # ------------------------------------------------------------------ mutation
    def _rebind(self, other):
        """Make this array object hold `other`'s value (a traced write: a new value, same
        object). Tapes keep their own handles on the values they recorded, so they are not
        affected; eager writes go through `core.mutation.assign` (in place, as NumPy)."""
        self._v = other._v
        self._t = other._t
        self._dev = other._dev
        self._tid = other._tid
        if other._t is not None:
            self._aux = getattr(other, "_aux", None)

    def __setitem__(self, key, value):
        _tnp._setitem(self, key, value)

    def __getitem__(self, key):
        return _tnp._getitem(self, key)

    # ------------------------------------------------------------------ methods (NumPy layer)
    # Each computing method is the NumPy-layer function of the same name; the in-place ones
    # (sort, partition, put, fill, resize) write through item assignment, so eagerly they
    # change the buffer (views see it) and under a tape or trace they rebind the array.
    def reshape(self, *shape, order="C", copy=None):
        if not shape:       # (NumPy's error; an empty tuple is the 0-d shape)
            raise TypeError("reshape() takes exactly 1 argument (0 given)")
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _tnp.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = axes[0]
        return _tnp.transpose(self, axes or None)

    def ravel(self, order="C"):
        return _tnp.ravel(self, order)

    def flatten(self, order="C"):
        return _tnp.copy(_tnp.ravel(self, order))

    def squeeze(self, axis=None):
        return _tnp.squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        return _tnp.swapaxes(self, axis1, axis2)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {np.dtype(dtype)!r} "
                            f"according to the rule {casting!r}")
        return _tnp._astype(self, dtype, copy)

    def copy(self, order="C"):
        return _tnp.copy(self)

    def view(self, dtype=None, type=None):
        """As NumPy's: with a dtype, a view of the same bytes (another itemsize resizes the last
        axis); writes reach this array on every path. No derivative, as `tf.bitcast`."""
        plain = dtype is None or (isinstance(dtype, builtins.type) and issubclass(dtype, ndarray))
        return self if plain else _tnp._view(self, dtype)

    def fill(self, value):
        self[...] = value

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return _tnp.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                        initial=initial, where=where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
        return _tnp.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return _tnp.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                         initial=initial, where=where)

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _tnp.max(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _tnp.min(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _tnp.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _tnp.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=False, *, where=None):
        return _tnp.any(self, axis=axis, out=out, keepdims=keepdims, where=where)

    def all(self, axis=None, out=None, keepdims=False, *, where=None):
        return _tnp.all(self, axis=axis, out=out, keepdims=keepdims, where=where)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
            mean=None, correction=None):
        return _tnp.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                        where=where, mean=mean, correction=correction)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
            mean=None, correction=None):
        return _tnp.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                        where=where, mean=mean, correction=correction)

    def clip(self, min=None, max=None, out=None, **kwargs):
        return _tnp.clip(self, min=min, max=max, out=out, **kwargs)

    def dot(self, b, out=None):
        return _tnp.dot(self, b, out=out)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return _tnp.take(self, indices, axis=axis, out=out, mode=None if mode == "raise" else mode)

    def conj(self):
        # NumPy's method gives a real array itself (np.conj, a ufunc, gives a new one)
        return self if self.dtype.kind != "c" else _tnp.conjugate(self)

    conjugate = conj

    def round(self, decimals=0, out=None):
        return _tnp.round(self, decimals, out=out)

    def cumsum(self, axis=None, dtype=None, out=None):
        return _tnp.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return _tnp.cumprod(self, axis=axis, dtype=dtype, out=out)

    def nonzero(self):
        return _tnp.nonzero(self)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        self[...] = _tnp.sort(self, axis=axis, kind=kind, order=order, stable=stable)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return _tnp.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        self[...] = _tnp.partition(self, kth, axis=axis, kind=kind, order=order)

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        return _tnp.argpartition(self, kth, axis=axis, kind=kind, order=order)

    def searchsorted(self, v, side="left", sorter=None):
        return _tnp.searchsorted(self, v, side=side, sorter=sorter)

    def repeat(self, repeats, axis=None):
        return _tnp.repeat(self, repeats, axis=axis)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return _tnp.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return _tnp.trace(self, offset, axis1, axis2, dtype, out)

    def choose(self, choices, out=None, mode="raise"):
        return _tnp.choose(self, choices, out=out, mode=mode)

    def compress(self, condition, axis=None, out=None):
        return _tnp.compress(condition, self, axis=axis, out=out)

    def put(self, indices, values, mode="raise"):
        _tnp.put(self, indices, values, mode=mode)

    def resize(self, *new_shape, refcheck=True):
        """In place, as `ndarray.resize`: the flat data is cut or extended with zeros (unlike
        `numpy.resize`, which repeats it). The array is rebound to the new shape."""
        if len(new_shape) == 1 and not isinstance(new_shape[0], int):
            new_shape = new_shape[0]
        shape = tuple(operator.index(d) for d in new_shape)
        if any(d < 0 for d in shape):
            raise ValueError("negative dimensions not allowed")
        n = 1
        for d in shape:
            n *= d
        flat = _tnp.ravel(self)
        size = flat.shape[0]
        if size is None:
            raise ValueError("resize: the array's size is unknown while tracing")
        if n > size:
            flat = _tnp.concatenate([flat, _tnp.zeros(n - size, self.dtype)])
        elif n < size:
            flat = flat[:n]
        self._rebind(_tnp.reshape(flat, shape))

    # -- host-side: buffers, bytes, flags (concrete arrays only)
    @property
    def base(self):
        """None: an ndflow array owns its value (NumPy's views report their base)."""
        return None

    @property
    def strides(self):
        return self.numpy().strides

    @property
    def flags(self):
        return self.numpy().flags

    @property
    def data(self):
        return self.numpy().data

    @property
    def ctypes(self):
        return self.numpy().ctypes

    def setflags(self, write=None, align=None, uic=None):
        """Sets the flags of the host buffer (write=False makes item assignment fail, as in
        NumPy)."""
        self.numpy().setflags(write=write, align=align, uic=uic)

    def tobytes(self, order="C"):
        return self.numpy().tobytes(order)

    def tofile(self, fid, sep="", format="%s"):
        self.numpy().tofile(fid, sep=sep, format=format)

    def dumps(self):
        import pickle
        return pickle.dumps(self, protocol=2)

    def dump(self, file):
        import pickle
        import os
        if isinstance(file, (str, os.PathLike)):
            with open(file, "wb") as f:
                pickle.dump(self, f, protocol=2)
        else:
            pickle.dump(self, file, protocol=2)

    def byteswap(self, inplace=False):
        """The bytes of each element swapped (on the host; no gradient)."""
        if inplace:
            v = self.numpy()
            v.byteswap(inplace=True)
            return self
        return _tnp.asarray(self.numpy().byteswap())

    def getfield(self, dtype, offset=0):
        """A field of the elements reinterpreted as `dtype` (on the host; no gradient)."""
        return _tnp.asarray(self.numpy().getfield(dtype, offset))

    def setfield(self, val, dtype, offset=0):
        """Write into a field of the elements (on the host buffer)."""
        v = val.numpy() if isinstance(val, ndarray) else val
        self.numpy().setfield(v, dtype, offset)

    # ------------------------------------------------------------------ operators
    # instantiated from the eager door (core/dispatch.py): NumPy's operator on the buffers when
    # plain, else the NumPy layer's ufunc of that name
    __add__ = _door.binary_operator(np.add, "add")
    __radd__ = _door.binary_operator(np.add, "add", reflected=True)
    __sub__ = _door.binary_operator(np.subtract, "subtract")
    __rsub__ = _door.binary_operator(np.subtract, "subtract", reflected=True)
    __mul__ = _door.binary_operator(np.multiply, "multiply")
    __rmul__ = _door.binary_operator(np.multiply, "multiply", reflected=True)
    __truediv__ = _door.binary_operator(np.true_divide, "true_divide")
    __rtruediv__ = _door.binary_operator(np.true_divide, "true_divide", reflected=True)
    __floordiv__ = _door.binary_operator(np.floor_divide, "floor_divide")
    __rfloordiv__ = _door.binary_operator(np.floor_divide, "floor_divide", reflected=True)
    __mod__ = _door.binary_operator(np.remainder, "remainder")
    __rmod__ = _door.binary_operator(np.remainder, "remainder", reflected=True)
    __pow__ = _power_op(_door.binary_operator(np.power, "power"))
    __rpow__ = _door.binary_operator(np.power, "power", reflected=True)
    __matmul__ = _door.binary_operator(np.matmul, "matmul")
    __rmatmul__ = _door.binary_operator(np.matmul, "matmul", reflected=True)
    __and__ = _door.binary_operator(np.bitwise_and, "bitwise_and")
    __rand__ = _door.binary_operator(np.bitwise_and, "bitwise_and", reflected=True)
    __or__ = _door.binary_operator(np.bitwise_or, "bitwise_or")
    __ror__ = _door.binary_operator(np.bitwise_or, "bitwise_or", reflected=True)
    __xor__ = _door.binary_operator(np.bitwise_xor, "bitwise_xor")
    __rxor__ = _door.binary_operator(np.bitwise_xor, "bitwise_xor", reflected=True)
    __lshift__ = _door.binary_operator(np.left_shift, "left_shift")
    __rlshift__ = _door.binary_operator(np.left_shift, "left_shift", reflected=True)
    __rshift__ = _door.binary_operator(np.right_shift, "right_shift")
    __rrshift__ = _door.binary_operator(np.right_shift, "right_shift", reflected=True)
    __lt__ = _door.binary_operator(np.less, "less")
    __le__ = _door.binary_operator(np.less_equal, "less_equal")
    __gt__ = _door.binary_operator(np.greater, "greater")
    __ge__ = _door.binary_operator(np.greater_equal, "greater_equal")
    __eq__ = _door.binary_operator(np.equal, "equal")
    __ne__ = _door.binary_operator(np.not_equal, "not_equal")

    def __divmod__(self, other):
        return _tnp.divmod(self, other)

    def __rdivmod__(self, other):
        return _tnp.divmod(other, self)

    __neg__ = _door.unary_operator(np.negative, "negative")
    __pos__ = _door.unary_operator(np.positive, "positive")
    __abs__ = _door.unary_operator(np.absolute, "absolute")
    __invert__ = _door.unary_operator(np.invert, "invert")

    __iadd__ = _inplace("add")
    __isub__ = _inplace("subtract")
    __imul__ = _inplace("multiply")
    __itruediv__ = _inplace("true_divide")
    __ifloordiv__ = _inplace("floor_divide")
    __imod__ = _inplace("remainder")
    __ipow__ = _inplace("power")
    __imatmul__ = _inplace("matmul")
    __iand__ = _inplace("bitwise_and")
    __ior__ = _inplace("bitwise_or")
    __ixor__ = _inplace("bitwise_xor")
    __ilshift__ = _inplace("left_shift")
    __irshift__ = _inplace("right_shift")


_mut._ndarray = ndarray
_mut._new_tid = new_tid
_mut._symbolic = symbolic
_door._ndarray = ndarray
_door._wrap = _wrap
