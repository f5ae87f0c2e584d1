"""Batch puts are all or nothing (issue 5 "Bad input and faults": a refused write never leaves
a half-written batch that reads back as valid; CommitLog.putMessages keeps a batch in one
segment)."""

from __future__ import annotations

from pathlib import Path

from aiorocketmq.broker.store import GetStatus, MessageStore, PutStatus
from aiorocketmq.remoting.protocol.message import MessageExt, decode_record
from tests.store.conftest import StoreFactory, message

SEGMENT = 4096


def batch(n: int, tag: str) -> list[MessageExt]:
    return [message("T", 0, f"{tag}{i}".encode() * 150, KEYS=f"{tag}{i}") for i in range(n)]


async def fill_first_segment(store: MessageStore) -> None:
    """Singles until a three-message batch no longer fits the first segment."""
    while store.max_phys_offset < SEGMENT - 600:
        assert (await store.put(message("T", 0, b"s" * 200))).status is PutStatus.PUT_OK


async def test_batch_not_stored_when_its_segment_cannot_be_created(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """A batch that needs a new segment which cannot be created answers
    CREATE_MAPPED_FILE_FAILED with none of its messages stored; once the segment can be
    made the same batch is stored whole, at the start of that segment, offsets consecutive."""
    store = await open_store()
    await fill_first_segment(store)
    before = store.max_offset("T", 0)
    squatter = tmp_path / "commitlog" / f"{SEGMENT:020d}"
    squatter.mkdir()  # the next segment's name is taken: its creation fails
    failed = await store.put_batch(batch(3, "a"))
    assert failed.status is PutStatus.CREATE_MAPPED_FILE_FAILED
    assert store.max_offset("T", 0) == before
    assert store.get("T", 0, before, 32).status is GetStatus.OFFSET_OVERFLOW_ONE
    assert store.query("T", "a0", 8, 0, 2**62) == []

    squatter.rmdir()
    ok = await store.put_batch(batch(3, "b"))
    assert ok.status is PutStatus.PUT_OK
    assert (ok.phys_offset, ok.queue_offset) == (SEGMENT, before)
    got = store.get("T", 0, before, 32)
    assert [decode_record(r).queue_offset for r in got.messages] == [before + i for i in range(3)]
    assert [decode_record(r).body[:2] for r in got.messages] == [b"b0", b"b1", b"b2"]


async def test_batch_with_oversized_properties_stores_nothing(open_store: StoreFactory) -> None:
    """PROPERTIES_SIZE_EXCEEDED for any message of a batch refuses the whole batch: the
    messages before it are not stored either."""
    store = await open_store()
    await store.put(message("T", 0, b"first"))
    end, queue_max = store.max_phys_offset, store.max_offset("T", 0)
    bad = [*batch(2, "c"), message("T", 0, b"big", big="v" * 33_000)]
    result = await store.put_batch(bad)
    assert result.status is PutStatus.PROPERTIES_SIZE_EXCEEDED
    assert (store.max_phys_offset, store.max_offset("T", 0)) == (end, queue_max)
    assert store.query("T", "c0", 8, 0, 2**62) == []
    after = await store.put(message("T", 0, b"next"))
    assert (after.phys_offset, after.queue_offset) == (end, queue_max)
