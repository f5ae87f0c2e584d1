"""Concurrent consumption (ConsumeMessageConcurrentlyService of 4.9.8): pulled messages are
handed to the listener in batches of ``consume_message_batch_max_size``, at most
``consume_concurrency`` calls at once; what it does not acknowledge goes back to the broker
(CONSUMER_SEND_MSG_BACK, which retries it through ``%RETRY%<group>`` after a delay level and
moves it to ``%DLQ%<group>`` after ``max_reconsume_times``). The queue's committed offset is
the smallest offset still unconsumed.

Listeners may be ``async def`` (run on the loop) or plain functions (run in a thread pool of
``consume_concurrency`` threads). An exception counts as RECONSUME_LATER, as in Java.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiorocketmq.client.consumer.offsets import OffsetStore
from aiorocketmq.client.consumer.process_queue import ProcessQueue
from aiorocketmq.client.consumer.types import (
    ConsumeConcurrentlyContext,
    ConsumerOptions,
    ConsumeStatus,
    MessageModel,
    message_id,
    retry_topic,
)
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, now_ms

log = get_logger(__name__)

SendBack = Callable[[MessageExt, int], Awaitable[bool]]
LOCAL_RETRY_DELAY = 5.0  # s: a message the broker would not take back is retried here


def is_async(listener: object) -> bool:
    call = getattr(listener, "__call__", None)  # noqa: B004 - an async __call__ counts
    return inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(call)


def prepare(msgs: list[MessageExt], group: str, retry: str | None = None) -> None:
    """resetRetryAndNamespace: a message from the group's retry topic (``retry``, given or
    made) shows its original topic; CONSUME_START_TIME is noted on each."""
    if retry is None:
        retry = retry_topic(group)
    start = str(time.time_ns() // 1_000_000)  # now_ms(), a call less: every message
    for m in msgs:
        if m.topic == retry:
            original = m.properties.get(Prop.RETRY_TOPIC)
            if original:
                m.topic = original
        m.properties["CONSUME_START_TIME"] = start


class Listener:
    """Calls a user listener: on the loop if async, else in the pool (``consume_concurrency``
    threads). A call is not cut short: ``clean_expired`` deals with calls past the consume
    timeout, as Java's cleanExpireMsg does."""

    def __init__(self, fn: Callable[..., Any], options: ConsumerOptions) -> None:
        self.fn = fn
        self.is_async = is_async(fn)
        self.pool: ThreadPoolExecutor | None = None
        if not self.is_async:
            self.pool = ThreadPoolExecutor(options.consume_concurrency, "rocketmq-consume")

    async def __call__(self, msgs: list[MessageExt], ctx: object) -> Any:
        return await self.call(msgs, ctx)

    def call(self, msgs: list[MessageExt], ctx: object) -> Awaitable[Any]:
        """What to await for the listener's answer (no coroutine of our own per call)."""
        if self.is_async:
            answer: Awaitable[Any] = self.fn(msgs, ctx)
            return answer
        return asyncio.get_running_loop().run_in_executor(self.pool, self.fn, msgs, ctx)

    def close(self, wait: bool) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)


Batch = tuple[list[MessageExt], ProcessQueue, MessageQueue]


class ConcurrentService:
    """``consume_concurrency`` long-lived workers take batches from one queue (its length is
    bounded by the pull thresholds: messages are put here only as they are pulled).

    With a batch a message (the default) this runs for every message, so the queue is a deque
    (asyncio.Queue's ten calls a batch were a tenth of the consumer) and a worker that finds
    it empty sleeps on a future of its own. A batch wakes one worker unless one is already on
    its way (``waking``), and a worker that takes a batch with more behind it wakes the next:
    a listener that waits lets the others take the batches behind it, up to every worker,
    while listeners that never wait leave one worker going through them all (asyncio.Queue
    woke a worker a batch, most to find nothing)."""

    def __init__(
        self,
        group: str,
        options: ConsumerOptions,
        listener: Listener,
        offsets: OffsetStore,
        send_back: SendBack,
    ) -> None:
        self.group = group
        self.retry = retry_topic(group)
        self.options = options
        self.listener = listener
        self.offsets = offsets
        self.send_back = send_back
        self.batches: deque[Batch] = deque()
        self.sleeping: deque[asyncio.Future[None]] = deque()  # workers waiting for a batch
        self.waking = 0  # workers woken that have not run yet
        self.workers: list[asyncio.Task[None]] = []
        self.busy = 0  # listener calls (and their results) under way
        self.idle: asyncio.Future[None] | None = None  # drain waits for busy to reach 0
        self.later: set[asyncio.TimerHandle] = set()
        self.closing = False  # shutdown: what is not consumed stays uncommitted, not sent back

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, _wake: bool
    ) -> None:
        if not self.workers:
            loop = asyncio.get_running_loop()
            n = max(1, self.options.consume_concurrency)
            self.workers = [loop.create_task(self._worker()) for _ in range(n)]
        step = max(1, self.options.consume_message_batch_max_size)
        for i in range(0, len(msgs), step):
            self._add((msgs[i : i + step], pq, mq))

    def _add(self, batch: Batch) -> None:
        self.batches.append(batch)
        if not self.waking:
            self._wake()

    def _wake(self) -> None:
        """Wake one sleeping worker (a cancelled one does not count)."""
        while self.sleeping:
            waiter = self.sleeping.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self.waking += 1
                return

    async def _worker(self) -> None:
        batches, loop = self.batches, asyncio.get_running_loop()
        while True:
            if not batches:  # a batch may be added, then taken by a running worker
                waiter = loop.create_future()
                self.sleeping.append(waiter)
                try:
                    await waiter
                finally:  # woken (then perhaps cancelled before running), or cancelled
                    if waiter.done() and not waiter.cancelled():
                        self.waking -= 1
                continue
            msgs, pq, mq = batches.popleft()
            if batches and not self.waking:
                self._wake()  # in case this listener waits
            self.busy += 1
            try:
                await self._consume(msgs, pq, mq)
            finally:
                self.busy -= 1
                if not self.busy and self.idle is not None and not self.idle.done():
                    self.idle.set_result(None)

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        prepare(msgs, self.group, self.retry)
        ctx = ConsumeConcurrentlyContext(mq)
        status: object = None
        try:
            status = await self.listener.call(msgs, ctx)
        except Exception as exc:  # noqa: BLE001 - the listener's own failure: retry the messages
            log.warning("consume_failed", group=self.group, queue=mq, error=repr(exc))
        if not isinstance(status, ConsumeStatus):
            status = ConsumeStatus.RECONSUME_LATER
        if pq.dropped or (self.closing and status is not ConsumeStatus.CONSUME_SUCCESS):
            return
        # processConsumeResult
        ack = min(ctx.ack_index, len(msgs) - 1) if status is ConsumeStatus.CONSUME_SUCCESS else -1
        done = msgs
        if ack + 1 < len(msgs):  # some not consumed (none on success: no coroutine then)
            done = await self._not_consumed(msgs, msgs[ack + 1 :], ctx, pq, mq)
        offset = pq.remove(done)
        if offset >= 0 and not pq.dropped:
            self.offsets.update(mq, offset, True)

    async def _not_consumed(
        self,
        msgs: list[MessageExt],
        left: list[MessageExt],
        ctx: ConsumeConcurrentlyContext,
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> list[MessageExt]:
        """The messages after the ack index: dropped (broadcasting), else sent back or kept to
        consume here again; returns the messages done with."""
        if self.options.message_model is MessageModel.BROADCASTING:
            for m in left:
                log.warning("broadcast_consume_failed_dropped", group=self.group,
                            id=message_id(m))  # fmt: skip
            return msgs
        failed = []
        for m in left:
            if not await self.send_back(m, ctx.delay_level_when_next_consume):
                m.reconsume_times += 1
                failed.append(m)
        if not failed:
            return msgs
        self._consume_later(failed, pq, mq)
        return [m for m in msgs if m not in failed]

    def _consume_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """submitConsumeRequestLater: the broker would not take them back; try here again."""

        def again() -> None:
            self.later.discard(handle)
            if not pq.dropped and not self.closing:
                self._add((msgs, pq, mq))

        handle = asyncio.get_running_loop().call_later(LOCAL_RETRY_DELAY, again)
        self.later.add(handle)

    async def clean_expired(self, pqs: Iterable[ProcessQueue]) -> None:
        """cleanExpireMsg (every ``consume_timeout`` minutes): a queue's oldest message whose
        listener call started over ``consume_timeout`` minutes ago is sent back (delay level
        3) and forgotten, up to 16 per queue; the call itself is left to finish."""
        limit = now_ms() - self.options.consume_timeout * 60_000
        for pq in list(pqs):
            for _ in range(16):
                if pq.dropped or not pq.offsets:
                    break
                oldest = pq.msgs[pq.offsets[0]]
                started = oldest.properties.get("CONSUME_START_TIME", "")
                if not started.isdigit() or int(started) > limit:
                    break
                log.warning("consume_expired", group=self.group, id=message_id(oldest))
                await self.send_back(oldest, 3)
                pq.remove([oldest])

    async def drain(self, timeout: float | None) -> None:
        """Shutdown: batches not started are dropped (left uncommitted); the listener calls
        under way finish (up to ``timeout``); the workers stop."""
        for handle in self.later:
            handle.cancel()
        self.batches.clear()
        if self.busy:
            self.idle = asyncio.get_running_loop().create_future()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.idle, timeout)
        for w in self.workers:
            w.cancel()
        await asyncio.gather(*self.workers, return_exceptions=True)
