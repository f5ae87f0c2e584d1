"""Who joins a SyncStateSet (broker.failover.wanted_sync_state_set; 5.x AutoSwitchHAService
.maybeExpandInSyncStateSet: ``slaveMaxOffset >= confirmOffset`` and the leader epoch's start
offset). Pure: brokerIds and offsets."""

from __future__ import annotations

from aiorocketmq.broker.failover import wanted_sync_state_set

ME = 1


def test_a_slave_that_caught_up_a_while_ago_but_lacks_acknowledged_puts_stays_out() -> None:
    """Caught up within haMaxTimeSlaveNotCatchup is not enough to join: slave 3 caught up
    seconds ago, then lagged; the master acknowledged up to 900 on slave 2's acks. Elected
    after the master's death, 3 would lack 500..900 (a hole the time rule alone left)."""
    current = frozenset({1, 2})
    want = wanted_sync_state_set(ME, current, frozenset({2, 3}), {2: 900, 3: 500}, 900)
    assert want == {1, 2}
    want = wanted_sync_state_set(ME, current, frozenset({2, 3}), {2: 950, 3: 900}, 900)
    assert want == {1, 2, 3}  # once it holds everything acknowledged, it joins


def test_members_stay_while_caught_up_and_leave_when_not() -> None:
    """A member is not held to the floor (its acks counted: every acknowledged put waited
    for it); one not caught up within haMaxTimeSlaveNotCatchup (or gone) leaves."""
    current = frozenset({1, 2, 3})
    assert wanted_sync_state_set(ME, current, frozenset({2, 3}), {2: 10, 3: 5}, 900) == current
    assert wanted_sync_state_set(ME, current, frozenset({2}), {2: 900}, 900) == {1, 2}
    assert wanted_sync_state_set(ME, current, frozenset(), {}, 900) == {1}


def test_without_a_floor_caught_up_is_enough() -> None:
    """An ASYNC_MASTER's puts wait for no slave: no floor; a slave never connected since it
    caught up is not in ``caught_up`` and does not join."""
    assert wanted_sync_state_set(ME, frozenset({1}), frozenset({2}), {2: 0}, None) == {1, 2}
    assert wanted_sync_state_set(ME, frozenset({1}), frozenset(), {3: 10**9}, None) == {1}
