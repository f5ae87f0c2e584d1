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
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from client.consumer_types import (
    ConsumeConcurrentlyContext,
    ConsumerOptions,
    ConsumeStatus,
    MessageModel,
    message_id,
    retry_topic,
)
from client.message import MessageQueue
from client.offsets import OffsetStore
from client.process_queue import ProcessQueue
from remoting.log import get_logger
from remoting.protocol.message import MessageExt, Prop, now_ms

log = get_logger(__name__)

SendBack = Callable[[MessageExt, int], Awaitable[bool]]
LOCAL_RETRY_DELAY = 5.0  # s: a message the broker would not take back is retried here


def is_async(listener: object) -> bool:
    call = getattr(listener, "__call__", None)  # noqa: B004 - an async __call__ counts
    return inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(call)


def prepare(msgs: list[MessageExt], group: str) -> None:
    """resetRetryAndNamespace: a message from the group's retry topic shows its original
    topic; CONSUME_START_TIME is noted on each."""
    retry = retry_topic(group)
    start = str(now_ms())
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
        if self.is_async:
            return await self.fn(msgs, ctx)
        return await asyncio.get_running_loop().run_in_executor(self.pool, self.fn, msgs, ctx)

    def close(self, wait: bool) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=True)


Batch = tuple[list[MessageExt], ProcessQueue, MessageQueue]


class ConcurrentService:
    """``consume_concurrency`` long-lived workers take batches from one queue (its length is
    bounded by the pull thresholds: messages are put here only as they are pulled)."""

    def __init__(
        self,
        group: str,
        options: ConsumerOptions,
        listener: Listener,
        offsets: OffsetStore,
        send_back: SendBack,
    ) -> None:
        self.group = group
        self.options = options
        self.listener = listener
        self.offsets = offsets
        self.send_back = send_back
        self.batches: asyncio.Queue[Batch] = asyncio.Queue()
        self.workers: list[asyncio.Task[None]] = []
        self.busy = 0  # listener calls (and their results) under way
        self.idle = asyncio.Event()
        self.idle.set()
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
            self.batches.put_nowait((msgs[i : i + step], pq, mq))

    async def _worker(self) -> None:
        while True:
            msgs, pq, mq = await self.batches.get()
            self.busy += 1
            self.idle.clear()
            try:
                await self._consume(msgs, pq, mq)
            finally:
                self.busy -= 1
                if not self.busy:
                    self.idle.set()

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        prepare(msgs, self.group)
        ctx = ConsumeConcurrentlyContext(mq)
        status: object = None
        try:
            status = await self.listener(msgs, ctx)
        except Exception as exc:  # noqa: BLE001 - the listener's own failure: retry the messages
            log.warning("consume_failed", group=self.group, queue=mq, error=repr(exc))
        if not isinstance(status, ConsumeStatus):
            status = ConsumeStatus.RECONSUME_LATER
        if self.closing and status is not ConsumeStatus.CONSUME_SUCCESS:
            return
        if not pq.dropped:
            await self._result(status, ctx, msgs, pq, mq)

    async def _result(
        self,
        status: ConsumeStatus,
        ctx: ConsumeConcurrentlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
    ) -> None:
        """processConsumeResult."""
        ack = min(ctx.ack_index, len(msgs) - 1) if status is ConsumeStatus.CONSUME_SUCCESS else -1
        done = msgs
        if self.options.message_model is MessageModel.BROADCASTING:
            for m in msgs[ack + 1 :]:
                log.warning("broadcast_consume_failed_dropped", group=self.group,
                            id=message_id(m))  # fmt: skip
        else:
            failed = []
            for m in msgs[ack + 1 :]:
                if not await self.send_back(m, ctx.delay_level_when_next_consume):
                    m.reconsume_times += 1
                    failed.append(m)
            if failed:
                done = [m for m in msgs if m not in failed]
                self._consume_later(failed, pq, mq)
        offset = pq.remove(done)
        if offset >= 0 and not pq.dropped:
            self.offsets.update(mq, offset, True)

    def _consume_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """submitConsumeRequestLater: the broker would not take them back; try here again."""

        def again() -> None:
            self.later.discard(handle)
            if not pq.dropped and not self.closing:
                self.batches.put_nowait((msgs, pq, mq))

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
        while not self.batches.empty():
            self.batches.get_nowait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.idle.wait(), timeout)
        for w in self.workers:
            w.cancel()
        await asyncio.gather(*self.workers, return_exceptions=True)
