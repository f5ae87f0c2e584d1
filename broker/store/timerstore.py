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
from collections.abc import Iterator
from pathlib import Path

from aiorocketmq.broker.store.timercheck import Progress, TimerCheck
from aiorocketmq.broker.store.timerlog import MAGIC, MAGIC_MASK, UNIT_SIZE, TimerLog, Unit
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
        saved = self.check.read()
        if saved is None:
            saved = Progress(now_ms // self.precision * self.precision, 0, -1)
        self.progress = saved
        self.log.load()
        end, next_cq = self.log.start, -1
        slots: list[int] = []
        positions: list[int] = []
        per_segment: list[tuple[int, list[int]]] = []
        for base, seg_slots, cqs, tails in self.log.columns():
            kept = 0
            expect = cqs[0] if next_cq < 0 and cqs else next_cq
            for cq, tail in zip(cqs, tails, strict=True):
                if cq != expect or (tail >> 32) & MAGIC_MASK != MAGIC or cq >= cq_max:
                    break
                expect += 1
                kept += 1
            if kept:
                next_cq = expect
            per_segment.append((base, seg_slots[:kept]))
            slots += seg_slots[:kept]
            positions += range(base, base + kept * UNIT_SIZE, UNIT_SIZE)
            end = base + kept * UNIT_SIZE
            if kept * UNIT_SIZE < self.log.segment_size:
                break
        del phys_max  # a unit's message beyond the CommitLog's end has no ConsumeQueue unit
        self.log.cut(end)
        for seg, (_base, seg_slots) in zip(self.log.segments, per_segment, strict=False):
            seg.max_slot = max(seg_slots, default=-1)
        self.next_cq = max(next_cq, cq_min)
        self._rebuild(slots, positions)

    def _rebuild(self, slots: list[int], positions: list[int]) -> None:
        read_ms = self.progress.read_ms
        pending = [(s, p) for s, p in zip(slots, positions, strict=True) if s >= read_ms]
        last = dict(pending)
        first = dict(reversed(pending))
        count = collections.Counter(s for s, _p in pending)
        self.wheel.reset()
        for slot, num in count.items():
            self.wheel.put(slot, first[slot], last[slot], num)
        self.pending = len(pending) - min(self.progress.done, count.get(read_ms, 0))

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
