"""END_TRANSACTION for the exactly-once sink's half messages, by their handles, from a
started ``TransactionProducer`` of their group: the driver's commit and abort
(spark/sink_exactly_once.py), and the answerer finishing a commit its driver left half done
(spark/sink_answerer.py).

Every END waits for the broker's answer, so the commit knows which ENDs took: a check-back
about a half whose END was answered SUCCESS is about a stale copy of it (the broker copies a
half each time it checks one) and is answered ROLLBACK; only a half whose END failed is
committed by a check-back (spark/sink_txlog.py ``TxLog.decide``).

A queue's ordered halves (their rows gave a queueId or keys) are ended one at a time, each
END answered before the next goes: the broker writes a committed message into its queue when
the END arrives, and a broker may run ENDs in a pool (Java's endTransactionExecutor), so
only this keeps the queue in row order. Queues go at once; the other halves ``WINDOW`` at a
time per broker.
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
    TransactionProducer,
)
from aiorocketmq.spark.sink_txlog import Half

log = logging.getLogger(__name__)

END_TIMEOUT_S = 600.0  # a commit's ENDs
WINDOW = 64  # unordered ENDs in flight per broker

Todo = list[tuple[Half, LocalTransactionState]]


async def end_halves(
    tx: TransactionProducer, ends: Iterable[tuple[list[Half], LocalTransactionState]]
) -> list[Half]:
    """END each half of each list with its state; the halves whose END failed (logged by the
    SDK, never raised)."""
    runs: dict[tuple[str, str, int], Todo] = {}
    for halves, state in ends:
        for half in halves:
            topic, broker, queue_id = half[0], half[1], half[2]
            where = (topic, broker, queue_id) if queue_id >= 0 else ("", broker, -1)
            runs.setdefault(where, []).append((half, state))
    calls = [
        _in_turn(tx, run) if where[2] >= 0 else _windowed(tx, run) for where, run in runs.items()
    ]
    failed = [h for part in await asyncio.wait_for(asyncio.gather(*calls), END_TIMEOUT_S)
              for h in part]  # fmt: skip
    if failed:
        log.warning("sink_end_failed halves=%d (check-backs commit them)", len(failed))
    return failed


async def _end(tx: TransactionProducer, half: Half, state: LocalTransactionState) -> bool:
    topic, broker, queue_id, queue_offset, offset_msg_id, msg_id = half
    sent = SendResult(SendStatus.SEND_OK, msg_id, offset_msg_id,
                      MessageQueue(topic, broker, max(queue_id, 0)), queue_offset)  # fmt: skip
    return await tx.end_transaction(sent, state, oneway=False)


async def _in_turn(tx: TransactionProducer, run: Todo) -> list[Half]:
    return [half for half, state in run if not await _end(tx, half, state)]


async def _windowed(tx: TransactionProducer, run: Todo) -> list[Half]:
    slots = asyncio.Semaphore(WINDOW)

    async def one(half: Half, state: LocalTransactionState) -> bool:
        async with slots:
            return await _end(tx, half, state)

    took = await asyncio.gather(*(one(half, state) for half, state in run))
    return [half for (half, _), ok in zip(run, took, strict=True) if not ok]
