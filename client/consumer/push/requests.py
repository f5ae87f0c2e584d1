"""A push consumer's answers to what brokers ask of its group (ClientRemotingProcessor of
4.9.8): rebalance now (40), reset offsets (220), running info (307), consume one message
directly (309) and this client's offsets (221)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from aiorocketmq.client.consumer import info as consumer_info
from aiorocketmq.client.consumer.push.consume import prepare
from aiorocketmq.client.consumer.types import (
    ConsumeConcurrentlyContext,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
)
from aiorocketmq.client.core.instance import ClientInstance
from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.message import decode_record

if TYPE_CHECKING:
    from aiorocketmq.client.consumer.push.consumer import PushConsumer

log = get_logger(__name__)

_RESULTS = {
    ConsumeStatus.CONSUME_SUCCESS: "CR_SUCCESS",
    ConsumeStatus.RECONSUME_LATER: "CR_LATER",
    ConsumeOrderlyStatus.SUCCESS: "CR_SUCCESS",
    ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: "CR_LATER",
}


class PushRequests:
    def __init__(self, consumer: PushConsumer) -> None:
        self.c = consumer
        self.tasks: set[asyncio.Task[None]] = set()

    def plug(self, inst: ClientInstance) -> None:
        r, g = inst.requests, self.c.group
        r.consumer_ids_changed[g] = self.rebalance_now
        r.reset_offset[g] = self.reset
        r.answers[(C.GET_CONSUMER_RUNNING_INFO, g)] = self.running_info
        r.answers[(C.CONSUME_MESSAGE_DIRECTLY, g)] = self.consume_directly
        r.answers[(C.GET_CONSUMER_STATUS_FROM_CLIENT, g)] = self.status

    def unplug(self, inst: ClientInstance) -> None:
        r, g = inst.requests, self.c.group
        r.consumer_ids_changed.pop(g, None)
        r.reset_offset.pop(g, None)
        for code in (C.GET_CONSUMER_RUNNING_INFO, C.CONSUME_MESSAGE_DIRECTLY,
                     C.GET_CONSUMER_STATUS_FROM_CLIENT):  # fmt: skip
            r.answers.pop((code, g), None)

    def _spawn(self, coro: object) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)  # type: ignore[arg-type]
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def rebalance_now(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED: rebalance at once (RebalanceService.wakeup)."""
        self._spawn(self.c.rebalance.run())

    def reset(self, req: RemotingCommand) -> None:
        try:
            offsets = consumer_info.reset_offsets(req.body)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("reset_offset_bad_body", group=self.c.group, error=str(exc))
            return
        self._spawn(self._reset(req.ext_fields.get("topic", ""), offsets))

    async def _reset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """MQClientInstance.resetOffset: drop the topic's queues named in the table, wait for
        their pulls to end, commit the new offsets, and take the queues again."""
        rb = self.c.rebalance
        dropped = []
        for mq, pq in list(rb.table.items()):
            if mq.topic == topic and mq in offsets:
                pq.dropped = True
                pq.clear()
                dropped.append(mq)
        tasks = [t for mq in dropped if (t := self.c.puller.tasks.get(mq)) is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for mq, offset in offsets.items():
            rb.offsets.update(mq, offset, False)
            await rb.offsets.persist(mq)
            rb.table.pop(mq, None)
        log.info("offsets_reset", group=self.c.group, topic=topic, queues=len(offsets))
        await rb.run()

    def running_info(self, req: RemotingCommand) -> RemotingCommand:
        """ConsumerRunningInfo: settings, subscriptions, each owned queue's state."""
        c, o = self.c, self.c.options
        props = {
            "PROP_NAMESERVER_ADDR": ";".join(c.instance.namesrv_addrs),
            "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
            "PROP_CONSUMEORDERLY": str(c.orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(o.consume_concurrency),
            "PROP_CONSUMER_START_TIMESTAMP": str(c.started_at),
            "PROP_CLIENT_VERSION": consumer_info.MQVersion,
            "consumerGroup": c.group,
            "messageModel": o.message_model.value,
            "consumeFromWhere": o.consume_from_where.value,
            "pullBatchSize": str(o.pull_batch_size),
            "consumeMessageBatchMaxSize": str(o.consume_message_batch_max_size),
            "pullThresholdForQueue": str(o.pull_threshold_for_queue),
            "maxReconsumeTimes": str(o.max_reconsume_times),
        }
        rb = c.rebalance
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
        prepare([msg], self.c.group)
        ctx = ConsumeOrderlyContext(mq) if self.c.orderly else ConsumeConcurrentlyContext(mq)
        begin = time.monotonic()
        remark = ""
        try:
            status = await self.c.listener([msg], ctx)
            result = _RESULTS.get(status, "CR_RETURN_NULL")
        except Exception as exc:  # noqa: BLE001 - reported to the admin, as Java's CR_THROW_EXCEPTION
            result, remark = "CR_THROW_EXCEPTION", repr(exc)
        spent = int((time.monotonic() - begin) * 1000)
        body = consumer_info.direct_result(self.c.orderly, result, remark, spent)
        return response_to(req, R.SUCCESS, body=body)

    def status(self, req: RemotingCommand) -> RemotingCommand:
        """getConsumeStatus: this client's offsets of the topic's queues it owns."""
        topic = req.ext_fields.get("topic", "")
        rb = self.c.rebalance
        offsets = {mq: rb.offsets.table.get(mq, -1) for mq in rb.table if mq.topic == topic}
        return response_to(req, R.SUCCESS, body=consumer_info.consumer_status(offsets))
