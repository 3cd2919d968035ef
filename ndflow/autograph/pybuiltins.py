"""Python's builtins on traced values in converted code.

Each keeps Python's meaning (NumPy's, for arrays) on Python and eager values, and on traced
ones gives the value Python would give, as an array, or a clear error:

- `len(x)`: an int when the first size is known, else the run-time size (an int64 array);
- `min` / `max` (several arguments or one iterable, `key=`, `default=`): Python's comparisons
  (`<` / `>`, the first extreme wins, NaN as Python orders it), one `where` per comparison,
  or one staged loop over a traced array's rows;
- `any` / `all` over a traced array's rows or an iterable holding traced values;
- `sum` over the rows of an array whose length is unknown while tracing (one staged loop
  adding in Python's order); of a known length Python's own loop adds the rows.

`range`, `enumerate` and `zip` are in loops.py; `print` runs while tracing (as in
TensorFlow); `int()`, `float()`, `bool()` of a traced value raise `nf.TracingError`.
"""
import builtins

import numpy as np

from ..core.ndarray import ndarray, TracingError, _user_line
from ..core import dtypes as _dt
from ..graph import control as C
from ..graph.static import shape_of
from ..numpy._core import checked
from . import conversion
from .values import tnp, _value, is_traced, _pred

_NO_DEFAULT = object()


def _length(x):
    """The first size of a traced array: an int, or its run-time value (int64)."""
    if x.ndim == 0:
        raise TypeError("len() of unsized object")
    if x.shape[0] is not None:
        return x.shape[0]
    return shape_of(x, out_type=np.int64)[0]


def len_(x):
    """`len(x)`: Python's for everything but a traced array whose first size is unknown, where
    it is that size at run time."""
    if is_traced(x):
        return _length(_value(x))
    return builtins.len(x)


# ------------------------------------------------------------------ min / max
def _truth(c, what):
    """A comparison's result as Python's `bool()` takes it: Python's, or a traced 0-d bool."""
    if is_traced(c):
        return _pred(c, what, _user_line())
    return bool(c)


def _same_kind(items, what):
    """Python's min/max returns one of its arguments; a traced choice between arrays is one
    array, so they must agree in shape and dtype (Python numbers take an array's dtype, as
    NumPy's weak scalars)."""
    arrays = [_value(x) for x in items if isinstance(_value(x), (ndarray, np.ndarray))]
    shapes = {tuple(a.shape) for a in arrays}
    dtypes = {np.dtype(a.dtype) for a in arrays}
    if len(shapes) > 1 or (shapes and len(arrays) < len(items) and shapes != {()}):
        raise ValueError(f"{what} of traced values of shapes "
                         f"{[tuple(getattr(_value(x), 'shape', ())) for x in items]} at "
                         f"{_user_line()}: the result's shape would depend on the values; give "
                         f"it arrays of one shape")
    if len(dtypes) > 1:
        raise TypeError(f"{what} of traced arrays of dtypes {sorted(d.name for d in dtypes)} at "
                        f"{_user_line()}: the result's dtype would depend on the values; cast "
                        f"them to one dtype")


def _select(c, new, old):
    return new if c is True else old if c is False else tnp.where(c, _value(new), _value(old))


def _fold(items, key, better, what):
    """Python's min/max over a list of values, Python's algorithm: each comparison decides in
    Python when it can; a traced one selects with `where`."""
    best = items[0]
    bkey = key(best) if key is not None else best
    checked_kinds = False
    for item in items[1:]:
        k = key(item) if key is not None else item
        c = _truth(better(k, bkey), what)
        if c is not True and c is not False and not checked_kinds:
            _same_kind(items, what)
            checked_kinds = True
        best, bkey = _select(c, item, best), _select(c, k, bkey)
    return best


def _staged_fold(xs, key, better, what):
    """Python's min/max over the rows of a traced array (at least one row): one while loop
    carrying the best row (and its key)."""
    n = _length(xs)
    k0 = key(xs[0]) if key is not None else xs[0]

    def cond(i, best, bkey):
        return i < n

    def body(i, best, bkey):
        item = xs[i]
        k = key(item) if key is not None else item
        c = _pred(better(k, bkey), what, _user_line())
        return (i + 1, tnp.where(c, item, best), tnp.where(c, k, bkey))
    k0 = k0 if isinstance(k0, ndarray) else tnp.asarray(k0)
    return C.while_loop(cond, body, (tnp.asarray(1, dtype=np.int64), xs[0], k0))[1]


def _extreme(name, better, args, kwargs):
    what = name + "()"
    key = kwargs.pop("key", None)
    default = kwargs.pop("default", _NO_DEFAULT)
    if kwargs:
        raise TypeError(f"{what} got an unexpected keyword argument {next(iter(kwargs))!r}")
    if key is not None:
        key = conversion.convert(key, warn=False)      # (converted, as a call is)
    if len(args) > 1:
        if default is not _NO_DEFAULT:
            raise TypeError(f"Cannot specify a default for {what} with multiple positional "
                            f"arguments")
        return _fold(list(args), key, better, what)
    if not args:
        raise TypeError(f"{name} expected at least 1 argument, got 0")
    it = args[0]
    if is_traced(it):
        xs = _value(it)
        if xs.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        if xs.shape[0] is None:
            if default is _NO_DEFAULT:
                xs = checked(xs, _length(xs) == 0, ValueError, f"{what} arg is an empty sequence")
                return _staged_fold(xs, key, better, what)
            # the default when there is no row: one `cond` (it runs the branch it takes)
            _same_kind([xs[0], default], what)
            d = _value(default)
            if not isinstance(d, (ndarray, np.ndarray)):
                if _dt.result_type(xs.dtype, d) != xs.dtype:
                    raise TypeError(f"{what} of {xs.dtype.name} rows with the default {d!r} at "
                                    f"{_user_line()}: the result's dtype would depend on the "
                                    f"values")
                d = tnp.asarray(d, dtype=xs.dtype)
            return C.cond(_length(xs) > 0, lambda: _staged_fold(xs, key, better, what),
                          lambda: d)
        if xs.shape[0] == 0:
            if default is _NO_DEFAULT:
                raise ValueError(f"{what} arg is an empty sequence")
            return default
        return _staged_fold(xs, key, better, what)
    items = list(it)
    if not items:
        if default is _NO_DEFAULT:
            raise ValueError(f"{what} arg is an empty sequence")
        return default
    return _fold(items, key, better, what)


def min_(*args, **kwargs):
    """`min(...)` (Python's: an item replaces the best when it is `<` it)."""
    return _extreme("min", lambda a, b: a < b, args, dict(kwargs))


def max_(*args, **kwargs):
    """`max(...)` (Python's: an item replaces the best when it is `>` it)."""
    return _extreme("max", lambda a, b: a > b, args, dict(kwargs))


# ------------------------------------------------------------------ any / all / sum
def _rows_truth(xs, what):
    """The truth of each row of the traced array `xs` as Python's `bool()` takes it (a row
    must have one element), as a 1-d bool array."""
    if xs.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    size = 1
    for d in xs.shape[1:]:
        size = None if d is None or size is None else size * d
    if size == 1 or xs.shape[0] == 0:
        return tnp.reshape(xs, (xs.shape[0] if xs.shape[0] is not None else -1,)) != 0 \
            if size == 1 else tnp.zeros((0,), dtype=bool)
    if size is None or xs.shape[0] is None:
        raise TracingError(f"{what} of a traced array of shape {tuple(xs.shape)} at "
                           f"{_user_line()}: the truth of a row needs one element per row; use "
                           f"tnp.any / tnp.all")
    raise ValueError("The truth value of an array with more than one element is ambiguous. "
                     "Use a.any() or a.all()")


def _any_all(it, what, stop):
    """Python's any (`stop` True) / all (`stop` False): the items in order, stopping at the
    first whose truth is the Python value `stop`; traced truths are combined."""
    if is_traced(it):
        rows = _rows_truth(_value(it), what)
        return tnp.any(rows) if stop else tnp.all(rows)
    out = not stop
    for v in it:
        c = _truth(v, what)
        if c is stop:
            return stop
        if c is not (not stop):
            out = c if out is (not stop) else (
                tnp.logical_or(out, c) if stop else tnp.logical_and(out, c))
    return out


def any_(it):
    """`any(it)`: True when an item is true (Python's `bool()` of each)."""
    return _any_all(it, "any()", True)


def all_(it):
    """`all(it)`: True when every item is true."""
    return _any_all(it, "all()", False)


def sum_(it, start=0):
    """`sum(it, start)`: Python's loop, staged over the rows of a traced array whose length is
    unknown while tracing (added in Python's order: start + row 0 + row 1 ...)."""
    xs = _value(it)
    if not (is_traced(it) and xs.ndim and xs.shape[0] is None):
        return builtins.sum(it, start)
    n = _length(xs)
    # (the first row, or zeros when there is none: a sum over one row is that row)
    first = tnp.sum(xs[:1], axis=0, dtype=xs.dtype)
    acc = start + first
    acc = acc if isinstance(acc, ndarray) else tnp.asarray(acc)

    def body(i, acc):
        return i + 1, acc + xs[i]
    return C.while_loop(lambda i, acc: i < n, body, (tnp.asarray(1, dtype=np.int64), acc))[1]


_REFUSED = {builtins.int: "x.astype(np.int64) (truncates as int() does)",
            builtins.float: "x.astype(np.float64)", builtins.complex: "x.astype(np.complex128)",
            builtins.bool: "x != 0, or an `if` on the value (converted to nf.cond)",
            builtins.sorted: "tnp.sort", builtins.filter: "tnp.where or boolean indexing"}


def _refuse(f):
    def refused(*args, **kwargs):
        raise TracingError(
            f"{f.__name__}() of a traced value at {_user_line()}: its Python value is not known "
            f"while tracing, and it stays an array in the graph; use {_REFUSED[f]}")
    return refused


def _any_traced(*args, **kwargs):
    return any(is_traced(a) for a in list(args) + list(kwargs.values()))


# builtin -> (its converted form, whether a call goes there: Python's own algorithm for the
# first four, which give Python's results on Python values too)
CONVERTED = {builtins.min: (min_, None), builtins.max: (max_, None),
             builtins.any: (any_, None), builtins.all: (all_, None),
             builtins.len: (len_, lambda x, *a, **k: is_traced(x)),
             builtins.sum: (sum_, lambda x, *a, **k: is_traced(x) and _value(x).ndim > 0 and
                            _value(x).shape[0] is None)}
CONVERTED.update({f: (_refuse(f), _any_traced) for f in _REFUSED})
