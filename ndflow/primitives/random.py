"""Random draws: one effect primitive, `random_draw_p`, that calls a method of a NumPy stream.

    random_draw_p(*arrays; method, rs, static, names, shape, dtype, elementwise)

runs `rs.<method>(**static, **dict(zip(names, arrays)))` at run time: `rs` is a
`numpy.random.RandomState` or `numpy.random.Generator` (None: the global stream, looked up at
run time, so `seed`/`set_state` affect compiled functions too), `static` the hashable arguments
(size included), `arrays` the array-valued ones. Two kinds of inputs are not passed to NumPy: a
name starting with '~' lends its shape (the size of a standard draw whose parameters are ndflow
arrays, when no size is given: known at run time), one starting with '!' only ties the draw to
an array (the array `choice` picks from), so that batching that array draws for every example.
Because the draw is
NumPy's own method, `tnp.random.seed(s)` reproduces `np.random.seed(s)` draws and
`default_rng(s)` NumPy's PCG64 stream, bit for bit.

Draws are effects: inside `nf.function` each call draws fresh numbers, and the compiler never
folds or merges them. They have no gradient with respect to their array inputs (the NumPy layer
composes the reparameterizable distributions from standard draws so that gradients reach
loc/scale). Under `vectorized_map`, a draw whose array inputs carry the batch axis draws for
every example; one whose inputs do not draws once for all examples.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from .shape import move_to_front, expand_dims_p
from .indexing import getitem_p, concatenate_p

class _Streams(dict):
    """The global stream, made on first use: importing numpy.random is a large part of
    `import ndflow`'s time, and `import numpy` itself does not pay it."""

    def __missing__(self, key):
        if key != "rs":
            raise KeyError(key)
        rs = self[key] = np.random.RandomState()
        return rs


STREAM = _Streams()


def seed(s):
    """Reseed the global stream in place (compiled functions hold it by reference)."""
    STREAM["rs"].seed(s)


# Set by backends/device.py (a higher layer): the device backend that draws for a creation
# kernel's array module `xp` or for device-buffer operands, None for a host draw. A device
# backend draws with its own generators, seeded from the NumPy stream `rs` (base.Backend).
backend_for = None


def _draw_impl(*arrays, method, rs, static, names, shape, dtype, elementwise=True, xp=None):
    r = STREAM["rs"] if rs is None else rs
    dev = backend_for(xp, arrays)
    kw = dict(static)
    if names:
        donors = []
        for name, a in zip(names, arrays):
            if name[0] == "~":
                donors.append(a.shape)
            elif name[0] != "!":
                kw[name] = a
        if donors and kw.get("size") is None:
            kw["size"] = np.broadcast_shapes(*donors)
    if dev is not None:
        return dev.random_draw(r, method, kw, np.dtype(dtype))
    out = np.asarray(getattr(r, method)(**kw))
    return out if out.dtype == dtype else out.astype(dtype)


def _draw_abstract(*arrays, method, rs, static, names, shape, dtype, elementwise=True):
    return Aval(shape, np.dtype(dtype))


def _draw_vjp(ct, *arrays, **params):
    # NumPy's samplers are not differentiable in their parameters; the NumPy layer gives the
    # reparameterizable families their gradients by composition
    return (None,) * len(arrays)


def _draw_batch(args, dims, method, rs, static, names, shape, dtype, elementwise=True):
    """Parameters that broadcast elementwise: one draw of size (B,) + shape, the batch axis of
    each parameter moved to the front (fresh numbers for every example). Parameters with core
    dimensions (choice's p, multinomial's pvals, multivariate_normal's mean and cov): a draw per
    example."""
    b = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    params = dict(method=method, rs=rs, names=names, dtype=dtype, elementwise=elementwise)
    if b is None or None in shape:
        raise ValueError(f"vectorized_map: tnp.random draw '{method}' needs the batch size and "
                         f"its own shape while tracing; give them known sizes")
    if not elementwise:
        outs = []
        for i in range(b):
            xs = [a if d is None else bind(getitem_p, a, spec=(("s", None, None, None),) * d
                                           + (("i", i),)) for a, d in zip(args, dims)]
            outs.append(bind(expand_dims_p, bind(random_draw_p, *xs, static=static, shape=shape,
                                                 **params), axes=(0,)))
        return bind(concatenate_p, *outs, axis=0), 0
    moved = []
    for a, d in zip(args, dims):
        if d is not None:
            a = move_to_front(a, d)
            missing = len(shape) - (a.ndim - 1)
            if missing > 0:
                a = bind(expand_dims_p, a, axes=tuple(range(1, 1 + missing)))
        moved.append(a)
    st = dict(static)
    st["size"] = (b,) + tuple(shape)
    return bind(random_draw_p, *moved, static=tuple(sorted(st.items())), shape=(b,) + tuple(shape),
                **params), 0


random_draw_p = Primitive("random_draw", _draw_impl, _draw_abstract, effect=True)
random_draw_p.def_vjp(_draw_vjp)
random_draw_p.batch = _draw_batch
