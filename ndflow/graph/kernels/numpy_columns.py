"""Tier 0 column by column: a static elementwise region whose result's last axis is short
after a long one (a per-example outer product (b, m, 1) * (b, 1, 2)) runs each op once per
column, over the long axes, writing the results' columns in place: NumPy's loops over rows of
2 cost ~20x more per element than over columns of m. The planner chooses it
(`planner.columns_why`).

Each element is the same NumPy loop on the same operands, so the values are NumPy's bit for
bit. The columns run with every floating-point error the caller's `np.errstate` does not
ignore routed to a collector (`blocks.watching`): a call that meets one (or any exception)
runs again whole, through the region's plain tier-0 function, which warns, raises or calls
exactly as the eager ops would.
"""
import numpy as np

from . import blocks
from .pool import donated
from ...backends.device import _BY_TYPE as _DEVICE_BUFFERS


def _ufunc(op):
    impl = op.prim.impl
    return isinstance(impl, np.ufunc) and not op.params and impl.nout == 1


def _bound(op):
    impl, params = op.prim.impl, op.params
    return (lambda *a: impl(*a, **params)) if params else impl


def _column_lines(prog, ns, c):
    """The statements computing column `c`: operands sliced where they span the last axis,
    each op's value (into its result's column where it is one)."""
    n = prog.n_in
    m = prog.shape[-1]
    L = []
    names = {}
    for i, (s, _) in enumerate(prog.ins):
        if len(s) and s[-1] == m:
            L.append("a%d = x%d[..., %d:%d]" % (i, i, c, c + 1))
            names[i] = "a%d" % i
        else:
            names[i] = "x%d" % i
    for j, o in enumerate(prog.ops):
        v = n + j
        args = ", ".join(names[a] for a in o.args)
        outs = [k for k, w in enumerate(prog.outputs) if w == v]
        ns["f%d" % j] = _bound(o)
        if outs and _ufunc(o):
            L.append("t%d = o%d[..., %d:%d]" % (j, outs[0], c, c + 1))
            L.append("f%d(%s, out=t%d)" % (j, args, j))
        else:
            L.append("t%d = f%d(%s)" % (j, j, args))
            if outs:
                L.append("o%d[..., %d:%d] = t%d" % (outs[0], c, c + 1, j))
        for k in outs[1:]:
            L.append("o%d[..., %d:%d] = t%d" % (k, c, c + 1, j))
        names[v] = "t%d" % j
    return L


def build(prog, whole):
    """The region's tier-0 function in columns (same arguments and results as `whole`, the
    plain tier-0 function: operands, then one donor per result), with `whole` run for a call
    with device buffers, with an operand whose axes are permuted in memory (NumPy lays the
    results out in its order, `blocks.c_order`) or one that meets a floating-point error."""
    n = prog.n_in
    S = prog.shape
    xs = ", ".join("x%d" % i for i in range(n))
    ds = ", ".join("d%d=None" % k for k in range(len(prog.outputs)))
    ns = {"_whole": whole, "_DEV": _DEVICE_BUFFERS, "_donated": donated, "_S": S,
          "_empty": np.empty, "_watching": blocks.watching, "_errstate": np.errstate,
          "_shares": np.may_share_memory, "_nd": np.ndarray, "_c_order": blocks.c_order}
    permuted = "".join(" or not _c_order(x%d)" % i for i, (s, _) in enumerate(prog.ins)
                       if len(s) >= 2)
    L = ["def columns(%s, %s):" % (xs, ds),
         "    if _DEV%s:" % permuted,
         "        return _whole(%s, %s)" % (xs, ", ".join("d%d" % k for k in range(len(
             prog.outputs))))]
    for k, v in enumerate(prog.outputs):
        ns["_dt%d" % k] = prog.ops[v - n].dtype
        # a donor that is (or overlaps) an operand stays out: a call that meets an error
        # runs again whole and must find its operands intact
        L += ["    o%d = _donated(d%d, _S, _dt%d)" % (k, k, k),
              "    if o%d is None or any(type(x) is _nd and _shares(o%d, x) for x in (%s,)):"
              % (k, k, xs),
              "        o%d = _empty(_S, _dt%d)" % (k, k)]
    L += ["    watch, col = _watching()",
          "    try:",
          "        with _errstate(call=col, **watch):"]
    for c in range(S[-1]):
        L += ["            " + ln for ln in _column_lines(prog, ns, c)]
    L += ["    except Exception:",
          "        col.hit = True",
          "    if col.hit:",
          "        return _whole(%s)" % xs]
    outs = ["o%d" % k for k in range(len(prog.outputs))]
    L.append("    return %s" % (outs[0] if len(outs) == 1 else "(%s)" % ", ".join(outs)))
    src = "\n".join(L) + "\n"
    exec(compile(src, "<ndflow fused columns %s>" % prog.describe(), "exec"), ns)
    fn = ns["columns"]
    fn.source = src
    fn.output_pools = getattr(whole, "output_pools", [])
    return fn
