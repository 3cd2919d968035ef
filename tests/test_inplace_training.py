"""Compiled training steps write the Variables' next values into their own buffers
(graph/memory.py, `variable_updates`), with eager semantics kept: whoever holds the old value
(`v.numpy()`, `v.value()`, a view, another Variable) keeps it, and the values are the eager
step's, bit for bit."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph.kernels import numba_available

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba not installed")


@pytest.fixture
def numba_sync(monkeypatch, nf_settings):
    """The compiled tier at once (exact mode, as by default)."""
    nf_settings(numba="sync")
    nf_settings(fast_math=False)


def _ptr(v):
    return v._value._v.__array_interface__["data"][0]


OPTIMIZERS = {
    "sgd": lambda: nf.optimizers.SGD(0.1),
    "momentum": lambda: nf.optimizers.SGD(0.1, momentum=0.9),
    "nesterov": lambda: nf.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "adam": lambda: nf.optimizers.Adam(0.01),
}


def _problem(dtype, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((64, 128)).astype(dtype)      # 8K elements: compiled, in place
    b = rng.standard_normal(128).astype(dtype)             # small: bound anew, as eagerly
    x = rng.standard_normal((16, 64)).astype(dtype)
    x[0, :4] = [0.0, -0.0, 1e-30, -1e-30]
    y = rng.standard_normal((16, 128)).astype(dtype)
    return w, b, x, y


def _trainer(opt_name, w0, b0, compiled):
    w, b = nf.Variable(w0), nf.Variable(b0)
    opt = OPTIMIZERS[opt_name]()

    def step(x, y):
        with nf.GradientTape() as t:
            h = tnp.maximum(tnp.matmul(x, w) + b, 0)
            loss = tnp.mean(tnp.square(h - y))
        opt.apply_gradients(zip(t.gradient(loss, [w, b]), [w, b]))
        return loss
    return (nf.function(step) if compiled else step), w, b, opt


def _slots(opt):
    return [s for s, _ in opt._slots.values()]


@needs_numba
@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_optimizer_steps_in_place_and_bit_identical(numba_sync, opt_name, dtype):
    w0, b0, x, y = _problem(dtype)
    eager, we, be, oe = _trainer(opt_name, w0, b0, compiled=False)
    comp, wc, bc, oc = _trainer(opt_name, w0, b0, compiled=True)
    ptrs = None
    for i in range(7):
        le = eager(x, y)
        lc = comp(x, y)
        np.testing.assert_array_equal(lc.numpy(), le.numpy())
        for a, e in zip([wc, bc] + _slots(oc), [we, be] + _slots(oe)):
            assert a.numpy().dtype == e.numpy().dtype
            np.testing.assert_array_equal(a.numpy(), e.numpy())
        big = [wc] + [s for s in _slots(oc) if s.shape == wc.shape]
        if i >= 4:            # from the call after the compiled kernels are in place
            now = [_ptr(v) for v in big]
            if ptrs is not None:
                assert now == ptrs, "a Variable's buffer changed in a compiled step"
            ptrs = now
    assert int(oc.iterations.numpy()) == int(oe.iterations.numpy()) == 7


def _sub_step(v, c):
    def step(g):
        v.assign_sub(g * c)
    return step


@needs_numba
def test_plain_assign_sub_in_place(numba_sync):
    rng = np.random.default_rng(1)
    v = nf.Variable(rng.standard_normal((100, 100)))
    g = tnp.asarray(rng.standard_normal((100, 100)))
    f = nf.function(_sub_step(v, 0.5))
    want = v.numpy().copy()
    for _ in range(4):
        f(g)
        want = want - g.numpy() * 0.5
    p = _ptr(v)
    f(g)
    want = want - g.numpy() * 0.5
    assert _ptr(v) == p
    np.testing.assert_array_equal(v.numpy(), want)
    # the graph reads the Variable with its buffer offered to the update
    cf = f.get_concrete_function(g)
    reads = [n for n in cf.graph.nodes if n.prim.variable_access == "read"]
    assert len(reads) == 1 and len(reads[0].outputs) == 2
    # the donor is the Variable's buffer again: not counted as allocated
    rep = cf.memory_report()
    assert rep.allocated_bytes < 2 * v.numpy().nbytes


def _holders():
    """Ways to keep the old value of a Variable; each must keep it across a compiled step."""
    return {
        "numpy": lambda v: v.numpy(),
        "value": lambda v: v.value(),
        "view": lambda v: v.numpy()[3:7],
        # u.assign(v) takes v's value without a copy: u and v then share a buffer
        "other_variable": lambda v: nf.Variable(np.zeros(v.shape, v.dtype)).assign(v),
        "tape": lambda v: _taped(v),
    }


def _taped(v):
    t = nf.GradientTape(persistent=True)
    with t:
        t.watch(v)
        r = v * 1.0
    return (t, r, v.value())


def _as_np(h):
    if isinstance(h, tuple):
        return _as_np(h[2])
    if isinstance(h, nf.Variable):
        return h.numpy()
    return np.asarray(h)


@pytest.mark.parametrize("numba", ["0", "sync"])
@pytest.mark.parametrize("holder", sorted(_holders()))
def test_held_old_values_are_kept(monkeypatch, numba, holder, nf_settings):
    if numba != "0" and not numba_available():
        pytest.skip("numba not installed")
    nf_settings(numba=numba)
    rng = np.random.default_rng(2)
    v = nf.Variable(rng.standard_normal((64, 128)).astype(np.float32))
    g = tnp.asarray(rng.standard_normal((64, 128)).astype(np.float32))
    f = nf.function(_sub_step(v, np.float32(0.25)))
    for _ in range(5):
        f(g)
    held = _holders()[holder](v)
    old = _as_np(held).copy()
    p = _ptr(v)
    expect = v.numpy() - g.numpy() * np.float32(0.25)
    f(g)
    np.testing.assert_array_equal(v.numpy(), expect)
    np.testing.assert_array_equal(_as_np(held), old)
    assert _ptr(v) != p          # a new buffer: the old one is someone else's too
    del held
    if numba != "0":
        f(g)                     # nothing holds it any more: in place again
        p = _ptr(v)
        f(g)
        assert _ptr(v) == p


def test_no_in_place_update_when_errors_raise():
    # the overflow happens in the subtraction that writes the Variable (a ufunc given the
    # Variable's buffer as out=: NumPy raises after writing it)
    v = nf.Variable(np.full((64, 128), 3e38, np.float32))
    g = tnp.asarray(np.full((64, 128), -3e38, np.float32))
    f = nf.function(_sub_step(v, np.float32(1)))
    small = tnp.asarray(np.zeros((64, 128), np.float32))
    for _ in range(5):
        f(small)
    before = v.numpy().copy()
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            f(g)
    # as eagerly: the failed step left the Variable as it was
    np.testing.assert_array_equal(v.numpy(), before)


@needs_numba
def test_value_read_before_update_is_returned_unchanged(numba_sync):
    """A step that returns the value it read keeps it: the read's buffer is a result, so the
    update cannot go into it."""
    v = nf.Variable(np.arange(8192, dtype=np.float64))

    def step(g):
        old = v.read_value()
        v.assign_sub(g * 2.0)
        return old
    f = nf.function(step)
    g = tnp.ones(8192)
    e = nf.Variable(np.arange(8192, dtype=np.float64))
    for _ in range(5):
        got = f(g).numpy()
        want = e.read_value().numpy().copy()
        e.assign_sub(g * 2.0)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(v.numpy(), e.numpy())


@needs_numba
def test_view_used_after_update_blocks_in_place(numba_sync):
    """A view of the old value used after the new value is computed must see the old value."""
    v = nf.Variable(np.arange(64 * 128, dtype=np.float32).reshape(64, 128))

    def step(g):
        t = tnp.transpose(v.value())
        new = v.value() - g
        s = tnp.sum(t[:, 0])          # reads the old value after `new` exists
        v.assign(new)
        return s
    f = nf.function(step)
    g = tnp.ones((64, 128), dtype=tnp.float32)
    ref = nf.Variable(np.arange(64 * 128, dtype=np.float32).reshape(64, 128))
    for _ in range(5):
        want = np.sum(ref.numpy().T[:, 0])
        ref.assign(ref.value() - g)
        np.testing.assert_array_equal(f(g).numpy(), want)
        np.testing.assert_array_equal(v.numpy(), ref.numpy())


def _sub_step_fused(v, c):
    # the read first: the product and the difference then form one fused region
    def step(g):
        cur = v.value()
        v.assign(cur - g * c)
    return step


def _update_runner(f, *args):
    """The tier-1 runner of the one node that writes the Variable's next value in place."""
    cf = f.get_concrete_function(*args)
    ks = [n.prim.impl for n in cf.graph.nodes if getattr(n.prim.impl, "variables", None)]
    assert len(ks) == 1
    return ks[0].kernel.runner


def _special(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    a.flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 3e38]
    return a


@needs_numba
def test_quick_in_place_call(numba_sync):
    """The generated caller of an in-place update (`Runner._make_quick_into`): NumPy's bits
    with special values, the same buffer at every call, and the general path (a new buffer)
    whenever the Variable's buffer is not offered (someone holds the old value)."""
    w0, g0 = _special((64, 128), 3), _special((64, 128), 4)[::-1].copy()
    v = nf.Variable(w0)
    g = tnp.asarray(g0)
    f = nf.function(_sub_step_fused(v, np.float32(0.25)))
    want = w0.copy()
    with np.errstate(all="ignore"):
        for i in range(6):
            f(g)
            want = want - g0 * np.float32(0.25)
            assert np.array_equal(v.numpy(), want, equal_nan=True)
            assert np.array_equal(np.signbit(v.numpy()), np.signbit(want))
        r = _update_runner(f, g)
        q, hits = r.quick_into, []
        assert callable(q)
        r.quick_into = lambda xs, ds: hits.append(q(xs, ds)) or hits[-1]
        p = _ptr(v)
        f(g)
        assert hits and hits[-1] is not NotImplemented
        want = want - g0 * np.float32(0.25)
        assert _ptr(v) == p and np.array_equal(v.numpy(), want, equal_nan=True)
        held = v.numpy()
        old = held.copy()
        f(g)
        want = want - g0 * np.float32(0.25)
        assert _ptr(v) != p
        assert np.array_equal(held, old, equal_nan=True)
        assert np.array_equal(v.numpy(), want, equal_nan=True)
        del held
        p = _ptr(v)
        f(g)
        want = want - g0 * np.float32(0.25)
        assert _ptr(v) == p and np.array_equal(v.numpy(), want, equal_nan=True)
        assert callable(r.quick_into)
    # a strided gradient: the general path, the same values
    gs = tnp.asarray(np.repeat(g0, 2, axis=1)[:, ::2])
    f(gs)
    want = want - g0 * np.float32(0.25)
    assert np.array_equal(v.numpy(), want, equal_nan=True)


@needs_numba
def test_quick_in_place_call_from_threads(numba_sync):
    import threading
    fs, vs, wants = [], [], []
    g0 = np.random.default_rng(9).standard_normal((64, 128)).astype(np.float32)
    g = tnp.asarray(g0)
    for i in range(4):
        w0 = np.random.default_rng(i).standard_normal((64, 128)).astype(np.float32)
        v = nf.Variable(w0)
        f = nf.function(_sub_step_fused(v, np.float32(0.5)))
        for _ in range(5):
            f(g)
            w0 = w0 - g0 * np.float32(0.5)
        assert callable(_update_runner(f, g).quick_into)
        fs.append(f), vs.append(v), wants.append(w0)

    def work(k):
        for _ in range(100):
            fs[k](g)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for v, w in zip(vs, wants):
        for _ in range(100):
            w = w - g0 * np.float32(0.5)
        np.testing.assert_array_equal(v.numpy(), w)
