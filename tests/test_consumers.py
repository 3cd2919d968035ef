"""Libraries that consume arrays, run on ndflow arrays: each gives NumPy's answer (every check
is skipped when its package is absent). Known failures are strict xfails whose reason names
what fails, so they turn into errors (to be removed) once fixed."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ndflow.numpy as tnp

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]


# ------------------------------------------------------------------ running in a child
# scikit-learn's array API mode needs SciPy's, and SCIPY_ARRAY_API must be set before SciPy is
# imported: both run in one child process per family, which evaluates each call on NumPy and
# on ndflow arrays and reports the results (or the error) as JSON.
_CHILD = textwrap.dedent("""
    import json, sys, warnings, numpy as np
    warnings.simplefilter("ignore")
    import scipy as sp, scipy.special, scipy.stats, scipy.fft, scipy.signal
    import ndflow.numpy as tnp
    setup, calls = sys.argv[1], json.loads(sys.argv[2])
    env = {"sp": sp, "np": np}
    exec(setup, env)
    out = {}
    for name, expr in calls.items():
        try:
            want = np.asarray(eval(expr, dict(env, **env["inputs"](np.asarray))))
            got = eval(expr, dict(env, **env["inputs"](tnp.asarray)))
            out[name] = {"type": type(got).__module__ + "." + type(got).__name__,
                         "got": np.asarray(got).tolist(), "want": want.tolist(),
                         "dtype": [str(np.asarray(got).dtype), str(want.dtype)]}
        except Exception as e:
            out[name] = {"error": type(e).__name__ + ": " + str(e)[:300]}
    print(json.dumps(out, default=str))
""")


def _run_child(setup, calls):
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(__file__)),
                                         env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", _CHILD, setup, json.dumps(calls)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _compare(r, rtol=1e-10, atol=1e-12):
    """(matches NumPy, why not)."""
    if "error" in r:
        return False, r["error"]
    if r["type"] not in ("ndflow.core.ndarray.ndarray", "builtins.float", "builtins.int",
                         "numpy.float64", "numpy.int64", "builtins.bool"):
        return False, f"returned {r['type']}"
    got, want = np.asarray(r["got"], dtype=complex), np.asarray(r["want"], dtype=complex)
    if got.shape != want.shape:
        return False, f"shape {got.shape}, NumPy's {want.shape}"
    if r["type"] == "ndflow.core.ndarray.ndarray" and r["dtype"][0] != r["dtype"][1]:
        return False, f"dtype {r['dtype'][0]}, NumPy's {r['dtype'][1]}"
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        return False, f"values differ: {got.ravel()[:6]} vs NumPy's {want.ravel()[:6]}"
    return True, ""


def _check(results, name, gaps):
    """Assert NumPy's result; a known gap must still show its symptom (then xfail), so a fixed
    gap fails here until it is removed from the list."""
    ok, why = _compare(results[name])
    if name in gaps:
        reason, symptom = gaps[name]
        assert not ok, f"{name} now gives NumPy's result: remove it from the known gaps"
        assert symptom in why, f"{name}: expected the known failure ({symptom!r}), got {why}"
        pytest.xfail(f"{reason} [{why[:120]}]")
    assert ok, f"{name}: {why}"


# ------------------------------------------------------------------ scikit-learn
_SK_SETUP = textwrap.dedent("""
    import sklearn
    from sklearn.datasets import make_classification
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as LDA
    from sklearn.decomposition import PCA
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler, MinMaxScaler
    from sklearn import metrics
    X0, y0 = make_classification(n_samples=200, n_features=6, n_informative=4, n_classes=3,
                                 random_state=0)
    sklearn.set_config(array_api_dispatch=True)
    def inputs(conv):
        return {"X": conv(X0), "y": conv(y0)}
""")
_SK_CALLS = {
    "LinearDiscriminantAnalysis.predict": "LDA().fit(X, y).predict(X)",
    "LinearDiscriminantAnalysis.score": "LDA().fit(X, y).score(X, y)",
    "PCA.fit_transform": "PCA(n_components=3, svd_solver='full').fit_transform(X)",
    "PCA.explained_variance_ratio_":
        "PCA(n_components=3, svd_solver='full').fit(X).explained_variance_ratio_",
    "Ridge(solver='svd').predict": "Ridge(solver='svd', alpha=0.5).fit(X, y * 1.0).predict(X)",
    "Ridge(solver='svd').coef_": "Ridge(solver='svd').fit(X, y * 1.0).coef_",
    "StandardScaler.fit_transform": "StandardScaler().fit_transform(X)",
    "MinMaxScaler.fit_transform": "MinMaxScaler().fit_transform(X)",
    "roc_auc_score": "metrics.roc_auc_score(y == 1, X[:, 0])",
    "accuracy_score": "metrics.accuracy_score(y, (y + (X[:, 0] > 0)) % 3)",
    "mean_squared_error": "metrics.mean_squared_error(X[:, 0], X[:, 1])",
    "mean_absolute_error": "metrics.mean_absolute_error(X[:, 0], X[:, 1])",
    "r2_score": "metrics.r2_score(X[:, 0], X[:, 1])",
}
_SK_GAPS = {}   # name: (what fails in ndflow, the symptom seen); none today


@pytest.fixture(scope="module")
def sklearn_results():
    pytest.importorskip("sklearn")
    pytest.importorskip("array_api_compat")
    pytest.importorskip("scipy")
    return _run_child(_SK_SETUP, _SK_CALLS)


@pytest.mark.parametrize("name", list(_SK_CALLS))
def test_sklearn_array_api_dispatch_gives_numpys_results(sklearn_results, name):
    _check(sklearn_results, name, _SK_GAPS)


# ------------------------------------------------------------------ SciPy's array API mode
_SCIPY_SETUP = textwrap.dedent("""
    def inputs(conv):
        return {"x": conv(np.linspace(-2.0, 2.0, 7))}
""")
_SCIPY_CALLS = {
    "special.erf": "sp.special.erf(x)",
    "special.gammaln": "sp.special.gammaln(x)",
    "special.logsumexp": "sp.special.logsumexp(x)",
    "special.softmax": "sp.special.softmax(x)",
    "special.xlogy": "sp.special.xlogy(x, x * x + 1)",
    "stats.zscore": "sp.stats.zscore(x)",
    "stats.skew": "sp.stats.skew(x)",
    "stats.moment": "sp.stats.moment(x, 3)",
    "stats.entropy": "sp.stats.entropy(x * x + 1)",
    "stats.tvar": "sp.stats.tvar(x)",
    "stats.pearsonr": "sp.stats.pearsonr(x, x ** 2 + x).statistic",
    "fft.fft": "sp.fft.fft(x)",
    "fft.rfft": "sp.fft.rfft(x)",
    "fft.dct": "sp.fft.dct(x)",
    "fft.irfft": "sp.fft.irfft(sp.fft.rfft(x), n=7)",
    "signal.convolve": "sp.signal.convolve(x, x[:3])",
    "signal.correlate": "sp.signal.correlate(x, x[:3])",
    "signal.fftconvolve": "sp.signal.fftconvolve(x, x[:3])",
    "signal.detrend": "sp.signal.detrend(x)",
}
_SCIPY_GAPS = {}   # none today


@pytest.fixture(scope="module")
def scipy_results():
    pytest.importorskip("scipy")
    return _run_child(_SCIPY_SETUP, _SCIPY_CALLS)


@pytest.mark.parametrize("name", list(_SCIPY_CALLS))
def test_scipy_array_api_mode_gives_numpys_results(scipy_results, name):
    r = scipy_results[name]
    if "error" not in r:
        assert r["type"] == "ndflow.core.ndarray.ndarray", f"{name} returned {r['type']}"
    _check(scipy_results, name, _SCIPY_GAPS)


# ------------------------------------------------------------------ einops, pandas, matplotlib
def test_einops_array_api_entry():
    einops = pytest.importorskip("einops")
    ea = pytest.importorskip("einops.array_api")
    a = np.arange(24.0).reshape(2, 12)
    got = ea.rearrange(tnp.asarray(a), "b (h w) -> b w h", h=3)
    assert isinstance(got, tnp.ndarray)
    np.testing.assert_array_equal(got.numpy(), einops.rearrange(a, "b (h w) -> b w h", h=3))
    got = ea.reduce(tnp.asarray(a), "b (h w) -> b h", "max", h=3)
    np.testing.assert_array_equal(got.numpy(), einops.reduce(a, "b (h w) -> b h", "max", h=3))


def test_einops_main_entry():
    einops = pytest.importorskip("einops")
    a = np.arange(24.0).reshape(2, 12)
    got = einops.rearrange(tnp.asarray(a), "b (h w) -> b w h", h=3)
    np.testing.assert_array_equal(np.asarray(got), einops.rearrange(a, "b (h w) -> b w h", h=3))


def test_pandas_from_ndflow_arrays():
    pd = pytest.importorskip("pandas")
    a = np.random.default_rng(0).normal(size=(4, 3))
    df = pd.DataFrame(tnp.asarray(a), columns=["a", "b", "c"])
    pd.testing.assert_frame_equal(df, pd.DataFrame(a, columns=["a", "b", "c"]))
    s = pd.Series(tnp.asarray(a[:, 0]))
    pd.testing.assert_series_equal(s, pd.Series(a[:, 0]))
    pd.testing.assert_frame_equal(pd.DataFrame(tnp.asarray(np.arange(6).reshape(3, 2))),
                                  pd.DataFrame(np.arange(6).reshape(3, 2)))


def test_matplotlib_plots_ndflow_arrays(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    a = np.random.default_rng(1).normal(size=(2, 10))
    x = tnp.asarray(a)
    fig, ax = plt.subplots()
    try:
        line, = ax.plot(x[0], x[1])
        np.testing.assert_array_equal(np.asarray(line.get_xydata()), a.T)
        im = ax.imshow(x)
        np.testing.assert_array_equal(np.asarray(im.get_array()), a)
        counts, edges, _ = ax.hist(x[0], bins=4)
        want_c, want_e = np.histogram(a[0], bins=4)
        np.testing.assert_array_equal(counts, want_c)
        np.testing.assert_allclose(edges, want_e)
        sc = ax.scatter(x[0], x[1])
        np.testing.assert_array_equal(sc.get_offsets(), a.T)
        fig.savefig(tmp_path / "plot.png")
        assert (tmp_path / "plot.png").stat().st_size > 0
    finally:
        plt.close(fig)


def test_dlpack_to_pytorch():
    torch = pytest.importorskip("torch")
    a = np.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(tnp.asarray(a))
    np.testing.assert_array_equal(t.numpy(), a)
