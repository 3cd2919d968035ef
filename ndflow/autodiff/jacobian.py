"""Jacobians from a tape (`GradientTape.jacobian`, `batch_jacobian`): the backward pass once
per row of an identity basis, vectorized over the rows with `vectorized_map` (TensorFlow's
`experimental_use_pfor`) or run in a Python loop. Written with primitives, so a Jacobian is
itself recorded by outer tapes and traced inside `nf.function`."""
import numpy as np

from ..core import tree
from ..core.ndarray import ndarray, static_size
from ..core.primitive import bind
from ..core.variable import VariableBase
from ..primitives import elementwise as E, shape as S
from ..primitives.indexing import getitem
from ..ops import constant, reshape, stack
from ..vectorize import batching


def _value(x):
    if isinstance(x, VariableBase):
        return x.value()
    return x if isinstance(x, ndarray) else constant(np.asarray(x))


def rows(tape, target, sources, basis, none_if_unconnected, use_pfor):
    """Gradients of `target` for every cotangent in `basis` (stacked along axis 0), one
    stacked array per source; None for a source the target does not reach where
    `none_if_unconnected` (decided by the backward pass itself: it is the same Python for every
    basis vector)."""
    unconnected = [False] * len(sources)

    def one(ct):
        gs = tape._gradient(target, sources, ct, "none")
        unconnected[:] = [g is None for g in gs]
        return [bind(E.zeros_like_p, _value(s)) if g is None else g
                for g, s in zip(gs, sources)]

    if use_pfor:
        out = batching.batch_map(one, basis)
    else:
        per = [one(getitem(basis, (i,))) for i in range(basis.shape[0])]
        out = [stack([p[j] for p in per]) if per else
               constant(np.zeros((0,) + tuple(s.shape), s.dtype))
               for j, s in enumerate(sources)]
    if not tape._persistent:
        tape._release()
    if none_if_unconnected:
        out = [None if u else r for r, u in zip(out, unconnected)]
    return out


def jacobian(tape, target, sources, none_if_unconnected, use_pfor):
    """`GradientTape.jacobian` (see there): one array of shape target.shape + source.shape per
    source, with the structure of `sources`."""
    target = _value(target)
    n = static_size(target)
    if n is None:
        raise ValueError("jacobian needs a target of known size")
    shape = tuple(target.shape)
    basis = reshape(constant(np.eye(n, dtype=target.dtype)), (n,) + shape)
    leaves, treedef = tree.flatten_with_def(sources)
    out = rows(tape, target, leaves, basis, none_if_unconnected, use_pfor)
    out = [None if r is None else reshape(r, shape + tuple(s.shape)) for s, r in zip(leaves, out)]
    return tree.unflatten(treedef, out)


def batch_jacobian(tape, target, source, none_if_unconnected, use_pfor):
    """`GradientTape.batch_jacobian` (see there): target (b, m...) and source (b, n...) ->
    (b, m..., n...)."""
    b = target.shape[0]
    if source.shape[0] != b:
        raise ValueError(f"Need first dimension of target shape ({tuple(target.shape)}) and "
                         f"source shape ({tuple(source.shape)}) to match.")
    tail = tuple(target.shape[1:])
    m = int(np.prod(tail, dtype=np.int64))
    eye = constant(np.eye(m, dtype=target.dtype))
    # ct_j: ones for output element j of every example
    basis = bind(S.broadcast_to_p, reshape(eye, (m, 1) + tail), shape=(m, b) + tail)
    r = rows(tape, target, [source], basis, none_if_unconnected, use_pfor)[0]
    if r is None:
        return None
    r = S.moveaxis(r, 0, 1)                 # (b, m, source...)
    return reshape(r, (b,) + tail + tuple(source.shape[1:]))
