"""AST helpers of AutoGraph's rewrite: names, calls of the operators module, the user's line
numbers on new nodes, walking one function scope."""
import ast
import itertools

AG = "_nfag"                    # the name of the operators module inside converted code
_counter = itertools.count(1)


class Unsupported(Exception):
    """This source cannot be converted (the function then runs as written)."""


def _fresh(kind):
    return "%s_%s_%d" % (AG, kind, next(_counter))


def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _ag_attr(attr):
    return ast.Attribute(value=_name(AG), attr=attr, ctx=ast.Load())


def _call(attr, args, keywords=()):
    return ast.Call(func=_ag_attr(attr), args=list(args), keywords=list(keywords))


def _const(v):
    return ast.Constant(value=v)


def _at(new, old):
    """`new` (and its sub-nodes without a place) at the first line of `old` in the user's
    source (one line, so a traceback shows the statement's own line)."""
    for n in ast.walk(new):
        if isinstance(n, (ast.expr, ast.stmt, ast.arg)) and getattr(n, "lineno", None) is None:
            _place(n, old)
    _place(new, old)
    return new


def _place(n, old):
    n.lineno = getattr(old, "lineno", 1)
    n.col_offset = getattr(old, "col_offset", 0)
    n.end_lineno = n.lineno
    n.end_col_offset = n.col_offset


def _tuple(elts, ctx=None):
    return ast.Tuple(elts=list(elts), ctx=ctx or ast.Load())


# ------------------------------------------------------------------ walking one scope
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(node, skip=_SCOPES):
    """The nodes under `node` (statements or expressions); nested functions, lambdas and
    classes are yielded but not entered (their names are not this scope's)."""
    stack = list(node) if isinstance(node, list) else [node]
    stack.reverse()
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, skip):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def _has_at_level(stmts, kinds):
    """Whether `stmts` hold a statement of `kinds` belonging to this loop level (not inside a
    nested loop or function)."""
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, (ast.For, ast.While, ast.AsyncFor)):
            if _has_at_level(s.orelse, kinds):
                return True
            continue
        if isinstance(s, _SCOPES):
            continue
        for field in ("body", "orelse", "finalbody"):
            if _has_at_level(getattr(s, field, []) or [], kinds):
                return True
        for h in getattr(s, "handlers", []) or []:
            if _has_at_level(h.body, kinds):
                return True
        if isinstance(s, ast.Match):
            for c in s.cases:
                if _has_at_level(c.body, kinds):
                    return True
    return False


def _has_return(stmts):
    return any(isinstance(n, ast.Return) for n in _walk_scope(stmts))


def _not(name):
    return ast.UnaryOp(op=ast.Not(), operand=_name(name))


def _aslist(x):
    return x if isinstance(x, list) else [x]


def _no_args():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


def _args(names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
