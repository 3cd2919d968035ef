"""Indexing routines: diagonals and triangles, index arrays (indices, ix_, meshgrid,
ravel/unravel_index, *_indices), choosing and selecting (choose, compress, extract, select),
and the in-place writers (copyto, put, put_along_axis, place, putmask, fill_diagonal).

The writers follow `x[key] = v`: eagerly with no tape they write into the array's buffer (views
see it, as in NumPy); under a tape or a trace they rebind the array to an updated value, so the
gradient flows to the values written and to the elements kept.
"""
import operator

import numpy as np

from ..core.ndarray import ndarray, static_size as _static_size
from ..core.primitive import bind
from ..core import dtypes as _dt
from ..primitives import shape as S, elementwise as E, indexing as I
from ..primitives._util import norm_axis, legacy_0d
from ..graph.static import shape_of as _shape_of
from ._core import asarray, checked
from ._outarg import write_out as _write_out
from . import _axes as A
from .manipulation import reshape, ravel, expand_dims, broadcast_arrays, stack, concatenate
from ._interop import _why_not_host, NumPyFallbackError
from .creation import zeros, arange, ones
from .indexing import _nonzero1, nonzero, take_along_axis
from .math import where_, where_ as where, clip, floor_divide, remainder, logical_not
from .reductions import sum as sum_, prod
from .shaping import resize


def _zero(dtype):
    return asarray(0, dtype=dtype)


# ------------------------------------------------------------------ diagonals and triangles
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the (axis1, axis2) planes, appended as the last axis, as
    `numpy.diagonal` (a read-only view eagerly, as NumPy's)."""
    x = asarray(a)
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i, j = norm_axis(operator.index(axis1), x.ndim), norm_axis(operator.index(axis2), x.ndim)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    return bind(I.diagonal_p, x, offset=operator.index(offset), axis1=i, axis2=j)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal, as `numpy.trace` (integers sum in int64, as `sum`)."""
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def diag(v, k=0):
    """The k-th diagonal of a 2-d array, or a 2-d array with a 1-d array on its k-th diagonal,
    as `numpy.diag`."""
    x = asarray(v)
    k = operator.index(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    if k:
        x = _append_zeros(x, abs(k))
    i = A.iota(x, 0)
    r, c = reshape(i, (-1, 1)), reshape(i, (1, -1))
    # rows carry the values above the main diagonal, columns below it
    vals = reshape(x, (-1, 1)) if k >= 0 else reshape(x, (1, -1))
    return where((c - r) == k, vals, _zero(x.dtype))


def _append_zeros(x, k):
    return concatenate([x, zeros(k, x.dtype)])


def diagflat(v, k=0):
    """A 2-d array with the flattened input on its k-th diagonal, as `numpy.diagflat`."""
    return diag(ravel(asarray(v)), k)


def tri(N, M=None, k=0, dtype=float, *, like=None):
    """Ones at and below the k-th diagonal, as `numpy.tri`."""
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    m = reshape(arange(N), (-1, 1)) + operator.index(k) >= reshape(arange(M), (1, -1))
    d = _dt.canonical(dtype)
    return m if d == np.bool_ else m.astype(d)


def _triangle(m, k, lower):
    x = asarray(m)
    if x.ndim == 0:
        raise ValueError(f"{'tril' if lower else 'triu'} needs an array of at least one "
                         f"dimension")
    k = operator.index(k)
    if x.ndim == 1:
        r = A.iota(x, 0)
        c = r
        r = reshape(r, (-1, 1))
        c = reshape(c, (1, -1))
    else:
        r = A.along(A.iota(x, x.ndim - 2), 0, 2)
        c = A.iota(x, x.ndim - 1)
    mask = (c - r <= k) if lower else (c - r >= k)
    return where(mask, x, _zero(x.dtype))


def tril(m, k=0):
    """Zeros above the k-th diagonal of the last two axes, as `numpy.tril` (a 1-d input is
    broadcast to a square, as NumPy does)."""
    return _triangle(m, k, True)


def triu(m, k=0):
    """Zeros below the k-th diagonal of the last two axes, as `numpy.triu`."""
    return _triangle(m, k, False)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix, as `numpy.vander`: columns are powers of x, built by repeated
    multiplication as NumPy does (so the gradient is finite at 0). The dtype is
    promote_types(x.dtype, int), as NumPy's."""
    v = asarray(x)
    if v.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    if N is None:
        N = v.shape[0]
        if N is None:
            raise ValueError("vander: N defaults to len(x), unknown while tracing; pass N")
    N = operator.index(N)
    dt = np.promote_types(v.dtype, np.int_)
    v = v.astype(dt) if v.dtype != dt else v
    cols = []
    if N > 0:
        cols.append(bind(E.ones_like_p, v))
    if N > 1:
        cols.append(v)
    for _ in range(N - 2):
        cols.append(cols[-1] * v)
    if not increasing:
        cols.reverse()
    if not cols:
        return A.slice_axis(expand_dims(v, 1), 1, 0, 0)       # (len(x), 0)
    return stack(cols, axis=1)


# ------------------------------------------------------------------ index arrays
def indices(dimensions, dtype=int, sparse=False):
    """Arrays of the indices of a grid, as `numpy.indices`."""
    dims = tuple(operator.index(d) for d in dimensions)
    n = len(dims)
    d = _dt.canonical(dtype)
    out = []
    for i, s in enumerate(dims):
        a = reshape(arange(s, dtype=d), (1,) * i + (s,) + (1,) * (n - i - 1))
        out.append(a if sparse else bind(S.broadcast_to_p, a, shape=dims))
    if sparse:
        return tuple(out)
    if not out:
        return zeros((0,), d)
    return stack(out)


def ix_(*args):
    """Open-mesh index arrays from 1-d sequences, as `numpy.ix_` (booleans become the
    positions of their True values)."""
    out = []
    nd = len(args)
    for k, a in enumerate(args):
        new = asarray(a)
        if new.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if _static_size(new) == 0 and not isinstance(a, ndarray) and not isinstance(a, np.ndarray):
            new = new.astype(np.intp)
        if new.dtype == np.bool_:
            new = _nonzero1(new, "ix_")
        out.append(reshape(new, (1,) * k + (-1,) + (1,) * (nd - k - 1)))
    return tuple(out)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors, as `numpy.meshgrid` (a tuple)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    s0 = (1,) * nd
    out = [reshape(asarray(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = reshape(out[0], (1, -1) + s0[2:])
        out[1] = reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = list(broadcast_arrays(*out))
    if copy:
        out = [bind(E.copy_p, o) for o in out]
    return tuple(out)


def _int_index(v, name="only int indices permitted"):
    a = asarray(v)
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "b":
            return a.astype(np.intp)
        raise TypeError(name)
    return a if a.dtype == np.intp else a.astype(np.intp)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices from a tuple of coordinate arrays, as `numpy.ravel_multi_index` (mode
    'raise' checks the bounds when the indices are concrete)."""
    dims = tuple(operator.index(d) for d in ((dims,) if np.ndim(dims) == 0 else dims))
    idx = [_int_index(i) for i in multi_index]
    if len(idx) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = (A.clipmode(mode),) * len(dims) if not isinstance(mode, (tuple, list)) \
        else tuple(A.clipmode(m) for m in mode)
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    strides = [1] * len(dims)
    rng = range(len(dims) - 2, -1, -1) if order == "C" else range(1, len(dims))
    for k in rng:
        strides[k] = strides[k + 1] * dims[k + 1] if order == "C" else strides[k - 1] * dims[k - 1]
    out = None
    for i, d, m, st in zip(idx, dims, modes, strides):
        if m == "wrap":
            i = i % d
        elif m == "clip":
            i = clip(i, 0, d - 1)
        else:
            i = checked(i, (i < 0) | (i >= d), ValueError, "invalid entry in coordinates array")
        term = i * st if st != 1 else i
        out = term if out is None else out + term
    return out


def unravel_index(indices, shape, order="C"):
    """Coordinate arrays from flat indices, as `numpy.unravel_index` (bounds checked when the
    indices are concrete)."""
    shape = tuple(operator.index(d) for d in ((shape,) if np.ndim(shape) == 0 else shape))
    idx = _int_index(indices)
    size = int(np.prod(shape, dtype=np.int64))
    if idx._t is None and idx.size:
        v = idx.numpy()
        bad = v[(v < 0) | (v >= size)]
        if bad.size:
            raise ValueError(f"index {bad.flat[0]} is out of bounds for array with size {size}")
    elif idx._t is not None:
        idx = checked(idx, (idx < 0) | (idx >= size), ValueError,
                      f"an index is out of bounds for array with size {size}")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    out = [None] * len(shape)
    rest = idx
    axes = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for k in axes:
        d = shape[k]
        out[k] = remainder(rest, d) if d else rest
        rest = floor_divide(rest, d) if d else rest
    return tuple(out)


def diag_indices(n, ndim=2):
    """The indices of the main diagonal of an (n, ..., n) array, as `numpy.diag_indices`."""
    idx = arange(operator.index(n))
    return (idx,) * operator.index(ndim)


def diag_indices_from(arr):
    """`diag_indices` for an array's shape (all sizes equal, at least 2-d)."""
    a = asarray(arr)
    if not a.ndim >= 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(a.shape[0], a.ndim)


def _tri_indices(mask):
    return nonzero(mask)


def tril_indices(n, k=0, m=None):
    """Indices of the lower triangle of an (n, m) array, as `numpy.tril_indices`."""
    return _tri_indices(tri(n, m, k=k, dtype=bool))


def triu_indices(n, k=0, m=None):
    """Indices of the upper triangle of an (n, m) array, as `numpy.triu_indices`."""
    return _tri_indices(logical_not(tri(n, m, k=operator.index(k) - 1, dtype=bool)))


def tril_indices_from(arr, k=0):
    """`tril_indices` for a 2-d array's shape, as `numpy.tril_indices_from`."""
    a = asarray(arr)
    if a.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(a.shape[-2], k=k, m=a.shape[-1])


def triu_indices_from(arr, k=0):
    """`triu_indices` for a 2-d array's shape, as `numpy.triu_indices_from`."""
    a = asarray(arr)
    if a.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(a.shape[-2], k=k, m=a.shape[-1])


def mask_indices(n, mask_func, k=0):
    """Indices where `mask_func(ones((n, n)), k)` is non-zero, as `numpy.mask_indices`."""
    a = asarray(mask_func(ones((n, n), int), k))
    return nonzero(a != 0)


# ------------------------------------------------------------------ choosing and selecting
def choose(a, choices, out=None, mode="raise"):
    """Pick from `choices[a[i]][i]` with everything broadcast, as `numpy.choose` (one gather;
    differentiable in the choices)."""
    mode = A.clipmode(mode)
    idx = asarray(a)
    if idx.dtype.kind not in "iub":
        raise TypeError(f"Cannot cast array data from {idx.dtype!r} to dtype('int64') according "
                        f"to the rule 'safe'")
    chs = [asarray(c) for c in (choices if not isinstance(choices, ndarray) else list(choices))]
    n = len(chs)
    d = _dt.result_type(*chs)
    chs = [c if c.dtype == d else c.astype(d) for c in chs]
    bs = broadcast_arrays(idx, *chs)
    idx, chs = bs[0], bs[1:]
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = clip(idx, 0, n - 1)
    else:
        idx = checked(idx, (idx < 0) | (idx >= n), ValueError, "invalid entry in choice array")
    r = take_along_axis(stack(chs), expand_dims(idx.astype(np.intp), 0), axis=0)
    r = bind(S.squeeze_p, r, axes=(0,))
    if out is not None and isinstance(out, ndarray) and tuple(out.shape) != tuple(r.shape):
        raise TypeError("choose: invalid shape for output array.")      # (NumPy's type)
    return _write_out(r, out)


def compress(condition, a, axis=None, out=None):
    """Slices along an axis where `condition` is true, as `numpy.compress` (a shorter
    condition selects from the start)."""
    c = asarray(condition)
    if c.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    x = asarray(a)
    if axis is None or legacy_0d(axis, x.ndim):      # NumPy's legacy 0-d rule
        x = ravel(x)
        axis = 0
    axis = norm_axis(operator.index(axis), x.ndim)
    idx = _nonzero1(c if c.dtype == np.bool_ else c != 0, "compress")
    n = x.shape[axis]
    if idx._t is None and n is not None and idx.size and int(idx.numpy().max()) >= n:
        raise IndexError(f"index {int(idx.numpy().max())} is out of bounds for axis {axis} with "
                         f"size {n}")
    return _write_out(A.gather(x, idx, axis), out, casting="out_safe")


def extract(condition, arr):
    """The elements where `condition` is non-zero, flattened, as `numpy.extract`."""
    c = ravel(asarray(condition))
    return A.gather(ravel(asarray(arr)), _nonzero1(c if c.dtype == np.bool_ else c != 0,
                                                   "extract"), 0)


def select(condlist, choicelist, default=0):
    """Elements from `choicelist` where the first matching condition holds, as
    `numpy.select` (a chain of `where`, differentiable in the choices)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    chs = [c if type(c) in _dt.PY_SCALARS else asarray(c) for c in choicelist]
    dflt = default if type(default) in _dt.PY_SCALARS else asarray(default)
    try:
        d = _dt.result_type(*chs, dflt)
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    conds = [asarray(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = asarray(dflt, dtype=d)
    for c, v in zip(reversed(conds), reversed(chs)):
        result = where(c, asarray(v, dtype=d), result)
    return result


# ------------------------------------------------------------------ writers (in place)
def _check_cast(src, dst_dtype, casting, scalar):
    """NumPy's casting check for copyto (Python scalars are weak: any value of a kind that
    fits casts; out-of-range integers overflow)."""
    if casting == "unsafe":
        return
    t = type(src)
    if t in _dt.PY_SCALARS:
        if t is int and dst_dtype.kind in "iu":
            info = np.iinfo(dst_dtype)
            if not info.min <= src <= info.max:
                raise OverflowError(f"Python integer {src} out of bounds for {dst_dtype}")
            return
        if t is bool or (t is int and dst_dtype.kind in "fc") or \
                (t is float and dst_dtype.kind in "fc") or (t is complex and dst_dtype.kind == "c"):
            return
        sd = np.dtype({int: np.int64, float: np.float64, complex: np.complex128}[t])
    else:
        sd = src.dtype
    if not np.can_cast(sd, dst_dtype, casting):
        what = "scalar" if scalar else "array data"
        raise TypeError(f"Cannot cast {what} from {sd!r} to {dst_dtype!r} according to the rule "
                        f"'{casting}'")


def _into_numpy(name, target, *rest, **kw):
    """`numpy.<name>` writing into the NumPy array `target`, as NumPy does, with ndflow
    operands as their values. Operands a tape watches or a trace holds cannot flow into a
    NumPy buffer (it has no gradient and no place in a graph): refused by name."""
    why = _why_not_host(rest, kw)
    if why:
        raise NumPyFallbackError(f"{name} into a NumPy array: {why}; write into an ndflow "
                                 f"array instead (tnp.asarray(target))")
    host = lambda x: x.numpy() if isinstance(x, ndarray) else x  # noqa: E731
    return getattr(np, name)(target, *[host(r) for r in rest],
                             **{k: host(v) for k, v in kw.items()})


def copyto(dst, src, casting="same_kind", where=True):
    """Copy values into `dst` (broadcasting `src`), where `where` is true, as `numpy.copyto`."""
    if isinstance(dst, np.ndarray):
        return _into_numpy("copyto", dst, src, casting=casting, where=where)
    if not isinstance(dst, ndarray):
        raise TypeError("copyto() argument 1 must be an ndflow array")
    s = src if type(src) in _dt.PY_SCALARS else asarray(src)
    _check_cast(s, dst.dtype, casting, isinstance(src, np.generic) or type(src) in _dt.PY_SCALARS)
    v = asarray(s, dtype=dst.dtype) if type(s) in _dt.PY_SCALARS else \
        (s if s.dtype == dst.dtype else s.astype(dst.dtype))
    if None not in v.shape and None not in dst.shape:
        try:
            ok = np.broadcast_shapes(tuple(v.shape), tuple(dst.shape)) == tuple(dst.shape)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"could not broadcast input array from shape {tuple(v.shape)} into "
                             f"shape {tuple(dst.shape)}")
    if where is not True:
        v = where_(where, v, dst)
    dst[...] = v


def _flat_size(a):
    n = _static_size(a)
    if n is None:
        n = prod(_shape_of(a, out_type=np.int64))
    return n


def _write_flat(a, idx, vals):
    """a.flat[idx] = vals (idx in range), through item assignment."""
    if None not in a.shape:
        if a.ndim == 0:
            a[...] = vals[-1]
        else:
            a[unravel_index(idx, a.shape)] = vals
        return
    flat = ravel(a)
    new = bind(I.index_update_p, flat, vals, idx, spec=(("a",),))
    a[...] = A.reshape_to(new, a)


def put(a, ind, v, mode="raise"):
    """a.flat[ind] = v (v repeated to the length of ind), as `numpy.put`."""
    if isinstance(a, np.ndarray):
        return _into_numpy("put", a, ind, v, mode=mode)
    if not isinstance(a, ndarray):
        raise TypeError("put: first argument must be an ndflow array")
    mode = A.clipmode(mode)
    idx = ravel(_int_index(ind, "only integer indices may be used with put"))
    vals = ravel(asarray(v))
    if vals.shape[0] == 0 or idx.shape[0] == 0:
        return None
    size = _flat_size(a)
    if mode == "wrap":
        idx = idx % size
    elif mode == "clip":
        idx = clip(idx, 0, size - 1)
    else:
        if idx._t is None and not isinstance(size, ndarray):
            iv = idx.numpy()
            bad = iv[(iv < -size) | (iv >= size)]
            if bad.size:
                raise IndexError(f"index {bad[0]} is out of bounds for axis 0 with size {size}")
        idx = idx % size
    if vals.shape[0] != idx.shape[0]:
        n = vals.shape[0]
        if idx.shape[0] is not None and n is not None:
            vals = A.gather(vals, np.arange(idx.shape[0]) % n, 0)
        else:
            vals = A.gather(vals, A.iota(idx, 0) % A.dim(vals, 0), 0)
    if vals.dtype != a.dtype:
        vals = vals.astype(a.dtype)
    _write_flat(a, idx, vals)


def put_along_axis(arr, indices, values, axis):
    """arr[...along axis...] = values, the inverse of `take_along_axis`, as
    `numpy.put_along_axis`."""
    if isinstance(arr, np.ndarray):
        return _into_numpy("put_along_axis", arr, indices, values, axis)
    if not isinstance(arr, ndarray):
        raise TypeError("put_along_axis: first argument must be an ndflow array")
    idx = asarray(indices)
    if idx.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return put(arr, idx, values)
    axis = norm_axis(operator.index(axis), arr.ndim)
    if idx.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    key = []
    for i in range(arr.ndim):
        if i == axis:
            key.append(idx)
        else:
            shape = [1] * arr.ndim
            shape[i] = arr.shape[i] if arr.shape[i] is not None else -1
            key.append(reshape(A.iota(arr, i), shape) if arr.shape[i] is None else
                       reshape(arange(arr.shape[i]), shape))
    arr[tuple(key)] = values


def place(arr, mask, vals):
    """Write `vals` (cycled) into the positions where `mask` is true, in order, as
    `numpy.place`. The count of true values decides which values go where, so under
    vectorized_map it is an error."""
    if isinstance(arr, np.ndarray):
        return _into_numpy("place", arr, mask, vals)
    if not isinstance(arr, ndarray):
        raise TypeError(f"argument 1 must be an ndflow array, not {type(arr).__name__}")
    m = ravel(asarray(mask))
    if m.dtype != np.bool_:
        m = m != 0
    v = ravel(asarray(vals))
    if _static_size(arr) is not None and m.shape[0] is not None and m.shape[0] != _static_size(arr):
        raise ValueError("place: mask and data must be the same size")
    pos = _nonzero1(m, "place")
    k = pos.shape[0]
    if k == 0:
        return None
    if v.shape[0] == 0:
        if k is None:
            # NumPy raises if the mask has a true value: not checkable while tracing, and
            # with nothing to write the array stays as it is
            return None
        raise ValueError("Cannot insert from an empty array!")
    n = v.shape[0]
    if k is not None and n is not None:
        take = np.arange(k) % n
        vals_at = A.gather(v, take, 0) if not (k == n) else v
    else:
        vals_at = A.gather(v, A.iota(pos, 0) % A.dim(v, 0), 0)
    if vals_at.dtype != arr.dtype:
        vals_at = vals_at.astype(arr.dtype)
    _write_flat(arr, pos, vals_at)


def putmask(a, mask, values):
    """a.flat[n] = values[n % len(values)] where mask.flat[n], as `numpy.putmask` (a `where`
    with the values resized to the array; differentiable in both)."""
    if isinstance(a, np.ndarray):
        return _into_numpy("putmask", a, mask, values)
    if not isinstance(a, ndarray):
        raise TypeError(f"argument a of putmask must be an ndflow array, not "
                        f"{type(a).__name__}")
    m = asarray(mask)
    if m.dtype != np.bool_:
        m = m != 0
    if None not in (_static_size(a), _static_size(m)) and _static_size(m) != _static_size(a):
        raise ValueError("putmask: mask and data must be the same size")
    v = asarray(values)
    if _static_size(v) == 0:
        return None
    if a.ndim == 0:
        vv = ravel(v)[0]
    elif tuple(v.shape) == tuple(a.shape):
        vv = v
    elif None not in a.shape:
        vv = resize(v, a.shape)
    else:        # cycled to a size known at run time only
        flat = ravel(v)
        vv = A.reshape_to(A.gather(flat, A.iota(ravel(a), 0) % A.dim(flat, 0), 0), a)
    if vv.dtype != a.dtype:
        vv = vv.astype(a.dtype)
    a[...] = where(reshape(m, a.shape) if tuple(m.shape) != tuple(a.shape) else m, vv, a)


def fill_diagonal(a, val, wrap=False):
    """Write `val` (cycled) on the main diagonal, as `numpy.fill_diagonal` (for tall 2-d arrays
    `wrap` continues after N columns)."""
    if isinstance(a, np.ndarray):
        return _into_numpy("fill_diagonal", a, val, wrap=wrap)
    if not isinstance(a, ndarray):
        raise TypeError("fill_diagonal: first argument must be an ndflow array")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if None in a.shape:
        raise ValueError("fill_diagonal needs the array's shape, unknown while tracing")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = _static_size(a) if wrap else a.shape[1] * a.shape[1]
    else:
        if len(set(a.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
        end = _static_size(a)
    idx = np.arange(0, min(end, _static_size(a)), step, dtype=np.intp)
    put(a, asarray(idx), val)
