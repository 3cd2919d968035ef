"""Op-table records of the manipulation area: splitting, tiling, repeating, rolling, flipping,
block, insert/delete/append, resize, trim_zeros, pad (every mode), stacking variants; the
indexing routines (diagonals, triangles, index arrays, choose/compress/extract/select and the
in-place writers); logic (isclose, array_equal, nan_to_num, ...); conversions and bit packing.
Polynomials and windows: optable_poly.py; functional tools: optable_functional.py."""
import warnings

import numpy as np

from optable import (RECORDS, record, Sample, values, noncontig, F32, F64, I32, I64, BOOL, C128, U8,
                     NON_COMPUTING, _ints, _const)

_DT = (F64, I32)            # shape functions: one float (gradients) and one integer dtype
_DT3 = (F32, F64, I32)      # the busiest ones also in float32
_DYN = "output size depends on the values (vectorized_map raises a ValueError naming the op)"


def _gen(fn):
    """Samples from fn(v, nc): v(shape[, domain]) random values, nc(shape) non-contiguous."""
    def gen(rng, dt):
        return fn(lambda s, d="real": values(rng, s, dt, d), lambda s: noncontig(rng, s, dt))
    return gen


def _mutating(name):
    """Calls a NumPy in-place writer on a copy of its first argument and returns the copy."""
    def call(m, a, *args, **kwargs):
        a = m.array(a)
        getattr(m, name)(a, *args, **kwargs)
        return a
    return call


def _reason_if(pred, why):
    return lambda s: why if pred(s) else None


# ---- stacking variants -------------------------------------------------------------------
record("atleast_3d", _gen(lambda v, nc: [
    Sample((v(()),)), Sample((v((3,)),)), Sample((nc((2, 3)),)), Sample((v((2, 3, 4)),)),
    Sample((v(()), v((2,)), v((2, 3))), desc="several")]), dtypes=_DT)
record("column_stack", _gen(lambda v, nc: [
    Sample((v((3,)), v((3,)))), Sample((v((3, 2)), v((3,)))), Sample((nc((3, 4)), v((3, 1)))),
    Sample((v(()), v(())))]), dtypes=_DT, call=lambda m, *a: m.column_stack(list(a)))
record("dstack", _gen(lambda v, nc: [
    Sample((v((3,)), v((3,)))), Sample((v((2, 3)), nc((2, 3)))),
    Sample((v((2, 3, 2)), v((2, 3, 1))))]),
       dtypes=_DT, call=lambda m, *a: m.dstack(list(a)))


def _row_stack(m, *a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return m.row_stack(list(a))


record("row_stack", _gen(lambda v, nc: [
    Sample((v((3,)), v((3,)))), Sample((v((2, 3)), nc((1, 3))))]), dtypes=_DT, call=_row_stack)

# ---- splitting ---------------------------------------------------------------------------
_SECTIONS = "a number of sections needs the axis size (ValueError while tracing)"
_by_count = _reason_if(lambda s: isinstance(s.args[1], int), _SECTIONS)
record("split", _gen(lambda v, nc: [
    Sample((v((6,)), 3)), Sample((v((6, 2)), [1, 4])),
    Sample((v((2, 6)), [2, 10, 1]), {"axis": 1}),
    Sample((nc((4, 3)), 2), {"axis": 0}), Sample((v((0, 2)), 2))]), dtypes=_DT,
       unknown_dims=_by_count)
record("array_split", _gen(lambda v, nc: [
    Sample((v((7,)), 3)), Sample((v((5, 2)), [1, -2])), Sample((v((2, 5)), 7), {"axis": -1}),
    Sample((nc((4, 3)), 2), {"axis": 1})]), dtypes=_DT, unknown_dims=_by_count)
record("hsplit", _gen(lambda v, nc: [
    Sample((v((4,)), 2)), Sample((v((2, 4)), [1])), Sample((nc((3, 4)), 2))]), dtypes=_DT,
       unknown_dims=_by_count)
record("vsplit", _gen(lambda v, nc: [
    Sample((v((4, 2)), 2)), Sample((nc((3, 4)), [1, 2]))]), dtypes=_DT, unknown_dims=_by_count)
record("dsplit", _gen(lambda v, nc: [
    Sample((v((2, 1, 4)), 2)), Sample((v((1, 2, 3)), [1]))]), dtypes=_DT, unknown_dims=_by_count)
record("unstack", _gen(lambda v, nc: [
    Sample((v((3, 2)),)), Sample((v((2, 3)),), {"axis": 1}), Sample((nc((3, 4)),), {"axis": -1})]),
       dtypes=_DT, unknown_dims=lambda s: "the number of outputs is the axis size")

# ---- tile / repeat -----------------------------------------------------------------------
record("tile", _gen(lambda v, nc: [
    Sample((v((3,)), 2)), Sample((v((2, 3)), (2, 1))), Sample((v((2, 3)), (1, 2, 3))),
    Sample((nc((3, 2)), (2, 2))), Sample((v(()), 3)), Sample((v((2, 3)), (2, 0))),
    Sample((v((2, 3)), 1))]), dtypes=_DT3)
record("repeat", _gen(lambda v, nc: [
    Sample((v((2, 3)), 2)), Sample((v((2, 3)), 3), {"axis": 1}), Sample((v((2, 3)), [1, 0, 2]),
                                                                        {"axis": 1}),
    Sample((nc((3, 2)), [2, 1, 1]), {"axis": 0}), Sample((v(()), 4)), Sample((v((4,)), 0)),
    Sample((v((2, 2)), [3]), {"axis": 0})]), dtypes=_DT3)

# ---- roll / rotate / flip ----------------------------------------------------------------
record("roll", _gen(lambda v, nc: [
    Sample((v((5,)), 2)), Sample((v((3, 4)), -1), {"axis": 1}), Sample((v((3, 4)), 7)),
    Sample((v((3, 4)), (1, 2)), {"axis": (0, 1)}), Sample((nc((3, 4)), (1, 1)), {"axis": (1, 1)}),
    Sample((v((3, 4)), 0), {"axis": 0}), Sample((v((0, 2)), 1), {"axis": 0})]), dtypes=_DT3)
record("rollaxis", _gen(lambda v, nc: [
    Sample((v((2, 3, 4)), 2)), Sample((v((2, 3, 4)), 0, 3)), Sample((nc((3, 4)), 1, 0)),
    Sample((v((2, 3, 4)), 1, 1))]), dtypes=_DT)
record("rot90", _gen(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((v((2, 3)), 2)), Sample((v((2, 3)), 3)), Sample((v((2, 3)), -1)),
    Sample((v((2, 3)), 4)), Sample((v((2, 3, 4)), 1), {"axes": (2, 0)}),
    Sample((nc((3, 4)), 1), {"axes": (1, 0)})]), dtypes=_DT)
record("flip", _gen(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((v((2, 3)), 1)), Sample((v((2, 3, 4)), (0, 2))),
    Sample((nc((3, 4)), -1)), Sample((v(()),))]), dtypes=_DT)
record("fliplr", _gen(lambda v, nc: [Sample((v((2, 3)),)), Sample((nc((3, 4)),))]), dtypes=_DT)
record("flipud", _gen(lambda v, nc: [Sample((v((3,)),)), Sample((nc((3, 4)),))]), dtypes=_DT)


# ---- block ---------------------------------------------------------------------------------
def _block(m, *a):
    if len(a) == 4:
        return m.block([[a[0], a[1]], [a[2], a[3]]])
    if len(a) == 3:
        return m.block([[[a[0]], [a[1]]], [[a[2]], [a[2]]]])
    if len(a) == 2:
        return m.block([a[0], a[1]])
    return m.block(a[0])


record("block", _gen(lambda v, nc: [
    Sample((v((2, 2)), v((2, 1)), v((1, 2)), v((1, 1)))),
    Sample((v((3,)), v((2,))), desc="1-d"), Sample((v((2,)), v((1, 2))), desc="ndim promotion"),
    Sample((nc((3, 2)), v((3, 1)), v((1, 2)), v((1, 1)))), Sample((v((2, 3)),), desc="depth 0"),
    Sample((v((2, 2)), v((2, 2)), v((2, 2))), desc="depth 3")]), dtypes=_DT, call=_block)

# ---- insert / delete / append / resize / trim_zeros -------------------------------------
record("append", _gen(lambda v, nc: [
    Sample((v((3,)), v((2,)))), Sample((v((2, 3)), v((4,)))), Sample((v((2, 3)), v((1, 3))),
                                                                     {"axis": 0}),
    Sample((nc((3, 4)), v((3, 2))), {"axis": 1})]), dtypes=_DT)
_SLICE_OR_LIST = "a position list or slice needs the axis size while tracing"
record("insert", _gen(lambda v, nc: [
    Sample((v((4,)), 1, v(()))), Sample((v((4,)), -1, v((2,)))), Sample((v((4,)), [1, 1, 3],
                                                                         v((3,)))),
    Sample((v((4,)), slice(1, 3), v((2,)))), Sample((v((2, 3)), 1, v((2,))), {"axis": 1}),
    Sample((v((2, 3)), [1], v((2, 1))), {"axis": 1}), Sample((nc((3, 4)), [0, 2], v(())),
                                                             {"axis": 0}),
    Sample((v((2, 3)), 4, v(())))]), dtypes=_DT,
       unknown_dims=_reason_if(lambda s: not isinstance(s.args[1], int), _SLICE_OR_LIST))
record("delete", _gen(lambda v, nc: [
    Sample((v((5,)), 1)), Sample((v((5,)), -1)), Sample((v((5, 2)), [0, 3]), {"axis": 0}),
    Sample((v((2, 4)), slice(None, None, 2)), {"axis": 1}),
    Sample((v((5,)), slice(4, 0, -2))), Sample((nc((3, 4)), [True, False, True]), {"axis": 0}),
    Sample((v((2, 3)), [1, 4]))]), dtypes=_DT)
record("resize", _gen(lambda v, nc: [
    Sample((v((2, 3)), (3, 4))), Sample((v((5,)), 3)), Sample((nc((3, 2)), (2, 3))),
    Sample((v((2, 2)), (0, 2))), Sample((v(()), (2, 2)))]), dtypes=_DT)


def _trim_samples(rng, dt):
    def sparse(shape, pattern):
        return np.where(np.asarray(pattern, bool), values(rng, shape, dt, "nonzero"),
                        np.zeros((), dt))
    return [Sample((sparse((6,), [0, 0, 1, 0, 1, 0]),)),
            Sample((sparse((6,), [0, 0, 1, 0, 1, 0]), "f")),
            Sample((sparse((6,), [0, 1, 1, 0, 1, 0]), "b")),
            Sample((sparse((3, 4), [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0]]),)),
            Sample((sparse((3, 4), [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0]]),), {"axis": 0}),
            Sample((np.zeros(3, dt),), desc="all zero")]


_MOVES_ZEROS = ("finite differences move the zeros that decide the output size; the gradient "
                "is checked in test_manip.py")
record("trim_zeros", _trim_samples, dtypes=_DT, vmap=False, vmap_reason=_DYN, diff_args=(),
       grad_reason=_MOVES_ZEROS)


# ---- pad ---------------------------------------------------------------------------------
def _pad_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    cv = lambda: values(rng, (), dt).item()  # noqa: E731
    out = [Sample((v((3,)), 2)), Sample((v((2, 3)), ((1, 2), (0, 3)))),
           Sample((v((2, 3)), (2, 1)), {"constant_values": cv()}),
           Sample((v((2, 3)), ((1, 1), (2, 0))), {"constant_values": ((cv(), cv()), (3, 4))}),
           Sample((noncontig(rng, (3, 4), dt), 1), {"mode": "constant"}),
           Sample((v((0, 2)), 1), desc="empty"), Sample((v((2, 3)), {1: (1, 2)}), desc="dict")]
    for mode in ("edge", "wrap", "reflect", "symmetric", "maximum", "minimum", "mean",
                 "median", "linear_ramp"):
        out.append(Sample((v((5,)), (2, 3)), {"mode": mode}))
        out.append(Sample((v((3, 4)), ((1, 2), (4, 9))), {"mode": mode}, "wide"))
    for mode in ("reflect", "symmetric"):
        out.append(Sample((v((4,)), (6, 9)), {"mode": mode, "reflect_type": "odd"}))
        out.append(Sample((v((1, 3)), 2), {"mode": mode}, "singleton"))
    for mode in ("maximum", "mean", "median"):
        out.append(Sample((v((5, 3)), ((2, 1), (1, 2))), {"mode": mode, "stat_length": (2, 1)}))
    out.append(Sample((v((4, 3)), 2), {"mode": "linear_ramp", "end_values": (cv(), 2)}))
    return out


# mode='empty' (uninitialized in NumPy) and mode=<function> are checked in test_manip.py
record("pad", _pad_samples, dtypes=_DT3, tol={F32: (1e-4, 1e-5)})

# ---- diagonals and triangles -------------------------------------------------------------
record("diag", _gen(lambda v, nc: [
    Sample((v((3,)),)), Sample((v((3,)), 2)), Sample((v((3,)), -1)), Sample((v((3, 4)),)),
    Sample((nc((3, 4)), 1)), Sample((v((0,)),))]), dtypes=_DT)
record("diagflat", _gen(lambda v, nc: [
    Sample((v((2, 2)),)), Sample((v((3,)), -1)), Sample((nc((2, 2)), 1))]), dtypes=_DT)
record("tri", _const(Sample((3,)), Sample((3, 5, 1)), Sample((4, 2, -1)),
                     lambda dt: Sample((3,), {"dtype": dt})), dtypes=(F64, I32, BOOL))
record("tril", _gen(lambda v, nc: [
    Sample((v((3, 4)),)), Sample((v((3, 4)), 1)), Sample((v((2, 3, 3)), -1)), Sample((v((3,)),)),
    Sample((nc((4, 3)),))]), dtypes=_DT + (BOOL,))
record("triu", _gen(lambda v, nc: [
    Sample((v((3, 4)),)), Sample((v((3, 4)), -1)), Sample((v((2, 3, 3)), 2)), Sample((v((3,)),)),
    Sample((nc((4, 3)),))]), dtypes=_DT + (BOOL,))
record("vander", _gen(lambda v, nc: [
    Sample((v((4,)),)), Sample((v((4,)), 3)), Sample((v((3,)), 5), {"increasing": True}),
    Sample((v((3,)), 0)), Sample((v((3,)), 1))]), dtypes=(F32, F64, I32),
       unknown_dims=_reason_if(lambda s: len(s.args) == 1, "N defaults to len(x)"))

# ---- index arrays ------------------------------------------------------------------------
record("indices", _const(Sample(((2, 3),)), Sample(((2, 3),), {"sparse": True}), Sample(((),)),
                         lambda dt: Sample(((3, 1, 2),), {"dtype": dt})), dtypes=(I64, F64))
record("ix_", lambda rng, dt: [Sample((_ints(rng, (2,), 5), _ints(rng, (3,), 4))),
                               Sample((values(rng, (4,), BOOL), _ints(rng, (2,), 3))),
                               Sample(([0, 2], [1]))],
       dtypes=(I64,), vmap=False, vmap_reason="boolean sequences become positions (data-dependent)")
record("meshgrid", _gen(lambda v, nc: [
    Sample((v((3,)), v((2,)))), Sample((v((3,)), v((2,))), {"indexing": "ij"}),
    Sample((v((2,)), v((3,)), v((2,))), {"sparse": True}), Sample((v((3,)),)),
    Sample((nc((2, 2)), v((2,))))]), dtypes=_DT)
record("ravel_multi_index", lambda rng, dt: [
    Sample(((_ints(rng, (3,), 2), _ints(rng, (3,), 4)), (2, 4))),
    Sample(((_ints(rng, (3,), 2), _ints(rng, (3,), 4)), (2, 4)), {"order": "F"}),
    Sample(((_ints(rng, (2, 2), 5), _ints(rng, (2,), 9)), (2, 4)), {"mode": ("wrap", "clip")}),
    Sample(((_ints(rng, (), 3), _ints(rng, (), 2), _ints(rng, (), 4)), (3, 2, 4)))],
       dtypes=(I64,), call=lambda m, idx, dims, **k: m.ravel_multi_index(idx, dims, **k))
record("unravel_index", lambda rng, dt: [
    Sample((_ints(rng, (4,), 8), (2, 4))),
    Sample((_ints(rng, (2, 2), 24), (2, 3, 4)), {"order": "F"}),
    Sample((_ints(rng, (), 6), (6,)))], dtypes=(I64,))
record("diag_indices", _const(Sample((3,)), Sample((2, 3)), Sample((0,))), dtypes=(I64,))
record("diag_indices_from", _gen(lambda v, nc: [Sample((v((3, 3)),)), Sample((v((2, 2, 2)),))]),
       dtypes=_DT, unknown_dims=lambda s: "the sizes must be compared")
record("tril_indices", _const(Sample((3,)), Sample((3, 1)), Sample((3, -1, 4))), dtypes=(I64,))
record("triu_indices", _const(Sample((3,)), Sample((3, 1)), Sample((3, -1, 4))), dtypes=(I64,))
record("tril_indices_from", _gen(lambda v, nc: [Sample((v((3, 4)),)), Sample((v((3, 4)), 1))]),
       dtypes=_DT, unknown_dims=lambda s: "the indices are constants of the shape")
record("triu_indices_from", _gen(lambda v, nc: [Sample((v((3, 4)),)), Sample((v((4, 3)), -1))]),
       dtypes=_DT, unknown_dims=lambda s: "the indices are constants of the shape")
record("mask_indices", _const(Sample((3,)), Sample((4, 1)), Sample((3, -1))), dtypes=(I64,),
       call=lambda m, n, k=0: m.mask_indices(n, m.triu, k))


# ---- choosing and selecting --------------------------------------------------------------
def _choose_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((_ints(rng, (4,), 3), v((4,)), v((4,)), v((4,)))),
            Sample((_ints(rng, (2, 1), 2), v((3,)), v((2, 3)))),
            Sample((_ints(rng, (3,), 5), v((3,)), v((3,))), {"mode": "wrap"}),
            Sample((_ints(rng, (3,), 4, -2), v((3,)), noncontig(rng, (3,), dt)), {"mode": "clip"})]


record("choose", _choose_samples, dtypes=_DT,
       call=lambda m, a, *c, **k: m.choose(a, list(c), **k))
record("compress", _gen(lambda v, nc: [
    Sample(([0, 1, 1], v((2, 3))), {"axis": 1}), Sample(([True], v((2, 3))), {"axis": 1}),
    Sample(([False, True, False, False], nc((3, 3))), {"axis": 0}),
    Sample(([1, 0, 1, 1], v((2, 3))))]), dtypes=_DT)


def _cond_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((values(rng, (2, 3), BOOL), v((2, 3)))),
            Sample((_ints(rng, (4,), 2), v((5,)))), Sample((np.zeros(3, bool), v((3,))))]


record("extract", _cond_samples, dtypes=_DT, vmap=False, vmap_reason=_DYN)


def _select_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    c = lambda s: values(rng, s, BOOL)  # noqa: E731
    return [Sample((c((2, 3)), c((2, 3)), v((2, 3)), v((2, 3)))),
            Sample((c((3,)), c((2, 1)), v(()), v((3,))), {"default": 1}),
            Sample((c((2, 3)), c((3,)), noncontig(rng, (2, 3), dt), v((2, 3))),
                   {"default": v(())})]


record("select", _select_samples, dtypes=_DT,
       call=lambda m, c1, c2, v1, v2, **k: m.select([c1, c2], [v1, v2], **k))

# ---- in-place writers ----------------------------------------------------------------------
record("copyto", _gen(lambda v, nc: [
    Sample((v((2, 3)), v((2, 3)))), Sample((v((2, 3)), v((3,)))), Sample((nc((3, 4)), v(()))),
    Sample((v((2, 3)), v((1, 3))), {"where": np.array([[True, False, True]])})]),
       dtypes=_DT, call=_mutating("copyto"))
record("put", lambda rng, dt: [
    Sample((values(rng, (2, 3), dt), [0, 4], values(rng, (2,), dt))),
    Sample((values(rng, (5,), dt), [1, -1, 2], values(rng, (1,), dt))),
    Sample((values(rng, (2, 3), dt), [0, 9], values(rng, (2,), dt)), {"mode": "clip"}),
    Sample((values(rng, (2, 3), dt), [7, -8], values(rng, (3,), dt)), {"mode": "wrap"}),
    Sample((noncontig(rng, (3, 4), dt), [5], values(rng, (), dt)))],
       dtypes=_DT, call=_mutating("put"))
record("put_along_axis", lambda rng, dt: [
    Sample((values(rng, (2, 3), dt), _ints(rng, (2, 1), 3), values(rng, (2, 1), dt)), {"axis": 1}),
    Sample((values(rng, (3, 2), dt), np.array([[0, 2]]), values(rng, (), dt)), {"axis": 0}),
    Sample((values(rng, (2, 3), dt), np.array([1, 4]), values(rng, (2,), dt)), {"axis": None})],
       dtypes=_DT, call=_mutating("put_along_axis"))


def _place_samples(rng, dt):
    return [Sample((values(rng, (2, 3), dt), values(rng, (2, 3), BOOL), values(rng, (2,), dt))),
            Sample((values(rng, (5,), dt), values(rng, (5,), BOOL), values(rng, (7,), dt))),
            Sample((values(rng, (4,), dt), np.zeros(4, bool), values(rng, (0,), dt)))]


record("place", _place_samples, dtypes=_DT, call=_mutating("place"), vmap=False,
       vmap_reason="which value goes where depends on the count of true values before it")
record("putmask", lambda rng, dt: [
    Sample((values(rng, (2, 3), dt), values(rng, (2, 3), BOOL), values(rng, (2,), dt))),
    Sample((values(rng, (5,), dt), values(rng, (5,), BOOL), values(rng, (), dt))),
    Sample((noncontig(rng, (3, 2), dt), values(rng, (3, 2), BOOL), values(rng, (6,), dt)))],
       dtypes=_DT, call=_mutating("putmask"))
record("fill_diagonal", lambda rng, dt: [
    Sample((values(rng, (3, 4), dt), values(rng, (), dt))),
    Sample((values(rng, (7, 3), dt), values(rng, (2,), dt)), {"wrap": True}),
    Sample((values(rng, (7, 3), dt), values(rng, (2,), dt))),
    Sample((values(rng, (3, 3, 3), dt), values(rng, (3,), dt)))],
       dtypes=_DT, call=_mutating("fill_diagonal"),
       unknown_dims=lambda s: "the diagonal's flat positions come from the shape")


# ---- logic -----------------------------------------------------------------------------------
def _close_samples(rng, dt):
    a = values(rng, (2, 3), dt)
    b = (a + np.where(values(rng, (2, 3), BOOL), 0, 1)).astype(dt)
    sp = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], dtype=dt) if dt.kind == "f" else \
        np.arange(5).astype(dt)
    return [Sample((a, b)), Sample((a, a.astype(np.float64) * (1 + 1e-9)), desc="within rtol"),
            Sample((sp, sp[::-1].copy())), Sample((sp, sp), {"equal_nan": True}),
            Sample((a, 1), {"atol": 0.5}), Sample((a, b), {"rtol": 0.1, "atol": 0.0})]


record("isclose", _close_samples, dtypes=(F32, F64, I32))
_PYBOOL = "NumPy answers with a Python bool (a 0-d array when batched): tested in test_manip.py"
record("allclose", _close_samples, dtypes=(F64, I32), vmap=False, vmap_reason=_PYBOOL)


def _equal_samples(rng, dt):
    a = values(rng, (2, 3), dt)
    return [Sample((a, a.copy())), Sample((a, values(rng, (2, 3), dt))),
            Sample((a, values(rng, (3,), dt)), desc="shapes differ"),
            Sample((a, a.copy()), {"equal_nan": True})]


record("array_equal", _equal_samples, dtypes=(F64, I32), vmap=False, vmap_reason=_PYBOOL,
       unknown_dims=lambda s: "whether the shapes are equal decides the answer")
record("array_equiv", lambda rng, dt: [s for s in _equal_samples(rng, dt) if not s.kwargs] + [
    Sample((values(rng, (3,), dt), values(rng, (2, 3), dt)), desc="broadcast")],
       dtypes=(F64, I32), vmap=False, vmap_reason=_PYBOOL,
       unknown_dims=lambda s: "whether the shapes broadcast decides the answer")


def _complexish(rng, dt):
    a = values(rng, (2, 3), dt)
    if dt.kind == "c":
        a = np.where(values(rng, (2, 3), BOOL), a.real, a).astype(dt)
    return [Sample((a,)), Sample((values(rng, (), dt),))]


record("isreal", _complexish, dtypes=(F64, C128))
record("iscomplex", _complexish, dtypes=(F64, C128))


def _special(rng, dt):
    return [Sample((np.array([1.0, np.inf, -np.inf, np.nan, -0.0], dtype=dt),)),
            Sample((values(rng, (2, 3), dt),))]


record("isposinf", _special, dtypes=(F32, F64))
record("isneginf", _special, dtypes=(F32, F64))


def _nan_samples(rng, dt):
    a = values(rng, (2, 4), dt)
    b = a.copy()
    if dt.kind in "fc":
        a[0, 1] = b[0, 1] = np.nan
        b[1, 0], b[1, 2] = np.inf, -np.inf
    # infinities go to the default +-finfo.max only in test_manip.py (a loss of 1e308 leaves
    # no room for finite differences)
    return [Sample((a,)), Sample((b,), {"nan": -1.5, "posinf": 3, "neginf": -3}),
            Sample((values(rng, (), dt),))]


record("nan_to_num", _nan_samples, dtypes=(F32, F64, I32, C128))
record("real_if_close", lambda rng, dt: [
    Sample(((values(rng, (3,), F64) + 1e-15j).astype(dt),)),
    Sample(((values(rng, (3,), F64) + 1e-3j).astype(dt),)), Sample((values(rng, (3,), F64),)),
    Sample(((values(rng, (3,), F64) + 1e-9j).astype(dt),), {"tol": 1e8})],
       dtypes=(C128,), jit=False, vmap=False, diff_args=(),
       vmap_reason="the result dtype depends on the values (ValueError when traced)",
       grad_reason="complex in, real or complex out depending on the values")

# ---- conversions ---------------------------------------------------------------------------
record("require", _gen(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((nc((3, 4)), np.float32)), Sample((v(()), None, ["C", "W"]))]),
       dtypes=_DT)
record("asfortranarray", _gen(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((nc((3, 4)),)), Sample((v(()),)),
    Sample((v((2,)),), {"dtype": np.float64})]), dtypes=_DT)
record("asarray_chkfinite", _gen(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((nc((3, 4)),)), Sample((v((2,)),), {"dtype": np.float64})]),
       dtypes=_DT)
record("fromfunction", _const(Sample(((2, 3),)), lambda dt: Sample(((3, 2),), {"dtype": dt})),
       dtypes=(F64, I64), call=lambda m, shape, **k: m.fromfunction(
           lambda i, j: i * 10 + j * j, shape, **k))
record("frombuffer", _const(Sample((b"\x01\x02\x03\x04\x05\x06\x07\x08",)),
                            lambda dt: Sample((np.arange(4, dtype=dt).tobytes(),), {"dtype": dt}),
                            Sample((b"\x01\x02\x03\x04",), {"dtype": np.uint8, "offset": 1,
                                                            "count": 2})),
       dtypes=(F64, I32))
record("fromiter", _const(lambda dt: Sample(([1, 2, 3], dt)), Sample(([], np.float64)),
                          lambda dt: Sample((range(6), dt), {"count": 4})),
       dtypes=(F64, I32), call=lambda m, it, dt, **k: m.fromiter(iter(it), dt, **k))
record("fromstring", _const(Sample(("1 2 3",), {"sep": " "}),
                            lambda dt: Sample(("1,2,3,4",), {"dtype": dt, "sep": ","})),
       dtypes=(F64, I32))
def _view_samples(rng, dt):
    """Bytes read as another dtype: of the same itemsize (also strided and 0-d), of a smaller
    and a larger one (the last axis resized), empty."""
    dt = np.dtype(dt)
    same, small = {4: np.int32, 8: np.int64, 1: np.uint8, 16: np.complex128}[dt.itemsize], np.int8
    big = np.complex128 if dt.itemsize == 8 else np.int64
    return [Sample((values(rng, (2, 8), dt), same)), Sample((noncontig(rng, (3, 4), dt), same)),
            Sample((values(rng, (), dt), same)), Sample((values(rng, (3, 4), dt), small)),
            Sample((values(rng, (2, 16 // dt.itemsize), dt), big)),
            Sample((values(rng, (0, 8), dt), small))]


record("ndarray.view", _view_samples, dtypes=(F32, F64, I32, BOOL, C128),
       call=lambda m, x, dtype: m.asarray(x).view(dtype), diff_args=(),
       grad_reason="the bits of a value, not a function of it (tf.bitcast has no gradient)")


def _bits(rng, dt):
    return [Sample((values(rng, (2, 5), dt),)), Sample((values(rng, (2, 9), dt),), {"axis": 1}),
            Sample((values(rng, (3, 2), dt),), {"axis": 0, "bitorder": "little"}),
            Sample((values(rng, (), dt),))]


record("packbits", _bits, dtypes=(BOOL, I32, U8),
       unknown_dims=lambda s: "padding to whole bytes needs the axis size")


def _unbits(rng, dt):
    b = lambda s: np.asarray(rng.integers(0, 256, size=s)).astype(np.uint8)  # noqa: E731
    return [Sample((b((3,)),)), Sample((b((2, 2)),), {"axis": 1}),
            Sample((b((2, 2)),), {"axis": 0, "bitorder": "little"}),
            Sample((b((3,)),), {"count": 5}), Sample((b((3,)),), {"count": -3}),
            Sample((b((2,)),), {"count": 19})]


record("unpackbits", _unbits, dtypes=(U8,),
       unknown_dims=_reason_if(lambda s: s.kwargs.get("count", 0) > 16,
                               "a count beyond the bits pads: needs the size"))

# Public names that compute nothing (queries of dtypes, memory and Python objects); the host
# memory queries are checked in test_manip.py.
NON_COMPUTING.update({
    "isrealobj", "isscalar", "iterable", "isfortran", "shares_memory", "may_share_memory",
    "promote_types", "min_scalar_type", "mintypecode", "typename", "isdtype", "common_type",
})


# nothing to differentiate: boolean or integer results, or built from Python values only
for _reason, _names in {
        "boolean results": ("isclose", "allclose", "array_equal", "array_equiv", "isreal",
                            "iscomplex", "isposinf", "isneginf"),
        "integer results (indices)": ("indices", "diag_indices_from", "tril_indices_from",
                                      "triu_indices_from"),
        "created from Python values or host buffers, no array input": (
            "tri", "fromfunction", "frombuffer", "fromiter", "fromstring")}.items():
    for _n in _names:
        _r = next(r for r in RECORDS if r.name == _n)
        _r.diff_args, _r.grad_reason = (), _reason
