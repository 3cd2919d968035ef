"""Op-table records: sorting, searching and selection (sort, argsort, lexsort, partition,
searchsorted, unique, extract, select, piecewise) and set operations (isin, intersect1d, ...)."""
import numpy as np

from optable_canon import partition_canon, argpartition_canon
from optable import record, Sample, values, noncontig, _ints, REAL, F16, F32, F64, I32, I64, \
    BOOL, C128

_DYN = "the result's size depends on the data (how many distinct or selected elements)"
_SORT_DT = REAL + (I64, F16, BOOL)
_DUPS = ("duplicates collapse into one value, which finite differences split apart; "
         "test_statistics.py checks the gradient on distinct values")


def _sort_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    out = [Sample((v((7,)),)), Sample((v((3, 5)),)), Sample((v((3, 5)),), {"axis": 0}),
           Sample((v((2, 3, 4)),), {"axis": 1}), Sample((v((3, 4)),), {"axis": None}),
           Sample((v((0, 3)),), {"axis": 0}, "empty"),
           Sample((noncontig(rng, (3, 4), dt),), {"axis": -1}, "noncontig"),
           Sample((v((6,)),), {"kind": "stable"}), Sample((v((6,)),), {"stable": True})]
    if dt.kind in "iub":      # ties: the stable kinds order them by position
        out.append(Sample((np.asarray(rng.integers(0, 3, 12)).astype(dt),), {"kind": "stable"},
                          "ties"))
    return out


def _stable_default(name):
    """ndflow's argsort without `kind` or `stable` sorts stably (the Array API's default, one
    of the orders NumPy's unspecified default permits), so NumPy's oracle is asked for the
    stable order there."""
    def call(m, *args, **kw):
        if m is np and "kind" not in kw and "stable" not in kw:
            kw = dict(kw, kind="stable")
        return getattr(m, name)(*args, **kw)
    return call


record("sort", _sort_samples, dtypes=_SORT_DT)
record("argsort", _sort_samples, dtypes=_SORT_DT, call=_stable_default("argsort"))
record("sort_complex", lambda rng, dt: [
    Sample((values(rng, (6,), dt),)), Sample((values(rng, (2, 4), dt),)),
    Sample((noncontig(rng, (3, 4), dt),))], dtypes=(F64, F32, I32, C128))


def _lexsort_samples(rng, dt):
    """The keys as separate arguments (so they are traced and batched); `stacked` passes one
    2-d array of keys instead of a tuple."""
    k = lambda s: np.asarray(rng.integers(0, 3, s)).astype(dt) if dt.kind in "iub" \
        else values(rng, s, dt)  # noqa: E731
    return [Sample((k((8,)), k((8,)))), Sample((k((8,)), k((8,)), k((8,)))),
            Sample((np.stack([k((6,)), k((6,))]),), {"stacked": True}, "2-d keys"),
            Sample((k((3, 4)), k((3, 4))), {"axis": 0}),
            Sample((k((3, 4)), k((3, 4))), {"axis": -1})]


def _lexsort_call(m, *keys, stacked=False, **kw):
    return m.lexsort(keys[0] if stacked else keys, **kw)


record("lexsort", _lexsort_samples, dtypes=(I32, F64, BOOL), call=_lexsort_call,
       unknown_dims=lambda s: "the number of keys (rows of a 2-d key array) must be static"
       if s.kwargs.get("stacked") else None)


def _partition_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((9,)), 4)), Sample((v((9,)), -2)), Sample((v((9,)), [1, 5])),
            Sample((v((3, 7)), 3)), Sample((v((3, 7)), 1), {"axis": 0}),
            Sample((v((2, 3, 4)), (0, 3)), {"axis": -1}), Sample((v((12,)), 6), {"axis": None}),
            Sample((noncontig(rng, (4, 5), dt), 2), desc="noncontig")] + (
        [Sample((np.asarray(rng.integers(0, 4, 40)).astype(dt), 17), desc="ties")]
        if dt.kind in "iu" else [])


record("partition", _partition_samples, dtypes=REAL + (I64,), device_canon=partition_canon)
record("argpartition", _partition_samples, dtypes=REAL + (I64,),
       device_canon=argpartition_canon)


def _searchsorted_samples(rng, dt):
    a = np.sort(values(rng, (8,), dt))
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((a, v((5,)))), Sample((a, v((2, 3))), {"side": "right"}),
            Sample((a, v(()))), Sample((a, a.copy()), {"side": "left"}, "ties"),
            Sample((a, a.copy()), {"side": "right"}, "ties"),
            Sample((values(rng, (6,), dt), v((4,))),
                   {"sorter": np.argsort(values(rng, (6,), dt))}, "sorter"),
            Sample((a, 0.5), desc="python scalar"), Sample((np.zeros(0, dt), v((3,))),
                                                           desc="empty")]


def _searchsorted_sorter_fix(rng, dt):
    out = _searchsorted_samples(rng, dt)
    for s in out:        # the sorter must sort its own array
        if s.desc == "sorter":
            s.kwargs["sorter"] = np.argsort(s.args[0])
    return out


record("searchsorted", _searchsorted_sorter_fix, dtypes=REAL)


def _unique_samples(rng, dt):
    def v(s):
        if dt.kind == "b":
            return values(rng, s, dt)
        pool = values(rng, (4,), dt)
        return pool[rng.integers(0, 4, s)]
    out = [Sample((v((10,)),)), Sample((v((3, 4)),)),
           Sample((v((10,)),), {"return_index": True, "return_inverse": True,
                                "return_counts": True}),
           Sample((v((3, 4)),), {"return_inverse": True}),
           Sample((np.repeat(v((2, 3)), 2, axis=0),), {"axis": 0, "return_index": True,
                                                       "return_inverse": True,
                                                       "return_counts": True}, "rows"),
           Sample((np.repeat(v((3, 2)), 2, axis=1),), {"axis": 1}, "columns"),
           Sample((np.zeros(0, dt),), {"return_counts": True}, "empty"),
           Sample((noncontig(rng, (3, 4), dt),), {"return_index": True}, "noncontig")]
    if dt.kind == "f":
        a = np.array([2.0, np.nan, 1.0, np.nan, 2.0], dt)
        out.append(Sample((a,), {"return_counts": True}, "nans"))
        out.append(Sample((a,), {"equal_nan": False, "return_index": True}, "nans"))
    return out


record("unique", _unique_samples, dtypes=(F64, F32, I32, BOOL), vmap=False, vmap_reason=_DYN,
       diff_args=(), grad_reason=_DUPS)


def _unique_api_samples(rng, dt):
    pool = values(rng, (5,), dt)
    out = [Sample((pool[rng.integers(0, 5, 12)],)),
           Sample((pool[rng.integers(0, 5, (3, 4))],), desc="2-d"),
           Sample((np.zeros(0, dt),), desc="empty")]
    if dt.kind == "f":
        out.append(Sample((np.array([3.0, np.nan, 1.0, np.nan, 3.0], dt),), desc="nans"))
    return out


def _sorted_unique_call(name):
    """ndflow's unique_* against NumPy's sorted `unique` (NaNs distinct): NumPy's own
    unique_values may return hash-table order, which the standard allows but consumers such as
    scikit-learn do not expect, so ndflow sorts."""
    flags = {"unique_all": (True, True, True), "unique_counts": (False, False, True),
             "unique_inverse": (False, True, False), "unique_values": (False, False, False)}

    def call(m, x):
        if m is not np:
            return getattr(m, name)(x)
        i, inv, c = flags[name]
        r = np.unique(x, return_index=i, return_inverse=inv, return_counts=c, equal_nan=False)
        if not isinstance(r, tuple):
            return r
        r = list(r)
        if inv:
            r[1 + i] = r[1 + i].reshape(np.shape(x))
        return tuple(r)
    return call


for _n in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
    record(_n, _unique_api_samples, dtypes=(F64, I32, I64), vmap=False, vmap_reason=_DYN,
           diff_args=(), grad_reason=_DUPS, call=_sorted_unique_call(_n))


def _extract_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((values(rng, (3, 4), BOOL), v((3, 4)))),
            Sample((_ints(rng, (6,), 3), v((6,))), desc="int condition"),
            Sample((values(rng, (2, 3), BOOL), v((2, 3, 2))), desc="shorter condition")]


def _select_samples(rng, dt):
    """Lists of conditions and choices (flattened into arguments by `_select_flat`)."""
    v = lambda s: values(rng, s, dt)  # noqa: E731
    c = lambda s: values(rng, s, BOOL)  # noqa: E731
    return [Sample(([c((3, 4)), c((3, 4))], [v((3, 4)), v((3, 4))])),
            Sample(([c((3, 4)), c((4,))], [v((3, 4)), v(())]), {"default": 1}),
            Sample(([c((2, 3))], [v((3,))]), {"default": v(())}),
            Sample(([c((2, 3)), c((2, 3))], [v((2, 3)), 2.5]), desc="python choice")]


def _select_flat(rng, dt):
    """select's lists flattened into arguments (so the harness sees the arrays)."""
    out = []
    for s in _select_samples(rng, dt):
        conds, choices = s.args
        out.append(Sample(tuple(conds) + tuple(choices), dict(s.kwargs, _n=len(conds)),
                          s.desc))
    return out


def _select_unflatten(m, *a, _n, **kw):
    return m.select(list(a[:_n]), list(a[_n:]), **kw)


def _piecewise_samples(rng, dt):
    return [Sample((values(rng, (3, 4), dt),), {"which": 0}),
            Sample((values(rng, (7,), dt),), {"which": 1}),
            Sample((values(rng, (), dt),), {"which": 0}, "0-d"),
            Sample((values(rng, (5,), dt),), {"which": 2}, "otherwise")]


def _piecewise_call(m, x, which):
    if which == 0:
        return m.piecewise(x, [x < 0, x >= 0], [lambda v: -v * 2, lambda v: v * v])
    if which == 1:
        return m.piecewise(x, [x < -1, (x >= -1) & (x < 1), x >= 1], [0, lambda v: v ** 3,
                                                                      lambda v: v + 1])
    return m.piecewise(x, [x < 0.5], [lambda v: m.sin(v), lambda v: v * 0.5])


record("piecewise", _piecewise_samples, dtypes=(F64, F32), call=_piecewise_call)


# ---- sets ---------------------------------------------------------------------------------
def _distinct(rng, n, dt):
    """n distinct values (sorted), random but always n of them: structure never depends on
    the generator."""
    base = np.arange(n) * 3 + rng.integers(0, 3, n)
    if dt.kind in "iu":
        return (base - n).astype(dt)
    return (base * 0.25 + values(rng, (n,), dt, "positive") * 0.1).astype(dt)


def _set_samples(rng, dt):
    pool = values(rng, (6,), dt)
    v = lambda s: pool[rng.integers(0, 6, s)]  # noqa: E731
    return [Sample((v((7,)), v((5,)))), Sample((v((3, 3)), v((4,))), desc="2-d"),
            Sample((v((6,)), v((0,))), desc="empty"), Sample((v((4,)), v((4,)))),
            Sample((_distinct(rng, 5, dt), _distinct(rng, 4, dt)), {"assume_unique": True},
                   "assume_unique")]


def _isin_samples(rng, dt):
    return _set_samples(rng, dt) + [
        Sample((values(rng, (3, 4), dt), values(rng, (5,), dt)), {"invert": True}, "invert")]


record("isin", _isin_samples, dtypes=(F64, I32, I64))
record("union1d", lambda rng, dt: [s for s in _set_samples(rng, dt)
                                   if "assume_unique" not in s.kwargs], dtypes=(F64, I32),
       vmap=False, vmap_reason=_DYN, diff_args=(), grad_reason=_DUPS)
record("setxor1d", _set_samples, dtypes=(F64, I32), vmap=False, vmap_reason=_DYN,
       diff_args=(), grad_reason=_DUPS)
record("setdiff1d", _set_samples, dtypes=(F64, I32), vmap=False, vmap_reason=_DYN,
       diff_args=(), grad_reason=_DUPS)
record("intersect1d", lambda rng, dt: _set_samples(rng, dt) + [
    Sample(s.args, dict(s.kwargs, return_indices=True), s.desc + " indices")
    for s in _set_samples(rng, dt)], dtypes=(F64, I32), vmap=False, vmap_reason=_DYN,
       diff_args=(), grad_reason=_DUPS)


# nothing to differentiate: integer or boolean results (indices, positions, membership), or a
# complex result from real input (sort's own record covers the gradient of sorting values)
import optable as _optable  # noqa: E402
for _reason, _names in {
        "integer results (indices, positions)": ("argsort", "lexsort", "argpartition",
                                                 "searchsorted"),
        "boolean results (membership)": ("isin",),
        "complex result; sorting's gradient is checked by sort's record": ("sort_complex",)}.items():
    for _n in _names:
        _r = next(r for r in _optable.RECORDS if r.name == _n)
        _r.diff_args, _r.grad_reason = (), _reason
