"""QueueTable: the ConsumeQueues and the index, and dispatch into them (the reput side of
DefaultMessageStore: CommitLogDispatcherBuildConsumeQueue, CommitLogDispatcherBuildIndex).

The put path reserves room for a put's units and index entries before its CommitLog append,
so a full disk refuses the put whole. A dispatch that fails anyway (recovery on a full disk,
a file that cannot be opened) leaves that target -- one queue, or the index -- *behind*: it
gets nothing more until ``catch_up`` has replayed the CommitLog from the first record it
missed, and puts to that queue are refused meanwhile (their queue offsets would be wrong).
Every other queue carries on; the store is not marked broken.
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

import structlog

from aiorocketmq.broker.store.commitlog import CommitLog, Scan
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.broker.store.consumequeue import ConsumeQueue
from aiorocketmq.broker.store.disk import Disk
from aiorocketmq.broker.store.dispatch import Dispatch, dispatch_of, queued
from aiorocketmq.broker.store.index import Index
from aiorocketmq.broker.store.segment import MapCache, Segment
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import MessageExt, decode_record
from aiorocketmq.remoting.tasks import TimeSlice

log = structlog.get_logger(__name__)

QueueKey = tuple[str, int]
INDEX: Final = ("", -1)  # the index's key among the targets that can fall behind
Listener = Callable[[str, int, int, int, int], None]


def mapping_limit(configured: int) -> int:
    """At most half the open-files limit: each mapping holds a descriptor (segment.py)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(16, min(configured, soft // 2))


class QueueTable:
    def __init__(self, root: Path, config: StoreConfig, disk: Disk, delays: list[int]) -> None:
        self.root = root
        self.config = config
        self.disk = disk
        self.delays = delays
        self.cache = MapCache(mapping_limit(config.max_mapped_consume_queue_files))
        self.queues: dict[QueueKey, ConsumeQueue] = {}
        self.index = Index(
            root / "index",
            config.max_hash_slot_num,
            config.max_index_num,
            check=lambda n: disk.check(n, root / "index"),
        )
        self.behind: dict[QueueKey, int] = {}  # target -> first CommitLog offset it missed
        self._index_on = config.message_index_enable
        self.listeners: list[Listener] = []

    # ------------------------------------------------------------ queues

    def load(self) -> None:
        base = self.root / "consumequeue"
        if base.is_dir():
            for topic_dir in base.iterdir():
                for qdir in topic_dir.iterdir() if topic_dir.is_dir() else ():
                    if qdir.name.isdigit():
                        self.new_queue(topic_dir.name, int(qdir.name)).load()
        if self.config.message_index_enable:
            self.index.load()

    def new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        directory = self.root / "consumequeue" / topic / str(queue_id)
        cq = ConsumeQueue(
            directory,
            topic,
            queue_id,
            self.config.mapped_file_size_consume_queue,
            cache=self.cache,
            check=lambda n: self.disk.check(n, self.root / "consumequeue"),
        )
        self.queues[(topic, queue_id)] = cq
        return cq

    def queue_max(self, key: QueueKey) -> int:
        cq = self.queues.get(key)
        return cq.max_offset if cq is not None else 0

    # ------------------------------------------------------------ the put path

    def reserve(self, msgs: list[MessageExt], keys: int) -> None:
        """Room for ``msgs``' units (their queue offsets are assigned) and ``keys`` index
        entries, before anything is appended; raises OSError, having written nothing."""
        if len(msgs) == 1:  # the usual put: nothing allocated on the way
            msg = msgs[0]
            if queued(msg.sys_flag):
                key = (msg.topic, msg.queue_id)
                (self.queues.get(key) or self.new_queue(*key)).reserve(msg.queue_offset)
        else:
            last = {(m.topic, m.queue_id): m.queue_offset for m in msgs if queued(m.sys_flag)}
            for key, offset in last.items():
                (self.queues.get(key) or self.new_queue(*key)).reserve(offset)
        if keys and self._index_on:
            self.index.reserve(keys)

    def is_behind(self, topic: str, queue_id: int) -> bool:
        return (topic, queue_id) in self.behind

    def dispatch(self, d: Dispatch, *, notify: bool) -> None:
        """Write ``d``'s unit and index entries; a target that fails falls behind."""
        key = (d.topic, d.queue_id)
        behind = self.behind
        if d.queued and (not behind or key not in behind):
            cq = self.queues.get(key) or self.new_queue(d.topic, d.queue_id)
            try:
                cq.put(d.queue_offset, d.phys, d.size, d.tags_code)
            except OSError as exc:
                self._fell_behind(key, d.phys, exc)
            else:
                if notify:
                    for listener in self.listeners:
                        listener(d.topic, d.queue_id, d.queue_offset, d.tags_code, d.store_ts)
        if d.keys and self._index_on and d.indexed and (not behind or INDEX not in behind):
            try:
                self.index.put(d.topic, d.keys, d.phys, d.store_ts)
            except OSError as exc:
                self._fell_behind(INDEX, d.phys, exc)

    def _fell_behind(self, key: QueueKey, phys: int, exc: OSError) -> None:
        self.behind[key] = phys
        if isinstance(exc, OSError) and exc.errno == 28:
            self.disk.set_full(str(exc))
        what = "index" if key == INDEX else f"{key[0]}:{key[1]}"
        log.error("dispatch_failed", target=what, phys=phys, error=str(exc),
                  action="behind until caught up; other queues carry on")  # fmt: skip

    async def catch_up(self, commitlog: CommitLog) -> None:
        """Replay the CommitLog for the targets behind, from the first record they missed
        (the same records recovery would); yields to the loop as it goes."""
        if not self.behind:
            return
        behind = dict(self.behind)
        pos, pace = min(behind.values()), TimeSlice()
        while pos < commitlog.max_offset and behind:
            seg = commitlog.queue.find(pos)
            if seg is None:
                break
            found = commitlog.check(seg, pos - seg.start)
            if found.kind is Scan.END_OF_SEGMENT:
                pos = seg.end
                continue
            if found.kind is not Scan.RECORD:
                break  # the end, or bytes recovery already reported
            self._redo(seg, pos, found.size, behind)
            pos += found.size
            await pace.tick()
        for key in behind:  # caught up: new records go straight in again
            if self.behind.get(key) == behind[key]:
                del self.behind[key]
                log.info("dispatch_caught_up", target="index" if key == INDEX else key)

    def _redo(self, seg: Segment, phys: int, size: int, behind: dict[QueueKey, int]) -> None:
        try:
            msg = decode_record(seg.mm, phys - seg.start)
        except MessageDecodeError:
            return
        d = dispatch_of(msg, phys, size, self.delays)
        key = (d.topic, d.queue_id)
        try:
            if key in behind and d.queued and phys >= behind[key]:
                cq = self.queues.get(key) or self.new_queue(*key)
                cq.put(d.queue_offset, d.phys, d.size, d.tags_code)
            if INDEX in behind and d.keys and d.indexed and phys >= behind[INDEX]:
                self.index.put(d.topic, d.keys, d.phys, d.store_ts)
        except OSError as exc:
            for target in (key, INDEX):
                behind.pop(target, None)  # still failing: stays behind, tried again later
            log.warning("dispatch_catch_up_failed", phys=phys, error=str(exc))

    # ------------------------------------------------------------ upkeep

    def dirty_segments(self) -> list[tuple[ConsumeQueue, int, list[Segment]]]:
        """Each queue written since its last flush, its mark, and the segments to fsync."""
        return [(cq, cq.max_offset, cq.dirty_segments()) for cq in self.queues.values()
                if cq.dirty]  # fmt: skip

    def delete_topic(self, topic: str) -> None:
        for key in [k for k in self.queues if k[0] == topic]:
            self.queues.pop(key).close()
            self.behind.pop(key, None)

    def all(self) -> Iterable[ConsumeQueue]:
        return self.queues.values()

    def close(self) -> None:
        for cq in self.queues.values():
            cq.close()
        self.index.close()
