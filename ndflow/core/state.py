"""Per-thread interpreter state.

`bind` reads `STATE.fast` on every call: it is True only when nothing but plain eager NumPy
execution can happen (no trace, no batching, no tape, no device scope, NumPy promotion), so
the eager path costs one attribute read (checking numerics also takes the general path, which
checks each result). Everything that changes the state recomputes it.
"""
import threading


class _State(threading.local):
    def __init__(self):
        self.traces = []          # active interpreters (graph / batch), innermost last
        self.tapes = []           # GradientTapes currently recording
        self.device = None        # device scope (None = default CPU:0)
        self.scope = None         # the scope's device as written, CPU:0 included (tnp.copy)
        self.promotion = "legacy"  # 'legacy' (NumPy 2), 'all', 'safe'
        self.prefer_float32 = False
        self.check_numerics = False   # nf.debugging.enable_check_numerics (per thread, as TF)
        self.fast = True
        self.level = 0            # next interpreter level

    def refresh(self):
        self.fast = (not self.traces and not self.tapes and self.device is None
                     and self.promotion == "legacy" and not self.prefer_float32
                     and not self.check_numerics)
        # keyed by thread: `self` is one thread-local object, the same id in every thread, so
        # one thread turning fast must not clear another thread's slow mark
        if self.fast:
            _SLOW_THREADS.discard(threading.get_ident())
        else:
            _SLOW_THREADS.add(threading.get_ident())
        GLOBAL.fast = not _SLOW_THREADS


class _Global:
    """`GLOBAL.fast`: no thread has a trace, tape, scope or promotion switch active. A plain
    attribute is cheaper than a thread-local one, so the hottest paths test it first; when it
    is False they take the general path, which consults the calling thread's own STATE."""
    __slots__ = ("fast",)


GLOBAL = _Global()
GLOBAL.fast = True
_SLOW_THREADS = set()
STATE = _State()

# Promotion switches are process-wide in TensorFlow; threads started later inherit them.
GLOBAL_MODE = {"promotion": "legacy", "prefer_float32": False}


def sync_mode():
    st = STATE
    st.promotion = GLOBAL_MODE["promotion"]
    st.prefer_float32 = GLOBAL_MODE["prefer_float32"]
    st.refresh()
