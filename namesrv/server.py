"""Namesrv: wiring of route table, KV config, processor and server, plus the liveness loop."""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from aiorocketmq.namesrv import acl
from aiorocketmq.namesrv.config import NamesrvConfig
from aiorocketmq.namesrv.kvconfig import KVConfig
from aiorocketmq.namesrv.metrics import NamesrvCollector
from aiorocketmq.namesrv.processors import NamesrvProcessor, unknown_code
from aiorocketmq.namesrv.routes import Eviction, RouteTable
from aiorocketmq.remoting.acl.config import location
from aiorocketmq.remoting.acl.guard import AclGuard
from aiorocketmq.remoting.acl.metrics import AclCollector
from aiorocketmq.remoting.acl.watch import AclFiles
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.counters import RequestStats
from aiorocketmq.remoting.lifecycle import Service
from aiorocketmq.remoting.metrics import Metrics
from aiorocketmq.remoting.metrics_port import metrics_port
from aiorocketmq.remoting.server import RemotingServer
from aiorocketmq.remoting.tasks import every

log = structlog.get_logger(__name__)


def monotonic_ms() -> float:
    return time.monotonic() * 1000


class Namesrv(Service):
    """A name server; ``async with Namesrv(cfg, server_cfg)`` serves until the block ends."""

    def __init__(self, config: NamesrvConfig, server_config: ServerConfig) -> None:
        self.config = config
        self.table = RouteTable(monotonic_ms, config.broker_channel_expired_time)
        self.kv = KVConfig(config.kv_config_path)
        self.processor = NamesrvProcessor(
            self.table,
            self.kv,
            order_message_enable=config.order_message_enable,
            max_body=server_config.frame_max_length,
        )
        port = metrics_port(config.metrics_port, server_config.listen_port)
        stats = RequestStats() if port >= 0 else None
        self.acl: AclGuard | None = None  # aclEnable: the check of the writes (namesrv.acl)
        if config.acl_enable:
            files = AclFiles(location(config.acl_file, config.acl_dir),
                             poll_seconds=config.acl_file_watch_interval / 1000)  # fmt: skip
            self.acl = AclGuard(files, acl.POLICY)
        self.server = RemotingServer(
            self.processor.routes(), server_config, unknown=unknown_code, stats=stats,
            guard=self.acl,
        )  # fmt: skip
        self.server.add_close_listener(self._channel_closed)
        self._scan: asyncio.Task[None] | None = None
        self._acl_watch: asyncio.Task[None] | None = None
        collectors = [
            NamesrvCollector(self.processor),
            *([AclCollector(self.acl)] if self.acl else []),
        ]
        self.metrics = None if stats is None else Metrics(
            config.metrics_host or server_config.bind_address, port, stats,
            lambda: {"main": self.server}, collectors,
        )  # fmt: skip

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        if self.acl is not None:  # a bad ACL file stops the start (ConfigError)
            self.acl.files.load_now()
            log.info("acl_enabled", files=list(self.acl.files.rules.files),
                     accounts=len(self.acl.files.rules.accounts))  # fmt: skip
        self.kv.load()
        if self.metrics is not None:  # first: `listening` says everything is up
            await self.metrics.start()
        try:
            await self.server.start()
        except BaseException:
            if self.metrics is not None:
                await self.metrics.close()
            raise
        interval = self.config.scan_not_active_broker_interval / 1000
        self._scan = asyncio.get_running_loop().create_task(
            every(interval, self._expire, name="scan_not_active_broker"), name="namesrv-scan"
        )
        if self.acl is not None:
            self._acl_watch = asyncio.get_running_loop().create_task(
                self.acl.files.run(), name="acl_watch"
            )

    async def close(self) -> None:
        for task in (self._scan, self._acl_watch):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.server.close()
        if self.metrics is not None:
            await self.metrics.close()

    async def _expire(self) -> None:
        for eviction in self.table.expire():
            self._log_eviction(eviction)
            if isinstance(eviction.channel, Channel):
                eviction.channel.close()

    def _channel_closed(self, ch: Channel) -> None:
        for eviction in self.table.drop_channel(ch):
            self._log_eviction(eviction)

    @staticmethod
    def _log_eviction(e: Eviction) -> None:
        log.warning("broker_evicted", addr=e.broker_addr, broker=e.broker_name, cluster=e.cluster,
                    reason=e.reason)  # fmt: skip
