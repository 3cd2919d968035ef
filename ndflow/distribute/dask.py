"""ndflow arrays as the chunks of `dask.array`: arrays larger than memory, on one machine or a
cluster (`pip install 'ndflow[dask]'`; dask is imported when this module is).

ndflow arrays implement NumPy's protocols (`__array_function__`, `__array_ufunc__`), so Dask
accepts them as chunks directly: `dask.array.from_array(ndflow_array, chunks=...)` gives a Dask
array whose `chunktype` is `ndflow.ndarray`, and Dask's own reductions, elementwise arithmetic,
slicing and `concatenate` run ndflow's functions on each chunk. What this module adds:

    import dask.array as da, ndflow as nf, ndflow.numpy as tnp
    from ndflow.distribute import dask as nfd

    x = nfd.from_array(big_numpy_or_ndflow_array, chunks=(100_000, 784))   # ndflow chunks
    y = nfd.map_blocks(nf.function(lambda b: tnp.tanh(b @ w)), x, drop_axis=..., ...)
    per_example = nfd.vectorized_map_blocks(one_example_fn, x)   # nf.vectorized_map per block
    total = x.sum(axis=0).compute()                              # Dask's reductions
    loss, grads = nfd.value_and_grad_blocks(loss_fn)(params, x, labels)   # sum over blocks

Compiled functions travel to the workers by pickling (the Python function; each worker process
traces it once). With `distributed` (pip install 'dask[distributed]'):

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=4, threads_per_worker=1))   # this machine

    # several machines: start a scheduler and workers, then connect
    #   machine A:   dask scheduler                      (prints tcp://A:8786)
    #   machines B…: dask worker tcp://A:8786 --nworkers 4 --nthreads 1
    client = Client("tcp://A:8786")

Every worker needs ndflow (and the modules your functions import) installed.
"""
import numpy as np
import dask
import dask.array as da

from .. import numpy as tnp
from ..core.ndarray import ndarray
from ..core import tree
from ..autodiff.functional import value_and_grad
from ..graph.function import function, TensorSpec
from ..vectorize.mapping import vectorized_map

__all__ = ["meta", "from_array", "map_blocks", "vectorized_map_blocks", "value_and_grad_blocks"]


def meta(dtype, ndim):
    """A zero-size ndflow array: the `meta=` that tells Dask its chunks are ndflow arrays."""
    return tnp.empty((0,) * ndim, dtype=dtype)


def _to_ndflow(block):
    return block if isinstance(block, ndarray) else tnp.asarray(block)


def from_array(x, chunks="auto", **kwargs):
    """A Dask array with ndflow chunks from an ndflow array, a NumPy array or anything Dask
    reads (`zarr`, `h5py`, memory maps: chunks are loaded and converted one at a time)."""
    if isinstance(x, ndarray):
        return da.from_array(x, chunks=chunks, asarray=False, **kwargs)
    d = x if isinstance(x, da.Array) else da.from_array(x, chunks=chunks, **kwargs)
    return d.map_blocks(_to_ndflow, dtype=d.dtype, meta=meta(d.dtype, d.ndim))


class _OnNdflowBlocks:
    """fn called on ndflow versions of its block arguments (picklable for the workers)."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "fn")     # Dask names its tasks after it

    def __call__(self, *blocks, **kwargs):
        return self.fn(*[_to_ndflow(b) if isinstance(b, (np.ndarray, ndarray)) else b
                         for b in blocks], **kwargs)


def map_blocks(fn, *arrays, dtype=None, **kwargs):
    """`dask.array.map_blocks(fn, *arrays, ...)` with ndflow chunks: each block reaches `fn`
    as an ndflow array and `fn`'s result is one; arguments that are not Dask arrays reach
    every call whole (NumPy arrays as ndflow arrays). `fn` may be an `nf.function` (compiled once
    per worker process and block shape). Without `dtype`, the result dtype is NumPy's
    promotion of the inputs' dtypes: pass `dtype=` when `fn` changes it, and `chunks=`,
    `drop_axis=`, `new_axis=` when it changes shapes, as for Dask."""
    blocked = [a for a in arrays if isinstance(a, da.Array)]
    if not blocked:
        raise TypeError("map_blocks: give at least one Dask array (other arguments are passed "
                        "whole to every call)")
    if dtype is None:
        dtype = np.result_type(*[a.dtype for a in arrays if hasattr(a, "dtype")])
    ndim = kwargs.pop("ndim", None)
    if ndim is None:
        ndim = max(a.ndim for a in blocked)
        drop = kwargs.get("drop_axis", ())
        new = kwargs.get("new_axis", ())
        ndim += len(new if isinstance(new, (list, tuple)) else [new]) - \
            len(drop if isinstance(drop, (list, tuple)) else [drop])
    return da.map_blocks(_OnNdflowBlocks(fn), *arrays, dtype=dtype,
                         meta=meta(dtype, ndim), **kwargs)


class _VmapBlock:
    def __init__(self, fn):
        self.fn = fn
        self.compiled = function(self._run)
        self.__name__ = "vectorized_map-" + getattr(fn, "__name__", "fn")

    def _run(self, block):
        return vectorized_map(self.fn, block)

    def __call__(self, block):
        return self.compiled(_to_ndflow(block))

    def __reduce__(self):
        return (_VmapBlock, (self.fn,))


def vectorized_map_blocks(fn, x):
    """`nf.vectorized_map(fn, block)` on every block of `x` (a Dask array chunked along axis 0
    only): `fn` maps one example (a row) to one array; the result has a row per example. The
    output shape and dtype come from tracing `fn` (nothing is computed to find them)."""
    x = from_array(x) if isinstance(x, (np.ndarray, ndarray)) else x
    if any(len(c) > 1 for c in x.chunks[1:]):
        raise ValueError(f"vectorized_map_blocks maps over axis 0: chunk x along axis 0 only "
                         f"(got chunks {x.chunks}); rechunk with x.rechunk({{1: -1, ...}})")
    blockfn = _VmapBlock(fn)
    cf = blockfn.compiled.get_concrete_function(TensorSpec([None] + list(x.shape[1:]), x.dtype))
    if len(cf.graph.outputs) != 1:
        raise ValueError(f"vectorized_map_blocks: fn must return one array, it returns "
                         f"{len(cf.graph.outputs)}")
    out = cf.graph.outputs[0]
    rest = tuple(out.shape[1:])
    if any(s is None for s in rest):
        raise ValueError(f"vectorized_map_blocks: the per-example result's shape {rest} depends "
                         f"on the data; Dask needs it in advance")
    dtype = np.dtype(out.dtype)
    chunks = (x.chunks[0],) + tuple((s,) for s in rest)
    ndim = 1 + len(rest)
    kw = {}
    if ndim < x.ndim:
        kw["drop_axis"] = list(range(ndim, x.ndim))
    elif ndim > x.ndim:
        kw["new_axis"] = list(range(x.ndim, ndim))
    return da.map_blocks(blockfn, x, dtype=dtype, chunks=chunks, meta=meta(dtype, ndim), **kw)


class _BlockValueAndGrad:
    def __init__(self, fn, argnums):
        self.fn = fn
        self.argnums = argnums
        self.compiled = function(value_and_grad(fn, argnums))

    def __reduce__(self):
        return (_BlockValueAndGrad, (self.fn, self.argnums))

    def __call__(self, params, *blocks):
        v, g = self.compiled(params, *[_to_ndflow(b) for b in blocks])
        return np.asarray(v), tree.map_structure(np.asarray, g)


def _add_pair(a, b):
    return a[0] + b[0], tree.map_structure(lambda x, y: x + y, a[1], b[1])


def value_and_grad_blocks(fn, split_every=8):
    """`fn(params, *blocks) -> scalar` (a per-block loss) becomes
    `(params, *dask_arrays) -> (sum over blocks of fn, its gradient w.r.t. params)`.

    The arrays must share their chunks along axis 0 (block i of each goes to the same call);
    each block's value and gradient is one compiled `nf.value_and_grad(fn)` task on a worker
    (params travel once per task as NumPy arrays), and the results are summed in a tree of
    `split_every`-way additions, in block order, so the answer is the same on every run.
    Returns ndflow arrays with the structure of `params`. Use a per-block *sum* of per-example
    losses (divide by the total count yourself) for a mean over all examples."""
    vg = _BlockValueAndGrad(fn, 0)

    def run(params, *arrays):
        if not arrays:
            raise TypeError("value_and_grad_blocks: give at least one Dask array")
        arrays = [from_array(a) if isinstance(a, (np.ndarray, ndarray)) else a for a in arrays]
        c0 = arrays[0].chunks[0]
        for a in arrays:
            if a.chunks[0] != c0:
                raise ValueError(f"value_and_grad_blocks: the arrays' chunks along axis 0 "
                                 f"differ: {c0} and {a.chunks[0]}")
            if any(len(c) > 1 for c in a.chunks[1:]):
                raise ValueError(f"value_and_grad_blocks: chunk the arrays along axis 0 only "
                                 f"(got chunks {a.chunks})")
        host_params = tree.map_structure(lambda p: np.asarray(p), params)
        p_delayed = dask.delayed(host_params, traverse=True)
        blocks = [a.to_delayed().reshape(-1) for a in arrays]
        parts = [dask.delayed(vg)(p_delayed, *bs) for bs in zip(*blocks)]
        while len(parts) > 1:
            parts = [_reduce_group(parts[i:i + split_every])
                     for i in range(0, len(parts), split_every)]
        value, grads = parts[0].compute()
        return tnp.asarray(value), tree.map_structure(tnp.asarray, grads)

    return run


def _reduce_group(group):
    out = group[0]
    for g in group[1:]:
        out = dask.delayed(_add_pair)(out, g)
    return out

