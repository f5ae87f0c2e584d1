"""PullConsumer: RocketMQ's DefaultLitePullConsumer for asyncio. The application asks for
messages (``poll``); background tasks keep a bounded buffer of them filled.

    consumer = PullConsumer("my_group", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("Topic", "TagA || TagB")       # queues shared with the group, or
    # consumer.assign(await consumer.fetch_message_queues("Topic"))  # these queues, alone
    async with consumer:
        while True:
            for msg in await consumer.poll(timeout=1.0):
                ...
            await consumer.commit()        # or leave it to auto_commit (every 5 s)

What ``poll`` returned counts as consumed. With ``auto_commit`` (the default) a poll commits
what earlier polls returned, at most every ``auto_commit_interval_millis``, and shutdown
commits the rest; the committed offsets reach the brokers every
``persist_consumer_offset_interval`` ms, on ``commit()`` and at shutdown.

Bulk readers call ``pull_raw`` for one pull's records as the broker sent them (see
consumer/lite/raw.py), without background pulls.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Unpack

from aiorocketmq.client.consumer.allocate import STRATEGIES
from aiorocketmq.client.consumer.lite.offsets import LiteOffsets
from aiorocketmq.client.consumer.lite.options import FLAG_LITE_PULL, LitePullOptions, PullOptions
from aiorocketmq.client.consumer.lite.raw import RawPull, raw_from_reply
from aiorocketmq.client.consumer.lite.requests import LiteRequests
from aiorocketmq.client.consumer.lite.tasks import MAX_TEMPLATES, Mode, PullTasks, QueueState
from aiorocketmq.client.consumer.member import GroupMember, MemberSettings
from aiorocketmq.client.consumer.offsets import OffsetStore
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.rebalance import Rebalance, subscribe_queues
from aiorocketmq.client.consumer.selector import MessageSelector, selector_of
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.instance import ClientInstance, namesrv_list
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.client.core.security import Security
from aiorocketmq.client.core.validate import check_group
from aiorocketmq.client.trace import tracing
from aiorocketmq.client.trace.hooks import ConsumeTrace
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.message import MessageExt
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.tasks import every

log = get_logger(__name__)

QueueListener = Callable[[str, set[MessageQueue]], None]  # TopicMessageQueueChangeListener


NOT_RUNNING = "The consumer not running, please start it first."
NOTHING_TO_READ = "Nothing to poll: subscribe to a topic or assign queues first."


class PullConsumer:
    """DefaultLitePullConsumer: ``poll()`` returns what background pulls of the subscribed
    (rebalanced with the group) or assigned queues found; options are LitePullOptions's
    fields, keyword-only, with Java's names and defaults, and the security keywords every
    client takes: ``access_key``/``secret_key`` (and ``security_token``) sign every request
    (ACL 1.0); ``tls=True`` is TLS verifying nothing, as Apache's client by default, or pass
    an ``ssl.SSLContext`` (see ``Producer``). ``trace=True`` (and ``trace_topic``) records
    each pull that found messages as Java's SubBefore / SubAfter trace records, as
    DefaultLitePullConsumer with enableMsgTrace."""

    def __init__(
        self, group: str, namesrv_addr: str | None = None, **options: Unpack[PullOptions]
    ) -> None:
        check_group(group)
        self.group = group
        self.options = o = LitePullOptions(**options)
        if o.allocate_strategy not in STRATEGIES:
            choices = sorted(STRATEGIES)
            raise ValueError(f"allocate_strategy {o.allocate_strategy!r}: one of {choices}")
        self._security = Security.of(o)  # checked now, as the other options
        self._namesrv = namesrv_list(namesrv_addr)
        self._mode = Mode.NONE
        self._expressions: dict[str, MessageSelector] = {}  # subscribe
        self._assign_subs: dict[str, SubscriptionData] = {}  # setSubExpressionForAssign
        self._raw_subs: dict[tuple[str, str | MessageSelector], SubscriptionData] = {}  # pull_raw
        self._queue_listeners: dict[str, QueueListener] = {}
        self._known_queues: dict[str, set[MessageQueue]] = {}
        self.tasks = PullTasks(group, o, self._subscription, self._first_offset)
        self._offsets = LiteOffsets(group, o, self.tasks, self._started,
                                    lambda: self._mode is Mode.SUBSCRIBE)  # fmt: skip
        self._member: GroupMember | None = None
        self._shut_down = False
        self.trace_dispatcher = tracing(group, "CONSUME", self._namesrv, o)
        if self.trace_dispatcher is not None:
            self.tasks.trace = ConsumeTrace(self.trace_dispatcher, group)

    # ------------------------------------------------------------ what to read

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """The group shares the topic's queues (rebalanced); ``"*"``, ``"TagA || TagB"`` or
        a selector (``MessageSelector.by_sql("a > 5")``: filtered by the brokers, exactly;
        checked with them at start)."""
        if not topic:
            raise ValueError("Topic can not be null or empty.")
        self._set_mode(Mode.SUBSCRIBE)
        selector = selector_of(expression)
        sub = selector.subscription(topic, time.time_ns() // 1_000_000)
        self._expressions[topic] = selector
        if self._member is not None:
            self._member.rebalance.subscriptions[topic] = sub
            self._member.tasks.spawn(self._after_subscription_change())

    def unsubscribe(self, topic: str) -> None:
        self._expressions.pop(topic, None)
        member = self._member
        if member is None:
            return
        member.rebalance.unsubscribe(topic)
        for mq in [mq for mq in self.tasks.assigned if mq.topic == topic]:
            self.tasks.drop(mq)
        member.tasks.spawn(member.instance.heartbeat_all())

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Read exactly these queues (no rebalance); replaces an earlier assignment."""
        wanted = set(queues)
        if not wanted:
            raise ValueError("Message queues can not be null or empty.")
        self._set_mode(Mode.ASSIGN)
        for mq in [mq for mq in self.tasks.assigned if mq not in wanted]:
            self.tasks.drop(mq)
        for mq in sorted(wanted - self.tasks.assigned.keys()):
            self.tasks.add(mq, QueueState(ProcessQueue()))

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        """Tags to read of an assigned topic (default ``"*"``); before start only."""
        if not expression or not expression.strip():
            raise ValueError("subExpression can not be null or empty.")
        if self._member is not None:
            raise MQClientError("setAssignTag only can be called before start.")
        self._set_mode(Mode.ASSIGN)
        self._assign_subs[topic] = SubscriptionData.build(topic, expression)

    def register_topic_message_queue_change_listener(
        self, topic: str, listener: QueueListener
    ) -> None:
        """``listener(topic, queues)`` when the topic's queues change, checked every
        ``topic_metadata_check_interval_millis``."""
        self._queue_listeners[topic] = listener
        if self._member is not None:
            self._member.tasks.spawn(self._remember_queues(topic))

    def assignment(self) -> set[MessageQueue]:
        return set(self.tasks.assigned)

    def _set_mode(self, mode: Mode) -> None:
        if self._mode is Mode.NONE:
            self._mode = mode
        elif self._mode is not mode:
            raise MQClientError("Subscribe and assign are mutually exclusive.")

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Join the group and start the pulls. MQConnectionError when no name server
        answers for the subscribed or assigned topics (within its 3 s timeout each);
        MQClientError for a group this instance already has a consumer of."""
        if self._member is not None:
            return
        if self._shut_down:
            raise MQClientError("The PullConsumer service state not OK, maybe started once")
        o = self.options
        # compat: Java's lite consumer ends its client id with "@STREAM" and tags requests
        # REQ_T=0 (enableStreamRequestType); ours shares the process's client instance
        settings = MemberSettings(
            instance_name=o.instance_name, serialize_type=o.serialize_type,
            message_model=o.message_model, offset_store_dir=o.offset_store_dir,
            allocate_strategy=o.allocate_strategy, consume_from_where=o.consume_from_where,
            consume_timestamp=o.consume_timestamp, security=self._security,
        )  # fmt: skip
        member = await GroupMember.open(
            self.group, self._namesrv, settings, self._queue_taken, self._stop_pulls
        )
        version = time.time_ns() // 1_000_000
        for topic, selector in self._expressions.items():
            member.rebalance.subscriptions[topic] = selector.subscription(topic, version)
        requests = LiteRequests(member, o)
        self._member, self.tasks.instance = member, member.instance
        try:  # MQClientInstance.registerConsumer
            await member.register(self, ids_changed=self._rebalance_now,
                                  answers=requests.answers())  # fmt: skip
        except MQClientError:
            self._member = self.tasks.instance = None
            raise
        try:
            await self._after_running(member)
        except MQClientError:  # no name server answered; a broker refused the subscription
            await self.shutdown()
            raise
        spawn = member.tasks.spawn
        spawn(every(o.rebalance_interval / 1000, self.do_rebalance, name="rebalance"))
        spawn(every(o.persist_consumer_offset_interval / 1000, self.persist_offsets,
                    name="persist_offsets"))  # fmt: skip
        spawn(every(o.topic_metadata_check_interval_millis / 1000, self._check_queues,
                    name="topic_metadata", initial_delay=10.0))  # fmt: skip
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.start()

    async def _after_running(self, member: GroupMember) -> None:
        """operateAfterRunning: routes, a heartbeat, then the first queues pulled."""
        if self._mode is Mode.SUBSCRIBE:
            await member.fetch_routes(list(member.rebalance.subscriptions), strict=True)
            await member.check_in_brokers(member.rebalance.subscriptions.values())
            await member.join()
            await self.do_rebalance()
        else:
            await member.fetch_routes(sorted({mq.topic for mq in self.tasks.assigned}),
                                      strict=True)  # fmt: skip
            await member.join()
            for mq in sorted(self.tasks.assigned):
                self.tasks.start(mq)
        for topic in list(self._queue_listeners):
            with contextlib.suppress(MQClientError):
                await self._remember_queues(topic)

    async def shutdown(self) -> None:
        """Stop pulling, commit (with ``auto_commit``, what poll returned), unregister."""
        member = self._member
        if member is None:
            return
        await member.tasks.close()
        await self.tasks.close()
        if self.options.auto_commit:  # compat: Java persists only what was committed before
            self._offsets.commit_consumed()
        await self.persist_offsets()
        for state in self.tasks.assigned.values():
            state.pq.dropped = True
        await member.leave()  # unregistered first: heartbeats stop asking for consumer_data
        self._member = self.tasks.instance = None
        self._shut_down = True
        self.tasks.ready.set()  # pollers waiting return []
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.stop()

    async def __aenter__(self) -> PullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ------------------------------------------------------------ reading

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The messages of one pull (up to ``pull_batch_size``, in queue order), waiting up to
        ``timeout`` seconds (default ``poll_timeout_millis``); [] when none came.
        MQClientError when nothing is subscribed or assigned."""
        self._started()
        if not self._expressions and not self.tasks.assigned:
            # ours: Java's poll returns nothing, forever; Kafka's raises IllegalStateException
            raise MQClientError(NOTHING_TO_READ)
        wait = self.options.poll_timeout_millis / 1000 if timeout is None else timeout
        if wait < 0:
            raise ValueError("Timeout must not be negative")
        if self.options.auto_commit:
            self._offsets.maybe_auto_commit()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while self._member is not None:
            msgs = self.tasks.take()
            if msgs is not None:
                return msgs
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.tasks.ready.wait(), remaining)
        return []

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        self.tasks.pause(queues, True)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self.tasks.pause(queues, False)

    async def pull_raw(
        self,
        queue: MessageQueue,
        offset: int,
        max_nums: int | None = None,
        timeout: float | None = None,
        *,
        expression: str | MessageSelector = "*",
        suspend_ms: int = 0,
        bulk: bool = False,
    ) -> RawPull:
        """One pull of ``queue`` at ``offset``, its records as the broker sent them, for bulk
        readers (no background pull, nothing committed). A tag ``expression`` is matched by
        the broker on tag hash codes only: ``RawPull.messages(expression=...)`` or
        ``lite_raw.keep_tags`` filter exactly; an SQL92 selector is matched by the broker
        exactly (nothing to re-check). ``suspend_ms`` > 0 lets the broker hold the
        pull that long for a message to arrive; ``timeout`` (seconds) bounds the request
        (default ``consumer_pull_timeout_millis`` plus the suspension). ``bulk`` (ours):
        a broker of ours serves up to ``max_nums`` (at most 1,024) from memory within its
        byte cap (maxTransferBytesOnMessageInMemory, 256 KiB), not its count cap
        (maxTransferCountOnMessageInMemory, 32); Apache's brokers answer as without it."""
        nums = self.options.pull_batch_size if max_nums is None else max_nums
        sub, flag, timeout = self._raw_pull(
            queue, [(offset, nums)], timeout, expression, suspend_ms
        )
        reply = await self.tasks.pull(queue, offset, sub, nums, flag, suspend_ms, timeout, bulk)
        return raw_from_reply(queue, reply)

    async def pull_raw_many(
        self,
        queue: MessageQueue,
        pulls: Sequence[tuple[int, int]],
        timeout: float | None = None,
        *,
        expression: str | MessageSelector = "*",
        bulk: bool = False,
    ) -> list[RawPull | MQClientError]:
        """``pull_raw`` of ``queue`` at each ``(offset, max_nums)`` of ``pulls``, all sent
        before any answer is awaited (one write, no task per pull: a bulk reader's window of
        pulls); per pull, in order, its RawPull or the error ``pull_raw`` would raise.
        ``timeout`` bounds the whole call; ``bulk`` as ``pull_raw``'s."""
        sub, flag, timeout = self._raw_pull(queue, pulls, timeout, expression, 0)
        answers = await self.tasks.pull_many(queue, list(pulls), sub, flag, 0, timeout, bulk)
        return [a if isinstance(a, MQClientError) else raw_from_reply(queue, a) for a in answers]

    def _raw_pull(
        self,
        queue: MessageQueue,
        pulls: Sequence[tuple[int, int]],
        timeout: float | None,
        expression: str | MessageSelector,
        suspend_ms: int,
    ) -> tuple[SubscriptionData, int, float]:
        """A raw pull's checks; its subscription, flags and timeout."""
        self._started()
        for offset, nums in pulls:
            if offset < 0:
                raise MQClientError("offset < 0")
            if nums <= 0:
                raise MQClientError("maxNums <= 0")
        sub = self._raw_subs.get((queue.topic, expression))
        if sub is None:  # FilterAPI.build parses the expression: once per topic and selector
            if len(self._raw_subs) >= MAX_TEMPLATES:
                self._raw_subs.clear()
            sub = selector_of(expression).subscription(queue.topic)
            self._raw_subs[(queue.topic, expression)] = sub
        flag = api.FLAG_SUBSCRIPTION | FLAG_LITE_PULL | (api.FLAG_SUSPEND if suspend_ms else 0)
        if timeout is None:
            timeout = (self.options.consumer_pull_timeout_millis + suspend_ms) / 1000
        return sub, flag, timeout

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, from a name server (fetchSubscribeMessageQueues)."""
        route = await self._started().instance.fetch_route(topic, 3.0)
        queues = subscribe_queues(topic, route) if route is not None else set()
        if not queues:
            raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
        return sorted(queues)

    async def list_topics(self, timeout: float = 3.0) -> list[str]:
        """Every topic the name servers know, sorted (the first name server that answers;
        DefaultMQAdminExt.fetchAllTopicList's request)."""
        return await self._started().instance.topic_list(timeout)

    # ------------------------------------------------------------ what the instance asks

    def consumer_data(self) -> ConsumerData:
        o = self.options
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model=o.message_model.value,
            consume_from_where="CONSUME_FROM_LAST_OFFSET",  # the lite impl's consumeFromWhere()
            subscriptions=list(self.rebalance.subscriptions.values()),
            unit_mode=o.unit_mode,
        )

    def subscribed_topics(self) -> set[str]:
        """The subscribed topics, and the assigned ones (ours: their routes stay fresh)."""
        return set(self.rebalance.subscriptions) | {mq.topic for mq in self.tasks.assigned}

    def route_changed(self, topic: str, route: TopicRouteData) -> None:
        self.rebalance.route_changed(topic, route)

    # ------------------------------------------------------------ internals

    # ------------------------------------------------------------ offsets (LiteOffsets)

    async def commit(
        self, offsets: Mapping[MessageQueue, int] | None = None, *, persist: bool = True
    ) -> None:
        """commitSync: what poll returned counts as consumed (or the given offset of each
        queue: the next message to read); with ``persist`` written to the brokers now."""
        await self._offsets.commit(offsets, persist=persist)

    async def committed(self, queue: MessageQueue) -> int:
        """The committed offset of ``queue``: this consumer's, else the broker's; -1 when
        there is none."""
        return await self._offsets.committed(queue)

    async def seek(self, queue: MessageQueue, offset: int) -> None:
        """Read ``queue`` from ``offset`` next (between its min and max offsets)."""
        await self._offsets.seek(queue, offset)

    async def seek_to_begin(self, queue: MessageQueue) -> None:
        await self._offsets.seek_to_begin(queue)

    async def seek_to_end(self, queue: MessageQueue) -> None:
        await self._offsets.seek_to_end(queue)

    async def min_offset(self, queue: MessageQueue) -> int:
        """The queue's first offset on its broker."""
        return await self._offsets.min_offset(queue)

    async def max_offset(self, queue: MessageQueue) -> int:
        """One past the queue's newest message."""
        return await self._offsets.max_offset(queue)

    async def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first message stored at or after the time."""
        return await self._offsets.offset_for_timestamp(queue, timestamp_ms)

    async def offsets_for_times(
        self, timestamps: Mapping[MessageQueue, int]
    ) -> dict[MessageQueue, int]:
        return await self._offsets.offsets_for_times(timestamps)

    async def persist_offsets(self) -> None:
        """The committed offsets of the assigned queues, written out now."""
        await self._offsets.persist()

    # ------------------------------------------------------------ while started

    def _started(self) -> GroupMember:
        if self._member is None:
            raise MQClientError(NOT_RUNNING)
        return self._member

    @property
    def instance(self) -> ClientInstance:
        return self._started().instance

    @property
    def rebalance(self) -> Rebalance:
        return self._started().rebalance

    @property
    def offsets(self) -> OffsetStore:
        return self._started().offsets

    @property
    def started_at(self) -> int:
        return self._started().started_at

    # ------------------------------------------------------------ internals

    def _subscription(self, topic: str) -> SubscriptionData | None:
        if self._mode is Mode.SUBSCRIBE:
            return self.rebalance.subscriptions.get(topic)
        sub = self._assign_subs.get(topic)
        if sub is None:
            sub = self._assign_subs[topic] = SubscriptionData.build(topic, "*")
        return sub

    async def _first_offset(self, mq: MessageQueue) -> int:
        """fetchConsumeOffset: the committed offset, else where consume_from_where says."""
        return await self.rebalance.compute_pull_from(mq)

    def _queue_taken(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        """The rebalance gave this consumer ``mq`` (updateAssignQueueAndStartPullTask)."""
        self.tasks.add(mq, QueueState(pq, pull_offset=offset))

    async def _stop_pulls(self, mqs: list[MessageQueue]) -> None:
        for mq in mqs:
            self.tasks.drop(mq)

    def _rebalance_now(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED: rebalance at once (RebalanceService.wakeup)."""
        if self._member is not None:
            self._member.tasks.spawn(self.do_rebalance())

    async def do_rebalance(self) -> None:
        if self._mode is not Mode.SUBSCRIBE:
            return
        await self.rebalance.run()
        for mq, state in list(self.tasks.assigned.items()):  # queues the rebalance let go
            if self.rebalance.table.get(mq) is not state.pq:
                self.tasks.drop(mq)

    async def _after_subscription_change(self) -> None:
        member = self._started()
        await member.fetch_routes(list(member.rebalance.subscriptions))
        await member.instance.heartbeat_all()
        await self.do_rebalance()

    async def _remember_queues(self, topic: str) -> None:
        self._known_queues[topic] = set(await self.fetch_message_queues(topic))

    async def _check_queues(self) -> None:
        """fetchTopicMessageQueuesAndCompare."""
        for topic, listener in list(self._queue_listeners.items()):
            try:
                now = set(await self.fetch_message_queues(topic))
            except MQClientError as exc:
                log.info("lite_queue_check_failed", topic=topic, error=str(exc))
                continue
            if now != self._known_queues.get(topic):
                self._known_queues[topic] = now
                listener(topic, now)
