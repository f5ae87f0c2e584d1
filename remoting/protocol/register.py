"""Broker registration bodies: DataVersion, TopicConfigSerializeWrapper, RegisterBrokerBody
(protocol.md 6.3, 6.7).

A body may be large (16 MiB of JSON is ~100,000 topics) or hostile (a zlib bomb, a lone
surrogate in a topic name, JSON nested 100,000 deep), and the name server parses it on its
event loop. So parsing is a generator of bounded steps (``RegisterBrokerBody.parse_steps``):
the C JSON decoder only ever sees one value of at most 64 KiB (typically one topic config),
containers larger than that are walked here, and a caller may let other work run between
steps. A worker thread would not help: CPython's json holds the GIL, so a 16 MiB
``json.loads`` in a thread stalls the loop for all of its ~300 ms. zlib releases the GIL:
``inflate`` is what to run in a thread. ``decode`` does everything at once.

One topic a name server cannot route (``unregistrable``: a blank or absurdly long name,
numbers Java's int cannot hold, a config that is not one) is left out of the parsed table and
named in ``RegisterBrokerBody.skipped``: it must not cost the broker the routes of all its
other topics. What is malformed as a whole -- bad JSON, a bad length prefix, a zlib bomb,
text that is not valid UTF-8 in the JSON form -- still refuses the body.
"""

from __future__ import annotations

import codecs
import json
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Final, Self

from aiorocketmq.remoting.protocol import text
from aiorocketmq.remoting.protocol.bounds import STORED_QUEUE_NUMS_MAX
from aiorocketmq.remoting.protocol.fields import integer
from aiorocketmq.remoting.protocol.frame import DEFAULT_MAX_FRAME
from aiorocketmq.remoting.protocol.route import dumps
from aiorocketmq.remoting.protocol.steps import Steps, finish
from aiorocketmq.remoting.protocol.topic import TopicConfig

# the longest topic a Java broker names is ~390 characters ("%RETRY%" + a 255-character
# group + "_" + a 127-character topic); anything much longer is not a topic
TOPIC_NAME_MAX: Final = 1024
FILTER_SERVERS_MAX: Final = 1024
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64 = range(-(2**63), 2**63)
_WINDOWS: Final = (512, 64 * 1024)  # bytes the C decoder may parse in one call
_PART_MAX: Final = 64 * 1024  # one length-prefixed part of the compressed form
_MAX_DEPTH: Final = 64
_TOPICS_PER_STEP: Final = 256
_INFLATE_CHUNK: Final = 256 * 1024
_WS = re.compile(rb"[ \t\r\n]{0,4096}")
_BLANKS: Final = frozenset((b" ", b"\t", b"\r", b"\n"))
_INT_KEY = re.compile(rb"-?[0-9]{1,20}")
_scan = json.JSONDecoder().raw_decode
_MALFORMED = (TypeError, AttributeError, KeyError, ArithmeticError, RecursionError, struct.error)
# what one topic config that is not one raises (TopicConfig.from_json, a compressed line)
_BAD_TOPIC = (ValueError, TypeError, AttributeError, KeyError, ArithmeticError)


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
    def from_json(cls, obj: Any) -> Self:
        """Raises ValueError unless ``obj`` is null or an object of Java longs."""
        if obj is None:
            return cls()
        if not isinstance(obj, dict):
            raise ValueError("DataVersion is not a JSON object")
        counter, timestamp = integer(obj, "counter", 0), integer(obj, "timestamp", 0)
        if counter not in _INT64 or timestamp not in _INT64:
            raise ValueError("DataVersion counter and timestamp must be Java longs")
        return cls(counter, timestamp)


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
    # parsed only: topics left out of the table, name -> why (never encoded)
    skipped: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Uncompressed JSON: what we always send."""
        return dumps({
            "filterServerList": self.filter_server_list,
            "topicConfigSerializeWrapper": self.topic_config_wrapper.to_json(),
        })  # fmt: skip

    @classmethod
    def decode(
        cls, body: bytes, *, compressed: bool = False, max_inflated: int = DEFAULT_MAX_FRAME
    ) -> Self:
        """Raises ValueError (or a subclass) when the body is malformed, holds text that is
        not valid UTF-8, or inflates past ``max_inflated`` bytes; a topic that is not
        registrable goes to ``skipped`` instead of the table."""
        data = inflate(body, max_inflated) if compressed else body
        return finish(cls.parse_steps(data, compressed=compressed))

    @classmethod
    def parse_steps(cls, data: bytes, *, compressed: bool = False) -> Steps[Self]:
        """``decode`` of an (already inflated) body, in steps of bounded work."""
        try:
            if compressed:
                return (yield from cls._compressed_steps(data))
            start = _skip(data, 0)
            if data[start : start + 1] != b"{":  # refused before parsing what cannot be one
                raise ValueError("RegisterBrokerBody is not a JSON object")
            obj = yield from _json_steps(data)
            return (yield from cls._json_body_steps(obj))
        except _MALFORMED as exc:
            raise ValueError(f"malformed RegisterBrokerBody: {type(exc).__name__}: {exc}") from exc

    @classmethod
    def _json_body_steps(cls, obj: Any) -> Steps[Self]:
        wrapper = _object(obj, "RegisterBrokerBody").get("topicConfigSerializeWrapper")
        wrapper = _object(wrapper or {}, "topicConfigSerializeWrapper")
        table: dict[str, TopicConfig] = {}
        skipped: dict[str, str] = {}
        entries = _object(wrapper.get("topicConfigTable") or {}, "topicConfigTable")
        for i, name in enumerate(list(entries)):
            # popped: freeing 100,000 parsed entries at once would stall the loop for ~20 ms
            entry = entries.pop(name)
            try:
                config = TopicConfig.from_json(_object(entry, "the topic config"))
            except _BAD_TOPIC as exc:
                skipped[name] = f"malformed: {type(exc).__name__}: {exc}"
            else:
                _keep(name, config, table, skipped)
            if i % _TOPICS_PER_STEP == _TOPICS_PER_STEP - 1:
                yield
        version = DataVersion.from_json(wrapper.get("dataVersion"))
        return cls(
            topic_config_wrapper=TopicConfigWrapper(topic_config_table=table, data_version=version),
            filter_server_list=_filter_servers(obj.get("filterServerList")),
            skipped=skipped,
        )

    @classmethod
    def _compressed_steps(cls, data: bytes) -> Steps[Self]:
        # compat: RegisterBrokerBody.decode(data, true) -- int32-length-prefixed parts
        part, pos = _part(data, 0)
        version = DataVersion.from_json(text.loads(part, "DataVersion"))
        (count,), pos = struct.unpack_from(">i", data, pos), pos + 4
        table: dict[str, TopicConfig] = {}
        skipped: dict[str, str] = {}
        for i in range(count):
            part, pos = _part(data, pos)  # a bad length prefix: nothing after it can be read
            try:
                topic = _decode_topic_line(part.decode())
            except _BAD_TOPIC as exc:
                name = part[:TOPIC_NAME_MAX].split(b" ", 1)[0].decode(errors="replace")
                skipped[name] = f"malformed: {type(exc).__name__}: {exc}"
            else:
                _keep(topic.topic_name, topic, table, skipped)
            if i % _TOPICS_PER_STEP == _TOPICS_PER_STEP - 1:
                yield
        part, pos = _part(data, pos)
        servers = _filter_servers(text.loads(part, "filterServerList"))
        wrapper = TopicConfigWrapper(topic_config_table=table, data_version=version)
        return cls(topic_config_wrapper=wrapper, filter_server_list=servers, skipped=skipped)


def inflate(body: bytes, limit: int = DEFAULT_MAX_FRAME) -> bytes:
    """Inflate a compressed RegisterBrokerBody, refusing (ValueError) one that would inflate
    past ``limit`` bytes: a 1 MiB zlib bomb inflates to 1 GiB. zlib releases the GIL while it
    works, so this may run in a worker thread without stalling the event loop."""
    inflater = zlib.decompressobj()
    chunks: list[bytes] = []
    size, pending = 0, body
    try:  # in chunks: one 16 MiB output would be joined, holding the GIL, before we refuse it
        while pending and not inflater.eof:
            chunk = inflater.decompress(pending, _INFLATE_CHUNK)
            pending = inflater.unconsumed_tail
            size += len(chunk)
            if size > limit:
                raise ValueError(
                    f"compressed RegisterBrokerBody inflates past {limit} bytes; refused"
                )
            chunks.append(chunk)
    except zlib.error as exc:
        raise ValueError(f"malformed compressed RegisterBrokerBody: {exc}") from exc
    if not inflater.eof:
        raise ValueError("malformed compressed RegisterBrokerBody: truncated zlib stream")
    return b"".join(chunks)


def unregistrable(config: TopicConfig) -> str | None:
    """Why a name server will not route ``config``, or None if it will: a blank or absurdly
    long name, text that cannot be written as UTF-8, numbers Java's int cannot hold, more
    queues than a client can carry (remoting.protocol.bounds). The name
    server skips such a topic; the broker leaves it out of what it registers (one rule)."""
    name = config.topic_name
    if not name.strip():
        return "the topic name is blank"
    if len(name) > TOPIC_NAME_MAX:
        return f"the topic name is {len(name)} characters long (at most {TOPIC_NAME_MAX})"
    lo, hi = _INT32_MIN, _INT32_MAX  # a broker checks 100,000 topics per registration: cheap
    if not (
        lo <= config.read_queue_nums <= hi
        and lo <= config.write_queue_nums <= hi
        and lo <= config.perm <= hi
        and lo <= config.topic_sys_flag <= hi
    ):
        return "queue numbers, perm and topicSysFlag must be Java ints"
    if not (
        0 <= config.read_queue_nums <= STORED_QUEUE_NUMS_MAX
        and 0 <= config.write_queue_nums <= STORED_QUEUE_NUMS_MAX
    ):  # compat: 4.9.8's name server routes any int, and every client then allocates them all
        return f"queue numbers must be 0 to {STORED_QUEUE_NUMS_MAX} (what a client can carry)"
    attrs, filter_type = config.attributes, config.topic_filter_type
    plain = not attrs and name.isascii() and filter_type.isascii()  # nothing to encode
    if not plain and any(text.unencodable(s) for s in (name, filter_type, *attrs, *attrs.values())):
        return "the topic config holds text that is not valid UTF-8"
    return None


def _keep(
    name: str, config: TopicConfig, table: dict[str, TopicConfig], skipped: dict[str, str]
) -> None:
    reason = unregistrable(config)
    if reason is None:
        table[name] = config
    else:
        skipped[name] = reason


def _object(obj: Any, what: str) -> dict[Any, Any]:
    if not isinstance(obj, dict):
        raise ValueError(f"{what} is not a JSON object")
    return obj


def _filter_servers(obj: Any) -> list[str]:
    servers = obj or []
    if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
        raise ValueError("filterServerList is not a list of strings")
    if len(servers) > FILTER_SERVERS_MAX:
        raise ValueError(f"more than {FILTER_SERVERS_MAX} filter servers")
    return servers


def _part(data: bytes, pos: int) -> tuple[bytes, int]:
    (n,) = struct.unpack_from(">i", data, pos)
    if not 0 <= n <= _PART_MAX or pos + 4 + n > len(data):
        raise ValueError(f"a length-prefixed part at byte {pos} is {n} bytes: out of bounds")
    return data[pos + 4 : pos + 4 + n], pos + 4 + n


def _decode_topic_line(line: str) -> TopicConfig:
    # compat: TopicConfig.encode -- "name readQ writeQ perm filterType [attributesJSON]"
    name, read, write, perm, filter_type, *rest = line.split(" ", 5)
    attributes = text.loads(rest[0], "topic attributes") if rest and rest[0] else {}
    return TopicConfig(topic_name=name, read_queue_nums=int(read), write_queue_nums=int(write),
                       perm=int(perm), topic_filter_type=filter_type,
                       attributes={str(k): str(v) for k, v in attributes.items()})  # fmt: skip


# ---------------------------------------------------------------- JSON in bounded steps


def _json_steps(data: bytes) -> Steps[Any]:
    """Parse JSON (and fastjson's bare Integer keys) from UTF-8 ``data``; ValueError if
    malformed or if any string in it cannot be written back as UTF-8."""
    value, end = yield from _value(data, _skip(data, 0), 0)
    if _skip(data, end) != len(data):
        raise ValueError(f"extra data at byte {end}")
    return value


def _skip(data: bytes, pos: int) -> int:
    if data[pos : pos + 1] not in _BLANKS:
        return pos
    end = _WS.match(data, pos).end()  # type: ignore[union-attr]  # matches the empty string
    if data[end : end + 1] in _BLANKS:
        raise ValueError(f"over 4 KiB of whitespace at byte {pos}")
    return end


def _leaf(data: bytes, pos: int) -> tuple[Any, int] | ValueError:
    """The value at ``pos`` if the C decoder parses it from a window of at most 64 KiB (so
    one call costs well under a millisecond), else why not."""
    for size in _WINDOWS:
        window = data[pos : pos + size]
        whole = len(window) < size  # the window reaches the end of the data
        try:
            chars, _ = codecs.utf_8_decode(window, "strict", whole)
            value, end = _scan(chars)
        except (ValueError, RecursionError) as exc:
            if whole:
                return ValueError(f"bad JSON at byte {pos}: {getattr(exc, 'msg', exc)}")
            continue
        if end < len(chars) or whole:  # else a number may go on past the window
            used = end if chars.isascii() else len(chars[:end].encode())
            if b"\\u" in window[:used]:  # only an escape can make a lone surrogate
                text.check_strings(value, "RegisterBrokerBody")
            return value, pos + used
    return ValueError(f"bad JSON at byte {pos}, or a value longer than {_WINDOWS[-1]} bytes")


def _value(data: bytes, pos: int, depth: int) -> Steps[tuple[Any, int]]:
    leaf = _leaf(data, pos)
    yield
    if not isinstance(leaf, ValueError):
        return leaf
    opener = data[pos : pos + 1]
    if opener not in (b"{", b"["):
        raise leaf
    if depth >= _MAX_DEPTH:
        raise ValueError(f"JSON nested more than {_MAX_DEPTH} deep at byte {pos}")
    if opener == b"{":
        return (yield from _members(data, pos + 1, depth + 1))
    return (yield from _items(data, pos + 1, depth + 1))


def _key(data: bytes, pos: int) -> tuple[str, int]:
    if data[pos : pos + 1] == b'"':
        leaf = _leaf(data, pos)
        if isinstance(leaf, ValueError):
            raise leaf
        return leaf
    match = _INT_KEY.match(data, pos)  # compat: fastjson writes Map<Integer, _> keys bare
    if match is None:
        raise ValueError(f"expected a key at byte {pos}")
    return match.group().decode(), match.end()


def _members(data: bytes, pos: int, depth: int) -> Steps[tuple[dict[str, Any], int]]:
    out: dict[str, Any] = {}
    pos = _skip(data, pos)
    if data[pos : pos + 1] == b"}":
        return out, pos + 1
    while True:
        key, pos = _key(data, pos)
        pos = _skip(data, pos)
        if data[pos : pos + 1] != b":":
            raise ValueError(f"expected ':' at byte {pos}")
        out[key], pos = yield from _value(data, _skip(data, pos + 1), depth)
        pos = _skip(data, pos)
        sep = data[pos : pos + 1]
        if sep == b"}":
            return out, pos + 1
        if sep != b",":
            raise ValueError(f"expected ',' or '}}' at byte {pos}")
        pos = _skip(data, pos + 1)


def _items(data: bytes, pos: int, depth: int) -> Steps[tuple[list[Any], int]]:
    out: list[Any] = []
    pos = _skip(data, pos)
    if data[pos : pos + 1] == b"]":
        return out, pos + 1
    while True:
        item, pos = yield from _value(data, pos, depth)
        out.append(item)
        pos = _skip(data, pos)
        sep = data[pos : pos + 1]
        if sep == b"]":
            return out, pos + 1
        if sep != b",":
            raise ValueError(f"expected ',' or ']' at byte {pos}")
        pos = _skip(data, pos + 1)
