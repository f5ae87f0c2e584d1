"""Throttle: warnings a peer can cause, rate-limited and counted.

A warning a request can trigger (a refused value, a skipped retry topic) would otherwise
repeat as fast as a client sends: one line per key per period is logged, with the count of
those left out since the last one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Final

PERIOD_SECONDS: Final = 60.0
MAX_KEYS: Final = 4096  # past this many keys, the table is forgotten (bounded whatever peers do)


class Throttle:
    def __init__(
        self, period: float = PERIOD_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.period = period
        self._clock = clock
        self._last: dict[Hashable, tuple[float, int]] = {}  # key -> (logged at, left out since)

    def allow(self, key: Hashable) -> int | None:
        """None when a line for ``key`` was logged less than a period ago (this one is
        counted); else the number left out since that line, and this one is to be logged."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.period:
            self._last[key] = (last[0], last[1] + 1)
            return None
        if len(self._last) >= MAX_KEYS:
            self._last.clear()
        self._last[key] = (now, 0)
        return 0 if last is None else last[1]
