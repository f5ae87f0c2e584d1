"""mqadmin resetOffsetByTime (ResetOffsetByTimeCommand) against the package's cluster: 222 to
each broker of the topic, which tell a running consumer (220); with no consumer online the
brokers answer 206 and mqadmin resets each queue itself as ResetOffsetByTimeOldCommand does
(208, 202, 29/30, 15). ``-f false`` never moves a group forward; ``-c`` asks as a C++ client."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiorocketmq.client import ConsumeStatus, MessageExt
from aiorocketmq.client.admin import api_group
from aiorocketmq.remoting.protocol.codes import LanguageCode
from tests.admin.conftest import Run
from tests.admin.test_group_cmds import Admin, lines, poll, push, run, send
from tests.client.conftest import create_everywhere
from tests.client.test_push import Collect
from tests.cluster import Cluster
from tests.util import wait_until


class Gate(Collect):
    """Records every delivery; while closed, holds the listener (the group's offset stays)."""

    def __init__(self) -> None:
        super().__init__()
        self.open = asyncio.Event()
        self.open.set()

    async def __call__(self, msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        self.msgs.extend(msgs)
        await self.open.wait()
        return ConsumeStatus.CONSUME_SUCCESS


def _queues(progress: dict[str, Any], topic: str) -> list[dict[str, Any]]:
    return [q for q in progress["queues"] if q["topic"] == topic]


def _mine(result: Run, topic: str) -> list[tuple[int, int]]:
    queues = result.json["queues"]
    return [(q["brokerOffset"], q["consumerOffset"]) for q in queues if q["topic"] == topic]


def test_reset_request_says_force_and_cplus() -> None:
    """INVOKE_BROKER_TO_RESET_OFFSET's header as MQClientAPIImpl.invokeBrokerToResetOffset
    writes it; -c makes it a C++ client's request."""
    req = api_group.reset_offset("t", "g", 123, False, cplus=True)
    assert req.code == 222 and req.language == LanguageCode.CPP
    assert req.ext_fields == {"topic": "t", "group": "g", "timestamp": "123", "isForce": "false"}
    plain = api_group.reset_offset("t", "g", -1, True)
    assert plain.language != LanguageCode.CPP and plain.ext_fields["isForce"] == "true"


async def settled(admin: Admin, group: str, topic: str, want: list[tuple[int, int]]) -> None:
    """Until consumerProgress shows each queue of ``topic`` at (broker, consumer) ``want``."""
    argv = ("consumerProgress", "-g", group, "--json")
    await poll(admin, lambda r: r.code == 0 and _mine(r, topic) == want, *argv)


def reset(group: str, topic: str, *more: str) -> tuple[str, ...]:
    return ("resetOffsetByTime", "-g", group, "-t", topic, "-s", *more)


QUEUES = [("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]


async def test_reset_to_now_moves_a_lagging_group_only_when_forced(
    admin: Admin, cluster: Cluster
) -> None:
    topic, group = "TAdmResetForce", "GAdmResetForce"
    await create_everywhere(cluster, topic, 1)
    gate = Gate()
    async with push(cluster, group, topic, gate):
        await send(cluster, topic, 2)
        await settled(admin, group, topic, [(1, 1), (1, 1)])
        gate.open.clear()  # the next two messages reach the listener but are never done
        await send(cluster, topic, 2)
        await wait_until(lambda: len(gate.msgs) == 4, 20)
        await settled(admin, group, topic, [(2, 1), (2, 1)])
        kept = await run(admin, *reset(group, topic, "now", "-f", "false", "--json"))
        assert kept.code == 0, kept.err
        assert [q["offset"] for q in kept.json["queues"]] == [1, 1]
        moved = await run(admin, *reset(group, topic, "now", "--json"))
        assert [q["offset"] for q in moved.json["queues"]] == [2, 2]
        gate.open.set()
        await settled(admin, group, topic, [(2, 2), (2, 2)])


async def test_reset_offset_by_time_tells_the_running_consumer(
    admin: Admin, cluster: Cluster
) -> None:
    """222 to each broker, which tell the consumer (220): it reads the messages again."""
    topic, group = "TAdmReset", "GAdmReset"
    await create_everywhere(cluster, topic, 2)
    got = Collect()
    before = int(time.time() * 1000) - 1000
    async with push(cluster, group, topic, got):
        await send(cluster, topic, 4)
        await settled(admin, group, topic, [(1, 1)] * 4)
        done = await run(admin, *reset(group, topic, str(before), "--json"))
        assert done.code == 0, done.err
        assert done.json["fallback"] is False and done.json["force"] is True
        rows = [(q["brokerName"], q["queueId"], q["offset"]) for q in done.json["queues"]]
        assert rows == [(*q, 0) for q in QUEUES]
        await wait_until(lambda: len(got.msgs) == 8, 20)
        assert sorted(got.bodies) == sorted([b"m0", b"m1", b"m2", b"m3"] * 2)
        date = time.strftime("%Y-%m-%d#%H:%M:%S:000", time.localtime(before / 1000 - 1))
        table = await run(admin, *reset(group, topic, date))
        assert table.code == 0, table.err
        assert table.out.startswith(
            f"rollback consumer offset by specified group[{group}], "
            f"topic[{topic}], force[true], timestamp(string)[{date}]"
        )
        assert ["#brokerName", "#queueId", "#offset"] in lines(table)
        await wait_until(lambda: len(got.msgs) == 12, 20)


async def test_reset_offset_by_time_without_a_consumer_falls_back(
    admin: Admin, cluster: Cluster
) -> None:
    """No consumer online: 222 answers 206, and mqadmin resets each queue itself (208, 29, 15)."""
    topic, group = "TAdmResetOld", "GAdmResetOld"
    await create_everywhere(cluster, topic, 2)
    before = int(time.time() * 1000) - 1000
    async with push(cluster, group, topic, Collect()):
        await send(cluster, topic, 4)
        await settled(admin, group, topic, [(1, 1)] * 4)
    done = await run(admin, *reset(group, topic, str(before), "--json"))
    assert done.code == 0, done.err
    assert done.json["fallback"] is True
    rows = [
        (
            q["brokerName"],
            q["queueId"],
            q["consumerOffset"],
            q["timestampOffset"],
            q["rollbackOffset"],
        )
        for q in done.json["queues"]
    ]
    assert rows == [(*q, 1, 0, 0) for q in QUEUES]
    await settled(admin, group, topic, [(1, 0)] * 4)  # the brokers took the new offsets (15)
    behind = (await run(admin, "consumerProgress", "-g", group, "--json")).json
    assert [q["diff"] for q in _queues(behind, topic)] == [1, 1, 1, 1]
    assert behind["diffTotal"] == 4
    # not forced, to "now": the newest offsets are past the group's, so nothing moves
    table = await run(admin, *reset(group, topic, "now", "-f", "false"))
    assert table.code == 0, table.err
    assert "#rollbackOffset" in table.out.splitlines()[1]
    assert ["broker-a", "0", "1", "0", "1", "0"] in lines(table)
