"""The eager tape's cheaper paths (issue 13, the MLP gradient eager) against the general ones.

* The eager backward plan keeps its host records' cotangents as bare NumPy buffers (no
  wrapper per gradient) and sums into one in place where only the cotangent table holds it;
  the tape's step gets them wrapped when it takes over. Gradients must be the reference loop's
  bits (the plan off), and no array a user holds (an input, an output gradient, an earlier
  result) is ever written.
* A scalar loss's seed is a new array each time: each gradient gets its own.
* Operators (`a + b`, `a @ b`, ...) and `tnp.matmul` under a tape bind the primitive directly
  (the ufunc's tape lane without the call in between); a ufunc's Python-scalar partner is a
  kept read-only 0-d of the array's dtype for the next call with that very object; a
  whole-array `tnp.sum` shares its parameter dict per rank. Each must record what the general
  path records: the same values, dtypes and gradients, on persistent, nested and second-order
  tapes, with writes during recording, and in threads.
"""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.autodiff import eager_plan as P
from ndflow.core.primitive import compose_composites
from helpers import tape_data, value_bits, assert_bits_equal, run_threads

SPECIAL = np.array([np.nan, -0.0, 0.0, np.inf, 1.0, -1.0, 2.5, 0.0])


def _data(shape, dtype, seed):
    return tape_data(shape, dtype, seed, SPECIAL)


_bits = value_bits


def _general(monkeypatch, fn):
    """fn() through the reference backward loop (the eager plan off)."""
    with monkeypatch.context() as m:
        m.setattr(P, "ENABLED", False)
        return fn()


def _mlp(x, w1, b, w2, labels):
    """The benchmark's MLP loss, with operators, a relu on a Python 0, matmul and sum."""
    y = tnp.maximum(tnp.matmul(x, w1) + b, 0)
    return tnp.sum(tnp.square(tnp.matmul(y, w2) - labels))


def _mlp_data(dtype, batch=16, seed=0):
    x = _data((batch, 6), dtype, seed)
    x[0, :3] = [-1.0, 0.0, 1.0]
    return [tnp.asarray(a) for a in (x, _data((6, 5), dtype, seed + 1),
                                     _data((5,), dtype, seed + 2), _data((5, 2), dtype, seed + 3),
                                     _data((batch, 2), dtype, seed + 4))]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_mlp_gradient_is_the_general_paths_bits(monkeypatch, dtype):
    x, w1, b, w2, labels = _mlp_data(dtype)
    held = [a.numpy().copy() for a in (x, w1, b, w2, labels)]

    def run():
        with np.errstate(all="ignore"):
            with nf.GradientTape() as t:
                t.watch([w1, b, w2])
                loss = _mlp(x, w1, b, w2, labels)
            return [loss] + t.gradient(loss, [w1, b, w2])

    got = run()
    want = _general(monkeypatch, run)
    assert [_bits(g) for g in got] == [_bits(g) for g in want]
    for a, h in zip((x, w1, b, w2, labels), held):
        assert_bits_equal(a.numpy(), h)


def _spy_adds(monkeypatch):
    """Calls of np.add by the eager plan, True for those summing in place."""
    calls = []
    real = np.add

    def add(a, b, out=None):
        calls.append(out is not None)
        return real(a, b) if out is None else real(a, b, out=out)

    class Np:
        def __getattr__(self, k):
            return add if k == "add" else getattr(np, k)
    monkeypatch.setattr(P, "np", Np())
    return calls


def test_sums_in_place_only_into_what_the_pass_alone_holds(monkeypatch):
    w = tnp.asarray(np.arange(12.0).reshape(3, 4) - 5.5)
    a, b, c = (tnp.asarray(np.full((3, 4), v)) for v in (1.5, -2.0, 3.0))
    og = tnp.asarray(np.full((3, 4), 0.75))
    og_held = og.numpy().copy()

    def run(output_gradients=None):
        with nf.GradientTape() as t:
            t.watch([w, a])
            # w's cotangent is summed three times; `a`'s passes through the add unchanged
            # (the same buffer as another input's cotangent: never summed into)
            y = (w * a + w * b) - (w * c) + a + tnp.maximum(w, 1.0) @ tnp.ones((4, 4))
            if output_gradients is None:
                y = tnp.sum(y)
        return t.gradient(y, [w, a], output_gradients=output_gradients)

    want = _general(monkeypatch, run)
    want_og = _general(monkeypatch, lambda: run(og))
    calls = _spy_adds(monkeypatch)
    got = run()
    assert any(calls), "no sum was done in place: the test no longer covers it"
    assert [_bits(g) for g in got] == [_bits(g) for g in want]
    got_og = run(og)
    assert [_bits(g) for g in got_og] == [_bits(g) for g in want_og]
    assert_bits_equal(og.numpy(), og_held)
    # a result is the caller's: the next gradient writes into none of the earlier ones
    before = [g.numpy().copy() for g in got]
    run()
    for g, h in zip(got, before):
        assert_bits_equal(g.numpy(), h)


def test_general_records_between_host_records_sum_wrapped_and_bare(monkeypatch):
    # w reaches the loss through host records (mul, add, matmul) and general ones (exp, tanh,
    # transpose), so bare and wrapped cotangents are summed into each other both ways
    for dtype in (np.float32, np.float64):
        w = tnp.asarray(_data((4, 4), dtype, 3))
        v = tnp.asarray(_data((4, 4), dtype, 4))

        def run():
            with np.errstate(all="ignore"):
                with nf.GradientTape() as t:
                    t.watch([w, v])
                    e = tnp.exp(w * 0.1)
                    y = e * w + tnp.tanh(w) @ v + tnp.transpose(w) * w - e
                    loss = tnp.sum(y * y)
                return t.gradient(loss, [w, v])

        assert [_bits(g) for g in run()] == [_bits(g) for g in _general(monkeypatch, run)]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex128])
def test_a_scalar_loss_seed_is_a_fresh_one_each_time(dtype):
    x = tnp.asarray(np.array(1.5, dtype))
    got = []
    for _ in range(2):
        with nf.GradientTape() as t:
            t.watch(x)
            y = x * 1
        g = t.gradient(y, [y, x])
        assert g[0].dtype == dtype and g[0].shape == ()
        assert_bits_equal(g[0].numpy(), np.ones((), dtype))
        assert_bits_equal(g[1].numpy(), np.ones((), dtype))
        got.append(g[0])
        g[0].numpy()[...] = 7                 # the caller's to write
    assert got[0].numpy() is not got[1].numpy()
    assert_bits_equal(got[1].numpy(), np.full((), 7, dtype))
    # a 0-d integer target keeps the general seed (no gradient flows)
    i = tnp.asarray(np.array(3))
    with nf.GradientTape() as t:
        t.watch(i)
        j = i * 2
    assert t.gradient(j, i) is None


_OPS = [
    ("+", lambda a, b: a + b, np.add), ("-", lambda a, b: a - b, np.subtract),
    ("*", lambda a, b: a * b, np.multiply), ("/", lambda a, b: a / b, np.true_divide),
    ("@", lambda a, b: a @ b, np.matmul), ("**", lambda a, b: a ** b, np.power),
    ("<", lambda a, b: a < b, np.less),
]


@pytest.mark.parametrize("name,op,npf", _OPS, ids=[o[0] for o in _OPS])
def test_operator_lanes_record_the_general_path(monkeypatch, name, op, npf):
    for da, db in ((np.float32, np.float32), (np.float64, np.float64),
                   (np.float32, np.float64), (np.int64, np.int64)):
        a = tnp.asarray(np.abs(_data((3, 3), da, 1)) + 0.5)
        b = tnp.asarray(_data((3, 3), db, 2))

        def run():
            with np.errstate(all="ignore"):
                with nf.GradientTape() as t:
                    t.watch([a, b])
                    y = op(a, b)
                    y2 = op(a, b)             # the lane's dtype is known the second time
                    loss = tnp.sum(tnp.where(y2 == y2, y2, 0) * 1.0)
                return [y, y2] + t.gradient(loss, [a, b])

        got = run()
        with np.errstate(all="ignore"):
            want_v = npf(a.numpy(), b.numpy())
            with compose_composites():                    # no lane: the composition
                general = run()
        assert_bits_equal(got[0].numpy(), want_v)
        assert_bits_equal(got[1].numpy(), want_v)
        assert [_bits(g) for g in got] == [_bits(g) for g in general]


def test_matmul_tape_lane_is_the_general_path():
    rng = np.random.default_rng(5)
    cases = [((4, 3), (3, 2)), ((2, 4, 3), (3, 5)), ((3,), (3, 2)), ((4, 3), (3,)),
             ((0, 3), (3, 2))]
    for dtype in (np.float32, np.float64, np.complex64, np.int32):
        for sa, sb in cases:
            a = tnp.asarray((rng.standard_normal(sa) * 3).astype(dtype))
            b = tnp.asarray((rng.standard_normal(sb) * 3).astype(dtype))

            def run():
                with nf.GradientTape() as t:
                    t.watch([a, b])
                    y = tnp.matmul(a, b)
                    loss = tnp.sum(y * y)
                return [y] + t.gradient(loss, [a, b])

            got = run()
            with compose_composites():
                general = run()
            assert_bits_equal(got[0].numpy(), np.matmul(a.numpy(), b.numpy()))
            assert [_bits(g) for g in got] == [_bits(g) for g in general]
    # keywords and out= take the general path under a tape too
    a = tnp.asarray(rng.standard_normal((2, 3)))
    b = tnp.asarray(rng.standard_normal((3, 2)))
    out = tnp.zeros((2, 2))
    with nf.GradientTape() as t:
        t.watch(a)
        r = tnp.matmul(a, b, out=out)
    assert r is out
    assert_bits_equal(out.numpy(), a.numpy() @ b.numpy())
    with pytest.raises(ValueError):
        with nf.GradientTape():
            tnp.matmul(a, a)


def test_scalar_partner_kept_per_object_and_dtype(monkeypatch):
    zero, nzero, half = 0, -0.0, 0.5
    for dtype in (np.float32, np.float64, np.float16, np.float32, np.int64, np.uint8):
        x = tnp.asarray((_data((5,), np.float64, 6) * 4).astype(dtype))
        xv = x.numpy()
        with np.errstate(all="ignore"):
            with nf.GradientTape() as t:
                t.watch(x)
                got = [tnp.maximum(x, zero), tnp.maximum(x, nzero), tnp.minimum(x, nzero),
                       tnp.multiply(x, half), tnp.maximum(x, zero)]
                if np.dtype(dtype) != np.uint8:
                    got.append(tnp.add(x, 300))
                else:
                    with pytest.raises(OverflowError):
                        tnp.add(x, 300)
                loss = tnp.sum(got[0]) + tnp.sum(got[2]) + tnp.sum(got[3])
            want = [np.maximum(xv, 0), np.maximum(xv, -0.0), np.minimum(xv, -0.0),
                    np.multiply(xv, 0.5), np.maximum(xv, 0)]
            if np.dtype(dtype) != np.uint8:
                want.append(np.add(xv, 300))
        for g, w in zip(got, want):
            assert_bits_equal(g.numpy(), w)
        # the kept 0-d is never the caller's, nor writeable
        kept = tnp.maximum._lane_s
        if kept is not None:
            assert not kept[2].flags.writeable
        if np.dtype(dtype).kind == "f":
            gx = t.gradient(loss, x)
            with nf.GradientTape() as t2, compose_composites():
                t2.watch(x)
                y = tnp.sum(tnp.maximum(x, zero)) + tnp.sum(tnp.minimum(x, nzero)) \
                    + tnp.sum(tnp.multiply(x, half))
            assert _bits(gx) == _bits(t2.gradient(y, x))


def test_whole_array_sum_shares_parameters_it_never_changes(monkeypatch):
    from ndflow.numpy import reductions
    for shape in ((), (3,), (2, 3), (2, 1, 3)):
        x = tnp.asarray(_data(shape, np.float64, 7) if shape else np.array(2.0))

        def run():
            with nf.GradientTape(persistent=True) as t:
                t.watch(x)
                y = tnp.sum(x * x)
                z = tnp.sum(y * x)
            return [y, z] + [t.gradient(z, x), t.jacobian(tnp.sum(x * x), x)]

        got = run()
        assert [_bits(g) for g in got] == [_bits(g) for g in _general(monkeypatch, run)]
        assert_bits_equal(got[0].numpy(), np.sum(x.numpy() * x.numpy()))
    for n, p in reductions._SUM_ALL.items():
        assert p == {"axes": tuple(range(n)), "keepdims": False}


def test_persistent_nested_second_order_and_writes(monkeypatch):
    x, w1, b, w2, labels = _mlp_data(np.float64, batch=5, seed=11)

    def run():
        with nf.GradientTape(persistent=True) as outer:
            outer.watch([w1, w2])
            with nf.GradientTape(persistent=True) as inner:
                inner.watch([w1, b, w2])
                loss = _mlp(x, w1, b, w2, labels)
            g1 = inner.gradient(loss, [w1, b, w2])
            g1b = inner.gradient(loss, [w1, b, w2])
            gg = tnp.sum(g1[0] * g1[0]) + tnp.sum(g1[2] @ tnp.transpose(w2))
        return g1 + g1b + outer.gradient(gg, [w1, w2])

    with np.errstate(all="ignore"):
        got = run()
        want = _general(monkeypatch, run)
    assert [_bits(g) for g in got] == [_bits(g) for g in want]
    assert [_bits(g) for g in got[:3]] == [_bits(g) for g in got[3:6]]
    # a write into an input while recording: the tape keeps the value it used
    rng = np.random.default_rng(12)
    a = tnp.asarray(rng.standard_normal((4, 3)))
    m = tnp.asarray(rng.standard_normal((3, 2)))
    a0 = a.numpy().copy()
    with nf.GradientTape() as t:
        t.watch(m)
        y = tnp.maximum(a @ m, 0) - a @ m
        a[...] = 5.0
        loss = tnp.sum(y + a @ m)
    got = t.gradient(loss, m)
    want = a0.T @ ((a0 @ m.numpy() > 0) * 1.0 - 1.0) + np.full((3, 4), 5.0) @ np.ones((4, 2))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_four_threads_get_the_single_thread_bits():
    datas = [_mlp_data(dt, batch=12, seed=s)
             for s, dt in enumerate((np.float32, np.float64, np.float16, np.float32))]

    def grads(d):
        x, w1, b, w2, labels = d
        with np.errstate(all="ignore"):
            with nf.GradientTape() as t:
                t.watch([w1, b, w2])
                loss = _mlp(x, w1, b, w2, labels)
            return [_bits(g) for g in [loss] + t.gradient(loss, [w1, b, w2])]

    want = [grads(d) for d in datas]
    bad = []

    def work(i):
        for _ in range(15):
            if grads(datas[i]) != want[i]:
                bad.append(i)

    run_threads(work)
    assert bad == []
