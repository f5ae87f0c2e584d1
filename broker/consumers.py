"""Consumers: the broker's consumer-facing state and its upkeep -- client registry, offsets,
orderly locks, parked pulls, delayed delivery, SQL92 filters -- and the notices sent to
clients."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import structlog

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.filter.compiled import Compiled
from aiorocketmq.broker.filter.registry import ConsumerFilters
from aiorocketmq.broker.locks import RebalanceLocks
from aiorocketmq.broker.longpoll import PullHold
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.registry import ClientRegistry
from aiorocketmq.broker.schedule import ScheduleService
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand

log = structlog.get_logger(__name__)

FILTER_PERSIST_SECONDS = 10.0  # BrokerController: consumerFilterManager.persist() every 10 s


class Consumers:
    def __init__(self, ctx: BrokerContext, files: dict[str, ConfigFile]) -> None:
        cfg = ctx.config
        self.ctx = ctx
        self.registry = ClientRegistry(cfg.client_channel_expired_time / 1000)
        self.offsets = ConsumerOffsets(files["consumerOffset.json"])
        self.locks = RebalanceLocks(cfg.rebalance_lock_max_live_time / 1000)
        self.hold = PullHold(ctx.store.max_offset)
        self.schedule = ScheduleService(ctx.store, files["delayOffset.json"])
        self.filters = ConsumerFilters(files["consumerFilter.json"], Compiled())
        # DefaultConsumerIdsChangeListener: REGISTER / UNREGISTER -> ConsumerFilterManager
        self.registry.on_register = self.filters.register
        self.registry.on_group_gone = self.filters.unregister
        ctx.store.add_dispatch_listener(self.hold.arrived)

    def load(self) -> None:
        self.offsets.load()
        self.schedule.load()
        self.filters.load()

    # ------------------------------------------------------------ notices

    def notify_ids_changed(self, group: str) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED (40, oneway) to every member, so they rebalance now."""
        for channel in self.registry.consumer_channels(group):
            if isinstance(channel, Channel):
                notice = RemotingCommand.request(
                    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True
                )
                channel.send_oneway(notice)

    @staticmethod
    def send_oneway(channel: Channel, cmd: RemotingCommand) -> None:
        channel.send_oneway(RemotingCommand.request(cmd.code, dict(cmd.ext_fields), cmd.body,
                                                    oneway=True))  # fmt: skip

    def channel_closed(self, channel: Channel) -> None:
        self.hold.channel_closed(channel)
        for group in self.registry.channel_closed(channel):
            log.info("consumer_channel_closed", group=group, peer=channel.peer)
            self._notify_if_enabled(group)

    def _notify_if_enabled(self, group: str) -> None:
        config = self.ctx.groups.groups.get(group)
        if config is None or config.notify_consumer_ids_changed_enable:
            self.notify_ids_changed(group)

    # ------------------------------------------------------------ periodic jobs

    async def expire_clients(self) -> None:
        """Drop clients silent for clientChannelExpiredTime; their groups are told."""
        stale, groups = self.registry.expire(time.monotonic())
        for channel in stale:
            if isinstance(channel, Channel):
                log.warning("client_channel_expired", peer=channel.peer)
                channel.close()
        for group in groups:
            self._notify_if_enabled(group)

    async def check_parked(self) -> None:
        self.hold.check()

    async def persist_offsets(self) -> None:
        await self.offsets.persist()

    async def persist_delay_offsets(self) -> None:
        await self.schedule.persist()

    async def persist_filters(self) -> None:
        """ConsumerFilterManager.persist (every 10 s): long-dead filters dropped, then saved."""
        self.filters.clean(self.ctx.config.filter_data_clean_time_span)
        await self.filters.persist()

    def jobs(self, cfg: BrokerConfig) -> list[tuple[float, str, Callable[[], Awaitable[None]]]]:
        check = 5.0 if cfg.long_polling_enable else cfg.short_polling_time_mills / 1000
        return [
            (cfg.flush_consumer_offset_interval / 1000, "persist_consumer_offsets",
             self.persist_offsets),
            (cfg.flush_delay_offset_interval / 1000, "persist_delay_offsets",
             self.persist_delay_offsets),
            (cfg.client_channel_scan_interval / 1000, "scan_not_active_channel",
             self.expire_clients),
            (FILTER_PERSIST_SECONDS, "persist_consumer_filters", self.persist_filters),
            (check, "check_parked_pulls", self.check_parked),
        ]  # fmt: skip

    def answer_parked(self) -> None:
        """At stop, first: answer parked pulls so consumers move on."""
        self.hold.wake_all()

    def persist_now(self) -> None:
        """At stop, once requests are drained: save offsets and delay progress."""
        self.offsets.persist_now()
        self.schedule.persist_now()
        self.filters.clean(self.ctx.config.filter_data_clean_time_span)  # as every save
        self.filters.persist_now()
