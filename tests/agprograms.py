"""Small generated Python programs for AutoGraph's differential tests: each is run as written on
eager arrays (Python decides every condition: the oracle) and compiled by `nf.function` (traced
conditions become `cond` / `while_loop` / `scan`), and the two must agree, errors included.

A program is built from a seed: nested `if` / `for` / `while` statements whose conditions are
traced values or Python values, with `break`, `continue` and `return` at any depth, loops over
Python ranges, traced ranges, traced rows, `enumerate` and `zip`, and assignment expressions.
Every program is valid under staging by construction: its variables are defined before the
statements that change them, keep their dtypes, and every `return` gives the same structure.
"""
import linecache
import random

import ndflow as nf
import ndflow.numpy as tnp

_count = [0]


def compile_program(src, name="prog"):
    """The function `name` defined by `src`, with its source registered (so AutoGraph can
    convert it, as it converts a function from a file)."""
    _count[0] += 1
    fname = "<agprogram-%d>" % _count[0]
    lines = src.splitlines(True)
    linecache.cache[fname] = (len(src), None, lines, fname)
    ns = {"tnp": tnp, "nf": nf}
    exec(compile(src, fname, "exec"), ns)
    return ns[name]


class _Gen:
    """One program: statements over `x` (a float vector, traced), `n` (an int, traced) and
    `k` (a Python int); state `s` (float) and `c` (int); results `(s, c)` or one of them."""

    def __init__(self, seed, ret_kind):
        self.r = random.Random(seed)
        self.ret_kind = ret_kind
        self.loop_names = iter("ijmpqrtuv")
        self.lines = []

    def ret_expr(self):
        return {"pair": "s, c", "s": "s", "dict": "{'s': s, 'c': c}", "nested": "(s, (c, s * 2))"}[
            self.ret_kind]

    def cond(self, traced=None):
        r = self.r
        if traced is None:
            traced = r.random() < 0.7
        if traced:
            return r.choice(["tnp.sum(x) > %d" % r.randint(-2, 6), "s > %d" % r.randint(0, 12),
                             "c %% 2 == %d" % r.randint(0, 1), "x[0] < s",
                             "(c > 1) and (s < 9)", "not (s > 5)", "n > %d" % r.randint(0, 4),
                             "(z := s * 2) > %d" % r.randint(2, 14)])
        return r.choice(["k > %d" % r.randint(0, 3), "k % 2 == 0", "True", "False"])

    def simple(self, depth):
        r = self.r
        return r.choice(["s = s + x[%d]" % r.randint(0, 3), "c = c + 1", "s = s * 0.5 + 1.0",
                         "c = c + %d" % r.randint(1, 3), "s = s - 0.25",
                         "s = halve(s, %d)" % r.randint(0, 3), "c = max(c, %d)" % r.randint(0, 4),
                         "s = min(s, x[%d] + 3.0)" % r.randint(0, 3)])

    def block(self, depth, in_loop, indent):
        n = self.r.randint(1, 3)
        out = []
        for i in range(n):
            out += self.stmt(depth, in_loop, indent)
        return out

    def stmt(self, depth, in_loop, indent):
        r = self.r
        pad = "    " * indent
        choices = ["simple", "simple"]
        if depth < 3:
            choices += ["if", "for", "while", "block"]
        if in_loop:
            choices += ["break", "continue"]
        choices += ["return"]
        kind = r.choice(choices)
        if kind == "simple":
            return [pad + self.simple(depth)]
        if kind in ("break", "continue", "return"):
            # under a condition (an unconditional jump leaves dead code after it)
            jump = kind if kind != "return" else "return " + self.ret_expr()
            return [pad + "if %s:" % self.cond(), pad + "    " + jump]
        if kind == "block":
            # a with / try block (jumps out of it run its exit / finally first)
            inner = self.block(depth + 1, in_loop, indent + 1)
            if r.random() < 0.5:
                return [pad + "with contextlib.nullcontext():"] + inner
            tail = [pad + "finally:", pad + "    c = c + 1"] if r.random() < 0.5 else \
                [pad + "except ZeroDivisionError:", pad + "    c = c - 1", pad + "else:",
                 pad + "    s = s + 0.5"]
            return [pad + "try:"] + inner + tail
        if kind == "if":
            out = [pad + "if %s:" % self.cond()] + self.block(depth + 1, in_loop, indent + 1)
            if r.random() < 0.5:
                out += [pad + "else:"] + self.block(depth + 1, in_loop, indent + 1)
            return out
        if kind == "for":
            v = next(self.loop_names)
            it = r.choice(["range(3)", "range(n)", "range(1, n + 2, 2)", "range(n, -1, -1)",
                           "x", "enumerate(x)", "zip(x, x * 2)", "range(k + 1)", "pairs",
                           "reversed(range(n))"])
            if it == "pairs":
                head = "for %s, g_%s in tnp.stack([x, x * 2], axis=1):" % (v, v)
                use = "s = s + %s * g_%s" % (v, v)
            elif it == "x":
                head, use = "for %s in x:" % v, "s = s + %s" % v
            elif it.startswith("enumerate"):
                head, use = "for %s, e_%s in enumerate(x):" % (v, v), "s = s + e_%s * %s" % (v, v)
            elif it.startswith("zip"):
                head, use = "for %s, f_%s in zip(x, x * 2):" % (v, v), "s = s + %s - f_%s" % (v, v)
            else:
                head, use = "for %s in %s:" % (v, it), "c = c + %s" % v
            out = [pad + head, pad + "    " + use] + self.block(depth + 1, True, indent + 1)
            if r.random() < 0.2:
                out += [pad + "else:", pad + "    s = s + 100.0"]
            return out
        # while: bounded by its own counter, incremented first (a continue cannot skip it)
        w = "w%d" % indent
        out = [pad + "%s = 0" % w,
               pad + "while %s < %d and (%s):" % (w, r.randint(1, 4), self.cond()),
               pad + "    %s += 1" % w] + self.block(depth + 1, True, indent + 1)
        return out

    def program(self):
        body = _HELPERS + ["def prog(x, n, k):", "    s = 0.0", "    c = 0", "    z = 0.0"]
        body += self.block(0, False, 1)
        body.append("    return " + self.ret_expr())
        return "\n".join(body) + "\n"


# a recursive helper (its base case a Python value; a traced `if` inside)
_HELPERS = ["import contextlib", "", "def halve(v, d):", "    if d <= 0:", "        return v",
            "    if v > 1.0:", "        return halve(v * 0.5, d - 1)",
            "    return halve(v + 0.5, d - 1)", ""]


def program(seed):
    """(source, function) of the program made from `seed`."""
    kind = ["pair", "s", "dict", "nested"][seed % 4]
    src = _Gen(seed, kind).program()
    return src, compile_program(src)
