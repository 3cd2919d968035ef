"""The op table's error cases on every path: each record's samples that take an `axis`, with
the axis replaced by one NumPy refuses (a float: TypeError, not truncated; out of range:
AxisError; a string), run by tests/paths_agree.py on every path (eager, under a tape,
nf.function with known and unknown sizes, vectorized_map): each must raise NumPy's type."""
import types

import numpy as np
import pytest

import optable
import paths_agree as P
from optable import Sample

_BAD_AXES = (1.5, 7, "0")


def _error_cases(rec):
    """(description, case) for the record's first two samples taking an axis."""
    dt = np.dtype(rec.dtypes[0])
    seen, out = set(), []
    for s in rec.samples(np.random.default_rng(0), dt):
        if "axis" not in s.kwargs or s.kwargs["axis"] is None or s.desc in seen or \
                len(seen) == 2:
            continue
        seen.add(s.desc)
        for bad in _BAD_AXES:
            kw = dict(s.kwargs, axis=bad)
            batch = []
            for _ in range(3):
                b = Sample(s.args, kw, s.desc)
                b.layouts = ["as_is"] * len(s.args)
                batch.append(b)
            out.append((f"{s.desc} axis={bad!r}",
                        types.SimpleNamespace(sample=batch[0], batch=batch, seed=0)))
    return out


_RECORDS = [r for r in optable.RECORDS
            if any("axis" in s.kwargs for s in r.samples(np.random.default_rng(0),
                                                          np.dtype(r.dtypes[0])))]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("rec", _RECORDS, ids=lambda r: r.name)
def test_bad_axis_raises_numpy_type_on_every_path(rec):
    problems = []
    for desc, case in _error_cases(rec):
        if not isinstance(P.numpy_path(rec, case.sample), P.Raised):
            continue        # (NumPy accepts it: the paths-agree suite compares values)
        problems += [f"{desc}: {p}" for p in P.check_case(rec, case)]
    assert not problems, "\n".join(problems)
