"""Source and sink options with no Spark session and no cluster (issue 16 item 3;
spark-connector.md §2 lower-cased keys, §8.2 Kafka's names and rules, §10 the options table).
Spark hands the keys lower-cased, so most cases here pass them that way."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.client import MessageSelector
from aiorocketmq.spark.access import Access
from aiorocketmq.spark.options import (
    READ_OPTIONS,
    WRITE_OPTIONS,
    ReadOptions,
    WriteOptions,
    read_options,
)

NS = {"nameserver": "127.0.0.1:9876"}
# issue 32: the source's and the sink's credentials and TLS (tests/spark/test_access_options.py)
SECURITY = ["accessKey", "secretKey", "securityToken", "tls", "tls.caFile", "tls.certFile",
            "tls.keyFile", "tls.keyPassword", "tls.checkHostname"]  # fmt: skip
BASE = NS | {"topic": "t"}


def read(streaming: bool = True, **options: str) -> ReadOptions:
    return read_options(BASE | {k.lower(): v for k, v in options.items()}, streaming=streaming)


def refused(message: str, options: dict[str, str], *, streaming: bool = True) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        read_options(options, streaming=streaming)


def test_defaults_follow_kafka() -> None:
    """§10: latest for streams, earliest for batch, 15m delay, failOnDataLoss true, 32/3000."""
    stream = read_options(BASE, streaming=True)
    assert stream == ReadOptions(name_server="127.0.0.1:9876", topics=("t",))
    assert stream.starting_offsets == "latest"
    assert stream.ending_offsets == "latest"
    assert stream.sub_expression == "*"
    assert stream.max_trigger_delay_ms == 15 * 60 * 1000
    assert (stream.fail_on_data_loss, stream.include_properties) == (True, True)
    assert (stream.pull_batch_size, stream.pull_timeout_ms) == (1024, 3000)
    assert stream.group is None and stream.min_partitions is None
    assert read_options(BASE, streaming=False).starting_offsets == "earliest"


def test_every_option_parsed_with_any_key_case() -> None:
    """§2: keys arrive lower-cased, but any case is accepted; every value parsed."""
    stream = read_options(
        {
            "NAMESERVER": " a:1 ; b:2 ;",
            "subscribe": "t1, t2,,t1",
            "subExpression": "TagA || TagB",
            "startingoffsets": '{"t2": {"broker-b": {"10": -2, "2": 7}}, "t1": {"a": {"0": -1}}}',
            "startingTimestamp": "1700000000000",
            "maxoffsetspertrigger": "100",
            "minOffsetsPerTrigger": "10",
            "maxtriggerdelay": "30s",
            "minpartitions": "8",
            "failondataloss": "FALSE",
            "pullbatchsize": "64",
            "pulltimeoutms": "120000",
            "group": "spark_lag",
            "includeproperties": "false",
        },
        streaming=True,
    )
    assert stream == ReadOptions(
        name_server="a:1;b:2",
        topics=("t1", "t2"),
        sub_expression="TagA || TagB",
        starting_offsets={"t1": {"a": {"0": -1}}, "t2": {"broker-b": {"2": 7, "10": -2}}},
        starting_timestamp=1_700_000_000_000,
        max_offsets_per_trigger=100,
        min_offsets_per_trigger=10,
        max_trigger_delay_ms=30_000,
        min_partitions=8,
        fail_on_data_loss=False,
        pull_batch_size=64,
        pull_timeout_ms=120_000,
        group="spark_lag",
        include_properties=False,
    )
    assert list(stream.starting_offsets["t2"]["broker-b"]) == ["2", "10"]  # type: ignore[index]


def test_batch_only_options() -> None:
    """§8.2: endingOffsets / endingTimestamp bound a batch read."""
    batch = read_options(
        NS
        | {
            "assign": '{"t": {"broker-b": [3, 1, 1], "broker-a": [0]}}',
            "startingoffsets": "EARLIEST",
            "endingoffsets": '{"t": {"broker-a": {"0": 100}, "broker-b": {"1": -1}}}',
            "endingtimestamp": "1700000000999",
        },
        streaming=False,
    )
    assert batch.topics == ()
    assert batch.assign == {"t": {"broker-a": (0,), "broker-b": (1, 3)}}
    assert batch.starting_offsets == "earliest"
    assert batch.ending_offsets == {"t": {"broker-a": {"0": 100}, "broker-b": {"1": -1}}}
    assert batch.ending_timestamp == 1_700_000_000_999
    assert read(False, endingOffsets=" Latest ").ending_offsets == "latest"


def test_subscriptions() -> None:
    """§8.2: exactly one of topic / subscribe (comma lists) / subscribePattern / assign."""
    assert read(topic=" a ,b").topics == ("a", "b")
    pattern = read_options(NS | {"subscribepattern": r"orders-\d+"}, streaming=True)
    assert (pattern.topics, pattern.pattern, pattern.assign) == ((), r"orders-\d+", None)
    refused(
        "exactly one of topic, subscribe, subscribePattern or assign is required (got none)", NS
    )
    refused("(got topic, subscribe)", BASE | {"subscribe": "b"})
    both = BASE | {"subscribepattern": "x", "assign": '{"t": {"b": [0]}}'}
    refused("(got topic, subscribePattern, assign)", both)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topic": "t"}, "nameServer is required: the name servers as host:port[;host:port]"),
        (
            BASE | {"nameserver": "localhost"},
            "nameServer must be host:port[;host:port], got 'localhost'",
        ),
        (
            BASE | {"nameserver": "a:1;b:x"},
            "nameServer must be host:port[;host:port], got 'a:1;b:x'",
        ),
        (BASE | {"nameserver": " ; "}, "nameServer must be host:port"),
        (BASE | {"nameserver": "h:0"}, "nameServer must be host:port"),
        (NS | {"topic": " , "}, "topic must name at least one topic, got ' , '"),
        (NS | {"subscribe": "a,b c"}, "subscribe: 'b c' is not a valid topic name"),
        (NS | {"topic": "x" * 128}, "is not a valid topic name (at most 127"),
        (NS | {"subscribepattern": "a("}, "subscribePattern is not a valid regular expression"),
        (NS | {"subscribepattern": ""}, "subscribePattern must be a non-empty regular expression"),
        (NS | {"assign": "{"}, "assign must be JSON {topic: {brokerName: [queueId, ...]}}"),
        (NS | {"assign": "{}"}, "assign must be JSON"),
        (NS | {"assign": '{"t": ["0"]}'}, "assign must be JSON"),
        (NS | {"assign": '{"t": {"b": []}}'}, "; t/'b' maps to []"),
        (NS | {"assign": '{"t": {"b": [-1]}}'}, "; t/'b' maps to [-1]"),
        (NS | {"assign": '{"t": {"b": [true]}}'}, "assign must be JSON"),
        (BASE | {"subexpression": "  "}, "subExpression must not be blank"),
        (BASE | {"expressiontype": "sql"}, "expressionType must be TAG or SQL92, got 'sql'"),
        (
            BASE | {"expressiontype": "SQL92"},
            "expressionType SQL92 needs subExpression: the SQL92 expression",
        ),
        (BASE | {"startingoffsets": "first"}, "startingOffsets must be earliest, latest or JSON"),
        (BASE | {"startingoffsets": "{"}, "startingOffsets is not valid JSON"),
        (
            BASE | {"startingoffsets": '{"t": {"b": {"0": -3}}}'},
            "startingOffsets: t/b/0 must be an offset >= 0 or -2 or -1, got -3",
        ),
        (
            BASE | {"startingoffsets": '{"u": {"b": {"0": 1}}}'},
            "startingOffsets names u/b/0, which the query does not read",
        ),
        (
            BASE | {"startingtimestamp": "-5"},
            "startingTimestamp must be a timestamp in milliseconds since the epoch, got '-5'",
        ),
        (
            BASE | {"maxoffsetspertrigger": "x"},
            "maxOffsetsPerTrigger must be a positive integer, got 'x'",
        ),
        (
            BASE | {"maxoffsetspertrigger": "0"},
            "maxOffsetsPerTrigger must be a positive integer, got '0'",
        ),
        (
            BASE | {"minoffsetspertrigger": "-1"},
            "minOffsetsPerTrigger must be a positive integer, got '-1'",
        ),
        (
            BASE | {"minoffsetspertrigger": "5", "maxtriggerdelay": "soon"},
            "maxTriggerDelay must be a positive duration such as 15m",
        ),
        (
            BASE | {"minoffsetspertrigger": "5", "maxtriggerdelay": "0s"},
            "maxTriggerDelay must be a positive duration",
        ),
        (BASE | {"minpartitions": "1.5"}, "minPartitions must be a positive integer, got '1.5'"),
        (BASE | {"failondataloss": "yes"}, "failOnDataLoss must be true or false, got 'yes'"),
        (BASE | {"pullbatchsize": "0"}, "pullBatchSize must be a positive integer, got '0'"),
        (BASE | {"pulltimeoutms": ""}, "pullTimeoutMs must be a positive integer, got ''"),
        (BASE | {"group": "a b"}, "group: The specified group contains illegal characters"),
        (
            BASE | {"group": "DEFAULT_CONSUMER"},
            "group: consumerGroup can not equal DEFAULT_CONSUMER",
        ),
        (BASE | {"includeproperties": "1"}, "includeProperties must be true or false, got '1'"),
    ],
)
def test_bad_values_name_the_option(options: dict[str, str], message: str) -> None:
    """Issue 16 item 3: each bad value gives a message naming the option in camelCase."""
    refused(message, options)


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        (
            {"endingoffsets": "latest"},
            True,
            "endingOffsets applies to batch queries only (spark.read), not to streams",
        ),
        ({"endingtimestamp": "5"}, True, "endingTimestamp applies to batch queries only"),
        (
            {"maxoffsetspertrigger": "5"},
            False,
            "maxOffsetsPerTrigger applies to streaming queries only (spark.readStream)",
        ),
        (
            {"minoffsetspertrigger": "5"},
            False,
            "minOffsetsPerTrigger applies to streaming queries only",
        ),
        ({"maxtriggerdelay": "5m"}, False, "maxTriggerDelay applies to streaming queries only"),
        (
            {"startingoffsets": "latest"},
            False,
            "startingOffsets can't be latest for a batch query (streams only)",
        ),
        (
            {"startingoffsets": '{"t": {"b": {"0": -1}}}'},
            False,
            "startingOffsets can't be latest (-1) for a batch query, as for t/b/0",
        ),
        (
            {"endingoffsets": "earliest"},
            False,
            "endingOffsets must be latest or JSON {topic: {brokerName: {queueId: offset}}} "
            "(-1 for latest), got 'earliest'",
        ),
        (
            {"endingoffsets": '{"t": {"b": {"0": -2}}}'},
            False,
            "endingOffsets: t/b/0 must be an offset >= 0 or -1, got -2",
        ),
        (
            {"endingoffsets": '{"x": {"b": {"0": 2}}}'},
            False,
            "endingOffsets names x/b/0, which the query does not read",
        ),
        (
            {"startingtimestamp": "10", "endingtimestamp": "9"},
            False,
            "endingTimestamp (9) is before startingTimestamp (10)",
        ),
        (
            {"minoffsetspertrigger": "11", "maxoffsetspertrigger": "10"},
            True,
            "minOffsetsPerTrigger (11) must not be above maxOffsetsPerTrigger (10)",
        ),
        ({"maxtriggerdelay": "5m"}, True, "maxTriggerDelay applies only with minOffsetsPerTrigger"),
    ],
)
def test_conflicts_are_refused(options: dict[str, str], streaming: bool, message: str) -> None:
    """§8.2: options of the other query kind and contradicting ones are refused."""
    refused(message, BASE | options, streaming=streaming)


def test_json_offsets_must_name_subscribed_queues() -> None:
    """§10: startingOffsets JSON may only name queues the query reads (pattern: full match)."""
    pattern = NS | {"subscribepattern": "orders-[0-9]+"}
    offsets = '{"orders-1": {"b": {"0": 5}}}'
    assert read_options(pattern | {"startingoffsets": offsets}, streaming=True).starting_offsets
    refused(
        "startingOffsets names orders-1x/b/0",
        pattern | {"startingoffsets": '{"orders-1x": {"b": {"0": 5}}}'},
    )
    assigned = NS | {"assign": '{"t": {"b": [0, 1]}}'}
    assert read_options(assigned | {"startingoffsets": '{"t": {"b": {"1": 5}}}'}, streaming=True)
    refused("names t/b/2", assigned | {"startingoffsets": '{"t": {"b": {"2": 5}}}'})
    refused("names t/c/0", assigned | {"startingoffsets": '{"t": {"c": {"0": 5}}}'})


def test_unknown_repeated_and_path_options() -> None:
    """§2: unknown keys are refused with the list of options; load(path) is refused."""
    with pytest.raises(
        ValueError,
        match=r"unknown option 'kafka\.bootstrap\.servers' for the "
        r"rocketmq source; the options are nameServer, topic, subscribe, ",
    ):
        read_options(BASE | {"kafka.bootstrap.servers": "x"}, streaming=True)
    refused("topic is given twice", BASE | {"TOPIC": "u"})
    refused("the rocketmq source takes no path: call load() without one", BASE | {"path": "/x"})
    refused("unknown option 'checkpointlocation'", BASE | {"checkpointlocation": "/c"})
    not_text: dict[str, object] = BASE | {"startingoffsets": 5}
    with pytest.raises(ValueError, match="startingOffsets must be given as a string, got 5"):
        read_options(not_text, streaming=True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("15m", 900_000),
        ("30s", 30_000),
        ("500ms", 500),
        ("1h", 3_600_000),
        ("2", 2),
        ("1d", 86_400_000),
        ("2min", 120_000),
        (" 3 S ", 3_000),
        ("2500us", 2),
    ],
)
def test_max_trigger_delay_durations(text: str, ms: int) -> None:
    """§8.2: Spark's duration spellings (JavaUtils.timeStringAsMs), plain digits in ms."""
    assert read(minOffsetsPerTrigger="1", maxTriggerDelay=text).max_trigger_delay_ms == ms


def test_expression_type_makes_the_subscription_sql92() -> None:
    """expressionType (TAG by default, or SQL92, any case): how subExpression is read; the
    pulls carry it as a MessageSelector."""
    assert read().selector == MessageSelector.by_tag("*")
    assert read(subExpression="TagA").selector == MessageSelector.by_tag("TagA")
    sql = read(subExpression="a > 5 AND b = 'x'", expressionType="sql92")
    assert sql.expression_type == "SQL92"
    assert sql.selector == MessageSelector.by_sql("a > 5 AND b = 'x'")


@given(st.sampled_from(sorted(READ_OPTIONS)), st.randoms())
def test_any_case_of_a_key_is_the_same_option(name: str, rnd: random.Random) -> None:
    """§2: a key in any mix of cases reaches the same option (its bad value is reported)."""
    key = "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in name)
    bad = "(" if name == "subscribePattern" else " "
    options = {k: v for k, v in BASE.items() if k != name.lower()} | {key: bad}
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        batch_only = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp", "pushFilters")
        read_options(options, streaming=name not in batch_only)


def test_the_option_tables_are_the_issues() -> None:
    """Issue 16 item 3: the source's options, with Kafka's names where the concept exists."""
    assert list(READ_OPTIONS) == [
        "nameServer",
        "topic",
        "subscribe",
        "subscribePattern",
        "assign",
        "subExpression",
        "expressionType",
        "startingOffsets",
        "startingTimestamp",
        "startingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy",
        "endingOffsets",
        "endingTimestamp",
        "endingOffsetsByTimestamp",
        "maxOffsetsPerTrigger",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "minPartitions",
        "failOnDataLoss",
        "pullBatchSize",
        "pullTimeoutMs",
        "group",
        "includeProperties",
        "pushFilters",
        *SECURITY,
    ]
    # every option is a field: of the options, or of their ``access`` (credentials and TLS)
    access = {READ_OPTIONS[name].field for name in SECURITY}
    assert access == set(Access.__dataclass_fields__)
    fields = set(ReadOptions.__dataclass_fields__) - {"access"}
    assert {spec.field for spec in READ_OPTIONS.values()} - access == fields
    # (a stream's checkpoint_location is Spark's own key, handed to the sink)
    fields = set(WriteOptions.__dataclass_fields__) - {"access", "checkpoint_location"}
    assert {spec.field for spec in WRITE_OPTIONS.values()} - access == fields


# -- sink --------------------------------------------------------------------------------------
