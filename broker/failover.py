"""Failover: the broker wired to its Controller (broker.controller) in controller mode with
``controllerAddr`` set -- the group's brokers elect their master in etcd and switch roles by
themselves (issue 35; 5.x BrokerController's ReplicasManager + AutoSwitchHAService).

- Roles: the controller's ``on_master(epoch)`` makes this broker master
  (``Roles.become_master``), ``on_slave(addr, epoch)`` a slave of ``addr`` under its
  configured brokerId (``Roles.become_slave``): each replica's brokerId (>= 1, distinct in
  the group) is its identity with the controller; as master it is brokerId 0 in routes.
- Fencing: the store's ``ack_gate`` is ``Controller.may_ack``, asked last, once a put is
  stored and waited for (MessageStore.wait_stored): a master that cannot prove its lease
  alive answers SERVICE_NOT_AVAILABLE, before etcd can elect another.
- A broker restarted with epochs on disk (it was in the group) does not campaign for two
  lease TTLs: a replica that stayed up, whose memory (consumer offsets) lost nothing, is
  elected before it; it then follows that one. Restarted while its dead incarnation's master
  key still lives (its lease's TTL, renewed in full when etcd itself restarted), it revokes
  that lease at once (``release_own_stale``), so that replica is elected without waiting.
- SyncStateSet (5.x AutoSwitchHAService.maybeExpandInSyncStateSet / maybeShrinkSyncStateSet):
  as master, every ``SYNC_STATE_PERIOD`` a member not caught up within
  ``haMaxTimeSlaveNotCatchup`` (or gone) leaves, and a slave joins once it holds every put a
  SYNC_MASTER may have acknowledged (its ack at least the counted acks' -- 5.x's
  ``slaveMaxOffset >= confirmOffset``; having caught up a while ago is not enough: a slave
  that lagged since would be elected without what the others acknowledged), through
  ``alter_sync_state_set``. A joining slave's acks count before the call (it holds
  everything); a leaving one's stop counting
  only once etcd holds the smaller set (until then it may be elected). A put needing HA waits
  for ``AckRule.needed`` replicas (the master counted), one slave at least; as 5.x, only a
  SYNC_MASTER's puts wait (an ASYNC_MASTER acknowledges on its own log; 5.x CommitLog
  .needHandleHA).

Without ``controllerAddr`` a controller-mode broker takes its roles over the wire
(NOTIFY_BROKER_ROLE_CHANGED, processors.controller) and nothing here runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from aiorocketmq.broker.config import BrokerConfig, BrokerRole
from aiorocketmq.broker.controller.controller import Controller, Role
from aiorocketmq.broker.controller.etcd import EtcdError
from aiorocketmq.broker.controller.fence import boot_clock
from aiorocketmq.broker.controller.state import Refused
from aiorocketmq.broker.replication import Replication
from aiorocketmq.broker.roles import Roles
from aiorocketmq.remoting.tasks import every

log = structlog.get_logger(__name__)

SYNC_STATE_PERIOD = 0.5  # seconds between looks at the slaves (5.x: at each slave report)


class Failover:
    def __init__(
        self, config: BrokerConfig, broker_addr: str, roles: Roles, replication: Replication
    ) -> None:
        self.config = config
        self.roles = roles
        self.replication = replication
        self.replica_id = config.broker_id
        self.controller = Controller.from_config(
            config, broker_addr, on_master=self._on_master, on_slave=self._on_slave
        )
        # this process holds the store's lock (store.checkpoint.lock_store) and listens on
        # broker_addr: a master key naming both is a dead incarnation's, released at once
        self.controller.release_own_stale = True
        self._task: asyncio.Task[None] | None = None
        self._in_sync = 1  # SyncStateSet members counted now (the master among them)

    # -- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """After the listeners: the store acknowledges only what ``may_ack`` allows."""
        store = self.replication.ctx.store
        store.ack_gate = self.controller.may_ack
        store.admit_ha = self.in_sync_enough
        if store.epochs.last_epoch > 0:  # restarted: a member that stayed up goes first --
            # two TTLs: restarted with etcd (both lost), its old key lives a TTL from etcd's
            # return, so one TTL left the race to that key's expiry open
            self.controller.campaign_after = boot_clock() + 2 * self.controller.ttl
        await self.controller.start()
        self._task = asyncio.get_running_loop().create_task(
            every(SYNC_STATE_PERIOD, self._sync_state, name="sync_state_set"),
            name="sync_state_set",
        )

    async def close(self) -> None:
        """First at shutdown: the lease revoked, so a successor is elected at once (this
        broker acknowledges nothing from here on: ``may_ack`` is false without a role)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.controller.close()

    # -- roles ----------------------------------------------------------------------------

    async def _on_master(self, epoch: int) -> None:
        # a new master's SyncStateSet is itself alone: count no slave yet (before the store
        # takes puts, so none is answered under the old count)
        self.replication.master.confirmed = -1
        self._count(frozenset())
        await self.roles.become_master(epoch)

    async def _on_slave(self, master_addr: str, epoch: int) -> None:
        await self.roles.become_slave(master_addr, epoch, self.replica_id)

    def offsets_current(self) -> bool:
        """Whether this broker's consumer offsets hold every commit its group acknowledged,
        so a QUERY_CONSUMER_OFFSET may be answered from them: as master, while it may
        acknowledge (a deposed one's successor may have taken commits since); as slave,
        while the SyncStateSet last read from etcd holds it (allAckInSyncStateSet: every
        acknowledged commit's record waited for it, and it left the set only once etcd
        said so). A replica that fell behind, or restarted on an older consumerOffset.json,
        is outside the set until it caught up again."""
        ctl = self.controller
        if ctl.role is Role.MASTER:
            return ctl.may_ack()
        return ctl.role is Role.SLAVE and self.replica_id in ctl.state.sync_state_set

    def slaves_needed(self, in_sync: int) -> int:
        """Slaves a put needing HA waits for with ``in_sync`` SyncStateSet members; more than
        can connect when the rule refuses (IN_SYNC_REPLICAS_NOT_ENOUGH: never acknowledged)."""
        if self.roles.master_role is not BrokerRole.SYNC_MASTER:
            return 0  # compat: CommitLog.needHandleHA -- only a SYNC_MASTER's puts wait
        needed = self.controller.acks.needed(in_sync)
        if needed is None:
            return in_sync + 1
        return max(1, needed - 1)  # as 4.9.8's SYNC_MASTER: one slave at least

    def in_sync_enough(self) -> bool:
        """Whether a put needing HA may be appended: as 5.x's CommitLog.asyncPutMessage, a
        SYNC_MASTER's is refused (IN_SYNC_REPLICAS_NOT_ENOUGH, nothing written) while the
        SyncStateSet has fewer than minInSyncReplicas members."""
        if self.roles.master_role is not BrokerRole.SYNC_MASTER:
            return True  # compat: CommitLog.needHandleHA
        return self.controller.acks.needed(self._in_sync) is not None

    def _count(self, members: frozenset[int]) -> None:
        slaves = members - {self.replica_id}
        self._in_sync = len(slaves) + 1
        self.replication.master.count(slaves, self.slaves_needed(len(slaves) + 1))

    # -- the SyncStateSet -----------------------------------------------------------------

    def caught_up(self) -> frozenset[int]:
        """Slaves (brokerIds) connected and caught up within haMaxTimeSlaveNotCatchup."""
        limit = self.config.ha_max_time_slave_not_catchup / 1000
        now = time.monotonic()
        return frozenset(
            conn.slave_id
            for conn in self.replication.master.connections
            if conn.slave_id is not None
            and conn.caught_up_at > 0
            and now - conn.caught_up_at <= limit
        )

    async def _sync_state(self) -> None:
        ctl = self.controller
        if ctl.role is not Role.MASTER or not ctl.may_ack():
            return
        current = ctl.state.sync_state_set
        if self.replica_id not in current:
            return  # not yet read as master: the controller's next round
        master = self.replication.master
        floor: int | None = None  # an ASYNC_MASTER's puts wait for no slave
        if self.roles.master_role is BrokerRole.SYNC_MASTER:
            # what this master acknowledged, and what its predecessors wrote (5.x: the slave
            # also reached the leader epoch's start offset)
            epoch = master.store.epochs.last
            floor = max(master.confirmed, epoch.start_offset if epoch is not None else 0)
        acks = {c.slave_id: c.acked for c in master.connections if c.slave_id is not None}
        want = wanted_sync_state_set(self.replica_id, current, self.caught_up(), acks, floor)
        if want == current:
            return
        if want - current:  # joining ones count from now (they hold every message)
            self._count(want | current)
        try:
            new = await ctl.alter_sync_state_set(want)
        except (Refused, EtcdError) as e:  # at most once a minute per cause: it may repeat
            left_out = ctl.throttle.allow(("sync_state_set_not_altered", type(e), str(e)))
            if left_out is not None:
                log.info("sync_state_set_not_altered", want=sorted(want), error=str(e),
                         left_out=left_out)  # fmt: skip
            self._count(current)
            return
        self._count(new.sync_state_set)  # leaving ones stop counting only now


def wanted_sync_state_set(
    me: int,
    current: frozenset[int],
    caught_up: frozenset[int],
    acks: dict[int, int],
    floor: int | None,
) -> frozenset[int]:
    """The SyncStateSet a master wants: itself, the members still caught up, and the
    caught-up slaves that hold every acknowledged put -- their ack (``acks``: brokerId ->
    offset) at least ``floor``, the offset up to which a put may have been acknowledged
    (None: no put waits for a slave, an ASYNC_MASTER's, and caught up is enough)."""
    stay = caught_up & current
    join = frozenset(s for s in caught_up - current if floor is None or acks.get(s, -1) >= floor)
    return frozenset({me}) | stay | join
