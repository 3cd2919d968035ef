"""The scalar vocabulary: how an elementwise primitive writes one element of its result.

An elementwise primitive may declare its scalar expression once, as text in a small language
(a subset of Python's expression syntax) over its operands, its parameters and the functions
below:

    exp(x)          x * y          where(c, x, y)          astype(x, dtype)          fill_value

Every kernel tier that compiles fused regions renders the same declaration in its own
language: numba source for tier 1 (graph/kernels/numba_tier.py) and CUDA C for the GPU
(graph/kernels/cuda_tier.py). A renderer has one table, keyed by the functions of this
vocabulary (never by primitive), that says how it spells each function and for which dtypes
it computes NumPy's value; a function it cannot write makes the region ineligible for that
tier, with the reason. A primitive without a scalar expression still fuses on tier 0, which
calls its NumPy kernel.

The language: operands are names (`x`, `y` for the first and second operand by default; a
declaration may name them), numbers are constants in the dtype of the values they meet (as
NumPy's weak Python scalars), any other name is a parameter of the primitive (`fill_value`),
and calls and operators are functions of `FUNCTIONS`. Operators map to functions: `+` add,
`-` subtract (negative), `*` multiply, `/` divide (true division), `//` floor_divide, `%`
remainder, `**` power, `&` `|` `^` bitwise_and/or/xor, `<<` `>>` left/right_shift, `~`
invert, `not` logical_not, `==` `!=` `<` `<=` `>` `>=` equal ... greater_equal. Each function
means what the NumPy ufunc of its name computes (`abs` is `absolute`, `astype(x, dtype)` a
cast as `ndarray.astype`, `where` a select).

The text is parsed when a renderer first asks (`Scalar.tree`): importing ndflow parses
nothing.
"""
import ast

import numpy as np

from ..core.state import AST_LOCK

# function -> (number of operands, rule for its result dtype): 'same' (its operands'), 'bool',
# 'uint8', 'first' (its first operand's), 'dtype' (its second operand names the dtype
# parameter), 'select' (its second and third operands')
FUNCTIONS = {}
for _names, _arity, _rule in (
        ("negative positive invert abs sign conj floor ceil trunc rint sqrt cbrt exp exp2 expm1 "
         "log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh "
         "arctanh spacing erf erfc", 1, "same"),
        ("logical_not isnan isinf isfinite signbit", 1, "bool"),
        ("add subtract multiply divide floor_divide remainder power maximum minimum arctan2 "
         "hypot fmod nextafter bitwise_and bitwise_or bitwise_xor left_shift right_shift "
         "logaddexp logaddexp2 gcd lcm", 2, "same"),
        ("ldexp", 2, "first"),
        ("bitwise_count", 1, "uint8"),
        ("equal not_equal less less_equal greater greater_equal logical_and logical_or "
         "logical_xor", 2, "bool"),
        ("astype", 2, "dtype"),
        ("where", 3, "select")):
    for _n in _names.split():
        FUNCTIONS[_n] = (_arity, _rule)

_BINOP = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
          ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.Pow: "power",
          ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
          ast.LShift: "left_shift", ast.RShift: "right_shift"}
_UNARYOP = {ast.USub: "negative", ast.UAdd: "positive", ast.Invert: "invert",
            ast.Not: "logical_not"}
_COMPARE = {ast.Eq: "equal", ast.NotEq: "not_equal", ast.Lt: "less", ast.LtE: "less_equal",
            ast.Gt: "greater", ast.GtE: "greater_equal"}


class Unrenderable(Exception):
    """A renderer cannot write this function for these dtypes (the message says why)."""


class Scalar:
    """A primitive's scalar expression: `source` over the operand names `operands`.

    The tree (`tree`) has four kinds of node: ('operand', i), ('const', number),
    ('param', name) and ('call', function, (nodes...))."""
    __slots__ = ("source", "operands", "_tree")

    def __init__(self, source, operands=("x", "y")):
        self.source = source
        self.operands = tuple(operands)
        self._tree = None

    def __str__(self):
        return self.source

    def __repr__(self):
        return "Scalar(%r)" % self.source

    @property
    def tree(self):
        if self._tree is None:
            self._tree = _parse(self.source, self.operands)
        return self._tree

    def functions(self):
        """The vocabulary functions the expression calls."""
        out = []

        def walk(node):
            if node[0] == "call":
                out.append(node[1])
                for a in node[2]:
                    walk(a)
        walk(self.tree)
        return out


def _parse(source, operands):
    def conv(e):
        if isinstance(e, ast.Name):
            if e.id in operands:
                return ("operand", operands.index(e.id))
            return ("param", e.id)
        if isinstance(e, ast.Constant) and type(e.value) in (int, float, bool):
            return ("const", e.value)
        if isinstance(e, ast.UnaryOp) and type(e.op) in _UNARYOP:
            a = conv(e.operand)
            if a[0] == "const" and isinstance(e.op, ast.USub):
                return ("const", -a[1])
            return _call(_UNARYOP[type(e.op)], [a])
        if isinstance(e, ast.BinOp) and type(e.op) in _BINOP:
            return _call(_BINOP[type(e.op)], [conv(e.left), conv(e.right)])
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in _COMPARE:
            return _call(_COMPARE[type(e.ops[0])], [conv(e.left), conv(e.comparators[0])])
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not e.keywords:
            return _call(e.func.id, [conv(a) for a in e.args])
        raise ValueError("scalar expression %r: %r is not in the vocabulary "
                         "(ndflow/primitives/scalar.py)" % (source, ast.unparse(e)))

    def _call(f, args):
        spec = FUNCTIONS.get(f)
        if spec is None or spec[0] != len(args):
            raise ValueError("scalar expression %r: no function %s of %d operands in the "
                             "vocabulary" % (source, f, len(args)))
        if spec[1] == "dtype" and args[1][0] != "param":
            raise ValueError("scalar expression %r: astype's second operand names a "
                             "parameter" % source)
        return ("call", f, tuple(args))

    with AST_LOCK:
        tree = ast.parse(source, mode="eval")
    return conv(tree.body)


def render(scalar, names, in_dtypes, out_dtype, params, spell, literal):
    """The expression as text of a renderer: `names` and `in_dtypes` are the operands' text
    and dtypes, `out_dtype` the primitive's result dtype (the outermost function's), `params`
    its parameters. `spell(function, texts, dtypes, result_dtype)` writes one function over
    the texts of its operands (of `dtypes`; the type operand of `astype` is left out), and
    `literal(value, dtype)` one constant; either raises Unrenderable."""
    def typeof(node):
        kind = node[0]
        if kind == "operand":
            return np.dtype(in_dtypes[node[1]])
        if kind != "call":
            return None                  # constants and parameters take their neighbours'
        arity, rule = FUNCTIONS[node[1]]
        if rule in ("bool", "uint8"):
            return np.dtype(rule)
        if rule == "dtype":
            return np.dtype(params[node[2][1][1]])
        return _common(node[2][1:] if rule == "select" else
                       node[2][:1] if rule == "first" else node[2], typeof)

    def walk(node, dt, top=False):
        kind = node[0]
        if kind == "operand":
            return names[node[1]]
        if kind == "const":
            return literal(node[1], dt)
        if kind == "param":
            return literal(_param_value(params, node[1], dt), dt)
        f, args = node[1], node[2]
        arity, rule = FUNCTIONS[f]
        if rule == "dtype":
            args = args[:1]
        elif rule == "select":
            # the condition keeps its own dtype; the branches meet in theirs
            inner = _common(args[1:], typeof) or dt
            dts = [typeof(args[0]) or np.dtype(np.bool_), inner, inner]
            res = dt if top else inner
            return spell(f, [walk(a, d) for a, d in zip(args, dts)], dts, res)
        inner = _common(args, typeof) or (dt if rule == "same" else None)
        if inner is None:
            raise Unrenderable("%s of constants only" % f)
        dts = [typeof(a) or inner for a in args]
        if rule == "first":
            dts[0] = typeof(args[0]) or dt
        res = dt if top else (typeof(node) or inner)
        return spell(f, [walk(a, d) for a, d in zip(args, dts)], dts, res)

    return walk(scalar.tree, np.dtype(out_dtype), top=True)


def _common(args, typeof):
    ts = [t for t in (typeof(a) for a in args) if t is not None]
    return np.result_type(*ts) if ts else None


def _param_value(params, name, dt):
    """A parameter as a value of `dt`, as NumPy stores it into an array of `dt` (full_like's
    unsafe cast); NaN and infinity have no integer value (the cast is platform-defined)."""
    v = np.asarray(params[name])
    if dt.kind in "iu" and v.dtype.kind in "fc" and not np.all(np.isfinite(v)):
        raise Unrenderable("a non-finite %s for %s (the cast is platform-defined)" % (name, dt))
    with np.errstate(all="ignore"):
        return v.astype(dt)[()]
