"""Time budgets: ``"15m"``-style durations, the clock a budgeted run reads, its error, and the
largest size whose cost fits (`largest`).

A leaf: the tuning search (`embedkit.tuning`) and the command line read budgets here.

Examples
--------
>>> parse_budget("1h30m"), parse_budget(45)
(5400.0, 45.0)
>>> clock = Clock(60.0)
>>> 59 < clock.left() <= 60
True
>>> largest(1, 100, lambda rows: rows * rows <= 50)  # the most rows whose cost fits
7
"""

from __future__ import annotations

import math
import re
import time
from numbers import Real

__all__ = ["DECIDING", "BudgetError", "Clock", "format_bytes", "format_seconds", "largest",
           "parse_budget", "parse_memory"]

#: seconds a search's decision may take between sizing a step to the time left and checking that
#: it fits (the clock runs meanwhile): a size that fills the time left leaves them
DECIDING = 1.0

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?:in)?)?(?:(\d+(?:\.\d+)?)s)?")


class BudgetError(RuntimeError):
    """The budget cannot pay for anything: not even the first model could be scored."""


def parse_budget(budget: str | float) -> float:
    """Seconds from a budget: a number of seconds, or a duration such as ``"90s"``, ``"15m"``,
    ``"1h"`` or ``"1h30m"``.

    Examples
    --------
    >>> parse_budget("15m"), parse_budget("1h30m"), parse_budget("90s"), parse_budget(45)
    (900.0, 5400.0, 90.0, 45.0)
    """
    how = ("write a number of seconds or a duration such as 90s, 15m, 1h or 1h30m "
           "(units: h, m, s)")
    if isinstance(budget, bool):
        raise TypeError(f"budget={budget!r}; {how}.")
    if isinstance(budget, Real):
        seconds = float(budget)
    elif isinstance(budget, str):
        text = budget.strip().lower().replace(" ", "")
        match = _DURATION.fullmatch(text)
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif text and match and any(match.groups()):
            h, m, s = (float(g) if g else 0.0 for g in match.groups())
            seconds = 3600 * h + 60 * m + s
        else:
            raise ValueError(f"budget={budget!r} is not a duration; {how}.")
    else:
        raise TypeError(f"budget={budget!r} ({type(budget).__name__}); {how}.")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"budget={budget!r}; the budget must be a positive time: {how}.")
    return seconds


_SIZE = re.compile(r"(\d+(?:\.\d+)?)([kmgt]?)(?:i?b)?")


def parse_memory(memory: str | float) -> float:
    """Bytes from a memory size: a number of bytes, or a size such as ``"512MB"``, ``"4GB"``,
    ``"3.5G"`` or ``"8GiB"`` (powers of 1,024, as free and top count).

    Examples
    --------
    >>> parse_memory("4GB") == 4 * 2**30, parse_memory("512m") == 2**29, parse_memory(2e9)
    (True, True, 2000000000.0)
    """
    how = "write a number of bytes or a size such as 512MB, 4GB or 3.5G (units: K, M, G, T)"
    if isinstance(memory, bool) or not isinstance(memory, Real | str):
        raise TypeError(f"memory={memory!r}; {how}.")
    if isinstance(memory, Real):
        size = float(memory)
    else:
        match = _SIZE.fullmatch(memory.strip().lower().replace(" ", ""))
        if match is None:
            raise ValueError(f"memory={memory!r} is not a size; {how}.")
        size = float(match.group(1)) * 1024 ** "_kmgt".index(match.group(2) or "_")
    if not math.isfinite(size) or size <= 0:
        raise ValueError(f"memory={memory!r}; the memory must be a positive size: {how}.")
    return size


def format_bytes(size: float) -> str:
    """``"850 MB"``, ``"3.2 GB"``: a size as a person reads it (powers of 1,024)."""
    return f"{size / 2**30:.1f} GB" if size >= 2**30 else f"{size / 2**20:.0f} MB"


def format_seconds(seconds: float) -> str:
    """``"45 s"``, ``"4.5 min"`` or ``"1.2 h"``: a duration as a person reads it.

    Examples
    --------
    >>> format_seconds(45), format_seconds(270), format_seconds(7200)
    ('45 s', '4.5 min', '2.0 h')
    """
    if seconds < 100:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class Clock:
    """Wall-clock time of a budgeted run, from its start (`time.monotonic`)."""

    def __init__(self, seconds: float):
        self.budget = float(seconds)
        self.start = time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.monotonic() - self.start

    def left(self) -> float:
        """Seconds of the budget not spent yet (negative once it is overrun)."""
        return self.budget - self.elapsed()

    def stamp(self) -> str:
        """``[  123 s,  477 s left]``: the prefix of a progress line."""
        return f"[{self.elapsed():5.0f} s, {max(self.left(), 0):5.0f} s left]"


def largest(low: int, high: int, fits, within: int = 1) -> int:
    """The largest size in ``[low, high)`` for which ``fits`` holds, to ``within``: ``fits(low)``
    holds, ``fits(high)`` does not, and cost grows with the size."""
    while high - low > within:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low
