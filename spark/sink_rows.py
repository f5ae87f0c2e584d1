"""The sink's rows as messages: one Arrow record batch in, the messages it holds out, sorted
by how they are sent (spark-connector.md §10 "Sink"). Pure: no I/O."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from aiorocketmq.client import Message

# MessageConst.PROPERTY_DELAY_TIME_LEVEL: a delayed message cannot travel in a batch
# (MessageBatch.generateFromList refuses it), so such rows are sent one by one
DELAY = "DELAY"


@dataclass(frozen=True, slots=True)
class Columns:
    """Where each field of a message is in the written DataFrame: the column's name as the
    DataFrame spells it, or None when it has no such column."""

    body: str
    topic: str | None = None
    tags: str | None = None
    keys: str | None = None
    properties: str | None = None
    queue_id: str | None = None


@dataclass(slots=True)
class Routed:
    """One record batch's messages: ``batchable`` by topic (row order kept), ``pinned`` by
    (topic, queueId) in row order, and ``singles`` (delayed messages)."""

    rows: int = 0
    batchable: dict[str, list[Message]] = field(default_factory=lambda: defaultdict(list))
    pinned: dict[tuple[str, int], list[Message]] = field(default_factory=lambda: defaultdict(list))
    singles: list[Message] = field(default_factory=list)


def route(batch: pa.RecordBatch, cols: Columns, topic_option: str | None) -> Routed:
    """The messages of ``batch``; ValueError (naming the row) for a null body or topic."""
    out = Routed(rows=batch.num_rows)
    for msg, queue_id in in_order(batch, cols, topic_option):
        if queue_id is not None:
            out.pinned[msg.topic, queue_id].append(msg)
        elif DELAY in msg.properties:
            out.singles.append(msg)
        else:
            out.batchable[msg.topic].append(msg)
    return out


def in_order(
    batch: pa.RecordBatch, cols: Columns, topic_option: str | None
) -> Iterator[tuple[Message, int | None]]:
    """Each row's message and queueId (None: not given), in row order; ValueError (naming
    the row) for a null body or topic."""
    n = batch.num_rows
    bodies = _bodies(batch.column(cols.body))
    topics = _topics(batch, cols, topic_option, n)
    tags = _column(batch, cols.tags, n)
    keys = _column(batch, cols.keys, n)
    props = _column(batch, cols.properties, n)
    queue_ids = _column(batch, cols.queue_id, n)
    for row, (body, topic, tag, key, prop, queue_id) in enumerate(
        zip(bodies, topics, tags, keys, props, queue_ids, strict=True)
    ):
        if body is None:
            raise ValueError(f"rocketmq sink: row {row} of a batch has a null body")
        if topic is None:
            raise ValueError(
                f"rocketmq sink: row {row} of a batch has a null topic "
                "(set the topic column or the topic option)"
            )
        yield Message(topic, body, tag or None, _keys(key), properties=_properties(prop)), queue_id


def chunks(msgs: Sequence[Message], size: int, max_bytes: int) -> Iterable[Sequence[Message]]:
    """``msgs`` cut into runs of at most ``size`` messages and about ``max_bytes`` (a run
    always holds at least one message)."""
    start, total = 0, 0
    for i, msg in enumerate(msgs):
        cost = _cost(msg)
        if i > start and (i - start >= size or total + cost > max_bytes):
            yield msgs[start:i]
            start, total = i, 0
        total += cost
    if start < len(msgs):
        yield msgs[start:]


def _cost(msg: Message) -> int:
    """About what the message takes in a SEND_BATCH_MESSAGE body (MessageDecoder.encodeMessage:
    a 22-byte header, the body, the properties; 128 bytes cover TAGS, KEYS, UNIQ_KEY, WAIT
    and their separators unless tags or keys are long, which the 4 MiB limit leaves room for)."""
    return 128 + len(msg.body) + sum(len(k) + len(v) + 2 for k, v in msg.properties.items())


def _bodies(column: pa.Array) -> list[bytes | None]:
    """A binary column as is; a string column as its UTF-8 bytes (a zero-copy cast)."""
    if pa.types.is_string(column.type):
        column = pc.cast(column, pa.binary())
    elif pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.large_binary())
    values: list[bytes | None] = column.to_pylist()
    return values


def _topics(batch: pa.RecordBatch, cols: Columns, option: str | None, n: int) -> Sequence[Any]:
    if option is not None:  # the option wins over the column (Kafka's sink does the same)
        return [option] * n
    assert cols.topic is not None, "make_writer checks that a topic is given"
    values: list[Any] = batch.column(cols.topic).to_pylist()
    return values


def _column(batch: pa.RecordBatch, name: str | None, n: int) -> Sequence[Any]:
    if name is None:
        return [None] * n
    values: list[Any] = batch.column(name).to_pylist()
    return values


def _keys(value: str | list[str | None] | None) -> str | list[str] | None:
    if value is None or isinstance(value, str):
        return value or None
    return [key for key in value if key] or None


def _properties(pairs: list[tuple[str, str | None]] | None) -> dict[str, str]:
    """A map column's value (a list of pairs in Arrow); a null value means no property."""
    if not pairs:
        return {}
    return {k: v for k, v in pairs if v is not None}
