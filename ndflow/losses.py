"""`nf.losses`: Keras-style per-example losses (`tf.keras.losses` functions), reduced over the
last axis, composed from ndflow.numpy. Probabilities are clipped to [1e-7, 1 - 1e-7] as Keras
does; with `from_logits=True` the stable logit forms are used."""
from . import numpy as tnp
from . import nn as _nn
from .compat import _tensor

__all__ = ["mean_squared_error", "mean_absolute_error", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy", "MSE", "MAE", "mse",
           "mae"]

EPSILON = 1e-7


def _pair(y_true, y_pred):
    p = _tensor(y_pred)
    t = _tensor(y_true)
    if t.dtype != p.dtype:
        t = t.astype(p.dtype)
    return t, p


def mean_squared_error(y_true, y_pred):
    """mean((y_pred - y_true) ** 2) over the last axis, as `keras.losses.mean_squared_error`
    (also `MSE`, `mse`): one loss per example.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.losses.mean_squared_error([[0., 1.], [1., 1.]], [[1., 1.], [1., 1.]])
    array([0.5, 0. ], dtype=float32)
    """
    t, p = _pair(y_true, y_pred)
    return tnp.mean(tnp.square(p - t), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(|y_pred - y_true|) over the last axis, as `keras.losses.mean_absolute_error` (also
    `MAE`, `mae`): one loss per example.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.losses.mean_absolute_error([[0., 1.]], [[1., 3.]])
    array([1.5], dtype=float32)
    """
    t, p = _pair(y_true, y_pred)
    return tnp.mean(tnp.absolute(p - t), axis=-1)


MSE = mse = mean_squared_error
MAE = mae = mean_absolute_error


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Mean over `axis` of -t log(p) - (1 - t) log(1 - p)."""
    t, p = _pair(y_true, y_pred)
    if label_smoothing:
        t = t * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        ce = _nn.sigmoid_cross_entropy_with_logits(labels=t, logits=p)
    else:
        p = tnp.clip(p, EPSILON, 1 - EPSILON)
        ce = -(t * tnp.log(p) + (1 - t) * tnp.log(1 - p))
    return tnp.mean(ce, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y_true * log(y_pred)) over `axis`, y_true one-hot (or a distribution). Probabilities
    are renormalized to sum to 1 and clipped, as Keras does."""
    t, p = _pair(y_true, y_pred)
    if label_smoothing:
        n = p.shape[axis]
        t = t * (1 - label_smoothing) + label_smoothing / n
    if from_logits:
        return -tnp.sum(t * _nn.log_softmax(p, axis=axis), axis=axis)
    p = p / tnp.sum(p, axis=axis, keepdims=True)
    p = tnp.clip(p, EPSILON, 1 - EPSILON)
    return -tnp.sum(t * tnp.log(p), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """categorical_crossentropy with integer class labels (shape of y_pred without `axis`, or
    with a trailing size-1 axis)."""
    p = _tensor(y_pred)
    labels = _tensor(y_true)
    if labels.ndim == p.ndim and labels.shape[-1] == 1:
        labels = tnp.squeeze(labels, -1)
    depth = p.shape[axis]
    if depth is None:
        raise ValueError("sparse_categorical_crossentropy: the number of classes (size of y_pred "
                         "along axis) must be known")
    t = tnp.asarray(labels, dtype=tnp.int64) if labels.dtype.kind != "i" else labels
    onehot = _nn.one_hot(t, depth, axis=axis, dtype=p.dtype)
    return categorical_crossentropy(onehot, p, from_logits=from_logits, axis=axis)
