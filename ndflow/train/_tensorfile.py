"""Named tensors in one file, in the safetensors layout, written and read by our own code.

    8 bytes   little-endian u64: N, the size of the header
    N bytes   JSON: {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
                     "__metadata__": {str: str}}   (padded with spaces to a multiple of 8)
    the rest  the tensors' bytes (little-endian, C order), back to back, offsets relative to here

Files written here are valid safetensors files (the `safetensors` package reads them). We write
the layout ourselves rather than through the package because its NumPy interface cannot store
bfloat16 or complex128, and a format this small needs no dependency.

Reading trusts nothing in the file. It parses JSON and copies bytes, never runs code from the
file, and checks the header completely before it allocates anything: the header is at most
100 MB and lies within the file; it is UTF-8 JSON without repeated keys, nested at most 3
deep; every entry has exactly "dtype" (a known code), "shape" (at most 64 non-negative
integers, each below 2**63) and "data_offsets" (two integers); the shape's size times the
dtype's itemsize is the entry's byte count; and the entries' byte ranges tile the data section
exactly (sorted, no overlap, no gap, no byte after the last), so the tensors read never add up
to more bytes than the file holds. "__metadata__" maps strings to strings. Any violation is a
`ValueError` naming the file and the field.

Checksums. Each tensor's CRC-32 is recorded in the metadata key "ndflow.crc32" ({name: crc},
as JSON) and checked when the tensor is read: the CRC of its entry (name, dtype, shape) followed
by its bytes as stored, so that a changed byte, or a header edit that still parses, raises
`nf.errors.DataLossError` (a ValueError) naming the tensor, as TensorFlow's checkpoint reader
does. Files without the key (written by an older ndflow or by the safetensors package) are read
without this check. The CRC is zlib's CRC-32 rather than the CRC32C TensorFlow's files use:
this is ndflow's own layout, and zlib's C loop checks ~1.3 GB/s where the NumPy CRC32C that
TensorBoard's records need (core/checksum.py) checks ~60 MB/s, which made a 40 MB checkpoint's
save and restore 6x slower.

complex128 has no safetensors code: it is stored as float64 with a trailing axis of 2 (real,
imaginary) and its dtype recorded in the metadata key "ndflow.dtypes", which our reader honours.

Writes are atomic (`_files.atomic_write`): a crash mid-write leaves the previous file intact.
"""
import json
import os
import struct
import zlib

import numpy as np
import ml_dtypes

from ..core.errors import DataLossError
from ._files import atomic_write, load_json, json_type  # noqa: F401  (atomic_write: re-exported)

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
_CRC_KEY = "ndflow.crc32"
_RESERVED = (_DTYPES_KEY, _CRC_KEY)
_MAX_HEADER = 100_000_000     # as the safetensors package: a larger header is not a real file
_MAX_DIMS = 64                # NumPy's limit
_MAX_DIM = (1 << 63) - 1      # a dimension NumPy can represent
_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}


def _checksum(name, code, shape, complex128, data):
    """The CRC-32 recorded for a tensor: of its entry (name, dtype, shape, as which dtype it is
    read) followed by its bytes, so that an edit of the header that still parses (another
    dtype or shape of the same size, two tensors' names swapped) is caught as well as a change
    of the bytes."""
    entry = json.dumps([name, code, list(shape), "complex128" if complex128 else None],
                       separators=(",", ":")).encode("utf-8")
    return zlib.crc32(np.ascontiguousarray(data).reshape(-1).view(np.uint8), zlib.crc32(entry))


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
        a = _le(a)
        if a.dtype == _C128:
            extra[name] = "complex128"
            a = _le(a).reshape(-1).view(np.float64).reshape(a.shape + (2,))
        elif a.dtype not in _CODES:
            raise TypeError(f"cannot store tensor {name!r} of dtype {a.dtype}; storable dtypes: "
                            + ", ".join(sorted(d.name for d in _CODES)) + ", complex128")
        arrays[name] = _le(a)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    for key in _RESERVED:
        if key in meta:
            raise ValueError(f"metadata key {key!r} is reserved for ndflow's own use")
    if extra:
        meta[_DTYPES_KEY] = json.dumps(extra, sort_keys=True)
    meta[_CRC_KEY] = json.dumps({k: _checksum(k, _CODES[a.dtype], a.shape, k in extra, a)
                                 for k, a in sorted(arrays.items())})
    # largest items first, so every tensor starts aligned to its itemsize (as the package does)
    order = sorted(arrays, key=lambda k: (-arrays[k].dtype.itemsize, k))
    header, off = {}, 0
    for k in order:
        a = arrays[k]
        header[k] = {"dtype": _CODES[a.dtype], "shape": list(a.shape),
                     "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h, [arrays[k] for k in order]


def write(path, tensors, metadata=None, _fail_after=None):
    """Write `tensors` ({name: array}) and `metadata` ({str: str}) to `path`, atomically, with
    a CRC-32 per tensor. `_fail_after` (tests only): raise after writing that many tensors, as
    a crash would."""
    head, arrays = encode(tensors, metadata)
    with atomic_write(path) as f:
        f.write(head)
        for i, a in enumerate(arrays):
            if _fail_after is not None and i >= _fail_after:
                raise OSError(f"simulated crash while writing {path!r}")
            if a.nbytes:
                f.write(memoryview(a.reshape(-1).view(np.uint8)))


# ------------------------------------------------------------------ reading
def _bad(path, why):
    return ValueError(f"{path!r} is not a readable ndflow tensor file: {why}")


def _int(v):
    return type(v) is int          # JSON integers only: not booleans, not floats


def _entry(path, name, info, data_size):
    """(dtype, shape, begin, end) of one header entry, every field checked."""
    where = f"tensor {name!r:.80}"
    if not isinstance(info, dict):
        raise _bad(path, f"the entry of {where} is a JSON {json_type(info)}, not an object")
    if set(info) != _ENTRY_KEYS:
        missing, unknown = sorted(_ENTRY_KEYS - set(info)), sorted(set(info) - _ENTRY_KEYS)
        raise _bad(path, f"the entry of {where} "
                   + (f"lacks {missing}" if missing else f"has unknown fields {unknown!r:.80}"))
    code = info["dtype"]
    if not isinstance(code, str) or code not in _DTYPES:
        raise _bad(path, f"{where} has the unknown 'dtype' {code!r:.40} (known: "
                   + ", ".join(sorted(_DTYPES)) + ")")
    dt = _DTYPES[code]
    shape = info["shape"]
    if not isinstance(shape, list):
        raise _bad(path, f"{where} has a 'shape' that is a JSON {json_type(shape)}, not an "
                         f"array")
    if len(shape) > _MAX_DIMS:
        raise _bad(path, f"{where} has {len(shape)} dimensions in 'shape', more than "
                         f"{_MAX_DIMS}")
    for k, s in enumerate(shape):
        if not _int(s) or not 0 <= s <= _MAX_DIM:
            raise _bad(path, f"{where} has 'shape' entry {k} = {s!r:.40}, not an integer in "
                             f"[0, 2**63)")
    offsets = info["data_offsets"]
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(map(_int, offsets)):
        raise _bad(path, f"{where} has 'data_offsets' {offsets!r:.80}, not two integers")
    b, e = offsets
    if not 0 <= b <= e <= data_size:
        raise _bad(path, f"{where} has 'data_offsets' [{b}, {e}] outside the {data_size}-byte "
                         f"data section (truncated?)")
    # the size in Python integers (no wrap-around), stopping as soon as it is too large for
    # NumPy; NumPy also refuses an empty array whose other dimensions' product is that large
    p = 1
    for s in shape:
        p *= s or 1
        if p * dt.itemsize > _MAX_DIM:
            raise _bad(path, f"{where} has the 'shape' {shape!r:.80}, too large for an array")
    n = 0 if 0 in shape else p
    if n * dt.itemsize != e - b:
        raise _bad(path, f"{where} ({code}{shape}) needs {n * dt.itemsize} bytes but its "
                         f"'data_offsets' [{b}, {e}] span {e - b}")
    return dt, tuple(shape), b, e


def _tile(path, spans, data_size):
    """The byte ranges must cover the data section exactly, each byte once."""
    at, prev = 0, None
    for b, e, name in sorted(spans):
        if b < at:
            raise _bad(path, f"tensor {name!r:.80} at bytes [{b}, {e}) overlaps tensor "
                             f"{prev!r:.80}, which ends at {at}")
        if b > at:
            raise _bad(path, f"bytes [{at}, {b}) of the data section belong to no tensor "
                             f"(before {name!r:.80})")
        at, prev = e, name
    if at != data_size:
        raise _bad(path, f"the data section has {data_size} bytes but its tensors end at "
                         f"{at}")


def _json_meta(path, meta, key, names, check):
    """A metadata value holding a JSON object {tensor name: value}, checked."""
    raw = meta.get(key)
    if raw is None:
        return None
    try:
        table = load_json(raw.encode("utf-8"), f"its metadata {key!r}", 2)
    except ValueError as e:
        raise _bad(path, str(e)) from None
    if not isinstance(table, dict):
        raise _bad(path, f"its metadata {key!r} is a JSON {json_type(table)}, not an object")
    for name, v in table.items():
        if name not in names:
            raise _bad(path, f"its metadata {key!r} names {name!r:.80}, which is not a tensor "
                             f"of the file")
        if not check(v):
            raise _bad(path, f"its metadata {key!r} has the invalid value {v!r:.40} for "
                             f"{name!r:.80}")
    return table


def read_header(path, f, size):
    """(entries {name: (dtype, shape, begin, end)}, metadata {str: str}, data start, CRCs or
    None, complex128 names) of an open tensor file of `size` bytes, completely checked."""
    raw = f.read(8)
    if len(raw) < 8:
        raise _bad(path, f"it has {size} bytes, fewer than the 8-byte header size")
    (n,) = struct.unpack("<Q", raw)
    if n > _MAX_HEADER or 8 + n > size:
        raise _bad(path, f"its header claims {n} bytes but the file has {size} (truncated?)")
    try:
        header = load_json(f.read(n), "its header", 3)
    except ValueError as e:
        raise _bad(path, str(e)) from None
    if not isinstance(header, dict):
        raise _bad(path, f"its header is a JSON {json_type(header)}, not an object")
    meta = header.pop("__metadata__", None)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise _bad(path, f"its '__metadata__' is a JSON {json_type(meta)}, not an object")
    for k, v in meta.items():
        if not isinstance(v, str):
            raise _bad(path, f"its '__metadata__' entry {k!r:.80} is a JSON {json_type(v)}, "
                             f"not a string")
    data_size = size - 8 - n
    entries = {name: _entry(path, name, info, data_size) for name, info in header.items()}
    _tile(path, [(b, e, name) for name, (_, _, b, e) in entries.items()], data_size)
    crcs = _json_meta(path, meta, _CRC_KEY, entries, lambda v: _int(v) and 0 <= v < 1 << 32)
    if crcs is not None and len(crcs) != len(entries):
        missing = sorted(set(entries) - set(crcs))
        raise DataLossError(f"{path!r}: the checksum table lacks tensor {missing[0]!r:.80} "
                            f"(the file was changed after it was written)")
    extra = _json_meta(path, meta, _DTYPES_KEY, entries, lambda v: v == "complex128") or {}
    for name in extra:
        dt, shape = entries[name][:2]
        if dt != np.float64 or not shape or shape[-1] != 2:
            raise _bad(path, f"tensor {name!r:.80} is marked complex128 but is "
                             f"{_CODES[dt]}{list(shape)}")
    meta = {k: v for k, v in meta.items() if k not in _RESERVED}
    return entries, meta, 8 + n, crcs, extra


def _read_tensor(path, f, start, name, entry, crc, complex128):
    dt, shape, b, e = entry
    f.seek(start + b)
    # read straight into the array (one pass over the bytes, no zero-filling); its size was
    # checked against the file, so this allocates no more than the file holds
    a = np.empty(shape, dtype=dt.newbyteorder("<") if dt.itemsize > 1 else dt)
    if e > b and f.readinto(memoryview(a.reshape(-1).view(np.uint8))) != e - b:
        raise _bad(path, f"tensor {name!r:.80} is cut short (truncated?)")
    if crc is not None:
        got = _checksum(name, _CODES[dt], shape, complex128, a)
        if got != crc:
            raise DataLossError(
                f"{path!r}: tensor {name!r:.80} is corrupted: the CRC-32 of its entry and "
                f"bytes is {got:#010x} but {crc:#010x} was recorded when the file was written")
    a = a.astype(dt, copy=False)
    if dt == np.bool_:
        a = a.view(np.uint8) != 0      # a byte other than 0/1 is still a valid bool
    if complex128:
        a = np.reshape(a.view(np.complex128), shape[:-1])
    return a


def read(path, names=None, with_metadata=False):
    """{name: NumPy array} from a file written by `write` (or by the safetensors package).
    `names`: read only these. Every array is freshly allocated, writable and aligned. Raises
    ValueError for a malformed file (see the module docstring), `nf.errors.DataLossError` for a
    tensor whose checksum does not match (files without checksums are read unchecked), and
    KeyError for a name in `names` the file lacks."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        entries, meta, start, crcs, extra = read_header(path, f, size)
        out = {}
        for name, entry in entries.items():
            if names is not None and name not in names:
                continue
            out[name] = _read_tensor(path, f, start, name, entry,
                                     None if crcs is None else crcs[name], name in extra)
    if names is not None:
        missing = [n for n in names if n not in out]
        if missing:
            raise KeyError(f"{path!r} holds no tensor named {missing[0]!r}")
    return (out, meta) if with_metadata else out


def read_metadata(path):
    """The file's `__metadata__` ({str: str}, without ndflow's own keys) without reading any
    tensor."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        return read_header(path, f, os.fstat(f.fileno()).st_size)[1]
