"""minInSyncReplicas unmet (issue 35): a controller-mode SYNC_MASTER whose SyncStateSet has fewer
members refuses a send that waits for the store as 5.x does -- SYSTEM_ERROR "in-sync replicas
not enough", nothing written (CommitLog.asyncPutMessage refuses before the append;
SendMessageProcessor.handlePutMessageResult, rocketmq-all-5.3.3) -- where ours answered
SLAVE_NOT_AVAILABLE having stored it. A send with WAIT=false needs no HA and is stored; once a
second replica joins the SyncStateSet, sends are acknowledged. Real processes: etcd, a name
server, two brokers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode
from tests.broker.test_failover_etcd import group, master_in_route, sync_state_set
from tests.broker.wire import create_topic, max_offset, send_v2
from tests.cluster import Cluster
from tests.etcd import EtcdMember, etcd_server

TOPIC = "MinInSyncT"


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdMember]:
    (tmp_path / "etcd").mkdir()
    with etcd_server(tmp_path / "etcd") as member:
        yield member


def replica(etcd: EtcdMember, broker_id: int) -> dict[str, str]:
    return {**group(etcd, broker_id), "minInSyncReplicas": "2"}


@pytest.mark.timeout(240)
async def test_min_in_sync_replicas_unmet_refuses_unwritten(
    etcd: EtcdMember, cluster: Cluster, client: RemotingClient
) -> None:
    a1 = cluster.add_broker("a1", sets=replica(etcd, 1))
    assert await master_in_route(client, cluster, "TBW102") == a1.addr  # alone: set {1}
    assert (await client.invoke(a1.addr, create_topic(TOPIC, 1))).code == 0

    resp = await client.invoke(a1.addr, send_v2(TOPIC, b"refused", queue_id=0), 10)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough")
    assert await max_offset(client, a1.addr, TOPIC, 0) == 0  # nothing written

    # WAIT=false: no HA asked for (5.x CommitLog.needHandleHA), stored and acknowledged
    quick = send_v2(TOPIC, b"no-wait", queue_id=0, props={"WAIT": "false"})
    assert (await client.invoke(a1.addr, quick, 10)).code == ResponseCode.SUCCESS
    assert await max_offset(client, a1.addr, TOPIC, 0) == 1

    cluster.add_broker("a2", sets=replica(etcd, 2))
    await sync_state_set(etcd, {1, 2})
    async with asyncio.timeout(60):  # the master counts the member it added
        while True:
            resp = await client.invoke(a1.addr, send_v2(TOPIC, b"two", queue_id=0), 10)
            if resp.code == ResponseCode.SUCCESS:
                break
            assert resp.remark == "in-sync replicas not enough", (resp.code, resp.remark)
            await asyncio.sleep(0.2)
    assert await max_offset(client, a1.addr, TOPIC, 0) == 2
