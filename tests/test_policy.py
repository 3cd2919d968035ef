"""The compiler's passes ask the backend's fusion policy (`graph/kernels/policy.py`), never
whether numba is installed or switched on: the optimized graph of a program is the same with
numba available, with `settings.numba` 'off' or 'sync', and with numba not installed. Checked
on the benchmark workloads' programs (benchmarks/workloads.py: the MLP gradient, per-example
gradients, the polynomial fit's Adam step, the classifier step, the sigmoid) and on a sample
of every op-table record, each inside an elementwise chain that ends in a sum (what fusion,
the sum split and buffer reuse act on)."""
import re
import sys

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import kernels, passes
from ndflow.graph.kernels import planner
from ndflow.graph.ir import format_graph

import optable
from helpers import to_nf

from benchmarks import impl_ndflow, workloads as W

settings = nf.config.settings


def _canonical(g):
    """The printed graph with its value names numbered in order of appearance (passes make
    new values, whose ids differ from one optimization to the next)."""
    names = {}

    def ren(m):
        return names.setdefault(m.group(0), "%s%d" % (m.group(1), len(names)))
    return re.sub(r"\b([avc])(\d+)\b", ren, format_graph(g))


def _no_numba(monkeypatch):
    """numba as if not installed: not importable, and not found."""
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.setattr(planner, "_numba_found", False)


def _optimized_every_way(graph, monkeypatch):
    """{condition: the canonical optimized graph} for one traced graph."""
    out = {}
    for name, mode in (("numba on", "background"), ("numba sync", "sync"), ("numba off", "off")):
        with settings.override(numba=mode):
            out[name] = _canonical(passes.optimize(graph))
    with monkeypatch.context() as m:
        _no_numba(m)
        assert not kernels.numba_available()
        out["numba missing"] = _canonical(passes.optimize(graph))
    return out


def _assert_one_graph(graph, monkeypatch, what):
    got = _optimized_every_way(graph, monkeypatch)
    first = got["numba on"]
    for cond, text in got.items():
        assert text == first, "%s: the optimized graph differs with %s:\n%s\n--- numba on:\n%s" \
            % (what, cond, text, first)
    return first


# ------------------------------------------------------------------ the benchmark workloads
_CASES = [
    W.Case("add", "1048576", "2**20", {"n": 2 ** 20}),
    W.Case("sigmoid", "1", "1", {"n": 1}),
    W.Case("sigmoid", "1048576", "2**20", {"n": 2 ** 20}),
    W.Case("mlp_grad", "32", "batch 32", {"batch": 32}),
    W.Case("mlp_grad", "512", "batch 512", {"batch": 512}),
    W.Case("per_example_grads", "vectorized_map-128", "", {"batch": 128, "via": "vectorized_map"}),
    W.Case("per_example_grads", "map_fn-128", "", {"batch": 128, "via": "map_fn"}),
    W.Case("polyfit_adam", "2", "2 steps", {"steps": 2}),
    W.Case("classifier_step", "32", "batch 32", {"batch": 32}),
    W.Case("classifier_step", "256", "batch 256", {"batch": 256}),
]


def _traced_graphs(case, monkeypatch):
    """The traced graphs of the benchmark's compiled program for `case` (every nf.function
    it makes, after one run)."""
    made = []
    real = nf.function

    def recording(fn=None, **kw):
        f = real(fn, **kw)
        made.append(f)
        return f
    impl_ndflow.setup()
    with monkeypatch.context() as m, settings.override(numba="off"):
        m.setattr(nf, "function", recording)
        run = impl_ndflow._build("ndflow_fn", case, W.make_data(case))
        run()
    graphs = [cf.traced_graph for f in made for cf in f._cache.values()]
    assert graphs, case
    return graphs


@pytest.mark.parametrize("case", _CASES, ids=lambda c: "%s-%s" % (c.workload, c.key))
def test_workload_graphs_do_not_depend_on_numba(case, monkeypatch):
    texts = [_assert_one_graph(g, monkeypatch, "%s %s" % (case.workload, case.key))
             for g in _traced_graphs(case, monkeypatch)]
    text = "\n".join(texts)
    if case.params.get("via") != "map_fn":      # (map_fn: a loop of one example's small ops)
        assert "fused{" in text
    if case.workload == "per_example_grads" and case.params["via"] == "vectorized_map":
        # the per-example outer products as one broadcast product each (`columns_as_product`,
        # `outer_region`), not columns joined
        assert "fused{t0=multiply(x0, x1); " in text and "concatenate" not in text, text
    if case.workload == "classifier_step":
        # the first layer's weights updated in their own buffer (a Variable's buffer only
        # tier 1 may write over, with a dead buffer beside it for calls on tier 0)
        assert re.search(r"= read_variable\(", text) and re.search(
            r"v\d+: float32\[784,128\], v\d+: float32\[784,128\] = read_variable", text), text


# ------------------------------------------------------------------ op-table samples
def _chained(rec, sample):
    """The record's call, its float array results put through an elementwise chain that ends
    in a sum (a region fusion, the sum split and buffer reuse act on)."""
    kwargs = sample.kwargs

    def f(*a):
        out = rec.call(tnp, *a, **kwargs)
        leaves = out if isinstance(out, (tuple, list)) else (out,)
        res = []
        for o in leaves:
            if isinstance(o, tnp.ndarray) and o.dtype.kind == "f" and o.ndim >= 1:
                y = tnp.maximum(o * 0.5 + 1.0, 0.0)
                res.append(tnp.sum(y * y, axis=-1))
            res.append(o)
        return tuple(res)
    return f


def _optable_cases():
    out = []
    for rec in optable.RECORDS:
        if not rec.jit or optable.F64 not in rec.dtypes:
            continue
        out.append(pytest.param(rec, id=rec.name))
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("rec", _optable_cases())
def test_optable_graphs_do_not_depend_on_numba(rec, monkeypatch):
    dt = np.dtype(optable.F64)
    samples = rec.samples(np.random.default_rng([len(rec.name), 7]), dt)
    for s in list(samples)[:2]:
        if not any(isinstance(a, np.ndarray) for a in s.args):
            continue
        with settings.override(numba="off"):
            cf = nf.function(_chained(rec, s)).get_concrete_function(
                *[to_nf(a) for a in s.args])
        _assert_one_graph(cf.traced_graph, monkeypatch, "%s%r" % (rec.name, s))


# ------------------------------------------------------------------ one operation, shared
@pytest.mark.parametrize("jit", [False, True])
def test_one_large_operation_is_a_region_where_threads_can_share_it(nf_settings, jit):
    """One elementwise operation of `settings.numba_parallel_min` elements or more is a region
    of its own when more than one thread is given (NumPy runs it on one thread): not on one
    thread, not below the limit, not in a graph that calls BLAS, not for an operation tier 1
    does not compile. Its values are NumPy's bits on every route it takes (tier 0 first, then
    tier 1 on one thread or several, timed)."""
    from ndflow.graph import fusion
    n = settings.numba_parallel_min
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal((n // 64, 64)).astype(np.float32)

    def regions(f, *args):
        return len(fusion.fused_kernels(f.get_concrete_function(*args).graph))
    nf_settings(threads=2, numba="sync", hot_calls=1)
    add = nf.function(lambda a, b: a + b, jit_compile=jit)
    assert regions(add, x, y) == 1
    assert regions(nf.function(lambda a, b: a + b, jit_compile=jit), x[:-1], y[:-1]) == 0
    # (complex: tier 1 has no loop for it)
    assert regions(nf.function(lambda a: tnp.sqrt(a), jit_compile=jit),
                   np.ones(n, np.complex64)) == 0
    blas = nf.function(lambda a, m: (a + a, m @ m.T), jit_compile=jit)
    assert regions(blas, x, w[:64]) == 0
    for _ in range(planner.PAR_AFTER + 8):
        got = add(x, y).numpy()
    np.testing.assert_array_equal(got, x + y)
    assert not np.shares_memory(got, add(x, y).numpy())
    if kernels.numba_available():
        assert planner.Route.T1_THREADS.value in nf.config.explain(add)
    nf_settings(threads=1)
    assert regions(nf.function(lambda a, b: a + b, jit_compile=jit), x, y) == 0
