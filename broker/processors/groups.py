"""GroupAdminProcessor: consumer groups as operators see them -- subscription group config
(200, 201, 207), connections (203, 204), consume stats (208), reset by time (222 -> 220)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.meta_stream import meta_mark
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.registry import ClientInfo, ClientRegistry
from aiorocketmq.broker.stats import SEPARATOR
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol import fastjson, text
from aiorocketmq.remoting.protocol.bounds import group_config_refusal, group_refusal
from aiorocketmq.remoting.protocol.codes import LanguageCode, MQVersion, RequestCode, version_desc
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.headers.consumer import (
    ConsumerGroupHeader,
    ConsumeStatsRequestHeader,
    DeleteGroupRequestHeader,
    ProducerGroupHeader,
    ResetOffsetRequestHeader,
)
from aiorocketmq.remoting.protocol.route import dumps

log = structlog.get_logger(__name__)

Send = Callable[[Channel, RemotingCommand], None]


def ok(req: RemotingCommand, body: bytes = b"") -> RemotingCommand:
    return response_to(req, R.SUCCESS, body=body)


class GroupAdminProcessor:
    def __init__(
        self,
        ctx: BrokerContext,
        registry: ClientRegistry,
        offsets: ConsumerOffsets,
        send_oneway: Send,
    ) -> None:
        self.ctx = ctx
        self.registry = registry
        self.offsets = offsets
        self._send_oneway = send_oneway

    async def update_group(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        try:
            config = SubscriptionGroupConfig.from_json(text.loads(req.body))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return response_to(req, R.SYSTEM_ERROR, f"bad SubscriptionGroupConfig: {exc}")
        # compat: 4.9.8 stores any SubscriptionGroupConfig; one it cannot carry (retryQueueNums
        # 2**40 made a retry topic no name server registers: N1) is refused, the field named
        refusal = group_config_refusal(config)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, f"bad SubscriptionGroupConfig: {refusal}")
        await self.ctx.groups.put(config)
        return ok(req)

    def all_groups(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        # ours: metaOffset, which records the copy holds (broker.meta_follow)
        body = dumps(self.ctx.groups.to_json())
        return response_to(req, R.SUCCESS, ext_fields=meta_mark(self.ctx.store), body=body)

    async def delete_group(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = DeleteGroupRequestHeader.from_ext(req.ext_fields)
        await self.ctx.groups.delete(hdr.group_name)
        if hdr.remove_offset:
            self.offsets.remove_group(hdr.group_name)
        # compat: 4.9.8 drops a deleted group's stats only with autoDeleteUnusedStats (off by
        # default); we always do, so stats memory follows the live groups
        self.ctx.stats.remove_group(hdr.group_name)
        return ok(req)

    def consumer_connections(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        name = ConsumerGroupHeader.from_ext(req.ext_fields).consumer_group
        refusal = group_refusal("consumerGroup", name)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        group = self.registry.consumers.get(name)
        if group is None or not group.clients:
            return response_to(req, R.CONSUMER_NOT_ONLINE, f"the consumer group[{name}] not online")
        body = {
            "connectionSet": [_connection(c) for c in group.clients.values()],
            "consumeFromWhere": group.consume_from_where,
            "consumeType": group.consume_type,
            "messageModel": group.message_model,
            "subscriptionTable": {t: s.to_json() for t, s in group.subscriptions.items()},
        }
        return ok(req, dumps(body))

    def producer_connections(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        name = ProducerGroupHeader.from_ext(req.ext_fields).producer_group
        refusal = group_refusal("producerGroup", name)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        members = self.registry.producers.get(name)
        if not members:
            return response_to(req, R.SYSTEM_ERROR, f"the producer group[{name}] not exist")
        return ok(req, dumps({"connectionSet": [_connection(c) for c in members.values()]}))

    def consume_stats(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """ConsumeStats: per queue, the broker's max offset, the group's offset and the store
        time of the last message it consumed (MessageQueue object keys, as Java writes)."""
        hdr = ConsumeStatsRequestHeader.from_ext(req.ext_fields)
        group = hdr.consumer_group
        refusal = group_refusal("consumerGroup", group)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        topics = [hdr.topic] if hdr.topic else self.offsets.topics_of(group)
        online = self.registry.consumers.get(group)
        subscribed = online.subscriptions if online is not None else {}
        store, rows, tps = self.ctx.store, [], 0.0
        for topic in topics:
            config = self.ctx.topics.get(topic)
            if config is None or (subscribed and topic not in subscribed):
                continue  # AdminBrokerProcessor.getConsumeStats: an online group's other topics
            minute = self.ctx.stats.stats_data("GROUP_GET_NUMS", f"{topic}{SEPARATOR}{group}")
            tps += float(minute["statsMinute"]["tps"]) if minute is not None else 0.0
            for qid in range(config.read_queue_nums):
                done = max(0, self.offsets.query(hdr.consumer_group, topic, qid))
                last = store.store_time(topic, qid, done - 1) if done > 0 else 0
                mq = {"brokerName": self.ctx.config.broker_name, "queueId": qid, "topic": topic}
                rows.append(
                    (
                        mq,
                        {
                            "brokerOffset": store.max_offset(topic, qid),
                            "consumerOffset": done,
                            "lastTimestamp": max(last, 0),
                        },
                    )
                )
        table = fastjson.dumps_object_keyed(rows)
        body = f'{{"consumeTps":{json.dumps(tps)},"offsetTable":{table}}}'  # tpsGroupGetNums
        return ok(req, body.encode())

    def reset_offset(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """Broker2Client.resetOffset: each queue's offset at the time, kept if forced or below
        the group's offset, told to every online consumer (220) -- as ResetOffsetBodyForC when
        the admin request comes from C++ (AdminBrokerProcessor.resetOffset's isC)."""
        hdr = ResetOffsetRequestHeader.from_ext(req.ext_fields)
        refusal = group_refusal("group", hdr.group)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, refusal)
        config = self.ctx.topics.get(hdr.topic)
        if config is None:
            return response_to(req, R.SYSTEM_ERROR, "[reset-offset] reset offset failed, "
                               f"no topic in this broker. topic={hdr.topic}")  # fmt: skip
        offsets = self._reset_offsets(hdr, config.write_queue_nums)
        if offsets is None:  # a queue the group has no offset on fails the whole request
            return response_to(req, R.SYSTEM_ERROR, f"THe consumer group <{hdr.group}> not exist")
        group = self.registry.consumers.get(hdr.group)
        if group is None or not group.clients:
            return response_to(
                req,
                R.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {hdr.group} "
                f"Topic: {hdr.topic} Timestamp: {hdr.timestamp}",
            )
        # compat: Java checks each client's version as it sends, so the clients before an old
        # one have already been told; we refuse before telling anyone
        old = min(c.version for c in group.clients.values())
        if old < MQVersion.V3_0_7_SNAPSHOT:
            return response_to(req, R.SYSTEM_ERROR, "the client does not support this "
                               f"feature. version={version_desc(old)}")  # fmt: skip
        rows = [({"brokerName": self.ctx.config.broker_name, "queueId": qid, "topic": hdr.topic},
                 offset) for qid, offset in enumerate(offsets)]  # fmt: skip
        body = ('{"offsetTable":' + fastjson.dumps_object_keyed(rows) + "}").encode()
        notice_header = ResetOffsetRequestHeader(
            topic=hdr.topic, group=hdr.group, timestamp=hdr.timestamp
        )
        notice = RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            notice_header.to_ext(),
            _body_for_c(rows) if req.language == LanguageCode.CPP else body,
            oneway=True,
        )
        for channel in group.clients:
            if isinstance(channel, Channel):
                self._send_oneway(channel, notice)
        log.info("offsets_reset", group=hdr.group, topic=hdr.topic, consumers=len(group.clients))
        return ok(req, body)

    def _reset_offsets(self, hdr: ResetOffsetRequestHeader, queues: int) -> list[int] | None:
        """The offset each queue resets to; None if the group has no offset on one."""
        store, result = self.ctx.store, []
        for qid in range(queues):
            current = self.offsets.query(hdr.group, hdr.topic, qid)
            if current == -1:
                return None
            if hdr.timestamp == -1:
                target = store.max_offset(hdr.topic, qid)
            else:  # compat: the 5.x rule of SEARCH_OFFSET_BY_TIMESTAMP (fidelity D7)
                target = store.offset_by_time(hdr.topic, qid, hdr.timestamp)
            target = max(target, 0)
            result.append(target if hdr.is_force or target < current else current)
        return result


def _body_for_c(rows: list[tuple[dict[str, Any], int]]) -> bytes:
    """ResetOffsetBodyForC: a list of MessageQueueForC, fields in fastjson's order."""
    return dumps({"offsetTable": [{**mq, "offset": offset} for mq, offset in rows]})


def _connection(c: ClientInfo) -> dict[str, object]:
    return {
        "clientAddr": c.addr,
        "clientId": c.client_id,
        "language": c.language,
        "version": c.version,
    }
