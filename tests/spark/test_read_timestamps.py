"""Kafka's start and end by time (issue 34 item 2): startingOffsetsByTimestamp, its strategy
and endingOffsetsByTimestamp, resolved by SEARCH_OFFSET_BY_TIMESTAMP on real brokers.

Messages come in two waves with the clock polled past the first wave's last store time in
between, so every second-wave message is stored after every first-wave one; the expected
rows are computed from the store times the source itself reports (a queue's store times are
in order), never from a sleep."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.client.conftest import create_everywhere
from tests.cluster import Cluster
from tests.spark.test_read import bodies, produce, source, stream_to
from tests.util import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]

Row = tuple[str, int, int, int, bytes]  # brokerName, queueId, queueOffset, store ms, body


def two_waves(spark: Any, cluster: Cluster, topic: str) -> list[Row]:
    """16 "a" then 16 "b" messages over the topic's 4 queues (2 per broker), every "b" stored
    after every "a"; every row as the source reads it."""
    asyncio.run(create_everywhere(cluster, topic, 2))
    produce(cluster, topic, 16, "a")
    last = max(r[3] for r in read_all(spark, cluster, topic))
    asyncio.run(wait_until(lambda: time.time() * 1000 > last + 1, 10))
    produce(cluster, topic, 16, "b")
    rows = read_all(spark, cluster, topic)
    assert len(rows) == 32
    return rows


def read_all(spark: Any, cluster: Cluster, topic: str, **opts: str) -> list[Row]:
    df = source(spark, cluster, topic, False, **opts)
    return sorted(
        (r.brokerName, r.queueId, r.queueOffset, _ms(r.storeTimestamp), r.body)
        for r in df.collect()
    )


def _ms(t: Any) -> int:
    seconds: float = t.timestamp()
    return round(seconds * 1000)


def by_queue(rows: list[Row]) -> dict[tuple[str, int], list[Row]]:
    out: dict[tuple[str, int], list[Row]] = {}
    for r in rows:
        out.setdefault((r[0], r[1]), []).append(r)
    return out


def per_queue(topic: str, queues: Any, value: int) -> str:
    """JSON naming every one of ``queues`` ((brokerName, queueId) pairs) with ``value``."""
    out: dict[str, dict[str, int]] = {}
    for broker, qid in queues:
        out.setdefault(broker, {})[str(qid)] = value
    return json.dumps({topic: out})


def test_starting_offsets_by_timestamp_per_queue(
    spark: Any, cluster: Cluster, tmp_path: Path
) -> None:
    """Each named queue starts at its first message stored at or after its time; a queue the
    JSON does not name keeps startingOffsets (JSON here); batch and stream alike."""
    topic = "SparkByTime"
    rows = two_waves(spark, cluster, topic)
    queues = by_queue(rows)
    named = sorted(queues)[:3]
    unnamed = sorted(queues)[3]
    times: dict[str, dict[str, dict[str, int]]] = {topic: {}}
    want = []
    for k, (broker, qid) in enumerate(named):
        q = queues[(broker, qid)]
        cut = q[min(k, len(q) - 1)][3] if k < 2 else q[-1][3] + 1  # the last: after them all
        times[topic].setdefault(broker, {})[str(qid)] = cut
        want += [r for r in q if r[3] >= cut]
    want += [r for r in queues[unnamed] if r[2] >= 1]
    start = json.dumps({topic: {unnamed[0]: {str(unnamed[1]): 1}}})
    got = read_all(spark, cluster, topic, startingOffsetsByTimestamp=json.dumps(times),
                   startingOffsets=start, startingOffsetsByTimestampStrategy="latest")  # fmt: skip
    assert got == sorted(want)
    df = source(spark, cluster, topic, stream=True, startingOffsets=start,
                startingOffsetsByTimestamp=json.dumps(times),
                startingOffsetsByTimestampStrategy="latest")  # fmt: skip
    stream_to(df, tmp_path / "out", tmp_path / "cp", availableNow=True).awaitTermination(120)
    assert sorted(bodies(spark, tmp_path / "out")) == sorted(r[4] for r in want)


def test_strategy_when_no_message_is_at_or_after_the_time(spark: Any, cluster: Cluster) -> None:
    """Kafka's startingOffsetsByTimestampStrategy: ``error`` (the default) fails the query
    naming the queue; ``latest`` starts that queue at its max offset. A time before the first
    message starts at the first."""
    topic = "SparkTimeStrategy"
    rows = two_waves(spark, cluster, topic)
    future = str(max(r[3] for r in rows) + 60_000)
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy=latest"):
        read_all(spark, cluster, topic, startingTimestamp=future)
    everywhere = per_queue(topic, by_queue(rows), int(future))
    with pytest.raises(Exception, match=f"no message of {topic}/broker-"):
        read_all(spark, cluster, topic, startingOffsetsByTimestamp=everywhere)
    assert read_all(spark, cluster, topic, startingTimestamp=future,
                    startingOffsetsByTimestampStrategy="latest") == []  # fmt: skip
    assert read_all(spark, cluster, topic, startingTimestamp="0") == rows


def test_precedence_and_ending_by_timestamp(spark: Any, cluster: Cluster) -> None:
    """startingTimestamp wins over startingOffsetsByTimestamp, which wins over
    startingOffsets; endingOffsetsByTimestamp ends a named queue before its first message
    stored at or after the time (none: its latest offset), other queues keep endingOffsets."""
    topic = "SparkEndByTime"
    rows = two_waves(spark, cluster, topic)
    b_start = min(r[3] for r in rows if r[4].startswith(b"b"))
    queues = by_queue(rows)
    everywhere = per_queue(topic, queues, 0)
    got = read_all(spark, cluster, topic, startingTimestamp=str(b_start),
                   startingOffsetsByTimestamp=everywhere, startingOffsets="earliest")  # fmt: skip
    assert got == [r for r in rows if r[4].startswith(b"b")]
    got = read_all(spark, cluster, topic, startingOffsetsByTimestamp=everywhere,
                   startingOffsets=per_queue(topic, queues, 1))  # fmt: skip
    assert got == rows
    (b1, q1), (b2, q2), (b3, q3), (b4, q4) = sorted(queues)
    ends = {topic: {b1: {str(q1): b_start}}}
    ends[topic].setdefault(b2, {})[str(q2)] = max(r[3] for r in rows) + 60_000  # no match
    end_json = {topic: {b3: {str(q3): 1}}}
    got = read_all(spark, cluster, topic, endingOffsetsByTimestamp=json.dumps(ends),
                   endingOffsets=json.dumps(end_json))  # fmt: skip
    want = [r for r in queues[(b1, q1)] if r[3] < b_start] + queues[(b2, q2)]
    want += [r for r in queues[(b3, q3)] if r[2] < 1] + queues[(b4, q4)]
    assert got == sorted(want)
