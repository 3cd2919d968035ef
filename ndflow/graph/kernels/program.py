"""What a fused region computes, independent of how it runs: a `Program`.

Values are numbered: the region's external operands first (0..n_in-1), then one value per op.
A program is hashable through `key` (op chain, params, dtypes, static shapes, outputs), so two
regions that compute the same thing share kernels, whichever graph they come from.
"""
import numpy as np


class Op:
    __slots__ = ("prim", "args", "params", "shape", "dtype", "reduce")

    def __init__(self, prim, args, params, shape, dtype, reduce=False):
        self.prim = prim
        self.args = tuple(args)
        self.params = dict(params)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.reduce = reduce      # a trailing reduction (reduce_sum/max/min) of one value


def _hashable_params(params):
    return tuple(sorted((k, v) for k, v in params.items()))


class Program:
    """ins: (shape, dtype) per external operand; ops in order; outputs: value numbers."""

    def __init__(self, ins, ops, outputs, shape):
        self.ins = tuple((tuple(s), np.dtype(d)) for s, d in ins)
        self.ops = tuple(ops)
        self.outputs = tuple(outputs)
        self.shape = tuple(shape)           # the elementwise ops' (static) shape
        self.n_in = len(self.ins)
        self.key = (self.ins, tuple((o.prim.name, o.args, _hashable_params(o.params), o.dtype,
                                     o.shape, o.reduce) for o in self.ops), self.outputs, self.shape)
        self._hash = hash(self.key)

    def value_dtype(self, v):
        return self.ins[v][1] if v < self.n_in else self.ops[v - self.n_in].dtype

    def value_shape(self, v):
        return self.ins[v][0] if v < self.n_in else self.ops[v - self.n_in].shape

    @property
    def static(self):
        return all(d is not None for s, _ in self.ins for d in s)

    def describe(self):
        return ",".join(o.prim.name for o in self.ops)

    def body(self):
        """The ops on one line, as the fused node prints: t0=exp(x0); t1=add(x1, t0)"""
        return "; ".join(self.lines()[:-1])

    def __eq__(self, other):
        return isinstance(other, Program) and self.key == other.key

    def __hash__(self):
        return self._hash

    def __str__(self):
        return "\n".join(self.lines())

    def lines(self):
        lines = []
        for j, o in enumerate(self.ops):
            args = ", ".join(("x%d" % a) if a < self.n_in else ("t%d" % (a - self.n_in))
                             for a in o.args)
            ps = "".join(", %s=%r" % kv for kv in sorted(o.params.items()))
            lines.append("t%d=%s(%s%s)" % (j, o.prim.name, args, ps))
        outs = ", ".join(("x%d" % a) if a < self.n_in else ("t%d" % (a - self.n_in))
                         for a in self.outputs)
        return lines + ["return " + outs]


def runtime_shapes(prog, in_shapes):
    """Each value's shape for these operand shapes (None dims resolved); raises ValueError
    when they do not broadcast."""
    shapes = list(in_shapes)
    for o in prog.ops:
        a = [shapes[v] for v in o.args]
        if o.reduce:
            axes, keep = o.params["axes"], o.params["keepdims"]
            s = a[0]
            shapes.append(tuple(1 if i in axes else d for i, d in enumerate(s)) if keep
                          else tuple(d for i, d in enumerate(s) if i not in axes))
        elif not o.prim.elementwise:
            shapes.append(o.shape)      # a row region's expand_dims (static: numba_rows)
        else:
            shapes.append(np.broadcast_shapes(*a))
    return shapes
