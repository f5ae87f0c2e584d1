"""The sink's ``exactlyOnce`` mode: each task sends its rows as half (transactional)
messages, and the driver's commit of the batch makes them visible (issue 34 item 1).

- **Executors** (``write``): the rows are sent as half messages of the write's producer
  group (``Place.group``: one per query, derived from its checkpoint, so a restarted driver
  has the same one), by the sink's ordinary ``producerGroup`` producer: ``batchSize`` rows
  of one queue parked as ONE half (ours beyond 4.9.8: the SDK's ``send_half_batch``, one
  SEND_BATCH_MESSAGE, one record, one END; one half a row, a request each, to a broker that
  refuses that). Each half carries the query, the batch id (Spark's
  ``streaming.sql.batchId`` local property; 0 for a batch job) and the task attempt
  (``writer``, a fresh id per ``write()`` call). The task returns the halves' handles in row
  order. A task that fails rolls back what it sent, best effort.
- **Driver** (``commit``): the batch's record -- the task attempts it commits and their
  halves -- is written to the commit log (spark/sink_txlog.py) first, the first commit of a
  batch id winning; then END_TRANSACTION COMMIT goes to each half (many to a request where
  the broker takes it: spark/sink_ends.py), in row order per task (the broker writes a
  committed message into its queue when the END arrives, so rows of one queue appear in row
  order). A re-run of a batch whose record exists (a driver killed after
  its commit began) rolls its own halves back and commits the recorded ones again.
  ``abort`` rolls back the halves the finished tasks reported.
- **Check-backs** (halves of a killed task, ENDs lost with a driver): answered from the log
  by the driver's answerer process (spark/sink_answerer.py).

Rows with a ``queueId`` go to that queue, rows with ``keys`` (and no queueId) to the queue
their keys hash to (``select_by_hash``), the others round robin; with either given, a queue's
rows appear in row order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import random
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from aiorocketmq.client import (
    LocalTransactionState,
    Message,
    MessageQueue,
    Producer,
    SendResult,
    SendStatus,
    TransactionBatchNotSupported,
    TransactionProducer,
    half_message,
    select_by_hash,
    send_half_batch,
)
from aiorocketmq.spark.options import WriteOptions
from aiorocketmq.spark.sink_answerer import Answers, Settings, driver_pid, ensure
from aiorocketmq.spark.sink_ends import end_halves
from aiorocketmq.spark.sink_rows import Columns, chunks, in_order
from aiorocketmq.spark.sink_send import (
    BATCH_BYTES,
    NoSuchQueueError,
    SinkSendError,
    by_queue_id,
    producer,
)
from aiorocketmq.spark.sink_txlog import (
    BATCH_PROPERTY,
    QUERY_PROPERTY,
    WRITER_PROPERTY,
    Half,
    Place,
    Record,
    TxLog,
    process_token,
    purge_jobs,
)

log = logging.getLogger(__name__)

REQUESTS = 8  # SEND_BATCH_MESSAGE requests of halves in flight per record batch
SINGLES = 64  # halves in flight per write() to a broker without half batches: one a request
BATCHES_IN_FLIGHT = 2  # record batches a write() sends at once
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # MicroBatchExecution.BATCH_ID_KEY
END_TIMEOUT_S = 600.0  # a commit's ENDs (and the barrier after them)


@dataclass
class HalvesSent:
    """What one task attempt sent: its halves' handles in row order (pickled to the driver
    with the commit message)."""

    writer: str
    halves: list[Half] = field(default_factory=list)
    not_ok: int = 0
    rows: int = 0  # the rows the halves hold


# ------------------------------------------------------------------ executors


def batch_id(streaming: bool) -> int:
    """The micro-batch this task writes (Spark's local property); 0 for a batch job."""
    if not streaming:
        return 0
    from pyspark import TaskContext

    ctx = TaskContext.get()
    value = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    if not value:
        raise RuntimeError(
            f"rocketmq sink: exactlyOnce found no batch id ({BATCH_ID_PROPERTY}) in the task"
        )
    return int(value)


def write(
    opts: WriteOptions, cols: Columns, place: Place, batch: int, batches: Iterator[pa.RecordBatch]
) -> tuple[int, HalvesSent]:
    """Send every row of the task as a half message of ``batch``; (rows, what was sent). On
    failure the halves sent so far are rolled back (best effort) and the error raised."""
    loop, prod = producer(opts.name_server, opts.producer_group, opts.send_timeout_ms, opts.access)
    props = {
        QUERY_PROPERTY: place.query,
        BATCH_PROPERTY: str(batch),
        WRITER_PROPERTY: uuid.uuid4().hex,
    }
    sender = _HalfSender(loop, prod, props, opts.batch_size, place.group)
    rows, done = 0, False
    try:
        for record_batch in batches:
            rows += record_batch.num_rows
            sender.submit(list(in_order(record_batch, cols, opts.topic)))
        sent = sender.finish()
        sent.rows = rows
        done = True
    finally:
        if not done:
            _roll_back_own(opts, place, sender.abandon())
    return rows, sent


class _HalfSender:
    """One write()'s half messages: each record batch's sent by one coroutine on the loop, in
    SEND_BATCH_MESSAGE requests of up to ``batchSize`` rows of a queue, each parked as one
    half (``REQUESTS`` in flight; two record batches at a time), their handles kept in row
    order. ``props`` (the query, batch and writer) are every half's."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, prod: Producer, props: dict[str, str],
        batch_size: int, group: str,
    ) -> None:  # fmt: skip
        self._loop, self._producer, self._batch_size = loop, prod, batch_size
        self._group, self._props = group, props  # the halves' producer group, properties
        self._slots = threading.Semaphore(BATCHES_IN_FLIGHT)
        self._futures: list[concurrent.futures.Future[None]] = []
        self._handles: list[list[Half | None]] = []  # per record batch, filled on the loop
        self.sent = HalvesSent(props[WRITER_PROPERTY])
        self.error: BaseException | None = None
        # round robin over the topic's queues (on the loop only), from a random one: tasks
        # that each send a run or two spread over the queues
        self._turn = random.randrange(1 << 16)
        self._queues: dict[str, list[MessageQueue]] = {}  # per topic (on the loop only)
        self._singles = asyncio.Semaphore(SINGLES)
        self._no_batch: set[str] = set()  # brokers that refused a batch of halves

    def submit(self, halves: list[tuple[Message, int | None]]) -> None:
        """Start sending one record batch's halves (and their queueIds); blocks while two
        batches are in flight, raises at once if an earlier send failed."""
        if self.error is not None:
            raise self._failure()
        self._slots.acquire()
        out: list[Half | None] = [None] * len(halves)
        self._handles.append(out)
        fut = asyncio.run_coroutine_threadsafe(self._send_all(halves, out), self._loop)
        fut.add_done_callback(self._done)
        self._futures.append(fut)

    def _done(self, fut: concurrent.futures.Future[None]) -> None:
        self._slots.release()
        if not fut.cancelled() and fut.exception() is not None and self.error is None:
            self.error = fut.exception()

    async def _send_all(
        self, halves: list[tuple[Message, int | None]], out: list[Half | None]
    ) -> None:
        unplanned: list[Exception] = []
        parts = await self._parts(halves, unplanned)
        errors: list[Exception] = []
        slots = asyncio.Semaphore(REQUESTS)

        async def one(mq: MessageQueue, ordered: bool, rows: list[int]) -> None:
            async with slots:
                if errors or self.error is not None:
                    return
                try:
                    results = await self._send(mq, [halves[i][0] for i in rows])
                except Exception as exc:  # noqa: BLE001 - the first one is raised below
                    errors.append(exc)
                    return
            places = rows if len(results) == len(rows) else rows[:1]  # one half of them all
            for i, result in zip(places, results, strict=True):
                out[i] = self._handle(result, ordered)

        # every request under way finishes (its halves known) before this ends: a failing
        # task rolls back what it stored
        await asyncio.gather(*(one(*part) for part in parts))
        if errors or unplanned:
            raise (errors or unplanned)[0]

    async def _parts(
        self, halves: list[tuple[Message, int | None]], errors: list[Exception]
    ) -> list[tuple[MessageQueue, bool, list[int]]]:
        """The requests: (queue, ordered, the rows it carries). A row with a queueId goes to
        that queue, one with keys to the queue they hash to (``select_by_hash``, as a
        producer's ``send_orderly``), each queue's in row order; the others in runs, round
        robin over the topic's queues. A row whose queueId the topic lacks ends the plan:
        the rows before it are sent, and its NoSuchQueueError goes to ``errors`` (the task
        fails as it did when each row was sent in turn)."""
        pinned: dict[MessageQueue, list[int]] = {}
        loose: dict[str, list[int]] = {}
        for i, (half, queue_id) in enumerate(halves):
            if queue_id is None and not half.keys:
                loose.setdefault(half.topic, []).append(i)
                continue
            queues = await self._topic_queues(half.topic)
            try:
                if queue_id is not None:
                    mq = by_queue_id(queues, half, queue_id)
                else:
                    mq = select_by_hash(queues, half, half.keys)
            except NoSuchQueueError as exc:
                errors.append(exc)
                break
            pinned.setdefault(mq, []).append(i)
        parts = [(mq, True, run) for mq, rows in pinned.items()
                 for run in self._runs(halves, rows)]  # fmt: skip
        for topic, rows in loose.items():
            queues = await self._topic_queues(topic)
            for run in self._runs(halves, rows):
                self._turn += 1
                parts.append((queues[self._turn % len(queues)], False, run))
        return parts

    def _runs(self, halves: list[tuple[Message, int | None]], rows: list[int]) -> list[list[int]]:
        """``rows`` cut as the at-least-once sink cuts its batches (count and bytes)."""
        out, at = [], 0
        for run in chunks([halves[i][0] for i in rows], self._batch_size, BATCH_BYTES):
            out.append(rows[at : at + len(run)])
            at += len(run)
        return out

    async def _topic_queues(self, topic: str) -> list[MessageQueue]:
        queues = self._queues.get(topic)
        if queues is None:
            queues = self._queues[topic] = await self._producer.fetch_publish_message_queues(topic)
            if not queues:
                raise SinkSendError(f"rocketmq sink: topic {topic} has no writable queue")
        return queues

    async def _send(self, mq: MessageQueue, msgs: list[Message]) -> list[SendResult]:
        """``msgs`` sent as halves of the write's group to ``mq``: one half holding them all
        (its SendResult), or one a row."""
        # one try each (send_half_batch and a send to a given queue are never retried): a retried
        # send whose first try timed out yet was stored would leave a second half of a row,
        # and check-backs would commit it with the task's others. A failure fails the task.
        if mq.broker_name not in self._no_batch:
            try:
                return [await send_half_batch(self._producer, msgs, self._group, mq,
                                              properties=self._props)]  # fmt: skip
            except TransactionBatchNotSupported as exc:  # nothing of it was stored
                self._no_batch.add(mq.broker_name)
                log.info("sink_half_batch_not_supported broker=%s (%s): one half a request",
                         mq.broker_name, exc)  # fmt: skip
        return list(await asyncio.gather(*(self._one(mq, msg) for msg in msgs)))

    async def _one(self, mq: MessageQueue, msg: Message) -> SendResult:
        msg.properties.update(self._props)
        async with self._singles:
            return await self._producer.send(half_message(msg, self._group), queue=mq)

    def _handle(self, result: SendResult, ordered: bool) -> Half:
        if result.status is not SendStatus.SEND_OK:
            self.sent.not_ok += 1  # stored, not flushed or replicated in time
        mq = result.queue
        return (mq.topic, mq.broker_name, mq.queue_id if ordered else -1, result.queue_offset,
                result.offset_msg_id, result.msg_id)  # fmt: skip

    def finish(self) -> HalvesSent:
        concurrent.futures.wait(self._futures)
        if self.error is not None:
            raise self._failure()
        self.sent.halves = [h for out in self._handles for h in out if h is not None]
        return self.sent

    def abandon(self) -> list[Half]:
        """Stop sending; the halves stored so far."""
        self.error = self.error or SinkSendError("abandoned")
        concurrent.futures.wait(self._futures)
        return [h for out in self._handles for h in out if h is not None]

    def _failure(self) -> BaseException:
        err = self.error
        assert err is not None
        if isinstance(err, ValueError):
            return err
        return SinkSendError(
            f"rocketmq sink: a send of a half message failed: {type(err).__name__}: {err} "
            "(exactlyOnce: a half is sent once, never retried; this task's halves are rolled "
            "back, Spark's retry of the task sends its rows again and only its become visible)"
        )


def _roll_back_own(opts: WriteOptions, place: Place, halves: list[Half]) -> None:
    """A failing task's halves can never be committed (the driver never hears of them):
    rolled back now rather than at a check-back."""
    if not halves:
        return
    try:
        asyncio.run(_end(opts, place, [(halves, LocalTransactionState.ROLLBACK_MESSAGE)]))
    except Exception as exc:  # noqa: BLE001 - the check-back rolls them back instead
        log.warning("sink_half_rollback_failed halves=%d error=%s", len(halves), exc)


# ------------------------------------------------------------------ driver


def settings(opts: WriteOptions, place: Place) -> Settings:
    return Settings(place, opts.name_server, opts.access, opts.send_timeout_ms, driver_pid())


def start_answerer(opts: WriteOptions, place: Place) -> None:
    """The check-back answerer of the write's group, unless one runs (on the driver)."""
    ensure(settings(opts, place))


def commit(opts: WriteOptions, place: Place, batch: int, sent: Sequence[HalvesSent]) -> None:
    """Record the batch as committed (unless an earlier run did), then END its halves."""
    start_answerer(opts, place)
    halves = tuple(h for s in sent for h in s.halves)
    rows = sum(s.rows for s in sent)
    record = Record(tuple(s.writer for s in sent), halves, process_token(), rows)
    txlog = TxLog(place.log_dir, place.query)
    earlier = txlog.record(batch, record)
    to_roll_back: list[Half] = []
    to_commit = list(halves)
    if earlier is not None:  # committed by an earlier run (its driver died before Spark
        # logged the commit): these are rolled back; that run's are committed, unless its
        # ENDs all went (an END is idempotent on our brokers, not on Apache's)
        log.warning("sink_batch_committed_before batch=%d halves_rolled_back=%d", batch,
                    len(halves))  # fmt: skip
        to_roll_back = to_commit
        to_commit = [] if txlog.is_finished(batch) else list(earlier.halves)
    ends = [(to_roll_back, LocalTransactionState.ROLLBACK_MESSAGE),
            (to_commit, LocalTransactionState.COMMIT_MESSAGE)]  # fmt: skip
    per_half = max(record.per_half(), earlier.per_half() if earlier is not None else 1)
    failed = set(asyncio.run(_end(opts, place, ends, per_half)))
    if earlier is None or to_commit:
        txlog.finished(batch, [h[5] for h in to_commit if h in failed])
    if place.streaming:
        txlog.purge()
    else:
        purge_jobs(place.log_dir)


def abort(opts: WriteOptions, place: Place, sent: Sequence[HalvesSent]) -> None:
    """Roll back the halves the finished tasks reported; a batch job is marked aborted, so
    check-backs roll back those of its failed tasks too (a stream's are rolled back once a
    later run commits the batch, or left to the broker, which drops a half it never gets an
    answer about after transactionCheckMax checks)."""
    start_answerer(opts, place)
    if not place.streaming:
        TxLog(place.log_dir, place.query).abort()
    halves = [h for s in sent for h in s.halves]
    asyncio.run(_end(opts, place, [(halves, LocalTransactionState.ROLLBACK_MESSAGE)]))


async def _end(
    opts: WriteOptions, place: Place, ends: list[tuple[list[Half], LocalTransactionState]],
    per_half: int = 1,
) -> list[Half]:  # fmt: skip
    """END_TRANSACTION for each half (spark/sink_ends.py) from a producer of the group."""
    tx = TransactionProducer(
        place.group, Answers(place.log_dir), opts.name_server,
        send_msg_timeout=opts.send_timeout_ms, **opts.access.keywords(),
    )  # fmt: skip
    await tx.start()
    try:
        return await end_halves(tx, ends, per_half=per_half)
    finally:
        await tx.shutdown()  # its UNREGISTER_CLIENT follows the oneway ENDs: they were read
