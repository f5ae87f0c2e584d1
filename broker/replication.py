"""Replication: the broker's role in its group (brokerRole, brokerId; fidelity D11, §3.2).

Every broker listens for slaves on listenPort + 1 (HAMaster). A SLAVE follows its master
(HASlave) and its store refuses puts. A SYNC_MASTER answers a put only once a slave holds it:
FLUSH_SLAVE_TIMEOUT after ``syncFlushTimeout``, SLAVE_NOT_AVAILABLE at once when no slave is
connected or the best one is ``haSlaveFallbehindMax`` behind (CommitLog.handleHA); both count
as stored, as in Java.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

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


def check_role(role: BrokerRole, broker_id: int) -> int:
    """BrokerStartup: a master's id is 0 whatever the file says; a slave's must be > 0."""
    if role is BrokerRole.SLAVE:
        if broker_id <= 0:
            raise ConfigError("Slave's brokerId must be > 0")
        return broker_id
    return 0


class Replication:
    def __init__(
        self,
        ctx: BrokerContext,
        namesrv: NamesrvAPI,
        *,
        credentials: Credentials | None = None,
        acl: AclGuard | None = None,
    ) -> None:
        """``credentials``: what a slave authenticates to its master with; ``acl``: this
        broker's ACL, which then decides who may replicate from it (ha_auth)."""
        self.ctx = ctx
        self.namesrv = namesrv
        self.credentials = credentials
        self.master = HAMaster(ctx.store, self._settings)
        if acl is not None:
            self.master.admit = admission(acl)
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
        if self.is_slave:
            store.set_slave(True)
            self.slave = HASlave(store, self._master_ha_addr, self._settings, self.credentials)
            self._task = asyncio.get_running_loop().create_task(self.slave.run(), name="ha")
        elif self.ctx.config.broker_role is BrokerRole.SYNC_MASTER:
            store.replicate = self.wait_for_slave

    async def wait_for_slave(self, end: int) -> PutStatus | None:
        """CommitLog.handleHA for a put ending at ``end`` (None: a slave has it)."""
        cfg = self.ctx.config
        if not self.master.slave_ok(end, cfg.ha_slave_fallbehind_max):
            return PutStatus.SLAVE_NOT_AVAILABLE
        if await self.master.wait_acked(end, self.ctx.store_config.sync_flush_timeout / 1000):
            return None
        log.warning("flush_slave_timeout", end=end, acked=self.master.acked)
        return PutStatus.FLUSH_SLAVE_TIMEOUT

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.master.close()
