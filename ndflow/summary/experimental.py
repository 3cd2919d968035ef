"""`nf.summary.experimental`: the default step, as `tf.summary.experimental`."""
from . import _STATE


def set_step(step):
    """Set the default step of the current thread's summaries: an int, an integer array or
    an `nf.Variable` (read each time a summary is written; inside `nf.function`, at each run),
    or None to unset it."""
    _STATE.step = step


def get_step():
    """The default step (what `set_step` or `as_default(step=...)` set), or None."""
    return _STATE.step
