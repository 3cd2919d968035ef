"""What converted code calls: each construct keeps Python's meaning for Python values and
becomes a control-flow primitive (`nf.cond`, `nf.while_loop`, `nf.scan`) for traced ones.

A value is *traced* when it is symbolic (inside `nf.function`) or batched (inside
`vectorized_map`); eager arrays decide in Python, as they would without conversion. Every
function takes `loc`, the user's 'file:line' of the statement, for its error messages.
"""
import builtins

import numpy as np

from ..core.ndarray import ndarray
from ..core import tree
from ..core.state import STATE
from ..core.variable import VariableBase
from ..graph import control as C
from . import conversion


class _LazyTnp:
    def __getattr__(self, name):
        import ndflow.numpy as m
        return getattr(m, name)


tnp = _LazyTnp()
_PY_NUMBERS = (bool, int, float, complex)


# ------------------------------------------------------------------ undefined variables
class Undefined:
    """The value of a variable that has none yet (assigned in a branch or loop not run)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "<undefined %s>" % self.name

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(f"local variable '{self.name}' referenced before assignment")

    __getattr__ = __call__ = __bool__ = __iter__ = __len__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __matmul__ = __rmatmul__ = __neg__ = __lt__ = __le__ = __gt__ = _fail
    __ge__ = __index__ = __int__ = __float__ = __array__ = _fail


def undefined(name):
    return Undefined(name)


def ld(scope, name):
    """`name`'s value in `scope` (a `locals()`), or an `Undefined` marker."""
    try:
        return scope[name]
    except KeyError:
        return Undefined(name)


# ------------------------------------------------------------------ predicates
def _value(x):
    return x.value() if isinstance(x, VariableBase) else x


def _is_variable(x):
    return isinstance(x, VariableBase)


def is_traced(x):
    x = _value(x)
    return isinstance(x, ndarray) and x._t is not None


def _pred(x, what, loc):
    """A traced condition as a boolean scalar (a number is true when nonzero, as `bool()`)."""
    x = _value(x)
    if x.size is not None and x.size != 1 or x.size is None:
        raise ValueError(f"the condition of {what} at {loc} must be a scalar (one element) to "
                         f"decide; got shape {tuple(x.shape)} (use tnp.any / tnp.all)")
    if x.ndim:
        x = tnp.reshape(x, ())
    if x.dtype != np.bool_:
        x = x != 0
    return x


# ------------------------------------------------------------------ calls
def _hofs():
    from ..vectorize import batching as B
    return {C.cond: (1, 2), C.switch_case: (), C.while_loop: (0, 1), C.fori_loop: (2,),
            C.scan: (0,), C.scan_carry: (0,), B.vectorized_map: (0,), B.vmap: (0,),
            B.map_fn: (0,)}


_HOFS = None


def call(f, args, kwargs=None):
    """`f(*args, **kwargs)`, with `f` converted when it is user code (recursively, as
    TensorFlow's AutoGraph does); the functions given to ndflow's control-flow and mapping
    functions are converted too."""
    global _HOFS
    kwargs = kwargs or {}
    if (f is builtins.enumerate or f is builtins.zip) and args and \
            all(is_traced(a) for a in (args[:1] if f is builtins.enumerate else args)):
        return TensorEnumerate(args[0], *args[1:], **kwargs) if f is builtins.enumerate \
            else TensorZip(*args, **kwargs)
    if f is builtins.len and len(args) == 1 and not kwargs and is_traced(args[0]):
        x = _value(args[0])
        if x.ndim and x.shape[0] is None and STATE.traces and STATE.traces[-1].is_graph:
            from ..graph.function import shape
            return shape(x)[0]
    if type(f) is not type and not isinstance(f, (builtins.type(len),)):
        if _HOFS is None:
            _HOFS = _hofs()
        try:
            pos = _HOFS.get(f)
        except TypeError:
            pos = None
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
        f = conversion.convert(f, warn=False)
    return f(*args, **kwargs)


# ------------------------------------------------------------------ arrays changed in place
# A traced branch or loop body gets its own array object for each variable it changes, so that
# `x[i] = v` or `x += y` there change that object (NumPy: in place) without touching the
# enclosing code's object while the body is traced. When the body gives that same object back
# changed, the enclosing object takes the result afterwards: every name bound to it sees the
# change, as in NumPy.
def _own(x):
    """`x` as an array object of the innermost trace (the same value), for a body to change."""
    if not isinstance(x, ndarray):
        return x
    t = STATE.traces[-1] if STATE.traces else None
    if t is None or not getattr(t, "is_graph", False) or x._t is t:
        return x
    from ..core.ndarray import symbolic
    return symbolic(t, t.to_var(x))


def _changed_in_place(own, start):
    return isinstance(own, ndarray) and own._v is not start


def _write_back(originals, results, positions):
    """The enclosing arrays at `positions` take the results (their bodies changed them in
    place); the results returned are those same objects."""
    results = list(results)
    for k in positions:
        orig = originals[k]
        orig._rebind(results[k])
        results[k] = orig
    return results


# ------------------------------------------------------------------ and / or / not
def and_(v, *thunks):
    """`a and b and ...` (`a`, then a thunk for each later operand): Python's for Python
    values, `logical_and` once a value is traced."""
    for t in thunks:
        if is_traced(v):
            return tnp.logical_and(_value(v), t())
        if not v:
            return v
        v = t()
    return v


def or_(v, *thunks):
    for t in thunks:
        if is_traced(v):
            return tnp.logical_or(_value(v), t())
        if v:
            return v
        v = t()
    return v


def not_(x):
    if is_traced(x):
        return tnp.logical_not(_value(x))
    return not x


# ------------------------------------------------------------------ assert
def assert_(test, msg, loc):
    if not is_traced(test):
        if not test:
            m = msg()
            raise AssertionError(m) if m is not None else AssertionError()
        return
    from ..graph.control import assert_that
    m = msg()
    text = "assertion failed at %s" % loc if m is None else "%s (assertion at %s)" % (
        m if not isinstance(m, ndarray) else "assertion failed", loc)
    assert_that(_value(test), text)


# ------------------------------------------------------------------ conditionals
def if_exp(test, body, orelse, loc):
    if not is_traced(test):
        return body() if test else orelse()
    return C.cond(_pred(test, "a conditional expression", loc), body, orelse)


def _tensorlike(v):
    return isinstance(v, (ndarray, np.ndarray, np.generic)) or type(v) in _PY_NUMBERS


def _same_static(a, b):
    if a is b:
        return True
    if type(a) in _PY_NUMBERS and type(b) is type(a):
        return a == b
    return False


class _NeedValue(Exception):
    """An internal variable (a return value set in a loop) has no value in one branch yet."""

    def __init__(self, k, other):
        self.k, self.other = k, other


def _placeholder(leaves, d, arrays=False):
    """A value of the structure `(leaves, d)` (another path's value) for an internal variable
    that a path leaves undefined: the return value before any `return` ran. It is never read
    (the return flag says whether a return happened), only carried: zeros for arrays, the
    same Python values otherwise (as arrays too with `arrays`, for a loop to carry)."""
    out = []
    for x in leaves:
        if isinstance(x, ndarray):
            out.append(tnp.zeros(tuple(0 if n is None else n for n in x.shape), x.dtype))
        elif arrays and _tensorlike(x):
            out.append(tnp.asarray(x))
        else:
            out.append(x)
    return tree.unflatten(d, out)


def _shown(name):
    """How an error names a variable of the converted code."""
    if not name.isidentifier():
        return name                     # ("the return value", "the loop counter")
    if name.startswith(_INTERNAL):
        return _INTERNAL_NAMES.get(name.split("_")[2], "an internal variable")
    return "variable '%s'" % name


_INTERNAL = "_nfag_"
_RETVAL = "the return value"        # the Undefined of a return value (transformer.py)
_INTERNAL_NAMES = {"retval": "the return value", "ret": "the flag of a `return` in a loop",
                   "brk": "the flag of a `break`", "cnt": "the flag of a `continue`",
                   "wtest": "the test of a `while`", "bool": "the value of an `and`/`or`",
                   "ifexp": "the value of a conditional expression",
                   "arg": "an operand evaluated before an assignment expression"}


def if_stmt(test, true_fn, false_fn, inits, params, outs, returns, loc):
    """The converted `if`: `true_fn(*inits)` or `false_fn(*inits)`, each returning the values
    of `outs` (or, with `returns`, the function's return value)."""
    if not is_traced(test):
        return true_fn(*inits) if test else false_fn(*inits)
    pred = _pred(test, "`if`", loc)
    names = ["the return value"] if returns else list(outs)
    fill = {}       # k -> zeros standing for an internal variable a branch leaves undefined
    for _ in range(len(names) + 1):
        got, inplace = {}, {}
        try:
            res = C.cond(pred, _branch(true_fn, "true", inits, names, returns, fill, got, loc,
                                       params, inplace),
                         _branch(false_fn, "false", inits, names, returns, fill, got, loc,
                                 params, inplace))
            break
        except _NeedValue as e:
            from ..graph.trace import trace_body
            other = true_fn if e.other == "true" else false_fn
            def probe(other=other, k=e.k):
                # (its own objects for the branch to change in place, as _branch gives it)
                r = other(*[_own(x) for x in inits])
                return r if returns else list(r)[k]
            _, leaves, d = trace_body(probe, [], "probe")
            fill[e.k] = (leaves, d)
    res = list(res) if isinstance(res, (list, tuple)) else [res]
    it = iter(res)
    vals = []
    for (d, lt), (_, lf) in zip(got["true"], got["false"]):
        leaves = []
        for a, b in zip(lt, lf):
            r = next(it)
            leaves.append(a if _same_static(a, b) else r if (
                _tensorlike(a) or _tensorlike(b) or _is_variable(a)) else a)
        vals.append(tree.unflatten(d, leaves))
    if returns:
        return vals[0]
    changed = set().union(*inplace.values()) if inplace else set()
    if changed:
        originals = [inits[params.index(n)] for n in names]
        vals = _write_back(originals, vals, [k for k in changed
                                             if isinstance(originals[k], ndarray)])
    return tuple(vals)


def _branch(fn, which, inits, names, returns, fill, got, loc, params=(), inplace=None):
    def run():
        own = [_own(x) for x in inits]
        start = [x._v if isinstance(x, ndarray) else None for x in own]
        r = fn(*own)
        vals = [r] if returns else list(r)
        for p, o, s0, x in zip(params, own, start, inits):
            if o is x:
                continue
            k = names.index(p) if p in names and not returns else None
            if _changed_in_place(o, s0):
                if k is None or vals[k] is not o:
                    raise ValueError(
                        f"variable '{p}' is changed in place (x[...] = v, x += v) and then "
                        f"bound to another value inside a branch of the `if` at {loc}; "
                        f"assign the new value to a new name instead")
                inplace.setdefault(which, set()).add(k)
            elif k is not None and vals[k] is o:
                vals[k] = x         # unchanged: the enclosing object itself
        per, flat = [], []
        for k, (name, v) in enumerate(zip(names, vals)):
            if isinstance(v, Undefined):
                # (a return value no `return` gave yet: its return flag is false on that path)
                if name.startswith("_nfag") or v.name == _RETVAL:
                    if k not in fill:
                        raise _NeedValue(k, "false" if which == "true" else "true")
                    v = _placeholder(*fill[k])
                else:
                    raise ValueError(
                        f"variable '{name}' is defined in one branch only of the `if` at {loc} "
                        f"(a traced condition runs both), and is used after it; give it a "
                        f"value before the `if` or in both branches")
            leaves, d = tree.flatten_with_def(v)
            per.append((d, leaves))
            # a Variable: the same one in both branches stays itself, else its value is read
            flat += [x if _tensorlike(x) else _value(x) if _is_variable(x) else 0
                     for x in leaves]
        got[which] = per
        if len(got) == 2:
            _check_branches(got["false"], got["true"], names, loc)
        return flat
    return run


def _check_branches(f, t, names, loc):
    for name, (df, lf), (dt, lt) in zip(names, f, t):
        if df != dt:
            raise ValueError(f"{_shown(name)} has a different structure in the two branches "
                             f"of the `if` at {loc}: {tree.unflatten(dt, ['*'] * len(lt))} and "
                             f"{tree.unflatten(df, ['*'] * len(lf))}")
        for a, b in zip(lt, lf):
            if _is_variable(a) and _is_variable(b) and a is not b:
                a, b = _value(a), _value(b)
            ta, tb = _tensorlike(a), _tensorlike(b)
            if not ta and not tb:
                if not _same_static(a, b):
                    raise ValueError(
                        f"{_shown(name)} is {a!r} in one branch and {b!r} in the other of "
                        f"the `if` at {loc}; under a traced condition only arrays and numbers "
                        f"can differ between branches")
            elif ta != tb:
                raise TypeError(
                    f"{_shown(name)} is an array in one branch and {type(b if ta else a).__name__}"
                    f" in the other of the `if` at {loc}")
            elif type(a) not in _PY_NUMBERS and type(b) not in _PY_NUMBERS:
                if np.dtype(a.dtype) != np.dtype(b.dtype):
                    raise TypeError(f"{_shown(name)} has dtype {np.dtype(a.dtype).name} in "
                                    f"the true branch and {np.dtype(b.dtype).name} in the false "
                                    f"branch of the `if` at {loc}")
                if len(a.shape) != len(b.shape):
                    raise ValueError(f"{_shown(name)} has shape {list(a.shape)} in the true "
                                     f"branch and {list(b.shape)} in the false branch of the "
                                     f"`if` at {loc} (ranks must agree)")


# ------------------------------------------------------------------ loops
class TensorRange:
    """`range(...)` with a traced bound: iterated by a staged loop."""

    def __init__(self, *args):
        if len(args) == 1:
            args = (0, args[0], 1)
        elif len(args) == 2:
            args = (args[0], args[1], 1)
        self.start, self.stop, self.step = [_value(a) for a in args]


class TensorEnumerate:
    """`enumerate(x)` of a traced array: a `for` over it is one staged loop (elsewhere it is
    Python's enumerate)."""

    def __init__(self, x, start=0):
        self.x, self.start = _value(x), start

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
        return _staged_items(iterable, extra_test, body, vals, names, loc)
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
    start, stop, step = r.start, r.stop, r.step
    for what, v in (("start", start), ("stop", stop), ("step", step)):
        v = np.asarray(v) if not isinstance(v, ndarray) else v
        if np.dtype(v.dtype).kind not in "iub":
            raise TypeError(f"range() {what} must be an integer, got dtype {v.dtype} at {loc}")
    dt = np.result_type(*[np.dtype(v.dtype) for v in (start, stop, step)
                          if isinstance(v, (ndarray, np.ndarray, np.generic))])
    i0 = tnp.asarray(start, dtype=dt)

    def cond(i, *v):
        if isinstance(step, int):
            go = i < stop if step > 0 else i > stop
        else:
            go = tnp.where(step > 0, i < stop, i > stop)
        if extra_test is not None:
            go = tnp.logical_and(go, extra_test(*v))
        return go

    def step_fn(i, *v):
        return (i + step,) + tuple(body(i, *v))

    vals = _fill_targets(vals, names, targets, (i0,))
    out = _staged_loop(cond, step_fn, (i0,) + tuple(vals), ("the loop counter",) + tuple(names),
                       loc, "for")
    return out[1:]


def _staged_rows(xs, extra_test, body, vals, names, targets, loc):
    if xs.ndim == 0:
        raise TypeError(f"iteration over a 0-d array at {loc}")
    n = xs.shape[0]
    if n == 0:
        return vals             # no iteration, as in Python
    vals = _fill_targets(vals, names, targets, (xs[0],))
    if n is not None and extra_test is None:
        # a known number of rows and no break: one scan (its gradient is a reverse scan)
        return _staged_loop(None, body, vals, names, loc, "for", rows=xs)
    if n is None:
        from ..graph.function import shape
        n = shape(xs, out_type=np.int64)[0]
    i0 = tnp.asarray(0, dtype=np.int64)

    def cond(i, *v):
        go = i < n
        if extra_test is not None:
            go = tnp.logical_and(go, extra_test(*v))
        return go

    def step_fn(i, *v):
        return (i + 1,) + tuple(body(xs[i], *v))

    out = _staged_loop(cond, step_fn, (i0,) + tuple(vals), ("the loop counter",) + tuple(names),
                       loc, "for")
    return out[1:]


def _staged_items(it, extra_test, body, vals, names, loc):
    from ..graph.function import shape
    xs = [it.x] if isinstance(it, TensorEnumerate) else it.xs
    for x in xs:
        if x.ndim == 0:
            raise TypeError(f"iteration over a 0-d array at {loc}")
    sizes = [x.shape[0] for x in xs]
    if None not in sizes:
        if isinstance(it, TensorZip) and it.strict and len(set(sizes)) > 1:
            raise ValueError(f"zip(strict=True) of arrays of lengths {sizes} at {loc}")
        n = min(sizes)
        if n == 0:
            return vals
    else:
        if isinstance(it, TensorZip) and it.strict:
            raise ValueError(f"zip(strict=True) of arrays whose lengths are unknown while "
                             f"tracing at {loc}")
        lens = [shape(x, out_type=np.int64)[0] for x in xs]
        n = lens[0]
        for m in lens[1:]:
            n = tnp.minimum(n, m)

    def item(i):
        if isinstance(it, TensorEnumerate):
            return (i + it.start, xs[0][i])
        return tuple(x[i] for x in xs)

    def cond(i, *v):
        go = i < n
        if extra_test is not None:
            go = tnp.logical_and(go, extra_test(*v))
        return go

    def step_fn(i, *v):
        return (i + 1,) + tuple(body(item(i), *v))

    i0 = tnp.asarray(0, dtype=np.int64)
    out = _staged_loop(cond, step_fn, (i0,) + tuple(vals), ("the loop counter",) + tuple(names),
                       loc, "for")
    return out[1:]


def _fill_targets(vals, names, targets, like):
    """A loop target still undefined before a staged loop starts as zeros of an element's
    shape (as Python, it is only read after the loop when the loop ran)."""
    vals = list(vals)
    for k, n in enumerate(names):
        if n in targets and isinstance(vals[k], Undefined) and like[0] is not None:
            vals[k] = tnp.zeros_like(like[0])
    return tuple(vals)


def _staged_loop(test, body, vals, names, loc, what, rows=None):
    """`nf.while_loop` over the loop variables (with `rows`, `nf.scan` over them, the body
    called as `body(row, *vals)`): arrays and numbers are carried (each variable may be a
    structure of them); other Python values must stay the same object."""
    vals = list(vals)
    for k, (n, v) in enumerate(zip(names, vals)):
        if isinstance(v, Undefined) and not n.startswith("_nfag"):
            raise ValueError(
                f"variable '{n}' is changed inside the {what} loop at {loc} and used after it "
                f"(or in the next iteration), but has no value before the loop; a loop over a "
                f"traced condition needs its initial value: assign it before the loop")
    structs = [tree.flatten_with_def(v) for v in vals]
    undefined = [k for k, v in enumerate(vals) if isinstance(v, Undefined)]
    weak = {}
    for k, (leaves, _) in enumerate(structs):
        for j, x in enumerate(leaves):
            if type(x) in _PY_NUMBERS:
                weak[(k, j)] = x
    probe_body = body if rows is None else (lambda *v: body(rows[0], *v))
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
        return checked(out)

    def checked(out):
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


def _describe(s):
    leaves, d = s
    return repr(tree.unflatten(d, [type(x).__name__ for x in leaves]))


def _probe(body, structs, traced):
    """The loop variables the body gives back, from one trace of the body that is then thrown
    away; the leaves at `traced` {(k, j): (shape, dtype)} are symbolic inputs, the others
    are passed as they are."""
    from ..graph.trace import trace_body
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
