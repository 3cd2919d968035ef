"""Figures of the benchmark results (matplotlib, imported only here, only when drawing).

* ``sigmoid.png``: the TensorFlow NumPy guide's figure: time per call against input size,
  log-log, one line per system (NumPy, ndflow eager, ndflow ``nf.function``, and the peers
  that ran).
* ``comparison.png``: for every workload case, each system's time relative to NumPy
  (log scale; below 1 is faster than NumPy), as grouped bars.

Both are drawn from the JSON the benchmark writes (``{"runs": [...]}``, one run per system and
workload), so ``python -m benchmarks --plot-only benchmarks/results/results.json`` redraws
them without running anything.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import workloads

# table column key -> legend text
LEGEND = {"numpy": "NumPy", "numpy_copy": "copy (memory floor)", "ndflow": "ndflow eager",
          "ndflow_fn": "ndflow nf.function", "tf": "TF eager", "tf_fn": "tf.function",
          "tf_xla": "tf XLA", "jax": "JAX", "jax_jit": "jax.jit", "torch": "torch eager",
          "torch_compile": "torch.compile"}


def _color(col):
    """One color per column in both figures."""
    from matplotlib import colormaps
    keys = list(LEGEND)
    i = keys.index(col) if col in keys else len(keys) + hash(col) % 10
    return colormaps["tab10"](i % 10)


def _times(runs):
    """{(workload, case key): {column: seconds}} from the JSON runs (failed cells left out)."""
    out = {}
    for r in runs:
        for key, cols in (r.get("results") or {}).items():
            for col, t in cols.items():
                if t is not None:
                    out.setdefault((r["workload"], key), {})[col] = t
    return out


def _cases():
    """(workload, case key) -> Case, quick and full cases alike."""
    return {(w, c.key): c for w, cs in workloads.WORKLOADS.items() for c in cs}


def _column_order(times):
    order = list(LEGEND)
    cols = {c for row in times.values() for c in row}
    return [c for c in order if c in cols] + sorted(cols - set(order))


def _figure(width, height):
    # a Figure with its own Agg canvas: no pyplot, no global backend switch
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def plot_sigmoid(times, path):
    """Time per call against size for the sigmoid workload, one line per system."""
    cases = _cases()
    rows = sorted(((cases[k].params["n"], v) for k, v in times.items()
                   if k[0] == "sigmoid" and k in cases), key=lambda t: t[0])
    if len(rows) < 2:
        return None
    fig = _figure(7, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    for col in _column_order({i: v for i, (_, v) in enumerate(rows)}):
        pts = [(n, v[col]) for n, v in rows if col in v]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=LEGEND.get(col, col), color=_color(col))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("size of the input")
    ax.set_ylabel("time per call (s)")
    ax.set_title("sigmoid: 1 / (1 + exp(-y))")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    return str(path)


def plot_comparison(times, path):
    """Each system's time / NumPy's for every case NumPy ran, as grouped bars (log scale)."""
    import numpy as np
    cases = _cases()
    keys = [k for k in times if "numpy" in times[k]]
    keys.sort(key=lambda k: (list(workloads.WORKLOADS).index(k[0])
                             if k[0] in workloads.WORKLOADS else 99,
                             cases[k].params.get("n", 0) if k in cases else 0))
    cols = [c for c in _column_order(times) if c not in ("numpy", "numpy_copy")]
    if not keys or not cols:
        return None
    fig = _figure(max(7.0, 0.55 * len(keys) * max(1, len(cols)) / 2 + 2), 5)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / len(cols)
    x = np.arange(len(keys))
    for j, col in enumerate(cols):
        ratios = [times[k][col] / times[k]["numpy"] if col in times[k] else np.nan for k in keys]
        ax.bar(x + (j - (len(cols) - 1) / 2) * width, ratios, width, label=LEGEND.get(col, col),
               color=_color(col))
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(["%s %s" % (w, cases[(w, key)].label if (w, key) in cases else key)
                        for w, key in keys], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("time / NumPy time (below 1: faster)")
    ax.set_title("ndflow and peers against NumPy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return str(path)


def plot_results(data, outdir):
    """Draw the figures for benchmark results `data` (the JSON's dict, or a path to it) into
    `outdir`. Returns the paths written; an empty list, with a note on stderr, when matplotlib
    is not installed."""
    import sys
    if not isinstance(data, dict):
        data = json.loads(Path(data).read_text())
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("[bench] matplotlib is not installed: no figures (pip install matplotlib)",
              file=sys.stderr)
        return []
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    times = _times(data.get("runs", []))
    written = [plot_sigmoid(times, outdir / "sigmoid.png"),
               plot_comparison(times, outdir / "comparison.png")]
    return [p for p in written if p]
