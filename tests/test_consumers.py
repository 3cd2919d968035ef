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
