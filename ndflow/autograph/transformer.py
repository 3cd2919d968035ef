"""The source-to-source rewrite of AutoGraph: Python control flow -> calls of `operators`.

One function scope is rewritten in passes over its `ast`:

0. assignment expressions move where converted code binds them (walrus.py);
1, 2. `return`, `break` and `continue` become flags and guarded statements (jumps.py);
3. liveness: the variables live after each `if` / loop and at each loop's head (a backward
   pass, conservative: more names is safe, fewer is not);
4. conversion, innermost first: branches and loop bodies become local functions whose
   parameters are the variables they assign and whose results are the live ones; conditional
   expressions, `and`/`or`/`not`, `assert` and calls go through `operators`.

Nodes keep the user's line numbers (and the code compiles with the user's file name), so
tracebacks and `_user_line()` point at the original source.
"""
import ast
import copy

from . import walrus
from .astutil import (AG, Unsupported, _fresh, _name, _call, _const, _at, _tuple,  # noqa: F401
                      _walk_scope, _SCOPES, _COMPS, _has_return, _not, _aslist, _no_args,
                      _args)
from .jumps import lower_returns, normalize_returns, _BreakContinue, _always_returns


def _loads(node):
    """Names read by `node`, nested scopes included (their free reads happen when they run),
    less the names a comprehension binds for itself."""
    out = set()
    for root in (node if isinstance(node, list) else [node]):
        _loads_into(root, out)
    return out


def _loads_into(n, out):
    if isinstance(n, ast.Name):
        if isinstance(n.ctx, ast.Load):
            out.add(n.id)
        return
    if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
        out.add(n.target.id)
    if isinstance(n, _COMPS):
        inner = set()
        for c in ast.iter_child_nodes(n):
            _loads_into(c, inner)
        bound = set()
        for g in n.generators:
            _target_names(g.target, bound)
        out |= inner - bound
        _loads_into(n.generators[0].iter, out)
        return
    for c in ast.iter_child_nodes(n):
        _loads_into(c, out)


def _reads_before_binds(node):
    """(names `node` reads before its own `:=` bind them, names its `:=` bind on every path),
    in Python's order of evaluation (a walrus target read later in the same expression is the
    walrus's value, not a value from before)."""
    gen, bound = set(), set()

    def visit(n, lazy):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load) and n.id not in bound:
                gen.add(n.id)
        elif isinstance(n, ast.NamedExpr):
            visit(n.value, lazy)
            if not lazy:
                bound.add(n.target.id)
        elif isinstance(n, _SCOPES + _COMPS):
            gen.update(_loads(n) - bound)
        elif isinstance(n, ast.BoolOp):
            visit(n.values[0], lazy)
            for v in n.values[1:]:
                visit(v, True)
        elif isinstance(n, ast.IfExp):
            visit(n.test, lazy)
            visit(n.body, True)
            visit(n.orelse, True)
        else:
            for c in ast.iter_child_nodes(n):
                visit(c, lazy)
    visit(node, False)
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        gen.add(node.target.id)
    return gen, bound


def _target_names(t, out):
    if isinstance(t, ast.Name):
        out.add(t.id)
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _target_names(e, out)
    elif isinstance(t, ast.Starred):
        _target_names(t.value, out)
    return out


# an array's attributes that are views of it (NumPy's): a write through them writes the array
_VIEW_ATTRS = frozenset({"real", "imag", "T", "mT", "flat"})


def assigned(stmts, local_names=()):
    """Names this scope binds in `stmts` (assignments, loop targets, with-as, imports, defs),
    and its local names (`local_names`) changed by item assignment (`x[i] = v`)."""
    out = set()
    for n in _walk_scope(stmts, _SCOPES + _COMPS):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, (ast.Store,
                                                                               ast.Del)):
            # x[i] = v changes x (an array's new value, in a traced branch or loop); so do
            # writes through its view attributes (x.real[i] = v, x.T[i] = v, x.imag = v)
            base = n.value
            while isinstance(base, ast.Subscript) or (isinstance(base, ast.Attribute)
                                                      and base.attr in _VIEW_ATTRS):
                base = base.value
            if isinstance(base, ast.Name) and base.id in local_names and (
                    isinstance(n, ast.Subscript) or n.attr in _VIEW_ATTRS):
                out.add(base.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.NamedExpr):
            out.add(n.target.id)
        elif isinstance(n, _COMPS):
            # `:=` in a comprehension binds the name in the enclosing function
            out |= {m.target.id for m in _walk_scope([n], _SCOPES)
                    if isinstance(m, ast.NamedExpr)}
    return out


def _defs_bound(stmts):
    """Names bound by def / class / import: not values a loop could carry."""
    out = set()
    for n in _walk_scope(stmts, _SCOPES + _COMPS):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
    return out


# ------------------------------------------------------------------ pass 3: liveness
def _live_block(stmts, live_out):
    live = set(live_out)
    for s in reversed(stmts):
        live = _live_stmt(s, live)
    return live


def _live_stmt(s, out):
    if isinstance(s, ast.If):
        s._nfag_live_out = set(out)
        gen, bound = _reads_before_binds(s.test)
        return gen | ((_live_block(s.body, out) | _live_block(s.orelse, out)) - bound)
    if isinstance(s, ast.While):
        s._nfag_live_out = set(out)
        head = set(out) | _loads(s.test)
        for _ in range(4):
            new = set(out) | _loads(s.test) | _live_block(s.body, head) | \
                _live_block(s.orelse, out)
            if new == head:
                break
            head = new
        s._nfag_live_head = head
        return head
    if isinstance(s, (ast.For, ast.AsyncFor)):
        s._nfag_live_out = set(out)
        targets = _target_names(s.target, set())
        head = set(out)
        extra = {s._nfag_extra_test} if getattr(s, "_nfag_extra_test", None) else set()
        for _ in range(4):
            new = set(out) | extra | (_live_block(s.body, head) - targets) | \
                _live_block(s.orelse, out)
            if new == head:
                break
            head = new
        s._nfag_live_head = head
        return head | _loads(s.iter)
    if isinstance(s, ast.Return):
        return _loads(s.value) if s.value is not None else set()
    if isinstance(s, ast.Raise):
        return _loads(s)
    if isinstance(s, (ast.With, ast.AsyncWith)):
        inner = _live_block(s.body, out)
        names = set()
        for it in s.items:
            if it.optional_vars is not None:
                _target_names(it.optional_vars, names)
        return (inner - names) | _loads([it.context_expr for it in s.items])
    if isinstance(s, ast.Try):
        fin = _live_block(s.finalbody, out)
        els = _live_block(s.orelse, fin)
        hs = set()
        for h in s.handlers:
            hs |= _live_block(h.body, fin)
        return _live_block(s.body, els | hs) | hs | fin
    if isinstance(s, ast.Match):
        live = _loads(s.subject) | set(out)
        for c in s.cases:
            live |= _live_block(c.body, out) | _loads(c.pattern)
        return live
    # a simple statement (or a def / class): reads, then definite writes
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        gen = _loads(s)
        kill = {s.name}
    else:
        gen, kill = _reads_before_binds(s)
        if isinstance(s, ast.Assign):
            for t in s.targets:
                _target_names(t, kill)
        elif isinstance(s, (ast.AnnAssign,)) and s.value is not None:
            _target_names(s.target, kill)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            kill = {(a.asname or a.name).split(".")[0] for a in s.names}
    return gen | (set(out) - kill)


# ------------------------------------------------------------------ pass 4: conversion
_NO_WRAP_CALLS = {"super", "locals", "globals", "vars", "eval", "exec", "print"}


class _Expressions(ast.NodeTransformer):
    """Conditional expressions, and/or/not, calls: through `operators`."""

    def __init__(self, filename):
        self.filename = filename

    def loc(self, node):
        return _const("%s:%d" % (self.filename, getattr(node, "lineno", 0)))

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values[1:] for n in ast.walk(v)):
            return node     # (left by walrus.py: in a comprehension, Python's meaning)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        thunks = [ast.Lambda(args=_no_args(), body=v) for v in node.values[1:]]
        return _at(_call(fn, [node.values[0]] + thunks), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _at(_call("not_", [node.operand]), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for b in (node.body, node.orelse)
               for n in ast.walk(b)):
            return node     # (left by walrus.py: in a comprehension, Python's meaning)
        return _at(_call("if_exp", [node.test, ast.Lambda(args=_no_args(), body=node.body),
                                    ast.Lambda(args=_no_args(), body=node.orelse),
                                    self.loc(node)]), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in _NO_WRAP_CALLS:
            return node
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == AG:
            return node
        args = _tuple(node.args)
        if node.keywords:
            kw = ast.Dict(keys=[None if k.arg is None else _const(k.arg) for k in node.keywords],
                          values=[k.value for k in node.keywords])
            return _at(_call("call", [f, args, kw]), node)
        return _at(_call("call", [f, args]), node)

    def visit_FunctionDef(self, node):
        return node      # converted as a scope of its own

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef


def _fdef(name, params, body, at):
    f = ast.FunctionDef(name=name, args=_args(params), body=body or [ast.Pass()],
                        decorator_list=[], returns=None, type_comment=None)
    return _at(f, at)


def _ld(name, scope):
    """The variable's current value, or an `Undefined` marker when it has none yet."""
    if name in scope.declared:
        return _name(name)
    return _call("ld", [ast.Call(func=_name("locals"), args=[], keywords=[]), _const(name)])


class _Scope:
    def __init__(self, fdef):
        self.declared = set()
        for n in _walk_scope(fdef.body):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                self.declared.update(n.names)
        a = fdef.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        # the function's own variables (item assignment to a closure's or a global's object
        # changes that object; it does not make the name local)
        self.locals = (params | assigned(fdef.body)) - self.declared


class _Statements:
    """Rewrites the control-flow statements of one scope, innermost first."""

    def __init__(self, filename, scope):
        self.filename = filename
        self.scope = scope
        self.exprs = _Expressions(filename)

    def loc(self, node):
        return _const("%s:%d" % (self.filename, node.lineno))

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def expr(self, e):
        return self.exprs.visit(e)

    def stmt(self, s):
        if isinstance(s, ast.If):
            return self.if_(s)
        if isinstance(s, ast.While):
            return self.while_(s)
        if isinstance(s, ast.For):
            return self.for_(s)
        if isinstance(s, ast.Assert):
            msg = ast.Lambda(args=_no_args(), body=self.expr(s.msg) if s.msg else _const(None))
            return [_at(ast.Expr(value=_call("assert_", [self.expr(s.test), msg, self.loc(s)])),
                        s)]
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [s]      # converted on its own (convert_scope)
        for field in ("body", "orelse", "finalbody"):
            if getattr(s, field, None) and isinstance(getattr(s, field)[0], ast.stmt):
                setattr(s, field, self.block(getattr(s, field)))
        for h in getattr(s, "handlers", []) or []:
            h.body = self.block(h.body)
        if isinstance(s, ast.Match):
            for c in s.cases:
                c.body = self.block(c.body)
        # the expressions of this statement itself (not of its sub-blocks)
        for field, value in ast.iter_fields(s):
            if isinstance(value, ast.expr):
                setattr(s, field, self.expr(value))
            elif isinstance(value, list) and field not in ("body", "orelse", "finalbody",
                                                          "handlers", "cases"):
                setattr(s, field, [self.expr(v) if isinstance(v, ast.expr) else
                                   (self._withitem(v) if isinstance(v, ast.withitem) else v)
                                   for v in value])
        return [s]

    def _withitem(self, it):
        it.context_expr = self.expr(it.context_expr)
        return it

    # -------------------------------------------------------------- if
    def if_(self, s):
        returns = _always_returns(s.body) and _always_returns(s.orelse)
        if not returns and _has_return(s.body + s.orelse):
            raise Unsupported(f"line {s.lineno}: a `return` inside an `if` that does not return "
                              f"on every path (inside `with` or `try`)")
        # (before the branches are converted: converting a loop moves its `else` out of it)
        defs = _defs_bound(s.body + s.orelse)
        params = sorted(assigned(s.body + s.orelse, self.scope.locals) - defs)
        test = self.expr(s.test)
        body = self.block(s.body)
        orelse = self.block(s.orelse)
        if returns:
            outs = []
        else:
            outs = [n for n in params if n in s._nfag_live_out]
            ret = ast.Return(value=_tuple([_name(n) for n in outs]))
            body = body + [_at(ret, s)]
            orelse = orelse + [_at(copy.deepcopy(ret), s)]
        tname, fname = _fresh("if_true"), _fresh("if_false")
        call = _call("if_stmt", [test, _name(tname), _name(fname),
                                 _tuple([_ld(n, self.scope) for n in params]),
                                 _tuple([_const(n) for n in params]),
                                 _tuple([_const(n) for n in outs]),
                                 _const("guard" if getattr(s, "_nfag_guard", False) else returns),
                                 self.loc(s)])
        result = [_fdef(tname, params, body, s), _fdef(fname, params, orelse, s)]
        if returns:
            result.append(_at(ast.Return(value=call), s))
        elif outs:
            result.append(_at(ast.Assign(targets=[_tuple([_name(n, ast.Store()) for n in outs],
                                                         ast.Store())], value=call), s))
        else:
            result.append(_at(ast.Expr(value=call), s))
        return result

    # -------------------------------------------------------------- loops
    def _loop_vars(self, s, extra=()):
        defs = _defs_bound(s.body)
        names = (assigned(s.body, self.scope.locals) | set(extra)) - defs
        return sorted(n for n in names if n in s._nfag_live_head)

    def while_(self, s):
        if s.orelse:       # no break in this loop (else it was lowered): else always runs
            orelse, s.orelse = s.orelse, []
            return self.while_(s) + self.block(orelse)
        lv = self._loop_vars(s)
        test = self.expr(s.test)
        body = self.block(s.body)
        body.append(_at(ast.Return(value=_tuple([_name(n) for n in lv])), s))
        tname, bname = _fresh("test"), _fresh("body")
        call = _call("while_stmt", [_name(tname), _name(bname),
                                    _tuple([_ld(n, self.scope) for n in lv]),
                                    _tuple([_const(n) for n in lv]), self.loc(s)])
        return [_fdef(tname, lv, [_at(ast.Return(value=test), s)], s),
                _fdef(bname, lv, body, s), self._assign(lv, call, s)]

    def for_(self, s):
        if s.orelse:
            orelse, s.orelse = s.orelse, []
            return self.for_(s) + self.block(orelse)
        lv = self._loop_vars(s, _target_names(s.target, set()))
        it = self.expr(s.iter)
        if isinstance(s.iter, ast.Call) and isinstance(s.iter.func, ast.Name) and \
                s.iter.func.id == "range" and not s.iter.keywords:
            it = _at(_call("range_", [_name("range")] + [self.expr(a) for a in s.iter.args]),
                     s.iter)
        itr = _fresh("itr")
        body = [_at(ast.Assign(targets=[s.target], value=_name(itr)), s)] + self.block(s.body)
        body.append(_at(ast.Return(value=_tuple([_name(n) for n in lv])), s))
        bname = _fresh("body")
        flag = getattr(s, "_nfag_extra_test", None)
        out = []
        if flag:
            tname = _fresh("test")
            out.append(_fdef(tname, lv, [_at(ast.Return(value=self.expr(_not(flag))), s)], s))
            test = _name(tname)
        else:
            test = _const(None)
        targets = sorted(_target_names(s.target, set()) & set(lv))
        call = _call("for_stmt", [it, test, _name(bname),
                                  _tuple([_ld(n, self.scope) for n in lv]),
                                  _tuple([_const(n) for n in lv]),
                                  _tuple([_const(n) for n in targets]), self.loc(s)])
        out += [_fdef(bname, [itr] + lv, body, s), self._assign(lv, call, s)]
        return out

    def _assign(self, names, call, at):
        if not names:
            return _at(ast.Expr(value=call), at)
        return _at(ast.Assign(targets=[_tuple([_name(n, ast.Store()) for n in names],
                                              ast.Store())], value=call), at)


def _is_generator_or_async(fdef):
    return isinstance(fdef, ast.AsyncFunctionDef) or any(
        isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk_scope(fdef.body))


def convert_scope(fdef, filename, top=True):
    """Rewrite the function definition `fdef` (and the functions defined in it) in place.
    Generators and coroutines are not converted (their bodies cannot move into branch
    functions): at the top, `Unsupported`; nested ones stay as written."""
    if _is_generator_or_async(fdef):
        if top:
            raise Unsupported("generators and async functions are not converted")
        return fdef
    for n in list(_walk_scope(fdef.body)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            convert_scope(n, filename, False)
        elif isinstance(n, ast.ClassDef):
            for m in n.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    convert_scope(m, filename, False)
    fdef.body = walrus.lower_block(fdef.body)
    lower_returns(fdef)
    fdef.body = [x for s in fdef.body for x in _aslist(_BreakContinue().visit(s))]
    normalize_returns(fdef)
    _live_block(fdef.body, set())
    st = _Statements(filename, _Scope(fdef))
    fdef.body = st.block(fdef.body)
    ex = _Expressions(filename)
    fdef.args = ex.visit(fdef.args)
    return fdef
