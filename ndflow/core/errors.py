"""Error types named as TensorFlow's (`nf.errors`), and the numerics check that
`nf.debugging.enable_check_numerics` runs after each operation (eagerly in `bind`, compiled in
the generated code)."""
import os
import sys

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_line():
    """The innermost stack frame outside ndflow, as 'file:line', for error messages."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(_ROOT):
            return "%s:%d" % (fn, f.f_lineno)
        f = f.f_back
    return "<unknown>"


class TracingError(TypeError):
    """A Python-level decision (bool, int, len of unknown size, conversion to NumPy) was asked
    of a symbolic value inside `nf.function` or `nf.vectorized_map`."""


class SpecializationError(TracingError):
    """A compiled graph assumed something about values that a call's values contradict (the
    eigenvalues of a real matrix are all real, so NumPy's result is real): `nf.function`
    catches it and runs the graph traced for what was observed (`site`: which assumption of
    the trace, `observed`: the value seen). Raised to the user only by a graph that cannot be
    retraced (a concrete or saved function)."""

    def __init__(self, msg, site=None, observed=None):
        super().__init__(msg)
        self.site, self.observed = site, observed


class OpError(Exception):
    """An operation failed while it ran, as `tf.errors.OpError`. Built with a message, or with
    TensorFlow's `(node_def, op, message)`."""

    def __init__(self, *args):
        if len(args) == 3:
            self.node_def, self.op, msg = args
        else:
            self.node_def = self.op = None
            msg = args[0] if args else ""
        self.message = str(msg)
        super().__init__(self.message)

    def __str__(self):
        return self.message


class InvalidArgumentError(OpError, ValueError):
    """An operation received an invalid argument (`tf.errors.InvalidArgumentError`): NaN or
    infinity under `check_numerics`, a failed `assert_equal`. A ValueError as well, so
    `except ValueError` catches it."""


class DataLossError(OpError, ValueError):
    """Unrecoverable data loss or corruption (`tf.errors.DataLossError`): a tensor in a
    checkpoint or saved-model file whose bytes no longer match the checksum recorded when it
    was written. A ValueError as well, so `except ValueError` catches every damaged file.

    >>> import ndflow as nf
    >>> issubclass(nf.errors.DataLossError, ValueError)
    True
    """


def _counts(a):
    a = np.asarray(a)
    return int(np.count_nonzero(np.isnan(a))), int(np.count_nonzero(np.isinf(a)))


def _finite(a):
    a = np.asarray(a)
    if a.dtype.kind not in "fc" and a.dtype.kind != "V":
        return True
    return bool(np.isfinite(a).all())


def _host(b):
    get = getattr(b, "get", None)
    return b if isinstance(b, (np.ndarray, np.generic)) or get is None else get()


def nonfinite_error(name, outs, ins):
    """The InvalidArgumentError for operation `name` when one of its floating outputs holds NaN
    or infinity although it has inputs and they are all finite (the op that made the value,
    not every later op it flows through); None otherwise. `outs`, `ins`: backend buffers."""
    if not ins:
        return None     # created from Python values (fills, reads, draws): nothing computed
    for k, o in enumerate(outs):
        o = _host(o)
        if getattr(o, "dtype", None) is None or o.dtype.kind not in "fcV" or _finite(o):
            continue
        if not all(_finite(_host(i)) for i in ins):
            return None
        nan, inf = _counts(o)
        what = " and ".join(w for w, c in (("NaN", nan), ("infinity", inf)) if c)
        return InvalidArgumentError(
            f"check_numerics: operation '{name}' produced {what} from finite inputs "
            f"(output {k}, {np.dtype(o.dtype).name}{list(np.shape(o))}: {nan} NaN, "
            f"{inf} infinite of {np.size(o)} elements)")
    return None
