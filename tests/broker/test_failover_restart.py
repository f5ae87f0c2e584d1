"""A master killed -9 and started again at once (a crash and a service manager's restart),
in controller mode with a real etcd (broker.failover): the restarted broker finds the master
key its dead incarnation left and releases it, so its SyncStateSet slave is elected now
rather than when that key's lease runs out; the restarted one follows it. The lease TTL here
(controllerHeartBeatTimeoutMills, 120 s) is longer than any wait of the test: without the
release nobody could be elected within it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from tests.broker.test_failover_etcd import (
    TOPIC,
    by_addr,
    group,
    master_in_route,
    sent,
    sync_state_set,
)
from tests.broker.test_roles import QUEUES, messages, route
from tests.broker.wire import create_topic
from tests.cluster import Cluster
from tests.etcd import EtcdMember, etcd_server

TTL_MS = "120000"
UP = 60.0  # generous on a busy machine, and half the lease TTL


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdMember]:
    (tmp_path / "etcd").mkdir()
    with etcd_server(tmp_path / "etcd") as member:
        yield member


@pytest.mark.timeout(400)
async def test_a_master_restarted_at_once_hands_over_without_waiting_for_its_lease(
    etcd: EtcdMember, cluster: Cluster, client: RemotingClient
) -> None:
    for i, name in enumerate(("a1", "a2"), start=1):
        cluster.add_broker(name, sets={**group(etcd, i), "controllerHeartBeatTimeoutMills": TTL_MS})
    master = by_addr(cluster, await master_in_route(client, cluster, "TBW102", timeout=UP))
    resp = await client.invoke(master.addr, create_topic(TOPIC, QUEUES))
    assert resp.code == 0, resp.remark
    await sync_state_set(etcd, {1, 2})  # the slave caught up: it may be elected
    acked = []
    async with asyncio.timeout(UP):
        while not await sent(client, master.addr, b"first", 0):  # noqa: ASYNC110 -- polls
            await asyncio.sleep(0.2)
    acked.append(b"first")
    for i in range(50):
        body = b"m%03d" % i
        assert await sent(client, master.addr, body, i % QUEUES)
        acked.append(body)

    cluster.kill_broker(master.name)
    cluster.start_broker(master.name)  # same store, port and brokerId
    new_addr = await master_in_route(client, cluster, TOPIC, not_addr=master.addr, timeout=UP)
    assert new_addr != master.addr
    slave_id = int(master.sets["brokerId"])
    async with asyncio.timeout(UP):  # the restarted one: a slave under its own brokerId
        while (await route(client, cluster, TOPIC)).get(slave_id) != master.addr:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    assert master.proc is not None
    released = [
        e for e in master.proc.events if e.get("event") == "controller_stale_master_released"
    ]
    assert len(released) == 1 and released[0]["epoch"] == 1, released
    async with asyncio.timeout(UP):
        while not await sent(client, new_addr, b"after", 1):  # noqa: ASYNC110 -- polls
            await asyncio.sleep(0.2)
    acked.append(b"after")
    held = {m[4] for m in await messages(client, by_addr(cluster, new_addr), TOPIC)}
    assert set(acked) <= held, f"{len(set(acked) - held)} acknowledged messages missing"
