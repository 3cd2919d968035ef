"""Random draws. They are effects: inside `nf.function` each call draws fresh numbers, and the
compiler never folds or merges them. The legacy stream is NumPy's RandomState algorithm, so
`tnp.random.seed(s)` reproduces `np.random.seed(s)` draws."""
import numpy as np

from ..core.primitive import Primitive, Aval

STREAM = {"rs": np.random.RandomState()}


def seed(s):
    STREAM["rs"] = np.random.RandomState(s)


def _cast(a, dtype):
    a = np.asarray(a)
    return a if a.dtype == dtype else a.astype(dtype)


def _normal(shape, dtype, loc=0.0, scale=1.0, rs=None, xp=np):
    r = rs if rs is not None else STREAM["rs"]
    return _cast(r.normal(loc, scale, size=shape) if shape else np.asarray(r.normal(loc, scale)), dtype)


def _uniform(shape, dtype, low=0.0, high=1.0, rs=None, xp=np):
    r = rs if rs is not None else STREAM["rs"]
    return _cast(r.uniform(low, high, size=shape), dtype)


def _randint(shape, dtype, low, high, rs=None, xp=np):
    r = rs if rs is not None else STREAM["rs"]
    draw = getattr(r, "integers", None) or r.randint
    return _cast(draw(low, high, size=shape, dtype=np.int64), dtype)


def _source_abstract(shape, dtype, **kw):
    return Aval(shape, np.dtype(dtype))


normal_p = Primitive("random_normal", _normal, _source_abstract, effect=True)
uniform_p = Primitive("random_uniform", _uniform, _source_abstract, effect=True)
randint_p = Primitive("random_randint", _randint, _source_abstract, effect=True)
