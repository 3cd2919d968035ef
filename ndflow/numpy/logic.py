"""Logic and value checks that are not ufuncs: isclose / allclose, array_equal / array_equiv,
isreal / iscomplex, isposinf / isneginf, and the value fixers nan_to_num / real_if_close.

Functions NumPy answers with a Python bool (allclose, array_equal, array_equiv) do so eagerly;
on traced or batched arrays they return a 0-d bool array (a Python bool cannot depend on values
that are not known yet)."""
import numpy as np

from ..core.ndarray import ndarray
from ..core import dtypes as _dt
from ._core import asarray
from ._outarg import write_out as _write_out
from ..core.primitive import bind
from ..primitives import elementwise as E
from .creation import zeros_like
from .math import (less_equal, absolute, isfinite, equal, isnan, subtract, logical_or,
                   logical_and, imag, not_equal, iscomplexobj, isinf, signbit, logical_not,
                   where_ as where, real, less)
from .reductions import all as all_


def _as_bool(r):
    """A Python bool from a 0-d result when its value is known, else the array."""
    return bool(r) if r._t is None else r


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise (infinities equal to themselves), as
    `numpy.isclose`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.isclose(tnp.asarray([1.0, 1.1, float("nan")]), 1.0)
    array([ True, False, False], dtype=bool)
    """
    x = a if type(a) in (int, float, complex) else asarray(a)
    y = b if type(b) in (int, float, complex) else asarray(b)
    atol = atol if type(atol) in (int, float, complex) else asarray(atol)
    rtol = rtol if type(rtol) in (int, float, complex) else asarray(rtol)
    if isinstance(y, ndarray):
        dt = _dt.result_type(y, 1.0)
        y = y.astype(dt) if y.dtype != dt else y
    elif isinstance(y, int):
        y = float(y)
    if type(x) in (int, float, complex) and type(y) in (int, float, complex):
        x = asarray(x)
    with np.errstate(invalid="ignore"):
        result = (less_equal(absolute(subtract(x, y)), atol + rtol * absolute(y))
                  & isfinite(y)) | equal(x, y)
        if equal_nan:
            result = result | (isnan(x) & isnan(y))
    result = asarray(result)
    if result.ndim == 0 and result._t is None and not isinstance(a, ndarray) and \
            not isinstance(b, ndarray):
        # scalars in, as NumPy: a NumPy bool scalar (ndflow arrays in keep an ndflow array)
        return result.numpy()[()]
    return result


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether all elements are close (see `isclose`), as `numpy.allclose`: a Python bool.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.allclose(tnp.asarray([1.0, 2.0]), [1.0, 2.0 + 1e-9])
    True
    """
    return _as_bool(all_(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def _shapes_known(a1, a2, name):
    if None in a1.shape or None in a2.shape:
        raise ValueError(f"{name}: whether the shapes are equal decides the answer and the "
                         f"sizes are unknown while tracing ({tuple(a1.shape)} and "
                         f"{tuple(a2.shape)})")


def array_equal(a1, a2, equal_nan=False):
    """True if both have the same shape and elements, as `numpy.array_equal`."""
    try:
        x, y = asarray(a1), asarray(a2)
    except Exception:
        return False
    if x.ndim != y.ndim:
        return False
    _shapes_known(x, y, "array_equal")
    if tuple(x.shape) != tuple(y.shape):
        return False
    eq = equal(x, y)
    if equal_nan and (x.dtype.kind in "fc" or y.dtype.kind in "fc"):
        eq = logical_or(eq, logical_and(isnan(x), isnan(y)))
    return _as_bool(all_(eq))


def array_equiv(a1, a2):
    """True if the arrays broadcast together and are equal elementwise, as
    `numpy.array_equiv`."""
    try:
        x, y = asarray(a1), asarray(a2)
    except Exception:
        return False
    _shapes_known(x, y, "array_equiv")
    try:
        np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    except ValueError:
        return False
    return _as_bool(all_(equal(x, y)))


def isreal(x):
    """Elementwise: the imaginary part is zero, as `numpy.isreal`."""
    return equal(imag(asarray(x)), 0)


def iscomplex(x):
    """Elementwise: the imaginary part is non-zero (all False for real dtypes), as
    `numpy.iscomplex`."""
    a = asarray(x)
    if a.dtype.kind == "c":
        return not_equal(imag(a), 0)
    return zeros_like(a, dtype=bool)


def isrealobj(x):
    """True unless x has a complex dtype, as `numpy.isrealobj`."""
    return not iscomplexobj(x)


def isscalar(element):
    """As `numpy.isscalar`: Python and NumPy scalars (and str/bytes); never an array."""
    if isinstance(element, ndarray):
        return False
    return np.isscalar(element)


def _inf_sign(x, positive, out):
    a = asarray(x)
    if a.dtype.kind == "c":
        raise TypeError(f"This operation is not supported for {a.dtype} values because it would "
                        f"be ambiguous.")
    s = signbit(a)
    r = logical_and(isinf(a), logical_not(s) if positive else s)
    return _write_out(r, out, broadcast=True, casting="same_kind", ufunc=np.logical_and)


def isposinf(x, out=None):
    """Elementwise x == +inf, as `numpy.isposinf` (complex input is a TypeError)."""
    return _inf_sign(x, True, out)


def isneginf(x, out=None):
    """Elementwise x == -inf, as `numpy.isneginf`."""
    return _inf_sign(x, False, out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities by finite numbers (real and imaginary parts separately), as
    `numpy.nan_to_num`; the gradient passes through the finite elements. With copy=False an
    ndflow array is updated in place and returned."""
    a = asarray(x)
    if a.dtype.kind not in "fc" and a.dtype != _dt.BFLOAT16:
        return a if not copy or a is not x else a.copy()
    rd = real(a).dtype if a.dtype.kind == "c" else a.dtype
    info = np.finfo(rd)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf

    def fix(d):
        r = where(isnan(d), asarray(nan, dtype=rd), d)
        r = where(isposinf(d), asarray(hi, dtype=rd), r)
        return where(isneginf(d), asarray(lo, dtype=rd), r)
    if a.dtype.kind == "c":
        re, im = fix(real(a)), fix(imag(a))
        rebuilt = bind(E.add_p, bind(E.convert_p, re, dtype=a.dtype),
                       bind(E.convert_p, im, dtype=a.dtype) * asarray(1j, dtype=a.dtype))
        # re + im * 1j turns a -0.0 part into 0.0: rebuild only the elements that changed
        res = where(isfinite(a), a, rebuilt)
    else:
        res = fix(a)
    if not copy and isinstance(x, ndarray):
        x[...] = res
        return x
    return res


def real_if_close(a, tol=100):
    """The real part when every imaginary part is within `tol` machine epsilons of zero, as
    `numpy.real_if_close`. The result's dtype depends on the values, so the array must be
    concrete (not traced)."""
    x = asarray(a)
    if x.dtype.kind != "c":
        return x
    if x._t is not None:
        raise ValueError("real_if_close: whether the result is real depends on the values, which "
                         "are not known while tracing or vectorizing")
    if tol > 1:
        tol = np.finfo(x.dtype).eps * tol
    if bool(all_(less(absolute(imag(x)), tol))):
        return real(x)
    return x
