"""Tier 0's branch-free select (`numpy_tier.select_into`): NumPy's `where` bit for bit, for
every dtype, broadcast operands, special values, and a destination that is an operand."""
import numpy as np
import pytest

from ndflow.graph.kernels.numpy_tier import select_into
from ndflow.graph.kernels.pool import TempPool

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.complex64, np.complex128]
SHAPES = [((6, 5), (6, 5), (6, 5)), ((), (6, 5), (6, 5)), ((6, 5), (), (6, 1)),
          ((5,), (6, 5), (6, 5)), ((5,), (), (6, 5)), ((0, 5), (0, 5), (0, 5))]


def _values(rng, shape, dt):
    v = (rng.standard_normal(shape) * 3).astype(dt)
    if np.dtype(dt).kind in "fc" and v.size >= 5:
        v.flat[:5] = [np.nan, -0.0, np.inf, -np.inf, 0.0]
    return v


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES)
def test_select_into_is_numpys_where_bit_for_bit(dt, shapes):
    rng = np.random.default_rng(0)
    sa, sb, sc = shapes
    a, b = _values(rng, sa, dt), _values(rng, sb, dt)
    c = rng.random(sc) < 0.5
    want = np.where(c, a, b)
    dst = np.empty(want.shape, dt)
    select_into(dst, c, a, b, TempPool())
    assert dst.tobytes() == np.ascontiguousarray(want).tobytes()


def test_select_into_over_an_operand():
    rng = np.random.default_rng(1)
    a, b = _values(rng, (7, 3), np.float32), _values(rng, (7, 3), np.float32)
    c = rng.random((7, 3)) < 0.5
    want = np.where(c, a, b)
    select_into(b, c, a, b, TempPool())
    assert b.tobytes() == want.tobytes()
