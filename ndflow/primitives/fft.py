"""Discrete Fourier transforms: four 1-D primitives; the n-D, Hermitian and shifted transforms
are composed in `ndflow/numpy/fft.py`.

    fft_p(x; axis, inverse, norm)                     complex -> complex, same length
    rfft_p(x; axis, norm, weights)                    real (n) -> complex (n//2 + 1)
    irfft_p(z, [like]; axis, n, norm, weights, ...)   complex (n//2 + 1) -> real (n)
    resize_p(x, [like]; axis, n, ...)                 crop or zero-pad one axis (NumPy's `n=`)

`norm` is NumPy's ('backward', 'ortho', 'forward'); `axis` is non-negative.

Complex cotangents follow the convention of every rule in ndflow (JAX's): cotangents pair with
tangents bilinearly, <ct, t> = Re(sum(ct * t)), so the VJP of a linear map A is its plain
transpose A^T (not the conjugate transpose), and a real input takes the real part. Gradients of
real-valued losses through complex intermediates are then the same as TensorFlow's and JAX's.
The DFT matrix is symmetric, so under this convention the VJP of a DFT is the same DFT with the
same scaling (equivalently: the adjoint F^H = n F^-1 is a scaled inverse DFT, conjugated on both
sides). rfft/irfft keep half of a Hermitian spectrum, and their transposes weight the interior
bins (not the DC bin, nor the Nyquist bin of an even length) by 1/2 and 2: `weights=k` multiplies
the interior bins of the spectrum by 2**k (on the output of rfft_p, on the input of irfft_p)
inside the kernel, where the length, known at run time, says which bins are interior. The
transposes map rfft_p(weights=k) -> irfft_p(weights=k-1) -> rfft_p(weights=k), so every order of
derivative stays within these primitives.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from .elementwise import conj_p

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _check_length(n, what="FFT data points"):
    if n is not None and n < 1:
        raise ValueError(f"Invalid number of {what} ({n}) specified.")


def _complex_of(dtype):
    return np.result_type(dtype, np.complex64)


def _real_of(dtype):
    d = np.dtype(dtype)
    return np.dtype("f%d" % (d.itemsize // 2)) if d.kind == "c" else d


def _shift_axis(axis, bd):
    """`axis` of the per-example value, in the value whose batch axis is `bd`."""
    return axis + 1 if bd is not None and bd <= axis else axis


def _weight_interior(y, axis, n, weights):
    """Multiply the interior bins of a half spectrum (length n//2 + 1 along `axis`, for a signal
    of length n) by 2**weights, in place."""
    hi = n // 2 + (n % 2)          # bins 1 .. hi-1 are interior (the Nyquist bin of even n is not)
    if weights and hi > 1:
        idx = [slice(None)] * y.ndim
        idx[axis] = slice(1, hi)
        y[tuple(idx)] *= 2.0 ** weights
    return y


# ------------------------------------------------------------------ fft (complex <-> complex)
def _fft_impl(x, axis, inverse, norm):
    return (np.fft.ifft if inverse else np.fft.fft)(x, axis=axis, norm=norm)


def _fft_abstract(x, axis, inverse, norm):
    if np.dtype(x.dtype).kind != "c":
        raise TypeError(f"fft: expects a complex input, got {x.dtype}")
    _check_length(x.shape[axis])
    return Aval(x.shape, x.dtype)


fft_p = Primitive("fft", _fft_impl, _fft_abstract)
# the DFT matrix (either direction, any scaling) is symmetric: its transpose is itself
fft_p.def_vjp(lambda ct, x, axis, inverse, norm: (
    bind(fft_p, ct, axis=axis, inverse=inverse, norm=norm),))
fft_p.batch = lambda args, dims, axis, inverse, norm: (
    bind(fft_p, args[0], axis=_shift_axis(axis, dims[0]), inverse=inverse, norm=norm), dims[0])


# ------------------------------------------------------------------ rfft (real -> half spectrum)
def _rfft_impl(x, axis, norm, weights=0):
    y = np.fft.rfft(x, axis=axis, norm=norm)
    return _weight_interior(y, axis, x.shape[axis], weights)


def _rfft_abstract(x, axis, norm, weights=0):
    if np.dtype(x.dtype).kind != "f":
        raise TypeError(f"rfft: expects a real floating input, got {x.dtype}")
    n = x.shape[axis]
    _check_length(n)
    shape = list(x.shape)
    shape[axis] = None if n is None else n // 2 + 1
    return Aval(shape, _complex_of(x.dtype))


def _rfft_vjp(ct, x, axis, norm, weights=0):
    """y = s W R x (R: first n//2+1 rows of the DFT), so ct_x = s Re(R^T W ct)
    = s C2R(W/2 conj(ct)): c2r counts the interior bins twice (their conjugate images)."""
    n = x.shape[axis]
    like = () if n is not None else (x,)
    return (bind(irfft_p, bind(conj_p, ct), *like, axis=axis, n=n, norm=_SWAP[norm],
                 weights=weights - 1, like_axis=axis if like else None),)


def _rfft_batch(args, dims, axis, norm, weights=0):
    return bind(rfft_p, args[0], axis=_shift_axis(axis, dims[0]), norm=norm,
                weights=weights), dims[0]


rfft_p = Primitive("rfft", _rfft_impl, _rfft_abstract)
rfft_p.def_vjp(_rfft_vjp)
rfft_p.batch = _rfft_batch


# ------------------------------------------------------------------ irfft (half spectrum -> real)
# The output length is `n`, or like.shape[like_axis] (a length known only at run time: the
# transpose of an rfft traced with unknown sizes), or NumPy's default 2 * (m - 1). The input has
# n//2 + 1 bins along `axis` (the NumPy layer crops or pads it first).
def _irfft_length(z_len, n, like_len):
    if n is not None:
        return n
    if like_len is not None:
        return like_len
    return None if z_len is None else 2 * (z_len - 1)


def _irfft_impl(z, *like, axis, n, norm, weights=0, like_axis=None):
    n = _irfft_length(z.shape[axis], n, like[0].shape[like_axis] if like else None)
    if weights:
        z = _weight_interior(z.copy(), axis, n, weights)
    return np.fft.irfft(z, n=n, axis=axis, norm=norm)


def _irfft_abstract(z, *like, axis, n, norm, weights=0, like_axis=None):
    if np.dtype(z.dtype).kind != "c":
        raise TypeError(f"irfft: expects a complex input, got {z.dtype}")
    out_n = _irfft_length(z.shape[axis], n, like[0].shape[like_axis] if like else None)
    _check_length(out_n, "data points")
    shape = list(z.shape)
    shape[axis] = out_n
    return Aval(shape, _real_of(z.dtype))


def _irfft_vjp(ct, z, *like, axis, n, norm, weights=0, like_axis=None):
    """y = s C2R(W z) is real-linear; its transpose is ct_z = s W D conj(R ct), D = 2 on the
    interior bins (each stands for itself and its conjugate image)."""
    g = bind(conj_p, bind(rfft_p, ct, axis=axis, norm=_SWAP[norm], weights=weights + 1))
    return (g,) + (None,) * len(like)


def _irfft_batch(args, dims, axis, n, norm, weights=0, like_axis=None):
    z, bz = args[0], dims[0]
    like = args[1:]
    if like:
        like_axis = _shift_axis(like_axis, dims[1])
    if bz is None:     # only `like` is batched: it gives a length, the same for every example
        return bind(irfft_p, z, *like, axis=axis, n=n, norm=norm, weights=weights,
                    like_axis=like_axis), None
    return bind(irfft_p, z, *like, axis=_shift_axis(axis, bz), n=n, norm=norm, weights=weights,
                like_axis=like_axis), bz


irfft_p = Primitive("irfft", _irfft_impl, _irfft_abstract)
irfft_p.def_vjp(_irfft_vjp)
irfft_p.batch = _irfft_batch


# ------------------------------------------------------------------ resize (crop or zero-pad)
# NumPy's `n=`/`s=`: the input is cropped or padded with zeros at the end of `axis` to length n,
# or to like.shape[like_axis] (the transpose, when the original length is known at run time only).
def _resize_impl(x, *like, axis, n=None, like_axis=None):
    if n is None:
        n = like[0].shape[like_axis]
    m = x.shape[axis]
    if m == n:
        return x
    idx = [slice(None)] * x.ndim
    if m > n:
        idx[axis] = slice(0, n)
        return x[tuple(idx)]
    shape = list(x.shape)
    shape[axis] = n
    out = np.zeros_like(x, shape=tuple(shape))
    idx[axis] = slice(0, m)
    out[tuple(idx)] = x
    return out


def _resize_abstract(x, *like, axis, n=None, like_axis=None):
    shape = list(x.shape)
    shape[axis] = n if n is not None else like[0].shape[like_axis]
    return Aval(shape, x.dtype)


def _resize_vjp(ct, x, *like, axis, n=None, like_axis=None):
    """Cropping and zero-padding are each other's transposes."""
    m = x.shape[axis]
    if m is not None:
        g = bind(resize_p, ct, axis=axis, n=m)
    else:
        g = bind(resize_p, ct, x, axis=axis, like_axis=axis)
    return (g,) + (None,) * len(like)


def _resize_batch(args, dims, axis, n=None, like_axis=None):
    x, bx = args[0], dims[0]
    like = args[1:]
    if like:
        like_axis = _shift_axis(like_axis, dims[1])
    if bx is None:
        return bind(resize_p, x, *like, axis=axis, n=n, like_axis=like_axis), None
    return bind(resize_p, x, *like, axis=_shift_axis(axis, bx), n=n, like_axis=like_axis), bx


resize_p = Primitive("fft_resize", _resize_impl, _resize_abstract, returns_view=True)
resize_p.def_vjp(_resize_vjp)
resize_p.batch = _resize_batch
