"""Forward mode and higher order: `nf.jvp` and `nf.ForwardAccumulator` against central
differences (every op-table record, a few composite functions, the TF NumPy guide's MLP), eager,
inside `nf.function` and inside `vectorized_map`; nesting with tapes (Hessian-vector products
both ways) and with other accumulators; `jacfwd == jacrev`, `hessian`, `stop_gradient`; and the
tape's `jacobian`/`batch_jacobian` options (`experimental_use_pfor`, `unconnected_gradients`)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree
from ndflow.primitives.misc import stop_gradient_p

from optable import RECORDS, F64
from helpers import to_nf

pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]


def _np(x):
    return x.numpy() if isinstance(x, tnp.ndarray) else np.asarray(x)


def central_jvp(f, xs, ts, eps=1e-6):
    """(f(x + eps t) - f(x - eps t)) / 2 eps for NumPy functions of several arrays."""
    up = f(*[np.asarray(x + eps * t) for x, t in zip(xs, ts)])
    down = f(*[np.asarray(x - eps * t) for x, t in zip(xs, ts)])
    return tree.map_structure(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps), up, down)


# ------------------------------------------------------------------ every op-table record
def _float_leaves(out):
    return [o for o in tree.flatten(out) if isinstance(o, tnp.ndarray) and o.dtype.kind == "f"]


_F64_RECORDS = [pytest.param(r, id=r.name) for r in RECORDS
                if F64 in r.dtypes and r.diff_args != ()]


@pytest.mark.parametrize("rec", _F64_RECORDS)
def test_jvp_matches_central_differences(rec):
    """Forward mode for every primitive that has a VJP (by transposing it): the JVP of each
    record's samples in a random direction equals central differences."""
    rng = np.random.default_rng([7, sum(map(ord, rec.name))])
    checked = 0
    for s in rec.samples(rng, F64):
        # float64 operands only: central differences need them (a sample may carry a float32
        # operand on purpose, e.g. quantile's "float32 q")
        pos = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray) and a.dtype == F64]
        if rec.diff_args is not None:
            pos = [i for i in pos if i in rec.diff_args]
        if not pos:
            continue

        def f(*xs, s=s, pos=pos):
            args = list(s.args)
            for i, x in zip(pos, xs):
                args[i] = x
            return _float_leaves(rec.call(tnp, *[to_nf(a) for a in args], **s.kwargs))
        dirs = [rng.standard_normal(s.args[i].shape) for i in pos]
        out, t_out = nf.jvp(f, [tnp.asarray(s.args[i]) for i in pos],
                            [tnp.asarray(d) for d in dirs])
        if not out:
            continue
        h, rtol, atol = rec.grad_eps, 1e-6, 1e-8
        if any(o.dtype != F64 for o in out):
            h, rtol, atol = max(h, 1e-3), 1e-3, 1e-4   # a float32 result (dtype= argument)
        want = central_jvp(lambda *xs: [o.numpy() for o in f(*xs)],
                           [s.args[i] for i in pos], dirs, h)
        for t, o, w in zip(t_out, out, want):
            assert t.dtype == o.dtype and t.shape == o.shape, \
                f"{rec.name}{s!r}: tangent {t.dtype}{t.shape} for output {o.dtype}{o.shape}"
            scale = 1 + np.abs(w[np.isfinite(w)]).max(initial=0)
            np.testing.assert_allclose(t.numpy(), w, rtol=rtol, atol=atol * scale,
                                       err_msg=f"{rec.name}{s!r}")
        checked += 1
    assert checked, (f"{rec.name}: no sample has a float input and a float output; declare "
                     f"diff_args=() with a grad_reason in its record")


# ------------------------------------------------------------------ jvp and the accumulator
def test_jvp_of_composite_function_matches_central_differences(rng):
    def f(x, y):
        return tnp.sum(tnp.tanh(x @ y) * tnp.exp(-x[:, :1]), axis=0), tnp.log1p(x * x)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    tx, ty = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    out, t_out = nf.jvp(f, (tnp.asarray(x), tnp.asarray(y)), (tnp.asarray(tx), tnp.asarray(ty)))
    want = central_jvp(lambda a, b: [o.numpy() for o in f(tnp.asarray(a), tnp.asarray(b))],
                       [x, y], [tx, ty])
    for t, w in zip(t_out, want):
        np.testing.assert_allclose(t.numpy(), w, rtol=1e-6, atol=1e-9)
    assert isinstance(t_out, tuple) and len(t_out) == 2


def test_jvp_has_aux_and_argument_structures():
    x = {"a": tnp.asarray([1.0, 2.0]), "b": tnp.asarray(3.0)}
    t = {"a": tnp.asarray([1.0, 0.0]), "b": tnp.asarray(1.0)}

    def f(p):
        return tnp.sum(p["a"] ** 2) * p["b"], "aux"
    out, t_out, aux = nf.jvp(f, (x,), (t,), has_aux=True)
    assert aux == "aux"
    # d/de [(a + e t_a)^2 summed * (b + e)] = 2 a.t_a b + sum(a^2)
    assert float(out) == 15.0 and float(t_out) == pytest.approx(2 * 1 * 3 + 5.0)


def test_jvp_same_array_twice_is_two_inputs():
    x = tnp.asarray(2.0)
    _, t = nf.jvp(lambda a, b: a * b, (x, x), (tnp.asarray(1.0), tnp.asarray(0.0)))
    assert float(t) == 2.0


def test_jvp_checks_arguments():
    with pytest.raises(TypeError, match="tuples or lists"):
        nf.jvp(tnp.sin, tnp.asarray(1.0), tnp.asarray(1.0))
    with pytest.raises(ValueError, match="1 primals but 2 tangents"):
        nf.jvp(tnp.sin, (tnp.asarray(1.0),), (tnp.asarray(1.0), tnp.asarray(1.0)))
    with pytest.raises(ValueError, match="shape"):
        nf.ForwardAccumulator(tnp.ones(3), tnp.ones(2))
    with pytest.raises(ValueError, match="dtype"):
        nf.ForwardAccumulator(tnp.ones(3), tnp.ones(3, dtype=tnp.float32))


def test_accumulator_matches_tensorflow_example():
    # tf.autodiff.ForwardAccumulator's docstring: d/dx [x * x] at 2 in direction 1 is 4
    x = tnp.asarray(2.0)
    with nf.ForwardAccumulator(primals=x, tangents=tnp.asarray(1.0)) as acc:
        y = x * x
    assert float(acc.jvp(y)) == 4.0
    assert acc.jvp(x) is not None and float(acc.jvp(x)) == 1.0


def test_unconnected_values_have_no_tangent():
    x, c = tnp.asarray([1.0, 2.0]), tnp.asarray([3.0, 4.0])
    with nf.ForwardAccumulator(x, tnp.ones(2)) as acc:
        y = c * 2
        z = tnp.argmax(x)                     # integer: no tangent
    assert acc.jvp(y) is None and acc.jvp(z) is None
    np.testing.assert_array_equal(acc.jvp(y, unconnected_gradients="zero").numpy(), [0.0, 0.0])
    outside = x * 3                           # computed after the block: not watched
    assert acc.jvp(outside) is None


def test_accumulator_on_variables_and_in_place_updates():
    v = nf.Variable([1.0, 2.0])
    with nf.ForwardAccumulator(v, tnp.asarray([1.0, 1.0], dtype=tnp.float32)) as acc:
        y = tnp.sum(v * v)
    assert float(acc.jvp(y)) == pytest.approx(6.0)
    x = tnp.asarray([1.0, 2.0])
    with nf.ForwardAccumulator(x, tnp.asarray([1.0, 0.0])) as acc:
        x *= x                                # a new value of x, computed from the old one
    np.testing.assert_allclose(acc.jvp(x).numpy(), [2.0, 0.0])


def test_accumulator_uses_a_primitives_jvp_rule_when_defined(monkeypatch):
    # stop_gradient's own rule gives no tangent; a rule that says 3*t must be the one used
    x = tnp.asarray([1.0, 2.0])
    with nf.ForwardAccumulator(x, tnp.asarray([1.0, 1.0])) as acc:
        y = nf.stop_gradient(x) + x
    np.testing.assert_array_equal(acc.jvp(y).numpy(), [1.0, 1.0])
    monkeypatch.setattr(stop_gradient_p, "jvp", lambda ts, x: ts[0] * 3)
    with nf.ForwardAccumulator(x, tnp.asarray([1.0, 1.0])) as acc:
        y = nf.stop_gradient(x)
    np.testing.assert_array_equal(acc.jvp(y).numpy(), [3.0, 3.0])


def test_accumulator_through_custom_gradient():
    @nf.custom_gradient
    def clipped_identity(x):
        return x, lambda dy: tnp.clip(dy, -1.0, 1.0)    # the JVP transposes grad_fn
    x = tnp.asarray([1.0, 2.0])
    with nf.ForwardAccumulator(x, tnp.asarray([0.5, 4.0])) as acc:
        y = clipped_identity(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), [0.5, 4.0])  # clip is identity near 0


# ------------------------------------------------------------------ the TF NumPy guide's MLP
def _mlp_weights(rng):
    size = 8
    w1 = rng.standard_normal((size, 64)) / np.sqrt(size)
    b = rng.standard_normal(64)
    w2 = rng.standard_normal((64, 2)) / 8
    return w1, b, w2


def _mlp(inputs, w1, b, w2):
    y = tnp.matmul(inputs, w1) + b
    y = tnp.maximum(y, 0)
    return tnp.matmul(y, w2)


def test_mlp_jvp_matches_central_differences_eager_compiled_and_batched(rng):
    ws = _mlp_weights(rng)
    inputs = rng.standard_normal((5, 8))
    tans = [rng.standard_normal(w.shape) for w in ws]

    def jvp_of(inp, *wts):
        n = len(wts) // 2
        return nf.jvp(lambda *w: _mlp(inp, *w), list(wts[:n]), list(wts[n:]))[1]
    args = [tnp.asarray(a) for a in (*ws, *tans)]
    eager = jvp_of(tnp.asarray(inputs), *args)
    want = central_jvp(lambda *w: _mlp(tnp.asarray(inputs), *[tnp.asarray(a) for a in w]).numpy(),
                       ws, tans)
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-6, atol=1e-8)
    fn = nf.function(jvp_of)
    np.testing.assert_allclose(fn(tnp.asarray(inputs), *args).numpy(), eager.numpy(), rtol=1e-12)
    fn(tnp.asarray(inputs + 1), *args)
    assert fn.experimental_get_tracing_count() == 1
    # per-example JVPs: vectorized over the inputs, equal to a loop
    batched = nf.vectorized_map(lambda i: jvp_of(i[None], *args)[0], tnp.asarray(inputs))
    loop = np.stack([jvp_of(tnp.asarray(inputs[k:k + 1]), *args).numpy()[0] for k in range(5)])
    np.testing.assert_allclose(batched.numpy(), loop, rtol=1e-12)


def test_accumulator_inside_function_with_variables():
    w = nf.Variable([[1.0, 2.0], [3.0, 4.0]])

    @nf.function
    def f(x, t):
        with nf.ForwardAccumulator(x, t) as acc:
            y = tnp.tanh(w @ x)
        return y, acc.jvp(y)
    x, t = tnp.asarray([0.1, -0.2]), tnp.asarray([1.0, 0.5])
    y, ty = f(x, t)
    want = central_jvp(lambda a: np.tanh(w.numpy() @ a), [x.numpy()], [t.numpy()])
    np.testing.assert_allclose(ty.numpy(), want, rtol=1e-6)
    w.assign([[0.0, 1.0], [1.0, 0.0]])       # the graph reads the Variable at every call
    _, ty2 = f(x, t)
    want2 = central_jvp(lambda a: np.tanh(w.numpy() @ a), [x.numpy()], [t.numpy()])
    np.testing.assert_allclose(ty2.numpy(), want2, rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1


def test_compiled_function_called_inside_accumulator():
    @nf.function
    def g(x):
        return tnp.sin(x) * x
    g(tnp.asarray([0.0, 1.0]))                # traced once outside
    x = tnp.asarray([0.5, 1.5])
    with nf.ForwardAccumulator(x, tnp.ones(2)) as acc:
        y = g(x)
    v = x.numpy()
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos(v) * v + np.sin(v))


# ------------------------------------------------------------------ nesting: second order
def _f3(x):
    return tnp.sum(tnp.sin(x) * tnp.tan(x) + x ** 3)


def _hess_np(x):
    # d2/dx2 [sin x tan x + x^3] elementwise (a diagonal Hessian), by differences of gradients
    def g(v):
        return np.cos(v) * np.tan(v) + np.sin(v) / np.cos(v) ** 2 + 3 * v ** 2
    return (g(x + 1e-6) - g(x - 1e-6)) / 2e-6


def test_hvp_forward_over_backward():
    """The TensorFlow pattern: a tape inside an accumulator; acc.jvp(gradient) = H v."""
    x = tnp.asarray([0.3, -0.7, 1.1])
    v = tnp.asarray([1.0, 2.0, -1.0])
    with nf.ForwardAccumulator(x, v) as acc:
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = _f3(x)
        g = tape.gradient(y, x)
    np.testing.assert_allclose(acc.jvp(g).numpy(), _hess_np(x.numpy()) * v.numpy(), rtol=1e-6)


def test_hvp_backward_over_forward():
    x = tnp.asarray([0.3, -0.7, 1.1])
    v = tnp.asarray([1.0, 2.0, -1.0])
    with nf.GradientTape() as tape:
        tape.watch(x)
        with nf.ForwardAccumulator(x, v) as acc:
            y = _f3(x)
        jv = acc.jvp(y)
    np.testing.assert_allclose(tape.gradient(jv, x).numpy(), _hess_np(x.numpy()) * v.numpy(),
                               rtol=1e-6)


def test_forward_over_forward_second_derivative():
    x = tnp.asarray(0.4)
    with nf.ForwardAccumulator(x, tnp.asarray(1.0)) as outer:
        with nf.ForwardAccumulator(x, tnp.asarray(1.0)) as inner:
            y = tnp.sin(x) * x
        dy = inner.jvp(y)
    d2 = outer.jvp(dy)
    assert float(dy) == pytest.approx(np.cos(0.4) * 0.4 + np.sin(0.4))
    assert float(d2) == pytest.approx(-np.sin(0.4) * 0.4 + 2 * np.cos(0.4))


def test_hvp_inside_function_and_vectorized_map():
    def hvp(x, v):
        with nf.ForwardAccumulator(x, v) as acc:
            with nf.GradientTape() as tape:
                tape.watch(x)
                y = _f3(x)
            g = tape.gradient(y, x)
        return acc.jvp(g)
    x = tnp.asarray([0.3, -0.7, 1.1])
    basis = tnp.eye(3)
    h = nf.vectorized_map(lambda v: hvp(x, v), basis)       # the Hessian, one row per v
    np.testing.assert_allclose(h.numpy(), np.diag(_hess_np(x.numpy())), rtol=1e-6, atol=1e-9)
    compiled = nf.function(hvp)(x, basis[1])
    np.testing.assert_allclose(compiled.numpy(), h.numpy()[1], rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ jacfwd, jacrev, hessian
def test_jacfwd_equals_jacrev_equals_central_differences(rng):
    def f(x, y):
        return tnp.tanh(x @ y) + tnp.sum(x ** 2)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    for argnums in (0, 1, (0, 1)):
        jf = nf.jacfwd(f, argnums)(tnp.asarray(x), tnp.asarray(y))
        jr = nf.jacrev(f, argnums)(tnp.asarray(x), tnp.asarray(y))
        nums = (argnums,) if isinstance(argnums, int) else argnums
        jf_l, jr_l = tree.flatten(jf), tree.flatten(jr)
        assert len(jf_l) == len(jr_l) == len(nums)
        assert isinstance(jf, tuple) == isinstance(argnums, tuple)
        for k, i in enumerate(nums):
            assert jf_l[k].shape == (2, 4) + (x, y)[i].shape
            np.testing.assert_allclose(jf_l[k].numpy(), jr_l[k].numpy(), rtol=1e-10, atol=1e-12)
            # column by column against central differences
            base = [x, y]
            for idx in np.ndindex(base[i].shape):
                d = [np.zeros_like(x), np.zeros_like(y)]
                d[i][idx] = 1.0
                col = central_jvp(lambda a, b: f(tnp.asarray(a), tnp.asarray(b)).numpy(), base, d)
                np.testing.assert_allclose(jf_l[k].numpy()[(Ellipsis,) + idx], col, rtol=1e-6,
                                           atol=1e-8)


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 3), max_size=3), seed=st.integers(0, 2 ** 31 - 1),
       broadcast=st.booleans())
def test_jacfwd_equals_jacrev_on_random_shapes(shape, seed, broadcast):
    rng = np.random.default_rng(seed)
    x = tnp.asarray(rng.standard_normal(shape))
    c = tnp.asarray(rng.standard_normal(shape[-1:] if broadcast else shape))

    def f(v):
        return tnp.tanh(v * c) * tnp.sum(v ** 2) + tnp.maximum(v, 0.1) / (1 + v * v)
    jf, jr = nf.jacfwd(f)(x), nf.jacrev(f)(x)
    assert jf.shape == jr.shape == tuple(shape) * 2
    np.testing.assert_allclose(jf.numpy(), jr.numpy(), rtol=1e-10, atol=1e-12)
    t = rng.standard_normal(shape)
    _, jv = nf.jvp(f, (x,), (tnp.asarray(t),))
    want = central_jvp(lambda a: f(tnp.asarray(a)).numpy(), [x.numpy()], [t])
    np.testing.assert_allclose(jv.numpy(), want, rtol=1e-6, atol=1e-8)
    n = x.size
    np.testing.assert_allclose(jv.numpy().ravel(), jf.numpy().reshape(n, n) @ t.ravel(),
                               rtol=1e-10, atol=1e-12)


def test_jacobians_of_structured_outputs_and_aux():
    def f(p):
        return {"s": tnp.sum(p["w"] * p["b"]), "v": p["w"] * 2}, p["b"] + 1
    p = {"w": tnp.asarray([1.0, 2.0]), "b": tnp.asarray(3.0)}
    for jac in (nf.jacfwd, nf.jacrev):
        j, aux = jac(f, has_aux=True)(p)
        assert float(aux) == 4.0
        np.testing.assert_allclose(j["s"]["w"].numpy(), [3.0, 3.0])
        np.testing.assert_allclose(float(j["s"]["b"]), 3.0)
        np.testing.assert_allclose(j["v"]["w"].numpy(), 2 * np.eye(2))
        np.testing.assert_allclose(j["v"]["b"].numpy(), [0.0, 0.0])
        assert j["v"]["b"].shape == (2,)


def test_jacobian_functions_reject_integer_inputs():
    for jac in (nf.jacfwd, nf.jacrev):
        with pytest.raises(TypeError, match="int64"):
            jac(lambda x: x * 2)(tnp.arange(3))


def test_hessian_of_quadratic_is_its_matrix(rng):
    a = rng.standard_normal((4, 4))
    a = tnp.asarray(a + a.T)
    b = tnp.asarray(rng.standard_normal(4))

    def q(x):
        return 0.5 * x @ (a @ x) + b @ x + 1.0
    h = nf.hessian(q)(tnp.asarray(rng.standard_normal(4)))
    np.testing.assert_allclose(h.numpy(), a.numpy(), rtol=1e-12, atol=1e-12)
    # a matrix argument: hessian shape in.shape + in.shape
    m = tnp.asarray(rng.standard_normal((2, 3)))
    hm = nf.hessian(lambda x: tnp.sum(x ** 3))(m)
    assert hm.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(hm.numpy().reshape(6, 6), np.diag(6 * m.numpy().ravel()),
                               atol=1e-12)


def test_hessian_of_mlp_loss_matches_nested_tapes(rng):
    w1, b, w2 = _mlp_weights(rng)
    w1, w2 = w1[:, :4], w2[:4]
    inputs = tnp.asarray(rng.standard_normal((5, 8)))

    def loss(w2_):
        return tnp.mean(tnp.tanh(_mlp(inputs, tnp.asarray(w1), tnp.asarray(b[:4]), w2_)) ** 2)
    x = tnp.asarray(w2)
    h = nf.hessian(loss)(x)
    with nf.GradientTape() as outer:
        outer.watch(x)
        with nf.GradientTape() as inner:
            inner.watch(x)
            y = loss(x)
        g = inner.gradient(y, x)
    want = outer.jacobian(g, x)
    np.testing.assert_allclose(h.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_stop_gradient():
    x = tnp.asarray([1.0, 2.0])
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.sum(x * nf.stop_gradient(x))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), x.numpy())   # not 2x
    got = nf.stop_gradient({"a": x, "b": [1.0]})
    assert set(got) == {"a", "b"} and isinstance(got["b"][0], tnp.ndarray)
    batched = nf.vectorized_map(lambda r: nf.stop_gradient(r) * 2, tnp.ones((3, 2)))
    np.testing.assert_array_equal(batched.numpy(), np.full((3, 2), 2.0))
    assert nf.jacfwd(lambda v: nf.stop_gradient(v) * v)(x).numpy().tolist() == [[1, 0], [0, 2]]


# ------------------------------------------------------------------ tape jacobians: options
@pytest.mark.parametrize("method", ["jacobian", "batch_jacobian"])
def test_tape_jacobians_honour_experimental_use_pfor(method, monkeypatch):
    import ndflow.vectorize.batching as batching
    calls = []
    real = batching.batch_map
    monkeypatch.setattr(batching, "batch_map",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    x = tnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    results = []
    for pfor in (True, False):
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sin(x) * x
        before = len(calls)
        results.append(getattr(tape, method)(y, x, experimental_use_pfor=pfor).numpy())
        assert len(calls) - before == (1 if pfor else 0), f"experimental_use_pfor={pfor}"
    np.testing.assert_allclose(results[0], results[1], rtol=1e-15)


@pytest.mark.parametrize("pfor", [True, False])
def test_tape_jacobian_unconnected_gradients(pfor):
    x, c = tnp.asarray([1.0, 2.0]), tnp.asarray([3.0, 4.0, 5.0])
    with nf.GradientTape(persistent=True) as tape:
        tape.watch([x, c])
        y = x * 2
        z = tnp.floor(x)                       # connected, but floor has no gradient
    jx, jc = tape.jacobian(y, [x, c], experimental_use_pfor=pfor)
    np.testing.assert_array_equal(jx.numpy(), 2 * np.eye(2))
    assert jc is None
    jx, jc = tape.jacobian(y, [x, c], unconnected_gradients="zero", experimental_use_pfor=pfor)
    np.testing.assert_array_equal(jc.numpy(), np.zeros((2, 3)))
    assert tape.jacobian(z, x, experimental_use_pfor=pfor) is None
    assert tape.jacobian(y, x, unconnected_gradients=nf.UnconnectedGradients.ZERO,
                         experimental_use_pfor=pfor).shape == (2, 2)
    xb, cb = tnp.ones((3, 2)), tnp.ones((3, 4))
    with nf.GradientTape(persistent=True) as tape:
        tape.watch([xb, cb])
        yb = xb * 3
    assert tape.batch_jacobian(yb, cb, experimental_use_pfor=pfor) is None
    zero = tape.batch_jacobian(yb, cb, unconnected_gradients="zero", experimental_use_pfor=pfor)
    np.testing.assert_array_equal(zero.numpy(), np.zeros((3, 2, 4)))
    np.testing.assert_array_equal(
        tape.batch_jacobian(yb, xb, experimental_use_pfor=pfor).numpy(),
        np.broadcast_to(3 * np.eye(2), (3, 2, 2)))


def test_tape_order_is_kept_when_a_tape_differentiates_inside_another():
    from ndflow.core.state import STATE
    x = tnp.asarray(1.5)
    with nf.GradientTape(persistent=True) as t1:
        t1.watch(x)
        with nf.ForwardAccumulator(x, tnp.asarray(1.0)) as acc:
            y = x ** 3
            g = t1.gradient(y, x)
            assert STATE.tapes == [t1, acc]
    assert float(g) == pytest.approx(3 * 1.5 ** 2)
    assert float(acc.jvp(g)) == pytest.approx(6 * 1.5)
