"""Recovery: bring the CommitLog, ConsumeQueues and index back to one consistent state.

After a clean shutdown the checkpoint says everything is durable and the scan is one check at
the end of the log. After a crash (the abort file is still there) the scan starts at the
checkpoint's safe point -- a record boundary: the log before it was fsynced, and its
ConsumeQueue units and index entries were too -- and every record from there is verified
(magic, size, stored offset, body CRC). A torn tail -- invalid bytes with nothing valid
after them -- is zeroed and the log ends there. Invalid bytes *followed* by valid records
are corruption: logged as an error, skipped as a hole, never served. ConsumeQueue units and
index entries from the scan start on are rebuilt from the records found, by the replay
stage a slave's raw appends go through too (broker.store.replay; protocol.md 8, design.md 10).

Past the end of the log every byte must be zero, or a stale record left there could be
taken for a real one later (highwater.py). After a crash that is checked, and what is not
zero is zeroed and fsynced, up to the high-water mark: nothing was written past it. Without
a mark (a store an older version wrote) the rest of the segment is checked.
"""

from __future__ import annotations

import structlog

from aiorocketmq.broker.store.checkpoint import Checkpoint
from aiorocketmq.broker.store.commitlog import CommitLog, Scan
from aiorocketmq.broker.store.consumequeue import ConsumeQueue
from aiorocketmq.broker.store.replay import OnRecord, ScanReport, replay

__all__ = ["ScanReport", "recover", "scan"]

log = structlog.get_logger(__name__)


def recover(
    commitlog: CommitLog,
    queues: list[ConsumeQueue],
    cp: Checkpoint | None,
    on_record: OnRecord,
    *,
    full: bool,
    limit: int | None,
    stop: int | None = None,
) -> ScanReport:
    """Scan from the checkpoint -- ``full`` (after a crash, or with no checkpoint): from its
    safe point (the start of its segment for an older checkpoint), else from its end --
    after forgetting the ConsumeQueue units from there on; ``limit``: the high-water mark;
    ``stop``: a cut that did not finish (cutmark.py) -- no record is kept from there on."""
    low = commitlog.min_offset
    if full:
        # compat: CommitLog.recoverAbnormally -- 4.9.8 scans from the start of the newest
        # file older than the checkpoint; ours from the checkpoint's offset itself
        safe = max(cp.safe if cp else 0, low)
        exact = cp is not None and cp.exact
        start = safe if exact else max(low, safe - safe % commitlog.segment_size)
    else:
        assert cp is not None
        start = max(cp.commitlog, low)
    for cq in queues:
        cq.truncate_from_phys(start)
    commitlog.max_offset = start
    report = scan(commitlog, start, on_record, check_tail=full, limit=limit, stop=stop)
    if limit is not None and limit < report.end:  # written past it: the mark was lost
        log.warning("highwater_behind", mark=limit, end=report.end,
                    action="checked the whole tail")  # fmt: skip
    for cq in queues:
        cq.correct_min(low)
    return report


def scan(
    commitlog: CommitLog,
    start: int,
    on_record: OnRecord,
    *,
    check_tail: bool = True,
    limit: int | None = None,
    stop: int | None = None,
) -> ScanReport:
    """Verify the log from ``start`` (a record boundary); ``on_record(phys, size)`` for each
    valid record; cut the torn tail. ``limit``: the high-water mark, past which nothing was
    written (None: unknown). After a clean stop nothing was written past the end, so
    ``check_tail=False`` leaves the tail unread. ``stop``: the log ends there at the latest
    (a cut to finish: what follows is zeroed like a torn tail)."""
    report = ScanReport(start, end=start)
    found = replay(commitlog, report, on_record, end=stop, limit=limit)
    torn = found is Scan.INVALID or (stop is not None and found is not Scan.END)
    _cut(commitlog, report, check_tail or torn, limit)
    return report


def _cut(commitlog: CommitLog, report: ScanReport, check_tail: bool, limit: int | None) -> None:
    """End the log at ``report.end``: zero what is not zero from there to the mark (or the
    end of its segment), drop the segments after it."""
    end = report.end
    seg = commitlog.queue.find(end)
    if seg is not None:
        pos = end - seg.start
        stop = seg.size if limit is None or limit < end else min(seg.size, limit - seg.start)
        if check_tail:
            report.tail = stop - pos
            dirty = seg.first_nonzero(pos, stop)
            if dirty < stop:
                report.torn = stop - dirty
                seg.zero(dirty, stop)
                seg.fsync()
        commitlog.queue.truncate_after(seg.end)
    else:
        commitlog.queue.truncate_after(end)
    commitlog.max_offset = end
