"""PullProcessor: PULL_MESSAGE (11) -- checks, the store read, status -> code, long polling,
and the offset committed inside a pull (PullMessageProcessor, seed 003, protocol.md 5.2).

A plain function: it never waits. A pull that finds nothing and may be held is parked in
PullHold and answered later by ``wake``.
"""

from __future__ import annotations

from typing import Final

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.longpoll import ParkedPull, PullHold
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.registry import ClientRegistry
from aiorocketmq.broker.store import GetResult, GetStatus
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.bounds import PULL_MSG_NUMS_MAX, group_refusal
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.faq import SUGGEST_TODO
from aiorocketmq.remoting.protocol.headers.consumer import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from aiorocketmq.remoting.protocol.heartbeat import SubscriptionData
from aiorocketmq.remoting.protocol.topic import Perm

log = structlog.get_logger(__name__)

SUSPEND_FLAG: Final = 0x2
COMMIT_OFFSET_FLAG: Final = 0x1
SUBSCRIPTION_FLAG: Final = 0x4
MASTER_ID: Final = 0

# get status -> response code; the two "no queue" statuses depend on the offset asked for
PULL_RESULT: Final[dict[GetStatus, R]] = {
    GetStatus.FOUND: R.SUCCESS,
    GetStatus.NO_MATCHED_MESSAGE: R.PULL_RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: R.PULL_RETRY_IMMEDIATELY,
    GetStatus.NO_MESSAGE_IN_QUEUE: R.PULL_OFFSET_MOVED,
    GetStatus.NO_MATCHED_LOGIC_QUEUE: R.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_OVERFLOW_ONE: R.PULL_NOT_FOUND,
    GetStatus.OFFSET_FOUND_NULL: R.PULL_NOT_FOUND,
    GetStatus.OFFSET_TOO_SMALL: R.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_OVERFLOW_BADLY: R.PULL_OFFSET_MOVED,
}
_NO_QUEUE: Final = (GetStatus.NO_MESSAGE_IN_QUEUE, GetStatus.NO_MATCHED_LOGIC_QUEUE)


class Refused(Exception):
    def __init__(self, code: R, remark: str) -> None:
        super().__init__(remark)
        self.code, self.remark = code, remark


class PullProcessor:
    def __init__(
        self,
        ctx: BrokerContext,
        registry: ClientRegistry,
        offsets: ConsumerOffsets,
        hold: PullHold,
        *,
        long_polling: bool,
        short_polling_ms: int,
    ) -> None:
        self.ctx = ctx
        self.registry = registry
        self.offsets = offsets
        self.hold = hold
        self.long_polling = long_polling
        self.short_polling_ms = short_polling_ms

    def pull(self, req: RemotingCommand, ch: Channel) -> RemotingCommand | None:
        return self.process(req, ch, allow_suspend=True)

    def wake(self, parked: ParkedPull) -> None:
        """Re-run a parked pull, without the right to park again, and answer it."""
        parked.channel.respond(parked.cmd, self.process(parked.cmd, parked.channel, False))

    def process(
        self, req: RemotingCommand, ch: Channel, allow_suspend: bool
    ) -> RemotingCommand | None:
        hdr = PullMessageRequestHeader.from_ext(req.ext_fields)
        try:
            codes = self._check(hdr, ch)
        except Refused as exc:
            return response_to(req, exc.code, exc.remark)
        result = self.ctx.store.get(
            hdr.topic,
            hdr.queue_id,
            hdr.queue_offset,
            min(hdr.max_msg_nums, PULL_MSG_NUMS_MAX),
            max_bytes=hdr.max_msg_bytes,
            tag_codes=codes,
        )
        self.ctx.stats.on_lookup(result.status is GetStatus.FOUND)  # getFoundTps/getMissTps
        code = PULL_RESULT[result.status]
        if result.status in _NO_QUEUE and hdr.queue_offset == 0:
            code = R.PULL_NOT_FOUND
        if allow_suspend and hdr.sys_flag & COMMIT_OFFSET_FLAG and not self.ctx.config.is_slave:
            self.offsets.commit(hdr.consumer_group, hdr.topic, hdr.queue_id, hdr.commit_offset)
        if code is R.PULL_NOT_FOUND and allow_suspend and hdr.sys_flag & SUSPEND_FLAG:
            parked = ParkedPull(req, ch, hdr.topic, hdr.queue_id, hdr.queue_offset, codes)
            timeout = hdr.suspend_timeout_millis if self.long_polling else self.short_polling_ms
            if self.hold.park(parked, max(0, timeout) / 1000):
                return None  # answered when a message arrives or the time is up
        return self._answer(req, hdr, result, code)

    def _answer(
        self, req: RemotingCommand, hdr: PullMessageRequestHeader, result: GetResult, code: R
    ) -> RemotingCommand:
        ext = PullMessageResponseHeader(
            suggest_which_broker_id=self._suggest(hdr, result),
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        ).to_ext()
        body = b""
        if code is R.SUCCESS:
            body = result.body  # the records back to back, as the store copied them out
            # PullMessageProcessor: incGroupGetNums/Size ("topic@group"), incBrokerGetNums
            self.ctx.stats.on_get(hdr.topic, hdr.consumer_group, len(result.sizes), len(body))
        elif code is R.PULL_OFFSET_MOVED:
            log.warning(
                "pull_offset_moved", status=result.status.name, next=result.next_begin_offset
            )
        return response_to(req, code, result.status.name, ext, body)

    def _suggest(self, hdr: PullMessageRequestHeader, result: GetResult) -> int:
        """PullMessageProcessor: with slaveReadEnable, the group's whichBrokerWhenConsumeSlowly
        (a slave, 1 by default) when the data read has left memory, else its brokerId;
        without it, the master."""
        if not self.ctx.config.slave_read_enable:
            return MASTER_ID
        group = self.ctx.groups.groups.get(hdr.consumer_group)
        if group is None:
            return MASTER_ID
        return group.which_broker_when_consume_slowly if result.suggest_slave else group.broker_id

    def _check(self, hdr: PullMessageRequestHeader, ch: Channel) -> frozenset[int] | None:
        """The 4.9.8 checks, in order; returns the tag codes to match (None = all)."""
        cfg = self.ctx.config
        if not Perm.readable(cfg.broker_permission):
            raise Refused(
                R.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] pulling message is forbidden"
            )
        bad_group = group_refusal("consumerGroup", hdr.consumer_group)
        if bad_group is not None:  # before the lookup, which creates the group
            raise Refused(R.SYSTEM_ERROR, bad_group)
        group = self.ctx.groups.find(hdr.consumer_group)
        if group is None:
            raise Refused(
                R.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{hdr.consumer_group}] does not exist, {SUGGEST_TODO}",
            )
        if not group.consume_enable:
            raise Refused(
                R.NO_PERMISSION, f"subscription group no permission, {hdr.consumer_group}"
            )
        topic = self.ctx.topics.get(hdr.topic)
        if topic is None:
            raise Refused(
                R.TOPIC_NOT_EXIST,
                f"topic[{hdr.topic}] not exist, apply first please! {SUGGEST_TODO}",
            )
        if not Perm.readable(topic.perm):
            raise Refused(R.NO_PERMISSION, f"the topic[{hdr.topic}] pulling message is forbidden")
        if not 0 <= hdr.queue_id < topic.read_queue_nums:
            raise Refused(
                R.SYSTEM_ERROR,
                f"queueId[{hdr.queue_id}] is illegal, topic:[{hdr.topic}] "
                f"topicConfig.readQueueNums:[{topic.read_queue_nums}] consumer:[{ch.peer}]",
            )
        sub = self._subscription(hdr, group.consume_broadcast_enable)
        if sub.expression_type != "TAG":
            raise Refused(
                R.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )
        return sub.codes

    def _subscription(self, hdr: PullMessageRequestHeader, broadcast_ok: bool) -> SubscriptionData:
        if hdr.sys_flag & SUBSCRIPTION_FLAG:
            try:
                return SubscriptionData.build(
                    hdr.topic, hdr.subscription, hdr.expression_type, hdr.sub_version
                )
            except ValueError as exc:
                raise Refused(
                    R.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
                ) from exc
        info = self.registry.consumers.get(hdr.consumer_group)
        if info is None:
            raise Refused(
                R.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist" + SUGGEST_TODO
            )
        if not broadcast_ok and info.message_model == "BROADCASTING":
            raise Refused(
                R.NO_PERMISSION,
                f"the consumer group[{hdr.consumer_group}] can not consume by broadcast way",
            )
        sub = info.subscriptions.get(hdr.topic)
        if sub is None:
            raise Refused(
                R.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist" + SUGGEST_TODO
            )
        if sub.sub_version < hdr.sub_version:
            raise Refused(R.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        return sub
