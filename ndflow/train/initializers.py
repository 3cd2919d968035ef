"""Weight initializers (`nf.initializers`), as `keras.initializers`: `init(shape, dtype=None)`
gives a new array, float32 by default.

Random initializers draw from ndflow's random primitives. With an integer `seed` every call
gives the same values (Keras); with `seed=None` each call draws fresh values from the global
stream, which `nf.random.set_seed` makes reproducible."""
import math

import numpy as np

from .. import numpy as tnp
from ..core.primitive import bind
from ..core import dtypes as _dt
from .. import random as _nfrandom

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal",
           "HeUniform", "LecunNormal", "LecunUniform", "Orthogonal", "Identity", "get",
           "serialize", "deserialize", "compute_fans"]


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _dtype(dtype):
    return _dt.F32 if dtype is None else _dt.canonical(dtype)


def compute_fans(shape):
    """(fan_in, fan_out) of a weight of `shape`: a dense kernel is (in, out); a convolution
    kernel (*receptive_field, in, out) counts the receptive field."""
    shape = _shape(shape)
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: `init(shape, dtype=None)` returns an array of that shape."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in self.get_config().items()))


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape, dtype=None):
        return tnp.zeros(_shape(shape), _dtype(dtype))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape, dtype=None):
        return tnp.ones(_shape(shape), _dtype(dtype))


class Constant(Initializer):
    """Every element `value` (a scalar, or an array broadcast to the shape)."""

    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        return tnp.full(_shape(shape), self.value, _dtype(dtype))

    def get_config(self):
        return {"value": self.value}


class _Random(Initializer):
    def __init__(self, seed=None):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"{type(self).__name__}: seed must be an integer or None, got "
                             f"{seed!r}")
        self.seed = seed

    def _float(self, dtype):
        d = _dtype(dtype)
        if d.kind != "f" and d != _dt.BFLOAT16:
            raise ValueError(f"{type(self).__name__} needs a floating-point dtype, got "
                             f"{d.name}")
        return d

    def _stream(self):
        # a fresh generator per call: a seeded initializer repeats its values (Keras); unseeded
        # ones draw from the global stream (nf.random.set_seed makes them reproducible)
        return tnp.random if self.seed is None else tnp.random.default_rng(self.seed)

    def _normal(self, shape, dtype, mean, stddev):
        z = self._stream().standard_normal(size=shape)
        return (z * stddev + mean).astype(dtype)

    def _uniform(self, shape, dtype, low, high):
        return self._stream().uniform(low, high, size=shape).astype(dtype)

    def _truncated(self, shape, dtype, mean, stddev):
        b = _nfrandom.TRUNCATED_UNIFORM_BOUND
        z = _nfrandom.truncated_from_uniform(self._uniform(shape, dtype, -b, b))
        return z * stddev + mean

    def get_config(self):
        return {"seed": self.seed}


class RandomNormal(_Random):
    """Samples of N(mean, stddev**2)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        return self._normal(_shape(shape), self._float(dtype), self.mean, self.stddev)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(_Random):
    """Samples uniform in [minval, maxval)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None):
        return self._uniform(_shape(shape), self._float(dtype), self.minval, self.maxval)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(_Random):
    """Samples of N(mean, stddev**2) that lie within two standard deviations of the mean
    (drawn by inverting the CDF, so exactly that distribution; no rejection loop)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        return self._truncated(_shape(shape), self._float(dtype), self.mean, self.stddev)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


# the standard deviation of a standard normal truncated to [-2, 2]
_TRUNCATED_STD = 0.87962566103423978


class VarianceScaling(_Random):
    """Samples whose variance is `scale / n`, n the fan-in, fan-out or their mean (`mode`):
    a truncated normal (stddev corrected for the truncation), an untruncated normal, or a
    uniform on [-sqrt(3 scale / n), sqrt(3 scale / n)] (`distribution`)."""

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        super().__init__(seed)
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be positive float, got scale={scale}")
        if mode not in self._MODES:
            raise ValueError(f"Argument `mode` should be one of {self._MODES}, got mode={mode!r}")
        distribution = distribution.lower()
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"Argument `distribution` should be one of {self._DISTRIBUTIONS}, "
                             f"got distribution={distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape, dtype=None):
        shape, dtype = _shape(shape), self._float(dtype)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            return self._truncated(shape, dtype, 0.0, math.sqrt(scale) / _TRUNCATED_STD)
        if self.distribution == "untruncated_normal":
            return self._normal(shape, dtype, 0.0, math.sqrt(scale))
        limit = math.sqrt(3.0 * scale)
        return self._uniform(shape, dtype, -limit, limit)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class _Preset(VarianceScaling):
    _preset = None

    def __init__(self, seed=None):
        super().__init__(*self._preset, seed=seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    """Uniform with limit sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    _preset = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Truncated normal with stddev sqrt(2 / (fan_in + fan_out))."""
    _preset = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_Preset):
    """Truncated normal with stddev sqrt(2 / fan_in) (He et al., 2015)."""
    _preset = (2.0, "fan_in", "truncated_normal")


class HeUniform(_Preset):
    """Uniform with limit sqrt(6 / fan_in)."""
    _preset = (2.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """Truncated normal with stddev sqrt(1 / fan_in) (LeCun et al., 1998)."""
    _preset = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """Uniform with limit sqrt(3 / fan_in)."""
    _preset = (1.0, "fan_in", "uniform")


class Orthogonal(_Random):
    """A (semi-)orthogonal matrix times `gain`: the Q factor of a Gaussian matrix, its signs
    fixed by R's diagonal so the distribution is uniform (Saxe et al., 2014). A shape of rank
    > 2 is flattened to (prod(shape[:-1]), shape[-1]); rows or columns, whichever are fewer,
    are orthonormal. The QR runs once on the host: an initializer is not differentiated."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape, dtype = _shape(shape), self._float(dtype)
        if len(shape) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional, got "
                             f"shape={shape} of rank {len(shape)}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = self._normal((max(rows, cols), min(rows, cols)), _dt.F64, 0.0, 1.0).numpy()
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return tnp.asarray(self.gain * q.reshape(shape), dtype=dtype)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = _shape(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity initializer can only be used for 2D matrices, got "
                             f"shape={shape} of rank {len(shape)}")
        return tnp.eye(shape[0], shape[1], dtype=_dtype(dtype)) * self.gain

    def get_config(self):
        return {"gain": self.gain}


# Keras's lower-case names for the same classes
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling, orthogonal, identity = VarianceScaling, Orthogonal, Identity
glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal, lecun_uniform = (
    GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform)

_BY_NAME = {c.__name__: c for c in (
    Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
    GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform, Orthogonal,
    Identity)}
_BY_NAME.update({"zeros": Zeros, "ones": Ones, "constant": Constant,
                 "random_normal": RandomNormal, "random_uniform": RandomUniform,
                 "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
                 "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
                 "he_normal": HeNormal, "he_uniform": HeUniform, "lecun_normal": LecunNormal,
                 "lecun_uniform": LecunUniform, "orthogonal": Orthogonal, "identity": Identity})


def serialize(initializer):
    """{'class_name': ..., 'config': ...}, which `deserialize` turns back into an initializer."""
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config):
    """The initializer a `serialize` dict describes (`{'class_name': ..., 'config': ...}`), as
    `keras.initializers.deserialize`; a ValueError for an unknown class name.

    Examples
    --------
    >>> import ndflow as nf
    >>> init = nf.initializers.deserialize({"class_name": "Constant", "config": {"value": 2.0}})
    >>> init([2])
    array([2., 2.], dtype=float32)
    """
    cls = _BY_NAME.get(config["class_name"])
    if cls is None:
        raise ValueError(f"Unknown initializer: {config['class_name']!r}")
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """An initializer from a name ('glorot_uniform', 'HeNormal', ...), a config dict, a
    callable (returned as is) or None."""
    if identifier is None or isinstance(identifier, Initializer) or callable(identifier) and \
            not isinstance(identifier, type):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown initializer: {identifier!r}; known: "
                             + ", ".join(sorted(_BY_NAME)))
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
