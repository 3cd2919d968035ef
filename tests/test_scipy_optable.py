"""The op table's generic checks (values vs SciPy, compiled vs eager, gradients vs central
differences to second order, compiled and batched gradients, vectorized_map vs a loop) over
the `ndflow.scipy` records of `optable_scipy.py`."""
import numpy as np
import pytest

pytest.importorskip("scipy")

import test_optable as T  # noqa: E402  (the generic checks, run here over other records)
from optable import F64, F32  # noqa: E402
from optable_scipy import SCIPY_RECORDS  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")]

_CASES = [pytest.param(r, np.dtype(d), id="%s-%s" % (r.name, np.dtype(d).name))
          for r in SCIPY_RECORDS for d in r.dtypes]
_F64 = [pytest.param(r, id=r.name) for r in SCIPY_RECORDS if F64 in r.dtypes]
_DIFF_F64 = [c for c in _F64 if c.values[0].diff_args != ()]
_DIFF_F32 = [pytest.param(r, id=r.name) for r in SCIPY_RECORDS
             if F32 in r.dtypes and r.diff_args != ()]
_UNKNOWN = [c for c in _CASES if T._traceable_with_unknown_sizes(*c.values)]
_VMAP = [c for c in _CASES if c.values[0].vmap and T._takes_arrays(*c.values)]


@pytest.mark.parametrize("rec,dt", _CASES)
def test_values_match_scipy(rec, dt):
    T.test_values_match_numpy(rec, dt)


@pytest.mark.parametrize("rec,dt", _CASES)
def test_function_matches_eager(rec, dt):
    T.test_function_matches_eager(rec, dt)


@pytest.mark.parametrize("rec,dt", _UNKNOWN)
def test_function_with_unknown_sizes_matches_eager(rec, dt):
    T.test_function_with_unknown_sizes_matches_eager(rec, dt)


@pytest.mark.parametrize("rec", _DIFF_F64)
def test_gradient_matches_central_differences(rec):
    T.test_gradient_matches_central_differences(rec)


@pytest.mark.parametrize("rec", _DIFF_F32)
def test_float32_gradients_stay_float32(rec):
    T.test_float32_gradients_stay_float32(rec)


@pytest.mark.parametrize("rec", _DIFF_F64)
def test_second_order_gradient(rec):
    T.test_second_order_gradient(rec)


@pytest.mark.parametrize("rec", _DIFF_F64)
def test_gradient_compiled_and_batched_match_eager(rec):
    T.test_gradient_compiled_and_batched_match_eager(rec)


@pytest.mark.parametrize("rec,dt", _VMAP)
def test_vectorized_map_matches_loop(rec, dt):
    T.test_vectorized_map_matches_loop(rec, dt)


def test_declared_exclusions():
    bad = [r.name for r in SCIPY_RECORDS
           if (not r.vmap and not r.vmap_reason) or (r.diff_args == () and not r.grad_reason)]
    assert not bad, "records that opt out of a check without a reason: " + ", ".join(bad)


def test_every_public_function_has_a_record():
    """Each public callable of ndflow.scipy's submodules is in the table (or, for odeint,
    tested in test_scipy.py)."""
    import ndflow.scipy as nsp
    have = {r.name for r in SCIPY_RECORDS}
    elsewhere = {"scipy.integrate.odeint": "adjoint gradients: test_scipy.py",
                 "scipy.special.psi": "an alias of digamma",
                 "scipy.special.polygamma": "records special.polygamma.n1/n2",
                 "scipy.linalg.cho_factor": "through linalg.cho_solve",
                 "scipy.stats.norm.ppf": None}
    missing = []
    for sub in ("special", "linalg", "signal", "integrate"):
        mod = getattr(nsp, sub)
        for n in mod.__all__:
            name = f"scipy.{sub}.{n}"
            if name not in have and name not in elsewhere:
                missing.append(name)
    for d in nsp.stats.__all__:
        dist = getattr(nsp.stats, d)
        for m in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "logpmf", "pmf"):
            name = f"scipy.stats.{d}.{m}"
            if hasattr(dist, m) and name not in have and name not in elsewhere:
                missing.append(name)
    assert not missing, "ndflow.scipy functions without an op-table record: " + \
        ", ".join(missing)
