"""Tier 1's view of a region's operands: dims collapsed (`Plan`), and the order of its sum
(`sum_layout`, `exact_sum_ok`). Pure analysis: the policy and the planner ask it too, with or
without numba."""
import math

from .program import runtime_shapes
from ...core.settings import settings


class Plan:
    """How these operand shapes run: collapsed dims and each operand's broadcast pattern,
    under the region's contract `fast_math` (its FusedKernel's: the sum's order and the
    kernel's math follow it)."""
    __slots__ = ("fast_math", "dims", "pattern", "in_shapes", "out_shapes", "acc_shape",
                 "red_shape", "size", "S", "kernel", "parallel_kernel", "requested", "ok",
                 "writeable", "variants", "full", "sum_why", "choice", "serial_runs")

    def __init__(self, prog, in_shapes, fast_math):
        self.fast_math = fast_math
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
# So none (`PAIRWISE_MAX`, below, a limit for both; it was a setting, numba_pairwise_max,
# that no default used); the exact kernels are kept for regions where that changes
# (tests/test_tier1_sum.py raises the limit to run them at every size). Measured again in
# the ablation run (2-core x86, float32, one core, min of 9 rounds interleaved, static
# shapes): sum(square(x - y)) in the kernel 8.7 vs 9.3 us at 16K, 32.9 vs 29.6 at 64K,
# 540 vs 459 at 1M; sum(x * y + 1, axis=1) in rows of 256 18.1 vs 20.7 us at 16K, 77.3 vs
# 73.8 at 64K, 1018 vs 1005 at 1M: the in-kernel sum pays at 16K on static regions.
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
PAIRWISE_MAX = 0
STATIC_COLS_MIN = 0
STATIC_PAIRWISE_MAX = {"full": 8192, "rows": 0}


def exact_sum_ok(prog, plan):
    """None when tier 1 runs this plan's sum (if any): in NumPy's order and, for a pairwise
    sum, small enough to pay (`PAIRWISE_MAX`, `STATIC_PAIRWISE_MAX`); else the reason. Kept on the
    plan, whose contract (`plan.fast_math`, the region's) says whether NumPy's order is kept."""
    why = plan.sum_why
    if why is False:
        why = None
        if plan.acc_shape is not None and not plan.fast_math:
            lay = sum_layout(prog, plan)
            if isinstance(lay, str):
                why = lay
            elif lay[0] != "cols" and plan.size > (
                    max(PAIRWISE_MAX, STATIC_PAIRWISE_MAX[lay[0]])
                    if prog.static else PAIRWISE_MAX):
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
