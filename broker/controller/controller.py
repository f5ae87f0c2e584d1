"""One broker's side of controller mode: its lease, the campaign, the role it is told, fencing.

A loop reads the group's keys (one range read), tells the broker its role when it changed,
campaigns when there is no master and the rules let this broker be one (campaign.py), then
watches the group's prefix from the revision it read, so no change is missed, until something
changes or a keep-alive interval passes. The lease is kept alive beside it (lease.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Iterable
from enum import StrEnum

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.controller import campaign
from aiorocketmq.broker.controller.access import EtcdAccess, access_from_config
from aiorocketmq.broker.controller.acks import AckRule
from aiorocketmq.broker.controller.etcd import (
    AccessDenied,
    Etcd,
    EtcdError,
    LeaseGone,
    parse_endpoints,
)
from aiorocketmq.broker.controller.fence import Fence, boot_clock
from aiorocketmq.broker.controller.layout import GroupKeys, LayoutError
from aiorocketmq.broker.controller.lease import LeaseKeeper
from aiorocketmq.broker.controller.state import GroupState, Master, Refused, read_state
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.tasks import every
from aiorocketmq.remoting.throttle import Throttle

log = get_logger(__name__)

OnMaster = Callable[[int], Awaitable[None]]
OnSlave = Callable[[str, int], Awaitable[None]]


class Role(StrEnum):
    NONE = "NONE"  # not yet told, or a master whose key is gone
    MASTER = "MASTER"
    SLAVE = "SLAVE"


async def _nothing_on_master(epoch: int) -> None:
    pass


async def _nothing_on_slave(master_addr: str, epoch: int) -> None:
    pass


class Controller:
    def __init__(
        self,
        *,
        controller_addr: str,
        cluster: str,
        broker_name: str,
        broker_id: int,
        broker_addr: str,
        on_master: OnMaster = _nothing_on_master,
        on_slave: OnSlave = _nothing_on_slave,
        lease_ttl_ms: int = 3_000,
        elect_unclean: bool = False,
        acks: AckRule | None = None,
        margin: float | None = None,
        clock: Callable[[], float] = boot_clock,
        access: EtcdAccess | None = None,
    ) -> None:
        """``margin``: seconds before the lease's earliest expiry at which ``may_ack`` turns
        false; a quarter of the TTL by default. ``access``: TLS and etcd credentials
        (access.py)."""
        self.keys = GroupKeys(cluster, broker_name)
        self.broker_id = broker_id
        self.broker_addr = broker_addr
        self.elect_unclean = elect_unclean
        self.acks = acks or AckRule()
        ttl = max(1, math.ceil(lease_ttl_ms / 1000))
        self.ttl = ttl
        self.etcd = Etcd(parse_endpoints(controller_addr), timeout=max(0.5, ttl / 3), access=access)
        self.fence = Fence(ttl / 4 if margin is None else margin)
        self._wake = asyncio.Event()
        # a failure that repeats every round (etcd down, our access refused) is logged once a
        # minute per cause, with the count left out (as remoting.throttle's other warnings)
        self.throttle = Throttle()
        self.failed_rounds = 0
        self.keeper = LeaseKeeper(
            self.etcd,
            ttl,
            self.fence,
            self._register,
            changed=self._wake.set,
            clock=clock,
            throttle=self.throttle,
        )
        self._on_master = on_master
        self._on_slave = on_slave
        self._clock = clock
        self._tasks: list[asyncio.Task[None]] = []
        self.role = Role.NONE
        self.epoch = 0  # the master epoch of the role last told
        self.master_addr = ""  # the master last told (a slave's)
        self.state = GroupState()  # the last state read
        self.last_refusal: Refused | None = None  # why the last campaign was refused
        self.elections = 0  # campaigns this broker won
        self._master_lease = 0  # the lease this broker holds the master key with
        # no campaign before this time (``clock``) unless the group never had a master: a
        # broker restarted after a crash lets the replicas that stayed up take over first
        # (broker.failover sets it)
        self.campaign_after = 0.0
        # a master key naming this broker (its brokerId and address) but held with a lease it
        # never had is a previous incarnation's: with this set (broker.failover sets it: this
        # process holds the store's lock and listens on that address, so that incarnation is
        # gone) the lease is revoked at once, not left to live its TTL
        self.release_own_stale = False
        self.released: list[int] = []  # the stale leases revoked so far

    @classmethod
    def from_config(
        cls,
        config: BrokerConfig,
        broker_addr: str,
        *,
        on_master: OnMaster = _nothing_on_master,
        on_slave: OnSlave = _nothing_on_slave,
    ) -> Controller:
        """The broker's controller from its config (``enableControllerMode``'s keys). Raises
        ConfigError when its TLS or credential files cannot be read (access.py)."""
        return cls(
            controller_addr=config.controller_addr,
            cluster=config.broker_cluster_name,
            broker_name=config.broker_name,
            broker_id=config.broker_id,
            broker_addr=broker_addr,
            on_master=on_master,
            on_slave=on_slave,
            lease_ttl_ms=config.controller_heart_beat_timeout_mills,
            elect_unclean=config.enable_elect_unclean_master,
            acks=AckRule(
                config.in_sync_replicas,
                config.min_in_sync_replicas,
                config.all_ack_in_sync_state_set,
            ),
            access=access_from_config(config),
        )

    # -- what the broker asks -------------------------------------------------------------

    def lease_valid(self) -> bool:
        """This broker's lease is certainly alive now (fence.py)."""
        return self.keeper.valid()

    def may_ack(self) -> bool:
        """This broker is the group's master and may acknowledge a write now: it holds the
        master key with a lease that is certainly alive. False from before etcd can expire
        that lease, so never while another broker is master."""
        return (
            self.role is Role.MASTER
            and self.keeper.lease_id == self._master_lease
            and self.keeper.valid()
        )

    @property
    def denied(self) -> AccessDenied | None:
        """Why etcd refused this controller's access at its last call (TLS or credentials:
        the message names what failed), or None. Refused, it is never master: it can get no
        lease, read nothing and campaign for nothing."""
        return self.etcd.denied

    async def read_state(self) -> GroupState:
        """The group's state in etcd now (one linearizable read)."""
        snap = await self.etcd.snapshot(self.keys.prefix)
        return read_state(self.keys, snap.entries, snap.revision)

    async def alter_sync_state_set(
        self, members: Iterable[int], sync_state_set_epoch: int | None = None
    ) -> GroupState:
        """As master, makes the SyncStateSet ``members`` (which must hold this broker), at
        the master epoch this broker was told and ``sync_state_set_epoch`` (default: the one
        last read). Returns the new state; raises Refused (another master or epoch, a dead
        member, the set changed meanwhile) or EtcdError."""
        state = await self.read_state()
        new = await campaign.alter_sync_state_set(
            self.etcd,
            self.keys,
            state,
            self.broker_id,
            self.epoch,
            self.state.sync_state_set_epoch
            if sync_state_set_epoch is None
            else sync_state_set_epoch,
            frozenset(members),
        )
        self.state = new
        log.info(
            "controller_sync_state_set",
            broker=self.keys.broker_name,
            members=sorted(new.sync_state_set),
            sync_state_set_epoch=new.sync_state_set_epoch,
        )
        return new

    # -- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self.keeper.run(), name="controller-lease"),
            asyncio.create_task(every(0.02, self._round, name="controller"), name="controller"),
        ]

    async def close(self, *, revoke: bool = True) -> None:
        """Stops; ``revoke``: gives the lease up, so a master's key goes at once (another is
        elected without waiting for the TTL). The role is NONE after it."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self.role = Role.NONE
        if revoke:
            try:
                await self.keeper.revoke()
            except EtcdError as e:
                log.warning("controller_revoke_failed", error=str(e))
        await self.etcd.close()

    # -- the loop -------------------------------------------------------------------------

    async def _register(self, lease: int) -> None:
        await campaign.register(self.etcd, self.keys, self.broker_id, self.broker_addr, lease)

    async def _round(self) -> None:
        """Read, tell, campaign, wait for a change. An etcd failure: wait a keep-alive
        interval (or a lease change) and read again."""
        try:
            snap = await self.etcd.snapshot(self.keys.prefix)
            state = read_state(self.keys, snap.entries, snap.revision)
            self.state = state
            await self._tell(state)
            if state.master is None and await self._campaign(state):
                return  # read again: the new state is ours
            self._wake.clear()
            await self.etcd.wait_change(self.keys.prefix, snap.revision, self.keeper.interval)
        except (EtcdError, LayoutError) as e:
            self.failed_rounds += 1
            left_out = self.throttle.allow(("controller_round_failed", type(e), str(e)))
            if left_out is not None:
                log.warning("controller_round_failed", broker=self.keys.broker_name,
                            error=str(e), left_out=left_out)  # fmt: skip
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.keeper.interval):
                    await self._wake.wait()
            self._wake.clear()

    async def _campaign(self, state: GroupState) -> bool:
        lease = self.keeper.lease_id
        if lease is None or not self.keeper.registered or not self.keeper.valid():
            return False
        if self._clock() < self.campaign_after and not state.first_time_for_elect:
            return False  # the next round (at most a keep-alive interval away) tries again
        try:
            won = await campaign.campaign(
                self.etcd,
                self.keys,
                state,
                self.broker_id,
                self.broker_addr,
                lease,
                unclean=self.elect_unclean,
            )
        except Refused as r:
            if self.last_refusal is None or self.last_refusal.refusal != r.refusal:
                log.info("controller_not_elected", broker=self.keys.broker_name, why=str(r))
            self.last_refusal = r
            return False
        except LeaseGone:
            return False  # the keeper grants a new one
        if won is None:
            return False  # another changed the group first: read it again
        self.elections += 1
        log.info(
            "controller_elected",
            broker=self.keys.broker_name,
            broker_id=self.broker_id,
            epoch=won.master_epoch,
        )
        return True

    async def _tell(self, state: GroupState) -> None:
        """Tells the broker its role when it changed."""
        master = state.master
        if master is not None and master.broker_id == self.broker_id:
            if master.lease != self.keeper.lease_id:
                # our key from a lease we no longer hold (a restart)
                self.role = Role.NONE
                await self._release_stale(master)
                return
            if self.role is not Role.MASTER or self.epoch != master.epoch:
                self.role, self.epoch, self._master_lease = Role.MASTER, master.epoch, master.lease
                self.master_addr = master.broker_addr
                log.info("controller_role", role="MASTER", epoch=master.epoch)
                await self._on_master(master.epoch)
        elif master is not None:
            changed = (self.master_addr, self.epoch) != (master.broker_addr, master.epoch)
            if self.role is not Role.SLAVE or changed:
                self.role, self.epoch, self.master_addr = (
                    Role.SLAVE,
                    master.epoch,
                    master.broker_addr,
                )
                log.info(
                    "controller_role",
                    role="SLAVE",
                    master=master.broker_addr,
                    epoch=master.epoch,
                )
                await self._on_slave(master.broker_addr, master.epoch)
        elif self.role is Role.MASTER:
            # our key is gone (its lease expired or was lost): fenced already, so may_ack was
            # false before; on_slave follows once another master is installed
            self.role = Role.NONE

    async def _release_stale(self, master: Master) -> None:
        """Revokes the lease of a master key this broker's previous incarnation left.

        Left alone it lives its TTL from the crash, and a full TTL (plus etcd's election
        timeout) again from etcd's return when etcd went down too -- etcd's lessor renews
        every lease when it becomes leader -- so the SyncStateSet members could not campaign
        before (kill master and etcd together: ~4 s from etcd's return). Only with
        ``release_own_stale`` and a key naming this broker's own address: the process that
        holds it is gone, so it acknowledges nothing and no fencing is bypassed. No 5.x
        counterpart: its controller sees broker heartbeats, not leases."""
        if not self.release_own_stale or master.broker_addr != self.broker_addr:
            return
        if master.lease == 0 or master.lease in self.released:
            return
        with contextlib.suppress(LeaseGone):  # expired meanwhile: the key is gone already
            await self.etcd.revoke(master.lease)
        self.released.append(master.lease)
        log.info(
            "controller_stale_master_released",
            broker=self.keys.broker_name,
            lease=f"{master.lease:x}",
            epoch=master.epoch,
        )
