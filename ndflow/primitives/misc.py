"""Primitives that belong to no numeric family: `stop_gradient`, `check_numerics`,
`own_result`, `runtime_warning`, `runtime_error`."""
import numpy as np

from ..core.primitive import Primitive, bind, Aval
from ._util import same_aval, elementwise
from .shape import move_to_front
from ..core.errors import InvalidArgumentError
from ..core.ndarray import SpecializationError
from .elementwise import convert_p


# ------------------------------------------------------------------ stop_gradient
# The identity on values, a constant to every differentiation: its VJP and its JVP are zero
# (None), so neither tapes nor forward accumulators see through it. The kernel returns its
# input buffer: the output is a new value for the tapes, not a copy in memory.
stop_gradient_p = Primitive("stop_gradient", lambda x: x, same_aval, returns_view=True)
stop_gradient_p.def_vjp(lambda ct, x: (None,))
stop_gradient_p.def_jvp(lambda tangents, x: None)
stop_gradient_p.batch = lambda args, axes: (bind(stop_gradient_p, args[0]), axes[0])
# elementwise, but a view of its operand: fusion leaves it out (fused results are fresh)
elementwise(stop_gradient_p, "x")


# ------------------------------------------------------------------ check_numerics
# The identity on values that raises InvalidArgumentError when its input holds NaN or infinity
# (`tf.debugging.check_numerics`). A `check` (an effect), so the compiler keeps it where it was
# written even when its result is unused and never evaluates it at compile time, while a loop
# body holding one can still be differentiated. Its gradient is checked too.
def _check_numerics_impl(x, message):
    a = x if isinstance(x, (np.ndarray, np.generic)) else np.asarray(x.get())
    if a.dtype.kind in "fcV" and not np.isfinite(a).all():
        nan, inf = bool(np.isnan(a).any()), bool(np.isinf(a).any())
        what = "Inf and NaN" if nan and inf else "NaN" if nan else "Inf"
        raise InvalidArgumentError(f"{message} : Tensor had {what} values")
    return x


check_numerics_p = Primitive("check_numerics", _check_numerics_impl,
                             lambda x, message: same_aval(x), check=True)
check_numerics_p.def_vjp(lambda ct, x, message: (bind(
    check_numerics_p, ct, message="Not a number (NaN) or infinity (Inf) values detected in "
                                  "gradient. " + message),))
check_numerics_p.def_jvp(lambda tangents, x, message: tangents[0])
check_numerics_p.batch = lambda args, axes, message: (
    bind(check_numerics_p, args[0], message=message), axes[0])


# ------------------------------------------------------------------ own_result
# `x`, or a copy of it where it may share memory with one of the other operands. The compiler
# puts it before a result that may share a buffer with a constant, an argument or another
# result where the program as written would not (ndflow/graph/memory.py, `own_outputs`): a
# loop that ran no iteration returns its initial values, a view of a constant is still the
# constant. Only the first operand is a value; the others are only compared with it.
def _own_impl(x, *avoid):
    for a in avoid:
        if np.may_share_memory(x, a):
            return x.copy() if hasattr(x, "copy") else np.array(x, copy=True)
    return x


def _own_batch(args, axes):
    x = args[0] if axes[0] is None else move_to_front(args[0], axes[0])
    return bind(own_result_p, x, *args[1:]), (None if axes[0] is None else 0)


own_result_p = Primitive("own_result", _own_impl, lambda x, *avoid: same_aval(x))
own_result_p.def_vjp(lambda ct, x, *avoid: (ct,) + (None,) * len(avoid))
own_result_p.def_jvp(lambda tangents, x, *avoid: tangents[0])
own_result_p.batch = _own_batch


# ------------------------------------------------------------------ runtime_warning
# `x`, with NumPy's RuntimeWarning `message` issued whenever it is computed (with a second
# operand: when any of its elements is true): a composition that NumPy answers with a warning
# (the mean of an empty slice, an all-NaN slice) warns in every mode, also at each call of a
# compiled function, not once while tracing.
def _warn_impl(x, *when, message):
    if not when or np.any(when[0]):
        import warnings
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return x


def _warn_batch(args, axes, message):
    x = args[0] if axes[0] is None else move_to_front(args[0], axes[0])
    return bind(runtime_warning_p, x, *args[1:], message=message), (None if axes[0] is None else 0)


runtime_warning_p = Primitive("runtime_warning", _warn_impl,
                              lambda x, *when, message: same_aval(x), returns_view=True,
                              run_time_check=True)
runtime_warning_p.def_vjp(lambda ct, x, *when, message: (ct,) + (None,) * len(when))
runtime_warning_p.def_jvp(lambda tangents, x, *when, message: tangents[0])
runtime_warning_p.batch = _warn_batch


# ------------------------------------------------------------------ runtime_error
# `x`, or NumPy's `error(message)` where any element of `cond` is true: an error that depends
# on values (weights that sum to zero) raised on every path, also by a compiled function.
# The error is a parameter by name (a saved model holds data, not classes); the names are the
# exceptions NumPy's value checks raise.
ERRORS = {e.__name__: e for e in (ValueError, TypeError, IndexError, ZeroDivisionError,
                                  RuntimeError, OverflowError, np.linalg.LinAlgError,
                                  UnboundLocalError)}


def error_name(error):
    """The `error` parameter of runtime_error for an exception class."""
    if ERRORS.get(error.__name__) is not error:
        raise ValueError(f"runtime_error: {error.__name__} is not one of {sorted(ERRORS)}")
    return error.__name__


def _error_impl(x, cond, error, message):
    if np.any(cond):
        raise (ERRORS[error] if isinstance(error, str) else error)(message)
    return x


runtime_error_p = Primitive("runtime_error", _error_impl,
                            lambda x, cond, error, message: same_aval(x), returns_view=True,
                            run_time_check=True)
runtime_error_p.def_vjp(lambda ct, x, cond, error, message: (ct, None))
runtime_error_p.def_jvp(lambda tangents, x, cond, error, message: tangents[0])


def _error_batch(args, axes, error, message):
    x = args[0] if axes[0] is None else move_to_front(args[0], axes[0])
    return bind(runtime_error_p, x, args[1], error=error, message=message), \
        (None if axes[0] is None else 0)


runtime_error_p.batch = _error_batch


# ------------------------------------------------------------------ expect_case
# A value-dependent dtype (NumPy answers the quantile of a slice holding NaN in the array's own
# dtype, else in the interpolation's): `x`, cast to `dtype` where the first element of `flag`
# holds. A traced graph has fixed dtypes, so `nf.function` assumes one case per site
# (`expect`); at run time this checks the assumption and otherwise fails the call with
# SpecializationError, and `nf.function` runs the graph traced for the observed case (the
# mechanism of linalg_decomp's expect_real).
def _expect_case_impl(x, flag, expect, site, dtype):
    f = np.asarray(flag).reshape(-1)
    seen = bool(f[0]) if f.size else True     # no slice at all: NumPy's empty answer
    if seen != expect:
        raise SpecializationError(
            "a value-dependent result dtype (NumPy's) differs from what the traced graph "
            "assumed; call the nf.function again to use the graph for these values",
            site, seen)
    return x.astype(dtype) if expect else x


def _expect_case_abstract(x, flag, expect, site, dtype):
    return Aval(x.shape, np.dtype(dtype) if expect else x.dtype)


def _expect_case_vjp(ct, x, flag, expect, site, dtype):
    if not expect:
        return ct, None
    return bind(convert_p, ct, dtype=np.dtype(x.dtype)), None


def _expect_case_batch(args, axes, expect, site, dtype):
    x = args[0] if axes[0] is None else move_to_front(args[0], axes[0])
    flag = args[1] if axes[1] is None else move_to_front(args[1], axes[1])
    # the first element of the batched flag is the first example's: NumPy's first slice
    return (bind(expect_case_p, x, flag, expect=expect, site=site, dtype=dtype),
            None if axes[0] is None else 0)


expect_case_p = Primitive("expect_case", _expect_case_impl, _expect_case_abstract,
                          returns_view=True, run_time_check=True)
expect_case_p.def_vjp(_expect_case_vjp)
expect_case_p.batch = _expect_case_batch
