"""Retention: delete CommitLog segments older than ``fileReservedTime`` at the ``deleteWhen``
hours, or in any round while the disk is past ``diskMaxUsedSpaceRatio`` (75 %); past
``diskSpaceCleanForciblyRatio`` (85 %) or ``diskSpaceWarningLevelRatio`` (90 %) the oldest go
at once, expired or not, when ``cleanFileForciblyEnable``; past the warning level the store
also refuses writes (broker.store.disk). So a disk between 75 % and 85 % full loses no
message younger than ``fileReservedTime`` (4.9.8's levels:
DefaultMessageStore.CleanCommitLogService.isSpaceToDelete / deleteExpiredFiles).
ConsumeQueue segments and index files whose messages are all gone follow, and queue min
offsets move up (CleanCommitLogService, CleanConsumeQueueService)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime

import structlog

from aiorocketmq.broker.store.commitlog import CommitLog
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.broker.store.consumequeue import ConsumeQueue
from aiorocketmq.broker.store.disk import Disk, used_ratio
from aiorocketmq.broker.store.index import Index

log = structlog.get_logger(__name__)

MAX_DELETES_PER_ROUND = 10


class Retention:
    def __init__(self, commitlog: CommitLog, index: Index, config: StoreConfig, disk: Disk) -> None:
        self.commitlog = commitlog
        self.index = index
        self.config = config
        self.disk = disk

    def run_round(self, queues: Iterable[ConsumeQueue], now: float | None = None) -> int:
        """One round; returns the CommitLog segments deleted."""
        now = time.time() if now is None else now
        self.disk.refresh()
        ratio = used_ratio(self.disk.commitlog_dir)
        c = self.config
        space = ratio < 0 or ratio * 100 > c.disk_max_used_space_ratio
        urgent = ratio * 100 > min(
            c.disk_space_clean_forcibly_ratio, c.disk_space_warning_level_ratio
        )
        force = urgent and c.clean_file_forcibly_enable
        due = datetime.fromtimestamp(now).hour in delete_hours(c.delete_when)
        deleted = 0
        if space or force or due:
            deleted = self._delete_commitlog(now, force)
        if deleted:
            low = self.commitlog.min_offset
            for cq in queues:
                cq.delete_expired(low)
            self.index.delete_before(low)
        return deleted

    def _delete_commitlog(self, now: float, force: bool) -> int:
        keep_seconds = self.config.file_reserved_time * 3600
        deleted = 0
        segments = self.commitlog.queue.segments
        while len(segments) > 1 and deleted < MAX_DELETES_PER_ROUND:
            seg = segments[0]
            if not force and seg.mtime() + keep_seconds > now:
                break
            self.commitlog.queue.delete_first()
            log.info("commitlog_segment_deleted", start=seg.start, forced=force)
            deleted += 1
        return deleted


def delete_hours(text: str) -> set[int]:
    """``deleteWhen`` ("04;16"): read at each round, so UPDATE_BROKER_CONFIG applies at once."""
    return {int(h) for h in text.replace(",", ";").split(";") if h.strip().isdigit()}
