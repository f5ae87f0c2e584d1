"""Broker registration bodies: DataVersion, TopicConfigSerializeWrapper, RegisterBrokerBody
(protocol.md 6.3, 6.7)."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Self

from remoting.protocol.route import dumps
from remoting.protocol.topic import TopicConfig


@dataclass(frozen=True, slots=True)
class DataVersion:
    """Bumped on every topic-table change; lets the name server skip unchanged registrations."""

    counter: int = 0
    timestamp: int = 0

    def next(self, now_ms: int) -> DataVersion:
        return DataVersion(self.counter + 1, now_ms)

    def to_json(self) -> dict[str, Any]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_json(cls, obj: dict[str, Any] | None) -> Self:
        obj = obj or {}
        return cls(int(obj.get("counter", 0)), int(obj.get("timestamp", 0)))


@dataclass(slots=True, kw_only=True)
class TopicConfigWrapper:
    """TopicConfigSerializeWrapper: every topic a broker hosts, and the table's version."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "topicConfigTable": {k: v.to_json() for k, v in self.topic_config_table.items()},
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Self:
        table = obj.get("topicConfigTable") or {}
        return cls(
            topic_config_table={k: TopicConfig.from_json(v) for k, v in table.items()},
            data_version=DataVersion.from_json(obj.get("dataVersion")),
        )


@dataclass(slots=True, kw_only=True)
class RegisterBrokerBody:
    topic_config_wrapper: TopicConfigWrapper = field(default_factory=TopicConfigWrapper)
    filter_server_list: list[str] = field(default_factory=list)

    def encode(self) -> bytes:
        """Uncompressed JSON: what we always send."""
        return dumps({
            "filterServerList": self.filter_server_list,
            "topicConfigSerializeWrapper": self.topic_config_wrapper.to_json(),
        })  # fmt: skip

    @classmethod
    def decode(cls, body: bytes, *, compressed: bool = False) -> Self:
        """Raises ValueError (or a subclass) when the body is malformed."""
        if compressed:
            return cls._decode_compressed(body)
        obj = json.loads(body)
        return cls(
            topic_config_wrapper=TopicConfigWrapper.from_json(
                obj.get("topicConfigSerializeWrapper") or {}
            ),
            filter_server_list=[str(s) for s in obj.get("filterServerList") or []],
        )

    @classmethod
    def _decode_compressed(cls, body: bytes) -> Self:
        # compat: RegisterBrokerBody.decode -- a zlib stream of length-prefixed parts
        try:
            data = zlib.decompress(body)
            version, pos = _lp_json(data, 0)
            (count,), pos = struct.unpack_from(">i", data, pos), pos + 4
            table = {}
            for _ in range(count):
                (n,) = struct.unpack_from(">i", data, pos)
                topic = _decode_topic_line(data[pos + 4 : pos + 4 + n].decode())
                table[topic.topic_name] = topic
                pos += 4 + n
            servers, pos = _lp_json(data, pos)
        except (zlib.error, struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"malformed compressed RegisterBrokerBody: {exc}") from exc
        wrapper = TopicConfigWrapper(topic_config_table=table,
                                     data_version=DataVersion.from_json(version))  # fmt: skip
        return cls(topic_config_wrapper=wrapper, filter_server_list=list(servers or []))


def _lp_json(data: bytes, pos: int) -> tuple[Any, int]:
    (n,) = struct.unpack_from(">i", data, pos)
    if n < 0 or pos + 4 + n > len(data):
        raise ValueError("length-prefixed part runs past the body")
    return json.loads(data[pos + 4 : pos + 4 + n]), pos + 4 + n


def _decode_topic_line(line: str) -> TopicConfig:
    # TopicConfig.encode: "name readQ writeQ perm filterType [attributesJSON]"
    name, read, write, perm, filter_type, *rest = line.split(" ", 5)
    attributes = json.loads(rest[0]) if rest and rest[0] else {}
    return TopicConfig(topic_name=name, read_queue_nums=int(read), write_queue_nums=int(write),
                       perm=int(perm), topic_filter_type=filter_type,
                       attributes={str(k): str(v) for k, v in attributes.items()})  # fmt: skip
