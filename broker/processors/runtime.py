"""RuntimeProcessor: what the broker is doing now (AdminBrokerProcessor, the runtime half).

GET_BROKER_RUNTIME_INFO (28), VIEW_BROKER_STATS_DATA (315), QUERY_TOPIC_CONSUME_BY_WHO (300),
GET_ALL_PRODUCER_INFO (328). Values are written as a 4.9.8 broker writes them, since mqadmin
parses them (clusterList: Long.parseLong, Double.parseDouble, ``putTps.split(" ")``).
"""

from __future__ import annotations

import math
import os
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Final

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.registry import ClientRegistry
from aiorocketmq.broker.schedule import ScheduleService
from aiorocketmq.broker.stats import FOUND, GET, MISS, PUT, BrokerStats
from aiorocketmq.broker.store.disk import used_ratio
from aiorocketmq.broker.timer import TimerService
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.codes import CURRENT_VERSION, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.admin import StatsRequestHeader, TopicRequestHeader
from aiorocketmq.remoting.protocol.message import decode_record
from aiorocketmq.remoting.protocol.route import dumps, encode_kv_table
from aiorocketmq.remoting.protocol.topic import SCHEDULE_TOPIC

TPS_WINDOWS: Final = (10, 60, 600)  # StoreStatsService: putTps over 10 s, 1 min, 10 min
JAVA_INT_MAX: Final = 2**31 - 1
# AdminBrokerProcessor.prepareRuntimeInfo: thread-pool figures. We have no thread pools (one
# event loop, sends limited by a bulkhead), so these read 0
# compat: Java reports its executors' queue sizes, configured capacities and head wait times
THREAD_POOL_KEYS: Final = (
    "sendThreadPoolQueueSize",
    "sendThreadPoolQueueCapacity",
    "pullThreadPoolQueueSize",
    "pullThreadPoolQueueCapacity",
    "queryThreadPoolQueueSize",
    "queryThreadPoolQueueCapacity",
    "EndTransactionQueueSize",
    "EndTransactionThreadPoolQueueCapacity",
    "sendThreadPoolQueueHeadWaitTimeMills",
    "pullThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueHeadWaitTimeMills",
)


class RuntimeProcessor:
    def __init__(
        self,
        ctx: BrokerContext,
        registry: ClientRegistry,
        offsets: ConsumerOffsets,
        schedule: ScheduleService,
        timer: TimerService | None = None,
    ) -> None:
        self.ctx = ctx
        self.registry = registry
        self.offsets = offsets
        self.schedule = schedule
        self.timer = timer

    def get_runtime_info(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """KVTable: StoreStatsService's, DefaultMessageStore's and the broker's own keys
        (AdminBrokerProcessor.prepareRuntimeInfo)."""
        table = {**self._store_stats(), **self._store_info(), **self._broker_info()}
        return _ok(req, encode_kv_table(table))

    def _store_stats(self) -> dict[str, str]:
        """StoreStatsService.getRuntimeInfo."""
        stats = self.ctx.stats
        puts = max(stats.total.nums, 1)  # Java reports at least 1
        found, miss = (_tps(stats, key) for key in (FOUND, MISS))
        return {
            "bootTimestamp": str(stats.boot_ms),
            "runtime": _uptime(time.time_ns() // 1_000_000 - stats.boot_ms),
            "putMessageTimesTotal": str(puts),
            "putMessageSizeTotal": str(stats.total.size),
            "putMessageAverageSize": java_double(stats.total.size / puts),
            # compat: we do not time puts or reads, nor count failed puts: Java's values
            # before it has measured anything
            "putMessageEntireTimeMax": "0",
            "putMessageFailedTimes": "0",
            "putMessageDistributeTime": "null",
            "putLatency99": "0.00",
            "putLatency999": "0.00",
            "getMessageEntireTimeMax": "0",
            "dispatchMaxBuffer": "0",
            "putTps": " ".join(map(java_double, _tps(stats, PUT))),
            "getFoundTps": " ".join(map(java_double, found)),
            "getMissTps": " ".join(map(java_double, miss)),
            "getTotalTps": " ".join(java_double(f + m) for f, m in zip(found, miss, strict=True)),
            "getTransferedTps": " ".join(map(java_double, _tps(stats, GET))),
        }

    def _store_info(self) -> dict[str, str]:
        """DefaultMessageStore.getRuntimeInfo: disk use, delay levels, CommitLog bounds."""
        store = self.ctx.store
        commitlog = store.config.commitlog_dir
        # UtilAll.getDiskPartitionSpaceUsedPercent; Java makes both folders at start, ours come
        # with use, so the disk they will be on is measured
        ratio = java_double(used_ratio(commitlog))
        table = {
            f"commitLogDiskRatio_{commitlog}": ratio,
            "commitLogDiskRatio": ratio,
            "consumeQueueDiskRatio": java_double(used_ratio(store.root / "consumequeue")),
            "commitLogMinOffset": str(store.min_phys_offset),
            "commitLogMaxOffset": str(store.max_phys_offset),
        }
        # ScheduleMessageService.buildRunningStats: the levels that delivered something (ours
        # holds every level from the start, at 0)
        for level, offset in sorted(self.schedule.offsets.items()):
            if offset <= 0:
                continue
            top = store.max_offset(SCHEDULE_TOPIC, level - 1)
            table[f"scheduleMessageOffset_{level}"] = f"{offset},{top}"
        # 5.x: the timer wheel's keys, with the wheel on (clusterList's #Timer(Progress))
        if self.timer is not None and self.ctx.store_config.timer_wheel_enable:
            table.update(self.timer.runtime_info())
        return table

    def _broker_info(self) -> dict[str, str]:
        """AdminBrokerProcessor.prepareRuntimeInfo's own keys."""
        ctx, stats, store = self.ctx, self.ctx.stats, self.ctx.store
        day = stats.mornings
        table = {
            "brokerVersionDesc": "V4_9_8",
            "brokerVersion": str(CURRENT_VERSION),
            "msgPutTotalYesterdayMorning": str(day.put_yesterday),
            "msgPutTotalTodayMorning": str(day.put_today),
            "msgPutTotalTodayNow": str(stats.total.nums),
            "msgGetTotalYesterdayMorning": str(day.get_yesterday),
            "msgGetTotalTodayMorning": str(day.get_today),
            "msgGetTotalTodayNow": str(stats.gets.nums),
            **dict.fromkeys(THREAD_POOL_KEYS, "0"),
            "dispatchBehindBytes": "0",  # we index each message as it is written
            "pageCacheLockTimeMills": "0",  # and hold no lock while writing
            "earliestMessageTimeStamp": str(self._earliest_store_time()),
            "startAcceptSendRequestTimeStamp": str(ctx.config.start_accept_send_request_time_stamp),
            "remainTransientStoreBufferNumbs": str(JAVA_INT_MAX),  # no transient store pool
            "remainHowManyDataToFlush": human_bytes(store.max_phys_offset - store.flusher.flushed),
        }
        if store.root.exists():
            table["commitLogDirCapacity"] = _capacity(store.root)
        return table

    def _earliest_store_time(self) -> int:
        """The store time of the first record in the CommitLog, or -1 (CommitLog.
        pickupStoreTimestamp)."""
        store = self.ctx.store
        if store.min_phys_offset >= store.max_phys_offset:
            return -1
        record = store.read(store.min_phys_offset)
        try:
            return -1 if record is None else decode_record(record).store_timestamp
        except ValueError:
            return -1

    def view_stats(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """BrokerStatsData for a stats name and key (AdminBrokerProcessor.ViewBrokerStatsData)."""
        hdr = StatsRequestHeader.from_ext(req.ext_fields)
        data = self.ctx.stats.stats_data(hdr.stats_name, hdr.stats_key)
        if data is None:
            remark = f"The stats <{hdr.stats_name}> <{hdr.stats_key}> not exist"
            return response_to(req, ResponseCode.SYSTEM_ERROR, remark)
        return _ok(req, dumps(data))

    def consume_by_who(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """GroupList: groups online that subscribe to the topic, and groups with offsets on
        it (AdminBrokerProcessor.queryTopicConsumeByWho)."""
        topic = TopicRequestHeader.from_ext(req.ext_fields).topic
        groups = {n for n, g in self.registry.consumers.items() if topic in g.subscriptions}
        groups.update(self.offsets.groups_of(topic))  # ConsumerOffsetManager.whichGroupByTopic
        return _ok(req, dumps({"groupList": sorted(groups)}))

    def all_producer_info(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """ProducerTableInfo: per producer group, its live clients
        (ProducerManager.getProducerTable)."""
        now_ms, now = time.time_ns() // 1_000_000, time.monotonic()
        data = {
            group: [
                {
                    "clientId": c.client_id,
                    "remoteIP": f"/{c.addr}",  # Java writes the channel's SocketAddress
                    "language": c.language,
                    "version": c.version,
                    "lastUpdateTimestamp": now_ms - int((now - c.last_update) * 1000),
                }
                for c in members.values()
            ]
            for group, members in self.registry.producers.items()
        }
        return _ok(req, dumps({"data": data}))


def _ok(req: RemotingCommand, body: bytes) -> RemotingCommand:
    return response_to(req, ResponseCode.SUCCESS, body=body)


def _tps(stats: BrokerStats, key: str) -> list[float]:
    return [stats.tps(key, seconds) for seconds in TPS_WINDOWS]


def _capacity(root: Path) -> str:
    """The store root's disk, as Java prints java.io.File's total and usable space."""
    st = os.statvfs(root)
    total, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return f"Total : {human_bytes(total)}, Free : {human_bytes(free)}."


def _uptime(ms: int) -> str:
    """StoreStatsService.getFormatRuntime (MessageFormat groups thousands)."""
    s = ms // 1000
    days, hours, minutes = s // 86400, s % 86400 // 3600, s % 3600 // 60
    return f"[ {days:,} days, {hours} hours, {minutes} minutes, {s % 60} seconds ]"


def java_double(x: float) -> str:
    """Java's Double.toString: plain from 10^-3 to 10^7, else ``d.dddE<n>``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        return repr(x)  # Python's shortest digits, positional in this range
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def human_bytes(n: int) -> str:
    """MixAll.humanReadableByteCount(n, false): "512 B", "1.5 KiB", "3.0 GiB"."""
    if n < 1024:
        return f"{n} B"
    exp = int(math.log(n) / math.log(1024))
    value = Decimal(repr(n / 1024**exp)).quantize(Decimal("0.1"), ROUND_HALF_UP)  # as %.1f
    return f"{value} {'KMGTPE'[exp - 1]}iB"
