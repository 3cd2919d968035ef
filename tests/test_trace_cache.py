"""The trace cache of `nf.function` keys what a trace depends on, exactly; input signatures
never cast; a concrete value cannot be read while tracing."""
import gc
import math

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.ndarray import TracingError


def test_signed_zeros_and_nan_are_different_traces():
    f = nf.function(lambda x: tnp.copysign(tnp.asarray(1.0), tnp.asarray(x)))
    assert float(f(0.0)) == 1.0 and float(f(-0.0)) == -1.0 and float(f(0.0)) == 1.0
    g = nf.function(lambda x: tnp.asarray(x) * 2)
    assert math.isnan(float(g(math.nan)))
    n = g.experimental_get_tracing_count()
    assert math.isnan(float(g(math.nan))) and g.experimental_get_tracing_count() == n
    h = nf.function(lambda z: tnp.asarray(z).imag)
    assert np.signbit(h(complex(1.0, -0.0)).numpy()) and not np.signbit(h(1 + 0j).numpy())


@pytest.mark.parametrize("make", [np.float16, np.float32, np.float64, np.int8, np.int64,
                                  np.uint8, np.bool_, np.complex64])
def test_numpy_scalars_of_each_dtype_trace_apart(make):
    f = nf.function(lambda x: tnp.asarray(x) + tnp.asarray(x))
    for other in (np.float32, np.float64, np.int64):
        f(other(1))
    got = f(make(1))
    want = np.asarray(make(1)) + np.asarray(make(1))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_unhashable_arguments_never_hit_a_stale_trace():
    class Box:            # unhashable: __eq__ without __hash__
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return self is other

    f = nf.function(lambda b, x: x * b.v)
    with pytest.warns(UserWarning, match="not hashable"):
        f(Box(0.0), tnp.asarray(1.0))
    for i in range(6):
        b = Box(float(i))        # a freed Box's address is often reused
        assert float(f(b, tnp.asarray(1.0))) == float(i)
        del b
        gc.collect()
    g = nf.function(lambda s, x: x[s])
    x = tnp.arange(6.0)
    np.testing.assert_array_equal(g(slice(1, 3), x).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(g(slice(2, 5), x).numpy(), [2.0, 3.0, 4.0])
    n = g.experimental_get_tracing_count()
    g(slice(2, 5), x)
    assert g.experimental_get_tracing_count() == n       # equal slices share a trace


def test_a_new_variable_at_a_reused_address_is_not_the_old_one():
    f = nf.function(lambda v: v * 1.0)
    for i in range(5):
        v = nf.Variable(float(i))
        assert float(f(v)) == float(i)
        del v
        gc.collect()


def test_input_signature_never_casts_an_array():
    f = nf.function(lambda x: x + 0, input_signature=[nf.TensorSpec([None], tnp.int32)])
    with pytest.raises(TypeError, match="input_signature"):
        f(np.array([2 ** 40]))                 # int64: would wrap to 0
    with pytest.raises(TypeError):
        f(tnp.asarray(np.array([1.5])))
    with pytest.raises(TypeError):
        f(np.array([1], np.int16))
    np.testing.assert_array_equal(f(np.array([7], np.int32)).numpy(), [7])
    g = nf.function(lambda x: x * 2, input_signature=[nf.TensorSpec([], tnp.int32)])
    assert int(g(3)) == 6                      # Python data converts when it fits
    with pytest.raises((TypeError, ValueError)):
        g(2 ** 40)
    with pytest.raises(TypeError):
        g(1.5)
    h = nf.function(lambda x: x * 2, input_signature=[nf.TensorSpec([], tnp.float32)])
    assert h(3).dtype == np.float32 and float(h(1.5)) == 3.0
    with pytest.raises(ValueError):
        h(1e300)                               # would overflow to inf
    with pytest.raises(TypeError):
        h(np.float64(1.5))


def test_concrete_values_cannot_be_read_while_tracing():
    v = nf.Variable(1.0)

    @nf.function
    def f():
        return v.numpy() * 2

    with pytest.raises(TracingError, match="Variable.numpy"):
        f()
    for read in (float, int, bool, lambda t: t.numpy(), lambda t: t.item()):
        with pytest.raises(TracingError):
            nf.function(lambda: read(v.read_value()))()
        with pytest.raises(TracingError):
            nf.function(lambda x: read(x))(tnp.asarray(1.0))
    g = nf.function(lambda: v * 2)
    assert float(g()) == 2.0
    v.assign(5.0)
    assert float(g()) == 10.0                  # read at each call, not frozen at trace time
    assert "numpy=" in repr(v)
