"""Transactional batches: ours, beyond 4.9.8 (remoting/protocol/txbatch.py; README "Python
transactions"). Half messages sent many in one request, and many ENDs in one request; a
broker that does not take them (4.9.8, 5.x, ours with ``enableBatchTransaction=false``)
refuses before storing or ending anything, raised as ``TransactionBatchNotSupported``: send
and end one at a time then (``Producer.send`` and ``TransactionProducer.end_transaction``).

    msgs = [Message("T", body) for body in bodies]
    sent = await send_halves(producer, msgs, "tx_group", queue)  # one SendResult a half
    ok = await end_transactions(tx, [(s, COMMIT) for s in sent])  # one bool a half

    one = await send_half_batch(producer, msgs, "tx_group", queue)  # all in one half
    ok = await end_transactions(tx, [(one, COMMIT)])  # commits every message, in order
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQBrokerError, MQClientError
from aiorocketmq.client.core.message import Message, MessageQueue, SendResult
from aiorocketmq.client.core.validate import check_message
from aiorocketmq.client.producer.producer import Producer
from aiorocketmq.client.producer.transaction import TransactionProducer, half_message
from aiorocketmq.client.producer.transaction_types import COMMIT_OR_ROLLBACK, LocalTransactionState
from aiorocketmq.remoting.errors import MessageDecodeError, RemotingError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import Prop, SysFlag, encode_properties
from aiorocketmq.remoting.protocol.msgid import UniqKeyGenerator, parse_offset_msg_id
from aiorocketmq.remoting.protocol.txbatch import (
    END_TRANSACTION_BATCH,
    GROUP_FIELD,
    HALF_BATCH_FIELD,
    HALF_RECORD_MODE,
    MAX_END_ENTRIES,
    MAX_HALVES,
    EndEntry,
    decode_results,
    encode_entries,
)

log = get_logger(__name__)

# what a broker without the extension answers: 4.9.8's CommitLog refuses a transactional
# batch (13), and an unknown request code is 3
_NOT_TAKEN: Final = frozenset(
    {ResponseCode.MESSAGE_ILLEGAL, ResponseCode.REQUEST_CODE_NOT_SUPPORTED}
)
_ids = UniqKeyGenerator()
# properties a message's own map may hold that the quick path would write twice or keep
_OWN: Final = frozenset({Prop.DELAY, Prop.UNIQ_KEY, Prop.WAIT, Prop.TRAN_MSG, Prop.PGROUP,
                         Prop.TAGS, Prop.KEYS})  # fmt: skip


class TransactionBatchNotSupported(MQBrokerError):
    """The broker took none of the request: it has no transactional batches (an Apache
    broker, or ours with ``enableBatchTransaction=false``), or -- for halves, code 13 -- it
    found a message illegal; sending them one at a time tells which."""


async def send_halves(
    producer: Producer, msgs: Sequence[Message], group: str, queue: MessageQueue, *,
    timeout_ms: int | None = None,
) -> list[SendResult]:  # fmt: skip
    """Send ``msgs`` (one topic, at most 4096) as half messages of ``group`` -- each as
    ``half_message(msg, group)`` makes it -- to ``queue`` in one SEND_BATCH_MESSAGE, parked
    together; one SendResult a half, as ``Producer.send`` gives for one (its own offsets: any
    ``TransactionProducer`` of the group ends it). Sent once, never retried. Raises
    TransactionBatchNotSupported (nothing stored), MQBrokerError for another refusal,
    MQClientError / MQTimeoutError as a send does."""
    if not msgs or len(msgs) > MAX_HALVES:
        raise MQClientError(f"send_halves: 1 to {MAX_HALVES} messages, not {len(msgs)}")
    if not group:
        raise MQClientError("send_halves: the halves need a producer group")
    tail = _tail(group)
    items, uniq = _items(producer, msgs, group, queue, tail, "send_halves")
    request = api.send_message(
        queue.topic, encode_batch(items), group=producer.group, properties="",
        queue_id=queue.queue_id, sys_flag=SysFlag.TRANSACTION_PREPARED, batch=True,
    )  # fmt: skip
    request.ext_fields[HALF_BATCH_FIELD] = "true"
    answer, addr = await _invoke(producer, queue, request, timeout_ms)
    if answer.code in _NOT_TAKEN:
        raise TransactionBatchNotSupported(answer.code, answer.remark, addr)
    status = api.send_status(answer, addr)
    msg_ids, queue_id, first = api.send_ids(answer.ext_fields)
    offset_ids = msg_ids.split(",")
    if len(offset_ids) != len(msgs):
        raise MQClientError(f"send_halves: {len(offset_ids)} ids for {len(msgs)} halves")
    mq = MessageQueue(queue.topic, queue.broker_name, queue_id)
    region = answer.ext_fields.get("MSG_REGION")
    return [SendResult(status, uniq[i], offset_ids[i], mq, first + i, region)
            for i in range(len(msgs))]  # fmt: skip


async def send_half_batch(
    producer: Producer, msgs: Sequence[Message], group: str, queue: MessageQueue, *,
    properties: Mapping[str, str] | None = None, timeout_ms: int | None = None,
) -> SendResult:  # fmt: skip
    """Send ``msgs`` (one topic, at most 4096) to ``queue`` as ONE half message of
    ``group`` that holds them all, parked in one record: ending it (``end_transactions``,
    ``end_transaction``, a check-back's answer) commits or rolls back every message at once,
    and a commit appends them to the queue in order, each with its own msgId. ``properties``
    are every message's, and the half's own, so a check-back sees them. One SendResult for
    the batch (its ``msg_id`` is the half's transaction id). Sent once, never retried.
    Raises TransactionBatchNotSupported (nothing stored: an Apache broker, or ours with
    ``enableBatchTransaction=false``), MQBrokerError for another refusal, MQClientError /
    MQTimeoutError as a send does."""
    if not msgs or len(msgs) > MAX_HALVES:
        raise MQClientError(f"send_half_batch: 1 to {MAX_HALVES} messages, not {len(msgs)}")
    if not group:
        raise MQClientError("send_half_batch: the half needs a producer group")
    shared = dict(properties or {})
    if not _OWN.isdisjoint(shared):
        taken = sorted(_OWN & shared.keys())
        raise MQClientError(f"send_half_batch: properties may not set {taken}")
    items, _ = _items(producer, msgs, group, queue, "", "send_half_batch")
    key = _ids.next()
    head = f"{encode_properties(shared)}{_tail(group)}{Prop.UNIQ_KEY}\x01{key}\x02"
    request = api.send_message(
        queue.topic, encode_batch(items), group=producer.group, properties=head,
        queue_id=queue.queue_id, sys_flag=SysFlag.TRANSACTION_PREPARED, batch=True,
    )  # fmt: skip
    request.ext_fields[HALF_BATCH_FIELD] = HALF_RECORD_MODE
    answer, addr = await _invoke(producer, queue, request, timeout_ms)
    if answer.code in _NOT_TAKEN:
        raise TransactionBatchNotSupported(answer.code, answer.remark, addr)
    status = api.send_status(answer, addr)
    offset_id, queue_id, queue_offset = api.send_ids(answer.ext_fields)
    if not offset_id or "," in offset_id:
        raise MQClientError(f"send_half_batch: the broker answered {offset_id!r} for one half")
    mq = MessageQueue(queue.topic, queue.broker_name, queue_id)
    return SendResult(status, key, offset_id, mq, queue_offset,
                      answer.ext_fields.get("MSG_REGION"))  # fmt: skip


def _tail(group: str) -> str:
    return f"{Prop.TRAN_MSG}\x01true\x02{Prop.PGROUP}\x01{group}\x02"


def _items(
    producer: Producer, msgs: Sequence[Message], group: str, queue: MessageQueue, tail: str,
    name: str,
) -> tuple[list[BatchItem], list[str]]:  # fmt: skip
    """The batch items of ``msgs`` as halves of ``group`` (``tail``: the TRAN_MSG and
    PGROUP each item carries, if any) and their UNIQ_KEYs."""
    items, uniq = [], []
    for msg in msgs:
        if msg.topic != queue.topic:
            raise MQClientError(f"{name}: every message must be of the queue's topic")
        check_message(msg, producer.options.max_message_size)
        props = msg.properties
        if msg.delay_level or (props and not _OWN.isdisjoint(props)):  # half_message's way
            wire = half_message(msg, group).wire_properties()
            uniq.append(wire.setdefault(Prop.UNIQ_KEY, _ids.next()))
            text = encode_properties(wire)
        else:  # the same properties, written out at once: every row of a Spark write
            uniq.append(key := _ids.next())
            text = f"{encode_properties(props) if props else ''}{tail}{msg.wire_text(key)}"
        items.append(BatchItem(msg.body, msg.flag, text))
    return items, uniq


async def end_transactions(
    tx: TransactionProducer, ends: Sequence[tuple[SendResult, LocalTransactionState]], *,
    timeout_ms: int | None = None,
) -> list[bool]:  # fmt: skip
    """END each half (its SendResult, as ``end_transaction`` takes it) with its state, all of
    one broker, in END_TRANSACTION_BATCH requests of up to 4096, one after another: the
    broker appends the committed messages in the order given. One bool a half: whether the
    broker answered SUCCESS for it (a failed request fails its entries; logged, not raised,
    as ``end_transaction``). Raises TransactionBatchNotSupported when the broker has no
    such request (before any END of the call was taken, unless its setting changed since)."""
    if not ends:
        return []
    queue = ends[0][0].queue
    if any(sent.queue.broker_name != queue.broker_name for sent, _ in ends):
        raise MQClientError("end_transactions: every half must be of one broker")
    entries = [
        EndEntry(parse_offset_msg_id(sent.offset_msg_id or sent.msg_id)[1], sent.queue_offset,
                 sent.msg_id, COMMIT_OR_ROLLBACK[state])
        for sent, state in ends
    ]  # fmt: skip
    took: list[bool] = []
    for start in range(0, len(entries), MAX_END_ENTRIES):
        chunk = entries[start : start + MAX_END_ENTRIES]
        request = RemotingCommand.request(
            END_TRANSACTION_BATCH, {GROUP_FIELD: tx.group}, encode_entries(chunk)
        )
        try:
            answer, addr = await _invoke(tx, queue, request, timeout_ms)
            if answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                raise TransactionBatchNotSupported(answer.code, answer.remark, addr)
            if answer.code != ResponseCode.SUCCESS:
                raise MQBrokerError(answer.code, answer.remark, addr)
            results = decode_results(answer.body, len(chunk))
        except TransactionBatchNotSupported:
            raise
        except (MQClientError, RemotingError, MessageDecodeError) as exc:
            log.warning("end_transactions_failed", group=tx.group, entries=len(chunk),
                        broker=queue.broker_name, error=str(exc))  # fmt: skip
            took += [False] * len(chunk)
            continue
        for entry, (code, remark) in zip(chunk, results, strict=True):
            if code != ResponseCode.SUCCESS:
                log.warning("end_transaction_failed", group=tx.group, msg_id=entry.msg_id,
                            code=code, remark=remark)  # fmt: skip
            took.append(code == ResponseCode.SUCCESS)
    return took


async def _invoke(
    producer: Producer, queue: MessageQueue, request: RemotingCommand, timeout_ms: int | None
) -> tuple[RemotingCommand, str]:
    """``request`` to the master of ``queue``'s broker; its answer and the address."""
    addr = await producer.instance.master_addr(queue.broker_name, queue.topic)
    timeout = (timeout_ms or producer.options.send_msg_timeout) / 1000
    return await producer.instance.remoting.invoke(addr, request, timeout), addr
