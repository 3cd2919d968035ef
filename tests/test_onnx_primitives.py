"""Every primitive of the ONNX exporter's table, exported and run in onnxruntime against eager
ndflow on special values (tests/onnx_cases.py): NaN, infinities, signed zeros, subnormals, the
largest values, integer extremes, empty and 0-d arrays, every dtype the primitive takes.

The suite is parametrized by the table itself, so a primitive added to the exporter without
cases fails here. For each case the export either
- is refused with `UnsupportedOperationError` naming the primitive (`REFUSED` lists the
  refusals, each with its reason: a refusal not listed, or listed and no longer made, fails),
- or raises NumPy's own error at export where NumPy raises for sizes known then (a reduction
  without identity over an empty axis),
- or writes a model that passes `onnx.checker` and that onnxruntime, run in a child process
  (a crash of the runtime is a failure reported here, not the end of the test session), loads
  (or refuses for a kernel it lacks, listed in `ORT_GAPS`) and runs, giving eager ndflow's
  dtypes, shapes and values (bit for bit except where `approx`: a libm or a summation order of
  its own, within a few ulp; NaN, infinities and signs of zeros always exact), and failing the
  run where eager ndflow raises.
"""
import dataclasses
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import ndflow as nf  # noqa: E402
from ndflow.core import tree  # noqa: E402
from ndflow.onnx import exporter  # noqa: E402

from onnx_cases import BF16, cases_for, eager_or_error, ort_gap  # noqa: E402
from onnx_runner import OrtRunner  # noqa: E402

# primitive name -> [(dtype names, or None for all, a fragment of the refusal's message)]: the
# refusals the exporter makes on purpose (documented in its docstring and the README)
REFUSED = {
    "assign_variable": [(None, "assigning a Variable")],
    "argsort": [(None, "argsort with kind=None")],
}
ALWAYS_REFUSED = {"assign_variable"}


_RTOL = {np.dtype(np.float16): 4e-3, BF16: 3e-2, np.dtype(np.float32): 4e-6,
         np.dtype(np.float64): 2e-14}


def _prims():
    seen, out = {}, []
    for p in sorted(exporter.TABLE, key=lambda p: p.name):
        k = seen[p.name] = seen.get(p.name, 0) + 1
        out.append(pytest.param(p, id=p.name if k == 1 else "%s-%d" % (p.name, k)))
    return out


@pytest.fixture(scope="module")
def runner():
    r = OrtRunner()
    yield r
    r.close()


def _prims_of(g):
    out = set()
    for n in g.nodes:
        out.add(n.prim)
        for s in n.subgraphs():
            out |= _prims_of(s.graph)
    return out


def _same(got, want, case, feed, k):
    """onnxruntime's `got` is eager ndflow's `want` (see the module docstring)."""
    got, want = np.asarray(got), np.asarray(want)
    where = f"{case.desc}, output {k}, feed shapes {[np.shape(a) for a in feed]}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, eager {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape}, eager {want.shape}"
    if not case.values:
        return
    if want.dtype.kind != "f" and want.dtype != BF16:
        bad = got != want
        assert not bad.any(), f"{where}: {_diff(feed, got, want, bad)}"
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    bad = np.isnan(g) != np.isnan(w)
    inf = np.isinf(w) | np.isinf(g)
    bad |= inf & (g != w)
    finite = ~np.isnan(w) & ~inf
    if case.approx:
        tol = _RTOL[BF16 if case.dtype == BF16 else want.dtype] * np.abs(w)
        if case.atol is not None:
            tol = tol + np.broadcast_to(case.atol(feed)[k], w.shape)
        # (subnormal results too: a runtime flushing them to zero is a difference)
        ulp0 = float(np.finfo(want.dtype if want.dtype != BF16 else np.float32)
                     .smallest_subnormal)
        bad |= finite & (np.abs(g - w) > np.maximum(tol, 0.5 * ulp0))
    else:
        bad |= finite & (g != w)
    zs = case.zero_sign(feed)[k] if callable(case.zero_sign) else case.zero_sign
    if zs is not False:
        zero = (g == 0) & (w == 0) & np.broadcast_to(zs, w.shape)
        bad |= zero & (np.signbit(g) != np.signbit(w))
    assert not bad.any(), f"{where}: {_diff(feed, got, want, bad)}"


def _diff(feed, got, want, bad):
    idx = list(zip(*np.nonzero(bad)))[:6] if got.ndim else [()]
    shown = ["at %s: onnxruntime %r, eager %r" % (i, got[i], want[i]) for i in idx]
    return "%d differences, %s" % (int(np.sum(bad)), "; ".join(shown))


def _float32_boundary(case):
    """A case with bfloat16 inputs or outputs, with float32 ones instead (cast to and from
    bfloat16 inside the function): onnxruntime's Python API takes and gives no bfloat16 arrays,
    and the bfloat16 arithmetic in between is what is checked."""
    f4 = np.dtype(np.float32)
    narrow = [np.dtype(s.dtype) == BF16 for s in case.specs]
    fn = case.fn

    def wrapped(*xs):
        xs = [x.astype(BF16) if b else x for x, b in zip(xs, narrow)]
        return tree.map_structure(lambda o: o.astype(f4) if np.dtype(o.dtype) == BF16 else o,
                                  fn(*xs))
    specs = [nf.TensorSpec(s.shape, f4) if b else s for s, b in zip(case.specs, narrow)]
    feeds = [tuple(np.asarray(a, f4) if b else a for a, b in zip(fd, narrow))
             for fd in case.feeds]
    return dataclasses.replace(case, fn=wrapped, specs=specs, feeds=feeds)


def _run_case(prim, case, runner, report):
    wrapped = case.dtype == BF16 or any(np.dtype(s.dtype) == BF16 for s in case.specs)
    if wrapped:
        case = _float32_boundary(case)
    fn = case.fn
    f = nf.function(lambda *xs: fn(*xs), input_signature=case.specs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = exporter.export(f, case.specs)
        except exporter.UnsupportedOperationError as e:
            report["refused"].append((case, str(e)))
            return
        except ValueError as e:
            # NumPy's error for sizes known at export: eager ndflow raises it too
            want = eager_or_error(fn, case.feeds[0])
            assert isinstance(want, ValueError), f"{case.desc}: export raised {e!r}, " \
                f"eager gives {want!r}"
            assert str(want) in str(e), (str(e), str(want))
            report["raised"] += 1
            return
        g = exporter.export_graph(f.get_concrete_function(*case.specs).traced_graph)
    if prim not in _prims_of(g) and wrapped:
        return      # (the casts around it let the passes drop a copy)
    assert prim in _prims_of(g), f"{case.desc}: the case does not exercise {prim.name}"
    onnx.checker.check_model(model, full_check=True)
    res = runner.run(model.SerializeToString(), [[np.asarray(a) for a in fd]
                                                  for fd in case.feeds])
    assert res[0] != "crash", f"{case.desc}: onnxruntime crashed (exit status {res[1]})"
    if res[0] == "load-error":
        assert ort_gap(res[1], case.dtype), f"{case.desc}: onnxruntime refuses the model: {res[1]}"
        report["gaps"].append((case, res[1]))
        return
    oracle = f if case.oracle == "function" else fn
    for feed, (status, outs) in zip(case.feeds, res[1]):
        want = eager_or_error(oracle, feed)
        if isinstance(want, Exception):
            assert status == "run-error", \
                f"{case.desc}: eager raises {want!r}; onnxruntime gives {outs!r}"
            report["errors"] += 1
            continue
        assert status == "ok", f"{case.desc}: onnxruntime fails: {outs}"
        assert len(outs) == len(want), (case.desc, len(outs), len(want))
        for k, (o, w) in enumerate(zip(outs, want)):
            _same(o, w, case, feed, k)
        report["ran"] += 1


@pytest.mark.parametrize("prim", _prims())
def test_primitive_in_onnxruntime(prim, runner):
    cases = cases_for(prim)
    assert cases, f"{prim.name}: no special-value cases (add a maker to onnx_cases.MAKERS)"
    report = {"refused": [], "gaps": [], "raised": 0, "errors": 0, "ran": 0}
    for case in cases:
        _run_case(prim, case, runner, report)
    expected = REFUSED.get(prim.name, [])
    used = set()
    for case, msg in report["refused"]:
        assert f"'{prim.name}'" in msg, f"{case.desc}: refused for another primitive: {msg}"
        hits = [k for k, (dts, frag) in enumerate(expected)
                if (dts is None or str(case.dtype) in dts) and frag in msg]
        assert hits, f"{case.desc}: refused, not listed in REFUSED: {msg}"
        used.update(hits)
    stale = [expected[k] for k in range(len(expected)) if k not in used]
    assert not stale, f"{prim.name}: listed in REFUSED but not refused: {stale}"
    if prim.name not in ALWAYS_REFUSED:
        assert report["ran"] or report["errors"], f"{prim.name}: nothing ran in onnxruntime"
