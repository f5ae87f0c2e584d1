"""MemoryLimits: server-wide caps on the memory connections make a server hold.

Two kinds of bytes sit in a server because of what peers do, not what it decides: responses
written but not yet taken by a peer (a client that sends requests and never reads), and
frames begun but not finished (a client that sends 15 MiB of a 16 MiB frame and stops).
Per connection, the channel already stops reading while its own output is above the
transport's high-water mark; these caps bound the sum over all connections. Past a cap, the
connections holding the most are closed (largest first, logged), so the server's memory stays
bounded whatever any number of peers do, and well-behaved peers -- which hold little -- keep
being served.

Output is accounted when a channel writes and when its buffer drains below the low-water
mark; a buffer that drained fully since is seen as stale, so before closing anyone every
accounted channel is measured again.

Blocks below the process's mmap threshold (remoting.process) come from the heap, which keeps
their pages after they are freed: once connections have let go of ``TRIM_AFTER`` bytes since
the last time, ``trim`` (malloc_trim) gives the free pages back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from aiorocketmq.remoting.log import get_logger

log = get_logger(__name__)

TRIM_AFTER: Final = 16 * 1024 * 1024


class Held(Protocol):
    """What a limit needs of a connection."""

    @property
    def peer(self) -> str: ...

    def write_buffer_size(self) -> int: ...

    def abort(self) -> None: ...


class _Account:
    __slots__ = ("by_conn", "kind", "limit", "total")

    def __init__(self, kind: str, limit: int) -> None:
        self.kind = kind
        self.limit = limit
        self.total = 0
        self.by_conn: dict[Held, int] = {}

    def set(self, conn: Held, size: int) -> int:
        """``conn`` now holds ``size`` bytes; returns how many it let go of."""
        old = self.by_conn.pop(conn, 0)
        if size:
            self.by_conn[conn] = size
        self.total += size - old
        return max(0, old - size)

    def shed(self) -> int:
        """Close the largest holders until the total is within the limit; returns the bytes
        they held."""
        shed = 0
        for conn, size in sorted(self.by_conn.items(), key=lambda item: -item[1]):
            if self.total <= self.limit:
                break
            log.warning(
                "connection_memory_limit",
                kind=self.kind,
                peer=conn.peer,
                bytes=size,
                total=self.total,
                limit=self.limit,
            )
            shed += self.set(conn, 0)
            conn.abort()
        return shed


class MemoryLimits:
    """Caps shared by every connection of one server (bytes)."""

    def __init__(
        self,
        output_max: int,
        partial_max: int,
        trim: Callable[[], object] | None = None,
        trim_after: int = TRIM_AFTER,
    ) -> None:
        self._output = _Account("output", output_max)
        self._partial = _Account("partial_frames", partial_max)
        self._trim, self._trim_after = trim, trim_after
        self._released = 0  # bytes let go of since the last trim
        self.trims = 0

    @property
    def output_total(self) -> int:
        return self._output.total

    @property
    def partial_total(self) -> int:
        return self._partial.total

    def output(self, conn: Held, size: int) -> None:
        """``conn`` now buffers ``size`` bytes of output."""
        account = self._output
        self._let_go(account.set(conn, size))
        if account.total > account.limit:
            for other in list(account.by_conn):  # drained buffers leave stale sizes: measure
                self._let_go(account.set(other, other.write_buffer_size()))
            self._let_go(account.shed())

    def partial(self, conn: Held, size: int) -> None:
        """``conn`` now holds ``size`` bytes of frames not yet complete."""
        account = self._partial
        self._let_go(account.set(conn, size))
        if account.total > account.limit:
            self._let_go(account.shed())

    def forget(self, conn: Held) -> None:
        """The connection is gone: nothing of it is held any more."""
        self._let_go(self._output.set(conn, 0) + self._partial.set(conn, 0))

    def _let_go(self, size: int) -> None:
        self._released += size
        if self._released >= self._trim_after and self._trim is not None:
            self._released = 0
            self.trims += 1
            self._trim()
