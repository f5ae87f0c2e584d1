"""Resident memory (issue 29 item 7, memory.py): after each flush round the cold pages of the
store's mappings leave the process -- the newest CommitLog bytes stay -- and what a read
maps back leaves again in the next round; every byte reads back the same."""

from __future__ import annotations

from pathlib import Path

from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.store.memory import HOT, SWEEP_ROUNDS
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import StoreFactory, message
from tests.store.test_prefault import mapped_kib
from tests.util import wait_until

MIB = 1 << 20


def body(i: int) -> bytes:
    return i.to_bytes(4, "big") * (16 * 1024 - 64)  # a record of about 64 KiB


async def rounds(store: MessageStore, n: int) -> None:
    """Until ``n`` more flush rounds have run (each releases what turned cold)."""
    target = store.releaser.rounds + n
    await wait_until(lambda: store.releaser.rounds >= target, timeout=10)


async def test_cold_pages_leave_memory_and_read_back(open_store: StoreFactory) -> None:
    store = await open_store(mapped_file_size_commit_log=256 * MIB)
    results = [await store.put(message("T", 0, body(i))) for i in range(3600)]  # ~225 MiB
    seg = store.commitlog.queue.segments[0]
    written_kib = store.max_phys_offset // 1024
    await rounds(store, 2)
    resident = mapped_kib(seg.path)
    assert resident < (HOT + 16 * MIB) // 1024 < written_kib // 2, resident
    for i, result in enumerate(results):  # cold pages are mapped again as they are read
        record = store.read(result.phys_offset)
        assert record is not None and decode_record(record).body == body(i)
    assert mapped_kib(seg.path) > written_kib * 0.9
    await rounds(store, 2)  # the segment was used: released whole again
    assert mapped_kib(seg.path) < (HOT + 16 * MIB) // 1024


async def test_consume_queue_and_index_pages_leave_memory(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """The units and index entries of old messages leave memory too; a get and a query of
    them still find them."""
    store = await open_store(
        mapped_file_size_commit_log=256 * MIB,
        mapped_file_size_consume_queue=20 * 100_000,
        max_hash_slot_num=1000,
        max_index_num=200_000,
    )
    for i in range(100_000):
        store.put_many([message("T", 0, b"x", KEYS=f"k{i}")])
    cq = store.queues[("T", 0)]
    index = store.index.files[-1]
    queue_path = cq.queue.segments[0].path
    assert mapped_kib(queue_path) > 1500 and mapped_kib(index.path) > 1500
    await rounds(store, 2)
    assert mapped_kib(queue_path) <= 128  # ~64 KiB of the newest units stay
    assert mapped_kib(index.path) <= 1100  # the slots and ~1 MiB of the newest entries
    got = store.get("T", 0, 0, 1)
    assert got.messages and decode_record(got.messages[0]).properties["KEYS"] == "k0"
    assert len(store.query("T", "k1", 8, 0, 2**62)) == 1


async def test_idle_consume_queue_files_are_unmapped(open_store: StoreFactory) -> None:
    """A queue nobody writes or reads is unmapped within two sweeps (MapCache.sweep); a busy
    one stays mapped; the idle one is mapped again when next used."""
    store = await open_store()
    await store.put(message("Idle", 0, b"once"))
    idle = store.queues[("Idle", 0)].queue.segments[0]

    async def busy_rounds(n: int) -> None:
        target = store.releaser.rounds + n
        while store.releaser.rounds < target:
            await store.put(message("Busy", 0, b"x"))
            await rounds(store, 1)

    await busy_rounds(2 * SWEEP_ROUNDS)
    assert not idle.is_mapped
    assert store.queues[("Busy", 0)].queue.segments[-1].is_mapped
    got = store.get("Idle", 0, 0, 1)
    assert got.messages and decode_record(got.messages[0]).body == b"once"
    assert idle.is_mapped
