"""A slave applies its master's metadata records as the HA stream brings them (broker.
meta_records; issue 35 item 5): each record, once dispatched to the slave's ConsumeQueue --
before the slave reports the bytes to its master, so before a SYNC_MASTER acknowledges the
change -- is applied to the slave's tables in memory at once, its journal line queued.

With the timer (SlaveSynchronize, broker.slave_sync) a full copy arrives now and then too.
Its ``metaOffset`` says how many records it holds: a copy older than a record already
applied is passed over (it would undo the record); one at or past the stream installs, and
the records it already holds are then passed over when they arrive. A copy without
``metaOffset`` (a 4.9.8 master, which writes no records) is taken as it comes, as before.

Not covered: a slave that crashes between taking a record and its journal line reaching the
disk has the change in its CommitLog only; the timer brings it back from a live master.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.meta_records import (
    GROUPS,
    META_QUEUE,
    META_TOPIC,
    OFFSETS,
    TOPICS,
    decode,
    offsets_of,
)
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.store import GetStatus
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import decode_record

log = structlog.get_logger(__name__)

REPLAY_BATCH = 256  # records read at a time at start


class MetaFollower:
    def __init__(self, ctx: BrokerContext, offsets: ConsumerOffsets) -> None:
        self.ctx = ctx
        self.offsets = offsets
        self.next = 0  # the next record's number (queue offset) this process expects
        self.applied = 0  # records applied (a metric, and for tests)
        self.skip_below: dict[str, int] = {}  # per table: records a full copy already holds
        self._saving: set[asyncio.Task[Any]] = set()
        ctx.store.add_dispatch_listener(self._dispatched)

    def admit(self, table: str, meta_offset: str | None) -> bool:
        """Whether a full copy of ``table`` whose answer said ``meta_offset`` may replace
        the slave's (see the module's docstring)."""
        if meta_offset is None:
            return True  # a 4.9.8 master: no records, the copy is all there is
        upto = int(meta_offset)
        if self.next > upto:
            log.debug("slave_copy_behind_stream", table=table, copy=upto, stream=self.next)
            return False
        self.skip_below[table] = upto
        return True

    def _dispatched(
        self, topic: str, queue_id: int, queue_offset: int, _tags: int, _ts: int
    ) -> None:
        if topic != META_TOPIC or queue_id != META_QUEUE or not self.ctx.config.is_slave:
            return
        try:
            record = self._read(queue_offset)
        except (MessageDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("metadata_record_unreadable", offset=queue_offset, error=str(exc))
            return
        if queue_offset < self.next:  # the log was cut back (a new master's history): the
            self.skip_below.clear()  # numbers a full copy held now name other records
        self.next = queue_offset + 1
        table = str(record["table"])
        if queue_offset < self.skip_below.get(table, 0):
            return  # a full copy taken since holds it
        try:
            self._apply(table, record)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("metadata_record_not_applied", offset=queue_offset, error=str(exc))
            return
        self.applied += 1

    def replay_offsets(self, start: int) -> int:
        """At start, before any request: the offsets records from number ``start`` on (the
        ones consumerOffset.json, saved every flushConsumerOffsetInterval, may not hold) to
        the table, in order; how many. A master's acknowledged commit (on its replicas too)
        is then not lost to its own restart; a slave's copy is as it was when it stopped
        (a master elected later answers from it). compat: 4.9.8 loses up to that interval's
        commits to a crash (ConsumerOffsetManager is a ConfigManager)."""
        store = self.ctx.store
        offset = max(start, store.min_offset(META_TOPIC, META_QUEUE))
        end = store.max_offset(META_TOPIC, META_QUEUE)
        applied = 0
        while offset < end:
            got = store.get(META_TOPIC, META_QUEUE, offset, REPLAY_BATCH)
            if got.status is not GetStatus.FOUND or not got.sizes:
                log.warning("offsets_replay_stopped", at=offset, status=got.status.name)
                break
            for i, raw in enumerate(got.messages):
                try:
                    record = decode(decode_record(raw).body)
                    if record["table"] == OFFSETS:
                        self.offsets.apply(*offsets_of(record))
                        applied += 1
                except (MessageDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
                    log.error("metadata_record_unreadable", offset=offset + i, error=str(e))
            if got.next_begin_offset <= offset:
                break
            offset = got.next_begin_offset
        if applied:
            log.info("offsets_replayed", records=applied, since=start, upto=offset)
        return applied

    def _read(self, queue_offset: int) -> dict[str, Any]:
        got = self.ctx.store.get(META_TOPIC, META_QUEUE, queue_offset, 1)
        if got.status is not GetStatus.FOUND or not got.sizes:
            raise ValueError(f"record {queue_offset} not found: {got.status.name}")
        return decode(decode_record(got.body).body)

    def _apply(self, table: str, record: dict[str, Any]) -> None:
        if table == TOPICS:
            self._save(self.ctx.topics.apply(record["change"]))
        elif table == GROUPS:
            self._save(self.ctx.groups.apply(record["change"]))
        elif table == OFFSETS:
            changed, reset = offsets_of(record)
            self.offsets.apply(changed, reset)

    def _save(self, write: Any) -> None:
        task = asyncio.get_running_loop().create_task(write)
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def close(self) -> None:
        if self._saving:
            await asyncio.gather(*self._saving, return_exceptions=True)
