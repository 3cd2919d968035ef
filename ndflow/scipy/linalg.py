"""`scipy.linalg` in ndflow: triangular and factored solves, LU, the matrix exponential and
block_diag, composed of ndflow operations (differentiable, traceable, vectorizable).

Triangular solves use ndflow's LU solve on the masked triangle (the other triangle is never
read, as LAPACK's trtrs): same values to rounding, and gradients land only on the triangle used.
"""
import math

import numpy as np

from .. import numpy as tnp
from ..graph.control import while_loop
from ..autodiff.forward import stop_gradient

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "expm",
           "block_diag"]


def _fl(a, check_finite=False):
    """A float array; with check_finite, SciPy's ValueError for NaN or inf (every call of a
    compiled function too)."""
    a = tnp.asarray_chkfinite(a) if check_finite else tnp.asarray(a)
    if a.dtype.kind not in "fc":
        a = a.astype(np.float64)
    return a


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a square matrix, got shape {a.shape}")


def _triangle(a, lower, unit_diagonal):
    t = tnp.tril(a) if lower else tnp.triu(a)
    if unit_diagonal:        # (a select: the diagonal is never read, so inf or NaN there is 1)
        t = tnp.where(tnp.eye(a.shape[-1], dtype=bool), tnp.ones((), a.dtype), t)
    return t


def _substitute(t, b, lower):
    """Solve t x = b for a triangular t by substitution, as LAPACK's trtrs/trsm (SciPy) do.
    np.linalg.solve's LU pivots nowhere on an upper triangle (the column below each diagonal
    entry is zero), so there it is back substitution; a lower t is made upper by reversing its
    rows and columns (and b's rows). Solved as a general matrix, a lower t would have rows
    swapped wherever an entry below the diagonal outweighs it: another algorithm, whose result
    on an ill-conditioned triangle (most random ones) can be far from SciPy's."""
    if lower:
        return tnp.linalg.solve(t[::-1, ::-1], b[::-1])[::-1]
    return tnp.linalg.solve(t, b)


def _common(a, b):
    dt = np.result_type(a.dtype, b.dtype)
    return a.astype(dt), b.astype(dt)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """Solve a x = b for triangular a (only the `lower` or upper triangle is read), as
    `scipy.linalg.solve_triangular`; trans 0/'N', 1/'T', 2/'C' solves with a, a^T, a^H."""
    a, b = _common(_fl(a, check_finite), _fl(b, check_finite))
    _square("solve_triangular", a)
    if a.shape[-1] != b.shape[0]:
        raise ValueError(f"shapes of a {a.shape} and b {b.shape} are incompatible")
    t = _triangle(a, lower, unit_diagonal)
    trans = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]
    if trans == 1:
        t, lower = t.T, not lower
    elif trans == 2:
        t, lower = tnp.conj(t).T, not lower
    return _substitute(t, b, lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower): the Cholesky factor in the `lower` (or upper) triangle of c, the other
    triangle holding a's entries, as `scipy.linalg.cho_factor`."""
    a = _fl(a, check_finite)
    _square("cho_factor", a)
    if lower:
        c = tnp.linalg.cholesky(a)
        return c + tnp.triu(a, 1), lower
    c = tnp.linalg.cholesky(a, upper=True)
    return c + tnp.tril(a, -1), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve a x = b from `cho_factor`'s (c, lower), as `scipy.linalg.cho_solve`."""
    c, lower = c_and_lower
    c, b = _common(_fl(c, check_finite), _fl(b, check_finite))
    if c.shape[-1] != b.shape[0]:
        raise ValueError(f"incompatible dimensions ({c.shape} and {b.shape})")
    L = tnp.tril(c) if lower else tnp.conj(tnp.triu(c)).T
    y = _substitute(L, b, True)
    return _substitute(tnp.conj(L).T, y, False)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): LU with partial pivoting, L (unit diagonal) below and U on and above the
    diagonal, piv[i] the row swapped with row i, as `scipy.linalg.lu_factor` (square a).
    Differentiable (the pivot choice is constant to gradients)."""
    a = _fl(a, check_finite)
    _square("lu_factor", a)
    if a.ndim != 2:
        raise ValueError(f"lu_factor: expected a 2-D matrix, got shape {a.shape}")
    n = a.shape[0]
    if n is None:
        raise ValueError("lu_factor: the matrix size must be known while tracing")
    if n == 0:
        return a, tnp.zeros((0,), dtype=np.int32)
    rows = tnp.arange(n)
    pivs = []
    for k in range(n):
        col = tnp.abs(a[:, k])
        col = tnp.where(rows >= k, col, -1.0)
        p = tnp.argmax(col)
        pivs.append(p)
        # swap rows k and p
        perm = tnp.where(rows == k, p, tnp.where(rows == p, k, rows))
        a = tnp.take(a, perm, axis=0)
        piv_val = a[k, k]
        safe = tnp.where(piv_val == 0, 1.0, piv_val)
        below = rows > k
        m = tnp.where(below, a[:, k] / safe, 0.0)            # multipliers (0 on/above k)
        # only the trailing block is updated, as LAPACK's: elsewhere a - 0 * u would turn
        # -0.0 into +0.0 beside a negative u, and any entry into NaN beside an infinite one
        cols = tnp.arange(n)
        upd = tnp.where(below[:, None] & (cols > k)[None, :],
                        a - m[:, None] * a[k, :][None, :], a)
        a = tnp.where(below[:, None] & (cols == k)[None, :], m[:, None], upd)
    return a, tnp.stack(pivs).astype(np.int32)


def _pivot_perm(piv, n):
    """The row order LAPACK's row swaps (row k with row piv[k], k = 0..n-1) produce."""
    rows = tnp.arange(n)
    perm = rows
    for k in range(n):
        p = piv[k]
        pk, pp = tnp.take(perm, k), tnp.take(perm, p)
        perm = tnp.where(rows == k, pp, tnp.where(rows == p, pk, perm))
    return perm


def _apply_pivots(piv, b):
    return tnp.take(b, _pivot_perm(piv, b.shape[0]), axis=0)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve a x = b (trans=1: a^T x = b; 2: a^H x = b) from `lu_factor`'s (lu, piv), as
    `scipy.linalg.lu_solve`."""
    lu, piv = lu_and_piv
    # (as SciPy's, check_finite looks at b only: a finite matrix's factors may overflow)
    lu, b = _common(_fl(lu, False), _fl(b, check_finite))
    piv = tnp.asarray(piv)
    if lu.shape[0] != b.shape[0]:
        raise ValueError(f"Shapes of lu {lu.shape} and b {b.shape} are incompatible")
    if lu.shape[0] == 0:
        return b + 0                     # an empty system: an empty solution (a new array)
    L = _triangle(lu, True, True)
    U = tnp.triu(lu)
    trans = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]
    if trans == 0:
        return _substitute(U, _substitute(L, _apply_pivots(piv, b), True), False)
    if trans == 2:
        L, U = tnp.conj(L), tnp.conj(U)
    y = _substitute(L.T, _substitute(U.T, b, True), False)
    # undo the row swaps: the inverse of their permutation
    return tnp.take(y, tnp.argsort(_pivot_perm(piv, b.shape[0])), axis=0)


_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def expm(A):
    """The matrix exponential by scaling and squaring with the degree-13 Pade approximant
    (Higham 2005), as `scipy.linalg.expm` (also for stacks of matrices). The number of
    squarings follows the 1-norm (a Python loop for concrete values, an `nf.while_loop` to the
    largest count while tracing or vectorizing). Triangular matrices keep their zeros and get
    their diagonal exactly; a matrix with inf or NaN (or a 1-norm beyond the float range)
    gives NaN but the triangular zeros, as SciPy's."""
    A = _fl(A)
    _square("expm", A)
    if A.dtype == np.float32:     # float64 inside, rounded once: float32's own rounding
        return _expm(A.astype(np.float64), 3.4e30).astype(np.float32)   # grows with the
    return _expm(A, 1.8e300)                                              # squarings


def _value_with_derivative(d, R):
    """d's value exactly (R + (d - R) rounds where |R| is far beyond |d|), with R's
    derivatives where R is finite."""
    return stop_gradient(d) + tnp.where(tnp.isfinite(R), R - stop_gradient(R), 0.0)


def _expm(A, huge):
    n = A.shape[-1]
    if n == 0:
        return A + 0
    eye = tnp.eye(n, dtype=A.dtype)
    norm1 = tnp.max(tnp.sum(tnp.abs(A), axis=-2), axis=-1)
    # (an infinite or NaN norm: the result is NaN below; s from a stand-in, not garbage)
    ok_norm = (norm1 > 0) & (norm1 < np.inf)
    s = tnp.maximum(0.0, tnp.ceil(tnp.log2(tnp.where(ok_norm, norm1, 1.0) / _THETA13)))
    s = s.astype(np.int64)
    concrete = s._t is None
    try:
        s_max = int(tnp.max(s).numpy()) if concrete and s.size else 0
    except Exception:      # batched values under vectorized_map
        concrete = False
    lower, upper = tnp.tril(tnp.ones((n, n), dtype=bool), -1), tnp.triu(
        tnp.ones((n, n), dtype=bool), 1)
    up_tri = tnp.all(tnp.where(lower, A, 0) == 0, axis=(-2, -1))[..., None, None]
    lo_tri = tnp.all(tnp.where(upper, A, 0) == 0, axis=(-2, -1))[..., None, None]
    # a lower triangle is exponentiated as its transpose: the Pade solve's LU pivots nowhere on
    # an upper triangle, so the result has exact zeros below it (pivoting on a lower one left
    # rounding above it, which the squarings then multiplied into everything)
    flip = lo_tri & ~up_tri
    T = tnp.where(flip, tnp.swapaxes(A, -1, -2), A)
    real = A.real.dtype if A.dtype.kind == "c" else A.dtype
    X = T * (2.0 ** (-s.astype(real)))[..., None, None]
    b = _PADE13
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2
             + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 \
        + b[0] * eye
    on_diag = tnp.eye(n, dtype=bool) & (up_tri | lo_tri)
    diag = tnp.diagonal(A, axis1=-2, axis2=-1)

    def exact_diagonal(R, k):
        """R, approximating exp(A 2^(k - s)), with the diagonal of a triangular A made that
        exponential's, exp(diag(A) 2^(k - s)), exactly (derivatives: R's), as SciPy's
        triangular path does at every squaring: each squaring doubles the relative error of
        the diagonal, so a diagonal of 1 - eps decayed to 0 over a thousand of them and took
        the entries above it along (expm([[0, 1e300], [0, 0]]) was the identity)."""
        d = tnp.exp(diag * (2.0 ** (k - s).astype(real))[..., None])[..., None, :]
        return tnp.where(on_diag, _value_with_derivative(d, R), R)

    R = exact_diagonal(tnp.linalg.solve(V - U, V + U), tnp.zeros_like(s))
    if concrete:
        for i in range(s_max):
            R = exact_diagonal(tnp.where((s > i)[..., None, None], R @ R, R),
                               tnp.minimum(s, i + 1))
    else:
        # traced or batched: a loop to the largest count (up to ~1022 for a finite norm)
        def body(i, R):
            return i + 1, exact_diagonal(tnp.where((s > i)[..., None, None], R @ R, R),
                                         tnp.minimum(s, i + 1))
        R = while_loop(lambda i, R: i < tnp.max(s), body, (tnp.asarray(0, np.int64), R))[1]
    R = tnp.where(flip, tnp.swapaxes(R, -1, -2), R)
    # (a triangular A's diagonal is exp of A's already: `exact_diagonal` at the last squaring)
    # SciPy's answer for a matrix with inf or NaN: NaN but the triangular zeros
    finite = (tnp.all(tnp.isfinite(A), axis=(-2, -1)) & (norm1 < np.inf))[..., None, None]
    R = tnp.where(finite, R, np.nan)
    # a 1-norm near the dtype's limit (or beyond 2^960, where the scaling by 2^-s flushes
    # the small entries): the result would be silently wrong; NaN, as SciPy's overflowing
    # one, unless triangular (its diagonal is exact)
    far = ((s > 960) | (norm1 > huge))[..., None, None]
    R = tnp.where(far & ~(up_tri | lo_tri), np.nan, R)
    # the exponential of a triangular matrix is triangular: its zeros stay zeros where the
    # products turned them into NaN beside an inf (as SciPy's triangular path does not)
    R = tnp.where(((up_tri & lower) | (lo_tri & upper)) & tnp.isnan(R), 0.0, R)
    # a diagonal matrix with inf or NaN: exp of its diagonal, as SciPy's
    d = tnp.exp(diag)[..., None, :]
    return tnp.where(up_tri & lo_tri & ~finite, tnp.where(tnp.eye(n, dtype=bool), d, 0.0), R)


def block_diag(*arrs):
    """The block-diagonal matrix of the given arrays (scalars and 1-D arrays are 1 x n
    blocks), as `scipy.linalg.block_diag`."""
    if not arrs:
        return tnp.zeros((1, 0))
    blocks = []
    for a in arrs:
        a = tnp.asarray(a)
        if a.ndim > 2:
            raise ValueError("arguments in the following positions have dimension greater "
                             "than 2: %s" % [i for i, x in enumerate(arrs)
                                             if tnp.asarray(x).ndim > 2])
        blocks.append(tnp.atleast_2d(a))
    dt = np.result_type(*[b.dtype for b in blocks])
    ncols = sum(b.shape[1] for b in blocks)
    rows = []
    c = 0
    for b in blocks:
        r, k = b.shape
        parts = []
        if c:
            parts.append(tnp.zeros((r, c), dtype=dt))
        parts.append(b.astype(dt))
        if ncols - c - k:
            parts.append(tnp.zeros((r, ncols - c - k), dtype=dt))
        rows.append(tnp.concatenate(parts, axis=1))
        c += k
    return tnp.concatenate(rows, axis=0)


del math
