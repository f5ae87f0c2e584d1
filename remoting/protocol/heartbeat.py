"""Client bodies: HeartbeatData (34) with its ConsumerData / ProducerData / SubscriptionData,
ConsumerConnection (203), lock bodies (41, 42), MessageQueue (protocol.md 6.4, 6.5).

Parsing is lenient as fastjson's: enums by name or ordinal, numbers as text, keys quoted or
bare; writing is standard JSON with enum names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Self

from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.fields import array, as_int, as_object, integer, text
from aiorocketmq.remoting.protocol.msgid import tags_code
from aiorocketmq.remoting.protocol.route import dumps

CONSUME_TYPES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP")
MESSAGE_MODELS = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM = (  # ConsumeFromWhere ordinals, deprecated names included
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
)
SUB_ALL = "*"


def enum_name(value: object, names: tuple[str, ...], default: str) -> str:
    """An enum given by name or ordinal, as fastjson accepts it."""
    if isinstance(value, str) and value in names:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value.isdigit() and int(value) < len(names):
        return names[int(value)]
    return default


def _bool(value: object) -> bool:
    return str(value).lower() == "true"


def parse_tags(expression: str | None) -> tuple[list[str], list[int]] | None:
    """A TAG subscription: ``(tags, codes)``; None for "*" or empty (everything)."""
    text = (expression or "").strip()
    if not text or text == SUB_ALL:
        return None
    tags = [t.strip() for t in text.split("||") if t.strip()]
    return tags, [tags_code(t) for t in tags]


class MessageQueue(NamedTuple):
    """One queue of a topic on one broker group (MessageQueue): ``topic``, ``broker_name``,
    ``queue_id``; ordered and hashable."""

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> MessageQueue:
        obj = as_object(obj, "a MessageQueue")
        return cls(text(obj, "topic"), text(obj, "brokerName"), integer(obj, "queueId"))


@dataclass(slots=True, kw_only=True)
class SubscriptionData:
    """One topic a consumer subscribes to (SubscriptionData): its expression, tags and version."""

    topic: str
    sub_string: str = SUB_ALL
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = 0
    expression_type: str = "TAG"
    class_filter_mode: bool = False

    @property
    def codes(self) -> frozenset[int] | None:
        """Tag codes to match in the ConsumeQueue, or None for everything."""
        if self.sub_string.strip() in ("", SUB_ALL) and not self.code_set:
            return None
        return frozenset(self.code_set)

    @classmethod
    def build(
        cls,
        topic: str,
        sub_string: str | None,
        expression_type: str | None = None,
        sub_version: int = 0,
    ) -> Self:
        """FilterAPI.build: a subscription from its expression (ValueError if unusable)."""
        kind = (expression_type or "TAG").upper()
        text = (sub_string or "").strip() or SUB_ALL
        if kind != "TAG":
            return cls(topic=topic, sub_string=text, expression_type=kind, sub_version=sub_version)
        parsed = parse_tags(text)
        tags, codes = parsed if parsed else ([], [])
        return cls(
            topic=topic, sub_string=text, tags_set=tags, code_set=codes, sub_version=sub_version
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": self.code_set,
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": self.tags_set,
            "topic": self.topic,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Self:
        obj = as_object(obj, "a SubscriptionData")
        return cls(
            topic=text(obj, "topic"),
            sub_string=text(obj, "subString", SUB_ALL) or SUB_ALL,
            tags_set=[str(t) for t in array(obj, "tagsSet")],
            code_set=[as_int(c, "codeSet") for c in array(obj, "codeSet")],
            sub_version=integer(obj, "subVersion", 0),
            expression_type=text(obj, "expressionType", "TAG") or "TAG",
            class_filter_mode=_bool(obj.get("classFilterMode", False)),
        )


@dataclass(slots=True, kw_only=True)
class ConsumerData:
    """A consumer group in a heartbeat (ConsumerData): its mode, model and subscriptions."""

    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscriptions: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group_name,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_json() for s in self.subscriptions],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Self:
        obj = as_object(obj, "a ConsumerData")
        return cls(
            group_name=text(obj, "groupName"),
            consume_type=enum_name(obj.get("consumeType"), CONSUME_TYPES, "CONSUME_PASSIVELY"),
            message_model=enum_name(obj.get("messageModel"), MESSAGE_MODELS, "CLUSTERING"),
            consume_from_where=enum_name(
                obj.get("consumeFromWhere"), CONSUME_FROM, "CONSUME_FROM_LAST_OFFSET"
            ),
            subscriptions=[
                SubscriptionData.from_json(s) for s in array(obj, "subscriptionDataSet")
            ],
            unit_mode=_bool(obj.get("unitMode", False)),
        )


@dataclass(slots=True, kw_only=True)
class HeartbeatData:
    """HEART_BEAT's body (HeartbeatData): the client's producer and consumer groups."""

    client_id: str
    producers: list[str] = field(default_factory=list)  # producer group names
    consumers: list[ConsumerData] = field(default_factory=list)

    def encode(self) -> bytes:
        return dumps(
            {
                "clientID": self.client_id,
                "consumerDataSet": [c.to_json() for c in self.consumers],
                "producerDataSet": [{"groupName": g} for g in self.producers],
            }
        )

    @classmethod
    def decode(cls, body: bytes) -> Self:
        """Raises ValueError (or KeyError / TypeError) for a malformed body."""
        obj = as_object(fastjson.loads(body), "HeartbeatData")
        return cls(
            client_id=text(obj, "clientID"),
            producers=[
                text(as_object(p, "a ProducerData"), "groupName")
                for p in array(obj, "producerDataSet")
            ],
            consumers=[ConsumerData.from_json(c) for c in array(obj, "consumerDataSet")],
        )


@dataclass(slots=True, kw_only=True)
class LockBatchBody:
    """LockBatchRequestBody (41) and UnlockBatchRequestBody (42)."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue] = field(default_factory=list)
    only_this_broker: bool = False

    def encode(self) -> bytes:
        return dumps(
            {
                "clientId": self.client_id,
                "consumerGroup": self.consumer_group,
                "mqSet": [m.to_json() for m in self.mq_set],
                "onlyThisBroker": self.only_this_broker,
            }
        )

    @classmethod
    def decode(cls, body: bytes) -> Self:
        obj = as_object(fastjson.loads(body), "the body")
        return cls(
            consumer_group=text(obj, "consumerGroup"),
            client_id=text(obj, "clientId"),
            mq_set=[MessageQueue.from_json(m) for m in array(obj, "mqSet")],
            only_this_broker=_bool(obj.get("onlyThisBroker", False)),
        )


def encode_mq_set(key: str, queues: list[MessageQueue]) -> bytes:
    return dumps({key: [m.to_json() for m in queues]})


@dataclass(slots=True, kw_only=True)
class CheckClientBody:
    """CHECK_CLIENT_CONFIG's body (CheckClientRequestBody): one subscription of a consumer."""

    client_id: str
    group: str
    subscription: SubscriptionData | None = None

    def encode(self) -> bytes:
        obj: dict[str, Any] = {"clientId": self.client_id, "group": self.group}
        if self.subscription is not None:
            obj["subscriptionData"] = self.subscription.to_json()
        return dumps(obj)

    @classmethod
    def decode(cls, body: bytes) -> Self:
        """Raises ValueError (or KeyError / TypeError) for a malformed body."""
        obj = as_object(fastjson.loads(body), "CheckClientRequestBody")
        sub = obj.get("subscriptionData")
        return cls(
            client_id=text(obj, "clientId", ""),
            group=text(obj, "group", ""),
            subscription=None if sub is None else SubscriptionData.from_json(sub),
        )
