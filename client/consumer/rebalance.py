"""Rebalance: which queues of each subscribed topic this consumer owns (RebalanceImpl and
RebalancePushImpl of 4.9.8), run every 20 s and at once when a broker says the group
changed (NOTIFY_CONSUMER_IDS_CHANGED).

Clustering: the topic's readable queues and the group's client ids (from a broker) are
sorted and split by the allocation strategy; broadcasting: every queue. Queues that leave
stop being pulled and consumed, their offsets are committed first; queues that arrive get a
process queue and a pull loop starting at the committed offset, or where
``consume_from_where`` says for a group that has none. Orderly consumers lock a queue on its
broker before taking it and unlock it when they let it go.

The Rebalance owns the queue table (``table``, processQueueTable): the consumers and the
pulls change it only through its methods (``unsubscribe``, ``reset_offsets``,
``offset_moved``, ``drop_all``). What it starts in the background goes through ``spawn``,
the consumer's task set (consumer/member.py), which shutdown ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from aiorocketmq.client.consumer.allocate import STRATEGIES, allocate
from aiorocketmq.client.consumer.offsets import NOT_FOUND, OffsetStore
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.types import (
    ConsumeFromWhere,
    MessageModel,
    is_retry_topic,
    parse_consume_timestamp,
)
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.heartbeat import SubscriptionData
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.protocol.topic import Perm

if TYPE_CHECKING:
    from aiorocketmq.client.core.instance import ClientInstance

log = get_logger(__name__)

StartPull = Callable[[MessageQueue, ProcessQueue, int], None]
StopPulls = Callable[[list[MessageQueue]], Awaitable[None]]  # their pulls ended
Spawn = Callable[[Coroutine[Any, Any, None]], None]  # a task the consumer owns
OFFSET_MOVED_DELAY = 10.0  # s, DefaultMQPushConsumerImpl: OFFSET_ILLEGAL's commit waits


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """topicRouteData2TopicSubscribeInfo: every queue of every readable broker group."""
    return {
        MessageQueue(topic, qd.broker_name, q)
        for qd in route.queue_datas
        if qd.perm & Perm.READ
        for q in range(qd.read_queue_nums)
    }


class Rebalance:
    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        model: MessageModel,
        offsets: OffsetStore,
        start_pull: StartPull,
        stop_pulls: StopPulls,
        spawn: Spawn,
        *,
        orderly: bool,
        strategy: str,
        consume_from: ConsumeFromWhere,
        consume_timestamp: str,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"allocate_strategy {strategy!r}: one of {sorted(STRATEGIES)}")
        self.instance = instance
        self.group = group
        self.model = model
        self.offsets = offsets
        self.start_pull = start_pull
        self.stop_pulls = stop_pulls
        self.spawn = spawn
        self.orderly = orderly
        self.strategy = strategy
        self.consume_from = consume_from
        self.consume_timestamp = consume_timestamp
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.topic_queues: dict[str, set[MessageQueue]] = {}  # topicSubscribeInfoTable
        self.routes: dict[str, TopicRouteData] = {}
        self.table: dict[MessageQueue, ProcessQueue] = {}  # processQueueTable
        self.on_change: Callable[[], Awaitable[None]] | None = None  # bump subVersion, beat
        self.mutex = asyncio.Lock()
        self.closed = False  # the consumer shut down: no more rebalancing

    def route_changed(self, topic: str, route: TopicRouteData) -> None:
        self.routes[topic] = route
        self.topic_queues[topic] = subscribe_queues(topic, route)

    async def run(self) -> None:
        """doRebalance over every subscribed topic; one at a time."""
        async with self.mutex:
            if self.closed:
                return
            started: list[tuple[MessageQueue, ProcessQueue, int]] = []
            changed = False
            for topic in list(self.subscriptions):
                try:
                    changed |= await self._by_topic(topic, started)
                except (MQClientError, RemotingError) as exc:
                    if not is_retry_topic(topic):
                        log.warning("rebalance_failed", group=self.group, topic=topic,
                                    error=str(exc))  # fmt: skip
            for mq in [mq for mq in self.table if mq.topic not in self.subscriptions]:
                self.table.pop(mq).dropped = True  # truncateMessageQueueNotMyTopic
            if changed and self.on_change is not None:
                await self.on_change()  # messageQueueChanged: before the new queues pull
            for mq, pq, offset in started:
                if not pq.dropped:
                    self.start_pull(mq, pq, offset)

    async def _by_topic(
        self, topic: str, started: list[tuple[MessageQueue, ProcessQueue, int]]
    ) -> bool:
        mqs = self.topic_queues.get(topic)
        if mqs is None:  # ours: ask now rather than wait for the 30 s route poll (a retry
            route = await self.instance.fetch_route(topic, 3.0)  # topic appears later)
            if route is not None:
                self.route_changed(topic, route)
                mqs = self.topic_queues[topic]
        if mqs is None:
            if not is_retry_topic(topic):
                log.warning("rebalance_topic_not_exist", group=self.group, topic=topic)
            return False
        if self.model is MessageModel.BROADCASTING:
            return await self._update(topic, set(mqs), started)
        route = self.routes.get(topic)
        cids = await self.instance.consumer_ids(topic, self.group, route) if route else None
        if cids is None:
            log.warning("rebalance_no_consumer_list", group=self.group, topic=topic)
            return False
        try:
            strategy = STRATEGIES[self.strategy]
            mine = allocate(strategy, self.group, self.instance.client_id, list(mqs), cids)
        except ValueError as exc:  # RebalanceImpl: the strategy refused; keep what we own
            log.warning("allocate_failed", group=self.group, topic=topic, error=str(exc))
            return False
        return await self._update(topic, set(mine), started)

    async def _update(
        self,
        topic: str,
        mine: set[MessageQueue],
        started: list[tuple[MessageQueue, ProcessQueue, int]],
    ) -> bool:
        """updateProcessQueueTableInRebalance."""
        changed = False
        for mq, pq in list(self.table.items()):
            if mq.topic != topic:
                continue
            if mq not in mine or pq.pull_expired():
                pq.dropped = True
                if await self.remove_unneeded(mq, pq):
                    self.table.pop(mq, None)
                    changed = True
                    log.info("rebalance_queue_removed", group=self.group, queue=mq)
        for mq in sorted(mine - self.table.keys()):
            if self.orderly and not await self.lock(mq):
                log.info("rebalance_queue_not_locked", group=self.group, queue=mq)
                continue
            self.offsets.remove(mq)  # removeDirtyOffset
            try:
                offset = await self.compute_pull_from(mq)
            except (MQClientError, RemotingError) as exc:
                log.info("rebalance_offset_unknown", group=self.group, queue=mq, error=str(exc))
                continue
            pq = ProcessQueue(locked=True, last_lock=time.monotonic())
            self.table[mq] = pq
            started.append((mq, pq, offset))
            changed = True
            log.info("rebalance_queue_added", group=self.group, queue=mq, offset=offset)
        return changed

    async def remove_unneeded(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """RebalancePushImpl.removeUnnecessaryMessageQueue: commit, forget; orderly
        clustering consumers also give the broker lock back (later if messages wait)."""
        if not (self.orderly and self.model is MessageModel.CLUSTERING):
            await self.offsets.persist(mq)
            self.offsets.remove(mq)
            return True
        try:  # the batch being consumed finishes (and commits) before the lock goes
            await asyncio.wait_for(pq.consume_lock.acquire(), 1.0)
        except TimeoutError:
            pq.try_unlock_times += 1
            return False
        try:
            await self.offsets.persist(mq)
            self.offsets.remove(mq)
        finally:
            pq.consume_lock.release()
        delay = 20.0 if pq.has_temp_messages() else 0.0  # unlockDelay
        self.spawn(self._unlock_later([mq], delay))
        return True

    # ------------------------------------------------------------ the table, from outside

    def unsubscribe(self, topic: str) -> list[MessageQueue]:
        """The topic's subscription and queues dropped at once; the queues dropped."""
        self.subscriptions.pop(topic, None)
        gone = [mq for mq in self.table if mq.topic == topic]
        for mq in gone:
            self.table.pop(mq).dropped = True
        return gone

    def drop_all(self) -> None:
        """Shutdown: every owned queue stops being consumed."""
        for pq in self.table.values():
            pq.dropped = True

    async def reset_offsets(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """MQClientInstance.resetOffset: drop the topic's queues named in the table, wait for
        their pulls to end, commit the new offsets, and take the queues again."""
        dropped = []
        for mq, pq in list(self.table.items()):
            if mq.topic == topic and mq in offsets:
                pq.dropped = True
                pq.clear()
                dropped.append(mq)
        await self.stop_pulls(dropped)
        for mq, offset in offsets.items():
            self.offsets.update(mq, offset, False)
            await self.offsets.persist(mq)
            self.table.pop(mq, None)
        log.info("offsets_reset", group=self.group, topic=topic, queues=len(offsets))
        await self.run()

    def offset_moved(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        """A pull found the offset illegal (the queue was already dropped): after 10 s the
        broker's next offset is committed and the queue forgotten, so the next rebalance
        takes it afresh (DefaultMQPushConsumerImpl.pullMessage's OFFSET_ILLEGAL)."""
        self.spawn(self._moved(mq, pq, next_offset))

    async def _moved(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        await asyncio.sleep(OFFSET_MOVED_DELAY)
        self.offsets.update(mq, next_offset, False)
        await self.offsets.persist(mq)
        if self.table.get(mq) is pq:
            del self.table[mq]

    async def compute_pull_from(self, mq: MessageQueue) -> int:
        """computePullFromWhereWithException: the committed offset, else by
        ``consume_from_where`` (a retry topic starts at 0, or at its end by timestamp)."""
        last = await self.offsets.read(mq, from_store=True)
        if last >= 0:
            return last
        if last != NOT_FOUND:
            raise MQClientError(f"could not read the committed offset of {mq}")
        where = self.consume_from
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
            return 0 if is_retry_topic(mq.topic) else await self.queue_offset(mq, C.GET_MAX_OFFSET)
        if is_retry_topic(mq.topic):
            return await self.queue_offset(mq, C.GET_MAX_OFFSET)
        return await self.search_offset(mq, parse_consume_timestamp(self.consume_timestamp))

    async def queue_offset(self, mq: MessageQueue, code: int) -> int:
        addr = await self.instance.master_addr(mq.broker_name, mq.topic)
        request = api.queue_request(code, mq.topic, mq.queue_id)
        return api.parse_offset(await self.instance.remoting.invoke(addr, request, 5.0), addr)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        addr = await self.instance.master_addr(mq.broker_name, mq.topic)
        request = api.search_offset(mq.topic, mq.queue_id, timestamp_ms)
        return api.parse_offset(await self.instance.remoting.invoke(addr, request, 5.0), addr)

    # ------------------------------------------------------------ orderly locks

    async def lock(self, mq: MessageQueue) -> bool:
        return mq in await self._lock_on(mq.broker_name, mq.topic, [mq])

    async def lock_all(self) -> None:
        """Renew the locks of every owned queue, per broker (RebalanceImpl.lockAll)."""
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in self.table:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for broker, mqs in by_broker.items():
            held = await self._lock_on(broker, mqs[0].topic, mqs)
            now = time.monotonic()
            for mq in mqs:
                pq = self.table.get(mq)
                if pq is None:
                    continue
                if mq in held:
                    pq.locked, pq.last_lock = True, now
                elif pq.locked:
                    pq.locked = False
                    log.warning("queue_lock_lost", group=self.group, queue=mq)

    async def _lock_on(self, broker: str, topic: str, mqs: list[MessageQueue]) -> set[MessageQueue]:
        try:
            addr = await self.instance.master_addr(broker, topic)
            request = api.lock_batch(self.group, self.instance.client_id, mqs)
            held = api.parse_locked(await self.instance.remoting.invoke(addr, request, 1.0), addr)
        except (MQClientError, RemotingError) as exc:
            log.info("lock_failed", group=self.group, broker=broker, error=str(exc))
            return set()
        now = time.monotonic()
        for mq in held:
            pq = self.table.get(mq)
            if pq is not None:
                pq.locked, pq.last_lock = True, now
        return held

    async def unlock_all(self) -> None:
        await self._unlock_later(list(self.table), 0.0)

    async def _unlock_later(self, mqs: Iterable[MessageQueue], delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for broker, group in by_broker.items():
            with contextlib.suppress(MQClientError, RemotingError):
                addr = await self.instance.master_addr(broker, group[0].topic)
                request = api.unlock_batch(self.group, self.instance.client_id, group)
                await self.instance.remoting.invoke(addr, request, 1.0)
