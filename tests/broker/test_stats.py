"""BrokerStats (BrokerStatsManager / StatsItem / StoreStatsService): bounded snapshots per
key, Java's sums and rates per window, and no entry left behind by a deleted topic or group."""

from __future__ import annotations

import json
import sys
from datetime import datetime

from aiorocketmq.broker.stats import FOUND, GET, MISS, PUT, BrokerStats
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.route import decode_kv_table
from tests.broker.wire import create_topic, send_v2
from tests.cluster import Cluster

DAY = 86_400
TOPIC_SNAPSHOTS = 7 + 7 + 25  # StatsItem's minute, hour and day rings


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(
    stats: BrokerStats,
    clock: FakeClock,
    seconds: int,
    per_tick: dict[str, int],
    *,
    gets: bool = False,
) -> None:
    """``seconds`` of broker life: every 10 s, per topic one send of ``per_tick`` messages of
    100 bytes each (and, with ``gets``, one pull of them by group "g"), then a sample."""
    for _ in range(seconds // 10):
        clock.now += 10
        for topic, nums in per_tick.items():
            stats.on_put(topic, nums, nums * 100)
            if gets:
                stats.on_get(topic, "g", nums, nums * 100)
        stats.sample()


def item(stats: BrokerStats, name: str, key: str, window: str) -> dict[str, float] | None:
    data = stats.stats_data(name, key)
    return None if data is None else data[window]


def test_memory_per_topic_stays_bounded_over_days() -> None:
    """Issue B: three days of 10 s samples leave each topic and each topic@group 39 snapshots
    (7 + 7 + 25), as after an hour -- not one more per sample (the old deque kept 361 per
    topic); statsDay covers the last 24 hours (StatsItem's csListDay), not all time."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    topics = {f"T{i}": i + 1 for i in range(20)}
    run(stats, clock, 3600, topics, gets=True)
    hour_sizes = {t: sys.getsizeof(stats.topics.items[t].marks) for t in topics}
    run(stats, clock, 3 * DAY, topics, gets=True)
    for topic in topics:
        assert stats.stored_samples(topic) == TOPIC_SNAPSHOTS
        assert sys.getsizeof(stats.topics.items[topic].marks) == hour_sizes[topic]
        assert sys.getsizeof(stats.groups.items[f"{topic}@g"].marks) == hour_sizes[topic]
    assert stats.topics.snapshots() == TOPIC_SNAPSHOTS  # instants, kept once for all topics
    assert stats.groups.snapshots() == TOPIC_SNAPSHOTS
    assert stats.broker.snapshots() == 601  # StoreStatsService: 10 minutes of snapshots
    ticks = DAY // 10  # T0 had one 100-byte put per tick: the day's sums are exact
    assert item(stats, "TOPIC_PUT_NUMS", "T0", "statsDay") == {
        "sum": ticks,
        "tps": 0.1,
        "avgpt": 1.0,
    }
    assert item(stats, "TOPIC_PUT_SIZE", "T0", "statsDay") == {
        "sum": ticks * 100,
        "tps": 10.0,
        "avgpt": 100.0,
    }
    assert item(stats, "GROUP_GET_NUMS", "T0@g", "statsDay") == {
        "sum": ticks,
        "tps": 0.1,
        "avgpt": 1.0,
    }


def test_the_day_window_is_the_last_24_hours_not_since_boot() -> None:
    """issue 33, difference 4 (statsAll's #InMsg24Hour / #OutMsg24Hour read statsDay): the day
    window rolls with hourly snapshots (StatsItem's csListDay, 25 kept), so puts leave it
    between 24 and 25 hours after they were counted, whatever the uptime; the cumulative
    totals keep them. Until a day has passed, the last 24 hours are the time since boot."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    run(stats, clock, 600, {"Early": 1})  # 60 puts in the first 10 minutes
    run(stats, clock, 22 * 3600, {})
    run(stats, clock, 600, {"Late": 2})  # 120 puts 22 h later
    assert (day := item(stats, "TOPIC_PUT_NUMS", "Early", "statsDay")) and day["sum"] == 60
    run(stats, clock, 2 * 3600, {})  # the early puts are now 24 h 10 min to 24 h 20 min old
    assert (day := item(stats, "TOPIC_PUT_NUMS", "Early", "statsDay")) and day["sum"] == 60
    run(stats, clock, 3600, {})  # more than 25 h: gone from the window
    assert (day := item(stats, "TOPIC_PUT_NUMS", "Early", "statsDay")) and day["sum"] == 0
    assert (day := item(stats, "TOPIC_PUT_NUMS", "Late", "statsDay")) and day["sum"] == 120
    run(stats, clock, 24 * 3600, {})
    assert (day := item(stats, "TOPIC_PUT_NUMS", "Late", "statsDay")) and day["sum"] == 0
    assert stats.total.nums == 180  # brokerStatus's totals are not windows
    assert stats.stored_samples("Early") == TOPIC_SNAPSHOTS


def test_sums_and_rates_over_each_window() -> None:
    """StatsItem.computeStatsData: per window the value counted since its oldest snapshot,
    per second and per call (avgpt); a window with no puts reads 0 and the others keep
    theirs."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    run(stats, clock, 600, {"Busy": 100})  # 10 msg/s, 1,000 B/s for 10 minutes, 100 a call
    assert item(stats, "TOPIC_PUT_NUMS", "Busy", "statsMinute") == {
        "sum": 600,
        "tps": 10.0,
        "avgpt": 100.0,
    }
    assert item(stats, "TOPIC_PUT_SIZE", "Busy", "statsMinute") == {
        "sum": 60_000,
        "tps": 1000.0,
        "avgpt": 10_000.0,
    }
    assert item(stats, "TOPIC_PUT_NUMS", "Busy", "statsHour") == {
        "sum": 6000,
        "tps": 10.0,
        "avgpt": 100.0,
    }
    run(stats, clock, 300, {"Busy": 200})  # then 20 msg/s for 5 minutes
    minute = item(stats, "TOPIC_PUT_NUMS", "Busy", "statsMinute")
    assert minute is not None and (minute["sum"], minute["tps"]) == (1200, 20.0)
    hour = item(stats, "TOPIC_PUT_NUMS", "Busy", "statsHour")  # since boot, 15 minutes ago
    assert hour is not None and (hour["sum"], hour["tps"]) == (12_000, 12_000 / 900)
    run(stats, clock, 2 * 3600, {})  # two quiet hours
    assert item(stats, "TOPIC_PUT_NUMS", "Busy", "statsMinute") == {
        "sum": 0,
        "tps": 0.0,
        "avgpt": 0.0,
    }
    assert item(stats, "TOPIC_PUT_NUMS", "Busy", "statsHour") == {
        "sum": 0,
        "tps": 0.0,
        "avgpt": 0.0,
    }
    day = item(stats, "TOPIC_PUT_NUMS", "Busy", "statsDay")
    assert day is not None and (day["sum"], day["avgpt"]) == (12_000, 12_000 / 90)  # 90 sends
    assert stats.total.nums == 12_000 and stats.total.size == 1_200_000


def test_broker_tps_over_10s_1min_10min() -> None:
    """StoreStatsService.getPutTps: snapshots every second for 10 minutes; the rate over a
    window runs from the snapshot that window old to now (since boot while younger)."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    for second in range(700):
        clock.now += 1
        stats.on_put("T", 10 if second < 600 else 40, 0)  # 10/s, then 40/s for 100 s
        stats.on_lookup(found=second % 2 == 0)
        stats.sample()
    assert [stats.tps(PUT, s) for s in (10, 60, 600)] == [40.0, 40.0, 15.0]
    assert [stats.tps(FOUND, s) for s in (10, 60)] == [0.5, 0.5]
    assert stats.tps(MISS, 10) == 0.5
    stats.on_get("T", "g", 5, 50)
    clock.now += 0.5
    assert stats.tps(GET, 10) == 5 / 10.5  # the snapshot 10 s before the last one
    young = BrokerStats(clock)
    young.on_put("T", 30, 0)
    clock.now += 3
    assert [young.tps(PUT, s) for s in (10, 60, 600)] == [10.0, 10.0, 10.0]  # since boot


def test_a_topic_created_late_counts_only_its_own_puts() -> None:
    """A topic first seen after boot had counted nothing at the earlier snapshots: its rate
    over the minute is its puts over that minute."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    run(stats, clock, 1200, {"Old": 1})
    run(stats, clock, 60, {"New": 30})
    assert item(stats, "TOPIC_PUT_NUMS", "New", "statsMinute") == {
        "sum": 180,
        "tps": 3.0,
        "avgpt": 30.0,
    }
    hour = item(stats, "TOPIC_PUT_NUMS", "New", "statsHour")
    assert hour is not None and hour["tps"] == 180 / 1260


def test_removed_topic_leaves_nothing() -> None:
    """BrokerStatsManager.onTopicDeleted / onGroupDeleted: the entries go (the topic's groups'
    too), later samples do not bring them back, and a topic re-created under the name starts
    from zero."""
    clock = FakeClock()
    stats = BrokerStats(clock)
    run(stats, clock, 600, {"Gone": 10, "Kept": 1}, gets=True)
    stats.remove_topic("Gone")
    stats.remove_topic("Never")  # unknown: nothing to do
    run(stats, clock, 60, {"Kept": 1})
    assert "Gone" not in stats.topics.items and stats.stored_samples("Gone") == 0
    assert sorted(stats.groups.items) == ["Kept@g"]
    for name, key in (("TOPIC_PUT_NUMS", "Gone"), ("GROUP_GET_NUMS", "Gone@g")):
        assert stats.stats_data(name, key) is None  # Java: "The stats <..> <..> not exist"
    assert stats.total.nums == 660 + 6  # broker-wide totals keep what was put
    run(stats, clock, 60, {"Gone": 1})
    assert item(stats, "TOPIC_PUT_NUMS", "Gone", "statsMinute") == {
        "sum": 6,
        "tps": 0.1,
        "avgpt": 1.0,
    }
    stats.remove_group("g")
    assert stats.groups.items == {}
    assert stats.stats_data("NO_SUCH_STATS", "Kept") is None


def test_yesterday_and_today_morning_totals() -> None:
    """BrokerStats.record at each local midnight: today's morning total becomes yesterday's,
    the current total today's (clusterList -m subtracts them); 0 before the first."""
    clock, wall = FakeClock(), FakeClock()
    wall.now = datetime(2024, 3, 1, 23, 59, 0).timestamp()
    stats = BrokerStats(clock, wall)
    stats.on_put("T", 7, 0)
    stats.on_get("T", "g", 2, 0)
    stats.sample()
    m = stats.mornings
    assert (m.put_yesterday, m.put_today, m.get_yesterday, m.get_today) == (0, 0, 0, 0)
    wall.now += 120  # past midnight
    stats.sample()
    assert (m.put_yesterday, m.put_today, m.get_yesterday, m.get_today) == (0, 7, 0, 2)
    stats.on_put("T", 5, 0)
    stats.sample()  # the same day: nothing moves
    wall.now += DAY
    stats.sample()
    assert (m.put_yesterday, m.put_today, m.get_yesterday, m.get_today) == (7, 12, 2, 2)


def req(code: int, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext)


async def test_deleting_a_topic_drops_its_stats(cluster: Cluster, client: RemotingClient) -> None:
    """Issue B against a real broker: after DELETE_TOPIC_IN_BROKER (215), the topic's
    VIEW_BROKER_STATS_DATA (315) entries are gone -- SYSTEM_ERROR "not exist", as 4.9.8 answers
    after BrokerStatsManager.onTopicDeleted; runtime info keeps the broker-wide history."""
    b = cluster.add_broker("broker-a")
    assert (await client.invoke(b.addr, create_topic("StatsGone", 1))).code == 0
    for _ in range(3):
        assert (await client.invoke(b.addr, send_v2("StatsGone", b"12345", queue_id=0))).code == 0
    view = req(C.VIEW_BROKER_STATS_DATA, statsName="TOPIC_PUT_NUMS", statsKey="StatsGone")
    size = req(C.VIEW_BROKER_STATS_DATA, statsName="TOPIC_PUT_SIZE", statsKey="StatsGone")
    before = json.loads((await client.invoke(b.addr, view)).body)
    assert before["statsDay"]["sum"] == 3
    assert json.loads((await client.invoke(b.addr, size)).body)["statsDay"]["sum"] > 3 * 5
    assert (await client.invoke(b.addr, req(C.DELETE_TOPIC_IN_BROKER, topic="StatsGone"))).code == 0
    for cmd, name in ((view, "TOPIC_PUT_NUMS"), (size, "TOPIC_PUT_SIZE")):
        after = await client.invoke(b.addr, cmd)
        assert (after.code, after.remark) == (1, f"The stats <{name}> <StatsGone> not exist")
    info = decode_kv_table((await client.invoke(b.addr, req(C.GET_BROKER_RUNTIME_INFO))).body)
    assert info["msgPutTotalTodayNow"] == "3"  # the broker-wide count is history, kept
    assert len(info["putTps"].split()) == 3 and len(info["getTransferedTps"].split()) == 3
