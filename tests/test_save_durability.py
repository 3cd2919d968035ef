"""Saving never loses the last good state: a process killed (SIGKILL) at any point of
`CheckpointManager.save`, `Checkpoint.write` or `nf.saved_model.save` leaves a directory whose
latest checkpoint (or saved model) loads, with the values of a complete save; and threads or
processes saving into one directory at the same time leave it consistent."""
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.train._files import LOCK_NAME

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

# A child that saves, blocking at a chosen step (the k-th call of os.replace or os.remove,
# before or after it) so that the parent can kill it exactly there; or, with point "loop",
# saving again and again until it is killed at a random moment.
_CHILD = textwrap.dedent("""
    import os, sys, time
    import numpy as np, ndflow as nf
    what, d, point, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    n = 2000
    v = nf.Variable(np.zeros(n))
    w = nf.Variable(np.zeros((3, 4), np.float32))
    step = [0]

    def set_state(i):
        v.assign(np.full(n, float(i)))
        w.assign(np.full((3, 4), float(i), np.float32))

    if what == "manager":
        mgr = nf.train.CheckpointManager(nf.train.Checkpoint(v=v, w=w), d, max_to_keep=1)
        save = mgr.save
    elif what == "write":
        ck = nf.train.Checkpoint(v=v, w=w)
        save = lambda: ck.write(os.path.join(d, "fixed"))
    else:
        f = nf.function(lambda x: x + v[0], input_signature=[nf.TensorSpec([2], "float64")])
        save = lambda: nf.saved_model.save(f, d)
    set_state(1)
    save()
    calls = {"replace": 0, "remove": 0}

    def hook(kind, real):
        def call(*a, **kw):
            calls[kind] += 1
            if point == "before_" + kind and calls[kind] == k:
                print("blocked", flush=True)
                time.sleep(600)
            out = real(*a, **kw)
            if point == "after_" + kind and calls[kind] == k:
                print("blocked", flush=True)
                time.sleep(600)
            return out
        return call
    os.replace = hook("replace", os.replace)
    os.remove = hook("remove", os.remove)
    print("ready", flush=True)
    i = 2
    while True:
        set_state(i)
        save()
        i += 1
        if point != "loop":
            print("finished", flush=True)
            time.sleep(600)
""")


def _env():
    return dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))


def _kill_child(tmp_path, what, point, k, delay=0.0):
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    d = tmp_path / "d"
    d.mkdir(exist_ok=True)
    p = subprocess.Popen([sys.executable, str(script), what, str(d), point, str(k)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        lines = []
        want = "ready" if point == "loop" else "blocked"
        deadline = time.time() + 120
        while time.time() < deadline:
            line = p.stdout.readline().strip()
            if not line:
                raise AssertionError(f"child ended: {p.stderr.read()[-2000:]}")
            lines.append(line)
            if line == want or line == "finished":
                break
        if point == "loop":
            time.sleep(delay)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
        p.stdout.close()
        p.stderr.close()
    return str(d), lines


def _restored(path):
    v, w = nf.Variable(np.zeros(2000)), nf.Variable(np.zeros((3, 4), np.float32))
    nf.train.Checkpoint(v=v, w=w).restore(path).assert_existing_objects_matched()
    i = float(v.numpy()[0])
    # one complete save: every value of both Variables from the same step
    assert np.all(v.numpy() == i) and np.all(w.numpy() == i), "a checkpoint mixes two saves"
    return i


# os.replace calls of one manager save: the tensor file, the state file, (sweep: os.remove),
# the state file again
_MANAGER_POINTS = [("before_replace", 1), ("after_replace", 1), ("before_replace", 2),
                   ("after_replace", 2), ("before_remove", 1), ("after_remove", 1),
                   ("before_replace", 3), ("after_replace", 3)]


@pytest.mark.parametrize("point, k", _MANAGER_POINTS)
def test_manager_save_killed_at_each_step_leaves_a_loadable_latest(tmp_path, point, k):
    d, lines = _kill_child(tmp_path, "manager", point, k)
    assert "blocked" in lines, lines
    latest = nf.train.latest_checkpoint(d)
    assert latest is not None
    assert _restored(latest) in (1.0, 2.0)
    # a new manager (the next run) picks up where it stopped and saves on
    v, w = nf.Variable(np.full(2000, 7.0)), nf.Variable(np.full((3, 4), 7.0, np.float32))
    mgr = nf.train.CheckpointManager(nf.train.Checkpoint(v=v, w=w), d, max_to_keep=1)
    assert mgr.latest_checkpoint == latest
    mgr.save()
    assert _restored(nf.train.latest_checkpoint(d)) == 7.0
    assert len(mgr.checkpoints) == 1 and os.path.exists(mgr.checkpoints[0] + ".safetensors")
    # (a checkpoint file written but not yet recorded when the process died stays on disk,
    # unmanaged, as with TensorFlow; temporary files of a killed write are removed)
    assert not [f for f in os.listdir(d) if f.endswith(".tmp")]


@pytest.mark.parametrize("rep", range(6))
def test_manager_saving_in_a_loop_killed_at_random_moments(tmp_path, rep):
    d, _ = _kill_child(tmp_path, "manager", "loop", 0, delay=random.Random(rep).uniform(0, 1))
    latest = nf.train.latest_checkpoint(d)
    assert latest is not None
    assert _restored(latest) >= 1.0


@pytest.mark.parametrize("point", ["before_replace", "after_replace"])
def test_checkpoint_write_killed_leaves_the_old_or_the_new_file(tmp_path, point):
    d, lines = _kill_child(tmp_path, "write", point, 1)
    assert "blocked" in lines
    assert _restored(os.path.join(d, "fixed")) == (1.0 if point == "before_replace" else 2.0)


# os.replace calls of a saved_model.save: the new tensor file, saved_model.json; then the old
# tensor file is removed
@pytest.mark.parametrize("point, k", [("before_replace", 1), ("after_replace", 1),
                                      ("before_replace", 2), ("after_replace", 2),
                                      ("before_remove", 1), ("after_remove", 1)])
def test_saved_model_save_killed_at_each_step_leaves_a_loadable_model(tmp_path, point, k):
    d, lines = _kill_child(tmp_path, "saved_model", point, k)
    assert "blocked" in lines
    got = nf.saved_model.load(d)(np.zeros(2)).numpy()
    committed = point == "after_replace" and k == 2 or point.endswith("remove")
    np.testing.assert_array_equal(got, [2.0, 2.0] if committed else [1.0, 1.0])
    # the next save cleans up what the killed one left
    f = nf.function(lambda x: x * 3.0, input_signature=[nf.TensorSpec([2], "float64")])
    nf.saved_model.save(f, d)
    assert sorted(os.listdir(d))[-1] == "saved_model.json"
    assert len([p for p in os.listdir(d) if p.startswith("data-")]) == 1
    np.testing.assert_array_equal(nf.saved_model.load(d)(np.ones(2)).numpy(), [3.0, 3.0])


# ------------------------------------------------------------------ concurrent saves
def _no_leftovers(d):
    names = os.listdir(d)
    assert LOCK_NAME not in names
    assert not [n for n in names if n.endswith(".tmp")], names


def _in_threads(worker, args):
    """Run `worker(a)` for every `a` in threads at once; the exceptions they raised."""
    errors = []

    def run(a):
        try:
            worker(a)
        except Exception as e:      # noqa: BLE001  (returned to the test)
            errors.append(e)
    threads = [threading.Thread(target=run, args=(a,)) for a in args]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


def test_threads_saving_functions_into_one_directory(tmp_path):
    d = str(tmp_path / "m")

    def worker(t):
        f = nf.function(lambda x: x + float(t), input_signature=[nf.TensorSpec([2], "float64")])
        for _ in range(4):
            nf.saved_model.save(f, d)
            nf.saved_model.load(d)(np.zeros(2))
    errors = _in_threads(worker, range(4))
    assert not errors, errors
    got = nf.saved_model.load(d)(np.zeros(2)).numpy()
    assert got[0] in (0.0, 1.0, 2.0, 3.0) and got[0] == got[1]
    assert len([p for p in os.listdir(d) if p.startswith("data-")]) == 1
    _no_leftovers(d)


_SAVER = textwrap.dedent("""
    import sys, numpy as np, ndflow as nf
    what, d, t = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if what == "saved_model":
        f = nf.function(lambda x: x + float(t), input_signature=[nf.TensorSpec([2], "float64")])
        for _ in range(6):
            nf.saved_model.save(f, d)
    else:
        v = nf.Variable(np.full(500, float(t)))
        mgr = nf.train.CheckpointManager(nf.train.Checkpoint(v=v), d, max_to_keep=2,
                                         checkpoint_name="ckpt%d" % (t % 2))
        for i in range(6):
            mgr.save()
            nf.train.Checkpoint(v=v).save(d + "/plain")
""")


def _savers(tmp_path, what, n=3):
    script = tmp_path / "saver.py"
    script.write_text(_SAVER)
    d = str(tmp_path / "d")
    os.makedirs(d, exist_ok=True)
    procs = [subprocess.Popen([sys.executable, str(script), what, d, str(t)], env=_env(),
                              stderr=subprocess.PIPE, text=True) for t in range(n)]
    return d, procs


def _finish(procs):
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]


def test_processes_saving_functions_into_one_directory_while_another_loads(tmp_path):
    d, procs = _savers(tmp_path, "saved_model")
    loads = 0
    while any(p.poll() is None for p in procs):
        if os.path.exists(os.path.join(d, "saved_model.json")):
            got = nf.saved_model.load(d)(np.zeros(2)).numpy()
            assert got[0] in (0.0, 1.0, 2.0)
            loads += 1
        time.sleep(0.01)
    _finish(procs)
    assert nf.saved_model.load(d)(np.zeros(2)).numpy()[0] in (0.0, 1.0, 2.0)
    assert len([p for p in os.listdir(d) if p.startswith("data-")]) == 1
    _no_leftovers(d)


def test_threads_and_processes_saving_checkpoints_into_one_directory(tmp_path):
    d, procs = _savers(tmp_path, "checkpoint")

    def worker(t):
        v = nf.Variable(np.full(500, float(t)))
        mgr = nf.train.CheckpointManager(nf.train.Checkpoint(v=v), d, max_to_keep=2,
                                         checkpoint_name="ckpt%d" % (t % 2))
        for _ in range(6):
            mgr.save()
            assert nf.train.latest_checkpoint(d) is not None
    errors = _in_threads(worker, (10, 11, 12))
    _finish(procs)
    assert not errors, errors
    latest = nf.train.latest_checkpoint(d)
    v = nf.Variable(np.zeros(500))
    nf.train.Checkpoint(v=v).restore(latest).expect_partial()
    assert v.numpy()[0] in (0.0, 1.0, 2.0, 10.0, 11.0, 12.0) and np.all(v.numpy() == v.numpy()[0])
    state = json.load(open(os.path.join(d, "checkpoint")))
    assert os.path.exists(os.path.join(d, state["model_checkpoint_path"] + ".safetensors"))
    _no_leftovers(d)


def test_the_directory_lock_is_reentrant_and_exclusive(tmp_path):
    from ndflow.train._files import directory_lock
    d = str(tmp_path)
    order = []
    with directory_lock(d):
        with directory_lock(d):            # the same thread again
            assert os.path.exists(os.path.join(d, LOCK_NAME))

        def other():
            with directory_lock(d):
                order.append("other")
        th = threading.Thread(target=other)
        th.start()
        time.sleep(0.2)
        order.append("first")
    th.join()
    assert order == ["first", "other"]
    assert not os.path.exists(os.path.join(d, LOCK_NAME))
    # another process waits as well
    code = ("import sys, time; from ndflow.train._files import directory_lock\n"
            "with directory_lock(sys.argv[1]):\n    print('in', flush=True); time.sleep(1.0)\n")
    p = subprocess.Popen([sys.executable, "-c", code, d], stdout=subprocess.PIPE, text=True,
                         env=_env())
    assert p.stdout.readline().strip() == "in"
    t = time.perf_counter()
    with directory_lock(d):
        waited = time.perf_counter() - t
    p.wait(30)
    p.stdout.close()
    assert waited > 0.3


def test_a_loaded_function_still_computes(tmp_path):
    f = nf.function(lambda x: tnp.sin(x) * 2.0, input_signature=[nf.TensorSpec([3], "float64")])
    nf.saved_model.save(f, str(tmp_path))
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(nf.saved_model.load(str(tmp_path))(x).numpy(),
                                  np.sin(x) * 2.0)
