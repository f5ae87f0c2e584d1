"""The lite-pull consumer's offsets (DefaultLitePullConsumerImpl of 4.9.8): commit, committed,
seek, the queues' bounds and offsets by time. A base of PullConsumer (client/lite_pull.py).

Offsets are "the next message to read". A queue's consumed offset is what ``poll`` returned
of it; ``commit`` puts consumed offsets into the offset store, which writes them to the
brokers (or the local file, broadcasting) every ``persist_consumer_offset_interval`` ms,
at once with ``persist`` and at shutdown.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from aiorocketmq.client.consumer.lite.options import LitePullOptions
from aiorocketmq.client.consumer.lite.tasks import Mode, PullTasks, QueueState
from aiorocketmq.client.consumer.offsets import NOT_FOUND, UNREADABLE, OffsetStore
from aiorocketmq.client.consumer.rebalance import Rebalance
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.instance import ClientInstance
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import RequestCode as C

log = get_logger(__name__)

NOT_RUNNING = "The consumer not running, please start it first."


class LiteOffsets:
    group: str
    options: LitePullOptions
    tasks: PullTasks
    offsets: OffsetStore
    rebalance: Rebalance
    _instance: ClientInstance | None
    _mode: Mode
    _next_auto_commit: float

    async def commit(
        self, offsets: Mapping[MessageQueue, int] | None = None, *, persist: bool = True
    ) -> None:
        """commitSync: what poll returned counts as consumed (or the given offset of each
        queue: the next message to read); with ``persist`` written to the brokers now."""
        # compat: Java's commitSync() leaves the writing to the next persist round (5 s)
        self._check_running()
        if offsets is None:
            self._commit_consumed()
        else:
            for mq, offset in offsets.items():
                state = self.tasks.assigned.get(mq)
                if offset < 0:
                    log.warning("lite_commit_negative_offset", group=self.group, queue=mq)
                elif state is not None and not state.pq.dropped:
                    self.offsets.update(mq, offset, False)
        if persist:
            await self.persist_offsets()

    async def committed(self, queue: MessageQueue) -> int:
        """The committed offset of ``queue``: this consumer's, else the broker's; -1 when
        there is none (readOffset MEMORY_FIRST_THEN_STORE)."""
        self._check_running()
        offset = await self.offsets.read(queue, from_store=False)
        if offset == NOT_FOUND:
            offset = await self.offsets.read(queue, from_store=True)
        if offset == UNREADABLE:
            raise MQClientError("Fetch consume offset from broker exception")
        return offset

    async def seek(self, queue: MessageQueue, offset: int) -> None:
        """Read ``queue`` from ``offset`` next (between its min and max offsets)."""
        self._check_running()
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
        self._check_running()
        return await self.rebalance.queue_offset(queue, C.GET_MIN_OFFSET)

    async def max_offset(self, queue: MessageQueue) -> int:
        """GET_MAX_OFFSET: one past the newest message (MQAdminImpl.maxOffset)."""
        self._check_running()
        return await self.rebalance.queue_offset(queue, C.GET_MAX_OFFSET)

    async def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the first message stored at or after the time."""
        self._check_running()
        return await self.rebalance.search_offset(queue, timestamp_ms)

    async def offsets_for_times(
        self, timestamps: Mapping[MessageQueue, int]
    ) -> dict[MessageQueue, int]:
        return {mq: await self.offset_for_timestamp(mq, ts) for mq, ts in timestamps.items()}

    async def persist_offsets(self) -> None:
        """persistConsumerOffset: the committed offsets of the assigned queues, written out."""
        await self.offsets.persist_all(list(self.tasks.assigned))

    def _commit_consumed(self) -> None:
        """commitAll: each queue's consumed offset into the store (in memory)."""
        for mq, state in self.tasks.assigned.items():
            if state.consume_offset >= 0 and not state.pq.dropped:
                self.offsets.update(mq, state.consume_offset, False)

    def _maybe_auto_commit(self) -> None:
        now = time.monotonic()
        if now >= self._next_auto_commit:
            self._commit_consumed()
            self._next_auto_commit = now + self.options.auto_commit_interval_millis / 1000

    def _check_running(self) -> None:
        if self._instance is None:
            raise MQClientError(NOT_RUNNING)

    def _assigned_state(self, queue: MessageQueue) -> QueueState:
        state = self.tasks.assigned.get(queue)
        if state is None:
            more = ", may be rebalancing" if self._mode is Mode.SUBSCRIBE else ""
            raise MQClientError(
                f"The message queue is not in assigned list{more}, message queue: {queue}"
            )
        return state
