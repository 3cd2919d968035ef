"""vectorize, frompyfunc, apply_along_axis / apply_over_axes beyond the op table: NumPy's
semantics (dtypes, excluded, otypes, signature, decorator form, errors), the one batched call,
the element-by-element fallback, gradients and compilation."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from helpers import assert_same

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4))
C = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(4)


def _branchy(a, b):
    "Return a-b if a>b, otherwise return a+b"
    if a > b:
        return a - b
    return a + b


_CASES = [
    ("python branch", lambda m: m.vectorize(_branchy)(np.array([1, 2, 3, 4]), 2)),
    ("two inputs", lambda m: m.vectorize(lambda p, q: p * q + 1)(X, V)),
    ("float32 stays", lambda m: m.vectorize(lambda p: p * 2)(X.astype(np.float32))),
    ("int32 stays", lambda m: m.vectorize(lambda p: p * 2)(np.arange(3, dtype=np.int32))),
    ("otypes list", lambda m: m.vectorize(lambda p: p * 2, otypes=[np.float32])(X)),
    ("otypes string", lambda m: m.vectorize(lambda p: p * 2, otypes="i")(X)),
    ("first result decides", lambda m: m.vectorize(lambda p: p if p > 0 else 0.5)(
        np.array([1, -1]))),
    ("tuple outputs", lambda m: m.vectorize(lambda p: (p, p * 2))(X)),
    ("excluded position", lambda m: m.vectorize(lambda p, c: p * c[0] + c[1], excluded=[1])(
        X, [2, 3])),
    ("excluded keyword", lambda m: m.vectorize(lambda p, c=None: p * c[0] + c[1],
                                               excluded={"c"})(X, c=[2, 3])),
    ("keyword vectorized", lambda m: m.vectorize(lambda p, q=1: p - q)(X, q=V)),
    ("empty without otypes", lambda m: m.vectorize(lambda p: p)(np.zeros(0))),
    ("empty with otypes", lambda m: m.vectorize(lambda p: p, otypes=[float])(np.zeros(0))),
    ("scalar", lambda m: m.vectorize(lambda p: p + 1)(3)),
    ("decorator", lambda m: m.vectorize(otypes=[float])(lambda p: p + 1)(np.arange(3))),
    ("signature", lambda m: m.vectorize(lambda p, q: (p * q).sum(),
                                        signature="(n),(n)->()")(X, V)),
    ("signature new dims", lambda m: m.vectorize(lambda p: m.outer(p, p),
                                                 signature="(n)->(n,n)")(C)),
    ("signature two outputs", lambda m: m.vectorize(lambda p: (p.sum(), p.max()),
                                                    signature="(n)->(),()")(X)),
    ("signature branch", lambda m: m.vectorize(lambda p: p[0] if p[0] > 0 else p[1],
                                               signature="(n)->()")(X)),
    ("signature inconsistent", lambda m: m.vectorize(lambda p, q: p, signature="(n),(n)->(n)")(
        X, np.ones(5))),
    ("signature too few dims", lambda m: m.vectorize(lambda p: p, signature="(n,m)->()")(V)),
    ("signature arguments", lambda m: m.vectorize(lambda p: p, signature="(n)->(n)")(V, V)),
    ("bad signature", lambda m: m.vectorize(lambda p: p, signature="(n)->")),
    ("bad otypes", lambda m: m.vectorize(lambda p: p, otypes="?x")),
    ("positional decorator args", lambda m: m.vectorize(3)),
]


@pytest.mark.parametrize("name,f", _CASES, ids=[c[0] for c in _CASES])
def test_vectorize_matches_numpy(name, f):
    try:
        want = f(np)
    except Exception as e:      # noqa: BLE001 - ndflow must raise the same type
        with pytest.raises(type(e)):
            f(tnp)
        return
    got = f(tnp)
    assert_same(got, tuple(want) if isinstance(want, tuple) else want, 1e-12, 1e-12, ctx=name)


def test_vectorize_calls_the_function_once_batched():
    calls = []

    def f(p, q):
        calls.append(1)
        return tnp.sin(p) * q

    out = tnp.vectorize(f)(tnp.asarray(X), tnp.asarray(V))
    assert len(calls) == 1
    assert_same(out, np.sin(X) * V, 1e-12, 1e-12)


def test_vectorize_is_differentiable_and_compiles():
    vf = tnp.vectorize(lambda p, q: tnp.exp(p) * q)
    x, v = tnp.asarray(X), tnp.asarray(V)
    with nf.GradientTape() as tape:
        tape.watch([x, v])
        loss = tnp.sum(vf(x, v))
    gx, gv = tape.gradient(loss, [x, v])
    np.testing.assert_allclose(gx.numpy(), np.exp(X) * V)
    np.testing.assert_allclose(gv.numpy(), np.exp(X).sum(0))
    f = nf.function(lambda a, b: vf(a, b))
    assert_same(f(x, v), np.exp(X) * V, 1e-12, 1e-12)
    g = nf.function(lambda a: tnp.vectorize(lambda r: tnp.sum(r * r), signature="(n)->()")(a),
                    input_signature=[nf.TensorSpec([None, None], np.float64)])
    assert_same(g(x), (X * X).sum(1), 1e-12, 1e-12)


def test_vectorize_metadata():
    vf = tnp.vectorize(_branchy)
    assert vf.__name__ == "_branchy" and vf.__doc__ == _branchy.__doc__
    assert tnp.vectorize(_branchy, doc="mine").__doc__ == "mine"


def test_apply_along_axis_python_branch_runs_row_by_row():
    f = lambda r: r[0] if r[0] > 0 else r[1]  # noqa: E731
    for ax in (0, 1):
        assert_same(tnp.apply_along_axis(f, ax, tnp.asarray(X)), np.apply_along_axis(f, ax, X))


def test_apply_along_axis_one_call_and_gradient():
    calls = []

    def row(r):
        calls.append(1)
        return tnp.stack([tnp.sum(r), tnp.max(r)])

    x = tnp.asarray(C)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.apply_along_axis(row, 1, x)
        loss = tnp.sum(y[:, 0])
    assert len(calls) == 1
    want = np.apply_along_axis(lambda r: np.stack([r.sum(), r.max()]), 1, C)
    assert_same(y, want, 1e-12, 1e-12)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), np.ones_like(C))


def test_apply_over_axes_error():
    with pytest.raises(ValueError, match="correct shape"):
        tnp.apply_over_axes(lambda a, ax: tnp.sum(a), tnp.asarray(C), [0])


def test_frompyfunc_runs_on_the_host_with_numeric_results():
    f = tnp.frompyfunc(lambda a, b: a * 10 + b, 2, 1)
    got = f(tnp.asarray([[1, 2]]), tnp.asarray([[3], [4]]))
    want = np.frompyfunc(lambda a, b: a * 10 + b, 2, 1)(np.array([[1, 2]]), np.array([[3], [4]]))
    assert_same(got, want.astype(np.int64))
    two = tnp.frompyfunc(divmod, 2, 2)(tnp.asarray([7, 8]), 3)
    assert [t.numpy().tolist() for t in two] == [[2, 2], [1, 2]]
    assert f.nin == 2 and f.nout == 1
    with pytest.raises(TypeError):
        tnp.frompyfunc(lambda a: str(a), 1, 1)(tnp.asarray([1]))
