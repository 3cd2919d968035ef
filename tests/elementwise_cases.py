"""Operands for every elementwise primitive (by trait): how many it takes and of which dtypes,
the parameters it needs, the op-table record its samples come from, special values, and a
fused `Program` holding it. Shared by test_scalar_expr.py and test_backends_cuda_tier.py."""
import inspect

import numpy as np

import ndflow.scipy.special  # noqa: F401  (registers the special-function primitives)
from ndflow.core.primitive import REGISTRY, Aval
from ndflow.graph.kernels import Program, Op

import optable
import optable_ufuncs  # noqa: F401  (registers its records)
from optable_scipy import SCIPY_RECORDS

# parameters a primitive needs (each dict is one case)
PARAMS = {
    "convert_element_type": [{"dtype": np.dtype(t)} for t in
                             (np.float64, np.float32, np.float16, np.int32, np.int64,
                              np.uint8, np.bool_)],
    "full_like": [{"fill_value": v} for v in (1.5, -0.0, np.nan, np.inf, 7)],
    "polygamma": [{"n": 1}, {"n": 2}],
}
# the op-table record whose samples (and dtypes) a primitive takes, where it is not the
# primitive's own name
RECORD = {"convert_element_type": "astype", "select": "where", "zeta_ds": "scipy.special.zeta",
          "riemann_zeta": "scipy.special.zeta.riemann",
          "polygamma": "scipy.special.polygamma.n1"}


def elementwise_primitives():
    return sorted((p for p in REGISTRY if p.elementwise), key=lambda p: p.name)


def arity(p):
    """The number of array operands of `p` (its shape rule's positional parameters that are
    not parameters of the primitive)."""
    ps = inspect.signature(p.abstract).parameters.values()
    if any(q.kind is q.VAR_POSITIONAL for q in ps):
        return 2                  # (*xs): the comparisons and logical operators
    names = [q.name for q in ps
             if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) and q.default is q.empty]
    return len([n for n in names if n not in {k for ps in PARAMS.get(p.name, [{}]) for k in ps}])


def record(p):
    name = RECORD.get(p.name, p.name)
    recs = {r.name: r for r in optable.RECORDS + SCIPY_RECORDS}
    return recs.get(name) or recs.get("scipy.special." + name)


def operand_dtypes(p, dt):
    """The operand dtypes `p` is bound with when the NumPy function computes in `dt`: a ufunc's
    own loop for operands of `dt` (int32 operands of `exp` arrive as float64)."""
    k = arity(p)
    if p.name == "select":
        return [np.dtype(np.bool_), dt, dt]
    if p.name == "ldexp":
        return [dt, np.dtype(np.int64)]
    if isinstance(p.impl, np.ufunc):
        return [np.dtype(d) for d in p.impl.resolve_dtypes((dt,) * k + (None,) * p.impl.nout)[:k]]
    return [dt] * k


def out_dtype(p, dts, params):
    a = p.abstract(*[Aval((3,), d) for d in dts], **params)
    return np.dtype(a.dtype)


def dtypes(p):
    """The dtypes the op table tests `p`'s function in (float64 and float32 where it has no
    record), each as the operand dtypes `p` is bound with then."""
    r = record(p)
    out = []
    for d in (r.dtypes if r is not None else (np.float64, np.float32)):
        try:
            dts = operand_dtypes(p, np.dtype(d))
        except TypeError:          # no loop of the ufunc for it (NumPy's error, eager too)
            continue
        if dts not in out:
            out.append(dts)
    return out


def special_values(dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind in "iu":
        i = np.iinfo(dt)
        v = [0, 1, 2, 7, i.max, i.max // 3] + ([-1, -2, -7, i.min, i.min // 3] if dt.kind == "i"
                                               else [])
        return np.array(v, dt)
    if dt.kind == "c":
        f = special_values(np.float64 if dt == np.complex128 else np.float32)
        return (f[:, None] + 1j * f[None, ::3]).reshape(-1).astype(dt)
    f = np.finfo(dt)
    with np.errstate(over="ignore"):
        return _floats(dt, f)


def _floats(dt, f):
    return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.inf, -np.inf, np.nan, float(f.max),
                     -float(f.max), float(f.tiny), float(f.smallest_subnormal), 1e-300, 1e300],
                    dtype=np.float64).astype(dt) if dt != np.float16 else np.array(
        [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.inf, -np.inf, np.nan, 65504.0, -65504.0,
         6.1e-5, 6e-8], dt)


def special_operands(dts):
    """Every combination of the special values of `dts`, as 1-d operands of one length."""
    vals = [special_values(d) for d in dts]
    grids = np.meshgrid(*vals, indexing="ij") if len(vals) > 1 else vals
    return [np.ascontiguousarray(g.reshape(-1)) for g in grids]


def sample_operands(p, dts, rng):
    """The op-table record's samples of `p` as operands of `dts` (a `dtypes(p)` entry): its
    first arity(p) arguments, cast as the NumPy layer promotes them (Python scalars as 0-d
    arrays); samples with keyword arguments left out."""
    r = record(p)
    if r is None:
        return []
    dt = dts[1] if p.name == "select" else dts[0]
    out = []
    for s in r.samples(rng, dt):
        args = s.args[:len(dts)]
        if s.kwargs or len(args) < len(dts):
            continue
        ops = []
        for a, d in zip(args, dts):
            a = np.asarray(a)
            ops.append(a if a.dtype == d else a.astype(d))
        out.append(ops)
    return out


def program(p, operands, params, tail=False):
    """A fused program holding `p` on `operands`: t0 = p(x...), returned; with `tail`, also
    t1 = maximum(t0, t0) (NumPy's bits of t0 again, a ufunc writing a buffer of its own, so
    that a blocked run calls p's kernel chunk by chunk), returned instead."""
    from ndflow.primitives.elementwise import max_p
    dts = [np.dtype(o.dtype) for o in operands]
    shape = np.broadcast_shapes(*[o.shape for o in operands]) if operands else ()
    od = out_dtype(p, dts, params)
    ops = [Op(p, range(len(operands)), params, shape, od)]
    n = len(operands)
    if tail:
        ops.append(Op(max_p, (n, n), {}, shape, od))
    return Program([(o.shape, o.dtype) for o in operands], ops, [n + len(ops) - 1], shape)
