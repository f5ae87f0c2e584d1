"""Transactions: half messages, END_TRANSACTION's commit and rollback, op messages
(protocol.md 12.4, fidelity.md 3.1; Java's TransactionalMessageServiceImpl,
TransactionalMessageBridge and EndTransactionProcessor).

A half message waits in RMQ_SYS_TRANS_HALF_TOPIC queue 0. Committing stores a copy under its
REAL_TOPIC / REAL_QID with the half's properties unchanged; committing or rolling back then
appends an op message (tag ``d``, body: the half's queue offset as text) to
RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0. Both topics are created on first use, as 4.9.8 does.
Everything lives in those two queues and in the offsets of group CID_RMQ_SYS_TRANS, so a
restarted broker rebuilds its state by reading the op queue (``rebuild``).
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.delay import apply_delay
from aiorocketmq.broker.half_record import finals_of, is_record
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.store import GetStatus, PutResult, PutStatus
from aiorocketmq.broker.timer_rules import TimerRefused, apply_timer, limits_of
from aiorocketmq.broker.transaction_state import HalfOps, chain_root
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    EndTransactionRequestHeader,
)
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    Prop,
    SysFlag,
    body_crc,
    decode_record,
    now_ms,
)
from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator
from aiorocketmq.remoting.protocol.topic import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, Perm
from aiorocketmq.remoting.tasks import TimeSlice

log = structlog.get_logger(__name__)

CHECK_GROUP: Final = "CID_RMQ_SYS_TRANS"  # TransactionalMessageUtil.buildConsumerGroup
REMOVE_TAG: Final = "d"  # TransactionalMessageUtil.REMOVETAG
READ_BATCH: Final = 32
RECENT_HALVES: Final = 1 << 16  # halves this process parked, kept for their END ...
RECENT_BYTES: Final = 64 << 20  # ... and at most this much of them (bodies, and 1 KiB a half)
_RECENT_OVERHEAD: Final = 1024  # about what a decoded half holds beside its body
# a record's BODYCRC, QUEUEOFFSET and BORNTIMESTAMP (protocol.md 7.1)
_CRC_QUEUE_OFFSET_BORN: Final = struct.Struct(">8xi8xq12xq")

# EndTransactionProcessor.sendFinalMessage: put status -> (code, remark)
FINAL_FAILED: Final[dict[PutStatus, tuple[int, str]]] = {
    PutStatus.CREATE_MAPPED_FILE_FAILED: (R.SYSTEM_ERROR, "Create mapped file failed."),
    PutStatus.MESSAGE_ILLEGAL: (R.MESSAGE_ILLEGAL, "The message is illegal, maybe msg body or "
        "properties length not matched. msg body length limit {body}B, msg properties length "
        "limit 32KB."),
    PutStatus.SERVICE_NOT_AVAILABLE: (R.SERVICE_NOT_AVAILABLE, "Service not available now."),
    PutStatus.OS_PAGECACHE_BUSY: (R.SYSTEM_ERROR, "OS page cache busy, please try another machine"),
    PutStatus.UNKNOWN_ERROR: (R.SYSTEM_ERROR, "UNKNOWN_ERROR"),
    # compat: 5.x EndTransactionProcessor.sendFinalMessage (controller mode)
    PutStatus.IN_SYNC_REPLICAS_NOT_ENOUGH: (R.SYSTEM_ERROR, "in-sync replicas not enough"),
}  # fmt: skip
FINAL_FAILED[PutStatus.PROPERTIES_SIZE_EXCEEDED] = FINAL_FAILED[PutStatus.MESSAGE_ILLEGAL]
STORED: Final = frozenset(
    {PutStatus.PUT_OK, PutStatus.FLUSH_DISK_TIMEOUT, PutStatus.FLUSH_SLAVE_TIMEOUT,
     PutStatus.SLAVE_NOT_AVAILABLE}
)  # fmt: skip


class Outcome(NamedTuple):
    code: int
    remark: str | None = None


class Transactions:
    def __init__(self, ctx: BrokerContext, offsets: ConsumerOffsets) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.offsets = offsets
        self.ops = HalfOps()
        self._ids = UniqKeyGenerator()
        self.ending: set[int] = set()  # chains (first record's offset) being ended now
        # CommitLog offset -> a half as this process stored it, so its END need not read
        # and decode it again (the oldest dropped past RECENT_HALVES or RECENT_BYTES)
        self._recent: OrderedDict[int, MessageExt] = OrderedDict()
        self._recent_bytes = 0
        self._log_end = 0  # the CommitLog's end when last looked at

    def remember(self, halves: Iterable[MessageExt]) -> None:
        """Halves just stored (their CommitLog offsets set), for ``find_half``."""
        recent = self._recent
        for half in halves:
            if half.commit_log_offset not in recent:
                self._recent_bytes += len(half.body) + _RECENT_OVERHEAD
            recent[half.commit_log_offset] = half
        while recent and (len(recent) > RECENT_HALVES or self._recent_bytes > RECENT_BYTES):
            self._recent_bytes -= len(recent.popitem(last=False)[1].body) + _RECENT_OVERHEAD

    def _forget(self, commit_log_offset: int) -> None:
        half = self._recent.pop(commit_log_offset, None)
        if half is not None:
            self._recent_bytes -= len(half.body) + _RECENT_OVERHEAD

    # ------------------------------------------------------------ half and op topics

    async def half_topic(self) -> None:
        """TransactionalMessageBridge.selectTopicConfig: created on first use, 1 queue, RW."""
        if self.ctx.topics.get(TRANS_HALF_TOPIC) is None:
            await self.ctx.topics.create_plain(
                TRANS_HALF_TOPIC, 1, Perm.READ | Perm.WRITE, wait_registered=False
            )

    def _op(self, half_offsets: list[int]) -> MessageExt:
        """makeOpMessageInner: an op message for the halves at ``half_offsets`` (one, as
        4.9.8 writes; several joined with commas, as 5.x's does, for a batch END)."""
        return MessageExt(
            topic=TRANS_OP_HALF_TOPIC,
            body=",".join(map(str, half_offsets)).encode(),
            properties={Prop.TAGS: REMOVE_TAG, Prop.UNIQ_KEY: self._ids.next()},
            queue_id=0,
            born_timestamp=now_ms(),
            born_host=self.ctx.addr,
        )

    async def put_with_ops(
        self, msgs: list[MessageExt], half: MessageExt, *, wait_flush: bool = False
    ) -> PutResult:
        """``msgs`` and the ops that end ``half``'s chain (``half`` itself and, for a check
        copy, the chain's first record) in one append: all stored, or none. Java writes the
        final message and the op one after the other; a crash between them re-checks, and
        a producer answering COMMIT again delivered twice."""
        return await self.put_ends(msgs, [half], wait_flush=wait_flush)

    async def put_ends(
        self, msgs: list[MessageExt], halves: list[MessageExt], *, wait_flush: bool = False
    ) -> PutResult:
        """``msgs`` and the ops ending every chain of ``halves``, in one append: an op per
        record for one half (4.9.8's form), one op naming them all for several (a batch
        END: one record instead of one a half)."""
        if self.ctx.topics.get(TRANS_OP_HALF_TOPIC) is None:
            await self.ctx.topics.create_plain(
                TRANS_OP_HALF_TOPIC, 1, Perm.READ | Perm.WRITE, wait_registered=False
            )
        ended: list[int] = []
        for half in halves:
            root = chain_root(half)
            ended += [half.queue_offset] if root == half.queue_offset else [half.queue_offset, root]
        ops = [self._op([offset]) for offset in ended] if len(halves) == 1 else [self._op(ended)]
        result = await self.store.put_batch([*msgs, *ops], wait_flush=wait_flush)
        if result.status in STORED:
            for offset in ended:
                self.ops.add(offset)
            for half in halves:
                self._forget(half.commit_log_offset)
        else:
            log.error("transaction_end_not_stored", half_offsets=ended[:8], halves=len(halves),
                      status=result.status.name)  # fmt: skip
        return result

    # ------------------------------------------------------------ END_TRANSACTION

    def find_half(self, commit_log_offset: int) -> MessageExt | None:
        """getHalfMessageByOffset: the half message stored at that CommitLog offset. One this
        process stored is taken from memory once the record there still is that half (its
        body CRC, half-queue offset and birth time; all of them are dropped if the CommitLog
        ever shrank, as a truncation would make it); else read, verified and decoded."""
        log_end = self.store.commitlog.max_offset
        if log_end < self._log_end:
            self._recent.clear()
            self._recent_bytes = 0
        self._log_end = log_end
        half = self._recent.get(commit_log_offset)
        if half is not None:
            record = self.store.commitlog.read_record(commit_log_offset)
            if record is not None:
                crc, queue_offset, born = _CRC_QUEUE_OFFSET_BORN.unpack_from(record)
                if (crc, queue_offset, born) == (
                    body_crc(half.body),
                    half.queue_offset,
                    half.born_timestamp,
                ):
                    return half
            self._forget(commit_log_offset)
        record = self.store.read(commit_log_offset)
        if record is None:
            return None
        try:
            half = decode_record(record)
        except MessageDecodeError:
            return None
        return half if half.topic == TRANS_HALF_TOPIC else None

    def checked(
        self, group: str, commit_log_offset: int, tran_state_table_offset: int
    ) -> MessageExt | Outcome:
        """checkPrepareMessage: the half at ``commit_log_offset`` if the END's group and
        offsets match it, else the refusal."""
        half = self.find_half(commit_log_offset)
        if half is None:
            return Outcome(R.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(Prop.PGROUP) != group:
            return Outcome(R.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != tran_state_table_offset:
            return Outcome(R.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commit_log_offset != commit_log_offset:
            return Outcome(R.SYSTEM_ERROR, "The commit log offset wrong")
        return half

    async def end(self, hdr: EndTransactionRequestHeader) -> Outcome:
        """Commit (8) or rollback (12) the half message ``hdr`` names (checkPrepareMessage's
        three checks first); a second END for a half, or for another record of its chain, is
        answered SUCCESS and changes nothing (stricter than 4.9.8: protocol.md 12.4)."""
        half = self.checked(hdr.producer_group, hdr.commit_log_offset, hdr.tran_state_table_offset)
        if isinstance(half, Outcome):
            return half
        root = chain_root(half)
        if self.ops.ended(half) or root in self.ending:
            log.info("transaction_already_ended", msg_id=hdr.msg_id, offset=half.queue_offset)
            return Outcome(R.SUCCESS)
        self.ending.add(root)  # an END for another record of the chain waits for none
        try:
            if hdr.commit_or_rollback != TRANSACTION_COMMIT_TYPE:
                # rollbackMessage: the op alone; a failure is logged (the half is checked again)
                await self.put_with_ops([], half)
                return Outcome(R.SUCCESS)
            msgs = self.committed(half, hdr.commit_log_offset)
            if isinstance(msgs, Outcome):
                return msgs
            result = await self.put_with_ops(msgs, half, wait_flush=True)
            if result.status in STORED:
                self.ctx.stats.on_put(msgs[0].topic, len(msgs), result.wrote_bytes)
            return self.final_outcome(result.status)
        finally:
            self.ending.discard(root)

    def committed(self, half: MessageExt, commit_log_offset: int) -> list[MessageExt] | Outcome:
        """What a COMMIT of ``half`` appends (endMessageTransaction; every message of a
        parked batch, broker/half_record.py), its timers and delay levels applied, or the
        END's refusal."""
        if is_record(half):
            msgs = finals_of(half, commit_log_offset)
        else:
            msg = final_message(half, commit_log_offset)
            msgs = None if msg is None else [msg]
        if msgs is None:
            return Outcome(R.SYSTEM_ERROR, "Find prepared transaction message failed")
        limits, now, levels = limits_of(self.ctx.store_config), now_ms(), len(self.store.delays)
        for msg in msgs:
            try:  # the timer counts from the commit (HookUtils: commit messages only)
                apply_timer(msg, limits, now)
            except TimerRefused as exc:
                return Outcome(exc.code, exc.remark)
            apply_delay(msg, levels)
        return msgs

    def final_outcome(self, status: PutStatus) -> Outcome:
        """sendFinalMessage's answer for the final message's put status."""
        if status in STORED:
            return Outcome(R.SUCCESS)
        code, remark = FINAL_FAILED.get(status, (R.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))
        return Outcome(code, remark.format(body=self.ctx.store_config.max_message_size))

    async def resume(self, commit_log_offset: int) -> bool:
        """RESUME_CHECK_HALF_MESSAGE: the message at that offset (a half, or one moved to
        TRANS_CHECK_MAX_TIME_TOPIC) as a new half, checked from zero; ours starts a new chain
        (TRAN_PREPARED_QUEUE_OFFSET dropped), so the old chain's op does not end it."""
        record = self.store.read(commit_log_offset)
        if record is None:
            return False
        try:
            msg = decode_record(record)
        except MessageDecodeError:
            return False
        props = dict(msg.properties)
        props[Prop.TRANSACTION_CHECK_TIMES] = "0"
        props.pop(Prop.TRAN_PREPARED_QUEUE_OFFSET, None)
        await self.half_topic()
        half = MessageExt(
            topic=TRANS_HALF_TOPIC, body=msg.body, flag=msg.flag, properties=props, queue_id=0,
            sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
            reconsume_times=msg.reconsume_times,
        )  # fmt: skip
        result = await self.store.put(half, wait_flush=False)
        log.info("transaction_half_resumed", real_topic=props.get(Prop.REAL_TOPIC),
                 status=result.status.name)  # fmt: skip
        return result.status is PutStatus.PUT_OK

    # ------------------------------------------------------------ restart

    def progress(self) -> tuple[int, int]:
        """The check rounds' offsets in the half and op queues (fetchConsumeOffset: the
        queue's min offset when none is stored)."""
        half = self.offsets.query(CHECK_GROUP, TRANS_HALF_TOPIC, 0)
        op = self.offsets.query(CHECK_GROUP, TRANS_OP_HALF_TOPIC, 0)
        half = max(half, self.store.min_offset(TRANS_HALF_TOPIC, 0))
        op = max(op, self.store.min_offset(TRANS_OP_HALF_TOPIC, 0))
        return half, op

    def rebuild(self) -> int:
        """At start: every op from the check rounds' op offset on marks its half; returns
        how many ops were read. The rounds move the op offset only past ops naming halves
        below their window (``advance_ops``), so the marks are complete from the first op's
        half, or from the half offset, whichever is lower."""
        half, offset = self.progress()
        marks: list[int] = []
        seen = 0
        for record in self._ops_from(offset):
            marks.extend(op_half_offsets(record)[1])
            if seen == 0:
                half = min([half, *marks])
            seen += 1
        self.ops = HalfOps(half)
        for mark in marks:
            self.ops.add(mark)
        return seen

    def _ops_from(self, offset: int) -> Iterator[bytes]:
        while True:
            result = self.store.get(TRANS_OP_HALF_TOPIC, 0, offset, READ_BATCH)
            if result.status is not GetStatus.FOUND:
                if result.status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_FOUND_NULL):
                    offset = result.next_begin_offset
                    continue
                return
            yield from result.messages
            offset = result.next_begin_offset

    async def advance_ops(self, offset: int, turn: TimeSlice) -> int:
        """calculateOpOffset, by the window: past every op that names a half below it."""
        for record in self._ops_from(offset):
            await turn.tick()
            at, named = op_half_offsets(record)
            if named and max(named) >= self.ops.low:
                break
            offset = max(offset, at + 1)  # a malformed op is passed over too
        return offset


def final_message(half: MessageExt, commit_log_offset: int) -> MessageExt | None:
    """endMessageTransaction: the half, under its real topic and queue, with its properties
    string as stored (TRAN_MSG=true and REAL_* kept, as 4.9.8's CommitLog writes them:
    fidelity.md 3.1); None when its REAL_TOPIC / REAL_QID are missing or bad."""
    props = half.properties
    try:
        topic, queue_id = props[Prop.REAL_TOPIC], int(props[Prop.REAL_QID])
    except (KeyError, ValueError):
        return None
    return MessageExt(
        topic=topic,
        body=half.body,
        flag=half.flag,
        properties=dict(props),
        queue_id=queue_id,
        sys_flag=(half.sys_flag & ~SysFlag.TRANSACTION_MASK) | SysFlag.TRANSACTION_COMMIT,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=commit_log_offset,
    )


def op_half_offsets(record: bytes) -> tuple[int, list[int]]:
    """The op's own queue offset and the half queue offsets it names (5.x may join several
    with commas; 4.9.8 writes one); none for a malformed or foreign record."""
    try:
        op = decode_record(record)
    except MessageDecodeError:
        return -1, []
    try:
        if op.properties.get(Prop.TAGS) != REMOVE_TAG:
            return op.queue_offset, []
        return op.queue_offset, [int(part) for part in op.body.decode().split(",") if part]
    except (ValueError, UnicodeDecodeError):
        return op.queue_offset, []
