"""On a real GPU (CuPy): the backend, the op table on GPU:0 (values, compiled), fused regions
compiled to one CUDA kernel, no synchronization on a compiled call, DLPack with PyTorch and
JAX without copies, seeded random draws from CuPy's generators. Every test is marked `gpu`
and skips cleanly where ndflow sees no GPU (CI); `tools/gpu_check.sh` runs them on a GPU
machine. The same checks run on every machine against a fake device (tests/test_backends.py).
"""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.backends import device as D
from ndflow.graph import fusion

from test_backends import RECORD_PARAMS, run_record_on_device

pytestmark = pytest.mark.gpu
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.fixture(scope="module")
def gpu():
    b = D.gpu_backend()
    if b is None:
        pytest.skip("no GPU (or CuPy) on this machine")
    return b


def test_cupy_backend_interface(gpu):
    import cupy
    assert gpu.name == "cupy" and not gpu.host and gpu.device_count() >= 1
    assert isinstance(gpu.device_name(0), str) and gpu.device_name(0)
    a = np.arange(12.0).reshape(3, 4)
    d = gpu.from_host(a, 0)
    assert isinstance(d, cupy.ndarray) and gpu.is_device_array(d) and gpu.device_id(d) == 0
    np.testing.assert_array_equal(gpu.to_host(d), a)
    c = gpu.copy(d, 0)
    assert c.data.ptr != d.data.ptr
    info = gpu.memory_info(0)
    assert info["total"] > 0 and 0 <= info["free"] <= info["total"] and info["used"] >= 0
    gpu.synchronize()
    gpu.synchronize(0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("rec", RECORD_PARAMS)
def test_optable_on_gpu(rec, gpu):
    run_record_on_device(rec, gpu)


def test_fused_region_is_one_cuda_kernel(gpu):
    import cupy
    from ndflow.graph.kernels import cuda_tier
    f = nf.function(lambda y: 1 / (1 + tnp.exp(-y)) * 2 - tnp.maximum(y, 0.5))
    yn = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    y = tnp.asarray(yn, device="GPU:0")
    out = f(y)
    assert out.device == GPU0 and isinstance(out._v, cupy.ndarray)
    prog = fusion.fused_kernels(f.get_concrete_function(y).graph)[0].prog
    src = cuda_tier.generate(prog)
    assert src is not None and src.key in gpu._kernels
    want = 1 / (1 + np.exp(-yn.astype(np.float64))) * 2 - np.maximum(yn, 0.5)
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=2e-6)


def test_compiled_calls_do_not_synchronize(gpu):
    import cupyx
    f = nf.function(lambda a, b: tnp.tanh(a @ b) * 2 + 1)
    a = tnp.asarray(np.ones((64, 64), np.float32), device="GPU:0")
    out = f(a, a)           # traces (the compiler may read constants back once)
    with cupyx.allow_synchronize(False):
        for _ in range(3):
            out = f(a, a)
    gpu.synchronize()
    np.testing.assert_allclose(out.numpy(), np.tanh(np.full((64, 64), 64.0)) * 2 + 1, rtol=1e-6)


def test_mixing_devices_names_both(gpu):
    g = tnp.ones(3, device="GPU:0")
    with pytest.raises(ValueError, match=r"GPU:0.*CPU:0"):
        g + tnp.ones(3)
    assert (g + 1).device == GPU0


def test_random_on_gpu_is_cupys_stream_seeded_by_numpys(gpu):
    import cupy

    def draw():
        tnp.random.seed(5)
        with nf.device("GPU:0"):
            return tnp.random.normal(size=(1000,)), tnp.random.uniform(size=(10,))
    a1, b1 = draw()
    a2, b2 = draw()
    assert isinstance(a1._v, cupy.ndarray)
    np.testing.assert_array_equal(a1.numpy(), a2.numpy())
    np.testing.assert_array_equal(b1.numpy(), b2.numpy())
    assert abs(float(a1.numpy().mean())) < 0.2 and 0.8 < float(a1.numpy().std()) < 1.2


def test_dlpack_with_torch_without_copies(gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.arange(6, dtype=torch.float32, device="cuda")
    x = tnp.from_dlpack(t)
    assert x.device == GPU0 and x._v.data.ptr == t.data_ptr()
    back = torch.from_dlpack(x)
    assert back.data_ptr() == t.data_ptr()


def test_dlpack_with_jax_without_copies(gpu):
    jax = pytest.importorskip("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("jax without a GPU")
    j = jax.device_put(np.arange(6, dtype=np.float32), gpus[0])
    x = tnp.from_dlpack(j)
    assert x.device == GPU0
    assert x._v.data.ptr == j.unsafe_buffer_pointer()
    np.testing.assert_array_equal(x.numpy(), np.arange(6, dtype=np.float32))


def test_gradients_and_vectorized_map_on_gpu(gpu):
    xs = np.linspace(-1, 1, 7)
    x = tnp.asarray(xs, device="GPU:0")
    g = nf.function(lambda a: nf.grad(lambda b: tnp.sum(tnp.sin(b) * b))(a))(x)
    v = nf.vectorized_map(lambda r: tnp.sum(r * r), tnp.asarray(np.ones((4, 3)), device="GPU:0"))
    assert g.device == GPU0 and v.device == GPU0
    np.testing.assert_allclose(g.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-12)
    np.testing.assert_array_equal(v.numpy(), np.full(4, 3.0))


def test_fused_region_with_a_trailing_sum_is_one_reduction_kernel(gpu):
    from ndflow.graph.kernels import cuda_tier
    f = nf.function(lambda y: tnp.sum(tnp.exp(y) * 2 - y, axis=1))
    yn = np.random.default_rng(1).standard_normal((256, 4096))
    y = tnp.asarray(yn, device="GPU:0")
    out = f(y)
    prog = fusion.fused_kernels(f.get_concrete_function(y).graph)[0].prog
    src = cuda_tier.generate(prog)
    assert src is not None and src.reduce is not None and src.key in gpu._kernels
    assert out.device == GPU0 and out.shape == (256,)
    np.testing.assert_allclose(out.numpy(), np.sum(np.exp(yn) * 2 - yn, axis=1), rtol=1e-12)
