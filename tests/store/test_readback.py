"""Puts read back exactly: hypothesis sequences, segment roll-over, batches, restarts
(issue 5 "Tests"; protocol.md 7, 8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiorocketmq.broker.store import GetStatus, MessageStore, PutStatus
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.message import BLANK_MAGIC, MessageExt, decode_record
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.store.conftest import HOST, StoreFactory, message, small_config

puts = st.lists(
    st.tuples(
        st.sampled_from(["A", "B", "%RETRY%g"]),
        st.integers(0, 2),
        st.binary(max_size=600),
        st.dictionaries(
            st.sampled_from(["TAGS", "KEYS", "x", "y"]),
            st.text("abcdefgh ", min_size=1, max_size=8),
            max_size=3,
        ),
        st.integers(1, 3),  # batch size
    ),
    min_size=1,
    max_size=25,
)


def stored_queue(store: MessageStore, topic: str, qid: int) -> list[MessageExt]:
    out: list[MessageExt] = []
    offset = store.min_offset(topic, qid)
    while True:
        result = store.get(topic, qid, offset, 32)
        if result.status is not GetStatus.FOUND:
            return out
        out.extend(decode_record(r) for r in result.messages)
        offset = result.next_begin_offset


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(puts)
async def test_random_puts_read_back_exactly(tmp_path_factory, sequence) -> None:  # type: ignore[no-untyped-def]
    """Every put, single or batch, reads back bit-exact by get() and by its msgId, queue by
    queue in order with consecutive offsets -- also after a clean restart."""
    root = tmp_path_factory.mktemp("store")
    store = MessageStore(small_config(root), store_host=HOST)
    await store.start()
    expected: dict[tuple[str, int], list[tuple[bytes, dict[str, str]]]] = {}
    ids: dict[str, bytes] = {}
    for topic, qid, body, props, batch in sequence:
        msgs = [message(topic, qid, body + bytes([n]), **props) for n in range(batch)]
        result = await (store.put(msgs[0]) if batch == 1 else store.put_batch(msgs))
        assert result.status is PutStatus.PUT_OK
        for msg_id, msg in zip(result.msg_ids, msgs, strict=True):
            ids[msg_id] = msg.body
            expected.setdefault((topic, qid), []).append((msg.body, props))
    for _round in range(2):
        for (topic, qid), items in expected.items():
            got = stored_queue(store, topic, qid)
            assert [(m.body, {k: v for k, v in m.properties.items()}) for m in got] == items
            assert [m.queue_offset for m in got] == list(range(len(items)))
        for msg_id, body in ids.items():
            record = store.read(parse_offset_msg_id(msg_id)[1])
            assert record is not None and decode_record(record).body == body
        await store.shutdown()
        store = MessageStore(small_config(root), store_host=HOST)
        await store.start()
        assert store.recovery is not None and store.recovery.records == 0  # clean: no scan
    await store.shutdown()


async def test_segment_roll_over_leaves_a_blank_trailer(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """protocol.md 7.1: a record that does not fit (with 8 bytes to spare) leaves the 8-byte
    blank record -- int32 remaining, int32 BLANK_MAGIC -- and starts the next segment, named
    by its 20-digit start offset."""
    store = await open_store()
    bodies = [bytes([i]) * 1000 for i in range(10)]
    results = [await store.put(message("T", 0, b)) for b in bodies]
    names = sorted(p.name for p in (tmp_path / "commitlog").iterdir())
    assert names[:2] == ["00000000000000000000", "00000000000000004096"]
    first = (tmp_path / "commitlog" / names[0]).read_bytes()
    end = results[2].phys_offset + results[2].wrote_bytes  # three fit in the first 4 KiB
    assert results[3].phys_offset == 4096
    assert int.from_bytes(first[end : end + 4], "big") == 4096 - end
    assert int.from_bytes(first[end + 4 : end + 8], "big") == BLANK_MAGIC
    got = store.get("T", 0, 0, 32)
    assert [decode_record(r).body for r in got.messages] == bodies


async def test_transactional_records_get_no_queue_unit(open_store: StoreFactory) -> None:
    """protocol.md 8.1: prepared (4) and rollback (12) records get no ConsumeQueue unit and
    queue offset 0; commit (8) and normal ones do."""
    store = await open_store()
    for flag in (0, 4, 8, 12, 0):
        msg = message("Tx", 0, bytes([flag]))
        msg.sys_flag = flag
        result = await store.put(msg)
        assert result.status is PutStatus.PUT_OK
    assert store.max_offset("Tx", 0) == 3
    got = store.get("Tx", 0, 0, 32)
    assert [decode_record(r).body for r in got.messages] == [b"\x00", b"\x08", b"\x00"]


async def test_the_store_is_locked_while_open(open_store: StoreFactory, tmp_path: Path) -> None:
    """Two stores on one directory would corrupt each other: the second is refused."""
    await open_store()
    second = MessageStore(small_config(tmp_path), store_host="127.0.0.1:1")
    with pytest.raises(ConfigError, match="in use"):
        await second.start()
