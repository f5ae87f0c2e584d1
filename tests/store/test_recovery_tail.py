"""The tail after a crash (issue 29 item 5; highwater.py): a crash restart checks the log past
its end only up to the high-water mark, and that is enough -- a stale but valid record the
pages before it were lost from is never taken back into the log, however far past the end it
lies; unsynced pages dropped at random (a power loss) leave a prefix of what was written,
with everything made durable in it."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from aiorocketmq.broker.store import GetStatus, MessageStore, PutResult
from aiorocketmq.broker.store.checkpoint import read_checkpoint
from aiorocketmq.broker.store.flush import ROUND_BYTES
from aiorocketmq.broker.store.highwater import AHEAD, HighWater
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import StoreFactory, message
from tests.util import wait_until

MIB = 1 << 20
PAGE = 4096
HOUR = 3_600_000


def segment_file(root: Path, start: int = 0) -> Path:
    return root / "commitlog" / f"{start:020d}"


def zero(path: Path, start: int, stop: int) -> None:
    """Bytes ``[start, stop)`` of ``path`` back to zeros, as if never written back."""
    fd = os.open(path, os.O_WRONLY)
    try:
        for at in range(start, stop, MIB):
            os.pwrite(fd, bytes(min(MIB, stop - at)), at)
    finally:
        os.close(fd)


def served(store: MessageStore, topic: str = "T", queue_id: int = 0) -> list[bytes]:
    """Every record the queue serves, read as pulls read it (a get at a time)."""
    out: list[bytes] = []
    offset = store.min_offset(topic, queue_id)
    while offset < store.max_offset(topic, queue_id):
        got = store.get(topic, queue_id, offset, 32)
        assert got.status is GetStatus.FOUND and got.next_begin_offset > offset, got.status
        out += got.messages
        offset = got.next_begin_offset
    return out


def bodies(store: MessageStore) -> list[bytes]:
    return [decode_record(r).body for r in served(store)]


def body(i: int) -> bytes:
    return i.to_bytes(4, "big") * (16 * 1024)  # 64 KiB


async def test_a_stale_record_far_past_a_torn_tail_is_never_taken_back(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """~100 MiB written and not yet flushed; a power loss keeps the pages of the last record
    but loses those of everything after the 10th. The restart ends the log at the 10th and
    zeroes the last record, ~100 MiB past the end (more than AHEAD: only the mark reaches
    it). Records of the same size written again then end exactly where it starts: after
    another crash it must not come back as the next record."""
    size = 256 * MIB
    store = await open_store(mapped_file_size_commit_log=size, flush_interval_commit_log=HOUR)
    first = [await store.put(message("T", 0, body(i))) for i in range(1600)]
    k, last = 10, first[-1]
    assert last.phys_offset - first[k].phys_offset > AHEAD
    await store.abandon()
    zero(segment_file(tmp_path), first[k].phys_offset, last.phys_offset)

    store = await open_store(mapped_file_size_commit_log=size)
    assert store.recovery is not None and store.max_phys_offset == first[k].phys_offset
    assert store.recovery.torn > 0  # the stale record was found, and zeroed
    assert store.read(last.phys_offset) is None
    seg = store.commitlog.queue.segments[0]
    assert seg.first_nonzero(first[k].phys_offset, size) == size  # nothing left past the end
    again = [await store.put(message("T", 0, b"new" + body(i)[3:])) for i in range(k, 1599)]
    assert again[-1].phys_offset + again[-1].wrote_bytes == last.phys_offset  # lined up
    await store.abandon()

    store = await open_store(mapped_file_size_commit_log=size)
    assert store.max_phys_offset == last.phys_offset
    assert store.read(last.phys_offset) is None
    assert store.max_offset("T", 0) == 1599
    got = bodies(store)
    assert got[:k] == [body(i) for i in range(k)] and all(b[:3] == b"new" for b in got[k:])


async def test_writes_never_pass_the_durable_mark(open_store: StoreFactory, tmp_path: Path) -> None:
    """The mark on disk is past every byte written, and is raised ahead of the writer (off
    the loop, in a thread) as the log grows past it."""
    store = await open_store(mapped_file_size_commit_log=256 * MIB)
    mark = HighWater(tmp_path)
    before = mark.read()
    assert before is not None and before == AHEAD  # set at start, the log being empty
    result: PutResult | None = None
    for i in range(2 * AHEAD // (256 * 1024)):
        result = await store.put(message("T", 0, bytes(256 * 1024 - 200)))
        on_disk = mark.read()
        assert on_disk is not None and on_disk >= store.max_phys_offset, i
    assert result is not None and store.max_phys_offset > 1.9 * AHEAD
    await store.highwater.drain()
    after = mark.read()
    assert after is not None and after >= store.max_phys_offset + AHEAD // 2


async def test_without_a_mark_the_whole_tail_is_checked(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """A store an older version wrote has no mark: its first crash restart checks the rest
    of the segment, as before; a mark that cannot be read is treated the same."""
    store = await open_store(mapped_file_size_commit_log=MIB)
    await store.put(message("T", 0, b"x"))
    await store.abandon()
    (tmp_path / "highwater").unlink()
    store = await open_store(mapped_file_size_commit_log=MIB)
    assert store.recovery is not None and store.recovery.tail == MIB - store.max_phys_offset
    await store.abandon()
    (tmp_path / "highwater").write_text("{not json")
    store = await open_store(mapped_file_size_commit_log=MIB)
    assert store.recovery is not None and store.recovery.tail == MIB - store.max_phys_offset


async def test_a_crash_scans_from_the_checkpoint_not_its_segment(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """The checkpoint's safe point is a record boundary: a crash restart verifies and
    re-dispatches only what came after it. A checkpoint an older version wrote (no
    ``exact``; a slave's offset could fall inside a record) starts at its segment."""
    store = await open_store(mapped_file_size_commit_log=MIB)
    for i in range(30):
        await store.put(message("T", 0, bytes([i]) * 100))
    await store.shutdown()
    cp = read_checkpoint(tmp_path)
    assert cp is not None and cp.exact and cp.safe == store.max_phys_offset

    store = await open_store(mapped_file_size_commit_log=MIB, flush_interval_consume_queue=HOUR)
    tail = [await store.put(message("T", 0, bytes([i]) * 100)) for i in range(30, 33)]
    await store.abandon()  # no round ran since: the checkpoint is where the clean stop left it
    store = await open_store(mapped_file_size_commit_log=MIB)
    assert store.recovery is not None
    assert (store.recovery.start, store.recovery.records) == (tail[0].phys_offset, 3)
    await store.abandon()

    old = {"commitlog": cp.commitlog, "dispatched": cp.dispatched, "timestamp": cp.timestamp}
    (tmp_path / "checkpoint").write_text(json.dumps(old))
    store = await open_store(mapped_file_size_commit_log=MIB)
    assert store.recovery is not None and (store.recovery.start, store.recovery.records) == (0, 33)
    assert bodies(store) == [bytes([i]) * 100 for i in range(33)]


async def test_unsynced_pages_dropped_at_random_leave_a_durable_prefix(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """A power loss simulated round after round on one store: after a flush at a random
    point, more is written, then each page past the flushed offset is lost or kept at random
    (a kept page past a lost one is how stale records appear). Each restart keeps every
    record made durable, serves only records written (each at its offset, none damaged),
    leaves zeros past the end of the log, and never takes a record of an earlier round
    back once the log grows over where it was."""
    rng = random.Random(29)
    config = {"mapped_file_size_commit_log": 2 * MIB, "flush_interval_commit_log": HOUR,
              "flush_interval_consume_queue": HOUR}  # fmt: skip
    written: dict[int, bytes] = {}  # phys -> body, of the records that may be served
    for round_ in range(12):
        store = await open_store(**config)
        results = []
        for i in range(rng.randrange(50, 400)):
            body = f"r{round_}-{i}-".encode() + rng.randbytes(rng.randrange(0, 9000))
            results.append((await store.put(message("T", 0, body)), body))
            if i == 20:
                await store.flusher.flush()
        durable = store.flusher.flushed
        crash_end = store.max_phys_offset
        await store.abandon()
        for result, body in results:
            written[result.phys_offset] = body
        for page in range(durable - durable % PAGE, crash_end, PAGE):
            if rng.random() < 0.5:
                seg_start = page - page % (2 * MIB)
                path = segment_file(tmp_path, seg_start)
                if path.exists():
                    zero(path, max(page, durable) - seg_start, page + PAGE - seg_start)

        store = await open_store(**config)
        end = store.max_phys_offset
        assert end >= durable, round_
        for result, body in results:
            if result.phys_offset + result.wrote_bytes <= durable:
                record = store.read(result.phys_offset)
                assert record is not None and decode_record(record).body == body, round_
        for record in served(store):
            msg = decode_record(record)
            assert written.get(msg.commit_log_offset) == msg.body, round_
            assert msg.commit_log_offset < end
        last = store.commitlog.queue.last()
        assert last is not None and last.first_nonzero(end - last.start, last.size) == last.size
        for phys in [p for p in written if p >= end]:
            del written[phys]  # lost: from now on the log grows over where they were
        await store.shutdown()


async def test_a_round_runs_early_once_enough_was_appended(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """With rounds an hour apart, 16 MiB appended still run a flush and checkpoint round at
    once (the CommitLog flushed first), so a crash restart re-verifies no more than that."""
    config = {"mapped_file_size_commit_log": 64 * MIB, "flush_interval_commit_log": HOUR,
              "flush_interval_consume_queue": HOUR}  # fmt: skip
    store = await open_store(**config)
    for i in range(600):  # ~38 MiB
        await store.put(message("T", i % 4, bytes(64 * 1024)))
    end = store.max_phys_offset

    def checkpointed() -> bool:
        cp = read_checkpoint(tmp_path)
        return cp is not None and cp.safe > end - ROUND_BYTES

    await wait_until(checkpointed, timeout=10)
    await store.abandon()
    store = await open_store(**config)
    assert store.recovery is not None and store.recovery.end == end
    assert store.recovery.end - store.recovery.start <= ROUND_BYTES
