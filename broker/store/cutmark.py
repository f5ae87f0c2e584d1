"""The cut mark: a durable note that the CommitLog is being cut back (``<root>/truncating``).

A cut (Replica.truncate_to: a slave ahead of its master, an old master cut back to the
consistent point with the new one) touches many files -- the checkpoint, the CommitLog's
last segment (zeroed from the cut) and the segments after it (deleted), ConsumeQueues, the
index, the epoch file. The mark, holding the cut's offset, is made durable before any of
them changes and removed after all of them did. A store that starts and finds it finishes
the cut before it serves anything: it recovers as after a crash, from a checkpoint no later
than the cut, replays no record past the cut, zeroes what follows it and drops what points
there. A crash at any point of a cut therefore ends in the cut store, never in a mix of the
old tail and the new (4.9.8 and 5.x have no such mark: truncateDirtyFiles is not
crash-safe there).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Final

import structlog

from aiorocketmq.remoting.files import atomic_write, fsync_dir

log = structlog.get_logger(__name__)

FILE_NAME: Final = "truncating"


def mark(root: Path, offset: int) -> None:
    """Durably note a cut to ``offset`` (before anything is cut)."""
    atomic_write(root / FILE_NAME, json.dumps({"offset": offset}).encode())


def read(root: Path) -> int | None:
    """The offset of a cut that did not finish, or None."""
    try:
        return int(json.loads((root / FILE_NAME).read_text())["offset"])
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        # atomic_write never leaves a torn file: this is damage from outside
        raise ValueError(f"{root / FILE_NAME}: unreadable cut mark ({exc})") from exc


def clear(root: Path) -> None:
    """The cut is done and durable: drop the mark."""
    with contextlib.suppress(FileNotFoundError):
        (root / FILE_NAME).unlink()
    fsync_dir(root)
