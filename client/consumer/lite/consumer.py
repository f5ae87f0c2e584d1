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
client/lite_raw.py), without background pulls.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiorocketmq.client.consumer.allocate import STRATEGIES
from aiorocketmq.client.consumer.lite.offsets import NOT_RUNNING, LiteOffsets
from aiorocketmq.client.consumer.lite.options import FLAG_LITE_PULL, LitePullOptions
from aiorocketmq.client.consumer.lite.raw import RawPull, raw_from_reply
from aiorocketmq.client.consumer.lite.requests import LiteRequests
from aiorocketmq.client.consumer.lite.tasks import Mode, PullTasks, QueueState
from aiorocketmq.client.consumer.offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.rebalance import Rebalance, subscribe_queues
from aiorocketmq.client.consumer.types import MessageModel, half_an_hour_ago
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.instance import ClientInstance, local_ip, namesrv_list
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.client.core.validate import check_group
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.message import MessageExt
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.tasks import every

log = get_logger(__name__)

QueueListener = Callable[[str, set[MessageQueue]], None]  # TopicMessageQueueChangeListener


class PullConsumer(LiteOffsets):
    """DefaultLitePullConsumer: ``subscribe`` (queues shared with the group) or ``assign``
    (these queues, alone), then ``poll`` for messages and ``commit``; see the module's help."""

    def __init__(self, group: str, namesrv_addr: str | None = None, **options: Any) -> None:
        check_group(group)
        self.group = group
        self.options = o = LitePullOptions(**options)
        if o.allocate_strategy not in STRATEGIES:
            choices = sorted(STRATEGIES)
            raise ValueError(f"allocate_strategy {o.allocate_strategy!r}: one of {choices}")
        self._namesrv = namesrv_list(namesrv_addr)
        self._mode = Mode.NONE
        self._expressions: dict[str, str] = {}  # subscribe
        self._assign_subs: dict[str, SubscriptionData] = {}  # setSubExpressionForAssign
        self._queue_listeners: dict[str, QueueListener] = {}
        self._known_queues: dict[str, set[MessageQueue]] = {}
        self.tasks = PullTasks(group, o, self._subscription, self._first_offset)
        self._instance: ClientInstance | None = None
        self._loops: list[asyncio.Task[None]] = []
        self._spawned: set[asyncio.Task[None]] = set()
        self._next_auto_commit = 0.0
        self._shut_down = False
        self.started_at = 0

    # ------------------------------------------------------------ what to read

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """The group shares the topic's queues (rebalanced); ``"*"`` or ``"TagA || TagB"``."""
        if not topic:
            raise ValueError("Topic can not be null or empty.")
        self._set_mode(Mode.SUBSCRIBE)
        sub = SubscriptionData.build(topic, expression, "TAG", time.time_ns() // 1_000_000)
        self._expressions[topic] = sub.sub_string
        if self._instance is not None:
            self.rebalance.subscriptions[topic] = sub
            self._spawn(self._after_subscription_change())

    def unsubscribe(self, topic: str) -> None:
        self._expressions.pop(topic, None)
        if self._instance is None:
            return
        self.rebalance.subscriptions.pop(topic, None)
        for mq in [mq for mq in self.rebalance.table if mq.topic == topic]:
            self.rebalance.table.pop(mq).dropped = True
        for mq in [mq for mq in self.tasks.assigned if mq.topic == topic]:
            self.tasks.drop(mq)
        self._spawn(self.instance.heartbeat_all())

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
        if self._instance is not None:
            raise MQClientError("setAssignTag only can be called before start.")
        self._set_mode(Mode.ASSIGN)
        self._assign_subs[topic] = SubscriptionData.build(topic, expression)

    def register_topic_message_queue_change_listener(
        self, topic: str, listener: QueueListener
    ) -> None:
        """``listener(topic, queues)`` when the topic's queues change, checked every
        ``topic_metadata_check_interval_millis``."""
        self._queue_listeners[topic] = listener
        if self._instance is not None:
            self._spawn(self._remember_queues(topic))

    def assignment(self) -> set[MessageQueue]:
        return set(self.tasks.assigned)

    def _set_mode(self, mode: Mode) -> None:
        if self._mode is Mode.NONE:
            self._mode = mode
        elif self._mode is not mode:
            raise MQClientError("Subscribe and assign are mutually exclusive.")

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._instance is not None:
            return
        if self._shut_down:
            raise MQClientError("The PullConsumer service state not OK, maybe started once")
        o = self.options
        # compat: Java's lite consumer ends its client id with "@STREAM" and tags requests
        # REQ_T=0 (enableStreamRequestType); ours shares the process's client instance
        inst = ClientInstance.acquire(self._namesrv, o.instance_name, o.serialize_type)
        if self.group in inst.consumers:  # MQClientInstance.registerConsumer
            await inst.release()
            raise MQClientError(
                f"The consumer group[{self.group}] has been created before, specify another "
                "name please (or another instance_name)."
            )
        self._instance = self.tasks.instance = inst
        self.started_at = int(time.time() * 1000)
        self.offsets = self._offset_store(inst)
        await self.offsets.load()
        self.rebalance = Rebalance(
            inst, self.group, o.message_model, self.offsets, self._queue_taken,
            orderly=False, strategy=o.allocate_strategy, consume_from=o.consume_from_where,
            consume_timestamp=o.consume_timestamp or half_an_hour_ago(),
        )  # fmt: skip
        version = time.time_ns() // 1_000_000
        for topic, expression in self._expressions.items():
            self.rebalance.subscriptions[topic] = SubscriptionData.build(
                topic, expression, "TAG", version
            )
        inst.consumers[self.group] = self
        self.requests = LiteRequests(self)
        self.requests.plug(inst)
        await self._after_running()
        self._loops = [
            self._spawn(every(o.rebalance_interval / 1000, self.do_rebalance, name="rebalance")),
            self._spawn(every(o.persist_consumer_offset_interval / 1000, self.persist_offsets,
                              name="persist_offsets")),
            self._spawn(every(o.topic_metadata_check_interval_millis / 1000, self._check_queues,
                              name="topic_metadata", initial_delay=10.0)),
        ]  # fmt: skip

    async def _after_running(self) -> None:
        """operateAfterRunning: routes, a heartbeat, then the first queues pulled."""
        inst = self.instance
        if self._mode is Mode.SUBSCRIBE:
            await self._after_subscription_change()
        else:
            for topic in sorted({mq.topic for mq in self.tasks.assigned}):
                with contextlib.suppress(MQClientError):
                    await inst.fetch_route(topic, 3.0)
            await inst.heartbeat_all()
            for mq in sorted(self.tasks.assigned):
                self.tasks.start(mq)
        for topic in list(self._queue_listeners):
            with contextlib.suppress(MQClientError):
                await self._remember_queues(topic)

    async def shutdown(self) -> None:
        """Stop pulling, commit (with ``auto_commit``, what poll returned), unregister."""
        inst = self._instance
        if inst is None:
            return
        for task in self._loops + list(self._spawned):
            task.cancel()
        await asyncio.gather(*self._loops, *self._spawned, return_exceptions=True)
        await self.tasks.close()
        if self.options.auto_commit:  # compat: Java persists only what was committed before
            self._commit_consumed()
        await self.persist_offsets()
        for state in self.tasks.assigned.values():
            state.pq.dropped = True
        self.requests.unplug(inst)
        await inst.unregister_consumer(self.group)
        self._instance = self.tasks.instance = None
        self._shut_down = True
        self.tasks.ready.set()  # pollers waiting return []
        await inst.release()

    async def __aenter__(self) -> PullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ------------------------------------------------------------ reading

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The messages of one pull (up to ``pull_batch_size``, in queue order), waiting up to
        ``timeout`` seconds (default ``poll_timeout_millis``); [] when none came."""
        self._check_running()
        wait = self.options.poll_timeout_millis / 1000 if timeout is None else timeout
        if wait < 0:
            raise ValueError("Timeout must not be negative")
        if self.options.auto_commit:
            self._maybe_auto_commit()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while self._instance is not None:
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
        expression: str = "*",
        suspend_ms: int = 0,
    ) -> RawPull:
        """One pull of ``queue`` at ``offset``, its records as the broker sent them, for bulk
        readers (no background pull, nothing committed). ``expression`` is matched by the
        broker on tag hash codes only: ``RawPull.messages(expression=...)`` or
        ``lite_raw.keep_tags`` filter exactly. ``suspend_ms`` > 0 lets the broker hold the
        pull that long for a message to arrive; ``timeout`` (seconds) bounds the request
        (default ``consumer_pull_timeout_millis`` plus the suspension)."""
        self._check_running()
        if offset < 0:
            raise MQClientError("offset < 0")
        nums = self.options.pull_batch_size if max_nums is None else max_nums
        if nums <= 0:
            raise MQClientError("maxNums <= 0")
        sub = SubscriptionData.build(queue.topic, expression)
        flag = api.FLAG_SUBSCRIPTION | FLAG_LITE_PULL | (api.FLAG_SUSPEND if suspend_ms else 0)
        if timeout is None:
            timeout = (self.options.consumer_pull_timeout_millis + suspend_ms) / 1000
        reply = await self.tasks.pull(queue, offset, sub, nums, flag, suspend_ms, timeout)
        return raw_from_reply(queue, reply)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, from a name server (fetchSubscribeMessageQueues)."""
        self._check_running()
        route = await self.instance.fetch_route(topic, 3.0)
        queues = subscribe_queues(topic, route) if route is not None else set()
        if not queues:
            raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
        return sorted(queues)

    async def list_topics(self, timeout: float = 3.0) -> list[str]:
        """Every topic the name servers know, sorted (the first name server that answers;
        DefaultMQAdminExt.fetchAllTopicList's request)."""
        self._check_running()
        return await self.instance.topic_list(timeout)

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

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise MQClientError(NOT_RUNNING)
        return self._instance

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)
        return task

    def _offset_store(self, inst: ClientInstance) -> OffsetStore:
        if self.options.message_model is MessageModel.BROADCASTING:
            owner = f"{local_ip()}@{self.options.instance_name}"
            return LocalOffsetStore(self.options.offset_store_dir, owner, self.group)
        return RemoteOffsetStore(inst, self.group)

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

    async def do_rebalance(self) -> None:
        if self._mode is not Mode.SUBSCRIBE:
            return
        await self.rebalance.run()
        for mq, state in list(self.tasks.assigned.items()):  # queues the rebalance let go
            if self.rebalance.table.get(mq) is not state.pq:
                self.tasks.drop(mq)

    async def _after_subscription_change(self) -> None:
        inst = self.instance
        for topic in list(self.rebalance.subscriptions):
            with contextlib.suppress(MQClientError):
                route = await inst.fetch_route(topic, 3.0)
                if route is not None:
                    self.rebalance.route_changed(topic, route)
        await inst.heartbeat_all()
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
