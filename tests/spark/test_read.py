"""The rocketmq source against a real cluster and a local Spark session (issue 16 "Tests";
spark-connector.md §5 offsets and replay, §6 Arrow rows, §10 options)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def produce(cluster: Cluster, topic: str, n: int, prefix: str = "m", **kw: Any) -> list[Any]:
    with Producer("pg_spark", namesrv_addr=cluster.namesrv_addr) as p:
        return [p.send(Message(topic, f"{prefix}{i}".encode(), **kw)) for i in range(n)]


def source(spark: Any, cluster: Cluster, topic: str, stream: bool = False, **opts: str) -> Any:
    reader = spark.readStream if stream else spark.read
    reader = reader.format("rocketmq").option("nameServer", cluster.namesrv_addr)
    reader = reader.option("subscribe", topic)
    for k, v in opts.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_read_every_field(spark: Any, cluster: Cluster) -> None:
    """Issue 16 item 2: every message once, every column as stored."""
    asyncio.run(create_everywhere(cluster, "SparkBatch", 2))
    before = int(time.time() * 1000)
    sent = produce(cluster, "SparkBatch", 20, tags="TagA", keys=["k1", "k2"],
                   properties={"p": "v"})  # fmt: skip
    rows = source(spark, cluster, "SparkBatch").collect()
    assert sorted(r.body for r in rows) == sorted(f"m{i}".encode() for i in range(20))
    by_id = {r.msgId: r for r in rows}
    assert set(by_id) == {s.msg_id for s in sent}
    for s in sent:
        r = by_id[s.msg_id]
        assert (r.topic, r.brokerName, r.queueId, r.queueOffset) == (
            "SparkBatch", s.queue.broker_name, s.queue.queue_id, s.queue_offset)  # fmt: skip
        assert r.tags == "TagA" and r.keys == "k1 k2" and r.properties["p"] == "v"
        assert r.reconsumeTimes == 0 and r.storeHost.startswith("127.0.0.1:")
        assert before - 1000 <= r.bornTimestamp.timestamp() * 1000 <= time.time() * 1000
        assert r.storeTimestamp >= r.bornTimestamp


def test_batch_offsets_tags_and_properties_off(spark: Any, cluster: Cluster) -> None:
    """startingOffsets / endingOffsets JSON (end exclusive), subExpression filters exactly,
    includeProperties=false leaves properties null."""
    asyncio.run(create_everywhere(cluster, "SparkRange", 1))
    produce(cluster, "SparkRange", 10, tags="TagA")
    produce(cluster, "SparkRange", 10, "n", tags="TagB")
    df = source(spark, cluster, "SparkRange", subExpression="TagB", includeProperties="false")
    rows = df.collect()
    assert sorted(r.body for r in rows) == sorted(f"n{i}".encode() for i in range(10))
    assert all(r.properties is None for r in rows)
    start = {"SparkRange": {"broker-a": {"0": 2}, "broker-b": {"0": 2}}}
    end = {"SparkRange": {"broker-a": {"0": 5}, "broker-b": {"0": -1}}}
    df = source(spark, cluster, "SparkRange", startingOffsets=json.dumps(start),
                endingOffsets=json.dumps(end))  # fmt: skip
    got = {(r.brokerName, r.queueOffset) for r in df.collect()}
    high = max(o for b, o in got if b == "broker-b")
    assert {o for b, o in got if b == "broker-a"} == {2, 3, 4}
    assert {o for b, o in got if b == "broker-b"} == set(range(2, high + 1))


def test_starting_timestamp(spark: Any, cluster: Cluster) -> None:
    """startingTimestamp: the first message stored at or after the time, per queue."""
    asyncio.run(create_everywhere(cluster, "SparkTime", 2))
    produce(cluster, "SparkTime", 10, "old")
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    produce(cluster, "SparkTime", 10, "new")
    rows = source(spark, cluster, "SparkTime", startingTimestamp=str(cut)).collect()
    assert sorted(r.body for r in rows) == sorted(f"new{i}".encode() for i in range(10))


def test_bad_options_say_which(spark: Any, cluster: Cluster) -> None:
    """Unknown and conflicting options: an error naming the option (camelCase)."""
    with pytest.raises(Exception, match="maxOffsetsPerTrigger"):
        source(spark, cluster, "SparkBatch", maxOffsetsPerTrigger="many").collect()
    with pytest.raises(Exception, match=r"(?i)unknown option .nosuchoption"):  # Spark lower-cases
        source(spark, cluster, "SparkBatch", noSuchOption="1").collect()
    with pytest.raises(Exception, match="fixed schema"):
        spark.read.format("rocketmq").schema("a INT").option("nameServer", "x").load().collect()


def stream_to(df: Any, out: Path, checkpoint: Path, **trigger: Any) -> Any:
    return (df.writeStream.format("parquet").option("path", str(out))
            .option("checkpointLocation", str(checkpoint)).trigger(**trigger).start())  # fmt: skip


def bodies(spark: Any, out: Path) -> list[bytes]:
    return [r.body for r in spark.read.parquet(str(out)).select("body").collect()]


def test_stream_restart_from_checkpoint_exactly_once(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """§5: AvailableNow reads what exists at start and stops; a restart from the checkpoint
    reads only what came since: every message exactly once in the sink."""
    asyncio.run(create_everywhere(cluster, "SparkStream", 2))
    produce(cluster, "SparkStream", 30, "a")
    out, cp = tmp_path / "out", tmp_path / "cp"
    df = source(spark, cluster, "SparkStream", stream=True, startingOffsets="earliest")
    q = stream_to(df, out, cp, availableNow=True)
    q.awaitTermination(120)
    assert sorted(bodies(spark, out)) == sorted(f"a{i}".encode() for i in range(30))
    produce(cluster, "SparkStream", 20, "b")
    q = stream_to(df, out, cp, availableNow=True)
    q.awaitTermination(120)
    got = bodies(spark, out)
    want = [f"a{i}".encode() for i in range(30)] + [f"b{i}".encode() for i in range(20)]
    assert sorted(got) == sorted(want)  # no gap, no duplicate


def test_max_offsets_per_trigger(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    """maxOffsetsPerTrigger caps each micro-batch (AvailableNow runs several)."""
    asyncio.run(create_everywhere(cluster, "SparkCap", 2))
    produce(cluster, "SparkCap", 40)
    df = source(spark, cluster, "SparkCap", stream=True, startingOffsets="earliest",
                maxOffsetsPerTrigger="10")  # fmt: skip
    q = stream_to(df, tmp_path / "out", tmp_path / "cp", availableNow=True)
    q.awaitTermination(120)
    counts = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(counts) == 40 and max(counts) <= 10 + 4, counts  # 4 queues round a share up
    assert len(bodies(spark, tmp_path / "out")) == 40


def test_sink_round_trip_through_the_source(spark: Any, cluster: Cluster) -> None:
    """Issue 16 "Tests": DataFrame -> topic (sink) -> DataFrame (source), equal."""
    asyncio.run(create_everywhere(cluster, "SparkTrip", 2))
    rows = [(f"r{i}".encode(), f"T{i % 3}", f"k{i}", {"n": str(i)}) for i in range(50)]
    df = spark.createDataFrame(rows, "body binary, tags string, keys string, "
                                     "properties map<string,string>")  # fmt: skip
    (df.write.format("rocketmq").mode("append").option("nameServer", cluster.namesrv_addr)
     .option("topic", "SparkTrip").save())  # fmt: skip
    back = source(spark, cluster, "SparkTrip").select("body", "tags", "keys", "properties")
    got = sorted((r.body, r.tags, r.keys, r.properties["n"]) for r in back.collect())
    assert got == sorted((b, t, k, p["n"]) for b, t, k, p in rows)
