"""TopicPublishInfo: the queues a producer may send a topic to, from its route
(MQClientInstance.topicRouteData2TopicPublishInfo), and queue selection
(TopicPublishInfo.selectOneMessageQueue, MQFaultStrategy.selectOneMessageQueue). Pure."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from aiorocketmq.client.core.fault import LatencyFaults
from aiorocketmq.remoting.protocol.heartbeat import MessageQueue
from aiorocketmq.remoting.protocol.route import MASTER_ID, TopicRouteData
from aiorocketmq.remoting.protocol.topic import Perm


@dataclass(slots=True)
class PublishInfo:
    topic: str
    queues: list[MessageQueue]
    route: TopicRouteData
    order_topic: bool = False
    via_default: bool = False  # TBW102's route, for a topic that has none yet
    _next: itertools.count[int] = field(
        default_factory=lambda: itertools.count(random.randrange(1 << 16))
    )
    # master address by broker name, the first of the route's brokers of that name (every
    # send looks one up; a changed route comes as a new PublishInfo)
    _masters: dict[str, str | None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        for broker in self.route.broker_datas:
            self._masters.setdefault(broker.broker_name, broker.master_addr)

    @classmethod
    def from_route(cls, topic: str, route: TopicRouteData) -> PublishInfo:
        """Writable queues of brokers that have a master, in broker-name order; an ordered
        topic's ``orderTopicConf`` ("broker:queues;...") gives its queues instead."""
        if route.order_topic_conf:
            queues = [
                MessageQueue(topic, name, q)
                for item in route.order_topic_conf.split(";")
                if item
                for name, count in [item.split(":")]
                for q in range(int(count))
            ]
            return cls(topic, queues, route, order_topic=True)
        masters = {b.broker_name for b in route.broker_datas if MASTER_ID in b.broker_addrs}
        queues = [
            MessageQueue(topic, qd.broker_name, q)
            for qd in sorted(route.queue_datas, key=lambda d: d.broker_name)
            if Perm.writeable(qd.perm) and qd.broker_name in masters
            for q in range(qd.write_queue_nums)
        ]
        return cls(topic, queues, route)

    def master_addr(self, broker_name: str) -> str | None:
        return self._masters.get(broker_name)

    def select(
        self,
        last_broker: str | None,
        faults: LatencyFaults | None,
        down: Callable[[str], bool] | None = None,
    ) -> MessageQueue:
        """Round robin, skipping brokers that are ``down`` (their connection dropped),
        ``last_broker`` (the one that just failed) and, with ``faults``, brokers inside their
        not-available window; falls back in the reverse order."""
        n = len(self.queues)
        start = next(self._next)
        if n:  # the usual case in O(1): the round robin's queue is fine
            mq = self.queues[start % n]
            name = mq.broker_name
            if (
                name != last_broker
                and (down is None or not down(name))
                and (faults is None or faults.available(name))
            ):
                return mq
        every = [self.queues[(start + i) % n] for i in range(n)]
        if down is not None:
            candidates = [mq for mq in every if not down(mq.broker_name)] or every
        else:
            candidates = every
        if faults is not None:
            for mq in candidates:
                if faults.available(mq.broker_name) and mq.broker_name != last_broker:
                    return mq
            best = faults.least_bad()
            for mq in candidates:
                if mq.broker_name == best and best != last_broker:
                    return mq
        for mq in candidates:
            if mq.broker_name != last_broker:
                return mq
        return candidates[0]
