"""Replica: the replication side of MessageStore (what HAConnection and HAService.HAClient
ask of DefaultMessageStore: getCommitLogData, appendToCommitLog, truncateDirtyLogicFiles).

A master reads its CommitLog raw (``read_raw``). A slave appends what it receives byte for
byte (``append_raw``) -- records are never re-encoded, their stored offsets stay as they
are -- and the replay stage recovery uses (broker.store.replay) dispatches each record to
its ConsumeQueue and the index once it is complete; a record the bytes end inside waits
for the next append (``dispatched_phys_offset`` stays before it). A slave ahead of its
master cuts its log back (``truncate_to``).
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable
from pathlib import Path

import structlog
from mypy_extensions import trait

from aiorocketmq.broker.store import cutmark
from aiorocketmq.broker.store.checkpoint import Checkpoint, read_checkpoint, write_checkpoint
from aiorocketmq.broker.store.commitlog import CommitLog, Scan
from aiorocketmq.broker.store.disk import Disk, DiskFull
from aiorocketmq.broker.store.dispatch import dispatch_of
from aiorocketmq.broker.store.epochs import EpochFile
from aiorocketmq.broker.store.flush import Flusher, Rounds
from aiorocketmq.broker.store.queues import QueueTable
from aiorocketmq.broker.store.replay import ScanReport, replay
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import decode_record, now_ms

log = structlog.get_logger(__name__)


@trait  # MessageStore's second base: mypyc compiles one base class and any traits
class Replica:
    """Mixed into MessageStore, which sets these."""

    commitlog: CommitLog
    table: QueueTable
    flusher: Flusher
    rounds: Rounds
    disk: Disk
    root: Path
    epochs: EpochFile
    delays: list[int]
    io_error: str | None
    _running: bool
    _pending_from: int | None  # a record the raw bytes end inside starts here
    _stalled_at: int  # where the replay last stopped at bytes that are no record (logged)
    _cuts: int  # bumped by truncate_to: a checkpoint computed across it is stale
    cut_listeners: list[Callable[[int], None]]  # told the new end after truncate_to

    @property
    def dispatched_phys_offset(self) -> int:
        """How far complete records were dispatched to ConsumeQueues and index: the end of
        the log, unless raw bytes end inside a record."""
        pending = self._pending_from
        return self.commitlog.max_offset if pending is None else pending

    def read_raw(self, phys: int, max_bytes: int) -> bytes:
        """At most ``max_bytes`` of the CommitLog from ``phys``, never past its end nor a
        segment's end (the bytes may end inside a record; a segment's blank trailer comes
        whole). ``b""`` at the end; ValueError below the first or past the last offset."""
        return self.commitlog.read_raw(phys, max_bytes)

    async def append_raw(self, phys: int, data: bytes) -> None:
        """Append bytes a master sent, byte for byte, at ``phys`` -- the end of the log (or
        any segment start while the log holds no segment: a new slave starts where its
        master's transfer does). The bytes stay in one segment. Complete records are
        dispatched (dispatch listeners told); a record they end inside waits for the next
        append. Raises ValueError (a wrong offset, a segment end crossed) or OSError (not
        running, an earlier I/O error, a full disk: errno ENOSPC), having written nothing."""
        self._raw_refusal()
        start = self.dispatched_phys_offset if self.commitlog.queue.segments else phys
        try:
            self.commitlog.append_raw(phys, data)
        except ValueError:
            raise
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                self.disk.set_full(str(exc))
            raise
        self._replay_appended(start)
        self.flusher.kick()
        self.rounds.appended(self.commitlog.max_offset)

    def _raw_refusal(self) -> None:
        if not self._running:
            raise OSError(errno.ESHUTDOWN, "the message store is not running")
        if self.io_error is not None:
            raise OSError(errno.EIO, f"the store failed to write ({self.io_error}); restart it")
        if self.disk.full and self.disk.still_full():
            raise DiskFull(f"disk full: {self.disk.reason}")

    def _replay_appended(self, start: int) -> None:
        end = self.commitlog.max_offset
        report = ScanReport(start, end=start)
        stop = replay(self.commitlog, report, self._replay_notify, end=end)
        self._pending_from = None if report.end >= end else report.end
        if stop in (Scan.INVALID, Scan.END) and report.end != self._stalled_at:
            self._stalled_at = report.end  # once per place: the next append tries again
            log.error("replay_stalled", at=report.end, end=end, found=stop.name,
                      action="no dispatch past it until valid records follow")  # fmt: skip

    def _replay(self, phys: int, size: int, notify: bool = False) -> None:
        """Dispatch the valid record at ``phys`` (the replay stage's on_record)."""
        seg = self.commitlog.queue.find(phys)
        assert seg is not None
        try:
            msg = decode_record(seg.mm, phys - seg.start)
        except MessageDecodeError as exc:  # only the body is under the CRC
            log.error("record_not_dispatched", phys=phys, error=str(exc))
            return
        self.table.dispatch(dispatch_of(msg, phys, size, self.delays), notify=notify)

    def _replay_notify(self, phys: int, size: int) -> None:
        # compat: 4.9.8's ReputMessageService tells no arrival on a SLAVE (parked pulls wait
        # for the hold service's next check); we tell them, so a slave's pulls wake at once
        self._replay(phys, size, notify=True)

    def truncate_to(self, phys: int) -> None:
        """Cut the CommitLog back to ``phys`` (a slave ahead of its master, an old master cut
        back to the consistent point): every byte from there on goes, and ConsumeQueue units,
        index entries and epoch entries pointing past it. Below the first segment the log is
        emptied (its end is 0 again). Crash-safe: the cut mark (cutmark.py) is durable before
        anything changes and goes after everything did; a start that finds it finishes the
        cut. Synchronous. Raises ValueError past the end, OSError (nothing cut) when the mark
        or the checkpoint cannot be written."""
        cl = self.commitlog
        old_end = cl.max_offset
        if not 0 <= phys <= old_end:
            raise ValueError(f"offset {phys} is outside the log [0, {old_end}]")
        if phys == old_end:
            return
        cutmark.mark(self.root, phys)
        emptied = phys < cl.min_offset or not cl.queue.segments
        cut = 0 if emptied else phys
        self._lower_checkpoint(cut)
        self._cuts += 1
        cl.cut(phys)
        self._cut_queues(cut, emptied)
        self.flusher.cut(cut)
        pending = self._pending_from
        self._pending_from = pending if pending is not None and pending < cl.max_offset else None
        log.warning("commitlog_truncated", to=cl.max_offset, was=old_end, queues_dropped=emptied)
        if self._sync_cut():  # else the mark stays: the next start finishes the cut
            self._cut_done()
        for listener in self.cut_listeners:  # indexes of their own (the timer wheel)
            listener(cl.max_offset)

    def _cut_done(self) -> None:
        """The last step of a cut: epoch entries past the end go, then the mark."""
        self.epochs.truncate_suffix_by_offset(self.commitlog.max_offset + 1)
        cutmark.clear(self.root)

    def _sync_cut(self) -> bool:
        """Make the zeroes of a cut durable at once: a clean start reads nothing past the end
        of the log (a crash restart checks up to the high-water mark anyway). False when the
        fsync failed."""
        seg = self.commitlog.queue.find(self.commitlog.max_offset)
        if seg is None:
            return True
        try:
            seg.fsync()
        except OSError as exc:
            if self.io_error is None:
                self.io_error = f"commitlog_fsync: {exc}"
                log.error("store_io_error", what="commitlog_fsync", error=str(exc),
                          action="puts refused until a restart; checkpoint held")  # fmt: skip
            return False
        return True

    def _lower_checkpoint(self, cut: int) -> None:
        cp = read_checkpoint(self.root)
        if cp is not None and max(cp.commitlog, cp.dispatched) > cut:
            lowered = Checkpoint(
                min(cp.commitlog, cut), min(cp.dispatched, cut), now_ms(), cp.exact
            )
            write_checkpoint(self.root, lowered)

    def _cut_queues(self, cut: int, emptied: bool) -> None:
        """Drop the units and index entries pointing at ``cut`` or later (all of them when
        the log was emptied: the master's queue offsets may start anywhere)."""
        table = self.table
        if emptied:
            for topic in {t for t, _q in table.queues}:
                table.delete_topic(topic)
                shutil.rmtree(self.root / "consumequeue" / topic, ignore_errors=True)
        for cq in table.queues.values():
            if cq.max_offset <= cq.min_offset:
                continue  # no unit to drop
            last = cq.unit(cq.max_offset - 1)
            if last is None or last.blank or last.phys >= cut:
                cq.truncate_from_phys(cut)
        table.index.truncate_from(cut)
        for key, first_missed in table.behind.items():
            table.behind[key] = min(first_missed, cut)
