"""Recoveries on top of recoveries (design.md 10): the blank ConsumeQueue unit a corruption
hole leaves behind must not make a later crash recovery drop the units after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiorocketmq.broker.store import GetStatus, MessageStore
from aiorocketmq.broker.store.checkpoint import read_checkpoint
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import StoreFactory, message
from tests.util import wait_until

BODY = 200  # ~300-byte records: 13 fit a 4 KiB segment


async def checkpointed(store: MessageStore) -> None:
    """Until the checkpoint's safe point has reached the end of the log."""

    def done() -> bool:
        cp = read_checkpoint(store.root)
        return cp is not None and cp.safe >= store.max_phys_offset

    await wait_until(done)


def corrupt_body(root: Path, phys: int) -> None:
    path = root / "commitlog" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    data[phys + 100] ^= 0xFF  # inside the body: the CRC no longer matches
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("hole", range(1, 11))
async def test_hole_before_a_later_cut_keeps_later_units(
    open_store: StoreFactory, tmp_path: Path, hole: int
) -> None:
    """design.md 10 (re-dispatch past the safe point): after a corrupt record became a blank
    unit, a later crash truncates the ConsumeQueue only from the units pointing at or past the
    scan start, wherever the blank lies (the binary search must look past blanks)."""
    root = tmp_path / "store"
    store = await open_store(root)
    first = [await store.put(message("T", 0, bytes([65 + i]) * BODY)) for i in range(12)]
    await store.abandon()
    corrupt_body(root, first[hole].phys_offset)

    store = await open_store(root)
    assert store.recovery is not None and len(store.recovery.holes) == 1
    more = [await store.put(message("T", 0, bytes([65 + i]) * BODY)) for i in range(12, 16)]
    assert more[-1].phys_offset >= 4096  # the last puts are in the second segment
    await checkpointed(store)  # the next crash scans from the end of the log
    await store.abandon()

    store = await open_store(root)
    assert store.recovery is not None
    assert store.recovery.start == more[-1].phys_offset + more[-1].wrote_bytes
    got = store.get("T", 0, 0, 32)
    assert got.status is GetStatus.FOUND and got.max_offset == 16
    bodies = [decode_record(r).body[0] for r in got.messages]
    assert bodies == [65 + i for i in range(16) if i != hole]
    units = store.queues[("T", 0)].units(0, 16)
    assert [u.offset for u in units if u.blank] == [hole]
