"""Election and fencing against a real etcd (tests/etcd.py): brokers' controllers in this
process, a partition between one of them and etcd made by a forwarder that stops moving bytes
(tests/partition.py)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import pytest

from aiorocketmq.broker.controller import campaign
from aiorocketmq.broker.controller.controller import Role
from aiorocketmq.broker.controller.etcd import Etcd
from aiorocketmq.broker.controller.layout import GroupKeys
from aiorocketmq.broker.controller.state import GroupState, Master, Refusal, Refused, read_state
from tests.controller.conftest import Node
from tests.etcd import EtcdMember
from tests.harness import ServerProcess
from tests.partition import Forwarder
from tests.util import wait_until

KEYS = GroupKeys("DefaultCluster", "broker-a")
UP = 30.0  # generous: a busy machine


@pytest.fixture
async def forwarder(etcd: EtcdMember) -> AsyncIterator[Forwarder]:
    fwd = Forwarder("127.0.0.1", etcd.client_port)
    await fwd.start()
    yield fwd
    fwd.heal()
    await fwd.close()


async def start(nodes: list[Node], addr: str, broker_id: int, **options: object) -> Node:
    node = Node(addr, broker_id, **options)
    nodes.append(node)
    await node.ctl.start()
    return node


async def registered(observer: Etcd, *broker_ids: int) -> None:
    """Until every one of ``broker_ids`` has its replica key."""

    async def all_there() -> bool:
        snap = await observer.snapshot(KEYS.prefix)
        return all(KEYS.replica(i) in snap.entries for i in broker_ids)

    async with asyncio.timeout(UP):
        while not await all_there():  # noqa: ASYNC110 -- polls etcd
            await asyncio.sleep(0.02)


async def test_a_single_campaign_wins(etcd: EtcdMember, nodes: list[Node], observer: Etcd) -> None:
    a = await start(nodes, etcd.endpoint, 0)
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    assert a.told == [("master", 1)]
    assert a.ctl.may_ack() and a.ctl.lease_valid()
    snap = await observer.snapshot(KEYS.prefix)
    state = read_state(KEYS, snap.entries, snap.revision)
    assert state.master == Master(0, a.addr, 1, lease=a.ctl.keeper.lease_id or -1)
    assert (state.master_epoch, state.sync_state_set, state.sync_state_set_epoch) == (
        1,
        frozenset({0}),
        1,
    )
    assert state.replicas == {0: a.addr}


async def test_concurrent_campaigns_install_exactly_one_master(
    etcd: EtcdMember, observer: Etcd
) -> None:
    """Four members of the SyncStateSet decide on the same state (no master, epoch 1) and
    send their transactions at once: the rules let each one, etcd applies one (epoch 2) and
    refuses the others, whose compares no longer hold."""
    ids = range(5)
    leases = [(await observer.grant(30))[0] for _ in ids]
    for i in ids:
        await campaign.register(observer, KEYS, i, f"h:{i}", leases[i])

    async def now() -> GroupState:
        snap = await observer.snapshot(KEYS.prefix)
        return read_state(KEYS, snap.entries, snap.revision)

    assert await campaign.campaign(observer, KEYS, await now(), 0, "h:0", leases[0], unclean=False)
    await campaign.alter_sync_state_set(observer, KEYS, await now(), 0, 1, 1, frozenset(ids))
    await observer.revoke(leases[0])  # the master dies: its key and replica key go
    seen = await now()
    assert seen.master is None and seen.master_epoch == 1
    assert seen.sync_state_set == frozenset(ids) and 0 not in seen.replicas

    results = await asyncio.gather(
        *(
            campaign.campaign(observer, KEYS, seen, i, f"h:{i}", leases[i], unclean=False)
            for i in ids[1:]
        )
    )
    winners = [r for r in results if r is not None]
    assert len(winners) == 1, results
    after = await now()
    assert after.master is not None and after.master_epoch == 2 == seen.master_epoch + 1
    assert winners[0].master is not None
    assert after.master.broker_id == winners[0].master.broker_id
    assert (after.sync_state_set, after.sync_state_set_epoch) == (
        frozenset({after.master.broker_id}),
        seen.sync_state_set_epoch + 1,
    )
    # a loser trying again on what it read is refused by etcd's compare, then by the rules
    loser = next(i for i in ids[1:] if i != after.master.broker_id)
    again = await campaign.campaign(observer, KEYS, seen, loser, "h", leases[loser], unclean=False)
    assert again is None
    with pytest.raises(Refused) as info:
        await campaign.campaign(observer, KEYS, after, loser, "h", leases[loser], unclean=False)
    assert info.value.refusal is Refusal.MASTER_STILL_EXIST


async def test_two_brokers_starting_together_get_one_master(
    etcd: EtcdMember, nodes: list[Node], observer: Etcd
) -> None:
    """The first election of a group takes whoever is first: exactly one of two brokers
    started at once is master at epoch 1, the other its slave."""
    a, b = Node(etcd.endpoint, 0), Node(etcd.endpoint, 1)
    nodes += [a, b]
    await asyncio.gather(a.ctl.start(), b.ctl.start())
    await wait_until(lambda: {a.ctl.role, b.ctl.role} == {Role.MASTER, Role.SLAVE}, UP)
    master, slave = (a, b) if a.ctl.role is Role.MASTER else (b, a)
    assert master.told == [("master", 1)]
    await wait_until(lambda: slave.told == [("slave", master.addr, 1)], UP)
    assert master.ctl.elections + slave.ctl.elections == 1
    assert master.ctl.may_ack() and not slave.ctl.may_ack()
    snap = await observer.snapshot(KEYS.prefix)
    assert read_state(KEYS, snap.entries, snap.revision).master_epoch == 1


async def test_a_partitioned_master_is_fenced_before_a_member_replaces_it(
    etcd: EtcdMember, nodes: list[Node], observer: Etcd, forwarder: Forwarder
) -> None:
    """The master (0) loses etcd. It stops acknowledging while its key still exists (fencing
    first, in etcd's order of things); then the key expires and the SyncStateSet's other
    member (1) is elected at epoch 2; the replica outside the set (2) is not."""
    # a wide margin (2 s of a 4 s TTL): the test samples inside the window reliably
    a = await start(nodes, forwarder.endpoint, 0, lease_ttl_ms=4000, margin=2.0)
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    b = await start(nodes, etcd.endpoint, 1)
    c = await start(nodes, etcd.endpoint, 2)
    await registered(observer, 0, 1, 2)
    await a.ctl.alter_sync_state_set({0, 1})
    await wait_until(lambda: b.told == [("slave", a.addr, 1)] and len(c.told) == 1, UP)

    forwarder.cut()
    samples: list[tuple[bool, bool]] = []  # (may_ack before the read, master key present)
    async with asyncio.timeout(UP):
        while True:
            acking = a.ctl.may_ack()
            snap = await observer.snapshot(KEYS.prefix)
            present = KEYS.master in snap.entries and read_state(
                KEYS, snap.entries, snap.revision
            ).master == Master(0, a.addr, 1, snap.entries[KEYS.master].lease)
            samples.append((acking, present))
            if not present:
                break
            await asyncio.sleep(0.01)
    assert (True, False) not in samples  # never acknowledging without the key
    assert (False, True) in samples, samples  # fenced while the key was still there
    assert samples[-1] == (False, False)

    await wait_until(lambda: b.ctl.role is Role.MASTER, UP)
    assert b.told == [("slave", a.addr, 1), ("master", 2)]
    # the old master's bound (fixed since the cut) lay before the new one was told
    assert a.ctl.fence.valid_until <= b.told_at[-1]
    await wait_until(lambda: c.told[-1:] == [("slave", b.addr, 2)], UP)
    assert c.ctl.elections == 0 and ("master", 2) not in c.told
    state = await b.ctl.read_state()
    assert state.master == Master(1, b.addr, 2, b.ctl.keeper.lease_id or -1)
    assert (state.sync_state_set, state.sync_state_set_epoch) == (frozenset({1}), 3)
    assert not a.ctl.may_ack()

    # healed, the old master is told it is a slave of the new one, and cannot act as master
    forwarder.heal()
    await wait_until(lambda: a.told[-1:] == [("slave", b.addr, 2)], UP)
    assert a.ctl.role is Role.SLAVE and not a.ctl.may_ack()
    with pytest.raises(Refused) as refused:
        await a.ctl.alter_sync_state_set({0, 1}, sync_state_set_epoch=3)
    assert refused.value.refusal is Refusal.INVALID_MASTER


async def test_no_member_alive_no_master_unless_unclean(
    etcd: EtcdMember, nodes: list[Node], observer: Etcd, forwarder: Forwarder
) -> None:
    """The master (0) is the SyncStateSet's only member and loses etcd: the replicas outside
    the set campaign and are refused (enableElectUncleanMaster=false), and the group waits,
    its epoch kept, until 0 is back and elected again at epoch 2."""
    a = await start(nodes, forwarder.endpoint, 0)
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    b = await start(nodes, etcd.endpoint, 1)
    c = await start(nodes, etcd.endpoint, 2)
    await wait_until(lambda: len(b.told) == len(c.told) == 1, UP)

    forwarder.cut()
    refused = Refusal.ELECT_MASTER_FAILED

    def both_refused() -> bool:
        return all(
            n.ctl.last_refusal is not None and n.ctl.last_refusal.refusal is refused for n in (b, c)
        )

    await wait_until(both_refused, UP)
    state = await b.ctl.read_state()
    assert state.master is None and state.master_epoch == 1
    assert state.sync_state_set == frozenset({0}) and 0 not in state.replicas
    assert b.ctl.elections == c.ctl.elections == 0

    forwarder.heal()
    await wait_until(lambda: a.told == [("master", 1), ("master", 2)], UP)
    await wait_until(lambda: b.told[-1:] == c.told[-1:] == [("slave", a.addr, 2)], UP)
    assert a.ctl.may_ack()
    # a stale master epoch is refused by the rules; a stale read by etcd's compare
    stale = await a.ctl.read_state()
    with pytest.raises(Refused) as info:
        await campaign.alter_sync_state_set(
            a.ctl.etcd, KEYS, stale, 0, 1, stale.sync_state_set_epoch, frozenset({0, 1})
        )
    assert info.value.refusal is Refusal.FENCED_MASTER_EPOCH
    await a.ctl.alter_sync_state_set({0, 1})
    with pytest.raises(Refused) as info:
        await campaign.alter_sync_state_set(
            a.ctl.etcd, KEYS, stale, 0, 2, stale.sync_state_set_epoch, frozenset({0, 2})
        )
    assert info.value.refusal is Refusal.FENCED_SYNC_STATE_SET_EPOCH
    with pytest.raises(Refused) as info:
        await a.ctl.alter_sync_state_set({0, 2}, sync_state_set_epoch=stale.sync_state_set_epoch)
    assert info.value.refusal is Refusal.FENCED_SYNC_STATE_SET_EPOCH
    final = await a.ctl.read_state()
    assert (final.sync_state_set, final.sync_state_set_epoch) == (
        frozenset({0, 1}),
        stale.sync_state_set_epoch + 1,
    )


async def test_unclean_election_takes_a_live_replica(
    etcd: EtcdMember, nodes: list[Node], forwarder: Forwarder
) -> None:
    """As above with enableElectUncleanMaster on the replicas: one of them is elected."""
    a = await start(nodes, forwarder.endpoint, 0)
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    b = await start(nodes, etcd.endpoint, 1, elect_unclean=True)
    c = await start(nodes, etcd.endpoint, 2, elect_unclean=True)
    await wait_until(lambda: len(b.told) == len(c.told) == 1, UP)
    forwarder.cut()
    await wait_until(lambda: Role.MASTER in (b.ctl.role, c.ctl.role), UP)
    new, other = (b, c) if b.ctl.role is Role.MASTER else (c, b)
    assert new.told[-1] == ("master", 2)
    await wait_until(lambda: other.told[-1:] == [("slave", new.addr, 2)], UP)
    assert b.ctl.elections + c.ctl.elections == 1


async def test_state_survives_an_etcd_restart(
    etcd: EtcdMember, nodes: list[Node], observer: Etcd
) -> None:
    """etcd stopped and started on its data: the master, its epoch and the SyncStateSet are
    as they were, and the master acknowledges again without an election."""
    a = await start(nodes, etcd.endpoint, 0, lease_ttl_ms=6000)
    await wait_until(lambda: a.ctl.role is Role.MASTER, UP)
    b = await start(nodes, etcd.endpoint, 1, lease_ttl_ms=6000)
    await registered(observer, 0, 1)
    before = await a.ctl.alter_sync_state_set({0, 1})
    keep_alives = a.ctl.keeper.keep_alives
    await asyncio.to_thread(etcd.restart)
    await wait_until(lambda: a.ctl.keeper.keep_alives > keep_alives + 1, UP)
    after = await a.ctl.read_state()
    assert after.master == Master(0, a.addr, 1, a.ctl.keeper.lease_id or -1)
    assert (after.master_epoch, after.sync_state_set, after.sync_state_set_epoch) == (
        1,
        frozenset({0, 1}),
        before.sync_state_set_epoch,
    )
    await wait_until(a.ctl.may_ack, UP)
    assert a.told == [("master", 1)] and b.told == [("slave", a.addr, 1)]
    assert a.ctl.elections == 1 and b.ctl.elections == 0


@pytest.mark.slow
async def test_a_stopped_master_never_acks_beside_its_successor(
    etcd: EtcdMember, nodes: list[Node]
) -> None:
    """The master is a process, stopped with SIGSTOP for longer than its lease (a GC pause, a
    stalled VM), and another broker is elected meanwhile (unclean here: the set is the old
    master alone). Each time the stopped broker said may_ack -- before the stop and after
    SIGCONT -- its fence bound lay before the successor was told it is master, on the host's
    one CLOCK_BOOTTIME; resumed, it follows the new master."""
    proc = ServerProcess(["-m", "tests.controller.node", etcd.endpoint, "0", "3000"])
    try:
        await asyncio.to_thread(proc.wait_for, "controller_elected", UP)
        b = await start(nodes, etcd.endpoint, 1, elect_unclean=True)
        await wait_until(lambda: b.told == [("slave", "127.0.0.1:10911", 1)], UP)
        await asyncio.to_thread(proc.wait_for, "tick", UP)  # acking, seen before the stop

        os.kill(proc.proc.pid, signal.SIGSTOP)
        try:
            await wait_until(lambda: b.ctl.role is Role.MASTER, UP)
        finally:
            os.kill(proc.proc.pid, signal.SIGCONT)
        assert b.told[-1] == ("master", 2)
        told_master = b.told_at[-1]

        # resumed, it reads the new master and follows it
        await asyncio.to_thread(proc.wait_for, "controller_role", UP, 2)
        tells = [e for e in proc.events if e.get("event") == "controller_role"]
        assert [(e["role"], e["epoch"]) for e in tells] == [("MASTER", 1), ("SLAVE", 2)]
        assert tells[-1]["master"] == b.addr
        seen = len([e for e in proc.events if e.get("event") == "tick"])
        await asyncio.to_thread(proc.wait_for, "tick", UP, seen + 1)  # one after the tell
        ticks = [e for e in proc.events if e.get("event") == "tick"]
        acked = [e for e in ticks if e["may_ack"]]
        assert acked, "the master never acknowledged"
        # it asked before the successor was told, and its bound lay before that too
        assert all(e["at"] < told_master for e in acked), (acked[-1], told_master)
        assert all(e["valid_until"] <= told_master for e in acked), (acked[-1], told_master)
        assert (ticks[-1]["may_ack"], ticks[-1]["role"], ticks[-1]["epoch"]) == (
            False,
            "SLAVE",
            2,
        )
    finally:
        proc.stop()
