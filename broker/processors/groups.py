"""GroupAdminProcessor: consumer groups as operators see them -- subscription group config
(200, 201, 207), connections (203, 204), consume stats (208), reset by time (222 -> 220)."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from broker.context import BrokerContext
from broker.offsets import ConsumerOffsets
from broker.registry import ClientInfo, ClientRegistry
from remoting.channel import Channel
from remoting.protocol import fastjson, text
from remoting.protocol.codes import RequestCode
from remoting.protocol.codes import ResponseCode as R
from remoting.protocol.command import RemotingCommand, response_to
from remoting.protocol.group import SubscriptionGroupConfig
from remoting.protocol.headers.consumer import (
    ConsumerGroupHeader,
    ConsumeStatsRequestHeader,
    DeleteGroupRequestHeader,
    ProducerGroupHeader,
    ResetOffsetRequestHeader,
)
from remoting.protocol.route import dumps

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
        await self.ctx.groups.put(config)
        return ok(req)

    def all_groups(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        return ok(req, dumps(self.ctx.groups.to_json()))

    async def delete_group(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = DeleteGroupRequestHeader.from_ext(req.ext_fields)
        await self.ctx.groups.delete(hdr.group_name)
        if hdr.remove_offset:
            self.offsets.remove_group(hdr.group_name)
        return ok(req)

    def consumer_connections(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        name = ConsumerGroupHeader.from_ext(req.ext_fields).consumer_group
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
        members = self.registry.producers.get(name)
        if not members:
            return response_to(req, R.SYSTEM_ERROR, f"the producer group[{name}] not exist")
        return ok(req, dumps({"connectionSet": [_connection(c) for c in members.values()]}))

    def consume_stats(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """ConsumeStats: per queue, the broker's max offset, the group's offset and the store
        time of the last message it consumed (MessageQueue object keys, as Java writes)."""
        hdr = ConsumeStatsRequestHeader.from_ext(req.ext_fields)
        topics = [hdr.topic] if hdr.topic else self.offsets.topics_of(hdr.consumer_group)
        store, rows = self.ctx.store, []
        for topic in topics:
            config = self.ctx.topics.get(topic)
            for qid in range(config.read_queue_nums if config else 0):
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
        body = '{"consumeTps":0.0,"offsetTable":' + fastjson.dumps_object_keyed(rows) + "}"
        return ok(req, body.encode())

    def reset_offset(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """protocol.md 5.8: compute each queue's offset at the time, keep it if forced or below
        the group's offset, tell every online consumer (220); 206 if none is online."""
        hdr = ResetOffsetRequestHeader.from_ext(req.ext_fields)
        config = self.ctx.topics.get(hdr.topic)
        if config is None:
            return response_to(req, R.TOPIC_NOT_EXIST, f"topic[{hdr.topic}] not exist")
        rows = []
        for qid in range(config.write_queue_nums):
            target = (
                self.ctx.store.max_offset(hdr.topic, qid)
                if hdr.timestamp < 0
                else self.ctx.store.offset_by_time(hdr.topic, qid, hdr.timestamp)
            )
            current = self.offsets.query(hdr.group, hdr.topic, qid)
            offset = target if hdr.is_force or current < 0 or target < current else current
            rows.append(
                (
                    {"brokerName": self.ctx.config.broker_name, "queueId": qid, "topic": hdr.topic},
                    offset,
                )
            )
        body = ('{"offsetTable":' + fastjson.dumps_object_keyed(rows) + "}").encode()
        channels = self.registry.consumer_channels(hdr.group)
        if not channels:
            return response_to(
                req,
                R.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {hdr.group} "
                f"Topic: {hdr.topic} Timestamp: {hdr.timestamp}",
            )
        notice = RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET, hdr.to_ext(), body, oneway=True
        )
        for channel in channels:
            if isinstance(channel, Channel):
                self._send_oneway(channel, notice)
        log.info("offsets_reset", group=hdr.group, topic=hdr.topic, consumers=len(channels))
        return ok(req, body)


def _connection(c: ClientInfo) -> dict[str, object]:
    return {
        "clientAddr": c.addr,
        "clientId": c.client_id,
        "language": c.language,
        "version": c.version,
    }
