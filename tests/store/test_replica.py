"""Raw replication in the store (issue 18 step 1, fidelity D11; protocol.md 12.8): a master's
CommitLog read raw and appended byte for byte by a slave, replayed into ConsumeQueues and
index by the stage recovery uses; restarts, wrong offsets, cuts back, the slave role."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from aiorocketmq.broker.store import GetStatus, MessageStore, PutStatus
from aiorocketmq.broker.store.checkpoint import read_checkpoint
from aiorocketmq.broker.store.config import FlushDiskType
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import HOST, StoreFactory, message, small_config
from tests.store.replication import (
    SEGMENT,
    assert_same,
    boundaries,
    commitlog_files,
    copy,
    fill,
    killed_writer_lines,
    queue_contents,
    replica_config,
)
from tests.store.test_recovery import check_consistency
from tests.util import wait_until

Arrival = tuple[str, int, int, int, int]


async def test_raw_copy_is_byte_identical(open_store: StoreFactory, tmp_path: Path) -> None:
    """fidelity D11 (HAConnection/HAClient transfer): 5,000 mixed puts copied in random
    chunks of <= 32 KiB (many end inside a record or a segment's blank trailer) give
    byte-identical CommitLog files, the same queues, units, records and key lookups, and
    one dispatch notification per queued message, as on the master."""
    master = await open_store(tmp_path / "m", **replica_config())
    heard: dict[str, list[Arrival]] = {"m": [], "s": []}
    master.add_dispatch_listener(lambda *a: heard["m"].append(a))
    filled = await fill(master, 5_000, seed=18)
    assert master.max_phys_offset > 80 * SEGMENT
    slave = await open_store(tmp_path / "s", **replica_config())
    slave.add_dispatch_listener(lambda *a: heard["s"].append(a))
    split = await copy(master, slave, random.Random(1))
    assert split > 100  # many appends ended inside a record and waited for the rest
    assert_same(master, slave, filled)
    assert heard["s"] == heard["m"]
    await slave.shutdown()
    slave = await open_store(tmp_path / "s", **replica_config())
    assert_same(master, slave, filled)
    await slave.abandon()  # a crash: the recovery re-verifies and re-dispatches
    slave = await open_store(tmp_path / "s", **replica_config())
    assert_same(master, slave, filled)
    check_consistency(slave)


async def test_read_raw_bounds(open_store: StoreFactory) -> None:
    """fidelity D11 (getCommitLogData): read_raw never passes the end of the log nor of a
    segment; b"" at the end; ValueError outside [min, max]."""
    store = await open_store()
    for i in range(40):
        await store.put(message(body=bytes([i]) * 300))
    end = store.max_phys_offset
    assert end > 4096
    assert store.read_raw(end, 100) == b""
    assert len(store.read_raw(4000, 10_000)) == 96  # up to the first segment's end
    assert store.read_raw(4096, 10_000) == store.commitlog.read(4096, 4096)  # one segment
    assert store.read_raw(end - 5, 10_000) == store.commitlog.read(end - 5, 5)
    for outside in (end + 1, -1):
        with pytest.raises(ValueError):
            store.read_raw(outside, 10)


def trailers(master: MessageStore) -> list[tuple[int, int]]:
    """(start, length) of each segment's blank trailer."""
    starts = sorted(boundaries(master))
    out = []
    for seg in master.commitlog.queue.segments[:-1]:
        last = max(b for b in starts if seg.start <= b < seg.end)
        end = last + int.from_bytes(master.commitlog.read(last, 4) or b"", "big")
        out.append((end, seg.end - end))
    return out


@pytest.mark.parametrize("crash", [False, True])
async def test_restart_mid_record_recovers_to_the_last_whole_record(
    open_store: StoreFactory, tmp_path: Path, crash: bool
) -> None:
    """fidelity D11, design.md 10: a slave stopped (cleanly or as a crash) after an append
    that ended inside a record restarts at that record's start (the partial bytes are cut),
    reports that offset, and the copy resumes from it byte-identically. Stopped inside a
    blank trailer, it restarts at the trailer when its 8-byte head is cut, else at the next
    segment (the rest of a trailer is zeros: nothing is missing)."""
    master = await open_store(tmp_path / "m", **replica_config())
    filled = await fill(master, 600, seed=5)
    records = [b for b in sorted(boundaries(master)) if b % SEGMENT]
    long_trailers = [(t, n) for t, n in trailers(master) if n > 30]
    assert len(long_trailers) >= 3
    rng = random.Random(7)
    (t1, _), (t2, _), (t3, _) = rng.sample(long_trailers, 3)
    cases = {r + 37: r for r in rng.sample(records[:-2], 4)}  # cut at -> recovers to
    cases |= {t1 + 3: t1, t2 + 8: t2 - t2 % SEGMENT + SEGMENT, t3 + 20: t3 - t3 % SEGMENT + SEGMENT}
    slave_root = tmp_path / "s"
    slave = await open_store(slave_root, **replica_config())
    for cut, expected in sorted(cases.items()):
        await copy(master, slave, rng, upto=cut)
        assert slave.dispatched_phys_offset < slave.max_phys_offset == cut
        await (slave.abandon() if crash else slave.shutdown())
        slave = await open_store(slave_root, **replica_config())
        assert slave.max_phys_offset == slave.dispatched_phys_offset == expected, cut
        check_consistency(slave)
    await copy(master, slave, rng)
    assert_same(master, slave, filled)


async def test_append_at_a_wrong_offset_writes_nothing(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """fidelity D11 (HAClient: the master's offset must be the slave's): an append anywhere
    but the end of the log, or across a segment end, raises ValueError and writes nothing;
    an empty log takes a first append at any segment start, not elsewhere."""
    master = await open_store(tmp_path / "m", **replica_config())
    await fill(master, 200, seed=3)
    slave = await open_store(tmp_path / "s", **replica_config())
    await copy(master, slave, random.Random(2), upto=SEGMENT + 999)
    before, end = commitlog_files(slave.root), slave.max_phys_offset
    data = master.read_raw(end, 500)
    for wrong in (end - 1, end + 1, 0, SEGMENT, 2 * SEGMENT):
        with pytest.raises(ValueError):
            await slave.append_raw(wrong, data)
    with pytest.raises(ValueError):  # across the segment end
        await slave.append_raw(end, bytes(2 * SEGMENT - end + 1))
    assert slave.max_phys_offset == end and commitlog_files(slave.root) == before
    fresh = await open_store(tmp_path / "f", **replica_config())
    with pytest.raises(ValueError):
        await fresh.append_raw(SEGMENT + 1, data)
    assert not list((tmp_path / "f" / "commitlog").glob("0*"))
    await fresh.append_raw(SEGMENT, master.read_raw(SEGMENT, 100))
    assert (fresh.min_phys_offset, fresh.max_phys_offset) == (SEGMENT, SEGMENT + 100)


async def test_fresh_slave_starts_mid_history(open_store: StoreFactory, tmp_path: Path) -> None:
    """fidelity D11 (a new slave gets the master's log from a segment start, not from 0):
    its queues start at the first queue offset it sees (ConsumeQueue fillPreBlank,
    minLogicOffset), serve the same records from there, and survive a restart."""
    master = await open_store(tmp_path / "m", **replica_config())
    filled = await fill(master, 3_000, seed=11)
    start = 20 * SEGMENT
    slave = await open_store(tmp_path / "s", **replica_config())
    await slave.append_raw(start, master.read_raw(start, 1000))
    await copy(master, slave, random.Random(4))
    for restart in (False, True):
        assert slave.min_phys_offset == start
        for key, cq in master.queues.items():
            units = [u for u in cq.units(0, cq.max_offset) if not u.blank and u.phys >= start]
            mine = slave.queues.get(key)
            if not units:
                assert mine is None or mine.max_offset == mine.min_offset
                continue
            assert mine is not None, (key, units[:2], sorted(slave.queues))
            assert (mine.min_offset, mine.max_offset) == (units[0].offset, cq.max_offset), key
            assert list(mine.units(mine.min_offset, cq.max_offset)) == units
            got = slave.get(*key, units[0].offset - 1, 1)
            assert got.status is GetStatus.OFFSET_TOO_SMALL
        topic, word = filled.keys[-1]
        assert slave.query(topic, word, 8, 0, 2**62) == master.query(topic, word, 8, 0, 2**62)
        if not restart:
            await slave.abandon()
            slave = await open_store(tmp_path / "s", **replica_config())


async def test_set_slave_refuses_puts(open_store: StoreFactory, tmp_path: Path) -> None:
    """fidelity D11 (DefaultMessageStore.checkStoreStatus, "broke role is slave"): a slave
    store answers put and put_batch with SERVICE_NOT_AVAILABLE and writes nothing; reads
    and raw appends go on. A put after raw bytes that end inside a record is refused too."""
    store = await open_store(tmp_path / "s")
    first = await store.put(message(body=b"before"))
    store.set_slave(True)
    files = commitlog_files(store.root)
    assert (await store.put(message())).status is PutStatus.SERVICE_NOT_AVAILABLE
    batch = [message(body=b"1"), message(body=b"2")]
    assert (await store.put_batch(batch)).status is PutStatus.SERVICE_NOT_AVAILABLE
    assert commitlog_files(store.root) == files and store.max_offset("T", 0) == 1
    assert store.get("T", 0, 0, 8).messages == [store.read(first.phys_offset)]
    other = await open_store(tmp_path / "o")
    await other.put(message(body=b"before"))
    second = await other.put(message(body=b"raw"))
    data = other.read_raw(second.phys_offset, second.wrote_bytes)
    await store.append_raw(store.max_phys_offset, data[:50])
    store.set_slave(False)
    assert (await store.put(message())).status is PutStatus.SERVICE_NOT_AVAILABLE
    await store.append_raw(store.max_phys_offset, data[50:])
    assert store.max_offset("T", 0) == 2
    assert (await store.put(message(body=b"after"))).status is PutStatus.PUT_OK


async def test_sync_flush_slave_flushes_raw_appends(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """design.md 10 (GroupCommitService flushes with no request waiting): with SYNC_FLUSH a
    slave's raw appends are made durable without anyone waiting for them."""
    master = await open_store(tmp_path / "m", **replica_config())
    await fill(master, 100, seed=1)
    slave = await open_store(
        tmp_path / "s", flush_disk_type=FlushDiskType.SYNC_FLUSH, **replica_config()
    )
    await copy(master, slave, random.Random(3))
    await wait_until(lambda: slave.flusher.flushed == slave.max_phys_offset)
    assert queue_contents(slave) == queue_contents(master)


async def test_a_slave_checkpoints_only_whole_records(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """Issue 29 (a crash restart scans from the checkpoint itself): a slave whose raw bytes
    end inside a record flushes and checkpoints up to the last whole record only, so the
    checkpoint is a record boundary; a crash restart scans from exactly there."""
    master = await open_store(tmp_path / "m", **replica_config())
    await fill(master, 200, seed=9)
    record = sorted(b for b in boundaries(master) if b % SEGMENT)[-20]
    slave_root = tmp_path / "s"
    slave = await open_store(slave_root, **replica_config())
    await copy(master, slave, random.Random(4), upto=record + 37)
    assert slave.dispatched_phys_offset == record < slave.max_phys_offset
    await slave.flusher.flush()
    assert slave.flusher.flushed == record

    def checkpointed() -> bool:
        cp = read_checkpoint(slave_root)
        return cp is not None and cp.dispatched == record

    await wait_until(checkpointed)
    cp = read_checkpoint(slave_root)
    assert cp is not None and cp.exact and cp.commitlog == cp.dispatched == record
    await slave.abandon()
    slave = await open_store(slave_root, **replica_config())
    assert slave.recovery is not None and slave.recovery.start == record
    assert slave.max_phys_offset == slave.dispatched_phys_offset == record
    check_consistency(slave)


@pytest.mark.parametrize("crash", [False, True])
async def test_corrupt_record_in_the_stream_is_a_hole_as_in_recovery(
    open_store: StoreFactory, tmp_path: Path, crash: bool
) -> None:
    """design.md 10 (corruption is skipped, never served) and fidelity D11: a record whose
    body CRC fails arriving from the master holds the replay at it (logged) until a valid
    record follows; then it is skipped as a hole, as recovery skips it -- the same queues
    before and after a restart."""
    master = await open_store(tmp_path / "m")
    sent = [await master.put(message(body=bytes([65 + i]) * 100)) for i in range(8)]
    slave = await open_store(tmp_path / "s")
    bad = bytearray(master.read_raw(0, sent[4].phys_offset + sent[4].wrote_bytes))
    bad[sent[4].phys_offset + 150] ^= 0xFF  # inside the body of message 4
    with capture_logs() as logs:
        await slave.append_raw(0, bytes(bad))
    assert [e["at"] for e in logs if e["event"] == "replay_stalled"] == [sent[4].phys_offset]
    assert slave.dispatched_phys_offset == sent[4].phys_offset and slave.max_offset("T", 0) == 4
    with capture_logs() as logs:
        await copy(master, slave, random.Random(9))
    assert [e["start"] for e in logs if e["event"] == "commitlog_corrupt"] == [sent[4].phys_offset]
    for restart in (False, True):
        assert slave.dispatched_phys_offset == slave.max_phys_offset == master.max_phys_offset
        got = slave.get("T", 0, 0, 32)
        assert [decode_record(r).body[0] for r in got.messages] == [65, 66, 67, 68, 70, 71, 72]
        assert [u.offset for u in slave.queues[("T", 0)].units(0, 8) if u.blank] == [4]
        if not restart:
            await (slave.abandon() if crash else slave.shutdown())
            slave = await open_store(tmp_path / "s")


def run_raw_writer(master: Path, slave: Path, seed: int, kill_after: float) -> list[int]:
    """Run tests.store.raw_writer, SIGKILL it after ``kill_after`` seconds of copying; the
    dispatched offsets it printed after each append returned."""
    lines = killed_writer_lines(
        "tests.store.raw_writer", str(master), str(slave), str(seed), kill_after=kill_after
    )
    return [int(line.split()[0]) for line in lines if line != "done"]


@pytest.mark.slow
async def test_sigkill_while_appending_recovers_to_a_record_end(tmp_path: Path) -> None:
    """fidelity D11, design.md 10: a process appending raw bytes killed with SIGKILL at
    random moments, 5 rounds on one slave: each restart recovers to a record or segment
    boundary at or after the last offset the writer saw dispatched, the slave's queues are
    the master's up to there, and copying the rest gives a byte-identical store."""
    m_root, s_root = tmp_path / "m", tmp_path / "s"
    master = MessageStore(small_config(m_root, **replica_config()), store_host=HOST)
    await master.start()
    filled = await fill(master, 3_000, seed=21)
    bounds = boundaries(master)
    await master.shutdown()
    rng, last = random.Random(22), 0
    for round_ in range(5):
        seen = run_raw_writer(m_root, s_root, round_, rng.uniform(0.05, 0.4))
        last = max([last, *seen])
        master = MessageStore(small_config(m_root, **replica_config()), store_host=HOST)
        slave = MessageStore(small_config(s_root, **replica_config()), store_host=HOST)
        await master.start()
        await slave.start()
        end = slave.max_phys_offset
        assert end == slave.dispatched_phys_offset and end in bounds and end >= last, round_
        for key, cq in master.queues.items():
            units = [u for u in cq.units(0, cq.max_offset) if u.phys < end]
            mine = slave.queues.get(key)
            assert (list(mine.units(0, mine.max_offset)) if mine else []) == units, key
        check_consistency(slave)
        await master.shutdown()
        await (slave.shutdown() if round_ % 2 else slave.abandon())
    master = MessageStore(small_config(m_root, **replica_config()), store_host=HOST)
    slave = MessageStore(small_config(s_root, **replica_config()), store_host=HOST)
    await master.start()
    await slave.start()
    await copy(master, slave, random.Random(23))
    assert_same(master, slave, filled)
    await master.shutdown()
    await slave.shutdown()
