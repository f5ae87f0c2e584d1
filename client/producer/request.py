"""Request-reply (RIP-16, 4.9.8; features.md 6.1): the requester's side
(DefaultMQProducerImpl.request) and the replier's (MessageUtil.createReplyMessage, a reply
sent as SEND_REPLY_MESSAGE_V2).

A request is an ordinary send carrying CORRELATION_ID (a fresh uuid), REPLY_TO_CLIENT (this
client's id) and TTL (the timeout, ms); its broker stamps CLUSTER on it. The replier answers
with a message to ``<CLUSTER>_REPLY_TOPIC`` carrying MSG_TYPE=reply and the request's three
properties; the broker that takes it pushes it to the requester (326) on the connection of
the requester's heartbeats, and the future waiting under that correlation id completes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import TYPE_CHECKING

from aiorocketmq.client.core.errors import MQClientError, MQRequestTimeoutError
from aiorocketmq.client.core.message import Message, MessageQueue, SendResult
from aiorocketmq.remoting.protocol.message import REPLY_MESSAGE_FLAG, MessageExt, Prop
from aiorocketmq.remoting.protocol.topic import reply_topic

if TYPE_CHECKING:
    from aiorocketmq.client.producer.sending import ProducerCore, Selector

__all__ = ["create_reply", "request", "send_reply"]


def create_reply(request: MessageExt | Message, body: bytes) -> Message:
    """The reply to ``request`` (a message a consumer received from ``Producer.request``),
    carrying ``body``: MessageUtil.createReplyMessage. Send it with ``Producer.send`` (it
    goes as a reply, 325) or use ``Producer.send_reply``. MQClientError when the request
    has no CLUSTER property (its broker stamps it; a message not from a broker has none)."""
    props = request.properties
    cluster = props.get(Prop.CLUSTER)
    if cluster is None:
        raise MQClientError(
            f"create reply message fail, requestMessage error, property[{Prop.CLUSTER}] is null."
        )
    reply = {Prop.MSG_TYPE: REPLY_MESSAGE_FLAG}
    for name in (Prop.CORRELATION_ID, Prop.REPLY_TO_CLIENT, Prop.TTL):
        value = props.get(name)
        if value is not None:  # compat: a null property is not sent (messageProperties2String)
            reply[name] = value
    return Message(reply_topic(cluster), body, properties=reply)


async def request(
    producer: ProducerCore,
    msg: Message,
    timeout_ms: int,
    selector: Selector | None = None,
    arg: object = None,
    queue: MessageQueue | None = None,
) -> MessageExt:
    """DefaultMQProducerImpl.request: send ``msg`` as a request and wait for its reply, all
    within ``timeout_ms``; MQRequestTimeoutError when the reply does not come in time."""
    if timeout_ms <= 0:
        raise MQClientError(f"request timeout must be positive, got {timeout_ms} ms")
    inst = producer.instance
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    correlation_id = str(uuid.uuid4())  # CorrelationIdUtil.createCorrelationId
    props = dict(msg.properties)
    props[Prop.CORRELATION_ID] = correlation_id
    props[Prop.REPLY_TO_CLIENT] = inst.client_id
    props[Prop.TTL] = str(timeout_ms)
    sent = dataclasses.replace(msg, properties=props)  # the caller's message stays as it was
    # prepareSendRequest: the route, then a heartbeat to any master without one, so that the
    # broker the reply reaches knows this client's connection
    await inst.publish_info(msg.topic, timeout_ms / 1000)
    await inst.make_heard(max(deadline - loop.time(), 0.001))
    replies = inst.requests.replies
    future = replies.expect(correlation_id)
    try:
        left_ms = max(1, int((deadline - loop.time()) * 1000))
        await producer._send(sent, selector, arg, queue, left_ms)
        try:
            async with asyncio.timeout_at(deadline):
                return await future
        except TimeoutError:
            raise MQRequestTimeoutError(
                f"send request message to <{msg.topic}> OK, but wait reply message timeout, "
                f"{timeout_ms} ms (correlation id {correlation_id})",
                msg.topic,
                correlation_id,
            ) from None
    finally:
        replies.forget(correlation_id)
        future.cancel()  # a no-op once done; never left pending


async def send_reply(
    producer: ProducerCore, request_msg: MessageExt, body: bytes, timeout_ms: int | None
) -> SendResult:
    """``create_reply`` sent, to the broker that stored the request when the reply topic has
    a queue there (ours: that broker surely has the requester's heartbeat, r#2435), else as
    any send, with its retries."""
    reply = create_reply(request_msg, body)
    inst = producer.instance
    budget_ms = timeout_ms or producer.options.send_msg_timeout
    info = await inst.publish_info(reply.topic, budget_ms / 1000)
    home = [
        mq
        for mq in info.queues
        if info.master_addr(mq.broker_name) == request_msg.store_host
        and not inst.is_down(request_msg.store_host)
    ]
    if home:
        try:
            return await producer._send(reply, None, None, home[0], timeout_ms)
        except MQClientError as exc:
            if not exc.retriable:
                raise
    return await producer._send(reply, None, None, None, timeout_ms)
