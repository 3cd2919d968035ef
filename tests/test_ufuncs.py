"""`tnp.ufunc`: every NumPy ufunc exists as one, with NumPy's attributes and errors; the
methods (reduce, accumulate, outer, at, reduceat) and call options (out=, where=, dtype=) pass
the op table's generic checks (values, compiled, gradients, batching); NumPy's own ufunc
methods on ndflow arrays dispatch to ours."""
import pickle

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

import test_optable as T
from optable_ufuncs import METHOD_RECORDS
from optable import F64, F32
from helpers import assert_same

pytestmark = T.pytestmark

_CASES = [pytest.param(r, np.dtype(d), id="%s-%s" % (r.name, np.dtype(d).name))
          for r in METHOD_RECORDS for d in r.dtypes]
_F64 = [pytest.param(r, id=r.name) for r in METHOD_RECORDS if F64 in r.dtypes]
_F32 = [pytest.param(r, id=r.name) for r in METHOD_RECORDS if F32 in r.dtypes]
# the same applicability filters as the op table's (declared exclusions, not skips)
_JIT = [c for c in _CASES if c.values[0].jit]
_UNKNOWN = [c for c in _JIT if T._traceable_with_unknown_sizes(*c.values)]
_DIFF64 = [c for c in _F64 if c.values[0].diff_args != ()]
_DIFF64_UNKNOWN = [c for c in _DIFF64 if T._traceable_with_unknown_sizes(c.values[0], F64)]
_DIFF32 = [c for c in _F32 if c.values[0].diff_args != ()]

NP_UFUNCS = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc))


# ------------------------------------------------------------------ the generic checks
@pytest.mark.parametrize("rec,dt", _CASES)
def test_method_values_match_numpy(rec, dt):
    T.test_values_match_numpy(rec, dt)


@pytest.mark.parametrize("rec,dt", _JIT)
def test_method_function_matches_eager(rec, dt):
    T.test_function_matches_eager(rec, dt)


@pytest.mark.parametrize("rec,dt", _UNKNOWN)
def test_method_unknown_sizes(rec, dt):
    T.test_function_with_unknown_sizes_matches_eager(rec, dt)


@pytest.mark.parametrize("rec", _DIFF64)
def test_method_gradient(rec):
    T.test_gradient_matches_central_differences(rec)


@pytest.mark.parametrize("rec", _DIFF64)
def test_method_second_order(rec):
    T.test_second_order_gradient(rec)


@pytest.mark.parametrize("rec", _DIFF64)
def test_method_gradient_compiled_and_batched(rec):
    T.test_gradient_compiled_and_batched_match_eager(rec)


@pytest.mark.parametrize("rec", _DIFF64_UNKNOWN)
def test_method_gradient_unknown_sizes(rec):
    T.test_gradient_with_unknown_sizes_matches_eager(rec)


@pytest.mark.parametrize("rec", _DIFF32)
def test_method_float32_gradients(rec):
    T.test_float32_gradients_stay_float32(rec)


@pytest.mark.parametrize("rec,dt", _CASES)
def test_method_vectorized(rec, dt):
    T.test_vectorized_map_matches_loop(rec, dt)


# ------------------------------------------------------------------ the ufunc objects
@pytest.mark.parametrize("name", NP_UFUNCS)
def test_every_numpy_ufunc_is_a_tnp_ufunc(name):
    u, ref = getattr(tnp, name), getattr(np, name)
    assert isinstance(u, tnp.ufunc), f"tnp.{name} is {type(u).__name__}, not a tnp.ufunc"
    assert (u.nin, u.nout, u.nargs, u.signature) == (ref.nin, ref.nout, ref.nargs, ref.signature)
    assert u.__name__ == ref.__name__ and repr(u) == repr(ref)
    same = (u.identity == ref.identity) or (u.identity is None and ref.identity is None) or (
        np.isnan(u.identity) and np.isnan(ref.identity))
    assert same, (u.identity, ref.identity)
    assert u.types == ref.types and u.ntypes == ref.ntypes
    assert u.__doc__
    for m in ("reduce", "accumulate", "outer", "at", "reduceat"):
        assert callable(getattr(u, m))


def test_aliases_are_the_same_objects_as_numpys():
    for a, b in (("abs", "absolute"), ("divide", "true_divide"), ("mod", "remainder"),
                 ("pow", "power"), ("conj", "conjugate"), ("bitwise_not", "invert"),
                 ("bitwise_left_shift", "left_shift"), ("acos", "arccos")):
        assert (getattr(tnp, a) is getattr(tnp, b)) == (getattr(np, a) is getattr(np, b)), a
    assert tnp.degrees is not tnp.rad2deg and not isinstance(tnp.fix, tnp.ufunc)


def test_ufuncs_pickle_by_name():
    assert pickle.loads(pickle.dumps(tnp.add)) is tnp.add


@pytest.mark.parametrize("name,method,args", [
    ("exp", "reduce", (np.ones(3),)), ("exp", "accumulate", (np.ones(3),)),
    ("exp", "outer", (np.ones(2), np.ones(2))), ("exp", "reduceat", (np.ones(3), [0])),
    ("divmod", "reduce", (np.ones(3),)), ("divmod", "at", (np.ones(3), [0], np.ones(1))),
    ("frexp", "at", (np.ones(3), [0])), ("matmul", "reduce", (np.ones((2, 2)),)),
    ("matmul", "outer", (np.ones((2, 2)), np.ones((2, 2)))),
    ("subtract", "reduce", (np.ones((2, 2)),), ),
    ("maximum", "reduce", (np.ones((0, 2)),)), ("add", "accumulate", (np.ones(()),)),
    ("add", "reduceat", (np.ones(5), [0, 7])), ("equal", "reduce", (np.ones(3),)),
    ("ldexp", "reduce", (np.ones(3),))])
@pytest.mark.parametrize("path", ["eager", "tape"])
def test_method_errors_match_numpy(name, method, args, path):
    kw = {"axis": (0, 1)} if (name, method) == ("subtract", "reduce") else {}
    with pytest.raises(Exception) as want:
        getattr(getattr(np, name), method)(*args, **kw)
    conv = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(type(want.value)):
        if path == "tape":
            with nf.GradientTape():
                getattr(getattr(tnp, name), method)(*conv, **kw)
        else:
            getattr(getattr(tnp, name), method)(*conv, **kw)


def test_where_without_identity_needs_initial():
    x = tnp.asarray(np.ones((2, 3)))
    with nf.GradientTape(), pytest.raises(ValueError, match="identity"):
        tnp.maximum.reduce(x, where=tnp.asarray(np.ones((2, 3), bool)))


def test_isnat_raises_as_numpy():
    with pytest.raises(TypeError):
        np.isnat(np.ones(2))
    for path in ("eager", "tape"):
        with pytest.raises(TypeError, match="isnat"):
            if path == "tape":
                with nf.GradientTape():
                    tnp.isnat(tnp.ones(2))
            else:
                tnp.isnat(tnp.ones(2))


def test_out_casting_error_matches_numpy():
    a = tnp.asarray(np.ones(3))
    with pytest.raises(TypeError, match="same_kind"):
        tnp.add(a, 1.5, out=tnp.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError, match="unexpected keyword"):
        tnp.add(a, a, bogus=1)


def test_numpy_ufunc_methods_dispatch_to_ndflow():
    """np.add.reduce(ndflow_array) runs ndflow's reduce: it stays an ndflow array and records
    on tapes."""
    x = tnp.asarray(np.arange(6.0).reshape(2, 3))
    with nf.GradientTape() as t:
        t.watch(x)
        r = np.multiply.reduce(x, axis=1)
        c = np.add.accumulate(x, axis=1)
        o = np.subtract.outer(x[0], x[1])
        loss = tnp.sum(r) + tnp.sum(c) + tnp.sum(o)
    assert isinstance(r, tnp.ndarray) and isinstance(c, tnp.ndarray)
    g = t.gradient(loss, x).numpy()
    xv = np.arange(6.0).reshape(2, 3)
    # the product of the other elements of each row (exact at the 0, not prod / x = NaN)
    others = np.array([[np.prod(np.delete(row, j)) for j in range(3)] for row in xv])
    want = others + np.array([3.0, 2.0, 1.0]) + np.array([[3.0] * 3, [-3.0] * 3])
    np.testing.assert_allclose(g, want)
    y = tnp.zeros(4)
    np.add.at(y, [0, 0, 3], 1.0)
    assert_same(y, np.array([2.0, 0, 0, 1.0]))


def test_at_under_tape_differentiates_values_and_operand():
    a0 = tnp.asarray(np.array([1.0, 2.0, 3.0]))
    b = tnp.asarray(np.array([2.0, 3.0, 4.0]))
    with nf.GradientTape() as t:
        t.watch([a0, b])
        a = tnp.array(a0, copy=True)
        tnp.multiply.at(a, [0, 0, 2], b)      # a[0] *= 2 * 3, a[2] *= 4
        loss = tnp.sum(a)
    ga, gb = t.gradient(loss, [a0, b])
    np.testing.assert_allclose(ga.numpy(), [6.0, 1.0, 4.0])
    np.testing.assert_allclose(gb.numpy(), [3.0, 2.0, 3.0])


def test_cumprod_gradient_is_exact_with_zeros():
    """d cumprod(x)_j / d x_i = prod_{k<=j, k!=i} x_k also where x has zeros (one or more)."""
    for xs in ([2.0, 0.0, 3.0, 4.0], [0.0, 2.0, 0.0, 5.0], [1.5, 2.0, 3.0, 0.0],
               [0.0, 0.0, 0.0, 0.0]):
        x = tnp.asarray(np.array(xs))
        ct = np.array([1.0, -2.0, 0.5, 3.0])
        with nf.GradientTape() as t:
            t.watch(x)
            loss = tnp.sum(tnp.cumprod(x) * ct)
        g = t.gradient(loss, x).numpy()
        want = np.zeros(4)
        for i in range(4):
            for j in range(i, 4):
                want[i] += ct[j] * np.prod([xs[k] for k in range(j + 1) if k != i])
        np.testing.assert_allclose(g, want, err_msg=str(xs))


def test_eager_call_overhead_is_small():
    """The ufunc object's eager path stays within a small constant of calling NumPy (the
    measured budget is in the commit log; this catches an accidental slow path)."""
    import timeit
    a, b = tnp.asarray(np.ones(1)), tnp.asarray(np.ones(1))
    x = np.ones(1)
    ours = min(timeit.repeat(lambda: tnp.add(a, b), number=2000, repeat=7))
    base = min(timeit.repeat(lambda: np.add(x, x), number=2000, repeat=7))
    assert ours < 8 * base, (ours, base)


@pytest.mark.parametrize("name", ["power", "arctan2"])
def test_non_reorderable_reduce_is_the_left_fold(name):
    """NumPy 2.4's float power/arctan2 `reduce` loops return f(x[0], x[-1]) (e.g.
    np.power.reduce([2., 3., 2.]) == 4.0); ndflow folds left to right, as the definition and
    NumPy's own `accumulate` (whose last element is the fold) do."""
    x = np.random.default_rng(0).uniform(0.5, 2.0, (3, 5))
    want = getattr(np, name).accumulate(x, axis=1)[:, -1]
    for path in ("eager-composed", "tape"):
        with nf.GradientTape():
            got = getattr(tnp, name).reduce(tnp.asarray(x), axis=1)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_nan_ignoring_reductions_with_all_nan_slices():
    a = np.array([[np.nan, np.nan], [1.0, np.nan], [np.nan, -2.0]])
    for uf in ("fmax", "fmin"):
        for axis in (0, 1):
            with nf.GradientTape():
                got = getattr(tnp, uf).reduce(tnp.asarray(a), axis=axis)
                acc = getattr(tnp, uf).accumulate(tnp.asarray(a), axis=axis)
            assert_same(got, getattr(np, uf).reduce(a, axis=axis))
            assert_same(acc, getattr(np, uf).accumulate(a, axis=axis))


@pytest.mark.parametrize("name,args", [
    ("fmax", ([np.nan, 1.0, np.nan, -0.0], [0.25, np.nan, np.nan, 0.0])),
    ("fmin", ([np.nan, 1.0, np.nan, -0.0], [0.25, np.nan, np.nan, 0.0])),
    ("heaviside", ([np.nan, 0.0, -np.inf, np.inf, -0.0], [0.5, 0.5, 2.0, 2.0, 0.25])),
    ("modf", ([-2.0, 2.0, -0.5, np.inf, -np.inf, 0.0, -0.0, np.nan],)),
    ("frexp", ([0.0, -0.0, np.inf, np.nan, 1e-310, 3.0],)),
    ("logaddexp", ([np.inf, -np.inf, -np.inf, np.nan, 1e300], [np.inf, -np.inf, 2.0, 1.0, 1e300])),
    ("logaddexp2", ([np.inf, -np.inf, -np.inf, 800.0], [np.inf, -np.inf, 2.0, 800.0])),
    ("hypot", ([np.inf, 1e300, 0.0, -3.0], [np.nan, 1e300, 0.0, 4.0])),
    ("copysign", ([1.0, -2.0, np.inf, 0.0], [-0.0, 0.0, -1.0, -np.inf])),
    ("spacing", ([0.0, -0.0, 1.0, -1.0, np.inf, 1e300],)),
    ("ldexp", ([1.0, -3.0, 1e-300, np.inf], [3, -2, -30, 1])),
])
def test_special_values_match_numpy(name, args):
    """Infinities, NaNs and signed zeros (results whose finite differences are undefined,
    so they are checked here rather than in the op table)."""
    nps = [np.asarray(a) for a in args]
    with np.errstate(all="ignore"):
        want = getattr(np, name)(*nps)
        for path in ("eager", "tape", "function"):
            xs = [tnp.asarray(a) for a in nps]
            if path == "tape":
                with nf.GradientTape():
                    got = getattr(tnp, name)(*xs)
            elif path == "function":
                got = nf.function(getattr(tnp, name))(*xs)
            else:
                got = getattr(tnp, name)(*xs)
            assert_same(got, want, 1e-12, 0, ctx=f"{name} {path}")
            for g, w in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,)):
                np.testing.assert_array_equal(np.signbit(g.numpy()), np.signbit(w),
                                              err_msg=f"{name} {path}: signs of zeros")
