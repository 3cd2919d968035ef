"""Statistics, sorting and sets beyond the op table: results with NaN or at the ends of their
domain (no finite differences there), data-dependent bin counts, errors as NumPy raises them,
vectorized_map refusing data-dependent sizes by name, and gradients the table cannot sample
(unique's values, sort through ties)."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

from helpers import assert_same

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning")]

PATHS = ["eager", "tape", "function"]


def _run(path, fn, *args):
    """fn(tnp, *args) eagerly (NumPy's fast path), under a tape (the composed path) or
    compiled."""
    xs = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    if path == "tape":
        with nf.GradientTape():
            return fn(tnp, *xs)
    if path == "function":
        pos = [i for i, a in enumerate(xs) if isinstance(a, tnp.ndarray)]

        def g(*arrs):
            ys = list(xs)
            for i, a in zip(pos, arrs):
                ys[i] = a
            return fn(tnp, *ys)
        return nf.function(g)(*[xs[i] for i in pos])
    return fn(tnp, *xs)


_NAN = np.array([[1.0, np.nan, 3.0, 0.5], [np.nan, np.nan, np.nan, np.nan],
                 [2.0, -1.0, 4.0, 0.25]])
_CASES = [
    ("median nan slice", lambda m, a: m.median(a, axis=1), _NAN),
    ("median all", lambda m, a: m.median(a), _NAN),
    ("quantile nan slice", lambda m, a: m.quantile(a, [0.0, 0.5, 1.0], axis=1), _NAN),
    ("quantile ends", lambda m, a: m.quantile(a, [0.0, 1.0], axis=0), _NAN[[0, 2]]),
    ("percentile ends", lambda m, a: m.percentile(a, [0, 100], axis=1, method="nearest"),
     _NAN[[0, 2]]),
    ("quantile ints", lambda m, a: m.quantile(a, 0.5), np.arange(7)),
    ("quantile lower ints", lambda m, a: m.quantile(a, [0.3, 0.9], method="lower"),
     np.arange(9)),
    ("quantile int q", lambda m, a: m.quantile(a, np.array([0, 1]), axis=0), _NAN[[0, 2]]),
    ("nanmedian all-nan", lambda m, a: m.nanmedian(a, axis=1), _NAN),
    ("nanquantile all-nan", lambda m, a: m.nanquantile(a, [0.25, 1.0], axis=1), _NAN),
    ("nanpercentile methods", lambda m, a: m.nanpercentile(a, 40, axis=1, method="hazen"),
     _NAN),
    ("nanmean all-nan", lambda m, a: m.nanmean(a, axis=1), _NAN),
    ("nanvar all-nan", lambda m, a: m.nanvar(a, axis=1, ddof=1), _NAN),
    ("nanstd", lambda m, a: m.nanstd(a, axis=0), _NAN),
    ("nanmax all-nan", lambda m, a: m.nanmax(a, axis=1), _NAN),
    ("nanmin all-nan", lambda m, a: m.nanmin(a, axis=1), _NAN),
    ("nanmin initial", lambda m, a: m.nanmin(a, axis=1, initial=0.0), _NAN),
    ("nansum all-nan", lambda m, a: m.nansum(a, axis=1), _NAN),
    ("nanprod", lambda m, a: m.nanprod(a, axis=1), _NAN),
    ("nancumsum", lambda m, a: m.nancumsum(a, axis=1), _NAN),
    ("fmax reduce all-nan", lambda m, a: m.fmax.reduce(a, axis=1), _NAN),
    ("histogram constant", lambda m, a: m.histogram(a, 3), np.full(5, 1.5)),
    ("histogram ints", lambda m, a: m.histogram(a, 4), np.array([1, 5, 2, 2, 9, 3])),
    ("histogram outside range", lambda m, a: m.histogram(a, 3, range=(0.0, 1.0)),
     np.array([-1.0, 0.0, 0.2, 1.0, 1.5, 0.999])),
    ("histogram_bin_edges constant", lambda m, a: m.histogram_bin_edges(a, 4),
     np.full(3, -2.0)),
    ("gradient uniform coordinates", lambda m, f, x: m.gradient(f, x), np.arange(5.0) ** 2,
     np.arange(5.0) * 0.5),
    ("cov single variable", lambda m, a: m.cov(a), np.array([1.0, 2.0, 4.0])),
    ("corrcoef single variable", lambda m, a: m.corrcoef(a), np.array([1.0, 2.0, 4.0])),
    ("average int", lambda m, a: m.average(a, axis=0, returned=True), np.arange(6).reshape(3, 2)),
    ("unique nan", lambda m, a: m.unique(a, return_counts=True, return_inverse=True),
     np.array([np.nan, 1.0, np.nan, 1.0, -0.0, 0.0])),
    ("unique_values nan", lambda m, a: m.unique_values(a), np.array([np.nan, 1.0, np.nan])),
    ("sort nan", lambda m, a: m.sort(a), np.array([np.nan, 1.0, -np.inf, 0.0])),
    ("isin nan", lambda m, a, b: m.isin(a, b), np.array([np.nan, 1.0, 2.0]),
     np.array([np.nan, 2.0])),
    ("searchsorted ints into floats", lambda m, a, v: m.searchsorted(a, v),
     np.array([0.5, 1.5, 2.5]), np.array([0, 1, 2, 3])),
    ("digitize right", lambda m, x, b: m.digitize(x, b, right=True), np.array([0.0, 1.0, 2.5]),
     np.array([0.0, 1.0, 2.0])),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_special_cases_match_numpy(case, path):
    name, fn, *args = case
    want = fn(np, *args)
    got = _run(path, fn, *args)
    assert_same(got, want, 1e-12, 1e-14, ctx=f"{name} ({path})")


@pytest.mark.parametrize("bins", ["auto", "fd", "doane", "scott", "stone", "rice", "sturges",
                                  "sqrt"])
def test_histogram_estimated_bins(bins):
    a = np.random.default_rng(0).standard_normal(200)
    for path in ("eager", "tape"):
        got = _run(path, lambda m, x: m.histogram(x, bins), a)
        assert_same(got, np.histogram(a, bins), 1e-12, 0, ctx=f"{bins} ({path})")
    with pytest.raises(ValueError, match="bins='auto'|estimated"):
        nf.function(lambda x: tnp.histogram(x, "auto"))(tnp.asarray(a))


@pytest.mark.parametrize("call,exc", [
    (lambda m: m.quantile(m.asarray([1.0, 2.0]), 1.5), ValueError),
    (lambda m: m.percentile(m.asarray([1.0, 2.0]), -1), ValueError),
    (lambda m: m.quantile(m.asarray([1.0, 2.0]), 0.5, method="bogus"), ValueError),
    (lambda m: m.quantile(m.asarray([1.0, 2.0]), 0.5, weights=m.asarray([1.0, 1.0])),
     ValueError),
    (lambda m: m.quantile(m.asarray([1j, 2.0]), 0.5), TypeError),
    (lambda m: m.average(m.ones((2, 3)), weights=m.ones(3)), TypeError),
    (lambda m: m.average(m.ones((2, 3)), axis=0, weights=m.ones(3)), ValueError),
    (lambda m: m.average(m.ones(3), weights=m.zeros(3)), ZeroDivisionError),
    (lambda m: m.diff(m.asarray(1.0)), ValueError),
    (lambda m: m.diff(m.ones(3), n=-1), ValueError),
    (lambda m: m.bincount(m.asarray([1, -1])), ValueError),
    (lambda m: m.bincount(m.asarray([1.5])), TypeError),
    (lambda m: m.bincount(m.ones((2, 2), dtype=int)), ValueError),
    (lambda m: m.digitize(m.ones(3), m.asarray([1.0, 3.0, 2.0])), ValueError),
    (lambda m: m.histogram(m.ones(3), bins=0), ValueError),
    (lambda m: m.histogram(m.ones(3), bins="bogus"), ValueError),
    (lambda m: m.histogram(m.ones(3), bins=m.asarray([1.0, 0.0])), ValueError),
    (lambda m: m.histogram(m.ones(3), range=(2.0, 1.0)), ValueError),
    (lambda m: m.histogram(m.ones(3), weights=m.ones(2)), ValueError),
    (lambda m: m.histogramdd(m.ones((4, 2)), bins=[2, 2, 2]), ValueError),
    (lambda m: m.cov(m.ones((2, 2, 2))), ValueError),
    (lambda m: m.gradient(m.ones(1)), ValueError),
    (lambda m: m.gradient(m.ones(4), edge_order=3), ValueError),
    (lambda m: m.partition(m.ones(3), 5), ValueError),
    (lambda m: m.searchsorted(m.ones((2, 2)), 1.0), ValueError),
    (lambda m: m.sort(m.ones(3), order="x"), ValueError),
    (lambda m: m.select([m.ones(2)], [m.ones(2)]), TypeError),
    (lambda m: m.select([], []), ValueError),
    (lambda m: m.piecewise(m.ones(3), [m.ones(3, dtype=bool)], [1, 2, 3]), ValueError),
    (lambda m: m.ediff1d(m.ones(3, dtype=int), to_begin=m.asarray([0.5])), TypeError),
    (lambda m: m.nanargmax(m.asarray([np.nan, np.nan])), ValueError),
    (lambda m: m.cumulative_sum(m.ones((2, 2))), ValueError),
    (lambda m: m.lexsort([]), TypeError),
])
@pytest.mark.parametrize("path", ["eager", "tape"])
def test_errors_match_numpy(call, exc, path):
    with pytest.raises(exc):
        call(np)
    with pytest.raises(exc):
        if path == "tape":
            with nf.GradientTape():
                call(tnp)
        else:
            call(tnp)


@pytest.mark.parametrize("name,fn", [
    ("unique", lambda x: tnp.unique(x)), ("unique_values", lambda x: tnp.unique_values(x)),
    ("unique", lambda x: tnp.unique_counts(x)[0]), ("extract", lambda x: tnp.extract(x > 0, x)),
    ("bincount", lambda x: tnp.bincount(tnp.astype(x > 0, int))),
    ("union1d", lambda x: tnp.union1d(x, x)), ("setdiff1d", lambda x: tnp.setdiff1d(x, x[:1])),
    ("intersect1d", lambda x: tnp.intersect1d(x, x)),
    ("setxor1d", lambda x: tnp.setxor1d(x, x[:2]))])
def test_data_dependent_sizes_refuse_vectorized_map_by_name(name, fn):
    xs = tnp.asarray(np.random.default_rng(0).standard_normal((3, 5)))
    with pytest.raises(ValueError, match=name):
        nf.vectorized_map(fn, xs)


def test_data_dependent_sizes_trace_with_unknown_dims():
    f = nf.function(lambda x: (tnp.unique(x), tnp.bincount(tnp.astype(x, int) % 4)))
    x = np.array([3.0, 1.0, 3.0, 2.0, 7.0])
    u, c = f(tnp.asarray(x))
    assert_same(u, np.unique(x))
    assert_same(c, np.bincount(x.astype(int) % 4))
    u2, c2 = f(tnp.asarray(np.array([5.0, 5.0, 5.0, 1.0, 2.0])))
    assert_same(u2, np.array([1.0, 2.0, 5.0]))
    assert f.experimental_get_tracing_count() == 1


def test_unique_gradient_goes_to_first_occurrences():
    x = tnp.asarray(np.array([3.0, 1.0, 3.0, 2.0, 1.0]))
    with nf.GradientTape() as t:
        t.watch(x)
        u, counts = tnp.unique(x, return_counts=True)
        loss = tnp.sum(u * tnp.asarray([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(t.gradient(loss, x).numpy(), [100.0, 1.0, 0.0, 10.0, 0.0])


@pytest.mark.parametrize("fn", [
    lambda m, x: m.unique(x), lambda m, x: m.unique_values(x),
    lambda m, x: m.union1d(x, x[:2] * 2.0), lambda m, x: m.setdiff1d(x, x[:2]),
    lambda m, x: m.intersect1d(x, x[1:3] * 1.0), lambda m, x: m.setxor1d(x, x[:2] * 3.7),
    lambda m, x: m.intersect1d(x, x[1:4], return_indices=True)[0]])
def test_set_gradients_on_distinct_values(fn):
    """Distinct values: each output is one input element, so the gradient is a 0/1 selection
    (checked against finite differences)."""
    x0 = np.array([0.3, -1.2, 2.5, 0.9, -0.4])
    rng = np.random.default_rng(1)
    out0 = fn(np, x0)
    ct = rng.standard_normal(np.shape(out0))
    x = tnp.asarray(x0)
    with nf.GradientTape() as t:
        t.watch(x)
        loss = tnp.sum(fn(tnp, x) * ct)
    g = t.gradient(loss, x, unconnected_gradients="zero").numpy()
    h = 1e-6
    num = np.array([(np.sum(fn(np, x0 + h * e) * ct) - np.sum(fn(np, x0 - h * e) * ct)) / (2 * h)
                    for e in np.eye(5)])
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def test_sort_gradient_routes_through_the_permutation_also_batched():
    x = np.array([[3.0, 1.0, 2.0], [0.5, 0.25, 4.0]])
    w = np.array([1.0, 10.0, 100.0])

    def per(v):
        with nf.GradientTape() as t:
            t.watch(v)
            loss = tnp.sum(tnp.sort(v) * tnp.asarray(w))
        return t.gradient(loss, v)
    got = nf.vectorized_map(per, tnp.asarray(x))
    want = np.stack([w[np.argsort(np.argsort(r))] for r in x])
    np.testing.assert_allclose(got.numpy(), want)


def test_quantile_gradient_is_the_interpolation_weights():
    x = tnp.asarray(np.array([4.0, 1.0, 3.0, 2.0, 0.0]))
    with nf.GradientTape() as t:
        t.watch(x)
        q = tnp.quantile(x, 0.3)          # virtual index 1.2 between 1.0 and 2.0
    np.testing.assert_allclose(t.gradient(q, x).numpy(), [0, 0.8, 0, 0.2, 0], atol=1e-12)


def test_cumsum_gradient_is_the_reversed_cumsum():
    x = tnp.asarray(np.arange(4.0))
    ct = np.array([1.0, 2.0, 3.0, 4.0])
    with nf.GradientTape() as t:
        t.watch(x)
        loss = tnp.sum(tnp.cumsum(x) * tnp.asarray(ct))
    np.testing.assert_allclose(t.gradient(loss, x).numpy(), np.cumsum(ct[::-1])[::-1])


def test_cumulative_ops_compile_into_one_graph_and_vectorize():
    f = nf.function(lambda x: tnp.cumprod(x, axis=1) + tnp.cumsum(x, axis=1))
    x = np.random.default_rng(0).uniform(0.5, 2.0, (3, 4))
    np.testing.assert_allclose(f(tnp.asarray(x)).numpy(),
                               np.cumprod(x, axis=1) + np.cumsum(x, axis=1))
    v = nf.vectorized_map(lambda r: tnp.median(r), tnp.asarray(x))
    np.testing.assert_allclose(v.numpy(), np.median(x, axis=1))


def test_method_names_of_ndarray_reach_the_new_functions():
    a = tnp.asarray(np.array([3.0, 1.0, 2.0]))
    assert_same(a.cumsum(), np.cumsum([3.0, 1.0, 2.0]))
    assert_same(a.argsort(), np.argsort([3.0, 1.0, 2.0]))
    a.sort()
    assert_same(a, np.array([1.0, 2.0, 3.0]))


# ------------------------------------------------------------------ properties on random shapes
from hypothesis import given, settings, strategies as st, HealthCheck  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

_SETTINGS = settings(max_examples=30, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def _array_and_axis(draw, dtype=np.float64, min_dims=1):
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=5))
    elems = st.floats(-10, 10, allow_subnormal=False) if np.dtype(dtype).kind == "f" else \
        st.integers(-4, 4)
    a = draw(hnp.arrays(dtype, shape, elements=elems))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return a, axis


_FUNCS = {
    "sort": lambda m, a, ax: m.sort(a, axis=ax),
    "argsort stable": lambda m, a, ax: m.argsort(a, axis=ax, kind="stable"),
    "cumsum": lambda m, a, ax: m.cumsum(a, axis=ax),
    "cumprod": lambda m, a, ax: m.cumprod(a, axis=ax),
    "maximum.accumulate": lambda m, a, ax: m.maximum.accumulate(a, axis=ax),
    "median": lambda m, a, ax: m.median(a, axis=ax),
    "quantile": lambda m, a, ax: m.quantile(a, [0.1, 0.5, 0.8], axis=ax),
    "percentile nearest": lambda m, a, ax: m.percentile(a, 35, axis=ax, method="nearest"),
    "diff": lambda m, a, ax: m.diff(a, axis=ax),
    "ptp": lambda m, a, ax: m.ptp(a, axis=ax),
    "subtract.reduce": lambda m, a, ax: m.subtract.reduce(a, axis=ax),
    "logaddexp.reduce": lambda m, a, ax: m.logaddexp.reduce(a, axis=ax),
    "partition": lambda m, a, ax: m.partition(a, 0, axis=ax),
}


# logaddexp has float loops only: its integer case is not generated
@pytest.mark.parametrize("name,dtype", [(n, d) for n in sorted(_FUNCS)
                                        for d in (np.float64, np.int64)
                                        if not (n == "logaddexp.reduce" and d is np.int64)])
def test_random_shapes_match_numpy(name, dtype):
    fn = _FUNCS[name]

    @_SETTINGS
    @given(_array_and_axis(dtype))
    def check(aa):
        a, ax = aa
        want = fn(np, a, ax)
        for path in ("eager", "tape"):
            got = _run(path, lambda m, x: fn(m, x, ax), a)
            assert_same(got, want, 1e-10, 1e-12, ctx=f"{name} {a.shape} axis={ax} ({path})")
    check()


@_SETTINGS
@given(_array_and_axis(np.int64))
def test_unique_on_random_shapes_matches_numpy(aa):
    a, ax = aa
    for kw in ({}, {"return_index": True, "return_inverse": True, "return_counts": True},
               {"axis": ax, "return_inverse": True}):
        want = np.unique(a, **kw)
        for path in ("eager", "tape"):
            got = _run(path, lambda m, x: m.unique(x, **kw), a)
            assert_same(got, want, ctx=f"unique {a.shape} {kw} ({path})")


@pytest.mark.parametrize("nan_rows", [(), (0,), (1, 2), (0, 1, 2)])
def test_vectorized_quantile_dtype_is_the_loops_stacked_dtype(nan_rows):
    """NumPy's 0-d quantile of float32 data with a float64 q is float64, but float32 when the
    result is NaN (the data's own NaN). One batch holds one dtype: vectorized_map gives the
    dtype the loop's results stack to (float32 only when every example's is), where it took
    the first example's, so a batch whose first row held NaN came back float32."""
    x = np.random.default_rng(3).standard_normal((3, 2, 5)).astype(np.float32)
    for i in nan_rows:
        x[i, 1, 2] = np.nan
    q = np.array([1.0, 43.0, 99.0])
    loop = np.stack([np.percentile(x[i], q[i]) for i in range(3)])
    got = nf.vectorized_map(lambda a: tnp.percentile(a[0], a[1]), (x, q)).numpy()
    assert got.dtype == loop.dtype and np.array_equal(got, loop, equal_nan=True)
