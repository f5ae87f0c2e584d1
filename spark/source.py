"""The ``rocketmq`` PySpark data source (issue 16; spark-connector.md §3-§5, §10): batch and
Structured Streaming reads of queues, and the sink (spark/sink.py).

Offsets are ``{topic: {brokerName: {queueId: next}}}`` (end exclusive), canonical JSON. A
range ``[start, end)`` of one queue is an input partition; reading it is a pure function of
the range, so a replayed batch reads the same rows. Readers hold only their options (they are
pickled); connections live in spark/cluster.py's per-process cache.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from aiorocketmq.spark import cluster
from aiorocketmq.spark.offsets import (
    Offsets,
    QueueRange,
    backlog,
    canonical,
    from_json,
    limit_rows,
    ranges,
)
from aiorocketmq.spark.options import ReadOptions, read_options
from aiorocketmq.spark.schema import check_user_schema, spark_schema


class RocketMQDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return spark_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        check_user_schema(schema)
        return BatchReader(read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        check_user_schema(schema)
        return StreamReader(read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from aiorocketmq.spark.sink import make_writer

        return make_writer(self.options, schema, overwrite, streaming=False)  # type: ignore[return-value]

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from aiorocketmq.spark.sink import make_writer

        return make_writer(self.options, schema, overwrite, streaming=True)  # type: ignore[return-value]


def resolve(opts: ReadOptions, spec: str | Offsets, timestamp: int | None, *,
            mqs: list[Any], default_latest: bool) -> Offsets:  # fmt: skip
    """Starting or ending offsets: a timestamp wins; "earliest" is each queue's min offset,
    "latest" its max; JSON gives offsets, with -2 / -1 for earliest / latest."""
    if timestamp is not None:
        return cluster.offsets_at(opts, mqs, timestamp)
    low = cluster.min_offsets(opts, mqs) if spec != "latest" else {}
    high = cluster.max_offsets(opts, mqs) if spec != "earliest" or default_latest else {}
    if spec == "earliest":
        return low
    if spec == "latest":
        return high
    assert isinstance(spec, dict)
    out: Offsets = {}
    for mq in mqs:
        qid = str(mq.queue_id)
        given = spec.get(mq.topic, {}).get(mq.broker_name, {}).get(qid)
        if given is None:
            given = -1 if default_latest else -2
        table = low if given == -2 else high if given == -1 else None
        value = table[mq.topic][mq.broker_name][qid] if table is not None else given
        out.setdefault(mq.topic, {}).setdefault(mq.broker_name, {})[qid] = value
    return canonical(out)


class BatchReader(DataSourceReader):
    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[InputPartition]:
        o = self.opts
        mqs = cluster.queues(o)
        start = resolve(o, o.starting_offsets, o.starting_timestamp, mqs=mqs,
                        default_latest=False)  # fmt: skip
        end = resolve(o, o.ending_offsets, o.ending_timestamp, mqs=mqs, default_latest=True)
        return list(ranges(start, end, o.min_partitions))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, QueueRange)
        yield from cluster.read_range(self.opts, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver-side state (memoised start, AvailableNow target, last data time) lives on the
    runner's instance; ``read`` sees only the options (spark-connector.md §4)."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._initial: Offsets | None = None
        self._target: Offsets | None = None
        self._latest: Offsets | None = None
        self._last_data = time.monotonic()

    def initialOffset(self) -> dict[str, Any]:
        if self._initial is None:  # memoised: Spark asks twice (§5 rule 4)
            o = self.opts
            self._initial = resolve(o, o.starting_offsets, o.starting_timestamp,
                                    mqs=cluster.queues(o), default_latest=True)  # fmt: skip
        return self._initial

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = cluster.max_offsets(self.opts, cluster.queues(self.opts))

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.opts
        if o.max_offsets_per_trigger is not None:
            return ReadMaxRows(o.max_offsets_per_trigger)
        if o.min_offsets_per_trigger is not None:
            return ReadMinRows(o.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start)
        latest = cluster.max_offsets(self.opts, cluster.queues(self.opts), partial=True)
        self._latest = latest
        if self._target is not None:  # AvailableNow: what existed when the query started
            latest = _clamp(latest, self._target)
        waiting = backlog(begin, latest)
        if isinstance(limit, ReadMaxRows):
            end = limit_rows(begin, latest, limit.max_rows)
        elif isinstance(limit, ReadMinRows) and self._target is None:
            due = time.monotonic() - self._last_data >= self.opts.max_trigger_delay_ms / 1000
            end = latest if waiting >= limit.min_rows or (waiting and due) else begin
        else:
            end = latest
        end = canonical(_keep_start(begin, end))
        if backlog(begin, end):
            self._last_data = time.monotonic()
        return end

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return self._latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        return list(ranges(from_json(start), from_json(end), self.opts.min_partitions))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, QueueRange)
        yield from cluster.read_range(self.opts, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """One batch late and not for the last one (§5 rule 1): only the ``group`` option's
        admin-visible offsets; the checkpoint is what a restart resumes from."""
        cluster.commit_group(self.opts, from_json(end))


def _clamp(latest: Offsets, target: Offsets) -> Offsets:
    """No queue beyond the AvailableNow target; queues found since start at 0 (not read)."""
    return {
        t: {b: {q: min(o, target.get(t, {}).get(b, {}).get(q, 0)) for q, o in qs.items()}
            for b, qs in bs.items()}
        for t, bs in latest.items()
    }  # fmt: skip


def _keep_start(start: Offsets, end: Offsets) -> Offsets:
    """Queues of ``start`` missing from ``end`` (a topic gone from the pattern, a shrunken
    route) stay at their start, so offsets never move backwards."""
    out = {t: {b: dict(qs) for b, qs in bs.items()} for t, bs in end.items()}
    for t, bs in start.items():
        for b, qs in bs.items():
            for q, off in qs.items():
                out.setdefault(t, {}).setdefault(b, {}).setdefault(q, off)
    return out
