"""MessageStore: the broker's durable store -- CommitLog, ConsumeQueues, index, flush,
recovery, retention (DefaultMessageStore). Pure storage: no networking.

May import: remoting.protocol, remoting.files, remoting.errors, remoting.tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Callable

import structlog

from broker.store.checkpoint import (
    Checkpoint,
    crashed,
    create_abort,
    lock_store,
    read_checkpoint,
    remove_abort,
    unlock_store,
    write_checkpoint,
)
from broker.store.commitlog import CommitLog
from broker.store.config import FlushDiskType, StoreConfig, delay_levels
from broker.store.consumequeue import ConsumeQueue, storable_topic
from broker.store.dispatch import Dispatch, dispatch_of, queued
from broker.store.flush import Flusher, fsync_all
from broker.store.index import Index
from broker.store.reader import Reader
from broker.store.recovery import ScanReport, scan
from broker.store.results import GetResult, GetStatus, PutResult, PutStatus
from broker.store.retention import Retention
from remoting.errors import MessageDecodeError
from remoting.protocol.message import (
    MessageExt,
    PropertiesTooLong,
    decode_record,
    encode_record,
    now_ms,
)
from remoting.protocol.msgid import offset_msg_id, pack_host
from remoting.tasks import every

__all__ = ["GetResult", "GetStatus", "MessageStore", "PutResult", "PutStatus"]

log = structlog.get_logger(__name__)

DispatchListener = Callable[[str, int, int, int, int], None]


class MessageStore:
    def __init__(self, config: StoreConfig, *, store_host: str) -> None:
        self.config = config
        self.store_host = store_host
        self._host_raw = pack_host(store_host)
        self.root = config.root
        self.commitlog = CommitLog(config.commitlog_dir, config.mapped_file_size_commit_log)
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        self.index = Index(self.root / "index", config.max_hash_slot_num, config.max_index_num)
        self.reader = Reader(self.commitlog, config)
        self.retention = Retention(self.commitlog, self.index, config)
        self.delays = delay_levels(config.message_delay_level)
        sync = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self.flusher = Flusher(
            self.commitlog, sync=sync, interval=config.flush_interval_commit_log / 1000
        )
        self._listeners: list[DispatchListener] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._running = False
        self._read_only = False
        self._broken = False  # a dispatch failed: refuse writes until a restart recovers
        self._lock_fd: int | None = None
        self.recovery: ScanReport | None = None

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Lock, load, recover (before the broker serves anything), start the loops."""
        self._lock_fd = lock_store(self.root)
        began = time.monotonic()
        was_crash, cp = crashed(self.root), read_checkpoint(self.root)
        self.commitlog.load()
        self._load_queues()
        if self.config.message_index_enable:
            self.index.load()
        self.recovery = self._recover(cp, was_crash or cp is None)
        self.flusher.flushed = self.commitlog.max_offset
        create_abort(self.root)
        self.retention.check_disk()
        self._running = True
        self._start_loops()
        r = self.recovery
        log.info(
            "store_recovered",
            crashed=was_crash,
            records=r.records,
            holes=len(r.holes),
            torn_bytes=r.torn,
            max_offset=self.commitlog.max_offset,
            queues=len(self.queues),
            ms=int((time.monotonic() - began) * 1000),
        )

    def _load_queues(self) -> None:
        base = self.root / "consumequeue"
        if not base.is_dir():
            return
        for topic_dir in base.iterdir():
            for qdir in topic_dir.iterdir() if topic_dir.is_dir() else ():
                if qdir.name.isdigit():
                    cq = self._new_queue(topic_dir.name, int(qdir.name))
                    cq.load()

    def _recover(self, cp: Checkpoint | None, full: bool) -> ScanReport:
        size = self.commitlog.segment_size
        if full:
            safe = max(cp.safe if cp else 0, self.commitlog.min_offset)
            start = max(self.commitlog.min_offset, safe - safe % size)
        else:
            assert cp is not None
            start = max(cp.commitlog, self.commitlog.min_offset)
        for cq in self.queues.values():
            cq.truncate_from_phys(start)
        self.commitlog.max_offset = start
        report = scan(self.commitlog, start, self._replay)
        low = self.commitlog.min_offset
        for cq in self.queues.values():
            cq.correct_min(low)
        return report

    def _replay(self, phys: int, size: int) -> None:
        seg = self.commitlog.queue.find(phys)
        assert seg is not None
        msg = decode_record(seg.mm, phys - seg.start)
        self._dispatch(dispatch_of(msg, phys, size, self.delays), notify=False)

    def _start_loops(self) -> None:
        loop = asyncio.get_running_loop()
        cfg = self.config
        self._tasks = [
            loop.create_task(self.flusher.run(), name="store-flush-commitlog"),
            loop.create_task(
                every(
                    cfg.flush_interval_consume_queue / 1000,
                    self._flush_queues,
                    name="flush_consume_queue",
                ),
                name="store-flush-queues",
            ),
            loop.create_task(
                every(cfg.clean_resource_interval / 1000, self._clean, name="clean_resource"),
                name="store-retention",
            ),
        ]

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
        self._close()

    async def shutdown(self) -> None:
        """Stop the loops; make everything durable; write the checkpoint; drop the abort file."""
        if not self._running:
            return
        await self._stop_loops()
        await self.flusher.flush()
        await self._flush_queues()
        end = self.commitlog.max_offset
        await asyncio.to_thread(write_checkpoint, self.root, Checkpoint(end, end, now_ms()))
        remove_abort(self.root)
        self._close()
        log.info("store_shutdown", max_offset=end)

    def _close(self) -> None:
        self.commitlog.close()
        for cq in self.queues.values():
            cq.close()
        self.index.close()
        if self._lock_fd is not None:
            unlock_store(self._lock_fd)
            self._lock_fd = None

    async def _flush_queues(self) -> None:
        """Make ConsumeQueues and index durable; then the checkpoint may move up to here."""
        target = self.commitlog.max_offset
        queues = list(self.queues.values())
        marks = [(cq, cq.max_offset) for cq in queues]
        segments = [seg for cq in queues for seg in cq.dirty_segments()]
        await asyncio.to_thread(fsync_all, segments)
        if self.config.message_index_enable:
            await asyncio.to_thread(self.index.flush)
        for cq, mark in marks:
            cq.flushed = max(cq.flushed, mark)
        cp = Checkpoint(self.flusher.flushed, target, now_ms())
        await asyncio.to_thread(write_checkpoint, self.root, cp)

    async def _clean(self) -> None:
        self.retention.run_round(list(self.queues.values()))

    # ------------------------------------------------------------ writes

    def set_read_only(self, flag: bool) -> None:
        """A slave's store: sends are refused with SERVICE_NOT_AVAILABLE."""
        self._read_only = flag

    def _refusal(self, msgs: list[MessageExt]) -> PutStatus | None:
        if not self._running or self._read_only or self._broken or self.retention.disk_full:
            return PutStatus.SERVICE_NOT_AVAILABLE
        for msg in msgs:
            if len(msg.body) > self.config.max_message_size:
                return PutStatus.MESSAGE_ILLEGAL
            if not storable_topic(msg.topic):
                return PutStatus.MESSAGE_ILLEGAL
        return None

    async def put(self, msg: MessageExt, *, wait_flush: bool = True) -> PutResult:
        return await self.put_batch([msg], wait_flush=wait_flush)

    async def put_batch(self, msgs: list[MessageExt], *, wait_flush: bool = True) -> PutResult:
        """Append ``msgs`` (one topic and queue for a batch: consecutive queue offsets)."""
        refusal = self._refusal(msgs)
        if refusal is not None:
            return PutResult(refusal)
        try:
            result = self._append(msgs)
        except PropertiesTooLong:
            return PutResult(PutStatus.PROPERTIES_SIZE_EXCEEDED)
        except ValueError:
            return PutResult(PutStatus.MESSAGE_ILLEGAL)
        except OSError as exc:
            log.error("commitlog_segment_create_failed", error=str(exc))
            return PutResult(PutStatus.CREATE_MAPPED_FILE_FAILED)
        if self.flusher.sync and wait_flush:
            end = self.commitlog.max_offset
            if not await self.flusher.wait(end, self.config.sync_flush_timeout / 1000):
                log.warning("flush_disk_timeout", end=end)
                return result._replace(status=PutStatus.FLUSH_DISK_TIMEOUT)
        return result

    def _append(self, msgs: list[MessageExt]) -> PutResult:
        """Encode every record first, then reserve one run for them all: a batch is stored
        whole, in one segment, or not at all (CommitLog.putMessages)."""
        stamp = now_ms()
        records = self._encode(msgs, stamp)
        if not records:
            return PutResult(PutStatus.PUT_OK, -1, -1, [], stamp, 0)
        phys = first_phys = self.commitlog.reserve(sum(map(len, records)))
        ids: list[str] = []
        for msg, data in zip(msgs, records, strict=True):
            self.commitlog.write(phys, data)  # stamps the record's physical offset
            msg.commit_log_offset = phys
            self._dispatch(dispatch_of(msg, phys, len(data), self.delays), notify=True)
            ids.append(offset_msg_id(self._host_raw, phys))
            phys += len(data)
        first_offset = msgs[0].queue_offset
        return PutResult(PutStatus.PUT_OK, first_phys, first_offset, ids, stamp, phys - first_phys)

    def _encode(self, msgs: list[MessageExt], stamp: int) -> list[bytes]:
        """The records of ``msgs`` with their queue offsets (the physical offset comes later).
        Raises ValueError (PropertiesTooLong among them) before anything is written."""
        next_offsets: dict[tuple[str, int], int] = {}
        records = []
        for msg in msgs:
            msg.store_host, msg.store_timestamp = self.store_host, stamp
            key = (msg.topic, msg.queue_id)
            if queued(msg.sys_flag):
                offset = next_offsets.get(key)
                msg.queue_offset = self._queue_max(key) if offset is None else offset
                next_offsets[key] = msg.queue_offset + 1
            else:
                msg.queue_offset = 0
            msg.commit_log_offset = 0
            records.append(encode_record(msg))
        return records

    def _queue_max(self, key: tuple[str, int]) -> int:
        cq = self.queues.get(key)
        return cq.max_offset if cq is not None else 0

    def _dispatch(self, d: Dispatch, *, notify: bool) -> None:
        try:
            if d.queued:
                cq = self.queues.get((d.topic, d.queue_id)) or self._new_queue(d.topic, d.queue_id)
                cq.put(d.queue_offset, d.phys, d.size, d.tags_code)
            if d.keys and d.indexed and self.config.message_index_enable:
                self.index.put(d.topic, d.keys, d.phys, d.store_ts)
        except OSError as exc:  # the record is in the CommitLog: a restart re-dispatches it
            self._broken = True
            log.error("dispatch_failed", topic=d.topic, phys=d.phys, error=str(exc))
            return
        if notify and d.queued:
            for listener in self._listeners:
                listener(d.topic, d.queue_id, d.queue_offset, d.tags_code, d.store_ts)

    def _new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        directory = self.root / "consumequeue" / topic / str(queue_id)
        cq = ConsumeQueue(directory, topic, queue_id, self.config.mapped_file_size_consume_queue)
        self.queues[(topic, queue_id)] = cq
        return cq

    def add_dispatch_listener(self, fn: DispatchListener) -> None:
        """``fn(topic, queue_id, queue_offset, tags_code, store_timestamp)`` per new message."""
        self._listeners.append(fn)

    def delete_topic(self, topic: str) -> None:
        """Drop a topic's ConsumeQueues (files too); its CommitLog records age out as usual."""
        for key in [k for k in self.queues if k[0] == topic]:
            self.queues.pop(key).close()
        shutil.rmtree(self.root / "consumequeue" / topic, ignore_errors=True)

    # ------------------------------------------------------------ reads

    def get(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msgs: int,
        *,
        max_bytes: int | None = None,
        tag_codes: frozenset[int] | None = None,
    ) -> GetResult:
        cq = self.queues.get((topic, queue_id))
        return self.reader.get(cq, offset, max_msgs, max_bytes, tag_codes)

    def min_offset(self, topic: str, queue_id: int) -> int:
        cq = self.queues.get((topic, queue_id))
        return cq.min_offset if cq is not None else 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self._queue_max((topic, queue_id))

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(q for t, q in self.queues if t == topic)

    def offset_by_time(
        self, topic: str, queue_id: int, timestamp_ms: int, *, upper: bool = False
    ) -> int:
        return self.reader.offset_by_time(
            self.queues.get((topic, queue_id)), timestamp_ms, upper=upper
        )

    def store_time(self, topic: str, queue_id: int, offset: int) -> int:
        cq = self.queues.get((topic, queue_id))
        unit = cq.unit(offset) if cq is not None else None
        return self.reader.store_time(unit.phys) if unit is not None and not unit.blank else -1

    def earliest_store_time(self, topic: str, queue_id: int) -> int:
        cq = self.queues.get((topic, queue_id))
        if cq is None or cq.min_offset >= cq.max_offset:
            return -1
        return self.reader.unit_time(cq, cq.min_offset)

    def in_disk(self, topic: str, queue_id: int, offset: int) -> bool:
        """checkInDiskByConsumeOffset: is that message further back than the memory ratio
        allows (False when there is no such message)."""
        cq = self.queues.get((topic, queue_id))
        unit = cq.unit(offset) if cq is not None else None
        if unit is None or unit.blank:
            return False
        return self.commitlog.max_offset - unit.phys > self.reader.memory

    def read(self, phys_offset: int) -> bytes | None:
        """The record at a commitlog offset, verified (corrupt records are never served)."""
        return self.commitlog.read_record(phys_offset, verify=True)

    def query(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int) -> list[bytes]:
        """Records of ``topic`` whose KEYS or UNIQ_KEY is ``key``, stored in the time range."""
        out = []
        for phys in self.index.query(topic, key, max_num, begin_ms, end_ms):
            record = self.commitlog.read_record(phys, verify=True)
            if record is None:
                continue
            try:
                msg = decode_record(record)
            except MessageDecodeError:
                continue
            if msg.topic == topic and (key in msg.keys or msg.properties.get("UNIQ_KEY") == key):
                out.append(record)
        return out

    @property
    def max_phys_offset(self) -> int:
        return self.commitlog.max_offset

    @property
    def min_phys_offset(self) -> int:
        return self.commitlog.min_offset
