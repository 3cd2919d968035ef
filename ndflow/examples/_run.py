"""What the example programs share: quick mode, the directory their files go to, the command
line, and timings that measure a compiled function's steady state."""
import argparse
import os
import sys
import tempfile
import time
import timeit

from ndflow.core.settings import settings
from ndflow.graph.kernels import wait_for_compiles


def quick():
    """Whether to run small: ``NDFLOW_QUICK=1`` (or ``--quick`` on the command line)."""
    return os.environ.get("NDFLOW_QUICK", "") == "1"


class Output:
    """The directory an example writes its files to: the one named (created when the first
    file is written), or else a new temporary directory, so that nothing lands in the current
    directory (a checkout stays clean). `path(name)` gives a file's path and remembers it;
    `report()` prints where the files went."""

    def __init__(self, example, directory=None):
        self.example = example
        self._dir = os.path.abspath(directory) if directory else None
        self.files = []

    @property
    def dir(self):
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="ndflow-%s-" % self.example)
        os.makedirs(self._dir, exist_ok=True)
        return self._dir

    def path(self, name):
        p = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        self.files.append(p)
        return p

    def report(self):
        """Print where the files went (those that exist: a picture is not drawn without
        matplotlib)."""
        files = sorted({os.path.relpath(f, self._dir) for f in self.files if os.path.exists(f)})
        if files:
            print("files written under %s: %s" % (self._dir, ", ".join(files)))


def steady_time(f, number, repeat=5, warm_up=2.0):
    """Seconds per call of `f` in its steady state, after a warm-up: the first call traces and
    compiles an nf.function; a long-running program's fused regions get their compiled
    kernels once those pay for themselves (after a second or so of the region's calls), and a
    large region its multi-threaded kernel after some more calls. The warm-up asks for them at
    once instead (`settings.numba` 'sync': compiled in this thread, or loaded from the disk
    cache): it calls `f` 4 times, then up to 34 more times (while it has taken less than
    `warm_up` seconds), waiting after each for any compile still running. Then the best of `repeat`
    runs of `number` calls: the run least disturbed by other work on the machine."""
    start = time.perf_counter()
    with settings.override(numba="sync"):
        for calls in (4, 34):
            for _ in range(calls):
                f()
                if calls > 4 and time.perf_counter() - start > warm_up:
                    break
            wait_for_compiles()
    return min(timeit.repeat(f, number=number, repeat=repeat)) / number


def busy_note():
    """'' on a quiet machine; else a note that timings are contended: the load average of the
    last minute exceeds the number of CPUs, so the timed calls shared them with other work
    (BLAS's threads then wait for each other, and a call can take 100 times its quiet time)."""
    try:
        load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    except (AttributeError, OSError):          # no load average on this system
        return ""
    if load <= cpus:
        return ""
    return ("the machine is busy (load average %.1f on %d CPUs): these timings are contended, "
            "slower and noisier than on a quiet machine" % (load, cpus))


def run_as_script(main, description, argv=None):
    """Run an example's `main(out_dir)` from the command line: ``--out DIR`` names where its
    files go, ``--quick`` runs it small."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", metavar="DIR", help="write the program's files (figures, logs, "
                   "checkpoints) here; default: a new temporary directory")
    p.add_argument("--quick", action="store_true",
                   help="smaller sizes and fewer repeats (as NDFLOW_QUICK=1)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.quick:
        os.environ["NDFLOW_QUICK"] = "1"
    return main(out_dir=args.out)
