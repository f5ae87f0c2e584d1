"""WarnLimiter: a warning that could repeat, logged at most once per key per interval.

A server that skips a poison pill (a topic it cannot register, a delayed message it cannot
deliver) meets the same one again on every round; logging each time would write ten lines a
second for ever. The limiter counts every occurrence and says when a line is due: the first
time a key is seen, then at most once per ``interval`` seconds, the line carrying how many
occurrences it held back since the last one (``suppressed=``). Keys are bounded: past
``max_keys`` the least recently logged is forgotten (its next occurrence logs at once).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Final

DEFAULT_MAX_KEYS: Final = 1024


class WarnLimiter:
    """``due = limiter.hit(key)``: None while the key's line is held back, else how many
    occurrences were held back before this one (0 the first time)."""

    __slots__ = ("_clock", "_keys", "interval", "max_keys", "total")

    def __init__(
        self,
        interval: float,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.max_keys = max_keys
        self.total = 0  # occurrences of every key, logged or not
        self._clock = clock
        self._keys: dict[Hashable, tuple[float, int]] = {}  # key -> (last logged, held back)

    def hit(self, key: Hashable) -> int | None:
        self.total += 1
        now = self._clock()
        seen = self._keys.get(key)
        if seen is not None and now - seen[0] < self.interval:
            self._keys[key] = (seen[0], seen[1] + 1)
            return None
        self._keys.pop(key, None)  # re-inserted last: the dict's order is by last logged
        if len(self._keys) >= self.max_keys:
            del self._keys[next(iter(self._keys))]
        self._keys[key] = (now, 0)
        return 0 if seen is None else seen[1]
