"""The replay stage: walk CommitLog bytes record by record and hand each valid record to a
dispatcher, which builds ConsumeQueues and index from it (DefaultMessageStore's
ReputMessageService, and CommitLog.recoverAbnormally's scan).

Recovery replays what a crashed or stopped store left on disk (``end=None``: the segments
hold all there is). A slave replays the bytes its master sent as they arrive (``end``: where
they end so far): a record the bytes end inside is INCOMPLETE and waits for the next append.
Both walk the same way: records are verified (magic, size, stored offset, body CRC); invalid
bytes followed by a valid record are corruption, logged and skipped as a hole, never served.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

import structlog

from aiorocketmq.broker.store.commitlog import CommitLog, Scan
from aiorocketmq.broker.store.segment import Segment
from aiorocketmq.remoting.protocol.message import MAGIC_V1

log = structlog.get_logger(__name__)

_MAGIC_BYTES: Final = MAGIC_V1.to_bytes(4, "big")

OnRecord = Callable[[int, int], None]  # (physical offset, size) of a valid record


@dataclass
class ScanReport:
    start: int
    end: int = 0  # where the walk stopped: the next record starts here
    records: int = 0
    holes: list[tuple[int, int]] = field(default_factory=list)  # [from, to) of corrupt bytes
    torn: int = 0  # bytes past the end of the log that were not zero, and were zeroed
    tail: int = 0  # bytes past the end of the log checked to be zero (recovery)


def replay(
    commitlog: CommitLog,
    report: ScanReport,
    on_record: OnRecord,
    *,
    end: int | None = None,
    limit: int | None = None,
) -> Scan | None:
    """Walk from ``report.end`` (set it to the start): ``on_record(phys, size)`` for each
    valid record, holes skipped. Returns why it stopped: None when it reached ``end``; END
    (zeros, or no segment); INCOMPLETE (the bytes end inside a record); INVALID (bytes that
    are not a record and nothing valid after them -- a torn tail, for recovery). ``limit``:
    nothing was written at or past it (the high-water mark), so no valid record is looked
    for there after invalid bytes."""
    pos = report.end
    while end is None or pos < end:
        seg = commitlog.queue.find(pos)
        if seg is None:
            report.end = pos
            return Scan.END
        found = commitlog.check(seg, pos - seg.start, end)
        if found.kind is Scan.RECORD:
            on_record(pos, found.size)
            report.records += 1
            pos += found.size
        elif found.kind is Scan.END_OF_SEGMENT:
            pos = seg.end
        elif found.kind is Scan.INVALID:
            resume = _resync(commitlog, seg, pos, end if limit is None else limit)
            if resume is None:
                report.end = pos
                return Scan.INVALID
            log.error("commitlog_corrupt", start=pos, end=resume, bytes=resume - pos,
                      action="skipped, never served")  # fmt: skip
            report.holes.append((pos, resume))
            pos = resume
        else:  # END or INCOMPLETE
            report.end = pos
            return found.kind
    report.end = pos
    return None


def _resync(commitlog: CommitLog, seg: Segment, pos: int, end: int | None) -> int | None:
    """The offset of the next valid record after the invalid bytes at ``pos`` (and before
    ``end``: the bytes received so far, or the high-water mark), or None when nothing valid
    follows (a torn tail; or not yet received)."""
    at = pos - seg.start
    limit = seg.size if end is None else min(seg.size, end - seg.start)
    while (hit := seg.mm.find(_MAGIC_BYTES, at + 5, limit)) >= 0:
        candidate = hit - 4
        if commitlog.check(seg, candidate, end).kind is Scan.RECORD:
            return seg.start + candidate
        at = candidate
    for later in _segments_after(commitlog, seg, end):
        first = commitlog.check(later, 0, end).kind
        if first in (Scan.RECORD, Scan.END_OF_SEGMENT):
            return later.start  # the rest of this segment is garbage; the log goes on
        if first is Scan.INVALID:
            stop = later.size if end is None else min(later.size, end - later.start)
            hit = later.mm.find(_MAGIC_BYTES, 0, stop)
            if hit >= 4 and commitlog.check(later, hit - 4, end).kind is Scan.RECORD:
                return later.start + hit - 4
    return None


def _segments_after(commitlog: CommitLog, seg: Segment, end: int | None) -> Iterator[Segment]:
    segments = commitlog.queue.segments
    for later in segments[segments.index(seg) + 1 :]:
        if end is not None and later.start >= end:
            return
        yield later
