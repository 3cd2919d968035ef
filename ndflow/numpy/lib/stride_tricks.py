"""`numpy.lib.stride_tricks` on ndflow arrays: `sliding_window_view` (differentiable),
`as_strided` (a read-only view), and the broadcasting helpers.

Eagerly, with nothing to differentiate or trace, both are NumPy's zero-copy views of the same
memory, read-only. Under a tape, inside `nf.function` or `vectorized_map`,
`sliding_window_view` is a gather (each window a copy of the elements it covers), so its
cotangents add up on the elements the windows share; `as_strided` has no such formulation
(strides are a memory layout, not an operation) and refuses there by name.
"""
import operator

import numpy as np

from ...core.ndarray import ndarray, _wrap
from ...primitives._util import norm_axis
from .._core import asarray
from ..manipulation import broadcast_to, broadcast_arrays, broadcast_shapes_ as broadcast_shapes  # noqa: F401,E501
from ...core.primitive import composite
from .._interop import _why_not_host
from ..indexing import take as _take
from ..manipulation import moveaxis as _moveaxis
from ...graph.static import shape_of as _shape_of


def _swv_kernel(x, window_shape, axis=None, *, subok=False, writeable=False):
    return np.lib.stride_tricks.sliding_window_view(np.asarray(x), window_shape, axis,
                                                    writeable=writeable)


@composite(_swv_kernel, "lib.stride_tricks.sliding_window_view", adapt=False)
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """All windows of `window_shape` over `x` (along `axis`, all axes by default), the window
    dimensions last, as `numpy.lib.stride_tricks.sliding_window_view`. Differentiable: each
    window element's cotangent goes to the element it shows."""
    window_shape = (tuple(operator.index(w) for w in window_shape)
                    if np.iterable(window_shape) else (operator.index(window_shape),))
    if any(w < 0 for w in window_shape):
        raise ValueError("`window_shape` cannot contain negative values")
    if writeable:
        raise ValueError("sliding_window_view(writeable=True) under a tape or inside "
                         "nf.function/vectorized_map: the windows are copies there, so writes "
                         "would not reach x; use writeable=False")
    a = asarray(x)
    if axis is None:
        axes = tuple(range(a.ndim))
        if len(window_shape) != a.ndim:
            raise ValueError(f"Since axis is `None`, must provide window_shape for all "
                             f"dimensions of `x`; got {len(window_shape)} window_shape "
                             f"elements and `x.ndim` is {a.ndim}.")
    else:
        axes = tuple(axis) if np.iterable(axis) else (axis,)
        axes = tuple(norm_axis(operator.index(ax), a.ndim) for ax in axes)
        if len(window_shape) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got "
                             f"{len(window_shape)} window_shape elements and {len(axes)} "
                             f"axes elements.")
    out = a
    for ax, w in zip(axes, window_shape):
        n = out.shape[ax]
        if n is None:
            raise ValueError("sliding_window_view: the length of a windowed axis must be known "
                             "while tracing (the number of windows is the result's shape)")
        if n < w:
            raise ValueError("window shape cannot be larger than input array shape")
        idx = np.arange(n - w + 1)[:, None] + np.arange(w)[None, :]
        out = _moveaxis(_take(out, asarray(idx), axis=ax), ax + 1, -1)
    # read-only, as NumPy's windows (a write into the copies would not reach x)
    return broadcast_to(out, out.shape if None not in out.shape else _shape_of(out))


def as_strided(x, shape=None, strides=None, subok=False, writeable=False):
    """NumPy's strided view of x's memory, read-only (a write through overlapping strides
    would change other elements), as `numpy.lib.stride_tricks.as_strided`. Only for concrete
    values outside tapes: strides are a layout, not a differentiable or traceable operation
    (`sliding_window_view` is)."""
    if writeable:
        raise ValueError("as_strided: ndflow's strided views are read-only (writeable=True "
                         "would let one write change several elements); copy the result to "
                         "modify it")
    why = _why_not_host((x,), {})
    if why or (isinstance(x, ndarray) and x._dev is not None):
        raise TypeError(f"as_strided views memory directly, so it cannot run where {why or 'the array lives on an accelerator'}; "  # noqa: E501
                        f"use sliding_window_view, reshape or broadcast_to")
    v = x.numpy() if isinstance(x, ndarray) else np.asarray(x)
    return _wrap(np.lib.stride_tricks.as_strided(v, shape, strides, writeable=False))
