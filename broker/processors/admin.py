"""AdminProcessor: topics and broker configuration (AdminBrokerProcessor, the admin half).

UPDATE_AND_CREATE_TOPIC (17), GET_ALL_TOPIC_CONFIG (21), DELETE_TOPIC_IN_BROKER (215),
UPDATE_BROKER_CONFIG (25), GET_BROKER_CONFIG (26). Runtime info and stats: runtime.py.
"""

from __future__ import annotations

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.meta_stream import meta_mark
from aiorocketmq.broker.settings import BrokerSettings, SettingsRefused
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.bounds import topic_config_refusal
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.headers.admin import CreateTopicRequestHeader, TopicRequestHeader
from aiorocketmq.remoting.protocol.route import dumps
from aiorocketmq.remoting.protocol.topic import TopicConfig, check_topic_name, is_system_topic

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
        self.settings = BrokerSettings(ctx)

    def _topic_refusal(self, topic: str) -> str | None:
        cfg = self.ctx.config
        bad = check_topic_name(topic)
        if bad is not None:
            return bad
        # compat: TopicConfigManager adds msgTraceTopicName to the system topics when
        # traceTopicEnable (TopicValidator.addSystemTopic)
        trace = cfg.trace_topic_enable and topic == cfg.msg_trace_topic_name
        if trace or is_system_topic(topic, cfg.broker_cluster_name, cfg.broker_name):
            return f"The topic[{topic}] is conflict with system topic."
        return None

    async def update_and_create_topic(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        hdr = CreateTopicRequestHeader.from_ext(req.ext_fields)
        if self.ctx.config.is_slave:
            return error(req, SLAVE_REFUSES)
        refusal = self._topic_refusal(hdr.topic)
        if refusal is not None:
            return error(req, refusal)
        config = TopicConfig(
            topic_name=hdr.topic,
            read_queue_nums=hdr.read_queue_nums,
            write_queue_nums=hdr.write_queue_nums,
            perm=hdr.perm,
            topic_filter_type=hdr.topic_filter_type,
            topic_sys_flag=hdr.topic_sys_flag or 0,
            order=hdr.order,
        )
        # compat: 4.9.8 takes any int; queue counts, perm bits and filter types no client
        # or name server can carry are refused (remoting.protocol.bounds)
        refusal = topic_config_refusal(config)
        if refusal is not None:
            return self.ctx.refusals.refuse(req, ch, f"topic[{hdr.topic}]: {refusal}")
        await self.ctx.topics.put(config)  # persists and re-registers at once
        await self.ctx.topic_registered()  # compat: Java answers once the name servers know
        return ok(req)

    def get_all_topic_config(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        # ours: metaOffset, which records the copy holds (broker.meta_follow)
        return ok(req, meta_mark(self.ctx.store), dumps(self.ctx.topics.wrapper().to_json()))

    async def delete_topic(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        topic = TopicRequestHeader.from_ext(req.ext_fields).topic
        refusal = self._topic_refusal(topic)
        if refusal is not None:
            return error(req, refusal)
        await self.ctx.topics.delete(topic)
        self.ctx.store.delete_topic(topic)
        # compat: 4.9.8 drops the stats only with autoDeleteUnusedStats (off); we always do
        self.ctx.stats.remove_topic(topic)  # BrokerStatsManager.onTopicDeleted
        return ok(req)

    async def update_broker_config(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """AdminBrokerProcessor.updateBrokerConfig; the rules are broker.settings'. Success
        carries a remark only when a key needs a restart, was ignored or was not saved."""
        if not req.body:  # Java: no body, nothing to do
            return ok(req)
        try:
            outcome = await self.settings.update(req.body.decode())
        except SettingsRefused as exc:
            return error(req, exc.remark, exc.code)
        # compat: Java stores what it can parse and answers SUCCESS; a bad value (a word for
        # an int key, a value out of range) is refused here and nothing is applied
        except (ConfigError, UnicodeDecodeError) as exc:
            return error(req, str(exc))
        if "brokerPermission" in outcome.keys:
            await self.ctx.topic_registered()  # Java registers before it answers
        return response_to(req, ResponseCode.SUCCESS, outcome.remark)

    def get_broker_config(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        """AdminBrokerProcessor.getBrokerConfig: every key 25 takes, and the config version."""
        version = dumps(self.ctx.config_version.to_json()).decode()
        return ok(req, {"version": version}, self.settings.text().encode())
