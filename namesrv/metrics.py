"""The name server's own metrics, read from its route table when ``/metrics`` is scraped:
registered brokers, broker names, clusters and topics, the topic configs registrations
carried (what registering costs it) and the topics they left out (ours: 4.9.8 has no
metrics endpoint).
Requests, latency, connections and event-loop lag come from ``aiorocketmq.remoting.metrics``."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from aiorocketmq.namesrv.processors import NamesrvProcessor
from aiorocketmq.remoting.metrics import PREFIX


class NamesrvCollector(Collector):
    def __init__(self, processor: NamesrvProcessor) -> None:
        self.processor = processor

    def collect(self) -> Iterable[Metric]:
        table = self.processor.table
        brokers = GaugeMetricFamily(
            PREFIX + "namesrv_brokers",
            "Registered broker addresses (masters and slaves), per cluster",
            labels=["cluster"],
        )
        per_cluster: dict[str, int] = {}
        for data in table.brokers.values():
            count = len(data.broker_addrs)
            per_cluster[data.cluster] = per_cluster.get(data.cluster, 0) + count
        for cluster, count in sorted(per_cluster.items()):
            brokers.add_metric([cluster], count)
        yield brokers
        yield GaugeMetricFamily(PREFIX + "namesrv_broker_names", "Broker groups (brokerName) "
                                "known", value=len(table.brokers))  # fmt: skip
        yield GaugeMetricFamily(PREFIX + "namesrv_clusters", "Clusters known",
                                value=len(table.clusters))  # fmt: skip
        yield GaugeMetricFamily(PREFIX + "namesrv_topics", "Topics with a route",
                                value=len(table.topic_queues))  # fmt: skip
        yield CounterMetricFamily(PREFIX + "namesrv_register_topics_skipped", "Topics left out "
                                  "of broker registrations because they cannot be routed "
                                  "(counted at each registration)",
                                  value=self.processor.topics_skipped)  # fmt: skip
        yield CounterMetricFamily(PREFIX + "namesrv_registered_topics", "Topic configs "
                                  "received in REGISTER_BROKER bodies (a whole table, or "
                                  "an increment)", value=table.topics_received)  # fmt: skip
