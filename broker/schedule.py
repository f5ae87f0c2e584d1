"""ScheduleService: delivers delayed messages (ScheduleMessageService, protocol.md 12.3).

Each delay level is a FIFO -- every message in it waits the same time -- read from its saved
offset in SCHEDULE_TOPIC_XXXX queue ``level - 1``. A message whose time has come is stored
again under REAL_TOPIC / REAL_QID without DELAY, then the level's offset moves on. Offsets
are saved to delayOffset.json every 10 s and at stop, so a restart resumes (at least once).

A store put under ASYNC_FLUSH never suspends, so a backlog of due messages (a restart, a
burst of send-backs) would hold the loop for seconds. Each round therefore moves at most
ROUND_MESSAGES per level, and a TimeSlice yields to the loop every few ms within it; the
level's offset moves after each message, so a stop between yields repeats nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from broker.configfile import ConfigFile, Snapshot
from broker.store import GetStatus, MessageStore, PutStatus
from remoting.errors import ConfigError
from remoting.protocol.message import MessageExt, Prop, decode_record, now_ms
from remoting.protocol.topic import SCHEDULE_TOPIC
from remoting.tasks import TimeSlice

log = structlog.get_logger(__name__)

IDLE_SECONDS = 0.1  # DELAY_FOR_A_WHILE
RETRY_SECONDS = 1.0  # after a failed re-store
ROUND_MESSAGES = 1024  # per level and round, give or take one read batch
READ_BATCH = 32


class ScheduleService(Snapshot):
    def __init__(self, store: MessageStore, file: ConfigFile) -> None:
        self.store = store
        self.file = file
        self.delays = store.delays  # ms per level, level 1 first
        self.offsets: dict[int, int] = {}
        self._wake = asyncio.Event()
        self._slice = TimeSlice()
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
            wait = min(
                [await self._deliver_level(level) for level in range(1, len(self.delays) + 1)]
            )
            if wait > 0:
                try:
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                except TimeoutError:
                    pass

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
                if not await self._restore(msg):
                    self._advance(level, msg.queue_offset)
                    return RETRY_SECONDS
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

    async def _restore(self, delayed: MessageExt) -> bool:
        """Store ``delayed`` again under its real topic and queue, without DELAY."""
        props = dict(delayed.properties)
        props.pop(Prop.DELAY, None)
        try:
            topic, queue_id = props[Prop.REAL_TOPIC], int(props[Prop.REAL_QID])
        except (KeyError, ValueError):
            log.error("delayed_message_without_real_topic", offset=delayed.commit_log_offset)
            return True  # nothing to deliver it to: skip it
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
        if result.status is not PutStatus.PUT_OK:
            log.warning("delayed_delivery_failed", topic=topic, status=result.status.name)
            return False
        return True
