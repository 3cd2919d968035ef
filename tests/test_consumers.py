"""Libraries that consume ndflow arrays through the Array API: their answers on ndflow arrays
are NumPy's. Each runs in a fresh interpreter (scikit-learn's dispatch needs SCIPY_ARRAY_API=1
set before SciPy is first imported) and is skipped when the library is absent."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

_LDA = """
import numpy as np, sklearn, ndflow.numpy as tnp
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as LDA
from sklearn.datasets import make_classification
X, y = make_classification(n_samples=300, n_features=8, n_informative=5, n_classes=4,
                           n_clusters_per_class=1, random_state=0)
y = np.array([70, -2, 31, 5])[y]          # labels whose hash order is not their sorted order
ref = LDA(solver="svd").fit(X, y)
with sklearn.config_context(array_api_dispatch=True):
    m = LDA(solver="svd").fit(tnp.asarray(X), tnp.asarray(y))
    pred = m.predict(tnp.asarray(X))
    assert isinstance(pred, tnp.ndarray), type(pred)
    np.testing.assert_array_equal(np.asarray(m.classes_), ref.classes_)
    np.testing.assert_array_equal(np.asarray(pred), ref.predict(X))
    np.testing.assert_allclose(np.asarray(m.predict_proba(tnp.asarray(X))),
                               ref.predict_proba(X), rtol=1e-6, atol=1e-9)
    assert abs(m.score(tnp.asarray(X), tnp.asarray(y)) - ref.score(X, y)) < 1e-12
print("ok")
"""


def _run(code):
    env = dict(os.environ, SCIPY_ARRAY_API="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_sklearn_lda_with_array_api_dispatch_matches_numpy():
    pytest.importorskip("sklearn", minversion="1.6")     # array_api_dispatch, vendored compat
    pytest.importorskip("scipy")
    _run(_LDA)


_SKLEARN_MORE = """
import numpy as np, sklearn, ndflow.numpy as tnp
from sklearn.decomposition import PCA
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler, MinMaxScaler
from sklearn.metrics import roc_auc_score, accuracy_score, mean_squared_error, r2_score
rng = np.random.default_rng(0)
X = rng.standard_normal((100, 6))
yr = X @ rng.standard_normal(6) + 0.1 * rng.standard_normal(100)
yb = (yr > 0).astype(np.int64)
s = rng.random(100)
checks = {
    "PCA": lambda m, x: np.abs(PCA(n_components=3, svd_solver="full").fit_transform(x)),
    "Ridge": lambda m, x: Ridge(solver="svd").fit(x, m(yr)).predict(x),
    "StandardScaler": lambda m, x: StandardScaler().fit_transform(x),
    "MinMaxScaler": lambda m, x: MinMaxScaler().fit_transform(x),
    "roc_auc_score": lambda m, x: roc_auc_score(m(yb), m(s)),
    "accuracy_score": lambda m, x: accuracy_score(m(yb), m(s) > 0.5),
    "mean_squared_error": lambda m, x: mean_squared_error(m(yr), m(s)),
    "r2_score": lambda m, x: r2_score(m(yr), m(s)),
}
for name, f in checks.items():
    ref = f(np.asarray, X)
    with sklearn.config_context(array_api_dispatch=True):
        got = f(tnp.asarray, tnp.asarray(X))
    if np.ndim(ref):
        assert isinstance(got, tnp.ndarray), (name, type(got))
    np.testing.assert_allclose(np.abs(np.asarray(got)) if name == "PCA" else np.asarray(got),
                               ref, rtol=1e-7, atol=1e-10, err_msg=name)
print("ok")
"""


def test_sklearn_estimators_and_metrics_with_array_api_dispatch_match_numpy():
    pytest.importorskip("sklearn", minversion="1.6")
    pytest.importorskip("scipy")
    _run(_SKLEARN_MORE)


_SCIPY = """
import numpy as np, ndflow.numpy as tnp
import scipy.special as sp, scipy.stats as st, scipy.fft as sfft, scipy.signal as sig
rng = np.random.default_rng(0)
x = rng.random(50) + 0.1
y = rng.random((4, 16))
checks = {
    "special.erf": lambda m: sp.erf(m(x)), "special.gammaln": lambda m: sp.gammaln(m(x)),
    "special.logsumexp": lambda m: sp.logsumexp(m(x)),
    "special.softmax": lambda m: sp.softmax(m(x)), "special.expit": lambda m: sp.expit(m(x)),
    "special.xlogy": lambda m: sp.xlogy(m(x), m(x)), "stats.zscore": lambda m: st.zscore(m(x)),
    "stats.skew": lambda m: st.skew(m(x)), "stats.moment": lambda m: st.moment(m(x), 3),
    "fft.fft": lambda m: sfft.fft(m(y)), "fft.rfft": lambda m: sfft.rfft(m(y), axis=0),
    "fft.dct": lambda m: sfft.dct(m(x)),
    "signal.convolve": lambda m: sig.convolve(m(x), m(x[:5])),
    "signal.fftconvolve": lambda m: sig.fftconvolve(m(x), m(x[:5])),
    "signal.correlate": lambda m: sig.correlate(m(x), m(x[:5])),
}
for name, f in checks.items():
    ref = f(np.asarray)
    got = f(tnp.asarray)
    assert isinstance(got, tnp.ndarray), (name, type(got))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-10, atol=1e-12, err_msg=name)
print("ok")
"""


def test_scipy_with_array_api_on_ndflow_arrays_matches_numpy():
    pytest.importorskip("scipy", minversion="1.14")
    _run(_SCIPY)


def test_matplotlib_plots_ndflow_arrays(tmp_path):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import warnings
    import numpy as np
    import matplotlib.pyplot as plt
    import ndflow.numpy as tnp
    x = tnp.linspace(0, 1, 20)
    y = tnp.sin(x * 6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tnp.NumPyFallbackWarning)   # no NumPy host fallbacks
        fig, ax = plt.subplots()
        line, = ax.plot(x, y)
        counts, _, _ = ax.hist(y, bins=5)
        ax.scatter(x, y)
        ax.imshow(tnp.reshape(y, (4, 5)))
        fig.savefig(tmp_path / "p.png")
        plt.close(fig)
    xd, yd = line.get_data()
    np.testing.assert_allclose(np.asarray(xd), x.numpy())
    np.testing.assert_allclose(np.asarray(yd), y.numpy())
    np.testing.assert_array_equal(np.asarray(counts), np.histogram(y.numpy(), bins=5)[0])
