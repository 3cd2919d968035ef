"""The emitter the converters write with: ONNX nodes, constants, fresh names, and the few
constructions every converter needs to stay exact (a select that keeps the sign of zero, a
check that fails the run the way NumPy raises, a refusal that names the primitive).

Two facts about onnxruntime shape this module (both checked by tests/test_onnx_primitives.py):
`Where(c, x, y)` returns +0.0 where `c` holds and `x` is -0.0 (its else operand keeps its
sign), and ONNX has no operator that raises: a check is a `Reshape` that cannot succeed when
the check fails, named after the error, so the run fails with NumPy's message in it.
"""
import numpy as np

from ..core import dtypes as D
from ..core.dtypes import is_float
from ..graph.ir import Node, Var

_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


class UnsupportedOperationError(NotImplementedError):
    """An operation of the traced function has no exact ONNX translation (or not with these
    parameters or dtypes). The message names the primitive, why, and the user's line that
    created it."""


def tensor_type(onnx, dtype):
    d = np.dtype(dtype)
    if d.kind == "c":
        raise UnsupportedOperationError(
            f"nf.onnx.export: dtype {d} cannot be exported (onnxruntime has no complex kernels)")
    return onnx.helper.np_dtype_to_tensor_dtype(d)


class Ctx:
    """Collects the ONNX nodes of the graph being written (the main graph or a sub-graph
    body), the initializers (always of the main graph: sub-graphs see them by name), fresh
    names, and the converter table (control flow converts its bodies with it)."""

    def __init__(self, onnx, opset, table):
        self.onnx = onnx
        self.h = onnx.helper
        self.opset = opset
        self.table = table
        self.nodes = []
        self.inits = []
        self._consts = {}
        self._values = {}        # initializer name -> its array (converters specialize on it)
        self._n = 0
        self.node = None         # the ndflow node being converted (for error messages)

    def fresh(self, hint="t"):
        self._n += 1
        return "%s_%d" % (hint, self._n)

    def op(self, op_type, inputs, n_out=1, name=None, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(self.h.make_node(op_type, list(inputs), outs,
                                           name=name or self.fresh("n_" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=None):
        a = np.asarray(value, dtype=dtype)
        if a.dtype.kind == "c" or a.dtype == object:
            self.fail(f"an array of dtype {a.dtype} (ONNX runtimes have no complex kernels)")
        key = (a.dtype.str, a.shape, a.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = self._consts[key] = self.fresh("const")
            a = np.array(a, order="C")
            self._values[name] = a
            self.inits.append(self.onnx.numpy_helper.from_array(a, name))
        return name

    def known(self, name):
        """The array of a constant input (None for a value computed at run time)."""
        return self._values.get(name)

    def i64(self, values):
        return self.const(np.asarray(values, dtype=np.int64))

    def where_am_i(self):
        n = self.node
        return f"'{n.prim.name}' created at {n.loc}" if n is not None else "the graph"

    def fail(self, what):
        """Refuse the export: `what` (and why) cannot be written exactly."""
        raise UnsupportedOperationError(
            f"nf.onnx.export: {what} cannot be exported ({self.where_am_i()})")

    def cast(self, x, dtype):
        return self.op("Cast", [x], to=tensor_type(self.onnx, dtype))

    # shape helpers ---------------------------------------------------------
    def shape(self, x, start=0, end=None):
        """x's sizes [start:end] as a 1-d int64 tensor, read at run time (Shape's start and
        end attributes exist from opset 15 on; a Slice before)."""
        if start == 0 and end is None:
            return self.op("Shape", [x])
        if self.opset >= 15:
            kw = {"start": start} if end is None else {"start": start, "end": end}
            return self.op("Shape", [x], **kw)
        return self.op("Slice", [self.op("Shape", [x]), self.i64([start]),
                                 self.i64([_BIG if end is None else end])])

    def dim(self, x, axis):
        """The size of `x` along `axis` as a 1-element int64 tensor (read at run time)."""
        return self.shape(x, axis, axis + 1 if axis != -1 else None)

    def reduce(self, op_type, x, axes, keepdims):
        if self.opset >= 18 or op_type == "ReduceSum":
            return self.op(op_type, [x, self.i64(list(axes))], keepdims=int(keepdims))
        return self.op(op_type, [x], axes=list(axes), keepdims=int(keepdims))

    def any(self, b):
        """A 0-d bool: whether any element of the bool tensor `b` holds (False when empty:
        ReduceMax of an empty tensor is the type's lowest value, which is not > 0)."""
        r = self.op("ReduceMax", [self.cast(b, np.int32)], keepdims=0) if self.opset >= 18 \
            else self.op("ReduceMax", [self.op("Reshape", [self.cast(b, np.int32),
                                                            self.i64([-1])])], keepdims=0)
        return self.op("Greater", [r, self.const(np.int32(0))])

    # exact selection ---------------------------------------------------------
    def is_negative_zero(self, x, dtype):
        """A bool tensor: where `x` is -0.0 (1 / -0.0 is -inf, the only zero below 0)."""
        zero = self.const(0, dtype)
        return self.op("And", [self.op("Equal", [x, zero]),
                               self.op("Less", [self.op("Reciprocal", [x]), zero])])

    def where(self, c, x, y, dtype, x_nonzero=False):
        """NumPy's where(c, x, y), zeros keeping their signs. onnxruntime's float Where gives
        +0.0 where `c` holds and `x` is -0.0 (the else operand keeps its sign, but its
        optimizer turns Where(Not(c), y, x) into Where(c, x, y), so swapping does not help).
        So: a plain Where when `x` cannot be -0.0 (a constant without one, or `x_nonzero`: the
        caller knows `x` is never zero where `c` holds), else the lost signs are put back by a
        multiplication by -1 (exact, NaN and infinities included)."""
        d = np.dtype(dtype)
        if d.kind in "iu" and (d.itemsize == 2 or d == np.uint64):
            return self._where_int(c, x, y, d)
        if d.kind == "b":       # onnxruntime has no boolean Where
            return self.op("Or", [self.op("And", [c, x]),
                                  self.op("And", [self.op("Not", [c]), y])])
        if not is_float(d) or x_nonzero:
            return self.op("Where", [c, x, y])
        kx = self.known(x)
        if kx is None:
            lost = self.op("And", [c, self.is_negative_zero(x, d)])
        else:
            negzero = (kx == 0) & np.signbit(kx)
            if not negzero.any():
                return self.op("Where", [c, x, y])
            lost = c if negzero.all() else self.op("And", [c, self.const(negzero)])
        r = self.op("Where", [c, x, y])
        sign = self.op("Where", [lost, self.const(-1, d), self.const(1, d)])
        return self.op("Mul", [r, sign])

    def positive_zero(self, x, dtype):
        """x + 0.0: -0.0 becomes +0.0, all else stays (NumPy's sums start from +0.0). Not
        written as an Add of 0, which onnxruntime's optimizer may remove as a no-op."""
        zero = self.const(0.0, dtype)
        return self.op("Where", [self.op("Equal", [x, zero]), zero, x])

    def _where_int(self, c, x, y, d):
        # onnxruntime has no Where for 16-bit integers nor uint64: y + (x - y) * c is exact
        # in the integers' wrap-around arithmetic
        diff = self.op("Sub", [x, y])
        return self.op("Add", [y, self.op("Mul", [diff, self.cast(c, d)])])

    # run-time errors ---------------------------------------------------------
    def error_if(self, x, bad, error, message):
        """`x`, computed only when no element of the bool tensor `bad` holds; otherwise the run
        fails (ONNX has no raising operator: a Reshape of one element to zero elements fails,
        and onnxruntime's error names the failing node, which is named after NumPy's error).
        The result depends on the check, so no runtime can drop it."""
        ok = self.cast(self.op("Not", [self.any(bad)]), np.int64)
        size = self.op("Reshape", [ok, self.i64([1])])
        label = f"{error}: {message} (raised by {self.where_am_i()}) [{self.fresh('check')}]"
        check = self.op("Reshape", [self.i64([1]), size], allowzero=1, name=label)
        # x's own shape times [1]: x unchanged, bit for bit
        return self.op("Expand", [x, self.op("Mul", [self.op("Shape", [x]), check])])


def via_float32(conv, float16=False):
    """`conv` for nodes with bfloat16 operands or results (float16 too with `float16`),
    computed in float32 and rounded back: ONNX defines most operators without bfloat16 (and
    onnxruntime lacks some float16 kernels). Exact as NumPy's own 16-bit loops are (ml_dtypes'
    and NumPy's float16 ones compute in float32 and round once per operation), and exact for
    data movement."""
    f4, f2 = np.dtype(np.float32), np.dtype(np.float16)

    def narrow(v):
        d = np.dtype(v.dtype)
        return d == D.BFLOAT16 or (float16 and d == f2)

    def wide(v):
        if not narrow(v):
            return v
        return Var(v.shape, f4, v.kind, None if v.const is None else np.asarray(v.const, f4))

    def widened(ctx, v, x):
        if not narrow(v):
            return x
        k = ctx.known(x)   # a constant stays a constant (converters specialize on them)
        return ctx.cast(x, f4) if k is None else ctx.const(np.asarray(k, f4))

    def converter(ctx, n, ins):
        if not any(narrow(v) for v in n.inputs + n.outputs):
            return conv(ctx, n, ins)
        # (the converter sees float32; `narrow_dtype` tells it what NumPy computed in)
        params = dict(n.params, narrow_dtype=np.dtype(n.outputs[0].dtype))
        fake = Node(n.prim, [wide(v) for v in n.inputs], params,
                    [wide(v) for v in n.outputs], n.loc)
        outs = conv(ctx, fake, [widened(ctx, v, x) for v, x in zip(n.inputs, ins)])
        single = not n.prim.multiple_results
        outs = [outs] if single else outs
        outs = [ctx.cast(o, v.dtype) if narrow(v) else o for v, o in zip(n.outputs, outs)]
        return outs[0] if single else outs
    return converter


def with_bfloat16(table, float16_too=()):
    """The converter table with bfloat16 computed through float32 (all but casts, whose
    Cast takes bfloat16, and control flow, whose bodies are converted node by node), and
    float16 too for the primitives `float16_too`."""
    keep = {p for p in table if p.name in ("convert_element_type", "cond", "while", "scan")}
    return {p: c if p in keep else via_float32(c, p in float16_too) for p, c in table.items()}


def emit_graph(ctx, g, env):
    """Convert the nodes of `g` (env: var id -> ONNX name, its inputs already there)."""
    outer = ctx.node           # a control-flow node whose body this is
    consts = {c.id: c for c in g.consts}
    for n in g.nodes:
        if n.prim.sink:
            continue        # prints and other output-only effects: ONNX has no host output
        ctx.node = n
        conv = ctx.table.get(n.prim)
        if conv is None:
            raise UnsupportedOperationError(
                f"nf.onnx.export: primitive '{n.prim.name}' (created at {n.loc}) has no ONNX "
                f"translation; supported: see nf.onnx.supported_primitives()")
        complex_ = [str(v.dtype) for v in n.inputs + n.outputs if np.dtype(v.dtype).kind == "c"]
        if complex_:
            ctx.fail(f"{n.prim.name} of {complex_[0]} (ONNX runtimes have no complex kernels)")
        for v in n.inputs:
            if v.id not in env:       # a constant, written where it is first used
                env[v.id] = ctx.const(np.asarray(consts[v.id].const))
        outs = conv(ctx, n, [env[v.id] for v in n.inputs])
        if not n.prim.multiple_results:
            outs = [outs]
        for o, name in zip(n.outputs, outs):
            env[o.id] = name
    ctx.node = outer
    for v in g.outputs:
        if v.id not in env:           # a constant result
            env[v.id] = ctx.const(np.asarray(consts[v.id].const))


def body_graph(ctx, make, outputs, name, formals=()):
    """An ONNX GraphProto whose nodes are those `make()` emits; `make` returns the ONNX names
    of the body's results, `outputs` their (dtype) in order; `formals` are value infos of the
    body's inputs (a Loop body's iteration, condition and carried values)."""
    h = ctx.h
    saved, ctx.nodes = ctx.nodes, []
    try:
        # a body's outputs must be values of its own, not outer names or its inputs
        outs = [ctx.op("Identity", [r]) for r in make()]
        infos = [h.make_tensor_value_info(nm, tensor_type(ctx.onnx, dt), None)
                 for nm, dt in zip(outs, outputs)]
        return h.make_graph(ctx.nodes, ctx.fresh(name), list(formals), infos)
    finally:
        ctx.nodes = saved


def loop_formals(ctx, names, dtypes):
    """Value infos of a Loop body's inputs: the iteration, the condition, the carried values
    (`names`: those three kinds of names in that order; `dtypes`: the carried values')."""
    h, tp = ctx.h, ctx.onnx.TensorProto
    return [h.make_tensor_value_info(names[0], tp.INT64, []),
            h.make_tensor_value_info(names[1], tp.BOOL, [])] + [
        h.make_tensor_value_info(nm, tensor_type(ctx.onnx, dt), None)
        for nm, dt in zip(names[2:], dtypes)]


def subgraph(ctx, g, env, name):
    """An ONNX GraphProto for the ndflow graph `g` used as an If branch: the values of `g`'s
    inputs are the outer names in `env` (ONNX bodies read the enclosing scope by name)."""
    env = dict(env)

    def make():
        emit_graph(ctx, g, env)
        return [env[o.id] for o in g.outputs]
    return body_graph(ctx, make, [o.dtype for o in g.outputs], name)
