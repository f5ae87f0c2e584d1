"""Retention (issue 5; protocol.md 11): old CommitLog segments go at the deleteWhen hour
when older than fileReservedTime, or at once past diskMaxUsedSpaceRatio; ConsumeQueue
segments, index files and queue min offsets follow."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from aiorocketmq.broker.store import GetStatus
from tests.store.conftest import StoreFactory, message


async def test_expired_segments_go_and_min_offsets_move(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """At the deleteWhen hour, segments older than fileReservedTime (0 h here) are deleted --
    never the one being written -- with the ConsumeQueue segments and index files they
    leave empty; reads below the new min get OFFSET_TOO_SMALL and the new min."""
    now = time.time() + 60  # one fixed moment: the hour cannot turn during the test
    hour = f"{datetime.fromtimestamp(now).hour:02d}"
    store = await open_store(
        file_reserved_time=0, delete_when=hour, max_index_num=20, clean_resource_interval=3_600_000
    )
    for i in range(60):
        await store.put(message("T", 0, bytes([i]) * 300, KEYS=f"k{i}"))
    segments = len(store.commitlog.queue.segments)
    cq_segments = len(store.queues[("T", 0)].queue.segments)
    index_files = len(store.index.files)
    assert segments > 3 and cq_segments > 2 and index_files > 2
    deleted = store.retention.run_round(list(store.queues.values()), now=now)
    assert deleted == segments - 1  # everything but the segment being written
    assert [s.start for s in store.commitlog.queue.segments] == [store.min_phys_offset]
    cq = store.queues[("T", 0)]
    assert cq.min_offset > 0 and len(cq.queue.segments) < cq_segments
    assert len(store.index.files) < index_files
    low = store.get("T", 0, 0, 32)
    assert (low.status, low.next_begin_offset) == (GetStatus.OFFSET_TOO_SMALL, cq.min_offset)
    assert store.get("T", 0, cq.min_offset, 32).status is GetStatus.FOUND
    assert store.query("T", "k0", 10, 0, 2**62) == []
    assert len(store.query("T", "k59", 10, 0, 2**62)) == 1
    names = {p.name for p in (tmp_path / "commitlog").iterdir()}
    assert names == {f"{store.min_phys_offset:020d}"}


async def test_nothing_goes_outside_the_hour_unless_the_disk_fills(
    open_store: StoreFactory,
) -> None:
    """Outside deleteWhen, expired segments stay; past diskMaxUsedSpaceRatio (0 % here) the
    oldest go at once, expired or not."""
    now = time.time()
    other_hour = f"{(datetime.fromtimestamp(now).hour + 12) % 24:02d}"
    store = await open_store(
        file_reserved_time=0,
        delete_when=other_hour,
        clean_resource_interval=3_600_000,
        disk_max_used_space_ratio=100,  # the real disk's fill never counts as full here
    )
    for i in range(30):
        await store.put(message("T", 0, bytes([i]) * 300))
    before = len(store.commitlog.queue.segments)
    assert store.retention.run_round(list(store.queues.values()), now=now) == 0
    assert len(store.commitlog.queue.segments) == before
    full = await open_store(
        store.root.parent / "full",
        file_reserved_time=72,
        delete_when=other_hour,
        disk_max_used_space_ratio=0,
        clean_resource_interval=3_600_000,  # only the round below deletes
    )
    for i in range(30):
        await full.put(message("T", 0, bytes([i]) * 300))
    assert full.retention.run_round(list(full.queues.values()), now=now) > 0
