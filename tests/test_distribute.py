"""nf.distribute in one process: MirroredStrategy on two logical CPUs against one device, the
tf.distribute API (scope, run, reduce, datasets, replica contexts), NumPy as the oracle."""
import importlib.util
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

RS = nf.distribute.ReduceOp



def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 12)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, n)]
    w = [rng.standard_normal((12, 8)).astype(np.float32) * np.float32(0.3),
         np.zeros(8, np.float32), rng.standard_normal((8, 4)).astype(np.float32) * np.float32(0.3)]
    return x, y, w


def _train(strategy, compiled, optimizer, global_batch=10, epochs=2):
    x, y, w0 = _data()
    with strategy.scope():
        ws = [nf.Variable(w) for w in w0]
        opt = optimizer()

    def step(xb, yb):
        with nf.GradientTape() as tape:
            h = tnp.maximum(xb @ ws[0] + ws[1], 0) @ ws[2]
            per_example = -tnp.sum(yb * nf.nn.log_softmax(h), axis=-1)
            loss = nf.distribute.compute_average_loss(per_example,
                                                      global_batch_size=global_batch)
        grads = tape.gradient(loss, ws)
        opt.apply_gradients(zip(grads, ws))
        return loss

    fn = nf.function(step) if compiled else step
    batches = [(x[i:i + global_batch], y[i:i + global_batch])
               for i in range(0, len(x), global_batch)]
    losses = []
    for _ in range(epochs):
        for batch in strategy.experimental_distribute_dataset(batches):
            losses.append(float(strategy.reduce(RS.SUM, strategy.run(fn, args=batch),
                                                axis=None)))
    return ws, opt, losses


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "nf.function"])
@pytest.mark.parametrize("optimizer", [lambda: nf.optimizers.SGD(0.1, momentum=0.9),
                                       lambda: nf.optimizers.Adam(0.01)], ids=["SGD", "Adam"])
def test_mirrored_on_two_cpus_trains_like_one_device(two_cpus, compiled, optimizer):
    one = nf.distribute.MirroredStrategy(["CPU:0"])
    two = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    assert (one.num_replicas_in_sync, two.num_replicas_in_sync) == (1, 2)
    w1, opt1, l1 = _train(one, compiled, optimizer)
    w2, opt2, l2 = _train(two, compiled, optimizer)
    np.testing.assert_allclose(l2, l1, rtol=1e-5)
    assert l1[-1] < l1[0]
    for a, b in zip(w1, w2):
        assert isinstance(b, nf.distribute.MirroredVariable) and len(b.values) == 2
        c0, c1 = b.values
        np.testing.assert_array_equal(c0.numpy(), c1.numpy())          # mirrors stay equal
        assert not np.shares_memory(c0.numpy(), c1.numpy())
        assert c0.device.endswith("CPU:0") and c1.device.endswith("CPU:1")
        assert b.dtype == a.dtype == np.float32
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    assert int(opt2.iterations.numpy()) == len(l2)
    for v in opt2.variables():          # slots made inside run are mirrored too
        assert isinstance(v, nf.distribute.MirroredVariable)
        np.testing.assert_array_equal(v.values[0].numpy(), v.values[1].numpy())


def test_experimental_distribute_dataset_splits_global_batches(two_cpus):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    x = np.arange(14.0).reshape(7, 2)
    batches = [(x, {"label": np.arange(7)}), (x[:1], {"label": np.arange(1)})]
    out = list(s.experimental_distribute_dataset(batches))
    assert len(out) == 2
    (xa, la), (xb, lb) = out
    assert isinstance(xa, nf.distribute.PerReplica)
    np.testing.assert_array_equal(xa.values[0].numpy(), x[:4])       # 7 rows: 4 + 3
    np.testing.assert_array_equal(xa.values[1].numpy(), x[4:])
    np.testing.assert_array_equal(la["label"].values[1].numpy(), np.arange(4, 7))
    assert xa.values[1].device.endswith("CPU:1")
    assert xb.values[1].shape == (0, 2)                               # 1 row: 1 + 0
    np.testing.assert_array_equal(s.gather(xa, axis=0).numpy(), x)
    with pytest.raises(ValueError, match="different batch sizes"):
        list(s.experimental_distribute_dataset([(x, x[:3])]))
    with pytest.raises(TypeError, match="iterable of batches"):
        s.experimental_distribute_dataset(3)


def test_distribute_datasets_from_function(two_cpus):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    seen = []

    def dataset_fn(ctx):
        seen.append(ctx)
        b = ctx.get_per_replica_batch_size(8)
        return [np.full((b, 3), k, np.float32) for k in range(5)]

    steps = list(s.distribute_datasets_from_function(dataset_fn))
    ctx, = seen
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (1, 0, 2)
    assert len(steps) == 3          # 5 per-replica batches: the last step's second is empty
    assert [float(v.numpy()[0, 0]) for v in steps[1].values] == [2.0, 3.0]
    assert [v.shape for v in steps[2].values] == [(4, 3), (0, 3)]
    assert steps[2].values[1].device.endswith("CPU:1")
    with pytest.raises(ValueError, match="not divisible"):
        ctx.get_per_replica_batch_size(7)


def test_run_reduce_and_all_reduce_against_numpy(two_cpus):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    parts = [np.array([[1.0, -2.0], [3.0, 0.5], [-0.0, 4.0]]), np.array([[10.0, 20.0]])]
    v = nf.distribute.PerReplica([tnp.asarray(p) for p in parts])
    both = np.concatenate(parts)

    def fn(x):
        ctx = nf.distribute.get_replica_context()
        assert nf.distribute.get_strategy() is s and not nf.distribute.in_cross_replica_context()
        rid = ctx.replica_id_in_sync_group
        total = ctx.all_reduce(RS.SUM, tnp.sum(x, axis=0))
        mean = ctx.all_reduce("MEAN", {"a": tnp.asarray(float(rid)), "b": tnp.max(x)})
        return total, mean, (x * 1).device, rid

    total, mean, devices, rids = s.run(fn, args=(v,))
    assert rids.values == (0, 1)
    assert devices.values[1].endswith("CPU:1")
    for t in total.values:
        np.testing.assert_array_equal(t.numpy(), both.sum(0))
    np.testing.assert_array_equal(mean["a"].values[0].numpy(), 0.5)
    np.testing.assert_array_equal(mean["b"].values[1].numpy(), (4.0 + 20.0) / 2)
    with pytest.raises(ValueError, match=r"shapes \(3, 2\) and \(1, 2\)"):
        s.reduce("SUM", v, axis=None)                # no broadcasting across replicas
    np.testing.assert_array_equal(s.reduce(RS.SUM, v, axis=0).numpy(), both.sum(0))
    np.testing.assert_array_equal(s.reduce(RS.MEAN, v, axis=0).numpy(), both.mean(0))
    scal = nf.distribute.PerReplica([tnp.asarray(2.0), tnp.asarray(5.0)])
    assert float(s.reduce("SUM", scal, axis=None)) == 7.0
    assert float(s.reduce("MEAN", scal, axis=None)) == 3.5
    assert float(s.reduce("MEAN", tnp.asarray(3.0), axis=None)) == 3.0
    with pytest.raises(ValueError, match="non-DistributedValues"):
        s.reduce("SUM", tnp.asarray(3.0), axis=None)
    with pytest.raises(ValueError, match="ReduceOp"):
        s.reduce("PROD", scal, axis=None)
    assert s.experimental_local_results(scal) == scal.values


def test_all_reduce_is_differentiable_and_compiles(two_cpus):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    xs = nf.distribute.PerReplica([tnp.asarray([1.0, 2.0]), tnp.asarray([3.0, -1.0])])
    coef = [np.array([2.0, 3.0]), np.array([-1.0, 5.0])]
    cs = nf.distribute.PerReplica([tnp.asarray(c) for c in coef])

    def fn(x, c):
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(nf.distribute.get_replica_context().all_reduce("SUM", x) * c)
        return y, tape.gradient(y, x)

    for f in (fn, nf.function(fn)):
        y, g = s.run(f, args=(xs, cs))
        x_sum = np.array([4.0, 1.0])
        for r in range(2):
            np.testing.assert_allclose(y.values[r].numpy(), x_sum @ coef[r])
            # d/dx_r sum_q (sum_p x_p) . c_q = sum_q c_q, on every replica
            np.testing.assert_allclose(g.values[r].numpy(), coef[0] + coef[1])


def test_all_reduce_special_values_and_dtypes(two_cpus):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    vals = [np.array([-0.0, np.nan, np.inf, 1.0, -0.0]), np.array([-0.0, 1.0, -np.inf, np.inf, 0.0])]
    ints = [np.array([2**62, -3], np.int64), np.array([2**62, 5], np.int64)]
    empty = [np.zeros((0, 3), np.float32)] * 2
    f16 = [np.array([0.1, 2.0], np.float16), np.array([0.2, -2.0], np.float16)]
    v = nf.distribute.PerReplica([[tnp.asarray(a[r]) for a in (vals, ints, empty, f16)]
                                  for r in range(2)])
    with pytest.warns(RuntimeWarning, match="invalid value"):         # inf - inf, as NumPy
        out = s.run(lambda xs: nf.distribute.get_replica_context().all_reduce("SUM", xs),
                    args=(v,))
    with np.errstate(invalid="ignore"):
        want = [a[0] + a[1] for a in (vals, ints, empty, f16)]        # NumPy's sums
    for r in range(2):
        got = [o.values[r].numpy() for o in out]
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
        assert np.signbit(got[0][0]) and not np.signbit(got[0][4])   # -0 + -0, -0 + 0


def test_all_reduce_under_vectorized_map(two_cpus):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    parts = [np.arange(6.0).reshape(3, 2), -np.arange(6.0).reshape(3, 2) ** 2]
    v = nf.distribute.PerReplica([tnp.asarray(p) for p in parts])

    def fn(x):
        ctx = nf.distribute.get_replica_context()
        return nf.vectorized_map(lambda row: ctx.all_reduce("SUM", [row * 2, tnp.sum(row)]), x)

    for f in (fn, nf.function(fn)):
        rows, sums = s.run(f, args=(v,))
        for r in range(2):
            np.testing.assert_array_equal(rows.values[r].numpy(), 2 * (parts[0] + parts[1]))
            np.testing.assert_array_equal(sums.values[r].numpy(), (parts[0] + parts[1]).sum(1))


def test_mismatched_collectives_and_errors_do_not_hang(two_cpus):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])

    def only_first(x):
        ctx = nf.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == 0:
            return ctx.all_reduce("SUM", x)
        return x

    with pytest.raises(RuntimeError, match="same collective calls"):
        s.run(only_first, args=(tnp.ones(2),))

    def shapes_differ(x):
        ctx = nf.distribute.get_replica_context()
        return ctx.all_reduce("SUM", x[:1 + ctx.replica_id_in_sync_group])

    with pytest.raises(ValueError, match="replica 1 gave arrays"):
        s.run(shapes_differ, args=(tnp.ones(3),))

    def second_fails(x):
        if nf.distribute.get_replica_context().replica_id_in_sync_group == 1:
            raise KeyError("replica 1 broke")
        return nf.distribute.get_replica_context().all_reduce("SUM", x)

    with pytest.raises(KeyError, match="replica 1 broke"):
        s.run(second_fails, args=(tnp.ones(2),))
    with pytest.raises(TypeError, match="bool"):
        s.run(lambda: nf.distribute.get_replica_context().all_reduce("SUM", tnp.ones(2) > 0))
    # still usable afterwards
    out = s.run(lambda: nf.distribute.get_replica_context().all_reduce("SUM", tnp.ones(2)))
    np.testing.assert_array_equal(out.values[1].numpy(), [2.0, 2.0])


def test_contexts_and_scopes(two_cpus):
    assert not nf.distribute.has_strategy()
    default = nf.distribute.get_strategy()
    assert default.num_replicas_in_sync == 1
    assert nf.distribute.get_replica_context().num_replicas_in_sync == 1
    assert default.run(nf.distribute.has_strategy) is False
    assert type(default.run(lambda: nf.Variable(1.0))) is nf.Variable
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    plain = nf.Variable(1.0)
    with s.scope():
        assert nf.distribute.has_strategy() and nf.distribute.in_cross_replica_context()
        assert nf.distribute.get_replica_context() is None
        v = nf.Variable(np.arange(3.0), name="v")
        with pytest.raises(ValueError, match="Mixing"):
            with nf.distribute.MirroredStrategy(["CPU:0"]).scope():
                pass
    assert type(plain) is nf.Variable and isinstance(v, nf.distribute.MirroredVariable)
    assert v.name == "v:0" and v.shape == (3,)
    v.assign([5.0, 6.0, 7.0])                       # cross-replica: every copy
    for c in v.values:
        np.testing.assert_array_equal(c.numpy(), [5.0, 6.0, 7.0])
    assert v.values[1].device.endswith("CPU:1")
    np.testing.assert_array_equal((v + 1).numpy(), [6.0, 7.0, 8.0])
    # inside run each replica reads and writes its own copy
    s.run(lambda: v.assign_add(tnp.full(3, float(
        nf.distribute.get_replica_context().replica_id_in_sync_group))))
    np.testing.assert_array_equal(v.values[1].numpy(), [6.0, 7.0, 8.0])
    np.testing.assert_array_equal(v.values[0].numpy(), [5.0, 6.0, 7.0])
    with pytest.raises(NotImplementedError, match="outside"):
        nf.function(lambda x: s.run(lambda y: y * 2, args=(x,)))(tnp.ones(2))
    one = nf.distribute.MirroredStrategy(["CPU:1"])
    out = nf.function(lambda x: one.run(lambda y: y * 2, args=(x,)))(tnp.ones(2))
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
    with pytest.raises(ValueError, match="distinct"):
        nf.distribute.MirroredStrategy(["CPU:0", "/device:CPU:0"])


def test_checkpoints_of_mirrored_variables(two_cpus, tmp_path):
    s = nf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
    ws, opt, _ = _train(s, True, lambda: nf.optimizers.Adam(0.01), epochs=1)
    path = nf.train.Checkpoint(w=ws, opt=opt).save(str(tmp_path / "c"))
    # into plain Variables
    plain = [nf.Variable(np.zeros(w.shape, np.float32)) for w in ws]
    nf.train.Checkpoint(w=plain).restore(path).expect_partial()
    for p, w in zip(plain, ws):
        np.testing.assert_array_equal(p.numpy(), w.numpy())
    # into another mirrored model: every copy restored, each on its device
    with s.scope():
        again = [nf.Variable(np.zeros(w.shape, np.float32)) for w in ws]
    nf.train.Checkpoint(w=again).restore(path).expect_partial()
    for a, w in zip(again, ws):
        for c in a.values:
            np.testing.assert_array_equal(c.numpy(), w.numpy())
        assert a.values[1].device.endswith("CPU:1")


def test_compute_average_loss():
    per = tnp.asarray([1.0, 2.0, 3.0, 6.0])
    assert float(nf.distribute.compute_average_loss(per)) == 3.0
    assert float(nf.distribute.compute_average_loss(per, global_batch_size=8)) == 1.5
    assert float(nf.distribute.compute_average_loss(per, sample_weight=[1, 0, 0, 1],
                                                    global_batch_size=7)) == 1.0
    with pytest.raises(ValueError, match="per-example"):
        nf.distribute.compute_average_loss(tnp.asarray(1.0))


def test_import_ndflow_loads_neither_mpi4py_nor_dask():
    code = ("import sys, ndflow as nf; nf.distribute.MirroredStrategy(); "
            "assert 'mpi4py' not in sys.modules and 'dask' not in sys.modules, "
            "[m for m in sys.modules if m.startswith(('mpi4py', 'dask'))]")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root,
                   env=dict(os.environ, PYTHONPATH=root))


_NO_NUMBA = ("import sys, runpy, ndflow as nf; nf.config.settings.numba = 'off'; "
             "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def _example_loss(root, cwd, args, mpi=0):
    # (fused kernels on tier 0: no numba compile in a short run)
    cmd = [sys.executable, "-c", _NO_NUMBA,
           os.path.join(root, "examples", "distributed_training.py")] + list(args)
    if mpi:
        cmd = [shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec",
               "-n", str(mpi)] + cmd
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=root)).stdout
    line = [ln for ln in out.splitlines() if "final loss" in ln][-1]
    return line, float(line.split("final loss ")[1].split(",")[0]), "resumed" in out


def test_example_program_gives_one_devices_answer_on_two_replicas(tmp_path):
    """The modes run one after another in one directory, as the distribution guide lists them:
    each starts afresh (the checkpoint the one before wrote is resumed only with --resume)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    losses = []
    for mode in ("--single", "--mirrored"):
        line, loss, resumed = _example_loss(root, tmp_path, [mode])
        assert ("2 replica(s)" in line) == (mode == "--mirrored"), line
        assert not resumed
        losses.append(loss)
    if shutil.which("mpiexec", path=os.path.dirname(sys.executable)) and \
            importlib.util.find_spec("mpi4py"):
        line, loss, resumed = _example_loss(root, tmp_path, [], mpi=2)
        assert "2 replica(s)" in line and not resumed, line
        losses.append(loss)
    assert all(v == pytest.approx(losses[0], rel=1e-5) for v in losses) and losses[0] < 1.0, losses
    # asked to, a run continues from the checkpoint the last one left: 20 more steps
    line, loss, resumed = _example_loss(root, tmp_path, ["--single", "--resume"])
    assert resumed and loss < losses[0] * 0.9, (loss, losses)
