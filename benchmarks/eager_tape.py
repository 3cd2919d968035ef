"""Eager gradients under `GradientTape` against the hand-written NumPy programs.

* time: the seed guide's MLP gradient (batch 512, 32 -> 64 -> 2, float32), ndflow's tape
  against the hand-written forward + backward (`workloads.np_mlp_grads`); per call, the best
  of many rounds of thread CPU time (less sensitive than wall time to a loaded machine), each
  system in its own process (one program's frees change where the other's memory comes
  from: the C allocator's heap, trimmed and grown again, costs page faults);
* memory: the peak tracemalloc sees (NumPy reports its buffers to it) while computing the
  gradient of `sum(sin(x) * x)` and of `sum(1 / (1 + exp(-x)))` on a float32 array of 2**k
  elements, above what was allocated before (x itself), in arrays of x's size; ndflow and
  the hand-written NumPy gradient, each in a fresh process.

`--top-pad BYTES` sets glibc's MALLOC_TOP_PAD_ in the measuring processes: a 128 KiB array
freed at the top of the heap is otherwise often given back to the system and faulted in
again at the next call (~100 page faults per MLP step, for NumPy and ndflow alike, depending
on where long-lived objects happen to sit), which can triple a step's time.

`--baseline PATH` runs the same measurements against another checkout (e.g. the main branch)
in alternating processes, so before and after come from one run:

    PYTHONPATH=. python -m benchmarks.eager_tape [--log2n 26] [--rounds 3] [--baseline PATH]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------ child measurements
def _mlp(system):
    from benchmarks import workloads as W

    d = W.make_data(next(c for c in W.WORKLOADS["mlp_grad"] if c.key == "512"))

    def hand():
        return W.np_mlp_grads(**d)

    if system == "numpy":
        f = hand             # (this process does not import ndflow)
    else:
        import ndflow as nf
        import ndflow.numpy as tnp
        a = {k: tnp.asarray(v) for k, v in d.items()}

        def f():
            w = [a["w1"], a["b"], a["w2"]]
            with nf.GradientTape() as tape:
                tape.watch(w)
                h = tnp.maximum(tnp.matmul(a["x"], w[0]) + w[1], 0)
                loss = tnp.sum(tnp.square(tnp.matmul(h, w[2]) - a["labels"]))
            return tape.gradient(loss, w)

        for g, r in zip(f(), hand()):
            np.testing.assert_allclose(g.numpy(), r, rtol=1e-3, atol=1e-4)


    def per_call(n=50):
        t = time.thread_time()
        for _ in range(n):
            f()
        return (time.thread_time() - t) / n

    return {system: min(per_call() for _ in range(30)) * 1e6}


def _grad_fns(which):
    import ndflow as nf
    import ndflow.numpy as tnp

    if which == "sinx":
        def hand(x):
            s = np.sin(x)
            np.sum(s * x)
            return np.cos(x) * x + s

        def taped(x):
            with nf.GradientTape() as t:
                t.watch(x)
                loss = tnp.sum(tnp.sin(x) * x)
            return t.gradient(loss, x)
    else:
        def hand(x):
            s = 1 / (1 + np.exp(-x))
            np.sum(s)
            return s * (1 - s)

        def taped(x):
            with nf.GradientTape() as t:
                t.watch(x)
                loss = tnp.sum(1 / (1 + tnp.exp(-x)))
            return t.gradient(loss, x)
    return hand, taped


def peak_bytes(f, x):
    """Peak bytes tracemalloc sees above the start while `f(x)` runs (its result included)."""
    import gc
    import tracemalloc
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        r = f(x)
        return tracemalloc.get_traced_memory()[1] - base, r
    finally:
        tracemalloc.stop()


def _mem(which, log2n, system):
    x = np.random.default_rng(0).standard_normal(1 << log2n).astype(np.float32)
    hand, taped = _grad_fns(which)
    if system == "numpy":
        p, _ = peak_bytes(hand, x)
    else:
        import ndflow.numpy as tnp
        p, _ = peak_bytes(taped, tnp.asarray(x))
    return {"arrays": p / x.nbytes}


# ------------------------------------------------------------------ parent
def _child(tree, args, top_pad=None):
    env = dict(os.environ, PYTHONPATH=tree + os.pathsep + HERE)
    if top_pad:
        env["MALLOC_TOP_PAD_"] = str(top_pad)
    # run as a file, so that `ndflow` comes from `tree` (the checkout measured)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"] + args,
                         env=env, cwd=HERE, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=26)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", help="another ndflow checkout to compare with")
    ap.add_argument("--top-pad", type=int, help="MALLOC_TOP_PAD_ for the measurements")
    ap.add_argument("--child", nargs="+")
    a = ap.parse_args()
    if a.child:
        if a.child[0] == "mlp":
            r = _mlp(a.child[1])
        else:
            r = _mem(a.child[1], int(a.child[2]), a.child[3])
        print(json.dumps(r))
        return

    trees = [("this", HERE)] + ([("baseline", os.path.abspath(a.baseline))] if a.baseline else [])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"best of {a.rounds} rounds, checkouts alternating"
          + (f"; MALLOC_TOP_PAD_={a.top_pad}" if a.top_pad else ""))
    mlp = {name: {"numpy": 1e9, "ndflow": 1e9} for name, _ in trees}
    mem = {}
    for _ in range(a.rounds):
        for name, tree in trees:
            for system in ("numpy", "ndflow"):
                r = _child(tree, ["mlp", system], a.top_pad)
                mlp[name][system] = min(mlp[name][system], r[system])
    for which in ("sinx", "sigmoid"):
        for name, tree in trees:
            for system in ("numpy", "ndflow"):
                mem[name, which, system] = _child(
                    tree, ["mem", which, str(a.log2n), system])["arrays"]
    print("\nMLP gradient, batch 512, float32 (thread CPU time per call, us)")
    for name, _ in trees:
        m = mlp[name]
        print(f"  {name:9s} numpy {m['numpy']:7.1f}   ndflow tape {m['ndflow']:7.1f}   "
              f"ratio {m['ndflow'] / m['numpy']:.2f}")
    print(f"\npeak memory of the gradient, float32 2**{a.log2n} (in arrays of x's size)")
    for which, label in (("sinx", "sum(sin(x) * x)"), ("sigmoid", "sum(1/(1+exp(-x)))")):
        for name, _ in trees:
            n, f = mem[name, which, "numpy"], mem[name, which, "ndflow"]
            print(f"  {label:20s} {name:9s} numpy {n:5.2f}   ndflow tape {f:5.2f}   "
                  f"ratio {f / n:.2f}")


if __name__ == "__main__":
    main()
