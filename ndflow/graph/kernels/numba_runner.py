"""Calling tier-1 kernels: the runner of one fused kernel (`Runner`). For each signature of the
region's operands (shapes and layout) the planner decides once whether tier 1 takes it and
how (`planner.tier1_signature`); a call then collapses its operands (compacting broadcast
ones), takes result buffers (pools, or donors the graph offers), runs the kernel and puts the
results in their shapes. A call tier 1 does not take returns NotImplemented, and the fused
kernel runs tier 0. Static regions also get generated callers (`numba_quick`).

Operands are collapsed before the call: dims that every operand shares (or broadcasts) in the
same way merge, so most regions run a 1-d or 2-d loop over C-contiguous memory, which LLVM
vectorizes. A kernel is specialised to that broadcast pattern; patterns and programs are the
cache key (`numba_compile`)."""
import threading
import time

import numpy as np

from . import blocks, planner, policy
from .numba_compile import _compile, _compiled, _submit, parallel_threads
from .numba_plan import Plan
from .numba_quick import QuickCallers
from .numba_tier import _OWN_CALL
from .planner import Route
from .pool import OutputPool, donated, errstate_flags


def _compact(x):
    """`x` without the repeats of its zero-stride dims (each becomes size 1), if that leaves
    C-contiguous memory; else None."""
    sh, st = x.shape, x.strides
    if not any(t == 0 and n > 1 for n, t in zip(sh, st)):
        return None
    c = x[tuple(slice(0, 1) if (t == 0 and n > 1) else slice(None) for n, t in zip(sh, st))]
    return c if c.flags.c_contiguous else None


_STRIDED = "strided"

# One numba parallel loop at a time in the process; a call that finds one running runs its
# one-thread kernel. numba's 'workqueue' threading layer (where neither OpenMP nor TBB is
# found) terminates the process when two threads launch parallel loops at once, and on the
# other layers two loops at once would share the same cores anyway.
_ONE_PARALLEL = threading.Lock()


class Runner(QuickCallers):
    """The tier-1 callable of one FusedKernel: plan each signature, collapse operands, call
    the kernel."""

    def __init__(self, fk, sync):
        self.fk = fk
        self.prog = prog = fk.prog
        self.sync = sync
        self.fast_math = fk.fast_math
        # settings.threads = 1 (`--threads 1` in the benchmarks) holds tier 1 to one thread too
        self.parallel_ok = fk.parallel and blocks.threads() > 1
        self.serial_why = "the graph calls BLAS, whose threads keep spinning" \
            if not fk.parallel else "settings.threads is 1"
        self.heavy = any(o.prim.scalar is not None and _OWN_CALL.search(o.prim.scalar.source)
                         for o in prog.ops)
        self.plans = {}                # operand shapes -> collapsed Plan (holds its kernels)
        self.signatures = {}           # signature -> (Decision, Plan, operand shapes)
        self.static_plan = Plan(prog, [s for s, _ in prog.ins], self.fast_math) \
            if prog.static else None
        self.static_shapes = tuple(s for s, _ in prog.ins)
        self.static_sig = None         # (decision, plan) of the static C-contiguous signature
        if self.static_plan is not None:
            self.plans[self.static_shapes] = self.static_plan
        self.pools = [OutputPool() for v in prog.outputs]
        n = prog.n_in
        self.outs = [k for k, v in enumerate(prog.outputs) if not prog.ops[v - n].reduce]
        self.red_out = [k for k, v in enumerate(prog.outputs) if prog.ops[v - n].reduce]
        red = [o for o in prog.ops if o.reduce]
        self.red_dtype = red[0].dtype if red else None
        self.red_keep = red[0].params["keepdims"] if red else None
        if red and not self.fast_math:
            self.parallel_ok = False       # an exact sum runs on one thread (`_kernel_source`)
            self.serial_why = "an exact sum runs on one thread"
        self.units = policy.cost_units(prog)
        # operand position -> (the broadcast array seen there last, its shape, its compacted
        # view): a folded constant is the same object at every call, compacted once
        self.compact_memo = {}
        p = self.static_plan
        static_pays = p is not None and p.ok and policy.pays(p.size, self.units, True,
                                                               self.fast_math)
        # paying only through the generated caller (`settings.numba_quick_units`): buffers
        # offered for its results are declined, so that every call can take that caller (the
        # general path costs more than tier 0 here; a few elements gain nothing from a donor)
        self.quick_only = static_pays and not policy.pays(p.size, self.units)
        # operand positions the graph feeds a constant (set by fusion on the FusedKernel):
        # the same object at every call, so its prepared argument can be kept (`_make_quick`)
        self.const_pos = getattr(fk, "const_pos", None)
        self._quick = None
        self.quick_consts = ()
        # the same for calls given donors whose every result goes into one of its operands
        # (a Variable's update in place, `_make_quick_into`)
        self.quick_into = None
        self.quick_into_consts = ()
        self.inplace_decisions = {}

    # ---------------------------------------------------------------- compiling
    # (a compile reads the region's contract from its plans, `Plan.fast_math`, never from the
    # settings of the thread that runs it)
    def compiled(self, plan, parallel):
        return _compiled(self.prog, plan, parallel)

    def ensure(self, plan, parallel, xs, in_place=()):
        """Ask for the kernel of `plan` (one thread or two; written over operands for
        `in_place`): compiled now with `settings.numba` 'sync', else in the background."""
        which = ("par" if parallel else "ser") if not in_place else (parallel, in_place)
        if which in plan.requested:
            return
        plan.requested.add(which)
        if plan.writeable is None:
            plan.writeable = [getattr(getattr(x, "flags", None), "writeable", True) for x in xs]
        prog = self.prog

        def compile_it():
            k = _compile(prog, plan, parallel, in_place)
            if in_place:
                plan.variants[(parallel, in_place)] = k
            elif parallel:
                plan.parallel_kernel = k
            else:
                plan.kernel = k
        _submit(compile_it, self.sync)
        if not in_place:
            expected = self._expected_in_place(plan)
            if expected:
                # asked for now, not at the first call that donates once the plain kernel is
                # there: a warm-up that waits for its compiles waits for this one too, and a
                # short program does not pay a compile late in its run, nor end before the
                # kernel reaches the disk cache
                self.ensure(plan, parallel, xs, expected)

    def _expected_in_place(self, plan):
        """The `in_place` pairs (result j, operand i) `_results` will find for calls of `plan`
        given the donors the graph offers (`fk.operand_donors`), or ()."""
        donors = dict(self.fk.operand_donors)
        n = self.prog.n_in
        return tuple((j, donors[k_out]) for j, k_out in enumerate(self.outs)
                     if k_out in donors and plan.full[n + j]
                     and plan.pattern[donors[k_out]] == plan.pattern[n + j])

    # ---------------------------------------------------------------- signatures
    def plan_for(self, shapes):
        p = self.plans.get(shapes)
        if p is None:
            try:
                p = Plan(self.prog, shapes, self.fast_math)
            except ValueError:
                return None
            self.plans[shapes] = p
        return p

    def _layout(self, i, x):
        """How operand i is read: its compacted view (a broadcast array), a NumPy scalar
        (`None`: passed as a one-element array), or `_STRIDED` when tier 1 cannot read it."""
        if type(x) is np.ndarray:
            m = self.compact_memo.get(i)
            if m is not None and m[0] is x and m[1] == x.shape:
                return m[2]       # the same array as last call (a constant): its view
            c = _compact(x)
            if c is None:
                return _STRIDED
            if len(self.compact_memo) < 16:
                self.compact_memo[i] = (x, x.shape, c)   # holds x: its id cannot be reused
            return c
        return None if np.ndim(x) == 0 else _STRIDED

    def signature(self, xs):
        """(decision, plan, operands as the kernel reads them) for this call: the planner's
        decision for its signature (operand shapes and layout), made on the first call
        that has it."""
        lay = None
        for i, x in enumerate(xs):
            if type(x) is not np.ndarray or not x.flags.c_contiguous:
                if lay is None:
                    lay = [False] * len(xs)
                lay[i] = self._layout(i, x)
        if lay is None and self.static_sig is not None:
            # (a static region's operands always have the graph's shapes: its one signature
            # of C-contiguous operands needs no key)
            return self.static_sig + (xs,)
        shapes = tuple([x.shape if type(x) is np.ndarray else np.shape(x) for x in xs])
        key = shapes if lay is None else (shapes, tuple(
            (v if isinstance(v, str) else "s" if v is None else v.shape) if v is not False
            else "c" for v in lay))
        got = self.signatures.get(key)
        if got is None:
            got = self.signatures[key] = self._decide(shapes, lay)
            if lay is None and self.static_plan is not None and shapes == self.static_shapes:
                self.static_sig = got[:2]
        d, plan, _ = got
        if lay is not None and d.route is not None:
            xs = [x if v is False or v is None else v for x, v in zip(xs, lay)]
        return d, plan, xs

    def _decide(self, shapes, lay):
        plan = self.plan_for(shapes)
        compacted = None
        if lay is not None and plan is not None:
            bad = [i for i, v in enumerate(lay) if v is _STRIDED]
            scal = [i for i, v in enumerate(lay) if v is None and plan.full[i]]
            if bad or scal:
                compacted = "operand %d is %s" % ((bad[0], "strided or not an array") if bad
                                                  else (scal[0], "a scalar"))
            elif any(v is not False and v is not None for v in lay):
                cplan = self.plan_for(tuple(
                    s if v is False or v is None else v.shape for s, v in zip(shapes, lay)))
                if cplan is None or not cplan.ok or cplan.S != plan.S or \
                        cplan.red_shape != plan.red_shape:
                    compacted = "a broadcast operand does not compact to the same loop"
                else:
                    compacted = cplan
        d = planner.tier1_signature(self, shapes, plan, compacted)
        return d, (compacted if isinstance(compacted, Plan) else plan), shapes

    # ---------------------------------------------------------------- calls
    def _direct(self, xs, donors):
        """A call through the generated caller (NotImplemented: the general path)."""
        if donors is None:
            q = self._quick
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
        return NotImplemented

    def __call__(self, xs, donors=None):
        if donors is not None and self.quick_only:
            donors = None
        r = self._direct(xs, donors)
        if r is not NotImplemented:
            return r
        orig = xs
        d, plan, xs = self.signature(xs)
        if d.route is None:
            return NotImplemented
        if not errstate_flags()[0]:
            # compiled loops set no error flags: under 'raise', 'call', 'print' or 'log'
            # the call runs tier 0, whose NumPy loops honour them (tier 1 skips the 'warn'
            # mode's RuntimeWarnings; its values are NumPy's)
            d.fallback("NumPy's error state asks for more than warnings")
            return NotImplemented
        nt, choice = 1, None
        if d.route is Route.T1_THREADS:
            nt, choice = planner.threads_for_call(self, d, plan)
        if nt > 1:
            if _ONE_PARALLEL.acquire(False):
                try:
                    return self._run(d, plan, xs, orig, donors, nt, choice)
                finally:
                    _ONE_PARALLEL.release()
            nt, choice = 1, None            # another thread's parallel loop is running
        return self._run(d, plan, xs, orig, donors, nt, choice)

    def _run(self, d, plan, xs, orig, donors, nt, choice):
        """The rest of a general call: the kernel for `nt` threads (the one standing in for
        it while it compiles), the operands and results, the call (timed for `choice`)."""
        par = nt > 1
        k = plan.parallel_kernel if par else plan.kernel
        if k is None:
            k = planner.kernel_for_call(self, d, plan, par, xs)
            if k is None:
                return NotImplemented
        args = self._operands(plan, xs)
        res, k, in_place = self._results(plan, xs, donors, par, k, args)
        try:
            if choice is None:
                s = k(*args)
            else:
                # (timed only when it is the kernel meant, not one standing in for it)
                timed = k is (plan.parallel_kernel if par else plan.kernel) or \
                    (in_place and k is plan.variants.get((par, in_place)))
                if par:
                    parallel_threads(nt)
                t0 = time.perf_counter()
                s = k(*args)
                if timed:
                    choice.record(nt, time.perf_counter() - t0)
        except TypeError:           # argument types the kernel was not compiled for
            d.fallback("argument types the kernel was not compiled for")
            return NotImplemented
        for k_out in self.outs:
            self.pools[k_out].give(res[k_out])
        self._after(orig, plan, k, par, args, donors, in_place, d)
        if self.red_out:
            res[self.red_out[0]] = self._reduced(plan, s, args)
        return res[0] if len(res) == 1 else tuple(res)

    def _operands(self, plan, xs):
        """The kernel's arguments for the operands: the collapsed dims, then each operand
        reshaped to its collapsed shape (one element where it spans none)."""
        args = list(plan.dims)
        full, in_shapes = plan.full, plan.in_shapes
        for i, x in enumerate(xs):
            if type(x) is not np.ndarray:
                x = np.asarray(x)              # a NumPy scalar (the signature says where)
            args.append(x.reshape(in_shapes[i]) if full[i] else x.reshape(1))
        return args

    def _results(self, plan, xs, donors, par, k, args):
        """The result buffers (a donor where the graph offers a fitting one, else the pool's)
        appended to `args`, and the kernel to run: the variant writing results over the
        operands they were donated from, where that is the case and it is compiled. Returns
        (results, kernel, in_place)."""
        prog = self.prog
        n = prog.n_in
        full = plan.full
        res = [None] * len(prog.outputs)
        in_place = ()
        out_args = []
        for j, k_out in enumerate(self.outs):
            dt = prog.ops[prog.outputs[k_out] - n].dtype
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
            kv = planner.in_place_kernel(self, plan, par, xs, in_place)
            if kv is not None:
                k = kv
                into = dict(in_place)
                out_args = [a for j, a in enumerate(out_args) if j not in into]
            # else: the plain kernel, correct on the shared buffer (only slower) until the
            # variant is compiled
        args += out_args
        if self.red_out and not plan.full_reduce():
            args.append(np.zeros(plan.acc_shape, self.red_dtype))
        return res, k, in_place

    def _reduced(self, plan, s, args):
        """The region's sum: the kernel's value (a whole sum) or its accumulator (the last
        argument), in the sum's shape."""
        rs = plan.red_shape
        if plan.full_reduce():
            val = self.red_dtype.type(s)
            return np.full(rs, val, self.red_dtype) if rs != () else val
        return args[-1].reshape(rs)

    def _after(self, orig, plan, k, par, args, donors, in_place, d):
        """After a general call: make the generated caller the planner says is due."""
        due = planner.generated_caller(self, d, plan, k, par, donors, in_place)
        if due == "quick":
            self.quick = self._make_quick(orig, plan, k, args) or False
            if self.quick:
                self._request_quick_kernel(orig, plan, args)
        elif due == "into":
            self.quick_into = self._make_quick_into(orig, plan, k, args, in_place) or False
            if self.quick_into:
                self.quick_into_decision = planner.decide(
                    Route.T1_DIRECT_INTO, "static shapes, every result given the buffer of "
                    "the operand it replaces: a generated caller for those calls",
                    planner._where(self.prog))

    def report(self):
        """The planner's decisions for this runner's signatures, as lines (for `explain`)."""
        lines = [d.text() for d in (self.quick_decision, self.quick_into_decision)
                 if d is not None]
        for d, _, shapes in list(self.signatures.values()):
            lines.append("tier 1 for %s: %s" % (planner._sig_text(shapes), d.text()))
        lines += [d.text() for d in self.inplace_decisions.values()]
        return lines
