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
are tried in order; the first whose signature accepts the arguments runs. A function saved from
`nf.function(..., jit_compile=True)` loads with `jit_compile=True`: it compiles under the same
accuracy contract (docs/guides/performance.md), as TensorFlow keeps the flag of a saved function.

Format (a directory, version 1):

    saved_model.json       {"format": "ndflow.saved_model", "version": 1, "tensors": <file>,
                            "variables": [{"name", "shape", "dtype", "trainable"}],
                            "objects": the Module/list/dict tree leading to Variables,
                            "functions": {id: {"graph": ..., "signature": ..., "outputs": ...,
                                               "jit_compile": true or false (optional)}},
                            "attributes": {name: [function ids]}, "signatures": {name: id}}
    data-<token>.safetensors   Variables ("variables/<i>"), constants and array parameters

The graph encoding is described in `_graphio`. Loading parses JSON and reads tensors: it never
runs code from the files. A newer format version, a damaged file or a primitive this ndflow
does not have is a `ValueError` naming the path and the reason. Saving writes the tensor file
under a fresh name, then replaces `saved_model.json` atomically (the commit point), then removes
older tensor files: a crash leaves the previous model loadable. A save holds the directory's lock
(`train/_files.py`), so threads or processes saving into one directory run one after the other
and the last one's model is what loads; `load` reads `saved_model.json` again if a save in
another process removed the tensor file it named meanwhile.
"""
import json
import os
import warnings

from ..core import tree
from ..graph.function import Function, ConcreteFunction, TensorSpec, function
from ..graph import passes as _passes
from ..train.variable import Variable
from ..train.module import Module
from ..train import _tensorfile
from ..train._files import atomic_write, directory_lock, remove_stale_temps
from ._graphio import Encoder, FormatError, _shape, FORMAT, VERSION, GRAPH_FILE  # noqa: F401
from ._loaded import LoadedFunction, LoadedModel
from . import _load

__all__ = ["save", "load", "FORMAT", "VERSION"]



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
    a user-held random stream).

    Examples
    --------
    >>> import ndflow as nf, tempfile
    >>> class Scale(nf.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = nf.Variable(3.0)
    ...     @nf.function(input_signature=[nf.TensorSpec([None], nf.float32)])
    ...     def __call__(self, x):
    ...         return x * self.w
    >>> path = tempfile.mkdtemp()
    >>> nf.saved_model.save(Scale(), path)
    >>> restored = nf.saved_model.load(path)
    >>> restored(nf.constant([1., 2.]))
    array([3., 6.], dtype=float32)
    """
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
            # the accuracy contract its regions were built under: a function saved from
            # nf.function(jit_compile=True) compiles under it again when loaded
            "jit_compile": bool(cf.fast_math),
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
    doc = {"format": FORMAT, "version": VERSION, "variables": variables, "objects": objects,
           "functions": functions, "attributes": attributes, "signatures": signatures_}
    os.makedirs(export_dir, exist_ok=True)
    with directory_lock(export_dir):
        _commit(export_dir, doc, tensors)


def _commit(export_dir, doc, tensors):
    """Write the tensor file under a fresh name, replace saved_model.json (the commit point),
    then remove every other tensor file; under the directory's lock, so a concurrent save
    waits instead of removing this one's file."""
    import secrets          # here, not at import time: `import ndflow` stays fast
    remove_stale_temps(export_dir, ("data-", GRAPH_FILE))
    data = "data-%s.safetensors" % secrets.token_hex(8)
    _tensorfile.write(os.path.join(export_dir, data), tensors, {"format": FORMAT + ".tensors"})
    text = json.dumps(dict(doc, tensors=data), indent=None, separators=(",", ":"),
                      allow_nan=False)
    with atomic_write(os.path.join(export_dir, GRAPH_FILE), "w") as fh:
        fh.write(text)
    for f in os.listdir(export_dir):
        if f.startswith("data-") and f.endswith(".safetensors") and f != data:
            try:
                os.remove(os.path.join(export_dir, f))
            except OSError:
                pass


# ------------------------------------------------------------------ loading
def load(export_dir, tags=None, options=None, allow_file_writes=False):
    """Load a model saved by `save` (see the module docstring). Returns a `LoadedModel`.

    Loading never runs code from the files and never lets them act outside the loaded
    functions' results: a malformed, hostile or corrupted file is a `ValueError` naming the
    file and the field (`nf.errors.DataLossError` for a tensor whose checksum does not match),
    and a graph node that would write elsewhere is refused. The one opt-in is
    `allow_file_writes=True`: keep `nf.print(..., output_stream="file://...")` nodes, which
    append to that file each time the function runs (TensorFlow keeps them; ndflow asks).

    >>> import ndflow as nf, numpy as np, tempfile
    >>> f = nf.function(lambda x: x * 2.0, input_signature=[nf.TensorSpec([None])])
    >>> d = tempfile.mkdtemp()
    >>> nf.saved_model.save(f, d)
    >>> nf.saved_model.load(d)(np.array([1.5], np.float32)).tolist()
    [3.0]
    """
    return _load.load(export_dir, allow_file_writes)
