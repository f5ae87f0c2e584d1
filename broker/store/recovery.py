"""Recovery: bring the CommitLog, ConsumeQueues and index back to one consistent state.

After a clean shutdown the checkpoint says everything is durable and the scan is one check at
the end of the log. After a crash (the abort file is still there) the scan starts at the
segment holding the checkpoint's safe point: every record is verified (magic, size, stored
offset, body CRC). A torn tail -- invalid bytes with nothing valid after them -- is zeroed and
the log ends there. Invalid bytes *followed* by valid records are corruption: logged as an
error, skipped as a hole, never served. ConsumeQueue units and index entries from the scan
start on are rebuilt from the records found (protocol.md 8, design.md 10).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

import structlog

from broker.store.commitlog import CommitLog, Scan
from broker.store.segment import Segment
from remoting.protocol.message import MAGIC_V1

log = structlog.get_logger(__name__)

_MAGIC_BYTES: Final = MAGIC_V1.to_bytes(4, "big")


@dataclass
class ScanReport:
    start: int
    end: int = 0
    records: int = 0
    holes: list[tuple[int, int]] = field(default_factory=list)  # [from, to) of corrupt bytes
    torn: int = 0  # bytes of a torn tail that were zeroed


def scan(
    commitlog: CommitLog,
    start: int,
    on_record: Callable[[int, int], None],
    *,
    check_tail: bool = True,
) -> ScanReport:
    """Verify the log from ``start``; ``on_record(phys, size)`` for each valid record; cut
    the torn tail. After a clean stop nothing was written past the end, so
    ``check_tail=False`` leaves the rest of the last segment unread (it is zeros)."""
    report = ScanReport(start)
    pos = start
    while (seg := commitlog.queue.find(pos)) is not None:
        found = commitlog.check(seg, pos - seg.start)
        if found.kind is Scan.RECORD:
            on_record(pos, found.size)
            report.records += 1
            pos += found.size
        elif found.kind is Scan.END_OF_SEGMENT:
            pos = seg.end
        elif found.kind is Scan.END:
            break
        else:
            resume = _resync(commitlog, seg, pos)
            if resume is None:
                report.torn = seg.end - pos
                break
            log.error(
                "commitlog_corrupt",
                start=pos,
                end=resume,
                bytes=resume - pos,
                action="skipped, never served",
            )
            report.holes.append((pos, resume))
            pos = resume
    report.end = pos
    _cut(commitlog, pos, check_tail or report.torn > 0)
    return report


def _resync(commitlog: CommitLog, seg: Segment, pos: int) -> int | None:
    """The offset of the next valid record after the invalid bytes at ``pos``, or None when
    nothing valid follows (a torn tail)."""
    at = pos - seg.start
    while (hit := seg.mm.find(_MAGIC_BYTES, at + 5)) >= 0:
        candidate = hit - 4
        if commitlog.check(seg, candidate).kind is Scan.RECORD:
            return seg.start + candidate
        at = candidate
    for later in _segments_after(commitlog, seg):
        first = commitlog.check(later, 0).kind
        if first in (Scan.RECORD, Scan.END_OF_SEGMENT):
            return later.start  # the rest of this segment is garbage; the log goes on
        if first is Scan.INVALID:
            hit = later.mm.find(_MAGIC_BYTES)
            if hit >= 4 and commitlog.check(later, hit - 4).kind is Scan.RECORD:
                return later.start + hit - 4
    return None


def _segments_after(commitlog: CommitLog, seg: Segment) -> Iterator[Segment]:
    segments = commitlog.queue.segments
    yield from segments[segments.index(seg) + 1 :]


def _cut(commitlog: CommitLog, end: int, check_tail: bool) -> None:
    """End the log at ``end``: zero the rest of its segment, drop the segments after it."""
    seg = commitlog.queue.find(end)
    if seg is not None:
        if check_tail and not seg.zeroed_from(end - seg.start):
            seg.zero(end - seg.start)
            seg.fsync()
        commitlog.queue.truncate_after(seg.end)
    else:
        commitlog.queue.truncate_after(end)
    commitlog.max_offset = end
