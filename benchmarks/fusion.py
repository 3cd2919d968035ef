"""Elementwise fusion benchmark: the TF NumPy guide's sigmoid `1/(1+exp(-y))` (float32) at
2**0, 2**20, 2**24 against NumPy, ndflow eager, the memory floor (a copy: 8 bytes per
element, in and out) and the fused kernel's two tiers; the MLP gradient at batch 512; numba's
import and compile costs (fresh processes). Ratios come from one run on one machine.

    PYTHONPATH=. python -m benchmarks.fusion [--quick]
"""
import json
import os
import subprocess
import sys
import tempfile
import timeit

import numpy as np


def best(f, budget=0.4, repeat=7):
    f()
    n = 1
    while True:
        t = timeit.timeit(f, number=n)
        if t > budget / repeat or n > 1 << 20:
            break
        n *= 4
    return min(timeit.repeat(f, number=n, repeat=repeat)) / n


def sigmoid_rows(sizes):
    import ndflow as nf
    import ndflow.numpy as tnp
    from ndflow.graph import fusion
    from ndflow.graph.kernels import wait_for_compiles, numba_compile

    rows = []
    for n in sizes:
        y = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        ty = tnp.asarray(y)
        out = np.empty_like(y)
        r = {"n": n}
        r["numpy"] = best(lambda: 1 / (1 + np.exp(-y)))
        r["eager"] = best(lambda: 1 / (1 + tnp.exp(-ty)))
        r["floor_copy"] = best(lambda: np.copyto(out, y))
        settings = nf.config.settings
        with settings.override(numba="off"):
            f0 = nf.function(lambda v: 1 / (1 + tnp.exp(-v)))
            r["tier0"] = best(lambda: f0(ty))
        for parallel in (False, True):
            with settings.override(numba="sync", numba_parallel_min=0 if parallel else 1 << 62):
                f1 = nf.function(lambda v: 1 / (1 + tnp.exp(-v)))
                for _ in range(5):
                    f1(ty)
                wait_for_compiles()
                r["tier1_2threads" if parallel else "tier1_1thread"] = best(lambda: f1(ty))
        cf = f0.get_concrete_function(ty)
        r["run_only"] = best(lambda: cf.run(ty._v))
        f = nf.function(lambda v: 1 / (1 + tnp.exp(-v)))
        for _ in range(5):
            f(ty)
        wait_for_compiles()
        r["compiled_default"] = best(lambda: f(ty))
        np.testing.assert_allclose(np.asarray(f(ty)), 1 / (1 + np.exp(-y)), rtol=1e-6)
        rows.append(r)
    return rows, dict(numba_compile.STATS)


def mlp_row():
    import ndflow as nf
    import ndflow.numpy as tnp
    from ndflow.graph.kernels import wait_for_compiles
    sys.path.insert(0, os.path.dirname(__file__))
    from workloads import np_mlp_grads

    rng = np.random.default_rng(0)
    shapes = [(512, 32), (512, 2), (32, 64), (64,), (64, 2)]
    a = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ta = [tnp.asarray(v) for v in a]

    from .impl_ndflow import setup, _compute_gradients
    setup()

    def grads(x, labels, w1, b, w2):        # the guide's gradient, as the benchmark table runs it
        return _compute_gradients([w1, b, w2], x, labels)

    r = {"numpy": best(lambda: np_mlp_grads(*a)), "eager": best(lambda: grads(*ta))}
    with nf.config.settings.override(fusion=False):
        fu = nf.function(grads)
        r["compiled_unfused"] = best(lambda: fu(*ta))
    f = nf.function(grads)
    for _ in range(5):
        f(*ta)
    wait_for_compiles()
    r["compiled_fused"] = best(lambda: f(*ta))
    for g, w in zip(f(*ta), np_mlp_grads(*a)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-4, atol=1e-4)
    return r


_COST = r"""
import json, os, sys, time
t0 = time.perf_counter(); import numba; t1 = time.perf_counter()
import numpy as np, ndflow as nf, ndflow.numpy as tnp
nf.config.settings.numba = "sync"
from ndflow.graph.kernels import numba_compile
f = nf.function(lambda v: 1 / (1 + tnp.exp(-v)))
y = tnp.asarray(np.ones(1 << 16, np.float32))
for _ in range(3): f(y)
print(json.dumps({"import_numba_s": t1 - t0, "first_kernel_s": numba_compile.STATS["compile_s"]}))
"""


def numba_costs():
    out = {}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NDFLOW_CACHE_DIR=d,
                   PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for label in ("cold", "disk_cache"):
            p = subprocess.run([sys.executable, "-c", _COST], env=env, capture_output=True,
                               text=True, check=True)
            out[label] = json.loads(p.stdout.strip().splitlines()[-1])
    return out


def main():
    quick = "--quick" in sys.argv
    sizes = [1, 1 << 20] if quick else [1, 1 << 20, 1 << 24]
    rows, stats = sigmoid_rows(sizes)
    print("sigmoid 1/(1+exp(-y)), float32 (times in microseconds)")
    cols = ["numpy", "eager", "run_only", "tier0", "tier1_1thread", "tier1_2threads",
            "compiled_default", "floor_copy"]
    print("%10s " % "n" + " ".join("%15s" % c for c in cols) + "  compiled/numpy  /floor")
    for r in rows:
        print("%10d " % r["n"] + " ".join("%15.1f" % (r[c] * 1e6) for c in cols) +
              "  %13.2fx %6.2fx" % (r["compiled_default"] / r["numpy"],
                                    r["compiled_default"] / r["floor_copy"]))
    m = mlp_row()
    print("\nMLP gradient, batch 512 (microseconds): " +
          ", ".join("%s %.1f" % (k, v * 1e6) for k, v in m.items()))
    if "--no-costs" not in sys.argv:
        c = numba_costs()
        print("\nnumba: import %.0f ms; first kernel (import of helpers, compile) %.0f ms cold, "
              "%.0f ms from the disk cache" % (c["cold"]["import_numba_s"] * 1e3,
                                               c["cold"]["first_kernel_s"] * 1e3,
                                               c["disk_cache"]["first_kernel_s"] * 1e3))
    print("\nthis run's compile stats:", stats)


if __name__ == "__main__":
    main()
