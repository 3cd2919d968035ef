"""Tier 1: a fused region compiled by numba into one loop nest (imported only when a compile
is first requested; numba is a dependency of ndflow, imported lazily).

The loop body is the region's ops as scalar code, written from each primitive's `fusion`
template with function names mapped to scalar implementations: our own vectorizable exp,
expm1, log and tanh (`mathlib`), LLVM intrinsics (sqrt, floor, ...) and small select-based
helpers that keep NumPy's NaN rules (maximum/minimum propagate NaN). Functions that would call
the scalar C library (sin, log2, power, ...) make a region ineligible: NumPy's SIMD loops beat
them, so such regions stay on tier 0 (`why_not(program)` says which op).

A region may end in a float sum. Without `settings.fast_math` it is added in NumPy's own order
(`sum_layout`: NumPy's pairwise sum along trailing dims, row after row along leading dims;
other layouts stay on tier 0), with no reassociation, so its bits are NumPy's; the cost
model (`exact_sum_ok`) keeps only the sums that are faster compiled (along leading dims: the
bias gradient; whole sums of static regions up to 8192 elements), and `fusion` splits the
others off the region.

Operands are collapsed before the call: dims that every operand shares (or broadcasts) in the
same way merge, so most regions run a 1-d or 2-d loop over C-contiguous memory, which LLVM
vectorizes. A kernel is specialised to that broadcast pattern; patterns and programs are the
cache key. Compiled kernels are kept between processes in a private directory
(NDFLOW_CACHE_DIR, default ~/.cache/ndflow/kernels) whose files are verified before they are
loaded (`kernel_cache`).

Compiles run in one background thread (`settings.numba = "sync"`: in the caller) and are swapped in
when ready; until then, and for operands a kernel does not fit (non-contiguous, too small,
another pattern), tier 0 runs.
"""
import functools
import hashlib
import math
import os
import queue
import re
import sys
import threading
import time

import numpy as np

from .program import runtime_shapes
from .pool import OutputPool, donated, errstate_flags, errstate_getter, QUIET_STATE, _FREE_REFS
from . import blocks, mathlib, replica, policy
from ...core.settings import settings


def _quiet_errstate():
    """Whether NumPy's floating-point error state asks at most for warnings: compiled loops
    set no error flags, so under 'raise', 'call', 'print' or 'log' (`tnp.seterr`,
    `tnp.errstate`) the region runs on tier 0, whose NumPy loops honour them. (Tier 1 skips
    the 'warn' mode's RuntimeWarnings; its values are NumPy's.)"""
    return errstate_flags()[0]
# From `settings.numba_parallel_min` elements (`numba_parallel_heavy_min` for a region that
# calls exp/log: ~0.45 ns per element, 4-5x an add) one thread and two are both timed and the
# faster one runs (blocks.ThreadChoice: on a busy machine the second thread may be late)
PAR_AFTER = 32          # one-thread calls before the two-thread kernel is compiled and timed
# settings.fast_math: FMA contraction only (no nnan/ninf: NaN and inf must stay right, no
# reassoc); by default none, so that a*b+c rounds twice as NumPy's two loops do
FASTMATH = {"contract"}


def _fast_math():
    return settings.fast_math

STATS = {"import_s": None, "compiles": 0, "compile_s": 0.0, "failures": []}


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
            from ...primitives.reduction import reduce_sum_p
            if o.prim is not reduce_sum_p or o.dtype not in _FLOATS:
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


# ------------------------------------------------------------------ collapsing operands
class Plan:
    """How these operand shapes run: collapsed dims and each operand's broadcast pattern."""
    __slots__ = ("dims", "pattern", "in_shapes", "out_shapes", "acc_shape", "red_shape",
                 "size", "S", "kernel", "parallel_kernel", "requested", "ok", "writeable",
                 "variants", "full", "sum_why", "choice", "serial_runs")

    def __init__(self, prog, in_shapes):
        self.kernel = self.parallel_kernel = None
        self.choice = None         # blocks.ThreadChoice where the thread count is timed
        self.serial_runs = 0       # calls of the one-thread kernel before `choice` exists
        self.sum_why = False       # `exact_sum_ok`, once known
        self.variants = {}     # (parallel, in_place) -> kernel writing results over operands
        self.requested = set()
        shapes = runtime_shapes(prog, in_shapes)
        n = prog.n_in
        ew = [j for j, o in enumerate(prog.ops) if not o.reduce]
        S = shapes[n + ew[0]]
        self.S = S
        self.writeable = None
        self.ok = all(shapes[n + j] == S for j in ew)
        self.size = math.prod(S)
        red = [j for j, o in enumerate(prog.ops) if o.reduce]
        nd = len(S)
        ops_shapes = [tuple(s) for s in in_shapes]
        outs = [v for v in prog.outputs if not prog.ops[v - n].reduce]
        acc = None
        if red:
            o = prog.ops[red[0]]
            axes = o.params["axes"]
            acc = tuple(1 if i in axes else d for i, d in enumerate(S))
            self.red_shape = shapes[n + red[0]]
        else:
            self.red_shape = None
        all_shapes = ops_shapes + [S] * len(outs) + ([acc] if acc is not None else [])
        flags = []
        for s in all_shapes:
            s = (1,) * (nd - len(s)) + tuple(s)
            flags.append(tuple(d == S[i] and S[i] != 1 for i, d in enumerate(s)))
        keep = [i for i in range(nd) if S[i] != 1]
        groups = []
        for i in keep:
            col = tuple(f[i] for f in flags)
            if groups and groups[-1][0] == col:
                groups[-1][1].append(i)
            else:
                groups.append((col, [i]))
        if not groups:
            groups = [(tuple(False for _ in flags), [])]
        self.dims = tuple(math.prod(S[i] for i in g) for _, g in groups)
        self.pattern = tuple(tuple(col[k] for col, _ in groups) for k in range(len(flags)))
        cs = [tuple(d if f else 1 for d, f in zip(self.dims, pat)) for pat in self.pattern]
        self.in_shapes = cs[:n]
        self.out_shapes = cs[n:n + len(outs)]
        self.acc_shape = cs[-1] if acc is not None else None
        # per operand and result: whether it spans a collapsed dim (else it is one element)
        self.full = tuple(any(p) for p in self.pattern)

    def full_reduce(self):
        return self.acc_shape is not None and not any(self.pattern[-1])


def sum_layout(prog, plan):
    """How NumPy's `add.reduce` orders the region's sum for this plan, as (kind, k), or a
    reason string when the order is not one this tier reproduces. The summed value is an
    elementwise result (tier 0 reduces a C-ordered temporary) or an operand that spans every
    dim; NumPy's iterator drops unit dims and merges the others as `Plan` does (fuzzed bit
    for bit against NumPy 2.4, tests/test_tier1_sum.py), so in collapsed dims:
    - 'full' (every dim reduced): one pairwise sum over the elements in C order, added to 0;
    - 'rows' (the last r - k dims reduced, the first k kept): per kept index, a pairwise sum
      of its row in C order, added to 0;
    - 'cols' (the first k dims reduced, the rest kept): 0, then each reduced slice added
      elementwise in C order (the reduce loop's output does not stay put, so no pairwise).
    A sum over the middle or alternating dims (NumPy's order mixes the two) is refused."""
    red = [o for o in prog.ops if o.reduce]
    if not red:
        return None
    src = red[0].args[0]
    pat = plan.pattern
    if src < prog.n_in and not all(pat[src]):
        return "a sum of a broadcast operand (NumPy reduces it through its strides)"
    p = pat[-1]
    r = len(p)
    k = sum(p)
    if k == 0:
        return ("full", 0)
    if k == r:          # only unit dims reduced: each element added to 0
        return ("cols", 0)
    if all(p[:k]) and not any(p[k:]):
        return ("rows", k)
    k = r - k
    if not any(p[:k]) and all(p[k:]):
        return ("cols", k)
    return ("a sum over collapsed dims %s (reduced: %s) is not in an order this tier "
            "reproduces bit for bit" % (plan.dims, tuple(not f for f in p)))


# Largest region whose sum is a pairwise one ('full', 'rows') that tier 1 runs: the
# region's compiled elementwise loop followed by NumPy's own (SIMD) sum (`fusion` splits the
# sum off) was faster at every size measured than one loop that writes each row into a
# buffer and sums it as NumPy does (2-core x86, float32, A/B against the split, best of 15):
# sum(square(x - y)) 4.8 -> 5.4 us at 4096 elements, 7.3 -> 9.6 us at 16K, 336 -> 394 us at
# 1M; sum(x * y + 1, axis=1) over rows of 256 5.1 -> 6.5 us at 4096, 410 -> 488 us at 1M.
# So by default none (`settings.numba_pairwise_max` sets a limit for both); the exact kernels
# are kept for regions where that changes (tests/test_tier1_sum.py runs them).
# Sums along leading dims ('cols': rows added elementwise) are faster compiled at every size
# measured from `settings.numba_min` elements (bias gradient, 64 wide: 10.3 -> 7.0 us at 16K elements,
# 460 -> 181 us at 1M; 128 wide: equal at 8192) but not below (32x128: 4.8 -> 5.3 us: a
# region with a sum takes the general call path, ~3 us more than the split's quick call).
# Static regions get a generated caller with their sum too (`Runner._make_quick`, ~2 us less
# per call than the general path), which moves both limits for them. Measured with it
# (2-core x86, float32, load ~3.7, best of 5 x 3 rounds interleaved, the default split vs the
# whole region compiled):
# - 'cols': (h > 0) * g summed over axis 0 at 32x128 4.81 -> 2.56 us, 64x64 5.43 -> 2.87 us
#   (equal at 64x128 and above, both compiled): so `pays` alone decides (no size floor);
# - 'full': sum(square(x - y)) at 4096 4.80 -> 3.81 us, 8192 5.61 -> 5.11, 12288 6.78 ->
#   6.77, 16K 7.74 -> 7.78, 64K 22.7 -> 25.8; mean(where(x > y, x * y, y - x)) at 1024
#   6.21 -> 3.26, 4096 5.10 -> 4.24, 16K 8.22 -> 8.13: up to 8192 elements;
# - 'rows': sum(x * y + 1, axis=1) at 4096 in rows of 256/128/512 5.06 -> 4.37, 5.32 ->
#   4.63, 4.98 -> 4.29, but in rows of 64 5.85 -> 6.21 and at 16K 8.82 -> 9.68 (the
#   pairwise walk per short row costs more than it saves): unchanged, none.
# Regions of unknown shape keep the limits above (the general path's call each time).
STATIC_COLS_MIN = 0
STATIC_PAIRWISE_MAX = {"full": 8192, "rows": 0}


def exact_sum_ok(prog, plan):
    """None when tier 1 runs this plan's sum (if any): in NumPy's order and, for a pairwise
    sum, small enough to pay (`settings.numba_pairwise_max`); else the reason. Kept on the
    plan (`settings.fast_math` is read when a region is requested)."""
    why = plan.sum_why
    if why is False:
        why = None
        if plan.acc_shape is not None and not _fast_math():
            lay = sum_layout(prog, plan)
            if isinstance(lay, str):
                why = lay
            elif lay[0] != "cols" and plan.size > (
                    max(settings.numba_pairwise_max, STATIC_PAIRWISE_MAX[lay[0]])
                    if prog.static else settings.numba_pairwise_max):
                why = ("a pairwise sum ('%s') over %d elements: the compiled elementwise loop "
                       "and NumPy's own sum after it are faster" % (lay[0], plan.size))
            elif lay[0] == "cols" and plan.size < (
                    min(settings.numba_min, STATIC_COLS_MIN) if prog.static
                    else settings.numba_min):
                why = ("a sum over %d elements: the compiled elementwise loop and NumPy's own "
                       "sum after it are faster" % plan.size)
        plan.sum_why = why
    return why


# a last collapsed dim this short, after one at least SHORT_OUTER long, runs as the outer of
# the two loops: an inner loop of a few iterations cannot be vectorized (a per-example outer
# product (B, m, 1) * (B, 1, 2) ran at ~0.7 ns per element, 0.25 with the loops swapped)
SHORT_INNER = 4
SHORT_OUTER = 16


def _swap_inner(prog, plan):
    """Whether the kernel for `plan` loops over its last two collapsed dims in swapped order.
    Elementwise regions only: each element is computed alone, so the order changes no value
    (a reduction's sum order would)."""
    d = plan.dims
    return len(d) >= 3 and d[-1] <= SHORT_INNER and d[-2] >= SHORT_OUTER and \
        not any(o.reduce for o in prog.ops)


# NumPy's pairwise sum (loops_utils.h.src, `pairwise_sum`) over a[0:n]: blocks of up to 128
# summed with 8 accumulators, longer runs split at half rounded down to a multiple of 8; the
# recursion is walked with an explicit stack (at most ~2 log2(n) entries). `mz` is -0.0 of
# the dtype: a block of fewer than 8 starts from it, as NumPy's does.
_PAIRWISE_SRC = '''
@njit(error_model='numpy', nogil=True)
def _pw_leaf(a, lo, n, mz):
    # a view from 0 and range loops: indices LLVM sees are >= 0 (no wraparound test per
    # load), so the 8 accumulators become one vector add
    b = a[lo:lo + n]
    if n < 8:
        res = mz
        for i in range(n):
            res += b[i]
        return res
    r0 = b[0]
    r1 = b[1]
    r2 = b[2]
    r3 = b[3]
    r4 = b[4]
    r5 = b[5]
    r6 = b[6]
    r7 = b[7]
    for k in range(1, n // 8):
        i = 8 * k
        r0 += b[i]
        r1 += b[i + 1]
        r2 += b[i + 2]
        r3 += b[i + 3]
        r4 += b[i + 4]
        r5 += b[i + 5]
        r6 += b[i + 6]
        r7 += b[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(n - n % 8, n):
        res += b[i]
    return res


@njit(error_model='numpy', nogil=True)
def _pairwise(a, n, mz, los, ns, stage, vals):
    if n <= 128:
        return _pw_leaf(a, 0, n, mz)
    los[0] = 0
    stage[0] = 0
    ns[0] = n
    sp = 1
    vp = 0
    while sp > 0:
        t = sp - 1
        m = ns[t]
        if m <= 128:
            vals[vp] = _pw_leaf(a, los[t], m, mz)
            vp += 1
            sp -= 1
            continue
        h = m // 2
        h -= h % 8
        if stage[t] == 0:
            stage[t] = 1
            los[sp] = los[t]
            ns[sp] = h
            stage[sp] = 0
            sp += 1
        elif stage[t] == 1:
            stage[t] = 2
            los[sp] = los[t] + h
            ns[sp] = m - h
            stage[sp] = 0
            sp += 1
        else:
            vals[vp - 2] = vals[vp - 2] + vals[vp - 1]
            vp -= 1
            sp -= 1
    return vals[0]
'''


def _literal(x, dt):
    """Source text of the NumPy scalar `x` (one element of dtype `dt`) exactly, for a kernel to
    hold as a constant; None where there is none worth writing (NaN payloads, other kinds)."""
    dt = np.dtype(dt)
    a = np.asarray(x)
    if a.size != 1 or a.dtype != dt:
        return None
    v = a.reshape(-1)[0]
    if dt in _FLOATS:
        f = float(v)
        return "np.%s(float.fromhex(%r))" % (dt.name, f.hex()) if math.isfinite(f) else None
    if dt.kind in "iu":
        return "np.%s(%d)" % (dt.name, int(v))
    if dt.kind == "b":
        return "np.bool_(%r)" % bool(v)
    return None


# each leaf of a written-out sum is one more inlined copy of the leaf loop to compile (a
# 4096-element sum's 32 took ~10 s): up to 4 leaves
TREE_MAX = 512


def _pairwise_tree(lo, n):
    """NumPy's pairwise sum of buf[lo:lo + n] as one expression, for a size known when the
    kernel is written: the halves `_pairwise` walks with its stack, added in its order (the
    stack's four arrays are then not made at every call)."""
    if n <= 128:
        return "_pw_leaf(buf, %d, %d, mz)" % (lo, n)
    h = n // 2
    h -= h % 8
    return "(%s + %s)" % (_pairwise_tree(lo, h), _pairwise_tree(lo + h, n - h))


def _kernel_source(prog, plan, parallel, name, in_place=(), baked=(), scalars=(), static=False):
    """`in_place`: pairs (j, i): the j-th elementwise result is written into operand i (its
    buffer was donated and it is that operand). The kernel then stores through the operand's
    own name: given one array as operand and output, LLVM's runtime overlap check fails and
    the loop runs unvectorized (2-3x slower); a load and a store of the same element through
    one pointer vectorize.

    For the generated caller of a static region (`Runner._make_quick`): `baked`, pairs (i,
    literal) for one-element operands the graph feeds a constant, written into the kernel as
    that value (`_literal`) instead of being a parameter; `scalars`, positions of one-element
    operands passed as NumPy scalars of their dtype (the step's inlined 0-d arithmetic makes
    them) rather than one-element arrays. Each parameter fewer is ~45 ns less of numba's
    dispatch, and a scalar needs no array made for it. `static`: the kernel runs only on the
    plan's sizes (a whole pairwise sum of up to `TREE_MAX` elements is then written out,
    `_pairwise_tree`)."""
    baked = dict(baked)
    scalars = set(scalars)
    n = prog.n_in
    into = dict(in_place)
    pat = plan.pattern
    r = len(plan.dims)
    idx = ["i%d" % k for k in range(r)]
    outs = [v for v in prog.outputs if not prog.ops[v - n].reduce]
    red = [j for j, o in enumerate(prog.ops) if o.reduce]
    full_red = plan.full_reduce()
    # exact sums (no fast math): NumPy's order, `sum_layout`; 'cols' is the loop order itself
    lay = None
    if red and not _fast_math():
        lay = sum_layout(prog, plan)
        if isinstance(lay, str):
            raise _Ineligible(lay)
        parallel = False        # one row buffer; and 'cols' sums along the outer loop anyway
    pairwise = lay is not None and lay[0] != "cols"
    tree = pairwise and full_red and static and plan.size <= TREE_MAX

    def index(p):
        if not any(p):
            return "[0]"
        return "[%s]" % ", ".join(i if f else "0" for i, f in zip(idx, p))

    def read(i):
        if i in baked:
            return "a%d = K%d" % (i, i)
        if i in scalars:
            return "a%d = x%d" % (i, i)
        return "a%d = x%d%s" % (i, i, index(pat[i]))

    params = ["d%d" % k for k in range(r)] + ["x%d" % i for i in range(n) if i not in baked] + \
             ["o%d" % k for k in range(len(outs)) if k not in into] + \
             (["acc"] if red and not full_red else [])
    body = _body(prog, ["a%d" % i for i in range(n)])
    h = helpers()
    used = sorted({m for line in body for m in re.findall(r"\b([A-Za-z_]\w*)\(", line)
                   if m in h})
    L = ["import numpy as np", "from numba import njit, prange",
         "from ndflow.graph.kernels.numba_tier import helpers as _helpers", "_h = _helpers()"]
    L += ["%s = _h[%r]" % (u, u) for u in used]
    # (numba freezes a global's value into the kernel, typed as the NumPy scalar it is)
    L += ["K%d = %s" % (i, lit) for i, lit in sorted(baked.items())]
    L.append("")
    if pairwise:
        L.append(_PAIRWISE_SRC)
        rdt = _typename(prog.ops[red[0]].dtype)
        first = lay[1] if lay[0] == "rows" else 0
    # the outermost loop is split between threads unless it runs along a reduced axis
    outer_red = red and not full_red and not pat[-1][0]
    parallel = parallel and not outer_red
    L.append("@njit(parallel=%s, fastmath=%r, error_model='numpy', nogil=True)"
             % (parallel, FASTMATH if _fast_math() else set()))
    L.append("def %s(%s):" % (name, ", ".join(params)))
    ind = "    "
    if pairwise:
        # the summed values of one row (of everything, for 'full'), then NumPy's pairwise sum
        L.append(ind + "buf = np.empty(%s, %s)" % (" * ".join(["1"] + ["d%d" % k for k in
                                                                      range(first, r)]), rdt))
        # the pairwise walk's stack, made once per call (not per row)
        if not tree:
            L.append(ind + "pw_st = (np.empty(128, np.int64), np.empty(128, np.int64), "
                     "np.zeros(128, np.int8), np.empty(128, %s))" % rdt)
        if full_red:
            L.append(ind + "f = 0")
    elif full_red:
        L.append(ind + "s = 0.0")
    order = list(range(r))
    if _swap_inner(prog, plan):
        order[-2:] = order[-1], order[-2]
    # an operand that does not vary along the innermost loop is read before it: the kernel's
    # stores may alias its operands as far as LLVM knows, so a load left inside is repeated at
    # every iteration and keeps the loop from vectorizing (a per-example outer product ran
    # 2.5x slower). No operand read this way is written by the kernel (a result written over
    # an operand spans every loop).
    inner = order[-1]
    hoist = [i for i in range(n) if not pat[i][inner]]
    for k in order:
        if k == inner:
            for i in hoist:
                L.append(ind + read(i))
        if pairwise and not full_red and k == first:
            L.append(ind + "f = 0")
        rng = "prange" if (k == 0 and parallel) else "range"
        L.append(ind + "for %s in %s(d%d):" % (idx[k], rng, k))
        ind += "    "
    for i in range(n):
        if i not in hoist:
            L.append(ind + read(i))
    L += [ind + line for line in body]
    for k, v in enumerate(outs):
        if k in into:
            L.append(ind + "x%d%s = t%d" % (into[k], index(pat[into[k]]), v - n))
        else:
            L.append(ind + "o%d%s = t%d" % (k, index(pat[n + k]), v - n))
    if red:
        src = prog.ops[red[0]].args[0]
        sv = ("a%d" % src) if src < n else ("t%d" % (src - n))
        if pairwise:
            L.append(ind + "buf[f] = %s" % sv)
            L.append(ind + "f += 1")
            if not full_red:
                L.append("    " * (first + 1) + "acc%s += _pairwise(buf, f, %s(-0.0), *pw_st)"
                         % (index(pat[-1]), rdt))
        elif full_red:
            L.append(ind + "s += %s" % sv)
        else:
            L.append(ind + "acc%s += %s" % (index(pat[-1]), sv))
    if tree:
        L.append("    s = %s(0.0)" % rdt)
        L.append("    mz = %s(-0.0)" % rdt)
        L.append("    s += %s" % _pairwise_tree(0, plan.size))
        L.append("    return s")
    elif pairwise and full_red:
        L.append("    s = %s(0.0)" % rdt)
        L.append("    s += _pairwise(buf, f, %s(-0.0), *pw_st)" % rdt)
        L.append("    return s")
    elif full_red:
        L.append("    return s")
    else:
        L.append("    return 0")
    return "\n".join(L) + "\n"


# ------------------------------------------------------------------ compiling
_KERNELS = {}          # (program key, pattern, parallel) -> dispatcher
_LOCK = threading.Lock()
_Q = queue.Queue()
_worker = None
_pending = 0
_idle = threading.Condition()


_STAMP = None


def _load(src, name, cache=True):
    """Compile-ready dispatcher for `src`, with the verified disk cache (kernel_cache) unless
    `cache` is false or no safe cache directory exists."""
    global _STAMP
    from . import kernel_cache
    if _STAMP is None:
        import numba
        h = hashlib.sha256()
        for m in (mathlib, replica, sys.modules[__name__], kernel_cache):
            with open(m.__file__, "rb") as f:
                h.update(f.read())
        h.update(numba.__version__.encode())
        _STAMP = h.hexdigest()
    return kernel_cache.load(src, name, _STAMP, cache)


def _dummy_args(prog, plan, in_place=(), baked=(), scalars=()):
    """Arguments of the kernel's types (dtype, rank, layout, writeable) but one element each:
    calling with them compiles the kernel, or loads it from numba's disk cache."""
    n = prog.n_in
    into = dict(in_place)
    written = set(into.values())
    skip = {i for i, _ in baked}
    r = len(plan.dims)
    args = [1] * r
    for i in range(n):
        if i in skip:
            continue
        if i in scalars:
            args.append(prog.ins[i][1].type(0))
            continue
        a = np.zeros(tuple(1 for _ in plan.in_shapes[i]) if any(plan.pattern[i]) else (1,),
                     prog.ins[i][1])
        if plan.writeable is not None and not plan.writeable[i] and i not in written:
            a.flags.writeable = False
        args.append(a)
    outs = [v for v in prog.outputs if not prog.ops[v - n].reduce]
    for k, v in enumerate(outs):
        if k in into:
            continue
        args.append(np.zeros(tuple(1 for _ in plan.out_shapes[k]) if any(plan.pattern[n + k])
                             else (1,), prog.ops[v - n].dtype))
    red = [o for o in prog.ops if o.reduce]
    if red and not plan.full_reduce():
        args.append(np.zeros(tuple(1 for _ in plan.acc_shape), red[0].dtype))
    return args


def _verify_replicas(src):
    """Raise (leaving tier 0 in place) unless every replica of NumPy's math that `src` calls
    matched NumPy's loop in this process (`replica.verify`, once per function)."""
    for rname in replica.functions():
        if rname + "(" in src:
            fname, dt = rname[2:].split("_", 1)
            why = replica.verify(fname, np.dtype(dt))
            if why is not None:
                raise RuntimeError(why)


def _kernel_key(prog, plan, parallel, in_place=(), baked=(), scalars=(), static=False):
    return (prog.key, plan.pattern, parallel, _fast_math(), in_place, _swap_inner(prog, plan),
            baked, scalars, plan.dims if static else None)


def _compiled(prog, plan, parallel):
    """Whether `_compile` already made this kernel in this process."""
    key = _kernel_key(prog, plan, parallel)
    with _LOCK:
        return key in _KERNELS


def _compile(prog, plan, parallel, in_place=(), baked=(), scalars=(), static=False):
    key = _kernel_key(prog, plan, parallel, in_place, baked, scalars, static)
    with _LOCK:
        k = _KERNELS.get(key)
    if k is not None:
        return k
    t0 = time.perf_counter()
    if STATS["import_s"] is None:
        import numba  # noqa: F401
        STATS["import_s"] = time.perf_counter() - t0
    name = "fused_kernel"
    src = _kernel_source(prog, plan, parallel, name, in_place, baked, scalars, static)
    _verify_replicas(src)
    dummy = _dummy_args(prog, plan, in_place, baked, scalars)
    try:
        disp = _load(src, name)
        disp(*dummy)    # compiles (or loads from the disk cache)
    except Exception as e:
        # numba cannot always reload what it cached (two-thread kernels: "No module named
        # '<dynamic>'"): compile in memory instead
        STATS["failures"].append("disk cache: %r" % e)
        disp = _load(src, name, cache=False)
        disp(*dummy)
    disp.disable_compile()                          # a new type later: tier 0, not a stall
    disp.ndflow_source = src
    STATS["compiles"] += 1
    STATS["compile_s"] += time.perf_counter() - t0
    with _LOCK:
        _KERNELS[key] = disp
    return disp


def _work():
    global _pending
    while True:
        job = _Q.get()
        try:
            job()
        except Exception as e:          # a failed compile leaves tier 0 in place
            STATS["failures"].append(repr(e))
        finally:
            with _idle:
                _pending -= 1
                _idle.notify_all()


def _submit(job, sync):
    global _worker, _pending
    if sync:
        try:
            job()
        except Exception as e:
            STATS["failures"].append(repr(e))
        return
    job = settings.bound(job)       # the asking thread's settings (overrides) in the worker
    with _idle:
        _pending += 1
    if _worker is None:
        _worker = threading.Thread(target=_work, name="ndflow-numba", daemon=True)
        _worker.start()
    _Q.put(job)


def wait(timeout=None):
    """Wait until queued compiles are done."""
    end = None if timeout is None else time.monotonic() + timeout
    with _idle:
        while _pending:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            _idle.wait(left)
    return True


# ------------------------------------------------------------------ running
def _compact(x):
    """`x` without the repeats of its zero-stride dims (each becomes size 1), if that leaves
    C-contiguous memory; else None."""
    sh, st = x.shape, x.strides
    if not any(t == 0 and n > 1 for n, t in zip(sh, st)):
        return None
    c = x[tuple(slice(0, 1) if (t == 0 and n > 1) else slice(None) for n, t in zip(sh, st))]
    return c if c.flags.c_contiguous else None


def _same_compaction(last, compact, xs):
    """Whether `compact` (operands, compacted views in place of broadcast ones) compacts the
    same places into the same views as `last` (views, None where not compacted) did."""
    if len(last) != len(compact):
        return False
    for a, c, x in zip(last, compact, xs):
        if (c is x) if a is not None else (c is not x):
            return False
        if a is not None and a is not c:
            return False
    return True


class Runner:
    """The tier-1 callable of one FusedKernel: collapse operands, call the kernel."""

    def __init__(self, fk, sync):
        self.fk = fk
        self.prog = fk.prog
        self.sync = sync
        # settings.threads = 1 (`--threads 1` in the benchmarks) holds tier 1 to one thread too
        self.parallel_ok = fk.parallel and blocks.threads() > 1
        self.heavy = any(_OWN_CALL.search(o.prim.fusion or "") for o in self.prog.ops)
        self.plans = {}
        self.static_plan = Plan(self.prog, [s for s, _ in self.prog.ins]) if self.prog.static \
            else None
        self.pools = [OutputPool() for v in self.prog.outputs]
        n = self.prog.n_in
        self.outs = [k for k, v in enumerate(self.prog.outputs) if not self.prog.ops[v - n].reduce]
        self.red_out = [k for k, v in enumerate(self.prog.outputs) if self.prog.ops[v - n].reduce]
        red = [o for o in self.prog.ops if o.reduce]
        self.red_dtype = red[0].dtype if red else None
        self.red_keep = red[0].params["keepdims"] if red else None
        if red and not _fast_math():
            self.parallel_ok = False       # an exact sum runs on one thread (`_kernel_source`)
        self.units = policy.cost_units(self.prog)
        # operand position -> (the broadcast array seen there last, its shape, its compacted
        # view): a folded constant is the same object at every call, compacted once
        self.compact_memo = {}
        self.last_cplan = None
        p = self.static_plan
        self.static_pays = p is not None and p.ok and policy.pays(p.size, self.units, True)
        # paying only through the generated caller (`settings.numba_quick_units`): buffers offered for its
        # results are declined, so that every call can take that caller (the general path
        # costs more than tier 0 here; a few elements gain nothing from a donor)
        self.quick_only = self.static_pays and not policy.pays(p.size, self.units)
        # operand positions the graph feeds a constant (set by fusion on the FusedKernel):
        # the same object at every call, so its prepared argument can be kept (`_make_quick`)
        self.const_pos = getattr(fk, "const_pos", None)
        self.quick = None
        self.quick_consts = ()
        # the same for calls given donors whose every result goes into one of its operands
        # (a Variable's update in place, `_make_quick_into`)
        self.quick_into = None
        self.quick_into_consts = ()

    def _quick_operands(self, orig, plan, args, ns, baked=(), scalars=(), layout_by_numba=False):
        """The operand part of a generated caller: (tests that send a call back to the general
        path, the kernel's arguments, the constants kept), with the names those use put in
        `ns`; None where an operand would send every call there (a strided or non-ndarray
        operand that is not a constant). `baked` and `scalars`: the kernel's (see
        `_kernel_source`). `layout_by_numba`: no test of C-contiguity here, for a caller
        that only reads its operands: the kernel was compiled for C-contiguous (and
        writeable or not) arrays and compiling is off, so numba's dispatch refuses any
        other with a TypeError, which sends the call to the general path (~50 ns less per
        operand than asking `x.flags`)."""
        cp = self.const_pos
        baked = {i for i, _ in baked}
        nd = len(plan.dims)
        checks, call = [], ["%d" % d for d in plan.dims]
        kept = []
        for i in range(self.prog.n_in):
            x, a = orig[i], args[nd + i]
            if i in cp:
                kept.append((i, x))
                ns["K%d" % i], ns["P%d" % i] = x, a
                checks.append("x%d is not K%d" % (i, i))
                if i not in baked:
                    call.append("P%d" % i)
                continue
            if isinstance(x, np.generic) and not plan.full[i] and a.shape == (1,):
                # a NumPy scalar (a value of the step's inlined 0-d arithmetic): as the general
                # path passes it, a one-element array of its own dtype (or the scalar itself,
                # to a kernel taking it so); its type checked exactly, so the dtype is the one
                # the kernel was called with (numba would convert another scalar's)
                ns["ST%d" % i], ns["arr1_"] = type(x), np.array
                checks.append("type(x%d) is not ST%d" % (i, i))
                call.append(("x%d" if i in scalars else "arr1_(x%d, ndmin=1)") % i)
                continue
            if type(x) is not np.ndarray or not x.flags.c_contiguous:
                return None
            checks.append(("type(x%d) is not nd_" % i) if layout_by_numba else
                          ("type(x%d) is not nd_ or not x%d.flags.c_contiguous" % (i, i)))
            if a.shape == x.shape:
                call.append("x%d" % i)
            else:
                ns["T%d" % i] = a.shape
                call.append("x%d.reshape(T%d)" % (i, i))
        return checks, call, kept

    def _quick_reduction(self, plan, ns, call):
        """The reduction part of a generated caller, as the general path does it (`__call__`'s
        end): a partial sum into fresh zeros of the accumulator's shape, read back in the sum's
        shape; a whole sum returned by the kernel, as the dtype's scalar (filled into a fresh
        array of the sum's shape under keepdims). Returns (lines before the call, the call's
        prefix, lines after it); the result is `r_`. Nothing when the region has no sum."""
        if not self.red_out:
            return [], "", []
        ns["RD_"], ns["RS_"] = self.red_dtype, plan.red_shape
        if not plan.full_reduce():
            ns["zeros_"], ns["AS_"] = np.zeros, plan.acc_shape
            call.append("acc_")
            return ["acc_ = zeros_(AS_, RD_)"], "", ["r_ = acc_.reshape(RS_)"]
        ns["RT_"] = self.red_dtype.type
        if plan.red_shape != ():
            ns["full_"] = np.full
            return [], "s_ = ", ["r_ = full_(RS_, RT_(s_), RD_)"]
        return [], "s_ = ", ["r_ = RT_(s_)"]

    def _quick_result(self, names):
        """The return statement of a generated caller: `names` of the elementwise results (in
        `self.outs` order) and the sum's `r_`, in the program's output order."""
        res = [None] * len(self.prog.outputs)
        for nm, k_out in zip(names, self.outs):
            res[k_out] = nm
        for k_out in self.red_out:
            res[k_out] = "r_"
        return "    return %s" % (res[0] if len(res) == 1 else "(%s)" % ", ".join(res))

    def _quick_kernel_args(self, orig, plan):
        """(baked, scalars) for a kernel of this region's static plan made for its generated
        caller (`_kernel_source`), or None when it would be the plain kernel: the one-element
        constants with a literal, the operands the first call passed as NumPy scalars (and
        a whole sum written for the plan's size)."""
        baked, scalars = [], []
        for i in range(self.prog.n_in):
            if plan.full[i] or any(plan.pattern[i]):
                continue
            x = orig[i]
            if i in self.const_pos:
                lit = _literal(x, self.prog.ins[i][1])
                if lit is not None:
                    baked.append((i, lit))
            elif isinstance(x, np.generic) and x.dtype == self.prog.ins[i][1]:
                scalars.append(i)
        if not baked and not scalars and not (self.red_out and plan.full_reduce()):
            return None
        return tuple(baked), tuple(scalars)

    def _request_quick_kernel(self, orig, plan, args):
        """After the generated caller is made: compile (in the background unless synchronous)
        the kernel `_quick_kernel_args` describes, and remake the caller around it."""
        # (only for a region this small: on more elements the call's fixed cost is a small
        # part, not worth a second compile)
        got = self._quick_kernel_args(orig, plan) if self.quick_only else None
        if got is None:
            return
        baked, scalars = got
        quick = self.quick

        def job():
            k = _compile(self.prog, plan, False, (), baked, scalars, True)
            if self.quick is not quick:      # dropped meanwhile (its constants rebound)
                return
            q = self._make_quick(orig, plan, k, args, baked, scalars)
            if q and self.quick is quick:
                self.quick = q
        _submit(job, self.sync)

    def _make_quick(self, orig, plan, k, args, baked=(), scalars=()):
        """After a call with a static plan that took the plain kernel: a generated function
        doing what the next calls need and nothing else (~1 us instead of ~4 for a region of
        a few operands): the constants' prepared arguments (reshaped, compacted) kept and
        checked by identity, each other operand checked to be a C-contiguous ndarray and
        reshaped only where its shape is not the kernel's, results from the pools (a sum's
        fresh, `_quick_reduction`). Anything
        else (another object in a constant's place, a strided operand, NumPy's error state
        asking for more than warnings, argument types the kernel was not compiled for) returns
        NotImplemented and the general path runs."""
        n = self.prog.n_in
        ns = {"nd_": np.ndarray, "quiet_": errstate_flags, "NI_": NotImplemented, "k_": k,
              "refs_": sys.getrefcount, "FREE_REFS_": _FREE_REFS, "empty_": np.empty}
        ops = self._quick_operands(orig, plan, args, ns, baked, scalars, True)
        if ops is None:
            return None
        checks, call, kept = ops
        body, outs = [], []
        kept_out = getattr(self.fk, "kept_outputs", ())
        for j, k_out in enumerate(self.outs):
            v = self.prog.outputs[k_out]
            shape = plan.out_shapes[j] if plan.full[n + j] else (1,)
            if k_out in kept_out:
                # a Variable keeps it past the next call: a pooled one would be found shared
                # then (~0.15 us for nothing), so a fresh array, not pooled
                ns["D%d" % j], ns["S_"] = self.prog.ops[v - n].dtype, plan.S
                body.append("o%d = empty_(S_, D%d)" % (j, j))
                call.append(("o%d" % j) if tuple(shape) == tuple(plan.S) else
                            "o%d.reshape(U%d)" % (j, j))
                ns["U%d" % j] = tuple(shape)
                outs.append("o%d" % j)
                continue
            # the pool's take and give, inlined (a static plan's buffers all have its shape
            # and dtype): a buffer is reused only when nothing but this call refers to it
            ns["free%d" % j] = self.pools[k_out].free
            ns["D%d" % j] = self.prog.ops[v - n].dtype
            ns["S_"] = plan.S
            body += ["try:",
                     "    o%d = free%d.pop()" % (j, j),
                     "    if refs_(o%d) != FREE_REFS_:" % j,
                     "        o%d = empty_(S_, D%d)" % (j, j),
                     "except IndexError:",
                     "    o%d = empty_(S_, D%d)" % (j, j)]
            if tuple(shape) == tuple(plan.S):
                call.append("o%d" % j)
            else:
                ns["U%d" % j] = tuple(shape)
                call.append("o%d.reshape(U%d)" % (j, j))
            outs.append("o%d" % j)
        pre, assign, post = self._quick_reduction(plan, ns, call)
        xs = ", ".join("x%d" % i for i in range(n))
        from . import FusedKernel
        ns["SLOW_"] = functools.partial(FusedKernel.__call__, self.fk)
        src = []
        # two functions from one text: `quick(xs)` for `__call__` (NotImplemented sends the
        # call on to the general path), and `qcall(x0, x1, ...)`, which the FusedKernel
        # becomes (`use_quick`): the generated step's call lands in it directly, without the
        # kernel's and the runner's frames, and falls back to the kernel's own call
        quiet = "not quiet_()[0]"
        getter = errstate_getter()
        if getter is not None:
            ns["errstate_"], ns["QUIET_"] = getter, QUIET_STATE
            quiet = "(errstate_() is not QUIET_[0] and %s)" % quiet
        for head, fail in (("quick(xs):\n    %s, = xs" % xs, "NI_"),
                           ("qcall(%s):" % xs, "SLOW_(%s)" % xs)):
            src += ["def " + head,
                    "    if %s or %s:" % (" or ".join(checks + ["False"]), quiet),
                    "        return %s" % fail]
            src += ["    " + b for b in body + pre]
            src += ["    try:",
                    "        %sk_(%s)" % (assign, ", ".join(call)),
                    "    except TypeError:",
                    "        return %s" % fail]
            for j in range(len(outs)):
                if "free%d" % j in ns:
                    src += ["    if len(free%d) < 2:" % j, "        free%d.append(o%d)" % (j, j)]
            src += ["    " + b for b in post]
            src.append(self._quick_result(outs))
        text = "\n".join(src) + "\n"
        exec(compile(text, "<ndflow tier-1 call>", "exec"), ns)
        self.quick_consts = tuple(kept)
        q = ns["quick"]
        q.qcall = ns["qcall"]
        q.source = text
        return q

    # The generated caller (None: not made yet, False: none). Its twin `qcall` is the
    # FusedKernel's own call while it is in place (`FusedKernel.use_quick`); anything else put
    # here (False when its constants were rebound, a wrapper looking at the calls) takes the
    # kernel's call back through `__call__`, so that every call sees it.
    @property
    def quick(self):
        return self._quick

    @quick.setter
    def quick(self, q):
        self._quick = q
        qc = getattr(q, "qcall", None)
        if qc is not None:
            self.fk.drop_quick()
            self.fk.use_quick(qc)
        else:
            self.fk.drop_quick()

    def _make_quick_into(self, orig, plan, k, args, in_place):
        """As `_make_quick`, for calls whose donors put every result into one of the operands
        (the in-place variant `k` of the kernel, e.g. a Variable's next value written over its
        current one): each such donor checked to be that operand, by identity, and a whole,
        writeable array (as `donated` asks); the results are those operands (~1 us instead of
        ~5). Anything else returns NotImplemented and the general path runs."""
        cp = self.const_pos
        n = self.prog.n_in
        into = dict(in_place)
        ns = {"nd_": np.ndarray, "quiet_": errstate_flags, "NI_": NotImplemented, "k_": k}
        ops = self._quick_operands(orig, plan, args, ns)
        if ops is None:
            return None
        checks, call, kept = ops
        outs = []
        for j, k_out in enumerate(self.outs):
            i = into[j]
            if i in cp:
                return None
            # (the operand's shape and dtype are the plan's: a static plan's operands have them)
            checks.append("ds[%d] is not x%d or x%d.base is not None or not x%d.flags.writeable"
                          % (k_out, i, i, i))
            outs.append("x%d" % i)
        src = ["def quick_into(xs, ds):",
               "    %s, = xs" % ", ".join("x%d" % i for i in range(n)),
               "    if len(ds) != %d or %s or not quiet_()[0]:" % (len(self.prog.outputs),
                                                                   " or ".join(checks)),
               "        return NI_",
               "    try:",
               "        k_(%s)" % ", ".join(call),
               "    except TypeError:",
               "        return NI_",
               "    return %s" % (outs[0] if len(outs) == 1 else "(%s)" % ", ".join(outs))]
        exec(compile("\n".join(src) + "\n", "<ndflow tier-1 call>", "exec"), ns)
        self.quick_into_consts = tuple(kept)
        return ns["quick_into"]

    def plan_for(self, xs):
        key = tuple(x.shape for x in xs)
        p = self.plans.get(key)
        if p is None:
            try:
                p = Plan(self.prog, key)
            except ValueError:
                return None
            self.plans[key] = p
        return p

    def ensure(self, plan, parallel, xs, in_place=()):
        which = ("par" if parallel else "ser") if not in_place else (parallel, in_place)
        if which in plan.requested:
            return
        plan.requested.add(which)
        if plan.writeable is None:
            plan.writeable = [getattr(getattr(x, "flags", None), "writeable", True) for x in xs]
        prog = self.prog

        def job():
            k = _compile(prog, plan, parallel, in_place)
            if in_place:
                plan.variants[(parallel, in_place)] = k
            elif parallel:
                plan.parallel_kernel = k
            else:
                plan.kernel = k
        _submit(job, self.sync)

    def __call__(self, xs, donors=None):
        if donors is not None and self.quick_only:
            donors = None
        if donors is None:
            q = self.quick
            if q:
                r = q(xs)
                if r is not NotImplemented:
                    return r
                if any(xs[i] is not x for i, x in self.quick_consts):
                    # not the constants it was made for (the node's operands rebound): drop
                    # it, and the objects it holds
                    self.quick, self.quick_consts = False, ()
        else:
            q = self.quick_into
            if q:
                r = q(xs, donors)
                if r is not NotImplemented:
                    return r
                if any(xs[i] is not x for i, x in self.quick_into_consts):
                    self.quick_into, self.quick_into_consts = False, ()
        plan = self.static_plan
        if plan is not None:
            if not self.static_pays:
                return NotImplemented
        else:
            plan = self.plan_for(xs)
            if plan is None or not plan.ok or not policy.pays(plan.size, self.units):
                return NotImplemented
        if not _quiet_errstate():
            return NotImplemented       # tier 0 (NumPy) raises/calls as `np.errstate` asks
        orig = xs
        compact = None
        memo = self.compact_memo
        fresh = False
        for i, x in enumerate(xs):
            if type(x) is np.ndarray and not x.flags.c_contiguous:
                if compact is None:
                    compact = list(xs)
                m = memo.get(i)
                if m is not None and m[0] is x and m[1] == x.shape:
                    compact[i] = m[2]      # the same array as last call (a constant): its view
                    continue
                fresh = True
                c = _compact(x)
                if c is None:
                    return NotImplemented
                if len(memo) < 16:
                    memo[i] = (x, x.shape, c)     # holds x: its id cannot be reused meanwhile
                compact[i] = c
        if compact is not None:
            # a broadcast operand (a folded constant, np.broadcast_to) runs as the smaller
            # array it repeats, read broadcast by the kernel: same values, same result shape
            # static shapes, and the same compacted arrays at the same places as last call:
            # the plan of the last call
            last = self.last_cplan
            if fresh or self.static_plan is None or last is None or \
                    not _same_compaction(last[0], compact, xs):
                cplan = self.plan_for(compact)
                if cplan is None or not cplan.ok or cplan.S != plan.S or \
                        cplan.red_shape != plan.red_shape:
                    return NotImplemented
                if self.static_plan is not None:
                    self.last_cplan = ([c if c is not x else None
                                        for c, x in zip(compact, xs)], cplan)
            else:
                cplan = last[1]
            plan, xs = cplan, compact
        if self.red_out and exact_sum_ok(self.prog, plan) is not None:
            return NotImplemented
        par = multi = False
        choice = None
        if self.parallel_ok and (plan.size >= settings.numba_parallel_min or
                                 (self.heavy and plan.size >= settings.numba_parallel_heavy_min)):
            multi = True
            choice = plan.choice
            if choice is None and plan.kernel is not None:
                # the two-thread kernel is a second, slower compile: asked for only once the
                # one-thread kernel has run a while (a short-lived program, or the first
                # calls of a long one, do not wait behind it for the GIL)
                plan.serial_runs += 1
                if plan.serial_runs > PAR_AFTER or (
                        plan.serial_runs == 1 and _compiled(self.prog, plan, True)):
                    # (at once where this process already compiled it: another copy of the
                    # same program, e.g. a retrace)
                    choice = plan.choice = blocks.ThreadChoice(2)
            if choice is not None:
                par = choice.choose() > 1
        k = plan.parallel_kernel if par else plan.kernel
        if k is None:
            self.ensure(plan, par, xs)
            k = plan.parallel_kernel if par else plan.kernel
            if k is None:
                k = plan.kernel if par else None
                if k is None:
                    return NotImplemented
        args = list(plan.dims)
        full, in_shapes = plan.full, plan.in_shapes
        for i, x in enumerate(xs):
            if type(x) is not np.ndarray or not x.flags.c_contiguous:
                if type(x) is not np.ndarray and np.ndim(x) == 0 and not full[i]:
                    x = np.asarray(x)
                else:
                    return NotImplemented
            args.append(x.reshape(in_shapes[i]) if full[i] else x.reshape(1))
        prog = self.prog
        n = prog.n_in
        res = [None] * len(prog.outputs)
        in_place = ()
        out_args = []
        for j, k_out in enumerate(self.outs):
            v = prog.outputs[k_out]
            dt = prog.ops[v - n].dtype
            o = donated(donors[k_out], plan.S, dt) if donors else None
            if o is None:
                o = self.pools[k_out].take(plan.S, dt)
            elif full[n + j]:
                for i, x in enumerate(xs):
                    if x is o and plan.pattern[i] == plan.pattern[n + j]:
                        in_place += ((j, i),)
                        break
            res[k_out] = o
            out_args.append(o.reshape(plan.out_shapes[j]) if full[n + j] else o.reshape(1))
        if in_place:
            kv = plan.variants.get((par, in_place))
            if kv is None:
                self.ensure(plan, par, xs, in_place)
                kv = plan.variants.get((par, in_place))
            if kv is not None:
                k = kv
                into = dict(in_place)
                out_args = [a for j, a in enumerate(out_args) if j not in into]
            # else: the plain kernel, correct on the shared buffer (only slower) until the
            # variant is compiled
        args += out_args
        acc = None
        if self.red_out and not plan.full_reduce():
            acc = np.zeros(plan.acc_shape, self.red_dtype)
            args.append(acc)
        try:
            if choice is None:
                s = k(*args)
            else:
                t0 = time.perf_counter()
                s = k(*args)
                if k is (plan.parallel_kernel if par else plan.kernel):
                    choice.record(2 if par else 1, time.perf_counter() - t0)
        except TypeError:           # argument types the kernel was not compiled for
            return NotImplemented
        for k_out in self.outs:
            self.pools[k_out].give(res[k_out])
        if self.quick is None and self.const_pos is not None and self.static_plan is not None \
                and not donors and not in_place and len(orig) > 0 and not multi \
                and k is (plan.parallel_kernel if par else plan.kernel):
            # (not while a two-thread kernel is still compiling and the serial one stands in)
            self.quick = self._make_quick(orig, plan, k, args) or False
            if self.quick:
                self._request_quick_kernel(orig, plan, args)
        elif self.quick_into is None and self.const_pos is not None and \
                self.static_plan is not None and plan is self.static_plan and in_place and \
                len(in_place) == len(self.outs) and not self.red_out and not multi and \
                k is plan.variants.get((par, in_place)) and len(donors) == len(res):
            self.quick_into = self._make_quick_into(orig, plan, k, args, in_place) or False
        if self.red_out:
            rs = plan.red_shape
            if acc is None:
                val = self.red_dtype.type(s)
                r = np.full(rs, val, self.red_dtype) if rs != () else val
            else:
                r = acc.reshape(rs)
            res[self.red_out[0]] = r
        return res[0] if len(res) == 1 else tuple(res)


def request(fk, sync, xs=None):
    """Make tier 1 available to the FusedKernel `fk` (compiles happen per operand pattern)."""
    why = why_not(fk.prog)
    if why is not None:
        fk.tier1_unavailable = why
        return
    r = Runner(fk, sync)
    p = r.static_plan
    if p is not None and (not p.ok or not policy.pays(p.size, r.units, True)):
        fk.tier1_unavailable = "too small (%d elements) for a compiled loop to pay" % p.size
        return
    if p is not None and exact_sum_ok(fk.prog, p) is not None:
        fk.tier1_unavailable = exact_sum_ok(fk.prog, p)
        return
    fk.fast = r
    if xs is not None:
        r(xs)
