"""The broker's own metrics, read from its state when ``/metrics`` is scraped: messages and
bytes put per topic and got per topic and group (BrokerStats, the counts VIEW_BROKER_STATS_DATA
reports), queue max offsets, consumer lag, store disk use, client connections.

Names follow Apache RocketMQ 5.x's metrics (BrokerMetricsConstant) where the meaning is the
same -- ``rocketmq_messages_in_total``, ``rocketmq_consumer_lag_messages`` and so on, without
5.x's cluster and node labels (Prometheus's target labels tell brokers apart) -- and are ours
otherwise. 4.9.8 has no metrics endpoint.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from aiorocketmq.broker.consumers import Consumers
from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.namesrv_api import NamesrvAPI
from aiorocketmq.broker.offsets import SEPARATOR
from aiorocketmq.broker.roles import Role, Roles
from aiorocketmq.broker.store import memory
from aiorocketmq.broker.store.disk import existing
from aiorocketmq.broker.timer import TimerService
from aiorocketmq.broker.txcheck import TransactionCheck
from aiorocketmq.remoting.metrics import PREFIX


class MetricsSource(Protocol):
    """What the collector reads at each scrape (the Broker, once started): the parts it
    holds, not the Broker itself, so this module stays below broker.server."""

    @property
    def ctx(self) -> BrokerContext: ...
    @property
    def broker_id(self) -> int: ...
    @property
    def consumers(self) -> Consumers: ...
    @property
    def namesrv(self) -> NamesrvAPI: ...
    @property
    def tx_check(self) -> TransactionCheck: ...
    @property
    def roles(self) -> Roles: ...
    @property
    def timer(self) -> TimerService: ...


def counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
    return CounterMetricFamily(PREFIX + name, doc, labels=labels)


def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, labels=labels)


def value(name: str, doc: str, number: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=number)


class BrokerCollector(Collector):
    def __init__(self, broker: MetricsSource) -> None:
        self.broker = broker

    def collect(self) -> Iterable[Metric]:
        yield from self._info()
        yield from self._traffic()
        yield from self._queues()
        yield from self._storage()
        yield from self._clients()
        yield from self._set_aside()
        yield from self._timers()

    def _info(self) -> Iterable[Metric]:
        b = self.broker
        cfg = b.ctx.config
        info = gauge("broker_info", "This broker (always 1)",
                     ["cluster", "broker", "broker_id", "role", "addr"])  # fmt: skip
        info.add_metric([cfg.broker_cluster_name, cfg.broker_name, str(b.broker_id),
                         str(cfg.broker_role), b.ctx.addr], 1)  # fmt: skip
        yield info
        yield value("broker_permission", "brokerPermission (6 read and write, 4 read only, "
                    "2 write only)", cfg.broker_permission)  # fmt: skip
        roles = b.roles
        role = gauge("broker_role", "This broker's role now (1 for the one it has): MASTER, "
                     "SLAVE, or FENCED (controller mode, no role given yet)", ["role"])  # fmt: skip
        for name in Role:
            role.add_metric([str(name)], 1 if roles.role is name else 0)
        yield role
        yield value("broker_epoch", "The master epoch of this broker's role (-1: none yet)",
                    roles.epoch)  # fmt: skip
        changes = counter("broker_role_changes", "Role changes made at run time (controller "
                          "mode)", [])  # fmt: skip
        changes.add_metric([], roles.changes)
        yield changes

    def _traffic(self) -> Iterable[Metric]:
        stats = self.broker.ctx.stats
        put = counter("messages_in", "Messages stored by sends, per topic", ["topic"])
        put_bytes = counter("throughput_in", "Bytes stored by sends (whole CommitLog "
                            "records), per topic", ["topic"])  # fmt: skip
        for topic, item in stats.topics.items.items():
            put.add_metric([topic], item.nums)
            put_bytes.add_metric([topic], item.size)
        names = ["topic", "consumer_group"]
        get = counter("messages_out", "Messages handed to pulls, per topic and group", names)
        get_bytes = counter("throughput_out", "Bytes of messages handed to pulls, per topic "
                            "and group", names)  # fmt: skip
        for key, item in stats.groups.items.items():
            topic, _, group = key.partition(SEPARATOR)
            get.add_metric([topic, group], item.nums)
            get_bytes.add_metric([topic, group], item.size)
        yield from (put, put_bytes, get, get_bytes)

    def _queues(self) -> Iterable[Metric]:
        ctx = self.broker.ctx
        store = ctx.store
        top = gauge("queue_max_offset", "Messages ever stored in a queue: the next message's "
                    "queue offset", ["topic", "queue_id"])  # fmt: skip
        for (topic, queue_id), cq in sorted(store.queues.items()):
            top.add_metric([topic, str(queue_id)], cq.max_offset)
        lag = gauge("consumer_lag_messages", "Messages a group has yet to consume: per queue "
                    "of the topic, max offset - committed offset, summed",
                    ["topic", "consumer_group"])  # fmt: skip
        for key, committed in self.broker.consumers.offsets.table.items():
            topic, _, group = key.partition(SEPARATOR)
            config = ctx.topics.get(topic)
            if config is None:
                continue
            behind = 0
            for queue_id in range(config.read_queue_nums):  # as GET_CONSUME_STATS counts
                done = max(0, committed.get(queue_id, 0))
                behind += max(0, store.max_offset(topic, queue_id) - done)
            lag.add_metric([topic, group], behind)
        yield top
        yield lag

    def _storage(self) -> Iterable[Metric]:
        store = self.broker.ctx.store
        size = gauge("storage_size_bytes", "Bytes the store's files have allocated on disk",
                     ["kind"])  # fmt: skip
        for kind, n in store.disk_usage().items():
            size.add_metric([kind], n)
        yield size
        st = os.statvfs(existing(store.config.commitlog_dir))
        yield value("storage_disk_free_bytes", "Bytes free for the broker on the CommitLog's "
                    "disk", st.f_bavail * st.f_frsize)  # fmt: skip
        yield value("storage_disk_total_bytes", "Size of the CommitLog's disk",
                    st.f_blocks * st.f_frsize)  # fmt: skip
        yield from self._memory()

    def _memory(self) -> Iterable[Metric]:
        store = self.broker.ctx.store
        mapped = gauge("memory_mapped_bytes", "Bytes of the store's files mapped now (address "
                       "space: cold pages leave memory, the mappings stay)", ["kind"])  # fmt: skip
        for kind, n in memory.mapped(store.commitlog, list(store.queues.values()),
                                     store.index).items():  # fmt: skip
            mapped.add_metric([kind], n)
        yield mapped
        resident = gauge("memory_resident_bytes", "Resident bytes of the broker process: file "
                         "pages (mostly the store's mappings) and anonymous ones (RssFile, "
                         "RssAnon)", ["kind"])  # fmt: skip
        for kind, n in memory.resident().items():
            resident.add_metric([kind], n)
        yield resident

    def _clients(self) -> Iterable[Metric]:
        ctx, registry = self.broker.ctx, self.broker.consumers.registry
        yield value("topic_number", "Topics in the topic table", len(ctx.topics.topics))
        yield value("consumer_group_number", "Subscription groups", len(ctx.groups.groups))
        producers = gauge("producer_connections", "Live producer clients, per group",
                          ["producer_group"])  # fmt: skip
        for producer_group, members in sorted(registry.producers.items()):
            producers.add_metric([producer_group], len(members))
        consumers = gauge("consumer_connections", "Live consumer clients, per group",
                          ["consumer_group"])  # fmt: skip
        for consumer_group, group in sorted(registry.consumers.items()):
            consumers.add_metric([consumer_group], len(group.clients))
        yield producers
        yield consumers

    def _set_aside(self) -> Iterable[Metric]:
        """What the broker isolated rather than let it stop the rest (issue 29: no poison
        pill): topics left out of registration, delayed messages skipped or held back,
        transaction halves set aside."""
        b = self.broker
        left_out = b.namesrv.left_out.count
        yield CounterMetricFamily(PREFIX + "register_topics_left_out", "Topics left out of the "
                                  "name server registration because no name server would "
                                  "route them (each once)", value=left_out)  # fmt: skip
        schedule = b.consumers.schedule
        skipped = counter("delayed_messages_skipped", "Due delayed messages the store refuses "
                          "for good, skipped, by reason", ["reason"])  # fmt: skip
        for reason, count in sorted(schedule.skipped.items()):
            skipped.add_metric([reason], count)
        failed = counter("delayed_delivery_failures", "Refusals of a due delayed message that "
                         "may pass (retried after a back-off), by status", ["status"])  # fmt: skip
        for status, count in sorted(schedule.failures.items()):
            failed.add_metric([status], count)
        halves = counter("transaction_halves_set_aside", "Transaction halves whose copy the "
                         "store refuses for good, moved aside unchecked, by status",
                         ["status"])  # fmt: skip
        for status, count in sorted(b.tx_check.set_aside.items()):
            halves.add_metric([status], count)
        yield from (skipped, failed, halves)

    def _timers(self) -> Iterable[Metric]:
        """The timer wheel (issue 36): what waits, how late it is, what it did."""
        timer = self.broker.timer
        yield value("timer_pending_messages", "Timer messages (and recall markers) waiting in "
                    "the wheel", timer.timers.pending)  # fmt: skip
        yield value("timer_delivery_lag_ms", "How far the wheel's delivery is behind the "
                    "clock (0 while it keeps up)", timer.lag_ms())  # fmt: skip
        done = counter("timer_messages", "Timer messages the wheel handled, by outcome",
                       ["outcome"])  # fmt: skip
        for outcome, count in sorted(timer.counts.items()):
            done.add_metric([outcome], count)
        yield done
