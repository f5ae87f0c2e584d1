"""Recovery: bring the CommitLog, ConsumeQueues and index back to one consistent state.

After a clean shutdown the checkpoint says everything is durable and the scan is one check at
the end of the log. After a crash (the abort file is still there) the scan starts at the
segment holding the checkpoint's safe point: every record is verified (magic, size, stored
offset, body CRC). A torn tail -- invalid bytes with nothing valid after them -- is zeroed and
the log ends there. Invalid bytes *followed* by valid records are corruption: logged as an
error, skipped as a hole, never served. ConsumeQueue units and index entries from the scan
start on are rebuilt from the records found, by the replay stage a slave's raw appends go
through too (broker.store.replay; protocol.md 8, design.md 10).
"""

from __future__ import annotations

from broker.store.commitlog import CommitLog, Scan
from broker.store.replay import OnRecord, ScanReport, replay

__all__ = ["ScanReport", "scan"]


def scan(
    commitlog: CommitLog,
    start: int,
    on_record: OnRecord,
    *,
    check_tail: bool = True,
) -> ScanReport:
    """Verify the log from ``start``; ``on_record(phys, size)`` for each valid record; cut
    the torn tail. After a clean stop nothing was written past the end, so
    ``check_tail=False`` leaves the rest of the last segment unread (it is zeros)."""
    report = ScanReport(start, end=start)
    if replay(commitlog, report, on_record) is Scan.INVALID:
        seg = commitlog.queue.find(report.end)
        assert seg is not None
        report.torn = seg.end - report.end
    _cut(commitlog, report.end, check_tail or report.torn > 0)
    return report


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
