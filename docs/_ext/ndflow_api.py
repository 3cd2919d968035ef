"""The API reference's list of names, taken from the package itself.

`entries()` walks the public namespaces of `ndflow` (nf) and `ndflow.numpy` (tnp): a namespace's
names are its `__all__` (or, without one, its attributes not starting with `_`), so a name added
to the package appears in the reference without editing the docs. A submodule an `__all__`
lists is either a documented namespace (`NAMESPACES`) or an implementation module (`INTERNAL`,
with the reason); one that is neither stops the build and fails `tests/test_docs_api.py`, so a
new public module is never left out silently.

This module needs no Sphinx: the tests import it. `setup()` makes it a Sphinx extension that
writes the reference pages (`docs/reference/`, generated, not in git) before Sphinx reads them.
"""
import importlib
import inspect
import os
import types

# Documented namespaces, in the order the reference lists them: (path, title, what it is).
# An object reachable under several paths is described once, under the first path in this
# order; the others say "alias of" and link to it.
NAMESPACES = [
    ("ndflow.numpy", "ndflow.numpy (tnp)", "The NumPy API on ndflow arrays."),
    ("ndflow.numpy.linalg", "ndflow.numpy.linalg", "Linear algebra, as `numpy.linalg`."),
    ("ndflow.numpy.fft", "ndflow.numpy.fft", "Discrete Fourier transforms, as `numpy.fft`."),
    ("ndflow.numpy.random", "ndflow.numpy.random",
     "Random numbers, as `numpy.random` (the same streams for the same seeds)."),
    ("ndflow.numpy.lib", "ndflow.numpy.lib", "As `numpy.lib`."),
    ("ndflow.numpy.lib.stride_tricks", "ndflow.numpy.lib.stride_tricks",
     "Sliding windows and strided views, as `numpy.lib.stride_tricks`."),
    ("ndflow", "ndflow (nf)",
     "Gradients, compilation, vectorization, devices, Variables and TensorFlow-style names."),
    ("ndflow.config", "ndflow.config", "Devices, debugging switches and function caches."),
    ("ndflow.debugging", "ndflow.debugging", "Printing and checking values, eager and compiled."),
    ("ndflow.errors", "ndflow.errors", "Error types, as `tf.errors`."),
    ("ndflow.autograph", "ndflow.autograph", "Python control flow in `nf.function`."),
    ("ndflow.autograph.experimental", "ndflow.autograph.experimental",
     "Turning AutoGraph off for one function."),
    ("ndflow.test", "ndflow.test", "Numerical gradient checking, as `tf.test`."),
    ("ndflow.random", "ndflow.random", "TensorFlow-style random functions."),
    ("ndflow.math", "ndflow.math", "Elementwise and reduction functions under TensorFlow's names, "
     "as `tf.math`."),
    ("ndflow.nn", "ndflow.nn", "Activations and losses, as `tf.nn`."),
    ("ndflow.losses", "ndflow.losses", "Loss functions, as `keras.losses`."),
    ("ndflow.train", "ndflow.train", "Checkpoints, as `tf.train`."),
    ("ndflow.optimizers", "ndflow.optimizers", "Optimizers, as `keras.optimizers`."),
    ("ndflow.optimizers.schedules", "ndflow.optimizers.schedules", "Learning-rate schedules."),
    ("ndflow.initializers", "ndflow.initializers", "Initializers, as `keras.initializers`."),
    ("ndflow.saved_model", "ndflow.saved_model", "Saving and loading compiled functions."),
    ("ndflow.onnx", "ndflow.onnx", "Export to ONNX."),
    ("ndflow.summary", "ndflow.summary", "TensorBoard summaries, as `tf.summary`."),
    ("ndflow.summary.experimental", "ndflow.summary.experimental", "The default step."),
    ("ndflow.distribute", "ndflow.distribute", "Distribution strategies, as `tf.distribute`."),
    ("ndflow.distribute.experimental", "ndflow.distribute.experimental",
     "TensorFlow's experimental names of the strategies."),
    ("ndflow.distribute.dask", "ndflow.distribute.dask", "ndflow arrays as Dask chunks."),
    ("ndflow.scipy", "ndflow.scipy", "SciPy functions that differentiate, compile and vectorize."),
    ("ndflow.scipy.special", "ndflow.scipy.special", "As `scipy.special`."),
    ("ndflow.scipy.stats", "ndflow.scipy.stats", "As `scipy.stats`."),
    ("ndflow.scipy.linalg", "ndflow.scipy.linalg", "As `scipy.linalg`."),
    ("ndflow.scipy.integrate", "ndflow.scipy.integrate", "As `scipy.integrate`."),
    ("ndflow.scipy.signal", "ndflow.scipy.signal", "As `scipy.signal`."),
]

# Namespaces announced but not in every tree yet (nf.math comes with TensorFlow's names): left
# out while absent. Any other namespace that does not resolve is an error.
ANNOUNCED = {"ndflow.math"}


def namespaces():
    """NAMESPACES, less the announced ones this tree does not have yet."""
    out = []
    for entry in NAMESPACES:
        try:
            resolve(entry[0])
        except AttributeError:
            if entry[0] not in ANNOUNCED:
                raise
            continue
        out.append(entry)
    return out


# Modules reachable as attributes that are not namespaces of their own, with the reason.
_REEXPORTED = "its public names are re-exported by the namespace above it"
INTERNAL = {
    "ndflow.autodiff": _REEXPORTED, "ndflow.backends": _REEXPORTED,
    "ndflow.compat": _REEXPORTED, "ndflow.core": _REEXPORTED, "ndflow.graph": _REEXPORTED,
    "ndflow.primitives": "the primitives and their rules (see the architecture page)",
    "ndflow.vectorize": _REEXPORTED,
    "ndflow.train.checkpoint": _REEXPORTED, "ndflow.train.module": _REEXPORTED,
    "ndflow.train.variable": _REEXPORTED,
    "ndflow.distribute.collective": _REEXPORTED, "ndflow.distribute.strategy": _REEXPORTED,
    "ndflow.distribute.values": _REEXPORTED,
    "ndflow.autograph.conversion": _REEXPORTED, "ndflow.autograph.transformer": _REEXPORTED,
}
# ndflow.numpy's implementation modules (one per chapter of NumPy's reference): their names are
# tnp's, grouped by them into the sections below
NUMPY_SECTIONS = {
    "creation": "Array creation", "conversion": "Conversion", "shaping": "Shapes",
    "padding": "Shapes", "_core": "Array creation",
    "manipulation": "Array manipulation", "indexing": "Indexing", "index_tricks": "Indexing",
    "ufuncs": "Universal functions (ufuncs)", "math": "Mathematical functions",
    "special": "Mathematical functions", "reductions": "Sums, products and extrema",
    "statistics": "Statistics", "histograms": "Statistics", "differences": "Statistics",
    "quantiles": "Statistics", "logic": "Logic and comparison",
    "sorting": "Sorting and searching", "sets": "Sets", "linalg_ops": "Linear algebra",
    "poly_ops": "Polynomials", "windows": "Window functions",
    "functional": "Functional programming",
    "npyio": "Input and output", "printing": "Printing and floating-point errors",
    "routines": "Other routines", "array_api": "The Array API",
}
for _m in NUMPY_SECTIONS:
    INTERNAL["ndflow.numpy." + _m] = "a section of ndflow.numpy (its names are tnp's)"
for _m in ("_interop", "_core", "_composites"):
    INTERNAL["ndflow.numpy." + _m] = "part of ndflow.numpy"
SECTION_ORDER = ["The array", "Array creation", "Conversion", "Shapes", "Array manipulation",
                 "Indexing", "Universal functions (ufuncs)", "Mathematical functions",
                 "Sums, products and extrema", "Statistics", "Logic and comparison",
                 "Sorting and searching", "Sets", "Linear algebra", "Polynomials",
                 "Window functions", "Functional programming", "Input and output",
                 "Printing and floating-point errors", "The Array API", "Other routines",
                 "Data types and constants"]


class Entry:
    """One public name: `path` (ndflow.numpy.add), the namespace it is listed in, the object,
    and `alias_of` (the path of its description) when the object is described elsewhere."""
    __slots__ = ("path", "namespace", "name", "obj", "alias_of")

    def __init__(self, path, namespace, name, obj, alias_of=None):
        self.path, self.namespace, self.name = path, namespace, name
        self.obj, self.alias_of = obj, alias_of

    @property
    def kind(self):
        return kind_of(self.obj)

    def __repr__(self):
        return f"Entry({self.path!r}, {self.kind})"


def resolve(path):
    """The object at a dotted path, through attributes (nf.optimizers is an attribute of
    ndflow bound to ndflow.train.optimizers, not an importable ndflow/optimizers.py)."""
    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def public_names(ns):
    """`__all__`; without one, the attributes not starting with `_`, less the helpers imported
    from private modules (`from ..primitives._util import norm_axis`)."""
    names = getattr(ns, "__all__", None)
    if names is None:
        names = [n for n in dir(ns) if not n.startswith("_")
                 and not _from_private_module(getattr(ns, n))]
    return sorted(set(names))


def _from_private_module(obj):
    mod = getattr(obj, "__module__", None)
    return (isinstance(mod, str) and not isinstance(obj, types.ModuleType)
            and any(part.startswith("_") for part in mod.split(".")))


def is_ndflow(obj):
    """Defined by ndflow (not a NumPy type or constant that ndflow hands on as it is)."""
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str) or isinstance(obj, (types.ModuleType, int, float, str)):
        mod = type(obj).__module__
    return isinstance(mod, str) and mod.split(".")[0] == "ndflow"


def kind_of(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if not is_ndflow(obj):
        return "external"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isroutine(obj):
        return "function"
    return "object"          # ufuncs, distributions, index helpers: instances with a docstring


def own_docstring(obj):
    """The docstring written for this object (a class's own, not one inherited)."""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
    else:
        doc = getattr(obj, "__doc__", None)
    return doc.strip() if isinstance(doc, str) else ""


def entries():
    """Every public name of every documented namespace, and the unclassified submodules."""
    described = {}                  # id(object) -> path of its description
    modules = {}                    # id(module object) -> documented namespace path
    present = namespaces()
    for path, _title, _what in present:
        modules.setdefault(id(resolve(path)), path)
    documented = {p for p, _, _ in present}
    out, unclassified = [], []
    for ns_path, _title, _what in present:
        ns = resolve(ns_path)
        for name in public_names(ns):
            obj = getattr(ns, name)
            path = ns_path + "." + name
            if path in documented:       # a namespace of its own (a module or a class)
                continue
            if isinstance(obj, types.ModuleType):
                # another package's module (`np`, `operator`) is an import, not a name; so is
                # a submodule of a package without `__all__`: it is an attribute only once
                # something has imported it, so the reference cannot depend on it
                if not (id(obj) in modules or path in INTERNAL
                        or not obj.__name__.startswith("ndflow")
                        or getattr(ns, "__all__", None) is None):
                    unclassified.append(path)
                continue
            key = id(obj)
            # constants (floats, None) are values, not objects with an identity worth sharing
            alias = described.get(key) if not isinstance(obj, (int, float, type(None))) else None
            if alias is None and is_ndflow(obj):
                described[key] = path
            out.append(Entry(path, ns_path, name, obj, alias))
    return out, unclassified


def numpy_section(entry):
    obj = entry.obj
    if entry.name in ("ndarray", "ufunc"):
        return "The array"
    if not is_ndflow(obj):
        return "Data types and constants"
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str):
        mod = type(obj).__module__
    return NUMPY_SECTIONS.get(mod.rsplit(".", 1)[-1], "Other routines")


# ----------------------------------------------------------------------- the pages (reST)

def _anchor(path):
    return path.replace(".", "-").replace("_", "-").lower()


def _external_text(entry):
    obj = entry.obj
    if obj is None or isinstance(obj, (int, float)):
        return f"The constant ``{obj!r}``, as NumPy's ``numpy.{entry.name}``."
    mod = getattr(obj, "__module__", None) or type(obj).__module__
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", entry.name)
    if isinstance(mod, str) and mod.startswith("numpy"):
        where = "" if qual == entry.name and mod == "numpy" else f" (``{mod}.{qual}``)"
        return (f"NumPy's own ``numpy.{entry.name}``{where}, which ndflow uses as it is: its "
                "documentation is NumPy's.")
    return f"``{mod}.{qual}``, used by ndflow as it is."


def entry_rst(entry):
    """The reST of one entry: an autodoc directive, or a short description of an alias or of
    a NumPy object handed on as it is."""
    path, kind = entry.path, entry.kind
    if entry.alias_of is not None:
        role = "class" if inspect.isclass(entry.obj) else "obj"
        return (f".. py:data:: {entry.name}\n\n"
                f"   Alias of :py:{role}:`{entry.alias_of}`.\n")
    if kind == "external":
        return f".. py:data:: {entry.name}\n\n   {_external_text(entry)}\n"
    if kind in ("class", "exception"):
        opts = "   :members:\n" if kind == "class" else ""
        if entry.obj.__bases__ != (object,):       # "Bases: object" says nothing
            opts += "   :show-inheritance:\n"
        return f".. autoclass:: {path}\n{opts}"
    if kind == "function":
        return f".. autofunction:: {path}\n"
    return f".. autodata:: {path}\n   :no-value:\n"


def _title(text, char):
    return f"{text}\n{char * len(text)}\n"


def summary_line(entry):
    """The first sentence of an entry's description, as reST."""
    if entry.alias_of is not None:
        return f"Alias of :py:obj:`{entry.alias_of}`."    # the full path: it may be elsewhere
    if entry.kind == "external":
        return _external_text(entry)
    doc = inspect.cleandoc(own_docstring(entry.obj))
    para = " ".join(doc.split("\n\n", 1)[0].split())
    # the first sentence: a full stop outside code spans, followed by a space
    # (a ``literal`` is one span: its two backticks each side must not toggle twice)
    depth, cut, i = 0, len(para), 0
    while i < len(para):
        ch = para[i]
        if ch == "`":
            depth ^= 1
            i += 2 if para.startswith("``", i) else 1
            continue
        if ch == "." and not depth and (i + 1 == len(para) or para[i + 1] == " "):
            cut = i + 1
            break
        i += 1
    from ndflow_docstrings import escape_prose
    return escape_prose(para[:cut]) if para else "(no docstring yet)"


def _summary(items):
    lines = [".. list-table::", "   :widths: 25 75", "   :class: ndflow-summary", ""]
    for e in items:
        lines += [f"   * - :py:obj:`~{e.path}`", f"     - {summary_line(e)}"]
    return "\n".join(lines) + "\n"


def _page(ns_path, title, what, groups, submodules=()):
    parts = [_title(title, "="), f".. py:currentmodule:: {ns_path}\n", what + "\n"]
    if submodules:
        parts.append("Namespaces: " + ", ".join(f":doc:`{p} <{p}>`" for p in submodules)
                     + ".\n")
    for heading, items in groups:
        if heading:
            parts.append(_title(heading, "-"))
        parts.append(_summary(items))
        parts += [entry_rst(e) for e in items]
    return "\n".join(parts)


def pages():
    """{relative file name: reST text} of the reference: one page per namespace, tnp's in
    sections; and the index. Raises when a submodule is unclassified."""
    found, unclassified = entries()
    if unclassified:
        raise RuntimeError("modules neither documented nor listed as internal in "
                           "docs/_ext/ndflow_api.py (NAMESPACES or INTERNAL): %s" % unclassified)
    by_ns = {}
    for e in found:
        by_ns.setdefault(e.namespace, []).append(e)
    out = {}
    present = namespaces()
    paths = [p for p, _, _ in present]
    for ns_path, title, what in present:
        items = by_ns.get(ns_path, [])
        subs = [p for p in paths if "." in p and p.rsplit(".", 1)[0] == ns_path]
        if ns_path == "ndflow.numpy":
            sections = {}
            for e in items:
                sections.setdefault(numpy_section(e), []).append(e)
            groups = [(s, sections[s]) for s in SECTION_ORDER if s in sections]
            groups += [(s, v) for s, v in sections.items() if s not in SECTION_ORDER]
        else:
            groups = [(None, items)] if items else []
        what = what.replace("`", "``")
        out[ns_path + ".rst"] = _page(ns_path, title, what, groups, subs)
    index = [_title("API reference", "="),
             "Every public name of ``ndflow`` (``nf``) and ``ndflow.numpy`` (``tnp``), from the "
             "docstrings. The list is generated from the package itself.\n",
             ".. toctree::\n   :maxdepth: 1\n"]
    index += ["   " + p for p in paths]
    out["index.rst"] = "\n".join(index) + "\n"
    return out


def write_pages(srcdir):
    target = os.path.join(srcdir, "reference")
    os.makedirs(target, exist_ok=True)
    new = pages()
    for name, text in new.items():
        fn = os.path.join(target, name)
        old = None
        if os.path.exists(fn):
            with open(fn, encoding="utf-8") as fh:
                old = fh.read()
        if old != text:             # untouched pages keep their time: incremental builds
            with open(fn, "w", encoding="utf-8") as fh:
                fh.write(text)
    for name in os.listdir(target):
        if name.endswith(".rst") and name not in new:
            os.remove(os.path.join(target, name))


_DOCUMENTED_CLASSES = []


def _public_bases(app, name, obj, options, bases):
    """Show a class's documented ancestors: a base the reference does not describe
    (`_Preset`, `core.variable.VariableBase`) is replaced by its own bases."""
    if not _DOCUMENTED_CLASSES:
        _DOCUMENTED_CLASSES.append({id(e.obj) for e in entries()[0] if inspect.isclass(e.obj)})
    documented = _DOCUMENTED_CLASSES[0]
    i = 0
    while i < len(bases):
        b = bases[i]
        if is_ndflow(b) and id(b) not in documented:
            bases[i:i + 1] = [x for x in b.__bases__ if x is not object and x not in bases]
        else:
            i += 1


def setup(app):
    app.connect("builder-inited", lambda app: write_pages(app.srcdir))
    app.connect("autodoc-process-bases", _public_bases)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
