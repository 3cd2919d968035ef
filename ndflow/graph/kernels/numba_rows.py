"""Tier 1's row kernels: a fused region over a matrix (B, C) whose reductions along the last
axis are used again inside it (a softmax: the row's max and its sum of exponentials, each
broadcast back over the row), with sums along the first axis (a bias gradient) and whole sums
(a loss) at its ends, as one loop nest: for each row, one pass over its C elements per round
of reductions, the per-row values (a row's max, `log` of its sum, `1 / sum`) computed between
the passes, the row's results stored in its last pass. Fusion makes such regions only under
the fast-math contract (`policy.row_regions`), and only this kernel takes them there: its
sums run in the loop's order (within the contract's `n * eps * sum|x|`), its max and min in
NumPy's (the last of equal values, NaN first), each op's value within its function's bound.

A value of the region is the matrix's (`FULL`, shape (B, C)), a row's (`ROW`, (B, 1) or (B,):
one scalar per row), a sum along the first axis (`COL`) or a whole sum (`ALL`); the last two
are results only. An elementwise value of the matrix that a later pass reads is kept in a
row buffer by the pass that computes it (a row's exponentials are computed once). Operands
are read where an op uses them, broadcast by their shape against the op's (the matrix's or
the row's).

Measured (2-core x86, float32, one thread, the classifier step's softmax cross-entropy forward
and backward, process time): one row kernel ~4 us at batch 32 and ~25 us at 256, where the ~9
kernels and NumPy calls it replaces took ~55 and ~95 us; the step 11-14% faster at batch 32,
3-5% at 256 (interleaved A/B in one process, row regions on and off).
"""
import numpy as np

from .numba_tier import _scalar_expr, _Ineligible, _FLOATS, helpers
from .numba_scalar import typename
from .pool import errstate_flags
from .. import debug as _dbg
from ...primitives.reduction import reduce_sum_p, reduce_max_p, reduce_min_p
from ...primitives.shape import expand_dims_p, reshape_p
from ...primitives.indexing import getitem_p

FULL, ROW, COL, ALL, OPERAND = "full", "row", "col", "all", "operand"
_INIT = {reduce_sum_p: "0", reduce_max_p: "-np.inf", reduce_min_p: "np.inf"}
# NumPy's max/min reduction keeps the last of equal values and the first NaN, as these do
# `acc = f(acc, x)` (an element equal to the accumulator replaces it: -0.0 and +0.0)
_COMBINE = {reduce_sum_p: "{0} + {1}", reduce_max_p: "_maximum({0}, {1})",
            reduce_min_p: "_minimum({0}, {1})"}


def is_row_shape_op(prim, params, in_shape, out_shape):
    """Whether an op is one of the shape ops a row region holds: a row's values given their
    trailing unit axis back, (B,) -> (B, 1), as a sum's gradient does before broadcasting
    (`expand_dims`, a reshape, `v[:, None]`)."""
    if len(in_shape) != 1 or tuple(out_shape) != (in_shape[0], 1):
        return False
    return prim is expand_dims_p and params.get("axes") == (1,) or prim is reshape_p or \
        prim is getitem_p and params.get("spec") == (("s", None, None, None), ("n",))


class RowForm:
    """The analysis of a region as a row kernel: each value's kind, its pass (`phase`), and
    `S`; raises _Ineligible with the reason where the region is not one."""

    def __init__(self, prog):
        if not prog.static:
            raise _Ineligible("shapes unknown")
        self.prog = prog
        n = prog.n_in
        rows = [o for o in prog.ops if o.reduce and o.params.get("axes") == (1,) and
                len(prog.value_shape(o.args[0])) == 2]
        if not rows:
            raise _Ineligible("no reduction along the last axis of a matrix")
        S = self.S = tuple(prog.value_shape(rows[0].args[0]))
        B, C = S
        if B < 1 or C < 2:
            raise _Ineligible("a matrix of shape %s" % (S,))
        self.row_shapes = ((B, 1), (B,))
        kind, phase = [OPERAND] * n, [0] * n
        for j, o in enumerate(prog.ops):
            k, p = self._kind(prog, o, kind, phase)
            kind.append(k)
            phase.append(p)
        for v in prog.outputs:
            if kind[v] == OPERAND:
                raise _Ineligible("an operand returned as a result")
        self.kind, self.phase = kind, phase
        self.last = max(phase)

    def _kind(self, prog, o, kind, phase):
        S, (rk, rf) = self.S, self.row_shapes
        ks = [kind[a] for a in o.args]
        if COL in ks or ALL in ks:
            raise _Ineligible("a sum along the first axis or of everything used inside")
        p = max([phase[a] for a in o.args] + [0])
        if o.reduce:
            a, axes = o.args[0], o.params.get("axes")
            if ks[0] == OPERAND and prog.value_shape(a) == S:
                ks = [FULL]                 # the matrix itself, read in the pass
            if o.prim not in _INIT or o.dtype not in _FLOATS or prog.value_dtype(a) != o.dtype:
                raise _Ineligible("reduction '%s' on %s" % (o.prim.name, o.dtype))
            if ks[0] == FULL and axes == (1,):
                return ROW, p + 1
            if o.prim is not reduce_sum_p:
                raise _Ineligible("'%s' along axes %s" % (o.prim.name, axes))
            if ks[0] == FULL and axes in ((0,), (0, 1)):
                return (COL if axes == (0,) else ALL), p
            if ks[0] == ROW and axes == tuple(range(len(prog.value_shape(a)))):
                return ALL, p
            raise _Ineligible("a sum along axes %s of a %s value" % (axes, ks[0]))
        if is_row_shape_op(o.prim, o.params, prog.value_shape(o.args[0]), o.shape):
            if ks[0] != ROW:
                raise _Ineligible("expand_dims of a %s value" % ks[0])
            return ROW, p
        if not o.prim.elementwise:
            raise _Ineligible("'%s' is not elementwise" % o.prim.name)
        if o.shape == S:
            for a, k in zip(o.args, ks):
                if k == ROW and prog.value_shape(a) != rk:
                    raise _Ineligible("a row's values of shape %s broadcast against the "
                                      "matrix" % (prog.value_shape(a),))
            return FULL, p
        if o.shape in (rk, rf) and FULL not in ks:
            if any(k == ROW and prog.value_shape(a) != o.shape for a, k in zip(o.args, ks)):
                raise _Ineligible("a row's values of another shape")
            return ROW, p
        raise _Ineligible("'%s' of shape %s, neither the matrix's %s nor a row's"
                          % (o.prim.name, o.shape, S))


def why_not(prog, fast_math, render=True):
    """None when a row kernel runs `prog` under its contract `fast_math`, else the reason;
    `render`: also whether every op is written (fusion, growing a region, asks that once per
    op: `renders`)."""
    if not fast_math:
        return "a row kernel sums in its loop's order: only under jit_compile=True"
    try:
        form = RowForm(prog)
        if render:
            kernel_source(form, fast_math=True)
    except _Ineligible as e:
        return str(e)
    return None


def renders(op, in_dtypes):
    """Whether a row kernel writes the elementwise `op` (a program's `Op`) on `in_dtypes`."""
    try:
        _scalar_expr(op, ["a%d" % i for i in range(len(in_dtypes))], in_dtypes, True)
    except _Ineligible:
        return False
    return True


class _Writer:
    """The text of one row kernel (`kernel_source`)."""

    def __init__(self, form, fast_math):
        self.f, self.prog, self.fm = form, form.prog, fast_math
        self.n = form.prog.n_in
        self.made = set()

    def name(self, v, level):
        if v < self.n:
            return "%s%d" % ("xf" if level == FULL else "xr", v)
        return "t%d" % (v - self.n)

    def read(self, i, level, shape):
        """The line reading operand i broadcast against an op of `level` and `shape`."""
        s = self.prog.ins[i][0]
        if not s:
            return "xr%d = x%d[0]" % (i, i) if level != FULL else "xf%d = x%d[0]" % (i, i)
        idx = ("i", "j") if level == FULL else ("i", "0")[:len(shape)]
        idx = idx[len(idx) - len(s):]
        ix = ", ".join("0" if d == 1 else x for d, x in zip(s, idx))
        return "%s = x%d[%s]" % (self.name(i, level), i, ix)

    def op(self, j, level):
        """Lines computing op j at `level` (its operands read first)."""
        o, prog = self.prog.ops[j], self.prog
        L = []
        for a in o.args:
            if a < self.n and (a, level) not in self.made:
                self.made.add((a, level))
                L.append(self.read(a, level, o.shape))
        if is_row_shape_op(o.prim, o.params, prog.value_shape(o.args[0]), o.shape):
            return L + ["t%d = t%d" % (j, o.args[0] - self.n)]
        args = [self.name(a, level) for a in o.args]
        expr = _scalar_expr(o, args, [prog.value_dtype(a) for a in o.args], self.fm)
        return L + ["t%d = %s" % (j, expr if o.dtype == np.bool_ else
                                   "%s(%s)" % (typename(o.dtype), expr))]

    def needed(self, sinks, done):
        """The matrix's ops a pass computes for the values `sinks`, in program order, and the
        values of earlier passes (`done`) it reads from their row buffers."""
        need, load, stack = set(), set(), list(sinks)
        while stack:
            v = stack.pop()
            if v < self.n or v in need or self.f.kind[v] != FULL:
                continue
            if v in done:
                load.add(v)
                continue
            need.add(v)
            stack.extend(self.prog.ops[v - self.n].args)
        return sorted(need), load

    def store(self, k, v, level):
        shape = self.prog.ops[v - self.n].shape
        idx = "i, j" if level == FULL else ("i, 0" if len(shape) == 2 else "i")
        return "o%d[%s] = t%d" % (k, idx, v - self.n)


def _passes(form, w):
    """Per pass over a row: (the values it ends with, the lines it runs per element after
    computing them, its reductions' first lines, the lines after it)."""
    prog, n, kind, phase = form.prog, form.prog.n_in, form.kind, form.phase
    out_of = {}
    for k, v in enumerate(prog.outputs):
        out_of.setdefault(v, []).append(k)
    passes = []
    for p in range(form.last + 1):
        sinks, lines_in, before, after = [], [], [], []
        for j, o in enumerate(prog.ops):
            a = o.args[0] if o.reduce else None
            if a is None or phase[a] != p or not (
                    kind[a] == FULL or a < n and prog.ins[a][0] == form.S):
                continue
            sinks.append(a)
            src = w.name(a, FULL)
            if kind[n + j] == ROW:
                before.append("r%d = %s(%s)" % (j, typename(o.dtype), _INIT[o.prim]))
                lines_in.append("r%d = %s" % (j, _COMBINE[o.prim].format("r%d" % j, src)))
                after.append("t%d = r%d" % (j, j))
            elif kind[n + j] == COL:
                idx = "0, j" if len(o.shape) == 2 else "j"
                lines_in += ["o%d[%s] += %s" % (k, idx, src) for k in out_of.get(n + j, ())]
            else:
                lines_in.append("s%d += %s" % (j, src))
        for v in prog.outputs:
            if v >= n and kind[v] == FULL and phase[v] == p:
                sinks.append(v)
                lines_in += [w.store(k, v, FULL) for k in out_of[v]]
        passes.append((sinks, lines_in, before, after))
    return passes, out_of


def kernel_source(form, fast_math=True, name="row_kernel"):
    """The kernel `name(x0.., o0..)`: operands (0-d ones as one-element arrays), then one
    array per result (a whole sum's of one element; a first-axis sum's zeroed by the caller).
    A value of the matrix that a later pass reads is kept in a row buffer by the pass that
    computes it (an exponential is computed once)."""
    w = _Writer(form, fast_math)
    prog, n, kind, phase = form.prog, form.prog.n_in, form.kind, form.phase
    B, C = form.S
    ops = prog.ops
    passes, out_of = _passes(form, w)
    done, plans, kept = set(), [], set()
    for sinks, _, _, _ in passes:
        need, load = w.needed(sinks, done) if sinks else ([], set())
        plans.append((need, load))
        kept |= load
        done |= set(need)
    body, ind = [], "        "
    for v in sorted(kept):
        body.append("    b%d = np.empty(%d, %s)" % (v - n, C, typename(ops[v - n].dtype)))
    alls = [j for j, o in enumerate(ops) if kind[n + j] == ALL]
    for j in alls:
        body.append("    s%d = %s(0)" % (j, typename(ops[j].dtype)))
    body.append("    for i in range(%d):" % B)
    for p, ((sinks, lines_in, before, after), (need, load)) in enumerate(zip(passes, plans)):
        # the row's values of this pass: its operands' reads, ops on rows
        for j, o in enumerate(ops):
            if kind[n + j] == ROW and phase[n + j] == p and not o.reduce:
                body += [ind + ln for ln in w.op(j, ROW)]
        if not sinks:
            continue
        w.made = {m for m in w.made if m[1] != FULL} | {(a, FULL) for a in sinks if a < n}
        inner = [w.read(a, FULL, form.S) for a in sorted(set(sinks)) if a < n]
        inner += ["t%d = b%d[j]" % (v - n, v - n) for v in sorted(load)]
        for v in need:
            inner += w.op(v - n, FULL)
            if v in kept:
                inner.append("b%d[j] = t%d" % (v - n, v - n))
        body += [ind + ln for ln in before]
        body.append(ind + "for j in range(%d):" % C)
        body += [ind + "    " + ln for ln in inner + lines_in]
        body += [ind + ln for ln in after]
    # a row's results, and its share of the whole sums
    for j, o in enumerate(ops):
        if kind[n + j] == ROW:
            body += [ind + w.store(k, n + j, ROW) for k in out_of.get(n + j, ())]
        if kind[n + j] == ALL and kind[o.args[0]] == ROW:
            body.append(ind + "s%d += %s" % (j, w.name(o.args[0], ROW)))
    for j in alls:
        body += ["    o%d[0] = s%d" % (k, j) for k in out_of.get(n + j, ())]
    params = ["x%d" % i for i in range(n)] + ["o%d" % k for k in range(len(prog.outputs))]
    h = helpers()
    text = "\n".join(body)
    used = sorted(u for u in h if u + "(" in text)
    L = ["import numpy as np", "from numba import njit",
         "from ndflow.graph.kernels.numba_tier import helpers as _helpers", "_h = _helpers()"]
    L += ["%s = _h[%r]" % (u, u) for u in used]
    L += ["", "@njit(fastmath=set(), error_model='numpy', nogil=True)",
          "def %s(%s):" % (name, ", ".join(params))]
    return "\n".join(L) + "\n" + text + "\n    return 0\n"


def result_specs(form):
    """Per result: (shape the kernel writes, dtype, zeroed, the result's own shape)."""
    prog, n = form.prog, form.prog.n_in
    out = []
    for v in prog.outputs:
        o = prog.ops[v - n]
        k = form.kind[v]
        if k == ALL:
            out.append(((1,), o.dtype, True, o.shape))
        else:
            out.append((o.shape, o.dtype, k == COL, o.shape))
    return out


class RowRunner:
    """Tier 1 for a row region (`planner.Route.T1_ROWS`): on its first call the kernel is
    compiled for the operands' types (in the background unless `sync`; tier 0 runs the calls
    meanwhile), then a generated caller (results made, 0-d operands as one-element arrays,
    whole sums read back as the dtype's scalar) is the kernel's own call (`ready`: the
    planner's `direct`). A call it cannot take (NumPy's error state asking for more than
    warnings, an operand of another type or layout: numba's dispatch refuses it, compiling
    is off) returns NotImplemented: tier 0 runs it."""

    def __init__(self, fk, sync, decision, ready, submit, made, build):
        self.fk, self.prog, self.form = fk, fk.prog, RowForm(fk.prog)
        self.sync, self.decision, self.ready = sync, decision, ready
        self._submit, self._made, self._build = submit, made, build
        self.quick = None
        self.asked = False
        self.refused = None

    def report(self):
        d = self.decision
        return [d.text() + ("" if self.quick is not None else "; kernel not made yet")]

    def _ask(self, xs):
        self.asked = True
        dummies = []
        for x in xs:
            if isinstance(x, np.ndarray) and x.ndim:
                if not x.flags.c_contiguous:
                    # (one kernel per region: one compiled for the layouts seen first)
                    self.refused = "an operand not in C order on the first call"
                    return
                d = np.zeros(x.shape, x.dtype)
                d.flags.writeable = x.flags.writeable
            else:
                d = np.zeros(1, np.asarray(x).dtype)
            dummies.append(d)
        dummies += [np.zeros(s, dt) for s, dt, _, _ in result_specs(self.form)]
        key = ("rows", self.prog.key, tuple((d.shape, d.dtype.str, d.flags.writeable)
                                            for d in dummies))

        def job():
            k = self._made(key)
            if k is None:
                src = kernel_source(self.form)
                if "kernels" in _dbg.FLAGS:
                    _dbg.log("# ndflow fused kernel, tier 1 (row kernel):\n" + src)
                k = self._build(key, self.prog, src, "row_kernel", dummies)
            self.quick = self._caller(k)
            self.ready(self.quick.qcall)
        self._submit(job, self.sync or self._made(key) is not None)

    def _caller(self, k):
        n = self.prog.n_in
        ns = {"k_": k, "NI_": NotImplemented, "quiet_": errstate_flags, "empty_": np.empty,
              "zeros_": np.zeros, "SLOW_": self.fk._generic_class.__call__, "fk_": self.fk}
        args = ["x%d.reshape(1)" % i if not s else "x%d" % i
                for i, (s, _) in enumerate(self.prog.ins)]
        make, res = [], []
        for j, (shape, dt, zero, own) in enumerate(result_specs(self.form)):
            ns["S%d" % j], ns["D%d" % j] = shape, dt
            make.append("o%d = %s(S%d, D%d)" % (j, "zeros_" if zero else "empty_", j, j))
            args.append("o%d" % j)
            if shape == own:
                res.append("o%d" % j)
            elif own == ():
                ns["T%d" % j] = dt.type
                res.append("T%d(o%d[0])" % (j, j))
            else:
                ns["U%d" % j] = own
                res.append("o%d.reshape(U%d)" % (j, j))
        xs = ", ".join("x%d" % i for i in range(n))
        ret = res[0] if len(res) == 1 else "(%s)" % ", ".join(res)
        src = []
        for head, fail in (("quick(xs):\n    %s, = xs" % xs, "NI_"),
                           ("qcall(%s):" % xs, "SLOW_(fk_, %s)" % xs)):
            src += ["def " + head, "    if not quiet_()[0]:", "        return " + fail]
            src += ["    " + m for m in make]
            src += ["    try:", "        k_(%s)" % ", ".join(args), "    except TypeError:",
                    "        return " + fail, "    return " + ret]
        exec(compile("\n".join(src) + "\n", "<ndflow row kernel call>", "exec"), ns)
        q = ns["quick"]
        q.qcall = ns["qcall"]
        return q

    def __call__(self, xs, donors=None):
        q = self.quick
        if q is None:
            if not self.asked:
                self._ask(xs)
                q = self.quick          # (made at once when compiling synchronously)
            if q is None:
                self.decision.fallback(self.refused or "its kernel compiling")
                return NotImplemented
        out = q(xs)
        if out is NotImplemented:
            self.decision.fallback("NumPy's error state or the operands' types")
        return out
