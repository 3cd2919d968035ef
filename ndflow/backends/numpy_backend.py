"""The CPU backend: NumPy arrays in host memory (every logical CPU device shares it)."""
import numpy as np

from .base import Backend


class NumpyBackend(Backend):
    name = "numpy"
    device_type = "CPU"
    xp = np
    host = True
    array_types = (np.ndarray, np.generic)
    dlpack_device_types = (1,)          # kDLCPU

    def is_device_array(self, buf):
        return isinstance(buf, (np.ndarray, np.generic))

    def device_name(self, index):
        import platform
        return platform.processor() or platform.machine() or "CPU"

    def empty(self, shape, dtype, index=0):
        return np.empty(shape, dtype)

    def from_host(self, a, index=0):
        return a

    def to_host(self, buf):
        return buf

    def copy(self, buf, index):
        return np.array(buf)          # a logical device owns its own buffer

    def from_dlpack(self, obj):
        return np.from_dlpack(obj)

    def memory_info(self, index=0):
        try:
            import os
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            free = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            total = free = None
        return {"used": None, "total": total, "free": free}

    def random_draw(self, rs, method, kw, dtype):
        out = np.asarray(getattr(rs, method)(**kw))
        return out if out.dtype == dtype else out.astype(dtype)
