"""Roles: the broker's role at run time, as the controller decides it (5.x ReplicasManager
.changeToMaster / changeToSlave over AutoSwitchHAService, rocketmq-all-5.3.3).

With ``enableControllerMode`` a broker starts fenced (``Role.FENCED``: no put, no name-server
registration, no HA) and the controller -- in process (``become_master`` /
``become_slave``), or over the wire with 5.x's NOTIFY_BROKER_ROLE_CHANGED (processors
.controller) -- makes it:

- **master at epoch e**: the HA client stopped; a record its raw copy ends inside cut
  (AutoSwitchHAService.truncateInvalidMsg); ``<e, max physical offset>`` appended to the
  epoch file, durably, before any put is taken; brokerId 0; puts taken (waiting for a slave
  as a SYNC_MASTER); the slaves connected are dropped, so they agree on epochs again; the
  master-only services (delays, transaction checks) started; registered with every name
  server at once, not at the next period.
- **slave of M at epoch e**: fenced first -- puts refused with 4.9.8's SLAVE answer, and a
  put still waiting for its flush or its slave answered SERVICE_NOT_AVAILABLE, so nothing in
  flight is acknowledged after the switch; brokerId as given; the master-only services
  stopped; registered at once; then it follows M: the epoch handshake cuts its log back to
  the consistent point (crash-safe) before it copies (broker.ha_slave).

An epoch older than the epoch file's last is refused (RoleError): a stale order. The same
order twice is a no-op. Changes are serialized (one lock).
"""

from __future__ import annotations

import asyncio
import dataclasses
from enum import StrEnum
from typing import Protocol

import structlog

from aiorocketmq.broker.config import BrokerRole
from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.listen import HA_OFFSET
from aiorocketmq.broker.replication import Replication
from aiorocketmq.broker.store.epochs import EpochEntry
from aiorocketmq.remoting.protocol.message import now_ms

log = structlog.get_logger(__name__)


class Role(StrEnum):
    FENCED = "FENCED"  # controller mode, no role given yet
    MASTER = "MASTER"
    SLAVE = "SLAVE"


class RoleError(Exception):
    """A role change refused (a stale epoch, a bad broker id); nothing changed."""


class RoleHost(Protocol):
    """What a role change asks of the broker (the Broker, once started)."""

    @property
    def ctx(self) -> BrokerContext: ...
    @property
    def replication(self) -> Replication: ...

    broker_id: int

    async def master_services(self, on: bool | None) -> None:
        """Start the master-only loops (True), the slave's (False), or neither (None)."""

    async def register_now(self) -> None:
        """REGISTER_BROKER with every name server, at once."""


class Roles:
    def __init__(self, host: RoleHost, *, controller: bool) -> None:
        self.host = host
        self.controller = controller  # enableControllerMode
        cfg = host.ctx.config
        if controller:
            self.role = Role.FENCED
        else:
            self.role = Role.SLAVE if cfg.broker_role is BrokerRole.SLAVE else Role.MASTER
        self.epoch = host.ctx.store.epochs.last_epoch  # the epoch of the current role
        self.master_addr: str | None = None  # the master a controller-made slave follows
        self.changes = 0  # role changes made (the metrics' counter)
        self.replica_id = cfg.broker_id  # controller mode: this broker's id as a slave
        # the role a master takes: brokerRole when it names a master, else 5.x's SYNC_MASTER
        self.master_role = (
            BrokerRole.SYNC_MASTER if cfg.broker_role is BrokerRole.SLAVE else cfg.broker_role
        )
        self._lock = asyncio.Lock()

    @property
    def registrable(self) -> bool:
        """Whether the broker registers with name servers (not while fenced)."""
        return self.role is not Role.FENCED

    async def become_master(self, epoch: int) -> None:
        """This broker leads its group from ``epoch`` on (ReplicasManager.changeToMaster)."""
        self._check_controller()
        async with self._lock:
            host, store = self.host, self.host.ctx.store
            last = store.epochs.last_epoch
            if self.role is Role.MASTER and epoch == self.epoch:
                return
            if epoch < last:
                raise RoleError(f"epoch {epoch} is older than this broker's last, {last}")
            await host.replication.stop_following()
            if store.dispatched_phys_offset < store.max_phys_offset:
                store.truncate_to(store.dispatched_phys_offset)  # a record never completed
            if epoch > last:  # durable before any put is taken
                store.epochs.append(EpochEntry(epoch, store.max_phys_offset))
            self._configure(self.master_role, 0)
            await host.replication.lead(self.master_role is BrokerRole.SYNC_MASTER)
            await host.master_services(True)
            self._changed(Role.MASTER, epoch, None)
            await host.register_now()

    async def become_slave(
        self, master_addr: str, epoch: int, broker_id: int, ha_addr: str | None = None
    ) -> None:
        """This broker follows ``master_addr`` (its HA port: ``ha_addr``, else the port
        after it) from ``epoch`` on (ReplicasManager.changeToSlave)."""
        self._check_controller()
        if broker_id <= 0:
            raise RoleError(f"a slave's brokerId must be > 0, not {broker_id}")
        host, _, port = master_addr.rpartition(":")
        if not host or not port.isdigit():
            raise RoleError(f"bad master address {master_addr!r}")
        ha = ha_addr or f"{host}:{int(port) + HA_OFFSET}"
        async with self._lock:
            last = self.host.ctx.store.epochs.last_epoch
            same = (self.role, self.epoch, self.master_addr) == (Role.SLAVE, epoch, master_addr)
            if same and self.host.broker_id == broker_id:
                return
            if epoch < last:
                raise RoleError(f"epoch {epoch} is older than this broker's last, {last}")
            self.host.replication.fence()  # nothing acknowledged from here on
            self._configure(BrokerRole.SLAVE, broker_id)
            await self.host.master_services(False)
            self._changed(Role.SLAVE, epoch, master_addr)
            await self.host.register_now()
            await self.host.replication.follow(ha, broker_id)

    def _check_controller(self) -> None:
        if not self.controller:  # static roles: brokerRole and brokerId say it all
            raise RoleError("enableControllerMode is off: the role is brokerRole's")

    def _configure(self, role: BrokerRole, broker_id: int) -> None:
        """The config the processors read (replaced, never mutated: BrokerContext), the id
        the broker registers with, and a new topic data version (TopicConfigManager
        .getDataVersion().nextVersion(epoch)) so every name server takes the full table."""
        ctx = self.host.ctx
        ctx.config = dataclasses.replace(ctx.config, broker_role=role, broker_id=broker_id)
        self.host.broker_id = broker_id
        ctx.topics.data_version = ctx.topics.data_version.next(now_ms())

    def _changed(self, role: Role, epoch: int, master_addr: str | None) -> None:
        was = self.role
        self.role, self.epoch, self.master_addr = role, epoch, master_addr
        self.changes += 1
        log.info("role_changed", role=str(role), was=str(was), epoch=epoch,
                 broker_id=self.host.broker_id, master=master_addr)  # fmt: skip
