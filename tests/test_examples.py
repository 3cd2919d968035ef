"""The seed programs (examples/) run on ndflow with only their imports changed, and what they
print holds (examples/EXPECTED.md). NumPy is the oracle for the values."""
import importlib
import os
import sys

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


@pytest.fixture(scope="module")
def run_example():
    os.environ["NDFLOW_QUICK"] = "1"
    sys.path.insert(0, EXAMPLES)
    cache = {}

    def run(name):
        if name not in cache:
            tnp.random.seed(0)
            cache[name] = importlib.import_module(name).main()
        return cache[name]
    yield run
    sys.path.remove(EXAMPLES)
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
    sys.path.insert(0, EXAMPLES)
    try:
        mod = importlib.import_module("effective_tf")
    finally:
        sys.path.remove(EXAMPLES)
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
    sys.path.insert(0, EXAMPLES)
    try:
        mod = importlib.import_module("train_export")
    finally:
        sys.path.remove(EXAMPLES)
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
