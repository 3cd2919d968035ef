"""Op-table records: apply_along_axis and apply_over_axes (vectorize and frompyfunc are
classes/factories, checked in test_functional.py)."""
from optable import record, Sample, values, noncontig, F32, F64, I32, NON_COMPUTING


def _aaa(m, a, axis, kind):
    if kind == "norm":
        return m.apply_along_axis(lambda r: m.sqrt(m.sum(r * r)), axis, a)
    if kind == "outer":
        return m.apply_along_axis(lambda r: m.outer(r, r[:2]), axis, a)
    return m.apply_along_axis(lambda r, k: r[:k] * r[-1], axis, a, 2)


record("apply_along_axis", lambda rng, dt: [
    Sample((values(rng, (2, 3, 4), dt), 0, "norm")),
    Sample((values(rng, (2, 3, 4), dt), -1, "outer")),
    Sample((noncontig(rng, (3, 4), dt), 1, "cumulative")),
    Sample((values(rng, (4,), dt), 0, "norm"))],
       dtypes=(F64, F32), call=_aaa)
record("apply_over_axes", lambda rng, dt: [
    Sample((values(rng, (2, 3, 4), dt), [0, 2])), Sample((values(rng, (2, 3), dt), 1)),
    Sample((noncontig(rng, (3, 4), dt), [1, 0]))], dtypes=(F64, I32),
       call=lambda m, a, axes: m.apply_over_axes(m.sum, a, axes))
NON_COMPUTING.update({"frompyfunc"})   # a factory of host callables: test_functional.py
