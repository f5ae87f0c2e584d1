"""RebalanceLocks: which client holds each queue of a group for orderly consumption
(RebalanceLockManager). A lock lasts 60 s unless renewed (protocol.md 5.4)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from aiorocketmq.remoting.protocol.heartbeat import MessageQueue

LOCK_MAX_LIVE_SECONDS = 60.0


@dataclass(slots=True)
class Lock:
    client_id: str
    last_update: float


class RebalanceLocks:
    def __init__(self, max_live: float = LOCK_MAX_LIVE_SECONDS) -> None:
        self.max_live = max_live
        self.groups: dict[str, dict[MessageQueue, Lock]] = {}

    def try_lock(self, group: str, queues: list[MessageQueue], client_id: str,
                 now: float | None = None) -> list[MessageQueue]:  # fmt: skip
        """Lock (or renew) what is free, expired or already ours; returns what we now hold."""
        now = time.monotonic() if now is None else now
        locks = self.groups.setdefault(group, {})
        held = []
        for mq in queues:
            lock = locks.get(mq)
            if (
                lock is None
                or lock.client_id == client_id
                or now - lock.last_update > self.max_live
            ):
                locks[mq] = Lock(client_id, now)
                held.append(mq)
        return held

    def unlock(self, group: str, queues: list[MessageQueue], client_id: str) -> None:
        locks = self.groups.get(group, {})
        for mq in queues:
            lock = locks.get(mq)
            if lock is not None and lock.client_id == client_id:
                del locks[mq]
