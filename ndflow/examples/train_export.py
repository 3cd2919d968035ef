"""Train, keep, ship and see: the digits classifier from start to finish.

Trains the tf.function lesson's digits classifier (seed 003, synthetic digits) with progress
bars and TensorBoard summaries, checkpoints it, exports it as a saved function and as ONNX,
then loads both in a fresh Python process that has none of this file's code and checks that
their predictions agree with the model's.

Run:  python -m ndflow.examples.train_export [--out DIR] [--quick]
      (or python examples/train_export.py; default DIR: a new temporary directory, printed;
      --quick or NDFLOW_QUICK=1: a few seconds)
      tensorboard --logdir DIR/logs                      (to watch it)

Optional packages: tqdm (progress bars), onnx + onnxruntime (the ONNX export and its check),
matplotlib (the loss curve as PNG), tensorboard (only to look at the logs). Without them those
steps say so and the rest runs.
"""
# DEVIATION: not a seed program; it strings together what the seeds promise (graphs that run
#            without Python source, summaries for visualization) on seed 003's model and data.
import json
import os
import subprocess
import sys
import time

import numpy as np
import ndflow as nf
import ndflow.numpy as tnp

from ndflow.examples._run import Output, quick as _quick, run_as_script
from ndflow.examples.tf_function_lesson import load_synthetic_digits
from ndflow.utils.plotting import save_loss_curve
from ndflow.utils.progress import progress


class Classifier(nf.Module):
    """784 -> 128 (relu) -> 10 (softmax): the lesson's SequentialModule, with its call compiled
    for any batch size so it can be saved and exported."""

    def __init__(self, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w1 = nf.Variable(rng.normal(0, 0.1, (784, 128)).astype(np.float32), name="w1")
        self.b1 = nf.Variable(np.zeros(128, np.float32), name="b1")
        self.w2 = nf.Variable(rng.normal(0, 0.1, (128, 10)).astype(np.float32), name="w2")
        self.b2 = nf.Variable(np.zeros(10, np.float32), name="b2")

    @nf.function(input_signature=[nf.TensorSpec([None, 784], nf.float32, name="images")])
    def __call__(self, x):
        h = nf.nn.relu(x @ self.w1 + self.b1)
        return nf.nn.softmax(h @ self.w2 + self.b2)


# The fresh process: no classifier code, only ndflow (and onnxruntime when present).
_CHECK_IN_FRESH_PROCESS = r"""
import json, sys
import numpy as np
import ndflow as nf
out_dir = sys.argv[1]
x = np.load(out_dir + "/test_images.npy")
loaded = nf.saved_model.load(out_dir + "/saved_model")
res = {"saved_model": np.asarray(loaded(x)).tolist()}
try:
    import onnxruntime as ort
except ImportError:
    res["onnx"] = None
else:
    sess = ort.InferenceSession(out_dir + "/model.onnx", providers=["CPUExecutionProvider"])
    res["onnx"] = sess.run(None, {"images": x})[0].tolist()
json.dump(res, sys.stdout)
"""


def main(out_dir=None):
    """Train, checkpoint, save, export and reload; every file goes under `out_dir` (default: a
    new temporary directory). Returns a dict of results for tests."""
    quick = _quick()
    out_dir = Output("train_export", out_dir).dir
    t0 = time.perf_counter()

    n_train, n_test = (2048, 256) if quick else (20000, 2000)
    (x_train, y_train), (x_test, y_test) = load_synthetic_digits(n_train, n_test)
    x_train = (x_train.reshape(-1, 784) / 255).astype(np.float32)
    x_test = (x_test.reshape(-1, 784) / 255).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[y_train]

    model = Classifier()
    opt = nf.optimizers.Adam(learning_rate=1e-3)
    writer = nf.summary.create_file_writer(os.path.join(out_dir, "logs"))

    @nf.function
    def train_step(x, y):
        with nf.GradientTape() as tape:
            p = model(x)
            loss = -tnp.mean(tnp.sum(y * tnp.log(p + 1e-7), axis=1))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        # Written at run time, once per call, at the optimizer's step (as tf.summary does).
        nf.summary.scalar("loss", loss, step=opt.iterations)
        return loss

    batch, epochs = 64, (2 if quick else 5)
    steps_per_epoch = n_train // batch
    rng = np.random.default_rng(1)
    losses = []
    with writer.as_default():
        for epoch in range(epochs):
            order = rng.permutation(n_train)
            for s in progress(range(steps_per_epoch), desc=f"epoch {epoch + 1}"):
                idx = order[s * batch:(s + 1) * batch]
                losses.append(float(train_step(x_train[idx], onehot[idx])))
            acc = float(np.mean(np.argmax(np.asarray(model(x_test)), axis=1) == y_test))
            nf.summary.scalar("test_accuracy", acc, step=epoch)
            nf.summary.histogram("w1", model.w1, step=epoch)
            print(f"epoch {epoch + 1}: loss {losses[-1]:.4f}, test accuracy {acc:.3f}")
    writer.flush()

    # Keep: a checkpoint of the model and the optimizer, restored into a fresh model.
    ckpt = nf.train.Checkpoint(model=model, optimizer=opt)
    manager = nf.train.CheckpointManager(ckpt, os.path.join(out_dir, "checkpoints"), max_to_keep=2)
    ckpt_path = manager.save()
    fresh = Classifier(seed=123)
    nf.train.Checkpoint(model=fresh).restore(ckpt_path).expect_partial()
    restored_equal = bool(np.array_equal(np.asarray(fresh(x_test)), np.asarray(model(x_test))))

    # Ship: the compiled call as a saved function and as ONNX.
    nf.saved_model.save(model, os.path.join(out_dir, "saved_model"))
    onnx_path = os.path.join(out_dir, "model.onnx")
    try:
        nf.onnx.export(model.__call__, [nf.TensorSpec([None, 784], nf.float32, name="images")],
                       onnx_path)
    except ImportError as e:
        print(f"ONNX export skipped: {e}")
        onnx_path = None

    # Load both in a fresh process that has none of this file and compare predictions.
    np.save(os.path.join(out_dir, "test_images.npy"), x_test)
    # The child finds ndflow where this process found it, and imports none of the examples.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(nf.__file__)))
    proc = subprocess.run([sys.executable, "-c", _CHECK_IN_FRESH_PROCESS, out_dir],
                          capture_output=True, text=True, cwd=out_dir, env=env)
    if proc.returncode != 0:
        raise RuntimeError("loading the exports in a fresh process failed:\n" + proc.stderr)
    fresh_preds = json.loads(proc.stdout)
    ours = np.asarray(model(x_test))
    saved_diff = float(np.max(np.abs(np.asarray(fresh_preds["saved_model"]) - ours)))
    onnx_diff = None
    if fresh_preds["onnx"] is not None and onnx_path is not None:
        onnx_diff = float(np.max(np.abs(np.asarray(fresh_preds["onnx"]) - ours)))

    picture = save_loss_curve(losses, os.path.join(out_dir, "loss.png"),
                              title="Digits classifier: training loss per step",
                              xlabel=f"step (batch of {batch} images)",
                              ylabel="cross-entropy (batch mean)")

    print(f"checkpoint restored into a fresh model gives the same predictions: {restored_equal}")
    print(f"saved function in a fresh process: max |difference| {saved_diff:.3g}")
    print("ONNX in onnxruntime, fresh process: "
          + ("not checked (onnx/onnxruntime not installed)" if onnx_diff is None
             else f"max |difference| {onnx_diff:.3g}"))
    print(f"files under {out_dir}:")
    print(f"  logs/           TensorBoard summaries (tensorboard --logdir {out_dir}/logs)")
    print(f"  checkpoints/    {os.path.basename(ckpt_path)} (nf.train.Checkpoint)")
    print("  saved_model/    nf.saved_model.load(...)")
    if onnx_path:
        print("  model.onnx      onnxruntime.InferenceSession(...)")
    if picture:
        print("  loss.png        the loss curve")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return dict(out_dir=out_dir, losses=losses, accuracy=acc, checkpoint=ckpt_path,
                restored_equal=restored_equal, saved_model_diff=saved_diff,
                onnx_diff=onnx_diff, loss_png=picture)


if __name__ == "__main__":
    run_as_script(main, "Train, checkpoint, save, export to ONNX and reload the digits "
                  "classifier.")
