"""BrokerStats: per-topic and broker-wide put/get counts, bytes and rates (BrokerStatsManager,
StatsItemSet and StatsItem, the part we keep).

Per key, cumulative counters plus three small rings of snapshots, as Java's StatsItem keeps
them: csListMinute (every 10 s, 7 kept), csListHour (every 10 min, 7 kept) and csListDay
(every hour, 25 kept). Memory per key is therefore constant, whatever the uptime, and a deleted
topic's entry is dropped (BrokerStatsManager.onTopicDeleted). Rates compare the live counter
with the oldest snapshot inside the window asked for.

Every key of a set is sampled at the same instants, so the set keeps the snapshot times once and
each key only its counts, in one flat ``array`` -- under 1 KB per topic rather than a deque of
tuples per ring. A key created later holds zeros for the earlier instants, which is true: it had
counted nothing then. Pure, with an injected clock: the broker calls ``sample()`` every 10 s.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

SAMPLE_SECONDS: Final = 10
PUT: Final = "BROKER_PUT_NUMS"  # keys of the broker-wide set, Java's stats names
GET: Final = "BROKER_GET_NUMS"


@dataclass(frozen=True, slots=True)
class Window:
    """One ring of snapshots: one every ``every`` seconds, the last ``keep`` kept."""

    every: float
    keep: int


MINUTE: Final = Window(SAMPLE_SECONDS, 7)
HOUR: Final = Window(600, 7)
DAY: Final = Window(3600, 25)
TOPIC_WINDOWS: Final = (MINUTE, HOUR, DAY)
# putTps reports 10 min at a 10 s grain (StoreStatsService): two keys, so a longer minute ring
BROKER_WINDOWS: Final = (Window(SAMPLE_SECONDS, 61), HOUR, DAY)


class StatsItem:
    """One key's cumulative counts and, per snapshot slot, the (nums, size) it had then."""

    __slots__ = ("marks", "nums", "size")

    def __init__(self, slots: int) -> None:
        self.nums = 0
        self.size = 0
        self.marks = array("q", bytes(16 * slots))  # zeros: nothing counted before it existed


class _Ring:
    """A window's snapshot instants, oldest first, and where its slots start in ``marks``."""

    __slots__ = ("base", "head", "times", "window")

    def __init__(self, window: Window, base: int, now: float) -> None:
        self.window = window
        self.base = base
        self.times: deque[float] = deque([now], maxlen=window.keep)  # all counts 0 at boot
        self.head = 1 % window.keep  # slot the next snapshot goes to

    def due(self, now: float) -> bool:
        return now - self.times[-1] >= self.window.every

    def slots(self) -> list[tuple[float, int]]:
        """(instant, index of its nums in ``marks``), oldest first."""
        keep, count = self.window.keep, len(self.times)
        return [
            (t, self.base + 2 * ((self.head - count + i) % keep)) for i, t in enumerate(self.times)
        ]


class StatsItemSet:
    """Keys of one kind, sampled together (StatsItemSet)."""

    def __init__(self, windows: tuple[Window, ...], now: float) -> None:
        self.items: dict[str, StatsItem] = {}
        self.rings: list[_Ring] = []
        base = 0
        for window in windows:
            self.rings.append(_Ring(window, base, now))
            base += 2 * window.keep
        self.slots = base // 2

    def item(self, key: str) -> StatsItem:
        found = self.items.get(key)
        if found is None:
            found = self.items[key] = StatsItem(self.slots)
        return found

    def add(self, key: str, nums: int, size: int) -> None:
        item = self.item(key)
        item.nums += nums
        item.size += size

    def sample(self, now: float) -> None:
        for ring in self.rings:
            if not ring.due(now):
                continue
            at = ring.base + 2 * ring.head
            for item in self.items.values():
                item.marks[at] = item.nums
                item.marks[at + 1] = item.size
            ring.times.append(now)
            ring.head = (ring.head + 1) % ring.window.keep

    def rate(self, key: str, seconds: float, now: float) -> tuple[float, float]:
        """(messages/s, bytes/s) over about the last ``seconds``: from the oldest snapshot in
        that window to now (StatsItem.computeStatsData)."""
        item = self.items.get(key)
        inside = [s for ring in self.rings for s in ring.slots() if now - s[0] <= seconds]
        if item is None or not inside:
            return 0.0, 0.0
        at, index = min(inside)
        if now <= at:
            return 0.0, 0.0
        span = now - at
        return (item.nums - item.marks[index]) / span, (item.size - item.marks[index + 1]) / span

    def snapshots(self) -> int:
        """Snapshot instants held, the same for every key (bounded by the windows' keeps)."""
        return sum(len(ring.times) for ring in self.rings)


class BrokerStats:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        now = clock()
        self.topics = StatsItemSet(TOPIC_WINDOWS, now)
        self.broker = StatsItemSet(BROKER_WINDOWS, now)
        self.boot_ms = time.time_ns() // 1_000_000

    @property
    def total(self) -> StatsItem:
        """Everything put on this broker (msgPutTotalTodayNow)."""
        return self.broker.item(PUT)

    @property
    def gets(self) -> StatsItem:
        """Everything pulled from this broker (msgGetTotalTodayNow)."""
        return self.broker.item(GET)

    def on_put(self, topic: str, nums: int, size: int) -> None:
        self.topics.add(topic, nums, size)
        self.broker.add(PUT, nums, size)

    def on_get(self, nums: int, size: int) -> None:
        self.broker.add(GET, nums, size)

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic (BrokerStatsManager.onTopicDeleted)."""
        self.topics.items.pop(topic, None)

    def sample(self, now: float | None = None) -> None:
        at = self.clock() if now is None else now
        self.topics.sample(at)
        self.broker.sample(at)

    def stored_samples(self, topic: str) -> int:
        """How many (nums, size) snapshots ``topic``'s entry holds (0 once it is gone)."""
        item = self.topics.items.get(topic)
        return 0 if item is None else len(item.marks) // 2

    def topic_stats(
        self, topic: str, now: float | None = None
    ) -> dict[str, dict[str, int | float]]:
        """BrokerStatsData-like: sums and rates over the last minute, hour and since boot."""
        at = self.clock() if now is None else now
        item = self.topics.items.get(topic)
        nums, size = (item.nums, item.size) if item is not None else (0, 0)
        out: dict[str, dict[str, int | float]] = {}
        for name, seconds in (("statsMinute", 60), ("statsHour", 3600)):
            tps, bps = self.topics.rate(topic, seconds, at)
            out[name] = {"sum": nums, "tps": round(tps, 2), "bytesPerSecond": round(bps, 2)}
        out["statsDay"] = {"sum": nums, "bytes": size}
        return out

    def tps_text(self, key: str, now: float | None = None) -> str:
        """Java's "putTps" / "getTransferedTps" runtime value: rates over 10 s, 1 min, 10 min
        of ``PUT`` or ``GET``."""
        at = self.clock() if now is None else now
        return " ".join(f"{self.broker.rate(key, s, at)[0]:.2f}" for s in (10, 60, 600))
