"""A slave copies its master's metadata every 10 s (SlaveSynchronize.syncAll; fidelity.md
3.2): topic config (21), consumer offsets (43), delay offsets (45) and subscription groups
(201), asked of the master the name server named in its REGISTER_BROKER answer. Tables
with a data version are replaced only when the master's differs. Also the two codes a
master answers for it (and for a 4.9.8 slave): GET_ALL_CONSUMER_OFFSET (43) and
GET_ALL_DELAY_OFFSET (45), whose bodies are consumerOffset.json's and delayOffset.json's.

Ours (issue 35 item 5): our master also sends each topic, group and offset change with the
HA stream (broker.meta_stream), so the timer is a backstop (a slave that missed records, a
4.9.8 master); a copy older than a record the slave applied is passed over
(broker.meta_follow.admit).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import structlog

from aiorocketmq.broker.context import BrokerContext
from aiorocketmq.broker.meta_follow import MetaFollower
from aiorocketmq.broker.meta_records import GROUPS, META_OFFSET, OFFSETS, TOPICS
from aiorocketmq.broker.meta_stream import meta_mark
from aiorocketmq.broker.offsets import ConsumerOffsets
from aiorocketmq.broker.schedule import ScheduleService
from aiorocketmq.broker.store import MessageStore
from aiorocketmq.broker.timer import TimerService
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand, response_to
from aiorocketmq.remoting.protocol.group import SubscriptionGroupConfig
from aiorocketmq.remoting.protocol.register import DataVersion, TopicConfigWrapper
from aiorocketmq.remoting.protocol.route import dumps
from aiorocketmq.remoting.protocol.signature import Credentials

log = structlog.get_logger(__name__)


class SyncProcessor:
    """What a master answers a slave (AdminBrokerProcessor.getAllConsumerOffset /
    getAllDelayOffset)."""

    def __init__(
        self, offsets: ConsumerOffsets, schedule: ScheduleService, store: MessageStore
    ) -> None:
        self.offsets = offsets
        self.schedule = schedule
        self.store = store

    def all_consumer_offsets(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        # ours: metaOffset, which records the copy holds (broker.meta_follow)
        body = dumps(self.offsets.to_json())
        return response_to(req, R.SUCCESS, ext_fields=meta_mark(self.store), body=body)

    def all_delay_offsets(self, req: RemotingCommand, ch: Channel) -> RemotingCommand:
        return response_to(req, R.SUCCESS, body=dumps(self.schedule.to_json()))


class SlaveSync:
    def __init__(
        self,
        ctx: BrokerContext,
        offsets: ConsumerOffsets,
        schedule: ScheduleService,
        master_addr: Callable[[], str | None],
        follower: MetaFollower,
        *,
        tls: ssl.SSLContext | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.ctx = ctx
        self.follower = follower
        self.offsets = offsets
        self.schedule = schedule
        self.master_addr = master_addr  # () -> "host:port" of the master, or None
        # tls.enable, as the broker's other clients; signed with the inner credentials: r#3115
        self.client = RemotingClient(tls=tls, credentials=credentials)
        self.rounds = 0
        self.timer: TimerService | None = None  # the broker sets it: its wheel follows

    async def sync_all(self) -> None:
        addr = self.master_addr()
        if not addr or addr == self.ctx.addr:
            return
        try:
            await self._topics(addr)
            await self._offsets(addr)
            await self._delay_offsets(addr)
            await self._groups(addr)
        except (RemotingError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("slave_sync_failed", master=addr, error=str(exc))
            return
        try:  # compat: SlaveSynchronize.syncTimerCheckPoint (5.x); a 4.9.8 master has none
            await self._timer_checkpoint(addr)
        except (RemotingError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.debug("slave_timer_sync_failed", master=addr, error=str(exc))
        self.rounds += 1

    async def _timer_checkpoint(self, addr: str) -> None:
        if self.timer is None:
            return
        obj, _ = await self._ask(addr, C.GET_TIMER_CHECK_POINT)
        self.timer.follow(int(obj["lastReadTimeMs"]), int(obj["slotBeganPhys"]))

    async def _ask(self, addr: str, code: int) -> tuple[Any, str | None]:
        """The answer's object and its metaOffset (None from a 4.9.8 master)."""
        resp = await self.client.invoke(addr, RemotingCommand.request(code), 3.0)
        if resp.code != R.SUCCESS:
            raise ValueError(f"code {code}: {resp.code} {resp.remark}")
        return fastjson.loads(resp.body), resp.ext_fields.get(META_OFFSET)

    async def _topics(self, addr: str) -> None:
        obj, meta_offset = await self._ask(addr, C.GET_ALL_TOPIC_CONFIG)
        wrapper = TopicConfigWrapper.from_json(obj)
        table = self.ctx.topics
        if wrapper.data_version == table.data_version:
            return
        if not self.follower.admit(TOPICS, meta_offset):
            return
        await table.replace(wrapper)
        log.info("slave_topics_synced", master=addr, topics=len(table.topics))

    async def _offsets(self, addr: str) -> None:
        obj, meta_offset = await self._ask(addr, C.GET_ALL_CONSUMER_OFFSET)
        if not self.follower.admit(OFFSETS, meta_offset):
            return
        for key, queues in (obj.get("offsetTable") or {}).items():
            self.offsets.table[str(key)] = {int(q): int(o) for q, o in queues.items()}
        self.offsets.mark_dirty()

    async def _delay_offsets(self, addr: str) -> None:
        obj, _ = await self._ask(addr, C.GET_ALL_DELAY_OFFSET)
        table = obj.get("offsetTable") or {}
        self.schedule.offsets = {int(level): int(offset) for level, offset in table.items()}
        self.schedule.mark_dirty()

    async def _groups(self, addr: str) -> None:
        obj, meta_offset = await self._ask(addr, C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        groups = self.ctx.groups
        version = DataVersion.from_json(obj.get("dataVersion"))
        if version == groups.data_version:
            return
        if not self.follower.admit(GROUPS, meta_offset):
            return
        table = obj.get("subscriptionGroupTable") or {}
        fresh = {str(name): SubscriptionGroupConfig.from_json(raw) for name, raw in table.items()}
        await groups.replace(fresh, version)
        log.info("slave_groups_synced", master=addr, groups=len(groups.groups))

    async def close(self) -> None:
        await self.client.close()
