"""END_TRANSACTION for the exactly-once sink's half messages, by their handles, from a
started ``TransactionProducer`` of their group: the driver's commit and abort
(spark/sink_exactly_once.py), and the answerer finishing a commit its driver left half done
(spark/sink_answerer.py).

Every END waits for the broker's answer, so the commit knows which ENDs took: a check-back
about a half whose END was answered SUCCESS is about a stale copy of it (the broker copies a
half each time it checks one) and is answered ROLLBACK; only a half whose END failed is
committed by a check-back (spark/sink_txlog.py ``TxLog.decide``).

A broker's halves are ended up to ``PART`` to an END_TRANSACTION_BATCH (ours: the SDK's
``end_transactions``), each answered per half; fewer when a half holds many rows (a parked
batch), so that a request commits about ``END_MESSAGES`` messages and is answered well within
the send timeout. The broker appends a request's committed
messages in the order of its entries, so a queue's ordered halves (their rows gave a
queueId or keys) go in row order, in requests one after another, each answered before the
next goes (a broker may run requests in a pool, as Java's endTransactionExecutor); the
other halves ``WINDOW`` requests at a time. Brokers go at once.

A broker without the batch END (an Apache broker, or ours with
``enableBatchTransaction=false``) gets one END_TRANSACTION a half, as before: a queue's
ordered halves one at a time, the others ``WINDOW`` at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from aiorocketmq.client import (
    LocalTransactionState,
    MessageQueue,
    SendResult,
    SendStatus,
    TransactionBatchNotSupported,
    TransactionProducer,
    end_transactions,
)
from aiorocketmq.spark.sink_txlog import Half

log = logging.getLogger(__name__)

END_TIMEOUT_S = 600.0  # a commit's ENDs
WINDOW = 64  # unordered ENDs (one at a time), or 4 batch ENDs, in flight per broker
PART = 1024  # ENDs per END_TRANSACTION_BATCH, at most
END_MESSAGES = 4096  # messages an END_TRANSACTION_BATCH commits, about (one broker append)
BATCH_WINDOW = 4

Todo = list[tuple[Half, LocalTransactionState]]


async def end_halves(
    tx: TransactionProducer, ends: Iterable[tuple[list[Half], LocalTransactionState]], *,
    per_half: int = 1,
) -> list[Half]:  # fmt: skip
    """END each half of each list with its state (``per_half``: the rows a half holds, at
    most); the halves whose END failed (logged by the SDK, never raised)."""
    by_broker: dict[str, Todo] = {}
    for halves, state in ends:
        for half in halves:
            by_broker.setdefault(half[1], []).append((half, state))
    calls = [_broker(tx, broker, todo, part_size(per_half)) for broker, todo in by_broker.items()]
    failed = [h for part in await asyncio.wait_for(asyncio.gather(*calls), END_TIMEOUT_S)
              for h in part]  # fmt: skip
    if failed:
        log.warning("sink_end_failed halves=%d (check-backs commit them)", len(failed))
    return failed


def part_size(per_half: int) -> int:
    """ENDs per END_TRANSACTION_BATCH for halves of up to ``per_half`` rows: about
    ``END_MESSAGES`` messages committed a request, at most ``PART`` entries, at least one."""
    return max(1, min(PART, END_MESSAGES // max(per_half, 1)))


async def _broker(tx: TransactionProducer, broker: str, todo: Todo, part: int) -> list[Half]:
    """A broker's ENDs: batched, unless it refuses the first request (then nothing of it
    was ended; asked again at the next call, so an upgraded broker is used at once)."""
    try:
        return await _batched(tx, todo, part)
    except TransactionBatchNotSupported as exc:
        log.info("sink_end_batch_not_supported broker=%s (%s): one END a half", broker, exc)
    return await _one_by_one(tx, todo)


async def _batched(tx: TransactionProducer, todo: Todo, size: int) -> list[Half]:
    ordered = [t for t in todo if t[0][2] >= 0]  # in row order per queue, as given
    loose = [t for t in todo if t[0][2] < 0]
    slots = asyncio.Semaphore(BATCH_WINDOW)

    async def part(run: Todo) -> list[Half]:
        async with slots:
            took = await end_transactions(tx, [(_sent(half), state) for half, state in run])
        return [half for (half, _), ok in zip(run, took, strict=True) if not ok]

    async def in_turn(run: Todo) -> list[Half]:
        return [h for i in range(0, len(run), size) for h in await part(run[i : i + size])]

    parts = [part(loose[i : i + size]) for i in range(0, len(loose), size)]
    done = await asyncio.gather(in_turn(ordered), *parts, return_exceptions=True)
    for outcome in done:  # every request finished before the fallback starts
        if isinstance(outcome, BaseException):
            raise outcome
    return [h for failed in done if not isinstance(failed, BaseException) for h in failed]


async def _one_by_one(tx: TransactionProducer, todo: Todo) -> list[Half]:
    """One END_TRANSACTION a half: a queue's ordered halves in turn, the others windowed."""
    runs: dict[tuple[str, int], Todo] = {}
    for half, state in todo:
        where = (half[0], half[2]) if half[2] >= 0 else ("", -1)
        runs.setdefault(where, []).append((half, state))
    calls = [
        _in_turn(tx, run) if where[1] >= 0 else _windowed(tx, run) for where, run in runs.items()
    ]
    return [h for part in await asyncio.gather(*calls) for h in part]


def _sent(half: Half) -> SendResult:
    """The half's SendResult, rebuilt from its handle (what the SDK's ENDs take)."""
    topic, broker, queue_id, queue_offset, offset_msg_id, msg_id = half
    return SendResult(SendStatus.SEND_OK, msg_id, offset_msg_id,
                      MessageQueue(topic, broker, max(queue_id, 0)), queue_offset)  # fmt: skip


async def _end(tx: TransactionProducer, half: Half, state: LocalTransactionState) -> bool:
    return await tx.end_transaction(_sent(half), state, oneway=False)


async def _in_turn(tx: TransactionProducer, run: Todo) -> list[Half]:
    return [half for half, state in run if not await _end(tx, half, state)]


async def _windowed(tx: TransactionProducer, run: Todo) -> list[Half]:
    slots = asyncio.Semaphore(WINDOW)

    async def one(half: Half, state: LocalTransactionState) -> bool:
        async with slots:
            return await _end(tx, half, state)

    took = await asyncio.gather(*(one(half, state) for half, state in run))
    return [half for (half, _), ok in zip(run, took, strict=True) if not ok]
