"""The eager door (ndflow/core/dispatch.py): the one place an eager call chooses its route.

* Nothing outside ndflow/core/ reads the mode state (`GLOBAL.fast`, `STATE.fast`,
  `STATE.lane`, `taping`): code that must know asks the door (`plain()`,
  `writes_in_place(x)`).
* Every array the door builds field by field (the hottest routes, in place of a call to
  `_wrap`) is `_wrap`'s array: each such statement group is reached here and its result
  compared field by field with `_wrap`'s.
* The routes give the same answer: the tape lane records what the general route records (the
  same primitives, operands, values and gradients, bit for bit), for array and Python-scalar
  partners on either side; `bind`'s routes; the writes' two routes; the plain route of
  `tnp.matmul` and of the ufunc methods against NumPy, errors included.
"""
import gc
import importlib.util
import os
import sys
import threading

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import dispatch as D
from ndflow.core.ndarray import ndarray, _wrap
from ndflow.core.primitive import bind, compose_composites
from ndflow.core.state import STATE
from ndflow.primitives import elementwise as E, linalg as L, reduction as R
from helpers import assert_bits_equal, value_bits, tape_data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tools_metrics():
    spec = importlib.util.spec_from_file_location("_ndflow_tools_metrics",
                                                  os.path.join(ROOT, "tools", "metrics.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


# ------------------------------------------------------------------ one place
# autodiff/tape.py's backward pass still reads `st.fast` (the eager backward plan moves out of
# it in another change of issue 21); nothing else may
_MODE_READS_ELSEWHERE = ("ndflow/autodiff/",)


def test_no_mode_state_read_outside_core():
    found = _tools_metrics().mode_checks_outside_core(ROOT)
    stray = [m for m in found if not m.replace(os.sep, "/").startswith(_MODE_READS_ELSEWHERE)]
    assert not stray, ("reads of the mode state outside ndflow/core/ (the eager door chooses "
                       "routes; ask core.dispatch.plain() or writes_in_place()):\n  "
                       + "\n  ".join(stray))


def test_entries_are_the_doors():
    # the entry kinds are instantiated from the door's templates, not written out again
    assert type(tnp.exp).__call__ is D.ufunc_unary
    assert type(tnp.add).__call__ is D.ufunc_binary
    assert type(tnp.divmod).__call__ is D.ufunc_call
    assert type(tnp.matmul).__call__ is D.gufunc_call
    code = D.binary_operator(np.add, "add").__code__
    for op in ("__add__", "__radd__", "__mul__", "__rtruediv__", "__matmul__", "__lt__"):
        assert getattr(ndarray, op).__code__ is code, op
    assert ndarray.__neg__.__code__ is D.unary_operator(np.negative, "negative").__code__
    assert ndarray.__iadd__.__code__ is ndarray.__ipow__.__code__
    assert ndarray.__iadd__.__code__ is D.inplace_operator(np.add, None).__code__
    call = D.composite_call(tnp.reshape.composite).__code__
    for f in (tnp.reshape, tnp.sum, tnp.var, tnp.add.reduce, tnp.add.accumulate):
        assert getattr(f, "__func__", f).__code__ is call
    assert bind.__code__ is D.make_bind(None).__code__


# ------------------------------------------------------------------ one constructor
def _fields(o):
    return {s: getattr(o, s, "<unset>") for s in ndarray.__slots__
            if s not in ("_v", "__weakref__")}


def _results(x):
    return [e for r in (x if isinstance(x, (tuple, list)) else (x,))
            for e in (r if isinstance(r, (tuple, list)) else (r,)) if isinstance(e, ndarray)]


def _battery():
    """Calls reaching every route of the door that builds an array (plain and lane)."""
    a = tnp.asarray(np.array([1.5, -2.0, 0.0]))
    b = tnp.asarray(np.array([0.5, 3.0, -0.0]))
    m = tnp.asarray(np.arange(4.0).reshape(2, 2))
    out, taped = [], []
    plain = [lambda: a + b, lambda: a * 2.5, lambda: 2 * a, lambda: -a, lambda: tnp.exp(a),
             lambda: tnp.exp(1.5), lambda: tnp.add(a, b), lambda: tnp.add(a, 2),
             lambda: tnp.divmod(a, b), lambda: tnp.matmul(m, m), lambda: m @ m,
             lambda: tnp.reshape(a, (3, 1)), lambda: tnp.sum(a), lambda: tnp.add.reduce(a),
             lambda: tnp.add.accumulate(a), lambda: a[0], lambda: a[1:], lambda: a[b > 0],
             lambda: bind(E.exp_p, a), lambda: tnp.var(a)]
    with np.errstate(all="ignore"):
        for f in plain:
            out.append(f())
        with nf.GradientTape() as t:
            t.watch([a, b, m])
            for f in (lambda: a * b, lambda: a - 1.0, lambda: 1.0 - a, lambda: tnp.exp(a),
                      lambda: tnp.maximum(a, 0), lambda: tnp.sum(a), lambda: tnp.matmul(m, m),
                      lambda: m @ m, lambda: tnp.square(a), lambda: bind(E.exp_p, a),
                      lambda: tnp.divmod(a, b), lambda: tnp.var(a), lambda: a[0]):
                taped.append(f())
    return out, taped


def _run_lines(fn, path):
    """fn()'s result and the line numbers of `path` it ran."""
    lines = set()

    def local(frame, event, arg):
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def glob(frame, event, arg):
        return local if frame.f_code.co_filename == path else None
    sys.settrace(glob)
    try:
        r = fn()
    finally:
        sys.settrace(None)
    return r, lines


def test_every_array_the_door_builds_is_wraps():
    path = D.__file__
    with open(path) as fh:
        sites = [i for i, line in enumerate(fh, 1) if "_new(_ndarray)" in line]
    assert len(sites) >= 5
    results, ran = _run_lines(_battery, path)
    missed = [i for i in sites if i not in ran]
    assert not missed, f"dispatch.py lines {missed} build an array that this test never reaches"
    want = _fields(_wrap(np.zeros(1)))
    n = 0
    for r, taped in [(r, False) for r in results[0]] + [(r, True) for r in results[1]]:
        for o in _results(r):
            got = _fields(o)
            if taped:
                # (a recording tape gives what it records an identity)
                assert got.pop("_tid") > 0
                got["_tid"] = 0
            assert type(o) is ndarray and got == want, (o, _fields(o))
            n += 1
    assert n >= 30


# ------------------------------------------------------------------ the routes agree
_SCALAR_PROGRAMS = [
    ("2 * x", lambda x: 2 * x), ("x * 2", lambda x: x * 2),
    ("1 - x", lambda x: 1 - x), ("x - 1.5", lambda x: x - 1.5),
    ("1.0 / (1 + exp(-x))", lambda x: 1.0 / (1 + tnp.exp(-x))),
    ("maximum(0, x)", lambda x: tnp.maximum(0, x)), ("minimum(x, -0.0)", lambda x: tnp.minimum(x, -0.0)),
    ("300 + x", lambda x: 300 + x), ("x < 1000", lambda x: x < 1000),
    ("2.5 ** x", lambda x: 2.5 ** x), ("x ** 3", lambda x: x ** 3),
]


def _outcome(f):
    try:
        with np.errstate(all="ignore"):
            return ("value", f())
    except Exception as e:
        return ("raises", type(e))


@pytest.mark.parametrize("name,prog", _SCALAR_PROGRAMS, ids=[p[0] for p in _SCALAR_PROGRAMS])
def test_lane_with_python_scalars_on_either_side_is_the_general_route(name, prog):
    # the lane takes a Python int or float beside an array as a scalar of the array's dtype
    # where NumPy's loop does; its values, dtypes, errors and gradients are the general
    # route's (compose_composites: no lane) and NumPy's
    for dtype in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int64):
        xv = (tape_data((8,), np.float64, 3) * 3).astype(dtype) if np.dtype(dtype).kind == "f" \
            else np.array([0, 1, 2, 5, 7, 100, 3, 1], dtype)
        x = tnp.asarray(xv)

        def run():
            with nf.GradientTape() as t:
                t.watch(x)
                y = prog(x)
                loss = tnp.sum(tnp.where(y == y, y, 0) * 1.0) if y.dtype.kind == "f" else None
            g = t.gradient(loss, x) if loss is not None else None
            return value_bits(y), value_bits(g)

        got = _outcome(run)
        with compose_composites():
            general = _outcome(run)
        want = _outcome(lambda: prog(xv))
        assert got == general, (name, dtype)
        assert got[0] == want[0], (name, dtype, got, want)
        if got[0] == "value":
            assert got[1][0] == value_bits(want[1]), (name, dtype)


def test_lane_records_what_the_general_route_records():
    x = tnp.asarray(tape_data((6,), np.float32, 1))
    w = tnp.asarray(tape_data((6, 6), np.float32, 2))

    def prog():
        with np.errstate(all="ignore"):
            return [x * x, 2.0 * x, x - 1, tnp.exp(x), tnp.maximum(x, 0), tnp.matmul(w, x),
                    w @ w, tnp.sum(x), tnp.square(x), bind(E.sin_p, x)]

    def records(compose):
        from ndflow.autodiff import tape as T
        seen = []
        real = T.GradientTape._record

        def spy(self, prim, args, outs, params):
            seen.append((prim, [value_bits(a) for a in args], dict(params)))
            return real(self, prim, args, outs, params)
        T.GradientTape._record = spy
        try:
            with nf.GradientTape() as t:
                t.watch([x, w])
                if compose:
                    with compose_composites():
                        r = prog()
                else:
                    r = prog()
        finally:
            T.GradientTape._record = real
        return [value_bits(v) for v in r], seen

    lane, general = records(False), records(True)
    assert lane[0] == general[0]
    assert [(p, a) for p, a, _ in lane[1]] == [(p, a) for p, a, _ in general[1]]
    for (p, _, kw), (_, _, kw2) in zip(lane[1], general[1]):
        assert kw == kw2, p


def test_the_lane_takes_the_calls_it_should(monkeypatch):
    # (the door's coverage: these calls under a tape take the lane, not the general route, so
    # the agreement tests above compare two routes, not one with itself)
    from ndflow.numpy import reductions
    general, applied = [], []
    real_general, real_apply = tnp.ufunc._general, D.apply_taped
    monkeypatch.setattr(tnp.ufunc, "_general",
                        lambda self, *a: general.append(self.__name__) or real_general(self, *a))
    monkeypatch.setattr(D, "apply_taped",
                        lambda p, a, k, t: applied.append((p, k)) or real_apply(p, a, k, t))
    x = tnp.asarray(np.array([1.0, -2.0]))
    m = tnp.asarray(np.eye(2))
    with nf.GradientTape() as t:
        t.watch([x, m])
        x * x, 2 * x, x - 1.0, tnp.exp(x), m @ m, tnp.matmul(m, m), tnp.sum(x), bind(E.neg_p, x)
    assert general == []
    assert [p for p, _ in applied] == [E.mul_p, E.mul_p, E.sub_p, E.exp_p, L.matmul_p,
                                       L.matmul_p, R.reduce_sum_p, E.neg_p]
    assert applied[6][1] is reductions._SUM_ALL[1]       # the sum's lane, not its composition
    applied.clear()
    x32 = tnp.asarray(np.array([1.0], np.float32))
    with nf.GradientTape() as t:
        t.watch([x, x32])
        x * x32, tnp.add(x, 1, dtype=np.float32), x + True, tnp.sum(x, axis=0)
    # mixed dtypes, options and bool partners take the general route (its conversions first)
    assert general == ["multiply", "add", "add"]
    assert applied[-1][0] is R.reduce_sum_p and applied[-1][1] is not reductions._SUM_ALL[1]


# ------------------------------------------------------------------ bind's routes
def test_bind_routes():
    x = tnp.asarray(np.array([0.5, -0.0, np.inf]))
    want = np.exp(x.numpy())
    assert_bits_equal(bind(E.exp_p, x).numpy(), want)                  # plain
    with nf.GradientTape() as t:                                        # eager under a tape
        t.watch(x)
        y = bind(E.exp_p, x)
    assert_bits_equal(y.numpy(), want)
    assert_bits_equal(t.gradient(y, x).numpy(), want)
    nf.experimental_enable_numpy_behavior(dtype_conversion_mode="all")  # not plain, no tape
    try:
        assert not STATE.fast and STATE.eager and STATE.lane is None
        assert_bits_equal(bind(E.exp_p, x).numpy(), want)
    finally:
        nf.experimental_enable_numpy_behavior(dtype_conversion_mode="legacy")
    f = nf.function(lambda v: bind(E.exp_p, v))                         # general (traced)
    assert_bits_equal(f(x).numpy(), want)


# ------------------------------------------------------------------ the mode, for others
def _plain_test():
    # the expression form generated code uses (graph/function.py's call entries)
    return eval(D.PLAIN_TEST, dict(D.PLAIN_NAMES))


def test_plain_and_writes_in_place_are_per_thread():
    gc.collect()            # (writes_in_place is false while any tape, even a dead one, holds)
    x = tnp.asarray(np.zeros(3))
    assert D.plain() and _plain_test() and D.writes_in_place(x)
    seen = []
    with nf.GradientTape() as t:
        assert not D.plain() and not _plain_test() and not D.writes_in_place(x)
        th = threading.Thread(target=lambda: seen.append(
            (D.plain(), _plain_test(), D.writes_in_place(x))))
        th.start()
        th.join()
        t.watch(x)
        y = x * 2
    assert seen == [(True, True, True)]
    with compose_composites():                  # a switch: not plain (and no tape)
        assert not D.plain() and not _plain_test() and not D.writes_in_place(x)
    # the finished tape holds x's buffer: a write goes through the mutation model (the tape
    # gets its copy first) until the tape is gone
    assert D.plain() and not D.writes_in_place(x)
    del t, y
    gc.collect()
    assert D.writes_in_place(x)


def test_writes_in_place_and_recorded_give_numpys_values():
    a = np.arange(6.0)
    x = tnp.asarray(a.copy())
    v = x[2:]                                  # a view: sees the in-place write
    x[3] = -0.0
    x += 1
    w = a.copy()
    w[3] = -0.0
    w += 1
    assert_bits_equal(x.numpy(), w)
    assert_bits_equal(v.numpy(), w[2:])
    y = tnp.asarray(a.copy())
    with nf.GradientTape() as t:
        t.watch(y)
        y[3] = -0.0
        y += 1
        loss = tnp.sum(y * y)
    assert_bits_equal(y.numpy(), w)
    g = t.gradient(loss, y)
    assert g is not None


# ------------------------------------------------------------------ plain routes vs NumPy
def test_matmul_plain_route_is_numpys():
    rng = np.random.default_rng(0)
    for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 2, 3), (3, 2)),
                   ((0, 3), (3, 2))]:
        for dt in (np.float32, np.float64, np.int32, np.complex64):
            a = (rng.standard_normal(sa) * 3).astype(dt)
            b = (rng.standard_normal(sb) * 3).astype(dt)
            r = tnp.matmul(tnp.asarray(a), tnp.asarray(b))
            w = np.matmul(a, b)
            assert type(r) is ndarray and r.shape == np.shape(w)
            assert_bits_equal(r.numpy(), w)
    a = tnp.asarray(np.ones((2, 2)))
    for bad in (2.0, tnp.asarray(np.ones(3))):
        with pytest.raises(ValueError):
            tnp.matmul(a, bad)
        with pytest.raises(ValueError):
            np.matmul(np.ones((2, 2)), bad.numpy() if isinstance(bad, ndarray) else bad)


@pytest.mark.parametrize("method", ["reduce", "accumulate", "reduceat"])
def test_ufunc_methods_plain_and_composed_raise_numpys_errors(method):
    x = tnp.asarray(np.arange(4.0))
    args = ([0, 2],) if method == "reduceat" else ()
    for uf in ("exp", "divmod", "matmul"):
        try:
            getattr(getattr(np, uf), method)(x.numpy(), *args)
        except Exception as e:
            want = (type(e), str(e))
        for compose in (False, True):
            with (compose_composites() if compose else np.errstate()):
                with pytest.raises(want[0]) as got:
                    getattr(getattr(tnp, uf), method)(x, *args)
            assert str(got.value) == want[1], (uf, compose)
    r = getattr(tnp.add, method)(x, *args)
    assert_bits_equal(r.numpy(), getattr(np.add, method)(x.numpy(), *args))
