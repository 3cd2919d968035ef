"""`return`, `break` and `continue` before AutoGraph's conversion (transformer.py, passes 1 and
2): each becomes flags and guarded statements, so that the converted branches and loop bodies
are functions that run to their end.

1. returns: a `return` inside a loop (or a `with` / `try`) sets a flag and the return value
   (and breaks out of the loop); the statements after it run under `if not flag`; after the
   loop (block), `if flag: return value`;
2. break / continue: flags, the statements after them guarded by `if not flag`, the loop's test
   extended with `not break_flag`;
3. afterwards every `if` holding a `return` is made to return on all its paths (the rest of its
   block copied into each branch: an `if` of two returning branches becomes
   `return if_stmt(...)`).
"""
import ast
import copy

from .astutil import (AG, _fresh, _name, _call, _const, _at, _walk_scope, _SCOPES,
                      _has_at_level, _has_return, _not, _aslist)


# ------------------------------------------------------------------ pass 1: returns
_RET, _RETVAL = AG + "_ret", AG + "_retval"


class _LoopReturns(ast.NodeTransformer):
    """`return v` inside a loop -> retval = v; ret = True; break (after the innermost loop:
    `if ret: break` in an outer loop, `if ret: return retval` outside every loop). Inside a
    `with` or `try` (outside loops) -> retval = v; ret = True, the rest of the block guarded
    by `if not ret`, and `if ret: return retval` after the outermost such block."""

    def __init__(self):
        self.depth = 0          # loops around the statement
        self.blocks = 0         # `with` / `try` blocks holding a return, outside loops
        self.used = False

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def _loop(self, node):
        returns = _has_return(node.body)
        # `while True:` without a break ends only by its returns: nothing runs after it
        endless = isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and \
            bool(node.test.value) and not node.orelse and \
            not _has_at_level(node.body, ast.Break)
        self.depth += 1
        node.body = self._block(node.body)
        self.depth -= 1
        node.orelse = self._block(node.orelse)
        if not returns:
            return node
        if self.depth:
            after = ast.Break()
        elif self.blocks:
            return node         # (the enclosing block guards what follows)
        else:
            after = ast.Return(value=_name(_RETVAL))
            if endless:
                return [node, _at(after, node)]
        guard = _at(ast.If(test=_name(_RET), body=[_at(after, node)], orelse=[]), node)
        return [node, guard]

    visit_For = visit_While = _loop

    def _returning_block(self, node):
        if self.depth or not _has_return([node]):
            return self.generic_visit(node)
        self.blocks += 1
        node = self.generic_visit(node)
        self.blocks -= 1
        _guard_inside(node, [_RET])
        if self.blocks:
            return node
        return [node, _at(ast.If(test=_name(_RET), body=[_at(ast.Return(value=_name(_RETVAL)),
                                                                node)], orelse=[]), node)]

    visit_With = visit_AsyncWith = visit_Try = _returning_block

    def _block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r])
        return out

    def visit_Return(self, node):
        if not self.depth and not self.blocks:
            return node
        self.used = True
        val = node.value if node.value is not None else _const(None)
        out = [_at(ast.Assign(targets=[_name(_RETVAL, ast.Store())], value=val), node),
               _at(ast.Assign(targets=[_name(_RET, ast.Store())], value=_const(True)), node)]
        return out + [_at(ast.Break(), node)] if self.depth else out


def _continue_after_if(block):
    """Copy what follows an `if` that may return into both of its branches, so the `if`
    returns on every path (the rest of the function runs inside the branch that falls
    through)."""
    out = []
    for i, s in enumerate(block):
        if isinstance(s, ast.Return):
            out.append(s)
            return out
        if isinstance(s, ast.If) and _has_return([s]):
            rest = block[i + 1:]
            s.body = _continue_after_if(s.body + copy.deepcopy(rest))
            s.orelse = _continue_after_if(s.orelse + copy.deepcopy(rest))
            out.append(s)
            return out
        out.append(s)
    return out


def _always_returns(block):
    if not block:
        return False
    last = block[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def lower_returns(fdef):
    lr = _LoopReturns()
    fdef.body = lr._block(fdef.body)
    if lr.used:
        init = [ast.Assign(targets=[_name(AG + "_ret", ast.Store())], value=_const(False)),
                ast.Assign(targets=[_name(AG + "_retval", ast.Store())],
                           value=_call("undefined", [_const("the return value")]))]
        fdef.body = [_at(s, fdef.body[0]) for s in init] + fdef.body


def normalize_returns(fdef):
    """Every `if` holding a `return` returns on all its paths (the rest of the block is copied
    into its branches). After break/continue are lowered: a loop's `else` holding a `return`
    has become `if not <break flag>: ...` by then."""
    conditional = any(isinstance(n, ast.If) and _has_return([n]) for n in _walk_scope(fdef.body))
    if conditional:
        if not _always_returns(fdef.body):
            fdef.body.append(_at(ast.Return(value=_const(None)), fdef.body[-1]))
        fdef.body = _continue_after_if(fdef.body)


# ------------------------------------------------------------------ pass 2: break / continue
class _BreakContinue(ast.NodeTransformer):
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def _loop(self, node):
        node.body = [self.visit(s) for s in node.body]
        node.body = [x for s in node.body for x in (s if isinstance(s, list) else [s])]
        node.orelse = [x for s in node.orelse for x in _aslist(self.visit(s))]
        has_b = _has_at_level(node.body, ast.Break)
        has_c = _has_at_level(node.body, ast.Continue)
        if not (has_b or has_c):
            return node
        brk = _fresh("brk") if has_b else None
        cnt = _fresh("cnt") if has_c else None
        flags = [f for f in (brk, cnt) if f]
        body = _replace_jumps(node.body, brk, cnt)
        body = _guard(body, flags, node)
        if cnt:
            body = [_at(ast.Assign(targets=[_name(cnt, ast.Store())], value=_const(False)),
                        node)] + body
        node.body = body
        pre, post = [], []
        if brk:
            pre.append(_at(ast.Assign(targets=[_name(brk, ast.Store())], value=_const(False)),
                           node))
            if isinstance(node, ast.While):
                node.test = _at(ast.BoolOp(op=ast.And(), values=[_not(brk), node.test]),
                                node.test)
            else:
                node._nfag_extra_test = brk
            if node.orelse:
                post.append(_at(ast.If(test=_not(brk), body=node.orelse, orelse=[]), node))
                node.orelse = []
        return pre + [node] + post

    visit_For = visit_While = _loop


def _replace_jumps(stmts, brk, cnt):
    out = []
    for s in stmts:
        if isinstance(s, ast.Break):
            out.append(_at(ast.Assign(targets=[_name(brk, ast.Store())], value=_const(True)), s))
        elif isinstance(s, ast.Continue):
            out.append(_at(ast.Assign(targets=[_name(cnt, ast.Store())], value=_const(True)), s))
        elif isinstance(s, (ast.For, ast.While, ast.AsyncFor)) or isinstance(s, _SCOPES):
            out.append(s)      # their own break/continue (already lowered) are theirs
        else:
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, _replace_jumps(getattr(s, field), brk, cnt))
            for h in getattr(s, "handlers", []) or []:
                h.body = _replace_jumps(h.body, brk, cnt)
            out.append(s)
    return out


def _sets_flag(s, flags):
    for n in _walk_scope([s]):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], ast.Name) and n.targets[0].id in flags:
            return True
    return False


def _guard(stmts, flags, loc=None):
    """After a statement that may set a jump flag, the rest of the block runs only when no
    flag is set (inside the statement's own blocks too)."""
    out = []
    for i, s in enumerate(stmts):
        if _sets_flag(s, flags):
            _guard_inside(s, flags)
        out.append(s)
        if _sets_flag(s, flags) and i + 1 < len(stmts):
            rest = _guard(stmts[i + 1:], flags)
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) \
                    and s.targets[0].id in flags:
                return out          # unconditional jump: the rest never runs
            g = _at(ast.If(test=_no_flag(flags), body=rest, orelse=[]), stmts[i + 1])
            g._nfag_guard = flags == [_RET]       # (see conditionals.if_stmt)
            out.append(g)
            return out
    return out


def _no_flag(flags):
    return (_not(flags[0]) if len(flags) == 1 else
            ast.UnaryOp(op=ast.Not(), operand=ast.BoolOp(op=ast.Or(),
                                                          values=[_name(f) for f in flags])))


def _guard_inside(s, flags):
    """Guard the blocks of the compound statement `s` (a loop's blocks are its own: its jumps
    have flags of their own, and a return flag it sets is tested after it)."""
    if isinstance(s, ast.If):
        s.body, s.orelse = _guard(s.body, flags), _guard(s.orelse, flags)
    elif isinstance(s, (ast.With, ast.AsyncWith)):
        s.body = _guard(s.body, flags)
    elif isinstance(s, ast.Try):
        jumps = any(_sets_flag(x, flags) for x in s.body)
        s.body = _guard(s.body, flags)
        for h in s.handlers:
            h.body = _guard(h.body, flags)
        s.orelse = _guard(s.orelse, flags)
        if jumps and s.orelse:
            # a try's `else` runs only when its body ran to the end
            g = _at(ast.If(test=_no_flag(flags), body=s.orelse, orelse=[]), s.orelse[0])
            g._nfag_guard = flags == [_RET]
            s.orelse = [g]
        s.finalbody = _guard(s.finalbody, flags)
    elif isinstance(s, ast.Match):
        for c in s.cases:
            c.body = _guard(c.body, flags)
