"""The GPU tier: a fused elementwise region written as the source of one CUDA elementwise
kernel (CuPy's `ElementwiseKernel`: its parameter lists, its loop body and a preamble).

This module only writes text; nothing here imports CuPy, so the generator is tested on machines
without a GPU (tests/test_backends_cuda_tier.py). The CuPy backend (`backends/cupy_backend.py`)
compiles the text, once per `Source.key`, and runs it; `Runner` calls the kernel on the device
buffers of one call.

Each op becomes one typed C temporary: `double t2 = (x0 + t1);`, written from its primitive's
scalar expression (primitives/scalar.py) with one spelling per function of that vocabulary
(`_SPELLING`). The C keeps NumPy's rules where C's differ: maximum/minimum propagate NaN and
return NumPy's operand on ties (so -0.0/0.0 come out as NumPy's), sign(NaN) is NaN and
sign(-0.0) is 0.0, signed integer add/subtract/multiply/negate wrap (computed in the unsigned
type: C leaves overflow undefined), int8/int16 results are cast back to their type (C computes
in int). Float math (exp, log, tanh, asin, atan2, erf, ...) is CUDA's libdevice, within a few
ulps of NumPy's, not bit for bit: GPU results are compared with a tolerance. What the tier does
not take (`why_not` says why) runs op by op with each primitive's own kernel instead: complex
and float16 values, float-to-integer conversions (NaN and out-of-range casts are undefined in
C), integer powers, floor division, remainders and shifts (NumPy's rules at zero divisors and
wide shifts), primitives without a scalar expression (our own special functions), and
reductions other than one trailing float sum (which becomes a `ReductionKernel`: the region's elementwise part is its map, the
sum adds in the result's type, in the GPU's order, not NumPy's pairwise one).
"""
import hashlib
import struct

import numpy as np

from ...primitives.scalar import render, Unrenderable

_CTYPE = {np.dtype(k): v for k, v in [
    (np.bool_, "bool"), (np.int8, "signed char"), (np.int16, "short"), (np.int32, "int"),
    (np.int64, "long long"), (np.uint8, "unsigned char"), (np.uint16, "unsigned short"),
    (np.uint32, "unsigned int"), (np.uint64, "unsigned long long"), (np.float32, "float"),
    (np.float64, "double")]}
_UNSIGNED = {np.dtype(np.int8): "unsigned char", np.dtype(np.int16): "unsigned short",
             np.dtype(np.int32): "unsigned int", np.dtype(np.int64): "unsigned long long"}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# How the C of each function of the scalar vocabulary (primitives/scalar.py, where every
# primitive declares its expression once) is written: function -> (kind, detail); `_spell`
# writes each kind. Keyed by the vocabulary's functions, never by primitive.
_SPELLING = {
    # float functions: CUDA's overloads for float and double (libdevice)
    "exp": ("math", "exp"), "exp2": ("math", "exp2"), "expm1": ("math", "expm1"),
    "log": ("math", "log"), "log2": ("math", "log2"), "log10": ("math", "log10"),
    "log1p": ("math", "log1p"), "sqrt": ("math", "sqrt"), "cbrt": ("math", "cbrt"),
    "sin": ("math", "sin"), "cos": ("math", "cos"), "tan": ("math", "tan"),
    "arcsin": ("math", "asin"), "arccos": ("math", "acos"), "arctan": ("math", "atan"),
    "sinh": ("math", "sinh"), "cosh": ("math", "cosh"), "tanh": ("math", "tanh"),
    "arcsinh": ("math", "asinh"), "arccosh": ("math", "acosh"), "arctanh": ("math", "atanh"),
    "floor": ("math", "floor"), "ceil": ("math", "ceil"), "trunc": ("math", "trunc"),
    "rint": ("math", "rint"), "erf": ("math", "erf"), "erfc": ("math", "erfc"),
    "arctan2": ("math", "atan2"), "hypot": ("math", "hypot"), "fmod": ("math", "fmod"),
    "nextafter": ("math", "nextafter"),
    "equal": ("compare", "=="), "not_equal": ("compare", "!="), "less": ("compare", "<"),
    "less_equal": ("compare", "<="), "greater": ("compare", ">"),
    "greater_equal": ("compare", ">="),
    "add": ("arith", "+"), "subtract": ("arith", "-"), "multiply": ("arith", "*"),
    "bitwise_and": ("bitwise", "&"), "bitwise_or": ("bitwise", "|"),
    "bitwise_xor": ("bitwise", "^"),
    "logical_and": ("logical", "&&"), "logical_or": ("logical", "||"),
    "logical_xor": ("logical", "!="),
    "isnan": ("classify", "isnan"), "isinf": ("classify", "isinf"),
    "isfinite": ("classify", "isfinite"),
    "maximum": ("extremum", ">"), "minimum": ("extremum", "<"),
    "positive": ("identity", None), "conj": ("identity", None),
    "negative": ("negative", None), "divide": ("divide", None), "power": ("power", None),
    "logical_not": ("logical_not", None), "abs": ("abs", None), "sign": ("sign", None),
    "astype": ("convert", None), "where": ("select", None), "invert": ("invert", None),
    "signbit": ("signbit", None),
}


def _is_sum(prim):
    from ...primitives.reduction import reduce_sum_p
    return prim is reduce_sum_p


class Ineligible(Exception):
    pass


class Source:
    """The kernel text for one program: `ElementwiseKernel(in_params, out_params, body, name,
    preamble=preamble)`; `key` is the complete cache key (op chain with params, operand and
    result dtypes, outputs, and the class of operand shapes: each operand's ndim).

    A region ending in one sum whose result is its only output is a `ReductionKernel` instead
    (`reduce` holds (axes, keepdims, C type)): `map_expr` calls the region's elementwise part,
    written as a device function in the preamble, and the sum adds in `reduce_type`."""
    __slots__ = ("key", "name", "in_params", "out_params", "body", "preamble", "in_dtypes",
                 "out_dtypes", "reduce", "map_expr")

    def __init__(self, key, name, in_params, out_params, body, preamble, in_dtypes, out_dtypes,
                 reduce=None, map_expr=None):
        self.key, self.name = key, name
        self.in_params, self.out_params, self.body = in_params, out_params, body
        self.preamble, self.in_dtypes, self.out_dtypes = preamble, in_dtypes, out_dtypes
        self.reduce, self.map_expr = reduce, map_expr

    def __str__(self):
        return ("// %s\n// in:  %s\n// out: %s\n%s%s\n" % (self.name, self.in_params,
                                                           self.out_params, self.preamble,
                                                           self.body))


def cache_key(prog):
    """What decides the kernel text (and so its compiled code): the op sequence with params,
    operand dtypes, result dtypes and which values are results, and the shape class of each
    operand (its ndim: CuPy specialises its index arithmetic by it). Sizes are not part of
    it: one kernel serves every size."""
    ops = tuple((o.prim.name, o.args, tuple(sorted((k, _param_key(v)) for k, v in
                                                   o.params.items())),
                 o.dtype.str, o.reduce) for o in prog.ops)
    return ("cuda-ew-1", tuple(d.str for _, d in prog.ins), tuple(len(s) for s, _ in prog.ins),
            ops, prog.outputs)


def _param_key(v):
    if isinstance(v, float):
        return ("f", struct.pack("<d", v))      # -0.0 and each NaN are different constants
    if isinstance(v, np.dtype) or isinstance(v, type):
        return ("d", np.dtype(v).str)
    return (type(v).__name__, v)


_SOURCES = {}


def generate(prog):
    """The `Source` for `prog`, or None when this tier does not take it (see `why_not`)."""
    key = cache_key(prog)
    src = _SOURCES.get(key)
    if src is None:
        try:
            src = _generate(prog, key)
        except Ineligible:
            src = False
        _SOURCES[key] = src
    return src or None


def why_not(prog):
    """None when the region compiles to one CUDA kernel, else the reason."""
    try:
        _generate(prog, cache_key(prog))
    except Ineligible as e:
        return str(e)
    return None


def _ctype(dt):
    c = _CTYPE.get(np.dtype(dt))
    if c is None:
        raise Ineligible("dtype %s has no CUDA tier type (it runs op by op)" % np.dtype(dt))
    return c


def _literal(v, dt):
    """A C literal of value `v` in dtype `dt` (floats bit-exact, inf and NaN included)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return "true" if v else "false"
    if dt.kind in "iu":
        iv = int(v)
        if iv != v:
            raise Ineligible("fill value %r for %s" % (v, dt))
        return "((%s)%dLL)" % (_ctype(dt), iv) if dt.kind == "i" else \
            "((%s)%dULL)" % (_ctype(dt), iv)
    f = float(v)
    if np.isfinite(f):
        return "((%s)%s)" % (_ctype(dt), repr(f))
    bits = struct.unpack("<q", struct.pack("<d", f))[0]
    return "((%s)__longlong_as_double(%dLL))" % (_ctype(dt), bits)


def _op_expr(op, a, in_dts):
    """C expression of `op` over the C names `a` whose dtypes are `in_dts`, written from its
    primitive's scalar expression."""
    if op.prim.scalar is None:
        raise Ineligible("'%s' has no scalar expression (it runs op by op)" % op.prim.name)
    try:
        return render(op.prim.scalar, a, in_dts, op.dtype, op.params, _spell, _literal)
    except Unrenderable as e:
        raise Ineligible("'%s': %s" % (op.prim.name, e)) from None


def _spell(name, a, in_dts, out):
    """C of vocabulary function `name` over the C texts `a` of dtypes `in_dts`, of result
    dtype `out` (scalar.render's `spell`)."""
    kind, detail = _SPELLING.get(name, (None, None))
    out = np.dtype(out)
    T = _ctype(out)
    x = a[0] if a else None
    dx = np.dtype(in_dts[0]) if in_dts else None
    if kind == "identity":
        return x
    if kind == "negative":
        if out == np.bool_:
            raise Unrenderable("negative on bool")
        if out in _UNSIGNED:
            return "((%s)(0 - (%s)%s))" % (T, _UNSIGNED[out], x)
        return "(-%s)" % x
    if kind == "arith":
        if out == np.bool_:
            raise Unrenderable("'%s' on bool" % name)
        if out in _UNSIGNED:           # wraps as NumPy does; C's signed overflow is undefined
            U = _UNSIGNED[out]
            return "((%s)((%s)%s %s (%s)%s))" % (T, U, a[0], detail, U, a[1])
        if out.kind == "u" and out.itemsize < 4:
            return "((%s)(%s %s %s))" % (T, a[0], detail, a[1])
        return "((%s)%s %s (%s)%s)" % (T, a[0], detail, T, a[1])
    if kind == "divide":
        if out not in _FLOATS:
            raise Unrenderable("true_divide to %s" % out)
        return "((%s)%s / (%s)%s)" % (T, a[0], T, a[1])
    if kind == "power":
        if out not in _FLOATS:
            raise Unrenderable("power on %s" % out)
        return "pow((%s)%s, (%s)%s)" % (T, a[0], T, a[1])
    if kind == "extremum":
        A, B = "((%s)%s)" % (T, a[0]), "((%s)%s)" % (T, a[1])
        if out in _FLOATS:            # NaN wins; on a tie NumPy returns the second operand
            return "((%s %s %s || isnan(%s)) ? %s : %s)" % (A, detail, B, A, A, B)
        return "((%s %s %s) ? %s : %s)" % (A, detail, B, A, B)
    if kind == "compare":
        C = _ctype(np.result_type(*in_dts))
        return "((%s)%s %s (%s)%s)" % (C, a[0], detail, C, a[1])
    if kind == "logical":
        return "((%s != 0) %s (%s != 0))" % (a[0], detail, a[1])
    if kind == "logical_not":
        return "(!(%s != 0))" % x
    if kind == "classify":
        if dx not in _FLOATS:
            return "true" if detail == "isfinite" else "false"
        return "%s(%s)" % (detail, x)
    if kind == "math":
        if out not in _FLOATS:
            raise Unrenderable("'%s' on %s" % (name, out))
        return "%s(%s)" % (detail, ", ".join("(%s)%s" % (T, v) for v in a))
    if kind == "bitwise":
        if out.kind not in "biu":
            raise Unrenderable("'%s' on %s" % (name, out))
        return "((%s)(%s %s %s))" % (T, a[0], detail, a[1])
    if kind == "invert":
        if out == np.bool_:
            return "(!%s)" % x
        if out.kind not in "iu":
            raise Unrenderable("invert on %s" % out)
        return "((%s)~%s)" % (T, x)
    if kind == "signbit":
        if dx in _FLOATS:
            return "signbit(%s)" % x
        return "false" if dx == np.bool_ or dx.kind == "u" else "(%s < 0)" % x
    if kind == "abs":
        if out in _FLOATS:
            return "fabs(%s)" % x
        if out == np.bool_ or out.kind == "u":
            return x
        return "((%s)(%s < 0 ? -%s : %s))" % (T, x, x, x)     # abs(INT_MIN) wraps, as NumPy
    if kind == "sign":
        if out == np.bool_:
            raise Unrenderable("sign on bool")
        if out in _FLOATS:            # NaN stays NaN, -0.0 gives 0.0 (NumPy's)
            return "(%s > 0 ? (%s)1 : (%s < 0 ? (%s)-1 : (%s == 0 ? (%s)0 : %s)))" % (
                x, T, x, T, x, T, x)
        return "((%s)((%s > 0) - (%s < 0)))" % (T, x, x)
    if kind == "convert":
        if out == np.bool_:
            return "(%s != 0)" % x
        if out.kind in "iu" and dx.kind == "f":
            raise Unrenderable("float-to-integer conversion (NaN and out-of-range casts are "
                             "undefined in C)")
        return "((%s)%s)" % (T, x)
    if kind == "select":
        return "((%s != 0) ? (%s)%s : (%s)%s)" % (a[0], T, a[1], T, a[2])
    raise Unrenderable("no CUDA expression for '%s'" % name)


def _trailing_sum(prog):
    """The region's one trailing sum (its only output, of a float value), or None; raises
    Ineligible for the reductions this tier does not take."""
    red = [j for j, o in enumerate(prog.ops) if o.reduce]
    if not red:
        return None
    j = red[0]
    o = prog.ops[j]
    if len(red) > 1 or j != len(prog.ops) - 1 or prog.outputs != (prog.n_in + j,):
        raise Ineligible("a reduction that is not the region's one trailing result")
    if not _is_sum(o.prim):
        raise Ineligible("a trailing '%s' (only sums become a ReductionKernel)" % o.prim.name)
    if o.dtype not in _FLOATS or prog.value_dtype(o.args[0]) != o.dtype:
        raise Ineligible("a trailing sum of %s" % prog.value_dtype(o.args[0]))
    return j


def _generate(prog, key):
    names = ["x%d" % i for i in range(prog.n_in)]
    in_dts = [d for _, d in prog.ins]
    for d in in_dts:
        _ctype(d)
    red = _trailing_sum(prog)
    lines = []
    for j, o in enumerate(prog.ops):
        if o.reduce:
            continue              # the trailing sum: the ReductionKernel's own reduction
        args = [names[v] for v in o.args]
        dts = [prog.value_dtype(v) for v in o.args]
        expr = _op_expr(o, args, dts)
        lines.append("%s t%d = %s;" % (_ctype(o.dtype), j, expr))
        names.append("t%d" % j)
    out_dts = [prog.value_dtype(v) for v in prog.outputs]
    digest = hashlib.sha1(repr(key).encode()).hexdigest()[:16]
    name = "ndflow_fused_" + digest
    in_params = ", ".join("%s x%d" % (d.name if d != np.bool_ else "bool", i)
                          for i, d in enumerate(in_dts))
    out_params = ", ".join("%s y%d" % (d.name if d != np.bool_ else "bool", k)
                           for k, d in enumerate(out_dts))
    preamble = "// ndflow fused region: %s\n" % prog.describe()
    if red is not None:
        o = prog.ops[red]
        T = _ctype(o.dtype)
        mapped = names[o.args[0]]
        fn = name + "_map"
        sig = ", ".join("%s x%d" % (_ctype(d), i) for i, d in enumerate(in_dts))
        preamble += "__device__ %s %s(%s) {\n%s\nreturn %s;\n}\n" % (
            T, fn, sig, "\n".join(lines), mapped)
        map_expr = "%s(%s)" % (fn, ", ".join("x%d" % i for i in range(len(in_dts))))
        return Source(key, name, in_params, out_params, "", preamble, tuple(in_dts),
                      tuple(out_dts), (tuple(o.params["axes"]), bool(o.params["keepdims"]), T),
                      map_expr)
    for k, v in enumerate(prog.outputs):
        lines.append("y%d = %s;" % (k, names[v]))
    body = "\n".join(lines)
    return Source(key, name, in_params, out_params, body, preamble, tuple(in_dts),
                  tuple(out_dts))


class Runner:
    """Calls a compiled kernel on one call's buffers: the results come from the device's memory
    pool (CuPy allocates them), nothing synchronizes. Operands whose dtypes are not the ones
    the kernel was written for (which the graph never produces) make it step aside
    (NotImplemented: the region then runs op by op)."""
    __slots__ = ("src", "kernel", "multiple", "reduce")

    def __init__(self, src, kernel, xp=None):
        self.src = src
        self.kernel = kernel
        self.multiple = len(src.out_dtypes) > 1
        self.reduce = src.reduce

    def __call__(self, *xs):
        for x, d in zip(xs, self.src.in_dtypes):
            if x.dtype != d:
                return NotImplemented
        if self.reduce is not None:
            axes, keepdims, _ = self.reduce
            return self.kernel(*xs, axis=axes, keepdims=keepdims)
        out = self.kernel(*xs)
        return tuple(out) if self.multiple else out


def reduction_kernel_args(src):
    """The arguments of `cupy.ReductionKernel` for a reduction Source."""
    T = src.reduce[2]
    return dict(in_params=src.in_params, out_params=src.out_params, map_expr=src.map_expr,
                reduce_expr="a + b", post_map_expr="y0 = a", identity="0",
                name=src.name, reduce_type=T, preamble=src.preamble)
