"""Route bodies: TopicRouteData, QueueData, BrokerData, ClusterInfo, TopicList, KVTable
(protocol.md 6.1, 6.2).

We emit standard JSON (quoted keys, sorted) and parse leniently: ``brokerAddrs`` keys may be
quoted or numbers, numbers may come as strings, QueueData's old ``topicSynFlag`` spelling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, Self

MASTER_ID: Final = 0


def dumps(obj: Any) -> bytes:
    """Standard JSON with sorted keys and no spaces, as bodies are written."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


@dataclass(slots=True, kw_only=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "topicSynFlag": self.topic_sys_flag,  # compat: the pre-4.9 spelling
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Self:
        return cls(
            broker_name=str(obj["brokerName"]),
            read_queue_nums=int(obj.get("readQueueNums", 0)),
            write_queue_nums=int(obj.get("writeQueueNums", 0)),
            perm=int(obj.get("perm", 0)),
            topic_sys_flag=int(obj.get("topicSysFlag", obj.get("topicSynFlag", 0))),
        )


@dataclass(slots=True, kw_only=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        addrs = {str(k): v for k, v in sorted(self.broker_addrs.items())}
        return {"brokerAddrs": addrs, "brokerName": self.broker_name, "cluster": self.cluster}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Self:
        addrs = {int(k): str(v) for k, v in (obj.get("brokerAddrs") or {}).items()}
        return cls(cluster=str(obj.get("cluster", "")), broker_name=str(obj["brokerName"]),
                   broker_addrs=addrs)  # fmt: skip

    def copy(self) -> BrokerData:
        return BrokerData(cluster=self.cluster, broker_name=self.broker_name,
                          broker_addrs=dict(self.broker_addrs))  # fmt: skip

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)


@dataclass(slots=True, kw_only=True)
class TopicRouteData:
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": self.filter_server_table,
            "queueDatas": [q.to_json() for q in self.queue_datas],
        }
        if self.order_topic_conf is not None:
            obj["orderTopicConf"] = self.order_topic_conf
        return obj

    def encode(self) -> bytes:
        return dumps(self.to_json())

    @classmethod
    def decode(cls, body: bytes) -> Self:
        obj = json.loads(body)
        return cls(
            queue_datas=[QueueData.from_json(q) for q in obj.get("queueDatas") or []],
            broker_datas=[BrokerData.from_json(b) for b in obj.get("brokerDatas") or []],
            order_topic_conf=obj.get("orderTopicConf"),
            filter_server_table=obj.get("filterServerTable") or {},
        )


@dataclass(slots=True, kw_only=True)
class ClusterInfo:
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return dumps({
            "brokerAddrTable": {k: v.to_json() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": self.cluster_addr_table,
        })  # fmt: skip

    @classmethod
    def decode(cls, body: bytes) -> Self:
        obj = json.loads(body)
        brokers = obj.get("brokerAddrTable") or {}
        return cls(
            broker_addr_table={k: BrokerData.from_json(v) for k, v in brokers.items()},
            cluster_addr_table={k: list(v) for k, v in (obj.get("clusterAddrTable") or {}).items()},
        )


def encode_topic_list(topics: list[str], broker_addr: str | None = None) -> bytes:
    """TopicList: ``{"topicList":[...]}``, ``brokerAddr`` only when set."""
    obj: dict[str, Any] = {"topicList": topics}
    if broker_addr is not None:
        obj["brokerAddr"] = broker_addr
    return dumps(obj)


def decode_topic_list(body: bytes) -> list[str]:
    return [str(t) for t in json.loads(body).get("topicList") or []]


def encode_kv_table(table: dict[str, str]) -> bytes:
    return dumps({"table": table})


def decode_kv_table(body: bytes) -> dict[str, str]:
    return {str(k): str(v) for k, v in (json.loads(body).get("table") or {}).items()}
