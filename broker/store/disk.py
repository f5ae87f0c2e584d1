"""Disk: the store's view of its disk -- used ratios, the disk-full state, and the check made
before any file is created or grown.

The state is full when the used share of the CommitLog's disk passes
``diskSpaceWarningLevelRatio`` (Java's 90 %) or its free space falls under
``diskSpaceFreeFloorMb`` (ours: a hard floor), and whenever a file could not be created or
grown for lack of space. While full, puts are refused (SERVICE_NOT_AVAILABLE) and reads are
served; the state is measured again at most every ``RECHECK_SECONDS`` while puts come in, and
on every retention round, so writes resume once space is freed, without a restart. Each change
of state is logged once (DefaultMessageStore.CleanCommitLogService.isSpaceToDelete,
RunningFlags).
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Final

import structlog

log = structlog.get_logger(__name__)

RECHECK_SECONDS: Final = 0.5


class DiskFull(OSError):
    """A file was not created or grown: the disk has no room for it."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.ENOSPC, reason)


def existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists (a store's folders come with use)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def used_ratio(path: Path) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: used / (used + available to us), rounded up
    to a hundredth; -1 when the disk cannot be measured."""
    try:
        st = os.statvfs(existing(path))
    except OSError:
        return -1.0
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if entire <= 0:
        return -1.0
    return -(-used * 100 // entire) / 100


class Disk:
    def __init__(
        self, root: Path, commitlog_dir: Path, *, warning_ratio: int, floor_bytes: int
    ) -> None:
        self.root = root
        self.commitlog_dir = commitlog_dir
        self.warning_ratio = warning_ratio
        self.floor_bytes = floor_bytes
        self.full = False
        self.reason = ""
        self._checked = 0.0

    def _space(self, path: Path) -> tuple[float, int, int]:
        """(used ratio, used bytes, bytes available to us) of the disk holding ``path``."""
        st = os.statvfs(existing(path))
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        free = st.f_bavail * st.f_frsize
        return (used / (used + free) if used + free else 1.0), used, free

    def check(self, nbytes: int, path: Path | None = None) -> None:
        """Before a file takes ``nbytes`` more of the disk: raise DiskFull (and enter the
        full state) when that would pass the warning ratio or the floor."""
        try:
            _ratio, used, free = self._space(path or self.commitlog_dir)
        except OSError as exc:
            raise DiskFull(f"cannot measure the disk: {exc.strerror}") from exc
        after = (used + nbytes) * 100 / (used + free) if used + free else 100.0
        if free - nbytes < self.floor_bytes:
            reason = f"{free - nbytes} bytes would be left, under the {self.floor_bytes} floor"
        elif after > self.warning_ratio:
            reason = f"{after:.1f}% used would pass diskSpaceWarningLevelRatio"
        else:
            return
        self.set_full(reason)
        raise DiskFull(f"disk full: {reason}")

    def set_full(self, reason: str) -> None:
        """Enter the full state (a file could not get the space it needed)."""
        self._checked = time.monotonic()
        if not self.full:
            log.error("disk_full", reason=reason, usage=self.usage_text(),
                      action="puts refused, reads served")  # fmt: skip
        self.full, self.reason = True, reason

    def refresh(self) -> bool:
        """Measure the disk again; returns whether it is full."""
        self._checked = time.monotonic()
        try:
            ratio, _used, free = self._space(self.commitlog_dir)
        except OSError as exc:
            reason = f"cannot measure the disk: {exc.strerror}"
        else:
            if ratio * 100 > self.warning_ratio:
                reason = f"{ratio * 100:.1f}% used passes diskSpaceWarningLevelRatio"
            elif free < self.floor_bytes:
                reason = f"{free} bytes free, under the {self.floor_bytes} floor"
            else:
                reason = ""
        if reason:
            self.set_full(reason)
        elif self.full:
            self.full, self.reason = False, ""
            log.warning("disk_space_recovered", usage=self.usage_text(), action="puts accepted")
        return self.full

    def still_full(self) -> bool:
        """For the put path: the state, measured again if the last look is old enough."""
        if self.full and time.monotonic() - self._checked >= RECHECK_SECONDS:
            return self.refresh()
        return self.full

    def usage_text(self) -> str:
        """SendMessageProcessor.diskUtil: used ratios of the CommitLog's, ConsumeQueues' and
        index's disks, for the disk-full remark."""
        paths = (self.commitlog_dir, self.root / "consumequeue", self.root / "index")
        ratios = [used_ratio(p) for p in paths]
        return "CL: {:5.2f} CQ: {:5.2f} INDEX: {:5.2f}".format(*ratios)
