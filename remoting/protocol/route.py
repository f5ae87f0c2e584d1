"""Route bodies: TopicRouteData, QueueData, BrokerData, ClusterInfo, TopicList, KVTable
(protocol.md 6.1, 6.2).

We emit standard JSON (quoted keys, sorted) and parse leniently: ``brokerAddrs`` keys may be
quoted or bare numbers (a Java namesrv writes ``{0:"..."}``), numbers may come as strings,
QueueData's old ``topicSynFlag`` spelling. Decoders raise ValueError and nothing else, and
refuse text that could not be written back as UTF-8. ``encodable_part()`` leaves out entries
holding such text, so a server can still answer about every other entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Self

from aiorocketmq.remoting.protocol import fastjson, text

MASTER_ID: Final = 0


def encodable(*texts: str) -> bool:
    """Whether every one of ``texts`` can be written as UTF-8."""
    return not any(text.unencodable(t) for t in texts)


@contextmanager
def _decoding(what: str) -> Iterator[None]:
    """Turn what lenient conversions of a malformed body raise into ValueError."""
    try:
        yield
    except (TypeError, AttributeError, KeyError, ArithmeticError, RecursionError) as exc:
        raise ValueError(f"malformed {what}: {type(exc).__name__}: {exc}") from exc


def _loads_object(body: bytes, what: str) -> dict[Any, Any]:
    try:
        obj = text.loads(body, what)
    except (ValueError, RecursionError):
        obj = fastjson.loads(body)  # compat: Java's bare Integer keys; ValueError if still bad
    if not isinstance(obj, dict):
        raise ValueError(f"{what} is not a JSON object")
    return obj


def dumps(obj: Any) -> bytes:
    """Standard JSON with sorted keys and no spaces, as bodies are written."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


@dataclass(slots=True, kw_only=True)
class QueueData:
    """A topic's queues on one broker (QueueData): read/write counts, perm, sysFlag."""

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

    def encodable(self) -> bool:
        return encodable(self.broker_name)

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
    """One broker group (BrokerData): its cluster, name and addresses by brokerId."""

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

    def encodable(self) -> bool:
        return encodable(self.cluster, self.broker_name, *self.broker_addrs.values())

    def copy(self) -> BrokerData:
        return BrokerData(cluster=self.cluster, broker_name=self.broker_name,
                          broker_addrs=dict(self.broker_addrs))  # fmt: skip

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)


@dataclass(slots=True, kw_only=True)
class TopicRouteData:
    """A topic's route (TopicRouteData): its queue data and the brokers that serve them."""

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

    def encodable_part(self) -> TopicRouteData:
        """This route without the entries holding text that cannot be written as UTF-8."""
        conf = self.order_topic_conf
        return TopicRouteData(
            queue_datas=[q for q in self.queue_datas if q.encodable()],
            broker_datas=[b for b in self.broker_datas if b.encodable()],
            order_topic_conf=conf if conf is None or encodable(conf) else None,
            filter_server_table={k: v for k, v in self.filter_server_table.items()
                                 if encodable(k, *v)},
        )  # fmt: skip

    @classmethod
    def decode(cls, body: bytes) -> Self:
        obj = _loads_object(body, "TopicRouteData")
        with _decoding("TopicRouteData"):
            conf = obj.get("orderTopicConf")
            servers = obj.get("filterServerTable") or {}
            return cls(
                queue_datas=[QueueData.from_json(q) for q in obj.get("queueDatas") or []],
                broker_datas=[BrokerData.from_json(b) for b in obj.get("brokerDatas") or []],
                order_topic_conf=None if conf is None else str(conf),
                filter_server_table={str(k): [str(a) for a in v] for k, v in servers.items()},
            )


@dataclass(slots=True, kw_only=True)
class ClusterInfo:
    """Every broker and cluster the name server knows (ClusterInfo)."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return dumps({
            "brokerAddrTable": {k: v.to_json() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": self.cluster_addr_table,
        })  # fmt: skip

    def encodable_part(self) -> ClusterInfo:
        """This table without the brokers and names holding text that cannot be written."""
        return ClusterInfo(
            broker_addr_table={k: b for k, b in self.broker_addr_table.items()
                               if encodable(k) and b.encodable()},
            cluster_addr_table={c: [n for n in names if encodable(n)]
                                for c, names in self.cluster_addr_table.items() if encodable(c)},
        )  # fmt: skip

    @classmethod
    def decode(cls, body: bytes) -> Self:
        obj = _loads_object(body, "ClusterInfo")
        with _decoding("ClusterInfo"):
            brokers = obj.get("brokerAddrTable") or {}
            clusters = obj.get("clusterAddrTable") or {}
            return cls(
                broker_addr_table={str(k): BrokerData.from_json(v) for k, v in brokers.items()},
                cluster_addr_table={str(k): [str(n) for n in v] for k, v in clusters.items()},
            )


def encode_topic_list(topics: list[str], broker_addr: str | None = None) -> bytes:
    """TopicList: ``{"topicList":[...]}``, ``brokerAddr`` only when set."""
    obj: dict[str, Any] = {"topicList": topics}
    if broker_addr is not None:
        obj["brokerAddr"] = broker_addr
    return dumps(obj)


def decode_topic_list(body: bytes) -> list[str]:
    obj = _loads_object(body, "TopicList")
    with _decoding("TopicList"):
        return [str(t) for t in obj.get("topicList") or []]


def encode_kv_table(table: dict[str, str]) -> bytes:
    return dumps({"table": table})


def decode_kv_table(body: bytes) -> dict[str, str]:
    obj = _loads_object(body, "KVTable")
    with _decoding("KVTable"):
        return {str(k): str(v) for k, v in (obj.get("table") or {}).items()}
