"""Size and structure figures of the ndflow package, the ones tests/test_budgets.py holds down.

    python tools/metrics.py [ROOT] [-v]

Prints: files over 800 lines, the longest functions, function-level imports of ndflow's own
modules (a function-level import is right only for an optional heavy third-party package), the
largest import cycle, the `NDFLOW_*` environment variables read, the fields of
`nf.config.settings`, and the mode checks (reads of the per-thread fast/lane state) outside
`ndflow/core/`. Importable as a module (tests/test_budgets.py does).
"""
import ast
import os
import re
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import imports  # noqa: E402  (tools/imports.py: the import graph and its cycle)

FILE_LIMIT = 800
FUNCTION_LIMIT = 100
MODE_CHECK = re.compile(r"\b(GLOBAL\.fast|STATE\.fast|STATE\.lane|STATE\.taping(_np)?|st\.taping|"
                        r"st\.lane|st\.fast)\b")
SETTING = re.compile(r"NDFLOW_[A-Z0-9_]+")


def _files(root):
    for d, _, files in os.walk(os.path.join(root, "ndflow")):
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(d, f)


def file_lengths(root):
    """{relative path: lines} of every module."""
    out = {}
    for p in _files(root):
        with open(p, encoding="utf-8") as fh:
            out[os.path.relpath(p, root)] = sum(1 for _ in fh)
    return out


def function_lengths(root):
    """{"path:qualname": lines} of every function and method (nested ones on their own; a
    function's lines include its nested functions')."""
    out = {}
    for p in _files(root):
        rel = os.path.relpath(p, root)
        with open(p, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), p)

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = prefix + child.name
                    out["%s:%s" % (rel, name)] = child.end_lineno - child.lineno + 1
                    visit(child, name + ".")
                elif isinstance(child, ast.ClassDef):
                    visit(child, prefix + child.name + ".")
                else:
                    visit(child, prefix)
        visit(tree, "")
    return out


def function_level_imports(root):
    """["path:line module"] for every import of an ndflow module inside a function body."""
    mods = imports.modules(root)
    out = []
    for m, path in sorted(mods.items()):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        is_pkg = path.endswith("__init__.py")
        rel = os.path.relpath(path, root)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names if a.name.split(".")[0] == "ndflow"]
                elif isinstance(node, ast.ImportFrom):
                    base = imports._absolute(m, is_pkg, node.level, node.module)
                    names = [base] if base.split(".")[0] == "ndflow" else []
                else:
                    continue
                out.extend("%s:%d %s" % (rel, node.lineno, n) for n in names)
    # a nested function's import is inside its outer function too: count each line once
    return sorted(set(out))


def settings(root):
    """Sorted names of the NDFLOW_* environment variables the package reads."""
    found = set()
    for p in _files(root):
        with open(p, encoding="utf-8") as fh:
            found.update(SETTING.findall(fh.read()))
    return sorted(found)


def settings_fields(root):
    """Names of the fields of `nf.config.settings` (class attributes of
    ndflow/core/settings.py's `Settings` made by `_Field(...)`), read without importing ndflow."""
    path = os.path.join(root, "ndflow", "core", "settings.py")
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    out = []
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == "Settings":
            for st in cls.body:
                if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and \
                        getattr(st.value.func, "id", None) == "_Field":
                    out.extend(t.id for t in st.targets if isinstance(t, ast.Name))
    return out


def mode_checks_outside_core(root):
    """["path:line"] of reads of the per-thread mode state outside ndflow/core/."""
    out = []
    core = os.path.join(root, "ndflow", "core") + os.sep
    for p in _files(root):
        if p.startswith(core):
            continue
        with open(p, encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if MODE_CHECK.search(line.split("#", 1)[0]):
                    out.append("%s:%d" % (os.path.relpath(p, root), i))
    return out


def main(argv):
    root = next((a for a in argv if not a.startswith("-")), os.path.dirname(_HERE))
    verbose = "-v" in argv
    files = file_lengths(root)
    big = sorted(((n, p) for p, n in files.items() if n > FILE_LIMIT), reverse=True)
    funcs = function_lengths(root)
    long = sorted(((n, f) for f, n in funcs.items() if n > FUNCTION_LIMIT), reverse=True)
    fli = function_level_imports(root)
    cycle = imports.largest_cycle(imports.edges(root))
    sets = settings(root)
    modes = mode_checks_outside_core(root)
    print("lines %d in %d modules" % (sum(files.values()), len(files)))
    print("files over %d lines: %d%s" % (FILE_LIMIT, len(big), "".join(
        "\n  %5d %s" % b for b in big)))
    print("functions over %d lines: %d (longest: %s)" % (
        FUNCTION_LIMIT, len(long), "%d %s" % long[0] if long else "-"))
    if verbose:
        print("".join("  %5d %s\n" % f for f in long), end="")
    print("function-level imports of ndflow modules: %d" % len(fli))
    if verbose:
        print("".join("  %s\n" % f for f in fli), end="")
    print("largest import cycle: %d modules%s" % (len(cycle), (": " + " ".join(cycle))
                                                   if verbose or len(cycle) <= 6 else ""))
    print("settings (NDFLOW_* variables): %d: %s" % (len(sets), " ".join(sets)))
    fields = settings_fields(root)
    print("settings (nf.config.settings fields): %d: %s" % (len(fields), " ".join(fields)))
    print("mode checks outside core/: %d%s" % (len(modes), "".join(
        "\n  " + m for m in modes) if verbose else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
