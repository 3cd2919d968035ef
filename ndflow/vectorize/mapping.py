"""The user-facing vectorizing maps: `nf.vectorized_map`, `nf.vmap` and `nf.map_fn`. They take
Python data (converted with the NumPy API, as TensorFlow converts to tensors), run the function
AutoGraph-converted where TensorFlow does, and hand arrays to the batching interpreter
(vectorize/batching.py) or, traced, to `scan`."""
import numpy as np

from ..core import tree
from ..core.state import STATE
from ..autograph.conversion import convert, converts_arguments
from .. import numpy as tnp
from . import batching as B


@converts_arguments(0)
def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """Map `fn` over the first axis of `elems` (a nested structure), vectorized: `fn` runs once
    on batched values, as `tf.vectorized_map`. Tapes inside `fn` give per-example gradients.
    As in TensorFlow, `fn` runs converted by AutoGraph: an `if` or `while` on a per-example
    value decides per example (`ndflow.autograph`).

    Primitives without a batching rule run in a loop (with a warning naming them).

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> x = tnp.asarray([[1., 2.], [3., 4.]])
    >>> nf.vectorized_map(lambda row: tnp.dot(row, row), x)
    array([ 5., 25.], dtype=float64)
    >>> nf.vectorized_map(lambda pair: pair[0] * pair[1], (x, tnp.asarray([10., 100.])))
    array([[ 10.,  20.],
           [300., 400.]], dtype=float64)
    """
    return B.vmap(convert(fn, warn=False), convert=tnp.asarray)(elems)


@converts_arguments(0)
def vmap(fn, in_axes=0, out_axes=0):
    """JAX-style: `vmap(f, in_axes, out_axes)(*args)` maps over the given argument axes
    (None = not mapped); the same machinery as `nf.vectorized_map`.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> nf.vmap(lambda a, b: a * b, in_axes=(0, None))(tnp.asarray([1., 2.]), tnp.asarray(3.))
    array([3., 6.], dtype=float64)
    """
    return B.vmap(fn, in_axes, out_axes, convert=tnp.asarray)


@converts_arguments(0)
def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """Apply `fn` to each element along the first axis, one at a time, and stack the results,
    as `tf.map_fn`. Eager: a Python loop. Traced (inside `nf.function` or `vectorized_map`):
    one `scan` op whose body is `fn` traced once, not one copy of `fn` per element; its
    gradient is the scan's (a reverse scan).

    Why a loop and not `vectorized_map` where every primitive could batch: a batched body
    changes the order of floating-point sums (one batched matrix product instead of one per
    element), so results would differ from eager map_fn in the last bits; map_fn keeps them
    identical. Use `nf.vectorized_map` for the vectorized version.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> nf.map_fn(lambda row: tnp.max(row), tnp.asarray([[1, 5], [7, 2]]))
    array([5, 7], dtype=int64)
    """
    leaves, d = tree.flatten_with_def(elems)
    leaves = [tnp.asarray(x) for x in leaves]
    sig = tree.flatten(fn_output_signature) if fn_output_signature is not None else None
    if not leaves or any(x.ndim == 0 for x in leaves):
        # (TensorFlow's error, on every path)
        raise ValueError("map_fn: elements must be arrays of 1 or more dimensions, not "
                         f"scalars (got shapes {[tuple(x.shape) for x in leaves]})")
    n = leaves[0].shape[0]
    # zero elements: the traced path too (fn traced once gives the results' structure, shapes
    # and dtypes, stacked with a leading 0, as compiled)
    if STATE.traces or n == 0:
        # (function level: vectorized_map and vmap need neither control flow nor the compiler
        # it brings; a traced map_fn is a scan)
        from ..graph.control import scan_carry
        _, ys = scan_carry(lambda c, x: (c, fn(x)), (), tree.unflatten(d, leaves),
                           name=name or "map_fn")
        y_leaves, o_def = tree.flatten_with_def(ys)
        stacked = [_cast_to_signature(tnp.asarray(y), sig, k) for k, y in enumerate(y_leaves)]
        return tree.unflatten(o_def, stacked)
    outs = [fn(tree.unflatten(d, [x[i] for x in leaves])) for i in range(n)]
    o_leaves = [tree.flatten(o) for o in outs]
    o_def = tree.flatten_with_def(outs[0])[1]
    stacked = []
    for k in range(len(o_leaves[0])):
        s = tnp.stack([tnp.asarray(o[k]) for o in o_leaves])
        stacked.append(_cast_to_signature(s, sig, k))
    return tree.unflatten(o_def, stacked)


def _cast_to_signature(s, sig, k):
    if sig is not None and k < len(sig) and sig[k] is not None:
        dt = sig[k].dtype if hasattr(sig[k], "is_compatible_with") else np.dtype(sig[k])
        s = s.astype(dt) if s.dtype != dt else s
    return s
