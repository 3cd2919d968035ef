"""Loops over zero steps give the same results on every path: eager, nf.function with known
and with unknown sizes (the compiled scan is the reference: the body traced once gives the
structure, shapes and dtypes of the stacked results, with a leading 0). And a 0-d element is
refused with the same error on every path."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree
from ndflow.graph.control import scan_carry


def _body(c, x):
    return c + tnp.sum(x), (x * 2.0, tnp.stack([c, c]).astype(np.int32))


def _paths(f, *args):
    sig = [nf.TensorSpec([None] * a.ndim, a.dtype) for a in args]
    return {"eager": f(*args), "jit": nf.function(f)(*args),
            "jit_unknown": nf.function(f, input_signature=sig)(*args)}


def _flat(r):
    return [(tuple(a.shape), a.dtype, a.numpy().tolist()) for a in tree.flatten(r)]


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_carry_paths_agree(n, reverse):
    xs = tnp.asarray(np.arange(3.0 * n).reshape(n, 3))
    got = _paths(lambda v: scan_carry(_body, tnp.asarray(1.0), v, reverse=reverse), xs)
    want = _flat(got["jit"])
    assert want[1][0] == (n, 3) and want[2][0] == (n, 2) and want[2][1] == np.int32
    for k, r in got.items():
        assert _flat(r) == want, k


@pytest.mark.parametrize("n", [0, 2])
def test_map_fn_paths_agree(n):
    xs = tnp.asarray(np.ones((n, 3)))
    got = _paths(lambda v: nf.map_fn(lambda x: (x * 2, tnp.sum(x).astype(np.float32)), v), xs)
    want = _flat(got["jit"])
    assert want[0][0] == (n, 3) and want[1][:2] == ((n,), np.float32)
    for k, r in got.items():
        assert _flat(r) == want, k


def test_scan_of_one_element_without_initializer():
    xs = tnp.asarray([5.0])
    f = lambda v: nf.scan(lambda a, x: a + x, v)    # noqa: E731
    for k, r in _paths(f, xs).items():
        assert _flat(r) == [((1,), np.float64, [5.0])], k


def test_map_fn_refuses_a_scalar_on_every_path():
    f = lambda v: nf.map_fn(lambda x: x, v)     # noqa: E731
    with pytest.raises(ValueError, match="not scalars"):
        f(tnp.asarray(1.0))
    with pytest.raises(ValueError, match="not scalars"):
        nf.function(f)(tnp.asarray(1.0))
