"""Warnings that NumPy raises inside ndflow point at the user's line, as NumPy's own do.

NumPy warns (overflow, invalid value, divide by zero, ...) from C with the frame that called
the ufunc as the location: for an ndflow operation that frame is ndflow's own (the eager door,
a kernel, a generated graph), so the warning named ndflow's file, and Python's "once per
location" registry of that file swallowed the same warning from a second user line.

Catching the warnings around every kernel call (`np.errstate(call=...)`, `catch_warnings`)
costs a third of a small eager operation. Nothing is paid until a warning is shown: the hook
below, on `warnings._showwarnmsg` (which Python calls for every warning its filters let
through), moves a warning located inside ndflow to the user's line — the first frame outside
ndflow, or, in a compiled function, the line that traced the operation whose kernel warned
(the graph node's `loc`, found through the generated code's `__ndflow_lines__`, as errors do)
— and issues it there again, through the filters and registry of the user's module. The first
pass's record in ndflow's registry is taken back, so the next user line warns too. A filter
that raises ("error") raises at the first pass, from the kernel, as NumPy does.
"""
import os
import re
import sys
import warnings

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LOC = re.compile(r"^(.*):(\d+)$")
_OP = re.compile(r"encountered in (\w+)")
_REGISTRIES = {}     # a traced line's file -> its registry, when no frame of that file is live


def _inside(filename):
    return filename.startswith("<ndflow") or os.path.abspath(filename).startswith(_ROOT)


def _node_loc(node, text):
    """The traced line of `node`; for a fused region, of the member NumPy names ("overflow
    encountered in multiply"), else of the region."""
    loc = getattr(node, "loc", None) or ""
    op = _OP.search(text)
    for name, member_loc in getattr(loc, "members", ()):
        if op and name == op.group(1):
            return member_loc or loc
    return loc


def _user_site(f, text):
    """(filename, lineno, globals or None) where the warning made in frame `f` belongs."""
    while f is not None:
        g = f.f_globals
        lines = g.get("__ndflow_lines__")
        if lines is not None:
            m = _LOC.match(_node_loc(lines.get(f.f_lineno), text))
            if m and not _inside(m.group(1)):
                return m.group(1), int(m.group(2)), None
        fn = f.f_code.co_filename
        if not _inside(fn):
            return fn, f.f_lineno, g
        f = f.f_back
    return None


def _forget(g, message, category, lineno):
    """Take back what the first pass recorded (per action: default, module, once)."""
    text = str(message)
    reg = g.get("__warningregistry__")
    if isinstance(reg, dict):
        reg.pop((text, category, lineno), None)
        reg.pop((text, category, 0), None)
    once = getattr(warnings, "onceregistry", None)
    if isinstance(once, dict):
        once.pop((text, category), None)


def _registry(filename, g):
    if g is not None:
        return g.setdefault("__warningregistry__", {}), g.get("__name__")
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == filename:
            g = f.f_globals
            return g.setdefault("__warningregistry__", {}), g.get("__name__")
        f = f.f_back
    return _REGISTRIES.setdefault(filename, {}), None


def _make_hook(show):
    def _showwarnmsg(msg):
        if not _inside(msg.filename or ""):
            return show(msg)
        f = sys._getframe(1)
        while f is not None and not (f.f_code.co_filename == msg.filename
                                     and f.f_lineno == msg.lineno):
            f = f.f_back
        site = _user_site(f, str(msg.message)) if f is not None else None
        if site is None:
            return show(msg)
        _forget(f.f_globals, msg.message, msg.category, msg.lineno)
        filename, lineno, g = site
        registry, module = _registry(filename, g)
        warnings.warn_explicit(msg.message, msg.category, filename, lineno, module=module,
                               registry=registry, source=msg.source)

    _showwarnmsg._ndflow = True
    return _showwarnmsg


def install():
    """Put the hook in place (once; a Python without `warnings._showwarnmsg` keeps its own)."""
    show = getattr(warnings, "_showwarnmsg", None)
    if show is not None and not getattr(show, "_ndflow", False):
        warnings._showwarnmsg = _make_hook(show)
