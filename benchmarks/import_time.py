"""`import ndflow` against `import numpy`, in fresh processes, interleaved.

    python -m benchmarks.import_time [-n 21] [--tree PATH ...]

Each sample is one new interpreter that times its own import with ``perf_counter`` (the
interpreter's start-up, the same for both, is left out). Samples of NumPy and of every tree
alternate, so a change in the machine's load hits them alike; the medians and the ratio to
NumPy's median are printed. ``--tree`` names source trees to import ndflow from (default: this
checkout); several trees give a before/after comparison in one run. Byte-code caching is turned
on (an installed package has its .pyc files), and one untimed import per tree writes them first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = ("import time; t = time.perf_counter(); import {mod}; "
        "print(time.perf_counter() - t)")


def sample(mod: str, tree: str | None, python: str) -> float:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree:
        env["PYTHONPATH"] = tree
    out = subprocess.run([python, "-c", CODE.format(mod=mod)], env=env, cwd=tree or None,
                         capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def heavy_modules(tree: str, python: str) -> list[str]:
    """Packages that must not be loaded by `import ndflow`, found loaded after it."""
    heavy = ("numba", "llvmlite", "scipy", "cupy", "matplotlib", "onnx", "onnxruntime",
             "tensorboard", "dask", "distributed", "mpi4py", "tqdm", "opt_einsum", "sklearn",
             "pandas", "torch", "jax", "tensorflow")
    code = ("import sys, ndflow; print(' '.join(m for m in %r if m in sys.modules))" % (heavy,))
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([python, "-c", code], env=env, cwd=tree, capture_output=True,
                         text=True, check=True).stdout
    return out.split()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.import_time", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=21, help="fresh processes per module (default 21)")
    p.add_argument("--tree", action="append", default=None,
                   help="source tree holding ndflow/ (repeatable; default: this checkout)")
    p.add_argument("--python", default=sys.executable)
    a = p.parse_args(argv)
    trees = [str(Path(t).resolve()) for t in (a.tree or [ROOT])]
    for t in trees:                     # write the byte-code caches, untimed
        sample("ndflow", t, a.python)
    sample("numpy", None, a.python)
    times = {"numpy": []} | {t: [] for t in trees}
    for _ in range(a.n):
        times["numpy"].append(sample("numpy", None, a.python))
        for t in trees:
            times[t].append(sample("ndflow", t, a.python))
    base = statistics.median(times["numpy"])
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    print(f"median of {a.n} fresh processes each, interleaved; load average {load}")
    print(f"  import numpy                  {base * 1e3:7.1f} ms")
    for t in trees:
        m = statistics.median(times[t])
        heavy = heavy_modules(t, a.python)
        print(f"  import ndflow  {Path(t).name:<14} {m * 1e3:7.1f} ms  {m / base:.2f}x numpy"
              f"  (best {min(times[t]) * 1e3:.1f} ms; heavy modules loaded: "
              f"{', '.join(heavy) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
