"""Reads: ``get_messages`` (DefaultMessageStore.getMessage, protocol.md 5.2's table) and
offsets by store time (5.x SEARCH_OFFSET_BY_TIMESTAMP semantics)."""

from __future__ import annotations

import os
import struct
from typing import Final

from broker.store.commitlog import CommitLog
from broker.store.config import StoreConfig
from broker.store.consumequeue import BLANK_SIZE, ConsumeQueue
from broker.store.results import GetResult, GetStatus
from remoting.protocol.message import SYSFLAG_POS, SysFlag

_Q: Final = struct.Struct(">q")
_I: Final = struct.Struct(">i")


def total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 * 1024**3


class Reader:
    def __init__(self, commitlog: CommitLog, config: StoreConfig) -> None:
        self.commitlog = commitlog
        self.config = config
        # the accessMessageInMemoryMaxRatio rule: data further back than this is "on disk"
        self.memory = total_memory() * config.access_message_in_memory_max_ratio // 100

    def get(
        self,
        cq: ConsumeQueue | None,
        offset: int,
        max_msgs: int,
        max_bytes: int | None,
        tag_codes: frozenset[int] | None,
    ) -> GetResult:
        if cq is None:
            return GetResult(GetStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        low, high = cq.min_offset, cq.max_offset
        if high == 0:
            return GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, 0, low, high)
        if offset < low:
            return GetResult(GetStatus.OFFSET_TOO_SMALL, low, low, high)
        if offset == high:
            return GetResult(GetStatus.OFFSET_OVERFLOW_ONE, offset, low, high)
        if offset > high:
            return GetResult(GetStatus.OFFSET_OVERFLOW_BADLY, high, low, high)
        if cq.segment_missing(offset):
            return GetResult(GetStatus.OFFSET_FOUND_NULL, cq.next_segment_offset(offset), low, high)
        return self._scan(cq, offset, max_msgs, max_bytes, tag_codes)

    def _scan(
        self,
        cq: ConsumeQueue,
        offset: int,
        max_msgs: int,
        max_bytes: int | None,
        tag_codes: frozenset[int] | None,
    ) -> GetResult:
        messages: list[bytes] = []
        status, total, scanned, last_phys = GetStatus.NO_MATCHED_MESSAGE, 0, 0, -1
        max_phys, memory = self.commitlog.max_offset, self.memory
        read_record = self.commitlog.read_record
        cfg = self.config
        byte_cap = (1 << 62) if max_bytes is None else max_bytes
        limit = max(16000, max_msgs * 20) // 20  # ConsumeQueue bytes read per call, as units
        for phys, size, tags in cq.raw_units(offset, limit):
            if 0 < size < BLANK_SIZE:  # not a blank (Unit.blank)
                count = len(messages)
                if count:  # isTheBatchFull: count, then the in-memory or on-disk caps
                    if max_phys - phys > memory:
                        cap = cfg.max_transfer_bytes_on_message_in_disk
                        most = cfg.max_transfer_count_on_message_in_disk
                    else:
                        cap = cfg.max_transfer_bytes_on_message_in_memory
                        most = cfg.max_transfer_count_on_message_in_memory
                    grown = total + size
                    if count >= max_msgs or grown > byte_cap or grown > cap or count >= most:
                        break
                if tag_codes is None or tags in tag_codes:
                    record = read_record(phys)
                    if record is None or len(record) != size:  # the commitlog data is gone
                        status = GetStatus.MESSAGE_WAS_REMOVING if not messages else status
                    else:
                        messages.append(record)
                        total += size
                        last_phys = phys
            scanned += 1
        if messages:
            status = GetStatus.FOUND
        suggest = last_phys >= 0 and max_phys - last_phys > memory
        return GetResult(status, offset + scanned, cq.min_offset, cq.max_offset, messages, suggest)

    # ------------------------------------------------------------ time

    def store_time(self, phys: int) -> int:
        """STORETIMESTAMP of the record at ``phys``, or -1."""
        head = self.commitlog.read(phys, 80)
        if head is None:
            return -1
        born_v6 = _I.unpack_from(head, SYSFLAG_POS)[0] & SysFlag.BORNHOST_V6
        return int(_Q.unpack_from(head, 68 if born_v6 else 56)[0])

    def unit_time(self, cq: ConsumeQueue, offset: int) -> int:
        """Store time of the message at queue ``offset`` (of the next real one for blanks)."""
        for unit in cq.units(offset, 64):
            if not unit.blank:
                return self.store_time(unit.phys)
        return -1

    def offset_by_time(self, cq: ConsumeQueue | None, timestamp: int, *, upper: bool) -> int:
        """LOWER: the first offset stored at or after ``timestamp`` (max if all are older).
        UPPER: the last offset stored at or before it (min if all are newer)."""
        # compat: the 5.x rule, not 4.9.8's nearest unit (fidelity D7; see QueryProcessor)
        if cq is None:
            return 0
        low, high = cq.min_offset, cq.max_offset
        while low < high:  # first offset whose time is > ts (UPPER) or >= ts (LOWER)
            mid = (low + high) // 2
            t = self.unit_time(cq, mid)
            if t < 0 or (t > timestamp if upper else t >= timestamp):
                high = mid
            else:
                low = mid + 1
        if upper:
            return max(cq.min_offset, low - 1)
        return low
