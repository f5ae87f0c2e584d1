"""Where a file stops being zeros: the tail check of a crash recovery (recovery.py), and
where zeroing a file has anything to do (Segment.zero).

Read with ``pread`` a chunk at a time -- not through a mapping, which would make every page
it reads resident in the process -- and only where the file may hold data: the holes the
filesystem reports (``SEEK_DATA``/``SEEK_HOLE``) read as zeros by definition, and blocks
allocated but never written (a CommitLog segment's ``fallocate``) are holes on ext4 and XFS
unless the page cache holds them. A filesystem that cannot tell is read whole.
"""

from __future__ import annotations

import errno
import os
from typing import Final

_CHUNK: Final = 1 << 20
_ZEROS: Final = bytes(_CHUNK)


def first_nonzero(fd: int, pos: int, stop: int) -> int:
    """The offset of the first byte of ``fd`` from ``pos`` to ``stop`` that is not zero, or
    ``stop`` (bytes past the end of the file count as zeros)."""
    at = pos
    while at < stop:
        data, hole = _data_extent(fd, at, stop)
        for chunk_at in range(data, hole, _CHUNK):
            chunk = os.pread(fd, min(_CHUNK, hole - chunk_at), chunk_at)
            if chunk != _ZEROS[: len(chunk)]:
                return chunk_at + len(chunk) - len(chunk.lstrip(b"\0"))
        at = hole
    return stop


def data_extents(fd: int, pos: int, stop: int) -> list[tuple[int, int]]:
    """The runs ``[data, hole)`` of ``fd`` from ``pos`` to ``stop`` that may hold data (all
    of it where holes cannot be told): what is not in one reads as zeros."""
    runs, at = [], pos
    while at < stop:
        data, hole = _data_extent(fd, at, stop)
        if data < hole:
            runs.append((data, hole))
        at = hole
    return runs


def _data_extent(fd: int, pos: int, stop: int) -> tuple[int, int]:
    """``[data, hole)``: the next run of ``fd`` at or after ``pos`` that may hold data, cut
    at ``stop`` (``(stop, stop)`` if none does); all of it where holes cannot be told."""
    try:
        data = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # nothing but a hole up to the end of the file
            return stop, stop
        if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return pos, stop
        raise
    if data >= stop:
        return stop, stop
    return data, min(stop, os.lseek(fd, data, os.SEEK_HOLE))
