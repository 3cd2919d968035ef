"""TensorFlow-style names (`nf.constant`, `nf.reduce_sum`, `nf.reshape`, ...) over ndflow.numpy.

Each function here is a thin composition of NumPy-layer functions, so everything stays
differentiable, traceable and vectorizable; there are no kernels and no gradient rules. The
semantics are TensorFlow's where TF's signature differs from NumPy's (`nf.constant([1, 2])` is
int32 and `nf.ones` is float32 as in TF, `reduce_*` keep the input dtype, `argmax` defaults to
axis 0), and NumPy's otherwise (type promotion, broadcasting).
"""
import functools
import operator

import numpy as np

from . import numpy as tnp
from .core.ndarray import ndarray, static_size as _static_size
from .core.state import STATE
from .core import dtypes as _dt

_builtin_range = range

__all__ = [
    "constant", "convert_to_tensor", "cast", "reduce_sum", "reduce_mean", "reduce_max",
    "reduce_min", "reduce_prod", "reduce_any", "reduce_all", "matmul", "reshape", "transpose",
    "concat", "stack", "unstack", "tile", "square", "squeeze", "expand_dims", "argmax", "argmin",
    "ones", "zeros", "ones_like", "zeros_like", "fill", "range", "identity", "py_function",
    "add_n", "abs", "exp", "log", "sqrt", "maximum", "minimum", "where", "clip_by_value",
    "one_hot", "size", "rank",
]


def _dtype(dtype):
    return None if dtype is None else _dt.canonical(dtype)


def _tf_dtype_of_python(value):
    """TensorFlow's dtype for Python data: ints int32 (int64 when they do not fit), floats
    float32, complex complex128, bools bool."""
    probe = np.asarray(value)
    k = probe.dtype.kind
    if k == "i" or k == "u":
        i32 = np.iinfo(np.int32)
        if probe.size and (probe.min() < i32.min or probe.max() > i32.max):
            return _dt.I64
        return np.dtype(np.int32)
    if k == "f":
        return _dt.F32
    if k == "c":
        return _dt.C128
    return probe.dtype


def _is_python_data(value):
    if type(value) in (bool, int, float, complex):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_python_data(v) for v in value)
    return False


def _tensor(value, dtype=None, copy=None):
    """`value` as an ndarray: arrays and Variables keep their dtype; Python data gets TF's.
    `copy=True`: never the buffer of `value` (of a NumPy array, an ndarray or a Variable)."""
    if type(value) is ndarray and dtype is None and not copy:
        return value
    if dtype is None and _is_python_data(value):
        dtype = _tf_dtype_of_python(value)
        copy = None         # a new array anyway
    return tnp.asarray(value, dtype=dtype, copy=copy)


def constant(value, dtype=None, shape=None, name=None):
    """A constant array, as `tf.constant`: Python ints become int32 (int64 if too large),
    Python floats float32; NumPy and ndflow arrays keep their dtype unless `dtype` is given.
    With `shape`, a scalar is broadcast (filled) and other values are reshaped.

    >>> import ndflow as nf
    >>> nf.constant([1, 2])
    array([1, 2], dtype=int32)
    >>> nf.constant(0., shape=[2, 2])
    array([[0., 0.],
           [0., 0.]], dtype=float32)
    """
    # a buffer of its own, as tf.constant: later writes into a NumPy array (or ndarray) it was
    # made from do not change it
    x = _tensor(value, _dtype(dtype), copy=True)
    if shape is not None:
        shape = _shape_list(shape)
        n = int(np.prod(shape, dtype=np.int64))
        if _static_size(x) == n:
            x = tnp.reshape(x, shape)
        elif _static_size(x) == 1:
            x = tnp.broadcast_to(tnp.reshape(x, ()), shape)
        else:
            raise TypeError(f"nf.constant: expected {n} values for shape {shape}, got "
                            f"{_static_size(x)}")
    return x


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """An ndarray from `value`, as `tf.convert_to_tensor`: a no-op on ndarrays (a ValueError if
    `dtype` differs, as in TF); Variables give their value; Python data gets TF's dtypes
    (`dtype_hint` when it fits).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.convert_to_tensor([1., 2.])
    array([1., 2.], dtype=float32)
    >>> nf.convert_to_tensor([1, 2], dtype_hint=nf.float64)
    array([1., 2.], dtype=float64)
    """
    dtype = _dtype(dtype)
    if isinstance(value, ndarray):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(f"convert_to_tensor: requested dtype {dtype.name} for an array of "
                             f"dtype {value.dtype.name}; use nf.cast to convert")
        return value
    if dtype is None and dtype_hint is not None and _is_python_data(value):
        hint = _dt.canonical(dtype_hint)
        probe = np.asarray(value)
        if np.can_cast(probe.dtype, hint, casting="same_kind") or probe.dtype.kind in "iub":
            dtype = hint
    return _tensor(value, dtype)


def cast(x, dtype, name=None):
    """`x` converted to `dtype`, as `tf.cast` (floats to ints truncate toward zero).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.cast([1.7, -1.7], nf.int32)
    array([ 1, -1], dtype=int32)
    """
    return tnp.asarray(x if not isinstance(x, (list, tuple)) else _tensor(x), dtype=_dtype(dtype))


# ------------------------------------------------------------------ reductions
def _axis(axis):
    if isinstance(axis, ndarray):
        axis = axis.numpy().tolist()
    if isinstance(axis, list):
        axis = tuple(axis)
    return axis


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes by default), keeping the input dtype, as `tf.reduce_sum`.

    Parameters
    ----------
    input_tensor : array_like
        The values to sum (Python data becomes float32 or int32, as in TensorFlow).
    axis : int or list of int, optional
        The axes to reduce; None (default) reduces all of them.
    keepdims : bool, optional
        Keep the reduced axes with size 1.

    Returns
    -------
    ndarray
        The sums, with the dtype of the input (NumPy's `sum` widens small integers; this does
        not; booleans are counted as integers).

    Examples
    --------
    >>> import ndflow as nf
    >>> x = nf.constant([[1, 2], [3, 4]])
    >>> nf.reduce_sum(x)
    array(10, dtype=int32)
    >>> nf.reduce_sum(x, axis=0)
    array([4, 6], dtype=int32)
    >>> nf.reduce_sum(x, axis=1, keepdims=True)
    array([[3],
           [7]], dtype=int32)
    """
    x = _tensor(input_tensor)
    return tnp.sum(x, axis=_axis(axis), dtype=x.dtype if x.dtype.kind != "b" else None,
                   keepdims=keepdims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis` (all axes by default), keeping the input dtype, as `tf.reduce_mean`
    (integer inputs give the truncated integer mean, as in TensorFlow; NumPy's `mean` gives a
    float).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.reduce_mean([[1., 2.], [3., 4.]], axis=0)
    array([2., 3.], dtype=float32)
    >>> nf.reduce_mean([1, 2])
    array(1, dtype=int32)
    """
    x = _tensor(input_tensor)
    m = tnp.mean(x, axis=_axis(axis), keepdims=keepdims)
    return m if m.dtype == x.dtype else m.astype(x.dtype)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over `axis` (all axes by default), as `tf.reduce_max` (NaN propagates).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.reduce_max([[1., 5.], [3., 4.]], axis=1)
    array([5., 4.], dtype=float32)
    """
    return tnp.max(_tensor(input_tensor), axis=_axis(axis), keepdims=keepdims)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over `axis` (all axes by default), as `tf.reduce_min` (NaN propagates).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.reduce_min([[1., 5.], [3., 4.]], axis=1)
    array([1., 3.], dtype=float32)
    """
    return tnp.min(_tensor(input_tensor), axis=_axis(axis), keepdims=keepdims)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over `axis` (all axes by default), keeping the input dtype, as
    `tf.reduce_prod`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.reduce_prod([1., 2., 3.])
    array(6., dtype=float32)
    """
    x = _tensor(input_tensor)
    return tnp.prod(x, axis=_axis(axis), dtype=x.dtype if x.dtype.kind != "b" else None,
                    keepdims=keepdims)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """Logical or over `axis` (all axes by default), as `tf.reduce_any`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.reduce_any([[True, False], [False, False]], axis=1)
    array([ True, False], dtype=bool)
    """
    return tnp.any(_tensor(input_tensor), axis=_axis(axis), keepdims=keepdims)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """Logical and over `axis` (all axes by default), as `tf.reduce_all`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.reduce_all([[True, False], [True, True]], axis=1)
    array([False,  True], dtype=bool)
    """
    return tnp.all(_tensor(input_tensor), axis=_axis(axis), keepdims=keepdims)


# ------------------------------------------------------------------ products and shapes
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None):
    """Matrix product of the last two axes (batched over the others), as `tf.matmul`.

    `transpose_a`/`adjoint_a` (and `_b`) transpose (and conjugate) an operand's last two axes
    first; `a_is_sparse` and `b_is_sparse` are accepted and change nothing.

    Examples
    --------
    >>> import ndflow as nf
    >>> a = nf.constant([[1., 2.], [3., 4.]])
    >>> nf.matmul(a, a, transpose_b=True)
    array([[ 5., 11.],
           [11., 25.]], dtype=float32)
    """
    a, b = _tensor(a), _tensor(b)
    if transpose_a or adjoint_a:
        a = tnp.swapaxes(a, -1, -2)
        if adjoint_a:
            a = tnp.conjugate(a)
    if transpose_b or adjoint_b:
        b = tnp.swapaxes(b, -1, -2)
        if adjoint_b:
            b = tnp.conjugate(b)
    r = tnp.matmul(a, b)
    return r if output_type is None else cast(r, output_type)


def reshape(tensor, shape, name=None):
    """`tensor` with a new shape, as `tf.reshape`. `shape` may be a shape tensor or a list whose
    entries are run-time scalars (e.g. from `nf.shape(x)` inside `nf.function`): sizes known
    while tracing stay static, the others are computed when the graph runs.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.reshape(nf.range(6), [2, -1])
    array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    """
    x = _tensor(tensor)
    if isinstance(shape, ndarray) and shape._t is None:
        shape = shape.numpy().reshape(-1).tolist()
    elif isinstance(shape, (int, np.integer)):
        shape = [shape]
    return tnp.reshape(x, shape)


def transpose(a, perm=None, conjugate=False, name=None):
    """`a` with its axes permuted by `perm` (reversed by default), as `tf.transpose`; with
    `conjugate=True` also conjugated. A view, as `numpy.transpose`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.transpose([[1, 2, 3]])
    array([[1],
           [2],
           [3]], dtype=int32)
    """
    r = tnp.transpose(_tensor(a), None if perm is None else [int(p) for p in perm])
    return tnp.conjugate(r) if conjugate else r


def concat(values, axis, name=None):
    """The arrays of `values` joined along the existing axis `axis`, as `tf.concat` (=
    `numpy.concatenate`; `axis` is required, as in TensorFlow).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.concat([[[1, 2]], [[3, 4]]], axis=0)
    array([[1, 2],
           [3, 4]], dtype=int32)
    """
    return tnp.concatenate([_tensor(v) for v in values], axis=int(axis))


def stack(values, axis=0, name=None):
    """The arrays of `values` (all of one shape) joined along a new axis `axis`, as `tf.stack`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.stack([[1, 2], [3, 4]], axis=1)
    array([[1, 3],
           [2, 4]], dtype=int32)
    """
    return tnp.stack([_tensor(v) for v in values], axis=int(axis))


def unstack(value, num=None, axis=0, name=None):
    """The slices of `value` along `axis`, as a list, as `tf.unstack`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.unstack([[1, 2], [3, 4]], axis=1)
    [array([1, 3], dtype=int32), array([2, 4], dtype=int32)]
    """
    x = _tensor(value)
    axis = int(axis) % x.ndim if x.ndim else 0
    n = x.shape[axis] if num is None else int(num)
    if n is None:
        raise ValueError(f"nf.unstack: cannot infer num from shape {tuple(x.shape)} (the axis "
                         f"size is unknown while tracing); pass num")
    lead = (slice(None),) * axis
    return [x[lead + (i,)] for i in _builtin_range(n)]


def tile(input, multiples, name=None):
    """Repeat `input` `multiples[i]` times along axis i, as `tf.tile` (= `numpy.tile` with one
    multiple per axis; sizes may be unknown while tracing).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.tile([[1, 2]], [2, 2])
    array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int32)
    """
    x = _tensor(input)
    if isinstance(multiples, ndarray) and multiples._t is None:
        multiples = multiples.numpy().tolist()
    elif isinstance(multiples, ndarray):
        if multiples.ndim != 1 or multiples.shape[0] is None:
            raise ValueError("nf.tile: traced multiples must be a 1-d array of known length")
        multiples = [multiples[i] for i in _builtin_range(multiples.shape[0])]
    m = [k if isinstance(k, ndarray) and k._t is not None else operator.index(k)
         for k in multiples]
    if len(m) != x.ndim:
        raise ValueError(f"nf.tile: multiples {m} must have one entry per axis of the input of "
                         f"shape {tuple(x.shape)}")
    return tnp.tile(x, m)


def square(x, name=None):
    """x * x elementwise, as `tf.math.square`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.square([2., -3.])
    array([4., 9.], dtype=float32)
    """
    return tnp.square(_tensor(x))


def squeeze(input, axis=None, name=None):
    """`input` without its axes of size 1 (only those in `axis` when given; an error if one of
    them is not 1), as `tf.squeeze`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.squeeze(nf.zeros([1, 2, 1])).shape
    (2,)
    """
    return tnp.squeeze(_tensor(input), _axis(axis))


def expand_dims(input, axis, name=None):
    """`input` with a new axis of size 1 at position `axis` (negative counts from the end of
    the result), as `tf.expand_dims`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.expand_dims([1, 2], -1).shape
    (2, 1)
    """
    return tnp.expand_dims(_tensor(input), int(axis))


def argmax(input, axis=None, output_type=np.int64, name=None):
    """Index of the largest value along `axis` (0 by default, as in TF; `numpy.argmax`
    flattens by default), as `tf.argmax`; int64 unless `output_type`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.argmax([[3, 1], [0, 5]], axis=1)
    array([0, 1], dtype=int64)
    """
    r = tnp.argmax(_tensor(input), axis=0 if axis is None else int(axis))
    return r if r.dtype == np.dtype(output_type) else r.astype(output_type)


def argmin(input, axis=None, output_type=np.int64, name=None):
    """Index of the smallest value along `axis` (0 by default, as in TF), as `tf.argmin`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.argmin([[3, 1], [0, 5]])
    array([1, 0], dtype=int64)
    """
    r = tnp.argmin(_tensor(input), axis=0 if axis is None else int(axis))
    return r if r.dtype == np.dtype(output_type) else r.astype(output_type)


def size(input, out_type=np.int32, name=None):
    """The number of elements as a 0-d `out_type` array, as `tf.size`; inside `nf.function` it
    is computed at run time where a size is unknown while tracing."""
    n = tnp.size(_tensor(input))
    return tnp.asarray(n, dtype=out_type) if not isinstance(n, tnp.ndarray) else n.astype(out_type)


def rank(input, name=None):
    """The number of axes of `input` as a 0-d int32 array, as `tf.rank`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.rank(nf.zeros([2, 3]))
    array(2, dtype=int32)
    """
    return tnp.asarray(_tensor(input).ndim, dtype=np.int32)


# ------------------------------------------------------------------ creation
def _shape_list(shape):
    if isinstance(shape, ndarray):
        if shape._t is not None:
            return shape            # sizes computed at run time (tnp.zeros etc. take them)
        shape = shape.numpy().tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(d if isinstance(d, ndarray) and d._t is not None else operator.index(d)
                 for d in shape)


def ones(shape, dtype=np.float32, name=None):
    """An array of ones of `shape`, float32 by default as `tf.ones` (`numpy.ones`: float64).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.ones([2])
    array([1., 1.], dtype=float32)
    """
    return tnp.ones(_shape_list(shape), dtype=dtype)


def zeros(shape, dtype=np.float32, name=None):
    """An array of zeros of `shape`, float32 by default as `tf.zeros` (`numpy.zeros`: float64).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.zeros([2, 1], dtype=nf.int32)
    array([[0],
           [0]], dtype=int32)
    """
    return tnp.zeros(_shape_list(shape), dtype=dtype)


def fill(dims, value, name=None):
    """An array of shape `dims` filled with `value` (of its dtype: TensorFlow's for Python
    numbers), as `tf.fill`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.fill([2], 7)
    array([7, 7], dtype=int32)
    """
    v = _tensor(value)
    return tnp.full(_shape_list(dims), v, dtype=v.dtype)


def ones_like(input, dtype=None, name=None):
    """Ones with the shape (and dtype, unless `dtype`) of `input`, as `tf.ones_like`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.ones_like([[1, 2]])
    array([[1, 1]], dtype=int32)
    """
    return tnp.ones_like(_tensor(input), dtype=dtype)


def zeros_like(input, dtype=None, name=None):
    """Zeros with the shape (and dtype, unless `dtype`) of `input`, as `tf.zeros_like`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.zeros_like([1., 2.])
    array([0., 0.], dtype=float32)
    """
    return tnp.zeros_like(_tensor(input), dtype=dtype)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """Evenly spaced values in [start, limit), as `tf.range` (int32 for Python ints, float32 for
    Python floats, unless `dtype`).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.range(5)
    array([0, 1, 2, 3, 4], dtype=int32)
    >>> nf.range(1., 2., 0.25)
    array([1.  , 1.25, 1.5 , 1.75], dtype=float32)
    """
    args = [start] if limit is None else [start, limit, delta]
    if any(isinstance(a, ndarray) and a._t is not None for a in args):
        # bounds computed at run time (e.g. from nf.shape): the length is unknown while tracing
        if dtype is None:
            arr = [a.dtype for a in args if isinstance(a, ndarray)]
            dtype = np.result_type(*arr)
        return tnp.arange(*args, dtype=dtype)
    vals = [a.item() if isinstance(a, ndarray) else a for a in args]
    if dtype is None:
        arr_dtypes = [a.dtype for a in args if isinstance(a, ndarray)]
        dtype = np.result_type(*arr_dtypes) if arr_dtypes else _tf_dtype_of_python(vals)
    return tnp.arange(*vals, dtype=dtype) if limit is not None else tnp.arange(vals[0], dtype=dtype)


def identity(input, name=None):
    """A copy of `input` (on the current device), as `tf.identity`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.identity([1., 2.])
    array([1., 2.], dtype=float32)
    """
    return tnp.copy(_tensor(input))


# ------------------------------------------------------------------ Python functions
def py_function(func, inp, Tout, name=None):
    """Run the Python function `func` on arrays, as `tf.py_function`. Eagerly it is simply
    called on the ndarrays (so tapes see its ndflow operations); inside `nf.function` it runs at
    every call of the compiled function (via `nf.numpy_function`), with ndarray arguments.
    Results are converted to `Tout` (a dtype or a list of dtypes)."""
    # (function level: nf.Variable and nf.math import this module; the tape need not come)
    from .autodiff.functional import numpy_function
    if not STATE.traces:
        xs = [x if isinstance(x, ndarray) else tnp.asarray(x) for x in inp]
        res = func(*xs)
        if isinstance(Tout, (list, tuple)):
            return [tnp.asarray(r, dtype=_dtype(t)) for r, t in zip(res, Tout)]
        return tnp.asarray(res, dtype=_dtype(Tout)) if Tout is not None else tnp.asarray(res)

    @functools.wraps(func)
    def call(*bufs):
        res = func(*[tnp.asarray(b) for b in bufs])
        if isinstance(Tout, (list, tuple)):
            return [np.asarray(r) for r in res]
        return np.asarray(res)
    return numpy_function(call, inp, Tout)


# ------------------------------------------------------------------ elementwise
def add_n(inputs, name=None):
    """The elementwise sum of a list of arrays, as `tf.add_n`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.add_n([[1., 2.], [3., 4.], [5., 6.]])
    array([ 9., 12.], dtype=float32)
    """
    xs = [_tensor(x) for x in inputs]
    if not xs:
        raise ValueError("nf.add_n: inputs must be a non-empty list")
    return functools.reduce(tnp.add, xs)


def abs(x, name=None):  # noqa: A001
    """|x| elementwise (the magnitude, a real array, for complex `x`), as `tf.abs`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.abs([-1.5, 2.])
    array([1.5, 2. ], dtype=float32)
    """
    return tnp.absolute(_tensor(x))


def exp(x, name=None):
    """e ** x elementwise, as `tf.exp`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.exp([0., 1.])
    array([1.      , 2.718282], dtype=float32)
    """
    return tnp.exp(_tensor(x))


def log(x, name=None):
    """The natural logarithm elementwise (-inf at 0, NaN below), as `tf.math.log`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.log([1., 10.])
    array([0.       , 2.3025851], dtype=float32)
    """
    return tnp.log(_tensor(x))


def sqrt(x, name=None):
    """The square root elementwise (NaN below 0), as `tf.sqrt`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.sqrt([4., 2.])
    array([2.       , 1.4142135], dtype=float32)
    """
    return tnp.sqrt(_tensor(x))


def maximum(x, y, name=None):
    """The larger of `x` and `y` elementwise, with broadcasting (NaN propagates), as
    `tf.maximum`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.maximum([1., 5.], 3.)
    array([3., 5.], dtype=float32)
    """
    return tnp.maximum(_operand(x), _operand(y))


def minimum(x, y, name=None):
    """The smaller of `x` and `y` elementwise, with broadcasting (NaN propagates), as
    `tf.minimum`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.minimum([1., 5.], 3.)
    array([1., 3.], dtype=float32)
    """
    return tnp.minimum(_operand(x), _operand(y))


def _operand(x):
    return x if type(x) in (int, float, bool, complex) else _tensor(x)


def where(condition, x=None, y=None, name=None):
    """`tf.where`: with `x` and `y`, elements from `x` where `condition` else from `y`
    (broadcasting); with the condition alone, the int64 coordinates of its true elements,
    shape (n, rank).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.where([True, False], [1, 2], [10, 20])
    array([ 1, 20], dtype=int32)
    >>> nf.where([[True, False], [False, True]])
    array([[0, 0],
           [1, 1]], dtype=int64)
    """
    if x is None and y is None:
        return tnp.argwhere(_tensor(condition))
    if x is None or y is None:
        raise ValueError("nf.where: give both x and y, or neither")
    return tnp.where(_tensor(condition), _operand(x), _operand(y))


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`t` clipped to [min, max], keeping its dtype, as `tf.clip_by_value`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.clip_by_value([-2., 0.5, 3.], -1., 1.)
    array([-1. ,  0.5,  1. ], dtype=float32)
    """
    return tnp.clip(_tensor(t), _operand(clip_value_min), _operand(clip_value_max))


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot encoding, as `tf.one_hot`: a new axis of size `depth` (last by default) holds
    `on_value` (1) at each index and `off_value` (0) elsewhere; out-of-range indices give a
    row of `off_value`. float32 by default (else the dtype of `on_value`/`off_value`).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.one_hot([0, 2, 5], 3)
    array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    """
    idx = _tensor(indices)
    if dtype is None:
        given = [v for v in (on_value, off_value) if v is not None]
        dtype = _tensor(given[0]).dtype if given else _dt.F32
    dtype = _dt.canonical(dtype)
    on = tnp.asarray(1 if on_value is None else on_value, dtype=dtype)
    off = tnp.asarray(0 if off_value is None else off_value, dtype=dtype)
    depth = int(depth)
    out_ndim = idx.ndim + 1
    axis = out_ndim - 1 if axis is None or axis == -1 else int(axis) % out_ndim
    classes = tnp.reshape(tnp.arange(depth, dtype=idx.dtype if idx.dtype.kind in "iu" else None),
                          (depth,) + (1,) * (out_ndim - 1 - axis))
    hit = tnp.equal(tnp.expand_dims(idx, axis), classes)
    return tnp.where(hit, on, off)
