"""A compiled training step run many times holds no more memory at the end than after its
warm-up: nothing per call is kept (caches keyed per call, pools that grow, records that pile
up), eager NumPy buffers included (NumPy reports its allocations to tracemalloc)."""
import functools
import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp


def _training_step():
    rng = np.random.default_rng(0)
    w1 = nf.Variable(rng.standard_normal((32, 16)).astype(np.float32) * 0.1)
    b1 = nf.Variable(np.zeros(16, np.float32))
    w2 = nf.Variable(rng.standard_normal((16, 10)).astype(np.float32) * 0.1)
    opt = nf.optimizers.Adam(1e-3)
    vs = [w1, b1, w2]

    @nf.function
    def step(x, y):
        with nf.GradientTape() as tape:
            p = nf.nn.softmax(tnp.maximum(x @ w1 + b1, 0) @ w2)
            loss = tnp.mean(nf.losses.categorical_crossentropy(y, p))
        grads = tape.gradient(loss, vs)
        opt.apply_gradients(zip(grads, vs))
        return loss
    x = tnp.asarray(rng.standard_normal((64, 32)).astype(np.float32))
    y = tnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)])
    return step, x, y


@pytest.mark.parametrize("numba", ["off", "sync"])
def test_compiled_training_step_memory_stays_flat(numba):
    with nf.config.settings.override(numba=numba):
        step, x, y = _training_step()
        for _ in range(100):             # warm-up: traces, kernels, pools, optimizer slots
            step(x, y)
        gc.collect()
        tracemalloc.start()
        try:
            for _ in range(50):
                step(x, y)
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(400):
                loss = step(x, y)
            del loss
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    # 400 calls: a leak of even 64 bytes per call shows (the loss array itself is ~100 bytes)
    assert grown < 16 * 1024, f"{grown} bytes held after 400 more calls"


class _Held:
    """What a closure holds (a weak reference can name it)."""


def _compiled_and_dropped(kind):
    held = _Held()

    def f(x):
        held                                    # in f's closure
        return x * 2.0

    def again(x, n=1):
        held
        return x * 2.0 if n == 0 else again(x, n - 1)    # f's closure holds f itself

    if kind == "wrapper":
        nf.function(f)(tnp.asarray([1.0]))    # f converted first: its twin is in f.__dict__

    @functools.wraps(f)                         # copies f's __dict__, f's twin included
    def wrapper(x):
        return f(x) + 1.0

    target = {"plain": f, "recursive": again, "wrapper": wrapper}[kind]
    fn = nf.function(target)
    want = {"plain": [2.0, 4.0], "recursive": [2.0, 4.0], "wrapper": [3.0, 5.0]}[kind]
    np.testing.assert_array_equal(fn(tnp.asarray([1.0, 2.0])).numpy(), want)
    return weakref.ref(held), weakref.ref(target)


@pytest.mark.parametrize("kind", ["plain", "recursive", "wrapper"])
def test_a_compiled_function_dropped_is_freed_with_its_closure(kind):
    """AutoGraph's converted twin of a function shares its closure: the cache of twins must not
    keep the function (and the arrays its closure holds) alive once the user drops it."""
    held, target = _compiled_and_dropped(kind)
    gc.collect()
    assert held() is None and target() is None


def test_a_converted_function_still_pickles_by_value():
    """The twin kept on a function travels as nothing when the function is shipped by value
    (cloudpickle, as Dask's workers get it), and the copy is converted again where it runs."""
    cloudpickle = pytest.importorskip("cloudpickle")
    scale = 3.0
    f = lambda x: x * scale if x.shape[0] > 1 else x      # noqa: E731 (shipped by value)
    fn = nf.function(f)
    np.testing.assert_array_equal(fn(tnp.asarray([1.0, 2.0])).numpy(), [3.0, 6.0])
    g = cloudpickle.loads(cloudpickle.dumps(f))
    np.testing.assert_array_equal(nf.function(g)(tnp.asarray([1.0, 2.0])).numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(nf.function(g)(tnp.asarray([5.0])).numpy(), [5.0])


class _Model(nf.Module):
    def __init__(self):
        super().__init__()
        self.w = nf.Variable(np.array([1.0, 2.0, 3.0]))

    @nf.function
    def __call__(self, x):
        return x * self.w

    @nf.function(input_signature=[nf.TensorSpec([None], tnp.float64)])
    def scaled(self, x):
        if tnp.sum(x) > 0:                      # AutoGraph: a traced condition
            return x * 2.0 * self.w
        return x


def test_a_compiled_method_does_not_keep_its_object_alive():
    """As tf.function's methods: the copy of a compiled method bound to an object (one per
    object, kept while the object lives) holds the object weakly, so a model dropped is freed
    with its Variables; a bound method kept past its object runs its traced graphs and says so
    when it would trace again."""
    m = _Model()
    x = tnp.asarray([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(m(x).numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m.scaled(x).numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(m.scaled(-x).numpy(), [-1.0, -1.0, -1.0])
    assert m.scaled is m.scaled and m.scaled.experimental_get_tracing_count() == 1
    assert m.scaled.python_function.__self__ is m
    held, var = weakref.ref(m), weakref.ref(m.w)
    del m
    gc.collect()
    assert held() is None and var() is None

    m = _Model()
    kept = m.__call__                  # its traced graph holds m.w, not m
    kept(x)
    held = weakref.ref(m)
    del m
    gc.collect()
    assert held() is None
    np.testing.assert_array_equal(kept(x).numpy(), [1.0, 2.0, 3.0])    # traced: no m needed
    with pytest.raises(ReferenceError, match="__call__"):
        kept(tnp.asarray([1.0]))       # a new shape traces the method again: m is needed
