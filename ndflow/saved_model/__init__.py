"""Saved functions, as `tf.saved_model`: compiled graphs and their Variables as data, loadable
in a process that has ndflow but not the Python source that defined them.

    nf.saved_model.save(model, "/tmp/model")                 # model.__call__ = nf.function(...)
    loaded = nf.saved_model.load("/tmp/model")
    loaded(x); loaded.signatures["serving_default"](x); loaded.variables

What is saved. The concrete functions of `obj`: each `nf.function` attribute of `obj` (its class's
methods included) that has an `input_signature`, or else the graphs it has already traced for
positional array arguments; `ConcreteFunction` attributes; and `signatures` (one function, or a
dict {name: function}; a single one is named "serving_default"). `obj` may itself be an
`nf.function` (saved as `__call__`), or a loaded model (saved again). The functions of the
Modules below `obj` are saved too and come back on the loaded sub-objects (one without a graph
to save, untraced and without a signature, is left out, with a warning at the top level).
The Variables the graphs read or write are saved with them; those reachable from `obj`
through Modules, lists and dicts come back at the same attributes on the loaded object, and
every one is in `loaded.variables`.

The graph saved is the optimized one (constant folding, common subexpressions, dead code,
algebraic simplification, layout choices) before elementwise fusion and buffer planning: those
make kernels and memory plans for one machine, and are redone when the loaded function is
compiled. Python values an argument took while tracing are part of the graph, as in TensorFlow.

The loaded functions. Each is an `nf.function` with the saved input signature (so `None` sizes
stay unknown and other shapes are rejected) whose Python body binds the saved graph's primitives
one by one. So it compiles when called, and every transformation sees ordinary primitives: it
can be differentiated (`GradientTape`, `nf.grad`, with respect to its inputs and its Variables),
called inside `nf.function` and `vectorized_map`. Several concrete functions for one attribute
are tried in order; the first whose signature accepts the arguments runs.

Format (a directory, version 1):

    saved_model.json       {"format": "ndflow.saved_model", "version": 1, "tensors": <file>,
                            "variables": [{"name", "shape", "dtype", "trainable"}],
                            "objects": the Module/list/dict tree leading to Variables,
                            "functions": {id: {"graph": ..., "signature": ..., "outputs": ...}},
                            "attributes": {name: [function ids]}, "signatures": {name: id}}
    data-<token>.safetensors   Variables ("variables/<i>"), constants and array parameters

The graph encoding is described in `_graphio`. Loading parses JSON and reads tensors: it never
runs code from the files. A newer format version, a damaged file or a primitive this ndflow
does not have is a `ValueError` naming the path and the reason. Saving writes the tensor file
under a fresh name, then replaces `saved_model.json` atomically (the commit point), then removes
older tensor files: a crash leaves the previous model loadable.
"""
import json
import os
import warnings

import numpy as np

from ..core import tree
from ..core.ndarray import ndarray
from ..graph.function import Function, ConcreteFunction, TensorSpec, function
from ..graph import passes as _passes
from ..graph.trace import innermost_graph_trace
from ..train.variable import Variable, read_var_p, assign_var_p
from ..train.module import Module
from ..train import _tensorfile
from ._graphio import Encoder, Decoder, FormatError, _shape

__all__ = ["save", "load", "FORMAT", "VERSION"]

FORMAT = "ndflow.saved_model"
VERSION = 1
GRAPH_FILE = "saved_model.json"


# ------------------------------------------------------------------ saving
def _saved_passes():
    return [p for p in _passes.PASSES
            if p not in (_passes.elementwise_fusion, _passes.reuse_buffers)]


def _encode_def(d, enc):
    """A tree definition (core.tree) as JSON."""
    if d is tree.LEAF:
        return {"$": "leaf"}
    t = d[0]
    if t is dict:
        return {"$": "dict", "keys": [enc.value(k, "an output key") for k in d[1]],
                "v": [_encode_def(c, enc) for c in d[2]]}
    return {"$": "list" if t is list else "tuple", "v": [_encode_def(c, enc) for c in d[1]]}


def _concretes(name, f):
    """[(ConcreteFunction, input structure or None)] to save for attribute `name`."""
    if isinstance(f, ConcreteFunction):
        return [(f, None)]
    if isinstance(f, LoadedFunction):       # re-saving a loaded model
        return [(c.function.get_concrete_function(), c.function._sig) for c in f._concretes]
    if f._sig is not None:
        return [(f.get_concrete_function(), f._sig)]
    out, seen = [], set()
    for key, cf in f._cache.items():
        n = len(cf.traced_graph.inputs)
        simple = repr(tree.flatten_with_def((tuple(range(n)), {}))[1])
        if key[0] == simple and all(p[0] in ("T", "N") for p in key[1]) and id(cf) not in seen:
            seen.add(id(cf))
            out.append((cf, None))
    if not out:
        raise ValueError(f"nf.saved_model.save: the function {name!r} has no input_signature and "
                         f"has not been traced with positional array arguments, so there is no "
                         f"graph to save; give it an input_signature")
    return out


def _functions_of(obj):
    found = {}
    if isinstance(obj, (Function, ConcreteFunction, LoadedFunction)):
        found["__call__"] = obj
        return found
    for k in sorted(dir(type(obj))):
        if isinstance(getattr(type(obj), k, None), Function):
            found[k] = getattr(obj, k)
    for k, v in sorted(vars(obj).items()) if hasattr(obj, "__dict__") else ():
        if isinstance(v, (Function, ConcreteFunction, LoadedFunction)):
            found[k] = v
    return found


def _object_tree(obj, enc, seen, add, root=True):
    """The Variables reachable from `obj`, and the functions of the Modules below it, as a JSON
    tree (None where there are none). `add(concrete, signature)` saves a concrete function and
    returns its id; a nested Module's function with no graph to save is left out."""
    if isinstance(obj, Variable):
        return {"$": "variable", "v": enc.variable(obj)}
    if id(obj) in seen:
        return None
    if isinstance(obj, Module):
        seen.add(id(obj))
        attrs, fns = {}, {}
        for k, v in sorted(vars(obj).items()):
            t = _object_tree(v, enc, seen, add, False)
            if t is not None:
                attrs[k] = t
        if not root:
            for k, f in _functions_of(obj).items():
                try:
                    fns[k] = [add(cf, sig) for cf, sig in _concretes(k, f)]
                except ValueError:
                    pass
        if not attrs and not fns:
            return None
        out = {"$": "module", "v": attrs}
        if fns:
            out["functions"] = fns
        return out
    if isinstance(obj, (list, tuple)):
        items = [_object_tree(e, enc, seen, add, False) for e in obj]
        if all(i is None for i in items):
            return None
        return {"$": "list" if isinstance(obj, list) else "tuple", "v": items}
    if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        items = {k: _object_tree(v, enc, seen, add, False) for k, v in obj.items()}
        items = {k: v for k, v in items.items() if v is not None}
        return {"$": "dict", "v": items} if items else None
    return None


def save(obj, export_dir, signatures=None, options=None):
    """Save the concrete functions of `obj` (and `signatures`) with their Variables to the
    directory `export_dir`, as `tf.saved_model.save` (see the module docstring for what is
    saved and the format). Raises TypeError naming the primitive, parameter and line when a
    graph holds something that is not data (a `numpy_function`'s Python function, a draw from
    a user-held random stream)."""
    export_dir = os.fspath(export_dir)
    enc = Encoder()
    attrs = {}
    for k, f in _functions_of(obj).items():
        try:
            attrs[k] = _concretes(k, f)
        except ValueError as e:
            if isinstance(obj, Function):
                raise
            warnings.warn(f"{e}; it is not saved", stacklevel=2)
    if signatures is None and isinstance(obj, LoadedModel) and obj.signatures:
        signatures = obj.signatures
    if signatures is not None:
        if isinstance(signatures, (Function, ConcreteFunction, LoadedFunction)):
            signatures = {"serving_default": signatures}
        if not isinstance(signatures, dict):
            raise TypeError(f"signatures must be an nf.function, a concrete function or a dict "
                            f"of them, got {type(signatures).__name__}")
        sigs = {}
        for name, f in signatures.items():
            if not isinstance(f, (Function, ConcreteFunction, LoadedFunction)):
                raise TypeError(f"signature {name!r} is a {type(f).__name__}, not an "
                                f"nf.function or a concrete function")
            sigs[name] = _concretes(name, f)[0]
    else:
        sigs = {}
    functions, ids = {}, {}

    def add(cf, sig):
        if id(cf) in ids:
            return ids[id(cf)]
        fid = "f%d" % len(functions)
        ids[id(cf)] = fid
        g = _passes.optimize(cf.traced_graph, _saved_passes())
        if sig is not None:
            specs, sdef = tree.flatten_with_def(tuple(sig))
        else:
            specs = [TensorSpec(v.shape, v.dtype) for v in cf.traced_graph.inputs]
            sdef = tree.flatten_with_def(tuple(specs))[1]
        outs = []
        for kind, c in zip(cf.out_kinds, cf.out_consts):
            outs.append(None if kind == "v" else enc.value(c, f"an output of {cf.name!r}"))
        functions[fid] = {
            "name": cf.name, "graph": enc.graph(g),
            "signature": {"specs": [[_shape(s.shape), s.dtype.name, s.name] for s in specs],
                          "structure": _encode_def(sdef, enc)},
            "outputs": {"structure": _encode_def(cf.out_def, enc), "constants": outs}}
        return fid

    attributes = {k: [add(cf, s) for cf, s in lst] for k, lst in attrs.items()}
    signatures_ = {k: add(cf, s) for k, (cf, s) in sigs.items()}
    objects = None if isinstance(obj, (Function, ConcreteFunction, LoadedFunction)) else \
        _object_tree(obj, enc, set(), add)
    if not functions:
        raise ValueError(f"nf.saved_model.save: {type(obj).__name__} has no nf.function or "
                         f"concrete function to save (and no signatures were given)")
    tensors = dict(enc.tensors)
    variables = []
    for i, v in enumerate(enc.variables):
        tensors["variables/%d" % i] = v.numpy()
        variables.append({"name": v._name, "shape": list(v.shape), "dtype": v.dtype.name,
                          "trainable": bool(v.trainable)})
    import secrets          # here, not at import time: `import ndflow` stays fast
    os.makedirs(export_dir, exist_ok=True)
    data = "data-%s.safetensors" % secrets.token_hex(8)
    _tensorfile.write(os.path.join(export_dir, data), tensors, {"format": FORMAT + ".tensors"})
    doc = {"format": FORMAT, "version": VERSION,
           "tensors": data, "variables": variables, "objects": objects,
           "functions": functions, "attributes": attributes, "signatures": signatures_}
    text = json.dumps(doc, indent=None, separators=(",", ":"), allow_nan=False)
    with _tensorfile.atomic_write(os.path.join(export_dir, GRAPH_FILE), "w") as fh:
        fh.write(text)
    for f in os.listdir(export_dir):
        if f.startswith("data-") and f.endswith(".safetensors") and f != data:
            try:
                os.remove(os.path.join(export_dir, f))
            except OSError:
                pass


# ------------------------------------------------------------------ loading
def _decode_def(d, dec):
    if not isinstance(d, dict):
        dec.fail(f"malformed structure {d!r:.80}")
    tag = d.get("$")
    if tag == "leaf":
        return tree.LEAF
    if tag == "dict":
        return (dict, tuple(dec.value(k) for k in d["keys"]),
                tuple(_decode_def(c, dec) for c in d["v"]))
    if tag in ("list", "tuple"):
        return (list if tag == "list" else tuple, tuple(_decode_def(c, dec) for c in d["v"]))
    dec.fail(f"unknown structure tag {tag!r}")


def _assigned_in(node):
    """The Variables assigned inside a node's sub-graphs (at any depth)."""
    out, stack = [], list(node.subgraphs())
    while stack:
        sub = stack.pop()
        for n in sub.graph.nodes:
            if n.prim is assign_var_p:
                out.append(n.params["var"])
            stack.extend(n.subgraphs())
    return out


def _run_graph(g, args):
    """Evaluate `g` by binding its primitives (so tapes, traces and batching see each one).
    Variable reads and writes go through the Variables, as the traced Python code did, so a
    tape watches trainable Variables the graph reads."""
    from ..core.primitive import bind
    env = {v.id: a for v, a in zip(g.inputs, args)}
    for c in g.consts:
        env[c.id] = c.const
    for n in g.nodes:
        if n.prim is read_var_p:
            outs = (n.params["var"].value(),)
        elif n.prim is assign_var_p:
            val = env[n.inputs[0].id]
            n.params["var"].assign(val)
            outs = (val,)
        else:
            outs = bind(n.prim, *[env[v.id] for v in n.inputs], **n.params)
            if not n.prim.multiple_results:
                outs = (outs,)
            if n.prim.effect:
                written = _assigned_in(n)
                outer = innermost_graph_trace() if written else None
                if outer is not None:
                    # as after tracing a body that assigns Variables: the enclosing trace must
                    # read them again, not reuse the value it read before this node
                    for var in written:
                        outer.var_values.pop(id(var), None)
        for o, val in zip(n.outputs, outs):
            env[o.id] = val
    return [env[v.id] for v in g.outputs]


class _LoadedFunction:
    """One saved concrete function, ready to call (an `nf.function` over its graph)."""

    def __init__(self, name, graph, specs, in_def, out_def, out_consts):
        from .. import numpy as tnp
        self.name = name
        self.graph = graph
        self.input_signature = tree.unflatten(in_def, specs)
        n = len(graph.inputs)
        if len(specs) != n:
            raise FormatError(f"function {name!r}: {len(specs)} input specs for a graph of {n} "
                              f"inputs")

        def body(*args):
            leaves = tree.flatten(args)
            leaves = [x if isinstance(x, ndarray) else tnp.asarray(x, dtype=s.dtype)
                      for x, s in zip(leaves, specs)]
            if len(leaves) != n:
                raise TypeError(f"{name}: expected {n} array arguments, got {len(leaves)}")
            outs = iter(_run_graph(graph, leaves))
            return tree.unflatten(out_def, [next(outs) if c is _GRAPH_OUT else c
                                            for c in out_consts])
        body.__name__ = name
        self.function = function(body, input_signature=list(self.input_signature), name=name)

    def accepts(self, args):
        leaves = tree.flatten(args)
        specs = tree.flatten(list(self.input_signature))
        if len(leaves) != len(specs):
            return False
        for x, s in zip(leaves, specs):
            if isinstance(x, Variable):
                x = x._value
            if not isinstance(x, (ndarray, np.ndarray)):
                x = np.asarray(x)
                if x.dtype.kind != s.dtype.kind and not (x.dtype.kind in "iub"
                                                         and s.dtype.kind in "fc"):
                    return False
                continue
            if not s.is_compatible_with(x):
                return False
        return True


_GRAPH_OUT = object()


class LoadedFunction:
    """The callable at an attribute of a loaded model: the saved concrete functions for it,
    tried in order (the first whose input signature accepts the arguments runs)."""

    def __init__(self, name, concretes):
        self.__name__ = name
        self._concretes = concretes

    @property
    def concrete_functions(self):
        return [c.function for c in self._concretes]

    @property
    def input_signature(self):
        return self._concretes[0].input_signature if len(self._concretes) == 1 else None

    def __call__(self, *args):
        if len(self._concretes) == 1:
            return self._concretes[0].function(*args)
        for c in self._concretes:
            if c.accepts(args):
                return c.function(*args)
        sigs = "; ".join(repr(list(c.input_signature)) for c in self._concretes)
        raise TypeError(f"{self.__name__}: no saved signature accepts these arguments (shapes "
                        f"{[tuple(np.shape(a)) for a in tree.flatten(args)]}); saved: {sigs}")

    def __repr__(self):
        return "<ndflow saved function %s>" % self.__name__


class LoadedModel(Module):
    """What `load` returns: the saved functions as attributes (`__call__` makes it callable),
    `signatures`, and the Variables (`variables`, and at their saved attribute paths)."""

    def __call__(self, *args):
        f = self.__dict__.get("__call__")
        if f is None:
            raise TypeError("this saved model has no __call__ function")
        return f(*args)


def _rebuild(t, variables, dec, made):
    tag = t.get("$") if isinstance(t, dict) else None
    if tag == "variable":
        return variables[t["v"]]
    if tag == "module":
        m = LoadedModel()
        for k, v in t["v"].items():
            setattr(m, k, _rebuild(v, variables, dec, made))
        for k, fids in t.get("functions", {}).items():
            m.__dict__[k] = LoadedFunction(k, [made[i] for i in fids])
        m.signatures = {}
        return m
    if tag in ("list", "tuple"):
        items = [None if e is None else _rebuild(e, variables, dec, made) for e in t["v"]]
        return items if tag == "list" else tuple(items)
    if tag == "dict":
        return {k: _rebuild(v, variables, dec, made) for k, v in t["v"].items()}
    dec.fail(f"malformed object tree entry {t!r:.80}")


def load(export_dir, tags=None, options=None):
    """Load a model saved by `save` (see the module docstring). Returns a `LoadedModel`."""
    export_dir = os.fspath(export_dir)
    gpath = os.path.join(export_dir, GRAPH_FILE)
    try:
        with open(gpath, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise OSError(f"no saved model at {export_dir!r} ({GRAPH_FILE} not found)") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"{gpath!r} is not a readable saved model (truncated or corrupted? "
                          f"{e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(f"{gpath!r} is not an ndflow saved model (format "
                          f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    version = doc.get("version")
    if not isinstance(version, int):
        raise FormatError(f"{gpath!r}: unreadable format version {version!r}")
    if version > VERSION:
        raise FormatError(f"{gpath!r} was saved in format version {version}, newer than "
                          f"this ndflow reads ({VERSION}); upgrade ndflow")
    data = doc.get("tensors")
    if not isinstance(data, str) or os.path.basename(data) != data:
        raise FormatError(f"{gpath!r}: malformed tensor file name {data!r}")
    tpath = os.path.join(export_dir, data)
    if not os.path.exists(tpath):
        raise FormatError(f"{gpath!r} names the tensor file {data!r}, which is missing")
    tensors = _tensorfile.read(tpath)
    dec = Decoder(gpath, tensors, [])
    variables = []
    try:
        for i, spec in enumerate(doc["variables"]):
            value = dec.tensor("variables/%d" % i)
            if list(value.shape) != list(spec["shape"]) or value.dtype.name != spec["dtype"]:
                dec.fail(f"variable {i} ({spec['name']!r}) is declared {spec['dtype']}"
                         f"{spec['shape']} but the tensor file holds {value.dtype}"
                         f"{list(value.shape)}")
            variables.append(Variable(value, trainable=bool(spec["trainable"]),
                                      name=str(spec["name"]), dtype=value.dtype))
        dec.variables = variables
        made = {}
        for fid, f in doc["functions"].items():
            graph = dec.graph(f["graph"])
            sig = f["signature"]
            specs = [TensorSpec(s, np.dtype(dec.value({"$": "dtype", "v": d})), n)
                     for s, d, n in sig["specs"]]
            in_def = _decode_def(sig["structure"], dec)
            out_def = _decode_def(f["outputs"]["structure"], dec)
            consts = [_GRAPH_OUT if c is None else dec.value(c)
                      for c in f["outputs"]["constants"]]
            made[fid] = _LoadedFunction(str(f["name"]), graph, specs, in_def, out_def, consts)
        model = LoadedModel()
        model._saved_variables = variables
        if doc.get("objects") is not None:
            tree_ = doc["objects"]
            if not isinstance(tree_, dict) or tree_.get("$") != "module":
                dec.fail("malformed object tree")
            for k, v in tree_["v"].items():
                setattr(model, k, _rebuild(v, variables, dec, made))
        for k, fids in doc["attributes"].items():
            lf = LoadedFunction(k, [made[i] for i in fids])
            model.__dict__[k] = lf
        model.signatures = {k: LoadedFunction(k, [made[i]]) for k, i in doc["signatures"].items()}
    except FormatError:
        raise
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise FormatError(f"{gpath!r} is not a readable saved model: malformed "
                          f"({type(e).__name__}: {e})") from None
    return model
