"""ndflow's module import graph: every import (top-level and inside functions) between ndflow
modules, each module's layer, the upward imports and the largest import cycle.

    python tools/imports.py [ROOT] [-v]     counts; -v also lists the cycle, the upward edges and
                                            the function-level imports (importer -> imported)

`tests/test_layers.py` uses the same functions, so the numbers here are the ones it enforces.
"""
import ast
import os
import sys

# Layers, lowest first: a module may import from its own layer or a lower one (docs/architecture.md).
# A package not named here (a new one) has no layer, and tests/test_layers.py fails until it gets one.
# A module is placed by the longest prefix that names it, so one package can span two layers:
# graph/ holds the interpreter's IR and tracer (below the NumPy layer, which traces shapes with
# it) and the compiler (above it); autodiff/ holds the tape (below) and the user-facing
# transformations that convert Python data with the NumPy API (forward mode, custom_gradient,
# numpy_function: above).
LAYERS = [
    ("core", ["ndflow.core"]),
    ("primitives", ["ndflow.primitives", "ndflow.ops"]),
    # the kernel tiers run fused regions on the backends' buffers; graph.debug is the parsed
    # NDFLOW_DEBUG switch they read (it imports nothing of ndflow)
    ("backends", ["ndflow.backends", "ndflow.graph.kernels", "ndflow.graph.debug"]),
    ("interpreters", ["ndflow.graph.ir", "ndflow.graph.dot", "ndflow.graph.trace",
                      "ndflow.graph.static", "ndflow.vectorize", "ndflow.autodiff"]),
    ("numpy", ["ndflow.numpy"]),
    ("compiler", ["ndflow.graph", "ndflow.autograph", "ndflow.autodiff.forward",
                  "ndflow.autodiff.functional", "ndflow.vectorize.mapping"]),
    ("libraries", ["ndflow.train", "ndflow.scipy", "ndflow.summary", "ndflow.saved_model",
                   "ndflow.onnx", "ndflow.distribute", "ndflow.utils", "ndflow.compat",
                   "ndflow.config", "ndflow.debugging", "ndflow.errors", "ndflow.losses",
                   "ndflow.nn", "ndflow.random", "ndflow.test", "ndflow.math",
                   "ndflow.array_ops", "ndflow._hints"]),
    ("api", ["ndflow", "ndflow.tour", "ndflow.examples"]),
]


def layer_of(module):
    """Index into LAYERS of the longest prefix naming `module`'s package, or None."""
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    return found


def modules(root):
    """Dotted module name -> file path, for every .py file under ROOT/ndflow."""
    mods = {}
    for d, _, files in os.walk(os.path.join(root, "ndflow")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                if name.endswith(".__init__"):
                    name = name[:-len(".__init__")]
                mods[name] = path
    return mods


def _absolute(module, is_pkg, level, name):
    if level == 0:
        return name
    parts = module.split(".")
    base = parts if is_pkg else parts[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _owner(target, mods):
    while target and target not in mods:
        target = target.rpartition(".")[0]
    return target


def _imports(root):
    """(importer, imported ndflow module, line, inside a function) for every import in every
    module. `from P import n` imports the module P.n when there is one, else (a name defined in
    P) the module P."""
    mods = modules(root)
    found = []
    for m, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        is_pkg = path.endswith("__init__.py")
        work = [(tree, False)]
        while work:
            node, in_function = work.pop()
            for child in ast.iter_child_nodes(node):
                targets = []
                if isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = _absolute(m, is_pkg, child.level, child.module)
                    targets = [base + "." + a.name if base + "." + a.name in mods else base
                               for a in child.names]
                for t in targets:
                    t = _owner(t, mods)
                    if t and t != m:
                        found.append((m, t, child.lineno, in_function))
                work.append((child, in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))))
    return mods, found


def edges(root):
    """importer -> set of imported ndflow modules; imports anywhere in the file count."""
    mods, found = _imports(root)
    out = {m: set() for m in mods}
    for m, t, _, _ in found:
        out[m].add(t)
    return out


def function_level(root):
    """Sorted "importer -> imported" strings for imports of ndflow modules inside functions
    (one per pair, however many functions repeat it)."""
    return sorted({"%s -> %s" % (m, t) for m, t, _, inside in _imports(root)[1] if inside})


def upward(graph):
    """Sorted "importer -> imported" strings for imports into a higher layer."""
    return sorted("%s -> %s" % (a, b) for a, bs in graph.items() for b in bs
                  if layer_of(a) is not None and layer_of(b) is not None
                  and layer_of(b) > layer_of(a))


def largest_cycle(graph):
    """The largest strongly connected component (modules that all import each other, directly
    or not), as a sorted list."""
    index, low, stack, on, best, counter = {}, {}, [], set(), [], [0]

    def visit(v):   # Tarjan, iterative so deep graphs do not hit the recursion limit
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop(); on.discard(w); comp.append(w)
                        if w == node:
                            break
                    if len(comp) > len(best[0] if best else []):
                        best[:] = [comp]

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(best[0]) if best else []


def main(argv):
    root = next((a for a in argv if not a.startswith("-")), ".")
    graph = edges(root)
    cycle, up = largest_cycle(graph), upward(graph)
    print("modules %d, largest import cycle %d, upward imports %d, function-level imports %d"
          % (len(graph), len(cycle), len(up), len(function_level(root))))
    if "-v" in argv:
        print("cycle:", " ".join(cycle))
        print("\n".join(up))
        print("function-level:\n" + "\n".join(function_level(root)))


if __name__ == "__main__":
    main(sys.argv[1:])
