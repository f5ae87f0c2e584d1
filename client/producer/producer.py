"""Producer: RocketMQ's DefaultMQProducer for asyncio (seed 002: sendDefaultImpl,
sendKernelImpl, queue selection, latency fault tolerance; seed 004: ordered sends).

    async with Producer("my_group", namesrv_addr="127.0.0.1:9876") as producer:
        result = await producer.send(Message("Topic", b"hello", tags="TagA"))

Not compiled, on purpose (issue 30): this is the face ``help(Producer)`` and
``inspect.signature`` read; the send path is ProducerCore's (sending.py, compiled).
"""

from __future__ import annotations

import math
import ssl
from collections.abc import Sequence

from aiorocketmq.client.core.message import Message, MessageQueue, SendResult
from aiorocketmq.client.core.timer import RecallHandle
from aiorocketmq.client.producer import recall as rc
from aiorocketmq.client.producer import request as rr
from aiorocketmq.client.producer.options import ProducerOptions
from aiorocketmq.client.producer.sending import ProducerCore, Selector
from aiorocketmq.client.trace import tracing
from aiorocketmq.client.trace.hooks import SendTrace
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.message import MessageExt
from aiorocketmq.remoting.protocol.msgid import java_hash

__all__ = ["Producer", "ProducerOptions", "Selector", "select_by_hash"]


class Producer(ProducerCore):
    """Sends messages to a RocketMQ cluster (DefaultMQProducer): ``send`` waits until a
    broker stored the message, retrying on another broker; ``send_orderly`` keeps a key on
    one queue; ``send_oneway`` only writes; ``send_batch`` sends many in one request;
    ``request`` sends a request and waits for its reply, ``send_reply`` answers one
    (request-reply, RIP-16). A ``Message`` with ``deliver_at`` or ``delay`` is a timer
    message (5.x's RIP-43); ``recall`` cancels one still waiting.

    ``namesrv_addr`` is "host:port[;host:port]" (else NAMESRV_ADDR). The keywords are
    DefaultMQProducer's settings in snake case, with its defaults (ProducerOptions):
    ``send_msg_timeout`` (ms, one budget for every try of a send),
    ``retry_times_when_send_failed``, ``retry_another_broker_when_not_store_ok``,
    ``compress_msg_body_over_howmuch`` and ``compress_level`` (zlib), ``max_message_size``,
    ``send_latency_fault_enable``, ``default_topic_queue_nums``, ``instance_name`` (producers
    and consumers of one name share connections), ``serialize_type`` (the header format);
    ours: ``create_topic_on_every_master`` (a topic auto-created by its first send is created
    on every master of TBW102's route). Use ``async with``, or ``start()`` and
    ``shutdown()``. Failures raise MQClientError subclasses (``retriable`` says whether
    another try may succeed).

    A secured cluster (every client class takes these four): ``access_key`` and
    ``secret_key`` sign every request (ACL 1.0, Apache's ``AclClientRPCHook`` with
    ``SessionCredentials``), with ``security_token`` signed along when given; the secret
    never appears in logs, ``repr`` or errors. ``tls=True`` speaks TLS to the name servers
    and brokers **without verifying their certificates or names**, as Apache's client does
    by default (``useTLS``); pass an ``ssl.SSLContext`` (``aiorocketmq.tls_context(ca_file)``)
    to verify them. Clients with different credentials or TLS settings never share
    connections.

    ``trace=True`` (Java's ``enableMsgTrace``) writes a Pub record of each send, and an
    EndTransaction record of each transaction's end, to ``trace_topic`` (Java's
    ``customizedTraceTopic``; default RMQ_SYS_TRACE_TOPIC) in 4.9.8's format, in batches, by
    an internal producer: ``mqadmin queryMsgTraceById`` reads them. A full trace queue drops
    records (``trace_dispatcher.dropped``) rather than slow a send; a trace failure never
    fails one. With ``opentelemetry-api`` installed, each record is an OpenTelemetry span
    too."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str | None = None,
        *,
        send_msg_timeout: int = 3000,
        retry_times_when_send_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_msg_body_over_howmuch: int = 4096,
        compress_level: int = 5,
        max_message_size: int = 4 * 1024 * 1024,
        send_latency_fault_enable: bool = False,
        create_topic_on_every_master: bool = True,
        default_topic_queue_nums: int = 4,
        instance_name: str = "DEFAULT",
        serialize_type: SerializeType = SerializeType.JSON,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: bool | ssl.SSLContext | None = None,
        trace: bool = False,
        trace_topic: str = "",
    ) -> None:
        options = ProducerOptions(
            send_msg_timeout=send_msg_timeout,
            retry_times_when_send_failed=retry_times_when_send_failed,
            retry_another_broker_when_not_store_ok=retry_another_broker_when_not_store_ok,
            compress_msg_body_over_howmuch=compress_msg_body_over_howmuch,
            compress_level=compress_level,
            max_message_size=max_message_size,
            send_latency_fault_enable=send_latency_fault_enable,
            create_topic_on_every_master=create_topic_on_every_master,
            default_topic_queue_nums=default_topic_queue_nums,
            instance_name=instance_name,
            serialize_type=serialize_type,
            access_key=access_key,
            secret_key=secret_key,
            security_token=security_token,
            tls=tls,
            trace=trace,
            trace_topic=trace_topic,
        )
        super().__init__(group, namesrv_addr, options)
        self.trace_dispatcher = tracing(group, "PRODUCE", self._namesrv, options)
        self._send_trace: SendTrace | None = None
        if self.trace_dispatcher is not None:
            self._send_trace = SendTrace(self.trace_dispatcher, group)
            self._trace = self._send_trace

    async def start(self) -> None:
        """Join the process's client instance (connections, routes, heartbeats); idempotent."""
        await self._start()
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.start()

    async def shutdown(self) -> None:
        """Let sends under way finish (up to ``send_msg_timeout``), then UNREGISTER_CLIENT to
        the brokers; the connections close with the instance's last user. A traced
        producer then sends the trace records still queued."""
        await self._shutdown()
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.stop()

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def send(
        self,
        msg: Message,
        *,
        selector: Selector | None = None,
        arg: object = None,
        queue: MessageQueue | None = None,
        timeout_ms: int | None = None,
    ) -> SendResult:
        """Send and wait until stored. With ``selector`` (called with the topic's queues,
        ``msg`` and ``arg``) or ``queue``: that queue, one try (sendSelectImpl); else up to
        1 + retry_times_when_send_failed tries, each avoiding the broker that just failed, all
        within ``timeout_ms`` (default ``send_msg_timeout``)."""
        return await self._send(msg, selector, arg, queue, timeout_ms)

    async def send_orderly(self, msg: Message, key: object) -> SendResult:
        """The same key always goes to the same queue (SelectMessageQueueByHash, with Java's
        String.hashCode so Java producers pick the same queue for the same key)."""
        return await self._send(msg, select_by_hash, key, None, None)

    async def send_oneway(self, msg: Message) -> None:
        """Write the message and return; no result, no retry (CommunicationMode.ONEWAY)."""
        await self._send_oneway(msg)

    async def send_batch(self, msgs: Sequence[Message]) -> SendResult:
        """One SEND_BATCH_MESSAGE of messages to one topic (MessageBatch.generateFromList):
        no delay levels, no retry topics; ``msg_id`` lists every message's id, comma-separated.
        Timer messages (``deliver_at`` / ``delay``) only in a batch of timer messages: our
        brokers give each its own time (an Apache 5.x broker delivers a batch's timers at
        once); a batch's result has no ``recall_handle``."""
        return await self._send_batch(msgs)

    async def recall(
        self,
        topic: str,
        handle: str | RecallHandle | SendResult,
        *,
        timeout_ms: int | None = None,
    ) -> str:
        """Cancel a timer message that still waits (5.x's ``recallMessage``, RECALL_MESSAGE
        370): ``handle`` is its send's ``SendResult`` or ``SendResult.recall_handle`` (a
        broker's handle: topic, broker, slot time and message id, Base64), or a
        ``RecallHandle`` built from a message id -- ``RecallHandle(topic,
        result.queue.broker_name, deliver_at_ms, result.msg_id)`` files the same slot as the
        broker's for a message sent with ``deliver_at`` (a message id alone does not: the
        broker files a recall under the message's delivery time). Returns the recalled
        message's id. Raises MQClientError for a handle that is not one (5.x's "recall handle
        is invalid"), of another topic, or of a broker not in the topic's route, and
        MQBrokerError for the broker's refusal -- 5.x's codes and remarks, e.g. ILLEGAL_OPERATION
        (604) "recall failed, timestamp invalid" once the message fell due (too late: it was
        delivered or is being delivered), NO_PERMISSION "recall failed, operation is
        forbidden" when the broker's recallMessageEnable is off."""
        return await rc.recall(self, topic, handle, timeout_ms)

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues ``send`` picks among for ``topic``, as a selector is given them
        (DefaultMQProducer.fetchPublishMessageQueues): writable queues of brokers that have
        a master, in broker-name order."""
        info = await self.instance.publish_info(topic, self.options.send_msg_timeout / 1000)
        return list(info.queues)

    async def request(
        self,
        msg: Message,
        timeout_ms: int = 3000,
        *,
        selector: Selector | None = None,
        arg: object = None,
        queue: MessageQueue | None = None,
    ) -> MessageExt:
        """Send ``msg`` as a request and wait for its reply, everything within ``timeout_ms``
        (DefaultMQProducer.request): the reply, as the broker pushed it, or
        MQRequestTimeoutError (a TimeoutError naming the topic and the correlation id) when
        it does not come in time. ``msg`` is left unchanged (the request carries
        CORRELATION_ID, REPLY_TO_CLIENT and TTL); ``selector``/``arg`` or ``queue`` pick the
        queue as for ``send``. A replier answers with ``send_reply`` (or sends
        ``create_reply(request, body)``)."""
        return await rr.request(self, msg, timeout_ms, selector, arg, queue)

    async def send_reply(
        self, request: MessageExt, body: bytes, *, timeout_ms: int | None = None
    ) -> SendResult:
        """Answer ``request`` (a message a consumer received, sent by ``request``) with
        ``body``: ``create_reply(request, body)`` sent as SEND_REPLY_MESSAGE_V2 (325), to the
        broker that stored the request when it can (that broker knows the requester), else
        as any send. The broker pushes it to the requester; a requester that is gone makes
        it fail (MQClientError, caused by the broker's MQBrokerError: code 1, "push reply
        message fail, channel of <client id> not found.")."""
        return await rr.send_reply(self, request, body, timeout_ms)


def select_by_hash(queues: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
    """SelectMessageQueueByHash: abs(hashCode % size), String.hashCode for text keys."""
    h = java_hash(arg) if isinstance(arg, str) else hash(arg)
    return queues[abs(int(math.fmod(h, len(queues))))]
