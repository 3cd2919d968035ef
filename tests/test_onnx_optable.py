"""The op table's samples (tests/optable*.py: every public function of ndflow.numpy, the ufunc
methods and ndflow.scipy), each compiled for its sample's shapes and exported to ONNX: the
export is refused naming a primitive, or raises NumPy's error where eager ndflow raises, or
gives eager ndflow's answer in onnxruntime (run in a child process: a crash is a failure here)
with the record's tolerance, NaN and infinities where eager has them."""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import ndflow as nf  # noqa: E402
from ndflow.core import tree  # noqa: E402
from ndflow.onnx import exporter  # noqa: E402

import optable  # noqa: E402
import optable_scipy  # noqa: E402
import optable_ufuncs  # noqa: E402
from onnx_cases import eager_or_error, ort_gap  # noqa: E402
from onnx_runner import OrtRunner  # noqa: E402

_RECORDS = optable.RECORDS + optable_scipy.SCIPY_RECORDS + optable_ufuncs.METHOD_RECORDS
_CASES = [pytest.param(r, id=r.name) for r in _RECORDS if r.jit]


@pytest.fixture(scope="module")
def runner():
    r = OrtRunner()
    yield r
    r.close()


def _compiled(rec, sample):
    """The record's call on the sample, its array arguments as the function's inputs."""
    pos = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]

    def f(*arrays):
        args = list(sample.args)
        for i, a in zip(pos, arrays):
            args[i] = a
        return rec.call(nf.numpy, *args, **sample.kwargs)
    specs = [nf.TensorSpec(sample.args[i].shape, sample.args[i].dtype) for i in pos]
    return f, specs, [np.array(sample.args[i], order="C") for i in pos]


def _compare(rec, got, want, where):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, eager {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape}, eager {want.shape}"
    if rec.values != "values":
        return
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    rtol, atol = rec.tolerance(want.dtype)
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{where}: NaN at other places"
    inf = np.isinf(want)
    assert np.array_equal(got[inf], want[inf]), f"{where}: infinities differ"
    np.testing.assert_allclose(got, want, rtol=max(rtol, 4e-6 if want.dtype == np.float32
                                                   else 1e-12), atol=atol or 0, err_msg=where)


def _check_sample(rec, dt, sample, runner, tally):
    f, specs, feed = _compiled(rec, sample)
    where = f"{rec.name}[{dt}]{sample!r}"
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            model = exporter.export(nf.function(f), specs)
        except exporter.UnsupportedOperationError as e:
            assert "'" in str(e) and "cannot be exported" in str(e) or "has no ONNX" in str(e)
            tally["refused"] += 1
            return
        except Exception as e:     # noqa: BLE001 - then eager ndflow raises the same type
            want = eager_or_error(f, feed)
            assert isinstance(want, Exception), f"{where}: export raised {e!r}"
            tally["raised"] += 1
            return
    status, results = runner.run(model.SerializeToString(), [feed])
    assert status != "crash", f"{where}: onnxruntime crashed ({results})"
    if status == "load-error":
        assert ort_gap(results), f"{where}: onnxruntime refuses the model: {results}"
        tally["gap"] += 1
        return
    run_status, outs = results[0]
    want = eager_or_error(f, feed)
    if isinstance(want, Exception):
        assert run_status == "run-error", f"{where}: eager raises {want!r}, onnxruntime gives " \
            f"{outs!r}"
        tally["errors"] += 1
        return
    assert run_status == "ok", f"{where}: onnxruntime fails where eager gives a value: {outs}"
    assert len(outs) == len(want), (where, len(outs), len(want))
    for k, (g, w) in enumerate(zip(outs, want)):
        _compare(rec, g, w, f"{where} output {k}")
    tally["ran"] += 1


def _check_together(rec, dt, samples, runner, tally):
    """All samples of a dtype as one exported function (one onnxruntime session instead of
    one per sample). False when that is not possible: then each sample is checked alone."""
    comps = [_compiled(rec, s) for s in samples]
    wants = [eager_or_error(f, feed) for f, _, feed in comps]
    if len(samples) < 2 or any(isinstance(w, Exception) for w in wants):
        return False
    counts = [len(feed) for _, _, feed in comps]

    def together(*arrays):
        outs, k = [], 0
        for (f, _, _), c in zip(comps, counts):
            outs.extend(tree.flatten(f(*arrays[k:k + c])))
            k += c
        return tuple(outs)
    specs = [s for _, sp, _ in comps for s in sp]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            model = exporter.export(nf.function(together), specs)
        except Exception:      # noqa: BLE001 - a refusal or an error: sample by sample
            return False
    status, results = runner.run(model.SerializeToString(),
                                 [[a for _, _, feed in comps for a in feed]])
    if status != "ok" or results[0][0] != "ok":
        return False           # the samples alone say which and why
    outs, k = results[0][1], 0
    for s, w in zip(samples, wants):
        for j, (g, v) in enumerate(zip(outs[k:k + len(w)], w)):
            _compare(rec, g, v, f"{rec.name}[{dt}]{s!r} output {j}")
        k += len(w)
    assert k == len(outs), (rec.name, k, len(outs))
    tally["ran"] += len(samples)
    return True


@pytest.mark.parametrize("rec", _CASES)
def test_record_in_onnxruntime(rec, runner):
    tally = {"refused": 0, "raised": 0, "gap": 0, "errors": 0, "ran": 0}
    # one dtype of each kind: the primitives' exports are checked in every dtype on special
    # values by test_onnx_primitives.py; here, that each record's graph exports and runs
    for dt in optable.kinds_of(rec):
        rng = np.random.default_rng([len(rec.name), sum(map(ord, rec.name)), dt.num])
        samples = rec.samples(rng, dt)
        if _check_together(rec, dt, samples, runner, tally):
            continue
        for sample in samples:
            _check_sample(rec, dt, sample, runner, tally)
