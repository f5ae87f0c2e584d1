"""The requests and bodies of mqadmin's group, offset and message commands beyond client.api
(what 4.9.8's MQClientAPIImpl builds for DefaultMQAdminExtImpl), plus their display helpers.

Builders return a RemotingCommand; parsers take a response body (fastjson's MessageQueue object
keys included) and raise ValueError when it is malformed. No I/O here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aiorocketmq.client import api
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import LanguageCode
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.headers.admin import (
    QueryMessageRequestHeader,
)
from aiorocketmq.remoting.protocol.headers.consumer import (
    ConsumeMessageDirectlyRequestHeader,
    ConsumerGroupHeader,
    ConsumerRunningInfoRequestHeader,
    DeleteGroupRequestHeader,
    ProducerGroupHeader,
    ResetOffsetRequestHeader,
)
from aiorocketmq.remoting.protocol.heartbeat import (
    CONSUME_TYPES,
    MESSAGE_MODELS,
    SubscriptionData,
    enum_name,
)
from aiorocketmq.remoting.protocol.heartbeat import MessageQueue as MQ
from aiorocketmq.remoting.protocol.route import dumps

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"  # MixAll.UNIQUE_MSG_QUERY_FLAG
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"  # MixAll.TOOLS_CONSUMER_GROUP
DATE_FORMAT = "%Y-%m-%d#%H:%M:%S:%f"  # UtilAll.YYYY_MM_DD_HH_MM_SS_SSS, yyyy-MM-dd#HH:mm:ss:SSS
LONG_MAX = 0x7FFFFFFFFFFFFFFF


# ------------------------------------------------------------------ names and times


def _version_names() -> tuple[str, ...]:
    """MQVersion.Version's names by ordinal (4.9.8: V3_0_0_SNAPSHOT .. V5_9_9)."""
    out = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{i}" for i in range(1, 6))]
    for i in range(6, 10):
        out += [f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}"]
    out.append("V3_0_0_FINAL")

    def minor(major: int, m: int, patches: range) -> None:
        for p in patches:
            out.extend((f"V{major}_{m}_{p}_SNAPSHOT", f"V{major}_{m}_{p}"))

    minor(3, 0, range(1, 16))
    minor(3, 1, range(10))
    minor(3, 2, range(10))
    for m in range(3, 10):
        minor(3, m, range(1, 10))
    for major in (4, 5):
        for m in range(10):
            minor(major, m, range(10))
    return tuple(out)


VERSION_NAMES = _version_names()


def version_name(ordinal: int) -> str:
    """MQVersion.getVersionDesc: past the last name, the last name."""
    return VERSION_NAMES[min(max(ordinal, 0), len(VERSION_NAMES) - 1)]


def parse_timestamp(text: str, *, allow_now: bool = False) -> int:
    """ms since the epoch from "now" (-1, the queues' max offsets; only with ``allow_now``),
    a number of ms, or yyyy-MM-dd#HH:mm:ss:SSS in local time (ResetOffsetByTimeCommand)."""
    text = text.strip()
    if allow_now and text == "now":
        return -1
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.strptime(text, DATE_FORMAT).timestamp() * 1000)
    except ValueError:
        raise ValueError(
            f"bad timestamp {text!r}: give {'now, ' if allow_now else ''}milliseconds since "
            "the epoch or yyyy-MM-dd#HH:mm:ss:SSS"
        ) from None


def format_time(ms: int, *, millis: bool = False) -> str:
    """yyyy-MM-dd HH:mm:ss (UtilAll.formatDate) or with ",SSS" (timeMillisToHumanString2)."""
    moment = time.localtime(ms / 1000)
    text = time.strftime("%Y-%m-%d %H:%M:%S", moment)
    return f"{text},{ms % 1000:03d}" if millis else text


# ------------------------------------------------------------------ requests


def create_group(config: SubscriptionGroupConfig) -> RemotingCommand:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): the config as the body."""
    return api.request(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, dumps(config.to_json()))


def delete_group(group: str, remove_offset: bool) -> RemotingCommand:
    header = DeleteGroupRequestHeader(group_name=group, remove_offset=remove_offset)
    return api.request(C.DELETE_SUBSCRIPTIONGROUP, header)


def consumer_connection(group: str) -> RemotingCommand:
    header = ConsumerGroupHeader(consumer_group=group)
    return api.request(C.GET_CONSUMER_CONNECTION_LIST, header)


def producer_connection(group: str) -> RemotingCommand:
    header = ProducerGroupHeader(producer_group=group)
    return api.request(C.GET_PRODUCER_CONNECTION_LIST, header)


def running_info(group: str, client_id: str) -> RemotingCommand:
    """GET_CONSUMER_RUNNING_INFO (307), forwarded by the broker to the client."""
    header = ConsumerRunningInfoRequestHeader(
        consumer_group=group, client_id=client_id, jstack_enable=False
    )
    return api.request(C.GET_CONSUMER_RUNNING_INFO, header)


def consume_directly(group: str, client_id: str, offset_msg_id: str) -> RemotingCommand:
    """CONSUME_MESSAGE_DIRECTLY (309), to the message's store host."""
    header = ConsumeMessageDirectlyRequestHeader(
        consumer_group=group, client_id=client_id, msg_id=offset_msg_id
    )
    return api.request(C.CONSUME_MESSAGE_DIRECTLY, header)


def reset_offset(
    topic: str, group: str, timestamp: int, force: bool, cplus: bool = False
) -> RemotingCommand:
    """INVOKE_BROKER_TO_RESET_OFFSET (222); ``cplus`` sends it as a C++ client
    (language CPP), so the broker tells the consumers in ResetOffsetBodyForC."""
    header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=force)
    req = api.request(C.INVOKE_BROKER_TO_RESET_OFFSET, header)
    if cplus:
        req.language = LanguageCode.CPP
    return req


def queue_offset(code: int, mq: MQ, timestamp: int | None = None) -> RemotingCommand:
    """GET_MAX_OFFSET (30) or SEARCH_OFFSET_BY_TIMESTAMP (29) with 4.9.8's ``bname``."""
    ext = {"topic": mq.topic, "queueId": str(mq.queue_id), "bname": mq.broker_name}
    if timestamp is not None:
        ext["timestamp"] = str(timestamp)
    return api.request(code, ext)


def update_offset(group: str, mq: MQ, offset: int) -> RemotingCommand:
    """UPDATE_CONSUMER_OFFSET (15) with 4.9.8's ``bname``."""
    req = api.update_consumer_offset(group, mq.topic, mq.queue_id, offset)
    req.ext_fields["bname"] = mq.broker_name
    return req


def query_message(
    topic: str, key: str, max_num: int, begin: int, end: int, *, unique: bool
) -> RemotingCommand:
    """QUERY_MESSAGE (12); ``unique``: the key is a UNIQ_KEY (the broker allows 32 results)."""
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=max_num, begin_timestamp=begin, end_timestamp=end
    )
    req = api.request(C.QUERY_MESSAGE, header)
    req.ext_fields[UNIQUE_KEY_QUERY] = "true" if unique else "false"
    return req


# ------------------------------------------------------------------ bodies


def _object(body: bytes, what: str) -> dict[Any, Any]:
    obj = fastjson.loads(body) if body else {}
    if not isinstance(obj, dict):
        raise ValueError(f"{what} is not a JSON object")
    return obj


def _mq(key: Any) -> MQ:
    return MQ.from_json(dict(key) if isinstance(key, tuple) else fastjson.loads(str(key)))


@dataclass(frozen=True, slots=True, order=True)
class OffsetRow:
    """One queue of a ConsumeStats: OffsetWrapper (ordered by queue)."""

    mq: MQ
    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def diff(self) -> int:
        return self.broker_offset - self.consumer_offset


def parse_consume_stats(body: bytes) -> tuple[float, list[OffsetRow]]:
    """ConsumeStats: (consumeTps, its queues)."""
    obj = _object(body, "ConsumeStats")
    rows = [
        OffsetRow(
            _mq(k),
            int(v.get("brokerOffset", 0)),
            int(v.get("consumerOffset", 0)),
            int(v.get("lastTimestamp", 0)),
        )
        for k, v in (obj.get("offsetTable") or {}).items()
    ]
    return float(obj.get("consumeTps") or 0.0), rows


@dataclass(frozen=True, slots=True)
class Connection:
    client_id: str
    client_addr: str
    language: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "clientAddr": self.client_addr,
            "language": self.language,
            "version": version_name(self.version),
        }


@dataclass(slots=True)
class ConsumerConnection:
    connections: list[Connection]
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = ""

    @property
    def min_version(self) -> int:
        """ConsumerConnection.computeMinVersion."""
        return min((c.version for c in self.connections), default=0x7FFFFFFF)


def _connections(obj: dict[Any, Any]) -> list[Connection]:
    return sorted(
        (
            Connection(
                str(c.get("clientId", "")),
                str(c.get("clientAddr", "")),
                str(c.get("language", "")),
                int(c.get("version", 0)),
            )
            for c in obj.get("connectionSet") or []
        ),
        key=lambda c: c.client_id,
    )


def parse_consumer_connection(body: bytes) -> ConsumerConnection:
    obj = _object(body, "ConsumerConnection")
    subs = {
        str(t): SubscriptionData.from_json(s)
        for t, s in (obj.get("subscriptionTable") or {}).items()
    }
    return ConsumerConnection(
        connections=_connections(obj),
        subscriptions=subs,
        consume_type=enum_name(obj.get("consumeType"), CONSUME_TYPES, "CONSUME_PASSIVELY"),
        message_model=enum_name(obj.get("messageModel"), MESSAGE_MODELS, "CLUSTERING"),
        consume_from_where=str(obj.get("consumeFromWhere") or ""),
    )


def parse_producer_connection(body: bytes) -> list[Connection]:
    return _connections(_object(body, "ProducerConnection"))


def parse_running_queues(body: bytes) -> list[MQ]:
    """ConsumerRunningInfo's mqTable keys: the queues the client holds."""
    return sorted(_mq(k) for k in (_object(body, "ConsumerRunningInfo").get("mqTable") or {}))


def parse_offset_table(body: bytes) -> dict[MQ, int]:
    """ResetOffsetBody ``offsetTable``."""
    table = _object(body, "ResetOffsetBody").get("offsetTable") or {}
    return {_mq(k): int(v) for k, v in table.items()}


def parse_topic_stats(body: bytes) -> dict[MQ, tuple[int, int]]:
    """TopicStatsTable: each queue's (minOffset, maxOffset)."""
    table = _object(body, "TopicStatsTable").get("offsetTable") or {}
    return {
        _mq(k): (int(v.get("minOffset", 0)), int(v.get("maxOffset", 0))) for k, v in table.items()
    }


def parse_direct_result(body: bytes) -> dict[str, Any]:
    """ConsumeMessageDirectlyResult as plain JSON."""
    obj = _object(body, "ConsumeMessageDirectlyResult")
    return {
        "order": bool(obj.get("order", False)),
        "autoCommit": bool(obj.get("autoCommit", True)),
        "consumeResult": str(obj.get("consumeResult") or ""),
        "remark": str(obj.get("remark") or ""),
        "spentTimeMills": int(obj.get("spentTimeMills") or 0),
    }
