"""Composite primitives: NumPy's kernel and the composition must agree.

A composite (ndflow/core/primitive.py `Composite`) runs NumPy's kernel when plain eager and its
composition over primitives everywhere else (tapes, traces, vectorized_map, forward mode). For
every registered composite this runs both on its op-table samples (tests/optable*.py, found by
name) and on special values injected into them (NaN, inf, signed zeros, ties), and checks that
they agree: structure, dtype, shape and values within the record's tolerance, NaN where the
kernel has NaN, the sign of every zero, the same error type where the kernel raises.
"""
import warnings

import numpy as np
import pytest

import ndflow.numpy as tnp
from ndflow.core.primitive import COMPOSITES, compose_composites
from ndflow.core import tree

from optable import RECORDS, OpRecord, Sample, values
from optable_ufuncs import METHOD_RECORDS
from helpers import to_nf, assert_same


def _index_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((4, 3)), 1)), Sample((v((4, 3)), -1)), Sample((v((4, 3)), (slice(1, None), 2))),
            Sample((v((4, 3)), (Ellipsis, None, slice(None, None, -2)))),
            Sample((v((4, 3)), np.array([3, 0, 3]))), Sample((v((4, 3)), (np.array([1, 2]), [0, 2]))),
            Sample((v((4, 3)), np.array([True, False, True, True]))),
            Sample((v((4, 3)), np.True_), desc="0-d mask"), Sample((v(()), ()), desc="0-d"),
            Sample((v(()), None), desc="0-d new axis"), Sample((v((0, 3)), slice(None)), desc="empty"),
            Sample((v((4, 3)), np.array([], dtype=np.int64)), desc="empty index"),
            Sample((v((4, 3)), 4), desc="out of range"),
            Sample((v((4, 3)), np.array([True, False])), desc="short mask"),
            Sample((v((4, 3)), 1.5), desc="float index")]


def _setitem_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((4, 3)), 1, v((3,)))), Sample((v((4, 3)), (slice(None), 0), 2.5)),
            Sample((v((4, 3)), np.array([3, 0, 3]), v((3, 3))), desc="repeated"),
            Sample((v((4, 3)), np.array([True, False, True, True]), v(())), desc="mask"),
            Sample((v((4, 3)), (Ellipsis, 1), v((4,)))), Sample((v(()), (), 7), desc="0-d"),
            Sample((v((4, 3)), np.True_, v((3,))), desc="0-d mask"),
            Sample((v((0, 3)), slice(None), 1.0), desc="empty"),
            Sample((v((4, 3)), 1, v((2,))), desc="bad shape"),
            Sample((v((4, 3)), 9, 1.0), desc="out of range"),
            Sample((v((3,)).astype(np.int8), 0, 300), desc="int out of range"),
            Sample((v((3,)).astype(np.int32), 0, 2.7), desc="float into int"),
            Sample((v((3,)), 0, 1 + 2j), desc="complex into real")]


def _setitem_call(m, x, key, value):
    x = m.array(x, copy=True)
    x[key] = value
    return x


# composites called by syntax (x[key], x[key] = v) or otherwise without an op-table record of
# their own name
_EXTRA = [OpRecord("getitem", _index_samples, call=lambda m, x, key: x[key]),
          OpRecord("setitem", _setitem_samples, call=_setitem_call),
          OpRecord("isnat", lambda rng, dt: [Sample((values(rng, (3,), dt),))])]


def _records(name):
    """The records that exercise composite `name`: its own, the methods' records for the
    ufunc methods ('ufunc.reduce': add.reduce, maximum.reduce ...), and the aliases'."""
    if name.startswith("ufunc."):
        return [r for r in METHOD_RECORDS if r.name.endswith(name[5:])]
    c = COMPOSITES[name]
    return [r for r in RECORDS + _EXTRA if r.name == name
            or getattr(getattr(tnp, r.name, None), "composite", None) is c]


def _special_variants(sample):
    """Copies of the sample whose first float array argument holds special values."""
    args = sample.args
    if not args or not isinstance(args[0], np.ndarray) or args[0].dtype.kind not in "fc" \
            or args[0].size == 0:
        return []
    a = args[0]
    out = []

    def variant(desc, fill):
        v = np.array(a, copy=True)
        fill(v.reshape(-1))
        out.append((desc, (v,) + tuple(args[1:]), sample.kwargs))

    def one_nan(f):
        f[0] = np.nan

    def infs(f):
        f[0] = np.inf
        f[-1] = -np.inf

    def neg_zeros(f):
        f[:] = -0.0

    def mixed_zeros(f):
        f[:] = 0.0
        f[::2] = -0.0

    def ties(f):
        f[:] = 1.0

    def all_nan(f):
        f[:] = np.nan

    def huge(f):            # sums of two overflow: a mean of one element must not double it
        f[:] = np.finfo(f.dtype).max * 0.75

    for desc, fill in (("nan", one_nan), ("inf", infs), ("-0", neg_zeros), ("+-0", mixed_zeros),
                       ("ties", ties), ("all-nan", all_nan), ("huge", huge)):
        variant(desc, fill)
    if a.ndim:
        # the same argument empty (its first axis of length 0) and 0-d (its first element)
        out.append(("empty", (a[:0],) + tuple(args[1:]), sample.kwargs))
        out.append(("0-d", (np.array(a.reshape(-1)[0]),) + tuple(args[1:]), sample.kwargs))
    if len(args) > 1 and isinstance(args[1], np.ndarray) and args[1].dtype.kind in "fc" \
            and args[1].size:
        # a second operand with special values (binary functions): NaN, infinities, -0.0
        b = np.array(args[1], copy=True)
        f = b.reshape(-1)
        f[::3] = np.nan
        f[1::3] = -0.0
        f[2::3] = np.inf if f.size < 4 else -np.inf
        out.append(("2nd", (args[0], b) + tuple(args[2:]), sample.kwargs))
    return out


def _run(rec, args, kwargs, compose):
    nf_args = [to_nf(a) for a in args]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if compose:
            with compose_composites():
                return rec.call(tnp, *nf_args, **kwargs)
        return rec.call(tnp, *nf_args, **kwargs)


def _check_signs(got, want, ctx):
    """Zeros carry the kernel's sign (assert_allclose does not look at it)."""
    for g, w in zip(tree.flatten(got), tree.flatten(want)):
        w = np.asarray(w)
        if w.dtype.kind not in "fc":
            continue
        g = np.asarray(g.numpy() if isinstance(g, tnp.ndarray) else g)
        for part in ((np.real, np.imag) if w.dtype.kind == "c" else (lambda x: x,)):
            gw, ww = part(g), part(w)
            z = ww == 0
            if np.any(z):
                np.testing.assert_array_equal(np.signbit(gw[z]), np.signbit(ww[z]),
                                              err_msg=f"{ctx}: sign of zero")


# Functions answering with one of several equal-comparing inputs (an order statistic, an
# extremum, the representative of a run of equal values). Given +0.0 and -0.0 together, which
# one NumPy returns depends on its algorithm (introselect's partition, the unstable sort inside
# unique, SIMD lanes of maximum.reduce and fmax.reduce, which even disagree with each other):
# not a property of the function, so only the value (zero) is compared for the mixed-zero
# variant. Signs are still checked for every other input, all -0.0 included (where NumPy's
# answer is defined: e.g. a median of -0.0 is +0.0).
_SELECTS_AMONG_EQUAL = {"nanmax", "nanmin", "median", "nanmedian", "quantile", "percentile",
                        "nanquantile", "nanpercentile", "unique", "unique_values", "unique_all",
                        "unique_counts", "unique_inverse", "union1d", "intersect1d",
                        "setdiff1d", "setxor1d", "fmax.reduce", "fmin.reduce"}


def _agree(rec, args, kwargs, ctx, signs=True):
    try:
        want = _run(rec, args, kwargs, compose=False)
    except Exception as e:           # the kernel refuses: the composition must refuse alike
        with pytest.raises(type(e)):
            _run(rec, args, kwargs, compose=True)
        return
    got = _run(rec, args, kwargs, compose=True)
    want_np = tree.map_structure(lambda a: a.numpy() if isinstance(a, tnp.ndarray) else a, want)
    assert_same(got, want_np, rec.tolerance, None, ctx=ctx, values=rec.values == "values")
    if rec.values == "values" and signs:
        _check_signs(got, want_np, ctx)


def test_every_composite_has_op_table_records():
    missing = sorted(n for n in COMPOSITES if not _records(n))
    assert not missing, f"composites without an op-table record to test them on: {missing}"


def test_composites_are_registered():
    # the statistics functions that used to check "nothing is watching" themselves
    for n in ("median", "quantile", "nanvar", "cov", "cumsum", "nanargmax"):
        assert n in COMPOSITES
        assert getattr(tnp, n).composite is COMPOSITES[n]


def test_kernel_path_is_numpy():
    # plain eager: the composite answers with NumPy's own result, bit for bit
    x = np.array([3.0, -0.0, np.nan, 1.5, 2.0])
    np.testing.assert_array_equal(tnp.nanmedian(tnp.asarray(x)).numpy(), np.nanmedian(x))
    with compose_composites():
        r = tnp.nanmedian(tnp.asarray(x))
    np.testing.assert_array_equal(r.numpy(), np.nanmedian(x))


# Divergences the empty / 0-d / second-operand variants find, pinned so each is visible while
# it is open: the test fails when one of them stops diverging (remove its entry then) or a new
# one appears. None is open: add an entry only with the reason and a plan to fix it.
_KNOWN_EDGE_DIVERGENCES = {}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_kernel_and_composition_agree(name):
    recs = _records(name)
    if not recs:
        pytest.fail(f"no op-table record for composite {name!r}")
    diverging = set()
    for rec in recs:
        for dt in rec.dtypes:
            rng = np.random.default_rng([len(name), sum(map(ord, name)), np.dtype(dt).num])
            for s in rec.samples(rng, np.dtype(dt)):
                _agree(rec, s.args, s.kwargs, f"{name}{s!r}")
                for desc, args, kwargs in _special_variants(s):
                    known = (rec.name, desc) in _KNOWN_EDGE_DIVERGENCES
                    try:
                        _agree(rec, args, kwargs, f"{rec.name}[{desc}]{s!r}",
                               signs=not (desc == "+-0" and (name in _SELECTS_AMONG_EQUAL
                                                             or rec.name in _SELECTS_AMONG_EQUAL)))
                    except BaseException:
                        if not known:
                            raise
                        diverging.add((rec.name, desc))
    pinned = {k for k in _KNOWN_EDGE_DIVERGENCES if k[0] in {r.name for r in recs}}
    fixed = sorted(pinned - diverging)
    assert not fixed, f"known divergences that now agree (remove them from the list): {fixed}"


def test_out_and_unsupported_arguments_take_the_composition():
    # the kernel has no `out=` to write into: the composition runs and writes it
    x = tnp.asarray(np.array([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]]))
    out = tnp.zeros(2)
    r = tnp.median(x, axis=1, out=out)
    assert r is out
    np.testing.assert_array_equal(out.numpy(), np.median(x.numpy(), axis=1))
    # descending sort is the composition (a flip of the kernel's ascending sort)
    np.testing.assert_array_equal(tnp.sort(x, descending=True).numpy(),
                                  -np.sort(-x.numpy()))


def test_forcing_the_composition_is_per_thread_and_restored():
    import threading
    from ndflow.core.state import STATE
    assert STATE.fast
    seen = []
    with compose_composites():
        assert not STATE.fast
        t = threading.Thread(target=lambda: seen.append(STATE.fast))
        t.start()
        t.join()
    assert STATE.fast and seen == [True]


def test_a_tape_sees_the_composition():
    import ndflow as nf
    x = tnp.asarray(np.array([3.0, 1.0, 2.0, 5.0]))
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.median(x)
    g = tape.gradient(y, x)
    np.testing.assert_array_equal(g.numpy(), [0.5, 0.0, 0.5, 0.0])


# ------------------------------------------------------------------ no second eager path
# The choice "NumPy kernel / tape lane / general route" is made by the eager door alone
# (core/dispatch.py): the NumPy layer's entries (ufunc objects and their methods, composites,
# indexing, writes) are instantiated from its templates, and no test of `STATE.fast` /
# `GLOBAL.fast` ("nothing watches") is left in the NumPy layer. One would be a second eager
# implementation: make it a composite (core/primitive.py `composite`), an entry of the door,
# or let `bind`'s plain route run the primitive's impl. (tests/test_dispatch.py holds the
# whole package outside core/ to the same, and the door's routes to each other.)
def _fast_tests_in_numpy_layer():
    import ast
    import pathlib
    import ndflow.numpy
    found = set()
    for path in sorted(pathlib.Path(ndflow.numpy.__file__).parent.rglob("*.py")):
        tree_ = ast.parse(path.read_text())

        def visit(node, scope):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    visit(child, scope + (child.name,))
                    continue
                if isinstance(child, ast.Attribute) and child.attr == "fast" and \
                        isinstance(child.value, ast.Name):
                    found.add((path.name, ".".join(scope), child.lineno))
                visit(child, scope)
        visit(tree_, ())
    return found


def test_no_unsanctioned_nothing_watches_shortcut_in_the_numpy_layer():
    found = _fast_tests_in_numpy_layer()
    stray = sorted(f"{f}:{line} in {fn or '<module>'}" for f, fn, line in found)
    assert not stray, ("eager shortcuts in the NumPy layer (a second implementation that can "
                       "drift from the traced one; the eager door chooses):\n  "
                       + "\n  ".join(stray))


def test_ufunc_kernels_are_what_the_fast_paths_run():
    # the door's plain route of a ufunc calls `self._np` (methods: `self._np.<method>`): the
    # composite's kernel must be that very function, so the kernel/composition test covers them
    from ndflow.numpy.ufuncs import ufunc, REDUCE, ACCUMULATE, REDUCEAT, AT
    n = 0
    for name in dir(tnp):
        u = getattr(tnp, name)
        if isinstance(u, ufunc) and u.signature is None:
            assert u.composite.kernel is u._np
            assert COMPOSITES[u.__name__] is u.composite
            n += 1
    assert n > 80
    for c in (REDUCE, ACCUMULATE, REDUCEAT, AT):
        assert COMPOSITES[c.name] is c


def test_set_part_is_numpys_on_every_path():
    import ndflow as nf
    for dt in (np.complex64, np.complex128):
        for v in (2.5, -0.0, np.nan, -np.inf, np.array([1.0, -0.0, np.inf])):
            for part in ("real", "imag"):
                want = np.array([1 + 2j, -0.0 - 0.0j, np.nan + 1j], dt)
                x = tnp.asarray(want.copy())
                setattr(want, part, v)
                setattr(x, part, v)
                np.testing.assert_array_equal(x.numpy(), want)
                np.testing.assert_array_equal(np.signbit(getattr(x.numpy(), part)),
                                              np.signbit(getattr(want, part)))
    # under a tape and inside nf.function too (the part's view writes x: set_real/set_imag)
    x = tnp.asarray(np.array([1 + 2j, complex(np.inf, -0.0)]))
    with nf.GradientTape():
        x.real = 3.0
    assert x.numpy().tobytes() == np.array([3 + 2j, complex(3.0, -0.0)]).tobytes()

    @nf.function
    def f(y):
        y.imag = 1.0
        return y * 1
    y = tnp.asarray(np.array([1 + 2j, complex(-0.0, np.nan)]))
    want = np.array([1 + 1j, complex(-0.0, 1.0)])
    assert f(y).numpy().tobytes() == want.tobytes() and y.numpy().tobytes() == want.tobytes()
    # a real array's real part is the array: a plain write, on every path
    r = tnp.asarray(np.array([1.0, 2.0]))
    r.real = -0.0
    assert np.signbit(r.numpy()).all()


# ------------------------------------------------------------------ value-dependent dtypes
@pytest.mark.parametrize("fn", ["quantile", "percentile", "nanquantile", "nanpercentile",
                                "median", "nanmedian"])
def test_quantile_dtypes_agree_eager_composed_compiled_and_numpy(fn):
    # NumPy's result dtype depends on values (a 0-d result holding NaN is the array's own NaN
    # element; nan* take the dtype from the first slice, an all-NaN one answering in the array's
    # dtype; an empty array answers as nanmean): every path gives NumPy's, a compiled function
    # switching graphs as the values change case
    import ndflow as nf
    qs = {"quantile": (0.5, np.array([0.25, 0.5]), np.float32(0.5)),
          "nanquantile": (0.5, np.array([0.5], np.float32)),
          "median": (None,)}
    qs["percentile"] = tuple(q if q is None else q * 100 for q in qs["quantile"])
    qs["nanpercentile"] = tuple(q * 100 for q in qs["nanquantile"])
    qs["nanmedian"] = qs["median"]
    data = ([1., np.nan, 3.], [np.nan, np.nan], [1., 2., 3.], [], [-0.0, np.inf],
            [[1., np.nan], [2., 3.]], [[np.nan, np.nan], [2., 3.]], [[2., 3.], [np.nan, np.nan]])
    for dt in (np.float16, np.float32, np.float64, np.int32):
        for q in qs[fn]:
            args = () if q is None else (q,)
            for kw in ({}, {"axis": -1}):
                f = nf.function(lambda x: getattr(tnp, fn)(x, *args, **kw))
                for d in data:
                    a = np.array(d, np.float64)
                    if (dt == np.int32 and np.isnan(a).any()) or (kw and a.ndim < 2):
                        continue
                    a = a.astype(dt) if dt != np.int32 else a.astype(np.int64).astype(dt)
                    ctx = f"{fn}({a!r}, {q!r}, {kw})"
                    with warnings.catch_warnings(), np.errstate(all="ignore"):
                        warnings.simplefilter("ignore")
                        try:
                            want = getattr(np, fn)(a, *args, **kw)
                        except IndexError:          # NumPy's quantile of an empty array
                            for path in ("eager", "composed", "compiled"):
                                with pytest.raises(IndexError):
                                    _path(f, fn, a, args, kw, path)
                            continue
                        for path in ("eager", "composed", "compiled", "compiled"):
                            got = _path(f, fn, a, args, kw, path)
                            assert got.dtype == np.asarray(want).dtype, (path, ctx)
                            np.testing.assert_array_equal(got, want, err_msg=f"{path} {ctx}")


def _path(f, fn, a, args, kw, path):
    x = tnp.asarray(a)
    if path == "compiled":
        return f(x).numpy()
    if path == "composed":
        with compose_composites():
            return getattr(tnp, fn)(x, *args, **kw).numpy()
    return getattr(tnp, fn)(x, *args, **kw).numpy()


def test_quantile_dtype_with_unknown_sizes_and_vectorized():
    import ndflow as nf
    f = nf.function(lambda x: tnp.quantile(x, 0.5),
                    input_signature=[nf.TensorSpec([None], np.float16)])
    g = nf.function(lambda x: tnp.nanquantile(x, np.array([0.5], np.float32), axis=-1),
                    input_signature=[nf.TensorSpec([None, None], np.float16)])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for d in ([1., 2., 3.], [1., np.nan, 3.], [np.nan], [1., 2.]):
            a = np.array(d, np.float16)
            r, w = f(tnp.asarray(a)).numpy(), np.quantile(a, 0.5)
            assert r.dtype == w.dtype
            np.testing.assert_array_equal(r, w)
        for d in ([[1., 2.]], [[np.nan, np.nan]], [[np.nan, 1.], [2., 3.]], np.zeros((0, 3))):
            a = np.array(d, np.float16)
            r = g(tnp.asarray(a)).numpy()
            w = np.nanquantile(a, np.array([0.5], np.float32), axis=-1)
            assert r.dtype == w.dtype, d
            if a.size:     # (an array empty only at run time keeps q's axis: NumPy drops it)
                np.testing.assert_array_equal(r, w)
        xs = np.array([[np.nan, 1.], [1., 2.]], np.float32)
        v = nf.vectorized_map(lambda x: tnp.quantile(x, 0.5), tnp.asarray(xs))
        np.testing.assert_array_equal(v.numpy(), [np.quantile(r, 0.5) for r in xs])


def test_matmul_dtype_option_on_every_path():
    a = np.arange(6.0).reshape(2, 3)
    b = np.linspace(-1, 1, 6).reshape(3, 2)
    want = np.matmul(a, b, dtype=np.float32)
    for compose in (False, True):
        with (compose_composites() if compose else warnings.catch_warnings()):
            got = tnp.matmul(tnp.asarray(a), tnp.asarray(b), dtype=np.float32)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
            with pytest.raises(TypeError):        # float64 -> int32 is not same_kind
                tnp.matmul(tnp.asarray(a), tnp.asarray(b), dtype=np.int32)
    with pytest.raises(TypeError):
        np.matmul(a, b, dtype=np.int32)
