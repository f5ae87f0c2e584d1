"""A master's metadata changes, written to its CommitLog as records (broker.meta_records) so
its slaves take them with the HA stream (issue 35 item 5).

Topic and group changes: one record each, appended when the change is made (in the order the
changes are made), and awaited by the change -- on a SYNC_MASTER until a slave holds it, as a
send's put waits (CommitLog.handleHA: at most ``syncFlushTimeout``; no slave, or one too far
behind, answers at once). The change is made whatever the wait says (the master has it; a
slave that missed it copies it on the timer), logged as ``metadata_not_replicated``. A broker
that has had no slave since it started writes no records.

Consumer offsets change with nearly every pull (the pull's commit flag): they are coalesced,
one record for what changed in the last ``OFFSETS_RECORD_SECONDS`` at most;
``offsets_replicated`` waits for the record that covers the commits made so far
(UPDATE_CONSUMER_OFFSET answered by a SYNC_MASTER). A slave writes no records: what it holds
is its master's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Final

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.meta_records import (
    GROUPS,
    META_OFFSET,
    META_QUEUE,
    META_TOPIC,
    OFFSETS,
    TOPICS,
    offsets_record,
    table_record,
)
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.store import MessageStore, PutStatus
from aiorocketmq.remoting.protocol.message import MessageExt, now_ms

log = structlog.get_logger(__name__)

OFFSETS_RECORD_SECONDS: Final = 0.1  # at most ten offsets records a second


class MetaStream:
    def __init__(
        self, ctx: BrokerContext, offsets: ConsumerOffsets, replicated: Callable[[], bool]
    ) -> None:
        """``replicated``: whether a slave has connected since start."""
        self.ctx = ctx
        self.offsets = offsets
        self.replicated = replicated
        self.written = 0  # records appended by this process (a metric, and for tests)
        # offsets changed since the last offsets record; keys removed before those changes
        self._changed: dict[str, dict[int, int]] = {}
        self._reset: set[str] = set()
        self._waiters: list[asyncio.Future[PutStatus | None]] = []  # for the next offsets record
        self._flushing: asyncio.Task[None] | None = None
        self._last_flush = 0.0
        offsets.on_change = self._offset_changed

    @property
    def active(self) -> bool:
        """Whether this broker writes records: a master (read each time: roles change) that
        has had a slave since it started. A broker alone writes none and pays nothing; a
        slave that connects later takes what came before from the timer's full copy (3 s
        after it starts, then every slaveSyncInterval)."""
        return self.replicated() and not self.ctx.config.is_slave

    # ------------------------------------------------------------ topics and groups

    async def topics_changed(self, change: dict[str, Any]) -> None:
        await self._publish(table_record(TOPICS, change), TOPICS)

    async def groups_changed(self, change: dict[str, Any]) -> None:
        await self._publish(table_record(GROUPS, change), GROUPS)

    def _publish(self, body: bytes, table: str) -> Awaitable[PutStatus | None]:
        """Append the record now; the result waits for what a put of it promises (None: it
        holds, or nothing was to be written; else the put's status)."""
        if not self.active:
            return _nothing()
        store = self.ctx.store
        msg = MessageExt(topic=META_TOPIC, body=body, queue_id=META_QUEUE,
                         born_timestamp=now_ms(), born_host=self.ctx.addr)  # fmt: skip
        (result,) = store.put_many([msg])
        if result.status is not PutStatus.PUT_OK:
            log.warning("metadata_not_replicated", table=table, status=result.status.name)
            return _status(result.status)
        self.written += 1
        if not store.waits:
            return _nothing()
        return self._settle(result.phys_offset + result.wrote_bytes, table)

    async def _settle(self, end: int, table: str) -> PutStatus | None:
        status = await self.ctx.store.wait_stored(end)
        if status is not None:
            log.warning("metadata_not_replicated", table=table, status=status.name)
        return status

    # ------------------------------------------------------------ consumer offsets

    def _offset_changed(self, key: str, queues: dict[int, int] | None) -> None:
        """ConsumerOffsets' hook: ``queues`` committed for ``key``, or None: key removed."""
        if not self.active:
            return
        if queues is None:
            self._changed.pop(key, None)
            self._reset.add(key)
        else:
            self._changed.setdefault(key, {}).update(queues)
        if self._flushing is None:
            self._flushing = asyncio.get_running_loop().create_task(self._flush_soon())

    def offsets_replicated(self) -> Awaitable[PutStatus | None]:
        """Until the offsets record covering every commit made so far is stored as a put
        is (on a SYNC_MASTER: a slave holds it, or syncFlushTimeout passed; in controller
        mode also: this broker may still acknowledge); at once on any other broker (nothing
        is promised there). The record's status: None, or what its put's wait said."""
        store = self.ctx.store
        if self._flushing is None or (store.replicate is None and store.ack_gate is None):
            return _nothing()
        fut: asyncio.Future[PutStatus | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        return fut

    async def _flush_soon(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            pause = self._last_flush + OFFSETS_RECORD_SECONDS - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
        finally:
            self._flushing = None  # commits from now on start the next record
            self._last_flush = loop.time()
        changed, reset, waiters = self._changed, self._reset, self._waiters
        self._changed, self._reset, self._waiters = {}, set(), []
        status: PutStatus | None = None
        try:
            if changed or reset:
                status = await self._publish(offsets_record(changed, reset), OFFSETS)
        finally:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(status)

    async def close(self) -> None:
        """Write what is pending now (a master stopping), then stop."""
        task, self._flushing = self._flushing, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.active and (self._changed or self._reset):
            changed, reset = self._changed, self._reset
            self._changed, self._reset = {}, set()
            await self._publish(offsets_record(changed, reset), OFFSETS)
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters = []


def meta_mark(store: MessageStore) -> dict[str, str]:
    """The ext field of a full copy's answer (21, 43, 201): how many records are written,
    all of whose changes the copy holds (a change and its record are made together)."""
    return {META_OFFSET: str(store.max_offset(META_TOPIC, META_QUEUE))}


async def _nothing() -> None:
    return None


async def _status(status: PutStatus) -> PutStatus:
    return status
