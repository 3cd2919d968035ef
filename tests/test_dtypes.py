"""dtypes and promotion: NumPy 2 (NEP 50) by default, TensorFlow's switches
(`prefer_float32`, 'all'/'safe' modes) on request."""
import itertools

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

PROMO = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.float16,
         np.float32, np.float64, np.complex64, np.complex128]
PAIRS = list(itertools.combinations_with_replacement(PROMO, 2))


def _ones(dt, n=2):
    return tnp.ones(n, dtype=dt)


@pytest.fixture
def numpy_behavior():
    """Switch modes inside a test; always restore NumPy's defaults afterwards."""
    yield tnp.experimental_enable_numpy_behavior
    tnp.experimental_enable_numpy_behavior(prefer_float32=False, dtype_conversion_mode="legacy")


# ------------------------------------------------------------------ NumPy 2 promotion table
@pytest.mark.parametrize("a,b", PAIRS, ids=["%s+%s" % (np.dtype(a).name, np.dtype(b).name)
                                            for a, b in PAIRS])
def test_promotion_table_matches_numpy(a, b):
    want = np.result_type(a, b)
    assert (_ones(a) + _ones(b)).dtype == want
    assert tnp.add(_ones(a), _ones(b)).dtype == want
    assert tnp.result_type(a, b) == want
    assert tnp.result_type(_ones(a), _ones(b)) == want
    with nf.GradientTape():      # the general path (not the eager fast path)
        assert tnp.add(_ones(a), _ones(b)).dtype == want
    f = nf.function(lambda x, y: x * y)
    assert f(_ones(a), _ones(b)).dtype == want


@pytest.mark.parametrize("case", [
    (np.int32, np.int64, np.int64), (np.int32, np.float32, np.float64),
    (np.int8, np.uint8, np.int16), (np.float16, np.float32, np.float32),
    (np.int64, np.float16, np.float64), (np.float32, np.complex64, np.complex64),
    (np.float64, np.complex64, np.complex128), (np.bool_, np.int8, np.int8),
    (np.uint64, np.int64, np.float64)], ids=str)
def test_promotion_examples(case):
    a, b, want = case
    assert (_ones(a) + _ones(b)).dtype == want


@pytest.mark.parametrize("dt,scalar,want", [
    (np.int32, 1, np.int32), (np.int8, 1, np.int8), (np.uint8, 3, np.uint8),
    (np.int32, 1.5, np.float64), (np.float32, 1.5, np.float32), (np.float16, 2.0, np.float16),
    (np.float32, 1j, np.complex64), (np.bool_, 1, np.int64), (np.bool_, 1.0, np.float64),
    (np.bool_, True, np.bool_), (np.int16, True, np.int16), (np.float64, 2, np.float64)])
def test_python_scalars_are_weak(dt, scalar, want):
    assert np.result_type(np.ones(2, dt), scalar) == want   # the oracle agrees
    x = _ones(dt)
    assert (x + scalar).dtype == want
    assert (scalar + x).dtype == want
    assert tnp.add(x, scalar).dtype == want
    assert tnp.result_type(x, scalar) == want
    with nf.GradientTape():
        assert tnp.add(x, scalar).dtype == want
        assert (scalar * x).dtype == want


def test_python_int_out_of_range_raises_overflow():
    with pytest.raises(OverflowError):
        np.add(np.ones(2, np.uint8), 300)
    with pytest.raises(OverflowError):
        tnp.add(_ones(np.uint8), 300)
    with nf.GradientTape(), pytest.raises(OverflowError):
        tnp.add(_ones(np.uint8), 300)


@pytest.mark.parametrize("value,want", [
    (1, np.int64), (1.0, np.float64), (True, np.bool_), (1j, np.complex128),
    ([1, 2], np.int64), ([1, 2.0], np.float64), ([[True]], np.bool_),
    (np.float32(1), np.float32), (np.arange(3, dtype=np.int16), np.int16)])
def test_asarray_default_dtypes(value, want):
    assert tnp.asarray(value).dtype == want
    assert tnp.array(value).dtype == np.asarray(value).dtype == want


def test_creation_default_dtypes():
    assert tnp.zeros(2).dtype == np.float64
    assert tnp.ones((2, 2)).dtype == np.float64
    assert tnp.arange(3).dtype == np.int64
    assert tnp.arange(3.0).dtype == np.float64
    assert tnp.linspace(0, 1, 3).dtype == np.float64
    assert tnp.eye(2).dtype == np.float64
    assert tnp.full(2, 7).dtype == np.int64
    assert tnp.full(2, 7.0).dtype == np.float64
    assert tnp.random.randn(2).dtype == np.float64
    assert tnp.mean(tnp.arange(3)).dtype == np.float64
    assert tnp.sum(tnp.ones(2, dtype=np.int32)).dtype == np.sum(np.ones(2, np.int32)).dtype
    assert tnp.sum(tnp.ones(2, dtype=np.bool_)).dtype == np.int64


@pytest.mark.parametrize("fn,dt,want", [
    ("sqrt", np.int32, np.float64), ("exp", np.int8, np.float16), ("exp", np.bool_, np.float16),
    ("sin", np.int64, np.float64), ("true_divide2", np.int32, np.float64),
    ("floor_divide2", np.int32, np.int32), ("abs", np.complex64, np.float32),
    ("mean", np.int32, np.float64), ("negative", np.uint8, np.uint8)])
def test_unary_result_dtypes_match_numpy(fn, dt, want):
    x = np.ones(3, dt)
    if fn.endswith("2"):
        f = fn[:-1]
        assert getattr(np, f)(x, x).dtype == want
        assert getattr(tnp, f)(tnp.asarray(x), tnp.asarray(x)).dtype == want
        return
    assert np.asarray(getattr(np, fn)(x)).dtype == want
    assert getattr(tnp, fn)(tnp.asarray(x)).dtype == want
    with nf.GradientTape():
        assert getattr(tnp, fn)(tnp.asarray(x)).dtype == want


def test_astype_and_dtype_arguments():
    x = tnp.arange(4)
    assert x.astype(np.float32).dtype == np.float32
    assert x.astype("float16").dtype == np.float16
    assert tnp.astype(x, tnp.bool_).dtype == np.bool_
    assert tnp.zeros(2, dtype="int32").dtype == np.int32
    assert tnp.zeros(2, dtype=tnp.float32).dtype == np.float32
    assert tnp.asarray([1, 2], dtype=float).dtype == np.float64
    assert tnp.sum(x, dtype=np.float32).dtype == np.float32
    assert x.dtype == tnp.int64 and x.dtype == np.int64 and x.dtype.name == "int64"
    with pytest.raises(TypeError):
        tnp.zeros(2, dtype=object)
    with pytest.raises(TypeError):
        tnp.asarray(["a", "b"])


def test_bfloat16():
    x = tnp.ones(3, dtype=tnp.bfloat16)
    assert x.dtype == tnp.bfloat16 and nf.bfloat16 is tnp.bfloat16
    assert (x + x).dtype == tnp.bfloat16
    assert (x * 2).dtype == tnp.bfloat16
    assert (x + tnp.ones(3, dtype=np.float32)).dtype == np.float32
    with nf.GradientTape():
        assert tnp.multiply(x, 2.0).dtype == tnp.bfloat16      # NEP 50: the float is weak
    assert tnp.asarray([1.5, 2.5]).astype(tnp.bfloat16).astype(np.float32).tolist() == [1.5, 2.5]
    with nf.GradientTape() as t:
        w = tnp.asarray([1.0, 2.0], dtype=tnp.bfloat16)
        t.watch(w)
        y = tnp.sum(w * w)
    g = t.gradient(y, w)
    assert g.dtype == tnp.bfloat16
    np.testing.assert_allclose(g.astype(np.float32).numpy(), [2.0, 4.0])


def test_bfloat16_with_python_float_stays_bfloat16_eagerly():
    x = tnp.ones(3, dtype=tnp.bfloat16)
    assert (x * 2.0).dtype == tnp.bfloat16
    assert tnp.multiply(x, 2.0).dtype == tnp.bfloat16


# ------------------------------------------------------------------ TensorFlow's switches
def test_prefer_float32(numpy_behavior):
    numpy_behavior(prefer_float32=True)
    assert tnp.add(1.0, 2.0).dtype == np.float32
    assert tnp.asarray(1.0).dtype == np.float32
    assert tnp.asarray([1.0, 2.0]).dtype == np.float32
    assert tnp.ones(2).dtype == np.float32
    assert tnp.zeros((2, 2)).dtype == np.float32
    assert tnp.linspace(0, 1, 3).dtype == np.float32
    assert tnp.random.randn(2).dtype == np.float32
    assert tnp.asarray(1).dtype == np.int64
    x64 = tnp.asarray(np.ones(2))           # an explicit float64 array stays float64
    assert x64.dtype == np.float64
    assert (x64 + 1.0).dtype == np.float64
    assert (tnp.ones(2, dtype=np.float32) + 1.0).dtype == np.float32
    assert nf.function(lambda: tnp.add(1.0, 2.0))().dtype == np.float32
    numpy_behavior(prefer_float32=False)
    assert tnp.add(1.0, 2.0).dtype == np.float64
    assert tnp.asarray(1.0).dtype == np.float64


def test_all_mode_uses_the_jax_lattice(numpy_behavior):
    numpy_behavior(dtype_conversion_mode="all")
    i32, f32 = _ones(np.int32), _ones(np.float32)
    assert (i32 + f32).dtype == np.float32
    assert tnp.add(i32, f32).dtype == np.float32
    assert (_ones(np.int64) + f32).dtype == np.float32
    assert (_ones(np.int8) + _ones(np.uint8)).dtype == np.int16
    assert (_ones(np.int8) + 1).dtype == np.int8
    assert (f32 + 1.5).dtype == np.float32
    assert (_ones(np.int32) + _ones(np.int64)).dtype == np.int64
    assert (_ones(np.bool_) + _ones(np.int8)).dtype == np.int8
    assert tnp.result_type(np.int32, np.float32) == np.float32
    numpy_behavior(dtype_conversion_mode="legacy")
    assert (i32 + f32).dtype == np.float64


def test_mode_is_part_of_the_trace_key(numpy_behavior):
    f = nf.function(lambda x, y: x + y)
    i32, f32 = _ones(np.int32), _ones(np.float32)
    assert f(i32, f32).dtype == np.float64
    numpy_behavior(dtype_conversion_mode="all")
    assert f(i32, f32).dtype == np.float32
    assert f.experimental_get_tracing_count() == 2


def test_bad_mode_is_rejected(numpy_behavior):
    with pytest.raises(ValueError, match="dtype_conversion_mode"):
        numpy_behavior(dtype_conversion_mode="bogus")


@pytest.mark.parametrize("fn", ["sum", "prod"])
def test_reduction_dtype_argument_on_every_path(fn):
    """dtype= is honoured eagerly, under a tape and compiled (NumPy widens small ints by
    default; an explicit dtype keeps them)."""
    x = tnp.asarray(np.arange(1, 5, dtype=np.int32))
    want = getattr(np, fn)(x.numpy(), dtype=np.int32)
    eager = getattr(tnp, fn)(x, dtype=np.int32)
    with nf.GradientTape() as tape:
        taped = getattr(tnp, fn)(x, dtype=np.int32)
    compiled = nf.function(lambda a: getattr(tnp, fn)(a, dtype=np.int32))(x)
    for got in (eager, taped, compiled):
        assert got.dtype == want.dtype and got.numpy() == want
