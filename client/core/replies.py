"""Replies: the requests of a client instance waiting for their replies (RequestFutureHolder's
table, by correlation id) and the broker's PUSH_REPLY_MESSAGE_TO_CLIENT (326) that brings one
(ClientRemotingProcessor.receiveReplyMessage).

Bounded whatever happens: an entry lives only while its ``Producer.request`` waits (the
request removes it when it ends, answered, timed out or cancelled), and at most ``limit``
requests wait at once -- one more is refused at once rather than grow the table. A reply
nobody waits for any more (it came late) is answered 0 and dropped, as Java does.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Final

from aiorocketmq.client.core.errors import MQClientError
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.errors import RemotingCommandError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.send import ReplyMessageRequestHeader
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    Prop,
    SysFlag,
    decode_properties,
    now_ms,
)

log = get_logger(__name__)

MAX_WAITING: Final = 65_536  # requests of one client instance waiting for a reply at once


class Replies:
    """Correlation id -> the future its request awaits."""

    def __init__(self, limit: int = MAX_WAITING) -> None:
        self.limit = limit
        self._waiting: dict[str, asyncio.Future[MessageExt]] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def expect(self, correlation_id: str) -> asyncio.Future[MessageExt]:
        """A future the reply to ``correlation_id`` completes; MQClientError when ``limit``
        requests wait already. The caller ``forget``s it when done, whatever happened."""
        if len(self._waiting) >= self.limit:
            raise MQClientError(
                f"{self.limit} requests already wait for their replies in this client; "
                "try again when some are answered"
            )
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        return future

    def forget(self, correlation_id: str) -> None:
        self._waiting.pop(correlation_id, None)

    def push(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """receiveReplyMessage: the reply as a MessageExt (body inflated, ARRIVE_TIME added)
        completes its request's future; answered 0 whether anyone waited or not."""
        try:
            hdr = ReplyMessageRequestHeader.from_ext(req.ext_fields)
        except RemotingCommandError as exc:
            log.warning("reply_push_bad_header", broker=ch.peer, error=str(exc))
            return response_to(req, R.SYSTEM_ERROR, "process reply message fail")
        body = req.body
        if hdr.sys_flag & SysFlag.COMPRESSED:
            try:
                body = zlib.decompress(body)
            except zlib.error as exc:  # compat: Java logs it and hands the body on as it came
                log.warning("reply_push_inflate_failed", broker=ch.peer, error=str(exc))
        props = decode_properties(hdr.properties)
        props[Prop.ARRIVE_TIME] = str(now_ms())
        msg = MessageExt(
            topic=hdr.topic, body=body, flag=hdr.flag, properties=props, queue_id=hdr.queue_id,
            sys_flag=hdr.sys_flag, born_timestamp=hdr.born_timestamp, born_host=hdr.born_host,
            store_timestamp=hdr.store_timestamp, store_host=hdr.store_host,
            reconsume_times=hdr.reconsume_times or 0,
        )  # fmt: skip
        correlation_id = props.get(Prop.CORRELATION_ID, "")
        future = self._waiting.pop(correlation_id, None)
        if future is None or future.done():
            # a reply after its request gave up: Java warns; a line per late reply is
            # debug here (design.md 7: no per-message lines above it)
            log.debug("reply_unmatched", correlation_id=correlation_id, born_host=hdr.born_host)
        else:
            future.set_result(msg)
        return response_to(req, R.SUCCESS)
