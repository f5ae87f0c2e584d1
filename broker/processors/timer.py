"""TimerProcessor: RECALL_MESSAGE (370), GET_TIMER_CHECK_POINT (60), GET_TIMER_METRICS (61)
(5.3.3's RecallMessageProcessor and AdminBrokerProcessor; features.md 4.1).

A recall writes a delete marker into the wheel (TIMER_DEL_UNIQKEY = "<topic>+<msgId>") in
the slot the handle names -- its timestamp read as a send's TIMER_DELIVER_MS (the send
answered TIMER_OUT_MS + 1; a handle a client builds from a deliver time names the same
slot; broker.timer_rules.recall_slots) -- so the wheel drops the message when that slot
falls due. A slot the wheel has passed (or is delivering) answers ILLEGAL_OPERATION: the
message has been delivered already.
"""

from __future__ import annotations

from typing import Final

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.processors.putcodes import PUT_RESULT, STORED
from aiorocketmq.broker.timer import TimerService
from aiorocketmq.broker.timer_rules import recall_slots
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.message import now_ms
from aiorocketmq.remoting.protocol.route import dumps
from aiorocketmq.remoting.protocol.timer import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    decode_handle,
)

NOT_ENABLED: Final = "recall failed, timer message is not enabled"
NO_TOPIC: Final = "recall failed, the topic[{topic}] not exist"
BAD_HANDLE: Final = "recall failed, invalid recall handle"
OTHER_BROKER: Final = "recall failed, the handle belongs to broker {broker}"
BAD_TIME: Final = "recall failed, timestamp invalid"
DELIVERED: Final = "recall failed, the message has been delivered already"


class TimerProcessor:
    def __init__(self, ctx: BrokerContext, timer: TimerService) -> None:
        self.ctx = ctx
        self.timer = timer

    async def recall(self, req: RemotingCommand, _ch: Channel) -> RemotingCommand:
        hdr = RecallMessageRequestHeader.from_ext(req.ext_fields)
        if not self.ctx.store_config.timer_wheel_enable:
            return response_to(req, R.ILLEGAL_OPERATION, NOT_ENABLED)
        if self.ctx.topics.get(hdr.topic) is None:
            return response_to(req, R.TOPIC_NOT_EXIST, NO_TOPIC.format(topic=hdr.topic))
        try:
            handle = decode_handle(hdr.recall_handle)
            stamp = int(handle.timestamp)
        except ValueError:
            return response_to(req, R.ILLEGAL_OPERATION, BAD_HANDLE)
        if handle.topic != hdr.topic:
            return response_to(req, R.ILLEGAL_OPERATION, BAD_HANDLE)
        if handle.broker_name != self.ctx.config.broker_name:
            return response_to(req, R.ILLEGAL_OPERATION,
                               OTHER_BROKER.format(broker=handle.broker_name))  # fmt: skip
        max_ms = self.ctx.store_config.timer_max_delay_sec * 1000
        if stamp <= 0 or stamp - now_ms() >= max_ms:
            return response_to(req, R.ILLEGAL_OPERATION, BAD_TIME)
        slots = recall_slots(stamp, self.timer.precision)
        pending = [s for s in slots if not self.timer.delivered_already(s)]
        if not pending:
            return response_to(req, R.ILLEGAL_OPERATION, DELIVERED)
        for slot in pending:
            marker = self.timer.marker(hdr.topic, handle.msg_id, slot)
            result = await self.ctx.store.put(marker, wait_flush=True)
            if result.status not in STORED:
                code, remark = PUT_RESULT[result.status]
                return response_to(req, code, (remark or result.status.name).format(
                    disk=self.ctx.store.disk_usage_text(),
                    body=self.ctx.store_config.max_message_size))  # fmt: skip
        ext = RecallMessageResponseHeader(msg_id=handle.msg_id).to_ext()
        return response_to(req, R.SUCCESS, None, ext)

    async def checkpoint(self, req: RemotingCommand, _ch: Channel) -> RemotingCommand:
        return response_to(req, R.SUCCESS, body=dumps(self.timer.checkpoint()))

    async def metrics(self, req: RemotingCommand, _ch: Channel) -> RemotingCommand:
        return response_to(req, R.SUCCESS, body=dumps(self.timer.metrics()))
