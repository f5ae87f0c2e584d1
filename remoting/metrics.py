"""A server's metrics in Prometheus terms: the collector of what every server has (requests,
latency, connections, event-loop lag) and ``Metrics``, the ``/metrics`` endpoint's service.

Ours only: Apache RocketMQ 4.9.8 exposes no metrics endpoint (5.x exports OpenTelemetry
metrics, ``metricsPromExporterPort`` 5557). Collectors read the servers' state when
``/metrics`` is scraped, on the server's own loop; between scrapes nothing of
prometheus_client runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.gc_collector import GCCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

from aiorocketmq.remoting.counters import NO_RESPONSE, OTHER_CODE, Histogram, LoopLag, RequestStats
from aiorocketmq.remoting.lifecycle import Service
from aiorocketmq.remoting.metrics_http import MetricsEndpoint
from aiorocketmq.remoting.metrics_token import BearerToken
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.server import RemotingServer

PREFIX = "rocketmq_"


def histogram(name: str, doc: str, labels: Sequence[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(PREFIX + name, doc, labels=labels)


def add_histogram(family: HistogramMetricFamily, labels: Sequence[str], h: Histogram) -> None:
    family.add_metric(labels, h.cumulative(), h.total)


def request_labels(code: int) -> list[str]:
    """``[request_code, request]``: the number and RocketMQ's name for it."""
    if code == OTHER_CODE:
        return ["other", "OTHER"]
    try:
        return [str(code), RequestCode(code).name]
    except ValueError:
        return [str(code), str(code)]


def response_labels(code: int) -> list[str]:
    """``[response_code, response]``; ``none`` for a request answered with nothing."""
    if code == NO_RESPONSE:
        return ["none", "NONE"]
    try:
        return [str(code), ResponseCode(code).name]
    except ValueError:
        return [str(code), str(code)]


class RemotingCollector(Collector):
    """What every server reports: requests by code and response code, latency per request
    code, connections per listener, event-loop lag."""

    def __init__(
        self,
        stats: RequestStats,
        servers: Callable[[], Mapping[str, RemotingServer]],
        lag: LoopLag,
    ) -> None:
        self.stats = stats
        self.servers = servers  # listener name -> server, read at each scrape
        self.lag = lag

    def collect(self) -> Iterable[Metric]:
        yield from self._requests()
        yield from self._connections()
        lag = histogram("event_loop_lag_seconds", "How much later than asked a periodic "
                        "probe's sleep ended (the event loop was busy)", [])  # fmt: skip
        add_histogram(lag, [], self.lag.histogram)
        yield lag
        yield GaugeMetricFamily(PREFIX + "event_loop_lag_last_seconds",
                                "The latest event-loop lag probe", value=self.lag.last)  # fmt: skip

    def _requests(self) -> Iterable[Metric]:
        names = ["request_code", "request"]
        requests = CounterMetricFamily(
            PREFIX + "rpc_requests", "Requests answered, by request code and response code "
            "(response_code none: oneway or not answered)",
            labels=[*names, "response_code", "response"],
        )  # fmt: skip
        latency = histogram(
            "rpc_latency_seconds", "From dispatch to response, per request code", names
        )
        for code, entry in sorted(self.stats.codes.items()):
            labels = request_labels(code)
            for rcode, count in sorted(entry.responses.items()):
                requests.add_metric([*labels, *response_labels(rcode)], count)
            add_histogram(latency, labels, entry)
        yield requests
        yield latency

    def _connections(self) -> Iterable[Metric]:
        open_ = GaugeMetricFamily(
            PREFIX + "connections", "Open client connections, per listener", labels=["listener"]
        )
        opened = CounterMetricFamily(
            PREFIX + "connections_opened", "Connections accepted, per listener",
            labels=["listener"],
        )  # fmt: skip
        for name, server in self.servers().items():
            open_.add_metric([name], len(server.channels))
            opened.add_metric([name], server.accepted)
        yield open_
        yield opened


class Metrics(Service):
    """``/metrics`` on ``host:port`` (0 = any free port): the requests counted in ``stats``,
    the connections of ``servers`` (listener name -> server, read at each scrape), event-loop
    lag (probed while started), the process's own (CPU, memory, open files, GC) and what
    ``collectors`` add; on ``sock`` when given (``bind_metrics``); only to requests carrying
    ``token`` when given (``metricsBearerTokenFile``). A port that cannot be bound raises
    OSError naming it and ``metricsPort``: the server does not start."""

    def __init__(
        self,
        host: str,
        port: int,
        stats: RequestStats,
        servers: Callable[[], Mapping[str, RemotingServer]],
        collectors: Iterable[Collector] = (),
        sock: socket.socket | None = None,
        token: BearerToken | None = None,
    ) -> None:
        self.lag = LoopLag()
        self.registry = CollectorRegistry(auto_describe=False)
        for collector in (RemotingCollector(stats, servers, self.lag), *collectors):
            self.registry.register(collector)
        # the process's CPU, memory and open files, Python's version and GC: each registers
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.endpoint = MetricsEndpoint(self.registry, host, port, sock, token)
        self._probe: asyncio.Task[None] | None = None

    @property
    def port(self) -> int | None:
        """The bound port, or None when not serving."""
        return self.endpoint.port

    async def start(self) -> None:
        await self.endpoint.start()
        if self.endpoint.port is not None:  # no probe for metrics nobody can read
            self._probe = asyncio.get_running_loop().create_task(self.lag.run(), name="loop-lag")

    async def close(self) -> None:
        await self.endpoint.close()
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
