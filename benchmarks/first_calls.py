"""Calls 1 to N of a compiled step against the same step run eagerly, in a fresh process.

A compiled function must never make its caller wait: from its second call on it should be at
least as fast as eager code, also while kernels are being compiled in the background. This
times every call of `nf.function(step)` in a new process, and every call of `step` itself in
another (a background compile in the compiled process must not slow the eager column down
too), with an empty kernel cache (a user's first run) or the cache left by a previous run
(`--warm`).

    PYTHONPATH=. python -m benchmarks.first_calls [--calls 1000] [--warm] [--workloads a,b]
        [--numba background|sync|off] [--repeat 3]

`--numba` sets `settings.numba` in the processes (an A/B of the modes in one session);
`--repeat` runs each pair of processes that many times, interleaved, and reports the median
of each call's times over the repeats (the machine may be shared: a single run is noisy).

For each workload it prints the first call of each, then the median per-call time of calls
2-10, 11-100 and 101-N, and the worst ratio compiled / eager of a sliding median over 10
calls after the first (1.00 or less: never slower after call 1).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = {
    "classifier_b32": ("classifier_step", "32"),
    "mlp_grad_b512": ("mlp_grad", "512"),
    "sigmoid_2^20": ("sigmoid", str(2**20)),
    "sigmoid_2^16": ("sigmoid", None),
}
BUCKETS = ((2, 10), (11, 100), (101, 1000), (1001, None))
WINDOW = 10


def _child(name, calls, column, numba):
    from benchmarks import workloads as W
    from benchmarks import impl_ndflow
    if numba:
        import ndflow
        ndflow.config.settings.numba = numba
    workload, key = CASES[name]
    if key is None:        # a size between the table's: 2**16 elements
        case = W.Case("sigmoid", str(2**16), "2**16", {"n": 2**16})
    else:
        case = next(c for c in W.WORKLOADS[workload] if c.key == key)
    d = W.make_data(case)
    impl_ndflow.setup()
    f = impl_ndflow._build(column, case, d)
    times = []
    clock = time.perf_counter
    for _ in range(calls):
        t = clock()
        f()
        times.append(clock() - t)
    print(json.dumps(times))


def _summary(name, te, tc):
    te, tc = np.asarray(te), np.asarray(tc)
    row = ["%-15s" % name, "call 1: eager %8s  compiled %8s" % (_fmt(te[0]), _fmt(tc[0]))]
    for lo, hi in BUCKETS:
        sl = slice(lo - 1, hi)
        if len(te[sl]):
            row.append("%d-%s: %s / %s" % (lo, hi or len(te), _fmt(np.median(te[sl])),
                                          _fmt(np.median(tc[sl]))))
    worst = max((np.median(tc[i:i + WINDOW]) / np.median(te[i:i + WINDOW])
                 for i in range(1, len(te) - WINDOW + 1)), default=float("nan"))
    row.append("worst compiled/eager after call 1: %.2f" % worst)
    return "  ".join(row), worst


def _fmt(s):
    return "%.0f us" % (s * 1e6) if s < 1e-3 else "%.2f ms" % (s * 1e3)


def _run(a, env, name, column, cache):
    """The per-call times of one fresh process, or None (after saying why) if it failed."""
    if not a.warm:
        shutil.rmtree(os.path.join(cache, "kernels"), ignore_errors=True)
    cmd = [a.python, "-m", "benchmarks.first_calls", "--child", name, "--calls", str(a.calls),
           "--column", column] + (["--numba", a.numba] if a.numba else [])
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=HERE)
    if r.returncode:
        print(name, column, "failed:", r.stderr[-2000:])
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--warm", action="store_true",
                   help="keep the kernel cache of a first run (one untimed run fills it)")
    p.add_argument("--workloads", default=",".join(CASES))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--threads", type=int, default=1,
                   help="threads for BLAS and ndflow's kernels (default 1: on a busy machine "
                        "spinning BLAS threads would swamp what is measured)")
    p.add_argument("--numba", default=None,
                   help="settings.numba in the processes (default: ndflow's default)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs of each process, interleaved; each call's median is reported")
    p.add_argument("--save", default=None,
                   help="write every process's per-call times to this JSON file")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--column", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return _child(a.child, a.calls, a.column, a.numba)
    worst, saved = {}, {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NDFLOW_CACHE_DIR=os.path.join(cache, "kernels"),
                   PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
        # impl_ndflow.setup() sets ndflow's settings.threads from NDFLOW_BENCH_THREADS
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NDFLOW_BENCH_THREADS"):
            env[var] = str(a.threads)
        for name in a.workloads.split(","):
            res = {"ndflow": [], "ndflow_fn": []}
            if a.warm and _run(a, env, name, "ndflow_fn", cache) is None:   # fills the cache
                continue
            for _ in range(a.repeat):
                for column in ("ndflow", "ndflow_fn"):
                    t = _run(a, env, name, column, cache)
                    if t is None:
                        break
                    res[column].append(t)
                else:
                    continue
                break
            else:
                saved[name] = res
                line, worst[name] = _summary(name, np.median(res["ndflow"], axis=0),
                                             np.median(res["ndflow_fn"], axis=0))
                print(line, flush=True)
    if a.save:
        with open(a.save, "w") as f:
            json.dump(saved, f)
    return worst


if __name__ == "__main__":
    main()
