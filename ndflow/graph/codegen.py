"""Graph -> straight-line Python calling the kernels directly (no `bind`, no dispatch).

Each node becomes one line `vK = fN(args)` where fN is the primitive's kernel (`prim.impl`)
with its params bound; nothing here knows any particular primitive, so a new primitive (a fused
kernel, a control-flow op that runs sub-graphs) needs no change here. Errors at run time are
mapped back to the node and the user's line that created it.

What makes a step of small operations cheaper, still without knowing any primitive: a kernel
may offer itself as an expression (`impl.ndflow_inline`, a Variable's read) or as statements
(`impl.ndflow_inline_stmt`, a Variable's assignment) written into the code; a fused region
that only ever runs tier 0 is written in as its statements (`FusedKernel.inline_form`); a
kernel may be one expression for the node's params (`impl.ndflow_specialize`: a basic index);
and an elementwise + - * / or a float conversion of 0-d values runs on NumPy scalars behind a
guard that keeps NumPy's values and errors (`kernels.numpy_tier.scalar_kernel`).
"""
import functools
import itertools
import keyword

import numpy as np

from ..core.state import STATE
from ..core.settings import settings
from ..core.errors import nonfinite_error
from ..backends.device import _BY_TYPE as _DEVICE_BUFFERS, allocates, on_device
from .kernels import numpy_tier as T
from .kernels.program import Program, Op
from .ir import set_compiler
from .passes import optimize, checked_passes
from .memory import kept_result_kernel

_serial = itertools.count()


def _kernel(node):
    impl = node.prim.impl
    if node.params:
        return functools.partial(impl, **node.params)
    return impl


def _device_kernel(node, fn, dev):
    """`fn` in a graph on a device: creation kernels (no inputs) get the device's array module,
    as they do eagerly; a result a kernel made in host memory (a primitive without a device
    kernel) is copied to the device with a warning (backends.device.on_device)."""
    prim = node.prim
    many = prim.multiple_results
    if allocates(prim, node.inputs):
        fn = functools.partial(fn, xp=dev.backend.xp)

    def run(*a):
        return on_device(prim, fn(*a), dev, many)
    return run


def _checker(node):
    """The numerics check of one node's results (enable_check_numerics): raises where the
    generated code calls it, so the error names the node and the user's line like any other."""
    name = node.prim.name

    def check(outs, ins):
        err = nonfinite_error(name, outs, ins)
        if err is not None:
            raise err
    return check


def _checked(node):
    """Whether check_numerics code checks this node: it makes floating values from inputs and
    is not a control-flow op (its bodies check their own operations) nor a sink."""
    return (node.inputs and not node.prim.sink and not any(True for _ in node.subgraphs())
            and any(o.dtype.kind in "fcV" for o in node.outputs))


def _scalar_kernel(node):
    """For an elementwise node on 0-d values: a kernel that runs it on NumPy scalars where
    that is the ufunc's value without its errors (`numpy_tier.scalar_kernel`), else None."""
    if not node.outputs or len(node.outputs) != 1 or node.prim.multiple_results:
        return None
    o = node.outputs[0]
    if tuple(o.shape) != () or any(tuple(v.shape) != () for v in node.inputs):
        return None
    impl = node.prim.impl
    dts = [v.dtype for v in node.inputs]
    if T.scalar_form(impl, node.params, dts, o.dtype) is not None:
        return T.scalar_kernel(impl, o.dtype)
    if len(dts) == 1 and T.convert_form(node.prim, node.params, dts[0], o.dtype):
        return T.convert_kernel(impl, dts[0], o.dtype)
    return None


def _inline_statements(node, k, f, ins, outs, ns):
    """The node as statements written into the code, where its kernel offers them
    (`impl.ndflow_inline_stmt`: lines over `{out}`, `{0}`... for the operands, `{<param>}`
    for the params and `{fn}` for the kernel itself, with `impl.ndflow_inline_ns` the names
    they use): a Variable's assignment is a few attribute stores, which two calls (the
    kernel, the wrapping) cost several times over. None: call the kernel."""
    impl = node.prim.impl
    tmpl = getattr(impl, "ndflow_inline_stmt", None)
    if tmpl is None or node.prim.multiple_results or len(outs) != 1 or \
            not all(isinstance(p, str) and p.isidentifier() for p in node.params):
        return None
    names = {"out": outs[0], "fn": f}
    ns[f] = _kernel(node)
    for i, (name, v) in enumerate(node.params.items()):
        ns["p%d_%d" % (k, i)] = v
        names[name] = "p%d_%d" % (k, i)
    ns.update(getattr(impl, "ndflow_inline_ns", {}))
    return [line.format(*ins, **names) for line in tmpl]


def _inline_region(node, k, f, ins, outs, ns):
    """A fused region that only ever runs tier 0, as its statements written into the code
    (`FusedKernel.inline_form`): no frame, no device test of its own, no tuple of results;
    its constant operands prepared once. The device test stays, once, in front of them: with
    a device backend in use the region's function runs, as its call would. None: call it."""
    impl = node.prim.impl
    form = getattr(impl, "inline_form", None)
    if form is None or node.params or not outs:
        return None
    consts = {i: v.const._v for i, v in enumerate(node.inputs)
              if v.kind == "c" and v.const is not None}
    got = form(ins, consts, "r%d_" % k, outs)
    if got is None:
        return None
    lines, rns = got
    ns.update(rns)
    ns[f] = impl.direct
    ns["_DEV"] = _DEVICE_BUFFERS
    target = ", ".join(outs) + ("," if len(outs) == 1 and node.prim.multiple_results else "")
    return (["if _DEV:", "    %s = %s(%s)" % (target, f, ", ".join(ins)), "else:"] +
            ["    " + ln for ln in lines])


def _inline_scalar(node, k, f, ins, outs, ns):
    """An elementwise node on 0-d values that `_scalar_kernel` runs on NumPy scalars, as the
    statements of that kernel written into the code (`numpy_tier.inline_form` of a one-op
    program): no call, its constant operand prepared once. None: call the kernel."""
    sk = _scalar_kernel(node)
    if sk is None or len(outs) != 1:
        return None
    o = node.outputs[0]
    n = len(node.inputs)
    prog = Program([(v.shape, v.dtype) for v in node.inputs],
                   [Op(node.prim, range(n), node.params, (), o.dtype)], [n], ())
    consts = {i: v.const._v for i, v in enumerate(node.inputs)
              if v.kind == "c" and v.const is not None}
    got = T.inline_form(prog, ins, consts, "r%d_" % k, outs)
    if got is None:
        return None
    lines, rns = got
    ns.update(rns)
    ns[f] = sk
    ns["_DEV"] = _DEVICE_BUFFERS
    return (["if _DEV:", "    %s = %s(%s)" % (outs[0], f, ", ".join(ins)), "else:"] +
            ["    " + ln for ln in lines])


def _call_expr(node, k, f, args, ns):
    """`fK(args, name=pK_i, ...)`: a kernel's params passed as keywords from the code's
    namespace (a functools.partial with keywords costs ~150 ns more per call)."""
    sk = _scalar_kernel(node)
    if sk is not None:
        ns[f] = sk
        return "%s(%s)" % (f, args)
    special = getattr(node.prim.impl, "ndflow_specialize", None)
    if special is not None:
        # a kernel that, for these params, is one expression over values made once here (a
        # basic index: `x[index]`, the index tuple built at generation, not looked up)
        got = special(len(node.inputs), **node.params)
        if got is not None:
            tmpl, values = got
            ns[f] = _kernel(node)
            names = {}
            for i, (name, v) in enumerate(values.items()):
                names[name] = "p%d_s%d" % (k, i)
                ns[names[name]] = v
            return tmpl.format(*[a.strip() for a in args.split(",") if a.strip()], **names)
    direct = getattr(node.prim.impl, "direct", None) if not node.params else None
    if direct is not None and callable(direct):
        # a fused region that only ever runs its tier-0 function: call that function (the
        # kernel object's own call goes through its class's __call__, ~0.1 us more)
        ns[f] = direct
        return "%s(%s)" % (f, args)
    inline = getattr(node.prim.impl, "ndflow_inline", None)
    if inline is not None and all(isinstance(n, str) and n.isidentifier() for n in node.params):
        # a kernel that is one expression (a Variable's read: an attribute chain) written
        # into the line: no call (~0.1 us of a step of small ops)
        ns[f] = _kernel(node)          # still the node's kernel, for whoever looks it up
        names = {}
        for i, (name, v) in enumerate(node.params.items()):
            ns["p%d_%d" % (k, i)] = v
            names[name] = "p%d_%d" % (k, i)
        return inline.format(*[a.strip() for a in args.split(",") if a.strip()], **names)
    if not node.params or not all(isinstance(n, str) and n.isidentifier()
                                  and not keyword.iskeyword(n) for n in node.params):
        ns[f] = _kernel(node)
        return "%s(%s)" % (f, args)
    ns[f] = node.prim.impl
    kws = []
    for i, (name, v) in enumerate(node.params.items()):
        ns["p%d_%d" % (k, i)] = v
        kws.append("%s=p%d_%d" % (name, k, i))
    return "%s(%s)" % (f, ", ".join(([args] if args else []) + kws))


def generate(graph, check_numerics=False):
    """Returns (run, source, line -> node, filename, body); `run(*input buffers)` returns the
    tuple of output buffers. With `check_numerics`, a line after each operation that makes
    floating values raises InvalidArgumentError when they hold NaN or infinity from finite
    inputs (without it the code has no trace of the check).

    `body` is (lines, outputs): the statements of `run` without its def and return, each
    `(text, node or None)`, reading the inputs as `a0, a1...` and leaving the outputs in the
    names `outputs`; run's globals (`run.__globals__`) hold what they call. Callers that
    inline the graph into code of their own (graph/function.py's call entries) use them and
    map their own line numbers to nodes (`__ndflow_lines__`)."""
    ns = {}
    names = {}
    for i, v in enumerate(graph.inputs):
        names[v.id] = "a%d" % i
    # a graph generated for a device (its inputs' or the scope's) gets its constants there once,
    # not at every call (and never as host memory mixed into device kernels)
    dev = STATE.device
    upload = dev.backend.from_host if dev is not None and not dev.backend.host else None
    for i, c in enumerate(graph.consts):
        names[c.id] = "c%d" % i
        v = c.const._v
        if upload is not None and isinstance(v, np.ndarray):
            v = upload(v, dev.gpu_id)
        ns["c%d" % i] = v
    body = []
    # free each intermediate after its last use, as eager code does: holding them all until
    # the return makes every large temporary a fresh allocation (page faults, cold caches)
    last_use = {}
    for k, n in enumerate(graph.nodes):
        for v in n.inputs:
            last_use[v.id] = k
    returned = {o.id for o in graph.outputs}
    for k, n in enumerate(graph.nodes):
        f = "f%d" % k
        outs = []
        for o in n.outputs:
            names[o.id] = "v%d" % o.id
            outs.append(names[o.id])
        args = ", ".join(names[v.id] for v in n.inputs)
        stmts = None
        if upload is None:
            ins = [names[v.id] for v in n.inputs]
            stmts = _inline_statements(n, k, f, ins, outs, ns)
            if stmts is None and not check_numerics:
                stmts = _inline_region(n, k, f, ins, outs, ns)
            if stmts is None and not check_numerics:
                stmts = _inline_scalar(n, k, f, ins, outs, ns)
        if stmts is not None:
            body.extend((text, n) for text in stmts)
            call = None
        elif upload is None:
            kept = None if check_numerics else kept_result_kernel(n, returned)
            if kept is not None:
                ns[f] = kept
                call = "%s(%s)" % (f, args)
            else:
                call = _call_expr(n, k, f, args, ns)
        else:
            ns[f] = _device_kernel(n, _kernel(n), dev)
            call = "%s(%s)" % (f, args)
        target = ", ".join(outs) + ("," if n.prim.multiple_results and len(outs) == 1 else "")
        if n.prim.multiple_results and not outs:
            target = "_"
        if call is not None:
            body.append(("%s = %s" % (target, call), n))
        if check_numerics and _checked(n):
            ns["chk%d" % k] = _checker(n)
            body.append(("chk%d((%s), (%s))" % (k, "".join(o + ", " for o in outs),
                                               "".join(names[v.id] + ", " for v in n.inputs)),
                         n))
        dead = sorted({names[v.id] for v in n.inputs if v.kind == "v" and last_use[v.id] == k
                       and v.id not in returned})
        dead += [names[o.id] for o in n.outputs if o.id not in last_use and o.id not in returned]
        if dead:
            body.append(("del %s" % ", ".join(dead), None))
    out_names = [names[o.id] for o in graph.outputs]
    lines = ["def run(%s):" % "".join("a%d, " % i for i in range(len(graph.inputs)))]
    line_nodes = {}
    for text, n in body:
        lines.append("    " + text)
        if n is not None:
            line_nodes[len(lines)] = n
    lines.append("    return (%s)" % "".join(o + ", " for o in out_names))
    src = "\n".join(lines) + "\n"
    filename = "<ndflow graph %s #%d>" % (graph.name, next(_serial))
    # the frame's globals carry the line -> node map, so an error deep inside nested graphs
    # (a cond branch, a loop body) finds its own node without a global registry
    ns["__ndflow_lines__"] = line_nodes
    exec(compile(src, filename, "exec"), ns)
    run = ns["run"]
    return run, src, line_nodes, filename, (body, out_names)


def node_for_exception(tb):
    """The graph node whose kernel raised: the innermost generated-graph frame of `tb`."""
    node = None
    while tb is not None:
        lines = tb.tb_frame.f_globals.get("__ndflow_lines__")
        if lines is not None:
            node = lines.get(tb.tb_lineno, node)
        tb = tb.tb_next
    return node


def _compile_body(graph, check_numerics, fast_math):
    """A sub-graph's body optimized (with the checked passes under check_numerics) and
    generated under the contract it was traced under (`fast_math`): (optimized graph, run)."""
    with settings.override(fast_math=fast_math):
        optimized = optimize(graph, checked_passes() if check_numerics else None)
        return optimized, generate(optimized, check_numerics=check_numerics)[0]


set_compiler(_compile_body)
