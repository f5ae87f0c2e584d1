"""The sink: ``df.write.format("rocketmq").mode("append")`` and
``df.writeStream.format("rocketmq")`` (issue 16 item 6; spark-connector.md §3, §4, §8.3, §10).

Columns (matched case-insensitively; any other column is an error):

| column | type | |
|---|---|---|
| body | binary or string (sent as UTF-8) | required, never null |
| topic | string | required unless the ``topic`` option is set; the option wins |
| tags | string | |
| keys | string (space-separated) or array<string> | |
| properties | map<string,string> | user properties; a null value means none |
| queueId | int | that queue of the topic; null: the producer picks |

A row with a queueId goes to the queue with that id on the first broker, in broker-name
order, whose writable queues include it (``aiorocketmq.spark.sink_send.by_queue_id``); the rows of
one queue are sent one after another in row order. Other rows of a topic travel in
SEND_BATCH_MESSAGE batches of ``batchSize`` to queues the producer picks (round robin, as
Java's DefaultMQProducer), in no particular order. Delayed messages (a ``DELAY`` property)
are sent one by one.

Options: ``nameServer`` (required), ``topic``, ``producerGroup``, ``sendTimeoutMs``,
``batchSize``, ``exactlyOnce``, and the source's security options (``accessKey``,
``secretKey``, ``tls``...: spark/access.py).

Save modes: only append. Spark refuses ErrorIfExists (the default of ``df.write``) and
Ignore itself for a Python data source ("UNSUPPORTED_DATA_SOURCE_SAVE_MODE ... Please use
either the Append or Overwrite mode"), so ``mode("append")`` is required; overwrite (and the
complete output mode of a stream, which reaches the sink as overwrite) is refused here; Spark
refuses the update output mode.

Delivery is at-least-once by default, as Kafka's sink: ``write()`` returns once every send
of its task is stored; a failed send fails the task, and Spark's retry (or a restarted
query's replay of a micro-batch) sends rows again, so consumers that must not see a message
twice de-duplicate, e.g. by a key. ``commit`` does nothing; ``abort`` cannot take back what
finished tasks sent and only logs it.

With ``exactlyOnce=true`` the tasks send half messages and the driver's ``commit`` makes the
batch's visible, once (spark/sink_exactly_once.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

from aiorocketmq.spark import sink_exactly_once as exactly_once
from aiorocketmq.spark.options import WriteOptions, write_options
from aiorocketmq.spark.sink_exactly_once import HalvesSent
from aiorocketmq.spark.sink_rows import Columns, route
from aiorocketmq.spark.sink_send import Sender, producer
from aiorocketmq.spark.sink_txlog import Place, batch_place, stream_place

log = logging.getLogger(__name__)

__all__ = [
    "BatchWriter",
    "HalvesCommit",
    "SinkCommit",
    "StreamWriter",
    "WriteOptions",
    "make_writer",
]


_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_TYPES: dict[str, tuple[str, str]] = {  # lower-cased name: (canonical name, expected type)
    "body": ("body", "binary or string"),
    "topic": ("topic", "string"),
    "tags": ("tags", "string"),
    "keys": ("keys", "string or array<string>"),
    "properties": ("properties", "map<string,string>"),
    "queueid": ("queueId", "int"),
}


def _fits(canonical: str, dt: DataType) -> bool:
    if canonical == "body":
        return isinstance(dt, BinaryType | StringType)
    if canonical == "keys":
        return isinstance(dt, StringType) or (
            isinstance(dt, ArrayType) and isinstance(dt.elementType, StringType)
        )
    if canonical == "properties":
        return (
            isinstance(dt, MapType)
            and isinstance(dt.keyType, StringType)
            and isinstance(dt.valueType, StringType)
        )
    if canonical == "queueId":
        return isinstance(dt, _INTEGRAL)
    return isinstance(dt, StringType)


def _columns(schema: StructType, topic_option: str | None) -> Columns:
    """Where each field is, from the DataFrame's schema; ValueError naming what is wrong."""
    found: dict[str, str] = {}
    unknown: list[str] = []
    for f in schema.fields:
        entry = _TYPES.get(f.name.lower())
        if entry is None:
            unknown.append(f.name)
            continue
        canonical, expected = entry
        if canonical in found:
            raise ValueError(f"rocketmq sink: two columns named {canonical}")
        if not _fits(canonical, f.dataType):
            raise ValueError(
                f"rocketmq sink: column {f.name} must be {expected}, "
                f"not {f.dataType.simpleString()}"
            )
        found[canonical] = f.name
    if unknown:
        raise ValueError(
            f"rocketmq sink: unknown column(s) {', '.join(unknown)}; the sink writes "
            f"{', '.join(c for c, _ in _TYPES.values())} (select or drop the others)"
        )
    if "body" not in found:
        raise ValueError("rocketmq sink: the DataFrame has no body column (binary or string)")
    if "topic" not in found and topic_option is None:
        raise ValueError("rocketmq sink: no topic: set the topic option or add a topic column")
    return Columns(
        body=found["body"],
        topic=found.get("topic"),
        tags=found.get("tags"),
        keys=found.get("keys"),
        properties=found.get("properties"),
        queue_id=found.get("queueId"),
    )


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one task sent: rows, messages stored, send requests, and messages the broker
    stored without flushing or replicating them in time (FLUSH_DISK_TIMEOUT and the like)."""

    rows: int
    sent: int
    requests: int
    not_ok: int


def _write(opts: WriteOptions, cols: Columns, batches: Iterator[pa.RecordBatch]) -> SinkCommit:
    """Send every row of the task; return once the brokers stored them all."""
    loop, prod = producer(opts.name_server, opts.producer_group, opts.send_timeout_ms, opts.access)
    sender = Sender(loop, prod, opts.batch_size)
    rows, done = 0, False
    try:
        for batch in batches:
            routed = route(batch, cols, opts.topic)
            rows += routed.rows
            sender.submit(routed)
        sender.finish()
        done = True
    finally:
        if not done:
            sender.abandon()
    if sender.not_ok:
        log.warning("sink_not_ok_status messages=%d (stored, not flushed or replicated in time)",
                    sender.not_ok)  # fmt: skip
    return SinkCommit(rows, sender.sent, sender.requests, sender.not_ok)


@dataclass
class HalvesCommit(SinkCommit):
    """exactlyOnce: the task's half messages, for the driver to commit or roll back (``sent``
    and ``requests`` count halves: one holds a run of up to ``batchSize`` rows, or one row
    on a broker without parked batches)."""

    halves: HalvesSent | None = None


def _write_halves(
    opts: WriteOptions, cols: Columns, place: Place, batches: Iterator[pa.RecordBatch]
) -> HalvesCommit:
    batch = exactly_once.batch_id(place.streaming)
    rows, sent = exactly_once.write(opts, cols, place, batch, batches)
    n = len(sent.halves)
    return HalvesCommit(rows, n, n, sent.not_ok, sent)


def _halves(messages: list[WriterCommitMessage | None]) -> list[HalvesSent]:
    return [m.halves for m in messages if isinstance(m, HalvesCommit) and m.halves is not None]


def _log_abort(messages: list[WriterCommitMessage | None], batch_id: int | None) -> None:
    done = [m for m in messages if isinstance(m, SinkCommit)]
    log.warning(
        "sink_aborted batch_id=%s tasks_done=%d messages_sent=%d (at-least-once: what finished "
        "tasks sent stays in the topics)",
        batch_id, len(done), sum(m.sent for m in done),
    )  # fmt: skip


class BatchWriter(DataSourceArrowWriter):
    """``df.write``: each task sends its partition's rows. ``place``: exactlyOnce's."""

    def __init__(self, options: WriteOptions, columns: Columns, place: Place | None) -> None:
        self.options, self.columns, self.place = options, columns, place

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        if self.place is not None:
            return _write_halves(self.options, self.columns, self.place, iterator)
        return _write(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """At-least-once: nothing to do, every row was stored when its task ended.
        exactlyOnce: the job's halves committed."""
        if self.place is not None:
            exactly_once.commit(self.options, self.place, 0, _halves(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.place is not None:
            exactly_once.abort(self.options, self.place, _halves(messages))
        else:
            _log_abort(messages, None)


class StreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream`` (append output mode): each micro-batch's tasks send their rows.
    ``place``: exactlyOnce's."""

    def __init__(self, options: WriteOptions, columns: Columns, place: Place | None) -> None:
        self.options, self.columns, self.place = options, columns, place

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        if self.place is not None:
            return _write_halves(self.options, self.columns, self.place, iterator)
        return _write(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: nothing to do (runs in a fresh process per micro-batch: kept
        cheap). exactlyOnce: the batch's halves committed, unless a run before did."""
        if self.place is not None:
            exactly_once.commit(self.options, self.place, batchId, _halves(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.place is not None:
            exactly_once.abort(self.options, self.place, _halves(messages))
        else:
            _log_abort(messages, batchId)


def make_writer(
    options: Mapping[str, str], schema: StructType, overwrite: bool, *, streaming: bool
) -> BatchWriter | StreamWriter:
    """The writer for ``RocketMQDataSource.writer()`` / ``streamWriter()``: options and
    columns checked here, on the driver, so mistakes fail the job before any task runs."""
    if overwrite:
        what = "the append output mode" if streaming else 'mode("append")'
        raise ValueError(
            f"rocketmq sink: only {what} is supported: a topic cannot be overwritten or truncated"
        )
    opts = write_options(options, streaming=streaming)
    cols = _columns(schema, opts.topic)
    place = None
    if opts.exactly_once:
        place = (
            stream_place(opts.producer_group, opts.checkpoint_location)
            if streaming
            else batch_place(opts.producer_group)
        )
        exactly_once.start_answerer(opts, place)
    return StreamWriter(opts, cols, place) if streaming else BatchWriter(opts, cols, place)
