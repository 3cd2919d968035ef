"""Interoperability with NumPy and the Python data model: NumPy functions and ufuncs on ndflow
arrays stay ndflow (and differentiable), operator priority, `__array__`, DLPack, the Array API
namespace, conversions, printing, pickling."""
import copy
import pickle

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def test_numpy_sum_returns_ndflow_and_is_differentiable():
    x = tnp.asarray([1.0, 2.0, 3.0])
    s = np.sum(x)
    assert isinstance(s, tnp.ndarray) and float(s) == 6.0
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(x * x)
    assert isinstance(y, tnp.ndarray)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("fn,args", [
    (np.mean, ()), (np.max, ()), (np.transpose, ()), (np.reshape, ((3, 1),)),
    (np.concatenate, None), (np.stack, None), (np.where, "where"), (np.clip, (0.5, 2.5)),
    (np.matmul, "matmul"), (np.einsum, "einsum")], ids=lambda v: getattr(v, "__name__", ""))
def test_numpy_functions_dispatch_to_ndflow(fn, args):
    x = tnp.asarray([1.0, 2.0, 3.0])
    n = x.numpy()
    if args is None:
        got, want = fn([x, x]), fn([n, n])
    elif args == "where":
        got, want = fn(x > 1.5, x, -x), fn(n > 1.5, n, -n)
    elif args == "matmul":
        got, want = fn(x, x), fn(n, n)
    elif args == "einsum":
        got, want = fn("i,i->", x, x), fn("i,i->", n, n)
    else:
        got, want = fn(x, *args), fn(n, *args)
    assert isinstance(got, tnp.ndarray), type(got)
    np.testing.assert_allclose(got.numpy(), want)


@pytest.mark.parametrize("ufunc", [np.exp, np.sin, np.sqrt, np.negative, np.abs, np.tanh])
def test_numpy_ufuncs_dispatch_and_differentiate(ufunc):
    x = tnp.asarray([0.5, 1.5])
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = ufunc(x)
        loss = np.sum(y)
    assert isinstance(y, tnp.ndarray)
    np.testing.assert_allclose(y.numpy(), ufunc(x.numpy()))
    assert tape.gradient(loss, x) is not None


def test_numpy_binary_ufuncs_and_reduce():
    x = tnp.asarray([1.0, 2.0])
    assert isinstance(np.add(x, 1), tnp.ndarray)
    assert isinstance(np.maximum(x, np.ones(2)), tnp.ndarray)
    r = np.add.reduce(x)
    assert isinstance(r, tnp.ndarray) and float(r) == 3.0
    out = tnp.zeros(2)
    np.multiply(x, 2, out=out)
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0])


def test_numpy_functions_without_ndflow_counterpart_fall_back_to_numpy():
    x = tnp.asarray([3.0, 1.0, 2.0])
    r = np.median(x)
    np.testing.assert_allclose(np.asarray(r), 2.0)
    assert isinstance(r, (tnp.ndarray, float, np.floating))
    p = np.percentile(x, 50)
    np.testing.assert_allclose(np.asarray(p), 2.0)


@pytest.mark.parametrize("make", [lambda: tnp.ones(2) + np.ones(2), lambda: np.ones(2) + tnp.ones(2),
                                  lambda: np.ones(2) * tnp.ones(2), lambda: tnp.ones(2) - np.ones(2),
                                  lambda: np.ones(2) @ tnp.ones(2), lambda: np.float64(2.0) * tnp.ones(2),
                                  lambda: np.ones(2) < tnp.ones(2)],
                         ids=["nf+np", "np+nf", "np*nf", "nf-np", "np@nf", "npscalar*nf", "np<nf"])
def test_mixed_operators_give_ndflow_arrays(make):
    assert isinstance(make(), tnp.ndarray)


def test_np_asarray_is_zero_copy_on_cpu():
    x = tnp.asarray(np.arange(4.0))
    a = np.asarray(x)
    assert isinstance(a, np.ndarray)
    np.testing.assert_array_equal(a, [0, 1, 2, 3])
    assert np.shares_memory(a, x.numpy())
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    assert np.array(tnp.asarray(3)).shape == ()
    n = np.arange(3.0)
    assert np.shares_memory(tnp.asarray(n).numpy(), n)


def test_dlpack():
    x = tnp.asarray(np.arange(6.0).reshape(2, 3))
    y = np.from_dlpack(x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, x.numpy())
    assert x.__dlpack_device__() == np.arange(1).__dlpack_device__()
    z = np.from_dlpack(tnp.asarray(5))
    assert z.shape == () and int(z) == 5


def test_array_namespace():
    x = tnp.ones(2)
    xp = x.__array_namespace__()
    assert xp is tnp
    assert isinstance(xp.sum(x), tnp.ndarray)
    y = xp.matrix_transpose(xp.reshape(x, (1, 2)))
    assert y.shape == (2, 1)


def test_python_protocols():
    x = tnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert len(x) == 2
    assert [r.numpy().tolist() for r in x] == [[1.0, 2.0], [3.0, 4.0]]
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x[1, 0].item() == 3.0
    assert x.T.numpy().tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert x.size == 4 and x.ndim == 2 and x.itemsize == 8 and x.nbytes == 32
    assert str(tnp.asarray([1, 2])) == str(np.asarray([1, 2]))
    assert "array(" in repr(x) and "dtype=float64" in repr(x)
    assert f"{tnp.asarray(2.5):.2f}" == "2.50"
    with pytest.raises(TypeError):
        hash(x)
    with pytest.raises(TypeError):
        len(tnp.asarray(1.0))


def test_methods_match_numpy():
    n = np.arange(12.0).reshape(3, 4)
    x = tnp.asarray(n)
    for name, args, kw in [("sum", (), {"axis": 0}), ("mean", (), {}), ("max", (1,), {}),
                           ("min", (), {"keepdims": True}), ("argmax", (), {}),
                           ("reshape", (4, 3), {}), ("reshape", ((2, 6),), {}),
                           ("transpose", (), {}), ("transpose", (1, 0), {}), ("ravel", (), {}),
                           ("flatten", (), {}), ("squeeze", (), {}), ("swapaxes", (0, 1), {}),
                           ("astype", (np.int32,), {}), ("clip", (2, 5), {}), ("prod", (), {}),
                           ("any", (), {}), ("all", (), {}), ("var", (), {"ddof": 1}),
                           ("std", (), {}), ("round", (), {}), ("copy", (), {}),
                           ("take", ([0, 2],), {"axis": 1}), ("dot", (n.T,), {}),
                           ("nonzero", (), {}), ("conj", (), {})]:
        want = getattr(n, name)(*args, **kw)
        got = getattr(x, name)(*args, **kw)
        if isinstance(want, tuple):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.numpy(), w)
        else:
            assert isinstance(got, tnp.ndarray), name
            np.testing.assert_allclose(got.numpy(), want, err_msg=name)
            assert got.dtype == want.dtype, name


def test_pickle_and_copy():
    x = tnp.asarray([1.0, 2.0])
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, tnp.ndarray) and y.numpy().tolist() == [1.0, 2.0]
    z = copy.deepcopy(x)
    z[0] = 9.0
    assert x.numpy().tolist() == [1.0, 2.0]
    w = copy.copy(x)
    assert w is not x and w.numpy().tolist() == [1.0, 2.0]


def test_tnp_accepts_numpy_arrays_lists_and_scalars():
    assert isinstance(tnp.add(np.ones(2), [1, 2]), tnp.ndarray)
    assert tnp.sum([1, 2, 3]).numpy() == 6
    assert tnp.exp(0.0).numpy() == 1.0
    assert isinstance(tnp.matmul(np.ones((2, 2)), np.ones(2)), tnp.ndarray)
    assert tnp.asarray([tnp.asarray(1.0), tnp.asarray(2.0)]).shape == (2,)


def test_ndarray_alias_and_isinstance():
    x = tnp.ones(2)
    assert isinstance(x, tnp.ndarray) and isinstance(x, nf.Tensor) and isinstance(x, nf.ndarray)
    assert not isinstance(x, np.ndarray)


def test_einsum_path_matches_numpy():
    a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
    want = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    got = tnp.einsum_path("ij,jk,kl->il", tnp.asarray(a), tnp.asarray(b), tnp.asarray(c))
    assert got[0] == want[0] and got[1] == want[1]
