"""The reductions' `dtype=` and `where=` on every path (eager, under a recording tape, compiled
by nf.function with known and with unknown sizes, vectorized_map against a loop): the result's
dtype and value are NumPy's, an integer `dtype=` truncating the mean as NumPy does, float16 and
complex dtypes kept, an empty slice NaN (not -0.0) with unknown sizes. Drawn with hypothesis
over the family, the input and `dtype=` dtypes, shapes (0-d, empty, size 1), axes, keepdims and
masks; tests/paths_agree.py runs the paths and compares them bit-carefully."""
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import ndflow as nf
import ndflow.numpy as tnp

from optable import OpRecord, Sample
import paths_agree as P

_IN = ("bool", "int8", "int32", "uint8", "float16", "float32", "float64", "complex64")
_OUT = (None, "bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64",
        "complex64", "complex128")
# name -> (takes where=, takes keepdims=, a NaN-ignoring function)
_FAMILY = {"mean": (True, True, False), "var": (True, True, False),
           "std": (True, True, False), "sum": (True, True, False),
           "prod": (True, True, False), "nansum": (True, True, True),
           "nanprod": (True, True, True), "nanmean": (True, True, True),
           "nanvar": (True, True, True), "nanstd": (True, True, True),
           "cumsum": (False, False, False), "cumprod": (False, False, False),
           "nancumsum": (False, False, True), "nancumprod": (False, False, True)}
_SHAPES = ((), (0,), (1,), (4,), (2, 3), (0, 3), (3, 1), (2, 0, 2))


def _values(rng, shape, dt, nans):
    """Small values (integer dtypes do not overflow a product or a square: NumPy's wrap-around
    would then be the only thing compared), NaN and -0.0 where the dtype has them."""
    v = rng.integers(-3, 4, size=shape).astype(np.float64)
    if np.dtype(dt).kind == "u":
        v = np.abs(v)
    a = v.astype(dt)
    if np.dtype(dt).kind in "fc" and a.size:
        if nans:
            a[rng.random(shape) < 0.3] = np.nan
        a[rng.random(shape) < 0.2] = -0.0
        if np.dtype(dt).kind == "c":
            a = a + (1j * rng.integers(-2, 3, size=shape)).astype(dt)
    return a


def _case(name, dt, out, shape, axis, keepdims, masked, seed):
    rng = np.random.default_rng(seed)
    has_where, has_keep, nan = _FAMILY[name]
    kw = {}
    if out is not None:
        kw["dtype"] = np.dtype(out)
    if axis is not None:
        kw["axis"] = axis
    if keepdims and has_keep:
        kw["keepdims"] = True
    if masked and has_where:
        mshape = shape[-1:] if rng.random() < 0.5 else shape
        kw["where"] = rng.random(mshape) < 0.6
    batch = [Sample((_values(rng, shape, dt, nan),), kw, "drawn") for _ in range(3)]
    for s in batch:
        s.layouts = ["as_is"]
    return types.SimpleNamespace(sample=batch[0], batch=batch, seed=seed)


def _axis(shape, draw):
    if not shape:
        return draw(st.sampled_from([None]))
    nd = len(shape)
    return draw(st.sampled_from([None, 0, -1, nd - 1] + ([(0, nd - 1)] if nd > 1 else [])))


@st.composite
def cases(draw, names=tuple(_FAMILY)):
    name = draw(st.sampled_from(names))
    shape = draw(st.sampled_from(_SHAPES))
    axis = _axis(shape, draw)
    if name.startswith(("cum", "nancum")) and isinstance(axis, tuple):
        axis = -1
    return (name, draw(st.sampled_from(_IN)), draw(st.sampled_from(_OUT)), shape, axis,
            draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 2 ** 16)))


def _record(name):
    return OpRecord(name, lambda rng, dt: [], dtypes=("float64",))


def _check(name, dt, out, shape, axis, keepdims, masked, seed):
    rec = _record(name)
    case = _case(name, dt, out, shape, axis, keepdims, masked, seed)
    problems = P.check_case(rec, case)
    assert not problems, f"{name} {dt} dtype={out} {case.sample!r}: " + "; ".join(problems)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_reductions_dtype_where_agree_on_every_path(c):
    _check(*c)


@pytest.mark.parametrize("c", [
    ("mean", "int32", "int8", (3,), None, False, False, 0),           # 2, not 2.33
    ("mean", "float16", None, (2, 3), 0, False, False, 1),            # summed in float32
    ("var", "complex64", None, (2, 3), 1, False, True, 2),            # float32, not float64
    ("var", "float64", None, (0, 3), 0, False, False, 3),             # NaN, not -0.0
    ("std", "float32", None, (2, 0, 2), -1, True, False, 4),
    ("nanmean", "float64", "int32", (4,), None, False, False, 5),     # TypeError everywhere
    ("nanvar", "float32", "bool", (2, 3), 0, False, False, 6),
    ("std", "int32", "int64", (2, 3), 0, False, False, 7),            # TypeError (sqrt's out=)
    ("std", "int32", "int64", (4,), None, False, False, 8),           # 0-d: cast back
    ("cumsum", "int8", None, (4,), None, False, False, 9),            # int64, as NumPy
    ("cumprod", "bool", "int8", (2, 3), -1, False, False, 10),
])
def test_reductions_dtype_known_cases(c):
    _check(*c)


def test_empty_variance_is_nan_with_unknown_sizes():
    f = nf.function(lambda x: (tnp.var(x, axis=0), tnp.std(x), tnp.mean(x, axis=0)),
                    input_signature=[nf.TensorSpec([None, None], np.float64)])
    v, s, m = (np.asarray(r.numpy()) for r in f(tnp.zeros((0, 2))))
    assert np.isnan(v).all() and v.shape == (2,) and np.isnan(s) and np.isnan(m).all()


@pytest.mark.parametrize("c", [
    ("prod", "int8", "complex64", (2, 3), None, False, True, 1),      # found by the test above
    ("prod", "complex64", "complex64", (3, 2, 2), 0, False, True, 3),
    ("prod", "float32", "complex128", (4,), 0, True, True, 0)])
def test_complex_prod_skips_what_where_leaves_out(c):
    """NumPy's prod(where=) skips the masked elements; multiplying them in as 1+0j instead
    turns an imaginary -0 into +0 (the sign of zero differed on every path)."""
    _check(*c)


def _exact_record(name, dtypes):
    return OpRecord(name, lambda rng, dt: [], dtypes=("float64",),
                    tol={np.dtype(d): (0, 0) for d in dtypes})


@pytest.mark.parametrize("name,dt,kw", [
    ("sum", "float64", {"where": 0.8}),
    ("sum", "float32", {"where": 0.95}),
    ("sum", "float16", {"where": 0.5}),
    ("sum", "float32", {"where": 0.7, "initial": 0.3}),
    ("sum", "float16", {"dtype": "float32"}),            # cast in NumPy's 8192-element buffers
    ("sum", "int32", {"dtype": "float32"}),
    ("sum", "float16", {"dtype": "float32", "where": 0.9}),
    ("mean", "float32", {"where": 0.8}),
    ("mean", "float16", {}),                              # summed in float32
    ("var", "float64", {"where": 0.6}),
    ("nansum", "float32", {"where": 0.7}),
])
@pytest.mark.parametrize("n", [9, 100, 9000, 20000])
def test_sums_add_in_numpys_order_on_every_path(name, dt, kw, n):
    """NumPy's sum with `where=` adds each run of selected elements to the total, and with a
    cast it sums buffers of 8192 elements: neither is the pairwise sum of a masked or cast
    array, so the bits differed from NumPy's on every path (eager too, with a mask) for sizes
    from 9 up. Normal values (not small integers, whose sums are exact in any order), compared
    bit for bit on every path."""
    rng = np.random.default_rng(n)
    kw = dict(kw)
    density = kw.pop("where", None)
    if "dtype" in kw:
        kw["dtype"] = np.dtype(kw["dtype"])
    batch = []
    for _ in range(3):
        x = (rng.standard_normal(n) * (50 if dt == "int32" else 1)).astype(dt)
        if density is not None:
            if name.startswith("nan"):
                x[rng.random(n) < 0.1] = np.nan
            kw = dict(kw, where=rng.random(n) < density)
        batch.append(Sample((x,), dict(kw), "drawn"))
    for s in batch:
        s.layouts = ["as_is"]
    case = types.SimpleNamespace(sample=batch[0], batch=batch, seed=n)
    rec = _exact_record(name, (dt, "float32", "float64"))
    problems = P.check_case(rec, case)
    assert not problems, f"{name} {dt} {kw.keys()} n={n}: " + "; ".join(problems)
