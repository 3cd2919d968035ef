"""The op table's generic checks (values vs SciPy, compiled vs eager, gradients vs central
differences to second order, compiled and batched gradients, vectorized_map vs a loop) over
the `ndflow.scipy` records of `optable_scipy.py`."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree

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
                 "scipy.integrate.ODEintWarning": "a warning class: test_scipy_odeint.py",
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


# ------------------------------------------------------------------ SciPy's edge cases
# Every record's `edges` (optable_scipy.py): SciPy's special values as grids over the
# arguments, empty and 0-d inputs, float32 and float64. Values, dtypes and shapes as SciPy's
# (eager, taped, compiled): the same NaN and infinity positions, the sign of zeros, the
# values within the record's tolerance; SciPy's exception type where it raises. SciPy's
# stats compute float32 input in float32 and return float64; ndflow computes in float64,
# so the oracle for their values is SciPy on the float64 input (the dtype still SciPy's).
_EDGE_CASES = [pytest.param(r, np.dtype(d), id="%s-%s" % (r.name, np.dtype(d).name))
               for r in SCIPY_RECORDS for d in (F32, F64)]
_STATS32 = {F32: (1e-5, 1e-12), F64: (1e-11, 1e-13)}


def _edge_tol(rec, dt):
    rtol, atol = rec.tolerance(dt) if dt in rec.dtypes else (2e-5, 1e-6)
    return max(rtol, 1e-12), max(atol, 1e-300)


def _run(rec, s, module, args=None):
    args = s.args if args is None else args
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if module is np:
                return rec.call(np, *args, **s.kwargs), None
            return rec.call(tnp, *[tnp.asarray(a) if isinstance(a, np.ndarray) else a
                                   for a in args], **{k: tnp.asarray(v) if isinstance(
                                       v, np.ndarray) else v for k, v in s.kwargs.items()}), None
        except Exception as e:      # noqa: BLE001  (the oracle's error is the expectation)
            return None, e


def _edge_problems(rec, s, got, want, dt, exempt_fn):
    problems = []
    gl, wl = tree.flatten(got), tree.flatten(want)
    if len(gl) != len(wl):
        return [f"{len(gl)} results, SciPy gives {len(wl)}"]
    rtol, atol = _edge_tol(rec, dt)
    for g, w in zip(gl, wl):
        if not isinstance(g, tnp.ndarray):
            problems.append(f"a {type(g).__name__}, not an ndflow array")
            continue
        g, w = g.numpy(), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            problems.append(f"dtype/shape {g.dtype}{g.shape}, SciPy {w.dtype}{w.shape}")
            continue
        if w.dtype.kind != "f":
            if not np.array_equal(g, w) and not exempt_fn(w, g).all():
                problems.append("integer values differ")
            continue
        keep = ~exempt_fn(w, g)
        with np.errstate(all="ignore"):
            close = np.isclose(g, w, rtol=rtol, atol=atol) | (np.isnan(g) & np.isnan(w))
            close &= np.isnan(g) == np.isnan(w)
            close &= ~(np.isinf(w) & (g != w)) & ~(np.isinf(g) & (g != w))
            zs = (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
        for what, bad in (("value", ~close & keep), ("sign of zero", zs & keep)):
            if bad.any():
                i = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
                problems.append(f"{what} at {int(bad.sum())} element(s), e.g. {i}: "
                                f"{g[i]!r}, SciPy {w[i]!r}")
    return problems


def _check_edge_sample(rec, s, dt):
    w, we = _run(rec, s, np)
    if isinstance(we, tuple(rec.edge_raises)):
        g, ge = _run(rec, s, tnp)
        assert ge is None, f"{rec.name}{s!r}: {ge!r}"
        return
    if dt == F32 and we is None and all(np.asarray(a).dtype == F64 for a in tree.flatten(w)):
        # float32 in, float64 out (SciPy's distributions): its values are float32 arithmetic,
        # ndflow's float64; the oracle is SciPy on the float64 input
        w64, we64 = _run(rec, s, np, [a.astype(np.float64) if isinstance(a, np.ndarray) and
                                      a.dtype == F32 else a for a in s.args])
        if we64 is None:
            w = w64
    exempt = [f for _, f in rec.edge_diffs]

    def exempt_fn(want, got):
        m = np.zeros(np.shape(want), bool)
        for f in exempt:
            m |= f(s, want, got)
        return m
    for label, path in (("eager", lambda: _run(rec, s, tnp)), ("taped", lambda: _taped(rec, s)),
                        ("compiled", lambda: _compiled(rec, s))):
        g, ge = path()
        if we is not None or ge is not None:
            assert type(ge) is type(we), \
                f"{label} {rec.name}{s!r}: {ge!r}, SciPy raises {we!r}"
            continue
        problems = _edge_problems(rec, s, g, w, dt, exempt_fn)
        assert not problems, f"{label} {rec.name}{s!r}:\n  " + "\n  ".join(problems)


def _taped(rec, s):
    with nf.GradientTape():
        return _run(rec, s, tnp)


def _compiled(rec, s):
    arrays = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]

    def f(*xs):
        args = list(s.args)
        for i, x in zip(arrays, xs):
            args[i] = x
        return rec.call(tnp, *args, **{k: tnp.asarray(v) if isinstance(v, np.ndarray) else v
                                       for k, v in s.kwargs.items()})
    if not rec.jit:
        return _run(rec, s, tnp)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return nf.function(f)(*[tnp.asarray(s.args[i]) for i in arrays]), None
        except Exception as e:      # noqa: BLE001
            return None, e


@pytest.mark.parametrize("rec,dt", _EDGE_CASES)
def test_edge_values_match_scipy(rec, dt):
    """SciPy's edge cases: values, dtypes, shapes and errors as SciPy's, on every path."""
    for s in rec.edges(dt):
        _check_edge_sample(rec, s, dt)


def test_every_record_has_edge_cases():
    missing = [r.name for r in SCIPY_RECORDS if getattr(r, "edges", None) is None]
    assert not missing, "records without SciPy's edge cases: " + ", ".join(missing)


def test_declared_edge_differences():
    """Every deliberate difference from SciPy at the edges says why (the README's list)."""
    for r in SCIPY_RECORDS:
        for why, f in r.edge_diffs:
            assert isinstance(why, str) and len(why) > 40 and callable(f), r.name
        for err, why in r.edge_raises.items():
            assert issubclass(err, Exception) and len(why) > 40, r.name


# Gradients at the edges: for the elementwise functions, every element of every float64 edge
# sample where the function is differentiable (finite, and the one-sided difference quotients
# at two step sizes agree: test_grad_edges' criterion) has the tape's derivative equal to the
# central difference (at a kink: between the one-sided ones). The arguments are broadcast to
# the result's shape first, so element i of the gradient is d out[i] / d x[i].
_NOT_ELEMENTWISE = ("scipy.special.logsumexp", "scipy.special.softmax",
                    "scipy.special.log_softmax", "scipy.stats.dirichlet",
                    "scipy.stats.multivariate_normal", "scipy.linalg", "scipy.signal")
_EDGE_GRAD = [pytest.param(r, id=r.name) for r in SCIPY_RECORDS
              if r.diff_args != () and F64 in r.dtypes
              and not r.name.startswith(_NOT_ELEMENTWISE)]


def _elementwise(rec, args, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rec.call(tnp, *[tnp.asarray(a) if isinstance(a, np.ndarray) else a
                               for a in args], **kwargs).numpy()


@pytest.mark.parametrize("rec", _EDGE_GRAD)
def test_edge_gradients_match_differences(rec):
    import test_grad_edges as GE
    checked_elements = 0
    for s in rec.edges(F64):
        arrays = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]
        shape = np.broadcast_shapes(*[s.args[i].shape for i in arrays],
                                    *[np.shape(v) for v in s.kwargs.values()
                                      if isinstance(v, np.ndarray)])
        if not np.prod(shape, dtype=int):
            continue
        args = list(s.args)
        for i in arrays:
            args[i] = np.array(np.broadcast_to(s.args[i], shape))
        kwargs = {k: np.array(np.broadcast_to(v, shape)) if isinstance(v, np.ndarray) else v
                  for k, v in s.kwargs.items()}
        diff = [i for i in arrays if rec.diff_args is None or i in rec.diff_args]
        f0 = _elementwise(rec, args, kwargs)
        for i in diff:
            x = args[i]
            h = GE.H * np.maximum(1.0, np.abs(np.where(np.isfinite(x), x, 1.0)))

            def at(k, i=i, x=x, h=h):
                a = list(args)
                a[i] = x + k * h
                return _elementwise(rec, a, kwargs)
            fp, fm, fp2, fm2 = at(1), at(-1), at(1 / 16), at(-1 / 16)
            xs = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
            with nf.GradientTape() as tape:
                tape.watch(xs[i])
                out = rec.call(tnp, *xs, **{k: tnp.asarray(v) if isinstance(v, np.ndarray)
                                            else v for k, v in kwargs.items()})
                loss = tnp.sum(tnp.where(tnp.isfinite(out), out, 0.0))
            with np.errstate(all="ignore"):
                g = tape.gradient(loss, xs[i], unconnected_gradients="zero").numpy()
            with np.errstate(all="ignore"):
                ok = np.isfinite(x) & np.isfinite(f0) & np.isfinite(fp) & np.isfinite(fm) & \
                    np.isfinite(fp2) & np.isfinite(fm2) & np.isfinite((fp - fm) / h) & \
                    np.isfinite((fp - f0) / h) & np.isfinite((f0 - fm) / h) & \
                    ~((f0 != 0) & (np.abs(f0) < np.finfo(np.float64).tiny))   # subnormal: no
                # digits to difference; arguments beyond 1e300: the derivative's own factors
                # overflow (not compared)
                for a in args:
                    if isinstance(a, np.ndarray):
                        ok &= ~(np.abs(a) > 1e300)
            for e in map(tuple, np.argwhere(ok)):
                if not GE._lipschitz(f0[e], fp[e], fm[e], fp2[e], fm2[e], 16):
                    continue
                # (the step as taken: x + h rounds)
                step = ((x[e] + h[e]) - (x[e] - h[e])) / 2
                GE._consistent(g[e], f0[e], fp[e], fm[e], step,
                               f"{rec.name}{s!r} argument {i} at "
                               f"{[float(np.asarray(a)[e]) for a in args if isinstance(a, np.ndarray)]}")
                checked_elements += 1
    assert checked_elements, f"{rec.name}: no differentiable edge point was checked"
