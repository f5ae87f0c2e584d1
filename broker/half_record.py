"""A batch of half messages parked as one record (ours, beyond 4.9.8: ``halfBatch=record``,
remoting/protocol/txbatch.py; the Spark sink's exactlyOnce). The record is a half message
in RMQ_SYS_TRANS_HALF_TOPIC like any other -- checked back, replicated, ended by its own
offsets -- whose body is the SEND_BATCH_MESSAGE body as received and whose properties are
the request's (the producer group, the properties every message shares, the record's own
UNIQ_KEY) with HALF_RECORD set to the number of messages. An END COMMIT of it appends each
message to the real queue, in order, as a batch send would have stored it; a ROLLBACK drops
them all. Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.batch import BatchItem, DelayInBatch, build_batch, decode_batch
from aiorocketmq.remoting.protocol.message import NAME_VALUE_SEPARATOR, MessageExt, Prop, SysFlag

HALF_RECORD: Final = "HALF_RECORD"  # ours: on a parked batch, how many messages it holds
# the record's own: not carried over to the messages it holds (each has its UNIQ_KEY)
_RECORD_ONLY: Final = frozenset({HALF_RECORD, Prop.UNIQ_KEY})
_DELAY_NAME: Final = f"{Prop.DELAY}{NAME_VALUE_SEPARATOR}"  # the name as the text holds it


class BadHalfRecord(ValueError):
    """The body is no batch a record may hold (the send is refused with this text)."""


def check_items(body: bytes, most: int) -> list[BatchItem]:
    """The batch's items, or BadHalfRecord: malformed, empty, more than ``most``, or an item
    with a delay level (a batch may carry none)."""
    try:
        items = decode_batch(body)
    except MessageDecodeError as exc:
        raise BadHalfRecord(f"malformed batch body: {exc}") from exc
    if not items:
        raise BadHalfRecord("the batch body holds no message")
    if len(items) > most:
        raise BadHalfRecord(f"at most {most} half messages in one batch")
    for item in items:
        if _DELAY_NAME in item.properties:  # else no DELAY: not parsed (most items)
            try:
                build_batch([item], "-", {}, 0, 0, 0, "")
            except DelayInBatch as exc:
                raise BadHalfRecord("a batch may not carry delayed messages") from exc
            except ValueError as exc:  # a delay level that is no number
                raise BadHalfRecord(f"bad batch item: {exc}") from exc
    return items


def is_record(half: MessageExt) -> bool:
    return HALF_RECORD in half.properties


def finals_of(half: MessageExt, commit_log_offset: int) -> list[MessageExt] | None:
    """The messages a COMMIT of the record at ``commit_log_offset`` appends (its REAL_TOPIC
    and REAL_QID, each message's properties with the record's shared ones, TRAN_MSG and
    PGROUP among them, as a committed half keeps them: fidelity.md 3.1); None when the
    record's real topic or queue is missing or bad, or its body does not decode."""
    props = half.properties
    try:
        topic, queue_id = props[Prop.REAL_TOPIC], int(props[Prop.REAL_QID])
        items = decode_batch(half.body)
    except (KeyError, ValueError, MessageDecodeError):
        return None
    common = {k: v for k, v in props.items() if k not in _RECORD_ONLY}
    sys_flag = (half.sys_flag & ~SysFlag.TRANSACTION_MASK) | SysFlag.TRANSACTION_COMMIT
    try:
        msgs = build_batch(items, topic, common, queue_id, sys_flag, half.born_timestamp,
                           half.born_host)  # fmt: skip
    except ValueError:  # DelayInBatch among them: refused when it was parked
        return None
    for msg in msgs:
        msg.reconsume_times = half.reconsume_times
        msg.prepared_transaction_offset = commit_log_offset
    return msgs
