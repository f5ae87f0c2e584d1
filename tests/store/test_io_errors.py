"""I/O errors are never acknowledged as success (issue 12 item 2). SIGKILL keeps the page
cache, so the crash tests would pass with every fsync removed; these inject the failures
instead: fsync of the real store's files raises EIO (the store is real, on tmp_path; only
the kernel's answer is replaced). No acknowledgement, no checkpoint past the lost data, puts
refused until a restart, one error line -- and an error from a file retention closed on
purpose is the only one ignored."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from aiorocketmq.broker.store import PutStatus
from aiorocketmq.broker.store.checkpoint import crashed, read_checkpoint
from aiorocketmq.broker.store.config import FlushDiskType
from aiorocketmq.broker.store.flush import fsync_all
from aiorocketmq.broker.store.segment import Segment
from tests.store.conftest import StoreFactory, message
from tests.util import wait_until

real_fsync = os.fsync


@pytest.fixture
def failing_fsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """``fail("commitlog")``: from now on, fsync of any file whose path holds that part
    raises EIO, as a dying disk would."""
    parts: list[str] = []

    def fsync(fd: int) -> None:
        path = str(Path(f"/proc/self/fd/{fd}").readlink())
        if any(f"/{part}/" in path or path.endswith(f"/{part}") for part in parts):
            raise OSError(errno.EIO, "Input/output error (injected)")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    yield parts.append


async def test_sync_flush_never_acknowledges_a_failed_fsync(
    open_store: StoreFactory, failing_fsync: Callable[[str], None], tmp_path: Path
) -> None:
    """SYNC_FLUSH: a put whose fsync fails is answered FLUSH_DISK_TIMEOUT (not PUT_OK, as
    Java's GroupCommitService reports an unflushed request); later puts get
    SERVICE_NOT_AVAILABLE; the checkpoint never claims the failed bytes; one error line;
    the abort file stays, so the next start recovers from the log."""
    store = await open_store(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    ok = await store.put(message(body=b"durable"))
    assert ok.status is PutStatus.PUT_OK
    failing_fsync("commitlog")
    with capture_logs() as logs:
        lost = await store.put(message(body=b"not durable"))
        after = await store.put(message(body=b"refused"))
    assert lost.status is PutStatus.FLUSH_DISK_TIMEOUT
    assert after.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["store_io_error"]
    await asyncio.sleep(0.2)  # several checkpoint rounds (50 ms here)
    cp = read_checkpoint(tmp_path)
    assert cp is None or cp.commitlog <= lost.phys_offset
    await store.shutdown()
    assert crashed(tmp_path), "the next start must recover from the CommitLog"


async def test_async_flush_failure_stops_puts_and_holds_the_checkpoint(
    open_store: StoreFactory, failing_fsync: Callable[[str], None], tmp_path: Path
) -> None:
    """ASYNC_FLUSH: puts are acknowledged before the flush (that is the mode); once a flush
    round fails, no put is accepted and the checkpoint stays short of the unflushed bytes."""
    store = await open_store()
    first = await store.put(message(body=b"a"))
    await wait_until(lambda: store.flusher.flushed > first.phys_offset, timeout=5)
    failing_fsync("commitlog")
    second = await store.put(message(body=b"b"))
    assert second.status is PutStatus.PUT_OK
    await wait_until(lambda: store.io_error is not None, timeout=5)
    assert (await store.put(message(body=b"c"))).status is PutStatus.SERVICE_NOT_AVAILABLE
    await asyncio.sleep(0.2)
    cp = read_checkpoint(tmp_path)
    assert cp is not None and cp.commitlog <= second.phys_offset
    assert store.flusher.flushed <= second.phys_offset


async def test_consume_queue_fsync_failure_holds_the_checkpoint(
    open_store: StoreFactory, failing_fsync: Callable[[str], None], tmp_path: Path
) -> None:
    """A ConsumeQueue fsync that fails: the checkpoint's dispatched mark does not move past
    it (recovery must rebuild those units), and puts are refused."""
    store = await open_store()
    await store.put(message(body=b"a"))
    await wait_until(lambda: read_checkpoint(tmp_path) is not None)
    failing_fsync("consumequeue")
    second = await store.put(message(body=b"b"))
    await wait_until(lambda: store.io_error is not None, timeout=5)
    assert "consume_queue" in (store.io_error or "")
    await asyncio.sleep(0.2)
    cp = read_checkpoint(tmp_path)
    assert cp is not None and cp.dispatched <= second.phys_offset
    assert (await store.put(message())).status is PutStatus.SERVICE_NOT_AVAILABLE


def test_only_a_segment_closed_on_purpose_may_fail_its_fsync(
    tmp_path: Path, failing_fsync: Callable[[str], None]
) -> None:
    """Retention closes and deletes a segment while a flush may still hold it: that fsync's
    error is expected and ignored. Any other segment's error is raised."""
    open_seg = Segment.create(tmp_path / "a", 0, 4096, backed=4096)
    gone = Segment.create(tmp_path / "b", 0, 4096, backed=4096)
    gone.delete()
    fsync_all([gone])  # closed on purpose: ignored
    failing_fsync("a")
    with pytest.raises(OSError, match="Input/output error"):
        fsync_all([open_seg])
    open_seg.close()


async def test_settle_many_acknowledges_a_read_of_sends_only_after_their_fsync(
    open_store: StoreFactory, failing_fsync: Callable[[str], None]
) -> None:
    """SYNC_FLUSH, the sends of one read (put_many, then one wait: settle_many): with fsync
    working every waiting message is PUT_OK once flushed; once fsync fails each waiting one
    is FLUSH_DISK_TIMEOUT (as its own put would be), a sender that does not wait (WAIT=false)
    keeps PUT_OK, a refused message keeps its refusal."""
    store = await open_store(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    msgs = [message(body=bytes([i]) * 100) for i in range(6)]
    results = store.put_many(msgs)
    settled = await store.settle_many(results, [True] * 6)
    assert [r.status for r in settled] == [PutStatus.PUT_OK] * 6
    assert store.flusher.flushed >= settled[-1].phys_offset + settled[-1].wrote_bytes
    failing_fsync("commitlog")
    msgs = [message(body=b"x" * (5000 if i == 2 else 100)) for i in range(6)]
    waits = [i != 4 for i in range(6)]
    with capture_logs():
        settled = await store.settle_many(store.put_many(msgs), waits)
    want = [PutStatus.FLUSH_DISK_TIMEOUT] * 6
    want[2], want[4] = PutStatus.MESSAGE_ILLEGAL, PutStatus.PUT_OK
    assert [r.status for r in settled] == want
