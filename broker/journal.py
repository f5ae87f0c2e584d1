"""Journal: the changes to one of the broker's JSON state files since its last snapshot.

A change is made durable by appending one line and an fdatasync, not by rewriting the whole
file: the cost of a change no longer grows with the table (issue 29, N6). Beside
``topics.json`` lie segments ``topics.json.journal.<n>``, each a run of lines
``<crc32, 8 hex digits> <JSON record>\\n``. Appends queued while a batch is being written go
out together in the next one (one fdatasync for all). ``seal`` starts a new segment, so that
the sealed ones can be deleted once a snapshot holding them is on disk (``TableFile``).

A line cut short by a crash, or a failed write, can only be the tail of its segment (after a
failed write the segment is sealed): replay drops such a tail with a warning. A bad line with
good lines after it is corruption, reported as a configuration error as a corrupt file is.
"""

from __future__ import annotations

import asyncio
import os
import zlib
from pathlib import Path
from typing import Any

import structlog

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.files import fsync_dir
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.route import dumps

log = structlog.get_logger(__name__)


def encode_line(record: Any) -> bytes:
    """One record as a journal line; ValueError if it cannot be encoded."""
    body = dumps(record)
    if b"\n" in body:  # dumps escapes newlines inside strings: a bug if not
        raise ValueError("a journal record must be one line")
    return b"%08x %s\n" % (zlib.crc32(body), body)


def decode_line(line: bytes) -> Any:
    """The record on ``line`` (without its newline); ValueError if it is damaged."""
    crc, sep, body = line.partition(b" ")
    if not sep or len(crc) != 8:
        raise ValueError("no checksum")
    try:
        expected = int(crc, 16)
    except ValueError as exc:
        raise ValueError("no checksum") from exc
    if zlib.crc32(body) != expected:
        raise ValueError("checksum mismatch")
    return fastjson.loads(body.decode("utf-8"))


def read_segment(path: Path) -> list[Any]:
    """The records of one segment; a damaged tail is dropped (logged), damage before a good
    line is a ConfigError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the segment ends with a whole line
    records: list[Any] = []
    bad: tuple[int, str] | None = None
    for index, line in enumerate(lines):
        try:
            record = decode_line(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            bad = bad or (index, str(exc))
            continue
        if bad is not None:
            raise ConfigError(f"{path}: damaged record at line {bad[0] + 1}: {bad[1]}")
        records.append(record)
    if bad is not None or tail:
        log.warning("journal_tail_dropped", path=str(path), records=len(records),
                    reason=bad[1] if bad else "line cut short")  # fmt: skip
    return records


class Journal:
    """Segments ``<file>.journal.<n>`` beside ``file``; appends go to the newest."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.size = 0  # bytes in segments not yet deleted: what compaction would reclaim
        self._segment = 0  # where appends go
        self._fd: int | None = None
        self._fd_segment = -1
        self._queue: list[tuple[bytes, asyncio.Future[bool]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one batch write, or a seal, at a time
        self._failing = False

    def segment_path(self, n: int) -> Path:
        return self.file.with_name(f"{self.file.name}.journal.{n}")

    def segments(self) -> list[tuple[int, Path]]:
        """Existing segments, oldest first."""
        prefix = f"{self.file.name}.journal."
        found = []
        try:
            entries = list(self.file.parent.iterdir())
        except FileNotFoundError:
            return []
        for entry in entries:
            suffix = entry.name[len(prefix) :] if entry.name.startswith(prefix) else ""
            if suffix.isdigit():
                found.append((int(suffix), entry))
        return sorted(found)

    def replay(self) -> list[Any]:
        """Every record on disk, oldest first; appends then go to a segment after them."""
        records: list[Any] = []
        segments = self.segments()
        for _, path in segments:
            records += read_segment(path)
        self.size = sum(path.stat().st_size for _, path in segments)
        self._segment = segments[-1][0] + 1 if segments else 0
        return records

    def submit(self, record: Any) -> asyncio.Future[bool]:
        """Queue ``record`` now (records land in the order they are submitted, which must be
        the order of the changes); the future says True once it is on disk, False if the
        write failed (logged). ValueError, with nothing queued, if it cannot be encoded."""
        line = encode_line(record)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.append((line, future))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._drain())
        return future

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            written = False
            try:
                written = await self._write_batch(b"".join(line for line, _ in batch))
            finally:  # also if stopped: nobody waits forever
                for _, future in batch:
                    if not future.done():
                        future.set_result(written)

    async def _write_batch(self, data: bytes) -> bool:
        async with self._lock:
            segment = self._segment
            try:
                await asyncio.to_thread(self._write, segment, data)
            except OSError as exc:
                self._close()
                self._segment = segment + 1  # never append after a torn tail
                if not self._failing:
                    log.error("journal_not_written", path=str(self.segment_path(segment)),
                              error=str(exc), action="kept in memory, written again "
                              "later")  # fmt: skip
                self._failing = True
                return False
            self.size += len(data)
            if self._failing:
                log.warning("journal_written_again", path=str(self.file))
            self._failing = False
            return True

    def _write(self, segment: int, data: bytes) -> None:
        """In a worker thread, under the lock."""
        if self._fd is None or self._fd_segment != segment:
            self._close()
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(
                self.segment_path(segment), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )
            self._fd_segment = segment
            fsync_dir(self.file.parent)  # the new segment's name is durable too
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fdatasync(self._fd)

    def _close(self) -> None:
        if self._fd is not None:
            fd, self._fd, self._fd_segment = self._fd, None, -1
            os.close(fd)

    async def seal(self) -> int:
        """Send later appends to a new segment; returns the newest sealed segment's number.
        Appends already queued may land after the seal: a snapshot taken after it holds
        them anyway, and replaying them over it changes nothing."""
        async with self._lock:
            return self.seal_now()

    def seal_now(self) -> int:
        """``seal`` with no batch being written (at load and at stop)."""
        self._close()
        sealed, self._segment = self._segment, self._segment + 1
        return sealed

    def drop_through(self, sealed: int) -> int:
        """Delete segments up to ``sealed`` (a snapshot holding them is on disk); returns the
        bytes freed, for the caller to take off ``size`` on the loop (this may run in a
        thread: appends then go to later segments only)."""
        freed = 0
        for n, path in self.segments():
            if n <= sealed:
                freed += path.stat().st_size
                path.unlink()
        if freed:
            fsync_dir(self.file.parent)
        return freed

    async def close(self) -> None:
        """Wait for queued appends, then close the segment."""
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        self._close()
