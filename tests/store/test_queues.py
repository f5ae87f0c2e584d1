"""ConsumeQueues at scale and under faults (issue 12 item 10): idle queues are not fsynced;
mapped queue files are bounded; a dispatch that fails leaves that queue alone behind, and it
catches up from the CommitLog once the fault is gone, while every other queue carries on."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from aiorocketmq.broker.store import GetStatus, PutStatus
from aiorocketmq.remoting.protocol.message import decode_record
from tests.store.conftest import StoreFactory, message
from tests.util import wait_until

real_fsync = os.fsync


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The path of every file fsynced from now on."""
    paths: list[str] = []

    def fsync(fd: int) -> None:
        paths.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    yield paths


async def test_idle_queues_are_not_fsynced_every_round(
    open_store: StoreFactory, fsynced: list[str]
) -> None:
    """200 queues written once: after they are flushed, the ConsumeQueue flush rounds (every
    50 ms here) fsync none of them again; one more put fsyncs only its own queue."""
    store = await open_store()
    for q in range(200):
        assert (await store.put(message("Idle", q))).status is PutStatus.PUT_OK
    await wait_until(lambda: not store.table.dirty_segments(), timeout=5)
    fsynced.clear()
    await asyncio.sleep(0.3)  # about six rounds
    assert [p for p in fsynced if "/consumequeue/" in p] == []
    await store.put(message("Idle", 7))
    await wait_until(lambda: any("/consumequeue/" in p for p in fsynced), timeout=5)
    await asyncio.sleep(0.2)
    assert {Path(p).parent.name for p in fsynced if "/consumequeue/" in p} == {"7"}


async def test_mapped_queue_files_are_bounded(open_store: StoreFactory) -> None:
    """With room for 16 mappings, 300 queues are written and read back (each file mapped
    again when needed); no more than 16 are mapped at once."""
    store = await open_store(max_mapped_consume_queue_files=16)
    for round_ in range(2):
        for q in range(300):
            result = await store.put(message("Wide", q, body=f"{round_}-{q}".encode()))
            assert result.status is PutStatus.PUT_OK
    mapped = [s for cq in store.queues.values() for s in cq.queue.segments if s.is_mapped]
    assert len(mapped) <= 16
    for q in range(0, 300, 7):
        got = store.get("Wide", q, 0, 8)
        assert [decode_record(r).body for r in got.messages] == [f"0-{q}".encode(),
                                                                 f"1-{q}".encode()]  # fmt: skip


async def test_a_failed_dispatch_holds_back_only_its_queue(
    open_store: StoreFactory, tmp_path: Path
) -> None:
    """After a crash, recovery re-dispatches; one queue's files cannot be created (a file
    stands where its folder should be). That queue alone falls behind: puts to it are
    refused (its offsets are unknown), every other queue is served and written; once the
    obstacle is gone it catches up from the CommitLog with the right offsets and takes puts
    again. (Before: one failure marked the whole store broken.)"""
    store = await open_store()
    for i in range(6):
        assert (await store.put(message("T", i % 2, body=f"m{i}".encode()))).status is (
            PutStatus.PUT_OK
        )
    await store.abandon()  # a crash: recovery will re-dispatch from the checkpoint
    queue_dir = tmp_path / "consumequeue" / "T" / "1"
    shutil.rmtree(queue_dir)
    queue_dir.write_bytes(b"in the way")
    with capture_logs() as logs:
        again = await open_store()
    assert [e["target"] for e in logs if e["event"] == "dispatch_failed"] == ["T:1"]
    assert again.get("T", 0, 0, 8).status is GetStatus.FOUND
    assert (await again.put(message("T", 0))).status is PutStatus.PUT_OK
    assert (await again.put(message("T", 1))).status is PutStatus.SERVICE_NOT_AVAILABLE
    queue_dir.unlink()
    await wait_until(lambda: not again.table.behind, timeout=5)  # retried every second
    got = again.get("T", 1, 0, 8)
    assert [decode_record(r).body for r in got.messages] == [b"m1", b"m3", b"m5"]
    put = await again.put(message("T", 1, body=b"m7"))
    assert (put.status, put.queue_offset) == (PutStatus.PUT_OK, 3)
