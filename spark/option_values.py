"""Parsers of single option values (spark-connector.md §10, issue 16 item 3): each takes the
option's camelCase name and the string Spark hands over, and returns the value or raises
ValueError naming the option. No I/O."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from aiorocketmq.client import MQClientError
from aiorocketmq.client.api import check_group
from aiorocketmq.spark.offsets import EARLIEST, LATEST, Offsets, parse_offsets

_DIGITS = re.compile(r"[0-9]+")
_VALID_TOPIC = re.compile(r"[%|a-zA-Z0-9_-]+")  # TopicValidator.VALID_PATTERN_STR
_TOPIC_MAX_LENGTH = 127  # TopicValidator.TOPIC_MAX_LENGTH
# JavaUtils.timeStringAsMs: digits, then an optional unit (none means ms)
_DURATION = re.compile(r"([0-9]+)\s*(us|ms|s|m|min|h|d)?")
_UNIT_US = {"us": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "min": 60_000_000}
_UNIT_US |= {"h": 3_600_000_000, "d": 86_400_000_000}
_OFFSETS_JSON = "JSON {topic: {brokerName: {queueId: offset}}}"
_ASSIGN_JSON = '{topic: {brokerName: [queueId, ...]}}, e.g. {"t": {"broker-a": [0, 1]}}'


def name_server(name: str, raw: str) -> str:
    """``host:port[;host:port]``, blanks around each address dropped."""
    addrs = [a.strip() for a in raw.split(";") if a.strip()]
    for addr in addrs:
        host, _, port = addr.rpartition(":")
        if not host or not _DIGITS.fullmatch(port) or not 0 < int(port) < 65536:
            break
    else:
        if addrs:
            return ";".join(addrs)
    raise ValueError(f"{name} must be host:port[;host:port], got {raw!r}")


def topic_name(name: str, topic: str) -> str:
    """``topic`` when RocketMQ allows it as a topic name (TopicValidator.validateTopic)."""
    if not _VALID_TOPIC.fullmatch(topic) or len(topic) > _TOPIC_MAX_LENGTH:
        raise ValueError(
            f"{name}: {topic!r} is not a valid topic name (at most {_TOPIC_MAX_LENGTH} of "
            "the characters %|a-zA-Z0-9_-)"
        )
    return topic


def topic_list(name: str, raw: str) -> tuple[str, ...]:
    """A comma list of topics, blanks and repeats dropped (Kafka's ``subscribe``)."""
    topics = [topic_name(name, t.strip()) for t in raw.split(",") if t.strip()]
    if not topics:
        raise ValueError(f"{name} must name at least one topic, got {raw!r}")
    return tuple(dict.fromkeys(topics))


def one_topic(name: str, raw: str) -> str:
    return topic_name(name, raw.strip())


def pattern(name: str, raw: str) -> str:
    """A Python regular expression, matched against whole topic names (``re.fullmatch``)."""
    if not raw:
        raise ValueError(f"{name} must be a non-empty regular expression")
    try:
        re.compile(raw)
    except re.error as e:
        raise ValueError(f"{name} is not a valid regular expression ({e}): {raw!r}") from None
    return raw


def assign(name: str, raw: str) -> dict[str, dict[str, tuple[int, ...]]]:
    """JSON ``{topic: {brokerName: [queueId, ...]}}``, sorted, queueIds without repeats."""
    shape = f"{name} must be JSON {_ASSIGN_JSON}"
    try:
        obj: Any = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{shape}; not valid JSON ({e.msg}): {raw!r}") from None
    if not isinstance(obj, dict) or not obj:
        raise ValueError(f"{shape}, got {raw!r}")
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for topic, brokers in sorted(obj.items()):
        if not isinstance(brokers, dict) or not brokers:
            raise ValueError(f"{shape}; topic {topic!r} maps to {brokers!r}")
        out[topic_name(name, topic)] = {}
        for broker, ids in sorted(brokers.items()):
            if (
                not broker
                or not isinstance(ids, list)
                or not ids
                or not all(isinstance(q, int) and not isinstance(q, bool) and q >= 0 for q in ids)
            ):
                raise ValueError(f"{shape}; {topic}/{broker!r} maps to {ids!r}")
            out[topic][broker] = tuple(sorted(set(ids)))
    return out


def non_blank(name: str, raw: str) -> str:
    if not raw.strip():
        raise ValueError(f"{name} must not be blank")
    return raw.strip()


def expression_type(name: str, raw: str) -> str:
    """TAG or SQL92 (any case): how subExpression is read (Java's ExpressionType)."""
    kind = raw.strip().upper()
    if kind not in ("TAG", "SQL92"):
        raise ValueError(f"{name} must be TAG or SQL92, got {raw!r}")
    return kind


def secret(name: str, raw: str) -> str:
    """A secret, as given (never quoted back)."""
    if not raw.strip():
        raise ValueError(f"{name} must not be blank")
    return raw


def consumer_group(name: str, raw: str) -> str:
    """A consumer group name as the SDK's consumers accept it (Validators.checkGroup)."""
    try:
        check_group(raw)
    except MQClientError as e:
        raise ValueError(f"{name}: {e}") from None
    return raw


def starting_offsets(name: str, raw: str) -> Literal["earliest", "latest"] | Offsets:
    """``earliest``, ``latest`` or JSON offsets with -2 (earliest) and -1 (latest) allowed."""
    word = raw.strip().lower()
    if word in ("earliest", "latest"):
        return "earliest" if word == "earliest" else "latest"
    if not raw.strip().startswith("{"):
        raise ValueError(f"{name} must be earliest, latest or {_OFFSETS_JSON}, got {raw!r}")
    return parse_offsets(raw, what=name, specials=(EARLIEST, LATEST))


def ending_offsets(name: str, raw: str) -> Literal["latest"] | Offsets:
    """``latest`` or JSON offsets with -1 (latest) allowed; earliest is refused, as in Kafka
    (KafkaSourceProvider.validateBatchOptions)."""
    word = raw.strip().lower()
    if word == "latest":
        return "latest"
    if word == "earliest" or not word.startswith("{"):
        raise ValueError(f"{name} must be latest or {_OFFSETS_JSON} (-1 for latest), got {raw!r}")
    return parse_offsets(raw, what=name, specials=(LATEST,))


def timestamp(name: str, raw: str) -> int:
    """Milliseconds since the epoch."""
    if not _DIGITS.fullmatch(raw.strip()):
        raise ValueError(f"{name} must be a timestamp in milliseconds since the epoch, got {raw!r}")
    return int(raw.strip())


def timestamps(name: str, raw: str) -> Offsets:
    """JSON ``{topic: {brokerName: {queueId: ms}}}``: a time per queue, in the queue-key
    spelling of startingOffsets (Kafka's startingOffsetsByTimestamp, per queue)."""
    if not raw.strip().startswith("{"):
        raise ValueError(
            f"{name} must be JSON {{topic: {{brokerName: {{queueId: ms}}}}}}, got {raw!r}"
        )
    return parse_offsets(raw, what=name, specials=())


def timestamp_strategy(name: str, raw: str) -> Literal["error", "latest"]:
    """``error`` or ``latest``: what a start by time does in a queue with no message stored at
    or after the time (Kafka's startingOffsetsByTimestampStrategy)."""
    word = raw.strip().lower()
    if word not in ("error", "latest"):
        raise ValueError(f"{name} must be error or latest, got {raw!r}")
    return "error" if word == "error" else "latest"


def positive(name: str, raw: str) -> int:
    text = raw.strip()
    if not _DIGITS.fullmatch(text) or int(text) == 0:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return int(text)


def duration_ms(name: str, raw: str) -> int:
    """A Spark duration (``15m``, ``30s``, ``500ms``, ``1h``, ``1d``; plain digits are ms), in
    whole milliseconds, at least 1."""
    m = _DURATION.fullmatch(raw.strip().lower())
    ms = int(m[1]) * _UNIT_US[m[2] or "ms"] // 1000 if m else 0
    if ms < 1:
        raise ValueError(
            f"{name} must be a positive duration such as 15m, 30s, 500ms, 1h or plain "
            f"milliseconds, got {raw!r}"
        )
    return ms


def boolean(name: str, raw: str) -> bool:
    word = raw.strip().lower()
    if word not in ("true", "false"):
        raise ValueError(f"{name} must be true or false, got {raw!r}")
    return word == "true"
