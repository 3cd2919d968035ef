"""The eager plan's host rules (autodiff/host_vjp.py) against the general VJP rules.

In plain eager execution the eager backward plan runs a primitive's VJP on NumPy buffers (the
same kernels in the same order as its general rule, without bind), and may let it write into
the cotangent it consumes (donated); everywhere else (an outer tape, a trace, vectorized_map)
the general rule runs. Both must give the same bits: rule by rule over shapes, broadcasting,
dtypes, ties and special values, donated or not, and end to end through tapes (persistent,
nested, higher order, threads) with the plan on and off.
"""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.autodiff import host_vjp as H
from ndflow.autodiff import eager_plan as P
from ndflow.core.ndarray import _wrap
from ndflow.primitives import elementwise as E, linalg as L, reduction as R
from helpers import run_threads

SPECIAL = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 2.5])


def _data(shape, dtype, seed, special=True):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype) if shape else dtype(rng.standard_normal())
    if special and np.ndim(a) and a.size >= 4 and np.dtype(dtype).kind == "f":
        flat = a.reshape(-1)
        k = min(flat.size, SPECIAL.size)
        flat[rng.permutation(flat.size)[:k]] = SPECIAL[:k]
    return np.asarray(a)


def _bits(v):
    return None if v is None else (np.asarray(v).dtype, np.shape(v), np.asarray(v).tobytes())


def _general(prim, ct, args, params, needs, out=None):
    kw = dict(params)
    if prim.vjp_needs:
        kw["needs"] = needs
    if prim.vjp_uses_out:
        kw["out"] = _wrap(out)
    gs = prim.vjp(_wrap(ct), *[_wrap(a) for a in args], **kw)
    return [None if g is None else g.numpy() for g, n in zip(gs, needs)]


def _check(prim, ct, args, params, needs=None, out=None):
    needs = needs or (True,) * len(args)
    rule, general, donates = H.RULES[prim]
    assert general is prim.vjp
    for donated in (False, True) if donates else (False,):
        c1 = np.array(ct, copy=True) if isinstance(ct, np.ndarray) else ct
        c2 = np.array(ct, copy=True) if isinstance(ct, np.ndarray) else ct
        with np.errstate(all="ignore"):
            want = _general(prim, c2, args, params, needs, out)
            handles = [_wrap(a) for a in args]
            got = rule(c1, handles, () if out is None else (_wrap(out),), params, needs,
                       donated)
        assert got is not NotImplemented
        for i, (g, w) in enumerate(zip(got, want)):
            if not needs[i]:
                continue
            assert _bits(g) == _bits(w), (prim, i, donated)


SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((), (2, 3)),
          ((5,), ()), ((2, 3, 4), (3, 1)), ((0, 3), (3,)), ((70, 80), (70, 80))]


@pytest.mark.parametrize("prim", [E.add_p, E.sub_p, E.mul_p, E.div_p, E.max_p, E.min_p])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_rules_match_general(prim, dtype):
    for k, (sx, sy) in enumerate(SHAPES):
        x, y = _data(sx, dtype, k), _data(sy, dtype, k + 100)
        out = np.broadcast_shapes(np.shape(x), np.shape(y))
        ct = _data(out, dtype, k + 200)
        for needs in ((True, True), (True, False), (False, True)):
            _check(prim, ct, (x, y), {}, needs)


@pytest.mark.parametrize("prim", [E.max_p, E.min_p])
def test_minmax_ties_and_relu(prim):
    for dtype in (np.float32, np.float64, np.float16):
        x = _data((128, 64), dtype, 1)
        x.reshape(-1)[::7] = 0            # ties with the scalar: the gradient is split
        ct = _data((128, 64), dtype, 2)
        _check(prim, ct, (x, np.asarray(0, dtype)), {}, (True, False))
        x = np.abs(_data((128, 64), dtype, 3, special=False)) + 1   # relu: no ties
        _check(prim, ct, (x - 1.5, np.asarray(0, dtype)), {}, (True, False))
        _check(prim, ct, (x, x), {}, (True, True))                   # all ties
        for k in (0, 128 * 64 - 1):                                   # one tie, first or last
            y = x - 1.5
            y.reshape(-1)[k] = 0
            _check(prim, ct, (y, np.asarray(0, dtype)), {}, (True, False))
        for shape in ((0, 3), ()):                                    # empty, 0-d
            for v in (0, 2):
                _check(prim, _data(shape, dtype, 4),
                       (np.full(shape, v, dtype), np.asarray(0, dtype)), {}, (True, True))


def test_keep_where_is_select_bits():
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32, np.float64, np.int8, np.int64, np.uint16, np.bool_):
        for n in (3, 1023, 1024, 4096, (64, 512), 70001, (300, 300)):
            v = _data(n, np.float64, 4)
            with np.errstate(all="ignore"):
                v = (v * 100).astype(dtype) if dtype is not np.bool_ else v > 0
            c = rng.random(v.shape) > 0.5
            with np.errstate(all="ignore"):
                want = E.select_p.impl(c, v, np.zeros_like(v))
            assert _bits(H.keep_where(c, v)) == _bits(want)
    v = _data((64, 64), np.float32, 5)
    c = rng.random((64, 64)) > 0.5
    for cc, vv in ((c[:, ::2], v[:, ::2]), (c, np.asfortranarray(v)), (c[:1], v)):
        want = E.select_p.impl(cc, vv, np.zeros_like(vv))
        assert _bits(H.keep_where(cc, vv)) == _bits(want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_rule_matches_general(dtype):
    for k, (sx, sy) in enumerate([((5, 3), (3, 4)), ((2, 5, 3), (3, 4)), ((5, 3), (2, 3, 4)),
                                  ((2, 1, 5, 3), (3, 3, 4)), ((0, 3), (3, 2)),
                                  ((64, 32), (32, 16))]):
        x, y = _data(sx, dtype, k), _data(sy, dtype, k + 10)
        ct = _data(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (sx[-2], sy[-1]), dtype,
                   k + 20)
        for needs in ((True, True), (True, False), (False, True)):
            _check(L.matmul_p, ct, (x, y), {}, needs)
    # vectors: the general rule (the lane declines them)
    assert H.RULES[L.matmul_p][0](np.ones(3), [_wrap(np.ones(3)), _wrap(np.ones((3, 3)))],
                                  (), {}, (True, True), False) is NotImplemented


def test_reduce_sum_select_neg_rules_match_general():
    for shape, axes, keepdims in [((3, 4), (0, 1), False), ((3, 4), (0,), False),
                                  ((3, 4), (1,), True), ((2, 3, 4), (0, 2), False),
                                  ((3,), (), False), ((0, 2), (0,), False)]:
        x = _data(shape, np.float32, 1)
        ct = np.asarray(R.reduce_sum_p.impl(x, axes=axes, keepdims=keepdims))
        _check(R.reduce_sum_p, ct, (x,), {"axes": axes, "keepdims": keepdims})
    for shape in [(4, 5), (70, 70)]:
        c = _data(shape, np.float64, 2) > 0
        x, y, ct = _data(shape, np.float64, 3), _data((shape[1],), np.float64, 4), \
            _data(shape, np.float64, 5)
        _check(E.select_p, ct, (c, x, y), {}, (False, True, True))
        _check(E.neg_p, ct, (x,), {})
        with np.errstate(all="ignore"):
            _check(E.exp_p, ct, (x,), {}, out=np.exp(x))


def test_div_rule_with_a_scalar_partner_and_its_own_quotient():
    # `1 / d` (the NumPy layer's kept 0-d partner) needs only y's gradient: the rule writes
    # -q * x / y into its own quotient; a donated cotangent of another shape is not taken
    for dtype in (np.float16, np.float32, np.float64):
        d = _data((40, 30), dtype, 6)
        for x in (np.asarray(1, dtype), _data((30,), dtype, 7), _data((40, 30), dtype, 8)):
            for ct in (_data((40, 30), dtype, 9), np.asarray(dtype(1.5))):
                for needs in ((False, True), (True, True), (True, False)):
                    _check(E.div_p, np.broadcast_to(ct, (40, 30)).copy() if ct.ndim == 0
                           else ct, (x, d), {}, needs)
        # a 0-d quotient: NumPy's scalar result is never written into
        _check(E.div_p, np.asarray(dtype(2.0)), (np.asarray(dtype(3.0)), np.asarray(dtype(0.0))),
               {}, (False, True))


def _mlp_grads(x, labels, ws):
    with nf.GradientTape() as tape:
        tape.watch(ws)
        w1, b, w2 = ws
        h = tnp.maximum(tnp.matmul(x, w1) + b, 0)
        d = tnp.matmul(h, w2) - labels
        loss = tnp.sum(tnp.square(d)) + tnp.sum(tnp.minimum(h, 0.5) * -h)
    return tape.gradient(loss, ws)


def _mlp_data(batch, dtype=np.float32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 6)).astype(dtype)
    x[0, :3] = [0.0, -0.0, np.nan] if batch > 1 else 0
    ws = [tnp.asarray(rng.standard_normal(s).astype(dtype)) for s in ((6, 5), (5,), (5, 3))]
    return tnp.asarray(x), tnp.asarray(rng.standard_normal((batch, 3)).astype(dtype)), ws


def _without_lane(monkeypatch, fn):
    """fn() through the reference backward loop (the eager plan off)."""
    with monkeypatch.context() as m:
        m.setattr(P, "ENABLED", False)
        return fn()


@pytest.mark.parametrize("batch", [1, 7, 600])
def test_tape_gradients_identical_with_and_without_the_lane(monkeypatch, batch):
    x, labels, ws = _mlp_data(batch)
    got = _mlp_grads(x, labels, ws)
    want = _without_lane(monkeypatch, lambda: _mlp_grads(x, labels, ws))
    assert [_bits(g.numpy()) for g in got] == [_bits(g.numpy()) for g in want]
    # the lane ran every rule of this program
    used = set()
    with monkeypatch.context() as m:
        m.setattr(P, "RULES", {p: ((lambda r, p: lambda *a: used.add(p) or r(*a))(r, p), g, d)
                               for p, (r, g, d) in H.RULES.items()})
        again = _mlp_grads(x, labels, ws)
    assert used >= {E.add_p, E.sub_p, E.mul_p, E.max_p, E.min_p, E.neg_p, L.matmul_p,
                    R.reduce_sum_p}
    assert [_bits(g.numpy()) for g in again] == [_bits(g.numpy()) for g in want]
    # compiled and under an outer tape (the general rules) agree with eager too
    compiled = nf.function(lambda x, l, a, b, c: _mlp_grads(x, l, [a, b, c]))(x, labels, *ws)
    for g, c in zip(got, compiled):
        np.testing.assert_allclose(g.numpy(), c.numpy(), rtol=2e-5, atol=1e-5)
    with nf.GradientTape(persistent=True) as outer:
        outer.watch(ws)
        inner = _mlp_grads(x, labels, ws)
    assert [_bits(g.numpy()) for g in inner] == [_bits(g.numpy()) for g in want]


def test_persistent_nested_and_higher_order_unchanged(monkeypatch):
    def run():
        x = tnp.asarray(np.array([[0.5, -1.0, 0.0], [2.0, 3.0, -0.5]]))
        w = tnp.asarray(np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.5]]))
        with nf.GradientTape(persistent=True) as t2:
            t2.watch([x, w])
            with nf.GradientTape(persistent=True) as t1:
                t1.watch([x, w])
                y = tnp.maximum(x @ w, 0.25) * (x @ w) - tnp.minimum(x, 0)[:, :2]
                loss = tnp.sum(y * y)
            g1 = t1.gradient(loss, [x, w])
            g1b = t1.gradient(loss, [x, w])          # persistent: again, the same
            gg = tnp.sum(g1[0] * g1[0]) + tnp.sum(g1[1])
        g2 = t2.gradient(gg, [x, w])
        return [a.numpy() for a in g1 + g1b + g2]

    got = run()
    want = _without_lane(monkeypatch, run)
    assert [_bits(g) for g in got] == [_bits(g) for g in want]
    assert [_bits(g) for g in got[:2]] == [_bits(g) for g in got[2:4]]


def test_replaced_rule_is_used(monkeypatch):
    calls = []
    orig = E.mul_p.vjp

    def spy(ct, x, y, **kw):
        calls.append(1)
        return orig(ct, x, y, **kw)

    monkeypatch.setattr(E.mul_p, "vjp", spy)
    x = tnp.asarray(np.arange(4.0))
    with nf.GradientTape() as t:
        t.watch(x)
        y = tnp.sum(x * x)
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), 2 * np.arange(4.0))
    assert calls == [1]


def test_threads_use_their_own_tapes():
    x, labels, ws = _mlp_data(33)
    want = [_bits(g.numpy()) for g in _mlp_grads(x, labels, ws)]

    bad = []

    def work(i):
        for _ in range(5):
            if [_bits(g.numpy()) for g in _mlp_grads(x, labels, ws)] != want:
                bad.append(i)

    run_threads(work)
    assert bad == []


def test_broadcast_view_is_broadcast_to():
    for v, shape in [(np.ones((1, 1), np.float32), (32, 2)), (np.arange(4.0).reshape(1, 4), (3, 4)),
                     (np.arange(3.0).reshape(3, 1), (2, 3, 5)), (np.ones((0, 1)), (0, 4)),
                     (np.arange(6.0).reshape(2, 3), (2, 3)), (np.float32(2.0), (2, 2)),
                     (np.arange(8.0).reshape(2, 4)[:, ::2], (3, 2, 2))]:
        got, want = H.broadcast(v, shape), np.broadcast_to(v, shape)
        assert _bits(got) == _bits(want) and not got.flags.writeable
    with pytest.raises(ValueError):
        H.broadcast(np.ones((2, 3)), (4, 3))


# ------------------------------------------------------------------ the NumPy layer's lane
# Under a tape (and nothing else), a ufunc whose NumPy loop takes its operands' dtype as it is
# binds its primitive without the operand resolution; everything else takes the general path.
_UFUNCS = ["add", "subtract", "multiply", "true_divide", "maximum", "less", "equal", "power",
           "floor_divide", "square", "negative", "exp", "sqrt", "logical_not", "absolute"]
_DTYPES = ["bool", "int8", "uint8", "int64", "float16", "float32", "float64", "complex64"]
_PARTNERS = [None, 3, 300, -1, 0.5, float("nan"), 2**70]


def _outcome(fn):
    try:
        with np.errstate(all="ignore"):
            r = fn()
    except Exception as e:                    # the error type is part of NumPy's answer
        return type(e).__name__
    r = r.numpy() if isinstance(r, tnp.ndarray) else r
    return _bits(r)


@pytest.mark.parametrize("name", _UFUNCS)
def test_numpy_layer_lane_under_a_tape_is_numpy(name):
    uf, nuf = getattr(tnp, name), getattr(np, name)
    watched = tnp.asarray(1.0)
    for dt in _DTYPES:
        a = (np.arange(-3, 5) % 3 - 1).astype(dt) if dt != "bool" else np.arange(8) % 2 == 0
        x = tnp.asarray(a)
        for p in _PARTNERS if uf.nin == 2 else [None]:
            if uf.nin == 2:
                other = x if p is None else p
                other_np = a if p is None else p
                want = _outcome(lambda: nuf(a, other_np))
                with nf.GradientTape() as t:
                    t.watch(watched)
                    got = _outcome(lambda: uf(x, other))
            else:
                want = _outcome(lambda: nuf(a))
                with nf.GradientTape() as t:
                    t.watch(watched)
                    got = _outcome(lambda: uf(x))
            assert got == want, (name, dt, p)


def test_numpy_layer_lane_records_and_differentiates():
    x = tnp.asarray(np.array([[1.0, -2.0], [0.0, 3.0]], np.float32))
    w = tnp.asarray(np.array([[0.5, 1.0], [-1.0, 2.0]], np.float32))
    with nf.GradientTape() as t:
        t.watch([x, w])
        y = tnp.sum(tnp.square(tnp.maximum(x @ w, 0) - 1.5) * tnp.exp(x))
    gx, gw = t.gradient(y, [x, w])
    with nf.GradientTape() as t:
        t.watch(x)
        y32 = tnp.maximum(x, 0)
        assert y32.dtype == np.float32
    xv, wv = x.numpy().astype(np.float64), w.numpy().astype(np.float64)
    h = xv @ wv
    d = 2 * (np.maximum(h, 0) - 1.5) * np.exp(xv)
    dh = d * (h > 0)
    np.testing.assert_allclose(gw.numpy(), xv.T @ dh, rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), dh @ wv.T + (np.maximum(h, 0) - 1.5) ** 2 * np.exp(xv),
                               rtol=1e-5)
    assert gx.dtype == np.float32 and gw.dtype == np.float32


def _sum_and_grad(a, lane):
    from ndflow.core.state import STATE
    x = tnp.asarray(a)
    with nf.GradientTape() as t:
        t.watch(x)
        if not lane:
            STATE.taping_np = False           # the NumPy layer's general path (until exit)
            STATE.lane = None
        y = tnp.sum(x)
    g = t.gradient(y, x)
    return _bits(y.numpy()), None if g is None else _bits(g.numpy())


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.complex64, np.int8,
                                np.int32, np.uint16, np.bool_])
def test_sum_lane_under_a_tape_is_numpy_and_the_general_path(dt):
    for shape in [(), (0,), (7,), (3, 4), (2, 0, 3), (5, 1, 2)]:
        if np.dtype(dt).kind in "fc":
            a = _data(shape, np.float64, 11).astype(dt)
        else:
            a = np.asarray((np.arange(int(np.prod(shape))) % 5).reshape(shape)).astype(dt)
        with np.errstate(all="ignore"):
            got = _sum_and_grad(a, True)
            general = _sum_and_grad(a, False)
            want = np.sum(a)
        assert got[0] == _bits(want), (dt, shape)
        assert got == general, (dt, shape)


def test_square_and_an_operand_used_again_match_the_general_rules(monkeypatch):
    for dt in (np.float32, np.float64):
        a = _data((70, 80), dt, 7)

        def run():
            x = tnp.asarray(a)
            with nf.GradientTape() as t:
                t.watch(x)
                y = x * 0.5
                loss = tnp.sum(tnp.square(y) + y * y + tnp.square(x) * y)
            return t.gradient(loss, x)

        with np.errstate(all="ignore"):
            got = run()
            want = _without_lane(monkeypatch, run)
        assert _bits(got.numpy()) == _bits(want.numpy())


def test_ufunc_lane_binds_the_primitive_as_its_function_does(monkeypatch):
    a = _data((6, 5), np.float32, 3)
    b = _data((5,), np.float32, 4)

    def run():
        x, y = tnp.asarray(a), tnp.asarray(b)
        with nf.GradientTape() as t:
            t.watch([x, y])
            z = tnp.exp(tnp.subtract(tnp.maximum(x, 0.25), y)) + tnp.multiply(x, 2)
            loss = tnp.sum(z)
        return [z] + t.gradient(loss, [x, y])

    with np.errstate(all="ignore"):
        got = run()
        with monkeypatch.context() as m:
            for name in ("exp", "subtract", "maximum", "add", "multiply"):
                m.setattr(getattr(tnp, name), "_prim", None)
            want = run()
    assert [_bits(g.numpy()) for g in got] == [_bits(g.numpy()) for g in want]


def test_square_lane_is_bind_of_multiply(monkeypatch):
    # square's tape lane binds mul(x, x) itself: the same values, dtypes and gradients as
    # through `bind` (promoted dtypes included: bool squares as int8 in NumPy)
    from ndflow.core.primitive import bind

    def run(a):
        x = tnp.asarray(a)
        with nf.GradientTape() as t:
            t.watch(x)
            y = tnp.square(x)
        g = t.gradient(y, x) if a.dtype.kind == "f" else None
        return y, g

    for dt in (np.bool_, np.int8, np.uint16, np.float16, np.float32, np.float64):
        a = _data((9, 4), np.float64, 11)
        with np.errstate(all="ignore"):
            a = (a * 50).astype(dt) if dt is not np.bool_ else a > 0
            y, g = run(a)
            want = np.square(a)
            assert y.dtype == want.dtype and _bits(y.numpy()) == _bits(want)
            with monkeypatch.context() as m:
                m.setattr(tnp.square, "_fn", lambda x: bind(E.mul_p, x, x))
                y2, g2 = run(a)
        assert _bits(y2.numpy()) == _bits(y.numpy())
        assert (g is None) == (g2 is None)
        if g is not None:
            assert _bits(g.numpy()) == _bits(g2.numpy())


def test_lane_dtype_memo_follows_each_dtype():
    # the lane remembers the last dtype NumPy's loop takes as it is: calls alternating with
    # dtypes it does not take (promoted, bfloat16) still promote, as NumPy does
    from ndflow.core.dtypes import BFLOAT16
    a = _data((5, 3), np.float64, 12)
    for fn, np_fn in ((tnp.add, np.add), (tnp.exp, np.exp), (tnp.matmul, np.matmul)):
        for dt in (np.float32, np.int8, np.float32, np.bool_, np.float16, BFLOAT16, np.float32):
            with np.errstate(all="ignore"):
                v = (a * 10).astype(dt) if dt is not np.bool_ else a > 0
                w = v.T if fn is tnp.matmul else v
                x, y = tnp.asarray(v), tnp.asarray(w)
                with nf.GradientTape() as t:
                    t.watch([x, y])
                    r = fn(x, y) if np_fn.nin == 2 else fn(x)
                want = np_fn(v, w) if np_fn.nin == 2 else np_fn(v)
            assert r.dtype == want.dtype, (fn, dt)
            assert _bits(r.numpy()) == _bits(want), (fn, dt)
