"""Arrow record batches straight from pull bodies (issue 34 item 3): ``decode_layout``
(compiled) finds where each record's fields lie; the bodies joined are one Arrow buffer, and
the body, topic and properties columns are Arrow's views of it by those positions, so no
Python object is made per body, topic or property. The properties text
(``name\\x01value\\x02...``) is split into the map column by Arrow's string kernels; tags,
keys and msgId are looked up in that map (the last of a name, as a dict keeps it).

A batch whose properties Arrow cannot split as ``decode_properties`` does (an empty name or
value, a pair without its separator) or with compressed bodies takes the Python way for that
column; a property named twice in one record (no producer writes one) shows twice in the map.
"""

from __future__ import annotations

import array

import pyarrow as pa
import pyarrow.compute as pc

from aiorocketmq.client import Layout, offset_msg_id_at
from aiorocketmq.spark.schema import arrow_schema

_MAP = pa.map_(pa.string(), pa.string())
_US = pa.timestamp("us", tz="UTC")


def layout_batch(
    layout: Layout,
    bodies: list[bytes],
    broker_name: str,
    *,
    topic: str | None = None,
    tags: frozenset[str] | None = None,
    include_properties: bool = True,
) -> pa.RecordBatch:
    """The rows of ``layout`` (over ``bodies`` joined, in order) as one record batch of the
    connector's schema; with ``tags``, only rows whose TAGS is one of them. ``topic``: the
    one topic of every record, known (a queue's records are its topic's: the broker files
    a record under the topic it names), so not read from each."""
    joined = b"".join(bodies)
    data = pa.py_buffer(joined)
    n = len(layout)
    props = _strings(layout.properties, data)
    table = _property_map(props)
    body = _binary(layout.body, data)
    if layout.compressed:
        body = _inflated(body, layout.compressed)
    uniq = pc.map_lookup(table, "UNIQ_KEY", "last")
    if uniq.null_count:
        made = [
            None if u.is_valid else offset_msg_id_at(joined, at)
            for u, at in zip(uniq, layout.record, strict=True)
        ]
        uniq = pc.coalesce(uniq, pa.array(made, pa.string()))
    ts = [
        pc.multiply(_ints(ms, "q", pa.int64()), 1000).cast(_US)
        for ms in (layout.born_timestamp, layout.store_timestamp)
    ]
    tag = pc.map_lookup(table, "TAGS", "last")
    columns = [
        _strings(layout.topic, data) if topic is None else _same(topic, n),
        _same(broker_name, n),
        _ints(layout.queue_id, "i", pa.int32()),
        _ints(layout.queue_offset, "q", pa.int64()),
        uniq,
        tag,
        pc.map_lookup(table, "KEYS", "last"),
        body,
        table if include_properties else pa.nulls(n, _MAP),
        *ts,
        pa.array(layout.born_host, pa.string()),
        pa.array(layout.store_host, pa.string()),
        _ints(layout.reconsume_times, "i", pa.int32()),
    ]
    batch = pa.RecordBatch.from_arrays(columns, schema=arrow_schema())
    if tags is not None:
        keep = pc.fill_null(pc.is_in(tag, value_set=pa.array(sorted(tags), pa.string())), False)
        batch = batch.filter(keep)
    return batch


def _binary(spans: list[int], data: pa.Buffer) -> pa.Array:
    """The byte strings at ``spans`` (start, end, start, end, ...) of ``data``: an array of
    every span and every gap between, of which the spans are taken."""
    offsets = pa.py_buffer(array.array("i", spans))
    if not spans:
        return pa.array([], pa.binary())
    both = pa.Array.from_buffers(pa.binary(), len(spans) - 1, [None, offsets, data])
    return both.take(_evens(len(spans) // 2))


_EVENS: list[pa.Array] = []  # 0, 2, 4, ... as int32, kept: pa.array of a range costs 0.1 µs a row


def _evens(n: int) -> pa.Array:
    """The ``n`` first even numbers (the spans' places among spans and gaps)."""
    if not _EVENS or len(_EVENS[0]) < n:
        _EVENS[:] = [pa.array(range(0, 2 * max(n, 65_536), 2), pa.int32())]
    return _EVENS[0].slice(0, n)


def _same(value: str, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), n)


def _ints(values: list[int], code: str, kind: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array of ``kind`` (``code``: its array module type code), by
    way of a C array: ``pa.array`` of a list checks each item for an Arrow scalar."""
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(array.array(code, values))])


def _strings(spans: list[int], data: pa.Buffer) -> pa.Array:
    return _binary(spans, data).cast(pa.string())  # checks the UTF-8


def _property_map(text: pa.Array) -> pa.Array:
    """The properties text of each row as a map, split as ``decode_properties`` does."""
    trimmed = pc.utf8_rtrim(text, characters="\x02")
    present = pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, pa.string()), trimmed)
    items = pc.split_pattern(present, "\x02")
    pairs = pc.split_pattern(items.flatten(), "\x01")
    names, values = pc.list_element(pairs, 0), pc.list_element(pairs, 1)
    clean = pc.all(
        pc.and_(
            pc.equal(pc.list_value_length(pairs), 2),
            pc.and_(pc.greater(pc.utf8_length(names), 0), pc.greater(pc.utf8_length(values), 0)),
        )
    ).as_py()
    if clean is False:
        return pa.array([_pairs(t) for t in text.to_pylist()], _MAP)
    return pa.MapArray.from_arrays(items.offsets, names, values)


def _pairs(text: str) -> list[tuple[str, str]]:
    """The properties text as ``decode_properties`` reads it: pairs with an empty name or
    value, or without exactly one separator, skipped; a name twice keeps its last value."""
    props: dict[str, str] = {}
    for item in text.split("\x02"):
        pair = item.split("\x01")
        if len(pair) == 2 and pair[0] and pair[1]:
            props[pair[0]] = pair[1]
    return list(props.items())


def _inflated(body: pa.Array, rows: list[int]) -> pa.Array:
    import zlib

    values = body.to_pylist()
    for i in rows:
        values[i] = zlib.decompress(values[i])
    return pa.array(values, pa.binary())
