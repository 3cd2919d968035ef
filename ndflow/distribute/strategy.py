"""Distribution strategies with TensorFlow's `tf.distribute` API: `MirroredStrategy` (replicas on
the local devices of one process) and `MultiWorkerMirroredStrategy` (one replica per process,
over MPI)."""
import contextlib
import enum

import numpy as np

from ..core import tree
from ..core.ndarray import ndarray, _wrap, wrap_on
from ..core.state import sync_mode
from ..backends import device as _dev
from ..train import variable as _variable
from ..train import optimizers as _optimizers
from ..train import checkpoint as _checkpoint
from ..train.variable import Variable
from . import collective as _col
from .collective import LOCAL, ThreadGroup, all_reduce_sum
from .values import PerReplica, MirroredVariable
from .. import numpy as tnp
from ..graph.dynamic_shape import shape
from ..core.state import STATE

__all__ = ["ReduceOp", "Strategy", "MirroredStrategy", "MultiWorkerMirroredStrategy",
           "ReplicaContext", "InputContext", "InputOptions", "get_strategy",
           "get_replica_context", "has_strategy", "in_cross_replica_context",
           "experimental_set_strategy", "CommunicationOptions", "compute_average_loss"]


class ReduceOp(enum.Enum):
    """How `reduce` and `all_reduce` combine the replicas' values."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        return ReduceOp(str(aggregation).upper())


def _reduce_op(op):
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ("SUM", "MEAN"):
        return ReduceOp(op.upper())
    raise ValueError(f"reduce_op must be nf.distribute.ReduceOp.SUM or .MEAN (or 'SUM'/'MEAN'), "
                     f"got {op!r}")


class CommunicationOptions:
    """Options of the collectives, as `tf.distribute.experimental.CommunicationOptions`:
    `bytes_per_pack` (gradients are packed into flat buffers of at most this many bytes, one
    collective each; 0 = 16 MiB) and `timeout_seconds` (how long a worker waits for the others
    before raising `CollectiveTimeoutError` and aborting the job; None = the
    NDFLOW_COLLECTIVE_TIMEOUT environment variable, else 300)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation="AUTO"):
        if bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be non-negative, got {bytes_per_pack}")
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive or None, got {timeout_seconds}")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class InputOptions:
    """Accepted for TensorFlow compatibility; batches are always placed on the replica's device."""

    def __init__(self, experimental_fetch_to_device=True, **kwargs):
        self.experimental_fetch_to_device = experimental_fetch_to_device


class InputContext:
    """What `distribute_datasets_from_function`'s `dataset_fn` is told about its input
    pipeline (one per worker), as `tf.distribute.InputContext`."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """`global_batch_size // num_replicas_in_sync`; a ValueError when it does not divide."""
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {self.num_replicas_in_sync}")
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self):
        return ("InputContext(num_input_pipelines=%d, input_pipeline_id=%d, "
                "num_replicas_in_sync=%d)" % (self.num_input_pipelines, self.input_pipeline_id,
                                              self.num_replicas_in_sync))


class ReplicaContext:
    """The context of one replica inside `strategy.run` (`nf.distribute.get_replica_context()`)."""

    def __init__(self, strategy, local_id):
        self.strategy = strategy
        self.local_id = local_id
        self._group = strategy._local_group

    @property
    def num_replicas_in_sync(self):
        return self.strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's index among all replicas (a Python int; TensorFlow gives a tensor)."""
        return self.strategy._first_replica_id + self.local_id

    def all_reduce(self, reduce_op, value, options=None):
        """Sum (or average) `value` (an array or a nested structure of arrays) over all
        replicas; every replica gets the result. All leaves travel in one collective.
        Differentiable: the gradient of a SUM is the SUM of the replicas' gradients. MEAN of
        integers gives floats (NumPy's true division)."""
        op = _reduce_op(reduce_op)
        leaves, d = tree.flatten_with_def(value)
        arrs = [v.value() if isinstance(v, Variable) else tnp.asarray(v) for v in leaves]
        out = self.strategy._all_reduce_sum(arrs)
        if op is ReduceOp.MEAN:
            n = self.num_replicas_in_sync
            out = [o / n for o in out]
        return tree.unflatten(d, out)

    def __repr__(self):
        return "ReplicaContext(replica %d of %d)" % (self.replica_id_in_sync_group,
                                                     self.num_replicas_in_sync)


def get_replica_context():
    """The current ReplicaContext inside `strategy.run`; None in a strategy's scope outside run
    (cross-replica context); outside any strategy, the default strategy's (one replica)."""
    ctx = LOCAL.replica
    if ctx is not None:
        return ctx
    if LOCAL.strategies:
        return None
    return ReplicaContext(_default_strategy(), 0)


def get_strategy():
    """The strategy whose scope (or `run`) is active, else the default strategy (one replica,
    the current device)."""
    if LOCAL.replica is not None:
        return LOCAL.replica.strategy
    if LOCAL.strategies:
        return LOCAL.strategies[-1]
    return _default_strategy()


def has_strategy():
    """Whether a strategy other than the default one is active."""
    return not isinstance(get_strategy(), _DefaultStrategy)


def in_cross_replica_context():
    """True inside a strategy's scope but outside `strategy.run`."""
    return LOCAL.replica is None and has_strategy()


@contextlib.contextmanager
def experimental_set_strategy(strategy):
    """Enter `strategy.scope()` for the `with` block (None: no change)."""
    if strategy is None:
        yield
        return
    with strategy.scope():
        yield


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """`sum(per_example_loss * sample_weight) / global_batch_size`, as
    `tf.nn.compute_average_loss`: the loss each replica should differentiate so that summing
    the replicas' gradients (what `apply_gradients` does) gives the gradient of the mean over
    the global batch. Without `global_batch_size`, it is this replica's batch size times
    `num_replicas_in_sync`."""
    loss = tnp.asarray(per_example_loss)
    if sample_weight is not None:
        loss = loss * tnp.asarray(sample_weight, dtype=loss.dtype)
    if loss.ndim == 0:
        raise ValueError("compute_average_loss needs per-example losses (an array with a batch "
                         "axis), got a scalar")
    if global_batch_size is None:
        ctx = get_replica_context()
        n = ctx.num_replicas_in_sync if ctx is not None else 1
        global_batch_size = loss.shape[0] * n if loss.shape[0] is not None \
            else _shape0(loss) * n
    total = tnp.sum(loss)
    return total / tnp.asarray(global_batch_size, dtype=total.dtype)


def _shape0(x):
    return shape(x)[0]


# ------------------------------------------------------------------ hooks into ndflow.train
def _aggregate_gradients(grads):
    ctx = LOCAL.replica
    if ctx is None or ctx.num_replicas_in_sync == 1 or not grads:
        return grads
    return ctx.strategy._all_reduce_sum(list(grads))


_HOOKS = {}


def _install_hooks(strategy):
    """Optimizers all-reduce gradients inside `run`; checkpoints are written by one worker."""
    _optimizers._aggregate_gradients = _aggregate_gradients
    if strategy._group_mpi is not None:
        g = strategy._group_mpi
        _checkpoint._should_write = lambda: g.rank == 0
        _checkpoint._written = lambda: g.barrier("the checkpoint written by worker 0")


# ------------------------------------------------------------------ strategies
class Strategy:
    """The base of the strategies: TensorFlow's `tf.distribute.Strategy` API."""

    _group_mpi = None
    _first_replica_id = 0
    _num_workers = 1

    def __init__(self, devices):
        self._devices = [_dev.resolve(d) for d in devices]
        names = [d.name for d in self._devices]
        if len(set(names)) != len(names):
            raise ValueError(f"devices must be distinct, got {names}")
        self._local_group = ThreadGroup(self._devices) if len(self._devices) > 1 else None
        self.extended = _Extended(self)
        _install_hooks(self)

    # ------------------------------------------------------------------ properties
    @property
    def num_replicas_in_sync(self):
        """How many replicas take part in each step (all workers together)."""
        return len(self._devices) * self._num_workers

    @property
    def worker_devices(self):
        return tuple(d.name for d in self._devices)

    # ------------------------------------------------------------------ scope and variables
    @contextlib.contextmanager
    def scope(self):
        """Variables created in this scope (model weights, optimizer state) are mirrored: one
        copy per local replica, initialized equal (from worker 0 across workers)."""
        if LOCAL.strategies and LOCAL.strategies[-1] is not self:
            raise ValueError("Mixing different nf.distribute.Strategy objects: a scope of "
                             f"{LOCAL.strategies[-1]!r} is already active")
        LOCAL.strategies.append(self)
        _variable.CREATORS.stack.append(self._create_variable)
        try:
            yield self
        finally:
            _variable.CREATORS.stack.pop()
            LOCAL.strategies.pop()

    def _create_variable(self, initial_value=None, trainable=True, name=None, dtype=None,
                         shape=None, **kwargs):
        if kwargs:
            raise TypeError(f"Variable(): unexpected keyword argument(s) {sorted(kwargs)}")
        with _dev.device(self._devices[0]):
            first = Variable(initial_value, trainable=trainable, name=name, dtype=dtype,
                             shape=shape)
        self._sync_initial_value(first)
        comps = [first]
        for d in self._devices[1:]:
            with _dev.device(d):
                comps.append(Variable(_dev.to_device(first._value, d), trainable=trainable,
                                      name=name, dtype=dtype))
        return MirroredVariable(self, comps, trainable, name)

    def _sync_initial_value(self, var):
        """Across workers: make every worker start from worker 0's value."""

    # ------------------------------------------------------------------ running replicas
    def run(self, fn, args=(), kwargs=None, options=None):
        """Run `fn(*args, **kwargs)` once per local replica, each on its device with its part
        of every `PerReplica` argument; returns the results, per replica (`PerReplica`
        leaves) when there are several local replicas. `fn` may be an `nf.function`: each
        replica runs the compiled step (traced once per device)."""
        kwargs = kwargs or {}
        n = len(self._devices)
        if n == 1:
            a, kw = self._local_args(args, kwargs, 0)
            with self._in_replica(0):
                return fn(*a, **kw)
        if STATE.traces:
            raise NotImplementedError(
                "strategy.run with several local replicas cannot be called inside nf.function "
                "or vectorized_map: call strategy.run outside and pass it the compiled step, "
                "strategy.run(nf.function(step_fn), args=...), so that each replica runs one "
                "compiled step")

        def body(i):
            def go():
                sync_mode()
                a, kw = self._local_args(args, kwargs, i)
                with self._in_replica(i):
                    return fn(*a, **kw)
            return go

        outs = self._local_group.run([body(i) for i in range(n)])
        return _regroup(outs)

    @contextlib.contextmanager
    def _in_replica(self, i):
        prev = LOCAL.replica
        if prev is not None:
            raise RuntimeError("strategy.run cannot be nested inside strategy.run")
        LOCAL.replica = ReplicaContext(self, i)
        LOCAL.strategies.append(self)
        _variable.CREATORS.stack.append(self._create_variable)
        try:
            with _dev.device(self._devices[i]):
                yield
        finally:
            _variable.CREATORS.stack.pop()
            LOCAL.strategies.pop()
            LOCAL.replica = prev

    def _local_args(self, args, kwargs, i):
        def pick(v):
            if isinstance(v, PerReplica):
                if len(v.values) != len(self._devices):
                    raise ValueError(f"a PerReplica argument has {len(v.values)} values but the "
                                     f"strategy has {len(self._devices)} local replicas")
                return v.values[i]
            return v
        return tree.map_structure(pick, args), tree.map_structure(pick, kwargs)

    def _all_reduce_sum(self, arrays):
        """Sum over every replica of this strategy (local threads, then workers)."""
        if self._local_group is not None:
            arrays = all_reduce_sum(arrays, self._local_group)
        if self._group_mpi is not None and self._group_mpi.size > 1:
            arrays = all_reduce_sum(arrays, self._group_mpi)
        return arrays

    # ------------------------------------------------------------------ cross-replica
    def experimental_local_results(self, value):
        """The values of this worker's replicas, as a tuple (anything else: itself, once)."""
        if isinstance(value, PerReplica):
            return value.values
        return (value,)

    def reduce(self, reduce_op, value, axis=None):
        """Combine a per-replica value over all replicas (of all workers): SUM or MEAN, and
        with `axis` also along that axis of each replica's value (MEAN then divides by the
        total number of elements along it, so uneven batches average correctly). A value that
        is not per-replica is taken as the same on every local replica: MEAN returns it, SUM
        raises a ValueError when there are several local replicas (as TensorFlow)."""
        op = _reduce_op(reduce_op)
        leaves, d = tree.flatten_with_def(value)
        out = [self._reduce_one(op, v, axis, tnp) for v in leaves]
        return tree.unflatten(d, out)

    def _reduce_one(self, op, v, axis, tnp):
        if isinstance(v, PerReplica):
            parts = list(v.values)
        else:
            if len(self._devices) > 1:
                if op is ReduceOp.MEAN and axis is None:
                    return tnp.asarray(v)
                raise ValueError(f"A non-DistributedValues value {v!r} cannot be reduced with "
                                 f"the given reduce op {op}.")
            parts = [v]
        parts = [_to_host_device(tnp.asarray(p.value() if isinstance(p, Variable) else p))
                 for p in parts]
        if axis is not None:
            counts = [p.shape[axis] for p in parts]
            parts = [tnp.sum(p, axis=axis) for p in parts]
        for p in parts[1:]:
            if p.shape != parts[0].shape or p.dtype != parts[0].dtype:
                raise ValueError(f"reduce: the replicas' values have shapes "
                                 f"{tuple(parts[0].shape)} and {tuple(p.shape)} (dtypes "
                                 f"{parts[0].dtype.name}, {p.dtype.name}) after reducing axis "
                                 f"{axis}; they must match")
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        if self._group_mpi is not None and self._group_mpi.size > 1:
            # the primitive, not the group directly: inside nf.function (TensorFlow's
            # `strategy.reduce(strategy.run(...))` in a tf.function) it becomes a graph node
            total, = all_reduce_sum([total], self._group_mpi)
        if op is ReduceOp.SUM:
            return total
        if axis is None:
            return total / self.num_replicas_in_sync
        count = sum(counts)
        if self._group_mpi is not None and self._group_mpi.size > 1:
            count = int(self._group_mpi.all_reduce_sum([np.asarray([count], np.int64)])[0][0])
        return total / count

    def gather(self, value, axis):
        """Concatenate a per-replica value along `axis`, in replica order, over all replicas."""
        parts = [_dev.to_device(tnp.asarray(p), _dev.DEFAULT)
                 for p in (value.values if isinstance(value, PerReplica) else (value,))]
        local = tnp.concatenate(parts, axis=axis)
        g = self._group_mpi
        if g is None or g.size == 1:
            return local
        return tnp.asarray(_mpi_gather(g, np.asarray(local), axis))

    # ------------------------------------------------------------------ input
    def experimental_distribute_dataset(self, dataset, options=None):
        """Each element of `dataset` (any re-iterable of batches: arrays or nested structures
        of arrays with the global batch along axis 0) is split along axis 0 into
        `num_replicas_in_sync` nearly equal parts (the first ones one longer when it does
        not divide); this worker's replicas get theirs, on their devices, as `PerReplica`
        values (a plain batch when the worker has one replica). Every worker must iterate
        the same global batches."""
        return DistributedDataset(self, dataset)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """`dataset_fn(InputContext)` is called once for this worker and returns an iterable
        of per-replica batches (see `InputContext.get_per_replica_batch_size`); each step
        takes one batch per local replica, consecutive batches to consecutive replicas (at
        the end, replicas left without one get an empty batch)."""
        ctx = InputContext(self._num_workers, self._first_replica_id // len(self._devices),
                           self.num_replicas_in_sync)
        return _DatasetFromFunction(self, dataset_fn(ctx))

    def experimental_distribute_values_from_function(self, value_fn):
        """`PerReplica` of `value_fn(ValueContext)` for each local replica."""
        vals = []
        for i, d in enumerate(self._devices):
            with _dev.device(d):
                vals.append(value_fn(ValueContext(self._first_replica_id + i,
                                                  self.num_replicas_in_sync)))
        return vals[0] if len(vals) == 1 else PerReplica(vals)

    def _place(self, batch, i):
        d = self._devices[i]

        def put(x):
            if isinstance(x, (ndarray, np.ndarray)) or np.isscalar(x):
                return _dev.to_device(tnp.asarray(x), d)
            raise TypeError(f"dataset elements must be arrays or nested structures of arrays, "
                            f"got {type(x).__name__}")
        return tree.map_structure(put, batch)

    def __repr__(self):
        return "<%s: %d replica(s) in sync, local devices %s>" % (
            type(self).__name__, self.num_replicas_in_sync, list(self.worker_devices))


class ValueContext:
    """What `experimental_distribute_values_from_function`'s `value_fn` is told."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


class _Extended:
    def __init__(self, strategy):
        self._s = strategy

    @property
    def should_checkpoint(self):
        """Whether this worker writes checkpoints (worker 0)."""
        g = self._s._group_mpi
        return g is None or g.rank == 0

    should_save_summary = should_checkpoint

    @property
    def worker_devices(self):
        return self._s.worker_devices


def _to_host_device(x):
    """x on the default device (where cross-replica results live); traced values as they are."""
    return x if x._t is not None else _dev.to_device(x, _dev.DEFAULT)


def _regroup(outs):
    leaves0, d = tree.flatten_with_def(outs[0])
    all_leaves = [leaves0] + [tree.flatten(o) for o in outs[1:]]
    if any(len(ls) != len(leaves0) for ls in all_leaves):
        raise ValueError("the replicas of strategy.run returned differently structured results")
    return tree.unflatten(d, [None if vals[0] is None else PerReplica(vals)
                              for vals in zip(*all_leaves)])


class _Batches:
    def __init__(self, strategy):
        self._strategy = strategy

    def __iter__(self):
        return _DistributedIterator(self._steps())


class _DistributedIterator:
    def __init__(self, gen):
        self._gen = gen

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)

    def get_next(self):
        return next(self._gen)

    def get_next_as_optional(self):
        try:
            return next(self._gen)
        except StopIteration:
            return None


class DistributedDataset(_Batches):
    """What `experimental_distribute_dataset` returns: iterate it for per-replica batches."""

    def __init__(self, strategy, dataset):
        super().__init__(strategy)
        try:
            iter(dataset)
        except TypeError:
            raise TypeError(f"experimental_distribute_dataset needs an iterable of batches, got "
                            f"{type(dataset).__name__}") from None
        self._dataset = dataset

    def _steps(self):
        s = self._strategy
        n_all = s.num_replicas_in_sync
        nloc = len(s._devices)
        for batch in self._dataset:
            leaves, d = tree.flatten_with_def(batch)
            sizes = set()
            for x in leaves:
                shp = np.shape(x)
                if not shp:
                    raise ValueError("dataset elements must be batches: arrays with a batch "
                                     "axis 0, got a scalar")
                sizes.add(shp[0])
            if len(sizes) != 1:
                raise ValueError(f"the arrays of one dataset element have different batch "
                                 f"sizes {sorted(sizes)}")
            b = sizes.pop()
            q, r = divmod(b, n_all)
            bounds = np.cumsum([0] + [q + (1 if k < r else 0) for k in range(n_all)])
            vals = []
            for i in range(nloc):
                g = s._first_replica_id + i
                lo, hi = int(bounds[g]), int(bounds[g + 1])
                part = tree.unflatten(d, [x[lo:hi] for x in leaves])
                vals.append(s._place(part, i))
            yield vals[0] if nloc == 1 else _per_replica_structure(vals)


class _DatasetFromFunction(_Batches):
    def __init__(self, strategy, dataset):
        super().__init__(strategy)
        self._dataset = dataset

    def _steps(self):
        s = self._strategy
        nloc = len(s._devices)
        it = iter(self._dataset)
        while True:
            vals = []
            for i in range(nloc):
                try:
                    vals.append(s._place(next(it), i))
                except StopIteration:
                    if not vals:
                        return
                    # the last step: replicas without a batch get an empty one (as TF)
                    vals.append(s._place(tree.map_structure(lambda x: x[:0], vals[0]), i))
            yield vals[0] if nloc == 1 else _per_replica_structure(vals)


def _per_replica_structure(vals):
    leaves0, d = tree.flatten_with_def(vals[0])
    rest = [tree.flatten(v) for v in vals[1:]]
    return tree.unflatten(d, [PerReplica(vs) for vs in zip(leaves0, *rest)])


def _mpi_gather(group, local, axis):
    axis = axis % local.ndim
    moved = np.ascontiguousarray(np.moveaxis(local, axis, 0))
    shapes = group.allgather_object(moved.shape)
    if any(sh[1:] != moved.shape[1:] for sh in shapes):
        raise ValueError(f"gather: the workers' values differ in shape outside axis {axis}: "
                         f"{shapes}")
    counts = [int(np.prod(sh)) for sh in shapes]
    out = np.empty((sum(sh[0] for sh in shapes),) + moved.shape[1:], moved.dtype)
    displs = np.cumsum([0] + counts[:-1]).tolist()
    req = group.comm.Iallgatherv(moved, [out, counts, displs, group.MPI._typedict[
        moved.dtype.char]])
    group.wait([req], "a gather of %d bytes" % out.nbytes)
    return np.moveaxis(out, 0, axis)


# ------------------------------------------------------------------ the strategies
class MirroredStrategy(Strategy):
    """Synchronous data parallelism on the devices of one process, as
    `tf.distribute.MirroredStrategy`: one replica per device (default: every GPU, else every
    logical CPU; see `nf.config.set_logical_device_configuration`), Variables mirrored, each
    step's gradients summed across replicas by `apply_gradients`.

    The replicas run in threads, one at a time in replica order (each hands over at a
    collective), so a step gives the same answer every time; on CPU devices this is about
    correctness and testing, not speed."""

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is None:
            devices = [d.name for d in _dev.list_logical_devices("GPU")] or \
                [d.name for d in _dev.list_logical_devices("CPU")]
        devices = list(devices)
        if not devices:
            raise ValueError("MirroredStrategy needs at least one device")
        super().__init__(devices)


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data parallelism over processes, as
    `tf.distribute.MultiWorkerMirroredStrategy`, on MPI (mpi4py; `pip install ndflow[mpi]`):
    launch one process per worker, `mpiexec -n 4 python train.py` (several machines:
    `mpiexec -hosts a,b -n 8 ...` or a hostfile). Each process is one replica on its default
    device (its GPU `local rank % #GPUs` when there are GPUs).

    - Variables created in `scope()` start from worker 0's values (broadcast).
    - `apply_gradients` inside `run` sums the gradients over the workers: per dtype they are
      packed into flat buffers of at most `bytes_per_pack` bytes and reduced in place with
      nonblocking MPI all-reduces on the NumPy memory.
    - Checkpoints (`nf.train.Checkpoint`, `CheckpointManager`) are written by worker 0 only;
      every worker returns the same path after worker 0 has finished writing. A checkpoint
      restores into any number of workers (or a plain process).
    - A collective that does not complete within `timeout_seconds` raises
      `CollectiveTimeoutError`; an uncaught exception in any worker aborts the whole job, so
      a dead or stalled worker never leaves the others hanging.
    """

    def __init__(self, communication_options=None, cluster_resolver=None, comm=None):
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise ImportError("MultiWorkerMirroredStrategy runs on MPI through mpi4py: "
                              "pip install 'ndflow[mpi]' (mpi4py and an MPI such as mpich), "
                              f"then launch with mpiexec ({e})") from None
        opts = communication_options or CommunicationOptions()
        comm = comm if comm is not None else MPI.COMM_WORLD
        group = _col.MPIGroup(comm, opts.bytes_per_pack, opts.timeout_seconds)
        self._group_mpi = group
        self._num_workers = group.size
        self._first_replica_id = group.rank
        self.communication_options = opts
        self.cluster_resolver = _MPIClusterResolver(group)
        gpus = _dev.list_logical_devices("GPU")
        local = gpus[_local_rank(comm) % len(gpus)].name if gpus else "CPU:0"
        super().__init__([local])
        if group.size > 1:
            _col.install_abort_on_error(group)

    def _sync_initial_value(self, var):
        g = self._group_mpi
        if g.size == 1:
            return
        if var._value._t is not None:
            raise ValueError("MultiWorkerMirroredStrategy: a Variable's initial value must be "
                             "concrete")
        # np.array, not ascontiguousarray: that one turns a 0-d value (a step counter) into 1-d
        host = np.array(_dev.device_of(var._value).backend.to_host(var._value._v), order="C")
        wire = host if host.dtype in _col._MPI_SAFE else host.view(np.uint8)
        g.broadcast(wire)
        # set the value itself, not through assign: inside nf.function (an optimizer slot made
        # while tracing) an assign would become part of the graph
        d = _dev.device_of(var._value)
        var._value = wrap_on(d.backend.from_host(host), d) if d is not _dev.DEFAULT \
            else _wrap(host)


def _local_rank(comm):
    try:
        from mpi4py import MPI
        return comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
    except Exception:
        return 0


class _MPIClusterResolver:
    """Who this worker is: `task_type` 'worker', `task_id` its MPI rank."""

    def __init__(self, group):
        self.task_type = "worker"
        self.task_id = group.rank
        self.num_workers = group.size
        self.rpc_layer = "mpi"

    def cluster_spec(self):
        return {"worker": ["rank:%d" % r for r in range(self.num_workers)]}


_DEFAULT = None


def _default_strategy():
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = _DefaultStrategy()
    return _DEFAULT


class _DefaultStrategy(Strategy):
    """The strategy in effect outside any scope: one replica on the current device, plain
    Variables."""

    def __init__(self):
        self._devices = [_dev.DEFAULT]
        self._local_group = None
        self.extended = _Extended(self)

    @contextlib.contextmanager
    def scope(self):
        yield self

    def _create_variable(self, *args, **kwargs):
        return Variable(*args, **kwargs)
