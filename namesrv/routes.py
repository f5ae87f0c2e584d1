"""RouteTable: the name server's state, pure and with an injected clock (RouteInfoManager).

topic -> {brokerName: QueueData}; brokerName -> BrokerData (cluster, {brokerId: addr});
cluster -> brokerNames; live brokers by address (last update, data version, channel, HA addr).
No I/O: the processor feeds it requests, the expiry loop calls ``expire(now)``.

A registration may carry 100,000 topics; rebuilding their queue data is ~1 ms per thousand,
so ``register_steps`` does it ``APPLY_SLICE`` topics per step and the processor lets other
requests run between steps. Each topic's queue data changes in one piece; a newer
registration of the same broker, or its eviction, stops a rebuild still under way.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

from aiorocketmq.remoting.protocol.register import DataVersion, TopicConfigWrapper
from aiorocketmq.remoting.protocol.route import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    QueueData,
    TopicRouteData,
)
from aiorocketmq.remoting.protocol.steps import Steps
from aiorocketmq.remoting.protocol.topic import Perm, TopicConfig

Clock = Callable[[], float]  # milliseconds, monotonic
APPLY_SLICE: Final = 1000  # topics rebuilt per step of a registration


@dataclass(slots=True)
class BrokerLive:
    """BrokerLiveInfo: one registered broker address."""

    last_update_ms: float
    data_version: DataVersion
    channel: Hashable
    ha_server_addr: str
    timeout_ms: float


class RegisterResult(NamedTuple):
    """What a slave learns from registering: its master's address and HA address."""

    master_addr: str | None
    ha_server_addr: str | None


class Eviction(NamedTuple):
    broker_addr: str
    broker_name: str | None
    cluster: str | None
    reason: str
    channel: Hashable | None


class RouteTable:
    """Everything the name server knows; every mutation bumps ``version``."""

    def __init__(self, clock: Clock, broker_expired_ms: float = 120_000) -> None:
        self._clock = clock
        self._expired_ms = broker_expired_ms
        self.topic_queues: dict[str, dict[str, QueueData]] = {}
        self.brokers: dict[str, BrokerData] = {}
        self.clusters: dict[str, set[str]] = {}
        self.live: dict[str, BrokerLive] = {}
        self.version = 0  # bumped whenever a route could have changed (route caches key on it)
        self._rebuilding: dict[str, object] = {}  # broker name -> token of its running rebuild
        self.topics_received = 0  # topic configs REGISTER_BROKER bodies carried (metrics)

    # ------------------------------------------------------------ registration

    def register_steps(
        self,
        *,
        cluster: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topics: TopicConfigWrapper | None,
        channel: Hashable,
        timeout_ms: float | None = None,
    ) -> Steps[RegisterResult]:
        """REGISTER_BROKER: refresh links and liveness at once; then, for a master whose data
        version changed (or on its first registration), rebuild its queue data for every topic
        it reports, a slice per step (RouteInfoManager.registerBroker)."""
        first = self._link(cluster, broker_addr, broker_name, broker_id)
        version = topics.data_version if topics is not None else DataVersion()
        self.topics_received += len(topics.topic_config_table) if topics is not None else 0
        prev = self.live.get(broker_addr)
        self.live[broker_addr] = BrokerLive(
            self._clock(), version, channel, ha_server_addr, timeout_ms or self._expired_ms
        )
        changed = first or prev is None or prev.data_version != version
        if topics is not None and broker_id == MASTER_ID and changed:
            yield from self._rebuild(broker_name, topics.topic_config_table.values())
        return self._master_of(broker_name, broker_id)

    def _link(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int) -> bool:
        """Record cluster -> name -> {id: addr}; True if this name or id is new."""
        self.clusters.setdefault(cluster, set()).add(broker_name)
        broker = self.brokers.get(broker_name)
        first = broker is None
        if broker is None:
            broker = self.brokers[broker_name] = BrokerData(
                cluster=cluster, broker_name=broker_name
            )
        # an address holds one id only: a slave switched to master drops its old entry
        for bid in [
            i for i, a in broker.broker_addrs.items() if a == broker_addr and i != broker_id
        ]:
            del broker.broker_addrs[bid]
        if broker.broker_addrs.get(broker_id) != broker_addr:
            first |= broker_id not in broker.broker_addrs
            broker.broker_addrs[broker_id] = broker_addr
            self.version += 1
        return first

    def _rebuild(self, broker_name: str, configs: Iterable[TopicConfig]) -> Steps[None]:
        token = self._rebuilding[broker_name] = object()
        pending = iter(configs)
        try:
            while chunk := list(itertools.islice(pending, APPLY_SLICE)):
                if (
                    self._rebuilding.get(broker_name) is not token
                    or broker_name not in self.brokers
                ):
                    return  # a newer registration rebuilds instead, or the broker is gone
                if self._update_queue_datas(broker_name, chunk):
                    self.version += 1
                yield
        finally:
            if self._rebuilding.get(broker_name) is token:
                del self._rebuilding[broker_name]

    def _update_queue_datas(self, broker_name: str, configs: list[TopicConfig]) -> bool:
        """Replace the queue data that differs (createAndUpdateQueueData); True if any did."""
        changed = False
        queues_of = self.topic_queues
        for c in configs:
            queues = queues_of.get(c.topic_name)
            if queues is None:
                queues = queues_of[c.topic_name] = {}
            old = queues.get(broker_name)
            if (
                old is None
                or old.perm != c.perm
                or old.read_queue_nums != c.read_queue_nums
                or old.write_queue_nums != c.write_queue_nums
                or old.topic_sys_flag != c.topic_sys_flag
            ):
                queues[broker_name] = QueueData(
                    broker_name=broker_name, read_queue_nums=c.read_queue_nums,
                    write_queue_nums=c.write_queue_nums, perm=c.perm,
                    topic_sys_flag=c.topic_sys_flag,
                )  # fmt: skip
                changed = True
        return changed

    def _master_of(self, broker_name: str, broker_id: int) -> RegisterResult:
        broker = self.brokers.get(broker_name)
        if broker_id == MASTER_ID or broker is None:
            return RegisterResult(None, None)
        master = broker.master_addr
        live = self.live.get(master) if master else None
        if master is None or live is None:
            return RegisterResult(None, None)
        return RegisterResult(master, live.ha_server_addr)

    def data_version_changed(self, broker_addr: str, version: DataVersion) -> bool:
        """QUERY_DATA_VERSION: does ``version`` differ from what this address registered?"""
        live = self.live.get(broker_addr)
        return live is None or live.data_version != version

    def touch(self, broker_addr: str) -> None:
        """Refresh liveness without re-registering (QUERY_DATA_VERSION, version unchanged)."""
        live = self.live.get(broker_addr)
        if live is not None:
            live.last_update_ms = self._clock()

    # ------------------------------------------------------------ removal

    def unregister(
        self, *, cluster: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """UNREGISTER_BROKER: drop that address; a broker name left without addresses goes,
        with its queue data, and topics left empty go too."""
        self.live.pop(broker_addr, None)
        broker = self.brokers.get(broker_name)
        if broker is not None and broker.broker_addrs.get(broker_id) == broker_addr:
            del broker.broker_addrs[broker_id]
        self._forget_if_empty(broker_name, cluster)
        self.version += 1

    def _forget_if_empty(self, broker_name: str, cluster: str | None) -> None:
        broker = self.brokers.get(broker_name)
        if broker is None or broker.broker_addrs:
            return
        del self.brokers[broker_name]
        for name in [cluster] if cluster else list(self.clusters):
            names = self.clusters.get(name)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self.clusters[name]
        for topic in list(self.topic_queues):
            queues = self.topic_queues[topic]
            queues.pop(broker_name, None)
            if not queues:
                del self.topic_queues[topic]

    def _drop_addr(self, broker_addr: str, reason: str) -> Eviction:
        live = self.live.pop(broker_addr, None)
        channel = live.channel if live is not None else None
        for broker in list(self.brokers.values()):
            ids = [i for i, a in broker.broker_addrs.items() if a == broker_addr]
            if ids:
                for bid in ids:
                    del broker.broker_addrs[bid]
                self._forget_if_empty(broker.broker_name, broker.cluster)
                self.version += 1
                return Eviction(broker_addr, broker.broker_name, broker.cluster, reason, channel)
        self.version += 1
        return Eviction(broker_addr, None, None, reason, channel)

    def drop_channel(self, channel: Hashable) -> list[Eviction]:
        """A broker's connection closed: its addresses go at once (onChannelDestroy)."""
        addrs = [a for a, live in self.live.items() if live.channel is channel]
        return [self._drop_addr(a, "channel_closed") for a in addrs]

    def expire(self, now_ms: float | None = None) -> list[Eviction]:
        """Evict brokers silent for longer than their timeout (scanNotActiveBroker)."""
        now = self._clock() if now_ms is None else now_ms
        stale = [a for a, live in self.live.items() if now - live.last_update_ms > live.timeout_ms]
        return [self._drop_addr(a, "expired") for a in stale]

    # ------------------------------------------------------------ queries

    def route_for(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic``: its queue datas and the broker datas (slaves included), or
        None when no queue data or none of its brokers is known."""
        queues = self.topic_queues.get(topic)
        if not queues:
            return None
        brokers = [b.copy() for name in queues if (b := self.brokers.get(name)) is not None]
        if not brokers:
            return None
        queue_datas = [dataclasses.replace(q) for q in queues.values()]
        return TopicRouteData(queue_datas=queue_datas, broker_datas=brokers)

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={name: b.copy() for name, b in self.brokers.items()},
            cluster_addr_table={c: sorted(names) for c, names in self.clusters.items()},
        )

    def all_topics(self) -> list[str]:
        return list(self.topic_queues)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        names = self.clusters.get(cluster, set())
        return [t for t, queues in self.topic_queues.items() if names.intersection(queues)]

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        """DELETE_TOPIC_IN_NAMESRV: drop the topic's queue data (of one cluster's brokers)."""
        queues = self.topic_queues.get(topic)
        if queues is None:
            return
        if cluster is None:
            del self.topic_queues[topic]
        else:
            for name in self.clusters.get(cluster, set()):
                queues.pop(name, None)
            if not queues:
                del self.topic_queues[topic]
        self.version += 1

    def wipe_write_perm(self, broker_name: str) -> int:
        """WIPE_WRITE_PERM_OF_BROKER: clear the write bit; returns how many topics changed."""
        return self._set_perm(broker_name, lambda perm: perm & ~Perm.WRITE)

    def add_write_perm(self, broker_name: str) -> int:
        # compat: RouteInfoManager.operateWritePermOfBroker sets READ|WRITE outright
        return self._set_perm(broker_name, lambda perm: Perm.READ | Perm.WRITE)

    def _set_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        count = 0
        for queues in self.topic_queues.values():
            qd = queues.get(broker_name)
            if qd is not None:
                qd.perm = change(qd.perm)
                count += 1
        self.version += 1
        return count
