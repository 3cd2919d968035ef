"""Devices: listing, scopes, placement strings, logical CPU devices, and (marked `gpu`) the CuPy
backend, skipped cleanly on machines without a GPU."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.backends import device as D

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_list_devices():
    logical = nf.config.list_logical_devices()
    assert logical[0].name == "/device:CPU:0" and logical[0].device_type == "CPU"
    assert all(d.device_type in ("CPU", "GPU") for d in logical)
    assert nf.config.list_logical_devices("CPU")[0].name == "/device:CPU:0"
    phys = nf.config.list_physical_devices("CPU")
    assert phys and phys[0].device_type == "CPU"
    gpus = nf.config.list_physical_devices("GPU")
    assert len(gpus) == len(nf.config.list_logical_devices("GPU"))


def test_default_device_string():
    x = tnp.ones(2)
    assert x.device == CPU0
    assert (x + 1).device == CPU0
    assert tnp.asarray(np.ones(2)).device == CPU0


@pytest.mark.parametrize("spec", ["CPU:0", "cpu:0", "/CPU:0", "/device:CPU:0", CPU0,
                                  "/job:localhost/replica:0/task:0/device:CPU:0"])
def test_device_scope_spellings(spec):
    with nf.device(spec):
        x = tnp.ones(3) * 2
        y = tnp.sum(x)
    assert x.device == CPU0 and y.device == CPU0
    assert float(y) == 6.0


def test_device_scope_accepts_logical_device_and_none():
    with nf.device(nf.config.list_logical_devices("CPU")[0]):
        assert tnp.zeros(1).device == CPU0
    with nf.device(None):
        assert tnp.zeros(1).device == CPU0


@pytest.fixture
def hard_placement():
    prev = nf.config.get_soft_device_placement()
    nf.config.set_soft_device_placement(False)
    yield
    nf.config.set_soft_device_placement(prev)


# a missing GPU falls back to the CPU under soft placement (TensorFlow's default, tested below):
# without it, every unknown device is an error
@pytest.mark.parametrize("spec", ["TPU:0", "CPU:9", "GPU:99", "not a device"])
def test_unknown_devices_raise(spec, hard_placement):
    with pytest.raises(ValueError):
        with nf.device(spec):
            pass


@pytest.mark.parametrize("spec", ["TPU:0", "CPU:9", "not a device"])
def test_unknown_devices_raise_under_soft_placement(spec):
    assert nf.config.get_soft_device_placement() is True       # TensorFlow's default
    with pytest.raises(ValueError):
        with nf.device(spec):
            pass


def test_soft_placement_falls_back_to_cpu_with_one_warning_per_name(monkeypatch):
    monkeypatch.setattr(D, "_warned_soft", set())
    n_gpus = len(nf.config.list_physical_devices("GPU"))
    spec = "GPU:%d" % (n_gpus + 3)                  # a GPU this machine does not have
    with pytest.warns(RuntimeWarning, match=r"GPU:%d.*CPU:0 instead" % (n_gpus + 3)):
        with nf.device(spec):
            x = tnp.arange(4.0) * 2
            f = nf.function(lambda a: tnp.sum(a * a))
            y = f(x)
    assert x.device == CPU0 and y.device == CPU0 and float(y) == 56.0
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # the same name warns only once
        with nf.device(spec):
            z = tnp.ones(2) + 1
    assert z.device == CPU0
    with pytest.warns(RuntimeWarning, match="/device:GPU:%d" % (n_gpus + 7)):
        with nf.device("/device:GPU:%d" % (n_gpus + 7)):    # another name warns again
            pass


def test_hard_placement_error_names_the_device(hard_placement):
    spec = "GPU:%d" % (len(nf.config.list_physical_devices("GPU")) + 3)
    with pytest.raises(ValueError, match=spec):
        with nf.device(spec):
            pass
    nf.config.set_soft_device_placement(True)
    assert nf.config.get_soft_device_placement() is True


def test_everything_works_inside_a_device_scope():
    with nf.device("CPU:0"):
        x = tnp.asarray([1.0, 2.0, 3.0])
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(tnp.exp(x))
        g = tape.gradient(y, x)
        f = nf.function(lambda a: a @ a)
        v = nf.vectorized_map(lambda r: r * 2, x)
        z = f(x)
    np.testing.assert_allclose(g.numpy(), np.exp([1.0, 2.0, 3.0]))
    assert float(z) == 14.0 and v.numpy().tolist() == [2.0, 4.0, 6.0]



def test_logical_cpu_devices(two_cpus):
    names = [d.name for d in nf.config.list_logical_devices("CPU")]
    assert names == ["/device:CPU:0", "/device:CPU:1"]
    with nf.device("CPU:1"):
        a = tnp.ones(3)
        b = a * 2
    assert a.device.endswith("CPU:1") and b.device.endswith("CPU:1")
    c = tnp.ones(3)
    assert c.device == CPU0
    mixed = b + c                              # operands from two devices
    np.testing.assert_allclose(mixed.numpy(), [3.0, 3.0, 3.0])
    with nf.device("CPU:1"):
        moved = tnp.copy(c)
    assert moved.device.endswith("CPU:1")
    np.testing.assert_allclose(moved.numpy(), c.numpy())
    assert not np.shares_memory(moved.numpy(), c.numpy())
    assert "CPU:1" in repr(b)


def test_logical_cpu_devices_with_tapes_and_functions(two_cpus):
    with nf.device("CPU:1"):
        x = tnp.asarray([0.5, 1.5])
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(x ** 3)
        g = tape.gradient(y, x)
        out = nf.function(lambda a: tnp.tanh(a))(x)
    assert g.device.endswith("CPU:1") and out.device.endswith("CPU:1")
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)


# ------------------------------------------------------------------ GPU (CuPy)
def _require_gpu():
    if not nf.config.list_physical_devices("GPU"):
        pytest.skip("no GPU (or CuPy) on this machine")


@pytest.mark.gpu
def test_gpu_placement_and_values():
    _require_gpu()
    with nf.device("GPU:0"):
        x = tnp.asarray(np.arange(6.0).reshape(2, 3))
        y = tnp.tanh(x @ x.T) + 1
        s = tnp.sum(y, axis=0)
    assert x.device.endswith("GPU:0") and s.device.endswith("GPU:0")
    want = np.tanh(np.arange(6.0).reshape(2, 3) @ np.arange(6.0).reshape(2, 3).T) + 1
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(s), want.sum(0), rtol=1e-12)
    assert isinstance(s.numpy(), np.ndarray)


@pytest.mark.gpu
def test_gpu_gradients_functions_and_vectorized_map():
    _require_gpu()
    with nf.device("GPU:0"):
        x = tnp.asarray([0.1, 0.2, 0.3])
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(tnp.sin(x) * x)
        g = tape.gradient(y, x)
        f = nf.function(lambda a: tnp.exp(a) * 2)
        z = f(x)
        v = nf.vectorized_map(lambda r: r * r, tnp.ones((4, 2)))
    xs = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(g.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-12)
    np.testing.assert_allclose(z.numpy(), 2 * np.exp(xs), rtol=1e-12)
    assert g.device.endswith("GPU:0") and z.device.endswith("GPU:0")
    assert v.shape == (4, 2)


@pytest.mark.gpu
def test_gpu_copy_between_devices():
    _require_gpu()
    c = tnp.arange(4.0)
    with nf.device("GPU:0"):
        g = tnp.copy(c)
        r = tnp.random.normal(size=(3,))
    assert g.device.endswith("GPU:0") and r.device.endswith("GPU:0")
    with nf.device("CPU:0"):
        back = tnp.copy(g)
    assert back.device == CPU0
    np.testing.assert_array_equal(back.numpy(), c.numpy())
    mixed = g + 1
    assert mixed.device.endswith("GPU:0")
    import cupy
    for a in (g, r, mixed, r * 2):       # the data really is in GPU memory
        assert isinstance(cupy.from_dlpack(a), cupy.ndarray)


@pytest.mark.gpu
def test_gpu_dlpack_and_variables():
    _require_gpu()
    import cupy
    with nf.device("GPU:0"):
        x = tnp.ones(3)
        v = nf.Variable(tnp.zeros(3))
        v.assign_add(x)
    cx = cupy.from_dlpack(x)
    assert isinstance(cx, cupy.ndarray) and float(cx.sum()) == 3.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0, 1.0])


def test_a_thread_leaving_its_scope_keeps_another_threads_scope(two_cpus):
    # the eager fast path is global: one thread turning fast must not switch it on while
    # another thread is still inside a device scope
    import threading
    x = tnp.ones(2)
    entered, left = threading.Event(), threading.Event()
    out = {}

    def scoped():
        with nf.device("CPU:1"):
            entered.set()
            left.wait(10)
            out["device"] = (x * 1).device

    def other():
        entered.wait(10)
        with nf.device("CPU:1"):
            pass
        left.set()

    threads = [threading.Thread(target=scoped), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out["device"].endswith("CPU:1")


def test_compiled_variable_writes_keep_the_variables_device(two_cpus):
    with nf.device("CPU:1"):
        v = nf.Variable(np.zeros(3))
    step = nf.function(lambda: v.assign_add(tnp.ones(3), read_value=False))
    step()
    step()
    assert v.device.endswith("CPU:1")
    np.testing.assert_array_equal(v.numpy(), [2.0, 2.0, 2.0])
