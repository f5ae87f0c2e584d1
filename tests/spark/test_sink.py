"""The sink against a real cluster and a local Spark (issue 16 item 6; spark-connector.md
§10 "Sink"): rows written with ``df.write`` / ``df.writeStream`` read back with the SDK's
lite-pull consumer, field by field."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client import MessageQueue, sync
from aiorocketmq.client.consumer.lite.options import PullOptions
from aiorocketmq.client.consumer.types import ConsumeFromWhere
from aiorocketmq.remoting.protocol.message import MessageExt
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster

pytestmark = pytest.mark.spark

FIRST: PullOptions = {"consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}
ROW = "body binary, topic string, tags string, keys string, properties map<string,string>"


def read_back(cluster: Cluster, topic: str, n: int, limit: float = 20.0) -> list[MessageExt]:
    """Every message of ``topic`` (all queues, from offset 0) once ``n`` arrived; then a short
    quiet poll, so extra messages would show too."""
    got: list[MessageExt] = []
    group = f"read_{topic}"
    with sync.PullConsumer(group, cluster.namesrv_addr, **FIRST) as consumer:
        consumer.assign(consumer.fetch_message_queues(topic))
        deadline = time.monotonic() + limit
        while len(got) < n and time.monotonic() < deadline:
            got += consumer.poll(0.5)
        got += consumer.poll(0.3)
    return got


def user_props(msg: MessageExt, names: list[str]) -> dict[str, str]:
    return {k: msg.properties[k] for k in names if k in msg.properties}


def append(df: Any, cluster: Cluster, **options: str) -> None:
    writer = df.write.format("rocketmq").mode("append").option("nameServer", cluster.namesrv_addr)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def test_batch_write_round_trip(spark: Any, cluster: Cluster) -> None:
    """Item 6: every row of ``df.write`` arrives once, in the topic its column names, with its
    body, tags, keys and properties (two topics in one DataFrame, batched sends)."""
    for topic in ("SinkRoundA", "SinkRoundB"):
        asyncio.run(create_everywhere(cluster, topic))
    rows = [
        (b"body-%03d" % i, "SinkRoundA" if i % 3 else "SinkRoundB",
         f"tag{i % 4}" if i % 5 else None, f"k{i} kk{i}" if i % 2 else None,
         {"p": str(i), "q": "x"} if i % 7 else None)
        for i in range(300)
    ]  # fmt: skip
    append(spark.createDataFrame(rows, ROW).repartition(2), cluster, batchSize="16")
    got = read_back(cluster, "SinkRoundA", 200) + read_back(cluster, "SinkRoundB", 100)
    seen = sorted(
        (m.body, m.topic, m.tags, m.properties.get("KEYS"), user_props(m, ["p", "q"])) for m in got
    )
    want = sorted((b, t, g, k, p or {}) for b, t, g, k, p in rows)
    assert seen == want


def test_topic_option_wins_string_body_array_keys(spark: Any, cluster: Cluster) -> None:
    """Item 6 (§8.3, as Kafka's sink): the topic option wins over the topic column; a string
    body is sent as its UTF-8 bytes; array<string> keys become KEYS separated by spaces."""
    asyncio.run(create_everywhere(cluster, "SinkOption"))
    df = spark.createDataFrame(
        [(f"héllo-{i}", "SinkNotThis", [f"a{i}", "b"]) for i in range(20)],
        "body string, topic string, keys array<string>",
    )
    append(df, cluster, topic="SinkOption")
    got = read_back(cluster, "SinkOption", 20)
    assert sorted((m.body, m.properties.get("KEYS")) for m in got) == sorted(
        (f"héllo-{i}".encode(), f"a{i} b") for i in range(20)
    )


def test_queue_id_routes_to_that_queue(spark: Any, cluster: Cluster) -> None:
    """Item 6: a row with a queueId goes to that queue of the first broker (name order) with
    it, rows of one queue in row order; a null queueId lets the producer choose."""
    asyncio.run(create_everywhere(cluster, "SinkQueues"))
    rows = [(b"m%03d" % i, i % 4 if i % 10 else None) for i in range(120)]
    df = spark.createDataFrame(rows, "body binary, queueId int").coalesce(1)
    append(df, cluster, topic="SinkQueues", batchSize="2")
    got = read_back(cluster, "SinkQueues", 120)
    assert sorted(m.body for m in got) == sorted(b for b, _ in rows)
    for queue_id in range(4):
        in_queue = [m.body for m in got if m.broker_name == "broker-a" and m.queue_id == queue_id]
        pinned = [b for b, q in rows if q == queue_id]
        assert [b for b in in_queue if b in set(pinned)] == pinned  # row order
    chosen = {
        (m.broker_name, m.queue_id) for m in got if m.body in {b for b, q in rows if q is None}
    }
    assert len(chosen) > 1, chosen


def test_queue_id_that_does_not_exist_fails_the_task(spark: Any, cluster: Cluster) -> None:
    """Item 6: a queueId the topic does not have fails the write with a message naming it and
    the queues there are."""
    asyncio.run(create_everywhere(cluster, "SinkNoQueue", queues=2))
    df = spark.createDataFrame([(b"x", 7)], "body binary, queueId int").coalesce(1)
    with pytest.raises(Exception, match=r"queueId 7 is not a writable queue of topic SinkNoQueue"):
        append(df, cluster, topic="SinkNoQueue")


BAD_OPTIONS = [
    ({"nameServer": None}, "nameServer is required"),
    ({"startingOffsets": "earliest"}, "unknown option.*startingoffsets"),
    ({"batchSize": "0"}, "batchSize must be a positive integer, got '0'"),
    ({"sendTimeoutMs": "soon"}, "sendTimeoutMs must be a positive integer"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_bad_options_each_give_their_message(
    spark: Any, cluster: Cluster, options: dict[str, str | None], message: str
) -> None:
    """Item 6 / issue 16 item 3: a bad option fails the write before any task, naming it."""
    writer = spark.createDataFrame([(b"x",)], "body binary").write.format("rocketmq")
    writer = writer.mode("append").option("topic", "SinkBad")
    for key, value in {"nameServer": cluster.namesrv_addr, **options}.items():
        if value is not None:
            writer = writer.option(key, value)
    with pytest.raises(Exception, match=message):
        writer.save()


BAD_COLUMNS = [
    ("body binary, partition int", "unknown column.*partition"),
    ("topic string, tags string", "has no body column"),
    ("body int", "column body must be binary or string, not int"),
    ("body binary, keys map<string,string>", "column keys must be string or array<string>"),
    ("body binary, tags string", "no topic: set the topic option or add a topic column"),
]


@pytest.mark.parametrize(("ddl", "message"), BAD_COLUMNS)
def test_bad_columns_each_give_their_message(
    spark: Any, cluster: Cluster, ddl: str, message: str
) -> None:
    """Item 6: unknown, missing or mistyped columns fail the write before any task."""
    df = spark.createDataFrame([], ddl)
    writer = df.write.format("rocketmq").mode("append").option("nameServer", cluster.namesrv_addr)
    with pytest.raises(Exception, match=message):
        writer.save()


def test_save_modes_other_than_append_are_refused(spark: Any, cluster: Cluster) -> None:
    """Item 6: overwrite is refused by the sink; ErrorIfExists (the default) and Ignore by
    Spark itself for a Python data source."""
    df = spark.createDataFrame([(b"x",)], "body binary")
    writer = df.write.format("rocketmq").option("nameServer", cluster.namesrv_addr)
    writer = writer.option("topic", "SinkModes")
    with pytest.raises(Exception, match=r'only mode\("append"\) is supported'):
        writer.mode("overwrite").save()
    for mode in ("error", "ignore"):
        with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            writer.mode(mode).save()


def test_null_body_fails_the_task(spark: Any, cluster: Cluster) -> None:
    """Item 6: a null body is an error naming it, not an empty message."""
    df = spark.createDataFrame([(b"x",), (None,)], "body binary").coalesce(1)
    with pytest.raises(Exception, match="has a null body"):
        append(df, cluster, topic="SinkNullBody")


def test_failed_send_fails_the_task(spark: Any) -> None:
    """Item 6: a send that fails (here: no name server answers) fails the task with a message
    saying what was stored and that a retry sends rows again (at-least-once)."""
    df = spark.createDataFrame([(b"x",)], "body binary").coalesce(1)
    writer = df.write.format("rocketmq").mode("append").option("nameServer", "127.0.0.1:1")
    writer = writer.option("topic", "SinkDead").option("sendTimeoutMs", "300")
    with pytest.raises(Exception, match=r"a send failed after this task stored 0 messages"):
        writer.save()


def test_stream_write_delivers_every_row(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    """Item 6: ``df.writeStream.format("rocketmq")`` (append output mode) from a bounded file
    stream delivers every row (at least once; here, with no failure, exactly once)."""
    asyncio.run(create_everywhere(cluster, "SinkStream"))
    rows = [(f"s{i:03}", f"t{i % 3}") for i in range(150)]
    spark.createDataFrame(rows, "body string, tags string").repartition(2).write.parquet(
        str(tmp_path / "in")
    )
    query = (
        spark.readStream.schema("body string, tags string")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(tmp_path / "in"))
        .writeStream.format("rocketmq")
        .option("nameServer", cluster.namesrv_addr)
        .option("topic", "SinkStream")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(60)
    assert query.exception() is None
    assert len([p for p in query.recentProgress if p["numInputRows"]]) == 2  # one per file
    got = read_back(cluster, "SinkStream", 150)
    assert sorted((m.body, m.tags) for m in got) == sorted((b.encode(), t) for b, t in rows)


def test_stream_complete_mode_is_refused(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    """Item 6: a stream's complete output mode reaches the sink as overwrite: refused."""
    spark.createDataFrame([("a",)], "body string").write.parquet(str(tmp_path / "in"))
    query = (
        spark.readStream.schema("body string")
        .parquet(str(tmp_path / "in"))
        .groupBy("body")
        .count()
        .select("body")
        .writeStream.format("rocketmq")
        .outputMode("complete")
        .option("nameServer", cluster.namesrv_addr)
        .option("topic", "SinkComplete")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="only the append output mode is supported"):
        query.awaitTermination(60)


def test_queue_ids_resolve_in_broker_name_order() -> None:
    """Item 6: the documented queueId rule, on the producer's queue list."""
    from aiorocketmq.client import Message
    from aiorocketmq.spark.sink_send import NoSuchQueueError, by_queue_id

    queues = [MessageQueue("T", b, q) for b in ("broker-a", "broker-b") for q in range(2)]
    queues += [MessageQueue("T", "broker-b", 2)]
    msg = Message("T", b"x")
    assert by_queue_id(queues, msg, 1) == MessageQueue("T", "broker-a", 1)
    assert by_queue_id(queues, msg, 2) == MessageQueue("T", "broker-b", 2)
    with pytest.raises(NoSuchQueueError, match="queueId 3 is not a writable queue of topic T"):
        by_queue_id(queues, msg, 3)
