"""Mutation: `x[idx] = v` for every index kind against NumPy, in-place operators, and mutation
under a tape (the gradient flows through the written values, not the overwritten ones) and
inside `nf.function` / `vectorized_map`."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

SHAPE = (4, 5, 3)

# (description, key, value shape) for x of shape SHAPE; value shape None = a scalar
INDEX_KINDS = [
    ("int", (1,), (5, 3)),
    ("negative int", (-1, 2), (3,)),
    ("slice", (slice(1, 3),), (2, 5, 3)),
    ("strided slice", (slice(None, None, 2), slice(4, 0, -2)), (2, 2, 3)),
    ("ellipsis", (Ellipsis, 1), (4, 5)),
    ("newaxis", (None, 0), (1, 5, 3)),
    ("int array", (np.array([0, 2]),), (2, 5, 3)),
    ("int array 2-d", (np.array([[0, 1], [3, 2]]), slice(None), 0), (2, 2, 5)),
    ("two int arrays", (np.array([0, 3]), np.array([1, 4])), (2, 3)),
    ("separated int arrays", (np.array([0, 3]), slice(None), np.array([1, 2])), (2, 5)),
    ("bool mask", (np.array([True, False, True, True]),), (3, 5, 3)),
    ("bool mask 2-d", (np.arange(20).reshape(4, 5) % 3 == 0,), (7, 3)),
    ("mixed", (slice(1, None), np.array([0, 4]), Ellipsis), (3, 2, 3)),
    ("scalar value", (slice(0, 2), 1), None),
    ("broadcast value", (slice(None), 0), (3,)),
    ("whole", (Ellipsis,), SHAPE),
]
_IDS = [k[0] for k in INDEX_KINDS]


def _value(shape, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(()) if shape is None else rng.standard_normal(shape)


def _key_nf(key):
    return tuple(tnp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("desc,key,vshape", INDEX_KINDS, ids=_IDS)
@pytest.mark.parametrize("mode", ["eager", "tape", "function"])
def test_setitem_matches_numpy(desc, key, vshape, mode):
    base = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE)
    v = _value(vshape)
    want = base.copy()
    want[key] = v

    def run(x, val):
        x[_key_nf(key)] = val
        return x
    x = tnp.asarray(base.copy())
    if mode == "eager":
        got = run(x, tnp.asarray(v))
    elif mode == "tape":
        with nf.GradientTape():
            got = run(x, tnp.asarray(v))
    else:
        got = nf.function(lambda a, b: run(a * 1.0, b))(x, tnp.asarray(v))
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("desc,key,vshape", INDEX_KINDS, ids=_IDS)
def test_gradient_flows_through_written_values_not_overwritten_ones(desc, key, vshape):
    rng = np.random.default_rng(2)
    a0 = rng.standard_normal(SHAPE)
    v0 = np.asarray(_value(vshape))
    w = rng.standard_normal(SHAPE)

    def f(m, a, v):
        y = a * a                  # an intermediate: overwritten in part
        if m is np:
            y = y.copy()
            y[key] = v * 3
        else:
            y[_key_nf(key)] = v * 3
        return m.sum(y * w)

    a, v = tnp.asarray(a0), tnp.asarray(v0)
    with nf.GradientTape() as tape:
        tape.watch([a, v])
        loss = f(tnp, a, v)
    ga, gv = tape.gradient(loss, [a, v], unconnected_gradients="zero")
    np.testing.assert_allclose(float(loss), f(np, a0, v0))
    # analytic: d/da = 2 a w where not overwritten; d/dv = 3 * (w at written places, summed
    # over broadcasting)
    mask = np.ones(SHAPE)
    mask[key] = 0
    np.testing.assert_allclose(ga.numpy(), 2 * a0 * w * mask, atol=1e-12)
    # numeric, in a random direction
    da, dv = rng.standard_normal(SHAPE), rng.standard_normal(v0.shape)
    h = 1e-6
    num = (f(np, a0 + h * da, v0 + h * dv) - f(np, a0 - h * da, v0 - h * dv)) / (2 * h)
    ana = np.sum(ga.numpy() * da) + np.sum(gv.numpy() * dv)
    np.testing.assert_allclose(ana, num, rtol=1e-6, atol=1e-8)


def test_repeated_writes_keep_only_the_last():
    a = tnp.asarray([1.0, 2.0, 3.0])
    v1, v2 = tnp.asarray(10.0), tnp.asarray(20.0)
    with nf.GradientTape() as tape:
        tape.watch([a, v1, v2])
        y = a * 1.0
        y[0] = v1
        y[0] = v2 * 2
        loss = tnp.sum(y * tnp.asarray([5.0, 6.0, 7.0]))
    ga, g1, g2 = tape.gradient(loss, [a, v1, v2], unconnected_gradients="zero")
    np.testing.assert_allclose(ga.numpy(), [0.0, 6.0, 7.0])
    assert float(g1) == 0.0 and float(g2) == 10.0


def test_values_read_before_a_write_keep_their_gradient():
    a = tnp.asarray([1.0, 2.0, 3.0])
    with nf.GradientTape() as tape:
        tape.watch(a)
        y = a * 2
        z = y * y             # uses the value before the write
        y[1] = 0.0
        loss = tnp.sum(z) + tnp.sum(y)
    np.testing.assert_allclose(tape.gradient(loss, a).numpy(),
                               8 * a.numpy() + np.array([2.0, 0.0, 2.0]))


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**="])
def test_inplace_operators_match_numpy(op):
    base = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    other = np.array([0.5, 2.0, 1.5])
    want = base.copy()
    exec(f"want {op} other")
    x = tnp.asarray(base.copy())
    x_id = id(x)
    exec(f"x {op} tnp.asarray(other)")
    assert id(x) == x_id                  # same object, as NumPy
    np.testing.assert_allclose(x.numpy(), want)
    y = tnp.asarray(base.copy())
    exec(f"y {op} 2")
    w2 = base.copy()
    exec(f"w2 {op} 2")
    np.testing.assert_allclose(y.numpy(), w2)


def test_inplace_dtype_rules_match_numpy():
    x = tnp.arange(3)
    x += 1
    assert x.dtype == np.int64 and x.numpy().tolist() == [1, 2, 3]
    with pytest.raises(Exception) as np_err:
        a = np.arange(3)
        a += 1.5
    with pytest.raises(type(np_err.value)):
        x += 1.5
    f = tnp.ones(3, dtype=np.float32)
    f += tnp.ones(3, dtype=np.float64)           # same-kind cast back to float32
    assert f.dtype == np.float32
    with pytest.raises(ValueError):
        g = tnp.ones(3)
        g += tnp.ones((2, 3))


def test_inplace_under_a_tape():
    a, b = tnp.asarray([1.0, 2.0]), tnp.asarray([3.0, 4.0])
    with nf.GradientTape() as tape:
        tape.watch([a, b])
        y = a * 2
        y += b * b
        y *= a
        loss = tnp.sum(y)
    ga, gb = tape.gradient(loss, [a, b])
    np.testing.assert_allclose(ga.numpy(), 4 * a.numpy() + b.numpy() ** 2)
    np.testing.assert_allclose(gb.numpy(), 2 * b.numpy() * a.numpy())


def test_eager_setitem_is_in_place_like_numpy():
    x = tnp.zeros(4)
    view = x[1:3]
    x[1] = 5.0
    base = np.zeros(4)
    nview = base[1:3]
    base[1] = 5.0
    np.testing.assert_array_equal(view.numpy(), nview)
    np.testing.assert_array_equal(x.numpy(), base)


def test_setitem_converts_values_like_numpy():
    x = tnp.zeros(3, dtype=np.int32)
    x[0] = 2.7
    x[1:] = tnp.asarray([True, False])
    want = np.zeros(3, np.int32)
    want[0] = 2.7
    want[1:] = [True, False]
    np.testing.assert_array_equal(x.numpy(), want)
    assert x.dtype == np.int32
    with nf.GradientTape():
        y = tnp.zeros(3, dtype=np.int32)
        y[0] = 2.7
    np.testing.assert_array_equal(y.numpy(), [2, 0, 0])


def test_fill_and_setitem_with_arrays_as_keys():
    x = tnp.zeros((2, 3))
    x.fill(4.0)
    x[tnp.asarray(1), tnp.asarray([0, 2])] = -1.0
    np.testing.assert_array_equal(x.numpy(), [[4, 4, 4], [-1, 4, -1]])


def test_mutation_inside_function_writes_the_argument_like_eager():
    """Writing into an argument inside nf.function changes the caller's array, as the same
    call eagerly does (NumPy semantics; core/mutation.py)."""
    def f(x):
        x[0] = 100.0
        return x * 2

    for fn in (f, nf.function(f)):
        a = tnp.asarray([1.0, 2.0])
        np.testing.assert_allclose(fn(a).numpy(), [200.0, 4.0])
        np.testing.assert_allclose(a.numpy(), [100.0, 2.0])
        np.testing.assert_allclose(fn(a).numpy(), [200.0, 4.0])