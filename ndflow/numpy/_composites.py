"""The composites below the ufunc objects: `where(condition, x, y)` and `matmul`. math.py
makes `tnp.where` and the matmul ufunc of them, and ufuncs.py's `where=` arguments and methods
select with `select`; each is a composite primitive (NumPy's function is its eager kernel)."""
import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind, composite
from ..core import dtypes as _dt
from ..primitives import elementwise as E, linalg as L
from ._core import as_operand, asarray, ufunc_operands, ufunc_apply, _scalar
from ._outarg import write_out as _write_out


def _where_kernel(condition, x, y, /):
    # a Python float beside a bfloat16 array: NEP 50 keeps bfloat16 (ml_dtypes' promotion,
    # which np.where uses, would give float64), as the composition and the ufuncs do
    tx, ty = type(x), type(y)
    if tx is float and getattr(y, "dtype", None) == _dt.BFLOAT16:
        x = np.asarray(x, _dt.BFLOAT16)
    elif ty is float and getattr(x, "dtype", None) == _dt.BFLOAT16:
        y = np.asarray(y, _dt.BFLOAT16)
    return np.where(condition, x, y)


@composite(_where_kernel, "where", adapt=False)
def select(condition, x, y, /):
    """`where(condition, x, y)`: NumPy's where eagerly, select over promoted operands else."""
    c = asarray(condition)
    if c.dtype != _dt.BOOL:
        c = ufunc_apply(np.not_equal, E.ne_p, c, 0)       # not_equal(c, 0)
    xo, yo = as_operand(x), as_operand(y)
    d = _dt.result_type(xo, yo)
    xo = _cast_operand(xo, d)
    yo = _cast_operand(yo, d)
    return bind(E.select_p, c, xo, yo)


def _cast_operand(o, d):
    if type(o) is not ndarray:
        return _scalar(o, d)
    return o if o.dtype == d else bind(E.convert_p, o, dtype=d)



@composite(np.matmul, "matmul", ("out",), adapt=False)
def matmul(x1, x2, /, out=None, **kw):
    """Matrix product, as `numpy.matmul` (stacks of matrices broadcast): NumPy's matmul when
    plain eager, the matmul primitive on NumPy's loop dtypes else."""
    dtype = kw.pop("dtype", None)
    casting = kw.pop("casting", "same_kind")
    for k in ("order", "subok"):
        kw.pop(k, None)
    if kw:
        raise TypeError(f"matmul: the argument {next(iter(kw))!r} is supported only when "
                        f"nothing watches (no tape, nf.function, vectorized_map or device "
                        f"scope); transpose the operands instead")
    a, b = asarray(x1), asarray(x2)
    if dtype is not None:
        d = _dt.canonical(dtype)
        for o in (a, b):
            if not np.can_cast(o.dtype, d, casting=casting):
                raise TypeError(f"Cannot cast ufunc 'matmul' input from {o.dtype!r} to "
                                f"{d!r} with casting rule {casting!r}")
        a = a if a.dtype == d else bind(E.convert_p, a, dtype=d)
        b = b if b.dtype == d else bind(E.convert_p, b, dtype=d)
    a, b = ufunc_operands(np.matmul, a, b)
    r = bind(L.matmul_p, a, b)
    return _write_out(r, out, broadcast=True, casting=casting, ufunc=np.matmul)
