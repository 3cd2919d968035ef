"""Data-parallel scaling of ndflow training on MPI: measured here, modelled for clusters.

    python -m benchmarks.distribute_scaling                 # 1 and 2 ranks, then the model
    python -m benchmarks.distribute_scaling --ranks 1,2,4 --steps 200 --json out.json

For each rank count it launches `mpiexec -n R python -m benchmarks.distribute_scaling --worker`,
which trains two models with `MultiWorkerMirroredStrategy` and a compiled step (SGD), the
per-worker batch fixed (weak scaling, the usual way data parallelism grows):

- `mlp`: the `mlp_grad` workload, 32 -> 64 (relu) -> 2, squared error, batch 512 per worker
  (2,242 parameters: 9 KB of float32 gradients per step);
- `classifier`: the digits classifier, 784 -> 128 (relu) -> 10, softmax cross-entropy, batch
  256 per worker (101,770 parameters: 407 KB per step).

It reports the median step time, throughput (examples/s over all workers), the time per step
spent in the gradient all-reduce (including waiting for the slowest worker) and the time of the
same all-reduce alone (workers synchronized first), and fits a latency + bytes/bandwidth model
to all-reduces of 8 B .. 4 MB. The model then predicts steps on p machines:

    t_step(p) = t_compute + t_allreduce(p, n),   t_allreduce = 2 (p-1) a + 2 (p-1)/p * n * b

(a ring all-reduce: 2(p-1) messages of n/p bytes each way; a = per-message latency, b =
seconds per byte; the compute time per worker stays constant under weak scaling; ndflow does
not overlap the all-reduce with the backward pass, so the two add). Network parameters for
machines come from two typical interconnects (10 Gb Ethernet with TCP MPI, 100 Gb InfiniBand);
the ones measured here are shared memory between two processes of one machine.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

NETWORKS = {
    # name: (latency a in s, bandwidth in bytes/s)
    "10GbE (TCP)": (25e-6, 1.1e9),
    "100Gb InfiniBand": (2e-6, 11e9),
}
MODELS = {"mlp": dict(sizes=(32, 64, 2), batch=512, loss="mse", lr=0.01),
          "classifier": dict(sizes=(784, 128, 10), batch=256, loss="xent", lr=0.1)}


# ------------------------------------------------------------------ one worker
def _worker(args):
    import ndflow as nf
    import ndflow.numpy as tnp
    from ndflow.graph.kernels import wait_for_compiles
    strategy = nf.distribute.MultiWorkerMirroredStrategy()
    group = strategy._group_mpi
    rank, size = group.rank, group.size
    out = {"ranks": size, "models": {}}
    for name, cfg in MODELS.items():
        d_in, d_h, d_out = cfg["sizes"]
        b = cfg["batch"]
        rng = np.random.default_rng(0)
        with strategy.scope():
            w1 = nf.Variable((rng.standard_normal((d_in, d_h)) / np.sqrt(d_in)).astype(np.float32))
            b1 = nf.Variable(np.zeros(d_h, np.float32))
            w2 = nf.Variable((rng.standard_normal((d_h, d_out)) / np.sqrt(d_h)).astype(np.float32))
            b2 = nf.Variable(np.zeros(d_out, np.float32))
            opt = nf.optimizers.SGD(cfg["lr"])
        params = [w1, b1, w2, b2]
        n_global = b * size

        def step(x, y, cfg=cfg, params=params, opt=opt, n_global=n_global):
            w1, b1, w2, b2 = params
            with nf.GradientTape() as tape:
                out = tnp.maximum(x @ w1 + b1, 0) @ w2 + b2
                if cfg["loss"] == "mse":
                    per = tnp.sum(tnp.square(out - y), axis=-1)
                else:
                    per = -tnp.sum(y * nf.nn.log_softmax(out), axis=-1)
                loss = nf.distribute.compute_average_loss(per, global_batch_size=n_global)
            grads = tape.gradient(loss, params)
            opt.apply_gradients(zip(grads, params))
            return loss

        fstep = nf.function(step)
        drng = np.random.default_rng(1 + rank)
        x = tnp.asarray(drng.uniform(0, 1, (b, d_in)).astype(np.float32))
        y = tnp.asarray(np.eye(d_out, dtype=np.float32)[drng.integers(0, d_out, b)])
        for _ in range(args.warmup):
            strategy.run(fstep, args=(x, y))
        # numba compiles fused kernels in a background thread after a few calls; while one
        # runs it holds the GIL and every all-reduce poll of this worker waits for it
        wait_for_compiles()
        for _ in range(3):
            strategy.run(fstep, args=(x, y))
        nbytes = sum(int(np.prod(p.shape)) * 4 for p in params)
        times, ar = [], []
        for _ in range(args.steps):
            s0 = dict(group.stats)
            t0 = time.perf_counter()
            strategy.run(fstep, args=(x, y))
            times.append(time.perf_counter() - t0)
            ar.append(group.stats["seconds"] - s0["seconds"])
        # the same all-reduce alone: workers synchronized first, so no waiting is counted
        alone = []
        bufs = [np.zeros(p.shape, np.float32) for p in params]
        for _ in range(args.steps):
            group.barrier()
            t0 = time.perf_counter()
            group.all_reduce_sum(bufs)
            alone.append(time.perf_counter() - t0)
        out["models"][name] = {
            "params": int(nbytes // 4), "bytes": nbytes, "batch_per_worker": b,
            "step_s": float(np.median(times)), "allreduce_in_step_s": float(np.median(ar)),
            "allreduce_alone_s": float(np.median(alone)),
            "examples_per_s": float(b * size / np.median(times))}
    # latency and bandwidth: all-reduces of 8 B .. 4 MB
    sweep = []
    for n in [2, 16, 128, 1024, 8192, 65536, 262144, 1048576]:
        buf = np.ones(n, np.float32)
        reps = 50 if n <= 65536 else 10
        ts = []
        for _ in range(reps):
            group.barrier()
            t0 = time.perf_counter()
            group.all_reduce_sum([buf])
            ts.append(time.perf_counter() - t0)
        sweep.append((n * 4, float(np.median(ts))))
    out["sweep"] = sweep
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(out, f)


# ------------------------------------------------------------------ the launcher
def _fit(sweep, ranks):
    """a (latency) and b (s/byte) of t = k_lat * a + k_bw * n * b for the ring all-reduce on
    `ranks` workers, by least squares on the sweep."""
    p = ranks
    k_lat, k_bw = 2 * (p - 1), 2 * (p - 1) / p
    A = np.array([[k_lat, k_bw * n] for n, _ in sweep])
    t = np.array([s for _, s in sweep])
    (a, b), *_ = np.linalg.lstsq(A, t, rcond=None)
    return max(a, 0.0), max(b, 0.0)


def ring_allreduce_s(p, nbytes, a, bw):
    if p == 1:
        return 0.0
    return 2 * (p - 1) * a + 2 * (p - 1) / p * nbytes / bw


def _fmt(s):
    return "%.0f us" % (s * 1e6) if s < 1e-3 else "%.2f ms" % (s * 1e3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", default=None, help="save all results here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args)
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                           + os.environ.get("PATH", ""))
    if mpiexec is None:
        raise SystemExit("needs mpiexec: pip install 'ndflow[mpi]'")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    results = {}
    import tempfile
    for r in [int(v) for v in args.ranks.split(",")]:
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run([mpiexec, "-n", str(r), sys.executable, "-m",
                            "benchmarks.distribute_scaling", "--worker", "--out", f.name,
                            "--steps", str(args.steps), "--warmup", str(args.warmup)],
                           check=True, env=env, cwd=root)
            results[r] = json.load(open(f.name))
    print("measured (one thread per rank, per-worker batch fixed):")
    print("%-11s %5s %10s %13s %14s %12s %10s" % ("model", "ranks", "step", "examples/s",
                                                   "all-reduce", "(alone)", "share"))
    for name in MODELS:
        for r, res in results.items():
            m = res["models"][name]
            print("%-11s %5d %10s %13.0f %14s %12s %9.0f%%" % (
                name, r, _fmt(m["step_s"]), m["examples_per_s"],
                _fmt(m["allreduce_in_step_s"]), _fmt(m["allreduce_alone_s"]),
                100 * m["allreduce_in_step_s"] / m["step_s"]))
    multi = [r for r in results if r > 1]
    model = {}
    if multi:
        r = max(multi)
        a, b = _fit(results[r]["sweep"], r)
        print("\nall-reduce on %d ranks here (shared memory): latency %.1f us, bandwidth %.2f GB/s"
              % (r, a * 1e6, (1 / b if b else float("inf")) / 1e9))
        print("  sizes:", ", ".join("%d B %s" % (n, _fmt(t)) for n, t in results[r]["sweep"]))
        model["here"] = {"latency_s": a, "bandwidth_Bps": 1 / b if b else None}
    one = results.get(1)
    if one:
        print("\nmodel: weak scaling to p machines, t_step = t_compute (1 rank here) + ring "
              "all-reduce; efficiency = t_compute / t_step")
        ps = [8, 16, 32, 64]
        print("%-11s %-18s " % ("model", "network") + " ".join("%16s" % ("p=%d" % p) for p in ps))
        model["predictions"] = {}
        for name in MODELS:
            m = one["models"][name]
            comp = m["step_s"]
            for net, (lat, bw) in NETWORKS.items():
                cells, pred = [], {}
                for p in ps:
                    t = comp + ring_allreduce_s(p, m["bytes"], lat, bw)
                    pred[p] = {"step_s": t, "efficiency": comp / t,
                               "examples_per_s": p * m["batch_per_worker"] / t}
                    cells.append("%s %3.0f%%" % (_fmt(t), 100 * comp / t))
                model["predictions"]["%s / %s" % (name, net)] = pred
                print("%-11s %-18s " % (name, net) + " ".join("%16s" % c for c in cells))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"measured": results, "model": model, "networks": NETWORKS}, f, indent=1)


if __name__ == "__main__":
    main()
