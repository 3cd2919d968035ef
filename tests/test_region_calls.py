"""How a compiled step calls its fused regions and small kernels (issue 13, per-node cost):
regions tier 1 will never take are called straight as their tier-0 function; reductions in a
region's plain path call NumPy's ufunc reduction directly; NumPy's error state is read through
one cached helper; tier 1 compacts a broadcast constant once. Each must keep NumPy's values,
dtypes, warnings and errors exactly, and small/large sizes must still take their own paths."""
import importlib.util
import threading
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import FusedKernel
from ndflow.graph.kernels.pool import errstate_flags

HAVE_NUMBA = importlib.util.find_spec("numba") is not None

SPECIALS = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 88.0, -88.0, 100.0, -100.0,
            1e-45, 3.4e38]


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def _kernels(f, *args):
    return fusion.fused_kernels(f.get_concrete_function(*args).graph)


def _sigmoid(y):
    return 1 / (1 + tnp.exp(-y))


def _three_ops(y):
    # (below settings.numba_quick_units, 4: a small static region stays on tier 0)
    return 1 / (1 + tnp.exp(y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_static_region_is_called_directly_and_exact(dtype):
    f = nf.function(_three_ops)
    y = np.array(SPECIALS, dtype)
    with np.errstate(all="ignore"):
        want = 1 / (1 + np.exp(y))
        got = f(y).numpy()
    assert _bits_equal(got, want)
    (k,) = _kernels(f, y)
    assert isinstance(k, FusedKernel) and k.direct is not None
    assert "too small" in k.tier1_unavailable and k.tier() == 0
    # the direct form is the kernel: calling either gives NumPy's bits
    c = np.asarray(1, dtype)
    with np.errstate(all="ignore"):
        assert _bits_equal(k(y, c), want) and _bits_equal(k.direct(y, c), want)
    for _ in range(5):                 # no call counting, no tier-1 request
        with np.errstate(all="ignore"):
            f(y)
    assert k.calls == 0 and k.runner is None


def test_direct_region_keeps_numpys_warnings_and_errors():
    f = nf.function(_sigmoid)
    y = np.array([-100.0, 0.0, 1.0], np.float32)
    f(np.zeros(3, np.float32))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = f(y).numpy()
    with warnings.catch_warnings(record=True) as w_np:
        warnings.simplefilter("always")
        want = 1 / (1 + np.exp(-y))
    assert _bits_equal(got, want)
    assert [str(x.message) for x in w] == [str(x.message) for x in w_np]
    assert [x.category for x in w] == [RuntimeWarning]
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            f(y)
    with np.errstate(all="ignore"):
        assert _bits_equal(f(y).numpy(), want)
    seen = []
    with np.errstate(over="call", call=lambda *a: seen.append(a)):
        f(y)
    assert len(seen) == 1


def test_large_and_unknown_size_regions_keep_their_paths(monkeypatch, nf_settings):
    nf_settings(numba="off")
    big = np.linspace(-5, 5, 1 << 15, dtype=np.float32)
    f = nf.function(_sigmoid)
    (k,) = _kernels(f, big)
    assert k.direct is None and type(k) is FusedKernel     # tier 1 could pay: counts calls
    assert _bits_equal(f(big).numpy(), 1 / (1 + np.exp(-big)))
    # unknown sizes: one function for a few and many elements, each by its own path
    g = nf.function(_sigmoid, input_signature=[nf.TensorSpec([None], tnp.float32)])
    (kg,) = _kernels(g, big)
    assert kg.direct is None          # shapes unknown when built: never direct up front
    sizes = (1, 3, 4096, 1 << 16, 2, 1 << 22, 5)
    for n in sizes:
        y = np.linspace(-9, 9, n, dtype=np.float32)
        assert _bits_equal(g(y).numpy(), 1 / (1 + np.exp(-y)))
    # tier 1 was asked for (numba off: none came), so tier 0 is the kernel now; it still
    # takes the plain, out= and blocked paths by size
    assert kg.direct is not None and kg.runner is None
    for n in sizes:
        y = np.linspace(-9, 9, n, dtype=np.float32)
        assert _bits_equal(g(y).numpy(), 1 / (1 + np.exp(-y)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int32])
def test_reductions_in_small_regions_are_numpys(dtype):
    def fn(x):
        t = x * x + x
        return tnp.sum(t, axis=1), tnp.max(x - 1, axis=0, keepdims=True), \
            tnp.min(x + x, axis=(0, 1)), (x * 3 > 1).astype(x.dtype) + x
    rng = np.random.default_rng(3)
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal((4, 5)).astype(dtype)
        x[0, 1], x[2, 3], x[3, 0] = np.nan, -0.0, np.inf
    else:
        x = rng.integers(-100, 100, (4, 5)).astype(dtype)      # int8 products wrap
    f = nf.function(fn)
    with np.errstate(all="ignore"):
        got = [r.numpy() for r in f(x)]
        t = x * x + x
        want = [np.sum(t, axis=1), np.max(x - 1, axis=0, keepdims=True),
                np.min(x + x, axis=(0, 1)), (x * 3 > 1).astype(x.dtype) + x]
    for g, w in zip(got, want):
        assert _bits_equal(g, w), (g, w)
    # the plain path calls the ufunc reductions themselves
    src = [ln for k in _kernels(f, x) for ln in k.source().splitlines()]
    assert len([ln for ln in src if "= g" in ln]) >= 2, src
    assert any(".astype(_cdt" in ln for ln in src), src


def test_reduction_of_empty_raises_as_numpy():
    f = nf.function(lambda x: tnp.max(x * 2, axis=0))
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(ValueError) as e_np:
        np.max(x * 2, axis=0)
    with pytest.raises(ValueError) as e:
        f(x)
    assert str(e_np.value) in str(e.value)


def test_errstate_flags_follow_numpys_state_in_contexts_and_threads():
    def expect():
        modes = np.geterr().values()
        return all(m in ("ignore", "warn") for m in modes), \
            any(m in ("raise", "call") for m in modes)
    assert errstate_flags() == expect()
    with np.errstate(over="raise"):
        assert errstate_flags() == expect() == (False, True)
        with np.errstate(all="ignore"):
            assert errstate_flags() == expect() == (True, False)
        assert errstate_flags() == (False, True)
        with np.errstate(divide="print"):
            assert errstate_flags() == expect()
    assert errstate_flags() == expect()
    errors = []

    def worker(mode):
        try:
            for _ in range(200):
                with np.errstate(all=mode):
                    if errstate_flags() != expect():
                        errors.append(mode)
                if errstate_flags() != expect():
                    errors.append("outer")
        except Exception as e:        # pragma: no cover - reported below
            errors.append(e)
    ts = [threading.Thread(target=worker, args=(m,)) for m in ("raise", "ignore", "warn", "call")]
    old = np.seterrcall(lambda *a: None)
    try:
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        np.seterrcall(old)
    assert not errors


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_tier1_broadcast_operand_compacted_once_still_reads_current_values(monkeypatch, nf_settings):
    nf_settings(numba="sync")
    n = 1 << 15
    f = nf.function(lambda a, b: a * b + a - b * b)
    a = np.linspace(-3, 3, n, dtype=np.float32).reshape(8, -1)
    base = np.arange(a.shape[1], dtype=np.float32)
    b = np.broadcast_to(base, a.shape)          # the same non-contiguous object every call
    for i in range(6):
        base[:] = i - 2.5                       # its memory changes between calls
        got = f(a, b).numpy()
        assert _bits_equal(got, a * b + a - b * b)
    b2 = np.broadcast_to(base[:1].copy(), a.shape)   # another object: compacted afresh
    assert _bits_equal(f(a, b2).numpy(), a * b2 + a - b2 * b2)
    ks = _kernels(f, a, b)
    assert ks and ks[0].tier() == 1


def test_basic_index_cache_is_by_identity_not_equality():
    # ('i', True) == ('i', 1), but x[True] adds an axis where x[1] takes a row
    x = np.arange(12.0).reshape(3, 4)
    f = nf.function(lambda x: (x[1], x[True], x[1:, None, ::2], x[..., -1]))
    for _ in range(3):
        for got, want in zip(f(x), (x[1], x[True], x[1:, None, ::2], x[..., -1])):
            assert got.shape == want.shape and np.array_equal(got.numpy(), want)
    for i in range(600):                       # eager indexing churns the cache
        assert np.array_equal(tnp.asarray(x)[i % 3].numpy(), x[i % 3])
    for got, want in zip(f(x), (x[1], x[True], x[1:, None, ::2], x[..., -1])):
        assert got.shape == want.shape and np.array_equal(got.numpy(), want)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_tier1_broadcast_operands_changing_places_between_calls(monkeypatch, nf_settings):
    # which operands are broadcast views changes from call to call; each call must be
    # planned for its own (a plan kept from the last call would read the wrong shapes)
    nf_settings(numba="sync")
    f = nf.function(lambda a, b: a * b - a + b * b)
    rows, cols = 8, 1 << 12
    full_a = np.linspace(-2, 2, rows * cols, dtype=np.float32).reshape(rows, cols)
    full_b = np.linspace(3, -1, rows * cols, dtype=np.float32).reshape(rows, cols)
    bcast_a = np.broadcast_to(np.linspace(1, 2, cols, dtype=np.float32), (rows, cols))
    bcast_b = np.broadcast_to(np.float32(0.75), (rows, cols))
    combos = [(full_a, bcast_b), (bcast_a, full_b), (bcast_a, bcast_b), (full_a, full_b)]
    for _ in range(3):
        for a, b in combos + combos[::-1]:
            assert _bits_equal(f(a, b).numpy(), a * b - a + b * b)
    assert _kernels(f, full_a, full_b)[0].tier() == 1
