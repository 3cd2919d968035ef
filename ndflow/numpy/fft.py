"""`tnp.fft`: every function of `numpy.fft`, differentiable, traceable and vectorizable.

The n-D transforms are NumPy's own loop of 1-D transforms (so repeated axes and per-axis sizes
behave as in NumPy); the Hermitian transforms are irfft/rfft of a conjugate; the shifts are two
slices joined. Result dtypes follow NumPy 2: float32 and complex64 inputs stay single precision.

Gradients: complex cotangents pair bilinearly (as in JAX; see `ndflow/primitives/fft.py`), so
gradients of real-valued losses through complex spectra are those of TensorFlow and JAX.
"""
import operator
import warnings

import numpy as np
from numpy.exceptions import AxisError

from ..core import dtypes as _dt
from ..core.ndarray import ndarray
from ..core.primitive import bind
from ..primitives import fft as F
from ..primitives import elementwise as E
from ..primitives._util import norm_axis
from ..graph.static import shape_of as _shape_of
from ._core import asarray
from ..primitives.indexing import iota_p as _iota_p
from .array_api import on_device as _on_device
from .indexing import take as _take
from .manipulation import concatenate as _concatenate, reshape as _reshape
from .math import conjugate as _conjugate

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_F16 = np.dtype(np.float16)


# ------------------------------------------------------------------ argument handling
def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _SWAP:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or '
                         f'"forward".')
    return norm


def _axis(axis, x):
    if x.ndim == 0:
        raise AxisError(axis, 0, "the FFT of a 0-d array has no axis to transform")
    return norm_axis(operator.index(axis), x.ndim)


def _length(n):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _as_complex(a):
    """Complex input of NumPy 2's precision: single for float16/32 and complex64, else double."""
    x = asarray(a)
    d = x.dtype
    if d.kind == "c":
        return x
    want = _dt.C64 if d.kind == "f" and d.itemsize <= 4 or d == _dt.BFLOAT16 else _dt.C128
    return bind(E.convert_p, x, dtype=want)


def _as_real(a, func):
    x = asarray(a)
    d = x.dtype
    if d.kind == "c":
        raise TypeError(f"{func}: the input must be real, got {d} (NumPy refuses complex input "
                        f"too); use fft for complex data, or pass a.real")
    want = _dt.F32 if d.kind == "f" and d.itemsize <= 4 or d == _dt.BFLOAT16 else _dt.F64
    return x if d == want else bind(E.convert_p, x, dtype=want)


def _resize(x, axis, n):
    if n is None or n == -1 or x.shape[axis] == n:      # -1: s=-1 of a size unknown while tracing
        return x
    return bind(F.resize_p, x, axis=axis, n=n)


def _finish(y, out, half=False):
    """NumPy gives float16 results for float16 input of the real-output transforms; `out` is
    filled in place (also where NumPy 2.x ignores it: ifft2, irfft2, hfft)."""
    if half:
        y = bind(E.convert_p, y, dtype=_F16)
    if out is None:
        return y
    if not isinstance(out, ndarray):
        raise TypeError(f"out must be an ndflow array, got {type(out).__name__}")
    if tuple(out.shape) != tuple(y.shape):
        raise ValueError(f"output array has wrong shape: {tuple(out.shape)}, the result has "
                         f"shape {tuple(y.shape)}")
    if not np.can_cast(y.dtype, out.dtype, "same_kind"):
        raise TypeError(f"Cannot cast the FFT result from {y.dtype} to the out array's "
                        f"{out.dtype} with casting rule 'same_kind'")
    out[...] = y
    return out


def _is_half(a):
    return getattr(a, "dtype", None) == _F16 or (
        not isinstance(a, ndarray) and np.asarray(a).dtype == _F16)


# ------------------------------------------------------------------ 1-D transforms
def _c2c(a, n, axis, norm, inverse):
    x = _as_complex(a)
    ax = _axis(axis, x)
    x = _resize(x, ax, None if n is None or n == -1 else _length(n))
    return bind(F.fft_p, x, axis=ax, inverse=inverse, norm=_norm(norm))


def _r2c(a, n, axis, norm, func="rfft"):
    x = _as_real(a, func)
    ax = _axis(axis, x)
    x = _resize(x, ax, None if n is None or n == -1 else _length(n))
    return bind(F.rfft_p, x, axis=ax, norm=_norm(norm))


def _c2r(a, n, axis, norm):
    z = _as_complex(a)
    ax = _axis(axis, z)
    if n is None:
        m = z.shape[ax]
        if m is not None and 2 * (m - 1) < 1:
            raise ValueError(f"Invalid number of FFT data points ({2 * (m - 1)}) specified.")
    elif n == -1:
        raise ValueError("irfftn: s[-1] = -1 asks for an output as long as the input along that "
                         "axis, a size unknown while tracing; pass the size itself")
    else:
        n = _length(n)
        z = _resize(z, ax, n // 2 + 1)
    return bind(F.irfft_p, z, axis=ax, n=n, norm=_norm(norm))


def fft(a, n=None, axis=-1, norm=None, out=None):
    """One-dimensional discrete Fourier transform, as `numpy.fft.fft`."""
    return _finish(_c2c(a, n, axis, norm, False), out)


def ifft(a, n=None, axis=-1, norm=None, out=None):
    """One-dimensional inverse discrete Fourier transform, as `numpy.fft.ifft`."""
    return _finish(_c2c(a, n, axis, norm, True), out)


def rfft(a, n=None, axis=-1, norm=None, out=None):
    """DFT of real input (the n//2 + 1 non-negative frequencies), as `numpy.fft.rfft`."""
    return _finish(_r2c(a, n, axis, norm), out)


def irfft(a, n=None, axis=-1, norm=None, out=None):
    """Inverse of `rfft` (real output of length n, default 2 * (m - 1)), as `numpy.fft.irfft`."""
    return _finish(_c2r(a, n, axis, norm), out, _is_half(a))


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """DFT of a signal with Hermitian symmetry (real spectrum), as `numpy.fft.hfft`: the irfft
    of the conjugate with the opposite normalization."""
    x = asarray(a)
    return _finish(_c2r(_conjugate(x), n, axis, _SWAP[_norm(norm)]), out, _is_half(x))


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """Inverse of `hfft` (real input, half spectrum out), as `numpy.fft.ihfft`."""
    return _finish(bind(E.conj_p, _r2c(a, n, axis, _SWAP[_norm(norm)], "ihfft")), out)


# ------------------------------------------------------------------ n-D transforms
def _cook_nd_args(x, s, axes, invreal=False):
    """NumPy's rules for `s` and `axes` (with its deprecations): the sizes per axis (None = the
    input's own, left unresized) and the normalized axes."""
    shapeless = s is None
    if shapeless:
        axes_ = list(range(x.ndim)) if axes is None else [operator.index(a) for a in axes]
        s = [None] * len(axes_)
    else:
        s = [None if v is None else operator.index(v) for v in s]
        if axes is None:
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in "
                          "NumPy 2.0). In a future version of NumPy, this will raise an error "
                          "and `s[i]` will correspond to the size along the transformed axis "
                          "specified by `axes[i]`. To retain current behaviour, pass a sequence "
                          "[0, ..., k-1] to `axes` for an array of dimension k.",
                          DeprecationWarning, stacklevel=4)
            axes_ = list(range(-len(s), 0))
        else:
            axes_ = [operator.index(a) for a in axes]
    if len(s) != len(axes_):
        raise ValueError(f"Shape and axes have different lengths: s has {len(s)} entries, axes "
                         f"{len(axes_)}.")
    if not shapeless and None in s:
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in NumPy "
                      "2.0 and will raise an error in a future version of NumPy. To use the "
                      "default behaviour of the corresponding 1-D transform, pass the value "
                      "matching the default for its `n` parameter. To use the default behaviour "
                      "for every axis, the `s` argument can be omitted.",
                      DeprecationWarning, stacklevel=4)
    axes_ = [_axis(a, x) for a in axes_]
    if shapeless:
        # the input's sizes, as NumPy: they matter when an axis repeats (rfftn's later
        # transforms then pad the half spectrum back); irfftn's last axis takes irfft's default
        s = [x.shape[ax] for ax in axes_]
        if invreal:
            s[-1] = None
    else:
        # -1: the whole input along that axis (None: the 1-D transform's default)
        s = [(x.shape[ax] if x.shape[ax] is not None else -1) if v == -1 else v
             for v, ax in zip(s, axes_)]
    return s, axes_


def _c2c_nd(a, s, axes, norm, inverse, out):
    x = _as_complex(a)
    s, axes = _cook_nd_args(x, s, axes)
    if not axes:
        return _finish(asarray(a), out)
    for n, ax in reversed(list(zip(s, axes))):
        x = _c2c(x, n, ax, norm, inverse)
    return _finish(x, out)


def fftn(a, s=None, axes=None, norm=None, out=None):
    """N-dimensional DFT, as `numpy.fft.fftn` (1-D transforms over `axes`, last first)."""
    return _c2c_nd(a, s, axes, norm, False, out)


def ifftn(a, s=None, axes=None, norm=None, out=None):
    """N-dimensional inverse DFT, as `numpy.fft.ifftn`."""
    return _c2c_nd(a, s, axes, norm, True, out)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """Two-dimensional DFT, as `numpy.fft.fft2`."""
    return _c2c_nd(a, s, axes, norm, False, out)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """Two-dimensional inverse DFT, as `numpy.fft.ifft2` (fills `out` when given; NumPy 2.x
    ignores it)."""
    return _c2c_nd(a, s, axes, norm, True, out)


def rfftn(a, s=None, axes=None, norm=None, out=None):
    """N-dimensional DFT of real input (half spectrum along the last axis), as
    `numpy.fft.rfftn`."""
    x = _as_real(a, "rfftn")
    s, axes = _cook_nd_args(x, s, axes)
    if not axes:
        raise IndexError("rfftn: axes must name at least one axis")
    y = _r2c(x, s[-1], axes[-1], norm)
    for n, ax in reversed(list(zip(s[:-1], axes[:-1]))):
        if n is None and ax == axes[-1]:
            # a repeated rfft axis of a size unknown while tracing: NumPy pads the half
            # spectrum back to the input's length
            y = bind(F.resize_p, y, x, axis=ax, like_axis=ax)
        y = _c2c(y, n, ax, norm, False)
    return _finish(y, out)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """Two-dimensional DFT of real input, as `numpy.fft.rfft2`."""
    return rfftn(a, s, axes, norm, out)


def irfftn(a, s=None, axes=None, norm=None, out=None):
    """Inverse of `rfftn`, as `numpy.fft.irfftn`."""
    half = _is_half(a)
    z = _as_complex(a)
    s, axes = _cook_nd_args(z, s, axes, invreal=True)
    if not axes:
        raise IndexError("irfftn: axes must name at least one axis")
    for n, ax in zip(s[:-1], axes[:-1]):
        z = _c2c(z, n, ax, norm, True)
    # float16 stays float16 only when irfft sees it directly (NumPy's ifft first makes complex64)
    return _finish(_c2r(z, s[-1], axes[-1], norm), out, half and len(axes) == 1)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """Inverse of `rfft2`, as `numpy.fft.irfft2` (fills `out` when given; NumPy 2.x ignores
    it)."""
    return irfftn(a, s, axes, norm, out)


# ------------------------------------------------------------------ frequencies
def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n should be an integer, got {n!r}")
    return int(n)


def _freqs(ints, n, d, device, dtype):
    """`ints / (n d)`: a constant, differentiable in `d` when it is an ndflow array; in `dtype`
    when given (a real floating dtype, as the Array API asks)."""
    if device not in (None, "cpu"):
        return _on_device(device, _freqs, ints, n, d, None, dtype)
    r = asarray(ints) * (1.0 / (n * d))
    if dtype is not None:
        d_ = _dt.canonical(dtype)
        if d_.kind != "f" and d_ != _dt.BFLOAT16:
            raise ValueError(f"dtype must be a real floating dtype, got {d_}")
        if r.dtype != d_:
            r = r.astype(d_)
    return r


def fftfreq(n, d=1.0, device=None, *, dtype=None):
    """Sample frequencies of `fft` for a signal of length n and sample spacing d, as
    `numpy.fft.fftfreq` (`device` also accepts ndflow device names; `dtype` as the Array
    API's)."""
    n = _check_n(n)
    ints = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _freqs(ints, n, d, device, dtype)


def rfftfreq(n, d=1.0, device=None, *, dtype=None):
    """Sample frequencies of `rfft` (the n//2 + 1 non-negative ones), as `numpy.fft.rfftfreq`
    (`dtype` as the Array API's)."""
    n = _check_n(n)
    return _freqs(np.arange(0, n // 2 + 1), n, d, device, dtype)


# ------------------------------------------------------------------ shifts
def _roll_half(x, axis, inverse):
    """Roll by n//2 along `axis` (by -(n//2) for the inverse shift)."""
    n = x.shape[axis]
    if n is None:
        # a size known at run time only: gather with indices computed then
        size = _shape_of(x, out_type=np.int64)[axis]
        shift = size // 2 if inverse else -(size // 2)
        return _take(x, _reshape(bind(_iota_p, x, axis=axis), (-1,)) + shift, axis=axis,
                    mode="wrap")
    k = n // 2 if inverse else n - n // 2
    if k in (0, n):
        return x
    lo = (slice(None),) * axis + (slice(k, None),)
    hi = (slice(None),) * axis + (slice(0, k),)
    return _concatenate([x[lo], x[hi]], axis=axis)


def _shift(x, axes, inverse):
    x = asarray(x)
    if axes is None:
        axes = range(x.ndim)
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    for ax in axes:
        x = _roll_half(x, norm_axis(operator.index(ax), x.ndim), inverse)
    return x


def fftshift(x, axes=None):
    """Move the zero frequency to the centre (roll by n//2 along `axes`, all by default), as
    `numpy.fft.fftshift`."""
    return _shift(x, axes, False)


def ifftshift(x, axes=None):
    """Inverse of `fftshift` (roll by -(n//2)), as `numpy.fft.ifftshift`."""
    return _shift(x, axes, True)
