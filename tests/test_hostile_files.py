"""Files are an attack surface: hostile, malformed and corrupted tensor files, checkpoint state
files and saved models. Every one is refused with the documented ValueError naming the file and
the field (a changed tensor: `nf.errors.DataLossError`, a ValueError too), quickly and without
allocating more than the file holds; a loaded graph never writes anywhere unless the caller
allows it. The classes are tested with hand-made examples and with fuzzers (hypothesis) that
generate hostile headers and mutate valid files."""
import json
import math
import os
import struct
import zlib
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import checksum
from ndflow.train import _tensorfile, _files

FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                   HealthCheck.too_slow])


def _file(path, header, data=b"", raw_header=None):
    """Write a tensor file with `header` (a dict, dumped as JSON) or `raw_header` bytes."""
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
    return str(path)


def _refused(path, match=None, what=ValueError):
    t = time.perf_counter()
    with pytest.raises(what, match=match) as e:
        _tensorfile.read(path)
    assert time.perf_counter() - t < 5, "refusing a hostile file must be quick"
    assert repr(str(path)) in str(e.value) or str(path) in str(e.value)
    return e.value


def _entry(shape, begin, end, dtype="F32"):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


# ------------------------------------------------------------------ offsets tile the data
def test_overlapping_offsets_are_refused_without_allocating_them(tmp_path):
    """256 entries all claiming the same 1 MB: refused (the old reader copied 256 MB)."""
    data = bytes(1 << 20)
    header = {"t%d" % i: _entry([1 << 18], 0, 1 << 20) for i in range(256)}
    p = _file(tmp_path / "a.safetensors", header, data)
    tracemalloc.start()
    try:
        _refused(p, "overlaps")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 << 20, f"refusing allocated {peak} bytes"


@pytest.mark.parametrize("spans, data, msg", [
    ([(0, 8), (4, 12)], 12, "overlaps"),                 # overlap
    ([(0, 8), (0, 8)], 8, "overlaps"),                   # the same range twice
    ([(0, 4), (8, 12)], 12, r"bytes \[4, 8\) .* belong to no tensor"),     # a gap
    ([(4, 8)], 8, r"bytes \[0, 4\)"),                    # a gap at the start
    ([(0, 8)], 12, "end at 8"),                          # bytes after the last tensor
    ([(0, 16)], 8, "outside"),                           # beyond the file
    ([(8, 4)], 8, "outside"),                            # end before begin
])
def test_offsets_must_tile_the_data_section(tmp_path, spans, data, msg):
    header = {"t%d" % i: _entry([(e - b) // 4] if e >= b else [1], b, e)
              for i, (b, e) in enumerate(spans)}
    _refused(_file(tmp_path / "t", header, bytes(data)), msg)


def test_empty_tensors_may_share_an_offset(tmp_path):
    header = {"a": _entry([0], 4, 4), "b": _entry([1], 0, 4), "c": _entry([2, 0], 4, 4),
              "d": _entry([1], 4, 8)}
    got = _tensorfile.read(_file(tmp_path / "t", header, bytes(8)))
    assert got["a"].shape == (0,) and got["c"].shape == (2, 0) and got["d"].shape == (1,)


# ------------------------------------------------------------------ every header field
_BAD_ENTRIES = [
    (_entry([2.5], 0, 8), "'shape' entry 0"),
    (_entry([True, 2], 0, 8), "'shape' entry 0"),
    (_entry("2", 0, 8), "'shape' that is a JSON string"),
    (_entry([None], 0, 8), "'shape' entry 0"),
    (_entry([-2], 0, 8), "'shape' entry 0"),
    (_entry([10 ** 400], 0, 8), "'shape' entry 0"),
    (_entry([2 ** 62, 2 ** 62, 0], 0, 0), "too large"),            # empty, but not for NumPy
    (_entry([2 ** 32, 2 ** 32], 0, 8), "too large"),               # wraps int64
    (_entry([2 ** 31, 2 ** 31, 4], 0, 8), "too large"),
    (_entry([1] * 65, 0, 4), "dimensions"),
    (_entry([3], 0, 8), "needs 12 bytes"),                          # size/offsets mismatch
    (_entry([2], 0, 8, "I64"), "needs 16 bytes"),
    (_entry([2], 0, 8, "F8_E4M3"), "unknown 'dtype'"),
    (_entry([2], 0, 8, 5), "unknown 'dtype'"),
    (_entry([2], 0, 8, None), "unknown 'dtype'"),
    ({"dtype": "F32", "shape": [2]}, "lacks"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "x": 1}, "unknown fields"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0.0, 8]}, "not two integers"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [False, 8]}, "not two integers"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0, 8, 8]}, "not two integers"),
    ({"dtype": "F32", "shape": [2], "data_offsets": "0-8"}, "not two integers"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}, "outside"),
    ([1, 2], "not an object"),
    ("x", "not an object"),
    (None, "not an object"),
]


@pytest.mark.parametrize("entry, msg", _BAD_ENTRIES, ids=range(len(_BAD_ENTRIES)))
def test_malformed_entries_name_the_tensor_and_field(tmp_path, entry, msg):
    e = _refused(_file(tmp_path / "t", {"weights": entry}, bytes(8)), msg)
    assert "weights" in str(e)


@pytest.mark.parametrize("meta, msg", [
    ([1, 2], "'__metadata__' is a JSON array"),
    ("x", "'__metadata__' is a JSON string"),
    (7, "'__metadata__' is a JSON number"),
    ({"a": 1}, "entry 'a' is a JSON number"),
    ({"a": {"b": "c"}}, "entry 'a' is a JSON object"),
    ({"a": None}, "entry 'a' is a JSON null"),
    ({"ndflow.crc32": "[1]"}, "not an object"),
    ({"ndflow.crc32": "{\"zz\": 1}"}, "names 'zz'"),
    ({"ndflow.crc32": "{\"w\": -1}"}, "invalid value"),
    ({"ndflow.crc32": "{\"w\": 1.5}"}, "invalid value"),
    ({"ndflow.crc32": "{\"w\": 4294967296}"}, "invalid value"),
    ({"ndflow.crc32": "{"}, "not valid JSON"),
    ({"ndflow.dtypes": "{\"w\": \"complex128\"}"}, "marked complex128"),
    ({"ndflow.dtypes": "{\"w\": \"object\"}"}, "invalid value"),
    ({"ndflow.dtypes": "[[[[1]]]]"}, "nested"),
])
def test_malformed_metadata_is_refused(tmp_path, meta, msg):
    _refused(_file(tmp_path / "t", {"w": _entry([2], 0, 8), "__metadata__": meta}, bytes(8)),
             msg)


@pytest.mark.parametrize("raw, msg", [
    (b"[" * 100000 + b"]" * 100000, "nested"),
    (b'{"w": {"dtype": "F32", "shape": [[2]], "data_offsets": [0, 8]}}', "nested 4 levels"),
    (b'{"a": ' * 50000 + b"1" + b"}" * 50000, "nested"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, '
     b'"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', "appears twice"),
    (b'{"w": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 8]}}', "not valid JSON"),
    (b'{"w": {"dtype": "F32", "shape": [Infinity], "data_offsets": [0, 8]}}', "not valid JSON"),
    (b'{"w": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 8]}}',
     "not valid JSON"),
    (b"", "not valid JSON"),
    (b"[]", "JSON array, not an object"),
    (b'{"w": ', "not valid JSON"),
])
def test_malformed_json_is_refused(tmp_path, raw, msg):
    _refused(_file(tmp_path / "t", None, bytes(8), raw_header=raw), msg)


def test_header_length_field(tmp_path):
    for n, msg in ((2 ** 63, "claims"), (2 ** 64 - 1, "claims"), (10 ** 9, "claims"),
                   (100, "claims")):
        p = tmp_path / "t"
        p.write_bytes(struct.pack("<Q", n) + b"{}")
        _refused(str(p), msg)
    (tmp_path / "short").write_bytes(b"\x01\x00")
    _refused(str(tmp_path / "short"), "fewer than")


# ------------------------------------------------------------------ the fuzzer
_CODES = sorted(_tensorfile._DTYPES)
_junk = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
                     | st.floats(allow_nan=False) | st.text(max_size=6),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4),
                                                                          c, max_size=3),
                     max_leaves=8)
_dim = st.one_of(st.integers(0, 6), st.integers(-3, 2 ** 64), st.just(10 ** 30),
                 st.floats(0, 4), st.booleans(), st.text(max_size=2), st.none())


@st.composite
def _hostile(draw):
    """A header (as JSON-able data) and the size of the data section after it: plausible
    entries whose fields are sometimes wrong, offsets that may overlap, repeat, leave gaps or
    point past the file, metadata of any JSON type."""
    data = draw(st.integers(0, 4096))
    header = {}
    for i in range(draw(st.integers(0, 12))):
        e = {"dtype": draw(st.sampled_from(_CODES) | _junk),
             "shape": draw(st.lists(_dim, max_size=4) | _junk),
             "data_offsets": draw(st.lists(st.integers(-8, data + 64)
                                           | st.sampled_from([0, data]), min_size=2, max_size=2)
                                  | _junk)}
        if draw(st.integers(0, 9)) == 0:
            e = draw(_junk)
        header[draw(st.text(max_size=5)) + str(i)] = e
    if draw(st.booleans()):
        header["__metadata__"] = draw(
            st.dictionaries(st.sampled_from(["format", "ndflow.crc32", "ndflow.dtypes", "x"]),
                            st.text(max_size=8) | _junk.map(json.dumps), max_size=3) | _junk)
    return header, data


_NP_CODES = ["F32", "F64", "F16", "I64", "I32", "I16", "I8", "U8", "U16", "BOOL"]


@st.composite
def _layouts(draw):
    """Valid entries whose offsets tile the data in a random order, then sometimes moved
    (overlaps, repeats, gaps, past the end) and a data section sometimes one size off."""
    k = draw(st.integers(1, 6))
    entries = []
    for i in range(k):
        code = draw(st.sampled_from(_NP_CODES))
        shape = draw(st.lists(st.integers(0, 3), max_size=3))
        entries.append(["t%d" % i, code, shape,
                        math.prod(shape) * _tensorfile._DTYPES[code].itemsize])
    at, spans = 0, {}
    for j in draw(st.permutations(range(k))):
        spans[j] = [at, at + entries[j][3]]
        at += entries[j][3]
    for _ in range(draw(st.integers(0, 3))):
        j, delta = draw(st.integers(0, k - 1)), draw(st.integers(-8, 8))
        for end in draw(st.sampled_from([(0,), (1,), (0, 1)])):
            spans[j][end] += delta
    size = max(0, at + draw(st.sampled_from([0, 0, 0, 1, -1, 4])))
    header = {name: {"dtype": code, "shape": shape, "data_offsets": spans[j]}
              for j, (name, code, shape, _) in enumerate(entries)}
    return header, size


@settings(max_examples=300, **FUZZ)
@given(_layouts(), st.randoms())
def test_fuzzed_layouts_agree_with_the_safetensors_package(tmp_path, layout, rnd):
    """The safetensors package (the format's reference) is the oracle: a layout it refuses we
    refuse, one it reads we read to the same arrays."""
    stn = pytest.importorskip("safetensors.numpy")
    header, size = layout
    data = bytes(rnd.getrandbits(1) for _ in range(size))
    p = _file(tmp_path / "l.safetensors", header, data)
    try:
        theirs = stn.load(open(p, "rb").read())
    except Exception:               # noqa: BLE001  (the package's own error types)
        theirs = None
    ours = _read_bounded(p)
    assert (ours is None) == (theirs is None), (header, size)
    if ours is not None:
        assert set(ours) == set(theirs)
        for k in ours:
            assert ours[k].dtype == theirs[k].dtype and ours[k].shape == theirs[k].shape
            np.testing.assert_array_equal(ours[k], theirs[k])


def _read_bounded(path):
    """Read a file that may be hostile: only ValueError may come out, quickly, and what is
    allocated is bounded by the file's size."""
    size = os.path.getsize(path)
    tracemalloc.start()
    t = time.perf_counter()
    try:
        got = _tensorfile.read(path)
    except ValueError as e:
        assert repr(str(path)) in str(e)
        got = None
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - t < 10
    assert peak < 3 * size + (2 << 20), f"{peak} bytes allocated for a {size}-byte file"
    if got is not None:
        assert sum(a.nbytes for a in got.values()) <= size
    return got


@settings(max_examples=300, **FUZZ)
@given(_hostile())
def test_fuzzed_headers_only_ever_raise_value_error(tmp_path, case):
    header, data = case
    _read_bounded(_file(tmp_path / "f.safetensors", header, bytes(data)))


@settings(max_examples=150, **FUZZ)
@given(edits=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255),
                                st.sampled_from(["flip", "set", "cut", "insert"])),
                      min_size=1, max_size=4))
def test_fuzzed_byte_edits_of_a_valid_file(tmp_path, edits):
    """Random byte edits of a valid file (header and data): ValueError or DataLossError, or
    (an edit in the padding) the same tensors back."""
    p = str(tmp_path / "v.safetensors")
    good = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array([True, False]),
            "z": np.zeros((0, 2)), "c": np.array([1 + 2j]), "i": np.int64(7)}
    _tensorfile.write(p, good, {"format": "x"})
    raw = bytearray(open(p, "rb").read())
    for pos, byte, how in edits:
        pos %= len(raw) + 1
        if how == "flip" and pos < len(raw):
            raw[pos] ^= byte or 1
        elif how == "set" and pos < len(raw):
            raw[pos] = byte
        elif how == "cut":
            del raw[pos:pos + byte]
        else:
            raw[pos:pos] = bytes([byte])
    open(p, "wb").write(bytes(raw))
    got = _read_bounded(p)
    if got is not None:
        assert set(got) == set(good)
        for k, a in good.items():
            assert got[k].dtype == np.asarray(a).dtype
            np.testing.assert_array_equal(got[k], a)


# ------------------------------------------------------------------ checksums
def test_every_flipped_data_byte_is_a_data_loss_error(tmp_path):
    v = nf.Variable(np.arange(40, dtype=np.float32))
    w = nf.Variable(np.array([[True, False]]))
    p = nf.train.Checkpoint(v=v, w=w).write(str(tmp_path / "c")) + ".safetensors"
    raw = open(p, "rb").read()
    start = 8 + struct.unpack("<Q", raw[:8])[0]
    target = nf.train.Checkpoint(v=nf.Variable(np.zeros(40, np.float32)),
                                 w=nf.Variable(np.array([[False, False]])))
    for pos in range(start, len(raw)):
        bad = bytearray(raw)
        bad[pos] ^= 0x10
        open(p, "wb").write(bytes(bad))
        with pytest.raises(nf.errors.DataLossError, match=r"is corrupted: the CRC-32"):
            target.restore(p[:-len(".safetensors")])
    assert issubclass(nf.errors.DataLossError, ValueError)
    assert issubclass(nf.errors.DataLossError, nf.errors.OpError)
    # a flipped byte in the header is a ValueError of some kind, never a silent restore
    for pos in range(8, start):
        bad = bytearray(raw)
        bad[pos] ^= 0x01
        open(p, "wb").write(bytes(bad))
        try:
            target.restore(p[:-len(".safetensors")]).expect_partial()
        except ValueError:
            continue
        np.testing.assert_array_equal(target._objects["v"].numpy(), v.numpy())


def test_files_without_checksums_still_load(tmp_path):
    """A file written before checksums existed (or by the safetensors package)."""
    header = {"save_counter": _entry([], 0, 8, "I64"), "w": _entry([3], 8, 20),
              "__metadata__": {"format": "ndflow.checkpoint", "version": "1"}}
    p = _file(tmp_path / "old.safetensors", header,
              np.int64(4).tobytes() + np.arange(3, dtype=np.float32).tobytes())
    w = nf.Variable(np.zeros(3, np.float32))
    nf.train.Checkpoint(w=w).restore(str(tmp_path / "old")).assert_consumed()
    np.testing.assert_array_equal(w.numpy(), [0, 1, 2])
    assert _tensorfile.read_metadata(p) == {"format": "ndflow.checkpoint", "version": "1"}


def test_checksums_cover_each_entry_and_its_stored_bytes(tmp_path):
    p = str(tmp_path / "t")
    a = np.arange(10000, dtype=">f8")           # stored little-endian
    _tensorfile.write(p, {"a": a})
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    meta = json.loads(raw[8:8 + n])["__metadata__"]
    entry = b'["a","F64",[10000],null]'
    assert json.loads(meta["ndflow.crc32"]) == {
        "a": zlib.crc32(entry + a.astype("<f8").tobytes())}
    # a header edit that still parses: the dtype of another 8-byte type
    bad = raw.replace(b'"F64"', b'"I64"')
    open(p, "wb").write(bad)
    with pytest.raises(nf.errors.DataLossError, match="tensor 'a' is corrupted"):
        _tensorfile.read(p)
    with pytest.raises(ValueError, match="reserved"):
        _tensorfile.write(p, {"a": a}, {"ndflow.crc32": "{}"})


@pytest.mark.parametrize("n", [0, 1, 3, checksum._LANES_FROM - 1, checksum._LANES_FROM,
                               checksum._LANE * 2 + 3, 4 * checksum._LANE * 7 + 1,
                               checksum._LANE * checksum._LANES,
                               checksum._LANE * checksum._LANES * 2 + checksum._LANE * 3 + 5])
def test_crc32c_of_every_length_matches_the_bytewise_reference(n):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    want = checksum._crc32c_bytes(data.tobytes())
    assert checksum.crc32c(data.tobytes()) == want
    assert checksum.crc32c(memoryview(data.tobytes())) == want
    assert checksum.crc32c(data) == want
    if n % 4 == 0:
        assert checksum.crc32c(data.view(np.float32)) == want


def test_crc32c_known_value_and_masking():
    assert checksum.crc32c(b"123456789") == 0xE3069283
    assert checksum.crc32c(bytes(32)) == 0x8A9136AA
    import doctest
    assert doctest.testmod(checksum).failed == 0


# ------------------------------------------------------------------ JSON of other files
def test_json_loader_limits():
    with pytest.raises(ValueError, match="nested 6 levels deep"):
        _files.load_json(b"[[[[[[1]]]]]]", "f", 5)
    assert _files.load_json(b'["[[[[[[", {"a": "]]]]"}]', "f", 2) == ["[[[[[[", {"a": "]]]]"}]
    assert _files.load_json(b'["\\"[[[["]', "f", 1) == ['"[[[[']
    assert _files.json_depth(b"[" * 200000) == 200000
    with pytest.raises(ValueError, match="appears twice"):
        _files.load_json(b'{"a": 1, "a": 2}', "f", 3)


@pytest.mark.parametrize("raw, msg", [
    (b"[" * 100000, "nested"),
    (b"\xff", "not UTF-8"),
    (b"[]", "not an object"),
    (b'{"model_checkpoint_path": 3}', "model_checkpoint_path"),
    (b'{"model_checkpoint_path": "c", "all_model_checkpoint_paths": "c"}', "array of strings"),
    (b'{"model_checkpoint_path": "c", "all_model_checkpoint_paths": [1]}', "array of strings"),
    (b'{"model_checkpoint_path": "c", "all_model_checkpoint_timestamps": ["x"]}', "numbers"),
    (b'{"model_checkpoint_path": "c", "last_preserved_timestamp": "x"}', "not a number"),
    (b'{"model_checkpoint_path": "c", "model_checkpoint_path": "d"}', "appears twice"),
])
def test_hostile_checkpoint_state_files(tmp_path, raw, msg):
    (tmp_path / "checkpoint").write_bytes(raw)
    with pytest.raises(ValueError, match=msg):
        nf.train.latest_checkpoint(str(tmp_path))
    with pytest.raises(ValueError, match=msg):
        nf.train.CheckpointManager(nf.train.Checkpoint(v=nf.Variable(1.0)), str(tmp_path), 2)


# ------------------------------------------------------------------ saved models
def _saved(tmp_path, f=None):
    f = f or nf.function(lambda x: tnp.exp(x) + 1.0, input_signature=[nf.TensorSpec([None])])
    d = tmp_path / "m"
    nf.saved_model.save(f, str(d))
    return d, json.loads((d / "saved_model.json").read_text())


def _write_doc(d, doc):
    (d / "saved_model.json").write_text(json.dumps(doc))


def _nodes(doc):
    return next(iter(doc["functions"].values()))["graph"]["nodes"]


def _print_node(stream):
    return {"prim": "print", "effect": True, "in": [], "out": [],
            "params": {"parts": ["pwned\n"], "stream": stream, "summarize": 3},
            "loc": "evil.py:1"}


def test_a_print_node_writing_to_a_file_is_refused_unless_allowed(tmp_path):
    d, doc = _saved(tmp_path)
    target = tmp_path / "victim.txt"
    _nodes(doc).insert(0, _print_node("file://" + str(target)))
    _write_doc(d, doc)
    with pytest.raises(ValueError, match=r"node 'print' \(created at evil.py:1\) cannot be "
                                         r"loaded: it appends to the file .*victim.txt.*"
                                         r"allow_file_writes=True"):
        nf.saved_model.load(str(d))
    assert not target.exists()
    loaded = nf.saved_model.load(str(d), allow_file_writes=True)
    np.testing.assert_allclose(loaded(np.zeros(2, np.float32)).numpy(), [2.0, 2.0])
    assert target.read_text() == "pwned\n"


def test_prints_to_the_process_streams_load(tmp_path, capsys):
    def f(x):
        nf.print("x is", x)
        return x * 2.0
    d, _ = _saved(tmp_path, nf.function(f, input_signature=[nf.TensorSpec([2], "float64")]))
    loaded = nf.saved_model.load(str(d))
    loaded(np.array([1.0, 2.0]))
    assert capsys.readouterr().err == "x is [1 2]\n"


def test_a_saved_print_to_a_file_needs_the_opt_in_too(tmp_path):
    out = tmp_path / "log.txt"
    f = nf.function(lambda x: (nf.print(x, output_stream="file://" + str(out)), x + 1.0)[1],
                    input_signature=[nf.TensorSpec([1], "float64")])
    d, _ = _saved(tmp_path, f)
    with pytest.raises(ValueError, match="allow_file_writes"):
        nf.saved_model.load(str(d))
    nf.saved_model.load(str(d), allow_file_writes=True)(np.array([4.0]))
    assert out.read_text() == "[4]\n"


@pytest.mark.parametrize("change, msg", [
    (lambda n: n["params"].update(stream="ftp://x"), "output stream"),
    (lambda n: n["params"].update(stream=["stdout"]), "output stream"),
    (lambda n: n["params"].update(parts=["a", "b"]), "'parts'"),
    (lambda n: n["params"].update(parts={"$": "tuple", "v": [7]}), "'parts'"),
    (lambda n: n["params"].update(summarize="3"), "'summarize'"),
])
def test_malformed_print_nodes(tmp_path, change, msg):
    d, doc = _saved(tmp_path)
    node = _print_node("stderr")
    change(node)
    _nodes(doc).insert(0, node)
    _write_doc(d, doc)
    with pytest.raises(ValueError, match=msg):
        nf.saved_model.load(str(d))


def _draw_doc(tmp_path):
    f = nf.function(lambda x: x + tnp.random.normal(size=(2,)),
                    input_signature=[nf.TensorSpec([2], "float64")])
    d, doc = _saved(tmp_path, f)
    node = next(n for n in _nodes(doc) if n["prim"] == "random_draw")
    return d, doc, node


@pytest.mark.parametrize("change, msg", [
    (lambda p: p.update(method="seed"), "not a sampling method"),
    (lambda p: p.update(method="set_state"), "not a sampling method"),
    (lambda p: p.update(method="shuffle"), "not a sampling method"),
    (lambda p: p.update(method="__init__"), "not a sampling method"),
    (lambda p: p.update(method=["normal"]), "not a sampling method"),
    (lambda p: p.update(rs=0), "global random stream"),
    (lambda p: p.update(xp="numpy"), "global random stream"),
    (lambda p: p.update(static={"$": "tuple", "v": [{"$": "tuple", "v": ["out", 1]}]}),
     "static arguments"),
    (lambda p: p.update(dtype={"$": "dtype", "v": "object"}), "dtype"),
])
def test_random_draws_may_only_sample(tmp_path, change, msg):
    d, doc, node = _draw_doc(tmp_path)
    change(node["params"])
    _write_doc(d, doc)
    state = np.random.get_state()[1].copy()
    with pytest.raises(ValueError, match=msg):
        nf.saved_model.load(str(d))
    np.testing.assert_array_equal(np.random.get_state()[1], state)


@pytest.mark.parametrize("prim, params", [
    ("numpy_function", {"func": "os.system", "Tout": {"$": "dtype", "v": "float32"}}),
    ("write_summary", {"writer": "x", "kind": "scalar", "tag": "t"}),
    ("flush_summary", {"writer": "x"}),
    ("all_reduce_sum", {"group": 0}),
])
def test_nodes_needing_live_objects_are_refused(tmp_path, prim, params):
    d, doc = _saved(tmp_path)
    _nodes(doc).insert(0, {"prim": prim, "effect": True, "in": [], "out": [],
                           "params": params, "loc": "x"})
    _write_doc(d, doc)
    with pytest.raises(ValueError, match=f"node '{prim}'.*live Python object"):
        nf.saved_model.load(str(d))


def test_an_effect_without_a_loading_rule_is_refused(tmp_path):
    from ndflow.core.primitive import Primitive, REGISTRY
    p = Primitive("test_effect_without_rule", lambda: None, lambda: None, effect=True)
    try:
        d, doc = _saved(tmp_path)
        _nodes(doc).insert(0, {"prim": p.name, "effect": True, "in": [], "out": [],
                               "params": {}, "loc": "x"})
        _write_doc(d, doc)
        with pytest.raises(ValueError, match="no loading rule"):
            nf.saved_model.load(str(d))
    finally:
        REGISTRY.remove(p)


def test_variable_access_must_name_a_loaded_variable(tmp_path):
    v = nf.Variable(np.ones(2))
    f = nf.function(lambda x: x + v, input_signature=[nf.TensorSpec([2], "float64")])
    d, doc = _saved(tmp_path, f)
    node = next(n for n in _nodes(doc) if n["prim"] == "read_variable")
    for bad, msg in ((3, "not one of the file's Variables"),
                     ({"$": "variable", "v": 5}, "variable 5 of 1"),
                     ({"$": "variable", "v": True}, "variable True")):
        node["params"]["var"] = bad
        _write_doc(d, doc)
        with pytest.raises(ValueError, match=msg):
            nf.saved_model.load(str(d))


@pytest.mark.parametrize("change, msg", [
    (lambda doc: doc.update(tensors="../evil.safetensors"), "malformed tensor file name"),
    (lambda doc: doc.update(tensors="saved_model.json"), "malformed tensor file name"),
    (lambda doc: doc.update(tensors=["x"]), "malformed tensor file name"),
    (lambda doc: doc.update(version=True), "unreadable format version"),
    (lambda doc: doc.update(version="1"), "unreadable format version"),
    (lambda doc: doc.update(functions=[]), "'functions' is a JSON array"),
    (lambda doc: doc.update(variables={}), "'variables' is a JSON object"),
    (lambda doc: doc.update(attributes={"__class__": ["f0"]}), "attribute name '__class__'"),
    (lambda doc: doc.update(attributes={"__call__": ["nope"]}), "unknown functions"),
    (lambda doc: doc.update(attributes={"__call__": "f0"}), "unknown functions"),
    (lambda doc: doc.update(signatures={"s": ["f0"]}), "unknown functions"),
    (lambda doc: doc.update(objects={"$": "module", "v": {"__dict__": {"$": "dict", "v": {}}}}),
     "attribute name '__dict__'"),
    (lambda doc: doc.update(objects={"$": "module", "v": {"a": {"$": "variable", "v": 9}}}),
     "malformed object tree"),
    (lambda doc: doc.update(objects=[1]), "malformed object tree"),
    (lambda doc: _nodes(doc)[0].update(prim=["exp"]), "malformed node"),
    (lambda doc: _nodes(doc)[0].update(params=[]), "lacks its inputs"),
    (lambda doc: _nodes(doc)[0].update({"in": [12345]}), "before it is defined"),
    (lambda doc: _nodes(doc)[0].update(out=[[99, [2.5], "float32"]]), "size 2.5"),
    (lambda doc: _nodes(doc)[0].update(out=[[99, [True], "float32"]]), "size True"),
    (lambda doc: _nodes(doc)[0].update(out=[[99, [-1], "float32"]]), "size -1"),
    (lambda doc: _nodes(doc)[0].update(out=[[99, [None], "object"]]), "dtype"),
    (lambda doc: _nodes(doc)[0].update(out=[[99, [None], {"a": 1}]]), "dtype"),
    (lambda doc: _nodes(doc)[0]["params"].update(x={"$": "scalar", "dtype": "int8",
                                                    "v": 10 ** 30}), "scalar"),
    (lambda doc: _nodes(doc)[0]["params"].update(x={"$": "complex", "v": ["a", 1]}),
     "complex"),
    (lambda doc: _nodes(doc)[0]["params"].update(x={"$": "nope"}), "unknown value tag"),
    (lambda doc: _nodes(doc)[0]["params"].update(x={"$": "tensor", "v": "nope"}), "lacks"),
    (lambda doc: next(iter(doc["functions"].values()))["signature"].update(specs=[]),
     "structure does not match"),
    (lambda doc: next(iter(doc["functions"].values()))["outputs"].update(constants=[None] * 3),
     "structure does not match"),
    (lambda doc: next(iter(doc["functions"].values()))["graph"].update(outputs=[[1]]),
     "not a value of the graph"),
])
def test_malformed_saved_models_are_value_errors_naming_the_field(tmp_path, change, msg):
    d, doc = _saved(tmp_path)
    change(doc)
    _write_doc(d, doc)
    with pytest.raises(ValueError, match=msg) as e:
        nf.saved_model.load(str(d))
    assert "saved_model.json" in str(e.value)


def test_deeply_nested_saved_model_json(tmp_path):
    d, doc = _saved(tmp_path)
    _nodes(doc)[0]["params"]["x"] = "DEEP"
    deep = '{"$": "tuple", "v": [' * 5000 + "1" + "]}" * 5000
    (d / "saved_model.json").write_text(json.dumps(doc).replace('"DEEP"', deep))
    t = time.perf_counter()
    with pytest.raises(ValueError, match="nested .* deeper than"):
        nf.saved_model.load(str(d))
    assert time.perf_counter() - t < 5
    (d / "saved_model.json").write_text("[" * 300000 + "]" * 300000)
    with pytest.raises(ValueError, match="nested"):
        nf.saved_model.load(str(d))


def _mutations(doc, draw):
    """Replace a random part of the JSON document with random JSON."""
    paths = []

    def walk(v, path):
        paths.append(path)
        if isinstance(v, dict):
            for k, e in v.items():
                walk(e, path + (k,))
        elif isinstance(v, list):
            for i, e in enumerate(v):
                walk(e, path + (i,))
    walk(doc, ())
    path = draw(st.sampled_from(paths[1:]))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = draw(_junk | st.sampled_from(["file://x", "seed", "print", -1, 2 ** 63]))


@settings(max_examples=120, **FUZZ)
@given(data=st.data())
def test_fuzzed_saved_models_load_or_raise_value_error(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("fz")
    v = nf.Variable(np.ones(2))

    def f(x):
        y = nf.cond(tnp.sum(x) > 0, lambda: x * v, lambda: x - 1.0)
        nf.print("y", y)
        return {"y": y + tnp.random.uniform(size=2), "n": tnp.sum(x)}
    d, doc = _saved(tmp, nf.function(f, input_signature=[nf.TensorSpec([2], "float64")]))
    for _ in range(data.draw(st.integers(1, 3))):
        _mutations(doc, data.draw)
    _write_doc(d, doc)
    before = sorted(os.listdir(d))
    try:
        nf.saved_model.load(str(d))
    except ValueError as e:
        assert "saved_model.json" in str(e) or "safetensors" in str(e)
    assert sorted(os.listdir(d)) == before
    assert not (d / "x").exists() and not os.path.exists("x")


def test_docstrings_run():
    import doctest
    from ndflow.train import checkpoint, variable, optimizers, _tensorfile as tf_mod
    from ndflow.core import errors
    for m in (checkpoint, variable, optimizers, tf_mod, errors, nf.saved_model):
        assert doctest.testmod(m).failed == 0, m.__name__
    assert math.isfinite(1.0)
