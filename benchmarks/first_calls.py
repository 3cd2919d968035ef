"""Calls 1 to N of a compiled step against the same step run eagerly, each in a fresh process,
with a control that tells the background compile's effect apart from the machine's noise.

A compiled function must never make its caller wait: from its second call on it should be at
least as fast as eager code, also while kernels are being compiled in the background. For each
workload this runs, in fresh processes and interleaved (so that the machine's noise hits every
kind alike), `--repeat` times each of

    eager     the step itself (the reference: its per-call median over the repeats)
    tier0     `nf.function(step)` with tier 1 off (settings.numba 'off': no compile at all,
              the control: what tier 0 alone costs, and how far one process strays from
              another on this machine)
    compiled  `nf.function(step)` with tier 1 as configured (default 'background'), an
              empty kernel cache (a user's first run) or the cache left by a previous run
              (`--warm`); one such kind per `--tree` (an A/B of two source trees)

and reports, for each kind, every process's worst ratio to eager over a sliding window of 10
calls after the first (the median of the window's calls over the median of eager's same
calls), the median of those windows, and for the compiled kind the call after which tier 1
was asked for, its first kernel arrived and its last queued compile ended. Eager's own
processes are measured against the median of the other eager processes: their spread is the
noise floor. If the compiled kind's worst windows lie within the control's, the compile's
effect is below what this machine resolves.

    PYTHONPATH=. python -m benchmarks.first_calls [--calls 1000] [--repeat 4] [--warm]
        [--workloads a,b] [--numba background|sync] [--tree PATH ...] [--save FILE]
"""
import argparse
import copy
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
WINDOW = 10


def _child(name, calls, column, numba):
    """Time `calls` calls in this process; print the times and when tier 1 arrived (JSON)."""
    from benchmarks import workloads as W
    from benchmarks import impl_ndflow
    from ndflow.graph.kernels import numba_compile as nc
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
    times, asked, first, done = [], None, None, None
    clock, stats = time.perf_counter, nc.STATS
    for i in range(1, calls + 1):
        t = clock()
        f()
        times.append(clock() - t)
        # (read after the timed call: a few attribute reads, in every kind alike)
        made, pending = stats["compiles"], nc._pending
        if asked is None and (made or pending):
            asked = i
        if first is None and made:
            first = i
        if done is None and made and not pending:
            done = i
    print(json.dumps({"t": times, "asked": asked, "first": first, "done": done,
                      "compiles": stats["compiles"], "failures": len(stats["failures"])}))


def _run(a, env, name, kind, cache):
    """One fresh process of `kind` (label, column, tree, settings.numba): its record, or None
    (after saying why) if it failed."""
    label, column, tree, numba = kind
    if not a.warm:
        shutil.rmtree(os.path.join(cache, "kernels"), ignore_errors=True)
    # this file's child code runs against `tree`'s ndflow and workloads (its cwd is first on
    # sys.path), so an older tree is timed exactly as this one
    boot = ("import runpy, sys; sys.argv[0] = %r; runpy.run_path(%r, run_name='__main__')"
            % (__file__, __file__))
    cmd = [a.python, "-c", boot, "--child", name, "--calls", str(a.calls),
           "--column", column] + (["--numba", numba] if numba else [])
    r = subprocess.run(cmd, env=dict(env, PYTHONPATH=tree), capture_output=True, text=True,
                       cwd=tree)
    if r.returncode:
        print(name, label, "failed:", r.stderr[-2000:])
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def _windows(t, ref):
    """The ratios median(t[i:i+W]) / median(ref[i:i+W]) for every window after call 1."""
    view = np.lib.stride_tricks.sliding_window_view
    t, ref = np.asarray(t)[1:], np.asarray(ref)[1:]
    return np.median(view(t, WINDOW), axis=1) / np.median(view(ref, WINDOW), axis=1)


def _fmt(s):
    return "%.0f us" % (s * 1e6) if s < 1e-3 else "%.2f ms" % (s * 1e3)


def _arrival(recs):
    """'asked/first kernel/all done' at the median call over the processes (- for never)."""
    def med(key):
        got = [r[key] for r in recs if r[key] is not None]
        if not got:
            return "-"
        return "%d" % np.median(got) + ("" if len(got) == len(recs) else
                                         " (%d/%d)" % (len(got), len(recs)))
    return "tier 1 asked @%s, first kernel @%s, all @%s" % (med("asked"), med("first"),
                                                           med("done"))


def _during(res, label, n):
    """(first call, last call, median window of `label`'s processes while their compiles ran,
    tier0's median window over the same calls) or None if no compile was asked for."""
    recs = res[label]
    asked = [r["asked"] for r in recs if r["asked"] is not None]
    if not asked:
        return None
    lo = int(np.median(asked))
    hi = int(np.median([r["first"] or n for r in recs]))
    if hi - lo < WINDOW:
        return None
    # window i covers calls i+2 .. i+WINDOW+1
    span = slice(lo - 1, hi - WINDOW)
    return (lo + 1, hi, sorted(np.median(r["w"][span]) for r in recs),
            sorted(np.median(r["w"][span]) for r in res["tier0"]))


def _summary(name, res, labels):
    """Print the workload's table; return {label: [worst window of each process]}."""
    n = min(len(r["t"]) for recs in res.values() for r in recs)
    for recs in res.values():
        for r in recs:
            r["t"] = np.asarray(r["t"][:n])
    eager = [r["t"] for r in res["eager"]]
    ref = np.median(eager, axis=0)
    print("%s: eager median per call %s (calls 2-%d), call 1 %s" % (
        name, _fmt(np.median(ref[1:])), n, _fmt(np.median([e[0] for e in eager]))))
    worst = {}
    for label in labels:
        for k, r in enumerate(res[label]):
            if label == "eager":       # against the others: its spread is the noise floor
                r["w"] = _windows(r["t"], np.median(eager[:k] + eager[k + 1:], axis=0))
            else:
                r["w"] = _windows(r["t"], ref)
        worst[label] = sorted(r["w"].max() for r in res[label])
        print("  %-20s worst 10-call window %s  median window %.2f  call 1 %s" % (
            label, " ".join("%.2f" % x for x in worst[label]),
            np.median([np.median(r["w"]) for r in res[label]]),
            _fmt(np.median([r["t"][0] for r in res[label]]))))
    for label in labels[2:]:
        recs = res[label]
        after = sorted(r["w"][r["first"]:].max() for r in recs
                       if r["first"] and len(r["w"]) > r["first"])
        print("  %-20s %s; worst window after it %s" % (
            label, _arrival(recs), " ".join("%.2f" % x for x in after) or "-"))
        d = _during(res, label, n)
        if d is not None:
            lo, hi, mine, ctl = d
            print("  %-20s while compiling (calls %d-%d): median window %.2f (%s), tier0 %.2f "
                  "(%s) over the same calls: x%.2f" % (
                      "", lo, hi, np.median(mine), " ".join("%.2f" % x for x in mine),
                      np.median(ctl), " ".join("%.2f" % x for x in ctl),
                      np.median(mine) / np.median(ctl)))
        w, ctl = max(worst[label]), max(worst["tier0"])
        if not any(r["asked"] for r in recs):
            verdict = "no compile asked for in these calls: this kind ran tier 0 as the " \
                "control did, its difference from tier0's (%.2f) is the machine's" % ctl
        elif w <= ctl:
            verdict = "within tier0's spread (%s): the compile's effect on the worst window " \
                "is below this machine's resolution" % " ".join("%.2f" % x for x in
                                                              worst["tier0"])
        else:
            verdict = "above tier0's worst (%.2f) by x%.2f" % (ctl, w / ctl)
        print("  %-20s worst %.2f: %s" % ("", w, verdict))
    sys.stdout.flush()
    return worst


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--warm", action="store_true",
                   help="keep the kernel cache of a first run (one untimed run, compiling "
                        "in its own thread, fills it)")
    p.add_argument("--workloads", default=",".join(CASES))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--threads", type=int, default=1,
                   help="threads for BLAS and ndflow's kernels (default 1: on a busy machine "
                        "spinning BLAS threads would swamp what is measured)")
    p.add_argument("--numba", default=None,
                   help="settings.numba of the compiled kind (default: ndflow's default)")
    p.add_argument("--repeat", type=int, default=4,
                   help="fresh processes of each kind, interleaved")
    p.add_argument("--tree", action="append", default=None,
                   help="a source tree whose ndflow the compiled kind runs (repeatable: one "
                        "compiled kind per tree, interleaved; default this tree)")
    p.add_argument("--save", default=None,
                   help="write every process's record to this JSON file")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--column", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return _child(a.child, a.calls, a.column, a.numba)
    trees = [os.path.abspath(t) for t in (a.tree or [HERE])]
    kinds = [("eager", "ndflow", HERE, None), ("tier0", "ndflow_fn", HERE, "off")]
    kinds += [("compiled" + ("" if len(trees) == 1 else ":" + os.path.basename(t)),
               "ndflow_fn", t, a.numba) for t in trees]
    labels = [k[0] for k in kinds]
    worst, saved = {}, {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NDFLOW_CACHE_DIR=os.path.join(cache, "kernels"))
        # impl_ndflow.setup() sets ndflow's settings.threads from NDFLOW_BENCH_THREADS
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NDFLOW_BENCH_THREADS"):
            env[var] = str(a.threads)
        for name in a.workloads.split(","):
            res = {label: [] for label in labels}
            # (the fill compiles in the caller, settings.numba 'sync': in the background a
            # compile may not finish within the fill's calls, and the cache would stay empty)
            if a.warm and any(_run(a, env, name, k[:3] + ("sync",), cache) is None
                              for k in kinds[2:]):
                continue                                    # (filled the cache)
            failed = False
            for _ in range(a.repeat):
                for kind in kinds:
                    r = _run(a, env, name, kind, cache)
                    failed = failed or r is None
                    if r is not None:
                        res[kind[0]].append(r)
            if failed or a.repeat < 2:
                print(name, "skipped: needs --repeat >= 2 and every process to succeed")
                continue
            saved[name] = copy.deepcopy(res)
            worst[name] = _summary(name, res, labels)
    if a.save:
        with open(a.save, "w") as f:
            json.dump(saved, f)
    return worst


if __name__ == "__main__":
    main()
