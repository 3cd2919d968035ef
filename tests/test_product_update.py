"""The product update under `jit_compile=True`: `w - s * (a @ b)` as one BLAS call
(graph/updates.py, graph/kernels/product_update.py), within `contract.product_update_bound` of
NumPy's; the default contract keeps NumPy's three operations and their bits."""
import weakref

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import contract, product_update as PU
from ndflow.graph.updates import MIN_ELEMENTS

from helpers import assert_bits_equal

M, K, N = 160, 24, 128          # the update's result: 20480 elements >= MIN_ELEMENTS
LR = 0.1


def _data(dt, seed=0, k=K):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((k, M)).astype(dt), rng.standard_normal((k, N)).astype(dt),
            rng.standard_normal((M, N)).astype(dt))


def _step(w, jit, lr=LR, returns=False):
    def step(x, dh):
        w.assign_sub(tnp.matmul(tnp.transpose(x), dh) * lr)
        return w.read_value() if returns else tnp.sum(dh)
    return nf.function(step, jit_compile=jit)


def _want(w0, x, dh, lr=LR):
    with np.errstate(all="ignore"):
        return w0 - np.asarray(lr, w0.dtype) * (x.T @ dh)


def assert_update_within(got, want, w0, x, dh, lr=LR):
    """`got` within the contract's bound of NumPy's update `want`; NaN, infinities and zeros
    (with their signs) where NumPy's are."""
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    inf = np.isinf(want)
    np.testing.assert_array_equal(np.isinf(got), inf)
    np.testing.assert_array_equal(got[inf], want[inf])
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    fin = np.isfinite(want)
    with np.errstate(all="ignore"):
        ab = np.abs(x.T).astype(np.float64) @ np.abs(dh)
        bound = contract.product_update_bound(x.shape[0], lr, ab, w0.astype(np.float64),
                                              w0.dtype)
        err = np.abs(got.astype(np.float64) - want)
    assert np.all(err[fin] <= bound[fin]), (err[fin].max(), bound[fin].min())


def _counts():
    return dict(PU.COUNTS)


def _ran(before, route):
    return PU.COUNTS[route] - before[route]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_an_sgd_update_is_one_blas_call_within_the_bound(dt):
    x, dh, w0 = _data(dt)
    w = nf.Variable(w0.copy())
    f = _step(w, True)
    assert "product_update" in str(f.get_concrete_function(x, dh))
    before = _counts()
    want = w0
    buf = None
    for i in range(3):
        f(x, dh)
        if buf is not None:          # written into the Variable's own buffer
            assert w._value._v is buf()
        buf = weakref.ref(w._value._v)     # (a reference would make it shared)
        prev, want = want, _want(want, x, dh)
        assert_update_within(w.numpy(), want, prev, x, dh)
        want = w.numpy().copy()      # the next step starts from what the Variable holds
    assert _ran(before, "numpy") + _ran(before, "scipy") == 3, PU.COUNTS


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_the_default_contract_keeps_numpys_bits(dt):
    x, dh, w0 = _data(dt)
    w = nf.Variable(w0.copy())
    f = _step(w, None)
    assert "product_update" not in str(f.get_concrete_function(x, dh))
    before = _counts()
    f(x, dh)
    assert_bits_equal(w.numpy(), _want(w0, x, dh))
    assert PU.COUNTS == before


def test_small_updates_and_other_shapes_keep_numpys_operations():
    # below MIN_ELEMENTS, a stack of products, a rate that is not 0-d: no product update
    rng = np.random.default_rng(1)
    small = nf.Variable(rng.standard_normal((16, 16)).astype(np.float32))
    assert 16 * 16 < MIN_ELEMENTS
    x, dh = rng.standard_normal((4, 16)).astype(np.float32), \
        rng.standard_normal((4, 16)).astype(np.float32)
    assert "product_update" not in str(_step(small, True).get_concrete_function(x, dh))
    x, dh, w0 = _data(np.float32)
    w = nf.Variable(w0.copy())
    rate = np.full((1, N), LR, np.float32)
    g = nf.function(lambda x, dh: w.assign_sub(tnp.matmul(tnp.transpose(x), dh) * rate),
                    jit_compile=True)
    assert "product_update" not in str(g.get_concrete_function(x, dh))


@pytest.mark.parametrize("providers", [("numpy",), ("scipy",), ()],
                         ids=["numpys-blas", "scipys-blas", "no-blas"])
def test_each_blas_library_and_none(monkeypatch, providers):
    if providers == ("scipy",):
        pytest.importorskip("scipy")
    monkeypatch.setattr(PU, "PROVIDERS", providers)
    name, gemm = PU.gemm_for(np.float32)
    if providers == ("numpy",) and gemm is None:
        pytest.skip("this NumPy is not built with its bundled ILP64 OpenBLAS")
    x, dh, w0 = _data(np.float32, seed=2)
    w = nf.Variable(w0.copy())
    before = _counts()
    _step(w, True)(x, dh)
    if providers:
        assert name == providers[0] and _ran(before, name) == 1
        assert_update_within(w.numpy(), _want(w0, x, dh), w0, x, dh)
    else:
        assert name is None and _ran(before, "ops") == 1
        assert_bits_equal(w.numpy(), _want(w0, x, dh))


def test_special_values_where_numpys_are():
    x, dh, w0 = _data(np.float32, seed=3)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    dh[1, 5] = np.inf
    x[2, 10] = 0.0           # 0 * inf in a product: NaN in both
    dh[2, 7] = np.inf
    w0[4, :4] = [-0.0, 0.0, np.inf, -np.inf]
    x[:, 4], dh[:, :4] = 0.0, 0.0        # row 4's products: +0.0, so -0.0 - 0.0 stays -0.0
    w = nf.Variable(w0.copy())
    _step(w, True)(x, dh)
    want = _want(w0, x, dh)
    assert np.isnan(want).any() and np.isinf(want).any() and np.signbit(want[4, 0])
    assert_update_within(w.numpy(), want, w0, x, dh)


@pytest.mark.parametrize("lr", [0.0, np.inf, np.nan])
def test_rates_gemm_would_treat_otherwise_run_numpys_operations(lr):
    # alpha 0: gemm skips the product (NumPy: w - 0 * inf is NaN); alpha not finite
    x, dh, w0 = _data(np.float32, seed=4)
    dh[0, 0] = np.inf
    w = nf.Variable(w0.copy())
    before = _counts()
    with np.errstate(all="ignore"):
        _step(w, True, lr=lr)(x, dh)
        want = _want(w0, x, dh, lr)
    assert _ran(before, "ops") == 1
    assert_bits_equal(w.numpy(), want)


def test_a_shared_variable_buffer_is_left_alone():
    # an array taken from the Variable keeps its values; the update goes into a new buffer
    x, dh, w0 = _data(np.float32, seed=5)
    w = nf.Variable(w0.copy())
    f = _step(w, True)
    f(x, dh)
    held = w.numpy()
    kept = held.copy()
    f(x, dh)
    np.testing.assert_array_equal(held, kept)
    assert not np.shares_memory(held, w._value._v)
    assert_update_within(w.numpy(), _want(kept, x, dh), kept, x, dh)


def test_a_returned_value_keeps_its_values_after_later_updates():
    # the step returns the Variable's value (its buffer, as in eager code): a later step must
    # not write into the array a caller holds
    x, dh, w0 = _data(np.float32, seed=6)
    w = nf.Variable(w0.copy())
    f = _step(w, True, returns=True)
    first = f(x, dh)
    kept = first.numpy().copy()
    second = f(x, dh)
    np.testing.assert_array_equal(first.numpy(), kept)
    assert not np.shares_memory(first.numpy(), second.numpy())
    assert_update_within(second.numpy(), _want(kept, x, dh), kept, x, dh)


def test_an_operand_that_is_the_variable_itself():
    # w -= s * (w.T @ w): the operands share the buffer gemm would write into
    rng = np.random.default_rng(7)
    w0 = (rng.standard_normal((128, 128)) / 16).astype(np.float32)
    w = nf.Variable(w0.copy())

    def step():
        v = w.read_value()
        w.assign_sub(tnp.matmul(tnp.transpose(v), v) * 0.5)
        return tnp.sum(v)
    f = nf.function(step, jit_compile=True)
    assert "product_update" in str(f.get_concrete_function())
    f()
    assert_update_within(w.numpy(), w0 - np.float32(0.5) * (w0.T @ w0), w0, w0, w0, 0.5)


def test_an_error_state_that_raises_runs_numpys_operations():
    x, dh, w0 = _data(np.float32, seed=8)
    x[0, 0] = 3e38
    dh[0, 0] = 10.0           # the product overflows: NumPy raises under 'raise'
    w = nf.Variable(w0.copy())
    f = _step(w, True)
    before = _counts()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        f(x, dh)
    assert _ran(before, "ops") == 1
    np.testing.assert_array_equal(w.numpy(), w0)


def test_switched_off_by_name():
    x, dh, w0 = _data(np.float32)
    w = nf.Variable(w0.copy())
    with nf.config.settings.override(routes_off="product_update"):
        f = _step(w, True)
        assert "product_update" not in str(f.get_concrete_function(x, dh))
