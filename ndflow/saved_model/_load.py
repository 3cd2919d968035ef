"""Reading a saved model: `saved_model.json` and its tensor file, every field checked before
use (a `FormatError`, a ValueError, names the file and the field), every graph node checked
against the loading rules (`_policy`), then the functions and the object tree rebuilt."""
import os
import re

from ..core import tree
from ..graph.function import TensorSpec
from ..train.variable import Variable
from ..train import _tensorfile
from ..train._files import load_json, json_type
from ._graphio import Decoder, FormatError, FORMAT, VERSION, GRAPH_FILE
from ._loaded import _LoadedFunction, _GRAPH_OUT, LoadedFunction, LoadedModel

# nested control flow nests graphs in parameters: about five JSON levels per body; the limit
# keeps the decoder, which recurses once per level, far from Python's recursion limit
MAX_DEPTH = 256
_DATA_NAME = re.compile(r"data-[0-9a-f]{1,64}\.safetensors")


def _need(cond, where, why):
    if not cond:
        raise FormatError(f"{where}: {why}")


def _field(doc, key, kind, where):
    v = doc.get(key)
    _need(isinstance(v, kind), where, f"the field {key!r} is a JSON {json_type(v)}, not "
                                      f"{'an object' if kind is dict else 'an array'}"
          if kind in (dict, list) else f"the field {key!r} is malformed: {v!r:.80}")
    return v


def _read_doc(gpath, export_dir):
    try:
        with open(gpath, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise OSError(f"no saved model at {export_dir!r} ({GRAPH_FILE} not found)") from None
    try:
        doc = load_json(raw, "its JSON", MAX_DEPTH)
    except ValueError as e:
        raise FormatError(f"{gpath!r} is not a readable saved model (truncated or corrupted? "
                          f"{e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(f"{gpath!r} is not an ndflow saved model (format "
                          f"{doc.get('format') if isinstance(doc, dict) else None!r:.80})")
    version = doc.get("version")
    _need(type(version) is int, gpath, f"unreadable format version {version!r:.40}")
    if version > VERSION:
        raise FormatError(f"{gpath!r} was saved in format version {version}, newer than "
                          f"this ndflow reads ({VERSION}); upgrade ndflow")
    data = doc.get("tensors")
    _need(isinstance(data, str) and _DATA_NAME.fullmatch(data), gpath,
          f"malformed tensor file name {data!r:.80}")
    for key, kind in (("variables", list), ("functions", dict), ("attributes", dict),
                      ("signatures", dict)):
        _field(doc, key, kind, gpath)
    return doc


def _read_files(export_dir):
    """(saved_model.json's content, the tensors), read consistently: a save running in another
    process replaces the JSON first and then removes the old tensor file, so a missing tensor
    file means reading the JSON again."""
    gpath = os.path.join(export_dir, GRAPH_FILE)
    for attempt in range(10):
        doc = _read_doc(gpath, export_dir)
        try:
            return doc, _tensorfile.read(os.path.join(export_dir, doc["tensors"]))
        except FileNotFoundError:
            pass
    raise FormatError(f"{gpath!r} names the tensor file {doc['tensors']!r}, which is missing")


def _variables(doc, dec):
    out = []
    for i, spec in enumerate(doc["variables"]):
        where = f"variables[{i}]"
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or \
                not isinstance(spec.get("trainable"), bool):
            dec.fail(f"{where} is malformed: {spec!r:.100}")
        shape = dec.shape(spec.get("shape"), where)
        dtype = dec.dtype(spec.get("dtype"), where)
        value = dec.tensor("variables/%d" % i)
        if value.shape != shape or value.dtype != dtype:
            dec.fail(f"{where} ({spec['name']!r:.80}) is declared {dtype.name}{list(shape)} but "
                     f"the tensor file holds {value.dtype}{list(value.shape)}")
        out.append(Variable(value, trainable=spec["trainable"], name=spec["name"],
                            dtype=value.dtype))
    return out


def _decode_def(d, dec):
    """A tree definition (core.tree) from JSON."""
    tag = d.get("$") if isinstance(d, dict) else None
    if tag == "leaf":
        return tree.LEAF
    v = d.get("v") if tag else None
    if tag in ("dict", "list", "tuple") and isinstance(v, list):
        kids = tuple(_decode_def(c, dec) for c in v)
        if tag != "dict":
            return (list if tag == "list" else tuple, kids)
        keys = d.get("keys")
        if isinstance(keys, list) and len(keys) == len(kids):
            keys = tuple(dec.value(k) for k in keys)
            try:
                hash(keys)
            except TypeError:
                dec.fail(f"unhashable keys in structure {d!r:.80}")
            return (dict, keys, kids)
    dec.fail(f"malformed structure {d!r:.80}")


def _leaves(d):
    if d is tree.LEAF:
        return 1
    return sum(_leaves(c) for c in d[-1])


def _function(fid, f, dec):
    where = f"function {fid!r:.40}"
    if not isinstance(f, dict) or not isinstance(f.get("name"), str) or \
            not isinstance(f.get("signature"), dict) or not isinstance(f.get("outputs"), dict):
        dec.fail(f"{where} is malformed")
    graph = dec.graph(f.get("graph"))
    sig, outs = f["signature"], f["outputs"]
    specs = []
    for s in sig.get("specs") if isinstance(sig.get("specs"), list) else dec.fail(
            f"{where}: malformed signature"):
        if not isinstance(s, list) or len(s) != 3 or not isinstance(s[2], (str, type(None))):
            dec.fail(f"{where}: malformed input spec {s!r:.80}")
        specs.append(TensorSpec(dec.shape(s[0], where), dec.dtype(s[1], where), s[2]))
    in_def = _decode_def(sig.get("structure"), dec)
    out_def = _decode_def(outs.get("structure"), dec)
    consts = outs.get("constants")
    if not isinstance(consts, list):
        dec.fail(f"{where}: malformed outputs")
    consts = [_GRAPH_OUT if c is None else dec.value(c) for c in consts]
    if _leaves(in_def) != len(specs) or _leaves(out_def) != len(consts) or \
            sum(c is _GRAPH_OUT for c in consts) != len(graph.outputs):
        dec.fail(f"{where}: its input or output structure does not match its graph")
    jit = f.get("jit_compile", False)     # absent in files written before 0.4.1
    if not isinstance(jit, bool):
        dec.fail(f"{where}: jit_compile must be true or false, got {jit!r:.40}")
    return _LoadedFunction(f["name"], graph, specs, in_def, out_def, consts,
                           jit_compile=jit or None)


def _functions_for(name, fids, made, dec):
    if not isinstance(fids, list) or not fids or not all(
            isinstance(i, str) and i in made for i in fids):
        dec.fail(f"the attribute {name!r:.80} names unknown functions {fids!r:.80}")
    return LoadedFunction(name, [made[i] for i in fids])


def _attribute(k, dec, functions=False):
    # a file names plain attributes; Python's own (dunder) names stay Python's, except the
    # call method a loaded object exposes
    if not isinstance(k, str) or (k.startswith("__") and not (functions and k == "__call__")) \
            or k == "signatures":
        dec.fail(f"the attribute name {k!r:.80} cannot be loaded")
    return k


def _rebuild(t, variables, dec, made):
    tag = t.get("$") if isinstance(t, dict) else None
    v = t.get("v") if tag else None
    if tag == "variable" and type(v) is int and 0 <= v < len(variables):
        return variables[v]
    if tag == "module" and isinstance(v, dict) and isinstance(t.get("functions", {}), dict):
        m = LoadedModel()
        for k, e in v.items():
            setattr(m, _attribute(k, dec), _rebuild(e, variables, dec, made))
        for k, fids in t.get("functions", {}).items():
            m.__dict__[_attribute(k, dec, True)] = _functions_for(k, fids, made, dec)
        m.signatures = {}
        return m
    if tag in ("list", "tuple") and isinstance(v, list):
        items = [None if e is None else _rebuild(e, variables, dec, made) for e in v]
        return items if tag == "list" else tuple(items)
    if tag == "dict" and isinstance(v, dict):
        return {k: _rebuild(e, variables, dec, made) for k, e in v.items()}
    dec.fail(f"malformed object tree entry {t!r:.80}")


def load(export_dir, allow_file_writes=False):
    """`nf.saved_model.load` (its docstring says what is checked)."""
    export_dir = os.fspath(export_dir)
    gpath = os.path.join(export_dir, GRAPH_FILE)
    doc, tensors = _read_files(export_dir)
    dec = Decoder(gpath, tensors, [], allow_file_writes)
    try:
        variables = dec.variables = _variables(doc, dec)
        made = {}
        for fid, f in doc["functions"].items():
            made[fid] = _function(fid, f, dec)
        model = LoadedModel()
        model._saved_variables = variables
        objects = doc.get("objects")
        if objects is not None:
            if not isinstance(objects, dict) or objects.get("$") != "module" or \
                    not isinstance(objects.get("v"), dict):
                dec.fail("malformed object tree")
            for k, v in objects["v"].items():
                setattr(model, _attribute(k, dec), _rebuild(v, variables, dec, made))
        for k, fids in doc["attributes"].items():
            model.__dict__[_attribute(k, dec, True)] = _functions_for(k, fids, made, dec)
        sigs = {}
        for k, i in doc["signatures"].items():
            sigs[k] = _functions_for(k, [i], made, dec)
        model.signatures = sigs
    except FormatError:
        raise
    except (KeyError, TypeError, IndexError, ValueError, AttributeError, OverflowError,
            RecursionError) as e:
        # what the explicit checks above did not foresee is still a malformed file
        raise FormatError(f"{gpath!r} is not a readable saved model: malformed "
                          f"({type(e).__name__}: {e})") from None
    return model

