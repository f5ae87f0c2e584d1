"""END_TRANSACTION_BATCH (ours, remoting/protocol/txbatch.py): many ENDs of one producer
group in one request, each checked and answered on its own, the committed messages appended
in the entries' order with one op message naming every half ended, in appends of about
``CHUNK`` messages (a parked batch, broker/half_record.py, commits many).

Each entry gets END_TRANSACTION's answer for it (``Transactions.end``): a bad entry (no such
half, another group's, wrong offsets, malformed) its own refusal, a half already ended --
before, or by an earlier entry of the same request -- SUCCESS with nothing written; the
others are stored together, so a failed append answers each of its commits with the put
status's code (a rollback's failure is only logged, as a single END's: the half is checked
again)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import structlog

from aiorocketmq.broker.transaction_state import chain_root
from aiorocketmq.broker.transactions import STORED, Outcome, Transactions
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from aiorocketmq.remoting.protocol.message import MessageExt
from aiorocketmq.remoting.protocol.txbatch import EndEntry

log = structlog.get_logger(__name__)

MALFORMED = Outcome(R.SYSTEM_ERROR, "malformed entry: [commitLogOffset, tranStateTableOffset, "
                    "msgId, commitOrRollback] expected")  # fmt: skip
NOT_ENDING = Outcome(R.SYSTEM_ERROR, "commitOrRollback must be 8 (commit) or 12 (rollback)")
CHUNK: Final = 4096  # committed messages an append gathers before it is written


@dataclass
class _Chunk:
    """Ends gathered for one append."""

    halves: list[MessageExt] = field(default_factory=list)  # in entry order
    finals: list[MessageExt] = field(default_factory=list)  # their committed messages
    commits: list[int] = field(default_factory=list)  # entries answered by the append


async def end_many(
    tx: Transactions, group: str, entries: Sequence[EndEntry | None]
) -> list[Outcome]:
    """One outcome per entry, in order."""
    outcomes: list[Outcome | None] = [None] * len(entries)
    chunk = _Chunk()
    roots: list[int] = []
    ended = committed = 0
    try:
        for i, entry in enumerate(entries):
            if entry is None:
                outcomes[i] = MALFORMED
                continue
            kind = entry.commit_or_rollback
            if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
                outcomes[i] = NOT_ENDING
                continue
            half = tx.checked(group, entry.commit_log_offset, entry.tran_state_table_offset)
            if isinstance(half, Outcome):
                outcomes[i] = half
                continue
            root = chain_root(half)
            if tx.ops.ended(half) or root in tx.ending:
                outcomes[i] = Outcome(R.SUCCESS)  # ended already (maybe by an earlier entry)
                continue
            if kind == TRANSACTION_COMMIT_TYPE:
                msgs = tx.committed(half, entry.commit_log_offset)
                if isinstance(msgs, Outcome):
                    outcomes[i] = msgs
                    continue
                chunk.finals += msgs
                chunk.commits.append(i)
            else:
                outcomes[i] = Outcome(R.SUCCESS)  # rollbackMessage: a failed op is logged
            tx.ending.add(root)
            roots.append(root)
            chunk.halves.append(half)
            if len(chunk.finals) >= CHUNK:
                await _append(tx, chunk, outcomes)
                ended, committed = ended + len(chunk.halves), committed + len(chunk.finals)
                chunk = _Chunk()
        if chunk.halves:
            await _append(tx, chunk, outcomes)
            ended, committed = ended + len(chunk.halves), committed + len(chunk.finals)
    finally:
        for root in roots:
            tx.ending.discard(root)
    log.debug("end_transaction_batch", group=group, entries=len(entries), ended=ended,
              committed=committed)  # fmt: skip
    done = [o for o in outcomes if o is not None]
    assert len(done) == len(outcomes), "every entry is answered"
    return done


async def _append(tx: Transactions, chunk: _Chunk, outcomes: list[Outcome | None]) -> None:
    """The chunk's committed messages and its op, in one append; its commits answered."""
    finals = chunk.finals
    result = await tx.put_ends(finals, chunk.halves, wait_flush=bool(finals))
    answer = tx.final_outcome(result.status)
    if result.status in STORED and finals:
        share = result.wrote_bytes // (len(finals) + 1)  # the op's share too
        for msg in finals:
            tx.ctx.stats.on_put(msg.topic, 1, share)
    for i in chunk.commits:
        outcomes[i] = answer
