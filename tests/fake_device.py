"""A fake device backend for tests: proves on a CPU-only machine that work placed on a device
runs on that device's array module, with no silent trip through host memory.

Its buffers are `FakeArray`s: NumPy arrays in a wrapper that refuses implicit conversion to a
host array (`__array__` raises, as CuPy's does) and refuses host arrays as operands of its
functions (as CuPy's ufuncs do). NumPy calls in kernels reach it through NumPy's protocols
(`__array_ufunc__`, `__array_function__`) and run the same-named function of `xp`, a thin module
that unwraps, calls NumPy and wraps the result. Explicit transfers (`from_host`, `to_host`,
`.get()`) are counted, so a test can assert that a computation made none.

    with fake_gpu() as backend:          # registers it as this process's GPU: 'GPU:0'
        with nf.device('GPU:0'): ...
"""
import contextlib
import types

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from ndflow.backends import device as D
from ndflow.backends.base import Backend


class HostConversionError(TypeError):
    pass


class FakeArray(NDArrayOperatorsMixin):
    __slots__ = ("_a",)
    __array_priority__ = 100

    def __init__(self, a):
        self._a = a

    # -- what makes it a device array: no implicit way to the host
    def __array__(self, dtype=None, copy=None):
        raise HostConversionError("implicit conversion of a fake-device array to a NumPy array "
                                  "(a silent host round trip); use .get()")

    def get(self):
        BACKEND_STATS["to_host"] += 1
        return np.array(self._a)

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        return _call(getattr(ufunc, method), inputs, kw)

    def __array_function__(self, func, types, args, kwargs):
        return _call(func, args, kwargs)

    # -- the ndarray surface kernels use (CuPy has the same)
    shape = property(lambda s: s._a.shape)
    dtype = property(lambda s: s._a.dtype)
    ndim = property(lambda s: s._a.ndim)
    size = property(lambda s: s._a.size)
    nbytes = property(lambda s: s._a.nbytes)
    itemsize = property(lambda s: s._a.itemsize)
    strides = property(lambda s: s._a.strides)
    flags = property(lambda s: s._a.flags)
    T = property(lambda s: _wrap(s._a.T))
    real = property(lambda s: _wrap(s._a.real))
    imag = property(lambda s: _wrap(s._a.imag))
    mT = property(lambda s: _wrap(np.swapaxes(s._a, -1, -2)))

    def __len__(self):
        return len(self._a)

    def __getitem__(self, idx):
        return _wrap(self._a[_unwrap(idx)])

    def __setitem__(self, idx, value):
        self._a[_unwrap(idx)] = _unwrap(value, host_ok=True)

    # a scalar read is an explicit, synchronizing transfer on a GPU too (CuPy allows it)
    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __index__(self):
        return self._a.__index__()

    def __bool__(self):
        return bool(self._a)

    def __complex__(self):
        return complex(self._a)

    def item(self, *a):
        return self._a.item(*a)

    def tolist(self):
        return self._a.tolist()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return "FakeArray(%r)" % (self._a,)

    def __getattr__(self, name):      # methods: astype, copy, reshape, sum, ...
        if name.startswith("__") or name in ("base", "ctypes", "data", "tobytes"):
            # no way to the host memory (__array_interface__, buffers) but .get()
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr)
        return lambda *a, **k: _wrap(attr(*_unwrap(a), **_unwrap(k)))


BACKEND_STATS = {"to_host": 0, "from_host": 0}


def _wrap(x):
    if isinstance(x, np.generic):
        return FakeArray(np.asarray(x))     # results stay on the device (CuPy: 0-d arrays)
    if isinstance(x, np.ndarray):
        return FakeArray(x)
    if isinstance(x, tuple):
        return tuple(_wrap(e) for e in x)
    if isinstance(x, list):
        return [_wrap(e) for e in x]
    return x


def _unwrap(x, host_ok=False):
    if type(x) is FakeArray:
        return x._a
    if isinstance(x, np.ndarray) and not host_ok:
        raise HostConversionError(f"a host NumPy array (shape {x.shape}) was passed to a "
                                  f"fake-device function: the kernel mixed host memory in")
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(e, host_ok) for e in x)
    if isinstance(x, dict):
        return {k: _unwrap(v, host_ok) for k, v in x.items()}
    return x


def _call(fn, args, kwargs):
    out = kwargs.get("out")
    res = fn(*_unwrap(args), **_unwrap(kwargs))
    if out is not None:             # the results are the out= buffers themselves
        return out if not isinstance(out, tuple) or len(out) != 1 else out[0]
    return _wrap(res)


class _XP(types.ModuleType):
    """The fake device's array module: NumPy's functions, unwrapping and wrapping."""

    def __getattr__(self, name):
        target = getattr(np, name)
        if isinstance(target, types.ModuleType):        # linalg, fft
            sub = _SubXP("fake." + name)
            sub._np = target
            return sub
        if not callable(target) or isinstance(target, type) and not issubclass(target, np.generic):
            return target
        # called by name (creation kernels: xp.full(shape, value)): host values are an explicit
        # upload here, as in CuPy; only the dispatch protocols refuse them
        return lambda *a, **k: _wrap(target(*_unwrap(a, True), **_unwrap(k, True)))


class _SubXP(_XP):
    def __getattr__(self, name):
        target = getattr(self._np, name)
        return lambda *a, **k: _wrap(target(*_unwrap(a, True), **_unwrap(k, True)))


xp = _XP("fake_xp")


class FakeBackend(Backend):
    name = "fake"
    device_type = "GPU"
    host = False
    array_types = (FakeArray,)
    dlpack_device_types = ()
    xp = xp

    def __init__(self, count=1):
        self.count = count
        self.fused_runs = 0

    def device_count(self):
        return self.count

    def device_name(self, index):
        return "fake device %d" % index

    def from_host(self, a, index=0):
        BACKEND_STATS["from_host"] += 1
        return FakeArray(np.array(a))

    def to_host(self, buf):
        if isinstance(buf, (np.ndarray, np.generic)):
            return buf
        return buf.get()

    def copy(self, buf, index):
        return FakeArray(np.array(buf._a))

    def empty(self, shape, dtype, index=0):
        return FakeArray(np.empty(shape, dtype))

    def random_draw(self, rs, method, kw, dtype):
        # a stream of its own, seeded from the program's NumPy stream (as the CuPy backend)
        seed = int(rs.randint(0, 2 ** 63 - 1, dtype=np.int64)) if hasattr(rs, "randint") \
            else int(rs.integers(0, 2 ** 63 - 1))
        gen = np.random.RandomState(seed % 2 ** 32)
        out = np.asarray(getattr(gen, method)(**_unwrap(kw)))
        return FakeArray(out.astype(dtype, copy=False))

    def run_fused(self, prog, xs, cache):
        self.fused_runs += 1
        return super().run_fused(prog, xs, cache)


@contextlib.contextmanager
def fake_gpu(count=1):
    """Register a FakeBackend as the GPU backend (GPU:0 ...) inside the block."""
    b = FakeBackend(count)
    with D.use_gpu_backend(b, count):
        yield b


def transfers():
    return dict(BACKEND_STATS)
