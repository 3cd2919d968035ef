"""Data-parallel training of a small digits classifier with nf.distribute.

    mpiexec -n 2 python examples/distributed_training.py          # 2 workers (MPI)
    python examples/distributed_training.py --mirrored            # 2 replicas on 2 logical CPUs
    python examples/distributed_training.py --single              # one device, the reference

Each run starts from the same initial weights and prints its final loss; all three print the
same (up to float rounding), because each global batch is split among the replicas and
`apply_gradients` sums their gradients. Worker 0 writes a checkpoint to ./distributed_ckpt
(`--ckpt-dir DIR` for another place); `--resume` continues from the latest one there (of a run
of any kind) instead of starting afresh.
"""
import sys

import numpy as np

import ndflow as nf
import ndflow.numpy as tnp

GLOBAL_BATCH = 128
STEPS = 20


class Classifier(nf.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w1 = nf.Variable(rng.standard_normal((64, 32)).astype(np.float32) / np.float32(8))
        self.b1 = nf.Variable(np.zeros(32, np.float32))
        self.w2 = nf.Variable(rng.standard_normal((32, 10)).astype(np.float32) / np.float32(6))

    def __call__(self, x):
        return nf.nn.softmax(tnp.maximum(x @ self.w1 + self.b1, 0) @ self.w2)


def digits(n, seed=0):
    """8x8 synthetic digits: each class a random prototype plus noise."""
    rng = np.random.default_rng(seed)
    proto = rng.uniform(0, 1, (10, 64)).astype(np.float32)
    y = rng.integers(0, 10, n)
    x = np.clip(proto[y] + rng.normal(0, 0.3, (n, 64)).astype(np.float32), 0, 1)
    return x, np.eye(10, dtype=np.float32)[y]


def main(argv):
    if "--single" in argv:
        strategy = nf.distribute.get_strategy()
    elif "--mirrored" in argv:
        cpu = nf.config.list_physical_devices("CPU")[0]
        nf.config.set_logical_device_configuration(cpu, [nf.config.LogicalDeviceConfiguration()] * 2)
        strategy = nf.distribute.MirroredStrategy()
    else:
        strategy = nf.distribute.MultiWorkerMirroredStrategy()

    with strategy.scope():
        model = Classifier()
        opt = nf.optimizers.Adam(1e-2)

    @nf.function
    def step(x, y):
        with nf.GradientTape() as tape:
            per_example = nf.losses.categorical_crossentropy(y, model(x))
            loss = nf.distribute.compute_average_loss(per_example,
                                                      global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    x, y = digits(GLOBAL_BATCH * STEPS)
    batches = [(x[i:i + GLOBAL_BATCH], y[i:i + GLOBAL_BATCH]) for i in range(0, len(x), GLOBAL_BATCH)]
    ckpt_dir = argv[argv.index("--ckpt-dir") + 1] if "--ckpt-dir" in argv else "distributed_ckpt"
    manager = nf.train.CheckpointManager(nf.train.Checkpoint(model=model, optimizer=opt),
                                         ckpt_dir, max_to_keep=2)
    # a fresh start unless asked: runs of the three modes one after another compare equal
    if "--resume" in argv and manager.restore_or_initialize():
        print("resumed from", manager.latest_checkpoint)
    for batch in strategy.experimental_distribute_dataset(batches):
        loss = strategy.reduce(nf.distribute.ReduceOp.SUM, strategy.run(step, args=batch),
                               axis=None)
    saved = manager.save()
    if strategy.extended.should_checkpoint:
        print("%s: %d replica(s), final loss %.6f, saved %s"
              % (type(strategy).__name__, strategy.num_replicas_in_sync, float(loss), saved))


if __name__ == "__main__":
    main(sys.argv)
