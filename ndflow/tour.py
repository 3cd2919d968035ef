"""A tour of ndflow: `python -m ndflow.tour [--out DIR] [--quick]`.

Runs TensorFlow's NumPy guide (ndflow/examples/tf_numpy_guide.py and tf_numpy_performance.py:
the seed programs with only their imports changed), then trains the digits classifier with
summaries, checkpoints it, saves and exports it and loads both in a fresh process
(ndflow/examples/train_export.py), and shows what ndflow adds: mutation, logical devices, and
the per-call cost of an eager operation and of an nf.function against NumPy.

The programs ship inside the package, so the tour is the same from a checkout and after
`pip install`. Its files (figures, TensorBoard logs, checkpoint, saved model, ONNX file) go under
`--out DIR`, by default a new temporary directory; the last lines say where.
`--quick` (or NDFLOW_QUICK=1) runs it small, in well under a minute.
"""
import os
import tempfile
import time

import numpy as np

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.examples import tf_numpy_guide, tf_numpy_performance, train_export
from ndflow.examples._run import busy_note, quick, run_as_script, steady_time


def _banner(title):
    print("\n" + "=" * 78 + "\n" + title + "\n" + "=" * 78)


def _guide(out_dir):
    return tf_numpy_guide.main(out_dir)


def _performance(out_dir):
    return tf_numpy_performance.main(out_dir)


def _train_export(out_dir):
    return train_export.main(os.path.join(out_dir, "train_export"))


def _mutation(out_dir):
    x = tnp.arange(6)
    x[1] = -1
    print("x = tnp.arange(6); x[1] = -1  ->", x)
    w = tnp.asarray([1.0, 2.0, 3.0])
    with nf.GradientTape() as tape:
        tape.watch(w)
        y = tnp.zeros(3)
        y[0:2] = w[1:] * 10.0
        loss = tnp.sum(y)
    grad = tape.gradient(loss, w)
    print("gradient flows through written values:", grad)
    return dict(x=x, grad=grad)


def _devices(out_dir):
    nf.config.set_logical_device_configuration(
        nf.config.list_physical_devices("CPU")[0],
        [nf.config.LogicalDeviceConfiguration(), nf.config.LogicalDeviceConfiguration()])
    print("logical devices:", nf.config.list_logical_devices())
    with nf.device("CPU:1"):
        a = tnp.ones([2, 2]) * 3
    with nf.device("/device:CPU:0"):
        b = tnp.copy(a)
    print("a on", a.device, "| tnp.copy(a) under CPU:0 on", b.device)
    print("GPUs:", nf.config.list_logical_devices("GPU") or "none (CuPy backend skipped)")
    return dict(a=a, b=b)


def _per_call(out_dir):
    number = 2000 if quick() else 20000
    na, nb = np.ones(1, np.float32), np.ones(1, np.float32)
    ta, tb = tnp.asarray(na), tnp.asarray(nb)
    add = nf.function(lambda u, v: u + v)
    t_np = steady_time(lambda: na + nb, number, repeat=7)
    t_nf = steady_time(lambda: ta + tb, number, repeat=7)
    t_fn = steady_time(lambda: add(ta, tb), number, repeat=7)
    print("time per call, best of 7 runs of %d calls; the nf.function after its first call "
          "(tracing) and its compiles:" % number)
    print("NumPy %.2f us | ndflow eager %.2f us (%.2fx NumPy) | ndflow nf.function %.2f us"
          % (t_np * 1e6, t_nf * 1e6, t_nf / t_np, t_fn * 1e6))
    if busy_note():
        print(busy_note())
    print("A call of an nf.function costs more than one eager operation: compiling pays for "
          "functions of many operations (the gradients and the sigmoid above).")
    return dict(numpy=t_np, eager=t_nf, function=t_fn, add_ratio=t_nf / t_np)


# (key, title, section): run in this order; each returns a dict of results
SECTIONS = [
    ("guide", "TensorFlow NumPy guide (seed 001), imports changed only", _guide),
    ("perf", "TensorFlow NumPy guide, second half (seed 000): gradients, nf.function, "
     "vectorized_map, devices, sigmoid benchmark", _performance),
    ("train_export", "Keep, ship and see: train with summaries, checkpoint, save, export to "
     "ONNX, load in a fresh process", _train_export),
    ("mutation", "Mutation (TensorFlow's NumPy raises here; ndflow follows NumPy)", _mutation),
    ("devices", "Devices: split the CPU into two logical devices, place and copy", _devices),
    ("per_call", "Per-call cost: a + b on 1-element float32 arrays", _per_call),
]


def main(out_dir=None):
    """Run every section in order; files go under `out_dir` (default: a new temporary
    directory). Returns {section key: its results} and "sections": the keys of those that ran."""
    t0 = time.perf_counter()
    out_dir = os.path.abspath(out_dir) if out_dir else tempfile.mkdtemp(prefix="ndflow-tour-")
    os.makedirs(out_dir, exist_ok=True)
    results = {"sections": []}
    for key, title, section in SECTIONS:
        _banner(title)
        results[key] = section(out_dir)
        results["sections"].append(key)
    results["add_ratio"] = results["per_call"]["add_ratio"]
    results["out_dir"] = out_dir
    print("\ntour finished in %.1f s: %d of %d sections ran" % (
        time.perf_counter() - t0, len(results["sections"]), len(SECTIONS)))
    print("its files are under %s: %s" % (out_dir, ", ".join(sorted(os.listdir(out_dir)))))
    return results


if __name__ == "__main__":
    run_as_script(main, __doc__.split("\n")[0])
