"""BrokerStats (BrokerStatsManager / StatsItem): bounded snapshots per topic, right rates, and
no entry left behind by a deleted topic."""

from __future__ import annotations

import json
import sys

from broker.stats import GET, PUT, BrokerStats
from remoting.client import RemotingClient
from remoting.protocol.codes import RequestCode as C
from remoting.protocol.command import RemotingCommand
from remoting.protocol.route import decode_kv_table
from tests.broker.wire import create_topic, send_v2
from tests.cluster import Cluster

DAY = 86_400
TOPIC_SNAPSHOTS = 7 + 7 + 25  # StatsItem's minute, hour and day rings


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(stats: BrokerStats, clock: FakeClock, seconds: int, per_tick: dict[str, int]) -> None:
    """``seconds`` of broker life: every 10 s, ``per_tick`` puts of 100 bytes each, then the
    periodic sample."""
    for _ in range(seconds // 10):
        clock.now += 10
        for topic, nums in per_tick.items():
            stats.on_put(topic, nums, nums * 100)
        stats.sample()


def test_memory_per_topic_stays_bounded_over_days() -> None:
    """Issue B: three days of 10 s samples leave each topic 39 snapshots (7 + 7 + 25), as
    after an hour -- not one more per sample (the old deque kept 361 per topic)."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    topics = {f"T{i}": i + 1 for i in range(20)}
    run(stats, clock, 3600, topics)
    hour_sizes = {t: sys.getsizeof(stats.topics.items[t].marks) for t in topics}
    run(stats, clock, 3 * DAY, topics)
    for topic in topics:
        assert stats.stored_samples(topic) == TOPIC_SNAPSHOTS
        assert sys.getsizeof(stats.topics.items[topic].marks) == hour_sizes[topic]
    assert stats.topics.snapshots() == TOPIC_SNAPSHOTS  # instants, kept once for all topics
    assert stats.broker.snapshots() == 61 + 7 + 25
    ticks = (3600 + 3 * DAY) // 10  # T0 had one 100-byte put per tick: sums stay exact
    assert stats.topic_stats("T0")["statsDay"] == {"sum": ticks, "bytes": ticks * 100}


def test_rates_over_each_window() -> None:
    """StatsItem.computeStatsData: messages and bytes per second from the oldest snapshot in
    the window to now; a window with no puts reads 0 while the sums stay."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    run(stats, clock, 600, {"Busy": 100})  # 10 msg/s, 1,000 B/s for 10 minutes
    out = stats.topic_stats("Busy")
    assert out["statsMinute"] == {"sum": 6000, "tps": 10.0, "bytesPerSecond": 1000.0}
    assert out["statsHour"] == {"sum": 6000, "tps": 10.0, "bytesPerSecond": 1000.0}
    assert stats.tps_text(PUT) == "10.00 10.00 10.00"
    run(stats, clock, 300, {"Busy": 200})  # then 20 msg/s for 5 minutes
    out = stats.topic_stats("Busy")
    assert out["statsMinute"]["tps"] == 20.0
    assert out["statsHour"]["tps"] == round(12000 / 900, 2)  # since boot, 15 minutes ago
    assert stats.tps_text(PUT) == "20.00 20.00 15.00"  # 10 min: half at 10/s, half at 20/s
    stats.on_get(5, 50)
    clock.now += 5
    # 5 gets since the last sample: over 5 s, 55 s and 595 s (the oldest snapshot in each)
    assert stats.tps_text(GET) == f"1.00 {5 / 55:.2f} {5 / 595:.2f}"
    run(stats, clock, 2 * 3600, {})  # two quiet hours
    out = stats.topic_stats("Busy")
    assert out["statsMinute"] == {"sum": 12000, "tps": 0.0, "bytesPerSecond": 0.0}
    assert out["statsHour"]["tps"] == 0.0 and out["statsDay"]["sum"] == 12000
    assert stats.total.nums == 12000 and stats.gets.nums == 5


def test_a_topic_created_late_counts_only_its_own_puts() -> None:
    """A topic first seen after boot had counted nothing at the earlier snapshots: its rate
    over the minute is its puts over that minute."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    run(stats, clock, 1200, {"Old": 1})
    run(stats, clock, 60, {"New": 30})
    assert stats.topic_stats("New")["statsMinute"]["tps"] == 3.0
    assert stats.topic_stats("New")["statsHour"]["tps"] == round(180 / 1260, 2)


def test_removed_topic_leaves_nothing() -> None:
    """BrokerStatsManager.onTopicDeleted: the entry goes, later samples do not bring it back,
    and a topic re-created under the name starts from zero."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    run(stats, clock, 600, {"Gone": 10, "Kept": 1})
    stats.remove_topic("Gone")
    stats.remove_topic("Never")  # unknown: nothing to do
    run(stats, clock, 60, {"Kept": 1})
    assert "Gone" not in stats.topics.items and stats.stored_samples("Gone") == 0
    assert stats.topic_stats("Gone") == {
        "statsMinute": {"sum": 0, "tps": 0.0, "bytesPerSecond": 0.0},
        "statsHour": {"sum": 0, "tps": 0.0, "bytesPerSecond": 0.0},
        "statsDay": {"sum": 0, "bytes": 0},
    }
    assert stats.total.nums == 660 + 6  # broker-wide totals keep what was put
    run(stats, clock, 60, {"Gone": 1})
    assert stats.topic_stats("Gone")["statsMinute"] == {
        "sum": 6,
        "tps": 0.1,
        "bytesPerSecond": 10.0,
    }


def req(code: int, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext)


async def test_deleting_a_topic_drops_its_stats(cluster: Cluster, client: RemotingClient) -> None:
    """Issue B against a real broker: after DELETE_TOPIC_IN_BROKER (215),
    VIEW_BROKER_STATS_DATA (315) for the topic reads zero; runtime info keeps its shape."""
    b = cluster.add_broker("broker-a")
    assert (await client.invoke(b.addr, create_topic("StatsGone", 1))).code == 0
    for _ in range(3):
        assert (await client.invoke(b.addr, send_v2("StatsGone", b"12345", queue_id=0))).code == 0
    view = req(C.VIEW_BROKER_STATS_DATA, statsName="TOPIC_PUT_NUMS", statsKey="StatsGone")
    before = json.loads((await client.invoke(b.addr, view)).body)
    assert before["statsDay"]["sum"] == 3 and before["statsDay"]["bytes"] > 0
    assert (await client.invoke(b.addr, req(C.DELETE_TOPIC_IN_BROKER, topic="StatsGone"))).code == 0
    after = json.loads((await client.invoke(b.addr, view)).body)
    assert after == {
        "statsMinute": {"sum": 0, "tps": 0.0, "bytesPerSecond": 0.0},
        "statsHour": {"sum": 0, "tps": 0.0, "bytesPerSecond": 0.0},
        "statsDay": {"sum": 0, "bytes": 0},
    }
    info = decode_kv_table((await client.invoke(b.addr, req(C.GET_BROKER_RUNTIME_INFO))).body)
    assert info["msgPutTotalTodayNow"] == "3"  # the broker-wide count is history, kept
    assert len(info["putTps"].split()) == 3 and len(info["getTransferedTps"].split()) == 3
