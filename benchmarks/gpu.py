"""GPU benchmarks, side by side in one process on one device: ndflow (eager and nf.function on
GPU:0), CuPy itself, jax.jit and torch.compile where importable.

    python -m benchmarks.gpu [--quick] [--out DIR]

Workloads (inputs from benchmarks/workloads.py, float32):
  sigmoid      1/(1+exp(-y)), sizes 2**10 .. 2**26. The device's copy bandwidth is measured in
               the same run (the fastest device-to-device copy of 2**26 float32 among CuPy,
               PyTorch and ndflow); each sigmoid row gives its achieved bandwidth (one read and
               one write of the array) as a fraction of it. The issue's goal: >= 0.80 at the largest size.
  mlp_grad     the guide's MLP gradient (32 -> 64 -> 2), batch 512 and 8192
  per_example  per-example gradients with vectorized_map (jax: vmap(grad); torch: func.vmap),
               batch 128 and 1024
  classifier   the digits classifier's SGD step (784 -> 128 -> 10, softmax cross-entropy; ndflow
               updates four Variables on GPU:0 in place, jax and torch return new parameters),
               batch 32, 256 and 8192

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


def _time_row(rows, workload, size, system, fn, sync):
    """Time `fn` into a row of `rows` and print the row at once (a step stopped at its time limit
    keeps what it measured); a column that fails gets its error in the row, and the others run.
    Returns the seconds, or None."""
    row = {"workload": workload, "size": size, "system": system, "seconds": None}
    try:
        row["seconds"] = _timeit(fn, sync)
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"[:300]
    rows.append(row)
    print(json.dumps(row, default=str), flush=True)
    return row["seconds"]


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

    from .impl_ndflow import setup, _compute_gradients, classifier_train_step
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

    def classifier(arr):
        """(eager step, compiled step) over Variables placed on GPU:0 from `arr`'s values."""
        with nf.device("GPU:0"):
            params = [nf.Variable(arr[k]) for k in ("w1", "b1", "w2", "b2")]
        train_step = classifier_train_step(params)
        return {"ndflow eager": train_step, "nf.function": nf.function(train_step)}
    return {
        "name": "ndflow",
        "sync": sync,
        "put": put,
        "device": b.device_name(0),
        "sigmoid": {"ndflow eager": sigmoid, "nf.function": fsig},
        "mlp_grad": {"ndflow eager": grads, "nf.function": fgrads},
        "per_example": {"nf.function": fper},
        "classifier": classifier,
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

    def classifier(arr):
        params = [cp.asarray(arr[k]) for k in ("w1", "b1", "w2", "b2")]

        def step(x, onehot):
            return W.np_classifier_step(params, x, onehot)   # NumPy dispatches to CuPy
        return {"cupy (hand-written step)": step}
    return {"name": "cupy", "sync": sync, "put": cp.asarray,
            "sigmoid": {"cupy": sigmoid, "cupy ElementwiseKernel": ew},
            "classifier": classifier,
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

    def cls_loss(params, x, onehot):
        w1, b1, w2, b2 = params
        h = jnp.maximum(x @ w1 + b1, 0)
        logits = h @ w2 + b2
        z = logits - jnp.max(logits, axis=1, keepdims=True)
        return jnp.mean(jnp.log(jnp.sum(jnp.exp(z), axis=1)) - jnp.sum(z * onehot, axis=1))

    @jax.jit
    def cls_step(params, x, onehot):
        val, g = jax.value_and_grad(cls_loss)(params, x, onehot)
        return val, tuple(p - W.D_LR * gp for p, gp in zip(params, g))

    def classifier(arr):
        state = [tuple(put(arr[k]) for k in ("w1", "b1", "w2", "b2"))]

        def step(x, onehot):
            val, state[0] = cls_step(state[0], x, onehot)
            last["out"] = val
            return val
        return {"jax.jit": step}

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
            "per_example": {"jax.jit": keep(per)}, "classifier": classifier}


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

    def cls_loss(params, x, onehot):
        w1, b1, w2, b2 = params
        h = torch.relu(x @ w1 + b1)
        logits = h @ w2 + b2
        z = logits - torch.amax(logits, dim=1, keepdim=True)
        return torch.mean(torch.log(torch.sum(torch.exp(z), dim=1)) - torch.sum(z * onehot, dim=1))

    def cls_train(params, x, onehot):
        g, val = torch.func.grad_and_value(cls_loss)(params, x, onehot)
        return val, tuple(p - W.D_LR * gp for p, gp in zip(params, g))
    cls_step = torch.compile(cls_train)

    def classifier(arr):
        state = [tuple(put(arr[k]) for k in ("w1", "b1", "w2", "b2"))]

        def step(x, onehot):
            val, state[0] = cls_step(state[0], x, onehot)
            return val
        return {"torch.compile": step}

    gfn = torch.func.grad(loss, argnums=(0, 1, 2))
    per = torch.func.vmap(lambda xi, li, w1, b_, w2: gfn(w1, b_, w2, xi[None], li[None]),
                          in_dims=(0, 0, None, None, None))
    return {"name": "torch", "sync": torch.cuda.synchronize, "put": put,
            "copy": lambda a: a.clone(),
            "sigmoid": {"torch.compile": torch.compile(sigmoid)},
            "mlp_grad": {"torch.compile": torch.compile(lambda w1, b_, w2, x, l: gfn(
                w1, b_, w2, x, l))},
            "per_example": {"torch.compile": torch.compile(
                lambda w1, b_, w2, x, l: per(x, l, w1, b_, w2))},
            "classifier": classifier}


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
    """Bytes per second of the fastest device-to-device copy of 2**26 float32 (read + write)
    among the systems that have one (CuPy's `copy`, PyTorch's `clone`, ndflow's `tnp.copy`),
    and {system: bytes per second} of each. The first H200 run showed why one is not enough:
    CuPy's copy moved 1.7 TB/s where jax.jit's sigmoid moved 4.1, so a ratio to CuPy's copy
    alone flattered every kernel no faster than CuPy's."""
    n = 2 ** 26
    each = {}
    for s in systems:
        if "copy" in s:
            a = s["put"](np.ones(n, np.float32))
            each[s["name"]] = 2 * 4 * n / _timeit(lambda: s["copy"](a), s["sync"])
    if not each:
        return None, None, each
    best = max(each, key=each.get)
    return each[best], best, each


def run(quick=False, workloads=("sigmoid", "mlp_grad", "per_example", "classifier")):
    systems, errors = _systems()
    if not systems or systems[0]["name"] != "ndflow":
        raise SystemExit("ndflow has no GPU here: " + json.dumps(errors))
    bw, bw_by, copies = copy_bandwidth(systems)
    rows = []
    sizes = SIGMOID_SIZES[::3] + SIGMOID_SIZES[-1:] if quick else SIGMOID_SIZES
    for n in sizes if "sigmoid" in workloads else ():
        d = W.make_data(W.Case("sigmoid", str(n), str(n), {"n": n}))
        want = W.np_sigmoid(d["y"].astype(np.float64))
        for s in systems:
            y = s["put"](d["y"])
            for col, fn in s.get("sigmoid", {}).items():
                t = _time_row(rows, "sigmoid", n, col, lambda: fn(y), s["sync"])
                if t is not None:
                    rows[-1].update(bandwidth_ratio=(2 * 4 * n / t) / bw if bw else None,
                                    max_abs_err=_maxerr(fn(y), want))
    for batch in (512, 8192) if "mlp_grad" in workloads else ():
        rows += _grad_rows(systems, "mlp_grad", batch)
    for batch in (128, 1024) if "per_example" in workloads else ():
        rows += _grad_rows(systems, "per_example", batch)
    for batch in (32, 256, 8192) if "classifier" in workloads else ():
        rows += _classifier_rows(systems, batch)
    return {"device": systems[0]["device"], "copy_bandwidth_GBps": bw and bw / 1e9,
            "copy_measured_with": bw_by,
            "copies_GBps": {k: v / 1e9 for k, v in copies.items()}, "rows": rows, "missing": errors,
            "memory": systems[0]["memory"]()}


def _grad_rows(systems, workload, batch):
    key = "mlp_grad" if workload == "mlp_grad" else "per_example_grads"
    d = W.make_data(W.Case(key, str(batch), str(batch), {"batch": batch, "via": "vectorized_map"}))
    args_np = [d["w1"], d["b"], d["w2"], d["x"], d["labels"]]
    rows = []
    for s in systems:
        args = [s["put"](a) for a in args_np]
        for col, fn in s.get(workload, {}).items():
            _time_row(rows, workload, batch, col, lambda: fn(*args), s["sync"])
    return rows


def _classifier_rows(systems, batch):
    d = W.make_data(W.Case("classifier_step", str(batch), str(batch), {"batch": batch}))
    rows = []
    for s in systems:
        if "classifier" not in s:
            continue
        x, onehot = s["put"](d["x"]), s["put"](d["onehot"])
        for col, fn in s["classifier"](d).items():    # fresh parameters for each column
            _time_row(rows, "classifier", batch, col, lambda: fn(x, onehot), s["sync"])
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
    copies = ", ".join(f"{k} {v:.0f}" for k, v in res.get("copies_GBps", {}).items())
    lines = [f"GPU benchmarks on {res['device']} (copy bandwidth "
             f"{res['copy_bandwidth_GBps']:.0f} GB/s, the fastest of: {copies} GB/s)",
             "", "| workload | size | system | time | of copy bandwidth | max abs err |",
             "| --- | ---: | --- | ---: | ---: | ---: |"]
    for r in res["rows"]:
        t = r["seconds"]
        ts = (r.get("error", "failed") if t is None else
              f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.3f} ms")
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
    p.add_argument("--workloads", default="sigmoid,mlp_grad,per_example,classifier",
                   help="comma-separated subset (each is written to its own files)")
    a = p.parse_args(argv)
    wl = tuple(a.workloads.split(","))
    res = run(a.quick, wl)
    md = table(res)
    print(md)
    os.makedirs(a.out, exist_ok=True)
    tag = "" if len(wl) == 4 else "_" + "_".join(wl)
    with open(os.path.join(a.out, "gpu_bench%s.json" % tag), "w") as f:
        json.dump(res, f, indent=1, default=str)
    with open(os.path.join(a.out, "gpu_bench%s.md" % tag), "w") as f:
        f.write(md + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
