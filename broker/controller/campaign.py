"""The controller's writes, each one etcd transaction guarded by the state it was decided on.

A broker decides with state.py on a state it read (GroupState, with the keys' revisions), and
writes with a transaction whose compares say "nothing changed since": the master key absent
(for a campaign) or still this master's (for a SyncStateSet change), the epoch and SyncStateSet
keys at the revisions read. Two brokers campaigning at once both pass the rules; etcd applies
one transaction and refuses the other, whose compares no longer hold. # compat: the 5.x
controller applies ElectMasterEvent / AlterSyncStateSetEvent through its DLedger or JRaft log
(ReplicasInfoManager.applyEvent); here etcd's transaction is that log.
"""

from __future__ import annotations

from aiorocketmq.broker.controller.etcd import Compare, Etcd, Put
from aiorocketmq.broker.controller.layout import GroupKeys
from aiorocketmq.broker.controller.state import (
    GroupState,
    Refusal,
    Refused,
    altered,
    check_alter,
    check_elect,
    elected,
    epoch_value,
    master_value,
    replica_value,
    sync_state_set_value,
)


async def register(etcd: Etcd, keys: GroupKeys, broker_id: int, addr: str, lease: int) -> None:
    """This broker's replica key, held with its lease: it is alive while the lease is."""
    await etcd.put(keys.replica(broker_id), replica_value(broker_id, addr), lease)


async def campaign(
    etcd: Etcd,
    keys: GroupKeys,
    state: GroupState,
    broker_id: int,
    addr: str,
    lease: int,
    *,
    unclean: bool,
) -> GroupState | None:
    """Installs ``broker_id`` as master held with ``lease``, epoch + 1, if the rules let it
    (raises Refused otherwise) and etcd still holds ``state``; None: it no longer does."""
    check_elect(state, broker_id, unclean=unclean)
    new = elected(state, broker_id, addr)
    assert new.master is not None
    compares = [
        Compare(keys.master, "create", "==", 0),
        Compare(keys.epoch, "mod", "==", state.epoch_rev),
        Compare(keys.sync_state_set, "mod", "==", state.sync_rev),
    ]
    if not state.first_time_for_elect and broker_id not in state.sync_state_set:
        # an unclean election: only while no member of the set is alive
        compares += [Compare(keys.replica(m), "version", "==", 0) for m in state.sync_state_set]
    puts = [
        Put(keys.master, master_value(new.master), lease),
        Put(keys.epoch, epoch_value(new)),
        Put(keys.sync_state_set, sync_state_set_value(new)),
    ]
    return new if await etcd.txn(compares, puts) else None


async def alter_sync_state_set(
    etcd: Etcd,
    keys: GroupKeys,
    state: GroupState,
    master_id: int,
    master_epoch: int,
    sync_state_set_epoch: int,
    new_set: frozenset[int],
) -> GroupState:
    """Makes the SyncStateSet ``new_set`` for the master ``master_id`` at its epochs, if the
    rules let it and etcd still holds ``state`` (the same live master, epoch and set, every
    new member alive); raises Refused otherwise."""
    check_alter(state, master_id, master_epoch, sync_state_set_epoch, new_set)
    assert state.master is not None
    new = altered(state, new_set)
    compares = [
        Compare(keys.master, "value", "==", master_value(state.master)),
        Compare(keys.epoch, "mod", "==", state.epoch_rev),
        Compare(keys.sync_state_set, "mod", "==", state.sync_rev),
        *(Compare(keys.replica(m), "version", ">", 0) for m in sorted(new_set)),
    ]
    if not await etcd.txn(compares, [Put(keys.sync_state_set, sync_state_set_value(new))]):
        raise Refused(
            Refusal.FENCED_SYNC_STATE_SET_EPOCH,
            f"the group changed in etcd after revision {state.revision}: read it again",
        )
    return new
