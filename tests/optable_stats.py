"""Op-table records: statistics, cumulative operations, histograms and the nan-functions."""
import numpy as np

from optable import (record, Sample, values, noncontig, reduction_samples, _ints, REAL, F16, F32,
                     F64, I32, I64, BOOL, C128)

_DYN = "the result's size depends on the data"


def _with_nans(rng, shape, dt, frac=0.3, all_nan_row=False):
    """Values with NaNs at random positions (never a whole slice, unless asked)."""
    a = values(rng, shape, dt)
    if dt.kind != "f":
        return a
    mask = values(rng, shape, BOOL) & (values(rng, shape, F64, "small_nonneg") < 3 * frac)
    a = np.where(mask, np.nan, a).astype(dt)
    if a.ndim:
        # the first two positions along the first and the last axis stay numbers: every
        # slice keeps at least two (ddof=1 then still has a degree of freedom)
        a[:2] = values(rng, a[:2].shape, dt)
        a[..., :2] = values(rng, a[..., :2].shape, dt)
    if all_nan_row and a.ndim == 2:
        a[-1, 1:] = np.nan
    return a


# ---- cumulative -------------------------------------------------------------------------
def _scan_samples(domain="real"):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, domain)  # noqa: E731
        return [Sample((v((2, 3, 4)),)), Sample((v((2, 3, 4)),), {"axis": 1}),
                Sample((v((2, 3, 4)),), {"axis": -1}), Sample((v(()),)),
                Sample((v((0, 3)),), {"axis": 0}, "empty"),
                Sample((noncontig(rng, (3, 4), dt, domain),), {"axis": 0}, "noncontig"),
                Sample((v((3, 4)),), {"axis": 1, "dtype": np.float64}, "dtype")]
    return gen


record("cumsum", _scan_samples(), dtypes=REAL + (BOOL, I64, F16, C128))
record("cumprod", lambda rng, dt: _scan_samples("positive")(rng, dt) + [
    Sample((np.array([2.0, 0.0, 3.0, 0.0, 1.5], dt),), {}, "zeros")],
       dtypes=REAL + (C128,), grad_tol=(1e-5, 1e-7))


def _cumulative_samples(domain="real"):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, domain)  # noqa: E731
        return [Sample((v((5,)),)), Sample((v((2, 3)),), {"axis": 1}),
                Sample((v((2, 3)),), {"axis": 0, "include_initial": True}),
                Sample((v((4,)),), {"include_initial": True}),
                Sample((v((0, 3)),), {"axis": 0, "include_initial": True}, "empty"),
                Sample((noncontig(rng, (3, 4), dt, domain),), {"axis": 1}, "noncontig")]
    return gen


record("cumulative_sum", _cumulative_samples(), dtypes=REAL + (BOOL,))
record("cumulative_prod", _cumulative_samples("positive"), dtypes=REAL)


def _nan_scan_samples(rng, dt):
    return [Sample((_with_nans(rng, (3, 4), dt),)), Sample((_with_nans(rng, (3, 4), dt),),
                                                           {"axis": 1}),
            Sample((_with_nans(rng, (2, 3, 4), dt),), {"axis": 0}),
            Sample((values(rng, (3, 4), dt),), {"axis": -1}, "no nans")]


record("nancumsum", _nan_scan_samples, dtypes=REAL)
record("nancumprod", _nan_scan_samples, dtypes=REAL)


# ---- differences and integrals ----------------------------------------------------------
def _diff_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((5,)),)), Sample((v((3, 5)),), {"n": 2}), Sample((v((3, 5)),), {"axis": 0}),
            Sample((v((4, 3)), 1, 0, v(()), v((1, 3))), desc="prepend/append"),
            Sample((v((3, 4)),), {"n": 0}), Sample((v((1, 3)),), {"axis": 0}, "to empty"),
            Sample((noncontig(rng, (3, 4), dt),), {"axis": -1}, "noncontig"),
            Sample((v((3, 4)),), {"prepend": 0.5, "append": 1}, "scalar extras")]


record("diff", _diff_samples, dtypes=REAL + (BOOL,))
record("ediff1d", lambda rng, dt: [
    Sample((values(rng, (5,), dt),)), Sample((values(rng, (2, 3), dt),)),
    Sample((values(rng, (4,), dt), values(rng, (2,), dt), values(rng, (), dt))),
    Sample((values(rng, (4,), dt),), {"to_begin": 1}), Sample((values(rng, (1,), dt),)),
    Sample((noncontig(rng, (3, 4), dt),), {"to_end": [2, 3]})], dtypes=REAL)


def _gradient_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    x = np.cumsum(values(rng, (5,), F64, "positive"))
    return [Sample((v((6,)),)), Sample((v((6,)), 0.5)), Sample((v((4, 5)),)),
            Sample((v((4, 5)),), {"axis": 1, "edge_order": 2}),
            Sample((v((5,)), x), desc="coordinates"),
            Sample((v((5,)), x), {"edge_order": 2}, "coordinates"),
            Sample((v((3, 5)), 2.0, x), desc="per-axis spacing"),
            Sample((noncontig(rng, (3, 4), dt),), {"axis": 0}, "noncontig")]


record("gradient", _gradient_samples, dtypes=REAL)


def _trapezoid_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    x = np.cumsum(values(rng, (5,), F64, "positive"))
    return [Sample((v((5,)),)), Sample((v((5,)),), {"dx": 0.5}), Sample((v((5,)), x)),
            Sample((v((3, 5)), x)), Sample((v((3, 5)),), {"axis": 0}),
            Sample((v((3, 4)), np.cumsum(values(rng, (3, 4), F64, "positive"), axis=1)),
                   desc="2-d x"),
            Sample((noncontig(rng, (3, 4), dt),), {"axis": 0}, "noncontig")]


record("trapezoid", _trapezoid_samples, dtypes=REAL)
record("ptp", reduction_samples(allow_empty=False), dtypes=REAL)


# ---- averages and order statistics ------------------------------------------------------
def _average_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    w = lambda s: values(rng, s, F64, "positive")  # noqa: E731
    return [Sample((v((3, 4)),)), Sample((v((3, 4)),), {"axis": 1}),
            Sample((v((3, 4)),), {"axis": 1, "weights": w((4,))}, "1-d weights"),
            Sample((v((3, 4)),), {"axis": 0, "weights": w((3, 4)), "returned": True}),
            Sample((v((2, 3, 4)),), {"axis": (0, 2), "weights": w((2, 4)), "keepdims": True}),
            Sample((v((3, 4)),), {"returned": True}, "returned"),
            Sample((v((3, 4)),), {"axis": 0, "keepdims": True}),
            Sample((noncontig(rng, (3, 4), dt),), {"axis": 0}, "noncontig")]


record("average", _average_samples, dtypes=REAL)


def _median_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    out = [Sample((v((5,)),)), Sample((v((4, 6)),), {"axis": 1}),
           Sample((v((4, 5)),), {"axis": 0, "keepdims": True}),
           Sample((v((2, 3, 4)),), {"axis": (0, 2)}), Sample((v((2, 3, 4)),)),
           Sample((v((2, 3)),), {"keepdims": True}),
           Sample((noncontig(rng, (3, 4), dt),), {"axis": -1}, "noncontig")]
    return out


record("median", _median_samples, dtypes=REAL + (F16, I64))


def _nanmedian_samples(rng, dt):
    return [Sample((_with_nans(rng, (4, 5), dt),), {"axis": 1}),
            Sample((_with_nans(rng, (4, 5), dt),), {"axis": 0, "keepdims": True}),
            Sample((_with_nans(rng, (7,), dt),)), Sample((_with_nans(rng, (2, 3, 4), dt),),
                                                         {"axis": (1, 2)}),
            Sample((values(rng, (3, 4), dt),), {"axis": 1}, "no nans")]


record("nanmedian", _nanmedian_samples, dtypes=REAL)

_QMETHODS = ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf",
             "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
             "hazen", "weibull", "median_unbiased", "normal_unbiased")


def _quantile_samples(scale, nan=False):
    def gen(rng, dt):
        v = (lambda s: _with_nans(rng, s, dt)) if nan else (lambda s: values(rng, s, dt))
        # q inside (0, 1) and off the grid k / (n - 1) where quantiles have kinks: finite
        # differences in q must see one smooth piece (the ends: test_statistics.py)
        q1 = np.array([0.07, 0.13, 0.37, 0.61, 0.83, 0.93]) * scale
        out = [Sample((v((7,)), 0.31 * scale)), Sample((v((4, 6)), q1), {"axis": 1}),
               Sample((v((4, 6)), 0.47 * scale), {"axis": 0, "keepdims": True}),
               Sample((v((2, 3, 4)), q1[:3]), {"axis": (0, 2)}),
               Sample((v((2, 3, 4)), np.array(0.43 * scale)), {}),
               Sample((v((3, 5)), q1[1:4].reshape(1, 3)), {"axis": 1, "keepdims": True},
                      "2-d q"),
               Sample((v((3, 4)).astype(np.float32) if dt.kind == "f" else v((3, 4)),
                       np.array([0.21, 0.79], np.float32) * scale), {"axis": 1}, "float32 q")]
        for m in _QMETHODS:
            out.append(Sample((v((8,)), q1), {"method": m}, m))
            out.append(Sample((v((5, 4)), 0.37 * scale), {"axis": 0, "method": m}, m))
        if not nan:
            w = values(rng, (6,), F64, "positive")
            wkw = {"method": "inverted_cdf", "weights": w}
            out.append(Sample((v((4, 6)), q1), dict(wkw, axis=1), "weights"))
            out.append(Sample((v((6,)), 0.47 * scale), wkw, "weights"))
        return out
    return gen


record("quantile", _quantile_samples(1), dtypes=REAL)
record("percentile", _quantile_samples(100), dtypes=REAL)
record("nanquantile", _quantile_samples(1, nan=True), dtypes=REAL)
record("nanpercentile", _quantile_samples(100, nan=True), dtypes=REAL)


# ---- nan-ignoring reductions ------------------------------------------------------------
def _nan_reduction_samples(rng, dt):
    v = lambda s: _with_nans(rng, s, dt)  # noqa: E731
    return [Sample((v((3, 4)),)), Sample((v((3, 4)),), {"axis": 1}),
            Sample((v((2, 3, 4)),), {"axis": (0, 2), "keepdims": True}),
            Sample((v((3, 4)),), {"axis": 0, "keepdims": True}),
            Sample((values(rng, (3, 4), dt),), {"axis": 1}, "no nans"),
            Sample((noncontig(rng, (3, 4), dt),), {"axis": 0}, "noncontig")]


def _with(extra):
    def gen(rng, dt):
        out = _nan_reduction_samples(rng, dt)
        for kw in extra:
            kw = dict(kw)
            if kw.get("where") == "mask":
                m = values(rng, (3, 4), BOOL)
                m[:2] = m[:, :2] = True      # every slice keeps two numbers (see _with_nans)
                kw["where"] = m
            out.append(Sample((_with_nans(rng, (3, 4), dt),), kw, "options"))
        return out
    return gen


record("nansum", _with([{"axis": 1, "where": "mask"}, {"initial": 2.0},
                        {"axis": 0, "dtype": np.float64}]), dtypes=REAL)
record("nanprod", _with([{"axis": 1, "where": "mask"}]), dtypes=REAL)
record("nanmean", _with([{"axis": 1, "where": "mask"}, {"axis": 0, "dtype": np.float64}]),
       dtypes=REAL)
record("nanvar", _with([{"axis": 1, "ddof": 1}, {"axis": 0, "where": "mask"},
                        {"axis": 1, "correction": 1}]), dtypes=REAL, grad_tol=(1e-5, 1e-7))
record("nanstd", _with([{"axis": 1, "ddof": 1}]), dtypes=REAL, grad_tol=(1e-5, 1e-7))
record("nanmax", _with([{"axis": 1, "initial": -5.0, "where": "mask"}]), dtypes=REAL)
record("nanmin", _with([{"axis": 0, "initial": 5.0}]), dtypes=REAL)
record("nanargmax", lambda rng, dt: [s for s in _nan_reduction_samples(rng, dt)
                                     if "axis" not in s.kwargs or isinstance(s.kwargs["axis"], int)
                                     if "keepdims" not in s.kwargs], dtypes=REAL)
record("nanargmin", lambda rng, dt: [s for s in _nan_reduction_samples(rng, dt)
                                     if "axis" not in s.kwargs or isinstance(s.kwargs["axis"], int)
                                     if "keepdims" not in s.kwargs], dtypes=REAL)


# ---- covariance -------------------------------------------------------------------------
def _cov_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    fw = _ints(rng, (6,), 4, 1)
    aw = values(rng, (6,), F64, "positive")
    return [Sample((v((3, 6)),)), Sample((v((6,)),)), Sample((v((6, 3)),), {"rowvar": False}),
            Sample((v((2, 6)), v((6,)))), Sample((v((3, 6)),), {"bias": True}),
            Sample((v((3, 6)),), {"ddof": 2}), Sample((v((3, 6)),), {"fweights": fw}),
            Sample((v((3, 6)),), {"aweights": aw}),
            Sample((v((3, 6)),), {"fweights": fw, "aweights": aw, "ddof": 1}),
            Sample((noncontig(rng, (3, 6), dt),), {"dtype": np.float32}, "noncontig")]


record("cov", _cov_samples, dtypes=REAL + (C128,), tol={F32: (1e-4, 1e-5)})
record("corrcoef", lambda rng, dt: [
    Sample((values(rng, (3, 6), dt),)), Sample((values(rng, (6,), dt), values(rng, (6,), dt))),
    Sample((values(rng, (6, 3), dt),), {"rowvar": False}),
    Sample((noncontig(rng, (4, 5), dt),))], dtypes=REAL, tol={F32: (1e-4, 1e-5)})


# ---- counting and histograms ------------------------------------------------------------
record("bincount", lambda rng, dt: [
    Sample((_ints(rng, (10,), 6),)), Sample((_ints(rng, (10,), 6),), {"minlength": 9}),
    Sample((_ints(rng, (8,), 5), values(rng, (8,), dt))),
    Sample((np.zeros(0, np.int64),), {"minlength": 3}, "empty")],
       dtypes=(F64, F32, I32), vmap=False, vmap_reason=_DYN)


def _digitize_samples(rng, dt):
    bins = np.sort(values(rng, (5,), dt))
    return [Sample((values(rng, (3, 4), dt), bins)), Sample((values(rng, (6,), dt), bins, True)),
            Sample((values(rng, (6,), dt), bins[::-1].copy()), desc="decreasing"),
            Sample((values(rng, (6,), dt), bins[::-1].copy(), True), desc="decreasing"),
            Sample((values(rng, (), dt), bins))]


record("digitize", _digitize_samples, dtypes=REAL)


def _hist_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    edges = np.sort(values(rng, (5,), F64))
    return [Sample((v((20,)),)), Sample((v((4, 5)), 4)),
            Sample((v((20,)), 6), {"range": (-1.0, 1.5)}),
            Sample((v((20,)), edges), desc="edges"),
            Sample((v((20,)), 5), {"weights": values(rng, (20,), F64, "positive")}),
            Sample((v((20,)), edges), {"weights": values(rng, (20,), F32, "positive")}),
            Sample((v((20,)), 4), {"density": True}),
            Sample((v((0,)), 3), desc="empty")]


def _hist_unknown(s):
    if s.desc == "empty":
        return "an empty input's range is (0, 1): whether it is empty is known at run time only"
    return None


record("histogram", _hist_samples, dtypes=REAL, grad_eps=1e-7, unknown_dims=_hist_unknown)
record("histogram_bin_edges", lambda rng, dt: [s for s in _hist_samples(rng, dt)
                                               if "density" not in s.kwargs],
       dtypes=REAL, grad_eps=1e-7, unknown_dims=_hist_unknown)


def _hist2d_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    ex, ey = np.sort(values(rng, (4,), F64)), np.sort(values(rng, (3,), F64))
    return [Sample((v((15,)), v((15,)))), Sample((v((15,)), v((15,)), 4)),
            Sample((v((15,)), v((15,)), [3, 5])), Sample((v((15,)), v((15,)), [ex, ey])),
            Sample((v((15,)), v((15,)), 3), {"range": [(-1, 1), (-2, 2)], "density": True}),
            Sample((v((15,)), v((15,)), 3), {"weights": values(rng, (15,), F64, "positive")})]


record("histogram2d", _hist2d_samples, dtypes=REAL, grad_eps=1e-7)


def _histdd_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((12, 3)),)), Sample((v((12, 2)), (3, 4))),
            Sample((v((12,)), 5), desc="1-d sample"),
            Sample((v((12, 2)), [np.sort(values(rng, (4,), F64)), 3])),
            Sample((v((12, 2)), 2), {"density": True,
                                     "weights": values(rng, (12,), F64, "positive")})]


record("histogramdd", _histdd_samples, dtypes=REAL, grad_eps=1e-7,
       unknown_dims=lambda s: None if s.desc == "1-d sample" else
       "the sample's second axis (the number of dimensions) must be static")


# nothing to differentiate: integer results (indices, bin numbers)
import optable as _optable  # noqa: E402
for _n in ("nanargmax", "nanargmin", "digitize"):
    _r = next(r for r in _optable.RECORDS if r.name == _n)
    _r.diff_args, _r.grad_reason = (), "integer results (indices, bin numbers)"
