"""MultiWorkerMirroredStrategy on MPI with real processes: `mpiexec -n 2` runs
tests/distribute_worker.py. Skipped without mpi4py or mpiexec."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import ndflow as nf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "distribute_worker.py")
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
if MPIEXEC is None:
    pytest.skip("no mpiexec (pip install 'ndflow[mpi]')", allow_module_level=True)

sys.path.insert(0, HERE)
import distribute_worker as worker  # noqa: E402


def mpirun(mode, out, n=2, timeout=120, env=None):
    """Run the worker program on `n` MPI processes; returns (returncode, output, seconds)."""
    e = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1",
             OPENBLAS_NUM_THREADS="1", **(env or {}))
    t0 = time.monotonic()
    p = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, WORKER, mode, str(out)],
                       capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0




def single_process_run(steps_then_resume=False):
    strategy = nf.distribute.get_strategy()
    model, _, step = worker.build(strategy, seed=1)
    losses = worker.train(strategy, model, step, worker.batches(worker.STEPS))
    if steps_then_resume:
        losses = worker.train(strategy, model, step,
                              worker.batches(worker.RESUME_STEPS, offset=worker.STEPS))
    return model, losses


def test_two_workers_train_like_one_process_and_checkpoint_once(tmp_path):
    # one test for both launches, so that pytest-xdist does not run the training twice
    rc, log, _ = mpirun("train", tmp_path)
    assert rc == 0, log
    rc, log, _ = mpirun("resume", tmp_path)
    assert rc == 0, log
    two_workers_train_like_one_process_on_the_global_batch(tmp_path)
    checkpoint_written_once_restores_into_any_number_of_workers(tmp_path)


def two_workers_train_like_one_process_on_the_global_batch(trained):
    w0, w1 = (np.load(trained / ("weights-%d.npz" % r)) for r in (0, 1))
    model, losses = single_process_run()
    assert len(model.trainable_variables) == 4
    for i, v in enumerate(model.trainable_variables):
        # the workers hold identical weights, equal to one process's up to rounding
        np.testing.assert_array_equal(w0[str(i)], w1[str(i)])
        assert w0[str(i)].dtype == v.dtype == np.float32
        np.testing.assert_allclose(w0[str(i)], v.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w0["losses"], losses, rtol=1e-6)
    assert losses[-1] < losses[0]               # it learns
    # worker 1 was initialized from another seed: the strategy broadcast worker 0's weights
    fresh = worker.Classifier(seed=101)
    assert not np.allclose(fresh.trainable_variables[1].numpy(), w1["1"], atol=1e-2)


def checkpoint_written_once_restores_into_any_number_of_workers(trained):
    files = sorted(os.listdir(trained / "ckpt"))
    assert files == ["checkpoint", "ckpt-1.safetensors"], files      # worker 0 wrote, once
    # into one plain process
    model = worker.Classifier(seed=7)
    opt = nf.optimizers.Adam(1e-3)
    nf.train.Checkpoint(model=model, optimizer=opt).restore(
        nf.train.latest_checkpoint(str(trained / "ckpt"))).expect_partial()
    w0 = np.load(trained / "weights-0.npz")
    for i, v in enumerate(model.trainable_variables):
        np.testing.assert_array_equal(v.numpy(), w0[str(i)])
    assert int(opt.iterations.numpy()) == worker.STEPS
    # into two workers (fresh models from other seeds) that train on: the same as one process
    # training without interruption, Adam's moments included (restored when first made)
    model, losses = single_process_run(steps_then_resume=True)
    r0, r1 = (np.load(trained / ("resumed-%d.npz" % r)) for r in (0, 1))
    for i, v in enumerate(model.trainable_variables):
        np.testing.assert_array_equal(r0[str(i)], r1[str(i)])
        np.testing.assert_allclose(r0[str(i)], v.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r0["losses"], losses, rtol=1e-6)


def test_collectives_across_workers(tmp_path):
    # bucketed all-reduce of mixed dtypes (float16/bfloat16 travel as float32, 0-d, empty),
    # MEAN, reduce along an axis with uneven per-worker rows, gather
    rc, log, _ = mpirun("collectives", tmp_path)
    assert rc == 0, log
    assert sorted(os.listdir(tmp_path)) == ["collectives-ok-0", "collectives-ok-1"], log


def test_a_stalled_worker_makes_the_others_fail_with_a_clear_error(tmp_path):
    rc, log, seconds = mpirun("stall", tmp_path, env={"NDFLOW_COLLECTIVE_TIMEOUT": "2"},
                              timeout=60)
    assert rc != 0
    assert "CollectiveTimeoutError" in log and "worker 0 of 2 waited 2 s" in log, log
    assert not any(f.startswith("finished") for f in os.listdir(tmp_path)), log
    assert seconds < 30, seconds


def test_a_crashed_worker_aborts_the_job(tmp_path):
    rc, log, seconds = mpirun("crash", tmp_path, timeout=60)
    assert rc != 0
    assert "worker 1 failed on purpose" in log, log
    assert not any(f.startswith("finished") for f in os.listdir(tmp_path)), log
    assert seconds < 30, seconds
