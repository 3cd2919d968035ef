"""Gradient rules at their edges.

Part 1, the sweep: every op-table record with float64 (and complex128) samples, at edge inputs
made from its own samples (all zeros, all -0.0, all elements equal, a mix of zeros and repeats):
reverse mode, forward mode and second order (nested tapes) against differences of the function.
Where the function is differentiable there (the one-sided differences agree) the directional
derivative must equal the central difference; at a kink (abs at 0, max at a tie) it must lie
between the one-sided derivatives, which every convention in use (JAX's: sign(0) = 0, ties split
evenly) satisfies and a NaN or a one-sided value from a switch in the wrong place does not.
Points where the function or its differences are not finite (log at 0), or where it jumps
(floor at 0: the difference quotients do not scale with the step), say nothing and are skipped;
so are inputs the function rejects (cholesky of zeros). Edges that are points without a
derivative for a record (ties of sort, degenerate spectra) are declared in the op table
(`NON_DIFFERENTIABLE_EDGES`, with the reason) and not checked.

Part 2: the named edges (prod and cumprod at zeros, fill values and endpoints of creation
functions, logaddexp's curvature at ties, var/std of complex size-1 inputs, complex gradients of
the decompositions, custom_gradient's checks and Variables)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree

from optable import RECORDS, F64, C128

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]

H = 1e-6


# ------------------------------------------------------------------ part 1: the sweep
def _edges(a, rng):
    """Edge versions of one float/complex sample array."""
    if a.size == 0:
        return {}
    out = {"zeros": np.zeros_like(a), "negzero": np.full_like(a, -0.0),
           "ties": np.full_like(a, a.flat[0])}
    if a.size > 2:
        m = a.copy()
        m.flat[::3] = 0
        m.flat[1::3] = m.flat[-1] if a.size % 3 != 2 else m.flat[0]
        out["mixed"] = m
    return out


def _diff_positions(rec, s, kinds):
    pos = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray) and a.dtype.kind in kinds]
    if rec.diff_args is not None:
        pos = [i for i in pos if i in rec.diff_args]
    return pos


def _outs(rec, args, s):
    out = rec.call(tnp, *[tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args],
                   **s.kwargs)
    return [o for o in tree.flatten(out) if isinstance(o, tnp.ndarray) and o.dtype.kind in "fc"]


def _loss(outs, cts):
    return sum(tnp.sum(tnp.real(o * c)) for o, c in zip(outs, cts))


def _value(rec, s, args, cts):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return float(_loss(_outs(rec, args, s), cts).numpy())


def _shift(s_args, pos, dirs, eps):
    args = list(s_args)
    for i, d in zip(pos, dirs):
        args[i] = np.asarray(s_args[i] + eps * d)
    return args


def _lipschitz(f0, fp, fm, fp2, fm2, k):
    """Whether f is (piecewise) linear to first order at the scale of the steps: the one-sided
    difference quotients at steps h and h/k agree. A jump (floor at 0), an infinite slope
    (cbrt at 0) or a pole fail it: no derivative to compare there."""
    tol = 1e-9 * (1 + abs(f0))
    return (abs((fp - f0) - k * (fp2 - f0)) <= 1e-3 * abs(fp - f0) + tol
            and abs((f0 - fm) - k * (f0 - fm2)) <= 1e-3 * abs(f0 - fm) + tol)


def _consistent(an, f0, fp, fm, h, what):
    """an (a directional derivative) against f(x), f(x + h d), f(x - h d)."""
    central = (fp - fm) / (2 * h)
    right, left = (fp - f0) / h, (f0 - fm) / h
    scale = 1 + abs(f0) + abs(central)
    assert np.isfinite(an), f"{what}: {an} where the differences are finite ({left}, {right})"
    if abs(right - left) <= 1e-4 * scale:      # differentiable here
        assert abs(an - central) <= 1e-5 * scale, f"{what}: {an}, central differences {central}"
    else:                                       # a kink: between the one-sided derivatives
        lo, hi = min(left, right), max(left, right)
        assert lo - 1e-5 * scale <= an <= hi + 1e-5 * scale, \
            f"{what}: {an} outside the one-sided derivatives [{lo}, {hi}]"


def _declared(rec, dt, edge, order=1):
    """The record's reason why `edge` has no derivative (None: it is checked)."""
    keys = [edge] + ([edge + "/2"] if order == 2 else [])
    if dt.kind == "c":
        keys += ["c:" + k for k in keys]
    return next((rec.edge_reasons[k] for k in keys if k in rec.edge_reasons), None)


def _edge_cases(rec, dt):
    rng = np.random.default_rng([7, sum(map(ord, rec.name)), dt.num])
    kinds = "fc" if dt.kind == "c" else "f"
    cases = []
    for s in rec.samples(rng, dt)[:4]:
        pos = _diff_positions(rec, s, kinds)
        if not pos or any(s.args[i].size > 64 for i in pos):
            continue
        per = [_edges(s.args[i], rng) for i in pos]
        for edge in ("zeros", "negzero", "ties", "mixed"):
            if not all(edge in p for p in per) or _declared(rec, dt, edge):
                continue
            args = list(s.args)
            for i, p in zip(pos, per):
                args[i] = p[edge]
            cases.append((s, edge, tuple(args), pos))
    return cases


def _records(dt):
    return [pytest.param(r, id=r.name) for r in RECORDS
            if dt in r.dtypes and r.diff_args != () and r.values == "values"]


def _check_record_at_edges(rec, dt, second_order):
    rng = np.random.default_rng([11, sum(map(ord, rec.name))])
    for s, edge, args, pos in _edge_cases(rec, dt):
        what = f"{rec.name}{s!r} at {edge}"
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                outs = _outs(rec, args, s)
        except Exception:      # noqa: BLE001  (the function rejects this input: nothing to say)
            continue
        if not outs or not all(np.all(np.isfinite(o.numpy())) for o in outs):
            continue
        cts = [rng.standard_normal(o.shape) for o in outs]
        dirs = [rng.standard_normal(args[i].shape) + (
            1j * rng.standard_normal(args[i].shape) if args[i].dtype.kind == "c" else 0)
            for i in pos]
        f0 = _value(rec, s, args, cts)
        try:
            fp, fm, fp2, fm2 = (_value(rec, s, _shift(args, pos, dirs, e), cts)
                                for e in (H, -H, H / 16, -H / 16))
        except Exception:      # noqa: BLE001  (an edge of the domain: no two-sided difference)
            continue
        if not np.isfinite([f0, fp, fm, fp2, fm2]).all() or not _lipschitz(
                f0, fp, fm, fp2, fm2, 16):
            continue
        xs = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        with nf.GradientTape() as tape:
            for i in pos:
                tape.watch(xs[i])
            loss = _loss(_outs(rec, xs, s) if False else [
                o for o in tree.flatten(rec.call(tnp, *xs, **s.kwargs))
                if isinstance(o, tnp.ndarray) and o.dtype.kind in "fc"], cts)
        with np.errstate(all="ignore"):
            gs = tape.gradient(loss, [xs[i] for i in pos], unconnected_gradients="zero")
        an = float(sum(np.real(np.sum(g.numpy() * d)) for g, d in zip(gs, dirs)))
        _consistent(an, f0, fp, fm, H, f"reverse mode, {what}")
        _check_compiled_gradient(rec, s, args, pos, cts, gs, what)
        # forward mode: the same directional derivative
        xs = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        with np.errstate(all="ignore"), nf.ForwardAccumulator(
                [xs[i] for i in pos], [tnp.asarray(d.astype(args[i].dtype))
                                       for i, d in zip(pos, dirs)]) as acc:
            fl = _loss([o for o in tree.flatten(rec.call(tnp, *xs, **s.kwargs))
                        if isinstance(o, tnp.ndarray) and o.dtype.kind in "fc"], cts)
        jv = acc.jvp(fl, unconnected_gradients="zero")
        fwd = float(np.real(jv.numpy()))
        assert abs(fwd - an) <= 1e-6 * (1 + abs(an)), \
            f"forward mode, {what}: {fwd}, reverse mode gives {an}"
        if second_order and dt == F64 and not _declared(rec, dt, edge, order=2):
            _check_second_order(rec, s, args, pos, cts, dirs, rng, what)


def _check_compiled_gradient(rec, s, args, pos, cts, want, what):
    """The backward pass traced into a graph gives the eager gradient at the edge too (signed
    zeros included: a rewrite like x + 0 -> x must not change them)."""
    if not rec.jit:
        return

    def grads(*arrs):
        xs = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        for i, a in zip(pos, arrs):
            xs[i] = a
        with nf.GradientTape() as tape:
            for i in pos:
                tape.watch(xs[i])
            loss = _loss([o for o in tree.flatten(rec.call(tnp, *xs, **s.kwargs))
                          if isinstance(o, tnp.ndarray) and o.dtype.kind in "fc"], cts)
        return tape.gradient(loss, [xs[i] for i in pos], unconnected_gradients="zero")
    with np.errstate(all="ignore"):
        got = nf.function(grads)(*[tnp.asarray(args[i]) for i in pos])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-12, equal_nan=True,
                                   err_msg=f"compiled gradient, {what}")


def _grad_dot(rec, s, args, pos, cts, d2):
    """(<grad f(args), d2>, the nested-tape gradient of that w.r.t. the args at pos)."""
    xs = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        with nf.GradientTape() as outer:
            for i in pos:
                outer.watch(xs[i])
            with nf.GradientTape() as inner:
                for i in pos:
                    inner.watch(xs[i])
                loss = _loss([o for o in tree.flatten(rec.call(tnp, *xs, **s.kwargs))
                              if isinstance(o, tnp.ndarray) and o.dtype.kind in "fc"], cts)
            gs = inner.gradient(loss, [xs[i] for i in pos], unconnected_gradients="zero")
            gd = sum(tnp.sum(g * d) for g, d in zip(gs, d2))
        hv = outer.gradient(gd, [xs[i] for i in pos], unconnected_gradients="zero")
    return float(np.asarray(gd)), hv


def _check_second_order(rec, s, args, pos, cts, d1, rng, what):
    d2 = [rng.standard_normal(args[i].shape) for i in pos]
    g0, hv = _grad_dot(rec, s, args, pos, cts, d2)
    try:
        gp, gm, gp2, gm2 = (_grad_dot(rec, s, _shift(args, pos, d1, e), pos, cts, d2)[0]
                            for e in (1e-5, -1e-5, 1e-5 / 16, -1e-5 / 16))
    except Exception:      # noqa: BLE001
        return
    if not np.isfinite([g0, gp, gm, gp2, gm2]).all() or not _lipschitz(g0, gp, gm, gp2, gm2, 16):
        return       # the gradient jumps here (abs at 0): no second derivative to compare
    an = float(sum(np.sum(h.numpy() * d) for h, d in zip(hv, d1)))
    _consistent(an, g0, gp, gm, 1e-5, f"second order, {what}")


@pytest.mark.parametrize("rec", _records(F64))
def test_gradients_at_edges(rec):
    _check_record_at_edges(rec, F64, second_order=True)


@pytest.mark.parametrize("rec", _records(C128))
def test_complex_gradients_at_edges(rec):
    _check_record_at_edges(rec, C128, second_order=False)


def test_declared_edges_name_records_and_edges():
    """Every declaration names a record and a known edge (so none rots silently)."""
    names = {r.name for r in RECORDS}
    from optable import NON_DIFFERENTIABLE_EDGES
    for reason, (recs, edges) in NON_DIFFERENTIABLE_EDGES.items():
        assert reason and set(recs) <= names, set(recs) - names
        for e in edges:
            base = e[2:] if e.startswith("c:") else e
            assert base.split("/")[0] in ("zeros", "negzero", "ties", "mixed"), e


# ------------------------------------------------------------------ part 2: named edges
def _grad(f, *xs):
    xs = [tnp.asarray(x) for x in xs]
    with nf.GradientTape() as t:
        for x in xs:
            t.watch(x)
        y = f(*xs)
    return [None if g is None else g.numpy() for g in t.gradient(y, xs)]


def _hess_diag(f, x):
    x = tnp.asarray(x)
    with nf.GradientTape() as t2:
        t2.watch(x)
        with nf.GradientTape() as t1:
            t1.watch(x)
            y = f(x)
        g = t1.gradient(y, x)
        gs = tnp.sum(g)
    return g.numpy(), t2.gradient(gs, x).numpy()


def _others(a, axis=None):
    """The exact gradient of prod: the product of the other elements."""
    a = np.asarray(a, float)
    g = np.zeros_like(a)
    it = [slice(None)] * a.ndim
    for idx in np.ndindex(a.shape):
        if axis is None:
            m = np.ones(a.shape, bool)
            m[idx] = False
            g[idx] = np.prod(a[m])
        else:
            row = list(idx)
            row[axis] = slice(None)
            line = a[tuple(row)].copy()
            line[idx[axis]] = 1
            g[idx] = np.prod(line)
    del it
    return g


@pytest.mark.parametrize("a", [[2.0, 0.0, 3.0], [2.0, 0.0, 0.0], [0.0], [1.5, -2.0, 4.0],
                               [[2.0, 0.0, 3.0], [1.0, 2.0, 3.0]], [[0.0, 0.0], [0.0, 5.0]]])
def test_prod_gradient_is_the_product_of_the_others(a):
    a = np.asarray(a)
    np.testing.assert_array_equal(_grad(lambda x: tnp.prod(x), a)[0], _others(a))
    for axis in range(a.ndim):
        for keepdims in (False, True):
            ct = np.arange(1.0, 1.0 + np.prod(np.delete(a.shape, axis))).reshape(
                np.prod(a, axis=axis, keepdims=keepdims).shape)
            g = _grad(lambda x: tnp.sum(tnp.prod(x, axis=axis, keepdims=keepdims) * ct), a)[0]
            want = _others(a, axis) * (ct if keepdims else np.expand_dims(ct, axis))
            np.testing.assert_array_equal(g, want)
    if a.ndim == 2:
        g = _grad(lambda x: tnp.prod(x, axis=(0, 1)), a)[0]
        np.testing.assert_array_equal(g, _others(a))
    f = nf.function(lambda x: nf.grad(lambda y: tnp.prod(y))(x))
    np.testing.assert_array_equal(f(tnp.asarray(a)).numpy(), _others(a))


def test_prod_second_order_at_zeros():
    a = np.array([2.0, 0.0, 3.0])
    # H_ij = prod of the elements other than i and j (0 on the diagonal)
    want = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            if i != j:
                want[i, j] = np.prod(np.delete(a, [i, j]))
    got = nf.hessian(lambda x: tnp.prod(x))(tnp.asarray(a)).numpy()
    np.testing.assert_array_equal(got, want)


def test_cumprod_gradient_at_zeros():
    for a in ([2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 0.0]):
        a = np.asarray(a)
        jac = nf.jacrev(lambda x: tnp.cumprod(x))(tnp.asarray(a)).numpy()
        want = np.zeros((3, 3))
        for j in range(3):
            for i in range(j + 1):
                want[j, i] = np.prod(np.delete(a[:j + 1], i))
        np.testing.assert_array_equal(jac, want)
        # second order: d^2 sum(c * cumprod(x)) / dx_i dx_k = sum_j c_j prod_{m<=j, m!=i,k} x_m
        c = np.array([1.0, 2.0, 3.0])
        hess = nf.hessian(lambda x: tnp.sum(tnp.cumprod(x) * c))(tnp.asarray(a)).numpy()
        want2 = np.zeros((3, 3))
        for i in range(3):
            for k in range(3):
                if i != k:
                    want2[i, k] = sum(c[j] * np.prod(np.delete(a[:j + 1], [i, k]))
                                      for j in range(max(i, k), 3))
        np.testing.assert_array_equal(hess, want2)


def test_full_and_full_like_give_the_fill_value_its_gradient():
    ct = np.arange(6.0).reshape(2, 3)
    assert _grad(lambda v: tnp.sum(tnp.full((2, 3), v) * ct), np.array(2.0))[0] == 15.0
    assert _grad(lambda v: tnp.sum(tnp.full_like(np.ones((2, 3)), v) * ct),
                 np.array(2.0))[0] == 15.0
    g = _grad(lambda v: tnp.sum(tnp.full((2, 3), v) * ct), np.array([1.0, 2.0, 3.0]))[0]
    np.testing.assert_array_equal(g, ct.sum(0))
    # values as NumPy: dtype of the fill, casting into a given dtype, broadcasting, -0.0
    for args in (((2, 2), np.array(-0.0)), ((3,), np.array([1, 2, 3])), ((2,), np.array(2.7))):
        np.testing.assert_array_equal(tnp.full(args[0], tnp.asarray(args[1])).numpy(),
                                      np.full(*args))
        assert tnp.full(args[0], tnp.asarray(args[1])).dtype == np.full(*args).dtype
    assert tnp.full_like(np.ones(3, np.int32), tnp.asarray(2.7)).dtype == np.int32
    with pytest.raises(ValueError):
        tnp.full((2,), tnp.asarray([1.0, 2.0, 3.0]))
    f = nf.function(lambda v: nf.grad(lambda w: tnp.sum(tnp.full((4,), w)))(v))
    assert float(f(tnp.asarray(1.0))) == 4.0
    sig = [nf.TensorSpec([None], "float64"), nf.TensorSpec([], "float64")]
    r = nf.function(lambda a, v: tnp.full_like(a, v), input_signature=sig)(
        tnp.ones(3), tnp.asarray(-0.0))
    assert np.all(np.signbit(r.numpy())) and r.shape == (3,)


@pytest.mark.parametrize("fn", ["linspace", "logspace", "geomspace"])
def test_spaced_ranges_differentiate_in_their_endpoints(fn):
    start, stop = (1.0, 3.0) if fn == "geomspace" else (0.5, 2.0)
    for endpoint in (True, False):
        for a, b in ((np.array(start), np.array(stop)),
                     (np.array([start, start + 1]), np.array([[stop], [stop + 2]]))):
            ct = np.random.default_rng(0).standard_normal(
                getattr(np, fn)(a, b, 5, endpoint=endpoint).shape)

            def loss(x, y):
                return tnp.sum(getattr(tnp, fn)(x, y, 5, endpoint=endpoint) * ct)
            gx, gy = _grad(loss, a, b)
            for g, arg, k in ((gx, a, 0), (gy, b, 1)):
                num = np.zeros_like(arg)
                for idx in np.ndindex(arg.shape):
                    e = np.zeros_like(arg)
                    e[idx] = 1e-6
                    p = [a, b]
                    p[k] = arg + e
                    m = [a, b]
                    m[k] = arg - e
                    num[idx] = (np.sum(getattr(np, fn)(*p, 5, endpoint=endpoint) * ct)
                                - np.sum(getattr(np, fn)(*m, 5, endpoint=endpoint) * ct)) / 2e-6
                np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)
    # compiled with traced endpoints, the same values
    f = nf.function(lambda x, y: getattr(tnp, fn)(x, y, 7))
    np.testing.assert_allclose(f(tnp.asarray(start), tnp.asarray(stop)).numpy(),
                               getattr(np, fn)(start, stop, 7), rtol=1e-15)


def test_logaddexp_curvature_at_ties():
    for fn, curv in (("logaddexp", 0.25), ("logaddexp2", np.log(2) / 4)):
        for x0 in (0.0, 3.0, -50.0):
            g, h = _hess_diag(lambda x: getattr(tnp, fn)(x, tnp.asarray(x0)), np.array(x0))
            assert float(g) == 0.5
            np.testing.assert_allclose(float(h), curv, rtol=1e-12)
            fwd = nf.jacfwd(nf.grad(lambda x: getattr(tnp, fn)(x, tnp.asarray(x0))))(
                tnp.asarray(x0))
            np.testing.assert_allclose(float(fwd), curv, rtol=1e-12)
    # softplus = logaddexp(x, 0): its second derivative sigma(x)(1 - sigma(x)) everywhere
    x = np.linspace(-5, 5, 11)
    _, h = _hess_diag(lambda v: tnp.sum(tnp.logaddexp(v, 0.0)), x)
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(h, sig * (1 - sig), rtol=1e-12)
    # infinite operands: the value NumPy gives, the gradient max's (ties split)
    x = np.array([np.inf, 1.0, np.inf, -np.inf, 0.0])
    y = np.array([1.0, np.inf, np.inf, -np.inf, -np.inf])
    gx, gy = _grad(lambda a, b: tnp.sum(tnp.logaddexp(a, b)), x, y)
    np.testing.assert_array_equal(gx, [1, 0, 0.5, 0.5, 1])
    np.testing.assert_array_equal(gy, [0, 1, 0.5, 0.5, 0])


def test_var_std_of_complex_size_one_and_zero_variance():
    for a in (np.array([1 + 2j]), np.array([[1 + 2j], [3 - 1j]]), np.array([2.0, 2.0, 2.0])):
        for fn in ("var", "std"):
            for kw in ({}, {"axis": -1}):
                want = getattr(np, fn)(a, **kw)
                with nf.GradientTape() as t:
                    x = tnp.asarray(a)
                    t.watch(x)
                    r = getattr(tnp, fn)(x, **kw)
                    loss = tnp.sum(r)
                np.testing.assert_array_equal(r.numpy(), want)
                g = t.gradient(loss, x).numpy()
                assert np.all(np.isfinite(g)), (fn, a, kw, g)
                if np.all(want == 0):           # zero variance: gradient 0, not NaN
                    assert np.all(g == 0), (fn, a, kw, g)
                c = nf.function(lambda x: getattr(tnp, fn)(x, **kw))(tnp.asarray(a))
                np.testing.assert_array_equal(c.numpy(), want)


# ------------------------------------------------------------------ complex decompositions
def _cplx(rng, *s):
    return rng.standard_normal(s) + 1j * rng.standard_normal(s)


def _check_complex_fd(f, a, rng):
    """dL = Re(sum(g * dA)) (the bilinear pairing) against central differences."""
    x = tnp.asarray(a)
    with nf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    g = t.gradient(y, x).numpy()
    for d in (rng.standard_normal(a.shape), 1j * rng.standard_normal(a.shape),
              _cplx(rng, *a.shape)):
        num = (float(f(tnp.asarray(a + H * d))) - float(f(tnp.asarray(a - H * d)))) / (2 * H)
        np.testing.assert_allclose(np.real(np.sum(g * d)), num, rtol=1e-5, atol=1e-7)


def _hpd(rng, n):
    b = _cplx(rng, n, n)
    return b @ b.conj().T + n * np.eye(n)


def _complex_losses(rng, shape):
    """Losses of each decomposition that do not depend on the phases of its vectors."""
    m, n = shape
    k = min(m, n)
    c, cu, cv = rng.standard_normal(k), rng.standard_normal((m, k)), rng.standard_normal((k, n))
    ca, cq, cr, cp = (_cplx(rng, m, n), _cplx(rng, m, k), _cplx(rng, k, n), _cplx(rng, n, m))
    b, cx = _cplx(rng, m, 2), _cplx(rng, n, 2)
    L = tnp.linalg
    out = {
        "svdvals": lambda x: tnp.sum(L.svdvals(x) * c),
        "svd: U diag(c) Vh": lambda x: (lambda u, s, vh: tnp.sum(tnp.real((u * c) @ vh * ca)))(
            *L.svd(x, full_matrices=False)),
        "svd: |U|^2, |Vh|^2, S": lambda x: (lambda u, s, vh: tnp.sum(tnp.abs(u) ** 2 * cu)
                                            + tnp.sum(tnp.abs(vh) ** 2 * cv) + tnp.sum(s * c))(
            *L.svd(x, full_matrices=False)),
        "qr": lambda x: (lambda q, r: tnp.sum(tnp.real(q * cq)) + tnp.sum(tnp.imag(r * cr)))(
            *L.qr(x)),
        "pinv": lambda x: tnp.sum(tnp.real(L.pinv(x) * cp)),
        "lstsq x": lambda x: tnp.sum(tnp.real(L.lstsq(x, b)[0] * cx)),
        "lstsq s": lambda x: tnp.sum(L.lstsq(x, b)[3] * c),
    }
    if m > n:
        out["lstsq residuals"] = lambda x: tnp.sum(L.lstsq(x, b)[1] * np.array([1.0, 2.0]))
    return out


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_complex_gradients_of_rectangular_decompositions(shape):
    rng = np.random.default_rng(sum(shape))
    a = _cplx(rng, *shape)
    for name, f in _complex_losses(rng, shape).items():
        try:
            _check_complex_fd(f, a, rng)
        except AssertionError as e:
            raise AssertionError(f"{name} {shape}: {e}") from None


def test_complex_gradients_of_hermitian_decompositions():
    rng = np.random.default_rng(3)
    n = 3
    a = _hpd(rng, n)
    c = _cplx(rng, n, n)
    w = np.arange(1.0, n + 1)
    L = tnp.linalg
    losses = {
        "cholesky": lambda x: tnp.sum(tnp.real(L.cholesky(x) * c)),
        "cholesky upper": lambda x: tnp.sum(tnp.real(L.cholesky(x, upper=True) * c)),
        "eigvalsh": lambda x: tnp.sum(L.eigvalsh(x) * w),
        "eigvalsh U": lambda x: tnp.sum(L.eigvalsh(x, UPLO="U") * w),
        "eigh |V|^2": lambda x: tnp.sum(tnp.abs(L.eigh(x)[1]) ** 2 * c.real),
        "eigh: V f(w) V^H": lambda x: (lambda e, v: tnp.sum(tnp.real(
            (v * tnp.exp(0.1 * e)) @ tnp.conj(v.T) * c)))(*L.eigh(x)),
        "svd hermitian": lambda x: tnp.sum(L.svd(x, hermitian=True)[1] * w),
        "pinv hermitian": lambda x: tnp.sum(tnp.real(L.pinv(x, hermitian=True) * c)),
    }
    for name, f in losses.items():
        try:
            _check_complex_fd(f, a, rng)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    # the gradient lives on the triangle read, with a real diagonal
    x = tnp.asarray(a)
    with nf.GradientTape() as t:
        t.watch(x)
        y = tnp.sum(tnp.real(L.cholesky(x) * c))
    g = t.gradient(y, x).numpy()
    assert np.all(np.triu(g, 1) == 0) and np.all(np.diag(g).imag == 0)


def test_complex_gradients_compiled_match_eager():
    rng = np.random.default_rng(5)
    a = _cplx(rng, 3, 3)
    for name, f in _complex_losses(rng, (3, 3)).items():
        g = nf.grad(f)
        np.testing.assert_allclose(nf.function(g)(tnp.asarray(a)).numpy(),
                                   g(tnp.asarray(a)).numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


# ------------------------------------------------------------------ custom_gradient
def test_custom_gradient_rejects_wrong_shapes_and_counts():
    x = tnp.asarray([1.0, 2.0])

    @nf.custom_gradient
    def wrong_shape(v):
        return tnp.sum(v), lambda dy: tnp.ones(3)

    @nf.custom_gradient
    def too_few(u, v):
        return tnp.sum(u * v), lambda dy: dy

    @nf.custom_gradient
    def too_many(v):
        return tnp.sum(v), lambda dy: (dy * v, dy * v)

    for f, args, msg in ((wrong_shape, (x,), r"wrong_shape.*shape \(3,\).*shape \(2,\)"),
                         (too_few, (x, x), "too_few.*1 gradient"),
                         (too_many, (x,), "too_many.*2 gradient")):
        with nf.GradientTape() as t:
            t.watch(x)
            y = f(*args)
        with pytest.raises(ValueError, match=msg):
            t.gradient(y, x)

    @nf.custom_gradient
    def fine(u, v):
        return tnp.sum(u * v), lambda dy: (dy * v, None)
    with nf.GradientTape() as t:
        t.watch(x)
        y = fine(x, tnp.asarray([3.0, 4.0]))
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [3.0, 4.0])


def test_custom_gradient_passes_variable_gradients():
    w = nf.Variable(tnp.asarray([2.0, 3.0]), name="w")
    other = nf.Variable(tnp.asarray(5.0), name="other")   # watched elsewhere, unused by f
    seen = []

    @nf.custom_gradient
    def f(x):
        y = tnp.sum(x * w)

        def grad_fn(dy, variables=None):
            seen.append(list(variables))
            return dy * w.value() * 10, [dy * x * 100]
        return y, grad_fn
    x = tnp.asarray([1.0, 1.0])
    for run in (lambda fn: fn(), lambda fn: nf.function(fn)()):
        seen.clear()

        def step():
            with nf.GradientTape() as t:
                t.watch(x)
                _ = other * 1.0
                y = f(x)
            return t.gradient(y, [x, w, other])
        gx, gw, go = run(step)
        np.testing.assert_array_equal(gx.numpy(), [20.0, 30.0])
        np.testing.assert_array_equal(gw.numpy(), [100.0, 100.0])
        assert go is None
        assert [[v is w for v in vs] for vs in seen] == [[True]]

    @nf.custom_gradient
    def g(x):
        return tnp.sum(x * w), lambda dy: dy * w.value()
    with pytest.raises(TypeError, match="variables"):
        with nf.GradientTape() as t:
            t.watch(x)
            g(x)

    @nf.custom_gradient
    def wrong_var_grads(x):
        return tnp.sum(x * w), lambda dy, variables=None: (dy * w.value(), [])
    with nf.GradientTape() as t:
        t.watch(x)
        y = wrong_var_grads(x)
    with pytest.raises(ValueError, match="wrong_var_grads.*0 gradient.*1 variables"):
        t.gradient(y, [x, w])


def test_det_gradient_at_singular_matrices_is_the_adjugate():
    rng = np.random.default_rng(8)
    mats = [np.zeros((3, 3)), np.ones((3, 3)), np.array([[1.0, 2, 3], [2, 4, 6], [0, 1, 5]]),
            np.diag([1.0, 2.0, 0.0]), rng.standard_normal((2, 3, 3)),
            np.array([[1.0, 2j], [0.5j, -1.0]])]
    for a in mats:
        x = tnp.asarray(a)
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.sum(tnp.real(tnp.linalg.det(x)))
        g = t.gradient(y, x).numpy()
        for d in (rng.standard_normal(a.shape), 1j * rng.standard_normal(a.shape)):
            if a.dtype.kind != "c":
                d = d.real
            num = (np.sum(np.real(np.linalg.det(a + H * d)))
                   - np.sum(np.real(np.linalg.det(a - H * d)))) / (2 * H)
            np.testing.assert_allclose(np.real(np.sum(g * d)), num, rtol=1e-6, atol=1e-8)
    # second order at rank n - 1: exact
    a = np.array([[1.0, 2, 3], [2, 4, 6], [0, 1, 5]])
    hess = nf.hessian(lambda v: tnp.linalg.det(v))(tnp.asarray(a)).numpy().reshape(9, 9)
    gr = nf.grad(lambda v: tnp.linalg.det(v))
    num = np.stack([(gr(tnp.asarray(a + e.reshape(3, 3))).numpy()
                     - gr(tnp.asarray(a - e.reshape(3, 3))).numpy()).ravel() / (2 * H)
                    for e in np.eye(9) * H], axis=1)
    np.testing.assert_allclose(hess, num, atol=1e-6)


def test_nn_activations_curvature_at_zero():
    """softplus''(0) = 1/4, log_sigmoid''(0) = -1/4, gelu''(0) = 2 phi(0) (no switch at 0)."""
    for f, want, tol in ((nf.nn.softplus, 0.25, 1e-12), (nf.nn.log_sigmoid, -0.25, 1e-12),
                         (nf.nn.gelu, 2 / np.sqrt(2 * np.pi), 1e-4)):
        h = float(nf.hessian(lambda x: f(x))(tnp.asarray(0.0)).numpy())
        np.testing.assert_allclose(h, want, rtol=tol)


# ------------------------------------------------------------------ power at zero
def _poly_grads(x, c, ks, kind):
    """d/dx sum_j c_j x**k_j by every path: tape, compiled tape, forward mode, the per-example
    gradients of vectorized_map, and d2 (nested tapes)."""
    def exps(v):
        if kind == "int":
            return [int(k) for k in ks]
        if kind == "float":
            return [float(k) for k in ks]
        if kind == "array":               # a traced exponent when compiled
            return [tnp.full_like(v, k) for k in ks]
        return [tnp.asarray(np.float64(k)) for k in ks]

    def poly(v):
        return sum(cj * tnp.power(v, k) for cj, k in zip(c, exps(v)))

    def loss(v):
        return tnp.sum(poly(v))

    xs = tnp.asarray(x)
    out = {"tape": nf.grad(loss)(xs), "function": nf.function(nf.grad(loss))(xs),
           "vmap": nf.vectorized_map(nf.grad(loss), xs)}
    out["forward"] = nf.jvp(poly, (xs,), (tnp.ones_like(xs),))[1]
    out = {k: np.asarray(v.numpy()) for k, v in out.items()}
    out["second"] = _hess_diag(loss, x)[1]      # x's elements are independent: the diagonal
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from([0.0, -0.0, 0.5, -1.25, 2.0, 1e-3]), min_size=1, max_size=5),
       st.lists(st.integers(0, 3), min_size=1, max_size=4),
       st.sampled_from(["int", "float", "array", "0-d"]))
def test_power_gradient_at_zero_is_the_polynomial_derivative(x, ks, kind):
    """d/dx x**0 = 0 everywhere, x = 0 included (0 * x**-1 would be 0 * inf = NaN there), as
    autograd and JAX define it: sum(c * x**k) over k = 0.. differentiates as the polynomial,
    with an integer, a float, a 0-d or a traced array exponent, on every path; its second
    derivative too."""
    x = np.asarray(x)
    c = [1.0 + j for j in range(len(ks))]
    want = sum(cj * k * x ** max(k - 1, 0) for cj, k in zip(c, ks) if k)
    want2 = sum(cj * k * (k - 1) * x ** max(k - 2, 0) for cj, k in zip(c, ks) if k > 1)
    want, want2 = want + 0 * x, want2 + 0 * x
    got = _poly_grads(x, c, ks, kind)
    for path in ("tape", "function", "vmap", "forward"):
        np.testing.assert_allclose(got[path], want, rtol=1e-12, atol=0, err_msg=path)
    np.testing.assert_allclose(got["second"], want2, rtol=1e-12, atol=0, err_msg="second")
    # and the central difference where the polynomial is smooth (everywhere)
    num = (sum(cj * (x + H) ** k for cj, k in zip(c, ks))
           - sum(cj * (x - H) ** k for cj, k in zip(c, ks))) / (2 * H)
    np.testing.assert_allclose(got["tape"], num, rtol=1e-6, atol=1e-8)


def test_power_gradient_in_the_exponent_at_zero():
    """d/dy 0**y: 0 for y > 0 (0**y is 0 around y), and the rule's 0 (JAX's log(1) * ans)
    at y = 0; log(x) * x**y elsewhere; NaN for x < 0 (log of a negative number)."""
    x = np.array([0.0, 0.0, -0.0, 2.0, -2.0])
    y = np.array([0.5, 0.0, 2.0, 1.5, 2.0])
    gx, gy = _grad(lambda a, b: tnp.sum(a ** b), x, y)
    with np.errstate(all="ignore"):
        want = np.log(np.where(x > 0, x, 1)) * x ** y
    want[x < 0] = np.nan
    np.testing.assert_array_equal(gy, want)
    np.testing.assert_array_equal(gx, [np.inf, 0.0, -0.0, 1.5 * 2 ** 0.5, -4.0])
    f = nf.function(lambda a, b: nf.grad(lambda u, v: tnp.sum(u ** v), argnums=(0, 1))(a, b))
    got = [g.numpy() for g in f(tnp.asarray(x), tnp.asarray(y))]
    np.testing.assert_array_equal(got[0], gx)
    np.testing.assert_array_equal(got[1], gy)
