"""ndflow arrays on Dask, run by a LocalCluster with 2 worker processes; NumPy is the oracle.
Skipped without dask and distributed."""
import os

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import ndflow as nf  # noqa: E402
import ndflow.numpy as tnp  # noqa: E402
from ndflow.distribute import dask as nfd  # noqa: E402


def test_array_examples_on_a_local_cluster_with_two_worker_processes():
    # one test, so that pytest-xdist starts one cluster (its workers start in seconds)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    rng = np.random.default_rng(0)
    data = rng.standard_normal((600, 6)), rng.standard_normal(600), rng.standard_normal(6)
    with cluster, distributed.Client(cluster):
        ndflow_arrays_are_dask_chunks(data)
        map_blocks_runs_compiled_functions_on_the_workers(data)
        vectorized_map_per_block(data)
        gradient_of_a_per_block_loss_summed_over_blocks(data)


def ndflow_arrays_are_dask_chunks(data):
    X, _, _ = data
    x = da.from_array(tnp.asarray(X), chunks=(150, 6))       # Dask's own from_array
    assert isinstance(x._meta, nf.ndarray) and "chunktype=ndflow.ndarray" in repr(x)
    assert isinstance(x.blocks[1].compute(), nf.ndarray)
    y = nfd.from_array(X, chunks=(150, 3))                   # from NumPy: converted per chunk
    assert isinstance(y._meta, nf.ndarray) and y.numblocks == (4, 2)
    z = (y * 2 + 1).T @ y                                     # Dask's arithmetic on our chunks
    got = z.compute()
    assert isinstance(got, nf.ndarray)
    np.testing.assert_allclose(got.numpy(), (X * 2 + 1).T @ X, rtol=1e-12)
    for red in ("sum", "mean", "max", "min", "std"):
        got = getattr(y, red)(axis=0).compute()
        assert isinstance(got, nf.ndarray), red
        np.testing.assert_allclose(np.asarray(got), getattr(X, red)(axis=0), rtol=1e-12)
    np.testing.assert_allclose(float(y.sum().compute()), X.sum(), rtol=1e-12)


def map_blocks_runs_compiled_functions_on_the_workers(data):
    X, _, w = data
    wt = tnp.asarray(w)
    f = nf.function(lambda b: tnp.tanh(b @ wt))
    x = nfd.from_array(X, chunks=(100, 6))
    y = nfd.map_blocks(f, x, drop_axis=1)
    got = y.compute()
    assert isinstance(got, nf.ndarray) and got.shape == (600,)
    np.testing.assert_allclose(got.numpy(), np.tanh(X @ w), rtol=1e-12)
    # arrays that are not Dask arrays reach every block whole
    y2 = nfd.map_blocks(nf.function(lambda b, v: tnp.tanh(b @ v)), x, w, drop_axis=1)
    np.testing.assert_allclose(y2.compute().numpy(), np.tanh(X @ w), rtol=1e-12)
    # the blocks ran in the worker processes
    pids = nfd.map_blocks(lambda b: tnp.full(b.shape[:1], os.getpid()), x, drop_axis=1,
                          dtype=np.int64).compute()
    assert os.getpid() not in set(np.asarray(pids).tolist())
    assert len(set(np.asarray(pids).tolist())) >= 1


def vectorized_map_per_block(data):
    X, _, w = data
    x = nfd.from_array(X, chunks=(128, 6))
    out = nfd.vectorized_map_blocks(lambda row: tnp.outer(row, row)[:2] * tnp.sum(row * w), x)
    assert out.shape == (600, 2, 6) and out.dtype == np.float64
    got = out.compute()
    want = np.einsum("ni,nj->nij", X, X)[:, :2] * (X @ w)[:, None, None]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    with pytest.raises(ValueError, match="axis 0 only"):
        nfd.vectorized_map_blocks(lambda r: r, nfd.from_array(X, chunks=(100, 3)))


def gradient_of_a_per_block_loss_summed_over_blocks(data):
    X, Y, w = data

    def loss(p, xb, yb):
        return tnp.sum(tnp.square(xb @ p["w"] + p["b"] - yb))

    vg = nfd.value_and_grad_blocks(loss, split_every=2)
    x, y = nfd.from_array(X, chunks=(70, 6)), nfd.from_array(Y, chunks=70)    # 9 blocks
    value, grads = vg({"w": w, "b": np.float64(0.25)}, x, y)
    r = X @ w + 0.25 - Y
    np.testing.assert_allclose(float(value), np.sum(r ** 2), rtol=1e-12)
    np.testing.assert_allclose(grads["w"].numpy(), 2 * X.T @ r, rtol=1e-10)
    np.testing.assert_allclose(float(grads["b"]), 2 * r.sum(), rtol=1e-10)
    # the same as one ndflow gradient over all the data
    v1, g1 = nf.value_and_grad(loss)({"w": tnp.asarray(w), "b": tnp.asarray(0.25)},
                                     tnp.asarray(X), tnp.asarray(Y))
    np.testing.assert_allclose(grads["w"].numpy(), g1["w"].numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="chunks along axis 0 differ"):
        vg({"w": w, "b": 0.0}, x, nfd.from_array(Y, chunks=100))
