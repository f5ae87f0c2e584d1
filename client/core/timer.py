"""Timer messages on the client (5.x's RIP-43, issue 36): the property a ``Message`` with
``deliver_at`` or ``delay`` carries, and the recall handle a broker gives back for one.

A timer message is an ordinary send with one more property, as 5.x's Java client writes it
(``Message.setDeliverTimeMs`` / ``setDelayTimeMs``: ``putProperty``): ``TIMER_DELIVER_MS``
(an absolute time, ms since the epoch) or ``TIMER_DELAY_MS`` (ms from the broker's receipt).
The broker rounds it to its ``timerPrecisionMs``, refuses one beyond ``timerMaxDelaySec``
(code 13) and delivers a past time at once. A 4.9.8 client can send the same property as a
user property; nothing else is needed.

The recall handle (5.x's ``RecallMessageHandle.HandleV1``) is what a 5.x broker puts in a
timer send's reply (``SendMessageResponseHeader.recallHandle``) and what RECALL_MESSAGE
(370) takes back: ``"v1 <topic> <brokerName> <timestamp> <messageId>"`` in URL-safe Base64,
``timestamp`` the slot's time + 1 ms, ``messageId`` the message's UNIQ_KEY. It is not a
secret and not signed: anyone who can send to the topic can recall with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from aiorocketmq.remoting.protocol import timer as wire
from aiorocketmq.remoting.protocol.timer import TimerProp

__all__ = ["RecallHandle", "timer_property"]

_MS: Final = timedelta(milliseconds=1)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def timer_property(
    deliver_at: datetime | int | None, delay: timedelta | None
) -> tuple[str, str] | None:
    """The property a message with ``deliver_at`` or ``delay`` carries (name, value), None
    for neither; ValueError naming what is wrong: both given, a naive datetime (its time
    zone unknown, so its instant), an epoch-ms that is not a non-negative int, a negative
    or non-timedelta delay."""
    if deliver_at is None and delay is None:
        return None
    if deliver_at is not None and delay is not None:
        raise ValueError(
            "a message takes deliver_at or delay, not both (deliver_at is an instant, "
            "delay counts from the broker's receipt)"
        )
    if delay is not None:
        if not isinstance(delay, timedelta):
            raise ValueError(f"delay must be a datetime.timedelta, not {type(delay).__name__}")
        if delay < timedelta(0):
            raise ValueError(f"delay must not be negative (got {delay})")
        return TimerProp.DELAY_MS, str(delay // _MS)
    if isinstance(deliver_at, datetime):
        if deliver_at.tzinfo is None or deliver_at.utcoffset() is None:
            raise ValueError(
                f"deliver_at must be an aware datetime (got naive {deliver_at.isoformat()}); "
                "give it a tzinfo, e.g. datetime.now(timezone.utc) + timedelta(minutes=5)"
            )
        return TimerProp.DELIVER_MS, str((deliver_at - _EPOCH) // _MS)  # exact: no float
    if type(deliver_at) is not int or deliver_at < 0:
        raise ValueError(
            "deliver_at must be an aware datetime or epoch milliseconds (a non-negative int), "
            f"not {deliver_at!r}"
        )
    return TimerProp.DELIVER_MS, str(deliver_at)


@dataclass(frozen=True, slots=True)
class RecallHandle:
    """A recall handle's parts (5.x's RecallMessageHandle.HandleV1). ``timestamp_ms`` is the
    delivery time the broker files the message under (its slot); ``msg_id`` the message's
    UNIQ_KEY (``SendResult.msg_id``). ``str(handle)`` / ``encode()`` give the text that
    ``Producer.recall`` and 5.x's ``recallMessage`` take; ``RecallHandle.parse`` reads one.

    A handle can be built for a message sent with an absolute ``deliver_at`` (its epoch ms
    files it in the same slot as the broker's own handle would), given the broker that
    stored it (``SendResult.queue.broker_name``)."""

    topic: str
    broker_name: str
    timestamp_ms: int
    msg_id: str

    def encode(self) -> str:
        for name, part in (("topic", self.topic), ("broker_name", self.broker_name),
                           ("msg_id", self.msg_id)):  # fmt: skip
            if not part or any(c.isspace() for c in part):
                raise ValueError(f"recall handle: {name} must be non-empty, without spaces")
        # compat: RecallMessageHandle.HandleV1.buildHandle -- Base64.getUrlEncoder (padded)
        handle = wire.RecallHandle(
            self.topic, self.broker_name, str(self.timestamp_ms), self.msg_id
        )
        return handle.encode()

    def __str__(self) -> str:
        return self.encode()

    @classmethod
    def parse(cls, text: str) -> RecallHandle:
        """The parts of ``text``; ValueError "recall handle is invalid" (5.x's words) when it
        is not a v1 handle."""
        # compat: RecallMessageHandle.decodeHandle
        try:
            parts = wire.decode_handle(text)
        except (ValueError, UnicodeError):
            raise ValueError(f"recall handle is invalid: {text!r}") from None
        try:
            stamp = int(parts.timestamp)
        except ValueError:
            raise ValueError(f"recall handle is invalid: timestamp {parts.timestamp!r}") from None
        return cls(parts.topic, parts.broker_name, stamp, parts.msg_id)
