"""CommitLog: every message of every topic, appended to fixed-size segments.

Records use the stored-message layout byte for byte (protocol.md 7.1). A record that does not
fit the rest of a segment (with 8 bytes to spare) leaves an end-of-file blank record --
``int32 remaining | int32 BLANK_MAGIC`` -- and starts the next segment.
"""

from __future__ import annotations

import struct
import zlib
from enum import Enum
from pathlib import Path
from typing import Final, NamedTuple

from broker.store.segment import Segment, SegmentQueue, SpaceCheck
from remoting.files import fsync_dir
from remoting.protocol.message import (
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    PHYSICAL_OFFSET_POS,
    SYSFLAG_POS,
    MessageExt,
    RecordPlan,
    SysFlag,
    write_record,
)

_HEAD: Final = struct.Struct(">iI")  # total size, magic
_Q: Final = struct.Struct(">q")
_I: Final = struct.Struct(">i")
_H: Final = struct.Struct(">h")
BLANK_MIN: Final = 8
_PROPERTY_SEPARATOR: Final = 2
MIN_RECORD: Final = 91  # the smallest V1 record: IPv4 hosts, empty body, topic and properties


class Scan(Enum):
    """What lies at a position of the CommitLog."""

    RECORD = 1  # a valid record
    END_OF_SEGMENT = 2  # the blank trailer: the next record starts the next segment
    END = 3  # zeros: nothing was ever written here
    INVALID = 4  # bytes that are not a valid record
    INCOMPLETE = 5  # the bytes received so far end inside it (a slave's raw appends)


class Found(NamedTuple):
    kind: Scan
    size: int = 0


class CommitLog:
    def __init__(self, directory: Path, segment_size: int, check: SpaceCheck | None = None) -> None:
        # segments are allocated whole when created: appends never fault in a block
        self.queue = SegmentQueue(directory, segment_size, backed=segment_size)
        if check is not None:
            self.queue.check = check
        self.segment_size = segment_size
        self.max_offset = 0  # where the next record goes

    @property
    def min_offset(self) -> int:
        return self.queue.min_offset

    def load(self) -> None:
        self.queue.load()

    # ------------------------------------------------------------ append

    def reserve(self, size: int) -> int:
        """Where a record of ``size`` bytes goes: after a blank trailer and in a new segment if
        the current one is too full. Raises OSError when a segment cannot be created and
        ValueError when the record can never fit a segment."""
        if size + BLANK_MIN > self.segment_size:
            raise ValueError(f"a {size}-byte record exceeds the {self.segment_size}-byte segment")
        pos = self.max_offset
        seg = self.queue.last()
        if seg is None or pos >= seg.end:
            seg = self.queue.create(pos - pos % self.segment_size if seg is None else seg.end)
        space = seg.end - pos
        if size + BLANK_MIN > space:
            seg.write(pos - seg.start, _HEAD.pack(space, BLANK_MAGIC))
            self.max_offset = seg.end
            seg = self.queue.create(seg.end)
            pos = seg.start
        return pos

    def write(self, phys: int, data: bytes | bytearray) -> None:
        """Copy a record in, stamping its PHYSICALOFFSET with ``phys``, its 8-byte head (size,
        magic) last: a write cut short leaves a zero head, which recovery reads as the end."""
        seg = self.queue.find(phys)
        assert seg is not None and phys + len(data) <= seg.end, "reserve() first"
        at, size = phys - seg.start, len(data)
        if at + size > seg.faulted:
            seg.prefault(at)
        mm = seg.mm
        with memoryview(data) as view:
            mm[at + 8 : at + size] = view[8:]
        _Q.pack_into(mm, at + PHYSICAL_OFFSET_POS, phys)
        mm[at : at + 8] = data[:8]
        self.max_offset = phys + size

    def write_message(self, phys: int, msg: MessageExt, plan: RecordPlan) -> None:
        """Write ``msg``'s record (``msg.commit_log_offset`` is ``phys``) straight into the
        segment ``reserve`` gave it: the same bytes ``write(phys, encode_record(msg))``
        would, head last, without the intermediate copy."""
        seg = self.queue.find(phys)
        size = plan.size
        assert seg is not None and phys + size <= seg.end, "reserve() first"
        at = phys - seg.start
        if at + size > seg.faulted:
            seg.prefault(at)
        write_record(seg.mm, at, msg, plan)
        self.max_offset = phys + size

    # ------------------------------------------------------------ read

    def read(self, phys: int, size: int) -> bytes | None:
        """``size`` bytes at ``phys``, or None when they are not (or no longer) stored."""
        if phys < self.min_offset or phys + size > self.max_offset or size <= 0:
            return None
        seg = self.queue.find(phys)
        if seg is None or phys + size > seg.end:
            return None
        return seg.read(phys - seg.start, size)

    def read_record(self, phys: int, *, verify: bool = False) -> bytes | None:
        """The whole record at ``phys`` if one starts there (checked: size, magic, offset;
        with ``verify`` also its structure and body CRC, for lookups that bypass the
        ConsumeQueue)."""
        seg = self.queue.find(phys)  # None before the first segment or past the last
        end = self.max_offset
        if seg is None or phys + BLANK_MIN > end or phys + BLANK_MIN > seg.end:
            return None
        at = phys - seg.start  # one lookup, one copy: this is the hot path of every pull
        size, magic = _HEAD.unpack_from(seg.mm, at)
        if magic not in (MAGIC_V1, MAGIC_V2) or size < MIN_RECORD:
            return None
        if phys + size > end or phys + size > seg.end:
            return None
        record = seg.mm[at : at + size]
        if _Q.unpack_from(record, PHYSICAL_OFFSET_POS)[0] != phys:
            return None
        if verify:
            with memoryview(record) as view:
                if not _valid(view, phys):
                    return None
        return record

    def read_raw(self, phys: int, max_bytes: int) -> bytes:
        """The bytes from ``phys``: at most ``max_bytes``, never past the end of the log nor
        of the segment (CommitLog.getData, cut at haTransferBatchSize by HAConnection); they
        may end inside a record, and a segment's blank trailer comes whole with its zeros."""
        end = self.max_offset
        if not self.min_offset <= phys <= end:
            raise ValueError(f"offset {phys} is outside the log [{self.min_offset}, {end}]")
        if phys == end or max_bytes <= 0:
            return b""
        seg = self.queue.find(phys)
        if seg is None:
            raise ValueError(f"no segment holds offset {phys}")
        stop = min(end, seg.end, phys + max_bytes)
        return seg.read(phys - seg.start, stop - phys)

    def append_raw(self, phys: int, data: bytes | bytearray | memoryview) -> None:
        """Copy bytes a master sent in at ``phys``, byte for byte (CommitLog.appendData).
        ``phys`` is the end of the log, or any segment start while the log holds no segment
        (HAClient takes the master's offset while its own is 0). The bytes stay in one
        segment (MappedFile.appendMessage refuses what does not fit). Raises ValueError, or
        OSError when the segment cannot be created, having written nothing."""
        seg, size = self.queue.last(), self.segment_size
        if seg is not None and phys != self.max_offset:
            raise ValueError(f"offset {phys} is not the end of the log ({self.max_offset})")
        new = seg is None or phys >= seg.end
        if new and phys % size:
            raise ValueError(f"offset {phys} is not a segment start; its segment is missing")
        n = len(data)
        if phys % size + n > size:
            raise ValueError(f"{n} bytes at {phys} cross the end of a {size}-byte segment")
        if n == 0:
            return
        if seg is None or new:
            seg = self.queue.create(phys)
        at = phys - seg.start
        if at + n > seg.faulted:
            seg.prefault(at)
        seg.mm[at : at + n] = data
        self.max_offset = phys + n

    def cut(self, phys: int) -> None:
        """End the log at ``phys`` (a slave ahead of its master): the bytes from there to the
        end are zeroed and later segments deleted (MappedFileQueue.truncateDirtyFiles).
        Below the first segment the log is emptied and starts over at 0."""
        seg = self.queue.find(phys)
        if seg is not None:
            seg.zero(phys - seg.start, min(self.max_offset, seg.end) - seg.start)
            self.queue.truncate_after(seg.end)
            self.max_offset = phys
        elif phys < self.max_offset:  # before the first segment: none is kept
            self.queue.truncate_after(phys)
            self.max_offset = phys if self.queue.segments else 0
        if not self.queue.segments and self.queue.directory.is_dir():
            fsync_dir(self.queue.directory)

    def segments_between(self, start: int, end: int) -> list[Segment]:
        return [s for s in self.queue.segments if s.end > start and s.start < end]

    # ------------------------------------------------------------ recovery checks

    def check(self, seg: Segment, pos: int, end: int | None = None) -> Found:
        """Classify what lies at segment position ``pos`` (verifies the body CRC). ``end``:
        the log offset where the bytes received so far end (a slave's raw appends); what
        would reach past it is INCOMPLETE. None: the segment holds all there is (recovery)."""
        mm, left = seg.mm, seg.size - pos
        avail = left if end is None else min(left, end - seg.start - pos)
        if avail < BLANK_MIN:
            if avail < left:
                return Found(Scan.INCOMPLETE)
            return Found(Scan.END if not any(mm[pos:]) else Scan.INVALID)
        size, magic = _HEAD.unpack_from(mm, pos)
        if magic == BLANK_MAGIC:
            if size != left:
                return Found(Scan.INVALID)
            return Found(Scan.END_OF_SEGMENT if size <= avail else Scan.INCOMPLETE)
        if size == 0 and magic == 0:
            return Found(Scan.END if not any(mm[pos : pos + 64]) else Scan.INVALID)
        if magic not in (MAGIC_V1, MAGIC_V2) or not MIN_RECORD <= size <= left - BLANK_MIN:
            return Found(Scan.INVALID)
        if size > avail:
            return Found(Scan.INCOMPLETE)
        record = memoryview(mm)[pos : pos + size]
        try:
            valid = _valid(record, seg.start + pos)
        finally:
            record.release()
        return Found(Scan.RECORD, size) if valid else Found(Scan.INVALID)

    def close(self) -> None:
        self.queue.close()


def _valid(record: memoryview, phys: int) -> bool:
    """Structure and body CRC of one record (protocol.md 7.1)."""
    size = len(record)
    if _Q.unpack_from(record, PHYSICAL_OFFSET_POS)[0] != phys:
        return False
    (sys_flag,) = _I.unpack_from(record, SYSFLAG_POS)
    at = 48 + (20 if sys_flag & SysFlag.BORNHOST_V6 else 8) + 8
    at += (20 if sys_flag & SysFlag.STOREHOST_V6 else 8) + 12
    (body_len,) = _I.unpack_from(record, at)
    body_at = at + 4
    if body_len < 0 or body_at + body_len + 3 > size:
        return False
    (crc,) = _I.unpack_from(record, 8)
    if zlib.crc32(record[body_at : body_at + body_len]) & 0x7FFFFFFF != crc:
        return False
    at = body_at + body_len
    magic = _HEAD.unpack_from(record, 0)[1]
    if magic == MAGIC_V1:
        topic_len, at = record[at], at + 1
    else:
        (topic_len,), at = _H.unpack_from(record, at), at + 2
    # a torn write leaves zeros: a topic is never empty nor holds NUL, and encoded
    # properties always end with their separator (protocol.md 7.3)
    if topic_len <= 0 or at + topic_len + 2 > size or 0 in record[at : at + topic_len]:
        return False
    at += topic_len
    (props_len,) = _H.unpack_from(record, at)
    if props_len and record[size - 1] != _PROPERTY_SEPARATOR:
        return False
    return bool(at + 2 + props_len == size)
