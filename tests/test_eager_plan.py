"""The eager backward plan against the reference backward loop, bit for bit, on the op table.

In plain eager execution `GradientTape._gradient` runs the backward pass as the eager plan
(autodiff/eager_plan.py: host rules on NumPy buffers, sums in place, cotangent donation);
with the plan off (`eager_plan.ENABLED`) the same pass runs the reference loop
(`GradientTape._backward`). For every op-table record with a differentiable input, in each of
its float dtypes, every sample's gradient is taken both ways and must be the same: the same
sources get None (or zeros, with `unconnected_gradients='zero'`), and every gradient has the
same dtype, shape and bits. The loss reads each float output twice (two cotangents), so the
output's cotangent is summed (in place, in the plan) before the function's own records run;
a persistent tape's second gradient must be its first.
"""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.autodiff import eager_plan as P

import test_optable as T
from optable import RECORDS
from helpers import to_nf, value_bits

pytestmark = T.pytestmark


def _float(dt):
    return dt.kind == "f" or dt.name == "bfloat16"


_CASES = [pytest.param(r, np.dtype(d), id="%s-%s" % (r.name, np.dtype(d).name))
          for r in RECORDS if r.diff_args != () for d in r.dtypes if _float(np.dtype(d))]


def _gradients(rec, s, pos, cts, how):
    """The gradients of sum(o * c1) + sum(o * c2) over the float outputs o, for the inputs at
    `pos`: (as the first call gives them, as a persistent tape's second call gives them)."""
    xs = [to_nf(a) for a in s.args]
    with nf.GradientTape(persistent=how == "persistent") as tape:
        for i in pos:
            tape.watch(xs[i])
        outs = T._float_leaves(rec.call(tnp, *xs, **s.kwargs))
        loss = sum(tnp.sum(o * c1) + tnp.sum(o * c2) for o, (c1, c2) in zip(outs, cts))
    sources = [xs[i] for i in pos]
    unconnected = "zero" if how == "zero" else "none"
    first = tape.gradient(loss, sources, unconnected_gradients=unconnected)
    again = tape.gradient(loss, sources) if how == "persistent" else first
    return [value_bits(g) for g in first], [value_bits(g) for g in again]


def _samples(rec, dt):
    """(sample, the differentiable positions, the loss's weights per float output, how the
    gradient is asked for) for each of the record's samples with a gradient to take."""
    rng = T._seeded(rec, dt, 30)
    for k, s in enumerate(rec.samples(rng, dt)):
        pos = T._diff_positions(rec, s)
        if not pos:
            continue
        with np.errstate(all="ignore"):
            outs = T._float_leaves(T._eval(rec, s))
        if not outs:
            continue
        cts = [tuple(tnp.asarray(rng.standard_normal(o.shape).astype(o.dtype)) for _ in "12")
               for o in outs]
        yield s, pos, cts, ("none", "zero", "persistent")[k % 3]


@pytest.mark.parametrize("rec,dt", _CASES)
def test_eager_plan_is_the_reference_loop_bit_for_bit(rec, dt, monkeypatch):
    runs = []
    real = P.backward
    monkeypatch.setattr(P, "backward", lambda *a: runs.append(1) or real(*a))
    compared = 0
    for s, pos, cts, how in _samples(rec, dt):
        with np.errstate(all="ignore"):
            n = len(runs)
            plan = _gradients(rec, s, pos, cts, how)
            assert len(runs) > n, f"{rec.name}{s!r}: the gradient did not run as the eager plan"
            with monkeypatch.context() as m:
                m.setattr(P, "ENABLED", False)
                reference = _gradients(rec, s, pos, cts, how)
            assert len(runs) == n + (2 if how == "persistent" else 1)
        for g, r, i in zip(plan[0], reference[0], pos):
            assert (g is None) == (r is None), \
                f"{rec.name}{s!r} ({how}): input {i}: plan {g is None and 'None'}, " \
                f"reference {r is None and 'None'}"
            assert g == r, f"{rec.name}{s!r} ({how}): input {i}: the plan's gradient differs " \
                           f"from the reference loop's"
        assert plan[1] == plan[0] and reference[1] == reference[0], \
            f"{rec.name}{s!r}: a persistent tape's second gradient differs from its first"
        compared += 1
    assert compared or not any(_float(np.dtype(d)) for d in rec.dtypes), rec.name
