"""TimerCheck: how far the wheel has delivered (5.x ``config/timercheck``,
TimerCheckpoint.java, with our own fields). Pure storage.

32 bytes written in place: ``read_ms:int64 | done:int64 | phy_mark:int64 | magic:int64`` --
every slot before ``read_ms`` is delivered, and the first ``done`` units of slot ``read_ms``;
``phy_mark`` is where the CommitLog ended before the batch now being delivered (-1: none),
so a restart can tell which of that batch's messages reached the CommitLog. A write is one
``pwrite`` of 32 bytes inside one page: a SIGKILL leaves the old or the new checkpoint.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Final, NamedTuple

_FORMAT: Final = struct.Struct("<qqqq")
_MAGIC: Final = 0x54494D4552434B31  # "TIMERCK1"


class Progress(NamedTuple):
    read_ms: int
    done: int
    phy_mark: int


class TimerCheck:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def read(self) -> Progress | None:
        raw = os.pread(self.fd, _FORMAT.size, 0)
        if len(raw) != _FORMAT.size:
            return None
        read_ms, done, mark, magic = _FORMAT.unpack(raw)
        return Progress(read_ms, done, mark) if magic == _MAGIC else None

    def write(self, progress: Progress) -> None:
        os.pwrite(self.fd, _FORMAT.pack(*progress, _MAGIC), 0)

    def flush(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)
