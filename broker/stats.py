"""BrokerStats: per-topic, per-group and broker-wide put/get counts, bytes and rates
(BrokerStatsManager, StatsItemSet, StatsItem and StoreStatsService, the part we keep).

Per key, cumulative counters (messages, bytes, calls) plus small rings of snapshots, as Java's
StatsItem keeps them: csListMinute (every 10 s, 7 kept), csListHour (every 10 min, 7 kept) and
csListDay (every hour, 25 kept). The broker-wide keys keep one snapshot a second for 10 minutes,
as StoreStatsService does for putTps. Memory per key is therefore constant, whatever the uptime,
and a deleted topic's (or group's) entries are dropped (BrokerStatsManager.onTopicDeleted,
onGroupDeleted).

Every key of a set is sampled at the same instants, so the set keeps the snapshot times once and
each key only its counts, in one flat ``array`` -- under 1 KB per topic rather than a deque of
tuples per ring. A key created later holds zeros for the earlier instants, which is true: it had
counted nothing then. Pure, with injected clocks: the broker calls ``sample()`` every second.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Final

SAMPLE_SECONDS: Final = 1  # StoreStatsService samples once a second
SLACK: Final = SAMPLE_SECONDS / 2  # a ring due at 10 s takes the tick at 9.99 s
SEPARATOR: Final = "@"  # stats keys "topic@group" (BrokerStatsManager.buildStatsKey)
# keys of the broker-wide set: Java's stats names, and StoreStatsService's get counters
PUT: Final = "BROKER_PUT_NUMS"  # messages and bytes stored by sends
GET: Final = "BROKER_GET_NUMS"  # messages handed to pulls (getMessageTransferedMsgCount)
FOUND: Final = "GET_FOUND"  # store reads that found messages (getMessageTimesTotalFound)
MISS: Final = "GET_MISS"  # store reads that found none (getMessageTimesTotalMiss)


@dataclass(frozen=True, slots=True)
class Window:
    """One ring of snapshots: one every ``every`` seconds, the last ``keep`` kept."""

    every: float
    keep: int


MINUTE: Final = Window(10, 7)
HOUR: Final = Window(600, 7)
DAY: Final = Window(3600, 25)
KEYED_WINDOWS: Final = (MINUTE, HOUR, DAY)  # statsMinute, statsHour, statsDay
BROKER_WINDOWS: Final = (Window(SAMPLE_SECONDS, 601),)  # putTps over 10 s, 1 min, 10 min
WIDTH: Final = 3  # counts per snapshot slot: messages (value), bytes, calls (times)


@dataclass(frozen=True, slots=True)
class Delta:
    """What a key counted between a snapshot and now, over ``span`` seconds."""

    nums: int
    size: int
    times: int
    span: float


class StatsItem:
    """One key's cumulative counts and, per snapshot slot, the (nums, size, times) it had."""

    __slots__ = ("marks", "nums", "size", "times")

    def __init__(self, slots: int) -> None:
        self.nums = 0
        self.size = 0
        self.times = 0
        self.marks = array("q", bytes(8 * WIDTH * slots))  # zeros: nothing counted before

    def since(self, at: int, span: float) -> Delta:
        m = self.marks
        return Delta(self.nums - m[at], self.size - m[at + 1], self.times - m[at + 2], span)


class _Ring:
    """A window's snapshot instants, oldest first, and where its slots start in ``marks``."""

    __slots__ = ("base", "head", "times", "window")

    def __init__(self, window: Window, base: int, now: float) -> None:
        self.window = window
        self.base = base
        self.times: deque[float] = deque([now], maxlen=window.keep)  # all counts 0 at boot
        self.head = 1 % window.keep  # slot the next snapshot goes to

    def due(self, now: float) -> bool:
        return now - self.times[-1] >= self.window.every - SLACK

    def index(self, i: int) -> int:
        """Where the ``i``-th snapshot (0 = the oldest held) starts in ``marks``."""
        keep, count = self.window.keep, len(self.times)
        return self.base + WIDTH * ((self.head - count + i) % keep)

    def at_least(self, seconds: float, now: float) -> int:
        """The newest snapshot at least ``seconds`` old, or the oldest held."""
        for i in range(len(self.times) - 1, 0, -1):
            if now - self.times[i] >= seconds:
                return i
        return 0


class StatsItemSet:
    """Keys of one kind, sampled together (StatsItemSet)."""

    def __init__(self, windows: tuple[Window, ...], now: float) -> None:
        self.items: dict[str, StatsItem] = {}
        self.rings: list[_Ring] = []
        base = 0
        for window in windows:
            self.rings.append(_Ring(window, base, now))
            base += WIDTH * window.keep
        self.slots = base // WIDTH

    def add(self, key: str, nums: int, size: int, times: int = 1) -> None:
        item = self.items.get(key)
        if item is None:
            item = self.items[key] = StatsItem(self.slots)
        item.nums += nums
        item.size += size
        item.times += times

    def sample(self, now: float) -> None:
        for ring in self.rings:
            if not ring.due(now):
                continue
            at = ring.base + WIDTH * ring.head
            for item in self.items.values():
                marks = item.marks
                marks[at], marks[at + 1], marks[at + 2] = item.nums, item.size, item.times
            ring.times.append(now)
            ring.head = (ring.head + 1) % ring.window.keep

    def window(self, key: str, ring_no: int, now: float) -> Delta | None:
        """What ``key`` counted from the oldest snapshot of ring ``ring_no`` to now
        (StatsItem.computeStatsData); None for a key never counted (or dropped)."""
        item = self.items.get(key)
        if item is None:
            return None
        ring = self.rings[ring_no]
        return item.since(ring.index(0), now - ring.times[0])

    def rate(self, key: str, seconds: float, now: float) -> float:
        """Messages per second over the last ``seconds``: from the newest snapshot at least
        that old to now (StoreStatsService.getPutTps); since the oldest held when younger."""
        item = self.items.get(key)
        ring = self.rings[0]
        if item is None:
            return 0.0
        i = ring.at_least(seconds, now)
        delta = item.since(ring.index(i), now - ring.times[i])
        return delta.nums / delta.span if delta.span > 0 else 0.0

    def drop(self, keep: Callable[[str], bool]) -> None:
        for key in [k for k in self.items if not keep(k)]:
            del self.items[key]

    def snapshots(self) -> int:
        """Snapshot instants held, the same for every key (bounded by the windows' keeps)."""
        return sum(len(ring.times) for ring in self.rings)


@dataclass(slots=True)
class Mornings:
    """BrokerStats.record: the broker-wide put and get totals at the last two local
    midnights (0 until the broker has seen one), for mqadmin clusterList -m."""

    day: int  # ordinal of the local date last recorded
    put_yesterday: int = 0
    put_today: int = 0
    get_yesterday: int = 0
    get_today: int = 0

    def roll(self, day: int, put_total: int, get_total: int) -> None:
        if day == self.day:
            return
        self.day = day
        self.put_yesterday, self.get_yesterday = self.put_today, self.get_today
        self.put_today, self.get_today = put_total, get_total


@dataclass(frozen=True, slots=True)
class _Kind:
    group: bool  # keyed "topic@group" (gets) rather than by topic (puts)
    size: bool  # bytes rather than messages


STATS_NAMES: Final = {
    "TOPIC_PUT_NUMS": _Kind(group=False, size=False),
    "TOPIC_PUT_SIZE": _Kind(group=False, size=True),
    "GROUP_GET_NUMS": _Kind(group=True, size=False),
    "GROUP_GET_SIZE": _Kind(group=True, size=True),
}


def _stats_item(value: int, delta: Delta) -> dict[str, int | float]:
    """BrokerStatsItem {sum, tps, avgpt}: the value counted, per second, and per call."""
    # compat: Java reads from its oldest to its newest snapshot, so its figures trail by up to
    # one sampling period (10 s, 10 min, 1 h); ours run from the oldest snapshot to now
    tps = value / delta.span if delta.span > 0 else 0.0
    avgpt = value / delta.times if delta.times > 0 else 0.0
    return {"sum": value, "tps": tps, "avgpt": avgpt}


def _local_day(epoch: float) -> int:
    return date.fromtimestamp(epoch).toordinal()


class BrokerStats:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        self.wall = wall
        now = clock()
        self.topics = StatsItemSet(KEYED_WINDOWS, now)  # TOPIC_PUT_NUMS / TOPIC_PUT_SIZE
        self.groups = StatsItemSet(KEYED_WINDOWS, now)  # GROUP_GET_NUMS / GROUP_GET_SIZE
        self.broker = StatsItemSet(BROKER_WINDOWS, now)
        for key in (PUT, GET, FOUND, MISS):
            self.broker.add(key, 0, 0, 0)
        self.boot_ms = int(wall() * 1000)
        self.mornings = Mornings(_local_day(wall()))

    @property
    def total(self) -> StatsItem:
        """Everything put on this broker (msgPutTotalTodayNow, putMessageSizeTotal)."""
        return self.broker.items[PUT]

    @property
    def gets(self) -> StatsItem:
        """Everything pulled from this broker (msgGetTotalTodayNow)."""
        return self.broker.items[GET]

    def on_put(self, topic: str, nums: int, size: int) -> None:
        """A send stored ``nums`` messages of ``size`` bytes (incTopicPutNums/Size, one call)."""
        self.topics.add(topic, nums, size)
        self.broker.add(PUT, nums, size)

    def on_get(self, topic: str, group: str, nums: int, size: int) -> None:
        """A pull answered with messages (PullMessageProcessor: incGroupGetNums/Size,
        incBrokerGetNums)."""
        self.groups.add(f"{topic}{SEPARATOR}{group}", nums, size)
        self.broker.add(GET, nums, size)

    def on_lookup(self, found: bool) -> None:
        """A store read for a pull (DefaultMessageStore.getMessage: found or missed)."""
        self.broker.add(FOUND if found else MISS, 1, 0)

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic, its groups' entries too (BrokerStatsManager.onTopicDeleted)."""
        self.topics.items.pop(topic, None)
        prefix = topic + SEPARATOR
        self.groups.drop(lambda key: not key.startswith(prefix))

    def remove_group(self, group: str) -> None:
        """Forget a deleted group's entries (BrokerStatsManager.onGroupDeleted)."""
        suffix = SEPARATOR + group
        self.groups.drop(lambda key: not key.endswith(suffix))

    def sample(self, now: float | None = None) -> None:
        at = self.clock() if now is None else now
        self.topics.sample(at)
        self.groups.sample(at)
        self.broker.sample(at)
        self.mornings.roll(_local_day(self.wall()), self.total.nums, self.gets.nums)

    def stored_samples(self, topic: str) -> int:
        """How many snapshots ``topic``'s entry holds (0 once it is gone)."""
        item = self.topics.items.get(topic)
        return 0 if item is None else len(item.marks) // WIDTH

    def stats_data(
        self, name: str, key: str, now: float | None = None
    ) -> dict[str, dict[str, int | float]] | None:
        """BrokerStatsData for stats ``name`` and ``key`` (AdminBrokerProcessor.
        ViewBrokerStatsData): per window the sum, per second and per call; None when the
        name is not one we keep or the key never counted."""
        kind = STATS_NAMES.get(name)
        if kind is None:
            return None
        items, use_size = self.groups if kind.group else self.topics, kind.size
        at = self.clock() if now is None else now
        out: dict[str, dict[str, int | float]] = {}
        for ring_no, field_name in enumerate(("statsMinute", "statsHour", "statsDay")):
            delta = items.window(key, ring_no, at)
            if delta is None:
                return None
            out[field_name] = _stats_item(delta.size if use_size else delta.nums, delta)
        return out

    def tps(self, key: str, seconds: float, now: float | None = None) -> float:
        """Broker-wide ``PUT``/``GET``/``FOUND``/``MISS`` per second over ``seconds``."""
        return self.broker.rate(key, seconds, self.clock() if now is None else now)
