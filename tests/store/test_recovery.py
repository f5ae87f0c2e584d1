"""Crash recovery (issue 5 "Tests" and "Bad input and faults"; design.md 10): acknowledged
messages survive SIGKILL bit-exact, torn tails are cut, corruption is reported and never
served, ConsumeQueues agree with the CommitLog."""

from __future__ import annotations

import hashlib
import random
import shutil
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from aiorocketmq.broker.store import GetStatus, MessageStore, PutStatus
from aiorocketmq.broker.store.config import FlushDiskType
from aiorocketmq.broker.store.highwater import HighWater
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import HOST, StoreFactory, message, small_config
from tests.store.replication import killed_writer_lines

Acked = tuple[int, int, str, int, str]  # phys, queue offset, topic, queue id, body digest


def run_writer(root: Path, round_: int, kill_after: float) -> list[Acked]:
    """Run the writer, SIGKILL it after ``kill_after`` seconds of writing, return what it
    acknowledged."""
    lines = killed_writer_lines(
        "tests.store.crash_writer", str(root), str(round_), kill_after=kill_after
    )
    acked = []
    # only whole lines are acknowledgements: the kill may land in the middle of one
    for line in lines:
        fields = line.split()
        assert len(fields) == 5, f"the writer printed something else: {line!r}"
        phys, qoff, topic, qid, digest = fields
        acked.append((int(phys), int(qoff), topic, int(qid), digest))
    return acked


def check_consistency(store: MessageStore) -> None:
    """Every ConsumeQueue unit points at a record of its topic, queue and queue offset."""
    for (topic, qid), cq in store.queues.items():
        for unit in cq.units(cq.min_offset, cq.max_offset - cq.min_offset):
            if unit.blank:
                continue
            record = store.read(unit.phys)
            assert record is not None and len(record) == unit.size, (topic, qid, unit)
            msg = decode_record(record)
            assert (msg.topic, msg.queue_id, msg.queue_offset) == (topic, qid, unit.offset)


@pytest.mark.slow
async def test_acknowledged_messages_survive_sigkill(tmp_path: Path) -> None:
    """Issue 5: a SYNC_FLUSH writer killed at random moments, 24 rounds on one store: after
    each recovery every acknowledged message reads back bit-exact (by offset and by queue),
    nothing past the torn tail is served, and ConsumeQueues agree with the CommitLog; and
    (issue 29) the killed writer never wrote past its durable high-water mark."""
    rng = random.Random(2026)
    acked: list[Acked] = []
    for round_ in range(24):
        acked += run_writer(tmp_path, round_, rng.uniform(0.05, 0.4))
        mark = HighWater(tmp_path).read()  # the writer's durable high-water mark
        store = MessageStore(
            small_config(
                tmp_path,
                flush_disk_type=FlushDiskType.SYNC_FLUSH,
                mapped_file_size_commit_log=64 * 1024,
            ),
            store_host=HOST,
        )
        await store.start()
        assert mark is not None and mark >= store.max_phys_offset  # it never wrote past it
        for phys, qoff, topic, qid, digest in acked:
            record = store.read(phys)
            assert record is not None, f"round {round_}: acknowledged message at {phys} lost"
            msg = decode_record(record)
            assert hashlib.sha256(msg.body).hexdigest() == digest
            assert (msg.topic, msg.queue_id, msg.queue_offset) == (topic, qid, qoff)
            got = store.get(topic, qid, qoff, 1)
            assert got.status is GetStatus.FOUND and got.messages[0] == record
        assert store.read(store.max_phys_offset) is None  # nothing after the end is served
        check_consistency(store)
        if round_ % 2:
            await store.shutdown()  # alternate clean stops and crashes between rounds
        else:
            await store.abandon()
    assert len(acked) > 200


async def test_torn_tail_at_every_byte_recovers_the_prefix(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Issue 5: cutting the last record at every byte (zeroing from there) recovers exactly
    the messages before it, and new puts go on where it ended."""
    crashed = tmp_path / "crashed"
    store = await open_store(crashed)
    results = [await store.put(message("T", 0, bytes([i]) * 40, KEYS=f"k{i}")) for i in range(5)]
    await store.abandon()  # a crash: the abort file stays
    last = results[-1]
    segment = crashed / "commitlog" / f"{0:020d}"
    for cut in range(last.wrote_bytes):
        trial = tmp_path / f"cut{cut}"
        shutil.copytree(crashed, trial)
        data = bytearray((trial / "commitlog" / segment.name).read_bytes())
        data[last.phys_offset + cut : last.phys_offset + last.wrote_bytes] = bytes(
            last.wrote_bytes - cut
        )
        (trial / "commitlog" / segment.name).write_bytes(bytes(data))
        recovered = await open_store(trial)
        assert recovered.max_phys_offset == last.phys_offset
        assert recovered.max_offset("T", 0) == 4
        got = recovered.get("T", 0, 0, 32)
        assert [decode_record(r).body for r in got.messages] == [bytes([i]) * 40 for i in range(4)]
        again = await recovered.put(message("T", 0, b"after"))
        assert (again.phys_offset, again.queue_offset) == (last.phys_offset, 4)
        await recovered.shutdown()
        shutil.rmtree(trial)


async def test_corruption_mid_segment_is_reported_and_never_served(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Issue 5 "Bad input and faults": corrupt bytes in the middle of a segment (not the tail)
    are detected at recovery and reported; that message is never served (get, read, query);
    the messages after it still are."""
    store = await open_store()
    results = [
        await store.put(message("T", 0, bytes([65 + i]) * 50, KEYS=f"k{i}")) for i in range(8)
    ]
    await store.abandon()
    victim = results[3]
    path = tmp_path / "commitlog" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    data[victim.phys_offset + 120] ^= 0xFF  # a body byte: the CRC no longer matches
    path.write_bytes(bytes(data))
    with capture_logs() as logs:
        recovered = await open_store()
    corrupt = [e for e in logs if e["event"] == "commitlog_corrupt"]
    assert len(corrupt) == 1 and corrupt[0]["start"] == victim.phys_offset
    got = recovered.get("T", 0, 0, 32)
    bodies = [decode_record(r).body[:1] for r in got.messages]
    assert bodies == [b"A", b"B", b"C", b"E", b"F", b"G", b"H"]
    assert recovered.read(victim.phys_offset) is None  # by offset (VIEW_MESSAGE_BY_ID) too
    assert recovered.query("T", "k3", 10, 0, 2**62) == []
    assert len(recovered.query("T", "k4", 10, 0, 2**62)) == 1
    check_consistency(recovered)


async def test_refusals_write_nothing(open_store: StoreFactory, tmp_path: Path) -> None:
    """Issue 5: a nearly full disk, a read-only store, an oversize body or properties, and a
    segment that cannot be created each get their status, and nothing is half-written."""
    store = await open_store(max_message_size=1000)
    before = store.max_phys_offset
    assert (await store.put(message(body=b"x" * 1001))).status is PutStatus.MESSAGE_ILLEGAL
    big_props = message(body=b"x", big="v" * 33_000)
    assert (await store.put(big_props)).status is PutStatus.PROPERTIES_SIZE_EXCEEDED
    store.set_slave(True)
    assert (await store.put(message())).status is PutStatus.SERVICE_NOT_AVAILABLE
    store.set_slave(False)
    assert store.max_phys_offset == before
    full = await open_store(tmp_path / "full", disk_space_warning_level_ratio=0)
    assert (await full.put(message())).status is PutStatus.SERVICE_NOT_AVAILABLE
    huge = await open_store(tmp_path / "huge", mapped_file_size_commit_log=1 << 55)
    failed = await huge.put(message())  # no disk has room for the segment: it is full
    assert failed.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert huge.max_phys_offset == 0 and not list((tmp_path / "huge" / "commitlog").glob("0*"))
    (tmp_path / "blocked").write_bytes(b"")  # a file where the CommitLog folder should be
    blocked = await open_store(tmp_path / "b", store_path_commit_log=str(tmp_path / "blocked"))
    assert (await blocked.put(message())).status is PutStatus.CREATE_MAPPED_FILE_FAILED
    assert blocked.max_phys_offset == 0 and not list((tmp_path / "b" / "consumequeue").glob("*"))


async def test_sync_flush_returns_after_the_fsync(open_store: StoreFactory) -> None:
    """design.md 10: with SYNC_FLUSH a put returns once its bytes are fsynced; past
    syncFlushTimeout it answers FLUSH_DISK_TIMEOUT (the message is stored all the same)."""
    store = await open_store(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    result = await store.put(message(body=b"durable"))
    assert result.status is PutStatus.PUT_OK
    assert store.flusher.flushed >= result.phys_offset + result.wrote_bytes
    impatient = await open_store(
        Path(str(store.root) + "-t"), flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=0
    )
    late = await impatient.put(message(body=b"late"))
    assert late.status is PutStatus.FLUSH_DISK_TIMEOUT
    assert impatient.read(late.phys_offset) is not None


async def test_a_clean_start_leaves_the_rest_of_the_log_unread(open_store: StoreFactory) -> None:
    """After a clean stop nothing was written past the end, so a start does not read the
    rest of the last CommitLog segment (2.3 s cold for 1 GiB before); after a crash it does,
    up to the high-water mark (here past the end of the 1 MiB segment), to find and cut a
    torn tail."""
    store = await open_store(mapped_file_size_commit_log=1 << 20)
    await store.put(message(body=b"x"))
    await store.shutdown()
    clean = await open_store(mapped_file_size_commit_log=1 << 20)
    assert clean.recovery is not None and clean.recovery.tail == 0
    await clean.put(message(body=b"y"))
    await clean.abandon()  # a crash
    crashed = await open_store(mapped_file_size_commit_log=1 << 20)
    assert crashed.recovery is not None
    assert crashed.recovery.tail == (1 << 20) - crashed.max_phys_offset
