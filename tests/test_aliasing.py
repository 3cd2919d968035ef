"""Memory follows NumPy on every path: a result shares memory with an input only where NumPy's
result is a view of it, never with a constant, another result or a later call's result.

(a) the op table, eagerly and compiled: write into every result and check that the inputs, the
    other results and the next call's results did not change, unless NumPy's eager result is
    a view of that input (`np.shares_memory` on NumPy's side decides);
(b) the `returns_view` trait: every primitive whose kernel returned memory of an operand while
    the op table ran declares it (the compiler's aliasing analysis trusts the trait);
(c) conversions: `tnp.array`, `tnp.asarray` (`copy=`), `nf.constant`, `nf.Variable`;
(d) compiled results: constants, equal results, identities, loops that run no iteration."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree
from ndflow.core.primitive import REGISTRY

from optable import RECORDS

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]

_CASES = [pytest.param(r, id=r.name) for r in RECORDS if r.jit]


def _seed(rec):
    return [3, len(rec.name), sum(map(ord, rec.name))]


def _samples(rec, dt):
    return rec.samples(np.random.default_rng(_seed(rec)), dt)


def _marker(buf):
    """Values to write that differ from what is there (so a shared buffer shows)."""
    k = buf.dtype.kind
    if k == "b":
        return ~buf
    if k in "iu":
        return np.asarray(buf) + np.asarray(37, buf.dtype)
    if k == "c":
        return np.full(buf.shape, 1234.5 + 2j, buf.dtype)
    return np.full(buf.shape, 1234.5, buf.dtype)


def _same(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _array_leaves(args):
    """The arrays among `args`, also inside lists and tuples (NumPy or ndflow), in order."""
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out += _array_leaves(a)
        elif isinstance(a, (np.ndarray, tnp.ndarray)):
            out.append(a)
    return out


def _host(a):
    return a.numpy() if isinstance(a, tnp.ndarray) else a


def _np_sharing(rec, sample):
    """For NumPy's result leaves: the input arrays (positions in `_array_leaves`) each is a
    view of, and which pairs of results share memory. None when NumPy raises."""
    args = sample.args
    try:
        with np.errstate(all="ignore"):
            want = rec.call(np, *args, **sample.kwargs)
    except Exception:
        return None
    wl = tree.flatten(want) if isinstance(want, (tuple, list)) else [want]
    arrs = _array_leaves(args)
    views = [{i for i, a in enumerate(arrs) if isinstance(w, np.ndarray) and np.shares_memory(w, a)}
             for w in wl]
    pairs = {(k, j) for k, a in enumerate(wl) for j, b in enumerate(wl)
             if k != j and isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
             and np.shares_memory(a, b)}
    return views, pairs


def _check_aliasing(rec, dt, compiled):
    checked = 0
    for n, s_np in enumerate(_samples(rec, dt)):
        sharing = _np_sharing(rec, s_np)
        if sharing is None:
            continue
        views, pairs = sharing

        def fresh_call():
            # the same sample again, in buffers of its own (views stay views)
            s = _samples(rec, dt)[n]
            args = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in s.args]
            if compiled:
                fn = nf.function(lambda *a: rec.call(tnp, *a, **s.kwargs))
                return args, (lambda: fn(*args))
            return args, (lambda: rec.call(tnp, *args, **s.kwargs))

        args, call = fresh_call()
        try:
            first = call()
        except Exception:
            continue
        n_out = len(tree.flatten(first)) if isinstance(first, (tuple, list)) else 1
        if n_out != len(views):
            continue
        for k in range(n_out):
            args, call = fresh_call()
            r1, r2 = call(), call()
            l1 = tree.flatten(r1) if isinstance(r1, (tuple, list)) else [r1]
            l2 = tree.flatten(r2) if isinstance(r2, (tuple, list)) else [r2]
            out = l1[k]
            if not isinstance(out, tnp.ndarray):
                continue
            buf = out.numpy()
            if buf.size == 0 or not buf.flags.writeable or buf.dtype.kind not in "biufc":
                continue
            arrs = _array_leaves(args)
            ins = {i: _host(a).copy() for i, a in enumerate(arrs)}
            others = {j: o.numpy().copy() for j, o in enumerate(l1)
                      if j != k and isinstance(o, tnp.ndarray)}
            nexts = {j: o.numpy().copy() for j, o in enumerate(l2) if isinstance(o, tnp.ndarray)}
            buf[...] = _marker(buf)
            ctx = f"{'nf.function ' if compiled else ''}{rec.name}{s_np!r}: writing into result {k}"
            for i, before in ins.items():
                if i not in views[k]:
                    assert _same(_host(arrs[i]), before), f"{ctx} changed argument {i}"
            for j, before in others.items():
                if (k, j) not in pairs and not (views[k] & views[j]):
                    assert _same(l1[j].numpy(), before), f"{ctx} changed result {j}"
            for j, before in nexts.items():
                if not (views[k] & views[j]):
                    assert _same(l2[j].numpy(), before), \
                        f"{ctx} changed result {j} of another call"
            if not views[k]:
                l3 = call()
                l3 = tree.flatten(l3) if isinstance(l3, (tuple, list)) else [l3]
                for j, before in nexts.items():
                    if not views[j]:
                        assert _same(l3[j].numpy(), before), \
                            f"{ctx} changed result {j} of the next call"
            checked += 1
    return checked


@pytest.mark.parametrize("rec", _CASES)
def test_results_share_memory_only_as_numpy_views(rec):
    dt = np.dtype(rec.dtypes[0])
    _check_aliasing(rec, dt, compiled=False)
    _check_aliasing(rec, dt, compiled=True)


# ------------------------------------------------------------------ (b) the returns_view trait
def test_returns_view_trait_covers_every_kernel_that_returns_operand_memory():
    """Run the op table through `bind` (and its gradients) with every kernel watched: a result
    that shares memory with an operand must come from a primitive that declares
    `returns_view`. Undeclared sharing would let the compiler hand out one buffer twice."""
    seen = {}
    saved = {}

    def watch(p):
        impl = p.impl

        def run(*a, **k):
            out = impl(*a, **k)
            for o in (out if p.multiple_results else (out,)):
                if isinstance(o, np.ndarray) and any(
                        isinstance(x, np.ndarray) and np.shares_memory(o, x) for x in a):
                    seen.setdefault(p.name, p)
            return out
        return run

    for p in REGISTRY:
        if p.impl is not None:
            saved[p] = p.impl
            p.impl = watch(p)
    try:
        for rec in RECORDS:
            dt = np.dtype(rec.dtypes[0])
            for s in _samples(rec, dt)[:3]:
                args = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in s.args]
                try:
                    with nf.GradientTape(persistent=True) as tape:
                        for a in args:
                            if isinstance(a, tnp.ndarray) and a.dtype.kind == "f":
                                tape.watch(a)
                        out = rec.call(tnp, *args, **s.kwargs)
                        outs = [o for o in tree.flatten(out)
                                if isinstance(o, tnp.ndarray) and o.dtype.kind == "f"]
                        loss = sum(tnp.sum(o) for o in outs) if outs else None
                    if loss is not None:
                        tape.gradient(loss, [a for a in args if isinstance(a, tnp.ndarray)
                                             and a.dtype.kind == "f"])
                except Exception:
                    continue
    finally:
        for p, impl in saved.items():
            p.impl = impl
    undeclared = sorted(name for name, p in seen.items() if not p.returns_view)
    assert not undeclared, f"kernels returned operand memory without returns_view: {undeclared}"
    assert {"reshape", "transpose", "getitem"} <= set(seen)    # the watch itself works


# ------------------------------------------------------------------ (c) conversions
def test_array_copies_as_numpy_array():
    a = np.arange(4.0)
    for make in (lambda x: tnp.array(x), lambda x: tnp.array(x, copy=True),
                 lambda x: tnp.asarray(x, copy=True), lambda x: nf.constant(x),
                 lambda x: nf.Variable(x).read_value(), lambda x: tnp.array(tnp.asarray(x))):
        t = make(a)
        a[0] = 99.0
        assert float(t[0]) == 0.0
        a[0] = 0.0
    # copy=None (np.asarray) shares a NumPy array's buffer, as NumPy does
    t = tnp.asarray(a)
    assert np.shares_memory(t.numpy(), a)
    assert np.shares_memory(tnp.array(a, copy=None).numpy(), a)
    assert np.shares_memory(tnp.asarray(a, copy=False).numpy(), a)
    x = tnp.ones(3)
    assert tnp.array(x, copy=False) is x or np.shares_memory(tnp.array(x, copy=False).numpy(),
                                                           x.numpy())
    assert not np.shares_memory(tnp.array(x).numpy(), x.numpy())


@pytest.mark.parametrize("obj,kw", [([1, 2], {}), (np.arange(3), {"dtype": np.float32}),
                                    (2.5, {}), (np.arange(3.0)[::2], {"dtype": np.int64})],
                         ids=["list", "dtype change", "scalar", "strided cast"])
def test_copy_false_raises_where_numpy_does(obj, kw):
    with pytest.raises(ValueError):
        np.array(obj, copy=False, **kw)
    with pytest.raises(ValueError):
        tnp.array(obj, copy=False, **kw)
    with pytest.raises(ValueError):
        tnp.asarray(obj, copy=False, **kw)
    with pytest.raises(ValueError):
        tnp.asarray(tnp.asarray(np.arange(3)), dtype=np.float32, copy=False)


# ------------------------------------------------------------------ (d) compiled results
def _fresh(f, *args):
    """Two calls of `f`: writing into the first's results leaves the second's unchanged."""
    r1 = f(*args)
    l1 = tree.flatten(r1)
    before = [x.numpy().copy() for x in tree.flatten(f(*args))]
    for x in l1:
        b = x.numpy()
        if b.size and b.flags.writeable:
            b[...] = _marker(b)
    after = [x.numpy() for x in tree.flatten(f(*args))]
    for b, a in zip(before, after):
        assert _same(a, b)
    return r1


def test_compiled_constants_are_fresh_each_call():
    k = nf.function(lambda: tnp.eye(2))
    e = k()
    e[0, 0] = 42
    assert float(k()[0, 0]) == 1.0
    c = tnp.arange(3.0)
    _fresh(nf.function(lambda: c))
    _fresh(nf.function(lambda: c[1:]))
    _fresh(nf.function(lambda: (tnp.zeros(3), tnp.ones((2, 2)) * 1.0, tnp.full(2, 7.0) + 0.0)))
    _fresh(nf.function(lambda x: (x * 2, tnp.ones(3))), tnp.ones(3))
    assert float(c[0]) == 0.0


def test_compiled_equal_results_are_separate_buffers():
    for f in (lambda x: (x + 1, x + 1), lambda x: (tnp.exp(x), tnp.exp(x) * 1.0),
              lambda x: (x * 1.0, x * 1.0), lambda x: (tnp.zeros(3), tnp.zeros(3))):
        r = nf.function(f)(tnp.ones(3))
        assert not np.shares_memory(r[0].numpy(), r[1].numpy())
        a, b = f(tnp.ones(3))
        assert not np.shares_memory(a.numpy(), b.numpy())     # as eagerly
    # the same array returned twice is one buffer, eagerly and compiled (NumPy: one object)
    r = nf.function(lambda x: (lambda y: (y, y))(x * 2))(tnp.ones(3))
    assert np.shares_memory(r[0].numpy(), r[1].numpy())


def test_compiled_identities_never_return_the_callers_buffer():
    a = tnp.ones(3)
    for f in (lambda x: nf.stop_gradient(x) * 1, lambda x: x * 1.0, lambda x: x + -0.0,
              lambda x: x - 0.0, lambda x: x / 1.0, lambda x: tnp.reshape(x, (3,)) * 1,
              lambda x: x ** 1.0, lambda x: tnp.astype(x, x.dtype), lambda x: tnp.copy(x),
              lambda x: nf.cond(tnp.asarray(True), lambda: x * 1.0, lambda: x)):
        r = nf.function(f)(a)
        assert not np.shares_memory(r.numpy(), a.numpy()), f
    # views stay views, as in NumPy
    r = nf.function(lambda x: x[1:])(a)
    assert np.shares_memory(r.numpy(), a.numpy())


def test_loop_that_runs_no_iteration_returns_a_fresh_result():
    f = nf.function(lambda n, x: nf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 2.0),
                                               (0, x * 1.0)))
    x = tnp.ones(2)
    i, y = f(tnp.asarray(0), x)
    i[...] = 7
    assert int(f(tnp.asarray(0), x)[0]) == 0
    assert not np.shares_memory(y.numpy(), x.numpy())


@pytest.mark.parametrize("numba", ["0", "sync"])
def test_large_results_with_buffer_reuse_and_pools_stay_separate(monkeypatch, numba, nf_settings):
    """Sizes where buffers are donated and pooled (>= 64 KiB): arguments are never written,
    results of one call never change with the next call, nor with each other."""
    nf_settings(numba=numba)
    n = 1 << 15
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    progs = [lambda a, b: (tnp.exp(a) * 2.0 + b, tnp.tanh(a) - b, a * b),
             lambda a, b: ((a + b) * (a - b), tnp.sum((a * 2.0) ** 2), a + 0.0),
             lambda a, b: (tnp.maximum(a * 3.0, b) + 1.0, tnp.sqrt(tnp.abs(a * b)) * 0.5),
             lambda a, b: (tnp.matmul(tnp.reshape(a, (128, 256)), tnp.reshape(b, (256, 128))) * 2.0,
                           b * 1.0)]
    for prog in progs:
        f = nf.function(prog)
        xa, ya = tnp.asarray(x.copy()), tnp.asarray(y.copy())
        want = [o.numpy().copy() for o in prog(tnp.asarray(x.copy()), tnp.asarray(y.copy()))]
        results = [f(xa, ya) for _ in range(5)]
        np.testing.assert_array_equal(xa.numpy(), x)
        np.testing.assert_array_equal(ya.numpy(), y)
        for r in results:
            for o, w in zip(r, want):
                np.testing.assert_allclose(o.numpy(), w, rtol=1e-12)
        bufs = [o.numpy() for r in results for o in r if o.numpy().ndim]
        for i, a in enumerate(bufs):
            for b in bufs[i + 1:]:
                assert not np.shares_memory(a, b)
            assert not np.shares_memory(a, xa.numpy()) and not np.shares_memory(a, ya.numpy())


def test_vectorized_map_results_never_share_the_inputs():
    """A loop over the examples, stacked, gives fresh arrays: so does vectorized_map, eagerly
    and compiled, whatever the per-example function returns (itself, a view, a reshape)."""
    xs = np.arange(12.0).reshape(3, 4)
    for f in (lambda x: x, lambda x: x[1:3], lambda x: tnp.reshape(x, (2, 2)),
              lambda x: nf.stop_gradient(x), lambda x: x * 1.0, lambda x: tnp.transpose(x)):
        loop = np.stack([f(tnp.asarray(e)).numpy() for e in xs])
        for run in (lambda v: nf.vectorized_map(f, v),
                    nf.function(lambda v: nf.vectorized_map(f, v)),
                    lambda v: nf.vmap(f)(v)):
            a = tnp.asarray(xs.copy())
            r = run(a)
            assert not np.shares_memory(r.numpy(), a.numpy())
            np.testing.assert_array_equal(r.numpy(), loop)


def test_numpy_arrays_returned_by_a_compiled_function_are_fresh():
    f = nf.function(lambda x: (x * 2, np.eye(2)))
    for _ in range(2):          # the general call, then the fast one
        r = f(tnp.ones(2))
        assert isinstance(r[1], np.ndarray)
        r[1][0, 0] = 42
    assert f(tnp.ones(2))[1][0, 0] == 1.0
