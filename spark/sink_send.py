"""The sink's sends, on executors: one event loop per Python worker process on a daemon
thread, its producers cached by name server, group, timeout and account (spark-connector.md §4: a
worker is reused across tasks, micro-batches and queries, like Kafka's producer cache), and
a ``Sender`` per ``write()`` that keeps a bounded number of sends in flight.

Nothing here is created before ``write()`` runs, so a writer pickles without sockets.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvloop

from aiorocketmq.client import Message, MessageQueue, Producer, SendStatus
from aiorocketmq.spark.access import Access
from aiorocketmq.spark.sink_rows import Routed, chunks

# a SEND_BATCH_MESSAGE body stays well under the brokers' 4 MiB maxMessageSize
BATCH_BYTES = 1 << 20
# sends (a batch, a message, or one queue's run of messages) in flight per write()
WINDOW = 16


class SinkSendError(RuntimeError):
    """A send failed: the task fails, and Spark retries it (at-least-once delivery)."""


class NoSuchQueueError(ValueError):
    """A row's queueId is not a writable queue of its topic."""


@dataclass
class _Process:
    pid: int
    loop: asyncio.AbstractEventLoop
    producers: dict[tuple[str, str, int, Access], Producer] = field(default_factory=dict)


_lock = threading.Lock()
_process: _Process | None = None


def _this_process() -> _Process:
    """The process's loop, started the first time (again in a forked child)."""
    global _process
    with _lock:
        if _process is None or _process.pid != os.getpid():
            loop = uvloop.new_event_loop()
            threading.Thread(target=loop.run_forever, name="rocketmq-sink", daemon=True).start()
            _process = _Process(os.getpid(), loop)
        return _process


def producer(
    name_server: str, group: str, timeout_ms: int, access: Access
) -> tuple[asyncio.AbstractEventLoop, Producer]:
    """The process's started producer for these settings (the account and TLS included),
    and the loop it runs on."""
    proc = _this_process()
    key = (name_server, group, timeout_ms, access)
    with _lock:
        cached = proc.producers.get(key)
    if cached is None:
        cached = asyncio.run_coroutine_threadsafe(_start(*key), proc.loop).result()
        with _lock:
            proc.producers[key] = cached
    return proc.loop, cached


async def _start(name_server: str, group: str, timeout_ms: int, access: Access) -> Producer:
    p = Producer(group, namesrv_addr=name_server, send_msg_timeout=timeout_ms, **access.keywords())
    await p.start()
    return p


def by_queue_id(queues: Sequence[MessageQueue], msg: Message, queue_id: object) -> MessageQueue:
    """The queue with this id on the first broker, in broker-name order, that has it (the
    producer's queues: writable queues of brokers with a master)."""
    for mq in queues:
        if mq.queue_id == queue_id:
            return mq
    have = sorted({f"{mq.broker_name}: {mq.queue_id}" for mq in queues})
    raise NoSuchQueueError(
        f"rocketmq sink: queueId {queue_id} is not a writable queue of topic {msg.topic} "
        f"(its queues: {', '.join(have) or 'none'})"
    )


class Sender:
    """One ``write()``'s sends: submitted from the writer's thread, run on the loop. Rows of
    one (topic, queueId) are sent one after another in row order, across record batches;
    other rows go in SEND_BATCH_MESSAGE runs of ``batch_size``, in any order."""

    def __init__(self, loop: asyncio.AbstractEventLoop, producer: Producer, batch_size: int):
        self._loop, self._producer, self._batch_size = loop, producer, batch_size
        self._slots = threading.Semaphore(WINDOW)
        self._pending: set[concurrent.futures.Future[None]] = set()
        self._pending_lock = threading.Lock()  # the loop's callbacks discard, this thread adds
        self._tails: dict[tuple[str, int], asyncio.Future[Any]] = {}  # touched on the loop only
        self.error: BaseException | None = None
        self.sent = self.requests = self.not_ok = 0  # counted on the loop

    def submit(self, routed: Routed) -> None:
        """Start sending one record batch's messages; blocks while WINDOW sends are in flight,
        raises at once if an earlier send failed."""
        for msgs in routed.batchable.values():
            for run in chunks(msgs, self._batch_size, BATCH_BYTES):
                self._spawn(self._batch(run) if len(run) > 1 else self._one(run[0]))
        for msg in routed.singles:
            self._spawn(self._one(msg))
        for (topic, queue_id), msgs in routed.pinned.items():
            self._spawn(self._pinned((topic, queue_id), msgs))

    def finish(self) -> None:
        """Wait for every send; raise the first failure."""
        concurrent.futures.wait(self._in_flight())
        self._raise_if_failed()

    def abandon(self) -> None:
        """Cancel the sends not yet done (the task is failing anyway)."""
        for fut in self._in_flight():
            fut.cancel()

    def _in_flight(self) -> list[concurrent.futures.Future[None]]:
        with self._pending_lock:
            return list(self._pending)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self.error is not None:
            coro.close()
            self._raise_if_failed()
        self._slots.acquire()
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        with self._pending_lock:
            self._pending.add(fut)
        fut.add_done_callback(self._done)

    def _done(self, fut: concurrent.futures.Future[None]) -> None:
        self._slots.release()
        with self._pending_lock:
            self._pending.discard(fut)
        if not fut.cancelled() and fut.exception() is not None and self.error is None:
            self.error = fut.exception()

    def _raise_if_failed(self) -> None:
        err = self.error
        if err is None:
            return
        if isinstance(err, ValueError):
            raise err
        raise SinkSendError(
            f"rocketmq sink: a send failed after this task stored {self.sent} messages; Spark "
            f"retries the task and sends its rows again (delivery is at-least-once): "
            f"{type(err).__name__}: {err}"
        ) from err

    def _count(self, n: int, status: SendStatus) -> None:
        self.sent += n
        self.requests += 1
        if status is not SendStatus.SEND_OK:  # stored, but not flushed or replicated in time
            self.not_ok += n

    async def _batch(self, msgs: Sequence[Message]) -> None:
        if self.error is None:
            self._count(len(msgs), (await self._producer.send_batch(msgs)).status)

    async def _one(self, msg: Message) -> None:
        if self.error is None:
            self._count(1, (await self._producer.send(msg)).status)

    async def _pinned(self, key: tuple[str, int], msgs: Sequence[Message]) -> None:
        """After the queue's earlier runs (this runs its first step in submission order)."""
        before = self._tails.get(key)
        me = asyncio.current_task()
        assert me is not None
        self._tails[key] = me
        if before is not None:
            await asyncio.wait([before])
        for msg in msgs:
            if self.error is not None:
                return
            result = await self._producer.send(msg, selector=by_queue_id, arg=key[1])
            self._count(1, result.status)
