"""Puts of several requests in one append: the broker stores the single-message sends that
one read of a connection delivers together (SendProcessor.send_many). Each message keeps
what its own ``put`` would give it -- its refusal, its queue offset, its result -- while the
CommitLog reservation, the ConsumeQueue and index room checks and the loop over the records
are paid once per run instead of once per message.
"""

from __future__ import annotations

from mypy_extensions import trait

from aiorocketmq.broker.store.commitlog import CommitLog
from aiorocketmq.broker.store.dispatch import queued
from aiorocketmq.broker.store.queues import QueueTable
from aiorocketmq.broker.store.results import PutResult, PutStatus
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    PropertiesTooLong,
    RecordPlan,
    now_ms,
    plan_record,
)


@trait  # MessageStore's third base: mypyc compiles one base class and any traits
class Appender:
    """What ``put_many`` and ``settle_many`` ask of the store: MessageStore implements it, and
    this module needs nothing else of it (no import of broker.store.store: no circle). A
    trait, not a Protocol, so compiled calls through it stay native."""

    store_host: str
    table: QueueTable
    commitlog: CommitLog

    def _refusal(self, msgs: list[MessageExt]) -> PutStatus | None:
        """The status refusing ``msgs`` with nothing written, or None."""
        raise NotImplementedError

    def _short_of_replicas(self) -> bool:
        """Whether a put that waits is refused IN_SYNC_REPLICAS_NOT_ENOUGH now."""
        raise NotImplementedError

    def _write(self, msgs: list[MessageExt], plans: list[RecordPlan]) -> tuple[int, list[str], int]:
        """Write planned records: their first offset, message ids and end (OSError, or
        ValueError for a run longer than a segment, having written nothing)."""
        raise NotImplementedError

    def _create_failed(self, exc: OSError) -> PutStatus:
        """The status of a put whose file could not be made or grown."""
        raise NotImplementedError

    async def wait_stored(self, end: int) -> PutStatus | None:
        """None once the flush and the slave cover ``end``, else the status saying which
        did not."""
        raise NotImplementedError


def plan_puts(
    msgs: list[MessageExt], stamp: int, store_host: str, table: QueueTable
) -> list[RecordPlan]:
    """``MessageStore._append``'s plans for ``msgs``, with their queue offsets assigned (the
    physical offset comes later). Raises ValueError (PropertiesTooLong among them) before
    anything is written."""
    if len(msgs) == 1:  # the usual put: no offsets to carry between messages
        msg = msgs[0]
        msg.store_host, msg.store_timestamp = store_host, stamp
        key = (msg.topic, msg.queue_id)
        msg.queue_offset = table.queue_max(key) if queued(msg.sys_flag) else 0
        return [plan_record(msg)]
    next_offsets: dict[tuple[str, int], int] = {}
    plans = []
    for msg in msgs:
        msg.store_host, msg.store_timestamp = store_host, stamp
        key = (msg.topic, msg.queue_id)
        if queued(msg.sys_flag):
            offset = next_offsets.get(key)
            msg.queue_offset = table.queue_max(key) if offset is None else offset
            next_offsets[key] = msg.queue_offset + 1
        else:
            msg.queue_offset = 0
        plans.append(plan_record(msg))
    return plans


def put_many(
    store: Appender, msgs: list[MessageExt], waits: list[bool] | None = None
) -> list[PutResult]:
    """A result per message, in order, as ``put(msg, wait_flush=False)`` of each in turn
    would give (``settle_many`` then waits for what the waiting ones promise) -- except that
    one whose sender waits (``waits``) is refused IN_SYNC_REPLICAS_NOT_ENOUGH, unwritten,
    while the store is short of in-sync replicas. A run is cut at a quarter of a segment, so
    no run is refused for its length alone."""
    results: list[PutResult] = []
    short = waits is not None and any(waits) and store._short_of_replicas()
    host, table = store.store_host, store.table
    limit = store.commitlog.segment_size // 4
    stamp = now_ms()
    run: list[MessageExt] = []
    plans: list[RecordPlan] = []
    where: list[int] = []  # each run message's index in ``results``
    offsets: dict[tuple[str, int], int] = {}  # next queue offsets within the run
    size = 0
    for i, msg in enumerate(msgs):
        refusal = store._refusal([msg])
        if refusal is not None:
            results.append(PutResult(refusal))
            continue
        if short and waits is not None and waits[i]:
            results.append(PutResult(PutStatus.IN_SYNC_REPLICAS_NOT_ENOUGH))
            continue
        key = (msg.topic, msg.queue_id)
        msg.store_host, msg.store_timestamp = host, stamp
        if queued(msg.sys_flag):
            offset = offsets.get(key)
            msg.queue_offset = table.queue_max(key) if offset is None else offset
        else:
            msg.queue_offset = 0
        try:
            plan = plan_record(msg)
        except PropertiesTooLong:
            results.append(PutResult(PutStatus.PROPERTIES_SIZE_EXCEEDED))
            continue
        except ValueError:
            results.append(PutResult(PutStatus.MESSAGE_ILLEGAL))
            continue
        if run and size + plan.size > limit:  # written first: its offsets are then real
            _write_run(store, run, plans, where, results, stamp)
            run, plans, where, offsets, size = [], [], [], {}, 0
            if queued(msg.sys_flag):
                msg.queue_offset = table.queue_max(key)
        if queued(msg.sys_flag):
            offsets[key] = msg.queue_offset + 1
        run.append(msg)
        plans.append(plan)
        where.append(len(results))
        results.append(PutResult(PutStatus.UNKNOWN_ERROR))  # replaced by _write_run
        size += plan.size
    if run:
        _write_run(store, run, plans, where, results, stamp)
    return results


def _write_run(
    store: Appender,
    run: list[MessageExt],
    plans: list[RecordPlan],
    where: list[int],
    results: list[PutResult],
    stamp: int,
) -> None:
    try:
        _first, ids, _end = store._write(run, plans)
    except OSError as exc:  # nothing written: every message of the run is refused alike
        status = store._create_failed(exc)
        for i in where:
            results[i] = PutResult(status)
        return
    except ValueError:  # one record longer than a segment: the run holds only it
        for i in where:
            results[i] = PutResult(PutStatus.MESSAGE_ILLEGAL)
        return
    for i, msg, plan, msg_id in zip(where, run, plans, ids, strict=True):
        results[i] = PutResult(
            PutStatus.PUT_OK, msg.commit_log_offset, msg.queue_offset, [msg_id], stamp, plan.size
        )


async def settle_many(
    store: Appender, results: list[PutResult], waits: list[bool]
) -> list[PutResult]:
    """``results`` (of one ``put_many``) once the flush (SYNC_FLUSH) and the slave
    (SYNC_MASTER) cover every stored message whose sender waits (``waits``, the WAIT
    property): one wait up to the last of their records, as one group commit answers all the
    requests its flush covered (CommitLog.GroupCommitService). A wait that fails gives each
    of them its status (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) --
    a message the slave did take before the timeout too: never an ack without the promise."""
    ok = PutStatus.PUT_OK
    ends = [
        r.phys_offset + r.wrote_bytes
        for r, w in zip(results, waits, strict=True)
        if w and r.status is ok
    ]
    if not ends:
        return results
    status = await store.wait_stored(max(ends))
    if status is None:
        return results
    return [
        r._replace(status=status) if w and r.status is ok else r
        for r, w in zip(results, waits, strict=True)
    ]
