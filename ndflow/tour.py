"""A tour of ndflow: `python -m ndflow.tour`.

Runs TensorFlow's NumPy guide (examples/tf_numpy_guide.py and tf_numpy_performance.py: the seed
programs with only their imports changed), then trains the digits classifier with summaries,
checkpoints it, saves and exports it and loads both in a fresh process (examples/train_export.py;
it prints where the files went), and shows what ndflow adds: mutation, logical devices, the eager
per-call overhead against NumPy, and a summary of the timings.
Set NDFLOW_QUICK=1 for a short run.
"""
import os
import sys
import time
import timeit

import numpy as np


def _examples_dir():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    d = os.path.join(here, "examples")
    return d if os.path.isdir(d) else None


def _banner(title):
    print("\n" + "=" * 78 + "\n" + title + "\n" + "=" * 78)


def _per_call(f, n=20000, repeat=7):
    return min(timeit.repeat(f, number=n, repeat=repeat)) / n


def main():
    import ndflow as nf
    import ndflow.numpy as tnp
    t0 = time.perf_counter()
    results = {}
    ex = _examples_dir()
    if ex is None:
        print("examples/ not found next to the ndflow package (installed without the repo); "
              "skipping the seed programs")
    else:
        sys.path.insert(0, ex)
        import tf_numpy_guide
        import tf_numpy_performance
        _banner("TensorFlow NumPy guide (seed 001), imports changed only")
        results["guide"] = tf_numpy_guide.main()
        _banner("TensorFlow NumPy guide, second half (seed 000): gradients, nf.function, "
                "vectorized_map, devices, sigmoid benchmark")
        results["perf"] = tf_numpy_performance.main()

    if ex is not None:
        import train_export
        _banner("Keep, ship and see: train with summaries, checkpoint, save, export to ONNX, "
                "load in a fresh process")
        results["train_export"] = train_export.main()

    _banner("Mutation (TensorFlow's NumPy raises here; ndflow follows NumPy)")
    x = tnp.arange(6)
    x[1] = -1
    print("x = tnp.arange(6); x[1] = -1  ->", x)
    w = tnp.asarray([1.0, 2.0, 3.0])
    with nf.GradientTape() as tape:
        tape.watch(w)
        y = tnp.zeros(3)
        y[0:2] = w[1:] * 10.0
        loss = tnp.sum(y)
    print("gradient flows through written values:", tape.gradient(loss, w))

    _banner("Devices: split the CPU into two logical devices, place and copy")
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

    _banner("Eager per-call overhead: a + b on 1-element float32 arrays")
    na, nb = np.ones(1, np.float32), np.ones(1, np.float32)
    ta, tb = tnp.asarray(na), tnp.asarray(nb)
    t_np = _per_call(lambda: na + nb)
    t_nf = _per_call(lambda: ta + tb)
    f = nf.function(lambda u, v: u + v)
    f(ta, tb)
    t_fn = _per_call(lambda: f(ta, tb))
    print("NumPy %.2f us | ndflow eager %.2f us (%.2fx NumPy) | ndflow nf.function %.2f us"
          % (t_np * 1e6, t_nf * 1e6, t_nf / t_np, t_fn * 1e6))
    results["add_ratio"] = t_nf / t_np
    print("\ntour finished in %.1f s" % (time.perf_counter() - t0))
    return results


if __name__ == "__main__":
    main()
