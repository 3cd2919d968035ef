"""Collectives: the all-reduce primitive and the groups of replicas that carry it out.

`all_reduce_sum_p` is an ordinary primitive (an effect, so the compiler never folds, merges or
drops it): eager it runs at once, inside `nf.function` it is a node of the graph whose kernel
performs the collective when the compiled step runs, and its gradient is again an all-reduce of
the cotangents (the transpose of "sum over replicas, result on every replica"). One call takes
any number of buffers, so an optimizer all-reduces all of a model's gradients with one bind.

Who the other replicas are is the `group` parameter:

- `ThreadGroup`: the replicas of one process (`MirroredStrategy` on several logical devices),
  each in its own thread. Threads run one at a time in replica order, handing over at each
  collective, so the result is deterministic and a compiled step's tracing never races.
- `MPIGroup`: one replica per process (`MultiWorkerMirroredStrategy`), over mpi4py. Buffers are
  packed per dtype into few flat buckets and reduced in place with nonblocking `Iallreduce` on
  the NumPy memory itself (no pickling); a deadline turns a dead or stalled worker into a clear
  `CollectiveTimeoutError` instead of a hang.
"""
import os
import sys
import threading
import time
import zlib

import numpy as np

from ..core.primitive import Primitive, Aval, bind

__all__ = ["all_reduce_sum", "ThreadGroup", "MPIGroup", "CollectiveTimeoutError",
           "current_replica"]


class CollectiveTimeoutError(TimeoutError):
    """A collective did not complete within its deadline: another worker has died, stalled or
    is running a different program (TensorFlow raises `DeadlineExceededError` here)."""


class _Local(threading.local):
    def __init__(self):
        self.replica = None      # the ReplicaContext of the replica this thread runs
        self.strategies = []     # strategy scopes entered in this thread, innermost last


LOCAL = _Local()


def current_replica():
    """The ReplicaContext this thread is running (inside `strategy.run`), or None."""
    return LOCAL.replica


# ------------------------------------------------------------------ the primitive
def _all_reduce_impl(*bufs, group):
    return tuple(group.all_reduce_sum(list(bufs)))


def _all_reduce_abstract(*avals, group):
    return tuple(Aval(a.shape, a.dtype) for a in avals)


all_reduce_sum_p = Primitive("all_reduce_sum", _all_reduce_impl, _all_reduce_abstract,
                             multiple_results=True, effect=True)


@all_reduce_sum_p.def_vjp
def _all_reduce_vjp(cts, *primals, group):
    """d(sum_r x_r)/dx_r = 1 on every replica: each replica's cotangent is the sum of all
    replicas' cotangents of the reduced value."""
    return bind(all_reduce_sum_p, *cts, group=group)


@all_reduce_sum_p.def_jvp
def _all_reduce_jvp(tangents, *primals, group):
    return bind(all_reduce_sum_p, *primals, group=group), \
        bind(all_reduce_sum_p, *tangents, group=group)


@all_reduce_sum_p.def_batch
def _all_reduce_batch(args, axes, group):
    """Summing across replicas is elementwise, so a batch axis is one more axis of the buffer
    (every replica batches alike: they run the same program)."""
    return bind(all_reduce_sum_p, *args, group=group), tuple(axes)


def all_reduce_sum(values, group):
    """Sum each array of `values` (a list) over the replicas of `group`; one collective."""
    if not values:
        return []
    return list(bind(all_reduce_sum_p, *values, group=group))


def _check_reducible(dtype, what):
    if dtype == np.bool_ or dtype.kind not in "iufc" and dtype.name != "bfloat16":
        raise TypeError(f"{what}: cannot sum arrays of dtype {dtype.name} across replicas; "
                        f"cast to a numeric dtype first")


# ------------------------------------------------------------------ in-process replicas
class _Aborted(BaseException):
    """Unwinds a replica thread after another replica failed (not an Exception, so user code
    and the compiled-call error mapping do not catch it)."""


class ThreadGroup:
    """The local replicas of a MirroredStrategy, one thread each, run one at a time."""

    def __init__(self, devices):
        self.devices = list(devices)
        self.n = len(self.devices)
        self._cond = threading.Condition()
        self._reset()

    def _reset(self):
        self._turn = 0
        self._arrived = 0
        self._slots = [None] * self.n
        self._results = None
        self._done = [False] * self.n
        self._error = None

    def __repr__(self):
        return "ThreadGroup(%d replicas)" % self.n

    def run(self, bodies):
        """Run `bodies[i]()` as replica i; returns their results in order, or raises the first
        replica's exception."""
        self._reset()
        outs = [None] * self.n
        threads = [threading.Thread(target=self._main, args=(i, bodies[i], outs), daemon=True,
                                    name="ndflow-replica-%d" % i) for i in range(self.n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._error is not None:
            raise self._error[1]
        return outs

    def _wait_turn(self, i):
        while self._turn != i and self._error is None:
            self._cond.wait()
        if self._error is not None:
            raise _Aborted()

    def _fail(self, i, exc):
        if self._error is None:
            self._error = (i, exc)
        self._cond.notify_all()

    def _main(self, i, body, outs):
        try:
            with self._cond:
                self._wait_turn(i)
            out = body()
        except _Aborted:
            return
        except BaseException as e:          # noqa: B902  (handed to the caller's thread)
            with self._cond:
                self._fail(i, e)
            return
        with self._cond:
            outs[i] = out
            self._done[i] = True
            if self._arrived:
                waiting = [r for r in range(self.n) if self._slots[r] is not None]
                self._fail(i, RuntimeError(
                    f"replica {i} returned from the function given to strategy.run while "
                    f"replica(s) {waiting} wait in an all-reduce: every replica must make the "
                    f"same collective calls (all_reduce, apply_gradients) in the same order"))
                return
            self._turn = i + 1
            self._cond.notify_all()

    def all_reduce_sum(self, bufs):
        ctx = LOCAL.replica
        if ctx is None or ctx._group is not self:
            raise RuntimeError("all_reduce runs inside strategy.run, in a replica of the "
                               "strategy that made it")
        i = ctx.local_id
        with self._cond:
            if any(self._done):
                self._fail(i, RuntimeError(
                    f"replica {i} called an all-reduce after replica(s) "
                    f"{[r for r in range(self.n) if self._done[r]]} returned: every replica "
                    f"must make the same collective calls in the same order"))
                raise _Aborted()
            self._slots[i] = bufs
            self._arrived += 1
            if self._arrived == self.n:
                try:
                    self._results = self._reduce()
                except Exception as e:
                    self._fail(i, e)
                    raise _Aborted()
                self._slots = [None] * self.n
                self._arrived = 0
                self._turn = 0
            else:
                self._turn = i + 1
            self._cond.notify_all()
            self._wait_turn(i)
            return self._results[i]

    def _reduce(self):
        first = self._slots[0]
        for r, bufs in enumerate(self._slots):
            sig = [(b.shape, b.dtype) for b in bufs]
            if sig != [(b.shape, b.dtype) for b in first]:
                raise ValueError(
                    f"all_reduce: replica {r} gave arrays {_describe(bufs)} but replica 0 gave "
                    f"{_describe(first)}; every replica must reduce the same shapes and dtypes")
        results = [[] for _ in range(self.n)]
        for k in range(len(first)):
            _check_reducible(first[k].dtype, "all_reduce")
            # sum in replica order on the host: the same answer on every replica, every run
            hosts = [d.backend.to_host(s[k]) for d, s in zip(self.devices, self._slots)]
            total = hosts[0].copy()
            for h in hosts[1:]:
                total += h
            for r, d in enumerate(self.devices):
                results[r].append(_on_device(d, total if r == 0 else total.copy()))
        return [tuple(rs) for rs in results]


def _on_device(d, host):
    if d.backend.host:
        return host
    return d.backend.from_host(host, d.gpu_id)    # this replica's GPU, not the current one


def _describe(bufs):
    return "[" + ", ".join("%s%s" % (b.dtype.name, list(b.shape)) for b in bufs) + "]"


# ------------------------------------------------------------------ MPI (one replica per process)
_DEFAULT_TIMEOUT = 300.0
_MPI_SAFE = {np.dtype(t) for t in ("float32", "float64", "int8", "int16", "int32", "int64",
                                   "uint8", "uint16", "uint32", "uint64", "complex64",
                                   "complex128")}


def default_timeout():
    """Seconds a collective may wait for the other workers: NDFLOW_COLLECTIVE_TIMEOUT, else 300."""
    v = os.environ.get("NDFLOW_COLLECTIVE_TIMEOUT")
    return float(v) if v else _DEFAULT_TIMEOUT


class MPIGroup:
    """All processes of an MPI communicator, one replica each.

    `all_reduce_sum` packs the buffers of each dtype, in order, into flat buckets of at most
    `bytes_per_pack` bytes (one bucket holds any single larger buffer), starts one in-place
    `Iallreduce` per bucket, and waits for all of them with a deadline. float16 and bfloat16
    travel as float32 (MPI has no such types) and are rounded back once."""

    def __init__(self, comm, bytes_per_pack=16 << 20, timeout_seconds=None):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.bytes_per_pack = int(bytes_per_pack) if bytes_per_pack else 16 << 20
        self.timeout = float(timeout_seconds) if timeout_seconds else default_timeout()
        self.failed = False
        self._buffers = {}
        self._layouts = set()
        self.stats = {"calls": 0, "buckets": 0, "bytes": 0, "seconds": 0.0}

    def __repr__(self):
        return "MPIGroup(rank %d of %d)" % (self.rank, self.size)

    # ---------------------------------------------------------------- waiting with a deadline
    def wait(self, requests, what):
        """Complete `requests`, or raise CollectiveTimeoutError after `timeout` seconds."""
        MPI = self.MPI
        if MPI.Request.Testall(requests):
            return
        start = time.monotonic()
        deadline = start + self.timeout
        pause = 0.0
        while not MPI.Request.Testall(requests):
            now = time.monotonic()
            if now > deadline:
                self.failed = True
                raise CollectiveTimeoutError(
                    f"ndflow.distribute: worker {self.rank} of {self.size} waited "
                    f"{self.timeout:g} s for {what} and the other workers did not join: one "
                    f"has died, stalled or runs a different program. This job will be "
                    f"aborted (MPI_Abort) so that no worker hangs. (The limit is "
                    f"CommunicationOptions(timeout_seconds=...) or NDFLOW_COLLECTIVE_TIMEOUT.)")
            # MPI progresses only while we call Test, and a large all-reduce takes many rounds
            # that each need both sides: poll, yielding the core between polls (busy spinning
            # starves the partner when workers share cores); only after a second, when a
            # partner is evidently stuck, back off to sleeps of up to 1 ms
            if now - start < 1.0:
                time.sleep(0)
            else:
                pause = min(1e-3, pause * 1.5 + 2e-5)
                time.sleep(pause)

    # ---------------------------------------------------------------- collectives
    def _buffer(self, j, dtype, n):
        # the same bucket memory every step: MPI's shared-memory and network transports are
        # many times slower on memory they have not seen before (registration, page faults)
        key = (j, dtype)
        buf = self._buffers.get(key)
        if buf is None or buf.size < n:
            buf = self._buffers[key] = np.empty(n, dtype)
        return buf[:n]

    def _check_layout(self, hosts):
        """The first time this worker reduces a list of shapes and dtypes, check that every
        worker reduces the same one (a mismatch would otherwise pair unrelated buffers)."""
        layout = tuple((h.shape, h.dtype.str) for h in hosts)
        if layout in self._layouts:
            return
        code = zlib.crc32(repr(layout).encode())
        probe = np.array([code, -code], np.int64)
        self.wait([self.comm.Iallreduce(self.MPI.IN_PLACE, probe, op=self.MPI.MAX)],
                  "the check that all workers all-reduce the same arrays")
        if probe[0] != code or probe[1] != -code:
            raise ValueError(
                f"all_reduce: worker {self.rank} reduces arrays "
                f"{[(tuple(sh), np.dtype(dt).name) for sh, dt in layout]} but another worker "
                f"reduces different ones; every worker must make the same collective calls "
                f"with the same shapes and dtypes (the same model, the same gradients)")
        self._layouts.add(layout)

    def all_reduce_sum(self, bufs):
        t0 = time.perf_counter()
        hosts, backs = [], []
        for b in bufs:
            dt = np.dtype(b.dtype)
            _check_reducible(dt, "all_reduce")
            h = b if isinstance(b, np.ndarray) else np.asarray(b.get() if hasattr(b, "get")
                                                              else b)
            backs.append(None if isinstance(b, np.ndarray) else type(b))
            hosts.append(h)
        self._check_layout(hosts)
        # buckets: (wire dtype, [(index, size)], flat buffer)
        by_dtype = {}
        for k, h in enumerate(hosts):
            wire = h.dtype if h.dtype in _MPI_SAFE else np.dtype(np.float32)
            by_dtype.setdefault(wire, []).append(k)
        buckets = []
        for wire, ks in by_dtype.items():
            cur, nbytes = [], 0
            for k in ks:
                sz = hosts[k].size * wire.itemsize
                if cur and nbytes + sz > self.bytes_per_pack:
                    buckets.append((wire, cur))
                    cur, nbytes = [], 0
                cur.append(k)
                nbytes += sz
            if cur:
                buckets.append((wire, cur))
        flats, reqs, total = [], [], 0
        for j, (wire, ks) in enumerate(buckets):
            flat = self._buffer(j, wire, sum(hosts[k].size for k in ks))
            off = 0
            for k in ks:
                n = hosts[k].size
                flat[off:off + n] = hosts[k].reshape(-1)
                off += n
            flats.append(flat)
            total += flat.nbytes
            reqs.append(self.comm.Iallreduce(self.MPI.IN_PLACE, flat, op=self.MPI.SUM))
        self.wait(reqs, "an all-reduce of %d buffer(s) in %d bucket(s), %d bytes"
                  % (len(bufs), len(buckets), total))
        out = [None] * len(bufs)
        for flat, (wire, ks) in zip(flats, buckets):
            off = 0
            for k in ks:
                h = hosts[k]
                # a copy: the bucket is reused by the next all-reduce
                out[k] = flat[off:off + h.size].reshape(h.shape).astype(h.dtype, copy=True)
                off += h.size
        for k, back in enumerate(backs):
            if back is not None:           # a device buffer: back where it came from
                import importlib
                xp = importlib.import_module(back.__module__.split(".")[0])
                out[k] = xp.asarray(out[k])
        st = self.stats
        st["calls"] += 1
        st["buckets"] += len(buckets)
        st["bytes"] += total
        st["seconds"] += time.perf_counter() - t0
        return out

    def broadcast(self, buf, root=0):
        """`buf` (a NumPy array) from `root` to every worker, in place."""
        req = self.comm.Ibcast(buf, root=root)
        self.wait([req], "a broadcast of %d bytes from worker %d" % (buf.nbytes, root))
        return buf

    def barrier(self, what="a barrier"):
        self.wait([self.comm.Ibarrier()], what)

    def allgather_object(self, obj):
        """Small Python objects (shapes, counts) from every worker; pickled, so only for
        metadata the workers produced themselves."""
        return self.comm.allgather(obj)


def install_abort_on_error(group):
    """An uncaught exception in one worker aborts the whole MPI job (after printing it), so the
    others fail at once instead of waiting in their next collective; so does leaving the
    program after a collective timed out (MPI_Finalize would wait for the lost worker)."""
    import atexit
    previous = sys.excepthook

    def abort():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            # the launcher forwards output asynchronously and stops once the job aborts: give
            # it a moment, so the error that explains the abort reaches the terminal
            time.sleep(0.5)
        finally:
            group.comm.Abort(1)

    def hook(tp, value, tb):
        previous(tp, value, tb)
        abort()

    sys.excepthook = hook

    def at_exit():
        if group.failed:
            abort()

    atexit.register(at_exit)
