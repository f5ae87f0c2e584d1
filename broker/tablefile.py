"""TableFile: a keyed state file (topics.json) kept as a snapshot plus a journal of changes.

A change is durable once its journal line is (``record``): its cost does not grow with the
table. The snapshot keeps the file's own shape (Java's, for topics.json), so a Java broker
can read it: it is rewritten off the hot path (``compact``) once the journal outgrows it,
by the broker's periodic file job when the journal holds anything, at load after a replay,
and at stop. A compaction seals the journal, encodes the table in a worker thread (the loop
only copies the dict), writes the file atomically and only then deletes the sealed
segments. Records set or delete one key each, so a crash between any two steps, or segments
replayed over a snapshot that already holds them, give the same table.

A write that fails (a full disk) never fails the change: it is logged once per change of
outcome, and the next compaction writes everything again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Final

import structlog

from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.journal import Journal
from aiorocketmq.remoting.files import atomic_write
from aiorocketmq.remoting.protocol.route import dumps

log = structlog.get_logger(__name__)

MIN_COMPACT_BYTES: Final = 256 * 1024  # a journal smaller than this waits for the periodic job

# called on the loop when the journal is sealed; returns what builds the file's JSON object
# in a worker thread (from a copy of the table: the objects in it are never changed in place)
Snapshot = Callable[[], Callable[[], Any]]


class TableFile:
    def __init__(self, file: ConfigFile, snapshot: Snapshot) -> None:
        self.file = file
        self.path = file.path
        self.journal = Journal(file.path)
        self._snapshot = snapshot
        self._snapshot_size = 0
        self._lock = asyncio.Lock()  # one compaction at a time
        self._compacting: asyncio.Task[bool] | None = None
        # writes that failed (journal lines, compactions), and how many a compaction covered
        self._lost = self._covered = 0
        self._failing = False

    def load(self) -> tuple[Any | None, list[Any]]:
        """The snapshot (parsed, or None) and the journal's records after it, oldest first."""
        obj = self.file.load()
        records = self.journal.replay()
        try:
            self._snapshot_size = self.path.stat().st_size
        except OSError:
            self._snapshot_size = 0
        return obj, records

    def record(self, record: Any) -> Coroutine[Any, Any, bool]:
        """Queue one change at once (changes must reach the journal in the order they are
        made); awaiting the result waits until it is durable: False (logged) if it is only
        in memory for now."""
        try:
            future: asyncio.Future[bool] | None = self.journal.submit(record)
        except ValueError as exc:  # text the edges should have refused: a bug, say so
            log.error("config_file_unencodable", path=str(self.path), error=str(exc))
            future = None
        return self._recorded(future)

    async def _recorded(self, future: asyncio.Future[bool] | None) -> bool:
        if future is None:  # not encodable: nothing to write again
            return False
        written = await asyncio.shield(future)
        if not written:
            self._lost += 1  # only a compaction keeps this change now
        elif self.journal.size > max(MIN_COMPACT_BYTES, self._snapshot_size):
            self.compact_soon()
        return written

    def compact_soon(self) -> None:
        if self._compacting is None or self._compacting.done():
            self._compacting = asyncio.get_running_loop().create_task(self.compact())

    async def maintain(self) -> None:
        """The periodic job: compact when the journal holds anything or a write failed."""
        if self._lost != self._covered or self.journal.size:
            await self.compact()

    async def compact(self) -> bool:
        """Write the whole table to the file and drop the journal it holds."""
        async with self._lock:
            sealed = await self.journal.seal()
            build, lost = self._snapshot(), self._lost
            try:
                data = await asyncio.to_thread(lambda: dumps(build()))
            except ValueError as exc:  # a bug (the edges refuse such text): said once
                return self._failed(exc, "config_file_unencodable")
            try:
                await asyncio.to_thread(atomic_write, self.path, data)
                freed = await asyncio.to_thread(self.journal.drop_through, sealed)
            except OSError as exc:
                return self._failed(exc)
            self.journal.size = max(0, self.journal.size - freed)
            self._snapshot_size = len(data)
            self._written(lost)
            return True

    def compact_now(self) -> bool:
        """``compact`` with nothing else running (at load, before serving)."""
        sealed, lost = self.journal.seal_now(), self._lost
        try:
            data = dumps(self._snapshot()())
        except ValueError as exc:
            return self._failed(exc, "config_file_unencodable")
        try:
            atomic_write(self.path, data)
            self.journal.size = max(0, self.journal.size - self.journal.drop_through(sealed))
        except OSError as exc:
            return self._failed(exc)
        self._snapshot_size = len(data)
        self._written(lost)
        return True

    async def close(self) -> None:
        """At stop: queued appends land, then everything goes into the file."""
        await self.journal.close()
        if self._compacting is not None:
            await asyncio.gather(self._compacting, return_exceptions=True)
        await self.maintain()

    def _failed(self, exc: Exception, event: str = "config_file_not_saved") -> bool:
        self._lost += 1  # the next compaction is due whatever the journal holds
        if not self._failing:
            log.error(event, path=str(self.path), error=str(exc),
                      action="kept in memory and in the journal, written again later")  # fmt: skip
        self._failing = True
        return False

    def _written(self, lost: int) -> None:
        self._covered = lost
        if self._failing:
            log.warning("config_file_saved_again", path=str(self.path))
        self._failing = False
