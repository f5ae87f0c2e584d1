"""The connector's way to the cluster, through the SDK only: queue discovery, queue bounds,
offsets by time, group commits (driver side) and reading a queue range into Arrow batches
(executor side).

Nothing here lives on the objects Spark pickles: each process keeps one started
``client.PullConsumer`` per name-server list and account (credentials and TLS, the options'
``access``) in a module-level cache, run on the process's own uvloop thread (spark-connector.md
§4: executors are reused across tasks and batches, as Kafka's consumer cache).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Coroutine, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import uvloop

from aiorocketmq.client import (
    MessageQueue,
    MessageSelector,
    MQClientError,
    PullConsumer,
    PullStatus,
    RawPull,
    Starts,
    decode_columns,
    decode_starts,
)
from aiorocketmq.client.api import commit_offsets
from aiorocketmq.spark.access import Access
from aiorocketmq.spark.by_time import Found, first_at_or_after
from aiorocketmq.spark.offsets import Offsets, QueueRange, canonical
from aiorocketmq.spark.options import ReadOptions
from aiorocketmq.spark.rows import starts_batch

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRY_SECONDS = 60.0  # a pull failing this long in a row fails the task
READER_GROUP = "spark_rocketmq_reader"  # pulls say a group; nothing is committed under it
BATCH_ROWS = 32_768  # rows per Arrow batch (spark-connector.md §6: 10k-64k)
_SYSTEM_PREFIXES = ("%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_", "SCHEDULE_TOPIC", "TBW102")

_lock = threading.Lock()
_consumers: dict[tuple[str, Access], PullConsumer] = {}
_loop: tuple[int, asyncio.AbstractEventLoop] | None = None  # (pid, loop)


class DataLossError(RuntimeError):
    """Offsets the query needs are gone (aged out, or the queue shrank) and failOnDataLoss."""


def _this_loop() -> asyncio.AbstractEventLoop:
    """This process's loop: a uvloop on a daemon thread, started the first time, and again
    in a forked child (whose parent's consumers live on the parent's loop). Under _lock."""
    global _loop
    if _loop is None or _loop[0] != os.getpid():
        _consumers.clear()
        loop = uvloop.new_event_loop()
        threading.Thread(target=loop.run_forever, name="rocketmq-source", daemon=True).start()
        _loop = (os.getpid(), loop)
    return _loop[1]


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Start ``coro`` on this process's loop and return at once."""
    with _lock:
        loop = _this_loop()
    return asyncio.run_coroutine_threadsafe(coro, loop)


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on this process's loop and wait for its result."""
    return submit(coro).result(timeout)


def consumer(opts: ReadOptions) -> PullConsumer:
    """This process's started consumer for the options' name servers and account (created
    on first use, shut down at exit): one per Python worker, reused by every task, batch and
    query it runs, as Kafka's consumer cache."""
    key = (opts.name_server, opts.access)
    with _lock:
        loop = _this_loop()
        c = _consumers.get(key)
        if c is None:
            c = PullConsumer(READER_GROUP, namesrv_addr=opts.name_server, instance_name="spark",
                             auto_commit=False, **opts.access.keywords())  # fmt: skip
            asyncio.run_coroutine_threadsafe(c.start(), loop).result()
            _consumers[key] = c
        return c


@atexit.register
def _close() -> None:
    """Shut the consumers down at exit (a worker ending), bounded: their brokers see the
    connections close rather than time out."""
    with _lock:
        live = list(_consumers.values()) if _loop and _loop[0] == os.getpid() else []
        _consumers.clear()
    for c in live:
        with contextlib.suppress(Exception):
            run(c.shutdown(), 5)


# ------------------------------------------------------------------ driver side


def topics(opts: ReadOptions) -> list[str]:
    """The topics the options name: the list, the assigned ones, or every topic matching
    ``subscribePattern`` (system topics left out)."""
    if opts.assign is not None:
        return sorted(opts.assign)
    if opts.pattern is None:
        return list(opts.topics)
    found = run(consumer(opts).list_topics(), 30)
    rx = re.compile(opts.pattern)
    return sorted(t for t in found if rx.fullmatch(t) and not t.startswith(_SYSTEM_PREFIXES))


def queues(opts: ReadOptions) -> list[MessageQueue]:
    """Every readable queue of the topics (assign: the listed ones that exist)."""
    c = consumer(opts)
    out: list[MessageQueue] = []
    for topic in topics(opts):
        try:
            found = run(c.fetch_message_queues(topic), 30)
        except MQClientError:
            if opts.pattern is not None:
                continue  # deleted between listing and routing
            raise
        if opts.assign is not None:
            wanted = opts.assign[topic]
            found = [mq for mq in found if mq.queue_id in wanted.get(mq.broker_name, ())]
        out += found
    return sorted(out)


def _table(pairs: Iterable[tuple[MessageQueue, int]]) -> Offsets:
    table: Offsets = {}
    for mq, off in pairs:
        table.setdefault(mq.topic, {}).setdefault(mq.broker_name, {})[str(mq.queue_id)] = off
    return canonical(table)


def max_offsets(
    opts: ReadOptions, mqs: Iterable[MessageQueue], *, partial: bool = False
) -> Offsets:
    """Each queue's max offset, asked of the brokers at once; with ``partial`` a queue whose
    broker does not answer is left out (a streaming query then keeps it where it was until
    its broker is back)."""
    c = consumer(opts)
    queues = list(mqs)
    answers = run(_gather([c.max_offset(mq) for mq in queues]), 60)
    found = []
    for mq, answer in zip(queues, answers, strict=True):
        if isinstance(answer, BaseException):
            if not partial or not isinstance(answer, (MQClientError, TimeoutError)):
                raise answer
            log.warning("max offset of %s unknown: %s", mq, answer)
        else:
            found.append((mq, answer))
    return _table(found)


async def _gather(calls: list[Coroutine[Any, Any, int]]) -> list[int | BaseException]:
    return await asyncio.gather(*calls, return_exceptions=True)


def _all(calls: list[Coroutine[Any, Any, int]]) -> list[int]:
    out = []
    for answer in run(_gather(calls), 60):
        if isinstance(answer, BaseException):
            raise answer
        out.append(answer)
    return out


def min_offsets(opts: ReadOptions, mqs: Iterable[MessageQueue]) -> Offsets:
    c = consumer(opts)
    queues = list(mqs)
    return _table(zip(queues, _all([c.min_offset(mq) for mq in queues]), strict=True))


def offsets_at(opts: ReadOptions, times: dict[MessageQueue, int]) -> dict[MessageQueue, Found]:
    """Per queue, the first offset stored at or after its time (SEARCH_OFFSET_BY_TIMESTAMP),
    all queues at once; where no message is stored at or after it, the queue's max offset,
    not matched."""
    c = consumer(opts)
    queues = list(times)
    timeout = opts.pull_timeout_ms / 1000

    async def every() -> list[Found]:
        return await asyncio.gather(*(_at(c, mq, times[mq], timeout) for mq in queues))

    return dict(zip(queues, run(every(), 60), strict=True))


async def _at(c: PullConsumer, mq: MessageQueue, timestamp_ms: int, timeout: float) -> Found:
    found, high = await asyncio.gather(c.offset_for_timestamp(mq, timestamp_ms), c.max_offset(mq))

    async def stored_at(offset: int) -> int | None:
        raw = await c.pull_raw(mq, offset, 1, timeout)
        if raw.status is not PullStatus.FOUND:
            return None
        one = decode_columns(raw.body, include_properties=False, stop_at=offset + 1)
        return one.store_timestamp[0] if one.queue_offset[:1] == [offset] else None

    # compat: 4.9.8's answer is only a hint (spark/by_time.py, docs/compatibility.md D7)
    return await first_at_or_after(stored_at, found, high, timestamp_ms)


def commit_group(opts: ReadOptions, end: Offsets) -> None:
    """The ``group`` option: the processed offsets as that group's consumer offsets, so
    admin tools show the lag (never read back: the checkpoint is the truth)."""
    if opts.group is None:
        return
    c = consumer(opts)

    offsets = {
        MessageQueue(topic, broker, int(qid)): offset
        for topic, brokers in end.items()
        for broker, qids in brokers.items()
        for qid, offset in qids.items()
    }
    run(commit_offsets(c, opts.group, offsets), 30)


# ------------------------------------------------------------------ executor side


PULLS_IN_FLIGHT = 8  # per window of a filtered read: pulls of consecutive offsets sent at once
# per window of a read of every message: its answers line up (no filter ends one early), and a
# longer window costs the reader and the broker less per pull (8 -> 16: ≈ 8 % less CPU)
PULLS_IN_FLIGHT_ALL = 16
# a window asks for about this many messages at most: big answers (a broker of ours serving a
# bulk pull ~1,000 at a time) need fewer pulls in flight to keep it busy, and a window
# discarded (an answer ending early) then costs it less
WINDOW_MESSAGES = 4096
MAX_BATCH_BYTES = 64 << 20  # pull bodies behind one Arrow batch (its int32 offsets)


def read_range(opts: ReadOptions, r: QueueRange) -> Iterator[pa.RecordBatch]:
    """Rows of queue offsets [start, end), exactly (a replay reads the same rows), as Arrow
    batches; tags filtered exactly; gaps follow ``failOnDataLoss``.

    Pipelined: a window of ``PULLS_IN_FLIGHT`` pulls (``PULLS_IN_FLIGHT_ALL`` without a
    filter) of consecutive offsets goes out, and the next window is sent before this one's
    bodies are decoded, so the brokers work while this thread decodes. An answer is used
    only if it starts where the previous one ended (a filtered or short answer discards the
    rest of the window, and the window sent ahead). The pulls of a window are ``step``
    offsets apart: pullBatchSize, or fewer when the brokers answer fewer (a message read
    from disk: maxTransferCountOnMessageInDisk, 8; the byte caps; Apache's brokers: 32), so
    that short answers still line up. Each pull is a bulk pull (``bulkPull``, ours): a
    broker of ours serves up to pullBatchSize messages in memory within its byte cap."""
    mq = MessageQueue(r.topic, r.broker_name, r.queue_id)
    selector = opts.selector
    window = PULLS_IN_FLIGHT_ALL if selector == _EVERY else PULLS_IN_FLIGHT
    pulls = _Pulls(consumer(opts), mq, selector, opts.pull_batch_size,
                   opts.pull_timeout_ms / 1000, window)  # fmt: skip
    layout, bodies, offset = Starts(), list[bytes](), r.start
    patience = time.monotonic() + RETRY_SECONDS
    step = sent = opts.pull_batch_size  # offsets one answer covers; the sent window's
    ahead: concurrent.futures.Future[Answers] | None = _send(pulls, offset, r.end, step)
    while ahead is not None:
        answers = ahead.result(opts.pull_timeout_ms / 1000 + 5)
        ahead = None
        guess = answers[-1][0] + sent  # where this window ends if all is well
        if guess < r.end:
            ahead, sent = _send(pulls, guess, r.end, step), step
        for at, raw in answers:
            if at != offset:
                break  # the previous answer ended elsewhere: ask again from there
            if isinstance(raw, BaseException):
                if not isinstance(raw, (MQClientError, TimeoutError)):
                    raise raw
                if time.monotonic() > patience:  # a broker restarting gets this long
                    raise raw
                log.warning("pull of %s at %d failed, retrying: %s", mq, offset, raw)
                time.sleep(0.5)
                break
            patience = time.monotonic() + RETRY_SECONDS
            nxt = _take(opts, mq, raw, offset, r.end, layout, bodies)
            if nxt is None:
                offset = r.end
                break
            if raw.status is PullStatus.FOUND and nxt < r.end:
                step = min(nxt - offset, opts.pull_batch_size)  # > 0: _take saw progress
            offset = nxt
        if len(layout) >= BATCH_ROWS or layout.base >= MAX_BATCH_BYTES:
            yield _batch(opts, layout, bodies, r)
            layout, bodies = Starts(), []
        if offset >= r.end:
            break
        if offset != guess or ahead is None:  # the window sent ahead starts elsewhere
            if ahead is not None:
                ahead.cancel()
            ahead, sent = _send(pulls, offset, r.end, step), step
    if ahead is not None:
        ahead.cancel()
    if len(layout):
        yield _batch(opts, layout, bodies, r)


def _batch(opts: ReadOptions, layout: Starts, bodies: list[bytes], r: QueueRange) -> pa.RecordBatch:
    return starts_batch(layout, bodies, r.broker_name, topic=r.topic, tags=opts.tag_set,
                        include_properties=opts.include_properties)  # fmt: skip


Answers = list[tuple[int, RawPull | BaseException]]


@dataclass(frozen=True)
class _Pulls:
    """What every pull of one range sends: built once per range (a selector per pull cost
    more than the rest of its request)."""

    consumer: PullConsumer
    queue: MessageQueue
    selector: MessageSelector
    size: int  # pullBatchSize
    timeout: float  # seconds
    window: int  # pulls sent at once


_EVERY = MessageSelector.by_tag("*")


def _send(p: _Pulls, offset: int, end: int, step: int) -> concurrent.futures.Future[Answers]:
    """A window of pulls from ``offset``, ``step`` apart, sent now on the SDK's loop."""
    return submit(_window(p, offset, end, step))


async def _window(p: _Pulls, offset: int, end: int, step: int) -> Answers:
    """The window's pulls (each of up to pullBatchSize), all sent before any answer is
    awaited (``pull_raw_many``: one write, no task per pull); each start with its answer or
    its error."""
    n = p.size
    starts = list(range(offset, end, step)[: max(2, min(p.window, WINDOW_MESSAGES // step))])
    pulls = [(at, min(n, end - at)) for at in starts]
    try:
        got = await p.consumer.pull_raw_many(
            p.queue, pulls, p.timeout, expression=p.selector, bulk=True
        )
        answers: list[RawPull | BaseException] = [*got]
    except MQClientError as exc:  # before any was sent (the broker unknown): every pull
        answers = [exc] * len(starts)
    return list(zip(starts, answers, strict=True))


def _take(opts: ReadOptions, mq: MessageQueue, raw: RawPull, offset: int, end: int,
          layout: Starts, bodies: list[bytes]) -> int | None:  # fmt: skip
    """One answer's records into ``layout`` (its body to ``bodies``); the next offset, or
    None to stop (data not there)."""
    if raw.status is PullStatus.FOUND:
        if decode_starts(raw.body, layout, stop_at=end) and layout.last_offset < offset:
            raise MQClientError(f"{mq}: the broker answered offsets before {offset}")
        bodies.append(raw.body)
        nxt = raw.next_begin_offset
    elif raw.status is PullStatus.NO_MATCHED_MSG:
        nxt = raw.next_begin_offset
    elif raw.status is PullStatus.OFFSET_ILLEGAL and raw.min_offset > offset:
        _lost(opts, f"{mq}: offsets {offset}..{raw.min_offset - 1} are gone (aged out)")
        nxt = raw.min_offset
    else:  # NO_NEW_MSG / beyond the max: the range asks for messages that do not exist
        _lost(opts, f"{mq}: offsets {offset}..{end - 1} are not there "
                    f"(the queue's max offset is {raw.max_offset})")  # fmt: skip
        return None
    if nxt <= offset:
        raise MQClientError(f"{mq}: the broker gave no progress at offset {offset}")
    return nxt


def _lost(opts: ReadOptions, what: str) -> None:
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{what}. Some data may have been lost; set failOnDataLoss=false to go on"
        )
