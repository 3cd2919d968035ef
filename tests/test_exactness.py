"""Compiler rewrites hold under IEEE 754: random small programs over inputs and constants full
of signed zeros, NaN and infinities, in every dtype, give eager's bits after each pass alone,
after every prefix of the pipeline, and through `nf.function` (fused kernels included).
Bits compare exactly: every value and the sign of every zero; NaNs compare as NaN."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import passes as P
from ndflow.graph.codegen import generate

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]

DTYPES = [np.float16, np.float32, np.float64, np.complex128, np.int32, np.int64, np.bool_]


def _specials(dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([True, False, True, True, False, False, True, False, True, False])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.array([0, 1, -1, 2, -3, 7, info.max, info.min, 5, -2], dt)
    f = np.finfo(dt if dt.kind == "f" else np.float64)
    v = [-0.0, 0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 0.5, -2.5, 3.0, f.tiny, -f.max]
    if dt.kind == "c":
        re = np.array(v)
        im = np.array([-0.0, 0.0, 1.0, -0.0, np.nan, 0.0, -1.0, np.inf, 0.0, -0.0, 2.0, 0.0])
        return np.array([complex(a, b) for a, b in zip(re, im)], dt)
    return np.array(v, dt)


def _consts(dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return [True, False]
    if dt.kind in "iu":
        return [0, 1, 2, -1]
    vals = [0.0, -0.0, 1.0, 2.0, 0.5, np.nan, np.inf, -np.inf]
    if dt.kind == "c":
        vals += [complex(-0.0, -0.0), complex(0.0, -0.0), 1j]
    return vals


def _ops(dt):
    """name -> (arity, function of tnp arrays/constants)."""
    dt = np.dtype(dt)
    t = tnp
    if dt.kind == "b":
        return {"and": (2, t.logical_and), "or": (2, t.logical_or), "xor": (2, t.logical_xor),
                "not": (1, t.logical_not), "eq": (2, t.equal),
                "where": (3, lambda c, a, b: t.where(c, a, b))}
    ops = {"add": (2, lambda a, b: a + b), "sub": (2, lambda a, b: a - b),
           "mul": (2, lambda a, b: a * b), "neg": (1, lambda a: -a),
           "where": (3, lambda c, a, b: t.where(t.not_equal(c, 0), a, b)),
           "zeros_like": (1, t.zeros_like), "ones_like": (1, t.ones_like),
           "full_like": (1, lambda a: t.full_like(a, -0.0 if dt.kind != "i" else 3))}
    if dt.kind in "iu":
        ops.update({"max": (2, t.maximum), "min": (2, t.minimum), "abs": (1, t.abs)})
        return ops
    ops.update({"div": (2, lambda a, b: a / b), "exp": (1, t.exp),
                "sq": (1, lambda a: a ** 2), "pow1": (1, lambda a: a ** 1),
                "pow0": (1, lambda a: a ** 0), "pow3": (1, lambda a: a ** 3),
                "recip": (1, lambda a: 1 / a), "plus0": (1, lambda a: a + 0.0),
                "plusm0": (1, lambda a: a + -0.0), "minus0": (1, lambda a: a - 0.0),
                "times1": (1, lambda a: a * 1.0), "div1": (1, lambda a: a / 1.0),
                "bias0": (1, lambda a: a + t.zeros(a.shape, a.dtype)),
                "sqrt": (1, t.sqrt)})
    if dt.kind == "f":
        ops.update({"max": (2, t.maximum), "min": (2, t.minimum), "abs": (1, t.abs),
                    "log": (1, t.log), "lae": (2, t.logaddexp), "copysign": (2, t.copysign),
                    "tanh": (1, t.tanh), "fmax": (2, t.fmax), "sign": (1, t.sign),
                    "gt": (2, lambda a, b: t.where(a > b, a, b))})
    else:
        ops.update({"conj": (1, t.conj), "real0": (1, lambda a: a + t.real(a) * 0)})
    return ops


def _program(seed, dt):
    """A random program of a few ops over x, y and constants; returns its last values."""
    rng = np.random.default_rng(seed)
    ops = _ops(dt)
    names = sorted(ops)
    consts = _consts(dt)
    plan = []
    for _ in range(int(rng.integers(3, 8))):
        name = names[int(rng.integers(len(names)))]
        arity = ops[name][0]
        # operands: an earlier value (index) or a constant ('c', k)
        args = [("c", int(rng.integers(len(consts)))) if rng.random() < 0.3 and k > 0
                else int(rng.integers(0, 2 + len(plan))) for k in range(arity)]
        plan.append((name, args))

    def f(x, y):
        vals = [x, y]
        for name, args in plan:
            a = [tnp.asarray(consts[v[1]], dtype=dt) if isinstance(v, tuple) else vals[v]
                 for v in args]
            vals.append(ops[name][1](*a))
        return vals[-1], vals[-2]
    return f, plan


def _bits_equal(got, want, ctx):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{ctx}: dtype {got.dtype}, eager {want.dtype}"
    assert got.shape == want.shape, f"{ctx}: shape {got.shape}, eager {want.shape}"
    parts = [(got.real, want.real), (got.imag, want.imag)] if got.dtype.kind == "c" \
        else [(got, want)]
    for g, w in parts:
        if g.dtype.kind == "f":
            nan = np.isnan(w)
            assert np.array_equal(np.isnan(g), nan), f"{ctx}: NaN at {np.isnan(g) != nan}"
            bad = (g != w) | (np.signbit(g) != np.signbit(w))
            bad &= ~nan
            assert not bad.any(), f"{ctx}: {g[bad]} where eager gives {w[bad]}"
        else:
            assert np.array_equal(g, w), f"{ctx}: {g} where eager gives {w}"


def _run_graph(g, bufs):
    run = generate(g)[0]
    return run(*bufs)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("seed", range(30))
def test_every_pass_keeps_eager_bits(seed, dt):
    x, y = _specials(dt), _specials(dt)[::-1].copy()
    f, plan = _program([seed, np.dtype(dt).num], dt)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = [o.numpy() for o in f(tnp.asarray(x), tnp.asarray(y))]
        except Exception:
            return          # a program NumPy rejects (a dtype it cannot combine): nothing to run
        fn = nf.function(f)
        ctx = f"{np.dtype(dt).name} {plan}"
        for got, w in zip(fn(tnp.asarray(x), tnp.asarray(y)), want):
            _bits_equal(got.numpy(), w, "nf.function " + ctx)
        traced = fn.get_concrete_function(tnp.asarray(x), tnp.asarray(y)).traced_graph
        for k, p in enumerate(P.PASSES):
            for g in (P.optimize(traced, [p]), P.optimize(traced, P.PASSES[:k + 1])):
                for got, w in zip(_run_graph(g, [x, y]), want):
                    _bits_equal(got, w, f"after {p.__name__}: {ctx}")


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_zero_bias_from_folding_keeps_negative_zero(dt):
    x = np.array([-0.0, 0.0, 1.0], dt)
    for f in (lambda a: a * 2 + tnp.zeros(3, dt), lambda a: a * 2 + tnp.zeros(3, dt) * 5,
              lambda a: tnp.zeros_like(a) + a * 2, lambda a: (a * 2) + (tnp.ones(3, dt) - 1)):
        _bits_equal(nf.function(f)(tnp.asarray(x)).numpy(), f(tnp.asarray(x)).numpy(), str(dt))
        assert not np.signbit(nf.function(f)(tnp.asarray(x)).numpy()[0])


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_logaddexp_compiled_is_numpys(dt):
    v = _specials(dt)
    x, y = np.repeat(v, len(v)), np.tile(v, len(v))
    x = np.concatenate([x, np.random.default_rng(1).standard_normal(500).astype(dt) * 20])
    y = np.concatenate([y, np.random.default_rng(2).standard_normal(500).astype(dt) * 20])
    with np.errstate(all="ignore"):
        want = np.logaddexp(x, y)
        for f in (tnp.logaddexp, lambda a, b: tnp.logaddexp(a, b) * 1.0):
            _bits_equal(nf.function(f)(tnp.asarray(x), tnp.asarray(y)).numpy(), want, "logaddexp")
            _bits_equal(f(tnp.asarray(x), tnp.asarray(y)).numpy(), want, "eager logaddexp")
        _bits_equal(nf.function(tnp.logaddexp2)(tnp.asarray(x), tnp.asarray(y)).numpy(),
                    np.logaddexp2(x, y), "logaddexp2")


@pytest.mark.parametrize("name", ["mean", "var", "std", "median", "nanmedian", "nanmean",
                                  "average"])
@pytest.mark.parametrize("shape,axis", [((0,), None), ((0, 3), 0), ((3, 0), 1), ((0, 3), None)])
def test_statistics_of_empty_arrays_warn_and_give_nan_on_every_path(name, shape, axis):
    a = np.zeros(shape)
    kw = {} if axis is None else {"axis": axis}

    def f(v):
        return getattr(tnp, name)(v, **kw)
    with pytest.warns(RuntimeWarning):
        want = getattr(np, name)(a, **kw)
    paths = {"eager": f, "compiled": nf.function(f)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paths["compiled"](tnp.asarray(a))      # traced once: the next call runs the graph
    for path, fn in paths.items():
        with pytest.warns(RuntimeWarning):
            got = fn(tnp.asarray(a))
        _bits_equal(got.numpy(), np.asarray(want), f"{path} {name}{shape}")
    with nf.GradientTape(), pytest.warns(RuntimeWarning):
        got = f(tnp.asarray(a))
    _bits_equal(got.numpy(), np.asarray(want), f"taped {name}{shape}")


def test_eigvals_dtype_follows_numpy_when_compiled():
    """NumPy gives real eigenvalues when all are real: so does nf.function (one graph per case,
    each traced once), also inside a larger computation and under a tape."""
    sym, rot = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([[0.0, -1.0], [1.0, 0.0]])
    f = nf.function(lambda a: tnp.linalg.eigvals(a))
    g = nf.function(lambda a: tnp.linalg.eig(a)[1] * 2.0)
    h = nf.function(lambda a: tnp.sum(tnp.linalg.eigvals(a)) + 1.0)
    for m in (sym, rot, sym, rot, rot, sym):
        for fn, npf in ((f, lambda m: np.linalg.eigvals(m)),
                        (g, lambda m: np.linalg.eig(m)[1] * 2.0),
                        (h, lambda m: np.sum(np.linalg.eigvals(m)) + 1.0)):
            got, eager, want = fn(tnp.asarray(m)), fn.python_function(tnp.asarray(m)), npf(m)
            assert got.dtype == eager.dtype == np.asarray(want).dtype
    assert f.experimental_get_tracing_count() == 2
    v = nf.Variable(0.0)

    @nf.function
    def writes(a):
        v.assign_add(1.0)
        return tnp.linalg.eigvals(a)
    from ndflow.core.ndarray import SpecializationError
    with pytest.raises(SpecializationError, match="complex matrix"):
        writes(tnp.asarray(sym))


@pytest.mark.parametrize("name", ["nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanmedian",
                                  "nanargmax"])
def test_all_nan_slices_warn_at_every_compiled_call(name):
    a = np.array([[np.nan, 1.0], [np.nan, 2.0]])

    def f(v):
        return getattr(tnp, name)(v, axis=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, name)(a, axis=0)
    except ValueError:
        with pytest.raises(ValueError):
            f(tnp.asarray(a))
        return
    fn = nf.function(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(tnp.asarray(a))
    for path in (f, fn):
        with pytest.warns(RuntimeWarning):
            got = path(tnp.asarray(a))
        _bits_equal(got.numpy(), np.asarray(want), name)


def test_value_dependent_errors_are_raised_when_compiled():
    a, w = np.arange(6.0).reshape(2, 3), np.array([1.0, -1.0])
    with pytest.raises(ZeroDivisionError):
        np.average(a, axis=0, weights=w)
    f = nf.function(lambda a, w: tnp.average(a, axis=0, weights=w))
    for fn in (f.python_function, f, f):
        with pytest.raises(ZeroDivisionError):
            fn(tnp.asarray(a), tnp.asarray(w))
    np.testing.assert_allclose(f(tnp.asarray(a), tnp.asarray([1.0, 3.0])).numpy(),
                               np.average(a, axis=0, weights=[1.0, 3.0]))
    for fn in (lambda v: tnp.average(v, axis=0), nf.function(lambda v: tnp.average(v, axis=0))):
        with pytest.raises(ZeroDivisionError):
            fn(tnp.zeros((2, 0)))


def test_run_time_checks_are_not_folded_away():
    # zeros_like of a known shape becomes a constant, and so would everything after it
    f = nf.function(lambda x: tnp.mean(tnp.zeros_like(x)) + 1.0)
    x = tnp.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(x)
    assert "runtime_warning" in [n.prim.name for n in f.get_concrete_function(x).graph.nodes]
    with pytest.warns(RuntimeWarning):
        assert np.isnan(float(f(x)))
    g = nf.function(lambda w: tnp.average(tnp.ones(2), weights=tnp.ones_like(w) * -1.0 + w) * 2)
    for _ in range(2):
        with pytest.raises(ZeroDivisionError):
            g(tnp.asarray([1.0, 1.0]))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_compiled_products_are_eagers_bits(dt):
    rng = np.random.default_rng(4)
    sp = _specials(dt)
    for sa, sb in [((16, 7, 33), (33, 9)), ((4, 1, 100), (100, 3)), ((3, 20, 1), (3, 1, 24)),
                   ((2, 32, 1), (1, 40))]:
        a = rng.standard_normal(sa).astype(dt)
        b = rng.standard_normal(sb).astype(dt)
        a.reshape(-1)[:len(sp)] = sp[:a.size]
        b.reshape(-1)[:len(sp)] = sp[:b.size][::-1]
        for f in (lambda x, y: tnp.matmul(x, y), lambda x, y: tnp.matmul(x, y) * 2.0 + 1.0):
            with np.errstate(all="ignore"):
                want = f(tnp.asarray(a), tnp.asarray(b)).numpy()
                got = nf.function(f)(tnp.asarray(a), tnp.asarray(b)).numpy()
            _bits_equal(got, want, f"matmul {sa} @ {sb}")


# ------------------------------------------------------------------ the op table through the passes
def _sprinkle(a):
    """`a` with signed zeros, NaN and infinities written over some of its elements."""
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "fc" or a.size == 0:
        return a
    b = a.copy()
    flat = b.reshape(-1)
    sp = np.array([-0.0, np.nan, np.inf, 0.0, -np.inf, -0.0], dtype=b.dtype)
    for i in range(0, flat.size, 3):
        flat[i] = sp[(i // 3) % len(sp)]
    return b


def _jit_records():
    from optable import RECORDS
    return [pytest.param(r, id=r.name) for r in RECORDS if r.jit]


@pytest.mark.parametrize("rec", _jit_records())
def test_optimized_graph_gives_the_traced_graphs_bits(rec):
    """Every op-table function, traced on inputs full of special values: the optimized graph
    (all passes, fusion and buffer reuse included) gives the bits of the graph as traced."""
    for dt in rec.dtypes:
        dt = np.dtype(dt)
        for s in rec.samples(np.random.default_rng([7, dt.num]), dt)[:4]:
            args = [_sprinkle(a) for a in s.args]
            nf_args = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
            fn = nf.function(lambda *a: rec.call(tnp, *a, **s.kwargs))
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    cf = fn.get_concrete_function(*nf_args)
                except Exception:
                    continue
                bufs = [a._v for a in tree_leaves(nf_args) if isinstance(a, tnp.ndarray)]
                try:
                    want = _run_graph(P.optimize(cf.traced_graph, []), bufs)
                except Exception:
                    continue
                got = cf.run(*bufs)
            for k, (g, w) in enumerate(zip(got, want)):
                _bits_equal(g, w, f"{rec.name}{s!r} {dt.name} result {k}")


def tree_leaves(x):
    from ndflow.core import tree
    return tree.flatten(x)
