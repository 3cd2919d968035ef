"""Every primitive's kernel agrees with its shape/dtype rule: a compiled function and a batched
one see only the rule (`abstract`), an eager call only the kernel (`impl`), so a disagreement
makes the paths disagree (an int8 `sum_to` that was int64 eagerly and int8 compiled; argmax's
rule with axis=-1). Each op-table record's samples run eagerly and under a tape with their
gradient, with every primitive's kernel wrapped: each kernel call is checked against the rule
applied to the same arguments' shapes and dtypes."""
import contextlib
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.primitive import REGISTRY, Aval, bind
from ndflow.core import tree
from ndflow.graph.ir import eval_graph
from ndflow.primitives import reduction as R

import optable


def _aval(v):
    return Aval(np.shape(v), np.asarray(v).dtype) if isinstance(v, (np.ndarray, np.generic)) \
        else v


def _agrees(v, aval):
    """v has aval's dtype and shape (a None in it: a size that depends on the values)."""
    shape = np.shape(v)
    return np.asarray(v).dtype == aval.dtype and len(shape) == len(aval.shape) and \
        all(d is None or d == k for d, k in zip(aval.shape, shape))


def _describe(v):
    return f"{np.asarray(v).dtype}{list(np.shape(v))}"


@contextlib.contextmanager
def checked_kernels(found, calls=None):
    """Wrap every primitive's kernel: each call's results are compared with the rule's
    (shape and dtype), the differences added to `found` as {primitive name: description}."""
    saved = [(p, p.impl) for p in REGISTRY if p.impl is not None and p.abstract is not None]

    def wrap(p, impl):
        def kernel(*args, **params):
            out = impl(*args, **params)
            if calls is not None:
                calls[p.name] = calls.get(p.name, 0) + 1
            if not all(isinstance(a, (np.ndarray, np.generic)) for a in args):
                return out
            try:
                rule = p.abstract(*map(_aval, args), **params)
            except Exception as e:      # noqa: BLE001 -- a rule that fails where the kernel runs
                found.setdefault(p.name, f"rule raised {type(e).__name__}: {e} on "
                                         f"{[_describe(a) for a in args]} {params}")
                return out
            outs, rules = (out, rule) if p.multiple_results else ((out,), (rule,))
            for o, r in zip(outs, rules):
                if isinstance(o, (np.ndarray, np.generic)) and not _agrees(o, r):
                    found.setdefault(p.name, f"kernel {_describe(o)}, rule {r!r} on "
                                             f"{[_describe(a) for a in args]} {params}")
            return out
        return kernel
    for p, impl in saved:
        p.impl = wrap(p, impl)
    try:
        yield
    finally:
        for p, impl in saved:
            p.impl = impl


def _traced(rec, s, unknown=False):
    """The graph nf.function traces for the sample (its value and its gradient in the float
    arguments; with every size unknown: the run-time shape primitives), and the sample's
    arrays (the graph's inputs); None when it does not trace."""
    pos = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]

    def f(*arrs):
        args = list(s.args)
        for i, a in zip(pos, arrs):
            args[i] = a
        watched = [a for a in arrs if a.dtype.kind == "f"]
        with nf.GradientTape() as tape:
            for a in watched:
                tape.watch(a)
            out = rec.call(tnp, *args, **s.kwargs)
            loss = [tnp.sum(tnp.real(o)) for o in tree.flatten(out)
                    if isinstance(o, tnp.ndarray) and o.dtype.kind in "fc"]
        grads = tape.gradient(sum(loss), watched) if loss and watched else []
        return out, grads
    arrs = [tnp.asarray(s.args[i]) for i in pos]
    sig = [nf.TensorSpec([None] * a.ndim, a.dtype) for a in arrs] if unknown else None
    try:
        g = nf.function(f, input_signature=sig).get_concrete_function(*arrs).traced_graph
    except Exception:   # noqa: BLE001 -- an error case, or a value-dependent size
        return None
    return (g, arrs) if len(g.inputs) == len(arrs) else None


def _check_record(rec, found, calls=None):
    """Each dtype's first sample, the first dtype's second too (the first also with every
    size unknown): traced (the rules give every node's shape and dtype), then the graph run
    node by node by the kernels, each checked against the rule."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for dt in rec.dtypes:
            samples = rec.samples(np.random.default_rng(0), np.dtype(dt))
            samples = samples[:2] if dt == rec.dtypes[0] else samples[:1]
            for s, unknown in [(s, False) for s in samples] + [(s, True) for s in samples[:1]]:
                t = _traced(rec, s, unknown)
                if t is None:
                    continue
                # (with unknown sizes the rule is checked at the sizes it saw: the nodes')
                with contextlib.nullcontext() if unknown else checked_kernels(found, calls):
                    try:
                        if unknown:
                            _run_against_nodes(*t, found)
                        else:
                            eval_graph(t[0], *t[1])
                    except Exception:   # noqa: BLE001 -- a run-time error: kernels checked
                        pass


def _run_against_nodes(g, arrs, found):
    """Run a graph traced with unknown sizes node by node, each kernel's result compared with
    the node's traced shape and dtype (what the rule gave for the unknown sizes: a None matches
    any size)."""
    env = {v.id: a for v, a in zip(g.inputs, arrs)}
    env.update((c.id, c.const) for c in g.consts)
    for n in g.nodes:
        outs = bind(n.prim, *[env[v.id] for v in n.inputs], **n.params)
        outs = outs if n.prim.multiple_results else (outs,)
        for o, val in zip(n.outputs, outs):
            env[o.id] = val
            if isinstance(val, tnp.ndarray) and not _agrees(val.numpy(), o):
                found.setdefault(n.prim.name, f"kernel {_describe(val.numpy())}, traced "
                                              f"{o.dtype}{list(o.shape)} {n.params}")


_GROUPS = 8


@pytest.mark.parametrize("group", range(_GROUPS))
def test_every_kernel_agrees_with_its_rule(group):
    """The op table's records, split into groups so the test runs in parallel."""
    found = {}
    for rec in optable.RECORDS[group::_GROUPS]:
        _check_record(rec, found)
    assert not found, "\n".join(f"{k}: {v}" for k, v in sorted(found.items()))


def test_the_check_sees_a_disagreement():
    """The wrapper reports a kernel whose dtype is not its rule's (so the test above can
    fail)."""
    found = {}
    p = R.sum_to_p
    impl = p.impl
    p.impl = lambda ct, like, **k: impl(ct, like, **k).astype(np.int64)
    try:
        with checked_kernels(found):
            bind(p, tnp.ones((2, 3), np.int8), tnp.ones((3,), np.int8))
    finally:
        p.impl = impl
    assert "sum_to" in found


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.bool_, np.float16, np.int32])
def test_sum_to_keeps_the_dtype(dt):
    """sum_to (unbroadcasting a cotangent) keeps its dtype eagerly, as its rule says: the
    compiled and batched paths see only the rule. (NumPy's sum widens small integers; the
    NumPy layer's sum asks for that widening itself.)"""
    ct = tnp.ones((2, 3), dt)
    like = tnp.ones((3,), dt)
    eager = bind(R.sum_to_p, ct, like)
    compiled = nf.function(lambda c, l: bind(R.sum_to_p, c, l))(ct, like)
    assert eager.dtype == compiled.dtype == np.dtype(dt)
    np.testing.assert_array_equal(eager.numpy(), np.sum(np.ones((2, 3), dt), 0, dtype=dt))


@pytest.mark.parametrize("prim", [R.argmax_p, R.argmin_p])
@pytest.mark.parametrize("axis,keepdims", [(-1, False), (-1, True), (-2, False), (1, True)])
def test_arg_reduction_negative_axis(prim, axis, keepdims):
    """argmax_p/argmin_p bound directly with a negative axis: the rule, the kernel and the
    batch rule agree with NumPy."""
    x = np.random.default_rng(1).normal(size=(2, 3, 4))
    npf = np.argmax if prim is R.argmax_p else np.argmin
    want = npf(x, axis=axis, keepdims=keepdims)
    f = lambda v: bind(prim, v, axis=axis, keepdims=keepdims)    # noqa: E731
    for got in (f(tnp.asarray(x)), nf.function(f)(tnp.asarray(x)),
                nf.function(f, input_signature=[nf.TensorSpec([None] * 3, np.float64)])(
                    tnp.asarray(x))):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    xs = np.stack([x, -x])
    got = nf.vectorized_map(f, tnp.asarray(xs))
    np.testing.assert_array_equal(got.numpy(), np.stack([npf(v, axis=axis, keepdims=keepdims)
                                                         for v in xs]))
