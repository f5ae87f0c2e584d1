"""Streaming reads under change (issue 16 "Tests"): AvailableNow's fixed target, a broker
killed and restarted mid-stream, queues added mid-stream (spark-connector.md §5)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from tests.client.conftest import create_everywhere
from tests.cluster import Cluster
from tests.spark.test_read import bodies, produce, source, stream_to

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_available_now_stops_at_the_offsets_of_its_start(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """Trigger.AvailableNow reads what existed when the query started, in capped batches,
    while more arrives: the later messages are left for the next run."""
    asyncio.run(create_everywhere(cluster, "SparkNow", 2))
    produce(cluster, "SparkNow", 60, "a")
    df = source(spark, cluster, "SparkNow", stream=True, startingOffsets="earliest",
                maxOffsetsPerTrigger="10")  # fmt: skip
    out, cp = tmp_path / "out", tmp_path / "cp"
    q = stream_to(df, out, cp, availableNow=True)
    _wait(lambda: bool(q.recentProgress) or not q.isActive, 120)  # it has started
    late = threading.Thread(target=produce, args=(cluster, "SparkNow", 30, "late"))
    late.start()
    q.awaitTermination(180)
    late.join()
    batches = [p["numInputRows"] for p in q.recentProgress]
    assert len(batches) >= 2, batches  # the late ones came while it ran
    assert sorted(bodies(spark, out)) == sorted(f"a{i}".encode() for i in range(60))
    q = stream_to(df, out, cp, availableNow=True)
    q.awaitTermination(180)
    assert len(bodies(spark, out)) == 90


def test_a_broker_killed_and_restarted_mid_stream(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """A running query outlives a broker's SIGKILL and restart: every message exactly once."""
    asyncio.run(create_everywhere(cluster, "SparkKill", 2))
    produce(cluster, "SparkKill", 20, "a")
    df = source(spark, cluster, "SparkKill", stream=True, startingOffsets="earliest")
    out, cp = tmp_path / "out", tmp_path / "cp"
    q = stream_to(df, out, cp, processingTime="500 milliseconds")
    try:
        _wait(lambda: len(_safe_bodies(spark, out)) >= 20, 90)
        cluster.kill_broker("broker-b")
        produce(cluster, "SparkKill", 20, "b")  # all to broker-a meanwhile
        time.sleep(2)
        cluster.start_broker("broker-b")
        time.sleep(2)
        produce(cluster, "SparkKill", 20, "c")
        want = sorted(f"{p}{i}".encode() for p in "abc" for i in range(20))
        _wait(lambda: sorted(_safe_bodies(spark, out)) == want, 120)
        assert q.exception() is None
    finally:
        q.stop()
    assert sorted(bodies(spark, out)) == want  # no duplicate either


def test_queues_added_mid_stream_are_read_from_their_start(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """A topic whose queues grow while the query runs: the new queues are discovered at the
    next batch and read from offset 0 (Kafka's rule for new partitions)."""
    asyncio.run(create_everywhere(cluster, "SparkGrow", 1))
    produce(cluster, "SparkGrow", 10, "a")
    df = source(spark, cluster, "SparkGrow", stream=True, startingOffsets="earliest")
    out, cp = tmp_path / "out", tmp_path / "cp"
    q = stream_to(df, out, cp, processingTime="500 milliseconds")
    try:
        _wait(lambda: len(_safe_bodies(spark, out)) >= 10, 90)
        asyncio.run(_grow(cluster, "SparkGrow", 4))
        time.sleep(2.5)  # the name server hears of the new queues (registration every 1 s)
        produce(cluster, "SparkGrow", 40, "b")
        want = sorted([f"a{i}".encode() for i in range(10)] + [f"b{i}".encode() for i in range(40)])
        _wait(lambda: sorted(_safe_bodies(spark, out)) == want, 120)
    finally:
        q.stop()
    queues = {(r.brokerName, r.queueId) for r in spark.read.parquet(str(out)).collect()}
    assert len(queues) > 2  # new queues were read


async def _grow(cluster: Cluster, topic: str, queues: int) -> None:
    async with RemotingClient() as cli:
        for broker in cluster.brokers.values():
            assert (await cli.invoke(broker.addr, api.create_topic(topic, queues))).code == 0


def _safe_bodies(spark: Any, out: Path) -> list[bytes]:
    try:
        return bodies(spark, out)
    except Exception:  # noqa: BLE001 -- no parquet file written yet
        return []


def _wait(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def test_group_option_commits_processed_offsets(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """The ``group`` option (spark-connector.md §5 rule 1): a batch's end offsets become the
    group's consumer offsets when the next batch starts (commit arrives one batch late), so
    admin tools see the lag; the checkpoint stays what a restart resumes from."""
    asyncio.run(create_everywhere(cluster, "SparkGroup", 1))
    df = source(spark, cluster, "SparkGroup", stream=True, startingOffsets="earliest",
                group="spark_lag")  # fmt: skip
    out, cp = tmp_path / "out", tmp_path / "cp"
    q = stream_to(df, out, cp, processingTime="500 milliseconds")
    try:
        produce(cluster, "SparkGroup", 10, "a")
        _wait(lambda: len(_safe_bodies(spark, out)) >= 10, 90)
        produce(cluster, "SparkGroup", 10, "b")  # the next batch commits the previous one
        _wait(lambda: len(_safe_bodies(spark, out)) >= 20, 90)
        _wait(lambda: asyncio.run(_group_total(cluster, "SparkGroup", "spark_lag")) >= 10, 30)
    finally:
        q.stop()


async def _group_total(cluster: Cluster, topic: str, group: str) -> int:
    total = 0
    async with RemotingClient() as cli:
        for broker in cluster.brokers.values():
            resp = await cli.invoke(broker.addr, api.query_consumer_offset(group, topic, 0))
            if resp.code == 0:
                total += int(resp.ext_fields["offset"])
    return total


def test_stopped_mid_stream_then_restarted(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    """Issue 16 "Tests": a running query stopped while a backlog remains, more produced, then
    restarted from the checkpoint: every message exactly once in the sink output."""
    asyncio.run(create_everywhere(cluster, "SparkStop", 2))
    produce(cluster, "SparkStop", 60, "a")
    df = source(spark, cluster, "SparkStop", stream=True, startingOffsets="earliest",
                maxOffsetsPerTrigger="8")  # fmt: skip
    out, cp = tmp_path / "out", tmp_path / "cp"
    q = stream_to(df, out, cp, processingTime="200 milliseconds")
    _wait(lambda: len(_safe_bodies(spark, out)) > 0, 90)
    q.stop()
    first = len(bodies(spark, out))
    assert 0 < first < 60  # stopped with a backlog left
    produce(cluster, "SparkStop", 20, "b")
    q = stream_to(df, out, cp, availableNow=True)
    q.awaitTermination(180)
    want = [f"a{i}".encode() for i in range(60)] + [f"b{i}".encode() for i in range(20)]
    assert sorted(bodies(spark, out)) == sorted(want)
