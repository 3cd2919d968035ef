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
