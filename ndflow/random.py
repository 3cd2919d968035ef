"""`nf.random`: TensorFlow's random functions (float32 by default), drawn from ndflow's random
primitives, so inside `nf.function` every call draws fresh numbers.

The op-level `seed` arguments are accepted for compatibility and ignored; `nf.random.set_seed`
seeds the global stream (shared with `tnp.random`)."""
import math

import numpy as np

from . import numpy as tnp
from .core.ndarray import ndarray
from .core import dtypes as _dt

__all__ = ["normal", "uniform", "truncated_normal", "set_seed"]


def set_seed(seed):
    """Seed the global random stream (as `tf.random.set_seed`; also seeds `tnp.random`)."""
    tnp.random.seed(seed)


def _shape(shape):
    if isinstance(shape, ndarray):
        shape = shape.numpy().tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _is_scalar(v):
    return not isinstance(v, ndarray) and np.ndim(v) == 0


def _scale_shift(z, mean, stddev):
    if not (_is_scalar(stddev) and float(stddev) == 1.0):
        z = z * (tnp.asarray(stddev, z.dtype) if not _is_scalar(stddev) else float(stddev))
    if not (_is_scalar(mean) and float(mean) == 0.0):
        z = z + (tnp.asarray(mean, z.dtype) if not _is_scalar(mean) else float(mean))
    return z


def normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    """Samples from N(mean, stddev**2) of the given shape, float32 by default, as
    `tf.random.normal`; with `seed`, the same samples for the same seed.

    Examples
    --------
    >>> import ndflow as nf
    >>> x = nf.random.normal([1000], mean=5.0, stddev=0.1, seed=1)
    >>> x.dtype, bool(abs(float(nf.reduce_mean(x)) - 5.0) < 0.05)
    (dtype('float32'), True)
    """
    d = _dt.canonical(dtype)
    return _scale_shift(tnp.random._rand._draw("standard_normal", _shape(shape), dtype=d), mean,
                        stddev)


def uniform(shape, minval=0, maxval=None, dtype=np.float32, seed=None, name=None):
    """Samples uniform in [minval, maxval) (maxval 1 for floats; required for integers), float32
    by default, as `tf.random.uniform`.

    Examples
    --------
    >>> import ndflow as nf
    >>> x = nf.random.uniform([100], minval=-1, maxval=1, seed=3)
    >>> bool(nf.reduce_all((x >= -1) & (x < 1)))
    True
    >>> nf.random.uniform([3], maxval=10, dtype=nf.int32, seed=3).dtype
    dtype('int32')
    """
    d = _dt.canonical(dtype)
    shape = _shape(shape)
    if d.kind in "iu":
        if maxval is None:
            raise ValueError("nf.random.uniform: maxval must be given for integer dtypes")
        return tnp.random.randint(int(minval), int(maxval), shape, dtype=d)
    if maxval is None:
        maxval = 1.0
    if _is_scalar(minval) and _is_scalar(maxval):
        return _uniform(shape, d, float(minval), float(maxval))
    lo = tnp.asarray(minval, d)
    return lo + _uniform(shape, d, 0.0, 1.0) * (tnp.asarray(maxval, d) - lo)


def _uniform(shape, d, low, high):
    return tnp.random._rand._draw("uniform", shape, (("low", low), ("high", high)), dtype=d)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), central branch
# (w < 5, enough for |x| <= erf(sqrt 2)); |erf(erfinv(x)) - x| < 5e-8 there.
_ERFINV = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
           -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_SQRT2 = math.erf(math.sqrt(2.0))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    """Samples from N(mean, stddev**2) conditioned on lying within 2 stddev of the mean, as
    `tf.random.truncated_normal` (drawn by inverting the CDF of a uniform draw, so there is no
    rejection loop and it works the same inside `nf.function`)."""
    d = _dt.canonical(dtype)
    x = _uniform(_shape(shape), d, -TRUNCATED_UNIFORM_BOUND, TRUNCATED_UNIFORM_BOUND)
    return _scale_shift(truncated_from_uniform(x), mean, stddev)


TRUNCATED_UNIFORM_BOUND = _ERF_SQRT2


def truncated_from_uniform(x):
    """Standard normal samples truncated to [-2, 2] from samples `x` uniform in
    (-erf(sqrt 2), erf(sqrt 2)): sqrt(2) erfinv(x). (Also used by `nf.initializers` on draws
    from a seeded generator.)"""
    w = -tnp.log((1 - x) * (1 + x)) - 2.5
    p = _ERFINV[0]
    for c in _ERFINV[1:]:
        p = c + p * w
    return tnp.clip(p * x * math.sqrt(2.0), -2.0, 2.0)
