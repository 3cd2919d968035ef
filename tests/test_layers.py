"""Layers point one way: a module imports only from its own layer or a lower one.

The layers (lowest first; `tools/imports.py` holds the table, `docs/architecture.md` explains
it): core <- primitives <- numpy, autodiff, graph, vectorize, autograph, backends <- train,
summary, saved_model, onnx, distribute, utils and the top-level helper modules (compat, config,
debugging, errors, losses, nn, random, test) <- the public face (`ndflow/__init__.py`, tour).

Every import counts, at the top of a module or inside a function: a function-level import only
hides a dependency from the interpreter, not from the design. Imports of packages that are not
ndflow's (numpy, numba, onnx, tensorboard, ...) are not checked here.

`UPWARD` lists the upward imports that exist today, each to be removed; it can only shrink: the
test fails on an upward import not in the list, and on a listed one that no longer exists (so
removing an import means removing its entry).

Counts (`python tools/imports.py`; `from P import n` is an import of the module `P.n` when
there is one, else of `P`):
    when this test was written: modules 123, largest import cycle 69 modules, upward imports 18
    now:                        modules 125, largest import cycle 46 modules, upward imports 1
The cycle left is inside the transformations layer (numpy <-> autodiff <-> graph <-> vectorize,
which the layering allows) plus the one allowlisted rule module.
"""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tools/imports.py, loaded from its path (tools/ is not a package, and not on sys.path)
_spec = importlib.util.spec_from_file_location("_ndflow_tools_imports",
                                               os.path.join(ROOT, "tools", "imports.py"))
imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(imports)

UPWARD = {
    # gradient rules of the decompositions composed with the NumPy layer (tnp.matmul, where,
    # conj ...) rather than primitives: a small ops module for rules would remove it
    "ndflow.primitives.linalg_decomp -> ndflow.numpy",
}


@pytest.fixture(scope="module")
def graph():
    return imports.edges(ROOT)


def test_every_module_has_a_layer(graph):
    missing = sorted(m for m in graph if imports.layer_of(m) is None)
    assert not missing, ("modules in no layer (add their package to tools/imports.py LAYERS and "
                         "docs/architecture.md): %s" % missing)


def test_no_new_upward_import(graph):
    new = sorted(set(imports.upward(graph)) - UPWARD)
    assert not new, ("imports from a lower layer into a higher one (docs/architecture.md, "
                     "'Layers'); move the code, or give the lower layer a hook:\n  "
                     + "\n  ".join(new))


def test_allowlist_only_shrinks(graph):
    gone = sorted(UPWARD - set(imports.upward(graph)))
    assert not gone, ("these upward imports no longer exist: remove them from UPWARD in "
                      "tests/test_layers.py:\n  " + "\n  ".join(gone))


def test_checker_sees_function_level_imports(tmp_path):
    # The checker itself: an upward import hidden in a function, a relative `from . import`
    # of a module and a name imported from a package all resolve to the right module.
    pkg = tmp_path / "ndflow"
    (pkg / "core").mkdir(parents=True)
    (pkg / "train").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "train" / "__init__.py").write_text("from .variable import Variable\n")
    (pkg / "train" / "variable.py").write_text("Variable = object\n")
    (pkg / "core" / "a.py").write_text("def f():\n    from ..train import Variable\n"
                                       "    from .. import train\n    from . import b\n")
    (pkg / "core" / "b.py").write_text("from ..train import variable\n")
    g = imports.edges(str(tmp_path))
    assert g["ndflow.core.a"] == {"ndflow.train", "ndflow.core.b"}
    assert imports.upward(g) == ["ndflow.core.a -> ndflow.train",
                                 "ndflow.core.b -> ndflow.train.variable"]
    (pkg / "train" / "variable.py").write_text("from ..core import a\n")
    g = imports.edges(str(tmp_path))
    assert imports.largest_cycle(g) == ["ndflow.core.a", "ndflow.core.b", "ndflow.train",
                                        "ndflow.train.variable"]


def _readme_layout():
    """Paths named in the "Repository layout" block of the development page
    (docs/development.md; first column; lines indented under `ndflow/` are inside it)."""
    with open(os.path.join(ROOT, "docs", "development.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("## Repository layout", 1)[1].split("```", 2)[1]
    paths = set()
    for line in block.splitlines():
        if not line.strip() or line.startswith(" " * 10):   # a description's continuation
            continue
        inside = line.startswith("  ")
        names = line.strip().split("  ")[0]
        for name in names.split(", "):
            paths.add(("ndflow/" if inside else "") + name.strip())
    return paths


def test_readme_layout_matches_the_tree():
    listed = _readme_layout()
    missing = sorted(p for p in listed if not os.path.exists(os.path.join(ROOT, p.rstrip("/"))))
    assert not missing, "docs/development.md's layout names paths that do not exist: %s" % missing
    pkg = os.path.join(ROOT, "ndflow")
    packages = {os.path.relpath(d, ROOT).replace(os.sep, "/") + "/"
                for d, _, files in os.walk(pkg) if "__init__.py" in files and d != pkg}
    top = {"ndflow/" + f for f in os.listdir(pkg) if f.endswith(".py")}
    # subpackages of numpy/ are described on numpy/'s line
    unlisted = sorted(p for p in packages | top
                      if p not in listed and not p.startswith("ndflow/numpy/"))
    assert not unlisted, "docs/development.md's layout does not list: %s" % unlisted
