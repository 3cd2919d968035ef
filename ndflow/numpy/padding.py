"""`numpy.pad`, every mode: constant, edge, linear_ramp, maximum/minimum/mean/median (with
stat_length), reflect and symmetric (even and odd), wrap, empty and a callable.

Composed of concatenation, gathers (integer-array indexing), broadcasting and elementwise
selection, so it differentiates, traces (also with sizes unknown while tracing) and vectorizes.
Pad widths are static Python values, as NumPy's bookkeeping is."""

import numpy as np

from ..core.ndarray import ndarray, TracingError, static_size as _static_size
from ..core.primitive import bind
from ..core import dtypes as _dt
from ..primitives import shape as S, elementwise as E, indexing as I
from ..vectorize.batching import vmap
from ._core import asarray
from . import _axes as A
from .manipulation import reshape, ravel, moveaxis, concatenate, expand_dims, broadcast_to, stack
from .math import (clip, where_ as where, floor_divide, floor, true_divide, multiply, add,
                   subtract, rint, isnan)
from .reductions import any as any_, max as max_, min as min_, mean as mean_, sum as sum_
from .shaping import flip


def _copy(a):
    return bind(E.copy_p, a)


# ------------------------------------------------------------------ pad
_PAD_KWARGS = {
    "empty": (), "edge": (), "wrap": (), "constant": ("constant_values",),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def _pairs_index(x, nd, what="`pad_width`"):
    """NumPy's `_as_pairs(x, ndim, as_index=True)`: (before, after) Python ints per axis."""
    if x is None:
        return [(None, None)] * nd
    v = np.asarray(A.static_ints(x, what) if not isinstance(x, (list, tuple)) else
                   [A.static_ints(e, what) if isinstance(e, ndarray) else e for e in x])
    v = np.round(v).astype(np.intp, copy=False)
    return _pairs(v, nd, index=True)


def _pairs(v, nd, index=False, python=False):
    if v.ndim < 3:
        if v.size == 1:
            v = v.ravel()
            if index and v[0] < 0:
                raise ValueError("index can't contain negative values")
            return [(v[0], v[0])] * nd
        if v.size == 2 and v.shape != (2, 1):
            v = v.ravel()
            if index and (v[0] < 0 or v[1] < 0):
                raise ValueError("index can't contain negative values")
            return [(v[0], v[1])] * nd
    if index and v.size and v.min() < 0:
        raise ValueError("index can't contain negative values")
    b = np.broadcast_to(v, (nd, 2))
    # NumPy hands out Python scalars here (weak in promotion), NumPy scalars above
    return [tuple(p) for p in b.tolist()] if python else [(b[i, 0], b[i, 1]) for i in range(nd)]


def _value_pairs(x, nd):
    """constant_values / end_values: (before, after) per axis; NumPy scalars, or 0-d ndflow
    arrays when given as (possibly traced) ndflow arrays (then differentiable)."""
    flat = list(_flatten(x))
    if not any(isinstance(e, ndarray) for e in flat):
        return _pairs(np.array(x), nd, python=True)
    v = asarray(x)
    if v.ndim < 3 and _static_size(v) == 1:
        v = ravel(v)
        return [(v[0], v[0])] * nd
    if v.ndim < 3 and _static_size(v) == 2 and tuple(v.shape) != (2, 1):
        v = ravel(v)
        return [(v[0], v[1])] * nd
    b = broadcast_to(v, (nd, 2))
    return [(b[i, 0], b[i, 1]) for i in range(nd)]


def _flatten(x):
    if isinstance(x, (list, tuple)):
        for e in x:
            yield from _flatten(e)
    else:
        yield x


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array, as `numpy.pad`, in every mode (constant, edge, linear_ramp, maximum, mean,
    median, minimum, reflect, symmetric, wrap, empty, or a function). Axes are padded one after
    the other, as NumPy does (corners come from the earlier axes' padding). Differentiable in
    the array (and in ndflow-array `constant_values` / `end_values`).

    Differences: 'empty' pads with zeros (NumPy leaves the memory uninitialized); a padding
    function is called once per axis on all rows at once (vectorized) when it can be, else per
    row as NumPy does."""
    x = asarray(array)
    nd = x.ndim
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * nd
        for ax, w in pad_width.items():
            if isinstance(w, (int, np.integer)):
                seq[ax] = (int(w), int(w))
            elif isinstance(w, tuple) and len(w) == 2 and \
                    all(isinstance(i, (int, np.integer)) for i in w):
                seq[ax] = (int(w[0]), int(w[1]))
            else:
                raise TypeError(f"pad_width for axis {ax} must be an int or a pair of ints, "
                                f"got {w!r}")
        pad_width = seq
    pw = np.asarray(A.static_ints(pad_width, "pad_width") if isinstance(pad_width, ndarray)
                    else pad_width)
    if pw.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    widths = [(int(b), int(a)) for b, a in _pairs(pw.astype(np.intp), nd, index=True)]
    if callable(mode):
        return _pad_function(x, widths, mode, kwargs)
    try:
        allowed = _PAD_KWARGS[mode]
    except (KeyError, TypeError):
        raise ValueError(f"mode '{mode}' is not supported") from None
    bad = set(kwargs) - set(allowed)
    if bad:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {bad}")
    if mode in ("constant", "empty"):
        values = _value_pairs(kwargs.get("constant_values", 0), nd) if mode == "constant" \
            else [(0, 0)] * nd
        flat = {v for pair in values for v in pair if not isinstance(v, ndarray)}
        if None not in x.shape and len(flat) == 1 and len(values) and \
                not any(isinstance(v, ndarray) for pair in values for v in pair):
            return _pad_uniform(x, widths, flat.pop())
        for ax, ((b, a), (vb, va)) in enumerate(zip(widths, values)):
            if b or a:
                x = _pad_constant(x, ax, b, a, vb, va)
        return x
    if _static_size(x) == 0:
        for ax, (b, a) in enumerate(widths):
            if x.shape[ax] == 0 and (b or a):
                raise ValueError(f"can't extend empty axis {ax} using modes other than "
                                 f"'constant' or 'empty'")
        for ax, (b, a) in enumerate(widths):
            if b or a:
                x = _pad_constant(x, ax, b, a, 0, 0)
        return x
    if mode == "linear_ramp":
        ends = _value_pairs(kwargs.get("end_values", 0), nd)
        for ax, ((b, a), (eb, ea)) in enumerate(zip(widths, ends)):
            if b or a:
                x = _pad_ramp(x, ax, b, a, eb, ea)
        return x
    if mode in ("maximum", "minimum", "mean", "median"):
        lengths = _pairs_index(kwargs.get("stat_length"), nd, "stat_length")
        for ax, ((b, a), (lb, la)) in enumerate(zip(widths, lengths)):
            if b or a:
                x = _pad_stat(x, ax, b, a, lb, la, mode)
        return x
    odd = False
    if mode in ("reflect", "symmetric"):
        odd = kwargs.get("reflect_type", "even") == "odd"   # anything else is 'even', as NumPy
    for ax, (b, a) in enumerate(widths):
        if b or a:
            x = _pad_gather(x, ax, b, a, mode, odd)
    return x


def _pad_uniform(x, widths, value):
    """One constant everywhere: the array written into a constant block (one allocation;
    chained concatenations would allocate a full-size temporary per axis)."""
    shape = tuple(d + b + a for d, (b, a) in zip(x.shape, widths))
    c = asarray(value)
    c = bind(E.convert_p, c, dtype=x.dtype) if c.dtype != x.dtype else c
    base = bind(S.broadcast_to_p, reshape(c, (1,) * x.ndim), shape=shape) if shape else c
    spec = tuple(("s", b, b + d, None) for d, (b, a) in zip(x.shape, widths))
    return bind(I.index_update_p, base, x, spec=spec)


def _pad_constant(x, ax, b, a, vb, va):
    def side(width, value):
        v = asarray(value)
        if v.dtype != x.dtype:
            v = bind(E.convert_p, v, dtype=x.dtype)
        v = reshape(v, (1,) * x.ndim)
        return A.expand_to(v, x, ax, width)
    parts = ([side(b, vb)] if b else []) + [x] + ([side(a, va)] if a else [])
    return concatenate(parts, axis=ax)


def _pad_index(x, ax, b, a):
    """Positions of the padded axis relative to the original (-b .. n + a - 1)."""
    n = x.shape[ax]
    if n is not None:
        return asarray(np.arange(-b, n + a, dtype=np.intp)), n
    nd = A.dim(x, ax)
    i = A.iota(x, ax)
    parts = [asarray(np.arange(-b, 0, dtype=np.intp))] if b else []
    parts.append(i)
    if a:
        parts.append(nd + asarray(np.arange(a, dtype=np.intp)))
    return concatenate(parts), nd


def _pad_gather(x, ax, b, a, mode, odd):
    """edge / wrap / reflect / symmetric: one gather by computed source positions; the 'odd'
    reflections add the linear trend NumPy's repeated point reflections produce."""
    idx, n = _pad_index(x, ax, b, a)
    known = not isinstance(n, ndarray)
    if mode == "edge" or (mode in ("reflect", "symmetric") and known and n == 1):
        return A.gather(x, clip(idx, 0, n - 1), ax)
    if mode == "wrap":
        return A.gather(x, idx % n, ax)
    period = 2 * (n - 1) if mode == "reflect" else 2 * n
    safe = period if known else where(period > 0, period, 1)
    j = idx % safe
    back = j >= n                       # in the mirrored half of the period
    src = where(back, period - j - int(mode == "symmetric"), j)
    if not known:
        src = where(n > 1, src, 0) if mode == "reflect" else src
    g = A.gather(x, src, ax)
    if not odd:
        return g
    if known:
        return _pad_reflect_odd(x, ax, b, a, mode == "symmetric")
    first = A.slice_axis(x, ax, 0, 1)
    last = A.slice_axis(x, ax, -1, None)
    nd = x.ndim
    backc = A.along(back, ax, nd)
    turns = A.along(floor_divide(idx, safe), ax, nd)
    two = asarray(2, dtype=x.dtype)
    mirrored = where(backc, two * last - g, g)
    step = two * (last - first)
    if turns.dtype != x.dtype:
        turns = turns.astype(x.dtype)
    # only the repeated reflections add the trend: 0 * step would turn an infinite step into
    # NaN and -0.0 into 0.0 where NumPy copies the value
    out = where(turns != 0, mirrored + turns * step, mirrored)
    if not known and mode == "reflect":
        out = where(n > 1, out, g)
    return out.astype(x.dtype) if out.dtype != x.dtype else out


def _pad_reflect_odd(x, ax, b, a, include_edge):
    """'odd' reflections with known sizes, built as NumPy builds them: rounds of chunks, each
    `2 * edge - mirrored chunk` of what is already there (at most one period long), so the
    arithmetic — and with it every infinity, NaN and signed zero — is NumPy's."""
    n = x.shape[ax]
    cur = x
    left, right = b, a
    while left or right:
        length = cur.shape[ax]
        if include_edge:
            span, off = length // n * n, 1
        else:
            span, off = (length - 1) // (n - 1) * (n - 1), 0
        if left:
            k = min(span, left)
            src = A.slice_axis(cur, ax, 1 - off, k - off + 1)
            chunk = _odd_chunk(A.slice_axis(cur, ax, 0, 1), src, ax, x.dtype)
            cur = concatenate([chunk, cur], axis=ax)
            left -= k
        if right:
            k = min(span, right)
            last = cur.shape[ax] - 1
            src = A.slice_axis(cur, ax, last + off - k, last + off)
            chunk = _odd_chunk(A.slice_axis(cur, ax, last, last + 1), src, ax, x.dtype)
            cur = concatenate([cur, chunk], axis=ax)
            right -= k
    return cur


def _odd_chunk(edge, src, ax, dtype):
    out = 2 * edge - flip(src, ax)
    return out.astype(dtype) if out.dtype != dtype else out


def _pad_ramp(x, ax, b, a, eb, ea):
    """Linear ramps from the end values to the edge values, computed as numpy.linspace does
    (floored for integer arrays)."""
    nd = x.ndim

    def ramp(edge, end, width):
        e = end if type(end) in _dt.PY_SCALARS else asarray(end)
        dt = _dt.result_type(e, x)
        if dt.kind not in "fc":
            dt = np.dtype(np.float64)
        e = asarray(e).astype(dt)
        edge = edge.astype(dt)
        k = A.along(asarray(np.arange(width, dtype=dt)), ax, nd)
        delta = subtract(edge, e)
        step = true_divide(delta, width)
        normal = multiply(k, step)
        zero_step = multiply(true_divide(k, width), delta)
        y = add(where(any_(step == 0), zero_step, normal), e)
        if x.dtype.kind in "iu":
            y = floor(y)
        return y.astype(x.dtype)
    parts = []
    if b:
        parts.append(ramp(A.slice_axis(x, ax, 0, 1), eb, b))
    parts.append(x)
    if a:
        parts.append(flip(ramp(A.slice_axis(x, ax, -1, None), ea, a), ax))
    return concatenate(parts, axis=ax)


def _pad_stat(x, ax, b, a, lb, la, mode):
    n = x.shape[ax]
    for length in (lb, la):
        if mode in ("maximum", "minimum") and (length == 0 or n == 0):
            raise ValueError("stat_length of 0 yields no value for padding")

    def stat(chunk):
        if mode == "maximum":
            s = max_(chunk, axis=ax, keepdims=True)
        elif mode == "minimum":
            s = min_(chunk, axis=ax, keepdims=True)
        elif mode == "mean":
            s = mean_(chunk, axis=ax, keepdims=True)
        else:
            s = _median_keepdims(chunk, ax)
        if x.dtype.kind in "iu":
            s = rint(s)
        return s.astype(x.dtype) if s.dtype != x.dtype else s

    whole = lambda L: L is None or (n is not None and L >= n)  # noqa: E731
    left = stat(x if whole(lb) else A.slice_axis(x, ax, 0, lb))
    right = left if whole(lb) and whole(la) else stat(
        x if whole(la) else A.slice_axis(x, ax, -la, None) if la else A.slice_axis(x, ax, 0, 0))
    parts = ([A.expand_to(left, x, ax, b)] if b else []) + [x] + \
        ([A.expand_to(right, x, ax, a)] if a else [])
    return concatenate(parts, axis=ax)


def _median_keepdims(x, ax):
    """The median along `ax` (keepdims), from ranks by pairwise comparison (ties broken by
    position): the middle element, or the mean of the two middle ones; NaN if any is NaN.
    Quadratic in the axis length: used on the short stat regions of pad. As numpy.median,
    which takes np.mean of the middle one or two: an odd length gives the middle element
    itself (not (m + m) / 2, which overflows past half the largest float), and float16's pair
    is summed in float32."""
    v = moveaxis(x, ax, -1)
    nd = v.ndim
    xi = expand_dims(v, nd)           # (..., L, 1)
    xj = expand_dims(v, nd - 1)       # (..., 1, L)
    i = A.iota(v, nd - 1)
    earlier = reshape(i, (1, -1)) < reshape(i, (-1, 1))   # j before i
    rank = sum_((xj < xi) | ((xj == xi) & earlier), axis=-1)
    L = A.dim(v, nd - 1)
    dt = v.dtype if v.dtype.kind in "fc" else np.dtype(np.float64)
    vv = v.astype(dt) if v.dtype != dt else v
    zero = asarray(0, dtype=dt)
    lo = sum_(where(rank == (L - 1) // 2, vv, zero), axis=-1, keepdims=True)
    hi = sum_(where(rank == L // 2, vv, zero), axis=-1, keepdims=True)
    if isinstance(L, int) and L % 2:
        med = lo           # (no pair computed: its overflow would warn where NumPy does not)
    else:
        # numpy.median's np.mean of the middle pair (tnp.mean: float16 summed in float32)
        pair = mean_(concatenate([lo, hi], axis=-1), axis=-1, keepdims=True)
        med = pair if isinstance(L, int) else where(L % 2 == 1, lo, pair)
    if dt.kind in "fc":
        med = where(any_(isnan(vv), axis=-1, keepdims=True), asarray(np.nan, dtype=dt), med)
    return moveaxis(med, -1, ax)


def _pad_function(x, widths, function, kwargs):
    """mode=<function>: `function(vector, (before, after), axis, kwargs)` edits each 1-d row
    along each axis in place (ndflow: by item assignment, which is differentiable). Rows are
    edited all at once under vectorized_map when the function allows it, else one by one."""
    padded = _copy(x)        # the function edits it in place
    for ax, (b, a) in enumerate(widths):
        if b or a:
            padded = _pad_constant(padded, ax, b, a, 0, 0)
    for ax in range(padded.ndim):
        v = moveaxis(padded, ax, -1)

        def edit(vec, ax=ax):
            function(vec, widths[ax], ax, kwargs)
            return vec
        if v.ndim == 1:
            out = edit(v)
        elif 0 in v.shape[:-1]:
            continue
        else:
            f = edit
            for _ in range(v.ndim - 1):
                f = vmap(f)
            try:
                out = f(v)
            except TracingError:
                rows = [edit(v[i]) for i in np.ndindex(*v.shape[:-1])]
                out = reshape(stack(rows), v.shape)
        padded = moveaxis(out, -1, ax)
    return padded
