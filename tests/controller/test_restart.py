"""A master that crashed and is started again (same brokerId, same address) finds the master
key its dead incarnation left, held with a lease etcd keeps alive a full TTL after the crash
(and again after etcd's own restart: its lessor renews every lease when it becomes leader).
With ``release_own_stale`` (broker.failover sets it) it revokes that lease at once, so a
SyncStateSet member is elected without waiting for the TTL; a key naming another address is
never touched. The TTL here (60 s) is longer than any wait of the test: without the release
no member could be elected within it."""

from __future__ import annotations

from aiorocketmq.broker.controller.controller import Role
from aiorocketmq.broker.controller.etcd import Etcd
from aiorocketmq.broker.controller.fence import boot_clock
from aiorocketmq.broker.controller.layout import GroupKeys
from aiorocketmq.broker.controller.state import read_state
from tests.controller.conftest import Node
from tests.etcd import EtcdMember
from tests.util import wait_until

KEYS = GroupKeys("DefaultCluster", "broker-a")
UP = 30.0  # generous on a busy machine, and half the lease TTL below
TTL_MS = 60_000


async def crashed_master(etcd: EtcdMember, nodes: list[Node], observer: Etcd) -> tuple[Node, int]:
    """Broker 1 master, broker 2 its SyncStateSet slave; then broker 1 "crashes": stopped
    without revoking its lease, its master key left alive. The slave, and the dead lease."""
    a = Node(etcd.endpoint, 1, lease_ttl_ms=TTL_MS)
    nodes.append(a)
    await a.ctl.start()
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    b = Node(etcd.endpoint, 2, lease_ttl_ms=TTL_MS)
    nodes.append(b)
    await b.ctl.start()
    await wait_until(lambda: b.told == [("slave", a.addr, 1)], UP)
    await wait_until(lambda: 2 in a.ctl.state.replicas, UP)
    await a.ctl.alter_sync_state_set({1, 2})
    dead = a.ctl.keeper.lease_id
    assert dead is not None
    await a.ctl.close(revoke=False)  # a SIGKILL, as etcd sees it: the lease lives on
    snap = await observer.snapshot(KEYS.prefix)
    master = read_state(KEYS, snap.entries, snap.revision).master
    assert master is not None and (master.broker_id, master.lease) == (1, dead)
    return b, dead


def restarted(etcd: EtcdMember, nodes: list[Node], addr: str | None = None) -> Node:
    """Broker 1 started again, as broker.failover starts a restarted broker."""
    node = Node(etcd.endpoint, 1, lease_ttl_ms=TTL_MS)
    if addr is not None:
        node.addr = node.ctl.broker_addr = addr
    node.ctl.release_own_stale = True
    node.ctl.campaign_after = boot_clock() + 2 * node.ctl.ttl  # the replicas that stayed go first
    nodes.append(node)
    return node


async def test_a_restarted_master_releases_its_dead_incarnations_key(
    etcd: EtcdMember, nodes: list[Node], observer: Etcd
) -> None:
    b, dead = await crashed_master(etcd, nodes, observer)
    again = restarted(etcd, nodes)
    await again.ctl.start()
    # long before the dead lease's TTL: the member is elected, the restarted one follows it
    await wait_until(lambda: b.ctl.role is Role.MASTER, UP)
    assert b.told[-1] == ("master", 2)
    await wait_until(lambda: again.told == [("slave", b.addr, 2)], UP)
    assert again.ctl.released == [dead]
    assert again.ctl.elections == 0
    snap = await observer.snapshot(KEYS.prefix)
    state = read_state(KEYS, snap.entries, snap.revision)
    assert state.master is not None and (state.master.broker_id, state.master_epoch) == (2, 2)
    assert state.replicas == {1: again.addr, 2: b.addr}  # the restarted one registered anew


async def test_a_key_naming_another_address_is_left_to_its_ttl(
    etcd: EtcdMember, nodes: list[Node], observer: Etcd
) -> None:
    """The same brokerId on another address is not proof that the key's holder is gone (two
    brokers configured with one brokerId): that key lives its TTL, and nobody is elected."""
    b, dead = await crashed_master(etcd, nodes, observer)
    other = restarted(etcd, nodes, addr="127.0.0.1:1")
    await other.ctl.start()
    await wait_until(lambda: other.ctl.state.replicas.get(1) == other.addr, UP)
    # what each round does with the key it read, done here once more, to its end
    await other.ctl._tell(other.ctl.state)
    assert other.ctl.released == []
    snap = await observer.snapshot(KEYS.prefix)
    master = read_state(KEYS, snap.entries, snap.revision).master
    assert master is not None and master.lease == dead
    assert b.ctl.role is Role.SLAVE and other.ctl.role is Role.NONE
