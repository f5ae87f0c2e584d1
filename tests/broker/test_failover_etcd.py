"""A broker group fails over by itself (issue 35 items 1-2; broker.failover): three broker
processes in controller mode with a real etcd and a name server. One is elected master and is
brokerId 0 in the route; kill -9 it and a SyncStateSet slave is elected, is brokerId 0, and
an SDK producer's sends succeed again, every acknowledged message on it; the old master,
restarted, follows the new one and copies its log."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.broker.controller.controller import Controller
from aiorocketmq.client import Message, Producer, SendStatus
from aiorocketmq.client.core.api import update_consumer_offset
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode
from tests.broker.test_replication import caught_up
from tests.broker.test_roles import QUEUES, messages, route
from tests.broker.wire import create_topic, max_offset, send_v2
from tests.cluster import BrokerProc, Cluster
from tests.etcd import EtcdMember, etcd_server
from tests.harness import ROOT
from tests.scrape import scrape

TOPIC = "FailoverEtcdT"


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdMember]:
    (tmp_path / "etcd").mkdir()
    with etcd_server(tmp_path / "etcd") as member:
        yield member


def group(etcd: EtcdMember, broker_id: int) -> dict[str, str]:
    return {
        "brokerName": "broker-a",
        "brokerId": str(broker_id),
        "brokerRole": "SYNC_MASTER",  # a master waits for a SyncStateSet slave
        "enableControllerMode": "true",
        "controllerAddr": etcd.endpoint,
        "controllerHeartBeatTimeoutMills": "3000",
        "allAckInSyncStateSet": "true",
        "haSendHeartbeatInterval": "300",
        "slaveSyncInterval": "300",
        "registerNameServerPeriod": "1000",
        "haMaxTimeSlaveNotCatchup": "3000",
    }


async def master_in_route(
    cli: RemotingClient, cluster: Cluster, topic: str, not_addr: str = "", timeout: float = 60
) -> str:
    """Until the route names a master (brokerId 0) other than ``not_addr``; its address."""
    async with asyncio.timeout(timeout):
        while True:
            try:
                addrs = await route(cli, cluster, topic)
            except AssertionError:  # no route yet
                addrs = {}
            if addrs.get(0, not_addr) != not_addr:
                return addrs[0]
            await asyncio.sleep(0.1)


async def sent(cli: RemotingClient, addr: str, body: bytes, queue_id: int) -> bool:
    """One send; True when acknowledged SEND_OK (a master without a SyncStateSet slave yet
    answers SLAVE_NOT_AVAILABLE, a fenced or demoted one SERVICE_NOT_AVAILABLE)."""
    resp = await cli.invoke(addr, send_v2(TOPIC, body, queue_id=queue_id), 10)
    return resp.code == ResponseCode.SUCCESS


async def sync_state_set(etcd: EtcdMember, want: set[int], timeout: float = 60) -> None:
    """Until the group's SyncStateSet in etcd is ``want`` (read as mqadmin would: a
    Controller never started, reading only)."""
    reader = Controller(
        controller_addr=etcd.endpoint,
        cluster="DefaultCluster",
        broker_name="broker-a",
        broker_id=99,
        broker_addr="127.0.0.1:1",
    )
    try:
        async with asyncio.timeout(timeout):
            while True:
                if set((await reader.read_state()).sync_state_set) == want:
                    return
                await asyncio.sleep(0.1)
    finally:
        await reader.etcd.close()


def by_addr(cluster: Cluster, addr: str) -> BrokerProc:
    (found,) = [b for b in cluster.brokers.values() if b.addr == addr]
    return found


@pytest.mark.timeout(400)
async def test_master_killed_a_slave_takes_over_and_the_old_one_follows(
    etcd: EtcdMember, cluster: Cluster, client: RemotingClient
) -> None:
    for i, name in enumerate(("a1", "a2", "a3"), start=1):
        cluster.add_broker(name, sets=group(etcd, i))
    master_addr = await master_in_route(client, cluster, "TBW102")  # the default topic's route
    master = by_addr(cluster, master_addr)
    resp = await client.invoke(master.addr, create_topic(TOPIC, QUEUES))
    assert resp.code == 0, resp.remark
    acked: list[bytes] = []
    # a SYNC_MASTER acknowledges once its slaves are in the SyncStateSet
    async with asyncio.timeout(60):
        while True:
            if await sent(client, master.addr, b"first", 0):
                break
            await asyncio.sleep(0.2)
    acked.append(b"first")
    await sync_state_set(etcd, {1, 2, 3})  # the slaves joined as they caught up
    for i in range(200):
        body = b"m%05d" % i + bytes(i % 500)
        assert await sent(client, master.addr, body, i % QUEUES)
        acked.append(body)

    cluster.kill_broker(master.name)
    lost = time.monotonic()
    new_addr = await master_in_route(client, cluster, TOPIC, not_addr=master.addr)
    assert new_addr != master.addr
    addrs = await route(client, cluster, TOPIC)
    assert addrs[0] == new_addr and master.addr not in addrs.values()
    async with Producer("pg_failover_etcd", namesrv_addr=cluster.namesrv_addr) as producer:
        async with asyncio.timeout(60):
            while True:
                try:
                    result = await producer.send(Message(TOPIC, b"after"))
                except Exception:  # noqa: BLE001 -- until the new master acknowledges
                    await asyncio.sleep(0.2)
                    continue
                if result.status is SendStatus.SEND_OK:
                    break
                await asyncio.sleep(0.2)
    new = by_addr(cluster, new_addr)
    others = {int(b.sets["brokerId"]) for b in cluster.brokers.values() if b is not master}
    assert int(new.sets["brokerId"]) in others
    await sync_state_set(etcd, others)  # the new master's set: itself, then the other slave
    assert new.proc is not None
    seen = await scrape(new.proc.metrics_port())  # the controller's view on /metrics
    assert seen[("rocketmq_controller_role", frozenset({("role", "MASTER")}))] == 1
    assert seen[("rocketmq_controller_master_epoch", frozenset())] >= 2
    assert seen[("rocketmq_controller_elections_won_total", frozenset())] >= 1
    print(f"failover: first acknowledged SDK send {time.monotonic() - lost:.2f} s after kill -9")
    acked.append(b"after")
    held = {m[4] for m in await messages(client, by_addr(cluster, new_addr), TOPIC)}
    assert set(acked) <= held, f"{len(set(acked) - held)} acknowledged messages missing"

    cluster.start_broker(master.name)  # the old master, same store and port
    async with asyncio.timeout(60):
        while True:
            if (await route(client, cluster, TOPIC)).get(int(master.sets["brokerId"])) == (
                master.addr
            ):
                break  # a slave under its own brokerId
            await asyncio.sleep(0.1)
    assert (await route(client, cluster, TOPIC))[0] == new_addr  # still the master
    assert await sent(client, new_addr, b"later", 1)
    await caught_up(client, new_addr, master.addr, timeout=60)
    await sync_state_set(etcd, {1, 2, 3})  # the old master is back in the set
    copied = await messages(client, master, TOPIC)
    assert copied == await messages(client, by_addr(cluster, new_addr), TOPIC)


def test_controller_mode_needs_a_broker_id(tmp_path: Path) -> None:
    """Every replica sets its own brokerId >= 1 in controller mode: without one, the broker
    refuses to start, saying so."""
    argv = [sys.executable, "-m", "aiorocketmq.broker", "--listen-port", "0", "-n", "127.0.0.1:1"]
    for key, value in (("enableControllerMode", "true"), ("controllerAddr", "127.0.0.1:1"),
                       ("storePathRootDir", str(tmp_path / "store"))):  # fmt: skip
        argv += ["--set", f"{key}={value}"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "every replica of a group sets its own brokerId >= 1" in result.stdout  # its log


@pytest.mark.timeout(300)
async def test_a_master_cut_from_etcd_stops_acknowledging(
    etcd: EtcdMember, cluster: Cluster, client: RemotingClient
) -> None:
    """Fencing on the put path: a master whose lease it cannot renew (etcd frozen) answers
    sends SERVICE_NOT_AVAILABLE -- before etcd could expire the lease -- and SEND_OK again
    once it holds a lease again."""
    sets = {**group(etcd, 1), "brokerRole": "ASYNC_MASTER"}  # alone: no slave to wait for
    broker = cluster.add_broker("a1", sets=sets)
    await master_in_route(client, cluster, "TBW102")
    resp = await client.invoke(broker.addr, create_topic(TOPIC, QUEUES))
    assert resp.code == 0, resp.remark
    assert await sent(client, broker.addr, b"before", 0)
    etcd.pause()
    try:
        async with asyncio.timeout(60):
            while True:
                resp = await client.invoke(broker.addr, send_v2(TOPIC, b"cut", queue_id=0), 10)
                if resp.code == ResponseCode.SERVICE_NOT_AVAILABLE:
                    break
                assert resp.code == ResponseCode.SUCCESS, (resp.code, resp.remark)
                await asyncio.sleep(0.05)
        # a sender that does not wait for the store (WAIT=false) is not told SEND_OK either
        nowait = send_v2(TOPIC, b"cut", queue_id=0, props={"WAIT": "false"})
        resp = await client.invoke(broker.addr, nowait, 10)
        assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE, (resp.code, resp.remark)
        # and a fenced master appends nothing: a replica elected meanwhile writes these
        # offsets anew (a 21-round run saw a deposed master's log hold 74 such sends)
        end = await max_offset(client, broker.addr, TOPIC, 0)
        for props in ({}, {"WAIT": "false"}):
            fenced = send_v2(TOPIC, b"fenced", queue_id=0, props=props)
            resp = await client.invoke(broker.addr, fenced, 10)
            assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE, (resp.code, resp.remark)
        assert await max_offset(client, broker.addr, TOPIC, 0) == end
        # nor is a consumer offset committed two-way (its record cannot be acknowledged)
        commit = update_consumer_offset("cg_fenced", TOPIC, 0, 1)
        resp = await client.invoke(broker.addr, commit, 10)
        assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE, (resp.code, resp.remark)
    finally:
        etcd.resume()
    async with asyncio.timeout(60):
        while True:
            if await sent(client, broker.addr, b"after", 0):
                break
            await asyncio.sleep(0.2)


@pytest.mark.timeout(300)
async def test_a_slave_gone_leaves_the_sync_state_set(
    etcd: EtcdMember, cluster: Cluster, client: RemotingClient
) -> None:
    """SyncStateSet upkeep (5.x maybeShrinkSyncStateSet): a slave killed leaves the set after
    haMaxTimeSlaveNotCatchup, and the master, which waited for every member
    (allAckInSyncStateSet), acknowledges again with the members left."""
    for i, name in enumerate(("a1", "a2", "a3"), start=1):
        cluster.add_broker(name, sets=group(etcd, i))
    master = by_addr(cluster, await master_in_route(client, cluster, "TBW102"))
    resp = await client.invoke(master.addr, create_topic(TOPIC, QUEUES))
    assert resp.code == 0, resp.remark
    await sync_state_set(etcd, {1, 2, 3})
    slave = next(b for b in cluster.brokers.values() if b is not master)
    cluster.kill_broker(slave.name)
    await sync_state_set(etcd, {1, 2, 3} - {int(slave.sets["brokerId"])})
    async with asyncio.timeout(60):
        while True:
            if await sent(client, master.addr, b"with two", 0):
                break
            await asyncio.sleep(0.2)
