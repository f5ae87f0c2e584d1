"""ConsumeQueue: one per topic and queue; unit ``k`` (20 bytes at ``20*k``) locates message
``k``: commitlog offset (8), size (4), tags code (8) (protocol.md 8.1).

A unit of all zeros was never written; a blank unit (offset 0, size 0x7fffffff) fills a gap
left by a record lost to corruption, and is skipped by readers (Java's fillPreBlank).

Files are allocated a chunk at a time as units are written (segment.py: never write where no
blocks are), hold no descriptor, and share the store's MapCache. ``reserve`` makes the units
of a put writable before the CommitLog is touched, so a full disk refuses the put whole.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Final, NamedTuple

from aiorocketmq.broker.store.segment import MapCache, Segment, SegmentQueue, SpaceCheck
from aiorocketmq.remoting.protocol.message import MAX_TOPIC_BYTES

UNIT: Final = 20
CHUNK: Final = 3276 * UNIT  # about 64 KiB allocated at a time
_UNIT = struct.Struct(">qiq")
BLANK_SIZE: Final = 0x7FFFFFFF
_ZEROS: Final = bytes(UNIT)
_PIECE: Final = 128  # units copied out of a mapping at a time by raw_units


@functools.lru_cache(maxsize=4096)
def storable_topic(topic: str) -> bool:
    """A topic the store can keep: it fits the record's int8 length, recovery accepts it (not
    empty, no NUL), and it names one ConsumeQueue directory (the broker checks names too)."""
    return (
        0 < len(topic.encode()) <= MAX_TOPIC_BYTES
        and "\x00" not in topic
        and "/" not in topic
        and topic not in (".", "..")
    )


class Unit(NamedTuple):
    offset: int  # queue offset
    phys: int
    size: int
    tags_code: int

    @property
    def blank(self) -> bool:
        """A filler (or a never-written hole): no message to serve."""
        return self.size == BLANK_SIZE or self.size <= 0


class ConsumeQueue:
    def __init__(
        self,
        directory: Path,
        topic: str,
        queue_id: int,
        segment_size: int,
        *,
        cache: MapCache | None = None,
        check: SpaceCheck | None = None,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        size = segment_size - segment_size % UNIT
        self.queue = SegmentQueue(directory, size, backed=CHUNK, cache=cache)
        if check is not None:
            self.queue.check = check
        self.max_offset = 0  # units written: the next message's queue offset
        self.min_offset = 0  # first unit still served
        self.flushed = 0  # units made durable

    @property
    def units_per_segment(self) -> int:
        return self.queue.size // UNIT

    def load(self) -> None:
        self.queue.load()
        last = self.queue.last()
        if last is None:
            return
        written = _written(last)
        last.backed = min(last.backed, written)  # past its units a file may be sparse
        self.max_offset = (last.start + written) // UNIT
        self.min_offset = self.queue.min_offset // UNIT
        self.flushed = self.max_offset

    def put(self, offset: int, phys: int, size: int, tags_code: int) -> None:
        """Write the unit of queue offset ``offset``; a gap before it is filled with blanks.
        Raises OSError when a segment cannot be created."""
        if offset < self.max_offset:
            return  # already dispatched (a recovery replaying what survived)
        first = offset > self.max_offset and not self.queue.segments
        if first:  # a slave's first transfer starts mid-history: so does its queue
            self.max_offset = offset - offset % self.units_per_segment
        while self.max_offset < offset:  # fillPreBlank: within that file only
            self._write(self.max_offset, 0, BLANK_SIZE, 0)
        self._write(offset, phys, size, tags_code)
        if first:
            self.min_offset = offset  # ConsumeQueue.putMessagePositionInfo: setMinLogicOffset

    def reserve(self, last: int) -> None:
        """Make every unit up to queue offset ``last`` writable -- segments created, blocks
        allocated -- or raise OSError having written nothing."""
        pos, end = self.max_offset * UNIT, (last + 1) * UNIT
        segs = self.queue.segments
        if segs and segs[-1].start <= pos and end <= segs[-1].start + segs[-1].backed:
            return  # the usual case: room in the last file already
        while pos < end:
            seg = self._segment(pos)
            upto = min(end, seg.end)
            seg.ensure_backed(upto - seg.start, CHUNK, self.queue.check)
            pos = upto

    def _segment(self, pos: int) -> Segment:
        seg = self.queue.find(pos)
        if seg is None:
            first = not self.queue.segments
            seg = self.queue.create(pos - pos % self.queue.size)
            if first:
                self.min_offset = seg.start // UNIT
        return seg

    def _write(self, offset: int, phys: int, size: int, tags_code: int) -> None:
        pos = offset * UNIT
        segs = self.queue.segments
        seg = segs[-1] if segs and 0 <= pos - segs[-1].start < segs[-1].size else None
        if seg is None:
            seg = self.queue.find(pos) or self._segment(pos)
        at = pos - seg.start
        if at + UNIT > seg.backed:
            seg.ensure_backed(at + UNIT, CHUNK, self.queue.check)
        _UNIT.pack_into(seg.mm, at, phys, size, tags_code)
        self.max_offset = offset + 1

    def unit(self, offset: int) -> Unit | None:
        if not self.min_offset <= offset < self.max_offset:
            return None
        seg = self.queue.find(offset * UNIT)
        if seg is None:
            return None
        return Unit(offset, *_UNIT.unpack_from(seg.mm, offset * UNIT - seg.start))

    def units(self, offset: int, limit: int) -> Iterator[Unit]:
        """Up to ``limit`` units from ``offset``, stopping at a missing segment."""
        for k, (phys, size, tags_code) in enumerate(self.raw_units(offset, limit), offset):
            yield Unit(k, phys, size, tags_code)

    def raw_units(self, offset: int, limit: int) -> Iterator[tuple[int, int, int]]:
        """``(phys, size, tags_code)`` of up to ``limit`` units from ``offset``, stopping at a
        missing segment: the reader's hot path, unpacked in C a piece of a segment at a time
        (chained in C too: no Python frame per unit)."""
        return chain.from_iterable(self._unit_pieces(offset, limit))

    def _unit_pieces(self, offset: int, limit: int) -> Iterator[Iterator[tuple[int, int, int]]]:
        end = min(self.max_offset, offset + limit)
        while offset < end:
            seg = self.queue.find(offset * UNIT)
            if seg is None:
                return
            stop = min(end, seg.end // UNIT, offset + _PIECE)  # a get mostly ends in one
            yield _UNIT.iter_unpack(seg.mm[offset * UNIT - seg.start : stop * UNIT - seg.start])
            offset = stop

    def unit_bytes(self, offset: int, n: int) -> bytes | None:
        """The ``n`` units from ``offset`` as stored (UNIT bytes each: commitlog offset,
        size, tag code, big-endian), copied in one slice; None unless they are all written
        and in one segment."""
        pos = offset * UNIT
        seg = self.queue.find(pos)
        if seg is None or n < 1 or offset + n > self.max_offset or pos + n * UNIT > seg.end:
            return None
        return seg.mm[pos - seg.start : pos - seg.start + n * UNIT]

    def segment_missing(self, offset: int) -> bool:
        return self.queue.find(offset * UNIT) is None

    def next_segment_offset(self, offset: int) -> int:
        """The first queue offset of the segment after the one holding ``offset``."""
        per = self.units_per_segment
        return offset - offset % per + per

    def truncate_from_phys(self, phys: int) -> None:
        """Forget units pointing at ``phys`` or later (a recovery re-dispatches them)."""
        low, high = self.min_offset, self.max_offset
        while low < high:  # real units' commitlog offsets rise with the queue offset
            mid = (low + high) // 2
            # a blank (a corruption hole's filler) says nothing: judge by the next real unit
            unit = next((u for u in self.units(mid, high - mid) if not u.blank), None)
            if unit is not None and unit.phys < phys:
                low = unit.offset + 1
            else:
                high = mid
        while low > self.min_offset and (u := self.unit(low - 1)) is not None and u.blank:
            low -= 1  # blanks before the cut were fillers for what is now re-dispatched
        self._truncate(low)

    def _truncate(self, offset: int) -> None:
        pos = offset * UNIT
        self.queue.truncate_after(pos - pos % self.queue.size + self.queue.size)
        seg = self.queue.find(pos)
        if seg is not None:
            seg.zero(pos - seg.start)
        elif self.queue.segments and pos <= self.queue.segments[0].start:
            self.queue.truncate_after(0)
        self.max_offset = offset
        self.min_offset = min(self.min_offset, offset)
        self.flushed = min(self.flushed, offset)

    def correct_min(self, commitlog_min: int) -> None:
        """Skip units whose message is gone from the CommitLog (retention deleted it)."""
        while self.min_offset < self.max_offset:
            unit = self.unit(self.min_offset)
            if unit is None or (not unit.blank and unit.phys >= commitlog_min):
                return
            self.min_offset += 1

    def delete_expired(self, commitlog_min: int) -> int:
        """Delete whole segments whose every message is gone; returns how many."""
        deleted = 0
        while len(self.queue.segments) > 1:
            seg = self.queue.segments[0]
            last = Unit(0, *_UNIT.unpack_from(seg.mm, seg.size - UNIT))
            if last.blank or last.phys >= commitlog_min:
                break
            self.queue.delete_first()
            deleted += 1
        self.min_offset = max(self.min_offset, self.queue.min_offset // UNIT)
        self.correct_min(commitlog_min)
        return deleted

    @property
    def dirty(self) -> bool:
        return self.max_offset > self.flushed

    def dirty_segments(self) -> list[Segment]:
        """Segments holding units written since the last flush (none for an idle queue)."""
        if self.max_offset <= self.flushed:
            return []
        start, end = self.flushed * UNIT, self.max_offset * UNIT
        return [s for s in self.queue.segments if s.end > start and s.start < end]

    def close(self) -> None:
        self.queue.close()


def _written(seg: Segment) -> int:
    """Bytes of ``seg`` holding units: up to the first aligned unit of zeros."""
    mm, pos = seg.mm, 0
    while True:
        found = mm.find(_ZEROS, pos)
        if found < 0:
            return seg.size
        aligned = found + (-found % UNIT)
        if aligned + UNIT <= seg.size and mm[aligned : aligned + UNIT] == _ZEROS:
            return aligned
        if aligned >= seg.size:
            return seg.size
        pos = found + 1
