"""Product updates: `w - s * (a @ b)` becomes one node whose kernel is one BLAS call.

A compiled SGD step updates each weight matrix with the product its gradient is:
`w.assign_sub(lr * (x.T @ dh))` traces into matmul, multiply by the 0-d rate, subtract. Under
the fast-math contract (`nf.function(jit_compile=True)`) the pass `product_updates` makes the
three nodes one `product_update(w, a, b, s)`, which `kernels.product_update` runs as gemm with
beta = 1: the product is added into the result as BLAS computes it, with no product buffer
and no second and third pass over it, and the memory planner gives the result the Variable's
own buffer as it does a fused update's (`memory.variable_updates`). Under NumPy's bits (the
default contract) the pass changes nothing: gemm rounds the scaled product into the
difference once (`contract.product_update_bound`).

It runs before fusion (which would otherwise make the multiply and subtract a region of their
own), takes only 2-D float32/float64 operands of one dtype with static shapes, results of at
least `MIN_ELEMENTS`, and only where the product and its scaled copy are used by nothing else. `settings.routes_off` naming
'product_update' keeps the three nodes (for ablation runs and tests).
"""
import numpy as np

from .ir import Node
from ..core.primitive import Primitive, Aval, REGISTRY
from ..core.settings import settings
from ..primitives import elementwise as E
from ..primitives.linalg import matmul_p
from .kernels.product_update import ProductUpdate

ROUTE = "product_update"
_GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))     # sgemm's and dgemm's

# Below this many result elements the three NumPy calls are cheaper: the BLAS call through
# ctypes costs ~7 us more than NumPy's matmul call (measured: a 128x10 update, k 32, 14.4 us
# against 5.8 us for NumPy's three calls; a 784x128 one, k 32, 92 us against 108 us).
MIN_ELEMENTS = 1 << 14


def _primitive(shape, dtype):
    p = Primitive("product_update", ProductUpdate(shape, dtype),
                  lambda w, a, b, s: Aval(w.shape, w.dtype), blas=True)
    try:
        REGISTRY.remove(p)      # made per graph, not a primitive anyone binds
    except ValueError:
        pass
    return p


def _fits(m):
    """Whether matmul node `m` is a 2-D float product of static shape BLAS's gemm takes."""
    a, b = m.inputs
    o = m.outputs[0]
    return a.ndim == 2 and b.ndim == 2 and None not in a.shape + b.shape and \
        np.dtype(a.dtype) == np.dtype(b.dtype) == np.dtype(o.dtype) and \
        np.dtype(o.dtype) in _GEMM_DTYPES


def product_updates(g):
    """The pass (see the module docstring): subtract(w, multiply(matmul(a, b), s)) ->
    product_update(w, a, b, s), with s 0-d, under `settings.fast_math`."""
    if not settings.fast_math or ROUTE in settings.routes_off:
        return g
    uses, producer = {}, {}
    for i, n in enumerate(g.nodes):
        for v in n.inputs:
            uses[v.id] = uses.get(v.id, 0) + 1
        for o in n.outputs:
            producer[o.id] = i
    for v in g.outputs:
        uses[v.id] = uses.get(v.id, 0) + 1

    def made_by(v, prim):
        i = producer.get(v.id)
        ok = i is not None and g.nodes[i].prim is prim and uses.get(v.id) == 1
        return i if ok else None

    drop, put = set(), {}
    for k, n in enumerate(g.nodes):
        if n.prim is not E.sub_p:
            continue
        w, t = n.inputs
        p = made_by(t, E.mul_p)
        if p is None or p in drop:
            continue
        x, y = g.nodes[p].inputs
        g_side, s = (x, y) if producer.get(x.id) is not None and \
            g.nodes[producer[x.id]].prim is matmul_p else (y, x)
        m = made_by(g_side, matmul_p)
        if m is None or m in drop or s.shape != () or not _fits(g.nodes[m]):
            continue
        o = n.outputs[0]
        if o.shape[0] * o.shape[1] < MIN_ELEMENTS:
            continue
        if tuple(w.shape) != tuple(o.shape) or tuple(g_side.shape) != tuple(o.shape) or \
                len({np.dtype(v.dtype) for v in (w, s, t, o, g_side)}) != 1:
            continue
        a, b = g.nodes[m].inputs
        drop.update((m, p))
        put[k] = Node(_primitive(o.shape, o.dtype), (w, a, b, s), {}, (o,), n.loc)
    if not put:
        return g
    return g.copy_with(nodes=[put.get(k, n) for k, n in enumerate(g.nodes) if k not in drop])
