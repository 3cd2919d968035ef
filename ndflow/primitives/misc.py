"""Primitives that belong to no numeric family: `stop_gradient`, `check_numerics`."""
from ..core.primitive import Primitive, bind
from ._util import same_aval


# ------------------------------------------------------------------ stop_gradient
# The identity on values, a constant to every differentiation: its VJP and its JVP are zero
# (None), so neither tapes nor forward accumulators see through it. The kernel returns its
# input buffer: the output is a new value for the tapes, not a copy in memory.
stop_gradient_p = Primitive("stop_gradient", lambda x: x, same_aval)
stop_gradient_p.def_vjp(lambda ct, x: (None,))
stop_gradient_p.def_jvp(lambda tangents, x: None)
stop_gradient_p.batch = lambda args, axes: (bind(stop_gradient_p, args[0]), axes[0])
stop_gradient_p.fusion = "{0}"


# ------------------------------------------------------------------ check_numerics
# The identity on values that raises InvalidArgumentError when its input holds NaN or infinity
# (`tf.debugging.check_numerics`). A `check` (an effect), so the compiler keeps it where it was
# written even when its result is unused and never evaluates it at compile time, while a loop
# body holding one can still be differentiated. Its gradient is checked too.
def _check_numerics_impl(x, message):
    import numpy as np
    a = x if isinstance(x, (np.ndarray, np.generic)) else np.asarray(x.get())
    if a.dtype.kind in "fcV" and not np.isfinite(a).all():
        from ..core.errors import InvalidArgumentError
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
