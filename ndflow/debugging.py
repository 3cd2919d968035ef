"""`nf.print` and `nf.debugging`: seeing values and catching NaN/inf while a program runs, eager
or compiled (TensorFlow's `tf.print` and `tf.debugging`).

`nf.print` is a sink primitive (`primitives/host.py`): inside `nf.function` it prints each time
the graph runs, never while tracing, also inside `nf.cond`/`nf.while_loop`/`nf.scan` bodies.
`enable_check_numerics` checks every operation's floating result, eagerly in `bind` and in the
code `nf.function` generates (functions traced while it is on get code with a check after each
operation; with it off the code is unchanged).
"""
import re
import sys

import numpy as np

from .core.ndarray import ndarray
from .core.primitive import bind
from .core.state import STATE
from .core.errors import InvalidArgumentError  # noqa: F401  (nf.debugging's error type)
from .primitives.host import print_p, sink_primitive, format_tensor
from .primitives.misc import check_numerics_p
from .train.variable import Variable
from . import numpy as tnp
from .primitives._util import broadcast_shapes

__all__ = ["check_numerics", "enable_check_numerics", "disable_check_numerics",
           "assert_equal", "assert_all_finite", "print_"]


# ------------------------------------------------------------------ nf.print
_SLOT = "\x00nf.print:%d\x00"
_SLOT_RE = re.compile("\x00nf\\.print:(\\d+)\x00")


class _Slot:
    """Stands for an array in the text pprint makes of a structure (its repr is a marker that
    is cut out again: the array's text is made when the print runs)."""
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return _SLOT % self.k


def _is_tensor(x):
    return isinstance(x, (ndarray, Variable))


def _stream_name(stream):
    if stream is None or stream is sys.stderr or stream is sys.__stderr__:
        return "stderr"
    if stream is sys.stdout or stream is sys.__stdout__:
        return "stdout"
    if isinstance(stream, str) and stream.startswith("file://") and len(stream) > 7:
        return stream
    import logging
    for level in ("debug", "info", "warning", "error", "critical"):
        if stream is getattr(logging, level):
            return "log:" + level
    raise ValueError(f"nf.print: unsupported output_stream {stream!r}; supported: sys.stderr, "
                     f"sys.stdout, 'file://<path>', logging.debug/info/warning/error/critical")


def _replace_tensors(x, tensors):
    """`x` with each array replaced by a _Slot (arrays collected into `tensors`)."""
    if _is_tensor(x):
        tensors.append(x.value() if not isinstance(x, ndarray) else x)
        return _Slot(len(tensors) - 1)
    if isinstance(x, dict):
        return {k: _replace_tensors(v, tensors) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_replace_tensors(v, tensors) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_replace_tensors(v, tensors) for v in x)
    return x


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """Print `inputs` (`tf.print`): eagerly, now; inside `nf.function`, each time the compiled
    function runs (not when it is traced), also inside control-flow bodies; under
    `vectorized_map`, the batched values (a branch of a cond chosen per example runs, and
    prints, for the whole batch). Arrays print as TensorFlow prints tensors (`[1 2 3]`,
    the first and last `summarize` entries of each axis, `-1` for all); strings print as they
    are, other values and structures holding arrays as `pprint` shows them.

    `output_stream`: `sys.stderr` (default), `sys.stdout`, `'file://<path>'` (appended) or a
    `logging` function such as `logging.info`.

    Examples
    --------
    >>> import sys, ndflow as nf, ndflow.numpy as tnp
    >>> nf.print("x =", tnp.arange(10), output_stream=sys.stdout)
    x = [0 1 2 ... 7 8 9]
    >>> f = nf.function(lambda x: nf.print("running with", x, output_stream=sys.stdout))
    >>> f(tnp.asarray([1, 2]))
    running with [1 2]
    """
    stream = _stream_name(output_stream)
    if summarize is None:
        summarize = 3
    summarize = int(summarize)
    tensors, texts = [], []
    for x in inputs:
        if isinstance(x, str):
            texts.append(x)
        elif _is_tensor(x):
            texts.append(repr(_replace_tensors(x, tensors)))
        else:
            import pprint
            texts.append(pprint.pformat(_replace_tensors(x, tensors)))
    text = sep.join(texts) + end
    # cut the text at the slots: the arrays' text goes between the parts when the print runs
    parts, order, pos = [], [], 0
    for m in _SLOT_RE.finditer(text):
        parts.append(text[pos:m.start()])
        order.append(tensors[int(m.group(1))])
        pos = m.end()
    parts.append(text[pos:])
    bind(print_p, *order, parts=tuple(parts), stream=stream, summarize=summarize)


# ------------------------------------------------------------------ checks
def check_numerics(tensor, message, name=None):
    """`tensor` itself, after checking that it holds no NaN or infinity; otherwise raises
    `nf.errors.InvalidArgumentError` with `message` (`tf.debugging.check_numerics`). Inside
    `nf.function` the check runs at every call. Its gradient checks the gradient too.

    Examples
    --------
    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> nf.debugging.check_numerics(tnp.asarray([1., 2.]), "fine")
    array([1., 2.], dtype=float64)
    >>> nf.debugging.check_numerics(tnp.asarray([1., float("nan")]), "loss")
    Traceback (most recent call last):
    ...
    ndflow.core.errors.InvalidArgumentError: loss : Tensor had NaN values
    """
    x = tensor if isinstance(tensor, ndarray) else tnp.asarray(tensor)
    return bind(check_numerics_p, x, message=str(message))


def assert_all_finite(t, msg, name=None):
    """`check_numerics(t, msg)`: `t` after checking it is finite (`tf.debugging.assert_all_finite`)."""
    return check_numerics(t, msg, name)


def _assert_equal_write(x, y, message, summarize):
    import numpy as np
    try:
        ok = bool(np.all(np.equal(x, y)))
    except ValueError:
        ok = False
    if not ok:
        where = ""
        if np.shape(x) == np.shape(y) or np.ndim(x) == 0 or np.ndim(y) == 0:
            bad = np.argwhere(np.broadcast_to(np.not_equal(x, y), np.broadcast_shapes(
                np.shape(x), np.shape(y))))
            if bad.size:
                where = f" first at index {tuple(int(i) for i in bad[0])}"
        raise InvalidArgumentError(
            f"{message + ': ' if message else ''}Condition x == y did not hold{where}.\n"
            f"x (shape={np.shape(x)} dtype={np.asarray(x).dtype}) = "
            f"{format_tensor(x, summarize)}\ny (shape={np.shape(y)} "
            f"dtype={np.asarray(y).dtype}) = {format_tensor(y, summarize)}")


_assert_equal_p = sink_primitive("assert_equal", _assert_equal_write)


def assert_equal(x, y, message=None, summarize=None, name=None):
    """Raise `nf.errors.InvalidArgumentError` unless `x == y` everywhere (with broadcasting),
    as `tf.debugging.assert_equal`: eagerly now, inside `nf.function` at every call. Shapes
    that do not broadcast are an error when known (ValueError), as in TensorFlow."""
    x = x if isinstance(x, ndarray) else tnp.asarray(x)
    y = y if isinstance(y, ndarray) else tnp.asarray(y)
    broadcast_shapes(tuple(x.shape), tuple(y.shape), what="assert_equal: x and y")
    bind(_assert_equal_p, x, y, message="" if message is None else str(message),
         summarize=3 if summarize is None else int(summarize))


def _index_range_write(indices, size, what):
    idx = np.asarray(indices)
    out = (idx < 0) if size < 0 else (idx < 0) | (idx >= size)
    bad = np.argwhere(out) if idx.size else ()
    if len(bad):
        pos = tuple(int(i) for i in bad[0])
        bound = "a size unknown while tracing" if size < 0 else size
        raise InvalidArgumentError(f"{what}: indices[{','.join(map(str, pos))}] = {idx[pos]} "
                                   f"is not in [0, {bound})")


# TensorFlow refuses negative and too large indices (on CPU) where NumPy wraps negative ones:
# TF-style indexing functions check with this, eagerly now and compiled at every call
_index_range_p = sink_primitive("assert_index_range", _index_range_write)


def _check_index_range(indices, size, what):
    """Raise `InvalidArgumentError` unless every entry of the integer array `indices` is in
    [0, size), as TensorFlow's gather/scatter do on CPU (NumPy would wrap negative ones).
    `size` None (unknown while tracing): only negative entries are refused here."""
    bind(_index_range_p, indices, size=-1 if size is None else int(size), what=str(what))


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Raise `nf.errors.InvalidArgumentError` at the first operation whose floating result
    holds NaN or infinity although its inputs were finite, naming the operation and the line
    of your code that made it (`tf.debugging.enable_check_numerics`). Eager operations are
    checked as they run; an `nf.function` called while this is on is traced again into code
    that checks each operation at every call (without fusion or constant folding, so each
    operation is seen). Values that were already NaN or infinite when they came in (data, an
    `inf` constant) are not reported at every operation they flow through. For the calling
    thread only, as in TensorFlow; slower, for debugging."""
    STATE.check_numerics = True
    STATE.refresh()


def disable_check_numerics():
    """Turn `enable_check_numerics` off (for the calling thread). Functions then run their
    unchecked code, which is what they had before it was turned on."""
    STATE.check_numerics = False
    STATE.refresh()
