"""A broker group's controller state and its transitions, as pure functions (no I/O).

# compat: ReplicasInfoManager.electMaster / alterSyncStateSet, SyncStateInfo and
# DefaultElectPolicy of 5.x (rocketmq-all-5.3.3, controller module) -- the rules, not the code.
Facts taken from there:

- A group's state is its master (brokerId), the master epoch, the SyncStateSet and the
  SyncStateSet epoch. Both epochs start at 0; installing a master adds 1 to the master epoch
  (SyncStateInfo.updateMasterInfo) and makes the SyncStateSet ``{new master}`` with its epoch
  + 1 (updateSyncStateSetInfo).
- The first election of a group (master epoch 0, ``isFirstTimeForElect``) takes whoever asks.
  After that, only a live member of the SyncStateSet; with ``enableElectUncleanMaster`` also
  any live replica, but only when no member of the set is alive (DefaultElectPolicy tries the
  set first, then all replicas). While a master is alive, nobody else is elected
  (CONTROLLER_MASTER_STILL_EXIST).
- Only the current master, at the current master epoch and SyncStateSet epoch, may alter the
  set; the new set must differ from the old, hold only live replicas and keep the master; its
  epoch is the old one + 1.

Ours differs in who decides: there is no controller process. The brokers campaign themselves
with one etcd transaction each (broker/controller/campaign.py), guarded by the revisions of
the state they decided on, so the decision below is made on the state the transaction
installs over or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from aiorocketmq.broker.controller.layout import (
    GroupKeys,
    decode,
    encode,
    field_ids,
    field_int,
    field_str,
)


class Refusal(StrEnum):
    """Why a transition is refused: 5.x's ResponseCode names for the same cases."""

    MASTER_STILL_EXIST = "CONTROLLER_MASTER_STILL_EXIST"
    ELECT_MASTER_FAILED = "CONTROLLER_ELECT_MASTER_FAILED"
    INVALID_MASTER = "CONTROLLER_INVALID_MASTER"
    FENCED_MASTER_EPOCH = "CONTROLLER_FENCED_MASTER_EPOCH"
    FENCED_SYNC_STATE_SET_EPOCH = "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH"
    BROKER_NOT_ALIVE = "CONTROLLER_BROKER_NOT_ALIVE"
    ALTER_SYNC_STATE_SET_FAILED = "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED"


class Refused(Exception):
    """A transition refused by the rules, or by etcd's compare (another changed the state
    first: the caller reads again)."""

    def __init__(self, refusal: Refusal, remark: str) -> None:
        super().__init__(f"{refusal}: {remark}")
        self.refusal = refusal
        self.remark = remark


@dataclass(frozen=True, slots=True)
class Entry:
    """One key as etcd holds it: its value, revisions and lease (0 = none)."""

    value: bytes
    create_revision: int
    mod_revision: int
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Master:
    broker_id: int
    broker_addr: str
    epoch: int
    lease: int = 0  # the etcd lease the master key is held with


@dataclass(frozen=True, slots=True)
class GroupState:
    """What etcd holds for one group at ``revision``. ``master`` is the live master (its key
    exists, so its lease does); ``master_epoch`` survives it. The ``*_rev`` fields are the keys'
    mod revisions (0 = absent): a transaction decided on this state compares them."""

    master: Master | None = None
    master_epoch: int = 0
    last_master_id: int | None = None
    sync_state_set: frozenset[int] = frozenset()
    sync_state_set_epoch: int = 0
    replicas: Mapping[int, str] = field(default_factory=dict)  # live brokerId -> address
    revision: int = 0
    epoch_rev: int = 0
    sync_rev: int = 0

    @property
    def first_time_for_elect(self) -> bool:
        # compat: SyncStateInfo.isFirstTimeForElect -- no master was ever installed
        return self.master_epoch == 0


def read_state(keys: GroupKeys, entries: Mapping[str, Entry], revision: int) -> GroupState:
    """The group's state from its keys (a range read of ``keys.prefix`` at ``revision``)."""
    master = None
    if (entry := entries.get(keys.master)) is not None:
        value = decode(entry.value, keys.master)
        master = Master(
            field_int(value, "brokerId", keys.master),
            field_str(value, "brokerAddr", keys.master),
            field_int(value, "masterEpoch", keys.master),
            entry.lease,
        )
    master_epoch, last_master, epoch_rev = 0, None, 0
    if (entry := entries.get(keys.epoch)) is not None:
        value = decode(entry.value, keys.epoch)
        master_epoch = field_int(value, "masterEpoch", keys.epoch)
        last_master = field_int(value, "brokerId", keys.epoch)
        epoch_rev = entry.mod_revision
    members: frozenset[int] = frozenset()
    ss_epoch, sync_rev = 0, 0
    if (entry := entries.get(keys.sync_state_set)) is not None:
        value = decode(entry.value, keys.sync_state_set)
        members = field_ids(value, "syncStateSet", keys.sync_state_set)
        ss_epoch = field_int(value, "syncStateSetEpoch", keys.sync_state_set)
        sync_rev = entry.mod_revision
    replicas = {}
    for key, entry in entries.items():
        broker_id = keys.replica_id(key)
        if broker_id is not None:
            replicas[broker_id] = field_str(decode(entry.value, key), "brokerAddr", key)
    return GroupState(
        master,
        master_epoch,
        last_master,
        members,
        ss_epoch,
        replicas,
        revision,
        epoch_rev,
        sync_rev,
    )


def check_elect(state: GroupState, candidate: int, *, unclean: bool) -> None:
    """Raises Refused unless ``candidate`` may be installed as master now.

    # compat: ReplicasInfoManager.electMaster + DefaultElectPolicy.elect"""
    if state.master is not None:
        raise Refused(
            Refusal.MASTER_STILL_EXIST,
            f"master {state.master.broker_id} at epoch {state.master.epoch} is alive",
        )
    if state.first_time_for_elect or candidate in state.sync_state_set:
        return
    alive_members = state.sync_state_set & state.replicas.keys()
    if unclean and candidate in state.replicas and not alive_members:
        return
    why = (
        f"members {sorted(alive_members)} of the SyncStateSet are alive"
        if unclean and alive_members
        else "enableElectUncleanMaster is false"
        if not unclean
        else "not a live replica"
    )
    raise Refused(
        Refusal.ELECT_MASTER_FAILED,
        f"broker {candidate} is not in the SyncStateSet {sorted(state.sync_state_set)} "
        f"(syncStateSetEpoch {state.sync_state_set_epoch}) and {why}",
    )


def elected(state: GroupState, candidate: int, addr: str) -> GroupState:
    """The state once ``candidate`` is master (check_elect passed): master epoch + 1, the
    SyncStateSet ``{candidate}`` at its epoch + 1 (ReplicasInfoManager.handleElectMaster)."""
    epoch = state.master_epoch + 1
    return GroupState(
        Master(candidate, addr, epoch),
        epoch,
        candidate,
        frozenset({candidate}),
        state.sync_state_set_epoch + 1,
        state.replicas,
    )


def check_alter(
    state: GroupState,
    master_id: int,
    master_epoch: int,
    sync_state_set_epoch: int,
    new_set: frozenset[int],
) -> None:
    """Raises Refused unless the master ``master_id``, at ``master_epoch`` and
    ``sync_state_set_epoch``, may make the SyncStateSet ``new_set``.

    # compat: ReplicasInfoManager.alterSyncStateSet -- its checks, in its order"""
    if new_set == state.sync_state_set:
        raise Refused(Refusal.ALTER_SYNC_STATE_SET_FAILED, "the new SyncStateSet is the old one")
    current = state.master.broker_id if state.master is not None else None
    if current != master_id:
        raise Refused(Refusal.INVALID_MASTER, f"the current master is {current}, not {master_id}")
    if master_epoch != state.master_epoch:
        raise Refused(
            Refusal.FENCED_MASTER_EPOCH,
            f"the current master epoch is {state.master_epoch}, not {master_epoch}",
        )
    if sync_state_set_epoch != state.sync_state_set_epoch:
        raise Refused(
            Refusal.FENCED_SYNC_STATE_SET_EPOCH,
            f"the current syncStateSet epoch is {state.sync_state_set_epoch}, "
            f"not {sync_state_set_epoch}",
        )
    if dead := sorted(new_set - state.replicas.keys()):
        raise Refused(Refusal.BROKER_NOT_ALIVE, f"replicas {dead} are not alive")
    if master_id not in new_set:
        raise Refused(
            Refusal.ALTER_SYNC_STATE_SET_FAILED,
            f"the new SyncStateSet does not hold the master {master_id}",
        )


def altered(state: GroupState, new_set: frozenset[int]) -> GroupState:
    """The state once the set is ``new_set`` (check_alter passed): its epoch + 1."""
    return GroupState(
        state.master,
        state.master_epoch,
        state.last_master_id,
        new_set,
        state.sync_state_set_epoch + 1,
        state.replicas,
    )


def master_value(master: Master) -> bytes:
    return encode(
        {
            "brokerId": master.broker_id,
            "brokerAddr": master.broker_addr,
            "masterEpoch": master.epoch,
        }
    )


def epoch_value(state: GroupState) -> bytes:
    return encode({"masterEpoch": state.master_epoch, "brokerId": state.last_master_id})


def sync_state_set_value(state: GroupState) -> bytes:
    return encode(
        {
            "syncStateSet": sorted(state.sync_state_set),
            "syncStateSetEpoch": state.sync_state_set_epoch,
            "masterEpoch": state.master_epoch,
        }
    )


def replica_value(broker_id: int, addr: str) -> bytes:
    return encode({"brokerId": broker_id, "brokerAddr": addr})
