"""`nf.distribute`: data-parallel training with TensorFlow's `tf.distribute` API, and arrays on Dask.

    strategy = nf.distribute.MirroredStrategy()              # replicas on this process's devices
    strategy = nf.distribute.MultiWorkerMirroredStrategy()   # one replica per MPI process
    with strategy.scope():
        model, opt = make_model(), nf.optimizers.SGD(0.1)    # mirrored Variables
    step = nf.function(train_step)                            # one compiled step per replica
    for batch in strategy.experimental_distribute_dataset(batches):
        losses = strategy.run(step, args=(batch,))            # apply_gradients all-reduces
        loss = strategy.reduce(nf.distribute.ReduceOp.SUM, losses, axis=None)

`nf.distribute.dask` (imported on first use) puts ndflow arrays and compiled functions on
`dask.array`. mpi4py and dask are imported only by what uses them.
"""
from .strategy import (ReduceOp, Strategy, MirroredStrategy,  # noqa: F401
                       MultiWorkerMirroredStrategy, ReplicaContext, InputContext, InputOptions,
                       ValueContext, CommunicationOptions, get_strategy, get_replica_context,
                       has_strategy, in_cross_replica_context, experimental_set_strategy,
                       compute_average_loss, DistributedDataset)
from .values import PerReplica, MirroredVariable  # noqa: F401
from .collective import CollectiveTimeoutError  # noqa: F401


class experimental:  # noqa: N801  (TensorFlow's namespace)
    CommunicationOptions = CommunicationOptions
    MultiWorkerMirroredStrategy = MultiWorkerMirroredStrategy


def __getattr__(name):
    # nf.distribute.dask: loaded on first use, so `import ndflow` never imports dask
    if name == "dask":
        import importlib
        return importlib.import_module(__name__ + ".dask")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
