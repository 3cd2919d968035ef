"""Time one system on one workload, in this process, and print the result as JSON.

    python -m benchmarks.run_one SYSTEM WORKLOAD [--quick] [--repeat N] [--min-time S]

The last line of stdout is ``BENCH_JSON {...}`` with per-case, per-column median
seconds per call (``null`` where the column failed) and the error messages.
Anything else a framework prints goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback

from . import systems, workloads
from .timing import measure

MARKER = "BENCH_JSON "


def _short(exc: BaseException) -> str:
    msg = f"{type(exc).__name__}: {exc}".strip()
    first = msg.splitlines()[0] if msg else type(exc).__name__
    return first[:300]


def run(system: str, workload: str, quick: bool, repeat: int, min_time: float) -> dict:
    result = {"system": system, "workload": workload, "version": None,
              "results": {}, "errors": {}, "setup_error": None}
    mod = systems.impl(system)
    try:
        result["version"] = mod.setup()
    except BaseException as exc:  # noqa: BLE001 - report, never crash the table
        traceback.print_exc(file=sys.stderr)
        result["setup_error"] = _short(exc)
        return result

    for case in workloads.cases(workload, quick):
        data = workloads.make_data(case)
        ref = workloads.reference(case)
        row = result["results"].setdefault(case.key, {})
        for column in mod.COLUMNS:
            row[column] = None
            try:
                fn = mod.build(column, case, data)
                out = fn()  # warm-up: traces / compiles where the system does
                problem = workloads.check(out, ref)
                if problem:
                    raise AssertionError(problem)
                if case.repeat:         # one call per repeat (first-call times)
                    row[column] = measure(fn, repeat=min(case.repeat, repeat), min_time=0.0)
                else:
                    row[column] = measure(fn, repeat=repeat, min_time=min_time)
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, KeyboardInterrupt):
                    raise
                traceback.print_exc(file=sys.stderr)
                result["errors"][f"{case.key}/{column}"] = _short(exc)
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run_one")
    p.add_argument("system", choices=sorted(systems.SYSTEMS))
    p.add_argument("workload", choices=list(workloads.WORKLOADS))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=None)
    p.add_argument("--min-time", type=float, default=None)
    a = p.parse_args(argv)
    repeat = a.repeat or (3 if a.quick else 7)
    min_time = a.min_time if a.min_time is not None else (0.05 if a.quick else 0.2)

    # Keep stdout clean for the JSON line: library chatter goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        result = run(a.system, a.workload, a.quick, repeat, min_time)
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
