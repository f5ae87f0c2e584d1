"""ProcessQueue: one assigned queue's messages between pull and consumption (Java's
ProcessQueue): the pulled-but-unconsumed messages ordered by queue offset, the figures flow
control reads, and, for orderly consumption, the messages being consumed and the lock.

Pure state, no I/O: the pull loop puts, the consume services take and remove.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from dataclasses import dataclass, field

from aiorocketmq.client.consumer.types import LOCK_MAX_LIVE
from aiorocketmq.remoting.protocol.message import MessageExt, Prop

PULL_MAX_IDLE = 120.0  # s, ProcessQueue.PULL_MAX_IDLE_TIME: an unpulled queue is dropped


@dataclass(slots=True)
class ProcessQueue:
    """The messages pulled from one queue and not yet consumed (ProcessQueue)."""

    offsets: list[int] = field(default_factory=list)  # sorted queue offsets in ``msgs``
    msgs: dict[int, MessageExt] = field(default_factory=dict)
    consuming: dict[int, MessageExt] = field(default_factory=dict)  # orderly: taken
    size: int = 0  # body bytes of ``msgs`` and ``consuming``
    max_offset: int = -1  # the highest queue offset ever put
    dropped: bool = False
    locked: bool = False
    last_lock: float = 0.0
    last_pull: float = field(default_factory=time.monotonic)
    last_consume: float = field(default_factory=time.monotonic)
    try_unlock_times: int = 0
    msg_acc_cnt: int = 0  # how far the broker's max offset is ahead of this queue
    # orderly: held while the listener runs, so a queue is let go between batches only
    consume_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def count(self) -> int:
        return len(self.msgs) + len(self.consuming)

    def put(self, msgs: list[MessageExt]) -> bool:
        """Add pulled messages (duplicates ignored); True when the orderly service should be
        woken (there was nothing waiting and nothing being consumed)."""
        idle = not self.msgs and not self.consuming
        added = False
        for m in msgs:
            off = m.queue_offset
            if off in self.msgs or off in self.consuming:
                continue
            self.msgs[off] = m
            bisect.insort(self.offsets, off)
            self.size += len(m.body)
            if off > self.max_offset:
                self.max_offset = off
            added = True
        if msgs:
            last = msgs[-1].properties.get(Prop.MAX_OFFSET)
            if last is not None and last.isdigit():
                self.msg_acc_cnt = max(0, int(last) - msgs[-1].queue_offset)
        return idle and added

    def remove(self, msgs: list[MessageExt]) -> int:
        """Consumed (or handed back to the broker): forget them. Returns the offset to commit:
        the smallest offset still waiting, else one past the highest ever put; -1 if nothing
        was ever put (ProcessQueue.removeMessage)."""
        self.last_consume = time.monotonic()
        for m in msgs:
            gone = self.msgs.pop(m.queue_offset, None)
            if gone is not None:
                i = bisect.bisect_left(self.offsets, m.queue_offset)
                del self.offsets[i]
                self.size -= len(gone.body)
        if self.offsets:
            return self.offsets[0]
        return self.max_offset + 1 if self.max_offset >= 0 else -1

    def span(self) -> int:
        """Offsets between the oldest and newest waiting message (getMaxSpan)."""
        return self.offsets[-1] - self.offsets[0] if self.offsets else 0

    # ------------------------------------------------------------ orderly

    def take(self, n: int) -> list[MessageExt]:
        """The next ``n`` messages in offset order, moved to ``consuming`` (takeMessages)."""
        taken = []
        self.last_consume = time.monotonic()
        for off in self.offsets[:n]:
            m = self.msgs.pop(off)
            self.consuming[off] = m
            taken.append(m)
        del self.offsets[: len(taken)]
        return taken

    def commit(self) -> int:
        """The taken messages are consumed: forget them; the offset to commit is one past the
        highest of them, -1 when none were taken (ProcessQueue.commit)."""
        if not self.consuming:
            return -1
        nxt = max(self.consuming) + 1
        self.size -= sum(len(m.body) for m in self.consuming.values())
        self.consuming.clear()
        return nxt

    def consume_again(self, msgs: list[MessageExt]) -> None:
        """Put taken messages back to be consumed again (makeMessageToConsumeAgain)."""
        for m in msgs:
            if self.consuming.pop(m.queue_offset, None) is not None:
                self.msgs[m.queue_offset] = m
                bisect.insort(self.offsets, m.queue_offset)

    def has_temp_messages(self) -> bool:
        return bool(self.msgs)

    def lock_expired(self) -> bool:
        return time.monotonic() - self.last_lock > LOCK_MAX_LIVE

    def pull_expired(self) -> bool:
        return time.monotonic() - self.last_pull > PULL_MAX_IDLE

    def clear(self) -> None:
        self.offsets.clear()
        self.msgs.clear()
        self.consuming.clear()
        self.size = 0
        self.max_offset = -1  # ProcessQueue.clear resets queueOffsetMax
