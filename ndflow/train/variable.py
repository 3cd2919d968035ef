"""`nf.Variable`: mutable state that tapes watch and `nf.function` reads and writes by reference."""
import inspect
import sys
import threading

import numpy as np

from ..core.ndarray import (ndarray, symbolic, _wrap, wrap_on, _new, WRAP_INLINE, TracingError,
                            _user_line)
from ..core.primitive import Primitive, Aval, bind
from ..core.state import STATE
from ..core import dtypes as _dt, tree
from ..core.variable import VariableBase
from .. import numpy as tnp
from ..numpy._interop import array_function
from ..compat import _tensor, _is_python_data


def _read_impl(var=None):
    return var._value._v


# generated code may write the read as this expression instead of calling it (graph/codegen)
_read_impl.ndflow_inline = "{var}._value._v"


read_var_p = Primitive("read_variable", _read_impl,
                       lambda var: Aval(var._value.shape, var._value.dtype), effect=True,
                       variable_access="read")


def _assign_impl(value, var=None):
    cur = var._value
    if value is cur._v:
        return value        # the update was written into the Variable's own buffer
    # a compiled step's write keeps the Variable on its device (logical CPUs share buffers'
    # type, so only the wrapper says where the value lives)
    d = cur._dev
    var._value = _wrap(value) if d is None else wrap_on(value, d)
    return value


# generated code may write the assignment as these statements (graph/codegen): a host value
# not already the Variable's gets a new wrapper as `_wrap` makes it (WRAP_INLINE), anything
# else calls the kernel
_assign_impl.ndflow_inline_stmt = (
    "{out} = {0}",
    # (a value written into the Variable's own buffer: nothing left to do, no call; the
    # wrapper read once: a Variable's attributes go through its __getattr__ hook, ~30 ns)
    "_w = {var}._value",
    "if _w._v is not {out}:",
    "    if _w._dev is None:",
    "        " + WRAP_INLINE.format(o="_aw", v="{out}").replace("{", "{{").replace("}", "}}")
    .replace("{{out}}", "{out}") + "; {var}._value = _aw",
    "    else:",
    "        {fn}({out}, var={var})",
    # (no reference of the step's own left on the wrapper: `_exclusive_buffer` counts them)
    "del _w")
_assign_impl.ndflow_inline_ns = {"_new": _new, "ndarray": ndarray}

assign_var_p = Primitive("assign_variable", _assign_impl,
                         lambda value, var: Aval(value.shape, value.dtype), effect=True,
                         variable_access="write", returns_view=True)


_getrefcount = sys.getrefcount
_FREE = None        # (refs to the value wrapper, refs to its buffer) when only the Variable holds them


def _calibrate():
    global _FREE
    v = Variable.__new__(Variable)
    v._value = _wrap(np.zeros(1))
    w = v._value
    b = w._v
    _FREE = (_getrefcount(w), _getrefcount(b))


def _errors_may_raise():
    """Whether NumPy's floating-point error state could raise in the middle of a computation
    ('raise' or 'call'), cheaply (`kernels.pool.errstate_flags`)."""
    global _errstate_flags
    if _errstate_flags is None:      # only compiled steps ask: the graph package is loaded
        from ..graph.kernels.pool import errstate_flags as _errstate_flags
    return _errstate_flags()[1]


_errstate_flags = None


def _graph_trace():
    for t in reversed(STATE.traces):
        if t.is_graph:
            return t
    return None


class _Creators(threading.local):
    def __init__(self):
        self.stack = []


# Variable creators, innermost last (TensorFlow's `variable_creator_scope`): a distribution
# strategy's scope pushes one so that `nf.Variable(...)` inside it makes a mirrored variable.
# Per thread: a strategy's replica threads push their own.
CREATORS = _Creators()


class _VariableMeta(type):
    def __call__(cls, *args, **kwargs):
        stack = CREATORS.stack
        if stack and cls is Variable:
            creator = stack.pop()
            try:        # the creator makes its component Variables without itself
                return creator(*args, **kwargs)
            finally:
                stack.append(creator)
        return super().__call__(*args, **kwargs)


class Variable(VariableBase, metaclass=_VariableMeta):
    """A mutable array, as `tf.Variable`: `assign`, `assign_add`, `assign_sub`, `read_value`.
    Operations on it use its current value; tapes watch trainable Variables they see read.

    Parameters
    ----------
    initial_value : array_like or callable
        The first value (a callable is called); Python data gets TensorFlow's dtypes (2.0 is
        float32). The Variable keeps a copy.
    trainable : bool, optional
        Whether tapes watch it automatically (default True).
    name : str, optional
        Its name; `v.name` is ``name + ":0"`` as in TensorFlow.
    dtype : dtype, optional
        Convert the initial value to it.
    shape : optional
        Accepted for TensorFlow compatibility; the shape is the initial value's.

    Examples
    --------
    >>> import ndflow as nf
    >>> v = nf.Variable([1., 2.])
    >>> v
    <nf.Variable 'Variable:0' shape=(2,) dtype=float32, numpy=array([1., 2.], dtype=float32)>
    >>> _ = v.assign_add([10., 10.])
    >>> v.numpy()
    array([11., 12.], dtype=float32)
    >>> with nf.GradientTape() as tape:
    ...     loss = nf.reduce_sum(v * v)
    >>> tape.gradient(loss, v)
    array([22., 24.], dtype=float32)
    """

    _counter = 0

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, shape=None):
        if callable(initial_value):
            initial_value = initial_value()
        # Python data: TF's dtypes (2.0 -> float32); a buffer of its own (never the NumPy array
        # it was made from)
        v = _tensor(initial_value, dtype=dtype, copy=True)
        if v._t is not None:
            # created while tracing from a value computed in the trace: lift that computation
            # out of the graph (as TF's init_scope), if it does not need the function's inputs
            lifted = v._t.lift(v) if getattr(v._t, "is_graph", False) else None
            if lifted is None:
                raise ValueError("a Variable's initial value must be concrete; create Variables "
                                 "outside nf.function, or inside it from values that do not "
                                 "depend on the function's arguments")
            v = tnp.copy(lifted)
        self._value = tnp.copy(v) if v is initial_value else v
        self.trainable = trainable
        Variable._counter += 1
        self._name = name or "Variable"
        self._unique = "%s:%d" % (self._name, Variable._counter)

    # what `help(nf.Variable)` and `inspect.signature` show: these parameters, not the
    # (*args, **kwargs) of the metaclass's creator hook
    __signature__ = inspect.Signature(list(inspect.signature(__init__).parameters.values())[1:])

    # ------------------------------------------------------------------ reading
    @property
    def name(self):
        return self._name + ":0"

    def _current(self):
        g = _graph_trace()
        if g is None:
            return self._value
        v = g.var_values.get(id(self))
        if v is None:
            v = bind(read_var_p, var=self)
            g.var_values[id(self)] = v
        return v

    def _read_for_tape(self):
        return self._current()

    def _ndflow_array_(self):
        val = self._current()
        if STATE.tapes:
            for t in STATE.tapes:
                t._on_variable_read(self)
        return val

    def value(self):
        return self._ndflow_array_()

    def read_value(self):
        return self._ndflow_array_()

    def numpy(self):
        """The current value as a NumPy array. Not inside `nf.function`: the value there is
        the one at each call, unknown while tracing (TensorFlow raises too)."""
        if _graph_trace() is not None:
            raise TracingError(
                f"Variable.numpy() inside nf.function (at {_user_line()}): the value is read at "
                f"each call and is not known while tracing; use the Variable (or "
                f"v.read_value()) as an array, or nf.numpy_function for NumPy code")
        return self._value.numpy()

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def device(self):
        return self._value.device

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.numpy(), dtype=dtype)

    def __repr__(self):
        return "<nf.Variable '%s' shape=%s dtype=%s, numpy=%r>" % (
            self.name, tuple(self.shape), self.dtype.name, self._value.numpy())

    def _exclusive_buffer(self):
        """(value buffer, the same buffer or None): the buffer again when a compiled step may
        write this Variable's next value into it (graph/memory.py, `reuse_buffers`): a whole,
        writeable, C-contiguous NumPy array that nothing but this Variable refers to. Eager
        code never writes a Variable's buffer (`assign` binds a new value), so an array taken
        from it earlier (`v.numpy()`, `v.value()`, a view, a tape's record, another Variable
        assigned from it) keeps its values; each of those holds a reference, which the
        reference counts here see. Not while NumPy's error state may raise: an error in the
        middle of the update would leave the Variable half written."""
        w = self._value
        b = w._v
        if _FREE is None:
            _calibrate()
        if type(b) is np.ndarray and _getrefcount(w) == _FREE[0] and \
                _getrefcount(b) == _FREE[1] and b.base is None and b.flags.writeable and \
                b.flags.c_contiguous and not _errors_may_raise():
            return b, b
        return b, None

    # ------------------------------------------------------------------ writing
    def assign(self, value, use_locking=False, name=None, read_value=True):
        """Give the Variable a new value of its shape and dtype, as `tf.Variable.assign`.
        The dtype is never changed silently, following TensorFlow's conversion rules (see
        `_convert`): an ndflow array (or Variable) must have the Variable's dtype exactly
        (ValueError, as TensorFlow's for a tensor); Python and NumPy values are converted
        when their kind fits (integers into integer, floating or complex Variables, floats
        into floating or complex ones; a Python bool into a number), and anything else is a
        TypeError naming both dtypes (a float into an integer Variable, a complex into a real
        one). A value the Variable's dtype cannot hold is a ValueError (1e300 into float32,
        300 into int8) rather than inf or a wrapped integer. Rounding is not an error
        (a float64 NumPy array into a float32 Variable rounds, as in TensorFlow).

        >>> import ndflow as nf
        >>> v = nf.Variable(1.0)                 # float32, as TensorFlow
        >>> float(v.assign(2).numpy())
        2.0
        >>> nf.Variable(1).assign(2.5)
        Traceback (most recent call last):
        ...
        TypeError: Variable 'Variable:0' (int32): cannot assign a Python float, 2.5; convert it to int32 explicitly
        """
        v = _convert(self, value)
        if tuple(v.shape) != tuple(self.shape) and None not in v.shape:
            raise ValueError(f"Cannot assign value of shape {tuple(v.shape)} to a Variable of "
                             f"shape {tuple(self.shape)}")
        g = _graph_trace()
        if g is not None:
            bind(assign_var_p, v, var=self)
            g.var_values[id(self)] = v
        elif v._t is not None:
            raise ValueError("cannot assign a batched/symbolic value to a Variable outside "
                             "nf.function")
        else:
            self._value = tnp.copy(v) if v is value else v
        return self if read_value else None

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        """`assign(value + delta)`; `delta` follows `assign`'s dtype rules (TensorFlow
        converts it to the Variable's dtype first)."""
        return self.assign(self.value() + _convert(self, delta), read_value=read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        """`assign(value - delta)`; `delta` follows `assign`'s dtype rules."""
        return self.assign(self.value() - _convert(self, delta), read_value=read_value)

    # ------------------------------------------------------------------ array behaviour
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value(), name)

    def __getitem__(self, k):
        return self.value()[k]

    def __len__(self):
        return len(self._value)

    def __bool__(self):
        return bool(self.value())

    def __float__(self):
        return float(self.value())

    def __int__(self):
        return int(self.value())

    __hash__ = object.__hash__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [i.value() if isinstance(i, Variable) else i for i in inputs]
        return self.value().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        # np.sum(v), np.linalg.norm(v): ndflow's function on the Variable's value (a read the
        # tape sees), not NumPy's on a host copy that would drop the gradient
        read = lambda x: x.value() if isinstance(x, Variable) else x  # noqa: E731
        return array_function(func, tree.map_structure(read, list(args)),
                              {k: tree.map_structure(read, v) for k, v in kwargs.items()})

    __array_priority__ = 200


# ------------------------------------------------------------------ assign's dtype rules
def _kind(d):
    """'b', 'i' (signed or unsigned), 'f' (bfloat16 too), 'c', or None."""
    if d.kind in "iu":
        return "i"
    if _dt.is_float(d):
        return "f"
    return d.kind if d.kind in "bc" else None


# the value kinds each Variable kind accepts (TensorFlow's `IsCompatible`); Python data
# differs in one place: a Python bool is an int (TensorFlow converts True into numbers)
_FITS = {"b": "b", "i": "i", "f": "if", "c": "ifc"}


def _lost(src, dst, kind):
    """Whether casting `src` to `dst` lost a value class: a finite number that became
    infinite, or an integer out of the Variable's range."""
    if kind == "i":
        info = np.iinfo(dst.dtype)
        return src.size and (src.min() < info.min or src.max() > info.max)
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.any(np.isfinite(src) & ~np.isfinite(dst)))


def _convert(var, value):
    """`value` as an ndarray of `var`'s dtype, by `Variable.assign`'s rules."""
    target = var.dtype
    if isinstance(value, Variable):
        value = value.value()
    if isinstance(value, ndarray):
        if value.dtype != target:
            raise ValueError(f"Variable {var.name!r} ({target.name}): cannot assign an array "
                             f"of dtype {value.dtype.name}; convert it first "
                             f"(nf.cast(value, '{target.name}') or value.astype(...))")
        return value
    python = _is_python_data(value)
    try:
        src = np.asarray(value)
        if src.dtype == object and python:
            src = np.asarray(value, dtype=np.float64 if _kind(target) in "fc" else np.int64)
    except (OverflowError, ValueError):
        raise ValueError(f"Variable {var.name!r} ({target.name}): {value!r:.60} is out of "
                         f"its range") from None
    what = f"a Python {type(value).__name__}" if python else f"a NumPy {src.dtype.name} value"
    kind, want = _kind(src.dtype), _kind(target)
    if python and kind == "b" and want != "b":
        kind = "i"
    if kind is None or want is None or kind not in _FITS[want]:
        raise TypeError(f"Variable {var.name!r} ({target.name}): cannot assign {what}, "
                        f"{value!r:.60}; convert it to {target.name} explicitly")
    if src.dtype == target:
        return tnp.asarray(src)
    with np.errstate(invalid="ignore", over="ignore"):
        dst = src.astype(target)
    if _lost(src, dst, want):
        raise ValueError(f"Variable {var.name!r} ({target.name}): {what} out of its range, "
                         f"{value!r:.60} (it would become "
                         f"{'infinite' if want != 'i' else 'another integer'})")
    return tnp.asarray(dst)


def _forward(name):
    def op(self, *args):
        return getattr(self.value(), name)(*[a.value() if isinstance(a, Variable) else a for a in args])
    op.__name__ = name
    return op


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
           "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
           "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__pos__", "__abs__", "__lt__",
           "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__and__", "__or__", "__xor__",
           "__invert__"):
    setattr(Variable, _n, _forward(_n))
