"""The benchmark's figures: drawn from saved results (--plot-only), PNG files that hold the
systems' data; skipped with a note when matplotlib is absent."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:         # benchmarks/ is not installed with the package
    sys.path.insert(0, ROOT)

from benchmarks import plots  # noqa: E402
from benchmarks.__main__ import main  # noqa: E402


def _runs():
    sizes = {"1": 1, "1024": 2**10, "32768": 2**15, "1048576": 2**20}
    runs = []
    for system, cols in (("numpy", {"numpy": 1.0}),
                         ("ndflow", {"ndflow": 2.0, "ndflow_fn": 0.5})):
        for w in ("sigmoid", "add"):
            res = {}
            for key, n in sizes.items():
                if w == "add" and n not in (1, 2**20):
                    continue
                res[key] = {c: f * (1e-6 + n * 1e-9) for c, f in cols.items()}
            runs.append({"system": system, "workload": w, "version": "x", "results": res,
                         "errors": {}, "setup_error": None})
    # a failed cell is left out, not drawn as zero
    runs[-1]["results"]["1"]["ndflow_fn"] = None
    return {"argv": [], "runs": runs}


def _runs_with_peer_and_contention():
    """_runs() plus a JAX run, versions, and probes: every measurement quiet except ndflow's
    nf.function on the sigmoid of 2**10 (its probe slowed by half meanwhile)."""
    data = _runs()
    data["runs"].append({"system": "jax", "workload": "sigmoid", "version": "jax 0.4.30",
                         "results": {k: {"jax_jit": 3e-6} for k in ("1", "1024", "32768",
                                                                     "1048576")},
                         "errors": {}, "setup_error": None})
    for r in data["runs"]:
        r["version"] = {"numpy": "numpy 2.4.0", "ndflow": "ndflow 0.1.0"}.get(r["system"],
                                                                             r["version"])
        r["probes"] = {f"{k}/{c}": [1.0, 1.0, 1.0, 1.0]
                       for k, cols in r["results"].items() for c in cols}
        if r["system"] == "ndflow" and r["workload"] == "sigmoid":
            r["probes"]["1024/ndflow_fn"] = [1.0, 1.5, 1.0, 1.0]
    data.update(date="2030-01-02 03:04 UTC", machine="x86_64 Test CPU, 2 CPUs",
                calibration=[1.0], drift=0.2, load=["1.0", "1.2"], systems=["numpy", "ndflow",
                                                                             "jax"])
    return data


def test_times_from_json():
    t = plots._times(_runs()["runs"])
    t0 = 1e-6 + 1024e-9
    assert t[("sigmoid", "1024")] == pytest.approx(
        {"numpy": t0, "ndflow": 2 * t0, "ndflow_fn": 0.5 * t0})
    assert "ndflow_fn" not in t[("add", "1")]


def test_plot_only_redraws_figures(tmp_path):
    pytest.importorskip("matplotlib")
    src = tmp_path / "results.json"
    src.write_text(json.dumps(_runs()))
    out = tmp_path / "figs"
    assert main(["--plot-only", str(src), "--out", str(out)]) == 0
    from matplotlib.image import imread
    for name in ("sigmoid.png", "comparison.png"):
        path = out / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        img = imread(str(path))
        assert img.shape[0] > 200 and img.shape[1] > 300
        assert img[..., :3].std() > 0.05          # not a blank image


def test_sigmoid_figure_has_a_line_per_system(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    drawn = []
    from matplotlib.axes import Axes
    orig = Axes.plot

    def spy(self, x, y, *a, **k):
        drawn.append((k.get("label"), list(x), list(y)))
        return orig(self, x, y, *a, **k)
    monkeypatch.setattr(Axes, "plot", spy)
    plots.plot_sigmoid(plots._times(_runs()["runs"]), tmp_path / "s.png")
    labels = [d[0] for d in drawn]
    assert labels == ["NumPy", "ndflow eager", "ndflow nf.function"]
    assert drawn[0][1] == [1, 2**10, 2**15, 2**20]
    assert drawn[2][2][0] == pytest.approx(0.5 * (1e-6 + 1e-9))


def test_without_matplotlib_a_note(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert plots.plot_results(_runs(), tmp_path) == []
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("no_progress", [False, True])
def test_benchmark_progress_bar(monkeypatch, tmp_path, capsys, no_progress):
    import benchmarks.__main__ as bm
    monkeypatch.setenv("NDFLOW_PROGRESS", "1")            # as on a terminal
    monkeypatch.setitem(sys.modules, "tqdm", None)         # the plain bar: predictable text
    runs = {(r["system"], r["workload"]): r for r in _runs()["runs"]}
    monkeypatch.setattr(bm, "run_subprocess", lambda s, names, args, python=None, **kw:
                        {w: runs[(s, w)] for w in names})
    argv = ["--systems", "numpy,ndflow", "--workloads", "sigmoid,add", "--no-plot",
            "--out", str(tmp_path)] + (["--no-progress"] if no_progress else [])
    assert main(argv) == 0
    err = capsys.readouterr().err
    if no_progress:
        assert "[bench]  numpy sigmoid,add ..." in err and "2/2 system" not in err
    else:
        assert "ndflow: 2/2 system" in err and "[bench]  numpy" not in err


def test_figures_mark_contended_measurements_and_name_the_peers(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes
    data = _runs_with_peer_and_contention()
    assert plots._contended(data) == {("sigmoid", "1024", "ndflow_fn")}
    legends, texts = [], []
    orig_legend = Axes.legend

    def spy(self, handles, labels, **k):
        legends.append(list(labels))
        return orig_legend(self, handles, labels, **k)
    monkeypatch.setattr(Axes, "legend", spy)
    drawn = []
    orig_plot = Axes.plot

    def plot_spy(self, x, y, *a, **k):
        drawn.append((list(x), list(y), k))
        return orig_plot(self, x, y, *a, **k)
    monkeypatch.setattr(Axes, "plot", plot_spy)
    out = plots.plot_results(data, tmp_path)
    assert sorted(os.path.basename(p) for p in out) == ["comparison.png", "sigmoid.png"]
    sig_labels, cmp_labels = legends
    assert sig_labels == ["NumPy", "ndflow eager", "ndflow nf.function", "jax.jit (jax 0.4.30)",
                          "contended measurement (hollow)"]
    # the one contended point is drawn again, hollow, over its line
    hollow = [d for d in drawn if d[2].get("markerfacecolor") == "white"]
    assert [(d[0], d[1]) for d in hollow] == [([2**10], [0.5 * (1e-6 + 2**10 * 1e-9)])]
    assert "jax.jit (jax 0.4.30)" in cmp_labels and cmp_labels[-1] == "contended measurement (hatched)"
    cap = plots.caption(data).replace("\n", " ")
    assert "measured 2030-01-02 03:04 UTC" in cap and "x86_64 Test CPU, 2 CPUs" in cap
    assert "peers shown: jax 0.4.30" in cap and "absent: TensorFlow, PyTorch" in cap


def test_comparison_hatches_a_ratio_with_a_contended_side(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes
    data = _runs_with_peer_and_contention()
    bars = []
    orig = Axes.bar

    def spy(self, x, h, *a, **k):
        out = orig(self, x, h, *a, **k)
        bars.append((k.get("label"), list(h), out))
        return out
    monkeypatch.setattr(Axes, "bar", spy)
    plots.plot_comparison(plots._times(data["runs"]), tmp_path / "c.png", data)
    by_label = {label: (h, [b.get_hatch() for b in container]) for label, h, container in bars}
    # the cases in order: add 1, add 2**20, sigmoid 1, 2**10, 2**15, 2**20
    heights, hatches = by_label["ndflow nf.function"]
    assert hatches == [None, None, None, "////", None, None]
    assert heights[3] == pytest.approx(0.5)
    assert by_label["ndflow eager"][1] == [None] * 6


def test_no_probes_nothing_marked(tmp_path):
    pytest.importorskip("matplotlib")
    assert plots._contended(_runs()) == set()
    assert "peers shown: none" in plots.caption(_runs())
