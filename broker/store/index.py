"""Index: message keys -> commitlog offsets, in RocketMQ's index file layout (protocol.md 8.3).

Each file: a 40-byte header (begin/end timestamp, begin/end commitlog offset, slots used,
entries), ``maxHashSlotNum`` 4-byte slots, ``maxIndexNum`` 20-byte entries (key hash, offset,
seconds since the file's begin, previous entry of the slot). Keys are ``topic#key`` for each
KEYS word and for UNIQ_KEY. Files are named by creation time. Header and slots are allocated
when a file is made; entries a chunk at a time, before they are written (``reserve``), so a
full disk refuses a put instead of killing the process (segment.py).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import structlog

from aiorocketmq.broker.store.segment import SpaceCheck
from aiorocketmq.remoting.files import fsync_dir
from aiorocketmq.remoting.protocol.msgid import java_hash

log = structlog.get_logger(__name__)

HEADER: Final = 40
_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_SLOT = struct.Struct(">i")
_CHUNK_ENTRIES = 52_428  # about 1 MiB of entries allocated at a time


def _no_check(_nbytes: int) -> None:
    return None


# java_hash's ASCII path (msgid.py), inlined in IndexFile.add: a unit c is 31 * (c // 31) +
# c % 31, so String.hashCode is the sum of two base-31 numerals parsed by int() in C
_DIGITS31: Final = b"0123456789abcdefghijklmnopqrstu"
_REMAINDERS: Final = bytes(_DIGITS31[c % 31] for c in range(128)) + b"?" * 128
_QUOTIENTS: Final = bytes(_DIGITS31[c // 31] for c in range(128)) + b"?" * 128
_ASCII_MAX: Final = 512


def key_hash(key: str) -> int:
    # compat: IndexFile.indexKeyHashMethod -- abs(String.hashCode()), MIN_VALUE -> 0
    h = abs(java_hash(key))
    return 0 if h > 0x7FFFFFFF else h


class IndexFile:
    def __init__(
        self, path: Path, slots: int, entries: int, *, create: bool, check: SpaceCheck = _no_check
    ) -> None:
        self.path, self.slots, self.entries = path, slots, entries
        self._entries_at = HEADER + slots * 4
        size = self._entries_at + entries * 20
        if create:
            check(self._entries_at)
        self.fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        try:
            if os.fstat(self.fd).st_size < size:
                os.ftruncate(self.fd, size)
            if create:
                os.posix_fallocate(self.fd, 0, self._entries_at)
            self.mm = mmap.mmap(self.fd, size)
        except BaseException:
            os.close(self.fd)
            if create:
                path.unlink(missing_ok=True)
            raise
        if create:
            fsync_dir(path.parent)
        fields: tuple[int, ...] = _HEADER.unpack_from(self.mm, 0)
        self.begin_ts, self.end_ts, self.begin_phys, self.end_phys, self.used, count = fields
        self.count: int = max(count, 1)  # entry 0 is never used: 0 means "no entry"
        self.backed = self.count  # entries with blocks behind them: those written, at least
        self.closed = False

    def reserve(self, count: int, check: SpaceCheck = _no_check) -> None:
        """Allocate blocks for ``count`` more entries (and a chunk beyond); raises OSError,
        having written nothing, when the disk cannot give them."""
        need = min(self.entries, self.count + count)
        if need <= self.backed:
            return
        target = min(self.entries, max(need, self.backed + _CHUNK_ENTRIES))
        check((target - self.backed) * 20)
        os.posix_fallocate(self.fd, self._entries_at + self.backed * 20,
                           (target - self.backed) * 20)  # fmt: skip
        self.backed = target

    @property
    def entries_at(self) -> int:
        """Where the entries start in the file (after the header and slots)."""
        return self._entries_at

    @property
    def full(self) -> bool:
        return self.count >= self.entries

    @property
    def allocated(self) -> int:
        """Bytes with blocks behind them: the header and slots, and the entries backed."""
        return self._entries_at + self.backed * 20

    def add(self, prefix: str, keys: Sequence[str], phys: int, store_ts: int) -> int:
        """Add an entry for ``prefix + key`` for each of ``keys`` while there is room; returns
        how many went in. The header is left to ``write_header`` (once per append)."""
        if self.begin_ts <= 0:
            self.begin_ts, self.begin_phys = store_ts, phys
        diff = (store_ts - self.begin_ts) // 1000
        diff = diff if diff > 0 else 0
        mm, slots, count, used = self.mm, self.slots, self.count, self.used
        at = self._entries_at + count * 20
        room = self.entries - count
        todo = keys if len(keys) <= room else keys[:room]
        for key in todo:
            text = prefix + key
            if text.isascii() and len(text) <= _ASCII_MAX:  # key_hash, inline
                units = text.encode()
                h = int(units.translate(_REMAINDERS), 31)
                h = (h + int(units.translate(_QUOTIENTS) + b"0", 31)) & 0xFFFFFFFF
                if h & 0x80000000:  # negative as int32: abs(), and MIN_VALUE -> 0
                    h = 0x100000000 - h if h != 0x80000000 else 0
            else:
                h = key_hash(text)
            slot_pos = HEADER + h % slots * 4
            (prev,) = _SLOT.unpack_from(mm, slot_pos)
            if prev <= 0 or prev > count:  # a free slot (or one a crash left pointing ahead)
                prev = 0
                used += 1
            _ENTRY.pack_into(mm, at, h, phys, diff, prev)
            _SLOT.pack_into(mm, slot_pos, count)
            count += 1
            at += 20
        added = count - self.count
        self.count = count
        self.used = used
        self.end_ts, self.end_phys = store_ts, phys
        return added

    def write_header(self) -> None:
        _HEADER.pack_into(self.mm, 0, self.begin_ts, self.end_ts, self.begin_phys, self.end_phys,
                          self.used, self.count)  # fmt: skip

    def query(self, key: str, limit: int, begin: int, end: int, out: dict[int, None]) -> None:
        """Add the offsets of ``key``'s entries in the time range to ``out``, newest first,
        until it holds ``limit`` distinct ones (a recovery's re-dispatch adds duplicates)."""
        h = key_hash(key)
        (index,) = _SLOT.unpack_from(self.mm, HEADER + (h % self.slots) * 4)
        seen = 0
        while 0 < index < self.count and len(out) < limit and seen < self.count:
            entry_hash, phys, diff, prev = _ENTRY.unpack_from(
                self.mm, HEADER + self.slots * 4 + index * 20
            )
            stamp = self.begin_ts + diff * 1000
            if entry_hash == h and begin <= stamp <= end:
                out[phys] = None
            if prev <= 0 or prev >= index or stamp < begin:
                break
            index, seen = prev, seen + 1

    def truncate_from(self, cut: int) -> None:
        """Undo the newest entries pointing at ``cut`` or later, newest first, so each slot
        points where it did before them (entries a recovery's re-dispatch added out of order
        may stay: queries verify every record they return)."""
        mm, entries_at, removed = self.mm, HEADER + self.slots * 4, False
        while self.count > 1:
            at = entries_at + (self.count - 1) * 20
            h, phys, _diff, prev = _ENTRY.unpack_from(mm, at)
            if phys < cut:
                break
            _SLOT.pack_into(mm, HEADER + (h % self.slots) * 4, prev)
            if prev == 0:  # the entry had taken a free slot
                self.used -= 1
            mm[at : at + 20] = bytes(20)
            self.count, removed = self.count - 1, True
        if not removed:
            return
        if self.count > 1:  # the entry now last: its time to the second, rounded up
            _h, phys, diff, _prev = _ENTRY.unpack_from(mm, entries_at + (self.count - 1) * 20)
            self.end_ts, self.end_phys = self.begin_ts + diff * 1000 + 999, phys
        _HEADER.pack_into(mm, 0, self.begin_ts, self.end_ts, self.begin_phys, self.end_phys,
                          self.used, self.count)  # fmt: skip

    def flush(self) -> None:
        try:
            os.fsync(self.fd)  # releases the GIL, unlike mmap.flush
        except (OSError, ValueError):
            if not self.closed:  # only a file retention closed meanwhile may fail
                raise

    def close(self) -> None:
        self.closed = True
        self.mm.close()
        os.close(self.fd)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


class Index:
    """The index files of a store, newest last."""

    def __init__(
        self, directory: Path, slots: int, entries: int, check: SpaceCheck = _no_check
    ) -> None:
        if slots < 1 or entries < 2:  # entry 0 is never used: a file must hold one more
            raise ValueError(f"index needs >= 1 slot and >= 2 entries, got {slots}, {entries}")
        self.directory, self.slots, self.entries = directory, slots, entries
        self.check = check
        self.files: list[IndexFile] = []

    def load(self) -> None:
        if self.directory.is_dir():
            for path in sorted(p for p in self.directory.iterdir() if p.name.isdigit()):
                self.files.append(IndexFile(path, self.slots, self.entries, create=False))

    def _writable(self, room: int = 1) -> IndexFile:
        """The file to add to: a new one when the last cannot take ``room`` more entries
        (a put never spans two files, so one reservation covers it)."""
        last = self.files[-1] if self.files else None
        if last is None or last.entries - last.count < min(room, self.entries - 1):
            self.directory.mkdir(parents=True, exist_ok=True)
            name = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")[:17]
            while (self.directory / name).exists():
                name = str(int(name) + 1)
            last = IndexFile(
                self.directory / name, self.slots, self.entries, create=True, check=self.check
            )
            self.files.append(last)
        return last

    def reserve(self, keys: int) -> None:
        """Make room for ``keys`` entries before the CommitLog append they index; raises
        OSError when the disk cannot give it."""
        last = self.files[-1] if self.files else None
        if last is not None and last.count + keys <= last.backed:
            return  # the usual case: room already
        if keys:
            self._writable(keys).reserve(keys, self.check)

    def put(self, topic: str, keys: list[str], phys: int, store_ts: int) -> None:
        file = self.files[-1] if self.files else None
        if keys and file is not None and file.count + len(keys) <= file.backed:
            file.add(topic + "#", keys, phys, store_ts)  # the usual put: room already
            file.write_header()
        else:
            self.put_all(topic, ((keys, phys),), store_ts)

    def put_all(self, topic: str, puts: Iterable[tuple[Sequence[str], int]], store_ts: int) -> None:
        """The entries of an append of ``topic``'s messages (``(keys, phys)`` each, stored at
        ``store_ts``): ``topic#key`` hashed and written in one loop per message, each file's
        header once (the last message's offset and time, as a put per message leaves it).
        Raises OSError when a file cannot be made or grown; what went in before stays."""
        prefix, file = topic + "#", self.files[-1] if self.files else None
        touched: IndexFile | None = None  # the file added to since its header was written
        try:
            for keys, phys in puts:
                n = len(keys)
                if n and file is not None and file.count + n <= file.backed:  # room already
                    file.add(prefix, keys, phys, store_ts)
                    touched = file
                    continue
                rest = keys  # (not the loop variable itself: mypyc 1.19 looped forever)
                while rest:  # a file that fills up part-way leaves the rest to a new one
                    if file is None or file.entries - file.count < min(n, self.entries - 1):
                        if touched is not None:
                            touched.write_header()
                            touched = None
                        file = self._writable(n)
                    if file.count + n > file.backed:  # none after the put path's reserve()
                        file.reserve(n, self.check)
                    added = file.add(prefix, rest, phys, store_ts)
                    touched = file
                    rest = rest[added:]
                    n = len(rest)
        finally:
            if touched is not None:
                touched.write_header()

    def query(self, topic: str, key: str, limit: int, begin: int, end: int) -> list[int]:
        """Commitlog offsets of ``topic``'s messages with ``key`` in the time range, newest
        file first, duplicates (a recovery's re-dispatch) removed."""
        out: dict[int, None] = {}
        for file in reversed(self.files):
            if file.end_ts and (file.end_ts < begin or file.begin_ts > end + 1000):
                continue
            file.query(f"{topic}#{key}", limit, begin, end, out)
            if len(out) >= limit:
                break
        return list(out)[:limit]

    @property
    def last_update(self) -> tuple[int, int]:
        last = self.files[-1] if self.files else None
        return (last.end_ts, last.end_phys) if last else (0, 0)

    def delete_before(self, commitlog_min: int) -> int:
        """Delete files whose every entry points at deleted CommitLog data."""
        deleted = 0
        while len(self.files) > 1 and self.files[0].end_phys < commitlog_min:
            self.files.pop(0).delete()
            deleted += 1
        return deleted

    def truncate_from(self, cut: int) -> None:
        """Forget the entries pointing at ``cut`` or later (a slave cut back to its master's
        log); files left empty are deleted."""
        while self.files:
            file = self.files[-1]
            file.truncate_from(cut)
            if file.count > 1:
                return
            self.files.pop().delete()

    def flush(self) -> None:
        for file in self.files[-2:]:
            file.flush()

    def close(self) -> None:
        for file in self.files:
            file.close()
