"""END_TRANSACTION_BATCH (ours, remoting/protocol/txbatch.py): many ENDs of one producer
group in one request, each checked and answered on its own, the committed messages appended
in the entries' order with one op message naming every half ended, all in one append.

Each entry gets END_TRANSACTION's answer for it (``Transactions.end``): a bad entry (no such
half, another group's, wrong offsets, malformed) its own refusal, a half already ended --
before, or by an earlier entry of the same request -- SUCCESS with nothing written; the
others are stored together, so a failed append answers each of their commits with the put
status's code (a rollback's failure is only logged, as a single END's: the half is checked
again)."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from aiorocketmq.broker.delay import apply_delay
from aiorocketmq.broker.timer_rules import TimerRefused, apply_timer, limits_of
from aiorocketmq.broker.transaction_state import chain_root
from aiorocketmq.broker.transactions import STORED, Outcome, Transactions, final_message
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from aiorocketmq.remoting.protocol.message import MessageExt, now_ms
from aiorocketmq.remoting.protocol.txbatch import EndEntry

log = structlog.get_logger(__name__)

MALFORMED = Outcome(R.SYSTEM_ERROR, "malformed entry: [commitLogOffset, tranStateTableOffset, "
                    "msgId, commitOrRollback] expected")  # fmt: skip
NOT_ENDING = Outcome(R.SYSTEM_ERROR, "commitOrRollback must be 8 (commit) or 12 (rollback)")
LOST = Outcome(R.SYSTEM_ERROR, "Find prepared transaction message failed")


async def end_many(
    tx: Transactions, group: str, entries: Sequence[EndEntry | None]
) -> list[Outcome]:
    """One outcome per entry, in order."""
    outcomes: list[Outcome | None] = [None] * len(entries)
    halves: list[MessageExt] = []  # the halves this request ends, in entry order
    finals: list[MessageExt] = []  # their committed messages, in entry order
    commits: list[int] = []  # the entries whose answer is the append's
    roots: list[int] = []
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
                msg = final_message(half, entry.commit_log_offset)
                if msg is None:
                    outcomes[i] = LOST
                    continue
                try:  # the timer counts from the commit
                    apply_timer(msg, limits_of(tx.ctx.store_config), now_ms())
                except TimerRefused as exc:
                    outcomes[i] = Outcome(exc.code, exc.remark)
                    continue
                apply_delay(msg, len(tx.store.delays))
                finals.append(msg)
                commits.append(i)
            else:
                outcomes[i] = Outcome(R.SUCCESS)  # rollbackMessage: a failed op is logged
            tx.ending.add(root)
            roots.append(root)
            halves.append(half)
        if halves:
            result = await tx.put_ends(finals, halves, wait_flush=bool(finals))
            answer = tx.final_outcome(result.status)
            if result.status in STORED and finals:
                share = result.wrote_bytes // (len(finals) + 1)  # the op's share too
                for msg in finals:
                    tx.ctx.stats.on_put(msg.topic, 1, share)
            for i in commits:
                outcomes[i] = answer
    finally:
        for root in roots:
            tx.ending.discard(root)
    log.debug("end_transaction_batch", group=group, entries=len(entries), ended=len(halves),
              committed=len(finals))  # fmt: skip
    done = [o for o in outcomes if o is not None]
    assert len(done) == len(outcomes), "every entry is answered"
    return done
