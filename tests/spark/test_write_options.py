"""Sink options with no Spark session and no cluster (issue 16 items 3 and 6;
spark-connector.md §2 lower-cased keys, §10 the sink's options)."""

from __future__ import annotations

import re

import pytest

from aiorocketmq.spark.options import WRITE_OPTIONS, WriteOptions, write_options
from tests.spark.test_options import SECURITY

NS = {"nameserver": "127.0.0.1:9876"}


def test_write_options() -> None:
    """§10 sink options: nameServer required, topic optional (it wins over the column)."""
    assert write_options(NS, streaming=False) == WriteOptions(name_server="127.0.0.1:9876")
    w = write_options(
        {
            "NameServer": "h:1",
            "topic": " out ",
            "producergroup": "pg",
            "sendtimeoutms": "5000",
            "batchsize": "64",
        },
        streaming=False,
    )
    assert w == WriteOptions("h:1", "out", "pg", 5000, 64)
    assert sorted(WRITE_OPTIONS) == sorted(
        ["nameServer", "topic", "producerGroup", "sendTimeoutMs", "batchSize", "exactlyOnce",
         *SECURITY]
    )  # fmt: skip
    assert write_options(NS | {"exactlyonce": "true"}, streaming=False).exactly_once


def test_stream_sink_ignores_spark_own_keys() -> None:
    """Observed with pyspark 4.3: a streaming sink is handed checkpointLocation and queryName;
    a batch sink is not, so there they are unknown. The checkpoint is kept (exactlyOnce keeps
    its commit log there)."""
    spark_keys = {"checkpointlocation": "/tmp/c", "queryname": "q"}
    assert write_options(NS | spark_keys, streaming=True) == WriteOptions(
        "127.0.0.1:9876", checkpoint_location="/tmp/c"
    )
    with pytest.raises(
        ValueError, match="unknown option 'checkpointlocation' for the rocketmq sink"
    ):
        write_options(NS | spark_keys, streaming=False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "nameServer is required"),
        (NS | {"topic": "a,b"}, "topic: 'a,b' is not a valid topic name"),
        (NS | {"topic": ""}, "topic: '' is not a valid topic name"),
        (NS | {"producergroup": " "}, "producerGroup must not be blank"),
        (NS | {"sendtimeoutms": "0"}, "sendTimeoutMs must be a positive integer, got '0'"),
        (NS | {"batchsize": "many"}, "batchSize must be a positive integer, got 'many'"),
        (
            NS | {"subscribe": "t"},
            "unknown option 'subscribe' for the rocketmq sink; the options are nameServer, topic, "
            "producerGroup, sendTimeoutMs, batchSize",
        ),
        (
            NS | {"path": "/out"},
            "the rocketmq sink takes no path: call save() or start() without one",
        ),
    ],
)
@pytest.mark.parametrize("streaming", [False, True])
def test_bad_write_options(options: dict[str, str], message: str, streaming: bool) -> None:
    """Issue 16 item 3: the sink's errors name the option in camelCase too."""
    with pytest.raises(ValueError, match=re.escape(message)):
        write_options(options, streaming=streaming)
