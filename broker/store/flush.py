"""Flusher: makes appended CommitLog bytes durable, off the event loop.

ASYNC_FLUSH: one fsync round every ``flushIntervalCommitLog``. SYNC_FLUSH: group commit --
writers wait for their end offset; one fsync covers every write queued while the previous one
ran (design.md 10).
"""

from __future__ import annotations

import asyncio
import contextlib

from broker.store.commitlog import CommitLog
from broker.store.segment import Segment
from remoting.tasks import wait_future


def fsync_all(segments: list[Segment]) -> None:
    for seg in segments:
        with contextlib.suppress(ValueError, OSError):  # closed by retention meanwhile
            seg.fsync()


class Flusher:
    def __init__(self, commitlog: CommitLog, *, sync: bool, interval: float) -> None:
        self.commitlog = commitlog
        self.sync = sync
        self.interval = interval
        self.flushed = commitlog.max_offset
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()

    async def wait(self, end: int, timeout: float) -> bool:
        """Until the CommitLog is durable up to ``end``; False after ``timeout`` seconds."""
        if self.flushed >= end:
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((end, fut))
        self._wake.set()
        return await wait_future(fut, timeout)

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
        target = self.commitlog.max_offset
        if target > self.flushed:
            segments = self.commitlog.segments_between(self.flushed, target)
            await asyncio.to_thread(fsync_all, segments)
            self.flushed = max(self.flushed, target)
        if self._waiters:
            done = self.flushed
            keep = []
            for end, fut in self._waiters:
                if end <= done:
                    if not fut.done():
                        fut.set_result(None)
                else:
                    keep.append((end, fut))
            self._waiters = keep
            if keep:
                self._wake.set()
