"""Timing helpers: ``timeit`` with an autorange-style loop count and the median of repeats."""

from __future__ import annotations

import statistics
import timeit
from typing import Callable


def autorange(timer: timeit.Timer, min_time: float) -> int:
    """Smallest loop count in 1, 2, 5, 10, 20, 50, ... whose total time is >= ``min_time``.

    Same rule as :meth:`timeit.Timer.autorange`, with a configurable target.
    """
    return _autorange(timer, min_time)[0]


def _autorange(timer, min_time):
    i = 1
    while True:
        for j in (1, 2, 5):
            number = i * j
            t = timer.timeit(number)
            if t >= min_time:
                return number, t
        i *= 10


def measure(fn: Callable[[], object], repeat: int = 7, min_time: float = 0.2) -> float:
    """Median seconds per call of ``fn()`` over ``repeat`` repeats of an autoranged loop."""
    timer = timeit.Timer(fn)
    number, t = _autorange(timer, min_time)
    if number == 1 and min_time > 0 and t > 10 * min_time:
        repeat = min(repeat, 3)   # a call of seconds (an eager peer's 1000 steps): 3 will do
    times = timer.repeat(repeat=repeat, number=number)
    return statistics.median(times) / number


_PROBE = {}


def probe(rounds: int = 7) -> float:
    """Median seconds of a fixed NumPy loop: the contention probe.

    The same work (small-array calls, so interpreter and dispatch time, and a 128 KiB
    multiply-add, so arithmetic and cache) is timed before and after each measurement. On a
    quiet machine it takes the same time every time; when other processes take the CPU or
    the memory bus, it drifts, and the measurement between the two probes is suspect.
    """
    import numpy as np

    if not _PROBE:
        a = np.linspace(0.0, 1.0, 1 << 14)
        _PROBE.update(a=a, b=a[::-1].copy(), c=np.empty_like(a), s=np.ones(4))

    a, b, c, s = _PROBE["a"], _PROBE["b"], _PROBE["c"], _PROBE["s"]

    def loop():
        for _ in range(100):
            np.multiply(a, b, out=c)
            np.add(c, a, out=c)
            s + s
    loop()
    times = []
    for _ in range(rounds):
        t = timeit.default_timer()
        loop()
        times.append(timeit.default_timer() - t)
    return statistics.median(times)
