"""The requests both halves of mqadmin send (its group and its cluster commands), built once
(DefaultMQAdminExtImpl's calls), and the one broker address choice they share."""

from __future__ import annotations

import random

from aiorocketmq.client import api
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.admin import TopicRequestHeader
from aiorocketmq.remoting.protocol.headers.consumer import ConsumeStatsRequestHeader
from aiorocketmq.remoting.protocol.headers.namesrv import TopicHeader
from aiorocketmq.remoting.protocol.route import MASTER_ID, BrokerData


def select_addr(broker: BrokerData) -> str | None:
    """BrokerData.selectBrokerAddr: the master, else a slave picked at random."""
    if MASTER_ID in broker.broker_addrs:
        return broker.broker_addrs[MASTER_ID]
    addrs = list(broker.broker_addrs.values())
    return random.choice(addrs) if addrs else None


def delete_topic_in_broker(topic: str) -> RemotingCommand:
    """DELETE_TOPIC_IN_BROKER (215), to each master."""
    return api.request(C.DELETE_TOPIC_IN_BROKER, TopicRequestHeader(topic=topic))


def delete_topic_in_namesrv(topic: str, cluster: str | None) -> RemotingCommand:
    """DELETE_TOPIC_IN_NAMESRV (216), with the cluster as 4.9.8's deleteTopic sends it."""
    return api.request(C.DELETE_TOPIC_IN_NAMESRV, TopicHeader(topic=topic, cluster_name=cluster))


def topic_stats(topic: str) -> RemotingCommand:
    """GET_TOPIC_STATS_INFO (202): TopicStatsTable."""
    return api.request(C.GET_TOPIC_STATS_INFO, TopicRequestHeader(topic=topic))


def consume_by_who(topic: str) -> RemotingCommand:
    """QUERY_TOPIC_CONSUME_BY_WHO (300): GroupList."""
    return api.request(C.QUERY_TOPIC_CONSUME_BY_WHO, TopicRequestHeader(topic=topic))


def consume_stats(group: str, topic: str | None = None) -> RemotingCommand:
    """GET_CONSUME_STATS (208): ConsumeStats of ``group`` on ``topic``, or on every topic of
    the group when ``topic`` is None."""
    header = ConsumeStatsRequestHeader(consumer_group=group, topic=topic)
    return api.request(C.GET_CONSUME_STATS, header)


def parse_group_list(body: bytes) -> list[str]:
    """GroupList ``groupList``, sorted (none in an empty or odd answer)."""
    obj = fastjson.loads(body) if body else {}
    groups = obj.get("groupList") if isinstance(obj, dict) else None
    return sorted(str(g) for g in groups or [])
