"""Tier 0: a fused region as straight-line NumPy code (always available, no compiler).

Small results: each op is its primitive's own kernel, as the unfused graph would call it (no
pooled buffers: for a few elements NumPy's small-allocation cache beats any bookkeeping; with
static shapes a ufunc writes over an operand the region made that dies at it, `_dying_temps`).
Static regions of few elements can also be written into the caller's code instead of called
(`inline_form`: the compiled step's statements, graph/codegen). Large
results: ufuncs write with `out=` into the result buffers (pooled between calls) and into
pooled temporaries, reusing a buffer as soon as its value is dead, so a chain such as
`1/(1+exp(-y))` runs in the result buffer alone. Both paths call the same NumPy loops on the
same dtypes, so the values are those of the unfused graph, bit for bit.

Very large results (`settings.block_min` elements and up) run blocked: the whole op chain runs
over one chunk of `settings.block_bytes` (of its widest dtype) at a time, into chunk-sized
scratch buffers that stay in the core's cache, and only the results are written to memory;
chunks are shared out between a few threads (NumPy's loops release the GIL) from
`settings.block_threads_min` elements. This is exact too: each
op is the same NumPy loop on the same values, only over a slice (NumPy's elementwise loops
give an element the same bits whatever its position, alignment or the length of the call;
tests/test_large_arrays.py checks every ufunc). Floating-point errors are NumPy's: the chunks
run with every error that `np.errstate` does not ignore routed to a collector, and a call that
meets any (or any exception) runs again whole, unblocked, under the caller's own error state,
which warns, raises or calls exactly as the eager ops would.

Regions whose values are all 0-d (an optimizer's bias corrections, a step count) compute + - *
/, sqrt and float conversions on NumPy scalars behind a guard that passes only results where no
floating-point error can occur (`_scalar_lines`): a ufunc call on 0-d values costs ~0.35-0.6
us, a guarded scalar op ~0.15. Every other case calls the op's kernel, so values, warnings and
errors are NumPy's.
"""
import math
import re

import numpy as np

from .pool import OutputPool, TempPool, donated
from . import blocks
from .planner import Route, Tier0Plan, tier0_signature
from ...backends.device import _BY_TYPE as _DEVICE_BUFFERS

# Which of its paths a call takes (plain, large, blocked, threads) is the planner's decision
# per signature (`planner.Tier0Plan`, made from the sizes in `settings`).
Plan = Tier0Plan


def _how(op):
    """How the large path writes this op into a buffer: 'ufunc', 'select', 'convert' or None
    (the op returns a new array)."""
    if op.reduce:
        return None
    impl = op.prim.impl
    if isinstance(impl, np.ufunc) and not op.params and impl.nout == 1:
        return "ufunc"
    from ...primitives import elementwise as E
    if op.prim is E.select_p:
        return "select"
    if op.prim is E.convert_p:
        return "convert"
    return None


def assign_buffers(prog):
    """Linear scan over the large path: value -> buffer slot. Slots are ('out', k) for the
    k-th result or ('tmp', i); a result's slot serves as scratch until its value is written,
    and a ufunc may write over an input that dies at it (same shape, same layout)."""
    n = prog.n_in
    last = {}
    for j, o in enumerate(prog.ops):
        for a in o.args:
            last[a] = j
    outs = prog.outputs
    for v in outs:
        last[v] = len(prog.ops)
    for j in range(len(prog.ops)):
        last.setdefault(n + j, j)        # a value nothing reads dies where it is made
    slot_dtype, holder, claim = {}, {}, {}
    for k, v in enumerate(outs):
        if v >= n and _how(prog.ops[v - n]) is not None:
            s = ("out", k)
            slot_dtype[s], holder[s], claim[s] = prog.ops[v - n].dtype, None, v - n
    where = {}
    ntmp = 0
    for j, o in enumerate(prog.ops):
        v = n + j
        how = _how(o)
        dying = [where[a] for a in set(o.args) if a in where and last[a] == j and a not in outs]
        if how is None:
            for s in dying:
                holder[s] = None
            continue
        mine = [s for s in claim if claim[s] == j]
        if mine:
            s = mine[0]
        else:
            s = None
            free_now = dying if how == "ufunc" else []
            for cand in list(slot_dtype):
                if slot_dtype[cand] != o.dtype:
                    continue
                busy = holder[cand] is not None and cand not in free_now
                if busy:
                    continue
                if cand[0] == "out":
                    c = claim[cand]
                    if c < j or not (c > last[v] or (c == last[v] and
                                                      _how(prog.ops[c]) == "ufunc")):
                        continue
                s = cand
                break
            if s is None:
                s = ("tmp", ntmp)
                ntmp += 1
                slot_dtype[s], holder[s] = o.dtype, None
        for d in dying:
            holder[d] = None
        holder[s] = v
        where[v] = s
    return where, {s: dt for s, dt in slot_dtype.items() if s[0] == "tmp"}


def overwritable(prog):
    """{(k, i)}: result k may be written into operand i's buffer (when the graph donates it):
    in the large path no op reads operand i after result k's buffer is first written, or the
    first write is a ufunc reading it (exact overlap is safe). Operand i must have the full
    static shape, so that it is read element for element as the result is written."""
    where, _ = assign_buffers(prog)
    n = prog.n_in
    out = set()
    if any(d is None for d in prog.shape):
        return out
    for k, v in enumerate(prog.outputs):
        if where.get(v) != ("out", k):
            continue
        fw = min(w - n for w, s in where.items() if s == ("out", k))
        for i in range(n):
            if prog.ins[i][0] != prog.shape or prog.ins[i][1] != prog.ops[v - n].dtype:
                continue
            reads = [j for j, o in enumerate(prog.ops) if i in o.args]
            lr = max(reads) if reads else -1
            if lr < fw or (lr == fw and _how(prog.ops[fw]) == "ufunc"):
                out.add((k, i))
    return out


def _name(prog, v, where=None):
    if v < prog.n_in:
        return "x%d" % v
    if where is not None and v in where:
        s = where[v]
        return ("o%d" if s[0] == "out" else "b%d") % s[1]
    return "t%d" % (v - prog.n_in)


def _block_form(prog):
    """None when the large path may not run chunk by chunk, else the buffer slot that must
    hold a whole value (the reduced one) or False. Every elementwise result must be an
    operand or written into its own result buffer (a result an op returns as a new array
    would be one chunk's). A reduction must be the last op: it runs after the chunks, over
    its whole operand, by NumPy (summing chunk by chunk would change NumPy's pairwise order),
    so the slot of that operand is a whole buffer."""
    ops = prog.ops
    red = [j for j, o in enumerate(ops) if o.reduce]
    if len(ops) - len(red) < 2 or red not in ([], [len(ops) - 1]):
        return None
    where, _ = assign_buffers(prog)
    n = prog.n_in
    last = n + len(ops) - 1
    if not all(v < n or where.get(v) == ("out", k) or (red and v == last)
               for k, v in enumerate(prog.outputs)):
        return None
    if not red:
        return False
    r = ops[-1].args[0]
    return where.get(r)            # None (an operand, or not in a buffer): not blocked


def blockable(prog):
    """Whether the large path may run chunk by chunk (`_block_form`)."""
    return _block_form(prog) is not None


def _shares(o, xs):
    return any(type(x) is np.ndarray and np.may_share_memory(o, x) for x in xs)


def generate(prog, parallel=True, device=None):
    """Python source and namespace of `tier0(*operands)` for `prog`. `parallel`: whether
    blocked calls may use several threads. `device`: None, or `device(xs)` that runs the
    region on the device of its operands (NotImplemented: none is a device buffer), asked
    first whenever a device backend is in use, so that tier 0 can be called as the fused
    node's kernel itself (`FusedKernel` direct form)."""
    n = prog.n_in
    blk = blockable(prog)
    ns = {"np": np, "_Plan": tier0_signature, "_prog": prog, "_tmp": TempPool(), "_plans": {},
          "_blk": blk, "_par": parallel}
    xs = ", ".join(["x%d" % i for i in range(n)] +
                   ["d%d=None" % k for k in range(len(prog.outputs))])
    ns["_donated"] = donated
    L = ["def tier0(%s):" % xs]
    if device is not None:
        ns["_DEV"], ns["_dev"] = _DEVICE_BUFFERS, device
        L += ["    if _DEV:",
              "        r = _dev((%s))" % "".join("x%d, " % i for i in range(n)),
              "        if r is not NotImplemented:",
              "            return r"]
    single = len(prog.outputs) == 1
    ret = (lambda names: names[0]) if single else (lambda names: "(%s)" % "".join(
        s + ", " for s in names))
    if prog.static:
        plan = ns["_static_plan"] = Plan(prog, [s for s, _ in prog.ins], blk, parallel)
        if not plan.large:
            # the shapes never change: the plain path is all there is (no plan test per call;
            # these are regions of a few elements, where each ~40 ns shows)
            L += ["    " + ln for ln in _small_lines(prog, ns, plan)]
            L.append("    return %s" % ret([_name(prog, v) for v in prog.outputs]))
            return "\n".join(L) + "\n", ns
        L.append("    plan = _static_plan")
    else:
        key = "(%s)" % "".join("x%d.shape, " % i for i in range(n))
        L += ["    key = %s" % key,
              "    plan = _plans.get(key)",
              "    if plan is None:",
              "        plan = _plans[key] = _Plan(_prog, key, _blk, _par)"]
    # ---- plain path; also for a call with an operand of two dims or more whose axes are
    # not in C order in memory (Fortran order, a transpose): NumPy then lays its results out
    # in the operands' order and sums along it, so C-ordered buffers would change the sums'
    # bits and the results' strides (a check per call, ~0.1-0.5 us, on the large path only)
    ns["_c_order"] = blocks.c_order
    layout = "".join(" or not _c_order(x%d)" % i
                     for i, (s, _) in enumerate(prog.ins) if len(s) >= 2)
    L.append("    if not plan.large%s:" % layout)
    for j, o in enumerate(prog.ops):
        L.append("        t%d = %s" % (j, _plain_call(prog, j, o, ns)))
    L.append("        return %s" % ret([_name(prog, v) for v in prog.outputs]))
    # ---- large path
    where, tmps = assign_buffers(prog)
    L.append("    S = plan.S")
    for k, v in enumerate(prog.outputs):
        if v in where and where[v] == ("out", k):
            ns["_out%d" % k] = OutputPool()
            ns["_d%d" % k] = prog.ops[v - n].dtype
            L.append("    o%d = _donated(d%d, S, _d%d)" % (k, k, k))
            L.append("    if o%d is None:" % k)
            L.append("        o%d = _out%d.take(S, _d%d)" % (k, k, k))
    body = _op_lines(prog, where, ns)
    if blk:
        L += _blocked_lines(prog, ns, where, tmps, body, ret)
    for s, dt in sorted(tmps.items()):
        ns["_dt%d" % s[1]] = dt
        L.append("    b%d = _tmp.take(S, _dt%d)" % (s[1], s[1]))
    L += ["    " + ln for ln in body]
    for s in sorted(tmps):
        L.append("    _tmp.give(b%d)" % s[1])
    for k, v in enumerate(prog.outputs):
        if v in where and where[v] == ("out", k):
            L.append("    _out%d.give(o%d)" % (k, k))
    L.append("    return %s" % ret([_name(prog, v, where) for v in prog.outputs]))
    return "\n".join(L) + "\n", ns


def _blocked_lines(prog, ns, where, tmps, body, ret):
    """The large path's blocked form (`plan.block`): the op chain `body` as a function of one
    chunk's views that `blocks.run` runs over the chunks, before the whole-array form it
    falls back to when a call meets a floating-point error."""
    n = prog.n_in
    L = []
    form = _block_form(prog)
    # a whole buffer for the value a trailing reduction reads (chunk views of it in the
    # body, as for results); the reduction runs once the chunks are done
    whole = [form] if form and form[0] == "tmp" else []
    chunk_tmps = [s for s in sorted(tmps) if s not in whole]
    outs = [k for k, v in enumerate(prog.outputs) if where.get(v) == ("out", k)]
    params = ["x%d" % i for i in range(n)] + ["o%d" % k for k in outs] + \
        ["b%d" % s[1] for s in whole + chunk_tmps]
    lines = body[:-1] if form is not False else body
    src = "def body(%s):\n%s\n    pass\n" % (", ".join(params),
                                              "\n".join("    " + ln for ln in lines))
    exec(compile(src, "<ndflow fused chunk %s>" % prog.describe(), "exec"), ns)
    ns["_body"], ns["_blocks"], ns["_shares"] = ns.pop("body"), blocks, _shares
    ns["_tdts"] = tuple(tmps[s] for s in chunk_tmps)
    xt = "(%s)" % "".join("x%d, " % i for i in range(n))
    L.append("    if plan.block is not None:")
    for k in outs:
        # a donated buffer that is also an operand stays out: a call that meets a
        # floating-point error runs again unblocked and must find its operands intact
        L.append("        if o%d is d%d and _shares(o%d, %s):" % (k, k, k, xt))
        L.append("            o%d = _out%d.take(S, _d%d)" % (k, k, k))
    for s in whole:
        ns["_dt%d" % s[1]] = tmps[s]
        L.append("        b%d = _tmp.take(S, _dt%d)" % (s[1], s[1]))
    L.append("        if _blocks.run(plan.block, _body, %s, (%s), _tdts, _tmp):"
             % (xt, "".join("o%d, " % k for k in outs) +
                "".join("b%d, " % s[1] for s in whole)))
    if form is not False:
        L.append("            " + body[-1])
    for s in whole:
        L.append("            _tmp.give(b%d)" % s[1])
    for k in outs:
        L.append("            _out%d.give(o%d)" % (k, k))
    L.append("            return %s" % ret([_name(prog, v, where) for v in prog.outputs]))
    for s in whole:
        L.append("        _tmp.give(b%d)" % s[1])
    return L


def _small_lines(prog, ns, plan, consts=None):
    """The statements of a static region that never takes the large path, over inputs
    `x0, x1...`, leaving each op's value in `t<j>`: on NumPy scalars where every value is 0-d
    (`_scalar_lines`), else each op's kernel. `consts`: {input: value} for inputs that are
    the same value at every call (prepared here, once)."""
    if plan.route is Route.T0_SCALAR:
        return _scalar_lines(prog, ns, consts or {})
    into = _dying_temps(prog)
    L = []
    for j, o in enumerate(prog.ops):
        if j in into:
            # a ufunc writing over an operand of its own shape and dtype that this region
            # made and that dies here (exact overlap is safe for ufuncs): one allocation
            # (and, from 1 KB, one malloc) less, the same loop on the same values
            ns["f%d" % j] = o.prim.impl
            L.append("t%d = f%d(%s, %st%d)" % (j, j, ", ".join(_name(prog, a) for a in o.args),
                                              "" if _positional_out(o.prim.impl) else "out=",
                                              into[j] - prog.n_in))
        else:
            L.append("t%d = %s" % (j, _plain_call(prog, j, o, ns)))
    return L


_POSITIONAL_OUT = {}


def _positional_out(uf):
    """Whether the ufunc `uf` takes its `out` positionally without a warning (NumPy 2.4
    deprecates it for `maximum` and `minimum`): asked once per ufunc, on two elements."""
    ok = _POSITIONAL_OUT.get(uf)
    if ok is None:
        import warnings
        a = np.ones(2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                uf(*([a] * uf.nin), *([np.empty(2)] * uf.nout))
                ok = True
            except Exception:
                ok = False
        _POSITIONAL_OUT[uf] = ok
    return ok


def _dying_temps(prog):
    """{op j: value}: ops of the plain static path that may write their result into an
    operand's buffer, passed as `out` (positionally: ~35 ns less than a keyword, ~50 ns less
    than allocating a result of a few elements): the op is a plain ufunc, and the operand is
    the result of one (a fresh array of at least one dimension, never a view, never seen
    outside the region: not an output) of the same static shape and dtype, read by nothing
    after this op."""
    n = prog.n_in
    last = {}
    for j, o in enumerate(prog.ops):
        for a in o.args:
            last[a] = j
    outs = set(prog.outputs)
    fresh = set()             # values that are ufunc results in their own buffers
    into = {}
    for j, o in enumerate(prog.ops):
        # (not for one element: NumPy 2.4 takes ~0.65 us for a one-element ufunc with `out`
        # one of its operands, against ~0.27 us allocating; from two elements it is faster)
        if _how(o) != "ufunc" or not o.shape or None in o.shape or math.prod(o.shape) < 2:
            continue
        for a in o.args:
            if a in fresh and last[a] == j and a not in outs and \
                    prog.value_shape(a) == o.shape and prog.value_dtype(a) == o.dtype:
                into[j] = a
                fresh.discard(a)
                break
        fresh.add(n + j)
    return into


# the names `_small_lines` writes: locals (x inputs, t values, s/g scalars, r) and the names
# of its namespace; `inline_form` gives them a prefix of the caller's
_LOCAL_NAME = re.compile(r"\b(?:(?:_lo|_hi|_nlo|_nhi|_one|_cdt|_rdt|_sq|[ftsgx])\d+|r)\b")


_SMALL_FORMS = {}


def _small_form(prog, consts, plan=None):
    """(`_small_lines`, their namespace) for a static program, or None when it has a large
    path; kept per program (and, for a 0-d region, which prepares its constants, per
    constant values): a step's first call pays for each region it writes in."""
    if plan is None:
        plan = Plan(prog, [s for s, _ in prog.ins])
    key = (prog.key, plan.route)
    if consts and all(s == () for s, _ in prog.ins) and all(o.shape == () for o in prog.ops):
        key = (key, tuple((i, v.dtype.str, v.tobytes()) if isinstance(v, np.ndarray)
                          else (i, type(v), v) for i, v in sorted(consts.items())))
    try:
        got = _SMALL_FORMS.get(key, _MISSING)
    except TypeError:           # an unhashable constant: no cache
        key, got = None, _MISSING
    if got is _MISSING:
        got = None
        if not plan.large:
            ns = {}
            got = (_small_lines(prog, ns, plan, consts), ns)
        if key is not None:
            if len(_SMALL_FORMS) >= 1024:
                _SMALL_FORMS.clear()
            _SMALL_FORMS[key] = got
    return got


_MISSING = object()


def inline_form(prog, args, consts, prefix, outs, plan=None):
    """A static region of few elements as statements to write into a caller's code instead
    of a call of its tier-0 function (a frame, its device test and the tuple of its results
    cost ~0.1 us a call, as much as a small ufunc): (lines, namespace) with
    `args` the caller's expressions of the inputs, `consts` {input: value} for those that are
    constants, every other name of the region given `prefix`, and its results left in the
    names `outs`. None where the region has a large path. The caller keeps the device test
    (`_DEV`) of the function: these lines are only for host buffers."""
    if not prog.static:
        return None
    got = _small_form(prog, consts, plan)
    if got is None:
        return None
    lines, ns = got         # (shared: read only here)
    n = prog.n_in
    rename = {}
    tail = []
    for k, v in enumerate(prog.outputs):
        nm = _name(prog, v)
        if v >= n and nm not in rename:
            rename[nm] = outs[k]       # the op writes the caller's name itself
        else:
            tail.append((outs[k], nm))
    for i, a in enumerate(args):
        rename["x%d" % i] = a

    def sub(m):
        w = m.group(0)
        return rename.get(w) or prefix + w
    lines = [_LOCAL_NAME.sub(sub, ln) for ln in lines]
    lines += ["%s = %s" % (o, _LOCAL_NAME.sub(sub, nm)) for o, nm in tail]
    return lines, {prefix + k: v for k, v in ns.items()}


def _op_lines(prog, where, ns):
    """The large path's statements, one or two per op, over the names of `where`."""
    n = prog.n_in
    L = []
    for j, o in enumerate(prog.ops):
        v = n + j
        args = [_name(prog, a, where) for a in o.args]
        how = _how(o) if v in where else None
        if how == "ufunc":
            ns["u%d" % j] = o.prim.impl
            L.append("u%d(%s, out=%s)" % (j, ", ".join(args), _name(prog, v, where)))
        elif how == "select":
            ns["_select_into"] = select_into
            L.append("_select_into(%s, %s, %s, %s, _tmp)" % ((_name(prog, v, where),) + tuple(args)))
        elif how == "convert":
            L.append("np.copyto(%s, %s, casting='unsafe')" % (_name(prog, v, where), args[0]))
        else:
            L.append("t%d = f%d(%s)" % (j, j, ", ".join(args)))
    return L


_BITS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
         8: np.dtype(np.uint64)}


def select_into(dst, c, a, b, pool):
    """`dst[...] = where(c, a, b)` bit for bit. For operands of `dst`'s dtype of 1 to 8 bytes
    (not complex), on their bits as unsigned integers: b ^ ((a ^ b) & -c), which has no
    branch: `np.copyto(where=)` branches on every element, and under a mask with no pattern
    (relu's gradient) takes ~200 us for 32K float32 values, against ~30 us here. Its two
    scratch buffers come from `pool` (a `TempPool`). Any other operands: a copy of b, then of
    a where c."""
    it = _BITS.get(dst.dtype.itemsize) if dst.dtype.kind in "biuf" else None
    a, b = np.asarray(a), np.asarray(b)
    if it is None or a.dtype != dst.dtype or b.dtype != dst.dtype or c.dtype.kind != "b":
        np.copyto(dst, b)
        np.copyto(dst, a, where=c)
        return
    S = dst.shape
    m, t = pool.take(S, it), pool.take(S, it)
    np.copyto(m, c, casting="unsafe")       # 1 where c: every bit set once negated
    np.negative(m, out=m)
    bv = b.view(it)
    np.bitwise_xor(a.view(it), bv, out=t)
    np.bitwise_and(t, m, out=t)
    np.bitwise_xor(bv, t, out=dst.view(it))   # (dst may be b itself: each element once)
    pool.give(t)
    pool.give(m)


# ---------------------------------------------------------------- 0-d values as scalars
# A NumPy ufunc call on 0-d operands costs ~0.35 us (~0.6 us on NumPy scalars, which is what
# it returns); NumPy's scalar operators cost ~0.04 us. For + - * / on operands of the result's
# own float or integer dtype the operator's value is the ufunc's bit for bit (IEEE-754 rounds
# both correctly; integers are exact), but their errors differ: a scalar operator warns
# "overflow encountered in scalar add" where the ufunc warns "... in add", and integer scalars
# warn on overflow where arrays wrap silently. So the operator runs only where no error can
# occur: the exact value, computed first in Python floats (the rounded-to-double sum, product
# or quotient of two float16/32 values rounds to the same float16/32 value as the exact one:
# double has more than twice their precision plus two bits) or ints, is a finite normal
# number of the dtype, or an integer in its range. Every other case (zero, subnormal, inf,
# NaN, overflow, division by zero) calls the ufunc itself: NumPy's value and error, exactly.
_SCALAR_OPS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}
_FLOAT_DTS = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))
_INT_DTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                       np.uint8, np.uint16, np.uint32, np.uint64))


def scalar_form(ufunc, params, dtypes, out_dtype):
    """The operator for a ufunc op on 0-d operands of `dtypes` that may run on NumPy scalars
    behind a guard (see above), or None."""
    sym = _SCALAR_OPS.get(ufunc) if type(ufunc) is np.ufunc else None
    if sym is None or params or len(dtypes) != 2:
        return None
    dt = np.dtype(out_dtype)
    if any(np.dtype(d) != dt for d in dtypes):
        return None
    if dt in _FLOAT_DTS or (dt in _INT_DTS and sym != "/"):
        return sym
    return None


def convert_form(prim, params, src, dst):
    """Whether a 0-d conversion from `src` to `dst` may run as `dst.type(python number)`
    behind a guard: to a float dtype, from a float or integer one. The guard passes integers
    the float holds exactly (any rounding path gives that value) and floats whose converted
    value is a normal number or zero (rounding a double to float16/32 once is the C cast's
    rounding; no error flag is raised); NaN, inf, subnormal or out-of-range values call the
    kernel. The conversion itself is `dst.type(1) * number`: NumPy casts the Python number
    to `dst` (the C cast's rounding, exact for the integers the guard passes) and the product
    by one is exact; ~50 ns where `dst.type(number)` costs ~150-200."""
    from ...primitives import elementwise as E
    if prim is not E.convert_p or set(params) != {"dtype"}:
        return False
    src, dst = np.dtype(src), np.dtype(params["dtype"])
    return dst in _FLOAT_DTS and (src in _FLOAT_DTS or src in _INT_DTS)


def _guard(dt):
    """(to-Python conversion, range test over `r` with the names of its bounds, bounds)."""
    if dt.kind == "f":
        fi = np.finfo(dt)
        return "float", "%s < abs(r) < %s", (float(fi.smallest_normal), float(fi.max))
    ii = np.iinfo(dt)
    return "int", "%s <= r <= %s", (int(ii.min), int(ii.max))


def _convert_guard(src, dst):
    """(test over `r` with the names of its bounds, bounds) for convert_form."""
    if src.kind == "f":
        fi = np.finfo(dst)
        return "(%s < abs(r) < %s or r == 0)", (float(fi.smallest_normal), float(fi.max))
    m = 1 << (np.finfo(dst).nmant + 1)
    return "%s <= r <= %s", (-m, m)


def _kernel_src(lines, ns, what):
    src = "\n".join(lines) + "\n"
    exec(compile(src, "<ndflow scalar %s>" % what, "exec"), ns)
    return ns["k"]


def scalar_kernel(ufunc, dtype):
    """`k(a, b)` = `ufunc(a, b)` for two 0-d values of `dtype` (scalar_form accepts it), on
    NumPy scalars where that is NumPy's value and raises no error. A device buffer (a device
    backend in use) goes to the ufunc, which dispatches it."""
    dt = np.dtype(dtype)
    key = (ufunc, dt)
    k = _SCALAR_KERNELS.get(key)
    if k is not None:
        return k
    sym = _SCALAR_OPS[ufunc]
    conv, test, bounds = _guard(dt)
    ns = {"_u": ufunc, "_DEV": _DEVICE_BUFFERS, "_lo": bounds[0], "_hi": bounds[1]}
    div = sym == "/"
    k = _SCALAR_KERNELS[key] = _kernel_src([
        "def k(a, b):",
        "    if not _DEV:",
        "        g = %s(b)" % conv,
        "        r = %s(a) %s g%s" % (conv, sym, " if g else _hi" if div else ""),
        "        if %s:" % (test % ("_lo", "_hi")),
        "            return a[()] %s b[()]" % sym,
        "    return _u(a, b)"], ns, "%s %s" % (ufunc.__name__, dt))
    return k


def convert_kernel(impl, src, dst):
    """`k(x, dtype=dst)` = `impl(x, dtype=dst)` for a 0-d value (convert_form accepts it)."""
    src, dst = np.dtype(src), np.dtype(dst)
    key = ("convert", impl, src, dst)
    k = _SCALAR_KERNELS.get(key)
    if k is not None:
        return k
    test, bounds = _convert_guard(src, dst)
    ns = {"_impl": impl, "_DEV": _DEVICE_BUFFERS, "_lo": bounds[0], "_hi": bounds[1],
          "_one": dst.type(1), "_dt": dst}
    k = _SCALAR_KERNELS[key] = _kernel_src([
        "def k(x, dtype=_dt):",
        "    if not _DEV and dtype is _dt:",
        "        r = %s(x)" % ("float" if src.kind == "f" else "int"),
        "        if %s:" % (test % ("_lo", "_hi")),
        "            return _one * r",
        "    return _impl(x, dtype=dtype)"], ns, "convert %s %s" % (src, dst))
    return k


_SCALAR_KERNELS = {}


def _scalar_lines(prog, ns, consts):
    """The statements of a static region whose every value is 0-d: + - * /, sqrt and
    conversions on NumPy scalars behind their guards, every other op its kernel (on the
    scalars its ufuncs return). `consts`: {input: value} of inputs that never change, whose
    scalar and Python number are taken here once."""
    n = prog.n_in
    forms = {}
    for j, o in enumerate(prog.ops):
        sym = scalar_form(o.prim.impl, o.params, [prog.value_dtype(a) for a in o.args],
                          o.dtype)
        if sym is not None:
            forms[j] = sym
        elif len(o.args) == 1 and convert_form(o.prim, o.params, prog.value_dtype(o.args[0]),
                                               o.dtype):
            forms[j] = "convert"
        elif sqrt_form(o.prim.impl, o.params, [prog.value_dtype(a) for a in o.args], o.dtype):
            forms[j] = "sqrt"
    scalar_args = {a for j, f in forms.items() if f not in ("convert", "sqrt")
                   for a in prog.ops[j].args}
    py_args = {a for j in forms for a in prog.ops[j].args}
    L = []
    sname = {}

    def prepare(v):
        # a fast op's operand as a NumPy scalar (`s`) and as a Python number (`g`)
        nm = _name(prog, v)
        j = v - n
        conv = _guard(prog.value_dtype(v))[0] if v in py_args else None
        if v in consts:
            c = consts[v]
            if v in scalar_args:
                sname[v] = "s%d" % v
                ns[sname[v]] = c[()] if isinstance(c, np.ndarray) else c
            if conv is not None:
                ns["g%d" % v] = float(c) if conv == "float" else int(c)
            return
        if j >= 0 and (forms.get(j, "convert") not in ("convert", "sqrt") or
                       type(prog.ops[j].prim.impl) is np.ufunc):
            sname[v] = nm            # a ufunc's result on 0-d operands is a NumPy scalar
        elif v in scalar_args:       # a 0-d array or a NumPy scalar: the scalar
            sname[v] = "s%d" % v
            L.append("s%d = %s[()]" % (v, nm))
        if conv is not None:
            L.append("g%d = %s(%s)" % (v, conv, nm))

    for v in range(n):
        prepare(v)
    for j, o in enumerate(prog.ops):
        form = forms.get(j)
        if form is None:
            L.append("t%d = %s" % (j, _plain_call(prog, j, o, ns)))
        elif form == "convert":
            a, = o.args
            test, bounds = _convert_guard(prog.value_dtype(a), o.dtype)
            ns["_lo%d" % j], ns["_hi%d" % j] = bounds
            ns["_one%d" % j] = o.dtype.type(1)
            ns["f%d" % j] = o.prim.impl
            ns["_cdt%d" % j] = o.params["dtype"]
            L.append("t%d = _one%d * g%d if %s else f%d(%s, _cdt%d)" % (
                j, j, a, re.sub(r"\br\b", "g%d" % a, test) % ("_lo%d" % j, "_hi%d" % j), j,
                _name(prog, a), j))
        elif form == "sqrt":
            # the square root of a positive normal number, in double and rounded once to
            # the dtype: IEEE's correctly rounded value (double has more than twice the
            # precision plus two bits, so rounding twice gives the same), no error flag
            a, = o.args
            fi = np.finfo(o.dtype)
            ns["_lo%d" % j], ns["_hi%d" % j] = float(fi.smallest_normal), float(fi.max)
            ns["_one%d" % j] = o.dtype.type(1)
            ns["_sq%d" % j] = math.sqrt
            ns["f%d" % j] = o.prim.impl
            L.append("t%d = _one%d * _sq%d(g%d) if _lo%d < g%d < _hi%d else f%d(%s)" % (
                j, j, j, a, j, a, j, j, _name(prog, a)))
        else:
            a, b = o.args
            conv, test, bounds = _guard(o.dtype)
            ns["_lo%d" % j], ns["_hi%d" % j] = bounds
            ns["f%d" % j] = o.prim.impl
            if conv == "float":
                # _lo < abs(r) < _hi without the call
                ns["_nlo%d" % j], ns["_nhi%d" % j] = -bounds[0], -bounds[1]
                test = "(%%s < r < %%s or _nhi%d < r < _nlo%d)" % (j, j)
            rhs = "g%d" % b + (" if g%d else _hi%d" % (b, j) if form == "/" else "")
            L.append("r = g%d %s %s" % (a, form, rhs))
            L.append("t%d = %s %s %s if %s else f%d(%s, %s)" % (
                j, sname[a], form, sname[b], test % ("_lo%d" % j, "_hi%d" % j), j,
                _name(prog, a), _name(prog, b)))
        prepare(n + j)
    return L


def sqrt_form(ufunc, params, dtypes, out_dtype):
    """Whether a 0-d np.sqrt may run as a guarded `math.sqrt` (`_scalar_lines`)."""
    return ufunc is np.sqrt and not params and len(dtypes) == 1 and \
        np.dtype(dtypes[0]) == np.dtype(out_dtype) and np.dtype(out_dtype) in _FLOAT_DTS


def _plain_call(prog, j, o, ns):
    """The plain path's expression for op j: its primitive's kernel on the op's operands, or,
    where the operand is surely an ndarray (one of at least one dimension), the NumPy call
    that kernel makes, without its Python frames (a region of a few elements pays ~0.2 us
    per frame)."""
    f = "f%d" % j
    args = [_name(prog, a) for a in o.args]
    from ...primitives import elementwise as E
    if o.prim is E.convert_p and set(o.params) == {"dtype"} and len(o.args) == 1 and \
            len(prog.value_shape(o.args[0])) > 0:
        # what `_convert_impl` calls for an ndarray
        ns[f] = _bound(o)
        ns["_cdt%d" % j] = o.params["dtype"]
        return "%s.astype(_cdt%d)" % (args[0], j)
    direct = _direct_call(prog, o)
    if direct is not None:
        fn, tail, dt = direct
        ns[f] = _bound(o)         # the large path's name for it
        f = "g%d" % j
        ns[f] = fn
        if dt is not None:
            ns["_rdt%d" % j] = dt
            tail = tail % ("_rdt%d" % j)
        return "%s(%s, %s)" % (f, args[0], tail)
    ns[f] = _bound(o)
    return "%s(%s)" % (f, ", ".join(args))


def _direct_call(prog, o):
    """(callable, trailing arguments, dtype or None) for a reduction of an ndarray operand:
    the ufunc reduction `_sum_impl` and the max/min kernels call for one (the dtype, when not
    None, is the `%s` of the arguments)."""
    from ...primitives import reduction as R
    if len(o.args) != 1 or len(prog.value_shape(o.args[0])) == 0:
        return None
    src_dt = prog.value_dtype(o.args[0])
    if o.reduce:
        axes, keep = o.params.get("axes"), o.params.get("keepdims")
        if set(o.params) != {"axes", "keepdims"} or not isinstance(axes, tuple) or \
                not all(type(a) is int for a in axes) or type(keep) is not bool:
            return None
        # without keepdims, one axis given as an int and (for float32/64, whose sum NumPy
        # computes in their own dtype) no dtype: the same reduction, parsed faster (~0.1 us
        # of a ~0.9 us sum of a few hundred elements)
        short = not keep and len(axes) == 1
        ax = axes[0] if short else axes
        if o.prim is R.reduce_sum_p:
            if short and np.dtype(src_dt) in _FLOAT_DTS[1:]:
                return np.add.reduce, "%r" % ax, None
            return np.add.reduce, "%r, %%s, None, %r" % (axes, keep), src_dt
        for prim, uf in ((R.reduce_max_p, np.maximum), (R.reduce_min_p, np.minimum)):
            if o.prim is prim:
                return uf.reduce, "%r" % ax if short else \
                    "%r, None, None, %r" % (axes, keep), None
        return None
    return None


def _bound(op):
    impl = op.prim.impl
    if op.params:
        params = op.params
        return lambda *a: impl(*a, **params)
    return impl


def build(prog, parallel=True, device=None):
    src, ns = generate(prog, parallel, device)
    exec(compile(src, "<ndflow fused %s>" % prog.describe(), "exec"), ns)
    fn = ns["tier0"]
    fn.source = src
    fn.output_pools = [ns[k] for k in sorted(ns) if k.startswith("_out")]
    return fn
