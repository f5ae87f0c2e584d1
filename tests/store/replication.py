"""Helpers for the raw-replication tests: a master store filled with mixed puts, raw copies
into a slave store, and the checks that the slave holds the same log and serves the same."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from aiorocketmq.broker.store import GetStatus, MessageStore, PutStatus
from aiorocketmq.broker.store.replay import ScanReport, replay
from aiorocketmq.remoting.protocol.message import MessageExt, SysFlag
from aiorocketmq.remoting.protocol.topic import SCHEDULE_TOPIC
from tests.harness import ROOT

SEGMENT = 64 * 1024  # CommitLog segment: thousands of records cross ~90 segment ends
CHUNK = 32 * 1024  # haTransferBatchSize
TOPICS = ("A", "B", "C")


def replica_config() -> dict[str, object]:
    """Overrides of small_config shared by master and slaves (same segment size)."""
    return {"mapped_file_size_commit_log": SEGMENT}


@dataclass
class Filled:
    keys: list[tuple[str, str]] = field(default_factory=list)  # (topic, key) put with KEYS
    messages: int = 0


def _msg(rng: random.Random, topic: str, qid: int, seq: int, big: bool) -> MessageExt:
    size = rng.randrange(12_000, 30_000) if big else rng.randrange(0, 2_000)
    props = {"KEYS": f"k{seq} shared{seq % 7}", "UNIQ_KEY": f"U{seq:08d}", "TAGS": f"t{seq % 3}"}
    return MessageExt(
        topic=topic,
        queue_id=qid,
        body=rng.randbytes(size),
        properties=props,
        born_host="127.0.0.1:5555",
        born_timestamp=1_700_000_000_000 + seq,
    )


async def fill(store: MessageStore, count: int, seed: int, prefix: str = "") -> Filled:
    """``count`` messages in mixed puts: 3 topics x 4 queues, batches of 2-8, now and then a
    big body, a prepared transaction half (no queue unit), a delayed message."""
    rng, out, seq = random.Random(seed), Filled(), 0
    while seq < count:
        topic, qid = rng.choice(TOPICS), rng.randrange(4)
        kind = rng.random()
        n = rng.randrange(2, 9) if kind < 0.1 else 1
        msgs = [_msg(rng, topic, qid, seq + i, kind > 0.97) for i in range(n)]
        if 0.9 < kind < 0.93:
            msgs[0].sys_flag = SysFlag.TRANSACTION_PREPARED
        elif 0.93 < kind < 0.95:
            msgs[0].topic, msgs[0].properties["DELAY"] = SCHEDULE_TOPIC, str(rng.randrange(1, 5))
        for m in msgs:
            m.properties["KEYS"] = prefix + m.properties["KEYS"]
            out.keys.append((m.topic, m.properties["KEYS"].split()[0]))
        result = await (store.put(msgs[0]) if n == 1 else store.put_batch(msgs))
        assert result.status is PutStatus.PUT_OK, result
        seq += n
    out.messages = seq
    return out


def boundaries(store: MessageStore) -> set[int]:
    """Offsets where a record or a segment starts (and the end of the log)."""
    starts: set[int] = set()
    report = ScanReport(store.min_phys_offset, end=store.min_phys_offset)
    replay(store.commitlog, report, lambda phys, _size: starts.add(phys))
    segs = {s.start for s in store.commitlog.queue.segments}
    return starts | segs | {store.max_phys_offset, store.commitlog.queue.segments[-1].end}


async def copy(
    master: MessageStore, slave: MessageStore, rng: random.Random, upto: int | None = None
) -> int:
    """Copy the master's log into the slave from the slave's end, in random chunks of at
    most 32 KiB read with read_raw; stop at ``upto`` (which may cut a record). Returns how
    many appends ended inside a record."""
    end = master.max_phys_offset if upto is None else upto
    split = 0
    while (pos := slave.max_phys_offset) < end:
        want = min(rng.randrange(1, CHUNK + 1), end - pos)
        data = master.read_raw(pos, want)
        assert 0 < len(data) <= want
        assert pos // SEGMENT == (pos + len(data) - 1) // SEGMENT  # never across a segment end
        await slave.append_raw(pos, data)
        assert slave.max_phys_offset == pos + len(data)
        assert slave.dispatched_phys_offset <= slave.max_phys_offset
        split += slave.dispatched_phys_offset < slave.max_phys_offset
    return split


def commitlog_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "commitlog").iterdir())}


def queue_contents(store: MessageStore) -> dict[tuple[str, int], list[bytes]]:
    """Every record of every queue, read with get() 32 at a time from its min offset."""
    out: dict[tuple[str, int], list[bytes]] = {}
    for (topic, qid), cq in sorted(store.queues.items()):
        records, offset = [], cq.min_offset
        while offset < cq.max_offset:
            got = store.get(topic, qid, offset, 32)
            assert got.status in (GetStatus.FOUND, GetStatus.NO_MATCHED_MESSAGE), got.status
            records += got.messages
            offset = got.next_begin_offset
        out[(topic, qid)] = records
    return out


def assert_same(master: MessageStore, slave: MessageStore, filled: Filled) -> None:
    """Byte-identical CommitLog files; same offsets; every queue and every key reads the
    same on both."""
    assert slave.max_phys_offset == master.max_phys_offset
    assert slave.min_phys_offset == master.min_phys_offset
    assert slave.dispatched_phys_offset == slave.max_phys_offset
    assert commitlog_files(slave.root) == commitlog_files(master.root)
    assert sorted(slave.queues) == sorted(master.queues)
    for key, cq in master.queues.items():
        assert (slave.min_offset(*key), slave.max_offset(*key)) == (cq.min_offset, cq.max_offset)
        theirs = slave.queues[key]
        assert list(theirs.units(0, theirs.max_offset)) == list(cq.units(0, cq.max_offset)), key
    assert queue_contents(slave) == queue_contents(master)
    for topic, word in filled.keys[::7] + [(t, f"shared{i}") for t in TOPICS for i in range(7)]:
        mine = master.query(topic, word, 64, 0, 2**62)
        assert slave.query(topic, word, 64, 0, 2**62) == mine, (topic, word)


def killed_writer_lines(module: str, *args: str, kill_after: float) -> list[str]:
    """Run ``python -m module args``, SIGKILL it ``kill_after`` seconds after it printed
    "ready"; the whole lines it printed before dying (a kill may cut the last one)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(kill_after)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    lines = proc.stdout.read().split("\n")[:-1]
    proc.stdout.close()
    return lines
