"""A helper process that compiles tier-1 kernels into the verified disk cache, so that the
process that runs them only loads them.

Why a process: a compile in the caller's own background thread holds its interpreter lock
for most of the compile's Python work (numba's typing and lowering, the replica checks'
probe kernels), and the caller's calls wait for the lock at every return from NumPy. Here
that work runs in another interpreter, at the lowest scheduling priority (`os.nice(19)`), so
on a machine with a spare core it runs there, and on a busy one it runs in the time the
caller leaves idle. The caller still imports numba and loads each kernel from the cache (in
its background thread, `numba_compile.build`); what moves out is every compile.

The protocol is one JSON object a line on the worker's stdin and stdout, nothing that runs
code when read:

    {"verify": [[name, dtype], ...]}      -> {"verified": [[name, dtype, why, target], ...]}
    {"src", "name", "args", "cache"}      -> {"made": true} or {"error": text}

`args` describes the arguments the kernel is compiled for (`encode`). The worker exits when
its stdin closes, so it never outlives the process that started it.
"""
import json
import os
import subprocess
import sys
import threading

import numpy as np

_proc = None           # the worker (subprocess.Popen), started by the first `ask`
_broken = None         # why the worker cannot be used in this process (then: compile here)
_lock = threading.Lock()


def encode(args):
    """JSON for a kernel's example arguments: arrays by dtype, shape and writeability,
    NumPy scalars by dtype, Python numbers as they are."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(["a", a.dtype.str, list(a.shape), bool(a.flags.writeable)])
        elif isinstance(a, np.generic):
            out.append(["s", a.dtype.str])
        elif isinstance(a, (bool, int, float)):
            out.append(["v", a])
        else:
            raise TypeError("no encoding for a kernel argument of type %s" % type(a).__name__)
    return out


def decode(spec):
    """The arguments `encode` described (zeros)."""
    args = []
    for kind, *rest in spec:
        if kind == "a":
            a = np.zeros(tuple(rest[1]), np.dtype(rest[0]))
            a.flags.writeable = rest[2]
            args.append(a)
        elif kind == "s":
            args.append(np.dtype(rest[0]).type(0))
        elif kind == "v":
            args.append(rest[0])
        else:
            raise ValueError("unknown argument kind %r" % kind)
    return args


def usable():
    """None when this process may hand compiles to a worker, else why not."""
    if _broken is not None:
        return _broken
    if getattr(sys, "frozen", False) or not sys.executable:
        return "no Python executable to start a compile worker with"
    return None


def _start():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    boot = ("import sys; sys.path.insert(0, %r); "
            "from ndflow.graph.kernels import compile_worker, numba_compile; "
            "compile_worker.main(numba_compile.serve)" % root)
    return subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)


def ask(job):
    """The worker's reply to `job` (a dict), or None once the worker cannot be used (`usable`
    says why). Blocks the calling thread on a pipe, without the interpreter lock."""
    global _proc, _broken
    with _lock:
        if usable() is not None:
            return None
        try:
            if _proc is None:
                _proc = _start()
            _proc.stdin.write((json.dumps(job) + "\n").encode())
            _proc.stdin.flush()
            line = _proc.stdout.readline()
        except OSError as e:
            line, why = b"", "the compile worker could not be used: %s" % e
        else:
            why = "the compile worker exited (code %s)" % _proc.poll()
        try:
            reply = json.loads(line)
        except ValueError:          # nothing: the worker is gone
            reply = None
        if isinstance(reply, dict):
            return reply
        _broken = why if not line else "the compile worker wrote %r" % line[:200]
        return None


def _after_fork_in_child():
    """A forked child shares its parent's pipes to the worker: it starts its own if asked."""
    global _proc, _lock
    _proc, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ------------------------------------------------------------------ the worker's side
def main(serve):
    """The worker's loop (`_start` runs it in a fresh interpreter): each job's reply is
    `serve(job)` (`numba_compile.serve`), or the error it raised."""
    if hasattr(os, "nice"):
        try:
            os.nice(19)
        except OSError:
            pass
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)            # whatever numba prints goes where stderr goes, not in the replies
    for line in sys.stdin:
        try:
            reply = serve(json.loads(line))
        except Exception as e:           # the caller compiles this kernel itself
            reply = {"error": repr(e)}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
