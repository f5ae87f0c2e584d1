"""GroupMember: the half PushConsumer and PullConsumer share as members of their group (what
DefaultMQPushConsumerImpl and DefaultLitePullConsumerImpl of 4.9.8 each write out): the
client instance and the group's registration in it (one consumer per group and instance),
the offset store (on the brokers for clustering, in a local file for broadcasting), the
Rebalance that owns the queue table, the answers to what brokers ask of the group, and one
set of background tasks that ``leave`` ends.

A consumer opens its member in ``start()``, once there is an instance to build it on,
registers it when its own parts exist, and ends it in ``shutdown()``:

    member = await GroupMember.open(group, namesrv, settings, start_pull, stop_pulls)
    ...                          # the consumer's own parts, built on member.rebalance
    await member.register(consumer, ids_changed=..., answers=...)   # duplicate group: raises
    ...
    await member.leave()         # tasks ended, unregistered, instance released
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from aiorocketmq.client.consumer.offsets import LocalOffsetStore, OffsetStore, RemoteOffsetStore
from aiorocketmq.client.consumer.rebalance import Rebalance, StartPull, StopPulls
from aiorocketmq.client.consumer.types import ConsumeFromWhere, MessageModel, half_an_hour_ago
from aiorocketmq.client.core import api
from aiorocketmq.client.core.errors import MQBrokerError, MQClientError, MQConnectionError
from aiorocketmq.client.core.instance import ClientInstance, ConsumerHandle, local_ip
from aiorocketmq.client.core.requests import Answer, Notice
from aiorocketmq.client.core.security import NONE, Security
from aiorocketmq.remoting.log import get_logger
from aiorocketmq.remoting.protocol.codes import ResponseCode, SerializeType
from aiorocketmq.remoting.protocol.heartbeat import SubscriptionData
from aiorocketmq.remoting.protocol.route import MASTER_ID

log = get_logger(__name__)

ROUTE_TIMEOUT = 3.0  # s, per name server, as every route fetch of the SDK


class TaskSet:
    """The background tasks of one started consumer: every task it starts outside its pull
    and consume loops (timers, answers to brokers, subscription changes, a moved offset's
    delayed commit, a delayed unlock). ``close`` cancels them and refuses new ones."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self.closed:  # shutting down: what it would do is left undone
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def __len__(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        self.closed = True
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberSettings:
    """What the member takes of a consumer's options."""

    instance_name: str
    serialize_type: SerializeType
    message_model: MessageModel
    offset_store_dir: str
    allocate_strategy: str
    consume_from_where: ConsumeFromWhere
    consume_timestamp: str  # empty: half an hour before start
    orderly: bool = False
    poll_interval: float = 30.0  # s, the instance's route refresh (its first user's)
    heartbeat_interval: float = 30.0  # s
    security: Security = NONE  # credentials and TLS (part of the instance's key)


def offset_store(instance: ClientInstance, group: str, settings: MemberSettings) -> OffsetStore:
    """RemoteBrokerOffsetStore for clustering, LocalFileOffsetStore for broadcasting."""
    if settings.message_model is MessageModel.BROADCASTING:
        owner = f"{local_ip()}@{settings.instance_name}"
        return LocalOffsetStore(settings.offset_store_dir, owner, group)
    return RemoteOffsetStore(instance, group)


class GroupMember:
    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        settings: MemberSettings,
        start_pull: StartPull,
        stop_pulls: StopPulls,
    ) -> None:
        self.instance = instance
        self.group = group
        self.settings = settings
        self.started_at = int(time.time() * 1000)
        self.tasks = TaskSet()
        self.offsets = offset_store(instance, group, settings)
        s = settings
        self.rebalance = Rebalance(
            instance, group, s.message_model, self.offsets, start_pull, stop_pulls,
            self.tasks.spawn, orderly=s.orderly, strategy=s.allocate_strategy,
            consume_from=s.consume_from_where,
            consume_timestamp=s.consume_timestamp or half_an_hour_ago(),
        )  # fmt: skip
        self._registered = False
        # the start-up heartbeat reached every broker: until then a NOTIFY_CONSUMER_IDS_CHANGED
        # (the first broker's answer to that very heartbeat) does not rebalance
        self.joined = False

    @classmethod
    async def open(
        cls,
        group: str,
        namesrv_addrs: list[str],
        settings: MemberSettings,
        start_pull: StartPull,
        stop_pulls: StopPulls,
    ) -> GroupMember:
        """The process's instance for these settings, and the member on it (offsets loaded)."""
        s = settings
        inst = ClientInstance.acquire(
            namesrv_addrs, s.instance_name, s.serialize_type,
            poll_interval=s.poll_interval, heartbeat_interval=s.heartbeat_interval,
            security=s.security,
        )  # fmt: skip
        member = cls(inst, group, settings, start_pull, stop_pulls)
        try:
            await member.offsets.load()
        except BaseException:
            await inst.release()
            raise
        return member

    async def register(
        self,
        consumer: ConsumerHandle,
        *,
        ids_changed: Callable[[], None] | None = None,
        reset_offset: Notice | None = None,
        answers: dict[int, Answer] | None = None,
    ) -> None:
        """MQClientInstance.registerConsumer with the group's answers to brokers; a group
        already registered on the instance: the instance is released and MQClientError
        raised. NOTIFY_CONSUMER_IDS_CHANGED rebalances at once unless ``ids_changed``; either
        only after ``join``."""
        wake = ids_changed or self.rebalance_now

        def changed() -> None:
            if self.joined:  # before: the start's own rebalance, after ``join``, comes next
                wake()

        try:
            self.instance.register_consumer(
                self.group, consumer, ids_changed=changed, reset_offset=reset_offset,
                answers=answers,
            )  # fmt: skip
        except MQClientError:
            await self.instance.release()
            raise
        self._registered = True

    async def join(self) -> None:
        """The start-up heartbeat to every broker the routes name (sendHeartbeatToAllBroker),
        then notifications rebalance. The start's first rebalance comes after this.

        ours: a rebalance woken by the first broker's NOTIFY_CONSUMER_IDS_CHANGED, while the
        heartbeat had not reached the others yet, asked one of those for the group's consumers,
        got "no consumer for this group" and warned ``rebalance_no_consumer_list`` at every
        first start (Java's client has the same race and warns the same)."""
        await self.instance.heartbeat_all()
        self.joined = True

    def rebalance_now(self) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED: rebalance at once (RebalanceService.wakeup)."""
        self.tasks.spawn(self.rebalance.run())

    async def fetch_routes(self, topics: Iterable[str], *, strict: bool = False) -> None:
        """The topics' routes into the rebalance; with ``strict`` (start), MQConnectionError
        when no name server answers (at most each name server's timeout, once).

        ours: Java's start() succeeds and its rebalance logs the failure every 20 s; a
        consumer pointed at a wrong address then waits forever (aiokafka's start() raises
        KafkaConnectionError, nats-py's NoServersError)."""
        for topic in list(topics):
            try:
                route = await self.instance.fetch_route(topic, ROUTE_TIMEOUT)
            except MQConnectionError:
                if strict:
                    raise
                continue
            except MQClientError:
                continue
            strict = False  # a name server answered: later failures are passing ones
            if route is not None:
                self.rebalance.route_changed(topic, route)

    async def check_in_brokers(self, subscriptions: Iterable[SubscriptionData]) -> None:
        """MQClientInstance.checkClientInBroker: each subscription that is not a tag one is
        shown (CHECK_CLIENT_CONFIG) to one broker of its topic, which must take it; its
        refusal is raised as MQBrokerError (code 1: enablePropertyFilter is off; 23: the
        broker's parser's message). Before the first heartbeat, as Java does."""
        for sub in list(subscriptions):
            if sub.expression_type == "TAG":
                continue
            route = self.rebalance.routes.get(sub.topic)
            if route is None or not route.broker_datas:
                continue  # compat: Java checks only a topic it has a broker for
            addrs = random.choice(route.broker_datas).broker_addrs
            addr = addrs.get(MASTER_ID) or (addrs[min(addrs)] if addrs else None)
            if addr is None:
                continue
            request = api.check_client_config(self.instance.client_id, self.group, sub)
            resp = await self.instance.remoting.invoke(addr, request, ROUTE_TIMEOUT)
            if resp.code != ResponseCode.SUCCESS:
                hint = " (set enablePropertyFilter=true on the brokers)" if resp.code == 1 else ""
                raise MQBrokerError(
                    resp.code,
                    f"{resp.remark}{hint}; the {sub.expression_type} subscription of "
                    f"{sub.topic} was {sub.sub_string!r}",
                    addr,
                )

    async def leave(self) -> None:
        """The background tasks ended, UNREGISTER_CLIENT to the brokers, the instance
        released (its connections close with its last user)."""
        await self.tasks.close()
        if self._registered:
            self._registered = False
            await self.instance.unregister_consumer(self.group)
        await self.instance.release()
