"""Every elementwise primitive fuses, and declares its scalar expression once.

- every primitive with the `elementwise` trait is fusible (tier 0 calls its kernel inside a
  region), and a fused region holding it gives the eager bits and warnings on its op-table
  samples and on special values (NaN, +-0, +-inf, extremes, subnormals, empty, 0-d), on
  tier 0's plain, large (`out=` into pooled buffers) and blocked (chunk by chunk) paths;
- the scalar expressions parse, and the numba and CUDA renderings come from them alone;
- tier 1 computes the functions it newly renders bit for bit (with numba);
- primitives that behave elementwise carry the trait (an audit over the registry)."""
import importlib.util
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.primitive import REGISTRY, Aval
from ndflow.graph import fusion
from ndflow.graph.ir import Node, Var
from ndflow.graph.kernels import numpy_tier, numba_tier, cuda_tier, planner, kernel_for, Program, Op
from ndflow.backends.base import interpret
from ndflow.primitives import elementwise as E
from ndflow.primitives.scalar import Scalar, FUNCTIONS

import elementwise_cases as C

_PRIMS = C.elementwise_primitives()


def _cases():
    for p in _PRIMS:
        if p.returns_view or p.multiple_results:
            continue
        for dts in C.dtypes(p):
            for params in C.PARAMS.get(p.name, [{}]):
                yield pytest.param(p, dts, params, id="%s-%s%s" % (
                    p.name, "-".join(d.name for d in dts),
                    "".join("-%s=%s" % kv for kv in params.items())))


def _node(p, dts, params):
    ins = [Var((3,), d) for d in dts]
    outs = p.abstract(*[Aval((3,), d) for d in dts], **params)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return Node(p, ins, params, [Var(a.shape, a.dtype) for a in outs], None)


def test_every_elementwise_primitive_fuses_on_tier_0():
    """By trait: an elementwise primitive is fusible; the only ones left out say why (a view of
    the operand, several results), and nothing elementwise is left out for another reason."""
    assert len(_PRIMS) >= 90
    for p in _PRIMS:
        dts = C.dtypes(p)[0]
        why = fusion.why_not_fusible(_node(p, dts, C.PARAMS.get(p.name, [{}])[0]))
        if p.returns_view:
            assert "returns a view" in why, p
        elif p.multiple_results:
            assert "several results" in why, p
        else:
            assert why is None, (p, why)


def _run(prog, operands):
    """(fused result, warnings) and (eager result, warnings) of `prog` on `operands`; a
    result is (error type, message) where the call raises."""
    k = kernel_for(prog)
    outs = []
    for f in (lambda: k(*operands), lambda: interpret(prog, operands)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = np.asarray(f())
            except Exception as e:
                r = (type(e), str(e))
        outs.append((r, sorted({(x.category.__name__, str(x.message)) for x in w})))
    return outs


def _check(prog, operands, what):
    (got, gw), (want, ww) = _run(prog, operands)
    if isinstance(want, tuple):
        assert got == want, (what, got, want)
    else:
        assert (got.dtype, got.shape) == (want.dtype, want.shape), what
        assert got.tobytes() == want.tobytes(), (what, got, want)
    assert gw == ww, (what, gw, ww)


@pytest.mark.parametrize("p,dts,params", list(_cases()))
def test_a_fused_region_holding_it_gives_the_eager_bits(p, dts, params, nf_settings):
    rng = np.random.default_rng(0)
    for ops in C.sample_operands(p, dts, rng):
        _check(C.program(p, ops, params), ops, "op-table sample %s" % [o.shape for o in ops])
    special = C.special_operands(dts)
    n = special[0].size
    if p.scalar is None and n > 512:
        # a primitive without a scalar expression runs its own kernel in the region, as
        # eagerly (its values are checked against SciPy/NumPy by its own tests): here only
        # the region's handling matters, on an even subset of the grid (betainc's grid of
        # 4096 triples costs its continued fraction seconds per call)
        special = [o[::-(-n // 512)] for o in special]
        n = special[0].size
    sizes = [special, [o[:1].reshape(()) for o in special], [o[:0] for o in special]]
    if n < 5000:     # (a grid of 5000 or more is already the large path's size)
        sizes.append([np.tile(o, -(-5000 // n)) for o in special])
    for ops in sizes:
        for tail in (False, True):
            _check(C.program(p, ops, params, tail), ops, "special %d, tail %s" % (
                ops[0].size, tail))
    # every size on tier 0's large path (pooled `out=` buffers), then blocked in small chunks;
    # the values were all checked above, so a large grid (three operands) gives these routes
    # an even subset of at most 2048 of its elements
    if n > 2048:
        special = [o[::-(-n // 2048)] for o in special]
    nf_settings(large_min=1)
    for tail in (False, True):
        _check(C.program(p, special, params, tail), special, "large path, tail %s" % tail)
    nf_settings(block_min=1, block_bytes=64)
    prog = C.program(p, special, params, tail=True)
    assert planner.Tier0Plan(prog, [s for s, _ in prog.ins], numpy_tier.blockable(prog)) \
        .route is planner.Route.T0_BLOCKED
    _check(prog, special, "blocked")


def test_a_graph_with_any_elementwise_op_is_one_region():
    """The brief's example: sinh(x) * y + 1 was three nodes; now one fused region, and the
    compiled tiers say which op keeps it from them."""
    f = nf.function(lambda x, y: tnp.sinh(x) * y + 1)
    x, y = tnp.asarray(np.linspace(-2, 2, 7)), tnp.asarray(np.linspace(1, 3, 7))
    cf = f.get_concrete_function(x, y)
    assert [n.prim.fused for n in cf.graph.nodes] == [True]
    np.testing.assert_array_equal(f(x, y).numpy(), np.sinh(x.numpy()) * y.numpy() + 1)
    prog = fusion.fused_kernels(cf.graph)[0].prog
    why = numba_tier.why_not(prog, False)
    assert "'sinh'" in why and "C library" in why
    assert cuda_tier.why_not(prog) is None
    g = nf.function(lambda x: tnp.exp(nf.scipy.special.gammaln(x)) + 1)
    gprog = fusion.fused_kernels(g.get_concrete_function(x).graph)[0].prog
    for why in (numba_tier.why_not(gprog, False), cuda_tier.why_not(gprog)):
        assert "'gammaln' has no scalar expression" in why


def test_views_are_not_fused():
    """stop_gradient (elementwise, a view of its operand) ends a region: fused, a large region
    reused its operand's temporary while the view still named it (wrong values)."""
    from ndflow.primitives.misc import stop_gradient_p

    def f(x, y):
        return stop_gradient_p(tnp.exp(x)) + y * 3.0
    x, y = np.linspace(0, 1, 10000), np.linspace(1, 2, 10000)
    got = nf.function(f)(tnp.asarray(x), tnp.asarray(y)).numpy()
    np.testing.assert_array_equal(got, np.exp(x) + y * 3.0)


# ------------------------------------------------------------------ one declaration
def test_every_scalar_expression_parses():
    for p in _PRIMS:
        if p.scalar is not None:
            assert set(p.scalar.functions()) <= set(FUNCTIONS), p
            used = {n[1] for n in _operands(p.scalar.tree)}
            assert used <= set(range(C.arity(p))), p
    with pytest.raises(ValueError, match="not in the vocabulary"):
        Scalar("x[0]").tree
    with pytest.raises(ValueError, match="no function frobnicate"):
        Scalar("frobnicate(x)").tree


def _operands(node):
    if node[0] == "operand":
        yield node
    elif node[0] == "call":
        for a in node[2]:
            yield from _operands(a)


def test_renderings_come_from_the_declaration(monkeypatch):
    """Change a primitive's declaration and both compiled tiers write the new expression: the
    tiers hold no per-primitive knowledge."""
    prog = Program([((4,), np.float64), ((4,), np.float64)],
                   [Op(E.add_p, (0, 1), {}, (4,), np.float64)], [2], (4,))
    assert "+" in numba_tier._body(prog, ["a", "b"], False)[0]
    assert "+" in cuda_tier._op_expr(prog.ops[0], ["a", "b"], [np.dtype("f8")] * 2)
    monkeypatch.setattr(E.add_p, "scalar", Scalar("maximum(x, y) - 1"))
    line = numba_tier._body(prog, ["a", "b"], False)[0]
    assert line == "t0 = np.float64((_maximum(a, b) - np.float64(1.0)))", line
    c = cuda_tier._op_expr(prog.ops[0], ["a", "b"], [np.dtype("f8")] * 2)
    assert "? ((double)a) : ((double)b)" in c and "((double)1.0)" in c, c
    monkeypatch.setattr(E.add_p, "scalar", None)
    assert "no scalar expression" in numba_tier.why_not(prog, False)
    assert "no scalar expression" in cuda_tier.why_not(prog)


def test_every_declaration_renders_or_says_why():
    """Each tier writes every declared expression in every dtype the op table tests, or
    refuses with a reason (never an error of its own)."""
    for p in _PRIMS:
        if p.scalar is None:
            continue
        for dts in C.dtypes(p):
            for params in C.PARAMS.get(p.name, [{}]):
                ops = C.special_operands(dts)
                prog = C.program(p, ops, params)
                for why in (numba_tier.why_not(prog, False), numba_tier.why_not(prog, True),
                            cuda_tier.why_not(prog)):
                    assert why is None or p.name in why or "dtype" in why, (p, dts, why)


# ------------------------------------------------------------------ tier 1
needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed")
_TIER1 = [  # (function, operand dtypes): what tier 1 writes besides the templates it had
    (lambda a, b: (a & b) | (a ^ b), ("int32", "int32")),
    (lambda a, b: (a & b) ^ (a | b), ("uint8", "uint8")),
    (lambda a, b: (a & b) | ~(a ^ b), ("bool", "bool")),
    (lambda a, b: ~a + (b ^ a), ("int64", "int64")),
    (lambda a, b: tnp.where(tnp.signbit(a), b, a) * 1.0, ("float64", "float64")),
    (lambda a, b: tnp.where(tnp.signbit(a) | tnp.signbit(b), 1.0, 2.0) + a,
     ("float32", "float32")),
    (lambda a, b: (a + b) & (a * b) | tnp.logical_not(a), ("bool", "bool")),
    (lambda a, b: tnp.conj(a) * b + tnp.full_like(a, np.nan) * 0 + tnp.full_like(b, -0.0),
     ("float64", "float64")),
    (lambda a, b: tnp.copy(a * b) - tnp.full_like(a, -np.inf) + tnp.zeros_like(b),
     ("float32", "float32")),
]


def _values(dt, n):
    v = C.special_values(dt)
    return np.resize(np.random.default_rng(3).permutation(np.resize(v, n)), n)


@needs_numba
@pytest.mark.parametrize("k", range(len(_TIER1)))
def test_tier1_renders_the_new_functions_bit_for_bit(k, nf_settings):
    nf_settings(numba="sync")
    fn, dts = _TIER1[k]
    n = nf.config.settings.numba_min * 2
    args = [_values(d, n) for d in dts]
    f = nf.function(fn)
    with np.errstate(all="ignore"):
        want = fn(*[tnp.asarray(a) for a in args]).numpy()
        for _ in range(4):
            got = f(*[tnp.asarray(a) for a in args]).numpy()
    ks = fusion.fused_kernels(f.get_concrete_function(*[tnp.asarray(a) for a in args]).graph)
    assert len(ks) == 1 and ks[0].tier() == 1, [getattr(x, "tier1_unavailable", None)
                                                 for x in ks]
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


# ------------------------------------------------------------------ the trait is complete
# primitives that pass the probe below but are not elementwise computations
_NOT_ELEMENTWISE = {
    "own_result": "a copy only where memory is shared (memory planning, after fusion)",
}


def _looks_elementwise(p):
    """Whether `p`, called without parameters on float or integer operands, is a broadcasting
    map whose result elements follow their operands' positions (shape rule and kernel)."""
    if p.effect or p.fused or p.impl is None:
        return False
    rng = np.random.default_rng(1)
    perm = np.random.default_rng(2).permutation(5)
    for k in (1, 2, 3):
        for kinds in ("f" * k, "i" * k, "f" + "i" * (k - 1)):
            ops = [rng.uniform(0.5, 1.5, (4, 5)) if c == "f" else rng.integers(1, 9, (4, 5))
                   for c in kinds]
            ops[-1] = ops[-1][0]                     # broadcast along the first axis
            if _maps_positions(p, ops, perm):
                return True
    return False


def _maps_positions(p, ops, perm):
    try:
        a = p.abstract(*[Aval(o.shape, o.dtype) for o in ops])
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = p.impl(*ops)
            rp = p.impl(*[o[..., perm] for o in ops])
    except Exception:
        return False
    shape = np.broadcast_shapes(*[o.shape for o in ops])
    avals = a if isinstance(a, tuple) else (a,)
    rs, rps = (r, rp) if p.multiple_results else ((r,), (rp,))
    return all(tuple(v.shape) == shape for v in avals) and all(
        np.shape(x) == shape and np.array_equal(np.asarray(x)[..., perm], y, equal_nan=True)
        for x, y in zip(rs, rps))


def test_primitives_that_behave_elementwise_are_declared():
    found = [p.name for p in REGISTRY if not p.elementwise and _looks_elementwise(p)]
    assert sorted(found) == sorted(_NOT_ELEMENTWISE), found
    # the probe recognises the declared ones that take no parameters
    missed = [p.name for p in _PRIMS if p.name not in C.PARAMS and not _looks_elementwise(p)]
    assert not missed, missed
