"""Segment and SegmentQueue: fixed-size files named by their 20-digit start offset, mapped.

Writes copy into the mapping (no syscall per message); ``fsync`` on the descriptor makes them
durable (Linux writes back pages dirtied through a shared mapping). A CommitLog segment is
``fallocate``d when created, so a full disk fails the creation with a clear error instead of
killing the process with SIGBUS on a later write into an unbacked page.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import re
from pathlib import Path

import structlog

from remoting.files import fsync_dir

log = structlog.get_logger(__name__)

_NAME = re.compile(r"^[0-9]{20}$")
_CHUNK = 1 << 20
_ZERO_CHUNK = bytes(_CHUNK)
# Linux 5.14+: map a range writable in one call (no data is changed); elsewhere it fails
# and prefaulting stops
_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)
_prefault_works = hasattr(mmap.mmap, "madvise")
_PREFAULT = 256 << 10  # per call: about half a millisecond on the loop here


class Segment:
    """One file of ``size`` bytes holding offsets ``[start, start + size)``."""

    __slots__ = ("faulted", "fd", "mm", "path", "size", "start")

    def __init__(self, path: Path, start: int, size: int, fd: int) -> None:
        self.path = path
        self.start = start
        self.size = size
        self.fd = fd
        self.mm = mmap.mmap(fd, size)
        self.faulted = 0  # bytes from the start mapped writable by prefault()

    @classmethod
    def create(cls, directory: Path, start: int, size: int, *, preallocate: bool) -> Segment:
        """A new zero-filled segment; raises OSError (ENOSPC, ...) when it cannot be made."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{start:020d}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            if preallocate:
                os.posix_fallocate(fd, 0, size)
            else:
                os.ftruncate(fd, size)
            fsync_dir(directory)  # the new file's name is durable before anything points at it
            return cls(path, start, size, fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            raise

    @classmethod
    def open(cls, path: Path, size: int) -> Segment:
        fd = os.open(path, os.O_RDWR)
        try:
            if os.fstat(fd).st_size < size:  # a file cut short: extend it with zeros
                os.ftruncate(fd, size)
            return cls(path, int(path.name), size, fd)
        except BaseException:
            os.close(fd)
            raise

    @property
    def end(self) -> int:
        return self.start + self.size

    def write(self, pos: int, data: bytes | bytearray | memoryview) -> None:
        self.mm[pos : pos + len(data)] = data

    def prefault(self, pos: int) -> None:
        """Map the next chunk from ``pos`` writable in one call, so the appends that follow
        do not fault a page at a time (RocketMQ warms its mapped files for the same
        reason). Nothing is written: only for preallocated files, where no block is
        allocated by it."""
        global _prefault_works
        start = pos - pos % mmap.PAGESIZE
        end = min(self.size, start + _PREFAULT)
        self.faulted = end
        if _prefault_works and end > start:
            try:
                self.mm.madvise(_MADV_POPULATE_WRITE, start, end - start)
            except OSError as exc:
                if exc.errno == errno.EINVAL:  # an older kernel: stop trying
                    _prefault_works = False

    def read(self, pos: int, length: int) -> bytes:
        return self.mm[pos : pos + length]

    def zero(self, pos: int) -> None:
        """Zero everything from ``pos`` to the end (a truncated tail), a chunk at a time."""
        for at in range(pos, self.size, _CHUNK):
            end = min(at + _CHUNK, self.size)
            self.mm[at:end] = _ZERO_CHUNK[: end - at]

    def zeroed_from(self, pos: int) -> bool:
        """Whether every byte from ``pos`` to the end is zero (scanned a chunk at a time)."""
        for at in range(pos, self.size, _CHUNK):
            end = min(at + _CHUNK, self.size)
            if self.mm[at:end] != _ZERO_CHUNK[: end - at]:
                return False
        return True

    def fsync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self.mm.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def delete(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def mtime(self) -> float:
        return os.fstat(self.fd).st_mtime


class SegmentQueue:
    """The segments of one log, contiguous and ordered by start offset."""

    def __init__(self, directory: Path, size: int, *, preallocate: bool) -> None:
        self.directory = directory
        self.size = size
        self.preallocate = preallocate
        self.segments: list[Segment] = []

    def load(self) -> None:
        """Open every segment file; a gap or a foreign file name is reported, not guessed at."""
        if not self.directory.is_dir():
            return
        names = sorted(p.name for p in self.directory.iterdir() if _NAME.match(p.name))
        for name in names:
            seg = Segment.open(self.directory / name, self.size)
            if self.segments and seg.start != self.segments[-1].end:
                log.error(
                    "segment_gap",
                    directory=str(self.directory),
                    expected=self.segments[-1].end,
                    found=seg.start,
                )
            self.segments.append(seg)

    @property
    def min_offset(self) -> int:
        return self.segments[0].start if self.segments else 0

    def last(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    def find(self, offset: int) -> Segment | None:
        """The segment holding ``offset``, or None."""
        if not self.segments or offset < self.segments[0].start:
            return None
        index = (offset - self.segments[0].start) // self.size
        if index < len(self.segments):
            seg = self.segments[index]
            if seg.start <= offset < seg.end:
                return seg
        return None

    def create(self, start: int) -> Segment:
        seg = Segment.create(self.directory, start, self.size, preallocate=self.preallocate)
        self.segments.append(seg)
        return seg

    def truncate_after(self, offset: int) -> None:
        """Drop whole segments that start at or after ``offset`` (a torn tail's leftovers)."""
        while self.segments and self.segments[-1].start >= offset:
            self.segments.pop().delete()
        if self.segments:
            fsync_dir(self.directory)

    def delete_first(self) -> Segment:
        seg = self.segments.pop(0)
        seg.delete()
        fsync_dir(self.directory)
        return seg

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
