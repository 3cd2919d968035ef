"""What a tape keeps, and what its backward pass writes into.

A record keeps only the inputs and outputs its VJP reads; a non-persistent tape releases each
record and cotangent as the backward pass consumes it, so the peak memory of a gradient stays
near the hand-written NumPy program's. Rules write into cotangents the tape alone holds and
into their own temporaries, only when nothing else can see it: user arrays, gradients that are
shared, persistent tapes and higher-order tapes keep NumPy's values."""
import gc
import weakref

import numpy as np
import pytest

import ndflow as nf
from helpers import run_threads
import ndflow.numpy as tnp
from ndflow.primitives import elementwise as E
from benchmarks.eager_tape import peak_bytes


def _arr(n=1000, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def test_non_persistent_tape_releases_intermediates_during_backward(monkeypatch):
    x = tnp.asarray(_arr())
    with nf.GradientTape() as tape:
        tape.watch(x)
        h = tnp.sin(x)
        y = h * x
        loss = tnp.sum(y)
    h_buf, y_buf = weakref.ref(h.numpy()), weakref.ref(y.numpy())
    del h, y
    gc.collect()
    assert h_buf() is not None          # multiply's VJP reads it
    assert y_buf() is None              # the sum's VJP reads only its shape

    seen = []
    orig = E.sin_p.vjp

    def spy(ct, x_):
        # the multiply's record (the last user of sin(x)) is released by now
        gc.collect()
        seen.append(h_buf() is None)
        return orig(ct, x_)

    monkeypatch.setattr(E.sin_p, "vjp", spy)
    g = tape.gradient(loss, x)
    assert seen == [True]
    xv = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)
    with pytest.raises(RuntimeError):
        tape.gradient(loss, x)


def test_persistent_tape_keeps_records():
    x = tnp.asarray(_arr())
    with nf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = tnp.sin(x)
        loss = tnp.sum(h * x)
    h_buf = weakref.ref(h.numpy())
    del h
    g1 = tape.gradient(loss, x).numpy().copy()
    gc.collect()
    assert h_buf() is not None
    g2 = tape.gradient(loss, x).numpy()
    np.testing.assert_array_equal(g1, g2)
    del tape
    gc.collect()
    assert h_buf() is None


@pytest.mark.parametrize("which", ["sinx", "sigmoid"])
def test_peak_memory_near_hand_written(which):
    from benchmarks.eager_tape import _grad_fns
    x = _arr(1 << 20, dtype=np.float32)
    hand, taped = _grad_fns(which)
    p_np, g_np = peak_bytes(hand, x)
    p_nf, g_nf = peak_bytes(taped, tnp.asarray(x))
    np.testing.assert_allclose(g_nf.numpy(), g_np, rtol=2e-6, atol=1e-7)
    assert p_nf <= 1.6 * p_np, (p_nf / x.nbytes, p_np / x.nbytes)


def test_output_gradients_given_by_the_user_are_not_written():
    x = tnp.asarray(_arr(5000))
    og_np = _arr(5000, seed=1)
    og_nf = tnp.asarray(og_np.copy())
    for og in (og_np, og_nf):
        before = np.array(og if isinstance(og, np.ndarray) else og.numpy())
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.exp(-tnp.sin(x) * x) / (x * x + 1)
        g = tape.gradient(y, x, output_gradients=og)
        after = og if isinstance(og, np.ndarray) else og.numpy()
        np.testing.assert_array_equal(after, before)
        xv = x.numpy()
        u = np.exp(-np.sin(xv) * xv)
        d = xv * xv + 1
        ref = before * (u * -(np.cos(xv) * xv + np.sin(xv)) / d - u * 2 * xv / d ** 2)
        np.testing.assert_allclose(g.numpy(), ref, rtol=1e-10)


def test_shared_cotangents_and_sources_that_are_targets():
    # add's VJP gives one cotangent to both operands; y is both a target and a source
    x = tnp.asarray(_arr(5000))
    with nf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x + x
        z = tnp.sin(y) * y + y
    gy, gx = tape.gradient([z, y], [y, x])
    yv = 2 * x.numpy()
    dz = np.cos(yv) * yv + np.sin(yv) + 1
    np.testing.assert_allclose(gy.numpy(), dz + 1, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), 2 * (dz + 1), rtol=1e-12)
    # and again: the first backward pass wrote into nothing the tape keeps
    gy2, gx2 = tape.gradient([z, y], [y, x])
    np.testing.assert_array_equal(gy2.numpy(), gy.numpy())
    np.testing.assert_array_equal(gx2.numpy(), gx.numpy())


def test_higher_order_through_rules_that_write_in_place():
    xv = _arr(5000)
    x = tnp.asarray(xv)
    with nf.GradientTape() as outer:
        outer.watch(x)
        with nf.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(tnp.sin(x) * x + tnp.cos(x) + 1 / (1 + tnp.exp(-x)))
        g = inner.gradient(y, x)
        s = tnp.sum(g)
    h = outer.gradient(s, x)
    sig = 1 / (1 + np.exp(-xv))
    g_ref = np.cos(xv) * xv + np.sin(xv) - np.sin(xv) + sig * (1 - sig)
    h_ref = 2 * np.cos(xv) - xv * np.sin(xv) - np.cos(xv) + sig * (1 - sig) * (1 - 2 * sig)
    np.testing.assert_allclose(g.numpy(), g_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), h_ref, rtol=1e-7, atol=1e-10)


def test_only_needed_gradients_are_computed_and_right():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((4, 3))
    A, B = tnp.asarray(a), tnp.asarray(b)
    for watch in ([A], [B], [A, B]):
        with nf.GradientTape() as tape:
            tape.watch(watch)
            y = tnp.sum(tnp.maximum(tnp.matmul(A, B), 0) / (A[:, :3] + 10) - B[0])
        gs = tape.gradient(y, watch)
        m = a @ b
        up = (m > 0) / (a[:, :3] + 10)
        ga = up @ b.T
        ga[:, :3] -= (np.maximum(m, 0) / (a[:, :3] + 10) ** 2)
        gb = a.T @ up
        gb[0] -= 6
        for w, g in zip(watch, gs):
            np.testing.assert_allclose(g.numpy(), ga if w is A else gb, rtol=1e-12)


def test_tapes_in_threads_do_not_write_each_others_values():
    xs = [tnp.asarray(_arr(20000, seed=i)) for i in range(4)]
    out, errors = [None] * 4, []

    def work(i):
        try:
            x = xs[i]
            for _ in range(5):
                with nf.GradientTape() as t:
                    t.watch(x)
                    loss = tnp.sum(tnp.sin(x) * x / (x * x + 1))
                out[i] = t.gradient(loss, x).numpy()
        except Exception as e:       # pragma: no cover - reported below
            errors.append(e)

    run_threads(work, 4)
    assert not errors
    for x, g in zip(xs, out):
        v = x.numpy()
        d = v * v + 1
        ref = (np.cos(v) * v + np.sin(v)) / d - np.sin(v) * v * 2 * v / d ** 2
        np.testing.assert_allclose(g, ref, rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64,
                                   np.uint8, np.bool_])
def test_select_kernel_is_numpys_where(dtype):
    rng = np.random.default_rng(4)
    n = 70000                           # two blocks of the branch-free kernel
    c = rng.random(n) > 0.5
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(n).astype(dtype)
        y = rng.standard_normal(n).astype(dtype)
        x[::7], y[::5], x[::11] = np.nan, -0.0, np.inf
    else:
        x = rng.integers(0, 100, n).astype(dtype)
        y = rng.integers(0, 100, n).astype(dtype)
    for args in ((c, x, y), (c.reshape(700, 100), x.reshape(700, 100), y.reshape(700, 100)),
                 (c[::2], x[::2], y[::2]), (c[:5000], x[:5000], y[0])):
        got = E._select_impl(*args)
        ref = np.where(*args)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))
    got = tnp.where(tnp.asarray(c), tnp.asarray(x), tnp.asarray(y)).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), np.where(c, x, y).view(np.uint8))


def test_declared_reads_are_all_the_rule_reads():
    """A record keeps only the inputs `vjp_reads` names: the rule gives the same gradients
    when every other input is a stand-in of the same shape and dtype holding other values."""
    from ndflow.core.primitive import REGISTRY, bind
    rng = np.random.default_rng(5)
    f = lambda *s: tnp.asarray(rng.standard_normal(s))
    samples = {
        "negative": ((f(3, 4),), {}), "positive": ((f(3, 4),), {}), "exp": ((f(3, 4),), {}),
        "add": ((f(3, 4), f(4)), {}), "subtract": ((f(3, 1), f(3, 4)), {}),
        "reduce_sum": ((f(3, 4),), {"axes": (1,), "keepdims": False}),
        "add_reduce": ((f(3, 4).astype(np.float32), tnp.asarray(rng.random((3, 4)) > 0.5)),
                       {"axes": (1,), "keepdims": False, "dtype": np.dtype(np.float64),
                        "initial": 0.5}),
        "select": ((tnp.asarray(rng.random((3, 4)) > 0.5), f(3, 4), f(1, 4)), {}),
        "set_real": ((f(3, 4) + f(3, 4) * 1j, f(4)), {}),
        "set_imag": ((f(3, 4) + f(3, 4) * 1j, f(3, 1)), {}),
    }
    declared = {p.name for p in REGISTRY if p.vjp_reads is not None}
    assert declared <= set(samples), declared - set(samples)
    for p in REGISTRY:
        if p.name not in declared:
            continue
        args, params = samples[p.name]
        out = bind(p, *args, **params)
        ct = tnp.asarray(rng.standard_normal(out.shape))
        kw = dict(params)
        if p.vjp_uses_out:
            kw["out"] = out
        ref = p.vjp(ct, *args, **kw)
        other = [a if i in p.vjp_reads else tnp.asarray(rng.standard_normal(a.shape)
                                                         ).astype(a.dtype)
                 for i, a in enumerate(args)]
        got = p.vjp(ct, *other, **kw)
        for r, g in zip(ref, got):
            assert (r is None) == (g is None), p.name
            if r is not None:
                np.testing.assert_array_equal(g.numpy(), r.numpy(), err_msg=p.name)


@pytest.mark.parametrize("plan", [True, False])
def test_an_array_given_twice_follows_writes_and_seeds_are_new(monkeypatch, plan):
    # `x * x` (tnp.square) records one value twice: a write into x after the tape stopped
    # recording leaves the gradient 2 * (x as recorded), signed zeros and infinities
    # included, on the eager plan and the reference loop; a gradient or a 0-d loss's seed
    # handed to the caller is an array of its own (writing it changes no later gradient)
    from ndflow.autodiff import eager_plan
    monkeypatch.setattr(eager_plan, "ENABLED", plan)
    for dtype in (np.float32, np.float64):
        x0 = np.array([1.5, -2.0, 0.0, -0.0, np.inf], dtype)
        x = tnp.asarray(x0.copy())
        with nf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = tnp.square(x)
            loss = tnp.sum(x * 3)
        x[0] = 10.0
        x[4] = 1.0
        g = t.gradient(y, x)
        want = 2 * x0     # NumPy's gradient of x * x: x + x
        np.testing.assert_array_equal(g.numpy(), want)
        assert g.dtype == dtype
        np.testing.assert_array_equal(np.signbit(g.numpy()), np.signbit(want))
        s1, s2 = t.gradient(loss, x), t.gradient(loss, x)
        np.testing.assert_array_equal(s1.numpy(), np.full(5, 3, dtype))
        s1[0] = 7.0                     # the caller's own array
        np.testing.assert_array_equal(s2.numpy(), np.full(5, 3, dtype))
        seed1 = t.gradient(loss, loss)
        seed1[...] = 5
        assert t.gradient(loss, loss).numpy() == 1 and seed1.dtype == dtype
