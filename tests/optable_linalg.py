"""Op-table records for `tnp.linalg` (named "linalg.<name>") and the main-namespace
linear-algebra functions (trace, diagonal, kron, cross, vecdot).

Samples are well conditioned: general matrices are diagonally dominant (random + 2n I), SPD ones
are A A^T + n I, eigenvalue problems have well-separated eigenvalues, so central differences are
accurate. Every sample shape is fixed (the random generator only picks values).
"""
import numpy as np

from optable import (record, values, Sample, F32, F64, I32, C128, FLOATS, BOOL)
from optable_canon import eigh_canon, eig_canon, svd_canon

_LA = FLOATS + (I32, C128)         # NumPy computes integers in float64
_LA_TOL = {F32: (1e-4, 1e-5)}      # composed float32 results vs NumPy's float64-then-rounded
_UNKNOWN_DIAG = "the diagonal's length needs the matrix sizes while tracing"


def _la(name):
    def call(m, *a, **k):
        return getattr(m.linalg, name)(*a, **k)
    return call


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _base(rng, shape, dt):
    """Values for building matrices: small integers for integer dtypes."""
    return values(rng, shape, dt if dt.kind in "fc" else np.int64)


def _general(rng, shape, dt, noncontig=False):
    """Diagonally dominant (so invertible and well conditioned); noncontig: a transposed view."""
    n = shape[-1]
    shift = 2 * n if dt.kind in "fc" else 6 * n
    a = _base(rng, shape, dt) + shift * np.eye(n, dtype=np.int64)
    a = a.astype(dt)
    return np.ascontiguousarray(_mT(a)).swapaxes(-1, -2) if noncontig else a


def _spd(rng, shape, dt, noncontig=False):
    """Symmetric (Hermitian) positive definite: A A^H + n I."""
    n = shape[-1]
    a = _base(rng, shape, dt)
    s = (a @ np.conj(_mT(a)) + n * np.eye(n)).astype(dt)
    return np.ascontiguousarray(_mT(s)).swapaxes(-1, -2) if noncontig else s


def _sym(rng, shape, dt):
    a = _base(rng, shape, dt)
    return (a + np.conj(_mT(a))).astype(dt)


def _rect(rng, shape, dt, noncontig=False):
    """A full-rank rectangular matrix: a random one plus a scaled identity block."""
    m, n = shape[-2:]
    a = _base(rng, shape, dt) + 3 * np.eye(m, n, dtype=np.int64)
    a = a.astype(dt)
    return np.ascontiguousarray(_mT(a)).swapaxes(-1, -2) if noncontig else a


def _rotating(rng, shape, dt):
    """Real matrices whose eigenvalues are distinct and (all but one for odd n) complex: a
    fixed large skew-symmetric part plus random smaller skew and diagonal parts, scaled by
    diag(1, 3, 9, ...) on the left and its inverse on the right, so that the components of each
    eigenvector differ in size (NumPy makes the largest one real: a tie would be a jump)."""
    n = shape[-1]
    j = np.triu(np.arange(1, n * n + 1).reshape(n, n) % 3 + 1, 1)
    j = 3.0 * (j - j.T)
    s = values(rng, shape, np.float64)
    d = values(rng, shape[:-1], np.float64, "unit")
    a = j + 0.25 * (s - _mT(s)) + 0.3 * d[..., None] * np.eye(n)
    p = 3.0 ** np.arange(n)
    a = p[:, None] * a / p[None, :]
    if dt.kind == "c":
        a = a + 0.1j * values(rng, shape, np.float64)
    return a.astype(dt)


def _split_call(name):
    def call(m, *a, **k):
        out = getattr(m.linalg, name)(*a, **k)
        outs = out if isinstance(out, tuple) else (out,)
        res = []
        for o in outs:
            res.extend([m.real(o), m.imag(o)] if np.dtype(o.dtype).kind == "c" else [o])
        return tuple(res)
    return call


# ---- inverses, determinants, solvers ----------------------------------------------------
def _square_samples(rng, dt):
    g = lambda s, **k: _general(rng, s, dt, **k)  # noqa: E731
    return [Sample((g((3, 3)),), desc="matrix"), Sample((g((2, 3, 3)),), desc="stack"),
            Sample((g((1, 1)),), desc="1x1"), Sample((g((2, 1, 4, 4)),), desc="stack 2"),
            Sample((g((3, 3), noncontig=True),), desc="noncontig"),
            Sample((g((0, 0)),), desc="empty")]


record("linalg.inv", _square_samples, dtypes=_LA, call=_la("inv"), tol=_LA_TOL)
record("linalg.det", _square_samples, dtypes=_LA, call=_la("det"), tol=_LA_TOL)


def _slogdet_samples(rng, dt):
    out = _square_samples(rng, dt)
    out.append(Sample((-_general(rng, (2, 3, 3), dt),), desc="negative determinant"))
    return out


record("linalg.slogdet", _slogdet_samples, dtypes=_LA, call=_la("slogdet"), tol=_LA_TOL)


def _solve_samples(rng, dt):
    g = lambda s, **k: _general(rng, s, dt, **k)  # noqa: E731
    v = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    return [Sample((g((3, 3)), v((3,))), desc="vector"),
            Sample((g((3, 3)), v((3, 2))), desc="matrix"),
            Sample((g((2, 3, 3)), v((3,))), desc="stack, one vector"),
            Sample((g((2, 3, 3)), v((2, 3, 2))), desc="stacks"),
            Sample((g((3, 3)), v((4, 3, 2))), desc="broadcast a"),
            Sample((g((2, 1, 3, 3)), v((5, 3, 1))), desc="broadcast both"),
            Sample((g((3, 3), noncontig=True), v((3, 4))), desc="noncontig")]


record("linalg.solve", _solve_samples, dtypes=_LA, call=_la("solve"), tol=_LA_TOL)


def _tensorinv_samples(rng, dt):
    return [Sample((_general(rng, (4, 4), dt).reshape(4, 2, 2),), {"ind": 1}),
            Sample((_general(rng, (6, 6), dt).reshape(2, 3, 6),), {"ind": 2}),
            Sample((_general(rng, (6, 6), dt).reshape(6, 3, 2),), {"ind": 1})]


_RESHAPES = "reshapes to a square matrix: needs the sizes while tracing"
record("linalg.tensorinv", _tensorinv_samples, dtypes=_LA, call=_la("tensorinv"), tol=_LA_TOL,
       unknown_dims=lambda s: _RESHAPES)


def _tensorsolve_samples(rng, dt):
    b = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    return [Sample((_general(rng, (6, 6), dt).reshape(2, 3, 6), b((2, 3)))),
            Sample((_general(rng, (4, 4), dt).reshape(2, 2, 2, 2), b((2, 2)))),
            Sample((np.moveaxis(_general(rng, (6, 6), dt).reshape(2, 3, 6), -1, 0), b((2, 3))),
                   {"axes": (0,)}, "axes")]


record("linalg.tensorsolve", _tensorsolve_samples, dtypes=_LA, call=_la("tensorsolve"),
       tol=_LA_TOL, unknown_dims=lambda s: _RESHAPES)


def _pinv_samples(rng, dt):
    r = lambda s, **k: _rect(rng, s, dt, **k)  # noqa: E731
    low = (values(rng, (5, 2), F64) @ values(rng, (2, 4), F64)).astype(dt)
    return [Sample((r((4, 3)),)), Sample((r((3, 5)),)), Sample((r((2, 4, 3)),), desc="stack"),
            Sample((_spd(rng, (3, 3), dt),), {"hermitian": True}, "hermitian"),
            Sample((r((4, 3)), 1e-10), desc="rcond"),
            Sample((r((2, 4, 3)), np.array([1e-10, 1e-12])), desc="rcond per matrix"),
            Sample((low,), {"rcond": 1e-3}, "rank 2 of 4"),
            Sample((r((4, 3), noncontig=True),), desc="noncontig")] + (
        # NumPy takes finfo of the input's dtype here, which fails for integers
        [Sample((r((3, 4)),), {"rtol": None}, "rtol=None")] if dt.kind in "fc" else [])


# NumPy's gesdd (OpenBLAS 0.3.31) loops forever on some matrices with an infinite element and
# returns garbage (pinv: zeros) on others; for NaN NumPy raises LinAlgError, and ndflow raises it
# for every non-finite input (primitives/linalg_decomp.py)
_SVD_NONFINITE = dict(paths_reasons={"nonfinite_raises": "NumPy's own SVD hangs on some "
                                     "infinite inputs (LAPACK gesdd); LinAlgError as for NaN"})
record("linalg.pinv", _pinv_samples, dtypes=_LA, call=_la("pinv"), tol=_LA_TOL,
       grad_tol=(1e-5, 1e-7), **_SVD_NONFINITE).paths_nonfinite_error = np.linalg.LinAlgError


def _lstsq_samples(rng, dt):
    r = lambda s: _rect(rng, s, dt)  # noqa: E731
    b = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    # a rank-deficient sample is in test_linalg.py (its zero singular value has no derivative)
    return [Sample((r((5, 3)), b((5,))), desc="tall, vector"),
            Sample((r((5, 3)), b((5, 2))), desc="tall"),
            Sample((r((3, 3)), b((3,))), desc="square"),
            Sample((r((3, 5)), b((3, 2))), desc="wide (minimum norm)"),
            Sample((r((5, 3)), b((5, 2))), {"rcond": 1e-10}, "rcond")]


record("linalg.lstsq", _lstsq_samples, dtypes=_LA, call=_la("lstsq"), tol=_LA_TOL,
       grad_tol=(1e-5, 1e-7), vmap=False,
       vmap_reason="its own test: the residuals of a tall matrix have a size that depends on "
                   "the rank, so examples must agree (test_linalg.py)",
       **_SVD_NONFINITE).paths_nonfinite_error = np.linalg.LinAlgError

# ---- decompositions ---------------------------------------------------------------------


def _cholesky_samples(rng, dt):
    s = lambda sh, **k: _spd(rng, sh, dt, **k)  # noqa: E731
    lower_only = np.tril(s((3, 3))) + np.triu(_base(rng, (3, 3), dt).astype(dt), 1)
    return [Sample((s((3, 3)),)), Sample((s((2, 4, 4)),), desc="stack"),
            Sample((s((3, 3)),), {"upper": True}, "upper"),
            Sample((lower_only,), desc="reads the lower triangle only"),
            Sample((s((3, 3), noncontig=True),), desc="noncontig")]


record("linalg.cholesky", _cholesky_samples, dtypes=_LA, call=_la("cholesky"), tol=_LA_TOL)


def _qr_samples(rng, dt):
    r = lambda s, **k: _rect(rng, s, dt, **k)  # noqa: E731
    return [Sample((r((4, 3)),), desc="tall"), Sample((r((3, 3)),), desc="square"),
            Sample((r((3, 5)),), desc="wide"), Sample((r((2, 4, 3)),), desc="stack"),
            Sample((r((3, 5)),), {"mode": "complete"}, "complete (wide: unique)"),
            Sample((r((4, 3)),), {"mode": "r"}, "r"),
            Sample((r((2, 3, 4)),), {"mode": "r"}, "r, wide stack"),
            Sample((r((4, 3), noncontig=True),), desc="noncontig")]


# 'complete' on a tall matrix (Q's extra columns are not unique) and 'raw' (no gradient) are
# checked in test_linalg.py
record("linalg.qr", _qr_samples, dtypes=_LA, call=_la("qr"), tol=_LA_TOL)


def _eigh_samples(rng, dt):
    y = lambda s: _sym(rng, s, dt)  # noqa: E731
    return [Sample((y((3, 3)),)), Sample((y((2, 4, 4)),), desc="stack"),
            Sample((y((3, 3)),), {"UPLO": "U"}, "upper"),
            Sample((_base(rng, (3, 3), dt).astype(dt),), desc="not symmetric: lower read"),
            Sample((_base(rng, (3, 3), dt).astype(dt),), {"UPLO": "u"},
                   "not symmetric: upper read"),
            Sample((np.ascontiguousarray(y((4, 4)).T).T,), desc="noncontig")]


record("linalg.eigh", _eigh_samples, dtypes=_LA, call=_la("eigh"), tol=_LA_TOL,
       grad_tol=(1e-5, 1e-7), device_canon=eigh_canon)
record("linalg.eigvalsh", _eigh_samples, dtypes=_LA, call=_la("eigvalsh"), tol=_LA_TOL,
       grad_tol=(1e-5, 1e-7))


def _eig_samples(rng, dt):
    return [Sample((_rotating(rng, (3, 3), dt),)), Sample((_rotating(rng, (2, 4, 4), dt),),
                                                          desc="stack"),
            Sample((_rotating(rng, (2, 2), dt),)),
            Sample((np.ascontiguousarray(_rotating(rng, (3, 3), dt).T).T,), desc="noncontig")]


# complex results are split into real and imaginary parts, so the gradient checks (which look
# at real outputs) see them; real eigenvalues (real results) are checked in test_linalg.py
record("linalg.eig", _eig_samples, dtypes=FLOATS + (C128,), call=_split_call("eig"),
       tol=_LA_TOL, grad_tol=(1e-5, 1e-7), device_canon=eig_canon)
record("linalg.eigvals", _eig_samples, dtypes=FLOATS + (C128,), call=_split_call("eigvals"),
       tol=_LA_TOL, grad_tol=(1e-5, 1e-7))


def _svd_samples(rng, dt):
    r = lambda s, **k: _rect(rng, s, dt, **k)  # noqa: E731
    red = {"full_matrices": False}
    return [Sample((r((3, 3)),), desc="square (full_matrices)"),
            Sample((r((4, 3)),), red, "tall"), Sample((r((3, 5)),), red, "wide"),
            Sample((r((2, 4, 3)),), red, "stack"),
            Sample((r((4, 3)),), {"compute_uv": False}, "values only"),
            Sample((_sym(rng, (3, 3), dt),), {"hermitian": True}, "hermitian"),
            Sample((_sym(rng, (3, 3), dt),), {"hermitian": True, "compute_uv": False},
                   "hermitian values"),
            Sample((r((4, 3), noncontig=True),), red, "noncontig")]


# full_matrices=True on a non-square matrix (extra columns not unique) is in test_linalg.py
record("linalg.svd", _svd_samples, dtypes=_LA, call=_la("svd"), tol=_LA_TOL,
       grad_tol=(1e-5, 1e-7), device_canon=svd_canon, **_SVD_NONFINITE).paths_nonfinite_error = np.linalg.LinAlgError
record("linalg.svdvals", lambda rng, dt: [
    Sample((_rect(rng, s, dt),)) for s in ((4, 3), (3, 5), (2, 3, 3))] + [
    Sample((_rect(rng, (4, 3), dt, noncontig=True),), desc="noncontig")],
    dtypes=_LA, call=_la("svdvals"), tol=_LA_TOL, grad_tol=(1e-5, 1e-7))

# ---- norms, rank, condition -------------------------------------------------------------
_INF = float("inf")


def _norm_samples(rng, dt):
    v = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    nz = lambda s: values(rng, s, dt, "nonzero")  # noqa: E731
    out = [Sample((v((5,)),), desc="vector"), Sample((v((3, 4)),), desc="frobenius"),
           Sample((v((2, 3, 4)),), desc="all axes"),
           Sample((v((3, 4)),), {"axis": 1}, "rows")]
    for o in (_INF, -_INF, 0, 1, 2, 3):
        out.append(Sample((nz((5,)), o), desc="vector ord"))
    out.append(Sample((nz((2, 5)), -1), {"axis": -1}, "vector ord -1"))
    out.append(Sample((nz((5,)), 0.5), desc="vector ord 0.5"))
    for o in (None, "fro", "nuc", 1, -1, 2, -2, _INF, -_INF):
        out.append(Sample((v((3, 4)), o), desc="matrix ord"))
    out += [Sample((v((2, 3, 4)),), {"axis": (0, 2)}, "matrix axes"),
            Sample((v((2, 3, 4)), 2), {"axis": (2, 1), "keepdims": True}, "keepdims"),
            Sample((v((2, 3, 4)),), {"axis": 1, "keepdims": True}, "vector keepdims"),
            Sample((v((3, 4)),), {"keepdims": True}, "all keepdims"),
            Sample((np.ascontiguousarray(v((4, 3)).T).T,), desc="noncontig"),
            Sample((np.zeros((4,), dt),), desc="zero vector (gradient 0)"),
            Sample((np.zeros((2, 3), dt), "fro"), desc="zero matrix (gradient 0)"),
            Sample((np.zeros((2, 3), dt), None, 1), desc="zero rows (gradient 0)")]
    return out


record("linalg.norm", _norm_samples, dtypes=_LA, call=_la("norm"), tol=_LA_TOL,
       grad_tol=(1e-5, 1e-7))


def _matrix_norm_samples(rng, dt):
    v = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    return [Sample((v((3, 4)),)), Sample((v((2, 3, 4)),), {"keepdims": True}),
            Sample((v((2, 3, 4)),), {"ord": "nuc"}), Sample((v((3, 4)),), {"ord": 2}),
            Sample((v((3, 4)),), {"ord": -_INF}), Sample((v((2, 3, 4)),), {"ord": 1})]


record("linalg.matrix_norm", _matrix_norm_samples, dtypes=_LA, call=_la("matrix_norm"),
       tol=_LA_TOL, grad_tol=(1e-5, 1e-7))


def _vector_norm_samples(rng, dt):
    v = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    nz = lambda s: values(rng, s, dt, "nonzero")  # noqa: E731
    return [Sample((v((5,)),)), Sample((v((2, 3, 4)),), desc="flattened"),
            Sample((v((2, 3, 4)),), {"axis": 1}), Sample((v((2, 3, 4)),), {"axis": (0, 2)}),
            Sample((v((2, 3, 4)),), {"axis": (2, 0), "keepdims": True}),
            Sample((v((2, 3, 4)),), {"keepdims": True}),
            Sample((nz((3, 4)),), {"ord": 3, "axis": -1}),
            Sample((nz((3, 4)),), {"ord": _INF}), Sample((nz((3, 4)),), {"ord": 1})]


record("linalg.vector_norm", _vector_norm_samples, dtypes=_LA, call=_la("vector_norm"),
       tol=_LA_TOL, grad_tol=(1e-5, 1e-7))


def _cond_samples(rng, dt):
    g = lambda s: _general(rng, s, dt)  # noqa: E731
    return [Sample((g((3, 3)),)), Sample((g((2, 3, 3)),), desc="stack"),
            Sample((_rect(rng, (4, 3), dt),), desc="rectangular"),
            Sample((g((3, 3)), -2)), Sample((g((3, 3)), "fro")), Sample((g((3, 3)), 1)),
            Sample((g((2, 3, 3)), -_INF)), Sample((g((3, 3)), "nuc"))]


record("linalg.cond", _cond_samples, dtypes=_LA, call=_la("cond"), tol=_LA_TOL,
       grad_tol=(1e-5, 1e-7))


def _rank_samples(rng, dt):
    low = (values(rng, (5, 2), F64) @ values(rng, (2, 4), F64)).astype(dt)
    return [Sample((_rect(rng, (4, 3), dt),)), Sample((low,), desc="rank 2"),
            Sample((np.stack([low[:4], _rect(rng, (4, 4), dt)]),), desc="stack"),
            Sample((low, 1e-3), desc="tol"), Sample((low,), {"rtol": 1e-3}, "rtol"),
            Sample((_spd(rng, (3, 3), dt),), {"hermitian": True}, "hermitian")]


record("linalg.matrix_rank", _rank_samples, dtypes=_LA, call=_la("matrix_rank"),
       diff_args=(), grad_reason="integer result (a count of singular values)")


def _power_samples(rng, dt):
    g = lambda s: _general(rng, s, dt) if dt.kind in "fc" else _base(  # noqa: E731
        rng, s, dt).astype(dt)
    out = [Sample((g((3, 3)), n), desc="power") for n in (0, 1, 2, 3, 5)]
    out += [Sample((g((2, 3, 3)), 4), desc="stack"),
            Sample((np.ascontiguousarray(g((3, 3)).T).T, 6), desc="noncontig")]
    if dt.kind in "fc":
        out += [Sample((g((3, 3)), -1), desc="inverse"), Sample((g((2, 3, 3)), -3))]
    return out


record("linalg.matrix_power", _power_samples, dtypes=_LA, call=_la("matrix_power"),
       tol={F32: (1e-4, 1e-5), F64: (1e-10, 1e-10)})

# ---- products and shape helpers (Array API names) -----------------------------------------


def _multi_dot_samples(rng, dt):
    v = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    return [Sample((v((3, 4)), v((4, 2)))), Sample((v((3, 4)), v((4, 5)), v((5, 2)))),
            Sample((v((2, 10)), v((10, 3)), v((3, 1)))),
            Sample((v((4,)), v((4, 5)), v((5, 3)), v((3,))), desc="vectors at the ends"),
            Sample((v((2, 3)), v((3, 6)), v((6, 2)), v((2, 5)), v((5,))), desc="chain")]


record("linalg.multi_dot", _multi_dot_samples, dtypes=_LA,
       call=lambda m, *a, **k: m.linalg.multi_dot(list(a), **k), tol=_LA_TOL)


def _prod(fn):
    def gen(rng, dt):
        return fn(lambda s: _base(rng, s, dt).astype(dt))
    return gen


record("linalg.matmul", _prod(lambda v: [
    Sample((v((3, 4)), v((4, 2)))), Sample((v((4,)), v((2, 4, 3)))),
    Sample((v((2, 3, 4)), v((4,))))]), dtypes=_LA, call=_la("matmul"), tol=_LA_TOL)
record("linalg.outer", _prod(lambda v: [Sample((v((4,)), v((3,)))), Sample((v((0,)), v((2,))))]),
       dtypes=_LA, call=_la("outer"), tol=_LA_TOL)
record("linalg.tensordot", _prod(lambda v: [
    Sample((v((2, 3, 4)), v((3, 4, 5)))), Sample((v((2, 3)), v((3, 4))), {"axes": 1}),
    Sample((v((2, 3, 4)), v((4, 3, 5))), {"axes": ([1, 2], [1, 0])})]), dtypes=_LA,
       call=_la("tensordot"), tol=_LA_TOL)
_VECDOT = _prod(lambda v: [
    Sample((v((3,)), v((3,)))), Sample((v((2, 3)), v((3,)))), Sample((v((4, 1, 3)), v((2, 3)))),
    Sample((v((3, 2)), v((3, 1))), {"axis": 0}), Sample((v((0,)), v((0,))))])
record("linalg.vecdot", _VECDOT, dtypes=_LA, call=_la("vecdot"), tol=_LA_TOL)
record("linalg.matrix_transpose", _prod(lambda v: [Sample((v((2, 3)),)), Sample((v((2, 3, 4)),))]),
       dtypes=_LA, call=_la("matrix_transpose"))
_CROSS3 = _prod(lambda v: [
    Sample((v((3,)), v((3,)))), Sample((v((2, 3)), v((3,)))), Sample((v((4, 1, 3)), v((2, 3)))),
    Sample((v((3, 2)), v((3, 2))), {"axis": 0})])
_VLEN = "the vector length (2 or 3) must be known while tracing"
record("linalg.cross", _CROSS3, dtypes=_LA, call=_la("cross"), tol=_LA_TOL,
       unknown_dims=lambda s: _VLEN)
record("cross", lambda rng, dt: _CROSS3(rng, dt) + _prod(lambda v: [
    Sample((v((3, 2)), v((2, 3))), {"axisa": 0}, "axisa"),
    Sample((v((2, 3)), v((2, 3))), {"axisc": 0}, "axisc")])(rng, dt), dtypes=_LA, tol=_LA_TOL,
       unknown_dims=lambda s: _VLEN)


def _diag_samples(rng, dt):
    v = lambda s: _base(rng, s, dt).astype(dt)  # noqa: E731
    return [Sample((v((3, 3)),)), Sample((v((3, 4)), 1)), Sample((v((4, 3)), -2)),
            Sample((v((2, 3, 4)), 0, 1, 2)), Sample((v((2, 3, 4)), 1, 2, 0)),
            Sample((v((3, 3)), 5), desc="offset past the end"),
            Sample((np.ascontiguousarray(v((4, 3)).T).T,), desc="noncontig")]


_DIAG_DT = _LA + (BOOL,)
record("diagonal", _diag_samples, dtypes=_DIAG_DT)
record("trace", lambda rng, dt: _diag_samples(rng, dt) + [
    Sample((_base(rng, (3, 3), dt).astype(dt),), {"dtype": np.float32}, "dtype")],
    dtypes=_DIAG_DT)
record("linalg.diagonal", _prod(lambda v: [
    Sample((v((3, 3)),)), Sample((v((2, 3, 4)),), {"offset": 1}),
    Sample((v((2, 4, 3)),), {"offset": -1})]), dtypes=_LA, call=_la("diagonal"))
record("linalg.trace", _prod(lambda v: [
    Sample((v((3, 3)),)), Sample((v((2, 3, 4)),), {"offset": 1}),
    Sample((v((2, 3, 3)),), {"dtype": np.float64})]), dtypes=_LA, call=_la("trace"))
record("kron", _prod(lambda v: [
    Sample((v((2, 3)), v((2, 2)))), Sample((v((3,)), v((2, 2)))), Sample((v(()), v((2,)))),
    Sample((v((2, 1, 2)), v((3, 2)))), Sample((np.ascontiguousarray(v((3, 2)).T).T, v((2,))))]),
       dtypes=_LA, tol=_LA_TOL,
       unknown_dims=lambda s: "the result's shape is a product of sizes: needs them")
