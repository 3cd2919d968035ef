"""Errors at the boundary are NumPy's types (so `except ValueError` keeps working) and name what
went wrong, eagerly, under a tape and while tracing."""
import numpy as np
import pytest
from numpy.exceptions import AxisError

import ndflow as nf
import ndflow.numpy as tnp


def _paths(fn):
    """Run `fn` eagerly, with a tape recording, and compiled."""
    yield "eager", fn
    def taped():
        with nf.GradientTape():
            return fn()
    yield "tape", taped
    yield "function", nf.function(fn)


@pytest.mark.parametrize("path", ["eager", "tape", "function"])
def test_broadcast_mismatch_names_both_shapes(path):
    a, b = tnp.ones((2, 3)), tnp.ones((4,))
    fn = dict(_paths(lambda: a + b))[path]
    with pytest.raises(ValueError) as e:
        fn()
    msg = str(e.value).replace(" ", "")
    assert "(2,3)" in msg and "(4,)" in msg, str(e.value)
    fn = dict(_paths(lambda: tnp.add(a, b)))[path]
    with pytest.raises(ValueError):
        fn()


_AXIS_CASES = [
    ("sum", lambda x: tnp.sum(x, axis=3)), ("mean", lambda x: tnp.mean(x, axis=-4)),
    ("max", lambda x: tnp.max(x, axis=(0, 5))), ("argmax", lambda x: tnp.argmax(x, axis=2)),
    ("prod", lambda x: tnp.prod(x, axis=2)), ("any", lambda x: tnp.any(x, axis=7)),
    ("expand_dims", lambda x: tnp.expand_dims(x, 4)), ("squeeze", lambda x: tnp.squeeze(x, 2)),
    ("concatenate", lambda x: tnp.concatenate([x, x], axis=2)),
    ("stack", lambda x: tnp.stack([x, x], axis=4)), ("take", lambda x: tnp.take(x, [0], axis=2)),
    ("moveaxis", lambda x: tnp.moveaxis(x, 2, 0)), ("swapaxes", lambda x: tnp.swapaxes(x, 0, 2)),
]


@pytest.mark.parametrize("path", ["eager", "tape", "function"])
@pytest.mark.parametrize("name,fn", _AXIS_CASES, ids=[c[0] for c in _AXIS_CASES])
def test_bad_axis_raises_numpy_axis_error(name, fn, path):
    x = tnp.ones((2, 3))
    run = dict(_paths(lambda: fn(x)))[path]
    with pytest.raises(AxisError):
        run()


def test_numpy_raises_axis_error_for_the_same_cases():
    x = np.ones((2, 3))
    np_cases = [lambda: np.sum(x, axis=3), lambda: np.argmax(x, axis=2),
                lambda: np.expand_dims(x, 4), lambda: np.concatenate([x, x], axis=2),
                lambda: np.stack([x, x], axis=4), lambda: np.take(x, [0], axis=2),
                lambda: np.moveaxis(x, 2, 0), lambda: np.swapaxes(x, 0, 2)]
    for c in np_cases:
        with pytest.raises(AxisError):
            c()


def test_axis_error_is_also_value_and_index_error():
    with pytest.raises(ValueError):
        tnp.sum(tnp.ones(2), axis=1)
    with pytest.raises(IndexError):
        tnp.sum(tnp.ones(2), axis=1)


@pytest.mark.parametrize("conv", [int, float, complex, bool])
def test_scalar_conversion_of_size2_array_raises_as_numpy(conv):
    with pytest.raises((TypeError, ValueError)) as np_err:
        conv(np.ones(2))
    with pytest.raises(type(np_err.value)) as nf_err:
        conv(tnp.ones(2))
    assert str(nf_err.value) == str(np_err.value)
    if conv is int:
        assert isinstance(nf_err.value, TypeError)


def test_scalar_conversions_of_size1_arrays():
    assert int(tnp.asarray(3)) == 3
    assert float(tnp.asarray(2.5)) == 2.5
    assert complex(tnp.asarray(1j)) == 1j
    assert bool(tnp.asarray([[1]])) is bool(np.asarray([[1]])) is True
    with pytest.raises(TypeError):
        float(np.asarray([2.5]))   # NumPy 2: only 0-d arrays convert
    with pytest.raises(TypeError):
        float(tnp.asarray([2.5]))
    assert tnp.arange(5)[tnp.asarray(2)] == 2    # __index__
    assert [10, 20, 30][tnp.asarray(1)] == 20


def test_shape_errors_name_the_shapes():
    with pytest.raises(ValueError, match="reshape"):
        tnp.reshape(tnp.ones(6), (4, 2))
    with nf.GradientTape(), pytest.raises(ValueError, match=r"size 6 into shape \(4, ?2\)"):
        tnp.reshape(tnp.ones(6), (4, 2))
    with pytest.raises(ValueError):
        tnp.matmul(tnp.ones((2, 3)), tnp.ones((4, 2)))
    with nf.GradientTape(), pytest.raises(ValueError, match="matmul"):
        tnp.matmul(tnp.ones((2, 3)), tnp.ones((4, 2)))
    with pytest.raises(ValueError):
        tnp.concatenate([tnp.ones((2, 3)), tnp.ones((2, 4))])
    with pytest.raises(ValueError):
        tnp.stack([tnp.ones(2), tnp.ones(3)])
    with pytest.raises(ValueError):
        tnp.broadcast_to(tnp.ones(3), (2, 4))
    with pytest.raises(ValueError):
        tnp.einsum("ij,jk->ik", tnp.ones((2, 3)), tnp.ones((4, 2)))


def test_index_errors():
    x = tnp.ones((2, 3))
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[..., ...]
    with pytest.raises(IndexError):
        x[tnp.asarray([0.5])]
    with pytest.raises(IndexError):
        tnp.take(tnp.arange(3), tnp.asarray([5]))
    with nf.GradientTape(), pytest.raises(IndexError):
        x[0, 0, 0]


def test_empty_reduction_errors_match_numpy():
    with pytest.raises(ValueError):
        np.max(np.ones((0, 2)), axis=0)
    with pytest.raises(ValueError):
        tnp.max(tnp.ones((0, 2)), axis=0)
    with nf.GradientTape(), pytest.raises(ValueError):
        tnp.max(tnp.ones((0, 2)), axis=0)
    with pytest.raises(ValueError):
        tnp.argmax(tnp.ones((0,)))
    assert tnp.max(tnp.ones((0, 2)), axis=1).shape == (0,)
