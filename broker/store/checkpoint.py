"""Checkpoint, abort and lock files of a store (StoreCheckpoint, the abort file, the lock).

``checkpoint`` (JSON, written atomically) says up to which CommitLog offset the log itself and
the ConsumeQueues and index built from it are durable: recovery re-dispatches from there.
Both offsets are record boundaries (``exact``), so a crash recovery starts its scan right
there; a checkpoint an older version wrote (no ``exact``) may hold a slave's offset inside a
record, and recovery starts at the start of its segment, as it did then.
``abort`` exists while the store runs: finding it at start means the last run crashed.
``lock`` is held (flock) while running, so two brokers never share a store.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

import structlog

from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.files import atomic_write, fsync_dir

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    commitlog: int  # CommitLog bytes durable
    dispatched: int  # CommitLog offset up to which ConsumeQueues and index are durable
    timestamp: int
    exact: bool = True  # both offsets are record boundaries

    @property
    def safe(self) -> int:
        return min(self.commitlog, self.dispatched)


def read_checkpoint(root: Path) -> Checkpoint | None:
    try:
        obj = json.loads((root / "checkpoint").read_text())
        offsets = int(obj["commitlog"]), int(obj["dispatched"]), int(obj["timestamp"])
        return Checkpoint(*offsets, obj.get("exact") is True)
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, OSError) as exc:
        log.warning("checkpoint_unreadable", error=str(exc), fallback="scan everything")
        return None


def write_checkpoint(root: Path, cp: Checkpoint) -> None:
    data = {"commitlog": cp.commitlog, "dispatched": cp.dispatched, "timestamp": cp.timestamp,
            "exact": cp.exact}  # fmt: skip
    atomic_write(root / "checkpoint", json.dumps(data).encode())


def crashed(root: Path) -> bool:
    return (root / "abort").exists()


def create_abort(root: Path) -> None:
    (root / "abort").touch()
    fsync_dir(root)


def remove_abort(root: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (root / "abort").unlink()
    fsync_dir(root)


def lock_store(root: Path) -> int:
    """Hold ``<root>/lock`` for the life of the process; a second user is refused."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise ConfigError(f"{root}: the store is in use by another process") from exc
    return fd


def unlock_store(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
