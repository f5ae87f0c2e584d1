"""A slave cut back to its master's log (issue 18 step 1 and step 3's "a slave whose
CommitLog diverges truncates to the master's"; fidelity D11): ``truncate_to`` drops the
CommitLog bytes, ConsumeQueue units and index entries from the cut on, survives a restart,
and a copy from the master afterwards is byte-identical again."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.store.checkpoint import read_checkpoint
from aiorocketmq.broker.store.index import HEADER
from tests.store.conftest import StoreFactory
from tests.store.replication import (
    SEGMENT,
    Filled,
    assert_same,
    boundaries,
    copy,
    fill,
    replica_config,
)
from tests.store.test_recovery import check_consistency
from tests.util import wait_until

_ENTRY = struct.Struct(">iqii")  # key hash, commitlog offset, time diff, previous entry


def index_entries(store: MessageStore) -> set[tuple[int, int]]:
    """(key hash, commitlog offset) of every index entry of every file."""
    out = set()
    for file in store.index.files:
        at = HEADER + file.slots * 4
        for i in range(1, file.count):
            h, phys, _diff, _prev = _ENTRY.unpack_from(file.mm, at + i * 20)
            out.add((h, phys))
    return out


async def checkpointed(store: MessageStore) -> None:
    """Until the checkpoint is at the end of the log: a crash then rescans only the last
    segment, unless a cut lowered the checkpoint."""

    def done() -> bool:
        cp = read_checkpoint(store.root)
        return cp is not None and cp.safe >= store.max_phys_offset

    await wait_until(done)


def assert_prefix(master: MessageStore, slave: MessageStore, end: int) -> None:
    """The slave holds exactly the master's log, queues and index before ``end``."""
    assert slave.max_phys_offset == slave.dispatched_phys_offset == end
    for start in range(slave.min_phys_offset, end, SEGMENT):
        n = min(end, start + SEGMENT) - start
        assert slave.commitlog.read(start, n) == master.commitlog.read(start, n), start
    last = slave.commitlog.queue.last()
    if last is not None and end < last.end:  # after the end: zeros, as recovery expects
        assert last.first_nonzero(end - last.start, last.size) == last.size
    for key, cq in master.queues.items():
        units = [u for u in cq.units(0, cq.max_offset) if u.phys < end]
        mine = slave.queues.get(key)
        assert (list(mine.units(0, mine.max_offset)) if mine else []) == units, key
    assert index_entries(slave) == {e for e in index_entries(master) if e[1] < end}
    check_consistency(slave)


@pytest.mark.parametrize("crash", [False, True])
async def test_diverged_slave_cut_back_to_its_master(
    open_store: StoreFactory, tmp_path: Path, crash: bool
) -> None:
    """fidelity D11: a slave that took writes of its own (promoted, then demoted) while its
    master took others is cut back to where they forked: its own messages are gone from
    the log, the queues and the index, also after a restart (clean or crash), and the copy
    of the master's messages that follows is byte-identical."""
    master = await open_store(tmp_path / "m", **replica_config())
    filled = await fill(master, 2_000, seed=31)
    slave = await open_store(tmp_path / "s", **replica_config())
    rng = random.Random(32)
    await copy(master, slave, rng)
    fork = master.max_phys_offset
    ours = await fill(slave, 300, seed=33, prefix="slave-")  # written on the slave alone
    theirs = await fill(master, 400, seed=34, prefix="master-")
    await checkpointed(slave)
    slave.set_slave(True)
    slave.truncate_to(fork)
    for topic, key in ours.keys[:20]:
        assert slave.query(topic, key, 8, 0, 2**62) == []
    assert_prefix(master, slave, fork)
    await (slave.abandon() if crash else slave.shutdown())
    slave = await open_store(tmp_path / "s", **replica_config())
    assert_prefix(master, slave, fork)
    await copy(master, slave, rng)
    assert_same(master, slave, Filled(filled.keys + theirs.keys))


@pytest.mark.parametrize("where", ["mid_record", "record", "segment", "first_segment"])
async def test_cut_anywhere_then_recopy(
    open_store: StoreFactory, tmp_path: Path, where: str
) -> None:
    """fidelity D11 (MappedFileQueue.truncateDirtyFiles, ConsumeQueue
    truncateDirtyLogicFiles): a cut inside a record, at a record, at a segment start or at
    the first offset leaves exactly the master's prefix before it, across a crash restart,
    and a copy from there is byte-identical again."""
    master = await open_store(tmp_path / "m", **replica_config())
    filled = await fill(master, 1_500, seed=41)
    slave = await open_store(tmp_path / "s", **replica_config())
    rng = random.Random(42)
    await copy(master, slave, rng)
    records = sorted(b for b in boundaries(master) if b % SEGMENT and b < master.max_phys_offset)
    record = rng.choice(records[len(records) // 2 :])
    cut, end = {
        "mid_record": (record + 50, record),
        "record": (record, record),
        "segment": (9 * SEGMENT, 9 * SEGMENT),
        "first_segment": (0, 0),
    }[where]
    await checkpointed(slave)
    slave.truncate_to(cut)
    assert slave.max_phys_offset == cut
    if where == "mid_record":
        slave.truncate_to(end)  # the partial bytes go as well
    assert_prefix(master, slave, end)
    await slave.abandon()
    slave = await open_store(tmp_path / "s", **replica_config())
    assert_prefix(master, slave, end)
    await copy(master, slave, rng)
    assert_same(master, slave, filled)


async def test_cut_below_the_first_segment_empties_the_log(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """fidelity D11: a slave whose whole log is past its master's end is emptied (log,
    queues, index) and starts over at 0; a wrong cut (past the end) raises."""
    master = await open_store(tmp_path / "m", **replica_config())
    filled = await fill(master, 1_500, seed=51)
    slave = await open_store(tmp_path / "s", **replica_config())
    start = 10 * SEGMENT
    await slave.append_raw(start, master.read_raw(start, 100))
    await copy(master, slave, random.Random(52))
    with pytest.raises(ValueError):
        slave.truncate_to(slave.max_phys_offset + 1)
    slave.truncate_to(3 * SEGMENT)
    assert (slave.min_phys_offset, slave.max_phys_offset) == (0, 0)
    assert not slave.queues and not slave.index.files
    assert not list((tmp_path / "s" / "commitlog").glob("0*"))
    await slave.abandon()
    slave = await open_store(tmp_path / "s", **replica_config())
    assert (slave.max_phys_offset, len(slave.queues)) == (0, 0)
    await copy(master, slave, random.Random(53))
    assert_same(master, slave, filled)
