"""Recalling a timer message (5.x's DefaultMQProducerImpl.recallMessage): RECALL_MESSAGE
(370) to the broker named in the message's recall handle, which files a delete marker in
the handle's slot; the message is then never delivered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.client.core.message import SendResult
from aiorocketmq.client.core.timer import RecallHandle
from aiorocketmq.remoting.protocol.topic import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    check_topic_name,
)

if TYPE_CHECKING:
    from aiorocketmq.client.producer.sending import ProducerCore


def handle_text(handle: str | RecallHandle | SendResult) -> str:
    """The handle's text: as given, encoded, or the SendResult's; MQClientError for a
    SendResult that has none (not a timer message, or a broker without timers)."""
    if isinstance(handle, SendResult):
        if handle.recall_handle is None:
            raise MQClientError(
                f"message {handle.msg_id} has no recall handle: only a timer message "
                "(deliver_at / delay) sent one by one gets one, from a broker with timers"
            )
        return handle.recall_handle
    if isinstance(handle, RecallHandle):
        return handle.encode()
    return handle


async def recall(
    producer: ProducerCore,
    topic: str,
    handle: str | RecallHandle | SendResult,
    timeout_ms: int | None,
) -> str:
    """# compat: DefaultMQProducerImpl.recallMessage -- topic checked, retry and DLQ topics
    refused, the handle decoded here, its broker found in the topic's route."""
    bad = check_topic_name(topic)
    if bad is not None:
        raise MQClientError(bad)
    if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
        raise MQClientError("topic is not supported")  # compat: Java's words
    text = handle_text(handle)
    try:
        parts = RecallHandle.parse(text)
    except ValueError as exc:
        raise MQClientError(str(exc)) from None
    if parts.topic != topic:
        # ours: the broker refuses it too ("recall failed, topic not match"), after a call
        raise MQClientError(
            f"recall failed, topic not match: the handle is for {parts.topic!r}, not {topic!r}"
        )
    budget = (timeout_ms if timeout_ms is not None else producer.options.send_msg_timeout) / 1000
    info = await producer.instance.publish_info(topic, budget)
    addr = info.master_addr(parts.broker_name)
    if addr is None:
        # compat: Java falls back to any broker of the topic, which refuses a handle of
        # another broker ("recall failed, broker service not available"); we say why here
        raise MQClientError(
            f"recall failed: broker {parts.broker_name} (the handle's) has no master in the "
            f"route of {topic}"
        )
    req = api.recall_message(producer.group, topic, text, parts.broker_name)
    resp = await producer.instance.remoting.invoke(addr, req, budget)
    return api.parse_recall(resp, addr)
