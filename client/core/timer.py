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

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

__all__ = [
    "RECALL_MESSAGE",
    "TIMER_DELAY_MS",
    "TIMER_DELAY_SEC",
    "TIMER_DELIVER_MS",
    "RecallHandle",
    "timer_property",
]

# compat: MessageConst.PROPERTY_TIMER_* (5.3.3)
TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
RECALL_MESSAGE: Final = 370  # compat: RequestCode.RECALL_MESSAGE (5.3.3)

_VERSION_1: Final = "v1"  # compat: RecallMessageHandle.VERSION_1
_MS: Final = timedelta(milliseconds=1)


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
        return TIMER_DELAY_MS, str(delay // _MS)
    if isinstance(deliver_at, datetime):
        if deliver_at.tzinfo is None or deliver_at.utcoffset() is None:
            raise ValueError(
                f"deliver_at must be an aware datetime (got naive {deliver_at.isoformat()}); "
                "give it a tzinfo, e.g. datetime.now(timezone.utc) + timedelta(minutes=5)"
            )
        return TIMER_DELIVER_MS, str(int(deliver_at.timestamp() * 1000))
    if type(deliver_at) is not int or deliver_at < 0:
        raise ValueError(
            "deliver_at must be an aware datetime or epoch milliseconds (a non-negative int), "
            f"not {deliver_at!r}"
        )
    return TIMER_DELIVER_MS, str(deliver_at)


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
        raw = f"{_VERSION_1} {self.topic} {self.broker_name} {self.timestamp_ms} {self.msg_id}"
        # compat: RecallMessageHandle.HandleV1.buildHandle -- Base64.getUrlEncoder (padded)
        return base64.urlsafe_b64encode(raw.encode()).decode("ascii")

    def __str__(self) -> str:
        return self.encode()

    @classmethod
    def parse(cls, text: str) -> RecallHandle:
        """The parts of ``text``; ValueError "recall handle is invalid: ..." (5.x's words)
        when it is not a v1 handle."""
        # compat: RecallMessageHandle.decodeHandle
        if not text:
            raise ValueError("recall handle is invalid: empty")
        try:
            padded = text + "=" * (-len(text) % 4)  # Java's decoder takes it unpadded too
            raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        except (binascii.Error, UnicodeError, ValueError):
            raise ValueError(f"recall handle is invalid: not Base64 text ({text!r})") from None
        items = raw.split(" ")
        if items[0] != _VERSION_1 or len(items) < 5:
            raise ValueError(f"recall handle is invalid: not a v1 handle ({raw!r})")
        try:
            stamp = int(items[3])
        except ValueError:
            raise ValueError(f"recall handle is invalid: timestamp {items[3]!r}") from None
        return cls(items[1], items[2], stamp, items[4])
