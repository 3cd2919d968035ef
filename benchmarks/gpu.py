"""GPU benchmarks, side by side in one process on one device: ndflow (eager and nf.function on
GPU:0), CuPy itself, jax.jit and torch.compile where importable.

    python -m benchmarks.gpu [--quick] [--out DIR]

Workloads (inputs from benchmarks/workloads.py, float32):
  sigmoid      1/(1+exp(-y)), sizes 2**10 .. 2**26. The device's copy bandwidth is measured in
               the same run (a device-to-device copy of 2**26 float32); each sigmoid row gives
               its achieved bandwidth (one read and one write of the array) as a fraction of
               it. The issue's goal: >= 0.80 at the largest size.
  mlp_grad     the guide's MLP gradient (32 -> 64 -> 2), batch 512 and 8192
  per_example  per-example gradients with vectorized_map (jax: vmap(grad); torch: func.vmap),
               batch 128 and 1024

Timing: each call's work is queued on the device; a measurement runs `number` calls and
synchronizes once, best of 5 repeats (GPU timings are steady; the best excludes the host's
noise). Writes gpu_bench.json and gpu_bench.md to --out (default $OUT, else the current
directory) and prints the table with the device name.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from . import workloads as W

SIGMOID_SIZES = [2 ** k for k in (10, 14, 18, 20, 22, 24, 26)]


def _timeit(fn, sync, min_time=0.05, repeat=5):
    fn()
    sync()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        dt = time.perf_counter() - t0
        if dt >= min_time or number >= 1 << 16:
            break
        number *= 4
    best = dt / number
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


# ------------------------------------------------------------------ systems
def _ndflow():
    import ndflow as nf
    import ndflow.numpy as tnp
    from ndflow.backends import device as D
    b = D.gpu_backend()
    if b is None:
        raise RuntimeError("ndflow sees no GPU (is the gpu extra installed?)")

    def put(a):
        return tnp.asarray(a, device="GPU:0")

    from .impl_ndflow import setup, _compute_gradients
    setup()

    def grads(w1, b_, w2, x, labels):        # the guide's gradient, as the CPU table runs it
        return _compute_gradients([w1, b_, w2], x, labels)

    def sigmoid(y):
        return 1 / (1 + tnp.exp(-y))

    def per_example(w1, b_, w2, x, labels):
        def one(arg):
            xi, li = arg
            return tuple(grads(w1, b_, w2, tnp.expand_dims(xi, 0), tnp.expand_dims(li, 0)))
        return nf.vectorized_map(one, (x, labels))

    fsig = nf.function(sigmoid)
    fgrads = nf.function(grads)
    fper = nf.function(per_example)
    sync = b.synchronize
    return {
        "name": "ndflow",
        "sync": sync,
        "put": put,
        "device": b.device_name(0),
        "sigmoid": {"ndflow eager": sigmoid, "nf.function": fsig},
        "mlp_grad": {"ndflow eager": grads, "nf.function": fgrads},
        "per_example": {"nf.function": fper},
        "copy": lambda a: tnp.copy(a),
        "check": lambda out: np.asarray(out[0].numpy() if isinstance(out, list) else out.numpy()),
        "memory": b.memory_info,
    }


def _cupy():
    import cupy as cp

    def sync():
        cp.cuda.Device().synchronize()

    def sigmoid(y):
        return 1 / (1 + cp.exp(-y))
    ew = cp.ElementwiseKernel("float32 y", "float32 z", "z = 1.0f / (1.0f + expf(-y))",
                              "bench_sigmoid")
    return {"name": "cupy", "sync": sync, "put": cp.asarray,
            "sigmoid": {"cupy": sigmoid, "cupy ElementwiseKernel": ew},
            "copy": lambda a: a.copy()}


def _jax():
    import jax
    import jax.numpy as jnp
    dev = [d for d in jax.devices() if d.platform == "gpu"]
    if not dev:
        raise RuntimeError("jax sees no GPU")

    def put(a):
        return jax.device_put(a, dev[0])

    def loss(w, x, labels):
        w1, b_, w2 = w
        h = jnp.maximum(x @ w1 + b_, 0)
        return jnp.sum(jnp.square(h @ w2 - labels))
    g = jax.jit(lambda w1, b_, w2, x, labels: jax.grad(loss)((w1, b_, w2), x, labels))
    per = jax.jit(lambda w1, b_, w2, x, labels: jax.vmap(
        lambda xi, li: jax.grad(loss)((w1, b_, w2), xi[None], li[None]))(x, labels))
    sig = jax.jit(lambda y: 1 / (1 + jnp.exp(-y)))
    last = {}

    def keep(f):
        def run(*a):
            last["out"] = f(*a)
            return last["out"]
        return run

    def sync():
        if "out" in last:
            jax.block_until_ready(last["out"])
    return {"name": "jax", "sync": sync, "put": put,
            "sigmoid": {"jax.jit": keep(sig)}, "mlp_grad": {"jax.jit": keep(g)},
            "per_example": {"jax.jit": keep(per)}}


def _torch():
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no GPU")

    def put(a):
        return torch.as_tensor(a, device="cuda")

    def sigmoid(y):
        return 1 / (1 + torch.exp(-y))

    def loss(w1, b_, w2, x, labels):
        h = torch.clamp_min(x @ w1 + b_, 0)
        return torch.sum(torch.square(h @ w2 - labels))

    gfn = torch.func.grad(loss, argnums=(0, 1, 2))
    per = torch.func.vmap(lambda xi, li, w1, b_, w2: gfn(w1, b_, w2, xi[None], li[None]),
                          in_dims=(0, 0, None, None, None))
    return {"name": "torch", "sync": torch.cuda.synchronize, "put": put,
            "sigmoid": {"torch.compile": torch.compile(sigmoid)},
            "mlp_grad": {"torch.compile": torch.compile(lambda w1, b_, w2, x, l: gfn(
                w1, b_, w2, x, l))},
            "per_example": {"torch.compile": torch.compile(
                lambda w1, b_, w2, x, l: per(x, l, w1, b_, w2))}}


def _systems():
    out, errors = [], {}
    for make in (_ndflow, _cupy, _jax, _torch):
        name = make.__name__[1:]
        try:
            out.append(make())
        except Exception as e:          # a system missing on this machine: say so, go on
            errors[name] = f"{type(e).__name__}: {e}"
    return out, errors


# ------------------------------------------------------------------ runs
def copy_bandwidth(systems):
    """Bytes per second of a device-to-device copy of 2**26 float32 (read + write), with CuPy
    (else ndflow's tnp.copy)."""
    n = 2 ** 26
    for s in sorted(systems, key=lambda s: s["name"] != "cupy"):
        if s["name"] in ("cupy", "ndflow") and "copy" in s:
            a = s["put"](np.ones(n, np.float32))
            t = _timeit(lambda: s["copy"](a), s["sync"])
            return 2 * 4 * n / t, s["name"]
    return None, None


def run(quick=False, workloads=("sigmoid", "mlp_grad", "per_example")):
    systems, errors = _systems()
    if not systems or systems[0]["name"] != "ndflow":
        raise SystemExit("ndflow has no GPU here: " + json.dumps(errors))
    bw, bw_by = copy_bandwidth(systems)
    rows = []
    sizes = SIGMOID_SIZES[::3] + SIGMOID_SIZES[-1:] if quick else SIGMOID_SIZES
    for n in sizes if "sigmoid" in workloads else ():
        d = W.make_data(W.Case("sigmoid", str(n), str(n), {"n": n}))
        want = W.np_sigmoid(d["y"].astype(np.float64))
        for s in systems:
            y = s["put"](d["y"])
            for col, fn in s.get("sigmoid", {}).items():
                t = _timeit(lambda: fn(y), s["sync"])
                out = fn(y)
                err = _maxerr(out, want)
                ratio = (2 * 4 * n / t) / bw if bw else None
                rows.append({"workload": "sigmoid", "size": n, "system": col, "seconds": t,
                             "bandwidth_ratio": ratio, "max_abs_err": err})
    for batch in (512, 8192) if "mlp_grad" in workloads else ():
        rows += _grad_rows(systems, "mlp_grad", batch)
    for batch in (128, 1024) if "per_example" in workloads else ():
        rows += _grad_rows(systems, "per_example", batch)
    return {"device": systems[0]["device"], "copy_bandwidth_GBps": bw and bw / 1e9,
            "copy_measured_with": bw_by, "rows": rows, "missing": errors,
            "memory": systems[0]["memory"]()}


def _grad_rows(systems, workload, batch):
    key = "mlp_grad" if workload == "mlp_grad" else "per_example_grads"
    d = W.make_data(W.Case(key, str(batch), str(batch), {"batch": batch, "via": "vectorized_map"}))
    args_np = [d["w1"], d["b"], d["w2"], d["x"], d["labels"]]
    rows = []
    for s in systems:
        args = [s["put"](a) for a in args_np]
        for col, fn in s.get(workload, {}).items():
            t = _timeit(lambda: fn(*args), s["sync"])
            rows.append({"workload": workload, "size": batch, "system": col, "seconds": t})
    return rows


def _maxerr(out, want):
    try:
        if hasattr(out, "numpy") and not hasattr(out, "get"):
            got = np.asarray(out.numpy() if not hasattr(out, "cpu") else out.cpu().numpy())
        elif hasattr(out, "get"):
            got = out.get()
        else:
            got = np.asarray(out)
        return float(np.max(np.abs(got.astype(np.float64) - want)))
    except Exception:
        return None


def table(res):
    lines = [f"GPU benchmarks on {res['device']} (copy bandwidth "
             f"{res['copy_bandwidth_GBps']:.0f} GB/s, measured with {res['copy_measured_with']})",
             "", "| workload | size | system | time | of copy bandwidth | max abs err |",
             "| --- | ---: | --- | ---: | ---: | ---: |"]
    for r in res["rows"]:
        t = r["seconds"]
        ts = f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.3f} ms"
        ratio = r.get("bandwidth_ratio")
        err = r.get("max_abs_err")
        lines.append(f"| {r['workload']} | {r['size']} | {r['system']} | {ts} | "
                     f"{'' if ratio is None else f'{ratio:.2f}'} | "
                     f"{'' if err is None else f'{err:.1e}'} |")
    if res["missing"]:
        lines += ["", "not measured: " + "; ".join(f"{k} ({v})" for k, v in
                                                    res["missing"].items())]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=os.environ.get("OUT") or ".")
    p.add_argument("--workloads", default="sigmoid,mlp_grad,per_example",
                   help="comma-separated subset (each is written to its own files)")
    a = p.parse_args(argv)
    wl = tuple(a.workloads.split(","))
    res = run(a.quick, wl)
    md = table(res)
    print(md)
    os.makedirs(a.out, exist_ok=True)
    tag = "" if len(wl) == 3 else "_" + "_".join(wl)
    with open(os.path.join(a.out, "gpu_bench%s.json" % tag), "w") as f:
        json.dump(res, f, indent=1, default=str)
    with open(os.path.join(a.out, "gpu_bench%s.md" % tag), "w") as f:
        f.write(md + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
