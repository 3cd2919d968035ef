"""What every file ndflow writes or reads for checkpoints and saved functions shares.

* `atomic_write(path)`: a write that either happens whole or not at all (a temporary file in
  the same directory, flushed and fsynced, then `os.replace`d over the target, and the
  directory fsynced), so a crash at any moment leaves the previous file intact.
* `directory_lock(directory)`: the lock that saves into one directory take, so that two
  threads or processes saving there run one after the other instead of interleaving (each
  would otherwise delete the other's files). A lock file in the directory, locked with the
  operating system's advisory lock (`flock`; `msvcrt.locking` on Windows) and removed by its
  holder when it is done; the operating system releases it if the holder dies. Re-entrant
  within a thread. On a file system without advisory locks, a warning, and only the threads
  of one process are serialized.
* `load_json(raw, where, max_depth)`: JSON from a file a user loads, with the file's damage or
  hostility turned into a `ValueError` naming `where`: not UTF-8, not JSON, `NaN`/`Infinity`,
  a key repeated in an object, or nesting deeper than `max_depth` (checked before parsing, so
  a deeply nested file is refused quickly rather than exhausting Python's stack).
"""
import contextlib
import errno
import json
import os
import re
import threading
import warnings

import numpy as np

LOCK_NAME = ".ndflow-save.lock"


# ------------------------------------------------------------------ atomic writes
@contextlib.contextmanager
def atomic_write(path, mode="wb"):
    """Open a temporary file beside `path`; on a clean exit flush, fsync and rename it over
    `path` (then fsync the directory, so the rename itself survives a power cut). On an error
    the temporary file is removed and `path` is untouched."""
    import tempfile         # here, not at import time: `import ndflow` stays fast
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    fsync_directory(d)


def fsync_directory(d):
    """Make a rename or removal in directory `d` durable (where directories can be opened)."""
    with contextlib.suppress(OSError):
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


_TEMP = re.compile(r"\.(.+)\.[A-Za-z0-9_]{8}\.tmp")


def remove_stale_temps(d, prefixes):
    """Remove the temporary files `atomic_write` left in `d` for targets whose names start
    with one of `prefixes`, when a process was killed mid-write. Only under `d`'s lock (a
    writer holding it may be writing one)."""
    for name in os.listdir(d):
        m = _TEMP.fullmatch(name)
        if m and m.group(1).startswith(tuple(prefixes)):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(d, name))


# ------------------------------------------------------------------ the directory lock
try:
    import fcntl as _fcntl
except ImportError:             # Windows
    _fcntl = None

_NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS}
_GUARD = threading.Lock()
_THREAD_LOCKS = {}              # real path of a directory -> RLock (threads of this process)
_HELD = {}                      # real path -> (file descriptor, depth) while this process holds it


def _lock_file(d):
    """Open and lock `d`'s lock file; returns its descriptor. The file is the one at the path
    when the lock is granted (a previous holder removes it when done, so a waiter that opened
    the old file tries again)."""
    path = os.path.join(d, LOCK_NAME)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if _fcntl is not None:
                try:
                    _fcntl.flock(fd, _fcntl.LOCK_EX)
                except OSError as e:
                    if e.errno not in _NO_LOCKS:
                        raise
                    # a file system without advisory locks (some network mounts): saves of
                    # this process still run one at a time; other processes are not excluded
                    warnings.warn(f"{d!r} cannot be locked ({e.strerror}): saves from other "
                                  f"processes into it are not serialized", RuntimeWarning)
                    return fd
            else:
                import msvcrt
                while True:
                    try:
                        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                        break
                    except OSError:     # LK_LOCK gives up after about 10 s: keep waiting
                        continue
                return fd               # (Windows cannot remove an open file: it stays)
            try:
                same = os.path.samestat(os.stat(path), os.fstat(fd))
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)


def _unlock_file(d, fd):
    if _fcntl is not None:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(d, LOCK_NAME))   # while holding it: see `_lock_file`
    os.close(fd)


@contextlib.contextmanager
def directory_lock(directory):
    """Hold `directory`'s save lock for the duration of the block (see the module docstring).
    The directory must exist."""
    d = os.path.realpath(os.fspath(directory))
    with _GUARD:
        tl = _THREAD_LOCKS.setdefault(d, threading.RLock())
    with tl:
        fd, depth = _HELD.get(d, (None, 0))
        if fd is None:
            fd = _lock_file(d)
        _HELD[d] = (fd, depth + 1)
        try:
            yield
        finally:
            if depth:
                _HELD[d] = (fd, depth)
            else:
                del _HELD[d]
                _unlock_file(d, fd)


# ------------------------------------------------------------------ JSON from files
# a JSON string (escapes included), written so that a long string is one repeat of a
# character class rather than one repeat of a group per character
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_OPEN = np.zeros(256, np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1
_CHUNK = 1 << 16


def json_depth(raw):
    """The deepest nesting of arrays and objects in the JSON text `raw` (bytes), brackets
    inside strings left out; in chunks, so memory stays small whatever the size."""
    bare = _STRING.sub(b"", raw)
    depth = worst = 0
    for i in range(0, len(bare), _CHUNK):
        c = np.frombuffer(bare, np.uint8, min(_CHUNK, len(bare) - i), i)
        run = np.cumsum(_OPEN[c], dtype=np.int64)
        if run.size:
            worst = max(worst, depth + int(run.max()))
            depth += int(run[-1])
    return worst


class _Duplicate(Exception):
    pass


def _no_duplicates(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _Duplicate(k)
            seen.add(k)
    return out


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def load_json(raw, where, max_depth):
    """The JSON value in `raw` (bytes) of a file a user loads; a ValueError naming `where` for
    anything that is not plain, well-formed JSON nested at most `max_depth` deep."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not UTF-8 text ({e})") from None
    depth = json_depth(raw)
    if depth > max_depth:
        raise ValueError(f"{where}: JSON nested {depth} levels deep, deeper than the "
                         f"{max_depth} this file can have")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except _Duplicate as e:
        raise ValueError(f"{where}: the key {e.args[0]!r:.80} appears twice in one "
                         f"object") from None
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:      # json.JSONDecodeError, NaN/Infinity, integers too long
        raise ValueError(f"{where}: not valid JSON ({e})") from None


def json_type(v):
    """The JSON name of the type of a parsed value, for error messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(v), type(v).__name__)
