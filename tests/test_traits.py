"""Traits, not names: what the compiler and the memory planner need to know about a primitive
is declared on it (`returns_view`, `elementwise`, `effect`, `blas`, `fused`,
`variable_access`, `reorderable`), and no pass identifies a primitive by its name string."""
import ast
import pathlib

import numpy as np

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.primitive import REGISTRY, Primitive
from ndflow.primitives import elementwise as E, shape as S, linalg as L, indexing as I, misc as M
from ndflow.graph import fusion, memory

GRAPH = pathlib.Path(nf.__file__).parent / "graph"
_NAMES = {p.name for p in REGISTRY}


# The kernel tiers' tables of the scalar vocabulary (primitives/scalar.py: "exp(x)",
# "maximum(x, y)"): how each tier spells a function of expression text; they never identify a
# primitive (the expressions are declared on the primitives). test_vocabulary_tables_are_
# keyed_by_functions checks that their keys are the vocabulary's.
_TEMPLATE_VOCABULARY = {"FUNCTIONS", "_OWN", "_INTRINSIC", "_HELPERS", "_OPERATORS", "_REFUSED",
                        "_SPELLING", "ULPS"}


def _name_uses(tree):
    """(line, text) of every comparison that involves a `.name` attribute, every
    `.name.startswith(...)`, and every literal collection holding two or more primitive names
    (other than the template vocabulary)."""
    vocab = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in
                                                _TEMPLATE_VOCABULARY for t in node.targets):
            vocab.update(id(n) for n in ast.walk(node.value))
    for node in ast.walk(tree):
        if id(node) in vocab:
            continue
        if isinstance(node, ast.Compare):
            sides = [node.left] + list(node.comparators)
            if any(isinstance(s, ast.Attribute) and s.attr == "name" for s in sides):
                yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("startswith", "endswith") \
                and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "name":
            yield node.lineno, ast.unparse(node)
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            hits = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in _NAMES]
            if len(hits) >= 2:
                yield node.lineno, ast.unparse(node)[:80]


def test_no_pass_compares_primitive_names():
    found = []
    for f in sorted(GRAPH.rglob("*.py")):
        for line, text in _name_uses(ast.parse(f.read_text())):
            found.append("%s:%d: %s" % (f.relative_to(GRAPH.parent), line, text))
    assert not found, "primitives identified by name (declare a trait instead):\n" + \
        "\n".join(found)


def test_vocabulary_tables_are_keyed_by_functions():
    """The tables the name check leaves alone hold functions of the scalar vocabulary (or
    mathlib's), not primitives."""
    from ndflow.primitives.scalar import FUNCTIONS
    from ndflow.graph.kernels import numba_scalar as N, cuda_tier, mathlib, contract
    tables = [N._OWN, N._INTRINSIC, N._HELPERS, N._OPERATORS, N._REFUSED, cuda_tier._SPELLING,
              contract.ULPS]
    for t in tables:
        assert set(t) <= set(FUNCTIONS), set(t) - set(FUNCTIONS)
    assert set(mathlib.FUNCTIONS) <= set(FUNCTIONS)


def test_the_name_check_catches_name_lists():
    src = ("_BLAS = ('matmul', 'einsum')\n"
           "def f(n):\n    return n.prim.name == 'matmul' or n.prim.name.startswith('fused{')\n")
    assert len(list(_name_uses(ast.parse(src)))) == 3


def test_traits_are_declared_where_primitives_are():
    for p in (S.reshape_p, S.transpose_p, S.broadcast_to_p, I.getitem_p, E.real_p, E.imag_p,
              M.stop_gradient_p, L.einsum_p):
        assert p.returns_view, p
    for p in (E.add_p, E.exp_p, E.copy_p, E.convert_p, L.matmul_p, E.select_p):
        assert not p.returns_view, p
    assert L.matmul_p.blas and L.einsum_p.blas and not E.add_p.blas
    assert E.add_p.elementwise and not L.matmul_p.elementwise
    assert E.add_p.reorderable
    from ndflow.train.variable import read_var_p, assign_var_p
    assert read_var_p.variable_access == "read" and assign_var_p.variable_access == "write"
    assert not read_var_p.reorderable
    assert Primitive.__init__.__defaults__ is not None


def test_fused_nodes_carry_the_trait():
    f = nf.function(lambda x: tnp.exp(x) * 2.0 + 1.0)
    cf = f.get_concrete_function(tnp.ones(8))
    fused = [n for n in cf.graph.nodes if n.prim.fused]
    assert fused and fusion.fused_kernels(cf.graph) == [n.prim.impl for n in fused]


def test_memory_planner_reads_traits():
    # a consumer that makes a view keeps its input alive: never given away
    class N:
        def __init__(self, prim):
            self.prim = prim
            self.params = {}
    assert not memory._reads_only(N(S.reshape_p))
    assert memory._reads_only(N(L.matmul_p))
    from ndflow.train.variable import assign_var_p
    assert not memory._reads_only(N(assign_var_p))


def test_blas_trait_drives_the_fused_kernels_threads():
    f = nf.function(lambda a, b: tnp.exp(tnp.matmul(a, b)) * 2.0 + 1.0)
    cf = f.get_concrete_function(tnp.ones((4, 4)), tnp.ones((4, 4)))
    ks = fusion.fused_kernels(cf.graph)
    assert ks and all(not k.parallel for k in ks)
    g = nf.function(lambda a: tnp.exp(a) * 2.0 + 1.0).get_concrete_function(tnp.ones(4))
    assert all(k.parallel for k in fusion.fused_kernels(g.graph))
    np.testing.assert_allclose(f(tnp.ones((4, 4)), tnp.ones((4, 4))).numpy(),
                               np.exp(np.full((4, 4), 4.0)) * 2 + 1)
