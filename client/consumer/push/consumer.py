"""PushConsumer: RocketMQ's DefaultMQPushConsumer for asyncio (seed 003: pulling and long
polling; seed 004: ordered consumption).

    consumer = PushConsumer("my_group", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("Topic", "TagA || TagB")
    consumer.register_message_listener(on_messages)   # async def (msgs, context) -> status
    async with consumer:
        ...

or iterate: ``async for delivery in consumer: ...; delivery.ack()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiorocketmq.client.consumer.offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from aiorocketmq.client.consumer.push.consume import ConcurrentService, Listener
from aiorocketmq.client.consumer.push.consume_orderly import OrderlyService
from aiorocketmq.client.consumer.push.iteration import Delivery, Inbox
from aiorocketmq.client.consumer.push.pulling import Puller
from aiorocketmq.client.consumer.push.requests import PushRequests
from aiorocketmq.client.consumer.push.retry import Returns
from aiorocketmq.client.consumer.rebalance import Rebalance
from aiorocketmq.client.consumer.types import (
    LOCK_RENEW_INTERVAL,
    ConsumeConcurrentlyContext,
    ConsumerOptions,
    ConsumeStatus,
    MessageModel,
    half_an_hour_ago,
    retry_topic,
)
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.instance import ClientInstance, local_ip, namesrv_list
from aiorocketmq.client.core.validate import check_group
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.tasks import every

log = get_logger(__name__)


class PushConsumer:
    """DefaultMQPushConsumer: ``subscribe``, register a listener (or ``async for``), and the
    consumer pulls, calls it and commits, rebalancing with its group; see the module's help."""

    def __init__(self, group: str, namesrv_addr: str | None = None, **options: Any) -> None:
        check_group(group)
        self.group = group
        self.options = ConsumerOptions(**options)
        self._namesrv = namesrv_list(namesrv_addr)
        self._expressions: dict[str, str] = {}
        self._listener: Callable[..., Any] | None = None
        self.orderly = False
        self._inbox: Inbox | None = None
        self._instance: ClientInstance | None = None
        self._loops: list[asyncio.Task[None]] = []
        self.started_at = 0

    # ------------------------------------------------------------ configuration

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """``"*"`` for every message, or tags: ``"TagA || TagB"``. Takes effect at once when
        started (the brokers hear of it with the next heartbeat, sent now)."""
        self._expressions[topic] = expression or "*"
        if self._instance is not None:
            self._apply_subscriptions()
            self._spawn(self._after_subscription_change())

    def unsubscribe(self, topic: str) -> None:
        self._expressions.pop(topic, None)
        if self._instance is not None:
            self.rebalance.subscriptions.pop(topic, None)
            self._spawn(self._after_subscription_change())

    def register_message_listener(
        self, listener: Callable[..., Any], *, orderly: bool = False
    ) -> None:
        """``listener(msgs, context)`` returns ConsumeStatus (or, with ``orderly``,
        ConsumeOrderlyStatus); ``async def`` runs on the loop, a plain function in a thread."""
        if self._instance is not None:
            raise MQClientError("register the listener before start()")
        self._listener, self.orderly = listener, orderly

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._instance is not None:
            return
        if not self._expressions:
            raise MQClientError("subscribe to a topic before start()")
        if self._listener is None:  # iteration: a concurrent listener feeding the iterator
            self._inbox = Inbox(self.options.consume_concurrency)
            self._listener = self._inbox.listener
        o = self.options
        inst = ClientInstance.acquire(
            self._namesrv, o.instance_name, o.serialize_type,
            poll_interval=o.poll_name_server_interval / 1000,
            heartbeat_interval=o.heartbeat_broker_interval / 1000,
        )  # fmt: skip
        if self.group in inst.consumers:
            await inst.release()
            raise MQClientError(
                f"The consumer group[{self.group}] has been created before, specify another "
                "name please (or another instance_name for a second consumer of the group "
                "in this process)"
            )
        self._instance = inst
        self.started_at = int(time.time() * 1000)
        self.offsets = self._offset_store(inst)
        await self.offsets.load()
        self.rebalance = Rebalance(
            inst, self.group, o.message_model, self.offsets, self._start_pull,
            orderly=self.orderly, strategy=o.allocate_strategy,
            consume_from=o.consume_from_where,
            consume_timestamp=o.consume_timestamp or half_an_hour_ago(),
        )  # fmt: skip
        self.rebalance.on_change = self._queues_changed
        self.returns = Returns(inst, self.group, o)
        listener = self.listener = Listener(self._listener, o)
        if self.orderly:
            self.service: ConcurrentService | OrderlyService = OrderlyService(
                self.group, o, listener, self.offsets, self.returns.to_dlq, self.rebalance.lock
            )
        else:
            self.service = ConcurrentService(self.group, o, listener, self.offsets,
                                             self.returns.send_back)  # fmt: skip
        self.puller = Puller(inst, self.group, o, self.rebalance, self.service.submit,
                             orderly=self.orderly)  # fmt: skip
        self._apply_subscriptions()
        self.requests = PushRequests(self)
        inst.consumers[self.group] = self
        self.requests.plug(inst)
        await self._after_subscription_change()
        self._loops = [
            self._spawn(every(o.rebalance_interval / 1000, self.rebalance.run, name="rebalance")),
            self._spawn(
                every(
                    o.persist_consumer_offset_interval / 1000,
                    self.persist_offsets,
                    name="persist_offsets",
                )
            ),
        ]
        if isinstance(self.service, ConcurrentService):  # cleanExpireMsg
            sweep = self.service.clean_expired
            self._loops.append(self._spawn(every(o.consume_timeout * 60.0, lambda: sweep(
                self.rebalance.table.values()), name="clean_expired")))  # fmt: skip
        if self.orderly and o.message_model is MessageModel.CLUSTERING:
            self._loops.append(
                self._spawn(every(LOCK_RENEW_INTERVAL, self.rebalance.lock_all, name="lock_all"))
            )

    async def shutdown(self) -> None:
        """Stop pulling, let listener calls under way finish, commit offsets, unlock orderly
        queues, unregister from the brokers."""
        inst = self._instance
        if inst is None:
            return
        self.requests.unplug(inst)
        for task in (*self._loops, *self.requests.tasks):
            task.cancel()
        await asyncio.gather(*self._loops, *self.requests.tasks, return_exceptions=True)
        async with self.rebalance.mutex:  # a rebalance under way finishes first
            self.rebalance.closed = True
        await self.puller.stop()
        if isinstance(self.service, ConcurrentService):
            self.service.closing = True
        if self._inbox is not None:
            self._inbox.close()
        await self.service.drain(self.options.await_termination_millis_when_shutdown / 1000)
        self.listener.close(wait=False)
        await self.persist_offsets()
        if self.orderly and self.options.message_model is MessageModel.CLUSTERING:
            await self.rebalance.unlock_all()
        for pq in self.rebalance.table.values():
            pq.dropped = True
        await inst.unregister_consumer(self.group)
        await self.returns.close()
        self._instance = None
        await inst.release()

    async def __aenter__(self) -> PushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ------------------------------------------------------------ iteration

    def __aiter__(self) -> AsyncIterator[Delivery]:
        if self._inbox is None:
            raise MQClientError("iteration needs a started consumer without a listener")
        return self._inbox.__aiter__()

    # ------------------------------------------------------------ what the instance asks

    def consumer_data(self) -> ConsumerData:
        o = self.options
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=o.message_model.value,
            consume_from_where=o.consume_from_where.value,
            subscriptions=list(self.rebalance.subscriptions.values()),
            unit_mode=o.unit_mode,
        )

    def subscribed_topics(self) -> set[str]:
        return set(self.rebalance.subscriptions)

    def route_changed(self, topic: str, route: TopicRouteData) -> None:
        self.rebalance.route_changed(topic, route)

    # ------------------------------------------------------------ internals

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        return task

    def _offset_store(self, inst: ClientInstance) -> OffsetStore:
        if self.options.message_model is MessageModel.BROADCASTING:
            owner = f"{local_ip()}@{self.options.instance_name}"
            return LocalOffsetStore(self.options.offset_store_dir, owner, self.group)
        return RemoteOffsetStore(inst, self.group)

    def _apply_subscriptions(self) -> None:
        """The subscriptions, plus ``%RETRY%<group>`` for clustering (copySubscription)."""
        version = time.time_ns() // 1_000_000
        subs = self.rebalance.subscriptions
        wanted = dict(self._expressions)
        if self.options.message_model is MessageModel.CLUSTERING:
            wanted.setdefault(retry_topic(self.group), "*")
        for topic, expr in wanted.items():
            old = subs.get(topic)
            if old is None or old.sub_string != (expr.strip() or "*"):
                subs[topic] = SubscriptionData.build(topic, expr, "TAG", version)

    async def _after_subscription_change(self) -> None:
        """Routes of the subscribed topics, a heartbeat, then a rebalance (as start() does)."""
        inst = self.instance
        for topic in list(self.rebalance.subscriptions):
            with contextlib.suppress(MQClientError):
                route = await inst.fetch_route(topic, 3.0)
                if route is not None:
                    self.rebalance.route_changed(topic, route)
        await inst.heartbeat_all()
        await self.rebalance.run()

    async def _queues_changed(self) -> None:
        """messageQueueChanged: a new subVersion, told to the brokers before pulling."""
        version = time.time_ns() // 1_000_000
        for sub in self.rebalance.subscriptions.values():
            sub.sub_version = max(version, sub.sub_version + 1)
        await self.instance.heartbeat_all()

    def _start_pull(self, mq: Any, pq: Any, offset: int) -> None:
        self.puller.start(mq, pq, offset)

    async def persist_offsets(self) -> None:
        await self.offsets.persist_all(list(self.rebalance.table))

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError("the consumer is not started: use `async with` or start()")
        return self._instance


__all__ = ["ConsumeConcurrentlyContext", "ConsumeStatus", "Delivery", "PushConsumer"]
