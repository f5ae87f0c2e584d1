"""The store's property match (issue 33): a record's properties read in place agree with the
full decode for any hosts, body and properties; ``get(match=...)`` serves only what the
match accepts, counting the rest as scanned, as DefaultMessageStore.getMessage with an
ExpressionMessageFilter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.broker.filter.compiled import Compiled
from aiorocketmq.broker.filter.memo import Memo
from aiorocketmq.broker.store import GetStatus
from aiorocketmq.broker.store.properties import Properties, parse_properties
from aiorocketmq.broker.store.props import (
    Slot,
    find_property,
    find_value,
    find_values,
    first_bytes,
    props_span,
    record_properties,
    stored_properties,
)
from aiorocketmq.remoting.protocol.message import (
    MessageExt,
    SysFlag,
    decode_record,
    encode_properties,
    encode_record,
)
from aiorocketmq.remoting.protocol.msgid import tags_code
from tests.store.conftest import StoreFactory, message

_text = st.text(st.characters(exclude_characters="\x01\x02", exclude_categories=["Cs"]))


@given(
    props=st.dictionaries(_text.filter(bool), _text.filter(bool), max_size=6),
    body=st.binary(max_size=64),
    topic=st.text("abcXYZ_%-", min_size=1, max_size=20),
    born_v6=st.booleans(),
    store_v6=st.booleans(),
)
def test_properties_read_in_place_are_the_decoded_ones(
    props: dict[str, str], body: bytes, topic: str, born_v6: bool, store_v6: bool
) -> None:
    """MessageDecoder.decodeProperties: whatever the hosts' kinds, body and topic."""
    flags = (SysFlag.BORNHOST_V6 if born_v6 else 0) | (SysFlag.STOREHOST_V6 if store_v6 else 0)
    msg = MessageExt(topic=topic, body=body, properties=props, sys_flag=flags,
                     commit_log_offset=4096,
                     born_host="[::1]:5555" if born_v6 else "127.0.0.1:5555",
                     store_host="[::1]:10911" if store_v6 else "127.0.0.1:10911")  # fmt: skip
    record = b"pad" + encode_record(msg)
    raw = record_properties(record, 3, len(record) - 3)
    assert stored_properties(record, 3, 4096, len(record) - 3) == raw
    assert stored_properties(record, 3, 4097, len(record) - 3) is None  # not that record
    start, end = props_span(record, 3, 4096, len(record) - 3)
    assert record[start:end] == raw
    assert props_span(record, 3, 4097, len(record) - 3) == (-1, -1)
    found = Properties(raw.decode())
    assert dict(found) == decode_record(record, 3).properties
    for name, value in props.items():
        assert found.get(name) == value
        assert find_property(raw, b"\x02" + name.encode() + b"\x01") == value.encode()


@given(
    record=st.binary(min_size=91, max_size=200),
    v6=st.sampled_from([0, SysFlag.BORNHOST_V6, SysFlag.STOREHOST_V6, 3 << 4]),
    magic=st.sampled_from([0xDAA320A7, 0xDAA320AB]),
)
def test_damaged_records_are_read_in_place_as_stored_properties_reads_them(
    record: bytes, v6: int, magic: int
) -> None:
    """Any lengths a damaged record holds: the span is where stored_properties reads, or
    nothing, never an error."""
    size = len(record)
    head = size.to_bytes(4, "big") + magic.to_bytes(4, "big") + record[8:28]
    head += (4096).to_bytes(8, "big") + v6.to_bytes(4, "big")
    buf = head + record[len(head) :] if len(record) > len(head) else record
    buf = buf[:size]
    start, end = props_span(buf, 0, 4096, size)
    found = stored_properties(buf, 0, 4096, size)
    assert found is not None and buf[start:end] == found


_items = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(["a", "ab", "b", "", "a\x01"]), st.sampled_from(["", "x", "y\x01z"])
        ).map(lambda kv: f"{kv[0]}\x01{kv[1]}"),
        st.sampled_from(["a", "", "\x01a", "ba\x01x"]),
    ),
    max_size=8,
)


@given(items=_items, name=st.sampled_from(["a", "ab", "b", "c"]), pad=st.binary(max_size=3))
def test_a_value_found_in_place_is_find_propertys(items: list[str], name: str, pad: bytes) -> None:
    """find_value over a part of a buffer: the value string2messageProperties keeps (the last
    item of the name with a value), as find_property finds it in a copy of that part."""
    raw = "\x02".join(items).encode()
    buf = pad + raw + pad
    expected = find_property(raw, b"\x02" + name.encode() + b"\x01")
    assert find_value(buf, len(pad), len(pad) + len(raw), name.encode()) == expected
    assert expected == (parse_properties(raw.decode()).get(name, "").encode() or None)
    slots = [Slot(n.encode()) for n in ("a", "ab", "b", "c")]
    for _ in range(2):  # slots are reused: each walk starts afresh
        find_values(buf, len(pad), len(pad) + len(raw), slots, first_bytes(slots))
        for slot in slots:
            found = buf[slot.start : slot.stop] if slot.start >= 0 else None
            assert found == find_property(raw, b"\x02" + slot.name + b"\x01")


def test_properties_text_is_split_as_java_splits_it() -> None:
    """string2messageProperties: the first \\x01 splits name and value; an empty name or
    value, or an item without \\x01, is left out."""
    assert parse_properties("a\x01b\x01c\x02\x01x\x02y\x01\x02z\x02k\x01v\x02") == {
        "a": "b\x01c",
        "k": "v",
    }
    assert parse_properties(encode_properties({"TAGS": "T", "a": "5"})) == {"TAGS": "T", "a": "5"}


async def test_get_serves_what_the_match_accepts(open_store: StoreFactory) -> None:
    """Units the match refuses count as scanned: NO_MATCHED_MESSAGE past them when none
    passes, else the passing ones; the tag codes still apply first."""
    store = await open_store(mapped_file_size_commit_log=1 << 20)
    for i in range(10):
        await store.put(message("T", 0, b"m%d" % i, a=str(i), TAGS="even" if i % 2 else "odd"))

    def big(raw: bytes) -> bool:
        return int(Properties(raw.decode()).get("a") or "0") >= 7

    hit = store.get("T", 0, 0, 32, match=big)
    assert [decode_record(r).body for r in hit.messages] == [b"m7", b"m8", b"m9"]
    assert (hit.status, hit.next_begin_offset) == (GetStatus.FOUND, 10)
    some = store.get("T", 0, 0, 2, match=big)
    assert [decode_record(r).body for r in some.messages] == [b"m7", b"m8"]
    assert some.next_begin_offset == 9
    none = store.get("T", 0, 0, 32, match=lambda props: False)
    assert (none.status, none.next_begin_offset, none.messages) == (
        GetStatus.NO_MATCHED_MESSAGE, 10, []
    )  # fmt: skip
    both = store.get("T", 0, 0, 32, tag_codes=frozenset({tags_code("even")}), match=big)
    assert [decode_record(r).body for r in both.messages] == [b"m7", b"m9"]


async def test_a_filter_reads_records_across_segments(open_store: StoreFactory) -> None:
    """Records in several small CommitLog segments, in runs and apart (two queues): the
    SQL92 filter serves exactly what the selector says of each record's properties."""
    store = await open_store()  # 4 KiB CommitLog segments
    for i in range(60):
        props = {"a": str(i % 7), "b": "xy"[i % 2]}
        await store.put(message("T", i % 3 // 2, b"m%d" % i * (i % 5), **props))
    memo = Compiled().get("SQL92", "a > 2 AND b = 'x'")

    def read(qid: int, batch: int, match: Memo | None) -> list[bytes]:
        got: list[bytes] = []
        offset = 0
        while offset < store.max_offset("T", qid):
            result = store.get("T", qid, offset, batch, match=match)
            got += result.messages
            offset = result.next_begin_offset
        return got

    for qid in (0, 1):
        everything = read(qid, 32, None)
        expected = [r for r in everything if memo.selector.matches(decode_record(r).properties)]
        assert len(everything) == (40, 20)[qid] and expected
        assert read(qid, 4, memo) == expected
