"""Manipulation, indexing routines, logic and conversions beyond the op table: errors against
NumPy's, pad's 'empty' and function modes, data-dependent sizes (eager, traced, batched),
in-place writers, host queries, index tricks, and hypothesis over shapes."""
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndflow as nf
import ndflow.numpy as tnp
from helpers import assert_same

X = np.arange(12.0).reshape(3, 4)
V = np.arange(5.0)


def _both(f, *args):
    """(NumPy's exception, ndflow's exception) for the same call."""
    errs = []
    for m, conv in ((np, lambda a: a), (tnp, lambda a: tnp.asarray(a) if isinstance(
            a, np.ndarray) else a)):
        try:
            f(m, *[conv(a) for a in args])
        except Exception as e:      # noqa: BLE001 - compared below
            errs.append(e)
        else:
            errs.append(None)
    return errs


_ERRORS = [
    ("split unequal", lambda m, a: m.split(a, 2), V),
    ("split by zero", lambda m, a: m.split(a, 0), V),
    ("array_split zero", lambda m, a: m.array_split(a, 0), V),
    ("hsplit 0-d", lambda m, a: m.hsplit(a, 2), np.float64(1)),
    ("vsplit 1-d", lambda m, a: m.vsplit(a, 2), V),
    ("dsplit 2-d", lambda m, a: m.dsplit(a, 2), X),
    ("unstack 0-d", lambda m, a: m.unstack(a), np.float64(1)),
    ("repeat negative", lambda m, a: m.repeat(a, -1), V),
    ("repeat negative counts", lambda m, a: m.repeat(a, [1, -1, 1], axis=0), X),
    ("repeat count mismatch", lambda m, a: m.repeat(a, [1, 2], axis=0), X),
    ("repeat float counts", lambda m, a: m.repeat(a, np.array([2.0, 1, 1]), axis=0), X),
    ("tile negative", lambda m, a: m.tile(a, -1), V),
    ("roll axis", lambda m, a: m.roll(a, 1, axis=2), X),
    ("roll mismatch", lambda m, a: m.roll(a, (1, 2), axis=(0, 1, 1)), X),
    ("rot90 same axes", lambda m, a: m.rot90(a, axes=(0, 0)), X),
    ("rot90 axes length", lambda m, a: m.rot90(a, axes=(0,)), X),
    ("rot90 axes range", lambda m, a: m.rot90(a, axes=(0, 5)), X),
    ("rollaxis start", lambda m, a: m.rollaxis(a, 0, 4), X),
    ("fliplr 1-d", lambda m, a: m.fliplr(a), V),
    ("flipud 0-d", lambda m, a: m.flipud(a), np.float64(1)),
    ("block empty", lambda m: m.block([])),
    ("block depths", lambda m: m.block([[1, 2], 3])),
    ("block depths 2", lambda m, a: m.block([a, [a]]), V),
    ("block tuple", lambda m: m.block((1, 2))),
    ("append ndim", lambda m, a, b: m.append(a, b, axis=0), X, V),
    ("concatenate ndim", lambda m, a, b: m.concatenate([a, b]), X, V),
    ("delete out of bounds", lambda m, a: m.delete(a, 7), V),
    ("delete list out of bounds", lambda m, a: m.delete(a, [0, 9]), V),
    ("delete bool shape", lambda m, a: m.delete(a, np.array([True, False])), V),
    ("insert out of bounds", lambda m, a: m.insert(a, 6, 1.0), V),
    ("insert 2-d obj", lambda m, a: m.insert(a, [[1]], 1.0), V),
    ("resize negative", lambda m, a: m.resize(a, (2, -1)), V),
    ("trim_zeros trim", lambda m, a: m.trim_zeros(a, "x"), V),
    ("pad negative", lambda m, a: m.pad(a, -1), V),
    ("pad float width", lambda m, a: m.pad(a, 1.5), V),
    ("pad mode", lambda m, a: m.pad(a, 1, mode="foo"), V),
    ("pad kwargs", lambda m, a: m.pad(a, 1, mode="edge", constant_values=1), V),
    ("pad empty axis", lambda m, a: m.pad(a, 1, mode="edge"), np.zeros((0, 3))),
    ("pad stat_length 0", lambda m, a: m.pad(a, 2, mode="maximum", stat_length=0), V),
    ("diagonal 1-d", lambda m, a: m.diagonal(a), V),
    ("diagonal same axes", lambda m, a: m.diagonal(a, 0, 1, 1), X),
    ("diag 3-d", lambda m, a: m.diag(a), np.zeros((2, 2, 2))),
    ("vander 2-d", lambda m, a: m.vander(a), X),
    ("ix_ 2-d", lambda m, a: m.ix_(a), X),
    ("meshgrid indexing", lambda m, a: m.meshgrid(a, a, indexing="yx"), V),
    ("ravel_multi_index bounds", lambda m: m.ravel_multi_index(([0, 2], [2, 3]), (2, 4))),
    ("ravel_multi_index float", lambda m: m.ravel_multi_index((0.0, 2), (2, 4))),
    ("unravel_index bounds", lambda m: m.unravel_index(8, (2, 4))),
    ("unravel_index negative", lambda m: m.unravel_index(-1, (2, 4))),
    ("unravel_index float", lambda m: m.unravel_index(1.0, (2, 4))),
    ("diag_indices_from shape", lambda m, a: m.diag_indices_from(a), X),
    ("tril_indices_from 1-d", lambda m, a: m.tril_indices_from(a), V),
    ("choose bounds", lambda m: m.choose([0, 1, 2], [[1, 2, 3], [4, 5, 6]])),
    ("choose float", lambda m: m.choose([0.0, 1], [[1, 2], [4, 5]])),
    ("compress 2-d condition", lambda m, a: m.compress([[1]], a), X),
    ("compress long condition", lambda m, a: m.compress([0, 0, 0, 0, 1], a, axis=1), X),
    ("select lengths", lambda m, a: m.select([a > 1], [a, a]), V),
    ("select empty", lambda m: m.select([], [])),
    ("select int condition", lambda m, a: m.select([np.array([1, 0, 1, 0, 1])], [a]), V),
    ("put bounds", lambda m, a: m.put(m.array(a), [0, 10], [1.0, 2.0]), V),
    ("place size", lambda m, a: m.place(m.array(a), [True], [1.0]), V),
    ("place empty values", lambda m, a: m.place(m.array(a), a > 2, []), V),
    ("putmask size", lambda m, a: m.putmask(m.array(a), [True], [1.0]), V),
    ("copyto cast", lambda m: m.copyto(m.zeros(3, int), 1.5)),
    ("copyto cast array", lambda m: m.copyto(m.zeros(3, int), np.array([1.5]))),
    ("copyto overflow", lambda m: m.copyto(m.zeros(3, np.int8), 300)),
    ("copyto shape", lambda m: m.copyto(m.zeros(3), np.array([1.0, 2.0]))),
    ("fill_diagonal 1-d", lambda m, a: m.fill_diagonal(m.array(a), 1.0), V),
    ("fill_diagonal unequal", lambda m: m.fill_diagonal(m.zeros((2, 3, 2)), 1.0)),
    ("isposinf complex", lambda m: m.isposinf(np.array([1 + 1j]))),
    ("convolve empty", lambda m, a: m.convolve(a, []), V),
    ("convolve both empty", lambda m: m.convolve([], [])),
    ("correlate 0-d", lambda m, a: m.correlate(np.float64(2), a), V),
    ("polyder negative", lambda m, a: m.polyder(a, -1), V),
    ("polyint negative", lambda m, a: m.polyint(a, -1), V),
    ("polyint short k", lambda m, a: m.polyint(a, 3, k=[1, 2]), V),
    ("polyfit deg", lambda m, a: m.polyfit(a, a, -1), V),
    ("polyfit 2-d x", lambda m, a: m.polyfit(a, a[0], 1), X),
    ("polyfit lengths", lambda m, a: m.polyfit(a, a[:3], 1), V),
    ("poly 3-d", lambda m: m.poly(np.zeros((2, 2, 2)))),
    ("packbits float", lambda m: m.packbits(np.array([1.0]))),
    ("unpackbits int", lambda m: m.unpackbits(np.array([1, 2]))),
]


@pytest.mark.parametrize("name,f,args", [pytest.param(n, f, a, id=n) for n, f, *a in _ERRORS])
def test_errors_match_numpy(name, f, args):
    want, got = _both(f, *args)
    assert want is not None, f"{name}: NumPy does not raise"
    assert got is not None, f"{name}: ndflow does not raise ({want!r} from NumPy)"
    assert isinstance(got, type(want)), f"{name}: {type(got).__name__}: {got} vs NumPy's " \
                                        f"{type(want).__name__}: {want}"


_SAME_MESSAGE = ["split unequal", "array_split zero", "hsplit 0-d", "vsplit 1-d", "dsplit 2-d",
                 "repeat negative", "repeat negative counts", "rot90 same axes",
                 "rot90 axes length", "rollaxis start", "fliplr 1-d", "flipud 0-d",
                 "block empty", "block depths", "block depths 2", "block tuple", "append ndim",
                 "concatenate ndim", "delete out of bounds", "insert out of bounds",
                 "resize negative", "trim_zeros trim", "pad negative", "pad float width",
                 "pad mode", "pad kwargs", "pad empty axis", "pad stat_length 0", "diag 3-d",
                 "vander 2-d", "ix_ 2-d", "meshgrid indexing", "ravel_multi_index bounds",
                 "ravel_multi_index float", "unravel_index bounds", "diag_indices_from shape",
                 "choose bounds", "compress 2-d condition", "select lengths", "select empty",
                 "select int condition", "place size", "place empty values", "putmask size",
                 "copyto cast", "copyto cast array", "copyto overflow", "copyto shape",
                 "fill_diagonal unequal", "isposinf complex", "convolve empty",
                 "polyder negative", "polyint negative", "polyfit deg", "polyfit 2-d x",
                 "polyfit lengths", "poly 3-d", "unpackbits int"]


@pytest.mark.parametrize("name", _SAME_MESSAGE)
def test_error_messages_match_numpy(name):
    f, *args = next(e[1:] for e in _ERRORS if e[0] == name)
    want, got = _both(f, *args)
    assert str(got) == str(want), f"{name}: {got!s} vs NumPy's {want!s}"


# ------------------------------------------------------------------ pad: empty and functions
def test_pad_empty_mode_shape_and_dtype():
    for a in (V, X.astype(np.int32)):
        got = tnp.pad(tnp.asarray(a), ((1, 2),) * a.ndim, mode="empty")
        want = np.pad(a, ((1, 2),) * a.ndim, mode="empty")
        assert_same(got, want, values=False)


def _pad_with(vector, pad_width, iaxis, kwargs):
    vector[:pad_width[0]] = kwargs.get("padder", 10)
    vector[-pad_width[1]:] = kwargs.get("padder", 10)


def _pad_branchy(vector, pad_width, iaxis, kwargs):
    # a Python decision on the values: runs row by row (as NumPy does)
    if vector[pad_width[0]] > 3:
        vector[:pad_width[0]] = vector[pad_width[0]] * 2


@pytest.mark.parametrize("fn,kw", [(_pad_with, {}), (_pad_with, {"padder": 100}),
                                   (_pad_branchy, {})])
def test_pad_function_mode(fn, kw):
    a = np.arange(6.0).reshape(2, 3)
    for w in (2, ((1, 2), (0, 3))):
        assert_same(tnp.pad(tnp.asarray(a), w, fn, **kw), np.pad(a, w, fn, **kw))


def _double_edge(vector, pad_width, iaxis, kwargs):
    vector[:pad_width[0]] = vector[pad_width[0]] * 2.0


def test_pad_function_mode_is_differentiable_and_compiles():
    a = np.arange(1.0, 7.0).reshape(2, 3)
    x = tnp.asarray(a)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.pad(x, 1, _double_edge)
        loss = tnp.sum(y)
    g = tape.gradient(loss, x)
    assert_same(y, np.pad(a, 1, _double_edge))
    # the padding is linear in x: its gradient is the finite difference of NumPy's result
    want = np.zeros_like(a)
    for i in np.ndindex(*a.shape):
        e = np.zeros_like(a)
        e[i] = 1.0
        want[i] = np.pad(a + e, 1, _double_edge).sum() - np.pad(a, 1, _double_edge).sum()
    np.testing.assert_allclose(g.numpy(), want)
    f = nf.function(lambda v: tnp.pad(v, 1, _double_edge))
    assert_same(f(x), np.pad(a, 1, _double_edge))


def test_pad_unknown_sizes_every_mode():
    a = np.arange(1.0, 13.0).reshape(3, 4) ** 1.5
    for mode, kw in [("constant", {"constant_values": 2}), ("edge", {}), ("wrap", {}),
                     ("reflect", {}), ("symmetric", {"reflect_type": "odd"}),
                     ("linear_ramp", {"end_values": (1, 2)}), ("mean", {"stat_length": 2}),
                     ("median", {}), ("minimum", {})]:
        f = nf.function(lambda x: tnp.pad(x, ((2, 5), (7, 1)), mode, **kw),
                        input_signature=[nf.TensorSpec([None, None], np.float64)])
        assert_same(f(tnp.asarray(a)), np.pad(a, ((2, 5), (7, 1)), mode, **kw), 1e-12, 1e-12,
                    ctx=mode)


def test_pad_median_is_numpys_at_the_extremes_on_every_path():
    """numpy.median is np.mean of the middle one or two: an odd region gives its middle
    element (not (m + m) / 2, which overflowed to inf past half the largest float and made NaN
    at a corner), float16's pair is summed in float32; eager, compiled (known and unknown
    sizes) and vectorized, bit for bit with NaN where NumPy has it."""
    def same(got, want, ctx):
        got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), \
            (ctx, got, want)
    for dt in (np.float64, np.float32, np.float16, np.int32):
        big = np.finfo(dt).max if np.dtype(dt).kind == "f" else np.iinfo(dt).max
        a = np.array([[big, 1, big], [big, -big, big], [big, big, 2], [-big, big, 1]], dt)
        for stat in (None, 1, 2, 3, (2, 1)):
            kw = {} if stat is None else {"stat_length": stat}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = np.pad(a, ((2, 1), (1, 2)), mode="median", **kw)
                ctx = (np.dtype(dt).name, stat)
                same(tnp.pad(tnp.asarray(a), ((2, 1), (1, 2)), mode="median", **kw), want, ctx)
                pad = lambda x: tnp.pad(x, ((2, 1), (1, 2)), mode="median", **kw)  # noqa: E731
                same(nf.function(pad)(tnp.asarray(a)), want, ctx + ("compiled",))
                f = nf.function(pad, input_signature=[nf.TensorSpec([None, None], dt)])
                same(f(tnp.asarray(a)), want, ctx + ("unknown sizes",))
                rows = nf.vectorized_map(
                    lambda r: tnp.pad(r, (1, 2), mode="median", **kw), tnp.asarray(a))
                same(rows, np.stack([np.pad(r, (1, 2), mode="median", **kw) for r in a]),
                     ctx + ("vectorized",))
    # odd and even regions: the gradient reaches the middle element(s) in NumPy's share
    x = tnp.asarray(np.array([3.0, 1.0, 2.0, 5.0]))
    for stat, want in ((3, [0.0, 0.0, 1.0, 0.0]), (2, [0.5, 0.5, 0.0, 0.0])):
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.pad(x, (1, 0), mode="median", stat_length=stat)[0]
        np.testing.assert_array_equal(t.gradient(y, x).numpy(), want)


def test_pad_constant_values_are_differentiable():
    c = tnp.asarray(1.5)
    x = tnp.asarray(V)
    with nf.GradientTape() as tape:
        tape.watch(c)
        loss = tnp.sum(tnp.pad(x, (2, 3), constant_values=c))
    assert float(tape.gradient(loss, c)) == 5.0


# ------------------------------------------------------------------ data-dependent sizes
def test_trim_zeros_gradient_goes_to_kept_elements():
    a = np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0])
    x = tnp.asarray(a)
    c = tnp.asarray([1.0, 2.0, 3.0])
    with nf.GradientTape() as tape:
        tape.watch(x)
        loss = tnp.sum(tnp.trim_zeros(x) * c)
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), [0, 0, 1, 2, 3, 0])


def test_trim_zeros_traced_has_unknown_size():
    shapes = []

    def trim(x):
        r = tnp.trim_zeros(x)
        shapes.append(r.shape)
        return r
    f = nf.function(trim)
    for a in (np.array([0, 0, 1.0, 2, 0]), np.array([3.0, 0, 0, 0, 0])):
        assert_same(f(tnp.asarray(a)), np.trim_zeros(a))
    assert f.experimental_get_tracing_count() == 1 and shapes == [(None,)]


@pytest.mark.parametrize("name,f", [
    ("trim_zeros", lambda x: tnp.trim_zeros(x)),
    ("extract", lambda x: tnp.extract(x > 0, x)),
    ("polymul", lambda x: tnp.polymul(x, x)),
    ("place", lambda x: tnp.place(tnp.array(x), x > 0, [1.0])),
    ("delete", lambda x: tnp.delete(x, x > 0)),
    ("repeat", lambda x: tnp.repeat(x, tnp.asarray(x > 0).astype(np.int64))),
])
def test_data_dependent_sizes_inside_vectorized_map_name_the_op(name, f):
    xs = tnp.asarray(np.array([[0.0, 1.0, -2.0], [3.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match=name):
        nf.vectorized_map(f, xs)


def test_repeat_with_traced_counts():
    a = np.array([1.0, 2.0, 3.0])
    r = np.array([2, 0, 3])
    f = nf.function(lambda x, k: tnp.repeat(x, k))
    assert_same(f(tnp.asarray(a), tnp.asarray(r)), np.repeat(a, r))
    x, k = tnp.asarray(a), tnp.asarray(r)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = f(x, k)
        loss = tnp.sum(y * tnp.arange(5.0))
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), [0 + 1, 0, 2 + 3 + 4])
    # batched over x (the counts shared): vectorizes
    xs = tnp.asarray(np.stack([a, 2 * a]))
    got = nf.vectorized_map(lambda v: tnp.repeat(v, k), xs)
    assert_same(got, np.stack([np.repeat(a, r), np.repeat(2 * a, r)]))


def test_delete_with_traced_positions():
    a = np.arange(6.0)
    f = nf.function(lambda x, o: tnp.delete(x, o))
    assert_same(f(tnp.asarray(a), tnp.asarray([1, 4])), np.delete(a, [1, 4]))
    assert_same(f(tnp.asarray(a), tnp.asarray(a > 3)), np.delete(a, a > 3))


# ------------------------------------------------------------------ in-place writers
def test_writers_write_through_views_eagerly():
    a = tnp.zeros((2, 3))
    row = a[0]
    tnp.put(a, [1], 5.0)
    tnp.fill_diagonal(a, 7.0)
    tnp.putmask(a, a > 6, 8.0)
    tnp.copyto(a, 1.0, where=tnp.asarray([[False, False, True]]))
    np.testing.assert_array_equal(row.numpy(), [8.0, 5.0, 1.0])


def test_writers_differentiate_under_a_tape():
    x = tnp.asarray(np.arange(6.0).reshape(2, 3))
    v = tnp.asarray([10.0, 20.0])
    with nf.GradientTape(persistent=True) as tape:
        tape.watch([x, v])
        a = tnp.array(x)
        tnp.put(a, [0, 5], v)
        tnp.place(a, tnp.asarray([[False, True, False], [False, False, False]]), v * 3)
        loss = tnp.sum(a * tnp.arange(1.0, 7.0).reshape(2, 3))
    np.testing.assert_array_equal(tape.gradient(loss, v).numpy(), [1 + 2 * 3, 6])
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), [[0, 0, 3], [4, 5, 0]])


def test_nan_to_num_defaults_and_in_place():
    a = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert_same(tnp.nan_to_num(tnp.asarray(a)), np.nan_to_num(a))
    x = tnp.asarray(a.copy())
    r = tnp.nan_to_num(x, copy=False)
    assert r is x
    assert_same(x, np.nan_to_num(a))
    c = np.array([complex(np.nan, np.inf), complex(-np.inf, 2)])
    assert_same(tnp.nan_to_num(tnp.asarray(c)), np.nan_to_num(c))


def test_python_bool_answers_batched_and_traced():
    a = np.array([[1.0, 2.0], [1.0, 5.0]])
    b = np.array([[1.0, 2.0], [1.0, 2.0]])
    assert tnp.allclose(tnp.asarray(a[0]), tnp.asarray(b[0])) is True
    assert tnp.array_equal(a[1], b[1]) is False
    for f, npf in ((tnp.allclose, np.allclose), (tnp.array_equal, np.array_equal),
                   (tnp.array_equiv, np.array_equiv)):
        got = nf.vmap(f)(tnp.asarray(a), tnp.asarray(b))
        np.testing.assert_array_equal(got.numpy(), [npf(x, y) for x, y in zip(a, b)])
        traced = nf.function(f)(tnp.asarray(a), tnp.asarray(b))
        assert bool(traced) == npf(a, b)


# ------------------------------------------------------------------ host queries
def test_host_queries_match_numpy():
    a = np.arange(6.0).reshape(2, 3)
    ta = tnp.asarray(a)
    assert tnp.shares_memory(ta, ta[0]) == np.shares_memory(a, a[0]) is True
    assert tnp.may_share_memory(ta, tnp.asarray(a.copy())) is False
    assert tnp.isfortran(tnp.asarray(np.asfortranarray(a))) is True
    assert tnp.isfortran(ta) is False
    assert tnp.iterable(ta) and not tnp.iterable(tnp.asarray(1.0)) and not tnp.iterable(1)
    assert tnp.isscalar(3.0) and tnp.isscalar(np.float32(1)) and not tnp.isscalar(ta)
    assert not tnp.isscalar(tnp.asarray(1.0))
    assert tnp.isrealobj(ta) and not tnp.isrealobj(tnp.asarray([1j]))
    assert tnp.promote_types(np.float32, np.int64) == np.float64
    assert tnp.min_scalar_type(300) == np.uint16
    assert tnp.mintypecode("idF") == "D"
    assert tnp.typename("d") == np.typename("d")
    assert tnp.isdtype(tnp.float32, "real floating") and not tnp.isdtype(tnp.int32, "bool")
    assert tnp.common_type(ta, tnp.asarray([1], np.int32)) is np.float64
    with pytest.raises(nf.TracingError):
        nf.function(lambda x: tnp.shares_memory(x, x))(ta)


def test_conversions_place_and_copy():
    b = b"\x00\x00\x80\x3f\x00\x00\x00\x40"
    assert_same(tnp.frombuffer(b, np.float32), np.frombuffer(b, np.float32))
    assert_same(tnp.fromiter(iter([tnp.asarray(1.0), 2.0]), float), np.array([1.0, 2.0]))
    assert tnp.from_dlpack(tnp.asarray(V)).numpy().tolist() == V.tolist()
    assert_same(tnp.from_dlpack(np.arange(3)), np.arange(3))
    with pytest.raises(ValueError, match="infs or NaNs"):
        tnp.asarray_chkfinite([1.0, np.inf])


# ------------------------------------------------------------------ index tricks
@pytest.mark.parametrize("expr", [
    "r_[1:4, 0, 4, [5, 6]]", "r_[-1:1:5j]", "r_['0,2', [1, 2, 3], [4, 5, 6]]",
    "r_['1,2,0', [1, 2, 3], [4, 5, 6]]", "c_[np.array([1, 2, 3]), np.array([4, 5, 6])]",
    "c_[np.array([[1, 2, 3]]), 0, 0, np.array([[4, 5, 6]])]",
    "r_[np.float32(1.5), np.array([1, 2], np.float32)]", "r_[1.5, np.array([1, 2], np.float32)]",
    "mgrid[0:5:3j, 0:2]", "mgrid[0:4]", "ogrid[0:3, 0:2:0.5]"])
def test_index_tricks_match_numpy(expr):
    want = eval("np." + expr)
    got = eval("tnp." + expr)
    assert_same(got, tuple(want) if isinstance(want, tuple) else want)


def test_index_helpers():
    assert tnp.s_[1:3] == np.s_[1:3] and tnp.index_exp[2] == (2,)
    assert list(tnp.ndindex(2, 2)) == list(np.ndindex(2, 2))
    got = [(i, float(v)) for i, v in tnp.ndenumerate(tnp.asarray([[1.0, 2.0], [3.0, 4.0]]))]
    assert got == [((0, 0), 1.0), ((0, 1), 2.0), ((1, 0), 3.0), ((1, 1), 4.0)]
    x = tnp.asarray(V)
    with nf.GradientTape() as tape:
        tape.watch(x)
        loss = tnp.sum(tnp.r_[x, 0.0, x[:2]])
    assert tape.gradient(loss, x).numpy().tolist() == [2.0, 2.0, 1.0, 1.0, 1.0]


# ------------------------------------------------------------------ hypothesis over shapes
_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@settings(max_examples=30, deadline=None)
@given(shape=_shapes, data=st.data())
def test_pad_any_widths_and_mode(shape, data):
    mode = data.draw(st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric",
                                      "linear_ramp", "maximum", "mean", "median"]))
    widths = tuple((data.draw(st.integers(0, 7)), data.draw(st.integers(0, 7))) for _ in shape)
    kw = {}
    if mode in ("reflect", "symmetric"):
        kw["reflect_type"] = data.draw(st.sampled_from(["even", "odd"]))
    if mode in ("maximum", "mean", "median") and data.draw(st.booleans()):
        kw["stat_length"] = data.draw(st.integers(1, 5))
    a = np.random.default_rng(0).integers(-5, 6, size=shape)
    for arr in (a, a * 0.75):
        assert_same(tnp.pad(tnp.asarray(arr), widths, mode, **kw),
                    np.pad(arr, widths, mode, **kw), 1e-12, 1e-12, ctx=f"{mode} {widths} {kw}")


@settings(max_examples=30, deadline=None)
@given(shape=_shapes, data=st.data())
def test_tile_repeat_roll_split_any_shape(shape, data):
    a = np.random.default_rng(1).standard_normal(shape)
    x = tnp.asarray(a)
    reps = tuple(data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(1, 4))))
    assert_same(tnp.tile(x, reps), np.tile(a, reps))
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(0, 3))
    assert_same(tnp.repeat(x, k, axis=ax), np.repeat(a, k, axis=ax))
    counts = [data.draw(st.integers(0, 2)) for _ in range(shape[ax])]
    assert_same(tnp.repeat(x, counts, axis=ax), np.repeat(a, counts, axis=ax))
    shift = data.draw(st.integers(-9, 9))
    assert_same(tnp.roll(x, shift, axis=ax), np.roll(a, shift, axis=ax))
    assert_same(tnp.roll(x, shift), np.roll(a, shift))
    points = sorted(data.draw(st.lists(st.integers(-5, 6), max_size=3)))
    assert_same(tnp.split(x, points, axis=ax), np.split(a, points, axis=ax))
    # the same functions traced with every size unknown
    f = nf.function(lambda v: (tnp.tile(v, reps), tnp.repeat(v, k, axis=ax),
                               tnp.roll(v, shift, axis=ax)),
                    input_signature=[nf.TensorSpec([None] * len(shape), np.float64)])
    for g, w in zip(f(x), (np.tile(a, reps), np.repeat(a, k, axis=ax),
                           np.roll(a, shift, axis=ax))):
        assert_same(g, w)


def test_row_stack_warns_like_numpy():
    with pytest.warns(DeprecationWarning):
        tnp.row_stack([V, V])


def test_pickle_and_copy_of_results():
    y = tnp.pad(tnp.asarray(V), 1)
    assert pickle.loads(pickle.dumps(y)).numpy().tolist() == np.pad(V, 1).tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tnp.block([[tnp.asarray(X)]])


def test_repeated_positions_last_write_wins_in_the_gradient():
    """x[idx] = v with a position repeated keeps the last value (NumPy); only it gets gradient."""
    v = tnp.asarray([1.0, 2.0, 3.0])
    with nf.GradientTape() as tape:
        tape.watch(v)
        a = tnp.zeros(4)
        tnp.put(a, [1, 1, 2], v)
        loss = tnp.sum(a * tnp.arange(1.0, 5.0))
    np.testing.assert_array_equal(a.numpy(), [0.0, 2.0, 3.0, 0.0])
    np.testing.assert_array_equal(tape.gradient(loss, v).numpy(), [0.0, 2.0, 3.0])
    # the same batched, and compiled
    vs = tnp.asarray(np.stack([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))

    def per(w):
        with nf.GradientTape() as t:
            t.watch(w)
            b = tnp.zeros(4)
            b[tnp.asarray([1, 1, 2])] = w
            s = tnp.sum(b * tnp.arange(1.0, 5.0))
        return t.gradient(s, w)
    np.testing.assert_array_equal(nf.vectorized_map(per, vs).numpy(), [[0, 2, 3], [0, 2, 3]])
    np.testing.assert_array_equal(nf.function(per)(v).numpy(), [0, 2, 3])


def test_writing_into_an_array_created_while_tracing():
    """`b = zeros(n); b[i] = x` inside nf.function: the constant is captured by value, so the
    item assignment that rebinds `b` does not change what the graph reads."""
    def f(w):
        b = tnp.zeros(4)
        b[tnp.asarray([1, 2])] = w
        tnp.put(b, [3], w[0] * 10)
        c = tnp.ones(2)
        c += w
        return b, c
    b, c = nf.function(f)(tnp.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(b.numpy(), [0.0, 1.0, 2.0, 10.0])
    np.testing.assert_array_equal(c.numpy(), [2.0, 3.0])
