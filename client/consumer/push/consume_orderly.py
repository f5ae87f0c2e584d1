"""Orderly consumption (ConsumeMessageOrderlyService of 4.9.8): each queue is consumed by
one task at a time, in offset order, and, in clustering, only while this consumer holds the
queue's lock on its broker (taken at rebalance, renewed every 20 s, expired locally after
30 s). SUSPEND_CURRENT_QUEUE_A_MOMENT puts the batch back and retries it after
``suspend_current_queue_time_millis``; after ``max_reconsume_times`` (unlimited by default)
a message goes to the DLQ.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from aiorocketmq.client.consumer.offsets import OffsetStore
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.push.consume import Listener, prepare
from aiorocketmq.client.consumer.types import (
    MAX_TIME_CONSUME_CONTINUOUSLY,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumerOptions,
    MessageModel,
)
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.message import MessageExt, Prop

log = get_logger(__name__)

ToDLQ = Callable[[MessageExt, int], Awaitable[bool]]  # (message, max) -> sent
Lock = Callable[[MessageQueue], Awaitable[bool]]


class OrderlyService:
    def __init__(
        self,
        group: str,
        options: ConsumerOptions,
        listener: Listener,
        offsets: OffsetStore,
        to_dlq: ToDLQ,
        lock: Lock,
    ) -> None:
        self.group = group
        self.options = options
        self.listener = listener
        self.offsets = offsets
        self.to_dlq = to_dlq
        self.lock = lock
        self.clustering = options.message_model is MessageModel.CLUSTERING
        self.queue_locks: dict[MessageQueue, asyncio.Lock] = {}  # MessageQueueLock
        self.tasks: set[asyncio.Task[None]] = set()
        mx = options.max_reconsume_times
        self.max_reconsume = 2**31 - 1 if mx == -1 else mx

    def submit(
        self, _msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, wake: bool
    ) -> None:
        if wake:
            self._spawn(self._run(pq, mq))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)  # type: ignore[arg-type]
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        async def again() -> None:
            await asyncio.sleep(delay)
            if not pq.dropped:
                await self._run(pq, mq)

        self._spawn(again())

    async def _relock_later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        """tryLockLaterAndReconsume."""
        await asyncio.sleep(delay)
        if pq.dropped:
            return
        self._later(pq, mq, 0.01 if await self.lock(mq) else 3.0)

    def _usable(self, pq: ProcessQueue) -> bool:
        return not self.clustering or (pq.locked and not pq.lock_expired())

    async def _run(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        qlock = self.queue_locks.setdefault(mq, asyncio.Lock())
        async with qlock:
            if not self._usable(pq):
                self._spawn(self._relock_later(pq, mq, 0.1))
                return
            begin = time.monotonic()
            while not pq.dropped:
                if not self._usable(pq):
                    self._spawn(self._relock_later(pq, mq, 0.01))
                    return
                if time.monotonic() - begin > MAX_TIME_CONSUME_CONTINUOUSLY:
                    self._later(pq, mq, 0.01)  # other queues get their turn
                    return
                msgs = pq.take(max(1, self.options.consume_message_batch_max_size))
                if not msgs:
                    return
                if not await self._consume(msgs, pq, mq):
                    return

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> bool:
        """One batch under the queue's consume lock; False to stop this run."""
        prepare(msgs, self.group)
        ctx = ConsumeOrderlyContext(mq)
        status: object = None
        async with pq.consume_lock:
            if pq.dropped:
                return False
            try:
                status = await self.listener(msgs, ctx)
            except Exception as exc:  # noqa: BLE001 - suspend the queue and retry, as Java does
                log.warning("consume_failed", group=self.group, queue=mq, error=repr(exc))
        if not isinstance(status, ConsumeOrderlyStatus):
            status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return await self._result(status, ctx, msgs, pq, mq)

    async def _result(
        self,
        status: ConsumeOrderlyStatus,
        ctx: ConsumeOrderlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> bool:
        """processConsumeResult with autoCommit."""
        go_on = True
        if status is ConsumeOrderlyStatus.SUCCESS:
            offset = pq.commit()
        elif await self._suspend(msgs):
            pq.consume_again(msgs)
            ms = ctx.suspend_current_queue_time_millis
            delay = (ms if ms >= 0 else self.options.suspend_current_queue_time_millis) / 1000
            self._later(pq, mq, max(0.01, delay))
            offset, go_on = -1, False
        else:  # every message of the batch went to the DLQ
            offset = pq.commit()
        if offset >= 0 and not pq.dropped:
            self.offsets.update(mq, offset, False)
        return go_on

    async def _suspend(self, msgs: list[MessageExt]) -> bool:
        """checkReconsumeTimes: True when the batch must be consumed again."""
        suspend = False
        for m in msgs:
            if m.reconsume_times >= self.max_reconsume:
                m.properties[Prop.RECONSUME_TIME] = str(m.reconsume_times)
                if not await self.to_dlq(m, self.max_reconsume):
                    suspend = True
                    m.reconsume_times += 1
            else:
                suspend = True
                m.reconsume_times += 1
        return suspend

    async def drain(self, timeout: float | None) -> None:
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=timeout)
