"""The lite-pull consumer's offsets (DefaultLitePullConsumerImpl of 4.9.8): commit, committed,
seek, the queues' bounds and offsets by time. PullConsumer (consumer/lite/consumer.py) has
one and hands its methods on.

Offsets are "the next message to read". A queue's consumed offset is what ``poll`` returned
of it; ``commit`` puts consumed offsets into the offset store, which writes them to the
brokers (or the local file, broadcasting) every ``persist_consumer_offset_interval`` ms,
at once with ``persist`` and at shutdown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from aiorocketmq.client.consumer.lite.options import LitePullOptions
from aiorocketmq.client.consumer.lite.tasks import PullTasks, QueueState
from aiorocketmq.client.consumer.member import GroupMember
from aiorocketmq.client.consumer.offsets import NOT_FOUND, UNREADABLE
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import RequestCode as C

log = get_logger(__name__)


class LiteOffsets:
    """``member()`` is the consumer's started member (MQClientError while not running);
    ``subscribed()`` says whether the queues come from a subscription (for a message)."""

    def __init__(
        self,
        group: str,
        options: LitePullOptions,
        tasks: PullTasks,
        member: Callable[[], GroupMember],
        subscribed: Callable[[], bool],
    ) -> None:
        self.group = group
        self.options = options
        self.tasks = tasks
        self.member = member
        self.subscribed = subscribed
        self._next_auto_commit = 0.0

    async def commit(
        self, offsets: Mapping[MessageQueue, int] | None = None, *, persist: bool = True
    ) -> None:
        """commitSync: what poll returned counts as consumed (or the given offset of each
        queue: the next message to read); with ``persist`` written to the brokers now."""
        # compat: Java's commitSync() leaves the writing to the next persist round (5 s)
        store = self.member().offsets
        if offsets is None:
            self.commit_consumed()
        else:
            for mq, offset in offsets.items():
                state = self.tasks.assigned.get(mq)
                if offset < 0:
                    log.warning("lite_commit_negative_offset", group=self.group, queue=mq)
                elif state is not None and not state.pq.dropped:
                    store.update(mq, offset, False)
        if persist:
            await self.persist()

    async def committed(self, queue: MessageQueue) -> int:
        """The committed offset of ``queue``: this consumer's, else the broker's; -1 when
        there is none (readOffset MEMORY_FIRST_THEN_STORE)."""
        store = self.member().offsets
        offset = await store.read(queue, from_store=False)
        if offset == NOT_FOUND:
            offset = await store.read(queue, from_store=True)
        if offset == UNREADABLE:
            raise MQClientError("Fetch consume offset from broker exception")
        return offset

    async def seek(self, queue: MessageQueue, offset: int) -> None:
        """Read ``queue`` from ``offset`` next (between its min and max offsets)."""
        self.member()
        self._assigned_state(queue)
        low, high = await self.min_offset(queue), await self.max_offset(queue)
        if not low <= offset <= high:
            raise MQClientError(
                f"Seek offset illegal, seek offset = {offset}, min offset = {low}, "
                f"max offset = {high}"
            )
        self.tasks.seek(queue, self._assigned_state(queue), offset)

    async def seek_to_begin(self, queue: MessageQueue) -> None:
        await self.seek(queue, await self.min_offset(queue))

    async def seek_to_end(self, queue: MessageQueue) -> None:
        await self.seek(queue, await self.max_offset(queue))

    async def min_offset(self, queue: MessageQueue) -> int:
        """GET_MIN_OFFSET from the queue's master (MQAdminImpl.minOffset)."""
        return await self.member().rebalance.queue_offset(queue, C.GET_MIN_OFFSET)

    async def max_offset(self, queue: MessageQueue) -> int:
        """GET_MAX_OFFSET: one past the newest message (MQAdminImpl.maxOffset)."""
        return await self.member().rebalance.queue_offset(queue, C.GET_MAX_OFFSET)

    async def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the first message stored at or after the time."""
        return await self.member().rebalance.search_offset(queue, timestamp_ms)

    async def offsets_for_times(
        self, timestamps: Mapping[MessageQueue, int]
    ) -> dict[MessageQueue, int]:
        return {mq: await self.offset_for_timestamp(mq, ts) for mq, ts in timestamps.items()}

    async def persist(self) -> None:
        """persistConsumerOffset: the committed offsets of the assigned queues, written out."""
        await self.member().offsets.persist_all(list(self.tasks.assigned))

    def commit_consumed(self) -> None:
        """commitAll: each queue's consumed offset into the store (in memory)."""
        store = self.member().offsets
        for mq, state in self.tasks.assigned.items():
            if state.consume_offset >= 0 and not state.pq.dropped:
                store.update(mq, state.consume_offset, False)

    def maybe_auto_commit(self) -> None:
        now = time.monotonic()
        if now >= self._next_auto_commit:
            self.commit_consumed()
            self._next_auto_commit = now + self.options.auto_commit_interval_millis / 1000

    def _assigned_state(self, queue: MessageQueue) -> QueueState:
        state = self.tasks.assigned.get(queue)
        if state is None:
            more = ", may be rebalancing" if self.subscribed() else ""
            raise MQClientError(
                f"The message queue is not in assigned list{more}, message queue: {queue}"
            )
        return state
