"""Fencing: until when a broker may act on its etcd lease (no I/O; the clock is passed in).

etcd expires a lease TTL seconds after the last keep-alive it processed, on its own clock. A
keep-alive is processed after it was sent, so ``sent + TTL`` (our clock, boot_clock, at the
send) is a lower bound of the expiry; ``margin`` covers clock-rate differences and the time an
acknowledgement already decided on takes to leave. Until ``sent + TTL - margin`` of the last
successful keep-alive (or the grant) the lease is certainly alive, and so is a master key held
with it: nobody else can have been elected. After it, ``valid`` is false, before etcd can
expire the lease, so an old master stops acknowledging before a new one is installed (issue
35 item 2). Only a successful keep-alive or grant moves the bound, and never backwards.
"""

from __future__ import annotations

import math
import time

BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)


def boot_clock() -> float:
    """Seconds on a clock that never goes back and keeps counting while the host sleeps
    (Linux's CLOCK_BOOTTIME; CLOCK_MONOTONIC stops during a suspend, etcd's clock on another
    host does not, and a master resumed from a suspend must find its lease run out).
    time.monotonic where there is no CLOCK_BOOTTIME."""
    return time.clock_gettime(BOOTTIME) if BOOTTIME is not None else time.monotonic()


class Fence:
    def __init__(self, margin: float) -> None:
        if margin < 0:
            raise ValueError(f"a fencing margin of {margin} s")
        self.margin = margin
        self._valid_until = -math.inf

    @property
    def valid_until(self) -> float:
        """The clock time (boot_clock) at which ``valid`` turns false (-inf: no lease)."""
        return self._valid_until

    def renewed(self, sent_at: float, ttl: float) -> None:
        """A grant or keep-alive sent at ``sent_at`` was answered with ``ttl`` seconds."""
        if ttl > 0:
            self._valid_until = max(self._valid_until, sent_at + ttl - self.margin)

    def lost(self) -> None:
        """etcd answered that the lease is gone (or it was revoked)."""
        self._valid_until = -math.inf

    def valid(self, now: float) -> bool:
        return now < self._valid_until
