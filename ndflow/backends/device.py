"""Devices, placement scopes and the eager execution of primitives.

Each device has a backend (`base.Backend`: NumPy for the CPU, `cupy_backend` for GPUs) that
says how to allocate, move buffers and run kernels. Devices are logical: the CPU can be split into several (as TensorFlow's
`set_logical_device_configuration` does) so multi-device code runs without a GPU.
"""
import contextlib
import re
from collections import namedtuple

import numpy as np

from ..core import primitive as _prim
from ..core import ndarray as _nd
from ..core.ndarray import _wrap, wrap_on, ndarray
from ..core.state import STATE
from ..primitives import random as _random
from .numpy_backend import NumpyBackend

LogicalDevice = namedtuple("LogicalDevice", ["name", "device_type"])
PhysicalDevice = namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDeviceConfiguration = namedtuple("LogicalDeviceConfiguration", ["memory_limit"],
                                        defaults=[None])


CPU_BACKEND = NumpyBackend()
_gpu_backend = None          # the GPU backend once looked for (False: none on this machine)
_BY_TYPE = {}                # buffer type -> its (device) backend, for the backends in use
_BY_XP = {}                  # array module -> its (device) backend


def _register(backend):
    for t in backend.array_types:
        _BY_TYPE[t] = backend
    _BY_XP[backend.xp] = backend


def gpu_backend():
    """The GPU backend (CuPy), or None when CuPy or a GPU is not available (imported lazily)."""
    global _gpu_backend
    if _gpu_backend is None:
        from .cupy_backend import CupyBackend
        _gpu_backend = CupyBackend.load() or False
        if _gpu_backend:
            _register(_gpu_backend)
    return _gpu_backend or None


@contextlib.contextmanager
def use_gpu_backend(backend, count=1):
    """Make `backend` this process's GPU backend (devices GPU:0 .. GPU:count-1) inside the
    block: the test suite's fake device (tests/fake_device.py) proves on a CPU-only machine
    that kernels run on a device's array module without host round trips."""
    global _gpu_backend, _gpu_devices, _initialized
    saved = _gpu_backend, _gpu_devices, _initialized, dict(_BY_TYPE), dict(_BY_XP)
    _gpu_backend = backend
    _gpu_devices = [Device(backend.device_type, i, backend, gpu_id=i) for i in range(count)]
    _initialized = True
    _register(backend)
    try:
        yield _gpu_devices
    finally:
        _gpu_backend, _gpu_devices, _initialized, by_type, by_xp = saved
        _BY_TYPE.clear()
        _BY_TYPE.update(by_type)
        _BY_XP.clear()
        _BY_XP.update(by_xp)


def backend_of(buf):
    """The device backend owning buffer `buf`, or None for a host (NumPy) buffer."""
    return _BY_TYPE.get(type(buf))


def device_of_buffer(buf):
    """The Device holding the device buffer `buf`, or None for a host buffer."""
    b = _BY_TYPE.get(type(buf))
    if b is None:
        return None
    return _gpus()[b.device_id(buf)]


def adopt(obj):
    """(device, buffer) for an array object of a device library (a CuPy array, or anything with
    `__cuda_array_interface__`), zero-copy; None for anything else."""
    b = _BY_TYPE.get(type(obj))
    if b is None:
        if not hasattr(obj, "__cuda_array_interface__"):
            return None
        b = gpu_backend()
        if b is None:
            raise RuntimeError(f"{type(obj).__name__} lives in GPU memory, but ndflow found no "
                               f"GPU backend (install the 'gpu' extra: pip install ndflow[gpu])")
    buf = b.adopt(obj)
    if buf is None:
        return None
    return _gpus()[b.device_id(buf)], buf


def dlpack_backend(device_code):
    """The device backend importing DLPack arrays with device code `device_code`, or None for
    host memory; an error when no backend of this machine can import it."""
    if device_code in CPU_BACKEND.dlpack_device_types:
        return None
    for b in list(_BY_XP.values()) + [gpu_backend()]:
        if b is not None and device_code in b.dlpack_device_types:
            return b
    raise RuntimeError(f"from_dlpack: the array lives on DLPack device type {device_code}, "
                       f"and ndflow has no backend for it (a CUDA array needs the 'gpu' extra)")


def _random_backend(xp, arrays):
    """For the random primitive (primitives/random.py's hook): the device backend that must
    draw, from the array module passed to a creation kernel or the draw's array operands."""
    if xp is not None and xp is not np:
        return _BY_XP.get(xp)
    if _BY_TYPE:
        for a in arrays:
            b = _BY_TYPE.get(type(a))
            if b is not None:
                return b
    return None


class Device:
    __slots__ = ("device_type", "index", "backend", "name", "gpu_id")

    def __init__(self, device_type, index, backend, gpu_id=0):
        self.device_type = device_type
        self.index = index
        self.backend = backend
        self.gpu_id = gpu_id
        self.name = "/job:localhost/replica:0/task:0/device:%s:%d" % (device_type, index)

    def __repr__(self):
        return "Device(%r)" % self.name


_cpu_devices = [Device("CPU", 0, CPU_BACKEND)]
_gpu_devices = None
_cpu_config = None
_initialized = False
DEFAULT = _cpu_devices[0]


def _gpus():
    global _gpu_devices, _initialized
    _initialized = True
    if _gpu_devices is None:
        b = gpu_backend()
        n = b.device_count() if b else 0
        _gpu_devices = [Device("GPU", i, b, gpu_id=i) for i in range(n)]
    return _gpu_devices


def list_physical_devices(device_type=None):
    """The machine's devices (`device_type` 'CPU' or 'GPU' to filter), as
    `tf.config.list_physical_devices`: one CPU, and each GPU CuPy sees.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.config.list_physical_devices("CPU")
    [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    """
    devs = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    devs += [PhysicalDevice("/physical_device:GPU:%d" % d.index, "GPU") for d in _gpus()]
    return [d for d in devs if device_type is None or d.device_type == device_type.upper()]


def list_logical_devices(device_type=None):
    """The devices operations can be placed on (`device_type` to filter), as
    `tf.config.list_logical_devices`: the logical CPUs (one unless
    `set_logical_device_configuration` made more) and the GPUs. Their names are what
    `nf.device` takes.

    Examples
    --------
    >>> import ndflow as nf
    >>> nf.config.list_logical_devices("CPU")[0].name
    '/device:CPU:0'
    """
    devs = [LogicalDevice("/device:%s:%d" % (d.device_type, d.index), d.device_type)
            for d in _cpu_devices + _gpus()]
    return [d for d in devs if device_type is None or d.device_type == device_type.upper()]


def set_logical_device_configuration(device, logical_devices):
    """Split a physical device into logical ones (CPU: any number; used to test multi-device
    code on one machine). Like TensorFlow, only before devices are first used."""
    global _cpu_devices
    name = device.name if hasattr(device, "name") else str(device)
    kind, _ = _parse(name)
    if kind != "CPU":
        if not logical_devices or len(logical_devices) == 1:
            return
        raise ValueError("ndflow can split only the CPU into several logical devices")
    n = len(logical_devices)
    if n < 1:
        raise ValueError("logical_devices must not be empty")
    _cpu_devices = [_cpu_devices[0]] + [Device("CPU", i, CPU_BACKEND) for i in range(1, n)]


def get_logical_device_configuration(device):
    """The logical device configurations of `device` (one per logical CPU), as
    `tf.config.get_logical_device_configuration`.
    """
    return [LogicalDeviceConfiguration() for _ in _cpu_devices]


# compiled on first use by `re` (and cached there): compiling it at import costs `import ndflow`
# more than anything else in this module
_SPEC = (r"(?:/?job:[^/]*)?(?:/?replica:\d+)?(?:/?task:\d+)?/?(?:device:)?"
         r"(?P<kind>[A-Za-z]+)(?::(?P<idx>\d+))?$")


def _parse(spec):
    if isinstance(spec, (LogicalDevice, PhysicalDevice)):
        spec = spec.name
    if isinstance(spec, Device):
        return spec.device_type, spec.index
    if not isinstance(spec, str):
        raise TypeError(f"device spec must be a string or a LogicalDevice, got {type(spec).__name__}")
    s = spec.replace("/physical_device:", "/device:")
    m = re.search(_SPEC, s)
    if not m:
        raise ValueError(f"cannot parse device spec {spec!r}; expected e.g. 'CPU:0', "
                         f"'/device:GPU:0' or '/job:localhost/replica:0/task:0/device:CPU:1'")
    return m.group("kind").upper(), int(m.group("idx") or 0)


def resolve(spec):
    kind, idx = _parse(spec)
    pool = _cpu_devices if kind == "CPU" else _gpus() if kind == "GPU" else None
    if pool is None:
        raise ValueError(f"unknown device type {kind!r} in {spec!r}; ndflow has CPU and GPU")
    if idx >= len(pool):
        raise ValueError(f"device {spec!r} does not exist; available: "
                         + ", ".join(d.name for d in list_logical_devices()))
    return pool[idx]


_SOFT_PLACEMENT = True
_warned_soft = set()


def set_soft_device_placement(enabled):
    """Whether `nf.device` may place work elsewhere when the device asked for is missing
    (`tf.config.set_soft_device_placement`). On (TensorFlow's default): a scope naming a GPU
    that this machine does not have places its work on the CPU, with a warning once per device
    name. Off: such a scope raises ValueError. Process-wide, as in TensorFlow."""
    global _SOFT_PLACEMENT
    _SOFT_PLACEMENT = bool(enabled)


def get_soft_device_placement():
    """Whether soft device placement is on (see `set_soft_device_placement`)."""
    return _SOFT_PLACEMENT


def _place(spec):
    """The device a scope for `spec` uses: `resolve(spec)`, or under soft placement the CPU for
    a GPU that does not exist."""
    try:
        return resolve(spec)
    except ValueError:
        if not _SOFT_PLACEMENT or _parse(spec)[0] != "GPU":
            raise
    import warnings
    key = spec.name if isinstance(spec, (LogicalDevice, PhysicalDevice)) else str(spec)
    if key not in _warned_soft:
        _warned_soft.add(key)
        have = len(_gpus())
        warnings.warn(f"nf.device({key!r}): this machine has {have or 'no'} GPU"
                      f"{'' if have == 1 else 's'}{'' if have else ' (or CuPy is not installed)'};"
                      f" running on {DEFAULT.name} instead (soft device placement; "
                      f"nf.config.set_soft_device_placement(False) makes this an error)",
                      RuntimeWarning, stacklevel=4)
    return DEFAULT


@contextlib.contextmanager
def device(spec):
    """Place the operations of this scope (and the arrays they create) on `spec`, as
    `tf.device`.

    Accepts TensorFlow's spellings: 'CPU:0', '/device:GPU:0', '/GPU:0', a LogicalDevice, or None
    (no change). A GPU this machine lacks means the CPU, with a warning, while soft device
    placement is on (the default; `nf.config.set_soft_device_placement`).

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> with nf.device("CPU:0"):
    ...     x = tnp.ones(2)
    >>> x.device
    '/job:localhost/replica:0/task:0/device:CPU:0'
    """
    if spec is None:
        yield
        return
    dev = _place(spec)
    st = STATE
    prev, prev_scope = st.device, st.scope
    # the default device keeps the eager fast path (its arrays carry _dev None)
    st.device = None if dev is DEFAULT else dev
    st.scope = dev
    st.refresh()
    try:
        yield dev
    finally:
        st.device, st.scope = prev, prev_scope
        st.refresh()


def current_device():
    return STATE.device or DEFAULT


def device_of(x):
    d = x._dev
    if d is None:
        return DEFAULT
    if isinstance(d, Device):
        return d
    return STATE.device or DEFAULT   # symbolic values: where the trace places them


def to_device(x, dev):
    """Copy an eager array to `dev` (a no-op when it is already there): the one explicit way
    between devices (`tnp.copy` in a device scope, `to_device`, `nf.device` placement)."""
    src = device_of(x)
    if src is dev:
        return x
    buf = x._v
    if src.backend is not dev.backend:
        buf = dev.backend.from_host(src.backend.to_host(buf), dev.gpu_id)
    else:
        buf = dev.backend.copy(buf, dev.gpu_id)   # the new device owns its own buffer
    return _wrap(buf) if dev is DEFAULT else wrap_on(buf, dev)


def _mixed(prim, args):
    """Inputs on devices of different backends: an error naming both (moving one would be a
    host round trip nobody asked for). A 0-d host value (a Python scalar converted by the
    NumPy layer, `x + 1`) goes along with the device operands, as CuPy takes NumPy scalars."""
    devs = []
    for a in args:
        d = device_of(a)
        if d.backend.host and a.ndim == 0:
            continue
        if all(d.backend is not e.backend for e in devs):
            devs.append(d)
    if len(devs) > 1:
        raise ValueError(f"'{prim.name}': its inputs live on different devices, {devs[0].name} "
                         f"and {devs[1].name}; copy one explicitly (tnp.copy inside "
                         f"nf.device(...), or x.to_device(...)) before combining them")


def allocates(prim, inputs):
    """Whether `prim` is a creation kernel, which allocates its result on the device through
    the `xp=` module it is given: no array inputs, and not a Variable's read or write (those
    take their buffer from the Variable, on whatever device it lives)."""
    return not inputs and prim.variable_access is None


def eager_apply(prim, args, params):
    dev = STATE.device
    first = None
    for a in args:
        if a._dev is not None:
            first = a._dev
            break
    if first is not None and not first.backend.host or dev is not None and not dev.backend.host:
        _mixed(prim, args)
    if dev is None:
        dev = first
    if dev is None or dev is DEFAULT:
        bufs = [a._v if a._dev is None else to_device(a, DEFAULT)._v for a in args]
        out = prim.impl(*bufs, **params)
        return tuple(map(_wrap, out)) if prim.multiple_results else _wrap(out)
    bufs = [a._v if a._dev is dev else to_device(a, dev)._v for a in args]
    b = dev.backend
    if b.host:
        out = prim.impl(*bufs, **params)
    else:
        if allocates(prim, args):
            params = dict(params, xp=b.xp)
        with b.activate(dev.gpu_id):
            try:
                out = prim.impl(*bufs, **params)
            except TypeError as e:
                raise TypeError(f"'{prim.name}' on {dev.name} ({b.name}): {e}") from e
        out = on_device(prim, out, dev, prim.multiple_results)
        if prim.multiple_results:
            return tuple(wrap_on(o, dev) for o in out)
        return wrap_on(out, dev)
    if prim.multiple_results:
        return tuple(wrap_on(o, dev) for o in out)
    return wrap_on(out, dev)


_warned_upload = set()


def on_device(prim, out, dev, many):
    """A kernel's result(s) `out` for device `dev`: as they are when they live there, else
    copied there with a warning (`_upload`)."""
    b = dev.backend
    if many:
        if all(o is None or b.is_device_array(o) for o in out):
            return out
        return tuple(o if o is None or b.is_device_array(o) else _upload(prim, o, dev)
                     for o in out)
    return out if out is None or b.is_device_array(out) else _upload(prim, out, dev)


def _upload(prim, out, dev):
    """A kernel that computed in host memory for device inputs (it has no device kernel): its
    result is copied to the device, with a warning once per primitive, never silently."""
    if prim.name not in _warned_upload:
        _warned_upload.add(prim.name)
        import warnings
        warnings.warn(f"'{prim.name}' has no kernel for {dev.backend.name} on {dev.name}: it "
                      f"computed on the host and its result is copied to the device",
                      RuntimeWarning, stacklevel=5)
    return dev.backend.from_host(out, dev.gpu_id)


_prim._eager_apply = eager_apply
_nd._device_of = device_of
_random.backend_for = _random_backend
