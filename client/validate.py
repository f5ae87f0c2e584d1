"""Validators.checkMessage: what is wrong with a message, found before any network call."""

from __future__ import annotations

from client.errors import MQClientError
from client.message import Message
from remoting.protocol.topic import NOT_ALLOWED_SEND_TOPICS, check_topic_name


def check_message(msg: Message, max_size: int) -> None:
    """MQClientError with Java's wording when the topic or body cannot be sent."""
    bad = check_topic_name(msg.topic)
    if bad is not None:
        raise MQClientError(bad)
    if msg.topic in NOT_ALLOWED_SEND_TOPICS:
        raise MQClientError(f"Sending message to topic[{msg.topic}] is forbidden.")
    if not isinstance(msg.body, bytes | bytearray | memoryview):
        raise MQClientError(f"the message body must be bytes, not {type(msg.body).__name__}")
    if len(msg.body) == 0:
        raise MQClientError("the message body length is zero")
    if len(msg.body) > max_size:
        raise MQClientError(
            f"the message body size over max value, MAX: {max_size} "
            f"(this one: {len(msg.body)} bytes; split it or raise max_message_size and the "
            "brokers' maxMessageSize)"
        )


def check_group(group: str) -> None:
    """Validators.checkGroup, plus Java's refusal of the default group names for consumers."""
    bad = check_topic_name(group)
    if bad is not None:
        raise MQClientError(bad.replace("topic", "group").replace("Topic", "Group"))
    if group == "DEFAULT_CONSUMER":
        raise MQClientError(
            "consumerGroup can not equal DEFAULT_CONSUMER, please specify another one."
        )
