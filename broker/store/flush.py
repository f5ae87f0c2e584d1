"""Flusher: makes appended CommitLog bytes durable, off the event loop.

ASYNC_FLUSH: one fsync round every ``flushIntervalCommitLog``. SYNC_FLUSH: group commit --
writers wait for their end offset; one fsync covers every write queued while the previous one
ran (design.md 10).

An fsync that fails (EIO) is never taken for success: Linux may already have dropped the
pages it could not write, so a retry that "succeeds" proves nothing. The flusher stops at the
first failure: ``flushed`` stays where it was (so the checkpoint never passes the lost
data), waiting writers are told their data is not durable (FLUSH_DISK_TIMEOUT, as Java's
GroupCommitService reports an unflushed request), and ``on_error`` makes the store refuse
puts until a restart recovers from the CommitLog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from aiorocketmq.broker.store.commitlog import CommitLog
from aiorocketmq.broker.store.segment import Segment

ROUND_BYTES: Final = 16 << 20  # appended since the last round: the next one runs at once


def fsync_all(segments: list[Segment]) -> None:
    """fsync each segment; a segment retention closed meanwhile is skipped (Segment.fsync),
    any other error is raised."""
    for seg in segments:
        seg.fsync()


class Flusher:
    def __init__(
        self,
        commitlog: CommitLog,
        *,
        sync: bool,
        interval: float,
        on_error: Callable[[str, OSError], None],
        end: Callable[[], int] | None = None,
    ) -> None:
        """``end``: how far the log holds whole records (default: its end)."""
        self.commitlog = commitlog
        self._end = end
        self.sync = sync
        self.interval = interval
        self.flushed = commitlog.max_offset
        self.failed: OSError | None = None
        self._on_error = on_error
        self._waiters: list[tuple[int, asyncio.Future[bool]]] = []
        self._wake = asyncio.Event()
        self._cuts = 0  # bumped when the log is cut back: a flush running across it is stale

    async def wait(self, end: int, timeout: float) -> bool:
        """Until the CommitLog is durable up to ``end``; False after ``timeout`` seconds or
        when the flush failed."""
        if self.flushed >= end:
            return True
        if self.failed is not None:
            return False
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        self._waiters.append((end, fut))
        self._wake.set()
        timer = loop.call_later(timeout, _give_up, fut)  # cheaper than asyncio.timeout per put
        try:
            return await fut
        finally:
            timer.cancel()

    async def run(self) -> None:
        """The flush loop; cancelled at shutdown (``flush()`` then makes the rest durable)."""
        while True:
            if self.sync:
                await self._wake.wait()
                self._wake.clear()
            else:
                await asyncio.sleep(self.interval)
            await self.flush()

    async def flush(self) -> None:
        target = self.commitlog.max_offset if self._end is None else self._end()
        cuts = self._cuts
        if self.failed is None and target > self.flushed:
            segments = self.commitlog.segments_between(self.flushed, target)
            try:
                await asyncio.to_thread(fsync_all, segments)
            except OSError as exc:
                self.failed = exc
                self._on_error("commitlog_fsync", exc)
            else:
                if cuts == self._cuts:
                    self.flushed = max(self.flushed, target)
        self._answer_waiters()

    def kick(self) -> None:
        """Bytes were appended that no writer waits for (a slave's raw appends): SYNC_FLUSH
        flushes them now, as GroupCommitService flushes every 10 ms with no request; with
        ASYNC_FLUSH the next round does."""
        if self.sync:
            self._wake.set()

    def cut(self, end: int) -> None:
        """The log was cut back to ``end``: what is flushed is at most that much."""
        self.flushed = min(self.flushed, end)
        self._cuts += 1

    def _answer_waiters(self) -> None:
        if not self._waiters:
            return
        done, failed = self.flushed, self.failed is not None
        keep = []
        for end, fut in self._waiters:
            if end <= done or failed:
                if not fut.done():
                    fut.set_result(end <= done)
            else:
                keep.append((end, fut))
        self._waiters = keep
        if keep:
            self._wake.set()


def _give_up(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


class Rounds:
    """When the next ConsumeQueue/index flush and checkpoint round is due ahead of its time:
    once ``ROUND_BYTES`` more were appended. A crash restart re-verifies and re-dispatches
    what came after the checkpoint: under load, a round a second let ~1.5 s of writes pile
    up past it (the CommitLog is flushed first in such a round, ASYNC_FLUSH too)."""

    __slots__ = ("due", "early", "wake")

    def __init__(self) -> None:
        self.due = 1 << 62  # set at start
        self.early = False  # the round was asked for by the writer
        self.wake = asyncio.Event()

    def appended(self, end: int) -> None:
        """The log now ends at ``end``: wake the round once ``due`` is passed."""
        if end > self.due:
            self.due = end + ROUND_BYTES
            self.early = True
            self.wake.set()

    def start(self, end: int) -> None:
        self.due = end + ROUND_BYTES

    def take_early(self) -> bool:
        early, self.early = self.early, False
        return early
