"""`nf.nn`: activations and the softmax family, as `tf.nn`, composed from ndflow.numpy (so they
differentiate, trace and vectorize). softmax/log_softmax/softplus/sigmoid are written in their
numerically stable forms (max subtraction, |x| splitting, tanh)."""
import math

from . import numpy as tnp
from .compat import one_hot, _tensor  # noqa: F401  (one_hot also as nf.nn.one_hot)

__all__ = ["relu", "relu6", "leaky_relu", "sigmoid", "tanh", "softplus", "gelu", "softmax",
           "log_softmax", "l2_loss", "one_hot", "sigmoid_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits"]


def relu(features, name=None):
    """max(features, 0)."""
    return tnp.maximum(_tensor(features), 0)


def relu6(features, name=None):
    return tnp.minimum(tnp.maximum(_tensor(features), 0), 6)


def leaky_relu(features, alpha=0.2, name=None):
    x = _tensor(features)
    return tnp.where(x > 0, x, x * alpha)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x)), computed as (tanh(x / 2) + 1) / 2: no overflow for any x."""
    x = _tensor(x)
    return (tnp.tanh(x * 0.5) + 1) * 0.5


def tanh(x, name=None):
    return tnp.tanh(_tensor(x))


def softplus(features, name=None):
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)) (stable for large |x|)."""
    x = _tensor(features)
    return tnp.maximum(x, 0) + tnp.log1p(tnp.exp(-tnp.absolute(x)))


def _erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), built from exp so it differentiates
    s = tnp.sign(x)
    a = tnp.absolute(x)
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


def softmax(logits, axis=-1, name=None):
    """exp(x) / sum(exp(x)) along `axis`, with the max subtracted first (no overflow)."""
    x = _tensor(logits)
    e = tnp.exp(x - tnp.max(x, axis=axis, keepdims=True))
    return e / tnp.sum(e, axis=axis, keepdims=True)


def log_softmax(logits, axis=-1, name=None):
    """x - log(sum(exp(x))) along `axis`, with the max subtracted first (no overflow)."""
    x = _tensor(logits)
    z = x - tnp.max(x, axis=axis, keepdims=True)
    return z - tnp.log(tnp.sum(tnp.exp(z), axis=axis, keepdims=True))


def l2_loss(t, name=None):
    """sum(t ** 2) / 2, in the dtype of `t`."""
    t = _tensor(t)
    return tnp.sum(tnp.square(t), dtype=t.dtype) / 2


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)), computed stably as
    max(x, 0) - x z + log1p(exp(-|x|))."""
    x, z = _tensor(logits), _tensor(labels)
    return tnp.maximum(x, 0) - x * z + tnp.log1p(tnp.exp(-tnp.absolute(x)))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits)) along `axis`."""
    return -tnp.sum(_tensor(labels) * log_softmax(logits, axis), axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """-log_softmax(logits)[..., labels] for integer class labels."""
    lp = log_softmax(logits, -1)
    idx = tnp.expand_dims(_tensor(labels).astype(tnp.int64), -1)
    return -tnp.squeeze(tnp.take_along_axis(lp, idx, axis=-1), -1)
