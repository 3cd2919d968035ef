"""Primitives that belong to no numeric family: `stop_gradient`."""
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
