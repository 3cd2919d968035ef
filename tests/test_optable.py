"""The op table's generic suite: every record of `optable.RECORDS` is checked for
(a) values, dtypes and shapes against NumPy on each route of the eager door (plain, the tape
    lane, general; the other routes: test_optable_routes.py),
(b) `nf.function` against eager, without retracing, also with every size unknown,
(c) reverse-mode gradients against central differences (directional, float64), second order
    from nested tapes, the backward pass compiled (known and unknown sizes) and batched
    (per-example gradients), float32 gradients staying float32,
(d) `vectorized_map` and `vmap(in_axes=1)` against a Python loop, and
(e) completeness: every public function has a record, every primitive its rules.
Plus `tnp.random` against NumPy's streams."""
import contextlib
import types

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import dispatch, tree
from ndflow.core.primitive import REGISTRY, compose_composites

import optable
from optable import RECORDS, F64, Sample, kinds_of
from helpers import to_nf, assert_same, assert_close_nf

# NumPy's own warnings for samples it answers with NaN or a cast (mean over a fully masked
# slice, sum(complex, dtype=float64)): the same on both sides, not ndflow's doing
pytestmark = [pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]

_CASES = [pytest.param(r, np.dtype(d), id="%s-%s" % (r.name, np.dtype(d).name))
          for r in RECORDS for d in r.dtypes]
_F64_RECORDS = [pytest.param(r, id=r.name) for r in RECORDS if F64 in r.dtypes]
# Not-applicable checks are not generated (rather than skipped): each exclusion is declared in
# the record with its reason (jit=False, vmap=False + vmap_reason, diff_args=() + grad_reason)
# and listed by test_declared_exclusions.
_JIT_CASES = [c for c in _CASES if c.values[0].jit]


def _takes_arrays(rec, dt):
    """Creation functions (zeros, arange, ...) take only Python values: nothing to map over or
    to trace with unknown sizes. Sample structure does not depend on the generator."""
    return any(isinstance(a, np.ndarray) for smp in rec.samples(np.random.default_rng(0), dt)
               for a in smp.args)


def _traceable_with_unknown_sizes(rec, dt):
    """Some functions need concrete sizes while tracing (a clear ValueError, declared in the
    record's `unknown_dims` with the reason): only samples it does not exclude are checked."""
    return any(any(isinstance(a, np.ndarray) for a in smp.args)
               and not (rec.unknown_dims and rec.unknown_dims(smp))
               for smp in rec.samples(np.random.default_rng(0), dt))


# (unknown sizes test the shape rules: one dtype of each kind per record, optable.kinds_of)
_ARRAY_CASES = [c for c in _JIT_CASES if _traceable_with_unknown_sizes(*c.values)
                and c.values[1] in kinds_of(c.values[0])]
_VMAP_CASES = [c for c in _CASES if c.values[0].vmap and _takes_arrays(*c.values)]
_DIFF_F64 = [c for c in _F64_RECORDS if c.values[0].diff_args != ()]


def _seeded(rec, dt, k=0):
    return np.random.default_rng([k, len(rec.name), sum(map(ord, rec.name)), dt.num])


def _eval(rec, sample, module=tnp, args=None):
    args = sample.args if args is None else args
    conv = to_nf if module is tnp else (lambda a: a)
    return rec.call(module, *[conv(a) for a in args], **sample.kwargs)


# ------------------------------------------------------------------ (a) values vs NumPy
@contextlib.contextmanager
def door(route):
    """The mode that sends eager calls to the door's `route` (core/dispatch.py): 'plain'
    (nothing active), 'lane' (a recording tape, NumPy's promotion), 'general' (a recording
    tape, composites composed)."""
    with contextlib.ExitStack() as stack:
        if route == "general":
            stack.enter_context(compose_composites())
        if route != "plain":
            stack.enter_context(nf.GradientTape())
        yield


@pytest.mark.parametrize("rec,dt", _CASES)
def test_values_match_numpy(rec, dt):
    """Each sample on each route of the eager door, against NumPy."""
    rtol, atol = rec.tolerance, None
    for s in rec.samples(_seeded(rec, dt), dt):
        with np.errstate(all="ignore"):
            want = _eval(rec, s, np)
        for route in dispatch.DOOR_ROUTES:
            with door(route):
                assert dispatch.door_route() == route
                got = _eval(rec, s)
            assert_same(got, want, rtol, atol, ctx=f"({route}) {rec.name}{s!r}",
                        values=rec.values == "values")


# ------------------------------------------------------------------ (b) compiled vs eager
def _same_structure(s1, s2):
    """s2's arrays with s1's Python values, so the second call hits the first call's trace."""
    return Sample(tuple(b if isinstance(b, np.ndarray) else a for a, b in zip(s1.args, s2.args)),
                  s1.kwargs, s1.desc)


@pytest.mark.parametrize("rec,dt", _JIT_CASES)
def test_function_matches_eager(rec, dt):
    rtol, atol = rec.tolerance, None
    first = rec.samples(_seeded(rec, dt, 1), dt)
    second = rec.samples(_seeded(rec, dt, 2), dt)
    for s1, s2 in zip(first, second):
        s2 = _same_structure(s1, s2)
        kwargs = s1.kwargs

        def f(*a):
            return rec.call(tnp, *a, **kwargs)
        fn = nf.function(f)
        for s in (s1, s2):
            got = fn(*[to_nf(a) for a in s.args])
            want = _eval(rec, s)
            assert_close_nf(got, want, rtol, atol, ctx=f"nf.function {rec.name}{s!r}") \
                if rec.values == "values" else assert_same(
                    got, tree.map_structure(lambda a: a.numpy(), want), ctx=rec.name,
                    values=False)
        assert fn.experimental_get_tracing_count() == 1, \
            f"{rec.name}{s1!r}: a second call with the same shapes retraced"


@pytest.mark.parametrize("rec,dt", _ARRAY_CASES)
def test_function_with_unknown_sizes_matches_eager(rec, dt):
    """Traced with every dimension unknown (input_signature of Nones): the shape rules work with
    unknown sizes, one trace serves every shape."""
    ran = False
    for s in rec.samples(_seeded(rec, dt, 6), dt):
        pos = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]
        if not pos or (rec.unknown_dims and rec.unknown_dims(s)):
            continue
        sig = [nf.TensorSpec([None] * s.args[i].ndim, s.args[i].dtype) for i in pos]

        def f(*arrs, s=s, pos=pos):
            args = list(s.args)
            for i, a in zip(pos, arrs):
                args[i] = a
            return rec.call(tnp, *args, **s.kwargs)
        xs = [tnp.asarray(s.args[i]) for i in pos]
        got = nf.function(f, input_signature=sig)(*xs)
        want = f(*xs)
        if rec.values == "values":
            assert_close_nf(got, want, rec.tolerance, None, ctx=f"unknown sizes {rec.name}{s!r}")
        else:
            assert_same(got, tree.map_structure(lambda a: a.numpy(), want), values=False,
                        ctx=f"unknown sizes {rec.name}{s!r}")
        ran = True
    assert ran, f"{rec.name}: no sample could be traced with unknown sizes"


# ------------------------------------------------------------------ (c) gradients
def _diff_positions(rec, sample):
    pos = [i for i, a in enumerate(sample.args)
           if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    if rec.diff_args is not None:
        pos = [i for i in pos if i in rec.diff_args]
    return pos


def _float_leaves(out):
    return [o for o in tree.flatten(out)
            if isinstance(o, tnp.ndarray) and o.dtype.kind == "f"]


def _loss_np(rec, sample, args, cts):
    outs = _float_leaves(_eval(rec, sample, tnp, args))
    return float(sum(np.sum(o.numpy() * c) for o, c in zip(outs, cts)))


@pytest.mark.parametrize("rec", _DIFF_F64)
def test_gradient_matches_central_differences(rec):
    rng = _seeded(rec, F64, 3)
    checked = 0
    for s in rec.samples(rng, F64):
        pos = _diff_positions(rec, s)
        if not pos:
            continue
        xs = [to_nf(a) for a in s.args]
        with nf.GradientTape() as tape:
            for i in pos:
                tape.watch(xs[i])
            outs = _float_leaves(rec.call(tnp, *xs, **s.kwargs))
            if not outs:
                break
            cts = [rng.standard_normal(o.shape) for o in outs]
            loss = sum(tnp.sum(o * c) for o, c in zip(outs, cts))
        grads = tape.gradient(loss, [xs[i] for i in pos], unconnected_gradients="zero")
        dirs = [rng.standard_normal(s.args[i].shape) for i in pos]
        for i, g in zip(pos, grads):
            assert isinstance(g, tnp.ndarray), f"{rec.name}{s!r}: gradient is {g!r}"
            assert g.shape == s.args[i].shape and g.dtype == s.args[i].dtype, \
                f"{rec.name}{s!r}: gradient {g.dtype}{g.shape} for input " \
                f"{s.args[i].dtype}{s.args[i].shape}"
        analytic = float(sum(np.sum(g.numpy() * d) for g, d in zip(grads, dirs)))
        h = rec.grad_eps
        rtol, atol = rec.grad_tol
        if any(o.dtype != F64 for o in outs):
            # a float32/16 result (dtype= argument) is too coarse for small steps
            h, rtol, atol = max(h, 1e-3), max(rtol, 1e-3), max(atol, 1e-4)

        def shifted(eps):
            args = list(s.args)
            for i, d in zip(pos, dirs):
                args[i] = np.asarray(s.args[i] + eps * d)
            return _loss_np(rec, s, args, cts)
        numeric = (shifted(h) - shifted(-h)) / (2 * h)
        scale = 1.0 + abs(float(loss.numpy()))
        assert abs(analytic - numeric) <= rtol * abs(numeric) + atol * scale, \
            f"{rec.name}{s!r}: reverse-mode directional derivative {analytic!r}, central " \
            f"differences {numeric!r}"
        checked += 1
    assert checked, (f"{rec.name}: no sample has a float input and a float output; declare "
                     f"diff_args=() with a grad_reason in its record")


_F32_RECORDS = [pytest.param(r, id=r.name) for r in RECORDS if optable.F32 in r.dtypes]
_DIFF_F32 = [c for c in _F32_RECORDS if c.values[0].diff_args != ()]


@pytest.mark.parametrize("rec", _DIFF_F32)
def test_float32_gradients_stay_float32(rec):
    """Gradients have their input's dtype: no silent float64 from constants in the rules."""
    rng = _seeded(rec, optable.F32, 5)
    checked = 0
    for s in rec.samples(rng, optable.F32):
        pos = _diff_positions(rec, s)
        if not pos:
            continue
        xs = [to_nf(a) for a in s.args]
        with nf.GradientTape() as tape:
            for i in pos:
                tape.watch(xs[i])
            outs = _float_leaves(rec.call(tnp, *xs, **s.kwargs))
            loss = sum(tnp.sum(o) for o in outs)
        if not outs:
            continue
        for i, g in zip(pos, tape.gradient(loss, [xs[i] for i in pos],
                                           unconnected_gradients="zero")):
            assert g.dtype == s.args[i].dtype and g.shape == s.args[i].shape, \
                f"{rec.name}{s!r}: gradient {g.dtype}{g.shape} for {s.args[i].dtype}" \
                f"{s.args[i].shape}"
        checked += 1
    assert checked, (f"{rec.name}: no sample has a float input and a float output; declare "
                     f"diff_args=() with a grad_reason in its record")


@pytest.mark.parametrize("rec", _DIFF_F64)
def test_second_order_gradient(rec):
    """Hessian-vector products from nested tapes against differences of gradients."""
    rng = _seeded(rec, F64, 4)
    checked = 0
    for s in rec.samples(rng, F64):
        pos = _diff_positions(rec, s)
        if not pos:
            continue
        if checked == 4:   # second order is costly: the first four differentiable samples
            break
        cts_box = []

        def grad_dot(args, d2):
            xs = [to_nf(a) for a in args]
            with nf.GradientTape() as outer:
                for i in pos:
                    outer.watch(xs[i])
                with nf.GradientTape() as inner:
                    for i in pos:
                        inner.watch(xs[i])
                    outs = _float_leaves(rec.call(tnp, *xs, **s.kwargs))
                    if not cts_box:
                        cts_box.append([rng.standard_normal(o.shape) for o in outs])
                    loss = sum(tnp.sum(o * c) for o, c in zip(outs, cts_box[0]))
                gs = inner.gradient(loss, [xs[i] for i in pos], unconnected_gradients="zero")
                gd = sum(tnp.sum(g * d) for g, d in zip(gs, d2))
            hv = outer.gradient(gd, [xs[i] for i in pos], unconnected_gradients="zero")
            return float(gd.numpy()) if isinstance(gd, tnp.ndarray) else float(gd), hv
        d1 = [rng.standard_normal(s.args[i].shape) for i in pos]
        d2 = [rng.standard_normal(s.args[i].shape) for i in pos]
        if not _float_leaves(_eval(rec, s)):
            break
        _, hv = grad_dot(s.args, d2)
        analytic = float(sum(np.sum(h.numpy() * d) for h, d in zip(hv, d1)))
        h = 1e-5

        def shifted(eps):
            args = list(s.args)
            for i, d in zip(pos, d1):
                args[i] = np.asarray(s.args[i] + eps * d)
            return grad_dot(args, d2)[0]
        numeric = (shifted(h) - shifted(-h)) / (2 * h)
        assert abs(analytic - numeric) <= 1e-4 * abs(numeric) + 1e-5 * (1 + abs(numeric)), \
            f"{rec.name}{s!r}: second-order directional derivative {analytic!r}, " \
            f"differences of gradients {numeric!r}"
        checked += 1
    assert checked, (f"{rec.name}: no sample has a float input and a float output; declare "
                     f"diff_args=() with a grad_reason in its record")


def _grad_fn(rec, sample, pos, cts):
    """x's -> gradients of sum(f(x) * cts) w.r.t. the arguments at `pos`."""
    def g(*arrs):
        args = list(sample.args)
        for i, a in zip(pos, arrs):
            args[i] = a
        with nf.GradientTape() as tape:
            for i in pos:
                tape.watch(args[i])
            outs = _float_leaves(rec.call(tnp, *args, **sample.kwargs))
            loss = sum(tnp.sum(o * c) for o, c in zip(outs, cts))
        return tape.gradient(loss, [args[i] for i in pos], unconnected_gradients="zero")
    return g


@pytest.mark.parametrize("rec", _DIFF_F64)
def test_gradient_compiled_and_batched_match_eager(rec):
    """The backward pass traced into a graph, and per-example gradients from vectorized_map,
    equal the eager gradients."""
    checked = 0
    groups = zip(*[rec.samples(_seeded(rec, F64, 20 + k), F64) for k in range(3)])
    for ss in groups:
        s = ss[0]
        pos = _diff_positions(rec, s)
        outs = _float_leaves(_eval(rec, s)) if pos else []
        if not outs:
            continue
        cts = [tnp.asarray(np.random.default_rng(k).standard_normal(o.shape))
               for k, o in enumerate(outs)]
        g = _grad_fn(rec, s, pos, cts)
        xs = [tnp.asarray(s.args[i]) for i in pos]
        want = g(*xs)
        got = nf.function(g)(*xs)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"nf.function gradient {rec.name}{s!r}")
        checked += 1
        if not rec.vmap:     # no batching (data-dependent sizes): only the compiled part
            continue
        # per-example gradients: the same cotangents, three examples
        examples = [[tnp.asarray(e.args[i]) for i in pos] for e in ss]
        loop = [g(*ex) for ex in examples]
        stacked = tuple(tnp.stack([ex[j] for ex in examples]) for j in range(len(pos)))
        got = nf.vectorized_map(lambda xs: g(*xs), stacked)
        for j in range(len(pos)):
            np.testing.assert_allclose(
                got[j].numpy(), np.stack([lp[j].numpy() for lp in loop]), rtol=1e-10,
                atol=1e-12, err_msg=f"vectorized_map gradient {rec.name}{s!r}")
    assert checked, (f"{rec.name}: no sample has a float input and a float output; declare "
                     f"diff_args=() with a grad_reason in its record")


@pytest.mark.parametrize("rec", [c for c in _DIFF_F64
                                 if _traceable_with_unknown_sizes(c.values[0], F64)])
def test_gradient_with_unknown_sizes_matches_eager(rec):
    """The backward pass traced with every size unknown (broadcasting, reshapes and splits are
    then undone at run time) equals the eager gradient."""
    checked = 0
    for s in rec.samples(_seeded(rec, F64, 7), F64):
        pos = _diff_positions(rec, s)
        apos = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]
        if not pos or (rec.unknown_dims and rec.unknown_dims(s)):
            continue
        outs = _float_leaves(_eval(rec, s))
        if not outs:
            continue
        cts = [tnp.asarray(np.random.default_rng(k).standard_normal(o.shape))
               for k, o in enumerate(outs)]
        sig = [nf.TensorSpec([None] * s.args[i].ndim, s.args[i].dtype) for i in apos]

        def g(*arrs, s=s):
            args = list(s.args)
            for i, a in zip(apos, arrs):
                args[i] = a
            with nf.GradientTape() as tape:
                for i in pos:
                    tape.watch(args[i])
                outs = _float_leaves(rec.call(tnp, *args, **s.kwargs))
                loss = sum(tnp.sum(o * c) for o, c in zip(outs, cts))
            return tape.gradient(loss, [args[i] for i in pos], unconnected_gradients="zero")
        xs = [tnp.asarray(s.args[i]) for i in apos]
        for got, want in zip(nf.function(g, input_signature=sig)(*xs), g(*xs)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"unknown sizes gradient {rec.name}{s!r}")
        checked += 1
    assert checked, (f"{rec.name}: no sample has a float input and a float output; declare "
                     f"diff_args=() with a grad_reason in its record")


# ------------------------------------------------------------------ (d) batching vs a loop
def _batch_cases(rec, dt):
    """Per sample: (per-example function of the arrays, the 3 examples' arrays)."""
    groups = zip(*[rec.samples(_seeded(rec, dt, 10 + k), dt) for k in range(3)])
    for ss in groups:
        s0 = ss[0]
        pos = [i for i, a in enumerate(s0.args) if isinstance(a, np.ndarray)]
        if not pos:
            continue

        def per(*arrs, s0=s0, pos=pos):
            args = list(s0.args)
            for i, a in zip(pos, arrs):
                args[i] = a
            return rec.call(tnp, *args, **s0.kwargs)
        yield s0, per, [[s.args[i] for i in pos] for s in ss]


def _loop(per, examples):
    outs = [per(*[tnp.asarray(a) for a in ex]) for ex in examples]
    flat = [tree.flatten(o) for o in outs]
    d = tree.flatten_with_def(outs[0])[1]
    return tree.unflatten(d, [np.stack([np.asarray(f[k].numpy()) for f in flat])
                              for k in range(len(flat[0]))])


@pytest.mark.parametrize("rec,dt", _VMAP_CASES)
def test_vectorized_map_matches_loop(rec, dt):
    rtol, atol = rec.tolerance, None
    ran = False
    for s0, per, examples in _batch_cases(rec, dt):
        want = _loop(per, examples)
        stacked = tuple(tnp.asarray(np.stack(col)) for col in zip(*examples))
        got = nf.vectorized_map(lambda xs: per(*xs), stacked)
        assert_same(got, want, rtol, atol, ctx=f"vectorized_map {rec.name}{s0!r}",
                    values=rec.values == "values")
        # vmap with the batch on axis 1 (axis 0 for per-example scalars)
        axes = tuple(1 if np.ndim(a) >= 1 else 0 for a in examples[0])
        moved = tuple(tnp.asarray(np.stack(col, axis=ax)) for col, ax in zip(zip(*examples), axes))
        got = nf.vmap(per, in_axes=axes)(*moved)
        assert_same(got, want, rtol, atol, ctx=f"vmap(in_axes={axes}) {rec.name}{s0!r}",
                    values=rec.values == "values")
        ran = True
    assert ran, f"{rec.name}: no sample to map over"


# ------------------------------------------------------------------ (e) completeness
def _public_callables(module, exclude):
    out = []
    for n in dir(module):
        if n.startswith("_") or n in exclude:
            continue
        v = getattr(module, n)
        if isinstance(v, (types.ModuleType, type)) or not callable(v):
            continue
        out.append(n)
    return out


def test_every_public_function_has_a_record():
    names = _public_callables(tnp, optable.NON_COMPUTING)
    have = optable.by_name()
    missing = sorted(n for n in names if n not in have)
    assert not missing, "public ndflow.numpy functions without an op-table record: " + \
        ", ".join(missing)


def test_records_name_real_functions():
    fake = {"asarray_lists"}   # extra records that call a real function in another way
    def exists(name):       # submodule records are named "fft.rfft", "linalg.inv", ...
        obj = tnp
        for part in name.split("."):
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    unknown = [r.name for r in RECORDS if r.name not in fake and not exists(r.name)]
    assert not unknown, f"records for names ndflow.numpy does not have: {unknown}"
    names = [r.name for r in RECORDS]
    assert len(names) == len(set(names)), "duplicate records"


def test_non_computing_allow_list_is_current():
    stale = sorted(n for n in optable.NON_COMPUTING if not hasattr(tnp, n))
    assert not stale, f"allow-listed names that no longer exist: {stale}"


# Primitives that may produce floats but have no VJP and/or batching rule, and why.
RULE_EXCEPTIONS = optable.RULE_EXCEPTIONS


def test_primitives_have_vjp_and_batch_rules():
    bad = []
    for p in REGISTRY:
        if p.name in RULE_EXCEPTIONS:
            continue
        missing = [k for k in ("impl", "abstract", "vjp", "batch") if getattr(p, k) is None]
        if missing:
            bad.append(f"{p.name} (missing {', '.join(missing)})")
    assert not bad, "primitives without rules: " + "; ".join(bad)


def test_rule_exceptions_are_current():
    names = {p.name for p in REGISTRY}
    assert set(RULE_EXCEPTIONS) <= names, set(RULE_EXCEPTIONS) - names


# ------------------------------------------------------------------ tnp.random vs NumPy
_LEGACY = [
    ("randn", (2, 3), {}), ("rand", (4,), {}), ("standard_normal", (), {"size": (2, 2)}),
    ("normal", (1.5, 2.0, (3, 2)), {}), ("uniform", (-1.0, 3.0, (5,)), {}),
    ("randint", (0, 10, (2, 5)), {}), ("randint", (7,), {"size": 4}), ("random", ((3,),), {}),
    ("randn", (), {}), ("normal", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", _LEGACY, ids=[x[0] for x in _LEGACY])
def test_random_legacy_stream_matches_numpy(name, args, kwargs):
    tnp.random.seed(1234)
    got = getattr(tnp.random, name)(*args, **kwargs)
    np.random.seed(1234)
    want = getattr(np.random, name)(*args, **kwargs)
    assert_same(got, np.asarray(want), ctx=name)


@pytest.mark.parametrize("method,args", [("normal", (0.0, 1.0, (2, 3))), ("uniform", (0, 2, 4)),
                                         ("integers", (0, 5, (3,))), ("random", ((2, 2),)),
                                         ("standard_normal", ((3,),))])
def test_default_rng_matches_numpy(method, args):
    got = getattr(tnp.random.default_rng(7), method)(*args)
    want = getattr(np.random.default_rng(7), method)(*args)
    assert_same(got, np.asarray(want), ctx=method)


def test_random_prefer_float32():
    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    assert tnp.random.randn(2).dtype == np.float32
    assert tnp.random.uniform(size=3).dtype == np.float32
    assert tnp.random.randint(0, 3, size=2).dtype == np.int64


def test_random_shapes_and_ranges():
    tnp.random.seed(0)
    u = tnp.random.uniform(2.0, 3.0, size=(100,)).numpy()
    assert u.shape == (100,) and u.min() >= 2.0 and u.max() < 3.0
    r = tnp.random.randint(-2, 2, size=(50,)).numpy()
    assert set(np.unique(r)) <= {-2, -1, 0, 1}
    with pytest.raises(ValueError):
        tnp.random.randint(3, 3)


def test_declared_exclusions():
    """Every check a record opts out of says why (the reasons are the documentation)."""
    bad = [r.name for r in RECORDS
           if (not r.vmap and not r.vmap_reason) or (r.diff_args == () and not r.grad_reason)]
    assert not bad, "records that opt out of a check without a reason: " + ", ".join(bad)
