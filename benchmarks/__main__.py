"""Run the benchmark table:  python -m benchmarks [--quick] [--systems numpy,ndflow,tf,jax,torch]

The raw results go to benchmarks/results/results.json, and the figures (the sigmoid's time
against size, the comparison bars; matplotlib) to benchmarks/results/*.png.
``python -m benchmarks --plot-only benchmarks/results/results.json`` redraws the figures from
saved results without running anything.

Printed: a table of times (rows: workloads x sizes; columns: the median time per call of
NumPy, ndflow eager, ndflow ``nf.function`` by default and with ``jit_compile=True``, and
TensorFlow eager / tf.function / XLA, jax.jit, PyTorch eager / torch.compile when installed);
one table of ratios (every column against NumPy, and both compiled ndflow columns against every
peer column); the sigmoid and the MLP gradient as scaling tables (time against size / batch);
the goals tables of the default mode and of ``jit_compile=True`` (met or not). Each system runs
in its own subprocess (``python -m benchmarks.run_one SYSTEM WORKLOAD``).  A system that fails on a
workload shows ``n/a``; the reasons are listed under the tables.

Contention: a fixed NumPy loop (the probe) is timed before and after every measurement, and the
measurement's CPU time is compared with its wall time. Where the probe drifts by more than 20%
(from itself or from the run's quietest probe), or the process got less than 1/1.2 of the CPU,
the measurement is rerun (``--reruns``), keeping an uncontended run (else the fastest); what
stays contended is marked ``~``.

Peers installed in another environment (a venv kept outside the repository) run there:
``--peer-python /path/to/venv/bin/python`` (or NDFLOW_PEER_PYTHON, or a venv at ../peers or
~/peers, found by itself); NumPy and ndflow run in this interpreter (or ``--python``).
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
from .run_one import (MARKER, DEFAULT_REPEAT, DEFAULT_REPEAT_QUICK, DEFAULT_MIN_TIME,
                      DEFAULT_MIN_TIME_QUICK)
from .timing import probe

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"

SHORT = {"numpy": "np", "numpy_copy": "copy", "ndflow": "nf eager", "ndflow_fn": "nf.function",
         "ndflow_jit": "nf jit",
         "tf": "tf eager", "tf_fn": "tf.function", "tf_xla": "tf XLA", "jax_jit": "jax.jit",
         "torch": "torch eager", "torch_compile": "torch.compile"}


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


def run_subprocess(system, names, args, python=None, cases=None, columns=None) -> dict:
    """Run `system` on the workloads `names` in one new process: {workload: its result}."""
    cmd = [python or sys.executable, "-m", "benchmarks.run_one", system, ",".join(names)]
    if args.quick:
        cmd.append("--quick")
    if args.repeat:
        cmd += ["--repeat", str(args.repeat)]
    if args.min_time is not None:
        cmd += ["--min-time", str(args.min_time)]
    if cases:
        cmd += ["--cases", ",".join(sorted(cases))]
    if columns:
        cmd += ["--columns", ",".join(sorted(columns))]
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.threads:
        n = str(args.threads)
        # ndflow's own threads (fused regions' chunks and loops: `impl_ndflow.setup` sets
        # them) too: with --threads 1 every system, ndflow included, computes on one thread
        env.update(OMP_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, MKL_NUM_THREADS=n,
                   NDFLOW_BENCH_THREADS=n)
        if args.threads == 1:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
                                " intra_op_parallelism_threads=1").strip()
    why = None
    cpus = pinned_cpus(args.threads)
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=args.timeout,
                              preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus
                              else None)
        stdout, stderr = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        why = f"timed out after {args.timeout:.0f} s"
        stdout, stderr = exc.stdout or "", exc.stderr or ""
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
    if args.verbose:
        sys.stderr.write(stderr)
    out = {}
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            r = json.loads(line[len(MARKER):])
            out[r["workload"]] = r
    if why is None:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        why = f"subprocess exited with {proc.returncode}: {tail[:300]}"
    for w in names:          # the workloads it never reached
        out.setdefault(w, {"system": system, "workload": w, "version": None, "results": {},
                           "errors": {}, "setup_error": why, "probes": {},
                           "not_applicable": []})
    return out


def pinned_cpus(threads):
    """The cores a system's process may run on under ``--threads N``: N of this process's own
    (Linux), else None. Thread settings alone do not hold every peer to N cores: XLA's CPU
    runtime still runs a 2^20 sigmoid, and the 256x784x128 product, on two threads under
    ``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`` (CPU time 1.75-1.85x
    wall here). Pinned, a column's CPU time is at most N times its wall time."""
    if not threads or not hasattr(os, "sched_setaffinity"):
        return None
    mine = sorted(os.sched_getaffinity(0))
    return set(mine[-threads:]) if len(mine) > threads else None


# ------------------------------------------------------------------ contention


def contention(probes, ref, drift):
    """How contended one measurement looks, from its probes ``[before, after, wall, cpu]``:
    the worst of the probes' drift from each other, their slowdown against the run's quietest
    probe ``ref``, and the share of wall time this process did not get the CPU. A measurement
    is flagged when this exceeds 1 + drift."""
    before, after, wall, cpu = probes
    score = max(max(before, after) / min(before, after), max(before, after) / ref)
    if wall > 0 and cpu > 0:
        score = max(score, min(wall / cpu, 10.0))
    return score


def _better(t, score, old_t, old_score, drift):
    """Whether a measurement (time, contention score) replaces another of the same cell: an
    unflagged one beats a flagged one; otherwise the faster wins (contention only adds time)."""
    if old_t is None:
        return True
    return (score > 1 + drift, t) < (old_score > 1 + drift, old_t)


def flagged_cells(results, ref, drift):
    """{(system, workload): {(case, column): score}} of the measurements to suspect."""
    out = {}
    for (s, w), r in results.items():
        for where, pr in (r.get("probes") or {}).items():
            score = contention(pr, ref, drift)
            if score > 1 + drift:
                case, col = where.split("/", 1)
                out.setdefault((s, w), {})[(case, col)] = score
    return out


def quietest_probe(results, calibration):
    vals = [min(p[0], p[1]) for r in results.values() for p in (r.get("probes") or {}).values()]
    return min(vals + list(calibration))


def rerun_flagged(results, args, pythons, calibration):
    """Rerun the flagged measurements, keeping for each cell an unflagged run if there is one,
    else the fastest, until none is flagged, ``--reruns`` rounds are done or ``--rerun-budget`` seconds spent."""
    t0, rounds = time.perf_counter(), 0
    for _ in range(args.reruns):
        ref = quietest_probe(results, calibration)
        flagged = flagged_cells(results, ref, args.drift)
        if not flagged:
            break
        rounds += 1
        for (s, w), cells in flagged.items():
            if time.perf_counter() - t0 > args.rerun_budget:
                return rounds
            print(f"[bench] rerun {s} {w}: {len(cells)} contended measurement(s)",
                  file=sys.stderr, flush=True)
            new = run_subprocess(s, [w], args, pythons[s], cases={c for c, _ in cells},
                                 columns={col for _, col in cells})[w]
            old = results[(s, w)]
            ref = quietest_probe(results, calibration)
            for (case, col), score in cells.items():
                where = f"{case}/{col}"
                pr = (new.get("probes") or {}).get(where)
                t = (new.get("results") or {}).get(case, {}).get(col)
                if pr is None or t is None:
                    continue
                if _better(t, contention(pr, ref, args.drift),
                           old["results"].get(case, {}).get(col), score, args.drift):
                    old["results"].setdefault(case, {})[col] = t
                    old["probes"][where] = pr
                    old["errors"].pop(where, None)
    return rounds


def merge_runs(datas):
    """One result from several runs of the benchmark: each measurement from a run where it was
    not flagged as contended (against the quietest probe of all the runs), the fastest of
    those, else the fastest of all."""
    if len(datas) == 1:
        return datas[0]
    ref = min(quietest_probe({(r["system"], r["workload"]): r for r in d["runs"]},
                             d.get("calibration") or [1.0]) for d in datas)
    drift = datas[0].get("drift", 0.2)
    merged = json.loads(json.dumps(datas[0]))
    runs = {(r["system"], r["workload"]): r for r in merged["runs"]}
    for d in datas[1:]:
        for r in d["runs"]:
            key = (r["system"], r["workload"])
            if key not in runs:
                runs[key] = r
                merged["runs"].append(r)
                continue
            old = runs[key]
            for case, cols in (r.get("results") or {}).items():
                for col, t in cols.items():
                    where = f"{case}/{col}"
                    pr = (r.get("probes") or {}).get(where)
                    if t is None or pr is None:
                        continue
                    opr = (old.get("probes") or {}).get(where)
                    ot = old["results"].get(case, {}).get(col)
                    if (ot is None or opr is None or _better(
                            t, contention(pr, ref, drift), ot, contention(opr, ref, drift),
                            drift)):
                        old["results"].setdefault(case, {})[col] = t
                        old.setdefault("probes", {})[where] = pr
                        old.get("errors", {}).pop(where, None)
            old["setup_error"] = old.get("setup_error") and r.get("setup_error")
    merged["calibration"] = [ref]
    merged["date"] = " + ".join(d.get("date", "?") for d in datas)
    merged["load"] = [" / ".join(str(d.get("load", ["?", "?"])[i]) for d in datas)
                      for i in (0, 1)]
    merged.pop("elapsed", None)
    for k in ("systems", "workloads"):
        merged[k] = list(dict.fromkeys(x for d in datas for x in d.get(k) or []))
    return merged


def default_peer_python():
    """An interpreter of a separate peers environment, if one is at a usual place:
    $NDFLOW_PEER_PYTHON, then ../peers and ~/peers next to this checkout."""
    env = os.environ.get("NDFLOW_PEER_PYTHON")
    if env:
        return env
    for d in (ROOT.parent / "peers", Path.home() / "peers"):
        py = d / "bin" / "python"
        if py.exists():
            return str(py)
    return None


def render(table_rows, header):
    widths = [max(len(str(r[i])) for r in [header] + table_rows) for i in range(len(header))]
    left = 2  # workload and size are left-aligned, numbers right-aligned

    def line(cells):
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in table_rows]
    return "\n".join(out)


def _load():
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="fewer repeats and sizes (the goals' sizes only; about 3 minutes)")
    p.add_argument("--systems", default=None,
                   help="comma-separated subset of: " + ",".join(systems.SYSTEMS)
                   + " (default: numpy, ndflow, and every peer installed here or in the "
                     "peer environment)")
    p.add_argument("--workloads", default=None,
                   help="comma-separated subset of: " + ",".join(workloads.WORKLOADS))
    p.add_argument("--repeat", type=int, default=None,
                   help=f"repeats (default {DEFAULT_REPEAT}, quick {DEFAULT_REPEAT_QUICK})")
    p.add_argument("--min-time", type=float, default=None,
                   help=f"seconds per repeat, autoranged (default {DEFAULT_MIN_TIME}, "
                        f"quick {DEFAULT_MIN_TIME_QUICK})")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per subprocess (default 600, quick 300)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write raw results here")
    p.add_argument("--plot-only", default=None, metavar="RESULTS.json",
                   help="draw the figures from saved results (a --json file) and exit")
    p.add_argument("--tables-only", nargs="+", default=None, metavar="RESULTS.json",
                   help="print the tables (and goals) of saved results and exit; with several "
                        "files, each measurement is the fastest of its uncontended runs (of all "
                        "its runs when every one was contended)")
    p.add_argument("--no-plot", action="store_true", help="draw no figures")
    p.add_argument("--out", default=str(RESULTS), metavar="DIR",
                   help="where results.json and the figures go (default: benchmarks/results)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it shows only on a terminal, on stderr)")
    p.add_argument("-v", "--verbose", action="store_true", help="show subprocess stderr (tracebacks of n/a cells)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for every system's kernels (BLAS, Eigen, OpenMP, ndflow's "
                        "settings.threads); default: each library's own (ndflow: the cores). On a "
                        "loaded machine 1 avoids threads spinning on each other")
    p.add_argument("--peer-python", "--peers-python", default=None, metavar="PATH",
                   help="interpreter of an environment holding TensorFlow / JAX / PyTorch "
                        "(default: $NDFLOW_PEER_PYTHON, else ../peers/bin/python or "
                        "~/peers/bin/python when present)")
    p.add_argument("--python", default=None, metavar="PATH",
                   help="interpreter for NumPy and ndflow (default: this one); e.g. a venv "
                        "holding only `pip install ndflow`, to check the default install")
    p.add_argument("--drift", type=float, default=0.2,
                   help="contention threshold: a measurement whose probe drifts by more than "
                        "this fraction is flagged and rerun (default 0.2)")
    p.add_argument("--reruns", type=int, default=2,
                   help="rounds of reruns of flagged measurements (default 2; 0: none)")
    p.add_argument("--rerun-budget", type=float, default=120.0, metavar="S",
                   help="seconds the reruns may take in all (default 120)")
    args = p.parse_args(argv)
    if args.plot_only:
        from .plots import plot_results
        for path in plot_results(args.plot_only, args.out):
            print(f"[bench] wrote {path}", file=sys.stderr)
        return 0
    if args.tables_only:
        print_report(merge_runs([json.loads(Path(f).read_text()) for f in args.tables_only]))
        return 0
    if args.timeout is None:
        args.timeout = 300.0 if args.quick else 600.0
    if args.peer_python is None:
        args.peer_python = default_peer_python()

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
    pythons = {s: (args.peer_python if s in systems.OPTIONAL and args.peer_python
                   and not systems.installed(s) else None) or
                  (args.python if s not in systems.OPTIONAL else None) for s in chosen}
    names = list(workloads.WORKLOADS)
    if args.workloads:
        names = [w.strip() for w in args.workloads.split(",") if w.strip()]
        bad = [w for w in names if w not in workloads.WORKLOADS]
        if bad:
            p.error(f"unknown workload(s) {bad}; choose from {', '.join(workloads.WORKLOADS)}")

    # --- every system in its own subprocess, one at a time, running every workload
    results = {}
    t0 = time.perf_counter()
    load_start = _load()
    calibration = [probe() for _ in range(3)]
    from ndflow.utils.progress import progress, enabled
    show = enabled(disable=True if args.no_progress else None)
    with progress(total=len(chosen), desc="bench", unit="system", disable=not show) as bar:
        for s in chosen:
            if show:
                bar.set_description(s)
            else:
                print(f"[bench] {s:>6} {','.join(names)} ...", file=sys.stderr, flush=True)
            for w, r in run_subprocess(s, names, args, pythons[s]).items():
                results[(s, w)] = r
            bar.update()
    rounds = rerun_flagged(results, args, pythons, calibration) if args.reruns else 0
    elapsed = time.perf_counter() - t0

    versions = sorted({r["version"] for r in results.values() if r.get("version")})
    repeat = args.repeat or (DEFAULT_REPEAT_QUICK if args.quick else DEFAULT_REPEAT)
    data = {"argv": sys.argv[1:] if argv is None else list(argv),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()} {_cpu_name()}, {os.cpu_count()} CPUs",
            "python": platform.python_version(), "versions": versions, "repeat": repeat,
            "quick": args.quick, "threads": args.threads, "drift": args.drift,
            "pinned": sorted(pinned_cpus(args.threads) or ()),
            "load": [load_start, _load()], "calibration": calibration,
            "rerun_rounds": rounds, "elapsed": elapsed, "systems": chosen, "workloads": names,
            "peer_python": args.peer_python, "runs": list(results.values())}
    print_report(data)
    for path in [Path(args.out) / "results.json"] + ([Path(args.json)] if args.json else []):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1))
    if not args.no_plot:
        from .plots import plot_results
        for path in plot_results(data, args.out):
            print(f"[bench] wrote {path}", file=sys.stderr)
    return 0


def _cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def print_report(data):
    """The tables of one run: times, ratios, scaling, goals, and what was contended."""
    from . import goals
    runs = {(r["system"], r["workload"]): r for r in data["runs"]}
    chosen = data.get("systems") or list(dict.fromkeys(s for s, _ in runs))
    names = data.get("workloads") or list(dict.fromkeys(w for _, w in runs))
    quick = data.get("quick", False)
    ref = quietest_probe(runs, data.get("calibration") or [1.0])
    drift = data.get("drift", 0.2)
    flagged = flagged_cells(runs, ref, drift)

    cols = [(s, c, h) for s in chosen for c, h in systems.columns(s).items()]
    main_cols = [x for x in cols if x[1] != "numpy_copy"]
    peer_cols = [(s, c, h) for s, c, h in main_cols if s in systems.OPTIONAL]
    notes = {}  # message -> list of where

    def cell(s, w, case, c):
        """(seconds or None, shown text)."""
        r = runs.get((s, w))
        if r is None:
            return None, "n/a"
        t = (r.get("results") or {}).get(case.key, {}).get(c)
        if t is None:
            if f"{case.key}/{c}" in (r.get("not_applicable") or ()):
                return None, "-"
            msg = r.get("setup_error") and f"{s}: {r['setup_error']}"
            if not msg:
                msg = f"{SHORT.get(c, c)}: " + r["errors"].get(f"{case.key}/{c}", "no result")
            notes.setdefault(msg, []).append(f"{w}[{case.label}]")
            return None, "n/a"
        mark = "~" if (case.key, c) in flagged.get((s, w), {}) else ""
        return t, fmt_time(t) + mark

    def all_cases(w):
        return workloads.cases(w, quick)

    def in_main(w, case):
        return w not in workloads.MAIN_CASES or case.key in workloads.MAIN_CASES[w]

    # --- 1. times
    header = ["workload", "size"] + [h for _, _, h in main_cols]
    rows, ratio_rows = [], []
    ratio_header = ["workload", "size"] + [f"{SHORT.get(c, c)}/np" for _, c, _ in main_cols
                                            if c != "numpy"]
    # each compiled ndflow column against every peer's (nf.fn: the default, nf.jit:
    # jit_compile=True)
    ours = [(c, tag) for c, tag in (("ndflow_fn", "nf.fn"), ("ndflow_jit", "nf.jit"))
            if any(c == x for _, x, _ in main_cols)]
    for _, tag in ours:
        ratio_header += [f"{tag}/{SHORT.get(c, c)}" for _, c, _ in peer_cols]
    for w in names:
        for case in all_cases(w):
            if not in_main(w, case):
                continue
            got = {c: cell(s, w, case, c) for s, c, _ in main_cols}
            rows.append([w, case.label] + [got[c][1] for _, c, _ in main_cols])
            base = got.get("numpy", (None,))[0]
            rr = [w, case.label] + [fmt_ratio(got[c][0], base) for _, c, _ in main_cols
                                    if c != "numpy"]
            for mine, _ in ours:
                rr += [fmt_ratio(got[mine][0], got[c][0]) for _, c, _ in peer_cols]
            ratio_rows.append(rr)

    threads = data.get("threads")
    print(f"ndflow benchmarks, {data.get('date', '?')}: median time per call "
          f"({data.get('repeat', '?')} repeats{', quick' if quick else ''}); "
          f"{data.get('machine', '?')}; python {data.get('python', '?')}"
          + (f", {threads} thread(s) per system" if threads else "")
          + (f" pinned to CPU {','.join(map(str, data['pinned']))}" if data.get("pinned")
             else "")
          + f"; {', '.join(data.get('versions') or []) or 'no system ran'}")
    print()
    print(render(rows, header))
    print()
    print("Ratios: x/np = time / NumPy's (below 1.00x: faster than NumPy); nf.fn/x = "
          "nf.function's time / peer column x's, nf.jit/x = nf.function(jit_compile=True)'s "
          "(below 1.00x: ndflow is faster).")
    print()
    print(render(ratio_rows, ratio_header))

    # --- 2. scaling tables
    for w, what in workloads.SCALING.items():
        if w not in names:
            continue
        sc_cols = [(s, c, h) for s, c, h in cols if (s, w) in runs
                   and (c != "numpy_copy" or w == "sigmoid")]
        sc_header = [what] + [h for _, _, h in sc_cols]
        extra = []            # (header, ndflow column, what it is divided by)
        for mine, tag in ours:
            if "numpy" in chosen:
                extra.append((f"{tag}/np", mine, "numpy"))
            if w == "sigmoid" and "numpy" in chosen:
                extra.append((f"{tag}/copy", mine, "numpy_copy"))
        if w == "mlp_grad" and "numpy" in chosen and "ndflow" in chosen:
            extra.append(("nf eager/np", "ndflow", "numpy"))
        for mine, tag in ours:
            if peer_cols:
                extra.append((f"{tag}/best peer", mine, "peers"))
        sc_header += [e[0] for e in extra]
        sc_rows = []
        for case in all_cases(w):
            got = {c: cell(s, w, case, c) for s, c, _ in sc_cols}
            row = [case.label] + [got[c][1] for _, c, _ in sc_cols]
            for _, mine, col in extra:
                t = got.get(mine, (None,))[0]
                if col == "peers":
                    best = [(got[c][0], c) for _, c, _ in peer_cols if got[c][0] is not None]
                    b = min(best) if best else (None, None)
                    row.append(fmt_ratio(t, b[0]) + (f" {SHORT.get(b[1], b[1])}" if b[1] else ""))
                else:
                    row.append(fmt_ratio(t, got.get(col, (None,))[0]))
            sc_rows.append(row)
        print()
        print(f"Scaling: {w} by {what}")
        print()
        print(render(sc_rows, sc_header))

    # --- 3. goals
    print()
    print("Goals, the default mode (NumPy's bits):")
    print()
    times = goals.times_of(data["runs"])
    print(goals.markdown(*goals.goals(times)))
    jit = goals.jit_goals(times)
    if jit[1]:
        print()
        print("Goals, jit_compile=True (within the documented accuracy bound):")
        print()
        print(goals.markdown(*jit))

    # --- 4. contention and failures
    n_cells = sum(len(r.get("probes") or {}) for r in runs.values())
    n_flag = sum(len(v) for v in flagged.values())
    print()
    load = data.get("load") or ["?", "?"]
    print(f"Contention: load average (1/5/15 min) {load[0]} at the start, {load[1]} at the end; "
          f"probe {ref * 1e3:.2f} ms at its quietest; {n_flag} of {n_cells} measurements still "
          f"flagged (~: probe drift or CPU starvation > {drift:.0%}) after "
          f"{data.get('rerun_rounds', 0)} round(s) of reruns.")
    if n_flag:
        worst = sorted(((sc, f"{s}:{w}[{k}/{c}]") for (s, w), cells in flagged.items()
                        for (k, c), sc in cells.items()), reverse=True)[:6]
        print("  most contended: " + ", ".join(f"{where} {sc:.2f}" for sc, where in worst))
    threads = data.get("threads")
    if threads:
        # pinning (`pinned_cpus`) caps this; without it a peer may ignore its thread settings
        wide = [f"{s}:{w}[{k}] {cpu / wall:.2f}" for (s, w), r in runs.items()
                for k, (_, _, wall, cpu) in (r.get("probes") or {}).items()
                if wall > 0 and cpu / wall > 1.15 * threads]
        if wide:
            print(f"  CPU time over {threads} core(s) of wall time (threads it was not to use): "
                  + ", ".join(wide[:8]) + (" ..." if len(wide) > 8 else ""))
    if notes:
        print("n/a:")
        for msg, where in notes.items():
            scope = f"{len(where)} rows" if len(where) > 3 else ", ".join(where)
            print(f"  - {msg}  ({scope})")
    if "elapsed" in data:
        print(f"total {data['elapsed']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
