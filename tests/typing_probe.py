"""Checked by mypy in tests/test_typing.py (not a test module itself): the types an editor
infers from ndflow's stubs. `assert_type` fails the type check when an inferred type differs."""
from typing import Any

import numpy as np
from typing_extensions import assert_type

import ndflow as nf
import ndflow.numpy as tnp

x = tnp.zeros((2, 3))
assert_type(x, tnp.ndarray)
assert_type(x.shape, tuple[Any, ...])
assert_type(x.dtype, np.dtype[Any])
assert_type(x.ndim, int)
assert_type(x.T @ x, tnp.ndarray)
assert_type(x + 1, tnp.ndarray)
assert_type(x[0], tnp.ndarray)
assert_type(x.sum(axis=0), tnp.ndarray)
assert_type(x.numpy(), np.ndarray[Any, Any])
assert_type(float(x.max()), float)
assert_type(tnp.add(x, 1), tnp.ndarray)
assert_type(tnp.divmod(x, 2), tuple[tnp.ndarray, tnp.ndarray])
assert_type(tnp.split(x, 3, axis=1), list[tnp.ndarray])
assert_type(tnp.shape(x), tuple[Any, ...])
assert_type(tnp.allclose(x, x), bool)
assert_type(tnp.float32, type[np.float32])

t = nf.constant([[1.0, 2.0]])
assert_type(t, nf.Tensor)
assert_type(nf.reduce_sum(t, axis=0), tnp.ndarray)
assert_type(nf.gather(t, [0]), tnp.ndarray)
assert_type(nf.split(t, 2, axis=1), list[tnp.ndarray])
clipped, norm = nf.clip_by_global_norm([t], 1.0)
assert_type(norm, tnp.ndarray)
assert_type(nf.executing_eagerly(), bool)
assert_type(nf.Variable(1.0), nf.Variable)
assert_type(nf.GradientTape(), nf.GradientTape)
assert_type(nf.float32, type[np.float32])
with nf.GradientTape() as tape:
    y = nf.reduce_sum(t * t)
