"""What converted code calls (the module is `_nfag` there): each construct keeps Python's
meaning for Python values and becomes a control-flow primitive (`nf.cond`, `nf.while_loop`,
`nf.scan`) for traced ones. The constructs live in `conditionals.py`, `loops.py` and
`pybuiltins.py`; calls of functions are here.
"""
import builtins
import functools
import threading

from ..core.ndarray import _user_line
from ..core.state import STATE
from ..graph import control as C
from . import conversion, pybuiltins
# the names converted code calls (`_nfag.if_stmt` ...)
from .values import undefined, ld, is_traced  # noqa: F401
from .conditionals import and_, or_, not_, assert_, if_exp, if_stmt  # noqa: F401
from .loops import (range_, while_stmt, for_stmt, TensorRange, TensorEnumerate,  # noqa: F401
                    TensorZip)


# ------------------------------------------------------------------ calls
# Higher-order functions whose function arguments (at these positions) are user code that
# converted code hands them: converted too. Others declare theirs with
# `conversion.converts_arguments` (the mapping functions of vectorize/mapping.py).
_HOFS = {C.cond: (1, 2), C.switch_case: (), C.while_loop: (0, 1), C.fori_loop: (2,),
         C.scan: (0,), C.scan_carry: (0,), functools.reduce: (0,)}


def call(f, args, kwargs=None):
    """`f(*args, **kwargs)`, with `f` converted when it is user code (recursively, as
    TensorFlow's AutoGraph does); the functions given to ndflow's control-flow and mapping
    functions are converted too."""
    kwargs = kwargs or {}
    if f is builtins.range and not kwargs:
        return range_(f, *args)
    if f is builtins.map and args and callable(args[0]):
        # (the function map calls is user code too)
        args = (conversion.convert(args[0], warn=False),) + tuple(args[1:])
    if (f is builtins.enumerate or f is builtins.zip) and any(
            isinstance(a, TensorRange) for a in args):
        args = [a.array() if isinstance(a, TensorRange) else a for a in args]
    if (f is builtins.enumerate or f is builtins.zip) and args and \
            all(is_traced(a) for a in (args[:1] if f is builtins.enumerate else args)):
        return TensorEnumerate(args[0], *args[1:], **kwargs) if f is builtins.enumerate \
            else TensorZip(*args, **kwargs)
    try:
        conv = pybuiltins.CONVERTED.get(f)
    except TypeError:
        conv = None
    if conv is not None and args and (conv[1] is None or conv[1](*args, **kwargs)):
        return conv[0](*args, **kwargs)
    if type(f) is not type and not isinstance(f, (builtins.type(len),)):
        try:
            pos = _HOFS.get(f)
        except TypeError:
            pos = None
        if pos is None:
            pos = getattr(f, conversion.CONVERTS, None)
        if pos is not None:
            args = list(args)
            for i in pos:
                if i < len(args) and callable(args[i]):
                    args[i] = conversion.convert(args[i], warn=False)
            if f is C.switch_case and args and isinstance(args[1] if len(args) > 1 else None,
                                                           (list, tuple)):
                args[1] = [conversion.convert(b, warn=False) if callable(b) else b
                           for b in args[1]]
            for k in ("true_fn", "false_fn", "cond", "body", "fn", "body_fun", "f"):
                if k in kwargs and callable(kwargs[k]):
                    kwargs[k] = conversion.convert(kwargs[k], warn=False)
            return f(*args, **kwargs)
        g = conversion.convert(f, warn=False)
        if g is not f:
            # (inline, not a helper: each level of a recursion costs Python frames)
            code = getattr(g, "__code__", None) or getattr(g, "__func__", g)
            active = _active()
            depth = len(STATE.traces)
            entry = active.get(code)
            if entry is None:
                entry = active[code] = [0, depth, depth]
            entry[0] += 1
            entry[2] = max(entry[2], depth)
            try:
                return g(*args, **kwargs)
            except RecursionError as e:
                if entry[0] > 1 or getattr(e, "_nfag_seen", False):
                    raise
                raise _recursion_error(g, entry[2] - entry[1]) from None
            finally:
                entry[0] -= 1
                if not entry[0]:
                    del active[code]
    return f(*args, **kwargs)


_ACTIVE = threading.local()


def _active():
    """converted code object -> [how many of its calls are running, the trace stack's depth
    at the first, the deepest one a call saw], per thread."""
    d = getattr(_ACTIVE, "d", None)
    if d is None:
        d = _ACTIVE.d = {}
    return d


def _recursion_error(g, deeper):
    name = getattr(g, "__qualname__", g)
    if deeper > 2:
        why = (f"{name} calls itself without end while it is traced (from {_user_line()}): "
               f"AutoGraph unrolls a recursive call at trace time, so its base case must be "
               f"decided by Python values; under a traced condition both branches are traced, "
               f"the recursive one too. Write it as a loop (a `while` on the traced condition), "
               f"or pass the depth as a Python value")
    else:
        why = (f"the recursion of {name} is deeper than Python's limit allows while it is "
               f"traced (from {_user_line()}): converted code takes a few Python frames per "
               f"level (sys.setrecursionlimit raises the limit)")
    err = RecursionError(why)
    err._nfag_seen = True
    return err
