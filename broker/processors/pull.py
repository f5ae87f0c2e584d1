"""PullProcessor: PULL_MESSAGE (11) -- checks, the store read, status -> code, long polling,
and the offset committed inside a pull (PullMessageProcessor, seed 003, protocol.md 5.2).

A plain function: it never waits. A pull that finds nothing and may be held is parked in
PullHold and answered later by ``wake``. A SQL92 pull (broker.filter) is served the messages
its expression matches; one woken by messages it does not match goes back to waiting, past
them, rather than being answered with nothing.
"""

from __future__ import annotations

from typing import Final

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.filter.compiled import FilterError, is_tag_type
from aiorocketmq.broker.filter.matching import pull_match
from aiorocketmq.broker.filter.memo import Memo
from aiorocketmq.broker.filter.registry import ConsumerFilters
from aiorocketmq.broker.longpoll import ParkedPull, PullHold
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.registry import ClientRegistry
from aiorocketmq.broker.store import GetResult, GetStatus
from aiorocketmq.broker.store.results import RecordMatch
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
        filters: ConsumerFilters,
        *,
        long_polling: bool,
        short_polling_ms: int,
    ) -> None:
        self.ctx = ctx
        self.registry = registry
        self.offsets = offsets
        self.hold = hold
        self.filters = filters
        self.long_polling = long_polling
        self.short_polling_ms = short_polling_ms

    def pull(self, req: RemotingCommand, ch: Channel) -> RemotingCommand | None:
        return self.process(req, ch, allow_suspend=True)

    def wake(self, parked: ParkedPull) -> None:
        """Re-run a parked pull, without the right to park again, and answer it."""
        resp = self.process(parked.cmd, parked.channel, False, parked)
        if resp is not None:
            parked.channel.respond(parked.cmd, resp)

    def process(
        self,
        req: RemotingCommand,
        ch: Channel,
        allow_suspend: bool,
        parked: ParkedPull | None = None,
    ) -> RemotingCommand | None:
        hdr = PullMessageRequestHeader.from_ext(req.ext_fields)
        try:
            codes, match = self._check(hdr, ch)
        except Refused as exc:
            return response_to(req, exc.code, exc.remark)
        offset = hdr.queue_offset if parked is None else parked.offset
        result = self.ctx.store.get(
            hdr.topic,
            hdr.queue_id,
            offset,
            min(hdr.max_msg_nums, PULL_MSG_NUMS_MAX),
            max_bytes=hdr.max_msg_bytes,
            tag_codes=codes,
            match=match,
            # ours: bulkPull=true (the Spark source) is capped in memory by bytes and
            # maxMsgNums, not by maxTransferCountOnMessageInMemory (docs/compatibility.md);
            # the bytes per pull stay the broker's, so no other client waits longer
            bulk=bool(hdr.bulk_pull) and self.ctx.config.enable_bulk_pull,
        )
        self.ctx.stats.on_lookup(result.status is GetStatus.FOUND)  # getFoundTps/getMissTps
        code = PULL_RESULT[result.status]
        if result.status in _NO_QUEUE and hdr.queue_offset == 0:
            code = R.PULL_NOT_FOUND
        if allow_suspend and hdr.sys_flag & COMMIT_OFFSET_FLAG and not self.ctx.config.is_slave:
            self.offsets.commit(hdr.consumer_group, hdr.topic, hdr.queue_id, hdr.commit_offset)
        if code is R.PULL_NOT_FOUND and allow_suspend and hdr.sys_flag & SUSPEND_FLAG:
            held = ParkedPull(req, ch, hdr.topic, hdr.queue_id, offset, codes)
            timeout = hdr.suspend_timeout_millis if self.long_polling else self.short_polling_ms
            if self.hold.park(held, max(0, timeout) / 1000):
                return None  # answered when a message arrives or the time is up
        elif parked is not None and self._wait_on(parked, result):
            return None  # woken by messages its filter skipped: it waits on, past them
        return self._answer(req, hdr, result, code)

    def _wait_on(self, parked: ParkedPull, result: GetResult) -> bool:
        """A parked filtered pull that matched nothing up to the queue's end keeps waiting,
        from past what it skipped, until its own deadline. ours: 4.9.8 re-runs the filter
        on the arrived message's properties before it wakes a held pull, and then answers
        PULL_RETRY_IMMEDIATELY if the read finds nothing, which the consumer asks again at
        once; here the skipped messages are not read twice, nor answered."""
        if parked.final or result.status is not GetStatus.NO_MATCHED_MESSAGE:
            return False
        if result.next_begin_offset < result.max_offset:
            return False  # the scan stopped at its bound: the consumer goes on at once
        return self.hold.repark(parked, result.next_begin_offset)

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

    def _check(
        self, hdr: PullMessageRequestHeader, ch: Channel
    ) -> tuple[frozenset[int] | None, RecordMatch | None]:
        """The 4.9.8 checks, in order; returns the tag codes to match (None = all) and the
        property match (None = none)."""
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
        if hdr.sys_flag & SUBSCRIPTION_FLAG:
            sub, compiled = self._header_subscription(hdr)
        else:
            sub, compiled = self._registered(hdr, group.consume_broadcast_enable)
        match = pull_match(
            hdr.topic, compiled, self.filters, support_retry=cfg.filter_support_retry
        )
        # isMatchedByConsumeQueue: tag codes for a TAG subscription only
        return (sub.codes if is_tag_type(sub.expression_type) else None), match

    def _property_filter_on(self, sub: SubscriptionData) -> None:
        if not self.ctx.config.enable_property_filter:
            raise Refused(
                R.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )

    def _header_subscription(
        self, hdr: PullMessageRequestHeader
    ) -> tuple[SubscriptionData, Memo | None]:
        """The subscription the pull carries (ali-ons, lite pull: FilterAPI.build), compiled."""
        kind = hdr.expression_type
        if not is_tag_type(kind) and not hdr.subscription:  # FilterAPI.build
            raise Refused(R.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
        try:
            sub = SubscriptionData.build(hdr.topic, hdr.subscription, kind, hdr.sub_version)
        except ValueError as exc:
            raise Refused(
                R.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
            ) from exc
        if is_tag_type(sub.expression_type):
            return sub, None
        self._property_filter_on(sub)
        try:
            compiled = self.filters.compiled.get(sub.expression_type, sub.sub_string)
        except FilterError as exc:
            # compat: 4.9.8's ConsumerFilterManager.build returns null here and the assert
            # after it is off: a malformed expression is served every message. Refused here
            # (docs/compatibility.md), with the parser's reason after 4.9.8's remark.
            raise Refused(
                R.SUBSCRIPTION_PARSE_FAILED, f"parse the consumer's subscription failed: {exc}"
            ) from exc
        return sub, compiled

    def _registered(
        self, hdr: PullMessageRequestHeader, broadcast_ok: bool
    ) -> tuple[SubscriptionData, Memo | None]:
        """The subscription and filter the group's heartbeats registered."""
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
        if is_tag_type(sub.expression_type):
            return sub, None
        data = self.filters.get(hdr.topic, hdr.consumer_group)
        if data is None:
            raise Refused(
                R.FILTER_DATA_NOT_EXIST,
                "The broker's consumer filter data is not exist!Your expression may be wrong!",
            )
        if data.client_version < hdr.sub_version:
            raise Refused(
                R.FILTER_DATA_NOT_LATEST, "the consumer's consumer filter data not latest"
            )
        self._property_filter_on(sub)
        return sub, data.compiled
