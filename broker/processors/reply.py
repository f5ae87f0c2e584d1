"""ReplyProcessor: SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325), request-reply's
answer (RIP-16, 4.9.8's ReplyMessageProcessor; features.md 6.1).

A replier sends the reply as a send (the same headers, the same msgCheck); the broker pushes
it at once to the requester named by its REPLY_TO_CLIENT property with
PUSH_REPLY_MESSAGE_TO_CLIENT (326), over the connection that client's heartbeats came on, and
answers 0 when the requester took it, else SYSTEM_ERROR with Java's remark. With
``storeReplyMessageEnable`` (default true) the reply is also stored, in the topic it was sent
to (``<cluster>_REPLY_TOPIC``), whether the push worked or not; a stored reply's answer carries
its msgId and offset, an unstored one "0".
"""

from __future__ import annotations

import random

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.processors.callclient import CALL_TIMEOUT, call
from aiorocketmq.broker.processors.putcodes import STORED
from aiorocketmq.broker.processors.send import Refused, SendProcessor
from aiorocketmq.broker.registry import ClientRegistry
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.send import (
    ReplyMessageRequestHeader,
    SendMessageHeader,
)
from aiorocketmq.remoting.protocol.message import (
    Prop,
    decode_properties,
    encode_properties,
    now_ms,
    sent_message,
)

log = structlog.get_logger(__name__)


class ReplyProcessor:
    def __init__(self, ctx: BrokerContext, send: SendProcessor, registry: ClientRegistry) -> None:
        self.ctx = ctx
        self.send = send
        self.registry = registry

    async def reply(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """ReplyMessageProcessor.processReplyMessageRequest: check, push, store, answer."""
        v2 = req.code == RequestCode.SEND_REPLY_MESSAGE_V2
        hdr = SendMessageHeader.from_ext(req.ext_fields, v2=v2)
        send, ext = self.send, self.send._base_ext()
        try:
            config = send._msg_check(hdr, ch) or await send._created(hdr, ch)
        except Refused as exc:
            return response_to(req, exc.code, exc.remark, ext)
        queue_id = hdr.queue_id
        if queue_id < 0:  # compat: a random queue of the topic's write queues
            queue_id = random.randrange(config.write_queue_nums)
        props = decode_properties(hdr.properties)
        remark = await self._push(hdr, req.body, props, ch)
        if remark is None:
            code = ResponseCode.SUCCESS
            # compat: "0" where no store answers, so that clients can decode the header
            ext.update(msgId="0", queueId=str(queue_id), queueOffset="0")
        else:
            code = ResponseCode.SYSTEM_ERROR
        if self.ctx.config.store_reply_message_enable:
            await self._store(hdr, req.body, props, queue_id, ch, ext)
        return response_to(req, code, remark, ext)

    async def _push(
        self, hdr: SendMessageHeader, body: bytes, props: dict[str, str], ch: Channel
    ) -> str | None:
        """pushReplyMessage: None once the requester answered 0, else the remark why not."""
        client_id = props.get(Prop.REPLY_TO_CLIENT)
        if client_id is None:
            log.warning("reply_to_client_missing", topic=hdr.topic, peer=ch.peer)
            return f"reply message properties[{Prop.REPLY_TO_CLIENT}] is null"
        channel = self.registry.find_client(client_id)
        if not isinstance(channel, Channel) or channel.closed.done():
            remark = f"push reply message fail, channel of <{client_id}> not found."
            log.warning("reply_channel_not_found", client=client_id, peer=ch.peer)
            return remark
        pushed = dict(props)
        pushed[Prop.PUSH_REPLY_TIME] = str(now_ms())
        header = ReplyMessageRequestHeader(
            producer_group=hdr.producer_group, topic=hdr.topic, default_topic=hdr.default_topic,
            default_topic_queue_nums=hdr.default_topic_queue_nums, queue_id=hdr.queue_id,
            sys_flag=hdr.sys_flag, born_timestamp=hdr.born_timestamp, flag=hdr.flag,
            born_host=ch.peer, store_host=self.ctx.addr, store_timestamp=now_ms(),
            properties=encode_properties(pushed), reconsume_times=hdr.reconsume_times,
            unit_mode=hdr.unit_mode,
        )  # fmt: skip
        cmd = RemotingCommand.request(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext(), body
        )
        # compat: Java's remark lacks the space before "fail"
        failed = f"push reply message to {client_id}fail."
        try:
            resp = await call(channel, cmd, CALL_TIMEOUT)  # Broker2Client.callClient, 10 s
        except RemotingError as exc:
            log.warning("reply_push_failed", client=client_id, peer=channel.peer, error=str(exc))
            return failed
        if resp.code != ResponseCode.SUCCESS:
            log.warning("reply_push_refused", client=client_id, peer=channel.peer,
                        code=resp.code, remark=resp.remark)  # fmt: skip
            return failed
        return None

    async def _store(
        self, hdr: SendMessageHeader, body: bytes, props: dict[str, str], queue_id: int,
        ch: Channel, ext: dict[str, str],
    ) -> None:  # fmt: skip
        """handlePutMessageResult: the stored reply's ids go in the answer; a failure is
        logged only (the answer is the push's)."""
        stored = dict(props)
        wait = stored.pop(Prop.WAIT, "true").lower() == "true"
        msg = sent_message(hdr.topic, body, hdr.flag, stored, queue_id, hdr.sys_flag,
                           hdr.born_timestamp, ch.peer, hdr.reconsume_times or 0)  # fmt: skip
        result = await self.ctx.store.put(msg, wait_flush=wait)
        if result.status not in STORED:
            log.warning("reply_not_stored", topic=hdr.topic, status=result.status.name)
            return
        self.ctx.stats.on_put(hdr.topic, len(result.msg_ids), result.wrote_bytes)
        ext.update(msgId=",".join(result.msg_ids), queueId=str(queue_id),
                   queueOffset=str(result.queue_offset))  # fmt: skip
