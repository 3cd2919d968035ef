"""Timing helpers: ``timeit`` with an autorange-style loop count and the median of repeats."""

from __future__ import annotations

import statistics
import timeit
from typing import Callable


def autorange(timer: timeit.Timer, min_time: float) -> int:
    """Smallest loop count in 1, 2, 5, 10, 20, 50, ... whose total time is >= ``min_time``.

    Same rule as :meth:`timeit.Timer.autorange`, with a configurable target.
    """
    i = 1
    while True:
        for j in (1, 2, 5):
            number = i * j
            if timer.timeit(number) >= min_time:
                return number
        i *= 10


def measure(fn: Callable[[], object], repeat: int = 7, min_time: float = 0.2) -> float:
    """Median seconds per call of ``fn()`` over ``repeat`` repeats of an autoranged loop."""
    timer = timeit.Timer(fn)
    number = autorange(timer, min_time)
    times = timer.repeat(repeat=repeat, number=number)
    return statistics.median(times) / number
