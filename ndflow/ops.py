"""Small array operations for the layers below the NumPy API: the tape, the jacobians and the
batching interpreter build their arrays with these (primitive binds, shapes and axes already
normalized by the caller), never with `ndflow.numpy`, whose argument parsing, promotion and
conversion of Python data belong to the user-facing layer above them.

Each is one primitive (or a few), so every transformation sees it as it sees any other
operation. Unlike the NumPy functions of the same names they take ndflow arrays only.

Example
-------
>>> import numpy as np
>>> from ndflow import ops
>>> ops.stack([ops.constant(np.ones(2)), ops.constant(np.zeros(2))]).shape
(2, 2)
"""
from .core.ndarray import _wrap
from .core.primitive import bind
from .core.state import STATE
from .primitives import elementwise as E, shape as S
from .primitives.indexing import getitem, concatenate_p
from .primitives.shape import moveaxis  # noqa: F401  (one of the ops: x with axis src at dst)


def constant(buf):
    """A host buffer as an array where the NumPy layer would create it (a device scope's
    device: the copy's kernel runs there)."""
    return _wrap(buf) if STATE.device is None else bind(E.copy_p, _wrap(buf))


def reshape(x, shape):
    """`x` reshaped to the tuple `shape` (no -1)."""
    return bind(S.reshape_p, x, shape=tuple(shape))


def expand_dims(x, axis):
    """`x` with a new axis of size 1 at `axis` (0 <= axis <= x.ndim)."""
    return bind(S.expand_dims_p, x, axes=(axis,))


def broadcast_to(x, shape):
    """`x` broadcast to the tuple `shape` (a view)."""
    return bind(S.broadcast_to_p, x, shape=tuple(shape))


def stack(xs):
    """The arrays `xs` (one shape and dtype, at least one) stacked along a new first axis."""
    return bind(concatenate_p, *[expand_dims(x, 0) for x in xs], axis=0)


def take(x, i, axis):
    """The index `i` (a Python int) of `x` along `axis` (non-negative)."""
    return getitem(x, (slice(None),) * axis + (i,))
