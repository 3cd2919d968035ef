"""`nf.nn`: activations, losses and the softmax family, as `tf.nn`, composed from ndflow.numpy
(so they differentiate, trace and vectorize). They are written in numerically stable forms: no
overflow for any finite input, and small results (sigmoid(-100), softplus(-100)) to full
relative precision; softmax/log_softmax subtract the (gradient-stopped) maximum, so -inf logits
mask.

    >>> import ndflow as nf
    >>> nf.nn.relu([-1., 2.])
    array([0., 2.], dtype=float32)
"""
import importlib
import math

from . import numpy as tnp
from . import random as _random
from .compat import one_hot, _tensor  # noqa: F401  (one_hot also as nf.nn.one_hot)
from .array_ops import gather, top_k  # noqa: F401  (top_k also as nf.nn.top_k)
from .autodiff.forward import stop_gradient
from .core.errors import InvalidArgumentError

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "sigmoid", "log_sigmoid", "silu",
           "swish", "tanh", "softplus", "softsign", "gelu", "softmax", "log_softmax", "l2_loss",
           "one_hot", "sigmoid_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
           "sparse_softmax_cross_entropy_with_logits", "weighted_cross_entropy_with_logits",
           "l2_normalize", "moments", "batch_normalization", "bias_add", "dropout",
           "embedding_lookup", "compute_average_loss", "top_k"]


def relu(features, name=None):
    """max(features, 0), as `tf.nn.relu` (the derivative at 0 is 0).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.relu([-1., 0., 2.])
    array([0., 0., 2.], dtype=float32)
    """
    return tnp.maximum(_tensor(features), 0)


def relu6(features, name=None):
    """min(max(features, 0), 6), as `tf.nn.relu6`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.relu6([-1., 3., 9.])
    array([0., 3., 6.], dtype=float32)
    """
    return tnp.minimum(tnp.maximum(_tensor(features), 0), 6)


def leaky_relu(features, alpha=0.2, name=None):
    """x for x > 0, alpha * x otherwise, as `tf.nn.leaky_relu` (alpha 0.2 by default).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.leaky_relu([-1., 2.])
    array([-0.2,  2. ], dtype=float32)
    """
    x = _tensor(features)
    return tnp.where(x > 0, x, x * alpha)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x)), computed from e = exp(-|x|) <= 1 as 1 / (1 + e) for x >= 0 and
    e / (1 + e) below: no overflow, and full relative precision in the tail (sigmoid(-100) is
    3.7e-44, not 0), as `tf.nn.sigmoid`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.sigmoid([0., 100.])
    array([0.5, 1. ], dtype=float32)
    """
    x = _tensor(x)
    pos = x >= 0
    # -|x| written with where so its derivative at 0 is -1, not sign(0) = 0
    e = tnp.exp(tnp.where(pos, -x, x))
    return tnp.where(pos, 1 / (1 + e), e / (1 + e))


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x) = min(x, 0) - log1p(exp(-|x|)) (stable, as
    `tf.math.log_sigmoid`)."""
    return -softplus(-_tensor(x))


def silu(features, beta=1.0, name=None):
    """x * sigmoid(beta * x) (SiLU / swish), as `tf.nn.silu`."""
    x = _tensor(features)
    return x * sigmoid(x * beta if beta != 1.0 else x)


swish = silu


def _negative(x):
    # x where x < 0, else 0: the exponential branch never overflows (and a `minimum` would
    # split the derivative at 0 between the branches)
    return tnp.where(x >= 0, tnp.zeros_like(x), x)


def elu(features, name=None):
    """x for x >= 0, exp(x) - 1 otherwise (derivative 1 at 0, as TensorFlow)."""
    x = _tensor(features)
    return tnp.where(x >= 0, x, tnp.expm1(_negative(x)))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features, name=None):
    """scale * elu(x, alpha) with the self-normalizing constants (Klambauer et al., 2017); the
    derivative at 0 is `scale`, as TensorFlow's."""
    x = _tensor(features)
    return _SELU_SCALE * tnp.where(x >= 0, x, _SELU_ALPHA * tnp.expm1(_negative(x)))


def softsign(features, name=None):
    """x / (1 + |x|)."""
    x = _tensor(features)
    return x / (1 + tnp.absolute(x))


def tanh(x, name=None):
    """Hyperbolic tangent, elementwise, as `tf.nn.tanh` (= `ndflow.numpy.tanh`)."""
    return tnp.tanh(_tensor(x))


def softplus(features, name=None):
    """log(1 + exp(x)) = logaddexp(x, 0): stable for large |x|, and smooth at every order
    (softplus''(0) = 1/4; max(x, 0) + log1p(exp(-|x|)) would give 0 there)."""
    return tnp.logaddexp(_tensor(features), 0)


def _erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), built from exp so it differentiates
    # the odd extension through where, not sign(x) * f(|x|): sign'(0) = 0 and |x|'(0) = 0 would
    # make the derivative at 0 vanish (gelu''(0) = 0 instead of 2 phi(0))
    pos = x >= 0
    s = tnp.where(pos, 1.0, -1.0)
    a = tnp.where(pos, x, -x)
    t = 1 / (1 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    return s * (1 - poly * tnp.exp(-a * a))


def gelu(features, approximate=False, name=None):
    """x * P(X <= x), X ~ N(0, 1): `0.5 x (1 + erf(x / sqrt 2))`, or its tanh approximation
    with `approximate=True`. (erf is a rational-exponential approximation, error < 1.5e-7.)"""
    x = _tensor(features)
    if approximate:
        c = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + tnp.tanh(c * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1 + _erf(x * (1 / math.sqrt(2))))


def softmax(logits, axis=None, name=None):
    """exp(x) / sum(exp(x)) along `axis` (the last when None), with the max subtracted first
    (no overflow), as `tf.nn.softmax`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.softmax([[1000., 1000.], [0., -float("inf")]])
    array([[0.5, 0.5],
           [1. , 0. ]], dtype=float32)
    """
    x = _tensor(logits)
    axis = -1 if axis is None else axis
    e = tnp.exp(x - _stable_max(x, axis))
    return e / tnp.sum(e, axis=axis, keepdims=True)


def _stable_max(x, axis):
    # the shift cancels in softmax, so it is a constant to differentiation (a cheaper backward
    # pass, and no gradient through ties of the max)
    return stop_gradient(tnp.max(x, axis=axis, keepdims=True))


def log_softmax(logits, axis=None, name=None):
    """x - log(sum(exp(x))) along `axis` (the last when None), with the max subtracted first
    (no overflow), as `tf.nn.log_softmax`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.log_softmax([0., 0.])
    array([-0.6931472, -0.6931472], dtype=float32)
    """
    x = _tensor(logits)
    axis = -1 if axis is None else axis
    z = x - _stable_max(x, axis)
    return z - tnp.log(tnp.sum(tnp.exp(z), axis=axis, keepdims=True))


def l2_loss(t, name=None):
    """sum(t ** 2) / 2, in the dtype of `t`, as `tf.nn.l2_loss`.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.l2_loss([1., 2.])
    array(2.5, dtype=float32)
    """
    t = _tensor(t)
    return tnp.sum(tnp.square(t), dtype=t.dtype) / 2


def _same_shape(labels, logits, what):
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(f"nf.nn.{what}: labels and logits must have the same shape, got "
                         f"{tuple(labels.shape)} and {tuple(logits.shape)}")


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)) for labels z and logits x,
    computed stably as max(x, 0) - x z + log1p(exp(-|x|)), as
    `tf.nn.sigmoid_cross_entropy_with_logits` (labels and logits of one shape).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.sigmoid_cross_entropy_with_logits(labels=[1., 0.], logits=[0., 0.])
    array([0.6931472, 0.6931472], dtype=float32)
    """
    x, z = _tensor(logits), _tensor(labels)
    _same_shape(z, x, "sigmoid_cross_entropy_with_logits")
    return tnp.maximum(x, 0) - x * z + tnp.log1p(tnp.exp(-tnp.absolute(x)))


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """`sigmoid_cross_entropy_with_logits` with the positive term weighted:
    -pos_weight z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)), computed stably, as
    `tf.nn.weighted_cross_entropy_with_logits`."""
    x, z = _tensor(logits), _tensor(labels)
    _same_shape(z, x, "weighted_cross_entropy_with_logits")
    w = 1 + (pos_weight - 1) * z
    # log(1 + exp(-x)) = softplus(-x), without overflow either way
    return (1 - z) * x + w * (tnp.log1p(tnp.exp(-tnp.absolute(x))) + tnp.maximum(-x, 0))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits)) along `axis`, as
    `tf.nn.softmax_cross_entropy_with_logits` (each row of `labels` a probability
    distribution; gradients flow into both).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.softmax_cross_entropy_with_logits(labels=[[0., 1.]], logits=[[0., 0.]])
    array([0.6931472], dtype=float32)
    """
    z = _tensor(labels)
    _same_shape(z, _tensor(logits), "softmax_cross_entropy_with_logits")
    return -tnp.sum(z * log_softmax(logits, axis), axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """-log_softmax(logits)[..., labels] for integer class `labels` (shape of `logits` without
    its last axis), as `tf.nn.sparse_softmax_cross_entropy_with_logits`. A label outside
    [0, classes) raises `nf.errors.InvalidArgumentError` (as TensorFlow on CPU; NumPy would
    count a negative one from the end).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=[[0., 0.]])
    array([0.6931472], dtype=float32)
    """
    lab, x = _tensor(labels), _tensor(logits)
    if lab.dtype.kind not in "iu":
        raise TypeError(f"nf.nn.sparse_softmax_cross_entropy_with_logits: labels must be "
                        f"integers, got {lab.dtype.name}")
    if x.ndim == 0 or tuple(lab.shape) != tuple(x.shape[:-1]):
        raise ValueError(f"nf.nn.sparse_softmax_cross_entropy_with_logits: labels of shape "
                         f"{tuple(lab.shape)} must have the shape of logits {tuple(x.shape)} "
                         f"without its last axis")
    lp = log_softmax(x, -1)
    idx = tnp.expand_dims(lab, -1)
    return -tnp.squeeze(gather(lp, idx, axis=-1, batch_dims=lab.ndim), -1)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None):
    """``x / sqrt(max(sum(|x| ** 2, axis), epsilon))``, as `tf.nn.l2_normalize` (also
    `nf.math.l2_normalize`; all axes when `axis` is None).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.l2_normalize([3., 4.])
    array([0.6, 0.8], dtype=float32)
    """
    t = _tensor(x)
    a = tnp.absolute(t) if t.dtype.kind == "c" else t
    ax = tuple(axis) if isinstance(axis, list) else axis
    s = tnp.sum(a * a, axis=ax, keepdims=True)
    return t / tnp.sqrt(tnp.maximum(s, tnp.asarray(epsilon, dtype=s.dtype)))


def moments(x, axes, shift=None, keepdims=False, name=None):
    """The mean and variance of `x` over `axes`, as `tf.nn.moments` (`shift` is ignored, as in
    TensorFlow 2).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.moments(nf.constant([1., 2., 3., 4.]), axes=[0])
    (array(2.5, dtype=float32), array(1.25, dtype=float32))
    """
    t = _tensor(x)
    ax = tuple(axes) if isinstance(axes, (list, tuple)) else (int(axes),)
    mean = tnp.mean(t, axis=ax, keepdims=True)
    # the variance about a constant mean: its gradient flows through `t` alone, and the sum of
    # the centered values' gradient contributions is zero anyway
    var = tnp.mean(tnp.square(t - stop_gradient(mean)), axis=ax, keepdims=True)
    if not keepdims:
        mean, var = tnp.squeeze(mean, ax), tnp.squeeze(var, ax)
    return mean, var


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + variance_epsilon) * scale + offset, as
    `tf.nn.batch_normalization` (`offset` and `scale` may be None).

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.nn.batch_normalization(nf.constant([1., 3.]), 2., 1., None, None, 0.)
    array([-1.,  1.], dtype=float32)
    """
    t = _tensor(x)
    inv = 1 / tnp.sqrt(_tensor(variance) + variance_epsilon)
    if scale is not None:
        inv = inv * _tensor(scale)
    y = (t - _tensor(mean)) * inv
    return y if offset is None else y + _tensor(offset)


def bias_add(value, bias, data_format=None, name=None):
    """`value` + the 1-d `bias` along the channel axis (the last; the second with
    `data_format` 'NC...'), as `tf.nn.bias_add`."""
    v, b = _tensor(value), _tensor(bias)
    if b.ndim != 1:
        raise ValueError(f"nf.nn.bias_add: bias must be 1-d, got shape {tuple(b.shape)}")
    if data_format is not None and str(data_format).startswith("NC") and v.ndim > 2:
        b = tnp.reshape(b, (-1,) + (1,) * (v.ndim - 2))
    return v + b


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Each entry of `x` set to 0 with probability `rate`, the others scaled by
    1 / (1 - rate), as `tf.nn.dropout` (new random entries at each call, also inside
    `nf.function`). `noise_shape` broadcasts one draw over axes of size 1.
    """
    t = _tensor(x)
    rate = float(rate)
    if not 0 <= rate < 1:
        raise ValueError(f"nf.nn.dropout: rate must be in [0, 1), got {rate}")
    if rate == 0:
        return t
    shape = tuple(t.shape) if noise_shape is None else tuple(int(d) for d in noise_shape)
    keep = _random.uniform(shape, dtype=t.dtype if t.dtype.kind == "f" else "float32",
                           seed=seed) >= rate
    return tnp.where(keep, t * (1 / (1 - rate)), tnp.zeros_like(t))


def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of `params` at `ids`, as `tf.nn.embedding_lookup` (`nf.gather` on axis 0;
    with `max_norm`, rows longer than it are scaled down to it)."""
    rows = gather(params, ids)
    if max_norm is None:
        return rows
    axes = tuple(range(_tensor(ids).ndim, rows.ndim))
    n = tnp.sqrt(tnp.sum(tnp.square(rows), axis=axes, keepdims=True))
    return rows * (max_norm / tnp.maximum(n, max_norm))


# loaded on first use: the distribution package is not needed by the rest of nf.nn
_LAZY = {"compute_average_loss": ".distribute.strategy"}


def __getattr__(name):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(importlib.import_module("._hints", __package__).missing(__name__,
                                                                                     name))
    value = getattr(importlib.import_module(where, __package__), name)
    globals()[name] = value
    return value
