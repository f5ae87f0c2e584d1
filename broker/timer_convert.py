"""What the timer wheel puts for a unit that falls due (5.x TimerMessageStore's
convertMessage and its roll), per message on the delivery path: compiled with mypyc
(setup.py COMPILED). Pure: no I/O, the clock's text is an argument.

The wheel's record is decoded once and the decoded MessageExt becomes the message put (its
properties changed in place: nothing else holds it), rather than copied field by field.
"""

from __future__ import annotations

from typing import Final

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, body_crc, decode_record
from aiorocketmq.remoting.protocol.timer import TIMER_TOPIC, TimerProp

Identity = tuple[str, int, int, int]

REAL_TOPIC: Final = Prop.REAL_TOPIC
REAL_QID: Final = Prop.REAL_QID
ENQUEUE_MS: Final = TimerProp.ENQUEUE_MS
DEQUEUE_MS: Final = TimerProp.DEQUEUE_MS
ROLL_TIMES: Final = TimerProp.ROLL_TIMES
QUEUE_ID_END: Final = 2**31


def wheel_message(record: bytes | None, cq_offset: int) -> MessageExt | None:
    """The wheel's message in ``record`` if it is the wheel topic's ConsumeQueue unit
    ``cq_offset``; None for no record, a corrupt one, or another one (a log cut back by a
    failover and written again)."""
    if record is None:
        return None
    try:
        msg = decode_record(record)
    except MessageDecodeError:
        return None
    if msg.topic != TIMER_TOPIC or msg.queue_id != 0 or msg.queue_offset != cq_offset:
        return None
    return msg


def rolls(msg: MessageExt) -> int:
    try:
        return int(msg.properties.get(ROLL_TIMES, "0"))
    except ValueError:
        return 0


def identity(msg: MessageExt) -> Identity:
    """A wheel copy's identity: key, birth, body and how often it rolled."""
    return (msg.properties.get(Prop.UNIQ_KEY, ""), msg.born_timestamp, body_crc(msg.body),
            rolls(msg))  # fmt: skip


def source_identity(put: MessageExt) -> Identity:
    """The identity of the wheel copy a put of the wheel came from (a roll's re-put counts
    one roll more than its source)."""
    back = 1 if put.topic == TIMER_TOPIC else 0
    return (put.properties.get(Prop.UNIQ_KEY, ""), put.born_timestamp, body_crc(put.body),
            rolls(put) - back)  # fmt: skip


def _reset(msg: MessageExt, topic: str, queue_id: int) -> None:
    """What the store sets again at the put (offsets, store time and host, size) is left to
    it; what a new message has not is cleared."""
    msg.topic, msg.queue_id = topic, queue_id
    msg.prepared_transaction_offset = 0
    msg.broker_name = ""


def to_delivered(msg: MessageExt, now_text: str) -> bool:
    """compat: TimerMessageStore.convertMessage -- the real topic and queue back,
    TIMER_ENQUEUE_MS / TIMER_DEQUEUE_MS added; False (nothing to put) without a real
    topic and queue."""
    props = msg.properties
    topic = props.pop(REAL_TOPIC, "")
    try:
        queue_id = int(props.pop(REAL_QID, "-1"))
    except ValueError:
        queue_id = -1
    if not topic or not 0 <= queue_id < QUEUE_ID_END:
        return False
    if ENQUEUE_MS not in props:
        props[ENQUEUE_MS] = str(msg.store_timestamp)
    props[DEQUEUE_MS] = now_text
    _reset(msg, topic, queue_id)
    return True


def to_rolled(msg: MessageExt, now_text: str) -> None:
    """compat: TimerMessageStore roll -- back into the wheel topic, ROLL_TIMES + 1."""
    props = msg.properties
    props[ROLL_TIMES] = str(rolls(msg) + 1)
    if ENQUEUE_MS not in props:
        props[ENQUEUE_MS] = str(msg.store_timestamp)
    props[DEQUEUE_MS] = now_text
    _reset(msg, TIMER_TOPIC, 0)
