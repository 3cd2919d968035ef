"""Watching an array that cannot have a gradient warns, as TensorFlow's tape does."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_watching_an_integer_array_warns_and_gives_none(dtype):
    x = tnp.asarray(np.array([1, 0, 1], dtype=dtype))
    with nf.GradientTape() as tape:
        with pytest.warns(UserWarning, match="must be floating") as rec:
            tape.watch(x)
        y = tnp.sum(x.astype(np.float64) * 2.0)
    assert rec[0].filename == __file__          # the user's line, not the tape's
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_watching_a_float_or_complex_array_is_silent(dtype):
    x = tnp.asarray(np.ones(3, dtype=dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(tnp.real(x * x))
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)).real, 2.0)


def test_watching_a_structure_warns_for_its_integer_leaf_only():
    a, b = tnp.ones(2), tnp.arange(2)
    with nf.GradientTape() as tape:
        with pytest.warns(UserWarning, match="int") as rec:
            tape.watch([a, b])
    assert len(rec) == 1
