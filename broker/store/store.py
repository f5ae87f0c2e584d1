"""MessageStore: the broker's durable store -- CommitLog, ConsumeQueues, index, flush,
recovery, retention (DefaultMessageStore). Pure storage: no networking."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import shutil
import time
from collections.abc import Awaitable, Callable

import structlog

from aiorocketmq.broker.store import cutmark, warm
from aiorocketmq.broker.store.checkpoint import (
    Checkpoint,
    crashed,
    create_abort,
    lock_store,
    read_checkpoint,
    remove_abort,
    unlock_store,
    write_checkpoint,
)
from aiorocketmq.broker.store.commitlog import CommitLog
from aiorocketmq.broker.store.config import FlushDiskType, StoreConfig, delay_levels
from aiorocketmq.broker.store.consumequeue import storable_topic
from aiorocketmq.broker.store.disk import Disk
from aiorocketmq.broker.store.dispatch import dispatch_of, index_keys
from aiorocketmq.broker.store.epochs import EpochFile
from aiorocketmq.broker.store.flush import Flusher, Rounds, fsync_all
from aiorocketmq.broker.store.highwater import HighWater
from aiorocketmq.broker.store.many import Appender, plan_puts, put_many, settle_many
from aiorocketmq.broker.store.memory import Releaser
from aiorocketmq.broker.store.queues import INDEX, QueueTable
from aiorocketmq.broker.store.reader import Reader
from aiorocketmq.broker.store.reads import StoreReads
from aiorocketmq.broker.store.recovery import ScanReport, recover
from aiorocketmq.broker.store.replica import Replica
from aiorocketmq.broker.store.results import PutResult, PutStatus
from aiorocketmq.broker.store.retention import Retention
from aiorocketmq.broker.store.segment import FsyncDeferred
from aiorocketmq.remoting.protocol.message import MessageExt, PropertiesTooLong, RecordPlan, now_ms
from aiorocketmq.remoting.protocol.msgid import offset_msg_id, pack_host
from aiorocketmq.remoting.tasks import every

log = structlog.get_logger(__name__)

DispatchListener = Callable[[str, int, int, int, int], None]


class MessageStore(StoreReads, Replica, Appender):
    def __init__(self, config: StoreConfig, *, store_host: str) -> None:
        self.config = config
        self.store_host = store_host
        self._host_raw = pack_host(store_host)
        self.root = root = config.root
        cl_dir = config.commitlog_dir
        self.disk = Disk(
            root,
            cl_dir,
            warning_ratio=config.disk_space_warning_level_ratio,
            floor_bytes=config.disk_space_free_floor_mb << 20,
        )
        self.commitlog = CommitLog(
            cl_dir,
            config.mapped_file_size_commit_log,
            lambda n: self.disk.check(n, cl_dir),
            step=config.commit_log_allocate_step_mb << 20,
        )
        self.highwater = HighWater(root)
        self.epochs = EpochFile(root)  # which master epoch wrote which part of the log
        self.delays = delay_levels(config.message_delay_level)
        self.table = QueueTable(root, config, self.disk, self.delays)
        self.reader = Reader(self.commitlog, config)
        self.releaser = Releaser(self.commitlog, self.table)
        self.retention = Retention(self.commitlog, self.table.index, config, self.disk)
        sync = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self.flusher = Flusher(
            self.commitlog,
            sync=sync,
            interval=config.flush_interval_commit_log / 1000,
            on_error=self._io_failed,
            # durable up to a record boundary (not inside a record a slave's raw bytes end
            # inside), so the checkpoint's offsets always are one
            end=lambda: self.dispatched_phys_offset,
        )
        self.rounds = Rounds()
        self._tasks: list[asyncio.Task[None]] = []
        self._running = False
        self._slave = False
        self._term = 0  # bumped when a master's store becomes a slave's (set_slave)
        # SYNC_MASTER (the broker's replication sets it): awaited after a put that waits,
        # with the put's end offset; a status replaces PUT_OK (CommitLog.handleHA)
        self.replicate: Callable[[int], Awaitable[PutStatus | None]] | None = None
        # controller mode (broker.failover): asked last, once the put is stored and waited
        # for; False answers SERVICE_NOT_AVAILABLE (a master that cannot prove its lease)
        self.ack_gate: Callable[[], bool] | None = None
        # controller mode (broker.failover): asked before a put that waits is appended; False
        # refuses it IN_SYNC_REPLICAS_NOT_ENOUGH with nothing written (5.x CommitLog
        # .asyncPutMessage: fewer than minInSyncReplicas in the SyncStateSet)
        self.admit_ha: Callable[[], bool] | None = None
        self._pending_from: int | None = None
        self._stalled_at = -1
        self._cuts = 0
        self.cut_listeners: list[Callable[[int], None]] = []
        self.io_error: str | None = None  # a write or fsync failed: no put until a restart
        self._create_error = ""  # the last file-creation failure logged (once per change)
        self._checkpoint_error = ""
        self._lock_fd: int | None = None
        self.recovery: ScanReport | None = None

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Lock, load, recover (before the broker serves anything), start the loops."""
        self._lock_fd = lock_store(self.root)
        began = time.monotonic()
        was_crash, cp = crashed(self.root), read_checkpoint(self.root)
        self.commitlog.load()
        self.table.load()
        cut_at = cutmark.read(self.root)  # a cut a crash interrupted: finished first
        if cut_at is not None:
            cp = self._resume_cut(cut_at)
        full = was_crash or cp is None or cut_at is not None
        queues, limit = list(self.queues.values()), self.highwater.read()
        self.recovery = recover(self.commitlog, queues, cp, self._replay, full=full, limit=limit,
                                stop=cut_at)  # fmt: skip
        self.epochs.load()
        if cut_at is not None:
            self._cut_queues(self.commitlog.max_offset, emptied=False)
            self._cut_done()
        else:  # entries the log does not reach (a crash between a cut and its epochs)
            self.epochs.truncate_suffix_by_offset(self.commitlog.max_offset + 1)
        self.commitlog.settle()
        self.highwater.settle(self.commitlog.max_offset, lower=full)
        self.commitlog.highwater = self.highwater
        self.flusher.flushed = self.commitlog.max_offset
        self.rounds.start(self.commitlog.max_offset)
        create_abort(self.root)
        self.disk.refresh()
        self._running = True
        self._start_loops()
        r = self.recovery
        log.info(
            "store_recovered",
            crashed=was_crash,
            records=r.records,
            holes=len(r.holes),
            torn_bytes=r.torn,
            scanned_bytes=r.end - r.start,
            tail_checked=r.tail,
            max_offset=self.commitlog.max_offset,
            queues=len(self.queues),
            behind=len(self.table.behind),
            ms=int((time.monotonic() - began) * 1000),
        )

    def _resume_cut(self, phys: int) -> Checkpoint | None:
        """Before recovery: the checkpoint of an interrupted cut to ``phys`` lowered to it (on
        disk too), the log emptied when the cut was below its first segment; the lowered
        checkpoint. Recovery then replays nothing past ``phys``."""
        log.warning("commitlog_cut_resumed", offset=phys)
        cl = self.commitlog
        emptied = phys < cl.min_offset or not cl.queue.segments
        self._lower_checkpoint(0 if emptied else phys)
        if emptied:
            cl.queue.truncate_after(phys)
            self._cut_queues(0, emptied=True)
        return read_checkpoint(self.root)

    def _start_loops(self) -> None:
        loop = asyncio.get_running_loop()
        cfg = self.config
        jobs = [
            (cfg.clean_resource_interval / 1000, self._clean, "clean_resource"),
            (1.0, self._catch_up, "dispatch_catch_up"),
        ]
        self._tasks = [loop.create_task(self.flusher.run(), name="store-flush-commitlog")]
        for interval, job, name in jobs:
            self._tasks.append(loop.create_task(every(interval, job, name=name), name=name))
        rounds = every(cfg.flush_interval_consume_queue / 1000, self._flush_queues,
                       name="flush_consume_queue", wake=self.rounds.wake)  # fmt: skip
        self._tasks.append(loop.create_task(rounds, name="flush_consume_queue"))

    async def _stop_loops(self) -> None:
        self._running = False
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def abandon(self) -> None:
        """Stop as a crash would: loops stopped and files closed, with no final flush or
        checkpoint and the abort file left behind (recovery tests and benchmarks)."""
        await self._stop_loops()
        await self.highwater.drain()
        self._close()

    async def shutdown(self) -> None:
        """Stop the loops; make everything durable; write the checkpoint; drop the abort file.
        After an I/O error, or with a target still behind, the abort file stays: the next
        start recovers from the last checkpoint, as after a crash."""
        if not self._running:
            return
        await self._stop_loops()
        await self.flusher.flush()
        await self._flush_queues()
        end = self.dispatched_phys_offset  # a record raw bytes end inside is cut at start
        if self.io_error is None and not self.table.behind:
            try:
                await asyncio.to_thread(write_checkpoint, self.root, Checkpoint(end, end, now_ms()))
                remove_abort(self.root)
            except OSError as exc:  # a full disk: the next start recovers as after a crash
                log.error(
                    "checkpoint_not_written", error=str(exc), action="the next start recovers"
                )
        else:
            log.warning(
                "store_stopped_unclean",
                io_error=self.io_error,
                behind=len(self.table.behind),
                action="the next start recovers",
            )
        await self.highwater.drain()
        self._close()
        log.info("store_shutdown", max_offset=end)

    def _close(self) -> None:
        self.commitlog.close()
        self.table.close()
        if self._lock_fd is not None:
            unlock_store(self._lock_fd)
            self._lock_fd = None

    def _io_failed(self, what: str, exc: OSError) -> None:
        """A write or fsync failed: refuse puts and hold the checkpoint until a restart."""
        if self.io_error is None:
            self.io_error = f"{what}: {exc}"
            log.error("store_io_error", what=what, error=str(exc),
                      action="puts refused until a restart; checkpoint held")  # fmt: skip

    async def _flush_queues(self) -> None:
        """Make ConsumeQueues and index durable; then the checkpoint may move up to here
        (never past a record a target still has to get, nor after an I/O error)."""
        if self.rounds.take_early() and not self.flusher.sync:
            await self.flusher.flush()  # the checkpoint then covers what woke this round
        if self.io_error is not None:
            return
        target, cuts = self.dispatched_phys_offset, self._cuts
        dirty = self.table.dirty_segments()
        index_count = self.index.files[-1].count if self.index.files else 0
        try:
            await asyncio.to_thread(fsync_all, [seg for _cq, _mark, segs in dirty for seg in segs])
            if self.config.message_index_enable:
                await asyncio.to_thread(self.index.flush)
        except FsyncDeferred as deferred:  # nothing lost: the next round tries again
            # (named apart from ``exc``: mypyc gives one name one type, mypyc/mypyc#620)
            log.warning("consume_queue_flush_deferred", error=str(deferred))
            return
        except OSError as exc:
            self._io_failed("consume_queue_fsync", exc)
            return
        if cuts != self._cuts:  # truncate_to ran meanwhile: these marks are stale
            return
        for cq, mark, _segs in dirty:
            cq.flushed = max(cq.flushed, mark)
        dispatched = min([target, *self.table.behind.values()])
        cp = Checkpoint(self.flusher.flushed, dispatched, now_ms())
        try:
            await asyncio.to_thread(write_checkpoint, self.root, cp)
        except OSError as exc:  # the old checkpoint stays valid: recovery just scans more
            if str(exc) != self._checkpoint_error:
                log.warning("checkpoint_not_written", error=str(exc))
            self._checkpoint_error = str(exc)
        else:
            self._checkpoint_error = ""
        spans = self.releaser.spans(self.flusher.flushed, dirty, index_count)
        if spans:  # memory.py: the cold pages leave RSS
            await asyncio.to_thread(warm.release, spans)

    async def _clean(self) -> None:
        self.retention.run_round(list(self.queues.values()))

    async def _catch_up(self) -> None:
        if self.table.behind and not self.disk.still_full():
            await self.table.catch_up(self.commitlog)

    # ------------------------------------------------------------ writes

    def reconfigure(self, config: StoreConfig) -> None:
        """Read ``config`` from now on where the store reads its config at each use (limits,
        timeouts, retention: broker.settings.LIVE_KEYS); what it took at start stays."""
        self.config = self.reader.config = self.retention.config = config

    def set_slave(self, flag: bool) -> None:
        """A slave's store: puts are refused with SERVICE_NOT_AVAILABLE, nothing written
        (DefaultMessageStore.checkStoreStatus); reads and raw appends go on. A master made a
        slave (broker.roles) acknowledges nothing from then on: a put still waiting for its
        flush or its slave is answered SERVICE_NOT_AVAILABLE (``wait_stored``)."""
        if flag and not self._slave:
            self._term += 1
        self._slave = flag

    def _refusal(self, msgs: list[MessageExt]) -> PutStatus | None:
        if not self._running or self._slave or self.io_error is not None:
            return PutStatus.SERVICE_NOT_AVAILABLE
        if self._pending_from is not None:  # raw bytes end inside a record: none goes after
            return PutStatus.SERVICE_NOT_AVAILABLE
        if self.disk.full and self.disk.still_full():
            return PutStatus.SERVICE_NOT_AVAILABLE
        behind = self.table.behind
        for msg in msgs:
            if len(msg.body) > self.config.max_message_size:
                return PutStatus.MESSAGE_ILLEGAL
            if not storable_topic(msg.topic):
                return PutStatus.MESSAGE_ILLEGAL
            if behind and (INDEX in behind or self.table.is_behind(msg.topic, msg.queue_id)):
                return PutStatus.SERVICE_NOT_AVAILABLE  # its queue offsets are not known yet
        return None

    def disk_usage(self) -> dict[str, int]:
        """Bytes the store's files have allocated on disk, by kind: commitlog, consumequeue,
        index (the metrics' storage_size_bytes)."""
        return {
            "commitlog": sum(s.backed for s in self.commitlog.queue.segments),
            "consumequeue": sum(s.backed for cq in self.queues.values() for s in cq.queue.segments),
            "index": sum(f.allocated for f in self.index.files),
        }

    def disk_usage_text(self) -> str:
        """Java's diskUtil(), for the SERVICE_NOT_AVAILABLE remark."""
        return self.disk.usage_text()

    async def put(self, msg: MessageExt, *, wait_flush: bool = True) -> PutResult:
        result = self._put_now([msg], wait_flush)
        if wait_flush and result.status is PutStatus.PUT_OK and self.waits:
            return await self._settle(result)
        return result

    async def put_batch(self, msgs: list[MessageExt], *, wait_flush: bool = True) -> PutResult:
        """Append ``msgs`` (one topic and queue for a batch: consecutive queue offsets)."""
        result = self._put_now(msgs, wait_flush)
        if wait_flush and result.status is PutStatus.PUT_OK and self.waits:
            return await self._settle(result)
        return result

    def put_many(self, msgs: list[MessageExt], waits: list[bool] | None = None) -> list[PutResult]:
        """Messages of several requests in one append, a result each, not waiting for the
        flush or the slave (``settle_many`` does; broker/store/many.py). ``waits``: whether
        each one's sender waits (``admit_ha`` is asked for those)."""
        return put_many(self, msgs, waits)

    async def settle_many(self, results: list[PutResult], waits: list[bool]) -> list[PutResult]:
        """``put_many``'s results once what each waiting one's put promises holds."""
        return await settle_many(self, results, waits)

    @property
    def waits(self) -> bool:
        """Whether a put that waits has more to wait for than its append (SYNC_FLUSH, or
        SYNC_MASTER replication, or controller mode's ack gate)."""
        return self.flusher.sync or self.replicate is not None or self.ack_gate is not None

    def _short_of_replicas(self) -> bool:
        """Whether a put that waits is to be refused IN_SYNC_REPLICAS_NOT_ENOUGH now."""
        admit = self.admit_ha
        return admit is not None and not admit()

    def _put_now(self, msgs: list[MessageExt], wait: bool) -> PutResult:
        """The append, or the status refusing it (nothing written then)."""
        refusal = self._refusal(msgs)
        if refusal is not None:
            return PutResult(refusal)
        gate = self.ack_gate
        if gate is not None and not gate():  # fenced (controller mode): it could acknowledge
            # none of it, and a replica elected meanwhile writes these offsets anew: nothing
            # appended (as a slave refuses puts), so no log diverges to be cut back later
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE)
        if wait and self._short_of_replicas():
            return PutResult(PutStatus.IN_SYNC_REPLICAS_NOT_ENOUGH)
        try:
            return self._append(msgs)
        except PropertiesTooLong:
            return PutResult(PutStatus.PROPERTIES_SIZE_EXCEEDED)
        except ValueError:
            return PutResult(PutStatus.MESSAGE_ILLEGAL)
        except OSError as exc:
            return PutResult(self._create_failed(exc))

    async def _settle(self, result: PutResult) -> PutResult:
        if not result.wrote_bytes:
            return result
        status = await self.wait_stored(result.phys_offset + result.wrote_bytes)
        return result if status is None else result._replace(status=status)

    async def wait_stored(self, end: int) -> PutStatus | None:
        """Wait for the flush (SYNC_FLUSH) and the slave (SYNC_MASTER) that puts ending at
        ``end`` promise: None once both hold, else the status saying which did not."""
        term = self._term
        status = await self._wait_stored(end)
        if self._term != term:  # made a slave meanwhile: its log may be cut, never acknowledge
            return PutStatus.SERVICE_NOT_AVAILABLE
        gate = self.ack_gate
        if status is None and gate is not None and not gate():  # asked last: see ack_gate
            return PutStatus.SERVICE_NOT_AVAILABLE
        return status

    async def _wait_stored(self, end: int) -> PutStatus | None:
        timeout = self.config.sync_flush_timeout / 1000
        if self.flusher.sync and not await self.flusher.wait(end, timeout):
            log.warning("flush_disk_timeout", end=end, io_error=self.flusher.failed)
            return PutStatus.FLUSH_DISK_TIMEOUT
        replicate = self.replicate
        if replicate is not None:
            return await replicate(end)
        return None

    def _create_failed(self, exc: OSError) -> PutStatus:
        """A file the put needed could not be made or grown: nothing was written."""
        if exc.errno == errno.ENOSPC:
            self.disk.set_full(str(exc))
            return PutStatus.SERVICE_NOT_AVAILABLE
        if str(exc) != self._create_error:  # once per distinct failure, not per message
            log.error("store_file_create_failed", error=str(exc))
        self._create_error = str(exc)
        return PutStatus.CREATE_MAPPED_FILE_FAILED

    def _append(self, msgs: list[MessageExt]) -> PutResult:
        """Plan every record, make room for their units and index entries, then reserve
        one run for them all: a batch is stored whole, in one segment, or not at all
        (CommitLog.putMessages). Each record is written straight into the segment."""
        stamp = now_ms()
        plans = plan_puts(msgs, stamp, self.store_host, self.table)
        if not plans:
            return PutResult(PutStatus.PUT_OK, -1, -1, [], stamp, 0)
        first_phys, ids, end = self._write(msgs, plans)
        return PutResult(PutStatus.PUT_OK, first_phys, msgs[0].queue_offset, ids, stamp,
                         end - first_phys)  # fmt: skip

    def _write(self, msgs: list[MessageExt], plans: list[RecordPlan]) -> tuple[int, list[str], int]:
        """Reserve one run for planned records, their units and index entries, then write and
        dispatch each; returns the first offset, the message ids and the end. Raises OSError
        (or ValueError for a run longer than a segment) having written nothing."""
        total = plans[0].size if len(plans) == 1 else sum(p.size for p in plans)
        phys = first_phys = self.commitlog.reserve(total)
        keys = [index_keys(m.properties) for m in msgs]
        self.table.reserve(msgs, sum(map(len, keys)) if len(keys) > 1 else len(keys[0]))
        ids: list[str] = []
        write, dispatch, delays = self.commitlog.write_message, self.table.dispatch, self.delays
        for msg, plan, msg_keys in zip(msgs, plans, keys, strict=True):
            msg.commit_log_offset = phys
            write(phys, msg, plan)
            dispatch(dispatch_of(msg, phys, plan.size, delays, msg_keys), notify=True)
            ids.append(offset_msg_id(self._host_raw, phys))
            phys += plan.size
        if phys > self.rounds.due:
            self.rounds.appended(phys)
        if self._create_error:
            self._create_error = ""
        return first_phys, ids, phys

    def add_dispatch_listener(self, fn: DispatchListener) -> None:
        """``fn(topic, queue_id, queue_offset, tags_code, store_timestamp)`` per new message."""
        self.table.listeners.append(fn)

    def add_cut_listener(self, fn: Callable[[int], None]) -> None:
        """``fn(new_end)`` after ``truncate_to`` cut the log back (its ConsumeQueues cut too):
        an index of the store's own (the timer wheel) drops what pointed past the end."""
        self.cut_listeners.append(fn)

    def delete_topic(self, topic: str) -> None:
        """Drop a topic's ConsumeQueues (files too); its CommitLog records age out as usual."""
        self.table.delete_topic(topic)
        shutil.rmtree(self.root / "consumequeue" / topic, ignore_errors=True)
