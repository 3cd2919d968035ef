"""Run the benchmark table:  python -m benchmarks [--quick] [--systems numpy,ndflow,tf,jax,torch]

The raw results go to benchmarks/results/results.json, and the figures (the sigmoid's time
against size, the comparison bars; matplotlib) to benchmarks/results/*.png.
``python -m benchmarks --plot-only benchmarks/results/results.json`` redraws the figures from
saved results without running anything.

Rows are workloads x sizes; columns are the median time per call for each system
(NumPy, ndflow eager, ndflow ``nf.function``, and TensorFlow, JAX and PyTorch when
installed), followed by the ratio of each column to NumPy.  Each system runs in its own
subprocess (``python -m benchmarks.run_one SYSTEM WORKLOAD``).  A system that fails
on a workload shows ``n/a``; the reasons are listed under the table.

Peers installed in another environment (a venv kept outside the repository) run there:
``--peer-python /path/to/venv/bin/python`` (or NDFLOW_PEER_PYTHON); NumPy and ndflow run
in this interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from . import systems, workloads
from .run_one import MARKER

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"

SHORT = {"numpy": "np", "ndflow": "nf eager", "ndflow_fn": "nf.function",
         "tf": "tf eager", "tf_fn": "tf.function", "jax_jit": "jax.jit",
         "torch_compile": "torch.compile"}


def fmt_time(t):
    if t is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if t >= scale or unit == "ns":
            v = t / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return "n/a"


def fmt_ratio(t, base):
    if t is None or base is None or base <= 0:
        return "n/a"
    r = t / base
    if r < 10:
        return f"{r:.2f}x"
    if r < 100:
        return f"{r:.1f}x"
    return f"{r:.0f}x"


def run_subprocess(system, workload, args, python=None) -> dict:
    cmd = [python or sys.executable, "-m", "benchmarks.run_one", system, workload]
    if args.quick:
        cmd.append("--quick")
    if args.repeat:
        cmd += ["--repeat", str(args.repeat)]
    if args.min_time is not None:
        cmd += ["--min-time", str(args.min_time)]
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.threads:
        n = str(args.threads)
        env.update(OMP_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, MKL_NUM_THREADS=n,
                   NDFLOW_BENCH_THREADS=n)
        if args.threads == 1:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
                                " intra_op_parallelism_threads=1").strip()
    fail = {"system": system, "workload": workload, "version": None,
            "results": {}, "errors": {}, "setup_error": None}
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        fail["setup_error"] = f"timed out after {args.timeout:.0f} s"
        return fail
    if args.verbose:
        sys.stderr.write(proc.stderr)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    fail["setup_error"] = f"subprocess exited with {proc.returncode}: {tail[:300]}"
    return fail


def render(table_rows, header):
    widths = [max(len(str(r[i])) for r in [header] + table_rows) for i in range(len(header))]
    left = 2  # workload and size are left-aligned, numbers right-aligned

    def line(cells):
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in table_rows]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repeats and sizes")
    p.add_argument("--systems", default=None,
                   help="comma-separated subset of: " + ",".join(systems.SYSTEMS)
                   + " (default: numpy, ndflow, and tf / jax when installed)")
    p.add_argument("--workloads", default=None,
                   help="comma-separated subset of: " + ",".join(workloads.WORKLOADS))
    p.add_argument("--repeat", type=int, default=None, help="repeats (default 7, quick 3)")
    p.add_argument("--min-time", type=float, default=None,
                   help="seconds per repeat, autoranged (default 0.2, quick 0.05)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per subprocess (default 900, quick 300)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write raw results here")
    p.add_argument("--plot-only", default=None, metavar="RESULTS.json",
                   help="draw the figures from saved results (a --json file) and exit")
    p.add_argument("--no-plot", action="store_true", help="draw no figures")
    p.add_argument("--out", default=str(RESULTS), metavar="DIR",
                   help="where results.json and the figures go (default: benchmarks/results)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it shows only on a terminal, on stderr)")
    p.add_argument("-v", "--verbose", action="store_true", help="show subprocess stderr (tracebacks of n/a cells)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for every system's kernels (BLAS, Eigen, OpenMP); default: each "
                        "library's own. On a loaded machine 1 avoids threads spinning on each other")
    p.add_argument("--peer-python", default=os.environ.get("NDFLOW_PEER_PYTHON"), metavar="PATH",
                   help="interpreter of an environment holding TensorFlow / JAX / PyTorch "
                        "(default: $NDFLOW_PEER_PYTHON)")
    args = p.parse_args(argv)
    if args.plot_only:
        from .plots import plot_results
        for path in plot_results(args.plot_only, args.out):
            print(f"[bench] wrote {path}", file=sys.stderr)
        return 0
    if args.timeout is None:
        args.timeout = 300.0 if args.quick else 900.0

    if args.systems:
        try:
            chosen = list(dict.fromkeys(systems.canonical(s) for s in args.systems.split(",")
                                        if s.strip()))
        except ValueError as exc:
            p.error(str(exc))
        chosen.sort(key=list(systems.SYSTEMS).index)
    else:
        chosen = [s for s in systems.SYSTEMS
                  if s not in systems.OPTIONAL or systems.installed(s)
                  or systems.installed(s, args.peer_python)]
    # a peer missing here but present in the peer environment runs there
    pythons = {s: args.peer_python if s in systems.OPTIONAL and args.peer_python
               and not systems.installed(s) else None for s in chosen}
    names = list(workloads.WORKLOADS)
    if args.workloads:
        names = [w.strip() for w in args.workloads.split(",") if w.strip()]
        bad = [w for w in names if w not in workloads.WORKLOADS]
        if bad:
            p.error(f"unknown workload(s) {bad}; choose from {', '.join(workloads.WORKLOADS)}")

    # --- run every (system, workload) pair in its own subprocess, one at a time
    results = {}
    t0 = time.perf_counter()
    from ndflow.utils.progress import progress, enabled
    show = enabled(disable=True if args.no_progress else None)
    with progress(total=len(names) * len(chosen), desc="bench", unit="run",
                  disable=not show) as bar:
        for w in names:
            for s in chosen:
                if show:
                    bar.set_description(f"{w} / {s}")
                else:
                    print(f"[bench] {s:>6} {w} ...", file=sys.stderr, flush=True)
                results[(s, w)] = run_subprocess(s, w, args, pythons[s])
                bar.update()
    elapsed = time.perf_counter() - t0

    # --- columns: times, then ratios to NumPy
    cols = [(s, c, h) for s in chosen for c, h in systems.columns(s).items()]
    have_numpy = "numpy" in chosen
    ratio_cols = [(s, c) for s, c, _ in cols if s != "numpy"] if have_numpy else []
    header = ["workload", "size"] + [h for _, _, h in cols] \
        + [f"{SHORT.get(c, c)}/np" for _, c in ratio_cols]

    rows = []
    notes = {}  # message -> list of where
    for w in names:
        for case in workloads.cases(w, args.quick):
            times = {}
            for s, c, _ in cols:
                r = results[(s, w)]
                times[c] = r["results"].get(case.key, {}).get(c)
                if times[c] is None:
                    msg = r["setup_error"] and f"{s}: {r['setup_error']}"
                    if not msg:
                        msg = r["errors"].get(f"{case.key}/{c}", "no result")
                        msg = f"{SHORT.get(c, c)}: {msg}"
                    notes.setdefault(msg, []).append(f"{w}[{case.label}]")
            base = times.get("numpy")
            rows.append([w, case.label] + [fmt_time(times[c]) for _, c, _ in cols]
                        + [fmt_ratio(times[c], base) for _, c in ratio_cols])

    versions = sorted({r["version"] for r in results.values() if r.get("version")})
    repeat = args.repeat or (3 if args.quick else 7)
    print(f"ndflow benchmarks: median time per call ({repeat} repeats"
          f"{', quick' if args.quick else ''}); python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs"
          f"{f', {args.threads} thread(s) per system' if args.threads else ''}; "
          f"{', '.join(versions) or 'no system ran'}")
    print()
    print(render(rows, header))
    print()
    if ratio_cols:
        print("x/np = time / NumPy time (below 1.00x is faster than NumPy).")
    if notes:
        print("n/a:")
        for msg, where in notes.items():
            if len(where) == len(rows):
                scope = "every row"
            elif len(where) > 3:
                scope = f"{len(where)} rows"
            else:
                scope = ", ".join(where)
            print(f"  - {msg}  ({scope})")
    print(f"total {elapsed:.0f} s")

    data = {"argv": sys.argv[1:] if argv is None else list(argv),
            "runs": list(results.values())}
    for path in [Path(args.out) / "results.json"] + ([Path(args.json)] if args.json else []):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1))
    if not args.no_plot:
        from .plots import plot_results
        for path in plot_results(data, args.out):
            print(f"[bench] wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
