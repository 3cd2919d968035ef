"""Time one system on one workload, in this process, and print the result as JSON.

    python -m benchmarks.run_one SYSTEM WORKLOAD[,WORKLOAD...] [--quick] [--repeat N]
                                 [--min-time S] [--cases KEY,...] [--columns COL,...]

For each workload, in turn, stdout gets a line ``BENCH_JSON {...}`` with per-case, per-column median
seconds per call (``null`` where the column failed), the error messages, and the contention
probe's time before and after each measurement (see :func:`benchmarks.timing.probe`).
Anything else a framework prints goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback

from . import systems, workloads
from .timing import measure, probe

MARKER = "BENCH_JSON "
DEFAULT_REPEAT, DEFAULT_REPEAT_QUICK = 5, 3
DEFAULT_MIN_TIME, DEFAULT_MIN_TIME_QUICK = 0.1, 0.05


def _short(exc: BaseException) -> str:
    msg = f"{type(exc).__name__}: {exc}".strip()
    first = msg.splitlines()[0] if msg else type(exc).__name__
    return first[:300]


_SETUP = {}


def run(system: str, workload: str, quick: bool, repeat: int, min_time: float,
        only_cases=None, only_columns=None) -> dict:
    result = {"system": system, "workload": workload, "version": None,
              "results": {}, "errors": {}, "setup_error": None, "probes": {},
              "not_applicable": []}
    mod = systems.impl(system)
    try:
        if system not in _SETUP:       # once per process: TF's thread settings are one-shot
            _SETUP[system] = mod.setup()
        result["version"] = _SETUP[system]
    except BaseException as exc:  # noqa: BLE001 - report, never crash the table
        traceback.print_exc(file=sys.stderr)
        result["setup_error"] = _short(exc)
        return result

    unchecked = getattr(mod, "UNCHECKED", ())
    for case in workloads.cases(workload, quick):
        if only_cases is not None and case.key not in only_cases:
            continue
        data = workloads.make_data(case)
        ref = workloads.reference(case)
        row = result["results"].setdefault(case.key, {})
        for column in mod.COLUMNS:
            if only_columns is not None and column not in only_columns:
                continue
            row[column] = None
            where = f"{case.key}/{column}"
            try:
                fn = mod.build(column, case, data)
                out = fn()  # warm-up: traces / compiles where the system does
                problem = None if column in unchecked else workloads.check(out, ref)
                if problem:
                    raise AssertionError(problem)
                before = probe()
                wall, cpu = time.perf_counter(), time.process_time()
                if case.repeat:         # one call per repeat (first-call times)
                    row[column] = measure(fn, repeat=min(case.repeat, repeat), min_time=0.0)
                else:
                    row[column] = measure(fn, repeat=repeat, min_time=min_time)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                # [probe before, probe after, wall s, CPU s of this process while measuring]
                result["probes"][where] = [before, probe(), wall, cpu]
                del fn, out
            except workloads.NotApplicable:
                result["not_applicable"].append(where)
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, KeyboardInterrupt):
                    raise
                traceback.print_exc(file=sys.stderr)
                result["errors"][where] = _short(exc)
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run_one")
    p.add_argument("system", choices=sorted(systems.SYSTEMS))
    p.add_argument("workload", help="a workload, or several, comma-separated: "
                   + ",".join(workloads.WORKLOADS))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=None)
    p.add_argument("--min-time", type=float, default=None)
    p.add_argument("--cases", default=None, help="comma-separated case keys (default: all)")
    p.add_argument("--columns", default=None, help="comma-separated columns (default: all)")
    a = p.parse_args(argv)
    repeat = a.repeat or (DEFAULT_REPEAT_QUICK if a.quick else DEFAULT_REPEAT)
    min_time = a.min_time if a.min_time is not None else (
        DEFAULT_MIN_TIME_QUICK if a.quick else DEFAULT_MIN_TIME)
    split = (lambda v: None if v is None else set(v.split(",")))

    names = a.workload.split(",")
    bad = [w for w in names if w not in workloads.WORKLOADS]
    if bad:
        p.error(f"unknown workload(s) {bad}")
    out = sys.stdout
    for w in names:
        # Keep stdout clean for the JSON lines: library chatter goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            result = run(a.system, w, a.quick, repeat, min_time, split(a.cases),
                         split(a.columns))
        out.write(MARKER + json.dumps(result) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
