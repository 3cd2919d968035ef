"""`if`, conditional expressions, `and` / `or` / `not` and `assert` in converted code: Python's
meaning for Python values, `nf.cond` / logical operations / run-time checks for traced ones.
Every function takes `loc`, the user's 'file:line' of the statement, for its error messages."""
import numpy as np

from ..core.ndarray import ndarray
from ..core import tree
from ..graph import control as C
from ..graph.trace import trace_body
from .values import (tnp, Undefined, _value, _is_variable, is_traced, _pred, _own,
                     _changed_in_place, _write_back, _tensorlike, _same_static, _NeedValue,
                     _placeholder, _shown, _RETVAL, _PY_NUMBERS)


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
    m = msg()
    text = "assertion failed at %s" % loc if m is None else "%s (assertion at %s)" % (
        m if not isinstance(m, ndarray) else "assertion failed", loc)
    C.assert_that(_value(test), text)


# ------------------------------------------------------------------ conditionals
def if_exp(test, body, orelse, loc):
    if not is_traced(test):
        return body() if test else orelse()
    return C.cond(_pred(test, "a conditional expression", loc), body, orelse)


def if_stmt(test, true_fn, false_fn, inits, params, outs, returns, loc):
    """The converted `if`: `true_fn(*inits)` or `false_fn(*inits)`, each returning the values
    of `outs` (or, with `returns` True, the function's return value). With `returns` "guard"
    the `if` is `if not <return flag>:` (the rest of a block after a `return`): its false
    branch is the path that returns, where the variables it leaves undefined are never read."""
    if not is_traced(test):
        return true_fn(*inits) if test else false_fn(*inits)
    pred = _pred(test, "`if`", loc)
    guard = returns == "guard"
    returns = returns is True
    names = ["the return value"] if returns else list(outs)
    fill = {}       # k -> zeros standing for an internal variable a branch leaves undefined
    for _ in range(len(names) + 1):
        got, inplace = {}, {}
        try:
            res = C.cond(pred, _branch(true_fn, "true", inits, names, returns, fill, got, loc,
                                       params, inplace),
                         _branch(false_fn, "false", inits, names, returns, fill, got, loc,
                                 params, inplace, guard))
            break
        except _NeedValue as e:
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


def _branch(fn, which, inits, names, returns, fill, got, loc, params=(), inplace=None,
            returning=False):
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
                if name.startswith("_nfag") or v.name == _RETVAL or returning:
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
