"""What producers send and get back: Message, MessageQueue, SendResult (RocketMQ's names).

Not compiled (issue 30): compiled, ``inspect.signature(Message)`` read ``tags: type = None``
and the classes lost their help. Callgrind of one ``SendResult(...)`` shows the same cost either
way; ``Message.wire_text`` costs ~1.1 k instructions more a send (of ~180 k in the client)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from aiorocketmq.client.core.api import SendStatus
from aiorocketmq.client.core.timer import timer_property
from aiorocketmq.remoting.protocol.heartbeat import MessageQueue
from aiorocketmq.remoting.protocol.message import NAME_VALUE_SEPARATOR as NV
from aiorocketmq.remoting.protocol.message import PROPERTY_SEPARATOR as PS
from aiorocketmq.remoting.protocol.message import Prop

__all__ = ["Message", "MessageQueue", "SendResult", "SendStatus"]

_TAGS, _KEYS, _DELAY = f"{Prop.TAGS}{NV}", f"{Prop.KEYS}{NV}", f"{Prop.DELAY}{NV}"
_WAIT_UNIQ = f"{Prop.WAIT}{NV}true{PS}{Prop.UNIQ_KEY}{NV}"


@dataclass(slots=True)
class Message:
    """A message to send. ``tags`` and ``keys`` (a string, or several separated by spaces)
    become the TAGS and KEYS properties; ``delay_level`` (1..18) delays delivery.

    A timer message (5.x's RIP-43) is delivered at any time, not only at a level's:
    ``deliver_at`` (an aware ``datetime``, or ms since the epoch) sets TIMER_DELIVER_MS,
    ``delay`` (a ``timedelta``, counted from the broker's receipt) TIMER_DELAY_MS, as 5.x's
    ``setDeliverTimeMs`` / ``setDelayTimeMs`` do. The broker files it under its
    ``timerPrecisionMs`` (default 1 s) and delivers it at or within a precision after that
    time, never before; a past time is delivered at once; more than ``timerMaxDelaySec``
    (default 3 days) ahead is refused (MQBrokerError code 13). ValueError at once for both
    given, a naive datetime, a negative delay, or either with ``delay_level``. Every send
    path takes it (``send_batch``: a batch of timer messages only, on our brokers -- a 5.x
    broker delivers a batch's timers at once); a transactional message gets its timer on
    commit. The SendResult's ``recall_handle``
    cancels it while it waits (``Producer.recall``)."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: str | list[str] | None = None
    delay_level: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    flag: int = 0
    deliver_at: datetime | int | None = None
    delay: timedelta | None = None

    def __post_init__(self) -> None:
        self.timer_property()

    def timer_property(self) -> tuple[str, str] | None:
        """(TIMER_DELIVER_MS or TIMER_DELAY_MS, its value) of ``deliver_at`` / ``delay``,
        None for neither; ValueError when they cannot be sent (see the class)."""
        if self.deliver_at is None and self.delay is None:
            return None
        if self.delay_level > 0:
            raise ValueError(
                "a message takes delay_level or deliver_at/delay, not both "
                "(the broker would drop the timer for the level)"
            )
        return timer_property(self.deliver_at, self.delay)

    def wire_properties(self) -> dict[str, str]:
        """The properties as they travel (Message.putProperty's keys)."""
        props = dict(self.properties)
        if self.tags:
            props[Prop.TAGS] = self.tags
        if self.keys:
            props[Prop.KEYS] = self.keys if isinstance(self.keys, str) else " ".join(self.keys)
        if self.delay_level > 0:
            props[Prop.DELAY] = str(self.delay_level)
        timer = self.timer_property()
        if timer is not None:
            props[timer[0]] = timer[1]
        props.setdefault(Prop.WAIT, "true")  # WAIT_STORE_MSG_OK: the broker answers once stored
        return props

    def wire_text(self, uniq_key: str) -> str:
        """For a message without ``properties`` of its own (most): ``encode_properties`` of
        ``wire_properties()`` plus UNIQ_KEY, written out at once, as every send needs it."""
        text = f"{_TAGS}{self.tags}{PS}" if self.tags else ""
        if self.keys:
            keys = self.keys if isinstance(self.keys, str) else " ".join(self.keys)
            text += f"{_KEYS}{keys}{PS}"
        if self.delay_level > 0:
            text += f"{_DELAY}{self.delay_level!s}{PS}"
        if self.deliver_at is not None or self.delay is not None:
            name, value = self.timer_property() or ("", "")
            text += f"{name}{NV}{value}{PS}"
        return f"{text}{_WAIT_UNIQ}{uniq_key}{PS}"

    @property
    def transaction_id(self) -> str | None:
        """The id of a half message (its UNIQ_KEY, TRAN_MSG=true): what
        ``execute_local_transaction`` sees as Java's Message.getTransactionId()."""
        if self.properties.get(Prop.TRAN_MSG) != "true":
            return None
        return self.properties.get(Prop.UNIQ_KEY)


@dataclass(frozen=True, slots=True)
class SendResult:
    """SendResult: ``msg_id`` is the client's UNIQ_KEY, ``offset_msg_id`` the broker's id
    (store host + CommitLog offset, usable with VIEW_MESSAGE_BY_ID). ``recall_handle``: for
    a timer message the broker filed (5.x's ``SendResult.getRecallHandle``), what
    ``Producer.recall`` takes to cancel it; None for any other send."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    region: str | None = None
    transaction_id: str | None = None
    recall_handle: str | None = None
