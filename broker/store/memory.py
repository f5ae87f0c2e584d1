"""Resident memory: the store's mappings keep no more of their files in the process than the
working set (issue 29, item 7).

Every page of a mapping that was read or written counts in the process's RSS (``RssFile``)
until it is unmapped, though the kernel can drop it from the page cache at any time: without
this a broker's RSS grew with every byte stored, and RSS alerts and container memory limits
fired. After each flush round the cold pages -- already made durable, and older than the
newest bytes -- leave the process (warm.release: ``MADV_DONTNEED``, the page cache keeps
them); a later read maps them again, from the page cache or the disk:

- CommitLog: all but the newest ``HOT`` bytes (the pulls of the tail read them); a segment a
  read mapped pages of again (``Segment.used``) is released whole in the next round;
- ConsumeQueues: all but the newest ``QUEUE_HOT`` bytes of each queue written since the last
  round; segments unused for a sweep period are unmapped by the MapCache (``sweep``);
- index: all but the newest ``INDEX_HOT`` entries and the slots of the file being written
  (puts touch slots at random), and all of the older files (queries map what they read).

``mapped`` and ``resident`` feed ``/metrics``. Ours: RocketMQ 4.9.8 keeps its mapped files
mapped and resident until deleted (docs/compatibility.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from aiorocketmq.broker.store.commitlog import CommitLog
from aiorocketmq.broker.store.consumequeue import UNIT, ConsumeQueue
from aiorocketmq.broker.store.index import Index
from aiorocketmq.broker.store.queues import QueueTable
from aiorocketmq.broker.store.segment import Segment
from aiorocketmq.broker.store.warm import Span

HOT: Final = 64 << 20  # the newest CommitLog bytes that stay mapped
QUEUE_HOT: Final = 3276 * UNIT  # about 64 KiB of units: the newest of each queue
INDEX_HOT: Final = 52_428  # about 1 MiB of entries: the newest of the index
SWEEP_ROUNDS: Final = 30  # ConsumeQueue segments idle this many rounds are unmapped

Dirty = list[tuple[ConsumeQueue, int, list[Segment]]]


# compat: MappedFile -- 4.9.8 unmaps a file only when it is deleted (cleanup); its pages
# stay in the process until then
class Releaser:
    """What leaves memory after each flush round of a store."""

    def __init__(self, commitlog: CommitLog, table: QueueTable) -> None:
        self.commitlog = commitlog
        self.table = table
        self.rounds = 0

    def spans(self, durable: int, dirty: Dirty, index_flushed: int) -> list[Span]:
        """The cold pages after a round that made the CommitLog durable up to ``durable``,
        the ``dirty`` queues up to their marks and the last index file up to
        ``index_flushed`` entries; every ``SWEEP_ROUNDS`` rounds idle ConsumeQueue segments
        are unmapped too."""
        self.rounds += 1
        if self.rounds % SWEEP_ROUNDS == 0:
            self.table.cache.sweep()
        spans = commitlog_spans(self.commitlog, durable) + queue_spans(dirty)
        return spans + index_spans(self.table.index, index_flushed)


def commitlog_spans(commitlog: CommitLog, durable: int) -> list[Span]:
    """The cold pages of the CommitLog below ``durable`` (fsynced): those not released yet,
    and all of a segment's again if a read used it since the last round."""
    cold = min(durable, commitlog.max_offset - HOT)
    spans: list[Span] = []
    for seg in commitlog.queue.segments:
        if seg.start >= cold:
            break
        mm = seg.mapping
        if mm is None:
            continue
        stop = min(seg.size, cold - seg.start)
        start = 0 if seg.used else seg.released
        seg.used = False
        if start < stop:
            spans.append((mm, start, stop))
        seg.released = max(seg.released, stop)
    return spans


def queue_spans(dirty: Dirty) -> list[Span]:
    """The cold pages of the ConsumeQueue segments just flushed (up to each queue's mark)."""
    spans: list[Span] = []
    for _cq, mark, segs in dirty:
        hot = mark * UNIT - QUEUE_HOT
        for seg in segs:
            mm, stop = seg.mapping, min(seg.size, hot - seg.start)
            if mm is not None and stop > 0:
                spans.append((mm, 0, stop))
    return spans


def index_spans(index: Index, flushed: int) -> list[Span]:
    """The cold pages of the index: the older files whole; of the last, the entries before
    the newest (up to ``flushed``, its entry count when it was fsynced)."""
    files = index.files
    spans: list[Span] = [(f.mm, 0, len(f.mm)) for f in files[:-1] if not f.closed]
    if files and not files[-1].closed:
        last = files[-1]
        stop = last.entries_at + (min(flushed, last.count) - INDEX_HOT) * 20
        if stop > last.entries_at:
            spans.append((last.mm, last.entries_at, stop))
    return spans


def mapped(commitlog: CommitLog, queues: list[ConsumeQueue], index: Index) -> dict[str, int]:
    """Bytes of the store's files mapped now, by kind (address space, not memory)."""
    return {
        "commitlog": sum(s.size for s in commitlog.queue.segments if s.is_mapped),
        "consumequeue": sum(s.size for cq in queues for s in cq.queue.segments if s.is_mapped),
        "index": sum(len(f.mm) for f in index.files if not f.closed),
    }


def resident() -> dict[str, int]:
    """The process's resident bytes by kind (``RssFile``: file pages, mostly the store's
    mappings; ``RssAnon``: the heap), from /proc/self/status; empty where there is none."""
    out: dict[str, int] = {}
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith(("RssFile:", "RssAnon:")):
            kind = "file" if line.startswith("RssFile") else "anon"
            out[kind] = int(line.split()[1]) * 1024
    return out
