"""Checkpoints (`nf.train.Checkpoint`, `CheckpointManager`, `latest_checkpoint`): every dtype
round-trips bit for bit, Module trees and optimizer slots restore by path (in a fresh process
too: Adam continues exactly as an uninterrupted run), mismatches are errors naming the path,
partial restores are reported, writes are atomic, and the file is a plain safetensors file."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.dtypes import SUPPORTED
from ndflow.train import checkpoint as ckmod, _tensorfile


class Dense(nf.Module):
    def __init__(self, n_in, n_out, seed):
        super().__init__()
        r = np.random.default_rng(seed)
        self.w = nf.Variable(r.standard_normal((n_in, n_out)).astype(np.float32), name="w")
        self.b = nf.Variable(np.zeros(n_out, np.float32), name="b")

    def __call__(self, x):
        return tnp.tanh(x @ self.w + self.b)


class MLP(nf.Module):
    def __init__(self, seed=0):
        super().__init__()
        self.layers = [Dense(3, 4, seed), Dense(4, 2, seed + 1)]
        self.extra = {"scale": nf.Variable(np.float32(1.5), name="scale")}
        self.steps = nf.Variable(0, dtype="int64", trainable=False)
        self.label = "not state"

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x * self.extra["scale"]


def _special(dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([[True, False, True], [False, False, True]])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.array([[info.min, info.max, 0], [1, 2, 3]], dtype=dt)
    if dt.kind == "c":
        return np.array([[complex(-0.0, np.nan), complex(np.inf, -np.inf), 1 + 2j],
                         [0j, complex(1e-30, -0.0), 3]], dtype=dt)
    return np.array([[-0.0, np.nan, np.inf], [-np.inf, 1.5, 0.1]], dtype=dt)


def _bits(a):
    a = np.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


@pytest.mark.parametrize("dt", SUPPORTED, ids=lambda d: d.name)
def test_every_dtype_round_trips_bit_for_bit(tmp_path, dt):
    v = nf.Variable(_special(dt))
    s = nf.Variable(_special(dt)[0, 0])      # 0-d
    e = nf.Variable(np.zeros((0, 3), dt))    # empty
    path = nf.train.Checkpoint(v=v, s=s, e=e).write(str(tmp_path / "c"))
    v2, s2, e2 = (nf.Variable(np.zeros_like(np.asarray(x.numpy()))) for x in (v, s, e))
    nf.train.Checkpoint(v=v2, s=s2, e=e2).read(path).assert_consumed()
    for a, b in ((v, v2), (s, s2), (e, e2)):
        assert b.dtype == a.dtype and b.shape == a.shape
        assert _bits(b.numpy()) == _bits(a.numpy())


def test_module_tree_lists_dicts_and_numbering(tmp_path):
    m = MLP(0)
    ck = nf.train.Checkpoint(model=m)
    assert nf.train.latest_checkpoint(str(tmp_path)) is None
    p1 = ck.save(str(tmp_path / "ckpt"))
    w_at_1 = m.layers[0].w.numpy().copy()
    assert p1 == str(tmp_path / "ckpt-1") and os.path.exists(p1 + ".safetensors")
    m.layers[0].w.assign_add(1.0)
    p2 = ck.save(str(tmp_path / "ckpt"))
    assert p2 == str(tmp_path / "ckpt-2")
    assert nf.train.latest_checkpoint(str(tmp_path)) == p2
    names = set(_tensorfile.read(p2 + ".safetensors"))
    assert names == {"model/layers/0/w", "model/layers/0/b", "model/layers/1/w",
                     "model/layers/1/b", "model/extra/scale", "model/steps", "save_counter"}
    fresh = MLP(7)
    ck2 = nf.train.Checkpoint(model=fresh)
    ck2.restore(nf.train.latest_checkpoint(str(tmp_path))).assert_consumed()
    for a, b in zip(m.variables, fresh.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(ck2.save_counter.numpy()) == 2       # numbering continues after a restore
    assert ck2.save(str(tmp_path / "ckpt")) == str(tmp_path / "ckpt-3")
    x = np.ones((5, 3), np.float32)
    np.testing.assert_array_equal(fresh(x).numpy(), m(x).numpy())
    ck2.restore(p1).assert_consumed()               # an older one
    np.testing.assert_array_equal(fresh.layers[0].w.numpy(), w_at_1)


def test_shape_and_dtype_mismatch_name_the_path_and_assign_nothing(tmp_path):
    m = MLP(0)
    path = nf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    other = MLP(3)
    other.layers[1].w = nf.Variable(np.zeros((4, 5), np.float32))
    before = other.layers[0].w.numpy().copy()
    with pytest.raises(ValueError, match=r"'model/layers/1/w' has shape \(4, 2\) in the "
                                         r"checkpoint but \(4, 5\)"):
        nf.train.Checkpoint(model=other).restore(path)
    np.testing.assert_array_equal(other.layers[0].w.numpy(), before)   # nothing half-restored
    other = MLP(3)
    other.extra["scale"] = nf.Variable(np.float64(1.0))
    with pytest.raises(ValueError, match="'model/extra/scale' has dtype float32 in the "
                                         "checkpoint but float64"):
        nf.train.Checkpoint(model=other).restore(path)


def test_partial_restore_reports_what_was_not_matched(tmp_path):
    m = MLP(0)
    path = nf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    # a model with a new variable: existing objects are not all matched
    bigger = MLP(1)
    bigger.layers.append(Dense(2, 2, 5))
    st = nf.train.Checkpoint(model=bigger).restore(path)
    assert st.unmatched_objects == ["model/layers/2/b", "model/layers/2/w"]
    with pytest.raises(AssertionError, match="model/layers/2/b"):
        st.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="model/layers/2/w"):
        st.assert_consumed()
    np.testing.assert_array_equal(bigger.layers[0].w.numpy(), m.layers[0].w.numpy())
    # a model missing a variable: checkpoint values are left over
    smaller = MLP(1)
    del smaller.extra["scale"]
    st = nf.train.Checkpoint(model=smaller).restore(path)
    st.assert_existing_objects_matched()
    assert st.unmatched_checkpoint_values == ["model/extra/scale"]
    with pytest.raises(AssertionError, match="model/extra/scale"):
        st.assert_consumed()
    st.expect_partial()
    # restoring only a part of the tree
    only = nf.train.Checkpoint(model=nf.Module())
    only.model.layers = [Dense(3, 4, 9)]
    st = only.restore(path).expect_partial()
    st.assert_existing_objects_matched()
    np.testing.assert_array_equal(only.model.layers[0].w.numpy(), m.layers[0].w.numpy())
    with pytest.raises(AssertionError, match="no checkpoint was restored"):
        nf.train.Checkpoint(model=m).restore(None).assert_consumed()


def test_unmatched_values_warn_unless_expected(tmp_path):
    path = nf.train.Checkpoint(a=nf.Variable(1.0), b=nf.Variable(2.0)).write(str(tmp_path / "c"))
    with pytest.warns(UserWarning, match="partially restored"):
        st = nf.train.Checkpoint(a=nf.Variable(0.0)).restore(path)
        del st
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = nf.train.Checkpoint(a=nf.Variable(0.0)).restore(path).expect_partial()
        del st


def _train(model, opt, steps, seed=0):
    r = np.random.default_rng(seed)
    for _ in range(steps):
        x = r.standard_normal((8, 3)).astype(np.float32)
        y = r.standard_normal((8, 2)).astype(np.float32)
        with nf.GradientTape() as t:
            loss = tnp.mean((model(x) - y) ** 2)
        grads = t.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))


def test_adam_slots_restore_eagerly_and_deferred(tmp_path):
    m, opt = MLP(0), nf.optimizers.Adam(0.01)
    _train(m, opt, 3)
    path = nf.train.Checkpoint(model=m, optimizer=opt).write(str(tmp_path / "c"))
    names = set(_tensorfile.read(path + ".safetensors"))
    assert {"optimizer/iterations", "optimizer/learning_rate",
            "optimizer/.slots/model/layers/0/w/m", "optimizer/.slots/model/layers/0/w/v"} <= names
    # deferred: slots do not exist yet in the fresh optimizer
    m2, opt2 = MLP(5), nf.optimizers.Adam(0.5)
    st = nf.train.Checkpoint(model=m2, optimizer=opt2).restore(path)
    assert int(opt2.iterations.numpy()) == 3 and float(opt2.learning_rate.numpy()) == 0.01
    st.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="optimizer/.slots/model/layers/0/w/m"):
        st.assert_consumed()          # pending until the slots are created
    # eager: slots exist already
    m3, opt3 = MLP(6), nf.optimizers.Adam(0.01)
    _train(m3, opt3, 1, seed=9)
    nf.train.Checkpoint(model=m3, optimizer=opt3).restore(path).assert_consumed()
    _train(m, opt, 2, seed=1)
    _train(m2, opt2, 2, seed=1)
    _train(m3, opt3, 2, seed=1)
    st.assert_consumed()              # the deferred slots were created from the checkpoint
    for a, b, c in zip(m.variables, m2.variables, m3.variables):
        np.testing.assert_array_equal(b.numpy(), a.numpy())
        np.testing.assert_array_equal(c.numpy(), a.numpy())


_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, ndflow as nf, ndflow.numpy as tnp
    sys.path.insert(0, sys.argv[1])
    from test_checkpoint import MLP, _train
    mode, path, out = sys.argv[2:5]
    m, opt = MLP(0 if mode != "resume" else 11), nf.optimizers.Adam(0.01, amsgrad=True)
    ck = nf.train.Checkpoint(model=m, optimizer=opt)
    if mode == "resume":
        ck.restore(nf.train.latest_checkpoint(path)).assert_existing_objects_matched()
        _train(m, opt, 4, seed=2)
    else:
        _train(m, opt, 5, seed=1)
        if mode == "save":
            ck.save(path + "/ckpt")
        else:
            _train(m, opt, 4, seed=2)
    np.savez(out, *[v.numpy() for v in m.variables + tuple(opt.variables())])
""")


def test_adam_continues_identically_in_a_fresh_process(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))
    here = os.path.dirname(__file__)

    def run(mode, out):
        subprocess.run([sys.executable, str(script), here, mode, str(tmp_path), str(out)],
                       check=True, env=env, timeout=120)
        with np.load(out, allow_pickle=False) as z:
            return [z[k] for k in sorted(z.files, key=lambda s: int(s.split("_")[1]))]
    full = run("full", tmp_path / "full.npz")
    run("save", tmp_path / "saved.npz")
    resumed = run("resume", tmp_path / "resumed.npz")
    assert len(full) == len(resumed) > 10
    for a, b in zip(full, resumed):
        np.testing.assert_array_equal(b, a)


_RESUME = textwrap.dedent("""
    import sys, warnings, numpy as np, ndflow as nf, ndflow.numpy as tnp
    warnings.simplefilter("error")              # no warning at all, not even at exit
    sys.path.insert(0, sys.argv[1])
    from test_checkpoint import MLP, _train
    mode, path, out = sys.argv[2:5]
    m, opt = MLP(11), nf.optimizers.Adam(0.01, amsgrad=True)
    ck = nf.train.Checkpoint(model=m, optimizer=opt)
    mgr = nf.train.CheckpointManager(ck, path, max_to_keep=1, step_counter=opt.iterations,
                                     checkpoint_interval=3)
    saved = []
    if mode == "manager":                       # TF's loop: the status is never looked at
        assert mgr.restore_or_initialize() is not None
        for _ in range(4):
            _train(m, opt, 1, seed=2 + _)
            saved.append(mgr.save())
    elif mode == "status":
        st = ck.restore(mgr.latest_checkpoint)
        st.assert_existing_objects_matched()
        _train(m, opt, 1, seed=2)
        st.assert_consumed()                    # the slots were made from the checkpoint
        for i in range(1, 4):
            _train(m, opt, 1, seed=2 + i)
    else:                                       # build: slots exist before the restore
        opt.build(m.trainable_variables)
        ck.restore(mgr.latest_checkpoint).assert_consumed()
        for i in range(4):
            _train(m, opt, 1, seed=2 + i)
    np.savez(out, *[v.numpy() for v in m.variables + tuple(opt.variables())],
             saved=np.array([p is not None for p in saved]))
""")

_FULL = textwrap.dedent("""
    import sys, numpy as np, ndflow as nf
    sys.path.insert(0, sys.argv[1])
    from test_checkpoint import MLP, _train
    mode, path, out = sys.argv[2:5]
    m, opt = MLP(0), nf.optimizers.Adam(0.01, amsgrad=True)
    ck = nf.train.Checkpoint(model=m, optimizer=opt)
    mgr = nf.train.CheckpointManager(ck, path, max_to_keep=1)
    _train(m, opt, 5, seed=1)
    mgr.save()
    for i in range(4):
        _train(m, opt, 1, seed=2 + i)
    np.savez(out, *[v.numpy() for v in m.variables + tuple(opt.variables())])
""")


@pytest.mark.parametrize("mode", ["manager", "status", "build"])
def test_resuming_adam_in_a_fresh_process_as_tensorflow_documents(tmp_path, mode):
    """Restore in a fresh process, as TensorFlow's guide does it: no false "partially
    restored" warning, `assert_consumed` passes once the slots exist (at the first step, or
    at once after `optimizer.build`), training continues bit for bit, and
    `checkpoint_interval` counts from the restored step."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))
    here = os.path.dirname(__file__)

    def run(text, out):
        script = tmp_path / "s.py"
        script.write_text(text)
        r = subprocess.run([sys.executable, str(script), here, mode, str(tmp_path / "ck"),
                            str(out)], env=env, timeout=180, capture_output=True, text=True)
        assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr[-3000:]
        with np.load(out, allow_pickle=False) as z:
            return [z[k] for k in sorted((f for f in z.files if f.startswith("arr_")),
                                         key=lambda s: int(s.split("_")[1]))], \
                z["saved"] if "saved" in z.files else None
    full, _ = run(_FULL, tmp_path / "full.npz")
    resumed, saved = run(_RESUME, tmp_path / "resumed.npz")
    assert len(full) == len(resumed) > 10
    for a, b in zip(full, resumed):
        np.testing.assert_array_equal(b, a)
    if mode == "manager":
        # restored at step 5 with an interval of 3: steps 6, 7 wait, 8 saves, 9 waits
        assert saved.tolist() == [False, False, True, False]


def test_a_save_right_after_a_restore_keeps_the_pending_slots(tmp_path):
    m, opt = MLP(0), nf.optimizers.Adam(0.01)
    _train(m, opt, 3)
    p = nf.train.Checkpoint(model=m, optimizer=opt).write(str(tmp_path / "a"))
    m2, opt2 = MLP(1), nf.optimizers.Adam(0.01)
    nf.train.Checkpoint(model=m2, optimizer=opt2).restore(p).expect_partial()
    p2 = nf.train.Checkpoint(model=m2, optimizer=opt2).write(str(tmp_path / "b"))
    assert set(_tensorfile.read(p + ".safetensors")) == set(_tensorfile.read(p2 + ".safetensors"))
    m3, opt3 = MLP(2), nf.optimizers.Adam(0.01)
    nf.train.Checkpoint(model=m3, optimizer=opt3).restore(p2)
    _train(m, opt, 2, seed=5)
    _train(m3, opt3, 2, seed=5)
    for a, b in zip(m.variables, m3.variables):
        np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_the_partial_restore_warning_comes_only_for_values_never_taken(tmp_path):
    import gc
    import warnings
    m, opt = MLP(0), nf.optimizers.Adam(0.01)
    _train(m, opt, 1)
    p = nf.train.Checkpoint(model=m, optimizer=opt).write(str(tmp_path / "a"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m2, opt2 = MLP(1), nf.optimizers.Adam(0.01)
        nf.train.Checkpoint(model=m2, optimizer=opt2).restore(p)      # status dropped
        gc.collect()
        _train(m2, opt2, 1)                     # the pending slots are taken: no warning
        gc.collect()
    m3, opt3 = MLP(1), nf.optimizers.Adam(0.01)
    nf.train.Checkpoint(model=m3, optimizer=opt3).restore(p)
    with pytest.warns(UserWarning, match=r"partially restored: 10 value\(s\)"):
        del opt3                                # the slots will never be made
        gc.collect()


def test_a_variable_created_after_restore_is_not_reported_as_restored(tmp_path):
    m = MLP(0)
    p = nf.train.Checkpoint(model=m).write(str(tmp_path / "a"))
    lazy = MLP(1)
    scale = lazy.extra.pop("scale")
    st = nf.train.Checkpoint(model=lazy).restore(p)
    lazy.extra["scale"] = nf.Variable(np.float32(9.0))      # made after the restore
    assert st.unmatched_checkpoint_values == ["model/extra/scale"]
    with pytest.raises(AssertionError, match="model/extra/scale"):
        st.assert_consumed()
    assert float(lazy.extra["scale"].numpy()) == 9.0 and scale is not None


@pytest.mark.parametrize("make", [
    lambda: nf.optimizers.SGD(0.1), lambda: nf.optimizers.SGD(0.1, momentum=0.9),
    lambda: nf.optimizers.Adam(), lambda: nf.optimizers.Adam(amsgrad=True),
    lambda: nf.optimizers.AdamW(), lambda: nf.optimizers.RMSprop(),
    lambda: nf.optimizers.RMSprop(momentum=0.5, centered=True), lambda: nf.optimizers.Adagrad(),
])
def test_build_makes_the_slots_a_step_makes(make):
    built, stepped = make(), make()
    a, b = MLP(0), MLP(0)
    built.build(a.trainable_variables)
    _train(b, stepped, 1)
    def names(opt, m):
        index = {id(v): i for i, v in enumerate(m.trainable_variables)}
        return sorted((index[id(v)], n) for (_, n), (_, v) in opt._slots.items())
    assert names(built, a) == names(stepped, b)
    if isinstance(built, nf.optimizers.Adagrad):
        s = next(iter(built._slots.values()))[0]
        assert np.all(s.numpy() == np.float32(0.1))
    with pytest.raises(TypeError, match="build takes Variables"):
        built.build([np.zeros(2)])


def test_checkpoint_manager(tmp_path):
    v = nf.Variable(0.0)
    ck = nf.train.Checkpoint(v=v)
    d = str(tmp_path / "run")
    mgr = nf.train.CheckpointManager(ck, d, max_to_keep=2, checkpoint_name="model")
    assert mgr.latest_checkpoint is None and mgr.checkpoints == []
    paths = []
    for i in range(4):
        v.assign(float(i))
        paths.append(mgr.save())
    assert paths == [os.path.join(d, "model-%d" % i) for i in (1, 2, 3, 4)]
    assert mgr.checkpoints == paths[2:] and mgr.latest_checkpoint == paths[3]
    assert sorted(os.listdir(d)) == ["checkpoint", "model-3.safetensors", "model-4.safetensors"]
    assert nf.train.latest_checkpoint(d) == paths[3]
    assert mgr.save(checkpoint_number=100) == os.path.join(d, "model-100")
    # a new manager (a new run) picks up what the directory holds
    mgr2 = nf.train.CheckpointManager(nf.train.Checkpoint(v=nf.Variable(0.0)), d, max_to_keep=2,
                                      checkpoint_name="model")
    assert mgr2.checkpoints == [paths[3], os.path.join(d, "model-100")]
    w = nf.Variable(-1.0)
    assert nf.train.CheckpointManager(nf.train.Checkpoint(v=w), d, 2,
                                      checkpoint_name="model").restore_or_initialize() \
        == os.path.join(d, "model-100")
    assert float(w.numpy()) == 3.0
    with pytest.raises(ValueError, match="max_to_keep"):
        nf.train.CheckpointManager(ck, d, max_to_keep=0)
    keep_all = nf.train.CheckpointManager(ck, str(tmp_path / "all"), max_to_keep=None)
    for _ in range(3):
        keep_all.save()
    assert len(keep_all.checkpoints) == 3


def test_crash_mid_save_leaves_previous_checkpoint_loadable(tmp_path, monkeypatch):
    v = nf.Variable(np.arange(1000, dtype=np.float32))
    w = nf.Variable(np.ones(10, np.float64))
    ck = nf.train.Checkpoint(v=v, w=w)
    d = str(tmp_path)
    mgr = nf.train.CheckpointManager(ck, d, max_to_keep=1)
    good = mgr.save()
    fixed = ck.write(os.path.join(d, "fixed"))
    real = _tensorfile.write
    monkeypatch.setattr(_tensorfile, "write",
                        lambda *a, **k: real(*a, **dict(k, _fail_after=1)))
    v.assign(tnp.zeros(1000, dtype="float32"))
    with pytest.raises(OSError, match="simulated crash"):
        mgr.save()
    with pytest.raises(OSError, match="simulated crash"):
        ck.write(fixed)       # overwriting the same path
    monkeypatch.undo()
    assert sorted(os.listdir(d)) == ["checkpoint", "ckpt-1.safetensors", "fixed.safetensors"]
    assert nf.train.latest_checkpoint(d) == good
    for p in (good, fixed):
        v2, w2 = nf.Variable(np.zeros(1000, np.float32)), nf.Variable(np.zeros(10))
        nf.train.Checkpoint(v=v2, w=w2).restore(p).expect_partial()
        np.testing.assert_array_equal(v2.numpy(), np.arange(1000, dtype=np.float32))


def test_damaged_or_foreign_files_are_clear_errors(tmp_path):
    v = nf.Variable(np.arange(100, dtype=np.float64))
    p = nf.train.Checkpoint(v=v).write(str(tmp_path / "c"))
    f = p + ".safetensors"
    data = open(f, "rb").read()
    target = nf.train.Checkpoint(v=nf.Variable(np.zeros(100)))
    for n in (0, 5, 20, len(data) - 8):
        open(str(tmp_path / "t.safetensors"), "wb").write(data[:n])
        with pytest.raises(ValueError, match="not a readable ndflow tensor file"):
            target.restore(str(tmp_path / "t"))
    hdr_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + hdr_len])
    for change, msg in ((lambda h: h["__metadata__"].update(version="99"), "version 99, newer"),
                        (lambda h: h["__metadata__"].update(format="other"), "not an ndflow"),
                        (lambda h: h["v"].update(data_offsets=[0, 10 ** 6]), "truncated")):
        h = json.loads(json.dumps(header))
        change(h)
        hb = json.dumps(h).encode()
        hb += b" " * (-len(hb) % 8)
        open(str(tmp_path / "t.safetensors"), "wb").write(
            len(hb).to_bytes(8, "little") + hb + data[8 + hdr_len:])
        with pytest.raises(ValueError, match=msg):
            target.restore(str(tmp_path / "t"))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        target.restore(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="expecting a trackable"):
        nf.train.Checkpoint(x=3)


def test_file_is_a_safetensors_file(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    m = MLP(0)
    p = nf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    got = st.load_file(p + ".safetensors")
    np.testing.assert_array_equal(got["model/layers/0/w"], m.layers[0].w.numpy())
    # and a file the package wrote reads back through ours
    st.save_file({"a": np.arange(6, dtype=np.int16).reshape(2, 3)}, str(tmp_path / "x.st"))
    np.testing.assert_array_equal(_tensorfile.read(str(tmp_path / "x.st"))["a"],
                                  np.arange(6, dtype=np.int16).reshape(2, 3))


def test_only_the_writing_process_writes(tmp_path, monkeypatch):
    v = nf.Variable(2.0)
    monkeypatch.setattr(ckmod, "_should_write", lambda: False)
    ck = nf.train.Checkpoint(v=v)
    assert ck.save(str(tmp_path / "ckpt")) == str(tmp_path / "ckpt-1")
    assert nf.train.CheckpointManager(ck, str(tmp_path), 3).save() == str(tmp_path / "ckpt-2")
    assert os.listdir(str(tmp_path)) == []
    monkeypatch.undo()
    assert ck.save(str(tmp_path / "ckpt")) == str(tmp_path / "ckpt-3")
    assert sorted(os.listdir(str(tmp_path))) == ["checkpoint", "ckpt-3.safetensors"]


# ------------------------------------------------------------------ the tensor file itself
from hypothesis import given, settings, strategies as st, HealthCheck  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402


@st.composite
def _tensor_dicts(draw):
    n = draw(st.integers(0, 4))
    names = draw(st.lists(st.text(min_size=1, max_size=8).filter(lambda s: s != "__metadata__"),
                          min_size=n, max_size=n, unique=True))
    out = {}
    for name in names:
        dt = draw(st.sampled_from(SUPPORTED))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
        raw = draw(st.binary(min_size=int(np.prod(shape)) * dt.itemsize,
                             max_size=int(np.prod(shape)) * dt.itemsize))
        a = np.frombuffer(raw, dtype=np.uint8).view(dt) if dt != np.bool_ else \
            np.frombuffer(raw, dtype=np.uint8) % 2 == 1
        out[name] = np.reshape(a, shape)
    return out


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tensors=_tensor_dicts(), meta=st.dictionaries(st.text(max_size=5), st.text(max_size=5),
                                                     max_size=2))
def test_tensor_file_round_trips_any_bits(tmp_path, tensors, meta):
    """Any bytes of any dtype and shape (NaN payloads, signed zeros, empty, 0-d) and any names
    come back bit for bit, with the metadata."""
    p = str(tmp_path / "t.safetensors")
    _tensorfile.write(p, tensors, meta)
    got, got_meta = _tensorfile.read(p, with_metadata=True)
    assert got_meta == {str(k): str(v) for k, v in meta.items()}
    assert set(got) == set(tensors)
    for k, a in tensors.items():
        assert _bits(got[k]) == _bits(a)


def test_manager_interval_and_preserved_checkpoints(tmp_path):
    step = nf.Variable(0, dtype="int64")
    ck = nf.train.Checkpoint(step=step)
    mgr = nf.train.CheckpointManager(ck, str(tmp_path / "a"), max_to_keep=1, step_counter=step,
                                     checkpoint_interval=10)
    saved = []
    for s in range(0, 35, 5):
        step.assign(s)
        saved.append(mgr.save(checkpoint_number=s) is not None)
    assert saved == [True, False, True, False, True, False, True]
    # check_interval=False saves whatever the interval, but never twice for one step (TF)
    assert mgr.save(checkpoint_number=99, check_interval=False) is None
    step.assign(31)
    assert mgr.save(checkpoint_number=99, check_interval=False) is not None
    assert mgr.save() is None                  # the interval counts from step 31 now
    # keep_checkpoint_every_n_hours=0: a checkpoint leaving the window stays on disk
    mgr = nf.train.CheckpointManager(ck, str(tmp_path / "b"), max_to_keep=1,
                                     keep_checkpoint_every_n_hours=0.0)
    paths = [mgr.save() for _ in range(3)]
    assert mgr.checkpoints == paths[-1:]
    assert all(os.path.exists(p + ".safetensors") for p in paths)
    with pytest.raises(ValueError, match="step_counter"):
        nf.train.CheckpointManager(ck, str(tmp_path / "c"), 1, checkpoint_interval=5)



def test_restore_keeps_each_variable_on_its_device(tmp_path, two_cpus):
    with nf.device("CPU:1"):
        v = nf.Variable(np.arange(3.0))
    p = nf.train.Checkpoint(v=v).write(str(tmp_path / "c"))
    with nf.device("CPU:1"):
        w = nf.Variable(np.zeros(3))
    nf.train.Checkpoint(v=w).restore(p).assert_consumed()
    assert w.device.endswith("CPU:1")
    np.testing.assert_array_equal(w.numpy(), [0.0, 1.0, 2.0])
