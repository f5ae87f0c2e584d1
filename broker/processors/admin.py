"""AdminProcessor: topics and broker configuration (AdminBrokerProcessor, the admin half).

UPDATE_AND_CREATE_TOPIC (17), GET_ALL_TOPIC_CONFIG (21), DELETE_TOPIC_IN_BROKER (215),
UPDATE_BROKER_CONFIG (25), GET_BROKER_CONFIG (26). Runtime info and stats: runtime.py.
"""

from __future__ import annotations

import time

import structlog

from broker.config import BrokerConfig
from broker.context import BrokerContext
from remoting.channel import Channel
from remoting.config import build, dump, parse_properties
from remoting.errors import ConfigError
from remoting.protocol.codes import ResponseCode
from remoting.protocol.command import RemotingCommand, response_to
from remoting.protocol.headers.admin import (
    CreateTopicRequestHeader,
    TopicRequestHeader,
)
from remoting.protocol.route import dumps
from remoting.protocol.topic import TopicConfig, check_topic_name, is_system_topic

log = structlog.get_logger(__name__)

SLAVE_REFUSES = (
    "Can't modify topic or subscription group from slave broker, "
    "please modify it from master broker."
)


def ok(
    req: RemotingCommand, ext: dict[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    return response_to(req, ResponseCode.SUCCESS, ext_fields=ext, body=body)


def error(
    req: RemotingCommand, remark: str, code: int = ResponseCode.SYSTEM_ERROR
) -> RemotingCommand:
    return response_to(req, code, remark)


class AdminProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def _topic_refusal(self, topic: str) -> str | None:
        cfg = self.ctx.config
        bad = check_topic_name(topic)
        if bad is not None:
            return bad
        if is_system_topic(topic, cfg.broker_cluster_name, cfg.broker_name):
            return f"The topic[{topic}] is conflict with system topic."
        return None

    async def update_and_create_topic(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = CreateTopicRequestHeader.from_ext(req.ext_fields)
        if self.ctx.config.is_slave:
            return error(req, SLAVE_REFUSES)
        refusal = self._topic_refusal(hdr.topic)
        if refusal is not None:
            return error(req, refusal)
        if hdr.read_queue_nums < 0 or hdr.write_queue_nums < 0 or not 0 <= hdr.perm <= 15:
            return error(req, f"invalid queue numbers or perm for topic[{hdr.topic}]")
        config = TopicConfig(
            topic_name=hdr.topic,
            read_queue_nums=hdr.read_queue_nums,
            write_queue_nums=hdr.write_queue_nums,
            perm=hdr.perm,
            topic_filter_type=hdr.topic_filter_type,
            topic_sys_flag=hdr.topic_sys_flag or 0,
            order=hdr.order,
        )
        await self.ctx.topics.put(config)  # persists and re-registers at once
        await self.ctx.topic_registered()  # compat: Java answers once the name servers know
        return ok(req)

    def get_all_topic_config(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        return ok(req, body=dumps(self.ctx.topics.wrapper().to_json()))

    async def delete_topic(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        topic = TopicRequestHeader.from_ext(req.ext_fields).topic
        refusal = self._topic_refusal(topic)
        if refusal is not None:
            return error(req, refusal)
        await self.ctx.topics.delete(topic)
        self.ctx.store.delete_topic(topic)
        self.ctx.stats.remove_topic(topic)  # BrokerStatsManager.onTopicDeleted: no stale entry
        return ok(req)

    def update_broker_config(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """Apply BrokerConfig keys live (store and server keys need a restart)."""
        try:
            values = parse_properties(req.body.decode(), "UPDATE_BROKER_CONFIG")
            current = parse_properties(dump(self.ctx.config), "current")
            unknown = sorted(set(values) - set(current))
            if unknown:
                return error(req, f"cannot change at runtime: {', '.join(unknown)}")
            self.ctx.config = build(BrokerConfig, {**current, **values})
        except (ConfigError, UnicodeDecodeError) as exc:
            return error(req, str(exc))
        self.ctx.config_version = self.ctx.config_version.next(time.time_ns() // 1_000_000)
        log.info("broker_config_updated", keys=sorted(values))
        for listener in self.ctx.on_config_change:
            listener()
        return ok(req)

    def get_broker_config(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        text = dump(self.ctx.config, self.ctx.store_config, self.ctx.server_config)
        version = dumps(self.ctx.config_version.to_json()).decode()
        return ok(req, {"version": version}, text.encode())
