"""Conversions and host-side queries: building arrays from buffers, iterables, strings,
DLPack and functions; layout requests (require, asfortranarray, asarray_chkfinite); memory
queries (shares_memory, may_share_memory, isfortran); bit packing; dtype queries.

Buffers, strings and iterables are read on the host (they are Python/host objects); the result
is placed on the current device. Memory and layout queries look at the backend buffer, so they
need a concrete array (not a traced one)."""
import operator

import numpy as np

from ..core.ndarray import ndarray
from ._core import asarray, checked
from . import _axes as A
from ..core.primitive import bind
from ..primitives import shape as S
from ..primitives._util import norm_axis
from ..primitives.elementwise import copy_p
from .manipulation import reshape, moveaxis, ravel, expand_dims
from .math import isfinite, logical_not, not_equal, right_shift, bitwise_and
from .reductions import all as all_, sum as sum_
from .routines import indices
from .padding import pad


# ------------------------------------------------------------------ from host objects
def frombuffer(buffer, dtype=float, count=-1, offset=0, *, like=None):
    """An array from a bytes-like object, as `numpy.frombuffer` (read on the host; a read-only
    view when the buffer is, as NumPy's)."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromiter(iter, dtype, count=-1, *, like=None):
    """An array from an iterable, as `numpy.fromiter` (elements may be ndflow scalars)."""
    it = (e.item() if isinstance(e, ndarray) else e for e in iter)
    return asarray(np.fromiter(it, dtype=dtype, count=count))


def fromstring(string, dtype=float, count=-1, *, sep, like=None):
    """An array from text data, as `numpy.fromstring` (text mode; `sep` is required, since
    NumPy removed the binary mode: use `frombuffer`)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """`function(*indices(shape, dtype), **kwargs)`, as `numpy.fromfunction` (the function
    gets ndflow arrays, so the result is whatever it computes with them)."""
    return function(*indices(shape, dtype=dtype), **kwargs)


# ------------------------------------------------------------------ layout requests
def require(a, dtype=None, requirements=None, *, like=None):
    """An array of the given dtype, as `numpy.require`. Memory-layout requirements ('C', 'F',
    'A', 'W', 'O', 'E') are accepted and checked for validity; ndflow arrays are always
    usable as they are (the backend decides the layout)."""
    valid = {"C", "C_CONTIGUOUS", "CONTIGUOUS", "F", "F_CONTIGUOUS", "FORTRAN", "A", "ALIGNED",
             "W", "WRITEABLE", "O", "OWNDATA", "E", "ENSUREARRAY"}
    reqs = [requirements] if isinstance(requirements, str) else list(requirements or [])
    for r in reqs:
        if r.upper() not in valid:
            raise KeyError(r)
    return asarray(a, dtype)


def asfortranarray(a, dtype=None, *, like=None):
    """As `numpy.asfortranarray` (at least 1-d): the array itself when it is already
    Fortran-contiguous, else a copy (whose memory order is the backend's business)."""
    x = asarray(a, dtype)
    if x.ndim == 0:
        return reshape(x, (1,))
    if x._t is None and getattr(x._v, "flags", None) is not None and x._v.flags.f_contiguous:
        return x
    return bind(copy_p, x)


def asarray_chkfinite(a, dtype=None, order=None):
    """`asarray` that raises ValueError on NaN or infinity, as `numpy.asarray_chkfinite` (at
    every call of a compiled function too)."""
    x = asarray(a, dtype)
    if x.dtype.kind in "fc":
        x = checked(x, logical_not(all_(isfinite(x))), ValueError,
                    "array must not contain infs or NaNs")
    return x


# ------------------------------------------------------------------ memory queries (host)
def _buf(x):
    return x.numpy() if isinstance(x, ndarray) else x


def shares_memory(a, b, /, max_work=None):
    """Whether two arrays share memory, as `numpy.shares_memory` (on their buffers)."""
    return np.shares_memory(_buf(a), _buf(b), max_work=max_work)


def may_share_memory(a, b, /, max_work=None):
    """Whether two arrays might share memory, as `numpy.may_share_memory`."""
    return np.may_share_memory(_buf(a), _buf(b), max_work=max_work)


def isfortran(a):
    """True if the buffer is Fortran-contiguous and not C-contiguous, as `numpy.isfortran`."""
    return np.isfortran(_buf(a))


def iterable(y):
    """Whether `iter(y)` works, as `numpy.iterable` (0-d arrays are not iterable)."""
    return np.iterable(y)


# ------------------------------------------------------------------ bits
def packbits(a, /, axis=None, bitorder="big"):
    """Pack the truth values of an integer or boolean array into uint8 bytes (zero-padded to a
    multiple of 8), as `numpy.packbits`."""
    x = asarray(a)
    if x.dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    x, axis = _bits_axis(x, axis, bitorder)
    bits = not_equal(x, 0).astype(np.uint8)
    n = x.shape[axis]
    if n is None:
        raise ValueError("packbits: the size of the packed axis is unknown while tracing")
    extra = (-n) % 8
    if extra:
        bits = pad(bits, [(0, 0)] * axis + [(0, extra)] + [(0, 0)] * (x.ndim - axis - 1))
    v = moveaxis(bits, axis, -1)
    v = reshape(v, tuple(v.shape[:-1]) + ((n + extra) // 8, 8)) if None not in v.shape[:-1] \
        else _split_last(v, 8)
    w = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else
                 [1, 2, 4, 8, 16, 32, 64, 128], dtype=np.uint8)
    # summed in int64 (NumPy's own sum of uint8 widens), then narrowed
    packed = sum_(v.astype(np.int64) * asarray(w.astype(np.int64)), axis=-1).astype(np.uint8)
    return moveaxis(packed, -1, axis)


def _bits_axis(x, axis, bitorder):
    """packbits/unpackbits: check bitorder; axis None flattens; a 0-d input is one element."""
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    if axis is None:
        x, axis = ravel(x), 0
    if x.ndim == 0:
        x = reshape(x, (1,))
    return x, norm_axis(operator.index(axis), x.ndim)


def _split_last(v, k):
    return bind(S.reshape_p, v, shape=(-1, k), keep=v.ndim - 1)


def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """Unpack uint8 bytes into bits, as `numpy.unpackbits` (`count` keeps the first bits, or
    drops from the end when negative)."""
    x = asarray(a)
    if x.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    x, axis = _bits_axis(x, axis, bitorder)
    shifts = asarray(np.array([7, 6, 5, 4, 3, 2, 1, 0] if bitorder == "big" else
                              [0, 1, 2, 3, 4, 5, 6, 7], dtype=np.uint8))
    v = moveaxis(x, axis, -1)
    bits = bitwise_and(right_shift(expand_dims(v, -1), shifts), np.uint8(1))
    bits = A.collapse(bits, [1] * (bits.ndim - 2) + [2])
    if count is not None:
        count = operator.index(count)
        n = bits.shape[-1]
        if count >= 0:
            if n is not None and count > n:
                bits = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, count - n)])
            else:
                bits = A.slice_axis(bits, bits.ndim - 1, 0, count)
        else:
            bits = A.slice_axis(bits, bits.ndim - 1, 0, count)
    return moveaxis(bits, -1, axis)


# ------------------------------------------------------------------ dtype queries
promote_types = np.promote_types
min_scalar_type = np.min_scalar_type
mintypecode = np.mintypecode
typename = np.typename


def common_type(*arrays):
    """The inexact scalar type common to the arrays, as `numpy.common_type` (only the dtypes
    are looked at)."""
    return np.common_type(*[np.empty(0, dtype=asarray(a).dtype) if not isinstance(a, ndarray)
                            else np.empty(0, dtype=a.dtype) for a in arrays])
