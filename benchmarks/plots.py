"""Figures of the benchmark results (matplotlib, imported only here, only when drawing).

* ``sigmoid.png``: the TensorFlow NumPy guide's figure: time per call against input size,
  log-log, one line per system (NumPy, ndflow eager, ndflow ``nf.function``, and the peers
  that ran).
* ``comparison.png``: for every workload case, each system's time relative to NumPy
  (log scale; below 1 is faster than NumPy), as grouped bars.

Both name what they show: the legend gives each column its system's version, and a caption
under the axes gives the date, the machine, the peers shown and those absent. A measurement
the benchmark flagged as contended (its probe drifted or the process was starved of CPU, the
rule of ``python -m benchmarks``: the ``~`` of the tables) is drawn hollow (a point) or hatched
(a bar), so a reader does not take it for a quiet one.

Both are drawn from the JSON the benchmark writes (``{"runs": [...]}``, one run per system and
workload), so ``python -m benchmarks --plot-only benchmarks/results/results.json`` redraws
them without running anything.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from . import systems, workloads

# table column key -> legend text
LEGEND = {"numpy": "NumPy", "numpy_copy": "copy (memory floor)", "ndflow": "ndflow eager",
          "ndflow_fn": "ndflow nf.function",
          "ndflow_jit": "ndflow jit_compile=True", "tf": "TF eager", "tf_fn": "tf.function",
          "tf_xla": "tf XLA", "jax": "JAX", "jax_jit": "jax.jit", "torch": "torch eager",
          "torch_compile": "torch.compile"}
# the system each column belongs to (for its version), by the column key's prefix
_SYSTEM_OF = {"numpy": "numpy", "ndflow": "ndflow", "tf": "tf", "jax": "jax", "torch": "torch"}
PEER_NAMES = {"tf": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def _color(col):
    """One color per column in both figures (a stable one for a column LEGEND lacks)."""
    from matplotlib import colormaps
    keys = list(LEGEND)
    i = keys.index(col) if col in keys else len(keys) + sum(map(ord, col))
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


def _contended(data):
    """{(workload, case key, column)} of the measurements the benchmark flags as contended,
    by its own rule (benchmarks/__main__.py's flagged_cells against the run's quietest probe)."""
    # imported here: __main__ imports this module when it draws
    from .__main__ import flagged_cells, quietest_probe
    runs = {(r["system"], r["workload"]): r for r in data.get("runs", [])}
    if not any(r.get("probes") for r in runs.values()):
        return set()
    ref = quietest_probe(runs, data.get("calibration") or [1.0])
    flagged = flagged_cells(runs, ref, data.get("drift", 0.2))
    return {(w, case, col) for (_, w), cells in flagged.items() for case, col in cells}


def _versions(data):
    """{system: "name version"} of the systems that ran (their setup reported a version)."""
    return {r["system"]: r["version"] for r in data.get("runs", []) if r.get("version")}


def _label(col, versions):
    """Legend text of a column: what it is, and the version of the system that ran it."""
    name = LEGEND.get(col, col)
    system = next((s for p, s in _SYSTEM_OF.items() if col.startswith(p)), None)
    v = versions.get(system)
    return f"{name} ({v})" if v and system not in ("numpy", "ndflow") else name


def caption(data, width=150):
    """The line under a figure (wrapped at `width` characters): when and where it was
    measured, which peers it shows and which it does not (not installed, or not asked for),
    and the load."""
    versions = _versions(data)
    shown = [versions[s] for s in systems.OPTIONAL if s in versions]
    absent = [PEER_NAMES[s] for s in systems.OPTIONAL if s not in versions]
    parts = [f"measured {data.get('date', '?')}" + (" (quick)" if data.get("quick") else ""),
             str(data.get("machine", "?")),
             " / ".join(versions[s] for s in ("numpy", "ndflow") if s in versions) or "?",
             "peers shown: " + (", ".join(shown) or "none"),
             "absent: " + (", ".join(absent) or "none")]
    load = data.get("load")
    if load:
        parts.append(f"load average {load[0]} at start, {load[1]} at end")
    return textwrap.fill("; ".join(parts), width)


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


def _finish(fig, ax, data, contended_mark, path, **legend):
    """Legend (with an entry for the contended marking when one is drawn: "point" or "bar"),
    the caption under the axes, save."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles, labels = ax.get_legend_handles_labels()
    if contended_mark == "point":
        handles.append(Line2D([], [], marker="o", linestyle="", markerfacecolor="white",
                              markeredgecolor="black"))
        labels.append("contended measurement (hollow)")
    elif contended_mark == "bar":
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="////"))
        labels.append("contended measurement (hatched)")
    ax.legend(handles, labels, fontsize=8, **legend)
    # about 16 characters of 7-point text per inch of width
    text = caption(data, int(fig.get_figwidth() * 16))
    fig.text(0.01, 0.01, text, fontsize=7, va="bottom", color="dimgray")
    fig.tight_layout(rect=(0, 0.035 * (text.count("\n") + 1) + 0.01, 1, 1))
    fig.savefig(path)
    return str(path)


def plot_sigmoid(times, path, data=None):
    """Time per call against size for the sigmoid workload, one line per system."""
    data = data or {}
    cases = _cases()
    contended = _contended(data)
    versions = _versions(data)
    rows = sorted(((cases[k].params["n"], k[1], v) for k, v in times.items()
                   if k[0] == "sigmoid" and k in cases), key=lambda t: t[0])
    if len(rows) < 2:
        return None
    fig = _figure(8, 5)
    ax = fig.add_subplot(1, 1, 1)
    drawn_contended = False
    for col in _column_order({i: v for i, (_, _, v) in enumerate(rows)}):
        pts = [(n, v[col], ("sigmoid", key, col) in contended) for n, key, v in rows if col in v]
        if not pts:
            continue
        color = _color(col)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color,
                label=_label(col, versions))
        hollow = [p for p in pts if p[2]]
        if hollow:
            drawn_contended = True
            ax.plot([p[0] for p in hollow], [p[1] for p in hollow], marker="o", linestyle="",
                    markerfacecolor="white", markeredgecolor=color, markersize=7, zorder=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("input size (float32 elements)")
    ax.set_ylabel("time per call (s, median of the repeats)")
    ax.set_title("sigmoid 1 / (1 + exp(-y)): time per call against size")
    ax.grid(True, which="major", alpha=0.3)
    return _finish(fig, ax, data, "point" if drawn_contended else None, path)


def plot_comparison(times, path, data=None):
    """Each system's time / NumPy's for every case NumPy ran, as grouped bars (log scale)."""
    import numpy as np
    data = data or {}
    cases = _cases()
    contended = _contended(data)
    versions = _versions(data)
    keys = [k for k in times if "numpy" in times[k]]
    keys.sort(key=lambda k: (list(workloads.WORKLOADS).index(k[0])
                             if k[0] in workloads.WORKLOADS else 99,
                             cases[k].params.get("n", 0) if k in cases else 0))
    cols = [c for c in _column_order(times) if c not in ("numpy", "numpy_copy")]
    if not keys or not cols:
        return None
    fig = _figure(max(8.0, 0.55 * len(keys) * max(1, len(cols)) / 2 + 2), 5.5)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / len(cols)
    x = np.arange(len(keys))
    drawn_contended = False
    for j, col in enumerate(cols):
        ratios = [times[k][col] / times[k]["numpy"] if col in times[k] else np.nan for k in keys]
        bars = ax.bar(x + (j - (len(cols) - 1) / 2) * width, ratios, width,
                      label=_label(col, versions), color=_color(col))
        for k, bar in zip(keys, bars):
            # a ratio is as doubtful as either of its two measurements
            if (k[0], k[1], col) in contended or (k[0], k[1], "numpy") in contended:
                bar.set_hatch("////")
                bar.set_edgecolor(_color(col))
                bar.set_facecolor((1.0, 1.0, 1.0, 0.0))
                drawn_contended = True
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(["%s %s" % (w, cases[(w, key)].label if (w, key) in cases else key)
                        for w, key in keys], rotation=45, ha="right", fontsize=7)
    ax.set_xlabel("workload and size")
    ax.set_ylabel("time / NumPy's time (below 1: faster)")
    ax.set_title("Time relative to NumPy, per workload: ndflow and the peers shown")
    return _finish(fig, ax, data, "bar" if drawn_contended else None, path,
                   loc="upper left", bbox_to_anchor=(1.01, 1.0))


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
    written = [plot_sigmoid(times, outdir / "sigmoid.png", data),
               plot_comparison(times, outdir / "comparison.png", data)]
    return [p for p in written if p]
