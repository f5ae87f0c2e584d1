"""The store's property match (issue 33): a record's properties read in place agree with the
full decode for any hosts, body and properties; ``get(match=...)`` serves only what the
match accepts, counting the rest as scanned, as DefaultMessageStore.getMessage with an
ExpressionMessageFilter."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.broker.store import GetStatus
from aiorocketmq.broker.store.properties import Properties, parse_properties
from aiorocketmq.broker.store.props import find_property, record_properties, stored_properties
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
    found = Properties(raw.decode())
    assert dict(found) == decode_record(record, 3).properties
    for name, value in props.items():
        assert found.get(name) == value
        assert find_property(raw, b"\x02" + name.encode() + b"\x01") == value.encode()


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
