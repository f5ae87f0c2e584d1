"""CallClientProcessor: admin requests the broker answers by asking consumers (fidelity D5).

GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) go to one consumer and its
answer comes back as is (AdminBrokerProcessor.callConsumer); INVOKE_BROKER_TO_GET_CONSUMER_STATUS
(223) asks the group's consumers with GET_CONSUMER_STATUS_FROM_CLIENT (221) and gathers their
queue offsets (Broker2Client.getConsumeStatus). Each call awaits the client's answer on its
connection within Java's timeout; nothing else in the broker waits for it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.registry import ClientRegistry
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.errors import MessageDecodeError, RemotingError, RemotingTimeoutError
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.bounds import group_refusal
from aiorocketmq.remoting.protocol.codes import MQVersion, RequestCode, version_desc
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.consumer import (
    ConsumeMessageDirectlyRequestHeader,
    ConsumerRunningInfoRequestHeader,
    ConsumerStatusRequestHeader,
)
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id

log = structlog.get_logger(__name__)

CALL_TIMEOUT: Final = 10.0  # Broker2Client.callClient: invokeSync, 10 s, not configurable
STATUS_TIMEOUT: Final = 5.0  # Broker2Client.getConsumeStatus: invokeSync, 5 s per client

QueueOffsets = list[tuple[dict[str, Any], int]]  # (MessageQueue, offset)


def _refuse(req: RemotingCommand, remark: str, code: int = R.SYSTEM_ERROR) -> RemotingCommand:
    return response_to(req, code, remark)


def _text(value: str | None) -> str:
    return "null" if value is None else value  # String.format's rendering of a null


async def call(channel: Channel, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
    """invokeSync on a client's connection: the whole call, a wait for a peer that is not
    reading included, is bounded by ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    if not channel.ready:
        await channel.wait_writable(deadline)
    return await channel.start_request(cmd, max(deadline - loop.time(), 0.001))


class CallClientProcessor:
    def __init__(self, ctx: BrokerContext, registry: ClientRegistry) -> None:
        self.ctx = ctx
        self.registry = registry

    async def consumer_running_info(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """AdminBrokerProcessor.getConsumerRunningInfo: forwarded to the client as is."""
        hdr = ConsumerRunningInfoRequestHeader.from_ext(req.ext_fields)
        return await self._call_consumer(req, hdr.consumer_group, hdr.client_id, req.body)

    async def consume_message_directly(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """AdminBrokerProcessor.consumeMessageDirectly: the stored record behind ``msgId``
        becomes the body, ``brokerName`` is added, and the request goes to the client."""
        hdr = ConsumeMessageDirectlyRequestHeader.from_ext(req.ext_fields)
        req.ext_fields["brokerName"] = self.ctx.config.broker_name
        # compat: Java fails here with an exception's description (code 1, a NullPointer- or
        # BufferUnderflowException); ours says what was wrong, before looking for the client
        try:
            _store, offset = parse_offset_msg_id(_text(hdr.msg_id))
        except MessageDecodeError as exc:
            return _refuse(req, f"bad msgId {_text(hdr.msg_id)}: {exc}")
        record = self.ctx.store.read(offset)
        if record is None:
            return _refuse(req, f"can not find message by the offset, {offset}")
        return await self._call_consumer(req, hdr.consumer_group, hdr.client_id, record)

    async def _call_consumer(
        self, req: RemotingCommand, group: str, client_id: str | None, body: bytes
    ) -> RemotingCommand:
        """AdminBrokerProcessor.callConsumer: the same code, the request's ext fields as
        they came and ``body``, sent to the client; its answer is returned unchanged."""
        refusal = group_refusal("consumerGroup", group)
        if refusal is not None:
            return _refuse(req, refusal)
        found = self.registry.find_consumer(group, client_id)
        channel = found[0] if found is not None else None
        if found is None or not isinstance(channel, Channel):
            return _refuse(req, f"The Consumer <{group}> <{_text(client_id)}> not online")
        info = found[1]
        if info.version < MQVersion.V3_1_8_SNAPSHOT:
            return _refuse(req, f"The Consumer <{client_id}> Version <{version_desc(info.version)}>"
                           " too low to finish, please upgrade it to V3_1_8_SNAPSHOT")  # fmt: skip
        forward = RemotingCommand.request(req.code, dict(req.ext_fields), body)
        try:
            return await call(channel, forward, CALL_TIMEOUT)
        except RemotingTimeoutError:
            return _refuse(req, f"consumer <{group}> <{client_id}> Timeout: wait response on "
                           f"the channel <{channel.peer}> timeout, {CALL_TIMEOUT * 1000:.0f}(ms)",
                           R.CONSUME_MSG_TIMEOUT)  # fmt: skip
        # compat: a connection lost meanwhile is said at once; Java waits out the 10 s
        except RemotingError as exc:
            return _refuse(req, f"invoke consumer <{group}> <{client_id}> Exception: {exc}")

    async def consumer_status(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """Broker2Client.getConsumeStatus: each client's GetConsumerStatusBody
        messageQueueTable, by client id; ``clientAddr`` (a client id) asks that client only."""
        hdr = ConsumerStatusRequestHeader.from_ext(req.ext_fields)
        refusal = group_refusal("group", hdr.group)
        if refusal is not None:
            return _refuse(req, refusal)
        group = self.registry.consumers.get(hdr.group)
        # compat: for a group never seen Java fails with a NullPointerException (code 1 too)
        if group is None or not group.clients:
            return _refuse(req, f"No Any Consumer online in the consumer group: [{hdr.group}]")
        # compat: Java finds an old client as it goes, after asking the ones before it
        old = min(c.version for c in group.clients.values())
        if old < MQVersion.V3_0_7_SNAPSHOT:
            return _refuse(req, f"the client does not support this feature. "
                           f"version={version_desc(old)}")  # fmt: skip
        only = (hdr.client_addr or "").strip()
        asked = [(c, info.client_id) for c, info in group.clients.items()
                 if isinstance(c, Channel) and (not only or info.client_id == only)]  # fmt: skip
        if only:
            asked = asked[:1]  # Java stops after the client it was asked for
        # compat: Java asks one client after another (5 s each); we ask them all at once, so a
        # silent client costs the request 5 s, not 5 s per client
        tables = await asyncio.gather(*(self._status(c, hdr) for c, _id in asked))
        by_client = {cid: t for (_c, cid), t in zip(asked, tables, strict=True) if t is not None}
        parts = [f"{json.dumps(cid, ensure_ascii=False)}:{fastjson.dumps_object_keyed(rows)}"
                 for cid, rows in by_client.items()]  # fmt: skip
        body = '{"consumerTable":{' + ",".join(parts) + '},"messageQueueTable":{}}'
        return response_to(req, R.SUCCESS, body=body.encode())

    async def _status(
        self, channel: Channel, hdr: ConsumerStatusRequestHeader
    ) -> QueueOffsets | None:
        """One client's messageQueueTable; None when it failed, refused or sent no body."""
        ask = ConsumerStatusRequestHeader(topic=hdr.topic, group=hdr.group)
        cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, ask.to_ext())
        try:
            resp = await call(channel, cmd, STATUS_TIMEOUT)
        except RemotingError as exc:
            log.warning("get_consumer_status_failed", group=hdr.group, peer=channel.peer,
                        error=str(exc))  # fmt: skip
            return None
        if resp.code != R.SUCCESS or not resp.body:
            return None
        try:
            return queue_offsets(resp.body)
        except (ValueError, TypeError) as exc:
            log.warning("get_consumer_status_bad_body", group=hdr.group, peer=channel.peer,
                        error=str(exc))  # fmt: skip
            return None


def queue_offsets(body: bytes) -> QueueOffsets:
    """GetConsumerStatusBody.messageQueueTable as fastjson writes it: MessageQueue object
    keys, ``{{"brokerName":"b","queueId":0,"topic":"t"}:5}``."""
    status = fastjson.loads(body)
    if not isinstance(status, dict):
        raise ValueError("GetConsumerStatusBody is not an object")
    table = status.get("messageQueueTable") or {}
    if not isinstance(table, dict):
        raise ValueError("messageQueueTable is not an object")
    rows = []
    for key, offset in table.items():
        if not isinstance(key, tuple) or type(offset) is not int:
            raise ValueError(f"not a MessageQueue -> offset entry: {key!r}")
        obj = dict(key)
        mq: dict[str, Any] = {"queueId": int(obj.get("queueId", 0))}
        for name in ("brokerName", "topic"):  # MessageQueue's fields; nulls left out
            if obj.get(name) is not None:
                mq[name] = str(obj[name])
        rows.append((mq, offset))
    return rows
