"""The requests mqadmin's cluster, broker, topic and stats commands send beyond
``aiorocketmq.client.core.api``, and parsers for their answers: pure, no I/O (MQClientAPIImpl's
admin half, 4.9.8).

Parsers raise ValueError for a body they cannot read; the commands turn that into one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from aiorocketmq.client.api import request
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.admin import StatsRequestHeader
from aiorocketmq.remoting.protocol.headers.namesrv import (
    BrokerNameHeader,
    KVConfigHeader,
)
from aiorocketmq.remoting.protocol.route import ClusterInfo
from aiorocketmq.remoting.protocol.topic import Perm

ORDER_TOPIC_CONFIG: Final = "ORDER_TOPIC_CONFIG"  # NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG
TOPIC_PUT_NUMS: Final = "TOPIC_PUT_NUMS"  # BrokerStatsManager's stats names (315)
GROUP_GET_NUMS: Final = "GROUP_GET_NUMS"

# ------------------------------------------------------------------ name server


def put_kv(namespace: str, key: str, value: str) -> RemotingCommand:
    """PUT_KV_CONFIG (100), to every name server."""
    return request(C.PUT_KV_CONFIG, KVConfigHeader(namespace=namespace, key=key, value=value))


def get_kv(namespace: str, key: str) -> RemotingCommand:
    """GET_KV_CONFIG (101); the value comes back in the ``value`` ext field."""
    return request(C.GET_KV_CONFIG, KVConfigHeader(namespace=namespace, key=key))


def delete_kv(namespace: str, key: str) -> RemotingCommand:
    """DELETE_KV_CONFIG (102), to every name server."""
    return request(C.DELETE_KV_CONFIG, KVConfigHeader(namespace=namespace, key=key))


def wipe_write_perm(broker_name: str) -> RemotingCommand:
    """WIPE_WRITE_PERM_OF_BROKER (205); answer: ``wipeTopicCount``."""
    return request(C.WIPE_WRITE_PERM_OF_BROKER, BrokerNameHeader(broker_name=broker_name))


def add_write_perm(broker_name: str) -> RemotingCommand:
    """ADD_WRITE_PERM_OF_BROKER (327); answer: ``addTopicCount``."""
    return request(C.ADD_WRITE_PERM_OF_BROKER, BrokerNameHeader(broker_name=broker_name))


def merge_order_conf(old: str | None, conf: str) -> str:
    """createOrUpdateOrderConf for one broker: ``conf`` ("broker:queues") replaces that
    broker's entry of the old "a:8;b:8" value, the others stay."""
    entries: dict[str, str] = {}
    for item in (old or "").split(";"):
        if item.strip():
            entries[item.split(":")[0]] = item
    entries[conf.split(":")[0]] = conf
    return ";".join(entries.values())


# ------------------------------------------------------------------ brokers


def get_broker_config() -> RemotingCommand:
    """GET_BROKER_CONFIG (26): the body is ``key=value`` lines."""
    return request(C.GET_BROKER_CONFIG)


def update_broker_config(values: Mapping[str, str]) -> RemotingCommand:
    """UPDATE_BROKER_CONFIG (25): ``key=value`` lines (MixAll.properties2String)."""
    body = "".join(f"{k}={v}\n" for k, v in values.items())
    return request(C.UPDATE_BROKER_CONFIG, body=body.encode())


def parse_properties(body: bytes) -> dict[str, str]:
    """A ``key=value`` body (MixAll.string2Properties), keys sorted; # and ! lines are
    comments, the key ends at the first '=' or ':'."""
    out: dict[str, str] = {}
    for line in body.decode().splitlines():
        text = line.strip()
        if not text or text[0] in "#!":
            continue
        cut = min((i for i in (text.find("="), text.find(":")) if i >= 0), default=len(text))
        out[text[:cut].strip()] = text[cut + 1 :].strip()
    return dict(sorted(out.items()))


def view_stats(stats_name: str, stats_key: str) -> RemotingCommand:
    """VIEW_BROKER_STATS_DATA (315): BrokerStatsData."""
    return request(C.VIEW_BROKER_STATS_DATA, StatsRequestHeader(stats_name=stats_name,
                                                                stats_key=stats_key))  # fmt: skip


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue of a TopicStatsTable (TopicOffset)."""

    topic: str
    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id,
                "minOffset": self.min_offset, "maxOffset": self.max_offset,
                "lastUpdateTimestamp": self.last_update}  # fmt: skip


def _object_key(key: Any) -> dict[str, Any]:
    """A MessageQueue map key as fastjson.loads gives it (a FrozenKey, or JSON text)."""
    obj = dict(key) if isinstance(key, tuple) else fastjson.loads(str(key))
    if not isinstance(obj, dict):
        raise ValueError(f"not a MessageQueue key: {key!r}")
    return obj


def _table(body: bytes, what: str) -> dict[Any, Any]:
    obj = fastjson.loads(body)
    table = obj.get("offsetTable") if isinstance(obj, dict) else None
    if not isinstance(table, dict):
        raise ValueError(f"malformed {what}: no offsetTable")
    return table


def parse_topic_stats(body: bytes) -> list[QueueStats]:
    """TopicStatsTable's queues (object keys, as fastjson writes them)."""
    rows = []
    try:
        for key, value in _table(body, "TopicStatsTable").items():
            mq = _object_key(key)
            rows.append(QueueStats(str(mq["topic"]), str(mq["brokerName"]), int(mq["queueId"]),
                                   int(value["minOffset"]), int(value["maxOffset"]),
                                   int(value.get("lastUpdateTimestamp", 0))))  # fmt: skip
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"malformed TopicStatsTable: {exc!r}") from None
    return rows


@dataclass(frozen=True, slots=True)
class StatsFigures:
    """What statsAll takes from a BrokerStatsData: the last minute's TPS and the 24-hour count
    (StatsAllSubCommand.compute24HourSum: the day's sum, else the hour's, else the minute's)."""

    tps: float
    sum24: int


def parse_stats(body: bytes) -> StatsFigures:
    obj = fastjson.loads(body)
    try:
        sums = [int(obj[k]["sum"]) for k in ("statsDay", "statsHour", "statsMinute")]
        tps = float(obj["statsMinute"]["tps"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed BrokerStatsData: {exc!r}") from None
    return StatsFigures(tps, next((s for s in sums if s != 0), 0))


def parse_consume_diff(body: bytes) -> int:
    """ConsumeStats.computeTotalDiff: the sum over queues of broker minus consumer offset."""
    try:
        table = _table(body, "ConsumeStats")
        return sum(int(v["brokerOffset"]) - int(v["consumerOffset"]) for v in table.values())
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed ConsumeStats: {exc!r}") from None


# ------------------------------------------------------------------ routes and clusters


def cluster_of(info: ClusterInfo, broker_name: str) -> str | None:
    """The cluster whose broker names include ``broker_name`` (first in name order)."""
    found = [c for c, names in sorted(info.cluster_addr_table.items()) if broker_name in names]
    return found[0] if found else None


def broker_name_of(info: ClusterInfo, addr: str) -> str | None:
    """CommandUtil.fetchBrokerNameByAddr."""
    for name, broker in sorted(info.broker_addr_table.items()):
        if addr in broker.broker_addrs.values():
            return name
    return None


def perm_text(perm: int) -> str:
    """PermName.perm2String: "RW-", "R--", "RWX"."""
    return (("R" if Perm.readable(perm) else "-") + ("W" if Perm.writeable(perm) else "-")
            + ("X" if Perm.inherited(perm) else "-"))  # fmt: skip


def human_ms(ms: int) -> str:
    """UtilAll.timeMillisToHumanString2: local ``yyyy-MM-dd HH:mm:ss,SSS``."""
    when = datetime.fromtimestamp(ms / 1000)
    return when.strftime("%Y-%m-%d %H:%M:%S,") + f"{ms % 1000:03d}"
