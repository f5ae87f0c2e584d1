"""The lite-pull consumer's queues and pull tasks (DefaultLitePullConsumerImpl.PullTaskImpl and
AssignedMessageQueue of 4.9.8).

Each assigned queue has a state (its process queue, paused or not, the next offset to pull,
the offset consumed so far) and one task that long-polls the queue's broker and appends what
it finds to a buffer ``poll`` takes from, one pull's messages at a time. A task holds back
while the buffer holds more than ``pull_threshold_for_all`` messages or its queue more than
``pull_threshold_for_queue`` messages, ``pull_threshold_size_for_queue`` MiB or a span of
``consume_max_span`` offsets.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiorocketmq.client.consumer.lite.options import (
    DELAY_ON_OFFSET_ERROR,
    DELAY_WHEN_BROKER_FLOW_CONTROL,
    DELAY_WHEN_CACHE_FLOW_CONTROL,
    DELAY_WHEN_PAUSE,
    FLAG_LITE_PULL,
    LitePullOptions,
)
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.push.pulling import filter_messages
from aiorocketmq.client.core import api
from aiorocketmq.client.core.api import PullStatus
from aiorocketmq.client.core.errors import MQBrokerError, MQClientError
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.errors import MessageDecodeError, RemotingError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.heartbeat import SubscriptionData
from aiorocketmq.remoting.protocol.message import MessageExt
from aiorocketmq.remoting.protocol.route import MASTER_ID

if TYPE_CHECKING:
    from aiorocketmq.client.core.instance import ClientInstance
    from aiorocketmq.client.trace.hooks import ConsumeTrace

log = get_logger(__name__)
MAX_TEMPLATES = 256  # pull request templates kept (topics x subscriptions x flags)


class Mode(enum.Enum):
    """DefaultLitePullConsumerImpl.SubscriptionType."""

    NONE = 0
    SUBSCRIBE = 1
    ASSIGN = 2


@dataclass(slots=True)
class QueueState:
    """AssignedMessageQueue.MessageQueueState: offsets are -1 until known."""

    pq: ProcessQueue
    paused: bool = False
    pull_offset: int = -1
    consume_offset: int = -1


@dataclass(slots=True)
class Pulled:
    """ConsumeRequest: one pull's messages, waiting for ``poll``."""

    msgs: list[MessageExt]
    mq: MessageQueue
    pq: ProcessQueue


class PullTasks:
    def __init__(
        self,
        group: str,
        options: LitePullOptions,
        subscription: Callable[[str], SubscriptionData | None],
        first_offset: Callable[[MessageQueue], Awaitable[int]],
    ) -> None:
        self.group = group
        self.options = options
        self.subscription = subscription
        self.first_offset = first_offset  # fetchConsumeOffset: committed, else consume_from
        self.instance: ClientInstance | None = None
        self.assigned: dict[MessageQueue, QueueState] = {}
        self.buffer: deque[Pulled] = deque()  # consumeRequestCache
        self.ready = asyncio.Event()
        self.tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self.suggested: dict[MessageQueue, int] = {}  # pullFromWhichNodeTable
        self.flow_controlled = 0
        self.trace: ConsumeTrace | None = None  # message trace (trace=True)
        # PULL_MESSAGE ext fields but the queue, offset and count, per (topic, subscription,
        # flags): a pull builds its request from a copy (api.pull_template)
        self._templates: dict[tuple[str, str, str, int, int, bool], dict[str, str]] = {}

    # ------------------------------------------------------------ queues and tasks

    def add(self, mq: MessageQueue, state: QueueState) -> None:
        """Assign ``mq`` (replacing an older state of it) and pull it if started."""
        old = self.assigned.get(mq)
        if old is not None and old is not state:
            self.drop(mq)
        self.assigned[mq] = state
        if self.instance is not None:
            self.start(mq)

    def drop(self, mq: MessageQueue) -> None:
        state = self.assigned.pop(mq, None)
        if state is not None:
            state.pq.dropped = True
        task = self.tasks.pop(mq, None)
        if task is not None:
            task.cancel()

    def start(self, mq: MessageQueue) -> None:
        if mq in self.tasks:
            return
        task = asyncio.get_running_loop().create_task(self._loop(mq))
        self.tasks[mq] = task
        task.add_done_callback(
            lambda t: self.tasks.pop(mq, None) if self.tasks.get(mq) is t else None
        )

    async def close(self) -> None:
        tasks = list(self.tasks.values())
        self.tasks.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def seek(self, mq: MessageQueue, state: QueueState, offset: int) -> None:
        """Forget what was pulled of ``mq``, stop its pull (a long poll under way is
        abandoned) and pull again from ``offset``, which counts as consumed (seek and
        nextPullOffset)."""
        self.clear_cached(mq, state.pq)
        task = self.tasks.pop(mq, None)
        if task is not None:
            task.cancel()
        state.pull_offset = state.consume_offset = offset
        self.start(mq)

    def clear_cached(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """clearMessageQueueInCache."""
        pq.clear()
        pq.max_offset = -1  # ProcessQueue.clear resets queueOffsetMax too
        self.buffer = deque(p for p in self.buffer if p.mq != mq)

    def take(self) -> list[MessageExt] | None:
        """poll's step: the oldest pull of a queue still assigned, its messages now
        consumed (removeMessage and updateConsumeOffset); None when nothing waits."""
        while self.buffer:
            pulled = self.buffer.popleft()
            if pulled.pq.dropped:
                continue
            offset = pulled.pq.remove(pulled.msgs)
            state = self.assigned.get(pulled.mq)
            if state is not None and state.pq is pulled.pq:
                state.consume_offset = offset
            return pulled.msgs
        self.ready.clear()
        return None

    def pause(self, mqs: Iterable[MessageQueue], paused: bool) -> None:
        for mq in mqs:
            state = self.assigned.get(mq)
            if state is not None:
                state.paused = paused

    # ------------------------------------------------------------ the pull task

    async def _loop(self, mq: MessageQueue) -> None:
        while True:
            state = self.assigned.get(mq)
            if state is None or state.pq.dropped:
                return
            # ours: Rebalance drops a queue whose pull is 120 s old, which Java skips for
            # CONSUME_ACTIVELY; a queue that is paused or held back still counts as pulled
            state.pq.last_pull = time.monotonic()
            delay = self._hold_back(state)
            if not delay:
                delay = await self._round(mq, state)
            if delay:
                await asyncio.sleep(delay)

    def _hold_back(self, state: QueueState) -> float:
        """Seconds to wait before pulling (paused, or flow control), else 0."""
        o, pq = self.options, state.pq
        if state.paused:
            return DELAY_WHEN_PAUSE
        if len(self.buffer) * o.pull_batch_size > o.pull_threshold_for_all:
            self.flow_controlled += 1
            return DELAY_WHEN_CACHE_FLOW_CONTROL
        if (
            pq.count > o.pull_threshold_for_queue
            or pq.size >> 20 > o.pull_threshold_size_for_queue
            or pq.span() > o.consume_max_span
        ):
            self.flow_controlled += 1
            return DELAY_WHEN_CACHE_FLOW_CONTROL
        return 0.0

    async def _round(self, mq: MessageQueue, state: QueueState) -> float:
        """One pull at the queue's next offset; the delay before the next."""
        o = self.options
        try:
            if state.pull_offset < 0:
                state.pull_offset = await self.first_offset(mq)
        except (MQClientError, RemotingError) as exc:
            log.warning("lite_pull_offset_unknown", group=self.group, queue=mq, error=str(exc))
            return DELAY_ON_OFFSET_ERROR
        sub = self.subscription(mq.topic)
        if sub is None:
            return o.pull_time_delay_millis_when_exception / 1000
        flag = api.FLAG_SUSPEND | api.FLAG_SUBSCRIPTION | FLAG_LITE_PULL
        try:
            reply = await self.pull(mq, state.pull_offset, sub, o.pull_batch_size, flag,
                                    o.broker_suspend_max_time_millis,
                                    o.consumer_timeout_millis_when_suspend / 1000)  # fmt: skip
            found = reply.status is PullStatus.FOUND and reply.body
            msgs = filter_messages(reply.body, sub, reply, mq.broker_name) if found else []
        except MQBrokerError as exc:
            log.warning("lite_pull_refused", group=self.group, queue=mq, error=str(exc))
            if exc.code == R.FLOW_CONTROL:
                return DELAY_WHEN_BROKER_FLOW_CONTROL
            return o.pull_time_delay_millis_when_exception / 1000
        except (MQClientError, RemotingError, MessageDecodeError) as exc:
            log.warning("lite_pull_failed", group=self.group, queue=mq, error=str(exc))
            return o.pull_time_delay_millis_when_exception / 1000
        if self.assigned.get(mq) is not state or state.pq.dropped:
            return 0.0
        if msgs:
            state.pq.put(msgs)
            if self.trace is not None:
                self.trace.pulled(msgs)
            self.buffer.append(Pulled(msgs, mq, state.pq))
            self.ready.set()
        elif reply.status is PullStatus.OFFSET_ILLEGAL:
            log.warning("lite_pull_offset_illegal", group=self.group, queue=mq,
                        offset=state.pull_offset, next=reply.next_begin_offset)  # fmt: skip
        state.pull_offset = reply.next_begin_offset
        return 0.0

    # ------------------------------------------------------------ one pull

    async def pull(
        self,
        mq: MessageQueue,
        offset: int,
        sub: SubscriptionData,
        max_nums: int,
        sys_flag: int,
        suspend_ms: int,
        timeout: float,
        bulk: bool = False,
    ) -> api.PullReply:
        """PullAPIWrapper.pullKernelImpl: the queue's broker (the one it last suggested, its
        route fetched if unknown), the subscription in the request (no commit offset);
        ``bulk``: ``bulkPull=true`` (api.pull_message)."""
        inst, addr = await self._broker(mq)
        template = self._template(mq.topic, sub, sys_flag, suspend_ms, bulk)
        request = api.pull_from(template, mq.queue_id, offset, max_nums)
        reply = api.parse_pull(await inst.remoting.invoke(addr, request, timeout), addr)
        self.suggested[mq] = reply.suggest_which_broker_id
        return reply

    async def pull_many(
        self,
        mq: MessageQueue,
        pulls: list[tuple[int, int]],
        sub: SubscriptionData,
        sys_flag: int,
        suspend_ms: int,
        timeout: float,
        bulk: bool = False,
    ) -> list[api.PullReply | MQClientError]:
        """``pull`` at each (offset, max_nums) of ``pulls``, all sent before any answer is
        awaited (Remote.invoke_many); per pull its reply or its error, in order."""
        inst, addr = await self._broker(mq)
        template = self._template(mq.topic, sub, sys_flag, suspend_ms, bulk)
        requests = [api.pull_from(template, mq.queue_id, at, n) for at, n in pulls]
        out: list[api.PullReply | MQClientError] = []
        for answer in await inst.remoting.invoke_many(addr, requests, timeout):
            if isinstance(answer, MQClientError):
                out.append(answer)
                continue
            try:
                reply = api.parse_pull(answer, addr)
            except MQClientError as exc:
                out.append(exc)
                continue
            self.suggested[mq] = reply.suggest_which_broker_id
            out.append(reply)
        return out

    async def _broker(self, mq: MessageQueue) -> tuple[ClientInstance, str]:
        """The instance and the address to pull ``mq`` from (findBrokerAddressInSubscribe)."""
        inst = self.instance
        if inst is None:
            raise MQClientError("The consumer not running, please start it first.")
        found = inst.subscribe_addr(mq.broker_name, self.suggested.get(mq, MASTER_ID))
        if found is None:
            await inst.fetch_route(mq.topic, 3.0)
            found = inst.subscribe_addr(mq.broker_name, self.suggested.get(mq, MASTER_ID))
            if found is None:
                raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return inst, found[0]

    def _template(
        self, topic: str, sub: SubscriptionData, sys_flag: int, suspend_ms: int, bulk: bool
    ) -> dict[str, str]:
        key = (topic, sub.sub_string, sub.expression_type, sys_flag, suspend_ms, bulk)
        template = self._templates.get(key)
        if template is None:
            if len(self._templates) >= MAX_TEMPLATES:
                self._templates.clear()
            template = self._templates[key] = api.pull_template(
                self.group, topic, sys_flag=sys_flag, suspend_ms=suspend_ms,
                subscription=sub.sub_string, expression_type=sub.expression_type, bulk=bulk,
            )  # fmt: skip
        return template
