"""What a backend is: the interface every device kind implements.

A backend owns one kind of memory (host memory for NumPy; one GPU's memory for CuPy) and says
how to allocate there, how to move buffers to and from the host and between its devices, how to
wait for queued work, which array module runs a primitive's kernel (`xp`), how to draw random
numbers, how to compile a fused elementwise region and how much memory is in use. The rest of
ndflow asks the backend of a device (`Device.backend`) or of a buffer (`device.backend_of`)
and never names an array library itself: every line specific to CuPy is in `cupy_backend.py`.

Kernels are written against NumPy's API (`np.add(x, y)`, `np.linalg.solve(a, b)`); on a device
backend they reach its array module through NumPy's dispatch protocols (`__array_ufunc__`,
`__array_function__`), and the backend's array type refuses implicit conversion to a host
array (`__array__`), so a kernel that would copy to the host fails loudly instead of silently.
"""
import contextlib

import numpy as np


class Backend:
    """Base class; `numpy_backend.NumpyBackend` and `cupy_backend.CupyBackend` fill it in.

    name          short name ('numpy', 'cupy')
    device_type   the TensorFlow device type its devices get ('CPU', 'GPU')
    xp            the array module kernels run on (creation primitives get it as `xp=`)
    host          True when its buffers are host NumPy arrays
    array_types   the buffer types it owns (a buffer of one of them lives on this backend)
    """
    name = "abstract"
    device_type = "CPU"
    xp = np
    host = True
    array_types = ()
    dlpack_device_types = ()       # DLPack device codes whose arrays it imports

    # ---------------------------------------------------------------- devices
    def device_count(self):
        return 1

    def device_id(self, buf):
        """Index of the device that holds `buf` (among this backend's devices)."""
        return 0

    def activate(self, index):
        """Context in which kernels run on device `index` (CUDA's current device)."""
        return contextlib.nullcontext()

    def synchronize(self, index=None):
        """Wait until the work queued on device `index` (None: the current one) is done."""

    def device_name(self, index):
        """A human name for the hardware (benchmark tables print it)."""
        return self.device_type

    # ---------------------------------------------------------------- memory
    def is_device_array(self, buf):
        return type(buf) in self.array_types

    def empty(self, shape, dtype, index=0):
        with self.activate(index):
            return self.xp.empty(shape, dtype)

    def from_host(self, a, index=0):
        """A buffer of this backend holding the host array `a` (a copy unless host)."""
        raise NotImplementedError

    def make(self, fn, *args, **kw):
        """`xp.fn(*args, **kw)`: a creation function of the array module (full, zeros, arange,
        eye) on the current device. A backend whose module differs from NumPy's answer in
        some case overrides it."""
        return getattr(self.xp, fn)(*args, **kw)

    def to_host(self, buf):
        """A NumPy array holding `buf` (a copy unless host): the one explicit way off the device."""
        raise NotImplementedError

    def copy(self, buf, index):
        """`buf` (of this backend) copied onto its device `index` (also when already there)."""
        with self.activate(index):
            return self.xp.array(buf, copy=True)

    def adopt(self, obj):
        """`obj` (an array of this backend's kind from elsewhere, e.g. another CUDA library)
        as a buffer of this backend, zero-copy where possible; None if it is not one."""
        return obj if self.is_device_array(obj) else None

    def from_dlpack(self, obj):
        """A buffer sharing memory with `obj` (any `__dlpack__` producer on this backend)."""
        return self.xp.from_dlpack(obj)

    def memory_info(self, index=0):
        """{'used': bytes held by ndflow's arrays/pool, 'total': device bytes (None: unknown),
        'free': bytes the device still has (None: unknown)}."""
        return {"used": None, "total": None, "free": None}

    # ---------------------------------------------------------------- kernels
    def random_draw(self, rs, method, kw, dtype):
        """A draw of `method` with keyword arguments `kw` (device buffers where arrays), as a
        buffer of `dtype` on this backend. `rs` is the NumPy stream the program asked for."""
        raise NotImplementedError

    def compile_fused(self, prog):
        """A callable running the fused elementwise `Program` on this backend's buffers in one
        kernel, or None when the backend has no compiler for it (then `run_fused` runs it op
        by op on `xp`)."""
        return None

    def run_fused(self, prog, xs, cache):
        """Run fused `prog` on device buffers `xs`: the compiled kernel when `compile_fused` gives
        one, else each op's primitive kernel in turn (on `xp`, through NumPy's protocols).
        `cache` is a dict kept by the caller (one per fused node)."""
        k = cache.get(self)
        if k is None:
            k = cache[self] = self.compile_fused(prog) or False
        if k is not False:
            out = k(*xs)
            if out is not NotImplemented:
                return out
        return interpret(prog, xs)


def interpret(prog, xs):
    """A fused `Program` run op by op with each primitive's own kernel: the fallback where no
    compiled kernel applies. Returns what a fused node returns (one buffer, or a tuple)."""
    vals = list(xs)
    for o in prog.ops:
        vals.append(o.prim.impl(*[vals[a] for a in o.args], **o.params))
    outs = tuple(vals[v] for v in prog.outputs)
    return outs[0] if len(outs) == 1 else outs
