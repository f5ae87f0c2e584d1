"""The timer wheel survives (issue 36): SIGKILL mid-stream (every acknowledged timer
delivered once, none early), a restart after timers fell due, roll-over beyond a small
window. Real broker processes (tests/cluster.py)."""

from __future__ import annotations

import asyncio
import time

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol.message import MessageExt
from aiorocketmq.remoting.protocol.timer import TimerProp
from tests.broker.timer_wire import (
    now_ms,
    read_all,
    send_at,
    timer_batch,
    timer_send,
    wait_count,
    waiting,
)
from tests.broker.wire import create_topic, max_offset
from tests.cluster import Cluster

IN_FLIGHT = 16
MAX_SENDS = 50_000


def _once_each(got: list[MessageExt]) -> dict[bytes, MessageExt]:
    by_body: dict[bytes, MessageExt] = {}
    for msg in got:
        assert msg.body not in by_body, f"{msg.body!r} delivered twice"
        by_body[msg.body] = msg
    return by_body


async def test_sigkill_mid_stream_delivers_every_acked_timer_once(cluster: Cluster) -> None:
    """Timers sent without pause, due 0.5-2.5 s later; SIGKILL while sends are acknowledged
    and earlier timers are being delivered; after the restart every acknowledged timer
    arrives exactly once and none before its time."""
    b = cluster.add_broker("broker-a")
    cli = RemotingClient()
    dues: dict[bytes, int] = {}  # every body sent (acknowledged or not) -> its due time
    acked: set[bytes] = set()
    killed = asyncio.Event()
    counter = iter(range(MAX_SENDS))
    try:
        assert (await cli.invoke(b.addr, create_topic("TimerK", 1))).code == 0

        async def sender() -> None:
            for i in counter:
                if killed.is_set():
                    return
                body = b"%06d" % i
                due = now_ms() + 500 + (i * 37) % 2000
                dues[body] = due
                cmd = timer_send("TimerK", body, {TimerProp.DELIVER_MS: str(due)})
                try:
                    resp = await cli.invoke(b.addr, cmd, timeout=5)
                except (RemotingError, OSError, TimeoutError):  # died under it: not acked
                    return
                if resp.code == 0:
                    acked.add(body)

        senders = [asyncio.create_task(sender()) for _ in range(IN_FLIGHT)]
        deadline = time.monotonic() + 60
        while await max_offset(cli, b.addr, "TimerK", 0) < 100:  # deliveries under way
            assert time.monotonic() < deadline, "no timer fell due"
            await asyncio.sleep(0.02)
        cluster.kill_broker("broker-a")
        killed.set()
        await asyncio.gather(*senders)
        print(f"sent={len(dues)} acked={len(acked)} at the kill")
        assert acked and len(dues) < MAX_SENDS, "the kill came after the sends"
        cluster.start_broker("broker-a")
        await cli.close()
        cli = RemotingClient()
        await wait_count(cli, b.addr, "TimerK", len(acked), 60)
        latest = max(dues.values())
        # an unacknowledged one stored before the kill has had its chance too (to come twice)
        await asyncio.sleep(max(0.0, (latest + 1200 - now_ms()) / 1000))
        got = _once_each(await read_all(cli, b.addr, "TimerK"))
    finally:
        await cli.close()
    missing = acked - set(got)
    assert not missing, f"{len(missing)} acknowledged timers lost, e.g. {sorted(missing)[:5]}"
    early = [m.body for m in got.values() if m.store_timestamp < dues[m.body]]
    assert not early, f"delivered early: {early[:5]}"
    print(f"delivered={len(got)} (acked {len(acked)})")


async def test_restart_after_timers_fell_due_and_roll_over(cluster: Cluster) -> None:
    """timerRollWindowSlot=2 (a 2 s window): 200 timers 3 s ahead and one 6 s ahead roll over
    (put back into the wheel, TIMER_ROLL_TIMES counted). The broker stops before any falls
    due and starts after the 200 did: each arrives then, once, none early; the far one
    still arrives on time, having rolled."""
    b = cluster.add_broker("broker-a", timerRollWindowSlot="2")
    cli = RemotingClient()
    try:
        assert (await cli.invoke(b.addr, create_topic("TimerS", 1))).code == 0
        due, far = now_ms() + 3000, now_ms() + 6000
        bodies = [b"%04d" % i for i in range(200)]
        resp = await cli.invoke(
            b.addr, timer_batch("TimerS", bodies, {TimerProp.DELIVER_MS: str(due)})
        )
        assert resp.code == 0, resp.remark
        await send_at(cli, b.addr, "TimerS", b"far", far)
        deadline = time.monotonic() + 10
        while await waiting(cli, b.addr) < 202:  # the window's last slot: rolled
            assert time.monotonic() < deadline, "nothing rolled"
            await asyncio.sleep(0.05)
        assert await max_offset(cli, b.addr, "TimerS", 0) == 0
        assert cluster.stop_broker("broker-a") == 0
        await cli.close()
        await asyncio.sleep(max(0.0, (due + 1500 - now_ms()) / 1000))  # all fall due while down
        cluster.start_broker("broker-a")
        cli = RemotingClient()
        assert await wait_count(cli, b.addr, "TimerS", 201, 30) == 201
        got = _once_each(await read_all(cli, b.addr, "TimerS"))
    finally:
        await cli.close()
    assert sorted(got) == sorted([*bodies, b"far"])
    assert all(m.store_timestamp >= due for m in got.values())
    assert got[b"far"].store_timestamp >= far
    assert int(got[b"far"].properties[TimerProp.ROLL_TIMES]) >= 1
