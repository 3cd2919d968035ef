"""CRC32C (Castagnoli), the checksum of TFRecord framing (summaries) and of every tensor in a
checkpoint or saved-model tensor file, in NumPy.

    crc32c(data)          CRC32C of a bytes-like object (bytes, memoryview, a NumPy array's
                          buffer), as iSCSI, TFRecord and TensorFlow's checkpoints compute it
    masked_crc32c(data)   the masked form TFRecord stores

Small inputs run the byte-at-a-time table algorithm (`_crc32c_bytes`, the reference the others
are tested against). Large ones are cut into blocks of `_LANES` lanes of `_LANE` bytes: every
lane runs the table algorithm at once, one NumPy step per 4-byte word ("slicing by 4"), and the
lanes' registers are then joined pairwise in a tree, each join a 32x32 matrix over GF(2) applied
as four table lookups (CRC is linear: crc(A|B) = shift_|B|(crc(A)) ^ crc0(B), shift_n being the
map that advances a register over n zero bytes). Memory stays bounded (one block's transposed
words, a few MB) whatever the size of the data.
"""
import numpy as np

_POLY = 0x82F63B78          # the reversed Castagnoli polynomial (iSCSI, RFC 3720)
_MASK = 0xFFFFFFFF

# From 32 KiB on, the lane algorithm (`_crc32c_lanes`).
_LANES_FROM = 1 << 15
_LANE = 1024                # bytes per lane (a multiple of 4)
_LANES = 4096               # lanes per block (a power of two): 4 MiB blocks

_TABLE = None               # [256] Python ints, built on first use (import ndflow stays fast)
_WORD_TABLES = None         # uint32 [2, 65536]: a register's low and high halves advanced
#                             over 4 bytes (slicing by 4, two lookups per word)
_JOIN = {}                  # nbytes -> uint32 [4, 256]: shift_nbytes as four byte tables


def _make_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


def _table():
    global _TABLE, _WORD_TABLES
    t = _make_table()
    w = np.empty((4, 256), np.uint32)
    w[0] = t
    for k in range(1, 4):       # table k: a byte followed by k zero bytes
        w[k] = w[0][w[k - 1] & 0xFF] ^ (w[k - 1] >> 8)
    x = np.arange(1 << 16)
    # the register's byte i is followed by 3 - i more bytes of the word
    _WORD_TABLES = np.stack([w[3][x & 0xFF] ^ w[2][x >> 8], w[1][x & 0xFF] ^ w[0][x >> 8]])
    _TABLE = t
    return t


def _crc32c_bytes(data, crc=0):
    """The plain byte-at-a-time table algorithm: the reference the lane version is tested
    against, and the fast one for the small records most summaries are."""
    crc ^= _MASK
    t = _TABLE or _table()
    for b in bytes(data):
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ _MASK


# ------------------------------------------------------------------ GF(2) matrices
def _gf2_times(mat, vec):
    """32x32 matrix over GF(2) (a list of 32 column words) times a 32-bit vector."""
    out = 0
    i = 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec >>= 1
        i += 1
    return out


def _gf2_square(mat):
    return [_gf2_times(mat, mat[i]) for i in range(32)]


def _shift_matrix(nbytes):
    """The linear map that advances a raw CRC register over `nbytes` zero bytes (nbytes > 0)."""
    # one zero bit: the register shifts right, xoring in the polynomial when its low bit was 1
    one_bit = [_POLY] + [1 << (i - 1) for i in range(1, 32)]
    m = _gf2_square(_gf2_square(_gf2_square(one_bit)))        # one zero byte
    result = None
    while nbytes:
        if nbytes & 1:
            result = m if result is None else [_gf2_times(m, c) for c in result]
        nbytes >>= 1
        if nbytes:
            m = _gf2_square(m)
    return result


def _join_tables(nbytes):
    """shift_nbytes as four 256-entry tables (one per byte of the register), so that applying
    it to an array of registers is four lookups."""
    t = _JOIN.get(nbytes)
    if t is None:
        cols = np.array(_shift_matrix(nbytes), dtype=np.uint32)
        b = np.arange(256)
        t = np.zeros((4, 256), np.uint32)
        for j in range(4):
            for k in range(8):
                t[j] ^= np.where((b >> k) & 1, cols[8 * j + k], np.uint32(0)).astype(np.uint32)
        _JOIN[nbytes] = t
    return t


def _apply(t, regs):
    return t[0][regs & 0xFF] ^ t[1][(regs >> 8) & 0xFF] ^ t[2][(regs >> 16) & 0xFF] \
        ^ t[3][regs >> 24]


# ------------------------------------------------------------------ many lanes at once
def _lanes_registers(words):
    """Raw registers (each started from 0) of the lanes in `words` (uint32 [n_words, lanes],
    the lanes' little-endian words as columns)."""
    lo, hi = _WORD_TABLES
    regs = np.zeros(words.shape[1], np.uint32)
    for row in words:
        regs ^= row
        regs = lo[regs & 0xFFFF] ^ hi[regs >> 16]
    return regs


def _join_tree(regs, lane):
    """One raw register for consecutive lanes of `lane` bytes each (len(regs) a power of two)."""
    while len(regs) > 1:
        regs = _apply(_join_tables(lane), regs[0::2]) ^ regs[1::2]
        lane *= 2
    return int(regs[0])


def _crc32c_lanes(data, crc=0):
    """CRC32C of large data, `_LANES` x `_LANE`-byte blocks at a time (see the module
    docstring); the tail shorter than a block runs with as many whole lanes as fit, then
    byte by byte. `crc`: the CRC of data before this (zlib's convention)."""
    if _TABLE is None:
        _table()
    buf = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else \
        data.reshape(-1).view(np.uint8)
    n = buf.size
    crc ^= _MASK                # the register of the whole message so far
    pos = 0
    lanes = _LANES
    while lanes >= 2:
        block = lanes * _LANE
        while n - pos >= block:
            words = buf[pos:pos + block].view("<u4").reshape(lanes, _LANE // 4).T.copy()
            regs = _lanes_registers(words)
            crc = _apply(_join_tables(block), np.array([crc], np.uint32))[0] \
                ^ _join_tree(regs, _LANE)
            crc = int(crc)
            pos += block
        lanes //= 2
    t = _TABLE
    for b in buf[pos:].tobytes():
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ _MASK


def crc32c(data, crc=0):
    """CRC32C (Castagnoli) of `data` (any bytes-like object, or a NumPy array: its bytes in
    memory order), as TFRecord files, iSCSI and TensorFlow's checkpoints use it. `crc`: the
    CRC of what precedes `data`, so that `crc32c(b, crc32c(a)) == crc32c(a + b)` (as
    `zlib.crc32`).

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    >>> crc32c(b"6789", crc32c(b"12345")) == crc32c(b"123456789")
    True
    """
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data)
        if data.nbytes >= _LANES_FROM:
            return _crc32c_lanes(data, crc)
        return _crc32c_bytes(data.reshape(-1).view(np.uint8).tobytes(), crc)
    data = memoryview(data).cast("B")
    if data.nbytes >= _LANES_FROM:
        return _crc32c_lanes(data, crc)
    return _crc32c_bytes(data, crc)


def masked_crc32c(data):
    """The masked CRC TFRecord stores, so that a CRC of data holding CRCs stays well mixed."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & _MASK
