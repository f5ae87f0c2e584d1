"""PushConsumer: RocketMQ's DefaultMQPushConsumer for asyncio (seed 003: pulling and long
polling; seed 004: ordered consumption).

    consumer = PushConsumer("my_group", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("Topic", "TagA || TagB")        # or MessageSelector.by_sql("a > 5")
    consumer.register_message_listener(on_messages)   # async def (msgs, context) -> status
    async with consumer:
        ...

or iterate: ``async for delivery in consumer: ...; delivery.ack()``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Unpack, overload

from aiorocketmq.client.consumer.member import GroupMember, MemberSettings
from aiorocketmq.client.consumer.offsets import OffsetStore
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.push.consume import ConcurrentService, Listener
from aiorocketmq.client.consumer.push.consume_orderly import OrderlyService
from aiorocketmq.client.consumer.push.iteration import Delivery, Inbox
from aiorocketmq.client.consumer.push.pulling import Puller
from aiorocketmq.client.consumer.push.requests import PushRequests
from aiorocketmq.client.consumer.push.retry import Returns
from aiorocketmq.client.consumer.push.traced import TracedListener
from aiorocketmq.client.consumer.rebalance import Rebalance
from aiorocketmq.client.consumer.selector import MessageSelector, selector_of
from aiorocketmq.client.consumer.types import (
    LOCK_RENEW_INTERVAL,
    ConcurrentListener,
    ConsumeConcurrentlyContext,
    ConsumerOptions,
    ConsumeStatus,
    MessageModel,
    OrderlyListener,
    PushOptions,
    retry_topic,
)
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.instance import ClientInstance, namesrv_list
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.client.core.security import Security
from aiorocketmq.client.core.validate import check_group
from aiorocketmq.client.trace import tracing
from aiorocketmq.client.trace.hooks import ConsumeTrace
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.tasks import every

log = get_logger(__name__)


@dataclass(slots=True)
class _Running:
    """What a started consumer is made of (built together by start())."""

    member: GroupMember
    listener: Listener
    returns: Returns
    service: ConcurrentService | OrderlyService
    puller: Puller


class PushConsumer:
    """DefaultMQPushConsumer: joins ``group``, takes its share of the subscribed topics'
    queues, pulls them and hands the messages to a listener (or ``async for``); options are
    ConsumerOptions's fields, keyword-only, with Java's names and defaults, and the
    security keywords every client takes: ``access_key``/``secret_key`` (and
    ``security_token``) sign every request (ACL 1.0); ``tls=True`` is TLS verifying
    nothing, as Apache's client by default, or pass an ``ssl.SSLContext`` (see
    ``Producer``). ``trace=True`` (and ``trace_topic``) records each listener call as
    Java's SubBefore / SubAfter trace records (see ``Producer``)."""

    def __init__(
        self, group: str, namesrv_addr: str | None = None, **options: Unpack[PushOptions]
    ) -> None:
        check_group(group)
        self.group = group
        self.options = ConsumerOptions(**options)
        self._security = Security.of(self.options)  # checked now, as the other options
        self._namesrv = namesrv_list(namesrv_addr)
        self._expressions: dict[str, MessageSelector] = {}
        self._listener: ConcurrentListener | OrderlyListener | None = None
        self.orderly = False
        self._inbox: Inbox | None = None
        self._run: _Running | None = None
        self.trace_dispatcher = tracing(group, "CONSUME", self._namesrv, self.options)

    # ------------------------------------------------------------ configuration

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """``"*"`` for every message, tags (``"TagA || TagB"``), or a selector:
        ``MessageSelector.by_sql("a > 5")`` is filtered by the brokers, exactly (the consumer
        does not re-check). Takes effect at once when started (the brokers hear of it with
        the next heartbeat, sent now); an SQL92 one is checked with the brokers at start."""
        self._expressions[topic] = selector_of(expression)
        if self._run is not None:
            self._apply_subscriptions()
            self._run.member.tasks.spawn(self._after_subscription_change())

    def unsubscribe(self, topic: str) -> None:
        self._expressions.pop(topic, None)
        if self._run is not None:
            self._run.member.rebalance.subscriptions.pop(topic, None)
            self._run.member.tasks.spawn(self._after_subscription_change())

    @overload
    def register_message_listener(
        self, listener: ConcurrentListener, *, orderly: Literal[False] = False
    ) -> None: ...
    @overload
    def register_message_listener(
        self, listener: OrderlyListener, *, orderly: Literal[True]
    ) -> None: ...
    def register_message_listener(
        self, listener: ConcurrentListener | OrderlyListener, *, orderly: bool = False
    ) -> None:
        """``listener(msgs, context)`` returns ConsumeStatus (or, with ``orderly``,
        ConsumeOrderlyStatus); ``async def`` runs on the loop, a plain function in a thread."""
        if self._run is not None:
            raise MQClientError("register the listener before start()")
        self._listener, self.orderly = listener, orderly

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Join the group and start consuming. MQConnectionError when no name server
        answers (within its 3 s timeout each); MQClientError for a group this instance
        already has a consumer of."""
        if self._run is not None:
            return
        if not self._expressions:
            raise MQClientError("subscribe to a topic before start()")
        if self._listener is None:  # iteration: a concurrent listener feeding the iterator
            self._inbox = Inbox(self.options.consume_concurrency)
            self._listener = self._inbox.listener
        o = self.options
        settings = MemberSettings(
            instance_name=o.instance_name, serialize_type=o.serialize_type,
            message_model=o.message_model, offset_store_dir=o.offset_store_dir,
            allocate_strategy=o.allocate_strategy, consume_from_where=o.consume_from_where,
            consume_timestamp=o.consume_timestamp, orderly=self.orderly,
            poll_interval=o.poll_name_server_interval / 1000,
            heartbeat_interval=o.heartbeat_broker_interval / 1000, security=self._security,
        )  # fmt: skip
        member = await GroupMember.open(
            self.group, self._namesrv, settings, self._start_pull, self._stop_pulls
        )
        rb = member.rebalance
        rb.on_change = self._queues_changed
        inst = member.instance
        returns = Returns(inst, self.group, o)
        listener = (
            Listener(self._listener, o)
            if self.trace_dispatcher is None
            else (
                TracedListener(self._listener, o, ConsumeTrace(self.trace_dispatcher, self.group))
            )
        )
        service: ConcurrentService | OrderlyService
        if self.orderly:
            service = OrderlyService(self.group, o, listener, member.offsets, returns.to_dlq,
                                     rb.lock)  # fmt: skip
        else:
            service = ConcurrentService(self.group, o, listener, member.offsets,
                                        returns.send_back)  # fmt: skip
        puller = Puller(inst, self.group, o, rb, service.submit, orderly=self.orderly)
        requests = PushRequests(member, o, listener, orderly=self.orderly)
        self._run = _Running(member, listener, returns, service, puller)
        self._apply_subscriptions()
        try:
            await member.register(self, reset_offset=requests.reset, answers=requests.answers())
        except MQClientError:
            self._run = None
            listener.close(wait=False)
            raise
        try:
            await member.fetch_routes(list(rb.subscriptions), strict=True)
            await member.check_in_brokers(rb.subscriptions.values())  # checkClientInBroker
        except MQClientError:
            await self.shutdown()
            raise
        await member.join()
        await rb.run()
        self._start_loops(member, service)
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.start()

    def _start_loops(
        self, member: GroupMember, service: ConcurrentService | OrderlyService
    ) -> None:
        o, rb, spawn = self.options, member.rebalance, member.tasks.spawn
        spawn(every(o.rebalance_interval / 1000, rb.run, name="rebalance"))
        spawn(every(o.persist_consumer_offset_interval / 1000, self.persist_offsets,
                    name="persist_offsets"))  # fmt: skip
        if isinstance(service, ConcurrentService):  # cleanExpireMsg
            sweep = service.clean_expired
            spawn(every(o.consume_timeout * 60.0, lambda: sweep(rb.table.values()),
                        name="clean_expired"))  # fmt: skip
        if self.orderly and o.message_model is MessageModel.CLUSTERING:
            spawn(every(LOCK_RENEW_INTERVAL, rb.lock_all, name="lock_all"))

    async def shutdown(self) -> None:
        """Stop pulling, let listener calls under way finish, commit offsets, unlock orderly
        queues, unregister from the brokers."""
        run = self._run
        if run is None:
            return
        member, rb = run.member, run.member.rebalance
        await member.tasks.close()  # timers, answers under way, subscription changes
        async with rb.mutex:  # a rebalance under way finishes first
            rb.closed = True
        await run.puller.stop()
        if isinstance(run.service, ConcurrentService):
            run.service.closing = True
        if self._inbox is not None:
            self._inbox.close()
        await run.service.drain(self.options.await_termination_millis_when_shutdown / 1000)
        run.listener.close(wait=False)
        await self.persist_offsets()
        if self.orderly and self.options.message_model is MessageModel.CLUSTERING:
            await rb.unlock_all()
        rb.drop_all()
        await run.returns.close()
        await member.leave()  # unregistered first: heartbeats stop asking for consumer_data
        self._run = None
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.stop()

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

    # ------------------------------------------------------------ while started

    def _running(self) -> _Running:
        if self._run is None:
            raise MQClientError("the consumer is not started: use `async with` or start()")
        return self._run

    @property
    def instance(self) -> ClientInstance:
        return self._running().member.instance

    @property
    def rebalance(self) -> Rebalance:
        """The queues this consumer owns (``rebalance.table``) and its subscriptions."""
        return self._running().member.rebalance

    @property
    def offsets(self) -> OffsetStore:
        return self._running().member.offsets

    @property
    def started_at(self) -> int:
        return self._running().member.started_at

    async def persist_offsets(self) -> None:
        await self.offsets.persist_all(list(self.rebalance.table))

    # ------------------------------------------------------------ internals

    def _apply_subscriptions(self) -> None:
        """The subscriptions, plus ``%RETRY%<group>`` for clustering (copySubscription)."""
        version = time.time_ns() // 1_000_000
        subs = self.rebalance.subscriptions
        wanted = dict(self._expressions)
        if self.options.message_model is MessageModel.CLUSTERING:
            wanted.setdefault(retry_topic(self.group), MessageSelector.by_tag())
        for topic, selector in wanted.items():
            old = subs.get(topic)
            if (
                old is None
                or old.sub_string != selector.expression.strip()
                or old.expression_type != selector.expression_type
            ):
                subs[topic] = selector.subscription(topic, version)

    async def _after_subscription_change(self) -> None:
        """Routes of the subscribed topics, a heartbeat, then a rebalance (as start() does)."""
        member = self._running().member
        await member.fetch_routes(list(member.rebalance.subscriptions))
        await member.instance.heartbeat_all()
        await member.rebalance.run()

    async def _queues_changed(self) -> None:
        """messageQueueChanged: a new subVersion, told to the brokers before pulling."""
        version = time.time_ns() // 1_000_000
        for sub in self.rebalance.subscriptions.values():
            sub.sub_version = max(version, sub.sub_version + 1)
        await self.instance.heartbeat_all()

    def _start_pull(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        self._running().puller.start(mq, pq, offset)

    async def _stop_pulls(self, mqs: list[MessageQueue]) -> None:
        await self._running().puller.stop_queues(mqs)


__all__ = ["ConsumeConcurrentlyContext", "ConsumeStatus", "Delivery", "PushConsumer"]
