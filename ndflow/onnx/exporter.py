"""`nf.onnx.export`: a concrete function's optimized graph, written as an ONNX model.

What is exported is the traced graph after the algebraic passes (constant folding,
simplification, CSE, dead code) but before elementwise fusion and buffer reuse: fused regions
are compiler artefacts of our own code generator, while the unfused nodes each have an ONNX
operator, and an ONNX runtime does its own fusion.

Each primitive is translated by one converter (the table at the bottom). A converter emits
ONNX nodes that compute exactly NumPy's answer; where ONNX's operator differs from NumPy on
special values (NaN in maximum/minimum, integer floor division by zero...) the converter adds
the few nodes that make it agree. A primitive with no faithful translation raises
`UnsupportedOperationError` naming it and the line of the user's code that created it.

Unknown (None) sizes of the input signature become symbolic ONNX dimensions; operations whose
parameters depend on sizes read them from the tensor at run time (Shape), so the file runs for
every size.
"""
import numpy as np

DEFAULT_OPSET = 18
MIN_OPSET = 13
_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


class UnsupportedOperationError(NotImplementedError):
    """An operation of the traced function has no ONNX translation (or not with these
    parameters). The message names the primitive and the user's line that created it."""


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("nf.onnx.export needs the 'onnx' package: pip install 'ndflow[onnx]' "
                          "(or pip install onnx onnxruntime)") from None
    return onnx


# ================================================================== the emitter
class _Ctx:
    """Collects ONNX nodes (of the graph being written: the main graph or a sub-graph body),
    the initializers (always of the main graph: sub-graphs see them by name) and fresh names."""

    def __init__(self, onnx, opset):
        self.onnx = onnx
        self.h = onnx.helper
        self.opset = opset
        self.nodes = []
        self.inits = []
        self._consts = {}
        self._n = 0
        self.node = None         # the ndflow node being converted (for error messages)

    def fresh(self, hint="t"):
        self._n += 1
        return "%s_%d" % (hint, self._n)

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(self.h.make_node(op_type, list(inputs), outs,
                                           name=self.fresh("n_" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=None):
        a = np.asarray(value, dtype=dtype)
        if a.dtype.kind == "c" or a.dtype == object:
            self.fail(f"an array of dtype {a.dtype} (ONNX runtimes have no complex kernels)")
        key = (a.dtype.str, a.shape, a.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = self._consts[key] = self.fresh("const")
            self.inits.append(self.onnx.numpy_helper.from_array(np.array(a, order="C"), name))
        return name

    def i64(self, values):
        return self.const(np.asarray(values, dtype=np.int64))

    def fail(self, what):
        n = self.node
        where = f"'{n.prim.name}' created at {n.loc}" if n is not None else "the graph"
        raise UnsupportedOperationError(f"nf.onnx.export: {what} cannot be exported ({where})")

    # shape helpers ---------------------------------------------------------
    def dim(self, x, axis):
        """The size of `x` along `axis` as a 1-element int64 tensor (read at run time)."""
        return self.op("Shape", [x], start=axis, end=axis + 1) if axis != -1 else \
            self.op("Shape", [x], start=-1)

    def reduce(self, op_type, x, axes, keepdims):
        if self.opset >= 18 or op_type == "ReduceSum":
            return self.op(op_type, [x, self.i64(list(axes))], keepdims=int(keepdims))
        return self.op(op_type, [x], axes=list(axes), keepdims=int(keepdims))

    def where(self, c, x, y, dtype):
        """Where(c, x, y) keeping the sign of a selected zero: onnxruntime's float Where can
        turn -0.0 into +0.0. For floats, a zero whose sign is not the selected operand's is
        multiplied by -1 (x * 1 and x * -1 are exact, NaN and infinities included)."""
        r = self.op("Where", [c, x, y])
        if np.dtype(dtype).kind != "f":
            return r
        zero = self.const(0, dtype)

        def negative_zero(v):       # 1 / -0.0 = -inf
            return self.op("And", [self.op("Equal", [v, zero]),
                                   self.op("Less", [self.op("Reciprocal", [v]), zero])])
        picked = self.op("Or", [self.op("And", [c, negative_zero(x)]),
                                self.op("And", [self.op("Not", [c]), negative_zero(y)])])
        # flip the zeros whose sign is not the picked one's (-0.0 and +0.0 both compare equal
        # to 0, and only the sign of a zero can be wrong)
        flag = self.op("Xor", [picked, negative_zero(r)])
        sign = self.op("Sub", [self.const(1, dtype),
                               self.op("Mul", [self.const(2, dtype), self.cast(flag, dtype)])])
        return self.op("Mul", [r, sign])

    def cast(self, x, dtype):
        return self.op("Cast", [x], to=_tensor_type(self.onnx, dtype))


def _tensor_type(onnx, dtype):
    d = np.dtype(dtype)
    if d.kind == "c":
        raise UnsupportedOperationError(f"nf.onnx.export: dtype {d} has no ONNX runtime support")
    return onnx.helper.np_dtype_to_tensor_dtype(d)


def _emit_graph(ctx, g, env, table):
    """Convert the nodes of `g` (env: var id -> ONNX name, its inputs already there)."""
    outer = ctx.node           # a control-flow node whose body this is
    for c in g.consts:
        env[c.id] = ctx.const(np.asarray(c.const))
    for n in g.nodes:
        if n.prim.sink:
            continue        # prints and other output-only effects: ONNX has no host output
        ctx.node = n
        conv = table.get(n.prim)
        if conv is None:
            raise UnsupportedOperationError(
                f"nf.onnx.export: primitive '{n.prim.name}' (created at {n.loc}) has no ONNX "
                f"translation; supported: see nf.onnx.supported_primitives()")
        outs = conv(ctx, n, [env[v.id] for v in n.inputs])
        if not n.prim.multiple_results:
            outs = [outs]
        for o, name in zip(n.outputs, outs):
            env[o.id] = name
    ctx.node = outer


def _subgraph(ctx, g, env, table, name):
    """An ONNX GraphProto for the ndflow graph `g` used as an If branch: the values of `g`'s
    inputs are the outer names in `env` (ONNX bodies read the enclosing scope by name)."""
    h = ctx.h
    saved, ctx.nodes = ctx.nodes, []
    env = dict(env)
    try:
        _emit_graph(ctx, g, env, table)
        outs = []
        for o in g.outputs:
            # a body's outputs must be its own values, not outer or input names
            nm = ctx.op("Identity", [env[o.id]])
            outs.append(h.make_tensor_value_info(nm, _tensor_type(ctx.onnx, o.dtype), None))
        body = h.make_graph(ctx.nodes, ctx.fresh(name), [], outs)
    finally:
        ctx.nodes = saved
    return body


# ================================================================== converters
def _simple(op_type):
    return lambda ctx, n, ins: ctx.op(op_type, ins)


def _is_float(v):
    return np.dtype(v.dtype).kind == "f"


def _float_only(op_type):
    def conv(ctx, n, ins):
        if not _is_float(n.inputs[0]):
            ctx.fail(f"{n.prim.name} of dtype {n.inputs[0].dtype}")
        return ctx.op(op_type, ins)
    return conv


def _identity(ctx, n, ins):
    return ctx.op("Identity", ins[:1])


def _log_base(base):
    def conv(ctx, n, ins):
        x, = ins
        dt = n.outputs[0].dtype
        return ctx.op("Div", [ctx.op("Log", [x]), ctx.const(np.log(np.asarray(base, dt)))])
    return conv


def _exp2(ctx, n, ins):
    return ctx.op("Pow", [ctx.const(2, n.outputs[0].dtype), ins[0]])


def _expm1(ctx, n, ins):
    """Kahan's accurate expm1 from exp and log: (u - 1) * x / log(u), u = exp(x)."""
    x, = ins
    dt = n.outputs[0].dtype
    one = ctx.const(1, dt)
    u = ctx.op("Exp", [x])
    um1 = ctx.op("Sub", [u, one])
    general = ctx.op("Div", [ctx.op("Mul", [um1, x]), ctx.op("Log", [u])])
    r = ctx.where(ctx.op("Equal", [um1, ctx.const(-1, dt)]), um1, general, n.outputs[0].dtype)
    r = ctx.where(ctx.op("IsInf", [u], detect_negative=0), u, r, n.outputs[0].dtype)
    return ctx.where(ctx.op("Equal", [u, one]), x, r, n.outputs[0].dtype)


def _log1p(ctx, n, ins):
    """Goldberg's accurate log1p: log(u) * x / (u - 1), u = 1 + x."""
    x, = ins
    dt = n.outputs[0].dtype
    one = ctx.const(1, dt)
    u = ctx.op("Add", [x, one])
    lu = ctx.op("Log", [u])
    general = ctx.op("Div", [ctx.op("Mul", [lu, x]), ctx.op("Sub", [u, one])])
    r = ctx.where(ctx.op("IsInf", [u], detect_negative=0), lu, general, n.outputs[0].dtype)
    return ctx.where(ctx.op("Equal", [u, one]), x, r, n.outputs[0].dtype)


def _logaddexp(base2):
    """max(x, y) + log1p(base**-|x - y|) (over ln 2 for base 2); where x == y (both the same
    infinity included, where x - y is NaN) x + log(2) (x + 1); NaN from either operand."""
    def conv(ctx, n, ins):
        x, y = ins
        dt = n.outputs[0].dtype
        d = ctx.op("Abs", [ctx.op("Sub", [x, y])])
        if base2:
            e = ctx.op("Pow", [ctx.const(2, dt), ctx.op("Neg", [d])])
        else:
            e = ctx.op("Exp", [ctx.op("Neg", [d])])
        soft = _log1p(ctx, n, [e])
        if base2:
            soft = ctx.op("Div", [soft, ctx.const(np.log(2.0), dt)])
        r = ctx.op("Add", [ctx.op("Max", [x, y]), soft])
        tie = ctx.op("Add", [x, ctx.const(1.0 if base2 else np.log(2.0), dt)])
        return ctx.where(ctx.op("Equal", [x, y]), tie, r, dt)
    return conv


def _cbrt(ctx, n, ins):
    x, = ins
    dt = n.outputs[0].dtype
    third = ctx.const(1.0 / 3.0, dt)
    mag = ctx.op("Pow", [ctx.op("Abs", [x]), third])
    r = ctx.where(ctx.op("Less", [x, ctx.const(0, dt)]), ctx.op("Neg", [mag]), mag, dt)
    # zeros keep their sign, NaN stays NaN
    return ctx.where(ctx.op("Equal", [x, ctx.const(0, dt)]), x, r, n.outputs[0].dtype)


def _trunc(ctx, n, ins):
    x, = ins
    if not _is_float(n.inputs[0]):
        return ctx.op("Identity", [x])
    return ctx.where(ctx.op("Less", [x, ctx.const(0, n.outputs[0].dtype)]),
                            ctx.op("Ceil", [x]), ctx.op("Floor", [x]), n.outputs[0].dtype)


def _sign(ctx, n, ins):
    x, = ins
    if np.dtype(n.inputs[0].dtype).kind == "b":
        return ctx.op("Identity", [x])
    s = ctx.op("Sign", [x])
    if _is_float(n.inputs[0]):      # NaN stays NaN, as in NumPy
        s = ctx.where(ctx.op("IsNaN", [x]), x, s, n.outputs[0].dtype)
    return s


def _neg(ctx, n, ins):
    if np.dtype(n.inputs[0].dtype).kind in "ub":
        ctx.fail(f"negative of dtype {n.inputs[0].dtype}")
    return ctx.op("Neg", ins)


def _abs(ctx, n, ins):
    if np.dtype(n.inputs[0].dtype).kind == "b":
        return ctx.op("Identity", ins)
    return ctx.op("Abs", ins)


def _conj(ctx, n, ins):
    if np.dtype(n.inputs[0].dtype).kind == "c":
        ctx.fail("complex numbers")
    return ctx.op("Identity", ins)


def _zeros_like_value(ctx, x, dtype, value=0):
    return ctx.op("ConstantOfShape", [ctx.op("Shape", [x])],
                  value=ctx.onnx.numpy_helper.from_array(np.asarray([value], dtype=dtype)))


def _isfinite(ctx, n, ins):
    x, = ins
    if not _is_float(n.inputs[0]):
        return _zeros_like_value(ctx, x, np.bool_, True)
    return ctx.op("Not", [ctx.op("Or", [ctx.op("IsNaN", [x]), ctx.op("IsInf", [x])])])


def _isnan_isinf(op_type):
    def conv(ctx, n, ins):
        if not _is_float(n.inputs[0]):
            return _zeros_like_value(ctx, ins[0], np.bool_, False)
        return ctx.op(op_type, ins)
    return conv


def _logical_not(ctx, n, ins):
    x, = ins
    if np.dtype(n.inputs[0].dtype).kind != "b":
        return ctx.op("Equal", [x, ctx.const(0, n.inputs[0].dtype)])
    return ctx.op("Not", [x])


def _invert(ctx, n, ins):
    if np.dtype(n.inputs[0].dtype).kind == "b":
        return ctx.op("Not", ins)
    return ctx.op("BitwiseNot", ins)


def _as_bool(ctx, v, name):
    if np.dtype(v.dtype).kind == "b":
        return name
    return ctx.op("Not", [ctx.op("Equal", [name, ctx.const(0, v.dtype)])])


def _logical(op_type):
    def conv(ctx, n, ins):
        return ctx.op(op_type, [_as_bool(ctx, v, x) for v, x in zip(n.inputs, ins)])
    return conv


def _arith(op_type, bool_op=None):
    def conv(ctx, n, ins):
        if np.dtype(n.outputs[0].dtype).kind == "b":
            if bool_op is None:
                ctx.fail(f"{n.prim.name} of booleans")
            return ctx.op(bool_op, ins)
        return ctx.op(op_type, ins)
    return conv


def _true_divide(ctx, n, ins):
    if not _is_float(n.outputs[0]):
        ctx.fail(f"true_divide to dtype {n.outputs[0].dtype}")
    return ctx.op("Div", ins)


def _power(ctx, n, ins):
    if np.dtype(n.outputs[0].dtype).kind not in "fiu":
        ctx.fail(f"power of dtype {n.outputs[0].dtype}")
    return ctx.op("Pow", ins)


def _extremum(op_type):
    """NumPy's maximum/minimum propagate NaN from either operand (ONNX leaves NaN
    unspecified). The NaN test is skipped for a constant operand that holds none (relu's 0)."""
    def conv(ctx, n, ins):
        a, b = ins
        if np.dtype(n.outputs[0].dtype).kind == "b":
            return ctx.op("Or" if op_type == "Max" else "And", ins)
        r = ctx.op(op_type, [a, b])
        if not _is_float(n.outputs[0]):
            return r
        tests = [ctx.op("IsNaN", [x]) for x, v in zip(ins, n.inputs)
                 if not (v.kind == "c" and not np.isnan(np.asarray(v.const)).any())]
        if not tests:
            return r
        nan = tests[0] if len(tests) == 1 else ctx.op("Or", tests)
        # NaN is selected as the first operand: the sign of a zero maximum (NumPy's own
        # depends on its SIMD loop) is not the point here, NaN is
        return ctx.op("Where", [nan, ctx.op("Add", [a, b]), r])
    return conv


def _int_safe_divisor(ctx, n, a, b):
    """For integer division: (divisor with zeros replaced by 1, mask of zero divisors) — NumPy
    gives 0 where the divisor is 0 (with a warning), ONNX runtimes fail or return garbage."""
    dt = n.outputs[0].dtype
    zero = ctx.op("Equal", [b, ctx.const(0, dt)])
    return ctx.where(zero, ctx.const(1, dt), b, n.outputs[0].dtype), zero


def _floor_divide(ctx, n, ins):
    a, b = ins
    dt = n.outputs[0].dtype
    if _is_float(n.outputs[0]):
        # NumPy's floor_divide: floor((a - fmod(a, b)) / b) with its corrections; the direct
        # floor(a / b) differs for results that round across an integer
        mod = ctx.op("Mod", [a, b], fmod=1)
        div = ctx.op("Div", [ctx.op("Sub", [a, mod]), b])
        fix = ctx.op("And", [ctx.op("Not", [ctx.op("Equal", [mod, ctx.const(0, dt)])]),
                             ctx.op("Xor", [ctx.op("Less", [b, ctx.const(0, dt)]),
                                            ctx.op("Less", [mod, ctx.const(0, dt)])])])
        div = ctx.where(fix, ctx.op("Sub", [div, ctx.const(1, dt)]), div, n.outputs[0].dtype)
        fl = ctx.op("Floor", [div])
        fl = ctx.where(ctx.op("Greater", [ctx.op("Sub", [div, fl]), ctx.const(0.5, dt)]),
                              ctx.op("Add", [fl, ctx.const(1, dt)]), fl, n.outputs[0].dtype)
        # a zero quotient takes the sign of a / b (NumPy: copysign(0, a / b)); b == 0: a / b
        plain = ctx.op("Div", [a, b])
        fl = ctx.where(ctx.op("Equal", [div, ctx.const(0, dt)]),
                              ctx.op("Mul", [ctx.const(0, dt), plain]), fl, n.outputs[0].dtype)
        return ctx.where(ctx.op("Equal", [b, ctx.const(0, dt)]), plain, fl, n.outputs[0].dtype)
    if np.dtype(dt).kind not in "iu":
        ctx.fail(f"floor_divide of dtype {dt}")
    sb, zero = _int_safe_divisor(ctx, n, a, b)
    q = ctx.op("Div", [a, sb])                      # truncates toward zero
    r = ctx.op("Sub", [a, ctx.op("Mul", [q, sb])])
    if np.dtype(dt).kind == "i":
        adjust = ctx.op("And", [ctx.op("Not", [ctx.op("Equal", [r, ctx.const(0, dt)])]),
                                ctx.op("Xor", [ctx.op("Less", [r, ctx.const(0, dt)]),
                                               ctx.op("Less", [sb, ctx.const(0, dt)])])])
        q = ctx.where(adjust, ctx.op("Sub", [q, ctx.const(1, dt)]), q, n.outputs[0].dtype)
    return ctx.where(zero, ctx.const(0, dt), q, n.outputs[0].dtype)


def _remainder(ctx, n, ins):
    a, b = ins
    dt = n.outputs[0].dtype
    if _is_float(n.outputs[0]):
        m = ctx.op("Mod", [a, b], fmod=1)
        fix = ctx.op("And", [ctx.op("Not", [ctx.op("Equal", [m, ctx.const(0, dt)])]),
                             ctx.op("Xor", [ctx.op("Less", [b, ctx.const(0, dt)]),
                                            ctx.op("Less", [m, ctx.const(0, dt)])])])
        m = ctx.where(fix, ctx.op("Add", [m, b]), m, n.outputs[0].dtype)
        # a zero result takes the divisor's sign (NumPy: copysign(0, b))
        zero_m = ctx.op("Equal", [m, ctx.const(0, dt)])
        signed0 = ctx.where(ctx.op("Less", [b, ctx.const(0, dt)]),
                                   ctx.const(-0.0, dt), ctx.const(0.0, dt), n.outputs[0].dtype)
        return ctx.where(zero_m, signed0, m, n.outputs[0].dtype)
    if np.dtype(dt).kind not in "iu":
        ctx.fail(f"remainder of dtype {dt}")
    sb, zero = _int_safe_divisor(ctx, n, a, b)
    return ctx.where(zero, ctx.const(0, dt), ctx.op("Mod", [a, sb], fmod=0), n.outputs[0].dtype)


def _fmod(ctx, n, ins):
    a, b = ins
    dt = n.outputs[0].dtype
    if _is_float(n.outputs[0]):
        return ctx.op("Mod", ins, fmod=1)
    sb, zero = _int_safe_divisor(ctx, n, a, b)
    return ctx.where(zero, ctx.const(0, dt), ctx.op("Mod", [a, sb], fmod=1), n.outputs[0].dtype)


def _shift(direction):
    def conv(ctx, n, ins):
        if np.dtype(n.outputs[0].dtype).kind != "u":
            # ONNX BitShift is defined for unsigned integers only
            ctx.fail(f"{n.prim.name} of dtype {n.outputs[0].dtype}")
        return ctx.op("BitShift", ins, direction=direction)
    return conv


def _not_equal(ctx, n, ins):
    return ctx.op("Not", [ctx.op("Equal", ins)])


def _bitwise(op_type, bool_op):
    def conv(ctx, n, ins):
        if np.dtype(n.outputs[0].dtype).kind == "b":
            return ctx.op(bool_op, ins)
        if ctx.opset < 18:
            ctx.fail(f"{n.prim.name} below opset 18")
        return ctx.op(op_type, ins)
    return conv


def _convert(ctx, n, ins):
    src, dst = np.dtype(n.inputs[0].dtype), np.dtype(n.params["dtype"])
    if dst.kind == "b" and src.kind != "b":
        return _as_bool(ctx, n.inputs[0], ins[0])
    return ctx.cast(ins[0], dst)


def _select(ctx, n, ins):
    c, x, y = ins
    return ctx.where(_as_bool(ctx, n.inputs[0], c), x, y, n.outputs[0].dtype)


def _like(value):
    def conv(ctx, n, ins):
        v = n.params.get("fill_value", value)
        return _zeros_like_value(ctx, ins[0], n.outputs[0].dtype, v)
    return conv


# ------------------------------------------------------------------ reductions
def _reduction(op_type):
    def conv(ctx, n, ins):
        x, = ins
        axes, keep = tuple(n.params["axes"]), n.params["keepdims"]
        if not axes:
            return ctx.op("Identity", [x])
        if np.dtype(n.inputs[0].dtype).kind == "b":
            ctx.fail(f"{n.prim.name} of booleans")
        r = ctx.reduce(op_type, x, axes, keep)
        if op_type in ("ReduceMax", "ReduceMin") and _is_float(n.inputs[0]):
            # NumPy's max/min propagate NaN
            nan = ctx.reduce("ReduceMax", ctx.cast(ctx.op("IsNaN", [x]), np.int32), axes, keep)
            # (NaN in Where's first operand: the extremum, second, keeps its sign of zero)
            r = ctx.op("Where", [ctx.cast(nan, np.bool_), ctx.const(np.nan, n.outputs[0].dtype),
                                 r])
        return r
    return conv


def _any_all(op_type):
    def conv(ctx, n, ins):
        x, = ins
        axes, keep = tuple(n.params["axes"]), n.params["keepdims"]
        b = ctx.cast(_as_bool(ctx, n.inputs[0], x), np.int32)
        if not axes:
            return ctx.cast(b, np.bool_)
        return ctx.cast(ctx.reduce(op_type, b, axes, keep), np.bool_)
    return conv


def _argext(op_type):
    def conv(ctx, n, ins):
        x, = ins
        axis, keep = n.params["axis"], n.params["keepdims"]
        if np.dtype(n.inputs[0].dtype).kind == "b":
            x = ctx.cast(x, np.int32)
        r = ctx.op(op_type, [x], axis=axis, keepdims=int(keep), select_last_index=0)
        if _is_float(n.inputs[0]):
            # NumPy: the first NaN wins
            isn = ctx.cast(ctx.op("IsNaN", [x]), np.int32)
            first_nan = ctx.op("ArgMax", [isn], axis=axis, keepdims=int(keep))
            any_nan = ctx.cast(ctx.reduce("ReduceMax", isn, (axis,), keep), np.bool_)
            r = ctx.where(any_nan, first_nan, r, n.outputs[0].dtype)
        return r
    return conv


def _sum_to(ctx, n, ins):
    """ct summed down to like's shape (NumPy's broadcasting undone): the extra leading axes
    always; an axis where like has size 1 always (summing a size-1 axis changes nothing); an
    axis whose size in like is unknown while tracing, when it is 1 at run time (an If)."""
    h = ctx.h
    ct, like = n.inputs
    keep, like_keep = n.params.get("keep", 0), n.params.get("like_keep", 0)
    body, target = ct.shape[keep:], like.shape[like_keep:]
    lead = len(body) - len(target)
    x = ins[0]
    static = list(range(keep, keep + lead)) + [keep + lead + i for i, d in enumerate(target)
                                               if d == 1 and body[lead + i] != 1]
    if static:
        x = ctx.reduce("ReduceSum", x, static, True)
    dt = _tensor_type(ctx.onnx, ct.dtype)
    for i, d in enumerate(target):
        if d is not None or body[lead + i] == 1:
            continue
        axis = keep + lead + i
        one = ctx.op("Equal", [ctx.dim(ins[1], like_keep + i), ctx.i64([1])])
        one = ctx.op("Squeeze", [one, ctx.i64([0])])

        def branch(make):
            saved, ctx.nodes = ctx.nodes, []
            try:
                out = make()
                return h.make_graph(ctx.nodes, ctx.fresh("sum_to"), [],
                                    [h.make_tensor_value_info(out, dt, None)])
            finally:
                ctx.nodes = saved
        x_now = x
        x = ctx.op("If", [one],
                   then_branch=branch(lambda: ctx.reduce("ReduceSum", x_now, [axis], True)),
                   else_branch=branch(lambda: ctx.op("Identity", [x_now])))
    if None in target or None in ct.shape[:keep]:
        tail = ctx.op("Shape", [ins[1]], start=like_keep)
        if keep:
            tail = ctx.op("Concat", [ctx.op("Shape", [ins[0]], start=0, end=keep), tail], axis=0)
    else:
        tail = ctx.i64(list(ct.shape[:keep]) + list(target))
    return ctx.op("Reshape", [x, tail])


# ------------------------------------------------------------------ shape
def _reshape(ctx, n, ins):
    shape = list(n.params["shape"])
    keep = n.params.get("keep", 0)
    if 0 in shape:
        if keep or -1 in shape:
            ctx.fail("reshape to a shape with a zero and an inferred size")
        return ctx.op("Reshape", [ins[0], ctx.i64(shape)], allowzero=1)
    # a leading 0 copies the input's size (the `keep` axes)
    return ctx.op("Reshape", [ins[0], ctx.i64([0] * keep + shape)])


def _reshape_like(ctx, n, ins):
    x, like = ins
    keep, like_keep = n.params.get("keep", 0), n.params.get("like_keep", 0)
    tail = ctx.op("Shape", [like], start=like_keep)
    if keep:
        tail = ctx.op("Concat", [ctx.op("Shape", [x], start=0, end=keep), tail], axis=0)
    return ctx.op("Reshape", [x, tail])


def _with_kept(ctx, x, sizes, keep):
    """The run-time sizes `sizes` after x's first `keep` sizes (a batch axis)."""
    if not keep:
        return sizes
    return ctx.op("Concat", [ctx.op("Shape", [x], start=0, end=keep), sizes], axis=0)


def _reshape_dynamic(ctx, n, ins):
    x, sizes = ins
    # allowzero: a size 0 is a size, as in NumPy (not "copy the input's size")
    return ctx.op("Reshape", [x, _with_kept(ctx, x, sizes, n.params.get("keep", 0))],
                  allowzero=1)


def _broadcast_dynamic(ctx, n, ins):
    x, sizes = ins
    keep = n.params.get("keep", 0)
    static = n.params["static"]
    inner = n.inputs[0].shape[keep:]
    lead = len(static) - len(inner)
    # Expand broadcasts both ways; NumPy's broadcast_to only stretches sizes 1: the same
    # when every size of the operand is 1 or the known target size
    for i, d in enumerate(inner):
        if d != 1 and (d is None or d != static[lead + i]):
            ctx.fail(f"broadcast of an operand of shape {tuple(inner)} to run-time sizes "
                     f"{tuple(static)}")
    return ctx.op("Expand", [x, _with_kept(ctx, x, sizes, keep)])


def _slice_dynamic(ctx, n, ins):
    x, ops = ins[0], list(ins[1:])
    parts = n.params["parts"]
    if parts[2][0] == "d":
        ctx.fail("a slice whose step is known only at run time")
    step = 1 if parts[2][1] is None else parts[2][1]
    big = np.iinfo(np.int64).max
    defaults = (0 if step > 0 else big, big if step > 0 else -big - 1)
    bounds = []
    for p, default in zip(parts[:2], defaults):
        if p[0] == "d":
            bounds.append(ctx.op("Reshape", [ops.pop(0), ctx.i64([1])]))
        else:
            bounds.append(ctx.i64([default if p[1] is None else p[1]]))
    return ctx.op("Slice", [x, bounds[0], bounds[1], ctx.i64([n.params["axis"]]),
                            ctx.i64([step])])


def _transpose(ctx, n, ins):
    return ctx.op("Transpose", ins, perm=list(n.params["perm"]))


def _expand_dims(ctx, n, ins):
    axes = list(n.params["axes"])
    if not axes:
        return ctx.op("Identity", ins)
    return ctx.op("Unsqueeze", [ins[0], ctx.i64(axes)])


def _squeeze(ctx, n, ins):
    axes = list(n.params["axes"])
    if not axes:
        return ctx.op("Identity", ins)
    return ctx.op("Squeeze", [ins[0], ctx.i64(axes)])


def _broadcast_to(ctx, n, ins):
    shape = [1 if d is None else d for d in n.params["shape"]]
    return ctx.op("Expand", [ins[0], ctx.i64(shape)])


def _concatenate(ctx, n, ins):
    return ctx.op("Concat", ins, axis=n.params["axis"])


def _split_like(ctx, n, ins):
    ct, xs = ins[0], ins[1:]
    axis = n.params["axis"]
    xa = axis if n.params.get("x_axis") is None else n.params["x_axis"]
    sizes = ctx.op("Concat", [ctx.dim(x, xa) for x in xs], axis=0)
    outs = ctx.op("Split", [ct, sizes], n_out=len(xs), axis=axis)
    return outs if len(xs) > 1 else [outs]


def _full(e):
    return e == ("s", None, None, None)


def _getitem(ctx, n, ins):
    spec = n.params["spec"]
    x, arrays = ins[0], ins[1:]
    xv = n.inputs[0]
    kinds = [e[0] for e in spec]
    if "a" in kinds:
        # one index array along one axis, every other axis whole: a gather (np.take)
        if kinds.count("a") == 1 and all(k in "ae" or _full(e) for k, e in zip(kinds, spec)) \
                and kinds.count("e") <= 1:
            pos = kinds.index("a")
            if "e" in kinds and kinds.index("e") < pos:
                axis = xv.ndim - (len(spec) - pos)
            else:
                axis = pos - (1 if "e" in kinds[:pos] else 0)
            idx = arrays[0]
            if np.dtype(n.inputs[1].dtype) != np.int64:
                idx = ctx.cast(idx, np.int64)
            return ctx.op("Gather", [x, idx], axis=axis)
        return _advanced_getitem(ctx, n, x, arrays)
    # basic indexing: an Ellipsis expands to whole slices
    entries = []
    used = sum(1 for k in kinds if k in "si")
    for e in spec:
        if e[0] == "e":
            entries.extend([("s", None, None, None)] * (xv.ndim - used))
        else:
            entries.append(e)
    entries.extend([("s", None, None, None)] * (xv.ndim - sum(1 for e in entries if e[0] in "si")))
    starts, ends, axes, steps, squeeze, newaxes = [], [], [], [], [], []
    dim = 0
    out_pos = 0
    for e in entries:
        if e[0] == "n":
            newaxes.append(out_pos)
            out_pos += 1
            continue
        if e[0] == "i":
            k = e[1]
            starts.append(k)
            ends.append(_BIG if k == -1 else k + 1)
            steps.append(1)
            axes.append(dim)
            squeeze.append(dim)
        elif not _full(e):
            _, a, b, s = e
            s = 1 if s is None else s
            if s > 0:
                starts.append(0 if a is None else a)
                ends.append(_BIG if b is None else b)
            else:
                starts.append(_BIG if a is None else a)
                ends.append(_SMALL if b is None else b)
            steps.append(s)
            axes.append(dim)
            out_pos += 1
        else:
            out_pos += 1
        dim += 1
    r = x
    if axes:
        r = ctx.op("Slice", [r, ctx.i64(starts), ctx.i64(ends), ctx.i64(axes), ctx.i64(steps)])
    if squeeze:
        r = ctx.op("Squeeze", [r, ctx.i64(squeeze)])
    if newaxes:
        r = ctx.op("Unsqueeze", [r, ctx.i64(newaxes)])
    if r is x:
        r = ctx.op("Identity", [x])
    return r


def _expand_ellipsis(spec, ndim):
    used = sum(1 for e in spec if e[0] in "sia")
    out = []
    for e in spec:
        if e[0] == "e":
            out.extend([("s", None, None, None)] * (ndim - used))
            used = ndim
        else:
            out.append(e)
    out.extend([("s", None, None, None)] * (ndim - sum(1 for e in out if e[0] in "sia")))
    return out


def _advanced_getitem(ctx, n, x, arrays):
    """Integer arrays (and integers) on several axes, every other axis whole: the indexed axes
    go first, the index arrays broadcast and stack into a GatherND, and the result block goes
    back in place when the indexed axes were adjacent (NumPy's rule)."""
    xv = n.inputs[0]
    entries = _expand_ellipsis(n.params["spec"], xv.ndim)
    if any(e[0] == "n" for e in entries) or any(e[0] == "s" and not _full(e) for e in entries):
        ctx.fail("advanced indexing mixed with slices or newaxis")
    adv, idx, it = [], [], iter(zip(arrays, n.inputs[1:]))
    for d, e in enumerate(entries):
        if e[0] == "a":
            a, v = next(it)
            idx.append(a if np.dtype(v.dtype) == np.int64 else ctx.cast(a, np.int64))
            adv.append(d)
        elif e[0] == "i":
            idx.append(ctx.const(np.int64(e[1])))
            adv.append(d)
    # negative indices count from the end (NumPy); GatherND's support for them varies
    idx = [ctx.op("Where", [ctx.op("Less", [a, ctx.const(np.int64(0))]),
                            ctx.op("Add", [a, ctx.dim(x, d)]), a]) for a, d in zip(idx, adv)]
    rest = [d for d in range(xv.ndim) if d not in adv]
    xt = x if adv + rest == list(range(xv.ndim)) else \
        ctx.op("Transpose", [x], perm=adv + rest)
    # the common shape of the index arrays, read at run time
    total = idx[0]
    for a in idx[1:]:
        total = ctx.op("Add", [total, a])
    shape = ctx.op("Shape", [total])
    last = ctx.i64([-1])
    cols = [ctx.op("Unsqueeze", [ctx.op("Expand", [a, shape]), last]) for a in idx]
    r = ctx.op("GatherND", [xt, ctx.op("Concat", cols, axis=-1)])
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    if adjacent and adv[0] > 0:
        nb = n.outputs[0].ndim - len(rest)
        p = adv[0]
        perm = list(range(nb, nb + p)) + list(range(nb)) + list(range(nb + p, nb + len(rest)))
        r = ctx.op("Transpose", [r], perm=perm)
    return r


def _basic_positions(ctx, n, x):
    """For an index of slices, integers, newaxis and Ellipsis (no arrays): the positions it
    selects in `x` as an int64 tensor (*region, ndim), read at run time (each axis's indices
    are arange(size)[slice], so NumPy's slice clamping holds), and the region's shape."""
    xv = n.inputs[0]
    entries = [e for e in _expand_ellipsis(n.params["spec"], xv.ndim) if e[0] != "n"]
    vecs = []
    for d, e in enumerate(entries):
        r = ctx.op("Range", [ctx.const(np.int64(0)),
                             ctx.op("Squeeze", [ctx.dim(x, d), ctx.i64([0])]),
                             ctx.const(np.int64(1))])
        if e[0] == "i":
            k = e[1]
            r = ctx.op("Slice", [r, ctx.i64([k]), ctx.i64([_BIG if k == -1 else k + 1])])
        elif not _full(e):
            _, a, b, st = e
            st = 1 if st is None else st
            lo = (0 if a is None else a) if st > 0 else (_BIG if a is None else a)
            hi = (_BIG if b is None else b) if st > 0 else (_SMALL if b is None else b)
            r = ctx.op("Slice", [r, ctx.i64([lo]), ctx.i64([hi]), ctx.i64([0]), ctx.i64([st])])
        vecs.append(r)
    region = ctx.op("Concat", [ctx.op("Shape", [v]) for v in vecs], axis=0)
    cols = []
    for d, v in enumerate(vecs):
        shape = [1] * len(vecs)
        shape[d] = -1
        grid = ctx.op("Expand", [ctx.op("Reshape", [v, ctx.i64(shape)]), region])
        cols.append(ctx.op("Unsqueeze", [grid, ctx.i64([-1])]))
    return ctx.op("Concat", cols, axis=-1), region


class _Fake:
    """A stand-in node for reusing a converter on part of another node's work."""
    def __init__(self, x, params):
        self.inputs, self.params = (x,), params


def _scatter_one_array(ctx, n, ins, reduction):
    """x[..., idx, ...] = v (or +=, duplicates summed) for one index array on one axis, every
    other axis whole: that axis goes first, a ScatterND writes rows, and it goes back."""
    xv = n.inputs[0]
    entries = _expand_ellipsis(n.params["spec"], xv.ndim)
    axis = [e[0] for e in entries].index("a")
    x, v, idx = ins[0], ins[1], ins[2]
    if np.dtype(n.inputs[2].dtype) != np.int64:
        idx = ctx.cast(idx, np.int64)
    size = ctx.dim(x, axis)
    idx = ctx.op("Where", [ctx.op("Less", [idx, ctx.const(np.int64(0))]),
                           ctx.op("Add", [idx, size]), idx])
    perm = [axis] + [d for d in range(xv.ndim) if d != axis]
    inv = list(np.argsort(perm))
    # the values broadcast to the shape of x[..., idx, ...]
    vals = ctx.op("Expand", [v, ctx.op("Shape", [ctx.op("Gather", [x, idx], axis=axis)])])
    if n.inputs[2].ndim != 1:
        ctx.fail(f"{n.prim.name} with a {n.inputs[2].ndim}-d index array")
    xt = ctx.op("Transpose", [x], perm=perm) if axis else x
    vt = ctx.op("Transpose", [vals], perm=perm) if axis else vals
    kw = {"reduction": "add"} if reduction == "add" else {}
    r = ctx.op("ScatterND", [xt, ctx.op("Unsqueeze", [idx, ctx.i64([-1])]), vt], **kw)
    return ctx.op("Transpose", [r], perm=inv) if axis else r


def _scatter(reduction):
    """x[index] = v (or += v) for an index of slices and integers into a static shape: the
    positions are computed now, the values broadcast to them, and one ScatterND writes them.
    One index array on one axis (the gradient of a gather) is written by rows."""
    def conv(ctx, n, ins):
        x, v = ins[0], ins[1]
        spec = n.params["spec"]
        kinds = [e[0] for e in spec]
        if ctx.opset < 16:
            ctx.fail(f"{n.prim.name} below opset 16")
        if kinds.count("a") == 1 and kinds.count("e") <= 1 and all(
                k in "ae" or _full(e) for k, e in zip(kinds, spec)):
            if reduction is None:
                # duplicates: NumPy keeps the last write, ScatterND leaves it unspecified
                ctx.fail("index_update with an index array (repeated indices)")
            return _scatter_one_array(ctx, n, ins, reduction)
        if "a" in kinds:
            ctx.fail(f"{n.prim.name} with index arrays mixed with other indices")
        pos, region = _basic_positions(ctx, n, x)
        # v broadcast to x[index], then laid out as the region (a reshape: integers keep a
        # size-1 axis there, newaxis entries have size 1)
        selected = _getitem(ctx, _Fake(n.inputs[0], n.params), [x])
        vals = ctx.op("Reshape", [ctx.op("Expand", [v, ctx.op("Shape", [selected])]), region])
        if reduction == "add":
            if np.dtype(n.outputs[0].dtype).kind == "b":
                ctx.fail("index_add of booleans")
            return ctx.op("ScatterND", [x, pos, vals], reduction="add")
        return ctx.op("ScatterND", [x, pos, vals])
    return conv


def _iota(ctx, n, ins):
    x, = ins
    axis = n.params["axis"]
    nd = n.inputs[0].ndim
    size = ctx.op("Squeeze", [ctx.dim(x, axis), ctx.i64([0])])
    r = ctx.op("Range", [ctx.const(np.int64(0)), size, ctx.const(np.int64(1))])
    shape = [1] * nd
    shape[axis] = -1
    return ctx.op("Reshape", [r, ctx.i64(shape)])


def _nonzero(ctx, n, ins):
    x = ins[0]
    if n.inputs[0].ndim == 0:
        x = ctx.op("Reshape", [x, ctx.i64([1])])
    nz = ctx.op("NonZero", [x])
    k = len(n.outputs)
    return [ctx.op("Gather", [nz, ctx.const(np.int64(i))], axis=0) for i in range(k)]


def _shape(ctx, n, ins):
    return ctx.cast(ctx.op("Shape", ins), n.params.get("out_type", np.int32))


# ------------------------------------------------------------------ linalg
def _matmul(ctx, n, ins):
    if np.dtype(n.outputs[0].dtype).kind not in "fiu":
        ctx.fail(f"matmul of dtype {n.outputs[0].dtype}")
    return ctx.op("MatMul", ins)


def _einsum(ctx, n, ins):
    eq = n.params["subscripts"].replace(" ", "")
    return ctx.op("Einsum", ins, equation=eq)


# ------------------------------------------------------------------ scans, sorting
def _cumsum(ctx, n, ins):
    return ctx.op("CumSum", [ins[0], ctx.const(np.int64(n.params["axis"]))],
                  reverse=int(bool(n.params.get("reverse", False))))


def _topk_sort(which):
    """Sorting as a TopK over the whole axis (ONNX: equal keys keep their index order, so the
    order is stable). NaN sorts last in NumPy, but TopK's place for NaN is unspecified: NaN is
    sorted as +inf, then a second stable sort on isnan moves the NaNs after every number."""
    def conv(ctx, n, ins):
        x, = ins
        v = n.inputs[0]
        if v.ndim == 0:
            ctx.fail(f"{n.prim.name} of a 0-d array")
        kind = n.params.get("kind")
        if which == "indices" and kind not in ("stable", "mergesort"):
            ctx.fail(f"argsort with kind={kind!r} (NumPy's order of equal elements is then its "
                     f"own; use kind='stable', which ONNX TopK reproduces)")
        if np.dtype(v.dtype).kind == "b":
            ctx.fail(f"{n.prim.name} of booleans")
        axis = n.params["axis"] % v.ndim
        k = ctx.dim(x, axis)
        if not _is_float(v):
            vals, idx = ctx.op("TopK", [x, k], n_out=2, axis=axis, largest=0, sorted=1)
            return vals if which == "values" else idx
        isnan = ctx.op("IsNaN", [x])
        key = ctx.where(isnan, ctx.const(np.inf, v.dtype), x, n.inputs[0].dtype)
        _, idx1 = ctx.op("TopK", [key, k], n_out=2, axis=axis, largest=0, sorted=1)
        nan1 = ctx.cast(ctx.op("GatherElements", [isnan, idx1], axis=axis), np.int32)
        _, idx2 = ctx.op("TopK", [nan1, k], n_out=2, axis=axis, largest=0, sorted=1)
        idx = ctx.op("GatherElements", [idx1, idx2], axis=axis)
        if which == "indices":
            return idx
        return ctx.op("GatherElements", [x, idx], axis=axis)
    return conv


# ------------------------------------------------------------------ variables, random
def _read_variable(ctx, n, ins):
    var = n.params["var"]
    return ctx.op("Identity", [ctx.const(var.numpy())])


def _assign_variable(ctx, n, ins):
    ctx.fail("assigning a Variable (an exported graph is a pure function: export a function "
             "that returns the new value instead)")


_RANDOM = {"standard_normal": ("RandomNormal", {}), "random_sample": ("RandomUniform", {}),
           "normal": ("RandomNormal", {"loc": "mean", "scale": "scale"}),
           "uniform": ("RandomUniform", {"low": "low", "high": "high"})}


def _random(ctx, n, ins):
    p = n.params
    m = _RANDOM.get(p["method"])
    dt = np.dtype(p["dtype"])
    if m is None or any(not nm.startswith("!") for nm in p["names"]) or None in p["shape"] \
            or dt.kind != "f":
        ctx.fail(f"random draw '{p['method']}' (only standard_normal, normal, random_sample "
                 f"and uniform with constant parameters and a static shape map to ONNX)")
    op_type, names = m
    attrs = {}
    for k, v in dict(p["static"]).items():
        if k == "size":
            continue
        if k not in names:
            ctx.fail(f"random draw '{p['method']}' with parameter {k}")
        attrs[names[k]] = float(v)
    return ctx.op(op_type, [], dtype=_tensor_type(ctx.onnx, dt), shape=list(p["shape"]), **attrs)


# ------------------------------------------------------------------ control flow
def _cond(ctx, n, ins):
    h = ctx.h
    branches = n.params["branches"]
    index, ops = ins[0], ins[1:]
    iv = n.inputs[0]
    nout = len(n.outputs)

    def branch_graph(b):
        env = {v.id: x for v, x in zip(b.graph.inputs, ops)}
        return _subgraph(ctx, b.graph, env, _table(), "branch")

    def as_list(r):
        return r if isinstance(r, list) else [r]

    if len(branches) == 1:
        env = {v.id: x for v, x in zip(branches[0].graph.inputs, ops)}
        _emit_graph(ctx, branches[0].graph, env, _table())
        return [ctx.op("Identity", [env[o.id]]) for o in branches[0].graph.outputs]
    if np.dtype(iv.dtype).kind == "b":
        if len(branches) != 2:
            ctx.fail("a boolean cond with other than two branches")
        # cond(pred) traces [false_fn, true_fn]
        return as_list(ctx.op("If", [index], n_out=nout, then_branch=branch_graph(branches[1]),
                              else_branch=branch_graph(branches[0])))

    def chain(k):
        """If index == k: branch k, else the rest; an out-of-range index takes the last branch
        (as ndflow's switch_case does). Returns the If's outputs."""
        test = ctx.op("Equal", [index, ctx.const(k, iv.dtype)])
        if k + 1 == len(branches) - 1:
            else_g = branch_graph(branches[k + 1])
        else:
            saved, ctx.nodes = ctx.nodes, []
            try:
                ids = [ctx.op("Identity", [o]) for o in as_list(chain(k + 1))]
                else_g = h.make_graph(ctx.nodes, ctx.fresh("switch"), [], [
                    h.make_tensor_value_info(nm, _tensor_type(ctx.onnx, o.dtype), None)
                    for nm, o in zip(ids, n.outputs)])
            finally:
                ctx.nodes = saved
        return ctx.op("If", [test], n_out=nout, then_branch=branch_graph(branches[k]),
                      else_branch=else_g)

    return as_list(chain(0))


def _while(ctx, n, ins):
    h = ctx.h
    p = n.params
    if p["record"]:
        ctx.fail("a while loop recording its states (a gradient of a loop)")
    nc = p["n_consts"]
    consts, init = ins[:nc], ins[nc:]
    cond_g, body_g = p["cond_graph"].graph, p["body_graph"].graph
    # the first test runs before the loop, in the enclosing graph
    env = {v.id: x for v, x in zip(cond_g.inputs, list(consts) + list(init))}
    _emit_graph(ctx, cond_g, env, _table())
    first = env[cond_g.outputs[0].id]
    first = ctx.op("Reshape", [ctx.cast(first, np.bool_), ctx.i64([])])
    # the body: formal inputs (iteration, condition, loop values); its outputs: the next
    # condition (the cond graph on the new values) and the new values
    it_name, c_name = ctx.fresh("iter"), ctx.fresh("cond_in")
    carried = [ctx.fresh("carried") for _ in init]
    formals = [(None, h.make_tensor_value_info(it_name, ctx.onnx.TensorProto.INT64, [])),
               (None, h.make_tensor_value_info(c_name, ctx.onnx.TensorProto.BOOL, []))]
    vals = n.inputs[nc:]
    for nm, v in zip(carried, vals):
        formals.append((None, h.make_tensor_value_info(nm, _tensor_type(ctx.onnx, v.dtype), None)))
    saved, ctx.nodes = ctx.nodes, []
    try:
        benv = {v.id: x for v, x in zip(body_g.inputs, list(consts) + carried)}
        _emit_graph(ctx, body_g, benv, _table())
        new_vals = [benv[o.id] for o in body_g.outputs]
        cenv = {v.id: x for v, x in zip(cond_g.inputs, list(consts) + new_vals)}
        _emit_graph(ctx, cond_g, cenv, _table())
        nxt = ctx.op("Reshape", [ctx.cast(cenv[cond_g.outputs[0].id], np.bool_), ctx.i64([])])
        outs = [nxt] + [ctx.op("Identity", [v]) for v in new_vals]
        out_infos = [h.make_tensor_value_info(outs[0], ctx.onnx.TensorProto.BOOL, [])] + [
            h.make_tensor_value_info(nm, _tensor_type(ctx.onnx, v.dtype), None)
            for nm, v in zip(outs[1:], vals)]
        body = h.make_graph(ctx.nodes, ctx.fresh("loop_body"), [vi for _, vi in formals],
                            out_infos)
    finally:
        ctx.nodes = saved
    trip = "" if p["max_iter"] is None else ctx.const(np.int64(p["max_iter"]))
    res = ctx.op("Loop", [trip, first] + list(init), n_out=len(init), body=body)
    return res if len(init) > 1 else [res]


def _scan(ctx, n, ins):
    """scan as an ONNX Loop: the carries are loop values, each step reads xs[i] by Gather, the
    per-step results are the Loop's scan outputs (flipped back for a reverse scan)."""
    h = ctx.h
    p = n.params
    if p["record"]:
        ctx.fail("a scan recording its carries (a gradient of a scan)")
    nc, ncar = p["n_consts"], p["n_carry"]
    consts, init, xs = ins[:nc], ins[nc:nc + ncar], ins[nc + ncar:]
    body_g = p["body"].graph
    if xs:
        length = ctx.dim(xs[0], 0)
    else:
        length = ctx.i64([p["length"]])
    length = ctx.op("Squeeze", [length, ctx.i64([0])])
    it_name, c_name = ctx.fresh("iter"), ctx.fresh("cond_in")
    carried = [ctx.fresh("carried") for _ in init]
    cvars = n.inputs[nc:nc + ncar]
    formals = [h.make_tensor_value_info(it_name, ctx.onnx.TensorProto.INT64, []),
               h.make_tensor_value_info(c_name, ctx.onnx.TensorProto.BOOL, [])] + [
        h.make_tensor_value_info(nm, _tensor_type(ctx.onnx, v.dtype), None)
        for nm, v in zip(carried, cvars)]
    saved, ctx.nodes = ctx.nodes, []
    try:
        i = it_name
        if p["reverse"]:
            i = ctx.op("Sub", [ctx.op("Sub", [length, ctx.const(np.int64(1))]), it_name])
        steps = [ctx.op("Gather", [x, i], axis=0) for x in xs]
        benv = {v.id: x for v, x in zip(body_g.inputs, list(consts) + carried + steps)}
        _emit_graph(ctx, body_g, benv, _table())
        res = [ctx.op("Identity", [benv[o.id]]) for o in body_g.outputs]
        keep = ctx.op("Identity", [c_name])
        outs = [h.make_tensor_value_info(keep, ctx.onnx.TensorProto.BOOL, [])] + [
            h.make_tensor_value_info(nm, _tensor_type(ctx.onnx, o.dtype), None)
            for nm, o in zip(res, body_g.outputs)]
        body = h.make_graph(ctx.nodes, ctx.fresh("scan_body"), formals, outs)
    finally:
        ctx.nodes = saved
    true = ctx.const(np.bool_(True))
    trip = ctx.op("Reshape", [length, ctx.i64([])])
    out = ctx.op("Loop", [trip, true] + list(init), n_out=len(body_g.outputs), body=body)
    out = out if isinstance(out, list) else [out]
    if p["reverse"]:
        out = out[:ncar] + [ctx.op("Slice", [y, ctx.i64([-1]), ctx.i64([_SMALL]), ctx.i64([0]),
                                             ctx.i64([-1])]) for y in out[ncar:]]
    return out


# ================================================================== the table
_TABLE = None


def _table():
    """Primitive -> converter (built on first use: the primitives' modules are imported then)."""
    global _TABLE
    if _TABLE is not None:
        return _TABLE
    from ..primitives import elementwise as E, elementwise_extra as X, reduction as R
    from ..primitives import shape as S, indexing as I, linalg as L, cumulative as C
    from ..primitives import sorting as So, random as Rn, misc as M
    from ..graph import control as Cf
    from ..primitives import linalg_decomp as D
    from ..graph.function import shape_p
    from ..train.variable import read_var_p, assign_var_p
    t = {
        E.neg_p: _neg, E.positive_p: _identity, E.exp_p: _float_only("Exp"), E.exp2_p: _exp2,
        E.expm1_p: _expm1, E.log_p: _float_only("Log"), E.log2_p: _log_base(2.0),
        E.log10_p: _log_base(10.0), E.log1p_p: _log1p, E.sqrt_p: _float_only("Sqrt"),
        E.cbrt_p: _cbrt, E.sin_p: _float_only("Sin"), E.cos_p: _float_only("Cos"),
        E.tan_p: _float_only("Tan"), E.arcsin_p: _float_only("Asin"),
        E.arccos_p: _float_only("Acos"), E.arctan_p: _float_only("Atan"),
        E.sinh_p: _float_only("Sinh"), E.cosh_p: _float_only("Cosh"),
        E.tanh_p: _float_only("Tanh"), E.arcsinh_p: _float_only("Asinh"),
        E.arccosh_p: _float_only("Acosh"), E.arctanh_p: _float_only("Atanh"),
        E.reciprocal_p: _float_only("Reciprocal"), E.abs_p: _abs, E.sign_p: _sign,
        E.floor_p: _float_only("Floor"), E.ceil_p: _float_only("Ceil"), E.trunc_p: _trunc,
        E.rint_p: _float_only("Round"), E.conj_p: _conj,
        E.logical_not_p: _logical_not, E.invert_p: _invert, E.isnan_p: _isnan_isinf("IsNaN"),
        E.isinf_p: _isnan_isinf("IsInf"), E.isfinite_p: _isfinite,
        E.convert_p: _convert, E.copy_p: _identity,
        E.add_p: _arith("Add", "Or"), E.sub_p: _arith("Sub"), E.mul_p: _arith("Mul", "And"),
        E.div_p: _true_divide, E.floordiv_p: _floor_divide, E.rem_p: _remainder,
        E.pow_p: _power, E.max_p: _extremum("Max"), E.min_p: _extremum("Min"),
        E.bitwise_and_p: _bitwise("BitwiseAnd", "And"), E.bitwise_or_p: _bitwise("BitwiseOr", "Or"),
        E.bitwise_xor_p: _bitwise("BitwiseXor", "Xor"),
        E.eq_p: _simple("Equal"), E.ne_p: _not_equal, E.lt_p: _simple("Less"),
        E.le_p: _simple("LessOrEqual"), E.gt_p: _simple("Greater"),
        E.ge_p: _simple("GreaterOrEqual"), E.logical_and_p: _logical("And"),
        E.logical_or_p: _logical("Or"), E.logical_xor_p: _logical("Xor"),
        E.select_p: _select, E.zeros_like_p: _like(0), E.ones_like_p: _like(1),
        E.full_like_p: _like(None), X.fmod_p: _fmod,
        X.logaddexp_p: _logaddexp(False), X.logaddexp2_p: _logaddexp(True),
        R.reduce_sum_p: _reduction("ReduceSum"), R.reduce_max_p: _reduction("ReduceMax"),
        R.reduce_min_p: _reduction("ReduceMin"), R.reduce_prod_p: _reduction("ReduceProd"),
        R.reduce_any_p: _any_all("ReduceMax"), R.reduce_all_p: _any_all("ReduceMin"),
        R.sum_to_p: _sum_to, R.argmax_p: _argext("ArgMax"), R.argmin_p: _argext("ArgMin"),
        S.reshape_p: _reshape, S.reshape_like_p: _reshape_like, S.transpose_p: _transpose,
        S.expand_dims_p: _expand_dims, S.squeeze_p: _squeeze, S.broadcast_to_p: _broadcast_to,
        S.concatenate_p: _concatenate, S.split_like_p: _split_like,
        S.reshape_dynamic_p: _reshape_dynamic, S.broadcast_dynamic_p: _broadcast_dynamic,
        I.slice_dynamic_p: _slice_dynamic,
        I.getitem_p: _getitem, I.index_update_p: _scatter(None),
        I.index_add_p: _scatter("add"), I.iota_p: _iota, I.nonzero_p: _nonzero,
        L.matmul_p: _matmul, L.einsum_p: _einsum, D.det_p: _float_only("Det"),
        E.left_shift_p: _shift("LEFT"), E.right_shift_p: _shift("RIGHT"), C.cumsum_p: _cumsum,
        So.sort_p: _topk_sort("values"), So.argsort_p: _topk_sort("indices"),
        Rn.random_draw_p: _random, M.stop_gradient_p: _identity, M.own_result_p: _identity,
        M.runtime_warning_p: _identity, shape_p: _shape,
        read_var_p: _read_variable, assign_var_p: _assign_variable,
        Cf.cond_p: _cond, Cf.cond_effect_p: _cond, Cf.while_p: _while, Cf.while_effect_p: _while,
        Cf.scan_p: _scan, Cf.scan_effect_p: _scan,
    }
    _TABLE = t
    return t


def supported_primitives():
    """The names of the primitives `export` translates (some only for some dtypes or
    parameters: the error then says which)."""
    return sorted({p.name for p, c in _table().items() if c is not _assign_variable})


# ================================================================== export
def _export_graph(g):
    """The traced graph with the algebraic passes, without fusion and buffer reuse."""
    from ..graph import passes as P
    from ..graph.fusion import elementwise_fusion
    from ..graph.memory import reuse_buffers
    return P.optimize(g, [p for p in P.PASSES if p not in (elementwise_fusion, reuse_buffers)])


def export(fn, input_signature, path=None, opset=None, input_names=None, output_names=None):
    """Trace `fn` for `input_signature` and write its graph as an ONNX model to `path`.

    fn: an `nf.function` or a plain Python function (it is wrapped in `nf.function`).
    input_signature: a list of `nf.TensorSpec`, one per positional argument; a `None` size
    becomes a symbolic dimension (named after the input and axis), so the file accepts any size
    there. Input names come from the specs' names (or `input_names`), else x0, x1, ...; outputs
    are the flattened results, named `output_names` or out0, out1, ...
    opset: the ONNX opset (default 18; 13 at least).

    Variables read by `fn` are stored with their current values (as initializers). Returns the
    `onnx.ModelProto` (also written to `path` when given). Unlike tf2onnx, an operation that
    has no exact ONNX translation is an error (`UnsupportedOperationError`, naming the
    primitive and the line of your code that made it), never an approximation."""
    onnx = _onnx()
    from ..graph.function import Function, TensorSpec, function
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if opset < MIN_OPSET:
        raise ValueError(f"nf.onnx.export: opset must be at least {MIN_OPSET}, got {opset}")
    specs = list(input_signature)
    for s in specs:
        if not isinstance(s, TensorSpec):
            raise TypeError(f"nf.onnx.export: input_signature must hold nf.TensorSpec, got "
                            f"{type(s).__name__}")
        if s.shape is None:
            raise ValueError(f"nf.onnx.export: {s} needs a shape (its rank), with None for "
                             f"sizes that may vary")
    f = fn if isinstance(fn, Function) else function(fn)
    cf = f.get_concrete_function(*specs)
    g = _export_graph(cf.traced_graph)
    h = onnx.helper
    ctx = _Ctx(onnx, opset)
    names = list(input_names) if input_names is not None else [
        s.name or "x%d" % i for i, s in enumerate(specs)]
    if len(names) != len(g.inputs) or len(set(names)) != len(names):
        raise ValueError(f"nf.onnx.export: need {len(g.inputs)} distinct input names, got "
                         f"{names}")
    env, inputs = {}, []
    for nm, v in zip(names, g.inputs):
        env[v.id] = nm
        dims = [("%s_dim%d" % (nm, i)) if d is None else d for i, d in enumerate(v.shape)]
        inputs.append(h.make_tensor_value_info(nm, _tensor_type(onnx, v.dtype), dims))
    _emit_graph(ctx, g, env, _table())
    # outputs: every result leaf, graph values and constants alike
    leaves, it = [], iter(g.outputs)
    for kind, c in zip(cf.out_kinds, cf.out_consts):
        if kind == "v":
            v = next(it)
            leaves.append((env[v.id], v.dtype, v.shape))
        else:
            if c is None or isinstance(c, (str, bytes)):
                raise ValueError(f"nf.onnx.export: the function returns {c!r}, which is not "
                                 f"an array")
            a = np.asarray(c)
            leaves.append((ctx.const(a), a.dtype, a.shape))
    onames = list(output_names) if output_names is not None else [
        "out%d" % i for i in range(len(leaves))]
    if len(onames) != len(leaves):
        raise ValueError(f"nf.onnx.export: {len(leaves)} outputs, {len(onames)} output names")
    outputs = []
    for nm, (src, dt, shape) in zip(onames, leaves):
        ctx.nodes.append(h.make_node("Identity", [src], [nm], name=ctx.fresh("n_out")))
        outputs.append(h.make_tensor_value_info(nm, _tensor_type(onnx, dt), list(shape)))
    graph = h.make_graph(ctx.nodes, cf.name if cf.name.isidentifier() else "ndflow_function",
                         inputs, outputs, initializer=ctx.inits)
    ops = [h.make_opsetid("", opset)]
    model = h.make_model(graph, opset_imports=ops, producer_name="ndflow",
                         ir_version=h.find_min_ir_version_for(ops))
    if path is not None:
        onnx.save(model, str(path))
    return model
