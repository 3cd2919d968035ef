"""`scipy.signal.convolve` / `correlate` in ndflow (method 'direct', N-dimensional), composed
of ndflow operations: one shifted multiply-add per element of the smaller array, so they
differentiate in both inputs, compile and vectorize. Cost: in1.size * in2.size, as SciPy's
direct method; use small kernels."""
import itertools

import numpy as np

from ..core.ndarray import static_size as _static_size
from .. import numpy as tnp

__all__ = ["convolve", "correlate"]


def _check(name, in1, in2, mode, method):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{name}: acceptable mode flags are 'valid', 'same', or 'full', got "
                         f"{mode!r}")
    if method not in ("direct", "auto"):
        raise ValueError(f"{name}: only method='direct' (or 'auto', which means direct here) "
                         f"is implemented, got {method!r}")
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if any(d is None for d in in1.shape + in2.shape):
        raise ValueError(f"{name}: array sizes must be known while tracing")


def _empty(name, in1, in2, method):
    """SciPy's answer for an empty operand: 1-D raises (NumPy's messages, or for correlate
    with method 'direct' its own), N-D returns the empty full result or raises."""
    if in1.ndim == 1:
        first, second = ("first array argument", "second array argument") if (
            name == "correlate" and method == "direct") else ("a", "v")
        raise ValueError(f"{first if _static_size(in1) == 0 else second} cannot be empty")
    if _static_size(in2) == 0:
        raise ValueError(f"{name}: in2 is empty, so no element of the result is defined")


def _full_convolve(in1, in2):
    """sum over kernel positions j of in2[j] * in1 placed at offset j."""
    out_shape = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
    dt = np.result_type(in1.dtype, in2.dtype)
    out = tnp.zeros(out_shape, dtype=dt)
    for idx in itertools.product(*[range(k) for k in in2.shape]):
        pads = [(j, o - j - s) for j, o, s in zip(idx, out_shape, in1.shape)]
        # the products, then the zeros: padding times an infinite coefficient (0 * inf) is
        # no term of SciPy's direct sum
        out = out + tnp.pad(in1 * in2[idx], pads)
    return out


def _centered(arr, shape):
    start = [(a - s) // 2 for a, s in zip(arr.shape, shape)]
    return arr[tuple(slice(st, st + s) for st, s in zip(start, shape))]


def _valid_order(in1, in2):
    """For mode 'valid': whether in1 is at least as large as in2 in every dimension (else in2
    must be as large as in1 in every dimension: SciPy's ValueError otherwise)."""
    ok1 = all(a >= b for a, b in zip(in1.shape, in2.shape))
    ok2 = all(b >= a for a, b in zip(in1.shape, in2.shape))
    if not (ok1 or ok2):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in "
                         "every dimension")
    return ok1


def convolve(in1, in2, mode="full", method="auto"):
    """N-dimensional convolution, as `scipy.signal.convolve` (method 'direct')."""
    in1, in2 = tnp.asarray(in1), tnp.asarray(in2)
    _check("convolve", in1, in2, mode, method)
    if in1.ndim == 0:
        return in1 * in2
    if _static_size(in1) == 0 or _static_size(in2) == 0:
        _empty("convolve", in1, in2, method)
    if mode == "valid":
        ok1 = _valid_order(in1, in2)
        if not ok1:
            in1, in2 = in2, in1
    # loop over the smaller operand's elements
    big, small = (in1, in2) if _static_size(in1) >= _static_size(in2) else (in2, in1)
    full = _full_convolve(big, small)
    if mode == "full":
        return full
    if mode == "same":
        return _centered(full, in1.shape)
    return _centered(full, tuple(a - b + 1 for a, b in zip(in1.shape, in2.shape)))


def correlate(in1, in2, mode="full", method="auto"):
    """N-dimensional cross-correlation, as `scipy.signal.correlate` (method 'direct'):
    convolve(in1, reversed conj(in2))."""
    in1, in2 = tnp.asarray(in1), tnp.asarray(in2)
    _check("correlate", in1, in2, mode, method)
    if in1.ndim == 0:
        return in1 * tnp.conj(in2)
    if in1.size == 0 or in2.size == 0:
        _empty("correlate", in1, in2, method)
    if mode == "valid":
        ok1 = _valid_order(in1, in2)
        if not ok1:       # SciPy: swap, correlate, and reverse (conjugated) the result
            out = correlate(in2, in1, mode)
            return tnp.conj(tnp.flip(out))
    rev = tnp.flip(tnp.conj(in2)) if in2.dtype.kind == "c" else tnp.flip(in2)
    return convolve(in1, rev, mode)
