"""`tnp.linalg`: `numpy.linalg` on ndflow arrays (differentiable, traceable, vectorizable).

NumPy 2's signatures, result namedtuples, dtypes (integers and bools compute in float64, float32
stays float32, float16 is refused) and errors (`LinAlgError` is NumPy's own class). Every
function accepts stacks of matrices in the leading axes, as NumPy does. Decompositions are the
primitives of ndflow/primitives/linalg_decomp.py (their gradient conventions are documented
there); everything else is composed here.

Differences from NumPy:
- `eig`/`eigvals` of a real matrix give real arrays when every eigenvalue is real, as NumPy,
  when the values are concrete; inside `nf.function`/`vectorized_map` that is not known, so
  they are always complex there.
- `lstsq`'s residuals have a data-dependent size: inside `nf.function` it is unknown (None);
  inside `vectorized_map` of a tall matrix the examples must agree (all full rank or none),
  and inside both it is an error (square and wide matrices are always fine).
- `diagonal`/`trace`/`kron` need the matrix sizes while tracing.
"""
import operator as _operator
from typing import Any as _Any, NamedTuple as _NamedTuple

import numpy as _np
from numpy.linalg import LinAlgError

from ..core.ndarray import ndarray as _ndarray
from ..core.ndarray import static_size as _static_size
from ..core.primitive import bind as _bind, composite as _composite
from ..core.state import STATE as _STATE
from ..core import dtypes as _dt
from ..primitives import linalg_decomp as _D, elementwise as _E
from ..primitives.indexing import iota_p as _iota_p
from ..primitives._util import norm_axis as _norm_axis, norm_axes as _norm_axes
from ._core import asarray as _asarray
from ._outarg import write_out as _write_out
from . import linalg_ops as _ops
from . import manipulation as _man
from . import math as _m
from . import reductions as _red
from ..vectorize.batching import BatchTrace as _BatchTrace
from .creation import zeros as _zeros
from .math import vecdot as _vecdot
from .routines import diagonal as _diagonal, trace as _trace

__all__ = ["matrix_power", "solve", "tensorsolve", "tensorinv", "inv", "cholesky", "eigvals",
           "eigvalsh", "pinv", "slogdet", "det", "svd", "svdvals", "eig", "eigh", "lstsq",
           "norm", "qr", "cond", "matrix_rank", "LinAlgError", "multi_dot", "trace", "diagonal",
           "cross", "outer", "tensordot", "matmul", "matrix_transpose", "matrix_norm",
           "vector_norm", "vecdot"]


class EigResult(_NamedTuple):
    eigenvalues: _Any
    eigenvectors: _Any


class EighResult(_NamedTuple):
    eigenvalues: _Any
    eigenvectors: _Any


class QRResult(_NamedTuple):
    Q: _Any
    R: _Any


class SlogdetResult(_NamedTuple):
    sign: _Any
    logabsdet: _Any


class SVDResult(_NamedTuple):
    U: _Any
    S: _Any
    Vh: _Any


_NoValue = object()
_F32, _F64, _C64, _C128 = _dt.F32, _dt.F64, _dt.C64, _dt.C128


# ------------------------------------------------------------------ dtypes and checks
def _result_dtype(*arrays):
    """NumPy's linalg rule: float32/complex64 stay single, float64/complex128 double; integers
    and bools give float64 (float32 under prefer_float32); anything else is refused."""
    single, cplx = True, False
    for a in arrays:
        d = a.dtype
        if d in (_F32, _C64):
            pass
        elif d in (_F64, _C128):
            single = False
        elif d.kind in "biu":
            single = single and _STATE.prefer_float32
        else:
            raise TypeError(f"array type {d.name} is unsupported in linalg")
        cplx = cplx or d.kind == "c"
    if cplx:
        return _C64 if single else _C128
    return _F32 if single else _F64


def _cast(a, d):
    return a if a.dtype == d else _bind(_E.convert_p, a, dtype=d)


def _prep(a):
    a = _asarray(a)
    return _cast(a, _result_dtype(a))


def _assert_stacked_2d(*arrays):
    for a in arrays:
        if a.ndim < 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                              f"two-dimensional")


def _assert_stacked_square(*arrays):
    _assert_stacked_2d(*arrays)
    for a in arrays:
        m, n = a.shape[-2:]
        if m is not None and n is not None and m != n:
            raise LinAlgError("Last 2 dimensions of the array must be square")


def _assert_2d(*arrays):
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be "
                              f"two-dimensional")


def _concrete(x):
    return isinstance(x, _ndarray) and x._t is None


def _assert_finite(a):
    if _concrete(a) and not bool(_red.all(_m.isfinite(a))):
        raise LinAlgError("Array must not contain infs or NaNs")


def _size(x, axis):
    """x.shape[axis] as a Python int, or (unknown while tracing) a 0-d array computed at run
    time."""
    d = x.shape[axis]
    if d is not None:
        return d
    return _red.max(_bind(_iota_p, x, axis=axis % x.ndim)) + 1


def _real(d):
    return _D._real_dtype(d)


# ------------------------------------------------------------------ products (Array API names)
def matmul(x1, x2, /):
    """`numpy.linalg.matmul` (the Array API's): `numpy.matmul` without `out`."""
    return _ops.matmul(x1, x2)


def outer(x1, x2, /):
    """Outer product of two vectors; unlike `numpy.outer`, both must be 1-D."""
    a, b = _asarray(x1), _asarray(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={a.ndim} "
                         f"and x2.ndim={b.ndim}.")
    return _ops.outer(a, b)


def tensordot(x1, x2, /, *, axes=2):
    """`numpy.linalg.tensordot`: `numpy.tensordot` with keyword-only `axes`."""
    return _ops.tensordot(x1, x2, axes=axes)


def vecdot(x1, x2, /, *, axis=-1):
    """`numpy.linalg.vecdot`: sum(conj(x1) * x2) over `axis`."""
    return _vecdot(x1, x2, axis=axis)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    return _man.matrix_transpose(_asarray(x))


def diagonal(x, /, *, offset=0):
    """Diagonals of the matrices in the last two axes."""
    return _diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """Traces of the matrices in the last two axes."""
    return _trace(x, offset, -2, -1, dtype=dtype)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-vectors along `axis` (2-vectors are refused, unlike `numpy.cross`)."""
    a, b = _asarray(x1), _asarray(x2)
    na, nb = a.shape[axis], b.shape[axis]
    if na is None or nb is None:
        raise ValueError("cross: the vector length is unknown while tracing; give it in the "
                         "input_signature")
    if na != 3 or nb != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"are {na} and {nb} dimensional instead.")
    return _ops.cross(a, b, axis=axis)


def multi_dot(arrays, *, out=None):
    """Product of a chain of matrices, multiplied in the cheapest order (NumPy's dynamic
    program); the first may be a row vector and the last a column vector."""
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return _ops.dot(arrays[0], arrays[1], out=out)
    arrays = [_asarray(a) for a in arrays]
    first, last = arrays[0].ndim, arrays[-1].ndim
    if first == 1:
        arrays[0] = _man.reshape(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = _man.reshape(arrays[-1], (-1, 1))
    _assert_2d(*arrays)
    if any(None in a.shape for a in arrays):      # sizes unknown while tracing: left to right
        result = arrays[0]
        for x in arrays[1:]:
            result = _ops.dot(result, x)
    elif n == 3:
        a, b, c = arrays
        (a0, a1b0), (b1c0, c1) = a.shape, c.shape
        if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0):
            result = _ops.dot(_ops.dot(a, b), c)
        else:
            result = _ops.dot(a, _ops.dot(b, c))
    else:
        result = _chain(arrays, _chain_order(arrays), 0, n - 1)
    if first == 1 and last == 1:
        result = result[0, 0]
    elif first == 1 or last == 1:
        result = _man.ravel(result)
    return _write_out(result, out)


def _chain_order(arrays):
    """split[i][j]: where the cheapest product of arrays i..j splits (matrix-chain order)."""
    n = len(arrays)
    dims = [a.shape[0] for a in arrays] + [arrays[-1].shape[1]]
    cost = [[0.0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = float("inf")
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return _ops.dot(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


def matrix_power(a, n):
    """a raised to the integer power n by repeated squaring (n < 0: of the inverse), as
    `numpy.matrix_power`: integer matrices stay integer for n >= 0."""
    a = _asarray(a)
    _assert_stacked_square(a)
    try:
        n = _operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        i, j = _D._index_grid(a)
        return _m.where_(i == j, _ops_ones_like(a), _ops_zeros_like(a))
    if n < 0:
        a = inv(a)
        n = -n
    if n == 1:
        return a
    if n == 2:
        return _ops.matmul(a, a)
    if n == 3:
        return _ops.matmul(_ops.matmul(a, a), a)
    z = result = None
    while n > 0:                      # NumPy's order of products, so floats round alike
        z = a if z is None else _ops.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _ops.matmul(result, z)
    return result


def _ops_ones_like(a):
    return _bind(_E.ones_like_p, a)


def _ops_zeros_like(a):
    return _bind(_E.zeros_like_p, a)


# ------------------------------------------------------------------ inverses and solvers
@_composite(_np.linalg.inv, "linalg.inv", adapt=False)
def inv(a):
    """Inverse of each matrix (a stack in the leading axes), as `numpy.linalg.inv`;
    LinAlgError("Singular matrix") if one is singular. Differentiable.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.linalg.inv(tnp.asarray([[2., 0.], [0., 4.]]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float64)
    """
    a = _prep(a)
    _assert_stacked_square(a)
    return _bind(_D.inv_p, a)


@_composite(_np.linalg.det, "linalg.det", adapt=False)
def det(a):
    """Determinant of each matrix (LU), as `numpy.linalg.det`. Its gradient uses the inverse: at
    a singular matrix it raises LinAlgError.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.linalg.det(tnp.asarray([[1., 2.], [3., 4.]]))
    array(-2., dtype=float64)
    """
    a = _prep(a)
    _assert_stacked_square(a)
    return _bind(_D.det_p, a)


@_composite(lambda a: SlogdetResult(*_np.linalg.slogdet(a)), "linalg.slogdet", adapt=False)
def slogdet(a):
    """(sign, log|det|) of each matrix, as `SlogdetResult`."""
    a = _prep(a)
    _assert_stacked_square(a)
    return SlogdetResult(*_bind(_D.slogdet_p, a))


@_composite(_np.linalg.solve, "linalg.solve", adapt=False)
def solve(a, b):
    """x with a @ x = b, as `numpy.linalg.solve`. As NumPy 2, b is a vector only when it is 1-D
    ((..., M, M), (M,) -> (..., M)); otherwise a stack of matrices (..., M, K) broadcast
    against a. Differentiable in both.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.linalg.solve(tnp.asarray([[2., 0.], [0., 4.]]), tnp.asarray([2., 2.]))
    array([1. , 0.5], dtype=float64)
    """
    a, b = _asarray(a), _asarray(b)
    _assert_stacked_square(a)
    d = _result_dtype(a, b)
    a, b = _cast(a, d), _cast(b, d)
    n = a.shape[-1]
    if b.ndim == 1:
        if n is not None and b.shape[0] is not None and b.shape[0] != n:
            raise ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0, "
                             f"with gufunc signature (m,m),(m)->(m) (size {b.shape[0]} is "
                             f"different from {n})")
        return _man.squeeze(_bind(_D.solve_p, a, _man.expand_dims(b, -1)), -1)
    if b.ndim == 0:
        raise ValueError("solve1: Input operand 1 does not have enough dimensions (has 0, gufunc "
                         "core with signature (m,m),(m)->(m) requires 1)")
    if n is not None and b.shape[-2] is not None and b.shape[-2] != n:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (m,m),(m,n)->(m,n) (size {b.shape[-2]} is different "
                         f"from {n})")
    return _bind(_D.solve_p, a, b)


def tensorinv(a, ind=2):
    """Inverse of a tensor with respect to `tensordot(., ., ind)`: a reshaped to a square
    matrix, inverted, reshaped back."""
    a = _asarray(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    old = tuple(a.shape)
    _known_sizes("tensorinv", old)
    invshape = old[ind:] + old[:ind]
    rows = 1
    for k in old[ind:]:
        rows *= k
    return _man.reshape(inv(_man.reshape(a, (rows, -1))), invshape)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) = b: a reshaped to a square matrix and `solve`."""
    a, b = _asarray(a), _asarray(b)
    _known_sizes("tensorsolve", tuple(a.shape))
    an = a.ndim
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = _man.transpose(a, allaxes)
    oldshape = tuple(a.shape[-(an - b.ndim):])
    prod = 1
    for k in oldshape:
        prod *= k
    if _static_size(a) != prod ** 2:
        raise LinAlgError("Input arrays must satisfy the requirement "
                          "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    x = solve(_man.reshape(a, (prod, prod)), _man.ravel(b))
    return _man.reshape(x, oldshape)


def _known_sizes(name, shape):
    if None in shape:
        raise ValueError(f"linalg.{name}: the shape {shape} has sizes unknown while tracing; "
                         f"the matrix it reshapes to needs them")


def pinv(a, rcond=None, hermitian=False, *, rtol=_NoValue):
    """Moore-Penrose pseudo-inverse (singular values <= rcond * largest are dropped). Its
    gradient is the closed form for a constant rank (see the primitive)."""
    a = _prep(a)
    _assert_stacked_2d(a)
    scale = False
    if rcond is None:
        if rtol is _NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond, scale = _np.finfo(a.dtype).eps, True
        else:
            rcond = rtol
    elif rtol is not _NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if hermitian:
        _assert_stacked_square(a)
    return _bind(_D.pinv_p, a, _asarray(rcond), hermitian=bool(hermitian), scale_by_size=scale)


def lstsq(a, b, rcond=None):
    """Least-squares solution of a @ x = b: (x, residuals, rank, singular values), as NumPy
    (rank a 0-d int32 array). residuals (squared 2-norms of b - a @ x per column) are empty
    unless rank == N < M."""
    a, b = _asarray(a), _asarray(b)
    vec = b.ndim == 1
    if vec:
        b = _man.expand_dims(b, -1)
    _assert_2d(a, b)
    m, n = a.shape
    if m is not None and b.shape[0] is not None and m != b.shape[0]:
        raise LinAlgError("Incompatible dimensions")
    d = _result_dtype(a, b)
    a, b = _cast(a, d), _cast(b, d)
    x, full, rank, s = _bind(_D.lstsq_p, a, b, rcond=None if rcond is None else float(rcond))
    if vec:
        x = _man.squeeze(x, -1)
    return x, _residuals(full, rank, a, m, n), rank, s


def _residuals(full, rank, a, m, n):
    if m is not None and n is not None and m <= n:
        return _empty_like_1d(full)
    if _concrete(rank):
        return full if int(rank) == n else _empty_like_1d(full)
    if isinstance(rank._t, _BatchTrace):
        # vectorized_map over concrete values: one decision for the whole batch
        ranks = rank._v
        if _concrete(ranks) and n is not None:
            if bool(_red.all(ranks == n)):
                return full
            if not bool(_red.any(ranks == n)):
                return full[..., :0]
        raise ValueError("linalg.lstsq inside vectorized_map: the residuals of a tall matrix "
                         "are empty when it is rank-deficient, so their size can differ between "
                         "examples (here, or inside nf.function, it is not known); compute them "
                         "as sum(abs(b - a @ x)**2, axis=0) instead")
    # traced: keep them where rank == n < m, decided at run time (an unknown size)
    nn, mm = _size(a, 1), _size(a, 0)
    keep = _m.logical_and(rank == nn, mm > nn)
    return full[_m.logical_and(keep, _bind(_E.zeros_like_p, full) == 0)]


def _empty_like_1d(full):
    return _zeros((0,), full.dtype)


# ------------------------------------------------------------------ decompositions
def cholesky(a, /, *, upper=False):
    """Cholesky factor of each Hermitian positive-definite matrix: lower L (a = L L^H) reading
    a's lower triangle, or with upper=True U (a = U^H U) reading the upper one;
    LinAlgError("Matrix is not positive definite") otherwise."""
    a = _prep(a)
    _assert_stacked_square(a)
    return _bind(_D.cholesky_p, a, upper=bool(upper))


def qr(a, mode="reduced"):
    """QR factorization, as `numpy.linalg.qr`: 'reduced' and 'complete' give `QRResult`, 'r'
    only R, 'raw' (h, tau). Gradients: 'reduced'/'r' for any shape, 'complete' where Q is
    unique (m <= n; for m > n the extra columns of Q get no gradient), 'raw' none."""
    import warnings
    if mode not in ("reduced", "complete", "r", "raw"):
        if mode in ("f", "full"):
            warnings.warn("The 'full' option is deprecated in favor of 'reduced'.\nFor backward "
                          "compatibility let mode default.", DeprecationWarning, stacklevel=2)
            mode = "reduced"
        elif mode in ("e", "economic"):
            warnings.warn("The 'economic' option is deprecated.", DeprecationWarning,
                          stacklevel=2)
            mode = "economic"
        else:
            raise ValueError(f"Unrecognized mode '{mode}'")
    a = _prep(a)
    _assert_stacked_2d(a)
    if mode == "raw":
        return tuple(_bind(_D.qr_p, a, mode="raw"))
    if mode == "economic":
        return _man.matrix_transpose(_bind(_D.qr_p, a, mode="raw")[0])
    q, r = _bind(_D.qr_p, a, mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of each symmetric/Hermitian matrix, reading the
    UPLO triangle, as `EighResult`. The gradient assumes distinct eigenvalues (see the
    primitive)."""
    UPLO = _uplo(UPLO)
    a = _prep(a)
    _assert_stacked_square(a)
    return EighResult(*_bind(_D.eigh_p, a, UPLO=UPLO))


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of each symmetric/Hermitian matrix."""
    UPLO = _uplo(UPLO)
    a = _prep(a)
    _assert_stacked_square(a)
    return _bind(_D.eigvalsh_p, a, UPLO=UPLO)


def _uplo(UPLO):
    UPLO = UPLO.upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO


def eig(a):
    """Eigenvalues and right eigenvectors (unit norm, largest component real) of each square
    matrix, as `EigResult`. Real input gives real arrays when every eigenvalue is real, as
    NumPy, eagerly, under vectorized_map and inside nf.function (which keeps a graph for
    each case it meets; see `_real_if_real`)."""
    a = _prep(a)
    _assert_stacked_square(a)
    _assert_finite(a)
    w, v = _bind(_D.eig_p, a)
    if a.dtype.kind != "c":
        w, v = _real_if_real(w, v)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of each square matrix (real when all are, as `eig`)."""
    a = _prep(a)
    _assert_stacked_square(a)
    _assert_finite(a)
    w = _bind(_D.eigvals_p, a)
    if a.dtype.kind != "c":
        w, = _real_if_real(w)
    return w


def _real_if_real(w, *rest):
    """(w, *rest) as real arrays where every eigenvalue in w is real (NumPy's rule). Concrete
    values decide at once; while `nf.function` traces, the graph assumes one case (a check
    fails the call when a value contradicts it, and nf.function then uses the graph traced
    for the other case). Batched values over concrete ones (vectorized_map run eagerly)
    decide on the whole batch, as stacking a loop's results would."""
    base = w
    while base._t is not None and not getattr(base._t, "is_graph", False) \
            and isinstance(base._v, _ndarray):
        base = base._v
    if base._t is None:
        if bool(_np.all(_np.imag(base.numpy()) == 0)):
            return (_m.real(w),) + tuple(_m.real(r) for r in rest)
        return (w,) + rest
    root = next((t for t in _STATE.traces if getattr(t, "assume", None) is not None), None)
    if root is None:
        return (w,) + rest
    site = root.sites
    root.sites += 1
    expect = root.assume.setdefault(site, False)
    return tuple(_bind(_D.expect_real_p, w, *rest, expect=expect, site=site))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition, as `SVDResult` (U, S, Vh) with S descending, or S only.
    Gradients assume distinct nonzero singular values; with full_matrices=True the extra
    columns of U (rows of Vh) of a non-square matrix get none (see the primitive)."""
    a = _prep(a)
    if hermitian:
        _assert_stacked_square(a)
    else:
        _assert_stacked_2d(a)
    if not compute_uv:
        return _bind(_D.svdvals_p, a, hermitian=bool(hermitian))
    return SVDResult(*_bind(_D.svd_p, a, full_matrices=bool(full_matrices),
                           hermitian=bool(hermitian)))


def svdvals(x, /):
    """Singular values of each matrix, descending."""
    return svd(x, compute_uv=False)


# ------------------------------------------------------------------ norms, rank, condition
def _safe_sqrt(x):
    """sqrt with gradient 0 (not NaN) at 0, so the norm of a zero vector differentiates."""
    zero = x == 0
    return _m.where_(zero, 0, _m.sqrt(_m.where_(zero, 1, x)))


def _abs2(x):
    if x.dtype.kind == "c":
        re, im = _m.real(x), _m.imag(x)
        return re * re + im * im
    return x * x


@_composite(_np.linalg.norm, "linalg.norm", adapt=False)
def norm(x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm, as `numpy.linalg.norm` (every `ord`). Gradients are 0, not NaN, at
    a zero vector/matrix for the 2-norm, Frobenius norm and p-norms with p >= 1.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.linalg.norm(tnp.asarray([3., 4.]))
    array(5., dtype=float64)
    >>> tnp.linalg.norm(tnp.asarray([[1., -2.], [3., 4.]]), ord=1, axis=1)
    array([3., 7.], dtype=float64)
    """
    x = _asarray(x)
    if x.dtype.kind not in "fc" and x.dtype != _dt.BFLOAT16:
        x = _cast(x, _dt.default_float())
    if axis is None:
        nd = x.ndim
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            r = _safe_sqrt(_red.sum(_abs2(_man.ravel(x))))
            return _man.reshape(r, (1,) * nd) if keepdims else r
    nd = x.ndim
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = int(axis)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
        axis = (axis,)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis, keepdims):
    inf = float("inf")
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return _safe_sqrt(_red.sum(_abs2(x), axis=axis, keepdims=keepdims))
    ax = _m.absolute(x)
    if ord == inf:
        return _red.max(ax, axis=axis, keepdims=keepdims, initial=0)
    if ord == -inf:
        return _red.min(ax, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _red.sum(_cast(x != 0, ax.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _red.sum(ax, axis=axis, keepdims=keepdims)
    s = _red.sum(_m.power(ax, ord), axis=axis, keepdims=keepdims)
    p = _asarray(_np.reciprocal(_np.asarray(ord, dtype=s.dtype)))   # NumPy: 1/ord in s's dtype
    if ord > 0:     # s**(1/p) has an infinite slope at 0: give the zero vector gradient 0
        zero = s == 0
        return _m.where_(zero, 0, _m.power(_m.where_(zero, 1, s), p))
    return _m.power(s, p)


def _matrix_norm(x, ord, axis, keepdims):
    inf = float("inf")
    nd = x.ndim
    row, col = _norm_axis(axis[0], nd), _norm_axis(axis[1], nd)
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (2, -2, "nuc"):
        s = svdvals(_man.moveaxis(x, (row, col), (-2, -1)))
        if ord == 2:
            r = _red.max(s, axis=-1, initial=0)
        elif ord == -2:
            r = _red.min(s, axis=-1)
        else:
            r = _red.sum(s, axis=-1)
    elif ord in (1, -1):
        red = _red.max if ord == 1 else _red.min
        kw = {"initial": 0} if ord == 1 else {}
        r = red(_red.sum(_m.absolute(x), axis=row), axis=col - (col > row), **kw)
    elif ord in (inf, -inf):
        red = _red.max if ord == inf else _red.min
        kw = {"initial": 0} if ord == inf else {}
        r = red(_red.sum(_m.absolute(x), axis=col), axis=row - (row > col), **kw)
    elif ord in (None, "fro", "f"):
        r = _safe_sqrt(_red.sum(_abs2(x), axis=(row, col)))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        r = _man.expand_dims(r, tuple(sorted((row, col))))
    return r


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Norm of each matrix in the last two axes."""
    return norm(_asarray(x), axis=(-2, -1), keepdims=keepdims, ord=ord)


@_composite(_np.linalg.vector_norm, "linalg.vector_norm", adapt=False)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector norm over `axis` (all axes by default; a tuple of axes is one flattened vector)."""
    x = _asarray(x)
    if x.dtype.kind not in "fc" and x.dtype != _dt.BFLOAT16:
        x = _cast(x, _dt.default_float())
    axes = tuple(range(x.ndim)) if axis is None else _norm_axes(axis, x.ndim)
    return _vector_norm(x, ord, axes, keepdims)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """Number of singular values above the tolerance (default: largest * max(M, N) * eps);
    an int64 array (a Python int for 0-d and 1-d input, as NumPy)."""
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = _asarray(A)
    if A.ndim < 2:
        nz = _red.any(A != 0)
        return int(bool(nz)) if _concrete(nz) else _cast(nz, _dt.I64)
    S = svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            m, n = _size(A, -2), _size(A, -1)
            big = max(m, n) if isinstance(m, int) and isinstance(n, int) else _m.maximum(m, n)
            rtol = big * _np.finfo(S.dtype).eps
        else:
            rtol = _man.expand_dims(_asarray(rtol), -1)
        tol = _red.max(S, axis=-1, keepdims=True, initial=0) * rtol
    else:
        tol = _man.expand_dims(_asarray(tol), -1)
    return _red.count_nonzero(S > tol, axis=-1)


def cond(x, p=None):
    """Condition number: largest/smallest singular value (p None, 2, -2: the inverse ratio) or
    norm(x, p) * norm(inv(x), p); NaN from a singular matrix becomes inf, as NumPy."""
    x = _asarray(x)
    if x.ndim >= 2 and _static_size(x) == 0 and 0 in x.shape[-2:]:
        raise LinAlgError("cond is not defined on empty arrays")
    with _np.errstate(all="ignore"):
        if p is None or (not isinstance(p, str) and p in (2, -2)):
            s = svdvals(x)
            r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
        else:
            y = _prep(x)
            _assert_stacked_square(y)
            invx = _bind(_D.inv_p, y, singular="nan")
            r = norm(y, p, axis=(-2, -1)) * norm(invx, p, axis=(-2, -1))
            r = _cast(r, _real(y.dtype))
        bad = _m.logical_and(_m.isnan(r), _m.logical_not(_red.any(_m.isnan(x), axis=(-2, -1))))
        return _m.where_(bad, float("inf"), r)
