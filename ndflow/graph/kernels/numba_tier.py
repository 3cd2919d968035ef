"""Tier 1 (a fused region compiled by numba into one loop nest): its scalar vocabulary, what
it takes, and the namespace its kernels import from. Nothing here imports numba; the tier's
other modules: `numba_plan` (collapsing operands, the sum's order), `numba_source` (the
kernel's text), `numba_compile` (compiling, the verified disk cache, the background thread),
`numba_runner` and `numba_quick` (calling a kernel). Which calls tier 1 takes is the planner's
decision (`planner.py`).

The loop body is the region's ops as scalar code, written from each primitive's `fusion`
template with function names mapped to scalar implementations: our own vectorizable exp,
expm1, log and tanh (`mathlib`), LLVM intrinsics (sqrt, floor, ...) and small select-based
helpers that keep NumPy's NaN rules (maximum/minimum propagate NaN). Functions that would call
the scalar C library (sin, log2, power, ...) make a region ineligible: NumPy's SIMD loops beat
them, so such regions stay on tier 0 (`why_not(program)` says which op).

A region may end in a float sum. Without `settings.fast_math` it is added in NumPy's own order
(`numba_plan.sum_layout`: NumPy's pairwise sum along trailing dims, row after row along
leading dims; other layouts stay on tier 0), with no reassociation, so its bits are NumPy's;
the cost model (`numba_plan.exact_sum_ok`) keeps only the sums that are faster compiled (along
leading dims: the bias gradient; whole sums of static regions up to 8192 elements), and
fusion splits the others off the region (`policy.split_sum_off`).
"""
import re

import numpy as np

from . import mathlib, replica
from ...core.settings import settings
from ...primitives.reduction import reduce_sum_p as _reduce_sum_p


def _fast_math():
    return settings.fast_math


# ------------------------------------------------------------------ scalar vocabulary
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_OWN = set(mathlib.FUNCTIONS)                  # our vectorizable math, float32/float64
_OWN_CALL = re.compile(r"\b(?:%s)\s*\(" % "|".join(mathlib.FUNCTIONS))   # in a fusion template
_INTRINSIC = {"sqrt": "np.sqrt", "floor": "np.floor", "ceil": "np.ceil", "trunc": "np.trunc",
              "rint": "np.rint"}
_HELPERS = {"abs": "_abs", "maximum": "_maximum", "minimum": "_minimum", "where": "_where",
            "sign": "_sign", "isnan": "_isnan", "isinf": "_isinf", "isfinite": "_isfinite",
            "logical_and": "_land", "logical_or": "_lor", "logical_xor": "_lxor",
            "logical_not": "_lnot", "zeros_like": "_zeros_like", "ones_like": "_ones_like",
            "full_like": "_full_like"}
_E = None


def _prims():
    global _E
    if _E is None:
        from ...primitives import elementwise as E
        _E = E
    return _E


def _float_only(p):
    E = _prims()
    return p is E.div_p or p is E.reciprocal_p or p is E.pow_p


def _no_numba(p):
    """Why `p` stays with NumPy's loop, or None."""
    if p is _prims().pow_p:
        return "power calls the scalar C library (NumPy's loop is as fast)"
    return None


def _typename(dt):
    return "np.%s" % np.dtype(dt).name if np.dtype(dt) != np.bool_ else "np.bool_"


def _scalar_expr(op, args, in_dtype):
    """The op as a scalar expression over the names `args`; raises _Ineligible."""
    name = op.prim.name
    why = _no_numba(op.prim)
    if why:
        raise _Ineligible("'%s': %s" % (name, why))
    if _float_only(op.prim) and in_dtype not in _FLOATS:
        raise _Ineligible("'%s' on %s" % (name, in_dtype))
    if op.prim is _prims().convert_p:
        dst = np.dtype(op.params["dtype"])
        if dst.kind in "iu" and in_dtype.kind == "f":
            raise _Ineligible("float-to-integer conversion (NaN/inf casts are platform-defined)")
        if dst == np.bool_:
            return "(%s != 0)" % args[0]
        return "%s(%s)" % (_typename(dst), args[0])
    tmpl = op.prim.fusion
    if tmpl is None:
        raise _Ineligible("'%s' has no fusion template" % name)
    expr = tmpl.format(*args, **{k: repr(v) for k, v in op.params.items()})

    def repl(m):
        f = m.group(1)
        if f in _OWN:
            if in_dtype not in _FLOATS:
                raise _Ineligible("'%s' on %s" % (f, in_dtype))
            if not _fast_math():
                why = replica.why_not(f, in_dtype)
                if why is not None:
                    raise _Ineligible("'%s' with our own math is not NumPy's bit for bit "
                                      "(settings.fast_math allows it); %s" % (f, why))
                return replica.kernel_name(f, in_dtype) + "("
            return "%s_%s(" % (f, in_dtype.name)
        if f in _INTRINSIC:
            if in_dtype not in _FLOATS:
                raise _Ineligible("'%s' on %s" % (f, in_dtype))
            return _INTRINSIC[f] + "("
        if f in _HELPERS:
            return _HELPERS[f] + "("
        raise _Ineligible("no vectorizable scalar '%s' for %s (it would call the C library; "
                          "NumPy's SIMD loop is faster)" % (f, in_dtype))
    return re.sub(r"\b([A-Za-z_]\w*)\s*\(", repl, expr)


class _Ineligible(Exception):
    pass


def why_not(prog):
    """None if `prog` can be compiled by this tier, else the reason."""
    try:
        _body(prog, ["x%d" % i for i in range(prog.n_in)])
    except _Ineligible as e:
        return str(e)
    return None


def _body(prog, in_names):
    """Lines computing every op as scalars t0, t1, ... from `in_names`."""
    ok = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                np.uint16, np.uint32, np.uint64, np.float32, np.float64)}
    names = list(in_names)
    lines = []
    for v, (_, dt) in enumerate(prog.ins):
        if dt not in ok:
            raise _Ineligible("dtype %s" % dt)
    for j, o in enumerate(prog.ops):
        if o.dtype not in ok:
            raise _Ineligible("dtype %s" % o.dtype)
        if o.reduce:
            if o.prim is not _reduce_sum_p or o.dtype not in _FLOATS:
                raise _Ineligible("reduction '%s' on %s" % (o.prim.name, o.dtype))
            if prog.value_dtype(o.args[0]) != o.dtype:
                raise _Ineligible("a sum in %s of %s values" % (o.dtype,
                                                                prog.value_dtype(o.args[0])))
            # exact mode: NumPy's order is reproduced for the layouts `sum_layout` names
            names.append(None)
            continue
        args = [names[a] for a in o.args]
        if any(a is None for a in args):
            raise _Ineligible("a reduction's result used inside the region")
        in_dt = prog.value_dtype(o.args[0]) if o.args else o.dtype
        if o.prim is _prims().select_p:
            in_dt = prog.value_dtype(o.args[1])
        expr = _scalar_expr(o, args, in_dt)
        if o.dtype == np.bool_:
            lines.append("t%d = %s" % (j, expr))
        else:
            # NumPy keeps the op's dtype (int32 + int32 wraps in int32); numba would widen
            lines.append("t%d = %s(%s)" % (j, _typename(o.dtype), expr))
        names.append("t%d" % j)
    return lines


# ------------------------------------------------------------------ helpers for kernels

_helpers = None


def helpers():
    """Namespace that generated kernels import their scalar functions from."""
    global _helpers
    if _helpers is None:
        from . import _numba_helpers
        ns = {k: v for k, v in vars(_numba_helpers).items() if k.startswith("_")}
        for (name, dt), f in mathlib.numba_functions().items():
            ns["%s_%s" % (name, dt.name)] = f
        ns.update(replica.functions())
        _helpers = ns
    return _helpers
