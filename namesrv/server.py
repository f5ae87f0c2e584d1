"""Namesrv: wiring of route table, KV config, processor and server, plus the liveness loop."""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from aiorocketmq.namesrv.config import NamesrvConfig
from aiorocketmq.namesrv.kvconfig import KVConfig
from aiorocketmq.namesrv.metrics import NamesrvCollector
from aiorocketmq.namesrv.processors import NamesrvProcessor, unknown_code
from aiorocketmq.namesrv.routes import Eviction, RouteTable
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.counters import RequestStats
from aiorocketmq.remoting.lifecycle import Service
from aiorocketmq.remoting.metrics import Metrics
from aiorocketmq.remoting.metrics_port import metrics_port
from aiorocketmq.remoting.metrics_token import BearerToken
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
        self.server = RemotingServer(
            self.processor.routes(), server_config, unknown=unknown_code, stats=stats
        )
        self.server.add_close_listener(self._channel_closed)
        self._scan: asyncio.Task[None] | None = None
        token_file = config.metrics_bearer_token_file
        self.metrics = None if stats is None else Metrics(
            config.metrics_host or server_config.bind_address, port, stats,
            lambda: {"main": self.server}, [NamesrvCollector(self.processor)],
            token=BearerToken(token_file) if token_file else None,
        )  # fmt: skip

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
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

    async def close(self) -> None:
        if self._scan is not None:
            self._scan.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan
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
