"""`tnp.random` against NumPy's streams: every module function (the legacy RandomState stream)
and every Generator method (PCG64) draws the numbers NumPy draws from the same seed and leaves
the stream in the same state; draws inside `nf.function` are fresh at every call and follow the
stream; shapes and dtypes; gradients of the reparameterized draws with respect to their
location/scale parameters (pathwise, against central differences with the seed held); batching;
completeness over `numpy.random`.

Random functions are not op-table records (they are not deterministic functions of their
inputs); this file is their table."""
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from hypothesis.extra import numpy as hnp

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.primitives import random as Rp

from helpers import assert_same

P = np.array([0.1, 0.2, 0.3, 0.4])
COV = np.array([[2.0, 0.3], [0.3, 1.0]])
LOC = np.array([0.5, -1.0, 2.0])
SCALE = np.array([1.5, 0.25, 2.0])


def _nf(v):
    return tnp.asarray(v) if isinstance(v, np.ndarray) else v


# (function, args, kwargs): NumPy arrays stay NumPy arrays on the NumPy side and become ndflow
# arrays on ours (for the location/scale families, that is the differentiable composition)
LEGACY = [
    ("rand", (2, 3), {}), ("rand", (), {}), ("randn", (4,), {}), ("randn", (), {}),
    ("random", (), {"size": (2, 2)}), ("random_sample", ((3,),), {}), ("ranf", (2,), {}),
    ("sample", (), {}), ("standard_normal", (), {"size": 5}),
    ("standard_exponential", ((2, 3),), {}), ("standard_gamma", (2.5, 4), {}),
    ("standard_gamma", (np.array([0.5, 3.0]),), {}), ("standard_cauchy", (3,), {}),
    ("standard_t", (3.0, (2, 2)), {}),
    ("normal", (1.5, 2.0, (3, 2)), {}), ("normal", (), {}), ("normal", (LOC, SCALE), {}),
    ("normal", (LOC, 2.0, (4, 3)), {}), ("normal", (0.5, SCALE), {}),
    ("uniform", (-1.0, 3.0, (5,)), {}), ("uniform", (LOC, LOC + SCALE), {}),
    ("lognormal", (0.2, 0.5, 4), {}), ("lognormal", (LOC, SCALE), {}),
    ("laplace", (0.0, 2.0, 6), {}), ("laplace", (LOC, SCALE, (2, 3)), {}),
    ("logistic", (1.0, 0.5, 6), {}), ("logistic", (LOC, SCALE), {}),
    ("gumbel", (1.0, 0.5, 6), {}), ("gumbel", (LOC, SCALE), {}),
    ("exponential", (2.0, 5), {}), ("exponential", (SCALE,), {}),
    ("rayleigh", (2.0, 5), {}), ("rayleigh", (SCALE, (2, 3)), {}),
    ("weibull", (1.5, 5), {}), ("weibull", (SCALE,), {}),
    ("gamma", (2.0, 3.0, 4), {}), ("gamma", (2.0, SCALE), {}),
    ("gamma", (np.array([0.5, 2.0, 4.0]), SCALE), {}),
    ("beta", (0.5, 2.0, 5), {}), ("beta", (np.array([0.5, 3.0]), 2.0), {}),
    ("chisquare", (3.0, 4), {}), ("noncentral_chisquare", (3.0, 1.5, 4), {}),
    ("f", (3.0, 5.0, 4), {}), ("noncentral_f", (3.0, 5.0, 1.0, 4), {}),
    ("pareto", (3.0, 4), {}), ("power", (2.0, 4), {}), ("triangular", (0.0, 1.0, 3.0, 5), {}),
    ("vonmises", (0.5, 2.0, 5), {}), ("wald", (1.0, 2.0, 5), {}),
    ("dirichlet", (np.array([0.5, 1.0, 2.0]), 4), {}),
    ("multivariate_normal", (np.array([1.0, -1.0]), COV, 3), {}),
    ("multivariate_normal", (np.array([1.0, -1.0]), COV), {}),
    ("binomial", (10, 0.3, 6), {}), ("binomial", (np.array([5, 20]), 0.5), {}),
    ("negative_binomial", (5, 0.4, 6), {}), ("geometric", (0.3, 6), {}),
    ("hypergeometric", (10, 5, 7, 6), {}), ("logseries", (0.6, 6), {}),
    ("poisson", (3.0, 6), {}), ("poisson", (np.array([1.0, 10.0]), (3, 2)), {}),
    ("zipf", (2.5, 6), {}), ("multinomial", (20, P, 3), {}), ("multinomial", (20, P), {}),
    ("randint", (0, 10, (2, 5)), {}), ("randint", (7,), {"size": 4}),
    ("randint", (-3, 3, 5), {"dtype": np.int32}), ("randint", (np.array([1, 5]), 10), {}),
    ("choice", (5, 3), {}), ("choice", (5,), {}), ("choice", (LOC, 5), {}),
    ("choice", (np.arange(4.0), 3), {"replace": False}), ("choice", (4, 6), {"p": P}),
    ("permutation", (6,), {}), ("permutation", (np.arange(12.0).reshape(4, 3),), {}),
    ("tomaxint", (3,), {}),
]
ALL_LEGACY = sorted({name for name, _, _ in LEGACY})


def _ids(table):
    return [f"{n}{i}" for i, (n, _, _) in enumerate(table)]


_MODULE_ONLY = {"ranf": "random_sample", "sample": "random_sample"}   # not RandomState methods


def _call(obj, name, args, kwargs, conv=lambda v: v):
    if not isinstance(obj, types.ModuleType):
        name = _MODULE_ONLY.get(name, name)
    return getattr(obj, name)(*[conv(a) for a in args], **kwargs)


def _close(got, want, ctx):
    want = np.asarray(want)
    assert_same(got, want, 1e-13, 0.0, ctx=ctx)


def _legacy_oracle(seed):
    return np.random.RandomState(seed)


def _module_call(name, args, kwargs):
    if name == "tomaxint":        # a RandomState method only
        return _call(tnp.random._rand, name, args, kwargs, _nf)
    return _call(tnp.random, name, args, kwargs, _nf)


@pytest.mark.parametrize("name,args,kwargs", LEGACY, ids=_ids(LEGACY))
def test_module_functions_follow_the_legacy_stream(name, args, kwargs):
    tnp.random.seed(1234)
    got = _module_call(name, args, kwargs)
    oracle = _legacy_oracle(1234)
    want = _call(oracle, name, args, kwargs)
    _close(got, want, f"tnp.random.{name}")
    # the same amount of the stream was used: the next draws agree too
    _close(tnp.random.random_sample(3), oracle.random_sample(3), f"after {name}")


@pytest.mark.parametrize("name,args,kwargs", LEGACY[::3], ids=_ids(LEGACY[::3]))
def test_random_state_instances_follow_their_own_stream(name, args, kwargs):
    rs = tnp.random.RandomState(99)
    tnp.random.seed(0)
    got = _call(rs, name, args, kwargs, _nf)
    _close(got, _call(np.random.RandomState(99), name, args, kwargs), f"RandomState.{name}")
    _close(tnp.random.rand(2), np.random.RandomState(0).rand(2), "global stream untouched")


GENERATOR = [
    ("random", ((2, 3),), {}), ("random", (4,), {"dtype": np.float32}),
    ("standard_normal", (5,), {}), ("standard_normal", ((2, 2),), {"dtype": np.float32}),
    ("standard_exponential", (4,), {}), ("standard_exponential", (4,), {"method": "inv"}),
    ("standard_gamma", (2.0, 4), {}), ("standard_gamma", (0.5, 3), {"dtype": np.float32}),
    ("integers", (0, 5, (3,)), {}), ("integers", (10,), {"size": 4, "endpoint": True}),
    ("integers", (0, 200, 5), {"dtype": np.uint8}),
    ("normal", (0.0, 1.0, (2, 3)), {}), ("normal", (LOC, SCALE), {}),
    ("uniform", (0, 2, 4), {}), ("uniform", (LOC, LOC + 1.0, (2, 3)), {}),
    ("lognormal", (LOC, SCALE), {}), ("laplace", (LOC, SCALE), {}),
    ("logistic", (LOC, SCALE), {}), ("gumbel", (LOC, SCALE), {}),
    ("exponential", (SCALE,), {}), ("rayleigh", (SCALE,), {}), ("weibull", (SCALE,), {}),
    ("gamma", (3.0, SCALE), {}), ("beta", (2.0, 3.0, 4), {}), ("chisquare", (2.0, 4), {}),
    ("noncentral_chisquare", (2.0, 0.5, 4), {}), ("f", (2.0, 6.0, 4), {}),
    ("noncentral_f", (2.0, 6.0, 0.5, 4), {}), ("pareto", (2.0, 4), {}),
    ("power", (2.0, 4), {}), ("standard_cauchy", (4,), {}), ("standard_t", (4.0, 4), {}),
    ("triangular", (0.0, 0.5, 1.0, 4), {}), ("vonmises", (0.0, 1.0, 4), {}),
    ("wald", (1.0, 1.0, 4), {}), ("dirichlet", (np.array([1.0, 2.0]), 3), {}),
    ("multivariate_normal", (np.array([1.0, 2.0]), COV, 3), {}),
    ("multivariate_normal", (np.array([1.0, 2.0]), COV, 2), {"method": "cholesky"}),
    ("binomial", (8, 0.4, 5), {}), ("negative_binomial", (3, 0.5, 5), {}),
    ("geometric", (0.4, 5), {}), ("hypergeometric", (6, 4, 5, 5), {}),
    ("logseries", (0.5, 5), {}), ("poisson", (4.0, 5), {}), ("zipf", (3.0, 5), {}),
    ("multinomial", (10, P, 2), {}), ("multinomial", (np.array([5, 10]), P), {}),
    ("multivariate_hypergeometric", (np.array([3, 4, 5]), 6, 2), {}),
    ("choice", (5, 3), {}), ("choice", (np.arange(12.0).reshape(3, 4), 2), {"axis": 1}),
    ("choice", (LOC, 2), {"replace": False, "shuffle": False}), ("choice", (4, 5), {"p": P}),
    ("permutation", (5,), {}), ("permutation", (np.arange(12.0).reshape(3, 4),), {"axis": 1}),
    ("permuted", (np.arange(12.0).reshape(3, 4),), {"axis": 1}),
    ("permuted", (np.arange(12.0).reshape(3, 4),), {}),
]


@pytest.mark.parametrize("name,args,kwargs", GENERATOR, ids=_ids(GENERATOR))
def test_generator_methods_follow_pcg64(name, args, kwargs):
    g = tnp.random.default_rng(7)
    got = _call(g, name, args, kwargs, _nf)
    ref = np.random.default_rng(7)
    _close(got, _call(ref, name, args, kwargs), f"Generator.{name}")
    assert g.bit_generator.state == ref.bit_generator.state, f"{name} used a different amount"


def test_generator_bytes_spawn_and_construction():
    assert tnp.random.default_rng(3).bytes(8) == np.random.default_rng(3).bytes(8)
    kids, ref = tnp.random.default_rng(3).spawn(2), np.random.default_rng(3).spawn(2)
    for k, r in zip(kids, ref):
        _close(k.random(3), r.random(3), "spawned")
    shared = np.random.default_rng(5)
    g = tnp.random.Generator(shared)         # wraps NumPy's Generator: one state
    g.random(2)
    assert shared.bit_generator.state == g.bit_generator.state
    _close(tnp.random.Generator(tnp.random.PCG64(4)).normal(size=3),
           np.random.Generator(np.random.PCG64(4)).normal(size=3), "from a BitGenerator")
    assert tnp.random.default_rng(g) is g


def test_legacy_state_bytes_and_bit_generator():
    tnp.random.seed(11)
    st = tnp.random.get_state()
    ref = np.random.RandomState(11)
    assert st[0] == "MT19937" and np.array_equal(st[1], ref.get_state()[1])
    a = tnp.random.randn(3)
    tnp.random.set_state(st)
    _close(tnp.random.randn(3), a.numpy(), "set_state replays")
    ref.randn(3)
    tnp.random.set_state(ref.get_state())        # NumPy's state is accepted
    _close(tnp.random.rand(2), ref.rand(2), "NumPy's state")
    tnp.random.seed(2)
    assert tnp.random.bytes(6) == np.random.RandomState(2).bytes(6)
    old = tnp.random.get_bit_generator()
    try:
        tnp.random.set_bit_generator(np.random.PCG64(1))
        _close(tnp.random.random(3), np.random.RandomState(np.random.PCG64(1)).random(3),
               "set_bit_generator")
    finally:
        tnp.random.set_bit_generator(old)


def test_random_integers_is_deprecated_as_in_numpy():
    tnp.random.seed(5)
    with pytest.warns(DeprecationWarning):
        got = tnp.random.random_integers(3, 8, size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.random.RandomState(5).random_integers(3, 8, size=6)
    _close(got, want, "random_integers")


def test_shuffle_is_in_place_and_follows_the_stream():
    x = np.arange(15.0).reshape(5, 3)
    a = tnp.asarray(x.copy())
    tnp.random.seed(8)
    assert tnp.random.shuffle(a) is None
    want = x.copy()
    np.random.RandomState(8).shuffle(want)
    np.testing.assert_array_equal(a.numpy(), want)
    b = tnp.asarray(x.copy())
    tnp.random.default_rng(8).shuffle(b, axis=1)
    want = x.copy()
    np.random.default_rng(8).shuffle(want, axis=1)
    np.testing.assert_array_equal(b.numpy(), want)
    lst = list(range(6))                     # a list: through NumPy, in place
    tnp.random.seed(1)
    tnp.random.shuffle(lst)
    ref = list(range(6))
    np.random.RandomState(1).shuffle(ref)
    assert lst == ref
    with nf.GradientTape() as tape:          # under a tape: differentiable in x
        v = tnp.asarray(x.copy())
        tape.watch(v)
        w = v * 1.0
        tnp.random.shuffle(w)
        loss = tnp.sum(w * tnp.arange(15.0).reshape(5, 3))
    assert tape.gradient(loss, v).shape == (5, 3)


def test_out_arguments_of_generator():
    out = tnp.zeros((2, 3))
    r = tnp.random.default_rng(1).standard_normal(out=out)
    assert r is out
    np.testing.assert_array_equal(out.numpy(), np.random.default_rng(1).standard_normal((2, 3)))
    out32 = tnp.zeros(4, dtype=np.float32)
    tnp.random.default_rng(1).random(out=out32)
    np.testing.assert_array_equal(out32.numpy(),
                                  np.random.default_rng(1).random(4, dtype=np.float32))
    x = tnp.asarray(np.arange(6.0).reshape(2, 3))
    o = tnp.zeros((2, 3))
    assert tnp.random.default_rng(2).permuted(x, axis=1, out=o) is o
    np.testing.assert_array_equal(
        o.numpy(), np.random.default_rng(2).permuted(np.arange(6.0).reshape(2, 3), axis=1))
    with pytest.raises(ValueError, match="size must match"):
        tnp.random.default_rng(1).random(size=3, out=tnp.zeros(2))


# ------------------------------------------------------------------ inside nf.function
def _fresh_case(name, args, kwargs, module):
    def f():
        return _call(module, name, args, kwargs, _nf)
    return f


@pytest.mark.parametrize("name,args,kwargs", LEGACY, ids=_ids(LEGACY))
def test_compiled_draws_are_fresh_and_follow_the_stream(name, args, kwargs):
    obj = tnp.random._rand if name == "tomaxint" else tnp.random
    fn = nf.function(_fresh_case(name, args, kwargs, obj))
    tnp.random.seed(21)
    first, second = fn(), fn()
    oracle = _legacy_oracle(21)
    _close(first, _call(oracle, name, args, kwargs), f"compiled {name}, call 1")
    _close(second, _call(oracle, name, args, kwargs), f"compiled {name}, call 2")
    assert fn.experimental_get_tracing_count() == 1
    graph = fn.get_concrete_function().graph
    assert any(n.prim is Rp.random_draw_p for n in graph.nodes), "the draw was folded away"


@pytest.mark.parametrize("name,args,kwargs", GENERATOR[::2], ids=_ids(GENERATOR[::2]))
def test_compiled_generator_draws_follow_pcg64(name, args, kwargs):
    g = tnp.random.default_rng(31)
    fn = nf.function(_fresh_case(name, args, kwargs, g))
    ref = np.random.default_rng(31)
    for k in range(2):
        _close(fn(), _call(ref, name, args, kwargs), f"compiled Generator.{name}, call {k}")


def test_compiled_draws_with_traced_parameters():
    """Parameters that are inputs of the compiled function: fresh draws, the stream's numbers,
    and the shape of the draw taken from the parameters at run time."""
    fn = nf.function(lambda loc, scale: tnp.random.normal(loc, scale),
                     input_signature=[nf.TensorSpec([None], np.float64)] * 2)
    tnp.random.seed(4)
    oracle = _legacy_oracle(4)
    for n in (3, 5):
        loc, scale = np.linspace(-1, 1, n), np.linspace(0.5, 2, n)
        _close(fn(tnp.asarray(loc), tnp.asarray(scale)), oracle.normal(loc, scale), f"n={n}")
    assert fn.experimental_get_tracing_count() == 1


def test_prefer_float32_and_dtypes():
    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    assert tnp.random.randn(2).dtype == np.float32
    assert tnp.random.gamma(2.0, size=2).dtype == np.float32
    assert tnp.random.default_rng(0).random(2).dtype == np.float32
    assert tnp.random.default_rng(0).random(2, dtype=np.float64).dtype == np.float64
    assert tnp.random.poisson(2.0, size=2).dtype == np.int64
    tnp.experimental_enable_numpy_behavior(prefer_float32=False)
    assert tnp.random.normal(tnp.asarray(np.float32(1.0)), 1.0).dtype == np.float64  # as NumPy


def test_parameter_errors_match_numpy():
    for call in (lambda m: m.random.normal(0.0, -1.0), lambda m: m.random.randint(3, 3),
                 lambda m: m.random.normal(np.zeros(3), 1.0, size=(2,)),
                 lambda m: m.random.choice(np.ones((2, 2))),
                 lambda m: m.random.permutation(np.float64(2.0) * np.ones(())),
                 lambda m: m.random.exponential(-np.ones(2))):
        try:
            call(np)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                call(tnp)
        else:
            raise AssertionError("NumPy accepted it")
    with pytest.raises(ValueError, match="scale < 0"):      # the composition checks too
        tnp.random.normal(0.0, tnp.asarray([1.0, -1.0]))
    with pytest.raises(ValueError, match="shape mismatch"):
        tnp.random.normal(tnp.zeros(3), 1.0, size=(2,))


# ------------------------------------------------------------------ gradients
REPARAM = [  # (method, parameters as arrays, other arguments, on a Generator?)
    ("normal", (LOC, SCALE), {}, False), ("normal", (LOC, SCALE), {"size": (4, 3)}, True),
    ("uniform", (LOC, LOC + SCALE), {}, False), ("lognormal", (LOC, SCALE), {}, True),
    ("laplace", (LOC, SCALE), {}, False), ("logistic", (LOC, SCALE), {}, True),
    ("gumbel", (LOC, SCALE), {"size": (2, 3)}, False), ("exponential", (SCALE,), {}, True),
    ("rayleigh", (SCALE,), {}, False), ("weibull", (SCALE,), {}, True),
    ("gamma", (SCALE,), {"shape": 2.5}, False),
    ("multivariate_normal", (np.array([1.0, -1.0]),), {"cov": COV, "size": 3}, True),
    ("choice", (LOC,), {"size": 5}, False), ("permutation", (LOC,), {}, True),
    ("permuted", (np.arange(6.0).reshape(2, 3),), {"axis": 1}, True),
]


def _reparam_draw(method, params, kwargs, gen, seed):
    src = tnp.random.default_rng(seed) if gen else tnp.random.RandomState(seed)
    if method == "gamma":
        return src.gamma(kwargs["shape"], params[0])
    if method == "multivariate_normal":
        return src.multivariate_normal(params[0], kwargs["cov"], size=kwargs["size"])
    return getattr(src, method)(*params, **kwargs)


@pytest.mark.parametrize("method,params,kwargs,gen", REPARAM,
                         ids=[f"{m}{'-gen' if g else ''}" for m, _, _, g in REPARAM])
def test_pathwise_gradients_match_central_differences(method, params, kwargs, gen):
    rng = np.random.default_rng(0)
    xs = [tnp.asarray(p) for p in params]
    with nf.GradientTape() as tape:
        tape.watch(xs)
        out = _reparam_draw(method, xs, kwargs, gen, 5)
        ct = rng.standard_normal(out.shape)
        loss = tnp.sum(out * ct)
    grads = tape.gradient(loss, xs)
    dirs = [rng.standard_normal(p.shape) for p in params]
    analytic = sum(float(np.sum(g.numpy() * d)) for g, d in zip(grads, dirs))

    def shifted(eps):       # the same seed: the same underlying standard draws
        out = _reparam_draw(method, [tnp.asarray(p + eps * d) for p, d in zip(params, dirs)],
                            kwargs, gen, 5)
        return float(np.sum(out.numpy() * ct))
    h = 1e-6
    numeric = (shifted(h) - shifted(-h)) / (2 * h)
    assert abs(analytic - numeric) <= 1e-6 * (1 + abs(numeric)), (analytic, numeric)
    for g, p in zip(grads, params):
        assert g.shape == p.shape and g.dtype == p.dtype


def test_non_reparameterized_parameters_get_no_gradient():
    a = tnp.asarray([2.0, 3.0])
    with nf.GradientTape() as tape:
        tape.watch(a)
        loss = tnp.sum(tnp.random.beta(a, 2.0))
    assert tape.gradient(loss, a) is None


def test_compiled_gradient_of_a_draw():
    loc, scale = tnp.asarray(LOC), tnp.asarray(SCALE)

    @nf.function
    def g(loc, scale):
        with nf.GradientTape() as tape:
            tape.watch([loc, scale])
            x = tnp.random.normal(loc, scale)
            loss = tnp.sum(x * x)
        return x, tape.gradient(loss, [loc, scale])
    tnp.random.seed(3)
    x, (gl, gs) = g(loc, scale)
    z = (x.numpy() - LOC) / SCALE
    np.testing.assert_allclose(gl.numpy(), 2 * x.numpy())
    np.testing.assert_allclose(gs.numpy(), 2 * x.numpy() * z)


# ------------------------------------------------------------------ batching
def test_batched_parameters_draw_for_every_example():
    mus = np.arange(12.0).reshape(4, 3)
    tnp.random.seed(6)
    got = nf.vectorized_map(lambda m: tnp.random.normal(m, 0.5), tnp.asarray(mus))
    want = mus + 0.5 * np.random.RandomState(6).normal(0.0, 1.0, (4, 3))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)
    tnp.random.seed(6)           # with a size: still a draw per example
    got = nf.vectorized_map(lambda m: tnp.random.gumbel(m, 2.0, size=(2, 3)), tnp.asarray(mus))
    want = mus[:, None] + 2.0 * np.random.RandomState(6).gumbel(0.0, 1.0, (4, 2, 3))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)
    # picking from a batched array: a draw per example, in order
    tnp.random.seed(6)
    got = nf.vectorized_map(lambda row: tnp.random.permutation(row), tnp.asarray(mus))
    oracle = _legacy_oracle(6)
    np.testing.assert_array_equal(got.numpy(), [oracle.permutation(row) for row in mus])
    # a parameter with a core dimension: one draw per example, in order
    ps = np.array([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]])
    tnp.random.seed(6)
    got = nf.vectorized_map(lambda p: tnp.random.choice(3, size=4, p=p), tnp.asarray(ps))
    oracle = _legacy_oracle(6)
    np.testing.assert_array_equal(got.numpy(), [oracle.choice(3, 4, p=p) for p in ps])
    # a batched parameter of a non-reparameterized draw, batch axis not in front
    lam = np.array([[1.0, 5.0], [2.0, 9.0], [3.0, 4.0]])
    tnp.random.seed(6)
    got = nf.vmap(lambda l: tnp.random.poisson(l), in_axes=1)(tnp.asarray(lam))
    np.testing.assert_array_equal(got.numpy(), np.random.RandomState(6).poisson(lam.T))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
       st.sampled_from(["normal", "laplace", "gumbel", "logistic", "uniform", "lognormal"]),
       st.booleans(), st.booleans())
def test_parameter_shapes_and_sizes_on_random_shapes(shapes, method, with_size, as_ndflow):
    """Array parameters of any broadcastable shapes (ndflow arrays: the composition; NumPy
    arrays: NumPy's sampler), with or without a size: NumPy's numbers, shape and dtype."""
    (s1, s2), full = shapes.input_shapes, shapes.result_shape
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, s1)
    b = rng.uniform(0.5, 2, s2) + (a if method == "uniform" and s1 == s2 else 0)
    size = (2,) + tuple(full) if with_size else None
    conv = tnp.asarray if as_ndflow else (lambda v: v)
    tnp.random.seed(9)
    got = getattr(tnp.random, method)(conv(a), conv(b), size=size)
    want = getattr(np.random.RandomState(9), method)(a, b, size=size)
    _close(got, want, f"{method}{s1},{s2} size={size}")


# ------------------------------------------------------------------ completeness
# numpy.random's public names that tnp.random does not provide, and why
RANDOM_LEFT_OUT = {
    "test": "NumPy's test-suite runner",
    "mtrand": "NumPy's implementation module of the legacy API (its functions are ours)",
    "bit_generator": "NumPy's implementation module of the bit generators (re-exported)",
}
# NumPy's bit sources, re-exported: they make raw bits on the host; our Generator and
# RandomState take them
REEXPORTED = {"BitGenerator", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64",
              "SeedSequence"}


def test_every_numpy_random_name_is_provided_or_explained():
    names = [n for n in dir(np.random) if not n.startswith("_")]
    missing = [n for n in names if n not in RANDOM_LEFT_OUT and not hasattr(tnp.random, n)]
    assert not missing, f"numpy.random names missing from tnp.random: {missing}"
    for n in REEXPORTED:
        assert getattr(tnp.random, n) is getattr(np.random, n)
    assert set(RANDOM_LEFT_OUT) <= set(names)
    drawn = {n for n, _, _ in LEGACY} | {"seed", "get_state", "set_state", "bytes", "shuffle",
                                         "random_integers", "get_bit_generator",
                                         "set_bit_generator", "default_rng", "Generator",
                                         "RandomState"}
    untested = [n for n in names if n not in RANDOM_LEFT_OUT and n not in REEXPORTED and
                n not in drawn]
    assert not untested, f"tnp.random functions without a stream test: {untested}"
    assert sorted(tnp.random.__all__) == sorted(n for n in names if n not in RANDOM_LEFT_OUT)


def test_generator_and_random_state_have_numpys_methods():
    for ours, theirs, tested in ((tnp.random.Generator, np.random.Generator, GENERATOR),
                                 (tnp.random.RandomState, np.random.RandomState, LEGACY)):
        want = {n for n in dir(theirs) if not n.startswith("_")}
        missing = sorted(n for n in want if not hasattr(ours, n))
        assert not missing, f"{ours.__name__} lacks {missing}"
        extra_ok = {"bytes", "shuffle", "seed", "get_state", "set_state", "spawn",
                    "bit_generator", "random_integers"}
        untested = sorted(want - {n for n, _, _ in tested} - extra_ok)
        assert not untested, f"{ours.__name__} methods without a stream test: {untested}"


def test_module_functions_are_the_global_streams_methods():
    for n in ("normal", "choice", "randint", "get_state"):
        f = getattr(tnp.random, n)
        assert isinstance(f, types.MethodType) and f.__self__ is tnp.random._rand
