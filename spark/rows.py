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
import bisect
import ipaddress

import pyarrow as pa
import pyarrow.compute as pc

from aiorocketmq.client import Layout, Starts, decode_layout, offset_msg_id_at
from aiorocketmq.spark.schema import arrow_schema

_MAP = pa.map_(pa.string(), pa.string())
_US = pa.timestamp("us", tz="UTC")
_HEAD = 88  # a plain record's head (IPv4 hosts): its body length is the head's last field


def _i32(value: int) -> pa.Scalar:
    return pa.scalar(value, pa.int32())


# the constants of the kernels below, made once: a Python value given to a compute
# function is converted on each call, and pyarrow's converter tries to import pandas and
# dateutil each time (about 50 µs when they are not installed, as here)
_HEAD_S, _ONE, _TWO, _BYTE = _i32(_HEAD), _i32(1), _i32(2), _i32(256)
_THOUSAND = pa.scalar(1000, pa.int64())
_EMPTY, _NULL = pa.scalar("", pa.string()), pa.scalar(None, pa.string())
_NAMES = {name: pa.scalar(name, pa.string()) for name in ("UNIQ_KEY", "TAGS", "KEYS")}
_LOOKUP = {name: pc.MapLookupOptions(scalar, "last") for name, scalar in _NAMES.items()}


def starts_batch(
    starts: Starts,
    bodies: list[bytes],
    broker_name: str,
    *,
    topic: str,
    tags: frozenset[str] | None = None,
    include_properties: bool = True,
) -> pa.RecordBatch:
    """The rows of the records ``starts`` found in ``bodies`` (joined, in order), as
    ``layout_batch`` makes them. Every record plain (``Starts.plain``): each field is read
    where it lies, for every row at once in Arrow (a take of its bytes, most significant
    last: little-endian values), no Python object per row; otherwise ``decode_layout`` of
    the bodies and ``layout_batch``."""
    n = len(starts)
    if not starts.plain or not n:
        layout, base = Layout(), 0
        for body in bodies:  # each body's first records are the ones decode_starts read
            base += len(body)
            taken = bisect.bisect_left(starts.record, base) - len(layout)
            decode_layout(body, layout, limit=taken)
        return layout_batch(layout, bodies, broker_name, topic=topic, tags=tags,
                            include_properties=include_properties)  # fmt: skip
    joined = b"".join(bodies)
    data = pa.py_buffer(joined)
    octets = pa.Array.from_buffers(pa.uint8(), len(joined), [None, data])
    at = _ints(starts.record, "i", pa.int32())
    wide = {w: pc.add(pc.take(at, _repeats(w, n)), _descending(w, n)) for w in (4, 8)}

    def field(where: int, kind: pa.DataType) -> pa.Array:
        width = kind.byte_width
        got = pc.take(octets.slice(where), wide[width])  # a slice: no pass to add ``where``
        return pa.Array.from_buffers(kind, n, [None, got.buffers()[1]], offset=0)

    body_at = pc.add(at, _HEAD_S)
    body_end = pc.add(body_at, field(84, pa.int32()))
    props_len_at = pc.add(pc.add(body_end, _ONE), pc.take(octets, body_end).cast(pa.int32()))
    props_len = pc.add(
        pc.multiply(pc.take(octets, props_len_at).cast(pa.int32()), _BYTE),
        pc.take(octets, pc.add(props_len_at, _ONE)).cast(pa.int32()),
    )
    props_at = pc.add(props_len_at, _TWO)
    props = _binary_between(props_at, pc.add(props_at, props_len), data).cast(pa.string())
    return _assemble(
        broker_name, n, joined, starts.record, _property_map(props),
        body=_binary_between(body_at, body_end, data),
        topic=_same(topic, n),
        queue_id=field(12, pa.int32()),
        queue_offset=field(20, pa.int64()),
        born_ms=field(40, pa.int64()),
        store_ms=field(56, pa.int64()),
        born_host=_hosts(field(48, pa.int64())),
        store_host=_hosts(field(64, pa.int64())),
        reconsume=field(72, pa.int32()),
        tags=tags, include_properties=include_properties,
    )  # fmt: skip


_REPEATS: dict[int, pa.Array] = {}  # width w: 0 (w times), 1 (w times), ... as int32
_DESCENDING: dict[int, pa.Array] = {}  # width w: w-1, ..., 1, 0, w-1, ... as int32


def _repeats(width: int, n: int) -> pa.Array:
    """Each row's number ``width`` times (to take each row's start once per byte)."""
    have = _REPEATS.get(width)
    if have is None or len(have) < n * width:
        rows = max(n, 65_536)
        have = _REPEATS[width] = pc.divide(
            _ints(array.array("i", range(rows * width)), "i", pa.int32()), width
        )
    return have.slice(0, n * width)


def _descending(width: int, n: int) -> pa.Array:
    """The places of a field's bytes from its most significant, for ``n`` rows: its bytes
    taken in that order are the value little-endian."""
    have = _DESCENDING.get(width)
    if have is None or len(have) < n * width:
        rows = max(n, 65_536)
        pattern = array.array("i", range(width - 1, -1, -1))
        have = _DESCENDING[width] = _ints(pattern * rows, "i", pa.int32())
    return have.slice(0, n * width)


def _binary_between(start: pa.Array, end: pa.Array, data: pa.Buffer) -> pa.Array:
    """The byte strings [start, end) of ``data``, row by row (starts and ends in order)."""
    n = len(start)
    index = _interleaved(n)
    gap = pa.nulls(len(index) // 2 - n, pa.int32())  # the ends start at the same place
    ends = pa.concat_arrays([start.cast(pa.int32()), gap, end.cast(pa.int32())])
    spans = pc.take(ends, index.slice(0, 2 * n))
    both = pa.Array.from_buffers(pa.binary(), 2 * n - 1, [None, spans.buffers()[1], data])
    return both.take(_evens(n))


_INTERLEAVED: list[pa.Array] = []  # 0, m, 1, m + 1, ..., m - 1, 2m - 1 as int32, kept


def _interleaved(n: int) -> pa.Array:
    """0, m, 1, m + 1, ... for some m >= ``n`` (half its length): start and end of each
    row, from the starts and, m places on, the ends."""
    if not _INTERLEAVED or len(_INTERLEAVED[0]) < 2 * n:
        m = max(n, 65_536)
        _INTERLEAVED[:] = [
            pc.add(_repeats(2, m), pc.multiply(pc.subtract(1, _descending(2, m)), m)).cast(
                pa.int32()
            )
        ]
    return _INTERLEAVED[0]


def _hosts(keys: pa.Array) -> pa.Array:
    """ "ip:port" of each IPv4 host (its 8 bytes read as one little-endian int64: the port,
    a Java int, in the low 32 bits, the address above), formatted once per distinct host
    as the SDK's decoders do."""
    low, high = pc.min_max(keys).values()
    if low == high:  # one host (a broker's own, always)
        return _same(_host(low.as_py()), len(keys))
    coded = keys.dictionary_encode()
    names = [_host(key) for key in coded.dictionary.to_pylist()]
    return pa.array(names, pa.string()).take(coded.indices)


def _host(key: int) -> str:
    address, port = (key >> 32) & 0xFFFF_FFFF, key & 0xFFFF_FFFF
    port = port - 0x1_0000_0000 if port & 0x8000_0000 else port
    return f"{ipaddress.IPv4Address(address)}:{port}"


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
    table = _property_map(_strings(layout.properties, data))
    body = _binary(layout.body, data)
    if layout.compressed:
        body = _inflated(body, layout.compressed)
    return _assemble(
        broker_name, n, joined, layout.record, table,
        body=body,
        topic=_strings(layout.topic, data) if topic is None else _same(topic, n),
        queue_id=_ints(layout.queue_id, "i", pa.int32()),
        queue_offset=_ints(layout.queue_offset, "q", pa.int64()),
        born_ms=_ints(layout.born_timestamp, "q", pa.int64()),
        store_ms=_ints(layout.store_timestamp, "q", pa.int64()),
        born_host=pa.array(layout.born_host, pa.string()),
        store_host=pa.array(layout.store_host, pa.string()),
        reconsume=_ints(layout.reconsume_times, "i", pa.int32()),
        tags=tags, include_properties=include_properties,
    )  # fmt: skip


def _assemble(
    broker_name: str,
    n: int,
    joined: bytes,
    records: list[int],
    table: pa.Array,
    *,
    body: pa.Array,
    topic: pa.Array,
    queue_id: pa.Array,
    queue_offset: pa.Array,
    born_ms: pa.Array,
    store_ms: pa.Array,
    born_host: pa.Array,
    store_host: pa.Array,
    reconsume: pa.Array,
    tags: frozenset[str] | None,
    include_properties: bool,
) -> pa.RecordBatch:
    """The batch of the connector's schema from its columns (``table``: the properties
    map, of which msgId, tags and keys; a row without a UNIQ_KEY gets the offsetMsgId of
    its record, at ``records``' place in ``joined``), rows filtered by ``tags``."""
    uniq = lookup_property(table, "UNIQ_KEY")
    if uniq.null_count:
        made = [
            None if u.is_valid else offset_msg_id_at(joined, at)
            for u, at in zip(uniq, records, strict=True)
        ]
        uniq = pc.coalesce(uniq, pa.array(made, pa.string()))
    tag = lookup_property(table, "TAGS")
    columns = [
        topic,
        _same(broker_name, n),
        queue_id,
        queue_offset,
        uniq,
        tag,
        lookup_property(table, "KEYS"),
        body,
        table if include_properties else pa.nulls(n, _MAP),
        *(pc.multiply(ms, _THOUSAND).cast(_US) for ms in (born_ms, store_ms)),
        born_host,
        store_host,
        reconsume,
    ]
    batch = pa.RecordBatch.from_arrays(columns, schema=arrow_schema())
    if tags is not None:
        keep = pc.fill_null(pc.is_in(tag, value_set=pa.array(sorted(tags), pa.string())), False)
        batch = batch.filter(keep)
    return batch


def lookup_property(table: pa.MapArray, name: str) -> pa.Array:
    """Each row's value of property ``name`` (the last if it is there twice, as
    ``map_lookup``): where no row has it, or every row has it once (the usual cases), read
    from the map's flat keys and values, a third of ``map_lookup``'s cost."""
    n = len(table)
    if n and table.offset == 0:
        found = pc.equal(table.keys, _NAMES[name])
        count = pc.sum(found).as_py() or 0
        if count == 0:
            return pa.nulls(n, pa.string())
        if count == n:
            at = pc.indices_nonzero(found)  # each row's own if each lies in its row's span
            offsets = table.offsets
            inside = pc.and_(
                pc.greater_equal(at, offsets.slice(0, n)), pc.less(at, offsets.slice(1, n))
            )
            if pc.all(inside).as_py():
                return table.items.take(at)
    return pc.map_lookup(table, options=_LOOKUP[name])


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


_ODDS: list[pa.Array] = []  # 1, 3, 5, ... as int32, kept as _EVENS


def _odds(n: int) -> pa.Array:
    """The ``n`` first odd numbers."""
    if not _ODDS or len(_ODDS[0]) < n:
        _ODDS[:] = [pa.array(range(1, 2 * max(n, 65_536), 2), pa.int32())]
    return _ODDS[0].slice(0, n)


def _same(value: str, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), n)


def _ints(values: list[int] | array.array[int], code: str, kind: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array of ``kind`` (``code``: its array module type code), by
    way of a C array: ``pa.array`` of a list checks each item for an Arrow scalar."""
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(array.array(code, values))])


def _strings(spans: list[int], data: pa.Buffer) -> pa.Array:
    return _binary(spans, data).cast(pa.string())  # checks the UTF-8


def _property_map(text: pa.Array) -> pa.Array:
    """The properties text of each row as a map, split as ``decode_properties`` does."""
    trimmed = pc.utf8_rtrim(text, characters="\x02")
    present = pc.if_else(pc.equal(trimmed, _EMPTY), _NULL, trimmed)
    items = pc.split_pattern(present, "\x02")
    pairs = pc.split_pattern(items.flatten(), "\x01")
    words = pairs.flatten()  # name, value, name, value, ... if every item is a pair
    n = len(pairs)
    # clean: every item one name and one value, neither empty (byte lengths: read from the
    # offsets, where utf8_length reads every byte)
    if n and (
        pc.min_max(pc.list_value_length(pairs)).as_py() != {"min": 2, "max": 2}
        or pc.min(pc.binary_length(words)).as_py() == 0
    ):
        return pa.array([_pairs(t) for t in text.to_pylist()], _MAP)
    names, values = words.take(_evens(n)), words.take(_odds(n))
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
