"""Composite primitives: NumPy's kernel and the composition must agree.

A composite (ndflow/core/primitive.py `Composite`) runs NumPy's kernel when plain eager and its
composition over primitives everywhere else (tapes, traces, vectorized_map, forward mode). For
every registered composite this runs both on its op-table samples (tests/optable*.py, found by
name) and on special values injected into them (NaN, inf, signed zeros, ties), and checks that
they agree: structure, dtype, shape and values within the record's tolerance, NaN where the
kernel has NaN, the sign of every zero, the same error type where the kernel raises.
"""
import warnings

import numpy as np
import pytest

import ndflow.numpy as tnp
from ndflow.core.primitive import COMPOSITES, compose_composites
from ndflow.core import tree

from optable import RECORDS, OpRecord, Sample, values
from optable_ufuncs import METHOD_RECORDS
from helpers import to_nf, assert_same


def _index_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((4, 3)), 1)), Sample((v((4, 3)), -1)), Sample((v((4, 3)), (slice(1, None), 2))),
            Sample((v((4, 3)), (Ellipsis, None, slice(None, None, -2)))),
            Sample((v((4, 3)), np.array([3, 0, 3]))), Sample((v((4, 3)), (np.array([1, 2]), [0, 2]))),
            Sample((v((4, 3)), np.array([True, False, True, True]))),
            Sample((v((4, 3)), np.True_), desc="0-d mask"), Sample((v(()), ()), desc="0-d"),
            Sample((v(()), None), desc="0-d new axis"), Sample((v((0, 3)), slice(None)), desc="empty"),
            Sample((v((4, 3)), np.array([], dtype=np.int64)), desc="empty index"),
            Sample((v((4, 3)), 4), desc="out of range"),
            Sample((v((4, 3)), np.array([True, False])), desc="short mask"),
            Sample((v((4, 3)), 1.5), desc="float index")]


def _setitem_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((4, 3)), 1, v((3,)))), Sample((v((4, 3)), (slice(None), 0), 2.5)),
            Sample((v((4, 3)), np.array([3, 0, 3]), v((3, 3))), desc="repeated"),
            Sample((v((4, 3)), np.array([True, False, True, True]), v(())), desc="mask"),
            Sample((v((4, 3)), (Ellipsis, 1), v((4,)))), Sample((v(()), (), 7), desc="0-d"),
            Sample((v((4, 3)), np.True_, v((3,))), desc="0-d mask"),
            Sample((v((0, 3)), slice(None), 1.0), desc="empty"),
            Sample((v((4, 3)), 1, v((2,))), desc="bad shape"),
            Sample((v((4, 3)), 9, 1.0), desc="out of range"),
            Sample((v((3,)).astype(np.int8), 0, 300), desc="int out of range"),
            Sample((v((3,)).astype(np.int32), 0, 2.7), desc="float into int"),
            Sample((v((3,)), 0, 1 + 2j), desc="complex into real")]


def _setitem_call(m, x, key, value):
    x = m.array(x, copy=True)
    x[key] = value
    return x


# composites called by syntax (x[key], x[key] = v) or otherwise without an op-table record of
# their own name
_EXTRA = [OpRecord("getitem", _index_samples, call=lambda m, x, key: x[key]),
          OpRecord("setitem", _setitem_samples, call=_setitem_call),
          OpRecord("isnat", lambda rng, dt: [Sample((values(rng, (3,), dt),))])]


def _records(name):
    """The records that exercise composite `name`: its own, the methods' records for the
    ufunc methods ('ufunc.reduce': add.reduce, maximum.reduce ...), and the aliases'."""
    if name.startswith("ufunc."):
        return [r for r in METHOD_RECORDS if r.name.endswith(name[5:])]
    c = COMPOSITES[name]
    return [r for r in RECORDS + _EXTRA if r.name == name
            or getattr(getattr(tnp, r.name, None), "composite", None) is c]


def _special_variants(sample):
    """Copies of the sample whose first float array argument holds special values."""
    args = sample.args
    if not args or not isinstance(args[0], np.ndarray) or args[0].dtype.kind not in "fc" \
            or args[0].size == 0:
        return []
    a = args[0]
    out = []

    def variant(desc, fill):
        v = np.array(a, copy=True)
        fill(v.reshape(-1))
        out.append((desc, (v,) + tuple(args[1:]), sample.kwargs))

    def one_nan(f):
        f[0] = np.nan

    def infs(f):
        f[0] = np.inf
        f[-1] = -np.inf

    def neg_zeros(f):
        f[:] = -0.0

    def mixed_zeros(f):
        f[:] = 0.0
        f[::2] = -0.0

    def ties(f):
        f[:] = 1.0

    def all_nan(f):
        f[:] = np.nan

    def huge(f):            # sums of two overflow: a mean of one element must not double it
        f[:] = np.finfo(f.dtype).max * 0.75

    for desc, fill in (("nan", one_nan), ("inf", infs), ("-0", neg_zeros), ("+-0", mixed_zeros),
                       ("ties", ties), ("all-nan", all_nan), ("huge", huge)):
        variant(desc, fill)
    return out


def _run(rec, args, kwargs, compose):
    nf_args = [to_nf(a) for a in args]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if compose:
            with compose_composites():
                return rec.call(tnp, *nf_args, **kwargs)
        return rec.call(tnp, *nf_args, **kwargs)


def _check_signs(got, want, ctx):
    """Zeros carry the kernel's sign (assert_allclose does not look at it)."""
    for g, w in zip(tree.flatten(got), tree.flatten(want)):
        w = np.asarray(w)
        if w.dtype.kind not in "fc":
            continue
        g = np.asarray(g.numpy() if isinstance(g, tnp.ndarray) else g)
        for part in ((np.real, np.imag) if w.dtype.kind == "c" else (lambda x: x,)):
            gw, ww = part(g), part(w)
            z = ww == 0
            if np.any(z):
                np.testing.assert_array_equal(np.signbit(gw[z]), np.signbit(ww[z]),
                                              err_msg=f"{ctx}: sign of zero")


# Functions answering with one of several equal-comparing inputs (an order statistic, an
# extremum, the representative of a run of equal values). Given +0.0 and -0.0 together, which
# one NumPy returns depends on its algorithm (introselect's partition, the unstable sort inside
# unique, SIMD lanes of maximum.reduce and fmax.reduce, which even disagree with each other):
# not a property of the function, so only the value (zero) is compared for the mixed-zero
# variant. Signs are still checked for every other input, all -0.0 included (where NumPy's
# answer is defined: e.g. a median of -0.0 is +0.0).
_SELECTS_AMONG_EQUAL = {"nanmax", "nanmin", "median", "nanmedian", "quantile", "percentile",
                        "nanquantile", "nanpercentile", "unique", "unique_values", "unique_all",
                        "unique_counts", "unique_inverse", "union1d", "intersect1d",
                        "setdiff1d", "setxor1d", "fmax.reduce", "fmin.reduce"}


def _agree(rec, args, kwargs, ctx, signs=True):
    try:
        want = _run(rec, args, kwargs, compose=False)
    except Exception as e:           # the kernel refuses: the composition must refuse alike
        with pytest.raises(type(e)):
            _run(rec, args, kwargs, compose=True)
        return
    got = _run(rec, args, kwargs, compose=True)
    want_np = tree.map_structure(lambda a: a.numpy() if isinstance(a, tnp.ndarray) else a, want)
    assert_same(got, want_np, rec.tolerance, None, ctx=ctx, values=rec.values == "values")
    if rec.values == "values" and signs:
        _check_signs(got, want_np, ctx)


def test_every_composite_has_op_table_records():
    missing = sorted(n for n in COMPOSITES if not _records(n))
    assert not missing, f"composites without an op-table record to test them on: {missing}"


def test_composites_are_registered():
    # the statistics functions that used to check "nothing is watching" themselves
    for n in ("median", "quantile", "nanvar", "cov", "cumsum", "nanargmax"):
        assert n in COMPOSITES
        assert getattr(tnp, n).composite is COMPOSITES[n]


def test_kernel_path_is_numpy():
    # plain eager: the composite answers with NumPy's own result, bit for bit
    x = np.array([3.0, -0.0, np.nan, 1.5, 2.0])
    np.testing.assert_array_equal(tnp.nanmedian(tnp.asarray(x)).numpy(), np.nanmedian(x))
    with compose_composites():
        r = tnp.nanmedian(tnp.asarray(x))
    np.testing.assert_array_equal(r.numpy(), np.nanmedian(x))


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_kernel_and_composition_agree(name):
    recs = _records(name)
    if not recs:
        pytest.fail(f"no op-table record for composite {name!r}")
    for rec in recs:
        for dt in rec.dtypes:
            rng = np.random.default_rng([len(name), sum(map(ord, name)), np.dtype(dt).num])
            for s in rec.samples(rng, np.dtype(dt)):
                _agree(rec, s.args, s.kwargs, f"{name}{s!r}")
                for desc, args, kwargs in _special_variants(s):
                    _agree(rec, args, kwargs, f"{rec.name}[{desc}]{s!r}",
                           signs=not (desc == "+-0" and (name in _SELECTS_AMONG_EQUAL
                                                         or rec.name in _SELECTS_AMONG_EQUAL)))


def test_out_and_unsupported_arguments_take_the_composition():
    # the kernel has no `out=` to write into: the composition runs and writes it
    x = tnp.asarray(np.array([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]]))
    out = tnp.zeros(2)
    r = tnp.median(x, axis=1, out=out)
    assert r is out
    np.testing.assert_array_equal(out.numpy(), np.median(x.numpy(), axis=1))
    # descending sort is the composition (a flip of the kernel's ascending sort)
    np.testing.assert_array_equal(tnp.sort(x, descending=True).numpy(),
                                  -np.sort(-x.numpy()))


def test_forcing_the_composition_is_per_thread_and_restored():
    import threading
    from ndflow.core.state import STATE
    assert STATE.fast
    seen = []
    with compose_composites():
        assert not STATE.fast
        t = threading.Thread(target=lambda: seen.append(STATE.fast))
        t.start()
        t.join()
    assert STATE.fast and seen == [True]


def test_a_tape_sees_the_composition():
    import ndflow as nf
    x = tnp.asarray(np.array([3.0, 1.0, 2.0, 5.0]))
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = tnp.median(x)
    g = tape.gradient(y, x)
    np.testing.assert_array_equal(g.numpy(), [0.5, 0.0, 0.5, 0.0])
