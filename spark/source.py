"""The ``rocketmq`` PySpark data source (issue 16; spark-connector.md §3-§5, §10): batch and
Structured Streaming reads of queues, and the sink (spark/sink.py).

Offsets are ``{topic: {brokerName: {queueId: next}}}`` (end exclusive), canonical JSON. A
range ``[start, end)`` of one queue is an input partition; reading it is a pure function of
the range, so a replayed batch reads the same rows. Readers hold only their options (they are
pickled); connections live in spark/cluster.py's per-process cache.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    Filter,
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

from aiorocketmq.spark import bounds, cluster, sql92_probe
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
from aiorocketmq.spark.pushdown import Pushed, push, sql92
from aiorocketmq.spark.schema import check_user_schema, spark_schema


class RocketMQDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return spark_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        check_user_schema(schema)
        opts = read_options(self.options, streaming=False)
        return PushingBatchReader(opts) if opts.push_filters else BatchReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        check_user_schema(schema)
        return StreamReader(read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from aiorocketmq.spark.sink import make_writer

        return make_writer(self.options, schema, overwrite, streaming=False)  # type: ignore[return-value]

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from aiorocketmq.spark.sink import make_writer

        return make_writer(self.options, schema, overwrite, streaming=True)  # type: ignore[return-value]


class BatchReader(DataSourceReader):
    """A batch read of the queue ranges the options give."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self.pushed = Pushed()

    def partitions(self) -> list[InputPartition]:
        o, p = self.opts, self.pushed
        if p.tags is not None and not p.tags:
            return []
        mqs = cluster.queues(o)
        start = bounds.starting(o, mqs, streaming=False, not_before_ms=p.from_ms)
        end = bounds.ending(o, mqs, before_ms=p.until_ms)
        return list(ranges(start, end, o.min_partitions))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, QueueRange):  # else Spark's stand-in when there are none
            yield from cluster.read_range(self.opts, partition)


class PushingBatchReader(BatchReader):
    """With ``pushFilters=true``: ``pushFilters`` (planner side, before ``partitions``)
    narrows the read to the tags, keys and store times of the query's filters
    (spark/pushdown.py): tags alone keep a TAG subscription; ``keys`` terms (and then the
    tags) make it SQL92 where every broker of the read takes SQL92 (spark/sql92_probe.py;
    else the ``keys`` filters are returned to Spark); with the user's SQL92 subscription
    they are AND-ed to it.

    Opt-in because Spark (4.1-4.3, PythonScanBuilder) keeps the read a DataFrame's last
    pushdown planned and reuses it for a later query on the same DataFrame that has no
    filter it can hand over, which then reads the earlier query's rows: load() a DataFrame
    per filtered query. A reader with this method also needs
    ``spark.sql.python.filterPushdown.enabled`` (``register`` sets it)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        o = self.opts
        pushed, left = push(filters, self.pushed)
        tags, given = pushed.tags, o.tag_set
        if tags is not None and given is not None:
            tags = tags & given
        pushed = replace(pushed, tags=tags)
        if o.expression_type == "SQL92":
            if tags or pushed.keys:
                o = replace(o, sub_expression=sql92(pushed, o.sub_expression, tags))
        elif pushed.keys and tags != frozenset():  # (no tag: nothing is read)
            expression = sql92(pushed, None, given if tags is None else tags)
            if sql92_probe.refusal(o, cluster.queues(o), expression) is None:
                o = replace(o, expression_type="SQL92", sub_expression=expression)
            else:
                left += pushed.keys_exact
                pushed = pushed.unpushed_keys()
        if o.expression_type == "TAG" and tags:  # the brokers send only these
            o = replace(o, sub_expression=" || ".join(sorted(tags)))
        self.opts, self.pushed = o, pushed
        return left


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
            self._initial = bounds.starting(o, cluster.queues(o), streaming=True)
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
        if isinstance(partition, QueueRange):  # else Spark's stand-in when there are none
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
