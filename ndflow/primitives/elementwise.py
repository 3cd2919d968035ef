"""Elementwise primitives: unary math, binary arithmetic, comparisons, logic, select.

Inputs reach these primitives already promoted to one dtype by the NumPy layer (except where
noted), so rules never promote. Broadcasting is undone by `unbroadcast` only.
"""
import math

import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ..core.dtypes import BOOL
from ._util import broadcast_shapes, owned_apply, owned_ok, squeezed_ok, elementwise
# (shape and sums bind this module's primitives in their rules, as its rules bind theirs: the
# three import one another as modules, names looked up when a rule runs; sums.py says more)
from . import shape as S, sums


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# ------------------------------------------------------------------ category helpers
def _unary_abstract(x):
    return Aval(x.shape, x.dtype)


def _real_abstract(x):
    d = np.dtype(x.dtype)
    return Aval(x.shape, np.dtype("f%d" % (d.itemsize // 2)) if d.kind == "c" else d)


def _bool_abstract(*xs):
    return Aval(broadcast_shapes(*[x.shape for x in xs]), BOOL)


def _binary_abstract(x, y):
    return Aval(broadcast_shapes(x.shape, y.shape), x.dtype)


def _elementwise_batch(prim):
    @squeezed_ok
    def rule(args, axes, **params):
        sq = S.to_squeezed(args, axes)
        if sq is not None:
            return bind(prim, *sq[0], **params), sq[1]
        args, axes = S.unsqueeze_all(args, axes)
        args = S.align_batched(args, axes)
        return bind(prim, *args, **params), 0
    return rule


def unary(name, impl, vjp=None, scalar=None, abstract=_unary_abstract, uses_out=False,
          reads=None):
    """An elementwise primitive of one operand `x`; `scalar`: its scalar expression over `x`
    (primitives/scalar.py), where it has one."""
    p = Primitive(name, impl, abstract)
    if vjp is not None:
        p.def_vjp(vjp, uses_out=uses_out, reads=reads)
    p.batch = squeezed_ok(lambda args, axes, **kw: (bind(p, args[0], **kw), axes[0]))
    return elementwise(p, scalar)


def binary(name, impl, vjp=None, scalar=None, abstract=_binary_abstract, reads=None,
           needs=False):
    """An elementwise primitive of two broadcast operands `x`, `y` (see `unary`)."""
    p = Primitive(name, impl, abstract)
    if vjp is not None:
        p.def_vjp(vjp, reads=reads, needs=needs)
    p.batch = _elementwise_batch(p)
    return elementwise(p, scalar)


def _zero_grad(ct, *xs, **kw):
    return (None,) * len(xs)


# ------------------------------------------------------------------ unary math
# (reads=(): the rule reads no input's value, only shapes, so a tape keeps no input alive)
neg_p = unary("negative", np.negative, lambda ct, x: (-ct,), "-x", reads=())
positive_p = unary("positive", np.positive, lambda ct, x: (ct,), "+x", reads=())
exp_p = unary("exp", np.exp, lambda ct, x, out: (ct * out,), "exp(x)", uses_out=True,
              reads=())
exp2_p = unary("exp2", np.exp2, lambda ct, x, out: (ct * out * _LN2,), "exp2(x)",
               uses_out=True)
expm1_p = unary("expm1", np.expm1, lambda ct, x, out: (ct * (out + 1),), "expm1(x)",
                uses_out=True)
log_p = unary("log", np.log, lambda ct, x: (ct / x,), "log(x)")
log2_p = unary("log2", np.log2, lambda ct, x: (ct / (x * _LN2),), "log2(x)")
log10_p = unary("log10", np.log10, lambda ct, x: (ct / (x * _LN10),), "log10(x)")
log1p_p = unary("log1p", np.log1p, lambda ct, x: (ct / (x + 1),), "log1p(x)")
sqrt_p = unary("sqrt", np.sqrt, lambda ct, x, out: (ct / (out * 2),), "sqrt(x)", uses_out=True)
cbrt_p = unary("cbrt", np.cbrt, lambda ct, x, out: (ct / (out * out * 3),), "cbrt(x)",
               uses_out=True)
def _sin_vjp(ct, x):
    c = bind(cos_p, x)
    # the product written into the rule's own cos(x) (a product commutes exactly)
    r = owned_apply(np.multiply, c, ct)
    return (ct * c if r is None else r,)


def _cos_vjp(ct, x):
    s = bind(sin_p, x)
    if owned_apply(np.multiply, s, ct) is not None:
        # -(sin(x) * ct) = (-ct) * sin(x) exactly (negation commutes with rounding)
        return (owned_apply(np.negative, s),)
    return (-ct * s,)


sin_p = unary("sin", np.sin, _sin_vjp, "sin(x)")
cos_p = unary("cos", np.cos, _cos_vjp, "cos(x)")
tan_p = unary("tan", np.tan, lambda ct, x, out: (ct * (out * out + 1),), "tan(x)", uses_out=True)
arcsin_p = unary("arcsin", np.arcsin, lambda ct, x: (ct / bind(sqrt_p, 1 - x * x),), "arcsin(x)")
arccos_p = unary("arccos", np.arccos, lambda ct, x: (-ct / bind(sqrt_p, 1 - x * x),),
                 "arccos(x)")
arctan_p = unary("arctan", np.arctan, lambda ct, x: (ct / (x * x + 1),), "arctan(x)")
sinh_p = unary("sinh", np.sinh, lambda ct, x: (ct * bind(cosh_p, x),), "sinh(x)")
cosh_p = unary("cosh", np.cosh, lambda ct, x: (ct * bind(sinh_p, x),), "cosh(x)")
tanh_p = unary("tanh", np.tanh, lambda ct, x, out: (ct * (1 - out * out),), "tanh(x)",
               uses_out=True)
arcsinh_p = unary("arcsinh", np.arcsinh, lambda ct, x: (ct / bind(sqrt_p, x * x + 1),),
                  "arcsinh(x)")
arccosh_p = unary("arccosh", np.arccosh, lambda ct, x: (ct / bind(sqrt_p, x * x - 1),),
                  "arccosh(x)")
arctanh_p = unary("arctanh", np.arctanh, lambda ct, x: (ct / (1 - x * x),), "arctanh(x)")
reciprocal_p = unary("reciprocal", np.reciprocal, lambda ct, x, out: (-ct * out * out,),
                     "1 / x", uses_out=True)


def _abs_vjp(ct, x):
    if np.dtype(x.dtype).kind == "c":
        # d|z| = Re(conj(z) dz)/|z|. Complex cotangents pair bilinearly (JAX's convention, as
        # in every other rule here: mul gives ct*y, not ct*conj(y)), so the cotangent of z is
        # ct * conj(z)/|z|
        # at 0 the subgradient 0 (as for real x, and JAX), not 0/0
        a = bind(abs_p, x)
        zero = bind(eq_p, a, bind(zeros_like_p, a))
        safe = bind(select_p, zero, bind(ones_like_p, a), a)
        return (ct * bind(conj_p, x) / safe,)
    return (ct * bind(sign_p, x),)


abs_p = unary("absolute", np.absolute, _abs_vjp, "abs(x)", abstract=_real_abstract)
sign_p = unary("sign", np.sign, _zero_grad, "sign(x)")
floor_p = unary("floor", np.floor, _zero_grad, "floor(x)")
ceil_p = unary("ceil", np.ceil, _zero_grad, "ceil(x)")
trunc_p = unary("trunc", np.trunc, _zero_grad, "trunc(x)")
rint_p = unary("rint", np.rint, _zero_grad, "rint(x)")
conj_p = unary("conjugate", np.conjugate, lambda ct, x: (bind(conj_p, ct),), "conj(x)")
real_p = unary("real", np.real, lambda ct, x: (bind(convert_p, ct, dtype=np.dtype(x.dtype)),),
               abstract=_real_abstract)


def _imag_vjp(ct, x):
    if np.dtype(x.dtype).kind != "c":
        return (None,)                # a real array's imaginary part: constant zeros
    return (bind(convert_p, ct, dtype=np.dtype(x.dtype)) * -1j,)


# (np.imag of a real array: read-only zeros, as NumPy's `x.imag`)
imag_p = unary("imag", np.imag, _imag_vjp, abstract=_real_abstract)
real_p.returns_view = imag_p.returns_view = True    # NumPy: views of a complex array


# ------------------------------------------------------------------ writing a complex part
# x with its real (imaginary) part replaced by `part`, broadcast, bit for bit: the other part's
# signed zeros, infinities and NaNs are kept, which `part + 1j * x.imag` would not do (1j * inf
# has a NaN real part). A write through the view `x.real` (`x.imag`) reaches x through these
# (the views' inverses, core/mutation.py's VIEWS). Complex x only: a real array's `.real` is
# the array itself, and its `.imag` is read-only.
def _set_part_impl(name):
    def impl(x, part):
        if np.dtype(x.dtype).kind != "c":
            raise TypeError(f"{name}: the array must be complex, got {np.dtype(x.dtype)}")
        shape = np.broadcast_shapes(np.shape(x), np.shape(part))
        out = np.copy(np.broadcast_to(x, shape))  # (both dispatch: a device buffer stays there)
        getattr(out, name[4:])[...] = part
        return out
    return impl


def _set_part_abstract(x, part):
    return Aval(broadcast_shapes(x.shape, part.shape), x.dtype)


def _as_complex(ct, x):
    return ct if np.dtype(ct.dtype).kind == "c" else bind(convert_p, ct, dtype=np.dtype(x.dtype))


def _set_real_vjp(ct, x, part):
    # (JAX's pairing, as real_p's rule: the written part gets Re(ct), x keeps i Im(ct))
    ct = _as_complex(ct, x)
    return (sums.unbroadcast(bind(set_real_p, ct, bind(zeros_like_p, part)), x),
            sums.unbroadcast(bind(real_p, ct), part))


def _set_imag_vjp(ct, x, part):
    ct = _as_complex(ct, x)
    return (sums.unbroadcast(bind(set_imag_p, ct, bind(zeros_like_p, part)), x),
            sums.unbroadcast(-bind(imag_p, ct), part))


def _set_part_jvp(prim):
    def jvp(tangents, x, part):
        tx, tp = tangents
        if tx is None and tp is None:
            return None
        return bind(prim, bind(zeros_like_p, x) if tx is None else tx,
                    bind(zeros_like_p, part) if tp is None else tp)
    return jvp


set_real_p = Primitive("set_real", _set_part_impl("set_real"), _set_part_abstract)
set_real_p.def_vjp(_set_real_vjp, reads=())
set_imag_p = Primitive("set_imag", _set_part_impl("set_imag"), _set_part_abstract)
set_imag_p.def_vjp(_set_imag_vjp, reads=())
for _p in (set_real_p, set_imag_p):
    _p.def_jvp(_set_part_jvp(_p))
    _p.batch = _elementwise_batch(_p)
logical_not_p = unary("logical_not", np.logical_not, _zero_grad, "logical_not(x)",
                      abstract=lambda x: Aval(x.shape, BOOL))
invert_p = unary("invert", np.invert, _zero_grad, "~x")
isnan_p = unary("isnan", np.isnan, _zero_grad, "isnan(x)", abstract=lambda x: Aval(x.shape, BOOL))
isinf_p = unary("isinf", np.isinf, _zero_grad, "isinf(x)", abstract=lambda x: Aval(x.shape, BOOL))
isfinite_p = unary("isfinite", np.isfinite, _zero_grad, "isfinite(x)",
                   abstract=lambda x: Aval(x.shape, BOOL))
signbit_p = unary("signbit", np.signbit, _zero_grad, "signbit(x)",
                  abstract=lambda x: Aval(x.shape, BOOL))


# ------------------------------------------------------------------ dtype conversion
def _convert_impl(x, dtype):
    return x.astype(dtype) if hasattr(x, "astype") else np.asarray(x, dtype)


def _convert_vjp(ct, x, dtype):
    src = np.dtype(x.dtype)
    if src.kind not in "fc" and src.name != "bfloat16":
        return (None,)
    if src.kind != "c" and np.dtype(ct.dtype).kind == "c":
        ct = bind(real_p, ct)
    return (bind(convert_p, ct, dtype=src),)


convert_p = Primitive("convert_element_type", _convert_impl,
                      lambda x, dtype: Aval(x.shape, np.dtype(dtype)))
convert_p.def_vjp(_convert_vjp)
convert_p.batch = squeezed_ok(
    lambda args, axes, dtype: (bind(convert_p, args[0], dtype=dtype), axes[0]))
elementwise(convert_p, "astype(x, dtype)")


def _copy_impl(x):
    return np.array(x, copy=True) if isinstance(x, (np.ndarray, np.generic)) else x.copy()


copy_p = unary("copy", _copy_impl, lambda ct, x: (ct,), "x")


# ------------------------------------------------------------------ binary arithmetic
def _add_vjp(ct, x, y):
    return sums.unbroadcast(ct, x), sums.unbroadcast(ct, y)


def _sub_vjp(ct, x, y, needs=(True, True)):
    return sums.unbroadcast(ct, x), sums.unbroadcast(-ct, y) if needs[1] else None


def _mul_vjp(ct, x, y, needs=(True, True)):
    return (sums.unbroadcast(ct * y, x) if needs[0] else None,
            sums.unbroadcast(ct * x, y) if needs[1] else None)


def _div_vjp(ct, x, y, needs=(True, True)):
    q = ct / y
    if needs[0]:
        return sums.unbroadcast(q, x), sums.unbroadcast(-q * x / y, y) if needs[1] else None
    if not needs[1]:
        return None, None
    if owned_ok(q, x) and owned_ok(q, y):
        # q is the rule's own: -q * x / y in its buffer (the same operations, in order)
        owned_apply(np.negative, q)
        owned_apply(np.multiply, q, x)
        return None, sums.unbroadcast(owned_apply(np.true_divide, q, y), y)
    return None, sums.unbroadcast(-q * x / y, y)


def _pow_vjp(ct, x, y):
    """d x**y = y x**(y-1) dx + log(x) x**y dy; the y-gradient is 0 where x == 0 (not NaN).

    Where y == 0 the x-gradient is y * x**1 = 0 (autograd's and JAX's convention), not
    0 * x**-1 = 0 * inf = NaN at x = 0: `sum(c * x**k)` over k = 0.. is a polynomial. The
    select is on y's shape only (a scalar exponent: a 0-d select)."""
    y1 = bind(select_p, bind(eq_p, y, bind(zeros_like_p, y)), bind(ones_like_p, y), y - 1)
    gx = ct * y * bind(pow_p, x, y1)
    if np.dtype(y.dtype).kind in "fc":
        zero = bind(zeros_like_p, x)
        if np.dtype(x.dtype).kind == "c":
            ok = bind(ne_p, x, zero)
        else:
            # log(x) only where x > 0 (NaN for x < 0 without NumPy's warning: `(a - b) ** 2`
            # is differentiated in every least-squares loss, though the exponent never is)
            ok = bind(gt_p, x, zero)
        gy = ct * bind(pow_p, x, y) * bind(log_p, bind(select_p, ok, x, bind(ones_like_p, x)))
        bad = bind(select_p, bind(eq_p, x, zero), bind(zeros_like_p, gy),
                   bind(full_like_p, gy, fill_value=np.nan))
        gy = bind(select_p, ok, gy, bad)
        return sums.unbroadcast(gx, x), sums.unbroadcast(gy, y)
    return sums.unbroadcast(gx, x), None


def _minmax_vjp(pick_x):
    def vjp(ct, x, y, needs=(True, True)):
        """Ties split the gradient evenly, as TensorFlow does."""
        xs = bind(pick_x, x, y)
        eq = bind(eq_p, x, y)
        zero = bind(zeros_like_p, ct)
        gx = gy = None
        if eq._t is None and type(eq._v) is np.ndarray and not eq._v.any():
            # eager with no tie (relu's usual case): one select each, the same values
            if needs[0]:
                gx = sums.unbroadcast(bind(select_p, xs, ct, zero), x)
            if needs[1]:
                gy = sums.unbroadcast(bind(select_p, xs, zero, ct), y)
            return gx, gy
        half = ct * 0.5
        if needs[0]:
            gx = sums.unbroadcast(bind(select_p, xs, ct, bind(select_p, eq, half, zero)), x)
        if needs[1]:
            gy = sums.unbroadcast(bind(select_p, xs, zero, bind(select_p, eq, half, ct)), y)
        return gx, gy
    return vjp


add_p = binary("add", np.add, _add_vjp, "x + y", reads=())
sub_p = binary("subtract", np.subtract, _sub_vjp, "x - y", reads=(), needs=True)
mul_p = binary("multiply", np.multiply, _mul_vjp, "x * y", needs=True)
div_p = binary("true_divide", np.true_divide, _div_vjp, "x / y", needs=True)
floordiv_p = binary("floor_divide", np.floor_divide, _zero_grad, "x // y")
rem_p = binary("remainder", np.remainder,
               lambda ct, x, y: (sums.unbroadcast(ct, x),
                                 sums.unbroadcast(-ct * bind(floordiv_p, x, y), y)), "x % y")
pow_p = binary("power", np.power, _pow_vjp, "x ** y")
max_p = binary("maximum", np.maximum, None, "maximum(x, y)")
min_p = binary("minimum", np.minimum, None, "minimum(x, y)")
arctan2_p = binary("arctan2", np.arctan2,
                   lambda ct, y, x: (sums.unbroadcast(ct * x / (x * x + y * y), y),
                                     sums.unbroadcast(-ct * y / (x * x + y * y), x)),
                   "arctan2(x, y)")
bitwise_and_p = binary("bitwise_and", np.bitwise_and, _zero_grad, "x & y")
bitwise_or_p = binary("bitwise_or", np.bitwise_or, _zero_grad, "x | y")
bitwise_xor_p = binary("bitwise_xor", np.bitwise_xor, _zero_grad, "x ^ y")
left_shift_p = binary("left_shift", np.left_shift, _zero_grad, "x << y")
right_shift_p = binary("right_shift", np.right_shift, _zero_grad, "x >> y")
nextafter_p = binary("nextafter", np.nextafter, _zero_grad, "nextafter(x, y)")

# ------------------------------------------------------------------ comparisons and logic
eq_p = binary("equal", np.equal, _zero_grad, "x == y", _bool_abstract)
ne_p = binary("not_equal", np.not_equal, _zero_grad, "x != y", _bool_abstract)
lt_p = binary("less", np.less, _zero_grad, "x < y", _bool_abstract)
le_p = binary("less_equal", np.less_equal, _zero_grad, "x <= y", _bool_abstract)
gt_p = binary("greater", np.greater, _zero_grad, "x > y", _bool_abstract)
ge_p = binary("greater_equal", np.greater_equal, _zero_grad, "x >= y", _bool_abstract)
logical_and_p = binary("logical_and", np.logical_and, _zero_grad, "logical_and(x, y)",
                       _bool_abstract)
logical_or_p = binary("logical_or", np.logical_or, _zero_grad, "logical_or(x, y)",
                      _bool_abstract)
logical_xor_p = binary("logical_xor", np.logical_xor, _zero_grad, "logical_xor(x, y)",
                       _bool_abstract)

max_p.def_vjp(_minmax_vjp(gt_p), needs=True)
min_p.def_vjp(_minmax_vjp(lt_p), needs=True)


# ------------------------------------------------------------------ select (where)
def _select_vjp(ct, c, x, y, needs=(False, True, True)):
    zero = bind(zeros_like_p, ct)
    # select, not multiply: a NaN/inf in the branch not taken must not leak into the gradient
    return (None, sums.unbroadcast(bind(select_p, c, ct, zero), x) if needs[1] else None,
            sums.unbroadcast(bind(select_p, c, zero, ct), y) if needs[2] else None)


_SAME_SIZE_INT = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32),
                  8: np.dtype(np.int64)}


def _select_impl(c, x, y):
    """np.where(c, x, y). NumPy's loop branches on every element, so a data-dependent
    mask (relu's) costs ~1-4 ns an element; for same-shape contiguous operands of a 1-8 byte
    dtype the same bits are picked without branches: y ^ ((x ^ y) & -c), in blocks so the
    mask stays small and in cache."""
    if (type(c) is np.ndarray and type(x) is np.ndarray and type(y) is np.ndarray
            and c.dtype == np.bool_ and x.dtype == y.dtype and x.size >= 4096
            and x.dtype.kind in "biuf" and c.shape == x.shape == y.shape
            and c.flags.c_contiguous and x.flags.c_contiguous and y.flags.c_contiguous):
        it = _SAME_SIZE_INT.get(x.dtype.itemsize)
        if it is not None:
            out = np.empty(x.shape, x.dtype)
            cf = c.reshape(-1).view(np.int8)
            xf, yf, of = x.reshape(-1).view(it), y.reshape(-1).view(it), out.reshape(-1).view(it)
            n = xf.size
            block = 1 << 16
            m = np.empty(min(n, block), it)
            for s in range(0, n, block):
                e = min(s + block, n)
                mm, o, yy = m[:e - s], of[s:e], yf[s:e]
                np.negative(cf[s:e], out=mm)          # True -> all ones, False -> 0
                np.bitwise_xor(xf[s:e], yy, out=o)
                np.bitwise_and(o, mm, out=o)
                np.bitwise_xor(o, yy, out=o)
            return out
    return np.where(c, x, y)


select_p = Primitive("select", _select_impl,
                     lambda c, x, y: Aval(broadcast_shapes(c.shape, x.shape, y.shape), x.dtype))
select_p.def_vjp(_select_vjp, reads=(0,), needs=True)
select_p.batch = _elementwise_batch(select_p)
elementwise(select_p, "where(c, x, y)", ("c", "x", "y"))


# ------------------------------------------------------------------ like-creation (dynamic shapes)
zeros_like_p = Primitive("zeros_like", lambda x: np.zeros_like(x), _unary_abstract)
ones_like_p = Primitive("ones_like", lambda x: np.ones_like(x), _unary_abstract)
full_like_p = Primitive("full_like", lambda x, fill_value: np.full_like(x, fill_value),
                        lambda x, fill_value: Aval(x.shape, x.dtype))
for _p in (zeros_like_p, ones_like_p):
    _p.def_vjp(lambda ct, x: (None,))
    _p.batch = squeezed_ok((lambda p: lambda args, axes, **kw: (bind(p, args[0], **kw),
                                                                axes[0]))(_p))
elementwise(zeros_like_p, "0")      # in a fused loop: a constant, no array
elementwise(ones_like_p, "1")
elementwise(full_like_p, "fill_value")
full_like_p.def_vjp(lambda ct, x, fill_value: (None,))
full_like_p.batch = squeezed_ok(lambda args, axes, fill_value: (
    bind(full_like_p, args[0], fill_value=fill_value), axes[0]))

UNARY_FLOAT = {p.name: p for p in (
    exp_p, exp2_p, expm1_p, log_p, log2_p, log10_p, log1p_p, sqrt_p, cbrt_p, sin_p, cos_p, tan_p,
    arcsin_p, arccos_p, arctan_p, sinh_p, cosh_p, tanh_p, arcsinh_p, arccosh_p, arctanh_p)}
