"""Elementwise primitives for the ufuncs that composition cannot express exactly: fmod, hypot,
ldexp, frexp, spacing, gcd, lcm, bitwise_count, logaddexp, logaddexp2. (copysign, fmax,
heaviside, modf and the rest are compositions in the NumPy layer.)

As in elementwise.py, operands arrive promoted to NumPy's loop dtypes.
"""
import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import broadcast_shapes, elementwise, numpy_or
from .sums import unbroadcast
from .elementwise import unary, binary, _zero_grad
from .elementwise import (trunc_p, div_p, select_p, eq_p, zeros_like_p, ones_like_p, neg_p,
                          isinf_p, full_like_p, sub_p, add_p, exp_p, exp2_p)
from .misc import stop_gradient_p


def _binary_abstract_first(x, y):
    return Aval(broadcast_shapes(x.shape, y.shape), x.dtype)


# ------------------------------------------------------------------ fmod: C's remainder (sign of x)
def _fmod_vjp(ct, x, y):
    """fmod(x, y) = x - trunc(x / y) * y."""
    return (unbroadcast(ct, x), unbroadcast(-ct * bind(trunc_p, bind(div_p, x, y)), y))


fmod_p = binary("fmod", np.fmod, _fmod_vjp, "fmod(x, y)")


# ------------------------------------------------------------------ hypot
def _hypot_vjp(ct, x, y, out):
    """d hypot = (x dx + y dy) / hypot; 0 at the origin (a subgradient) rather than NaN."""
    zero = bind(eq_p, out, bind(zeros_like_p, out))
    q = ct / bind(select_p, zero, bind(ones_like_p, out), out)
    q = bind(select_p, zero, bind(zeros_like_p, q), q)
    return unbroadcast(q * x, x), unbroadcast(q * y, y)


hypot_p = binary("hypot", np.hypot, scalar="hypot(x, y)")
hypot_p.def_vjp(_hypot_vjp, uses_out=True)


# ------------------------------------------------------------------ ldexp / frexp
# ldexp(x, i) = x * 2**i with one rounding; its derivative in x is the same scaling
ldexp_p = binary("ldexp", np.ldexp, lambda ct, x, i: (unbroadcast(bind(ldexp_p, ct, i), x), None),
                 "ldexp(x, y)")


def _frexp_vjp(cts, x):
    """mantissa = x * 2**-e with e piecewise constant: d mantissa = ldexp(dx, -e)."""
    ct_m, _ = cts
    _, e = bind(frexp_p, x)
    return (bind(ldexp_p, ct_m, bind(neg_p, e)),)


frexp_p = Primitive("frexp", np.frexp,
                    lambda x: (Aval(x.shape, x.dtype), Aval(x.shape, np.dtype(np.int32))),
                    multiple_results=True)
frexp_p.def_vjp(_frexp_vjp)
frexp_p.batch = lambda args, axes: (bind(frexp_p, args[0]), (axes[0], axes[0]))
elementwise(frexp_p)        # (two results: fusion takes single-result primitives only)


# ------------------------------------------------------------------ logaddexp, logaddexp2
# NumPy's kernel, bit for bit, in every mode: a composition max + log1p(exp(-|x - y|)) differs
# from it in the last bit (NumPy's SIMD exp and log1p are not its scalar ones) and, for
# float16, computes in float16 where NumPy's loop computes in float32.
def _logaddexp_vjp(exp_p, log_half):
    def vjp(ct, x, y, out):
        """d out / dx = base**(x - out): exactly 1/2 at ties (also where both are the same
        infinity, where x - out is NaN). At a finite tie the exponent is moved onto log(1/2) by
        a gradient-stopped correction (exact: the two are within one rounding of each other),
        so the value is 1/2 while the derivative is still base**(x - out)'s (softplus''(0) =
        1/4, not the 0 a switch to a constant would give)."""
        tie = bind(eq_p, x, y)
        inf_tie = tie & bind(isinf_p, x)

        def share(v):
            d = bind(sub_p, v, out)
            # v == out: the other operand adds nothing (it is -inf, or v is the infinite
            # maximum, where v - out is NaN): the whole derivative, base**0
            d = bind(select_p, bind(eq_p, v, out), bind(full_like_p, d, fill_value=0.0), d)
            d = bind(select_p, inf_tie, bind(full_like_p, d, fill_value=log_half), d)
            fix = bind(sub_p, bind(full_like_p, d, fill_value=log_half), d)
            fix = bind(select_p, tie, fix, bind(full_like_p, d, fill_value=0.0))
            d = bind(add_p, d, bind(stop_gradient_p, fix))
            return ct * bind(exp_p, d)
        return unbroadcast(share(x), x), unbroadcast(share(y), y)
    return vjp


def _logaddexp_prims():
    lae = binary("logaddexp", np.logaddexp, scalar="logaddexp(x, y)")
    lae.def_vjp(_logaddexp_vjp(exp_p, -float(np.log(2.0))), uses_out=True)
    lae2 = binary("logaddexp2", np.logaddexp2, scalar="logaddexp2(x, y)")
    lae2.def_vjp(_logaddexp_vjp(exp2_p, -1.0), uses_out=True)
    return lae, lae2


logaddexp_p, logaddexp2_p = _logaddexp_prims()


# ------------------------------------------------------------------ piecewise constant / integer
def _spacing_impl(x):
    return numpy_or(lambda: np.spacing(x), lambda: _spacing_by_nextafter(x), x)


def _spacing_by_nextafter(x):
    """For a device library without the ufunc (CuPy): the distance to the next float away
    from zero (-0.0 counts as +0.0, NaN and inf give NaN, as NumPy's); float16 has no such
    kernel there."""
    dt = np.result_type(np.spacing(np.zeros(1, x.dtype)))
    if dt.itemsize < 4:
        raise TypeError(f"spacing of {x.dtype} (a float16 result) has no kernel here")
    x = x.astype(dt, copy=False)
    inf = np.asarray(np.inf, dt)
    return np.where(x < 0, np.nextafter(x, -inf) - x, np.nextafter(x, inf) - x)


spacing_p = unary("spacing", _spacing_impl, _zero_grad, "spacing(x)")
gcd_p = binary("gcd", np.gcd, _zero_grad, "gcd(x, y)")
lcm_p = binary("lcm", np.lcm, _zero_grad, "lcm(x, y)")
bitwise_count_p = unary("bitwise_count", np.bitwise_count, _zero_grad, "bitwise_count(x)",
                        abstract=lambda x: Aval(x.shape, np.dtype(np.uint8)))
