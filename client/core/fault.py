"""Latency fault tolerance (Java's MQFaultStrategy + LatencyFaultToleranceImpl), pure state.

After each send the broker's latency picks a not-available duration from two parallel
tables; a failed send counts as 30 s of latency. While ``sendLatencyFaultEnable`` is on, queue
selection skips brokers still inside their window, falling back to the least bad one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# MQFaultStrategy.latencyMax / notAvailableDuration (ms)
LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE = (0, 0, 30000, 60000, 120000, 180000, 600000)
FAILED_LATENCY_MS = 30000  # sendDefaultImpl: an exception counts as 30 s (isolation)
# below this latency the not-available duration is 0 (550 ms)
_FREE_BELOW = min(b for b, d in zip(LATENCY_MAX, NOT_AVAILABLE, strict=True) if d)


def not_available_ms(latency_ms: float) -> int:
    for bound, duration in zip(reversed(LATENCY_MAX), reversed(NOT_AVAILABLE), strict=True):
        if latency_ms >= bound:
            return duration
    return 0


@dataclass(slots=True)
class FaultItem:
    latency_ms: float
    start_ms: float  # available again from this time


@dataclass(slots=True)
class LatencyFaults:
    clock: Callable[[], float] = field(default=lambda: time.monotonic() * 1000)
    items: dict[str, FaultItem] = field(default_factory=dict)

    def update(self, broker: str, latency_ms: float, isolation: bool = False) -> None:
        """After every send (updateFaultItem): cheap, as it runs on each one."""
        latency = FAILED_LATENCY_MS if isolation else latency_ms
        start = self.clock()
        if latency >= _FREE_BELOW:
            start += not_available_ms(latency)
        item = self.items.get(broker)
        if item is None:
            self.items[broker] = FaultItem(latency, start)
        else:
            item.latency_ms, item.start_ms = latency, start

    def isolate(self, broker: str, duration_ms: float) -> None:
        """Ours: a broker whose connection dropped is avoided for ``duration_ms`` at once."""
        self.items[broker] = FaultItem(FAILED_LATENCY_MS, self.clock() + duration_ms)

    def available(self, broker: str) -> bool:
        item = self.items.get(broker)
        return item is None or self.clock() >= item.start_ms

    def least_bad(self) -> str | None:
        """pickOneAtLeast: the broker whose window ends first (then the lowest latency)."""
        if not self.items:
            return None
        return min(self.items, key=lambda b: (self.items[b].start_ms, self.items[b].latency_ms))

    def forget(self, broker: str) -> None:
        self.items.pop(broker, None)
