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

A region may end in a float sum. Under the exact contract (the default) it is added in NumPy's
own order (`numba_plan.sum_layout`: NumPy's pairwise sum along trailing dims, row after row along
leading dims; other layouts stay on tier 0), with no reassociation, so its bits are NumPy's;
the cost model (`numba_plan.exact_sum_ok`) keeps only the sums that are faster compiled (along
leading dims: the bias gradient; whole sums of static regions up to 8192 elements), and
fusion splits the others off the region (`policy.split_sum_off`).
"""
import re

import numpy as np

from . import mathlib, replica
from .numba_scalar import spell, constant, typename as _typename
from ...primitives.scalar import render, Unrenderable
from ...primitives.reduction import reduce_sum_p as _reduce_sum_p


# ------------------------------------------------------------------ scalar vocabulary
# (how each function of it is written: numba_scalar)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# a primitive whose scalar expression is -x (its operand's negation), in the vocabulary's terms
_NEGATION = ("call", "negative", (("operand", 0),))
_OWN_CALL = re.compile(r"\b(?:%s)\s*\(" % "|".join(mathlib.FUNCTIONS))   # in expression text
_E = None


def _prims():
    global _E
    if _E is None:
        from ...primitives import elementwise as E
        _E = E
    return _E


def _scalar_expr(op, args, in_dtypes, fast_math, negated=None):
    """The op as a scalar expression over the names `args` (of `in_dtypes`), written from its
    primitive's scalar expression under the region's contract; raises _Ineligible.
    `negated`: {name: the float operand it is the negation of}; under fast math the exp of
    such a name is mathlib's exp_neg of that operand, the same value with the negation folded
    into exp's arithmetic (one instruction and one register fewer per vector: a sigmoid's
    loop ~10% faster)."""
    sc = op.prim.scalar
    if sc is None:
        raise _Ineligible("'%s' has no scalar expression (tier 0 calls its kernel)"
                          % op.prim.name)

    def spell_one(f, a, dts, res):
        if f == "exp" and fast_math and negated and a[0] in negated and \
                np.dtype(dts[0]) in _FLOATS:
            return "exp_neg_%s(%s)" % (np.dtype(dts[0]).name, negated[a[0]])
        return spell(f, a, dts, res, fast_math)
    try:
        return render(sc, args, in_dtypes, op.dtype, op.params, spell_one, constant)
    except Unrenderable as e:
        raise _Ineligible("'%s': %s" % (op.prim.name, e)) from None


class _Ineligible(Exception):
    pass


def why_not(prog, fast_math):
    """None if `prog` can be compiled by this tier under the contract `fast_math` (the
    region's: `FusedKernel.fast_math`), else the reason."""
    try:
        _body(prog, ["x%d" % i for i in range(prog.n_in)], fast_math)
    except _Ineligible as e:
        return str(e)
    return None


def _body(prog, in_names, fast_math):
    """Lines computing every op as scalars t0, t1, ... from `in_names`, under the region's
    contract `fast_math`."""
    ok = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                np.uint16, np.uint32, np.uint64, np.float32, np.float64)}
    names = list(in_names)
    negated = {}            # t<j> of a float negation -> its operand's name
    lines = []
    for v, (_, dt) in enumerate(prog.ins):
        if dt not in ok:
            raise _Ineligible("dtype %s" % dt)
    if sum(o.reduce for o in prog.ops) > 1:
        # (a row region, `numba_rows`: its own kernel)
        raise _Ineligible("several reductions")
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
        expr = _scalar_expr(o, args, [prog.value_dtype(a) for a in o.args], fast_math, negated)
        if o.prim.scalar is not None and o.prim.scalar.tree == _NEGATION and \
                o.dtype in _FLOATS and prog.value_dtype(o.args[0]) == o.dtype:
            negated["t%d" % j] = args[0]
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
