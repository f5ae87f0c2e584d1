"""The epoch file: which master epoch wrote which part of the CommitLog (5.x's
``epochFileCheckpoint``, store/ha/autoswitch/EpochFileCache.java over
common/utils/CheckpointFile.java, rocketmq-all-5.3.3).

Each entry is ``<epoch, start offset>``: from its start offset on, until the next entry's
start, the CommitLog holds what the master of that epoch wrote; the last entry runs to the
end of the log. A broker made master at epoch ``e`` appends ``<e, its max physical offset>``;
a slave appends its master's entries as its copy reaches their start offsets. Two replicas
agree on their logs up to the *consistent point*: the end of the newest epoch both hold with
the same start offset (``consistent_point``). A returning old master cuts its log back there
before it copies from the new one.

The file is 5.x's format -- ``<entries>\\n<crc32>\\n<epoch>-<startOffset>\\n...`` with
``crc32`` UtilAll.crc32 (CRC32 & 0x7FFFFFFF) of the entry lines, 0 meaning unchecked -- and is
replaced atomically (remoting.files.atomic_write: tmp, fsync, rename, fsync the directory).
compat: 5.x writes through MixAll.string2File (the old file kept as ``.bak``, no fsync) and
skips writing an empty list; we write every change, an empty list too, durably.

Pure storage: no networking, no asyncio.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Final, NamedTuple

import structlog

from aiorocketmq.remoting.files import atomic_write

log = structlog.get_logger(__name__)

FILE_NAME: Final = "epochFileCheckpoint"  # MessageStoreConfig.getStorePathEpochFile
NO_END: Final = (1 << 63) - 1  # EpochEntry.endOffset's default, Long.MAX_VALUE


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class EpochFileError(Exception):
    """The epoch file cannot be read as one (a count or CRC that does not match)."""


def encode(entries: list[EpochEntry]) -> bytes:
    """CheckpointFile.write's text for ``entries``."""
    lines = "".join(f"{e.epoch}-{e.start_offset}\n" for e in entries)
    crc = zlib.crc32(lines.encode()) & 0x7FFFFFFF
    return f"{len(entries)}\n{crc}\n{lines}".encode()


def decode(data: bytes) -> list[EpochEntry]:
    """CheckpointFile.read: the entries, or EpochFileError when the count or CRC is off."""
    try:
        text = data.decode()
        count_line, crc_line, *rest = text.split("\n", 2)
        count, crc = int(count_line), int(crc_line)
    except ValueError as exc:  # not UTF-8, or a header line that is no number
        raise EpochFileError(f"bad epoch file header: {exc}") from None
    body = rest[0] if rest else ""
    entries = []
    for line in body.splitlines():
        epoch, sep, start = line.partition("-")
        if not sep:
            continue  # EpochEntrySerializer.fromLine: a line without '-' is no entry
        try:
            entries.append(EpochEntry(int(epoch), int(start)))
        except ValueError as exc:
            raise EpochFileError(f"bad epoch entry {line!r}") from exc
    if len(entries) != count:
        raise EpochFileError(f"expected {count} entries, found {len(entries)}")
    if crc != 0 and zlib.crc32(body.encode()) & 0x7FFFFFFF != crc:
        raise EpochFileError("epoch file crc32 does not match")
    return entries


def consistent_point(
    local: list[EpochEntry], local_end: int, remote: list[EpochEntry], remote_end: int
) -> int:
    """EpochFileCache.findConsistentPoint: from the newest local epoch down, the first one the
    remote side holds with the same start offset; the lesser of the two ends of that epoch
    (an epoch ends where the next begins, the last one at its side's end of log). -1 when
    no epoch agrees."""
    remote_ends = _ends(remote, remote_end)
    local_ends = _ends(local, local_end)
    for entry in reversed(local):
        theirs = remote_ends.get(entry.epoch)
        if theirs is not None and theirs[0] == entry.start_offset:
            return min(local_ends[entry.epoch][1], theirs[1])
    return -1


def _ends(entries: list[EpochEntry], end: int) -> dict[int, tuple[int, int]]:
    """epoch -> (start, end) (EpochFileCache.initEntries + setLastEpochEntryEndOffset)."""
    out: dict[int, tuple[int, int]] = {}
    for entry, after in zip(entries, [*entries[1:], None], strict=True):
        stop = after.start_offset if after is not None else max(end, entry.start_offset)
        out[entry.epoch] = (entry.start_offset, stop)
    return out


class EpochFile:
    """The entries in memory, every change written through to ``<root>/epochFileCheckpoint``."""

    def __init__(self, root: Path) -> None:
        self.path = root / FILE_NAME
        self.entries: list[EpochEntry] = []

    def load(self) -> None:
        """Read the file (none: no entries). An unreadable file is an error a human must
        look at: raised as EpochFileError, so the store does not start on a guess."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self.entries = []
            return
        self.entries = decode(data)

    @property
    def last_epoch(self) -> int:
        """EpochFileCache.lastEpoch: -1 without entries."""
        return self.entries[-1].epoch if self.entries else -1

    @property
    def last(self) -> EpochEntry | None:
        return self.entries[-1] if self.entries else None

    def append(self, entry: EpochEntry) -> None:
        """EpochFileCache.appendEntry: epochs and start offsets only grow (ValueError
        otherwise, nothing written). Durable when this returns (OSError if not)."""
        last = self.last
        if last is not None and (
            entry.epoch <= last.epoch or entry.start_offset < last.start_offset
        ):
            raise ValueError(f"epoch entry {tuple(entry)} does not follow {tuple(last)}")
        if last is not None and entry.start_offset == last.start_offset:
            # ours: an epoch that wrote nothing is superseded (5.x refuses the append)
            self._write([*self.entries[:-1], entry])
        else:
            self._write([*self.entries, entry])
        log.info("epoch_appended", epoch=entry.epoch, start_offset=entry.start_offset)

    def truncate_suffix_by_offset(self, offset: int) -> None:
        """EpochFileCache.truncateSuffixByOffset: drop the entries starting at ``offset`` or
        later (the log was cut back to ``offset``)."""
        kept = [e for e in self.entries if e.start_offset < offset]
        if len(kept) != len(self.entries):
            dropped = self.entries[len(kept) :]
            self._write(kept)
            log.warning("epochs_truncated", offset=offset, dropped=[tuple(e) for e in dropped])

    def _write(self, entries: list[EpochEntry]) -> None:
        atomic_write(self.path, encode(entries))
        self.entries = entries
