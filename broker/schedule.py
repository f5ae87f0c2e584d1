"""ScheduleService: delivers delayed messages (ScheduleMessageService, protocol.md 12.3).

Each delay level is a FIFO -- every message in it waits the same time -- read from its saved
offset in SCHEDULE_TOPIC_XXXX queue ``level - 1``. A message whose time has come is stored
again under REAL_TOPIC / REAL_QID without DELAY, then the level's offset moves on. Offsets
are saved to delayOffset.json every 10 s and at stop, so a restart resumes (at least once).

A store put under ASYNC_FLUSH never suspends, so a backlog of due messages (a restart, a
burst of send-backs) would hold the loop for seconds. Each round therefore moves at most
ROUND_MESSAGES per level, and a TimeSlice yields to the loop every few ms within it; the
level's offset moves after each message, so a stop between yields repeats nothing.

No poison pill (issue 29, N2): a due message the store refuses for good -- its real topic too
long or not a name (a send-back for a 300-character group), the message or its properties
over the limits, no real topic or queue at all -- can never be delivered; waiting for it
held back every later message of its level, other groups' retries included, for ever. It is
skipped: counted by reason (``skipped``, on /metrics) and named in a warning at most every
10 s per level; it stays in SCHEDULE_TOPIC_XXXX's CommitLog until retention deletes it. A
refusal that can pass (disk full, a slave's store, recovery still dispatching) keeps the
message first in line and tries again after a back-off doubling from 0.1 s to 10 s, for that
level alone (the other levels go on), warned about at most every 10 s per level and status.
4.9.8 retries every 100 ms for ever (DeliverDelayedMessageTimerTask, DELAY_FOR_A_WHILE).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

import structlog

from aiorocketmq.broker.configfile import ConfigFile, Snapshot
from aiorocketmq.broker.store import GetStatus, MessageStore, PutStatus
from aiorocketmq.broker.store.results import NEVER_STORED
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.message import MessageExt, Prop, decode_record, now_ms
from aiorocketmq.remoting.protocol.topic import SCHEDULE_TOPIC
from aiorocketmq.remoting.tasks import TimeSlice
from aiorocketmq.remoting.warnlimit import WarnLimiter

log = structlog.get_logger(__name__)

IDLE_SECONDS = 0.1  # DELAY_FOR_A_WHILE
RETRY_FIRST_SECONDS: Final = 0.1  # after a refusal that can pass, doubling up to
RETRY_MAX_SECONDS: Final = 10.0  # DELAY_FOR_A_PERIOD
WARN_SECONDS: Final = 10.0  # at most one warning per level (and status) this often
ROUND_MESSAGES = 1024  # per level and round, give or take one read batch
READ_BATCH = 32
NO_REAL_QUEUE: Final = "no REAL_TOPIC and REAL_QID"
_QUEUE_IDS = range(2**31)  # a real queue id: a Java int, not negative
NAME_SHOWN: Final = 200  # characters of a topic name a warning shows


class ScheduleService(Snapshot):
    def __init__(self, store: MessageStore, file: ConfigFile) -> None:
        self.store = store
        self.file = file
        self.delays = store.delays  # ms per level, level 1 first
        self.offsets: dict[int, int] = {}
        self._wake = asyncio.Event()
        self._slice = TimeSlice()
        self.skipped: dict[str, int] = {}  # messages skipped, by reason (/metrics)
        self.failures: dict[str, int] = {}  # refusals that can pass, by status (/metrics)
        self._hold: dict[int, float] = {}  # level -> monotonic time before which it waits
        self._backoff: dict[int, float] = {}  # level -> its last wait after a refusal
        self._warnings = WarnLimiter(WARN_SECONDS)
        store.add_dispatch_listener(self._arrived)

    def load(self) -> None:
        obj = self.file.load()
        if obj is None:
            return
        try:
            raw = obj.get("offsetTable") or {}
            self.offsets = {int(level): int(offset) for level, offset in raw.items()}
        except (ValueError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.file.path}: malformed delay offsets: {exc}") from exc

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {str(k): v for k, v in sorted(self.offsets.items())}}

    def _arrived(self, topic: str, _qid: int, _offset: int, _tags: int, _stamp: int) -> None:
        if topic == SCHEDULE_TOPIC:
            self._wake.set()

    async def run(self) -> None:
        """Deliver what is due, sleep until the next due time (or a new delayed message)."""
        while True:
            self._wake.clear()
            waits = []
            for level in range(1, len(self.delays) + 1):
                held = self._hold.get(level, 0.0) - time.monotonic()
                waits.append(held if held > 0 else await self._try_level(level))
            wait = min(waits)
            if wait > 0:
                try:
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                except TimeoutError:
                    pass

    async def _try_level(self, level: int) -> float:
        try:
            return await self._deliver_level(level)
        except Exception as exc:  # a bug on one message must not stop every level for good
            if self._warnings.hit(("crashed", level)) is not None:
                log.exception("delayed_delivery_crashed", delay_level=level)
            return self._back_off(level, type(exc).__name__, None)

    async def _deliver_level(self, level: int) -> float:
        """Deliver up to ROUND_MESSAGES of level ``level``'s due messages, in order, giving
        the loop way as each time slice runs out; returns seconds until it needs a look
        (0 when the round's bound cut it short)."""
        queue_id, delay = level - 1, self.delays[level - 1]
        offset = max(self.offsets.get(level, 0), self.store.min_offset(SCHEDULE_TOPIC, queue_id))
        moved = 0
        while moved < ROUND_MESSAGES:
            result = self.store.get(SCHEDULE_TOPIC, queue_id, offset, READ_BATCH)
            if result.status is not GetStatus.FOUND:
                if result.status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_FOUND_NULL):
                    offset = result.next_begin_offset
                    continue
                self._advance(level, offset)
                return IDLE_SECONDS
            for record in result.messages:  # bytes: still valid after yielding
                msg = decode_record(record)
                due = msg.store_timestamp + delay
                if due > now_ms():
                    self._advance(level, msg.queue_offset)
                    return min(IDLE_SECONDS * 10, (due - now_ms()) / 1000)
                refused = await self._restore(msg, level)
                if refused is not None:  # it may pass: first in line again after a while
                    self._advance(level, msg.queue_offset)
                    return self._back_off(level, refused.name, msg.properties.get(Prop.REAL_TOPIC))
                self._backoff.pop(level, None)
                offset = msg.queue_offset + 1
                self._advance(level, offset)  # before yielding: a stop there saves it
                moved += 1
                await self._slice.tick()
            offset = max(offset, result.next_begin_offset)
        self._advance(level, offset)
        return 0.0

    def _advance(self, level: int, offset: int) -> None:
        if self.offsets.get(level) != offset:
            self.offsets[level] = offset
            self.mark_dirty()

    def _back_off(self, level: int, why: str, topic: str | None) -> float:
        """Hold ``level`` back after a refusal that can pass: 0.1 s, doubling, 10 s at most."""
        wait = min(RETRY_MAX_SECONDS, self._backoff.get(level, RETRY_FIRST_SECONDS / 2) * 2)
        self._backoff[level] = wait
        self._hold[level] = time.monotonic() + wait
        self.failures[why] = self.failures.get(why, 0) + 1
        held = self._warnings.hit(("failed", level, why))
        if held is not None:
            log.warning("delayed_delivery_failed", delay_level=level, status=why,
                        topic=(topic or "")[:NAME_SHOWN], retry_in=wait,
                        suppressed=held)  # fmt: skip
        return wait

    def _skip(self, level: int, delayed: MessageExt, topic: str, reason: str) -> None:
        """A message no retry can deliver: counted, named in a warning now and then, passed."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        held = self._warnings.hit(("skipped", level))
        if held is not None:
            log.warning("delayed_message_skipped", delay_level=level, topic=topic[:NAME_SHOWN],
                        reason=reason, msg_id=delayed.properties.get(Prop.UNIQ_KEY),
                        commit_log_offset=delayed.commit_log_offset, suppressed=held)  # fmt: skip

    async def _restore(self, delayed: MessageExt, level: int) -> PutStatus | None:
        """Store ``delayed`` again under its real topic and queue, without DELAY; None once it
        is stored or skipped for good, else the store's status refusing it for now."""
        props = dict(delayed.properties)
        props.pop(Prop.DELAY, None)
        try:
            topic, queue_id = props[Prop.REAL_TOPIC], int(props[Prop.REAL_QID])
        except (KeyError, ValueError):
            topic, queue_id = props.get(Prop.REAL_TOPIC, ""), -1
        if queue_id not in _QUEUE_IDS:  # nothing to deliver it to
            self._skip(level, delayed, topic, NO_REAL_QUEUE)
            return None
        msg = MessageExt(
            topic=topic,
            body=delayed.body,
            flag=delayed.flag,
            properties=props,
            queue_id=queue_id,
            sys_flag=delayed.sys_flag,
            born_timestamp=delayed.born_timestamp,
            born_host=delayed.born_host,
            reconsume_times=delayed.reconsume_times,
        )
        result = await self.store.put(msg, wait_flush=False)
        if result.status in NEVER_STORED:
            self._skip(level, delayed, topic, result.status.name)
        elif result.status is not PutStatus.PUT_OK:
            return result.status
        return None
