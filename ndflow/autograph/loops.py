"""`for` and `while` in converted code: Python loops over Python values (they unroll while
tracing), one staged loop (`nf.while_loop`, `nf.scan`) over traced conditions, traced rows,
and `range` / `enumerate` / `zip` with traced arguments. Every function takes `loc`, the user's
'file:line' of the statement, for its error messages."""
import builtins

import numpy as np

from ..core.ndarray import ndarray, TracingError, _user_line
from ..core import tree
from ..graph import control as C
from ..graph.static import shape_of
from ..graph.trace import trace_body
from ..numpy._core import checked
from .values import (tnp, Undefined, _value, is_traced, _pred, _changed_in_place, _write_back,
                     _tensorlike, _same_static, _placeholder, _shown, _PY_NUMBERS)
from .conditionals import if_stmt


# ------------------------------------------------------------------ loops
class TensorRange:
    """`range(...)` with a traced bound: iterated by a staged loop. Its elements are
    `start + j * step` for `j < length`, as int64 arrays (Python's ints: NumPy's int64);
    `reversed()` of it is one too."""

    def __init__(self, *args, loc=None):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range expected {'at least 1' if not args else 'at most 3'} "
                            f"arguments, got {len(args)}")
        args = [_int_arg(a, "range() arg %d" % (i + 1)) for i, a in enumerate(args)]
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            (args[0], args[1], 1) if len(args) == 2 else args)
        if type(step) is int and step == 0:
            raise ValueError("range() arg 3 must not be zero")
        if isinstance(step, ndarray):
            # a run-time check, as Python's ValueError (TensorFlow's range raises too): a zero
            # step would otherwise run no iteration, or forever
            step = checked(step, step == 0, ValueError, "range() arg 3 must not be zero")
        self.start, self.stop, self.step = start, stop, step
        self.length = _range_length(start, stop, step)

    def at(self, j):
        """The element `j` (a traced int64)."""
        if type(self.start) is int and self.start == 0 and type(self.step) is int and \
                self.step == 1:
            return j
        return self.start + j * self.step

    def array(self):
        """Its elements as a 1-d int64 array (computed when the function runs)."""
        return self.start + tnp.arange(self.length, dtype=np.int64) * self.step

    def __reversed__(self):
        r = object.__new__(TensorRange)
        r.length = self.length
        r.start = self.start + (self.length - 1) * self.step
        r.step = -self.step
        r.stop = self.start - self.step
        return r

    def _refuse(self, *args):
        raise TracingError(f"a range with a traced bound is iterated by a `for` statement "
                           f"(one staged loop), not by other code (at {_user_line()}); use "
                           f"tnp.arange for an array of its elements")

    __iter__ = __len__ = __getitem__ = __contains__ = _refuse


def _range_length(start, stop, step):
    """len(range(start, stop, step)) as an int64 array: (distance - 1) // |step| + 1 when the
    distance in the step's direction is positive. The distance and |step| are computed modulo
    2**64 (uint64), where they are exact for any int64 bounds (int64 would wrap)."""
    u = np.uint64
    a, b, c = [tnp.asarray(v, dtype=np.int64).astype(u) for v in (start, stop, step)]
    up = tnp.asarray(step, dtype=np.int64) > 0
    ahead = tnp.where(up, tnp.asarray(stop, dtype=np.int64) > tnp.asarray(start, dtype=np.int64),
                      tnp.asarray(stop, dtype=np.int64) < tnp.asarray(start, dtype=np.int64))
    dist = tnp.where(up, b - a, a - b)
    size = tnp.where(up, c, u(0) - c)
    n = tnp.where(ahead, (dist - u(1)) // tnp.maximum(size, u(1)) + u(1), u(0))
    # (more elements than int64 counts cannot all be iterated: a loop over them ends by break)
    return tnp.minimum(n, u(np.iinfo(np.int64).max)).astype(np.int64)


def _int_arg(a, what):
    """An integer argument of a traced range or enumerate: a Python int, or an int64 array (0-d,
    of an integer dtype, as Python's `range` and NumPy's `__index__` demand)."""
    if type(a) is bool or isinstance(a, (int, np.integer)) and not isinstance(a, np.ndarray):
        return int(a)
    a = _value(a)
    if not isinstance(a, (ndarray, np.ndarray, np.generic)):
        raise TypeError(f"'{type(a).__name__}' object cannot be interpreted as an integer "
                        f"({what})")
    a = a if isinstance(a, ndarray) else tnp.asarray(a)
    if a.ndim != 0 or np.dtype(a.dtype).kind not in "iu":
        raise TypeError(f"only integer scalar arrays can be converted to a scalar index "
                        f"({what}: shape {tuple(a.shape)}, dtype {np.dtype(a.dtype).name})")
    if np.dtype(a.dtype) == np.uint64:
        a = checked(a, a > np.iinfo(np.int64).max, OverflowError,
                    f"{what} is larger than the int64 a traced loop counter holds")
    return a.astype(np.int64) if a.dtype != np.int64 else a


class TensorEnumerate:
    """`enumerate(x)` of a traced array: a `for` over it is one staged loop (elsewhere it is
    Python's enumerate)."""

    def __init__(self, x, start=0):
        self.x, self.start = _value(x), _int_arg(start, "enumerate() start")

    def __iter__(self):
        return builtins.enumerate(self.x, self.start)


class TensorZip:
    """`zip(x, y, ...)` of traced arrays: a `for` over it is one staged loop over the rows the
    arrays have in common (elsewhere it is Python's zip)."""

    def __init__(self, *xs, strict=False):
        self.xs, self.strict = [_value(x) for x in xs], strict

    def __iter__(self):
        return builtins.zip(*self.xs, strict=self.strict)


def range_(rng, *args):
    """`range(*args)`; a traced bound gives a `TensorRange` (a loop over it is staged)."""
    if rng is builtins.range and any(is_traced(a) for a in args):
        return TensorRange(*args)
    return rng(*args)


def while_stmt(test, body, inits, names, loc):
    """The converted `while`: Python while the test is a Python value; from the first traced
    test on, the remaining iterations are one `nf.while_loop`."""
    vals = tuple(inits)
    while True:
        p = test(*vals)
        if is_traced(p):
            return _staged_loop(lambda *v: _pred(test(*v), "`while`", loc), body, vals, names,
                                loc, "while")
        if not p:
            return vals
        vals = tuple(body(*vals))


def for_stmt(iterable, extra_test, body, inits, names, targets, loc):
    """The converted `for`: over a Python iterable (or an eager array) a Python loop (it
    unrolls while tracing); over a traced array's first axis or a `range` with a traced
    bound, one staged loop."""
    vals = tuple(inits)
    if isinstance(iterable, TensorRange):
        return _staged_range(iterable, extra_test, body, vals, names, targets, loc)
    if is_traced(iterable):
        return _staged_rows(_value(iterable), extra_test, body, vals, names, targets, loc)
    if isinstance(iterable, (TensorEnumerate, TensorZip)):
        return _staged_items(iterable, extra_test, body, vals, names, targets, loc)
    for item in iterable:
        if extra_test is not None:
            t = extra_test(*vals)
            if is_traced(t):
                # a break under a traced condition: the rest of the iterations run only while
                # it has not happened
                vals = tuple(if_stmt(t, lambda *v, item=item: body(item, *v), lambda *v: v,
                                     vals, names, names, False, loc))
                continue
            if not t:
                break
        vals = tuple(body(item, *vals))
    return vals


def _staged_range(r, extra_test, body, vals, names, targets, loc):
    return _counted_loop(r.length, r.at, extra_test, body, vals, names, targets, loc)


def _staged_rows(xs, extra_test, body, vals, names, targets, loc):
    if xs.ndim == 0:
        raise TypeError(f"iteration over a 0-d array at {loc}")
    n = xs.shape[0]
    if n == 0:
        return vals             # no iteration, as in Python
    if n is not None and extra_test is None:
        # a known number of rows and no break: one scan (its gradient is a reverse scan)
        return _staged_loop(None, body, vals, names, loc, "for", rows=xs, targets=targets)
    if n is None:
        n = shape_of(xs, out_type=np.int64)[0]
    return _counted_loop(n, lambda i: xs[i], extra_test, body, vals, names, targets, loc)


def _staged_items(it, extra_test, body, vals, names, targets, loc):
    xs = [it.x] if isinstance(it, TensorEnumerate) else it.xs
    for x in xs:
        if x.ndim == 0:
            raise TypeError(f"iteration over a 0-d array at {loc}")
    sizes = [x.shape[0] for x in xs]
    strict = isinstance(it, TensorZip) and it.strict
    if None not in sizes:
        if strict and len(set(sizes)) > 1:
            k = next(k for k, m in enumerate(sizes) if m != sizes[0])
            raise ValueError(f"zip() argument {k + 1} is {'shorter' if sizes[k] < sizes[0] else 'longer'} "
                             f"than argument{'s 1-%d' % k if k > 1 else ' 1'} (lengths {sizes}, at {loc})")
        n = min(sizes)
        if n == 0:
            return vals
    else:
        lens = [shape_of(x, out_type=np.int64)[0] for x in xs]
        n = lens[0]
        for m in lens[1:]:
            n = tnp.minimum(n, m)
        if strict:
            # lengths known when the function runs: Python's ValueError then
            n = checked(n, tnp.any(tnp.stack(lens) != lens[0]), ValueError,
                        f"zip() arguments have different lengths (strict=True, at {loc})")

    def item(i):
        if isinstance(it, TensorEnumerate):
            return (i + it.start, xs[0][i])
        return tuple(x[i] for x in xs)

    return _counted_loop(n, item, extra_test, body, vals, names, targets, loc)


def _counted_loop(n, item, extra_test, body, vals, names, targets, loc):
    """One `nf.while_loop` over `item(j)` for `j < n` (and while `extra_test` holds)."""
    def cond(j, *v):
        go = j < n
        if extra_test is not None:
            go = tnp.logical_and(go, extra_test(*v))
        return go

    def step_fn(j, *v):
        return (j + 1,) + tuple(body(item(j), *v))

    j0 = tnp.asarray(0, dtype=np.int64)
    out = _staged_loop(cond, step_fn, (j0,) + tuple(vals), ("the loop counter",) + tuple(names),
                       loc, "for", targets=targets)
    out, none = list(out[1:]), out[0] == 0
    for k, name in enumerate(names):
        if name in targets and isinstance(vals[k], Undefined) and \
                not isinstance(out[k], Undefined):
            # a target that had no value is read after a loop that ran no iteration: Python's
            # error, when the function runs (it has a placeholder value until then)
            leaves, d = tree.flatten_with_def(out[k])
            out[k] = tree.unflatten(d, [checked(
                x, none, UnboundLocalError, f"cannot access local variable '{name}' where it "
                f"is not associated with a value (the loop at {loc} ran no iteration)")
                if isinstance(x, ndarray) else x for x in leaves])
    return tuple(out)


def _staged_loop(test, body, vals, names, loc, what, rows=None, targets=()):
    """`nf.while_loop` over the loop variables (with `rows`, `nf.scan` over them, the body
    called as `body(row, *vals)`): arrays and numbers are carried (each variable may be a
    structure of them); other Python values must stay the same object. Internal variables
    and the loop's `targets` may start undefined (the body's first statements assign a
    target): they start as placeholders of the structure the body gives them."""
    vals, structs, init, carried = _loop_state(
        body if rows is None else (lambda *v: body(rows[0], *v)), list(vals), names, loc, what,
        targets)

    def rebuild(xs):
        it = iter(xs)
        per = [list(leaves) for leaves, _ in structs]
        for (k, j) in carried:
            per[k][j] = next(it)
        return [tree.unflatten(d, per[k]) for k, (_, d) in enumerate(structs)]

    def cond_fn(*xs):
        return test(*rebuild(xs))

    inplace = set()

    def body_fn(*xs):
        return run_body(list(xs), lambda args: body(*args))

    def run_body(xs, call):
        # which variables the body changed in place (x[i] = v, x += v) and gave back
        start = [x._v if isinstance(x, ndarray) else None for x in xs]
        out = call(rebuild(xs))
        inplace.clear()
        for (k, j), x, s0 in zip(carried, xs, start):
            if structs[k][1] is tree.LEAF and _changed_in_place(x, s0):
                if out[k] is not x:
                    raise ValueError(
                        f"variable '{names[k]}' is changed in place (x[...] = v, x += v) and "
                        f"then bound to another value inside the {what} loop at {loc}; assign "
                        f"the new value to a new name instead")
                inplace.add(k)
        return checked_out(out)

    def checked_out(out):
        res = []
        for k, (n, v) in enumerate(zip(names, out)):
            leaves, d = tree.flatten_with_def(v)
            if isinstance(v, Undefined) and isinstance(vals[k], Undefined):
                continue
            if isinstance(v, Undefined) or d != structs[k][1]:
                raise ValueError(f"{_shown(n)} changes its structure inside the {what} loop "
                                 f"at {loc}: {_describe(structs[k])} before, "
                                 f"{_describe((leaves, d))} after an iteration")
            for j, (old, new) in enumerate(zip(structs[k][0], leaves)):
                if (k, j) not in carried_set:
                    if not _same_static(old, new):
                        raise ValueError(
                            f"{_shown(n)} holds the Python value {old!r}, changed to {new!r} "
                            f"inside the {what} loop at {loc}; a loop over a traced condition "
                            f"can only change arrays and numbers")
        for (k, j), x0 in zip(carried, init):
            new = tree.flatten(out[k])[j]
            if not _tensorlike(new):
                raise TypeError(f"{_shown(names[k])} becomes {type(new).__name__} inside the "
                                f"{what} loop at {loc}; it must stay an array")
            new = tnp.asarray(new, dtype=x0.dtype) if not isinstance(new, ndarray) else new
            if new.dtype != x0.dtype:
                raise TypeError(f"{_shown(names[k])} changes dtype from {x0.dtype.name} to "
                                f"{new.dtype.name} inside the {what} loop at {loc}; cast it "
                                f"before the loop or in the loop body")
            if new.ndim != x0.ndim:
                raise ValueError(f"{_shown(names[k])} changes shape from {list(x0.shape)} "
                                 f"to {list(new.shape)} inside the {what} loop at {loc} (its "
                                 f"rank must stay the same)")
            res.append(new)
        return res

    carried_set = set(carried)
    originals = list(vals)
    if rows is None:
        res = C.while_loop(cond_fn, body_fn, list(init))
    else:
        res, _ = C.scan_carry(
            lambda c, x: (run_body(list(c), lambda args: body(x, *args)), ()), list(init), rows)
    return tuple(_write_back(originals, rebuild(res),
                             [k for k in inplace if isinstance(originals[k], ndarray)]))


def _loop_state(probe_body, vals, names, loc, what, targets):
    """(values, their structures, the arrays the loop carries, the (variable, leaf) of each):
    Python numbers take the dtype the body makes of them, undefined internal variables and
    targets a placeholder of the structure the body gives them."""
    for k, (n, v) in enumerate(zip(names, vals)):
        if isinstance(v, Undefined) and not n.startswith("_nfag") and n not in targets:
            raise ValueError(
                f"variable '{n}' is changed inside the {what} loop at {loc} and used after it "
                f"(or in the next iteration), but has no value before the loop; a loop over a "
                f"traced condition needs its initial value: assign it before the loop")
    structs = [tree.flatten_with_def(v) for v in vals]
    undefined = [k for k, v in enumerate(vals) if isinstance(v, Undefined)]
    weak = {(k, j): x for k, (leaves, _) in enumerate(structs) for j, x in enumerate(leaves)
            if type(x) in _PY_NUMBERS}
    dtypes = {}
    if weak:
        # (arrays traced, Python numbers as they are: the dtype the body makes of them)
        dtypes = _weak_dtypes(_probe(probe_body, structs, {
            (k, j): (tuple(x.shape), np.dtype(x.dtype)) for k, (leaves, _) in enumerate(structs)
            for j, x in enumerate(leaves) if isinstance(x, ndarray) and (k, j) not in weak}),
            structs, weak)
    init, carried = [], []         # carried: (k, j) of each loop_vars entry
    for k, (leaves, d) in enumerate(structs):
        if k in undefined:
            continue
        for j, x in enumerate(leaves):
            if _tensorlike(x):
                dt = dtypes.get((k, j))
                init.append(tnp.asarray(x, dtype=dt) if dt is not None or not isinstance(
                    x, ndarray) else x)
                carried.append((k, j))
    if undefined:
        # internal variables without a value yet (a return value): the structure the body
        # gives them when every carried value is traced, as in the loop itself
        outs = _probe(probe_body, structs, {
            kj: (tuple(x.shape), np.dtype(x.dtype)) for kj, x in zip(carried, init)})
    for k in undefined:
        leaves, d = tree.flatten_with_def(outs[k])
        if len(leaves) == 1 and isinstance(leaves[0], Undefined):
            continue            # no path of the body gives it a value: it stays undefined
        vals[k] = _placeholder(leaves, d, arrays=True)
        structs[k] = tree.flatten_with_def(vals[k])
        for j, x in enumerate(structs[k][0]):
            if isinstance(x, ndarray):
                init.append(x)
                carried.append((k, j))
    return vals, structs, init, carried


def _describe(s):
    leaves, d = s
    return repr(tree.unflatten(d, [type(x).__name__ for x in leaves]))


def _probe(body, structs, traced):
    """The loop variables the body gives back, from one trace of the body that is then thrown
    away; the leaves at `traced` {(k, j): (shape, dtype)} are symbolic inputs, the others
    are passed as they are."""
    pos = list(traced)

    def run(*xs):
        per = [list(leaves) for leaves, _ in structs]
        for (k, j), x in zip(pos, xs):
            per[k][j] = x
        args = [tree.unflatten(d, per[k]) for k, (_, d) in enumerate(structs)]
        return list(body(*args))

    _, flat, d_out = trace_body(run, [traced[p] for p in pos], "probe")
    return tree.unflatten(d_out, flat)


def _weak_dtypes(outs, structs, weak):
    """Dtypes of loop variables that start as Python numbers: weakly typed, they take the dtype
    of what the body makes of them, as in eager code (`s = 0.0; s += float32` is float32)."""
    res = {}
    for k, (leaves, d) in enumerate(structs):
        got, d_k = tree.flatten_with_def(outs[k])
        if d_k != d:
            continue            # (a changed structure is reported when the loop is staged)
        for j in range(len(leaves)):
            if (k, j) in weak:
                v = got[j]
                if isinstance(v, ndarray):
                    res[(k, j)] = np.dtype(v.dtype)
                elif type(v) in _PY_NUMBERS:
                    res[(k, j)] = np.asarray(v).dtype if type(v) is not type(weak[(k, j)]) \
                        else None
    return res
