"""The Python Array API standard (2025.12) on top of the NumPy layer: ndflow.numpy is the
namespace `x.__array_namespace__()` returns. NumPy 2's own names already follow the standard;
this file adds what the standard has beyond them: `__array_api_version__`,
`__array_namespace_info__`, `isdtype`, `from_dlpack`, and the `device=` placement that creation
functions and `asarray` accept.

Devices are named as `x.device` names them ('/job:localhost/replica:0/task:0/device:CPU:0');
`device=` also takes the short forms ('CPU:0', 'GPU:0'), NumPy's 'cpu', and a logical device."""
import numpy as np

from ..core import dtypes as _dt
from ..core.ndarray import ndarray
from ..core.state import STATE
from ..backends import device as D
from ._core import asarray, on_device, resolve_device  # noqa: F401  (their home is _core)

__array_api_version__ = "2025.12"
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")

# the standard's dtypes (float16 and bfloat16 are ndflow extras, outside the standard)
_STANDARD_DTYPES = {n: np.dtype(n) for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128")}

_KINDS = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f" or d == _dt.BFLOAT16,
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc" or d == _dt.BFLOAT16,
}


# ------------------------------------------------------------------ dtypes
def _as_dtype(dtype, arg):
    if isinstance(dtype, (str, ndarray)) or dtype is None:
        raise TypeError(f"isdtype: {arg} must be a dtype, got {type(dtype).__name__} {dtype!r}")
    try:
        return _dt.canonical(dtype)
    except TypeError:
        raise TypeError(f"isdtype: {arg} must be a dtype, got {dtype!r}") from None


def isdtype(dtype, kind):
    """Whether `dtype` is of `kind`: a dtype, one of 'bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric', or a tuple
    of these (any matches). bfloat16 counts as real floating."""
    d = _as_dtype(dtype, "dtype")
    if isinstance(kind, tuple):
        if any(isinstance(k, tuple) for k in kind):
            raise TypeError("isdtype: kind must be a dtype, a str or a tuple of them, not a "
                            "nested tuple")
        return any(isdtype(d, k) for k in kind)
    if isinstance(kind, str):
        test = _KINDS.get(kind)
        if test is None:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of "
                             + ", ".join(repr(k) for k in _KINDS))
        return test(d)
    return d == _as_dtype(kind, "kind")


# ------------------------------------------------------------------ finfo / iinfo
def _info_dtype(x):
    # a dtype, a scalar type, or an array (the standard lets finfo/iinfo take arrays)
    if isinstance(x, (ndarray, np.ndarray, np.generic)):
        return x.dtype
    if type(x) in (bool, int, float, complex):     # a Python value: its type's dtype, as NumPy
        return np.dtype(type(x))
    return np.dtype(x)


class finfo:  # noqa: N801  (NumPy's name)
    """Machine limits of a floating dtype, as `numpy.finfo`, with the standard's fields
    (`bits`, `eps`, `max`, `min`, `smallest_normal`, and also `tiny`, `resolution`,
    `epsneg`, `smallest_subnormal`) as Python numbers, so that arithmetic with them keeps the
    array's dtype (Python scalars are weak); `dtype` is the real floating dtype they describe
    (float32 for complex64). bfloat16 is described through ml_dtypes. Every other attribute is
    NumPy's."""

    _FLOATS = ("eps", "max", "min", "smallest_normal", "tiny", "resolution", "epsneg",
               "smallest_subnormal")

    def __init__(self, type):  # noqa: A002  (NumPy's argument name)
        d = _info_dtype(type)
        if d == _dt.BFLOAT16:
            import ml_dtypes
            self._np = ml_dtypes.finfo(d)
        else:
            self._np = np.finfo(d)
        self.dtype = np.dtype(self._np.dtype)
        self.bits = int(self._np.bits)
        for name in self._FLOATS:
            setattr(self, name, float(getattr(self._np, name)))

    def __getattr__(self, name):
        if name == "_np":
            raise AttributeError(name)
        return getattr(self._np, name)

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return repr(self._np)

    def __str__(self):
        return str(self._np)


class iinfo:  # noqa: N801  (NumPy's name)
    """Machine limits of an integer dtype, as `numpy.iinfo` (`bits`, `min`, `max` Python ints,
    `dtype`); also accepts arrays, as the standard asks."""

    def __init__(self, type):  # noqa: A002
        self._np = np.iinfo(_info_dtype(type))
        self.dtype = np.dtype(self._np.dtype)
        self.bits, self.min, self.max = int(self._np.bits), int(self._np.min), int(self._np.max)
        self.kind = self._np.kind

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return repr(self._np)

    def __str__(self):
        return str(self._np)


# ------------------------------------------------------------------ devices
def to_device(x, device, /, *, stream=None):
    """`x` on `device` (the array itself when it is already there), as the standard's
    `array.to_device`."""
    if stream is not None:
        raise ValueError("to_device: streams are not supported (stream must be None)")
    dev = resolve_device(device)
    if x._t is not None:
        return x          # traced and batched values are placed where their trace runs
    return D.to_device(x, dev)


# ------------------------------------------------------------------ interchange
def from_dlpack(x, /, *, device=None, copy=None):
    """An ndflow array sharing memory with `x` (any object with `__dlpack__`: NumPy, CuPy,
    PyTorch, JAX arrays), zero-copy where the device allows it; `copy=True` always copies,
    `copy=False` raises where a copy would be needed."""
    if isinstance(x, ndarray):
        out = asarray(x, copy=copy)
    else:
        if not hasattr(x, "__dlpack__"):
            raise TypeError(f"from_dlpack: {type(x).__name__} does not implement __dlpack__")
        dev_type = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else 1
        b = D.dlpack_backend(dev_type)
        if b is not None:                # device memory: that device's backend imports it
            buf = b.from_dlpack(x)
            out = asarray(buf.copy() if copy else buf)
        else:
            buf = np.from_dlpack(x, copy=copy)
            if buf.dtype.kind in "OUSMmV":
                raise TypeError(f"from_dlpack: ndflow arrays cannot hold dtype {buf.dtype}")
            out = asarray(buf)
    if device is not None:
        dev = resolve_device(device)
        if D.device_of(out) is not dev:
            if copy is False:
                raise ValueError(f"from_dlpack: the array is on {D.device_of(out).name}; moving "
                                 f"it to {dev.name} needs a copy, and copy=False")
            out = D.to_device(out, dev)
    return out


# ------------------------------------------------------------------ inspection
class __array_namespace_info__:  # noqa: N801  (the standard's name)
    """What this namespace supports, as the standard's inspection API: `capabilities()`,
    `default_device()`, `default_dtypes()`, `dtypes()`, `devices()`."""

    def capabilities(self):
        """Boolean indexing and data-dependent output shapes work (eagerly; inside
        `nf.function` such sizes are unknown until run time)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        """Where arrays are created now: the innermost `nf.device` scope, else CPU:0."""
        return D.current_device().name

    def devices(self):
        """The devices arrays can be placed on, named as `x.device` names them (a tuple, as
        the standard's 2025.12 revision asks)."""
        return tuple(d.name for d in D._cpu_devices + D._gpus())

    def default_dtypes(self, *, device=None):
        """float64/complex128 (float32/complex64 with `prefer_float32`), int64 for integers
        and indices."""
        resolve_device(device)
        f32 = STATE.prefer_float32
        return {"real floating": np.dtype("float32" if f32 else "float64"),
                "complex floating": np.dtype("complex64" if f32 else "complex128"),
                "integral": np.dtype("int64"), "indexing": np.dtype("int64")}

    def dtypes(self, *, device=None, kind=None):
        """The standard's dtypes this namespace supports (all of them), by name; `kind` as in
        `isdtype`."""
        resolve_device(device)
        if kind is None:
            return dict(_STANDARD_DTYPES)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        for k in kinds:
            if k not in _KINDS:
                raise ValueError(f"unsupported kind {k!r}; expected one of "
                                 + ", ".join(repr(k) for k in _KINDS))
        return {n: d for n, d in _STANDARD_DTYPES.items() if any(_KINDS[k](d) for k in kinds)}
