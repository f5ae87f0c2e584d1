"""Timer message rules at the send (5.3.3's HookUtils.handleScheduleMessage and
transformTimerMessage, features.md 4.1): which message waits in the wheel, until when, and
which is refused with what. Pure: no I/O, the clock is an argument.

- Only a normal or a committed transactional message gets a timer (a half keeps its TIMER_*
  properties until its commit, so a commit's TIMER_DELAY_SEC counts from the commit).
- A message already in ``rmq_sys_wheel_timer`` (one the wheel rolls over) is left alone.
- A DELAY level > 0 wins: the TIMER_* properties are removed and the 18 levels apply.
- ``TIMER_DELAY_SEC`` > ``TIMER_DELAY_MS`` > ``TIMER_DELIVER_MS``; unparsable: MESSAGE_ILLEGAL.
- The wheel off (timerWheelEnable=false): SYSTEM_ERROR.
- Due now or in the past: stored as a normal message, delivered at once (but a delete marker
  for the past is MESSAGE_ILLEGAL).
- More than timerMaxDelaySec ahead: MESSAGE_ILLEGAL.
- Rounded down to timerPrecisionMs (a time on a boundary one slot less: the wheel reads a slot
  once the clock is past it, so delivery lands in [due, due + precision)); TIMER_OUT_MS,
  REAL_TOPIC, REAL_QID added; topic ``rmq_sys_wheel_timer``, queue 0.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.headers.base import parse_int
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, SysFlag
from aiorocketmq.remoting.protocol.timer import CLIENT_PROPS, TIMER_TOPIC, TimerProp

TIMED_TYPES: Final = (SysFlag.TRANSACTION_NOT_TYPE, SysFlag.TRANSACTION_COMMIT)
# compat: SendMessageProcessor.handlePutMessageResult's remarks for the WHEEL_TIMER_* statuses
ILLEGAL_REMARK: Final = (
    "timer message illegal, the delay time should not be bigger than the max delay {max_ms}ms; "
    "or if set del msg, the delay time should be bigger than the current time"
)
DISABLED_REMARK: Final = "accurate timer message is not enabled, timerWheelEnable is false"


class TimerLimits(NamedTuple):
    """MessageStoreConfig's timer settings the send path reads."""

    enabled: bool = True  # timerWheelEnable
    precision_ms: int = 1000  # timerPrecisionMs
    max_delay_sec: int = 259_200  # timerMaxDelaySec: 3 days


class TimerRefused(Exception):
    """A timer message refused before storing: the response code and remark."""

    def __init__(self, code: ResponseCode, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def limits_of(config: StoreConfig) -> TimerLimits:
    return TimerLimits(config.timer_wheel_enable, config.timer_precision_ms,
                       config.timer_max_delay_sec)  # fmt: skip


def has_timer(props: dict[str, str]) -> bool:
    """Whether a client asked for a timer (any of the three properties)."""
    return any(p in props for p in CLIENT_PROPS)


def round_slot(deliver_ms: int, precision_ms: int) -> int:
    """compat: transformTimerMessage's rounding -- a boundary one slot less, else floor."""
    if deliver_ms % precision_ms == 0:
        return deliver_ms - precision_ms
    return deliver_ms // precision_ms * precision_ms


def handle_time(slot_ms: int) -> int:
    """compat: SendMessageProcessor (5.3.2+) -- a recall handle carries TIMER_OUT_MS + 1: a
    time inside the slot, which the recall rounds back to it as a send's TIMER_DELIVER_MS."""
    return slot_ms + 1


def recall_slots(stamp: int, precision_ms: int) -> tuple[int, ...]:
    """The slots a recall handle's timestamp names. compat: RecallMessageProcessor puts its
    marker with TIMER_DELIVER_MS = the timestamp, rounded as a send's (``round_slot``): any
    time in (slot, slot + precision] names the slot. Ours besides: a time on a boundary may be
    a handle our broker answered before it added the + 1 (the slot's own time), so that slot
    is named too -- a marker where no message of its key waits cancels nothing."""
    slot = round_slot(stamp, precision_ms)
    return (slot, stamp) if stamp % precision_ms == 0 else (slot,)


def deliver_ms(props: dict[str, str], now: int) -> int:
    """The time asked for, by precedence; ValueError if the winning property is not a long."""
    if TimerProp.DELAY_SEC in props:
        return now + parse_int(props[TimerProp.DELAY_SEC]) * 1000
    if TimerProp.DELAY_MS in props:
        return now + parse_int(props[TimerProp.DELAY_MS])
    return parse_int(props[TimerProp.DELIVER_MS])


def _illegal(limits: TimerLimits) -> TimerRefused:
    remark = ILLEGAL_REMARK.format(max_ms=limits.max_delay_sec * 1000)
    return TimerRefused(ResponseCode.MESSAGE_ILLEGAL, remark)


def apply_timer(msg: MessageExt, limits: TimerLimits, now: int) -> bool:
    """Rewrite ``msg`` for the wheel when it asks for a timer; returns whether it now waits in
    ``rmq_sys_wheel_timer``. Raises TimerRefused for a message the send must refuse."""
    props = msg.properties
    if msg.sys_flag & SysFlag.TRANSACTION_MASK not in TIMED_TYPES or msg.topic == TIMER_TOPIC:
        return False
    if _level(props) > 0:  # compat: checkIfTimerMessage -- the level wins, TIMER_* dropped
        for name in CLIENT_PROPS:
            props.pop(name, None)
        return False
    if not has_timer(props):
        return False
    if not limits.enabled:
        raise TimerRefused(ResponseCode.SYSTEM_ERROR, DISABLED_REMARK)
    try:
        due = deliver_ms(props, now)
    except ValueError:
        raise _illegal(limits) from None
    if due <= now:
        if TimerProp.DEL_UNIQKEY in props:  # a delete marker for the past deletes nothing
            raise _illegal(limits)
        return False  # stored as it is: delivered at once
    if due - now > limits.max_delay_sec * 1000:
        raise _illegal(limits)
    props[TimerProp.OUT_MS] = str(round_slot(due, limits.precision_ms))
    props[Prop.REAL_TOPIC] = msg.topic
    props[Prop.REAL_QID] = str(msg.queue_id)
    msg.topic, msg.queue_id = TIMER_TOPIC, 0
    return True


def _level(props: dict[str, str]) -> int:
    try:
        return int(props.get(Prop.DELAY, "0") or 0)
    except ValueError:
        return 0
