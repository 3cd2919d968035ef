"""Buffers kept between calls of a kernel, so that large results and temporaries do not cost a
fresh allocation (for large arrays: an mmap and a page fault per 4 KiB) on every call.

An output buffer goes back to its pool when the kernel returns it. At the next call it is
reused only if nothing but the pool refers to it any more (the caller dropped the result and
every view of it: a view holds a reference to its base), checked with `sys.getrefcount`. Lists
are popped and appended (atomic in CPython), so concurrent calls never share a buffer.
"""
import sys

import numpy as np

_getrefcount = sys.getrefcount


def _calibrate():
    pool = [np.empty(1)]
    b = pool.pop()
    return _getrefcount(b)


# references held while `take` inspects a buffer nobody else holds (its local name, the call's
# argument): measured rather than assumed, as it differs between Python versions
_FREE_REFS = _calibrate()


class OutputPool:
    """Reusable result buffers for one output of one fused node."""
    __slots__ = ("free", "reused", "allocated", "lent")

    def __init__(self):
        self.free = []
        self.reused = 0
        self.allocated = 0
        self.lent = None      # the buffer `take` handed out last

    def take(self, shape, dtype):
        try:
            b = self.free.pop()
        except IndexError:
            b = None
        if b is not None and _getrefcount(b) == _FREE_REFS and b.shape == shape \
                and b.dtype == dtype:
            self.reused += 1
            self.lent = b
            return b
        self.allocated += 1
        b = self.lent = np.empty(shape, dtype)
        return b

    def give(self, b):
        # only what this pool lent: a donated buffer (a dead intermediate, a Variable's own
        # buffer updated in place) stays its owner's; holding it would make the next call
        # see it as shared and stop the Variable's in-place update
        if b is self.lent:
            self.lent = None
            if len(self.free) < 2:
                self.free.append(b)

    def clear(self):
        self.free.clear()


class TempPool:
    """Scratch buffers by (shape, dtype), used and given back within one call."""
    __slots__ = ("free",)

    def __init__(self):
        self.free = {}

    def take(self, shape, dtype):
        lst = self.free.get((shape, dtype))
        if lst:
            try:
                return lst.pop()
            except IndexError:
                pass
        return np.empty(shape, dtype)

    def give(self, b):
        lst = self.free.setdefault((b.shape, b.dtype), [])
        if len(lst) < 4:
            lst.append(b)


def donated(d, shape, dtype):
    """`d` if the result can be written into it (a dead buffer the graph donates), else None:
    a whole, writeable, C-contiguous array of exactly this shape and dtype, not a view."""
    if type(d) is np.ndarray and d.base is None and d.shape == shape and d.dtype == dtype \
            and d.flags.writeable and d.flags.c_contiguous:
        return d
    return None


# ------------------------------------------------------------------ NumPy's error state, cheaply
_extobj = None          # NumPy's error-state context variable (False: this NumPy has none)
_seen = (None, None, None)   # (its value, quiet, may_raise): replaced as one tuple (threads)


def errstate_flags():
    """(quiet, may_raise) for NumPy's current floating-point error state: `quiet` when every
    category only ignores or warns, `may_raise` when one raises or calls. `np.geterr()` costs
    ~1-2 us; NumPy keeps the state in a context variable whose value is a new object at every
    change (`np.errstate`, `np.seterr`), so the answer for the value seen last is kept."""
    global _extobj, _seen
    ext = _extobj
    if ext is None:
        try:
            from numpy._core.umath import _extobj_contextvar as ext
        except ImportError:       # another NumPy: ask every time
            ext = False
        _extobj = ext
    if ext is not False:
        cur = ext.get()
        s = _seen
        if s[0] is cur:
            return s[1], s[2]
    modes = np.geterr().values()
    quiet = all(m in ("ignore", "warn") for m in modes)
    may_raise = any(m in ("raise", "call") for m in modes)
    if ext is not False:
        _seen = (cur, quiet, may_raise)     # holds `cur`: its id cannot be reused meanwhile
        if quiet:
            QUIET_STATE[0] = cur
    return quiet, may_raise


# The error-state value last found quiet (held, so its id is not reused): generated code
# compares the current value with it by identity (`errstate_getter`), ~70 ns less than a call
# of errstate_flags, and asks errstate_flags only when they differ
QUIET_STATE = [None]


def errstate_getter():
    """The function returning NumPy's current error-state value (compared with QUIET_STATE[0]),
    or None where this NumPy keeps it otherwise (then ask errstate_flags)."""
    errstate_flags()
    return _extobj.get if _extobj else None
