"""CommitLog: every message of every topic, appended to fixed-size segments.

Records use the stored-message layout byte for byte (protocol.md 7.1). A record that does not
fit the rest of a segment (with 8 bytes to spare) leaves an end-of-file blank record --
``int32 remaining | int32 BLANK_MAGIC`` -- and starts the next segment.

A segment file has its full size from the start (``mappedFileSizeCommitLog``: names,
offsets and what tools expect are unchanged), but its blocks are allocated ``step`` bytes at a
time ahead of the writer (``commitLogAllocateStepMb``), not all at once: no byte is written
where the file has no blocks (segment.py), so a full disk shows up as the OSError of the
allocation and the put is refused, having written nothing. ``room`` bounds both: the
high-water mark and the blocks of the last segment.
"""

from __future__ import annotations

import struct
import zlib
from enum import Enum
from mmap import PAGESIZE, mmap
from pathlib import Path
from typing import Final, NamedTuple

from mypy_extensions import i64

from aiorocketmq.broker.store.highwater import HighWater
from aiorocketmq.broker.store.props import RecordFilter, props_span, stored_properties
from aiorocketmq.broker.store.segment import Segment, SegmentQueue, SpaceCheck
from aiorocketmq.remoting.files import fsync_dir
from aiorocketmq.remoting.protocol.bigendian import int32_at, int64_at, uint32_at
from aiorocketmq.remoting.protocol.message import (
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
_RECORD_HEAD: Final = struct.Struct(">iI20xq")  # total size, magic, PHYSICALOFFSET (at 28)
_Q: Final = struct.Struct(">q")
_I: Final = struct.Struct(">i")
_H: Final = struct.Struct(">h")
BLANK_MIN: Final = 8
_PROPERTY_SEPARATOR: Final = 2
_NO_LIMIT: Final = 1 << 62
MIN_RECORD: Final = 91  # the smallest V1 record: IPv4 hosts, empty body, topic and properties
WINDOW: Final = 64 << 10  # Gather.accepts: bytes of the log copied at a time
DEFAULT_STEP: Final = 64 << 20  # commitLogAllocateStepMb: blocks allocated at a time


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
    def __init__(
        self,
        directory: Path,
        segment_size: int,
        check: SpaceCheck | None = None,
        *,
        step: int = DEFAULT_STEP,
    ) -> None:
        # a new segment gets its first ``step`` bytes of blocks; more as the writer nears them
        self.step = min(max(step, 1), segment_size)
        self.queue = SegmentQueue(directory, segment_size, backed=self.step)
        if check is not None:
            self.queue.check = check
        self.segment_size = segment_size
        self.max_offset = 0  # where the next record goes
        # no write ends past the durable high-water mark (highwater.py) nor past the blocks
        # of the last segment; up to ``room`` a write need not ask either (make_room). None:
        # no mark is kept (tools reading a store)
        self.highwater: HighWater | None = None
        self.room = 0

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
        end = pos + size if size + BLANK_MIN <= space else seg.end + size
        if end > self.room:
            self.make_room(end)
        if size + BLANK_MIN > space:
            seg.write(pos - seg.start, _HEAD.pack(space, BLANK_MAGIC))
            self.max_offset = seg.end
            seg = self._create(seg.end, size)
            pos = seg.start
        return pos

    def make_room(self, end: int) -> None:
        """Before bytes up to ``end`` are written (in the last segment, or from the start of
        the next one): raise the high-water mark past ``end`` and allocate the last
        segment's blocks up to ``end`` (a step beyond), or up to its end when ``end`` is in
        the next one (a blank trailer and its zeros: less than a record). Raises OSError
        (nothing may be written then) when either cannot be."""
        mark = self.highwater
        room = _NO_LIMIT if mark is None else mark.allow(end)
        seg = self.queue.last()
        if seg is not None:
            upto = min(end, seg.end) - seg.start
            if upto > seg.backed:
                seg.ensure_backed(upto, self.step, self.queue.check)
            # a write into a segment created after this asks again
            room = min(room, seg.start + seg.backed if end <= seg.end else seg.end)
        self.room = room

    def _create(self, start: int, need: int) -> Segment:
        """A new last segment with blocks for at least its first ``need`` bytes."""
        seg = self.queue.create(start)
        if need > seg.backed:
            seg.ensure_backed(need, self.step, self.queue.check)
        return seg

    def settle(self) -> None:
        """After recovery: only the bytes of the last segment up to the end of the log are
        known to have blocks (a file keeps its full size, its blocks need not), so that is
        what it counts as allocated; allocating again what already is takes no space."""
        seg = self.queue.find(self.max_offset) or self.queue.last()
        if seg is not None:
            written = max(0, self.max_offset - seg.start)
            seg.backed = min(seg.backed, written - written % PAGESIZE)  # whole pages: warm.py
        self.room = 0

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

    def gather(self) -> Gather:
        """A collector of records for one read (see Gather)."""
        return Gather(self)

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
        if phys + n > self.room:
            self.make_room(phys + n)
        if seg is None or new:
            seg = self._create(phys, n)
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
            self.settle()  # writes go on in this segment: allocated again from ``phys``
        elif phys < self.max_offset:  # before the first segment: none is kept
            self.queue.truncate_after(phys)
            self.max_offset = phys if self.queue.segments else 0
            self.room = 0
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


class Gather:
    """The records of one read, copied out of the mappings once by ``take``. Each is checked
    on its head as ``read_record`` checks it (size, magic, offset: corruption is never
    served); adjacent ones are kept as one run. Nothing of the mappings is held but offsets:
    no view outlives ``take``."""

    __slots__ = ("_copied", "_copies", "_end", "_hi", "_lo", "_mm", "_queue", "_run_seg",
                 "_run_start", "_run_stop", "_runs", "_seg", "_win", "_win_hi",
                 "_win_lo")  # fmt: skip

    def __init__(self, log: CommitLog) -> None:
        self._queue, self._end = log.queue, log.max_offset
        self._seg: Segment | None = None
        self._mm: mmap | bytes = b""
        self._lo = self._hi = 0  # the log offsets the cached segment serves: [start, end)
        self._runs: list[tuple[Segment, int, int]] = []  # segment, [at, stop) in it
        self._run_seg: Segment | None = None
        self._run_start = self._run_stop = -1  # the run being extended, log offsets
        self._win = b""  # a copy of the log at [_win_lo, _win_hi): what ``accepts`` reads
        self._win_lo: i64 = 0
        self._win_hi: i64 = 0
        self._copies: list[bytes] = []  # the runs add_all copied out: take's, if all are
        self._copied = 0  # how many runs those are

    def add_all(self, physs: list[int], sizes: list[int]) -> bool:
        """Add the records at ``physs`` (``sizes`` bytes each), all checked at once: True if
        every one is there, in one segment; False, having added none, if not. Each run of
        adjacent records is copied out (``take``'s copy) and its heads are read from the
        copy by compiled byte reads: a struct read of each in the mapping cost ~0.3 us a
        record."""
        seg = self._queue.find(physs[0])
        if seg is None:
            return False
        lo, hi = seg.start, min(seg.end, self._end)
        firsts: list[int] = []  # the index of each run's first record
        stop = -1
        for i in range(len(physs)):
            phys, size = physs[i], sizes[i]
            if size < MIN_RECORD or phys < lo or phys + size > hi:
                return False
            if phys != stop:  # a run ends where the next record is not adjacent
                firsts.append(i)
            stop = phys + size
        firsts.append(len(physs))
        runs = [
            (seg, physs[firsts[k]] - lo, physs[firsts[k + 1] - 1] + sizes[firsts[k + 1] - 1] - lo)
            for k in range(len(firsts) - 1)
        ]
        whole = memoryview(seg.mm)
        parts = [whole[start:end] for _, start, end in runs]
        try:  # the runs joined in one copy, then the views released
            copy = b"".join(parts)
        finally:
            for view in parts:
                view.release()
            whole.release()
        at = 0
        for k in range(len(runs)):
            if not _heads_in(copy, at, physs[firsts[k]], sizes, firsts[k], firsts[k + 1]):
                return False  # (or a MAGIC_V2 record: add() checks them one by one)
            at += runs[k][2] - runs[k][1]
        self._close_run()
        self._runs.extend(runs)
        self._copies.append(copy)
        self._copied += len(runs)
        return True

    def add(self, phys: int, size: int) -> bool:
        """Add the record at ``phys`` if one of ``size`` bytes starts there; False if not
        (its data is gone or was never whole)."""
        if not self._lo <= phys < self._hi:
            seg = self._queue.find(phys)  # None before the first segment or past the last
            if seg is None:
                return False
            self._seg, self._mm, self._lo = seg, seg.mm, seg.start
            self._hi = min(seg.end, self._end)
        if size < MIN_RECORD or phys + size > self._hi:
            return False
        stored, magic, offset = _RECORD_HEAD.unpack_from(self._mm, phys - self._lo)
        if stored != size or offset != phys or magic not in (MAGIC_V1, MAGIC_V2):
            return False
        if phys == self._run_stop and self._seg is self._run_seg:  # a run stays in a mapping
            self._run_stop += size
            return True
        self._close_run()
        self._run_seg, self._run_start, self._run_stop = self._seg, phys, phys + size
        return True

    def properties(self, phys: int, size: int) -> bytes | None:
        """The properties text of the record at ``phys`` (read in place: its body is not
        copied), checked as ``add`` checks it; None if it is not there."""
        if not self._lo <= phys < self._hi:
            seg = self._queue.find(phys)
            if seg is None:
                return None
            self._seg, self._mm, self._lo = seg, seg.mm, seg.start
            self._hi = min(seg.end, self._end)
        if size < MIN_RECORD or phys + size > self._hi:
            return None
        return stored_properties(self._mm, phys - self._lo, phys, size)

    def accepts(self, phys: i64, size: i64, flt: RecordFilter) -> i64:
        """Whether ``flt`` accepts the properties of the record at ``phys``: 1 or 0; -1 if
        the record is not there (as ``properties`` says None). The log is read a window at a
        time: the records of one queue mostly lie in runs, one copy serves a run."""
        if size < MIN_RECORD:
            return -1
        if not (self._win_lo <= phys and phys + size <= self._win_hi):
            if not self._lo <= phys < self._hi:
                seg = self._queue.find(phys)
                if seg is None:
                    return -1
                self._seg, self._mm, self._lo = seg, seg.mm, seg.start
                self._hi = min(seg.end, self._end)
            if phys + size > self._hi:
                return -1
            at = phys - self._lo
            stop = min(self._hi, phys + max(size, WINDOW)) - self._lo
            self._win = self._mm[at:stop]
            self._win_lo, self._win_hi = phys, phys + len(self._win)
        start, end = props_span(self._win, phys - self._win_lo, phys, size)
        if start < 0:
            return -1
        return 1 if flt.accepts(self._win, start, end) else 0

    def _close_run(self) -> None:
        seg = self._run_seg
        if seg is not None:
            self._runs.append((seg, self._run_start - seg.start, self._run_stop - seg.start))
            self._run_seg, self._run_stop = None, -1

    def take(self) -> bytes:
        """The records added, back to back, copied out of the mappings once."""
        self._close_run()
        runs, copies = self._runs, self._copies
        if copies and self._copied == len(runs):  # every run added by add_all: copied
            return copies[0] if len(copies) == 1 else b"".join(copies)
        if len(runs) == 1:
            seg, at, stop = runs[0]
            return seg.mm[at:stop]
        wholes: list[memoryview] = []
        parts: list[memoryview] = []
        last: Segment | None = None
        try:  # slices of the mappings, joined in one copy, then released
            for seg, at, stop in runs:
                if seg is not last:
                    wholes.append(memoryview(seg.mm))
                    last = seg
                parts.append(wholes[-1][at:stop])
            return b"".join(parts)
        finally:
            for view in parts + wholes:
                view.release()


def _heads_in(copy: bytes, at: int, first: int, sizes: list[int], i: int, j: int) -> bool:
    """Whether ``copy`` holds from ``at`` records of ``sizes[i:j]`` back to back, from log
    offset ``first``, each with its size, MAGIC_V1 and its own log offset in its head, as
    ``add`` checks one."""
    base = at
    for k in range(i, j):
        size = sizes[k]
        if int32_at(copy, at) != size or uint32_at(copy, at + 4) != MAGIC_V1:
            return False
        if int64_at(copy, at + 28) != first + at - base:
            return False
        at += size
    return True


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
