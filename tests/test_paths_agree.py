"""Paths agree: for every op-table record (`optable.RECORDS`, and `optable_scipy.SCIPY_RECORDS`
with SciPy as the oracle), on hypothesis-drawn inputs full of special values (signed zeros, NaN,
+-inf, huge, tiny and subnormal numbers, integer extremes), 0-d, empty and size-1 arrays and
non-contiguous layouts, every path gives NumPy's answer:

    NumPy == eager == under a tape (`bind`) == nf.function == nf.function with every size
    unknown == vectorized_map over a batch == a Python loop over it,

compared bit-carefully (dtype, shape, NaN positions, infinities, the sign of zeros, values
within the record's tolerance); where NumPy raises, every path raises the same type. And a
thread check: the record computed by 4 threads at once, several times each, equals one
thread's answer.

Each record takes `NDFLOW_PATHS_EXAMPLES` drawn cases (2 by default, derandomized, so CI sees the
same cases every run); a longer exploration: `NDFLOW_PATHS_EXAMPLES=200 pytest
tests/test_paths_agree.py`. A record that legitimately differs on one path or comparison
declares it with its reason (`paths_reasons`, listed by test_declared_path_exclusions); the
machinery is in tests/paths_agree.py.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, Phase, HealthCheck

import optable
import optable_scipy
import paths_agree as pa

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]

EXAMPLES = int(os.environ.get("NDFLOW_PATHS_EXAMPLES", "2"))
_SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                     phases=[Phase.explicit, Phase.generate],
                     suppress_health_check=list(HealthCheck))

def _param(r):
    why = getattr(r, "paths_reasons", {}).get("known_defect")
    return pytest.param(r, id=r.name, marks=[pytest.mark.xfail(reason=why, strict=False)]
                        if why else [])


_RECORDS = [_param(r) for r in optable.RECORDS + optable_scipy.SCIPY_RECORDS]


@pytest.mark.parametrize("rec", _RECORDS)
@_SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_paths_agree(rec, seed):
    case = pa.Case(rec, seed)
    # (ndflow.scipy's records: SciPy, less the artifacts each declares; optable_scipy.py)
    oracle = optable_scipy.paths_oracle(rec) if rec in optable_scipy.SCIPY_RECORDS else None
    problems = pa.check_case(rec, case, oracle)
    assert not problems, f"{rec.name} {case!r}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("rec", _RECORDS)
def test_threads_agree(rec):
    """4 threads x 3 iterations, eager, taped and compiled (one function shared by the
    threads), equal one thread's answer."""
    case = pa.Case(rec, 12345)
    problems = pa.thread_check(rec, case)
    assert not problems, f"{rec.name} {case!r}:\n  " + "\n  ".join(problems[:5])


def test_declared_path_exclusions():
    """Every path or comparison a record opts out of says why (the reasons are the
    documentation of where ndflow deliberately differs or cannot follow)."""
    known = set(pa.EXCLUSIONS)
    bad = []
    for r in optable.RECORDS + optable_scipy.SCIPY_RECORDS:
        for k, why in getattr(r, "paths_reasons", {}).items():
            if k not in known or not isinstance(why, str) or len(why) < 20:
                bad.append(f"{r.name}: {k!r}")
    assert not bad, "undeclared or unexplained path exclusions: " + ", ".join(bad)
