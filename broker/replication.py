"""Replication: the broker's role in its group (brokerRole, brokerId; fidelity D11, §3.2).

Every broker listens for slaves on listenPort + 1 (HAMaster). A SLAVE follows its master
(HASlave) and its store refuses puts. A SYNC_MASTER answers a put only once a slave holds it:
FLUSH_SLAVE_TIMEOUT after ``syncFlushTimeout``, SLAVE_NOT_AVAILABLE at once when no slave is
connected or the best one is ``haSlaveFallbehindMax`` behind (CommitLog.handleHA); both count
as stored, as in Java.

With ``enableControllerMode`` the role is the controller's (broker.roles): the broker starts
fenced -- its store refuses puts, it follows nobody and serves no slave -- and ``lead`` /
``follow`` switch it at run time; the HA stream then starts with the epoch handshake
(ha_frames). Without it nothing here changes: the static roles and their protocol, as 4.9.8.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Callable

import structlog

from aiorocketmq.broker.config import BrokerRole
from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.ha_auth import admission
from aiorocketmq.broker.ha_master import HAMaster
from aiorocketmq.broker.ha_slave import HASlave
from aiorocketmq.broker.namesrv_api import NamesrvAPI
from aiorocketmq.broker.store import PutStatus
from aiorocketmq.remoting.acl.guard import AclGuard
from aiorocketmq.remoting.errors import ConfigError
from aiorocketmq.remoting.protocol.signature import Credentials

log = structlog.get_logger(__name__)


def check_role(role: BrokerRole, broker_id: int, *, controller: bool = False) -> int:
    """BrokerStartup: a master's id is 0 whatever the file says; a slave's must be > 0. With
    enableControllerMode the role is the controller's and the configured id, which must be
    >= 1 and distinct in the group, is the replica's identity (a fenced broker registers
    nothing; broker.roles gives the id of each role: 0 as master, this one as slave)."""
    if controller:
        if broker_id <= 0:
            raise ConfigError(
                "enableControllerMode: every replica of a group sets its own brokerId >= 1"
                f" (its identity with the controller; the master is brokerId 0 in routes), not"
                f" {broker_id}"
            )
        return broker_id
    if role is BrokerRole.SLAVE:
        if broker_id <= 0:
            raise ConfigError("Slave's brokerId must be > 0")
        return broker_id
    return 0


class Replication:
    """``ha_tls`` (``tls.ha.enable``): the HA port's server context and the context a slave
    dials its master's HA port with; None: plaintext, as 4.9.8."""

    def __init__(
        self,
        ctx: BrokerContext,
        namesrv: NamesrvAPI,
        ha_tls: tuple[ssl.SSLContext, ssl.SSLContext] | None = None,
        *,
        credentials: Credentials | None = None,
        acl: AclGuard | None = None,
    ) -> None:
        """``credentials``: what a slave authenticates to its master with; ``acl``: this
        broker's ACL, which then decides who may replicate from it (ha_auth)."""
        self.ctx = ctx
        self.namesrv = namesrv
        self.ha_tls = ha_tls
        self.credentials = credentials
        self.master = HAMaster(ctx.store, self._settings, tls=None if ha_tls is None else ha_tls[0])
        if acl is not None:
            self.master.admit = admission(acl)
        self.controller = ctx.config.enable_controller_mode
        if self.controller:
            self.master.epoch_mode = True
            self.master.serving = False  # fenced until the controller gives a role
        self.slave: HASlave | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def is_slave(self) -> bool:
        return self.ctx.config.broker_role is BrokerRole.SLAVE

    def _settings(self) -> tuple[int, int, int]:
        cfg = self.ctx.config
        return (cfg.ha_transfer_batch_size, cfg.ha_send_heartbeat_interval,
                cfg.ha_housekeeping_interval)  # fmt: skip

    def _master_ha_addr(self) -> str | None:
        """haMasterAddress, else what the name server named (updateMasterHAServerAddr...)."""
        configured = self.ctx.config.ha_master_address
        if configured:
            return configured
        learned = self.namesrv.master
        return learned.ha_server_addr if learned is not None else None

    async def start(self, sock: socket.socket) -> None:
        await self.master.start(sock)
        store = self.ctx.store
        if self.controller:
            store.set_slave(True)  # fenced
        elif self.is_slave:
            store.set_slave(True)
            self._follow(self._master_ha_addr, None)
        elif self.ctx.config.broker_role is BrokerRole.SYNC_MASTER:
            store.replicate = self.wait_for_slave

    def _follow(self, addr: Callable[[], str | None], broker_id: int | None) -> None:
        self.slave = HASlave(self.ctx.store, addr, self._settings,
                             tls=None if self.ha_tls is None else self.ha_tls[1],
                             credentials=self.credentials, broker_id=broker_id)  # fmt: skip
        self._task = asyncio.get_running_loop().create_task(self.slave.run(), name="ha")

    async def stop_following(self) -> None:
        """Stop the HA client, if one runs; its connection is closed when this returns."""
        task, self._task, self.slave = self._task, None, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def fence(self) -> None:
        """Acknowledge nothing more as a master: puts refused (and those still waiting for
        their flush or slave answered SERVICE_NOT_AVAILABLE), no slave served."""
        store = self.ctx.store
        store.set_slave(True)
        store.replicate = None
        self.master.serving = False
        self.master.fail_waiters()
        self.master.drop_slaves()

    async def follow(self, ha_addr: str, broker_id: int) -> None:
        """Fenced, then a slave of the master whose HA port is ``ha_addr``: the epoch
        handshake cuts this log back to the consistent point, then it copies."""
        self.fence()
        await self.stop_following()
        self._follow(lambda: ha_addr, broker_id)

    async def lead(self, sync: bool) -> None:
        """A master: the HA client stopped, slaves served (those connected are dropped so
        they agree on epochs again), puts taken -- waiting for a slave when ``sync``."""
        await self.stop_following()
        store = self.ctx.store
        counted = self.master.counted is not None  # broker.failover's SyncStateSet
        store.replicate = self.wait_for_slave if sync or counted else None
        self.master.drop_slaves()
        self.master.serving = True
        store.set_slave(False)

    async def wait_for_slave(self, end: int) -> PutStatus | None:
        """CommitLog.handleHA for a put ending at ``end`` (None: a slave has it). Controller
        mode (``master.counted`` set by broker.failover): ``master.needed`` SyncStateSet
        slaves must hold it; none needed, none waited for."""
        cfg, master = self.ctx.config, self.master
        if master.counted is not None:
            if master.needed <= 0:
                return None
            if master.counted_connected() < master.needed:
                return PutStatus.SLAVE_NOT_AVAILABLE
        if not master.slave_ok(end, cfg.ha_slave_fallbehind_max):
            return PutStatus.SLAVE_NOT_AVAILABLE
        if await self.master.wait_acked(end, self.ctx.store_config.sync_flush_timeout / 1000):
            return None
        log.warning("flush_slave_timeout", end=end, acked=self.master.acked)
        return PutStatus.FLUSH_SLAVE_TIMEOUT

    async def close(self) -> None:
        await self.stop_following()
        await self.master.close()
