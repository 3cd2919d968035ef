"""ndarray methods and attributes against NumPy's, one case per method.

Methods that call a NumPy-layer function another area provides (sort, argsort, partition,
argpartition, searchsorted, cumsum, cumprod) run only when that function exists in
`ndflow.numpy`: the cases are filtered at import time (`needs=`), so they switch on by
themselves once the function is merged."""
import io
import pickle

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from helpers import assert_same

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4))
I = np.arange(12, dtype=np.int32).reshape(3, 4)   # noqa: E741
Z = A + 1j * rng.standard_normal((3, 4))
S = np.sort(rng.standard_normal(6))


class Case:
    def __init__(self, name, call, base=A, needs=None, mutates=False, host=False, desc=""):
        self.name, self.call, self.base, self.needs = name, call, base, needs
        self.mutates, self.host, self.desc = mutates, host, desc

    def __repr__(self):
        return self.name + (f"-{self.desc}" if self.desc else "")


_CASES = [
    Case("T", lambda a: a.T), Case("mT", lambda a: a.mT), Case("real", lambda a: a.real, Z),
    Case("imag", lambda a: a.imag, Z), Case("shape", lambda a: a.shape),
    Case("ndim", lambda a: a.ndim), Case("size", lambda a: a.size),
    Case("itemsize", lambda a: a.itemsize), Case("nbytes", lambda a: a.nbytes),
    Case("dtype", lambda a: a.dtype), Case("flat", lambda a: list(a.flat)[5].item()),
    Case("all", lambda a: a.all(axis=0, keepdims=True), I > 2),
    Case("all", lambda a: a.all(where=np.array([True, False, True, True])), I > 2, desc="where"),
    Case("any", lambda a: a.any(axis=1), I > 8),
    Case("argmax", lambda a: a.argmax(axis=1, keepdims=True)), Case("argmin", lambda a: a.argmin()),
    # (the sort of the first two positions happens in NumPy, so this case is not traced)
    Case("argpartition", lambda a: np.sort(np.asarray(a.argpartition(2, axis=1))[:, :2], 1),
         host=True, needs="argpartition"),
    Case("argsort", lambda a: a.argsort(axis=0), needs="argsort"),
    Case("astype", lambda a: a.astype(np.int32)),
    Case("astype", lambda a: a.astype(np.float32, casting="same_kind"), desc="casting"),
    Case("byteswap", lambda a: a.byteswap(), I, host=True),
    Case("choose", lambda a: (a % 3).choose([np.arange(4), np.arange(4) * 10, -np.arange(4)]), I),
    Case("clip", lambda a: a.clip(-0.5, 0.5)), Case("clip", lambda a: a.clip(max=0.1), desc="max"),
    Case("compress", lambda a: a.compress([True, False, True], axis=0)),
    Case("conj", lambda a: a.conj(), Z), Case("conjugate", lambda a: a.conjugate(), Z),
    Case("copy", lambda a: a.copy()),
    Case("cumprod", lambda a: a.cumprod(axis=1), needs="cumprod"),
    Case("cumsum", lambda a: a.cumsum(), needs="cumsum"),
    Case("diagonal", lambda a: a.diagonal(1)), Case("dot", lambda a: a.dot(np.ones(4))),
    Case("dump", lambda a: _dump_load(a), host=True),
    Case("dumps", lambda a: pickle.loads(a.dumps()), host=True),
    Case("fill", lambda a: a.fill(2.5), mutates=True), Case("flatten", lambda a: a.flatten()),
    Case("getfield", lambda a: a.getfield(np.int32, 4), I.astype(np.int64), host=True),
    Case("item", lambda a: a.item(5)), Case("item", lambda a: a.item(1, 2), desc="index"),
    Case("max", lambda a: a.max(axis=0, initial=0.2)), Case("mean", lambda a: a.mean(axis=1)),
    Case("min", lambda a: a.min(where=np.ones(4, bool), initial=5.0)),
    Case("nonzero", lambda a: a.nonzero(), I % 3 == 0),
    Case("partition", lambda a: a.partition(1, axis=0), mutates=True, needs="partition"),
    Case("prod", lambda a: a.prod(axis=1, keepdims=True)),
    Case("put", lambda a: a.put([0, 5], [7.0, 8.0]), mutates=True),
    Case("ravel", lambda a: a.ravel()), Case("ravel", lambda a: a.ravel("F"), desc="F"),
    Case("repeat", lambda a: a.repeat(2, axis=0)),
    Case("reshape", lambda a: a.reshape(4, 3)), Case("reshape", lambda a: a.reshape((2, -1)),
                                                     desc="tuple"),
    Case("reshape", lambda a: a.reshape(6, 2, order="F"), desc="F"),
    Case("resize", lambda a: a.resize((2, 7), refcheck=False), mutates=True),
    Case("resize", lambda a: a.resize(5, refcheck=False), mutates=True, desc="smaller"),
    Case("round", lambda a: a.round(2)),
    Case("searchsorted", lambda a: a.searchsorted([0.0, 0.5], side="right"), S,
         needs="searchsorted"),
    Case("setfield", lambda a: a.setfield(7, np.int32, 0), I.astype(np.int64), mutates=True,
         host=True),
    Case("setflags", lambda a: (a.setflags(write=False), a.flags.writeable)[1], host=True),
    Case("sort", lambda a: a.sort(axis=0), mutates=True, needs="sort"),
    Case("squeeze", lambda a: a.squeeze(), A[:1]), Case("std", lambda a: a.std(ddof=1)),
    Case("sum", lambda a: a.sum(axis=0, dtype=np.float32)),
    Case("sum", lambda a: a.sum(where=np.array([True, False, True, True]), initial=1.0),
         desc="where"),
    Case("swapaxes", lambda a: a.swapaxes(0, 1)),
    Case("take", lambda a: a.take([0, 2], axis=1)),
    Case("take", lambda a: a.take([0, 20], mode="clip"), desc="clip"),
    Case("to_device", lambda a: a.to_device("CPU:0") if isinstance(a, tnp.ndarray) else
         a.to_device("cpu")),
    Case("tobytes", lambda a: a.tobytes(), host=True),
    Case("tofile", lambda a: _tofile(a), host=True), Case("tolist", lambda a: a.tolist()),
    Case("trace", lambda a: a.trace(offset=1)), Case("transpose", lambda a: a.transpose()),
    Case("transpose", lambda a: a.transpose(1, 0), desc="args"),
    Case("transpose", lambda a: a.transpose((1, 0)), desc="tuple"),
    Case("var", lambda a: a.var(axis=0, keepdims=True)),
    Case("view", lambda a: a.view(np.int64), host=True), Case("view", lambda a: a.view(),
                                                              desc="same"),
    Case("flags", lambda a: (a.flags.c_contiguous, a.flags.writeable), host=True),
    Case("strides", lambda a: a.strides, host=True), Case("base", lambda a: None),
    Case("ctypes", lambda a: a.ctypes.data != 0, host=True),
    Case("data", lambda a: bytes(a.data), host=True),
    Case("device", lambda a: "cpu" if "CPU" in a.device or a.device == "cpu" else a.device),
]

# `base` is None for ndflow arrays (they own their values); NumPy reports a view's base.
# `device` is a TensorFlow-style name ('/job:localhost/.../CPU:0'); NumPy's is 'cpu'.

# methods whose function another area adds: enabled by `needs` when the function exists
PENDING = sorted({c.name for c in _CASES if c.needs})
ACTIVE = [c for c in _CASES if c.needs is None or hasattr(tnp, c.needs)]


def _dump_load(a):
    buf = io.BytesIO()
    a.dump(buf)
    buf.seek(0)
    return pickle.load(buf)


def _tofile(a):
    buf = io.BytesIO()
    try:
        a.tofile(buf)
    except io.UnsupportedOperation:
        import tempfile
        import os
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "a.bin")
            a.tofile(p)
            return open(p, "rb").read()
    return buf.getvalue()


def _cmp(got, want, ctx):
    if isinstance(want, (np.ndarray, np.generic)):
        assert_same(got, want, 1e-6, 1e-6, ctx=ctx, ndflow_type=isinstance(got, tnp.ndarray))
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), ctx
        for g, w in zip(got, want):
            _cmp(g, w, ctx)
    else:
        assert got == want, f"{ctx}: {got!r} != {want!r}"


@pytest.mark.parametrize("case", ACTIVE, ids=repr)
def test_method_matches_numpy(case):
    a_np = case.base.copy()
    a_nf = tnp.asarray(case.base.copy())
    want = case.call(a_np)
    got = case.call(a_nf)
    if case.mutates:
        assert got is None, f"{case!r} returns {got!r}; NumPy's returns None"
        _cmp(a_nf, a_np, repr(case))
    else:
        _cmp(got, want, repr(case))


_COMPUTING = [c for c in ACTIVE if not c.host and c.name not in (
    "shape", "ndim", "size", "itemsize", "nbytes", "dtype", "base", "device", "item", "tolist",
    "flat", "to_device")]


@pytest.mark.parametrize("case", _COMPUTING, ids=repr)
def test_method_traces(case):
    """The computing methods work inside nf.function (and mutate the traced array there)."""
    a = tnp.asarray(case.base.copy())

    def f(x):
        x = tnp.array(x)
        r = case.call(x)
        return x if case.mutates else r
    got = nf.function(f)(a)
    want = f(tnp.asarray(case.base.copy()))
    _cmp(got, _to_np(want), repr(case))


def _to_np(x):
    if isinstance(x, tnp.ndarray):
        return x.numpy()
    if isinstance(x, (tuple, list)):
        return type(x)(_to_np(e) for e in x)
    return x


def test_every_numpy_ndarray_attribute_exists():
    names = [n for n in dir(np.ndarray) if not n.startswith("_")]
    missing = [n for n in names if not hasattr(tnp.ndarray, n)]
    assert not missing, f"ndarray lacks {missing}"
    covered = {c.name for c in _CASES}
    assert set(names) <= covered, f"no test case for {sorted(set(names) - covered)}"


def test_in_place_methods_write_through_views_and_differentiate():
    a = tnp.asarray(A.copy())
    row = a[0]
    a.put([0], 9.0)
    assert float(row[0]) == 9.0
    a.fill(1.0)
    assert float(row[3]) == 1.0
    x = tnp.asarray(A.copy())
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.array(x)
        y.put([1, 2], tnp.asarray([3.0, 4.0]) * x[0, 0])
        loss = tnp.sum(y)
    g = tape.gradient(loss, x).numpy()
    want = np.ones_like(A)
    want[0, 1] = want[0, 2] = 0.0
    want[0, 0] += 7.0
    np.testing.assert_allclose(g, want)


def test_setflags_read_only_makes_assignment_fail():
    a = tnp.asarray(A.copy())
    a.setflags(write=False)
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
