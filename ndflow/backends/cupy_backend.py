"""The GPU backend: CuPy arrays in GPU memory. The only module of ndflow that names CuPy.

CuPy is imported when a GPU is first asked for (`nf.config.list_physical_devices('GPU')`,
`nf.device('GPU:0')`), never by `import ndflow`. Kernels written against NumPy's API reach CuPy
through NumPy's protocols; CuPy refuses implicit conversion to host arrays, so a kernel that
would copy to the host raises instead of copying silently.

Random numbers on the GPU come from CuPy's generators, not NumPy's: each draw takes a 64-bit
seed from the NumPy stream the program uses (so `tnp.random.seed(s)` makes GPU programs
reproducible too) and draws on the device with CuPy's generator for that seed. The numbers
differ from the NumPy stream's on the CPU. A distribution CuPy lacks is drawn on the host and
copied, with a RuntimeWarning once per method.

Fused elementwise regions compile to one `cupy.ElementwiseKernel` each, one ending in a sum to
a `cupy.ReductionKernel` (source written by
`graph/kernels/cuda_tier.py`, cached by its key); buffers come from CuPy's memory pool, and
nothing on that path synchronizes.
"""
import warnings

import numpy as np

from .base import Backend
from ..graph.kernels import cuda_tier


def _signed_zero(value):
    """Whether `value` (a scalar or 0-d array) is a zero, or has a zero part, with its sign bit
    set: the values CuPy's fill-by-memset would write as +0."""
    v = np.asarray(value)
    if v.ndim or v.dtype.kind not in "fc":
        return False
    parts = (v.real, v.imag) if v.dtype.kind == "c" else (v,)
    return any(p == 0 and np.signbit(p) for p in parts)


class CupyBackend(Backend):
    name = "cupy"
    device_type = "GPU"
    host = False
    dlpack_device_types = (2, 3)        # kDLCUDA, kDLCUDAHost

    def __init__(self, cupy):
        self.xp = cupy
        self.array_types = (cupy.ndarray,)
        self._warned = set()
        self._kernels = {}              # cuda_tier key -> ElementwiseKernel (or False)

    @classmethod
    def load(cls):
        """The backend, or None when CuPy cannot be imported or sees no GPU."""
        try:
            import cupy
            if cupy.cuda.runtime.getDeviceCount() < 1:
                return None
        except Exception:
            return None
        return cls(cupy)

    # ---------------------------------------------------------------- devices
    def device_count(self):
        return self.xp.cuda.runtime.getDeviceCount()

    def device_id(self, buf):
        return int(buf.device.id)

    def activate(self, index):
        return self.xp.cuda.Device(index)

    def synchronize(self, index=None):
        if index is None:
            self.xp.cuda.Device().synchronize()
        else:
            self.xp.cuda.Device(index).synchronize()

    def device_name(self, index):
        props = self.xp.cuda.runtime.getDeviceProperties(index)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    # ---------------------------------------------------------------- memory
    def is_device_array(self, buf):
        return isinstance(buf, self.xp.ndarray)

    def from_host(self, a, index=0):
        with self.xp.cuda.Device(index):
            if np.ndim(a) == 0:
                # CuPy uploads a 0-d array by `fill`, which writes zero bytes for any value
                # equal to 0, so -0.0 arrived as +0.0 (seen on an H200): bytes of a 1-element
                # array, then its 0-d view
                return self.xp.asarray(np.reshape(a, (1,))).reshape(())
            return self.xp.asarray(a)

    def make(self, fn, *args, **kw):
        if fn == "full" and _signed_zero(args[1]):
            # CuPy's full fills by `fill` (zero bytes for a value equal to 0, see from_host):
            # the value goes up as bytes and is broadcast by a copy kernel, which keeps its sign
            shape, value = args[0], args[1]
            dtype = args[2] if len(args) > 2 else kw.get("dtype")
            one = self.xp.asarray(np.full(1, value, dtype))
            return self.xp.broadcast_to(one.reshape(()), shape).copy()
        return getattr(self.xp, fn)(*args, **kw)

    def to_host(self, buf):
        if isinstance(buf, (np.ndarray, np.generic)):
            return buf
        return buf.get()

    def copy(self, buf, index):
        with self.xp.cuda.Device(index):
            return self.xp.array(buf, copy=True)      # peer copy when the source is elsewhere

    def adopt(self, obj):
        if isinstance(obj, self.xp.ndarray):
            return obj
        if hasattr(obj, "__cuda_array_interface__"):
            return self.xp.asarray(obj)               # zero-copy view of another CUDA array
        return None

    def from_dlpack(self, obj):
        return self.xp.from_dlpack(obj)

    def memory_info(self, index=0):
        with self.xp.cuda.Device(index):
            free, total = self.xp.cuda.runtime.memGetInfo()
            pool = self.xp.get_default_memory_pool()
            return {"used": pool.used_bytes(), "pool": pool.total_bytes(), "total": total,
                    "free": free}

    # ---------------------------------------------------------------- kernels
    def random_draw(self, rs, method, kw, dtype):
        seed = int(rs.randint(0, 2 ** 63 - 1, dtype=np.int64)) if hasattr(rs, "randint") \
            else int(rs.integers(0, 2 ** 63 - 1))
        gen = self.xp.random.RandomState(seed)
        fn = getattr(gen, method, None)
        if fn is None:
            if method not in self._warned:
                self._warned.add(method)
                warnings.warn(f"tnp.random.{method}: CuPy has no GPU generator for it; drawing "
                              f"on the host (NumPy's stream) and copying to the GPU",
                              RuntimeWarning, stacklevel=6)
            host = {k: self.to_host(v) for k, v in kw.items()}
            out = np.asarray(getattr(rs, method)(**host))
            return self.xp.asarray(out.astype(dtype, copy=False))
        out = self.xp.asarray(fn(**kw))
        return out if out.dtype == dtype else out.astype(dtype)

    def compile_fused(self, prog):
        src = cuda_tier.generate(prog)
        if src is None:
            return None
        k = self._kernels.get(src.key)
        if k is None:
            if src.reduce is not None:
                k = self.xp.ReductionKernel(**cuda_tier.reduction_kernel_args(src))
            else:
                k = self.xp.ElementwiseKernel(src.in_params, src.out_params, src.body,
                                              src.name, preamble=src.preamble)
            self._kernels[src.key] = k
        return cuda_tier.Runner(src, k, self.xp)
