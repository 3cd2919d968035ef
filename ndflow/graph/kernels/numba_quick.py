"""Tier 1's generated callers: for a region of static shapes, after its first compiled call, a
function made for the next calls (the constants' prepared arguments kept and checked by
identity, the other operands checked and reshaped, results from the pools) which the planner
makes the kernel's own call (`planner.direct`). A call it cannot take goes back to the
general path (`numba_runner.Runner`), with the same values."""
import functools
import sys

import numpy as np

from . import planner
from .numba_compile import _compile, _submit
from .numba_source import _literal
from .pool import errstate_flags, errstate_getter, QUIET_STATE, _FREE_REFS


class QuickCallers:
    """The generated callers of a `numba_runner.Runner` (a base class of it: the methods read
    the runner's region, pools and constants)."""

    quick_decision = quick_into_decision = None

    def _quick_operands(self, orig, plan, args, ns, baked=(), scalars=(), layout_by_numba=False):
        """The operand part of a generated caller: (tests that send a call back to the general
        path, the kernel's arguments, the constants kept), with the names those use put in
        `ns`; None where an operand would send every call there (a strided or non-ndarray
        operand that is not a constant). `baked` and `scalars`: the kernel's (see
        `_kernel_source`). `layout_by_numba`: no test of C-contiguity here for an operand
        passed to the kernel as it is, in a caller that only reads its operands: the kernel
        was compiled for C-contiguous (and writeable or not) arrays and compiling is off, so
        numba's dispatch refuses any other with a TypeError, which sends the call to the
        general path (~50 ns less per operand than asking `x.flags`)."""
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
            # (numba's dispatch sees the layout only where the operand reaches the kernel
            # as it is: reshaped, a Fortran-ordered array would be copied into C order, and
            # the results laid out unlike NumPy's)
            checks.append(("type(x%d) is not nd_" % i) if layout_by_numba and a.shape == x.shape
                          else ("type(x%d) is not nd_ or not x%d.flags.c_contiguous" % (i, i)))
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
        got = self._quick_kernel_args(orig, plan) if planner.baked_caller(self) else None
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
        ns["SLOW_"] = functools.partial(self.fk._generic_class.__call__, self.fk)
        src = []
        # two functions from one text: `quick(xs)` for `__call__` (NotImplemented sends the
        # call on to the general path), and `qcall(x0, x1, ...)`, which the planner makes the
        # FusedKernel's own call (`planner.direct`): the generated step's call lands in it
        # directly, without the kernel's and the runner's frames, and falls back to the
        # kernel's generic call
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
        q.baked = bool(baked or scalars)
        return q

    # The generated caller (None: not made yet, False: none). Its twin `qcall` is the
    # FusedKernel's own call while it is in place (`planner.direct`); anything else put here
    # (False when its constants were rebound, a wrapper looking at the calls) takes the
    # kernel's call back through its generic call, so that every call sees it.
    @property
    def quick(self):
        return self._quick

    @quick.setter
    def quick(self, q):
        self._quick = q
        qc = getattr(q, "qcall", None)
        if qc is not None:
            planner.direct(self.fk, qc, quick_call=True)
            self.quick_decision = planner.decide(
                planner.Route.T1_DIRECT_BAKED if getattr(q, "baked", False) else
                planner.Route.T1_DIRECT, "static shapes: the generated caller is the kernel's "
                "call%s" % (" (its kernel holds the constants and takes the scalars)"
                            if getattr(q, "baked", False) else ""), planner._where(self.prog))
        elif q is False and self.quick_decision is not None:
            planner.generic(self.fk)
            self.quick_decision.fallback("a constant operand rebound: the generated caller "
                                         "dropped")
        else:
            planner.generic(self.fk)

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

