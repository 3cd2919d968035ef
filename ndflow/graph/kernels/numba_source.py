"""The source text of a tier-1 kernel: the region's ops as a scalar loop body inside the loop
nest of a collapsed plan (`numba_plan.Plan`), with NumPy's pairwise sum where the region ends
in one, and the one-element arguments that compile it."""
import math
import re

import numpy as np

from .numba_plan import sum_layout, _swap_inner
from .numba_tier import _body, _Ineligible, _typename, _FLOATS, helpers

# No LLVM fast-math flag under either contract (the fast one's speed is its own math and the
# sum's order): nnan/ninf/reassoc would move NaN and inf, and even FMA contraction does. a*b
# overflowing to inf plus -inf is NaN in NumPy's two loops, but one FMA's exact product gives
# -inf; a product underflowing to -0.0 plus +0.0 is +0.0 in NumPy's, -0.0 or a subnormal in an
# FMA's (tests/test_jit_compile.py checks both)


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


# Chunks a two-thread kernel cuts its outermost dim into (`_Text.chunks`): numba's parallel
# loop hands each thread an equal run of them, so they need only divide evenly between a few
# threads; each is one call of the one-thread kernel (tens of ns) on at least ~1K elements
# where two threads are used at all (`settings.numba_parallel_min`)
CHUNKS = 48


class _Text:
    """What the parts of one kernel's text share: the region, its collapsed plan and the
    choices `_kernel_source` describes."""

    def __init__(self, prog, plan, parallel, in_place, baked, scalars, static):
        self.prog, self.plan = prog, plan
        self.baked, self.scalars = dict(baked), set(scalars)
        self.n = n = prog.n_in
        self.into = dict(in_place)
        self.pat = plan.pattern
        self.r = len(plan.dims)
        self.idx = ["i%d" % k for k in range(self.r)]
        self.outs = [v for v in prog.outputs if not prog.ops[v - n].reduce]
        self.red = [j for j, o in enumerate(prog.ops) if o.reduce]
        self.full_red = plan.full_reduce()
        # exact sums (no fast math): NumPy's order, `sum_layout`; 'cols' is the loop order
        lay = None
        if self.red and not plan.fast_math:
            lay = sum_layout(prog, plan)
            if isinstance(lay, str):
                raise _Ineligible(lay)
            parallel = False     # one row buffer; and 'cols' sums along the outer loop anyway
        self.lay = lay
        self.pairwise = lay is not None and lay[0] != "cols"
        self.tree = self.pairwise and self.full_red and static and plan.size <= TREE_MAX
        if self.pairwise:
            self.rdt = _typename(prog.ops[self.red[0]].dtype)
            self.first = lay[1] if lay[0] == "rows" else 0
        # the outermost loop is split between threads unless it runs along a reduced axis
        outer_red = self.red and not self.full_red and not self.pat[-1][0]
        self.parallel = parallel and not outer_red

    def chunks(self, name):
        """An elementwise region's two-thread kernel: numba's parallel loop over CHUNKS
        chunks of rows of the outermost collapsed dim, each a call of the one-thread kernel
        (`<name>_rows`) on slices of the operands that span that dim. Its loop vectorizes as
        on one thread (numba's parallel loop around the element loop itself ran 1.3-1.4x
        slower per thread on the sigmoid), and each element is computed by the same code
        whichever thread runs it, so the results are the one thread's bit for bit."""
        n = self.n
        params = self.params()
        spans = {"x%d" % i: i not in self.scalars and self.pat[i][0] for i in range(n)}
        spans.update(("o%d" % k, self.pat[n + k][0]) for k in range(len(self.outs)))
        args = ["hi - lo"] + [p + "[lo:hi]" if spans.get(p) else p for p in params[1:]]
        return ["", "",
                "@njit(parallel=True, fastmath=set(), error_model='numpy', nogil=True)",
                "def %s(%s):" % (name, ", ".join(params)),
                "    rows = (d0 + %d) // %d" % (CHUNKS - 1, CHUNKS),
                "    for c in prange((d0 + rows - 1) // rows):",
                "        lo = c * rows",
                "        hi = min(lo + rows, d0)",
                "        %s_rows(%s)" % (name, ", ".join(args)),
                "    return 0"]

    def params(self):
        """The kernel's parameters: the collapsed dims, the operands not written into it,
        the results not written over an operand, and a partial sum's accumulator."""
        return ["d%d" % k for k in range(self.r)] + \
            ["x%d" % i for i in range(self.n) if i not in self.baked] + \
            ["o%d" % k for k in range(len(self.outs)) if k not in self.into] + \
            (["acc"] if self.red and not self.full_red else [])

    def index(self, p):
        if not any(p):
            return "[0]"
        return "[%s]" % ", ".join(i if f else "0" for i, f in zip(self.idx, p))

    def read(self, i):
        if i in self.baked:
            return "a%d = K%d" % (i, i)
        if i in self.scalars:
            return "a%d = x%d" % (i, i)
        return "a%d = x%d%s" % (i, i, self.index(self.pat[i]))

    def head(self, name, body):
        """The module's imports and constants, and the kernel's decorator and def line."""
        r = self.r
        params = self.params()
        h = helpers()
        used = sorted({m for line in body for m in re.findall(r"\b([A-Za-z_]\w*)\(", line)
                       if m in h})
        L = ["import numpy as np", "from numba import njit, prange",
             "from ndflow.graph.kernels.numba_tier import helpers as _helpers",
             "_h = _helpers()"]
        L += ["%s = _h[%r]" % (u, u) for u in used]
        # (numba freezes a global's value into the kernel, typed as the NumPy scalar it is)
        L += ["K%d = %s" % (i, lit) for i, lit in sorted(self.baked.items())]
        L.append("")
        if self.pairwise:
            L.append(_PAIRWISE_SRC)
        L.append("@njit(parallel=%s, fastmath=set(), error_model='numpy', nogil=True)"
                 % self.parallel)
        L.append("def %s(%s):" % (name, ", ".join(params)))
        ind = "    "
        if self.pairwise:
            # the summed values of one row (of everything, for 'full'), then NumPy's
            # pairwise sum
            L.append(ind + "buf = np.empty(%s, %s)" % (" * ".join(
                ["1"] + ["d%d" % k for k in range(self.first, r)]), self.rdt))
            # the pairwise walk's stack, made once per call (not per row)
            if not self.tree:
                L.append(ind + "pw_st = (np.empty(128, np.int64), np.empty(128, np.int64), "
                         "np.zeros(128, np.int8), np.empty(128, %s))" % self.rdt)
            if self.full_red:
                L.append(ind + "f = 0")
        elif self.full_red:
            L.append(ind + "s = 0.0")
        return L

    def loops(self, body):
        """The loop nest and the body in it; returns (lines, the body's indent)."""
        n, pat = self.n, self.pat
        order = list(range(self.r))
        if _swap_inner(self.prog, self.plan):
            order[-2:] = order[-1], order[-2]
        # an operand that does not vary along the innermost loop is read before it: the
        # kernel's stores may alias its operands as far as LLVM knows, so a load left inside
        # is repeated at every iteration and keeps the loop from vectorizing (a per-example
        # outer product ran 2.5x slower). No operand read this way is written by the kernel
        # (a result written over an operand spans every loop).
        inner = order[-1] if order else None
        hoist = [i for i in range(n) if not pat[i][inner]] if order else []
        L, ind = [], "    "
        for k in order:
            if k == inner:
                L += [ind + self.read(i) for i in hoist]
            if self.pairwise and not self.full_red and k == self.first:
                L.append(ind + "f = 0")
            rng = "prange" if (k == 0 and self.parallel) else "range"
            L.append(ind + "for %s in %s(d%d):" % (self.idx[k], rng, k))
            ind += "    "
        L += [ind + self.read(i) for i in range(n) if i not in hoist]
        L += [ind + line for line in body]
        for k, v in enumerate(self.outs):
            if k in self.into:
                L.append(ind + "x%d%s = t%d" % (self.into[k], self.index(pat[self.into[k]]),
                                                v - n))
            else:
                L.append(ind + "o%d%s = t%d" % (k, self.index(pat[n + k]), v - n))
        return L, ind

    def tail(self, ind):
        """The sum's lines inside the loops, and the return."""
        L = []
        n = self.n
        if self.red:
            src = self.prog.ops[self.red[0]].args[0]
            sv = ("a%d" % src) if src < n else ("t%d" % (src - n))
            if self.pairwise:
                L.append(ind + "buf[f] = %s" % sv)
                L.append(ind + "f += 1")
                if not self.full_red:
                    L.append("    " * (self.first + 1) + "acc%s += _pairwise(buf, f, %s(-0.0), "
                             "*pw_st)" % (self.index(self.pat[-1]), self.rdt))
            elif self.full_red:
                L.append(ind + "s += %s" % sv)
            else:
                L.append(ind + "acc%s += %s" % (self.index(self.pat[-1]), sv))
        if self.tree:
            L += ["    s = %s(0.0)" % self.rdt, "    mz = %s(-0.0)" % self.rdt,
                  "    s += %s" % _pairwise_tree(0, self.plan.size), "    return s"]
        elif self.pairwise and self.full_red:
            L += ["    s = %s(0.0)" % self.rdt,
                  "    s += _pairwise(buf, f, %s(-0.0), *pw_st)" % self.rdt, "    return s"]
        elif self.full_red:
            L.append("    return s")
        else:
            L.append("    return 0")
        return L


def _kernel_source(prog, plan, parallel, name, in_place=(), baked=(), scalars=(), static=False):
    """`in_place`: pairs (j, i): the j-th elementwise result is written into operand i (its
    buffer was donated and it is that operand). The kernel then stores through the operand's
    own name: given one array as operand and output, LLVM's runtime overlap check fails and
    the loop runs unvectorized (2-3x slower); a load and a store of the same element through
    one pointer vectorize.

    For the generated caller of a static region (`numba_quick`): `baked`, pairs (i,
    literal) for one-element operands the graph feeds a constant, written into the kernel as
    that value (`_literal`) instead of being a parameter; `scalars`, positions of one-element
    operands passed as NumPy scalars of their dtype (the step's inlined 0-d arithmetic makes
    them) rather than one-element arrays. Each parameter fewer is ~45 ns less of numba's
    dispatch, and a scalar needs no array made for it. `static`: the kernel runs only on the
    plan's sizes (a whole pairwise sum of up to `TREE_MAX` elements is then written out,
    `_pairwise_tree`)."""
    t = _Text(prog, plan, parallel, in_place, baked, scalars, static)
    body = _body(prog, ["a%d" % i for i in range(prog.n_in)], plan.fast_math)
    chunked = t.parallel and not t.red and t.r > 0
    if chunked:
        t.parallel = False          # the one-thread kernel, which the chunks call
    L = t.head(name + "_rows" if chunked else name, body)
    loops, ind = t.loops(body)
    L += loops + t.tail(ind)
    if chunked:
        L += t.chunks(name)
    return "\n".join(L) + "\n"


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
