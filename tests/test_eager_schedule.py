"""The eager backward plan's cached schedules (autodiff/eager_schedule.py) against the reference.

A sequence of records seen before runs as a compiled schedule, checked against the records
first. Here every schedulable backward pass is scheduled at its first sight (`_SEEN` = 1, a
fresh cache per test) and:

* on the op table, each gradient (taken twice: the second run reuses the schedule) must be the
  reference loop's bits (the plan off), and the schedule must have run for the records whose
  primitives all have host rules;
* each part of the check must refuse a cached schedule that differs in it: the wiring of the
  program, the watched set, the dtypes, the seeds, the kept sources, a replaced VJP rule; a
  host rule declining a record midway hands the rest to the plan's loop; shapes and
  parameters, which the rules read on every run, give the reference's bits when they change
  under the same schedule; persistent and nested tapes;
* an MLP's gradients, scheduled, are checked against finite differences, and its
  output_gradients and sources are never written into;
* a square under a sum from a seed of exactly one runs as x + x: the reference's bits on
  special values, never for another seed or where the program does not fit.
"""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.autodiff import eager_plan as P
from ndflow.autodiff import eager_schedule as S
from ndflow.primitives import elementwise as E

import test_eager_plan as EP
import test_optable as T
from helpers import value_bits

pytestmark = T.pytestmark


@pytest.fixture
def sched(monkeypatch):
    """Schedules at first sight, in a fresh cache; returns the list of what each compiled
    schedule's run returned (None: its checks refused the records)."""
    monkeypatch.setattr(S, "_SEEN", 1)
    monkeypatch.setattr(S, "_CACHE", {})
    monkeypatch.setattr(S, "_BUILT", {})
    ran = []
    real = S._compile

    def compile_spy(*a):
        f = real(*a)

        def run(*args):
            r = f(*args)
            ran.append(r)
            return r
        return run
    monkeypatch.setattr(S, "_compile", compile_spy)
    return ran


def _reference(monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setattr(P, "ENABLED", False)
        return fn()


def _bits(gs):
    return [value_bits(g) for g in gs]


# ------------------------------------------------------------------ the op table
# records whose programs (the op and the loss's multiply, sum and add) have host rules only
_SCHEDULED = {"add", "subtract", "multiply", "matmul", "maximum", "minimum", "negative",
              "true_divide", "divide", "sum", "where"}


@pytest.mark.parametrize("rec,dt", EP._CASES)
def test_schedule_is_the_reference_loop_bit_for_bit(rec, dt, sched, monkeypatch):
    compared = 0
    for s, pos, cts, how in EP._samples(rec, dt):
        with np.errstate(all="ignore"):
            first = EP._gradients(rec, s, pos, cts, how)
            again = EP._gradients(rec, s, pos, cts, how)      # (the cached schedule)
            reference = _reference(monkeypatch, lambda: EP._gradients(rec, s, pos, cts, how))
        assert first == reference and again == reference, \
            f"{rec.name}{s!r} ({how}): the scheduled gradient differs from the reference loop's"
        compared += 1
    if rec.name in _SCHEDULED and compared:
        assert -1 in sched, f"{rec.name}: no backward pass ran as a schedule"


# ------------------------------------------------------------------ what the check covers
def _grads(fn, watched, sources=None, persistent=False, **kw):
    with nf.GradientTape(persistent=persistent) as tape:
        tape.watch(watched)
        z = fn(*watched)
    return tape.gradient(z, watched if sources is None else sources, **kw)


def _arrays(*shapes, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [tnp.asarray(rng.standard_normal(s).astype(dtype)) for s in shapes]


def _check(monkeypatch, fn):
    got = fn()
    want = _reference(monkeypatch, fn)
    assert _bits(got) == _bits(want)
    return got


def test_a_program_wired_otherwise_is_refused(sched, monkeypatch):
    # the same primitives (multiply, add, sum), the second input of the add differs: a
    # schedule that did not compare the wiring would give b's gradient a's share
    a, b = _arrays((3, 4), (3, 4))
    _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b + a), [a, b]))
    assert sched == [-1]
    _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b + b), [a, b]))
    assert sched == [-1, None, -1]          # refused, then a schedule of its own
    _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b + a), [a, b]))
    assert sched[3:] == [None, -1]          # the newest refuses, the first one runs
    assert len(S._CACHE) == 1 and len(next(iter(S._CACHE.values()))) == 2


def test_operands_swapped_are_refused(sched, monkeypatch):
    # both inputs of the subtract are earlier records' outputs, the second program swaps
    # them: a schedule that did not compare each input's tid would give p the + cotangent
    a, b = _arrays((4,), (4,), seed=16)
    got = []
    for swap in (False, True):
        def f(a, b):
            p, q = a * b, a + b
            return tnp.sum(q - p if swap else p - q)
        got.append(_check(monkeypatch, lambda: _grads(f, [a, b])))
    np.testing.assert_array_equal(got[1][0].numpy(), 1.0 - b.numpy())
    assert sched == [-1, None, -1]


def test_a_value_used_twice_and_two_values_are_told_apart(sched, monkeypatch):
    a, b = _arrays((5,), (5,), seed=1)
    _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b), [a, b]))
    # a * a: one value in both places (its two gradients summed into one slot)
    _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * a) + tnp.sum(b * 0.0),
                                       [a, b]))
    g = _check(monkeypatch, lambda: _grads(lambda a: tnp.sum(a * a), [a]))
    np.testing.assert_array_equal(g[0].numpy(), 2 * a.numpy())
    assert sched.count(-1) == 3


def test_a_changed_watched_set_is_refused(sched, monkeypatch):
    # first b is not watched (the schedule gives it no gradient), then it is: reused, b's
    # gradient would be missing
    a, b = _arrays((4,), (4,), seed=2)

    def only_a():
        with nf.GradientTape() as tape:
            tape.watch(a)
            z = tnp.sum(a * b)
        return tape.gradient(z, [a, b])
    got = _check(monkeypatch, only_a)
    assert got[1] is None and sched == [-1]
    got = _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b), [a, b]))
    assert got[1] is not None and sched == [-1, None, -1]
    # and back (b keeps the tid it was watched with, not connected now): reused, the
    # schedule would give b a gradient where it has none
    got = _check(monkeypatch, only_a)
    assert got[1] is None and sched[3:] == [None, -1]


def test_changed_sources_are_refused(sched, monkeypatch):
    # an intermediate value asked for as a source is kept (its cotangent left in the table
    # when its record consumes it)
    a, = _arrays((4,), seed=3)

    def with_mid(keep_mid):
        with nf.GradientTape() as tape:
            tape.watch(a)
            m = a * 3.0
            z = tnp.sum(m * m)
        return tape.gradient(z, [a, m] if keep_mid else [a])
    _check(monkeypatch, lambda: with_mid(False))
    got = _check(monkeypatch, lambda: with_mid(True))
    np.testing.assert_array_equal(got[1].numpy(), 2 * (a.numpy() * 3.0))
    assert sched == [-1, None, -1]


def test_changed_targets_are_refused(sched, monkeypatch):
    a, = _arrays((4,), seed=4)

    def grads(both):
        with nf.GradientTape() as tape:
            tape.watch(a)
            m = a * a
            z = tnp.sum(m)
        return tape.gradient([z, m] if both else z, [a])
    _check(monkeypatch, lambda: grads(False))
    _check(monkeypatch, lambda: grads(True))
    assert sched == [-1, None, -1]

    def of_m():
        with nf.GradientTape() as tape:
            tape.watch(a)
            m = a * a
            tnp.sum(m)
        return tape.gradient(m, [a])
    # one target as before, another record's output
    got = _check(monkeypatch, of_m)
    np.testing.assert_array_equal(got[0].numpy(), 2 * a.numpy())
    assert sched[3:] == [None, None, -1]


def test_a_changed_dtype_is_refused(sched, monkeypatch):
    for dt in (np.float64, np.float32, np.float64):
        a, b = _arrays((3,), (3,), dtype=dt, seed=5)
        _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b - b), [a, b]))
    assert sched == [-1, None, -1, None, -1]


def test_an_equal_dtype_object_runs_the_schedule(sched, monkeypatch):
    # the checks compare dtypes with ==: a float64 dtype object of its own (metadata makes
    # NumPy build a new one) is as differentiable as the one the schedule was built for, so
    # the schedule runs, with the reference loop's bits; a float32 one is still refused
    md = np.dtype(np.float64, metadata={"unit": "m"})
    assert md == np.float64 and md is not np.dtype(np.float64)
    for dt in (np.float64, md, np.float32):
        a, b = (tnp.asarray(v.astype(dt)) for v in
                np.random.default_rng(6).standard_normal((2, 3)))
        assert a._v.dtype is (md if dt is md else np.dtype(dt))
        _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b - b), [a, b]))
    assert sched == [-1, -1, None, -1]


def test_a_non_differentiable_program_is_refused(sched, monkeypatch):
    # the same primitives on integers (TensorFlow: their gradients are None): the schedule
    # built for floats, which gives each input a gradient, must not be reused for them
    for dt in (np.float64, np.int64):
        a, b = (tnp.asarray(np.arange(4).astype(dt) + i) for i in (1, 2))
        with pytest.warns(UserWarning) if dt is np.int64 else _nothing():
            got = _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b), [a, b]))
    assert got == [None, None] and sched == [-1, None, -1]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_changed_shapes_and_parameters_under_one_schedule(sched, monkeypatch):
    # shapes and parameters are not checked: the host rules read them on every run (the
    # broadcast bias's sum over the batch, the sum's axes), so one schedule serves them all
    for shapes, axis in ((((2, 3), (3,)), 0), (((5, 3), (1, 3)), 1), (((4, 3), (4, 3)), 0)):
        a, b = _arrays(*shapes, seed=7)
        _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(tnp.sum(a + b, axis=axis)
                                                                * 2.0), [a, b]))
    assert sched == [-1, -1, -1]
    assert len(next(iter(S._CACHE.values()))) == 1


def test_a_replaced_rule_is_refused(sched, monkeypatch):
    from ndflow.primitives import elementwise as E
    a, b = _arrays((3,), (3,), seed=8)
    _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b), [a, b]))
    calls = []
    real = E.mul_p.vjp
    monkeypatch.setattr(E.mul_p, "vjp", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = _grads(lambda a, b: tnp.sum(a * b), [a, b])
    assert calls, "the replaced rule did not run"
    np.testing.assert_array_equal(got[0].numpy(), b.numpy())
    # the schedule (of the old rule) never ran again; the sequence is the plan's loop's now
    assert sched == [-1] and list(S._CACHE.values()) == [(P.RULES,)]


def test_a_host_rule_declining_midway_hands_over(sched, monkeypatch):
    # matmul of a vector: the host rule declines (NotImplemented) after the schedule has run
    # the records after it; the plan's loop goes on from that record with the table as left
    w, v, c = _arrays((3, 4), (4,), (3,), seed=9)

    def f(w, v, c):
        return tnp.sum(tnp.maximum((w @ v) * c, 0.1) + c)
    _check(monkeypatch, lambda: _grads(f, [w, v, c]))
    _check(monkeypatch, lambda: _grads(f, [w, v, c]))
    assert sched and all(r is not None and r >= 0 for r in sched), sched


def test_persistent_tape_twice_and_records_kept(sched, monkeypatch):
    a, b = _arrays((3, 2), (2,), seed=10)

    def twice():
        with nf.GradientTape(persistent=True) as tape:
            tape.watch([a, b])
            z = tnp.sum(tnp.maximum(a + b, 0.0) * a)
        g1 = tape.gradient(z, [a, b])
        assert all(r is not None for r in tape._records)
        return g1 + tape.gradient(z, [a, b])
    got = _check(monkeypatch, twice)
    assert _bits(got[:2]) == _bits(got[2:])
    assert sched == [-1, -1]


def test_a_non_persistent_tape_releases_its_records(sched):
    a, b = _arrays((3, 2), (2,), seed=11)
    with nf.GradientTape() as tape:
        tape.watch([a, b])
        z = tnp.sum((a + b) * a)
    records = tape._records
    tape.gradient(z, [a, b])
    assert sched == [-1] and all(r is None for r in records)


def test_nested_tapes_take_the_reference_loop(sched, monkeypatch):
    x, = _arrays((3,), seed=12)

    def second_order():
        with nf.GradientTape() as outer:
            outer.watch(x)
            with nf.GradientTape() as inner:
                inner.watch(x)
                y = tnp.sum(x * x * x)
            g = inner.gradient(y, x)          # recorded by the outer tape: not plain eager
            s = tnp.sum(g * x)
        return [g, outer.gradient(s, x)]
    got = _check(monkeypatch, second_order)
    # s = sum(3 x^2 * x): ds/dx = 9 x^2
    np.testing.assert_allclose(got[1].numpy(), 9 * x.numpy() ** 2, rtol=1e-12)
    # the inner gradient ran under the outer tape: only the outer one's pass is scheduled
    assert None not in sched and len(sched) <= 1


def test_the_route_switch(sched, monkeypatch):
    a, b = _arrays((3,), (3,), seed=13)
    with nf.config.settings.override(routes_off={"eager_schedule"}):
        _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b), [a, b]))
    assert sched == []
    _check(monkeypatch, lambda: _grads(lambda a, b: tnp.sum(a * b), [a, b]))
    assert sched == [-1]


# ------------------------------------------------------------------ an MLP, numerically
def _mlp(x, labels, w1, b, w2):
    h = tnp.maximum(tnp.matmul(x, w1) + b, 0)
    return tnp.sum(tnp.square(tnp.matmul(h, w2) - labels))


def test_mlp_gradients_scheduled_match_finite_differences(sched, monkeypatch):
    rng = np.random.default_rng(14)
    x, labels = rng.standard_normal((8, 5)), rng.standard_normal((8, 2))
    ws = [rng.standard_normal((5, 6)), rng.standard_normal(6), rng.standard_normal((6, 2))]
    nx, nl = tnp.asarray(x), tnp.asarray(labels)
    for _ in range(3):
        got = _check(monkeypatch, lambda: _grads(lambda *w: _mlp(nx, nl, *w),
                                                 [tnp.asarray(w) for w in ws]))
    assert sched == [-1, -1, -1]

    def f(vals):
        return float(_mlp(nx, nl, *[tnp.asarray(v) for v in vals]))
    eps = 1e-6
    for i, w in enumerate(ws):
        num = np.zeros_like(w)
        for j in np.ndindex(w.shape):
            up = [v.copy() for v in ws]
            dn = [v.copy() for v in ws]
            up[i][j] += eps
            dn[i][j] -= eps
            num[j] = (f(up) - f(dn)) / (2 * eps)
        np.testing.assert_allclose(got[i].numpy(), num, rtol=1e-5, atol=1e-6)


def test_output_gradients_and_sources_are_never_written(sched, monkeypatch):
    # the seed is the caller's array: a donating rule (multiply's) must not write into it,
    # nor into a source that is also a gradient's buffer
    a, b = _arrays((4, 3), (4, 3), seed=15)
    og = np.full((4, 3), 2.0)
    a0, b0, og0 = a.numpy().copy(), b.numpy().copy(), og.copy()
    for _ in range(2):
        got = _check(monkeypatch, lambda: _grads(lambda a, b: (a * b) * a, [a, b],
                                                 output_gradients=og))
    np.testing.assert_array_equal(og, og0)
    np.testing.assert_array_equal(a.numpy(), a0)
    np.testing.assert_array_equal(b.numpy(), b0)
    np.testing.assert_array_equal(got[1].numpy(), og0 * a0 * a0)
    assert sched == [-1, -1]


def test_a_chain_donates_its_cotangents_as_the_plan_does(sched):
    # y = w * y four times: each record's cotangent is the schedule's alone, so multiply's
    # rule writes the next one into it; the backward pass holds no more than the plan's loop
    import tracemalloc
    n = 1 << 18
    x = tnp.asarray(np.random.default_rng(17).standard_normal(n))
    ws = [tnp.asarray(np.full(n, 1.0 + i / 8)) for i in range(4)]

    def peak():
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for w in ws:
                y = w * y
            z = tnp.sum(y)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            g = tape.gradient(z, x)
            return (tracemalloc.get_traced_memory()[1] - base) / (8 * n), g
        finally:
            tracemalloc.stop()
    scheduled, g = peak()
    assert sched == [-1]
    with nf.config.settings.override(routes_off={"eager_schedule"}):
        loop, want = peak()
    assert value_bits(g) == value_bits(want)
    assert scheduled <= loop + 0.01, (scheduled, loop)
    assert scheduled < 1.5, scheduled      # the result, and one more array at most


def test_a_sequence_rebuilt_too_often_goes_to_the_plans_loop(sched, monkeypatch):
    # four variants of one sequence (multiply, sum: which inputs are watched, one value used
    # twice) in turn, two kept per key: each is built again when it comes back, up to
    # _REBUILDS, then the plan's loop runs them all (the same bits), without a look at them
    monkeypatch.setattr(S, "_PER_KEY", 2)
    monkeypatch.setattr(S, "_REBUILDS", 3)
    a, b = _arrays((3,), (3,), seed=18)
    variants = [([a, b], lambda: a * b), ([a], lambda: a * b), ([b], lambda: a * b),
                ([a], lambda: a * a)]

    def grads(watched, f):
        with nf.GradientTape() as tape:
            tape.watch(watched)
            z = tnp.sum(f())
        return tape.gradient(z, [a, b])
    for _ in range(2):
        for watched, f in variants:
            _check(monkeypatch, lambda: grads(watched, f))
    assert sched.count(-1) == 3 and list(S._BUILT.values()) == [4]
    assert list(S._CACHE.values()) == [(P.RULES,)]


# ------------------------------------------------------------------ the loss's tail
_SPECIAL = {np.float16: (0x7C01, 0xFE01), np.float32: (0x7F800001, 0xFFC00123),
            np.float64: (0x7FF0000000000001, 0xFFF8000000000123)}


def _special(dtype, n=4):
    """Values where a product by one could differ from its operand: signed zeros, infinities,
    NaNs (a signaling one and a negative quiet one with payloads, by their bits), the
    smallest subnormal, the largest finite value (x + x overflows), then random ones."""
    d = np.dtype(dtype)
    it = {2: np.uint16, 4: np.uint32, 8: np.uint64}[d.itemsize]
    nans = np.array(_SPECIAL[dtype], it).view(d)
    fi = np.finfo(d)
    v = np.concatenate([[0.0, -0.0, np.inf, -np.inf], nans, [fi.smallest_subnormal, fi.max,
                        -fi.tiny, 1.5]]).astype(d)
    v[4:6] = nans                         # (kept by their bits through the concatenate)
    rng = np.random.default_rng(21)
    return np.concatenate([v, rng.standard_normal(n).astype(d)])


@pytest.fixture
def twice_calls(monkeypatch):
    calls = []
    real = S.twice
    monkeypatch.setattr(S, "twice", lambda x: calls.append(x.shape) or real(x))
    return calls


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_square_under_a_sum_from_a_unit_seed_is_the_reference(dtype, sched, twice_calls,
                                                                 monkeypatch):
    # sum(square(w * a - c)) and sum(square(w)): with the default seed the schedule runs the
    # sum's and the square's records as x + x, the reference's (1 * x) + (1 * x) bits on
    # special values, and labels (c) get no gradient computed
    v = _special(dtype)
    w, a, c = tnp.asarray(v), tnp.asarray(v[::-1].copy()), tnp.asarray(np.roll(v, 3))
    with np.errstate(all="ignore"):
        for _ in range(2):
            _check(monkeypatch, lambda: _grads(lambda w: tnp.sum(tnp.square(w * a - c)), [w]))
            _check(monkeypatch, lambda: _grads(lambda w: tnp.sum(tnp.square(w)), [w]))
    assert sched == [-1] * 4 and twice_calls == [v.shape] * 4

    # a persistent tape: both gradients take it (its records are kept, not consumed)
    def persistent():
        with nf.GradientTape(persistent=True) as tape:
            tape.watch(w)
            z = tnp.sum(tnp.square(w * a - c))
        return tape.gradient(z, [w]) + tape.gradient(z, [w])
    with np.errstate(all="ignore"):
        got = _check(monkeypatch, persistent)
    assert _bits(got[:1]) == _bits(got[1:]) and twice_calls == [v.shape] * 6


def test_the_unit_seed_shortcut_reads_the_seed(sched, twice_calls, monkeypatch):
    # a seed the caller gives: of another value (two, NaN, -0.0, -1, a one of another dtype
    # just above one, a one of another shape) the sum's and the square's rules run; exactly one
    # (as a float or an array) is the default seed's bits and may take it
    v = _special(np.float32)
    w, c = tnp.asarray(v), tnp.asarray(np.roll(v, 5))
    with np.errstate(all="ignore"):
        for og in (2.0, np.nan, -0.0, -1.0, np.float64(1 + 2 ** -20), np.ones((1,))):
            def f(og=og):
                with nf.GradientTape() as tape:
                    tape.watch(w)
                    z = tnp.sum(tnp.square(w - c), keepdims=np.shape(og) == (1,))
                return tape.gradient(z, [w], output_gradients=og)
            _check(monkeypatch, f)
            _check(monkeypatch, f)
        assert twice_calls == []
        _check(monkeypatch, lambda: _grads(lambda w: tnp.sum(tnp.square(w - c)), [w],
                                           output_gradients=np.float32(1)))
    assert twice_calls == [v.shape]


def test_where_the_unit_seed_shortcut_does_not_apply(sched, twice_calls, monkeypatch):
    # the square's own gradient asked for (its cotangent kept); the square read by another
    # record too; x given a gradient before the square's (a record after it, reached by
    # nothing: the check is on the program, not on the run); a complex square (1 * x is not
    # x's bits); a square of two values; each the reference's bits
    v = _special(np.float64)
    x, y = tnp.asarray(v), tnp.asarray(v[::-1].copy())
    xc = tnp.asarray(v + 1j * v[::-1])

    def shared(x):
        q = x * x
        q * 3.0
        return tnp.sum(q)

    def later(x):
        q = x * x
        x * 3.0
        return tnp.sum(q)
    def square_asked_for():
        with nf.GradientTape() as tape:
            tape.watch(x)
            q = x * x
            z = tnp.sum(q)
        return tape.gradient(z, [x, q])
    with np.errstate(all="ignore"):
        for _ in range(2):
            _check(monkeypatch, square_asked_for)
            _check(monkeypatch, lambda: _grads(shared, [x]))
            _check(monkeypatch, lambda: _grads(later, [x]))
            _check(monkeypatch, lambda: _grads(lambda x: tnp.sum(tnp.square(x)), [xc]))
            _check(monkeypatch, lambda: _grads(lambda x, y: tnp.sum(x * y), [x, y]))
    assert twice_calls == [] and sched.count(-1) == 10


def test_labels_get_no_gradient_computed(sched, monkeypatch):
    # sub's rule is asked for the prediction's cotangent only (no negated copy for labels)
    seen = []
    sub = E.sub_p
    rules = dict(P.RULES)
    rule, vjp, donates = rules[sub]
    rules[sub] = (lambda ct, args, outs, p, needs, d: seen.append(needs) or
                  rule(ct, args, outs, p, needs, d), vjp, donates)
    monkeypatch.setattr(P, "RULES", rules)
    w, c = _arrays((6, 2), (6, 2), dtype=np.float32, seed=22)
    for _ in range(2):
        _check(monkeypatch, lambda: _grads(lambda w: tnp.sum(tnp.square(w - c)), [w]))
    assert seen == [(True, False)] * 2 and sched == [-1, -1]
