"""Polynomials (NumPy's legacy `poly*` functions: coefficient arrays, highest power first),
convolution and correlation.

All are compositions, so they differentiate, trace and vectorize, with these exceptions:
`roots` (and `poly` of a square matrix) take eigenvalues with NumPy on the host, with no
gradient (their result dtype, real or complex, depends on the values); `polymul`, `polydiv` and
`poly` of complex zeros strip or decide on values as NumPy does, which needs them concrete (or
gives sizes unknown while tracing). `polyfit` solves its least-squares problem as NumPy
does, with the (differentiable) SVD `lstsq` of the column-scaled Vandermonde matrix and its
`rcond` cutoff; `cov=` comes from a modified Gram-Schmidt QR of the same matrix, and
`full=True` reports the rank and singular values from NumPy on the host.
"""
import warnings

import numpy as np

from ..core.primitive import bind
from ..core.ndarray import static_size as _static_size
from ..core import dtypes as _dt
from ..primitives import elementwise as E, linalg as L
from ._core import asarray, checked
from . import _axes as A
from .manipulation import reshape, concatenate, atleast_1d, stack
from ._axes import dim as _size_of
from .creation import zeros, zeros_like, arange, ones
from .indexing import _nonzero1
from .linalg import lstsq, inv
from .linalg_ops import matmul
from .math import (where_, logical_and, conjugate, not_equal, logical_or, logical_not, equal,
                   absolute, real, sqrt, isfinite)
from .reductions import sum as sum_, any as any_, argmax, all as all_
from .routines import vander
from .shaping import flip


def _len(p, what):
    n = p.shape[0]
    if n is None:
        raise ValueError(f"{what}: the number of coefficients is unknown while tracing")
    return n


# ------------------------------------------------------------------ convolution
_BLOCK = 1 << 22     # elements of the gathered (output x kernel) matrix per block


def _window_dot(ap, idx, w, lo, hi):
    """sum_j ap[idx[i, j]] * w[j] over the j with lo <= idx[i, j] < hi (the positions of the
    unpadded operand): NumPy's correlate multiplies only overlapping elements, so a product of
    padding with an infinite or NaN coefficient (0 * inf = NaN) must not enter the sum."""
    prod = A.gather(ap, idx, 0) * w
    idx = asarray(idx)
    valid = logical_and(idx >= lo, idx < hi)
    return sum_(where_(valid, prod, bind(E.zeros_like_p, prod)), axis=1, dtype=prod.dtype)


def _correlate_rows(ap, w, start, length, lo, hi):
    """out[i] = sum_j ap[start + i + j] * w[j] for i < length, over the j where ap is not
    padding: one gather of the sliding windows (in kernel blocks when they are large)."""
    k = w.shape[0]
    if length is not None and k is not None:
        out = None
        step = max(1, _BLOCK // max(length, 1))
        for j0 in range(0, k, step):
            j1 = min(k, j0 + step)
            idx = (start + np.arange(length))[:, None] + np.arange(j0, j1)[None, :]
            term = _window_dot(ap, idx, A.slice_axis(w, 0, j0, j1), lo, hi)
            out = term if out is None else out + term
        return out
    i = A.iota(ap, 0) if length is None else asarray(np.arange(length))
    idx = reshape(i + start, (-1, 1)) + reshape(A.iota(w, 0), (1, -1))
    return _window_dot(ap, idx, w, lo, hi)


def _conv(a, v, mode, correlate):
    a, v = asarray(a), asarray(v)
    if correlate and (a.ndim == 0 or v.ndim == 0):
        raise ValueError("object of too small depth for desired array")
    a, v = atleast_1d(a), atleast_1d(v)
    name = "correlate" if correlate else "convolve"
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError("object too deep for desired array")
    d = _dt.result_type(a, v)
    a = a if a.dtype == d else bind(E.convert_p, a, dtype=d)
    v = v if v.dtype == d else bind(E.convert_p, v, dtype=d)
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be one of 'full', 'same', or 'valid' (got {mode!r})")
    if correlate and d.kind == "c":
        v = conjugate(v)
    n, k = a.shape[0], v.shape[0]
    if n == 0 or k == 0:
        raise ValueError("a cannot be empty" if n == 0 and k == 0 else "v cannot be empty")
    w = v if correlate else flip(v)        # full correlation with w == convolution with v
    if n is None or k is None:
        if mode != "full":
            raise ValueError(f"{name} mode {mode!r}: which operand is longer decides the output, "
                             f"and the sizes are unknown while tracing; use mode='full'")
        pads = bind(E.zeros_like_p, A.slice_axis(w, 0, 1, None))
        ap = concatenate([pads, a, pads])
        rows = concatenate([a, pads])          # one row per output element
        i = A.iota(rows, 0)
        idx = reshape(i, (-1, 1)) + reshape(A.iota(w, 0), (1, -1))
        km1 = _size_of(pads, 0)
        return _window_dot(ap, idx, w, km1, km1 + _size_of(a, 0))
    total = n + k - 1
    big, small = max(n, k), min(n, k)
    if mode == "full":
        start, length = 0, total
    elif mode == "same":
        start, length = (small - 1) // 2, big
    else:
        start, length = small - 1, big - small + 1
    if correlate and n < k:
        # NumPy correlates the longer with the shorter and reverses: the window is mirrored
        start = total - (start + length)
    z = zeros(k - 1, d)
    ap = concatenate([z, a, z]) if k > 1 else a
    return _correlate_rows(ap, w, start, length, k - 1, k - 1 + n)


def convolve(a, v, mode="full"):
    """Discrete linear convolution of two 1-d arrays, as `numpy.convolve` (sliding windows
    gathered and multiplied; differentiable in both)."""
    return _conv(a, v, mode, False)


def correlate(a, v, mode="valid"):
    """Cross-correlation of two 1-d arrays, sum_n a[n + k] * conj(v[n]), as
    `numpy.correlate`."""
    return _conv(a, v, mode, True)


# ------------------------------------------------------------------ evaluation and arithmetic
def polyval(p, x):
    """p[0] * x**(N-1) + ... + p[N-1] by Horner's scheme, as `numpy.polyval` (same dtype
    rules: the coefficients are NumPy-typed scalars)."""
    c = asarray(p)
    if c.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    xv = asarray(x)
    y = zeros_like(xv)
    for i in range(_len(c, "polyval")):
        y = y * xv + c[i]
    return y


def _zero_pad_front(a, k):
    return concatenate([zeros(k, a.dtype), a])


def polyadd(a1, a2):
    """The sum of two polynomials, as `numpy.polyadd`."""
    x, y = atleast_1d(asarray(a1)), atleast_1d(asarray(a2))
    diff = _len(y, "polyadd") - _len(x, "polyadd")
    if diff > 0:
        x = _zero_pad_front(x, diff)
    elif diff < 0:
        y = _zero_pad_front(y, -diff)
    return x + y


def polysub(a1, a2):
    """The difference of two polynomials, as `numpy.polysub`."""
    x, y = atleast_1d(asarray(a1)), atleast_1d(asarray(a2))
    diff = _len(y, "polysub") - _len(x, "polysub")
    if diff > 0:
        x = _zero_pad_front(x, diff)
    elif diff < 0:
        y = _zero_pad_front(y, -diff)
    return x - y


def _trim_leading(c):
    """poly1d's normalization: leading zeros stripped, all zeros -> [0] (a gather of the kept
    positions, found from the values)."""
    c = atleast_1d(asarray(c))
    if c.ndim > 1:
        raise ValueError("Polynomial must be 1d only.")
    nz = not_equal(c, 0)
    i = A.iota(c, 0)
    has = any_(nz)
    keep = logical_or(logical_and(has, i >= argmax(nz)),
                      logical_and(logical_not(has), equal(i, A.dim(c, 0) - 1)))
    return A.gather(c, _nonzero1(keep, "polymul"), 0)


def polymul(a1, a2):
    """The product of two polynomials, as `numpy.polymul` (leading zeros are stripped first,
    as NumPy's poly1d does: data-dependent, so an error inside vectorized_map)."""
    return convolve(_trim_leading(a1), _trim_leading(a2))


def polyder(p, m=1):
    """The m-th derivative, as `numpy.polyder`."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    c = asarray(p)
    for _ in range(m):
        n = _len(c, "polyder") - 1
        c = c[:-1] * arange(n, 0, -1)
    return c


def polyint(p, m=1, k=None):
    """The m-th antiderivative with integration constants k, as `numpy.polyint`."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    kk = zeros(m, float) if k is None else atleast_1d(asarray(k))
    if kk.shape[0] == 1 and m > 1:
        kk = kk[0] * ones(m, float)
    if kk.shape[0] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    c = asarray(p)
    for i in range(m):
        n = _len(c, "polyint")
        c = concatenate([c / arange(n, 0, -1), reshape(kk[i], (1,))])
    return c


def polydiv(u, v):
    """Quotient and remainder of polynomial division, as `numpy.polydiv`. The remainder's
    leading near-zero coefficients are stripped as NumPy does; that needs concrete values:
    while tracing only the ones that are zero by construction are stripped."""
    uu = atleast_1d(asarray(u)) + 0.0
    vv = atleast_1d(asarray(v)) + 0.0
    w = uu[0] + vv[0]
    m = _len(uu, "polydiv") - 1
    n = _len(vv, "polydiv") - 1
    scale = 1.0 / vv[0]
    r = uu.astype(w.dtype)
    qs = []
    for k in range(m - n + 1):
        d = scale * r[k]
        qs.append(reshape(d, (1,)))
        r = concatenate([r[:k], r[k:k + n + 1] - d * vv, r[k + n + 1:]])
    q = concatenate(qs) if qs else zeros((1,), w.dtype)
    if q.dtype != w.dtype:
        q = q.astype(w.dtype)
    start = 0
    while start < r.shape[0] - 1:
        lead = r[start]
        if lead._t is not None:
            # Traced: the eliminated coefficients are stripped, the next one kept; NumPy
            # decides by value (|c| <= 1e-8), so a run where it would decide otherwise (NaN or
            # inf operands, an exact remainder) raises rather than return another size.
            small = absolute(lead) <= 1e-8
            eliminated = start < m - n + 1
            r = checked(r, logical_not(small) if eliminated else small, ValueError,
                        "polydiv traced: NumPy strips the remainder's leading coefficients "
                        "with |c| <= 1e-8, a size known only at run time; call it eagerly")
            if eliminated:
                start += 1
                continue
            break
        if not abs(float(absolute(lead))) <= 1e-8:
            break
        start += 1
    return q, r[start:]


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (or of a square matrix's
    characteristic polynomial), as `numpy.poly`. Real roots: a chain of convolutions
    (differentiable). A matrix: its eigenvalues from NumPy on the host (no gradient)."""
    z = atleast_1d(asarray(seq_of_zeros))
    sh = z.shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        z = asarray(np.linalg.eigvals(z.numpy()))
    elif len(sh) == 1:
        dt = np.dtype(np.mintypecode(z.dtype.char))
        z = z.astype(dt) if z.dtype != dt else z
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    n = _len(z, "poly")
    if n == 0:
        return 1.0
    dt = z.dtype
    a = ones((1,), dt)
    one = ones((), dt)
    for i in range(n):
        a = convolve(a, stack([one, -z[i]]))
    if dt.kind == "c":
        if z._t is not None:
            raise ValueError("poly of complex zeros: whether the result is real depends on the "
                             "values, which are not known while tracing")
        r = np.asarray(z.numpy(), complex)
        if np.all(np.sort(r) == np.sort(r.conjugate())):
            a = real(a).copy()
    return a


def roots(p):
    """The roots of a polynomial (eigenvalues of its companion matrix), as `numpy.roots`.
    Computed with NumPy on the host: no gradient, not traceable (the dtype, real or complex,
    depends on the values)."""
    return asarray(np.roots(asarray(p).numpy()))


# ------------------------------------------------------------------ fitting
def _mgs_lstsq(a, b):
    """Least squares min ||a c - b|| by modified Gram-Schmidt on [a | b] (Bjorck: backward
    stable, Q^T b taken from the augmented columns). a: (m, n) with n small; b: (m,) or
    (m, k). Returns the solution, R, and the residual columns."""
    n = a.shape[1]
    cols = [a[:, j] for j in range(n)]
    rhs = b if b.ndim == 2 else reshape(b, (-1, 1))
    R = [[None] * n for _ in range(n)]
    qtb = []
    for j in range(n):
        v = cols[j]
        nrm = sqrt(sum_(v * v))
        q = v / nrm
        R[j][j] = nrm
        for i in range(j + 1, n):
            rij = sum_(q * cols[i])
            R[j][i] = rij
            cols[i] = cols[i] - rij * q
        t = sum_(reshape(q, (-1, 1)) * rhs, axis=0)
        qtb.append(t)
        rhs = rhs - reshape(q, (-1, 1)) * t
    # back substitution, one row at a time
    c = [None] * n
    for i in range(n - 1, -1, -1):
        s = qtb[i]
        for j in range(i + 1, n):
            s = s - R[i][j] * c[j]
        c[i] = s / R[i][i]
    sol = stack(c)                   # (n, k)
    zero = R[0][0] * 0
    Rm = stack([stack([R[i][j] if j >= i else zero for j in range(n)]) for i in range(n)])
    return (sol if b.ndim == 2 else sol[:, 0]), Rm, rhs


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit, as `numpy.polyfit` (same scaling of the Vandermonde
    columns, the same SVD least-squares solve and rcond cutoff). Differentiable in x, y
    and w. `full=True` and the RankWarning use NumPy on the host for the rank and singular
    values."""
    order = int(deg) + 1
    xv = asarray(x) + 0.0
    yv = asarray(y) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if xv.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if _static_size(xv) == 0:
        raise TypeError("expected non-empty vector for x")
    if yv.ndim < 1 or yv.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xv.shape[0] != yv.shape[0]:
        raise TypeError("expected x and y to have same length")
    m = xv.shape[0]
    if rcond is None:
        rcond = (m if m is not None else 1) * np.finfo(xv.dtype).eps
    lhs = vander(xv, order)
    rhs = yv
    if w is not None:
        wv = asarray(w) + 0.0
        if wv.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if wv.shape[0] != yv.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * reshape(wv, (-1, 1))
        rhs = rhs * (reshape(wv, (-1, 1)) if rhs.ndim == 2 else wv)
    scale = sqrt(sum_(lhs * lhs, axis=0))
    lhs = lhs / scale
    # NumPy's lstsq (LAPACK gelsd) fails on a non-finite matrix: the same error on every path
    lhs = checked(lhs, logical_not(all_(isfinite(lhs))), np.linalg.LinAlgError,
                  "SVD did not converge in Linear Least Squares")
    with np.errstate(divide="ignore", invalid="ignore"):   # rank-deficient: RankWarning below
        _, _, res = _mgs_lstsq(lhs, rhs)
    # the coefficients are NumPy's: an SVD least-squares solve with its rcond cutoff (the
    # minimum-norm answer where the design is rank-deficient; QR's would differ silently);
    # QR's R and residuals serve cov= and full=, which assume full rank as NumPy's do
    c = lstsq(lhs, rhs, rcond=rcond)[0]
    c = (c.T / scale).T
    # gelsd's answer for a right-hand side with NaN or inf: that column's coefficients are NaN
    c = where_(all_(isfinite(rhs), axis=0), c, np.nan)
    concrete = lhs._t is None
    if concrete and (full or not cov):
        s = np.linalg.svd(lhs.numpy(), compute_uv=False)
        rank = int(np.sum(s > rcond * s[0])) if s.size else 0
    else:
        s, rank = None, order
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)
    if full:
        if not concrete:
            raise ValueError("polyfit(full=True) needs concrete inputs (the rank and singular "
                             "values come from NumPy)")
        if rank == order and m > order:
            resids = sum_(res * res, axis=0)
        else:
            resids = zeros((0,), c.dtype)
        return c, resids, np.int32(rank), asarray(s), rcond
    if cov:
        # NumPy's formula, so a singular design raises its LinAlgError rather than give NaN
        vbase = inv(matmul(lhs.T, lhs))
        vbase = vbase / (reshape(scale, (-1, 1)) * reshape(scale, (1, -1)))
        if cov == "unscaled":
            fac = 1
        else:
            if m <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            fac = sum_(res * res, axis=0) / (m - order)
        if yv.ndim == 1:
            return c, vbase * fac
        return c, reshape(vbase, tuple(vbase.shape) + (1,)) * fac
    return c
