"""Assignment expressions (`:=`) before AutoGraph's rewrite.

Converted code evaluates some expressions in functions of their own: a `while` test (the loop
calls it), the later operands of `and` / `or` and the branches of `x if c else y` (thunks, so a
traced value can become a graph op). An assignment expression there would bind its name in
that function, not in the user's, so this pass moves each one out first, keeping Python's
order of evaluation and its short-circuits:

- `while T: B else: E` with `:=` in `T` becomes `while True: if not T: <ok> = True; break` then
  `B`, and `if <ok>: E` after the loop (the test runs where the body runs);
- an `and` / `or` whose later operand holds `:=` becomes statements: the first operand into a
  temporary, then an `if` on it that evaluates the rest only when Python would;
- `a if c else b` holding `:=` in a branch becomes an `if` assigning a temporary.

The statements made are ordinary `if`s, converted later like the user's own (a traced
condition becomes `nf.cond`: a name assigned in one branch only must then have a value
before, as for any `if`). Comprehensions keep Python's meaning (their loops run in Python).
"""
import ast

from .astutil import AG, _fresh

_NESTED = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _store(name):
    return ast.Name(id=name, ctx=ast.Store())


def _load(name):
    return ast.Name(id=name, ctx=ast.Load())


def _assign(name, value, at):
    return ast.copy_location(ast.Assign(targets=[_store(name)], value=value), at)


def _has_walrus(node):
    """Whether `node` holds `:=` evaluated in this scope (not in a lambda or comprehension)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.NamedExpr):
            return True
        if n is not node and isinstance(n, _NESTED):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _lazy_walrus(node):
    """Whether `node` holds `:=` in an operand evaluated only on some paths."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n is not node and isinstance(n, _NESTED):
            continue
        if isinstance(n, ast.BoolOp) and any(_has_walrus(v) for v in n.values[1:]):
            return True
        if isinstance(n, ast.IfExp) and (_has_walrus(n.body) or _has_walrus(n.orelse)):
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def _thunk(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                         kw_defaults=[], kwarg=None, defaults=[]), body=body)


def _combine(op, t, value, at):
    """`t = _nfag.and_(t, lambda: value)`: Python's value of `t and value` for Python `t`,
    their logical_and for a traced one (as AutoGraph's `and` everywhere)."""
    fn = "and_" if isinstance(op, ast.And) else "or_"
    call = ast.Call(func=ast.Attribute(value=_load(AG), attr=fn, ctx=ast.Load()),
                    args=[_load(t), _thunk(value)], keywords=[])
    return _assign(t, call, at)


def _lower(e, at):
    """(statements, expression): `e` with its lazily evaluated `:=` moved into statements that
    run before the expression, in Python's order."""
    if not _lazy_walrus(e):
        return [], e
    if isinstance(e, ast.BoolOp):
        pre, first = _lower(e.values[0], at)
        t = _fresh("bool")
        pre.append(_assign(t, first, at))
        rest = e.values[1] if len(e.values) == 2 else ast.BoolOp(op=e.op, values=e.values[1:])
        rest_pre, rest_e = _lower(rest, at)
        # the rest is evaluated here, in the user's scope (in the thunk, its `:=` would bind
        # there)
        r = _fresh("bool")
        evaluated = rest_pre + [_assign(r, rest_e, at), _combine(e.op, t, _load(r), at)]
        # the rest is skipped where Python's short-circuit skips it; the result is still what
        # `and_`/`or_` make of the first operand alone
        skipped = [_combine(e.op, t, ast.Constant(value=isinstance(e.op, ast.Or)), at)]
        body, orelse = (evaluated, skipped) if isinstance(e.op, ast.And) else (skipped, evaluated)
        pre.append(ast.copy_location(ast.If(test=_load(t), body=body, orelse=orelse), at))
        return pre, _load(t)
    if isinstance(e, ast.IfExp):
        pre, test = _lower(e.test, at)
        t = _fresh("ifexp")
        b_pre, b = _lower(e.body, at)
        o_pre, o = _lower(e.orelse, at)
        pre.append(ast.copy_location(ast.If(test=test, body=b_pre + [_assign(t, b, at)],
                                            orelse=o_pre + [_assign(t, o, at)]), at))
        return pre, _load(t)
    # another expression: its operands in order; those before the one that needs statements
    # are evaluated into temporaries first (a later `:=` may rebind a name they read)
    pre = []
    slots = _operands(e)
    last = max(k for k, (x, _) in enumerate(slots) if _lazy_walrus(x))
    for k, (x, put) in enumerate(slots[:last + 1]):
        x_pre, new = _lower(x, at)
        pre += x_pre
        if k < last and not isinstance(new, ast.Constant):
            t = _fresh("arg")
            if isinstance(new, ast.Starred):
                pre.append(_assign(t, new.value, at))
                new.value = _load(t)
            else:
                pre.append(_assign(t, new, at))
                new = _load(t)
        put(new)
    return pre, e


def _operands(e):
    """[(operand, put)] of the expression `e` in Python's order of evaluation; `put(v)` puts
    `v` in the operand's place."""
    def slot(obj, field, i=None):
        if i is None:
            return getattr(obj, field), lambda v: setattr(obj, field, v)
        return getattr(obj, field)[i], lambda v: getattr(obj, field).__setitem__(i, v)

    if isinstance(e, ast.Call):
        out = [slot(e, "func")] + [slot(e, "args", i) for i in range(len(e.args))]
        return out + [slot(k, "value") for k in e.keywords]
    if isinstance(e, ast.Dict):
        out = []
        for i, k in enumerate(e.keys):
            if k is not None:
                out.append(slot(e, "keys", i))
            out.append(slot(e, "values", i))
        return out
    if isinstance(e, ast.Starred):
        return [slot(e, "value")]
    out = []
    for f, v in ast.iter_fields(e):
        if isinstance(v, ast.expr):
            out.append(slot(e, f))
        elif isinstance(v, list):
            out += [slot(e, f, i) for i, x in enumerate(v) if isinstance(x, ast.expr)]
    return out


_EXPR_FIELDS = {ast.If: "test", ast.Assign: "value", ast.AnnAssign: "value",
                ast.AugAssign: "value", ast.Expr: "value", ast.Return: "value",
                ast.For: "iter", ast.Raise: "exc", ast.Assert: "test"}


def lower_block(stmts):
    """The statements `stmts` with assignment expressions moved where converted code can bind
    them (see the module docstring); nested function and class definitions are left alone."""
    out = []
    for s in stmts:
        out.extend(_stmt(s))
    return out


def _stmt(s):
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [s]
    for field in ("body", "orelse", "finalbody"):
        block = getattr(s, field, None)
        if block and isinstance(block[0], ast.stmt):
            setattr(s, field, lower_block(block))
    for h in getattr(s, "handlers", []) or []:
        h.body = lower_block(h.body)
    if isinstance(s, ast.Match):
        for c in s.cases:
            c.body = lower_block(c.body)
    if isinstance(s, ast.While) and _has_walrus(s.test):
        return _while(s)
    field = _EXPR_FIELDS.get(type(s))
    value = getattr(s, field, None) if field else None
    if value is None:
        return [s]
    pre, new = _lower(value, s)
    setattr(s, field, new)
    return pre + [s]


def _while(s):
    """`while T: B else: E` with `:=` in `T`: the test runs at the top of the body."""
    ok = _fresh("wtest") if s.orelse else None
    leave = [ast.copy_location(ast.Break(), s)]
    if ok:
        leave.insert(0, _assign(ok, ast.Constant(value=True), s))
    check = ast.copy_location(ast.If(test=ast.UnaryOp(op=ast.Not(), operand=s.test),
                                     body=leave, orelse=[]), s)
    loop = ast.copy_location(ast.While(test=ast.Constant(value=True),
                                       body=_stmt(check) + s.body, orelse=[]), s)
    if not ok:
        return [loop]
    return [_assign(ok, ast.Constant(value=False), s), loop,
            ast.copy_location(ast.If(test=_load(ok), body=s.orelse, orelse=[]), s)]
