"""A data-parallel training program for the distribution tests (not collected by pytest).

    mpiexec -n 2 python tests/distribute_worker.py train OUT      # 2 workers, MPI
    python tests/distribute_worker.py train OUT --single          # one process, no strategy

The digits classifier of examples/tf_function_lesson.py (784 -> 128 relu -> 10 softmax, Adam)
trains on the synthetic digits for a few steps with global batches of GLOBAL_BATCH; every
process writes its final weights to OUT/weights-<rank>.npz and worker 0 a checkpoint under
OUT/ckpt. `resume OUT` restores that checkpoint into a freshly initialized model and trains
RESUME_STEPS more steps, `strategy.run` and `strategy.reduce` inside one `nf.function` this time
(OUT/resumed-<rank>.npz). `collectives` checks all-reduce, reduce and
gather against NumPy (OUT/collectives-ok-<rank> when they pass). `stall` and `crash` make worker 1 stop
taking part (it sleeps, or raises) to test that worker 0 fails fast with a clear error.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ndflow as nf  # noqa: E402
import ndflow.numpy as tnp  # noqa: E402

# fused kernels stay on tier 0: a numba compile in one worker would hold it back from the
# collectives its peers wait in
nf.config.settings.numba = "off"

GLOBAL_BATCH = 32
STEPS = 4
RESUME_STEPS = 2


def synthetic_digits(n, seed=0):
    """Flattened float32 images in [0, 1] and one-hot labels (the lesson's synthetic digits)."""
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, 256, size=(10, 28 * 28)).astype(np.float32)
    y = rng.integers(0, 10, size=n)
    x = np.clip(prototypes[y] + rng.standard_normal((n, 28 * 28), dtype=np.float32) * 64, 0, 255)
    return (x / 255).astype(np.float32), np.eye(10, dtype=np.float32)[y]


class Dense(nf.Module):
    def __init__(self, n_in, n_out, rng):
        super().__init__()
        scale = np.float32(1 / np.sqrt(n_in))
        self.w = nf.Variable(rng.standard_normal((n_in, n_out)).astype(np.float32) * scale,
                             name="w")
        self.b = nf.Variable(np.zeros(n_out, np.float32), name="b")

    def __call__(self, x):
        return x @ self.w + self.b


class Classifier(nf.Module):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.hidden = Dense(784, 128, rng)
        self.out = Dense(128, 10, rng)

    def __call__(self, x):
        return self.out(nf.nn.relu(self.hidden(x)))


def build(strategy, seed):
    with strategy.scope():
        model = Classifier(seed)
        opt = nf.optimizers.Adam(1e-3)

    @nf.function
    def step(x, y):
        with nf.GradientTape() as tape:
            logits = model(x)
            per_example = -tnp.sum(y * nf.nn.log_softmax(logits), axis=-1)
            loss = nf.distribute.compute_average_loss(per_example,
                                                      global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return model, opt, step


def batches(steps, offset=0):
    x, y = synthetic_digits(GLOBAL_BATCH * (steps + offset))
    return [(x[i * GLOBAL_BATCH:(i + 1) * GLOBAL_BATCH], y[i * GLOBAL_BATCH:(i + 1) * GLOBAL_BATCH])
            for i in range(offset, offset + steps)]


def train(strategy, model, step, data):
    losses = []
    for batch in strategy.experimental_distribute_dataset(data):
        per_replica = strategy.run(step, args=batch)
        losses.append(float(strategy.reduce(nf.distribute.ReduceOp.SUM, per_replica, axis=None)))
    return losses


def train_compiled(strategy, step, data):
    """TensorFlow's pattern: run and reduce inside one compiled function."""
    @nf.function
    def distributed_step(x, y):
        per_replica = strategy.run(step, args=(x, y))
        return strategy.reduce(nf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return [float(distributed_step(*batch))
            for batch in strategy.experimental_distribute_dataset(data)]


def weights(model):
    return {"%d" % i: v.numpy() for i, v in enumerate(model.trainable_variables)}


def collectives(strategy, rank):
    """All-reduce, reduce and gather across the workers against NumPy."""
    import ml_dtypes
    n = strategy.num_replicas_in_sync
    group = strategy._group_mpi
    group.bytes_per_pack = 64           # many buckets: each holds a few small buffers

    def values(r):
        rng = np.random.default_rng(r)
        return [rng.standard_normal((3, 4)).astype(np.float32), np.float64(r + 0.5),
                np.arange(5, dtype=np.int64) * (r + 1), np.zeros((0, 2), np.float32),
                (rng.standard_normal(7) + 1j * r).astype(np.complex64),
                rng.standard_normal(40).astype(np.float32),
                np.asarray([0.5, r, -2.0], np.float16),
                np.asarray([1.5, r], ml_dtypes.bfloat16),
                np.asarray([-0.0, np.inf if r else np.nan, -np.inf if r else 1.0, -0.0])]

    mine = values(rank)

    def fn():
        ctx = nf.distribute.get_replica_context()
        return ctx.all_reduce(nf.distribute.ReduceOp.SUM, [tnp.asarray(v) for v in mine]), \
            ctx.all_reduce("MEAN", tnp.asarray(mine[0]))

    calls = group.stats["buckets"]
    summed, mean = strategy.run(fn)
    assert group.stats["buckets"] - calls > 2, group.stats
    want = [sum(values(r)[k].astype(np.float64 if values(r)[k].dtype.kind == "f" else
                                    values(r)[k].dtype) for r in range(n)) for k in range(9)]
    for got, w, mine_k in zip(summed, want, mine):
        assert got.dtype == mine_k.dtype and got.shape == mine_k.shape, (got, mine_k)
        np.testing.assert_allclose(np.asarray(got).astype(w.dtype), w, rtol=1e-2 if
                                   mine_k.dtype.itemsize == 2 else 1e-6)
    special = np.asarray(summed[8])              # -0 + -0, nan + inf, 1 - inf, NaN kept
    assert np.signbit(special[0]) and np.isnan(special[1]) and special[2] == -np.inf
    np.testing.assert_allclose(mean.numpy(), want[0] / n, rtol=1e-6)
    # reduce with an axis: worker r holds r + 2 rows, so MEAN divides by all rows
    part = np.arange(2 * (rank + 2), dtype=np.float64).reshape(rank + 2, 2) + rank
    rows = [np.arange(2 * (r + 2), dtype=np.float64).reshape(r + 2, 2) + r for r in range(n)]
    got = strategy.reduce("MEAN", tnp.asarray(part), axis=0)
    np.testing.assert_allclose(got.numpy(), np.concatenate(rows).mean(0))
    got = strategy.reduce("SUM", tnp.asarray(part[:2]), axis=None)
    np.testing.assert_allclose(got.numpy(), sum(r_[:2] for r_ in rows))
    np.testing.assert_array_equal(strategy.gather(tnp.asarray(part), axis=0).numpy(),
                                  np.concatenate(rows))
    # different shapes on different workers: a clear error on every worker, not a wrong sum
    try:
        strategy.run(lambda: nf.distribute.get_replica_context().all_reduce(
            "SUM", tnp.ones(3 + rank)))
    except ValueError as e:
        assert "another worker reduces different ones" in str(e), e
    else:
        raise AssertionError("mismatched all-reduce passed")
    open(os.path.join(OUT, "collectives-ok-%d" % rank), "w").close()


OUT = None


def main(argv):
    global OUT
    mode, out = argv[1], argv[2]
    OUT = out
    single = "--single" in argv
    if single:
        strategy, rank = nf.distribute.get_strategy(), 0
    else:
        strategy = nf.distribute.MultiWorkerMirroredStrategy()
        rank = strategy.cluster_resolver.task_id
    # worker 1 starts from other random weights: the strategy must broadcast worker 0's
    model, opt, step = build(strategy, seed=1 + 100 * rank)
    ckpt = nf.train.Checkpoint(model=model, optimizer=opt)
    manager = nf.train.CheckpointManager(ckpt, os.path.join(out, "ckpt"), max_to_keep=2)
    if mode == "train":
        losses = train(strategy, model, step, batches(STEPS))
        np.savez(os.path.join(out, "weights-%d.npz" % rank), losses=np.asarray(losses),
                 **weights(model))
        if not single:
            manager.save()
    elif mode == "resume":
        manager.restore_or_initialize()
        losses = train_compiled(strategy, step, batches(RESUME_STEPS, offset=STEPS))
        np.savez(os.path.join(out, "resumed-%d.npz" % rank), losses=np.asarray(losses),
                 **weights(model))
    elif mode == "collectives":
        collectives(strategy, rank)
    elif mode in ("stall", "crash"):
        if rank == 1:
            if mode == "crash":
                raise RuntimeError("worker 1 failed on purpose")
            time.sleep(120)           # a worker that stopped taking part
        train(strategy, model, step, batches(STEPS))
        open(os.path.join(out, "finished-%d" % rank), "w").close()   # it should have failed
    else:
        raise SystemExit("unknown mode %r" % mode)


if __name__ == "__main__":
    main(sys.argv)
