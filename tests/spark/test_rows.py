"""Arrow rows straight from pull bodies (issue 34 item 3): ``decode_layout`` +
``layout_batch`` give exactly the batch ``decode_columns`` + ``to_batch`` give, over several
bodies, with tag filtering, a stop offset, IPv6 hosts, compressed bodies, records without a
UNIQ_KEY and properties ``decode_properties`` skips parts of; so do ``decode_starts`` +
``starts_batch`` (the source's way: plain records read in Arrow, others as before)."""

from __future__ import annotations

import zlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.client import (
    Columns,
    Layout,
    Starts,
    decode_columns,
    decode_layout,
    decode_starts,
)
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import MessageExt, SysFlag, encode_record
from aiorocketmq.spark.rows import layout_batch, lookup_property, starts_batch
from aiorocketmq.spark.schema import to_batch

HOSTS = ["10.0.0.1:5555", "10.0.0.2:10911", "[::1]:10911", "[fe80::1]:7"]
V4 = HOSTS[:2]
PROPS = st.dictionaries(
    st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a", "b", ""]),
    st.sampled_from(["TagA", "TagB", "k1 k2", "v", "", "ü"]),
    max_size=4,
)


@st.composite
def record(draw: st.DrawFn, offset: int, plain: bool = False) -> bytes:
    """A record; ``plain``: of topic T, IPv4 hosts, its body not compressed."""
    body = draw(st.binary(max_size=40))
    zipped = not plain and draw(st.booleans())
    hosts = V4 if plain else HOSTS
    m = MessageExt(
        topic="T" if plain else draw(st.sampled_from(["T", "Tü"])),
        body=zlib.compress(body) if zipped else body,
        sys_flag=SysFlag.COMPRESSED if zipped else 0,
        properties=draw(PROPS), queue_id=3, queue_offset=offset,
        commit_log_offset=1000 * offset, born_timestamp=1_700_000_000_000 + offset,
        store_timestamp=1_700_000_000_500 + offset, born_host=draw(st.sampled_from(hosts)),
        store_host=draw(st.sampled_from(hosts)), reconsume_times=offset % 3,
    )  # fmt: skip
    return encode_record(m)


@st.composite
def bodies(draw: st.DrawFn, plain: bool = False) -> list[bytes]:
    out, offset = [], 100
    for size in draw(st.lists(st.integers(0, 5), max_size=4)):
        out.append(b"".join(draw(record(offset + i, plain)) for i in range(size)))
        offset += size
    return out


@given(bodies(), st.sampled_from([None, frozenset({"TagA"}), frozenset({"TagA", "TagB"})]),
       st.booleans(), st.integers(100, 120))  # fmt: skip
def test_layout_batch_is_to_batch(
    pulls: list[bytes], tags: frozenset[str] | None, props: bool, stop_at: int
) -> None:
    cols, layout = Columns(), Layout()
    for body in pulls:
        decode_columns(body, cols, tags=tags, include_properties=props, stop_at=stop_at)
        before = len(layout)
        assert decode_layout(body, layout, stop_at=stop_at) == len(layout) - before
    assert layout.last_offset == cols.last_offset and len(layout) == cols.scanned
    got = layout_batch(layout, pulls, "broker-a", tags=tags, include_properties=props)
    want = to_batch(cols, "broker-a")
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
    topics = set(want.column("topic").to_pylist())
    if len(topics) == 1:  # the one topic given, as the source gives its queue's
        known = layout_batch(layout, pulls, "broker-a", topic=topics.pop(), tags=tags,
                             include_properties=props)  # fmt: skip
        assert known.to_pylist() == want.to_pylist()


@given(st.booleans().flatmap(bodies), st.sampled_from([None, frozenset({"TagA"})]),
       st.booleans(), st.integers(100, 120))  # fmt: skip
def test_starts_batch_is_to_batch(
    pulls: list[bytes], tags: frozenset[str] | None, props: bool, stop_at: int
) -> None:
    cols, starts = Columns(), Starts()
    for body in pulls:
        decode_columns(body, cols, tags=tags, include_properties=props, stop_at=stop_at)
        before = len(starts)
        assert decode_starts(body, starts, stop_at=stop_at) == len(starts) - before
    assert starts.last_offset == cols.last_offset and len(starts) == cols.scanned
    want = to_batch(cols, "broker-a")
    topics = set(want.column("topic").to_pylist()) or {"T"}
    if len(topics) == 1:  # the source's: one queue, one topic
        got = starts_batch(starts, pulls, "broker-a", topic=topics.pop(), tags=tags,
                           include_properties=props)  # fmt: skip
        assert got.schema == want.schema
        assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("props", [{"junk\x02a": "b"}, {"a": "b\x02junk"}, {"a": "b\x01c"}])
def test_properties_with_an_item_not_a_pair(props: dict[str, str]) -> None:
    """An item without its name-value separator (or with two) is skipped, as
    ``decode_properties`` skips it: the batch takes the Python way (Arrow's split found a
    one-word item and failed the read before)."""
    data = encode_record(MessageExt(topic="T", body=b"x", queue_offset=1, properties=props))
    want = to_batch(decode_columns(data), "broker-a")
    layout, starts = Layout(), Starts()
    decode_layout(data, layout)
    decode_starts(data, starts)
    assert layout_batch(layout, [data], "broker-a").to_pylist() == want.to_pylist()
    assert starts_batch(starts, [data], "broker-a", topic="T").to_pylist() == want.to_pylist()


def test_a_malformed_record_is_refused() -> None:
    data = encode_record(MessageExt(topic="T", body=b"x", queue_offset=1))
    for bad in (data[:-3], data[:50]):
        with pytest.raises(MessageDecodeError):
            decode_layout(bad, Layout())
        with pytest.raises(MessageDecodeError):
            decode_starts(bad, Starts())


@given(st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1),
                          st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1),
                          st.sampled_from(["0.0.0.0:0", "255.255.255.255:65535", *HOSTS])),
                min_size=1, max_size=4))  # fmt: skip
def test_layout_reads_the_head_fields_as_decode_columns(
    heads: list[tuple[int, int, int, int, str]],
) -> None:
    """Signed int32 / int64 fields at their extremes and IPv4 hosts at theirs read alike by
    both decoders (decode_layout reads the head byte by byte)."""
    data = b"".join(
        encode_record(MessageExt(topic="T", body=b"x", queue_id=qid, queue_offset=off,
                                 born_timestamp=ms, store_timestamp=-ms - 1,
                                 reconsume_times=times, born_host=host, store_host=host))
        for qid, off, ms, times, host in heads
        if -ms - 1 >= -(2**63)
    )  # fmt: skip
    cols, layout = decode_columns(data), Layout()
    assert decode_layout(data, layout) == len(cols)
    assert (layout.queue_id, layout.queue_offset) == (cols.queue_id, cols.queue_offset)
    assert layout.born_timestamp == cols.born_timestamp
    assert layout.store_timestamp == cols.store_timestamp
    assert layout.reconsume_times == cols.reconsume_times
    assert (layout.born_host, layout.store_host) == (cols.born_host, cols.store_host)
    starts = Starts()
    assert decode_starts(data, starts) == len(cols)
    got = starts_batch(starts, [data], "broker-a", topic="T")
    assert got.equals(layout_batch(layout, [data], "broker-a", topic="T"))


MAPS = st.lists(
    st.lists(
        st.tuples(
            st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a"]), st.sampled_from(["x", "y", "ü"])
        ),
        max_size=3,
    ),
    max_size=6,
)


@given(MAPS, st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY"]))
def test_lookup_property_is_map_lookup_last(rows: list[list[tuple[str, str]]], name: str) -> None:
    """``lookup_property`` reads the flat keys where no row has the name or every row has it
    once; whatever the rows (a name twice, some rows without it), it equals Arrow's
    ``map_lookup`` with "last", as a dict keeps a name."""
    table = pa.array(rows, pa.map_(pa.string(), pa.string()))
    want = pc.map_lookup(table, pa.scalar(name, pa.string()), "last")
    assert lookup_property(table, name).equals(want)


@pytest.mark.parametrize(
    ("rows", "want"),
    [
        (
            [[("UNIQ_KEY", "a"), ("b", "c")], [("b", "d"), ("UNIQ_KEY", "e")]],
            ["a", "e"],
        ),  # each once
        ([[("b", "c")], []], [None, None]),  # none
        ([[("UNIQ_KEY", "a"), ("UNIQ_KEY", "b")], []], ["b", None]),  # twice and none: as many
        (
            [[("UNIQ_KEY", "a")], [("UNIQ_KEY", "b"), ("UNIQ_KEY", "c")], [("x", "y")]],
            ["a", "c", None],
        ),
    ],
)
def test_lookup_property_cases(rows: list[list[tuple[str, str]]], want: list[str | None]) -> None:
    table = pa.array(rows, pa.map_(pa.string(), pa.string()))
    assert lookup_property(table, "UNIQ_KEY").to_pylist() == want
