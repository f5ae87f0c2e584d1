"""A queue's first offset stored at or after a time, from the broker's SEARCH_OFFSET_BY_TIMESTAMP
answer checked by pulls (driver side; issue 34 item 2; spark/bounds.py uses it through
spark/cluster.py ``offsets_at``).

Ours and 5.x answer the first unit stored at or after the time (max offset when none is).
4.9.8 does not (ConsumeQueue.getOffsetInQueueByTime, a binary search of the queue's file,
docs/compatibility.md D7):

- no unit stored exactly at the time: the nearer of the last one before and the first one
  after it (ties: the one before), and max - 1 when every unit is older;
- units stored exactly at the time: whichever of them the search hits first, not the first
  of them. Messages of one batch share one store time, so on Apache's 4.9.8 a start at a
  batch's time skipped up to half the batch, and an end there kept it (seen by hand,
  /work/notes/oracle-34-timestamps.md: 20 of 40 rows lost).

So the answer is only a hint: :func:`first_at_or_after` checks the store time there and
searches from it, forward or back, with single-message pulls (galloping, then halving): one
pull when the unit there was stored after the time (no unit is stored at it), two against
ours when it was stored at the time, O(log n) for n units stored in that millisecond.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

StoredAt = Callable[[int], Awaitable[int | None]]


@dataclass(frozen=True)
class Found:
    offset: int  # the first offset stored at or after the time, else the max offset
    matched: bool  # False: no message is stored at or after the time


async def first_at_or_after(
    stored_at: StoredAt, answer: int, high: int, timestamp_ms: int
) -> Found:
    """The first offset below ``high`` (the max offset) whose message was stored at or after
    ``timestamp_ms``, else ``high``; ``answer`` is the broker's, ``stored_at(offset)`` the
    store time of the message there (None: none readable there -- gone, or past the end --
    taken as stored before the time). Store times are taken to be in queue order (the
    broker's clock; a clock stepping back makes any such lookup approximate)."""
    if answer >= high:
        return Found(high, False)
    answer = max(answer, 0)
    stored = await stored_at(answer)
    if stored is not None and stored > timestamp_ms:
        # nothing is stored at the time (a binary search would have hit it), so this is the
        # first unit after it: ours, 5.x and 4.9.8's nearest-after alike
        return Found(answer, True)
    if stored == timestamp_ms:  # one of several stored at the time, maybe not the first
        bad, good = await _gallop_back(stored_at, answer, timestamp_ms)
    else:
        bad, good = await _gallop_forward(stored_at, answer, high, timestamp_ms)
    offset = await _halve(stored_at, bad, good, timestamp_ms)
    return Found(offset, offset < high)


async def _at_or_after(stored_at: StoredAt, offset: int, timestamp_ms: int) -> bool:
    stored = await stored_at(offset)
    return stored is not None and stored >= timestamp_ms


async def _gallop_back(stored_at: StoredAt, good: int, timestamp_ms: int) -> tuple[int, int]:
    """``(bad, good)``: ``bad`` stored before the time (or -1: nothing below is), ``good``
    at or after it."""
    step = 1
    while True:
        probe = good - step
        if probe < 0:
            return -1, good
        if not await _at_or_after(stored_at, probe, timestamp_ms):
            return probe, good
        good, step = probe, step * 2


async def _gallop_forward(
    stored_at: StoredAt, bad: int, high: int, timestamp_ms: int
) -> tuple[int, int]:
    """``(bad, good)``: ``bad`` stored before the time, ``good`` at or after it or ``high``."""
    step = 1
    while True:
        probe = bad + step
        if probe >= high:
            return bad, high
        if await _at_or_after(stored_at, probe, timestamp_ms):
            return bad, probe
        bad, step = probe, step * 2


async def _halve(stored_at: StoredAt, bad: int, good: int, timestamp_ms: int) -> int:
    """The first offset stored at or after the time in ``(bad, good]``."""
    while good - bad > 1:
        mid = (bad + good) // 2
        if await _at_or_after(stored_at, mid, timestamp_ms):
            good = mid
        else:
            bad = mid
    return good
