"""The durable timer wheel's storage (broker/store/timerstore.py): chains per slot, what a
recovery keeps, the wheel written again, progress."""

from __future__ import annotations

import time
from pathlib import Path

from aiorocketmq.broker.store.timercheck import Progress
from aiorocketmq.broker.store.timerlog import UNIT_SIZE
from aiorocketmq.broker.store.timerstore import TimerStore

NOW = 1_800_000_000_000
P = 1000


def _store(root: Path, units: int = 1000) -> TimerStore:
    return TimerStore(root, precision_ms=P, window_slots=100, segment_units=units)


def _filled(root: Path, n: int, units: int = 1000) -> TimerStore:
    ts = _store(root, units)
    ts.recover(0, 0, 0, NOW)
    for i in range(n):
        ts.add(NOW + (i % 5) * P, i * 100, 100, i, 0)
    return ts


def _phys(ts: TimerStore, slot: int) -> list[int]:
    return [u.phys for u in reversed(list(ts.walk(slot)))]


def test_units_chain_per_slot_in_order_across_segments(tmp_path: Path) -> None:
    ts = _filled(tmp_path, 23, units=4)  # 6 segments of 4 units
    assert _phys(ts, NOW + 2 * P) == [i * 100 for i in range(2, 23, 5)]
    assert ts.pending == 23 and ts.next_cq == 23
    assert len(ts.log.segments) == 6


def test_recovery_keeps_every_unit_and_rebuilds_the_wheel(tmp_path: Path) -> None:
    ts = _filled(tmp_path, 23, units=4)
    ts.save(Progress(NOW + P, 2, -1))  # slot NOW delivered, 2 units of the next one too
    ts.wheel.reset()  # a wheel lost whole: rebuilt from the log
    ts.close()
    again = _store(tmp_path, 4)
    again.recover(0, 23, 0, NOW + 10 * P)
    assert again.progress == Progress(NOW + P, 2, -1)
    assert again.next_cq == 23
    assert _phys(again, NOW + 3 * P) == [i * 100 for i in range(3, 23, 5)]
    assert again.slot_count(NOW) == 0  # delivered: not in the wheel any more
    assert again.pending == 23 - 5 - 2


def test_recovery_cuts_at_a_torn_unit_and_at_the_queue_end(tmp_path: Path) -> None:
    ts = _filled(tmp_path, 30, units=8)
    seg = ts.log.segments[1]  # unit 10 torn (a power loss): its magic gone
    seg.map[2 * UNIT_SIZE : 3 * UNIT_SIZE] = bytes(UNIT_SIZE)
    ts.close()
    again = _store(tmp_path, 8)
    again.recover(0, 30, 0, NOW)
    assert again.next_cq == 10 and again.log.end == 10 * UNIT_SIZE
    assert len(again.log.segments) == 2  # the later ones deleted
    assert _phys(again, NOW) == [0, 500]
    again.add(NOW, 1000, 100, 10, 0)  # indexing goes on from there
    assert _phys(again, NOW) == [0, 500, 1000]
    again.close()
    third = _store(tmp_path, 8)
    third.recover(0, 7, 0, NOW)  # the ConsumeQueue holds 7 units only
    assert third.next_cq == 7 and third.pending == 7


def test_a_wheel_of_200000_recovers_fast(tmp_path: Path) -> None:
    """Prints the seconds (the benchmark times 1,000,000 against the 2 s target)."""
    n = 200_000
    ts = TimerStore(tmp_path, precision_ms=P, window_slots=172_800, segment_units=1 << 20)
    ts.recover(0, 0, 0, NOW)
    for i in range(n):
        ts.add(NOW + (i * 7919 % 50_000) * P, i * 200, 200, i, 0)
    ts.close()
    began = time.monotonic()
    again = TimerStore(tmp_path, precision_ms=P, window_slots=172_800, segment_units=1 << 20)
    again.recover(0, n, 0, NOW)
    print(f"recovered {n} pending timers in {time.monotonic() - began:.3f} s")
    assert again.pending == n and again.next_cq == n
    assert again.slot_count(NOW + 7919 * P) == n // 50_000


def test_segments_the_wheel_passed_are_deleted(tmp_path: Path) -> None:
    """A TimerLog segment goes once every unit in it waits in a slot the wheel has passed
    (never the last one); a segment with a later unit stays."""
    ts = _store(tmp_path, 4)
    ts.recover(0, 0, 0, NOW)
    for i in range(12):  # segments: slots NOW, NOW + P, NOW + 2P (unit 9 waits till 9P)
        ts.add(NOW + (9 if i == 9 else i // 4) * P, i * 100, 100, i, 0)
    ts.save(Progress(NOW + 2 * P, 0, -1))
    assert ts.clean() == 2 and [s.base for s in ts.log.segments] == [8 * UNIT_SIZE]
    assert _phys(ts, NOW + 9 * P) == [900]
    ts.close()
    again = _store(tmp_path, 4)
    again.recover(0, 12, 0, NOW + 3 * P)
    assert again.next_cq == 12 and again.pending == 4


def test_the_wheel_file_is_made_at_the_first_timer(tmp_path: Path) -> None:
    """A store that never holds a timer keeps no wheel file (it is fully allocated when made:
    11 MB at the default window; every broker of a test suite paid it, and a suite run filled
    this machine's disk to 91 %); the first timer makes it, and a restart reopens it."""
    idle = _store(tmp_path / "idle")
    idle.recover(0, 0, 0, NOW)
    assert idle.slot_count(NOW) == 0
    idle.save(Progress(NOW, 0, -1))
    idle.close()
    assert not (tmp_path / "idle" / "timerwheel").exists()
    ts = _filled(tmp_path / "used", 3)
    wheel = tmp_path / "used" / "timerwheel"
    assert wheel.stat().st_size == 200 * 32 and wheel.stat().st_blocks * 512 >= 200 * 32
    ts.close()
    again = _store(tmp_path / "used")
    again.recover(0, 3, 0, NOW)
    assert _phys(again, NOW) == [0]
