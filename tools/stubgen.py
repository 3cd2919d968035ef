"""Write the type stubs of ndflow's two public namespaces from the package itself.

    python tools/stubgen.py            # writes ndflow/__init__.pyi and ndflow/numpy/__init__.pyi
    python tools/stubgen.py --check    # exit status 1 (and the names) when they are out of date

`nf` and `tnp` load most of their names on first use (the `_LAZY` tables), so an editor reading
`ndflow/__init__.py` sees strings, not names. The stubs declare every public name of both
namespaces: modules and classes are re-exported from where they live (editors follow them to the
source), functions get their parameters (as `inspect.signature` reports them) and a return type,
and `ndarray` is declared with typed attributes and methods, so a result's `.shape`, `.numpy()`
and operators complete and check. Parameters are left unannotated (any type): the functions
accept what NumPy accepts, which a union would only approximate.

Return types: `ndarray` for the functions of the NumPy layer and the TensorFlow-style functions
(compat, array_ops, math), except those listed in RETURNS; `Any` where a function returns
different kinds of values by its arguments. tests/test_typing.py checks them against what the
functions return on the op table's samples, and that the stubs here are up to date.
"""
import importlib
import inspect
import os
import re
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUBS = {"ndflow": os.path.join("ndflow", "__init__.pyi"),
         "ndflow.numpy": os.path.join("ndflow", "numpy", "__init__.pyi")}

# Functions returning something other than one ndarray: name -> annotation
RETURNS = {
    "ndflow.numpy": {
        # Python values
        "allclose": "bool", "array_equal": "bool", "array_equiv": "bool", "isscalar": "bool",
        "iscomplexobj": "bool", "isrealobj": "bool", "isfortran": "bool", "iterable": "bool",
        "shares_memory": "bool", "may_share_memory": "bool", "isdtype": "bool",
        "array2string": "str", "array_repr": "str", "array_str": "str", "base_repr": "str",
        "binary_repr": "str", "format_float_positional": "str", "format_float_scientific": "str",
        "mintypecode": "str", "typename": "str",
        "shape": "tuple[Any, ...]", "ndim": "int", "size": "Any",
        "broadcast_shapes": "tuple[int, ...]", "result_type": "_np.dtype[Any]",
        "promote_types": "_np.dtype[Any]", "min_scalar_type": "_np.dtype[Any]",
        "common_type": "Any", "finfo": "Any", "iinfo": "Any", "einsum_path": "Any",
        # several arrays
        "array_split": "list[ndarray]", "split": "list[ndarray]", "hsplit": "list[ndarray]",
        "vsplit": "list[ndarray]", "dsplit": "list[ndarray]",
        "broadcast_arrays": "tuple[ndarray, ...]", "nonzero": "tuple[ndarray, ...]",
        "meshgrid": "tuple[ndarray, ...]", "ix_": "tuple[ndarray, ...]",
        "unravel_index": "tuple[ndarray, ...]", "diag_indices": "tuple[ndarray, ...]",
        "diag_indices_from": "tuple[ndarray, ...]", "tril_indices": "tuple[ndarray, ...]",
        "tril_indices_from": "tuple[ndarray, ...]", "triu_indices": "tuple[ndarray, ...]",
        "triu_indices_from": "tuple[ndarray, ...]", "mask_indices": "tuple[ndarray, ...]",
        "unstack": "tuple[ndarray, ...]", "histogram": "tuple[ndarray, ndarray]",
        "histogram2d": "tuple[ndarray, ndarray, ndarray]",
        "histogramdd": "tuple[ndarray, list[ndarray]]", "polydiv": "tuple[ndarray, ndarray]",
        "unique_all": "Any", "unique_counts": "Any", "unique_inverse": "Any",
        # one array, or several by the arguments
        "atleast_1d": "Any", "atleast_2d": "Any", "atleast_3d": "Any", "average": "Any",
        "gradient": "Any", "indices": "Any", "intersect1d": "Any", "linspace": "Any",
        "polyfit": "Any", "unique": "Any", "load": "Any", "fromfile": "Any",
        "genfromtxt": "Any", "frompyfunc": "Any", "where": "Any",
        # state and effects
        "get_printoptions": "dict[str, Any]", "set_printoptions": "None",
        "printoptions": "Any", "getbufsize": "int", "setbufsize": "int",
        "geterr": "dict[str, str]", "seterr": "dict[str, str]", "geterrcall": "Any",
        "seterrcall": "Any", "show_config": "None", "show_runtime": "None", "save": "None",
        "savez": "None", "savez_compressed": "None", "savetxt": "None", "copyto": "None",
        "put": "None", "put_along_axis": "None", "place": "None", "putmask": "None",
        "fill_diagonal": "None", "experimental_enable_numpy_behavior": "None",
    },
    "ndflow": {
        "unstack": "list[ndarray]", "split": "list[ndarray]", "meshgrid": "Any",
        "unique": "tuple[ndarray, ndarray]", "clip_by_global_norm":
        "tuple[list[Any], ndarray]", "executing_eagerly": "bool", "is_tensor": "bool",
        "py_function": "Any", "where": "ndarray", "shape": "ndarray",
        "experimental_enable_numpy_behavior": "None", "print": "None",
    },
}
# modules whose functions return one ndarray unless RETURNS says otherwise
ARRAY_MODULES = ("ndflow.numpy", "ndflow.compat", "ndflow.array_ops", "ndflow.math")

# ndarray's members that do not return an ndarray (the others do)
NDARRAY_RETURNS = {
    "numpy": "_np.ndarray[Any, Any]", "__array__": "_np.ndarray[Any, Any]", "item": "Any",
    "tolist": "Any", "tobytes": "bytes", "dumps": "bytes", "__len__": "int",
    "__bool__": "bool", "__int__": "int", "__index__": "int", "__float__": "float",
    "__complex__": "complex", "__iter__": "Iterator[ndarray]", "__repr__": "str",
    "__str__": "str", "__format__": "str", "__setitem__": "None", "__dlpack__": "Any",
    "__dlpack_device__": "tuple[int, int]", "__array_namespace__": "Any",
    "__array_ufunc__": "Any", "__array_function__": "Any", "__reduce__": "Any",
    "__divmod__": "tuple[ndarray, ndarray]", "__rdivmod__": "tuple[ndarray, ndarray]",
    "nonzero": "tuple[ndarray, ...]", "get_shape": "Any", "set_shape": "None", "fill": "None",
    "put": "None", "setfield": "None", "setflags": "None", "sort": "None", "resize": "None",
    "partition": "None", "dump": "None", "tofile": "None",
    # attributes
    "shape": "tuple[Any, ...]", "dtype": "_np.dtype[Any]", "ndim": "int", "size": "Any",
    "itemsize": "int", "nbytes": "int", "strides": "tuple[int, ...]", "device": "str",
    "flat": "Any", "flags": "Any", "base": "Any", "data": "Any", "ctypes": "Any",
}
# NumPy's signatures, which typing's rules for these dunders do not allow as they are
_IGNORES = {"__eq__": "  # type: ignore[override]", "__ne__": "  # type: ignore[override]",
            "__ipow__": "  # type: ignore[misc]"}
_NOT_MEMBERS = {"__new__", "__doc__", "__module__", "__slots__", "__weakref__", "__hash__",
                "__array_priority__"}


_BUILTIN = re.compile(r"(?<![.\w])(bool|int|float|complex|str|bytes)(?![\w])")


def _q(annotation):
    """`annotation` with Python's scalar types spelled `_b.bool` ...: the stubs define names
    `bool` (NumPy's) and shadow the builtins otherwise."""
    return _BUILTIN.sub(r"_b.\1", annotation)


def _public_names(mod):
    # what the namespace promises (`__all__`, and the lazy names, some of which `__all__`
    # leaves out), not `dir()`: that grows with every submodule something imported
    names = set(getattr(mod, "__all__", ())) | set(getattr(mod, "_LAZY", ()))
    return sorted(n for n in names if not n.startswith("_"))


def _relative(stub_pkg, module):
    """`module` as a relative import path from the package `stub_pkg`."""
    here, there = stub_pkg.split("."), module.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    return "." * (len(here) - common + 1) + ".".join(there[common:])


def _params(fn, drop_self=False):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if drop_self and params:
        params = params[1:]
    out = [p.replace(annotation=inspect.Parameter.empty,
                     default=inspect.Parameter.empty if p.default is inspect.Parameter.empty
                     else _Ellipsis) for p in params]
    return str(sig.replace(parameters=out, return_annotation=inspect.Signature.empty))


class _EllipsisRepr:
    def __repr__(self):
        return "..."


_Ellipsis = _EllipsisRepr()


def _ufunc_line(name, u):
    return f"{name}: _UFunc{'2' if u.nout == 2 else ''}"


def _function_line(ns, name, fn):
    sig = _params(fn)
    ret = RETURNS[ns].get(name)
    if ret is None:
        mod = getattr(fn, "__module__", "") or ""
        ret = "ndarray" if mod.startswith(ARRAY_MODULES) else "Any"
    if sig is None:
        return f"def {name}(*args: Any, **kwargs: Any) -> {_q(ret)}: ..."
    return f"def {name}{sig} -> {_q(ret)}: ..."


def _entry(ns, name, obj, tnp):
    """(kind, text): 'import' lines, 'def'/'var' declarations."""
    import numpy as np
    if isinstance(obj, types.ModuleType):
        parent, _, leaf = obj.__name__.rpartition(".")
        return "import", f"from {_relative(ns, parent)} import {leaf} as {name}"
    if obj is tnp.ndarray:
        if ns == "ndflow.numpy":
            return None, None                      # the class itself, written below
        return "import", f"from .numpy import ndarray as {name}"
    if isinstance(obj, tnp.ufunc):
        return "var", _ufunc_line(name, obj)
    mod = getattr(obj, "__module__", None)
    if inspect.isclass(obj) and isinstance(mod, str):
        if mod.startswith("ndflow") and "." not in obj.__qualname__:
            return "import", f"from {_relative(ns, mod)} import {obj.__qualname__} as {name}"
        if mod == "numpy" or mod.startswith("numpy."):
            if getattr(np, obj.__name__, None) is obj:
                return "import", f"from numpy import {obj.__name__} as {name}"
        return "var", f"{name}: Any"
    if callable(obj) and isinstance(mod, str) and mod.startswith("numpy"):
        if getattr(np, getattr(obj, "__name__", ""), None) is obj:
            return "import", f"from numpy import {obj.__name__} as {name}"
    if inspect.isroutine(obj) or (callable(obj) and isinstance(mod, str)
                                  and mod.startswith("ndflow") and not inspect.isclass(obj)
                                  and hasattr(obj, "__wrapped__")):
        return "def", _function_line(ns, name, obj)
    if obj is None:
        return "var", f"{name}: None"
    if isinstance(obj, (bool, int, float, str)):
        return "var", f"{name}: {_q(type(obj).__name__)}"
    if callable(obj) and isinstance(mod, str) and mod.startswith("ndflow"):
        return "def", _function_line(ns, name, obj)
    return "var", f"{name}: Any"


def _ndarray_class(tnp):
    cls = tnp.ndarray
    lines = ["class ndarray:",
             "    # the array of ndflow.numpy: its attributes and methods are NumPy's (see",
             "    # `help(ndflow.numpy.ndarray)`); results are ndarrays unless noted",
             "    __array_priority__: _b.float",
             "    def __init__(self, shape: Any, dtype: Any = ..., buffer: Any = ...,",
             "                 offset: Any = ..., strides: Any = ..., order: Any = ...) -> None: ...",
             "    __hash__: ClassVar[None]  # type: ignore[assignment]"]
    for name in sorted(cls.__dict__):
        if name in _NOT_MEMBERS or (name.startswith("_") and not name.startswith("__")):
            continue
        member = cls.__dict__[name]
        ret = _q(NDARRAY_RETURNS.get(name, "ndarray"))
        if isinstance(member, property):
            lines += ["    @property", f"    def {name}(self) -> {ret}: ..."]
            if member.fset is not None:
                lines += [f"    @{name}.setter", f"    def {name}(self, value: Any) -> None: ..."]
            continue
        sig = _params(member, drop_self=True)
        sig = "(self, *args: Any, **kwargs: Any)" if sig is None else "(self" + (
            ", " + sig[1:] if sig != "()" else ")")
        ignore = _IGNORES.get(name, "")
        lines.append(f"    def {name}{sig} -> {ret}: ...{ignore}")
    return lines


_UFUNC_CLASSES = '''
class _UFunc:
    # a ufunc object of one result (tnp.add, tnp.exp ...): its call and methods as NumPy's
    __name__: _b.str
    nin: _b.int
    nout: _b.int
    nargs: _b.int
    identity: Any
    signature: Any
    def __call__(self, *args: Any, **kwargs: Any) -> ndarray: ...
    def reduce(self, *args: Any, **kwargs: Any) -> ndarray: ...
    def accumulate(self, *args: Any, **kwargs: Any) -> ndarray: ...
    def reduceat(self, *args: Any, **kwargs: Any) -> ndarray: ...
    def outer(self, *args: Any, **kwargs: Any) -> ndarray: ...
    def at(self, *args: Any, **kwargs: Any) -> None: ...

class _UFunc2(_UFunc):
    # a ufunc object of two results (tnp.divmod, tnp.modf, tnp.frexp)
    def __call__(self, *args: Any, **kwargs: Any) -> tuple[ndarray, ndarray]: ...  # type: ignore[override]
'''


def render(ns):
    """The text of the stub of namespace `ns` ('ndflow' or 'ndflow.numpy')."""
    tnp = importlib.import_module("ndflow.numpy")
    mod = importlib.import_module(ns)
    imports, decls = [], []
    for name in _public_names(mod):
        kind, text = _entry(ns, name, getattr(mod, name), tnp)
        if kind == "import":
            imports.append(text)
        elif kind is not None:
            decls.append(text)
    head = [f'"""Type stub of `{ns}`, written by tools/stubgen.py from the package: do not edit;',
            'run `python tools/stubgen.py` after changing the public names."""',
            "import builtins as _b",
            "from typing import Any, ClassVar, Iterator", "",
            "import numpy as _np", ""]
    if ns == "ndflow":
        head.append("from .numpy import ndarray")
    body = sorted(imports) + [""]
    if ns == "ndflow.numpy":
        body += _ndarray_class(tnp) + [_UFUNC_CLASSES]
    body += decls
    all_names = sorted(getattr(mod, "__all__", []))
    body += ["", "__all__ = ["] + [f"    {n!r}," for n in all_names] + ["]"]
    return "\n".join(head + body) + "\n"


def main(argv):
    sys.path.insert(0, ROOT)
    stale = []
    for ns, rel in STUBS.items():
        text = render(ns)
        path = os.path.join(ROOT, rel)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            stale.append(rel)
            if "--check" not in argv:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
    if "--check" in argv and stale:
        print("out of date (run python tools/stubgen.py):", " ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
