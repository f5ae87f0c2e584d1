"""Consumer offsets in controller mode (issue 35: "consumer offsets never move backwards past
committed ones"), with real broker processes, a name server and a real etcd.

- A client whose route is stale (the master it knew is a slave now) commits to a slave: a
  controller-mode slave acknowledges no commit and keeps none -- its table is its master's
  copy, the one an election may make current -- so the commit is refused (the SDK then looks
  the master up again) and what the slave answers a query is the master's offset.
- A replica that may be behind (outside the SyncStateSet) answers no offset query, and a
  master's acknowledged commits survive its own restart (its metadata records).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client.core.api import query_consumer_offset, update_consumer_offset
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingTimeoutError
from aiorocketmq.remoting.protocol.codes import LanguageCode, MQVersion, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from tests.broker.test_failover_etcd import by_addr, group, master_in_route, sync_state_set
from tests.broker.test_roles import QUEUES
from tests.broker.wire import create_topic
from tests.cluster import Cluster
from tests.etcd import EtcdMember, etcd_server

TOPIC = "FailoverOffsetsT"
GROUP = "cg_failover_offsets"


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdMember]:
    (tmp_path / "etcd").mkdir()
    with etcd_server(tmp_path / "etcd") as member:
        yield member


async def commit(cli: RemotingClient, addr: str, offset: int, queue_id: int = 0) -> int:
    """A two-way UPDATE_CONSUMER_OFFSET; its answer's code."""
    resp = await cli.invoke(addr, update_consumer_offset(GROUP, TOPIC, queue_id, offset), 10)
    return resp.code


async def queried(cli: RemotingClient, addr: str, queue_id: int = 0) -> int:
    resp = await cli.invoke(addr, query_consumer_offset(GROUP, TOPIC, queue_id), 10)
    assert resp.code == ResponseCode.SUCCESS, (resp.code, resp.remark)
    return int(resp.ext_fields["offset"])


async def queried_in_set(cli: RemotingClient, addr: str) -> int:
    """``queried`` of a replica etcd's SyncStateSet names: it answers once its own watch
    has shown it the set (a moment after etcd holds it)."""
    async with asyncio.timeout(60):
        while True:
            resp = await cli.invoke(addr, query_consumer_offset(GROUP, TOPIC, 0), 10)
            if resp.code != ResponseCode.SERVICE_NOT_AVAILABLE:
                assert resp.code == ResponseCode.SUCCESS, (resp.code, resp.remark)
                return int(resp.ext_fields["offset"])
            await asyncio.sleep(0.1)


@pytest.mark.timeout(300)
async def test_a_slave_in_controller_mode_acknowledges_no_offset(
    etcd: EtcdMember, cluster: Cluster, client: RemotingClient
) -> None:
    for i, name in enumerate(("a1", "a2"), start=1):
        cluster.add_broker(name, sets=group(etcd, i))
    master = by_addr(cluster, await master_in_route(client, cluster, "TBW102"))
    (slave,) = [b for b in cluster.brokers.values() if b is not master]
    resp = await client.invoke(master.addr, create_topic(TOPIC, QUEUES))
    assert resp.code == 0, resp.remark
    await sync_state_set(etcd, {1, 2})
    # acknowledged by the master: the SyncStateSet slave holds it (allAckInSyncStateSet)
    assert await commit(client, master.addr, 10) == ResponseCode.SUCCESS
    assert await queried_in_set(client, slave.addr) == 10

    # a client whose route still names the slave as its group's master
    assert await commit(client, slave.addr, 20) == ResponseCode.SERVICE_NOT_AVAILABLE
    assert await queried(client, slave.addr) == 10  # not kept: on no master
    assert await queried(client, master.addr) == 10

    assert await commit(client, master.addr, 30) == ResponseCode.SUCCESS
    assert await queried(client, slave.addr) == 30  # the master's, with the stream


def asked_as(language: int, version: int, queue_id: int = 0) -> RemotingCommand:
    req = query_consumer_offset(GROUP, TOPIC, queue_id)
    req.language, req.version = language, version
    return req


@pytest.mark.timeout(400)
async def test_a_replica_that_may_be_behind_answers_no_offset_query(
    etcd: EtcdMember, cluster: Cluster, client: RemotingClient
) -> None:
    """A replica outside the SyncStateSet may lack acknowledged commits (it was down when
    they were made): it answers no QUERY_CONSUMER_OFFSET from its table -- SERVICE_NOT_
    AVAILABLE to our SDK and 5.x clients, nothing to a 4.9.8 client (which reads any error
    answer as "no offset", but a timeout as "ask again"). A commit the master stored while
    alone (answered 11, as a send's put) survives its restart before consumerOffset.json
    was saved (its records), and the replica once back in the set answers it too."""
    # consumerOffset.json only at stop: what a kill leaves is what the records say
    slow_file = {"flushConsumerOffsetInterval": "600000"}
    for i, name in enumerate(("a1", "a2"), start=1):
        cluster.add_broker(name, sets={**group(etcd, i), **slow_file})
    master = by_addr(cluster, await master_in_route(client, cluster, "TBW102"))
    (replica,) = [b for b in cluster.brokers.values() if b is not master]
    master_id, replica_id = int(master.sets["brokerId"]), int(replica.sets["brokerId"])
    resp = await client.invoke(master.addr, create_topic(TOPIC, QUEUES))
    assert resp.code == 0, resp.remark
    await sync_state_set(etcd, {1, 2})
    assert await commit(client, master.addr, 10) == ResponseCode.SUCCESS
    assert await queried_in_set(client, replica.addr) == 10

    cluster.kill_broker(replica.name)
    await sync_state_set(etcd, {master_id})
    # stored on the master alone: not acknowledged, as a send's put (no slave holds it)
    assert await commit(client, master.addr, 50) == ResponseCode.SLAVE_NOT_AVAILABLE
    assert await queried(client, master.addr) == 50
    cluster.kill_broker(master.name)

    # the replica back, the master not: it is not in the set, so never elected, and its
    # table (10 at most) lacks the master's 50
    cluster.start_broker(replica.name)
    ours = await client.invoke(replica.addr, query_consumer_offset(GROUP, TOPIC, 0), 10)
    assert ours.code == ResponseCode.SERVICE_NOT_AVAILABLE, (ours.code, ours.ext_fields)
    newer = await client.invoke(replica.addr, asked_as(LanguageCode.JAVA, MQVersion.V5_0_0), 10)
    assert newer.code == ResponseCode.SERVICE_NOT_AVAILABLE, (newer.code, newer.ext_fields)
    with pytest.raises(RemotingTimeoutError):  # a 4.9.8 client: no answer
        await client.invoke(replica.addr, asked_as(LanguageCode.JAVA, MQVersion.V4_9_8), 2)

    # the master back (its file saved nothing since it started): its records hold the 50;
    # re-elected after two lease TTLs, it takes the replica back into the set
    cluster.start_broker(master.name)
    assert await master_in_route(client, cluster, TOPIC) == master.addr
    assert await queried(client, master.addr) == 50
    await sync_state_set(etcd, {master_id, replica_id})
    assert await queried_in_set(client, replica.addr) == 50
