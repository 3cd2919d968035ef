"""mathlib's exp and expm1 as the fast-math kernels use them (tests/test_fusion.py checks every
function's ulps and special values against NumPy, and the dense float32 sample): the scale
2**n at every exponent, and exp_neg, the exp of a negation that a kernel writes with the
negation folded in."""
import numpy as np
import pytest

from ndflow.graph.kernels import mathlib, numba_tier, replica, Program, Op
from ndflow.primitives import elementwise as E
from test_fusion import needs_numba, _ulps, _bound, _specials, _float32_patterns


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["exp", "expm1"])
def test_exp_scale_at_every_exponent(name, dtype):
    """exp and expm1 scale their polynomial by 2**n as two factors whose bit patterns come from
    x * log2(e) + SHIFT's (the exponent bias is in SHIFT): around n * ln 2 for every n that
    the clamp lets through, from subnormal and zero results to overflow, the numba function
    (as the kernels compile it) and the NumPy version are within the contract's bound of
    NumPy's, with its zeros, infinities and signs."""
    from numba import njit
    fi = np.finfo(dtype)
    n = np.arange(fi.minexp - fi.nmant - 3, fi.maxexp + 3, dtype=np.float64)
    frac = np.array([-0.5001, -0.4999, -1e-6, 0.0, 1e-6, 0.3, 0.4999, 0.5001])
    x = ((n[:, None] + frac) * np.log(2)).ravel().astype(dtype)
    x = np.concatenate([x, np.nextafter(x, dtype(np.inf)), np.nextafter(x, dtype(-np.inf))])
    fn = mathlib.numba_functions()[(name, np.dtype(dtype))]

    @njit(fastmath=set(), error_model="numpy")
    def run(a, out):
        for i in range(a.shape[0]):
            out[i] = fn(a[i])
    got = np.empty_like(x)
    run(x, got)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    for g in (got, mathlib.numpy_version(name, dtype)(x)):
        assert not np.isnan(g).any()
        special = np.isinf(want) | (want == 0) | (want == -1)
        np.testing.assert_array_equal(g[special], want[special])
        np.testing.assert_array_equal(np.signbit(g), np.signbit(want))
        err = _ulps(g, want)
        assert err.max() <= _bound(name, dtype), (x[err.argmax()], g[err.argmax()])
    assert (got == 0).any() and np.isinf(got).any() and ((got > 0) & (got < fi.tiny)).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_of_a_negation_folds_the_negation(dtype):
    """Under fast math a kernel's exp of a negated float is mathlib's exp_neg of the operand
    (the negation's own line stays for its other uses); exact mode and other uses of the
    negation keep their spelling."""
    dt = np.dtype(dtype)
    prog = Program([((4,), dt)], [Op(E.neg_p, (0,), {}, (4,), dt),
                                  Op(E.exp_p, (1,), {}, (4,), dt),
                                  Op(E.add_p, (1, 0), {}, (4,), dt)], [2, 3], (4,))
    lines = numba_tier._body(prog, ["a"], True)
    assert lines == ["t0 = np.%s((-a))" % dt.name,
                     "t1 = np.%s(exp_neg_%s(a))" % (dt.name, dt.name),
                     "t2 = np.%s((t0 + a))" % dt.name], lines
    if replica.why_not("exp", dt) is None:      # NumPy's exp, bit for bit, in exact mode
        assert numba_tier._body(prog, ["a"], False)[1] == "t1 = np.%s(%s(t0))" % (
            dt.name, replica.kernel_name("exp", dt))
    i4 = np.dtype(np.int32)
    ints = Program([((4,), i4)], [Op(E.neg_p, (0,), {}, (4,), i4)], [1], (4,))
    assert numba_tier._body(ints, ["a"], True) == ["t0 = np.int32((-a))"]


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_neg_is_exp_of_the_negation_bit_for_bit(dtype):
    """exp_neg(x) is exp(-x) of the same algorithm bit for bit, NaN where it is NaN (numba as
    the kernels compile it, and the NumPy version), on every 1024th float32 bit pattern and
    the exp limits' neighbourhoods, or float64 bit patterns and exp's range."""
    from numba import njit
    if dtype == np.float32:
        x = _float32_patterns(1024)
    else:
        rng = np.random.default_rng(8)
        x = np.concatenate([rng.integers(0, 2 ** 64, 2 ** 18, dtype=np.uint64).view(np.float64),
                            rng.uniform(-712, 750, 2 ** 18), _specials(dtype)])
    funcs = mathlib.numba_functions()
    exp, exp_neg = funcs[("exp", np.dtype(dtype))], funcs[("exp_neg", np.dtype(dtype))]

    @njit(fastmath=set(), error_model="numpy")
    def run(a, out, out_neg):
        for i in range(a.shape[0]):
            out[i] = exp(-a[i])
            out_neg[i] = exp_neg(a[i])
    got, got_neg = np.empty_like(x), np.empty_like(x)
    run(x, got, got_neg)
    for a, b in ((got, got_neg), (mathlib.numpy_version("exp", dtype)(-x),
                                  mathlib.numpy_version("exp_neg", dtype)(x))):
        np.testing.assert_array_equal(np.isnan(b), np.isnan(x))
        ok = ~np.isnan(x)
        np.testing.assert_array_equal(a[ok].view(np.uint8), b[ok].view(np.uint8))
