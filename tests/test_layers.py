"""Layers point one way: a module imports only from its own layer or a lower one, at the top of
the file.

The layers (lowest first; `tools/imports.py` holds the table, `docs/architecture.md` explains
it): core <- primitives and `ops` <- backends (and the kernel tiers) <- interpreters (graph IR
and tracer, batching, the tape) <- numpy <- compiler (graph passes, codegen, `function`, control
flow), autograph, the user-facing transformations <- train, scipy, summary, saved_model, onnx,
distribute and the top-level helper modules <- the public face (`ndflow/__init__.py`, tour).

Every import counts, at the top of a module or inside a function. A function-level import of an
ndflow module fails unless `FUNCTION_LEVEL` names it with the reason it stays (a cycle the layer
order cannot break, or keeping `import ndflow` fast); a function-level import of an optional
heavy third-party package (numba, scipy, onnx, cupy ...) is not checked here. The packages in
`PENDING` wait for a later pass (their owners edit them in this round): each has a budget of
function-level imports that may only go down. The largest import cycle has a budget too
(`LARGEST_CYCLE`), which may only go down.

`UPWARD` lists the upward imports that exist today, each to be removed; it can only shrink: the
test fails on an upward import not in the list, and on a listed one that no longer exists (so
removing an import means removing its entry).

Counts (`python tools/imports.py`; `from P import n` is an import of the module `P.n` when
there is one, else of `P`):
    when this test was written:  modules 123, largest import cycle 69 modules, upward imports 18
    before the layers were split: modules 191, largest import cycle 31, upward imports 1 (six
                                  packages in one layer), function-level imports 665 (503 lines)
    before the NumPy layer's order: modules 194, largest import cycle 13 (the NumPy layer's own
                                 modules), upward imports 1, function-level imports 414 lines
                                 (177 pairs; numpy 125, primitives 44)
    before the primitives' cycle was cut: modules 200, largest import cycle 6 (primitives: _util,
                                 cumulative, elementwise, indexing, reduction, shape), upward
                                 imports 1, function-level imports 31 lines (19 pairs;
                                 numpy 0, primitives 5)
    now:                         modules 201, largest import cycle 3, upward imports 1,
                                 function-level imports 17 lines (15 pairs; numpy 0,
                                 primitives 1)
The NumPy layer's modules import one way (their order: docs/architecture.md). The cycle left is
the primitives' rules at the bottom of the family: elementwise, shape and sums bind each other's
primitives in their rules (add's gradient sums to undo broadcasting, the sum's gradient
broadcasts and adds, broadcast_to's gradient sums), so they import one another as modules at the
top and look the names up when a rule runs (primitives/sums.py). _util binds no primitive; the
reductions other than the sum, and the primitives whose rules gather (concatenate, diagonal,
repeat, in indexing.py), sit above the three.
"""
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tools/imports.py, loaded from its path (tools/ is not a package, and not on sys.path)
_spec = importlib.util.spec_from_file_location("_ndflow_tools_imports",
                                               os.path.join(ROOT, "tools", "imports.py"))
imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(imports)

UPWARD = {
    # gradient rules of the decompositions composed with the NumPy layer (tnp.matmul, where,
    # conj ...) rather than primitives: `ndflow.ops` (or primitive binds) would remove it
    "ndflow.primitives.linalg_decomp -> ndflow.numpy",
}

# Function-level imports of ndflow modules that stay, and why.
FUNCTION_LEVEL = {
    "ndflow.primitives.linalg_decomp -> ndflow.numpy":
        "the upward import UPWARD lists (the decompositions' rules compose with the NumPy "
        "layer, which imports the primitives at the top)",
    "ndflow.autograph.conversion -> ndflow.autograph.operators":
        "a cycle by design: converted code calls the operators, whose `call` converts the "
        "functions it is handed",
    "ndflow.graph.passes -> ndflow.graph.control":
        "a cycle: control flow imports the code generator (which installs the body compiler "
        "and runs the passes); the pass inlining constant branches needs control's primitives",
    "ndflow.graph.ir -> ndflow.graph.dot":
        "a cycle: `Graph.to_dot` renders with graph/dot.py, which formats parameters with the "
        "IR's own printer",
    "ndflow.backends.device -> ndflow.backends.cupy_backend":
        "`import ndflow` stays fast: the GPU backend brings the CUDA kernel tier (and the "
        "kernel package) only when a GPU is asked for",
    # the first use of a common name stays fast (measured in a fresh process: at the top, these
    # made the first nf.Variable ~9x and the first vectorized_map ~8x slower, loading the tape,
    # the kernel package and the compiler they do not use)
    "ndflow.train.variable -> ndflow.graph.kernels.pool":
        "first use: only compiled steps ask for NumPy's error state, the kernel package is "
        "loaded then",
    "ndflow.train -> ndflow.train.checkpoint":
        "first use: nf.Variable without checkpoints (optimizers, the tensor file format)",
    "ndflow.compat -> ndflow.autodiff.functional":
        "first use: nf.Variable and nf.math import compat; py_function's numpy_function "
        "brings the tape",
    "ndflow.vectorize.mapping -> ndflow.graph.control":
        "first use: vectorized_map and vmap need no control flow (which brings the compiler); "
        "a traced map_fn is a scan",
}

# Packages whose function-level imports wait for a later pass: the most they may have
# ("importer -> imported" pairs, `python tools/imports.py . -v`); lower a number when you
# remove some, never raise it.
PENDING = {
    "ndflow.graph.kernels": 6,
}

# modules in the largest import cycle (`python tools/imports.py`): lower it when a change breaks
# the cycle further, never raise it
LARGEST_CYCLE = 3


def _pending(pair):
    importer = pair.split(" -> ")[0]
    return next((p for p in PENDING if importer == p or importer.startswith(p + ".")), None)


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


def test_function_level_imports_are_listed():
    found = imports.function_level(ROOT)
    new = sorted(p for p in found if _pending(p) is None and p not in FUNCTION_LEVEL)
    assert not new, ("imports of ndflow modules inside functions (docs/architecture.md, "
                     "'Layers'): import at the top of the module; a cycle the layer order "
                     "cannot break goes into FUNCTION_LEVEL with its reason:\n  "
                     + "\n  ".join(new))
    gone = sorted(set(FUNCTION_LEVEL) - set(found))
    assert not gone, ("these function-level imports no longer exist: remove them from "
                      "FUNCTION_LEVEL in tests/test_layers.py:\n  " + "\n  ".join(gone))
    for package, budget in PENDING.items():
        n = sum(1 for p in found if _pending(p) == package)
        assert n <= budget, (f"{package} has {n} function-level imports of ndflow modules, more "
                             f"than its budget of {budget}: import at the top of the module")


def test_largest_import_cycle_does_not_grow(graph):
    cycle = imports.largest_cycle(graph)
    assert len(cycle) <= LARGEST_CYCLE, (
        f"the largest import cycle has {len(cycle)} modules, the budget is {LARGEST_CYCLE} (a "
        f"module imports one that imports it back, directly or not; move the code both need "
        f"into a lower module): {' '.join(cycle)}")


def test_the_numpy_layer_imports_one_way(graph):
    # its modules are ordered (docs/architecture.md): none imports one that imports it back
    def numpy_layer(m):
        return m == "ndflow.numpy" or m.startswith("ndflow.numpy.")
    inside = {m: {t for t in ts if numpy_layer(t)} for m, ts in graph.items() if numpy_layer(m)}
    cycle = imports.largest_cycle(inside)
    assert len(cycle) <= 1, ("modules of the NumPy layer import each other (move what both "
                             "need into the lower one): " + " ".join(cycle))


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
    assert imports.function_level(str(tmp_path)) == ["ndflow.core.a -> ndflow.core.b",
                                                     "ndflow.core.a -> ndflow.train"]
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


# the load of one module of the primitives' cycle, first, with the packages' __init__ files left
# out (they fix one order; a module imported from elsewhere may come first one day)
_LOAD_FIRST = """
import importlib, os, sys, types
root = os.path.join(sys.argv[1], "ndflow")
for name, path in (("ndflow", root), ("ndflow.primitives", os.path.join(root, "primitives"))):
    pkg = types.ModuleType(name)
    pkg.__path__ = [path]
    sys.modules[name] = pkg
importlib.import_module("ndflow.primitives." + sys.argv[2])
from ndflow.primitives import elementwise as E, shape as S, sums
assert E.add_p.vjp and S.broadcast_to_p.vjp and sums.reduce_sum_p.vjp
"""


@pytest.mark.parametrize("first", ["elementwise", "shape", "sums"])
def test_the_primitives_cycle_loads_in_any_order(first):
    """elementwise, shape and sums import one another at the top (their rules bind each other's
    primitives): each must be importable first, which `from .sums import unbroadcast` in shape.py
    (a name taken from a module still loading) would break for one order."""
    r = subprocess.run([sys.executable, "-c", _LOAD_FIRST, ROOT, first],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "importing ndflow.primitives.%s first fails:\n%s" % (first, r.stderr)
