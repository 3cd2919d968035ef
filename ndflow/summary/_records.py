"""TensorBoard's file format, written by hand: TFRecord framing (its CRC32C comes from
`core/checksum.py`) and the few protobuf messages an event file holds (`Event`, `Summary`,
`SummaryMetadata`, `TensorProto`, `GraphDef`).

Protobuf is encoded with a dozen lines of varint and length-delimited writers: the messages
are small, fixed and write-only, so neither `protobuf` nor `tensorboard` is needed to write.
Field numbers follow tensorflow/core/framework/{summary,tensor,tensor_shape,graph,node_def,
attr_value,types}.proto and tensorflow/core/util/event.proto.

A TFRecord is `uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)`,
all little-endian; the mask rotates the CRC right by 15 bits and adds 0xa282ead8.
"""
import struct

import numpy as np

# CRC32C lives with the core (checkpoints check every tensor with it too); the names the
# tests and the writers here use are re-exported
from ..core.checksum import (crc32c, masked_crc32c, _crc32c_bytes, _crc32c_lanes,  # noqa: F401
                             _LANES_FROM, _LANE)


def tfrecord(data):
    """One TFRecord: length, masked CRC of the length, the data, masked CRC of the data."""
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


def read_tfrecords(buf):
    """The records of a TFRecord byte string, CRCs checked (for tests and tools; TensorBoard
    has its own reader). A truncated or corrupt record is a ValueError naming its offset."""
    out, pos = [], 0
    while pos < len(buf):
        if pos + 12 > len(buf):
            raise ValueError(f"TFRecord truncated in the header at offset {pos}")
        header = buf[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        (hc,) = struct.unpack("<I", buf[pos + 8:pos + 12])
        if hc != masked_crc32c(header):
            raise ValueError(f"TFRecord length CRC mismatch at offset {pos}")
        end = pos + 12 + n + 4
        if end > len(buf):
            raise ValueError(f"TFRecord truncated in the data at offset {pos}")
        data = buf[pos + 12:pos + 12 + n]
        (dc,) = struct.unpack("<I", buf[end - 4:end])
        if dc != masked_crc32c(data):
            raise ValueError(f"TFRecord data CRC mismatch at offset {pos}")
        out.append(bytes(data))
        pos = end
    return out


# ------------------------------------------------------------------ protobuf writer
def _varint(n):
    if 0 <= n < 0x80:
        return _SMALL[n]
    if n < 0:
        n += 1 << 64            # int64 fields: two's complement, ten bytes
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [bytes((i,)) for i in range(0x80)]


def _key(field, wire):
    k = (field << 3) | wire
    return _SMALL[k] if k < 0x80 else _varint(k)


def f_varint(field, n):
    """An int64/int32/enum/bool field (wire type 0)."""
    return _key(field, 0) + _varint(int(n))


def f_bytes(field, b):
    """A string, bytes or embedded-message field (wire type 2)."""
    if isinstance(b, str):
        b = b.encode("utf-8")
    return _key(field, 2) + _varint(len(b)) + b


def f_double(field, x):
    return _key(field, 1) + struct.pack("<d", x)


def f_float(field, x):
    return _key(field, 5) + struct.pack("<f", x)


def f_packed_varints(field, ns):
    return f_bytes(field, b"".join(_varint(int(n)) for n in ns))


# tensorflow/core/framework/types.proto
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING = 1, 2, 3, 4, 5, 6, 7
_DTYPES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
           "complex64": 8, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17,
           "complex128": 18, "float16": 19, "uint32": 22, "uint64": 23}


_BY_DTYPE = {}


def dtype_enum(dtype):
    """TensorFlow's DataType number for a NumPy/ndflow dtype (0 = DT_INVALID when none)."""
    try:
        return _BY_DTYPE[dtype]
    except (KeyError, TypeError):
        pass
    enum = _DTYPES.get(getattr(dtype, "name", str(dtype)), 0)
    try:
        _BY_DTYPE[dtype] = enum     # dtype.name is slow in NumPy: look each dtype up once
    except TypeError:
        pass
    return enum


def shape_proto(shape):
    """TensorShapeProto: one `dim {size}` per axis, -1 for an unknown (None) size."""
    return b"".join(f_bytes(2, f_varint(1, -1 if d is None else d) if d != 0 else b"")
                    for d in shape)


def tensor_proto(arr):
    """TensorProto of a NumPy array: numbers as little-endian `tensor_content`, strings (an
    object/bytes/str array) as repeated `string_val`."""
    arr = np.asarray(arr)
    if arr.dtype.kind in "OSU":
        vals = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in arr.ravel()]
        return (f_varint(1, DT_STRING) + f_bytes(2, shape_proto(arr.shape))
                + b"".join(f_bytes(8, v) for v in vals))
    enum = dtype_enum(arr.dtype)
    if not enum:
        raise TypeError(f"no TensorFlow dtype for {arr.dtype}")
    content = np.ascontiguousarray(arr, arr.dtype.newbyteorder("<")).tobytes()
    return f_varint(1, enum) + f_bytes(2, shape_proto(arr.shape)) + f_bytes(4, content)


def summary_metadata(plugin_name, content=b"", description=None):
    """SummaryMetadata{plugin_data{plugin_name, content}, summary_description}."""
    plugin = f_bytes(1, plugin_name) + (f_bytes(2, content) if content else b"")
    return f_bytes(1, plugin) + (f_bytes(3, description) if description else b"")


def summary_value(tag, metadata, tensor):
    """Summary{value{tag, metadata, tensor}}, the modern tensor-based summary."""
    value = f_bytes(1, tag) + f_bytes(9, metadata) + f_bytes(8, tensor)
    return f_bytes(1, value)


def event(wall_time, step=0, *, file_version=None, summary=None, graph_def=None):
    """Event{wall_time, step, file_version | summary | graph_def}."""
    out = f_double(1, wall_time)
    if step:
        out += f_varint(2, step)
    if file_version is not None:
        out += f_bytes(3, file_version)
    if graph_def is not None:
        out += f_bytes(4, graph_def)
    if summary is not None:
        out += f_bytes(5, summary)
    return out


# ------------------------------------------------------------------ AttrValue (GraphDef)
def attr_s(s):
    return f_bytes(2, s)


def attr_type(dtype):
    return f_varint(6, dtype_enum(dtype))


def attr_shape(shape):
    return f_bytes(7, shape_proto(shape))


def attr_list_types(dtypes):
    return f_bytes(1, f_packed_varints(6, [dtype_enum(d) for d in dtypes]))


def attr_list_shapes(shapes):
    return f_bytes(1, b"".join(f_bytes(7, shape_proto(s)) for s in shapes))


def attr_tensor(arr):
    return f_bytes(8, tensor_proto(arr))


def node_def(name, op, inputs=(), attrs=None):
    """NodeDef{name, op, input*, attr<string, AttrValue>*}."""
    out = f_bytes(1, name) + f_bytes(2, op) + b"".join(f_bytes(3, i) for i in inputs)
    for k in sorted(attrs or {}):
        out += f_bytes(5, f_bytes(1, k) + f_bytes(2, attrs[k]))
    return out
