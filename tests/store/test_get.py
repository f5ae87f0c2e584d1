"""Every GetStatus with its nextBeginOffset, exactly as protocol.md 5.2's "Store read" table
says (seed 003's getMessage), plus the scan's caps and tag filtering."""

from __future__ import annotations

import time

from aiorocketmq.broker.store import GetStatus, MessageStore
from aiorocketmq.remoting.protocol.message import decode_record
from aiorocketmq.remoting.protocol.msgid import tags_code
from tests.store.conftest import StoreFactory, message


async def fill(
    store: MessageStore, n: int, topic: str = "T", qid: int = 0, size: int = 100, tags: str = "A"
) -> None:
    for i in range(n):
        await store.put(message(topic, qid, bytes([i % 256]) * size, TAGS=tags))


async def test_statuses_and_next_offsets(open_store: StoreFactory) -> None:
    """protocol.md 5.2: no queue -> NO_MATCHED_LOGIC_QUEUE (0); offset < min -> TOO_SMALL
    (min); == max -> OVERFLOW_ONE (offset); > max -> OVERFLOW_BADLY (max); else FOUND with
    offset + units scanned."""
    store = await open_store(mapped_file_size_commit_log=1 << 20)
    none = store.get("T", 0, 0, 32)
    assert (none.status, none.next_begin_offset) == (GetStatus.NO_MATCHED_LOGIC_QUEUE, 0)
    await fill(store, 5)
    found = store.get("T", 0, 1, 2)
    assert (found.status, found.next_begin_offset, len(found.messages)) == (GetStatus.FOUND, 3, 2)
    assert (found.min_offset, found.max_offset) == (0, 5)
    one = store.get("T", 0, 5, 32)
    assert (one.status, one.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_ONE, 5)
    badly = store.get("T", 0, 9, 32)
    assert (badly.status, badly.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_BADLY, 5)
    cq = store.queues[("T", 0)]
    cq.min_offset = 2  # as retention leaves it (see test_retention for the real thing)
    small = store.get("T", 0, 0, 32)
    assert (small.status, small.next_begin_offset) == (GetStatus.OFFSET_TOO_SMALL, 2)


async def test_tag_filter_counts_filtered_units_as_scanned(open_store: StoreFactory) -> None:
    """protocol.md 5.2: the broker filters by ConsumeQueue tag code; units filtered out count
    as scanned (NO_MATCHED_MESSAGE moves nextBeginOffset past them)."""
    store = await open_store(mapped_file_size_commit_log=1 << 20)
    await fill(store, 3, tags="A")
    await fill(store, 2, tags="B")
    only_b = frozenset({tags_code("B")})
    miss = store.get("T", 0, 0, 3, tag_codes=frozenset({tags_code("C")}))
    assert (miss.status, miss.next_begin_offset) == (GetStatus.NO_MATCHED_MESSAGE, 5)
    hit = store.get("T", 0, 0, 32, tag_codes=only_b)
    assert [decode_record(r).tags for r in hit.messages] == ["B", "B"]
    assert hit.next_begin_offset == 5


async def test_caps_in_memory(open_store: StoreFactory) -> None:
    """protocol.md 5.2: at most maxMsgNums, and in memory 32 messages / 256 KiB per call."""
    store = await open_store(mapped_file_size_commit_log=1 << 22)
    await fill(store, 40, size=10_000)
    capped = store.get("T", 0, 0, 64)
    record = len(capped.messages[0])  # every record here has the same size
    fits = 256 * 1024 // record  # isTheBatchFull: the next one would pass 256 KiB
    assert len(capped.messages) == fits == capped.next_begin_offset == 25
    await fill(store, 40, topic="S", size=10)
    assert len(store.get("S", 0, 0, 64).messages) == 32


async def test_caps_on_disk(open_store: StoreFactory) -> None:
    """protocol.md 5.2: data out of memory (accessMessageInMemoryMaxRatio) is served 8
    messages / 64 KiB at a time, and the answer suggests reading from a slave."""
    store = await open_store(
        mapped_file_size_commit_log=1 << 22, access_message_in_memory_max_ratio=0
    )
    await fill(store, 20, size=100)
    await fill(store, 1, topic="Later", size=100)  # everything before it is now "on disk"
    result = store.get("T", 0, 0, 32)
    assert len(result.messages) == 8 and result.suggest_slave


async def test_scan_window_and_removed_messages(open_store: StoreFactory) -> None:
    """protocol.md 5.2: one call reads max(16000, 20*maxMsgNums) bytes of ConsumeQueue; a unit
    whose CommitLog data is gone gives MESSAGE_WAS_REMOVING; a missing ConsumeQueue segment
    gives OFFSET_FOUND_NULL with the next segment's first offset."""
    store = await open_store(
        mapped_file_size_commit_log=1 << 22, mapped_file_size_consume_queue=20 * 1000
    )
    await fill(store, 900, size=10, tags="A")
    await fill(store, 1, size=10, tags="B")
    far = store.get("T", 0, 0, 1, tag_codes=frozenset({tags_code("B")}))
    assert (far.status, far.next_begin_offset) == (GetStatus.NO_MATCHED_MESSAGE, 800)
    cq = store.queues[("T", 0)]
    for offset in (899, 900):  # the last two: their CommitLog data is gone
        unit = cq.unit(offset)
        assert unit is not None
        store.commitlog.queue.segments[0].write(unit.phys + 4, b"\x00\x00\x00\x00")
    removing = store.get("T", 0, 899, 32)
    assert (removing.status, removing.next_begin_offset) == (GetStatus.MESSAGE_WAS_REMOVING, 901)
    after_a_gap = store.get("T", 0, 898, 32)  # Java scans on past a removed message
    assert (after_a_gap.status, len(after_a_gap.messages)) == (GetStatus.FOUND, 1)


async def test_offset_found_null(open_store: StoreFactory) -> None:
    """protocol.md 5.2: a ConsumeQueue unit that cannot be read -> OFFSET_FOUND_NULL, next =
    start of the next ConsumeQueue file."""
    store = await open_store(mapped_file_size_commit_log=1 << 20)  # 10 units per CQ segment
    await fill(store, 25)
    cq = store.queues[("T", 0)]
    cq.queue.segments.pop(1).delete()  # units 10-19 unreadable
    got = store.get("T", 0, 12, 32)
    assert (got.status, got.next_begin_offset) == (GetStatus.OFFSET_FOUND_NULL, 20)


async def test_offsets_by_time(open_store: StoreFactory) -> None:
    """protocol.md 5.3, 5.x semantics: LOWER is the first offset stored at or after the time
    (max if all are older); UPPER the last stored at or before it."""
    store = await open_store(mapped_file_size_commit_log=1 << 20)
    stamps = []
    for i in range(4):
        result = await store.put(message("T", 0, bytes([i])))
        stamps.append(result.store_timestamp)
        while time.time_ns() // 1_000_000 <= stamps[-1] + 1:
            pass  # distinct millisecond stamps
    assert store.offset_by_time("T", 0, stamps[2]) == 2
    assert store.offset_by_time("T", 0, stamps[2] - 1) == 2
    assert store.offset_by_time("T", 0, stamps[3] + 10_000) == 4
    assert store.offset_by_time("T", 0, stamps[2] + 1, upper=True) == 2
    assert store.offset_by_time("T", 0, 0) == 0
    assert store.earliest_store_time("T", 0) == stamps[0]
    assert store.store_time("T", 0, 3) == stamps[3]
    assert store.earliest_store_time("Nope", 0) == -1


async def test_runs_of_records_and_bad_heads(open_store: StoreFactory) -> None:
    """Issue 20: a get copies adjacent records as one run, and several runs (another queue's
    records between, a segment change) back to back, each byte as stored. Every record's
    head is still checked: one whose size, offset or magic does not match is not served,
    the records around it are."""
    store = await open_store()  # 4 KiB CommitLog segments: about 9 of these records each
    for i in range(40):
        await store.put(message("T", int(i % 4 == 3), bytes([i]) * 300))
    cq = store.queues[("T", 0)]
    units = [u for u in cq.units(0, cq.max_offset)]
    records = [r for u in units if (r := store.commitlog.read_record(u.phys)) is not None]
    first = store.get("T", 0, 0, 4)  # in one segment, two runs: checked all at once
    assert first.body == b"".join(records[:4]) and first.next_begin_offset == 4
    for unit, at, patch in ((units[4], 0, 1), (units[9], 28, 1), (units[16], 4, 1)):
        seg = store.commitlog.queue.find(unit.phys)
        assert seg is not None
        head = int.from_bytes(seg.read(unit.phys - seg.start + at, 4), "big")
        seg.write(unit.phys - seg.start + at, (head + patch).to_bytes(4, "big"))
    assert store.get("T", 0, 3, 3).messages == [records[3], records[5], records[6]]
    found = store.get("T", 0, 0, 32)
    expected = [r for k, r in enumerate(records) if k not in (4, 9, 16)]
    assert found.messages == expected and len(expected) == 27
    assert found.body == b"".join(expected) and found.sizes == list(map(len, expected))


async def test_at_once_serves_what_the_scan_serves(open_store: StoreFactory) -> None:
    """Issue 20: a get without a tag filter reads its units and checks its records in a few
    calls when it can; it serves exactly what the unit-by-unit scan serves (which a filter
    matching every tag takes): holes and blanks skipped, the caps of count and bytes (the
    first record whatever its size), on-disk caps for records further back than the memory
    ratio allows."""
    store = await open_store(
        mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 1000
    )
    for i in range(40):
        await store.put(message("T", 0, bytes([i]) * ((i * 397) % 3000 + 10), TAGS="A"))
    cq = store.queues[("T", 0)]
    unit = cq.unit(39)
    assert unit is not None
    cq.put(41, unit.phys, unit.size, unit.tags_code)  # a blank at 40 (fillPreBlank) ...
    cq.put(42, 0, 0, 0)  # ... and a hole at 42 (a unit never written)
    for i in range(43, 60):
        await store.put(message("T", 0, bytes([i]) * ((i * 397) % 3000 + 10), TAGS="A"))
    units = list(cq.units(0, 60))
    middle, every_tag = units[30].phys, frozenset({tags_code("A")})
    for memory in (1 << 62, store.max_phys_offset - middle):  # all in memory; 0-29 on disk
        store.reader.memory = memory
        for offset in range(60):
            three = sum(u.size for u in units[offset : offset + 3] if not u.blank)
            for max_msgs, max_bytes in ((1, None), (5, None), (32, None), (32, 1), (32, three)):
                fast = store.get("T", 0, offset, max_msgs, max_bytes=max_bytes)
                scan = store.get("T", 0, offset, max_msgs, max_bytes=max_bytes, tag_codes=every_tag)
                assert fast == scan, (memory, offset, max_msgs, max_bytes)
