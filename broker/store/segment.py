"""Segment and SegmentQueue: fixed-size files named by their 20-digit start offset, mapped.

Writes copy into the mapping (no syscall per message); ``fsync`` makes them durable (Linux
writes back pages dirtied through a shared mapping, whichever descriptor asks).

No byte is ever written through a mapping where the file has no blocks behind it: on a full
disk that page fault kills the process with SIGBUS. ``backed`` is how much of a file has its
blocks (``fallocate``); writers call ``ensure_backed`` first, which fails with an OSError
(ENOSPC, or ``DiskFull`` from the store's check) instead. Files keep their full size from
creation, their blocks come a step at a time: a CommitLog segment ``commitLogAllocateStepMb``
(64 MiB) at a time ahead of the writer, so a new broker does not take 1 GiB of disk at once;
ConsumeQueue files a chunk at a time, so 10,000 idle queues do not take 6 MB of disk each.
A segment opened again counts as backed whole until its owner lowers ``backed`` to what it
has written (CommitLog.settle, ConsumeQueue.load): allocating again what is allocated takes
no space.

A SegmentQueue given a ``MapCache`` (ConsumeQueues: thousands of files) keeps no descriptor
of its own, and the cache unmaps idle segments beyond a limit (Python's mmap holds a
duplicate descriptor per mapping, so the limit bounds open files too); a segment is mapped
again on its next use, and fsynced through a descriptor opened for the purpose.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import mmap
import os
import re
from collections.abc import Callable
from pathlib import Path

import structlog
from mypy_extensions import mypyc_attr

from aiorocketmq.broker.store import warm, zeros
from aiorocketmq.remoting.files import fsync_dir

log = structlog.get_logger(__name__)

_NAME = re.compile(r"[0-9]{20}")
_CHUNK = 1 << 20
_PAGE = mmap.PAGESIZE
_ZERO_CHUNK = bytes(_CHUNK)

# checks that ``nbytes`` more of the disk may be used; raises OSError (DiskFull) if not
SpaceCheck = Callable[[int], None]


def _no_check(_nbytes: int) -> None:
    return None


@mypyc_attr(native_class=False)  # mypyc compiles no subclass of OSError
class FsyncDeferred(OSError):
    """A file could not even be opened to fsync it (too many open files): nothing is known
    to be lost; the flush is tried again next round."""


class MapCache:
    """Bounds how many segments are mapped at once (second chance: a segment used since the
    last sweep is kept one more round)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._ring: collections.deque[Segment] = collections.deque()

    def __len__(self) -> int:
        return len(self._ring)

    def sweep(self) -> None:
        """Unmap the segments not used since the last sweep (memory.py: idle files leave
        memory; each is mapped again on its next use)."""
        self._unmap_unused(len(self._ring), first_only=False)

    def mapped(self, seg: Segment) -> None:
        self._ring.append(seg)
        if len(self._ring) > self.limit:
            self._unmap_unused(2 * len(self._ring), first_only=True)

    def _unmap_unused(self, turns: int, first_only: bool) -> None:
        """Go round the ring ``turns`` times: a segment used since the last turn is marked
        unused and kept, an unused one unmapped (the first only, if ``first_only``)."""
        ring = self._ring
        for _ in range(turns):
            if not ring:
                return
            seg = ring.popleft()
            if not seg.is_mapped:
                continue  # closed or unmapped meanwhile
            if seg.used:
                seg.used = False
                ring.append(seg)
            elif seg.unmap():
                if first_only:
                    return
            else:
                ring.append(seg)  # a view of it is still in use


class Segment:
    """One file of ``size`` bytes holding offsets ``[start, start + size)``."""

    __slots__ = ("_cache", "_mm", "backed", "closed", "faulted", "fd", "path", "prefaulted",
                 "released", "size", "start", "used")  # fmt: skip

    def __init__(
        self,
        path: Path,
        start: int,
        size: int,
        fd: int | None,
        *,
        backed: int,
        cache: MapCache | None = None,
    ) -> None:
        self.path = path
        self.start = start
        self.size = size
        self.fd = fd  # kept open only when its queue keeps descriptors
        self.backed = backed  # bytes from the start with blocks behind them
        self.faulted = 0  # the writer calls prefault() when it writes past this
        self.prefaulted = 0  # bytes from the start mapped writable (or being so) by prefault
        self.closed = False  # closed on purpose (retention, shutdown): errors are expected
        self.used = True  # mapped since the last sweep (MapCache; memory.py for the CommitLog)
        self.released = 0  # bytes from the start released from memory (memory.py)
        self._cache = cache
        self._mm: mmap.mmap | None = mmap.mmap(fd, size) if fd is not None else None

    @classmethod
    def create(
        cls,
        directory: Path,
        start: int,
        size: int,
        *,
        backed: int,
        check: SpaceCheck = _no_check,
        cache: MapCache | None = None,
    ) -> Segment:
        """A new zero-filled segment with its first ``backed`` bytes allocated; raises OSError
        (ENOSPC, DiskFull, ...) when it cannot be made -- ENOSPC too when the filesystem
        cannot hold a file of ``size`` bytes (EFBIG): no disk has room for it."""
        check(backed)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{start:020d}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                os.ftruncate(fd, size)
            except OSError as exc:  # its size is all it takes at first: it has no room
                if exc.errno != errno.EFBIG:
                    raise
                raise OSError(errno.ENOSPC, f"{path}: {size} bytes: {exc.strerror}") from exc
            if backed:
                os.posix_fallocate(fd, 0, backed)
            fsync_dir(directory)  # the new file's name is durable before anything points at it
            if cache is None:
                return cls(path, start, size, fd, backed=backed)
            seg = cls(path, start, size, None, backed=backed, cache=cache)
            seg._mm = mmap.mmap(fd, size)
            os.close(fd)
            cache.mapped(seg)
            return seg
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            raise

    @classmethod
    def open(cls, path: Path, size: int, *, cache: MapCache | None = None) -> Segment:
        """An existing segment; its blocks are assumed only as far as the file reaches (a
        file cut short is extended sparsely: writers back it before writing)."""
        fd = os.open(path, os.O_RDWR)
        try:
            length = os.fstat(fd).st_size
            if length < size:
                os.ftruncate(fd, size)
            if cache is None:
                return cls(path, int(path.name), size, fd, backed=min(length, size))
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        return cls(path, int(path.name), size, None, backed=min(length, size), cache=cache)

    @property
    def end(self) -> int:
        return self.start + self.size

    @property
    def is_mapped(self) -> bool:
        return self._mm is not None

    @property
    def mapping(self) -> mmap.mmap | None:
        """The mapping if mapped now (None when closed or unmapped), without mapping it."""
        return self._mm

    @property
    def mm(self) -> mmap.mmap:
        """The mapping, made again if the cache dropped it."""
        mm = self._mm
        if mm is None:
            mm = self._map()
        self.used = True
        return mm

    def _map(self) -> mmap.mmap:
        if self.closed:
            raise ValueError(f"{self.path} is closed")
        fd = os.open(self.path, os.O_RDWR)
        try:
            mm = self._mm = mmap.mmap(fd, self.size)
        finally:
            os.close(fd)
        self.used = True  # never the one evicted to make room for itself
        if self._cache is not None:
            self._cache.mapped(self)
        return mm

    def unmap(self) -> bool:
        """Drop the mapping (the cache's eviction); False while a view of it is in use."""
        mm = self._mm
        if mm is None:
            return True
        try:
            mm.close()
        except BufferError:
            return False
        self._mm = None
        return True

    def ensure_backed(self, end: int, chunk: int, check: SpaceCheck = _no_check) -> None:
        """Allocate blocks behind the file up to ``end`` (and up to a chunk beyond, whole
        pages: warm.py maps pages from where the blocks ended); raises OSError, having
        written nothing, when the disk cannot give them."""
        if end <= self.backed:
            return
        target = max(end, self.backed + chunk)
        target = min(self.size, target + (-target) % _PAGE)
        check(target - self.backed)
        fd = self.fd if self.fd is not None else os.open(self.path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, self.backed, target - self.backed)
        finally:
            if fd != self.fd:
                os.close(fd)
        self.backed = target

    def write(self, pos: int, data: bytes | bytearray | memoryview) -> None:
        self.mm[pos : pos + len(data)] = data

    def prefault(self, pos: int) -> None:
        """Map the pages ahead of a write at ``pos`` writable, so the appends that follow do
        not fault a page at a time; nothing is written, only within the backed part, where
        no block is allocated by it (warm.py: off the loop where it can be)."""
        warm.prefault(self, pos)

    def read(self, pos: int, length: int) -> bytes:
        return self.mm[pos : pos + length]

    def zero(self, pos: int, upto: int | None = None) -> None:
        """Zero from ``pos`` to ``upto`` (default: the end; a truncated tail), a chunk at a
        time. Holes are left alone (they read as zeros; a write would allocate a block
        there), and the blocks of the rest are allocated first -- nothing where they are;
        OSError, not a SIGBUS, on a filesystem that cannot tell its holes and has no room.
        Not bounded by ``backed``: that may be lower than what was written (after a start)."""
        mm, stop = self.mm, self.size if upto is None else min(upto, self.size)
        if pos >= stop:
            return
        fd = self.fd if self.fd is not None else os.open(self.path, os.O_RDWR)
        try:
            runs = zeros.data_extents(fd, pos, stop)
            for start, end in runs:
                os.posix_fallocate(fd, start, end - start)
        finally:
            if fd != self.fd:
                os.close(fd)
        for start, end in runs:
            for at in range(start, end, _CHUNK):
                upto_at = min(at + _CHUNK, end)
                mm[at:upto_at] = _ZERO_CHUNK[: upto_at - at]

    def first_nonzero(self, pos: int, stop: int) -> int:
        """The position of the first byte from ``pos`` to ``stop`` that is not zero, or
        ``stop``; read without touching the mapping (zeros.py)."""
        fd = self.fd if self.fd is not None else os.open(self.path, os.O_RDONLY)
        try:
            return zeros.first_nonzero(fd, pos, stop)
        finally:
            if fd != self.fd:
                os.close(fd)

    def fsync(self) -> None:
        """Make what was written durable. Errors are raised unless the segment was closed on
        purpose meanwhile (retention deleted it)."""
        try:
            if self.fd is not None:
                os.fsync(self.fd)
                return
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
                    raise FsyncDeferred(exc.errno, f"{self.path}: {exc.strerror}") from exc
                raise
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except (OSError, ValueError):
            if not self.closed:
                raise

    def close(self) -> None:
        self.closed = True
        if self._mm is not None:
            # BufferError: a view (or warm.py's thread) holds it; unmapped once let go of
            with contextlib.suppress(BufferError, ValueError):
                self._mm.close()
            self._mm = None
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def delete(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def mtime(self) -> float:
        return self.path.stat().st_mtime


class SegmentQueue:
    """The segments of one log, contiguous and ordered by start offset.

    ``backed`` is how much of a new segment is allocated at creation: a first step
    (CommitLog) or chunk (ConsumeQueue); both grow through ``Segment.ensure_backed``."""

    def __init__(
        self,
        directory: Path,
        size: int,
        *,
        backed: int,
        cache: MapCache | None = None,
        check: SpaceCheck = _no_check,
    ) -> None:
        self.directory = directory
        self.size = size
        self.backed = min(backed, size)
        self.cache = cache  # None: descriptors stay open, mappings stay
        self.check = check
        self.segments: list[Segment] = []

    def load(self) -> None:
        """Open every segment file; a gap or a foreign file name is reported, not guessed at."""
        if not self.directory.is_dir():
            return
        names = sorted(p.name for p in self.directory.iterdir() if _NAME.fullmatch(p.name))
        for name in names:
            seg = Segment.open(self.directory / name, self.size, cache=self.cache)
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
        seg = Segment.create(
            self.directory,
            start,
            self.size,
            backed=self.backed,
            check=self.check,
            cache=self.cache,
        )
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
