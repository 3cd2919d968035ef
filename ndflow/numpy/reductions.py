"""Reductions and statistics."""
import builtins

import numpy as np

from ..core.ndarray import ndarray, static_size as _static_size
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import elementwise as E, reduction as R
from ..primitives._util import norm_axes, norm_axis, legacy_0d, c_axis
from ..primitives.misc import runtime_warning_p
from ._core import asarray
from ._outarg import write_out as _write_out
from .manipulation import broadcast_to, expand_dims, reshape
from .ufuncs import _mask, add_reduce
from .math import (add, imag, maximum, minimum, multiply, real, sqrt, square, subtract,
                   true_divide, where_)



def _axes(a, axis, legacy=False):
    """The normalised axes; `legacy`: the function is one of NumPy's ufunc reductions, which
    take the integer axis 0 or -1 on a 0-d array (as axis=None; see `legacy_0d`)."""
    return norm_axes(axis, a.ndim, allow_0d_legacy=legacy, ufunc=True)


def _masked(a, where, fill):
    """a with the elements `where` leaves out replaced by `fill` (see `_mask`)."""
    return E_where(_mask(a, where), a, fill)


def _sum_dtype(d):
    if d.kind == "b" or (d.kind == "i" and d.itemsize < 8):
        return _dt.I64
    if d.kind == "u" and d.itemsize < 8:
        return np.dtype(np.uint64)
    return d


_SUM_ALL = {}              # rank -> reduce_sum's parameters for the whole array (the lane)


def _sum_kernel(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    # np.sum of an ndarray is add.reduce with these arguments, without np.sum's dispatch
    if type(a) is np.ndarray:
        return np.add.reduce(a, axis, dtype, None, keepdims)
    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


def _sum_lane(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Under tapes alone: the whole of an eager array of a float dtype (its own sum dtype) is
    the composition's one primitive, with one parameter dict per rank shared by the records
    (no rule or record changes its parameters: the general backward pass copies them before
    adding its own)."""
    if (type(a) is ndarray and axis is None and dtype is None and out is None and not keepdims
            and initial is None and where is None and a._dev is None
            and a._v.dtype.kind in "fc"):
        n = a._v.ndim
        params = _SUM_ALL.get(n)
        if params is None:
            params = _SUM_ALL[n] = {"axes": tuple(range(n)), "keepdims": False}
        return R.reduce_sum_p, (a,), params
    return None


@composite(_sum_kernel, "sum", ("out", "initial", "where"), adapt=False, lane=_sum_lane)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum of array elements over the given axes, as `numpy.sum`."""
    a = asarray(a)
    d = _dt.canonical(dtype) if dtype is not None else _sum_dtype(a.dtype)
    axes = _axes(a, axis, legacy=True)
    if where is not None or (a.dtype != d and d.kind in "fc"):
        return _out(add_reduce(a, axes, keepdims, d, initial, where), out)
    if a.dtype != d:
        a = bind(E.convert_p, a, dtype=d)
    r = bind(R.reduce_sum_p, a, axes=axes, keepdims=bool(keepdims))
    if initial is not None:
        r = add(r, asarray(initial, dtype=r.dtype))   # NumPy casts `initial` to the result dtype
    return _out(r, out)


def _out(r, out):
    return _write_out(r, out)


def E_where(c, x, y):
    return where_(c, x, y)


@composite(lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None:
           np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims), "prod",
           ("out", "initial", "where"), adapt=False)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product of array elements over the given axes, as `numpy.prod`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.prod(tnp.asarray([[1., 2.], [3., 4.]]), axis=1)
    array([ 2., 12.], dtype=float64)
    """
    a = asarray(a)
    d = _dt.canonical(dtype) if dtype is not None else _sum_dtype(a.dtype)
    axes = _axes(a, axis, legacy=True)
    if where is not None and d.kind == "c":      # the masked elements skipped, as NumPy's
        w = asarray(_mask(a, where), dtype=_dt.BOOL)
        if w.ndim < a.ndim:
            w = expand_dims(w, tuple(range(a.ndim - w.ndim)))
        r = bind(R.reduce_prod_where_p, a if a.dtype == d else bind(E.convert_p, a, dtype=d), w,
                 axes=axes, keepdims=bool(keepdims))
    else:
        if where is not None:
            a = _masked(a, where, 1)
        if a.dtype != d:
            a = bind(E.convert_p, a, dtype=d)
        r = bind(R.reduce_prod_p, a, axes=axes, keepdims=bool(keepdims))
    if initial is not None:
        r = multiply(r, asarray(initial, dtype=r.dtype))
    return _out(r, out)


def _extremum(prim, npf, name):
    def f(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        a = asarray(a)
        axes = _axes(a, axis, legacy=True)
        empty = builtins.any(a.shape[i] == 0 for i in axes)
        if initial is None:
            if where is not None:
                raise ValueError(f"reduction operation '{name}' does not have an identity, so to "
                                 f"use a where mask one has to specify 'initial'")
            if empty:
                raise ValueError(f"zero-size array to reduction operation {name} which has no "
                                 f"identity")
            return _out(bind(prim, a, axes=axes, keepdims=bool(keepdims)), out)
        init = asarray(initial, dtype=a.dtype)     # NumPy casts `initial` to the array's dtype
        if empty:
            shape = [1 if i in axes else d for i, d in enumerate(a.shape)] if keepdims else \
                [d for i, d in enumerate(a.shape) if i not in axes]
            return _out(bind(E.copy_p, broadcast_to(init, tuple(shape))), out)
        if where is not None:
            a = _masked(a, where, init)
        r = bind(prim, a, axes=axes, keepdims=bool(keepdims))
        return _out((maximum if name == "maximum" else minimum)(r, init), out)
    f.__name__ = "max" if name == "maximum" else "min"
    f.__doc__ = (f"The {name} along the given axes, as `numpy.{f.__name__}` (NaN propagates;\n"
                 f"`initial` and `where` as NumPy's). Differentiable: the gradient goes to the\n"
                 f"elements equal to the result, shared among ties.\n\nExamples\n--------\n"
                 f">>> import ndflow.numpy as tnp\n"
                 f">>> tnp.{f.__name__}(tnp.asarray([[1., 4.], [3., 2.]]), axis=1)\n"
                 f"array([{'4., 3.' if name == 'maximum' else '1., 2.'}], dtype=float64)\n")
    return composite(lambda a, axis=None, out=None, keepdims=False, initial=None, where=None:
                     npf(a, axis=axis, keepdims=keepdims), f.__name__,
                     ("out", "initial", "where"), adapt=False)(f)


max = _extremum(R.reduce_max_p, np.max, "maximum")
min = _extremum(R.reduce_min_p, np.min, "minimum")
amax, amin = max, min


def _bool_reduce(prim, npf):
    def f(a, axis=None, out=None, keepdims=False, *, where=None):
        a = asarray(a)
        axes = _axes(a, axis, legacy=True)
        if a.dtype != _dt.BOOL:
            a = bind(E.ne_p, a, bind(E.zeros_like_p, a))
        if where is not None:
            # masked-out elements count as the identity: False for any, True for all
            a = _masked(a, where, npf is np.all)
        return _out(bind(prim, a, axes=axes, keepdims=bool(keepdims)), out)
    f.__name__ = npf.__name__
    f.__doc__ = (f"`numpy.{npf.__name__}` along the given axes: whether {npf.__name__} of the "
                 f"elements are true (nonzero).\n\nExamples\n--------\n"
                 f">>> import ndflow.numpy as tnp\n"
                 f">>> tnp.{npf.__name__}(tnp.asarray([[True, False], [True, True]]), axis=1)\n"
                 f"array([{' True,  True' if npf is np.any else 'False,  True'}], "
                 f"dtype=bool)\n")
    return composite(lambda a, axis=None, out=None, keepdims=False, *, where=None:
                     npf(a, axis=axis, keepdims=keepdims), npf.__name__, ("out", "where"),
                     adapt=False)(f)


any = _bool_reduce(R.reduce_any_p, np.any)
all = _bool_reduce(R.reduce_all_p, np.all)


def _arg(prim, npf):
    def f(a, axis=None, out=None, *, keepdims=False):
        a = asarray(a)
        if legacy_0d(axis, a.ndim):       # NumPy's legacy 0-d rule: as axis=None
            axis = None
        if (_static_size(a) == 0) if axis is None else (a.shape[norm_axis(c_axis(axis), a.ndim)] == 0):
            raise ValueError(f"attempt to get {npf.__name__} of an empty sequence")
        if axis is None:
            r = bind(prim, reshape(a, (-1,)), axis=0, keepdims=False)
            if keepdims:
                r = reshape(r, (1,) * a.ndim)
            return _write_out(r, out, casting="out_safe")
        return _write_out(bind(prim, a, axis=norm_axis(c_axis(axis), a.ndim),
                              keepdims=bool(keepdims)), out, casting="out_safe")
    f.__name__ = npf.__name__
    f.__doc__ = (f"`numpy.{npf.__name__}`: the index of the extremum, the first among ties "
                 f"(int64; of the flattened array when `axis` is None; no gradient).\n\n"
                 f"Examples\n--------\n>>> import ndflow.numpy as tnp\n"
                 f">>> tnp.{npf.__name__}(tnp.asarray([[1, 4], [3, 2]]), axis=1)\n"
                 f"array([{'1, 0' if npf is np.argmax else '0, 1'}], dtype=int64)\n")
    return composite(lambda a, axis=None, out=None, *, keepdims=False:
                     npf(a, axis=axis, keepdims=keepdims), npf.__name__, ("out",),
                     adapt=False)(f)


argmax = _arg(R.argmax_p, np.argmax)
argmin = _arg(R.argmin_p, np.argmin)


def _count(a, axes):
    n = 1
    for i in axes:
        d = a.shape[i]
        if d is None:
            return None
        n *= d
    return n


def _items(a, axis, axes, keepdims, where):
    """NumPy's count of the elements each slice reduces (`_count_reduce_items`): a Python int
    when the sizes are known and there is no mask, else an int64 array shaped like the
    reduction's result (the mask broadcast to a's shape and summed; unknown sizes: counted
    at run time)."""
    if where is None:
        n = _count(a, axes)
        if n is not None:
            return n
        ones = bind(E.ones_like_p, bind(E.convert_p, a, dtype=_dt.I64)) if a.dtype != _dt.I64 \
            else bind(E.ones_like_p, a)
        return bind(R.reduce_sum_p, ones, axes=axes, keepdims=bool(keepdims))
    ones = bind(E.ones_like_p, bind(E.convert_p, a, dtype=_dt.I64))
    return sum(_masked(ones, where, 0), axis=axis, keepdims=keepdims)


def _divide_into(s, n):
    """s / n in s's dtype: NumPy divides a reduction's sum by its count into the sum
    (`true_divide(s, n, out=s, casting='unsafe')`), so an integer or bool `dtype=` truncates
    and float16 stays float16. `n` (a count) is exact in NumPy's intp; a Python int is passed
    as it is only where it is exact in s's dtype (the same bits: one correctly rounded
    division), else as an int64 array (float64 division, then the cast, as NumPy)."""
    d = s.dtype
    if isinstance(n, int) and not (d.kind in "fc" and d.itemsize >= 4 and n <= 1 << 24):
        n = asarray(n, dtype=_dt.I64)
    r = true_divide(s, n)
    return r if r.dtype == d else bind(E.convert_p, r, dtype=d)


def _warn_empty(r, n, message):
    """r, with NumPy's RuntimeWarning where a known count says a slice is empty."""
    if isinstance(n, int) and n <= 0:
        return bind(runtime_warning_p, r, message=message)
    return r


@composite(lambda a, axis=None, dtype=None, out=None, keepdims=False, *, where=None:
           np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims), "mean", ("out", "where"),
           adapt=False)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean, as `numpy.mean` (integers average in float64; a given `dtype` is the
    dtype of the sum and of the result, so an integer dtype truncates).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.mean(tnp.asarray([1, 2]))
    array(1.5, dtype=float64)
    >>> tnp.mean(tnp.asarray([[1., 2.], [3., 4.]]), axis=1)
    array([1.5, 3.5], dtype=float64)
    """
    a = asarray(a)
    half = dtype is None and a.dtype == np.dtype(np.float16)
    if dtype is not None:
        d = _dt.canonical(dtype)
    elif a.dtype.kind in "biu":
        d = _dt.default_float()
    else:
        # NumPy sums float16 in float32 and rounds the mean back (no overflow on the way)
        d = _dt.F32 if half else a.dtype
    axes = _axes(a, axis)
    n = _items(a, axis, axes, keepdims, where)
    s = sum(a, axis=axis, dtype=d, keepdims=keepdims, where=where)
    r = _warn_empty(_divide_into(s, n), n, "Mean of empty slice.")
    if half:
        r = bind(E.convert_p, r, dtype=a.dtype)
    return _out(r, out)


def _var_dtype(a, dtype):
    if dtype is not None:
        return _dt.canonical(dtype)
    return _dt.default_float() if a.dtype.kind in "biu" else None


@composite(lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None: np.var(a, axis=axis, dtype=dtype, ddof=ddof,
                                              keepdims=keepdims),
           "var", ("out", "where", "mean", "correction"), adapt=False)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Variance, as `numpy.var` (two-pass: mean first, for accuracy); `where` masks elements,
    `mean` supplies a precomputed mean (keepdims-shaped), `correction` is ddof's Array-API
    name. As NumPy, a given `dtype` is the dtype of both sums and of the result (the
    deviations keep the promotion of the array and its mean).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.var(tnp.asarray([[1., 2.], [3., 4.]]), axis=0, ddof=1)
    array([2., 2.], dtype=float64)
    """
    a = asarray(a)
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    d = _var_dtype(a, dtype)
    axes = _axes(a, axis)
    if mean is not None:
        m = asarray(mean)
    else:
        # (NumPy's var sums in the array's own dtype, float16 too, unlike its mean)
        m = _divide_into(sum(a, axis=axis, dtype=d, keepdims=True, where=where),
                         _items(a, axis, axes, True, where))
    dev = subtract(a, m)
    # |dev|**2 as NumPy forms it for complex (re**2 + im**2, no square root): the same values,
    # and a gradient that is 0, not NaN, where a deviation is 0 (a size-1 complex input)
    sq = square(real(dev)) + square(imag(dev)) if dev.dtype.kind == "c" else square(dev)
    s = sum(sq, axis=axis, dtype=d, keepdims=keepdims, where=where)
    n = _items(a, axis, axes, keepdims, where)
    dof = builtins.max(n - ddof, 0) if isinstance(n, int) else maximum(n - ddof, 0)
    if isinstance(n, int) and n - ddof <= 0:
        s = bind(runtime_warning_p, s, message="Degrees of freedom <= 0 for slice")
    return _out(_divide_into(s, dof), out)


_mean = mean


@composite(lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None: np.std(a, axis=axis, dtype=dtype, ddof=ddof,
                                              keepdims=keepdims),
           "std", ("out", "where", "mean", "correction"), adapt=False)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Standard deviation, as `numpy.std` (the square root of `var`, same arguments).

    Where the variance is 0 std is not differentiable (like a norm at 0); its gradient there is
    the subgradient 0, as `linalg.norm`'s at 0 (JAX and TensorFlow give NaN).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.std(tnp.asarray([1., 3.]))
    array(1., dtype=float64)
    """
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    # (NumPy's sqrt writes into out: a ufunc's casting)
    return _write_out(_std_from_var(v), out, casting="same_kind", ufunc=np.sqrt)


def _std_from_var(v):
    """sqrt(v), differentiated at zero variance with the subgradient 0: std is |x| there, in
    n dimensions (as linalg.norm at 0), not sqrt's 1/0 times 0 = NaN. An integer or bool
    variance (an integer `dtype=`) gets its square root cast back where NumPy does (a 0-d
    result); NumPy's `sqrt(v, out=v)` refuses that cast for an array."""
    if v.dtype.kind in "biu":
        r = sqrt(v)
        if v.ndim:
            # NumPy's own error (a UFuncTypeError, a TypeError), from NumPy itself
            np.sqrt(np.zeros(1, r.dtype), out=np.zeros(1, v.dtype))
        return bind(E.convert_p, r, dtype=v.dtype)
    zero = v == 0
    return where_(zero, v, sqrt(where_(zero, 1, v)))


def count_nonzero(a, axis=None, *, keepdims=False):
    """The number of nonzero elements (along `axis`), as `numpy.count_nonzero`; int64 (a 0-d
    array where NumPy gives an int).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> x = tnp.asarray([[0, 3], [4, 5]])
    >>> tnp.count_nonzero(x), tnp.count_nonzero(x, axis=0)
    (array(3, dtype=int64), array([1, 2], dtype=int64))
    """
    a = asarray(a)
    return sum(bind(E.ne_p, a, bind(E.zeros_like_p, a)), axis=axis, keepdims=keepdims)
