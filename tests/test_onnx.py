"""nf.onnx.export: every exported file passes onnx.checker and gives, in onnxruntime, what
ndflow gives (float32 tolerance; NaN, infinities and signed zeros where they matter), for the
seed programs' models, NumPy-level functions on special values, control flow, dynamic shapes and
the wrong exports issue 22 found (each an example of a class that tests/test_onnx_primitives.py
checks for every primitive of the exporter's table). Inputs with None sizes are run at two
sizes."""
import importlib
import os
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ndflow as nf  # noqa: E402
import ndflow.numpy as tnp  # noqa: E402
from ndflow.onnx import exporter as _export_mod  # noqa: E402
from ndflow.graph.control import scan_carry  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
F32, F64, I32, I64, B = np.float32, np.float64, np.int32, np.int64, np.bool_
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-9, -1e-9, 0.25, -0.25, 0.5, -0.5,
                    0.75, 1.0, -1.0, 1.5, -2.5, 2.5, 3.0, -7.0, 30.0, -30.0, 1e6], F32)


def _run_onnx(model_path, feeds):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, feeds)))


def _flat(out):
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r += _flat(o)
        return r
    return [np.asarray(out)]


def _same(got, want, rtol, atol, signed_zeros=False):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        if signed_zeros:
            z = want == 0
            assert np.array_equal(np.signbit(got[z]), np.signbit(want[z])), (got, want)
    else:
        np.testing.assert_array_equal(got, want)


def check(tmp_path, fn, specs, arg_sets, rtol=2e-6, atol=1e-6, signed_zeros=False, opset=None):
    """Export `fn` for `specs`, check the model, and compare onnxruntime with ndflow on each
    argument tuple of `arg_sets`. Returns the set of primitive names the exported graph holds."""
    py = getattr(fn, "python_function", fn)
    f = nf.function(py, input_signature=specs) if specs else nf.function(py)
    path = str(tmp_path / "m.onnx")
    model = nf.onnx.export(f, specs, path, opset=opset)
    onnx.checker.check_model(model, full_check=True)
    for args in arg_sets:
        want = _flat(f(*args))
        got = _run_onnx(path, [np.asarray(a) for a in args])
        assert len(got) == len(want)
        for g_, w_ in zip(got, want):
            _same(g_, w_, rtol, atol, signed_zeros)
    cf = f.get_concrete_function(*specs)
    return _prims(_export_mod.export_graph(cf.traced_graph))


def _prims(g):
    out = set()
    for n in g.nodes:
        out.add(n.prim.name)
        for s in n.subgraphs():
            out |= _prims(s.graph)
    return out


def _r(*shape, dtype=F32, seed=0, lo=-3, hi=3):
    rng = np.random.default_rng(seed + sum(shape))
    if np.dtype(dtype).kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(lo, hi + 1, shape).astype(dtype)


def S(*shape, dtype=F32):
    return nf.TensorSpec(shape, dtype)


# ------------------------------------------------------------------ seed programs
def _import_example(name):
    sys.path.insert(0, EXAMPLES)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(EXAMPLES)


def test_guide_mlp_prediction(tmp_path):
    guide = _import_example("tf_numpy_guide")
    model = guide.Model()
    model.predict(tnp.ones((2, 32), dtype=tnp.float32))      # creates the weights
    check(tmp_path, model.predict, [S(None, 32)],
          [(_r(5, 32),), (_r(1, 32),), (_r(0, 32),)], rtol=1e-5, atol=1e-5)


def test_digits_classifier_forward(tmp_path):
    lesson = _import_example("tf_function_lesson")
    model = lesson.SequentialModule()
    model(tnp.zeros((1, 784), dtype=tnp.float32))
    (x, _), _ = lesson.load_synthetic_digits(16, 1)
    x = np.reshape(x / 255, (-1, 784)).astype(F32)
    prims = check(tmp_path, model, [S(None, 784)], [(x,), (x[:3],)], rtol=1e-5, atol=1e-6)
    assert {"matmul", "reduce_max", "exp", "read_variable"} <= prims


def test_sigmoid(tmp_path):
    @nf.function
    def compiled_tnp_sigmoid(y):
        return 1. / (1. + tnp.exp(-y))
    check(tmp_path, compiled_tnp_sigmoid, [S(None)],
          [(SPECIAL,), (_r(1000, lo=-50, hi=50),)], signed_zeros=True)


def test_mean_of_empty_slices(tmp_path):
    # NumPy's RuntimeWarning is ndflow's business (a `runtime_warning` node): ONNX gives NaN
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(tmp_path, lambda x: tnp.mean(x, axis=0), [S(0, 3)],
              [(np.zeros((0, 3), F32),)])


def test_curve_fit_model(tmp_path):
    w = nf.Variable(nf.random.normal([3, 1]))

    def model(x):
        f = nf.stack([nf.square(x), x, nf.ones_like(x)], 1)
        return nf.squeeze(nf.matmul(f, w), 1)
    check(tmp_path, model, [S(None)], [(_r(100, lo=-10, hi=10),), (_r(7),)],
          rtol=1e-5, atol=1e-5)


def test_gradient_of_a_loss_exports(tmp_path):
    """A training step's gradient computation is a graph like any other."""
    w = nf.Variable(_r(4, 3, seed=3))

    def grads(x, y):
        with nf.GradientTape() as tape:
            loss = tnp.mean((tnp.tanh(x @ w) - y) ** 2)
        return loss, tape.gradient(loss, w)
    check(tmp_path, grads, [S(8, 4), S(8, 3)], [(_r(8, 4), _r(8, 3, seed=1))],
          rtol=1e-5, atol=1e-6)


def test_per_example_gradients(tmp_path):
    """The guide's vectorized per-example gradients: batching gives an ordinary graph."""
    w = nf.Variable(_r(4, 3, seed=5))

    def per_example(x, y):
        def one(arg):
            xi, yi = arg
            with nf.GradientTape() as tape:
                loss = tnp.sum((tnp.tanh(xi @ w) - yi) ** 2)
            return tape.gradient(loss, w)
        return nf.vectorized_map(one, (x, y))
    check(tmp_path, per_example, [S(None, 4), S(None, 3)],
          [(_r(5, 4), _r(5, 3, seed=1)), (_r(2, 4), _r(2, 3, seed=2))],
          rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ per-primitive sweep
def test_gradient_with_unknown_sizes(tmp_path):
    """Gradients under None sizes use the run-time shape primitives (sum_to, reshape_like,
    split_like, a scatter-add for the gather's gradient)."""
    def g(x, y, i):
        with nf.GradientTape() as tape:
            tape.watch(x)
            tape.watch(y)
            z = tnp.concatenate([x, y], axis=0)
            loss = (tnp.sum(tnp.reshape(z, (-1,)) ** 2) + tnp.sum(x[i] * 3)
                    + tnp.sum(x * tnp.sum(y, axis=0)) + tnp.sum(x[:, :1] * y[:1]))
        return tape.gradient(loss, [x, y]), tnp.copy(x), nf.stop_gradient(x)
    i = np.array([0, 1, 1, -1], I64)
    check(tmp_path, g, [S(None, 3), S(None, 3), S(None, dtype=I64)],
          [(_r(4, 3), _r(2, 3), i), (_r(2, 3), _r(1, 3), i[1:])],
          rtol=1e-5, atol=1e-5)


UNARY = ["negative", "positive", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
         "cbrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
         "arcsinh", "arccosh", "arctanh", "reciprocal", "absolute", "sign", "floor", "ceil",
         "trunc", "rint", "isnan", "isinf", "isfinite", "logical_not", "real", "imag",
         "conjugate", "square", "copy"]


@pytest.mark.parametrize("name", UNARY)
def test_unary(tmp_path, name):
    fn = getattr(tnp, name)
    x2 = (SPECIAL * 0.37).astype(F32)
    with np.errstate(all="ignore"):
        check(tmp_path, lambda x: fn(x), [S(None)], [(SPECIAL,), (x2[:5],)],
              rtol=3e-6, atol=0, signed_zeros=True)


def _pairs():
    a = np.repeat(SPECIAL, len(SPECIAL))
    b = np.tile(SPECIAL, len(SPECIAL))
    return a, b


BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod",
          "power", "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal", "logical_and", "logical_or", "logical_xor", "logaddexp", "logaddexp2"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_float(tmp_path, name):
    fn = getattr(tnp, name)
    a, b = _pairs()
    with np.errstate(all="ignore"):
        check(tmp_path, lambda x, y: fn(x, y), [S(None), S(None)],
              [(a, b), (a[:9], b[:9])], rtol=3e-6, atol=0, signed_zeros=True)


INTEGER_OPS = ["add", "subtract", "multiply", "floor_divide", "remainder", "fmod", "maximum",
               "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "absolute",
               "negative", "sign", "power", "equal", "less"]


@pytest.mark.parametrize("name", INTEGER_OPS)
@pytest.mark.parametrize("dtype", [I32, I64])
def test_integer_ops(tmp_path, name, dtype):
    fn = getattr(tnp, name)
    v = np.array([-7, -3, -1, 0, 1, 2, 3, 7, 100], dtype)
    a, b = np.repeat(v, len(v)), np.tile(v, len(v))
    if name == "power":
        b = np.abs(b) % 4
    if name in ("invert", "absolute", "negative", "sign"):
        check(tmp_path, lambda x: fn(x), [S(None, dtype=dtype)], [(a,), (v,)])
        return
    with np.errstate(all="ignore"):
        check(tmp_path, lambda x, y: fn(x, y), [S(None, dtype=dtype)] * 2,
              [(a, b), (a[:4], b[:4])])


def test_bool_ops(tmp_path):
    def f(x, y):
        return (x & y, x | y, x ^ y, ~x, tnp.logical_not(x), x == y, tnp.sum(x),
                tnp.any(x, axis=0), tnp.all(x, axis=0), tnp.where(x, 1.0, 2.0),
                x.astype(tnp.float32), tnp.maximum(x, y), tnp.argmax(x, axis=0))
    a, b = _r(5, 3, dtype=B), _r(5, 3, dtype=B, seed=1)
    check(tmp_path, f, [S(None, 3, dtype=B)] * 2, [(a, b), (a[:2], b[:2])])


def test_broadcasting_and_where(tmp_path):
    def f(x, b, c):
        return x * b + c, tnp.where(x > 0, x, b), tnp.clip(x, -1, 1), tnp.where(x > 0, x, 0.0)
    check(tmp_path, f, [S(None, 3), S(3), S()],
          [(_r(4, 3), _r(3), np.float32(2)), (_r(1, 3), _r(3), np.float32(-1))])


def test_casts(tmp_path):
    def f(x, i):
        return (x.astype(tnp.int32), x.astype(tnp.float64), x.astype(tnp.bool_),
                i.astype(tnp.float32), i.astype(tnp.bool_), i.astype(tnp.int8),
                tnp.zeros_like(x), tnp.ones_like(i), tnp.full_like(x, 7.5))
    x = np.array([0.0, -0.0, 1.5, -2.7, 3.99, np.nan], F32)
    i = np.array([0, 1, -5, 300, 2, 7], I64)
    with np.errstate(all="ignore"):
        x_ok = x[:-1]          # NaN to int is undefined in C, NumPy and ONNX alike
        def g(x, i):
            return f(x, i)
        check(tmp_path, g, [S(None), S(None, dtype=I64)],
              [(x_ok, i[:5]), (x_ok[:2], i[:2])])


def test_float64(tmp_path):
    def f(x, y):
        return tnp.exp(x) @ y, tnp.sum(tnp.sin(x), axis=1), tnp.maximum(x, 0.5)
    check(tmp_path, f, [S(None, 3, dtype=F64), S(3, 2, dtype=F64)],
          [(_r(4, 3, dtype=F64), _r(3, 2, dtype=F64)),
          (_r(2, 3, dtype=F64), _r(3, 2, dtype=F64))], rtol=1e-12, atol=1e-12)


def test_reductions(tmp_path):
    def f(x):
        return (tnp.sum(x), tnp.sum(x, axis=0), tnp.sum(x, axis=1, keepdims=True),
                tnp.max(x, axis=1), tnp.min(x, axis=0), tnp.prod(x, axis=1), tnp.mean(x, axis=0),
                tnp.argmax(x, axis=1), tnp.argmin(x, axis=0), tnp.any(x > 1, axis=1),
                tnp.all(x > -2, axis=0), tnp.std(x, axis=0), tnp.max(x, axis=(0, 1)),
                tnp.argmax(x, axis=1, keepdims=True), tnp.sum(x, axis=()))
    x = _r(6, 4)
    xn = x.copy()
    xn[1, 2] = np.nan
    xn[3, 0] = np.nan
    check(tmp_path, f, [S(None, 4)], [(x,), (xn,), (x[:1],)], rtol=1e-5, atol=1e-5)


def test_shapes(tmp_path):
    def f(x, y):
        return (tnp.reshape(x, (-1,)), tnp.reshape(x, (-1, 2, 2)), x.T,
                tnp.transpose(y[None], (2, 0, 1)), tnp.expand_dims(x, 1),
                tnp.squeeze(tnp.expand_dims(x, 0), 0), tnp.broadcast_to(y, (2, 3, 4)),
                tnp.concatenate([x, x * 2], axis=0), tnp.concatenate([x, x], axis=1),
                tnp.stack([x, x]), tnp.tile(y, (2, 1)), tnp.pad(y, ((1, 0), (2, 1))),
                tnp.flip(x, 0), tnp.repeat(y, 2, axis=1), tnp.moveaxis(y, 0, 1),
                tnp.reshape(y, (0, -1)) if False else tnp.ravel(y))
    check(tmp_path, f, [S(None, 4), S(3, 4)],
          [(_r(5, 4), _r(3, 4)), (_r(2, 4), _r(3, 4))])


def test_indexing(tmp_path):
    def f(x, i):
        return (x[1:], x[::-1], x[:, ::2], x[-1], x[0, 1:3], x[..., 1], x[None, :, None],
                x[:, -3:-1], x[2::-2], x[i], x[:, i], tnp.take(x, i, axis=1), x[x > 0],
                x[:, 3], x[-2:, ...], x[i, -i], x[-1, i], tnp.take(x, i))
    i = np.array([0, -1, 2, 2], I64)
    check(tmp_path, f, [S(None, 4), S(None, dtype=I64)],
          [(_r(5, 4), i), (_r(3, 4), i[:1])])


def test_linalg(tmp_path):
    def f(a, b, v):
        return (a @ b, tnp.matmul(a, v), tnp.dot(v, v), tnp.einsum("ij,jk->ik", a, b),
                tnp.einsum("ij->j", a), tnp.einsum("bij,jk->bik", a[None], b),
                tnp.tensordot(a, b, axes=1), tnp.outer(v, v), tnp.einsum("i,i->", v, v))
    check(tmp_path, f, [S(None, 3), S(3, 5), S(3)],
          [(_r(4, 3), _r(3, 5), _r(3)), (_r(1, 3), _r(3, 5), _r(3))],
          rtol=1e-5, atol=1e-5)


def test_det(tmp_path):
    def f(a):
        return tnp.linalg.det(a)
    a = _r(4, 3, 3)
    a[1] = [[1, 2, 3], [2, 4, 6], [0, 1, 1]]        # singular
    check(tmp_path, f, [S(None, 3, 3)], [(a,), (a[:1],)], rtol=1e-4, atol=1e-5)


def test_unsigned_shifts(tmp_path):
    def f(x, k):
        return x << k, x >> k
    x = np.array([0, 1, 5, 255, 1 << 20, 12345], np.uint32)
    k = np.array([0, 1, 3, 4, 2, 7], np.uint32)
    check(tmp_path, f, [S(None, dtype=np.uint32)] * 2, [(x, k), (x[:2], k[:2])])


def test_cumsum_and_sorting(tmp_path):
    def f(x):
        return (tnp.cumsum(x, axis=0), tnp.cumsum(x, axis=1), tnp.sort(x, axis=1),
                tnp.sort(x, axis=0), tnp.argsort(x, axis=1, kind="stable"))
    x = _r(5, 6)
    x[1, :3] = 1.0
    x[2, 1] = np.nan
    x[2, 3] = np.inf
    x[2, 4] = np.nan
    x[3, 0] = -0.0
    check(tmp_path, f, [S(None, 6)], [(x,), (x[2:4],)], rtol=1e-5, atol=1e-6)


def test_integer_sort(tmp_path):
    def f(x):
        return tnp.sort(x), tnp.argsort(x, kind="stable"), tnp.cumsum(x)
    x = np.array([3, 1, 2, 1, 3, -5, 0], I32)
    check(tmp_path, f, [S(None, dtype=I32)], [(x,), (x[:3],)])


def test_dynamic_shapes(tmp_path):
    def f(x):
        n = nf.shape(x)
        return n, tnp.take_along_axis(x, tnp.argsort(x, axis=1, kind="stable"), axis=1), \
            tnp.diff(x, axis=1), tnp.zeros_like(x)
    check(tmp_path, f, [S(None, None)], [(_r(3, 5),), (_r(4, 2),)])


def test_runtime_sizes(tmp_path):
    # sizes from nf.shape as reshape, zeros, broadcast and slice arguments; an `if` and a
    # `for` over a traced bound that AutoGraph converted
    def f(x, k):
        s = nf.shape(x)
        r = nf.reshape(x, [s[0] * s[1], 1])
        z = tnp.zeros([s[1], s[0]]) + tnp.broadcast_to(tnp.asarray(1.0), [s[1], 1])
        y = x[k:, :k] * 2.0
        if tnp.sum(x) > 0:
            y = y + 1.0
        for i in range(k):
            r = r * 2.0
        return r, z, y, x[::-1][1:], x[: s[0] // 2]
    args = [(_r(3, 5), np.int32(2)), (_r(4, 2), np.int32(0)), (-_r(1, 3), np.int32(5))]
    check(tmp_path, f, [S(None, None), S(dtype=I32)], args)


def test_cond_and_switch(tmp_path):
    def f(x, k):
        a = nf.cond(tnp.sum(x) > 0, lambda: x * 2, lambda: -x)
        b = nf.switch_case(k, [lambda: x + 1, lambda: x * x, lambda: tnp.exp(x)])
        return a, b
    x = _r(4)
    check(tmp_path, f, [S(None), S(dtype=I32)],
          [(x, np.int32(0)), (-np.abs(x), np.int32(1)), (x[:2], np.int32(2)),
          (x, np.int32(7)), (x, np.int32(-1))])


def test_while_loop(tmp_path):
    def f(x, n):
        def body(i, acc):
            return i + 1, acc * 0.5 + tnp.sin(x)
        _, out = nf.while_loop(lambda i, acc: i < n, body, (tnp.asarray(0), tnp.zeros_like(x)))
        _, capped = nf.while_loop(lambda i, acc: i < n, body, (tnp.asarray(0), x),
                                  maximum_iterations=3)
        ys = nf.scan(lambda c, e: c * 0.5 + e, x * 2, initializer=tnp.float32(1))
        rev = scan_carry(lambda c, e: (c + e, c * e), tnp.float32(0), x, reverse=True)
        return out, nf.fori_loop(0, 3, lambda i, s: s + x * i.astype(x.dtype), x), ys, rev, \
            capped
    check(tmp_path, f, [S(None), S(dtype=I64)],
          [(_r(4), np.int64(5)), (_r(2), np.int64(0))], rtol=1e-5, atol=1e-6)


def test_random_draws(tmp_path):
    """Fresh draws at every run, with the distribution's moments (statistical bounds)."""
    def f():
        return (tnp.random.randn(20000).astype(tnp.float32),
                tnp.random.uniform(2.0, 4.0, size=(20000,)), tnp.random.rand(3, 2))
    path = str(tmp_path / "r.onnx")
    model = nf.onnx.export(f, [], path)
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    a1, u1, r1 = sess.run(None, {})
    a2, _, _ = sess.run(None, {})
    want = [np.asarray(v) for v in nf.function(f)()]
    assert [a.dtype for a in (a1, u1, r1)] == [w.dtype for w in want]
    assert r1.shape == (3, 2) and u1.shape == (20000,)
    assert abs(a1.mean()) < 0.05 and abs(a1.std() - 1) < 0.05
    assert 2 <= u1.min() and u1.max() < 4 and abs(u1.mean() - 3) < 0.05
    assert not np.array_equal(a1, a2)


# ------------------------------------------------------------------ errors and API
def test_unsupported_primitive_names_it_and_the_line(tmp_path):
    def f(x):
        return tnp.cumprod(x)   # the line the error must point at
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(nf.onnx.UnsupportedOperationError) as e:
        nf.onnx.export(f, [S(None)], str(tmp_path / "x.onnx"))
    msg = str(e.value)
    assert "'cumprod'" in msg and "test_onnx.py:%d" % line in msg
    assert not (tmp_path / "x.onnx").exists()


def test_variable_assignment_is_refused(tmp_path):
    v = nf.Variable(np.zeros(3, F32))

    def f(x):
        v.assign_add(x)
        return v.read_value()
    with pytest.raises(nf.onnx.UnsupportedOperationError, match="assign"):
        nf.onnx.export(f, [S(3)], str(tmp_path / "x.onnx"))


def test_signature_and_names(tmp_path):
    with pytest.raises(TypeError, match="TensorSpec"):
        nf.onnx.export(lambda x: x, [np.zeros(3)], None)
    with pytest.raises(ValueError, match="opset"):
        nf.onnx.export(lambda x: x, [S(3)], None, opset=9)
    m = nf.onnx.export(lambda x, y: (x + y, {"k": y * 2}) and (x + y, y * 2),
                       [nf.TensorSpec([None, 2], F32, name="a"), nf.TensorSpec([2], F32, "b")],
                       str(tmp_path / "n.onnx"), output_names=["s", "d"])
    assert [i.name for i in m.graph.input] == ["a", "b"]
    assert [o.name for o in m.graph.output] == ["s", "d"]
    dims = m.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "a_dim0" and dims[1].dim_value == 2
    got = _run_onnx(str(tmp_path / "n.onnx"), [np.ones((3, 2), F32), np.ones(2, F32)])
    np.testing.assert_array_equal(got[0], np.full((3, 2), 2, F32))


def test_opset_14(tmp_path):
    def f(x):
        return tnp.max(x, axis=0), tnp.sum(x, axis=1), tnp.any(x > 0, axis=0)
    check(tmp_path, f, [S(None, 3)], [(_r(4, 3),)], opset=14)


# ------------------------------------------------------------------ wrong exports, by example
# (each is one example of a class the primitive suite, tests/test_onnx_primitives.py, covers)
def test_any_all_over_an_empty_axis(tmp_path):
    def f(x):
        return tnp.any(x > 0, axis=1), tnp.all(x > 0, axis=1), tnp.any(x, axis=0)
    for spec in (S(2, 0), S(None, None)):
        check(tmp_path, f, [spec], [(np.zeros((2, 0), F32),)])


@pytest.mark.parametrize("dtype", [F32, F64, np.float16])
def test_minimum_maximum_signed_zeros_at_every_position(tmp_path, dtype):
    """NumPy returns one operand of two equal ones (zeros of opposite signs) at every position;
    onnxruntime's Max/Min picked either depending on the position in its vector loop."""
    z = np.array([0.0, -0.0], dtype)
    a = np.tile(z, 40)[:77]
    b = np.tile(z[::-1], 40)[:77]
    feeds = [(a[:k], b[:k]) for k in (1, 3, 7, 8, 15, 16, 17, 33, 77)] + [(a, a[::-1].copy())]
    check(tmp_path, lambda x, y: (tnp.minimum(x, y), tnp.maximum(x, y)),
          [S(None, dtype=dtype)] * 2, feeds, signed_zeros=True)


def test_integer_division_extremes_do_not_crash_the_runtime():
    """MIN // -1 and x // 0 trap in an integer division unit (SIGFPE kills onnxruntime's
    process): the exporter keeps those divisors away from Div and Mod and gives NumPy's values
    (MIN // -1 wraps to MIN, x // 0 is 0). Run in a child process, so a regression is a failed
    test rather than a dead test session."""
    from onnx_runner import OrtRunner
    runner = OrtRunner()
    try:
        for dt in (np.int8, np.int16, np.int32, np.int64):
            lo = np.iinfo(dt).min
            a = np.array([lo, lo, 7, -7, lo, 0, 5], dt)
            b = np.array([-1, 0, 0, -1, 1, 0, -1], dt)
            for fn in (tnp.floor_divide, tnp.remainder, tnp.fmod):
                model = nf.onnx.export(lambda x, y: fn(x, y), [S(None, dtype=dt)] * 2)
                status, results = runner.run(model.SerializeToString(), [(a, b)])
                assert status == "ok", (fn.__name__, dt, status, results)
                with np.errstate(all="ignore"):
                    want = getattr(np, fn.__name__)(a, b)
                np.testing.assert_array_equal(results[0][1][0], want, err_msg=fn.__name__)
    finally:
        runner.close()


def test_max_min_over_an_empty_axis_raise(tmp_path):
    """NumPy raises for a reduction without identity over an empty axis: at export when the
    size is known then, when the graph runs (with NumPy's message) when it is not."""
    for fn, what in ((tnp.max, "maximum"), (tnp.min, "minimum"), (tnp.argmax, "argmax")):
        with pytest.raises(ValueError, match="empty|zero-size"):
            nf.onnx.export(lambda x: fn(x, axis=1), [S(2, 0)])
        path = str(tmp_path / "m.onnx")
        nf.onnx.export(lambda x: fn(x, axis=1), [S(None, None)], path)
        with pytest.raises(Exception, match=what):
            _run_onnx(path, [np.zeros((2, 0), F32)])
        got, = _run_onnx(path, [np.zeros((0, 3), F32)])     # nothing reduced over an empty axis
        assert got.shape == (0,)
        got, = _run_onnx(path, [np.array([[1.0, np.nan], [-0.0, 2.0]], F32)])
        want = np.asarray(fn(tnp.asarray(np.array([[1.0, np.nan], [-0.0, 2.0]], F32)), axis=1))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["sinh", "cosh", "arcsinh", "arccosh", "arctanh", "arctan",
                                  "arcsin", "arccos", "expm1", "log1p", "cbrt"])
def test_functions_written_with_other_operators_are_accurate(tmp_path, name):
    """Functions ONNX (or onnxruntime, in float64) lacks are written with other operators:
    within a few ulp of NumPy over a wide range of magnitudes, NaN and infinities where
    NumPy has them (tan, also written so, inherits onnxruntime's float64 Sin and Cos, tens of
    ulps near their zeros, and is left to the special-value suite)."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-30, 30, 3000),
                        rng.uniform(-1, 1, 2000), rng.uniform(-1e-8, 1e-8, 200),
                        [1e300, -1e300, 700, 710, 710.4, -710.4, 1 - 1e-16, -1 + 1e-16, 1.0,
                         -1.0, np.inf, -np.inf, np.nan, 0.0, -0.0, 5e-324, -5e-324]])
    path = str(tmp_path / "f.onnx")
    fn = getattr(tnp, name)
    for dt, ulps in ((F64, 4), (F32, 4)):
        xs = x.astype(dt)
        nf.onnx.export(lambda v: fn(v), [S(None, dtype=dt)], path)
        got, = _run_onnx(path, [xs])
        with np.errstate(all="ignore"):
            want = getattr(np, name)(xs)
        assert np.array_equal(np.isnan(got), np.isnan(want)), xs[np.isnan(got) != np.isnan(want)]
        inf = np.isinf(want)
        np.testing.assert_array_equal(got[inf], want[inf])
        zero = want == 0
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
        ok = np.isfinite(want) & ~zero
        err = np.abs(got[ok].astype(np.float64) - want[ok]) / np.spacing(np.abs(want[ok]))
        assert err.max() <= ulps, (dt, float(err.max()), xs[ok][np.argmax(err)])


def test_exporter_docstring_examples_run():
    import doctest
    assert doctest.testmod(_export_mod).failed == 0


def test_logarithms_of_exact_powers_are_integers(tmp_path):
    """log10(1000) is 3 and log2(2**-1066) is -1066 in NumPy; a quotient of two rounded
    logarithms misses for many powers (and floor(log10(x)) counts one digit too few)."""
    x = np.concatenate([10.0 ** np.arange(-300, 300), 2.0 ** np.arange(-1074, 1024),
                        [3.0, 0.3, 1e-320, 7e300]])
    path = str(tmp_path / "l.onnx")
    nf.onnx.export(lambda v: (tnp.log10(v), tnp.log2(v)), [S(None, dtype=F64)], path)
    got10, got2 = _run_onnx(path, [x])
    exact = x[:600] == 10.0 ** np.arange(-300, 300)      # the powers that are floats exactly
    np.testing.assert_array_equal(got10[:600][exact], np.log10(x[:600][exact]))
    np.testing.assert_array_equal(got2[600:-4], np.log2(x[600:-4]))
    np.testing.assert_allclose(got10, np.log10(x), rtol=4e-16)
    np.testing.assert_allclose(got2, np.log2(x), rtol=4e-16)


def test_export_under_the_fast_contract_keeps_numpys_graph(tmp_path):
    """With `settings.fast_math` on, the optimizer writes x ** k (k constant integers) as
    |x| ** k with a signbit select for ndflow's kernels; export optimizes under NumPy's
    contract (ONNX has no signbit for NaN, and a runtime rounds its own way), so the model is
    Pow and runs: it raised UnsupportedOperationError before."""
    k = np.arange(4.0, dtype=F32)[:, None]
    x = np.concatenate([SPECIAL, -SPECIAL])
    with nf.config.settings.override(fast_math=True):
        prims = check(tmp_path, lambda x: x[None] ** k, [S(x.size)], [(x,)], rtol=2e-6,
                      atol=0, signed_zeros=True)
    assert "power" in prims and "signbit" not in prims, prims
