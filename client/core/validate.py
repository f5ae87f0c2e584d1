"""Validators.checkMessage: what is wrong with a message, found before any network call."""

from __future__ import annotations

from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.message import Message
from aiorocketmq.remoting.protocol.bounds import check_group_name
from aiorocketmq.remoting.protocol.topic import NOT_ALLOWED_SEND_TOPICS, check_topic_name

_BODY_TYPES = (bytes, bytearray, memoryview)
_SENDABLE_TOPICS: set[str] = set()  # names that passed the topic checks (every send checks)
_SENDABLE_MAX = 4096  # forgotten all at once past this many


def check_message(msg: Message, max_size: int) -> None:
    """MQClientError with Java's wording when the topic or body cannot be sent."""
    topic, body = msg.topic, msg.body
    if type(topic) is not str or topic not in _SENDABLE_TOPICS:
        _check_topic(topic)
    if not isinstance(body, _BODY_TYPES):
        raise MQClientError(f"the message body must be bytes, not {type(body).__name__}")
    size = len(body)
    if size == 0:
        raise MQClientError("the message body length is zero")
    if size > max_size:
        raise MQClientError(
            f"the message body size over max value, MAX: {max_size} "
            f"(this one: {size} bytes; split it or raise max_message_size and the "
            "brokers' maxMessageSize)"
        )


def _check_topic(topic: str) -> None:
    bad = check_topic_name(topic)
    if bad is not None:
        raise MQClientError(bad)
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise MQClientError(f"Sending message to topic[{topic}] is forbidden.")
    if len(_SENDABLE_TOPICS) >= _SENDABLE_MAX:
        _SENDABLE_TOPICS.clear()
    if type(topic) is str:
        _SENDABLE_TOPICS.add(topic)


def check_group(group: str) -> None:
    """Validators.checkGroup (the brokers' rule too: blank, 255 characters, charset), plus
    Java's refusal of the default group names for consumers."""
    bad = check_group_name(group)
    if bad is not None:
        raise MQClientError(bad)
    if group == "DEFAULT_CONSUMER":
        raise MQClientError(
            "consumerGroup can not equal DEFAULT_CONSUMER, please specify another one."
        )
