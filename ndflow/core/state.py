"""Per-thread interpreter state.

Everything that changes how `bind` runs — traces, tapes, the device scope, promotion switches,
checking numerics, the views registered while tracing — is per thread (`STATE`, a
`threading.local`), as TensorFlow's tapes and function traces are: a tape recording in one thread never changes what
another thread computes or how its writes behave.

The eager fast path must stay one cheap read. `GLOBAL.fast` is a process-wide *hint*: True
only while no thread has anything active. It is kept under a lock as a count of the threads
whose own state is not fast, so it can never read True while the reading thread itself has a
tape, trace or switch active (that thread's own `refresh` made the count non-zero before its
next `bind`, and only a later `refresh` of the same thread can take it back out). When it reads
False, callers consult their own thread's `STATE.fast`, which is exact.
"""
# _thread's local and lock are threading's own classes (threading.local is _thread._local);
# importing threading itself would add ~2% to `import ndflow`
import _thread
import weakref

from .settings import settings, ON_CHANGE

# CPython 3.11 counts the depth of a syntax tree it builds or reads (ast.parse, compile() of a
# tree, and so NumPy's .npy header reader, which calls ast.literal_eval) in one counter per
# interpreter: two threads doing it at once can raise "SystemError: AST constructor recursion
# depth mismatch" (python/cpython#106905; seen in AutoGraph tracing from several threads and
# in np.load from several). Every use of ndflow's takes this lock, so they take turns.
AST_LOCK = _thread.allocate_lock()


class _Slot:
    """Whether a thread is counted as slow; outlives the thread's state so that a thread ending
    with a tape or trace still active gives its count back (see `_release`)."""
    __slots__ = ("slow",)

    def __init__(self):
        self.slow = False


class _Token:
    """Lives only in a thread's local state: its finalizer runs when the thread ends."""
    __slots__ = ("__weakref__",)


class _State(_thread._local):
    def __init__(self):
        self.traces = []          # active interpreters (graph / batch), innermost last
        self.tapes = []           # GradientTapes currently recording
        self.device = None        # device scope (None = default CPU:0)
        self.scope = None         # the scope's device as written, CPU:0 included (tnp.copy)
        # 'legacy' (NumPy 2), 'all', 'safe': process-wide in TensorFlow, so a thread starts
        # with the switches set when it first touches ndflow
        self.promotion = GLOBAL_MODE["promotion"]
        self.prefer_float32 = GLOBAL_MODE["prefer_float32"]
        self.check_numerics = False   # nf.debugging.enable_check_numerics (per thread, as TF)
        self.fast = True
        self.eager = True         # see refresh
        self.taping = False
        self.taping_np = False
        self.lane = None          # the tapes when taping_np (one read for the NumPy layer)
        self.switched = False     # a door route is switched off (settings.routes_off)
        self.compose = False      # composites run their composition even eagerly (tests)
        self.level = 0            # next interpreter level
        self.views = {}           # while tracing: id(base) -> views to re-derive on a write
        self.slot = slot = _Slot()
        self._token = tok = _Token()
        weakref.finalize(tok, _release, slot)
        self.refresh()

    def push_tape(self, tape):
        """tapes.append(tape) and refresh(), where the thread's state was fast (nothing else
        active: the tape makes it the recording lane, `taping_np`) without re-reading it all;
        refresh() otherwise."""
        # (the thread's own attribute dict, read once: each attribute of a thread-local
        # object looks the thread's dict up again; this runs on every tape's enter)
        d = self.__dict__
        tapes = d["tapes"]
        if d["fast"] and not tapes and not d["switched"]:
            tapes.append(tape)
            d["fast"] = False
            d["taping"] = True
            d["taping_np"] = True
            d["lane"] = tapes
            slot = d["slot"]
            if not slot.slow:
                # (_set_slow, inlined)
                global _slow_count
                with _LOCK:
                    if not slot.slow:
                        slot.slow = True
                        _slow_count += 1
                        GLOBAL.fast = False
        else:
            tapes.append(tape)
            self.refresh()

    def pop_tape(self, tape):
        """Remove `tape` (the innermost, or anywhere) and refresh(); where it is the only thing
        active (`taping_np` with one tape) the state is fast again, without re-reading it."""
        d = self.__dict__                 # (as in push_tape)
        tapes = d["tapes"]
        if len(tapes) == 1 and tapes[0] is tape and d["taping_np"]:
            tapes.pop()
            d["fast"] = True
            d["taping"] = False
            d["taping_np"] = False
            d["lane"] = None
            slot = d["slot"]
            if slot.slow:
                # (_set_slow, inlined)
                global _slow_count
                with _LOCK:
                    if slot.slow:
                        slot.slow = False
                        _slow_count -= 1
                        GLOBAL.fast = _slow_count == 0
            return True
        if tapes and tapes[-1] is tape:
            tapes.pop()
        elif tape in tapes:
            tapes.remove(tape)
        else:
            return False
        self.refresh()
        return True

    def refresh(self):
        # (each attribute of a thread-local object read once: a read costs a lookup of the
        # thread's dictionary; this runs on every tape's enter and exit)
        traces, device, views = self.traces, self.device, self.views
        plain = not traces and device is None and not self.check_numerics
        numpy_mode = (self.promotion == "legacy" and not self.prefer_float32
                      and not self.compose)
        tapes = bool(self.tapes)
        # the door's routes switched off for an ablation run (settings.routes_off): without
        # 'plain' the thread is never fast, without 'lane' tapes record through the general
        # route (read here, at a mode change, so that the door's test stays one read)
        off = settings.routes_off
        plain_on, lane_on = "plain" not in off, "lane" not in off
        self.switched = not (plain_on and lane_on)
        fast = plain and numpy_mode and not tapes and plain_on
        self.fast = fast
        # nothing interprets: eager on the default device, where tapes may record (whatever
        # the promotion switches; `bind`'s lane); eager under tapes only; and that, with
        # NumPy's own promotion (the lane of the eager door, core/dispatch.py: operands
        # NumPy's loop takes as they are need no conversion by ndflow)
        self.eager = plain and lane_on and (tapes or plain_on)
        self.taping = lane = tapes and plain
        lane = lane and numpy_mode and lane_on
        # (pop_tape's shortcut back to fast: only where nothing is switched off)
        self.taping_np = lane and plain_on
        self.lane = self.tapes if lane else None
        if not traces and views:
            self.views = {}
        slot = self.slot
        if slot.slow == fast:             # this thread changes between fast and slow
            _set_slow(slot, not fast)


class _Global:
    """`GLOBAL.fast`: no thread has a trace, tape, scope or promotion switch active (a hint,
    see the module docstring). A plain attribute is cheaper than a thread-local one, so the
    hottest paths test it first; when it is False they take the general path, which consults
    the calling thread's own STATE."""
    __slots__ = ("fast",)


GLOBAL = _Global()
GLOBAL.fast = True
_LOCK = _thread.allocate_lock()
_slow_count = 0


def _set_slow(slot, slow):
    global _slow_count
    with _LOCK:
        if slot.slow != slow:
            slot.slow = slow
            _slow_count += 1 if slow else -1
            GLOBAL.fast = _slow_count == 0


def _release(slot):
    # a thread ended: its tapes and traces are gone with it
    _set_slow(slot, False)


GLOBAL_MODE = {"promotion": "legacy", "prefer_float32": False}
STATE = _State()
# the door's routes switched on or off: this thread's state is read again
ON_CHANGE.setdefault("routes_off", []).append(lambda: STATE.refresh())


def sync_mode():
    st = STATE
    st.promotion = GLOBAL_MODE["promotion"]
    st.prefer_float32 = GLOBAL_MODE["prefer_float32"]
    st.refresh()
