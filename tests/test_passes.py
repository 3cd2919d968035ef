"""Graph passes, tested on the STRUCTURE of the graphs they return (which primitives remain, what
became a constant), with the verifier run after every pass and the generated code's results
compared before and after."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import passes as P
from ndflow.graph import passes
from ndflow.graph.codegen import generate
from ndflow.graph.ir import verify, GraphError, Graph, Node, Var
from ndflow.graph.trace import trace_body, close
from ndflow.primitives import elementwise as E


def body_graph(fn, *avals):
    """Trace `fn` as a control-flow body: every operation, even on constants, is a node."""
    t, leaves, _ = trace_body(fn, [(tuple(s), np.dtype(d)) for s, d in avals], "t")
    return close(t, leaves).graph


def prims(g):
    return [n.prim.name for n in g.nodes]


def run(g, *args):
    return [np.asarray(o) for o in generate(g)[0](*args)]


def apply(p, g, *args):
    """Apply pass `p`, verify, and check that the results did not change."""
    verify(g)
    out = p(g)
    verify(out, p.__name__)
    if args is not None:
        for a, b in zip(run(g, *args), run(out, *args)):
            np.testing.assert_array_equal(a, b)
    return out


X3 = ((3,), np.float64)
x3 = np.array([0.5, -1.0, 2.0])


# ------------------------------------------------------------------ DCE / CSE
def test_dead_code_is_removed_but_effects_stay():
    def f(x):
        tnp.exp(x)                         # unused
        tnp.random.normal(size=(3,))       # unused, but a draw advances the generator
        return x * 2
    g = body_graph(f, X3)
    assert "exp" in prims(g)
    out = P.dead_code_elimination(g)
    verify(out)
    assert "exp" not in prims(out) and "random_draw" in prims(out)


def test_cse_merges_pure_nodes_not_random_draws():
    def f(x):
        a = tnp.sin(x) + tnp.sin(x)
        r = tnp.random.normal(size=(3,)) + tnp.random.normal(size=(3,))
        return a, r
    g = body_graph(f, X3)
    out = P.common_subexpression_elimination(g)
    verify(out)
    assert prims(out).count("sin") == 1
    assert prims(out).count("random_draw") == 2


def test_cse_merges_equal_small_constants():
    g = body_graph(lambda x: (x * tnp.asarray(2.0), x * tnp.asarray(2.0)), X3)
    out = apply(P.common_subexpression_elimination, g, x3)
    assert len(out.consts) == 1 and prims(out).count("multiply") == 1


# ------------------------------------------------------------------ constant folding
def test_constant_folding_evaluates_constant_subgraphs():
    def f(x):
        k = tnp.exp(tnp.asarray(1.0)) * 3.0       # constants only
        return tnp.sin(x * k)
    g = body_graph(f, X3)
    assert "exp" in prims(g)
    out = apply(P.constant_folding, g, x3)
    assert prims(out) == ["multiply", "sin"]
    np.testing.assert_allclose(run(out, x3)[0], np.sin(x3 * np.exp(1.0) * 3.0))


def test_constant_folding_never_folds_random_draws_or_their_uses():
    g = body_graph(lambda x: x + tnp.random.normal(size=()) * 2.0, X3)
    out = P.constant_folding(g)
    verify(out)
    assert prims(out) == prims(g)


def test_constant_folding_keeps_large_broadcasts_and_graph_outputs():
    g = body_graph(lambda x: (tnp.broadcast_to(tnp.asarray(1.0), (500, 500)),
                              x + tnp.asarray(2.0) * 2.0), X3)
    out = P.constant_folding(g)
    verify(out)
    assert "broadcast_to" in prims(out)          # 250000 elements from one: not materialized
    g2 = body_graph(lambda x: tnp.asarray(2.0) * 3.0, X3)
    assert prims(P.constant_folding(g2)) == ["multiply"]   # the result is returned: fresh per call


def test_constant_folding_leaves_failing_kernels_for_run_time():
    g = body_graph(lambda x: x + tnp.asarray([1.0, 2.0, 3.0])[tnp.asarray([5])], X3)
    n = len(g.nodes)
    out = P.constant_folding(g)
    verify(out)
    assert len(out.nodes) == n


# ------------------------------------------------------------------ algebraic simplification
@pytest.mark.parametrize("expr", [lambda x: x * 1.0, lambda x: 1.0 * x, lambda x: x + -0.0,
                                  lambda x: -0.0 + x, lambda x: x - 0.0, lambda x: x / 1.0,
                                  lambda x: x * tnp.ones(3)],
                         ids=["x*1", "1*x", "x+(-0)", "(-0)+x", "x-0", "x/1", "x*ones"])
def test_arithmetic_identities_vanish(expr):
    g = body_graph(lambda x: tnp.exp(expr(x)), X3)
    out = apply(P.algebraic_simplification, g, x3)
    assert prims(out) == ["exp"]


@pytest.mark.parametrize("expr", [lambda x: x + 0.0, lambda x: 0.0 + x, lambda x: x - -0.0,
                                  lambda x: x + tnp.zeros(3)],
                         ids=["x+0", "0+x", "x-(-0)", "x+zeros"])
def test_identities_that_are_not_exact_under_ieee_stay(expr):
    # -0.0 + (+0.0) is +0.0: the sum is not x for x = -0.0
    g = body_graph(lambda x: tnp.exp(expr(x)), X3)
    out = apply(P.algebraic_simplification, g, x3)
    assert prims(out) != ["exp"]
    x = np.array([-0.0, 1.0, -2.0])
    got = nf.function(lambda x: expr(x * 2.0))(tnp.asarray(x)).numpy()
    want = expr(tnp.asarray(x) * 2.0).numpy()
    assert not np.signbit(got[0]) and not np.signbit(want[0])
    np.testing.assert_array_equal(got, want)


def test_identities_that_change_shape_stay():
    g = body_graph(lambda x: (tnp.exp(x * tnp.ones((2, 3))), tnp.exp(x + tnp.zeros((2, 3)))),
                   X3)
    out = apply(P.algebraic_simplification, g, x3)
    assert prims(out).count("multiply") == 1 and prims(out).count("add") == 1


def test_identity_on_a_graph_output_needs_a_fresh_operand():
    # returning x itself would let the caller change the argument through the result
    g = body_graph(lambda x: x * 1.0, X3)
    assert prims(P.algebraic_simplification(g)) == ["multiply"]
    g = body_graph(lambda x: tnp.reshape(x, (3, 1)) * 1.0, X3)     # a view of x
    assert prims(P.algebraic_simplification(g)) == ["reshape", "multiply"]
    g = body_graph(lambda x: (lambda e: (e, e * 1.0))(tnp.exp(x)), X3)  # two outputs, one buffer
    assert prims(P.algebraic_simplification(g)) == ["exp", "multiply"]
    g = body_graph(lambda x: tnp.exp(x) * 1.0, X3)
    assert prims(apply(P.algebraic_simplification, g, x3)) == ["exp"]


def test_transposes_compose_and_identity_transposes_vanish():
    a = np.arange(24.0).reshape(2, 3, 4)
    g = body_graph(lambda x: tnp.exp(tnp.transpose(tnp.transpose(x, (1, 0, 2)), (1, 0, 2))),
                   ((2, 3, 4), np.float64))
    out = apply(P.dead_code_elimination, apply(P.algebraic_simplification, g, a), a)
    assert prims(out) == ["exp"]
    g = body_graph(lambda x: tnp.exp(tnp.transpose(tnp.transpose(x, (1, 2, 0)), (2, 0, 1))),
                   ((2, 3, 4), np.float64))
    out = apply(P.dead_code_elimination, apply(P.algebraic_simplification, g, a), a)
    assert prims(out) == ["exp"]
    g = body_graph(lambda x: tnp.exp(tnp.transpose(tnp.transpose(x, (1, 2, 0)), (1, 0, 2))),
                   ((2, 3, 4), np.float64))
    out = apply(P.dead_code_elimination, apply(P.algebraic_simplification, g, a), a)
    assert prims(out) == ["transpose", "exp"]
    assert out.nodes[0].inputs[0] is out.inputs[0]


def test_reshape_chains_collapse_and_same_shape_reshapes_vanish():
    a = np.arange(24.0).reshape(2, 3, 4)
    g = body_graph(lambda x: tnp.exp(tnp.reshape(tnp.reshape(tnp.reshape(x, (6, 4)), (24,)),
                                                 (4, 6))), ((2, 3, 4), np.float64))
    out = apply(P.dead_code_elimination, apply(P.algebraic_simplification, g, a), a)
    assert prims(out) == ["reshape", "exp"]
    g = body_graph(lambda x: tnp.exp(tnp.reshape(tnp.reshape(x, (24,)), (2, 3, 4))),
                   ((2, 3, 4), np.float64))
    out = apply(P.dead_code_elimination, apply(P.algebraic_simplification, g, a), a)
    assert prims(out) == ["exp"]


def test_convert_to_same_dtype_vanishes():
    g = body_graph(lambda x: tnp.exp(x.astype(np.float64)), X3)
    assert prims(g) == ["convert_element_type", "exp"]
    assert prims(apply(P.algebraic_simplification, g, x3)) == ["exp"]
    g = body_graph(lambda x: tnp.exp(x.astype(np.float32)), X3)
    assert prims(apply(P.algebraic_simplification, g, x3)) == ["convert_element_type", "exp"]


def test_broadcast_of_a_scalar_feeding_a_broadcasting_op_is_dropped():
    g = body_graph(lambda x, s: tnp.exp(x * tnp.broadcast_to(s, (4, 3))),
                   ((4, 3), np.float64), ((), np.float64))
    a = np.arange(12.0).reshape(4, 3)
    out = apply(P.dead_code_elimination, apply(P.algebraic_simplification, g, a, 2.0), a, 2.0)
    assert prims(out) == ["multiply", "exp"]
    # kept where the broadcast makes the result larger than the other operand
    g = body_graph(lambda x, s: tnp.exp(x * tnp.broadcast_to(s, (4, 3))),
                   ((3,), np.float64), ((), np.float64))
    assert "broadcast_to" in prims(P.dead_code_elimination(P.algebraic_simplification(g)))


def test_like_constructors_of_known_shape_become_constants():
    g = body_graph(lambda x: tnp.where(x > 0, x, tnp.zeros_like(x)) * tnp.ones_like(x), X3)
    out = apply(P.algebraic_simplification, g, x3)
    assert "zeros_like" not in prims(out) and "ones_like" not in prims(out)
    out = P.optimize(g, [p for p in P.PASSES if p.__name__ != "elementwise_fusion"])
    assert prims(out) == ["greater", "select"]
    # the whole pipeline then fuses what is left into one kernel
    assert [n.prim.name for n in P.optimize(g).nodes] == [
        "fused{t0=greater(x0, x1); t1=select(t0, x0, x2)}"]


# ------------------------------------------------------------------ layout
def test_copy_of_a_fresh_single_use_value_is_dropped():
    g = body_graph(lambda x: tnp.exp(tnp.copy(tnp.sin(x))), X3)
    out = apply(P.layout_choices, g, x3)
    assert prims(out) == ["sin", "exp"]
    # a copy of a view of the argument (or of a value used twice) stays
    g = body_graph(lambda x: tnp.exp(tnp.copy(tnp.reshape(x, (3, 1)))), X3)
    assert "copy" in prims(P.layout_choices(g))
    g = body_graph(lambda x: (lambda s: tnp.exp(tnp.copy(s)) + s)(tnp.sin(x)), X3)
    assert "copy" in prims(P.layout_choices(g))


def test_transpose_of_unit_axes_is_a_reshape():
    a = np.arange(6.0).reshape(3, 1, 2)
    g = body_graph(lambda x: tnp.exp(tnp.transpose(x, (1, 0, 2))), ((3, 1, 2), np.float64))
    out = apply(P.layout_choices, g, a)
    assert prims(out) == ["reshape", "exp"]
    g = body_graph(lambda x: tnp.exp(tnp.transpose(x, (2, 1, 0))), ((3, 1, 2), np.float64))
    assert prims(P.layout_choices(g)) == ["transpose", "exp"]


# ------------------------------------------------------------------ control flow
def test_cond_with_a_constant_predicate_is_inlined():
    def f(x):
        return nf.cond(tnp.asarray(2.0) > 1.0, lambda: tnp.sin(x), lambda: tnp.cos(x))
    g = body_graph(f, X3)
    assert "cond" in prims(g)
    out = P.optimize(g)
    verify(out)
    assert prims(out) == ["sin"]
    np.testing.assert_allclose(run(out, x3)[0], np.sin(x3))


# ------------------------------------------------------------------ the pipeline
def test_pipeline_on_a_gradient_graph():
    def loss_grad(x, w):
        with nf.GradientTape() as tape:
            tape.watch(w)
            loss = tnp.sum((x @ w) ** 2)
        return tape.gradient(loss, w)
    x, w = tnp.ones((4, 3)), tnp.ones((3, 2))
    cf = nf.function(loss_grad).get_concrete_function(x, w)
    before, after = prims(cf.traced_graph), prims(cf.graph)
    assert len(after) < len(before)
    for gone in ("ones_like", "broadcast_to", "reduce_sum"):
        assert gone in before and gone not in after, (before, after)


def test_every_pass_keeps_the_graph_valid_on_a_training_step():
    from ndflow.graph import debug
    prev = debug.set_debug("verify")
    try:
        w = nf.Variable(tnp.ones((3, 2)) * 0.1)
        opt = nf.optimizers.Adam(0.1)

        @nf.function
        def step(x, y):
            with nf.GradientTape() as tape:
                loss = tnp.mean((tnp.tanh(x @ w) - y) ** 2)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
            return loss
        step(tnp.ones((4, 3)), tnp.zeros((4, 2)))
    finally:
        debug.set_debug(*prev)


# ------------------------------------------------------------------ the verifier
def test_verifier_reports_use_before_definition_with_context():
    g = body_graph(lambda x: tnp.exp(tnp.sin(x)), X3)
    g.nodes.reverse()
    with pytest.raises(GraphError, match=r"node 0 \(exp\) uses .* before it is defined") as e:
        verify(g, "my_pass")
    assert "after pass my_pass" in str(e.value) and "> " in str(e.value)


def test_verifier_checks_shapes_and_dtypes_against_the_rules():
    g = body_graph(lambda x: tnp.exp(x), X3)
    n = g.nodes[0]
    bad = Var((4,), n.outputs[0].dtype)
    g.nodes[0] = Node(n.prim, n.inputs, n.params, (bad,), n.loc)
    g.outputs = [bad]
    with pytest.raises(GraphError, match="rule gives"):
        verify(g)
    g = Graph("g")
    a = Var((3,), np.dtype(np.float64), kind="a")
    g.inputs = [a]
    out = Var((3,), np.dtype(np.float32))
    g.nodes = [Node(E.exp_p, (a,), {}, (out,), "here")]
    g.outputs = [out]
    with pytest.raises(GraphError, match="float32"):
        verify(g)


def test_a_broken_pass_is_caught_by_name_under_verify():
    from ndflow.graph import debug

    def broken_pass(g):
        return g.copy_with(nodes=g.nodes[1:])

    g = body_graph(lambda x: tnp.exp(tnp.sin(x)), X3)
    prev = debug.set_debug("verify")
    try:
        with pytest.raises(GraphError, match="after pass broken_pass"):
            P.optimize(g, passes=[broken_pass])
    finally:
        debug.set_debug(*prev)


def test_passes_can_be_appended_to_the_pipeline():
    seen = []

    def spy(g):
        seen.append(len(g.nodes))
        return g

    P.PASSES.append(spy)
    try:
        nf.function(lambda x: tnp.exp(x) * 1.0 + 0.0)(tnp.ones(2))
    finally:
        P.PASSES.remove(spy)
    assert seen == [1]


@pytest.mark.parametrize("k", [1.0, 2.0, [2.0]], ids=["1", "2", "[2]"])
def test_small_whole_powers_become_multiplications(k):
    x = np.array([-1.5, -0.0, 0.5, 2.0])
    g = body_graph(lambda x: tnp.exp(x ** tnp.asarray(k)), ((4,), np.float64))
    out = apply(P.dead_code_elimination, apply(P.algebraic_simplification, g, x), x)
    if P._power_fast_path(np.dtype(np.float64)):
        assert "power" not in prims(out)
    np.testing.assert_array_equal(run(out, x)[0], np.exp(x ** np.asarray(k)))


def test_other_powers_stay():
    # x*x*x rounds twice, pow(x, 3) once: they differ in the last bit for about 1 value in 4;
    # an exponent array (varying or not) runs NumPy's general pow loop, not x*x
    for k in (0.5, -1.0, 3.0, 4.0, 5.0, [0.0, 1.0, 2.0, 3.0], [0.0, 2.5, 1.0, 1.0],
              [0.0, 1.0, 2.0, 2.0], [[0.0], [1.0]], [1.0, 0.0, 1.0, 1.0], [2.0] * 4):
        g = body_graph(lambda x: tnp.exp(x ** tnp.asarray(k)), ((4,), np.float64))
        assert "power" in prims(P.algebraic_simplification(g))
    g = body_graph(lambda x: tnp.exp(x ** 2), ((4,), np.int64))
    assert "power" in prims(P.algebraic_simplification(g))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2.0, [0.0, 1.0, 2.0], [[0.0], [1.0], [2.0]], [2.0] * 3],
                         ids=["scalar", "row", "column", "repeated"])
def test_compiled_constant_powers_are_numpys(dtype, k):
    # NumPy's result for x ** k depends on how its loop meets k (a one-element exponent takes
    # a fast path: 1, x, x*x; an array runs pow, which differs from x*x in the last bit for
    # ~10% of values on SVML machines): the compiled function must give the same bits
    rng = np.random.default_rng(1)
    k = np.asarray(k, dtype)
    x = np.concatenate([rng.uniform(-3, 3, 1535), [-0.0, np.inf, -np.inf, np.nan]])
    x = x.astype(dtype).reshape((1, -1) if k.ndim == 2 else (-1, 3) if k.ndim else (-1,))
    f = nf.function(lambda x: x ** tnp.asarray(k))
    got, want = f(x).numpy(), np.power(x, k)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_stacked_products_with_a_matrix_become_one_product(monkeypatch, nf_settings):
    a, w = np.arange(24.0).reshape(4, 2, 3), np.arange(6.0).reshape(3, 2)
    g = body_graph(lambda x, w: tnp.exp(tnp.matmul(x, w) / 100), ((4, 2, 3), np.float64),
                   ((3, 2), np.float64))
    # by default the stack stays: one big BLAS product rounds differently in the last bits
    assert "reshape" not in prims(P.layout_choices(g))
    nf_settings(fast_math=True)
    out = apply(P.layout_choices, g, a, w)
    assert prims(out) == ["reshape", "matmul", "reshape", "true_divide", "exp"]
    assert out.nodes[1].inputs[0].shape == (8, 3)


def test_outer_products_become_broadcast_multiplies():
    a, b = np.arange(64.0).reshape(2, 32, 1), np.arange(40.0).reshape(2, 1, 20)
    g = body_graph(lambda x, y: tnp.exp(tnp.matmul(x, y) / 1000), ((2, 32, 1), np.float64),
                   ((2, 1, 20), np.float64))
    out = apply(P.layout_choices, g, a, b)
    assert prims(out)[:2] == ["multiply", "add"]      # + 0.0: BLAS's -0.0 * 1 is +0.0
    neg = np.full((2, 32, 1), -0.0)
    got = nf.function(lambda x, y: tnp.matmul(x, y))(tnp.asarray(neg), tnp.asarray(b))
    assert not np.signbit(got.numpy()).any() and not np.signbit(np.matmul(neg, b)).any()
    # short rows: the product stays (a broadcast multiply with 2-long rows is slower)
    g = body_graph(lambda x, y: tnp.matmul(x, y), ((2, 32, 1), np.float64), ((2, 1, 2), np.float64))
    assert prims(P.layout_choices(g)) == ["matmul"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k", [(4, 256), (3, 2), (7, 1000), (130, 67)])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_vector_matrix_gradient_becomes_matrix_vector(dtype, m, k, layout):
    # the gradient of v @ P is squeeze(expand_dims(g, 0) @ P.T): one matmul(P, g), the same
    # bits (NumPy runs both as one gemv over P's memory, or as the same loop)
    rng = np.random.default_rng(m * k)
    base = rng.standard_normal((m, 2 * k) if layout == "strided" else (m, k)).astype(dtype)
    P = {"C": base, "F": np.asfortranarray(base), "strided": base[:, ::2]}[layout]
    g = rng.standard_normal(k).astype(dtype)
    g[:3] = [np.nan, -0.0, np.inf][:min(3, k)]
    body = lambda g, P: tnp.squeeze(tnp.matmul(tnp.expand_dims(g, 0), tnp.transpose(P)), 0)
    gr = body_graph(body, ((k,), dtype), ((m, k), dtype))
    out = apply(passes.dead_code_elimination, apply(passes.layout_choices, gr, g, P), g, P)
    assert prims(out) == ["matmul"]
    want = np.squeeze(np.expand_dims(g, 0) @ P.T, 0)
    with np.errstate(all="ignore"):
        got = nf.function(body)(g, P).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_vector_matrix_gradient_of_a_fit_step_matches_eager():
    rng = np.random.default_rng(0)
    feats = rng.uniform(-1, 1, (4, 256)).astype(np.float32)
    y = rng.uniform(-1, 1, 256).astype(np.float32)

    def grad(c, feats, y):
        with nf.GradientTape() as tape:
            tape.watch(c)
            loss = tnp.mean(tnp.square(tnp.matmul(c, feats) - y))
        return tape.gradient(loss, c)
    c = tnp.asarray(rng.standard_normal(4).astype(np.float32))
    want = grad(c, tnp.asarray(feats), tnp.asarray(y)).numpy()
    f = nf.function(grad)
    got = f(c, feats, y).numpy()
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    names = [n.prim.name for n in f.get_concrete_function(c, feats, y).graph.nodes]
    assert "squeeze" not in names and "transpose" not in names
