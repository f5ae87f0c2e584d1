"""The high-water mark: a durable bound on how far the CommitLog was ever written.

After a crash the log ends at its last valid record, and every byte past that end must be
zero: a stale but valid-looking record left there -- written before a power loss dropped
the unsynced pages before it -- would be read as a real one once new records of the same
sizes line up with it. Recovery zeroes what is not zero past the end; the mark bounds how
far it looks. No CommitLog byte at or past the mark was written since the last start made
the tail clean, so a crash restart reads past the end of the log only what the writer may
have reached, and at most ``AHEAD`` more -- not the rest of a 1 GiB segment (the search for
records after invalid bytes stops at the mark too). A start sets the mark ``AHEAD`` past the
end; only after a crash recovery zeroed the tail up to it may that lower it.

The mark is ``<root>/highwater`` (JSON, written atomically). The writer never passes the
durable mark: ``CommitLog.reserve`` and ``append_raw`` ask ``allow`` first once a write
would end past ``room``. Within ``AHEAD / 2`` of the mark it is raised to ``AHEAD`` past the
end in a thread, off the loop; a writer that outruns that raises it itself, on the loop,
before writing. Ours: 4.9.8 keeps no such mark (docs/compatibility.md).
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Final

import structlog

from aiorocketmq.remoting.files import atomic_write

log = structlog.get_logger(__name__)

AHEAD: Final = 64 << 20  # the mark is set this far past the end of the log


class HighWater:
    def __init__(self, root: Path) -> None:
        self.path = root / "highwater"
        self.durable = 0  # on disk: no write may end past it
        self._lock = threading.Lock()  # one writer of the file at a time (loop or thread)
        self._pending: asyncio.Future[None] | None = None  # a raise under way in a thread
        self._error = ""  # the last background failure logged (once per change)

    def read(self) -> int | None:
        """The mark on disk; None when there is none (a new store, or one an older version
        made) or it cannot be read (then the whole rest of the segment is checked)."""
        try:
            return int(json.loads(self.path.read_text())["commitlog"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError) as exc:
            log.warning("highwater_unreadable", error=str(exc), fallback="check the whole tail")
            return None

    def settle(self, end: int, *, lower: bool) -> None:
        """At start, every byte from ``end`` (the end of the log) on being zero: the mark is
        set ``AHEAD`` past it -- lowered only if ``lower`` (a recovery zeroed the tail up to
        the old mark just now), and not rewritten while it is far enough ahead. When it
        cannot be written (a full disk) the mark on disk stays, and the first write tries
        again."""
        on_disk = self.read() or 0
        target = end + AHEAD
        self.durable = 0  # until written: every write raises it first
        if not lower and on_disk >= end + AHEAD // 2:
            self.durable = on_disk
            return
        try:
            self._write(target if lower else max(target, on_disk))
        except OSError as exc:
            log.warning("highwater_not_written", error=str(exc), action="raised by the writer")

    def allow(self, end: int) -> int:
        """Before CommitLog bytes up to ``end`` are written: the mark is past them when this
        returns (raised on the spot if need be: OSError when it cannot be, and then nothing
        may be written), and raised in a thread when ``end`` comes near it. Returns how far
        writes may end before the next call."""
        if end > self.durable:
            self._write(end + AHEAD)
        elif self._pending is None and end > self.durable - AHEAD // 2:
            self._ask(end + AHEAD)
        return self.durable if self._pending is not None else self.durable - AHEAD // 2

    async def drain(self) -> None:
        """Until no raise is under way (before the store closes its files)."""
        pending = self._pending
        if pending is not None:
            await asyncio.wait([pending])

    def _ask(self, target: int) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a tool, a test): at once
            self._write(target)
            return
        fut = loop.run_in_executor(None, self._write, target)
        self._pending = fut
        fut.add_done_callback(self._raised)

    def _raised(self, fut: asyncio.Future[None]) -> None:
        self._pending = None
        exc = fut.exception() if not fut.cancelled() else None
        if exc is not None and str(exc) != self._error:  # the writer raises it itself later
            log.warning("highwater_not_raised", error=str(exc), action="raised by the writer")
        self._error = "" if exc is None else str(exc)

    def _write(self, target: int) -> None:
        with self._lock:
            if target <= self.durable:
                return  # raised that far meanwhile
            atomic_write(self.path, json.dumps({"commitlog": target}).encode())
            self.durable = target
