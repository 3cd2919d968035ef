"""Named tensors in one file, in the safetensors layout, written and read by our own code.

    8 bytes   little-endian u64: N, the size of the header
    N bytes   JSON: {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
                     "__metadata__": {str: str}}   (padded with spaces to a multiple of 8)
    the rest  the tensors' bytes (little-endian, C order), back to back, offsets relative to here

Files written here are valid safetensors files (the `safetensors` package reads them). We write
the layout ourselves rather than through the package because its NumPy interface cannot store
bfloat16 or complex128, and a format this small needs no dependency. Reading parses JSON and
copies bytes: it never runs code from the file, and every offset, shape and dtype is checked
against the file's size before use, so a truncated or corrupted file is a clear `ValueError`.

complex128 has no safetensors code: it is stored as float64 with a trailing axis of 2 (real,
imaginary) and its dtype recorded in the metadata key "ndflow.dtypes", which our reader honours.

Writes are atomic (`atomic_write`): a temporary file in the same directory, flushed and fsynced,
then `os.replace`d over the target, so a crash mid-write leaves the previous file intact.
"""
import contextlib
import json
import os
import struct

import numpy as np
import ml_dtypes

_CODES = {
    np.dtype(np.bool_): "BOOL", np.dtype(np.uint8): "U8", np.dtype(np.int8): "I8",
    np.dtype(np.int16): "I16", np.dtype(np.uint16): "U16", np.dtype(np.float16): "F16",
    np.dtype(ml_dtypes.bfloat16): "BF16", np.dtype(np.int32): "I32",
    np.dtype(np.uint32): "U32", np.dtype(np.float32): "F32", np.dtype(np.float64): "F64",
    np.dtype(np.int64): "I64", np.dtype(np.uint64): "U64", np.dtype(np.complex64): "C64",
}
_DTYPES = {c: d for d, c in _CODES.items()}
_C128 = np.dtype(np.complex128)
_DTYPES_KEY = "ndflow.dtypes"
_MAX_HEADER = 1 << 30     # a larger header is a corrupted size field, not a real file


@contextlib.contextmanager
def atomic_write(path, mode="wb"):
    """Open a temporary file beside `path`; on a clean exit flush, fsync and rename it over
    `path` (then fsync the directory, so the rename itself survives a power cut). On an error
    the temporary file is removed and `path` is untouched."""
    import tempfile         # here, not at import time: `import ndflow` stays fast
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    with contextlib.suppress(OSError):      # not every platform can open a directory
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _le(a):
    """`a` as a C-ordered little-endian NumPy array (ml_dtypes and bool have no byte order)."""
    a = np.asarray(a, order="C")
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a


def encode(tensors, metadata=None):
    """(header bytes, [arrays in file order]) for `tensors` {name: array}."""
    arrays, extra = {}, {}
    for name, a in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"tensor names must be strings other than '__metadata__', got "
                             f"{name!r}")
        a = np.asarray(a)
        if a.dtype == _C128:
            extra[name] = "complex128"
            a = _le(a).reshape(-1).view(np.float64).reshape(a.shape + (2,))
        elif a.dtype not in _CODES:
            raise TypeError(f"cannot store tensor {name!r} of dtype {a.dtype}; storable dtypes: "
                            + ", ".join(sorted(d.name for d in _CODES)) + ", complex128")
        arrays[name] = _le(a)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    if _DTYPES_KEY in meta:
        raise ValueError(f"metadata key {_DTYPES_KEY!r} is reserved for ndflow's own use")
    if extra:
        meta[_DTYPES_KEY] = json.dumps(extra, sort_keys=True)
    # largest items first, so every tensor starts aligned to its itemsize (as the package does)
    order = sorted(arrays, key=lambda k: (-arrays[k].dtype.itemsize, k))
    header, off = {}, 0
    for k in order:
        a = arrays[k]
        header[k] = {"dtype": _CODES[a.dtype], "shape": list(a.shape),
                     "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h, [arrays[k] for k in order]


def write(path, tensors, metadata=None, _fail_after=None):
    """Write `tensors` ({name: array}) and `metadata` ({str: str}) to `path`, atomically.
    `_fail_after` (tests only): raise after writing that many tensors, as a crash would."""
    head, arrays = encode(tensors, metadata)
    with atomic_write(path) as f:
        f.write(head)
        for i, a in enumerate(arrays):
            if _fail_after is not None and i >= _fail_after:
                raise OSError(f"simulated crash while writing {path!r}")
            if a.nbytes:
                f.write(memoryview(a.reshape(-1).view(np.uint8)))


def _bad(path, why):
    return ValueError(f"{path!r} is not a readable ndflow tensor file: {why}")


def read_header(path, f, size):
    raw = f.read(8)
    if len(raw) < 8:
        raise _bad(path, f"it has {size} bytes, fewer than the 8-byte header size")
    (n,) = struct.unpack("<Q", raw)
    if n > _MAX_HEADER or 8 + n > size:
        raise _bad(path, f"its header claims {n} bytes but the file has {size} (truncated?)")
    try:
        header = json.loads(f.read(n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(path, f"its header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise _bad(path, "its header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict):
        raise _bad(path, "its '__metadata__' is not an object")
    return header, meta, 8 + n


def read(path, names=None, with_metadata=False):
    """{name: NumPy array} from a file written by `write` (or by the safetensors package).
    `names`: read only these. Every array is freshly allocated, writable and aligned."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header, meta, start = read_header(path, f, size)
        try:
            extra = json.loads(meta.pop(_DTYPES_KEY, "{}"))
        except json.JSONDecodeError:
            raise _bad(path, "its 'ndflow.dtypes' metadata is not valid JSON") from None
        out = {}
        data_size = size - start
        for name, info in header.items():
            if names is not None and name not in names:
                continue
            try:
                dt = _DTYPES[info["dtype"]]
                shape = tuple(int(s) for s in info["shape"])
                b, e = (int(x) for x in info["data_offsets"])
            except (KeyError, TypeError, ValueError):
                raise _bad(path, f"the entry for {name!r} is malformed: {info!r}") from None
            if min(shape, default=0) < 0:
                raise _bad(path, f"tensor {name!r} has a negative size in {shape}")
            nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            if not 0 <= b <= e <= data_size or e - b != nbytes:
                raise _bad(path, f"tensor {name!r} ({info['dtype']}{list(shape)}) lies at bytes "
                                 f"[{b}, {e}) of a {data_size}-byte data section (truncated?)")
            f.seek(start + b)
            # read straight into the array (one pass over the bytes, no zero-filling)
            a = np.empty(shape, dtype=dt.newbyteorder("<") if dt.itemsize > 1 else dt)
            if nbytes and f.readinto(memoryview(a.reshape(-1).view(np.uint8))) != nbytes:
                raise _bad(path, f"tensor {name!r} is cut short (truncated?)")
            a = a.astype(dt, copy=False)
            if dt == np.bool_:
                a = a.view(np.uint8) != 0      # a byte other than 0/1 is still a valid bool
            if extra.get(name) == "complex128":
                if dt != np.float64 or not shape or shape[-1] != 2:
                    raise _bad(path, f"tensor {name!r} is marked complex128 but is "
                                     f"{info['dtype']}{list(shape)}")
                a = np.reshape(a.view(np.complex128), shape[:-1])
            out[name] = a
    if names is not None:
        missing = [n for n in names if n not in out]
        if missing:
            raise KeyError(f"{path!r} holds no tensor named {missing[0]!r}")
    return (out, meta) if with_metadata else out


def read_metadata(path):
    """The file's `__metadata__` ({str: str}) without reading any tensor."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        return read_header(path, f, os.fstat(f.fileno()).st_size)[1]
