"""aiorocketmq.remoting.tasks.TimeSlice: a long job gives the loop way once per slice, and only
then."""

from __future__ import annotations

import asyncio
import time

from aiorocketmq.remoting.tasks import TimeSlice


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_tick_yields_only_once_the_slice_is_spent() -> None:
    """design.md 10 "never block the loop": within the budget ``tick`` returns without
    suspending (ready callbacks wait); once it is used up, one ``tick`` lets them run and a
    new slice begins."""
    clock = FakeClock()
    work = TimeSlice(0.005, clock=clock)
    ran: list[str] = []
    asyncio.get_running_loop().call_soon(ran.append, "other")
    for _ in range(100_000):  # cheap per item: no yield while time stands still
        await work.tick()
    assert (ran, work.yields, work.spent) == ([], 0, False)
    clock.now += 0.005
    assert work.spent
    await work.tick()
    assert (ran, work.yields, work.spent) == (["other"], 1, False)
    clock.now += 0.004
    await work.tick()  # 4 ms into the new slice: still its turn
    assert work.yields == 1


async def test_pause_always_yields() -> None:
    """TimeSlice.pause gives way at once (between rounds) and restarts the budget."""
    clock = FakeClock()
    work = TimeSlice(0.005, clock=clock)
    ran: list[str] = []
    asyncio.get_running_loop().call_soon(ran.append, "other")
    await work.pause()
    assert (ran, work.yields) == (["other"], 1)


async def test_a_busy_job_shares_the_loop() -> None:
    """A job that never suspends on its own, ticking after each ~0.2 ms item, lets another
    task run about once per 5 ms slice rather than once at the end."""
    work = TimeSlice(0.005)
    turns = 0
    done = False

    async def other() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    async def job() -> None:
        nonlocal done
        for _ in range(500):  # >= 100 ms of work in all
            until = time.monotonic() + 0.0002
            while time.monotonic() < until:
                pass
            await work.tick()
        done = True

    async with asyncio.TaskGroup() as tg:
        tg.create_task(other())
        tg.create_task(job())
    # 100 ms in 5 ms slices is ~20 yields; a slow machine only makes the items longer
    assert work.yields >= 10
    assert turns >= work.yields
