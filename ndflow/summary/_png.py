"""A small PNG encoder (8-bit grayscale, gray+alpha, RGB, RGBA) on zlib: what image summaries
need, without PIL."""
import struct
import zlib

import numpy as np

_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}      # channels -> PNG colour type


def _chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(img, level=6):
    """PNG bytes of a uint8 array [h, w, c], c in 1..4 (gray, gray+alpha, RGB, RGBA). Rows use
    PNG's 'Up' filter (difference from the row above), which lets zlib find the vertical
    repetition of plots and photographs."""
    img = np.asarray(img)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] not in _COLOR_TYPE:
        raise ValueError(f"encode_png: need a uint8 array [h, w, 1..4], got {img.dtype} "
                         f"{img.shape}")
    h, w, c = img.shape
    rows = img.reshape(h, w * c)
    up = rows.copy()
    up[1:] -= rows[:-1]              # uint8 arithmetic wraps modulo 256, as the filter wants
    filt = np.empty((h, 1), np.uint8)
    filt[0] = 0                      # the first row has no row above: filter 'None'
    filt[1:] = 2                     # 'Up'
    raw = np.hstack([filt, up]).tobytes()
    ihdr = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPE[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(raw, level)) + _chunk(b"IEND", b""))
