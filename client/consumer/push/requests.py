"""A push consumer's answers to what brokers ask of its group (ClientRemotingProcessor of
4.9.8): rebalance now (40), reset offsets (220), running info (307), consume one message
directly (309) and this client's offsets (221)."""

from __future__ import annotations

import time

from aiorocketmq.client.consumer import info as consumer_info
from aiorocketmq.client.consumer.member import GroupMember
from aiorocketmq.client.consumer.push.consume import Listener, prepare
from aiorocketmq.client.consumer.types import (
    ConsumeConcurrentlyContext,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumerOptions,
    ConsumeStatus,
)
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.client.core.requests import Answer
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.message import decode_record

log = get_logger(__name__)

_RESULTS = {
    ConsumeStatus.CONSUME_SUCCESS: "CR_SUCCESS",
    ConsumeStatus.RECONSUME_LATER: "CR_LATER",
    ConsumeOrderlyStatus.SUCCESS: "CR_SUCCESS",
    ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: "CR_LATER",
}


class PushRequests:
    """Reads the member's state and the consumer's settings; a reset is the rebalance's."""

    def __init__(
        self, member: GroupMember, options: ConsumerOptions, listener: Listener, *, orderly: bool
    ) -> None:
        self.member = member
        self.group = member.group
        self.options = options
        self.listener = listener
        self.orderly = orderly

    def answers(self) -> dict[int, Answer]:
        return {
            C.GET_CONSUMER_RUNNING_INFO: self.running_info,
            C.CONSUME_MESSAGE_DIRECTLY: self.consume_directly,
            C.GET_CONSUMER_STATUS_FROM_CLIENT: self.status,
        }

    def reset(self, req: RemotingCommand) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: the rebalance resets the topic's queues."""
        try:
            offsets = consumer_info.reset_offsets(req.body)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("reset_offset_bad_body", group=self.group, error=str(exc))
            return
        topic = req.ext_fields.get("topic", "")
        self.member.tasks.spawn(self.member.rebalance.reset_offsets(topic, offsets))

    def running_info(self, req: RemotingCommand) -> RemotingCommand:
        """ConsumerRunningInfo: settings, subscriptions, each owned queue's state."""
        m, o = self.member, self.options
        props = {
            "PROP_NAMESERVER_ADDR": ";".join(m.instance.namesrv_addrs),
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
            "PROP_CONSUMEORDERLY": str(self.orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(o.consume_concurrency),
            "PROP_CONSUMER_START_TIMESTAMP": str(m.started_at),
            "PROP_CLIENT_VERSION": consumer_info.MQVersion,
            "consumerGroup": self.group,
            "messageModel": o.message_model.value,
            "consumeFromWhere": o.consume_from_where.value,
            "pullBatchSize": str(o.pull_batch_size),
            "consumeMessageBatchMaxSize": str(o.consume_message_batch_max_size),
            "pullThresholdForQueue": str(o.pull_threshold_for_queue),
            "maxReconsumeTimes": str(o.max_reconsume_times),
        }
        rb = m.rebalance
        queues = {mq: (pq, rb.offsets.table.get(mq, -1)) for mq, pq in rb.table.items()}
        body = consumer_info.running_info(
            props, list(rb.subscriptions.values()), queues, list(rb.subscriptions)
        )
        return response_to(req, R.SUCCESS, body=body)

    async def consume_directly(self, req: RemotingCommand) -> RemotingCommand:
        """consumeMessageDirectly: the listener gets the message once; nothing is committed
        or sent back; the answer says what it returned."""
        try:
            msg = decode_record(req.body, inflate=True)
        except MessageDecodeError as exc:
            return response_to(req, R.SYSTEM_ERROR, f"bad message: {exc}")
        msg.broker_name = req.ext_fields.get("brokerName", "")
        mq = MessageQueue(msg.topic, msg.broker_name, msg.queue_id)
        prepare([msg], self.group)
        ctx = ConsumeOrderlyContext(mq) if self.orderly else ConsumeConcurrentlyContext(mq)
        begin = time.monotonic()
        remark = ""
        try:
            status = await self.listener([msg], ctx)
            result = _RESULTS.get(status, "CR_RETURN_NULL")
        except Exception as exc:  # noqa: BLE001 - reported to the admin, as Java's CR_THROW_EXCEPTION
            result, remark = "CR_THROW_EXCEPTION", repr(exc)
        spent = int((time.monotonic() - begin) * 1000)
        body = consumer_info.direct_result(self.orderly, result, remark, spent)
        return response_to(req, R.SUCCESS, body=body)

    def status(self, req: RemotingCommand) -> RemotingCommand:
        """getConsumeStatus: this client's offsets of the topic's queues it owns."""
        topic = req.ext_fields.get("topic", "")
        rb = self.member.rebalance
        offsets = {mq: rb.offsets.table.get(mq, -1) for mq in rb.table if mq.topic == topic}
        return response_to(req, R.SUCCESS, body=consumer_info.consumer_status(offsets))
