"""`ndflow.scipy.integrate.odeint` against `scipy.integrate.odeint`: time direction, SciPy's
errors and warnings (non-monotonic t, excess work, illegal input), NaN and blowing-up dynamics
(which return, never hang), SciPy's arguments (args, tfirst, full_output, rtol/atol vectors,
h0, hmax, hmin, tcrit, printmessg), shapes and dtypes, and adjoint gradients against central
differences in both directions; eager, compiled and vectorized."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.scipy.integrate import odeint, ODEintWarning

si = pytest.importorskip("scipy.integrate")

_MONO = ("The values in t must be monotonically increasing or monotonically decreasing; "
         "repeated values are allowed.")


def _both(f_nd, f_np, y0, t, **kw):
    """(ndflow result, SciPy result, ndflow warnings, SciPy warnings) of one call; results are
    NumPy arrays (the first element when full_output)."""
    out = []
    for fn, f in ((odeint, f_nd), (si.odeint, f_np)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(f, y0, t, **kw)
        ws = [(x.category.__name__, str(x.message)) for x in w
              if issubclass(x.category, (ODEintWarning, si.ODEintWarning))]
        out.append((r, ws))
    (a, wa), (b, wb) = out
    return a, b, wa, wb


def _decay(y, t, k=1.0):
    return -k * y


def _osc_nd(y, t, w):
    return tnp.stack([y[1], -w * w * y[0] + 0.1 * tnp.sin(t)])


def _osc_np(y, t, w):
    return np.array([y[1], -w * w * y[0] + 0.1 * np.sin(t)])


_TIMES = {"increasing": [0.0, 0.5, 1.3, 2.0], "decreasing": [2.0, 1.2, 0.4, -1.0],
          "repeated": [0.0, 0.0, 1.0, 1.0, 2.5], "decreasing repeated": [1.0, 1.0, 0.0, -0.5],
          "one time": [0.3], "no time": []}


@pytest.mark.parametrize("times", list(_TIMES), ids=list(_TIMES))
def test_values_match_scipy_in_both_directions(times):
    t = np.array(_TIMES[times])
    y0 = np.array([1.0, -0.5])
    a, b, wa, wb = _both(_osc_nd, _osc_np, y0, t, args=(1.7,), rtol=1e-10, atol=1e-10)
    assert wa == wb == []
    assert isinstance(a, tnp.ndarray) and a.dtype == b.dtype == np.float64
    assert a.shape == b.shape == (len(t), 2)
    np.testing.assert_allclose(a.numpy(), b, rtol=1e-7, atol=1e-9)
    # scalar state: (len(t), 1) as SciPy; the exact solution in both directions
    a = odeint(_decay, 2.0, t, args=(0.7,))
    assert a.shape == (len(t), 1)
    np.testing.assert_allclose(a.numpy()[:, 0], 2.0 * np.exp(-0.7 * (t - t[:1])), rtol=1e-7)


@pytest.mark.parametrize("t", [[0.0, 1.0, 0.5], [1.0, 0.0, 0.5], [0.0, np.nan, 1.0],
                               [0.0, 1.0, 1.0, 0.9]])
def test_non_monotonic_times_raise_scipys_error(t):
    with pytest.raises(ValueError) as want:
        si.odeint(lambda y, t: -y, 1.0, t)
    with pytest.raises(ValueError, match="monotonically") as got:
        odeint(_decay, 1.0, t)
    assert str(got.value) == str(want.value) == _MONO
    # a compiled function checks at every call
    fn = nf.function(lambda tt: odeint(_decay, tnp.ones(1), tt))
    np.testing.assert_allclose(fn(tnp.asarray([0.0, 1.0])).numpy()[1], np.exp(-1.0), rtol=1e-7)
    with pytest.raises(ValueError, match="monotonically"):
        fn(tnp.asarray(t))


def test_excess_work_warns_and_marks_the_unreached_times():
    """mxstep runs out: SciPy's ODEintWarning and message; the failing row is the state at
    the time reached (infodict['tcur'], as SciPy's), later rows are NaN (SciPy: unset)."""
    t = [0.0, 100.0, 200.0, 300.0]
    f_nd = lambda y, t: tnp.sin(50 * t) * y       # noqa: E731
    f_np = lambda y, t: np.sin(50 * t) * y        # noqa: E731
    a, b, wa, wb = _both(f_nd, f_np, 1.0, t, mxstep=50)
    assert wa == wb and len(wa) == 1 and wa[0][0] == "ODEintWarning"
    assert wa[0][1].startswith("Excess work done on this call")
    a = a.numpy()
    assert np.isfinite(a[1]).all() and np.isnan(a[2:]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ODEintWarning)
        y, info = odeint(f_nd, 1.0, t, mxstep=50, full_output=True)
    assert info["message"] == "Excess work done on this call (perhaps wrong Dfun type)."
    assert int(info["istate"]) == -1
    tcur = float(info["tcur"][0])
    assert 0 < tcur < 100
    # the reported state is the state at tcur
    ref = si.odeint(f_np, 1.0, [0.0, tcur], rtol=1e-11, atol=1e-11)[1]
    np.testing.assert_allclose(y.numpy()[1], ref, rtol=1e-6)
    # the budget is per output interval: short intervals each within it pass
    ok = odeint(f_nd, 1.0, np.linspace(0, 2, 41), mxstep=50)
    assert np.isfinite(ok.numpy()).all()


def test_nan_dynamics_return_nan_without_odeint_warning():
    """sqrt(y - 2) at y = 1 is NaN: SciPy returns NaN ("Integration successful"); ndflow too,
    in a few steps (a NaN error estimate passes the error test, as in LSODA)."""
    a, b, wa, wb = _both(lambda y, t: tnp.sqrt(y - 2), lambda y, t: np.sqrt(y - 2), 1.0,
                         [0.0, 1.0, 2.0])
    assert wa == wb == []
    np.testing.assert_array_equal(np.isnan(a.numpy()), np.isnan(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, info = odeint(lambda y, t: tnp.sqrt(y - 2), 1.0, [0.0, 1.0, 2.0], full_output=1)
    assert info["message"] == "Integration successful." and int(info["nst"][-1]) < 50
    # a state that becomes NaN later, an infinite state: NaN rows from there, as SciPy
    f_nd = lambda y, t: tnp.where(t > 0.5, tnp.log(t - 0.5 - y * 0), -y)      # noqa: E731
    f_np = lambda y, t: np.where(t > 0.5, np.log(t - 0.5 - y * 0), -y)        # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a, b, wa, wb = _both(f_nd, f_np, [1.0], [0.0, 0.4, 1.0])
        np.testing.assert_allclose(a.numpy()[:2], b[:2], rtol=1e-7)
        a, b, wa, wb = _both(lambda y, t: -y, lambda y, t: -y, np.inf, [0.0, 1.0])
    np.testing.assert_array_equal(a.numpy(), b)       # [[inf], [nan]]
    assert wa == wb == []


def test_blow_up_returns_with_scipys_warning():
    """y' = y^2, y(0) = 1 blows up at t = 1: SciPy warns "Excess work done"; ndflow returns
    (the step falls below the rounding of t) with the same warning, SciPy's values before
    the singularity, a huge state for the first time past it and NaN after."""
    t = [0.0, 0.5, 0.99, 1.5, 2.0]
    a, b, wa, wb = _both(lambda y, t: y * y, lambda y, t: y * y, 1.0, t)
    assert wa == wb and wa[0][1].startswith("Excess work done")
    a = a.numpy()[:, 0]
    np.testing.assert_allclose(a[:3], [1.0, 2.0, 100.0], rtol=1e-6)    # 1 / (1 - t)
    np.testing.assert_allclose(a[:2], b[:2, 0], rtol=1e-6)
    assert a[3] > 1e10 and np.isnan(a[4])
    # dy/dt = 1 + y^2 (tan) past pi/2 with a decreasing start: the same, backwards
    t = [0.0, -1.0, -2.0]
    a, b, wa, wb = _both(lambda y, t: 1 + y * y, lambda y, t: 1 + y * y, 0.0, t)
    assert wa == wb and len(wa) == 1
    np.testing.assert_allclose(a.numpy()[1], np.tan(-1.0), rtol=1e-7)


def test_hmin_failure_and_illegal_input_warn_as_scipy():
    # hmin: an error test failing at the smallest step allowed (LSODA's -4)
    with pytest.warns(ODEintWarning, match="Repeated error test failures"):
        y, info = odeint(lambda y, t: tnp.sin(200 * t) * 50, 0.0, [0.0, 1.0], hmin=0.2,
                         full_output=True)
    assert int(info["istate"]) == -4
    # hmin only bounds reductions: a smooth problem integrates as SciPy's does
    a, b, wa, wb = _both(_decay, _decay, 1.0, [0.0, 1.0], hmin=0.5)
    assert wa == wb == []
    np.testing.assert_allclose(a.numpy(), b, rtol=1e-7)
    for kw in ({"hmax": -1.0}, {"rtol": -1.0}, {"h0": -0.1}, {"atol": [1e-8, -1.0]}):
        y0 = [1.0, 2.0] if "atol" in kw else 1.0
        a, b, wa, wb = _both(_decay, _decay, y0, [0.0, 1.0, 2.0], **kw)
        assert wa == wb and wa[0][1].startswith("Illegal input detected"), kw
        np.testing.assert_array_equal(a.numpy()[:2], b[:2])      # y0 twice, as SciPy
        assert np.isnan(a.numpy()[2]).all()
    a, b, wa, wb = _both(_decay, _decay, [], [0.0, 1.0])
    assert wa == wb and a.shape == b.shape == (2, 0)


def test_scipys_arguments():
    t = np.linspace(0, 2, 5)
    y0 = np.array([1.0, 0.0])
    want = si.odeint(_osc_np, y0, t, args=(2.0,), rtol=1e-11, atol=1e-11)
    for got in (odeint(_osc_nd, y0, t, args=(2.0,)), odeint(_osc_nd, y0, t, 2.0),
                odeint(lambda t, y, w: _osc_nd(y, t, w), y0, t, args=(2.0,), tfirst=True),
                odeint(_osc_nd, y0, t, args=(2.0,), rtol=[1e-9, 1e-10], atol=1e-12, h0=1e-3),
                odeint(_osc_nd, list(y0), list(t), args=(2.0,), hmax=0.05, mxstep=10 ** 4)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8)
    with pytest.raises(TypeError, match="Extra arguments must be in a tuple"):
        odeint(_osc_nd, y0, t, args=2.0)
    with pytest.raises(TypeError, match="not both"):
        odeint(_osc_nd, y0, t, 2.0, args=(2.0,))
    with pytest.raises(RuntimeError, match=r"size of the array returned by func \(1\)"):
        odeint(lambda y, t: y[:1], y0, t)
    with pytest.raises(ValueError, match="rtol"):
        odeint(_osc_nd, y0, t, args=(2.0,), rtol=[1e-8, 1e-8, 1e-8])
    # non-array arguments reach func unchanged (an int index, a callable)
    got = odeint(lambda y, t, i, g: g(y) * (i + 1), [1.0], [0.0, 1.0], args=(1, lambda v: -v))
    np.testing.assert_allclose(got.numpy()[1], np.exp(-2.0), rtol=1e-7)
    # hmax bounds every step; full_output's record
    y, info = odeint(_osc_nd, y0, t, args=(2.0,), hmax=0.01, full_output=True)
    assert float(tnp.max(info["hu"])) <= 0.01 + 1e-15 and int(info["nst"][-1]) >= 200
    assert set(info) >= {"hu", "tcur", "nst", "nfe", "nje", "nqu", "mused", "imxer", "message"}
    np.testing.assert_allclose(info["tcur"].numpy(), t[1:])
    assert info["nst"].dtype == np.int32 and (np.diff(info["nst"].numpy()) >= 0).all()
    _, info = odeint(_decay, 1.0, [1.0, 0.0], full_output=True)
    assert float(info["hu"][0]) < 0 and float(info["tcur"][0]) == 0.0      # as SciPy's
    with pytest.warns(ODEintWarning, match="Integration successful"):
        odeint(_decay, 1.0, [0.0, 1.0], printmessg=True)


def test_tcrit_steps_land_on_critical_times():
    """y' = |t - 1.5| has a kink at 1.5: with tcrit no step crosses it, and on each side the
    fifth-order method integrates the linear derivative exactly; tcrit rows are not in the
    output (SciPy's values agree to its tolerance)."""
    def f(y, t):
        return tnp.abs(t - 1.5) + 0 * y
    want = [0.0, 1.0, 2.25]
    y = odeint(f, 0.0, [0.0, 1.0, 3.0], tcrit=[1.5, 7.0])
    assert y.shape == (3, 1)
    np.testing.assert_allclose(y.numpy()[:, 0], want, rtol=1e-14, atol=1e-15)
    y = odeint(f, 2.25, [3.0, 0.0], tcrit=[1.5])
    np.testing.assert_allclose(y.numpy()[1, 0], 0.0, atol=1e-14)
    np.testing.assert_allclose(si.odeint(lambda y, t: abs(t - 1.5), 0.0, [0.0, 1.0, 3.0],
                                         tcrit=[1.5])[:, 0], want, rtol=1e-6)


def test_shapes_and_dtypes_as_scipy():
    for y0, t in ((np.float32(1.0), np.array([0.0, 1.0], np.float32)), (1, [0, 1]),
                  ([1, 2], [0.0, 1.0]), (np.array([0.5]), [0.0, 0.5, 1.0])):
        a, b, _, _ = _both(_decay, _decay, y0, t)
        assert a.dtype == b.dtype == np.float64 and a.shape == b.shape
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-7)
    with pytest.raises(TypeError):
        odeint(_decay, 1.0 + 1j, [0.0, 1.0])
    # extensions: a matrix state keeps its shape; a structure of arrays stays a structure
    assert odeint(_decay, np.ones((2, 3)), [0.0, 1.0]).shape == (2, 2, 3)
    p, v = odeint(lambda s, t: (s[1], -s[0]), (tnp.asarray(1.0), tnp.asarray(0.0)),
                  [0.0, 1.0])
    np.testing.assert_allclose([float(p[1]), float(v[1])], [np.cos(1.0), -np.sin(1.0)],
                               rtol=1e-7)


def _fd(loss, base, h=1e-6):
    out = []
    for i in range(len(base)):
        g = np.zeros(np.shape(base[i]))
        for j in np.ndindex(g.shape):
            p = [np.array(b, float) for b in base]
            m = [np.array(b, float) for b in base]
            p[i][j] += h
            m[i][j] -= h
            g[j] = (float(loss(*map(tnp.asarray, p))) - float(loss(*map(tnp.asarray, m)))) / (
                2 * h)
        out.append(g)
    return out


@pytest.mark.parametrize("times", ["increasing", "decreasing", "decreasing repeated"])
def test_adjoint_gradients_in_both_directions(times):
    t = np.array(_TIMES[times])
    ct = np.random.default_rng(1).normal(size=(len(t), 2))

    def loss(y0, tt, w):
        return tnp.sum(odeint(_osc_nd, y0, tt, args=(w,), rtol=1e-10, atol=1e-10) * ct)
    base = [np.array([1.0, -0.5]), t, np.array(1.7)]
    args = [tnp.asarray(b) for b in base]
    with nf.GradientTape() as tape:
        tape.watch(args)
        val = loss(*args)
    grads = tape.gradient(val, args)
    # (repeated times: a difference in t would make them non-monotonic; y0 and w only)
    keep = [0, 2] if "repeated" in times else [0, 1, 2]
    fds = _fd(lambda y0, w: loss(y0, args[1], w), [base[0], base[2]]) if len(keep) == 2 \
        else _fd(loss, base)
    for g, fd, name in zip([grads[i] for i in keep], fds, [("y0", "t", "w")[i] for i in keep]):
        assert g.dtype == np.float64 and g.shape == fd.shape
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-5, atol=1e-6, err_msg=name)


def test_compiled_and_vectorized_in_both_directions():
    fn = nf.function(lambda y0, tt: odeint(_osc_nd, y0, tt, args=(1.3,)))
    y0 = tnp.asarray([1.0, 0.0])
    for t in (_TIMES["increasing"], _TIMES["decreasing"]):
        eager = odeint(_osc_nd, y0, t, args=(1.3,)).numpy()
        np.testing.assert_allclose(fn(y0, tnp.asarray(t)).numpy(), eager, rtol=1e-12)
    # each example its own direction
    ts = tnp.asarray([_TIMES["increasing"], _TIMES["decreasing"]])
    vm = nf.vectorized_map(lambda tt: odeint(_osc_nd, y0, tt, args=(1.3,)), ts).numpy()
    for k in range(2):
        np.testing.assert_allclose(vm[k], odeint(_osc_nd, y0, ts[k], args=(1.3,)).numpy(),
                                   rtol=1e-9, atol=1e-12)
    # the failure warning at every run of a compiled function (a RuntimeWarning there)
    g = nf.function(lambda y0: odeint(lambda y, t: tnp.sin(50 * t) * y, y0,
                                      [0.0, 100.0, 200.0], mxstep=50))
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="Excess work done"):
            out = g(tnp.ones(1)).numpy()
        assert np.isnan(out[2]).all() and np.isfinite(out[1]).all()
