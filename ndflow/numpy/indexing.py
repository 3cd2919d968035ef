"""Indexing: x[idx], x[idx] = v (NumPy semantics, differentiable), take, take_along_axis."""
import operator

import numpy as np

from ..core.ndarray import ndarray
from ..core.primitive import bind, Composite
from ..core import dispatch as _door
from ..core import dtypes as _dt
from ..primitives import indexing as I, elementwise as E, shape as S
from ..core import mutation as _mut
from ..primitives import linalg as L, misc as M
from ..primitives._util import norm_axis, legacy_0d, c_axis
from ..primitives.shape import expand_dims_p, squeeze_p
from ..graph.static import shape_of as _shape_of, static_int
from ._core import asarray, _make
from ._outarg import write_out as _write_out
from ._axes import clipmode
from .manipulation import ravel, reshape, stack

_SLICE_ALL = ("s", None, None, None)


def _static_int(v):
    if isinstance(v, ndarray):
        return None if v._t is not None else operator.index(v._v)
    return operator.index(v)


def _split_index(x, key):
    """(x2, spec, arrays, inserted) from a NumPy index. Boolean masks become `nonzero` integer
    arrays (checked against the sizes of the axes they index, as NumPy does); a 0-d boolean
    (`x[True]`, `x[x.sum() > 0]`) is NumPy's new axis of length 1 indexed by a 1-d mask of one
    element: x2 is x with those axes inserted (at the positions `inserted`), which the spec
    indexes."""
    if not isinstance(key, tuple):
        key = (key,)
    entries = []
    for k in key:
        if k is None:
            entries.append(("n",))
        elif k is Ellipsis:
            entries.append(("e",))
        elif isinstance(k, slice):
            entries.append(("s", k))        # (its bounds are read in order, below)
        elif isinstance(k, (bool, np.bool_)):
            entries.append(("b", asarray(k)))
        elif isinstance(k, (int, np.integer)):
            entries.append(("i", int(k)))
        else:
            arr = _index_array(k)
            if arr.dtype == _dt.BOOL:
                entries.append(("b", arr))
            elif arr.dtype.kind in "iu":
                if arr.ndim == 0 and arr._t is None:
                    entries.append(("i", int(arr._v)))
                else:
                    entries.append(("a", arr))
            else:
                raise IndexError(_NOT_AN_INDEX if not isinstance(k, (np.ndarray, ndarray)) else
                                 "arrays used as indices must be of integer (or boolean) type")
    if sum(1 for e in entries if e[0] == "e") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(e[1].ndim if e[0] == "b" else 1 for e in entries if e[0] in "siab")
    if used > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but "
                         f"{used} were indexed")
    at, before, inserted, shape, known = _lay_out(entries, x, used)
    spec, arrays = [], []
    for i, e in enumerate(entries):
        k, pos = e[0], at[i]
        if k in "en":
            spec.append(e)
        elif k == "b":
            mask = e[1] if e[1].ndim else reshape(e[1], (1,))
            # (sizes unknown while tracing: the graph checks them when it runs)
            idx = bind_nonzero(mask) if known[i] else \
                list(bind(I.nonzero_p, mask, x, start=pos - before[i]))
            spec.extend([("a",)] * len(idx))
            arrays.extend(idx)
        else:
            if k == "s":
                # NumPy reads the entries in order: an integer out of bounds before a later
                # slice's bad bound, the bound before a later integer's
                e = ("s",) + tuple(None if v is None else _slice_part(v)
                                   for v in (e[1].start, e[1].stop, e[1].step))
            elif k == "i" and shape[pos] is not None and not -shape[pos] <= e[1] < shape[pos]:
                raise IndexError(f"index {e[1]} is out of bounds for axis {pos - before[i]} "
                                 f"with size {shape[pos]}")
            spec.append(e if k != "a" else ("a",))
            if k == "a":
                arrays.append(e[1])
    if inserted:
        x = bind(expand_dims_p, x, axes=tuple(inserted))
    return x, tuple(spec), arrays, tuple(inserted)


_NOT_AN_INDEX = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                 "integer or boolean arrays are valid indices")


def _index_array(k):
    """An index entry that is not a scalar, slice, None or Ellipsis, as an array: NumPy's
    IndexError for anything that is not an integer or boolean array (a string, a dict, an
    object array) on every path (not asarray's TypeError)."""
    if isinstance(k, (list, tuple)) and not len(k):
        return asarray(k, np.intp)
    if isinstance(k, (str, bytes, dict, set)):
        raise IndexError(_NOT_AN_INDEX)
    try:
        return asarray(k)
    except TypeError:       # (a ragged list is NumPy's ValueError, as asarray's)
        raise IndexError(_NOT_AN_INDEX if not isinstance(k, np.ndarray) else
                         "arrays used as indices must be of integer (or boolean) type") from None


def _check_mask(mask, shape, pos, n_inserted):
    """NumPy's IndexError where a mask's axis differs from the axis it indexes (an axis of
    size 0 in the mask is not compared); whether every size was known to compare."""
    known = True
    for j, m in enumerate(mask.shape):
        d = shape[pos + j]
        if d is None or m is None:
            known = False
        elif d != m and m != 0:
            raise IndexError(f"boolean index did not match indexed array along axis "
                             f"{pos + j - n_inserted}; size of axis is {d} but size of "
                             f"corresponding boolean axis is {m}")
    return known


def _lay_out(entries, x, used):
    """Where each entry indexes: per entry its axis of x with the new axes of 0-d masks
    inserted (`at`) and how many were inserted before it (`before`); the inserted axes, the
    shape with them, and per mask whether its sizes were all known. Every mask is compared
    with its axes here, before any slice bound or integer is read: NumPy compares them while
    it prepares the index, so a mismatched mask is its error even after a slice with a float
    bound or an integer out of bounds (which it meets later)."""
    at, before, inserted, shape, known = [], [], [], list(x.shape), {}
    pos = 0
    for i, e in enumerate(entries):
        if e[0] == "b" and e[1].ndim == 0:      # a new axis of length 1, a mask of one element
            inserted.append(pos)
            shape.insert(pos, 1)
        at.append(pos)
        before.append(len(inserted))
        if e[0] == "e":
            pos += x.ndim - used
        elif e[0] == "b":
            known[i] = e[1].ndim == 0 or _check_mask(e[1], shape, pos, len(inserted))
            pos += max(e[1].ndim, 1)
        elif e[0] != "n":
            pos += 1
    return at, before, inserted, shape, known


def _slice_part(v):
    try:
        s = _static_int(v)
    except TypeError:
        raise TypeError("slice indices must be integers or None or have an __index__ "
                        "method") from None
    if s is None:
        raise TypeError("slice bounds must be Python integers or concrete arrays; got a traced "
                        "value (use tnp.take or dynamic_slice-style indexing with arrays)")
    return s


def bind_nonzero(mask):
    if mask.ndim == 0:        # NumPy's error, on every path (nonzero_p's kernel would pad it)
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "np.atleast_1d(scalar).nonzero() instead.")
    return list(bind(I.nonzero_p, mask))


def _index_kernel(buf, key):
    """GETITEM's kernel: NumPy indexes the buffer itself (its rules and errors exactly)."""
    return buf[key]


def _getitem_composed(x, key):
    """x[key] over primitives (getitem_p on a split index): every path but plain eager."""
    if _traced_slice(key):
        return _getitem_runtime_slices(x, key)
    x, spec, arrays, _ = _split_index(x, key)
    if not arrays and all(e == _SLICE_ALL or e[0] == "e" for e in spec) and not any(e[0] == "n" for e in spec):
        return x if x._t is not None else bind(I.getitem_p, x, spec=spec)
    return bind(I.getitem_p, x, *arrays, spec=spec)


def _traced(v):
    return isinstance(v, ndarray) and v._t is not None


def _traced_slice(key):
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, slice) and (_traced(k.start) or _traced(k.stop) or _traced(k.step))
               for k in keys)


def _getitem_runtime_slices(x, key):
    """x[key] where some slice bounds are traced values: the static part of the index first
    (those slices taken whole), then each such slice on its axis of that result."""
    keys = key if isinstance(key, tuple) else (key,)
    n_axes = sum(1 for k in keys if k is not None and k is not Ellipsis)
    static_keys, later, r = [], [], 0
    for k in keys:
        if k is Ellipsis:
            static_keys.append(k)
            r += x.ndim - n_axes
        elif k is None or isinstance(k, slice):
            if isinstance(k, slice) and (_traced(k.start) or _traced(k.stop) or _traced(k.step)):
                parts, ops = [], []
                for v in (k.start, k.stop, k.step):
                    c = static_int(v) if _traced(v) else v
                    if _traced(v) and c is None:
                        if np.dtype(v.dtype).kind not in "iu" or v.ndim:
                            raise IndexError("slice indices must be integers or None")
                        parts.append(("d",))
                        ops.append(v.astype(np.int64))
                    else:
                        parts.append(("c", None if c is None else operator.index(c)))
                later.append((r, tuple(parts), ops))
                static_keys.append(slice(None))
            else:
                static_keys.append(k)
            r += 1
        elif isinstance(k, (int, np.integer)) or (isinstance(k, ndarray) and k.ndim == 0
                                                   and k.dtype.kind in "iu"):
            static_keys.append(k)
        else:
            raise IndexError("slices with traced bounds combine only with integers, slices, "
                             "None and ... in one index (index the arrays in a second step)")
    out = _getitem(x, tuple(static_keys))
    for axis, parts, ops in later:
        if all(p[0] == "c" for p in parts):
            out = _getitem(out, (slice(None),) * axis + (slice(*[p[1] for p in parts]),))
        else:
            out = bind(I.slice_dynamic_p, out, *ops, axis=axis, parts=parts)
    return out


def _setitem_kernel(x, key, value):
    """In place on an eager array's buffer (a NumPy scalar buffer becomes an array first)."""
    v = value._v if isinstance(value, ndarray) and value._dev is None else value
    if isinstance(v, ndarray):
        v = v.numpy()
    buf = x._v
    if not isinstance(buf, np.ndarray):
        buf = x._v = np.array(buf)
    buf[_host_key(key)] = v


def _setitem_composed(x, key, value):
    """x[key] = value as a functional update that the mutation model applies (in place when
    eager) or records: every path but plain eager."""
    _mut.begin(x)
    base, spec, arrays, inserted = _split_index(x, key)
    if type(value) in (bool, int, float, complex):
        # a Python scalar is converted as NumPy converts it when it assigns one (OverflowError
        # for an int out of range, TypeError for a complex into a real array, NaN into ints'
        # ValueError): a host value, so NumPy converts it here on every path
        tmp = np.empty((), x.dtype)
        try:
            tmp[()] = value
        except (TypeError, ValueError, OverflowError):
            # NumPy looks at the index first: its IndexError wins where both are wrong
            if None not in x.shape and all(a._t is None for a in arrays):
                np.broadcast_to(np.empty((), bool), base.shape)[
                    tuple(_spec_host_key(spec, arrays))]
            raise
        value = tmp
    v = asarray(value)
    if v.dtype != x.dtype:
        if x.dtype.kind in "iub" and v.dtype.kind == "c":
            raise TypeError(f"cannot assign {v.dtype} values to a {x.dtype} array")
        v = bind(E.convert_p, v, dtype=x.dtype)

    def functional():
        r = bind(I.index_update_p, base, v, *arrays, spec=spec)
        if inserted:
            r = bind(squeeze_p, r, axes=inserted)
        return r

    def apply(buf):
        buf[_host_key(key)] = v._v

    eager_key = all(a._t is None and a._dev is None for a in arrays)
    # index_update's gradient reads only x's shape: a tape can record the write in place
    # (not where a 0-d boolean index inserted axes: the update is then of x with those axes)
    _mut.assign(x, (v,) + tuple(arrays), functional,
                apply if eager_key and v._dev is None else None,
                None if inserted else (I.index_update_p, (v,) + tuple(arrays), {"spec": spec}))


# x[key] and x[key] = value as composite primitives: NumPy's indexing of the buffers is the
# kernel, getitem_p / index_update_p over the split index the composition
GETITEM = Composite("getitem", _index_kernel, _getitem_composed)
SETITEM = Composite("setitem", _setitem_kernel, _setitem_composed)
# `x[key]` and `x[key] = value` (NumPy's semantics on every path), from the eager door: NumPy
# indexes or writes the buffer itself (plain eager; writes: also while tapes exist, as long as
# none holds a buffer), else the composition: `getitem_p` on the split index, or a functional
# update that the mutation model applies (core/mutation.py: in place eagerly, so views see it)
# or records, so gradients flow to the value and not to the overwritten elements
_getitem = _door.getitem(_getitem_composed)
_setitem = _door.write(_setitem_kernel, _setitem_composed)


def _spec_host_key(spec, arrays):
    """The host index that a split index (spec, arrays) stands for."""
    it = iter(arrays)
    for e in spec:
        k = e[0]
        yield (Ellipsis if k == "e" else None if k == "n" else e[1] if k == "i" else
               slice(*e[1:]) if k == "s" else next(it).numpy())


def _host_key(key):
    if isinstance(key, ndarray):
        return key.numpy()
    if isinstance(key, tuple):
        return tuple(k.numpy() if isinstance(k, ndarray) else k for k in key)
    return key


def _view_inverse_getitem(base, view, args, params):
    return I.index_update_p, (base, view), params


def _view_inverse_reshape(base, view, args, params):
    return S.reshape_like_p, (view, base), {}


def _view_inverse_transpose(base, view, args, params):
    perm = params["perm"]
    if perm is None:
        inv = None
    else:
        inv = tuple(int(i) for i in np.argsort(perm))
    return S.transpose_p, (view,), {"perm": inv}


def _view_inverse_real(base, view, args, params):
    if np.dtype(base.dtype).kind != "c":
        return _view_inverse_reshape(base, view, args, params)   # a real array's real: itself
    return E.set_real_p, (base, view), {}


def _view_inverse_imag(base, view, args, params):
    if np.dtype(base.dtype).kind != "c":
        _mut.read_only(base, view, args, params)      # NumPy: a real array's imag is read-only
    return E.set_imag_p, (base, view), {}


def _view_inverse_bitcast(base, view, args, params):
    return S.bitcast_p, (view,), {"dtype": np.dtype(base.dtype)}


def _view_inverse_slice_dynamic(base, view, args, params):
    return I.update_slice_dynamic_p, (base, view) + tuple(args), params


def _einsum_labels(params):
    ins, out = params["subscripts"].split("->")
    return ins, out


def _einsum_is_view(args, params):
    # NumPy's einsum of one operand that sums nothing ('ij->ji', 'ii->i') is a view of it
    ins, out = _einsum_labels(params)
    return len(args) == 1 and "," not in ins and set(out) == set(ins)


def _view_inverse_einsum(base, view, args, params):
    ins, out = _einsum_labels(params)
    if len(set(ins)) != len(ins):
        return None                   # a diagonal ('ii->i'): no inverse here
    return _view_inverse_transpose(base, view, args, {"perm": tuple(ins.index(c) for c in out)})


# Which primitives return a view in NumPy, and how a write into that view reaches its base.
# (stop_gradient and the run-time checks return their operand itself: a write into the result
# writes the operand, as eagerly)
_mut.VIEW_WHEN.update({
    I.getitem_p: lambda args, params: len(args) == 1,
    L.einsum_p: _einsum_is_view,
})
_mut.VIEWS.update({
    I.getitem_p: _view_inverse_getitem,
    S.transpose_p: _view_inverse_transpose,
    S.reshape_p: _view_inverse_reshape,
    S.reshape_dynamic_p: _view_inverse_reshape,
    S.expand_dims_p: _view_inverse_reshape,
    S.squeeze_p: _view_inverse_reshape,
    E.real_p: _view_inverse_real,
    E.imag_p: _view_inverse_imag,
    I.slice_dynamic_p: _view_inverse_slice_dynamic,
    S.bitcast_p: _view_inverse_bitcast,
    L.einsum_p: _view_inverse_einsum,
    M.stop_gradient_p: _view_inverse_reshape,
    M.runtime_warning_p: _view_inverse_reshape,
    M.runtime_error_p: _view_inverse_reshape,
    I.diagonal_p: _mut.read_only,
    S.broadcast_to_p: _mut.read_only,
    S.broadcast_dynamic_p: _mut.read_only,
})


def take(a, indices, axis=None, out=None, mode=None):
    """Take elements along an axis (from the flattened array when `axis` is None), as
    `numpy.take` (mode 'raise' checks bounds eagerly). Differentiable in `a`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> a = tnp.asarray([[1, 2], [3, 4]])
    >>> tnp.take(a, [0, 3])
    array([1, 4], dtype=int64)
    >>> tnp.take(a, [1], axis=1)
    array([[2],
           [4]], dtype=int64)
    """
    mode = clipmode(mode)
    a = asarray(a)
    idx = asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"indices must be integers, got {idx.dtype}")
    if axis is None or legacy_0d(axis, a.ndim):      # NumPy's legacy 0-d rule
        a = ravel(a)
        axis = 0
    axis = norm_axis(c_axis(axis), a.ndim)
    n = a.shape[axis]
    if n is None and mode in ("wrap", "clip"):    # unknown while tracing: the size at run time
        n = _shape_of(a, out_type=np.int64)[axis]
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        # the array's own method, tnp.clip (as `idx % n` above is tnp's remainder): math.py,
        # which defines it, is built on this module and is not imported here
        idx = idx.clip(0, n - 1)
    elif idx._t is None and n is not None and idx.size:
        v = idx.numpy()
        if v.max() >= n or v.min() < -n:
            bad = v.max() if v.max() >= n else v.min()
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    r = bind(I.getitem_p, a, idx, spec=(_SLICE_ALL,) * axis + (("a",),))
    return _write_out(r, out, casting="out_safe")


def take_along_axis(arr, indices, axis=-1):
    """`numpy.take_along_axis` as one integer-array gather (so it differentiates and batches):
    ``out[..., i, ...] = arr[..., indices[..., i, ...], ...]`` along `axis`, e.g. with the
    result of `argsort`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> a = tnp.asarray([[10, 30, 20]])
    >>> tnp.take_along_axis(a, tnp.argsort(a, axis=1), axis=1)
    array([[10, 20, 30]], dtype=int64)
    """
    a = asarray(arr)
    idx = asarray(indices)
    if axis is None:
        a, axis = ravel(a), 0
    if idx.ndim != a.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = norm_axis(axis, a.ndim)
    arrays = []
    for i in range(a.ndim):
        if i == axis:
            arrays.append(idx)
        elif a.shape[i] is None:          # unknown while tracing: the indices at run time
            arrays.append(bind(I.iota_p, a, axis=i))
        else:
            shape = [1] * a.ndim
            shape[i] = a.shape[i]
            arrays.append(reshape(_make("arange", a.shape[i], dtype=np.int64), shape))
    return bind(I.getitem_p, a, *arrays, spec=(("a",),) * a.ndim)


def _nonzero1(mask, name):
    """The positions of the true elements of the 1-d `mask` (NumPy's error, naming `name`,
    where there cannot be any)."""
    try:
        return bind_nonzero(mask)[0]
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


def nonzero(a):
    """The indices of the nonzero elements, one int64 array per axis, as `numpy.nonzero` (a
    ValueError for a 0-d array, as NumPy 2). How many there are depends on the values: inside
    `nf.function` it is known only when the graph runs.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.nonzero(tnp.asarray([[0, 3], [4, 0]]))
    (array([0, 1], dtype=int64), array([1, 0], dtype=int64))
    """
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    return tuple(bind_nonzero(a if a.dtype == _dt.BOOL else bind(E.ne_p, a, bind(E.zeros_like_p, a))))


def argwhere(a):
    """The indices of the nonzero elements, one row per element, as `numpy.argwhere` (shape
    (number of nonzero elements, a.ndim); a 0-d input: 1 or 0 rows of no columns, on every
    path).

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.argwhere(tnp.asarray([[0, 3], [4, 0]]))
    array([[0, 1],
           [1, 0]], dtype=int64)
    """
    a = asarray(a)
    if a.ndim == 0:
        rows = stack(nonzero(reshape(a, (1,))), axis=-1)
        return rows[:, :0]
    return stack(nonzero(a), axis=-1)


def flatnonzero(a):
    """The indices of the nonzero elements of `a` flattened, as `numpy.flatnonzero`.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.flatnonzero(tnp.asarray([[0, 3], [4, 0]]))
    array([1, 2], dtype=int64)
    """
    return nonzero(ravel(a))[0]
