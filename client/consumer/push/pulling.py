"""The push consumer's pulls: one task per owned queue (DefaultMQPushConsumerImpl.pullMessage
and PullAPIWrapper of 4.9.8) with long polling, flow control and the broker's advice on which
broker of the group to read from.

Each loop pulls ``pull_batch_size`` messages at the queue's next offset, filters them by tag
again (the broker matches tag hash codes only), hands them to the consume service and pulls
again; it pauses while the queue holds more than ``pull_threshold_for_queue`` messages or
``pull_threshold_size_for_queue`` MiB, or (concurrently) spans more than
``consume_concurrently_max_span`` offsets.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.types import (
    PULL_DELAY_WHEN_EXCEPTION,
    PULL_DELAY_WHEN_FLOW_CONTROL,
    ConsumerOptions,
    MessageModel,
)
from aiorocketmq.client.core import api
from aiorocketmq.client.core.api import PullStatus
from aiorocketmq.client.core.errors import MQBrokerError, MQClientError
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.errors import MessageDecodeError, RemotingError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import SubscriptionData
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, decode_records
from aiorocketmq.remoting.protocol.route import MASTER_ID

if TYPE_CHECKING:
    from aiorocketmq.client.consumer.rebalance import Rebalance
    from aiorocketmq.client.core.instance import ClientInstance

log = get_logger(__name__)

Submit = Callable[[list[MessageExt], ProcessQueue, MessageQueue, bool], None]


def filter_messages(
    body: bytes, sub: SubscriptionData, reply: api.PullReply, broker_name: str
) -> list[MessageExt]:
    """PullAPIWrapper.processPullResult: decode (inflating), keep the subscribed tags, note
    the queue's bounds on each message (MIN_OFFSET / MAX_OFFSET), as Java's client does."""
    msgs = decode_records(body, inflate=True)
    if sub.tags_set and not sub.class_filter_mode:
        tags = set(sub.tags_set)
        msgs = [m for m in msgs if m.properties.get(Prop.TAGS) in tags]
    low, high = str(reply.min_offset), str(reply.max_offset)
    for m in msgs:
        m.properties[Prop.MIN_OFFSET] = low
        m.properties[Prop.MAX_OFFSET] = high
        m.broker_name = broker_name
    return msgs


class Puller:
    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        options: ConsumerOptions,
        rebalance: Rebalance,
        submit: Submit,
        *,
        orderly: bool,
    ) -> None:
        self.instance = instance
        self.group = group
        self.options = options
        self.rebalance = rebalance
        self.submit = submit
        self.orderly = orderly
        self.suggested: dict[MessageQueue, int] = {}  # pullFromWhichNodeTable
        self.tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self.running = True
        self.flow_controlled = 0

    def start(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        old = self.tasks.get(mq)
        if old is not None and not old.done():
            old.cancel()
        task = asyncio.get_running_loop().create_task(self._loop(mq, pq, offset))
        self.tasks[mq] = task
        task.add_done_callback(
            lambda t: self.tasks.pop(mq, None) if self.tasks.get(mq) is t else None
        )

    async def stop(self) -> None:
        self.running = False
        tasks = list(self.tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def stop_queues(self, mqs: list[MessageQueue]) -> None:
        """The pulls of these queues ended (a reset of their offsets)."""
        tasks = [t for mq in mqs if (t := self.tasks.get(mq)) is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        previously_locked = False
        while self.running and not pq.dropped:
            delay = self._hold_back(pq)
            if delay:
                await asyncio.sleep(delay)
                continue
            if self.orderly and self.options.message_model is MessageModel.CLUSTERING:
                if not pq.locked:
                    await asyncio.sleep(PULL_DELAY_WHEN_EXCEPTION)  # the rebalance re-locks
                    continue
                if not previously_locked:  # another owner may have moved on meanwhile
                    previously_locked = True
                    try:
                        offset = await self.rebalance.compute_pull_from(mq)
                    except (MQClientError, RemotingError):
                        previously_locked = False
                        await asyncio.sleep(PULL_DELAY_WHEN_EXCEPTION)
                        continue
            sub = self.rebalance.subscriptions.get(mq.topic)
            if sub is None:
                await asyncio.sleep(PULL_DELAY_WHEN_EXCEPTION)
                continue
            pq.last_pull = time.monotonic()
            nxt = await self._pull_once(mq, pq, offset, sub)
            if nxt is None:
                await asyncio.sleep(PULL_DELAY_WHEN_EXCEPTION)
                continue
            if nxt < 0:
                return  # the queue was dropped (offset illegal)
            offset = nxt
            if self.options.pull_interval > 0:
                await asyncio.sleep(self.options.pull_interval / 1000)

    def _hold_back(self, pq: ProcessQueue) -> float:
        """Flow control: seconds to wait before the next pull, 0 to pull now."""
        o = self.options
        if pq.count > o.pull_threshold_for_queue or pq.size > o.pull_threshold_size_for_queue << 20:
            self.flow_controlled += 1
            return PULL_DELAY_WHEN_FLOW_CONTROL
        if not self.orderly and pq.span() > o.consume_concurrently_max_span:
            self.flow_controlled += 1
            return PULL_DELAY_WHEN_FLOW_CONTROL
        return 0.0

    def _broker(self, mq: MessageQueue) -> tuple[str, bool]:
        """The broker the queue last suggested, else its master, else a slave (the master
        is gone from the route): ``(addr, is_slave)``."""
        found = self.instance.subscribe_addr(mq.broker_name, self.suggested.get(mq, MASTER_ID))
        if found is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return found

    def _request(
        self, mq: MessageQueue, offset: int, sub: SubscriptionData, slave: bool = False
    ) -> RemotingCommand:
        o = self.options
        flag = api.FLAG_SUSPEND
        commit = 0
        # pullKernelImpl: a slave keeps no offsets, so no commit rides on a pull to one
        if o.message_model is MessageModel.CLUSTERING and not slave:
            commit = self.rebalance.offsets.table.get(mq, 0)
            if commit > 0:
                flag |= api.FLAG_COMMIT_OFFSET
        subscription = None
        if o.post_subscription_when_pull and not sub.class_filter_mode:
            flag |= api.FLAG_SUBSCRIPTION
            subscription = sub.sub_string
        return api.pull_message(
            self.group, mq.topic, mq.queue_id, offset,
            max_nums=o.pull_batch_size, sys_flag=flag, commit_offset=commit,
            suspend_ms=o.broker_suspend_max_time_millis, subscription=subscription,
            sub_version=sub.sub_version, expression_type=sub.expression_type,
        )  # fmt: skip

    async def _pull_once(
        self, mq: MessageQueue, pq: ProcessQueue, offset: int, sub: SubscriptionData
    ) -> int | None:
        """One pull; the next offset, None to retry after a pause, -1 when dropped."""
        timeout = self.options.consumer_timeout_millis_when_suspend / 1000
        try:
            addr, slave = self._broker(mq)
            if slave and self.suggested.get(mq, MASTER_ID) == MASTER_ID:
                # ours: no master in the route (it died, or moved): look for it again
                self.instance.route_suspect(mq.topic)
            resp = await self.instance.remoting.invoke(
                addr, self._request(mq, offset, sub, slave), timeout
            )
            reply = api.parse_pull(resp, addr)
            msgs = filter_messages(reply.body, sub, reply, mq.broker_name) if reply.body else []
        except (MQClientError, RemotingError, MessageDecodeError) as exc:
            if self.running and not pq.dropped:
                log.warning("pull_failed", group=self.group, queue=mq, error=str(exc))
                if isinstance(exc, MQClientError) and not (
                    isinstance(exc, MQBrokerError) and exc.code != R.SERVICE_NOT_AVAILABLE
                ):  # ours: unreachable, gone from the route, a slave: the master may move
                    self.instance.route_suspect(mq.topic)
            return None
        self.suggested[mq] = reply.suggest_which_broker_id
        if pq.dropped:
            return -1
        if reply.status is PullStatus.FOUND:
            if msgs:
                wake = pq.put(msgs)
                self.submit(msgs, pq, mq, wake)
            return reply.next_begin_offset
        if reply.status is PullStatus.OFFSET_ILLEGAL:
            log.warning("pull_offset_illegal", group=self.group, queue=mq, offset=offset,
                        next=reply.next_begin_offset)  # fmt: skip
            pq.dropped = True
            self.rebalance.offset_moved(mq, pq, reply.next_begin_offset)
            return -1
        if pq.count == 0:  # correctTagsOffset: nothing waits, so this much is consumed
            self.rebalance.offsets.update(mq, reply.next_begin_offset, True)
        return reply.next_begin_offset
