"""TimerStore: the durable timer wheel -- TimerLog, TimerWheel and TimerCheck together
(5.x TimerMessageStore's storage half). Pure storage: the broker's TimerService decides
what goes where and delivers.

Every timer message is first a record in the CommitLog under ``rmq_sys_wheel_timer`` queue
0, whose ConsumeQueue the service indexes in order: one TimerLog unit per ConsumeQueue unit,
chained into the unit's slot. The CommitLog is the truth; the TimerLog an index of it:

- ``recover`` keeps the TimerLog's units while they index consecutive ConsumeQueue units
  that the store still has (a unit torn by a power loss, or one whose message the CommitLog
  lost, ends it) and cuts the rest; the service indexes from ``next_cq`` again. Then it
  writes the wheel again from the kept units of slots not yet delivered: one pass over the
  columns of the TimerLog (a million units: well under a second).
- ``progress`` (TimerCheck) says what is delivered; a slot is delivered once, in unit order.
"""

from __future__ import annotations

import collections
import mmap
from collections.abc import Iterator
from pathlib import Path

from aiorocketmq.broker.store.timercheck import Progress, TimerCheck
from aiorocketmq.broker.store.timerlog import (
    MAGIC,
    MAGIC_MASK,
    UNIT,
    UNIT_SIZE,
    TimerLog,
    Unit,
)
from aiorocketmq.broker.store.timerwheel import TimerWheel


class TimerStore:
    def __init__(self, root: Path, *, precision_ms: int, window_slots: int,
                 segment_units: int) -> None:  # fmt: skip
        self.precision = precision_ms
        self.window_ms = window_slots * precision_ms
        # every pending slot lies in [read_ms, read_ms + 2 windows): the ring's own slots
        self.log = TimerLog(root / "timerlog", segment_units)
        self.wheel = TimerWheel(root / "timerwheel", window_slots * 2, precision_ms)
        self.check = TimerCheck(root / "config" / "timercheck")
        self.progress = Progress(-1, 0, -1)
        self.next_cq = 0  # the next rmq_sys_wheel_timer ConsumeQueue unit to index
        self.pending = 0  # units in slots not delivered yet

    def recover(self, cq_min: int, cq_max: int, phys_max: int, now_ms: int) -> None:
        """Load the files after a start, given the wheel topic's ConsumeQueue bounds and
        the CommitLog's end as the store recovered them."""
        del phys_max  # a unit's message beyond the CommitLog's end has no ConsumeQueue unit
        saved = self.check.read()
        if saved is None:
            saved = Progress(now_ms // self.precision * self.precision, 0, -1)
        self.progress = saved
        self.log.load()
        end, next_cq = self.log.start, -1
        slots: list[int] = []
        for seg in self.log.segments:
            kept, seg_slots = valid_units(seg.map, next_cq, cq_max)
            seg.max_slot = max(seg_slots, default=-1)
            if kept:
                next_cq = UNIT.unpack_from(seg.map, (kept - 1) * UNIT_SIZE)[3] + 1
            slots += seg_slots
            end = seg.base + kept * UNIT_SIZE
            if kept * UNIT_SIZE < self.log.segment_size:
                break
        self.log.cut(end)
        self.next_cq = max(next_cq, cq_min)
        self._rebuild(slots, self.log.start)

    def reload(self, cq_min: int, cq_max: int, phys_max: int) -> None:
        """The store cut its log back (a failover): ``recover`` again, with the wheel
        topic's ConsumeQueue as the cut left it -- the units of messages past the cut (a
        suffix: units follow the ConsumeQueue) go, the wheel is written again from the rest.
        The progress is the one saved (``save`` writes it through)."""
        self.log.close()
        self.recover(cq_min, cq_max, phys_max, self.progress.read_ms)

    def _rebuild(self, slots: list[int], start: int) -> None:
        """The wheel written again from the kept units' slots (``start``: the first's
        position): C loops only (dict, zip, Counter), a million units in well under 2 s."""
        read_ms = self.progress.read_ms
        positions = range(start, start + len(slots) * UNIT_SIZE, UNIT_SIZE)
        last = dict(zip(slots, positions, strict=True))
        first = dict(zip(reversed(slots), reversed(positions), strict=True))
        count = collections.Counter(slots)
        self.wheel.reset()
        pending = 0
        for slot, num in count.items():
            if slot >= read_ms:
                self.wheel.put(slot, first[slot], last[slot], num)
                pending += num
        self.pending = pending - min(self.progress.done, count.get(read_ms, 0))

    # ------------------------------------------------------------ index

    def add(self, slot_ms: int, phys: int, size: int, cq_offset: int, flags: int) -> None:
        """Chain a unit for ConsumeQueue unit ``cq_offset`` into slot ``slot_ms``."""
        slot = self.wheel.get(slot_ms)
        prev = slot.last_pos if slot is not None else -1
        pos = self.log.append(slot_ms, prev, phys, cq_offset, size, flags)
        if slot is None:
            self.wheel.put(slot_ms, pos, pos, 1)
        else:
            self.wheel.put(slot_ms, slot.first_pos, pos, slot.num + 1)
        self.next_cq = cq_offset + 1
        self.pending += 1

    def walk(self, slot_ms: int) -> Iterator[Unit]:
        """The units of a slot, last indexed first (its chain, read backwards)."""
        slot = self.wheel.get(slot_ms)
        pos = slot.last_pos if slot is not None else -1
        while pos >= 0:
            unit = self.log.unit(pos)
            if unit is None or unit.slot_ms != slot_ms:
                return
            yield unit
            pos = unit.prev_pos

    def slot_count(self, slot_ms: int) -> int:
        slot = self.wheel.get(slot_ms)
        return slot.num if slot is not None else 0

    # ------------------------------------------------------------ progress

    def save(self, progress: Progress) -> None:
        self.progress = progress
        self.check.write(progress)

    def delivered(self, n: int) -> None:
        self.pending = max(0, self.pending - n)

    def clean(self) -> int:
        """Delete TimerLog segments the wheel has passed; how many."""
        return self.log.delete_before(self.progress.read_ms)

    def flush(self) -> None:
        self.log.flush()
        self.wheel.flush()
        self.check.flush()

    def close(self) -> None:
        self.log.close()
        self.wheel.close()
        self.check.close()


def valid_units(data: mmap.mmap, first_cq: int, cq_max: int) -> tuple[int, list[int]]:
    """How many units lead a segment validly -- written (magic), indexing consecutive
    ConsumeQueue units from ``first_cq`` (-1: any) below ``cq_max`` -- and their slots.
    Units are written in order, so the written ones are a prefix: its end found by a binary
    search, then checked whole in C (magic column, first and last ConsumeQueue offsets);
    only a segment failing that (a power loss tore it) is walked unit by unit."""
    n = len(data) // UNIT_SIZE
    lo, hi = 0, n  # units [0, lo) written, [hi, n) not
    while lo < hi:
        mid = (lo + hi) // 2
        if UNIT.unpack_from(data, mid * UNIT_SIZE)[5] & MAGIC_MASK == MAGIC:
            lo = mid + 1
        else:
            hi = mid
    kept = lo
    if kept:
        start = UNIT.unpack_from(data, 0)[3]
        first_cq = start if first_cq < 0 else first_cq
        kept = max(0, min(kept, cq_max - first_cq))
    words = memoryview(data).cast("q")
    if kept:
        magics = {m & MAGIC_MASK for m in set(memoryview(data).cast("i")[9 : kept * 10 : 10])}
        first_ok = UNIT.unpack_from(data, 0)[3] == first_cq
        last_ok = UNIT.unpack_from(data, (kept - 1) * UNIT_SIZE)[3] == first_cq + kept - 1
        if magics != {MAGIC} or not (first_ok and last_ok):
            kept = _walk(data, kept, first_cq)
    slots = words[0 : kept * 5 : 5].tolist()
    words.release()
    return kept, slots


def _walk(data: mmap.mmap, most: int, first_cq: int) -> int:
    expect = first_cq
    for k in range(most):
        _slot, _prev, _phys, cq, _size, magic = UNIT.unpack_from(data, k * UNIT_SIZE)
        if cq != expect or magic & MAGIC_MASK != MAGIC:
            return k
        expect += 1
    return most
