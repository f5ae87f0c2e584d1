"""END_TRANSACTION for the exactly-once sink's half messages, by their handles, from a
started ``TransactionProducer`` of their group: the driver's commit and abort
(spark/sink_exactly_once.py), and the answerer finishing a commit its driver left half done
(spark/sink_answerer.py).

A queue's ordered halves (their rows gave a queueId or keys) are ended one at a time, each
END answered before the next goes: the broker writes a committed message into its queue when
the END arrives, and a broker may run ENDs in a pool (Java's endTransactionExecutor), so only
this keeps the queue in row order. Queues go at once. The other halves go oneway, streamed
per broker. When the producer shuts down, its UNREGISTER_CLIENT (two-way) follows the
oneway ENDs on the same connections, so they were read by then.
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


async def end_halves(
    tx: TransactionProducer, ends: Iterable[tuple[list[Half], LocalTransactionState]]
) -> int:
    """END each half of each list with its state; how many ENDs failed (logged by the SDK,
    never raised: a check-back settles them)."""
    runs: dict[tuple[str, str, int], list[tuple[Half, LocalTransactionState]]] = {}
    for halves, state in ends:
        for half in halves:
            topic, broker, queue_id = half[0], half[1], half[2]
            where = (topic, broker, queue_id) if queue_id >= 0 else ("", broker, -1)
            runs.setdefault(where, []).append((half, state))
    calls = [_end_run(tx, run, oneway=where[2] < 0) for where, run in runs.items()]
    failed = sum(await asyncio.wait_for(asyncio.gather(*calls), END_TIMEOUT_S))
    if failed:
        log.warning("sink_end_failed halves=%d (a check-back settles them)", failed)
    return failed


async def _end_run(
    tx: TransactionProducer, run: list[tuple[Half, LocalTransactionState]], *, oneway: bool
) -> int:
    failed = 0
    for (topic, broker, queue_id, queue_offset, offset_msg_id), state in run:
        sent = SendResult(SendStatus.SEND_OK, offset_msg_id, offset_msg_id,
                          MessageQueue(topic, broker, max(queue_id, 0)), queue_offset)  # fmt: skip
        if not await tx.end_transaction(sent, state, oneway=oneway):
            failed += 1
    return failed
