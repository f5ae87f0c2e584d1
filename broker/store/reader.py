"""Reads: ``get_messages`` (DefaultMessageStore.getMessage, protocol.md 5.2's table) and
offsets by store time (5.x SEARCH_OFFSET_BY_TIMESTAMP semantics)."""

from __future__ import annotations

import os
import struct
from typing import Final

from aiorocketmq.broker.store.commitlog import CommitLog, Gather
from aiorocketmq.broker.store.config import StoreConfig
from aiorocketmq.broker.store.consumequeue import BLANK_SIZE, UNIT, ConsumeQueue
from aiorocketmq.broker.store.props import CallFilter, RecordFilter
from aiorocketmq.broker.store.results import GetResult, GetStatus, RecordMatch
from aiorocketmq.remoting.protocol.bigendian import int32_at, int64_at
from aiorocketmq.remoting.protocol.message import SYSFLAG_POS, SysFlag

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
        match: RecordMatch | None = None,
        bulk: bool = False,
    ) -> GetResult:
        """getMessage: up to ``max_msgs`` records from queue ``offset`` whose tag code is in
        ``tag_codes`` (None: any) and whose properties ``match`` accepts (None: any).
        ``bulk`` (ours, a pull's ``bulkPull``): records in memory are capped by
        maxTransferBytesOnMessageInMemory and ``max_msgs`` only, not by
        maxTransferCountOnMessageInMemory; the on-disk caps stay."""
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
        most_mem = min(max_msgs, self.config.max_transfer_count_on_message_in_memory)
        if bulk:
            most_mem = max_msgs
        return self._scan(cq, offset, max_msgs, most_mem, max_bytes, tag_codes, match)

    def _scan(
        self,
        cq: ConsumeQueue,
        offset: int,
        max_msgs: int,
        most_mem: int,
        max_bytes: int | None,
        tag_codes: frozenset[int] | None,
        match: RecordMatch | None,
    ) -> GetResult:
        """``most_mem``: the count cap of records in memory."""
        if tag_codes is None and match is None:
            found = self._at_once(cq, offset, most_mem, max_bytes)
            if found is not None:
                return found
        gather = self.commitlog.gather()  # unit by unit: each record checked as it is taken
        flt = match if match is None or isinstance(match, RecordFilter) else CallFilter(match)
        physs, sizes, scanned, status = self._pick(
            cq, offset, max_msgs, most_mem, max_bytes, tag_codes, gather, flt
        )
        low, high = cq.min_offset, cq.max_offset
        if not physs:
            return GetResult(status, offset + scanned, low, high)
        suggest = self.commitlog.max_offset - physs[-1] > self.memory
        body = gather.take()
        return GetResult(GetStatus.FOUND, offset + scanned, low, high, body, sizes, suggest)

    def _at_once(
        self, cq: ConsumeQueue, offset: int, most: int, max_bytes: int | None
    ) -> GetResult | None:
        """The usual get, in one compiled pass over the units' bytes rather than unit by
        unit: no tag filter, no blank unit, every record in memory and in one CommitLog
        segment (at most ``most`` of them). None when it is not that case: then ``_pick``
        decides unit by unit, with the same outcome where both apply."""
        # and the unit after: a blank there would be scanned past, and stop nothing
        n = min(most + 1, cq.max_offset - offset)
        units = cq.unit_bytes(offset, n) if most >= 1 else None
        if units is None:
            return None
        edge = self.commitlog.max_offset - self.memory  # before it: on disk
        # isTheBatchFull's byte caps: the first record is taken whatever its size
        cap = self.config.max_transfer_bytes_on_message_in_memory
        cap = cap if max_bytes is None else min(cap, max_bytes)
        physs: list[int] = []
        sizes: list[int] = []
        total, full = 0, False
        for at in range(0, n * UNIT, UNIT):
            phys, size = int64_at(units, at), int32_at(units, at + 8)
            if size <= 0 or size >= BLANK_SIZE or phys < edge:
                return None
            if not full:
                if len(sizes) == most or (sizes and total + size > cap):
                    full = True
                else:
                    physs.append(phys)
                    sizes.append(size)
                    total += size
        gather = self.commitlog.gather()
        if not gather.add_all(physs, sizes):
            return None  # a record is not there, or they are in two segments
        body = gather.take()
        low, high = cq.min_offset, cq.max_offset
        return GetResult(GetStatus.FOUND, offset + len(sizes), low, high, body, sizes)

    def _pick(
        self,
        cq: ConsumeQueue,
        offset: int,
        max_msgs: int,
        most_mem: int,
        max_bytes: int | None,
        tag_codes: frozenset[int] | None,
        gather: Gather,
        flt: RecordFilter | None = None,
    ) -> tuple[list[int], list[int], int, GetStatus]:
        """The records to serve from ``offset`` (getMessage's loop): the commitlog offsets
        and sizes of the units that pass the tag filter, ``flt`` on the record's properties
        (isMatchedByCommitLog) and are there (``gather.add``), until the batch is full;
        units scanned; the status if none is."""
        cfg, physs, sizes = self.config, [], []
        status, total, count, scanned = GetStatus.NO_MATCHED_MESSAGE, 0, 0, 0
        # isTheBatchFull: maxMsgNums and the request's bytes, then the in-memory caps, or the
        # on-disk ones for data further back than the memory ratio allows
        byte_cap = (1 << 62) if max_bytes is None else max_bytes
        cap_mem = min(byte_cap, cfg.max_transfer_bytes_on_message_in_memory)
        cap_disk = min(byte_cap, cfg.max_transfer_bytes_on_message_in_disk)
        most_disk = min(max_msgs, cfg.max_transfer_count_on_message_in_disk)
        edge = self.commitlog.max_offset - self.memory  # before it: on disk
        limit = max(16000, max_msgs * 20) // 20  # ConsumeQueue bytes read per call, as units
        for phys, size, tags in cq.raw_units(offset, limit):
            if 0 < size < BLANK_SIZE:  # not a blank (Unit.blank)
                if count:  # the first one is taken whatever its size
                    if phys < edge:
                        if count >= most_disk or total + size > cap_disk:
                            break
                    elif count >= most_mem or total + size > cap_mem:
                        break
                if tag_codes is None or tags in tag_codes:
                    # -1: not there, as gather.add will say
                    if flt is not None and gather.accepts(phys, size, flt) == 0:
                        if not count:
                            status = GetStatus.NO_MATCHED_MESSAGE
                        scanned += 1
                        continue
                    if gather.add(phys, size):
                        physs.append(phys)
                        sizes.append(size)
                        total += size
                        count += 1
                    elif not count:  # the commitlog data is gone
                        status = GetStatus.MESSAGE_WAS_REMOVING
            scanned += 1
        return physs, sizes, scanned, status

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
