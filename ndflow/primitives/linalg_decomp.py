"""Matrix decompositions and solvers: inv, det, slogdet, solve, cholesky, qr, eigh, eigvalsh,
eig, eigvals, svd, svdvals, pinv, lstsq.

Every primitive works on the last two axes and broadcasts over the leading ones (as
`numpy.linalg` does), so each batching rule moves the batch axis to the front. Kernels are
`numpy.linalg` itself (CuPy's under `__array_function__`): float32 results are NumPy's own
(computed in float64 and rounded). The NumPy layer (ndflow/numpy/linalg.py) has already checked
shapes and cast the operands to one of float32/float64/complex64/complex128.

Gradient conventions (read before changing a rule):
- A VJP is the transpose of the JVP: for complex values the pairing is Re(sum(ct * dx)) with no
  conjugation (as `matmul` and `multiply` here, and JAX). Real inputs get real gradients.
- Functions that read one triangle only (`cholesky`, `eigh`, `eigvalsh`, `svd`/`pinv` with
  `hermitian=True`) get the exact derivative of what they compute: the gradient lives on the
  triangle read (`_triangle_ct`), zero on the other, as TensorFlow does; for a symmetric input
  that is the symmetric gradient with the off-diagonal parts folded onto the read triangle.
- Where a formula divides by eigenvalue or singular-value gaps, equal values get 0 (a double
  `where`, so no NaN reaches higher orders either): the gradient is then correct only for losses
  that do not depend on the choice of basis within a degenerate eigenspace.
- Gradients assume the rank of the input does not change under a small perturbation (pinv,
  lstsq). det's gradient (the adjugate) is exact at singular matrices too; its second
  derivative there comes through the SVD, so it is exact at rank n - 1 but not where several
  singular values are 0.
- Complex inputs (cholesky, qr, eigh, eigvalsh, svd, svdvals, pinv, lstsq): these maps are not
  holomorphic, so their rules are written in the conjugate pairing Re(sum(conj(ct) * dx)), where
  the formulas are the real ones with conjugate transposes (`_mH`), between a conjugation of the
  cotangents going in and of the gradient coming out (`_cj`); for real input both are no-ops.
  Hermitian readers take the diagonal's real part only (LAPACK ignores its imaginary part), so
  that gets no gradient. Eigenvectors and singular vectors are fixed only up to a phase each:
  the gradients are those of losses that do not depend on it (as the degenerate case above).
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import broadcast_shapes, numpy_or
from .sums import unbroadcast
from .shape import move_to_front, align_batched
from ..core.ndarray import SpecializationError
from .elementwise import convert_p
from .indexing import iota_p
from .reduction import _exclusive_cumprod


class _LazyTnp:
    def __getattr__(self, name):
        # an upward import (tests/test_layers.py UPWARD): the rules compose with the NumPy layer,
        # which imports this layer at the top
        import ndflow.numpy as m
        return getattr(m, name)


tnp = _LazyTnp()


# ------------------------------------------------------------------ shared helpers
def _real_dtype(d):
    d = np.dtype(d)
    return np.dtype("f%d" % (d.itemsize // 2)) if d.kind == "c" else d


def _complex_dtype(d):
    d = np.dtype(d)
    return d if d.kind == "c" else np.dtype("c%d" % (2 * d.itemsize))


def _mT(x):
    return tnp.swapaxes(x, -1, -2)


def _row(v):
    """(..., k) -> (..., 1, k): scales the columns of a matrix."""
    return tnp.expand_dims(v, -2)


def _col(v):
    """(..., k) -> (..., k, 1): scales the rows of a matrix."""
    return tnp.expand_dims(v, -1)


def _safe_recip(x):
    """1/x, and 0 where x == 0, without a NaN in any derivative (the double `where`)."""
    zero = x == 0
    return tnp.where(zero, 0, 1 / tnp.where(zero, 1, x))


def _inv_gaps(w):
    """F[..., i, j] = 1 / (w_j - w_i), 0 where w_i == w_j (the diagonal included)."""
    return _safe_recip(_row(w) - _col(w))


def _index_grid(x):
    """Row and column indices of x's last two axes, broadcasting against x (sizes may be
    unknown while tracing)."""
    n = x.ndim
    return bind(iota_p, x, axis=n - 2), bind(iota_p, x, axis=n - 1)


def _triangle_ct(g, lower):
    """The cotangent of a square matrix A of which only one triangle is read (the other is
    implied by symmetry): S = tril(A) + tril(A, -1)^T, so dL = tril(G + G^T, -1) + diag(G)
    for G the cotangent of S (upper: mirrored)."""
    i, j = _index_grid(g)
    off = (i > j) if lower else (i < j)
    if _is_complex(g):
        # complex Hermitian: the other triangle is the conjugate, the diagonal's real part read
        return tnp.where(off, g + tnp.conj(_mT(g)),
                         tnp.where(i == j, tnp.astype(tnp.real(g), g.dtype), 0))
    return tnp.where(off, g + _mT(g), tnp.where(i == j, g, 0))


def _iota_last(x):
    """arange(x.shape[-1]) shaped (1, ..., 1, n), whether the size is known or not."""
    return bind(iota_p, x, axis=x.ndim - 1)


def _selection(x, like):
    """The 0/1 matrix (p, k) with ones on the diagonal, p = x.shape[-1], k = like.shape[-1]:
    x @ it keeps x's first k columns, sizes known or not."""
    return tnp.astype(_mT(_iota_last(x)) == _iota_last(like), x.dtype)


def _first_cols(x, like):
    """x[..., :k] for k = like.shape[-1] (a selection matrix when a size is unknown)."""
    k, p = like.shape[-1], x.shape[-1]
    if k is not None and p is not None:
        return x if p == k else x[..., :k]
    return tnp.matmul(x, _selection(x, like))


def _is_complex(x):
    return np.dtype(x.dtype).kind == "c"


def _mH(x):
    """The conjugate transpose of the last two axes (the transpose for real x)."""
    return tnp.conj(_mT(x)) if _is_complex(x) else _mT(x)


def _cj(x):
    """conj(x) for complex x, x itself for real: between the bilinear pairing of cotangents used
    everywhere and the conjugate pairing the non-holomorphic rules below are written in."""
    return tnp.conj(x) if _is_complex(x) else x


def _batch_and_sizes(a):
    return tuple(a.shape[:-2]), a.shape[-2], a.shape[-1]


def _batch_front(prim):
    """numpy.linalg broadcasts over leading axes: move the batch axis there."""
    def rule(args, axes, **params):
        return bind(prim, move_to_front(args[0], axes[0]), **params), 0
    return rule


# ------------------------------------------------------------------ inv
def _inv_impl(a, singular="raise"):
    if singular == "raise":
        return np.linalg.inv(a)
    # cond(): a singular matrix gives NaNs (NumPy's errstate there), not an error
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        out = np.empty_like(a)
        for idx in np.ndindex(a.shape[:-2]):
            try:
                out[idx] = np.linalg.inv(a[idx])
            except np.linalg.LinAlgError:
                out[idx] = np.nan
        return out


def _inv_vjp(ct, a, out, singular="raise"):
    """Y = A^-1: dY = -Y dA Y, so gA = -Y^T gY Y^T."""
    yt = _mT(out)
    return (-tnp.matmul(tnp.matmul(yt, ct), yt),)



def _blas(*args, **kw):
    """A primitive whose kernel is a LAPACK/BLAS call (the `blas` trait)."""
    return Primitive(*args, blas=True, **kw)


def _set(**flags):
    """The keyword flags that are set. A flag left at NumPy's default is not passed, so that a
    device library implementing part of NumPy's signature (CuPy's linalg has no `hermitian` or
    `upper`) runs the default case; a set flag it lacks is its TypeError, which names the
    primitive and the device (backends.device.eager_apply)."""
    return {k: v for k, v in flags.items() if v}


inv_p = _blas("inv", _inv_impl, lambda a, singular="raise": Aval(a.shape, a.dtype))
inv_p.def_vjp(_inv_vjp, uses_out=True)
inv_p.batch = _batch_front(inv_p)


# ------------------------------------------------------------------ det
def _adjugate_svd(a):
    """adj(A) = det(U) det(V^H) V diag(prod of the other singular values) U^H for A = U S V^H:
    defined at singular matrices too (no division)."""
    u, s, vh = bind(svd_p, a, full_matrices=False, hermitian=False)
    others = _exclusive_cumprod(s, s.ndim - 1) * _exclusive_cumprod(s, s.ndim - 1, reverse=True)
    phase = tnp.expand_dims(bind(det_p, u) * bind(det_p, vh), (-1, -2))
    return phase * tnp.matmul(_mH(vh) * _row(tnp.astype(others, a.dtype)), _mH(u))


def _det_vjp(ct, a, out):
    """d det(A) = tr(adj(A) dA), so gA = g adj(A)^T: det(A) A^-T where A is invertible, and the
    adjugate from an SVD where it is not (det is a polynomial: its gradient exists everywhere).
    The inverse is taken of a matrix made safe (the identity where A is singular), so no NaN
    reaches higher derivatives either."""
    singular = tnp.any(~tnp.isfinite(bind(inv_p, a, singular="nan")), axis=(-1, -2),
                       keepdims=True)
    eye = tnp.astype(_mT(_iota_last(a)) == _iota_last(a), a.dtype)
    inv = bind(inv_p, tnp.where(singular, eye, a))
    adj_t = tnp.where(singular, _mT(_adjugate_svd(a)), tnp.expand_dims(out, (-1, -2)) * _mT(inv))
    return (tnp.expand_dims(ct, (-1, -2)) * adj_t,)


det_p = _blas("det", np.linalg.det, lambda a: Aval(a.shape[:-2], a.dtype))
det_p.def_vjp(_det_vjp, uses_out=True)
det_p.batch = _batch_front(det_p)


# ------------------------------------------------------------------ slogdet
def _slogdet_impl(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


def _slogdet_vjp(cts, a, out):
    """d log|det A| = Re tr(A^-1 dA): gA = g_logabsdet A^-T. The sign is piecewise constant
    for real A; for complex A, d sign = i sign Im tr(A^-1 dA) adds -i Re(i g_sign sign) A^-T."""
    g_sign, g_log = cts
    sign, _ = out
    coef = g_log
    if np.dtype(a.dtype).kind == "c":
        coef = tnp.astype(g_log, a.dtype) - 1j * tnp.real(1j * g_sign * sign)
    return (tnp.expand_dims(coef, (-1, -2)) * _mT(bind(inv_p, a)),)


slogdet_p = _blas("slogdet", _slogdet_impl, lambda a: (
    Aval(a.shape[:-2], a.dtype), Aval(a.shape[:-2], _real_dtype(a.dtype))),
    multiple_results=True)
slogdet_p.def_vjp(_slogdet_vjp, uses_out=True)
slogdet_p.batch = _batch_front(slogdet_p)


# ------------------------------------------------------------------ solve
# b is always a stack of matrices (..., n, k) here: the NumPy layer turns a vector into a column
def _solve_abstract(a, b):
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what="solve: operands")
    return Aval(batch + tuple(b.shape[-2:]), a.dtype)


def _solve_vjp(ct, a, b, out):
    """X = A^-1 B: gB = A^-T gX and gA = -gB X^T (broadcast leading axes summed back)."""
    gb = bind(solve_p, _mT(a), ct)
    ga = -tnp.matmul(gb, _mT(out))
    return unbroadcast(ga, a), unbroadcast(gb, b)


def _solve_batch(args, axes):
    return bind(solve_p, *align_batched(args, axes)), 0


def _solve_impl(a, b):
    if a.shape[:-2] != b.shape[:-2] and not isinstance(a, np.ndarray):
        # device libraries (CuPy) take equal leading axes only: broadcast them here, as NumPy's
        # gufunc does (views, no copies)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, batch + a.shape[-2:])
        b = np.broadcast_to(b, batch + b.shape[-2:])
    return np.linalg.solve(a, b)


solve_p = _blas("solve", _solve_impl, _solve_abstract)
solve_p.def_vjp(_solve_vjp, uses_out=True)
solve_p.batch = _solve_batch


# ------------------------------------------------------------------ cholesky
def _cholesky_vjp(ct, a, out, upper=False):
    """A = L L^T with dL = L Phi(L^-1 dA L^-T) (Phi: lower triangle, half diagonal), so
    G = L^-T Phi(L^T gL) L^-1 for the symmetric matrix; only one triangle of A is read
    (`_triangle_ct`). Triangular solves use `solve` (LU on a triangular matrix)."""
    low = _mH(out) if upper else out
    gl = _mT(ct) if upper else _cj(ct)            # conjugate pairing (U = L^H)
    lt = _mH(low)
    p = tnp.matmul(lt, gl)
    i, j = _index_grid(p)
    p = tnp.where(i > j, p, tnp.where(i == j, 0.5 * p, 0))
    y = bind(solve_p, lt, p)                      # L^-H Phi
    g = _mH(bind(solve_p, lt, _mH(y)))            # (L^-H Phi) L^-1
    return (_triangle_ct(_cj(g), lower=not upper),)


def _cholesky_impl(a, upper=False):
    return numpy_or(lambda: np.linalg.cholesky(a, **_set(upper=upper)),   # without `upper`:
                    lambda: np.conj(np.swapaxes(np.linalg.cholesky(a), -1, -2)), a, when=upper)


cholesky_p = _blas("cholesky", _cholesky_impl, lambda a, upper=False: Aval(a.shape, a.dtype))
cholesky_p.def_vjp(_cholesky_vjp, uses_out=True)
cholesky_p.batch = _batch_front(cholesky_p)


# ------------------------------------------------------------------ qr
def _qr_impl(a, mode):
    if mode == "raw":
        h, tau = np.linalg.qr(a, mode="raw")
        return h, tau
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


def _qr_abstract(a, mode):
    batch, m, n = _batch_and_sizes(a)
    k = None if m is None or n is None else min(m, n)
    if mode == "raw":
        return Aval(batch + (n, m), a.dtype), Aval(batch + (k,), a.dtype)
    if mode == "complete":
        return Aval(batch + (m, m), a.dtype), Aval(batch + (m, n), a.dtype)
    return Aval(batch + (m, k), a.dtype), Aval(batch + (k, n), a.dtype)


def _copyltu(m):
    """tril(M) + tril(M, -1)^T: the symmetric matrix with M's lower triangle."""
    i, j = _index_grid(m)
    return tnp.where(i >= j, m, _mT(m))


def _qr_square_vjp(gq, gr, q, r):
    """A = QR with Q^H Q = I and R (k x k) upper triangular with a real diagonal, in the
    conjugate pairing: gA = (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q (for complex the
    Hermitian copy, with the diagonal's real part: Q^H dQ is skew-Hermitian)."""
    mm = tnp.matmul(r, _mH(gr)) - tnp.matmul(_mH(gq), q)
    if _is_complex(mm):
        i, j = _index_grid(mm)
        herm = tnp.where(i > j, mm, tnp.where(i == j, tnp.astype(tnp.real(mm), mm.dtype),
                                              tnp.conj(_mT(mm))))
    else:
        herm = _copyltu(mm)
    b = gq + tnp.matmul(q, herm)
    return _mH(bind(solve_p, r, _mH(b)))          # b R^-H


def _qr_vjp(cts, a, out, mode):
    """Reduced QR (and 'complete' when it is the same, or with the extra columns of Q, which are
    not unique, given no gradient). Tall (m >= n): `_qr_square_vjp`. Wide (m < n): A = [X | Y],
    R = [U | V] with X = QU square and V = Q^T Y, so gY = Q gV and X gets the square rule with
    gQ + Y gV^T. With unknown sizes the split is done with index masks (so one graph serves
    tall and wide inputs)."""
    if mode == "raw":
        raise NotImplementedError("linalg.qr(mode='raw'): no gradient (Householder reflectors)")
    gq, gr = (_cj(c) for c in cts)               # conjugate pairing until the end
    q, r = out
    m, n = a.shape[-2:]
    if mode == "complete":
        if m is None or n is None:
            # the reduced factors (Q's first k columns, R's first k rows) have the sizes
            q, r = bind(qr_p, a, mode="reduced")
            gq, gr = _first_cols(gq, q), _mT(_first_cols(_mT(gr), q))
        elif m > n:   # Q's last m - n columns are any basis of the complement: no gradient
            q, gq, r, gr = q[..., :n], gq[..., :n], r[..., :n, :], gr[..., :n, :]
    if m is not None and n is not None:
        if m >= n:
            return (_cj(_qr_square_vjp(gq, gr, q, r)),)
        x_y = a[..., m:]
        gv = gr[..., m:]
        gx = _qr_square_vjp(gq + tnp.matmul(x_y, _mH(gv)), gr[..., :m], q, r[..., :m])
        return (_cj(tnp.concatenate([gx, tnp.matmul(q, gv)], axis=-1)),)
    # unknown sizes: R's first k = min(m, n) columns form the square part, the rest (if any) V
    i, j = _index_grid(r)                                   # (..., k, 1), (..., 1, n)
    rest = j > tnp.max(i, axis=(-2, -1), keepdims=True)     # columns k.. of R
    gv = tnp.where(rest, gr, 0)
    gx = _qr_square_vjp(gq + tnp.matmul(a, _mH(gv)), _first_cols(gr, q), q, _first_cols(r, q))
    return (_cj(tnp.matmul(gx, _mT(_selection(r, q))) + tnp.matmul(q, gv)),)


qr_p = _blas("qr", _qr_impl, _qr_abstract, multiple_results=True)
qr_p.def_vjp(_qr_vjp, uses_out=True)
qr_p.batch = _batch_front(qr_p)


# ------------------------------------------------------------------ eigh / eigvalsh
def _eigh_impl(a, UPLO):
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return w, v


def _eigh_abstract(a, UPLO):
    return Aval(a.shape[:-1], _real_dtype(a.dtype)), Aval(a.shape, a.dtype)


def _eigh_vjp(cts, a, out, UPLO):
    """A V = V diag(w): dw_i = v_i^T dA v_i and dV = V (F o V^T dA V), F_ij = 1/(w_j - w_i), so
    G = V (diag(gw) + F o (V^T gV)) V^T; only the UPLO triangle of A is read. Degenerate
    eigenvalues: F is 0 there (valid for losses invariant to the basis of that eigenspace)."""
    gw, gv = cts
    w, v = out
    inner = _inv_gaps(w) * tnp.matmul(_mH(v), _cj(gv))
    g = tnp.matmul(v * _row(gw) + tnp.matmul(v, inner), _mH(v))
    return (_triangle_ct(_cj(g), lower=UPLO == "L"),)


eigh_p = _blas("eigh", _eigh_impl, _eigh_abstract, multiple_results=True)
eigh_p.def_vjp(_eigh_vjp, uses_out=True)
eigh_p.batch = _batch_front(eigh_p)


def _eigvalsh_vjp(gw, a, UPLO):
    """G = V diag(gw) V^T, V from `eigh` (so second derivatives come from its rule)."""
    _, v = bind(eigh_p, a, UPLO=UPLO)
    return (_triangle_ct(_cj(tnp.matmul(v * _row(gw), _mH(v))), lower=UPLO == "L"),)


eigvalsh_p = _blas("eigvalsh", lambda a, UPLO: np.linalg.eigvalsh(a, UPLO=UPLO),
                       lambda a, UPLO: Aval(a.shape[:-1], _real_dtype(a.dtype)))
eigvalsh_p.def_vjp(_eigvalsh_vjp)
eigvalsh_p.batch = _batch_front(eigvalsh_p)


# ------------------------------------------------------------------ eig / eigvals
# Always complex here; the NumPy layer gives real arrays when every eigenvalue is real, as NumPy
def _eig_impl(a):
    w, v = np.linalg.eig(a)
    c = _complex_dtype(a.dtype)
    return w.astype(c, copy=False), v.astype(c, copy=False)


def _eig_abstract(a):
    c = _complex_dtype(a.dtype)
    return Aval(a.shape[:-1], c), Aval(a.shape, c)


def _vinv_t(v, x):
    """V^-T x."""
    return bind(solve_p, _mT(v), x)


def _finish_eig_ct(ga, a):
    if np.dtype(a.dtype).kind != "c":
        ga = tnp.astype(tnp.real(ga), a.dtype)
    return ga


def _eig_vjp(cts, a, out):
    """A V = V diag(w), P = V^-1 dA V: dw = diag(P), dV0 = V (F o P) with F_lj = 1/(w_j - w_l).
    NumPy (LAPACK geev) scales each eigenvector to unit norm with its largest component real, so
    dV = dV0 - V diag(Re(v^H dv0) + i Im(dv0_k) / v_k) (k: the largest component). Transposed:
    s_j = sum_i gV_ij V_ij, gV0 = gV - conj(V) Re(s) - i e_k Im(s) / v_k,
    gP = diag(gw) + F o (V^T gV0), gA = V^-T gP V^T (real part for real A). Equal eigenvalues
    get F = 0 (see the module notes)."""
    gw, gv = cts
    w, v = out
    s = tnp.sum(gv * v, axis=-2)
    k = tnp.argmax(tnp.abs(v), axis=-2)                                     # (..., n)
    vk = tnp.real(tnp.take_along_axis(v, tnp.expand_dims(k, -2), axis=-2))  # (..., 1, n)
    rows, _ = _index_grid(v)
    onehot = rows == tnp.expand_dims(k, -2)                                  # (..., n, n)
    corr = tnp.where(onehot, 1j * _row(tnp.imag(s)) / vk, 0)
    gv0 = gv - tnp.conj(v) * _row(tnp.real(s)) - tnp.astype(corr, v.dtype)
    gp = _inv_gaps(w) * tnp.matmul(_mT(v), gv0)
    gp = gp + tnp.where(rows == _index_grid(v)[1], _row(gw), 0)
    return (_finish_eig_ct(_vinv_t(v, tnp.matmul(gp, _mT(v))), a),)


eig_p = _blas("eig", _eig_impl, _eig_abstract, multiple_results=True)
eig_p.def_vjp(_eig_vjp, uses_out=True)
eig_p.batch = _batch_front(eig_p)


# ------------------------------------------------------------------ value-dependent dtype
# NumPy's eig/eigvals of a real matrix give real arrays when every eigenvalue is real, complex
# ones otherwise. A traced graph has fixed dtypes, so `nf.function` assumes one of the two at
# each such site (`expect`) and this check makes the assumption hold or fails the call with
# SpecializationError; `nf.function` then runs (tracing once) the graph for what it observed.
def _expect_real_impl(w, *rest, expect, site):
    real = not np.any(np.imag(w))
    if real != expect:
        raise SpecializationError(
            "eigenvalues were %s where the traced graph assumed them %s (NumPy's result dtype "
            "depends on the values); call the nf.function again to use the graph for them"
            % (("all real", "complex") if real else ("complex", "all real")), site, real)
    outs = (w,) + rest
    return tuple(np.real(o) for o in outs) if expect else outs


def _expect_real_abstract(*xs, expect, site):
    return tuple(Aval(x.shape, np.dtype("f%d" % (np.dtype(x.dtype).itemsize // 2)))
                 if expect else Aval(x.shape, x.dtype) for x in xs)


def _expect_real_vjp(cts, *xs, expect, site):
    if not expect:
        return tuple(cts)
    return tuple(None if ct is None else bind(convert_p, ct, dtype=np.dtype(x.dtype))
                 for ct, x in zip(cts, xs))


def _expect_real_batch(args, axes, expect, site):
    xs = [x if a is None else move_to_front(x, a) for x, a in zip(args, axes)]
    outs = bind(expect_real_p, *xs, expect=expect, site=site)
    return outs, tuple(None if a is None else 0 for a in axes)


expect_real_p = Primitive("expect_real", _expect_real_impl, _expect_real_abstract,
                          multiple_results=True, returns_view=True, run_time_check=True)
expect_real_p.def_vjp(_expect_real_vjp)
expect_real_p.batch = _expect_real_batch


def _eigvals_vjp(gw, a):
    """dw = diag(V^-1 dA V): gA = V^-T diag(gw) V^T (V from `eig`)."""
    _, v = bind(eig_p, a)
    return (_finish_eig_ct(_vinv_t(v, _col(gw) * _mT(v)), a),)


eigvals_p = _blas("eigvals",
                      lambda a: np.linalg.eigvals(a).astype(_complex_dtype(a.dtype), copy=False),
                      lambda a: Aval(a.shape[:-1], _complex_dtype(a.dtype)))
eigvals_p.def_vjp(_eigvals_vjp)
eigvals_p.batch = _batch_front(eigvals_p)


# ------------------------------------------------------------------ svd / svdvals
def _svd_finite(a, what="SVD did not converge"):
    """LAPACK's gesdd (OpenBLAS 0.3.31, NumPy's wheels) loops forever on some matrices with an
    infinite element and fails or returns garbage on others; NumPy's answer for NaN is
    LinAlgError, so every non-finite input gets it, before LAPACK sees it."""
    if a.dtype.kind in "fc" and not np.isfinite(a).all():
        raise np.linalg.LinAlgError(what)


def _svd_impl(a, full_matrices, hermitian):
    if not hermitian:           # hermitian: eigh of one triangle, which stops on its own
        _svd_finite(a)
    return numpy_or(lambda: tuple(np.linalg.svd(a, full_matrices=full_matrices,
                                                **_set(hermitian=hermitian))),
                    lambda: _hermitian_svd(a), a, when=hermitian)


def _hermitian_svd(a, compute_uv=True):
    """NumPy's svd(hermitian=True) for a device library without the flag (CuPy): from eigh of
    the lower triangle, |eigenvalues| in descending order, V^H = (U sign(w))^H."""
    if not compute_uv:
        return np.flip(np.sort(np.abs(np.linalg.eigvalsh(a)), axis=-1), axis=-1)
    w, u = np.linalg.eigh(a)
    order = np.flip(np.argsort(np.abs(w), axis=-1), axis=-1)
    w = np.take_along_axis(w, order, axis=-1)
    u = np.take_along_axis(u, order[..., None, :], axis=-1)
    vh = np.conj(np.swapaxes(u * np.sign(w)[..., None, :], -1, -2))
    return u, np.abs(w), vh


def _svd_abstract(a, full_matrices, hermitian):
    batch, m, n = _batch_and_sizes(a)
    k = None if m is None or n is None else min(m, n)
    r = _real_dtype(a.dtype)
    if full_matrices:
        return Aval(batch + (m, m), a.dtype), Aval(batch + (k,), r), Aval(batch + (n, n), a.dtype)
    return Aval(batch + (m, k), a.dtype), Aval(batch + (k,), r), Aval(batch + (k, n), a.dtype)


def _svd_core_vjp(gu, gs, gvh, u, s, vh, m, n):
    """Reduced SVD A = U S V^T (k = min(m, n)), F_ij = 1/(s_j^2 - s_i^2):
    gA = U [(F o (U^T gU - gU^T U)) S + diag(gS) + S (F o (V^T gV - gV^T V))] V^T
         + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)
    (the last two only for non-square A). Equal singular values get F = 0, zero ones S^-1 = 0
    (see the module notes)."""
    gv = _mH(gvh)
    v = _mH(vh)
    f = _inv_gaps(s * s)
    utgu = tnp.matmul(_mH(u), gu)
    vtgv = tnp.matmul(vh, gv)
    inner = (f * (utgu - _mH(utgu))) * _row(s) + _col(s) * (f * (vtgv - _mH(vtgv)))
    if _is_complex(utgu):
        # the phase shared by u_i and v_i: i Im(u_i^H gu_i) / s_i on the diagonal
        i, j = _index_grid(utgu)
        inner = inner + tnp.where(i == j, 1j * tnp.imag(utgu) * _row(_safe_recip(s)), 0)
    g = tnp.matmul(tnp.matmul(u, inner) + u * _row(gs), vh)
    square = m is not None and m == n
    if not square:
        sinv = _row(_safe_recip(s))
        if m is None or n is None or m > n:
            g = g + tnp.matmul((gu - tnp.matmul(u, utgu)) * sinv, vh)
        if m is None or n is None or n > m:
            g = g + tnp.matmul(u * sinv, _mH(gv - tnp.matmul(v, vtgv)))
    return g


def _svd_vjp(cts, a, out, full_matrices, hermitian):
    """See `_svd_core_vjp`. full_matrices=True: the extra columns of U (rows of Vh) are any
    basis of a complement, so they get no gradient (correct when the loss does not use them)."""
    gu, gs, gvh = (_cj(c) for c in cts)          # conjugate pairing until the end
    u, s, vh = out
    m, n = a.shape[-2:]
    if full_matrices:
        u, gu = _first_cols(u, s), _first_cols(gu, s)
        vh, gvh = _mT(_first_cols(_mT(vh), s)), _mT(_first_cols(_mT(gvh), s))
    g = _cj(_svd_core_vjp(gu, gs, gvh, u, s, vh, m, n))
    return (_triangle_ct(g, lower=True) if hermitian else g,)


svd_p = _blas("svd", _svd_impl, _svd_abstract, multiple_results=True)
svd_p.def_vjp(_svd_vjp, uses_out=True)
svd_p.batch = _batch_front(svd_p)


def _svdvals_vjp(gs, a, hermitian):
    """ds = diag(U^T dA V): gA = U diag(gs) V^T (U, V from `svd`)."""
    u, _, vh = bind(svd_p, a, full_matrices=False, hermitian=hermitian)
    g = _cj(tnp.matmul(u * _row(gs), vh))
    return (_triangle_ct(g, lower=True) if hermitian else g,)


def _svdvals_abstract(a, hermitian):
    batch, m, n = _batch_and_sizes(a)
    return Aval(batch + (None if m is None or n is None else min(m, n),), _real_dtype(a.dtype))


def _svdvals_impl(a, hermitian):
    return numpy_or(lambda: np.linalg.svd(a, compute_uv=False, **_set(hermitian=hermitian)),
                    lambda: _hermitian_svd(a, compute_uv=False), a, when=hermitian)


svdvals_p = _blas("svdvals", _svdvals_impl, _svdvals_abstract)
svdvals_p.def_vjp(_svdvals_vjp)
svdvals_p.batch = _batch_front(svdvals_p)


# ------------------------------------------------------------------ pinv
# rcond broadcasts against a's leading axes; with scale_by_size the cutoff is
# rcond * max(m, n) * largest singular value (NumPy's rtol=None, lstsq's default)
def _pinv_impl(a, rcond, hermitian, scale_by_size=False):
    batch = np.broadcast_shapes(a.shape[:-2], np.shape(rcond))
    a = np.broadcast_to(a, batch + a.shape[-2:])
    if scale_by_size:
        rcond = rcond * max(a.shape[-2:])
    if not hermitian:
        _svd_finite(a)
    # without the flag: the Hermitian matrix of the lower triangle, what NumPy's path reads
    return numpy_or(lambda: np.linalg.pinv(a, rcond, **_set(hermitian=hermitian)),
                    lambda: np.linalg.pinv(np.tril(a) + np.conj(np.swapaxes(np.tril(a, -1),
                                                                             -1, -2)), rcond),
                    a, when=hermitian)


def _pinv_abstract(a, rcond, hermitian, scale_by_size=False):
    batch = broadcast_shapes(a.shape[:-2], rcond.shape, what="pinv: a and rcond")
    return Aval(batch + (a.shape[-1], a.shape[-2]), a.dtype)


def _pinv_ct(g, a, p):
    """P = A^+ (constant rank): dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, so
    in the conjugate pairing gA = -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)."""
    pt = _mH(p)
    gt = _mH(g)
    t1 = -tnp.matmul(tnp.matmul(pt, g), pt)
    t2 = tnp.matmul(gt - tnp.matmul(a, tnp.matmul(p, gt)), tnp.matmul(p, pt))
    t3 = tnp.matmul(tnp.matmul(pt, p), gt - tnp.matmul(tnp.matmul(gt, p), a))
    return t1 + t2 + t3


def _pinv_vjp(ct, a, rcond, out, hermitian, scale_by_size=False):
    """See `_pinv_ct`; hermitian=True reads the lower triangle only. rcond: no gradient."""
    a_b = a
    if tuple(out.shape[:-2]) != tuple(a.shape[:-2]):
        a_b = tnp.broadcast_to(a, tuple(out.shape[:-2]) + tuple(a.shape[-2:]))
    g = _cj(_pinv_ct(_cj(ct), a_b, out))
    if hermitian:
        g = _triangle_ct(g, lower=True)
    return unbroadcast(g, a), None


def _pinv_batch(args, axes, **params):
    """Batch axes to the front; rcond's axes line up with a's leading ones (the kernel
    broadcasts them), so the one with fewer leading axes gets 1s after the batch axis."""
    (a, rcond), (ba, br) = args, axes
    ra = a.ndim - (ba is not None) - 2
    rr = rcond.ndim - (br is not None)
    a, rcond = move_to_front(a, ba), move_to_front(rcond, br)
    if br is not None and rr < ra:
        rcond = tnp.expand_dims(rcond, tuple(range(1, 1 + ra - rr)))
    if ba is not None and ra < rr:
        a = tnp.expand_dims(a, tuple(range(1, 1 + rr - ra)))
    return bind(pinv_p, a, rcond, **params), 0


pinv_p = _blas("pinv", _pinv_impl, _pinv_abstract)
pinv_p.def_vjp(_pinv_vjp, uses_out=True)
pinv_p.batch = _pinv_batch


# ------------------------------------------------------------------ lstsq
# a (m, n), b (m, k) (a vector b is a column here) -> x (n, k), the squared residual norms of
# every column (k,) (NumPy's when it reports them, else 0: the NumPy layer keeps them only when
# rank == n < m), rank (int32) and the singular values; stacks are looped (vectorized_map)
def _lstsq_one(a, b, rcond):
    _svd_finite(a, "SVD did not converge in Linear Least Squares")     # gelsd: as gesdd
    x, res, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    rdt = _real_dtype(x.dtype)
    # zeros_like / astype rather than np.zeros / np.asarray: the buffers may be CuPy's
    full = res if res.shape[-1:] == (b.shape[-1],) else np.zeros_like(s, shape=b.shape[-1:])
    rank = rank.astype(np.int32) if hasattr(rank, "astype") else np.int32(rank)
    return x, full.astype(rdt, copy=False), rank, s.astype(rdt, copy=False)


def _lstsq_impl(a, b, rcond):
    if a.ndim == 2 and b.ndim == 2:
        return _lstsq_one(a, b, rcond)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    outs = [_lstsq_one(a[i], b[i], rcond) for i in np.ndindex(batch)]
    return tuple(np.stack([o[j] for o in outs]).reshape(batch + outs[0][j].shape)
                 if outs else np.zeros(batch + (0,)) for j in range(4))


def _lstsq_abstract(a, b, rcond):
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what="lstsq: operands")
    m, n = a.shape[-2:]
    k = b.shape[-1]
    r = _real_dtype(a.dtype)
    mn = None if m is None or n is None else min(m, n)
    return (Aval(batch + (n, k), a.dtype), Aval(batch + (k,), r),
            Aval(batch, np.dtype(np.int32)), Aval(batch + (mn,), r))


def _lstsq_vjp(cts, a, b, out, rcond):
    """x = A^+ b (the minimum-norm solution; constant rank): gb = A^+T gx and gA from
    `_pinv_ct` with G = gx b^T. Residuals r_j = |b_j - A x_j|^2: at the optimum A^T(b - Ax) = 0,
    so gb = 2 (b - Ax) g_r and gA = -2 (b - Ax) g_r x^T. Singular values: U diag(gs) V^T."""
    gx, gres, _, gs = (None if c is None else _cj(c) for c in cts)   # conjugate pairing
    x, _, _, _ = out
    m, n = a.shape[-2:]
    if rcond is None:
        scale, rc = True, np.finfo(np.float64).eps
    else:
        scale, rc = False, rcond
    p = bind(pinv_p, a, tnp.asarray(rc, dtype=np.float64), hermitian=False,
             scale_by_size=scale)
    resid = b - tnp.matmul(a, x)
    rg = resid * _row(gres)
    gb = _cj(tnp.matmul(_mH(p), gx) + 2 * rg)
    u, _, vh = bind(svd_p, a, full_matrices=False, hermitian=False)
    ga = _cj(_pinv_ct(tnp.matmul(gx, _mH(b)), a, p) - 2 * tnp.matmul(rg, _mH(x))
             + tnp.matmul(u * _row(gs), vh))
    return unbroadcast(ga, a), unbroadcast(gb, b)


def _lstsq_batch(args, axes, rcond):
    a, b = [move_to_front(x, bd) for x, bd in zip(args, axes)]
    if axes[0] is None:
        a = tnp.expand_dims(a, 0)
    if axes[1] is None:
        b = tnp.expand_dims(b, 0)
    return bind(lstsq_p, a, b, rcond=rcond), 0


lstsq_p = _blas("lstsq", _lstsq_impl, _lstsq_abstract, multiple_results=True)
lstsq_p.def_vjp(_lstsq_vjp, uses_out=True)
lstsq_p.batch = _lstsq_batch
