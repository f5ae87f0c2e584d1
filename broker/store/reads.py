"""StoreReads: the read side of MessageStore -- messages by queue offset, queue bounds,
times, by physical offset and by key. Reads never block on writes and never wait."""

from __future__ import annotations

from mypy_extensions import trait

from aiorocketmq.broker.store.commitlog import CommitLog
from aiorocketmq.broker.store.consumequeue import ConsumeQueue
from aiorocketmq.broker.store.index import Index
from aiorocketmq.broker.store.queues import QueueTable
from aiorocketmq.broker.store.reader import Reader
from aiorocketmq.broker.store.results import GetResult, RecordMatch
from aiorocketmq.remoting.errors import MessageDecodeError
from aiorocketmq.remoting.protocol.message import decode_record


@trait  # MessageStore's first base: mypyc compiles one base class and any traits
class StoreReads:
    """Mixed into MessageStore, which sets these."""

    commitlog: CommitLog
    table: QueueTable
    reader: Reader

    @property
    def queues(self) -> dict[tuple[str, int], ConsumeQueue]:
        return self.table.queues

    @property
    def index(self) -> Index:
        return self.table.index

    def get(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msgs: int,
        *,
        max_bytes: int | None = None,
        tag_codes: frozenset[int] | None = None,
        match: RecordMatch | None = None,
        bulk: bool = False,
    ) -> GetResult:
        cq = self.queues.get((topic, queue_id))
        return self.reader.get(cq, offset, max_msgs, max_bytes, tag_codes, match, bulk)

    def min_offset(self, topic: str, queue_id: int) -> int:
        cq = self.queues.get((topic, queue_id))
        return cq.min_offset if cq is not None else 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self.table.queue_max((topic, queue_id))

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
