"""decode_columns: a pull body to one list per field, equal to what decode_records gives
(protocol.md 7.1, 7.6, 9), with exact tag filtering and a stop offset."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.columns import decode_columns
from aiorocketmq.remoting.protocol.message import MessageExt, SysFlag, decode_records, encode_record
from aiorocketmq.remoting.protocol.msgid import offset_msg_id, pack_host


def record(i: int, tags: str | None = None, uniq: bool = True, body: bytes = b"") -> bytes:
    props = {"KEYS": f"k{i} x", "a": "b"} | ({"TAGS": tags} if tags else {})
    if uniq:
        props["UNIQ_KEY"] = f"U{i:030d}"
    m = MessageExt(
        topic="T", body=body or f"body {i}".encode(), properties=props, queue_id=3,
        queue_offset=100 + i, commit_log_offset=1000 * i, born_timestamp=1_700_000_000_000 + i,
        store_timestamp=1_700_000_000_500 + i, born_host="10.0.0.1:5555",
        store_host="10.0.0.2:10911", reconsume_times=i % 3,
    )  # fmt: skip
    return encode_record(m)


@given(st.lists(st.sampled_from(["TagA", "TagB", None]), max_size=20), st.booleans())
def test_columns_match_decode_records(tags: list[str | None], uniq: bool) -> None:
    data = b"".join(record(i, t, uniq) for i, t in enumerate(tags))
    cols = decode_columns(data)
    msgs = decode_records(data)
    assert cols.scanned == len(msgs) == len(cols)
    assert cols.queue_offset == [m.queue_offset for m in msgs]
    assert cols.body == [m.body for m in msgs]
    assert cols.tags == [m.properties.get("TAGS") for m in msgs]
    assert cols.keys == [m.properties.get("KEYS") for m in msgs]
    assert cols.properties == [list(m.properties.items()) for m in msgs]
    assert cols.born_timestamp == [m.born_timestamp for m in msgs]
    assert cols.store_timestamp == [m.store_timestamp for m in msgs]
    assert cols.born_host == [m.born_host for m in msgs]
    assert cols.store_host == [m.store_host for m in msgs]
    assert cols.reconsume_times == [m.reconsume_times for m in msgs]
    assert cols.msg_id == [
        m.properties.get("UNIQ_KEY") or offset_msg_id(pack_host(m.store_host), m.commit_log_offset)
        for m in msgs
    ]


def test_tags_filter_exactly_stop_offset_and_inflate() -> None:
    big = bytes(range(256)) * 40
    rec = MessageExt(topic="T", body=zlib.compress(big), sys_flag=SysFlag.COMPRESSED,
                     queue_offset=7, properties={"TAGS": "TagA"})  # fmt: skip
    data = record(0, "TagA") + record(1, "TagB") + encode_record(rec) + record(9, "TagA")
    cols = decode_columns(data, tags=frozenset({"TagA"}), include_properties=False, stop_at=109)
    assert cols.scanned == 3 and cols.last_offset == 7  # the record at 109 is not read
    assert cols.queue_offset == [100, 7] and cols.body[1] == big
    assert cols.properties == [None, None]


def test_malformed_is_refused() -> None:
    with pytest.raises(MessageDecodeError):
        decode_columns(record(0)[:-3])
