"""The controller's pure parts: 5.x's election and SyncStateSet rules (ReplicasInfoManager,
DefaultElectPolicy), the ack rule (CommitLog's controller branch), fencing, the key layout."""

from __future__ import annotations

import math

import pytest

from aiorocketmq.broker.controller.acks import AckRule
from aiorocketmq.broker.controller.etcd import parse_endpoints
from aiorocketmq.broker.controller.fence import Fence
from aiorocketmq.broker.controller.layout import GroupKeys, LayoutError
from aiorocketmq.broker.controller.state import (
    Entry,
    GroupState,
    Master,
    Refusal,
    Refused,
    altered,
    check_alter,
    check_elect,
    elected,
    epoch_value,
    master_value,
    read_state,
    replica_value,
    sync_state_set_value,
)

LIVE = {0: "a:1", 1: "b:1", 2: "c:1"}


def group(
    master: int | None = 0, members: set[int] | None = None, replicas: dict[int, str] = LIVE
) -> GroupState:
    return GroupState(
        master=None if master is None else Master(master, replicas.get(master, "x:1"), 3),
        master_epoch=3,
        last_master_id=0,
        sync_state_set=frozenset({0, 1} if members is None else members),
        sync_state_set_epoch=5,
        replicas=replicas,
    )


def refusal(call: object, *args: object, **kwargs: object) -> Refusal:
    assert callable(call)
    with pytest.raises(Refused) as info:
        call(*args, **kwargs)
    return info.value.refusal


def test_first_election_takes_whoever_asks() -> None:
    """SyncStateInfo.isFirstTimeForElect: master epoch 0, no set yet."""
    empty = GroupState()
    check_elect(empty, 7, unclean=False)
    new = elected(empty, 7, "h:7")
    assert new.master == Master(7, "h:7", 1)
    assert (new.master_epoch, new.sync_state_set, new.sync_state_set_epoch) == (
        1,
        frozenset({7}),
        1,
    )


def test_only_members_of_the_set_are_elected() -> None:
    no_master = group(master=None, members={0, 1})
    check_elect(no_master, 1, unclean=False)
    assert refusal(check_elect, no_master, 2, unclean=False) is Refusal.ELECT_MASTER_FAILED
    # a new master: epoch + 1, the set is itself alone at the set's epoch + 1
    new = elected(no_master, 1, "b:1")
    assert new.master == Master(1, "b:1", 4)
    assert (new.master_epoch, new.sync_state_set, new.sync_state_set_epoch) == (
        4,
        frozenset({1}),
        6,
    )
    assert new.last_master_id == 1


def test_nobody_is_elected_while_a_master_lives() -> None:
    for candidate in (0, 1, 2):
        got = refusal(check_elect, group(master=0), candidate, unclean=True)
        assert got is Refusal.MASTER_STILL_EXIST


def test_unclean_election_only_when_no_member_is_alive() -> None:
    """DefaultElectPolicy.elect: the set first, all replicas only when it yields nobody."""
    member_alive = group(master=None, members={0, 1})
    assert refusal(check_elect, member_alive, 2, unclean=True) is Refusal.ELECT_MASTER_FAILED
    members_dead = group(master=None, members={0, 1}, replicas={2: "c:1"})
    check_elect(members_dead, 2, unclean=True)
    assert refusal(check_elect, members_dead, 2, unclean=False) is Refusal.ELECT_MASTER_FAILED
    assert refusal(check_elect, members_dead, 9, unclean=True) is Refusal.ELECT_MASTER_FAILED


def test_alter_sync_state_set_checks_in_5x_order() -> None:
    state = group(master=0, members={0})
    assert altered(state, frozenset({0, 1})).sync_state_set_epoch == 6
    check_alter(state, 0, 3, 5, frozenset({0, 1}))
    cases = [
        ((0, 3, 5, {0}), Refusal.ALTER_SYNC_STATE_SET_FAILED),  # the same set
        ((1, 3, 5, {0, 1}), Refusal.INVALID_MASTER),  # not the master
        ((0, 2, 5, {0, 1}), Refusal.FENCED_MASTER_EPOCH),  # a stale master epoch
        ((0, 3, 4, {0, 1}), Refusal.FENCED_SYNC_STATE_SET_EPOCH),  # a stale set epoch
        ((0, 3, 5, {0, 9}), Refusal.BROKER_NOT_ALIVE),  # a replica not alive
        ((0, 3, 5, {1, 2}), Refusal.ALTER_SYNC_STATE_SET_FAILED),  # without the master
        # the first failing check wins: a stale master epoch before a dead replica
        ((0, 2, 4, {0, 9}), Refusal.FENCED_MASTER_EPOCH),
    ]
    for (master, epoch, ss_epoch, members), expected in cases:
        got = refusal(check_alter, state, master, epoch, ss_epoch, frozenset(members))
        assert got is expected, (master, epoch, ss_epoch, members)
    no_master = group(master=None, members={0})
    assert refusal(check_alter, no_master, 0, 3, 5, frozenset({0, 1})) is Refusal.INVALID_MASTER


def test_state_read_back_from_its_keys() -> None:
    keys = GroupKeys("DefaultCluster", "broker-a")
    state = elected(group(master=None, members={0, 1}), 1, "b:1")
    assert state.master is not None
    entries = {
        keys.master: Entry(master_value(state.master), 7, 7, lease=42),
        keys.epoch: Entry(epoch_value(state), 3, 7),
        keys.sync_state_set: Entry(sync_state_set_value(state), 3, 7),
        keys.replica(1): Entry(replica_value(1, "b:1"), 5, 5, lease=42),
        keys.replica(2): Entry(replica_value(2, "c:1"), 6, 6, lease=43),
    }
    back = read_state(keys, entries, 9)
    assert back.master == Master(1, "b:1", 4, lease=42)
    assert (back.master_epoch, back.last_master_id) == (4, 1)
    assert (back.sync_state_set, back.sync_state_set_epoch) == (frozenset({1}), 6)
    assert back.replicas == {1: "b:1", 2: "c:1"}
    assert (back.revision, back.epoch_rev, back.sync_rev) == (9, 7, 7)
    assert read_state(keys, {}, 1) == GroupState(revision=1, replicas={})
    with pytest.raises(LayoutError):
        read_state(keys, {keys.epoch: Entry(b'{"masterEpoch": "3"}', 1, 1)}, 1)
    with pytest.raises(ValueError, match="cluster or broker name"):
        GroupKeys("a/b", "broker-a")
    assert keys.replica_id(keys.prefix + "replicas/x") is None


def test_ack_rule() -> None:
    """CommitLog's controller branch: fewer than minInSyncReplicas in sync refuses; else
    inSyncReplicas, or the whole set with allAckInSyncStateSet."""
    assert AckRule().needed(1) == 1
    assert AckRule(in_sync_replicas=2, min_in_sync_replicas=2).needed(1) is None
    assert AckRule(in_sync_replicas=2, min_in_sync_replicas=1).needed(3) == 2
    assert AckRule(in_sync_replicas=1, all_ack_in_sync_state_set=True).needed(3) == 3
    assert AckRule(min_in_sync_replicas=2, all_ack_in_sync_state_set=True).needed(1) is None


def test_fence_turns_false_a_margin_before_the_lease_can_expire() -> None:
    fence = Fence(margin=0.5)
    assert not fence.valid(0.0) and fence.valid_until == -math.inf
    fence.renewed(sent_at=10.0, ttl=3)
    assert fence.valid(12.49) and not fence.valid(12.5)  # 10 + 3 - 0.5
    fence.renewed(sent_at=9.0, ttl=3)  # an older keep-alive answered late: no step back
    assert fence.valid_until == 12.5
    fence.renewed(sent_at=11.0, ttl=0)  # TTL 0 moves nothing
    assert fence.valid_until == 12.5
    fence.lost()
    assert not fence.valid(10.5)
    with pytest.raises(ValueError):
        Fence(margin=-1)


def test_controller_addr() -> None:
    assert parse_endpoints("127.0.0.1:2379; http://h2:2381,[::1]:2383") == [
        ("127.0.0.1", 2379),
        ("h2", 2381),
        ("::1", 2383),
    ]
    for bad in ("", " ; ", "h2", "h:x"):
        with pytest.raises(ValueError):
            parse_endpoints(bad)
