"""Retention (issue 5; protocol.md 11): old CommitLog segments go at the deleteWhen hour
when older than fileReservedTime, expired ones in any round past diskMaxUsedSpaceRatio, the
oldest at once past diskSpaceCleanForciblyRatio; ConsumeQueue segments, index files and queue
min offsets follow."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from aiorocketmq.broker.store import GetStatus, MessageStore
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


# levels far above any real disk's fill, so only the level a test names counts as passed
CALM = {"disk_max_used_space_ratio": 100, "disk_space_clean_forcibly_ratio": 100,
        "disk_space_warning_level_ratio": 100}  # fmt: skip


async def _filled(open_store: StoreFactory, where: Path, **config: object) -> MessageStore:
    store = await open_store(where, clean_resource_interval=3_600_000, **(CALM | config))
    for i in range(30):
        await store.put(message("T", 0, bytes([i]) * 300))
    return store


def _other_hour(now: float) -> str:
    return f"{(datetime.fromtimestamp(now).hour + 12) % 24:02d}"


async def test_nothing_goes_outside_the_hour_while_the_disk_has_room(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Outside deleteWhen, expired segments (fileReservedTime 0 h) stay."""
    now = time.time()
    store = await _filled(open_store, tmp_path / "s", file_reserved_time=0,
                          delete_when=_other_hour(now))  # fmt: skip
    before = len(store.commitlog.queue.segments)
    assert store.retention.run_round(list(store.queues.values()), now=now) == 0
    assert len(store.commitlog.queue.segments) == before


async def test_past_the_max_used_ratio_only_expired_segments_go(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Past diskMaxUsedSpaceRatio (0 % here) but under diskSpaceCleanForciblyRatio, expired
    segments go outside the deleteWhen hour and young ones stay: 4.9.8's isSpaceToDelete
    without cleanImmediately. (A broker on a 77 % full disk once deleted a segment of
    unread messages 10 s after its start.)"""
    now = time.time() + 60  # after the puts: fileReservedTime 0 h makes them expired
    young = await _filled(open_store, tmp_path / "young", file_reserved_time=72,
                          delete_when=_other_hour(now), disk_max_used_space_ratio=0)  # fmt: skip
    before = len(young.commitlog.queue.segments)
    assert young.retention.run_round(list(young.queues.values()), now=now) == 0
    assert len(young.commitlog.queue.segments) == before
    old = await _filled(open_store, tmp_path / "old", file_reserved_time=0,
                        delete_when=_other_hour(now), disk_max_used_space_ratio=0)  # fmt: skip
    segments = len(old.commitlog.queue.segments)
    assert old.retention.run_round(list(old.queues.values()), now=now) == segments - 1


async def test_past_the_forcibly_ratio_the_oldest_go_expired_or_not(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Past diskSpaceCleanForciblyRatio (0 % here), or past diskSpaceWarningLevelRatio, the
    oldest segments go at once, expired or not, unless cleanFileForciblyEnable is false
    (4.9.8's cleanImmediately and cleanAtOnce)."""
    now = time.time()
    for name, level in (("forcibly", "disk_space_clean_forcibly_ratio"),
                        ("warning", "disk_space_warning_level_ratio")):  # fmt: skip
        store = await _filled(open_store, tmp_path / name, file_reserved_time=72,
                              delete_when=_other_hour(now))  # fmt: skip
        levels: dict[str, Any] = {level: 0}  # set once filled: a 0 % warning level refuses puts
        store.reconfigure(replace(store.config, **levels))
        assert store.retention.run_round(list(store.queues.values()), now=now) > 0, name
    kept = await _filled(open_store, tmp_path / "kept", file_reserved_time=72,
                         delete_when=_other_hour(now), disk_space_clean_forcibly_ratio=0,
                         clean_file_forcibly_enable=False)  # fmt: skip
    assert kept.retention.run_round(list(kept.queues.values()), now=now) == 0
