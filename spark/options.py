"""The options of the rocketmq source and sink, checked before any I/O (spark-connector.md §10,
issue 16 item 3).

Names follow Spark's Kafka connector wherever the concept exists (§8.2). Spark hands the keys
lower-cased (§2), so they are looked up case-insensitively; every error is a ValueError naming
the option in its camelCase spelling. Unknown options, options of the other query kind (batch
or stream) and conflicting ones are refused. ``path`` (``load(path)``, ``save(path)``) is
refused too; Spark's own ``checkpointLocation`` and ``queryName``, which it passes to a
streaming sink, are not options of ours (the checkpoint is kept: ``exactlyOnce`` logs there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from aiorocketmq.client import MessageSelector
from aiorocketmq.spark import option_values as v
from aiorocketmq.spark.access import SECRETS, Access, access
from aiorocketmq.spark.offsets import LATEST, Offsets

DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000  # Kafka's maxTriggerDelay, 15m


@dataclass(frozen=True)
class ReadOptions:
    """Exactly one of ``topics`` (``topic`` or ``subscribe``), ``pattern``
    (``subscribePattern``, matched with ``re.fullmatch``) and ``assign`` is set.
    As in Kafka, ``starting_timestamp`` wins over ``starting_offsets_by_timestamp``, which
    wins over ``starting_offsets`` for the queues it names (the others keep
    ``starting_offsets``); the same for the ending ones. In offsets JSON, -2 is earliest and
    -1 latest."""

    name_server: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: dict[str, dict[str, tuple[int, ...]]] | None = None
    sub_expression: str = "*"
    expression_type: str = "TAG"  # or SQL92: sub_expression is then evaluated by the brokers
    starting_offsets: str | Offsets = "latest"  # "earliest", "latest" or JSON offsets
    starting_timestamp: int | None = None  # ms
    starting_offsets_by_timestamp: Offsets | None = None  # ms per queue
    starting_timestamp_strategy: str = "error"  # no message at or after the time: or "latest"
    ending_offsets: str | Offsets = "latest"  # batch only: "latest" or JSON offsets
    ending_timestamp: int | None = None  # ms, batch only, as the next one
    ending_offsets_by_timestamp: Offsets | None = None  # ms per queue
    max_offsets_per_trigger: int | None = None  # streams only, as the next two
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS  # with min_offsets_per_trigger
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    # messages a pull asks for: a broker of ours serves up to that many from memory within
    # 256 KiB (the connector's pulls are bulk pulls); Apache's at most 32
    pull_batch_size: int = 1024
    pull_timeout_ms: int = 3000
    group: str | None = None
    include_properties: bool = True
    push_filters: bool = False  # batch only: tag, keys and store-time filters to the brokers
    access: Access = field(default_factory=Access)  # credentials, TLS (SECURITY_OPTIONS)

    @property
    def selector(self) -> MessageSelector:
        """What each pull carries: subExpression read as expressionType says."""
        if self.expression_type == "SQL92":
            return MessageSelector.by_sql(self.sub_expression)
        return MessageSelector.by_tag(self.sub_expression)

    @property
    def tag_set(self) -> frozenset[str] | None:
        """The tags kept exactly (the broker matches their hash codes); None: every record the
        broker sent (all of them, or what an SQL92 expression matched, which is exact)."""
        if self.expression_type != "TAG":
            return None
        text = self.sub_expression.strip()
        if not text or text == "*":
            return None
        return frozenset(t.strip() for t in text.split("||") if t.strip())


@dataclass(frozen=True)
class WriteOptions:
    """``topic``, when set, wins over the DataFrame's topic column (as Kafka's sink)."""

    name_server: str
    topic: str | None = None
    producer_group: str = "spark-rocketmq-sink"
    send_timeout_ms: int = 3000  # DefaultMQProducer.sendMsgTimeout
    batch_size: int = 128  # messages per SEND_BATCH_MESSAGE, where a batch is allowed
    access: Access = field(default_factory=Access)  # credentials, TLS (SECURITY_OPTIONS)
    exactly_once: bool = False  # half messages, committed by the driver (sink_exactly_once.py)
    checkpoint_location: str | None = None  # a stream's (Spark passes the option on)


@dataclass(frozen=True)
class _Spec:
    field: str
    parse: Callable[[str, str], object]
    scope: Literal["any", "batch", "stream"] = "any"


# the source's and the sink's: camelCase name -> Access field (spark/access.py), parser
SECURITY_OPTIONS: dict[str, _Spec] = {
    "accessKey": _Spec("access_key", v.non_blank),
    "secretKey": _Spec("secret_key", v.secret),
    "securityToken": _Spec("security_token", v.secret),
    "tls": _Spec("tls", v.boolean),
    "tls.caFile": _Spec("tls_ca_file", v.non_blank),
    "tls.certFile": _Spec("tls_cert_file", v.non_blank),
    "tls.keyFile": _Spec("tls_key_file", v.non_blank),
    "tls.keyPassword": _Spec("tls_key_password", v.secret),
    "tls.checkHostname": _Spec("tls_check_hostname", v.boolean),
}

# camelCase name -> ReadOptions field, parser and the queries it applies to
READ_OPTIONS: dict[str, _Spec] = {
    "nameServer": _Spec("name_server", v.name_server),
    "topic": _Spec("topics", v.topic_list),
    "subscribe": _Spec("topics", v.topic_list),
    "subscribePattern": _Spec("pattern", v.pattern),
    "assign": _Spec("assign", v.assign),
    "subExpression": _Spec("sub_expression", v.non_blank),
    "expressionType": _Spec("expression_type", v.expression_type),
    "startingOffsets": _Spec("starting_offsets", v.starting_offsets),
    "startingTimestamp": _Spec("starting_timestamp", v.timestamp),
    "startingOffsetsByTimestamp": _Spec("starting_offsets_by_timestamp", v.timestamps),
    "startingOffsetsByTimestampStrategy": _Spec(
        "starting_timestamp_strategy", v.timestamp_strategy
    ),
    "endingOffsets": _Spec("ending_offsets", v.ending_offsets, "batch"),
    "endingTimestamp": _Spec("ending_timestamp", v.timestamp, "batch"),
    "endingOffsetsByTimestamp": _Spec("ending_offsets_by_timestamp", v.timestamps, "batch"),
    "maxOffsetsPerTrigger": _Spec("max_offsets_per_trigger", v.positive, "stream"),
    "minOffsetsPerTrigger": _Spec("min_offsets_per_trigger", v.positive, "stream"),
    "maxTriggerDelay": _Spec("max_trigger_delay_ms", v.duration_ms, "stream"),
    "minPartitions": _Spec("min_partitions", v.positive),
    "failOnDataLoss": _Spec("fail_on_data_loss", v.boolean),
    "pullBatchSize": _Spec("pull_batch_size", v.positive),
    "pullTimeoutMs": _Spec("pull_timeout_ms", v.positive),
    "group": _Spec("group", v.consumer_group),
    "includeProperties": _Spec("include_properties", v.boolean),
    "pushFilters": _Spec("push_filters", v.boolean, "batch"),
    **SECURITY_OPTIONS,
}

WRITE_OPTIONS: dict[str, _Spec] = {
    "nameServer": _Spec("name_server", v.name_server),
    "topic": _Spec("topic", v.one_topic),
    "producerGroup": _Spec("producer_group", v.non_blank),
    "sendTimeoutMs": _Spec("send_timeout_ms", v.positive),
    "batchSize": _Spec("batch_size", v.positive),
    "exactlyOnce": _Spec("exactly_once", v.boolean),
    **SECURITY_OPTIONS,
}

_SUBSCRIPTIONS = ("topic", "subscribe", "subscribePattern", "assign")
_SPARK_STREAM_SINK_KEYS = frozenset({"checkpointlocation", "queryname"})


def read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """The source's options from what Spark passes (``DataSource.options``)."""
    given = _collect(options, READ_OPTIONS, "source", streaming=streaming, ignored=frozenset())
    _require_name_server(given)
    secured = access(given)
    chosen = [name for name in _SUBSCRIPTIONS if name in given]
    if len(chosen) != 1:
        got = ", ".join(chosen) if chosen else "none"
        raise ValueError(
            f"exactly one of topic, subscribe, subscribePattern or assign is required (got {got})"
        )
    if "startingOffsets" not in given:
        given["startingOffsets"] = "latest" if streaming else "earliest"
    _check_offsets(given, streaming=streaming)
    _check_limits(given)
    if given.get("expressionType") == "SQL92" and "subExpression" not in given:
        raise ValueError("expressionType SQL92 needs subExpression: the SQL92 expression")
    fields = {READ_OPTIONS[name].field: value for name, value in given.items()}
    return ReadOptions(**cast(dict[str, Any], fields), access=secured)


def write_options(options: Mapping[str, str], *, streaming: bool) -> WriteOptions:
    """The sink's options from what Spark passes (``DataSource.options``)."""
    ignored = _SPARK_STREAM_SINK_KEYS if streaming else frozenset()
    given = _collect(options, WRITE_OPTIONS, "sink", streaming=streaming, ignored=ignored)
    _require_name_server(given)
    secured = access(given)
    fields = {WRITE_OPTIONS[name].field: value for name, value in given.items()}
    # Spark hands a stream's sink its checkpointLocation option (exactlyOnce keeps its log
    # there); a batch write has none
    found = [str(v) for k, v in options.items() if k.lower() == "checkpointlocation"]
    checkpoint = found[0] if streaming and found else None
    return WriteOptions(
        **cast(dict[str, Any], fields), access=secured, checkpoint_location=checkpoint
    )


def _collect(
    options: Mapping[str, str],
    table: dict[str, _Spec],
    kind: str,
    *,
    streaming: bool,
    ignored: frozenset[str],
) -> dict[str, object]:
    """camelCase name -> parsed value of every option given."""
    by_lower = {name.lower(): name for name in table}
    given: dict[str, object] = {}
    for key, raw in options.items():
        lower = key.lower()
        if lower in ignored:
            continue
        if lower == "path":
            raise ValueError(_PATH_REFUSED[kind])
        name = by_lower.get(lower)
        if name is None:
            raise ValueError(
                f"unknown option {key!r} for the rocketmq {kind}; the options are "
                + ", ".join(table)
            )
        if name in given:
            raise ValueError(f"{name} is given twice")
        spec = table[name]
        if spec.scope == "batch" and streaming:
            raise ValueError(f"{name} applies to batch queries only (spark.read), not to streams")
        if spec.scope == "stream" and not streaming:
            raise ValueError(f"{name} applies to streaming queries only (spark.readStream)")
        if not isinstance(raw, str):
            shown = "a value (not shown)" if name in SECRETS else repr(raw)
            raise ValueError(f"{name} must be given as a string, got {shown}")
        given[name] = spec.parse(name, raw)
    return given


_PATH_REFUSED = {
    "source": "the rocketmq source takes no path: call load() without one and name the topics "
    "with the topic, subscribe, subscribePattern or assign option",
    "sink": "the rocketmq sink takes no path: call save() or start() without one and name the "
    "topic with the topic option or a topic column",
}


def _require_name_server(given: dict[str, object]) -> None:
    if "nameServer" not in given:
        raise ValueError("nameServer is required: the name servers as host:port[;host:port]")


_JSON_OFFSETS = (
    "startingOffsets",
    "startingOffsetsByTimestamp",
    "endingOffsets",
    "endingOffsetsByTimestamp",
)


def _check_offsets(given: dict[str, object], *, streaming: bool) -> None:
    """Batch starts cannot be latest and JSON offsets must name subscribed queues
    (KafkaSourceProvider.validateBatchOptions); a batch's end is not before its start."""
    start = given["startingOffsets"]
    if not streaming and start == "latest":
        raise ValueError(
            "startingOffsets can't be latest for a batch query (streams only); use earliest, "
            "JSON offsets or startingTimestamp"
        )
    for name in _JSON_OFFSETS:
        offsets = given.get(name)
        if isinstance(offsets, dict):
            _check_json_offsets(name, offsets, given, streaming=streaming)
    first, last = given.get("startingTimestamp"), given.get("endingTimestamp")
    if isinstance(first, int) and isinstance(last, int) and last < first:
        raise ValueError(f"endingTimestamp ({last}) is before startingTimestamp ({first})")


def _check_json_offsets(
    name: str, offsets: Offsets, given: dict[str, object], *, streaming: bool
) -> None:
    for topic, brokers in offsets.items():
        for broker, queues in brokers.items():
            for queue_id, offset in queues.items():
                where = f"{topic}/{broker}/{queue_id}"
                if name == "startingOffsets" and not streaming and offset == LATEST:
                    raise ValueError(
                        f"startingOffsets can't be latest (-1) for a batch query, as for {where}"
                    )
                if not _subscribed(given, topic, broker, int(queue_id)):
                    raise ValueError(f"{name} names {where}, which the query does not read")


def _subscribed(given: dict[str, object], topic: str, broker: str, queue_id: int) -> bool:
    topics = given.get("topic", given.get("subscribe"))
    if isinstance(topics, tuple):
        return topic in topics
    pattern = given.get("subscribePattern")
    if isinstance(pattern, str):
        return re.fullmatch(pattern, topic) is not None
    assigned = given["assign"]
    assert isinstance(assigned, dict)
    return queue_id in assigned.get(topic, {}).get(broker, ())


def _check_limits(given: dict[str, object]) -> None:
    low, high = given.get("minOffsetsPerTrigger"), given.get("maxOffsetsPerTrigger")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        raise ValueError(
            f"minOffsetsPerTrigger ({low}) must not be above maxOffsetsPerTrigger ({high})"
        )
    if "maxTriggerDelay" in given and low is None:
        raise ValueError("maxTriggerDelay applies only with minOffsetsPerTrigger")
