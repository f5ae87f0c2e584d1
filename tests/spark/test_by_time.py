"""The check of a SEARCH_OFFSET_BY_TIMESTAMP answer (spark/by_time.py), pure: the answers
come from a port of 4.9.8's ConsumeQueue.getOffsetInQueueByTime (one file of units, none
deleted), whose quirks were seen on Apache's 4.9.8 broker by hand
(/work/notes/oracle-34-timestamps.md): the nearest unit when none is stored at the time,
max - 1 when every one is older, and, where several share the time (one batch), whichever the
binary search hits first."""

from __future__ import annotations

import asyncio
import itertools

from aiorocketmq.spark.by_time import Found, first_at_or_after


def search_498(times: list[int], timestamp: int) -> int:
    """ConsumeQueue.getOffsetInQueueByTime (4.9.8) over a queue whose units were stored at
    ``times`` (0 for an empty queue, as its missing file)."""
    if not times:
        return 0
    low, high = 0, len(times) - 1
    target = left = right = -1
    left_value = right_value = -1
    while high >= low:
        mid = (low + high) // 2
        stored = times[mid]
        if stored == timestamp:
            target = mid
            break
        if stored > timestamp:
            high, right, right_value = mid - 1, mid, stored
        else:
            low, left, left_value = mid + 1, mid, stored
    if target != -1:
        return target
    if left_value == -1:
        return right
    if right_value == -1:
        return left
    return right if abs(timestamp - left_value) > abs(timestamp - right_value) else left


def first_498(times: list[int], timestamp: int, first: int = 0) -> tuple[Found, list[int]]:
    """What the check makes of 4.9.8's answer, and the offsets it pulled; units below
    ``first`` are gone (their pulls find nothing)."""
    pulled: list[int] = []

    async def stored_at(offset: int) -> int | None:
        pulled.append(offset)
        return times[offset] if first <= offset < len(times) else None

    answer = search_498(times, timestamp)
    return asyncio.run(first_at_or_after(stored_at, answer, len(times), timestamp)), pulled


def expected(times: list[int], timestamp: int) -> Found:
    at = next((i for i, t in enumerate(times) if t >= timestamp), len(times))
    return Found(at, at < len(times))


def test_a_batch_sharing_the_time_is_read_from_its_first_message() -> None:
    """As on Apache's broker: 4 single sends, a batch of 40 in one millisecond, 6 more; 4.9.8
    answers offset 24 for the batch's time, the check walks back to its first, 4."""
    times = [100, 101, 102, 103] + [110] * 40 + [111, 112, 400, 401, 402, 403]
    assert search_498(times, 110) == 24
    found, pulled = first_498(times, 110)
    assert found == Found(4, True)
    assert len(pulled) <= 2 * 6 + 2  # galloping and halving, not one pull per unit


def test_nearest_answers_before_the_time_move_on() -> None:
    times = [100, 101, 102, 200, 201]
    assert search_498(times, 150) == 2  # nearer the one before
    assert first_498(times, 150)[0] == Found(3, True)
    assert search_498(times, 180) == 3  # nearer the one after
    assert first_498(times, 180)[0] == Found(3, True)
    assert search_498(times, 999) == 4  # every one older: max - 1
    assert first_498(times, 999)[0] == Found(5, False)
    assert first_498(times, 1)[0] == Found(0, True)
    assert first_498([], 1)[0] == Found(0, False)


def test_every_layout_and_time() -> None:
    """Every queue of up to 9 units over store times 0..3 (repeats allowed, in order), every
    time from before the first to after the last: the first unit at or after it."""
    for n in range(10):
        for times in itertools.combinations_with_replacement(range(4), n):
            for t in range(-1, 5):
                assert first_498(list(times), t)[0] == expected(list(times), t), (times, t)


def test_units_gone_below_the_min_offset() -> None:
    """A pull below the min offset finds nothing: taken as before the time."""
    times = [5, 5, 5, 5, 7, 7, 9]
    for t in range(4, 11):
        want = expected(times, t)
        got = first_498(times, t, first=2)[0]
        assert got == Found(max(want.offset, 2), want.matched), t


def test_pulls_for_an_answer_of_ours() -> None:
    """Ours (and 5.x) answer the first unit at or after the time: one pull when it was
    stored after the time (nothing is stored at it), one more before it when at it."""
    times = [100, 110, 110, 110, 120]
    pulled: list[int] = []

    async def stored_at(offset: int) -> int | None:
        pulled.append(offset)
        return times[offset]

    assert asyncio.run(first_at_or_after(stored_at, 1, 5, 110)) == Found(1, True)
    assert pulled == [1, 0]
    pulled.clear()
    assert asyncio.run(first_at_or_after(stored_at, 4, 5, 115)) == Found(4, True)
    assert pulled == [4]
