"""Special-value cases for every primitive of the ONNX exporter's table
(tests/test_onnx_primitives.py runs them in onnxruntime against eager ndflow).

A case is a function of arrays (written with `tnp`, `nf` or the primitive itself), the input
signature it is exported with (None sizes, so one export serves several feeds) and the feeds:
special values of every dtype (NaN, infinities, signed zeros, subnormals, the largest finite
values, integer extremes), empty arrays and 0-d arrays. Elementwise primitives (their kernel a
NumPy ufunc) get their cases from one generic maker; every other primitive has a maker in
`MAKERS`, and a primitive of the table without one fails the suite.
"""
import dataclasses
import re
from typing import Callable, Optional

import numpy as np

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import dtypes as D, tree
from ndflow.core.primitive import Aval, bind
from ndflow.graph.control import scan_carry
from ndflow.primitives import elementwise as E, reduction as R, misc as M, shape as SH
from ndflow.primitives import indexing as I, linalg as L, linalg_decomp as LD, cumulative as C
from ndflow.primitives import sorting as So, random as Rn
from ndflow.graph import control as Cf
from ndflow.graph.static import shape_p
from ndflow.train.variable import read_var_p, assign_var_p

BF16 = D._load_bfloat16()
DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                                np.float64)] + [BF16]
FLOATS = [d for d in DTYPES if D.is_float(d)]
INTS = [d for d in DTYPES if d.kind in "iu"]
NUMBERS = [d for d in DTYPES if d.kind != "b"]


@dataclasses.dataclass
class Case:
    fn: Callable
    specs: list
    feeds: list
    desc: str
    dtype: np.dtype                   # the dtype the case is about (ORT gaps are per dtype)
    approx: bool = False              # a rounding of its own (libm, summation order)
    zero_sign: bool = True            # the sign of a zero result is NumPy's specification
    values: bool = True               # False: only dtypes and shapes (random draws)
    # what onnxruntime is compared with: eager ndflow, or the compiled function where eager
    # has a defect of its own (eager scan over zero steps gives None for the stacked results)
    oracle: str = "eager"
    atol: Optional[Callable] = None   # feed -> absolute tolerance of each output (sums)


def spec(shape, dtype):
    return nf.TensorSpec(list(shape), dtype)


def specials(dt, extremes=True):
    """The special values of `dt`, one of each, as a 1-d array."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([False, True, True, False, False, True, False])
    if dt.kind in "iu":
        ii = np.iinfo(dt)
        v = [-7, -3, -2, -1, 0, 1, 2, 3, 7]
        if extremes:
            v += [ii.min, ii.min + 1, ii.max - 1, ii.max]
        return np.array(sorted({x for x in v if ii.min <= x <= ii.max}), dt)
    fi = np.finfo(dt) if dt != BF16 else _bf16_info()
    v = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -2.5, 2.5, 3.0, -7.0,
         0.3, 100.0, -1e-3]
    if extremes:
        tiny = float(fi.smallest_subnormal)
        v += [tiny, -tiny, float(fi.tiny), float(fi.max), -float(fi.max)]
    return np.array(v, dtype=np.float64).astype(dt)


def _bf16_info():
    import ml_dtypes
    return ml_dtypes.finfo(BF16)


# ONNX operator -> dtypes onnxruntime's CPU provider has no kernel for: the file is valid ONNX,
# onnxruntime refuses to load it (bfloat16 is never run: onnxruntime's Python API cannot take
# or return NumPy bfloat16 arrays)
ORT_GAPS = {"Det": {"float64"}}


def ort_gap(message, dtype=None):
    """Whether onnxruntime's load error `message` is a kernel it lacks (for `dtype`, the case's
    dtype, when given; the op table's int32 samples reach float64 kernels)."""
    m = re.search(r"NOT_IMPLEMENTED : Could not find an implementation for (\w+)\(", message)
    return m is not None and m.group(1) in ORT_GAPS and (
        dtype is None or str(np.dtype(dtype)) in ORT_GAPS[m.group(1)])


def eager_or_error(fn, feed):
    """fn on ndflow arrays (its result as NumPy arrays), or the exception it raises."""
    import warnings
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(*[tnp.asarray(a) for a in feed])
        except Exception as e:      # noqa: BLE001 - the error is the expected answer
            return e
    return [np.asarray(o) for o in tree.flatten(out)]


# ------------------------------------------------------------------ elementwise (generic)
def _valid(prim, dts):
    """Whether eager `prim` on operands of dtypes `dts` gives the dtype its shape rule gives:
    the NumPy layer only hands a primitive dtypes where they agree."""
    try:
        want = prim.abstract(*[Aval((3,), d) for d in dts]).dtype
    except Exception:       # noqa: BLE001
        return False
    args = [tnp.asarray(np.ones(3, d)) for d in dts]
    try:
        with np.errstate(all="ignore"):
            got = bind(prim, *args).dtype
    except Exception:       # noqa: BLE001
        return False
    return np.dtype(got) == np.dtype(want)


APPROX = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "sin", "cos", "tan",
          "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
          "power", "logaddexp", "logaddexp2"}


def elementwise_cases(prim):
    nin = prim.impl.nin
    for dt in DTYPES:
        if not _valid(prim, [dt] * nin):
            continue
        v = specials(dt)
        approx = prim.name in APPROX and D.is_float(dt)
        kw = dict(dtype=dt, approx=approx)
        if nin == 1:
            yield Case(lambda x: bind(prim, x), [spec([None], dt)],
                       [(v,), (v[:0],), (v[::-1].copy(),)], f"{prim.name} {dt}", **kw)
            yield Case(lambda x: bind(prim, x), [spec([], dt)], [(a,) for a in v[:4]],
                       f"{prim.name} 0-d {dt}", **kw)
            continue
        a, b = np.repeat(v, len(v)), np.tile(v, len(v))
        pairs = [(a, b), (a[:0], b[:0]), (a[::-1].copy(), b[::-1].copy())]
        if isinstance(eager_or_error(lambda x, y: bind(prim, x, y), (a, b)), Exception):
            # a value NumPy refuses (an integer to a negative power): pair by pair, so the
            # others are checked too
            pairs = [(a[i:i + 1], b[i:i + 1]) for i in range(len(a))]
        yield Case(lambda x, y: bind(prim, x, y), [spec([None], dt)] * 2, pairs,
                   f"{prim.name} {dt} pairs", **kw)
        yield Case(lambda x, y: bind(prim, x, y), [spec([None], dt), spec([], dt)],
                   [(v, s) for s in v], f"{prim.name} {dt} with a 0-d operand", **kw)
        # a constant operand (the exporter specializes on constants: relu's 0)
        for c in _constants(v):
            yield Case(lambda x, c=c: bind(prim, x, tnp.asarray(c)), [spec([None], dt)], [(v,)],
                       f"{prim.name} {dt} with constant {c!r}", **kw)
            yield Case(lambda x, c=c: bind(prim, tnp.asarray(c), x), [spec([None], dt)], [(v,)],
                       f"{prim.name} {dt} with constant first {c!r}", **kw)


def _constants(v):
    """A few special values of `v` (its dtype's) to use as constant operands."""
    if D.is_float(v.dtype):
        bits = {(np.signbit(p), p) for p in (-0.0, 0.0, -1.0)}
        return [x for x in v if np.isnan(x) or (bool(np.signbit(x)), float(x)) in bits]
    picks = [True] if v.dtype.kind == "b" else [0, -1, 2, int(v.max())]
    return [x for x in v if x in picks]


# ------------------------------------------------------------------ makers per primitive
def _grid(dt, rows=3, extremes=True):
    """A (rows, k) array of `dt`'s special values, each row a different order of them."""
    v = specials(dt, extremes)
    return np.stack([np.roll(v, 5 * r) if r % 2 == 0 else np.roll(v[::-1], r)
                     for r in range(rows)])


def _empties(dt):
    return [np.zeros((2, 0), dt), np.zeros((0, 3), dt), np.zeros((0, 0), dt)]


def _convert(prim):
    for src in DTYPES:
        for dst in DTYPES:
            if src != dst:
                yield Case(lambda x, dst=dst: bind(prim, x, dtype=dst), [spec([None], src)],
                           [(specials(src),), (specials(src)[:0],)], f"{src} to {dst}", dst)


def _identity_like(call):
    def maker(prim):
        for dt in DTYPES:
            g = _grid(dt)
            yield Case(lambda x: call(prim, x), [spec([None, None], dt)],
                       [(g,)] + [(e,) for e in _empties(dt)], f"{prim.name} {dt}", dt)
            yield Case(lambda x: call(prim, x), [spec([], dt)], [(g[0, 3],)],
                       f"{prim.name} 0-d {dt}", dt)
    return maker


def _select(prim):
    for dt in DTYPES:
        v = specials(dt)
        a, b = np.repeat(v, len(v)), np.tile(v, len(v))
        for c in ((np.arange(len(a)) % 3 == 0), np.ones(len(a), bool), np.zeros(len(a), bool)):
            yield Case(lambda c, x, y: bind(prim, c, x, y),
                       [spec([None], np.bool_), spec([None], dt), spec([None], dt)],
                       [(c, a, b), (c[:0], a[:0], b[:0])], f"select {dt}", dt)
        for k in _constants(v):
            yield Case(lambda c, y, k=k: bind(prim, c, tnp.asarray(k), y),
                       [spec([None], np.bool_), spec([None], dt)],
                       [(np.arange(len(v)) % 2 == 0, v)], f"select {dt} constant {k!r}", dt)


def _fill(prim):
    for dt in DTYPES:
        fills = [None] if prim is not E.full_like_p else list(_constants(specials(dt)))
        for fv in fills:
            kw = {} if fv is None else {"fill_value": fv}
            yield Case(lambda x, kw=kw: bind(prim, x, **kw), [spec([None, None], dt)],
                       [(_grid(dt),)] + [(e,) for e in _empties(dt)],
                       f"{prim.name} {dt} {fv!r}", dt)


def _reduction_valid(prim, dt):
    try:
        want = prim.abstract(Aval((3,), dt), axes=(0,), keepdims=False).dtype
        got = bind(prim, tnp.asarray(np.ones(3, dt)), axes=(0,), keepdims=False).dtype
    except Exception:      # noqa: BLE001
        return False
    return np.dtype(want) == np.dtype(got)


def _mixed_zero_slices(x, axes, keepdims):
    """Where a max/min result comes from a slice holding both -0.0 and +0.0 (NumPy's sign of
    the zero then depends on its loop's layout: not a specification to compare with)."""
    x = np.asarray(x, np.float64)
    pos = np.any((x == 0) & ~np.signbit(x), axis=axes, keepdims=keepdims)
    neg = np.any((x == 0) & np.signbit(x), axis=axes, keepdims=keepdims)
    return ~(pos & neg)


def _reductions(prim):
    extremum = prim in (R.reduce_max_p, R.reduce_min_p)
    for dt in DTYPES:
        if not _reduction_valid(prim, dt):
            continue
        exact_sum = prim in (R.reduce_sum_p, R.reduce_prod_p) and D.is_float(dt)
        g = _grid(dt, extremes=not exact_sum)
        for axes, keep in (((0,), False), ((1,), True), ((0, 1), False), ((), False)):
            def f(x, axes=axes, keep=keep):
                return bind(prim, x, axes=axes, keepdims=keep)
            feeds = [(g,)] + [(e,) for e in _empties(dt)] if axes else [(g,)]
            zs = (lambda feed, axes=axes, keep=keep: [_mixed_zero_slices(feed[0], axes, keep)]) \
                if extremum and D.is_float(dt) else True
            atol = None
            if exact_sum:
                atol = (lambda feed, axes=axes, keep=keep: [_sum_tol(feed[0], axes, keep, prim)])
            yield Case(f, [spec([None, None], dt)], feeds, f"{prim.name} {dt} axes={axes}", dt,
                       approx=exact_sum, zero_sign=zs, atol=atol)
        # sizes known at export: an empty axis is NumPy's error at once
        yield Case(lambda x: bind(prim, x, axes=(1,), keepdims=False), [spec([2, 0], dt)],
                   [(np.zeros((2, 0), dt),)], f"{prim.name} {dt} static empty axis", dt)


def _sum_tol(x, axes, keep, prim):
    """Summation order differs between NumPy (pairwise) and a runtime: bound by n ulp of the
    sum of magnitudes (products: n ulp of the product's magnitude)."""
    x = np.asarray(x, np.float64)
    eps = float(np.finfo(x.dtype if x.dtype != BF16 else np.float32).eps)
    n = max(1, int(np.prod([x.shape[a] for a in axes])) if axes else 1)
    with np.errstate(all="ignore"):
        mag = np.sum(np.abs(x), axis=axes, keepdims=keep) if prim is R.reduce_sum_p else \
            np.abs(np.prod(x, axis=axes, keepdims=keep))
    return 4 * n * eps * np.nan_to_num(mag, posinf=0.0)


def _add_reduce(prim):
    """NumPy's sum with a cast, a mask or a start value: each source dtype's grid summed in a
    wider dtype, with and without a mask (the grid's own pattern of True), with and without a
    start value, over each axis choice; empty arrays too."""
    for src, dst in ((np.bool_, np.int64), (np.int32, np.int64), (np.int32, np.float64),
                     (np.uint8, np.float32), (np.float16, np.float32), (np.float32, np.float64),
                     (np.float64, np.float64)):
        src, dst = np.dtype(src), np.dtype(dst)
        g = _grid(src, extremes=not D.is_float(dst))
        mask = (np.arange(g.size).reshape(g.shape) % 3) != 1
        for masked in (False, True):
            for start in (None, 2):
                if not masked and start is None and src == dst:
                    continue          # (the plain sum: reduce_sum's cases)
                for axes, keep in (((0,), False), ((1,), True), ((0, 1), False), ((), False)):
                    params = dict(axes=axes, keepdims=keep, dtype=dst, initial=start)
                    if masked:
                        f = lambda x, w, params=params: bind(prim, x, w, **params)  # noqa: E731
                        specs = [spec([None, None], src), spec([None, None], np.bool_)]
                        feeds = [(g, mask)] + ([(e, np.zeros(e.shape, bool)) for e in
                                                _empties(src)] if axes else [])
                    else:
                        f = lambda x, params=params: bind(prim, x, **params)  # noqa: E731
                        specs = [spec([None, None], src)]
                        feeds = [(g,)] + ([(e,) for e in _empties(src)] if axes else [])
                    approx = D.is_float(dst)

                    def tol(feed, axes=axes, keep=keep, dst=dst):
                        x = feed[0] if len(feed) == 1 else np.where(feed[1], feed[0], 0)
                        return [_sum_tol(x.astype(dst), axes, keep, R.reduce_sum_p)]
                    yield Case(f, specs, feeds, f"add_reduce {src} in {dst} mask={masked} "
                               f"initial={start} axes={axes}", dst, approx=approx,
                               atol=tol if approx else None)


def _argext(prim):
    for dt in DTYPES:
        g = _grid(dt)
        for axis, keep in ((0, False), (1, True), (1, False)):
            yield Case(lambda x, axis=axis, keep=keep: bind(prim, x, axis=axis, keepdims=keep),
                       [spec([None, None], dt)],
                       [(g,), (np.zeros((0, 3), dt),), (np.zeros((2, 0), dt),)],
                       f"{prim.name} {dt} axis={axis}", dt)
        yield Case(lambda x: bind(prim, x, axis=1, keepdims=False), [spec([2, 0], dt)],
                   [(np.zeros((2, 0), dt),)], f"{prim.name} {dt} static empty axis", dt)


def _valid_call(prim, dts, **params):
    """Eager `prim` on ones of dtypes `dts` gives the dtype its shape rule gives."""
    try:
        want = prim.abstract(*[Aval((3, 3), d) for d in dts], **params)
        got = bind(prim, *[tnp.asarray(np.ones((3, 3), d)) for d in dts], **params)
    except Exception:      # noqa: BLE001
        return False
    want = want if isinstance(want, (list, tuple)) else [want]
    got = got if isinstance(got, (list, tuple)) else [got]
    return [np.dtype(w.dtype) for w in want] == [np.dtype(g.dtype) for g in got]


def _sum_to(prim):
    for dt in NUMBERS:
        try:
            ok = bind(prim, tnp.ones((3, 3), dt), tnp.ones(3, dt)).dtype == dt
        except Exception:      # noqa: BLE001
            ok = False
        if not ok:      # (eager sums of narrow integers widen: only gradients call it)
            continue
        g = _grid(dt, extremes=dt.kind != "f")
        k = g.shape[1]
        for like, lspec in ((np.zeros(k, dt), [None]), (np.zeros((1, k), dt), [1, None]),
                            (np.zeros((3, 1), dt), [None, None]),
                            (np.zeros((3, k), dt), [None, None])):
            def tol(feed):
                with np.errstate(all="ignore"):
                    return [4 * 3 * float(np.finfo(np.float32).eps)
                            * np.abs(eager_or_error(lambda c, l: bind(prim, c, l), feed)[0])]
            yield Case(lambda c, l: bind(prim, c, l), [spec([None, None], dt), spec(lspec, dt)],
                       [(g, like)], f"sum_to {dt} to {like.shape}", dt, approx=dt.kind == "f",
                       atol=tol if dt.kind == "f" else None)


def _cumsum(prim):
    for dt in NUMBERS:
        if not _valid_call(prim, [dt], axis=0):
            continue
        g = _grid(dt, extremes=not D.is_float(dt))
        for axis, rev in ((0, False), (1, False), (1, True)):
            yield Case(lambda x, axis=axis, rev=rev: bind(prim, x, axis=axis, reverse=rev),
                       [spec([None, None], dt)], [(g,), (np.zeros((0, 3), dt),)],
                       f"cumsum {dt} axis={axis} reverse={rev}", dt, approx=D.is_float(dt))


def _sorting(prim):
    for dt in DTYPES:
        g = _grid(dt)
        g[1, :4] = g[1, 4]                       # ties: a stable order is NumPy's
        if dt == BF16:
            # ml_dtypes' bfloat16 sorts by comparisons: NaN lands anywhere (NumPy puts it
            # last, as the export does); the other special values are checked
            g = np.where(np.isnan(g.astype(np.float32)), np.array(7.0, dt), g)
        for kind in ("stable", None):
            for axis in (0, 1):
                # NumPy's unstable sort orders -0.0 and +0.0 (equal keys) its own way
                yield Case(lambda x, axis=axis, kind=kind: bind(prim, x, axis=axis, kind=kind),
                           [spec([None, None], dt)], [(g,), (np.zeros((0, 3), dt),)],
                           f"{prim.name} {dt} axis={axis} kind={kind}", dt,
                           zero_sign=kind == "stable")


def _matmul(prim):
    for dt in NUMBERS:
        if not _valid_call(prim, [dt, dt]):
            continue
        g = _grid(dt, extremes=not D.is_float(dt))
        k = g.shape[1]
        b = np.roll(_grid(dt, 4, extremes=not D.is_float(dt)), 2, axis=1).T[:k]
        yield Case(lambda a, b: bind(prim, a, b), [spec([None, None], dt)] * 2,
                   [(g, b), (g[:, :0], b[:0]), (g[:0], b)], f"matmul {dt}", dt,
                   approx=D.is_float(dt), zero_sign=False)


def _einsum(prim):
    for dt in [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32),
               np.dtype(np.int64)]:
        g = _grid(dt, extremes=not D.is_float(dt))
        for eq in ("ij,kj->ik", "ij->j", "ij,ij->"):
            yield Case(lambda a, b, eq=eq: bind(prim, a, b, subscripts=eq) if "," in eq else
                       bind(prim, a, subscripts=eq) + 0 * b[0, 0],
                       [spec([None, None], dt)] * 2, [(g, g[::-1].copy())],
                       f"einsum {eq} {dt}", dt, approx=D.is_float(dt), zero_sign=False)


def _det(prim):
    for dt in FLOATS:
        if not _valid_call(prim, [dt]):
            continue
        m = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.5], [0.0, 1.0, 1.0]])
        stack = np.stack([m, m * 0, -m, np.eye(3), m * 1e-30, [[2, 4, 6], [1, 2, 3], [0, 0, 1]],
                          np.full((3, 3), np.nan)]).astype(dt)
        yield Case(lambda a: bind(prim, a), [spec([None, 3, 3], dt)], [(stack,), (stack[:0],)],
                   f"det {dt}", dt, approx=True)
        yield Case(lambda a: bind(prim, a), [spec([None, None], dt)],
                   [(np.zeros((0, 0), dt),), (stack[0],)], f"det {dt} empty matrix", dt,
                   approx=True)


# ------------------------------------------------------------------ shapes and indexing
def _through(name, call, shapes=((None, None),), feeds=None):
    """A maker for a data-movement primitive: `call(x)` (tnp code that binds it) on every
    dtype's special values and on empty arrays."""
    def maker(prim):
        for dt in DTYPES:
            g = _grid(dt)
            fs = feeds(g, dt) if feeds else [(g,), (np.zeros((0, g.shape[1]), dt),)]
            for sh in shapes:
                yield Case(call, [spec(sh, dt)], fs if None in sh else
                           [f for f in fs if f[0].shape == tuple(sh)] or [(g,)],
                           f"{name} {dt} {sh}", dt)
    return maker


def _static_feeds(g, dt):
    return [(g,)]


def _split_like(prim):
    for dt in DTYPES:
        g = _grid(dt, 4)
        yield Case(lambda c, a, b: bind(prim, c, a, b, axis=0), [spec([None, None], dt)] * 3,
                   [(g, g[:1], g[1:]), (g, g[:0], g), (g[:, :0], g[:2, :0], g[2:, :0])],
                   f"split_like {dt}", dt)


def _reshape_like(prim):
    for dt in DTYPES:
        g = _grid(dt)
        yield Case(lambda x, like: bind(prim, x, like), [spec([None, None], dt)] * 2,
                   [(g, g.T.copy()), (g, g.reshape(-1, 1)), (g[:0], g[:0].T.copy())],
                   f"reshape_like {dt}", dt)


def _runtime_sizes(name):
    def maker(prim):
        for dt in DTYPES:
            g = _grid(dt)

            def f(x, k):
                s = nf.shape(x)
                if name == "reshape_dynamic":
                    return nf.reshape(x, [s[0] * s[1], 1])
                if name == "broadcast_dynamic":
                    return tnp.broadcast_to(x[:1], [s[0] + 1, s[1]])
                return x[k:, :k], x[:, -k:]
            yield Case(f, [spec([None, None], dt), spec([], np.int64)],
                       [(g, np.int64(2)), (g[:0], np.int64(0)), (g, np.int64(-1)),
                        (g, np.int64(100))], f"{name} {dt}", dt)
    return maker


def _getitem(prim):
    for dt in DTYPES:
        g = _grid(dt)

        def f(x, i):
            return (x[1:], x[::-1], x[:, ::2], x[-1], x[0, 1:3], x[..., 1], x[None, :, None],
                    x[2::-2], x[i], x[:, i], x[i, -i], x[-1, i], x[:, -3:-1])
        i = np.array([0, -1, 2, 2], np.int64)
        yield Case(f, [spec([None, None], dt), spec([None], np.int64)],
                   [(g, i), (g, i[:0])], f"getitem {dt}", dt)
        # out of range: NumPy's IndexError, an error of the runtime (never a value)
        yield Case(lambda x, i: x[i], [spec([None, None], dt), spec([None], np.int64)],
                   [(g, np.array([3], np.int64)), (g, np.array([-4], np.int64))],
                   f"getitem {dt} out of range", dt)


def _scatter(prim):
    add = prim is I.index_add_p
    for dt in DTYPES:
        if add and dt.kind == "b":
            continue
        g = _grid(dt)
        v = specials(dt)[::-1][:g.shape[1]].copy()
        specs = [(("s", 1, None, None),), (("i", -1),), (("s", None, None, -2), ("i", 0)),
                 (("e",), ("s", 2, 5, None))]
        for sp in specs:
            yield Case(lambda x, y, sp=sp: bind(prim, x, y, spec=sp),
                       [spec([3, g.shape[1]], dt), spec([], dt)],
                       [(g, v[0]), (g, v[3])], f"{prim.name} {dt} {sp}", dt,
                       approx=add and D.is_float(dt))
        idx = np.array([0, 2, -1], np.int64)
        yield Case(lambda x, y, i: bind(prim, x, y, i, spec=(("a",),)),
                   [spec([None, None], dt), spec([None, None], dt), spec([None], np.int64)],
                   # repeated indices (the last write wins, or all add), out of range ones
                   [(g, g[::-1].copy(), idx), (g, g[:2], np.array([1, 1], np.int64)),
                    (g, g, np.array([2, -3, 2], np.int64)), (g[:, :0], g[:, :0], idx),
                    (g, g[:1], np.array([3], np.int64))],
                   f"{prim.name} {dt} index array", dt, approx=add and D.is_float(dt))


def _iota(prim):
    for dt in DTYPES:
        yield Case(lambda x: bind(prim, x, axis=1) + tnp.zeros_like(x, dtype=np.int64),
                   [spec([None, None], dt)], [(_grid(dt),), (np.zeros((2, 0), dt),)],
                   f"iota {dt}", dt)


def _nonzero(prim):
    for dt in DTYPES:
        g = _grid(dt)
        yield Case(lambda x: tnp.nonzero(x), [spec([None, None], dt)],
                   [(g,), (np.zeros((0, 3), dt),)], f"nonzero {dt}", dt)
        mask = g[0] != 0

        def masked(x, m):
            return x[m]
        # a mask whose size was unknown while tracing: NumPy's IndexError at run time
        yield Case(masked, [spec([None], dt), spec([None], np.bool_)],
                   [(g[0], mask), (g[0][:0], mask[:0]), (g[0], mask[:-1])],
                   f"boolean mask {dt}", dt)


def _shape(prim):
    for dt in DTYPES:
        yield Case(lambda x: nf.shape(x), [spec([None, None], dt)],
                   [(_grid(dt),), (np.zeros((0, 3), dt),)], f"shape {dt}", dt)


# ------------------------------------------------------------------ state, random, control
def _read_variable(prim):
    for dt in DTYPES:
        var = nf.Variable(_grid(dt))
        yield Case(lambda x, var=var: (var.read_value(), tnp.copy(x)), [spec([None], dt)],
                   [(specials(dt),)], f"read_variable {dt}", dt)


def _assign_variable(prim):
    var = nf.Variable(np.zeros(3, np.float32))

    def f(x):
        var.assign_add(x)
        return var.read_value()
    yield Case(f, [spec([3], np.float32)], [(np.ones(3, np.float32),)], "assign", F32)


def _random(prim):
    def f():
        return tnp.random.randn(2000).astype(tnp.float32), tnp.random.uniform(2.0, 4.0, (3, 2))
    yield Case(f, [], [()], "random draws", F32, values=False)


def _cond_fn(effect):
    def f(x, k):
        def one():
            if effect:
                nf.print("branch")
            return x * 2
        b = nf.cond(k > 0, one, lambda: x[::-1])
        c = nf.switch_case(k, [lambda: x, lambda: x[:, :1] + x, lambda: x * x])
        return b, c
    return f


def _cond(prim):
    f = _cond_fn(prim is Cf.cond_effect_p)
    for dt in NUMBERS:
        g = _grid(dt)
        yield Case(f, [spec([None, None], dt), spec([], np.int32)],
                   [(g, np.int32(k)) for k in (-1, 0, 1, 2, 7)] + [(g[:0], np.int32(1))],
                   f"{prim.name} {dt}", dt)


def _while(prim):
    effect = prim is Cf.while_effect_p
    for dt in FLOATS + [np.dtype(np.int32), np.dtype(np.int64)]:
        v = specials(dt)

        def f(x, n):
            def body(i, acc):
                if effect:
                    nf.print("step")
                return i + 1, acc * 2 + x
            _, out = nf.while_loop(lambda i, acc: i < n, body, (tnp.asarray(0), x))
            _, capped = nf.while_loop(lambda i, acc: i < n, body, (tnp.asarray(0), x),
                                      maximum_iterations=2)
            return out, capped
        yield Case(f, [spec([None], dt), spec([], np.int64)],
                   [(v, np.int64(k)) for k in (0, 1, 3)] + [(v[:0], np.int64(2))],
                   f"{prim.name} {dt}", dt)


def _scan(prim):
    effect = prim is Cf.scan_effect_p
    for dt in FLOATS + [np.dtype(np.int32), np.dtype(np.int64)]:
        g = _grid(dt)

        def f(xs):
            def step(c, e):
                if effect:
                    nf.print("step")
                return c + e, c * e
            return scan_carry(step, xs[0] * 0, xs), scan_carry(step, xs[0] * 0, xs, reverse=True)
        yield Case(f, [spec([None, None], dt)], [(g,), (g[:1],)], f"{prim.name} {dt}", dt)
        # zero steps: the stacked results are empty, of the per-step shape
        yield Case(_summing_scan(prim is Cf.scan_effect_p),
                   [spec([None, 3], dt)], [(np.zeros((0, 3), dt),), (g[:, :3].copy(),)],
                   f"{prim.name} {dt} zero steps", dt, oracle="function")


def _summing_scan(effect):
    def step(c, e):
        if effect:
            nf.print("step")
        return c + e, c - e
    return lambda xs: scan_carry(step, tnp.zeros(3, xs.dtype), xs)


def _runtime_error(prim):
    for dt in (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)):
        g = _grid(dt)
        yield Case(lambda x, bad: bind(prim, x, bad, error="ValueError",
                                       message="weights sum to zero"),
                   [spec([None, None], dt), spec([None], np.bool_)],
                   [(g, np.zeros(3, bool)), (g, np.array([False, True, False])),
                    (g[:0], np.zeros(0, bool)), (g, np.ones(3, bool))], f"checked {dt}", dt)


F32 = np.dtype(np.float32)


def _bind(prim, x, **params):
    return bind(prim, x, **params)


MAKERS = {
    E.convert_p: _convert, E.select_p: _select,
    E.copy_p: _identity_like(_bind), E.zeros_like_p: _fill, E.ones_like_p: _fill,
    E.full_like_p: _fill, E.real_p: _identity_like(_bind), E.imag_p: _identity_like(_bind),
    M.stop_gradient_p: _identity_like(_bind), M.own_result_p: _identity_like(_bind),
    M.runtime_warning_p: _identity_like(lambda p, x: bind(p, x, message="careful")),
    SH.batch_outermost_p: _identity_like(lambda p, x: bind(p, x, lead=1)),
    M.runtime_error_p: _runtime_error,
    R.reduce_sum_p: _reductions, R.reduce_prod_p: _reductions, R.reduce_max_p: _reductions,
    R.reduce_min_p: _reductions, R.reduce_any_p: _reductions, R.reduce_all_p: _reductions,
    R.argmax_p: _argext, R.argmin_p: _argext, R.sum_to_p: _sum_to,
    R.add_reduce_p: _add_reduce,
    C.cumsum_p: _cumsum, So.sort_p: _sorting, So.argsort_p: _sorting,
    L.matmul_p: _matmul, L.einsum_p: _einsum, LD.det_p: _det,
    SH.reshape_p: _through("reshape", lambda x: (tnp.reshape(x, (-1,)), tnp.reshape(x, (-1, 1)))),
    SH.transpose_p: _through("transpose", lambda x: x.T),
    SH.expand_dims_p: _through("expand_dims", lambda x: tnp.expand_dims(x, (0, 2))),
    SH.squeeze_p: _through("squeeze", lambda x: tnp.squeeze(x[None, :, None], (0, 2))),
    SH.broadcast_to_p: _through("broadcast_to", lambda x: tnp.broadcast_to(x[:1], (2, 3, 22)),
                                shapes=((3, 22),), feeds=_static_feeds),
    I.concatenate_p: _through("concatenate", lambda x: (tnp.concatenate([x, x[::-1]], 0),
                                                         tnp.concatenate([x[:, :0], x], 1))),
    I.split_like_p: _split_like, SH.reshape_like_p: _reshape_like,
    SH.reshape_dynamic_p: _runtime_sizes("reshape_dynamic"),
    SH.broadcast_dynamic_p: _runtime_sizes("broadcast_dynamic"),
    I.slice_dynamic_p: _runtime_sizes("slice_dynamic"),
    I.getitem_p: _getitem, I.index_update_p: _scatter, I.index_add_p: _scatter,
    I.iota_p: _iota, I.nonzero_p: _nonzero, shape_p: _shape,
    read_var_p: _read_variable, assign_var_p: _assign_variable, Rn.random_draw_p: _random,
    Cf.cond_p: _cond, Cf.cond_effect_p: _cond, Cf.while_p: _while, Cf.while_effect_p: _while,
    Cf.scan_p: _scan, Cf.scan_effect_p: _scan,
}


def cases_for(prim):
    """The cases of `prim`: its maker's, or the generic elementwise ones for a primitive whose
    kernel is a NumPy ufunc (None when it has neither: the suite fails for it)."""
    if prim in MAKERS:
        return list(MAKERS[prim](prim))
    if isinstance(prim.impl, np.ufunc) and prim.impl.signature is None:
        return list(elementwise_cases(prim))
    return None
