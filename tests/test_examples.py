"""The seed programs (ndflow/examples/, run from examples/ too) run on ndflow with only their
imports changed, and what they print holds (examples/EXPECTED.md). NumPy is the oracle for the
values. They write their files only where they are told (never into the current directory or
the checkout), and their figures say what they show."""
import contextlib
import importlib
import io
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
PROGRAMS = ["tf_numpy_guide", "tf_numpy_performance", "tf_numpy_interop", "tf_function_lesson",
            "effective_tf", "train_export"]


def _git_status():
    """The checkout's untracked files, as `git status --porcelain` lists them (files a program
    would leave; changes to tracked files are someone's edits), or None outside a checkout."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return sorted(line for line in out.stdout.splitlines() if line.startswith("??"))


@contextlib.contextmanager
def _figures_saved(into):
    """Record (path, Figure) of every matplotlib figure saved to a file meanwhile into the list
    `into`."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        yield
        return
    orig = Figure.savefig

    def spy(self, fname, *a, **k):
        if isinstance(fname, (str, os.PathLike)):      # files, not the Python op's buffers
            into.append((str(fname), self))
        return orig(self, fname, *a, **k)
    Figure.savefig = spy
    try:
        yield
    finally:
        Figure.savefig = orig


@pytest.fixture(scope="module")
def run_example(tmp_path_factory):
    """`run(name)` runs a program's main() once (quick mode; cached per module) with the
    current directory an empty temporary one and its output directory `run.out / name`; its
    results get "stdout" (what it printed) and "figures" ([(path, matplotlib Figure)] saved)."""
    os.environ["NDFLOW_QUICK"] = "1"
    old = os.getcwd()
    cache = {}

    def run(name):
        if name not in cache:
            tnp.random.seed(0)
            os.chdir(run.cwd)
            buf, figures = io.StringIO(), []
            try:
                with contextlib.redirect_stdout(buf), _figures_saved(figures):
                    r = importlib.import_module("ndflow.examples." + name).main(
                        out_dir=str(run.out / name))
            finally:
                os.chdir(old)
            sys.stdout.write(buf.getvalue())
            r.update(stdout=buf.getvalue(), figures=figures)
            cache[name] = r
        return cache[name]
    run.cwd = tmp_path_factory.mktemp("cwd")
    run.out = tmp_path_factory.mktemp("out")
    run.git_before = _git_status()
    yield run
    nf.experimental_enable_numpy_behavior(prefer_float32=False)


def test_guide_promotion_table_matches_numpy(run_example):
    r = run_example("tf_numpy_guide")
    for (a, b), got in r["promotions"].items():
        assert got == np.result_type(np.dtype(a), np.dtype(b)).name


def test_guide_broadcast_indexing_mutation(run_example):
    r = run_example("tf_numpy_guide")
    assert r["broadcast"].shape == (1, 2, 3)
    x = np.arange(24).reshape(2, 3, 4)
    basic, boolean, advanced = r["indexing"]
    np.testing.assert_array_equal(basic.numpy(), x[1, np.newaxis, 1:3, ...])
    np.testing.assert_array_equal(boolean.numpy(), x[:, (True, False, True)])
    np.testing.assert_array_equal(advanced.numpy(), x[1, (0, 0, 1), np.asarray([0, 1, 1])])
    np.testing.assert_array_equal(r["mutation"].numpy(), [0, -1, 2, 3, 4, 5])


def _model_grads(weights, inputs, labels):
    w1, b, w2 = [w.numpy().astype(np.float64) for w in weights]
    x, t = inputs.numpy().astype(np.float64), labels.numpy().astype(np.float64)
    h = x @ w1 + b
    r = np.maximum(h, 0)
    p = r @ w2
    dp = 2 * (p - t)
    dw2 = r.T @ dp
    dr = dp @ w2.T
    dh = dr * (h > 0)
    return [x.T @ dh, dh.sum(0), dw2]


def test_performance_gradients_and_jacobian(run_example):
    r = run_example("tf_numpy_performance")
    model = r["model"]
    inputs, labels, grads = r["gradients"]
    assert [g.shape for g in grads] == [(32, 64), (64,), (64, 2)]
    for g, want in zip(grads, _model_grads(model.weights, inputs, labels)):
        np.testing.assert_allclose(g.numpy(), want, rtol=2e-4, atol=2e-4)
    inp, out, bj = r["batch_jacobian"]
    assert out.shape == (16, 2) and bj.shape == (16, 2, 32)
    w1, b, w2 = [w.numpy() for w in model.weights]
    mask = (inp.numpy() @ w1 + b) > 0
    want = np.einsum("bh,ih,ho->boi", mask.astype(np.float32), w1, w2)
    np.testing.assert_allclose(bj.numpy(), want, rtol=1e-4, atol=1e-5)


def test_performance_compiled_and_per_example(run_example):
    r = run_example("tf_numpy_performance")
    _, _, eager, compiled = r["compiled_gradients"]
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-5, atol=1e-5)
    inputs, labels, per = r["per_example_gradients"]
    assert [p.shape for p in per] == [(128, 32, 64), (128, 64), (128, 64, 2)]
    model = r["model"]
    for i in (0, 77):
        want = _model_grads(model.weights, inputs[i:i + 1], labels[i:i + 1])
        for p, w in zip(per, want):
            np.testing.assert_allclose(p.numpy()[i], w, rtol=2e-4, atol=2e-4)
    for p, m in zip(per, r["map_fn_gradients"]):
        np.testing.assert_allclose(p.numpy(), m.numpy(), rtol=1e-5, atol=1e-5)


# the guide's benchmark traced the compiled sigmoid for 5 sizes already: a 6th retrace warns,
# as tf.function does
@pytest.mark.filterwarnings("ignore:nf.function 'compiled_tnp_sigmoid' has been traced")
def test_performance_devices_and_sigmoid(run_example):
    r = run_example("tf_numpy_performance")
    _, prediction, prediction_cpu = r["devices"]
    assert prediction_cpu.device.endswith("CPU:0")
    np_sig, tnp_sig, compiled_sig = r["sigmoid"]
    y = np.random.randn(100).astype(np.float32)
    for f in (tnp_sig, compiled_sig):
        out = f(tnp.asarray(y))
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), np_sig(y), rtol=1e-6)


def test_tf_function_lesson(run_example):
    r = run_example("tf_function_lesson")
    t = r["training"]
    assert len(t["epoch_losses"]) >= 2
    assert t["epoch_losses"][-1] < t["epoch_losses"][0]
    assert t["accuracy"] > 90
    # the loss curve: one loss per batch, summing to each epoch's printed loss
    per_epoch = len(t["batch_losses"]) // len(t["epoch_losses"])
    assert per_epoch * len(t["epoch_losses"]) == len(t["batch_losses"])
    for k, total in enumerate(t["epoch_losses"]):
        assert sum(t["batch_losses"][k * per_epoch:(k + 1) * per_epoch]) == pytest.approx(
            total, rel=1e-4)


@pytest.mark.parametrize("name", ["tf_numpy_interop", "effective_tf"])
def test_other_examples_run(run_example, name):
    r = run_example(name)
    assert isinstance(r, dict) and r


def test_effective_tf_curve_fit(run_example):
    r = run_example("effective_tf")
    for key in ("fit_curve", "fit_curve_compiled"):
        w = np.asarray(r[key].numpy() if hasattr(r[key], "numpy") else r[key], dtype=np.float64).ravel()
        assert abs(w[0] - 5) < 0.2 and abs(w[1]) < 0.2
    for losses in r["fit_curve_losses"].values():
        assert len(losses) >= 200 and losses[-1] < losses[0] / 100


def test_effective_tf_visualization_through_tensorboard(tmp_path):
    """The seed's `tf.summary.image` of the input images and of the labelled figures a Python
    op draws with matplotlib, eagerly and at each call of an nf.function, read back with
    TensorBoard's reader."""
    pytest.importorskip("matplotlib")
    Image = pytest.importorskip("PIL.Image")
    pea = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_accumulator")
    from tensorboard.util import tensor_util
    import io
    mod = importlib.import_module("ndflow.examples.effective_tf")
    tnp.random.seed(0)
    np.random.seed(0)
    state = np.random.get_state()
    logdir, results = mod.tensorboard_visualization(str(tmp_path), steps=2)
    np.random.set_state(state)
    images = np.random.uniform(size=[3, 28, 28]).astype(np.float32)   # what the section drew
    assert bool(results["image"]) and bool(results["labeled"])
    assert [bool(r) for r in results["compiled"]] == [True, True]
    acc = pea.EventAccumulator(logdir, size_guidance={"tensors": 0})
    acc.Reload()

    def pngs(tag):
        return [(e.step, [np.asarray(Image.open(io.BytesIO(b)))
                          for b in tensor_util.make_ndarray(e.tensor_proto)[2:]])
                for e in acc.Tensors(tag)]

    ((step, raw),) = pngs("image")
    assert step == 0 and len(raw) == 3
    expected = np.clip(images * np.float32(255.5), 0, 255).astype(np.uint8)
    for got, want in zip(raw, expected):
        np.testing.assert_array_equal(got, want)
    ((step, labeled),) = pngs("labeled_image")
    assert step == 0 and len(labeled) == 3
    assert all(im.shape == (240, 240, 4) and im.std() > 0 for im in labeled)
    preds = pngs("predictions")
    assert [s for s, _ in preds] == [1, 2] and all(len(ims) == 2 for _, ims in preds)
    # each call drew its own labels: the figures of the two calls differ
    assert not np.array_equal(preds[0][1][0], preds[1][1][0])


def test_train_export_end_to_end(tmp_path):
    """The digits classifier trained with summaries, checkpointed, saved and exported; the saved
    function (and the ONNX file, when onnxruntime is installed) loaded in a fresh process that
    lacks the model's source predicts what the model does; TensorBoard's reader sees one loss per
    training step at the optimizer's step, with the value the step returned."""
    os.environ["NDFLOW_QUICK"] = "1"
    mod = importlib.import_module("ndflow.examples.train_export")
    r = mod.main(str(tmp_path))
    assert r["restored_equal"] is True
    # the saved graph is recompiled by the loading process (its own fusion and kernel choice):
    # float32 rounding may differ in the last place, nothing more
    assert r["saved_model_diff"] <= 1e-6
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("onnx"):
        assert r["onnx_diff"] is not None and r["onnx_diff"] < 1e-5
    assert r["accuracy"] > 0.5
    assert r["losses"][-1] < r["losses"][0]
    assert os.path.exists(os.path.join(r["out_dir"], "saved_model"))
    assert os.path.basename(r["checkpoint"]) == "ckpt-1"
    pea = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_accumulator")
    from tensorboard.util import tensor_util
    acc = pea.EventAccumulator(os.path.join(r["out_dir"], "logs"), size_guidance={"tensors": 0})
    acc.Reload()
    loss = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors("loss")]
    assert [s for s, _ in loss] == list(range(1, len(r["losses"]) + 1))
    np.testing.assert_allclose([v for _, v in loss], r["losses"], rtol=1e-6)
    assert [e.step for e in acc.Tensors("test_accuracy")] == [0, 1]


def test_effective_tf_static_and_dynamic_shapes(run_example):
    s = run_example("effective_tf")["shapes"]
    assert s["dynamic_shape"].tolist() == [32, 128]
    for c in s["collapsed"]:
        np.testing.assert_array_equal(c.numpy(), np.ones((5, 320), np.float32))
    unknown, traces = s["collapsed_unknown"]
    assert [u.shape for u in unknown] == [(5, 320), (2, 96)] and traces == 1
    for u in unknown:
        np.testing.assert_array_equal(u.numpy(), np.ones(u.shape, np.float32))


def test_tf_function_lesson_compiled_equals_eager(run_example):
    r = run_example("tf_function_lesson")
    np.testing.assert_allclose(r["split"]["graph"].numpy(), r["split"]["eager"].numpy(),
                               rtol=1e-5)
    one = r["one_call"]
    np.testing.assert_allclose(one["function_tf_graph"](one["x"], one["y"]).numpy(),
                               one["function_tf"](one["x"], one["y"]).numpy(), rtol=1e-5)
    # range(10) over a Python int unrolls, as the lesson teaches: no loop op in the graph
    cf = one["function_tf_graph"].get_concrete_function(one["x"], one["y"])
    assert "while" not in str(cf) and "scan" not in str(cf)


# ------------------------------------------------------------------ files, figures, words
def test_examples_write_only_where_told(run_example):
    """Run from an empty directory, each program writes only into the output directory it was
    given: nothing in the current directory, nothing new in the checkout."""
    for name in PROGRAMS:
        run_example(name)
    assert os.listdir(run_example.cwd) == []
    before, after = run_example.git_before, _git_status()
    if before is not None and after is not None:
        assert set(after) - set(before) == set(), "an example left files in the checkout"
    written = {name: set(os.listdir(run_example.out / name))
               for name in PROGRAMS if (run_example.out / name).exists()}
    assert {"logs", "checkpoints", "saved_model"} <= written["train_export"]
    pytest.importorskip("matplotlib")
    assert "tf_numpy_guide_hist.png" in written["tf_numpy_guide"]
    assert "tf_numpy_performance_sigmoid.png" in written["tf_numpy_performance"]
    assert "tf_function_lesson_loss.png" in written["tf_function_lesson"]
    assert {"effective_tf_fit_loss.png", "logs"} <= written["effective_tf"]
    for name in PROGRAMS:
        for path, _ in run_example(name)["figures"]:
            assert path.startswith(str(run_example.out / name)), path


def _figures(run_example, name):
    """{file name: Figure} that `name` saved (matplotlib required)."""
    pytest.importorskip("matplotlib")
    return {os.path.basename(p): fig for p, fig in run_example(name)["figures"]}


@pytest.mark.parametrize("name", ["tf_numpy_guide", "tf_numpy_performance",
                                  "tf_function_lesson", "effective_tf", "train_export"])
def test_figures_have_titles_and_axis_labels(run_example, name):
    figs = {k: f for k, f in _figures(run_example, name).items()
            if not k.startswith("effective_tf_image")}   # the seed's own drawings: images
    assert figs
    for file, fig in figs.items():
        for ax in fig.axes:
            assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel(), file
            assert "TF NumPy" not in ax.get_title()


def test_sigmoid_figure_log_axes_and_names(run_example):
    fig = _figures(run_example, "tf_numpy_performance")["tf_numpy_performance_sigmoid.png"]
    (ax,) = fig.axes
    # the sizes span 2**0 .. 2**15 (2**20): only log axes show the small ones
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:3] == ["NumPy", "ndflow eager (CPU)", "ndflow nf.function (CPU)"]
    r = run_example("tf_numpy_performance")["benchmark"]
    (_, compiled) = [line.get_xydata() for line in ax.get_lines()][1:3]
    np.testing.assert_allclose(compiled[:, 0], r["sizes"])
    np.testing.assert_allclose(compiled[:, 1], np.asarray(r["compiled_tnp_times"]) * 1e3)
    assert "µs" in ax.get_ylabel() and "best of 5" in ax.get_ylabel()


def test_histogram_is_one_data_set_of_the_labels(run_example):
    r = run_example("tf_numpy_guide")
    (ax,) = _figures(run_example, "tf_numpy_guide")["tf_numpy_guide_hist.png"].axes
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 30 and sum(heights) == r["labels"].size == 1000


def test_output_is_english(run_example):
    """No Cyrillic or CJK characters in what any program prints; the lesson's translated
    messages appear as EXPECTED.md lists them."""
    import re
    foreign = re.compile("[\u0400-\u04ff\u3000-\u9fff]")
    for name in PROGRAMS:
        assert not foreign.search(run_example(name)["stdout"]), name
    out = run_example("tf_function_lesson")["stdout"]
    times = [ln for ln in out.splitlines() if ln.startswith("Processing time (")]
    assert len(times) == 8 and all(ln.endswith(" s") for ln in times)
    assert [ln.split(",")[0] for ln in times] == ["Processing time (eager",
                                                  "Processing time (nf.function"] * 4
    assert sum("tracing and compiling included" in ln for ln in times) == 4
    assert out.count("print() called") == 11
    # stage 5: ten eager calls print ten times, the nf.function only while it traces
    tail = out[out.index(times[5]) + len(times[5]):]
    assert tail.count("print() called") == 11 and tail.index(times[6]) < tail.index(times[7])
    between = tail[tail.index(times[6]):tail.index(times[7])]
    assert between.count("print() called") == 1


def test_timings_say_what_they_measure(run_example):
    out = run_example("tf_numpy_performance")["stdout"]
    assert "time per call, best of 5 runs after a warm-up (compiles finished)" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("size ")]
    assert len(rows) == 4 and all("ndflow eager" in ln and "nf.function" in ln for ln in rows)


def test_steady_time_warms_up_waits_for_compiles_then_takes_the_best(monkeypatch):
    from ndflow.examples import _run
    events = []
    monkeypatch.setattr(_run, "wait_for_compiles", lambda: events.append("wait"))
    calls = []
    modes = []

    def f():
        calls.append(1)
        events.append("call")
        modes.append(nf.config.settings.numba)
    t = _run.steady_time(f, number=3, repeat=4)
    # 4 calls, a wait, 34 more (well under the warm-up budget), a wait, then 4 runs of 3;
    # the warm-up compiles at once (a compile would otherwise wait until it pays)
    assert modes[:38] == ["sync"] * 38 and set(modes[38:]) == {nf.config.settings.numba}
    assert events[:4] == ["call"] * 4 and events[4] == "wait"
    assert events[5:39] == ["call"] * 34 and events[39] == "wait"
    assert events[40:] == ["call"] * 12 and len(calls) == 50 and t > 0


def test_busy_note(monkeypatch):
    from ndflow.examples import _run
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert _run.busy_note() == ""
    monkeypatch.setattr(os, "getloadavg", lambda: (13.2, 12.0, 11.0))
    assert "load average 13.2 on 2 CPUs" in _run.busy_note()


def test_output_directory_defaults_to_a_new_temporary_one(tmp_path, monkeypatch, capsys):
    from ndflow.examples._run import Output
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    out = Output("demo")
    with open(out.path("a/b.txt"), "w") as f:
        f.write("x")
    out.path("never_written.png")
    assert os.path.dirname(out.dir) == str(tmp_path)
    assert os.path.basename(out.dir).startswith("ndflow-demo-")
    out.report()
    assert capsys.readouterr().out == "files written under %s: %s\n" % (
        out.dir, os.path.join("a", "b.txt"))
    named = Output("demo", str(tmp_path / "mine"))
    assert named.path("x.png") == str(tmp_path / "mine" / "x.png")


def test_scripts_run_from_the_checkout_and_write_into_a_temporary_directory(tmp_path):
    """`python examples/<name>.py` (a thin wrapper of ndflow/examples/<name>.py) from another
    directory: without --out its files go to a new temporary directory, which it prints."""
    env = dict(os.environ, NDFLOW_QUICK="1", NDFLOW_PROGRESS="0", PYTHONPATH=ROOT,
               TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cwd").mkdir()
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "tf_numpy_guide.py")],
                         cwd=tmp_path / "cwd", env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "narray.reshape(-1) has shape 15" in out.stdout
    assert os.listdir(tmp_path / "cwd") == []
    if importlib.util.find_spec("matplotlib"):
        (made,) = os.listdir(tmp_path / "tmp")
        assert made.startswith("ndflow-tf_numpy_guide-")
        assert os.listdir(tmp_path / "tmp" / made) == ["tf_numpy_guide_hist.png"]
        assert "files written under %s" % (tmp_path / "tmp" / made) in out.stdout
    # the wrapper gives the program's names to `import`, as tests of other modules use them
    sys.path.insert(0, EXAMPLES)
    try:
        wrapper = importlib.import_module("tf_numpy_guide")
    finally:
        sys.path.remove(EXAMPLES)
    from ndflow.examples import tf_numpy_guide
    assert wrapper.Model is tf_numpy_guide.Model and wrapper.main is tf_numpy_guide.main
