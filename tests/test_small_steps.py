"""Small compiled steps: 0-d values computed on NumPy scalars behind guards (numpy_tier's
scalar path and codegen's scalar kernels) give NumPy's values, dtypes, warnings and errors,
and compiled training steps match the eager ones bit for bit."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import numpy_tier as T

FLOATS = (np.float16, np.float32, np.float64)
INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
OPS = (np.add, np.subtract, np.multiply, np.true_divide)


def _specials(dt):
    fi = np.finfo(dt)
    vals = [0.0, -0.0, 1.0, -1.0, 1.5, -2.75, 3.0, 0.1, fi.tiny, -fi.tiny, fi.tiny * 2,
            fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max, fi.max / 2,
            np.sqrt(fi.max), 1 / np.sqrt(fi.max), np.inf, -np.inf, np.nan, -np.nan]
    with np.errstate(all="ignore"):
        out = [dt(v) for v in vals]
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << (8 * np.dtype(dt).itemsize), 40, dtype=np.uint64)
    ut = np.dtype("u%d" % np.dtype(dt).itemsize)
    out += list(bits.astype(ut).view(dt))
    return out


def _bits(x):
    a = np.asarray(x)
    return a.dtype, a.shape, a.view("u%d" % a.dtype.itemsize).tobytes() \
        if a.dtype.kind in "fc" else a.tobytes()


def _outcome(f, *args, mode="warn"):
    """(value bits or (error type, message), warning messages) of f(*args) under `mode`."""
    with warnings.catch_warnings(record=True) as w, np.errstate(all=mode):
        warnings.simplefilter("always")
        try:
            r = f(*args)
            res = (_bits(r), type(r) is np.ndarray)
        except Exception as e:        # noqa: BLE001 -- compared below
            res = (type(e), str(e))
    return res, [str(x.message) for x in w]


def _as_operands(dt, a, b):
    # 0-d arrays, NumPy scalars and a mix: all are what 0-d graph values may be
    yield np.array(a, dt), np.array(b, dt)
    yield dt(a), dt(b)
    yield np.array(a, dt), dt(b)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("ufunc", OPS)
def test_scalar_kernel_floats_match_the_ufunc(dt, ufunc):
    assert T.scalar_form(ufunc, {}, [dt, dt], dt) is not None
    k = T.scalar_kernel(ufunc, dt)
    vals = _specials(dt)
    rng = np.random.default_rng(1)
    pairs = [(a, b) for a in vals[:22] for b in vals[:22]] + \
        [tuple(rng.choice(vals, 2)) for _ in range(150)]
    for a, b in pairs:
        for x, y in _as_operands(dt, a, b):
            for mode in ("warn", "raise"):
                want = _outcome(ufunc, x, y, mode=mode)
                got = _outcome(k, x, y, mode=mode)
                # values (NaN payloads and the sign of zero included), dtype, errors, warnings
                assert got[0][0] == want[0][0] and got[1] == want[1], (a, b, mode)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("ufunc", OPS[:3])
def test_scalar_kernel_integers_wrap_silently_as_arrays_do(dt, ufunc):
    k = T.scalar_kernel(ufunc, dt)
    ii = np.iinfo(dt)
    vals = [0, 1, 2, 3, ii.max, ii.max - 1, ii.min, ii.min + 1, ii.max // 2, 7, 100]
    vals = [dt(v) for v in vals]
    for a in vals:
        for b in vals:
            for x, y in _as_operands(dt, a, b):
                want = _outcome(ufunc, np.array(x), np.array(y), mode="raise")
                got = _outcome(k, x, y, mode="raise")
                assert got[0][0] == want[0][0] and got[1] == want[1] == [], (a, b)


def test_scalar_forms_refuse_what_they_cannot_do():
    assert T.scalar_form(np.true_divide, {}, [np.int64, np.int64], np.float64) is None
    assert T.scalar_form(np.add, {}, [np.float32, np.float64], np.float64) is None
    assert T.scalar_form(np.power, {}, [np.float32, np.float32], np.float32) is None
    assert T.scalar_form(np.add, {}, [np.complex64, np.complex64], np.complex64) is None
    assert T.scalar_form(np.add, {}, [np.bool_, np.bool_], np.bool_) is None


@pytest.mark.parametrize("src", FLOATS + INTS)
@pytest.mark.parametrize("dst", FLOATS)
def test_convert_kernel_matches_astype(src, dst):
    from ndflow.primitives import elementwise as E
    assert T.convert_form(E.convert_p, {"dtype": np.dtype(dst)}, src, dst)
    k = T.convert_kernel(E.convert_p.impl, src, dst)
    if np.dtype(src).kind == "f":
        vals = _specials(src)
    else:
        ii = np.iinfo(src)
        vals = [src(v) for v in (0, 1, -1 if ii.min else 2, ii.max, ii.min, ii.max - 1,
                                 min(ii.max, 2049), min(ii.max, (1 << 24) + 1),
                                 min(ii.max, (1 << 53) + 1), min(ii.max, 16777217))]
    for v in vals:
        for x in (np.array(v, src), src(v)):
            want = _outcome(lambda a: a.astype(dst), x, mode="warn")
            got = _outcome(lambda a: k(a, dtype=np.dtype(dst)), x, mode="warn")
            assert got[0][0] == want[0][0] and got[1] == want[1], (v, src, dst)
            want = _outcome(lambda a: a.astype(dst), x, mode="raise")
            got = _outcome(lambda a: k(a, dtype=np.dtype(dst)), x, mode="raise")
            assert got[0][0] == want[0][0], (v, src, dst)


def _chain(a, b, c, i):
    # a region of 0-d values: guarded ops, a power and a sqrt between them, a conversion
    t = (a * b - c) / (b + c)
    u = tnp.sqrt(tnp.abs(t)) * a
    w = (i + i) * i
    return t, u - b ** c, w, w.astype(a.dtype) * a


@pytest.mark.parametrize("dt", FLOATS)
def test_compiled_0d_regions_match_eager_and_numpy(dt):
    f = nf.function(_chain)
    vals = _specials(dt)[:22] + [dt(2.5), dt(-0.5)]
    rng = np.random.default_rng(2)
    ints = [np.int64(v) for v in (0, 3, -7, 2 ** 62, -(2 ** 62), 2 ** 31)]
    for _ in range(60):
        a, b, c = (dt(v) for v in rng.choice(vals, 3))
        i = ints[rng.integers(len(ints))]
        args = tuple(np.array(v) for v in (a, b, c, i))
        with warnings.catch_warnings(record=True) as w1, np.errstate(all="warn"):
            warnings.simplefilter("always")
            got = f(*args)
        with warnings.catch_warnings(record=True) as w2, np.errstate(all="warn"):
            warnings.simplefilter("always")
            eager = _chain(*(tnp.asarray(v) for v in args))
        with warnings.catch_warnings(record=True) as w3, np.errstate(all="warn"):
            warnings.simplefilter("always")
            ref = _chain(*args)
        for g, e, r in zip(got, eager, ref):
            assert _bits(g) == _bits(e) == _bits(r), (a, b, c, i)
        # NumPy's own chain mixes ufunc and scalar messages ("in divide", "in scalar
        # divide"): ndflow's eager ops are ufuncs on 0-d values, and so are compiled ones
        assert [str(x.message) for x in w1] == [str(x.message) for x in w2], (a, b, c, i)
        assert {str(x.message).replace("scalar ", "") for x in w1} == \
            {str(x.message).replace("scalar ", "") for x in w3}


def test_compiled_0d_overflow_raises_as_numpy_under_errstate():
    f = nf.function(lambda a, b: a * b + a)
    big = np.array(np.float32(3e38))
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow encountered in multiply"):
            np.multiply(big, big)
        with pytest.raises(FloatingPointError, match="overflow encountered in multiply"):
            f(big, big)
    assert _bits(f(np.array(np.float32(2)), np.array(np.float32(3)))) == \
        _bits(np.float32(8))


# ---------------------------------------------------------------- small training steps
SMALL_OPTIMIZERS = {
    "sgd": lambda: nf.optimizers.SGD(0.05),
    "momentum": lambda: nf.optimizers.SGD(0.05, momentum=0.9),
    "nesterov": lambda: nf.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "adam": lambda: nf.optimizers.Adam(0.01),
    "amsgrad": lambda: nf.optimizers.Adam(0.01, amsgrad=True),
    "adamw": lambda: nf.optimizers.AdamW(0.01),
    "rmsprop": lambda: nf.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: nf.optimizers.Adagrad(0.1),
}


def _poly_trainer(opt_name, dtype, compiled):
    # the polynomial fit of the benchmarks: a 4-element Variable, 0-d bias corrections
    coef = nf.Variable(tnp.zeros(4, dtype=dtype))
    scale = nf.Variable(tnp.asarray(1.0, dtype=dtype))      # a 0-d Variable, updated too
    opt = SMALL_OPTIMIZERS[opt_name]()
    powers = tnp.arange(4, dtype=dtype)[:, None]

    def step(x, y):
        with nf.GradientTape() as tape:
            pred = tnp.matmul(coef, x[None, :] ** powers) * scale
            loss = tnp.mean(tnp.square(pred - y))
        opt.apply_gradients(zip(tape.gradient(loss, [coef, scale]), [coef, scale]))
        return loss
    return (nf.function(step) if compiled else step), [coef, scale], opt


def _state(vs, opt):
    return [v.numpy() for v in vs] + [s.numpy() for s, _ in opt._slots.values()] + \
        [opt.iterations.numpy()]


@pytest.mark.parametrize("opt_name", sorted(SMALL_OPTIMIZERS))
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_small_training_steps_compiled_match_eager_bit_for_bit(opt_name, dtype):
    rng = np.random.default_rng(3)
    eager, ve, oe = _poly_trainer(opt_name, dtype, compiled=False)
    comp, vc, oc = _poly_trainer(opt_name, dtype, compiled=True)
    for i in range(12):
        x = rng.uniform(-1, 1, 32).astype(dtype)
        y = (0.5 - x + 2 * x ** 2).astype(dtype)
        if i == 5:
            y = np.zeros_like(x)          # -0.0 and zero gradients through the update
            x[:] = -0.0
        held = [v.numpy() for v in vc]            # copies the user took before the step
        held_values = [v.value() for v in vc]     # the Variables' current values
        before = [h.copy() for h in held] + [np.array(h.numpy()) for h in held_values]
        le, lc = eager(x, y), comp(x, y)
        assert _bits(lc.numpy()) == _bits(le.numpy())
        for a, e in zip(_state(vc, oc), _state(ve, oe)):
            assert _bits(a) == _bits(e), (opt_name, i)
        # what the user held is unchanged, and the returned loss is no Variable's buffer
        for h, b in zip(held + [np.array(h.numpy()) for h in held_values], before):
            assert _bits(h) == _bits(b)
        for v in vc + [s for s, _ in oc._slots.values()]:
            assert not np.may_share_memory(np.asarray(lc.numpy()), v._value._v)


def test_returned_variable_values_do_not_change_with_later_steps():
    v = nf.Variable(np.arange(4, dtype=np.float32))
    w = nf.Variable(np.float32(2.0))

    @nf.function
    def step(g):
        v.assign_sub(g * w)
        w.assign(w * np.float32(0.5))
        return v.value(), w.value(), v.value() + 0

    outs = []
    for i in range(4):
        r = step(np.full(4, i, np.float32))
        outs.append([np.array(o.numpy()) for o in r])
        held = r
        step(np.ones(4, np.float32))
        for o, want in zip(held, outs[-1]):
            assert _bits(o.numpy()) == _bits(want)
    # the eager program's values
    ve, we = np.arange(4, dtype=np.float32), np.float32(2.0)
    for i in range(4):
        for g in (np.full(4, i, np.float32), np.ones(4, np.float32)):
            ve = ve - g * we
            we = we * np.float32(0.5)
    assert _bits(v.numpy()) == _bits(ve) and _bits(w.numpy()) == _bits(we)


def test_generated_step_writes_reads_and_assignments_inline():
    v = nf.Variable(np.zeros(3, np.float32))

    @nf.function
    def step(g):
        v.assign(v.value() * np.float32(0.5) + g)
        return v.value()
    step(np.ones(3, np.float32))
    cf = step.get_concrete_function(np.ones(3, np.float32))
    src = cf.source
    assert "._value._v" in src and "_new(ndarray)" in src
    # a wrapper the user holds is never written: assignment binds a new one
    held = v.value()
    step(np.ones(3, np.float32))
    assert _bits(held.numpy()) == _bits(np.full(3, 1.0, np.float32))
    assert _bits(v.numpy()) == _bits(np.full(3, 1.5, np.float32))
