"""The benchmark's report: the contention probe's flags and reruns, and the goals table, from
synthetic results (nothing is timed here)."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:         # benchmarks/ is not installed with the package
    sys.path.insert(0, ROOT)

import benchmarks.__main__ as bm  # noqa: E402
from benchmarks import goals  # noqa: E402


def test_contention_score():
    quiet = [1e-3, 1e-3, 0.5, 0.5]
    assert bm.contention(quiet, 1e-3, 0.2) == 1.0
    assert bm.contention([1e-3, 1.3e-3, 0.5, 0.5], 1e-3, 0.2) > 1.2     # drift during the case
    assert bm.contention([1.3e-3, 1.3e-3, 0.5, 0.5], 1e-3, 0.2) > 1.2   # slower than the quietest
    assert bm.contention([1e-3, 1e-3, 0.5, 0.25], 1e-3, 0.2) == 2.0    # half the CPU
    assert bm.contention([1e-3, 1e-3, 0.5, 1.0], 1e-3, 0.2) == 1.0     # two threads: fine


def _run(system, workload, times, probes):
    return {"system": system, "workload": workload, "version": "x", "setup_error": None,
            "errors": {}, "not_applicable": [],
            "results": {k: dict(v) for k, v in times.items()},
            "probes": {k: list(v) for k, v in probes.items()}}


class _Args:
    quick, repeat, min_time, threads, verbose, timeout = False, None, None, None, False, 60
    reruns, rerun_budget, drift = 2, 60.0, 0.2


def test_reruns_keep_an_uncontended_measurement(monkeypatch):
    q, noisy = [1e-3, 1e-3, 1.0, 1.0], [1e-3, 2e-3, 1.0, 1.0]
    results = {("numpy", "add"): _run("numpy", "add", {"1": {"numpy": 5.0}, "2": {"numpy": 1.0}},
                                      {"1/numpy": noisy, "2/numpy": q})}
    calls = []

    def fake(system, names, args, python=None, cases=None, columns=None):
        calls.append((system, tuple(names), cases, columns))
        # the first rerun is contended again (kept: faster); the second is quiet (kept: quiet)
        pr = noisy if len(calls) == 1 else q
        return {"add": _run("numpy", "add", {"1": {"numpy": 2.0 + len(calls)}}, {"1/numpy": pr})}
    monkeypatch.setattr(bm, "run_subprocess", fake)
    rounds = bm.rerun_flagged(results, _Args, {"numpy": None}, [1e-3])
    assert calls == [("numpy", ("add",), {"1"}, {"numpy"})] * 2 and rounds == 2
    r = results[("numpy", "add")]
    assert r["results"]["1"]["numpy"] == 4.0 and r["probes"]["1/numpy"] == q
    assert r["results"]["2"]["numpy"] == 1.0                        # never flagged, never rerun
    assert not bm.flagged_cells(results, 1e-3, 0.2)


def _times():
    us = 1e-6
    t = {("add", "1", "numpy"): 0.3 * us, ("add", "1", "ndflow_fn"): 0.9 * us,
         ("add", "1", "jax_jit"): 5 * us,
         ("sigmoid", "1048576", "ndflow_fn"): 100 * us, ("sigmoid", "1048576", "numpy"): 600 * us,
         ("sigmoid", "1048576", "numpy_copy"): 90 * us, ("sigmoid", "1048576", "jax_jit"): 120 * us,
         ("sigmoid", "1048576", "torch_compile"): 99 * us,
         ("mlp_grad", "512", "ndflow"): 140 * us, ("mlp_grad", "512", "numpy"): 100 * us,
         ("per_example_grads", "vectorized_map-128", "ndflow_fn"): 50 * us,
         ("per_example_grads", "map_fn-128", "ndflow_fn"): 2500 * us}
    return t


def test_goals_table_verdicts():
    header, rows = goals.goals(_times())
    assert header == ["case", "goal", "ndflow", "NumPy", "jax.jit", "torch.compile", "met"]
    met = {r[0]: r[-1] for r in rows}
    assert met["add, compiled call"] == "yes (3.00x)"
    # 100 us against a 90 us copy is within 1.2x, but torch.compile's 99 us is faster
    assert met["sigmoid 2**20, compiled"].startswith("NO (1.11x copy")
    assert "1.01x torch.compile" in met["sigmoid 2**20, compiled"]
    assert met["MLP gradient b512, eager"] == "yes (1.40x)"
    assert met["sigmoid 2**24, compiled"] == "not measured"
    pex = [r for r in rows if r[1].startswith(">= 40x")][0]
    assert pex[-1] == "yes (compiled map_fn 2.5 ms = 50x)"


def test_jit_goals_table_verdicts():
    us = 1e-6
    t = _times()
    t.update({("sigmoid", "1048576", "ndflow_jit"): 98 * us,
              ("sigmoid", "16777216", "ndflow_jit"): 1200 * us,
              ("sigmoid", "16777216", "numpy_copy"): 1000 * us,
              ("sigmoid", "16777216", "jax_jit"): 1500 * us,
              ("mlp_grad", "512", "ndflow_jit"): 90 * us,
              ("per_example_grads", "map_fn-128", "ndflow_jit"): 2000 * us,
              ("first_call", "classifier-32", "ndflow_jit"): 0.03})
    header, rows = goals.jit_goals(t)
    assert header == ["case", "goal", "nf jit", "nf.function", "NumPy", "jax.jit",
                      "torch.compile", "met"]
    met = {r[0]: r[-1] for r in rows}
    # faster than torch.compile (99 us) and within 1.5x the 90 us copy
    assert met["sigmoid 2**20"] == "yes (0.99x torch.compile, 1.09x copy)"
    # faster than jax.jit, but 1.2x a copy is over the 1.1x asked at 2**24
    assert met["sigmoid 2**24"] == "NO (0.80x jax.jit, 1.20x copy)"
    assert met["mlp_grad batch 512"] == "NO (no compiler peer ran)"
    assert "per_example_grads map_fn, batch 128" not in met         # the loop is not a goal
    assert met["first call of a training step"] == "yes (30 ms)"


def test_tables_only_prints_scaling_and_goals(tmp_path, capsys):
    runs = []
    for system, col, f in (("numpy", "numpy", 1.0), ("ndflow", "ndflow_fn", 0.5)):
        res = {str(b): {col: f * b * 1e-6} for b in (32, 128, 512, 1024, 4096)}
        if system == "ndflow":
            for v in res.values():
                v["ndflow"] = 2 * v["ndflow_fn"]
                v["ndflow_jit"] = 0.5 * v["ndflow_fn"]
        runs.append(_run(system, "mlp_grad", res, {}))
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"runs": runs, "systems": ["numpy", "ndflow"],
                                "workloads": ["mlp_grad"]}))
    assert bm.main(["--tables-only", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Scaling: mlp_grad by batch" in out
    line = [x for x in out.splitlines() if x.startswith("batch 4096")][0]
    # nf.fn/np, nf.jit/np, nf eager/np
    assert line.split()[-3:] == ["0.50x", "0.25x", "1.00x"]
    assert "| MLP gradient b512, eager | <= 1.5x hand-written NumPy |" in out
    assert "Goals, jit_compile=True" in out and "| mlp_grad batch 512 | < " in out


def test_merging_runs_keeps_each_least_contended_measurement():
    q, noisy = [1e-3, 1e-3, 1.0, 1.0], [1e-3, 3e-3, 1.0, 1.0]
    a = {"runs": [_run("numpy", "add", {"1": {"numpy": 5.0}, "2": {"numpy": 1.0}},
                       {"1/numpy": noisy, "2/numpy": q})], "calibration": [1e-3]}
    b = {"runs": [_run("numpy", "add", {"1": {"numpy": 2.0}, "2": {"numpy": 0.5}},
                       {"1/numpy": q, "2/numpy": noisy})], "calibration": [1e-3]}
    m = bm.merge_runs([a, b])
    assert m["runs"][0]["results"] == {"1": {"numpy": 2.0}, "2": {"numpy": 1.0}}
    assert a["runs"][0]["results"]["1"]["numpy"] == 5.0          # the inputs are not changed


def test_threads_pin_each_system_and_wider_columns_are_named(tmp_path, capsys):
    # --threads N gives each system's process N of this process's cores; a column whose CPU
    # time still exceeds N times its wall time is named under the tables
    mine = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    got = bm.pinned_cpus(1)
    if len(mine) > 1:
        assert got == {mine[-1]}
    else:
        assert got is None
    assert bm.pinned_cpus(None) is None and bm.pinned_cpus(len(mine) or 1) is None
    probe = [1e-3, 1e-3]
    runs = [_run("numpy", "sigmoid", {"1048576": {"numpy": 9e-4}},
                 {"1048576/numpy": probe + [1.0, 1.0]}),
            _run("jax", "sigmoid", {"1048576": {"jax_jit": 3e-4}},
                 {"1048576/jax_jit": probe + [1.0, 1.8]})]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"runs": runs, "systems": ["numpy", "jax"], "threads": 1,
                                "workloads": ["sigmoid"]}))
    assert bm.main(["--tables-only", str(path)]) == 0
    out = capsys.readouterr().out
    wide = [x for x in out.splitlines() if "CPU time over 1 core" in x]
    assert len(wide) == 1 and "jax:sigmoid[1048576/jax_jit] 1.80" in wide[0]
    assert "numpy:sigmoid" not in wide[0]
