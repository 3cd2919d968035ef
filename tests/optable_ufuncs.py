"""Op-table records for the ufuncs added with `tnp.ufunc` (logaddexp, hypot, fmod, frexp, ...),
and METHOD_RECORDS: the ufunc methods (reduce, accumulate, outer, at, reduceat) and call options
(out=, where=, dtype=), checked by test_ufuncs.py with the op table's generic checks (they are
not public names, so they stay out of RECORDS and its completeness test)."""
import numpy as np

from optable import (record, alias, NON_COMPUTING, OpRecord, Sample, values, noncontig,
                     unary_samples, binary_samples, _ints, FLOATS, REAL, INTS, F16,
                     F32, F64, I32, I64, U8, BOOL, C128)

# ---- new elementwise ufuncs -------------------------------------------------------------
record("logaddexp", binary_samples(), dtypes=REAL + (F16,))
record("logaddexp2", binary_samples(), dtypes=REAL + (F16,))
record("hypot", binary_samples("nonzero"), dtypes=REAL, domain="nonzero")
record("copysign", binary_samples("nonzero"), dtypes=FLOATS + (I32,), domain="nonzero")
record("fmod", binary_samples(("real", "nonzero")), dtypes=REAL, domain=("real", "nonzero"))
record("float_power", binary_samples(("base", "exponent")), dtypes=REAL,
       domain=("base", "exponent"))


def _nan_pair_samples(rng, dt):
    out = binary_samples()(rng, dt)
    if dt.kind == "f":       # (NaN results are checked in test_ufuncs.py: no finite differences)
        a = np.array([np.nan, 1.0, 1.5, -2.0, 0.5], dt)
        b = np.array([0.25, np.nan, -1.5, 3.0, -1.0], dt)
        out.append(Sample((a, b), desc="nans"))
    return out


record("fmax", _nan_pair_samples, dtypes=REAL + (F16,))
record("fmin", _nan_pair_samples, dtypes=REAL)


def _heaviside_samples(rng, dt):
    out = binary_samples("nonzero")(rng, dt)
    # zeros in x pick h0 (x as integers: finite differences must not move x across 0)
    out.append(Sample((np.array([0, -2, 3, 0, 1]), values(rng, (5,), dt)), desc="at zero"))
    return out


record("heaviside", _heaviside_samples, dtypes=FLOATS, domain="nonzero")


def _ldexp_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((2, 3)), _ints(rng, (2, 3), 4, -3))),
            Sample((v((2, 3)), _ints(rng, (3,), 4, -3)), desc="broadcast"),
            Sample((v(()), _ints(rng, (), 4, -3))),
            Sample((v((0, 3)), _ints(rng, (3,), 4, -3)), desc="empty"),
            Sample((noncontig(rng, (3, 4), dt), _ints(rng, (3, 4), 4, -3)), desc="noncontig"),
            Sample((v((2, 3)), 2), desc="python int")]


record("ldexp", _ldexp_samples, dtypes=FLOATS + (F16,))
record("frexp", unary_samples("nonzero"), dtypes=FLOATS + (F16,), domain="nonzero")
record("modf", unary_samples("nonzero"), dtypes=FLOATS, domain="nonzero")
for _n in ("deg2rad", "radians", "rad2deg", "degrees"):
    record(_n, unary_samples(), dtypes=REAL + (F16,))
record("spacing", lambda rng, dt: unary_samples("nonzero")(rng, dt) + [
    Sample((np.array([0.0, -0.0, 1.0, -1.0, np.inf], dt),), desc="special")],
       dtypes=FLOATS + (F16,), diff_args=(),
       grad_reason="piecewise constant (the gap to the next float)")


def _int_pair_samples(rng, dt):
    v = lambda s: np.asarray(rng.integers(-12, 13, size=s)).astype(dt)  # noqa: E731
    return [Sample((v((2, 3)), v((3,)))), Sample((v(()), v((4,)))), Sample((v((0, 2)), v((2,)))),
            Sample((v((3, 4)).T, v((4, 3))), desc="noncontig"),
            Sample((v((2, 3)), 6), desc="python int")]


record("gcd", _int_pair_samples, dtypes=INTS)
record("lcm", _int_pair_samples, dtypes=INTS)
record("bitwise_count", unary_samples(), dtypes=(I32, I64, U8))
alias("bitwise_left_shift", "left_shift")
alias("bitwise_right_shift", "right_shift")

# ---- generalized ufuncs (core signatures) -------------------------------------------------
_GU_DT = (F32, F64, I32, C128)
_GU_TOL = {F32: (1e-4, 1e-5)}


def _gu(fn):
    def gen(rng, dt):
        return fn(lambda s: values(rng, s, dt), lambda s: noncontig(rng, s, dt))
    return gen


record("vecdot", _gu(lambda v, nc: [
    Sample((v((4,)), v((4,)))), Sample((v((2, 3, 4)), v((4,)))), Sample((v((2, 1, 4)), v((3, 4)))),
    Sample((v((3, 4)), v((3, 4))), {"axis": 0}), Sample((nc((3, 4)), v((3, 4)))),
    Sample((v((0, 4)), v((4,))))]), dtypes=_GU_DT, tol=_GU_TOL)
record("matvec", _gu(lambda v, nc: [
    Sample((v((3, 4)), v((4,)))), Sample((v((2, 3, 4)), v((4,)))), Sample((v((3, 4)), v((2, 4)))),
    Sample((nc((3, 4)), v((4,))))]), dtypes=_GU_DT, tol=_GU_TOL)
record("vecmat", _gu(lambda v, nc: [
    Sample((v((3,)), v((3, 4)))), Sample((v((2, 3)), v((3, 4)))), Sample((v((3,)), v((2, 3, 4)))),
    Sample((v((4,)), nc((4, 3))))]), dtypes=_GU_DT, tol=_GU_TOL)

# ndflow arrays hold no datetimes, so `isnat` can only raise NumPy's TypeError (tested in
# test_ufuncs.py)
NON_COMPUTING.update({"isnat"})


# ---- ufunc methods and call options (checked by test_ufuncs.py) ---------------------------
METHOD_RECORDS = []


_FOLD = "folds along the axis one element (or pair) at a time: needs its static size"
_AT = "the repeated indices order the updates: needs the array's static shape"


def _static(reason):
    return lambda s: reason


def method_record(name, samples, **kw):
    """A record for `<ufunc>.<method>` (or a call with options): `call` defaults to
    getattr(getattr(module, ufunc), method)."""
    if "call" not in kw:
        uf, meth = name.split(".")
        kw["call"] = lambda m, *a, **k: getattr(getattr(m, uf), meth)(*a, **k)
    r = OpRecord(name, samples, **kw)
    METHOD_RECORDS.append(r)
    return r


def _reduce_samples(domain="real", reorderable=True, initial=None, has_identity=True):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, domain)  # noqa: E731
        out = [Sample((v((2, 3, 4)),), {}, "axis 0"),
               Sample((v((2, 3, 4)),), {"axis": 1}, "axis"),
               Sample((v((2, 3, 4)),), {"axis": -1, "keepdims": True}, "keepdims"),
               Sample((v((5,)),), {}, "vector"),
               Sample((noncontig(rng, (3, 4), dt, domain),), {"axis": 1}, "noncontig")]
        if reorderable:
            out += [Sample((v((2, 3, 4)),), {"axis": None}, "all"),
                    Sample((v((2, 3, 4)),), {"axis": (0, 2)}, "tuple axis")]
        if initial is not None:
            out.append(Sample((v((2, 3)),), {"axis": 1, "initial": initial}, "initial"))
            out.append(Sample((v((2, 3)),), {"axis": 0, "initial": initial,
                                             "where": values(rng, (2, 3), BOOL)}, "where"))
        if has_identity:
            out.append(Sample((v((0, 3)),), {"axis": 0}, "empty"))
        return out
    return gen


method_record("add.reduce", _reduce_samples(initial=1.5), dtypes=REAL + (BOOL,))
method_record("multiply.reduce", _reduce_samples("positive", initial=2.0), dtypes=REAL)
method_record("maximum.reduce", _reduce_samples(initial=0.5, has_identity=False),
              dtypes=REAL)
method_record("minimum.reduce", _reduce_samples(has_identity=False), dtypes=REAL)
method_record("subtract.reduce", _reduce_samples(reorderable=False, initial=1.0,
                                                 has_identity=False), dtypes=REAL,
              unknown_dims=_static(_FOLD))
method_record("true_divide.reduce", _reduce_samples("nonzero", reorderable=False,
                                                    has_identity=False), dtypes=FLOATS,
              unknown_dims=_static(_FOLD))
# (no power.reduce / arctan2.reduce records: NumPy 2.4's float loops reduce them wrongly, e.g.
# np.power.reduce([2., 3., 2.]) == 4.0; test_ufuncs.py checks ndflow's left fold instead)
method_record("fmod.reduce", _reduce_samples("nonzero", reorderable=False,
                                             has_identity=False), dtypes=REAL,
              unknown_dims=_static(_FOLD))
# (no empty samples: the identity -inf has no finite differences)
method_record("logaddexp.reduce", _reduce_samples(initial=0.5, has_identity=False),
              dtypes=FLOATS)
method_record("logaddexp2.reduce", _reduce_samples(has_identity=False), dtypes=FLOATS)
method_record("hypot.reduce", _reduce_samples("nonzero", initial=1.0), dtypes=FLOATS)


def _nan_reduce_samples(rng, dt):
    out = _reduce_samples(has_identity=False)(rng, dt)
    a = values(rng, (3, 4), dt)
    a[0, 1] = a[2, 2] = a[1, 0] = a[1, 3] = np.nan     # no all-NaN slice: test_ufuncs.py has those
    out.append(Sample((a,), {"axis": 1}, "nans"))
    out.append(Sample((a,), {"axis": 0}, "nans"))
    return out


method_record("fmax.reduce", _nan_reduce_samples, dtypes=FLOATS)
method_record("fmin.reduce", _nan_reduce_samples, dtypes=FLOATS)
method_record("logical_and.reduce", _reduce_samples(), dtypes=(BOOL, F64))
method_record("logical_or.reduce", _reduce_samples(), dtypes=(BOOL, I32))
method_record("bitwise_xor.reduce", _reduce_samples(), dtypes=(I32, U8),
              unknown_dims=_static(_FOLD))
method_record("gcd.reduce", _reduce_samples(), dtypes=(I64,),
              unknown_dims=_static(_FOLD))


def _acc_samples(domain="real", dtype_arg=True):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, domain)  # noqa: E731
        out = [Sample((v((2, 3, 4)),), {}, "axis 0"), Sample((v((2, 3, 4)),), {"axis": 2}),
               Sample((v((7,)),), {}, "vector"), Sample((v((0, 3)),), {"axis": 1}, "empty"),
               Sample((noncontig(rng, (3, 4), dt, domain),), {"axis": -1}, "noncontig")]
        if dtype_arg:
            out.append(Sample((v((3, 4)),), {"axis": 1, "dtype": np.float64}, "dtype"))
        return out
    return gen


method_record("add.accumulate", _acc_samples(), dtypes=REAL + (BOOL,))
method_record("multiply.accumulate", _acc_samples("positive"), dtypes=REAL)
method_record("maximum.accumulate", _acc_samples(), dtypes=REAL)
method_record("minimum.accumulate", _acc_samples(), dtypes=REAL)
method_record("subtract.accumulate", _acc_samples(), dtypes=REAL,
              unknown_dims=_static(_FOLD))
method_record("power.accumulate", _acc_samples("positive"), dtypes=FLOATS,
              unknown_dims=_static(_FOLD))
method_record("logaddexp.accumulate", _acc_samples(), dtypes=FLOATS,
              unknown_dims=_static(_FOLD))
method_record("hypot.accumulate", _acc_samples("nonzero"), dtypes=FLOATS,
              unknown_dims=_static(_FOLD))
method_record("fmax.accumulate", lambda rng, dt: _acc_samples()(rng, dt) + [
    Sample((np.array([1.5, 1.0, np.nan, 3.0, 2.0], dt),), {}, "nans")], dtypes=FLOATS)
method_record("logical_or.accumulate", _acc_samples(dtype_arg=False), dtypes=(BOOL,))


def _outer_samples(domain=("real", "real")):
    def gen(rng, dt):
        v0 = lambda s: values(rng, s, dt, domain[0])  # noqa: E731
        v1 = lambda s: values(rng, s, dt, domain[1])  # noqa: E731
        return [Sample((v0((3,)), v1((4,)))), Sample((v0((2, 3)), v1((2,)))),
                Sample((v0(()), v1((3,)))), Sample((v0((0,)), v1((2,))), desc="empty"),
                Sample((noncontig(rng, (3, 2), dt, domain[0]), v1((2,))), desc="noncontig")]
    return gen


method_record("add.outer", _outer_samples(), dtypes=REAL + (C128,))
method_record("multiply.outer", _outer_samples(), dtypes=REAL)
method_record("subtract.outer", _outer_samples(), dtypes=REAL)
method_record("arctan2.outer", _outer_samples(("real", "nonzero")), dtypes=FLOATS)
method_record("logaddexp.outer", _outer_samples(), dtypes=FLOATS)
method_record("divmod.outer", _outer_samples(("real", "nonzero")), dtypes=REAL)
method_record("power.outer", _outer_samples(("positive", "exponent")), dtypes=FLOATS)


def _at_call(ufname):
    def call(m, a, *rest):
        a = m.array(a, copy=True)      # `at` mutates: work on a copy (NumPy's own sample too)
        getattr(m, ufname).at(a, *rest)
        return a
    return call


def _at_samples(binary=True, traced_indices=True):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, "positive")  # noqa: E731
        idx = np.array([0, 2, 2, 4, 0, 0]) if traced_indices else [0, 2, 2, 4, 0, 0]
        out = [Sample((v((5,)), idx) + ((v((6,)),) if binary else ()), desc="repeated"),
               Sample((v((5,)), [1, 3]) + ((v(()),) if binary else ()), desc="scalar b"),
               Sample((v((3, 4)), (np.array([0, 2, 0]) if traced_indices else [0, 2, 0],
                                   [1, 1, 1])) + ((v((3,)),) if binary else ()),
                      desc="tuple index")]
        return out
    return gen


method_record("add.at", _at_samples(), dtypes=REAL, call=_at_call("add"))
method_record("subtract.at", _at_samples(), dtypes=REAL, call=_at_call("subtract"))
method_record("multiply.at", _at_samples(traced_indices=False), dtypes=REAL,
              call=_at_call("multiply"),
              unknown_dims=_static(_AT))
method_record("maximum.at", _at_samples(traced_indices=False), dtypes=FLOATS,
              call=_at_call("maximum"),
              unknown_dims=_static(_AT))
method_record("negative.at", _at_samples(binary=False, traced_indices=False), dtypes=REAL,
              call=_at_call("negative"),
              unknown_dims=_static(_AT))


def _reduceat_samples(rng, dt):
    v = lambda s: values(rng, s, dt, "positive")  # noqa: E731
    return [Sample((v((8,)), [0, 4, 1, 5])), Sample((v((8,)), [0, 3, 3, 7])),
            Sample((v((3, 6)), [0, 2, 5]), {"axis": 1}),
            Sample((v((4, 3)), [1, 0]), {"axis": 0}, "decreasing")]


method_record("add.reduceat", _reduceat_samples, dtypes=REAL)
method_record("multiply.reduceat", _reduceat_samples, dtypes=FLOATS)
method_record("maximum.reduceat", _reduceat_samples, dtypes=REAL)


def _options_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((2, 3)), v((3,)))), Sample((v(()), v((2, 2)))),
            Sample((noncontig(rng, (3, 4), dt), v((4,))), desc="noncontig")]


def _call_where_out(m, a, b):
    o = m.zeros_like(m.add(a, b))
    return m.add(a, b, out=o, where=m.greater(a, 0))


def _call_dtype(m, a, b):
    return m.multiply(a, b, dtype=np.float64)


def _call_divmod_out(m, a, b):
    q, r = m.zeros_like(m.add(a, b)), m.zeros_like(m.add(a, b))
    return m.divmod(a, b, out=(q, r))


def _call_unary_where(m, a, b):
    return m.exp(a, where=m.less(a, 0.5), out=m.ones_like(a))


method_record("add(out=, where=)", _options_samples, dtypes=FLOATS, call=_call_where_out)
method_record("multiply(dtype=)", _options_samples, dtypes=(F32, I32), call=_call_dtype)
method_record("divmod(out=)", lambda rng, dt: [
    Sample((values(rng, (2, 3), dt), values(rng, (3,), dt, "nonzero")))], dtypes=(F64,),
              call=_call_divmod_out)
method_record("exp(out=, where=)", _options_samples, dtypes=FLOATS, call=_call_unary_where)


# boolean results: nothing to differentiate
for _r in METHOD_RECORDS:
    if _r.name.startswith(("logical_and.", "logical_or.", "logical_xor.")):
        _r.diff_args, _r.grad_reason = (), "boolean results"
