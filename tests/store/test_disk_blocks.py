"""The disk a store takes (issue 31 item 5): a CommitLog segment keeps its full size (1 GiB by
default: names, offsets and tools unchanged) but its blocks come ``commitLogAllocateStepMb``
at a time ahead of the writer, so a new broker does not take 1 GiB of disk at once. No byte is
written where no block is (a full disk refuses the put: tests/broker/test_disk_full.py), and
recovery after a crash works on segments whose blocks end part way, leaving their holes
alone. Blocks are measured as the filesystem counts them (``st_blocks``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiorocketmq.broker.store import MessageStore, PutStatus, warm
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import HOST, StoreFactory, message
from tests.util import wait_until

MIB = 1 << 20
GIB = 1 << 30


def allocated(path: Path) -> int:
    """Bytes of disk ``path`` holds (a file), or the files under it (a folder)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files)


def segment_file(root: Path, start: int = 0) -> Path:
    return root / "commitlog" / f"{start:020d}"


def body(i: int, size: int) -> bytes:
    return i.to_bytes(4, "big") * (size // 4)


def bodies(store: MessageStore) -> list[bytes]:
    """The bodies queue T/0 serves, in order."""
    offset, out = 0, []
    while offset < store.max_offset("T", 0):
        got = store.get("T", 0, offset, 32)
        assert got.next_begin_offset > offset, got.status
        out += [decode_record(r).body for r in got.messages]
        offset = got.next_begin_offset
    return out


async def test_a_new_broker_takes_a_step_of_disk_not_a_segment(tmp_path: Path) -> None:
    """The default config (1 GiB segments, index on): after the first put the store holds
    64 MiB of CommitLog blocks (the first step), 20 MB of index slots and a chunk of
    ConsumeQueue and index entries -- not the 1 GiB segment it held before."""
    config = StoreConfig(store_path_root_dir=str(tmp_path / "store"))
    store = MessageStore(config, store_host=HOST)
    await store.start()
    try:
        put = await store.put(message(body=b"first", KEYS="k1"))
        assert put.status is PutStatus.PUT_OK
        seg = segment_file(tmp_path / "store")
        assert seg.stat().st_size == GIB  # the file's size is the segment's, as before
        assert allocated(seg) <= 64 * MIB, allocated(seg)
        assert allocated(tmp_path / "store") < 96 * MIB, allocated(tmp_path / "store")
        assert store.disk_usage()["commitlog"] == 64 * MIB
    finally:
        await store.shutdown()


async def test_blocks_grow_a_step_at_a_time_ahead_of_the_writer(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """1 MiB steps in 8 MiB segments, 100 KiB records: after each put the segment being
    written has blocks for every byte written and at most a step (and a record) more; a
    segment left behind holds blocks to its end, its blank trailer included."""
    store = await open_store(mapped_file_size_commit_log=8 * MIB, commit_log_allocate_step_mb=1)
    for i in range(200):  # 20 MiB: three segments
        put = await store.put(message(body=body(i, 100 * 1024)))
        assert put.status is PutStatus.PUT_OK
        end = put.phys_offset + put.wrote_bytes
        start = end - end % (8 * MIB)
        blocks = allocated(segment_file(tmp_path, start))
        assert end - start <= blocks <= end - start + MIB + 101 * 1024, (i, end, blocks)
    assert allocated(segment_file(tmp_path, 0)) == 8 * MIB
    assert allocated(segment_file(tmp_path, 8 * MIB)) == 8 * MIB
    assert bodies(store) == [body(i, 100 * 1024) for i in range(200)]


async def test_a_crash_recovers_segments_allocated_part_way(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """A crash with the last segment allocated part way and a torn record past the end:
    the restart keeps every whole record, zeroes the torn bytes without allocating the
    holes after them (up to the high-water mark, 64 MiB on), and writes on from the end,
    allocating again from there; a second crash recovers everything written."""
    size, step = 64 * MIB, 1
    store = await open_store(mapped_file_size_commit_log=size, commit_log_allocate_step_mb=step)
    puts = [await store.put(message(body=body(i, 64 * 1024))) for i in range(40)]
    await store.abandon()  # a crash
    seg = segment_file(tmp_path)
    end = puts[-1].phys_offset + puts[-1].wrote_bytes
    fd = os.open(seg, os.O_WRONLY)
    try:  # a record torn by the crash, past the end, in the allocated part
        os.pwrite(fd, b"\x00\x01\x00\x00" + b"\xab" * 2000, end)
    finally:
        os.close(fd)
    before = allocated(seg)
    assert end < before < end + 2 * MIB  # allocated part way: the rest of 64 MiB is holes

    store = await open_store(mapped_file_size_commit_log=size, commit_log_allocate_step_mb=step)
    assert store.recovery is not None and store.recovery.torn > 0
    assert store.max_phys_offset == end
    assert allocated(seg) <= before  # the holes after the torn bytes stayed holes
    with seg.open("rb") as f:
        f.seek(end)
        assert f.read(4096) == bytes(4096)
    more = [await store.put(message(body=body(i, 64 * 1024))) for i in range(40, 100)]
    assert all(p.status is PutStatus.PUT_OK for p in more)
    await store.abandon()

    store = await open_store(mapped_file_size_commit_log=size, commit_log_allocate_step_mb=step)
    assert bodies(store) == [body(i, 64 * 1024) for i in range(100)]
    final = more[-1].phys_offset + more[-1].wrote_bytes
    assert final <= allocated(seg) <= final + 2 * MIB


async def test_a_slave_allocates_as_it_appends_and_after_a_cut(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """A slave's raw appends (chunks of up to 1 MiB, many ending inside a record) allocate
    its segments a step at a time as its master's were: byte-identical files, the last
    segment holding blocks for what it was sent and at most a step more. Restarted part
    way, it allocates again from its end; cut back into an earlier segment (a slave ahead
    of its master), it writes on there (blocks allocated again from the cut: none taken)."""
    sizes = {"mapped_file_size_commit_log": 8 * MIB, "commit_log_allocate_step_mb": 1}
    master = await open_store(tmp_path / "m", **sizes)
    for i in range(200):  # 20 MiB: three segments
        assert (await master.put(message(body=body(i, 100 * 1024)))).status is PutStatus.PUT_OK
    end = master.max_phys_offset

    async def copy(slave: MessageStore, upto: int, *, blocks_checked: bool = True) -> None:
        while (pos := slave.max_phys_offset) < upto:
            data = master.read_raw(pos, min(MIB - 12_345, upto - pos))
            await slave.append_raw(pos, data)
            stop = slave.max_phys_offset
            if not blocks_checked:
                continue
            blocks = allocated(segment_file(slave.root, stop - 1 - (stop - 1) % (8 * MIB)))
            assert stop - (stop - 1) // (8 * MIB) * (8 * MIB) <= blocks, (stop, blocks)
            assert blocks <= (stop - 1) % (8 * MIB) + 1 + 2 * MIB, (stop, blocks)

    slave = await open_store(tmp_path / "s", **sizes)
    await copy(slave, 11 * MIB)
    await slave.abandon()
    slave = await open_store(tmp_path / "s", **sizes)
    await copy(slave, end)
    files = sorted((tmp_path / "m" / "commitlog").iterdir())
    assert len(files) == 3
    for mine in files:
        assert (tmp_path / "s" / "commitlog" / mine.name).read_bytes() == mine.read_bytes()
    assert allocated(segment_file(slave.root, 0)) == 8 * MIB
    assert bodies(slave) == bodies(master)

    slave.truncate_to(4 * MIB)  # inside a record: the copy below brings the rest of it
    assert slave.max_phys_offset == 4 * MIB
    assert not segment_file(slave.root, 8 * MIB).exists()
    await copy(slave, end, blocks_checked=False)  # the cut keeps the blocks it had
    for mine in files:
        assert (tmp_path / "s" / "commitlog" / mine.name).read_bytes() == mine.read_bytes()
    assert bodies(slave) == bodies(master)


async def test_pages_are_mapped_ahead_of_the_writer_after_a_restart(
    open_store: StoreFactory,
) -> None:
    """A restart counts the blocks up to the end of the log as allocated, in whole pages, so
    the thread mapping pages ahead of the writer (warm.py) goes on after it: from an end
    inside a page, madvise refused the unaligned start with EINVAL and the thread stopped
    for the rest of the process."""
    if warm.WARMER is None:
        pytest.skip("no libc madvise through ctypes: no thread maps pages ahead")
    sizes = {"mapped_file_size_commit_log": 16 * MIB, "commit_log_allocate_step_mb": 1}
    store = await open_store(**sizes)
    assert (await store.put(message(body=b"x" * 1000))).status is PutStatus.PUT_OK
    await store.shutdown()
    store = await open_store(**sizes)
    assert store.max_phys_offset % 4096 != 0
    for i in range(30):  # 3 MiB: past the blocks counted at the restart, and a step on
        assert (await store.put(message(body=body(i, 100 * 1024)))).status is PutStatus.PUT_OK
    await wait_until(warm.WARMER.idle, timeout=10)
    assert warm.WARMER.works
    seg = store.commitlog.queue.segments[0]
    assert seg.prefaulted > store.max_phys_offset  # mapped ahead of the writer
