"""Replication with ACL on (issue 32, r#3115): a slave signs its sync calls to its master with
its inner credentials and authenticates its HA connection (broker/ha_auth.py); a slave without
them gets neither the metadata nor the CommitLog. Real master and slave processes."""

from __future__ import annotations

import asyncio
from typing import Any

from aiorocketmq.remoting.protocol.signature import Credentials
from tests.broker.acl_setup import ADMIN, USER, acl_files, client, inner
from tests.broker.test_replication import SLAVE, caught_up, max_phys, send_many, topic_on
from tests.broker.wire import create_topic
from tests.cluster import BrokerProc, Cluster
from tests.harness import ServerProcess


async def event(proc: ServerProcess, name: str, **fields: Any) -> dict[str, Any]:
    """The first log event ``name`` with ``fields``, once there is one."""
    async with asyncio.timeout(20):
        while True:
            for e in proc.events:
                if e.get("event") == name and all(e.get(k) == v for k, v in fields.items()):
                    return e
            await asyncio.sleep(0.1)


def acl_pair(
    cluster: Cluster, slave_credentials: Credentials | None
) -> tuple[BrokerProc, BrokerProc]:
    sets = acl_files(cluster.root)
    master = cluster.add_broker("broker-a", sets=sets)
    slave_sets = {**sets, **SLAVE}
    if slave_credentials is not None:
        slave_sets["innerClientAuthenticationCredentials"] = inner(slave_credentials)
    return master, cluster.add_broker("broker-a-s", sets=slave_sets)


async def test_a_slave_with_inner_credentials_replicates_from_a_master_with_acl(
    cluster: Cluster,
) -> None:
    """r#3115: the slave's metadata calls (21, 43, 45, 201) are signed; the HA stream is
    authenticated by its hello; the master's CommitLog reaches the slave."""
    master, slave = acl_pair(cluster, ADMIN)
    async with client(ADMIN) as admin:
        assert (await admin.invoke(master.addr, create_topic("AclHa"))).code == 0
        await send_many(admin, master.addr, "AclHa", 200)
        assert await caught_up(admin, master.addr, slave.addr) > 0
        await topic_on(admin, slave.addr, "AclHa")
    assert slave.proc is not None and master.proc is not None
    assert not [e for e in slave.proc.events if e.get("event") == "slave_sync_failed"]
    assert not [e for e in master.proc.events if e.get("event") == "acl_refused"]


async def test_a_slave_without_inner_credentials_gets_nothing(cluster: Cluster) -> None:
    """No hello: the master closes the HA connection (counted and logged as a refusal); the
    unsigned sync calls get the ACL's answer."""
    master, slave = acl_pair(cluster, None)
    assert slave.proc is not None and master.proc is not None
    refused = await event(master.proc, "acl_refused", port="ha")
    failed = await event(slave.proc, "slave_sync_failed")
    assert refused["reason"] == "no_access_key"
    assert "No accessKey is configured" in str(failed["error"])
    async with client(ADMIN) as admin:
        assert (await admin.invoke(master.addr, create_topic("AclHa"))).code == 0
        await send_many(admin, master.addr, "AclHa", 20)
        assert await max_phys(admin, master.addr) > 0
        assert await max_phys(admin, slave.addr) == 0


async def test_a_non_admin_account_may_not_replicate(cluster: Cluster) -> None:
    """The HA stream carries every topic: a hello from a non-admin account is refused."""
    master, slave = acl_pair(cluster, USER)
    assert master.proc is not None
    refused = await event(master.proc, "acl_refused", port="ha")
    assert refused["reason"] == "not_admin" and refused["access_key"] == USER.access_key
    async with client(ADMIN) as admin:
        assert (await admin.invoke(master.addr, create_topic("AclHa"))).code == 0
        await send_many(admin, master.addr, "AclHa", 20)
        assert await max_phys(admin, slave.addr) == 0
