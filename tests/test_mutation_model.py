"""The memory and mutation model (ndflow/core/mutation.py): NumPy's semantics for writes and
views on every path — eager, with tapes alive anywhere, under a recording tape, compiled,
vectorized, in threads — exact gradients through writes, and clear errors where a path cannot
follow NumPy."""
import threading
import time

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree


def _np(x):
    return x.numpy() if isinstance(x, tnp.ndarray) else np.asarray(x)


# ---------------------------------------------------------------- views and live tapes
def _view_program(m, z):
    """A NumPy program mixing views and writes; returns every array it touched."""
    v = z[1:3]
    t = z.reshape(2, 3).T
    z[1] = 5.0
    v[1] = -1.0
    t[0, 1] = 7.0
    z += 1.0
    return z, v, t


def _numpy_view_program():
    z = np.arange(6.0)
    return [a.copy() for a in _view_program(np, z)]


def test_views_see_writes_while_a_finished_tape_is_alive():
    x = tnp.ones(2)
    with nf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    got = _view_program(tnp, tnp.arange(6.0))
    for g, w in zip(got, _numpy_view_program()):
        np.testing.assert_array_equal(_np(g), w)
    assert tape.gradient(y, x) is not None       # still usable afterwards


def test_views_see_writes_while_another_thread_records():
    started, stop = threading.Event(), threading.Event()

    def other():
        x = tnp.ones(3)
        with nf.GradientTape() as tape:
            tape.watch(x)
            _ = x * 2
            started.set()
            stop.wait(10)

    th = threading.Thread(target=other)
    th.start()
    started.wait(10)
    try:
        got = _view_program(tnp, tnp.arange(6.0))
    finally:
        stop.set()
        th.join()
    for g, w in zip(got, _numpy_view_program()):
        np.testing.assert_array_equal(_np(g), w)


def test_views_under_an_active_tape_that_watches_the_array():
    z = tnp.arange(6.0)
    with nf.GradientTape() as tape:
        tape.watch(z)
        got = _view_program(tnp, z)
    for g, w in zip(got, _numpy_view_program()):
        np.testing.assert_array_equal(_np(g), w)


# ---------------------------------------------------------------- gradients through writes
def test_gradient_after_a_write_is_the_functional_one():
    A = tnp.asarray([1.0, 2.0, 3.0])
    b = tnp.asarray(7.0)
    c = tnp.asarray([1.0, 2.0, 3.0])
    with nf.GradientTape() as tape:
        tape.watch([A, b])
        A[1] = b
        loss = tnp.sum(A * c)
    gA, gb = tape.gradient(loss, [A, b])
    np.testing.assert_array_equal(gA.numpy(), [1.0, 0.0, 3.0])
    assert float(gb) == 2.0
    np.testing.assert_array_equal(A.numpy(), [1.0, 7.0, 3.0])


def test_gradient_wrt_an_array_written_after_its_use_is_at_the_used_value():
    x = tnp.asarray([1.0, 2.0])
    with nf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tnp.sum(x * x)
    x[0] = 5.0                         # after the tape finished
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0])
    x2 = tnp.asarray([1.0, 2.0])
    with nf.GradientTape() as tape2:
        tape2.watch(x2)
        y2 = tnp.sum(x2 * x2)
        x2 *= 10.0                     # while recording, after the use
    np.testing.assert_array_equal(tape2.gradient(y2, x2).numpy(), [2.0, 4.0])


def test_gradient_through_a_view_of_a_written_array():
    z0 = np.arange(5.0)
    z, b = tnp.asarray(z0), tnp.asarray(3.0)
    with nf.GradientTape() as tape:
        tape.watch([z, b])
        v = z[1:3]
        z[1] = b                       # v sees it (NumPy), and so does the gradient
        loss = tnp.sum(v * v)
    gz, gb = tape.gradient(loss, [z, b], unconnected_gradients="zero")
    assert float(loss) == 9.0 + 4.0
    np.testing.assert_array_equal(gz.numpy(), [0, 0, 4.0, 0, 0])
    assert float(gb) == 6.0


def test_gradient_through_a_write_into_a_view():
    z, b = tnp.asarray(np.arange(5.0)), tnp.asarray(3.0)
    with nf.GradientTape() as tape:
        tape.watch([z, b])
        v = z[1:3]
        v[0] = b * 2                   # writes z[1]
        loss = tnp.sum(z * z)
    gz, gb = tape.gradient(loss, [z, b])
    np.testing.assert_array_equal(z.numpy(), [0, 6.0, 2, 3, 4])
    np.testing.assert_array_equal(gz.numpy(), [0, 0, 4.0, 6.0, 8.0])
    assert float(gb) == 24.0


def test_gradient_through_a_write_into_a_transposed_view():
    m0 = np.arange(6.0).reshape(2, 3)
    m, b = tnp.asarray(m0), tnp.asarray(2.0)
    with nf.GradientTape() as tape:
        tape.watch([m, b])
        t = m.T
        t[2, 0] = b
        loss = tnp.sum(m * m)
    gm, gb = tape.gradient(loss, [m, b])
    want = m0.copy()
    want[0, 2] = 2.0
    np.testing.assert_array_equal(m.numpy(), want)
    mask = np.ones((2, 3))
    mask[0, 2] = 0
    np.testing.assert_array_equal(gm.numpy(), 2 * m0 * mask)
    assert float(gb) == 4.0


def test_a_view_of_a_view_follows_a_write_through_a_sibling():
    m0 = np.arange(9.0).reshape(3, 3)
    m = tnp.asarray(m0)
    with nf.GradientTape() as tape:
        tape.watch(m)
        d = tnp.diagonal(m)            # a (read-only) view of m
        r = m[0]
        r[0] = 100.0                   # writes m[0, 0], which d shows
        loss = tnp.sum(d * d)
    assert float(loss) == 100.0 ** 2 + 16.0 + 64.0
    np.testing.assert_array_equal(tape.gradient(loss, m).numpy(), np.diag([0.0, 8.0, 16.0]))


def test_an_alias_the_tape_cannot_follow_raises_instead_of_a_wrong_gradient():
    m = tnp.asarray(np.arange(9.0).reshape(3, 3))
    u = tnp.asarray(m.numpy()[0])      # shares m's memory outside ndflow's view operations
    with nf.GradientTape() as tape:
        tape.watch([m, u])
        m[0, 0] = 100.0                # u[0] changes too (NumPy)
        loss = tnp.sum(u)
    assert float(loss) == 100.0 + 1.0 + 2.0
    with pytest.raises(ValueError, match="shares memory"):
        tape.gradient(loss, [m, u])


def test_item_assignment_under_a_tape_is_linear_in_the_number_of_writes():
    def run(n):
        a = tnp.zeros(64)
        b = tnp.asarray(2.0)
        with nf.GradientTape() as tape:
            tape.watch([a, b])
            t0 = time.thread_time()          # CPU time: other processes do not count
            for i in range(n):
                a[i % 64] = b * i
            dt = time.thread_time() - t0
            loss = tnp.sum(a)
        g = tape.gradient(loss, b)
        # the last write of each slot counts: sum of the last 64 i's
        assert float(g) == float(sum(range(n - 64, n)))
        return dt
    run(200)
    # 8x the writes: linear is ~8x the time, quadratic (the old record scan) ~64x
    t1, t8 = min(run(250) for _ in range(3)), min(run(2000) for _ in range(3))
    assert t8 < 8 * t1 * 3, (t1, t8)


def test_inplace_operator_under_a_tape_keeps_the_old_value_for_earlier_uses():
    x0 = np.array([1.0, 2.0, 3.0])
    x, y = tnp.asarray(x0.copy()), tnp.asarray([2.0, 3.0, 4.0])
    with nf.GradientTape() as tape:
        tape.watch([x, y])
        p = x * x                      # uses the old x
        x *= y
        loss = tnp.sum(p) + tnp.sum(x)
    gx, gy = tape.gradient(loss, [x, y])
    np.testing.assert_array_equal(gx.numpy(), 2 * x0 + y.numpy())
    np.testing.assert_array_equal(gy.numpy(), x0)


def test_forward_mode_through_a_write():
    A, b = tnp.asarray([1.0, 2.0, 3.0]), tnp.asarray(5.0)
    with nf.ForwardAccumulator(b, tnp.asarray(1.0)) as acc:
        A[1] = b * 2
        out = tnp.sum(A * A)
    assert float(acc.jvp(out)) == 2 * 10.0 * 2


# ---------------------------------------------------------------- compiled and vectorized
def _mutating(x, y):
    z = x * 1.0
    v = z[1:3]
    z[1] = y[0]
    z[2:] += y[1]
    w = z.T if z.ndim > 1 else z[::-1]
    return z, v + 0.0, w * 1.0


def test_the_same_mutating_program_eager_taped_compiled_vectorized():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((3, 5)), rng.standard_normal((3, 2))
    want = [np.stack(o) for o in zip(*[[_np(a) for a in _mutating(tnp.asarray(x), tnp.asarray(y))]
                                       for x, y in zip(X, Y)])]
    x, y = tnp.asarray(X[0]), tnp.asarray(Y[0])
    with nf.GradientTape() as tape:
        tape.watch([x, y])
        taped = _mutating(x, y)
    compiled = nf.function(_mutating)(x, y)
    for t, c, w in zip(taped, compiled, want):
        np.testing.assert_allclose(_np(t), w[0])
        np.testing.assert_allclose(_np(c), w[0])
    vec = nf.vectorized_map(lambda a: _mutating(a[0], a[1]), (tnp.asarray(X), tnp.asarray(Y)))
    for g, w in zip(vec, want):
        np.testing.assert_allclose(_np(g), w)
    both = nf.function(lambda a, b: nf.vectorized_map(lambda e: _mutating(e[0], e[1]), (a, b)))
    for g, w in zip(both(tnp.asarray(X), tnp.asarray(Y)), want):
        np.testing.assert_allclose(_np(g), w)


def test_views_made_while_tracing_see_later_writes():
    def f(z):
        v = z[1:3]
        t = z.reshape(2, 3).T
        z[1] = 5.0
        v[1] = -1.0
        t[0, 1] = 7.0
        return v * 1, t * 1, z * 1
    want = f(np.arange(6.0))
    got = nf.function(f)(tnp.arange(6.0))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_np(g), w)


def test_function_writes_to_arguments_and_out_like_eager():
    def f(x, o):
        x[0] = x[0] + 1.0
        tnp.add(x, 1.0, out=o)
        return tnp.sum(x)

    def run(fn):
        a, o = tnp.zeros(3), tnp.zeros(3)
        av = a[:2]                       # a view the caller holds
        outs = [float(fn(a, o)) for _ in range(3)]
        return outs, a.numpy().copy(), o.numpy().copy(), av.numpy().copy()

    eager, compiled = run(f), run(nf.function(f))
    assert eager[0] == compiled[0] == [1.0, 2.0, 3.0]
    for e, c in zip(eager[1:], compiled[1:]):
        np.testing.assert_array_equal(e, c)


def test_function_write_into_a_captured_array_happens_at_every_call():
    c = tnp.zeros(3)
    cv = c[1:]

    @nf.function
    def f(x):
        c[1] += x
        return x * 2

    for i in range(3):
        f(tnp.asarray(1.0))
    assert isinstance(c._v, np.ndarray) and c._t is None     # never a symbolic value
    np.testing.assert_array_equal(c.numpy(), [0.0, 3.0, 0.0])
    np.testing.assert_array_equal(cv.numpy(), [3.0, 0.0])


def test_vectorized_map_writes_mapped_arguments_back_like_a_loop():
    X = np.arange(6.0).reshape(3, 2)
    want = X.copy()
    for i in range(3):
        row = want[i]
        row[0] = row[1] * 10

    def f(r):
        r[0] = r[1] * 10
        return r * 1

    x = tnp.asarray(X.copy())
    out = nf.vectorized_map(f, x)
    np.testing.assert_array_equal(x.numpy(), want)
    np.testing.assert_array_equal(out.numpy(), want)


def test_vectorized_map_refuses_per_example_writes_into_outside_arrays():
    c = tnp.zeros(3)

    def f(r):
        c[0] = r[0]
        return r

    with pytest.raises(ValueError, match="did not create"):
        nf.vectorized_map(f, tnp.ones((4, 2)))
    assert c._t is None and isinstance(c._v, np.ndarray)     # no batched value left in c

    def g(r):                       # a loop would add 4 times
        c[1] += 1.0
        return r
    with pytest.raises(ValueError, match="did not create"):
        nf.vectorized_map(g, tnp.ones((4, 2)))

    def h(r):                       # arrays the function makes are its own
        b = tnp.zeros(2)
        b[0] += 1.0
        b[1] = r[0]
        return b
    np.testing.assert_array_equal(nf.vectorized_map(h, tnp.ones((4, 2))).numpy(),
                                  np.ones((4, 2)))


# ---------------------------------------------------------------- threads
def _work(seed, iters, out):
    rng = np.random.default_rng(seed)
    f = nf.function(lambda a: tnp.sum(tnp.sin(a) * a))
    for _ in range(iters):
        x = tnp.asarray(rng.standard_normal(4))
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(x * x)
            x2 = x * 1.0
            x2[0] = 3.0
            y = y + tnp.sum(x2)
        g = tape.gradient(y, x)
        z = tnp.arange(5.0)
        v = z[1:3]
        z[1] = 9.0
        out.append((g.numpy().tolist(), float(f(x)),
                    nf.vectorized_map(lambda r: r * r, x).numpy().tolist(), v.numpy().tolist(),
                    x.numpy().tolist()))


def test_four_threads_equal_one_thread():
    n = 60
    serial = []
    for k in range(4):
        _work(k, n, serial)
    outs = [[] for _ in range(4)]
    ths = [threading.Thread(target=_work, args=(k, n, outs[k])) for k in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    par = [r for o in outs for r in o]
    assert len(par) == len(serial)
    assert par == serial
    for g, _, _, v, x in par:
        assert v == [9.0, 2.0]
        np.testing.assert_allclose(g, 2 * np.array(x) + [0, 1, 1, 1])


def test_a_thread_that_ends_with_a_tape_open_gives_the_fast_path_back():
    import gc
    from ndflow.core.state import GLOBAL

    def leak():
        nf.GradientTape().__enter__()
    th = threading.Thread(target=leak)
    th.start()
    th.join()
    gc.collect()
    assert GLOBAL.fast


# ---------------------------------------------------------------- composition and identity
def _f(x):
    return tnp.sum(x ** 3) + tnp.sum(tnp.sin(x))


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian"])
def test_jit_composes_with_transformations_on_either_side(name):
    x = tnp.asarray([0.5, 2.0])
    t = getattr(nf, name)
    want = t(_f)(x)
    for fn in (nf.jit(t(nf.jit(_f))), nf.jit(t(_f)), t(nf.jit(_f))):
        got = fn(x)
        gl, wl = tree.flatten(got), tree.flatten(want)
        assert len(gl) == len(wl)
        for g, w in zip(gl, wl):
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-12)
    g = nf.grad(_f)(x).numpy()
    np.testing.assert_allclose(g, 3 * x.numpy() ** 2 + np.cos(x.numpy()))


def test_tied_arguments_get_their_own_gradients():
    w = tnp.asarray([1.0, 2.0])
    ga, gb = nf.grad(lambda a, b: tnp.sum(a * b * b), argnums=(0, 1))(w, w)
    np.testing.assert_array_equal(ga.numpy(), [1.0, 4.0])       # b*b, as JAX
    np.testing.assert_array_equal(gb.numpy(), [2.0, 8.0])       # 2ab
    g0 = nf.grad(lambda a, b: tnp.sum(a * b), argnums=0)(w, w)
    np.testing.assert_array_equal(g0.numpy(), [1.0, 2.0])
    with nf.GradientTape() as tape:                              # TF: the same tensor twice
        tape.watch(w)
        loss = tnp.sum(w * w)
    g1, g2 = tape.gradient(loss, [w, w])
    np.testing.assert_array_equal(g1.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(g2.numpy(), [2.0, 4.0])


def test_tied_arguments_higher_order():
    x = tnp.asarray(3.0)
    with nf.GradientTape() as tape:
        tape.watch(x)
        ga, gb = nf.grad(lambda a, b: a * b * b, argnums=(0, 1))(x, x)
    # d/dx of b^2 at a=b=x is 2x
    assert float(tape.gradient(ga, x)) == 6.0


@pytest.mark.parametrize("fn", [lambda x: tnp.sum(x * 1j), lambda x: tnp.all(x > 0),
                                lambda x: tnp.sum(x).astype(int)],
                         ids=["complex", "bool", "int"])
def test_grad_requires_real_valued_outputs(fn):
    with pytest.raises(TypeError, match="real-valued outputs"):
        nf.grad(fn)(tnp.asarray([1.0, 2.0]))
    with pytest.raises(TypeError, match="real-valued outputs"):
        nf.value_and_grad(fn)(tnp.asarray([1.0, 2.0]))


def test_grad_requires_inexact_inputs():
    with pytest.raises(TypeError, match="inexact"):
        nf.grad(lambda x: x * 1.0)(tnp.asarray(3))


def test_vectorized_map_of_a_none_gradient_gives_none():
    def f(x):
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.asarray(1.0)
        return tape.gradient(y, x), x * 2

    g, y = nf.vectorized_map(f, tnp.ones(3))
    assert g is None
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])


# ---------------------------------------------------------------- random programs, every path
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

_N = 6
_slices = st.tuples(st.integers(0, _N), st.integers(0, _N), st.sampled_from([1, 2, -1]))


def _key(k):
    a, b, s = k
    return slice(b, a, s) if s < 0 else slice(a, b, s)


_step = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(["z", "v"]), _slices, st.floats(-4, 4)),
    st.tuples(st.just("seti"), st.sampled_from(["z", "v"]), st.integers(-2, 1), st.integers(0, 1)),
    st.tuples(st.just("iadd"), st.sampled_from(["z", "v"]), _slices, st.integers(0, 1)),
    st.tuples(st.just("imul"), st.sampled_from(["z", "v"]), st.just(None), st.integers(0, 1)),
)


def _program(steps):
    """A straight-line program of writes through `z` and a view `v = z[1:5]`; reads `y` (an
    input) so the taped/vectorized versions carry values of their own. Returns z, v and a value
    read in the middle (which must not see later writes)."""
    def run(z, y):
        z = z * 1.0
        v = z[1:5]
        mid = None
        for i, (op, tgt, k, c) in enumerate(steps):
            a = z if tgt == "z" else v
            if op == "set":
                a[_key(k)] = c
            elif op == "seti":
                a[k] = y[c]
            elif op == "iadd":
                a[_key(k)] += y[c]
            else:
                a *= y[c]
            if i == len(steps) // 2:
                mid = tnp.sum(z) if not isinstance(z, np.ndarray) else np.sum(z)
        if mid is None:
            mid = tnp.sum(z) if not isinstance(z, np.ndarray) else np.sum(z)
        return z * 1, v * 1, mid * 1
    return run


@settings(max_examples=100, deadline=None)
@given(st.lists(_step, min_size=1, max_size=6))
def test_random_write_programs_agree_on_every_path(steps):
    run = _program(steps)
    Z = np.linspace(-1, 1, 3 * _N).reshape(3, _N)
    Y = np.array([[1.5, -0.5], [2.0, 0.25], [-1.0, 3.0]])
    want = [run(Z[i].copy(), Y[i]) for i in range(3)]
    want = [np.stack([w[j] for w in want]) for j in range(3)]
    z, y = tnp.asarray(Z[0]), tnp.asarray(Y[0])
    eager = run(z, y)
    with nf.GradientTape() as tape:
        tape.watch([z, y])
        taped = run(z, y)
    compiled = nf.function(run)(z, y)
    for e, t, c, w in zip(eager, taped, compiled, want):
        np.testing.assert_allclose(_np(e), w[0], rtol=1e-12)
        np.testing.assert_allclose(_np(t), w[0], rtol=1e-12)
        np.testing.assert_allclose(_np(c), w[0], rtol=1e-12)
    vec = nf.vectorized_map(lambda a: run(a[0], a[1]), (tnp.asarray(Z), tnp.asarray(Y)))
    for g, w in zip(vec, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-12)
    # the gradient through the writes and views, against central differences in y and z
    W = np.arange(1.0, _N + 1)

    def loss(res, m):
        return m.sum(res[0] * W) + 2 * m.sum(res[1] * W[:4]) + 3 * res[2]
    with nf.GradientTape() as tape:
        tape.watch([z, y])
        out = loss(run(z, y), tnp)
    gz, gy = [g.numpy() for g in tape.gradient(out, [z, y], unconnected_gradients="zero")]
    h = 1e-6
    for x0, g, which in ((Z[0], gz, 0), (Y[0], gy, 1)):
        for j in range(x0.size):
            d = np.zeros(x0.size)
            d[j] = h
            args = [Z[0].copy(), Y[0].copy()]
            args[which] = x0 + d
            hi = loss(run(*args), np)
            args = [Z[0].copy(), Y[0].copy()]
            args[which] = x0 - d
            num = (hi - loss(run(*args), np)) / (2 * h)
            np.testing.assert_allclose(g[j], num, rtol=1e-5, atol=1e-6)


def test_function_refuses_a_written_argument_that_shares_memory_with_another():
    def f(x, y):
        x[0] = 1.0
        return y * 1.0

    a = tnp.zeros(3)
    np.testing.assert_array_equal(f(a, a).numpy(), [1.0, 0.0, 0.0])     # NumPy: seen through y
    g = nf.function(f)
    b = tnp.zeros(3)
    with pytest.raises(ValueError, match="shares memory"):
        g(b, b)
    with pytest.raises(ValueError, match="shares memory"):
        g(b[:2], b[1:])
    c, d = tnp.zeros(3), tnp.zeros(3)
    np.testing.assert_array_equal(g(c, d).numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(c.numpy(), [1.0, 0.0, 0.0])
