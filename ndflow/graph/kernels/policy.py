"""The CPU backend's fusion policy: what the compiler's passes may ask about fused regions, and
the cost model behind the answers.

A pass that shapes the graph for the kernel tiers (fusion cutting a sum off a region, a single
outer product made a region of its own, the memory planner letting a result go over an
operand, the layout pass turning columns into one product) asks here, and the answer depends on
the program, the contract (`settings.fast_math` while the graph is optimized: a function with
`jit_compile=True` is optimized with it on) and the sizes in `settings`, never on whether
numba is installed or switched on: the graph after `optimize` is the same either way
(tests/test_policy.py). What the tiers that exist at run time do with the graph is the
planner's decision (`planner.py`): a region shaped for tier 1 runs on tier 0 with NumPy's
values when there is no tier 1.

The cost model: tier 0 costs about one small NumPy call per op (~0.4 us; a select ~2.5 of
them, a reduction ~1.5: `cost_units`), tier 1 a fixed ~7 us per call through its general path,
or ~1 us through the generated caller of a static region (`pays`).

Nothing here imports numba.
"""
import math

from . import blocks, numba_plan, numba_tier
from ...core.settings import settings
from ...primitives import elementwise as _E


def cost_units(prog):
    """Tier 0's fixed cost of one call of `prog`, in NumPy ufunc calls on small arrays
    (~0.4 us each): a select (np.where / copyto with where=) ~2.5 of them, a reduction ~1.5."""
    select = _E.select_p
    return sum(1.5 if o.reduce else 2.5 if o.prim is select else 1.0 for o in prog.ops)


# A region of static shapes runs, from its second compiled call, through a generated caller
# (`numba_quick`) costing ~1.0-1.4 us in all; written inline, tier 0 costs ~0.3-0.4 us per
# NumPy call on a few elements. Measured (polyfit's regions, float32, 2 cores, load ~3): 3 ops
# on 4 elements 1.02 vs 0.91 us, 4 ops 1.02 vs 1.15, 5 ops (Adam's update, a 0-d operand)
# ~1.1 vs 1.55, 5.5 units on 256 elements (the loss and its gradient) 1.72 vs 2.64. So a
# static region of `settings.numba_quick_units` (4) pays for a kernel at any size. Measured
# from 5 to 4 (2-core x86, float32, one thread, interleaved A/B in one process, load ~4): the
# sigmoid's 4 ops 2.23 -> 1.30 us at 1 and 32 elements, 4.06 -> 2.04 at 1024 (default
# contract); the MLP gradient at batch 32 (a 4-unit region of 2048 elements) 25.6 -> 23.3 us;
# the classifier step (a 4.5-unit region of 320 / 2560 elements) and the MLP gradient at
# batch 128 unchanged within 2%.


# Under the fast-math contract, a static region also pays through its generated caller once
# it does this much work (elements x cost units): tier 0 costs ~1.6 us per op plus ~0.3 ns
# per element per op, the generated caller ~1-1.4 us plus ~0.07 ns. Measured (2-core x86,
# float32, the classifier step under jit_compile=True, interleaved A/B): the bias add and
# relu of a batch-32 layer (4096 elements, 2 units) on the generated caller made the step
# 2.3% faster at batch 32, and the loss gradient's 2560-element region 1% at batch 256.
# Measured only there: the default contract's routes keep the thresholds above.
FAST_STATIC_WORK = 4096


def pays(size, units, static=False, fast=False):
    """Whether a compiled loop beats tier 0 for a region of `units` (cost_units) on `size`
    elements. Measured (2-core x86, float32): tier 0 costs ~1.6 us per op plus ~0.3 ns per
    element per op, a kernel call ~7 us (collapsing operands, pooled results, numba's
    dispatch) plus ~0.07 ns per element per op; so a two-op region pays from ~8K elements
    (`settings.numba_min`), a three-op one from ~3K, a six-op one from a few hundred. At 4K
    elements a two-op region (bias add and relu of a batch-32 layer) ran ~25% slower
    compiled. `static`: the region's shapes are fixed, so its calls take the generated
    caller (`settings.numba_quick_units`; under the fast-math contract, `fast`, also from
    `FAST_STATIC_WORK` elements x units)."""
    m = settings.numba_min
    return size >= m or (units >= 3 and size >= m // 2) or \
        (units >= 6 and size >= m // 32) or (static and units >= settings.numba_quick_units) \
        or (static and fast and size * units >= FAST_STATIC_WORK)


def pays_why(size, units, static=False, fast=False):
    """`pays`' answer in words: which of its rules lets a compiled loop pay, or why none."""
    m, q = settings.numba_min, settings.numba_quick_units
    cost = "%d elements, cost %g units" % (size, units)
    if size >= m:
        return "%s: >= settings.numba_min (%d)" % (cost, m)
    if units >= 3 and size >= m // 2:
        return "%s: 3 units or more on >= settings.numba_min / 2 (%d)" % (cost, m // 2)
    if units >= 6 and size >= m // 32:
        return "%s: 6 units or more on >= settings.numba_min / 32 (%d)" % (cost, m // 32)
    if static and units >= q:
        return "%s: static, >= settings.numba_quick_units (%g)" % (cost, q)
    if static and fast and size * units >= FAST_STATIC_WORK:
        return "%s: static under fast math, elements x units >= %d" % (cost, FAST_STATIC_WORK)
    return "%s: too small for a compiled loop to pay (settings.numba_min %d%s)" % (
        cost, m, ", settings.numba_quick_units %g" % q if static else "")


def compiled_pays(prog):
    """Whether tier 1 would run the elementwise `prog` (it can compile every op exactly, or
    within fast math's bound when that is on) on its static shape, and pay."""
    shape = prog.shape
    return numba_tier.why_not(prog, settings.fast_math) is None and None not in shape and \
        pays(math.prod(shape), cost_units(prog), prog.static, settings.fast_math)


def compiled_with_sum(prog):
    """Whether tier 1 would run the static `prog` sum included: its sum in a layout whose
    order it reproduces (`numba_plan.exact_sum_ok`), large enough to pay."""
    fm = settings.fast_math
    if not prog.static or numba_tier.why_not(prog, fm) is not None:
        return False
    try:
        plan = numba_plan.Plan(prog, [s for s, _ in prog.ins], fm)
    except ValueError:
        return False
    return plan.ok and pays(plan.size, cost_units(prog), True, fm) and \
        numba_plan.exact_sum_ok(prog, plan) is None


def split_sum_off(whole, rest):
    """Whether a region ending in a sum (`whole`) is better cut into its elementwise part
    (`rest`) and NumPy's own sum after it: tier 1 would run `rest` but not the sum (by
    default it sums only in the layouts where it reproduces NumPy's order bit for bit), so
    one compiled loop and NumPy's sum beat the whole region on tier 0, where each select is
    a masked copy (the relu gradient of an MLP layer: ~170 us at 512x64 on tier 0, ~25 us
    split). Under fast math tier 1 sums in its own order: never split."""
    if settings.fast_math:
        return False
    return not compiled_with_sum(whole) and compiled_pays(rest)


def outer_region(out_shape, operand_shapes):
    """Whether one elementwise node is worth a kernel of its own: an outer-product-like
    broadcast (every operand that is not a scalar is smaller than the result, and there are
    two of them: (b,m,1) * (b,1,n)), large enough for a compiled loop. NumPy runs these with
    a stride-0 inner operand at ~4x the cost of a loop that writes the result once (tier 0
    runs them column by column where the last axis is short, `numpy_columns`)."""
    if None in out_shape:
        return False
    size = math.prod(out_shape)
    if size < settings.numba_min:
        return False
    big = [s for s in operand_shapes if None not in s and math.prod(s) > 1]
    return len(big) >= 2 and len(big) == len([s for s in operand_shapes if s != ()]) and \
        all(math.prod(s) < size for s in big)


def shared_region(prog, uses_blas):
    """Whether one elementwise node (the one-op region `prog`) is worth a kernel of its own
    because a region's loop is shared between threads, where NumPy runs one operation on one
    thread: more than one thread (`blocks.threads()`), a graph that calls no BLAS (tier 1
    keeps those on one thread: BLAS's threads keep spinning after a call), a static shape of
    at least `settings.numba_parallel_min` elements, and an operation tier 1 compiles.
    Measured (2-core x86, float32, 2**20 elements, `settings.threads` 2): `x + y` 131 us as
    a region on two threads against NumPy's 236 us."""
    shape = prog.shape
    return not uses_blas and blocks.threads() > 1 and None not in shape and \
        math.prod(shape) >= settings.numba_parallel_min and \
        numba_tier.why_not(prog, settings.fast_math) is None


def columns_as_product(out_shape):
    """Whether columns x * y[..., j:j+1] joined along the last axis are better one product
    x * y (an outer-product region: tier 1 runs it as one loop with the short axis outside,
    tier 0 column by column, `numpy_columns`)."""
    return pays(math.prod(out_shape), 2.0)


def row_regions():
    """Whether fusion grows a reduction along the last axis of a matrix, with what computes
    on the same rows around it, into one region (`numba_rows`: a softmax and its gradient in
    one loop nest): under the fast-math contract, whose sums may run in the loop's order.
    Tier 0 runs such a region op by op (NumPy's calls, as unfused)."""
    return settings.fast_math


def tier1_may_write_over(prog):
    """Whether a result of `prog` may be given one of its own operands' buffers where only
    tier 1 can write over it (it reads every operand of an element before writing the
    element; tier 0 uses result buffers as scratch): the region is one tier 1 would run. At
    run time, a call tier 1 does not take gets a fresh buffer for that result instead."""
    return None not in prog.shape and numba_tier.why_not(prog, settings.fast_math) is None and \
        pays(math.prod(prog.shape), cost_units(prog))



def pooled_results_pay(prog):
    """Whether the memory planner should offer the static `prog` no dead buffers for its
    results (a Variable's own buffer it still gets): under fast math, where tier 1 runs it,
    its calls then take the generated caller (~1 us, results from the kernel's pools) rather
    than the general call that writes into offered buffers (~7 us: collapsing operands,
    numba's dispatch). Measured (2-core x86, float32, the classifier step under
    jit_compile=True at batch 256, interleaved A/B): its bias-add-and-relu and relu-gradient
    regions (32768 elements) on the generated caller made the step 3% faster; nothing
    changed at batch 32, where they take it already. Measured only there: the default
    contract keeps its donors."""
    return settings.fast_math and prog.static and compiled_pays(prog)
