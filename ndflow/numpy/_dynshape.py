"""Shape arguments whose sizes may be traced values (from `nf.shape(x)` inside `nf.function`):
what is known while tracing becomes a static size, the rest is computed when the graph runs."""
import operator

import numpy as np

from ..core.ndarray import ndarray
from ..graph.static import static_value, static_int
from ._core import asarray, stacked


class RuntimeShape:
    """A shape with sizes known only at run time: `static` (int or None per axis) and `vec`,
    a 1-d int64 array of all the sizes."""
    __slots__ = ("static", "vec", "entries")

    def __init__(self, static, vec, entries=None):
        self.static, self.vec, self.entries = static, vec, entries


def _traced(x):
    return isinstance(x, ndarray) and x._t is not None


def shape_arg(shape, what="shape"):
    """A tuple of ints when every size is known while tracing, else a `RuntimeShape`."""
    if isinstance(shape, ndarray) and shape._t is None:
        v = shape.numpy()
        return (operator.index(v),) if v.ndim == 0 else tuple(operator.index(d) for d in v)
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    if _traced(shape):
        if shape.ndim == 0:
            shape = [shape]
        else:
            v = static_value(shape)
            if v is not None:
                return tuple(int(d) for d in v.reshape(-1))
            if shape.shape[0] is None:
                raise ValueError(f"{what}: a traced shape must have a known length")
            static = []
            for i in range(shape.shape[0]):
                static.append(static_int(shape[i]))
            return RuntimeShape(tuple(static), shape.astype(np.int64))
    entries = list(shape)
    static, dynamic = [], False
    for d in entries:
        if _traced(d):
            if d.ndim != 0 or np.dtype(d.dtype).kind not in "iu":
                raise TypeError(f"{what}: sizes must be integer scalars, got an array of shape "
                                f"{tuple(d.shape)} and dtype {d.dtype}")
            k = static_int(d)
            static.append(k)
            dynamic |= k is None
        else:
            static.append(operator.index(d))
    if not dynamic:
        return tuple(static)
    vec = stacked([asarray(d, dtype=np.int64) if not _traced(d) else d.astype(np.int64)
                   for d in entries])
    return RuntimeShape(tuple(static), vec, entries)
