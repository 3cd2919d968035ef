"""Progress bars for long loops: tqdm when it is installed, a plain one-line counter otherwise.

    from ndflow.utils.progress import progress
    for batch in progress(batches, desc="epoch 1", unit="batch"):
        ...

Shown only where a person watches: on a terminal (the stream is a tty), unless
`NDFLOW_PROGRESS=1` forces them on or `NDFLOW_PROGRESS=0` (or `disable=True`) turns them off.
Bars go to stderr, so the program's own output on stdout stays clean.
"""
import os
import sys
import time


def enabled(file=None, disable=None):
    """Whether a bar would be shown on `file` (default stderr)."""
    if disable is not None:
        return not disable
    env = os.environ.get("NDFLOW_PROGRESS", "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    f = file or sys.stderr
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable=None, *, total=None, desc=None, unit="it", disable=None, file=None,
             leave=True):
    """A progress bar over `iterable` (or one updated by hand with `update(n)`), with tqdm's
    interface: iterate it, `update`, `set_description`, `set_postfix`, `write`, `close`, or use
    it as a context manager. A pass-through that shows nothing when `enabled` is False."""
    if total is None and iterable is not None:
        try:
            total = len(iterable)
        except TypeError:
            total = None
    if not enabled(file, disable):
        return _Silent(iterable, total)
    try:
        from tqdm import tqdm
    except ImportError:
        return _Plain(iterable, total, desc, unit, file or sys.stderr, leave)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=file or sys.stderr,
                leave=leave, dynamic_ncols=True)


class _Silent:
    """Shows nothing; counts, so `n` works as in tqdm."""

    def __init__(self, iterable, total):
        self.iterable, self.total, self.n = iterable, total, 0

    def __iter__(self):
        for x in self.iterable:
            yield x
            self.n += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1):
        self.n += n

    def set_description(self, desc=None, refresh=True):
        pass

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        pass

    def set_postfix_str(self, s="", refresh=True):
        pass

    def write(self, s, file=None, end="\n"):
        (file or sys.stdout).write(s + end)

    def close(self):
        pass


class _Plain(_Silent):
    """One line, rewritten in place at most a few times a second: `desc: n/total unit [t s] k=v`."""

    def __init__(self, iterable, total, desc, unit, file, leave):
        super().__init__(iterable, total)
        self.desc, self.unit, self.file, self.leave = desc, unit, file, leave
        self.postfix = ""
        self.start = self._last = time.monotonic()
        self._width = 0
        self._closed = False
        self._show(force=True)

    def __iter__(self):
        for x in self.iterable:
            yield x
            self.update()
        self.close()

    def update(self, n=1):
        self.n += n
        self._show()

    def set_description(self, desc=None, refresh=True):
        self.desc = desc
        self._show(force=refresh)

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        items = dict(ordered_dict or {}, **kwargs)
        self.postfix = ", ".join("%s=%s" % (k, _short(v)) for k, v in items.items())
        self._show(force=refresh)

    def set_postfix_str(self, s="", refresh=True):
        self.postfix = s
        self._show(force=refresh)

    def write(self, s, file=None, end="\n"):
        self._clear()
        (file or sys.stdout).write(s + end)
        self._show(force=True)

    def _line(self):
        count = "%d/%d" % (self.n, self.total) if self.total is not None else "%d" % self.n
        text = "%s%s %s [%.0fs]" % (self.desc + ": " if self.desc else "", count, self.unit,
                                    time.monotonic() - self.start)
        return text + (" " + self.postfix if self.postfix else "")

    def _clear(self):
        self.file.write("\r" + " " * self._width + "\r")

    def _show(self, force=False):
        now = time.monotonic()
        if self._closed or (not force and now - self._last < 0.2):
            return
        self._last = now
        line = self._line()
        self.file.write("\r" + line + " " * max(0, self._width - len(line)))
        self._width = len(line)
        self.file.flush()

    def close(self):
        if self._closed:
            return
        self._show(force=True)
        self._closed = True
        if self.leave:
            self.file.write("\n")
        else:
            self._clear()
        self.file.flush()


def _short(v):
    return "%.4g" % v if isinstance(v, float) else str(v)
