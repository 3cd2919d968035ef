"""The op table: one record per public function of `ndflow.numpy`.

A record says how to call the function on arrays (`call(module, *args, **kwargs)`, the same code
for `numpy` and `ndflow.numpy`, so NumPy is the oracle), how to make sample inputs (scalars,
broadcasting, empty and non-contiguous arrays, in the function's domain), which dtypes to test,
which arguments are differentiable and the tolerance per dtype. `test_optable.py` runs every
record through the same checks: values vs NumPy (eagerly and through `bind`), compiled vs eager
(with known and with unknown sizes), gradients vs central differences (first and second order,
compiled, batched, float32), `vectorized_map`/`vmap` vs a loop.

Adding a function to `ndflow.numpy`: add a `record(...)` below (the completeness test fails
until you do); reuse a sample family (`unary_samples`, `binary_samples`, `reduction_samples`)
where one fits.

Sample arguments are NumPy arrays (they become ndflow arrays; views stay views, so a transposed
sample is a non-contiguous ndflow array) or Python values (passed as they are to both sides).
Sample generators use the random generator only for values, never for structure, so two calls
with different generators give inputs of the same shapes (the no-retrace and batching checks
rely on that).
"""
import dataclasses
from typing import Callable, Optional

import numpy as np

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I32, I64, U8 = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8)
C128 = np.dtype(np.complex128)
BOOL = np.dtype(np.bool_)

FLOATS = (F32, F64)
INTS = (I32, I64)
REAL = (F32, F64, I32)
DEFAULT_TOL = {F16: (1e-2, 1e-3), F32: (2e-5, 1e-6), F64: (1e-10, 1e-12),
               np.dtype(np.complex64): (2e-5, 1e-6), C128: (1e-10, 1e-12)}


@dataclasses.dataclass
class Sample:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    desc: str = ""

    def __repr__(self):
        def d(a):
            if isinstance(a, np.ndarray):
                nc = "" if a.flags.c_contiguous or a.size <= 1 else ",noncontig"
                return "%s%s%s" % (a.dtype.name, list(a.shape), nc)
            return repr(a)
        return "%s(%s%s)" % (self.desc, ", ".join(d(a) for a in self.args),
                             "".join(", %s=%r" % kv for kv in self.kwargs.items()))


@dataclasses.dataclass
class OpRecord:
    name: str
    samples: Callable                       # samples(rng, dtype) -> [Sample]
    dtypes: tuple = FLOATS
    call: Optional[Callable] = None         # call(module, *args, **kwargs); default module.<name>
    domain: object = "real"                 # documentation of the sample domain
    diff_args: Optional[tuple] = None       # None: every float array argument; (): none
    tol: dict = dataclasses.field(default_factory=dict)   # dtype -> (rtol, atol)
    grad_tol: tuple = (1e-6, 1e-8)          # directional derivative (rtol, atol), float64
    grad_eps: float = 1e-6                  # central-difference step
    values: str = "values"                  # 'values', or 'meta' (shape/dtype only: empty)
    jit: bool = True
    vmap: bool = True
    vmap_reason: str = ""
    grad_reason: str = ""
    # sample -> reason it cannot be compiled with every size unknown (None: it can)
    unknown_dims: Optional[Callable] = None
    # edge inputs (tests/test_grad_edges.py) where the function has no derivative, so the
    # gradient is a convention not checked there: {edge: reason}; an edge is 'zeros', 'negzero',
    # 'ties' or 'mixed', '/2' after it for second order only, 'c:' before it for complex only
    edge_reasons: dict = dataclasses.field(default_factory=dict)
    # tests/test_paths_agree.py: {exclusion: reason} for a comparison or path this record
    # legitimately does not take part in (the kinds are paths_agree.EXCLUSIONS)
    paths_reasons: dict = dataclasses.field(default_factory=dict)
    # device_canon(result, sample) -> the form results are compared in on a device
    # (tests/test_backends.run_record_on_device), where NumPy leaves part of the answer to the
    # implementation and a device library picks differently (a partition's order inside its
    # segments, eigenvector signs); both NumPy's result and the device's are canonicalized
    device_canon: Optional[Callable] = None

    def __post_init__(self):
        if self.call is None:
            name = self.name

            def call(m, *args, **kwargs):
                return getattr(m, name)(*args, **kwargs)
            self.call = call

    def tolerance(self, dtype):
        """(rtol, atol) for results of `dtype` (exact for integers and bools)."""
        dtype = np.dtype(dtype)
        if dtype in self.tol:
            return self.tol[dtype]
        return DEFAULT_TOL.get(dtype, (0, 0))

    def __repr__(self):
        return "OpRecord(%s)" % self.name


# ------------------------------------------------------------------ values in a domain
_FLOAT_DOMAIN = {
    "real": (-2.0, 2.0), "positive": (0.5, 2.0), "unit": (-0.9, 0.9), "gt1": (1.2, 3.0),
    "gtm1": (-0.8, 2.0), "small": (-1.2, 1.2), "nonzero": (0.3, 2.0), "base": (0.5, 2.0),
    "exponent": (-2.0, 2.0), "small_nonneg": (0.0, 3.0),
}
_INT_DOMAIN = {
    "real": (-5, 6), "positive": (1, 6), "unit": (0, 1), "gt1": (2, 5), "gtm1": (0, 6),
    "small": (-1, 2), "nonzero": (1, 6), "base": (1, 4), "exponent": (0, 4),
    "small_nonneg": (0, 4),
}


def values(rng, shape, dtype, domain="real"):
    """Random values of `shape` and `dtype` in `domain` (a NumPy array, 0-d for shape ())."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) > 0.5)
    if dtype.kind in "iu":
        lo, hi = _INT_DOMAIN[domain]
        if dtype.kind == "u":
            lo = max(lo, 0)
        v = rng.integers(lo, hi, size=shape)
        if domain == "nonzero":
            v = v * rng.choice(np.array([-1, 1]) if dtype.kind == "i" else np.array([1]), size=shape)
        return np.asarray(v).astype(dtype)
    if dtype.kind == "c":
        re = values(rng, shape, np.float64, domain)
        im = values(rng, shape, np.float64, domain)
        return np.asarray(re + 1j * im).astype(dtype)
    lo, hi = _FLOAT_DOMAIN[domain]
    v = rng.uniform(lo, hi, size=shape)
    if domain == "nonzero":
        v = v * rng.choice(np.array([-1.0, 1.0]), size=shape)
    return np.asarray(v).astype(dtype)


def noncontig(rng, shape, dtype, domain="real"):
    """Same as `values` but a non-contiguous view (transposed, or every other element)."""
    shape = tuple(shape)
    if len(shape) >= 2:
        a = values(rng, shape[::-1], dtype, domain).T
    elif len(shape) == 1:
        a = values(rng, (2 * shape[0],), dtype, domain)[::2]
    else:
        return values(rng, shape, dtype, domain)
    assert a.shape == shape
    return a


def pyscalar(rng, dtype, domain="real"):
    """A Python scalar of the kind of `dtype` (weak in promotion)."""
    v = values(rng, (), dtype, domain).item()
    kind = np.dtype(dtype).kind
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind](v)


def _dom(domain, i):
    return domain[i] if isinstance(domain, tuple) else domain


# ------------------------------------------------------------------ sample families
UNARY_SHAPES = [(), (3,), (2, 3), (0, 3), (2, 1, 4)]


def unary_samples(domain="real"):
    def gen(rng, dt):
        out = [Sample((values(rng, s, dt, domain),), desc="shape") for s in UNARY_SHAPES]
        out.append(Sample((noncontig(rng, (3, 4), dt, domain),), desc="noncontig"))
        return out
    # tests/test_paths_agree.py draws other shapes for this family
    gen.family, gen.domains = "unary", (domain,)
    return gen


BINARY_SHAPES = [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 3)),
                 ((0, 3), (3,)), ((), (2, 3))]


def binary_samples(domain="real", scalars=True):
    d0, d1 = _dom(domain, 0), _dom(domain, 1)

    def gen(rng, dt):
        out = [Sample((values(rng, a, dt, d0), values(rng, b, dt, d1)), desc="broadcast")
               for a, b in BINARY_SHAPES]
        out.append(Sample((noncontig(rng, (3, 4), dt, d0), noncontig(rng, (3, 4), dt, d1)),
                          desc="noncontig"))
        if scalars:
            out.append(Sample((values(rng, (2, 3), dt, d0), pyscalar(rng, dt, d1)),
                              desc="python scalar"))
            out.append(Sample((pyscalar(rng, dt, d0), values(rng, (3,), dt, d1)),
                              desc="python scalar"))
        return out
    gen.family, gen.domains = "binary", (d0, d1)
    return gen


def reduction_samples(domain="real", allow_empty=True, tuple_axes=True):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, domain)  # noqa: E731
        out = [Sample((v((2, 3, 4)),), {}, "all"),
               Sample((v((2, 3, 4)),), {"axis": 1}, "axis"),
               Sample((v((2, 3, 4)),), {"axis": -1}, "negative axis"),
               Sample((v((2, 3, 4)),), {"axis": 1, "keepdims": True}, "keepdims"),
               Sample((v((2, 3, 4)),), {"keepdims": True}, "all keepdims"),
               Sample((v(()),), {}, "scalar"),
               Sample((v((5,)),), {"axis": 0}, "vector"),
               Sample((noncontig(rng, (3, 4), dt, domain),), {"axis": 0}, "noncontig")]
        if tuple_axes:
            out.append(Sample((v((2, 3, 4)),), {"axis": (0, 2)}, "tuple axis"))
        if allow_empty:
            out.append(Sample((v((0, 3)),), {"axis": 1}, "empty"))
        return out
    return gen


def arg_reduction_samples(rng, dt):
    v = lambda s: values(rng, s, dt, "real")  # noqa: E731
    return [Sample((v((2, 3, 4)),), {}, "flat"),
            Sample((v((2, 3, 4)),), {"axis": 1}, "axis"),
            Sample((v((2, 3, 4)),), {"axis": -1, "keepdims": True}, "keepdims"),
            Sample((v((5,)),), {"axis": 0}, "vector"),
            Sample((noncontig(rng, (3, 4), dt, "real"),), {"axis": 0}, "noncontig")]


def _const(*samples):
    """Samples with no random content (creation functions)."""
    return lambda rng, dt: [s(dt) if callable(s) else s for s in samples]


def _ints(rng, shape, hi, lo=0):
    return np.asarray(rng.integers(lo, hi, size=shape)).astype(np.int64)


# ------------------------------------------------------------------ the table
RECORDS = []


def record(name, samples, **kw):
    r = OpRecord(name, samples, **kw)
    RECORDS.append(r)
    return r


def alias(name, of):
    """A record for an alias: same samples and settings as `of`, called by its own name."""
    base = next(r for r in RECORDS if r.name == of)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(OpRecord)
              if f.name not in ("name", "call")}
    return record(name, **fields)


# ---- creation -------------------------------------------------------------------------
_CREATE_DT = (F32, F64, I32, I64, BOOL)
record("zeros", _const(Sample(((2, 3),)), Sample((3,)), Sample(((),)), Sample(((0, 2),)),
                       lambda dt: Sample(((2, 3),), {"dtype": dt})), dtypes=_CREATE_DT)
record("ones", _const(Sample(((2, 3),)), Sample((3,)), Sample(((),)), Sample(((0, 2),)),
                      lambda dt: Sample(((2, 3),), {"dtype": dt})), dtypes=_CREATE_DT)
record("empty", _const(Sample(((2, 3),)), Sample((3,)), Sample(((0, 2),)),
                       lambda dt: Sample(((2, 3),), {"dtype": dt})), dtypes=_CREATE_DT,
       values="meta")
record("full", _const(Sample(((2, 3), 1.5)), Sample((3, 7)), Sample(((), True)),
                      Sample(((0, 2), 2.0)), lambda dt: Sample(((2, 3), 1), {"dtype": dt})),
       dtypes=_CREATE_DT)
_LIKE_DT = (F32, F64, I32, BOOL)


def _like_samples(extra=()):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt)  # noqa: E731
        return [Sample((v((2, 3)),) + extra), Sample((v(()),) + extra),
                Sample((v((0, 3)),) + extra), Sample((noncontig(rng, (3, 4), dt),) + extra),
                Sample((v((2, 3)),) + extra, {"dtype": np.float32}),
                Sample((v((2, 3)),) + extra, {"shape": (3, 2)})]
    return gen


record("zeros_like", _like_samples(), dtypes=_LIKE_DT)
record("ones_like", _like_samples(), dtypes=_LIKE_DT)
record("empty_like", _like_samples(), dtypes=_LIKE_DT, values="meta")
record("full_like", _like_samples((2,)), dtypes=_LIKE_DT)
record("arange", _const(Sample((5,)), Sample((1, 7, 2)), Sample((0.0, 1.0, 0.25)), Sample((-3,)),
                        Sample((5, 1, -1)), lambda dt: Sample((6,), {"dtype": dt})),
       dtypes=(F32, F64, I32, I64))
record("linspace", _const(Sample((0, 1, 5)), Sample((0.0, 1.0, 4), {"endpoint": False}),
                          Sample((2, 3, 0)), Sample((0, 1, 5), {"retstep": True}),
                          lambda dt: Sample((-1, 1, 7), {"dtype": dt})), dtypes=FLOATS)
record("logspace", _const(Sample((0, 2, 5)), Sample((0, 1, 4), {"base": 2.0}),
                          lambda dt: Sample((0, 2, 3), {"dtype": dt})), dtypes=FLOATS)
record("geomspace", _const(Sample((1, 1000, 4)), Sample((1.0, 16.0, 5), {"endpoint": False}),
                           lambda dt: Sample((1, 8, 4), {"dtype": dt})), dtypes=FLOATS)
record("eye", _const(Sample((3,)), Sample((3, 4)), Sample((3, 4, 1)), Sample((4,), {"k": -2}),
                     lambda dt: Sample((2,), {"dtype": dt})), dtypes=_CREATE_DT)
record("identity", _const(Sample((3,)), Sample((0,)), lambda dt: Sample((2,), {"dtype": dt})),
       dtypes=_CREATE_DT)


def _conversion_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((2, 3)),)), Sample((v(()),)), Sample((v((0, 2)),)),
            Sample((noncontig(rng, (3, 4), dt),)), Sample((v((2, 3)),), {"dtype": np.float64})]


record("asarray", _conversion_samples, dtypes=_LIKE_DT)
record("asanyarray", _conversion_samples, dtypes=_LIKE_DT)
record("ascontiguousarray", _conversion_samples, dtypes=_LIKE_DT)
record("array", lambda rng, dt: _conversion_samples(rng, dt) + [
    Sample((values(rng, (3,), dt),), {"ndmin": 3})], dtypes=_LIKE_DT)
record("copy", lambda rng, dt: _conversion_samples(rng, dt)[:4], dtypes=_LIKE_DT)
record("astype", lambda rng, dt: [Sample((values(rng, (2, 3), dt), t))
                                  for t in (np.float32, np.float64, np.int32, np.bool_)] +
       [Sample((noncontig(rng, (3, 4), dt), np.float64)), Sample((values(rng, (), dt), F64))],
       dtypes=(F32, F64, I32, BOOL),
       # a float32 result is too coarse for 1e-6 steps; the function is linear, so take big ones
       grad_eps=1e-3, grad_tol=(1e-3, 1e-5))
RECORDS.append(OpRecord("asarray_lists", _const(
    Sample(([[1, 2], [3, 4]],)), Sample(([1.0, 2.5],)), Sample(([True, False],)),
    Sample((3,)), Sample((2.5,)), Sample(([[1, 2]], np.float32))), dtypes=(F64,),
    call=lambda m, *a, **k: m.asarray(*a, **k)))

# ---- elementwise unary ----------------------------------------------------------------
_UNARY_FLOAT = [  # name, domain, dtypes
    ("exp", "real"), ("exp2", "real"), ("expm1", "real"), ("log", "positive"),
    ("log2", "positive"), ("log10", "positive"), ("log1p", "gtm1"), ("sqrt", "positive"),
    ("cbrt", "nonzero"), ("sin", "real"), ("cos", "real"), ("tan", "small"),
    ("arcsin", "unit"), ("arccos", "unit"), ("arctan", "real"), ("sinh", "real"),
    ("cosh", "real"), ("tanh", "real"), ("arcsinh", "real"), ("arccosh", "gt1"),
    ("arctanh", "unit"),
]
for _n, _d in _UNARY_FLOAT:
    record(_n, unary_samples(_d), dtypes=REAL + (F16,), domain=_d)
for _a, _o in (("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"), ("asinh", "arcsinh"),
               ("acosh", "arccosh"), ("atanh", "arctanh")):
    alias(_a, _o)
record("reciprocal", unary_samples("nonzero"), dtypes=FLOATS, domain="nonzero")
record("negative", unary_samples(), dtypes=REAL + (I64,))
record("positive", unary_samples(), dtypes=REAL)
record("absolute", unary_samples("nonzero"), dtypes=REAL + (C128,), domain="nonzero")
alias("abs", "absolute")
record("fabs", unary_samples("nonzero"), dtypes=REAL, domain="nonzero")
record("sign", unary_samples("nonzero"), dtypes=REAL, domain="nonzero")
record("square", unary_samples(), dtypes=REAL + (C128,))
for _n in ("floor", "ceil", "trunc", "rint", "fix"):
    record(_n, unary_samples(), dtypes=FLOATS)
record("round", lambda rng, dt: unary_samples()(rng, dt) + [
    Sample((values(rng, (2, 3), dt),), {"decimals": 2}, "decimals")], dtypes=REAL)
alias("around", "round")
record("conjugate", unary_samples(), dtypes=(F64, C128))
alias("conj", "conjugate")
record("real", unary_samples(), dtypes=(F64, C128))
record("imag", unary_samples(), dtypes=(F64, C128))
record("logical_not", unary_samples(), dtypes=(BOOL, F64, I32))
record("invert", unary_samples(), dtypes=(BOOL, I32, I64, U8))
alias("bitwise_not", "invert")
alias("bitwise_invert", "invert")


def _special_samples(rng, dt):
    a = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 2.0, -0.0], dtype=dt)
    return [Sample((a,)), Sample((values(rng, (2, 3), dt),)), Sample((a.reshape(7, 1)[::2],))]


for _n in ("isnan", "isinf", "isfinite", "signbit"):
    record(_n, _special_samples, dtypes=FLOATS)

# ---- elementwise binary ---------------------------------------------------------------
record("add", binary_samples(), dtypes=REAL + (F16, C128, BOOL))
record("subtract", binary_samples(), dtypes=REAL + (C128,))
record("multiply", binary_samples(), dtypes=REAL + (F16, C128, BOOL))
record("true_divide", binary_samples(("real", "nonzero")), dtypes=REAL + (F16, C128))
alias("divide", "true_divide")
record("floor_divide", binary_samples(("real", "nonzero")), dtypes=REAL)
record("remainder", binary_samples(("real", "nonzero")), dtypes=REAL)
alias("mod", "remainder")
record("divmod", binary_samples(("real", "nonzero")), dtypes=REAL)
record("power", binary_samples(("base", "exponent")), dtypes=REAL, domain=("base", "exponent"))
alias("pow", "power")
record("maximum", binary_samples(), dtypes=REAL + (F16,))
record("minimum", binary_samples(), dtypes=REAL)
record("arctan2", binary_samples(("real", "nonzero")), dtypes=FLOATS)
alias("atan2", "arctan2")
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    record(_n, binary_samples(), dtypes=(BOOL, I32, I64, U8))
for _n in ("left_shift", "right_shift"):
    record(_n, binary_samples(("real", "small_nonneg")), dtypes=(I32, I64, U8))
record("nextafter", binary_samples(), dtypes=FLOATS, diff_args=(),
       grad_reason="piecewise constant in y and ~identity in x; ndflow defines no gradient")
for _n in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    record(_n, binary_samples(), dtypes=REAL + (BOOL,))
for _n in ("logical_and", "logical_or", "logical_xor"):
    record(_n, binary_samples(), dtypes=(BOOL, F64, I32))


def _where_samples(rng, dt):
    c = lambda s: values(rng, s, BOOL)  # noqa: E731
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((c((2, 3)), v((2, 3)), v((2, 3)))),
            Sample((c(()), v(()), v(()))),
            Sample((c((2, 1)), v((1, 3)), v((3,))), desc="broadcast"),
            Sample((c((2, 3)), v((2, 3)), pyscalar(rng, dt)), desc="python scalar"),
            Sample((c((0, 3)), v((0, 3)), v((3,))), desc="empty"),
            Sample((noncontig(rng, (3, 4), BOOL), noncontig(rng, (3, 4), dt), v((4,))),
                   desc="noncontig"),
            Sample((values(rng, (2, 3), I32), v((2, 3)), v((2, 3))), desc="int condition")]


record("where", _where_samples, dtypes=REAL + (F16,))


def _clip_samples(rng, dt):
    v = lambda s, d="real": values(rng, s, dt, d)  # noqa: E731
    lo = -values(rng, (3,), dt, "positive")
    hi = values(rng, (2, 1), dt, "positive")
    one = 1 if dt.kind in "iu" else 0.5
    return [Sample((v((2, 3)), -one, one)), Sample((v(()), -one, one)),
            Sample((v((2, 3)), lo, hi), desc="array bounds"),
            Sample((v((2, 3)), None, one), desc="upper only"),
            Sample((v((2, 3)), -one, None), desc="lower only"),
            Sample((v((0, 3)), -one, one), desc="empty"),
            Sample((noncontig(rng, (3, 4), dt), -one, one), desc="noncontig")]


record("clip", _clip_samples, dtypes=REAL)

# ---- reductions -----------------------------------------------------------------------


def _with_options(base, *extra):
    """Reduction samples plus NumPy's optional arguments (initial=, where=, dtype=)."""
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, "positive")  # noqa: E731
        mask = values(rng, (2, 3, 4), BOOL)
        out = base(rng, dt)
        for kw in extra:
            kw = dict(kw)
            if kw.get("where") == "mask":
                kw["where"] = mask
            out.append(Sample((v((2, 3, 4)),), kw, "options"))
        if "initial" in str(extra):
            out.append(Sample((v((0, 3)),), {"axis": 0, "initial": 1}, "empty with initial"))
        return out
    return gen


record("sum", _with_options(reduction_samples(), {"initial": 2}, {"where": "mask"},
                            {"axis": 1, "where": "mask", "keepdims": True},
                            {"axis": 0, "dtype": np.float64}), dtypes=REAL + (F16, BOOL, C128))
record("prod", _with_options(reduction_samples("positive"), {"initial": 2}, {"where": "mask"},
                             {"axis": 2, "where": "mask"}), dtypes=REAL)
def _empty_initial(s):
    if s.desc == "empty with initial":
        return "whether the reduced axis is empty (so only `initial` counts) is decided at run time"
    return None


record("max", _with_options(reduction_samples(allow_empty=True), {"initial": 1},
                            {"axis": 1, "initial": -1, "keepdims": True},
                            {"axis": 2, "initial": 1.5, "where": "mask"}),
       dtypes=REAL + (F16,), unknown_dims=_empty_initial)
alias("amax", "max")
record("min", _with_options(reduction_samples(allow_empty=True), {"initial": 1},
                            {"axis": (0, 1), "initial": 0.5}), dtypes=REAL,
       unknown_dims=_empty_initial)
alias("amin", "min")
record("any", reduction_samples(), dtypes=(BOOL, F64, I32))
record("all", reduction_samples(), dtypes=(BOOL, F64, I32))
record("argmax", arg_reduction_samples, dtypes=REAL)
record("argmin", arg_reduction_samples, dtypes=REAL)
record("mean", _with_options(reduction_samples(allow_empty=False), {"where": "mask"},
                             {"axis": 1, "where": "mask"}, {"axis": 0, "dtype": np.float32}),
       dtypes=REAL + (F16,))


def _var_samples(rng, dt):
    return reduction_samples(allow_empty=False)(rng, dt) + [
        Sample((values(rng, (4, 3), dt),), {"axis": 0, "ddof": 1}, "ddof"),
        Sample((values(rng, (4, 3), dt),), {"axis": (0, 1), "ddof": 2, "keepdims": True},
               "ddof"),
        Sample((values(rng, (4, 3), dt),), {"correction": 1}, "correction")]


record("var", _var_samples, dtypes=REAL + (F16,), grad_tol=(1e-5, 1e-7))
# no 0-d sample for std: its variance is 0, where sqrt has no derivative (NaN, as TF and JAX)
record("std", lambda rng, dt: [s for s in _var_samples(rng, dt) if s.desc != "scalar"],
       dtypes=REAL, grad_tol=(1e-5, 1e-7))


def _count_nonzero_samples(rng, dt):
    def v(s):
        a = values(rng, s, dt)
        return np.where(values(rng, s, BOOL), a, np.zeros((), dt))
    return [Sample((v((2, 3, 4)),)), Sample((v((2, 3, 4)),), {"axis": 1}),
            Sample((v((2, 3, 4)),), {"axis": (0, 2), "keepdims": True}), Sample((v(()),))]


record("count_nonzero", _count_nonzero_samples, dtypes=(F64, I32, BOOL))

# ---- manipulation ---------------------------------------------------------------------
_MANIP_DT = (F16, F32, F64, I32, BOOL)


def _manip(fn):
    """Samples for a shape function: fn(v, rng, dt) -> list of Samples, v(shape) makes values."""
    def gen(rng, dt):
        return fn(lambda s: values(rng, s, dt), lambda s: noncontig(rng, s, dt))
    return gen


record("reshape", _manip(lambda v, nc: [
    Sample((v((2, 3)), (3, 2))), Sample((v((2, 3)), (-1,))), Sample((v((2, 3, 4)), (4, -1))),
    Sample((v(()), (1, 1))), Sample((v((0, 3)), (3, 0))), Sample((nc((3, 4)), (2, 6))),
    Sample((v((6,)), 6)), Sample((v((2, 3)), (3, 2)), {"order": "F"})]), dtypes=_MANIP_DT)
record("ravel", _manip(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((v(()),)), Sample((nc((3, 4)),)), Sample((v((0, 2)),)),
    Sample((v((2, 3)),), {"order": "F"})]), dtypes=_MANIP_DT)
record("transpose", _manip(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((v((2, 3, 4)), (1, 0, 2))), Sample((v((2, 3, 4)), (-1, 0, 1))),
    Sample((v(()),)), Sample((nc((3, 4)),)), Sample((v((0, 2)),))]), dtypes=_MANIP_DT)
record("permute_dims", _manip(lambda v, nc: [
    Sample((v((2, 3, 4)), (2, 0, 1))), Sample((nc((3, 4)), (1, 0)))]), dtypes=_MANIP_DT)
record("matrix_transpose", _manip(lambda v, nc: [
    Sample((v((2, 3)),)), Sample((v((2, 3, 4)),)), Sample((nc((3, 4)),))]), dtypes=_MANIP_DT)
record("swapaxes", _manip(lambda v, nc: [
    Sample((v((2, 3, 4)), 0, 2)), Sample((v((2, 3)), -1, 0)), Sample((nc((3, 4)), 0, 1)),
    Sample((v((2, 3)), 1, 1))]), dtypes=_MANIP_DT)
record("moveaxis", _manip(lambda v, nc: [
    Sample((v((2, 3, 4)), 0, -1)), Sample((v((2, 3, 4)), (0, 1), (2, 0))),
    Sample((nc((3, 4)), 1, 0))]), dtypes=_MANIP_DT)
record("expand_dims", _manip(lambda v, nc: [
    Sample((v((2, 3)), 0)), Sample((v((2, 3)), -1)), Sample((v((2, 3)), (0, 2))),
    Sample((v(()), 0)), Sample((nc((3, 4)), 1)), Sample((v((0, 3)), 1))]), dtypes=_MANIP_DT)
record("squeeze", _manip(lambda v, nc: [
    Sample((v((1, 3, 1)),)), Sample((v((1, 3, 1)), 0)), Sample((v((1, 3, 1)), (0, 2))),
    Sample((v((1, 3, 1)), -1)), Sample((v((1,)),)), Sample((v(()),)),
    Sample((nc((4, 1)),))]), dtypes=_MANIP_DT,
       unknown_dims=lambda s: "axis=None needs the sizes (ValueError while tracing)"
       if "axis" not in s.kwargs and len(s.args) == 1 else None)
record("broadcast_to", _manip(lambda v, nc: [
    Sample((v((3,)), (2, 3))), Sample((v(()), (2, 2))), Sample((v((2, 1)), (4, 2, 3))),
    Sample((v((3,)), (0, 3))), Sample((nc((3, 1)), (3, 4)))]), dtypes=_MANIP_DT)
record("broadcast_arrays", _manip(lambda v, nc: [
    Sample((v((3,)), v((2, 1)))), Sample((v(()), v((2, 2)), v((2,)))),
    Sample((nc((3, 1)), v((4,))))]), dtypes=_MANIP_DT)
_JOIN = lambda v, nc: [  # noqa: E731
    Sample((v((2, 3)), v((4, 3)))), Sample((v((2, 3)), v((2, 2))), {"axis": 1}),
    Sample((v((2, 3)), v((2, 3)), v((2, 3))), {"axis": -1}),
    Sample((v((2, 3)), v((2, 3))), {"axis": None}),
    Sample((v((0, 3)), v((2, 3)))), Sample((nc((3, 4)), v((1, 4))))]
record("concatenate", _manip(_JOIN), dtypes=_MANIP_DT,
       call=lambda m, *a, **k: m.concatenate(list(a), **k))
record("concat", _manip(_JOIN), dtypes=_MANIP_DT, call=lambda m, *a, **k: m.concat(list(a), **k))
record("stack", _manip(lambda v, nc: [
    Sample((v((2, 3)), v((2, 3)))), Sample((v((2, 3)), v((2, 3))), {"axis": 1}),
    Sample((v((2, 3)), v((2, 3)), v((2, 3))), {"axis": -1}), Sample((v(()), v(()))),
    Sample((v((0, 3)), v((0, 3)))), Sample((nc((3, 4)), v((3, 4))))]), dtypes=_MANIP_DT,
       call=lambda m, *a, **k: m.stack(list(a), **k))
record("vstack", _manip(lambda v, nc: [
    Sample((v((3,)), v((3,)))), Sample((v((2, 3)), v((1, 3)))), Sample((v(()), v(()))),
    Sample((nc((3, 4)), v((4,))))]), dtypes=_MANIP_DT, call=lambda m, *a: m.vstack(list(a)))
record("hstack", _manip(lambda v, nc: [
    Sample((v((3,)), v((2,)))), Sample((v((2, 3)), v((2, 1)))), Sample((v(()), v(()))),
    Sample((nc((3, 4)), v((3, 2))))]), dtypes=_MANIP_DT, call=lambda m, *a: m.hstack(list(a)))
record("atleast_1d", _manip(lambda v, nc: [
    Sample((v(()),)), Sample((v((3,)),)), Sample((v((2, 3)),)), Sample((v(()), v((2,))))]),
       dtypes=_MANIP_DT)
record("atleast_2d", _manip(lambda v, nc: [
    Sample((v(()),)), Sample((v((3,)),)), Sample((nc((2, 3)),)), Sample((v(()), v((2,))))]),
       dtypes=_MANIP_DT)

# ---- indexing functions ---------------------------------------------------------------


def _take_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((5, 4)), _ints(rng, (3,), 5)), {"axis": 0}),
            Sample((v((5, 4)), _ints(rng, (2, 2), 4, -4)), {"axis": 1}, "negative indices"),
            Sample((v((5, 4)), _ints(rng, (3,), 20)), {}, "flat"),
            Sample((v((5, 4)), np.asarray(2)), {"axis": 0}, "0-d index"),
            Sample((v((5,)), _ints(rng, (0,), 5)), {"axis": 0}, "empty index"),
            Sample((noncontig(rng, (3, 4), dt), _ints(rng, (2,), 4)), {"axis": -1}, "noncontig"),
            Sample((v((5, 4)), _ints(rng, (3,), 5)), {"axis": 0, "mode": "clip"}, "clip"),
            Sample((v((5, 4)), _ints(rng, (3,), 9)), {"axis": 0, "mode": "wrap"}, "wrap")]


record("take", _take_samples, dtypes=_MANIP_DT)


def _take_along_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((3, 4)), _ints(rng, (3, 2), 4)), {"axis": 1}),
            Sample((v((3, 4)), _ints(rng, (2, 4), 3)), {"axis": 0}),
            Sample((v((2, 3, 4)), _ints(rng, (2, 3, 1), 4)), {"axis": -1}),
            Sample((v((3, 4)), _ints(rng, (5,), 12)), {"axis": None}, "flat"),
            Sample((noncontig(rng, (3, 4), dt), _ints(rng, (3, 2), 4, -4)), {"axis": 1},
                   "noncontig, negative")]


record("take_along_axis", _take_along_samples, dtypes=_MANIP_DT)


def _sparse_samples(rng, dt):
    def v(s):
        return np.where(values(rng, s, BOOL), values(rng, s, dt), np.zeros((), dt))
    return [Sample((v((2, 3)),)), Sample((v((6,)),)), Sample((v((2, 3, 2)),)),
            Sample((np.zeros((0, 2), dt),))]


_DYN = "output shape depends on the data (number of nonzero elements)"
record("nonzero", _sparse_samples, dtypes=(F64, I32, BOOL), vmap=False, vmap_reason=_DYN)
record("argwhere", _sparse_samples, dtypes=(F64, I32, BOOL), vmap=False, vmap_reason=_DYN)
record("flatnonzero", _sparse_samples, dtypes=(F64, I32, BOOL), vmap=False, vmap_reason=_DYN)

# ---- products -------------------------------------------------------------------------
_PROD_DT = (F16, F32, F64, I32, C128)
_PROD_TOL = {F16: (1e-2, 3e-2), F32: (1e-4, 1e-5)}   # f16: contraction order matters


def _prod(fn):
    def gen(rng, dt):
        return fn(lambda s: values(rng, s, dt), lambda s: noncontig(rng, s, dt))
    return gen


record("matmul", _prod(lambda v, nc: [
    Sample((v((3, 4)), v((4, 2)))), Sample((v((4,)), v((4, 2)))), Sample((v((3, 4)), v((4,)))),
    Sample((v((4,)), v((4,)))), Sample((v((2, 3, 4)), v((4, 5)))),
    Sample((v((2, 1, 3, 4)), v((5, 4, 2)))), Sample((nc((3, 4)), nc((4, 2)))),
    Sample((v((0, 4)), v((4, 2)))), Sample((v((3, 0)), v((0, 2))))]),
       dtypes=_PROD_DT, tol=_PROD_TOL)
record("dot", _prod(lambda v, nc: [
    Sample((v(()), v((3,)))), Sample((v((4,)), v((4,)))), Sample((v((3, 4)), v((4, 2)))),
    Sample((v((3, 4)), v((4,)))), Sample((v((2, 3, 4)), v((4, 5)))),
    Sample((v((3, 4)), v((2, 4, 5)))), Sample((nc((3, 4)), nc((4, 2))))]),
       dtypes=_PROD_DT, tol=_PROD_TOL)
record("vdot", _prod(lambda v, nc: [
    Sample((v((4,)), v((4,)))), Sample((v((2, 3)), v((3, 2)))), Sample((nc((3, 4)), v((12,))))]),
       dtypes=_PROD_DT, tol=_PROD_TOL)
record("inner", _prod(lambda v, nc: [
    Sample((v((4,)), v((4,)))), Sample((v((2, 4)), v((3, 4)))), Sample((v((2, 3, 4)), v((4,)))),
    Sample((v(()), v((3,)))), Sample((nc((3, 4)), v((4,))))]), dtypes=_PROD_DT, tol=_PROD_TOL)
record("outer", _prod(lambda v, nc: [
    Sample((v((4,)), v((3,)))), Sample((v((2, 2)), v((3,)))), Sample((v(()), v((3,)))),
    Sample((nc((3, 2)), v((2,))))]), dtypes=_PROD_DT, tol=_PROD_TOL)
record("tensordot", _prod(lambda v, nc: [
    Sample((v((2, 3, 4)), v((3, 4, 5)))), Sample((v((2, 3)), v((3, 4))), {"axes": 1}),
    Sample((v((2, 3, 4)), v((4, 3, 5))), {"axes": ([1, 2], [1, 0])}),
    Sample((v((2, 3)), v((4, 5))), {"axes": 0}), Sample((nc((3, 4)), v((4, 2))), {"axes": 1})]),
       dtypes=_PROD_DT, tol=_PROD_TOL)


def _einsum(sub, *shapes, nc=False):
    def mk(v, ncf):
        arrs = tuple((ncf if nc and i == 0 else v)(s) for i, s in enumerate(shapes))
        return Sample((sub,) + arrs, desc=sub)
    return mk


_EINSUMS = [_einsum("ij,jk->ik", (3, 4), (4, 2)), _einsum("ij,jk", (3, 4), (4, 2)),
            _einsum("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
            _einsum("...ij,...jk->...ik", (2, 3, 4), (4, 5)),
            _einsum("i,i->", (4,), (4,)), _einsum("i,j->ij", (3,), (2,)),
            _einsum("ij->", (3, 4)), _einsum("ijk->kji", (2, 3, 4)),
            _einsum("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),
            _einsum("ij,ij->i", (3, 4), (3, 4), nc=True),
            _einsum("ii->i", (3, 3)), _einsum("ii", (3, 3))]
record("einsum", _prod(lambda v, nc: [mk(v, nc) for mk in _EINSUMS]), dtypes=_PROD_DT,
       tol=_PROD_TOL)


# ------------------------------------------------------------------ names without records
# Public names of ndflow.numpy that compute nothing (dtype objects and queries, shape queries,
# the promotion switch); every other public callable must have a record above.
NON_COMPUTING = {
    "dtype", "finfo", "iinfo", "can_cast", "issubdtype", "result_type", "shape", "ndim", "size",
    "experimental_enable_numpy_behavior", "iscomplexobj", "broadcast_shapes",
}


def by_name():
    return {r.name: r for r in RECORDS}


# Records with nothing to differentiate: their outputs are booleans or integers, or they are
# built from Python values only. (The gradient checks are not generated for them.)
NOT_DIFFERENTIABLE = {
    "boolean results": ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                        "logical_and", "logical_or", "logical_xor", "logical_not", "isnan",
                        "isinf", "isfinite", "signbit", "any", "all"),
    "integer results (indices, counts)": ("argmax", "argmin", "nonzero", "flatnonzero",
                                          "argwhere", "count_nonzero"),
    "created from Python values, no array input": ("zeros", "ones", "empty", "full", "eye",
                                                   "identity", "arange", "linspace", "logspace",
                                                   "geomspace", "asarray_lists"),
}
for _reason, _names in NOT_DIFFERENTIABLE.items():
    for _n in _names:
        _r = next(r for r in RECORDS if r.name == _n)
        _r.diff_args, _r.grad_reason = (), _reason


# Primitives allowed to lack a VJP or batching rule, with the reason (areas add theirs).
RULE_EXCEPTIONS = {
    "read_variable": "an effect with no array inputs; tapes watch the value it returns",
    "assign_variable": "an effect; gradients flow through the Variable's later reads",
    "custom_gradient": "recorded by tapes only (never bound), so never batched; the user's "
                       "function is batched instead",
    "numpy_function": "arbitrary Python: vectorized_map runs it in a loop (warned fallback)",
    "numpy_function_multi": "arbitrary Python: vectorized_map runs it in a loop (warned fallback)",
}


# ------------------------------------------------------------------ records of other areas
# Each area (linalg, fft, statistics, ...) keeps its records in tests/optable_<area>.py, which
# imports `record`, `RECORDS` and the sample helpers from here; they are loaded last so every
# helper above exists.
def _load_areas():
    import importlib
    import pathlib
    for p in sorted(pathlib.Path(__file__).parent.glob("optable_*.py")):
        importlib.import_module(p.stem)


_load_areas()


# ------------------------------------------------------------------ non-differentiable edges
# Where tests/test_grad_edges.py's edge inputs (zeros, -0.0, equal elements, a mix) are points
# without a derivative, the reason (the gradient there follows the rule's convention: JAX's for
# kinks and ties, the module notes of linalg_decomp for degenerate spectra).
_ALL_EDGES = ("zeros", "negzero", "ties", "mixed")
NON_DIFFERENTIABLE_EDGES = {
    "order statistics of equal elements (sort, max, median, quantile): ties get a share of the "
    "gradient by convention; no derivative exists there": (
        ("sort", "partition", "max", "min", "nanmax", "nanmin", "median", "nanmedian",
         "quantile", "nanquantile", "percentile", "nanpercentile", "clip"), _ALL_EDGES),
    "degenerate spectrum (equal or zero eigen/singular values): the derivative does not exist; "
    "the rules give equal values F = 0 (module notes of primitives/linalg_decomp.py)": (
        ("linalg.eigvals", "linalg.eigvalsh", "linalg.svdvals", "linalg.cond", "linalg.eig",
         "linalg.eigh", "linalg.svd", "linalg.pinv", "linalg.matrix_rank"), _ALL_EDGES),
    "complex eigen/singular vectors are fixed only up to a phase: the generic loss of the sweep "
    "depends on it (gauge-invariant losses are checked in tests/test_grad_edges.py)": (
        ("linalg.eigh", "linalg.svd", "linalg.eig"), tuple("c:" + e for e in _ALL_EDGES)),
    "second order of det at a matrix of rank n - 2 or less: the adjugate there comes from an "
    "SVD with repeated zero singular values (module notes of primitives/linalg_decomp.py)": (
        ("linalg.det",), tuple(e + "/2" for e in _ALL_EDGES)),
    "copysign(0, y): |x| at 0 times the sign of y, a kink": (("copysign",),
                                                             ("zeros", "negzero", "mixed")),
    "on the boundary between pieces (x = 0 chooses a piece)": (("piecewise",), _ALL_EDGES),
    "division by the zero polynomial (NumPy's answer is a convention)": (("polydiv",),
                                                                          ("zeros", "negzero")),
    "xp must increase (NumPy's precondition): equal xp is no interpolation table": (
        ("interp",), _ALL_EDGES),
    "the sample's own sqrt(sum(r * r)): sqrt'(0) is infinite (NaN through 0 * inf, as JAX)": (
        ("apply_along_axis",), ("zeros", "negzero", "mixed")),
    "repeated rows give correlations of exactly +-1, where NumPy's clip to [-1, 1] has a kink": (
        ("corrcoef",), ("mixed", "ties")),
}
for _reason, (_names, _edges) in NON_DIFFERENTIABLE_EDGES.items():
    for _n in _names:
        for _r in (r for r in RECORDS if r.name == _n):
            for _e in _edges:
                _r.edge_reasons[_e] = _reason


# ------------------------------------------------------------------ paths-agree declarations
# Where tests/test_paths_agree.py's comparison legitimately cannot be NumPy's bit for bit
# (the kinds are listed in tests/paths_agree.py's EXCLUSIONS), the reason.
_CONTRACTIONS = ("matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "vecdot",
                 "matvec", "vecmat", "linalg.matmul", "linalg.tensordot", "linalg.vecdot",
                 "linalg.outer", "linalg.multi_dot", "convolve", "correlate", "kron",
                 "polymul", "polyval", "poly", "linalg.matrix_power", "cross", "linalg.cross",
                 "trapezoid", "cov", "corrcoef", "polyfit", "roots")
PATHS_REASONS = [
    ("nonfinite_kernel",
        "a contraction with NaN, inf or huge operands: which elements are NaN and which inf "
        "depends on the summation order (max + max - inf is NaN, max - inf + max is -inf) and, "
        "for complex operands, on the kernel's product formula and skipping of exact zeros "
        "(BLAS), so only elements finite on both sides are compared",
        _CONTRACTIONS),
    ("zero_sign",
        "the sign of a zero result is not NumPy's to define here: which of equal -0.0 and 0.0 "
        "a set routine or a min/max reduction keeps depends on NumPy's SIMD kernels (fmin and "
        "fmax of 0.0 and -0.0 give the second operand inside their SIMD loop and the first in "
        "its scalar tail: np.fmin(zeros(5), -zeros(5)) is [-0, -0, -0, -0, 0] in float64, so "
        "a compiled, taped or batched kernel cannot follow where an element falls), and a "
        "contraction's sum starts from +0.0 in some kernels (BLAS, einsum) and from the first "
        "product in others",
        ("unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "union1d",
         "setxor1d", "intersect1d", "setdiff1d", "pad", "nanmin", "nanmax", "fmin",
         "fmax") + _CONTRACTIONS),
    ("zero_sign",
        "order statistics of equal -0.0 and 0.0: which of them lands at a given rank depends "
        "on the algorithm (NumPy's quantile selects with introselect, np.partition, and its "
        "AVX-512 sort is another kernel again; a compiled or taped graph sorts), and either is "
        "a valid answer, as they compare equal",
        ("median", "nanmedian", "quantile", "nanquantile", "percentile", "nanpercentile")),
    ("zero_sign_batched",
        "order statistics of equal -0.0 and 0.0: the batched sort orders them differently "
        "from one example's sort (both valid: they compare equal)",
        ("max", "amax", "min", "amin", "nanmax", "nanmin", "ptp", "median", "nanmedian",
         "quantile", "nanquantile", "percentile", "nanpercentile", "sort", "partition")),
    ("value_dtype",
        "real input gives real eigenvalues only when all are real (NumPy's rule), and the "
        "record splits complex results into (real, imag)",
        ("linalg.eig", "linalg.eigvals")),
    ("nonfinite_kernel",
        "a transform of NaN or inf: which outputs are NaN and which inf depends on the FFT's "
        "butterfly order",
        tuple("fft." + n for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn",
                                   "ifftn", "fft2", "ifft2", "rfftn", "rfft2", "irfftn",
                                   "irfft2"))),
    ("layouts",
        "NumPy's put_along_axis(axis=None) on a non-C-contiguous array raises 'assignment "
        "destination is read-only' (its .flat view is a copy); ndflow writes as for C order",
        ("put_along_axis",)),
    ("dynamic_size",
        "the remainder's length depends on its values (NumPy strips leading |c| <= 1e-8): "
        "compiled, a run whose values decide another length raises",
        ("polydiv",)),
    ("keep_args",
        "NumPy requires increasing xp and does not check it: xp gets no special values",
        ("interp",)),
    ("keep_args",
        "explicit bin edges must increase (NumPy's precondition); NumPy's check lets a NaN edge "
        "through and then counts garbage (negative counts from searchsorted of NaN): the edges "
        "get no special values",
        ("histogram",)),
]
for _kind, _why, _names in PATHS_REASONS:
    for _n in _names:
        for _r in (r for r in RECORDS if r.name == _n):
            _r.paths_reasons[_kind] = _why
by_name()["interp"].paths_keep_args = (1,)
by_name()["histogram"].paths_keep_args = (1,)


def kinds_of(rec):
    """One dtype of each kind (bool, signed and unsigned integer, float, complex) among the
    record's dtypes, in its order: for checks whose subject is shapes or graph structure rather
    than a dtype's arithmetic (unknown sizes, export), which the other dtypes of a kind repeat."""
    seen, out = set(), []
    for d in rec.dtypes:
        d = np.dtype(d)
        if d.kind not in seen:
            seen.add(d.kind)
            out.append(d)
    return out

