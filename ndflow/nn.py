"""`nf.nn`: activations and the softmax family, as `tf.nn`, composed from ndflow.numpy (so they
differentiate, trace and vectorize). They are written in numerically stable forms: no overflow
for any finite input, and small results (sigmoid(-100), softplus(-100)) to full relative
precision; softmax/log_softmax subtract the (gradient-stopped) maximum, so -inf logits mask."""
import math

from . import numpy as tnp
from .compat import one_hot, _tensor  # noqa: F401  (one_hot also as nf.nn.one_hot)
from .autodiff.forward import stop_gradient

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "sigmoid", "log_sigmoid", "silu",
           "swish", "tanh", "softplus", "softsign", "gelu", "softmax", "log_softmax", "l2_loss",
           "one_hot", "sigmoid_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
           "sparse_softmax_cross_entropy_with_logits"]


def relu(features, name=None):
    """max(features, 0)."""
    return tnp.maximum(_tensor(features), 0)


def relu6(features, name=None):
    return tnp.minimum(tnp.maximum(_tensor(features), 0), 6)


def leaky_relu(features, alpha=0.2, name=None):
    x = _tensor(features)
    return tnp.where(x > 0, x, x * alpha)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x)), computed from e = exp(-|x|) <= 1 as 1 / (1 + e) for x >= 0 and
    e / (1 + e) below: no overflow, and full relative precision in the tail (sigmoid(-100) is
    3.7e-44, not 0)."""
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


def softmax(logits, axis=-1, name=None):
    """exp(x) / sum(exp(x)) along `axis`, with the max subtracted first (no overflow)."""
    x = _tensor(logits)
    e = tnp.exp(x - _stable_max(x, axis))
    return e / tnp.sum(e, axis=axis, keepdims=True)


def _stable_max(x, axis):
    # the shift cancels in softmax, so it is a constant to differentiation (a cheaper backward
    # pass, and no gradient through ties of the max)
    return stop_gradient(tnp.max(x, axis=axis, keepdims=True))


def log_softmax(logits, axis=-1, name=None):
    """x - log(sum(exp(x))) along `axis`, with the max subtracted first (no overflow)."""
    x = _tensor(logits)
    z = x - _stable_max(x, axis)
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
