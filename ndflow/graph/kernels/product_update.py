"""The kernel of a product update, `w - s * (a @ b)` as one BLAS call (fast math only).

An SGD step's update of a weight matrix, `w.assign_sub(lr * (x.T @ dh))`, is a matrix product
whose result is scaled and subtracted once. NumPy's program writes the product, reads it again
to scale it and once more to subtract it. BLAS's gemm does all of it in its own pass over the
result (`C = alpha * A @ B + beta * C` with alpha = -s, beta = 1), writing into w's buffer when
the compiled step may (the Variable's update in place, `memory.variable_updates`). Its
rounding differs from NumPy's (gemm adds alpha * product into C with one fused multiply-add
where NumPy rounds the product, the scaled product and the difference each once), so the
compiler makes this node only under the fast-math contract (`updates.product_updates`), within
`contract.product_update_bound`.

Which gemm (`gemm_for`, found once per process):
- NumPy's own BLAS, the library `np.matmul` calls (NumPy's wheels bundle an ILP64 OpenBLAS
  whose CBLAS entry points carry the `scipy_` prefix and `64_` suffix; named by
  `np.show_config`), through ctypes: the same kernels as NumPy's product, the same threads;
- else SciPy's BLAS wrappers (`scipy.linalg.blas`, its own OpenBLAS; ~8% slower than
  NumPy's for the classifier's batch-256 product here);
- else none, and the kernel runs NumPy's three operations, with NumPy's bits: the graph is
  the same either way.
Each library is checked on a small product against NumPy's before its first use. A call whose
values gemm would treat otherwise than NumPy (s zero or not finite: gemm skips the product for
alpha = 0; an empty dimension; operands sharing memory with the result) runs NumPy's three
operations too, and so does a call under an error state that raises or calls (gemm sets no
floating-point flags; like tier 1's loops it skips the 'warn' mode's RuntimeWarnings).
"""
import ctypes
import glob
import math
import os

import numpy as np

from .pool import errstate_flags

_GEMM = {}          # dtype -> gemm(alpha, a, b, out) or None, once per process
PROVIDERS = ("numpy", "scipy")    # in the order tried; tests may narrow it
COUNTS = {"numpy": 0, "scipy": 0, "ops": 0}   # calls per route, for the tests


def _numpy_blas():
    """NumPy's bundled ILP64 OpenBLAS as a ctypes library, or None where NumPy was built
    otherwise (MKL, Accelerate, a system BLAS) or the library is not found unambiguously."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:       # noqa: BLE001 - an unknown build reports otherwise: not ours
        return None
    if blas.get("name") != "scipy-openblas" or \
            "USE64BITINT" not in str(blas.get("openblas configuration", "")):
        return None
    root = os.path.dirname(np.__file__)
    found = [p for d in (os.path.join(os.path.dirname(root), "numpy.libs"),
                         os.path.join(root, ".dylibs"))
             for p in glob.glob(os.path.join(d, "*scipy_openblas64*"))]
    if len(found) != 1:
        return None
    try:
        return ctypes.CDLL(found[0])
    except OSError:
        return None


_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def _operand(m):
    """(transpose flag, leading dimension, array) for row-major CBLAS without a copy."""
    if m.flags.c_contiguous:
        return _NO_TRANS, max(1, m.shape[1]), m
    if m.flags.f_contiguous:
        return _TRANS, max(1, m.shape[0]), m
    m = np.ascontiguousarray(m)
    return _NO_TRANS, max(1, m.shape[1]), m


def _cblas(lib, dtype):
    name = {"float32": "scipy_cblas_sgemm64_", "float64": "scipy_cblas_dgemm64_"}[dtype.name]
    f = getattr(lib, name, None)
    if f is None:
        return None
    i, s, p = ctypes.c_int, (ctypes.c_float if dtype == np.float32 else ctypes.c_double), \
        ctypes.c_void_p
    n = ctypes.c_int64
    f.argtypes = [i, i, i, n, n, n, s, p, n, p, n, s, p, n]
    f.restype = None

    def gemm(alpha, a, b, out):
        ta, lda, a = _operand(a)
        tb, ldb, b = _operand(b)
        m, k = a.shape
        f(_ROW_MAJOR, ta, tb, m, out.shape[1], k, alpha, a.ctypes.data, lda, b.ctypes.data,
          ldb, 1.0, out.ctypes.data, max(1, out.shape[1]))
    return gemm


def _scipy(dtype):
    try:
        from scipy.linalg import blas     # optional, heavy: loaded on first use
    except ImportError:
        return None
    f = {"float32": blas.sgemm, "float64": blas.dgemm}[dtype.name]

    def fortran(m):      # gemm reads column-major arrays: m.T of a row-major m is one
        if m.flags.c_contiguous:
            return m.T, 0
        if m.flags.f_contiguous:
            return m, 1
        return np.ascontiguousarray(m).T, 0

    def gemm(alpha, a, b, out):
        # out.T = b.T @ a.T * alpha + out.T: the row-major result as column-major gemm sees it
        (fa, ta), (fb, tb) = fortran(b), fortran(a)
        r = f(alpha, fa, fb, beta=1.0, c=out.T, trans_a=ta, trans_b=tb, overwrite_c=1)
        if r.ctypes.data != out.ctypes.data:      # the wrapper copied c after all
            np.copyto(out.T, r)
    return gemm


def _checked(gemm, dtype):
    """`gemm` if it computes a small product update as NumPy does (within the contract's
    bound, transposed operand included), else None."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(dtype).T      # column-major (7, 5)
    b = rng.standard_normal((5, 3)).astype(dtype)
    w = rng.standard_normal((7, 3)).astype(dtype)
    got = w.copy()
    try:
        gemm(-0.5, a, b, got)
    except Exception:         # noqa: BLE001 - a library that fails here is not used
        return None
    ref = w - dtype.type(0.5) * (a @ b)
    bound = 16 * np.finfo(dtype).eps * (np.abs(a) @ np.abs(b) + np.abs(w))
    return gemm if np.all(np.abs(got - ref) <= bound) else None


def gemm_for(dtype):
    """(provider name, gemm(alpha, a, b, out): out += alpha * a @ b) for float32/float64,
    or (None, None) where no BLAS library is usable."""
    dtype = np.dtype(dtype)
    if (dtype, PROVIDERS) not in _GEMM:
        got = (None, None)
        for name in PROVIDERS:
            lib = _numpy_blas() if name == "numpy" else None
            g = (_cblas(lib, dtype) if lib is not None else None) if name == "numpy" \
                else _scipy(dtype)
            g = g and _checked(g, dtype)
            if g is not None:
                got = (name, g)
                break
        _GEMM[(dtype, PROVIDERS)] = got
    return _GEMM[(dtype, PROVIDERS)]


class ProductUpdate:
    """impl of the product update node: `(w, a, b, s[, donor]) -> w - s * (a @ b)`, a, b and
    w 2-D of one float dtype, s 0-d; written into `donor` (w's own buffer, offered by the
    Variable when nothing else refers to it) where it is given and fits, else into a fresh
    array. `writes_over`: result 0 may be written over operand 0 (the memory planner's
    question, `memory.variable_updates`): gemm reads each element of C before writing it."""
    ndflow_reads_only = True
    writes_over = {0: 0}

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    def _fits(self, d):
        return type(d) is np.ndarray and d.shape == self.shape and d.dtype == self.dtype \
            and d.flags.c_contiguous and d.flags.writeable

    def __call__(self, w, a, b, s, donor=None):
        out = donor if donor is not None and self._fits(donor) else None
        name, gemm = gemm_for(self.dtype) if type(w) is np.ndarray and \
            type(a) is np.ndarray and type(b) is np.ndarray else (None, None)
        alpha = float(s)
        if gemm is None or alpha == 0.0 or not math.isfinite(alpha) or 0 in a.shape \
                or 0 in b.shape or a.dtype != self.dtype or b.dtype != self.dtype \
                or not errstate_flags()[0] or (out is not None and (np.may_share_memory(out, a)
                                         or np.may_share_memory(out, b))):
            return self._numpy(w, a, b, s, out)
        if out is None:
            out = np.array(w, dtype=self.dtype, order="C")
        elif out is not w and out.ctypes.data != w.ctypes.data:
            np.copyto(out, w)
        gemm(-alpha, a, b, out)
        COUNTS[name] += 1
        return out

    def _numpy(self, w, a, b, s, out):
        COUNTS["ops"] += 1
        if type(a) is not np.ndarray or type(b) is not np.ndarray or type(w) is not np.ndarray:
            return w - (a @ b) * s       # a device's arrays: its own three operations
        g = np.matmul(a, b)
        np.multiply(g, s, out=g)
        if out is not None and not (np.may_share_memory(out, a) or np.may_share_memory(out, b)):
            return np.subtract(w, g, out=out)
        return np.subtract(w, g)
