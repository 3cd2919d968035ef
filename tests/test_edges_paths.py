"""Edge inputs on every path: eager, under a recording tape, compiled by nf.function (with
unknown sizes where the input has a size), inside vectorized_map -- each against NumPy (values,
dtype, shape, the exception type where NumPy raises, its RuntimeWarning where it warns).

The cases are the ones where a composite's kernel and its composition used to disagree
(tests/test_composites.py): NumPy's legacy rule that lets some functions take the integer axis
0 or -1 of a 0-d array (and not others: mean, sort, partition, flip), a kth out of range on an
empty array, cov/corrcoef of too few observations, searchsorted's sorter checks, NaN bins in
digitize, histogram2d of 0-d input, `where` masks that would enlarge the reduced array."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

X0 = np.array(2.5)                 # the 0-d input
NAN0 = np.array(np.nan)


def _c(name, fn, x=X0, grad=None):
    return pytest.param(fn, x, grad, id=name)


# (fn(module, x), input, d sum(fn(x)) / dx where the path differentiates, or None)
CASES = [
    *[_c(f"{n}-axis{ax}", (lambda n, ax: lambda m, x: getattr(m, n)(x, axis=ax))(n, ax))
      for n in ("all", "any", "amax", "amin", "max", "min", "prod", "ptp", "argmax", "argmin",
                "argsort", "cumprod", "nanargmax", "nanargmin", "nancumprod", "nanmax", "nanmin",
                "nanmean", "nanprod", "nanstd", "nanvar", "squeeze", "count_nonzero")
      for ax in (0, -1)],
    *[_c(f"{n}-axis{ax}", (lambda n, ax: lambda m, x: getattr(m, n)(x, axis=ax))(n, ax), grad=1.0)
      for n in ("sum", "cumsum", "nansum", "nancumsum") for ax in (0, -1)],
    _c("sum-keepdims", lambda m, x: m.sum(x, axis=0, keepdims=True), grad=1.0),
    _c("prod-initial", lambda m, x: m.prod(x, axis=-1, initial=3.0), grad=3.0),
    _c("max-initial", lambda m, x: m.max(x, axis=0, initial=5.0)),
    _c("argmax-keepdims", lambda m, x: m.argmax(x, axis=-1, keepdims=True)),
    _c("nanmin-nan", lambda m, x: m.nanmin(x, axis=0), NAN0),
    _c("nanmean-nan", lambda m, x: m.nanmean(x, axis=0), NAN0),
    _c("nanargmax-nan", lambda m, x: m.nanargmax(x, axis=0), NAN0),
    _c("nanvar-ddof1", lambda m, x: m.nanvar(x, axis=0, ddof=1)),
    _c("cumulative_sum", lambda m, x: m.cumulative_sum(x), grad=1.0),
    _c("cumulative_sum-initial", lambda m, x: m.cumulative_sum(x, axis=0, include_initial=True),
       grad=1.0),
    _c("cumulative_prod-axis-1", lambda m, x: m.cumulative_prod(x, axis=-1)),
    _c("argpartition", lambda m, x: m.argpartition(x, 0, axis=0)),
    _c("take", lambda m, x: m.take(x, np.array([0, 0]), axis=-1), grad=2.0),
    _c("compress", lambda m, x: m.compress([True], x, axis=0), grad=1.0),
    _c("repeat", lambda m, x: m.repeat(x, 3, axis=0), grad=3.0),
    _c("lexsort", lambda m, x: m.lexsort([x, x], axis=-1)),
    _c("method-sum", lambda m, x: x.sum(axis=-1), grad=1.0),
    _c("method-cumsum", lambda m, x: x.cumsum(axis=0), grad=1.0),
    _c("method-argmax", lambda m, x: x.argmax(axis=0)),
    _c("method-repeat", lambda m, x: x.repeat(2, axis=-1), grad=2.0),
    _c("argpartition-axisNone", lambda m, x: m.argpartition(x, -1, axis=None)),
    # NumPy refuses these on 0-d (with these exception types)
    *[_c(f"{n}-axis{ax}-refused", (lambda n, ax: lambda m, x: getattr(m, n)(x, axis=ax))(n, ax))
      for n in ("mean", "std", "var", "sort", "flip", "median", "average", "gradient", "unique",
                "trapezoid", "cumsum", "sum", "argmax", "cumulative_sum")
      for ax in ((1,) if n in ("cumsum", "sum", "argmax", "cumulative_sum") else (0, -1))],
    _c("take-axis1-refused", lambda m, x: m.take(x, 0, axis=1)),
    _c("repeat-axis1-refused", lambda m, x: m.repeat(x, 2, axis=1)),
    _c("method-mean-refused", lambda m, x: x.mean(axis=0)),
    _c("method-sort-refused", lambda m, x: m.array(x, copy=True).sort(axis=0)),
    _c("sum-tuple-axis-refused", lambda m, x: m.sum(x, axis=(0,))),
    _c("squeeze-tuple-axis-refused", lambda m, x: m.squeeze(x, axis=(0,))),
    _c("partition-refused", lambda m, x: m.partition(x, 0, axis=0)),
    _c("argpartition-kth-refused", lambda m, x: m.argpartition(x, 1, axis=0)),
    _c("histogram2d-refused", lambda m, x: m.histogram2d(x, m.ones(3))[0]),
    # `where` masks: broadcast to the array, never the array to the mask
    _c("sum-where-axis1", lambda m, x: m.sum(x, axis=1, where=np.ones((3, 4), bool))),
    _c("nansum-where-enlarges", lambda m, x: m.nansum(x, axis=0, where=np.ones((3, 4), bool))),
    _c("mean-where-enlarges", lambda m, x: m.mean(x, where=np.ones((2, 3, 4), bool)),
       np.ones((3, 4))),
    _c("mean-where-slices", lambda m, x: m.mean(x, axis=0, where=np.array([1, 0, 1, 1], bool)),
       np.arange(12.0).reshape(3, 4)),
    _c("any-where", lambda m, x: m.any(x, axis=1, where=np.array([1, 0, 1, 1], bool)),
       np.arange(12.0).reshape(3, 4)),
    # empty arrays: kth is not range-checked
    _c("partition-empty", lambda m, x: m.partition(x, 5), np.zeros(0)),
    _c("partition-empty-list", lambda m, x: m.partition(x, [1, -7]), np.zeros(0)),
    _c("argpartition-empty", lambda m, x: m.argpartition(x, 9, axis=1), np.zeros((0, 7))),
    _c("partition-kth-float-refused", lambda m, x: m.partition(x, 1.5), np.zeros(0)),
    # cov / corrcoef with too few observations: NaN and a warning
    _c("cov-0d", lambda m, x: m.cov(x)),
    _c("cov-empty", lambda m, x: m.cov(x), np.zeros(0)),
    _c("cov-empty-rows", lambda m, x: m.cov(x), np.zeros((0, 6), np.complex128)),
    _c("cov-empty-cols", lambda m, x: m.cov(x, rowvar=False), np.zeros((0, 3))),
    _c("corrcoef-0d", lambda m, x: m.corrcoef(x)),
    _c("corrcoef-empty", lambda m, x: m.corrcoef(x, rowvar=False), np.zeros((0, 3))),
    # searchsorted's sorter, digitize's NaN bins
    _c("searchsorted-long-sorter", lambda m, x: m.searchsorted(x, np.array([1.0, 2.0]),
                                                               sorter=np.arange(6)), np.zeros(0)),
    _c("searchsorted-short-sorter", lambda m, x: m.searchsorted(x, np.array([1.0]),
                                                                sorter=np.arange(2)),
       np.arange(3.0)),
    _c("searchsorted-float-sorter", lambda m, x: m.searchsorted(x, np.array([1.0]),
                                                                sorter=np.arange(3.0)),
       np.arange(3.0)),
    _c("searchsorted-sorter-range", lambda m, x: m.searchsorted(x, np.array([1.0, 2.0]),
                                                                sorter=np.array([0, 1, 5])),
       np.arange(3.0)),
    *[_c(f"digitize-bins{i}", (lambda b: lambda m, x: m.digitize(x, b))(b),
         np.array([-1.0, 0.5, 1.0, 2.5, 9.0, np.nan]))
      for i, b in enumerate([np.array([0.0, np.nan, 1.0, 2.0]), np.array([np.nan, 0.0, 1.0]),
                             np.array([1.0, 1.0, np.nan, 0.0]), np.array([2.0, 1.0, np.nan]),
                             np.array([np.nan, np.nan]), np.array([0.0, 2.0, 1.0]),
                             np.array([0.0, 1.0, np.nan, 0.5])])],
]


def _numpy(fn, x):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn(np, x)
        except Exception as e:
            return None, type(e), []
    return r, None, sorted({str(i.category.__name__) for i in w
                            if issubclass(i.category, RuntimeWarning)})


def _check(got, want, ctx):
    g = got.numpy() if isinstance(got, tnp.ndarray) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, f"{ctx}: shape {g.shape}, NumPy {w.shape}"
    assert g.dtype == w.dtype, f"{ctx}: dtype {g.dtype}, NumPy {w.dtype}"
    np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, equal_nan=True, err_msg=ctx)


def _paths(fn, x):
    """(name, thunk) for each path; each thunk returns fn's result on x."""
    def eager():
        return fn(tnp, tnp.asarray(x))

    def taped():
        v = tnp.asarray(x)
        with nf.GradientTape() as t:
            t.watch(v)
            return fn(tnp, v)

    def compiled():
        return nf.function(lambda v: fn(tnp, v))(tnp.asarray(x))

    out = [("eager", eager), ("tape", taped), ("function", compiled)]
    if x.ndim:
        sig = [nf.TensorSpec([None] * x.ndim, str(x.dtype))]

        def unknown_sizes():
            return nf.function(lambda v: fn(tnp, v), input_signature=sig)(tnp.asarray(x))
        out.append(("function(unknown sizes)", unknown_sizes))
    return out


@pytest.mark.parametrize("fn, x, grad", CASES)
def test_edge_cases_agree_with_numpy_on_every_path(fn, x, grad):
    want, err, warns = _numpy(fn, x)
    for path, run in _paths(fn, x):
        ctx = f"{path}"
        if err is not None:
            with pytest.raises(err), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run()
            continue
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = run()
        seen = sorted({str(i.category.__name__) for i in w
                       if issubclass(i.category, RuntimeWarning)})
        if isinstance(want, tuple):
            for g, v in zip(got, want):
                _check(g, v, ctx)
        else:
            _check(got, want, ctx)
        if path in ("eager", "tape"):
            assert seen == warns, f"{ctx}: warnings {seen}, NumPy {warns}"


@pytest.mark.parametrize("fn, x, grad", [c for c in CASES if c.values[2] is not None])
def test_edge_gradients(fn, x, grad):
    v = tnp.asarray(x)
    with nf.GradientTape() as t:
        t.watch(v)
        y = tnp.sum(fn(tnp, v))
    np.testing.assert_allclose(t.gradient(y, v).numpy(), grad)
    g = nf.function(lambda v: nf.grad(lambda u: tnp.sum(fn(tnp, u)))(v))(v)
    np.testing.assert_allclose(g.numpy(), grad)


@pytest.mark.parametrize("fn, x, grad", [c for c in CASES if c.values[1].ndim == 0])
def test_edge_cases_vectorized(fn, x, grad):
    """A batch of 0-d examples: each example as NumPy answers it alone."""
    xs = np.array([x, -1.5, np.nan, 0.0])
    outs = [_numpy(fn, e) for e in xs]
    if any(err is not None for _, err, _ in outs):
        err = next(err for _, err, _ in outs if err is not None)
        with pytest.raises(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nf.vectorized_map(lambda e: fn(tnp, e), tnp.asarray(xs))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = nf.vectorized_map(lambda e: fn(tnp, e), tnp.asarray(xs))
    want = [o[0] for o in outs]
    if isinstance(want[0], tuple):
        for i, g in enumerate(got):
            _check(g, np.stack([w[i] for w in want]), "vectorized_map")
    else:
        _check(got, np.stack(want), "vectorized_map")


def test_searchsorted_sorter_index_numpy_does_not_reach():
    """NumPy checks a sorter index only when its binary search reaches it. With the values
    known (eagerly, under a tape) ndflow answers as NumPy; compiled, where they are known only
    at run time, every index is checked: a clear ValueError, never a different answer."""
    a, v, s = np.arange(3.0), np.array([1.0]), np.array([0, 1, 5])
    want = np.searchsorted(a, v, sorter=s)
    np.testing.assert_array_equal(tnp.searchsorted(tnp.asarray(a), v, sorter=s).numpy(), want)
    x = tnp.asarray(a)
    with nf.GradientTape() as t:
        t.watch(x)
        np.testing.assert_array_equal(tnp.searchsorted(x, v, sorter=s).numpy(), want)
    with pytest.raises(ValueError, match="Sorter index out of range"):
        nf.function(lambda x: tnp.searchsorted(x, v, sorter=s))(tnp.asarray(a))


_DIGITIZE_BINS = [[0.0, 1.0, 2.0], [2.0, 1.0, np.nan], [1.0, 1.0, 0.0], [np.nan, np.nan, 3.0],
                  [0.0, np.nan, 1.0], [np.nan, 0.0, 1.0], [0.0, 2.0, 1.0], [3.0, 3.0, 3.0],
                  [np.inf, 1.0, -np.inf], [-0.0, 0.0, np.nan]]


@pytest.mark.parametrize("right", [False, True])
def test_digitize_with_bins_known_at_run_time_only(right):
    """NumPy's monotonicity rule (NaN compares false: the direction is set by the first element
    unequal to the first, only later steps against it refuse) with traced bins, of known and
    unknown length, and with bins batched by vectorized_map (one refusing example refuses the
    map, as a loop would)."""
    x = tnp.asarray(np.array([-1.0, 0.5, 1.0, 2.5, 9.0, np.nan, 0.0, 1.5, -np.inf]))
    known = nf.function(lambda x, b: tnp.digitize(x, b, right))
    unknown = nf.function(lambda x, b: tnp.digitize(x, b, right),
                          input_signature=[nf.TensorSpec([None], "float64")] * 2)
    ok = []
    for b in map(np.array, _DIGITIZE_BINS + [[2.0]]):
        want, err, _ = _numpy(lambda m, x: m.digitize(x, b, right), x.numpy())
        for f in (known, unknown):
            if err is not None:
                with pytest.raises(err):
                    f(x, tnp.asarray(b))
            else:
                np.testing.assert_array_equal(f(x, tnp.asarray(b)).numpy(), want)
        if err is None and b.size == 3:
            ok.append((b, want))
    got = nf.vectorized_map(lambda b: tnp.digitize(x, b, right),
                            tnp.asarray(np.stack([b for b, _ in ok])))
    np.testing.assert_array_equal(got.numpy(), np.stack([w for _, w in ok]))
    with pytest.raises(ValueError, match="monotonically"):
        nf.vectorized_map(lambda b: tnp.digitize(x, b, right),
                          tnp.asarray(np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 1.0]])))
