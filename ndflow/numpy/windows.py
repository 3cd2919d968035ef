"""Window functions (bartlett, blackman, hamming, hanning, kaiser), as NumPy's: float64
(float32 under prefer_float32), computed with ndflow operations so that `kaiser` is
differentiable in `beta`."""
import numpy as np

from ..core.ndarray import ndarray
from ..core.state import STATE
from ._core import asarray
from .creation import zeros, ones, arange
from .math import where_ as where, cos, absolute, minimum, maximum, exp, sqrt


def _size(M):
    if isinstance(M, ndarray):
        M = M.item()
    v = np.array([0.0, M])      # NumPy's own conversion of M (ints, floats)
    return float(v[1]), v.dtype


def _out(a):
    if STATE.prefer_float32 and a.dtype == np.float64:
        return a.astype(np.float32)
    return a


def _small(M, dt):
    if M < 1:
        return zeros((0,), dt)
    return ones((1,), dt)


def _n(M):
    return arange(1 - M, M, 2)


def bartlett(M):
    """The triangular window, as `numpy.bartlett`."""
    M, dt = _size(M)
    if M <= 1:
        return _out(_small(M, dt))
    n = _n(M)
    return _out(where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1)))


def blackman(M):
    """The Blackman window, as `numpy.blackman`."""
    M, dt = _size(M)
    if M <= 1:
        return _out(_small(M, dt))
    n = _n(M)
    return _out(0.42 + 0.5 * cos(np.pi * n / (M - 1)) + 0.08 * cos(2.0 * np.pi * n / (M - 1)))


def hamming(M):
    """The Hamming window, as `numpy.hamming`."""
    M, dt = _size(M)
    if M <= 1:
        return _out(_small(M, dt))
    return _out(0.54 + 0.46 * cos(np.pi * _n(M) / (M - 1)))


def hanning(M):
    """The Hann window, as `numpy.hanning`."""
    M, dt = _size(M)
    if M <= 1:
        return _out(_small(M, dt))
    return _out(0.5 + 0.5 * cos(np.pi * _n(M) / (M - 1)))


# ------------------------------------------------------------------ modified Bessel I0
_SERIES_MAX = 30.0      # power series below, asymptotic expansion above


def _i0(x):
    """The modified Bessel function of the first kind, order 0 (NumPy's `i0` uses Cephes'
    Chebyshev fits; this uses the power series sum (x/2)^2k / k!^2 for |x| <= 30, 50 terms, and
    the asymptotic expansion e^x / sqrt(2 pi x) sum ((2k-1)!!)^2 / (k! (8x)^k) above, 15 terms:
    both accurate to about 1e-15 relative). Composed of ndflow operations: differentiable."""
    x = asarray(x)
    ax = absolute(x)
    # the series in x itself (not |x|: even, and smooth at 0 to every order)
    xs = maximum(minimum(x, _SERIES_MAX), -_SERIES_MAX)
    q = xs * xs / 4.0
    term = q * 0 + 1.0
    total = term
    for k in range(1, 50):
        term = term * q / (k * k)
        total = total + term
    xl = maximum(ax, _SERIES_MAX)
    t = xl * 0 + 1.0
    acc = t
    for k in range(1, 15):
        t = t * ((2 * k - 1) ** 2) / (8.0 * k * xl)
        acc = acc + t
    # sqrt(xl) apart from 2 pi: 2 pi xl overflows near the dtype's max, and inf / inf would be
    # NaN where NumPy's e^x / sqrt(x) is inf (at x = inf both are NaN, as NumPy's)
    big = exp(xl) / sqrt(xl) / float(np.sqrt(2 * np.pi)) * acc
    return where(ax <= _SERIES_MAX, total, big)


def kaiser(M, beta):
    """The Kaiser window, as `numpy.kaiser`: i0(beta sqrt(1 - ((n - alpha)/alpha)^2)) /
    i0(beta); differentiable in `beta` (an ndflow array, or a Python number)."""
    M, _ = _size(M)
    b = beta if not isinstance(beta, ndarray) else beta.astype(np.float64)
    if not isinstance(b, ndarray):
        b = float(np.array([0.0, M, b])[2])
    if M == 1:
        return _out(ones(1, np.float64))
    n = arange(0, M)
    alpha = (M - 1) / 2.0
    return _out(_i0(b * sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / _i0(b))
