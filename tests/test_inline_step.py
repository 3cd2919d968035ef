"""Small regions written into the compiled step's code (codegen `_inline_region` and
`_inline_scalar`, numpy_tier `inline_form`), their results written over operands that die
(`_dying_temps`), basic indexes as `x[index]`, guarded `math.sqrt` on 0-d values and the short
reduction calls: each gives the eager values bit for bit, falls back where it cannot apply (a
new signature, a device backend in use), sees Variables changed from outside, and is safe
from several threads."""
import threading
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import numpy_tier as T
from ndflow.graph.kernels.program import Program, Op
from ndflow.primitives import elementwise as E

from helpers import assert_bits_equal


def _bits(x):
    a = np.asarray(x)
    return a.dtype, a.shape, a.view("u%d" % a.dtype.itemsize).tobytes()


def _step(x, y, c):
    # a 1-d region with constants and dying temporaries, a sum, 0-d arithmetic and a sqrt
    d = x * np.float32(0.5) - y
    e = (d * d + c * c) * np.float32(3)
    s = tnp.sum(e)
    r = tnp.sqrt(s / np.float32(7)) - np.float32(1)
    return e - r, r, x[None, 1:], s


def _args(rng, n=6, dt=np.float32):
    return (rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt),
            np.asarray(rng.standard_normal(), dt))


def test_inline_regions_match_eager_and_leave_inputs_alone():
    f = nf.function(_step)
    rng = np.random.default_rng(0)
    for _ in range(5):
        args = _args(rng)
        keep = [a.copy() for a in args]
        got = f(*args)
        want = _step(*(tnp.asarray(a) for a in args))
        for g, w in zip(got, want):
            assert_bits_equal(g.numpy(), w.numpy())
        for a, k in zip(args, keep):
            assert _bits(a) == _bits(k)
        assert not any(np.may_share_memory(g.numpy(), a) for g in got[:2] for a in args)
    src = f.get_concrete_function(*args).source
    # the regions are statements, each behind the device test, the index an expression
    assert "if _DEV:" in src and "[p" in src


def test_a_new_signature_takes_the_general_path_and_back():
    f = nf.function(_step)
    rng = np.random.default_rng(1)
    for n, dt in [(6, np.float32), (9, np.float32), (6, np.float64), (6, np.float32)]:
        args = _args(rng, n, dt)
        got = f(*args)
        want = _step(*(tnp.asarray(a) for a in args))
        for g, w in zip(got, want):
            assert_bits_equal(g.numpy(), w.numpy())
    # a 0-d operand given as a NumPy scalar, and an nf array: other argument types
    x, y, c = _args(rng)
    for cc in (np.float32(c), tnp.asarray(c)):
        got = f(x, y, cc)
        want = _step(tnp.asarray(x), tnp.asarray(y), tnp.asarray(c))
        for g, w in zip(got, want):
            assert_bits_equal(g.numpy(), w.numpy())


def test_with_a_device_backend_in_use_the_region_functions_run(monkeypatch):
    from ndflow.backends import device
    f = nf.function(_step)
    rng = np.random.default_rng(2)
    args = _args(rng)
    want = [g.numpy() for g in f(*args)]

    class _NotAHostBuffer:
        pass
    # a registered device buffer type: the generated code must take the function branch
    # (whose device test finds no device operand and runs tier 0)
    monkeypatch.setitem(device._BY_TYPE, _NotAHostBuffer, None)
    got = [g.numpy() for g in f(*args)]
    for g, w in zip(got, want):
        assert_bits_equal(g, w)


def test_variables_changed_from_outside_are_seen():
    v = nf.Variable(np.arange(4, dtype=np.float32))
    k = nf.Variable(np.float32(2))
    it = nf.Variable(np.int64(0), trainable=False)

    @nf.function
    def step(g):
        t = (it.value() + 1).astype(np.float32)
        v.assign(v.value() * k.value() - g / tnp.sqrt(t))
        it.assign(it.value() + 1)
        return v.value()

    def eager(v0, k0, it0, g):
        t = np.float32(it0 + 1)
        return v0 * k0 - g / np.sqrt(t), it0 + 1

    g = np.full(4, 0.25, np.float32)
    ve, ke, ite = np.arange(4, dtype=np.float32), np.float32(2), 0
    for i in range(6):
        if i == 2:
            v.assign(np.full(4, -1.5, np.float32))       # assigned eagerly
            ve = np.full(4, -1.5, np.float32)
        if i == 3:
            k.assign(np.float32(0.5))
            ke = np.float32(0.5)
        if i == 4:
            it._value = tnp.asarray(np.int64(2 ** 30))     # rebound wrapper, large count
            ite = 2 ** 30
        r = step(g)
        ve, ite = eager(ve, ke, ite, g)
        assert_bits_equal(r.numpy(), ve)
        assert_bits_equal(v.numpy(), ve)
        assert int(it.numpy()) == ite


def test_threads_get_their_own_results():
    f = nf.function(_step)
    rng = np.random.default_rng(3)
    data = [_args(rng) for _ in range(4)]
    want = [[g.numpy() for g in _step(*(tnp.asarray(a) for a in args))] for args in data]
    f(*data[0])
    errors = []

    def run(i):
        try:
            for _ in range(300):
                got = f(*data[i])
                for g, w in zip(got, want[i]):
                    if _bits(g.numpy()) != _bits(w):
                        errors.append(i)
                        return
        except Exception as e:        # noqa: BLE001 -- reported below
            errors.append(repr(e))
    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_dying_temporaries_are_only_fresh_results_of_the_same_shape():
    m, a, sq = E.mul_p, E.add_p, E.sqrt_p
    f32 = np.float32
    # t0 = x0*x1 (4,); t1 = t0+x2 -> over t0; t2 = sqrt(t1): t1 is an output, kept;
    # t3 = x0*x3 (x3 0-d) -> fresh (no operand of its own); t4 = t3 + x0 -> over t3
    prog = Program([((4,), f32), ((4,), f32), ((1,), f32), ((), f32)],
                   [Op(m, (0, 1), {}, (4,), f32), Op(a, (4, 2), {}, (4,), f32),
                    Op(sq, (5,), {}, (4,), f32), Op(m, (0, 3), {}, (4,), f32),
                    Op(a, (7, 0), {}, (4,), f32)],
                   [6, 5, 8], (4,))
    assert T._dying_temps(prog) == {1: 4, 4: 7}
    # a temporary of another dtype or a broadcast shape is not written over
    f64 = np.float64
    prog = Program([((4,), f32), ((3, 4), f32)],
                   [Op(m, (0, 0), {}, (4,), f32), Op(a, (2, 1), {}, (3, 4), f32),
                    Op(m, (0, 0), {}, (4,), f32), Op(E.convert_p, (4,), {"dtype": f64}, (4,),
                                                     f64)],
                   [3, 5], (3, 4))
    assert T._dying_temps(prog) == {}
    # one element: NumPy's ufunc with an operand as `out` is slower than allocating
    prog = Program([((1,), f32)], [Op(m, (0, 0), {}, (1,), f32), Op(a, (1, 0), {}, (1,), f32)],
                   [2], (1,))
    assert T._dying_temps(prog) == {}
    # what runs: a region of this form gives the eager bits
    f = nf.function(lambda x, y, b, c: (tnp.sqrt(x * y + b), x * y + b, x * c + x))
    rng = np.random.default_rng(6)
    args = (rng.random(4, f32), rng.random(4, f32), rng.random(1, f32), f32(0.5))
    for got, want in zip(f(*args), ((np.sqrt(args[0] * args[1] + args[2])),
                                    args[0] * args[1] + args[2], args[0] * args[3] + args[0])):
        assert_bits_equal(got.numpy(), want)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_guarded_sqrt_is_numpys(dt):
    f = nf.function(lambda a: tnp.sqrt(a * dt(1)) * dt(1))
    if dt == np.float16:
        vals = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    else:
        fi = np.finfo(dt)
        rng = np.random.default_rng(4)
        ut = np.dtype("u%d" % np.dtype(dt).itemsize)
        vals = np.concatenate([
            rng.integers(0, np.iinfo(ut).max, 3000, dtype=ut, endpoint=True).view(dt),
            np.array([0.0, -0.0, 1.0, 4.0, 2.0, fi.tiny, fi.smallest_subnormal, fi.max,
                      -1.0, np.inf, -np.inf, np.nan], dt)])
    # the generated scalar code itself, over every value (the compiled function below checks
    # that it is what runs)
    prog = Program([((), dt)], [Op(E.sqrt_p, (0,), {}, (), dt)], [1], ())
    ns = {}
    lines = T._scalar_lines(prog, ns, {})
    exec("def k(x0):\n" + "".join("    %s\n" % ln for ln in lines) + "    return t0\n", ns)
    k = ns["k"]
    with np.errstate(all="ignore"):
        for x in vals:
            assert _bits(k(x)) == _bits(np.sqrt(x)), x
    for x in vals[::97][:40]:
        with warnings.catch_warnings(record=True) as w1, np.errstate(all="warn"):
            warnings.simplefilter("always")
            got = f(np.asarray(x))
        with warnings.catch_warnings(record=True) as w2, np.errstate(all="warn"):
            warnings.simplefilter("always")
            want = np.sqrt(np.asarray(x) * dt(1)) * dt(1)
        assert _bits(got.numpy()) == _bits(want), x
        assert [str(m.message) for m in w1] == [str(m.message) for m in w2]
    assert T.sqrt_form(np.sqrt, {}, [dt], dt)
    assert not T.sqrt_form(np.sqrt, {}, [np.int32], np.float64)


def test_inline_errors_name_the_node_and_follow_errstate():
    big = np.array(np.float32(3e38))
    f = nf.function(lambda a, b: tnp.sqrt(a * b) + a)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow encountered in multiply"):
            f(big, big)
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid value encountered in sqrt"):
            f(np.array(np.float32(-2)), np.array(np.float32(3)))
    assert_bits_equal(f(np.array(np.float32(2)), np.array(np.float32(8))).numpy(),
                      np.float32(6))


def test_basic_and_array_indexes():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    idx = np.array([2, 0])

    def g(x, i):
        return x[None, 1:, ::2], x[..., -1], x[1], x[i], x[:, i]
    f = nf.function(g)
    for got, want in zip(f(x, idx), g(x, idx)):
        assert_bits_equal(got.numpy(), want)
    with pytest.raises(IndexError):
        nf.function(lambda x: x[7])(x)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, np.int32, np.uint8,
                                np.bool_])
def test_short_reduction_calls_keep_numpys_dtype_and_values(dt):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(300) * 50).astype(dt)

    def g(x):
        return tnp.sum(x * x), tnp.max(x + x, axis=0), tnp.sum(x, axis=0, keepdims=True)
    f = nf.function(g)
    for got, want in zip(f(x), g(tnp.asarray(x))):
        assert_bits_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dt", [np.float32, np.int64])
def test_writes_over_dying_temporaries_raise_no_warning(dt):
    """`out` is passed positionally only to ufuncs that take it so without a warning (NumPy
    2.4 deprecates it for maximum and minimum, which then get `out=`)."""
    def fn(np_, a, b):
        return np_.minimum(np_.maximum(a * 2, b), a + b) - np_.maximum(b - a, a)
    f = nf.function(lambda a, b: fn(tnp, a, b))
    a = np.arange(6, dtype=dt).reshape(2, 3)
    b = (np.arange(6, dtype=dt) * 3 - 7).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            got = f(tnp.asarray(a), tnp.asarray(b))
    assert_bits_equal(got.numpy(), fn(np, a, b))
    assert not T._positional_out(np.maximum) and T._positional_out(np.add)
