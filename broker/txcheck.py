"""TransactionCheck: the check-back rounds (TransactionalMessageCheckService every
``transactionCheckInterval``; TransactionalMessageServiceImpl.check; fidelity.md 3.1).

A round walks the half queue from the group CID_RMQ_SYS_TRANS's offset. A half with an op
(or whose chain has one) is passed. One checked ``transactionCheckMax`` times already, or
older than the files are kept, moves to TRANS_CHECK_MAX_TIME_TOPIC, never delivered, and its
chain is closed. One younger than its immunity (``transactionTimeOut``, or its
CHECK_IMMUNITY_TIME_IN_SECONDS) ends the round, or, with that property, is re-appended
unchecked. Any other is re-appended with TRANSACTION_CHECK_TIMES + 1 and
CHECK_TRANSACTION_STATE (39) about the copy goes, oneway, to a live producer of its PGROUP.
The round yields to the loop every time slice, so thousands of pending halves stall nothing.

No poison pill (issue 29): a half whose copy the store refuses for good (its properties at
the limit, so the check count no longer fits; a body over a lowered maxMessageSize) can never
be checked. Ending the round there, as for a refusal that can pass, stopped every round at it
and no later half was ever checked again. It is moved to TRANS_CHECK_MAX_TIME_TOPIC as if
checked too often (or, if even that is refused for good, its chain is closed), counted in
``set_aside`` by status, and the round goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from typing import Final

import structlog

from aiorocketmq.broker.registry import ClientRegistry
from aiorocketmq.broker.store import GetStatus, PutStatus
from aiorocketmq.broker.store.results import NEVER_STORED
from aiorocketmq.broker.transactions import CHECK_GROUP, READ_BATCH, STORED, Transactions
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.transaction import CheckTransactionStateRequestHeader
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    Prop,
    decode_record,
    encode_record,
    now_ms,
)
from aiorocketmq.remoting.protocol.topic import (
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    Perm,
)
from aiorocketmq.remoting.tasks import TimeSlice
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = structlog.get_logger(__name__)

MAX_ROUND_SECONDS: Final = 60.0  # TransactionalMessageServiceImpl.MAX_PROCESS_TIME_LIMIT
# a round gives the loop way this often: requests arriving during a round over thousands of
# halves wait at most about this long (the default slice, 5 ms, showed as the p99 of other
# requests: benchmarks/transactions.py)
SLICE_SECONDS: Final = 0.002
WARN_SECONDS: Final = 10.0  # at most one line this often per kind of half set aside


@dataclasses.dataclass(slots=True)
class RoundReport:
    checked: int = 0  # CHECK_TRANSACTION_STATE sent (or due, with no producer to ask)
    discarded: int = 0  # moved to TRANS_CHECK_MAX_TIME_TOPIC
    passed: int = 0  # ended already
    offset: int = 0  # the half queue offset the round stopped at
    yields: int = 0  # how often it gave the loop way
    ms: float = 0.0  # how long it took
    # checks due for groups with no live producer, by group (Java warns once per message)
    no_producer: dict[str, int] = dataclasses.field(default_factory=dict)


class TransactionCheck:
    def __init__(self, tx: Transactions, registry: ClientRegistry) -> None:
        self.tx = tx
        self.store = tx.store
        self.registry = registry
        self._turn = itertools.count()
        self.rounds = 0
        self.set_aside: dict[str, int] = {}  # halves no copy of could be stored, by status
        self._warnings = WarnLimiter(WARN_SECONDS)

    async def run(self) -> None:
        """Every transactionCheckInterval, one round (read afresh: it may be updated)."""
        while True:
            await asyncio.sleep(self.tx.ctx.config.transaction_check_interval / 1000)
            try:
                report = await self.round()
            except Exception:  # a bug here must not end the rounds for good
                log.exception("transaction_check_failed")
                continue
            for group, count in report.no_producer.items():
                log.warning("transaction_check_no_producer", group=group, checks=count)
            if report.checked or report.discarded:
                log.info("transaction_check", checked=report.checked, discarded=report.discarded,
                         offset=report.offset, yields=report.yields, ms=report.ms)  # fmt: skip

    async def round(self) -> RoundReport:
        start, report, turn = now_ms(), RoundReport(), TimeSlice(SLICE_SECONDS)
        base, op_offset = self.tx.progress()
        end = self.store.max_offset(TRANS_HALF_TOPIC, 0)
        offset = base
        while offset < end and now_ms() - start < MAX_ROUND_SECONDS * 1000:
            batch, offset = self._read(offset, end)
            if not batch:
                break
            stopped = False
            for half in batch:
                if not await self._one(half, start, report):
                    offset, stopped = half.queue_offset, True
                    break
                offset = half.queue_offset + 1
                await turn.tick()
            if stopped:
                break
        await self._finish(offset, op_offset, turn)
        report.offset, report.yields = offset, turn.yields
        report.ms = round(now_ms() - start, 1)
        self.rounds += 1
        return report

    def _read(self, offset: int, end: int) -> tuple[list[MessageExt], int]:
        """Up to READ_BATCH halves from ``offset`` (stepping over a gap)."""
        while offset < end:
            result = self.store.get(TRANS_HALF_TOPIC, 0, offset, READ_BATCH)
            if result.status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_FOUND_NULL):
                offset = max(offset + 1, result.next_begin_offset)
                continue
            if result.status is not GetStatus.FOUND:
                return [], offset
            batch = []
            for record in result.messages:
                try:
                    batch.append(decode_record(record))
                except MessageDecodeError:  # the store verifies records: not expected
                    log.error("transaction_half_unreadable", offset=offset)
            if batch:
                return batch, offset
            offset = result.next_begin_offset
        return [], offset

    async def _one(self, half: MessageExt, start: int, report: RoundReport) -> bool:
        """Handle one half; False ends the round before it (it is looked at next round)."""
        if self.tx.ops.ended(half):
            report.passed += 1
            return True
        if half.store_timestamp >= start:
            return False  # stored since the round began
        cfg = self.tx.ctx.config
        times = _int(half.properties.get(Prop.TRANSACTION_CHECK_TIMES), 0)
        kept_ms = self.tx.ctx.store_config.file_reserved_time * 3600 * 1000
        if times >= cfg.transaction_check_max or now_ms() - half.born_timestamp > kept_ms:
            if not await self._discard(half):
                return False  # the store refused: again next round
            report.discarded += 1
            return True
        immunity = self._immunity(half)
        age = now_ms() - half.born_timestamp
        if 0 <= age < immunity:
            if Prop.CHECK_IMMUNITY_TIME_IN_SECONDS not in half.properties:
                return False
            copy = await self._copy(half, times)  # putImmunityMsgBackToHalfQueue
            return not isinstance(copy, PutStatus) or await self._never_copied(half, copy, report)
        copy = await self._copy(half, times + 1)
        if isinstance(copy, PutStatus):
            return await self._never_copied(half, copy, report)
        if not self._send_check(copy):
            group = half.properties.get(Prop.PGROUP, "")
            report.no_producer[group] = report.no_producer.get(group, 0) + 1
        report.checked += 1
        return True

    def _immunity(self, half: MessageExt) -> int:
        """getImmunityTime: CHECK_IMMUNITY_TIME_IN_SECONDS x 1000, -1 or unset: the timeout."""
        timeout = self.tx.ctx.config.transaction_time_out
        seconds = _int(half.properties.get(Prop.CHECK_IMMUNITY_TIME_IN_SECONDS), -1)
        return timeout if seconds == -1 else seconds * 1000

    async def _never_copied(self, half: MessageExt, status: PutStatus, report: RoundReport) -> bool:
        """The store refused ``half``'s copy: for now (False: the round ends here, the half
        comes first next round), or for good (set aside; True: the round goes on)."""
        if status not in NEVER_STORED or not await self._discard(half, status):
            return False
        report.discarded += 1
        self.set_aside[status.name] = self.set_aside.get(status.name, 0) + 1
        return True

    async def _copy(self, half: MessageExt, times: int) -> MessageExt | PutStatus:
        """renewHalfMessageInner: the half again at the queue's end, with the check count;
        every copy names its chain's first record (our TRAN_PREPARED_QUEUE_OFFSET use); the
        store's status if it refused it."""
        props = dict(half.properties)
        props.setdefault(Prop.TRAN_PREPARED_QUEUE_OFFSET, str(half.queue_offset))
        if times > 0:
            props[Prop.TRANSACTION_CHECK_TIMES] = str(times)
        copy = MessageExt(
            topic=TRANS_HALF_TOPIC,
            body=half.body,
            flag=half.flag,
            properties=props,
            queue_id=0,
            sys_flag=half.sys_flag,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            reconsume_times=half.reconsume_times,
        )
        result = await self.store.put(copy, wait_flush=False)
        if result.status not in STORED:
            held = self._warnings.hit(("put_back", result.status))
            if held is not None:
                log.error("transaction_half_put_back_failed", status=result.status.name,
                          msg_id=props.get(Prop.UNIQ_KEY), suppressed=held)  # fmt: skip
            return result.status
        return copy  # the store filled in its queue and CommitLog offsets

    async def _discard(self, half: MessageExt, refused: PutStatus | None = None) -> bool:
        """resolveDiscardMsg: a copy in TRANS_CHECK_MAX_TIME_TOPIC (1 queue, perm 6); ours
        also closes the chain (in the same append), so a late END cannot deliver it.
        ``refused``: why the half cannot be checked any more, if not its check count. Should
        the store refuse the copy for good too, the chain is closed without one."""
        topics = self.tx.ctx.topics
        if topics.get(TRANS_CHECK_MAX_TIME_TOPIC) is None:
            await topics.create_plain(
                TRANS_CHECK_MAX_TIME_TOPIC, 1, Perm.READ | Perm.WRITE, wait_registered=False
            )
        moved = MessageExt(
            topic=TRANS_CHECK_MAX_TIME_TOPIC,
            body=half.body,
            flag=half.flag,
            properties=dict(half.properties),
            queue_id=0,
            sys_flag=half.sys_flag,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            reconsume_times=half.reconsume_times,
        )
        result, to = await self.tx.put_with_ops([moved], half), TRANS_CHECK_MAX_TIME_TOPIC
        if result.status in NEVER_STORED:  # not even as it was stored: drop it
            result, to = await self.tx.put_with_ops([], half), "nowhere: its chain is closed"
        props = half.properties
        # compat: Java logs resolveDiscardMsg at error; a producer that never answers, or a
        # half the store cannot copy, is a client's doing, not a broken invariant: a warning
        if refused is None:
            log.warning("transaction_checked_too_often", msg_id=props.get(Prop.UNIQ_KEY),
                      real_topic=props.get(Prop.REAL_TOPIC), moved=result.status.name,
                      to=to)  # fmt: skip
        elif (held := self._warnings.hit(("set_aside", refused))) is not None:
            log.warning("transaction_half_set_aside", msg_id=props.get(Prop.UNIQ_KEY),
                      real_topic=props.get(Prop.REAL_TOPIC), refused=refused.name,
                      moved=result.status.name, to=to, suppressed=held)  # fmt: skip
        return result.status in STORED

    def _send_check(self, copy: MessageExt) -> bool:
        """AbstractTransactionalMessageCheckListener.sendCheckMessage: the copy, its topic and
        queue restored, to one live producer channel of its group (round robin); False when
        the group has none."""
        group = copy.properties.get(Prop.PGROUP, "")
        channel = self._channel(group)
        if channel is None:
            return False
        uniq = copy.properties.get(Prop.UNIQ_KEY)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=copy.queue_offset,
            commit_log_offset=copy.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=copy.msg_id,
        )
        body = dataclasses.replace(
            copy,
            topic=copy.properties.get(Prop.REAL_TOPIC, copy.topic),
            queue_id=_int(copy.properties.get(Prop.REAL_QID), copy.queue_id),
        )
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header.to_ext(), encode_record(body), oneway=True
        )
        if not channel.send_oneway(request):
            log.warning("transaction_check_not_sent", group=group, peer=channel.peer)
        return True

    def _channel(self, group: str) -> Channel | None:
        """ProducerManager.getAvailableChannel: the group's open, writable channels in turn."""
        live = [
            ch
            for ch in self.registry.producers.get(group, {})
            if isinstance(ch, Channel) and ch.ready
        ]
        return live[next(self._turn) % len(live)] if live else None

    async def _finish(self, offset: int, op_offset: int, turn: TimeSlice) -> None:
        """Save the round's progress; the op window moves and the op offset with it."""
        offsets = self.tx.offsets
        if offset != offsets.query(CHECK_GROUP, TRANS_HALF_TOPIC, 0):
            offsets.commit(CHECK_GROUP, TRANS_HALF_TOPIC, 0, offset)
        self.tx.ops.round_done(offset)
        new_op = await self.tx.advance_ops(op_offset, turn)
        if new_op != offsets.query(CHECK_GROUP, TRANS_OP_HALF_TOPIC, 0):
            offsets.commit(CHECK_GROUP, TRANS_OP_HALF_TOPIC, 0, new_op)


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
