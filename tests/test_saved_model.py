"""Saved functions (`nf.saved_model.save/load`): round trips in processes that lack the
defining source, every dtype, control flow and indexing parameters, gradients of the loaded
function (against the original and central differences), loaded functions inside
`nf.function` and `vectorized_map`, `None` sizes staying unknown, Variables on the loaded
object, and clear errors for newer, damaged or unknown content."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.dtypes import SUPPORTED


def _env():
    return dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))


_DEFINE = textwrap.dedent("""
    import sys, numpy as np, ndflow as nf, ndflow.numpy as tnp

    class Dense(nf.Module):
        def __init__(self, n_in, n_out, seed):
            super().__init__()
            r = np.random.default_rng(seed)
            self.w = nf.Variable(r.standard_normal((n_in, n_out)) * 0.5, name="w")
            self.b = nf.Variable(np.linspace(-1, 1, n_out), name="b")

        def __call__(self, x):
            return tnp.tanh(x @ self.w + self.b)

    class Model(nf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(3, 5, 0), Dense(5, 2, 1)]
            self.calls = nf.Variable(0, dtype="int64", trainable=False)

        @nf.function(input_signature=[nf.TensorSpec([None, 3], "float64")])
        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

        @nf.function(input_signature=[nf.TensorSpec([None, 3], "float64"),
                                      nf.TensorSpec([None], "int64")])
        def loss(self, x, labels):
            self.calls.assign_add(1)
            logits = self(x)
            z = logits - tnp.max(logits, axis=1, keepdims=True)
            logp = z - tnp.log(tnp.sum(tnp.exp(z), axis=1, keepdims=True))
            picked = tnp.take_along_axis(logp, labels[:, None], axis=1)
            return {"loss": -tnp.mean(picked), "first": logp[0, ...]}

    m = Model()
    nf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.__call__})
""")

# what both processes compute: the defining one with the original model (the oracle), the
# loading one with the loaded model
_PROBE = textwrap.dedent("""
    def probe(model, out_path):
        x = np.linspace(-2, 2, 12).reshape(4, 3)
        labels = np.array([0, 1, 1, 0])
        out = {"y4": model(x).numpy(), "y1": model(x[:1]).numpy()}
        r = model.loss(x, labels)
        out["loss"], out["first"] = r["loss"].numpy(), r["first"].numpy()
        out["calls"] = model.calls.numpy()
        with nf.GradientTape() as t:
            l = model.loss(x, labels)["loss"]
        g = t.gradient(l, [model.layers[0].w, model.layers[1].b])
        out["gw"], out["gb"] = g[0].numpy(), g[1].numpy()
        out["gx"] = nf.grad(lambda z: tnp.sum(model(z)))(tnp.asarray(x)).numpy()
        out["vmap"] = nf.vectorized_map(lambda row: model(row[None])[0], tnp.asarray(x)).numpy()
        out["fn"] = nf.function(lambda z: model(z) * 2)(x).numpy()
        out["n_vars"] = np.array(len(model.variables))
        np.savez(out_path, **out)
""")

_LOAD = textwrap.dedent("""
    import sys, numpy as np, ndflow as nf, ndflow.numpy as tnp
    loaded = nf.saved_model.load(sys.argv[1])
    assert not any("define" in m for m in sys.modules)
    probe(loaded, sys.argv[2])
    x = np.linspace(-2, 2, 12).reshape(4, 3)
    np.save(sys.argv[3], loaded.signatures["serving_default"](x).numpy())
""")


def test_round_trip_in_fresh_processes_without_the_source(tmp_path):
    define = tmp_path / "define_model.py"
    define.write_text(_DEFINE + _PROBE + "probe(Model(), sys.argv[2])\n")
    export = tmp_path / "model"
    subprocess.run([sys.executable, str(define), str(export), str(tmp_path / "want.npz")],
                   check=True, env=_env(), timeout=120, cwd=str(tmp_path))
    define.unlink()                                 # the defining source is gone
    loader = tmp_path / "load_model.py"
    loader.write_text(_LOAD.replace("loaded = ", _PROBE + "loaded = ", 1))
    subprocess.run([sys.executable, str(loader), str(export), str(tmp_path / "got.npz"),
                    str(tmp_path / "sig.npy")],
                   check=True, env=_env(), timeout=120, cwd=str(tmp_path))
    with np.load(tmp_path / "got.npz", allow_pickle=False) as z:
        got = {k: z[k] for k in z.files}
    with np.load(tmp_path / "want.npz", allow_pickle=False) as z:
        want = {k: z[k] for k in z.files}
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-15, err_msg=k)
    assert int(got["calls"]) == 1                   # the loaded Variable was written
    assert int(got["n_vars"]) == 5
    np.testing.assert_array_equal(np.load(tmp_path / "sig.npy"), got["y4"])
    # and the gradients are right: central differences on the loaded model's input gradient
    x = np.linspace(-2, 2, 12).reshape(4, 3)
    loaded = nf.saved_model.load(str(export))
    eps, num = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        num[idx] = (np.sum(loaded(x + d).numpy()) - np.sum(loaded(x - d).numpy())) / (2 * eps)
    np.testing.assert_allclose(got["gx"], num, rtol=1e-6, atol=1e-8)


def _save_load(tmp_path, obj, **kw):
    d = str(tmp_path / "m")
    nf.saved_model.save(obj, d, **kw)
    return nf.saved_model.load(d)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")   # inf * 0 in complex
@pytest.mark.parametrize("dt", SUPPORTED, ids=lambda d: d.name)
def test_every_dtype(tmp_path, dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        c = np.array([True, False, True])
        body = lambda x: tnp.logical_xor(x, c)          # noqa: E731
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        c = np.array([info.max, info.min, 3], dt)
        body = lambda x: tnp.where(x > 1, x, c)          # noqa: E731
    else:
        c = np.array([-0.0, np.inf, 0.5], dt) if dt.kind != "c" else \
            np.array([complex(-0.0, 1), complex(np.inf, 0), 0.5], dt)
        body = lambda x: x * c + c                     # noqa: E731
    v = nf.Variable(c)
    f = nf.function(lambda x: (body(x), v.value()),
                    input_signature=[nf.TensorSpec([3], dt)])
    loaded = _save_load(tmp_path, f)
    x = (np.array([0, 1, 2]) if dt.kind != "b" else np.array([1, 0, 0])).astype(dt)
    want, got = f(x), loaded(x)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert loaded.variables[0].dtype == dt


def test_control_flow_indexing_and_special_parameters(tmp_path):
    w = nf.Variable(np.array([1.5, -0.5, 2.0]))

    class M(nf.Module):
        def __init__(self):
            super().__init__()
            self.w = w

        @nf.function(input_signature=[nf.TensorSpec([None, 3], "float64"),
                                      nf.TensorSpec([], "int64")])
        def f(self, x, k):
            y = nf.cond(k > 0, lambda: x * self.w, lambda: x - self.w)
            y = nf.switch_case(k, [lambda: y, lambda: y * 2, lambda: -y])
            i, s = nf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + tnp.sin(s)),
                                 (tnp.asarray(0), y))
            ys = nf.scan(lambda c, r: c * 0.5 + tnp.tanh(r * c + r), s, initializer=tnp.ones(3))
            z = ys[..., ::2][:, None, 1:] + tnp.einsum("ij,j->i", ys, self.w)[:, None, None]
            return z, tnp.sort(ys, axis=0), tnp.cumsum(ys, axis=1), tnp.float32(2.5)

    m = M()
    loaded = _save_load(tmp_path, m)
    x = np.linspace(-1, 1, 12).reshape(4, 3)
    for k in (0, 1, 2, 5):
        want, got = m.f(x, k), loaded.f(x, k)
        assert got[3] == want[3] == np.float32(2.5)
        for a, b in zip(got[:3], want[:3]):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13, atol=1e-15)
    # gradient through the loaded control flow: against the original and central differences
    k = tnp.asarray(1)

    def loss(fn):
        return lambda x: tnp.sum(fn(x, k)[0] ** 2)
    g = nf.grad(loss(loaded.f))(tnp.asarray(x)).numpy()
    np.testing.assert_allclose(g, nf.grad(loss(m.f))(tnp.asarray(x)).numpy(), rtol=1e-10)
    eps, num = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        num[idx] = (float(loss(loaded.f)(x + d)) - float(loss(loaded.f)(x - d))) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6 * np.abs(g).max())


def test_none_dimensions_stay_unknown_and_signature_is_enforced(tmp_path):
    f = nf.function(lambda x: tnp.sum(x, axis=0), input_signature=[nf.TensorSpec([None, 2])])
    loaded = _save_load(tmp_path, f)
    spec = loaded.__call__.input_signature[0]
    assert spec.shape == (None, 2) and spec.dtype == np.float32
    for n in (0, 1, 7):
        x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        np.testing.assert_array_equal(loaded(x).numpy(), x.sum(axis=0))
    with pytest.raises(TypeError, match="input_signature"):
        loaded(np.ones((3, 4), np.float32))
    doc = json.load(open(tmp_path / "m" / "saved_model.json"))
    graph = next(iter(doc["functions"].values()))["graph"]
    assert graph["inputs"][0][1] == [None, 2]


def test_traced_concrete_functions_and_signatures(tmp_path):
    @nf.function
    def f(x):
        return x * 2 + 1

    f(np.ones(3, np.float32))
    f(np.ones((2, 2), np.int64))
    g = nf.function(lambda x: x - 1, input_signature=[nf.TensorSpec([None], "float64")])
    cf = nf.function(lambda a, b: a @ b).get_concrete_function(
        nf.TensorSpec([2, 3]), nf.TensorSpec([3, None]))

    class M(nf.Module):
        pass
    m = M()
    m.f, m.cf = f, cf
    loaded = _save_load(tmp_path, m, signatures={"minus": g, "prod": cf})
    np.testing.assert_array_equal(loaded.f(np.arange(3, dtype=np.float32)).numpy(),
                                  [1, 3, 5])
    out = loaded.f(np.arange(4).reshape(2, 2))
    assert out.dtype == np.int64 and out.shape == (2, 2)
    with pytest.raises(TypeError, match="no saved signature"):
        loaded.f(np.ones(5, np.float64))
    np.testing.assert_array_equal(loaded.signatures["minus"](np.array([1.0, 2.0])).numpy(),
                                  [0.0, 1.0])
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(loaded.cf(a, b).numpy(), a @ b)
    np.testing.assert_array_equal(loaded.signatures["prod"](a, b).numpy(), a @ b)
    with pytest.raises(ValueError, match="no input_signature and has not been traced"):
        nf.saved_model.save(nf.function(lambda x: x), str(tmp_path / "none"))


def test_loaded_variables_are_the_state_of_the_loaded_functions(tmp_path):
    class Counter(nf.Module):
        def __init__(self):
            super().__init__()
            self.total = nf.Variable(np.zeros(2))
            self.parts = {"scale": nf.Variable(3.0)}

        @nf.function(input_signature=[nf.TensorSpec([2], "float64")])
        def add(self, x):
            self.total.assign_add(x * self.parts["scale"])
            return self.total.value()

    c = Counter()
    c.add(np.ones(2))
    loaded = _save_load(tmp_path, c)
    assert isinstance(loaded.total, nf.Variable)
    np.testing.assert_array_equal(loaded.total.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(loaded.add(np.array([1.0, 2.0])).numpy(), [6.0, 9.0])
    loaded.parts["scale"].assign(0.5)
    np.testing.assert_array_equal(loaded.add(np.array([2.0, 2.0])).numpy(), [7.0, 10.0])
    np.testing.assert_array_equal(c.total.numpy(), [3.0, 3.0])    # the original is untouched
    assert {id(v) for v in loaded.variables} == {id(loaded.total), id(loaded.parts["scale"])}


def test_unsaveable_parameters_are_refused_at_save_time(tmp_path):
    f = nf.function(lambda x: nf.numpy_function(np.sinc, [x], np.float64) + 1,
                    input_signature=[nf.TensorSpec([3], "float64")])
    with pytest.raises(TypeError, match="parameter 'func' of primitive 'numpy_function' "
                                        r"\(created at .*test_saved_model.py"):
        nf.saved_model.save(f, str(tmp_path / "m"))
    assert not os.path.exists(tmp_path / "m" / "saved_model.json")


def _rewrite(path, change):
    doc = json.load(open(path))
    change(doc)
    with open(path, "w") as fh:
        json.dump(doc, fh)


def test_newer_damaged_or_unknown_content_is_a_clear_error(tmp_path):
    f = nf.function(lambda x: tnp.exp(x) + 1.0, input_signature=[nf.TensorSpec([None])])
    d = tmp_path / "m"
    nf.saved_model.save(f, str(d))
    gfile = d / "saved_model.json"
    good = gfile.read_bytes()
    nf.saved_model.load(str(d))

    _rewrite(gfile, lambda doc: doc.update(version=2))
    with pytest.raises(ValueError, match=r"saved_model.json.*format version 2.*newer"):
        nf.saved_model.load(str(d))

    gfile.write_bytes(good[:len(good) // 2])
    with pytest.raises(ValueError, match=r"saved_model.json.*truncated or corrupted"):
        nf.saved_model.load(str(d))

    gfile.write_bytes(good)

    def rename(doc):
        for n in next(iter(doc["functions"].values()))["graph"]["nodes"]:
            if n["prim"] == "exp":
                n["prim"] = "exp_from_the_future"
    _rewrite(gfile, rename)
    with pytest.raises(ValueError, match="uses the primitive 'exp_from_the_future', which this "
                                         "ndflow does not have"):
        nf.saved_model.load(str(d))

    gfile.write_bytes(good)
    data = d / json.loads(good)["tensors"]
    raw = data.read_bytes()
    data.write_bytes(raw[:-3])
    with pytest.raises(ValueError, match="truncated"):
        nf.saved_model.load(str(d))
    data.unlink()
    with pytest.raises(ValueError, match="missing"):
        nf.saved_model.load(str(d))
    with pytest.raises(OSError, match="no saved model"):
        nf.saved_model.load(str(tmp_path / "nothing"))


def test_resave_is_atomic(tmp_path, monkeypatch):
    from ndflow.train import _tensorfile
    f = nf.function(lambda x: x + 1.0, input_signature=[nf.TensorSpec([2], "float64")])
    d = str(tmp_path / "m")
    nf.saved_model.save(f, d)
    g = nf.function(lambda x: x * 10.0, input_signature=[nf.TensorSpec([2], "float64")])
    real = _tensorfile.write
    monkeypatch.setattr(_tensorfile, "write", lambda *a, **k: real(*a, **dict(k, _fail_after=0)))
    with pytest.raises(OSError, match="simulated crash"):
        nf.saved_model.save(g, d)
    monkeypatch.undo()
    np.testing.assert_array_equal(nf.saved_model.load(d)(np.zeros(2)).numpy(), [1.0, 1.0])
    nf.saved_model.save(g, d)
    np.testing.assert_array_equal(nf.saved_model.load(d)(np.ones(2)).numpy(), [10.0, 10.0])
    assert len([p for p in os.listdir(d) if p.endswith(".safetensors")]) == 1


def test_random_draws_use_the_global_stream_at_run_time(tmp_path):
    f = nf.function(lambda x: x + tnp.random.normal(size=(2, 3)) * tnp.random.uniform(),
                    input_signature=[nf.TensorSpec([None, 3], "float64")])
    loaded = _save_load(tmp_path, f)
    x = np.zeros((2, 3))
    tnp.random.seed(7)
    want = f(x).numpy()
    tnp.random.seed(7)
    np.random.seed(7)
    oracle = np.random.normal(size=(2, 3)) * np.random.uniform()
    tnp.random.seed(7)
    got = loaded(x).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, oracle)
    assert not np.array_equal(loaded(x).numpy(), got)    # fresh numbers at every call
    # a draw from a stream the user holds is live state, not data: refused when saving
    rng = tnp.random.default_rng(0)
    g = nf.function(lambda x: x + rng.normal(size=3), input_signature=[nf.TensorSpec([3])])
    with pytest.raises(TypeError, match="parameter 'rs' of primitive 'random_draw'.*Generator"):
        nf.saved_model.save(g, str(tmp_path / "rng"))


def test_a_loaded_model_saves_again(tmp_path):
    class M(nf.Module):
        def __init__(self):
            super().__init__()
            self.w = nf.Variable(np.array([2.0, 3.0]))

        @nf.function(input_signature=[nf.TensorSpec([None, 2], "float64")])
        def __call__(self, x):
            return x * self.w

    m = M()
    once = _save_load(tmp_path, m, signatures={"serving_default": m.__call__})
    d2 = str(tmp_path / "again")
    nf.saved_model.save(once, d2)
    twice = nf.saved_model.load(d2)
    x = np.array([[1.0, -1.0], [0.5, 4.0]])
    np.testing.assert_array_equal(twice(x).numpy(), m(x).numpy())
    np.testing.assert_array_equal(twice.signatures["serving_default"](x).numpy(), m(x).numpy())
    np.testing.assert_array_equal(twice.w.numpy(), [2.0, 3.0])
    twice.w.assign([1.0, 1.0])
    np.testing.assert_array_equal(twice(x).numpy(), x)


# ------------------------------------------------------------------ every op of the op table
def _optable_cases():
    """Records with array arguments (creation functions have nothing to trace with)."""
    from optable import RECORDS
    return [pytest.param(r, id=r.name) for r in RECORDS if r.jit and r.values == "values"
            and any(isinstance(a, np.ndarray) for a in
                    r.samples(np.random.default_rng(0), np.dtype(r.dtypes[0]))[0].args)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("rec", _optable_cases())
def test_every_op_table_function_round_trips(tmp_path, rec):
    """Each NumPy function's graph (its primitives and their parameters: axes, index specs,
    dtypes, einsum subscripts, sub-graphs ...) saves, loads and gives the traced function's
    values, dtypes and shapes."""
    from ndflow.core import tree
    dt = np.dtype(rec.dtypes[0])
    s = rec.samples(np.random.default_rng(0), dt)[0]
    pos = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]

    def f(*arrs):
        a = list(s.args)
        for p, x in zip(pos, arrs):
            a[p] = x
        return rec.call(tnp, *a, **s.kwargs)
    arrays = [s.args[p] for p in pos]
    fn = nf.function(f, input_signature=[nf.TensorSpec(a.shape, a.dtype) for a in arrays])
    want = fn(*arrays)
    got = _save_load(tmp_path, fn)(*arrays)
    gl, wl = tree.flatten(got), tree.flatten(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_functions_of_nested_modules_come_back_on_them(tmp_path):
    class Encoder(nf.Module):
        def __init__(self):
            super().__init__()
            self.w = nf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))

        @nf.function(input_signature=[nf.TensorSpec([None, 2], "float64")])
        def __call__(self, x):
            return x @ self.w

        @nf.function
        def untraced(self, x):
            return x

    class Outer(nf.Module):
        def __init__(self):
            super().__init__()
            self.encoders = {"a": Encoder()}

        @nf.function(input_signature=[nf.TensorSpec([None, 2], "float64")])
        def __call__(self, x):
            return self.encoders["a"](x) + 1.0

    m = Outer()
    loaded = _save_load(tmp_path, m)
    x = np.array([[1.0, 0.0], [0.5, -2.0]])
    np.testing.assert_array_equal(loaded(x).numpy(), m(x).numpy())
    enc = loaded.encoders["a"]
    np.testing.assert_array_equal(enc(x).numpy(), m.encoders["a"](x).numpy())
    assert enc.w is loaded.encoders["a"].w and "untraced" not in vars(enc)
    enc.w.assign(np.eye(2))                   # one Variable shared by both loaded functions
    np.testing.assert_array_equal(enc(x).numpy(), x)
    np.testing.assert_array_equal(loaded(x).numpy(), x + 1.0)


def test_untraced_methods_are_left_out_with_a_warning(tmp_path):
    class M(nf.Module):
        @nf.function(input_signature=[nf.TensorSpec([2])])
        def f(self, x):
            return x + 1

        @nf.function
        def helper(self, x):
            return x

    with pytest.warns(UserWarning, match="'helper' has no input_signature.*not saved"):
        loaded = _save_load(tmp_path, M())
    np.testing.assert_array_equal(loaded.f(np.zeros(2, np.float32)).numpy(), [1, 1])
    assert not hasattr(loaded, "helper")


def test_variables_written_inside_control_flow_are_read_again_after_it(tmp_path):
    class M(nf.Module):
        def __init__(self):
            super().__init__()
            self.v = nf.Variable(0.0, dtype="float64")
            self.n = nf.Variable(0, dtype="int64")

        @nf.function(input_signature=[nf.TensorSpec([], "float64")])
        def f(self, x):
            nf.cond(x > 0, lambda: self.v.assign_add(x), lambda: self.v.assign_sub(1.0))
            nf.while_loop(lambda i: i < 3, lambda i: (self.n.assign_add(1), i + 1)[1],
                          [tnp.asarray(0)])
            return self.v.value() * 1, self.n.value() + 0

    m = M()
    loaded = _save_load(tmp_path, m)
    for x in (2.0, -5.0, 1.5):
        want, got = m.f(x), loaded.f(x)
        assert float(got[0]) == float(want[0]) and int(got[1]) == int(want[1])
    with nf.GradientTape() as t:          # op by op under a tape: the same answers
        got = loaded.f(tnp.asarray(1.0))
    assert float(got[0]) == 3.5 and int(got[1]) == 12
