"""BrokerStats: per-topic put counts, bytes and rates (BrokerStatsManager, the part we keep).

Counters are cumulative; a sampler every 10 s keeps the last hour of snapshots, from which
rates over the last minute / 10 minutes / hour are computed. Pure: the broker calls
``sample(now)`` from its own periodic task.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Final

SAMPLE_SECONDS: Final = 10
_KEEP: Final = 3600 // SAMPLE_SECONDS + 1


@dataclass(slots=True)
class Counter:
    nums: int = 0
    size: int = 0
    samples: deque[tuple[float, int, int]] = field(default_factory=lambda: deque(maxlen=_KEEP))

    def rate(self, seconds: float, now: float) -> tuple[float, float]:
        """(messages/s, bytes/s) over roughly the last ``seconds``."""
        base = next((s for s in self.samples if now - s[0] <= seconds), None)
        if base is None or now <= base[0]:
            return 0.0, 0.0
        span = now - base[0]
        return (self.nums - base[1]) / span, (self.size - base[2]) / span


class BrokerStats:
    def __init__(self) -> None:
        self.topics: dict[str, Counter] = {}
        self.total = Counter()
        self.gets = Counter()
        self.boot_ms = time.time_ns() // 1_000_000

    def on_put(self, topic: str, nums: int, size: int) -> None:
        counter = self.topics.get(topic)
        if counter is None:
            counter = self.topics[topic] = Counter()
            counter.samples.append((time.monotonic(), 0, 0))
        counter.nums += nums
        counter.size += size
        self.total.nums += nums
        self.total.size += size

    def on_get(self, nums: int, size: int) -> None:
        self.gets.nums += nums
        self.gets.size += size

    def sample(self, now: float | None = None) -> None:
        at = time.monotonic() if now is None else now
        for counter in (self.total, self.gets, *self.topics.values()):
            counter.samples.append((at, counter.nums, counter.size))

    def topic_stats(self, topic: str, now: float | None = None) -> dict[str, object]:
        """BrokerStatsData-like: sums and rates over the last minute, hour and since boot."""
        at = time.monotonic() if now is None else now
        counter = self.topics.get(topic, Counter())
        out: dict[str, object] = {}
        for name, seconds in (("statsMinute", 60), ("statsHour", 3600)):
            tps, bps = counter.rate(seconds, at)
            out[name] = {"sum": counter.nums, "tps": round(tps, 2), "bytesPerSecond": round(bps, 2)}
        out["statsDay"] = {"sum": counter.nums, "bytes": counter.size}
        return out

    def tps_text(self, counter: Counter, now: float | None = None) -> str:
        """Java's "putTps" runtime value: rates over 10 s, 1 min, 10 min."""
        at = time.monotonic() if now is None else now
        return " ".join(f"{counter.rate(s, at)[0]:.2f}" for s in (10, 60, 600))
