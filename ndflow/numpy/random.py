"""`tnp.random`: NumPy's legacy module functions and `default_rng` Generators.

Draws are primitives with effects: inside `nf.function` every call draws fresh numbers."""
import numpy as np

from ..core.primitive import bind
from ..core import dtypes as _dt
from ..primitives import random as Rp


def seed(seed=None):
    """Seed the global stream (same algorithm as NumPy's legacy RandomState)."""
    Rp.seed(seed)


def _size(size):
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


def _f(dtype=None):
    return _dt.default_float() if dtype is None else _dt.canonical(dtype)


def _float_param(v):
    return float(v) if np.ndim(v) == 0 else None


def randn(*shape):
    """Standard normal samples of the given shape (float64; float32 with prefer_float32)."""
    return bind(Rp.normal_p, shape=_size(shape), dtype=_f())


def standard_normal(size=None, dtype=None):
    return bind(Rp.normal_p, shape=_size(size), dtype=_f(dtype))


def normal(loc=0.0, scale=1.0, size=None):
    if np.ndim(loc) or np.ndim(scale):
        from .manipulation import broadcast_shapes_
        shape = broadcast_shapes_(np.shape(loc), np.shape(scale), _size(size)) if size is None else _size(size)
        return standard_normal(shape) * scale + loc
    return bind(Rp.normal_p, shape=_size(size), dtype=_f(), loc=float(loc), scale=float(scale))


def rand(*shape):
    return bind(Rp.uniform_p, shape=_size(shape), dtype=_f())


def random(size=None):
    return bind(Rp.uniform_p, shape=_size(size), dtype=_f())


random_sample = random
sample = random


def uniform(low=0.0, high=1.0, size=None):
    return bind(Rp.uniform_p, shape=_size(size), dtype=_f(), low=float(low), high=float(high))


def randint(low, high=None, size=None, dtype=int):
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("high <= low")
    return bind(Rp.randint_p, shape=_size(size), dtype=_dt.canonical(dtype), low=int(low),
                high=int(high))


class Generator:
    """A reproducible stream, as `numpy.random.Generator` (PCG64), whose draws are ndflow arrays
    and happen at run time inside `nf.function`."""

    def __init__(self, seed=None):
        self._g = np.random.default_rng(seed)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=None):
        return bind(Rp.normal_p, shape=_size(size), dtype=_f(dtype), loc=float(loc),
                    scale=float(scale), rs=self._g)

    def standard_normal(self, size=None, dtype=None):
        return self.normal(0.0, 1.0, size, dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=None):
        return bind(Rp.uniform_p, shape=_size(size), dtype=_f(dtype), low=float(low),
                    high=float(high), rs=self._g)

    def random(self, size=None, dtype=None):
        return self.uniform(0.0, 1.0, size, dtype)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if high is None:
            low, high = 0, low
        if endpoint:
            high += 1
        return bind(Rp.randint_p, shape=_size(size), dtype=_dt.canonical(dtype), low=int(low),
                    high=int(high), rs=self._g)


def default_rng(seed=None):
    return Generator(seed)
